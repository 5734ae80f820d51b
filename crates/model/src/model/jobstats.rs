//! A job's telemetry over its run, as the Prometheus backend measures it (jobstats' figures
//! per GPU or MIG slice) and the evidence on its nodes: the domain types of job efficiency,
//! which the ledger keeps as a job's summary and `report job` and the Cost view read.

use super::evidence::Evidence;
use super::{Epoch, Text};

/// Framebuffer use up to this (MiB) is no process: a CUDA context alone takes more.
pub const NO_PROCESS_MIB: f64 = 300.0;

/// Which job, when, and where it ran.
#[derive(Debug, Clone, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct JobSelect {
    pub id: u64,
    pub start: Epoch,
    pub end: Epoch,
    /// The GPUs it held (node, index), when known: the placement fallback.
    pub gpus: Vec<(Text, u8)>,
    /// Utilisation below this (%) is idle.
    pub idle_below: f64,
}

/// One GPU (or MIG slice) of a job over its run. Percentages are 0–100.
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
pub struct GpuTelemetry {
    pub node: String,
    pub gpu: String,
    /// The MIG slice: GPU instance id and profile (`1g.10gb`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mig_instance: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mig_profile: Option<String>,
    /// Mean utilisation over the run.
    pub util: Option<f64>,
    /// The field `util` comes from.
    pub util_field: String,
    pub util_peak: Option<f64>,
    pub sm_active: Option<f64>,
    pub tensor_active: Option<f64>,
    pub dram_active: Option<f64>,
    pub mem_peak_mib: Option<f64>,
    pub mem_total_mib: Option<f64>,
    pub power_mean_w: Option<f64>,
    pub power_peak_w: Option<f64>,
    pub energy_kwh: Option<f64>,
    /// `counter` (the energy counter's increase) or `power` (mean power × run time).
    pub energy_from: Option<String>,
    /// The longest run of consecutive idle steps, s.
    pub idle_longest_s: Option<i64>,
    /// No utilisation above idle at any sample and framebuffer use never above
    /// [`NO_PROCESS_MIB`]: `None` when either series is missing.
    pub never_ran: Option<bool>,
}

/// What Prometheus says of a job's GPUs over its run.
#[derive(
    Debug, Clone, Default, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
pub struct JobTelemetry {
    /// How the GPUs were selected: `label hpc_job="…"` or `placement`.
    pub selected_by: String,
    pub start: Epoch,
    pub end: Epoch,
    /// The idle-stretch query's step, s.
    pub step_s: i64,
    pub gpus: Vec<GpuTelemetry>,
    /// Queries sent.
    pub queries: usize,
}

/// The Prometheus backend's answer for one job's summary ([`super::protocol::Update::JobFigures`]):
/// its GPUs' telemetry and, when the asker judged its GPUs idle, the evidence on its nodes.
#[derive(Debug, Clone, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct JobFigures {
    pub job: u64,
    /// `Ok(None)`: Prometheus has no series of the job for its run; `Err`: the query failed.
    pub telemetry: Result<Option<JobTelemetry>, String>,
    /// `None`: not asked (its GPUs were busy, or the telemetry failed); `Ok(None)`: the nodes
    /// cannot be selected by name.
    pub evidence: Option<Result<Option<Evidence>, String>>,
}
