//! Query answers → model: per-node GPU samples, fabric ports and the storage list of one refresh,
//! and (Prometheus alone) the node inventory discovered from the series.
//!
//! Series are joined by the mapped host name (see [`HostMap`](super::config::HostMap)) and the
//! GPU index or `device/port`. Sparse families (filtered `> 0` server-side) count as zero for
//! every GPU/port the dense families reported.

use super::api::{Point, Results, Series};
use super::config::PromConfig;
use super::queries::{Family, unpack};
use crate::backend::{GpuSample, NodeSample};
use crate::model::{
    EccCounts, Epoch, FabricKind, FabricPort, Filesystem, Gpu, Job, JobId, JobState, LinkErrors, Node,
    NodeState, PortState, StorageKind, Text, XidEvent,
};
use crate::sanitize::sanitize;
use std::collections::{BTreeMap, HashMap};

type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Allocation labels of a series: `hpc_job`, `pod`, `namespace`.
type AllocKey<'r> = (Option<&'r str>, Option<&'r str>, Option<&'r str>);

/// Who holds a GPU, from dcgm-exporter's allocation labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Alloc {
    Slurm(JobId),
    Pod { namespace: Text, pod: Text },
}

impl Alloc {
    /// Slurm job ids are numbers; a pod gets a stable FNV-1a hash of `namespace/pod` with the top
    /// bit set, so it never collides with a Slurm id.
    pub fn id(&self) -> JobId {
        match self {
            Alloc::Slurm(id) => *id,
            Alloc::Pod { namespace, pod } => {
                let mut h: u64 = 0xcbf2_9ce4_8422_2325;
                for b in namespace.bytes().chain([b'/']).chain(pod.bytes()) {
                    h ^= u64::from(b);
                    h = h.wrapping_mul(0x0100_0000_01b3);
                }
                h | (1 << 63)
            }
        }
    }
}

#[derive(Debug, Clone, Default)]
struct GpuAcc {
    s: GpuSample,
    seen_util: bool,
    sbe: Option<u32>,
    dbe: Option<u32>,
    nvl_crc: Option<u32>,
    nvl_replay: Option<u32>,
    pcie_replay: Option<u32>,
    xid: Option<u16>,
    xid_count: Option<u32>,
    /// The allocation's id ([`Refresh::allocs`] holds the allocation).
    alloc: Option<JobId>,
}

/// One port's samples in this refresh (`None`: not in the answer, or the family not asked).
#[derive(Debug, Clone, Default)]
struct PortAcc {
    name: Text,
    state: Option<f64>,
    rate: Option<f64>,
    symbol: Option<u64>,
    rcv: Option<u64>,
    xmit: Option<u64>,
    downed: Option<u64>,
    flaps: Option<u32>,
    rx_mbps: Option<f64>,
    tx_mbps: Option<f64>,
}

#[derive(Debug, Clone, Default)]
struct NodeAcc {
    name: Text,
    gpus: smallvec::SmallVec<[GpuAcc; 8]>,
    ports: Vec<PortAcc>,
}

#[derive(Debug, Clone, Default)]
struct FsAcc {
    host: Option<Text>,
    mount: Text,
    fstype: Text,
    device: Text,
    size: Option<f64>,
    avail: Option<f64>,
}

/// One answer of [`Family::FsRead`]/[`Family::FsWrite`]: an NFS export's or a host's bytes/s.
#[derive(Debug, Clone)]
struct FsIo {
    export: Option<Text>,
    host: Option<Text>,
    write: bool,
    bps: f64,
}

/// What the backend remembers between refreshes: when each XID code was first seen, when
/// each allocation was first seen, the jobs it reported (Prometheus alone), and each node's
/// ports as last sent (the sparse and rotating port families update them).
#[derive(Debug, Clone, Default)]
pub struct Memory {
    pub xid_first: Map<(Text, u8), (u16, Epoch)>,
    pub alloc_first: Map<JobId, Epoch>,
    pub jobs: BTreeMap<JobId, Job>,
    pub ports: Map<Text, Vec<FabricPort>>,
    /// Nodes in the last refresh.
    pub nodes: usize,
    /// Host labels and node names, interned across refreshes.
    names: Names,
}

/// Node names interned across refreshes: each host label is mapped and sanitised once, and
/// a refresh finds its nodes by number.
#[derive(Debug, Clone, Default)]
struct Names {
    /// Number → mapped, sanitised node name.
    names: Vec<Text>,
    by_name: Map<Text, u32>,
    /// Host label as answered → number.
    by_host: Map<Box<str>, u32>,
}

/// One refresh's answers, joined by node.
#[derive(Debug, Default)]
pub struct Refresh {
    nodes: Vec<NodeAcc>,
    names: Names,
    /// Node number → index in `nodes` (`u32::MAX`: not in this refresh).
    slot: Vec<u32>,
    fs: Vec<FsAcc>,
    /// Read and write bytes/s by NFS export and by host (local disks), for the storage list.
    fs_io: Vec<FsIo>,
    /// The allocations named in this refresh, by id (each id hashed once per distinct label set).
    allocs: Map<JobId, Alloc>,
    ok: u64,
}

/// The last host label of an answer and its node index (answers are grouped by host).
#[derive(Default)]
struct Hosts<'r> {
    last: Option<(&'r str, u32)>,
}

/// What a refresh turns into.
#[derive(Debug, Default)]
pub struct Mapped {
    pub samples: Vec<NodeSample>,
    pub storage: Option<Vec<Filesystem>>,
    pub jobs_upsert: Vec<Job>,
    pub jobs_remove: Vec<JobId>,
}

fn bit(f: Family) -> u64 {
    1 << (f as u32)
}

fn clamp_u8(v: f64, max: f64) -> Option<u8> {
    (v.is_finite() && v >= 0.0).then(|| v.round().min(max) as u8)
}

fn clamp_u32(v: f64) -> Option<u32> {
    (v.is_finite() && v >= 0.0).then(|| v.round().min(f64::from(u32::MAX)) as u32)
}

fn clamp_u64(v: f64) -> u64 {
    if v.is_finite() && v > 0.0 { v.round().min(u64::MAX as f64) as u64 } else { 0 }
}

fn text(s: &str) -> Text {
    Text::from(sanitize(s).as_ref())
}

impl Refresh {
    pub fn new() -> Self {
        Self::default()
    }

    /// For about `nodes` nodes (the last refresh's count): no regrowth of the node list.
    pub fn with_capacity(nodes: usize) -> Self {
        let mut r = Self::default();
        r.nodes.reserve(nodes);
        r
    }

    /// For the last refresh's node count, with the node names interned so far.
    pub fn with_memory(mem: &mut Memory) -> Self {
        let mut r = Self::with_capacity(mem.nodes);
        r.names = std::mem::take(&mut mem.names);
        // Host labels that no longer answer are forgotten once they pile up.
        if r.names.by_host.len() > 4 * mem.nodes.max(1024) {
            r.names = Names::default();
        }
        r.slot = vec![u32::MAX; r.names.names.len()];
        r
    }

    /// Marks a family as answered (even when its answer is empty).
    pub fn answered(&mut self, f: Family) {
        self.ok |= bit(f);
    }

    pub fn has(&self, f: Family) -> bool {
        self.ok & bit(f) != 0
    }

    /// The number of a (mapped, unsanitised) node name, interned.
    fn number(&mut self, name: &str) -> u32 {
        if let Some(&k) = self.names.by_name.get(name) {
            return k;
        }
        let name = text(name);
        if let Some(&k) = self.names.by_name.get(&name) {
            return k;
        }
        let k = self.names.names.len() as u32;
        self.names.names.push(name.clone());
        self.names.by_name.insert(name, k);
        k
    }

    /// This refresh's index of node number `k`.
    fn slot(&mut self, k: u32) -> u32 {
        let k = k as usize;
        if self.slot.len() <= k {
            self.slot.resize(k + 1, u32::MAX);
        }
        if self.slot[k] == u32::MAX {
            self.slot[k] = self.nodes.len() as u32;
            let name = self.names.names.get(k).cloned().unwrap_or_default();
            self.nodes.push(NodeAcc { name, ..NodeAcc::default() });
        }
        self.slot[k]
    }

    fn node(&mut self, name: &str) -> u32 {
        let k = self.number(name);
        self.slot(k)
    }

    /// The node of a host label: answers are grouped by host, so the last one is checked first.
    fn host_node<'r>(&mut self, cfg: &PromConfig, host: &'r str, hosts: &mut Hosts<'r>) -> u32 {
        if let Some((h, i)) = hosts.last
            && h == host
        {
            return i;
        }
        let k = match self.names.by_host.get(host) {
            Some(&k) => k,
            None => {
                let k = self.number(&cfg.host_map.map(host));
                self.names.by_host.insert(host.into(), k);
                k
            }
        };
        let i = self.slot(k);
        hosts.last = Some((host, i));
        i
    }

    /// Adds an instant query's answer (each series' newest sample).
    pub fn add(&mut self, cfg: &PromConfig, f: Family, r: &Results<'_>) {
        self.add_points(cfg, f, r.iter().filter_map(|s| Some((s, s.last()?))));
    }

    /// Adds one sample per series (an instant answer, or one step of a range answer).
    pub fn add_points<'r, 'a: 'r>(
        &mut self,
        cfg: &PromConfig,
        f: Family,
        series: impl Iterator<Item = (Series<'r, 'a>, Point)>,
    ) {
        self.answered(f);
        match f {
            Family::FsSize | Family::FsAvail => {
                for (s, p) in series {
                    self.add_fs(cfg, f, &s, p.v);
                }
            }
            Family::FsRead | Family::FsWrite => {
                for (s, p) in series {
                    if p.v.is_finite() && p.v >= 0.0 {
                        self.fs_io.push(FsIo {
                            export: s.label("export").map(text),
                            host: s.first_label(&cfg.labels.node_host).map(|h| text(&cfg.host_map.map(h))),
                            write: f == Family::FsWrite,
                            bps: p.v,
                        });
                    }
                }
            }
            _ if f.is_gpu() => self.add_gpu(cfg, f, series),
            _ => self.add_ports(cfg, f, series),
        }
    }

    fn add_gpu<'r, 'a: 'r>(
        &mut self,
        cfg: &PromConfig,
        f: Family,
        series: impl Iterator<Item = (Series<'r, 'a>, Point)>,
    ) {
        let l = &cfg.labels;
        let mut hosts = Hosts::default();
        let mut allocs = Allocs::default();
        let with_alloc = matches!(f, Family::GpuUtil | Family::GpuAlloc);
        for (s, p) in series {
            if !p.v.is_finite() {
                continue;
            }
            let Some(host) = s.first_label(&l.gpu_host) else { continue };
            let Some(idx) = s.label(&l.gpu).and_then(|g| g.parse::<u8>().ok()) else { continue };
            let alloc = if with_alloc { allocs.of(l, &s, &mut self.allocs) } else { None };
            let ni = self.host_node(cfg, host, &mut hosts);
            let node = &mut self.nodes[ni as usize];
            let k = match node.gpus.iter().position(|g| g.s.index == idx) {
                Some(k) => k,
                None => {
                    node.gpus.push(GpuAcc {
                        s: GpuSample { index: idx, ..GpuSample::default() },
                        ..GpuAcc::default()
                    });
                    node.gpus.len() - 1
                }
            };
            let g = &mut node.gpus[k];
            let v = p.v;
            match f {
                Family::GpuUtil => {
                    g.s.util = clamp_u8(v, 100.0);
                    g.seen_util = true;
                    // Two series for one GPU (a pod label changing): the allocated one wins.
                    if alloc.is_some() || g.alloc.is_none() {
                        g.alloc = alloc;
                    }
                }
                Family::GpuAlloc if alloc.is_some() => g.alloc = alloc,
                Family::Gpu => {
                    let Some([util, tensor, temp, power, fb]) = unpack(v) else { continue };
                    let pct = |x: Option<u32>| x.map(|x| x.min(100) as u8);
                    g.s.util = pct(util);
                    g.s.tensor_active = pct(tensor);
                    g.s.temp_c = temp.map(|x| x.min(254) as u8);
                    g.s.power_w = power.map(|x| x.min(65535) as u16);
                    g.s.mem_used_mib = fb;
                    g.seen_util = true;
                }
                // dcgm-exporter reports a huge sentinel where a sensor is missing.
                Family::GpuTemp => g.s.temp_c = clamp_u8(v, 254.0).filter(|_| v < 1000.0),
                Family::XidLast => g.xid = (1.0..=65535.0).contains(&v).then_some(v as u16),
                Family::XidCount => g.xid_count = clamp_u32(v),
                Family::EccSbe => g.sbe = clamp_u32(v),
                Family::EccDbe => g.dbe = clamp_u32(v),
                Family::NvlinkCrc => g.nvl_crc = clamp_u32(v),
                Family::NvlinkReplay => g.nvl_replay = clamp_u32(v),
                Family::PcieReplay => g.pcie_replay = clamp_u32(v),
                _ => {}
            }
        }
    }

    fn add_ports<'r, 'a: 'r>(
        &mut self,
        cfg: &PromConfig,
        f: Family,
        series: impl Iterator<Item = (Series<'r, 'a>, Point)>,
    ) {
        let mut hosts = Hosts::default();
        for (s, p) in series {
            if !p.v.is_finite() {
                continue;
            }
            let Some(host) = s.first_label(&cfg.labels.node_host) else { continue };
            let (Some(dev), port) = (s.label("device"), s.label("port").unwrap_or("1")) else { continue };
            let ni = self.host_node(cfg, host, &mut hosts);
            let node = &mut self.nodes[ni as usize];
            let name_len = dev.len() + 1 + port.len();
            let k =
                match node.ports.iter().position(|x| {
                    x.name.len() == name_len && x.name.starts_with(dev) && x.name.ends_with(port)
                }) {
                    Some(k) => k,
                    None => {
                        // Inline (no allocation) for names up to 24 bytes.
                        let mut name = Text::with_capacity(name_len);
                        name.push_str(&sanitize(dev));
                        name.push('/');
                        name.push_str(&sanitize(port));
                        node.ports.push(PortAcc { name, ..PortAcc::default() });
                        node.ports.len() - 1
                    }
                };
            let x = &mut node.ports[k];
            let v = p.v;
            match f {
                Family::IbState => x.state = Some(v),
                Family::IbRate => x.rate = Some(v),
                Family::IbSymbol => x.symbol = Some(clamp_u64(v)),
                Family::IbRcvErrors => x.rcv = Some(clamp_u64(v)),
                Family::IbXmitDiscards => x.xmit = Some(clamp_u64(v)),
                Family::IbLinkDowned => x.downed = Some(clamp_u64(v)),
                Family::IbFlaps => x.flaps = Some(clamp_u32(v).unwrap_or(0)),
                Family::IbRx => x.rx_mbps = Some(v.max(0.0)),
                Family::IbTx => x.tx_mbps = Some(v.max(0.0)),
                _ => {}
            }
        }
    }

    fn add_fs(&mut self, cfg: &PromConfig, f: Family, s: &Series<'_, '_>, v: f64) {
        if !v.is_finite() {
            return;
        }
        let host = s.first_label(&cfg.labels.node_host).map(|h| text(&cfg.host_map.map(h)));
        let mount = text(s.label("mountpoint").unwrap_or("?"));
        let k = match self.fs.iter().position(|x| x.host == host && x.mount == mount) {
            Some(k) => k,
            None => {
                self.fs.push(FsAcc {
                    host,
                    mount,
                    fstype: text(s.label("fstype").unwrap_or("")),
                    device: text(s.label("device").unwrap_or("")),
                    ..FsAcc::default()
                });
                self.fs.len() - 1
            }
        };
        match f {
            Family::FsSize => self.fs[k].size = Some(v),
            _ => self.fs[k].avail = Some(v),
        }
    }

    /// The delta's content. `discover` (Prometheus alone) also sets GPU ownership, node state
    /// and allocation, and the jobs made from the allocation labels.
    pub fn finish(mut self, at: Epoch, discover: bool, mem: &mut Memory) -> Mapped {
        let util_ok = self.has(Family::GpuUtil) || self.has(Family::GpuAlloc);
        let ecc_ok = self.has(Family::EccSbe) && self.has(Family::EccDbe);
        let links_ok =
            self.has(Family::NvlinkCrc) && self.has(Family::NvlinkReplay) && self.has(Family::PcieReplay);
        let asked = PortsAsked::of(&self);
        if asked.any() {
            // Nodes whose ports are remembered but not in any answer: their state and error
            // counters may have gone back to normal.
            for name in mem.ports.keys() {
                self.node(name);
            }
        }
        let xid_ok = self.has(Family::XidLast);
        let fs_ok = self.has(Family::FsSize) && self.has(Family::FsAvail);
        let mut allocs: BTreeMap<JobId, (Alloc, Vec<Text>, u32)> = BTreeMap::new();
        let alloc_of = std::mem::take(&mut self.allocs);
        let mut samples = Vec::with_capacity(self.nodes.len());
        mem.nodes = self.nodes.len();
        mem.names = std::mem::take(&mut self.names);
        let mut xid_seen: Map<(Text, u8), ()> = Map::default();
        // Built in place (a node's accumulator and sample are about a kilobyte each: no moves).
        for n in &mut self.nodes {
            n.gpus.sort_unstable_by_key(|g| g.s.index);
            samples.push(NodeSample { node: std::mem::take(&mut n.name), ..NodeSample::default() });
            let Some(sample) = samples.last_mut() else { continue };
            let mut alloc_count = 0u32;
            // This node's allocations and their GPU counts (GPUs of one job are usually adjacent).
            let mut node_jobs: smallvec::SmallVec<[(JobId, u32); 8]> = smallvec::SmallVec::new();
            let any_util = n.gpus.iter().any(|g| g.seen_util);
            for g in &n.gpus {
                let mut s = g.s;
                if ecc_ok {
                    s.ecc = Some(EccCounts { sbe: g.sbe.unwrap_or(0), dbe: g.dbe.unwrap_or(0) });
                }
                if links_ok {
                    s.links = Some(LinkErrors {
                        nvlink_crc: g.nvl_crc.unwrap_or(0),
                        nvlink_replay: g.nvl_replay.unwrap_or(0),
                        pcie_replay: g.pcie_replay.unwrap_or(0),
                    });
                }
                if let Some(code) = g.xid {
                    let key = (sample.node.clone(), s.index);
                    let first = match mem.xid_first.get(&key) {
                        Some(&(c, t)) if c == code => t,
                        _ => at,
                    };
                    mem.xid_first.insert(key.clone(), (code, first));
                    xid_seen.insert(key, ());
                    s.xid = Some(XidEvent { code, at: first, count: g.xid_count.unwrap_or(1).max(1) });
                }
                if discover && util_ok && g.seen_util {
                    s.job = Some(g.alloc);
                    if let Some(id) = g.alloc {
                        alloc_count += 1;
                        match node_jobs.iter_mut().rev().find(|(j, _)| *j == id) {
                            Some((_, c)) => *c += 1,
                            None => node_jobs.push((id, 1)),
                        }
                    }
                }
                sample.gpus.push(s);
            }
            for (id, c) in node_jobs {
                let Some(a) = alloc_of.get(&id) else { continue };
                let e = allocs.entry(id).or_insert_with(|| (a.clone(), Vec::new(), 0));
                e.1.push(sample.node.clone());
                e.2 += c;
            }
            if discover && util_ok {
                let total = sample.gpus.iter().filter(|g| g.util.is_some()).count() as u32;
                sample.gpu_alloc = Some(alloc_count);
                sample.state = Some(match (any_util, alloc_count) {
                    (false, _) => NodeState::Unknown,
                    (true, 0) => NodeState::Idle,
                    (true, a) if a >= total => NodeState::Allocated,
                    _ => NodeState::Mixed,
                });
            }
            if asked.any() {
                let acc = std::mem::take(&mut n.ports);
                let changed = match mem.ports.get_mut(&sample.node) {
                    Some(known) => merge_ports(known, acc, &asked),
                    None => {
                        let mut known = Vec::new();
                        merge_ports(&mut known, acc, &asked);
                        mem.ports.insert(sample.node.clone(), known);
                        true
                    }
                };
                // The whole list again once a cycle (with the port list), else on change.
                if asked.rate || changed {
                    sample.ports = mem.ports.get(&sample.node).cloned();
                }
            }
            if sample.gpus.is_empty() && sample.ports.is_none() && sample.state.is_none() {
                samples.pop();
            }
        }
        if xid_ok {
            mem.xid_first.retain(|k, _| xid_seen.contains_key(k));
        }
        samples.sort_unstable_by(|a, b| a.node.cmp(&b.node));
        let io = self.fs_io;
        let storage = fs_ok.then(|| {
            let mut v: Vec<Filesystem> = self.fs.into_iter().filter_map(|f| fs_of(f, &io)).collect();
            v.sort_by(|a, b| a.name.cmp(&b.name));
            v
        });
        let (jobs_upsert, jobs_remove) =
            if discover && util_ok { jobs_of(allocs, at, mem) } else { (Vec::new(), Vec::new()) };
        Mapped { samples, storage, jobs_upsert, jobs_remove }
    }
}

/// Which port families this refresh answered.
#[derive(Debug, Clone, Copy)]
struct PortsAsked {
    state: bool,
    rate: bool,
    symbol: bool,
    rcv: bool,
    xmit: bool,
    downed: bool,
    flaps: bool,
    rx: bool,
    tx: bool,
}

impl PortsAsked {
    fn of(r: &Refresh) -> Self {
        Self {
            state: r.has(Family::IbState),
            rate: r.has(Family::IbRate),
            symbol: r.has(Family::IbSymbol),
            rcv: r.has(Family::IbRcvErrors),
            xmit: r.has(Family::IbXmitDiscards),
            downed: r.has(Family::IbLinkDowned),
            flaps: r.has(Family::IbFlaps),
            rx: r.has(Family::IbRx),
            tx: r.has(Family::IbTx),
        }
    }

    fn any(&self) -> bool {
        self.state
            || self.rate
            || self.symbol
            || self.rcv
            || self.xmit
            || self.downed
            || self.flaps
            || self.rx
            || self.tx
    }
}

fn port_state(v: f64) -> PortState {
    match v as i64 {
        4 | 5 => PortState::Active,
        3 => PortState::Armed,
        2 => PortState::Init,
        1 => PortState::Down,
        _ => PortState::Unknown,
    }
}

fn new_port(name: Text) -> FabricPort {
    FabricPort {
        name,
        kind: FabricKind::InfiniBand,
        state: PortState::Unknown,
        rate_gbps: 0,
        symbol_errors: 0,
        rcv_errors: 0,
        xmit_discards: 0,
        link_downed: 0,
        flaps: 0,
        rx_gbps: 0.0,
        tx_gbps: 0.0,
    }
}

/// Updates a node's remembered ports with this refresh (when the rate family answered, the
/// list becomes the ports it names), each field replaced where its family answered. Sparse
/// families: a port missing from the answer is normal (Active, no growing error counter, no
/// flap). Whether anything changed.
fn merge_ports(known: &mut Vec<FabricPort>, acc: Vec<PortAcc>, asked: &PortsAsked) -> bool {
    let before = known.len();
    if asked.rate {
        known.retain(|p| acc.iter().any(|a| a.name == p.name && a.rate.is_some()));
    }
    let mut changed = known.len() != before;
    // Both lists are usually in the same order: the same position is tried first.
    for (i, a) in acc.iter().enumerate() {
        if known.get(i).is_none_or(|p| p.name != a.name) && !known.iter().any(|p| p.name == a.name) {
            known.push(new_port(a.name.clone()));
            changed = true;
        }
    }
    for (i, p) in known.iter_mut().enumerate() {
        let a = match acc.get(i) {
            Some(a) if a.name == p.name => Some(a),
            _ => acc.iter().find(|a| a.name == p.name),
        };
        let mut q = p.clone();
        let get = |f: fn(&PortAcc) -> Option<u64>| a.and_then(f).unwrap_or(0);
        if asked.state {
            q.state = a.and_then(|a| a.state).map_or(PortState::Active, port_state);
        }
        if let Some(r) = a.and_then(|a| a.rate) {
            q.rate_gbps = (r * 8.0 / 1e9).round().clamp(0.0, 1e6) as u32;
        }
        if asked.symbol {
            q.symbol_errors = get(|a| a.symbol);
        }
        if asked.rcv {
            q.rcv_errors = get(|a| a.rcv);
        }
        if asked.xmit {
            q.xmit_discards = get(|a| a.xmit);
        }
        if asked.downed {
            q.link_downed = get(|a| a.downed);
        }
        if asked.flaps {
            q.flaps = a.and_then(|a| a.flaps).unwrap_or(0);
        }
        if asked.rx {
            q.rx_gbps = (a.and_then(|a| a.rx_mbps).unwrap_or(0.0) / 1000.0) as f32;
        }
        if asked.tx {
            q.tx_gbps = (a.and_then(|a| a.tx_mbps).unwrap_or(0.0) / 1000.0) as f32;
        }
        if q != *p {
            *p = q;
            changed = true;
        }
    }
    if changed {
        known.sort_by(|a, b| a.name.cmp(&b.name));
    }
    changed
}

/// Allocation labels → allocation id, within one answer: a pod's GPUs share one.
#[derive(Default)]
struct Allocs<'r> {
    last: Option<(AllocKey<'r>, Option<JobId>)>,
}

impl<'r> Allocs<'r> {
    /// The id of the allocation a series' labels name, if any; the allocation goes to `known`.
    fn of(
        &mut self,
        l: &super::config::LabelNames,
        s: &Series<'r, '_>,
        known: &mut Map<JobId, Alloc>,
    ) -> Option<JobId> {
        let [job, pod, ns] = s.labels([&l.hpc_job, &l.pod, &l.namespace]);
        let key = (job, pod, ns);
        if let Some((k, a)) = &self.last
            && *k == key
        {
            return *a;
        }
        let a = match key {
            (Some(j), _, _) => j.trim().parse::<u64>().ok().map(Alloc::Slurm),
            (None, Some(pod), ns) => Some(Alloc::Pod { namespace: text(ns.unwrap_or("")), pod: text(pod) }),
            _ => None,
        };
        let id = a.map(|a| {
            let id = a.id();
            known.entry(id).or_insert(a);
            id
        });
        self.last = Some((key, id));
        id
    }
}

fn fs_of(f: FsAcc, io: &[FsIo]) -> Option<Filesystem> {
    let size = f.size?;
    // A shared mount's throughput is its export's (NFS; `device` is `server:/export` there);
    // a listed local filesystem shows its node's local disk throughput.
    let rate = |write: bool| -> f64 {
        io.iter()
            .filter(|x| x.write == write)
            .filter(|x| match (&f.host, &x.host, &x.export) {
                (Some(h), Some(xh), None) => h == xh,
                (None, _, Some(e)) => *e == f.device,
                _ => false,
            })
            .fold(0.0, |a, x| a + x.bps)
    };
    let (read_bps, write_bps) = (rate(false), rate(true));
    let avail = f.avail.unwrap_or(size);
    let kind = match f.fstype.as_str() {
        "lustre" => StorageKind::Lustre,
        t if t.starts_with("nfs") => StorageKind::Nfs,
        "wekafs" => StorageKind::Weka,
        _ if f.host.is_some() => StorageKind::LocalNvme,
        _ => StorageKind::Volume,
    };
    let (name, purpose) = match &f.host {
        Some(h) => (Text::from(format!("{h}:{}", f.mount)), Text::from(format!("local disk of {h}"))),
        None => {
            // `10.40.0.11@o2ib:/ckptfs` -> `ckptfs`; `server:/export/data` -> `data`.
            let tail = f.device.rsplit(['/', ':']).find(|s| !s.is_empty()).unwrap_or(&f.mount);
            (Text::from(tail), Text::from("shared"))
        }
    };
    Some(Filesystem {
        name,
        kind,
        mount: f.mount,
        purpose,
        capacity_bytes: clamp_u64(size),
        used_bytes: clamp_u64(size - avail),
        read_bps,
        write_bps,
        ckpt_write_s: None,
        ckpt_restore_s: None,
    })
}

/// Jobs made from allocation labels (Prometheus alone): one per Slurm job id or per pod.
fn jobs_of(
    allocs: BTreeMap<JobId, (Alloc, Vec<Text>, u32)>,
    at: Epoch,
    mem: &mut Memory,
) -> (Vec<Job>, Vec<JobId>) {
    let mut upsert = Vec::new();
    for (id, (a, nodes, gpus)) in &allocs {
        let start = *mem.alloc_first.entry(*id).or_insert(at);
        let (name, account) = match a {
            Alloc::Slurm(j) => (Text::from(format!("slurm job {j}")), Text::default()),
            Alloc::Pod { namespace, pod } => (pod.clone(), namespace.clone()),
        };
        let job = Job {
            id: *id,
            name,
            user: Text::default(),
            account,
            queue: Text::default(),
            state: JobState::Running,
            pending_reason: None,
            priority: 0,
            submit: start,
            start: Some(start),
            end: None,
            est_start: None,
            gpus: *gpus,
            gpu_model: None,
            nodes: nodes.clone(),
            exit_reason: None,
            retries: 0,
            position: None,
            rank: None,
            gpu_seconds: 0.0,
            useful_gpu_seconds: 0.0,
        };
        if mem.jobs.get(id) != Some(&job) {
            mem.jobs.insert(*id, job.clone());
            upsert.push(job);
        }
    }
    let gone: Vec<JobId> = mem.jobs.keys().filter(|id| !allocs.contains_key(id)).copied().collect();
    for id in &gone {
        mem.jobs.remove(id);
        mem.alloc_first.remove(id);
    }
    (upsert, gone)
}

/// Nodes and GPUs discovered from the discovery query (Prometheus alone), sorted by name.
pub fn discover(cfg: &PromConfig, r: &Results<'_>) -> Vec<Node> {
    let l = &cfg.labels;
    let mut nodes: BTreeMap<Text, Node> = BTreeMap::new();
    for s in r.iter() {
        let Some(host) = s.first_label(&l.gpu_host) else { continue };
        let Some(idx) = s.label(&l.gpu).and_then(|g| g.parse::<u8>().ok()) else { continue };
        let name = text(&cfg.host_map.map(host));
        let node = nodes.entry(name.clone()).or_insert_with(|| Node {
            name,
            state: NodeState::Idle,
            reason: None,
            pool: l.pool.as_ref().and_then(|p| s.label(p)).map(text).unwrap_or_default(),
            labels: BTreeMap::new(),
            cpus_total: 0,
            cpus_alloc: 0,
            mem_total_mib: 0,
            mem_alloc_mib: 0,
            gpu_slots: 0,
            gpu_alloc: 0,
            gpus: Vec::new(),
            topology: None,
            ports: Vec::new(),
            driver: s.label("DCGM_FI_DRIVER_VERSION").map(text),
            cuda: None,
        });
        if node.gpus.iter().any(|g| g.index == idx) {
            continue;
        }
        let mem_total = s.last().map(|p| p.v).and_then(clamp_u32).unwrap_or(0);
        node.gpus.push(Gpu {
            index: idx,
            uuid: s.first_label(&l.uuid).map(text).unwrap_or_default(),
            model: s.first_label(&l.model).map(text).unwrap_or_default(),
            mem_total_mib: mem_total,
            mem_used_mib: None,
            util: None,
            tensor_active: None,
            temp_c: None,
            power_w: None,
            power_limit_w: 0,
            ecc: EccCounts::default(),
            xid: None,
            mig: Vec::new(),
            job: None,
            links: Default::default(),
            idle_since: None,
            processes: Vec::new(),
            local: None,
        });
    }
    nodes
        .into_values()
        .map(|mut n| {
            n.gpus.sort_by_key(|g| g.index);
            n.gpu_slots = n.gpus.len() as u32;
            if let Some(m) = n.gpus.first().map(|g| g.model.clone()) {
                n.labels.insert(Text::from("nvidia.com/gpu.product"), m);
            }
            n
        })
        .collect()
}
