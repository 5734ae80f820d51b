use super::{Epoch, JobId, Text};

/// Link errors of a GPU in the recent window (dcgm-exporter counters' increase; 0 = none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct EccCounts {
    /// Single-bit, corrected.
    pub sbe: u32,
    /// Double-bit, uncorrectable.
    pub dbe: u32,
}

/// The most recent XID error a GPU reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct XidEvent {
    pub code: u16,
    pub at: Epoch,
    /// XIDs seen in the current window.
    pub count: u32,
}

/// One Multi-Instance GPU slice.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MigSlice {
    /// Profile, e.g. `1g.10gb`.
    pub profile: Text,
    pub job: Option<JobId>,
}

/// A process running on a GPU and who owns it (Kubernetes pod, Slurm job/step, or the cgroup).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
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

/// A GPU. Telemetry fields are `None` when no source reports them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
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
    /// NVLink and PCIe errors in the recent window.
    pub links: LinkErrors,
    pub xid: Option<XidEvent>,
    pub mig: Vec<MigSlice>,
    /// The job that holds this GPU.
    pub job: Option<JobId>,
    /// Processes on the GPU (local NVML only).
    pub processes: Vec<GpuProc>,
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
