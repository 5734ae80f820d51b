//! Query answers → model: per-node GPU samples, fabric ports and the storage list of one refresh,
//! and (Prometheus alone) the node inventory discovered from the series.
//!
//! Series are joined by the mapped host name (see [`HostMap`](super::config::HostMap)) and the
//! GPU index or `device/port`. Sparse families (filtered `> 0` server-side) count as zero for
//! every GPU/port the dense families reported.
//!
//! A refresh's answers are joined straight from their bodies ([`Refresh::add_body`]: each
//! series' labels are read in place and joined, nothing is stored per series), or from parsed
//! [`Results`] ([`Refresh::add`]); both join each series the same way ([`Refresh::add_series`]).

use super::api::{self, Point, Results, Series};
use super::config::PromConfig;
use super::queries::{Family, unpack};
use crate::model::protocol::{GpuSample, NodeSample};
use crate::model::{
    EccCounts, Epoch, FabricKind, FabricPort, Filesystem, Gpu, Job, JobId, JobState, LinkErrors, Node,
    NodeState, PortState, StorageKind, Text, XidEvent,
};
use crate::sanitize::sanitize;
use std::collections::{BTreeMap, HashMap};

type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Allocation labels of a series: `hpc_job`, `pod`, `namespace`.
type AllocKey<'r> = (Option<&'r str>, Option<&'r str>, Option<&'r str>);

/// The labels of one series, borrowed.
type Labels<'x> = [(&'x str, &'x str)];

/// The value of label `name`.
fn label<'x>(l: &Labels<'x>, name: &str) -> Option<&'x str> {
    l.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
}

/// The first of `names` that is present.
fn first_label<'x>(l: &Labels<'x>, names: &[String]) -> Option<&'x str> {
    names.iter().find_map(|n| label(l, n))
}

/// A GPU index label: one digit, or a number up to 255.
fn gpu_index(g: &str) -> Option<u8> {
    match g.as_bytes() {
        [d @ b'0'..=b'9'] => Some(d - b'0'),
        _ => g.parse().ok(),
    }
}

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
            Alloc::Pod { namespace, pod } => crate::backend::ids::job_id(&[namespace.as_str(), pod.as_str()]),
        }
    }
}

/// One GPU's samples in this refresh, kept small (ten thousand nodes' worth is written and
/// read every refresh): the counters and the allocation hold a value where `has` has their bit.
#[derive(Debug, Clone, Copy, Default)]
struct GpuAcc {
    index: u8,
    util: Option<u8>,
    tensor: Option<u8>,
    temp: Option<u8>,
    seen_util: bool,
    power: Option<u16>,
    xid: Option<u16>,
    fb: Option<u32>,
    has: u8,
    counts: [u32; 7],
}

/// The counters of a [`GpuAcc`].
#[derive(Debug, Clone, Copy)]
enum Count {
    Xids,
    Sbe,
    Dbe,
    NvlCrc,
    NvlReplay,
    PcieReplay,
    /// The allocation's index in [`Refresh::alloc_list`].
    Alloc,
}

impl GpuAcc {
    fn get(&self, c: Count) -> Option<u32> {
        (self.has & (1 << c as u8) != 0).then(|| self.counts[c as usize])
    }

    fn set(&mut self, c: Count, v: Option<u32>) {
        match v {
            Some(x) => {
                self.has |= 1 << c as u8;
                self.counts[c as usize] = x;
            }
            None => self.has &= !(1 << c as u8),
        }
    }
}

/// One port's samples in this refresh, kept small like [`GpuAcc`]: a value is there (its
/// family answered for the port) where `has` has its bit ([`PortVal`]).
#[derive(Debug, Clone, Default)]
struct PortAcc {
    name: Text,
    has: u16,
    flaps: u32,
    /// State, rate, rx and tx (Mbit/s), as answered.
    gauges: [f64; 4],
    /// Symbol errors, receive errors, transmit discards, link downs.
    counters: [u64; 4],
}

/// The values of a [`PortAcc`]: gauges, counters, flaps.
#[derive(Debug, Clone, Copy)]
enum PortVal {
    State,
    Rate,
    Rx,
    Tx,
    Symbol,
    Rcv,
    Xmit,
    Downed,
    Flaps,
}

impl PortAcc {
    fn has(&self, v: PortVal) -> bool {
        self.has & (1 << v as u16) != 0
    }

    fn gauge(&self, v: PortVal) -> Option<f64> {
        self.has(v).then(|| self.gauges[v as usize % 4])
    }

    fn counter(&self, v: PortVal) -> Option<u64> {
        self.has(v).then(|| self.counters[v as usize % 4])
    }

    fn state(&self) -> Option<f64> {
        self.gauge(PortVal::State)
    }

    fn rate(&self) -> Option<f64> {
        self.gauge(PortVal::Rate)
    }

    fn flaps(&self) -> Option<u32> {
        self.has(PortVal::Flaps).then_some(self.flaps)
    }

    fn set_gauge(&mut self, v: PortVal, x: f64) {
        self.has |= 1 << v as u16;
        self.gauges[v as usize % 4] = x;
    }

    fn set_counter(&mut self, v: PortVal, x: u64) {
        self.has |= 1 << v as u16;
        self.counters[v as usize % 4] = x;
    }
}

#[derive(Debug, Clone, Default)]
struct NodeAcc {
    /// The node's number (see [`Names`]) and name.
    number: u32,
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

/// What the backend remembers between refreshes: when each XID code was first seen, the jobs
/// it reported (Prometheus alone; a job's start is when its allocation was first seen), and
/// each node's ports as last sent (the sparse and rotating port families update them).
#[derive(Debug, Clone, Default)]
pub struct Memory {
    pub xid_first: Map<(Text, u8), (u16, Epoch)>,
    /// Each GPU's double-bit ECC count and when it reached it (dated from the series at start,
    /// [`super::DATING`]; else the refresh that first saw it).
    pub dbe_first: Map<(Text, u8), (u32, Epoch)>,
    /// Ports not Active: their state and since when (the refresh that first saw it).
    pub port_since: Map<(Text, Text), (PortState, Epoch)>,
    /// Ports flapping: since when (dated from the series at start, else the refresh that first
    /// saw it).
    pub flaps_since: Map<(Text, Text), Epoch>,
    pub jobs: BTreeMap<JobId, Job>,
    /// Each node's ports as last sent, by node number (see [`Names`]).
    ports: Vec<Option<Vec<FabricPort>>>,
    /// Nodes in the last refresh.
    pub nodes: usize,
    /// Host labels and node names, interned across refreshes.
    names: Names,
    /// The last refresh's node accumulators, emptied: the next refresh writes into memory
    /// already in use, not into ten megabytes of fresh pages.
    scratch: Vec<NodeAcc>,
    /// Refreshes left to join from parsed answers, after one with an answer that
    /// [`Refresh::add_body`] could not read (see [`super::map_refresh`]).
    pub(super) parsed_only: u32,
}

/// Node names interned across refreshes: each host label is mapped and sanitised once, and
/// a refresh finds its nodes by number.
#[derive(Debug, Clone, Default)]
struct Names {
    /// Number → mapped, sanitised node name.
    names: Vec<Text>,
    by_name: Map<Text, u32>,
    /// Host label as answered → its entry in `hosts`.
    by_host: Map<Box<str>, u32>,
    /// Host labels in the order first seen: the label (a range of `host_text`) and its node
    /// number. A dense answer names its hosts in the same order every refresh, so the entry
    /// after the last host's is tried before `by_host` (whose entries are all over memory).
    hosts: Vec<(u32, u32, u32)>,
    host_text: String,
}

impl Names {
    /// Whether entry `e` is host label `host`.
    fn host_is(&self, e: usize, host: &str) -> bool {
        self.hosts
            .get(e)
            .and_then(|&(a, b, _)| self.host_text.get(a as usize..b as usize))
            .is_some_and(|h| h == host)
    }
}

/// One refresh's answers, joined by node.
#[derive(Debug, Default)]
pub struct Refresh {
    /// The first `used` are this refresh's nodes; the rest are kept for their memory.
    nodes: Vec<NodeAcc>,
    used: usize,
    names: Names,
    /// Node number → index in `nodes` (`u32::MAX`: not in this refresh).
    slot: Vec<u32>,
    fs: Vec<FsAcc>,
    /// Read and write bytes/s by NFS export and by host (local disks), for the storage list.
    fs_io: Vec<FsIo>,
    /// The allocations named in this refresh, by id (each id hashed once per distinct label
    /// set), as indexes in `alloc_list`.
    allocs: Map<JobId, u32>,
    alloc_list: Vec<(JobId, Alloc)>,
    ok: u64,
}

/// What one answer's previous series resolved to: answers are grouped by host, a pod's GPUs
/// are adjacent, and every series has the same label names.
#[derive(Default)]
struct Cursor<'x> {
    /// The last host label, its node index and its entry in [`Names::hosts`].
    host: Option<(&'x str, u32)>,
    entry: Option<usize>,
    /// The last allocation labels and their allocation.
    alloc: Option<(AllocKey<'x>, Option<u32>)>,
    /// The label names of the series before (as handed out: the direct scan hands out the
    /// same slice for a repeated name) and where the labels read are among them.
    names: smallvec::SmallVec<[&'x str; 8]>,
    at: At,
    /// The node before the current host's (its ports: likely the same names in the same order).
    model: Option<u32>,
}

/// Where the labels a family reads are in a series (`NONE`: absent).
#[derive(Debug, Clone, Copy)]
struct At {
    host: usize,
    gpu: usize,
    job: usize,
    pod: usize,
    ns: usize,
    device: usize,
    port: usize,
}

const NONE: usize = usize::MAX;

impl Default for At {
    fn default() -> Self {
        At { host: NONE, gpu: NONE, job: NONE, pod: NONE, ns: NONE, device: NONE, port: NONE }
    }
}

impl<'x> Cursor<'x> {
    /// Where the labels are in `labels`: worked out again only when the names differ from the
    /// series before. `hosts`: the host label names, first present wins.
    fn at(&mut self, cfg: &PromConfig, hosts: &[String], labels: &Labels<'x>) -> At {
        let unchanged = self.names.len() == labels.len()
            && self.names.iter().zip(labels).all(|(a, (k, _))| std::ptr::eq(*a, *k));
        if !unchanged {
            let l = &cfg.labels;
            let pos = |name: &str| labels.iter().position(|(k, _)| *k == name).unwrap_or(NONE);
            self.at = At {
                host: hosts.iter().map(|h| pos(h)).find(|&i| i != NONE).unwrap_or(NONE),
                gpu: pos(&l.gpu),
                job: pos(&l.hpc_job),
                pod: pos(&l.pod),
                ns: pos(&l.namespace),
                device: pos("device"),
                port: pos("port"),
            };
            self.names.clear();
            self.names.extend(labels.iter().map(|(k, _)| *k));
        }
        self.at
    }
}

/// The value of the label at `i`.
fn value_at<'x>(labels: &Labels<'x>, i: usize) -> Option<&'x str> {
    labels.get(i).map(|(_, v)| *v)
}

/// What a refresh turns into.
#[derive(Debug, Default)]
pub struct Mapped {
    pub samples: Vec<NodeSample>,
    pub storage: Option<Vec<Filesystem>>,
    pub jobs_upsert: Vec<Job>,
    pub jobs_remove: Vec<JobId>,
}

impl Mapped {
    /// The refresh as the backend's update (`source: "prom"`).
    pub fn into_delta(self, at: Epoch) -> crate::model::protocol::Delta {
        crate::model::protocol::Delta {
            source: Text::const_new(super::SOURCE),
            at,
            nodes: self.samples,
            jobs_upsert: self.jobs_upsert,
            jobs_remove: self.jobs_remove,
            quotas: None,
            storage: self.storage,
        }
    }
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

    /// For the last refresh's node count, with the node names interned so far and the last
    /// refresh's accumulators to write into.
    pub fn with_memory(mem: &mut Memory) -> Self {
        let mut r = Self { nodes: std::mem::take(&mut mem.scratch), ..Self::default() };
        r.nodes.reserve(mem.nodes.saturating_sub(r.nodes.len()));
        r.names = std::mem::take(&mut mem.names);
        // Host labels that no longer answer are forgotten once they pile up; the remembered
        // ports move to their nodes' new numbers.
        if r.names.by_host.len() > 4 * mem.nodes.max(1024) {
            let old = std::mem::take(&mut r.names);
            let ports = std::mem::take(&mut mem.ports);
            for (name, p) in old.names.iter().zip(ports) {
                if p.is_some() {
                    let k = r.number(name) as usize;
                    if mem.ports.len() <= k {
                        mem.ports.resize(k + 1, None);
                    }
                    mem.ports[k] = p;
                }
            }
        }
        r.slot = vec![u32::MAX; r.names.names.len()];
        r
    }

    /// Gives up on this refresh: what it interned and its memory go back to `mem`, nothing
    /// it joined does.
    pub fn abandon(mut self, mem: &mut Memory) {
        mem.names = std::mem::take(&mut self.names);
        mem.scratch = std::mem::take(&mut self.nodes);
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
            let i = self.used;
            self.slot[k] = i as u32;
            let name = self.names.names.get(k).cloned().unwrap_or_default();
            match self.nodes.get_mut(i) {
                Some(n) => {
                    n.number = k as u32;
                    n.name = name;
                    n.gpus.clear();
                    n.ports.clear();
                }
                None => self.nodes.push(NodeAcc { number: k as u32, name, ..NodeAcc::default() }),
            }
            self.used += 1;
        }
        self.slot[k]
    }

    /// The node of a host label: answers are grouped by host, so the last one is checked first.
    fn host_node<'x>(&mut self, cfg: &PromConfig, host: &'x str, cur: &mut Cursor<'x>) -> u32 {
        if let Some((h, i)) = cur.host
            && (std::ptr::eq(h, host) || h == host)
        {
            return i;
        }
        let e = match cur.entry.map(|e| e + 1).filter(|&e| self.names.host_is(e, host)) {
            Some(e) => e,
            None => match self.names.by_host.get(host) {
                Some(&e) => e as usize,
                None => {
                    let k = self.number(&cfg.host_map.map(host));
                    let e = self.names.hosts.len();
                    let a = self.names.host_text.len() as u32;
                    self.names.host_text.push_str(host);
                    self.names.hosts.push((a, self.names.host_text.len() as u32, k));
                    self.names.by_host.insert(host.into(), e as u32);
                    e
                }
            },
        };
        let k = self.names.hosts.get(e).map_or(0, |h| h.2);
        let i = self.slot(k);
        cur.host = Some((host, i));
        cur.entry = Some(e);
        i
    }

    /// Adds an instant query's answer (each series' newest sample).
    pub fn add(&mut self, cfg: &PromConfig, f: Family, r: &Results<'_>) {
        self.add_points(cfg, f, r.iter().filter_map(|s| Some((s, s.last()?))));
    }

    /// Adds an instant query's answer straight from its body, as [`Refresh::add`] adds it
    /// parsed; `None` (and an unusable refresh: [`Refresh::abandon`] it) where the body is not
    /// one [`api::for_each_series`] reads.
    pub fn add_body(&mut self, cfg: &PromConfig, f: Family, body: &[u8]) -> Option<api::Notes> {
        self.answered(f);
        let mut cur = Cursor::default();
        api::for_each_series(body, |labels, p| self.add_series(cfg, f, labels, p.v, &mut cur))
    }

    /// Adds one sample per series (an instant answer, or one step of a range answer).
    pub fn add_points<'r, 'a: 'r>(
        &mut self,
        cfg: &PromConfig,
        f: Family,
        series: impl Iterator<Item = (Series<'r, 'a>, Point)>,
    ) {
        self.answered(f);
        let mut cur = Cursor::default();
        let mut labels: Vec<(&'r str, &'r str)> = Vec::new();
        for (s, p) in series {
            labels.clear();
            labels.extend(s.labels.iter().map(|(k, v)| (k.0.as_ref(), v.0.as_ref())));
            self.add_series(cfg, f, &labels, p.v, &mut cur);
        }
    }

    /// Joins one series' sample.
    fn add_series<'x>(
        &mut self,
        cfg: &PromConfig,
        f: Family,
        labels: &Labels<'x>,
        v: f64,
        cur: &mut Cursor<'x>,
    ) {
        if !v.is_finite() {
            return;
        }
        match f {
            Family::FsSize | Family::FsAvail => self.add_fs(cfg, f, labels, v),
            Family::FsRead | Family::FsWrite if v >= 0.0 => self.fs_io.push(FsIo {
                export: label(labels, "export").map(text),
                host: first_label(labels, &cfg.labels.node_host).map(|h| text(&cfg.host_map.map(h))),
                write: f == Family::FsWrite,
                bps: v,
            }),
            Family::FsRead | Family::FsWrite => {}
            _ if f.is_gpu() => self.add_gpu(cfg, f, labels, v, cur),
            _ => self.add_port(cfg, f, labels, v, cur),
        }
    }

    fn add_gpu<'x>(
        &mut self,
        cfg: &PromConfig,
        f: Family,
        labels: &Labels<'x>,
        v: f64,
        cur: &mut Cursor<'x>,
    ) {
        let at = cur.at(cfg, &cfg.labels.gpu_host, labels);
        let Some(host) = value_at(labels, at.host) else { return };
        let Some(idx) = value_at(labels, at.gpu).and_then(gpu_index) else { return };
        let alloc = if matches!(f, Family::GpuUtil | Family::GpuAlloc) {
            let key = (value_at(labels, at.job), value_at(labels, at.pod), value_at(labels, at.ns));
            self.alloc_of(key, cur)
        } else {
            None
        };
        let ni = self.host_node(cfg, host, cur);
        let node = &mut self.nodes[ni as usize];
        // GPUs usually come in index order: GPU `i` is tried at position `i` first.
        let k = match node.gpus.get(usize::from(idx)) {
            Some(g) if g.index == idx => usize::from(idx),
            _ => match node.gpus.iter().position(|g| g.index == idx) {
                Some(k) => k,
                None => {
                    node.gpus.push(GpuAcc { index: idx, ..GpuAcc::default() });
                    node.gpus.len() - 1
                }
            },
        };
        let g = &mut node.gpus[k];
        match f {
            Family::GpuUtil => {
                g.util = clamp_u8(v, 100.0);
                g.seen_util = true;
                // Two series for one GPU (a pod label changing): the allocated one wins.
                if alloc.is_some() || g.get(Count::Alloc).is_none() {
                    g.set(Count::Alloc, alloc);
                }
            }
            Family::GpuAlloc if alloc.is_some() => g.set(Count::Alloc, alloc),
            Family::Gpu => {
                let Some([util, tensor, temp, power, fb]) = unpack(v) else { return };
                let pct = |x: Option<u32>| x.map(|x| x.min(100) as u8);
                g.util = pct(util);
                g.tensor = pct(tensor);
                g.temp = temp.map(|x| x.min(254) as u8);
                g.power = power.map(|x| x.min(65535) as u16);
                g.fb = fb;
                g.seen_util = true;
            }
            // dcgm-exporter reports a huge sentinel where a sensor is missing.
            Family::GpuTemp => g.temp = clamp_u8(v, 254.0).filter(|_| v < 1000.0),
            Family::XidLast => g.xid = (1.0..=65535.0).contains(&v).then_some(v as u16),
            Family::XidCount => g.set(Count::Xids, clamp_u32(v)),
            Family::EccSbe => g.set(Count::Sbe, clamp_u32(v)),
            Family::EccDbe => g.set(Count::Dbe, clamp_u32(v)),
            Family::NvlinkCrc => g.set(Count::NvlCrc, clamp_u32(v)),
            Family::NvlinkReplay => g.set(Count::NvlReplay, clamp_u32(v)),
            Family::PcieReplay => g.set(Count::PcieReplay, clamp_u32(v)),
            _ => {}
        }
    }

    /// The allocation that a series' allocation labels name, if any (its index in
    /// `alloc_list`).
    fn alloc_of<'x>(&mut self, key: AllocKey<'x>, cur: &mut Cursor<'x>) -> Option<u32> {
        if let Some((k, a)) = &cur.alloc
            && k.0 == key.0
            && k.1 == key.1
            && k.2 == key.2
        {
            return *a;
        }
        let a = match key {
            (Some(j), _, _) => j.trim().parse::<u64>().ok().map(Alloc::Slurm),
            (None, Some(pod), ns) => Some(Alloc::Pod { namespace: text(ns.unwrap_or("")), pod: text(pod) }),
            _ => None,
        };
        let ix = a.map(|a| {
            let id = a.id();
            let next = self.alloc_list.len() as u32;
            let ix = *self.allocs.entry(id).or_insert(next);
            if ix == next {
                self.alloc_list.push((id, a));
            }
            ix
        });
        cur.alloc = Some((key, ix));
        ix
    }

    fn add_port<'x>(
        &mut self,
        cfg: &PromConfig,
        f: Family,
        labels: &Labels<'x>,
        v: f64,
        cur: &mut Cursor<'x>,
    ) {
        let at = cur.at(cfg, &cfg.labels.node_host, labels);
        let Some(host) = value_at(labels, at.host) else { return };
        let (Some(dev), port) = (value_at(labels, at.device), value_at(labels, at.port).unwrap_or("1"))
        else {
            return;
        };
        let before = cur.host.map(|(_, i)| i);
        let ni = self.host_node(cfg, host, cur) as usize;
        if before.is_some_and(|b| b as usize != ni) {
            cur.model = before;
        }
        let name_len = dev.len() + 1 + port.len();
        // The name as sanitised and stored is the raw `dev/port`: a name with nothing to
        // sanitise.
        let is = |x: &PortAcc| {
            x.name.len() == name_len
                && x.name.get(..dev.len()).is_some_and(|d| d == dev)
                && x.name.get(name_len - port.len()..).is_some_and(|p| p == port)
        };
        let k = match self.nodes[ni].ports.iter().position(is) {
            Some(k) => k,
            None => {
                let p = self.nodes[ni].ports.len();
                // The node before's port at the same place, or a new name (inline, no
                // allocation, up to 24 bytes).
                let model =
                    cur.model.and_then(|m| self.nodes.get(m as usize)?.ports.get(p).filter(|x| is(x)));
                let name = match model {
                    Some(x) => x.name.clone(),
                    None => {
                        let mut name = Text::with_capacity(name_len);
                        name.push_str(&sanitize(dev));
                        name.push('/');
                        name.push_str(&sanitize(port));
                        name
                    }
                };
                self.nodes[ni].ports.push(PortAcc { name, ..PortAcc::default() });
                p
            }
        };
        let x = &mut self.nodes[ni].ports[k];
        match f {
            Family::IbState => x.set_gauge(PortVal::State, v),
            Family::IbRate => x.set_gauge(PortVal::Rate, v),
            Family::IbSymbol => x.set_counter(PortVal::Symbol, clamp_u64(v)),
            Family::IbRcvErrors => x.set_counter(PortVal::Rcv, clamp_u64(v)),
            Family::IbXmitDiscards => x.set_counter(PortVal::Xmit, clamp_u64(v)),
            Family::IbLinkDowned => x.set_counter(PortVal::Downed, clamp_u64(v)),
            Family::IbFlaps => {
                x.has |= 1 << PortVal::Flaps as u16;
                x.flaps = clamp_u32(v).unwrap_or(0);
            }
            Family::IbRx => x.set_gauge(PortVal::Rx, v.max(0.0)),
            Family::IbTx => x.set_gauge(PortVal::Tx, v.max(0.0)),
            _ => {}
        }
    }

    fn add_fs(&mut self, cfg: &PromConfig, f: Family, labels: &Labels<'_>, v: f64) {
        let host = first_label(labels, &cfg.labels.node_host).map(|h| text(&cfg.host_map.map(h)));
        let mount = text(label(labels, "mountpoint").unwrap_or("?"));
        let k = match self.fs.iter().position(|x| x.host == host && x.mount == mount) {
            Some(k) => k,
            None => {
                self.fs.push(FsAcc {
                    host,
                    mount,
                    fstype: text(label(labels, "fstype").unwrap_or("")),
                    device: text(label(labels, "device").unwrap_or("")),
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
            for (k, p) in mem.ports.iter().enumerate() {
                if p.is_some() {
                    self.slot(k as u32);
                }
            }
        }
        let xid_ok = self.has(Family::XidLast);
        let fs_ok = self.has(Family::FsSize) && self.has(Family::FsAvail);
        let alloc_list = std::mem::take(&mut self.alloc_list);
        // Per allocation (as in `alloc_list`): its nodes and GPUs.
        let mut per_alloc: Vec<(Vec<Text>, u32)> = vec![(Vec::new(), 0); alloc_list.len()];
        let mut samples = Vec::with_capacity(self.used);
        mem.nodes = self.used;
        mem.names = std::mem::take(&mut self.names);
        let mut xid_seen: Map<(Text, u8), ()> = Map::default();
        let mut dbe_seen: Map<(Text, u8), ()> = Map::default();
        // Built in place (a node's accumulator and sample are about a kilobyte each: no moves).
        for n in &mut self.nodes[..self.used] {
            n.gpus.sort_unstable_by_key(|g| g.index);
            samples.push(NodeSample { node: std::mem::take(&mut n.name), ..NodeSample::default() });
            let Some(sample) = samples.last_mut() else { continue };
            let mut alloc_count = 0u32;
            // This node's allocations and their GPU counts (GPUs of one job are usually adjacent).
            let mut node_jobs: smallvec::SmallVec<[(u32, u32); 8]> = smallvec::SmallVec::new();
            let any_util = n.gpus.iter().any(|g| g.seen_util);
            for g in &n.gpus {
                let mut s = GpuSample {
                    index: g.index,
                    util: g.util,
                    tensor_active: g.tensor,
                    temp_c: g.temp,
                    power_w: g.power,
                    mem_used_mib: g.fb,
                    ..GpuSample::default()
                };
                let count = |c| g.get(c).unwrap_or(0);
                if ecc_ok {
                    let ecc = EccCounts { sbe: count(Count::Sbe), dbe: count(Count::Dbe) };
                    s.ecc = Some(ecc);
                    if ecc.dbe > 0 {
                        let key = (sample.node.clone(), s.index);
                        let first = match mem.dbe_first.get(&key) {
                            Some(&(c, t)) if c == ecc.dbe => t,
                            _ => at,
                        };
                        mem.dbe_first.insert(key.clone(), (ecc.dbe, first));
                        dbe_seen.insert(key, ());
                        s.ecc_at = Some(first);
                    }
                }
                if links_ok {
                    s.links = Some(LinkErrors {
                        nvlink_crc: count(Count::NvlCrc),
                        nvlink_replay: count(Count::NvlReplay),
                        pcie_replay: count(Count::PcieReplay),
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
                    s.xid = Some(XidEvent { code, at: first, count: g.get(Count::Xids).unwrap_or(1).max(1) });
                }
                if !discover
                    && let Some((_, Alloc::Slurm(id))) =
                        g.get(Count::Alloc).and_then(|ix| alloc_list.get(ix as usize))
                {
                    // With a scheduler, the labels' job is only compared with its jobs.
                    s.telemetry_job = Some(*id);
                }
                if discover && util_ok && g.seen_util {
                    let alloc =
                        g.get(Count::Alloc).and_then(|ix| alloc_list.get(ix as usize).map(|a| (ix, a.0)));
                    s.job = Some(alloc.map(|(_, id)| id));
                    if let Some((ix, _)) = alloc {
                        alloc_count += 1;
                        match node_jobs.iter_mut().rev().find(|(j, _)| *j == ix) {
                            Some((_, c)) => *c += 1,
                            None => node_jobs.push((ix, 1)),
                        }
                    }
                }
                sample.gpus.push(s);
            }
            for (ix, c) in node_jobs {
                let Some(e) = per_alloc.get_mut(ix as usize) else { continue };
                e.0.push(sample.node.clone());
                e.1 += c;
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
                let k = n.number as usize;
                if mem.ports.len() <= k {
                    mem.ports.resize(k + 1, None);
                }
                let known = &mut mem.ports[k];
                let changed = match known {
                    Some(known) => merge_ports(known, &n.ports, &asked),
                    None => {
                        let mut new = Vec::new();
                        merge_ports(&mut new, &n.ports, &asked);
                        *known = Some(new);
                        true
                    }
                };
                let mut changed = changed;
                if asked.state
                    && let Some(known) = known.as_mut()
                {
                    for p in known.iter_mut() {
                        let key = (sample.node.clone(), p.name.clone());
                        let since = match p.state {
                            PortState::Active => None,
                            st => Some(match mem.port_since.get(&key) {
                                Some(&(s, t)) if s == st => t,
                                _ => at,
                            }),
                        };
                        match since {
                            Some(t) => {
                                mem.port_since.insert(key, (p.state, t));
                            }
                            None => {
                                mem.port_since.remove(&key);
                            }
                        }
                        changed |= p.state_since != since;
                        p.state_since = since;
                    }
                }
                if asked.flaps
                    && let Some(known) = known.as_mut()
                {
                    for p in known.iter_mut() {
                        let key = (sample.node.clone(), p.name.clone());
                        let since = match p.flaps {
                            0 => {
                                mem.flaps_since.remove(&key);
                                None
                            }
                            _ => Some(*mem.flaps_since.entry(key).or_insert(at)),
                        };
                        changed |= p.flaps_since != since;
                        p.flaps_since = since;
                    }
                }
                // The whole list again once a cycle (with the port list), else on change.
                if asked.rate || changed {
                    sample.ports.clone_from(known);
                }
            }
            if sample.gpus.is_empty() && sample.ports.is_none() && sample.state.is_none() {
                samples.pop();
            }
        }
        if xid_ok {
            mem.xid_first.retain(|k, _| xid_seen.contains_key(k));
        }
        if ecc_ok {
            mem.dbe_first.retain(|k, _| dbe_seen.contains_key(k));
        }
        samples.sort_unstable_by(|a, b| a.node.cmp(&b.node));
        let io = std::mem::take(&mut self.fs_io);
        let storage = fs_ok.then(|| {
            let mut v: Vec<Filesystem> =
                std::mem::take(&mut self.fs).into_iter().filter_map(|f| fs_of(f, &io)).collect();
            v.sort_by(|a, b| a.name.cmp(&b.name));
            v
        });
        let (jobs_upsert, jobs_remove) = if discover && util_ok {
            // The allocations holding GPUs, by id.
            let mut held: Vec<(JobId, &Alloc, Vec<Text>, u32)> = alloc_list
                .iter()
                .zip(per_alloc)
                .filter(|(_, (nodes, _))| !nodes.is_empty())
                .map(|((id, a), (nodes, gpus))| (*id, a, nodes, gpus))
                .collect();
            held.sort_unstable_by_key(|h| h.0);
            jobs_of(held, at, mem)
        } else {
            (Vec::new(), Vec::new())
        };
        mem.scratch = std::mem::take(&mut self.nodes);
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

pub(super) fn port_state(v: f64) -> PortState {
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
        state_since: None,
        flaps_since: None,
        rx_gbps: 0.0,
        tx_gbps: 0.0,
    }
}

/// Updates a node's remembered ports with this refresh (when the rate family answered, the
/// list becomes the ports it names), each field replaced where its family answered. Sparse
/// families: a port missing from the answer is normal (Active, no growing error counter, no
/// flap). Whether anything changed.
fn merge_ports(known: &mut Vec<FabricPort>, acc: &[PortAcc], asked: &PortsAsked) -> bool {
    // Both lists are usually in the same order: the same position is tried first.
    let find = |i: usize, name: &str| match acc.get(i) {
        Some(a) if a.name == name => Some(a),
        _ => acc.iter().find(|a| a.name == name),
    };
    let before = known.len();
    if asked.rate {
        let mut i = 0;
        known.retain(|p| {
            let keep = find(i, &p.name).is_some_and(|a| a.rate().is_some())
                || acc.iter().any(|a| a.name == p.name && a.rate().is_some());
            i += 1;
            keep
        });
    }
    let mut changed = known.len() != before;
    for (i, a) in acc.iter().enumerate() {
        if known.get(i).is_none_or(|p| p.name != a.name) && !known.iter().any(|p| p.name == a.name) {
            known.push(new_port(a.name.clone()));
            changed = true;
        }
    }
    for (i, p) in known.iter_mut().enumerate() {
        let a = find(i, &p.name);
        let count = |v: PortVal| a.and_then(|a| a.counter(v)).unwrap_or(0);
        let mut c = false;
        if asked.state {
            let v = a.and_then(PortAcc::state).map_or(PortState::Active, port_state);
            c |= put(&mut p.state, v);
        }
        if let Some(r) = a.and_then(PortAcc::rate) {
            let v = (r * 8.0 / 1e9).round().clamp(0.0, 1e6) as u32;
            c |= put(&mut p.rate_gbps, v);
        }
        // The error counters answered this refresh (a port missing from an answer reads 0).
        for (on, which, field) in [
            (asked.symbol, PortVal::Symbol, &mut p.symbol_errors),
            (asked.rcv, PortVal::Rcv, &mut p.rcv_errors),
            (asked.xmit, PortVal::Xmit, &mut p.xmit_discards),
            (asked.downed, PortVal::Downed, &mut p.link_downed),
        ] {
            if on {
                c |= put(field, count(which));
            }
        }
        if asked.flaps {
            let v = a.and_then(PortAcc::flaps).unwrap_or(0);
            c |= put(&mut p.flaps, v);
        }
        if asked.rx {
            let v = (a.and_then(|a| a.gauge(PortVal::Rx)).unwrap_or(0.0) / 1000.0) as f32;
            c |= put(&mut p.rx_gbps, v);
        }
        if asked.tx {
            let v = (a.and_then(|a| a.gauge(PortVal::Tx)).unwrap_or(0.0) / 1000.0) as f32;
            c |= put(&mut p.tx_gbps, v);
        }
        changed |= c;
    }
    if changed {
        known.sort_by(|a, b| a.name.cmp(&b.name));
    }
    changed
}

/// Sets `*field` to `v`; whether that changed it.
fn put<T: PartialEq>(field: &mut T, v: T) -> bool {
    if *field == v {
        return false;
    }
    *field = v;
    true
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

/// Jobs made from allocation labels (Prometheus alone): one per Slurm job id or per pod, from
/// the allocations holding GPUs (in id order, as [`Memory::jobs`] is). A job's start is when
/// its allocation was first seen. Returns the jobs that changed or are new, and the ids of
/// those no longer named.
fn jobs_of(
    held: Vec<(JobId, &Alloc, Vec<Text>, u32)>,
    at: Epoch,
    mem: &mut Memory,
) -> (Vec<Job>, Vec<JobId>) {
    let mut upsert = Vec::new();
    let mut gone = Vec::new();
    let mut new = Vec::new();
    // One walk over both lists.
    let mut known = mem.jobs.iter_mut().peekable();
    for (id, a, nodes, gpus) in held {
        while let Some((k, _)) = known.next_if(|(k, _)| **k < id) {
            gone.push(*k);
        }
        let old = known.next_if(|(k, _)| **k == id).map(|(_, j)| j);
        let start = old.as_ref().and_then(|j| j.start).unwrap_or(at);
        let (name, account) = match a {
            Alloc::Slurm(j) => (Text::from(format!("slurm job {j}")), Text::default()),
            Alloc::Pod { namespace, pod } => (pod.clone(), namespace.clone()),
        };
        let job = Job {
            cluster: Default::default(),
            id,
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
            gpus,
            gpu_model: None,
            nodes,
            exit_reason: None,
            retries: 0,
            position: None,
            rank: None,
            gpu_seconds: 0.0,
            useful_gpu_seconds: 0.0,
            time_limit: None,
            no_time_limit: false,
        };
        match old {
            Some(j) if *j == job => {}
            Some(j) => {
                *j = job.clone();
                upsert.push(job);
            }
            None => {
                new.push(job.clone());
                upsert.push(job);
            }
        }
    }
    gone.extend(known.map(|(k, _)| *k));
    for id in &gone {
        mem.jobs.remove(id);
    }
    for j in new {
        mem.jobs.insert(j.id, j);
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
            cluster: Default::default(),
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
            ecc_at: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_ids_never_change() {
        // FNV-1a of `namespace/pod` with the top bit set: kept and joined across runs.
        let pod = Alloc::Pod { namespace: "team-3".into(), pod: "train-0-worker-1".into() };
        assert_eq!(pod.id(), 0xef79_f109_602b_a0b7);
        assert_eq!(Alloc::Slurm(42).id(), 42);
    }

    /// Where the labels are, looked up one by one (what [`Cursor::at`] spares).
    fn naive(cfg: &PromConfig, hosts: &[String], labels: &Labels<'_>) -> [usize; 7] {
        let l = &cfg.labels;
        let pos = |n: &str| labels.iter().position(|(k, _)| *k == n).unwrap_or(NONE);
        let host = hosts.iter().find_map(|h| labels.iter().position(|(k, _)| k == h)).unwrap_or(NONE);
        [host, pos(&l.gpu), pos(&l.hpc_job), pos(&l.pod), pos(&l.namespace), pos("device"), pos("port")]
    }

    #[test]
    fn label_places_are_worked_out_again_when_the_names_change() {
        let cfg = PromConfig::new("http://x");
        let owned: Vec<String> =
            ["Hostname", "hostname", "gpu", "pod", "namespace", "hpc_job", "device", "port", "x"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        // The same names at other addresses too, as parsed answers with escapes have them.
        let copies: Vec<String> = owned.clone();
        let mut x: u32 = 99;
        let mut cur = Cursor::default();
        for _ in 0..3000 {
            let mut labels: Vec<(&str, &str)> = Vec::new();
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let n = (x >> 16) as usize % 6;
            for j in 0..n {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                let pick = (x >> 16) as usize % owned.len();
                let from = if (x >> 28).is_multiple_of(2) { &owned } else { &copies };
                labels.push((from[pick].as_str(), if j % 2 == 0 { "a" } else { "b" }));
            }
            // Often the very same names as the series before.
            if (x >> 8).is_multiple_of(3) {
                labels = cur.names.iter().map(|k| (*k, "v")).collect();
            }
            let at = cur.at(&cfg, &cfg.labels.gpu_host, &labels);
            let got = [at.host, at.gpu, at.job, at.pod, at.ns, at.device, at.port];
            assert_eq!(got, naive(&cfg, &cfg.labels.gpu_host, &labels), "{labels:?}");
        }
    }

    fn vector(series: &[String]) -> Vec<u8> {
        let list: Vec<String> =
            series.iter().map(|l| format!(r#"{{"metric":{{{l}}},"value":[1795959344.452,"1"]}}"#)).collect();
        format!(r#"{{"status":"success","data":{{"resultType":"vector","result":[{}]}}}}"#, list.join(","))
            .into_bytes()
    }

    /// Port names come from the node before where they are the same, and are made (and
    /// sanitised) where not.
    #[test]
    fn port_names_are_each_nodes_own() {
        let cfg = PromConfig::new("http://x");
        let port =
            |h: &str, d: &str, p: &str| format!(r#""device":"{d}","instance":"{h}:9100","port":"{p}""#);
        let body = vector(&[
            port("a", "mlx5_0", "1"),
            port("a", "mlx5_1", "1"),
            port("b", "mlx5_0", "1"),
            port("b", "mlx5_1", "2"),
            port("c", "mlx5_0", "1"),
            port("c", "mlx5_\u{202e}1", "1"),
            port("d", "mlx5_1", "1"),
            port("d", "mlx5_0", "1"),
            port("d", "mlx5_0", "1"),
        ]);
        let mut r = Refresh::new();
        r.add(&cfg, Family::IbRate, &api::parse(&body).unwrap().results);
        let m = r.finish(1, false, &mut Memory::default());
        let names: Vec<(String, Vec<String>)> = m
            .samples
            .iter()
            .map(|s| (s.node.to_string(), s.ports.iter().flatten().map(|p| p.name.to_string()).collect()))
            .collect();
        let want = |n: &str, p: &[&str]| (n.to_string(), p.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            names,
            [
                want("a", &["mlx5_0/1", "mlx5_1/1"]),
                want("b", &["mlx5_0/1", "mlx5_1/2"]),
                want("c", &["mlx5_0/1", "mlx5_1/1"]),
                want("d", &["mlx5_0/1", "mlx5_1/1"]),
            ]
        );
    }

    /// Jobs from allocation labels over refreshes: new ones and changed ones are sent, with
    /// the time their allocation was first seen; gone ones are removed.
    #[test]
    fn jobs_come_change_and_go() {
        let cfg = PromConfig { discover_nodes: true, ..PromConfig::new("http://x") };
        let gpu = |h: &str, g: u8, alloc: &str| format!(r#""Hostname":"{h}","gpu":"{g}"{alloc}"#);
        let pod = r#","namespace":"ml","pod":"train-0""#;
        let slurm = r#","hpc_job":"1234""#;
        let mut mem = Memory::default();
        let mut refresh = |at: Epoch, series: Vec<String>| {
            let mut r = Refresh::with_memory(&mut mem);
            // Every GPU of the hosts reports (a GPU counts once it does).
            let gpus: Vec<String> =
                ["a", "b", "c"].iter().flat_map(|h| (0..2).map(move |g| gpu(h, g, ""))).collect();
            r.add(&cfg, Family::Gpu, &api::parse(&vector(&gpus)).unwrap().results);
            r.add(&cfg, Family::GpuAlloc, &api::parse(&vector(&series)).unwrap().results);
            let m = r.finish(at, true, &mut mem);
            let up: Vec<(String, u32, Vec<String>, Option<Epoch>)> = m
                .jobs_upsert
                .iter()
                .map(|j| {
                    (j.name.to_string(), j.gpus, j.nodes.iter().map(|n| n.to_string()).collect(), j.start)
                })
                .collect();
            (up, m.jobs_remove)
        };
        let two = vec![gpu("a", 0, pod), gpu("a", 1, pod), gpu("b", 0, slurm)];
        let v = |s: &str| vec![s.to_string()];
        let (up, gone) = refresh(100, two.clone());
        assert_eq!(
            up,
            [("slurm job 1234".into(), 1, v("b"), Some(100)), ("train-0".into(), 2, v("a"), Some(100))]
        );
        assert!(gone.is_empty());
        assert_eq!(refresh(115, two.clone()), (vec![], vec![]));
        let mut three = two.clone();
        three.push(gpu("c", 0, pod));
        let (up, gone) = refresh(130, three);
        assert_eq!(up, [("train-0".into(), 3, vec!["a".to_string(), "c".to_string()], Some(100))]);
        assert!(gone.is_empty());
        let (up, gone) = refresh(145, vec![gpu("a", 0, pod)]);
        assert_eq!(up, [("train-0".into(), 1, v("a"), Some(100))]);
        assert_eq!(gone, [1234]);
        let (up, _) = refresh(160, two);
        assert_eq!(up[0], ("slurm job 1234".into(), 1, v("b"), Some(160)));
        let (up, gone) = refresh(175, vec![]);
        assert!(up.is_empty());
        assert_eq!(gone.len(), 2);
    }
}
