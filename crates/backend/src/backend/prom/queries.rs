//! The PromQL the backend sends: a fixed set of families for the whole cluster, aggregated
//! server-side to the labels gpuplane joins on (host, GPU index, port), so the answers stay
//! small whatever the cluster size.
//!
//! What a refresh carries is cut to what the console needs on a mostly healthy fleet:
//! * the five dense per-GPU gauges (utilisation, tensor activity, temperature, power,
//!   framebuffer) travel as **one** series per GPU whose value packs the five small integers
//!   ([`Family::Gpu`], [`unpack`]): one label set instead of five;
//! * what is zero or normal on a healthy fleet is filtered server-side and a missing series
//!   means normal: XIDs, ECC, ports that are not Active, port error counters that grew in the
//!   window, link flaps, nearly-full local disks;
//! * what changes slowly or only feeds a table (allocation labels, port rate and list, port
//!   rx/tx) is read by a [`ROTATING`] slot, one family per refresh, so each is at most
//!   `ROTATING.len()` refreshes old.
//!
//! NVLink CRC/replay and PCIe replay errors are read the same way: the counters' increase in the
//! window, non-zero only.
//!
//! Per refresh: [`PER_REFRESH`] queries ([`EVERY`] plus one rotating family), whatever the
//! cluster size. The first refresh after start reads every rotating family at once
//! (`EVERY.len() + ROTATING.len()` queries). In Prometheus-only mode, [`discovery`] adds one
//! query at start and every few minutes; at start, [`BACKFILL`] adds three `query_range`s.

use super::config::PromConfig;

/// One metric family: one query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Utilisation with the allocation labels (pod/namespace, hpc_job): history backfill only.
    GpuUtil,
    /// Temperature alone: history backfill only.
    GpuTemp,
    /// Utilisation, tensor activity, temperature, power and framebuffer packed in one value.
    Gpu,
    /// Allocated GPUs with their allocation labels (a missing GPU is free).
    GpuAlloc,
    /// Latest non-zero XID code.
    XidLast,
    /// XID codes seen in the window.
    XidCount,
    EccSbe,
    EccDbe,
    /// NVLink CRC errors (flit + data) in the window, non-zero only.
    NvlinkCrc,
    /// NVLink replays in the window, non-zero only.
    NvlinkReplay,
    /// PCIe replays in the window, non-zero only.
    PcieReplay,
    /// Ports that are not Active (a missing port is Active).
    IbState,
    /// Every port with its rate: the port list.
    IbRate,
    IbSymbol,
    IbRcvErrors,
    IbXmitDiscards,
    IbLinkDowned,
    /// Link-down events in the window.
    IbFlaps,
    IbRx,
    IbTx,
    FsSize,
    FsAvail,
    /// Read throughput of what the storage list shows: NFS mounts (summed over clients, by
    /// export) and the local disks of nodes whose local filesystem is listed (nearly full).
    FsRead,
    FsWrite,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Self::GpuUtil => "gpu_util",
            Self::GpuTemp => "gpu_temp",
            Self::Gpu => "gpu",
            Self::GpuAlloc => "gpu_alloc",
            Self::XidLast => "xid",
            Self::XidCount => "xid_count",
            Self::EccSbe => "ecc_sbe",
            Self::EccDbe => "ecc_dbe",
            Self::NvlinkCrc => "nvlink_crc",
            Self::NvlinkReplay => "nvlink_replay",
            Self::PcieReplay => "pcie_replay",
            Self::IbState => "ib_state",
            Self::IbRate => "ib_rate",
            Self::IbSymbol => "ib_symbol_errors",
            Self::IbRcvErrors => "ib_rcv_errors",
            Self::IbXmitDiscards => "ib_xmit_discards",
            Self::IbLinkDowned => "ib_link_downed",
            Self::IbFlaps => "ib_flaps",
            Self::IbRx => "ib_rx",
            Self::IbTx => "ib_tx",
            Self::FsSize => "fs_size",
            Self::FsAvail => "fs_avail",
            Self::FsRead => "fs_read",
            Self::FsWrite => "fs_write",
        }
    }

    /// Whether the family describes GPUs (dcgm-exporter) rather than node ports/filesystems.
    pub fn is_gpu(self) -> bool {
        matches!(
            self,
            Self::GpuUtil
                | Self::GpuTemp
                | Self::Gpu
                | Self::GpuAlloc
                | Self::XidLast
                | Self::XidCount
                | Self::EccSbe
                | Self::EccDbe
                | Self::NvlinkCrc
                | Self::NvlinkReplay
                | Self::PcieReplay
        )
    }
}

/// Sent by every refresh.
pub const EVERY: &[Family] = &[
    Family::Gpu,
    Family::XidLast,
    Family::XidCount,
    Family::EccSbe,
    Family::EccDbe,
    Family::NvlinkCrc,
    Family::NvlinkReplay,
    Family::PcieReplay,
    Family::IbState,
    Family::IbSymbol,
    Family::IbRcvErrors,
    Family::IbXmitDiscards,
    Family::IbLinkDowned,
    Family::IbFlaps,
    Family::FsSize,
    Family::FsAvail,
    Family::FsRead,
    Family::FsWrite,
];

/// One of these per refresh, in turn: slow-changing or table-only data.
pub const ROTATING: &[Family] = &[Family::GpuAlloc, Family::IbRate, Family::IbRx, Family::IbTx];

/// Queries per refresh, whatever the cluster size.
pub const PER_REFRESH: usize = EVERY.len() + 1;

/// The families of refresh number `k` (0: the first after start, which reads every rotating
/// family once so the console starts complete).
pub fn schedule(k: u64) -> Vec<Family> {
    let mut v = EVERY.to_vec();
    if k == 0 {
        v.extend_from_slice(ROTATING);
    } else {
        v.push(ROTATING[((k - 1) % ROTATING.len() as u64) as usize]);
    }
    v
}

/// The packed per-GPU value of [`Family::Gpu`]: `(bits, missing)` of each field, lowest first.
/// 7 + 7 + 8 + 12 + 19 = 53 bits: every value is an integer a float holds exactly.
const PACK: [(u32, u64); 5] = [
    (7, 127),      // utilisation, %
    (7, 127),      // tensor activity, %
    (8, 255),      // temperature, °C
    (12, 4095),    // power, W
    (19, 524_287), // framebuffer used, MiB
];

/// The five fields of a [`Family::Gpu`] value: utilisation, tensor activity, temperature,
/// power, framebuffer used; `None` where the GPU did not report it. `None` for a value that is
/// not a packed integer.
pub fn unpack(v: f64) -> Option<[Option<u32>; 5]> {
    if !(v.is_finite() && (0.0..9_007_199_254_740_992.0).contains(&v) && v.fract() == 0.0) {
        return None;
    }
    let mut x = v as u64;
    let mut out = [None; 5];
    for (o, (bits, missing)) in out.iter_mut().zip(PACK) {
        let f = x & ((1 << bits) - 1);
        x >>= bits;
        *o = (f != missing).then_some(f as u32);
    }
    Some(out)
}

/// History fetched once at start with `query_range` and replayed as deltas.
pub const BACKFILL: &[Family] = &[Family::GpuUtil, Family::GpuTemp, Family::XidLast];

fn secs(d: std::time::Duration) -> String {
    format!("{}s", d.as_secs().max(1))
}

/// `metric{selector}` or `metric{selector,extra}`.
fn sel(c: &PromConfig, metric: &str, extra: &str) -> String {
    let parts: Vec<&str> = [c.selector.as_str(), extra].into_iter().filter(|s| !s.is_empty()).collect();
    if parts.is_empty() { metric.to_string() } else { format!("{metric}{{{}}}", parts.join(",")) }
}

fn gpu_by(c: &PromConfig) -> String {
    let mut v: Vec<&str> = c.labels.gpu_host.iter().map(String::as_str).collect();
    v.push(&c.labels.gpu);
    v.join(", ")
}

fn port_by(c: &PromConfig) -> String {
    let mut v: Vec<&str> = c.labels.node_host.iter().map(String::as_str).collect();
    v.extend(["device", "port"]);
    v.join(", ")
}

/// The PromQL of a family.
pub fn promql(c: &PromConfig, f: Family) -> String {
    let m = &c.metrics;
    let l = &c.labels;
    let g = gpu_by(c);
    let p = port_by(c);
    let w = secs(c.window);
    let rw = secs(c.rate_window);
    let gauge = |metric: &str| format!("max by ({g}) ({})", sel(c, metric, ""));
    // The counter's value, for the ports where it grew in the window.
    let growing = |metric: &str| {
        let s = sel(c, metric, "");
        format!("max by ({p}) ({s}) and on ({p}) (max by ({p}) (increase({s}[{w}])) > 0)")
    };
    match f {
        Family::GpuUtil => {
            format!("max by ({g}, {}, {}, {}) ({})", l.pod, l.namespace, l.hpc_job, sel(c, &m.gpu_util, ""))
        }
        Family::GpuTemp => gauge(&m.gpu_temp),
        Family::Gpu => packed(c),
        Family::GpuAlloc => format!(
            "max by ({g}, {pod}, {ns}, {job}) ({} or {})",
            sel(c, &m.gpu_util, &format!("{}!=\"\"", l.pod)),
            sel(c, &m.gpu_util, &format!("{}!=\"\"", l.hpc_job)),
            pod = l.pod,
            ns = l.namespace,
            job = l.hpc_job,
        ),
        Family::XidLast => format!("max by ({g}) ({} != 0)", sel(c, &m.xid, "")),
        Family::XidCount => {
            format!("count by ({g}) (max_over_time({}[{w}]) != 0)", sel(c, &m.xid, ""))
        }
        Family::EccSbe => format!("{} > 0", gauge(&m.ecc_sbe)),
        Family::EccDbe => format!("{} > 0", gauge(&m.ecc_dbe)),
        // Flit + data CRC errors; either alone where a GPU exports one of them.
        Family::NvlinkCrc => {
            let inc = |metric: &str| format!("sum by ({g}) (increase({}[{w}]))", sel(c, metric, ""));
            let (f, d) = (inc(&m.nvlink_crc_flit), inc(&m.nvlink_crc_data));
            format!("round(({f} + {d}) or {f} or {d}) > 0")
        }
        Family::NvlinkReplay => {
            format!("round(max by ({g}) (increase({}[{w}]))) > 0", sel(c, &m.nvlink_replay, ""))
        }
        Family::PcieReplay => {
            format!("round(max by ({g}) (increase({}[{w}]))) > 0", sel(c, &m.pcie_replay, ""))
        }
        // 4 Active, 5 ActDefer.
        Family::IbState => format!("max by ({p}) ({}) != 4 != 5", sel(c, &m.ib_state, "")),
        Family::IbRate => format!("max by ({p}) ({})", sel(c, &m.ib_rate, "")),
        Family::IbSymbol => growing(&m.ib_symbol_errors),
        Family::IbRcvErrors => growing(&m.ib_rcv_errors),
        Family::IbXmitDiscards => growing(&m.ib_xmit_discards),
        Family::IbLinkDowned => growing(&m.ib_link_downed),
        Family::IbFlaps => {
            format!("round(max by ({p}) (increase({}[{w}]))) > 0", sel(c, &m.ib_link_downed, ""))
        }
        // Mbit/s, rounded: short numbers in the answer.
        Family::IbRx => format!("round(max by ({p}) (rate({}[{rw}])) * 8 / 1e6)", sel(c, &m.ib_rx_bytes, "")),
        Family::IbTx => format!("round(max by ({p}) (rate({}[{rw}])) * 8 / 1e6)", sel(c, &m.ib_tx_bytes, "")),
        Family::FsSize => fs(c, &m.fs_size),
        Family::FsAvail => fs(c, &m.fs_avail),
        Family::FsRead => fs_io(c, &m.nfs_read, &m.disk_read),
        Family::FsWrite => fs_io(c, &m.nfs_written, &m.disk_written),
    }
}

/// [`Family::Gpu`]: one series per GPU (every GPU with a utilisation or temperature), its
/// value `util + 2^7 tensor + 2^14 temp + 2^22 power + 2^34 fb`, each field clamped to its
/// width and set to all ones where the GPU does not report it (see [`unpack`]). A NaN or
/// dcgm-exporter's missing-sensor sentinel counts as not reported.
fn packed(c: &PromConfig) -> String {
    let m = &c.metrics;
    let g = gpu_by(c);
    let agg = |metric: &str| format!("max by ({g}) ({})", sel(c, metric, ""));
    let base = format!("({} or {}) * 0", agg(&m.gpu_util), agg(&m.gpu_temp));
    let fields = [
        format!("round({})", agg(&m.gpu_util)),
        format!("round(100 * {})", agg(&m.tensor_active)),
        format!("round({} < 1000)", agg(&m.gpu_temp)),
        format!("round({})", agg(&m.power)),
        format!("round({})", agg(&m.fb_used)),
    ];
    let mut shift = 0;
    let mut terms = Vec::new();
    for ((bits, missing), field) in PACK.iter().zip(fields) {
        // `>= 0` drops NaN, which then falls back to "missing".
        let v = format!("(clamp({field}, 0, {}) >= 0 or {base} + {missing})", missing - 1);
        terms.push(if shift == 0 { v } else { format!("{} * {v}", 1u64 << shift) });
        shift += bits;
    }
    terms.join(" + ")
}

/// Shared filesystems once per mount (every node reports the same), plus node-local mounts
/// only while they are nearly full.
fn fs(c: &PromConfig, metric: &str) -> String {
    let m = &c.metrics;
    let hosts = c.labels.node_host.join(", ");
    let shared = format!("fstype=~\"{}\"", c.shared_fstypes);
    let local = format!("mountpoint=~\"{}\",fstype!~\"{}\"", c.local_mounts, c.shared_fstypes);
    let ratio = 1.0 - f64::from(c.local_full_pct) / 100.0;
    format!(
        "max by (mountpoint, fstype, device) ({shared_sel}) or max by ({hosts}, mountpoint, fstype, device) ({local_sel} and on ({hosts}, mountpoint) ({avail} / {size} < {ratio}))",
        shared_sel = sel(c, metric, &shared),
        local_sel = sel(c, metric, &local),
        avail = sel(c, &m.fs_avail, &local),
        size = sel(c, &m.fs_size, &local),
    )
}

/// Bytes/s for the storage list: NFS client throughput summed by export, and the disk
/// throughput of nodes whose local filesystem is listed (the same nearly-full test as [`fs`]),
/// physical disks only ([`PromConfig::disk_devices`]). A few series, whatever the size.
fn fs_io(c: &PromConfig, nfs: &str, disk: &str) -> String {
    let m = &c.metrics;
    let hosts = c.labels.node_host.join(", ");
    let w = secs(c.rate_window);
    let local = format!("mountpoint=~\"{}\",fstype!~\"{}\"", c.local_mounts, c.shared_fstypes);
    let ratio = 1.0 - f64::from(c.local_full_pct) / 100.0;
    format!(
        "sum by (export) (rate({nfs_sel}[{w}])) or sum by ({hosts}) (rate({disk_sel}[{w}]) and on ({hosts}) ({avail} / {size} < {ratio}))",
        nfs_sel = sel(c, nfs, ""),
        disk_sel = sel(c, disk, &format!("device=~\"{}\"", c.disk_devices)),
        avail = sel(c, &m.fs_avail, &local),
        size = sel(c, &m.fs_size, &local),
    )
}

/// Discovery (Prometheus-only): every GPU with its UUID, model and memory.
pub fn discovery(c: &PromConfig) -> String {
    let l = &c.labels;
    let mut by: Vec<&str> = l.gpu_host.iter().map(String::as_str).collect();
    by.push(&l.gpu);
    by.extend(l.uuid.iter().map(String::as_str));
    by.extend(l.model.iter().map(String::as_str));
    by.push("DCGM_FI_DRIVER_VERSION");
    if let Some(p) = &l.pool {
        by.push(p);
    }
    format!(
        "max by ({}) ({} + {})",
        by.join(", "),
        sel(c, &c.metrics.fb_used, ""),
        sel(c, &c.metrics.fb_free, "")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_throughput_asks_for_exports_and_listed_local_disks() {
        let c = PromConfig::new("http://x");
        let q = promql(&c, Family::FsWrite);
        assert!(
            q.starts_with("sum by (export) (rate(node_mountstats_nfs_total_write_bytes_total[120s])) or "),
            "{q}"
        );
        assert!(
            q.contains(r#"rate(node_disk_written_bytes_total{device=~"nvme[0-9]+n[0-9]+|sd[a-z]+|vd[a-z]+|xvd[a-z]+"}[120s]) and on (instance)"#),
            "{q}"
        );
        assert!(q.ends_with("< 0.19999999999999996))"), "the nearly-full test of the storage list: {q}");
        assert!(EVERY.contains(&Family::FsRead) && EVERY.contains(&Family::FsWrite));
    }

    #[test]
    fn queries_are_cluster_wide_and_constant() {
        let c = PromConfig::new("http://x");
        assert_eq!(PER_REFRESH, 19);
        for k in 0..10 {
            let n = if k == 0 { EVERY.len() + ROTATING.len() } else { PER_REFRESH };
            assert_eq!(schedule(k).len(), n);
        }
        for f in schedule(0) {
            let q = promql(&c, f);
            assert!(!q.contains("Hostname=\""), "{q}");
        }
        assert_eq!(promql(&c, Family::GpuTemp), "max by (Hostname, hostname, gpu) (DCGM_FI_DEV_GPU_TEMP)");
        let gpu = promql(&c, Family::Gpu);
        assert!(gpu.starts_with("(clamp(round(max by (Hostname, hostname, gpu) (DCGM_FI_DEV_GPU_UTIL)), 0, 126) >= 0 or (max by"), "{gpu}");
        assert!(gpu.contains(" + 17179869184 * (clamp(round(max by (Hostname, hostname, gpu) (DCGM_FI_DEV_FB_USED)), 0, 524286) >= 0 or "), "{gpu}");
        assert_eq!(
            promql(&c, Family::IbState),
            "max by (instance, device, port) (node_infiniband_state_id) != 4 != 5"
        );
        let mut c = c;
        c.selector = "cluster=\"a\"".into();
        assert_eq!(
            promql(&c, Family::EccDbe),
            "max by (Hostname, hostname, gpu) (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{cluster=\"a\"}) > 0"
        );
    }

    #[test]
    fn packed_gpu_values_unpack_exactly() {
        let v = |f: [u64; 5]| (f[0] | f[1] << 7 | f[2] << 14 | f[3] << 22 | f[4] << 34) as f64;
        assert_eq!(
            unpack(v([97, 40, 88, 650, 81_000])),
            Some([Some(97), Some(40), Some(88), Some(650), Some(81_000)])
        );
        // Every field at its widest, and every field missing.
        assert_eq!(
            unpack(v([126, 126, 254, 4094, 524_286])),
            Some([Some(126), Some(126), Some(254), Some(4094), Some(524_286)])
        );
        assert_eq!(unpack(v([127, 127, 255, 4095, 524_287])), Some([None; 5]));
        assert_eq!(unpack(v([0, 127, 70, 4095, 0])), Some([Some(0), None, Some(70), None, Some(0)]));
        for bad in [f64::NAN, f64::INFINITY, -1.0, 1.5, 9_007_199_254_740_992.0, 1e300] {
            assert_eq!(unpack(bad), None, "{bad}");
        }
    }
}
