//! One host, two schedulers: a host that is a node of a Slurm cluster and a node of a
//! Kubernetes cluster (Slurm on Kubernetes: Slinky, Soperator, SUNK) is paired by a configured
//! name rule. Each node keeps its own identity — (cluster, node, name) — and its own record;
//! the pairing, and a mismatch between the two schedulers' states with the time it was first
//! seen, are derived here after every change of the node listing.

use super::ClusterState;
use super::incidents::{Incident, Lifecycle, Plane, Severity};
use crate::model::{Epoch, Node, NodeKey, NodeState, Text};
use std::collections::BTreeMap;

/// Which nodes of a Slurm cluster are also nodes of a Kubernetes cluster, and under which
/// name (`[[shared_hosts]]`).
#[derive(
    Debug, Clone, Default, PartialEq, serde::Deserialize, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
#[serde(deny_unknown_fields, default)]
pub struct HostPairing {
    /// The Slurm cluster (a `[[cluster]]` name).
    pub slurm: String,
    /// The Kubernetes cluster (a `[[cluster]]` name).
    pub kube: String,
    /// The Kubernetes node's name is the Slurm node's name followed by this
    /// (`".prod.internal"`: `gpu-001` ↔ `gpu-001.prod.internal`); empty: the same name.
    pub kube_suffix: String,
    /// Explicit pairs, Slurm node → Kubernetes node; they win over the suffix.
    pub hosts: BTreeMap<String, String>,
}

impl HostPairing {
    /// The Kubernetes node name of the Slurm node `slurm_node`.
    pub fn kube_name(&self, slurm_node: &str) -> String {
        match self.hosts.get(slurm_node) {
            Some(k) => k.clone(),
            None => format!("{slurm_node}{}", self.kube_suffix),
        }
    }
}

/// Which scheduler a paired node belongs to.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    Slurm,
    Kubernetes,
}

impl Scheduler {
    pub fn label(self) -> &'static str {
        match self {
            Self::Slurm => "Slurm",
            Self::Kubernetes => "Kubernetes",
        }
    }

    /// The short form for a narrow cell.
    pub fn short(self) -> &'static str {
        match self {
            Self::Slurm => "slurm",
            Self::Kubernetes => "k8s",
        }
    }
}

/// A paired host as one node's row sees it: the other scheduler's node.
#[derive(Debug, Clone, Copy)]
pub struct Twin<'a> {
    /// The scheduler of the node asked about, and of its twin.
    pub own: Scheduler,
    pub other: Scheduler,
    pub node: &'a Node,
    /// Since when (source time) one scheduler places work there and the other does not;
    /// `None` while they agree.
    pub mismatch_since: Option<Epoch>,
}

impl Twin<'_> {
    /// `drained in Slurm by alice, schedulable in Kubernetes`: both states, Slurm first, for a
    /// pair whose node `own` is the node asked about.
    pub fn states(&self, own: &Node) -> String {
        let (sl, k8) = if self.own == Scheduler::Slurm { (own, self.node) } else { (self.node, own) };
        states(sl, k8)
    }
}

fn states(sl: &Node, k8: &Node) -> String {
    format!("{} in Slurm{}, {} in Kubernetes{}", phrase(sl), by(sl), phrase(k8), by(k8))
}

/// The derived pairing: node positions, valid for one node listing.
#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub(super) struct Twins {
    /// (Slurm node, Kubernetes node) positions in `nodes`.
    pub pairs: Vec<(usize, usize)>,
    /// Per node position: its pair's index in `pairs`, `u32::MAX` when unpaired. Empty when
    /// nothing is configured.
    pub of: Vec<u32>,
    /// (Slurm cluster, Slurm node) → when the two states were first seen to disagree.
    pub since: super::Map<(Text, Text), Epoch>,
}

/// Whether a scheduler places new work on a node in this state.
fn takes_work(st: NodeState) -> bool {
    st.schedulable()
}

/// `drained`, `cordoned`, `down`; `schedulable` for a node that takes work.
fn phrase(n: &Node) -> String {
    if takes_work(n.state) { "schedulable".into() } else { n.state.label().into() }
}

/// ` by alice` when the node's reason names who set it.
fn by(n: &Node) -> String {
    match n.reason.as_ref().map(|r| r.by.as_str()).filter(|b| !b.is_empty() && *b != "-") {
        Some(b) => format!(" by {b}"),
        None => String::new(),
    }
}

impl ClusterState {
    /// Sets the host pairings (`[[shared_hosts]]`) and pairs the nodes held now.
    pub fn set_host_pairs(&mut self, pairs: Vec<HostPairing>) {
        self.host_pairs = pairs;
        self.pair_hosts();
        self.track_twins();
        self.incidents = super::incidents::detect(self, &self.flag_scan());
        self.generation += 1;
    }

    /// Re-derives the pairs' positions after the node listing changed.
    pub(super) fn pair_hosts(&mut self) {
        let t = &mut self.twins;
        t.pairs.clear();
        t.of.clear();
        if self.host_pairs.is_empty() {
            return;
        }
        t.of.resize(self.nodes.len(), u32::MAX);
        for p in &self.host_pairs {
            let (slurm, kube) = (Text::from(p.slurm.as_str()), Text::from(p.kube.as_str()));
            if slurm == kube {
                continue;
            }
            for (i, n) in self.nodes.iter().enumerate().filter(|(_, n)| n.cluster == slurm) {
                let name = Text::from(p.kube_name(&n.name));
                let Some(&j) = self.node_ix.get(&(kube.clone(), name)) else { continue };
                // A node is in one pair at most: the first rule that pairs it.
                if t.of[i] != u32::MAX || t.of[j] != u32::MAX {
                    continue;
                }
                let k = t.pairs.len() as u32;
                t.pairs.push((i, j));
                t.of[i] = k;
                t.of[j] = k;
            }
        }
    }

    /// Notes when each pair's two states started to disagree (source time), and forgets the
    /// pairs that agree again or are gone.
    pub(super) fn track_twins(&mut self) {
        if self.twins.pairs.is_empty() && self.twins.since.is_empty() {
            return;
        }
        let mut since = super::Map::default();
        for &(a, b) in &self.twins.pairs {
            let (sa, sb) = (&self.nodes[a], &self.nodes[b]);
            if takes_work(sa.state) != takes_work(sb.state) {
                let key = (sa.cluster.clone(), sa.name.clone());
                let at = self.twins.since.get(&key).copied().unwrap_or(self.now);
                since.insert(key, at);
            }
        }
        self.twins.since = since;
    }

    /// Whether any host is paired (the Nodes view then shows the other scheduler's state).
    pub fn has_twins(&self) -> bool {
        !self.twins.pairs.is_empty()
    }

    /// The other scheduler's node of the node at position `i`, when its host is paired.
    pub fn twin(&self, i: usize) -> Option<Twin<'_>> {
        let k = *self.twins.of.get(i)?;
        let &(a, b) = self.twins.pairs.get(k as usize)?;
        let (own, other, node) = if i == a {
            (Scheduler::Slurm, Scheduler::Kubernetes, &self.nodes[b])
        } else {
            (Scheduler::Kubernetes, Scheduler::Slurm, &self.nodes[a])
        };
        let slurm = &self.nodes[a];
        let mismatch_since = self.twins.since.get(&(slurm.cluster.clone(), slurm.name.clone())).copied();
        Some(Twin { own, other, node, mismatch_since })
    }

    /// Whether the node at `i` is the Kubernetes side of a paired host: its host's row is the
    /// Slurm node's.
    pub fn is_kube_twin(&self, i: usize) -> bool {
        self.twin(i).is_some_and(|t| t.own == Scheduler::Kubernetes)
    }

    /// The row a node's host is shown on: the Slurm node's position for either node of a
    /// paired host, the node's own otherwise.
    pub fn host_row(&self, i: usize) -> usize {
        match self.twins.of.get(i).and_then(|&k| self.twins.pairs.get(k as usize)) {
            Some(&(a, _)) => a,
            None => i,
        }
    }

    /// The schedulers an action on the node `k` may go to, each with its own node: the node
    /// itself, and its twin's when its host is paired (Slurm first). What a plan lists for
    /// the operator to pick from; each entry names one (cluster, node).
    pub fn schedulers_for(&self, k: &NodeKey) -> Vec<(Option<Scheduler>, NodeKey)> {
        let Some(i) = self.node_at(k) else { return Vec::new() };
        match self.twin(i) {
            None => vec![(None, k.clone())],
            Some(t) => {
                let other =
                    NodeKey { cluster: self.cluster_of(&t.node.cluster).clone(), name: t.node.name.clone() };
                let mut v = vec![(Some(t.own), k.clone()), (Some(t.other), other)];
                if t.own == Scheduler::Kubernetes {
                    v.swap(0, 1);
                }
                v
            }
        }
    }
}

/// A mismatch incident per paired host whose schedulers disagree, since it was first seen.
pub(super) fn incidents(s: &ClusterState, out: &mut Vec<Incident>) {
    for &(a, b) in &s.twins.pairs {
        let (sl, k8) = (&s.nodes[a], &s.nodes[b]);
        let Some(&since) = s.twins.since.get(&(sl.cluster.clone(), sl.name.clone())) else { continue };
        let action = if takes_work(sl.state) {
            "the host takes Slurm jobs but not Kubernetes pods: drain it in Slurm too, or uncordon it in Kubernetes if the work there is done"
        } else {
            "the host takes Kubernetes pods but not Slurm jobs: cordon it in Kubernetes too, or resume it in Slurm if the work there is done"
        };
        out.push(Incident {
            cluster: sl.cluster.clone(),
            severity: Severity::Warning,
            plane: Plane::Control,
            subject: Text::from(format!("host {}", sl.name)),
            title: format!("{} ({}/{})", states(sl, k8), k8.cluster, k8.name),
            action: action.into(),
            since: Some(since),
            cost_per_hour: None,
            node: Some(sl.name.clone()),
            job: None,
            signal: "twin-mismatch".into(),
            repeats: 0,
            lifecycle: Lifecycle::Open,
            waiting: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::{node, nodes, pairing};

    fn key(c: &str, n: &str) -> NodeKey {
        NodeKey { cluster: c.into(), name: n.into() }
    }

    fn at(s: &ClusterState, c: &str, n: &str) -> usize {
        s.node_at(&key(c, n)).unwrap()
    }

    fn mismatches(s: &ClusterState) -> Vec<(&str, &str, Option<Epoch>, &str)> {
        s.incidents
            .iter()
            .filter(|i| i.signal == "twin-mismatch")
            .map(|i| (i.subject.as_str(), i.title.as_str(), i.since, i.lifecycle.label()))
            .collect()
    }

    #[test]
    fn paired_hosts_by_suffix_and_by_name_and_their_mismatch_since_first_seen() {
        let mut s = ClusterState::default();
        s.set_host_pairs(vec![pairing()]);
        nodes(
            &mut s,
            "prod-a",
            1000,
            vec![
                node("gpu-001", NodeState::Drained, Some("alice")),
                node("gpu-002", NodeState::Idle, None),
                node("odd-1", NodeState::Idle, None),
                node("solo", NodeState::Idle, None),
            ],
        );
        assert!(!s.has_twins(), "nothing to pair with yet");
        nodes(
            &mut s,
            "prod-k8s",
            1010,
            vec![
                node("gpu-001.prod.internal", NodeState::Idle, None),
                node("gpu-002.prod.internal", NodeState::Mixed, None),
                node("k8s-node-7", NodeState::Cordoned, Some("bob")),
                node("gpu-001", NodeState::Idle, None),
            ],
        );
        assert!(s.has_twins());
        // gpu-001 pairs by suffix, odd-1 by its explicit name; the Kubernetes node that only
        // shares the Slurm node's name is not its twin.
        let t = s.twin(at(&s, "prod-a", "gpu-001")).unwrap();
        assert_eq!(
            (t.own, t.other, t.node.name.as_str()),
            (Scheduler::Slurm, Scheduler::Kubernetes, "gpu-001.prod.internal")
        );
        assert_eq!(t.mismatch_since, Some(1010));
        assert_eq!(s.twin(at(&s, "prod-a", "odd-1")).unwrap().node.name, "k8s-node-7");
        assert!(s.twin(at(&s, "prod-a", "solo")).is_none());
        assert!(s.twin(at(&s, "prod-k8s", "gpu-001")).is_none());
        assert!(s.is_kube_twin(at(&s, "prod-k8s", "gpu-002.prod.internal")));
        assert_eq!(s.host_row(at(&s, "prod-k8s", "gpu-002.prod.internal")), at(&s, "prod-a", "gpu-002"));
        assert!(s.twin(at(&s, "prod-a", "gpu-002")).unwrap().mismatch_since.is_none(), "both take work");
        // Two disagreements, each with who set the state that keeps work out.
        let m = mismatches(&s);
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(m.contains(&(
            "host gpu-001",
            "drained in Slurm by alice, schedulable in Kubernetes (prod-k8s/gpu-001.prod.internal)",
            Some(1010),
            "open"
        )));
        assert!(m.contains(&(
            "host odd-1",
            "schedulable in Slurm, cordoned in Kubernetes by bob (prod-k8s/k8s-node-7)",
            Some(1010),
            "open"
        )));
        // A later listing with the same disagreement keeps when it was first seen.
        nodes(
            &mut s,
            "prod-a",
            1100,
            vec![
                node("gpu-001", NodeState::Drained, Some("alice")),
                node("gpu-002", NodeState::Idle, None),
                node("odd-1", NodeState::Idle, None),
                node("solo", NodeState::Idle, None),
            ],
        );
        assert_eq!(s.twin(at(&s, "prod-a", "gpu-001")).unwrap().mismatch_since, Some(1010));
        // Cordoned in Kubernetes too: they agree, the incident resolves; a new disagreement
        // later starts its own clock.
        nodes(
            &mut s,
            "prod-k8s",
            1200,
            vec![
                node("gpu-001.prod.internal", NodeState::Cordoned, Some("alice")),
                node("gpu-002.prod.internal", NodeState::Mixed, None),
                node("k8s-node-7", NodeState::Idle, None),
                node("gpu-001", NodeState::Idle, None),
            ],
        );
        let m = mismatches(&s);
        assert!(m.iter().all(|(.., l)| *l == "resolved"), "{m:?}");
        nodes(
            &mut s,
            "prod-a",
            1300,
            vec![
                node("gpu-001", NodeState::Idle, None),
                node("gpu-002", NodeState::Idle, None),
                node("odd-1", NodeState::Idle, None),
            ],
        );
        let t = s.twin(at(&s, "prod-a", "gpu-001")).unwrap();
        assert_eq!(t.mismatch_since, Some(1300));
        // An action on either node lists both schedulers, Slurm first, each with its node.
        let both = vec![
            (Some(Scheduler::Slurm), key("prod-a", "gpu-001")),
            (Some(Scheduler::Kubernetes), key("prod-k8s", "gpu-001.prod.internal")),
        ];
        assert_eq!(s.schedulers_for(&key("prod-a", "gpu-001")), both);
        assert_eq!(s.schedulers_for(&key("prod-k8s", "gpu-001.prod.internal")), both);
        assert_eq!(s.schedulers_for(&key("prod-k8s", "gpu-001")), vec![(None, key("prod-k8s", "gpu-001"))]);
    }

    #[test]
    fn without_pairings_nothing_is_derived() {
        let mut s = ClusterState::default();
        nodes(&mut s, "prod-a", 10, vec![node("gpu-001", NodeState::Drained, None)]);
        nodes(&mut s, "prod-k8s", 10, vec![node("gpu-001", NodeState::Idle, None)]);
        assert!(!s.has_twins());
        assert!(s.twins.of.is_empty());
        assert!(mismatches(&s).is_empty());
    }
}
