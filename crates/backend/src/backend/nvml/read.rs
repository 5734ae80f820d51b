//! Reading the local GPUs through nvml-wrapper. Everything here blocks (NVML calls go to the
//! driver) and runs off the UI task. A field NVML does not support is `None`, never an error.

use super::owner::{self, Owner};
use super::topo::{self, Level};
use super::{NvmlConfig, Unavailable};
use crate::model::{EccCounts, Epoch, LinkErrors, LinkKind, Text, Topology};
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, RetirementCause, TemperatureSensor,
};
use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

const MIB: u64 = 1024 * 1024;
/// `NVML_NVLINK_MAX_LINKS`.
const MAX_LINKS: u32 = 18;
/// `NVML_AFFINITY_SCOPE_NODE`: affinity masks by NUMA node.
const AFFINITY_SCOPE_NODE: u32 = 0;
/// NVML field ids for remapped rows (`NVML_FI_DEV_REMAPPED_COR` … `_FAILURE`).
const FI_REMAPPED: [u32; 4] = [142, 143, 144, 145];

/// One NVLink of a GPU.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NvLinkInfo {
    pub link: u32,
    pub active: bool,
    /// PCI bus id of the far end (a GPU or an NVSwitch).
    pub remote_bus_id: Option<Text>,
    /// The local GPU at the far end, when it is one of this node's GPUs.
    pub remote_gpu: Option<u8>,
    pub replay: Option<u64>,
    pub recovery: Option<u64>,
    pub crc_flit: Option<u64>,
    pub crc_data: Option<u64>,
}

/// Row remapping (Ampere and newer), from NVML field values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Remapped {
    pub correctable: u64,
    pub uncorrectable: u64,
    pub pending: bool,
    pub failure: bool,
}

/// One MIG instance of a MIG-enabled GPU.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MigInstance {
    pub index: u32,
    /// e.g. `1g.10gb` (from the MIG device's name).
    pub profile: Text,
    pub uuid: Option<Text>,
}

/// A compute process on a GPU and who owns it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GpuProcess {
    pub gpu: u8,
    pub pid: u32,
    pub used_mib: Option<u64>,
    /// MIG GPU instance, when the process runs in one.
    pub gpu_instance: Option<u32>,
    pub comm: Option<Text>,
    pub uid: Option<u32>,
    pub user: Option<Text>,
    pub owner: Owner,
}

/// Everything NVML said about one GPU in one read.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LocalGpu {
    pub index: u8,
    pub uuid: Text,
    pub name: Text,
    pub bus_id: Text,
    pub mem_total_mib: u32,
    pub mem_used_mib: Option<u32>,
    pub util: Option<u8>,
    pub mem_util: Option<u8>,
    pub enc_util: Option<u8>,
    pub dec_util: Option<u8>,
    pub temp_c: Option<u8>,
    pub power_w: Option<u16>,
    pub power_limit_w: Option<u16>,
    pub clock_graphics_mhz: Option<u32>,
    pub clock_sm_mhz: Option<u32>,
    pub clock_mem_mhz: Option<u32>,
    /// Raw `nvmlClocksThrottleReasons` bits; see [`throttle_names`].
    pub throttle: Option<u64>,
    /// Volatile ECC counts (since the driver loaded).
    pub ecc: Option<EccCounts>,
    pub retired_sbe: Option<u32>,
    pub retired_dbe: Option<u32>,
    pub remapped: Option<Remapped>,
    pub mig_enabled: Option<bool>,
    pub mig: Vec<MigInstance>,
    pub nvlinks: Vec<NvLinkInfo>,
    pub processes: Vec<GpuProcess>,
    /// Why the GPU is unusable (NVML answered `GpuLost` or failed outright), when it is.
    pub lost: Option<String>,
    /// The newest critical XID from the event set: (code, when, how many seen).
    pub xid: Option<(u16, i64, u32)>,
    /// PCIe replays since the driver loaded.
    pub pcie_replay: Option<u64>,
    /// NVLink CRC/replay and PCIe replay errors that grew in the last [`LINK_WINDOW_S`] (as
    /// dcgm-exporter's counters' increase over Prometheus's window); `None`: no counter read.
    pub link_errors: Option<LinkErrors>,
}

/// The window link errors are counted over: Prometheus's default (`window = "1h"`), so a
/// node reads the same from either source.
pub const LINK_WINDOW_S: i64 = 3600;
/// Link counters are kept at most once a minute: ≤ 61 samples per GPU over the window.
const LINK_SAMPLE_S: i64 = 60;

/// Cumulative link counters of one GPU over the window: (when, [NVLink CRC, NVLink replay,
/// PCIe replay]).
#[derive(Debug, Default)]
struct LinkHistory(VecDeque<(Epoch, [u64; 3])>);

impl LinkHistory {
    /// Records the counters read at `now` and returns their growth since the oldest sample
    /// inside the window. A counter that went down (driver reloaded) counts from zero.
    fn observe(&mut self, now: Epoch, totals: [u64; 3]) -> LinkErrors {
        while self.0.front().is_some_and(|(t, _)| now - t > LINK_WINDOW_S) {
            self.0.pop_front();
        }
        if self.0.back().is_some_and(|(_, last)| (0..3).any(|k| totals[k] < last[k])) {
            self.0.clear();
            self.0.push_back((now, [0; 3]));
        }
        if self.0.back().is_none_or(|(t, _)| now - t >= LINK_SAMPLE_S) {
            self.0.push_back((now, totals));
        }
        let base = self.0.front().map_or(totals, |(_, b)| *b);
        let grew = |k: usize| totals[k].saturating_sub(base[k]).min(u64::from(u32::MAX)) as u32;
        LinkErrors { nvlink_crc: grew(0), nvlink_replay: grew(1), pcie_replay: grew(2) }
    }
}

/// One read of the local node.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LocalSnapshot {
    pub host: Text,
    pub at: Epoch,
    pub driver: Option<Text>,
    pub cuda: Option<Text>,
    pub gpus: Vec<LocalGpu>,
    pub topology: Arc<Topology>,
    /// How long the read took, microseconds.
    pub read_us: u64,
}

/// Whether an error means the GPU itself is gone, as opposed to one field being unsupported.
fn is_lost(e: &NvmlError) -> bool {
    matches!(e, NvmlError::GpuLost | NvmlError::Unknown | NvmlError::ResetRequired | NvmlError::Uninitialized)
}

/// What a GPU's reads found wrong, collected while reading its fields.
#[derive(Default)]
struct Health {
    lost: Option<String>,
}

impl Health {
    fn ok<T>(&mut self, r: Result<T, NvmlError>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                if is_lost(&e) && self.lost.is_none() {
                    self.lost = Some(e.to_string());
                }
                None
            }
        }
    }
}

/// What does not change while the driver is loaded.
#[derive(Debug, Clone)]
struct Fixed {
    uuid: Text,
    name: Text,
    bus_id: Text,
    mem_total_mib: u32,
    /// Far end of each link that exists: (remote bus id, local GPU there).
    links: Vec<(Option<Text>, Option<u8>)>,
}

/// An open NVML session on the local node.
pub struct Reader {
    /// Leaked once per session so the XID event set (which borrows it) can live beside it.
    nvml: &'static Nvml,
    /// Critical XID events: one set per GPU that supports them (a failed registration
    /// consumes its set, so they are not shared).
    events: Vec<nvml_wrapper::EventSet<'static>>,
    /// The newest XID per GPU: (code, when, how many seen).
    xids: HashMap<u32, (u16, i64, u32)>,
    host: Text,
    fixed: Vec<Fixed>,
    topology: Arc<Topology>,
    driver: Option<Text>,
    cuda: Option<Text>,
    proc_root: PathBuf,
    users: HashMap<u32, Text>,
    procs: HashMap<u32, owner::ProcInfo>,
    links: Vec<LinkHistory>,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("host", &self.host)
            .field("gpus", &self.fixed.len())
            .finish_non_exhaustive()
    }
}

impl Reader {
    /// Loads NVML (the configured library, or the system's `libnvidia-ml.so.1`) and reads
    /// what does not change: identities, NVLink far ends and the topology matrix.
    pub fn open(cfg: &NvmlConfig) -> Result<Self, Unavailable> {
        let nvml = match &cfg.lib_path {
            Some(p) => Nvml::builder().lib_path(p.as_os_str()).init(),
            None => Nvml::init(),
        }
        .map_err(|e| Unavailable::from_init(&e, cfg.lib_path.as_deref()))?;
        let nvml: &'static Nvml = Box::leak(Box::new(nvml));
        let n = nvml.device_count().map_err(|e| Unavailable::Failed(e.to_string()))?;
        if n == 0 {
            return Err(Unavailable::NoDevices);
        }
        let driver = nvml.sys_driver_version().ok().map(Text::from);
        let cuda = nvml.sys_cuda_driver_version().ok().map(|v| {
            Text::from(format!(
                "{}.{}",
                nvml_wrapper::cuda_driver_version_major(v),
                nvml_wrapper::cuda_driver_version_minor(v)
            ))
        });
        let mut fixed = Vec::with_capacity(n as usize);
        for i in 0..n {
            let mut h = Health::default();
            let dev = h.ok(nvml.device_by_index(i));
            let get = |f: &dyn Fn(&nvml_wrapper::Device) -> Option<String>| dev.as_ref().and_then(f);
            fixed.push(Fixed {
                uuid: Text::from(get(&|d| d.uuid().ok()).unwrap_or_default()),
                name: Text::from(get(&|d| d.name().ok()).unwrap_or_default()),
                bus_id: Text::from(get(&|d| d.pci_info().ok().map(|p| p.bus_id)).unwrap_or_default()),
                mem_total_mib: dev
                    .as_ref()
                    .and_then(|d| d.memory_info().ok())
                    .map_or(0, |m| (m.total / MIB).min(u64::from(u32::MAX)) as u32),
                links: Vec::new(),
            });
        }
        // NVLink far ends, matched to local GPUs by bus id.
        let keys: Vec<_> = fixed.iter().map(|f| topo::bus_key(&f.bus_id)).collect();
        let mut active_peers = vec![Vec::new(); n as usize];
        for i in 0..n {
            let Ok(dev) = nvml.device_by_index(i) else { continue };
            for l in 0..MAX_LINKS {
                let link = dev.link_wrapper_for(l);
                let Ok(active) = link.is_active() else { break };
                let remote = link.remote_pci_info().ok().map(|p| Text::from(p.bus_id));
                let peer = remote
                    .as_deref()
                    .and_then(topo::bus_key)
                    .and_then(|k| keys.iter().position(|x| *x == Some(k)))
                    .map(|p| p as u8);
                if active {
                    active_peers[i as usize].push(peer.map(usize::from));
                }
                fixed[i as usize].links.push((remote, peer));
            }
        }
        let devs: Vec<_> = (0..n).map(|i| nvml.device_by_index(i).ok()).collect();
        let matrix = topo::matrix(
            n as usize,
            |a, b| {
                let (da, db) = (devs[a].as_ref()?, nvml.device_by_index(b as u32).ok()?);
                da.topology_common_ancestor(db).ok().map(Level::from)
            },
            &active_peers,
        );
        let words = std::thread::available_parallelism().map_or(1, |c| c.get().div_ceil(64)).max(4);
        let cpu_affinity = devs
            .iter()
            .map(|d| {
                let w = d.as_ref().and_then(|d| d.cpu_affinity(words).ok()).unwrap_or_default();
                Text::from(topo::cpu_list(
                    &w.iter()
                        .map(|&x| {
                            #[allow(clippy::unnecessary_cast)] // c_ulong is u32 on 32-bit targets
                            let x = x as u64;
                            x
                        })
                        .collect::<Vec<_>>(),
                ))
            })
            .collect();
        // NUMA affinity as `nvidia-smi topo -m` prints it: the nearest NUMA node from the memory
        // affinity mask, else the PCI device's `numa_node` in sysfs. (nvmlDeviceGetNumaNodeId is
        // the GPU's own memory node on coherent systems; a real H200 on x86 answers N/A there.)
        let numa: Vec<Option<u8>> = devs
            .iter()
            .zip(&fixed)
            .map(|(d, f)| {
                d.as_ref()
                    .and_then(|d| d.memory_affinity(1, AFFINITY_SCOPE_NODE).ok())
                    .and_then(|w| w.first().copied())
                    .filter(|&w| w != 0)
                    .map(|w| w.trailing_zeros() as u8)
                    .or_else(|| topo::sysfs_numa(&cfg.sys_root, &f.bus_id))
            })
            .collect();
        let numa =
            if numa.iter().all(Option::is_some) { numa.into_iter().flatten().collect() } else { vec![] };
        drop(devs);
        let bus_ids: Vec<Text> = fixed.iter().map(|f| f.bus_id.clone()).collect();
        let nics = topo::nics_from_sysfs(&cfg.sys_root, &bus_ids);
        let topology = Arc::new(Topology { matrix, nics, cpu_affinity, numa });
        let users = std::fs::read_to_string(&cfg.passwd).map(|s| owner::passwd_names(&s)).unwrap_or_default();
        let host = cfg.node_name.clone().map_or_else(super::short_hostname, Text::from);
        let events = xid_events(nvml, n);
        Ok(Self {
            nvml,
            events,
            xids: HashMap::new(),
            host,
            fixed,
            topology,
            driver,
            cuda,
            proc_root: cfg.proc_root.clone(),
            users,
            procs: HashMap::new(),
            links: (0..n).map(|_| LinkHistory::default()).collect(),
        })
    }

    pub fn gpu_count(&self) -> usize {
        self.fixed.len()
    }

    pub fn topology(&self) -> &Arc<Topology> {
        &self.topology
    }

    /// Reads every GPU once. Never fails: a GPU that stops answering comes back with `lost`
    /// set and its telemetry `None`.
    pub fn read(&mut self) -> LocalSnapshot {
        let t0 = std::time::Instant::now();
        self.drain_xids();
        let mut gpus = Vec::with_capacity(self.fixed.len());
        let mut seen = Vec::new();
        let now = jiff::Timestamp::now().as_second();
        for i in 0..self.fixed.len() {
            let mut g = self.read_gpu(i, &mut seen);
            g.link_errors = link_totals(&g).map(|t| self.links[i].observe(now, t));
            gpus.push(g);
        }
        self.procs.retain(|pid, _| seen.contains(pid));
        LocalSnapshot {
            host: self.host.clone(),
            at: now,
            driver: self.driver.clone(),
            cuda: self.cuda.clone(),
            gpus,
            topology: self.topology.clone(),
            read_us: t0.elapsed().as_micros() as u64,
        }
    }

    /// Takes every XID event queued since the last read (never waits).
    fn drain_xids(&mut self) {
        let now = jiff::Timestamp::now().as_second();
        for set in &self.events {
            for _ in 0..1024 {
                let Ok(ev) = set.wait(0) else { break };
                let (Ok(idx), Some(nvml_wrapper::enums::event::XidError::Value(code))) =
                    (ev.device.index(), ev.event_data)
                else {
                    continue;
                };
                let code = code.min(u64::from(u16::MAX)) as u16;
                let e = self.xids.entry(idx).or_insert((code, now, 0));
                *e = (code, now, e.2 + 1);
            }
        }
    }

    fn read_gpu(&mut self, i: usize, seen: &mut Vec<u32>) -> LocalGpu {
        let f = &self.fixed[i];
        let mut g = LocalGpu {
            index: i as u8,
            uuid: f.uuid.clone(),
            name: f.name.clone(),
            bus_id: f.bus_id.clone(),
            mem_total_mib: f.mem_total_mib,
            mem_used_mib: None,
            util: None,
            mem_util: None,
            enc_util: None,
            dec_util: None,
            temp_c: None,
            power_w: None,
            power_limit_w: None,
            clock_graphics_mhz: None,
            clock_sm_mhz: None,
            clock_mem_mhz: None,
            throttle: None,
            ecc: None,
            retired_sbe: None,
            retired_dbe: None,
            remapped: None,
            mig_enabled: None,
            mig: vec![],
            nvlinks: vec![],
            processes: vec![],
            lost: None,
            xid: self.xids.get(&(i as u32)).copied(),
            pcie_replay: None,
            link_errors: None,
        };
        let mut h = Health::default();
        let Some(d) = h.ok(self.nvml.device_by_index(i as u32)) else {
            g.lost = Some(h.lost.unwrap_or_else(|| "no handle".into()));
            return g;
        };
        // Utilisation first: a GPU that has fallen off the bus fails here, and nothing else
        // is asked of it this round.
        if let Some(u) = h.ok(d.utilization_rates()) {
            g.util = Some(u.gpu.min(100) as u8);
            g.mem_util = Some(u.memory.min(100) as u8);
        }
        if let Some(lost) = h.lost {
            g.lost = Some(lost);
            return g;
        }
        let pct = |v: u32| v.min(100) as u8;
        g.mem_used_mib = h.ok(d.memory_info()).map(|m| (m.used / MIB).min(u64::from(u32::MAX)) as u32);
        g.enc_util = h.ok(d.encoder_utilization()).map(|u| pct(u.utilization));
        g.dec_util = h.ok(d.decoder_utilization()).map(|u| pct(u.utilization));
        g.temp_c = h.ok(d.temperature(TemperatureSensor::Gpu)).map(|t| t.min(255) as u8);
        g.power_w = h.ok(d.power_usage()).map(|mw| (mw / 1000).min(u32::from(u16::MAX)) as u16);
        g.power_limit_w =
            h.ok(d.enforced_power_limit()).map(|mw| (mw / 1000).min(u32::from(u16::MAX)) as u16);
        g.clock_graphics_mhz = h.ok(d.clock_info(Clock::Graphics));
        g.clock_sm_mhz = h.ok(d.clock_info(Clock::SM));
        g.clock_mem_mhz = h.ok(d.clock_info(Clock::Memory));
        g.throttle = h.ok(d.current_throttle_reasons()).map(|r| r.bits());
        let sbe = h.ok(d.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile));
        let dbe = h.ok(d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile));
        if sbe.is_some() || dbe.is_some() {
            let c = |v: Option<u64>| v.unwrap_or(0).min(u64::from(u32::MAX)) as u32;
            g.ecc = Some(EccCounts { sbe: c(sbe), dbe: c(dbe) });
        }
        g.retired_sbe =
            h.ok(d.retired_pages(RetirementCause::MultipleSingleBitEccErrors)).map(|v| v.len() as u32);
        g.retired_dbe = h.ok(d.retired_pages(RetirementCause::DoubleBitEccError)).map(|v| v.len() as u32);
        g.remapped = h
            .ok(d.field_values_for(&FI_REMAPPED.map(nvml_wrapper::structs::device::FieldId)))
            .and_then(|vals| {
                let v: Vec<Option<u64>> = vals
                    .into_iter()
                    .map(|s| s.ok().and_then(|s| s.value.ok()).and_then(|v| field_u64(&v)))
                    .collect();
                let [Some(c), Some(u), p, fl] = v[..] else { return None };
                Some(Remapped {
                    correctable: c,
                    uncorrectable: u,
                    pending: p.unwrap_or(0) != 0,
                    failure: fl.unwrap_or(0) != 0,
                })
            });
        g.mig_enabled = h.ok(d.mig_mode()).map(|m| m.current == 1);
        if g.mig_enabled == Some(true) {
            let max = h.ok(d.mig_device_count()).unwrap_or(0);
            for k in 0..max {
                let Ok(m) = d.mig_device_by_index(k) else { continue };
                let name = m.name().unwrap_or_default();
                let profile = name.rsplit_once("MIG ").map_or(name.as_str(), |(_, p)| p).trim();
                g.mig.push(MigInstance {
                    index: k,
                    profile: Text::from(profile),
                    uuid: m.uuid().ok().map(Text::from),
                });
            }
        }
        for (l, (remote, peer)) in f.links.iter().enumerate() {
            let link = d.link_wrapper_for(l as u32);
            let active = h.ok(link.is_active()).unwrap_or(false);
            let e = |c| link.error_counter(c).ok();
            g.nvlinks.push(NvLinkInfo {
                link: l as u32,
                active,
                remote_bus_id: remote.clone(),
                remote_gpu: *peer,
                replay: e(ErrorCounter::DlReplay),
                recovery: e(ErrorCounter::DlRecovery),
                crc_flit: e(ErrorCounter::DlCrcFlit),
                crc_data: e(ErrorCounter::DlCrcData),
            });
        }
        g.pcie_replay = h.ok(d.pcie_replay_counter()).map(u64::from);
        for p in h.ok(d.running_compute_processes()).unwrap_or_default() {
            seen.push(p.pid);
            let info = self.procs.entry(p.pid).or_insert_with(|| owner::read_proc(&self.proc_root, p.pid));
            g.processes.push(GpuProcess {
                gpu: i as u8,
                pid: p.pid,
                used_mib: match p.used_gpu_memory {
                    UsedGpuMemory::Used(b) => Some(b / MIB),
                    UsedGpuMemory::Unavailable => None,
                },
                gpu_instance: p.gpu_instance_id,
                comm: info.comm.clone(),
                uid: info.uid,
                user: info.uid.and_then(|u| self.users.get(&u).cloned()),
                owner: info.owner.clone(),
            });
        }
        g.lost = h.lost;
        g
    }
}

/// The GPU's cumulative [NVLink CRC (flit + data), NVLink replay, PCIe replay] counters;
/// `None` when it reported none of them (a lost GPU, or a driver without the counters).
fn link_totals(g: &LocalGpu) -> Option<[u64; 3]> {
    let mut any = g.pcie_replay.is_some();
    let mut t = [0, 0, g.pcie_replay.unwrap_or(0)];
    for l in &g.nvlinks {
        for (k, v) in [(0, l.crc_flit), (0, l.crc_data), (1, l.replay)] {
            if let Some(v) = v {
                any = true;
                t[k] = t[k].saturating_add(v);
            }
        }
    }
    (any && g.lost.is_none()).then_some(t)
}

fn field_u64(v: &nvml_wrapper::enums::device::SampleValue) -> Option<u64> {
    use nvml_wrapper::enums::device::SampleValue as V;
    Some(match *v {
        V::F64(x) => x as u64,
        V::U32(x) => u64::from(x),
        V::U64(x) => x,
        V::I64(x) => x.max(0) as u64,
    })
}

impl LocalSnapshot {
    /// All compute processes on all GPUs.
    pub fn processes(&self) -> Vec<GpuProcess> {
        self.gpus.iter().flat_map(|g| g.processes.iter().cloned()).collect()
    }

    /// The link kind from GPU `i` to GPU `j`.
    pub fn link(&self, i: usize, j: usize) -> Option<LinkKind> {
        self.topology.matrix.get(i)?.get(j).copied()
    }
}

/// One event set per GPU that supports critical XID events (none where the driver does not).
fn xid_events(nvml: &'static Nvml, n: u32) -> Vec<nvml_wrapper::EventSet<'static>> {
    use nvml_wrapper::bitmasks::event::EventTypes;
    (0..n)
        .filter_map(|i| {
            let dev = nvml.device_by_index(i).ok()?;
            let set = nvml.create_event_set().ok()?;
            dev.register_events(EventTypes::CRITICAL_XID_ERROR, set).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_errors_are_the_growth_inside_the_window() {
        let mut h = LinkHistory::default();
        // Counters since boot are history, not news: the first read is the baseline.
        assert_eq!(h.observe(1000, [500, 7, 90]), LinkErrors::default());
        assert_eq!(
            h.observe(1001, [503, 7, 150]),
            LinkErrors { nvlink_crc: 3, nvlink_replay: 0, pcie_replay: 60 }
        );
        // Samples are kept once a minute; growth is still counted from the window's oldest.
        assert_eq!(h.observe(1070, [510, 9, 150]).nvlink_crc, 10);
        assert!(h.0.len() <= 2, "{:?}", h.0);
        // An hour after the baseline it leaves the window: growth counts from 1070.
        let e = h.observe(1000 + LINK_WINDOW_S + 5, [520, 9, 150]);
        assert_eq!(e, LinkErrors { nvlink_crc: 10, nvlink_replay: 0, pcie_replay: 0 });
        // Quiet for a whole window: nothing grew.
        assert_eq!(h.observe(1070 + 3 * LINK_WINDOW_S, [520, 9, 150]), LinkErrors::default());
    }

    #[test]
    fn a_counter_that_goes_down_counts_from_zero() {
        let mut h = LinkHistory::default();
        h.observe(0, [100, 100, 100]);
        // The driver reloaded: counters restart; what they show now is new.
        assert_eq!(h.observe(30, [4, 0, 0]), LinkErrors { nvlink_crc: 4, nvlink_replay: 0, pcie_replay: 0 });
        assert_eq!(h.observe(40, [6, 0, 0]).nvlink_crc, 6);
    }

    #[test]
    fn samples_stay_bounded() {
        let mut h = LinkHistory::default();
        for t in 0..20_000 {
            h.observe(t, [t as u64, 0, 0]);
        }
        assert!(h.0.len() <= (LINK_WINDOW_S / LINK_SAMPLE_S + 2) as usize, "{}", h.0.len());
    }
}
