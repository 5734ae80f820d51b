//! `[prometheus]` in the config file, resolved with `--prometheus URL` / `PROMETHEUS_URL`.
//!
//! ```toml
//! [prometheus]
//! url = "https://prometheus.example:9090"      # or --prometheus URL, or PROMETHEUS_URL
//! bearer_token_file = "/run/secrets/prom"       # or bearer_token, or PROMETHEUS_BEARER_TOKEN
//! # username = "ops"; password_file = "…"       # basic auth instead
//! ca_file = "/etc/ssl/private-ca.pem"
//! refresh = "15s"                               # jittered ±10 %
//! timeout = "10s"
//! backfill = "15m"                              # history fetched with query_range at start
//! window = "1h"                                 # XID count and IB link-down (flap) window
//! selector = 'cluster="a"'                      # added to every series selector
//! disk_devices = 'nvme[0-9]+n[0-9]+|sd[a-z]+'   # physical disks: a node's local disk throughput
//! [prometheus.evidence]                         # what idle jobs' nodes are compared with
//! storage_bytes_s = 2.0e9                       # a node's shared-storage throughput ceiling
//! disk_busy = 0.9                               # busiest local disk's busy fraction
//! cpu_busy = 0.9                                # CPU busy fraction (data loader bound)
//! near = 0.9                                    # this part of a ceiling counts as at it
//! min_s = 300                                   # shorter stretches at a ceiling say nothing
//! ib_errors = 10                                # IB receive + symbol errors over the run
//! max_body = "256MiB"                           # an answer larger than this is refused
//! max_series = 500000                           # an answer with more series is refused
//! max_label = "64KiB"                           # an answer with a longer string is refused
//! [prometheus.headers]
//! X-Scope-OrgID = "team-a"                      # Mimir/Cortex/Thanos tenant
//! [prometheus.metrics]                          # override any metric name (keys: see MetricNames)
//! gpu_util = "DCGM_FI_DEV_GPU_UTIL"
//! [prometheus.labels]
//! gpu_host = ["Hostname", "hostname"]           # first present wins
//! node_host = ["instance"]
//! [prometheus.host_map]
//! strip_port = true                              # gpu-001:9100 -> gpu-001
//! strip_domain = true                            # gpu-001.cluster.local -> gpu-001
//! regex = '^(?:ip-)?(.*)$'                       # then the first capture group, if given,
//! replace = 'node-$1'                            # or this replacement of the match
//! names = { "10.0.0.7" = "gpu-007" }             # explicit renames win over everything
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Metric names; defaults match dcgm-exporter and node_exporter.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricNames {
    pub gpu_util: String,
    pub tensor_active: String,
    pub gpu_temp: String,
    pub power: String,
    pub fb_used: String,
    pub fb_free: String,
    /// Per-job efficiency (`report job`): DCGM profiling fields, read when they exist.
    pub sm_active: String,
    pub dram_active: String,
    /// Graphics/compute engine activity: on a MIG slice, its utilisation (relative to the slice).
    pub gr_engine_active: String,
    /// Energy since boot, mJ (a counter).
    pub energy: String,
    pub xid: String,
    pub ecc_sbe: String,
    pub ecc_dbe: String,
    pub nvlink_crc_flit: String,
    pub nvlink_crc_data: String,
    pub nvlink_replay: String,
    /// NVLink throughput of a GPU, all links, MB/s. dcgm-exporter's CSV calls field 449 a
    /// counter, but DCGM reports a rate (tools that take its `rate()` see blanks).
    pub nvlink_bw: String,
    pub pcie_replay: String,
    pub ib_state: String,
    pub ib_rate: String,
    pub ib_symbol_errors: String,
    pub ib_rcv_errors: String,
    pub ib_xmit_discards: String,
    pub ib_link_downed: String,
    pub ib_rx_bytes: String,
    pub ib_tx_bytes: String,
    pub fs_size: String,
    pub fs_avail: String,
    pub disk_read: String,
    pub disk_written: String,
    /// NFS client bytes per mount (node_exporter's mountstats collector, label `export`).
    pub nfs_read: String,
    pub nfs_written: String,
    /// Seconds a block device was busy (its rate: the busy fraction), for job evidence.
    pub disk_io_time: String,
    /// CPU seconds by `mode` (the `idle` rate: the idle fraction), for job evidence.
    pub cpu_seconds: String,
}

impl Default for MetricNames {
    fn default() -> Self {
        let s = |v: &str| v.to_string();
        Self {
            gpu_util: s("DCGM_FI_DEV_GPU_UTIL"),
            tensor_active: s("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"),
            gpu_temp: s("DCGM_FI_DEV_GPU_TEMP"),
            power: s("DCGM_FI_DEV_POWER_USAGE"),
            fb_used: s("DCGM_FI_DEV_FB_USED"),
            fb_free: s("DCGM_FI_DEV_FB_FREE"),
            sm_active: s("DCGM_FI_PROF_SM_ACTIVE"),
            dram_active: s("DCGM_FI_PROF_DRAM_ACTIVE"),
            gr_engine_active: s("DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
            energy: s("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"),
            xid: s("DCGM_FI_DEV_XID_ERRORS"),
            ecc_sbe: s("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"),
            ecc_dbe: s("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"),
            nvlink_crc_flit: s("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"),
            nvlink_crc_data: s("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"),
            nvlink_replay: s("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"),
            nvlink_bw: s("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"),
            pcie_replay: s("DCGM_FI_DEV_PCIE_REPLAY_COUNTER"),
            ib_state: s("node_infiniband_state_id"),
            ib_rate: s("node_infiniband_rate_bytes_per_second"),
            ib_symbol_errors: s("node_infiniband_symbol_error_total"),
            ib_rcv_errors: s("node_infiniband_port_errors_received_total"),
            ib_xmit_discards: s("node_infiniband_port_discards_transmitted_total"),
            ib_link_downed: s("node_infiniband_link_downed_total"),
            ib_rx_bytes: s("node_infiniband_port_data_received_bytes_total"),
            ib_tx_bytes: s("node_infiniband_port_data_transmitted_bytes_total"),
            fs_size: s("node_filesystem_size_bytes"),
            fs_avail: s("node_filesystem_avail_bytes"),
            disk_read: s("node_disk_read_bytes_total"),
            disk_written: s("node_disk_written_bytes_total"),
            nfs_read: s("node_mountstats_nfs_total_read_bytes_total"),
            nfs_written: s("node_mountstats_nfs_total_write_bytes_total"),
            disk_io_time: s("node_disk_io_time_seconds_total"),
            cpu_seconds: s("node_cpu_seconds_total"),
        }
    }
}

/// Label names; defaults match dcgm-exporter (both `Hostname` and the newer `hostname`) and
/// node_exporter (`instance`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LabelNames {
    /// Node of a GPU series: the first of these that is present.
    pub gpu_host: Vec<String>,
    /// Node of a node_exporter series.
    pub node_host: Vec<String>,
    pub gpu: String,
    pub uuid: Vec<String>,
    pub model: Vec<String>,
    /// Node pool/partition, when the series carry one (e.g. a relabelled `pool`).
    pub pool: Option<String>,
    /// Kubernetes allocation (dcgm-exporter `--kubernetes`).
    pub pod: String,
    pub namespace: String,
    /// Slurm allocation (dcgm-exporter `--hpc-job-mapping-dir`).
    pub hpc_job: String,
    /// A MIG slice's GPU instance id and profile (dcgm-exporter: `GPU_I_ID`, `GPU_I_PROFILE`).
    pub mig_instance: String,
    pub mig_profile: String,
}

impl Default for LabelNames {
    fn default() -> Self {
        Self {
            gpu_host: vec!["Hostname".into(), "hostname".into()],
            node_host: vec!["instance".into()],
            gpu: "gpu".into(),
            uuid: vec!["UUID".into(), "uuid".into()],
            model: vec!["modelName".into(), "model_name".into()],
            pool: None,
            pod: "pod".into(),
            namespace: "namespace".into(),
            hpc_job: "hpc_job".into(),
            mig_instance: "GPU_I_ID".into(),
            mig_profile: "GPU_I_PROFILE".into(),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostMapSection {
    pub strip_port: Option<bool>,
    pub strip_domain: Option<bool>,
    pub regex: Option<String>,
    /// Replacement for the regex's match (`node-$1`); without it the first capture group is used.
    pub replace: Option<String>,
    pub names: BTreeMap<String, String>,
}

/// The `[prometheus]` section as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PromSection {
    pub url: Option<String>,
    pub bearer_token: Option<String>,
    pub bearer_token_file: Option<PathBuf>,
    pub username: Option<String>,
    pub password: Option<String>,
    pub password_file: Option<PathBuf>,
    pub headers: BTreeMap<String, String>,
    pub ca_file: Option<PathBuf>,
    pub refresh: Option<String>,
    pub timeout: Option<String>,
    pub backfill: Option<String>,
    pub window: Option<String>,
    pub rate_window: Option<String>,
    pub selector: Option<String>,
    /// Filesystem types that are shared (the storage plane), a regex.
    pub shared_fstypes: Option<String>,
    /// Node-local mounts listed when nearly full, a regex.
    pub local_mounts: Option<String>,
    pub local_full_pct: Option<u8>,
    /// Block devices whose throughput is a node's local disk throughput, a regex (physical
    /// disks; md/dm devices on top of them would count the same bytes twice).
    pub disk_devices: Option<String>,
    /// Limits on one answer: its size (`"256MiB"`), its series, its longest string.
    pub max_body: Option<String>,
    pub max_series: Option<usize>,
    pub max_label: Option<String>,
    pub metrics: MetricNames,
    pub labels: LabelNames,
    pub host_map: HostMapSection,
    /// `[prometheus.evidence]`: the ceilings of the evidence on idle jobs' nodes.
    pub evidence: crate::model::evidence::Ceilings,
}

/// How to authenticate. Secrets never reach logs: `Debug` prints `<redacted>`.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Auth {
    #[default]
    None,
    Bearer(String),
    Basic {
        username: String,
        password: Option<String>,
    },
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::None => f.write_str("None"),
            Auth::Bearer(_) => f.write_str("Bearer(<redacted>)"),
            Auth::Basic { username, .. } => write!(f, "Basic({username}, <redacted>)"),
        }
    }
}

/// Node-name mapping from a host label value.
#[derive(Debug, Clone)]
pub struct HostMap {
    pub strip_port: bool,
    pub strip_domain: bool,
    pub regex: Option<regex::Regex>,
    pub replace: Option<String>,
    pub names: BTreeMap<String, String>,
}

impl Default for HostMap {
    fn default() -> Self {
        Self { strip_port: true, strip_domain: true, regex: None, replace: None, names: BTreeMap::new() }
    }
}

impl HostMap {
    /// The node name for a host label value: explicit names, then `:port` and domain
    /// stripped, then the regex's first capture group.
    pub fn map<'h>(&self, host: &'h str) -> std::borrow::Cow<'h, str> {
        use std::borrow::Cow;
        if let Some(n) = self.names.get(host) {
            return Cow::Owned(n.clone());
        }
        let mut h = host;
        if self.strip_port
            && let Some((a, port)) = h.rsplit_once(':')
            && !port.is_empty()
            && port.bytes().all(|b| b.is_ascii_digit())
            && (!a.contains(':') || a.ends_with(']'))
        {
            h = a;
        }
        if self.strip_domain && !is_ip(h) {
            h = h.split('.').next().unwrap_or(h);
        }
        if let Some(re) = &self.regex {
            if let Some(r) = &self.replace {
                return Cow::Owned(re.replace(h, r.as_str()).into_owned());
            }
            if let Some(m) = re.captures(h).and_then(|c| c.get(1)) {
                return Cow::Owned(m.as_str().to_string());
            }
        }
        Cow::Borrowed(h)
    }
}

fn is_ip(h: &str) -> bool {
    h.parse::<std::net::IpAddr>().is_ok()
}

/// The resolved Prometheus configuration.
#[derive(Debug, Clone)]
pub struct PromConfig {
    pub url: String,
    pub auth: Auth,
    pub headers: Vec<(String, String)>,
    pub ca_file: Option<PathBuf>,
    pub refresh: Duration,
    pub timeout: Duration,
    pub backfill: Duration,
    pub window: Duration,
    pub rate_window: Duration,
    pub selector: String,
    pub shared_fstypes: String,
    pub local_mounts: String,
    pub local_full_pct: u8,
    pub disk_devices: String,
    pub metrics: MetricNames,
    pub labels: LabelNames,
    pub host_map: HostMap,
    /// The ceilings of the evidence seen on the nodes of jobs with idle GPUs.
    pub evidence: crate::model::evidence::Ceilings,
    /// No scheduler: nodes and GPUs come from the series (an Inventory before the deltas).
    pub discover_nodes: bool,
    /// Each refresh also reads the alerting rules' alerts (`/api/v1/alerts`): set where no
    /// Alertmanager is configured, so that Prometheus's alerts are still seen.
    pub alerts: bool,
    /// One answer is refused past this many bytes (default 256 MiB; a refresh at 10,000 nodes
    /// × 8 GPUs answers 16 MB in all)…
    pub max_body: u64,
    /// …or with more series than this (default 500,000: 80,000 per GPU query at that size)…
    pub max_series: usize,
    /// …or with a string (a label value) longer than this (default 64 KiB).
    pub max_label: usize,
}

/// The defaults of [`PromConfig::max_body`], [`max_series`](PromConfig::max_series) and
/// [`max_label`](PromConfig::max_label).
pub const DEFAULT_MAX_BODY: u64 = 256 * crate::backend::bounds::MIB;
pub const DEFAULT_MAX_SERIES: usize = 500_000;
pub const DEFAULT_MAX_LABEL: usize = 64 << 10;

impl PromConfig {
    /// Defaults for `url` (tests and benches start here).
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into().trim_end_matches('/').to_string(),
            auth: Auth::None,
            headers: Vec::new(),
            ca_file: None,
            refresh: Duration::from_secs(15),
            timeout: Duration::from_secs(10),
            backfill: Duration::from_secs(15 * 60),
            window: Duration::from_secs(3600),
            rate_window: Duration::from_secs(120),
            selector: String::new(),
            shared_fstypes: "lustre|nfs|nfs4|wekafs|gpfs|beegfs|cephfs|fuse.juicefs".into(),
            local_mounts: "/raid|/local|/scratch|/mnt/local.*".into(),
            local_full_pct: 80,
            disk_devices: "nvme[0-9]+n[0-9]+|sd[a-z]+|vd[a-z]+|xvd[a-z]+".into(),
            metrics: MetricNames::default(),
            labels: LabelNames::default(),
            host_map: HostMap::default(),
            evidence: Default::default(),
            discover_nodes: true,
            alerts: false,
            max_body: DEFAULT_MAX_BODY,
            max_series: DEFAULT_MAX_SERIES,
            max_label: DEFAULT_MAX_LABEL,
        }
    }

    /// Resolves the section with the flag/env URL (which wins). `None` when no URL is set.
    /// Problems come back as warnings naming the field.
    pub fn resolve(
        flag_url: Option<&str>,
        sec: Option<&PromSection>,
        warnings: &mut Vec<String>,
    ) -> Option<Self> {
        let default = PromSection::default();
        let sec = sec.unwrap_or(&default);
        let url = flag_url.map(str::to_string).or_else(|| sec.url.clone())?;
        let mut c = Self::new(url);
        let mut dur = |name: &str, v: &Option<String>, d: Duration| match v {
            Some(v) => humantime::parse_duration(v).unwrap_or_else(|e| {
                warnings.push(format!("config: prometheus.{name} = {v:?}: {e}"));
                d
            }),
            None => d,
        };
        c.refresh = dur("refresh", &sec.refresh, c.refresh).max(Duration::from_secs(1));
        c.timeout = dur("timeout", &sec.timeout, c.timeout).max(Duration::from_millis(100));
        c.backfill = dur("backfill", &sec.backfill, c.backfill);
        c.window = dur("window", &sec.window, c.window).max(Duration::from_secs(60));
        c.rate_window = dur("rate_window", &sec.rate_window, c.rate_window).max(Duration::from_secs(10));
        c.max_body = crate::backend::bounds::setting(
            "prometheus.max_body",
            sec.max_body.as_deref(),
            c.max_body,
            warnings,
        );
        c.max_label = crate::backend::bounds::setting(
            "prometheus.max_label",
            sec.max_label.as_deref(),
            c.max_label as u64,
            warnings,
        ) as usize;
        c.max_series = sec.max_series.filter(|n| *n > 0).unwrap_or(c.max_series);
        let read_secret =
            |what: &str, p: &PathBuf, warnings: &mut Vec<String>| match std::fs::read_to_string(p) {
                Ok(s) => Some(s.trim().to_string()),
                Err(e) => {
                    warnings.push(format!("config: prometheus.{what} {}: {e}", p.display()));
                    None
                }
            };
        let token = sec
            .bearer_token
            .clone()
            .or_else(|| {
                sec.bearer_token_file.as_ref().and_then(|p| read_secret("bearer_token_file", p, warnings))
            })
            .or_else(|| std::env::var("PROMETHEUS_BEARER_TOKEN").ok().filter(|t| !t.is_empty()));
        c.auth = match (token, &sec.username) {
            (Some(t), _) => Auth::Bearer(t),
            (None, Some(u)) => Auth::Basic {
                username: u.clone(),
                password: sec.password.clone().or_else(|| {
                    sec.password_file.as_ref().and_then(|p| read_secret("password_file", p, warnings))
                }),
            },
            (None, None) => Auth::None,
        };
        c.headers = sec.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        c.ca_file = sec.ca_file.clone();
        if let Some(s) = &sec.selector {
            c.selector = s.trim().trim_start_matches('{').trim_end_matches('}').to_string();
        }
        if let Some(s) = &sec.shared_fstypes {
            c.shared_fstypes = s.clone();
        }
        if let Some(s) = &sec.local_mounts {
            c.local_mounts = s.clone();
        }
        if let Some(p) = sec.local_full_pct {
            c.local_full_pct = p.min(100);
        }
        if let Some(s) = &sec.disk_devices {
            c.disk_devices = s.clone();
        }
        c.metrics = sec.metrics.clone();
        c.labels = sec.labels.clone();
        c.evidence = sec.evidence.clone();
        let hm = &sec.host_map;
        c.host_map = HostMap {
            strip_port: hm.strip_port.unwrap_or(true),
            strip_domain: hm.strip_domain.unwrap_or(true),
            regex: hm.regex.as_deref().and_then(|r| {
                regex::Regex::new(r)
                    .map_err(|e| warnings.push(format!("config: prometheus.host_map.regex: {e}")))
                    .ok()
            }),
            replace: hm.replace.clone(),
            names: hm.names.clone(),
        };
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_map_to_node_names() {
        let mut m = HostMap::default();
        assert_eq!(m.map("gpu-010:9100"), "gpu-010");
        assert_eq!(m.map("gpu-010.cluster.local:9100"), "gpu-010");
        assert_eq!(m.map("10.0.0.7:9100"), "10.0.0.7");
        assert_eq!(m.map("[fe80::1]:9100"), "[fe80::1]");
        m.regex = Some(regex::Regex::new("^ip-(.*)$").unwrap());
        assert_eq!(m.map("ip-gpu-1.ec2.internal"), "gpu-1");
        m.replace = Some("node-$1".into());
        assert_eq!(m.map("ip-7"), "node-7");
        m.names.insert("odd".into(), "node7".into());
        assert_eq!(m.map("odd"), "node7");
    }

    #[test]
    fn secrets_are_not_printed() {
        let a = Auth::Bearer("s3cret".into());
        assert!(!format!("{a:?}").contains("s3cret"));
        let b = Auth::Basic { username: "u".into(), password: Some("pw".into()) };
        assert!(!format!("{b:?}").contains("pw"));
    }
}
