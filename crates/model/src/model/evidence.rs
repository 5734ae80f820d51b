//! What a job's nodes were doing while its GPUs idled: storage throughput against its ceiling,
//! local disk and CPU saturation (a data loader that cannot keep up), InfiniBand port errors and
//! link downs. Measured by the Prometheus backend over the run (`backend::prom::evidence`);
//! every figure without data is `None` and is said as "no data", never as "fine".

use super::Epoch;

/// `[prometheus.evidence]`: the ceilings the findings compare against.
#[derive(
    Debug,
    Clone,
    PartialEq,
    serde::Serialize,
    serde::Deserialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(deny_unknown_fields, default)]
pub struct Ceilings {
    /// A node's shared-storage (network filesystem client) throughput ceiling, bytes/s.
    pub storage_bytes_s: f64,
    /// Busy fraction (0–1) of a node's busiest local disk that is its ceiling.
    pub disk_busy: f64,
    /// Busy fraction (0–1) of a node's CPUs that is saturation.
    pub cpu_busy: f64,
    /// A figure at or above this part of its ceiling counts as at the ceiling.
    pub near: f64,
    /// Time at the ceiling (s) below which nothing is said.
    pub min_s: i64,
    /// InfiniBand receive plus symbol errors over a run from which they are a finding.
    pub ib_errors: f64,
}

impl Default for Ceilings {
    fn default() -> Self {
        Ceilings {
            storage_bytes_s: 2.0e9,
            disk_busy: 0.9,
            cpu_busy: 0.9,
            near: 0.9,
            min_s: 300,
            ib_errors: 10.0,
        }
    }
}

/// One load figure of a node over a window, sampled every `step_s`.
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    serde::Serialize,
    serde::Deserialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
pub struct Load {
    pub mean: Option<f64>,
    pub peak: Option<f64>,
    /// Seconds at or above `near` × the ceiling (0 when measured and never there).
    pub at_ceiling_s: Option<i64>,
    /// The mean while at the ceiling.
    pub at_ceiling_mean: Option<f64>,
}

impl Load {
    pub fn measured(&self) -> bool {
        self.mean.is_some()
    }
}

/// One node over the window. Storage in bytes/s; disk and CPU as busy fractions (0–1);
/// InfiniBand as counts over the window, summed over the node's ports.
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    serde::Serialize,
    serde::Deserialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
pub struct NodeEvidence {
    pub node: String,
    pub storage: Load,
    pub disk: Load,
    pub cpu: Load,
    pub ib_errors_received: Option<f64>,
    pub ib_symbol_errors: Option<f64>,
    pub ib_link_downed: Option<f64>,
}

/// What a finding is about.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum EvidenceKind {
    Storage,
    Disk,
    Cpu,
    Infiniband,
}

impl EvidenceKind {
    pub fn label(self) -> &'static str {
        match self {
            EvidenceKind::Storage => "storage throughput",
            EvidenceKind::Disk => "local disk",
            EvidenceKind::Cpu => "CPU",
            EvidenceKind::Infiniband => "InfiniBand",
        }
    }
}

/// Something seen on a node that may explain idle GPUs, with its figure (`value`: bytes/s,
/// busy fraction or a count), the ceiling it is compared with and how long it lasted.
#[derive(
    Debug,
    Clone,
    PartialEq,
    serde::Serialize,
    serde::Deserialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
pub struct Finding {
    pub kind: EvidenceKind,
    pub node: String,
    pub value: f64,
    pub ceiling: Option<f64>,
    pub seconds: Option<i64>,
    pub text: String,
}

/// The evidence of one window on a set of nodes.
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    serde::Serialize,
    serde::Deserialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
pub struct Evidence {
    pub start: Epoch,
    pub end: Epoch,
    /// The sampling step of the figures, s.
    pub step_s: i64,
    pub ceilings: Ceilings,
    pub nodes: Vec<NodeEvidence>,
    pub findings: Vec<Finding>,
    /// What could not be measured: "no data for … on …".
    pub no_data: Vec<String>,
    /// Queries sent.
    pub queries: usize,
}
