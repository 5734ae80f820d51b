//! The Prometheus backend against a real Prometheus 2.42 (started by scripts/test, see
//! scripts/prometheus/) holding 2 h of a synthetic 16-node H100 cluster with planted anomalies.
//! Each anomaly must surface as the right incident on the right node/GPU, with the figures a
//! direct PromQL query of the same server gives.
//!
//! Behind the `live` feature (`cargo test --features live`, as scripts/test runs it): they need
//! the test Prometheus (GPUPLANE_TEST_PROM_URL), and without it they fail, never pass.

use crate::common;

use gpuplane::backend::prom::{self, PromClient, PromConfig};
use gpuplane::model::protocol::{NodeSample, Update};
use gpuplane::model::{EccCounts, Gpu, Node, NodeState, xid_info};
use gpuplane::state::{ClusterState, Incident};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn url() -> String {
    match std::env::var("GPUPLANE_TEST_PROM_URL") {
        Ok(u) if !u.is_empty() => u,
        _ => panic!(
            "GPUPLANE_TEST_PROM_URL is not set: these tests need the real Prometheus that the test command starts — run scripts/test"
        ),
    }
}

fn cfg(url: &str) -> PromConfig {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut c = PromConfig::new(url);
    c.refresh = Duration::from_secs(1);
    c
}

/// Direct PromQL: `(labels, value)` of each series.
async fn query(url: &str, q: &str) -> Vec<(BTreeMap<String, String>, f64)> {
    let c = PromClient::new(&cfg(url)).unwrap();
    let body = c.query(q, None).await.unwrap_or_else(|e| panic!("{q}: {e}"));
    let r = body.parse().unwrap();
    r.results
        .iter()
        .map(|s| {
            let l = s.labels.iter().map(|(k, v)| (k.0.to_string(), v.0.to_string())).collect();
            (l, s.last().unwrap().v)
        })
        .collect()
}

async fn one(url: &str, q: &str) -> f64 {
    let v = query(url, q).await;
    assert_eq!(v.len(), 1, "{q}: {v:?}");
    v[0].1
}

/// Runs the backend into `state` until `done` says so (or panics after `secs`).
async fn drive(
    cfg: PromConfig,
    state: &mut ClusterState,
    secs: u64,
    mut done: impl FnMut(&Update, &ClusterState) -> bool,
) -> Vec<Update> {
    let (tx, mut rx) = mpsc::channel(1024);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(prom::run(cfg, tx, cancel.clone()));
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let u = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "no expected update within {secs} s; got {} updates: {:?}",
                    seen.len(),
                    last_status(&seen)
                )
            })
            .expect("the backend stopped");
        state.apply(u.clone());
        let stop = done(&u, state);
        seen.push(u);
        if stop {
            break;
        }
    }
    cancel.cancel();
    let _ = task.await;
    seen
}

fn last_status(seen: &[Update]) -> Option<&gpuplane::model::protocol::SourceStatus> {
    seen.iter().rev().find_map(|u| match u {
        Update::Status(s) => Some(s),
        _ => None,
    })
}

/// Until the first live refresh has been applied (its status follows the delta).
fn first_refresh(u: &Update, _: &ClusterState) -> bool {
    matches!(u, Update::Status(s) if s.ok_at.is_some())
}

fn incident<'a>(s: &'a ClusterState, subject: &str, title_start: &str) -> &'a Incident {
    s.incidents.iter().find(|i| i.subject == subject && i.title.starts_with(title_start)).unwrap_or_else(
        || {
            let all: Vec<_> = s.incidents.iter().map(|i| format!("{} | {}", i.subject, i.title)).collect();
            panic!("no incident {subject:?} {title_start:?} in {all:#?}")
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_anomalies_surface_as_incidents_with_the_servers_figures() {
    let url = url();
    let mut s = ClusterState::new(Default::default(), Default::default());
    let updates = drive(cfg(&url), &mut s, 90, first_refresh).await;

    // Prometheus alone: the inventory came first, then history, then the live refresh.
    assert!(matches!(
        updates.iter().find(|u| !matches!(u, Update::Status(_))),
        Some(Update::Inventory { .. })
    ));
    assert_eq!(s.nodes.len(), 16);
    assert!(s.nodes.iter().all(|n| n.gpus.len() == 8 && n.gpu_model() == "NVIDIA H100 80GB HBM3"));
    let uuid = query(&url, "DCGM_FI_DEV_GPU_UTIL{Hostname=\"gpu-003\",gpu=\"5\"}").await;
    assert_eq!(s.node("gpu-003").unwrap().gpus[5].uuid, uuid[0].0["UUID"]);
    let src = s.sources.iter().find(|x| x.name == "prom").unwrap();
    assert_eq!((src.error.as_deref(), src.detail.as_deref()), (None, Some("2.42.0+ds")));
    assert!(!s.is_simulated());

    // History from query_range: the sparkline is filled before the first live refresh.
    let n8 = s.node_index("gpu-008").unwrap();
    let hist = s.gpu_temp_history(n8, 4, 120);
    assert!(hist.len() >= 55, "{} points", hist.len());

    // XID burst on gpu-005 GPUs 0-3, and the ECC GPU's XID 94.
    let counts =
        query(&url, "count by (Hostname, gpu) (max_over_time(DCGM_FI_DEV_XID_ERRORS[3600s]) != 0)").await;
    let latest = query(&url, "DCGM_FI_DEV_XID_ERRORS != 0").await;
    assert_eq!(latest.len(), 5, "{latest:?}");
    for (labels, code) in &latest {
        let (host, gpu) = (&labels["Hostname"], &labels["gpu"]);
        let count = counts.iter().find(|(l, _)| &l["Hostname"] == host && &l["gpu"] == gpu).unwrap().1;
        let code = *code as u16;
        let subject = format!("{host}/gpu{gpu}");
        let i = incident(&s, &subject, &format!("XID {code} "));
        assert_eq!(i.title, format!("XID {code} {} (×{count})", xid_info(code).name));
        assert_eq!(i.action, xid_info(code).action);
        assert_eq!(i.node.as_deref(), Some(host.as_str()));
    }
    // It has been 43 since t_end-2700 s on GPU 3: dated from the XID window, not from now.
    let since = incident(&s, "gpu-005/gpu3", "XID").since.unwrap();
    assert!(s.now - since >= 2600, "XID dated {} s ago", s.now - since);

    // ECC double-bit errors on gpu-011 GPU 6.
    let dbe = one(&url, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{Hostname=\"gpu-011\",gpu=\"6\"}").await;
    let i = incident(&s, "gpu-011/gpu6", &format!("{dbe} double-bit ECC errors"));
    assert_eq!(i.severity, gpuplane::state::Severity::Critical);
    let sbe = one(&url, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{Hostname=\"gpu-011\",gpu=\"6\"}").await;
    let g = &s.node("gpu-011").unwrap().gpus[6];
    assert!((f64::from(g.ecc.sbe) - sbe).abs() <= 2.0, "sbe {} vs {sbe}", g.ecc.sbe);
    assert_eq!(g.ecc.dbe as f64, dbe);

    // The hot GPU.
    let t = one(&url, "DCGM_FI_DEV_GPU_TEMP{Hostname=\"gpu-008\",gpu=\"4\"}").await;
    let i = incident(&s, "gpu-008/gpu4", "GPU hot: ");
    let shown: f64 = i.title.trim_start_matches("GPU hot: ").trim_end_matches("°C").parse().unwrap();
    assert!((shown - t).abs() <= 2.0, "{} vs {t}", i.title);
    assert_eq!(s.incidents.iter().filter(|i| i.title.starts_with("GPU hot")).count(), 1);

    // NVLink CRC errors and replays on gpu-014 GPU 1, a PCIe replay storm on gpu-007 GPU 2:
    // fabric incidents with the window's counts (the counters grow live: a few of slack).
    let crc = one(&url, "round(increase(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{Hostname=\"gpu-014\",gpu=\"1\"}[3600s]) + increase(DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL{Hostname=\"gpu-014\",gpu=\"1\"}[3600s]))").await;
    let replay = one(
        &url,
        "round(increase(DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{Hostname=\"gpu-014\",gpu=\"1\"}[3600s]))",
    )
    .await;
    let i = incident(&s, "gpu-014/gpu1", "NVLink errors: ");
    assert_eq!(i.plane, gpuplane::state::Plane::Network);
    assert!(i.action.contains("NVLink diagnostics"), "{}", i.action);
    let l = s.node("gpu-014").unwrap().gpus[1].links;
    assert_eq!(
        i.title,
        format!("NVLink errors: {} CRC, {} replays in the window", l.nvlink_crc, l.nvlink_replay)
    );
    assert!((f64::from(l.nvlink_crc) - crc).abs() <= 3.0, "{} vs {crc}", i.title);
    assert!((f64::from(l.nvlink_replay) - replay).abs() <= 1.0 && replay >= 5.0, "{} vs {replay}", i.title);
    let pcie =
        one(&url, "round(increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{Hostname=\"gpu-007\",gpu=\"2\"}[3600s]))")
            .await;
    let i = incident(&s, "gpu-007/gpu2", "PCIe replay storm: ");
    assert!(i.action.contains("PCIe link"), "{}", i.action);
    let shown = s.node("gpu-007").unwrap().gpus[2].links.pcie_replay;
    assert_eq!(i.title, format!("PCIe replay storm: {shown} replays in the window"));
    assert!((f64::from(shown) - pcie).abs() <= 8.0, "{} vs {pcie}", i.title);
    assert_eq!(
        s.incidents
            .iter()
            .filter(|i| i.title.starts_with("NVLink errors") || i.title.starts_with("PCIe replay"))
            .count(),
        2
    );

    // The flapping IB port.
    let flaps = one(&url, "round(increase(node_infiniband_link_downed_total{instance=\"gpu-010:9100\",device=\"mlx5_3\"}[3600s]))").await;
    assert!(flaps >= 3.0, "the flaps are older than the window: restart Prometheus (scripts/test does)");
    incident(&s, "gpu-010/mlx5_3/1", &format!("IB port flapping: {flaps} state changes"));
    let p = s.node("gpu-010").unwrap().ports.iter().find(|p| p.name == "mlx5_3/1").unwrap().clone();
    let downed =
        one(&url, "node_infiniband_link_downed_total{instance=\"gpu-010:9100\",device=\"mlx5_3\"}").await;
    assert_eq!(p.link_downed as f64, downed);
    assert_eq!(p.rate_gbps, 400);
    assert_eq!(s.node("gpu-001").unwrap().ports.len(), 8);

    // Allocated but idle: the notebook pod on gpu-006 and Slurm job 48377 on gpu-013, with $/h.
    let idle = query(&url, "count by (Hostname) (avg_over_time(DCGM_FI_DEV_GPU_UTIL{pod!=\"\"}[10m]) < 5 or avg_over_time(DCGM_FI_DEV_GPU_UTIL{hpc_job!=\"\"}[10m]) < 5)").await;
    let price = s.prices.price("NVIDIA H100 80GB HBM3");
    assert_eq!(idle.len(), 2, "{idle:?}");
    for (labels, n) in idle {
        let host = &labels["Hostname"];
        let i = s
            .incidents
            .iter()
            .find(|i| i.node.as_deref() == Some(host.as_str()) && i.title.contains("allocated GPUs idle"))
            .unwrap_or_else(|| panic!("no idle incident on {host}: {:#?}", s.incidents));
        assert!(i.title.starts_with(&format!("{n} allocated GPUs idle")), "{}", i.title);
        assert_eq!(i.cost_per_hour, Some(n * price));
    }
    assert_eq!(s.job(48377).map(|j| j.gpus), Some(2));

    // The nearly full local disk.
    let ratio = one(&url, "node_filesystem_avail_bytes{instance=\"gpu-003:9100\",mountpoint=\"/raid\"} / node_filesystem_size_bytes{instance=\"gpu-003:9100\",mountpoint=\"/raid\"}").await;
    let pct = ((1.0 - ratio) * 100.0).floor();
    let i = incident(&s, "gpu-003:/raid", "/raid ");
    assert_eq!(i.title, format!("/raid {pct}% full"));
    let lustre = s.storage.iter().find(|f| f.mount == "/mnt/checkpoints").expect("shared lustre listed");
    assert_eq!(
        lustre.capacity_bytes as f64,
        one(&url, "max(node_filesystem_size_bytes{mountpoint=\"/mnt/checkpoints\"})").await
    );
    // Storage throughput: the NFS mount's client bytes summed over the nodes (each client's rate
    // is steady in the generated data, so a direct query agrees to within a percent) …
    let home = s.storage.iter().find(|f| f.mount == "/home").expect("the NFS mount listed");
    let near = |a: f64, b: f64| (a - b).abs() <= 0.01 * b.abs().max(1.0);
    for (got, metric) in [
        (home.read_bps, "node_mountstats_nfs_total_read_bytes_total"),
        (home.write_bps, "node_mountstats_nfs_total_write_bytes_total"),
    ] {
        let want = one(&url, &format!("sum(rate({metric}[120s]))")).await;
        assert!(want > 1e6 && near(got, want), "{metric}: {got} vs {want}");
    }
    // … and the nearly full /raid shows its node's physical disks (md1's members, not md1 too).
    let raid = s.storage.iter().find(|f| f.name == "gpu-003:/raid").expect("the nearly full /raid listed");
    let members = one(
        &url,
        "sum(rate(node_disk_read_bytes_total{instance=\"gpu-003:9100\",device=~\"nvme[12]n1\"}[120s]))",
    )
    .await;
    let md =
        one(&url, "sum(rate(node_disk_read_bytes_total{instance=\"gpu-003:9100\",device=\"md1\"}[120s]))")
            .await;
    assert!(raid.read_bps > 0.0 && raid.write_bps > 0.0, "{raid:?}");
    assert!(
        raid.read_bps < 1.5 * md + 1.2e6,
        "md1 is not counted on top of its members: {} vs md1 {md}",
        raid.read_bps
    );
    assert!(members > 0.0 && raid.read_bps > 0.5 * members, "{} vs members {members}", raid.read_bps);

    // Deterministic telemetry: the idle notebook's framebuffer.
    let fb = one(&url, "DCGM_FI_DEV_FB_USED{Hostname=\"gpu-006\",gpu=\"0\"}").await;
    assert_eq!(s.node("gpu-006").unwrap().gpus[0].mem_used_mib, Some(fb as u32));
    // No incident on a healthy node.
    assert!(!s.incidents.iter().any(|i| i.node.as_deref() == Some("gpu-016")), "{:#?}", s.incidents);
}

/// After the start-up refresh, each refresh reads the per-refresh families and one rotating
/// family: over a whole cycle nothing the views show goes missing or stale, and the packed
/// per-GPU value carries the server's figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rotating_schedule_keeps_every_view_complete() {
    let url = url();
    let c = cfg(&url);
    let mut s = ClusterState::new(Default::default(), Default::default());
    let cycle = prom::queries::ROTATING.len();
    let mut refreshes = 0;
    let updates = drive(c, &mut s, 120, |u, st| {
        if first_refresh(u, st) {
            refreshes += 1;
            // Every state after a steady-state refresh is complete.
            if refreshes > 1 {
                assert!(st.nodes.iter().all(|n| n.ports.len() == 8), "refresh {refreshes}");
                assert!(st.incidents.iter().any(|i| i.title.starts_with("IB port flapping")));
                assert_eq!(
                    st.incidents.iter().filter(|i| i.title.contains("allocated GPUs idle")).count(),
                    2
                );
            }
        }
        refreshes > cycle + 1
    })
    .await;
    let deltas: Vec<_> =
        updates.iter().filter_map(|u| if let Update::Delta(d) = u { Some(d) } else { None }).collect();
    assert!(deltas.len() > cycle + 1);
    // Ports go out whole once a cycle (with the port list), else only where they changed.
    let with_ports: Vec<usize> =
        deltas.iter().map(|d| d.nodes.iter().filter(|n| n.ports.is_some()).count()).collect();
    assert!(with_ports.iter().filter(|&&n| n == 16).count() >= 2, "{with_ports:?}");
    // Power, tensor activity and framebuffer from the packed value, against direct PromQL.
    let g = &s.node("gpu-006").unwrap().gpus[0];
    let fb = one(&url, "DCGM_FI_DEV_FB_USED{Hostname=\"gpu-006\",gpu=\"0\"}").await;
    assert_eq!(g.mem_used_mib, Some(fb as u32));
    let p = one(&url, "DCGM_FI_DEV_POWER_USAGE{Hostname=\"gpu-008\",gpu=\"4\"}").await;
    let shown = f64::from(s.node("gpu-008").unwrap().gpus[4].power_w.unwrap());
    assert!((shown - p).abs() <= 0.1 * p + 5.0, "{shown} W vs {p}");
    let t = one(&url, "100 * DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{Hostname=\"gpu-008\",gpu=\"4\"}").await;
    let shown = f64::from(s.node("gpu-008").unwrap().gpus[4].tensor_active.unwrap());
    assert!((shown - t).abs() <= 10.0, "{shown} % vs {t}");
    assert_eq!(s.job(48377).map(|j| j.gpus), Some(2));
}

fn scheduler_nodes() -> Vec<Node> {
    (1..=17u64)
        .map(|i| Node {
            cluster: Default::default(),
            name: if i == 17 { "login-1".into() } else { format!("node-{i:03}").into() },
            state: NodeState::Allocated,
            reason: None,
            pool: "batch".into(),
            labels: BTreeMap::new(),
            cpus_total: 224,
            cpus_alloc: 0,
            mem_total_mib: 2_000_000,
            mem_alloc_mib: 0,
            gpu_slots: 8,
            gpu_alloc: 8,
            gpus: (0..8)
                .map(|k| Gpu {
                    index: k,
                    uuid: "".into(),
                    model: "H100".into(),
                    mem_total_mib: 81559,
                    mem_used_mib: None,
                    util: None,
                    tensor_active: None,
                    temp_c: None,
                    power_w: None,
                    power_limit_w: 700,
                    ecc: EccCounts::default(),
                    ecc_at: None,
                    xid: None,
                    mig: Vec::new(),
                    job: Some(1000 + i),
                    links: Default::default(),
                    idle_since: None,
                    processes: Vec::new(),
                    local: None,
                })
                .collect(),
            topology: None,
            ports: Vec::new(),
            driver: None,
            cuda: None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telemetry_joins_the_schedulers_nodes() {
    let url = url();
    let mut s = ClusterState::new(Default::default(), Default::default());
    s.apply(Update::Inventory {
        at: 1,
        inventory: Box::new(gpuplane::model::protocol::Inventory {
            source: "slurm".into(),
            nodes: Some(scheduler_nodes()),
            ..Default::default()
        }),
    });
    let mut c = cfg(&url);
    c.discover_nodes = false;
    c.host_map.regex = Some(regex::Regex::new(r"^gpu-(\d+)$").unwrap());
    c.host_map.replace = Some("node-$1".into());
    let updates = drive(c, &mut s, 90, first_refresh).await;
    assert!(!updates.iter().any(|u| matches!(u, Update::Inventory { .. })), "no inventory with a scheduler");
    assert_eq!(s.nodes.len(), 17, "the scheduler's nodes, no more");
    let t = one(&url, "DCGM_FI_DEV_GPU_TEMP{Hostname=\"gpu-008\",gpu=\"4\"}").await;
    let n = s.node("node-008").unwrap();
    assert!((f64::from(n.gpus[4].temp_c.unwrap()) - t).abs() <= 2.0);
    assert_eq!(n.state, NodeState::Allocated, "the scheduler owns the state");
    assert!(n.gpus.iter().all(|g| g.job == Some(1008)), "and the GPU ownership");
    assert_eq!(s.node("node-010").unwrap().ports.len(), 8);
    incident(&s, "node-005/gpu0", "XID 43");
    let login = s.node("login-1").unwrap();
    assert!(login.gpus.iter().all(|g| g.util.is_none()) && login.ports.is_empty());
    // Every delta sample named a node the scheduler knows.
    let names: Vec<&NodeSample> = updates
        .iter()
        .filter_map(|u| if let Update::Delta(d) = u { Some(d.nodes.iter()) } else { None })
        .flatten()
        .collect();
    assert!(
        names.iter().all(|x| s.node(&x.node).is_some()),
        "unmapped: {:?}",
        names.iter().find(|x| s.node(&x.node).is_none()).map(|x| &x.node)
    );
}

/// A running job as a scheduler lists it.
fn running_job(id: u64) -> gpuplane::model::Job {
    gpuplane::model::Job {
        cluster: Default::default(),
        id,
        name: "train".into(),
        user: "alice".into(),
        account: "vision".into(),
        queue: "batch".into(),
        state: gpuplane::model::JobState::Running,
        pending_reason: None,
        priority: 1,
        submit: 1,
        start: Some(1),
        end: None,
        est_start: None,
        gpus: 8,
        gpu_model: None,
        nodes: vec![],
        exit_reason: None,
        retries: 0,
        position: None,
        rank: None,
        gpu_seconds: 0.0,
        useful_gpu_seconds: 0.0,
        time_limit: None,
        no_time_limit: false,
    }
}

/// Telemetry that says what the scheduler does not is an incident, never dropped in silence: a
/// node the scheduler lists idle with 4 GPUs (node-003) while Prometheus has its host's 8 GPUs
/// busy; GPUs beyond the scheduler's count named; telemetry job ids the scheduler does not list.
/// Every figure is the server's own (PromQL), the scheduler's side the test's own listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disagreements_between_telemetry_and_the_scheduler_are_incidents() {
    use gpuplane::state::disagree;
    let url = url();
    // The host with the most busy GPUs is listed idle, with 4 GPUs.
    let busy_by_host =
        query(&url, &format!("count by (Hostname) (DCGM_FI_DEV_GPU_UTIL >= {})", disagree::BUSY_UTIL_PCT))
            .await;
    let (host, busy) = busy_by_host
        .iter()
        .map(|(l, v)| (l["Hostname"].clone(), *v as u32))
        .max_by_key(|(h, v)| (*v, std::cmp::Reverse(h.clone())))
        .expect("busy GPUs in the planted history");
    assert!(busy > 4, "{host}: {busy}");
    let idle_name = host.replace("gpu-", "node-");
    // The telemetry's job ids per host; the scheduler lists one of them.
    let jobs_by_host: Vec<(String, u64)> =
        query(&url, r#"count by (Hostname, hpc_job) (DCGM_FI_DEV_GPU_UTIL{hpc_job!=""})"#)
            .await
            .into_iter()
            .map(|(l, _)| (l["Hostname"].clone(), l["hpc_job"].parse().unwrap()))
            .collect();
    let all_ids: std::collections::BTreeSet<u64> = jobs_by_host.iter().map(|x| x.1).collect();
    assert!(all_ids.len() >= 2, "{jobs_by_host:?}");
    let listed = *all_ids.iter().next().unwrap();
    let mut nodes = scheduler_nodes();
    let n = nodes.iter_mut().find(|n| n.name == idle_name.as_str()).unwrap();
    n.state = NodeState::Idle;
    n.gpu_alloc = 0;
    n.gpu_slots = 4;
    n.gpus.truncate(4);
    for g in &mut n.gpus {
        g.job = None;
        g.model = "L40S".into();
    }
    let mut s = ClusterState::new(Default::default(), Default::default());
    s.apply(Update::Inventory {
        at: 1,
        inventory: Box::new(gpuplane::model::protocol::Inventory {
            source: "slurm".into(),
            nodes: Some(nodes),
            jobs: Some(vec![running_job(listed)]),
            ..Default::default()
        }),
    });
    let mut c = cfg(&url);
    c.discover_nodes = false;
    c.host_map.regex = Some(regex::Regex::new(r"^gpu-(\d+)$").unwrap());
    c.host_map.replace = Some("node-$1".into());
    drive(c, &mut s, 90, first_refresh).await;

    // Busy on a node the scheduler calls idle.
    let on = |signal: &str| -> Vec<&Incident> { s.incidents.iter().filter(|i| i.signal == signal).collect() };
    let busy_inc = on("disagree-busy");
    assert_eq!(busy_inc.len(), 1, "{busy_inc:#?}");
    assert_eq!(busy_inc[0].subject, idle_name.as_str());
    assert!(
        busy_inc[0].title.contains(&format!("{busy} GPUs busy")) && busy_inc[0].title.contains("idle"),
        "{}",
        busy_inc[0].title
    );
    // The GPU counts: the telemetry's as the server counts the host's GPUs, the ones beyond the
    // scheduler's named (and not shown as GPUs of the node).
    let tele = one(&url, &format!("count(DCGM_FI_DEV_GPU_UTIL{{Hostname=\"{host}\"}})")).await as u32;
    let mut beyond: Vec<u8> = query(&url, &format!("DCGM_FI_DEV_GPU_UTIL{{Hostname=\"{host}\"}}"))
        .await
        .into_iter()
        .map(|(l, _)| l["gpu"].parse::<u8>().unwrap())
        .filter(|&g| g >= 4)
        .collect();
    beyond.sort();
    let count_inc = on("disagree-gpus");
    let mine: Vec<_> = count_inc.iter().filter(|i| i.subject == idle_name.as_str()).collect();
    assert_eq!(mine.len(), 1, "{count_inc:#?}");
    let list: Vec<String> = beyond.iter().map(u8::to_string).collect();
    assert!(
        mine[0].title.starts_with(&format!("telemetry reports {tele} GPUs, the scheduler 4")),
        "{}",
        mine[0].title
    );
    assert!(mine[0].title.contains(&format!("GPUs {} are not shown", list.join(", "))), "{}", mine[0].title);
    assert_eq!(s.node(&idle_name).unwrap().gpus.len(), 4);
    // Every other host whose GPU count is not the scheduler's 8, and no more.
    let counts = query(&url, "count by (Hostname) (DCGM_FI_DEV_GPU_UTIL)").await;
    let mut want: Vec<String> = counts
        .iter()
        .filter(|(l, v)| l["Hostname"] == host || *v as u32 != 8)
        .map(|(l, _)| l["Hostname"].replace("gpu-", "node-"))
        .collect();
    want.sort();
    let mut got: Vec<String> = count_inc.iter().map(|i| i.subject.to_string()).collect();
    got.sort();
    assert_eq!(got, want);
    // Job ids the scheduler does not list, per node; the one it lists is not among them.
    let mut want: Vec<(String, u64)> = jobs_by_host
        .iter()
        .filter(|(_, j)| *j != listed)
        .map(|(h, j)| (h.replace("gpu-", "node-"), *j))
        .collect();
    want.sort();
    let mut got: Vec<(String, u64)> = s
        .disagreements
        .iter()
        .filter_map(|(k, d)| Some((k, d.jobs.as_ref()?)))
        .flat_map(|(k, (j, _))| j.iter().map(move |j| (k.name.to_string(), *j)))
        .collect();
    got.sort();
    assert_eq!(got, want);
    let nodes_with_unknown: std::collections::BTreeSet<&String> = want.iter().map(|x| &x.0).collect();
    assert_eq!(on("disagree-jobs").len(), nodes_with_unknown.len());
    // What doctor counts.
    assert_eq!(disagree::job_matches(&s), (1, all_ids.len() - 1));
}

/// The first raw sample of each series' newest run of its current value (the time the series
/// itself says it changed), per `(Hostname, gpu)`: the oracle for a timeline entry's time.
async fn changed_at(url: &str, series: &str) -> Vec<((String, String), f64, f64)> {
    let c = PromClient::new(&cfg(url)).unwrap();
    let body = c.query(&format!("{series}[25h]"), None).await.unwrap();
    let r = body.parse().unwrap();
    r.results
        .iter()
        .filter_map(|s| {
            let last = s.last()?;
            let run = s.points.iter().rev().take_while(|p| p.v == last.v).count();
            let first = s.points[s.points.len() - run];
            let key = (s.label("Hostname")?.to_string(), s.label("gpu")?.to_string());
            (last.v > 0.0 && run < s.points.len()).then_some((key, last.v, first.t))
        })
        .collect()
}

/// Per `(Hostname, gpu)`: the GPU's current XID code (the highest its series report now, as the
/// console reads it) and the first raw sample of that code's series: when the series took it.
async fn xid_started(url: &str) -> Vec<((String, String), f64, f64)> {
    let c = PromClient::new(&cfg(url)).unwrap();
    let body = c.query("DCGM_FI_DEV_XID_ERRORS[25h]", None).await.unwrap();
    let r = body.parse().unwrap();
    let mut by_gpu: BTreeMap<(String, String), (f64, f64)> = BTreeMap::new();
    for s in r.results.iter() {
        let (Some(h), Some(g), Some(last), Some(first)) =
            (s.label("Hostname"), s.label("gpu"), s.last(), s.points.first())
        else {
            continue;
        };
        if last.v <= 0.0 {
            continue;
        }
        let e = by_gpu.entry((h.to_string(), g.to_string())).or_insert((last.v, first.t));
        if last.v > e.0 {
            *e = (last.v, first.t);
        }
    }
    by_gpu.into_iter().map(|(k, (v, t))| (k, v, t)).collect()
}

/// XID and ECC events are dated by the series itself (when the GPU took its XID code, when the
/// double-bit count reached its value), not by when a console first saw them; a console that restarts (the scheduler listed first, the
/// telemetry after) dates them the same, so the journal keeps one, and never logs "0 → 2".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xid_and_ecc_events_carry_the_series_change_time_and_a_restart_adds_none() {
    use gpuplane::model::timeline::EventKind;
    let url = url();
    let want = changed_at(&url, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL").await;
    assert!(!want.is_empty(), "a planted double-bit ECC count");
    let step = gpuplane::backend::prom::DATING.1 as f64;
    let check = |events: &[gpuplane::model::timeline::Event], node: &dyn Fn(&str) -> String| {
        for ((host, gpu), v, t) in &want {
            let subject = format!("{}/gpu{gpu}", node(host));
            let e = events
                .iter()
                .find(|e| e.kind == EventKind::Ecc && e.subject == subject)
                .unwrap_or_else(|| panic!("no ECC event for {subject}: {events:#?}"));
            assert!(e.what.ends_with(&format!("reached {v}")), "{e:?}");
            let d = e.at as f64 - t;
            assert!((0.0..=step).contains(&d), "{subject}: at {} vs the series' change at {t} ({d} s)", e.at);
        }
    };
    // Prometheus alone.
    let mut a = ClusterState::new(Default::default(), Default::default());
    drive(cfg(&url), &mut a, 90, first_refresh).await;
    let (first, _) = a.timeline.take_unsent();
    check(&first, &|h| h.to_string());
    // XIDs too: each GPU's current code, dated when the series took that code.
    let xids = xid_started(&url).await;
    assert!(!xids.is_empty(), "planted XIDs");
    for ((host, gpu), code, t) in &xids {
        let subject = format!("{host}/gpu{gpu}");
        let e = first
            .iter()
            .find(|e| e.kind == EventKind::Xid && e.subject == subject)
            .unwrap_or_else(|| panic!("no XID event for {subject}: {first:#?}"));
        assert!(e.what.starts_with(&format!("XID {code}: ")), "{e:?}");
        let d = e.at as f64 - t;
        assert!((0.0..=step).contains(&d), "{subject}: at {} vs the series' change at {t} ({d} s)", e.at);
    }
    let dir = tempfile::tempdir().unwrap();
    let mut journal = gpuplane::store::timeline::Journal::open(&dir.path().join("timeline.sqlite")).unwrap();
    journal.record(&first).unwrap();
    // Restarted with a scheduler: its nodes first, the telemetry joined after.
    let mut b = ClusterState::new(Default::default(), Default::default());
    let mut nodes = scheduler_nodes();
    for n in &mut nodes {
        n.name = n.name.replace("node-", "gpu-").into();
    }
    b.apply(Update::Inventory {
        at: 1,
        inventory: Box::new(gpuplane::model::protocol::Inventory {
            source: "slurm".into(),
            nodes: Some(nodes),
            ..Default::default()
        }),
    });
    let mut c = cfg(&url);
    c.discover_nodes = false;
    drive(c.clone(), &mut b, 90, first_refresh).await;
    let (again, _) = b.timeline.take_unsent();
    check(&again, &|h| h.to_string());
    assert!(!again.iter().any(|e| e.kind == EventKind::Ecc && e.what.contains("0 →")), "{again:#?}");
    let ecc: Vec<_> = again.into_iter().filter(|e| e.kind == EventKind::Ecc).collect();
    assert_eq!(journal.record(&ecc).unwrap(), 0, "the restarted console adds no ECC event");
    drive(c, &mut b, 90, |u, _| matches!(u, Update::Status(s) if s.ok_at.is_some())).await;
    let (later, _) = b.timeline.take_unsent();
    assert!(!later.iter().any(|e| e.kind == EventKind::Ecc), "said once: {later:#?}");
}

/// A TCP proxy to Prometheus that can be stopped (listener and live connections closed).
async fn proxy(target: String) -> (String, CancellationToken) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = format!("http://{}", l.local_addr().unwrap());
    let stop = CancellationToken::new();
    let st = stop.clone();
    let target = target.trim_start_matches("http://").to_string();
    tokio::spawn(async move {
        loop {
            let (mut inbound, _) = tokio::select! {
                _ = st.cancelled() => return,
                a = l.accept() => match a { Ok(x) => x, Err(_) => return },
            };
            let (st, target) = (st.clone(), target.clone());
            tokio::spawn(async move {
                let Ok(mut out) = tokio::net::TcpStream::connect(&target).await else { return };
                tokio::select! {
                    _ = st.cancelled() => {}
                    _ = tokio::io::copy_bidirectional(&mut inbound, &mut out) => {}
                }
            });
        }
    });
    (addr, stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_prometheus_is_reported_with_the_age_of_the_last_data() {
    let url = url();
    let (purl, stop) = proxy(url.clone()).await;
    let mut s = ClusterState::new(Default::default(), Default::default());
    let mut c = cfg(&purl);
    c.backfill = Duration::ZERO;
    let mut stopped = false;
    let updates = drive(c, &mut s, 90, |u, st| {
        if !stopped && first_refresh(u, st) {
            stop.cancel();
            stopped = true;
        }
        matches!(u, Update::Status(x) if x.error.is_some())
    })
    .await;
    let err = last_status(&updates).unwrap().error.clone().unwrap();
    let prefix = format!("prometheus: connection refused at {purl} — is it running? (last data ");
    assert!(err.starts_with(&prefix) && err.ends_with(" s ago)"), "{err}");
    // The console keeps the data, says how stale it is, and lists the outage as an incident.
    let src = s.sources.iter().find(|x| x.name == "prom").unwrap();
    assert!(src.ok_at.is_some());
    assert_eq!(s.nodes.len(), 16);
    assert!(s.node("gpu-008").unwrap().gpus[4].temp_c.is_some());
    let i = incident(&s, "prom", "prometheus: connection refused");
    assert_eq!(i.severity, gpuplane::state::Severity::Critical);
    let mut app = gpuplane::tui::app::App::new(
        s,
        gpuplane::tui::keymap::Keymap::builtin("default"),
        gpuplane::tui::theme::Theme::builtin("dark"),
        gpuplane::tui::widgets::Glyphs::UNICODE,
        "ops".into(),
    );
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 30)).unwrap();
    let wall = app.state().now;
    term.draw(|f| gpuplane::tui::draw::draw(f, &mut app, wall)).unwrap();
    let screen = format!("{}", term.backend());
    assert!(screen.contains("prom stale"), "{screen}");
    // Never up at all (a closed port): tests/hermetic/prom_recorded.rs, which needs no Prometheus.
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promql_syntax_error_is_shown_verbatim_and_the_rest_still_arrives() {
    let url = url();
    let mut c = cfg(&url);
    c.backfill = Duration::ZERO;
    c.metrics.ib_state = "node_infiniband_state_id{".into();
    let q = prom::queries::promql(&c, prom::queries::Family::IbState);
    let direct = PromClient::new(&c).unwrap().query(&q, None).await.unwrap_err();
    let mut s = ClusterState::new(Default::default(), Default::default());
    let updates = drive(c, &mut s, 90, first_refresh).await;
    let err = last_status(&updates).unwrap().error.clone().expect("the failed family is reported");
    assert!(direct.to_string().starts_with("bad_data: invalid parameter \"query\": "), "{direct}");
    assert!(err.contains(&format!("ib_state: {direct}")), "{err}\nvs {direct}");
    // The first refresh reads every rotating family too (22 queries).
    assert!(err.starts_with("prometheus: partial data, 1 of 22 queries failed: "), "{err}");
    // The other families arrived: GPU telemetry, and ports from their rate family.
    assert!(s.node("gpu-008").unwrap().gpus[4].temp_c.is_some());
    assert_eq!(s.node("gpu-010").unwrap().ports.len(), 8);
    incident(&s, "gpu-005/gpu0", "XID 43");
}

/// `gpuplane get` on a Prometheus-only set-up: the discovered nodes and the incidents.
#[test]
fn get_reads_prometheus_alone() {
    let url = url();
    let dir = tempfile::tempdir().unwrap();
    let get = |args: &[&str]| {
        let out = common::gpuplane_cmd(dir.path())
            .arg("get")
            .args(args)
            .args(["--prometheus", &url])
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let nodes: serde_json::Value = serde_json::from_str(&get(&["nodes", "-o", "json"])).unwrap();
    assert_eq!(nodes.as_array().unwrap().len(), 16);
    let incidents = get(&["incidents", "-o", "csv"]);
    assert!(incidents.contains("double-bit ECC") || incidents.contains("XID"), "{incidents}");
    assert!(incidents.contains("flapping"), "{incidents}");
    // A closed port (exit status 2 and the reason): tests/hermetic/prom_recorded.rs.
}

/// `(alertname, Hostname, gpu)` of each firing alert, as the server's own `ALERTS` series say.
async fn firing_alerts_oracle(url: &str) -> Vec<(String, String, String)> {
    let mut v: Vec<(String, String, String)> = query(url, r#"ALERTS{alertstate="firing"}"#)
        .await
        .into_iter()
        .map(|(l, _)| {
            let get = |k: &str| l.get(k).cloned().unwrap_or_default();
            (get("alertname"), get("Hostname"), get("gpu"))
        })
        .collect();
    v.sort();
    v
}

/// Without an Alertmanager, Prometheus's own alerts (`/api/v1/alerts`) are the Alerts view's: every
/// alert the server's `ALERTS` series say is firing, said to come from Prometheus, read-only, and
/// among the incidents.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_alertmanager_the_alerts_are_prometheuss_own() {
    let url = url();
    let mut c = cfg(&url);
    c.alerts = true;
    let mut state = ClusterState::new(Default::default(), Default::default());
    drive(c, &mut state, 60, first_refresh).await;
    let want = firing_alerts_oracle(&url).await;
    assert!(!want.is_empty(), "the planted history fires alerts");
    let mut got: Vec<(String, String, String)> = state
        .alerts
        .iter()
        .filter(|a| a.state == gpuplane::model::alert::AlertState::Active)
        .map(|a| {
            let get = |k: &str| a.label(k).unwrap_or("").to_string();
            (a.name.to_string(), get("Hostname"), get("gpu"))
        })
        .collect();
    got.sort();
    assert_eq!(got, want);
    assert_eq!(state.alerts_origin, Some(gpuplane::model::alert::AlertOrigin::Prometheus));
    let title = gpuplane::tui::views::alerts::title(&state);
    assert!(title.contains(&format!("from Prometheus, read-only ({} firing", want.len())), "{title}");
    assert!(!gpuplane::tui::views::alerts::can_silence(&state));
    let alert_incidents = state.incidents.iter().filter(|i| i.signal.starts_with("alert:")).count();
    assert_eq!(alert_incidents, want.len());
}

/// `gpuplane get alerts` with Prometheus and no Alertmanager lists Prometheus's firing alerts.
#[test]
fn get_alerts_reads_prometheus_without_alertmanager() {
    let url = url();
    let dir = tempfile::tempdir().unwrap();
    let out = common::gpuplane_cmd(dir.path())
        .args(["get", "alerts", "-o", "json", "--prometheus", &url])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let firing = rows.as_array().unwrap().iter().filter(|r| r["state"] == "active").count();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let want = rt.block_on(firing_alerts_oracle(&url));
    assert_eq!(firing, want.len(), "{rows:#}");
}

/// The detail pane's history comes from `query_range` for what it shows and nothing else: no
/// focus, no history; a node's and then one GPU's last hour arrive, equal to the same range
/// queried directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_is_range_queried_for_the_focus_only() {
    use gpuplane::model::protocol::{Focus, FocusHistory};
    let url = url();
    let (tx, mut rx) = mpsc::channel(1024);
    let (focus_tx, focus_rx) = tokio::sync::watch::channel(None);
    let cancel = CancellationToken::new();
    let mut c = cfg(&url);
    c.backfill = Duration::from_secs(60);
    tokio::spawn(prom::run_with_focus(c, tx, cancel.clone(), Some(focus_rx)));
    let mut next_history = async |secs: u64, refreshes: &mut u32| -> Option<FocusHistory> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Err(_) => return None,
                Ok(None) => panic!("the backend stopped"),
                Ok(Some(Update::History(h))) => return Some(*h),
                Ok(Some(Update::Delta(_))) => *refreshes += 1,
                Ok(Some(_)) => {}
            }
        }
    };
    // Nothing on screen: refreshes come, history does not.
    let mut refreshes = 0;
    assert!(next_history(4, &mut refreshes).await.is_none());
    assert!(refreshes >= 2, "the backend refreshed meanwhile: {refreshes}");

    // Every point equals the direct range query, but the newest (its samples may still arrive).
    async fn direct(url: &str, q: &str, h: &FocusHistory) -> Vec<Option<f32>> {
        let c = PromClient::new(&cfg(url)).unwrap();
        let n = h.series[0].values.len();
        let end = h.start + (n as i64 - 1) * i64::from(h.step);
        let body = c.query_range(q, h.start as f64, end as f64, f64::from(h.step)).await.unwrap();
        let r = body.parse().unwrap();
        let mut v = vec![None; n];
        for s in r.results.iter() {
            for p in s.points {
                v[((p.t - h.start as f64) / f64::from(h.step)).round() as usize] = Some(p.v as f32);
            }
        }
        v
    }
    let close = |a: &[Option<f32>], b: &[Option<f32>]| {
        a.len() == b.len()
            && a[..a.len() - 1].iter().zip(&b[..b.len() - 1]).all(|(x, y)| match (x, y) {
                (Some(x), Some(y)) => (x - y).abs() < 1e-3,
                (None, None) => true,
                _ => false,
            })
    };
    focus_tx.send_replace(Some(Focus::Node("gpu-003".into())));
    let h = next_history(20, &mut refreshes).await.expect("the node's history");
    assert_eq!(h.focus, Focus::Node("gpu-003".into()));
    assert_eq!((h.step, h.series[0].values.len()), (30, 121), "one hour at 30 s");
    let util = h.series("util").unwrap();
    assert!(util.iter().flatten().count() > 100, "the hour is filled: {util:?}");
    let want =
        direct(&url, "avg(max by (Hostname, gpu) (DCGM_FI_DEV_GPU_UTIL{Hostname=\"gpu-003\"}))", &h).await;
    assert!(close(util, &want), "\n{util:?}\n{want:?}");
    let want =
        direct(&url, "sum(max by (Hostname, gpu) (DCGM_FI_DEV_POWER_USAGE{Hostname=\"gpu-003\"}))", &h).await;
    assert!(close(h.series("power").unwrap(), &want));
    // NVLink throughput (read only for what is on screen): the node's GPUs summed, GB/s.
    let want = direct(
        &url,
        "sum(max by (Hostname, gpu) (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{Hostname=\"gpu-003\"})) / 1000",
        &h,
    )
    .await;
    let nvl = h.series("nvlink").expect("NVLink throughput");
    assert!(close(nvl, &want), "\n{nvl:?}\n{want:?}");
    assert!(nvl.iter().flatten().any(|v| *v > 0.0), "gpu-003 trains over NVLink: {nvl:?}");

    // The hot GPU: its temperature history, and nothing of the node's any more.
    focus_tx.send_replace(Some(Focus::Gpu("gpu-008".into(), 4)));
    let h = next_history(20, &mut refreshes).await.expect("the GPU's history");
    assert_eq!(h.focus, Focus::Gpu("gpu-008".into(), 4));
    let want = direct(&url, "max(DCGM_FI_DEV_GPU_TEMP{Hostname=\"gpu-008\",gpu=\"4\"})", &h).await;
    assert!(close(h.series("temp").unwrap(), &want), "{:?}\n{want:?}", h.series("temp"));
    // The heatmap's strip: the fleet's mean utilisation over the hour.
    focus_tx.send_replace(Some(Focus::Fleet));
    let h = next_history(20, &mut refreshes).await.expect("the fleet's history");
    assert_eq!(h.focus, Focus::Fleet);
    let want = direct(&url, "avg(max by (Hostname, gpu) (DCGM_FI_DEV_GPU_UTIL))", &h).await;
    assert!(close(h.series("util").unwrap(), &want), "{:?}\n{want:?}", h.series("util"));
    // Closing the pane stops the range queries.
    focus_tx.send_replace(None);
    assert!(next_history(3, &mut refreshes).await.is_none());
    cancel.cancel();
}

/// Raw samples of `series` over the last 25 h, per `(host, device/port)` of the node exporter's
/// series (the host is the instance without its port).
async fn port_samples(url: &str, series: &str) -> Vec<((String, String), Vec<(f64, f64)>)> {
    let c = PromClient::new(&cfg(url)).unwrap();
    let body = c.query(&format!("{series}[25h]"), None).await.unwrap();
    let r = body.parse().unwrap();
    r.results
        .iter()
        .filter_map(|s| {
            let host = s.label("instance")?.split(':').next()?.to_string();
            let port = format!("{}/{}", s.label("device")?, s.label("port").unwrap_or("1"));
            Some(((host, port), s.points.iter().map(|p| (p.t, p.v)).collect()))
        })
        .collect()
}

/// Port events are dated by the port's own series (issue 30, finding 7): a port not Active at
/// the port's first raw sample in that state, a flapping port at the first link-down of its
/// current flapping stretch (link-downs no further apart than the flap window, the last one
/// inside it), both worked out here from the raw samples, within one dating step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_events_carry_the_series_change_time() {
    use gpuplane::model::timeline::EventKind;
    let url = url();
    let c = cfg(&url);
    let (window, limit) = (c.window.as_secs() as f64, gpuplane::state::Thresholds::default().flap_count);
    let now = jiff::Timestamp::now().as_second() as f64;
    // Down now: the state's newest value is neither 4 (Active) nor 5 (ActDefer).
    let mut down = Vec::new();
    for (key, pts) in port_samples(&url, "node_infiniband_state_id").await {
        let Some(&(_, last)) = pts.last() else { continue };
        let run = pts.iter().rev().take_while(|p| p.1 == last).count();
        if last != 4.0 && last != 5.0 && run < pts.len() {
            down.push((key, pts[pts.len() - run].0));
        }
    }
    // Flapping now: at least `limit` link-downs within the window; since the stretch's first.
    let mut flapping = Vec::new();
    for (key, pts) in port_samples(&url, "node_infiniband_link_downed_total").await {
        // The first sample of each new counter value: when the link went down.
        let downs: Vec<(f64, f64)> =
            pts.windows(2).filter(|w| w[1].1 > w[0].1).map(|w| (w[1].0, w[1].1)).collect();
        let in_window = pts.iter().find(|p| p.0 >= now - window).map(|p| p.1);
        let (Some(&(last_t, last_v)), Some(from)) = (downs.last(), in_window) else { continue };
        // (A link-down at the window's first sample counts too: increase() sees it.)
        let before = pts.iter().rev().find(|p| p.0 < now - window).map_or(from, |p| p.1);
        if last_v - before < limit as f64 || last_t < now - window {
            continue;
        }
        let mut since = last_t;
        for d in downs.iter().rev().skip(1) {
            if since - d.0 > window {
                break;
            }
            since = d.0;
        }
        flapping.push((key, since));
    }
    assert!(!flapping.is_empty(), "the planted flapping port is older than the window: restart Prometheus");

    let mut s = ClusterState::new(Default::default(), Default::default());
    drive(cfg(&url), &mut s, 90, first_refresh).await;
    let (events, _) = s.timeline.take_unsent();
    let step = gpuplane::backend::prom::DATING.1 as f64;
    for (kind, want) in [(EventKind::PortDown, &down), (EventKind::PortFlap, &flapping)] {
        for ((host, port), t) in want {
            let subject = format!("{host}/{port}");
            let e = events
                .iter()
                .find(|e| e.kind == kind && e.subject == subject)
                .unwrap_or_else(|| panic!("no {kind:?} event for {subject}: {events:#?}"));
            let d = e.at as f64 - t;
            assert!((0.0..=step).contains(&d), "{subject}: at {} vs the series' change at {t} ({d} s)", e.at);
        }
    }
}
