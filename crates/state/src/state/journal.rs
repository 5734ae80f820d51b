//! What changed between two looks at the cluster, as timeline [`Event`]s: [`diff`] compares a
//! compact [`Snapshot`] of the last look with the state now (pure; the state calls it after
//! each change it applies), [`from_audit`] turns audit records into action events, and
//! [`Timeline`] holds what the Timeline view shows: the event journal's window as last loaded,
//! then what this console saw since.
//!
//! Dedupe keys: a change the source timestamps carries that time in its key (a drain reason's
//! `reason_changed_at`, a job's end, an alert's start, an ack's time, an audit sequence
//! number), so every console makes the same key for it, even one that starts later and sees it
//! on its first look; a change known only by when it was seen (a node going down without a
//! reason time, a port going down) or dated by the source only to its sampling step (an ECC
//! count, dated by Prometheus's series: the journal's window merges the consoles' copies, and a
//! restarted console dates it as the first did) or dated differently by each console
//! (Prometheus's XIDs carry when the console first saw them: an XID is keyed by GPU, code and
//! count) is keyed without a time, and the journal's window
//! ([`crate::store::timeline::DEDUPE_WINDOW_S`]) merges consoles' copies.

use super::ClusterState;
use crate::model::alert::AlertState;
use crate::model::timeline::{Event, EventKind, SubjectKind, TimelineLoad};
use crate::model::{Epoch, JobId, JobState, NodeState, PortState, Text, xid_info};
use crate::sanitize::sanitize;
use crate::store::timeline::DEDUPE_WINDOW_S;
use std::collections::{HashMap, HashSet};

/// What the last look saw, per object: only what events are made of.
#[derive(Debug, Clone, Default, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Snapshot {
    pub at: Epoch,
    nodes: HashMap<(Text, Text), NodeSnap>,
    /// Jobs already seen failed or preempted: (cluster, id, state).
    ended: HashSet<(Text, JobId, JobState)>,
    /// Firing alerts: fingerprint → (cluster, name, start, subject, node).
    alerts: HashMap<Text, AlertSnap>,
    /// Acks seen: (cluster, subject, signal, at).
    acks: HashSet<(String, String, String, Epoch)>,
}

/// A GPU as the last look saw it: index, last XID (code, time, count), double-bit ECC count.
type GpuSnap = (u8, Option<(u16, Epoch, u32)>, u32);

#[derive(Debug, Clone, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct NodeSnap {
    state: NodeState,
    reason_at: Option<Epoch>,
    /// Per GPU: index, last XID (code, time), double-bit ECC count.
    /// The GPUs with an XID or double-bit errors (the rest are the default).
    gpus: Vec<GpuSnap>,
    /// Per port: name, state, flaps.
    ports: Vec<(Text, PortState, u32)>,
    /// Whether any GPU of it had telemetry: before, a count is not known, not zero.
    telemetry: bool,
}

#[derive(Debug, Clone, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct AlertSnap {
    cluster: String,
    name: String,
    starts_at: Epoch,
    subject: String,
    node: Option<String>,
}

fn clean(s: &str) -> String {
    sanitize(s).into_owned()
}

/// An event about a node (or a GPU or port of it).
fn node_event(cluster: &str, node: &str, at: Epoch, kind: EventKind, what: String, dedupe: String) -> Event {
    Event {
        cluster: clean(cluster),
        at,
        kind,
        subject_kind: SubjectKind::Node,
        subject: clean(node),
        node: Some(clean(node)),
        job: None,
        team: None,
        what: clean(&what),
        who: None,
        gpus: 0,
        dedupe: clean(&dedupe),
    }
}

/// The events between `prev` (the last look; `None` for the first) and `s`, and the snapshot
/// of `s` for the next call. A first look records only what the source timestamps (XIDs,
/// drain reasons with their time, ended jobs, firing alerts, acks): the journal already has
/// them if another console saw them, and their time is right either way.
pub fn diff(prev: Option<&Snapshot>, s: &ClusterState) -> (Snapshot, Vec<Event>) {
    let mut out = Vec::new();
    let mut next = Snapshot { at: s.now, ..Default::default() };
    let since = prev.map_or(Epoch::MIN, |p| p.at);
    for n in &s.nodes {
        let cluster = s.cluster_of(&n.cluster);
        let name = n.name.as_str();
        let snap = NodeSnap {
            state: n.state,
            reason_at: n.reason.as_ref().map(|r| r.at),
            // Only GPUs with an XID or double-bit errors: the others are the default, and most
            // GPUs are (80,000 GPUs: 2.6 MB of snapshot for nothing).
            gpus: n
                .gpus
                .iter()
                .filter(|g| g.xid.is_some() || g.ecc.dbe > 0)
                .map(|g| (g.index, g.xid.map(|x| (x.code, x.at, x.count)), g.ecc.dbe))
                .collect(),
            ports: n.ports.iter().map(|p| (p.name.clone(), p.state, p.flaps)).collect(),
            telemetry: n.gpus.iter().any(|g| g.util.is_some() || g.ecc_at.is_some()),
        };
        let was = prev.and_then(|p| p.nodes.get(&(cluster.clone(), n.name.clone())));
        let gpus = n.gpu_slots.max(n.gpus.len() as u32);
        // The scheduler's state, with its reason and who set it.
        let reason = n.reason.as_ref().map(|r| {
            let by = if r.by.is_empty() { String::new() } else { format!(" (by {})", r.by) };
            (format!(": {}{by}", r.text), r.by.to_string(), r.at)
        });
        let from = was.map(|w| w.state);
        // Work coming and going (idle, mixed, allocated) is not a change of service.
        let churn = from.is_some_and(|f| f.schedulable()) && n.state.schedulable();
        if from != Some(n.state) && !churn {
            // A reason set since the last look (or, on a first look, any reason) dates it.
            let dated = reason
                .as_ref()
                .filter(|(_, _, at)| *at > since && *at <= s.now)
                .map(|r| r.2)
                .filter(|_| !n.state.schedulable());
            let first_look_dated = was.is_none() && !n.state.schedulable() && reason.is_some();
            if was.is_some() || first_look_dated {
                let at = dated
                    .or(first_look_dated.then(|| reason.as_ref().map_or(s.now, |r| r.2)))
                    .unwrap_or(s.now);
                let words = match from {
                    Some(f) => format!("{} → {}", f.label(), n.state.label()),
                    None => n.state.label().to_string(),
                };
                let text = format!(
                    "{words}{}",
                    reason.as_ref().filter(|_| !n.state.schedulable()).map_or("", |r| &r.0)
                );
                let dedupe = match (dated, first_look_dated) {
                    (Some(t), _) => format!("node-state:{name}:{}:{t}", n.state.label()),
                    (None, true) => format!("node-state:{name}:{}:{at}", n.state.label()),
                    (None, false) => {
                        format!("node-state:{name}:{}>{}", from.map_or("", |f| f.label()), n.state.label())
                    }
                };
                let mut e = node_event(cluster, name, at, EventKind::NodeState, text, dedupe);
                e.who = reason
                    .as_ref()
                    .filter(|(_, by, _)| !by.is_empty() && !n.state.schedulable())
                    .map(|r| clean(&r.1));
                e.gpus = gpus;
                out.push(e);
            }
        }
        for g in &n.gpus {
            let old =
                was.map(|w| w.gpus.iter().find(|x| x.0 == g.index).copied().unwrap_or((g.index, None, 0)));
            let gpu = || format!("{name}/gpu{}", g.index);
            // A new XID: another code, a higher count, or one dated well after the last (a
            // source that re-dates a standing XID every poll, as NVML's lost GPU does, is not
            // a new one each time).
            if let Some(x) = g.xid {
                let last = old.and_then(|o| o.1);
                let more = last.is_some_and(|(c, _, n)| c == x.code && x.count > n);
                let new = match last {
                    None => true,
                    Some((c, at, _)) => c != x.code || more || x.at - at > DEDUPE_WINDOW_S,
                };
                if new {
                    let info = xid_info(x.code);
                    let gpu = gpu();
                    // A count that rose happened now; otherwise the source's time.
                    let at = if more { s.now } else { x.at };
                    let mut e = node_event(
                        cluster,
                        name,
                        at,
                        EventKind::Xid,
                        format!("XID {}: {} ({} in window)", x.code, info.name, x.count),
                        format!("xid:{gpu}:{}:{}", x.code, x.count),
                    );
                    e.subject_kind = SubjectKind::Gpu;
                    e.subject = clean(&gpu);
                    e.gpus = 1;
                    out.push(e);
                }
            }
            // A count that rose since a look with telemetry; or, seen for the first time (a first
            // look, the first telemetry after a restart), one the source dates: at the source's
            // time either way when it gives one, so that every console dates it alike.
            // (A count the source dates before the last look had not reached that look.)
            let known = was.is_some_and(|w| w.telemetry) && g.ecc_at.is_none_or(|t| t > since);
            let rose = old.filter(|o| known && g.ecc.dbe > o.2).map(|o| o.2);
            let new_count = old.is_none_or(|o| o.2 != g.ecc.dbe);
            let dated_first = (!known && new_count && g.ecc.dbe > 0).then_some(g.ecc_at).flatten();
            if rose.is_some() || dated_first.is_some() {
                let what = match rose {
                    Some(from) => format!("ECC double-bit errors {from} → {}", g.ecc.dbe),
                    None => format!("ECC double-bit errors reached {}", g.ecc.dbe),
                };
                let mut e = node_event(
                    cluster,
                    name,
                    g.ecc_at.filter(|&t| t <= s.now).unwrap_or(s.now),
                    EventKind::Ecc,
                    what,
                    format!("ecc:{}:{}", gpu(), g.ecc.dbe),
                );
                e.subject_kind = SubjectKind::Gpu;
                e.subject = clean(&gpu());
                e.gpus = 1;
                out.push(e);
            }
        }
        if let Some(w) = was {
            for p in &n.ports {
                // A port listed for the first time on a node seen before (telemetry's port
                // list arrives after the scheduler's nodes) is compared with a healthy one.
                let healthy = (p.name.clone(), PortState::Active, 0);
                let old = w.ports.iter().find(|o| o.0 == p.name).unwrap_or(&healthy);
                let port = format!("{name}/{}", p.name);
                // Going down: since when the source says it has been down.
                let down_at = p.state_since.filter(|&t| t <= s.now).unwrap_or(s.now);
                let mut push = |kind, at: Epoch, what: String, dedupe: String| {
                    let mut e = node_event(cluster, name, at, kind, what, dedupe);
                    e.subject_kind = SubjectKind::Port;
                    e.subject = clean(&port);
                    out.push(e);
                };
                let down = |st: PortState| matches!(st, PortState::Down | PortState::Polling);
                let limit = s.thresholds.flap_count;
                // A port already flapping at the last look: its flap event said so; each
                // bounce is not a line of its own.
                let flapping = limit > 0 && old.2 >= limit && p.flaps >= limit;
                if old.1 != p.state && (down(old.1) || down(p.state)) && !flapping {
                    let back = if down(p.state) { "" } else { " (back up)" };
                    push(
                        EventKind::PortDown,
                        if down(p.state) { down_at } else { s.now },
                        format!("{} {} → {}{back}", p.kind.label(), old.1.label(), p.state.label()),
                        format!("port:{port}:{}>{}", old.1.label(), p.state.label()),
                    );
                }
                if p.flaps >= limit && old.2 < limit && limit > 0 {
                    push(
                        EventKind::PortFlap,
                        p.flaps_since.filter(|&t| t <= s.now).unwrap_or(s.now),
                        format!("{} flapped {} times in the window", p.kind.label(), p.flaps),
                        format!("port-flap:{port}"),
                    );
                }
            }
        }
        next.nodes.insert((cluster.clone(), n.name.clone()), snap);
    }
    for j in &s.jobs {
        let kind = match j.state {
            JobState::Failed | JobState::Timeout | JobState::NodeFail => EventKind::JobFailed,
            JobState::Preempted => EventKind::JobPreempted,
            _ => continue,
        };
        let cluster = s.cluster_of(&j.cluster);
        let key = (cluster.clone(), j.id, j.state);
        let seen = prev.is_some_and(|p| p.ended.contains(&key));
        next.ended.insert(key);
        // A first look records only jobs whose end the scheduler dates.
        if seen || (prev.is_none() && j.end.is_none()) {
            continue;
        }
        let at = j.end.unwrap_or(s.now);
        let ran = j.elapsed(at).map_or(String::new(), |r| format!(", ran {}", crate::clock::dur(r)));
        let nodes = if j.nodes.is_empty() { String::new() } else { format!(" on {}", j.nodes.join(",")) };
        let why = j.exit_reason.as_deref().map_or(String::new(), |r| format!(": {r}"));
        out.push(Event {
            cluster: clean(cluster),
            at,
            kind,
            subject_kind: SubjectKind::Job,
            subject: j.id.to_string(),
            node: j.nodes.first().map(|n| clean(n)),
            job: Some(j.id),
            team: Some(clean(&j.account)),
            what: clean(&format!("{} {}{why} ({} GPUs{nodes}{ran})", j.name, j.state.label(), j.gpus)),
            who: Some(clean(&j.user)),
            gpus: j.gpus,
            dedupe: match j.end {
                Some(end) => format!("job:{}:{}:{end}", j.id, j.state.label()),
                None => format!("job:{}:{}", j.id, j.state.label()),
            },
        });
    }
    for a in s.alerts.iter().filter(|a| a.state == AlertState::Active) {
        let node = s.alert_node(a);
        let cluster = node.map_or(&s.cluster, |n| s.cluster_of(&n.cluster)).to_string();
        let snap = AlertSnap {
            cluster: clean(&cluster),
            name: clean(&a.name),
            starts_at: a.starts_at,
            subject: clean(
                &node.map_or_else(|| a.host().unwrap_or(&a.name).to_string(), |n| n.name.to_string()),
            ),
            node: node.map(|n| clean(&n.name)),
        };
        if prev.is_none_or(|p| p.alerts.get(&a.fingerprint).is_none_or(|o| o.starts_at != a.starts_at)) {
            let summary = a.summary();
            let sev = a.severity();
            out.push(Event {
                cluster: snap.cluster.clone(),
                at: a.starts_at,
                kind: EventKind::AlertFiring,
                subject_kind: if node.is_some() { SubjectKind::Node } else { SubjectKind::Alert },
                subject: snap.subject.clone(),
                node: snap.node.clone(),
                job: a.job(),
                team: None,
                what: clean(&format!(
                    "{} ({sev}) firing{}",
                    a.name,
                    if summary.is_empty() { String::new() } else { format!(": {summary}") }
                )),
                who: None,
                gpus: 0,
                dedupe: clean(&format!("alert:{}:{}", a.fingerprint, a.starts_at)),
            });
        }
        next.alerts.insert(a.fingerprint.clone(), snap);
    }
    if let Some(p) = prev {
        let mut gone: Vec<(&Text, &AlertSnap)> =
            p.alerts.iter().filter(|(fp, _)| !next.alerts.contains_key(*fp)).collect();
        gone.sort_by(|a, b| a.0.cmp(b.0));
        for (fp, o) in gone {
            out.push(Event {
                cluster: o.cluster.clone(),
                at: s.now,
                kind: EventKind::AlertResolved,
                subject_kind: if o.node.is_some() { SubjectKind::Node } else { SubjectKind::Alert },
                subject: o.subject.clone(),
                node: o.node.clone(),
                job: None,
                team: None,
                what: format!("{} resolved (fired {})", o.name, crate::clock::dur(s.now - o.starts_at)),
                who: None,
                gpus: 0,
                dedupe: clean(&format!("alert-resolved:{fp}:{}", o.starts_at)),
            });
        }
    }
    for a in &s.handling.acks {
        let key = (a.cluster.clone(), a.key.subject.clone(), a.key.signal.clone(), a.at);
        if !prev.is_some_and(|p| p.acks.contains(&key)) {
            let ticket = a.ticket.as_deref().map_or(String::new(), |t| format!(" {t}"));
            let node = a.key.subject.split('/').next().filter(|n| s.node(n).is_some());
            // The acked incident's subject, with its kind: `gpu-004/gpu3`, `gpu-004`,
            // `gpu-004/mlx5_0/1`, `job 4242` (its id), else as it is.
            let (subject_kind, subject) = match (node, a.key.subject.split_once('/')) {
                (Some(_), Some((_, rest))) if rest.starts_with("gpu") && !rest.contains('/') => {
                    (SubjectKind::Gpu, a.key.subject.clone())
                }
                (Some(_), Some(_)) => (SubjectKind::Port, a.key.subject.clone()),
                (Some(_), None) => (SubjectKind::Node, a.key.subject.clone()),
                _ => match a.key.subject.strip_prefix("job ").filter(|j| j.parse::<JobId>().is_ok()) {
                    Some(id) => (SubjectKind::Job, id.to_string()),
                    None => (SubjectKind::Other, a.key.subject.clone()),
                },
            };
            out.push(Event {
                cluster: clean(s.cluster_of(&Text::from(a.cluster.as_str()))),
                at: a.at,
                kind: EventKind::Ack,
                subject_kind,
                job: (subject_kind == SubjectKind::Job).then(|| subject.parse().ok()).flatten(),
                subject: clean(&subject),
                node: node.map(clean),
                team: None,
                what: clean(&format!("acknowledged {}{ticket}: {}", signal_title(s, &a.key.signal), a.note)),
                who: Some(clean(&a.by)),
                gpus: 0,
                dedupe: clean(&format!("ack:{}:{}:{}", a.key.subject, a.key.signal, a.at)),
            });
        }
        next.acks.insert(key);
    }
    out.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.dedupe.cmp(&b.dedupe)));
    (next, out)
}

/// What a signal is called for people (`xid:79` → `XID 79: GPU has fallen off the bus`): an
/// XID's meaning, else its playbook's name, else the title of an incident that carries it, else
/// the signal's words.
pub fn signal_title(s: &ClusterState, signal: &str) -> String {
    if let Some(code) = signal.strip_prefix("xid:").and_then(|c| c.parse::<u16>().ok()) {
        return format!("XID {code}: {}", xid_info(code).name);
    }
    if let Some(p) = s.playbooks.get(signal) {
        return p.name.clone();
    }
    if let Some(i) = s.incidents.iter().find(|i| i.signal == signal) {
        return i.title.clone();
    }
    signal.replace(['-', ':'], " ")
}

/// The actions of an audit log as events: every outcome (drain, cordon, resume, cancel, a
/// silence, …) and every break-glass start and end, by whom, with ticket and reason. Acks are
/// left out (the ack store's events say them). `cluster` names the cluster a record's label
/// (`sim-4x8`, the slurmrestd URL, `kube:CONTEXT`) belongs to, `None` for other clusters'.
pub fn from_audit(records: &[crate::audit::Record], cluster: &dyn Fn(&str) -> Option<String>) -> Vec<Event> {
    use crate::audit::Phase;
    let mut out = Vec::new();
    for r in records {
        if !matches!(r.phase, Phase::Outcome | Phase::Event) || r.action == "incident-ack" {
            continue;
        }
        let Some(c) = cluster(&r.cluster) else { continue };
        let Ok(ts) = r.ts.parse::<jiff::Timestamp>() else { continue };
        let result = r.result.as_deref().map_or(String::new(), |x| format!(" {x}"));
        let targets = if r.targets.is_empty() { String::new() } else { format!(" {}", r.targets.join(",")) };
        let ticket = r.ticket.as_deref().map_or(String::new(), |t| format!(" [{t}]"));
        let reason = r.reason.as_deref().map_or(String::new(), |t| format!(": {t}"));
        let bg = r.break_glass.as_deref().map_or(String::new(), |b| format!(" (break-glass {b})"));
        let node = r
            .targets
            .first()
            .filter(|_| matches!(r.action.as_str(), "drain" | "cordon" | "resume" | "uncordon"));
        let job = r.targets.first().and_then(|t| t.parse::<JobId>().ok()).filter(|_| r.action == "cancel");
        out.push(Event {
            cluster: clean(&c),
            at: ts.as_second(),
            kind: EventKind::Action,
            subject_kind: if node.is_some() {
                SubjectKind::Node
            } else if job.is_some() {
                SubjectKind::Job
            } else {
                SubjectKind::Other
            },
            subject: clean(r.targets.first().map_or(r.action.as_str(), String::as_str)),
            node: node.map(|n| clean(n)),
            job,
            team: None,
            what: clean(&format!("{}{targets}{result}{ticket}{reason}{bg}", r.action)),
            // The operator, not the identity the backend knows the token by (`slurm:root`).
            who: Some(clean(&r.os_user)),
            gpus: 0,
            dedupe: format!("audit:{}:{}", r.seq, r.op_id),
        });
    }
    out
}

/// The newest events the Timeline view holds.
pub const SHOWN_MAX: usize = 5_000;

/// What the Timeline view shows: the journal's window as last loaded, then the events this
/// console saw after that load was asked for (they may not be written yet).
#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Timeline {
    snap: Option<Snapshot>,
    /// Oldest first.
    pub events: Vec<Event>,
    /// Seen and not yet taken for the journal.
    unsent: Vec<Event>,
    /// Seen by this console, numbered; kept until a load that covers them.
    seen: Vec<(u64, Event)>,
    seq: u64,
    loaded: Vec<Event>,
}

impl Timeline {
    /// Compares the state with the last look and keeps what changed.
    pub(super) fn observe(s: &ClusterState) -> (Snapshot, Vec<Event>) {
        diff(s.timeline.snap.as_ref(), s)
    }

    /// The source time of the last look.
    pub(super) fn looked_at(&self) -> Option<Epoch> {
        self.snap.as_ref().map(|s| s.at)
    }

    pub(super) fn add(&mut self, snap: Snapshot, events: Vec<Event>) -> bool {
        self.snap = Some(snap);
        if events.is_empty() {
            return false;
        }
        for e in events {
            self.seq += 1;
            self.unsent.push(e.clone());
            self.seen.push((self.seq, e));
        }
        if self.seen.len() > SHOWN_MAX {
            self.seen.drain(..self.seen.len() - SHOWN_MAX);
        }
        if self.unsent.len() > 4 * SHOWN_MAX {
            self.unsent.drain(..self.unsent.len() - 4 * SHOWN_MAX);
        }
        self.rebuild();
        true
    }

    /// A load from the journal asked for after the events numbered up to `load.seq` were sent.
    pub(super) fn load(&mut self, load: TimelineLoad) -> bool {
        self.seen.retain(|(n, _)| *n > load.seq);
        if self.loaded == load.events && self.seen.is_empty() {
            return false;
        }
        self.loaded = load.events;
        self.rebuild();
        true
    }

    fn rebuild(&mut self) {
        let have: HashSet<(&str, &str)> =
            self.loaded.iter().map(|e| (e.cluster.as_str(), e.dedupe.as_str())).collect();
        let mut v: Vec<Event> = self.loaded.clone();
        v.extend(
            self.seen
                .iter()
                .filter(|(_, e)| !have.contains(&(e.cluster.as_str(), e.dedupe.as_str())))
                .map(|(_, e)| e.clone()),
        );
        v.sort_by_key(|e| e.at);
        if v.len() > SHOWN_MAX {
            v.drain(..v.len() - SHOWN_MAX);
        }
        crate::model::timeline::attribute_to_operators(&mut v);
        self.events = v;
    }

    /// The events not yet handed to the journal, and the number of the last one (a load asked
    /// for after they are written carries it).
    pub fn take_unsent(&mut self) -> (Vec<Event>, u64) {
        (std::mem::take(&mut self.unsent), self.seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::protocol::{Inventory, Update};
    use crate::model::{Ack, Handling, IncidentKey, NodeReason, XidEvent};

    fn base() -> ClusterState {
        crate::testing::state_after(
            crate::backend::sim::SimConfig { nodes: 4, jobs: 12, ..Default::default() },
            3,
        )
    }

    /// `s` with its nodes and jobs changed by `f`, as a scheduler would report them at `at`.
    fn relist(
        s: &mut ClusterState,
        at: Epoch,
        f: impl FnOnce(&mut Vec<crate::model::Node>, &mut Vec<crate::model::Job>),
    ) {
        let (mut nodes, mut jobs) = (s.nodes.clone(), s.jobs.clone());
        f(&mut nodes, &mut jobs);
        s.apply(Update::Inventory {
            at,
            inventory: Box::new(Inventory {
                source: "sim".into(),
                cluster: Some(s.cluster.clone()),
                nodes: Some(nodes),
                jobs: Some(jobs),
                ..Default::default()
            }),
        });
    }

    fn kinds(ev: &[Event]) -> Vec<(EventKind, String)> {
        ev.iter().map(|e| (e.kind, e.subject.clone())).collect()
    }

    #[test]
    fn a_drain_is_recorded_with_its_reason_who_and_time() {
        let mut s = base();
        let (snap, _) = diff(None, &s);
        let t0 = s.now;
        let name = s.nodes[1].name.to_string();
        relist(&mut s, t0 + 30, |nodes, _| {
            nodes[1].state = NodeState::Draining;
            nodes[1].reason = Some(NodeReason {
                text: "XID 79 \u{1b}[31mINC-4242".into(),
                by: "oncall".into(),
                at: t0 + 20,
            });
        });
        let (snap2, ev) = diff(Some(&snap), &s);
        let e = ev.iter().find(|e| e.kind == EventKind::NodeState).expect("a node-state event");
        assert_eq!(e.subject, name);
        assert_eq!(e.node.as_deref(), Some(name.as_str()));
        assert_eq!(e.at, t0 + 20, "dated by the reason's time");
        assert_eq!(e.who.as_deref(), Some("oncall"));
        assert!(e.what.contains("→ draining: XID 79 INC-4242 (by oncall)"), "{}", e.what);
        assert!(!e.what.contains('\u{1b}'), "sanitised");
        assert_eq!(e.dedupe, format!("node-state:{name}:draining:{}", t0 + 20));
        // Nothing changed: nothing new.
        let (_, again) = diff(Some(&snap2), &s);
        assert!(again.iter().all(|e| e.kind != EventKind::NodeState), "{:?}", kinds(&again));
        // Work coming and going is not a transition worth a line.
        let mut busy = s.clone();
        let idle = busy.nodes.iter().position(|n| n.state == NodeState::Idle || n.state == NodeState::Mixed);
        if let Some(i) = idle {
            let at = busy.now + 1;
            relist(&mut busy, at, |nodes, _| nodes[i].state = NodeState::Allocated);
            let (_, ev) = diff(Some(&snap2), &busy);
            assert!(ev.iter().all(|e| e.kind != EventKind::NodeState), "{:?}", kinds(&ev));
        }
        // A console that starts now sees the same drain on its first look, with the same key.
        let (_, first) = diff(None, &s);
        let f = first
            .iter()
            .find(|e| e.kind == EventKind::NodeState && e.subject == name)
            .expect("on first look");
        assert_eq!((f.dedupe.as_str(), f.at), (e.dedupe.as_str(), e.at));
        // A node going down without a reason time: dated now, keyed by the transition.
        let t1 = s.now;
        relist(&mut s, t1 + 10, |nodes, _| {
            nodes[2].state = NodeState::Down;
            nodes[2].reason = None;
        });
        let (_, ev) = diff(Some(&snap2), &s);
        let d = ev
            .iter()
            .find(|e| e.kind == EventKind::NodeState && e.subject == s.nodes[2].name.as_str())
            .unwrap();
        assert_eq!(d.at, t1 + 10);
        assert!(d.dedupe.ends_with(">down"), "{}", d.dedupe);
        assert!(d.who.is_none());
    }

    /// Telemetry's port list arrives after the scheduler's nodes: a port first listed down or
    /// flapping is an entry (dated since when the source says it has been down), not skipped.
    #[test]
    fn ports_listed_after_the_first_look_are_entries() {
        let mut s = base();
        let t0 = s.now;
        relist(&mut s, t0 + 1, |nodes, _| nodes[0].ports.clear());
        let (snap, _) = diff(None, &s);
        let mut ports = base().nodes[0].ports.clone();
        assert!(ports.len() >= 2, "the simulated node has ports");
        ports[0].state = PortState::Down;
        ports[0].state_since = Some(t0 - 30);
        ports[1].flaps = s.thresholds.flap_count;
        ports[1].flaps_since = Some(t0 - 50);
        relist(&mut s, t0 + 10, move |nodes, _| nodes[0].ports = ports);
        let (snap2, ev) = diff(Some(&snap), &s);
        let n0 = s.nodes[0].name.to_string();
        let down = ev.iter().find(|e| e.kind == EventKind::PortDown).expect("the port down");
        assert_eq!((down.at, down.subject_kind), (t0 - 30, SubjectKind::Port));
        assert!(down.what.contains("Active → Down") && down.subject.starts_with(&n0), "{down:?}");
        let flap = ev.iter().find(|e| e.kind == EventKind::PortFlap).expect("the flapping port");
        assert_eq!(flap.at, t0 - 50, "since when the source says it has been flapping");
        // Once.
        let (_, again) = diff(Some(&snap2), &s);
        assert!(!again.iter().any(|e| matches!(e.kind, EventKind::PortDown | EventKind::PortFlap)));
    }

    #[test]
    fn xids_ecc_and_ports_are_recorded_once() {
        let mut s = base();
        let (snap, _) = diff(None, &s);
        let t0 = s.now;
        relist(&mut s, t0 + 5, |nodes, _| {
            nodes[0].gpus[3].xid = Some(XidEvent { code: 79, at: t0 + 3, count: 1 });
            nodes[0].gpus[1].ecc.dbe += 2;
            if let Some(p) = nodes[0].ports.first_mut() {
                p.state = PortState::Down;
            }
        });
        let (snap2, ev) = diff(Some(&snap), &s);
        let n0 = s.nodes[0].name.to_string();
        let x =
            ev.iter().find(|e| e.kind == EventKind::Xid && e.subject == format!("{n0}/gpu3")).expect("xid");
        assert_eq!(x.at, t0 + 3);
        assert!(x.what.starts_with("XID 79: "), "{}", x.what);
        assert_eq!(x.subject_kind, SubjectKind::Gpu);
        let ecc = ev.iter().find(|e| e.kind == EventKind::Ecc).expect("ecc");
        assert_eq!(ecc.subject, format!("{n0}/gpu1"));
        if !s.nodes[0].ports.is_empty() {
            let p = ev.iter().find(|e| e.kind == EventKind::PortDown).expect("port down");
            assert!(p.what.contains("→ Down"), "{}", p.what);
            assert_eq!(p.subject_kind, SubjectKind::Port);
        }
        let (_, again) = diff(Some(&snap2), &s);
        assert!(
            !again.iter().any(|e| matches!(e.kind, EventKind::Xid | EventKind::Ecc | EventKind::PortDown)
                && e.node.as_deref() == Some(n0.as_str()))
        );
        // The same XID re-dated by a poll is not new; its count rising is, dated now.
        relist(&mut s, t0 + 9, |nodes, _| {
            nodes[0].gpus[3].xid = Some(XidEvent { code: 79, at: t0 + 9, count: 1 })
        });
        let (snap3, ev) = diff(Some(&snap2), &s);
        assert!(
            !ev.iter().any(|e| e.kind == EventKind::Xid && e.node.as_deref() == Some(n0.as_str())),
            "{:?}",
            kinds(&ev)
        );
        relist(&mut s, t0 + 12, |nodes, _| {
            nodes[0].gpus[3].xid = Some(XidEvent { code: 79, at: t0 + 9, count: 2 })
        });
        let (_, ev) = diff(Some(&snap3), &s);
        let x2 = ev
            .iter()
            .find(|e| e.kind == EventKind::Xid && e.node.as_deref() == Some(n0.as_str()))
            .expect("a repeat");
        assert_eq!((x2.at, x2.dedupe.as_str()), (t0 + 12, format!("xid:{n0}/gpu3:79:2").as_str()));
    }

    #[test]
    fn failed_and_preempted_jobs_acks_and_alerts() {
        let mut s = base();
        let (snap, _) = diff(None, &s);
        let t0 = s.now;
        let running: Vec<JobId> =
            s.jobs.iter().filter(|j| j.state == JobState::Running).map(|j| j.id).take(2).collect();
        assert_eq!(running.len(), 2, "the simulator runs jobs");
        relist(&mut s, t0 + 10, |_, jobs| {
            for j in jobs.iter_mut() {
                if j.id == running[0] {
                    j.state = JobState::Failed;
                    j.end = Some(t0 + 8);
                    j.exit_reason = Some("OOM".into());
                } else if j.id == running[1] {
                    j.state = JobState::Preempted;
                }
            }
        });
        s.apply(Update::Handling(Box::new(Handling {
            acks: vec![Ack {
                cluster: s.cluster.to_string(),
                key: IncidentKey { subject: "gpu-001/gpu3".into(), signal: "xid:79".into() },
                by: "bob".into(),
                at: t0 + 9,
                note: "looking".into(),
                ticket: Some("INC-7".into()),
            }],
            actions: vec![],
        })));
        let (snap2, ev) = diff(Some(&snap), &s);
        let f = ev.iter().find(|e| e.kind == EventKind::JobFailed).expect("failed job");
        assert_eq!((f.job, f.at), (Some(running[0]), t0 + 8));
        assert!(f.what.contains("FAILED: OOM"), "{}", f.what);
        assert!(f.team.is_some() && f.who.is_some() && f.gpus > 0);
        let p = ev.iter().find(|e| e.kind == EventKind::JobPreempted).expect("preempted job");
        assert_eq!(p.job, Some(running[1]));
        let a = ev.iter().find(|e| e.kind == EventKind::Ack).expect("ack");
        assert_eq!((a.who.as_deref(), a.at), (Some("bob"), t0 + 9));
        assert!(a.what.contains("INC-7"), "{}", a.what);
        // A human signal name, never the internal one.
        let xid = crate::model::xid_info(79).name;
        assert!(a.what.starts_with(&format!("acknowledged XID 79: {xid} INC-7")), "{}", a.what);
        assert!(!a.what.contains("xid:79") && !a.subject.contains("xid:79"), "{a:?}");
        // Its identity: the GPU it is about.
        assert_eq!((a.subject_kind, a.subject.as_str()), (SubjectKind::Gpu, "gpu-001/gpu3"), "{a:?}");
        let (_, again) = diff(Some(&snap2), &s);
        assert!(
            again
                .iter()
                .all(|e| !matches!(e.kind, EventKind::JobFailed | EventKind::JobPreempted | EventKind::Ack))
        );
    }

    #[test]
    fn audit_outcomes_become_actions() {
        let rec = |seq: u64, phase, action: &str| crate::audit::Record {
            seq,
            ts: "2026-01-01T00:00:10Z".into(),
            os_user: "alice".into(),
            identity: Some("slurm:root".into()),
            host: "h".into(),
            cluster: "sim-4x8".into(),
            action: action.into(),
            targets: vec!["gpu-004".into()],
            reason: Some("XID 79".into()),
            ticket: Some("INC-4242".into()),
            params: Default::default(),
            phase,
            result: Some("ok".into()),
            error: None,
            break_glass: None,
            op_id: format!("op{seq}"),
            prev_hash: String::new(),
            hash: String::new(),
        };
        use crate::audit::Phase;
        let recs = vec![
            rec(1, Phase::Intent, "drain"),
            rec(2, Phase::Outcome, "drain"),
            rec(3, Phase::Outcome, "incident-ack"),
            crate::audit::Record { cluster: "other".into(), ..rec(4, Phase::Outcome, "drain") },
        ];
        let ev = from_audit(&recs, &|c| (c == "sim-4x8").then(|| "sim".to_string()));
        assert_eq!(ev.len(), 1, "{ev:?}");
        let e = &ev[0];
        assert_eq!(
            (e.cluster.as_str(), e.who.as_deref(), e.node.as_deref()),
            ("sim", Some("alice"), Some("gpu-004")),
            "who is the operator, not the backend's token identity"
        );
        assert_eq!(e.what, "drain gpu-004 ok [INC-4242]: XID 79");
        assert_eq!(e.dedupe, "audit:2:op2");
        assert_eq!(e.at, 1_767_225_610);
    }

    #[test]
    fn the_timeline_shows_loads_then_what_was_seen_after() {
        let ev = |at: Epoch, k: &str| Event {
            cluster: "c".into(),
            at,
            kind: EventKind::NodeState,
            subject_kind: SubjectKind::Node,
            subject: "n".into(),
            node: Some("n".into()),
            job: None,
            team: None,
            what: String::new(),
            who: None,
            gpus: 0,
            dedupe: k.into(),
        };
        let mut t = Timeline::default();
        assert!(t.add(Snapshot::default(), vec![ev(10, "a"), ev(20, "b")]));
        let (sent, seq) = t.take_unsent();
        assert_eq!((sent.len(), seq), (2, 2));
        assert!(t.add(Snapshot::default(), vec![ev(30, "c")]));
        // A load asked for after the first two were written: it has them (another console's
        // copy of `b`, seen 5 s later), the third is still this console's own.
        assert!(t.load(TimelineLoad { seq: 2, events: vec![ev(5, "z"), ev(10, "a"), ev(25, "b")] }));
        let keys: Vec<(&str, Epoch)> = t.events.iter().map(|e| (e.dedupe.as_str(), e.at)).collect();
        assert_eq!(keys, [("z", 5), ("a", 10), ("b", 25), ("c", 30)]);
    }
}
