//! Identity keys: what a row, a mark, a selection, a detail pane or an action target refers to.
//! A key names an object by what it is (its cluster, kind and id), never by its position in a
//! list, so it still means the same object after a relist, a removal or a re-sort.

use super::{JobId, Text};

/// A node of one cluster (a scheduler's node name).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
pub struct NodeKey {
    pub cluster: Text,
    pub name: Text,
}

/// A job of one cluster.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
pub struct JobKey {
    pub cluster: Text,
    pub id: JobId,
}

/// A GPU: its node and its index there (the driver's minor number, not a list position).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
pub struct GpuKey {
    pub node: NodeKey,
    pub index: u8,
}

/// Any object a table row can stand for.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
pub enum ObjKey {
    Node(NodeKey),
    Gpu(GpuKey),
    Job(JobKey),
    /// A fabric port: its node and the port's name (`mlx5_0/1`).
    Port(NodeKey, Text),
    Filesystem(Text),
    Queue(Text),
    Quota(Text),
    /// A team (or account) in the cost report, or across the fleet.
    Team(Text),
    /// A person across the fleet (each cluster's user names mapped to one).
    Person(Text),
    /// An incident: its cluster (as the incident carries it: a fleet cluster's name, empty for
    /// one cluster), subject and signal (`gpu-004/gpu3`, `xid:79`), which identify it while it
    /// lasts and after it resolves (its title carries counts that change). Two clusters'
    /// `gpu-004/gpu3` are two incidents.
    Incident(Text, Text, String),
    /// An audit record, by its sequence number.
    Audit(u64),
    /// A data source, by its name (`slurm`, `prom`).
    Source(Text),
    /// An alert, by its fingerprint.
    Alert(Text),
    /// A silence, by its id.
    Silence(Text),
    /// A timeline event, by its cluster, dedupe key and time (`model::timeline::Event::id`).
    Event(String),
}

impl ObjKey {
    /// The node this object is, or is on.
    pub fn node(&self) -> Option<&NodeKey> {
        match self {
            ObjKey::Node(n) | ObjKey::Port(n, _) => Some(n),
            ObjKey::Gpu(g) => Some(&g.node),
            _ => None,
        }
    }

    /// The job this object is.
    pub fn job(&self) -> Option<JobId> {
        match self {
            ObjKey::Job(j) => Some(j.id),
            _ => None,
        }
    }
}
