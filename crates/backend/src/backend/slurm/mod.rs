//! The Slurm backend: reads slurmrestd (and slurmdbd through it) and feeds the same
//! [`Update`]s the simulator does.
//!
//! * [`client`]: HTTP, token, version negotiation (newest → oldest), error bodies.
//! * [`v0038`] and [`v0040`]: one translation layer per version family; [`db`] for slurmdbd
//!   records; [`wire`] holds the lenient JSON types they share; [`text`] parses hostlists and
//!   GRES/TRES strings; [`map`] turns normalised records into the domain model.
//! * `split`, `scan`, `quick`, `pick` (private) and [`stream`]: the job list parsed while it
//!   streams in, on every core, reading only the members of each job that gpuplane uses; the
//!   one way in is [`parse::jobs`] / [`parse::jobs_streamed`], whose contract is written there.
//!   [`reference`] is the serde_json decoder that contract is checked against.
//! * [`poll`]: the polite refresh loop ([`run`]).
//! * [`ops`]: writes (drain, resume, cancel, submit).

pub mod client;
pub mod db;
pub mod error;
pub mod map;
pub mod ops;
pub mod perm;
mod pick;
pub mod poll;
mod quick;
#[doc(hidden)]
pub mod reference;
mod scan;
mod split;
pub mod stream;
pub mod text;
pub mod token;
pub mod v0038;
pub mod v0040;
pub mod wire;

pub use client::{ApiVersion, Client, ClientConfig};
pub use error::SlurmError;
pub use ops::SubmitSpec;
pub use poll::{Poller, run};
pub use token::TokenSource;

use crate::model::{Job, JobId, JobState, Node, Queue, Quota, Text};
use map::GpuAlloc;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Duration;

/// The source name in the header.
pub const SOURCE: &str = "slurm";

/// Everything the Slurm backend needs.
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmConfig {
    pub client: ClientConfig,
    /// Time between refreshes (default 10 s; jittered ±10 %).
    pub refresh: Duration,
    /// Fetch the full job list at least every this many refreshes even when the light
    /// listing says nothing changed (priorities and estimated starts move too). The default
    /// makes it every 5 minutes — Slurm's default `PriorityCalcPeriod` — because a full list
    /// costs slurmrestd ~1.6 CPU-s at 10,000 jobs.
    pub full_jobs_every: u32,
    /// How often to read accounting (associations, QOS, job history).
    pub accounting_every: Duration,
    /// How far back job history goes.
    pub history: Duration,
    /// The cluster's `SlurmUser` (`slurm.conf`), privileged like root: the permission
    /// preflight does not ask slurmdbd about it. Debian's default: `slurm`.
    pub slurm_user: String,
    /// The largest body read whole (nodes, partitions, accounting, errors): `[slurm] max_body`.
    pub max_body: u64,
    /// The largest job list (streamed, never held whole; its jobs are): `[slurm] max_job_list`.
    pub max_job_list: u64,
}

impl SlurmConfig {
    pub fn new(client: ClientConfig) -> Self {
        SlurmConfig {
            client,
            refresh: Duration::from_secs(10),
            full_jobs_every: 30,
            accounting_every: Duration::from_secs(60),
            history: Duration::from_secs(7 * 86_400),
            slurm_user: "slurm".into(),
            max_body: client::DEFAULT_MAX_BODY,
            max_job_list: client::DEFAULT_MAX_JOB_LIST,
        }
    }
}

/// A parsed collection and the server's `last_update` stamp (v0.0.40+).
#[derive(Debug, Clone)]
pub struct Parsed<T> {
    pub data: T,
    pub last_update: Option<i64>,
}

/// Jobs of one `jobs` response, with the GPUs they hold and each job's QOS (parallel to
/// `jobs`; the domain `Job` has no QOS field).
#[derive(Debug, Clone, Default)]
pub struct JobsOut {
    pub jobs: Vec<Job>,
    pub allocs: Vec<GpuAlloc>,
    pub qos: Vec<Text>,
}

/// Whose GPU limit a [`Limit`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitScope {
    /// An account association's GrpTRES.
    Account,
    /// A QOS's GrpTRES.
    Qos,
    /// A QOS's MaxTRESPerUser: a quota for each user with jobs in the QOS.
    QosPerUser,
}

/// A GPU limit (`GrpTRES=gres/gpu=N`, `MaxTRESPerUser=gres/gpu=N`) from slurmdbd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    pub scope: LimitScope,
    pub name: Text,
    pub gpus: u32,
}

/// Finished jobs from slurmdbd.
pub type DbJobs = Vec<Job>;

/// Parsing by version family, with the endpoint named in errors.
pub mod parse {
    use super::*;

    fn malformed(endpoint: &str, e: serde_json::Error) -> SlurmError {
        SlurmError::Malformed { endpoint: endpoint.to_string(), detail: e.to_string() }
    }

    pub fn nodes(v: ApiVersion, body: &[u8]) -> Result<Parsed<Vec<Node>>, SlurmError> {
        let r = if v.is_legacy() { v0038::nodes(body) } else { v0040::nodes(body) };
        r.map_err(|e| malformed(&v.ctld("nodes"), e))
    }

    pub fn partitions(v: ApiVersion, body: &[u8]) -> Result<Parsed<Vec<Queue>>, SlurmError> {
        let r = if v.is_legacy() { v0038::partitions(body) } else { v0040::partitions(body) };
        r.map_err(|e| malformed(&v.ctld("partitions"), e))
    }

    /// A `jobs` body read whole: [`jobs_streamed`] with one chunk (the same contract).
    pub fn jobs(v: ApiVersion, body: &[u8]) -> Result<Parsed<JobsOut>, SlurmError> {
        jobs_streamed(v, [body])
    }

    /// A `jobs` body as it arrives, chunk by chunk (see [`stream`]): the one way into the
    /// hand-written scanners (`split`, `scan`, `quick`, `pick`, private to this module).
    ///
    /// The contract: for any body, any chunking and any [`stream::Policy`], the result equals
    /// that of the serde_json reference decoder ([`reference::jobs`]): the same jobs (every
    /// field), GPU allocations, QOS and `last_update` when serde_json reads the body, and
    /// [`SlurmError::Malformed`] when it does not. Documented exceptions:
    ///
    /// * error texts differ (the reference's are serde_json's; these name the job);
    /// * a member of the response or of a job whose key is spelt with an escape
    ///   (`"job\u005fid"`) is not recognised: slurmrestd never writes one;
    /// * a body that is not JSON may still be read when the fault lies inside a member of a
    ///   job that gpuplane does not read (bad grammar, a key that is not UTF-8): those are
    ///   stepped over by their strings and brackets only (checking them would cost the speed
    ///   the scanners are kept for);
    /// * v0.0.38 has no `last_update` (always `None` here).
    ///
    /// Checked by `tests/hermetic/json_differential.rs` (fixtures, every truncation, every chunk
    /// boundary of a small body) and by the `slurm_jobs` fuzz target (`scripts/fuzz`), both
    /// through [`reference::check`].
    pub fn jobs_streamed<C: stream::Chunk>(
        v: ApiVersion,
        chunks: impl IntoIterator<Item = C>,
    ) -> Result<Parsed<JobsOut>, SlurmError> {
        let read = if v.is_legacy() { v0038::JOB } else { v0040::JOB };
        let mut p = stream::jobs(read, chunks)
            .map_err(|detail| SlurmError::Malformed { endpoint: v.ctld("jobs"), detail })?;
        // v0.0.38 has no `last_update`.
        if v.is_legacy() {
            p.last_update = None;
        }
        Ok(p)
    }

    pub fn job_states(v: ApiVersion, body: &[u8]) -> Result<Vec<(JobId, JobState)>, SlurmError> {
        v0040::job_states(body).map_err(|e| malformed(&v.ctld("jobs/state"), e))
    }

    pub fn associations(v: ApiVersion, body: &[u8]) -> Result<Vec<Limit>, SlurmError> {
        db::associations(body).map_err(|e| malformed(&v.db("associations"), e))
    }

    pub fn qos(v: ApiVersion, body: &[u8]) -> Result<Vec<Limit>, SlurmError> {
        db::qos(body).map_err(|e| malformed(&v.db("qos"), e))
    }

    pub fn db_jobs(v: ApiVersion, body: &[u8]) -> Result<DbJobs, SlurmError> {
        db::db_jobs(body).map_err(|e| malformed(&v.db("jobs"), e))
    }
}

/// Marks which job holds each GPU (from the jobs' `gres_detail`); GPUs not listed are free.
pub fn assign_gpus(nodes: &mut [Node], allocs: &[GpuAlloc]) {
    let ix: HashMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i)).collect();
    let mut held: Vec<(usize, u32, JobId)> = Vec::new();
    for a in allocs {
        if let Some(&i) = ix.get(a.node.as_str()) {
            held.extend(a.idx.iter().map(|&g| (i, g, a.job)));
        }
    }
    for n in nodes.iter_mut() {
        for g in &mut n.gpus {
            g.job = None;
        }
    }
    for (i, g, job) in held {
        if let Some(gpu) = nodes[i].gpus.iter_mut().find(|x| u32::from(x.index) == g) {
            gpu.job = Some(job);
        }
    }
}

/// A partition's GPUs: the configured GPUs of its nodes.
pub fn queue_gpus(queues: &mut [Queue], nodes: &[Node]) {
    let mut by: HashMap<&str, u32> = HashMap::new();
    for n in nodes {
        for p in n.pool.split(',').filter(|p| !p.is_empty()) {
            let sum = by.entry(p).or_default();
            *sum = sum.saturating_add(n.gpu_slots);
        }
    }
    for q in queues {
        q.gpus = by.get(q.name.as_str()).copied().unwrap_or(0);
    }
}

/// The jobs slurmctld knows plus the finished ones only accounting still remembers. A job in
/// both keeps slurmctld's record (its GPU-hours are its GPUs × its run either way).
pub fn merge_jobs(mut live: Vec<Job>, history: &[Job], nodes: &[Node]) -> Vec<Job> {
    let seen: HashSet<JobId> = live.iter().map(|j| j.id).collect();
    live.extend(history.iter().filter(|j| !seen.contains(&j.id) && !j.state.is_active()).cloned());
    // Cost needs a GPU model: take it from the job's first node when the job did not name one.
    let model: HashMap<&str, &Text> =
        nodes.iter().filter_map(|n| n.gpus.first().map(|g| (n.name.as_str(), &g.model))).collect();
    for j in &mut live {
        if j.gpu_model.is_none()
            && let Some(m) = j.nodes.first().and_then(|n| model.get(n.as_str()))
            && !m.is_empty()
        {
            j.gpu_model = Some((*m).clone());
        }
    }
    live
}

/// Quotas from GPU limits, with use from the live jobs. `qos` is parallel to `jobs` (may be
/// shorter: missing entries count as no QOS). A QOS's per-user limit becomes one quota per
/// user with running or pending jobs in it (`qos:NAME/USER`).
/// A pending job asking for more GPUs than its QOS allows one user (MaxTRESPerUser) can never
/// start as it is, yet slurmctld may still give it a start time (seen on 22.05 and 24.11: the
/// backfill plan ignores the limit). That is no estimate: it is dropped here, so every surface
/// says "no estimate" and why. `qos[i]` is `jobs[i]`'s QOS.
pub fn drop_impossible_estimates(jobs: &mut [Job], limits: &[Limit], qos: &[Text]) {
    for (i, j) in jobs.iter_mut().enumerate() {
        let Some(q) = qos.get(i) else { continue };
        let over =
            limits.iter().any(|l| l.scope == LimitScope::QosPerUser && l.name == *q && j.gpus > l.gpus);
        if j.state == JobState::Pending && over {
            j.est_start = None;
        }
    }
}

pub fn quotas(limits: &[Limit], jobs: &[Job], qos: &[Text]) -> Vec<Quota> {
    let in_qos = |i: usize, name: &Text| qos.get(i).is_some_and(|q| q == name);
    let mut out: Vec<Quota> = Vec::new();
    for l in limits {
        // (team, which jobs count)
        let teams: Vec<(Text, Option<&Text>)> = match l.scope {
            LimitScope::Account => vec![(l.name.clone(), None)],
            LimitScope::Qos => vec![(format!("qos:{}", l.name).into(), None)],
            LimitScope::QosPerUser => {
                let users: BTreeSet<&Text> = jobs
                    .iter()
                    .enumerate()
                    .filter(|(i, j)| in_qos(*i, &l.name) && j.state.is_active())
                    .map(|(_, j)| &j.user)
                    .collect();
                users.into_iter().map(|u| (format!("qos:{}/{u}", l.name).into(), Some(u))).collect()
            }
        };
        for (team, user) in teams {
            let mut q = Quota {
                cluster: Default::default(),
                team,
                gpu_quota: l.gpus,
                gpu_used: 0,
                borrowed: 0,
                lendable: 0,
                gpu_pending: 0,
            };
            for (i, j) in jobs.iter().enumerate() {
                let hit = match l.scope {
                    LimitScope::Account => j.account == l.name,
                    LimitScope::Qos => in_qos(i, &l.name),
                    LimitScope::QosPerUser => in_qos(i, &l.name) && Some(&j.user) == user,
                };
                if !hit {
                    continue;
                }
                match j.state {
                    JobState::Running | JobState::Completing => {
                        q.gpu_used = q.gpu_used.saturating_add(j.gpus)
                    }
                    JobState::Pending => q.gpu_pending = q.gpu_pending.saturating_add(j.gpus),
                    _ => {}
                }
            }
            // GrpTRES and MaxTRESPerUser are hard caps in Slurm: nothing is borrowed or lent.
            out.push(q);
        }
    }
    out.sort_by(|a, b| a.team.cmp(&b.team));
    out
}
