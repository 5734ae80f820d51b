//! What the console knows of NCCL acceptance runs per node: the latest verdict, its busbw
//! history and drift. The acceptance layer computes these from its run store and sends them
//! as [`Update::Acceptance`](super::protocol::Update::Acceptance), like every other source.

use serde::{Deserialize, Serialize};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Degraded,
    Fail,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Degraded => "degraded",
            Verdict::Fail => "fail",
        }
    }
}

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum DriftKind {
    Driver,
    Cuda,
    Nccl,
    Image,
    /// busbw fell against the node's own history.
    Busbw,
}

impl DriftKind {
    pub fn label(self) -> &'static str {
        match self {
            DriftKind::Driver => "driver",
            DriftKind::Cuda => "cuda",
            DriftKind::Nccl => "nccl",
            DriftKind::Image => "image",
            DriftKind::Busbw => "busbw",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Drift {
    pub node: String,
    pub kind: DriftKind,
    pub found: String,
    pub expected: String,
}

/// What the console shows per node.
#[derive(Debug, Clone, PartialEq, Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct NodeAcceptance {
    pub node: String,
    pub last_run: String,
    pub last_verdict: Option<Verdict>,
    pub last_busbw: Option<f64>,
    pub last_at: i64,
    /// The baseline the latest run was judged against, its busbw as a percentage of it, and
    /// the one-line why.
    pub last_baseline: Option<f64>,
    pub last_pct: Option<f64>,
    pub last_why: String,
    /// busbw of the node's runs of its latest shape, oldest first.
    pub history: Vec<f64>,
    pub drift: Vec<Drift>,
}
