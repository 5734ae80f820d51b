//! The incremental bookkeeping must agree with a from-scratch computation.

use super::*;
use crate::backend::sim::{Sim, SimConfig};

/// A fresh state built from `s`'s data in one inventory.
fn rebuilt(s: &ClusterState) -> ClusterState {
    let mut fresh = ClusterState::new(s.prices.clone(), s.thresholds.clone());
    fresh.apply(Update::Inventory {
        at: s.now,
        inventory: Box::new(Inventory {
            source: "x".into(),
            cluster: Some(s.cluster.clone()),
            nodes: Some(s.nodes.clone()),
            jobs: Some(s.jobs.clone()),
            queues: Some(s.queues.clone()),
            quotas: Some(s.quotas.clone()),
            storage: Some(s.storage.clone()),
        }),
    });
    fresh
}

#[test]
fn incremental_figures_match_a_full_recomputation() {
    let cfg = SimConfig { nodes: 64, ..SimConfig::default() };
    let mut sim = Sim::new(cfg);
    let mut s = ClusterState::new(PriceCard::default(), Thresholds::default());
    for u in sim.initial() {
        s.apply(u);
    }
    for _ in 0..120 {
        s.apply(sim.tick());
    }
    let fresh = rebuilt(&s);
    assert_eq!(s.totals, fresh.totals);
    let strip = |q: &[QueueStats]| {
        q.iter()
            .map(|x| (x.name.clone(), x.pending, x.running, x.pending_gpus, x.running_gpus, x.oldest_submit))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&s.queue_stats), strip(&fresh.queue_stats));
    let ranks = |st: &ClusterState| {
        let mut v: Vec<(JobId, Option<u32>)> = st.jobs.iter().map(|j| (j.id, j.rank)).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(ranks(&s), ranks(&fresh));
    assert!(s.jobs.iter().any(|j| j.rank.is_some()), "some jobs pend");
    assert!(s.jobs.iter().filter(|j| j.state != JobState::Pending).all(|j| j.rank.is_none()));
    assert_eq!(s.incidents.len(), fresh.incidents.len());
}

#[test]
fn ranks_follow_priority_then_submit_within_a_queue() {
    let s = crate::backend::sim::state_after(SimConfig::default(), 10);
    let mut by_queue: HashMap<&str, Vec<&Job>> = HashMap::new();
    for j in s.jobs.iter().filter(|j| j.state == JobState::Pending) {
        by_queue.entry(j.queue.as_str()).or_default().push(j);
    }
    for (_, mut v) in by_queue {
        v.sort_by_key(|j| j.rank);
        let ranks: Vec<u32> = v.iter().filter_map(|j| j.rank).collect();
        assert_eq!(ranks, (1..=v.len() as u32).collect::<Vec<_>>());
        for w in v.windows(2) {
            assert!(
                w[0].priority > w[1].priority
                    || (w[0].priority == w[1].priority && w[0].submit <= w[1].submit)
            );
        }
    }
}

#[test]
fn history_survives_a_new_inventory_with_the_same_nodes_and_moves_with_renames() {
    let mut s = crate::backend::sim::state_after(SimConfig::default(), 20);
    let before = s.gpu_util_history(1, 2, 100);
    assert_eq!(before.len(), 20);
    // the same nodes again (a scheduler's periodic full listing)
    let nodes = s.nodes.clone();
    s.apply(Update::Inventory {
        at: s.now,
        inventory: Box::new(Inventory { nodes: Some(nodes.clone()), ..Default::default() }),
    });
    assert_eq!(s.gpu_util_history(1, 2, 100), before);
    // a node disappears: the others keep their history under their new positions
    let name = nodes[1].name.clone();
    let fewer: Vec<Node> = nodes.into_iter().skip(1).collect();
    s.apply(Update::Inventory {
        at: s.now,
        inventory: Box::new(Inventory { nodes: Some(fewer), ..Default::default() }),
    });
    let i = s.node_index(&name).unwrap();
    assert_eq!(i, 0);
    assert_eq!(s.gpu_util_history(i, 2, 100), before);
}

#[test]
fn a_source_error_keeps_the_last_success_and_becomes_an_incident() {
    let mut s = crate::backend::sim::state_after(SimConfig::default(), 2);
    let ok_at = s.sources[0].ok_at;
    s.apply(Update::Status(SourceStatus {
        name: s.sources[0].name.clone(),
        simulated: true,
        ok_at: None,
        error: Some("slurmrestd: 401 token expired".into()),
        detail: None,
    }));
    assert_eq!(s.sources[0].ok_at, ok_at);
    assert!(
        s.incidents.iter().any(|i| i.title.contains("401 token expired") && i.severity == Severity::Critical)
    );
}

#[test]
fn a_scheduler_listing_keeps_telemetry_from_other_sources() {
    let mut s = crate::backend::sim::state_after(SimConfig::default(), 5);
    let before = s.nodes[1].clone();
    assert!(before.gpus[0].util.is_some() && !before.ports.is_empty());
    // What a scheduler knows of the node: no telemetry, ports, topology or UUIDs.
    let mut bare = before.clone();
    bare.ports.clear();
    bare.topology = None;
    for g in &mut bare.gpus {
        (g.util, g.temp_c, g.power_w, g.uuid) = (None, None, None, Text::default());
    }
    let mut nodes = s.nodes.clone();
    nodes[1] = bare;
    s.apply(Update::Inventory {
        at: s.now,
        inventory: Box::new(Inventory { nodes: Some(nodes), ..Default::default() }),
    });
    let after = &s.nodes[1];
    assert_eq!(after.gpus[0].util, before.gpus[0].util);
    assert_eq!(after.gpus[0].uuid, before.gpus[0].uuid);
    assert_eq!(after.ports.len(), before.ports.len());
    assert!(after.topology.is_some());
}
