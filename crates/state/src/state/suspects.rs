//! Suspect nodes: the nodes an operator should look at first, ranked by the strength of the
//! evidence against them: a failed acceptance test, then a degraded one, then drift (versions
//! unlike the fleet's, or busbw down against the node's own history), then fabric ports that
//! are down, flapping or erring.

use super::ClusterState;
use super::fleet::port_flagged;
use crate::model::acceptance::{NodeAcceptance, Verdict};
use crate::model::{Node, PortState, Text};

/// The strongest evidence against a node, weakest first (so `Ord` ranks them).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Evidence {
    Fabric,
    Drift,
    Degraded,
    Fail,
}

impl Evidence {
    pub fn label(self) -> &'static str {
        match self {
            Evidence::Fabric => "fabric",
            Evidence::Drift => "drift",
            Evidence::Degraded => "degraded",
            Evidence::Fail => "fail",
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Suspect {
    pub node: Text,
    pub evidence: Evidence,
    /// One line: the strongest evidence (its kind is `evidence`), then the other kinds found.
    pub reason: String,
    /// Orders suspects with the same evidence: higher is worse.
    pub weight: f64,
}

/// What the acceptance data says about a node's drift, one phrase per kind.
pub fn drift_phrases(a: &NodeAcceptance) -> Vec<String> {
    a.drift
        .iter()
        .map(|d| match d.kind {
            crate::model::acceptance::DriftKind::Busbw => {
                format!("busbw {}, own median {}", d.found, d.expected.trim_end_matches(" (own median)"))
            }
            k => format!("{} {} (fleet {})", k.label(), d.found, d.expected),
        })
        .collect()
}

/// The flagged ports of a node as one phrase, and a weight (ports down count most).
fn fabric(n: &Node, s: &ClusterState) -> Option<(String, f64)> {
    let bad: Vec<_> = n.ports.iter().filter(|p| port_flagged(p, &s.thresholds)).collect();
    let first = bad.first()?;
    let down = bad.iter().filter(|p| p.state != PortState::Active).count();
    let flaps: u64 = bad.iter().map(|p| u64::from(p.flaps)).sum();
    let errors: u64 = bad.iter().map(|p| p.symbol_errors + p.rcv_errors).sum();
    let what = if first.state != PortState::Active {
        format!("{} {}", first.name, first.state.label())
    } else {
        format!("{} {} flaps, {} errors", first.name, first.flaps, first.symbol_errors + first.rcv_errors)
    };
    let more = if bad.len() > 1 { format!(" (+{} more ports)", bad.len() - 1) } else { String::new() };
    Some((format!("{what}{more}"), down as f64 * 1e9 + flaps as f64 * 1e3 + errors as f64))
}

/// Every node with evidence against it, worst first. Acceptance results for nodes this
/// cluster does not have are left out.
pub fn suspects(s: &ClusterState) -> Vec<Suspect> {
    let mut out = Vec::new();
    for n in &s.nodes {
        let acc = s.acceptance_of(n);
        let verdict = acc.and_then(|a| a.last_verdict).filter(|v| *v != Verdict::Pass);
        let drift = acc.map(drift_phrases).unwrap_or_default();
        let ports = fabric(n, s);
        let mut parts: Vec<(Evidence, String, f64)> = Vec::new();
        if let (Some(v), Some(a)) = (verdict, acc) {
            let e = if v == Verdict::Fail { Evidence::Fail } else { Evidence::Degraded };
            let why = if a.last_why.is_empty() { "no result".to_string() } else { a.last_why.clone() };
            // Lower percentage of the baseline is worse; no figure at all is worst.
            parts.push((e, why, 1000.0 - a.last_pct.unwrap_or(0.0)));
        }
        if !drift.is_empty() {
            parts.push((Evidence::Drift, drift.join(", "), drift.len() as f64));
        }
        if let Some((what, w)) = ports {
            parts.push((Evidence::Fabric, what, w));
        }
        let Some((evidence, first, weight)) = parts.first().cloned() else { continue };
        let others: Vec<&str> = parts[1..].iter().map(|p| p.0.label()).collect();
        let reason = if others.is_empty() { first } else { format!("{first} [+{}]", others.join(", ")) };
        out.push(Suspect { node: n.name.clone(), evidence, reason, weight });
    }
    out.sort_by(|a, b| {
        b.evidence.cmp(&a.evidence).then(b.weight.total_cmp(&a.weight)).then(a.node.cmp(&b.node))
    });
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::acceptance::{Drift, DriftKind};
    use crate::testing::SimConfig;
    use crate::testing::state_after;

    pub(crate) fn acc(node: &str, v: Verdict, pct: f64) -> NodeAcceptance {
        NodeAcceptance {
            node: node.into(),
            last_run: format!("run-{node}"),
            last_verdict: Some(v),
            last_busbw: Some(4.6 * pct),
            last_at: 1_800_000_000,
            last_baseline: Some(460.0),
            last_pct: Some(pct),
            last_why: format!("{:.1} GB/s = {pct:.0}% of 460.0 GB/s (fleet median)", 4.6 * pct),
            history: vec![460.0, 4.6 * pct],
            drift: vec![],
        }
    }

    /// The simulated cluster with clean ports but for gpu-001 (flapping), gpu-002 (a port
    /// down) and gpu-005 (flapping and failing), and acceptance results for a few nodes.
    pub(crate) fn cluster() -> ClusterState {
        let mut s = state_after(SimConfig::default(), 3);
        for n in &mut s.nodes {
            for p in &mut n.ports {
                (p.state, p.flaps, p.symbol_errors, p.rcv_errors) = (PortState::Active, 0, 0, 0);
            }
        }
        s.nodes[0].ports[3].flaps = 9;
        s.nodes[1].ports[0].state = PortState::Down;
        s.nodes[4].ports[2].flaps = 4;
        let mut m = std::collections::BTreeMap::new();
        let mut drifted = acc("gpu-003", Verdict::Pass, 99.0);
        drifted.drift.push(Drift {
            node: "gpu-003".into(),
            kind: DriftKind::Driver,
            found: "535.104".into(),
            expected: "550.54.15".into(),
        });
        for a in [
            drifted,
            acc("gpu-004", Verdict::Degraded, 85.0),
            acc("gpu-005", Verdict::Fail, 62.0),
            acc("gpu-006", Verdict::Fail, 40.0),
            acc("gpu-007", Verdict::Pass, 100.0),
            acc("not-in-this-cluster", Verdict::Fail, 10.0),
        ] {
            m.insert(a.node.clone(), a);
        }
        s.apply(crate::model::protocol::Update::Acceptance(Box::new(m)));
        s
    }

    #[test]
    fn ranked_fail_then_degraded_then_drift_then_fabric() {
        let s = cluster();
        let got = suspects(&s);
        let order: Vec<&str> = got.iter().map(|x| x.node.as_str()).collect();
        assert_eq!(order, ["gpu-006", "gpu-005", "gpu-004", "gpu-003", "gpu-002", "gpu-001"]);
        assert_eq!(got[1].evidence, Evidence::Fail);
        assert!(got[1].reason.starts_with("285.2 GB/s = 62% of 460.0"), "{}", got[1].reason);
        assert!(got[1].reason.ends_with("[+fabric]"), "{}", got[1].reason);
        assert_eq!(got[3].reason, "driver 535.104 (fleet 550.54.15)");
        assert_eq!(got[4].reason, "mlx5_0/1 Down");
        assert_eq!(got[5].reason, "mlx5_3/1 9 flaps, 0 errors");
    }
}
