use super::Text;

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum QueueKind {
    /// A Slurm partition.
    Partition,
    /// A Kueue ClusterQueue.
    ClusterQueue,
    /// A Kueue LocalQueue (namespaced, points at a ClusterQueue).
    LocalQueue,
}

impl QueueKind {
    pub fn label(self) -> &'static str {
        match self {
            Self::Partition => "partition",
            Self::ClusterQueue => "clusterqueue",
            Self::LocalQueue => "localqueue",
        }
    }
}

/// A queue as its scheduler describes it. Counts of pending/running jobs and wait times are
/// derived by the state from the jobs, so every backend gets them the same way.
#[derive(Debug, Clone, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Queue {
    /// The configured cluster it belongs to; empty in a single-cluster console.
    #[serde(skip_serializing_if = "Text::is_empty")]
    pub cluster: Text,
    pub name: Text,
    pub kind: QueueKind,
    /// For a LocalQueue: its ClusterQueue.
    pub parent: Option<Text>,
    /// Up/active, or why not.
    pub up: bool,
    pub nodes: u32,
    pub gpus: u32,
    pub max_time_s: Option<i64>,
}

/// A team's GPU quota (Kueue ClusterQueue nominal quota, ResourceQuota, Slurm GrpTRES).
#[derive(Debug, Clone, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Quota {
    /// The configured cluster it belongs to; empty in a single-cluster console.
    #[serde(skip_serializing_if = "Text::is_empty")]
    pub cluster: Text,
    pub team: Text,
    pub gpu_quota: u32,
    pub gpu_used: u32,
    /// GPUs in use beyond the nominal quota, lent by the cohort.
    pub borrowed: u32,
    /// How many of the nominal GPUs others may borrow.
    pub lendable: u32,
    /// GPUs requested by this team's pending jobs.
    pub gpu_pending: u32,
}

impl Quota {
    pub fn over_quota(&self) -> bool {
        self.gpu_used > self.gpu_quota
    }

    pub fn used_pct(&self) -> u32 {
        if self.gpu_quota == 0 {
            return if self.gpu_used > 0 { 999 } else { 0 };
        }
        self.gpu_used * 100 / self.gpu_quota
    }
}
