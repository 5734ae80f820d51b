//! What the usage ledger records, read from the cluster state: the [`Tracker`] turns one look
//! at the state into an [`Observation`] (jobs that changed, GPU-intervals, GPUs by cause). It
//! is pure and cheap; the console calls it on its own task and hands the result to the
//! ledger's thread, which does the file I/O.

use crate::model::{Epoch, Job, JobId, JobState, NodeState, Text};
use crate::state::ClusterState;
use crate::store::{CapacitySample, GpuInterval, JobRecord, Observation};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Seconds of source time between two observations.
pub const OBSERVE_EVERY_S: i64 = 60;
/// The longest step one observation covers: a longer gap (no console was running) is a gap.
pub const MAX_STEP_S: i64 = 5 * OBSERVE_EVERY_S;
/// The most finished jobs one observation of the console carries. A cluster's first look can
/// hold hundreds of thousands of finished jobs (the simulator's 200,000; a scheduler's
/// accounting window): as one observation they cost ~130 MB at once (measured with
/// heaptrack, docs/performance.md). The rest follow in catch-up observations, one per tick.
pub const JOBS_PER_LOOK: usize = 10_000;

#[derive(Debug, Clone)]
struct Open {
    job: JobId,
    start: Epoch,
    util_sum: f64,
    util_n: u32,
    seen_at: Epoch,
}

/// Remembers what was written, so an observation carries changes (and running jobs). A
/// tracker looks at one cluster: the whole state in a single-cluster console (scope `""`), one
/// configured cluster's nodes and jobs in a fleet — each cluster has its own ledger, so two
/// clusters' job 4242 never meet in one file.
#[derive(Debug, Default)]
pub struct Tracker {
    /// The configured cluster looked at (`""`: every object — a single-cluster console, or a
    /// command's one look).
    scope: Text,
    cluster: Text,
    last_at: Option<Epoch>,
    /// Per job: what the last record said (state, end, whole GPU-seconds), hashed: 16 bytes
    /// a job instead of 40 (200,000 jobs: 4.5 MB instead of 10.7, heaptrack).
    written: HashMap<JobId, u64>,
    /// GPUs held now: (node, GPU index) → the interval so far.
    open: HashMap<(Text, u8), Open>,
    /// Jobs seen holding particular GPUs (their intervals are per GPU, not per node).
    per_gpu: HashSet<JobId>,
    /// Finished jobs were left out of the last observation (over its bound).
    behind: bool,
}

/// GPUs of each model by what they are doing now: allocated, unallocated (schedulable, free),
/// drained (draining, drained, cordoned), down (down, unknown), maintenance. A host in two
/// schedulers (`[[shared_hosts]]`) is counted once, as its Slurm node, with both schedulers'
/// allocations (at most all its GPUs).
pub fn capacity_now(s: &ClusterState) -> Vec<CapacitySample> {
    capacity_of(s, None)
}

/// [`capacity_now`] of one configured cluster's nodes (`None`: every node).
fn capacity_of(s: &ClusterState, scope: Option<&Text>) -> Vec<CapacitySample> {
    let mut by: BTreeMap<&str, CapacitySample> = BTreeMap::new();
    for (i, n) in s.nodes.iter().enumerate() {
        if scope.is_some_and(|c| !c.is_empty() && *c != n.cluster) || s.is_kube_twin(i) {
            continue;
        }
        let twin = s.twin(i).map(|t| t.node);
        let slots_of = |n: &crate::model::Node| n.gpu_slots.max(n.gpus.len() as u32);
        let slots = slots_of(n).max(twin.map_or(0, slots_of));
        if slots == 0 {
            continue;
        }
        let model = n.gpu_model();
        let c =
            by.entry(model).or_insert_with(|| CapacitySample { model: model.into(), ..Default::default() });
        let alloc = (n.gpu_alloc + twin.map_or(0, |t| t.gpu_alloc)).min(slots);
        let free = slots - alloc;
        c.allocated += alloc;
        match n.state {
            NodeState::Idle | NodeState::Mixed | NodeState::Allocated => c.unallocated += free,
            NodeState::Draining | NodeState::Drained | NodeState::Cordoned => c.drained += free,
            NodeState::Maintenance => c.maintenance += free,
            NodeState::Down | NodeState::DownDrain | NodeState::Unknown => c.down += free,
        }
    }
    by.into_values().collect()
}

/// A job as the ledger keeps it, seen at `at`.
pub fn job_record(j: &Job, at: Epoch) -> JobRecord {
    JobRecord {
        id: j.id,
        name: j.name.to_string(),
        user: j.user.to_string(),
        account: j.account.to_string(),
        queue: j.queue.to_string(),
        state: j.state.label().to_string(),
        submit: j.submit,
        start: j.start,
        end: j.end,
        gpus: j.gpus,
        gpu_model: j.gpu_model.as_ref().map(|m| m.to_string()),
        nodes: j.nodes.iter().map(|n| n.to_string()).collect(),
        exit_reason: j.exit_reason.as_ref().map(|m| m.to_string()),
        gpu_seconds: j.gpu_seconds,
        useful_gpu_seconds: j.useful_gpu_seconds,
        mean_util: None,
        first_seen: at,
        last_seen: at,
        time_limit: j.time_limit,
    }
}

/// The model's job for a ledger record (state unknown to this build: completed).
pub fn job_of(r: &JobRecord) -> Job {
    Job {
        cluster: Default::default(),
        id: r.id,
        name: r.name.as_str().into(),
        user: r.user.as_str().into(),
        account: r.account.as_str().into(),
        queue: r.queue.as_str().into(),
        state: JobState::from_label(&r.state).unwrap_or(JobState::Completed),
        pending_reason: None,
        priority: 0,
        submit: r.submit,
        start: r.start,
        end: r.end,
        est_start: None,
        gpus: r.gpus,
        gpu_model: r.gpu_model.as_deref().map(Text::from),
        nodes: r.nodes.iter().map(|n| Text::from(n.as_str())).collect(),
        exit_reason: r.exit_reason.as_deref().map(Text::from),
        retries: 0,
        position: None,
        rank: None,
        gpu_seconds: r.gpu_seconds,
        useful_gpu_seconds: r.useful_gpu_seconds,
        time_limit: r.time_limit,
        no_time_limit: false,
    }
}

impl Tracker {
    /// A tracker of one configured cluster of a fleet (`""`: the whole state).
    pub fn for_cluster(scope: Text) -> Tracker {
        Tracker { scope, ..Tracker::default() }
    }

    /// The tracker a command's one look uses: a state of one configured cluster is that
    /// cluster's (its ledger is the file the console writes for it); any other state is looked
    /// at whole.
    pub fn for_state(s: &ClusterState) -> Tracker {
        match s.clusters() {
            [one] if !one.is_empty() => Tracker::for_cluster(one.clone()),
            _ => Tracker::default(),
        }
    }

    /// The name of the ledger its looks at `s` go to (see [`crate::store::ledger::path_for`]).
    pub fn ledger_name(&self, s: &ClusterState) -> Text {
        self.name(s).clone()
    }

    /// The configured cluster it looks at (`""`: the whole state).
    pub fn scope(&self) -> &Text {
        &self.scope
    }

    /// The name its observations (and ledger file) carry: the configured cluster's, or in a
    /// single-cluster console the name its scheduler reports.
    fn name<'s>(&'s self, s: &'s ClusterState) -> &'s Text {
        if self.scope.is_empty() { &s.cluster } else { &self.scope }
    }

    /// Whether an observation is due at source time `now`.
    pub fn due(&self, s: &ClusterState) -> bool {
        *self.name(s) != self.cluster || self.last_at.is_none_or(|l| s.now - l >= OBSERVE_EVERY_S)
    }

    /// What the console records on a tick: a look when one is due, otherwise the finished jobs
    /// the last look left out (at most `max_jobs` of them per observation), otherwise nothing.
    pub fn next(&mut self, s: &ClusterState, max_jobs: usize) -> Option<Observation> {
        if self.due(s) {
            return self.look(s, max_jobs);
        }
        if !self.behind || *self.name(s) != self.cluster {
            return None;
        }
        let at = self.last_at?;
        let mut obs = Observation { cluster: self.cluster.to_string(), at, ..Default::default() };
        self.record_jobs(s, at, &mut obs, max_jobs, false);
        Some(obs)
    }

    /// Whether finished jobs are still to be recorded (a look was over its bound).
    pub fn behind(&self) -> bool {
        self.behind
    }

    /// One look at the state, with every job that changed. `None` while there is nothing to
    /// record (no cluster yet, or the source clock has not moved since the last look).
    pub fn observe(&mut self, s: &ClusterState) -> Option<Observation> {
        self.look(s, usize::MAX)
    }

    fn look(&mut self, s: &ClusterState, max_jobs: usize) -> Option<Observation> {
        if s.now <= 0 || (s.nodes.is_empty() && s.jobs.is_empty()) {
            return None;
        }
        let name = self.name(s).clone();
        if name != self.cluster {
            *self = Tracker { scope: std::mem::take(&mut self.scope), cluster: name, ..Tracker::default() };
        }
        let scope = self.scope.clone();
        let at = s.now;
        if self.last_at.is_some_and(|l| at <= l) {
            return None;
        }
        let step = self.last_at.map_or(0, |l| (at - l).min(MAX_STEP_S));
        let lo = self.last_at.unwrap_or(Epoch::MIN);
        self.last_at = Some(at);
        let mut obs = Observation { cluster: self.cluster.to_string(), at, ..Default::default() };
        if step > 0 {
            obs.capacity = capacity_of(s, Some(&scope))
                .into_iter()
                .map(|c| CapacitySample { at, step_s: step, ..c })
                .collect();
        }
        // GPU-intervals: who holds which GPU, and its utilisation meanwhile.
        for n in s.nodes.iter().filter(|n| scope.is_empty() || n.cluster == scope) {
            for g in &n.gpus {
                let key = (n.name.clone(), g.index);
                let Some(jid) = g.job else {
                    if let Some(o) = self.open.remove(&key) {
                        obs.intervals.push(interval(&key, &o, at));
                    }
                    continue;
                };
                self.per_gpu.insert(jid);
                if let Some(o) = self.open.get(&key)
                    && o.job != jid
                {
                    obs.intervals.push(interval(&key, o, at));
                    self.open.remove(&key);
                }
                let o = self.open.entry(key).or_insert_with(|| Open {
                    job: jid,
                    start: s.job_in(&n.cluster, jid).and_then(|j| j.start).unwrap_or(at).max(lo).min(at),
                    util_sum: 0.0,
                    util_n: 0,
                    seen_at: at,
                });
                o.seen_at = at;
                if let Some(u) = g.util {
                    o.util_sum += f64::from(u);
                    o.util_n += 1;
                }
            }
        }
        // GPUs that left the state (a node removed) close here; the rest are written as they
        // stand (upserted: the end moves on with each observation).
        let gone: Vec<(Text, u8)> =
            self.open.iter().filter(|(_, o)| o.seen_at != at).map(|(k, _)| k.clone()).collect();
        for k in gone {
            if let Some(o) = self.open.remove(&k) {
                obs.intervals.push(interval(&k, &o, at));
            }
        }
        obs.intervals.extend(self.open.iter().map(|(k, o)| interval(k, o, at)));
        self.record_jobs(s, at, &mut obs, max_jobs, true);
        if self.written.len() > 2 * s.jobs.len() + 1024 {
            self.written.retain(|id, _| {
                if scope.is_empty() { s.job_index(*id).is_some() } else { s.job_in(&scope, *id).is_some() }
            });
        }
        Some(obs)
    }

    /// Jobs: running ones every time (`running`: their GPU-seconds and last sighting move),
    /// finished ones once (and again if they change), at most `max` finished ones.
    fn record_jobs(&mut self, s: &ClusterState, at: Epoch, obs: &mut Observation, max: usize, running: bool) {
        let mut finished = 0usize;
        self.behind = false;
        let scope = self.scope.clone();
        for j in s.jobs.iter().filter(|j| scope.is_empty() || j.cluster == scope) {
            let Some(start) = j.start else { continue };
            let fp = fingerprint(j);
            if j.end.is_some() {
                if self.written.get(&j.id) == Some(&fp) {
                    continue;
                }
                if finished >= max {
                    self.behind = true;
                    continue;
                }
                finished += 1;
            } else if !running {
                continue;
            }
            self.written.insert(j.id, fp);
            obs.jobs.push(job_record(j, at));
            if let Some(end) = j.end {
                // Seen only as counts (a scheduler without GPU telemetry, accounting history):
                // the job's GPUs spread over its nodes, index unknown.
                if !self.per_gpu.remove(&j.id) && j.gpus > 0 && !j.nodes.is_empty() {
                    let per = j.gpus / j.nodes.len() as u32;
                    let extra = j.gpus % j.nodes.len() as u32;
                    let util = j.useful_pct().map(|u| u as f32);
                    for (i, node) in j.nodes.iter().enumerate() {
                        let gpus = per + u32::from((i as u32) < extra);
                        if gpus > 0 {
                            obs.intervals.push(GpuInterval {
                                job: j.id,
                                node: node.to_string(),
                                gpu: None,
                                gpus,
                                start,
                                end: end.max(start),
                                util,
                            });
                        }
                    }
                }
            }
        }
    }
}

/// What a job's record says that can change once it has ended, as one number.
fn fingerprint(j: &Job) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x6770_7570_6c61_6e65).hash_one((
        j.state,
        j.end,
        j.gpu_seconds as i64,
    ))
}

fn interval(key: &(Text, u8), o: &Open, end: Epoch) -> GpuInterval {
    GpuInterval {
        job: o.job,
        node: key.0.to_string(),
        gpu: Some(key.1),
        gpus: 1,
        start: o.start,
        end: end.max(o.start),
        util: (o.util_n > 0).then(|| (o.util_sum / f64::from(o.util_n)) as f32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Node, NodeState};
    use crate::testing::{node, nodes, pairing};

    #[test]
    fn a_paired_hosts_gpus_are_counted_once_in_capacity() {
        let gpus = |mut n: Node, slots: u32, alloc: u32| {
            (n.gpu_slots, n.gpu_alloc) = (slots, alloc);
            n
        };
        let mut s = ClusterState::default();
        s.set_host_pairs(vec![pairing()]);
        nodes(
            &mut s,
            "prod-a",
            1000,
            vec![
                gpus(node("gpu-001", NodeState::Mixed, None), 8, 4),
                gpus(node("solo", NodeState::Idle, None), 8, 0),
            ],
        );
        nodes(
            &mut s,
            "prod-k8s",
            1000,
            vec![
                gpus(node("gpu-001.prod.internal", NodeState::Mixed, None), 8, 6),
                gpus(node("gpu-009", NodeState::Idle, None), 4, 1),
            ],
        );
        let t = &s.totals;
        // gpu-001 is one host of 8 GPUs: 3 nodes, 20 GPUs (not 4 nodes, 28 GPUs); its
        // allocations together (4 + 6) are at most its 8.
        assert_eq!((t.nodes, t.nodes_schedulable, t.gpus, t.gpus_alloc), (3, 3, 20, 8 + 1));
        let cap = capacity_now(&s);
        let total: u32 =
            cap.iter().map(|c| c.allocated + c.unallocated + c.drained + c.down + c.maintenance).sum();
        assert_eq!(total, 20);
        assert_eq!(cap.iter().map(|c| c.allocated).sum::<u32>(), 9);
        // Without the pairing the two nodes are two hosts again.
        s.set_host_pairs(Vec::new());
        nodes(
            &mut s,
            "prod-k8s",
            1010,
            vec![gpus(node("gpu-001.prod.internal", NodeState::Mixed, None), 8, 6)],
        );
        assert_eq!((s.totals.nodes, s.totals.gpus), (3, 24));
    }
}
