//! Incidents: what is broken or burning money right now, worst first.

use super::ClusterState;
use super::fleet::Flags;
use crate::model::alert::Alert;
use crate::model::{Epoch, JobId, Node, PortState, Text, xid_info};
use std::collections::BTreeMap;

pub use super::lifecycle::Lifecycle;

/// NVLink CRC + replay errors in the window that make an incident (a healthy link has none).
pub const NVLINK_ERRORS_BURST: u32 = 10;
/// PCIe replays in the window that make an incident.
pub const PCIE_REPLAY_STORM: u32 = 100;

/// Whether a GPU's link errors make an incident.
pub fn link_errors_flagged(l: &crate::model::LinkErrors) -> bool {
    l.nvlink_crc.saturating_add(l.nvlink_replay) >= NVLINK_ERRORS_BURST || l.pcie_replay >= PCIE_REPLAY_STORM
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
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Incident {
    /// Its identity across refreshes: subject and signal.
    pub fn key(&self) -> crate::model::IncidentKey {
        crate::model::IncidentKey { subject: self.subject.to_string(), signal: self.signal.clone() }
    }
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Self::Info => "INFO",
            Self::Warning => "WARN",
            Self::Critical => "CRIT",
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
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Plane {
    Compute,
    Network,
    Storage,
    Control,
}

impl Plane {
    pub fn label(self) -> &'static str {
        match self {
            Self::Compute => "compute",
            Self::Network => "network",
            Self::Storage => "storage",
            Self::Control => "control",
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Incident {
    /// The configured cluster it belongs to; empty for a single cluster's or the fleet's own.
    #[serde(skip_serializing_if = "Text::is_empty")]
    pub cluster: Text,
    pub severity: Severity,
    pub plane: Plane,
    /// What it is about: `node007`, `node007/gpu3`, `job 4242`, `team vision`.
    pub subject: Text,
    pub title: String,
    /// What an operator should do.
    pub action: String,
    pub since: Option<Epoch>,
    /// Money burnt per hour while it lasts (idle allocated GPUs).
    pub cost_per_hour: Option<f64>,
    /// The node to jump to, when there is one.
    pub node: Option<Text>,
    pub job: Option<JobId>,
    /// What raised it (`xid:79`, `ecc-dbe`, `port-down`, `alert:GpuHot`): with the subject, its
    /// identity across refreshes ([`Incident::key`]) and the playbook it follows.
    pub signal: String,
    /// How often the signal repeated in its window (an XID's count, a port's flaps), for the
    /// playbook's escalation.
    pub repeats: u32,
    /// Open, acknowledged, mitigated or resolved (derived each refresh).
    #[serde(skip)]
    pub lifecycle: Lifecycle,
    /// For a node that is draining: what it still waits for.
    #[serde(skip)]
    pub waiting: Option<String>,
}

/// Failed and degraded acceptance results, and drift, of the nodes this cluster has.
fn acceptance(s: &ClusterState, out: &mut Vec<Incident>) {
    use crate::model::acceptance::Verdict;
    for (name, a) in &s.acceptance {
        // A fleet cluster's runs name their node `cluster/node`; a run without its cluster
        // judges no node of a fleet (it cannot say which cluster's).
        let n = match name.split_once('/') {
            Some((c, node)) => s.node_in(&Text::from(c), node),
            None if s.is_fleet() => None,
            None => s.node(name),
        };
        let Some(n) = n else { continue };
        let vs = match (a.last_busbw, a.last_baseline, a.last_pct) {
            (Some(bw), Some(base), Some(pct)) => {
                format!("{bw:.1} GB/s vs baseline {base:.1} GB/s ({pct:.0}%)")
            }
            (Some(bw), ..) => format!("{bw:.1} GB/s"),
            _ => a.last_why.clone(),
        };
        let (severity, action) = match a.last_verdict {
            Some(Verdict::Fail) => (
                Severity::Critical,
                "drain and run field diagnostics (dcgmi diag -r 3, ibdiagnet); rerun the acceptance test after repair",
            ),
            Some(Verdict::Degraded) => (
                Severity::Warning,
                "rerun the acceptance test; check NVLink/IB counters, clocks and PCIe; drain if it repeats",
            ),
            _ => (Severity::Info, ""),
        };
        if let Some(v) = a.last_verdict.filter(|v| *v != Verdict::Pass) {
            out.push(Incident {
                cluster: n.cluster.clone(),
                severity,
                plane: Plane::Network,
                subject: n.name.clone(),
                title: format!("NCCL acceptance {}: {vs}", v.label()),
                action: action.to_string(),
                since: Some(a.last_at),
                cost_per_hour: None,
                node: Some(n.name.clone()),
                job: None,
                signal: "acceptance".into(),
                repeats: 0,
                lifecycle: Lifecycle::Open,
                waiting: None,
            });
        }
        let drift = super::suspects::drift_phrases(a);
        if !drift.is_empty() {
            out.push(Incident {
                cluster: n.cluster.clone(),
                severity: Severity::Warning,
                plane: Plane::Network,
                subject: n.name.clone(),
                title: format!("acceptance drift: {}", drift.join(", ")),
                action: "align driver/CUDA/NCCL/image with the fleet; rerun the acceptance test".into(),
                since: Some(a.last_at),
                cost_per_hour: None,
                node: Some(n.name.clone()),
                job: None,
                signal: "drift".into(),
                repeats: 0,
                lifecycle: Lifecycle::Open,
                waiting: None,
            });
        }
    }
}

/// An alert's `severity` label as an incident's: `critical`/`crit`/`page`/`error` → CRIT,
/// `warning`/`warn` → WARN, anything else (`info`, none) → INFO.
pub fn alert_severity(a: &Alert) -> Severity {
    match a.severity().as_str() {
        "critical" | "crit" | "page" | "error" | "fatal" | "emergency" => Severity::Critical,
        "warning" | "warn" | "major" | "minor" => Severity::Warning,
        _ => Severity::Info,
    }
}

/// The plane an alert is about: a `plane` label when it has one, else its name (InfiniBand,
/// NVLink, network → network; filesystem, disk, RAID, storage → storage), else compute when
/// it names a GPU or a host, else control.
fn alert_plane(a: &Alert) -> Plane {
    match a.label("plane") {
        Some("compute") => return Plane::Compute,
        Some("network") => return Plane::Network,
        Some("storage") => return Plane::Storage,
        Some("control") => return Plane::Control,
        _ => {}
    }
    let n = a.name.to_ascii_lowercase();
    if ["infiniband", "nvlink", "network", "roce", "efa", "link", "port"].iter().any(|w| n.contains(w)) {
        Plane::Network
    } else if ["filesystem", "disk", "raid", "storage", "lustre", "gpfs", "nfs"].iter().any(|w| n.contains(w))
    {
        Plane::Storage
    } else if a.gpu().is_some() || a.host().is_some() {
        Plane::Compute
    } else {
        Plane::Control
    }
}

/// Firing alerts (not silenced, not inhibited) join the incidents with their own severity,
/// about the node, GPU or job they name when this cluster has it.
fn alerts(s: &ClusterState, out: &mut Vec<Incident>) {
    for a in s.alerts.iter().filter(|a| a.firing()) {
        let node = s.alert_node(a);
        let job = a.job().filter(|&j| s.job(j).is_some());
        let subject = match (node, a.gpu(), job, a.host()) {
            (Some(n), Some(g), ..) => Text::from(format!("{}/gpu{g}", n.name)),
            (Some(n), None, ..) => n.name.clone(),
            (None, _, Some(j), _) => Text::from(format!("job {j}")),
            (None, _, None, Some(h)) => Text::from(h),
            (None, _, None, None) => Text::from(format!("alert {}", a.name)),
        };
        let action = a
            .annotations
            .get("runbook_url")
            .or_else(|| a.annotations.get("runbook"))
            .map(|r| format!("runbook: {r}"))
            .unwrap_or_else(|| match s.alerts_origin {
                Some(crate::model::alert::AlertOrigin::Prometheus) => {
                    "see the alert in the Alerts view (read from Prometheus: silencing it needs an Alertmanager)".into()
                }
                _ => "see the alert in the Alerts view; silence it with `gpuplane silence create` while you work on it".into(),
            });
        out.push(Incident {
            cluster: Default::default(),
            severity: alert_severity(a),
            plane: alert_plane(a),
            subject,
            title: format!("alert {}: {}", a.name, a.summary()),
            action,
            since: Some(a.starts_at),
            cost_per_hour: None,
            node: node.map(|n| n.name.clone()),
            job,
            signal: format!("alert:{}", a.name),
            repeats: 0,
            lifecycle: Lifecycle::Open,
            waiting: None,
        });
    }
}

pub(super) fn detect(s: &ClusterState, flags: &Flags) -> Vec<Incident> {
    let th = &s.thresholds;
    let mut out = Vec::new();
    let mut idle_by_job: BTreeMap<(Text, JobId), (u32, Epoch, f64, Text)> = BTreeMap::new();
    let inc = |n: &Node, severity, plane, subject: Text, title: String, action: &str, since, signal: &str| {
        Incident {
            cluster: n.cluster.clone(),
            severity,
            plane,
            subject,
            title,
            action: action.to_string(),
            since,
            cost_per_hour: None,
            node: Some(n.name.clone()),
            job: None,
            signal: signal.to_string(),
            repeats: 0,
            lifecycle: Lifecycle::Open,
            waiting: None,
        }
    };
    for &ni in &flags.nodes {
        let Some(n) = s.nodes.get(ni) else { continue };
        let why = n.reason.as_ref().map(|r| format!(": {}", r.text)).unwrap_or_default();
        out.push(inc(
            n,
            Severity::Critical,
            Plane::Compute,
            n.name.clone(),
            format!("node {}{why}", n.state.label()),
            if n.state == crate::model::NodeState::DownDrain {
                "drained already: repair it (BMC, kubelet/slurmd), then resume it"
            } else {
                "check the node (BMC, kubelet/slurmd); drain it if it keeps failing"
            },
            n.reason.as_ref().map(|r| r.at),
            "node-down",
        ));
    }
    for &ni in &flags.capped {
        let Some(n) = s.nodes.get(ni) else { continue };
        let claimed = n.labels.get(crate::model::GPUS_CLAIMED_LABEL).map_or("?", |c| c.as_str());
        out.push(inc(
            n,
            Severity::Warning,
            Plane::Compute,
            n.name.clone(),
            format!(
                "claims {} GPUs; counted as {} (the most a node is taken to have)",
                crate::sanitize::sanitize(claimed),
                crate::model::MAX_GPUS_PER_NODE
            ),
            "check the node's GPU count at its source: Slurm's Gres= / gres.conf, or the device plugin's nvidia.com/gpu capacity and the nvidia.com/gpu.count label",
            None,
            "gpu-count",
        ));
    }
    for &(ni, k) in &flags.gpus {
        let Some((n, g)) = s.nodes.get(ni).and_then(|n| Some((n, n.gpus.get(k)?))) else { continue };
        let subject = || Text::from(format!("{}/gpu{}", n.name, g.index));
        if let Some(x) = g.xid {
            let info = xid_info(x.code);
            let sev = if info.fatal { Severity::Critical } else { Severity::Warning };
            out.push(inc(
                n,
                sev,
                Plane::Compute,
                subject(),
                format!("XID {} {} (×{})", x.code, info.name, x.count),
                info.action,
                Some(x.at),
                &format!("xid:{}", x.code),
            ));
            if let Some(i) = out.last_mut() {
                i.repeats = x.count;
            }
        }
        if g.ecc.dbe > 0 && g.xid.is_none_or(|x| x.code != 48) {
            out.push(inc(
                n,
                Severity::Critical,
                Plane::Compute,
                subject(),
                format!("{} double-bit ECC errors", g.ecc.dbe),
                xid_info(48).action,
                None,
                "ecc-dbe",
            ));
        }
        let l = &g.links;
        if l.nvlink_crc.saturating_add(l.nvlink_replay) >= NVLINK_ERRORS_BURST {
            out.push(inc(
                n,
                Severity::Warning,
                Plane::Network,
                subject(),
                format!("NVLink errors: {} CRC, {} replays in the window", l.nvlink_crc, l.nvlink_replay),
                "drain the node, run NVLink diagnostics (nvidia-smi nvlink -e, dcgmi diag -r 3); reseat or replace the GPU baseboard/NVSwitch tray if it recurs",
                None,
                "nvlink",
            ));
        }
        if l.pcie_replay >= PCIE_REPLAY_STORM {
            out.push(inc(
                n,
                Severity::Warning,
                Plane::Network,
                subject(),
                format!("PCIe replay storm: {} replays in the window", l.pcie_replay),
                "check the GPU's PCIe link (nvidia-smi -q: link generation/width), reseat the GPU/riser; drain the node if replays keep climbing",
                None,
                "pcie-replay",
            ));
        }
        if let Some(t) = g.temp_c.filter(|&t| t >= th.hot_temp_c) {
            let sev =
                if t >= th.hot_temp_c.saturating_add(5) { Severity::Critical } else { Severity::Warning };
            out.push(inc(
                n,
                sev,
                Plane::Compute,
                subject(),
                format!("GPU hot: {t}°C"),
                "check airflow/fans and clocks throttling; drain if it keeps rising",
                None,
                "hot",
            ));
        }
        if let (Some(since), Some(job)) = (g.idle_since, g.job)
            && s.now - since >= th.idle_after_s
        {
            let e = idle_by_job.entry((n.cluster.clone(), job)).or_insert((0, since, 0.0, n.name.clone()));
            e.0 += 1;
            e.1 = e.1.min(since);
            e.2 += s.prices.price(&g.model);
        }
    }
    for &(ni, pi) in &flags.ports {
        let Some((n, p)) = s.nodes.get(ni).and_then(|n| Some((n, n.ports.get(pi)?))) else { continue };
        let subject = || Text::from(format!("{}/{}", n.name, p.name));
        if p.state != PortState::Active {
            out.push(inc(
                n,
                Severity::Critical,
                Plane::Network,
                subject(),
                format!("{} port {}", p.kind.label(), p.state.label()),
                "check cable/transceiver and the switch port; drain the node for multi-node jobs",
                None,
                "port-down",
            ));
        } else if p.flaps >= th.flap_count {
            out.push(inc(
                n,
                Severity::Warning,
                Plane::Network,
                subject(),
                format!("{} port flapping: {} state changes", p.kind.label(), p.flaps),
                "reseat or replace the cable/transceiver; rerun the NCCL test on this node",
                None,
                "port-flap",
            ));
            if let Some(i) = out.last_mut() {
                i.repeats = p.flaps;
            }
        } else {
            out.push(inc(
                n,
                Severity::Warning,
                Plane::Network,
                subject(),
                format!(
                    "{} port errors: {} symbol, {} receive",
                    p.kind.label(),
                    p.symbol_errors,
                    p.rcv_errors
                ),
                "watch the error rate; replace the cable if it grows",
                None,
                "port-errors",
            ));
        }
    }
    acceptance(s, &mut out);
    super::twins::incidents(s, &mut out);
    super::disagree::incidents(s, &mut out);
    for ((cluster, job), (count, since, per_hour, node)) in idle_by_job {
        let who =
            s.job_in(&cluster, job).map(|j| format!(" ({} / {})", j.user, j.account)).unwrap_or_default();
        out.push(Incident {
            cluster,
            severity: Severity::Warning,
            plane: Plane::Compute,
            subject: Text::from(format!("job {job}")),
            title: format!("{count} allocated GPUs idle{who}"),
            action: "ask the owner; cancel or shrink the job if it is stuck".into(),
            since: Some(since),
            cost_per_hour: Some(per_hour),
            node: Some(node),
            job: Some(job),
            signal: "idle".into(),
            repeats: 0,
            lifecycle: Lifecycle::Open,
            waiting: None,
        });
    }
    for fs in &s.storage {
        let pct = fs.used_pct();
        if pct >= th.storage_full_pct {
            let sev = if pct >= 97 { Severity::Critical } else { Severity::Warning };
            out.push(Incident {
                cluster: Default::default(),
                severity: sev,
                plane: Plane::Storage,
                subject: fs.name.clone(),
                title: format!("{} {pct}% full", fs.mount),
                action: "delete old checkpoints or grow the filesystem before writes fail".into(),
                since: None,
                cost_per_hour: None,
                node: None,
                job: None,
                signal: "fs-full".into(),
                repeats: 0,
                lifecycle: Lifecycle::Open,
                waiting: None,
            });
        }
    }
    for q in &s.quotas {
        if q.over_quota() {
            out.push(Incident {
                cluster: q.cluster.clone(),
                severity: Severity::Warning,
                plane: Plane::Control,
                subject: Text::from(format!("team {}", q.team)),
                title: format!(
                    "over quota: {} of {} GPUs ({} borrowed)",
                    q.gpu_used, q.gpu_quota, q.borrowed
                ),
                action: "expected while borrowing; reclaim if others are waiting".into(),
                since: None,
                cost_per_hour: None,
                node: None,
                job: None,
                signal: "over-quota".into(),
                repeats: 0,
                lifecycle: Lifecycle::Open,
                waiting: None,
            });
        }
    }
    alerts(s, &mut out);
    for src in &s.sources {
        if let Some(err) = &src.error {
            out.push(Incident {
                cluster: src.cluster.clone(),
                severity: Severity::Critical,
                plane: Plane::Control,
                subject: src.name.clone(),
                title: err.clone(),
                action: "the data from this source is stale until it recovers".into(),
                since: src.ok_at,
                cost_per_hour: None,
                node: None,
                job: None,
                signal: "source-error".into(),
                repeats: 0,
                lifecycle: Lifecycle::Open,
                waiting: None,
            });
        }
    }
    super::lifecycle::derive(s, &mut out);
    out.sort_by(|a, b| {
        a.lifecycle
            .rank()
            .cmp(&b.lifecycle.rank())
            .then(b.severity.cmp(&a.severity))
            .then(a.plane.cmp(&b.plane))
            .then(a.since.unwrap_or(i64::MAX).cmp(&b.since.unwrap_or(i64::MAX)))
            .then(a.subject.cmp(&b.subject))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_degraded_and_drifting_acceptance_results_are_incidents() {
        let s = crate::state::suspects::tests::cluster();
        let acc: Vec<&Incident> = s.incidents.iter().filter(|i| i.title.contains("acceptance")).collect();
        let find = |node: &str, what: &str| {
            acc.iter()
                .find(|i| i.subject == node && i.title.contains(what))
                .unwrap_or_else(|| panic!("no {what} incident for {node}: {acc:#?}"))
        };
        let fail = find("gpu-006", "fail");
        assert_eq!(fail.severity, Severity::Critical);
        assert_eq!(fail.title, "NCCL acceptance fail: 184.0 GB/s vs baseline 460.0 GB/s (40%)");
        assert!(fail.action.starts_with("drain and run field diagnostics"));
        assert_eq!(fail.node.as_deref(), Some("gpu-006"));
        let deg = find("gpu-004", "degraded");
        assert_eq!(deg.severity, Severity::Warning);
        assert!(deg.title.contains("391.0 GB/s vs baseline 460.0 GB/s (85%)"), "{}", deg.title);
        assert!(deg.action.starts_with("rerun the acceptance test"));
        let drift = find("gpu-003", "drift");
        assert_eq!(drift.title, "acceptance drift: driver 535.104 (fleet 550.54.15)");
        // Passing nodes and nodes of another cluster raise nothing.
        assert_eq!(acc.len(), 4, "{acc:#?}");
        assert!(!acc.iter().any(|i| i.subject == "gpu-007" || i.subject == "not-in-this-cluster"));
        // Critical ones come first on the Overview.
        assert_eq!(s.incidents[0].severity, Severity::Critical);
    }
}
