//! An incident's lifecycle, derived each refresh from the cluster, the audit log's node actions
//! and the ack store (`ClusterState::handling`):
//!
//! * **mitigated** — its node is out of service: drained or cordoned through gpuplane (the
//!   newest audit record on the node says who and with which ticket), or by someone else
//!   (the scheduler's reason: Slurm's `reason_set_by_user` and time);
//! * **acked** — someone acknowledged it after it last started (`since`), with a note and ticket;
//! * **resolved** — its signal cleared; it stays listed as resolved for [`RESOLVED_KEEP_S`];
//! * **open** — none of these.
//!
//! Unhandled (open) incidents sort above handled ones (acked, mitigated), and those above
//! resolved ones. Identity is [`Incident::key`] (subject + signal), never a position.

use super::{ClusterState, Incident};
use crate::clock;
use crate::model::{Ack, IncidentKey, Job, JobState, Node, NodeState};
use std::collections::{HashMap, HashSet};

/// How long a resolved incident stays listed.
pub const RESOLVED_KEEP_S: i64 = 30 * 60;

#[derive(
    Debug, Clone, Default, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum Lifecycle {
    #[default]
    Open,
    Acked {
        by: String,
        at: i64,
        note: String,
        ticket: Option<String>,
    },
    Mitigated {
        /// `drained`, `cordoned`, `draining`, `in maintenance`.
        how: String,
        /// Who: the audit record's identity, or the scheduler's reason setter.
        by: Option<String>,
        at: Option<i64>,
        ticket: Option<String>,
        /// The drain reason.
        note: Option<String>,
        /// Whether gpuplane's audit log recorded it (else the scheduler said so).
        audited: bool,
        /// An ack made too, when there is one.
        acked_by: Option<String>,
    },
    Resolved {
        at: i64,
    },
}

impl Lifecycle {
    /// `open`, `acked`, `mitigated`, `resolved`.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Acked { .. } => "acked",
            Self::Mitigated { .. } => "mitigated",
            Self::Resolved { .. } => "resolved",
        }
    }

    /// Someone is on it (or it is over): everything but open.
    pub fn handled(&self) -> bool {
        !matches!(self, Self::Open)
    }

    /// Sort rank: open, then acked and mitigated, then resolved.
    pub fn rank(&self) -> u8 {
        match self {
            Self::Open => 0,
            Self::Acked { .. } | Self::Mitigated { .. } => 1,
            Self::Resolved { .. } => 2,
        }
    }

    /// Who acknowledged it, when someone did.
    pub fn acked_by(&self) -> Option<&str> {
        match self {
            Self::Acked { by, .. } => Some(by),
            Self::Mitigated { acked_by, .. } => acked_by.as_deref(),
            _ => None,
        }
    }

    pub fn ticket(&self) -> Option<&str> {
        match self {
            Self::Acked { ticket, .. } | Self::Mitigated { ticket, .. } => ticket.as_deref(),
            _ => None,
        }
    }

    /// How it is handled, in a line: `drained by oncall INC-4242 12m ago`,
    /// `acked by bob 3m ago: looking`, `resolved 4m ago`; empty when open.
    pub fn phrase(&self, now: i64) -> String {
        let ago = |at: i64| clock::relative(now, at);
        match self {
            Self::Open => String::new(),
            Self::Acked { by, at, note, ticket } => {
                let mut s = format!("acked by {by}");
                if let Some(t) = ticket {
                    s += &format!(" {t}");
                }
                s += &format!(" {}", ago(*at));
                if !note.is_empty() {
                    s += &format!(": {note}");
                }
                s
            }
            Self::Mitigated { how, by, at, ticket, note, .. } => {
                let mut s = how.clone();
                if let Some(b) = by.as_deref().filter(|b| !b.is_empty()) {
                    s += &format!(" by {b}");
                }
                if let Some(t) = ticket {
                    s += &format!(" {t}");
                }
                if let Some(at) = at {
                    s += &format!(" {}", ago(*at));
                }
                if let Some(n) = note.as_deref().filter(|n| !n.is_empty()) {
                    s += &format!(": {n}");
                }
                s
            }
            Self::Resolved { at } => format!("resolved {}", ago(*at)),
        }
    }
}

/// Sets each incident's lifecycle and what a draining node waits for, and adds the incidents
/// that cleared since the last derivation (or within [`RESOLVED_KEEP_S`]) as resolved.
pub(super) fn derive(s: &ClusterState, out: &mut Vec<Incident>) {
    // An ack is the incident's: in a fleet, of the incident's own cluster (two clusters may
    // have a `gpu-004/gpu3` each); for one cluster, the store holds only its acks.
    let mut acks: HashMap<&IncidentKey, Vec<&Ack>> = HashMap::new();
    for a in &s.handling.acks {
        acks.entry(&a.key).or_default().push(a);
    }
    // Running jobs of the draining nodes that have incidents: one pass over the jobs, and only
    // when there is such a node.
    // Nodes are (cluster, name): two clusters of a fleet may each have a `gpu-005`, and one's
    // drain says nothing about the other's.
    let draining: HashSet<(&str, &str)> = out
        .iter()
        .filter_map(|i| i.node.as_deref().filter(|n| about_node(i, n)).map(|n| (i.cluster.as_str(), n)))
        .filter(|(c, n)| {
            s.node_in(&(*c).into(), n)
                .is_some_and(|n| matches!(n.state, NodeState::Draining | NodeState::Cordoned))
        })
        .collect();
    let mut on_node: HashMap<(&str, &str), Vec<&Job>> = HashMap::new();
    if !draining.is_empty() {
        for j in s.jobs.iter().filter(|j| matches!(j.state, JobState::Running | JobState::Completing)) {
            for n in j.nodes.iter() {
                let k = (j.cluster.as_str(), n.as_str());
                if draining.contains(&k) {
                    on_node.entry(k).or_default().push(j);
                }
            }
        }
    }
    for i in out.iter_mut() {
        let node = i.node.as_deref().filter(|n| about_node(i, n)).and_then(|n| s.node_in(&i.cluster, n));
        let ack = acks
            .get(&i.key())
            .and_then(|v| v.iter().rev().find(|a| i.cluster.is_empty() || a.cluster == i.cluster.as_str()))
            .filter(|a| i.since.is_none_or(|since| a.at >= since));
        i.waiting = node.and_then(|n| {
            waiting_for(
                s,
                n,
                on_node.get(&(n.cluster.as_str(), n.name.as_str())).map_or(&[][..], Vec::as_slice),
            )
        });
        i.lifecycle = match (node.and_then(|n| mitigation(s, n)), ack) {
            (Some(Lifecycle::Mitigated { how, by, at, ticket, note, audited, .. }), ack) => {
                Lifecycle::Mitigated {
                    how,
                    by,
                    at,
                    ticket: ticket.or_else(|| ack.and_then(|a| a.ticket.clone())),
                    note,
                    audited,
                    acked_by: ack.map(|a| a.by.clone()),
                }
            }
            (_, Some(a)) => Lifecycle::Acked {
                by: a.by.clone(),
                at: a.at,
                note: a.note.clone(),
                ticket: a.ticket.clone(),
            },
            _ => Lifecycle::Open,
        };
    }
    // What cleared: the previous derivation's incidents that are gone now.
    let now_keys: HashSet<IncidentKey> = out.iter().map(Incident::key).collect();
    for prev in &s.incidents {
        if now_keys.contains(&prev.key()) {
            continue;
        }
        let at = match prev.lifecycle {
            Lifecycle::Resolved { at } => at,
            _ => s.now,
        };
        if s.now - at < RESOLVED_KEEP_S {
            let mut r = prev.clone();
            r.lifecycle = Lifecycle::Resolved { at };
            r.waiting = None;
            r.cost_per_hour = None;
            out.push(r);
        }
    }
}

/// Whether the incident is about the node itself or a part of it (a GPU, a port), not about a
/// job that happens to run there.
fn about_node(i: &Incident, node: &str) -> bool {
    i.subject == node || i.subject.strip_prefix(node).is_some_and(|rest| rest.starts_with('/'))
}

/// The node is out of service: who took it out, from the audit log when gpuplane did, else
/// from the scheduler.
fn mitigation(s: &ClusterState, n: &Node) -> Option<Lifecycle> {
    let how = match n.state {
        NodeState::Draining => "draining",
        NodeState::Drained => "drained",
        NodeState::Cordoned => "cordoned",
        NodeState::Maintenance => "in maintenance",
        NodeState::DownDrain => "drained (down)",
        _ => return None,
    };
    let newest = s.handling.actions.iter().rev().find(|m| m.applies_to(&n.cluster, &n.name));
    if let Some(m) = newest.filter(|m| m.takes_out()) {
        return Some(Lifecycle::Mitigated {
            how: m.past(),
            by: Some(m.by.clone()),
            at: Some(m.at),
            ticket: m.ticket.clone(),
            note: m.reason.clone(),
            audited: true,
            acked_by: None,
        });
    }
    let r = n.reason.as_ref();
    Some(Lifecycle::Mitigated {
        how: how.into(),
        by: r.map(|r| crate::sanitize::sanitize(&r.by).to_string()).filter(|b| !b.is_empty()),
        at: r.map(|r| r.at).filter(|&at| at > 0),
        ticket: None,
        note: r.map(|r| crate::sanitize::sanitize(&r.text).to_string()),
        audited: false,
        acked_by: None,
    })
}

/// What a draining node still waits for: the job that ends last (Slurm), or the pods still
/// being evicted from a cordoned node (Kubernetes).
fn waiting_for(s: &ClusterState, n: &Node, jobs: &[&Job]) -> Option<String> {
    if !matches!(n.state, NodeState::Draining | NodeState::Cordoned) {
        return None;
    }
    let mut on: Vec<&Job> = jobs.to_vec();
    if on.is_empty() {
        return None;
    }
    let more = |k: usize| if k > 1 { format!(" and {} more", k - 1) } else { String::new() };
    if n.state == NodeState::Cordoned {
        on.sort_by(|a, b| a.name.cmp(&b.name));
        let k = on.len();
        return Some(format!("evicting pod {}{}", crate::sanitize::sanitize(&on[0].name), more(k)));
    }
    // The job that ends last is what the drain waits for.
    on.sort_by_key(|j| (j.end.unwrap_or(i64::MAX), j.id));
    let k = on.len();
    let j = on[k - 1];
    let ends = j
        .end
        .filter(|&e| e > s.now)
        .map(|e| format!(", ends ~{}", clock::clock(s.now, e)))
        .unwrap_or_default();
    Some(format!("waiting for job {} ({}{ends}){}", j.id, crate::sanitize::sanitize(&j.user), more(k)))
}

/// The node actions of an audit log (successful outcomes of drain, cordon, resume and
/// uncordon recorded under one of `clusters`: the scheduler's cluster name, and the label the
/// ops road records, e.g. the slurmrestd URL or `kube:CONTEXT`), oldest first, for
/// [`crate::model::Handling::actions`].
pub fn actions_from_audit(
    records: &[crate::audit::Record],
    clusters: &[&str],
) -> Vec<crate::model::ActionMark> {
    let mut out = Vec::new();
    for r in records {
        if !clusters.contains(&r.cluster.as_str())
            || r.phase != crate::audit::Phase::Outcome
            || !matches!(r.result.as_deref(), Some("ok" | "partial"))
            || !matches!(r.action.as_str(), "drain" | "cordon" | "resume" | "uncordon")
        {
            continue;
        }
        let Ok(ts) = r.ts.parse::<jiff::Timestamp>() else { continue };
        for t in &r.targets {
            out.push(crate::model::ActionMark {
                cluster: r.cluster.clone(),
                target: t.clone(),
                action: r.action.clone(),
                by: r.identity.clone().unwrap_or_else(|| r.os_user.clone()),
                at: ts.as_second(),
                ticket: r.ticket.clone(),
                reason: r.reason.clone(),
            });
        }
    }
    out.sort_by_key(|m| m.at);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::protocol::{Inventory, Update};
    use crate::model::{ActionMark, Handling, NodeReason, PortState};

    /// `s` with its nodes changed by `f`, as a scheduler would report them.
    fn with_nodes(s: &mut ClusterState, at: i64, f: impl Fn(&mut Node)) {
        let mut nodes = s.nodes.clone();
        nodes.iter_mut().for_each(f);
        s.apply(Update::Inventory {
            at,
            inventory: Box::new(Inventory {
                source: "sched".into(),
                cluster: Some(s.cluster.clone()),
                nodes: Some(nodes),
                ..Default::default()
            }),
        });
    }

    fn port_down(s: &ClusterState) -> &Incident {
        s.incidents
            .iter()
            .find(|i| i.signal == "port-down" && i.node.as_deref() == Some("gpu-002"))
            .unwrap_or_else(|| panic!("no port-down incident: {:#?}", s.incidents))
    }

    fn handling(acks: Vec<Ack>, actions: Vec<ActionMark>) -> Update {
        Update::Handling(Box::new(Handling { acks, actions }))
    }

    #[test]
    fn open_then_acked_sorts_below_unhandled_and_follows_its_key() {
        let mut s = crate::state::suspects::tests::cluster();
        let i = port_down(&s);
        assert_eq!(i.lifecycle, Lifecycle::Open);
        assert_eq!(i.severity, crate::state::Severity::Critical);
        let first_crit = s.incidents.iter().position(|x| x.key() == i.key()).unwrap();
        assert_eq!(s.incidents[first_crit].lifecycle.rank(), 0);
        let ack = Ack {
            cluster: s.cluster.to_string(),
            key: i.key(),
            by: "bob".into(),
            at: s.now - 180,
            note: "looking".into(),
            ticket: None,
        };
        assert!(s.apply(handling(vec![ack.clone()], vec![])));
        let i = port_down(&s);
        assert!(matches!(&i.lifecycle, Lifecycle::Acked { by, .. } if by == "bob"));
        assert_eq!(i.lifecycle.phrase(s.now), "acked by bob 3m00s ago: looking");
        // Every unhandled incident, even a WARN one, sorts above it.
        let pos = s.incidents.iter().position(|x| x.key() == i.key()).unwrap();
        let first_handled = s.incidents.iter().position(|x| x.lifecycle.handled()).unwrap();
        assert!(first_handled <= pos);
        assert!(s.incidents[first_handled..].iter().all(|x| x.lifecycle.handled()), "{:#?}", s.incidents);
        assert!(
            s.incidents
                .iter()
                .any(|x| x.severity == crate::state::Severity::Warning && !x.lifecycle.handled())
        );
        // The same handling again changes nothing.
        assert!(!s.apply(handling(vec![ack.clone()], vec![])));
        // An ack of another signal on the same subject does not ack it.
        let other = Ack { key: IncidentKey { signal: "port-flap".into(), ..ack.key.clone() }, ..ack };
        s.apply(handling(vec![other], vec![]));
        assert_eq!(port_down(&s).lifecycle, Lifecycle::Open);
    }

    #[test]
    fn an_audited_drain_mitigates_with_who_and_ticket_and_the_wait_is_named() {
        let mut s = crate::state::suspects::tests::cluster();
        let now = s.now;
        crate::clock::pin_zone(Some(jiff::tz::TimeZone::UTC));
        // The only job on gpu-002: alice's 100000, ending in 2 h.
        let mut jobs = s.jobs.clone();
        jobs.iter_mut().for_each(|j| j.nodes.retain(|n| n != "gpu-002"));
        let mut j = jobs.iter().find(|j| j.state == JobState::Running).cloned().expect("a running job");
        (j.id, j.user, j.nodes, j.end) = (100_000, "alice".into(), vec!["gpu-002".into()], Some(now + 7_200));
        jobs.push(j);
        s.apply(Update::Inventory {
            at: now,
            inventory: Box::new(Inventory { source: "sched".into(), jobs: Some(jobs), ..Default::default() }),
        });
        with_nodes(&mut s, now, |n| {
            if n.name == "gpu-002" {
                n.state = NodeState::Draining;
                n.reason = Some(NodeReason { text: "XID 79".into(), by: "slurm".into(), at: now - 720 });
            }
        });
        let mark = ActionMark {
            cluster: String::new(),
            target: "gpu-002".into(),
            action: "drain".into(),
            by: "oncall".into(),
            at: now - 720,
            ticket: Some("INC-4242".into()),
            reason: Some("port down".into()),
        };
        s.apply(handling(vec![], vec![mark.clone()]));
        let i = port_down(&s);
        assert_eq!(i.lifecycle.label(), "mitigated");
        assert_eq!(i.lifecycle.ticket(), Some("INC-4242"));
        assert!(
            i.lifecycle.phrase(s.now).starts_with("drained by oncall INC-4242 12m00s ago"),
            "{}",
            i.lifecycle.phrase(s.now)
        );
        let ends = crate::clock::clock(s.now, now + 7_200);
        assert_eq!(
            i.waiting.as_deref(),
            Some(format!("waiting for job 100000 (alice, ends ~{ends})").as_str())
        );
        assert!(ends.ends_with(" UTC"), "{ends}");
        // A resume after the drain: the audit no longer explains it; the scheduler's reason does.
        let resume = ActionMark { action: "resume".into(), at: now - 60, ticket: None, ..mark };
        s.apply(handling(vec![], vec![s.handling.actions[0].clone(), resume]));
        let i = port_down(&s);
        assert_eq!(i.lifecycle.phrase(s.now), "draining by slurm 12m00s ago: XID 79");
        assert!(matches!(i.lifecycle, Lifecycle::Mitigated { audited: false, .. }));
    }

    #[test]
    fn a_drain_set_by_someone_else_shows_who_set_it() {
        let mut s = crate::state::suspects::tests::cluster();
        let now = s.now;
        with_nodes(&mut s, now, |n| {
            if n.name == "gpu-002" {
                n.state = NodeState::Drained;
                n.reason = Some(NodeReason {
                    text: "healthcheck: IB down".into(),
                    by: "root".into(),
                    at: now - 7200,
                });
            }
        });
        let i = port_down(&s);
        assert_eq!(i.lifecycle.phrase(s.now), "drained by root 2h00m ago: healthcheck: IB down");
        assert!(i.waiting.is_none(), "a drained node waits for nothing");
    }

    #[test]
    fn a_cleared_signal_stays_listed_as_resolved_for_a_while() {
        let mut s = crate::state::suspects::tests::cluster();
        let key = port_down(&s).key();
        let now = s.now;
        with_nodes(&mut s, now + 10, |n| {
            for p in &mut n.ports {
                p.state = PortState::Active;
            }
        });
        let r = s.incidents.iter().find(|i| i.key() == key).expect("kept as resolved");
        assert_eq!(r.lifecycle, Lifecycle::Resolved { at: now + 10 });
        assert_eq!(r.lifecycle.phrase(now + 250), "resolved 4m00s ago");
        // Resolved sorts last.
        let pos = s.incidents.iter().position(|i| i.key() == key).unwrap();
        assert!(s.incidents[pos..].iter().all(|i| matches!(i.lifecycle, Lifecycle::Resolved { .. })));
        assert!(s.incidents[..pos].iter().any(|i| !matches!(i.lifecycle, Lifecycle::Resolved { .. })));
        // Still listed on the next derivation, until the keep time has passed.
        with_nodes(&mut s, now + 20, |n| n.cpus_alloc = n.cpus_alloc.wrapping_add(0));
        s.apply(handling(vec![], vec![]));
        assert!(s.incidents.iter().any(|i| i.key() == key));
        with_nodes(&mut s, now + 10 + RESOLVED_KEEP_S, |n| n.mem_alloc_mib += 1);
        assert!(!s.incidents.iter().any(|i| i.key() == key), "gone after {RESOLVED_KEEP_S}s");
    }

    #[test]
    fn an_ack_older_than_the_incidents_start_does_not_count() {
        let mut s = crate::state::suspects::tests::cluster();
        let i = s
            .incidents
            .iter()
            .find(|i| i.since.is_some() && i.node.is_some())
            .cloned()
            .expect("an incident with a start");
        let since = i.since.unwrap();
        let cluster = s.cluster.to_string();
        let ack = |at| Ack {
            cluster: cluster.clone(),
            key: i.key(),
            by: "amy".into(),
            at,
            note: String::new(),
            ticket: Some("INC-1".into()),
        };
        s.apply(handling(vec![ack(since - 1)], vec![]));
        let now_i = s.incidents.iter().find(|x| x.key() == i.key()).unwrap();
        assert!(!matches!(now_i.lifecycle, Lifecycle::Acked { .. }), "an ack from before it started");
        s.apply(handling(vec![ack(since)], vec![]));
        let now_i = s.incidents.iter().find(|x| x.key() == i.key()).unwrap();
        assert!(now_i.lifecycle.handled());
        assert_eq!(now_i.lifecycle.ticket(), Some("INC-1"));
    }

    #[test]
    fn node_actions_come_from_successful_outcomes_in_the_audit_log() {
        use crate::audit::{AuditLog, Entry, Phase, Witness};
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.jsonl"))
            .with_witness(Witness { journal: false, ..Witness::default() });
        let e = |action: &str, result: Option<&str>, cluster: &str| Entry {
            identity: Some("oncall".into()),
            cluster: cluster.into(),
            action: action.into(),
            targets: vec!["gpu-004".into()],
            ticket: Some("INC-4242".into()),
            reason: Some("xid 79".into()),
            result: result.map(Into::into),
            op_id: "op".into(),
            ..Default::default()
        };
        log.append(Phase::Intent, &e("drain", None, "c1")).unwrap();
        log.append(Phase::Outcome, &e("drain", Some("ok"), "c1")).unwrap();
        log.append(Phase::Outcome, &e("cordon", Some("failed"), "c1")).unwrap();
        log.append(Phase::Outcome, &e("drain", Some("ok"), "other")).unwrap();
        log.append(Phase::Outcome, &e("cancel", Some("ok"), "c1")).unwrap();
        let got = actions_from_audit(&log.tail(100).unwrap(), &["c1", "http://slurm:6820"]);
        assert_eq!(got.len(), 1, "{got:#?}");
        assert_eq!((got[0].target.as_str(), got[0].by.as_str()), ("gpu-004", "oncall"));
        assert_eq!(got[0].ticket.as_deref(), Some("INC-4242"));
        assert!(got[0].takes_out());
        assert_eq!(got[0].past(), "drained");
    }
}
