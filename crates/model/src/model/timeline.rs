//! What changed, as plain records: one [`Event`] per thing that happened (a node went from
//! `idle` to `draining`, GPU 3 reported XID 79, job 4242 failed, oncall drained a node, an alert
//! fired). The state derives them by comparing successive looks at the cluster
//! (`state::journal`); the event journal (`store::timeline`) keeps them; the Timeline view and
//! `gpuplane timeline` read them back.

use super::{Epoch, GpuKey, JobId, JobKey, NodeKey, ObjKey};

/// What kind of change an event records; its label is what the KIND column and `kind=` show.
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
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// A node's scheduling state changed (with the reason and who set it, when known).
    NodeState,
    /// A GPU reported an XID error.
    Xid,
    /// A GPU's uncorrectable (double-bit) ECC count went up.
    Ecc,
    /// A fabric port went down (or came back: the text says which).
    PortDown,
    /// A fabric port flapped past the threshold.
    PortFlap,
    /// A job ended failed, timed out or with a node failure.
    JobFailed,
    /// A job was preempted.
    JobPreempted,
    /// A write through the ops road (from the audit log): drain, cordon, cancel, a silence, …
    Action,
    /// Someone acknowledged an incident.
    Ack,
    /// An alert started firing.
    AlertFiring,
    /// A firing alert is gone.
    AlertResolved,
}

impl EventKind {
    pub const ALL: [EventKind; 11] = [
        EventKind::NodeState,
        EventKind::Xid,
        EventKind::Ecc,
        EventKind::PortDown,
        EventKind::PortFlap,
        EventKind::JobFailed,
        EventKind::JobPreempted,
        EventKind::Action,
        EventKind::Ack,
        EventKind::AlertFiring,
        EventKind::AlertResolved,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Self::NodeState => "node-state",
            Self::Xid => "xid",
            Self::Ecc => "ecc",
            Self::PortDown => "port-down",
            Self::PortFlap => "port-flap",
            Self::JobFailed => "job-failed",
            Self::JobPreempted => "job-preempted",
            Self::Action => "action",
            Self::Ack => "ack",
            Self::AlertFiring => "alert-firing",
            Self::AlertResolved => "alert-resolved",
        }
    }

    pub fn from_label(s: &str) -> Option<EventKind> {
        Self::ALL.into_iter().find(|k| k.label() == s)
    }
}

/// What an event is about: the kind of object and its id within the cluster. With the event's
/// cluster it is the object's [`ObjKey`] ([`Event::obj_key`]).
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
pub enum SubjectKind {
    /// `gpu-004`
    Node,
    /// `gpu-004/gpu3`
    Gpu,
    /// `gpu-004/mlx5_0/1`
    Port,
    /// `4242`
    Job,
    /// An alert's name (its fingerprint is in the dedupe key).
    Alert,
    /// A silence, a team, anything else.
    Other,
}

impl SubjectKind {
    pub fn label(self) -> &'static str {
        match self {
            Self::Node => "node",
            Self::Gpu => "gpu",
            Self::Port => "port",
            Self::Job => "job",
            Self::Alert => "alert",
            Self::Other => "other",
        }
    }

    pub fn from_label(s: &str) -> Option<SubjectKind> {
        [Self::Node, Self::Gpu, Self::Port, Self::Job, Self::Alert, Self::Other]
            .into_iter()
            .find(|k| k.label() == s)
    }
}

/// One thing that happened. Text fields came from a cluster (or a person) and are stored
/// sanitised; times are UTC epoch seconds.
#[derive(Debug, Clone, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Event {
    /// The configured or scheduler-reported cluster name.
    pub cluster: String,
    pub at: Epoch,
    pub kind: EventKind,
    pub subject_kind: SubjectKind,
    /// The subject's id as shown (`gpu-004`, `gpu-004/gpu3`, `gpu-004/mlx5_0/1`, `4242`).
    pub subject: String,
    /// The node it concerns, for `node=` (a node, GPU or port event; a job's first node).
    pub node: Option<String>,
    /// The job it concerns, for `job=`.
    pub job: Option<JobId>,
    /// The team (Slurm account, Kubernetes namespace) of the job it concerns, for `team=`.
    pub team: Option<String>,
    /// What happened, in words (`idle → drained: XID 79 (by root)`).
    pub what: String,
    /// Who did it or set it, when known (a drain's user, an ack's author, a job's owner).
    pub who: Option<String>,
    /// GPUs it concerns (a failed job's GPUs; a node's GPU slots), 0 when none or unknown.
    pub gpus: u32,
    /// Identifies the event across consoles: two consoles that see the same change make the
    /// same key (`node-state:gpu-004:idle>drained:1767225600`), and the journal keeps one.
    pub dedupe: String,
}

impl Event {
    /// The subject's identity key, when it is a node, GPU, port or job.
    pub fn obj_key(&self) -> Option<ObjKey> {
        let cluster = super::Text::from(self.cluster.as_str());
        let node = |name: &str| NodeKey { cluster: cluster.clone(), name: name.into() };
        match self.subject_kind {
            SubjectKind::Node => Some(ObjKey::Node(node(&self.subject))),
            SubjectKind::Gpu => {
                let (n, g) = self.subject.rsplit_once("/gpu")?;
                Some(ObjKey::Gpu(GpuKey { node: node(n), index: g.parse().ok()? }))
            }
            SubjectKind::Port => {
                let n = self.node.as_deref()?;
                let port = self.subject.strip_prefix(n)?.strip_prefix('/')?;
                Some(ObjKey::Port(node(n), port.into()))
            }
            SubjectKind::Job => Some(ObjKey::Job(JobKey { cluster: cluster.clone(), id: self.job? })),
            SubjectKind::Alert | SubjectKind::Other => None,
        }
    }

    /// The event's own identity (a row of the Timeline): its cluster, key and time.
    pub fn id(&self) -> String {
        format!("{}|{}|{}", self.cluster, self.dedupe, self.at)
    }
}

/// Events read from the journal for the Timeline view, answering a load asked for after this
/// console had handed the journal its events numbered up to `seq`.
#[derive(Debug, Clone, Default, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct TimelineLoad {
    pub seq: u64,
    pub events: Vec<Event>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: SubjectKind, subject: &str, node: Option<&str>, job: Option<u64>) -> Event {
        Event {
            cluster: "c1".into(),
            at: 1,
            kind: EventKind::NodeState,
            subject_kind: kind,
            subject: subject.into(),
            node: node.map(Into::into),
            job,
            team: None,
            what: String::new(),
            who: None,
            gpus: 0,
            dedupe: "x".into(),
        }
    }

    #[test]
    fn subjects_are_identity_keys() {
        let n = |name: &str| NodeKey { cluster: "c1".into(), name: name.into() };
        assert_eq!(
            ev(SubjectKind::Node, "gpu-004", Some("gpu-004"), None).obj_key(),
            Some(ObjKey::Node(n("gpu-004")))
        );
        assert_eq!(
            ev(SubjectKind::Gpu, "gpu-004/gpu3", Some("gpu-004"), None).obj_key(),
            Some(ObjKey::Gpu(GpuKey { node: n("gpu-004"), index: 3 }))
        );
        assert_eq!(
            ev(SubjectKind::Port, "gpu-004/mlx5_0/1", Some("gpu-004"), None).obj_key(),
            Some(ObjKey::Port(n("gpu-004"), "mlx5_0/1".into()))
        );
        assert_eq!(
            ev(SubjectKind::Job, "42", None, Some(42)).obj_key(),
            Some(ObjKey::Job(JobKey { cluster: "c1".into(), id: 42 }))
        );
        assert_eq!(ev(SubjectKind::Alert, "GpuHot", None, None).obj_key(), None);
        for k in EventKind::ALL {
            assert_eq!(EventKind::from_label(k.label()), Some(k));
        }
    }
}

/// How close an audited action and the state change it caused are (the scheduler dates the
/// reason when it takes the request; the audit's outcome is written right after).
pub const CAUSED_WITHIN_S: Epoch = 60;

/// WHO of a node's state change that an audited action caused is the action's operator, not the
/// account the scheduler saw (`root`, the token's user): a node-state event with an action on
/// the same node of the same cluster within [`CAUSED_WITHIN_S`] takes that action's WHO.
pub fn attribute_to_operators(events: &mut [Event]) {
    let actions: Vec<(String, String, Epoch, String)> = events
        .iter()
        .filter(|e| e.kind == EventKind::Action)
        .filter_map(|e| Some((e.cluster.clone(), e.node.clone()?, e.at, e.who.clone()?)))
        .collect();
    if actions.is_empty() {
        return;
    }
    // One cluster's journal: the audit names it by its own label (a URL, `sim-4x8`).
    let mut clusters = events.iter().filter(|e| e.kind == EventKind::NodeState).map(|e| e.cluster.as_str());
    let first = clusters.next().unwrap_or_default().to_string();
    let one = clusters.all(|c| c == first);
    for e in events.iter_mut().filter(|e| e.kind == EventKind::NodeState) {
        let Some(node) = e.node.as_deref() else { continue };
        let by = actions
            .iter()
            .filter(|(c, n, at, _)| {
                (one || *c == e.cluster) && n == node && (at - e.at).abs() <= CAUSED_WITHIN_S
            })
            .min_by_key(|(_, _, at, _)| (at - e.at).abs());
        if let Some((.., who)) = by {
            e.who = Some(who.clone());
        }
    }
}

#[cfg(test)]
mod attribution {
    use super::*;

    fn ev(kind: EventKind, node: &str, at: Epoch, who: &str) -> Event {
        Event {
            cluster: "c".into(),
            at,
            kind,
            subject_kind: SubjectKind::Node,
            subject: node.into(),
            node: Some(node.into()),
            job: None,
            team: None,
            what: String::new(),
            who: Some(who.into()),
            gpus: 0,
            dedupe: format!("{node}{at}"),
        }
    }

    #[test]
    fn a_state_change_an_audited_action_caused_is_the_operators() {
        let mut v = vec![
            ev(EventKind::NodeState, "gpu-004", 100, "root"),
            ev(EventKind::Action, "gpu-004", 102, "alice"),
            // Another node, or long after: the scheduler's account stays.
            ev(EventKind::NodeState, "gpu-005", 100, "root"),
            ev(EventKind::NodeState, "gpu-004", 400, "bob"),
        ];
        attribute_to_operators(&mut v);
        let who: Vec<&str> = v.iter().map(|e| e.who.as_deref().unwrap()).collect();
        assert_eq!(who, ["alice", "alice", "root", "bob"]);
    }
}
