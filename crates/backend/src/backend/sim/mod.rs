//! The built-in simulated GPU cluster, the default when no real backend is configured.
//!
//! A [`Sim`] is a deterministic function of its [`SimConfig`]: the same seed gives the same
//! cluster and the same ticks, bit for bit, and no wall clock is read (time is
//! `start + ticks * tick_s`). It keeps its own compact bookkeeping (bit masks of free GPUs per
//! node, free-count buckets per pool, a heap of job end times) and builds the model's types only
//! for the [`Update`]s it sends, so it scales to 10,000 nodes and 200,000 jobs.
//!
//! Every cluster of four nodes or more carries the same planted problems (see [`Planted`]): a GPU
//! fallen off the bus, double-bit ECC errors, a flapping IB port, a hot GPU, a stuck job holding
//! idle GPUs, a team over quota, drained and maintenance nodes, and the researcher's pending job.

mod catalog;
mod hardware;
mod jobs;
mod telemetry;
#[cfg(test)]
mod tests;

use crate::model::ActionError;
use crate::model::protocol::{Delta, Inventory, NodeSample, SourceStatus, Update};
use crate::model::{
    EccCounts, Epoch, JobId, JobState, NodeReason, NodeState, PortState, Queue, QueueKind, Quota, Text,
    XidEvent,
};
use catalog::{A100, H100, LLM, NPOOLS, POOLS, RESEARCH, TEAMS, VISION};
use hardware::{Cluster, F_HOT, F_SILENT, GpuFault};
use jobs::{Exit, IDLE, JobBook, Menu, PINNED, Reason, SimJob, TeamBook};
use std::collections::VecDeque;

/// What to simulate.
/// The simulator's source name in the header.
pub const SOURCE: &str = "sim";

/// The first job id the simulator hands out.
pub const FIRST_JOB_ID: JobId = jobs::FIRST_ID;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimConfig {
    pub seed: u64,
    pub nodes: usize,
    /// 1 to 16.
    pub gpus_per_node: u8,
    /// Jobs to keep (active plus finished history); 0 means about `nodes * 8 / 3`, at least 60.
    pub jobs: usize,
    /// Sim clock at start, Unix seconds.
    pub start: Epoch,
    /// Sim seconds per tick.
    pub tick_s: i64,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self { seed: 42, nodes: 16, gpus_per_node: 8, jobs: 0, start: 1_767_225_600, tick_s: 2 }
    }
}

impl SimConfig {
    /// The job count with "auto" resolved.
    pub fn job_target(&self) -> usize {
        if self.jobs == 0 { (self.nodes * 8 / 3).max(60) } else { self.jobs }
    }
}

/// Where the planted problems are, for tests, demos and docs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Planted {
    /// Down node whose GPU `xid_gpu` fell off the bus (XID 79).
    pub xid_node: Option<Text>,
    pub xid_gpu: u8,
    /// Node (draining, or drained on small clusters) with double-bit ECC errors on `dbe_gpu` (XID 48).
    pub dbe_node: Option<Text>,
    pub dbe_gpu: u8,
    /// Drained and cordoned nodes (with reasons, who and when).
    pub drained_nodes: Vec<Text>,
    pub maintenance_node: Option<Text>,
    /// IB port that flaps.
    pub flap_node: Text,
    pub flap_port: Text,
    pub hot_node: Text,
    pub hot_gpu: u8,
    /// Running job whose GPUs sit idle, and the node it holds.
    pub idle_job: JobId,
    pub idle_node: Text,
    pub over_quota_team: Text,
    /// The researcher's pending job (reason `Priority`, rank > 1).
    pub demo_job: JobId,
    /// The higher-priority job ahead of it (over-quota team, `QOSGrpGRES`).
    pub blocker_job: JobId,
    /// A job waiting for the down node (`ReqNodeNotAvail`).
    pub reqnode_job: Option<JobId>,
    /// Nodes left on an older driver.
    pub drift_nodes: Vec<Text>,
}

/// The flapping port's recent state changes.
#[derive(Debug, Clone)]
struct Flap {
    node: u32,
    port: usize,
    changes: VecDeque<Epoch>,
}

/// Window over which port state changes are counted.
const FLAP_WINDOW_S: i64 = 300;

/// The simulated cluster. Cloning it forks the simulation (same future ticks).
#[derive(Clone)]
pub struct Sim {
    cfg: SimConfig,
    rng: fastrand::Rng,
    now: Epoch,
    tick_no: u64,
    jobs_target: usize,
    cluster: Cluster,
    book: JobBook,
    menus: Vec<Menu>,
    storage: Vec<telemetry::FsSim>,
    flap: Flap,
    draining: Vec<u32>,
    planted: Planted,
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("seed", &self.cfg.seed)
            .field("nodes", &self.cluster.nodes.len())
            .field("gpus_per_node", &self.cluster.gpn)
            .field("jobs", &self.book.len())
            .field("now", &self.now)
            .field("ticks", &self.tick_no)
            .finish_non_exhaustive()
    }
}

/// Node picks for the planted problems (indices into the node list).
#[derive(Debug, Default)]
struct Layout {
    xid: Option<u32>,
    dbe: Option<u32>,
    dbe_draining: bool,
    drained: Option<u32>,
    cordoned: Option<u32>,
    maint: Option<u32>,
    flap: u32,
    hot: u32,
    idle: u32,
    drift: Vec<u32>,
}

/// Spreads the planted problems over the h100 pool (the maintenance node goes to a100 when it has
/// two nodes or more). Unschedulable picks never share a node; clusters under four nodes get
/// only the problems that need no unschedulable node.
fn layout(sizes: &[usize; NPOOLS], n: usize) -> Layout {
    let h = sizes[H100];
    let mut taken = vec![false; h];
    let mut pick = |frac: f64| -> Option<u32> {
        let start = ((h as f64 * frac) as usize).min(h - 1);
        let i = (0..h).map(|k| (start + k) % h).find(|&i| !taken[i])?;
        taken[i] = true;
        Some(i as u32)
    };
    let mut l = Layout::default();
    if n >= 4 {
        l.xid = pick(0.3);
        if n >= 8 {
            l.dbe = pick(0.6);
            l.dbe_draining = true;
        }
        l.drained = pick(0.85);
        if n >= 12 {
            l.cordoned = pick(0.95);
        }
        l.maint = if sizes[A100] >= 2 {
            Some((sizes[H100] + sizes[catalog::H200] + sizes[A100] / 2) as u32)
        } else {
            pick(0.7)
        };
        if l.dbe.is_none() {
            l.dbe = l.drained;
        }
    }
    let sched = |frac: f64| -> u32 {
        let start = ((h as f64 * frac) as usize).min(h - 1);
        (0..h).map(|k| (start + k) % h).find(|&i| !taken[i]).unwrap_or(start) as u32
    };
    l.flap = sched(0.1);
    l.hot = sched(0.4);
    l.idle = sched(0.5);
    l.drift = if n >= 8 { vec![sched(0.2), sched(0.7)] } else { vec![sched(0.2)] };
    l.drift.dedup();
    l
}

fn reason_of(text: &str, by: &str, at: Epoch) -> Option<NodeReason> {
    reason(text.to_string(), by, at)
}

fn reason(text: String, by: &str, at: Epoch) -> Option<NodeReason> {
    Some(NodeReason { text: Text::from(text), by: Text::from(by), at })
}

/// Places a job on GPUs at construction time, as if it started at `start`, and adds it to the
/// construction list `init` (GPU holders are keyed by list index + 1 until ids are given out).
/// Returns its index, or `None` when it does not fit.
fn place(
    cluster: &mut Cluster,
    teams: &mut [TeamBook; 5],
    init: &mut Vec<SimJob>,
    mut job: SimJob,
    on: Option<u32>,
    start: Epoch,
    rng: &mut fastrand::Rng,
) -> Option<usize> {
    let key = init.len() as JobId + 1;
    let prof = job.profile();
    let nodes = match on {
        Some(node) => {
            let got = cluster.alloc_on(node, job.gpus, key, prof);
            if got == 0 {
                return None;
            }
            job.gpus = got;
            vec![node]
        }
        None => cluster.alloc(usize::from(job.pool), job.gpus, key, prof)?,
    };
    job.nodes = nodes.into_boxed_slice();
    job.state = JobState::Running;
    job.start = Some(start);
    job.submit = start - wait(rng);
    teams[usize::from(job.team)].used += job.gpus;
    init.push(job);
    Some(init.len() - 1)
}

/// A queue wait: mostly minutes, sometimes hours.
fn wait(rng: &mut fastrand::Rng) -> i64 {
    10 + (rng.f64().powi(3) * 4.0 * 3600.0) as i64
}

impl Sim {
    pub fn new(cfg: SimConfig) -> Sim {
        let n = cfg.nodes.max(1);
        let gpn = usize::from(cfg.gpus_per_node.clamp(1, 16));
        let now = cfg.start;
        let mut rng = fastrand::Rng::with_seed(cfg.seed);
        let mut cluster = Cluster::new(n, gpn, cfg.seed, &mut rng);
        let sizes = hardware::pool_sizes(n);
        let lay = layout(&sizes, n);
        let mut planted = Planted::default();
        let gpu_at = |k: usize| k.min(gpn - 1);
        let (xid_gpu, dbe_gpu, hot_gpu) = (gpu_at(3), gpu_at(5), gpu_at(6));

        // Broken and unschedulable nodes.
        let xid_at = now - 37 * 60 - 12;
        if let Some(x) = lay.xid {
            let gi = x as usize * gpn + xid_gpu;
            cluster.gpus[gi].flags |= F_SILENT;
            cluster.nodes[x as usize].usable &= !(1 << xid_gpu);
            let xid = XidEvent { code: 79, at: xid_at, count: 1 };
            cluster.faults.push(GpuFault { gpu: gi, ecc: EccCounts::default(), xid: Some(xid) });
            let why = format!("Not responding: XID 79, GPU {xid_gpu} fell off the bus");
            cluster.set_state(x, NodeState::Down, reason(why, "slurmctld", xid_at + 45));
            planted.xid_node = Some(cluster.nodes[x as usize].name.clone());
            planted.xid_gpu = xid_gpu as u8;
        }
        let dbe_at = now - 2 * 3600 - 17 * 60;
        let dbe_why = format!("DBE ECC errors on GPU {dbe_gpu} (XID 48)");
        if let Some(x) = lay.dbe {
            let gi = x as usize * gpn + dbe_gpu;
            cluster.nodes[x as usize].usable &= !(1 << dbe_gpu);
            let xid = XidEvent { code: 48, at: dbe_at, count: 2 };
            cluster.faults.push(GpuFault { gpu: gi, ecc: EccCounts { sbe: 14, dbe: 2 }, xid: Some(xid) });
            if lay.dbe_draining {
                cluster.set_state(x, NodeState::Draining, reason(dbe_why.clone(), "nhc", dbe_at + 30));
            }
            planted.dbe_node = Some(cluster.nodes[x as usize].name.clone());
            planted.dbe_gpu = dbe_gpu as u8;
        }
        if let Some(x) = lay.drained {
            let r = if lay.dbe == lay.drained {
                reason(dbe_why, "nhc", dbe_at + 30)
            } else {
                reason("RMA: PSU failure, ticket OPS-4127".into(), "jane", now - 2 * 86_400 + 3_127)
            };
            cluster.set_state(x, NodeState::Drained, r);
            planted.drained_nodes.push(cluster.nodes[x as usize].name.clone());
        }
        if let Some(x) = lay.cordoned {
            let r = reason("kernel 6.8 canary, do not schedule".into(), "ops-bot", now - 6 * 3600 - 240);
            cluster.set_state(x, NodeState::Cordoned, r);
            planted.drained_nodes.push(cluster.nodes[x as usize].name.clone());
        }
        if let Some(x) = lay.maint {
            let r = reason("NVSwitch firmware upgrade (reservation maint-fw)".into(), "root", now - 5_400);
            cluster.set_state(x, NodeState::Maintenance, r);
            planted.maintenance_node = Some(cluster.nodes[x as usize].name.clone());
        }
        cluster.gpus[lay.hot as usize * gpn + hot_gpu].flags |= F_HOT;
        planted.hot_node = cluster.nodes[lay.hot as usize].name.clone();
        planted.hot_gpu = hot_gpu as u8;
        for &d in &lay.drift {
            cluster.nodes[d as usize].drift = true;
            planted.drift_nodes.push(cluster.nodes[d as usize].name.clone());
        }
        let flap_port = usize::from(POOLS[H100].ports.min(4)) - 1;
        {
            let node = &mut cluster.nodes[lay.flap as usize];
            let p = &mut node.ports[flap_port];
            p.flaps = 4;
            p.link_downed = 7;
            p.symbol_errors += 211;
            planted.flap_port = p.name.clone();
            planted.flap_node = node.name.clone();
        }
        let flap = Flap {
            node: lay.flap,
            port: flap_port,
            changes: [260, 200, 140, 80].iter().map(|s| now - s).collect(),
        };
        cluster.index_free();

        // Teams: nominal quotas; the over-quota team's is set once its long runs are placed.
        let total = (n * gpn) as u32;
        let mut teams = [TeamBook::default(); 5];
        for (t, spec) in TEAMS.iter().enumerate() {
            teams[t].quota = (total * spec.quota_pct / 100).max(1);
            teams[t].limit = if t == LLM { u32::MAX } else { teams[t].quota };
        }

        // Construction list; GPU holders are keyed by index + 1 until ids are given out.
        let mut init: Vec<SimJob> = Vec::with_capacity(cfg.job_target() + n);

        // The stuck job: allocated GPUs, idle for its whole run.
        let mut idle =
            jobs::fixed(catalog::IDLE_JOB_NAME, "dave", VISION, H100, (gpn as u32 / 2).clamp(1, 4), 6_100);
        idle.flags |= IDLE;
        (idle.util, idle.tensor_pct, idle.mem_pct) = (0, 0, 62);
        // It runs into the partition's time limit.
        (idle.run_s, idle.outcome, idle.exit) = (POOLS[H100].max_time_s, JobState::Timeout, Exit::TimeLimit);
        let started = now - 3 * 3600 - 600;
        let idle_ix = place(&mut cluster, &mut teams, &mut init, idle, Some(lay.idle), started, &mut rng)
            .expect("the idle job's node is schedulable");

        // The draining node still runs one job to completion.
        let mut draining = Vec::new();
        if lay.dbe_draining
            && let Some(x) = lay.dbe
        {
            let mut dj = jobs::fixed(catalog::DRAIN_JOB_NAME, "erin", VISION, H100, gpn as u32, 6_800);
            dj.run_s = 5 * 3600 + 20 * 60;
            dj.util = 88;
            place(&mut cluster, &mut teams, &mut init, dj, Some(x), now - 5 * 3600, &mut rng);
            draining.push(x);
        }

        // The over-quota team's long pretraining runs.
        let sched_h100 = cluster.pools[H100]
            .nodes
            .clone()
            .filter(|&i| cluster.nodes[i as usize].state.schedulable())
            .count();
        let users = TEAMS[LLM].users;
        let mut llm_base = 0;
        for k in 0..(sched_h100 / 10).max(1) {
            let pool = &cluster.pools[H100];
            if pool.free == 0 {
                break;
            }
            // Four whole nodes when there is room, leaving a node for others on small clusters.
            let whole = pool.by_free[gpn].len().saturating_sub(1).min(4) as u32;
            let size = if whole > 0 { whole * gpn as u32 } else { (pool.free / 2).max(1) };
            let mut a =
                jobs::fixed(catalog::ANCHOR_NAMES[k % 2], users[k % users.len()], LLM, H100, size, 10_500);
            a.priority += rng.u32(0..800);
            a.util = rng.u8(90..=97);
            a.run_s = rng.i64(10 * 86_400..13 * 86_400);
            let elapsed = rng.i64(86_400..3 * 86_400);
            match place(&mut cluster, &mut teams, &mut init, a, None, now - elapsed, &mut rng) {
                Some(i) => llm_base += init[i].gpus,
                None => break,
            }
        }
        if llm_base == 0 {
            // No room for a long run: the stuck job is the over-quota team's instead.
            let j = &mut init[idle_ix];
            teams[usize::from(j.team)].used -= j.gpus;
            (j.team, j.user) = (LLM as u8, catalog::user_index("bob"));
            teams[LLM].used += j.gpus;
            llm_base = j.gpus;
        }
        teams[LLM].quota = (total * TEAMS[LLM].quota_pct / 100).min(llm_base * 3 / 4);
        teams[LLM].limit = (teams[LLM].quota * 2).max(llm_base);
        planted.over_quota_team = Text::const_new(TEAMS[LLM].name);

        // Fill every pool to 84–92 % with running jobs.
        let menus: Vec<Menu> =
            (0..NPOOLS).map(|p| Menu::new(p, gpn as u32, cluster.pools[p].nodes.len() as u32)).collect();
        let mut running_by_pool: [Vec<usize>; NPOOLS] = Default::default();
        for (ix, j) in init.iter().enumerate() {
            running_by_pool[usize::from(j.pool)].push(ix);
        }
        for p in 0..NPOOLS {
            let pool = &cluster.pools[p];
            if pool.nodes.is_empty() {
                continue;
            }
            let cap: u32 = pool
                .nodes
                .clone()
                .map(|i| &cluster.nodes[i as usize])
                .filter(|n| n.state.schedulable())
                .map(|n| n.usable.count_ones())
                .sum();
            let goal = (f64::from(cap) * (0.84 + 0.08 * rng.f64())) as u32;
            // Stop once jobs keep failing to fit (or their teams are at their limits).
            let mut misses = 0;
            while cap - cluster.pools[p].free < goal && misses < 40 {
                let j = menus[p].draw(&mut rng);
                let t = &teams[usize::from(j.team)];
                if t.used + j.gpus > t.limit {
                    misses += 1;
                    continue;
                }
                let elapsed = (j.run_s as f64 * (0.03 + 0.94 * rng.f64())) as i64;
                match place(&mut cluster, &mut teams, &mut init, j, None, now - elapsed, &mut rng) {
                    Some(ix) => {
                        running_by_pool[p].push(ix);
                        misses = 0;
                    }
                    None => misses += 1,
                }
            }
        }

        // Pending work, including the planted jobs.
        for p in 0..NPOOLS {
            if cluster.pools[p].nodes.is_empty() {
                continue;
            }
            let target = (running_by_pool[p].len() / 4).max(3);
            for _ in 0..target + rng.usize(0..=target / 2) {
                let mut j = menus[p].draw(&mut rng);
                j.submit = now - 60 - (rng.f64().powi(2) * 6.0 * 3600.0) as i64;
                if rng.u8(0..33) == 0 {
                    j.held_until = j.submit + rng.i64(600..3 * 3600);
                } else if rng.u8(0..20) == 0 && !running_by_pool[p].is_empty() {
                    j.dep = running_by_pool[p][rng.usize(0..running_by_pool[p].len())] as JobId + 1;
                }
                init.push(j);
            }
        }
        let h100_gpus = cluster.pools[H100].nodes.len() as u32 * gpn as u32;
        let mut blocker = jobs::fixed(
            catalog::BLOCKER_JOB_NAME,
            "alice",
            LLM,
            H100,
            (8 * gpn as u32).min(h100_gpus),
            11_900,
        );
        (blocker.flags, blocker.reason, blocker.submit) = (PINNED, Reason::QosGrpGres, now - 5 * 3600 - 420);
        blocker.run_s = 12 * 86_400;
        init.push(blocker);
        let blocker_ix = init.len() - 1;
        let mut demo = jobs::fixed(catalog::DEMO_JOB_NAME, "researcher", RESEARCH, H100, gpn as u32, 4_200);
        (demo.flags, demo.reason, demo.submit) = (PINNED, Reason::Priority, now - 25 * 60 - 9);
        demo.est_start = Some(now + 47 * 60);
        demo.run_s = 3 * 3600;
        init.push(demo);
        let demo_ix = init.len() - 1;
        let mut reqnode_ix = None;
        if let Some(x) = lay.xid {
            let mut r = jobs::fixed(catalog::REQNODE_JOB_NAME, "judy", RESEARCH, H100, gpn as u32, 5_000);
            (r.flags, r.reason, r.submit, r.req_node) =
                (PINNED, Reason::ReqNodeNotAvail, now - 50 * 60, Some(x));
            init.push(r);
            reqnode_ix = Some(init.len() - 1);
        }

        // Finished history, spread over the last two days, plus the job the XID killed.
        if let Some(x) = lay.xid {
            let mut f = jobs::fixed(catalog::NODEFAIL_JOB_NAME, "bob", LLM, H100, 2 * gpn as u32, 10_200);
            let pool = &cluster.pools[H100];
            let next = pool.nodes.start + (x - pool.nodes.start + 1) % pool.nodes.len() as u32;
            f.nodes = if next == x { vec![x] } else { vec![x, next] }.into_boxed_slice();
            f.gpus = f.nodes.len() as u32 * gpn as u32;
            let end = xid_at + 40;
            (f.state, f.outcome, f.exit, f.retries) =
                (JobState::NodeFail, JobState::NodeFail, Exit::NodeFail, 1);
            f.start = Some(end - 9 * 3600 - 1_234);
            f.end = Some(end);
            f.submit = f.start.unwrap_or(end) - 1_260;
            f.account(end - f.start.unwrap_or(end));
            init.push(f);
        }
        let jobs_target = cfg.job_target();
        for _ in 0..jobs_target.saturating_sub(init.len()) {
            let node = rng.usize(0..n);
            let p = usize::from(cluster.nodes[node].pool);
            let mut j = menus[p].draw(&mut rng);
            let end = now - rng.i64(120..2 * 86_400);
            j.state = j.outcome;
            j.end = Some(end);
            if j.outcome == JobState::Cancelled && rng.u8(0..4) == 0 {
                // Cancelled while still pending.
                j.submit = end - rng.i64(60..3 * 3600);
                push_never_started(&mut init, j);
                continue;
            }
            let start = end - j.run_s;
            j.start = Some(start);
            j.submit = start - wait(&mut rng);
            let pool = &cluster.pools[p];
            let len = pool.nodes.len();
            let count = (j.gpus as usize).div_ceil(gpn).min(len) as u32;
            let first = (node as u32).min(pool.nodes.end - count);
            j.nodes = (first..first + count).collect();
            j.account(j.run_s);
            init.push(j);
        }

        // Ids in submit order.
        let mut order: Vec<usize> = (0..init.len()).collect();
        order.sort_by_key(|&i| (init[i].submit, i));
        let mut ids = vec![0; init.len()];
        for (rank, &i) in order.iter().enumerate() {
            ids[i] = jobs::FIRST_ID + rank as JobId;
        }
        cluster.remap_jobs(|k| ids[k as usize - 1]);
        for (i, j) in init.iter_mut().enumerate() {
            j.id = ids[i];
            if j.dep != 0 {
                j.dep = ids[j.dep as usize - 1];
            }
        }
        init.sort_unstable_by_key(|j| j.id);
        let mut book = JobBook { next_id: jobs::FIRST_ID + init.len() as JobId, ..JobBook::default() };
        let mut finished = Vec::new();
        for j in &mut init {
            let pool = usize::from(j.pool);
            match j.state {
                JobState::Running => {
                    // Accounting so far; the state adds to it from telemetry.
                    j.account(now - j.start.unwrap_or(now));
                    book.running.push(std::cmp::Reverse((j.end_plan(), j.id)));
                    book.running_per_pool[pool] += 1;
                }
                JobState::Pending => {
                    book.pending[pool].push(jobs::pend_key(j));
                    teams[usize::from(j.team)].pending += j.gpus;
                }
                _ => finished.push((j.end.unwrap_or(0), j.id)),
            }
        }
        // Sorted input: the map is bulk-built.
        book.map = init.into_iter().map(|j| (j.id, j)).collect();
        for q in &mut book.pending {
            q.sort_unstable();
        }
        finished.sort_unstable();
        book.finished = finished.into_iter().map(|(_, id)| id).collect();
        book.teams = teams;
        planted.idle_job = ids[idle_ix];
        planted.idle_node = cluster.nodes[lay.idle as usize].name.clone();
        planted.demo_job = ids[demo_ix];
        planted.blocker_job = ids[blocker_ix];
        planted.reqnode_job = reqnode_ix.map(|i| ids[i]);

        let mut sim = Sim {
            rng,
            now,
            tick_no: 0,
            jobs_target,
            cluster,
            book,
            menus,
            storage: telemetry::storage(n),
            flap,
            draining,
            planted,
            cfg,
        };
        for p in 0..NPOOLS {
            if !sim.cluster.pools[p].nodes.is_empty() {
                sim.book.schedule(&mut sim.cluster, p, now);
            }
        }
        // Settle the readings, then forget what changed: the inventory carries it all.
        let Cluster { nodes, gpus, .. } = &mut sim.cluster;
        let mut util = (0.0f64, 0u32);
        for (i, node) in nodes.iter_mut().enumerate() {
            let spec = node.spec();
            let mut sum = 0.0f32;
            for g in &mut gpus[i * gpn..(i + 1) * gpn] {
                telemetry::warm(g, spec, &mut sim.rng);
                g.job_dirty = false;
                sum += g.util;
            }
            telemetry::step_ports(&mut node.ports, sum / gpn as f32 / 100.0, &mut sim.rng);
            util.0 += f64::from(sum);
            util.1 += gpn as u32;
            (node.state_dirty, node.alloc_dirty, node.ports_dirty) = (false, false, false);
        }
        let load = util.0 / f64::from(util.1.max(1)) / 100.0;
        telemetry::step_storage(&mut sim.storage, 0, load, &mut sim.rng);
        sim.book.dirty.clear();
        sim
    }

    fn node_ix(&self, name: &str) -> Result<u32, ActionError> {
        self.cluster
            .nodes
            .iter()
            .position(|n| n.name == name)
            .map(|i| i as u32)
            .ok_or_else(|| ActionError::not_found(format!("node {name} does not exist")))
    }

    /// The state of a node by name (for preflight checks and tests).
    pub fn node_state(&self, name: &str) -> Option<NodeState> {
        self.node_ix(name).ok().map(|i| self.cluster.nodes[i as usize].state)
    }

    /// A node's index, refused as a conflict when `already` says it is in that state already.
    fn node_for(
        &self,
        node: &str,
        already: impl Fn(NodeState) -> Option<&'static str>,
    ) -> Result<u32, ActionError> {
        let i = self.node_ix(node)?;
        let st = self.cluster.nodes[i as usize].state;
        match already(st) {
            Some(why) => Err(ActionError::conflict(format!("node {node} {why} ({})", st.label()))),
            None => Ok(i),
        }
    }

    /// Marks a node unschedulable (Kubernetes-style cordon); running jobs continue. A node out
    /// of service already is a conflict.
    pub fn cordon(&mut self, node: &str, reason: &str, by: &str) -> Result<(), ActionError> {
        let i = self.node_for(node, |st| (!st.schedulable()).then_some("is already out of service"))?;
        let why = reason_of(reason, by, self.now);
        self.cluster.set_state(i, NodeState::Cordoned, why);
        Ok(())
    }

    /// Drains a node: no new work; it becomes drained once its jobs end. A draining or drained
    /// node is a conflict.
    ///
    /// A down node stays down, as Slurm shows it (`DOWN+DRAIN`): it keeps its state, its reason
    /// ("Not responding: …", who said so and since when) with the drain added to it, and its
    /// GPUs stay silent. Resuming it clears both.
    pub fn drain(&mut self, node: &str, reason: &str, by: &str) -> Result<(), ActionError> {
        let i = self.node_for(node, |st| match st {
            NodeState::Draining | NodeState::Drained => Some("is draining or drained already"),
            NodeState::DownDrain => Some("is down and drained already (down+drain)"),
            _ => None,
        })?;
        if self.cluster.nodes[i as usize].state == NodeState::Down {
            let down = self.cluster.nodes[i as usize].reason.clone();
            let drain = format!("drain by {by}: {reason}");
            let why = match down {
                Some(r) => Some(NodeReason { text: Text::from(format!("{}; {drain}", r.text)), ..r }),
                None => reason_of(&drain, by, self.now),
            };
            self.cluster.set_state(i, NodeState::DownDrain, why);
            return Ok(());
        }
        let why = reason_of(reason, by, self.now);
        if self.cluster.nodes[i as usize].alloc() > 0 {
            self.cluster.set_state(i, NodeState::Draining, why);
            if !self.draining.contains(&i) {
                self.draining.push(i);
            }
        } else {
            self.cluster.set_state(i, NodeState::Drained, why);
        }
        Ok(())
    }

    /// Returns a cordoned, draining, drained, down or maintenance node to service. A node in
    /// service is a conflict.
    pub fn resume(&mut self, node: &str) -> Result<(), ActionError> {
        let i = self.node_for(node, |st| st.schedulable().then_some("is in service already"))?;
        self.draining.retain(|&d| d != i);
        self.cluster.set_state(i, NodeState::Idle, None);
        Ok(())
    }

    /// Returns a cordoned node to service; any other state is a conflict.
    pub fn uncordon(&mut self, node: &str) -> Result<(), ActionError> {
        self.node_for(node, |st| (st != NodeState::Cordoned).then_some("is not cordoned"))?;
        self.resume(node)
    }

    /// Cancels a pending or running job (an unknown job is not found, a finished one a
    /// conflict).
    pub fn cancel(&mut self, job: JobId) -> Result<(), ActionError> {
        self.book.cancel_by_operator(&mut self.cluster, job, self.now)
    }

    /// Job records the simulated controller keeps (for tests of its forgetting).
    #[doc(hidden)]
    pub fn records_kept(&self) -> usize {
        self.book.map.len()
    }

    /// Whether every kept record is an active job's.
    #[doc(hidden)]
    pub fn records_all_active(&self) -> bool {
        self.book.map.values().all(|j| j.state.is_active())
    }

    /// Jobs the controller knows, kept or ended.
    #[doc(hidden)]
    pub fn jobs_known(&self) -> usize {
        self.book.len()
    }

    pub fn now(&self) -> Epoch {
        self.now
    }

    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// Where the planted problems are.
    pub fn planted(&self) -> &Planted {
        &self.planted
    }

    /// After [`initial`](Self::initial) was sent: the finished jobs it carried are the
    /// console's now, so only their end states are kept (see [`JobBook::forget_ended`]); a
    /// later `initial` lists the active jobs only.
    pub fn handed_out(&mut self) {
        let ended: Vec<JobId> =
            self.book.map.values().filter(|j| !j.state.is_active()).map(|j| j.id).collect();
        self.book.forget_ended(ended);
    }

    /// The source status and a full inventory of the cluster as it is now.
    pub fn initial(&self) -> Vec<Update> {
        let status = SourceStatus {
            cluster: Default::default(),
            name: Text::const_new(SOURCE),
            simulated: true,
            ok_at: Some(self.now),
            error: None,
            detail: Some(Text::from(format!("seed {}", self.cfg.seed))),
        };
        let mut nodes: Vec<_> = (0..self.cluster.nodes.len()).map(|i| self.cluster.node(i)).collect();
        // The stuck job's GPUs have been idle since it started.
        if let Some(j) = self.book.map.get(&self.planted.idle_job)
            && j.state == JobState::Running
        {
            for &n in j.nodes.iter() {
                for g in nodes[n as usize].gpus.iter_mut().filter(|g| g.job == Some(j.id)) {
                    g.idle_since = j.start;
                }
            }
        }
        let jobs = self.book.map.values().map(|j| self.book.job(j, &self.cluster)).collect();
        let inventory = Inventory {
            source: SOURCE.into(),
            cluster: Some(Text::from(format!("sim-{}x{}", self.cluster.nodes.len(), self.cluster.gpn))),
            nodes: Some(nodes),
            jobs: Some(jobs),
            queues: Some(self.queues()),
            quotas: Some(self.quotas()),
            storage: Some(self.storage.iter().map(|f| f.fs.clone()).collect()),
        };
        vec![Update::Status(status), Update::Inventory { at: self.now, inventory: Box::new(inventory) }]
    }

    fn queues(&self) -> Vec<Queue> {
        (0..NPOOLS)
            .filter(|&p| !self.cluster.pools[p].nodes.is_empty())
            .map(|p| {
                let count = self.cluster.pools[p].nodes.len() as u32;
                Queue {
                    cluster: Default::default(),
                    name: Text::const_new(POOLS[p].name),
                    kind: QueueKind::Partition,
                    parent: None,
                    up: true,
                    nodes: count,
                    gpus: count * self.cluster.gpn as u32,
                    max_time_s: Some(POOLS[p].max_time_s),
                }
            })
            .collect()
    }

    fn quotas(&self) -> Vec<Quota> {
        TEAMS
            .iter()
            .zip(&self.book.teams)
            .map(|(spec, t)| Quota {
                cluster: Default::default(),
                team: Text::const_new(spec.name),
                gpu_quota: t.quota,
                gpu_used: t.used,
                borrowed: t.used.saturating_sub(t.quota),
                lendable: t.quota.saturating_sub(t.used),
                gpu_pending: t.pending,
            })
            .collect()
    }

    /// Advances the clock by one tick and returns everything that changed.
    pub fn tick(&mut self) -> Update {
        self.now += self.cfg.tick_s.max(1);
        self.tick_no += 1;
        let now = self.now;
        let mut d = Delta { source: SOURCE.into(), at: now, ..Delta::default() };
        self.book.trim(self.jobs_target, &mut d.jobs_remove);
        self.book.finish_due(&mut self.cluster, now);
        let cluster = &mut self.cluster;
        self.draining.retain(|&i| {
            let node = &cluster.nodes[i as usize];
            if node.alloc() > 0 {
                return true;
            }
            let why = node.reason.clone();
            cluster.set_state(i, NodeState::Drained, why);
            false
        });
        self.arrivals();
        for p in 0..NPOOLS {
            if !self.cluster.pools[p].nodes.is_empty() {
                self.book.schedule(&mut self.cluster, p, now);
            }
        }
        self.refresh_pinned();
        self.flap_step();
        let load;
        (d.nodes, load) = self.telemetry();
        telemetry::step_storage(&mut self.storage, self.tick_no, load, &mut self.rng);
        d.storage = Some(self.storage.iter().map(|f| f.fs.clone()).collect());
        d.quotas = Some(self.quotas());
        let mut dirty = std::mem::take(&mut self.book.dirty);
        dirty.sort_unstable();
        dirty.dedup();
        d.jobs_upsert = dirty
            .iter()
            .filter_map(|id| self.book.map.get(id))
            .map(|j| self.book.job(j, &self.cluster))
            .collect();
        self.book.forget_ended(dirty.iter().copied());
        dirty.clear();
        self.book.dirty = dirty;
        Update::Delta(Box::new(d))
    }

    /// New submissions: roughly one per finished job, more when a queue runs short.
    fn arrivals(&mut self) {
        let tick_s = self.cfg.tick_s.max(1) as f64;
        let gpn = self.cluster.gpn as u32;
        for p in 0..NPOOLS {
            if self.cluster.pools[p].nodes.is_empty() {
                continue;
            }
            // A queue about a quarter as long as what runs.
            let target = (self.book.running_per_pool[p] as usize / 4).max(3);
            let len = self.book.pending[p].len();
            let mut count = self.book.finished_now[p];
            if len > 2 * target {
                count /= 2;
            }
            if len < 2 * target && self.rng.f64() < tick_s / 300.0 {
                count += 1;
            }
            if len < target && self.rng.f64() < tick_s / 60.0 {
                count += 1;
            }
            for _ in 0..count {
                let mut j = self.menus[p].draw(&mut self.rng);
                for _ in 0..3 {
                    // Teams with a long backlog already submit less.
                    let t = &self.book.teams[usize::from(j.team)];
                    if t.pending <= t.limit.max(gpn) {
                        break;
                    }
                    j = self.menus[p].draw(&mut self.rng);
                }
                j.submit = self.now;
                if self.rng.u8(0..33) == 0 {
                    j.held_until = self.now + self.rng.i64(120..3600);
                } else if self.rng.u8(0..20) == 0 {
                    let running = self.book.running.as_slice();
                    if !running.is_empty() {
                        j.dep = running[self.rng.usize(0..running.len())].0.1;
                    }
                }
                self.book.submit(j);
            }
        }
    }

    /// Keeps the demo job's start estimate in the future.
    fn refresh_pinned(&mut self) {
        let now = self.now;
        if let Some(j) = self.book.map.get_mut(&self.planted.demo_job)
            && j.state == JobState::Pending
            && j.est_start.is_none_or(|e| e < now + 5 * 60)
        {
            j.est_start = Some(now + self.rng.i64(40 * 60..50 * 60));
            self.book.dirty.push(j.id);
        }
    }

    /// The flapping port goes down for one tick in six.
    fn flap_step(&mut self) {
        let f = &mut self.flap;
        let node = &mut self.cluster.nodes[f.node as usize];
        let port = &mut node.ports[f.port];
        match self.tick_no % 6 {
            3 => {
                port.state = PortState::Down;
                port.link_downed += 1;
                f.changes.push_back(self.now);
            }
            4 => {
                port.state = PortState::Active;
                f.changes.push_back(self.now);
            }
            _ => {}
        }
        while f.changes.front().is_some_and(|&t| t < self.now - FLAP_WINDOW_S) {
            f.changes.pop_front();
        }
        let flaps = f.changes.len() as u32;
        if flaps != port.flaps || matches!(self.tick_no % 6, 3 | 4) {
            port.flaps = flaps;
            node.ports_dirty = true;
        }
    }

    /// Moves every GPU and emits one sample per node; returns the samples and the cluster load.
    fn telemetry(&mut self) -> (Vec<NodeSample>, f64) {
        let gpn = self.cluster.gpn;
        let tick = self.tick_no as usize;
        let (cpus_per_gpu, mem_per_gpu): (Vec<u32>, Vec<u64>) =
            POOLS.iter().map(|s| (s.cpus / gpn as u32, s.mem_mib * 7 / 8 / gpn as u64)).unzip();
        let Cluster { nodes, gpus, .. } = &mut self.cluster;
        let rng = &mut self.rng;
        let mut out = Vec::with_capacity(nodes.len());
        let (mut util_sum, mut util_n) = (0.0f64, 0u32);
        for (i, node) in nodes.iter_mut().enumerate() {
            let spec = node.spec();
            let mut samples = crate::model::protocol::GpuSamples::new();
            let mut node_util = 0.0f32;
            if !node.state.is_down() {
                samples.reserve_exact(gpn);
                for (k, g) in gpus[i * gpn..(i + 1) * gpn].iter_mut().enumerate() {
                    if g.flags & F_SILENT != 0 {
                        continue;
                    }
                    telemetry::step(g, spec, rng);
                    let mut s = telemetry::sample_of(g, k as u8);
                    if g.job_dirty {
                        s.job = Some((g.job != 0).then_some(g.job));
                        g.job_dirty = false;
                    }
                    node_util += g.util;
                    samples.push(s);
                }
                util_sum += f64::from(node_util);
                util_n += samples.len() as u32;
            }
            let refresh = (tick + i).is_multiple_of(5) && !node.state.is_down();
            if refresh {
                telemetry::step_ports(&mut node.ports, node_util / gpn as f32 / 100.0, rng);
            }
            let ports = (refresh || node.ports_dirty).then(|| node.ports.clone());
            let state = node.state_dirty.then_some(node.state);
            let reason = node.state_dirty.then(|| node.reason.clone());
            let alloc = node.alloc_dirty.then(|| node.alloc());
            (node.state_dirty, node.alloc_dirty, node.ports_dirty) = (false, false, false);
            if samples.is_empty() && ports.is_none() && state.is_none() && alloc.is_none() {
                continue;
            }
            let p = usize::from(node.pool);
            out.push(NodeSample {
                node: node.name.clone(),
                state,
                reason,
                gpu_alloc: alloc,
                cpus_alloc: alloc.map(|a| a * cpus_per_gpu[p]),
                mem_alloc_mib: alloc.map(|a| u64::from(a) * mem_per_gpu[p]),
                gpus: samples,
                topology: None,
                processes: None,
                local: None,
                ports,
            });
        }
        (out, util_sum / f64::from(util_n.max(1)) / 100.0)
    }
}

/// History entry that never started.
fn push_never_started(init: &mut Vec<SimJob>, mut j: SimJob) {
    j.start = None;
    j.nodes = Box::new([]);
    j.exit = Exit::Cancelled;
    j.gpu_seconds = 0.0;
    j.useful_gpu_seconds = 0.0;
    init.push(j);
}

/// Work done on the running simulator between ticks: the ops layer sends operator actions as
/// these, so the simulator needs to know nothing of actions, plans or audit.
pub struct SimOp(pub Box<dyn FnOnce(&mut Sim) + Send>);

impl std::fmt::Debug for SimOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SimOp")
    }
}

/// The simulator as a backend task: sends [`Sim::initial`], then one tick every `period`, until
/// `cancel` fires or the receiver is dropped. Building and ticking run on the blocking pool, so a
/// big cluster never stalls the runtime's workers.
pub async fn run(
    cfg: SimConfig,
    tx: tokio::sync::mpsc::Sender<Update>,
    period: std::time::Duration,
    cancel: tokio_util::sync::CancellationToken,
) {
    run_with_ops(cfg, tx, period, cancel, None).await;
}

/// [`run`], also taking operator actions: each is applied to the simulated world and answered,
/// and a tick follows at once so the screen shows the result.
pub async fn run_with_ops(
    cfg: SimConfig,
    tx: tokio::sync::mpsc::Sender<Update>,
    period: std::time::Duration,
    cancel: tokio_util::sync::CancellationToken,
    mut ops: Option<tokio::sync::mpsc::Receiver<SimOp>>,
) {
    let built = tokio::select! {
        _ = cancel.cancelled() => return,
        s = tokio::task::spawn_blocking(move || {
            let mut sim = Sim::new(cfg);
            let initial = sim.initial();
            sim.handed_out();
            crate::memory::release_free();
            (sim, initial)
        }) => s,
    };
    let Ok((mut sim, initial)) = built else { return };
    let send = |u: Update| {
        let (tx, cancel) = (&tx, &cancel);
        async move {
            tokio::select! {
                _ = cancel.cancelled() => false,
                r = tx.send(u) => r.is_ok(),
            }
        }
    };
    for u in initial {
        if !send(u).await {
            return;
        }
    }
    let mut every = tokio::time::interval(period.max(std::time::Duration::from_millis(1)));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    every.tick().await;
    loop {
        let op = tokio::select! {
            _ = cancel.cancelled() => return,
            _ = every.tick() => None,
            op = async { match ops.as_mut() { Some(rx) => rx.recv().await, None => std::future::pending().await } } => {
                match op {
                    Some(op) => Some(op),
                    None => { ops = None; continue; }
                }
            }
        };
        if let Some(op) = op {
            (op.0)(&mut sim);
        }
        let ticked = tokio::task::spawn_blocking(move || {
            let u = sim.tick();
            (sim, u)
        })
        .await;
        let Ok((s, u)) = ticked else { return };
        sim = s;
        if !send(u).await {
            return;
        }
    }
}
