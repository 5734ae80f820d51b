//! The simulated machines: nodes, GPUs, their wiring, and which GPUs are free. Compact on
//! purpose (80,000 GPUs tick every two seconds); [`Cluster::node`] builds the model's
//! [`Node`] only when a full inventory is asked for.

use super::catalog::{self, NPOOLS, POOLS, PoolSpec, Shape};
use crate::model::{
    EccCounts, FabricKind, FabricPort, Gpu, JobId, LinkKind, MigSlice, Nic, Node, NodeReason, NodeState,
    PortState, Text, Topology, XidEvent,
};
use compact_str::{ToCompactString, format_compact};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::Arc;

/// GPU flags.
pub(super) const F_SILENT: u8 = 1; // fell off the bus: reports nothing
pub(super) const F_HOT: u8 = 2; // bad airflow: runs hot
pub(super) const F_IDLE: u8 = 4; // held by a stuck job
pub(super) const F_MIG: u8 = 8; // MIG-enabled, not handed out whole

/// One GPU's moving parts. `job == 0` means free.
#[derive(Debug, Clone, Default)]
pub(super) struct GpuSim {
    pub job: JobId,
    pub util: f32,
    pub temp: f32,
    pub power: f32,
    pub mem_mib: u32,
    /// Utilisation the holder drives it to, its tensor share and memory fill (percent).
    pub target: u8,
    pub tensor_pct: u8,
    pub mem_pct: u8,
    pub flags: u8,
    /// The holder changed since the last delta.
    pub job_dirty: bool,
}

/// Utilisation profile a job imposes on its GPUs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Profile {
    pub util: u8,
    pub tensor_pct: u8,
    pub mem_pct: u8,
    pub idle: bool,
}

#[derive(Debug, Clone)]
pub(super) struct NodeSim {
    pub name: Text,
    pub pool: u8,
    pub state: NodeState,
    pub reason: Option<NodeReason>,
    /// GPUs that may be handed out whole (bit per index).
    pub usable: u16,
    /// GPUs handed out.
    pub busy: u16,
    /// Free-count bucket the node sits in, when schedulable.
    pub bucket: Option<u8>,
    pub drift: bool,
    pub zone: u8,
    pub ports: Vec<FabricPort>,
    pub state_dirty: bool,
    pub alloc_dirty: bool,
    pub ports_dirty: bool,
}

impl NodeSim {
    pub fn free(&self) -> u32 {
        (self.usable & !self.busy).count_ones()
    }

    pub fn alloc(&self) -> u32 {
        self.busy.count_ones()
    }

    pub fn spec(&self) -> &'static PoolSpec {
        &POOLS[usize::from(self.pool)]
    }
}

/// A fault planted on one GPU, shown in the inventory.
#[derive(Debug, Clone, Copy)]
pub(super) struct GpuFault {
    pub gpu: usize,
    pub ecc: EccCounts,
    pub xid: Option<XidEvent>,
}

#[derive(Debug, Clone, Default)]
pub(super) struct PoolSim {
    pub nodes: Range<u32>,
    /// Schedulable nodes by number of free GPUs.
    pub by_free: Vec<BTreeSet<u32>>,
    /// Free GPUs on schedulable nodes.
    pub free: u32,
    pub topology: Option<Arc<Topology>>,
}

#[derive(Debug, Clone)]
pub(super) struct Cluster {
    pub gpn: usize,
    pub seed: u64,
    pub nodes: Vec<NodeSim>,
    pub gpus: Vec<GpuSim>,
    pub pools: Vec<PoolSim>,
    pub faults: Vec<GpuFault>,
}

/// Node counts per pool for a cluster of `n` nodes: mostly h100, a few of the others.
pub(super) fn pool_sizes(n: usize) -> [usize; NPOOLS] {
    let debug = if n >= 8 { (n / 64).max(1) } else { 0 };
    let h200 = if n >= 6 { (n / 8).max(1) } else { 0 };
    let a100 = if n >= 6 { (n * 3 / 16).max(1) } else { 0 };
    [n - debug - h200 - a100, h200, a100, debug]
}

/// `gpu-001`, …; the width grows with the count (`gpu-00001` at 10,000 nodes).
pub(super) fn node_name(i: usize, n: usize) -> Text {
    let width = n.max(1).to_string().len().max(3);
    format_compact!("gpu-{:0width$}", i + 1)
}

/// NUMA node of GPU `i` of `gpn`: two sockets, lower half on the first.
fn numa_of(i: usize, gpn: usize) -> u8 {
    if gpn >= 2 { (i * 2 / gpn) as u8 } else { 0 }
}

/// GPUs a NIC sits next to (shares a PCIe switch with): its nearest pair, or its share of the
/// GPUs when there are fewer NICs than pairs.
fn nic_home(k: usize, nics: usize, gpn: usize) -> std::ops::Range<usize> {
    let per = (gpn / nics).max(2).min(gpn);
    let first = (k * gpn / nics) / per * per;
    first..(first + per).min(gpn)
}

/// `nvidia-smi topo -m` for a node of this pool with `gpn` GPUs.
pub(super) fn topology(spec: &PoolSpec, gpn: usize) -> Topology {
    let numa: Vec<u8> = (0..gpn).map(|i| numa_of(i, gpn)).collect();
    let matrix = (0..gpn)
        .map(|i| {
            (0..gpn)
                .map(|j| {
                    if i == j {
                        return LinkKind::X;
                    }
                    match spec.shape {
                        Shape::NvSwitch(n) => LinkKind::Nv(n),
                        Shape::Islands(n) if numa[i] == numa[j] => LinkKind::Nv(n),
                        Shape::Islands(_) => LinkKind::Sys,
                        Shape::Pcie if i / 2 == j / 2 => LinkKind::Pix,
                        Shape::Pcie if numa[i] == numa[j] => LinkKind::Node,
                        Shape::Pcie => LinkKind::Sys,
                    }
                })
                .collect()
        })
        .collect();
    let nics = usize::from(spec.ports);
    let nics = (0..nics)
        .map(|k| {
            let home = nic_home(k, nics, gpn);
            let home_numa = numa[home.start];
            let to_gpu = (0..gpn)
                .map(|i| {
                    if home.contains(&i) {
                        LinkKind::Pix
                    } else if numa[i] == home_numa {
                        LinkKind::Node
                    } else {
                        LinkKind::Sys
                    }
                })
                .collect();
            Nic { name: format_compact!("mlx5_{k}"), to_gpu }
        })
        .collect();
    let sockets = if gpn >= 2 { 2 } else { 1 };
    let cores = spec.cpus as usize / 2;
    let affinity: Vec<Text> = (0..sockets)
        .map(|s| {
            let (a, b) = (s * cores / sockets, (s + 1) * cores / sockets - 1);
            format_compact!("{a}-{b},{}-{}", a + cores, b + cores)
        })
        .collect();
    let cpu_affinity = numa.iter().map(|&n| affinity[usize::from(n)].clone()).collect();
    Topology { matrix, nics, cpu_affinity, numa }
}

/// A deterministic 64-bit mix (splitmix64).
pub(super) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn gpu_uuid(seed: u64, global: usize) -> Text {
    let a = mix(seed ^ mix(global as u64));
    let b = mix(a ^ 0x0005_DEEC_E66D);
    format_compact!(
        "GPU-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

fn new_ports(spec: &PoolSpec, rng: &mut fastrand::Rng) -> Vec<FabricPort> {
    (0..spec.ports)
        .map(|k| FabricPort {
            name: format_compact!("mlx5_{k}/1"),
            kind: FabricKind::InfiniBand,
            state: PortState::Active,
            rate_gbps: 400,
            symbol_errors: rng.u64(0..4),
            rcv_errors: rng.u64(0..3),
            xmit_discards: rng.u64(0..6),
            link_downed: u64::from(rng.u8(0..10) == 0),
            flaps: 0,
            state_since: None,
            flaps_since: None,
            rx_gbps: 0.0,
            tx_gbps: 0.0,
        })
        .collect()
}

impl Cluster {
    pub fn new(n: usize, gpn: usize, seed: u64, rng: &mut fastrand::Rng) -> Cluster {
        let sizes = pool_sizes(n);
        let mut nodes = Vec::with_capacity(n);
        let mut pools = Vec::with_capacity(NPOOLS);
        let mut mig_seen = 0usize;
        for (p, &count) in sizes.iter().enumerate() {
            let spec = &POOLS[p];
            let first = nodes.len() as u32;
            for _ in 0..count {
                let i = nodes.len();
                let mut usable = if gpn >= 16 { u16::MAX } else { (1u16 << gpn) - 1 };
                if p == catalog::A100 && gpn >= 2 {
                    // Every third A100 node has its last GPU split into MIG slices.
                    if mig_seen.is_multiple_of(3) {
                        usable &= !(1 << (gpn - 1));
                    }
                    mig_seen += 1;
                }
                nodes.push(NodeSim {
                    name: node_name(i, n),
                    pool: p as u8,
                    state: NodeState::Idle,
                    reason: None,
                    usable,
                    busy: 0,
                    bucket: None,
                    drift: false,
                    zone: (i * ZONES_LEN / n.max(1)) as u8,
                    ports: new_ports(spec, rng),
                    state_dirty: false,
                    alloc_dirty: false,
                    ports_dirty: false,
                });
            }
            let range = first..nodes.len() as u32;
            pools.push(PoolSim {
                topology: (!range.is_empty()).then(|| Arc::new(topology(spec, gpn))),
                nodes: range,
                by_free: vec![BTreeSet::new(); gpn + 1],
                free: 0,
            });
        }
        let mut gpus = vec![GpuSim::default(); n * gpn];
        for (i, node) in nodes.iter().enumerate() {
            let full = if gpn >= 16 { u16::MAX } else { (1u16 << gpn) - 1 };
            if node.pool as usize == catalog::A100 && node.usable != full {
                gpus[i * gpn + gpn - 1].flags |= F_MIG;
            }
        }
        Cluster { gpn, seed, nodes, gpus, pools, faults: Vec::new() }
    }

    /// Puts every schedulable node in its pool's free buckets. Call once the node states are set.
    pub fn index_free(&mut self) {
        for i in 0..self.nodes.len() {
            self.rebucket(i as u32);
        }
    }

    /// Moves a node to the bucket matching its free GPUs (or out, when unschedulable) and keeps
    /// the pool's free count.
    fn rebucket(&mut self, i: u32) {
        let node = &mut self.nodes[i as usize];
        let pool = &mut self.pools[usize::from(node.pool)];
        if let Some(b) = node.bucket.take() {
            pool.by_free[usize::from(b)].remove(&i);
            pool.free -= u32::from(b);
        }
        if node.state.schedulable() {
            let free = node.free();
            pool.by_free[free as usize].insert(i);
            pool.free += free;
            node.bucket = Some(free as u8);
        }
    }

    /// Idle/Mixed/Allocated from the allocation, for schedulable nodes.
    fn restate(&mut self, i: u32) {
        let node = &mut self.nodes[i as usize];
        if !node.state.schedulable() {
            return;
        }
        let alloc = node.alloc();
        let state = match alloc {
            0 => NodeState::Idle,
            a if a as usize >= self.gpn => NodeState::Allocated,
            _ => NodeState::Mixed,
        };
        if state != node.state {
            node.state = state;
            node.state_dirty = true;
        }
    }

    pub fn set_state(&mut self, i: u32, state: NodeState, reason: Option<NodeReason>) {
        let node = &mut self.nodes[i as usize];
        node.state = state;
        node.reason = reason;
        node.state_dirty = true;
        self.restate(i);
        self.rebucket(i);
    }

    /// Whether a job of `gpus` could start in `pool` right now.
    pub fn can_fit(&self, pool: usize, gpus: u32) -> bool {
        let p = &self.pools[pool];
        if gpus as usize <= self.gpn {
            (gpus as usize..=self.gpn).any(|f| !p.by_free[f].is_empty())
        } else {
            p.free >= gpus
        }
    }

    /// Hands `gpus` GPUs of `pool` to `job`: best fit on one node when it fits on one, else whole
    /// nodes first. Returns the nodes used, or `None` (nothing changed) when it does not fit.
    pub fn alloc(&mut self, pool: usize, gpus: u32, job: JobId, prof: Profile) -> Option<Vec<u32>> {
        if gpus == 0 || !self.can_fit(pool, gpus) {
            return None;
        }
        let p = &self.pools[pool];
        let mut plan: Vec<(u32, u32)> = Vec::new();
        if gpus as usize <= self.gpn {
            let f = (gpus as usize..=self.gpn).find(|&f| !p.by_free[f].is_empty())?;
            plan.push((*p.by_free[f].first()?, gpus));
        } else {
            let mut left = gpus;
            'outer: for f in (1..=self.gpn).rev() {
                for &n in &p.by_free[f] {
                    let take = left.min(f as u32);
                    plan.push((n, take));
                    left -= take;
                    if left == 0 {
                        break 'outer;
                    }
                }
            }
            if left > 0 {
                return None;
            }
        }
        let nodes = plan.iter().map(|&(n, _)| n).collect();
        for (n, take) in plan {
            self.alloc_on(n, take, job, prof);
        }
        Some(nodes)
    }

    /// Hands the lowest `count` free usable GPUs of node `i` to `job` (whatever the node's state).
    /// Returns how many it got.
    pub fn alloc_on(&mut self, i: u32, count: u32, job: JobId, prof: Profile) -> u32 {
        let gpn = self.gpn;
        let node = &mut self.nodes[i as usize];
        let mut got = 0;
        for k in 0..gpn {
            if got == count {
                break;
            }
            let bit = 1u16 << k;
            if node.usable & bit == 0 || node.busy & bit != 0 {
                continue;
            }
            node.busy |= bit;
            got += 1;
            let g = &mut self.gpus[i as usize * gpn + k];
            g.job = job;
            g.job_dirty = true;
            g.target = prof.util;
            g.tensor_pct = prof.tensor_pct;
            g.mem_pct = prof.mem_pct;
            if prof.idle {
                g.flags |= F_IDLE;
            }
            // Ramp up fast enough that a fresh job never looks idle.
            g.util = g.util.max(f32::from(prof.util) * 0.6);
        }
        if got > 0 {
            node.alloc_dirty = true;
            self.restate(i);
            self.rebucket(i);
        }
        got
    }

    /// Frees every GPU `job` holds on node `i`.
    pub fn release(&mut self, i: u32, job: JobId) {
        let gpn = self.gpn;
        let node = &mut self.nodes[i as usize];
        for k in 0..gpn {
            let g = &mut self.gpus[i as usize * gpn + k];
            if g.job == job && job != 0 {
                g.job = 0;
                g.job_dirty = true;
                g.flags &= !F_IDLE;
                node.busy &= !(1u16 << k);
                node.alloc_dirty = true;
            }
        }
        self.restate(i);
        self.rebucket(i);
    }

    /// Rewrites job keys on GPUs (used once, when the initial jobs get their ids).
    pub fn remap_jobs(&mut self, map: impl Fn(JobId) -> JobId) {
        for g in &mut self.gpus {
            if g.job != 0 {
                g.job = map(g.job);
            }
        }
    }

    pub fn cpus_per_gpu(&self, node: &NodeSim) -> u32 {
        node.spec().cpus / self.gpn as u32
    }

    pub fn mem_per_gpu(&self, node: &NodeSim) -> u64 {
        node.spec().mem_mib * 7 / 8 / self.gpn as u64
    }

    /// The model's view of node `i`.
    pub fn node(&self, i: usize) -> Node {
        let n = &self.nodes[i];
        let spec = n.spec();
        let gpn = self.gpn;
        let down = n.state.is_down();
        let rack = i / catalog::RACK_NODES;
        let mut labels = BTreeMap::new();
        let mut label = |k: &'static str, v: Text| {
            labels.insert(Text::const_new(k), v);
        };
        label("nvidia.com/gpu.product", Text::const_new(spec.product_label));
        label("nvidia.com/gpu.memory", spec.gpu_mem_mib.to_compact_string());
        label("nvidia.com/gpu.count", gpn.to_compact_string());
        label("nvidia.com/gpu.machine", Text::const_new(spec.machine));
        label("topology.kubernetes.io/zone", Text::const_new(catalog::ZONES[usize::from(n.zone)]));
        label("topology.kubernetes.io/rack", format_compact!("r{:03}", rack + 1));
        label("gpuplane.io/pool", Text::const_new(spec.name));
        let gpus = (0..gpn)
            .map(|k| {
                let gi = i * gpn + k;
                let g = &self.gpus[gi];
                let fault = self.faults.iter().find(|f| f.gpu == gi);
                let report = !down && g.flags & F_SILENT == 0;
                let mig = if g.flags & F_MIG != 0 {
                    catalog::MIG_LAYOUT
                        .iter()
                        .map(|p| MigSlice { profile: Text::const_new(p), job: None })
                        .collect()
                } else {
                    Vec::new()
                };
                let sample = super::telemetry::sample_of(g, k as u8);
                Gpu {
                    index: k as u8,
                    uuid: gpu_uuid(self.seed, gi),
                    model: Text::const_new(spec.gpu_model),
                    mem_total_mib: spec.gpu_mem_mib,
                    mem_used_mib: sample.mem_used_mib.filter(|_| report),
                    util: sample.util.filter(|_| report),
                    tensor_active: sample.tensor_active.filter(|_| report),
                    temp_c: sample.temp_c.filter(|_| report),
                    power_w: sample.power_w.filter(|_| report),
                    power_limit_w: spec.power_limit_w,
                    ecc: fault.map(|f| f.ecc).unwrap_or_default(),
                    ecc_at: None,
                    xid: fault.and_then(|f| f.xid),
                    mig,
                    job: (g.job != 0).then_some(g.job),
                    links: Default::default(),
                    idle_since: None,
                    processes: Vec::new(),
                    local: None,
                }
            })
            .collect();
        let alloc = n.alloc();
        Node {
            cluster: Default::default(),
            name: n.name.clone(),
            state: n.state,
            reason: n.reason.clone(),
            pool: Text::const_new(spec.name),
            labels,
            cpus_total: spec.cpus,
            cpus_alloc: alloc * self.cpus_per_gpu(n),
            mem_total_mib: spec.mem_mib,
            mem_alloc_mib: u64::from(alloc) * self.mem_per_gpu(n),
            gpu_slots: gpn as u32,
            gpu_alloc: alloc,
            gpus,
            topology: self.pools[usize::from(n.pool)].topology.clone(),
            ports: n.ports.clone(),
            driver: Some(Text::const_new(if n.drift { catalog::DRIFT_DRIVER } else { catalog::DRIVER })),
            cuda: Some(Text::const_new(if n.drift { catalog::DRIFT_CUDA } else { catalog::CUDA })),
        }
    }
}

const ZONES_LEN: usize = catalog::ZONES.len();
