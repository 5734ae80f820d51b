//! The fixed set of PromQL queries: one per metric family for the whole cluster, aggregated
//! server-side to the labels gpuplane joins on (host, GPU index, port), so the answers stay
//! small. Families that are zero on a healthy fleet (XIDs, ECC, port error counters, flaps,
//! nearly-full local disks) are filtered server-side (`> 0`) and a missing series means zero.
//!
//! Per refresh: [`REFRESH`]`.len()` queries (20), whatever the cluster size. In
//! Prometheus-only mode, [`discovery`] adds one query at start and every few minutes; at start,
//! [`BACKFILL`] adds three `query_range`s.

use super::config::PromConfig;

/// One metric family, queried once per refresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Utilisation, with the allocation labels (pod/namespace, hpc_job).
    GpuUtil,
    TensorActive,
    GpuTemp,
    Power,
    FbUsed,
    /// Latest non-zero XID code.
    XidLast,
    /// XID codes seen in the window.
    XidCount,
    EccSbe,
    EccDbe,
    IbState,
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
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Self::GpuUtil => "gpu_util",
            Self::TensorActive => "tensor_active",
            Self::GpuTemp => "gpu_temp",
            Self::Power => "power",
            Self::FbUsed => "fb_used",
            Self::XidLast => "xid",
            Self::XidCount => "xid_count",
            Self::EccSbe => "ecc_sbe",
            Self::EccDbe => "ecc_dbe",
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
        }
    }

    /// Whether the family describes GPUs (dcgm-exporter) rather than node ports/filesystems.
    pub fn is_gpu(self) -> bool {
        matches!(
            self,
            Self::GpuUtil
                | Self::TensorActive
                | Self::GpuTemp
                | Self::Power
                | Self::FbUsed
                | Self::XidLast
                | Self::XidCount
                | Self::EccSbe
                | Self::EccDbe
        )
    }
}

/// Every refresh sends exactly these queries.
pub const REFRESH: &[Family] = &[
    Family::GpuUtil,
    Family::TensorActive,
    Family::GpuTemp,
    Family::Power,
    Family::FbUsed,
    Family::XidLast,
    Family::XidCount,
    Family::EccSbe,
    Family::EccDbe,
    Family::IbState,
    Family::IbRate,
    Family::IbSymbol,
    Family::IbRcvErrors,
    Family::IbXmitDiscards,
    Family::IbLinkDowned,
    Family::IbFlaps,
    Family::IbRx,
    Family::IbTx,
    Family::FsSize,
    Family::FsAvail,
];

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
    let sparse = |metric: &str| format!("max by ({p}) ({}) > 0", sel(c, metric, ""));
    match f {
        Family::GpuUtil => {
            format!("max by ({g}, {}, {}, {}) ({})", l.pod, l.namespace, l.hpc_job, sel(c, &m.gpu_util, ""))
        }
        Family::TensorActive => format!("round(100 * {})", gauge(&m.tensor_active)),
        Family::GpuTemp => gauge(&m.gpu_temp),
        Family::Power => format!("round({})", gauge(&m.power)),
        Family::FbUsed => gauge(&m.fb_used),
        Family::XidLast => format!("max by ({g}) ({} != 0)", sel(c, &m.xid, "")),
        Family::XidCount => {
            format!("count by ({g}) (max_over_time({}[{w}]) != 0)", sel(c, &m.xid, ""))
        }
        Family::EccSbe => format!("{} > 0", gauge(&m.ecc_sbe)),
        Family::EccDbe => format!("{} > 0", gauge(&m.ecc_dbe)),
        Family::IbState => format!("max by ({p}) ({})", sel(c, &m.ib_state, "")),
        Family::IbRate => format!("max by ({p}) ({})", sel(c, &m.ib_rate, "")),
        Family::IbSymbol => sparse(&m.ib_symbol_errors),
        Family::IbRcvErrors => sparse(&m.ib_rcv_errors),
        Family::IbXmitDiscards => sparse(&m.ib_xmit_discards),
        Family::IbLinkDowned => sparse(&m.ib_link_downed),
        Family::IbFlaps => {
            format!("round(max by ({p}) (increase({}[{w}]))) > 0", sel(c, &m.ib_link_downed, ""))
        }
        // Mbit/s, rounded: short numbers in the answer.
        Family::IbRx => format!("round(max by ({p}) (rate({}[{rw}])) * 8 / 1e6)", sel(c, &m.ib_rx_bytes, "")),
        Family::IbTx => format!("round(max by ({p}) (rate({}[{rw}])) * 8 / 1e6)", sel(c, &m.ib_tx_bytes, "")),
        Family::FsSize => fs(c, &m.fs_size),
        Family::FsAvail => fs(c, &m.fs_avail),
    }
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
    fn queries_are_cluster_wide_and_constant() {
        let c = PromConfig::new("http://x");
        assert_eq!(REFRESH.len(), 20);
        for f in REFRESH {
            let q = promql(&c, *f);
            assert!(!q.contains("Hostname=\""), "{q}");
        }
        assert_eq!(promql(&c, Family::GpuTemp), "max by (Hostname, hostname, gpu) (DCGM_FI_DEV_GPU_TEMP)");
        let mut c = c;
        c.selector = "cluster=\"a\"".into();
        assert_eq!(
            promql(&c, Family::EccDbe),
            "max by (Hostname, hostname, gpu) (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{cluster=\"a\"}) > 0"
        );
    }
}
