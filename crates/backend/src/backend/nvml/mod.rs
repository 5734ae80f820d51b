//! The local node's GPUs through NVML (nvml-wrapper): identity, telemetry, ECC, MIG, NVLink,
//! the `nvidia-smi topo -m` matrix and which pod or Slurm job owns each GPU process.
//!
//! Alone (no scheduler or Prometheus configured), it sends the node as an [`Inventory`];
//! joined to another source ([`NvmlConfig::join`]), it sends [`Delta`]s for this host only,
//! so a scheduler's listing of the same node gains the local telemetry. NVML is read on the
//! blocking pool, never on the UI task. A GPU that stops answering (`GpuLost`) is reported
//! lost and polling continues; a host without the driver gets one plain notice when the
//! local source was asked for, and nothing at all otherwise.
//!
//! The richer per-GPU data the model has no field for (clocks, throttle reasons, NVLink
//! counters, processes and owners) is kept in [`latest`] for views to read.

pub mod owner;
mod read;
pub mod topo;

pub use crate::model::throttle_names;
pub use owner::{Owner, Qos};
pub use read::{GpuProcess, LocalGpu, LocalSnapshot, MigInstance, NvLinkInfo, Reader, Remapped};

use crate::model::protocol::{Delta, GpuSample, Inventory, NodeSample, SourceStatus, Update};
use crate::model::{Gpu, GpuLocal, GpuProc, MigSlice, Node, NodeState, Text, XidEvent};
use nvml_wrapper::error::NvmlError;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::mpsc::Sender;
use tokio_util::sync::CancellationToken;

/// The source name in the header.
pub const SOURCE: &str = "nvml";

/// XID 79 ("GPU has fallen off the bus") is what the kernel logs when NVML starts answering
/// `GpuLost`; a lost GPU is shown with it so the existing failure marking applies.
pub const LOST_XID: u16 = 79;

/// How to run the local source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvmlConfig {
    /// The NVML library; `None`: the system's `libnvidia-ml.so.1`.
    pub lib_path: Option<PathBuf>,
    /// `--local`: the operator asked for this source, so say plainly when it is unavailable.
    pub explicit: bool,
    /// Another source lists the nodes: send telemetry deltas for this host, not an inventory.
    pub join: bool,
    pub interval: Duration,
    /// The node's name; `None`: this host's short hostname (as Slurm and Kubernetes name it).
    pub node_name: Option<String>,
    pub proc_root: PathBuf,
    pub passwd: PathBuf,
    /// Where sysfs is (NIC ↔ GPU affinity from the PCI tree).
    pub sys_root: PathBuf,
}

impl Default for NvmlConfig {
    fn default() -> Self {
        Self {
            lib_path: None,
            explicit: false,
            join: false,
            interval: Duration::from_secs(1),
            node_name: None,
            proc_root: PathBuf::from("/proc"),
            passwd: PathBuf::from("/etc/passwd"),
            sys_root: PathBuf::from("/sys"),
        }
    }
}

/// Why the local source cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    #[error("nvml: no NVIDIA driver on this host ({0} not found)")]
    NoLibrary(String),
    #[error("nvml: the NVIDIA driver is not loaded")]
    DriverNotLoaded,
    #[error("nvml: no NVIDIA GPU on this host (the driver reports none)")]
    NoDevices,
    #[error("nvml: no permission to talk to the NVIDIA driver")]
    NoPermission,
    #[error("nvml: {0}")]
    Failed(String),
}

impl Unavailable {
    fn from_init(e: &NvmlError, lib: Option<&Path>) -> Self {
        match e {
            NvmlError::LibloadingError(_) | NvmlError::LibraryNotFound => {
                Self::NoLibrary(lib.map_or_else(|| "libnvidia-ml.so.1".into(), |p| p.display().to_string()))
            }
            NvmlError::DriverNotLoaded => Self::DriverNotLoaded,
            NvmlError::NoPermission => Self::NoPermission,
            other => Self::Failed(other.to_string()),
        }
    }
}

static LATEST: RwLock<Option<Arc<LocalSnapshot>>> = RwLock::new(None);

/// The newest read of the local node, when the local source runs.
pub fn latest() -> Option<Arc<LocalSnapshot>> {
    LATEST.read().ok()?.clone()
}

/// The local GPUs' compute processes and their owners (empty without the local source).
pub fn processes() -> Vec<GpuProcess> {
    latest().map(|s| s.processes()).unwrap_or_default()
}

fn publish(s: &Arc<LocalSnapshot>) {
    if let Ok(mut l) = LATEST.write() {
        *l = Some(s.clone());
    }
}

/// This host's name up to the first dot.
pub fn short_hostname() -> Text {
    let h = hostname::get().map(|h| h.to_string_lossy().into_owned()).unwrap_or_else(|_| "localhost".into());
    Text::from(h.split('.').next().unwrap_or("localhost"))
}

fn status(detail: Option<Text>, error: Option<String>, ok_at: Option<i64>) -> SourceStatus {
    SourceStatus { cluster: Default::default(), name: SOURCE.into(), simulated: false, ok_at, error, detail }
}

/// The model's node for a snapshot (the standalone inventory).
pub fn node_of(s: &LocalSnapshot) -> Node {
    let gpus: Vec<Gpu> = s
        .gpus
        .iter()
        .map(|g| Gpu {
            index: g.index,
            uuid: g.uuid.clone(),
            model: g.name.clone(),
            mem_total_mib: g.mem_total_mib,
            mem_used_mib: g.mem_used_mib,
            util: g.util,
            tensor_active: None,
            temp_c: g.temp_c,
            power_w: g.power_w,
            power_limit_w: g.power_limit_w.unwrap_or(0),
            ecc: g.ecc.unwrap_or_default(),
            ecc_at: None,
            xid: lost_xid(g, s.at),
            mig: g.mig.iter().map(|m| MigSlice { profile: m.profile.clone(), job: None }).collect(),
            job: None,
            links: g.link_errors.unwrap_or_default(),
            idle_since: None,
            processes: g.processes.iter().map(proc_of).collect(),
            local: Some(Box::new(local_of(g))),
        })
        .collect();
    let busy = s.gpus.iter().filter(|g| !g.processes.is_empty()).count() as u32;
    let n = gpus.len() as u32;
    let state = match busy {
        0 => NodeState::Idle,
        b if b >= n => NodeState::Allocated,
        _ => NodeState::Mixed,
    };
    Node {
        cluster: Default::default(),
        name: s.host.clone(),
        state,
        reason: None,
        pool: "local".into(),
        labels: Default::default(),
        cpus_total: std::thread::available_parallelism().map_or(0, |c| c.get() as u32),
        cpus_alloc: 0,
        mem_total_mib: mem_total_mib().unwrap_or(0),
        mem_alloc_mib: 0,
        gpu_slots: n,
        gpu_alloc: busy,
        gpus,
        topology: Some(s.topology.clone()),
        ports: vec![],
        driver: s.driver.clone(),
        cuda: s.cuda.clone(),
    }
}

/// A lost GPU reads as XID 79; otherwise the newest XID event, if any.
fn lost_xid(g: &LocalGpu, at: i64) -> Option<XidEvent> {
    match (&g.lost, g.xid) {
        (Some(_), _) => Some(XidEvent { code: LOST_XID, at, count: 1 }),
        (None, Some((code, at, count))) => Some(XidEvent { code, at, count }),
        (None, None) => None,
    }
}

/// Telemetry for this host (joined to another source, and every tick after the inventory).
pub fn sample_of(s: &LocalSnapshot) -> NodeSample {
    NodeSample {
        node: s.host.clone(),
        gpus: s
            .gpus
            .iter()
            .map(|g| GpuSample {
                index: g.index,
                util: g.util,
                tensor_active: None,
                temp_c: g.temp_c,
                power_w: g.power_w,
                mem_used_mib: g.mem_used_mib,
                ecc: g.ecc,
                ecc_at: None,
                links: g.link_errors,
                xid: lost_xid(g, s.at),
                job: None,
                telemetry_job: None,
            })
            .collect(),
        processes: Some(s.gpus.iter().flat_map(|g| g.processes.iter().map(proc_of)).collect()),
        local: Some(s.gpus.iter().map(local_of).collect()),
        // The scheduler's listing has no topology: NVML's joins it (an Arc, cheap per tick).
        topology: Some(s.topology.clone()),
        ..Default::default()
    }
}

/// What only NVML reads about a GPU, in the model's terms.
fn local_of(g: &LocalGpu) -> GpuLocal {
    GpuLocal {
        index: g.index,
        clock_sm_mhz: g.clock_sm_mhz,
        clock_mem_mhz: g.clock_mem_mhz,
        throttle: g.throttle,
        mem_util: g.mem_util,
        enc_util: g.enc_util,
        dec_util: g.dec_util,
        remap_correctable: g.remapped.map(|r| r.correctable),
        remap_uncorrectable: g.remapped.map(|r| r.uncorrectable),
        remap_pending: g.remapped.is_some_and(|r| r.pending),
        remap_failure: g.remapped.is_some_and(|r| r.failure),
        retired_sbe: g.retired_sbe,
        retired_dbe: g.retired_dbe,
        mig_enabled: g.mig_enabled,
        nvlinks_active: g.nvlinks.iter().filter(|l| l.active).count().min(255) as u8,
        nvlinks: g.nvlinks.len().min(255) as u8,
    }
}

/// A GPU process in the model's terms: who runs it and who owns it.
fn proc_of(p: &GpuProcess) -> GpuProc {
    GpuProc {
        gpu: p.gpu,
        pid: p.pid,
        user: p.user.clone().or_else(|| p.uid.map(|u| Text::from(format!("uid {u}")))),
        command: p.comm.clone(),
        mem_mib: p.used_mib,
        owner: Text::from(p.owner.label()),
        pod_uid: match &p.owner {
            owner::Owner::Pod { uid, .. } => Some(uid.clone()),
            _ => None,
        },
    }
}

/// The header line for a snapshot: an error naming every lost GPU, or none.
fn lost_error(s: &LocalSnapshot) -> Option<String> {
    let lost: Vec<String> = s
        .gpus
        .iter()
        .filter_map(|g| {
            g.lost.as_ref().map(|why| format!("GPU {} ({}, {}): {why}", g.index, g.bus_id, g.uuid))
        })
        .collect();
    (!lost.is_empty()).then(|| {
        format!(
            "{} lost — drain the node and check `dmesg` for XID 79: {}",
            plural(lost.len()),
            lost.join("; ")
        )
    })
}

fn plural(n: usize) -> String {
    if n == 1 { "1 GPU".into() } else { format!("{n} GPUs") }
}

fn mem_total_mib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 =
        s.lines().find_map(|l| l.strip_prefix("MemTotal:"))?.split_whitespace().next()?.parse().ok()?;
    Some(kb / 1024)
}

/// Runs the local source until `cancel`: opens NVML (on the blocking pool), announces the
/// node, then reads it every `interval`. Unavailable, it sends its notice (when asked for)
/// and waits for `cancel` holding `tx`.
pub async fn run(cfg: NvmlConfig, tx: Sender<Update>, cancel: CancellationToken) {
    let open_cfg = cfg.clone();
    let opened = tokio::task::spawn_blocking(move || {
        Reader::open(&open_cfg).map(|mut r| {
            let s = r.read();
            (r, s)
        })
    })
    .await;
    let (mut reader, first) = match opened {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            tracing::info!("{e}");
            if cfg.explicit {
                let _ = tx.send(Update::Status(status(None, Some(e.to_string()), None))).await;
            }
            // Keep the channel open until shutdown: alone, this task may be the console's only
            // source, and the console stops reading keys once every source has hung up.
            cancel.cancelled().await;
            return;
        }
        Err(e) => {
            tracing::warn!("nvml: the reader stopped: {e}");
            cancel.cancelled().await;
            return;
        }
    };
    let detail = Some(Text::from(format!(
        "driver {} · {}",
        first.driver.as_deref().unwrap_or("?"),
        plural(first.gpus.len())
    )));
    tracing::info!(gpus = first.gpus.len(), read_us = first.read_us, "nvml: local source open");
    let mut last_error = lost_error(&first);
    if tx.send(Update::Status(status(detail.clone(), last_error.clone(), Some(first.at)))).await.is_err() {
        return;
    }
    let first = Arc::new(first);
    publish(&first);
    let update = if cfg.join {
        delta(&first)
    } else {
        Update::Inventory {
            at: first.at,
            inventory: Box::new(Inventory {
                source: SOURCE.into(),
                nodes: Some(vec![node_of(&first)]),
                ..Default::default()
            }),
        }
    };
    if tx.send(update).await.is_err() {
        return;
    }
    let mut tick = tokio::time::interval(cfg.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tick.tick() => {}
        }
        let read = tokio::task::spawn_blocking(move || {
            let s = reader.read();
            (reader, s)
        })
        .await;
        let Ok((r, snap)) = read else {
            tracing::warn!("nvml: a read panicked; the local source stops");
            let _ =
                tx.send(Update::Status(status(detail, Some("nvml: the reader stopped".into()), None))).await;
            cancel.cancelled().await;
            return;
        };
        reader = r;
        let snap = Arc::new(snap);
        publish(&snap);
        let err = lost_error(&snap);
        if err != last_error {
            if let Some(e) = &err {
                tracing::warn!("nvml: {e}");
            }
            last_error = err.clone();
            if tx.send(Update::Status(status(detail.clone(), err, Some(snap.at)))).await.is_err() {
                return;
            }
        }
        if tx.send(delta(&snap)).await.is_err() {
            return;
        }
    }
}

fn delta(s: &LocalSnapshot) -> Update {
    Update::Delta(Box::new(Delta {
        source: SOURCE.into(),
        at: s.at,
        nodes: vec![sample_of(s)],
        ..Default::default()
    }))
}
