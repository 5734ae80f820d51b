use super::{Epoch, JobId, Text};

/// Link errors of a GPU in the recent window (dcgm-exporter counters' increase; 0 = none).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
pub struct LinkErrors {
    /// NVLink CRC errors (flit + data).
    pub nvlink_crc: u32,
    /// NVLink replays.
    pub nvlink_replay: u32,
    /// PCIe replays.
    pub pcie_replay: u32,
}

impl LinkErrors {
    pub fn any(&self) -> bool {
        *self != Self::default()
    }
}

/// Error-correcting-code counters (volatile, since the last driver load).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
pub struct EccCounts {
    /// Single-bit, corrected.
    pub sbe: u32,
    /// Double-bit, uncorrectable.
    pub dbe: u32,
}

/// The most recent XID error a GPU reported.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
pub struct XidEvent {
    pub code: u16,
    pub at: Epoch,
    /// XIDs seen in the current window.
    pub count: u32,
}

/// One Multi-Instance GPU slice.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct MigSlice {
    /// Profile, e.g. `1g.10gb`.
    pub profile: Text,
    pub job: Option<JobId>,
}

/// A process running on a GPU and who owns it (Kubernetes pod, Slurm job/step, or the cgroup).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct GpuProc {
    /// The GPU's index on its node.
    pub gpu: u8,
    pub pid: u32,
    pub user: Option<Text>,
    pub command: Option<Text>,
    pub mem_mib: Option<u64>,
    /// `pod 1b2c3d4e`, `slurm 4242.0`, a cgroup name, or `-`.
    pub owner: Text,
    /// The owning pod's UID, resolved to `namespace/name` when the Kubernetes backend knows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<Text>,
}

/// The throttle reasons set in `bits` (NVML's `nvmlClocksEventReason*` names, short).
pub fn throttle_names(bits: u64) -> Vec<&'static str> {
    const NAMES: [(u64, &str); 9] = [
        (0x1, "gpu_idle"),
        (0x2, "app_clocks"),
        (0x4, "sw_power_cap"),
        (0x8, "hw_slowdown"),
        (0x10, "sync_boost"),
        (0x20, "sw_thermal"),
        (0x40, "hw_thermal"),
        (0x80, "hw_power_brake"),
        (0x100, "display_clocks"),
    ];
    NAMES.iter().filter(|(b, _)| bits & b != 0).map(|(_, n)| *n).collect()
}

/// What only the local NVML source reads about a GPU (the detail pane's "local" rows).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
pub struct GpuLocal {
    pub index: u8,
    pub clock_sm_mhz: Option<u32>,
    pub clock_mem_mhz: Option<u32>,
    /// Raw clock event (throttle) reason bits; see [`throttle_names`].
    pub throttle: Option<u64>,
    /// Memory controller, encoder and decoder utilisation, percent.
    pub mem_util: Option<u8>,
    pub enc_util: Option<u8>,
    pub dec_util: Option<u8>,
    /// Row remapping (Ampere and newer): remapped rows for correctable and uncorrectable
    /// errors, a remap waiting for a GPU reset, a failed remap.
    pub remap_correctable: Option<u64>,
    pub remap_uncorrectable: Option<u64>,
    pub remap_pending: bool,
    pub remap_failure: bool,
    /// Retired pages (before Ampere): single-bit, double-bit.
    pub retired_sbe: Option<u32>,
    pub retired_dbe: Option<u32>,
    pub mig_enabled: Option<bool>,
    /// NVLinks up, and links that exist.
    pub nvlinks_active: u8,
    pub nvlinks: u8,
}

/// A GPU. Telemetry fields are `None` when no source reports them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Gpu {
    pub index: u8,
    pub uuid: Text,
    pub model: Text,
    pub mem_total_mib: u32,
    pub mem_used_mib: Option<u32>,
    /// Percent, 0–100.
    pub util: Option<u8>,
    /// Tensor-core activity, percent.
    pub tensor_active: Option<u8>,
    pub temp_c: Option<u8>,
    pub power_w: Option<u16>,
    pub power_limit_w: u16,
    pub ecc: EccCounts,
    /// When the double-bit count reached its value, as the source dates it (Prometheus: the
    /// first sample of the count's newest run); `None` when the source does not say.
    #[serde(skip)]
    pub ecc_at: Option<Epoch>,
    /// NVLink and PCIe errors in the recent window.
    pub links: LinkErrors,
    pub xid: Option<XidEvent>,
    pub mig: Vec<MigSlice>,
    /// The job that holds this GPU.
    pub job: Option<JobId>,
    /// Processes on the GPU (local NVML only).
    pub processes: Vec<GpuProc>,
    /// Clocks, throttle reasons, engines, row remapping, NVLinks (local NVML only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<Box<GpuLocal>>,
    /// Since when an allocated GPU has been below the idle threshold (derived by the state).
    #[serde(skip)]
    pub idle_since: Option<Epoch>,
}

impl Gpu {
    pub fn mem_used_pct(&self) -> Option<u8> {
        let used = self.mem_used_mib?;
        if self.mem_total_mib == 0 {
            return None;
        }
        Some(((u64::from(used) * 100) / u64::from(self.mem_total_mib)).min(100) as u8)
    }

    /// A GPU that has failed in a way that makes it unusable.
    pub fn is_failed(&self) -> bool {
        self.ecc.dbe > 0 || self.xid.is_some_and(|x| super::xid_info(x.code).fatal)
    }
}
