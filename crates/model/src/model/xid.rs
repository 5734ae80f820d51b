/// What an XID means and what an operator should do about it
/// (NVIDIA's XID catalog; the action column is gpuplane's recommendation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XidInfo {
    pub code: u16,
    pub name: &'static str,
    pub action: &'static str,
    /// The GPU is unusable until reset, reboot or repair.
    pub fatal: bool,
}

const TABLE: &[XidInfo] = &[
    x(13, "Graphics engine exception", "notify the job owner; drain if it repeats across jobs", false),
    x(31, "GPU memory page fault", "usually the application; diagnose if it recurs on this GPU", false),
    x(32, "Corrupted push buffer stream", "application or driver; watch", false),
    x(43, "GPU stopped processing", "informational; correlate with XID 13/31", false),
    x(45, "Preemptive cleanup after earlier errors", "look at the accompanying XIDs", false),
    x(46, "GPU timeout", "drain and reset the GPU", true),
    x(48, "Double-bit ECC error", "drain, reset the GPU; RMA if it repeats", true),
    x(61, "Micro-controller breakpoint", "reset the GPU; contact support on Ampere+", false),
    x(62, "Micro-controller halt", "drain, reset the GPU; RMA if recurrent", true),
    x(63, "ECC page retirement recorded", "no action now; schedule a reset to apply the remap", false),
    x(64, "ECC page retirement failed", "drain and reset; likely RMA", true),
    x(74, "NVLink error", "drain, run NVLink diagnostics, reset GPUs", true),
    x(79, "GPU has fallen off the bus", "drain now and power-cycle the node; RMA if it repeats", true),
    x(92, "High single-bit ECC rate", "trend it and plan maintenance", false),
    x(94, "Contained ECC error", "restart the affected job", false),
    x(95, "Uncontained ECC error", "drain, stop all work on the GPU, reset it", true),
    x(109, "Context switch timeout", "drain and reset the GPU", true),
    x(119, "GSP RPC timeout", "drain, reset the GPU; check the driver version", true),
    x(120, "GSP error", "drain, reset the GPU; check the driver version", true),
    x(140, "Unrecovered ECC error", "drain and reset the GPU", true),
    x(154, "GPU recovery action changed", "follow the recovery action the driver states", false),
];

const fn x(code: u16, name: &'static str, action: &'static str, fatal: bool) -> XidInfo {
    XidInfo { code, name, action, fatal }
}

pub fn xid_info(code: u16) -> XidInfo {
    TABLE.iter().copied().find(|i| i.code == code).unwrap_or(XidInfo {
        code,
        name: "Unlisted XID",
        action: "look it up in NVIDIA's XID catalog",
        fatal: false,
    })
}
