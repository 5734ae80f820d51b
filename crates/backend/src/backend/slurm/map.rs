//! From normalised Slurm records (what each version family extracts) to the domain model.
//! Version differences stop at the family modules; the rules here are the same for every
//! version: how Slurm states read, where a job's GPU count comes from, what a reason means.

use super::text::{expand_hostlist, gres_gpus, gres_total, tres_gpus, tres_per_gpus};
use crate::model::{
    Epoch, GPUS_CLAIMED_LABEL, Gpu, Job, JobId, JobState, MAX_GPUS_PER_NODE, Node, NodeReason, NodeState,
    Queue, QueueKind, Text,
};
use std::collections::BTreeMap;

/// A node as every version family hands it over.
#[derive(Debug, Clone, Default)]
pub struct NodeIn {
    pub name: Text,
    /// Upper-case state words: the base state first, then flags (`IDLE`, `DRAIN`).
    pub state: Vec<Text>,
    pub reason: String,
    pub reason_by: Text,
    pub reason_at: Option<Epoch>,
    pub partitions: Vec<Text>,
    pub cpus: u32,
    pub cpus_alloc: u32,
    pub mem_mib: u64,
    pub mem_alloc_mib: u64,
    pub gres: String,
    pub gres_used: String,
    pub tres: String,
    pub tres_used: String,
}

/// A job as every version family hands it over.
#[derive(Debug, Clone, Default)]
pub struct JobIn {
    pub id: JobId,
    pub name: Text,
    pub user: Text,
    pub account: Text,
    pub qos: Text,
    pub partition: Text,
    /// Upper-case state words, base first (`RUNNING`, `COMPLETING`).
    pub state: Vec<Text>,
    pub reason: Text,
    pub priority: Option<i64>,
    pub submit: Option<Epoch>,
    pub start: Option<Epoch>,
    pub end: Option<Epoch>,
    pub nodes: String,
    /// The nodes a job asks for (`required_nodes`, `-w`): a pending job's `nodes` in the model.
    pub required_nodes: String,
    pub node_count: Option<i64>,
    pub tasks: Option<i64>,
    pub tres_alloc: String,
    pub tres_req: String,
    pub tres_per_node: String,
    pub tres_per_job: String,
    pub tres_per_task: String,
    pub gres_detail: Vec<String>,
    pub exit: Exit,
    pub restarts: u32,
    /// Structured GPU counts (slurmdbd records), preferred over the TRES strings.
    pub gpus_alloc: Option<u32>,
    pub gpus_req: Option<u32>,
    /// Run time in seconds as accounting reports it (finished jobs).
    pub elapsed: Option<i64>,
    /// The time limit in minutes (`time_limit`; accounting's `time.limit`), unlimited told
    /// apart from unknown.
    pub time_limit: super::wire::Limit,
}

/// How a job ended, normalised: the v0.0.38 raw wait status and the v0.0.40+ verbose struct
/// both become this.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Exit {
    pub code: Option<i64>,
    pub signal: Option<i64>,
}

impl Exit {
    /// From a raw `waitpid` status (v0.0.38 `exit_code`: exit 3 → 768, SIGTERM → 15).
    pub fn from_wait_status(status: i64) -> Self {
        if status & 0x7f == 0 {
            Self { code: Some((status >> 8) & 0xff), signal: None }
        } else {
            Self { code: None, signal: Some(status & 0x7f) }
        }
    }
}

/// A partition as every version family hands it over.
#[derive(Debug, Clone, Default)]
pub struct PartitionIn {
    pub name: Text,
    pub up: bool,
    pub total_nodes: u32,
    /// `None` when unlimited or unset.
    pub max_time_min: Option<i64>,
}

/// Which of a node's GPUs a running job holds (from the job's `gres_detail`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuAlloc {
    pub job: JobId,
    pub node: Text,
    pub idx: Vec<u32>,
}

/// Normalises a Slurm node state: the base state plus flags.
pub fn node_state(words: &[Text]) -> NodeState {
    let base = words.first().map(|w| w.as_str()).unwrap_or("UNKNOWN");
    let has = |f: &str| words.iter().skip(1).any(|w| w == f);
    if base == "DOWN" || (has("FAIL") && base != "ALLOCATED" && base != "MIXED") {
        // DOWN+DRAIN: down, and an operator (or a health check) took it out of service too.
        return if has("DRAIN") { NodeState::DownDrain } else { NodeState::Down };
    }
    if has("MAINTENANCE") {
        return NodeState::Maintenance;
    }
    if has("DRAIN") || has("FAIL") {
        return match base {
            "ALLOCATED" | "MIXED" | "COMPLETING" => NodeState::Draining,
            _ if has("COMPLETING") => NodeState::Draining,
            _ => NodeState::Drained,
        };
    }
    match base {
        "IDLE" => NodeState::Idle,
        "MIXED" => NodeState::Mixed,
        "ALLOCATED" | "COMPLETING" => NodeState::Allocated,
        "ERROR" | "INVALID" | "INVALID_REG" => NodeState::Down,
        "FUTURE" | "UNKNOWN" => NodeState::Unknown,
        _ => NodeState::Unknown,
    }
}

/// Normalises a Slurm job state (`COMPLETING` as a flag wins over the base state).
pub fn job_state(words: &[Text]) -> JobState {
    if words.iter().skip(1).any(|w| w == "COMPLETING") {
        return JobState::Completing;
    }
    match words.first().map(|w| w.as_str()).unwrap_or("") {
        "PENDING" | "REQUEUED" | "CONFIGURING" => JobState::Pending,
        "RUNNING" => JobState::Running,
        "COMPLETING" => JobState::Completing,
        "COMPLETED" => JobState::Completed,
        "CANCELLED" => JobState::Cancelled,
        "TIMEOUT" | "DEADLINE" => JobState::Timeout,
        "NODE_FAIL" | "BOOT_FAIL" => JobState::NodeFail,
        "PREEMPTED" | "SUSPENDED" => JobState::Preempted,
        // FAILED, OUT_OF_MEMORY, and anything unknown
        _ => JobState::Failed,
    }
}

pub fn node(n: NodeIn) -> Node {
    let state = node_state(&n.state);
    let (mut slots, model) = gres_total(&n.gres);
    if slots == 0 {
        slots = tres_gpus(&n.tres).unwrap_or(0);
    }
    // `gpu:a100:999999999` is a broken or hostile answer: no node has more than the cap.
    let claimed = slots;
    let slots = slots.min(MAX_GPUS_PER_NODE);
    let used = gres_gpus(&n.gres_used);
    let mut gpu_alloc = used.iter().map(|g| g.count).fold(0u32, u32::saturating_add);
    if used.is_empty() {
        gpu_alloc = tres_gpus(&n.tres_used).unwrap_or(0);
    }
    let gpu_alloc = gpu_alloc.min(slots);
    // One entry per configured GPU, typed from the GRES (`gpu:h100:4,gpu:a100:2`).
    let mut gpus = Vec::with_capacity(slots as usize);
    let typed = gres_gpus(&n.gres);
    let fallback = model.clone().unwrap_or_default();
    for g in typed.iter().flat_map(|g| std::iter::repeat_n(&g.model, g.count.min(slots) as usize)) {
        if gpus.len() >= slots as usize {
            break;
        }
        let model = if g.is_empty() { fallback.clone() } else { g.clone() };
        gpus.push(new_gpu(gpus.len() as u8, model));
    }
    while gpus.len() < slots as usize {
        gpus.push(new_gpu(gpus.len() as u8, fallback.clone()));
    }
    let unhealthy = !state.schedulable();
    let reason = (unhealthy && !n.reason.trim().is_empty()).then(|| NodeReason {
        text: n.reason.as_str().into(),
        by: n.reason_by.clone(),
        at: n.reason_at.unwrap_or(0),
    });
    let mut labels = BTreeMap::new();
    if let Some(m) = &model {
        labels.insert(Text::from("slurm.gpu.type"), m.clone());
    }
    if claimed > slots {
        labels.insert(Text::from(GPUS_CLAIMED_LABEL), Text::from(claimed.to_string()));
    }
    Node {
        cluster: Default::default(),
        pool: join(&n.partitions),
        name: n.name,
        state,
        reason,
        labels,
        cpus_total: n.cpus,
        cpus_alloc: n.cpus_alloc,
        mem_total_mib: n.mem_mib,
        mem_alloc_mib: n.mem_alloc_mib,
        gpu_slots: slots,
        gpu_alloc,
        gpus,
        topology: None,
        ports: Vec::new(),
        driver: None,
        cuda: None,
    }
}

fn new_gpu(index: u8, model: Text) -> Gpu {
    Gpu {
        index,
        uuid: Text::default(),
        model,
        mem_total_mib: 0,
        mem_used_mib: None,
        util: None,
        tensor_active: None,
        temp_c: None,
        power_w: None,
        power_limit_w: 0,
        ecc: Default::default(),
        ecc_at: None,
        xid: None,
        mig: Vec::new(),
        job: None,
        links: Default::default(),
        idle_since: None,
        processes: Vec::new(),
        local: None,
    }
}

fn join(words: &[Text]) -> Text {
    let mut s = Text::default();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(w);
    }
    s
}

pub fn queue(p: PartitionIn) -> Queue {
    Queue {
        cluster: Default::default(),
        name: p.name,
        kind: QueueKind::Partition,
        parent: None,
        up: p.up,
        nodes: p.total_nodes,
        gpus: 0,
        max_time_s: p.max_time_min.filter(|m| *m >= 0).map(|m| m.saturating_mul(60)),
    }
}

/// GPUs of a job and their type: allocated (TRES, then `gres_detail`) for jobs that got nodes,
/// requested (TRES, then per-job/per-node/per-task requests) otherwise.
fn job_gpus(j: &JobIn, started: bool) -> (u32, Option<Text>) {
    let detail: Vec<_> = j.gres_detail.iter().flat_map(|d| gres_gpus(d)).collect();
    let detail_model = detail.iter().find(|g| !g.model.is_empty()).map(|g| g.model.clone());
    let per_node = tres_per_gpus(&j.tres_per_node);
    let model = detail_model.or_else(|| per_node.as_ref().and_then(|(_, m)| m.clone()));
    if started {
        if let Some(n) = j.gpus_alloc.filter(|n| *n > 0) {
            return (n, model);
        }
        if let Some(n) = tres_gpus(&j.tres_alloc) {
            return (n, model);
        }
        if !detail.is_empty() {
            return (detail.iter().map(|g| g.count).fold(0, u32::saturating_add), model);
        }
    }
    if let Some(n) = j.gpus_req.or_else(|| tres_gpus(&j.tres_req)) {
        return (n, model);
    }
    if let Some((n, m)) = tres_per_gpus(&j.tres_per_job) {
        return (n, model.or(m));
    }
    if let Some((n, _)) = per_node {
        let nodes = j.node_count.filter(|c| *c > 0).unwrap_or(1).min(100_000) as u32;
        return (n.saturating_mul(nodes), model);
    }
    if let Some((n, m)) = tres_per_gpus(&j.tres_per_task) {
        let tasks = j.tasks.filter(|c| *c > 0).unwrap_or(1).min(1_000_000) as u32;
        return (n.saturating_mul(tasks), model.or(m));
    }
    (0, model)
}

fn exit_reason(state: JobState, exit: Exit, reason: &str) -> Option<Text> {
    let finished = !state.is_active();
    let what = match (exit.code, exit.signal) {
        (_, Some(s)) if s > 0 => Some(format!("signal {s}")),
        (Some(c), _) if c != 0 => Some(format!("exit {c}")),
        _ => None,
    };
    let reason = Some(reason).filter(|r| !r.is_empty() && *r != "None");
    match (finished, what, reason) {
        (false, _, _) => None,
        (true, Some(w), Some(r)) => Some(format!("{w} ({r})").into()),
        (true, Some(w), None) => Some(w.into()),
        (true, None, Some(r)) if state != JobState::Completed => Some(r.into()),
        (true, None, _) => None,
    }
}

/// Maps a job; also returns which GPUs it holds on which node (for running jobs).
/// How far after its submission a pending job's `start_time` is Slurm's placeholder, not an
/// estimate: a job the scheduler cannot plan gets "a year from now" (seen on 22.05 and 24.11:
/// submit + 365 days), which no surface may show as "in 364d23h".
pub const PLACEHOLDER_AFTER_S: i64 = 364 * 86_400;

/// A pending job's start estimate from its `start_time`: none when Slurm gives none, or only
/// its one-year placeholder.
pub fn estimate(submit: Option<i64>, start: Option<i64>) -> Option<i64> {
    let start = start.filter(|s| *s > 0)?;
    match submit.filter(|s| *s > 0) {
        Some(sub) if start.saturating_sub(sub) >= PLACEHOLDER_AFTER_S => None,
        _ => Some(start),
    }
}

pub fn job(j: JobIn, allocs: &mut Vec<GpuAlloc>) -> Job {
    let state = job_state(&j.state);
    let pending = state == JobState::Pending;
    let started = !pending && j.start.is_some();
    let (gpus, gpu_model) = job_gpus(&j, started);
    // A pending job's nodes are those it asks for (as the simulator's are).
    let nodes = expand_hostlist(if pending { &j.required_nodes } else { &j.nodes });
    if matches!(state, JobState::Running | JobState::Completing) && !j.gres_detail.is_empty() {
        for (node, detail) in nodes.iter().zip(&j.gres_detail) {
            let idx: Vec<u32> = gres_gpus(detail).into_iter().flat_map(|g| g.idx).collect();
            if !idx.is_empty() {
                allocs.push(GpuAlloc { job: j.id, node: node.clone(), idx });
            }
        }
    }
    let queue = j.partition.split(',').next().unwrap_or("").into();
    let pending_reason = (pending && !j.reason.is_empty()).then(|| j.reason.clone());
    // OUT_OF_MEMORY maps to FAILED: the reason keeps it, for the cost report's causes.
    let oom = j.state.first().is_some_and(|w| w == "OUT_OF_MEMORY");
    let reason =
        if oom && (j.reason.is_empty() || j.reason == "None") { "OutOfMemory" } else { j.reason.as_str() };
    let exit_reason = exit_reason(state, j.exit, reason);
    let (time_limit, no_time_limit) = j.time_limit.seconds();
    Job {
        cluster: Default::default(),
        id: j.id,
        name: j.name,
        user: j.user,
        account: j.account,
        queue,
        state,
        pending_reason,
        priority: j.priority.unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32,
        submit: j.submit.unwrap_or(0),
        start: if pending { None } else { j.start },
        end: if state.is_active() { None } else { j.end },
        est_start: if pending { estimate(j.submit, j.start) } else { None },
        gpus,
        gpu_model,
        nodes,
        exit_reason,
        retries: j.restarts,
        position: None,
        rank: None,
        // What the job held is its GPUs × its run (start, end); accounting measures no
        // utilisation, so it gives no measured GPU-seconds (they are "not measured", not 0 %).
        gpu_seconds: 0.0,
        useful_gpu_seconds: 0.0,
        time_limit,
        no_time_limit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &[&str]) -> Vec<Text> {
        s.iter().map(|x| Text::from(*x)).collect()
    }

    #[test]
    fn node_states_drained_versus_draining() {
        assert_eq!(node_state(&w(&["IDLE", "DRAIN"])), NodeState::Drained);
        assert_eq!(node_state(&w(&["MIXED", "DRAIN"])), NodeState::Draining);
        assert_eq!(node_state(&w(&["ALLOCATED", "DRAIN"])), NodeState::Draining);
        assert_eq!(node_state(&w(&["DOWN", "NOT_RESPONDING"])), NodeState::Down);
        assert_eq!(node_state(&w(&["DOWN", "DRAIN"])), NodeState::DownDrain);
        assert_eq!(node_state(&w(&["DOWN", "DRAIN", "NOT_RESPONDING"])), NodeState::DownDrain);
        assert_eq!(node_state(&w(&["IDLE", "MAINTENANCE", "RESERVED"])), NodeState::Maintenance);
        assert_eq!(node_state(&w(&["IDLE", "NOT_RESPONDING"])), NodeState::Idle);
        assert_eq!(node_state(&w(&["UNKNOWN"])), NodeState::Unknown);
        assert_eq!(node_state(&w(&["MIXED"])), NodeState::Mixed);
        assert_eq!(node_state(&[]), NodeState::Unknown);
    }

    #[test]
    fn job_states() {
        assert_eq!(job_state(&w(&["RUNNING", "COMPLETING"])), JobState::Completing);
        assert_eq!(job_state(&w(&["PENDING", "REQUEUED"])), JobState::Pending);
        assert_eq!(job_state(&w(&["OUT_OF_MEMORY"])), JobState::Failed);
        assert_eq!(job_state(&w(&["BOOT_FAIL"])), JobState::NodeFail);
    }

    #[test]
    fn wait_status_decodes() {
        assert_eq!(Exit::from_wait_status(768), Exit { code: Some(3), signal: None });
        assert_eq!(Exit::from_wait_status(15), Exit { code: None, signal: Some(15) });
        assert_eq!(Exit::from_wait_status(0), Exit { code: Some(0), signal: None });
    }

    /// OUT_OF_MEMORY is a failure whose reason keeps the cause (the cost report's `oom`).
    #[test]
    fn an_out_of_memory_job_says_so() {
        let j = JobIn {
            id: 7,
            state: w(&["OUT_OF_MEMORY"]),
            reason: "None".into(),
            exit: Exit { code: Some(0), signal: Some(9) },
            ..Default::default()
        };
        let job = job(j, &mut Vec::new());
        assert_eq!(job.state, JobState::Failed);
        // cost::cause reads this as `oom` (its tests hold this text).
        assert_eq!(job.exit_reason.as_deref(), Some("signal 9 (OutOfMemory)"));
    }

    #[test]
    fn pending_job_gpus_come_from_the_request() {
        let j = JobIn {
            id: 9,
            state: w(&["PENDING"]),
            reason: "Resources".into(),
            tres_per_node: "gres:gpu:h100:8".into(),
            node_count: Some(10),
            start: Some(1_800_000_000),
            ..Default::default()
        };
        let job = job(j, &mut Vec::new());
        assert_eq!((job.gpus, job.gpu_model.as_deref()), (80, Some("h100")));
        assert_eq!(job.est_start, Some(1_800_000_000));
        assert_eq!(job.start, None);
        assert_eq!(job.pending_reason.as_deref(), Some("Resources"));
    }

    /// A node whose GRES claims a billion GPUs (and a running job holding a billion of them on
    /// every device index) gets the cap: 64 GPUs, each held by the job; the sums over such
    /// nodes and jobs saturate instead of overflowing.
    #[test]
    fn hostile_gres_counts_are_capped_at_the_node() {
        let n = node(NodeIn {
            name: "gpu1".into(),
            state: w(&["MIXED"]),
            partitions: w(&["p"]),
            gres: "gpu:a100:999999999,gpu:h100:4294967295".into(),
            gres_used: "gpu:a100:999999999(IDX:0-4000000000)".into(),
            ..Default::default()
        });
        assert_eq!((n.gpu_slots, n.gpus.len(), n.gpu_alloc), (MAX_GPUS_PER_NODE, 64, 64));
        // The cut is kept, for the incident that shows it (999999999 + 4294967295 saturates).
        assert_eq!(n.labels.get(GPUS_CLAIMED_LABEL).map(|c| c.as_str()), Some("4294967295"));
        assert!(n.gpus.iter().all(|g| g.model == "a100"));
        let mut allocs = Vec::new();
        let j = job(
            JobIn {
                id: 7,
                state: w(&["RUNNING"]),
                nodes: "gpu[1-2]".into(),
                start: Some(1),
                gres_detail: vec!["gpu:a100:999999999(IDX:0-4000000000)".into(); 2],
                ..Default::default()
            },
            &mut allocs,
        );
        assert_eq!(j.gpus, 999_999_999 * 2);
        assert_eq!(allocs.len(), 2);
        assert!(allocs.iter().all(|a| a.idx.len() == 64));
        let mut nodes = vec![n.clone(), Node { name: "gpu2".into(), ..n }];
        super::super::assign_gpus(&mut nodes, &allocs);
        assert!(nodes.iter().flat_map(|n| &n.gpus).all(|g| g.job == Some(7)));
    }
}
