//! What people did about incidents, as plain records: acknowledgements (kept in the ack store
//! that consoles on one data dir share) and actions on a subject (read from the audit log).
//! The state derives each incident's lifecycle from these and from the scheduler's own view of
//! the node (`Node::reason`: who set a drain, when, why).

use super::Epoch;

/// An incident's identity across refreshes: what it is about (`gpu-004/gpu3`, `job 42`) and
/// the signal that raised it (`xid:79`, `ecc-dbe`, `port-down`, `alert:GpuHot`). Its title (with
/// counts that change) and its position in the list are not part of it.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
pub struct IncidentKey {
    pub subject: String,
    pub signal: String,
}

/// Someone said "I have this one".
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Ack {
    pub cluster: String,
    pub key: IncidentKey,
    pub by: String,
    pub at: Epoch,
    pub note: String,
    pub ticket: Option<String>,
}

/// A write that took a node out of (or back into) service, from the audit log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct ActionMark {
    /// The cluster the audit record names: a fleet's configured cluster name, or (one cluster)
    /// the scheduler's cluster name or the label the ops road records. A mark applies only to
    /// the node of its own cluster ([`Self::applies_to`]).
    pub cluster: String,
    /// The node it was sent to.
    pub target: String,
    /// `drain`, `cordon`, `resume`, `uncordon`.
    pub action: String,
    /// Who sent it (the backend identity, else the OS user).
    pub by: String,
    pub at: Epoch,
    pub ticket: Option<String>,
    pub reason: Option<String>,
}

impl ActionMark {
    /// Whether it was sent to the node `name` of the cluster `cluster` (as objects carry it:
    /// empty in a single-cluster console, whose audit records were chosen by cluster already).
    pub fn applies_to(&self, cluster: &str, name: &str) -> bool {
        self.target == name && (cluster.is_empty() || self.cluster == cluster)
    }

    /// Whether it takes the node out of service (drain, cordon), as opposed to returning it.
    pub fn takes_out(&self) -> bool {
        matches!(self.action.as_str(), "drain" | "cordon")
    }

    /// `drained`, `cordoned`, `resumed`, `uncordoned`.
    pub fn past(&self) -> String {
        match self.action.as_str() {
            "drain" => "drained".into(),
            "cordon" => "cordoned".into(),
            "resume" => "resumed".into(),
            "uncordon" => "uncordoned".into(),
            other => format!("{other} done"),
        }
    }
}

/// Everything the lifecycle is derived from besides the cluster itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Handling {
    pub acks: Vec<Ack>,
    /// Oldest first.
    pub actions: Vec<ActionMark>,
}
