//! Helpers for tests, benches and examples: a simulated cluster's state after some ticks.
//! It sits at the top of the layers (it joins the simulator backend to the state), so the
//! layers below can use it only from their test code.

use crate::backend::sim::Sim;
pub use crate::backend::sim::SimConfig;
use crate::model::protocol::{Inventory, Update};
use crate::model::{Epoch, Node, NodeReason, NodeState, PriceCard, Text};
use crate::state::HostPairing;
use crate::state::{ClusterState, Thresholds};

/// A `ClusterState` after the simulator's `initial()` and `ticks` ticks (default prices and
/// thresholds).
pub fn state_after(cfg: SimConfig, ticks: usize) -> ClusterState {
    let mut state = ClusterState::new(PriceCard::default(), Thresholds::default());
    let mut sim = Sim::new(cfg);
    for u in sim.initial() {
        state.apply(u);
    }
    for _ in 0..ticks {
        state.apply(sim.tick());
    }
    state
}

/// A bare node of `name` in `state` (64 CPUs, 1 TiB, no GPUs); `by` set a maintenance reason.
pub fn node(name: &str, state: NodeState, by: Option<&str>) -> Node {
    Node {
        cluster: Text::default(),
        name: name.into(),
        state,
        reason: by.map(|b| NodeReason { text: "maintenance".into(), by: b.into(), at: 100 }),
        pool: "gpu".into(),
        labels: Default::default(),
        cpus_total: 64,
        cpus_alloc: 0,
        mem_total_mib: 1 << 20,
        mem_alloc_mib: 0,
        gpu_slots: 0,
        gpu_alloc: 0,
        gpus: Vec::new(),
        topology: None,
        ports: Vec::new(),
        driver: None,
        cuda: None,
    }
}

/// Applies an inventory of `nodes` to `cluster` at `at`.
pub fn nodes(s: &mut ClusterState, cluster: &str, at: Epoch, nodes: Vec<Node>) {
    s.apply(Update::Cluster {
        cluster: cluster.into(),
        update: Box::new(Update::Inventory {
            at,
            inventory: Box::new(Inventory { source: "x".into(), nodes: Some(nodes), ..Default::default() }),
        }),
    });
}

/// The pairing of Slurm cluster prod-a with Kubernetes cluster prod-k8s (suffix .prod.internal, odd-1 ↔ k8s-node-7).
pub fn pairing() -> HostPairing {
    HostPairing {
        slurm: "prod-a".into(),
        kube: "prod-k8s".into(),
        kube_suffix: ".prod.internal".into(),
        hosts: [("odd-1".to_string(), "k8s-node-7".to_string())].into(),
    }
}

/// Two simulated clusters in one state: prod-a (12 nodes, seed 1) and lab (8 nodes, seed 2),
/// whose nodes share names, after `ticks` ticks of each.
pub fn two_clusters(ticks: usize) -> (ClusterState, Sim, Sim) {
    let (mut a, mut b) = (
        Sim::new(SimConfig { nodes: 12, seed: 1, ..SimConfig::default() }),
        Sim::new(SimConfig { nodes: 8, seed: 2, ..SimConfig::default() }),
    );
    let mut s = ClusterState::new(PriceCard::default(), Thresholds::default());
    let wrap = |c: &str, u| Update::Cluster { cluster: c.into(), update: Box::new(u) };
    for u in a.initial() {
        s.apply(wrap("prod-a", u));
    }
    for u in b.initial() {
        s.apply(wrap("lab", u));
    }
    for _ in 0..ticks {
        s.apply(wrap("prod-a", a.tick()));
        s.apply(wrap("lab", b.tick()));
    }
    (s, a, b)
}
