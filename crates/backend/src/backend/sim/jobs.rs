//! The simulated scheduler: compact job records, the pending queues, a priority scheduler with
//! backfill, and the finish heap. [`JobBook::job`] builds the model's [`Job`] on demand.

use super::catalog::{self, NPOOLS, POOLS, TEAMS, Template};
use super::hardware::{Cluster, Profile};
use crate::model::{Epoch, Job, JobId, JobState, Text};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// First job id.
pub(super) const FIRST_ID: JobId = 100_000;
/// A job that ends within this long may start ahead of a blocked higher-priority job.
const BACKFILL_S: i64 = 2 * 3600;
/// How many jobs of a queue the scheduler plans start times for (like Slurm's
/// `bf_max_job_test`); those behind get no estimate.
const PLAN_DEPTH: usize = 100;

/// Scheduler's pending reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reason {
    None,
    Priority,
    Resources,
    QosGrpGres,
    Dependency,
    ReqNodeNotAvail,
    JobHeldUser,
}

impl Reason {
    /// Whether the job waits for its turn or for GPUs (and so gets a planned start).
    pub fn waits_for_capacity(self) -> bool {
        matches!(self, Self::Priority | Self::Resources)
    }

    pub fn text(self) -> Option<&'static str> {
        Some(match self {
            Self::None => return None,
            Self::Priority => "Priority",
            Self::Resources => "Resources",
            Self::QosGrpGres => "QOSGrpGRES",
            Self::Dependency => "Dependency",
            Self::ReqNodeNotAvail => "ReqNodeNotAvail",
            Self::JobHeldUser => "JobHeldUser",
        })
    }
}

/// Why a job ended, as accounting says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Exit {
    None,
    Code1,
    Oom,
    Nccl,
    NodeFail,
    Cancelled,
    TimeLimit,
    DepNever,
}

/// Job flags.
pub(super) const PINNED: u8 = 1; // planted pending job: keeps its reason, never starts
pub(super) const IDLE: u8 = 2; // planted stuck job

/// One job, compactly. Names, users, teams and queues are indices into the catalogue.
#[derive(Debug, Clone)]
pub(super) struct SimJob {
    pub id: JobId,
    pub tpl: u16,
    pub user: u8,
    pub team: u8,
    pub pool: u8,
    pub state: JobState,
    /// What it will end as once it runs.
    pub outcome: JobState,
    pub reason: Reason,
    pub exit: Exit,
    pub retries: u8,
    pub util: u8,
    pub tensor_pct: u8,
    pub mem_pct: u8,
    pub flags: u8,
    pub priority: u32,
    pub gpus: u32,
    pub submit: Epoch,
    pub start: Option<Epoch>,
    pub end: Option<Epoch>,
    pub est_start: Option<Epoch>,
    /// How long it runs once started (until its outcome).
    pub run_s: i64,
    /// Held by its owner until then (0: not held).
    pub held_until: Epoch,
    /// Waits for this job to finish (0: none).
    pub dep: JobId,
    pub req_node: Option<u32>,
    pub nodes: Box<[u32]>,
    pub gpu_seconds: f64,
    pub useful_gpu_seconds: f64,
}

impl SimJob {
    pub fn profile(&self) -> Profile {
        Profile {
            util: self.util,
            tensor_pct: self.tensor_pct,
            mem_pct: self.mem_pct,
            idle: self.flags & IDLE != 0,
        }
    }

    /// Accounting's GPU-seconds for `secs` of run time.
    pub fn account(&mut self, secs: i64) {
        let secs = secs.max(0) as f64 * f64::from(self.gpus);
        let useful = if self.flags & IDLE != 0 { 0.01 } else { f64::from(self.util) / 100.0 };
        self.gpu_seconds = secs;
        self.useful_gpu_seconds = (secs * useful).round();
    }

    pub fn end_plan(&self) -> Epoch {
        self.start.unwrap_or(0) + self.run_s
    }
}

/// Order of the pending queue: priority (higher first), submit time, id.
pub(super) type PendKey = (Reverse<u32>, Epoch, JobId);

pub(super) fn pend_key(j: &SimJob) -> PendKey {
    (Reverse(j.priority), j.submit, j.id)
}

/// What a pool's users submit: templates with weights, and the sizes that fit the pool.
#[derive(Debug, Clone)]
pub(super) struct Menu {
    pool: usize,
    gpn: u32,
    /// Largest job: half the pool, in whole nodes (at least one node).
    max_gpus: u32,
    tpls: Vec<(u16, u32)>,
    weight: u32,
}

impl Menu {
    pub fn new(pool: usize, gpn: u32, nodes: u32) -> Menu {
        let tpls = catalog::templates_for(pool);
        let weight = tpls.iter().map(|t| t.1).sum();
        Menu { pool, gpn, max_gpus: (nodes / 2).max(1) * gpn, tpls, weight }
    }

    /// A random job for this pool (state Pending, no id).
    pub fn draw(&self, rng: &mut fastrand::Rng) -> SimJob {
        draw(rng, self)
    }
}

fn draw(rng: &mut fastrand::Rng, menu: &Menu) -> SimJob {
    let (pool, gpn) = (menu.pool, menu.gpn);
    let mut w = rng.u32(0..menu.weight.max(1));
    let mut tpl = menu.tpls[0].0;
    for &(i, weight) in &menu.tpls {
        if w < weight {
            tpl = i;
            break;
        }
        w -= weight;
    }
    let t: &Template = &catalog::TEMPLATES[usize::from(tpl)];
    let spec = &POOLS[pool];
    let mut gpus = catalog::scale_size(t.sizes[rng.usize(0..t.sizes.len())], gpn).min(menu.max_gpus);
    if let Some(max) = spec.max_job_gpus {
        gpus = gpus.min(max);
    }
    let gpus = gpus.max(1);
    // Log-uniform: many short jobs, a few very long ones.
    let (lo, hi) = ((t.min_s as f64).ln(), (t.max_s as f64).ln());
    let mut run_s = (lo + (hi - lo) * rng.f64()).exp() as i64;
    if let Some(max) = spec.max_run_s {
        run_s = run_s.min(max);
    }
    let team = &TEAMS[t.team];
    let user = catalog::user_index(team.users[rng.usize(0..team.users.len())]);
    let (outcome, exit, frac) = match rng.u32(0..100) {
        0..82 => (JobState::Completed, Exit::None, 1.0),
        82..91 => {
            let exit = match rng.u32(0..20) {
                0..9 => Exit::Code1,
                9..15 => Exit::Oom,
                _ => Exit::Nccl,
            };
            (JobState::Failed, exit, 0.05 + 0.85 * rng.f64())
        }
        91..92 => (JobState::NodeFail, Exit::NodeFail, 0.05 + 0.9 * rng.f64()),
        92..97 => (JobState::Cancelled, Exit::Cancelled, 0.02 + 0.9 * rng.f64()),
        _ => (JobState::Timeout, Exit::TimeLimit, 1.0),
    };
    let run_s = ((run_s as f64 * frac) as i64).max(60);
    SimJob {
        id: 0,
        tpl,
        user,
        team: t.team as u8,
        pool: pool as u8,
        state: JobState::Pending,
        outcome,
        reason: Reason::None,
        exit,
        retries: if rng.u8(0..20) == 0 { rng.u8(1..3) } else { 0 },
        util: rng.u8(t.util.0..=t.util.1),
        tensor_pct: rng.u8(55..=90),
        mem_pct: rng.u8(45..=95),
        flags: 0,
        priority: rng.u32(team.prio.0..=team.prio.1),
        gpus,
        submit: 0,
        start: None,
        end: None,
        est_start: None,
        run_s,
        held_until: 0,
        dep: 0,
        req_node: None,
        nodes: Box::new([]),
        gpu_seconds: 0.0,
        useful_gpu_seconds: 0.0,
    }
}

/// A job with a fixed name (planted or long-running), pending, no id.
pub(super) fn fixed(name: &str, user: &str, team: usize, pool: usize, gpus: u32, priority: u32) -> SimJob {
    SimJob {
        id: 0,
        tpl: catalog::named(name),
        user: catalog::user_index(user),
        team: team as u8,
        pool: pool as u8,
        state: JobState::Pending,
        outcome: JobState::Completed,
        reason: Reason::None,
        exit: Exit::None,
        retries: 0,
        util: 93,
        tensor_pct: 80,
        mem_pct: 88,
        flags: 0,
        priority,
        gpus,
        submit: 0,
        start: None,
        end: None,
        est_start: None,
        run_s: 3600,
        held_until: 0,
        dep: 0,
        req_node: None,
        nodes: Box::new([]),
        gpu_seconds: 0.0,
        useful_gpu_seconds: 0.0,
    }
}

/// The end states of finished jobs whose records were dropped, by id: one byte per id from the
/// oldest kept (ids are given out in order and the oldest finished are trimmed first).
#[derive(Debug, Clone, Default)]
pub(super) struct Ended {
    base: JobId,
    states: VecDeque<Option<JobState>>,
    len: usize,
}

impl Ended {
    pub fn insert(&mut self, id: JobId, state: JobState) {
        if self.states.is_empty() {
            self.base = id;
        }
        while id < self.base {
            self.states.push_front(None);
            self.base -= 1;
        }
        let i = (id - self.base) as usize;
        if i >= self.states.len() {
            self.states.resize(i + 1, None);
        }
        if self.states[i].replace(state).is_none() {
            self.len += 1;
        }
    }

    pub fn get(&self, id: JobId) -> Option<JobState> {
        let i = usize::try_from(id.checked_sub(self.base)?).ok()?;
        self.states.get(i).copied().flatten()
    }

    /// Forgets a job; true when it was kept.
    pub fn remove(&mut self, id: JobId) -> bool {
        let Some(i) = id.checked_sub(self.base).and_then(|i| usize::try_from(i).ok()) else { return false };
        let Some(slot) = self.states.get_mut(i) else { return false };
        if slot.take().is_none() {
            return false;
        }
        self.len -= 1;
        while self.states.front().is_some_and(Option::is_none) {
            self.states.pop_front();
            self.base += 1;
        }
        true
    }

    pub fn len(&self) -> usize {
        self.len
    }
}

/// Per-team quota bookkeeping.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct TeamBook {
    pub quota: u32,
    /// Most GPUs the team may hold (quota plus what it may borrow).
    pub limit: u32,
    pub used: u32,
    pub pending: u32,
}

#[derive(Debug, Clone, Default)]
pub(super) struct JobBook {
    pub map: BTreeMap<JobId, SimJob>,
    pub next_id: JobId,
    /// Running jobs by planned end.
    pub running: BinaryHeap<Reverse<(Epoch, JobId)>>,
    /// Finished jobs, oldest first (the history that gets trimmed).
    pub finished: VecDeque<JobId>,
    /// The end states of finished jobs that were handed out and dropped from `map`.
    pub ended: Ended,
    pub pending: [Vec<PendKey>; NPOOLS],
    pub teams: [TeamBook; 5],
    /// Jobs changed since the last delta (may repeat).
    pub dirty: Vec<JobId>,
    /// Jobs that finished in each pool this tick.
    pub finished_now: [u32; NPOOLS],
    pub running_per_pool: [u32; NPOOLS],
}

impl JobBook {
    /// Adds a new pending job, giving it the next id.
    pub fn submit(&mut self, mut j: SimJob) -> JobId {
        j.id = self.next_id;
        self.next_id += 1;
        self.teams[usize::from(j.team)].pending += j.gpus;
        let pool = usize::from(j.pool);
        let key = pend_key(&j);
        let at = self.pending[pool].binary_search(&key).unwrap_or_else(|e| e);
        self.pending[pool].insert(at, key);
        self.dirty.push(j.id);
        let id = j.id;
        self.map.insert(id, j);
        id
    }

    /// Starts a pending job if its GPUs can be found now.
    fn start(&mut self, cluster: &mut Cluster, id: JobId, now: Epoch) -> bool {
        let Some(j) = self.map.get_mut(&id) else { return false };
        let Some(nodes) = cluster.alloc(usize::from(j.pool), j.gpus, id, j.profile()) else { return false };
        j.state = JobState::Running;
        j.start = Some(now);
        j.reason = Reason::None;
        j.est_start = None;
        j.nodes = nodes.into_boxed_slice();
        let team = &mut self.teams[usize::from(j.team)];
        team.used += j.gpus;
        team.pending -= j.gpus;
        self.running_per_pool[usize::from(j.pool)] += 1;
        self.running.push(Reverse((now + j.run_s, id)));
        self.dirty.push(id);
        true
    }

    /// Ends every running job whose time has come and frees its GPUs.
    pub fn finish_due(&mut self, cluster: &mut Cluster, now: Epoch) {
        self.finished_now = [0; NPOOLS];
        while let Some(&Reverse((end, id))) = self.running.peek() {
            if end > now {
                break;
            }
            self.running.pop();
            let Some(j) = self.map.get_mut(&id) else { continue };
            if j.state != JobState::Running {
                // cancelled while it ran
                continue;
            }
            j.state = j.outcome;
            j.end = Some(end);
            j.account(end - j.start.unwrap_or(end));
            for &n in j.nodes.iter() {
                cluster.release(n, id);
            }
            self.teams[usize::from(j.team)].used -= j.gpus;
            let pool = usize::from(j.pool);
            self.running_per_pool[pool] -= 1;
            self.finished_now[pool] += 1;
            self.finished.push_back(id);
            self.dirty.push(id);
        }
    }

    /// Drops the oldest finished jobs while there are more than `target` jobs.
    pub fn trim(&mut self, target: usize, removed: &mut Vec<JobId>) {
        while self.len() > target {
            let Some(id) = self.finished.pop_front() else { break };
            if self.map.remove(&id).is_some() || self.ended.remove(id) {
                removed.push(id);
            }
        }
    }

    /// Jobs the controller knows: in `map` and ended.
    pub fn len(&self) -> usize {
        self.map.len() + self.ended.len()
    }

    /// The state of a job, wherever it is kept.
    pub fn state(&self, id: JobId) -> Option<JobState> {
        self.map.get(&id).map(|j| j.state).or_else(|| self.ended.get(id))
    }

    /// Drops the records of these jobs that have ended, keeping only their end states: once a
    /// finished job has been handed out the console (and its ledger) holds it, as slurmctld
    /// forgets a job after `MinJobAge` and accounting keeps it. 200,000 finished jobs held
    /// 38 MB here (heaptrack; docs/performance.md).
    pub fn forget_ended(&mut self, ids: impl IntoIterator<Item = JobId>) {
        for id in ids {
            if let Some(j) = self.map.get(&id)
                && !j.state.is_active()
            {
                self.ended.insert(id, j.state);
                self.map.remove(&id);
            }
        }
    }

    fn set_reason(&mut self, id: JobId, reason: Reason) {
        let Some(j) = self.map.get_mut(&id) else { return };
        if j.reason != reason {
            j.reason = reason;
            if !reason.waits_for_capacity() {
                // Held, waiting on a dependency or on its team's quota: not planned.
                j.est_start = None;
            }
            self.dirty.push(id);
        }
    }

    /// Plans start times for the jobs of a pool's queue that wait for capacity, in queue order,
    /// as a scheduler reserves them: each takes GPUs as running jobs end at their planned ends
    /// (and gives them back when it would end), so estimates never run backwards along the queue.
    /// A job larger than the pool's in-service GPUs, or deeper than [`PLAN_DEPTH`], gets none.
    fn estimate(&mut self, cluster: &Cluster, pool: usize, now: Epoch) {
        let p = &cluster.pools[pool];
        let gpn = cluster.gpn as u32;
        let in_service =
            p.nodes.clone().filter(|&i| cluster.nodes[i as usize].state.schedulable()).count() as u32 * gpn;
        let mut releases: BinaryHeap<Reverse<(Epoch, u32)>> = self
            .running
            .iter()
            .filter_map(|&Reverse((end, id))| {
                let j = self.map.get(&id)?;
                (j.state == JobState::Running && usize::from(j.pool) == pool)
                    .then_some(Reverse((end, j.gpus)))
            })
            .collect();
        let (mut free, mut t, mut planned) = (p.free, now, 0usize);
        let ids: Vec<JobId> = self.pending[pool].iter().map(|k| k.2).collect();
        for id in ids {
            let Some(j) = self.map.get_mut(&id) else { continue };
            if j.flags & PINNED != 0 || !j.reason.waits_for_capacity() {
                continue;
            }
            let est = if planned >= PLAN_DEPTH || j.gpus > in_service {
                None
            } else {
                while free < j.gpus
                    && let Some(Reverse((end, gpus))) = releases.pop()
                {
                    t = t.max(end);
                    free += gpus;
                }
                (free >= j.gpus).then(|| {
                    free -= j.gpus;
                    let start = t.max(now + 60);
                    releases.push(Reverse((start + j.run_s, j.gpus)));
                    planned += 1;
                    start
                })
            };
            let moved = match (j.est_start, est) {
                (Some(a), Some(b)) => (a - b).abs() > 120,
                (a, b) => a.is_some() != b.is_some(),
            };
            if moved {
                j.est_start = est;
                self.dirty.push(id);
            }
        }
    }

    /// One scheduling pass over a pool's queue in priority order: starts what fits (and what can
    /// backfill behind a blocked job), and sets the reason of everything still waiting.
    pub fn schedule(&mut self, cluster: &mut Cluster, pool: usize, now: Epoch) {
        let keys = std::mem::take(&mut self.pending[pool]);
        let mut keep = Vec::with_capacity(keys.len());
        let mut blocked = false;
        for key in keys {
            let id = key.2;
            let Some(j) = self.map.get(&id) else { continue };
            if j.flags & PINNED != 0 {
                keep.push(key);
                continue;
            }
            let (team, gpus, run_s, dep) = (usize::from(j.team), j.gpus, j.run_s, j.dep);
            let reason = if j.held_until > now {
                Reason::JobHeldUser
            } else if dep != 0
                && let Some(d) = self.state(dep)
                && d != JobState::Completed
            {
                if d.is_active() {
                    Reason::Dependency
                } else {
                    // Its dependency failed: Slurm cancels it (kill_invalid_depend).
                    self.cancel(id, now, Exit::DepNever);
                    continue;
                }
            } else if self.teams[team].used + gpus > self.teams[team].limit {
                Reason::QosGrpGres
            } else if (!blocked || run_s <= BACKFILL_S) && self.start(cluster, id, now) {
                continue;
            } else if !blocked {
                blocked = true;
                Reason::Resources
            } else {
                Reason::Priority
            };
            self.set_reason(id, reason);
            keep.push(key);
        }
        self.pending[pool] = keep;
        self.estimate(cluster, pool, now);
    }

    /// Cancels a job at an operator's request: a pending job leaves its queue, a running one
    /// frees its GPUs at once.
    pub fn cancel_by_operator(
        &mut self,
        cluster: &mut Cluster,
        id: JobId,
        now: Epoch,
    ) -> Result<(), crate::model::ActionError> {
        use crate::model::ActionError;
        let Some(j) = self.map.get_mut(&id) else {
            return Err(match self.ended.get(id) {
                Some(s) => {
                    ActionError::conflict(format!("job {id} is {}: there is nothing to cancel", s.label()))
                }
                None => ActionError::not_found(format!("job {id} does not exist")),
            });
        };
        match j.state {
            JobState::Pending => {
                let pool = usize::from(j.pool);
                self.pending[pool].retain(|k| k.2 != id);
                self.cancel(id, now, Exit::Cancelled);
                Ok(())
            }
            JobState::Running => {
                j.state = JobState::Cancelled;
                j.exit = Exit::Cancelled;
                j.end = Some(now);
                j.account(now - j.start.unwrap_or(now));
                let (team, pool, gpus) = (usize::from(j.team), usize::from(j.pool), j.gpus);
                for &n in j.nodes.iter() {
                    cluster.release(n, id);
                }
                self.teams[team].used -= gpus;
                self.running_per_pool[pool] -= 1;
                self.finished.push_back(id);
                self.dirty.push(id);
                Ok(())
            }
            s => Err(ActionError::conflict(format!("job {id} is {}: there is nothing to cancel", s.label()))),
        }
    }

    /// Ends a pending job without it running.
    fn cancel(&mut self, id: JobId, now: Epoch, exit: Exit) {
        let Some(j) = self.map.get_mut(&id) else { return };
        j.state = JobState::Cancelled;
        j.exit = exit;
        j.reason = Reason::None;
        j.est_start = None;
        j.end = Some(now);
        self.teams[usize::from(j.team)].pending -= j.gpus;
        self.finished.push_back(id);
        self.dirty.push(id);
    }

    /// The model's view of a job.
    pub fn job(&self, j: &SimJob, cluster: &Cluster) -> Job {
        let (name, _) = catalog::job_kind(j.tpl);
        let user = catalog::USERS[usize::from(j.user)];
        let spec = &POOLS[usize::from(j.pool)];
        let nodes = j.nodes.iter().chain(j.req_node.iter().filter(|_| j.nodes.is_empty()));
        // The planned ending is known ahead; a job reports it only once it has ended.
        let exit = match j.exit {
            _ if j.state.is_active() => None,
            Exit::None => None,
            Exit::Code1 => Some(Text::const_new("exit code 1")),
            Exit::Oom => Some(Text::const_new("OOM")),
            Exit::Nccl => Some(Text::const_new("NCCL watchdog timeout")),
            Exit::NodeFail => Some(Text::const_new("NODE_FAIL")),
            Exit::Cancelled => Some(compact_str::format_compact!("cancelled by {user}")),
            Exit::TimeLimit => Some(Text::const_new("time limit reached")),
            Exit::DepNever => Some(Text::const_new("dependency never satisfied")),
        };
        Job {
            cluster: Default::default(),
            id: j.id,
            name: Text::const_new(name),
            user: Text::const_new(user),
            account: Text::const_new(TEAMS[usize::from(j.team)].name),
            queue: Text::const_new(spec.name),
            state: j.state,
            pending_reason: j.reason.text().map(Text::const_new),
            priority: j.priority,
            submit: j.submit,
            start: j.start,
            end: j.end,
            est_start: j.est_start,
            gpus: j.gpus,
            gpu_model: Some(Text::const_new(spec.gpu_model)),
            nodes: nodes.map(|&n| cluster.nodes[n as usize].name.clone()).collect(),
            exit_reason: exit,
            retries: u32::from(j.retries),
            position: None,
            rank: None,
            gpu_seconds: j.gpu_seconds,
            useful_gpu_seconds: j.useful_gpu_seconds,
            time_limit: None,
            no_time_limit: false,
        }
    }
}
