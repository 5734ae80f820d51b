//! The one road for every write: request → preflight (read-only, capability, target state) →
//! plan shown for confirmation → audit intent (fail closed) → execute through the owning
//! backend → audit outcome → result. The TUI and the subcommands both take this road.

pub mod fleet;
pub mod guard;
mod kube;
pub mod silence;
mod sim;
mod slurm;
mod worker;

pub use crate::backend::sim::SimOp;
pub use kube::{KubeExecutor, KubePlanner, PodVerdict, drain_filter};
pub use sim::{ApplyOp, SimExecutor, SimPlanner, sim_ops_channel};
pub use slurm::{SlurmExecutor, SlurmPlanner, SlurmPreflight};
pub use worker::{
    AUDIT_VIEW_RECORDS, AcceptanceSetup, BreakGlassMsg, OpEvent, OpJob, OpMsg, finish, start, worker,
    worker_with,
};

use crate::acceptance::Template;
use crate::acceptance::launch::{AcceptanceJob, Launcher};
use crate::audit::{AuditLog, Entry, Phase};
pub use crate::model::{ActionError, ActionErrorKind};
use crate::model::{JobId, JobState, Node, NodeState, Text};
use crate::state::ClusterState;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionKind {
    Cordon,
    Uncordon,
    Drain,
    Resume,
    Cancel,
    /// Submit the NCCL acceptance test to the targets (see [`crate::acceptance`]).
    Acceptance(crate::acceptance::Mode),
}

impl ActionKind {
    pub fn label(self) -> &'static str {
        match self {
            Self::Cordon => "cordon",
            Self::Uncordon => "uncordon",
            Self::Drain => "drain",
            Self::Resume => "resume",
            Self::Cancel => "cancel",
            Self::Acceptance(_) => "acceptance",
        }
    }

    /// Actions that stop work: they need the target's name (or the count) typed to confirm.
    pub fn destructive(self) -> bool {
        matches!(self, Self::Drain | Self::Cancel)
    }

    pub fn on_jobs(self) -> bool {
        self == Self::Cancel
    }
}

/// What an operator asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct OpRequest {
    pub kind: ActionKind,
    pub targets: Vec<String>,
    pub reason: String,
    pub ticket: Option<String>,
    pub dry_run: bool,
}

/// A job an action stops or disturbs.
#[derive(Debug, Clone, PartialEq)]
pub struct Affected {
    pub job: JobId,
    pub name: Text,
    pub user: Text,
    /// The job's GPUs this step touches (on this node, or all of a cancelled job's).
    pub gpus: u32,
    /// The job's own size: all its GPUs and nodes, wherever they are.
    pub job_gpus: u32,
    pub job_nodes: u32,
    /// What the action does to it, as the backend does it (`waited for, ends ~Dec 03 04:00
    /// UTC`; `its pods evicted …`); empty when there is nothing to add.
    pub fate: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub target: String,
    /// For acceptance runs: the job submitted for this step.
    pub job: Option<crate::acceptance::launch::AcceptanceJob>,
    /// The call that will be made, e.g. `PATCH /api/v1/nodes/gpu-001 {"spec":{"unschedulable":true}}`.
    pub call: String,
    pub affected: Vec<Affected>,
}

/// A target the preflight refused, with why (the error's text is the whole sentence:
/// `node gpu-004 is draining or drained already (draining)`).
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub target: String,
    pub error: OpError,
}

impl Refused {
    pub fn message(&self) -> String {
        self.error.to_string()
    }
}

/// Exactly what will happen, for the confirmation.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub kind: ActionKind,
    pub steps: Vec<Step>,
    /// Targets asked for that will not be run, each with its reason (only a batch planned with
    /// [`plan_batch_as`] has any; the steps are the rest).
    pub refused: Vec<Refused>,
    /// What the operator must type to confirm (the target's name, or the count); `None` when
    /// a plain yes is enough.
    pub confirm_word: Option<String>,
    /// The blast-radius limits it was checked against, and those it goes past (see
    /// [`guard_plan`]); `None` when it was not checked.
    pub guard: Option<Box<Guarded>>,
    /// A fleet plan's clusters, in the order of their steps (empty for one cluster): the body
    /// heads each cluster's steps with its line.
    pub groups: Vec<PlanGroup>,
    /// Lines said before the steps: a fleet plan names each paired host's two schedulers and
    /// which of them it acts in.
    pub notes: Vec<String>,
}

/// One cluster's share of a fleet plan: its steps (that many, in order), and the backend and
/// identity they go out through.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanGroup {
    pub cluster: String,
    pub backend: String,
    pub identity: Option<String>,
    pub steps: usize,
    /// What these steps do where it is not the plan's action (a paired host's cordon is a
    /// drain in Slurm).
    pub action: Option<&'static str>,
}

impl PlanGroup {
    /// `prod-a (slurm as gpuops): 2 target(s)`.
    pub fn line(&self) -> String {
        let who = self.identity.as_deref().map(|i| format!(" as {i}")).unwrap_or_default();
        let action = self.action.map(|a| format!(", {a}")).unwrap_or_default();
        format!("{} ({}{who}): {} target(s){action}", self.cluster, self.backend, self.steps)
    }
}

/// A plan's blast-radius check: the limits, each target's pool, and the limits it goes past.
#[derive(Debug, Clone, PartialEq)]
pub struct Guarded {
    pub guard: guard::Guard,
    /// Target → pool, to count drains per pool again when the plan runs.
    pub pools: BTreeMap<String, String>,
    pub exceeded: Vec<guard::Exceeded>,
}

/// A job the plan touches, counted once however many of its nodes are targets.
#[derive(Debug, Clone, PartialEq)]
pub struct JobTouched {
    pub job: JobId,
    pub name: Text,
    pub user: Text,
    /// GPUs and nodes of the job among this plan's targets.
    pub gpus: u32,
    pub nodes: u32,
    /// The job's own size.
    pub job_gpus: u32,
    pub job_nodes: u32,
}

impl Plan {
    /// The blast-radius limits the plan goes past (it runs only under break-glass).
    pub fn exceeded(&self) -> &[guard::Exceeded] {
        self.guard.as_deref().map_or(&[], |g| g.exceeded.as_slice())
    }

    pub fn affected_gpus(&self) -> u32 {
        self.steps.iter().flat_map(|s| &s.affected).map(|a| a.gpus).fold(0, u32::saturating_add)
    }

    /// Every job the plan touches, once, with the GPUs and nodes of it the targets hold.
    pub fn jobs(&self) -> Vec<JobTouched> {
        let mut by: BTreeMap<JobId, JobTouched> = BTreeMap::new();
        for a in self.steps.iter().flat_map(|s| &s.affected) {
            let j = by.entry(a.job).or_insert_with(|| JobTouched {
                job: a.job,
                name: a.name.clone(),
                user: a.user.clone(),
                gpus: 0,
                nodes: 0,
                job_gpus: a.job_gpus,
                job_nodes: a.job_nodes,
            });
            j.gpus = j.gpus.saturating_add(a.gpus);
            // A node action touches the job on each target node; a job action, everywhere.
            j.nodes = if self.kind.on_jobs() { a.job_nodes } else { j.nodes + 1 };
        }
        by.into_values().collect()
    }

    /// `11 of 12 will run; 1 refused: node gpu-004 is draining …` when targets were refused.
    pub fn refused_line(&self) -> Option<String> {
        let total = self.steps.len() + self.refused.len();
        match self.refused.as_slice() {
            [] => None,
            [one] => Some(format!("{} of {total} will run; 1 refused: {}", self.steps.len(), one.message())),
            many => Some(format!(
                "{} of {total} will run; {} refused (listed below, not run)",
                self.steps.len(),
                many.len()
            )),
        }
    }

    /// The blast-radius limits the plan goes past, one line each, first the one saying what
    /// that means.
    pub fn limit_lines(&self) -> Vec<String> {
        let ex = self.exceeded();
        if ex.is_empty() {
            return Vec::new();
        }
        let mut out = vec![format!("PAST {} BLAST-RADIUS LIMIT(S): runs only under break-glass", ex.len())];
        out.extend(ex.iter().map(|e| format!("    {e}")));
        out
    }

    /// The last line: how many targets, and the jobs and GPUs they touch, each job once.
    pub fn summary(&self) -> String {
        let tests: Vec<_> = self.steps.iter().filter_map(|s| s.job.as_ref()).collect();
        if !tests.is_empty() {
            let nodes: usize = tests.iter().map(|j| j.nodes.len()).sum();
            let gpus = tests
                .iter()
                .map(|j| j.gpus_per_node.saturating_mul(u32::try_from(j.nodes.len()).unwrap_or(u32::MAX)))
                .fold(0u32, u32::saturating_add);
            return format!(
                "{} test job(s) to submit on {nodes} node(s), {gpus} GPUs; running jobs are not touched",
                tests.len()
            );
        }
        format!(
            "{} target(s); {} job(s) affected, {} GPUs",
            self.steps.len(),
            self.jobs().len(),
            self.affected_gpus()
        )
    }

    /// Everything between the refusal line and the summary: the refused targets (when more
    /// than one), each step with its call and the jobs on it, and, for a batch, each job once
    /// with its total.
    pub fn body(&self) -> Vec<String> {
        self.body_with(|_| None)
    }

    /// [`Plan::body`], with `flag(target)` put before that target's line.
    pub fn body_with<'f>(&self, flag: impl Fn(&str) -> Option<&'f str>) -> Vec<String> {
        let mut out = self.notes.clone();
        if self.refused.len() > 1 {
            out.push("refused, will not run:".to_string());
            out.extend(
                self.refused.iter().map(|r| format!("    {}{}", flag(&r.target).unwrap_or(""), r.message())),
            );
        }
        // A fleet plan: each cluster's steps under its line.
        let mut heads = BTreeMap::new();
        let mut at = 0;
        for g in &self.groups {
            heads.insert(at, g);
            at += g.steps;
        }
        let mut label = self.kind.label();
        for (i, s) in self.steps.iter().enumerate() {
            if let Some(g) = heads.get(&i) {
                out.push(format!("on {}", g.line()));
                label = g.action.unwrap_or(self.kind.label());
            }
            out.push(format!("{}{} {}: {}", flag(&s.target).unwrap_or(""), label, s.target, s.call));
            for a in &s.affected {
                let fate = if a.fate.is_empty() { String::new() } else { format!(" — {}", a.fate) };
                out.push(format!("    job {} {} ({}), {} GPUs{fate}", a.job, a.name, a.user, a.gpus));
            }
        }
        if self.steps.len() > 1 {
            let jobs = self.jobs();
            if !jobs.is_empty() {
                out.push(format!("jobs affected ({}), each once:", jobs.len()));
            }
            for j in jobs {
                let what = if j.gpus >= j.job_gpus && j.nodes >= j.job_nodes {
                    format!("all its {} GPUs on {} node(s)", j.gpus, j.nodes)
                } else {
                    format!(
                        "{} of its {} GPUs, on {} of its {} node(s)",
                        j.gpus, j.job_gpus, j.nodes, j.job_nodes
                    )
                };
                out.push(format!("    job {} {} ({}): {what}", j.job, j.name, j.user));
            }
        }
        out
    }

    /// The plan as text (confirmation dialog, `--dry-run`): the refusal line, the body and the
    /// summary last.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self.refused_line().into_iter().collect();
        out.extend(self.limit_lines());
        out.extend(self.body());
        out.push(self.summary());
        out
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OpError {
    #[error("read-only mode: {0} refused (nothing was sent)")]
    ReadOnly(&'static str),
    #[error("a reason is required")]
    NoReason,
    #[error("nothing to {0}")]
    NoTargets(&'static str),
    #[error("{0}")]
    Target(String),
    /// The backend's preflight refused before anything was planned or sent: it cannot do this
    /// at all (unsupported), or this identity may not (forbidden, with the reason).
    /// `instead`: what to run in its place, one command a line (see [`Planner::instead`]).
    #[error("{backend} cannot {action}: {error}{}", instead_lines(.instead))]
    Preflight { backend: String, action: &'static str, error: ActionError, instead: Vec<String> },
    #[error("refused: the audit record could not be written ({0}); nothing was sent")]
    AuditFailed(String),
    /// Past the blast-radius limits without break-glass: nothing was sent.
    #[error("refused: past the blast-radius limits: {}; start break-glass to go past them (nothing was sent)", .0.join("; "))]
    Limits(Vec<String>),
    #[error("confirmation does not match: type {0:?}")]
    NotConfirmed(String),
}

fn instead_lines(instead: &[String]) -> String {
    match instead {
        [] => String::new(),
        lines => format!("; run instead:{}", lines.iter().map(|l| format!("\n    {l}")).collect::<String>()),
    }
}

impl OpError {
    /// The commands to run instead of a refused action (empty when there are none): what the
    /// console offers to copy.
    pub fn instead(&self) -> &[String] {
        match self {
            OpError::Preflight { instead, .. } => instead,
            _ => &[],
        }
    }
}

/// The reason a node action leaves on the node: the operator's reason, and the ticket when the
/// reason does not name it already (`IB flaps [INC-7]`).
pub fn node_reason(req: &OpRequest) -> String {
    let reason = req.reason.trim();
    match req.ticket.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) if !reason.contains(t) => format!("{reason} [{t}]"),
        _ => reason.to_string(),
    }
}

/// The result for one target.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetResult {
    pub target: String,
    pub ok: bool,
    /// What happened, for the operator: the backend's words on success, the error's text
    /// (what is wrong and what to do) on failure.
    pub message: String,
    /// Why it failed, for the console to act on (`None` when it succeeded).
    pub error: Option<ActionError>,
}

impl TargetResult {
    pub fn done(target: &str, message: String) -> TargetResult {
        TargetResult { target: target.to_string(), ok: true, message, error: None }
    }

    pub fn failed(target: &str, error: ActionError) -> TargetResult {
        TargetResult { target: target.to_string(), ok: false, message: error.to_string(), error: Some(error) }
    }

    fn of(target: &str, r: Result<String, ActionError>) -> TargetResult {
        match r {
            Ok(m) => Self::done(target, m),
            Err(e) => Self::failed(target, e),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub op_id: String,
    pub results: Vec<TargetResult>,
    pub dry_run: bool,
    /// Set when the action ran but its outcome record could not be written.
    pub audit_warning: Option<String>,
    /// Acceptance runs: the jobs submitted, to track.
    pub submitted: Vec<(crate::acceptance::launch::AcceptanceJob, crate::acceptance::launch::Submitted)>,
}

pub use futures::future::BoxFuture;

/// Where an executor reports progress inside one target's step as it happens (a drain's
/// per-pod evictions): `(target, message)`.
pub type StepNotes = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// The planning side of a backend: pure and cheap — no I/O, it reads only what the backend's
/// connection and permission preflight last learnt (shared with the executor that owns
/// them) — so the console and the command line build the plan and the confirmation from it
/// on their own thread. Shared as `Arc<dyn Planner>`; obtained from the one executor
/// ([`Executor::planner`]).
pub trait Planner: Send + Sync {
    /// `sim`, `slurm`, `kube`.
    fn backend(&self) -> &str;
    /// Who the backend knows us as; `elevated`: as the break-glass identity would be.
    fn identity(&self, elevated: bool) -> Option<String>;
    /// The call `kind` makes on `target`, as shown in the plan.
    fn describe(&self, kind: ActionKind, target: &str) -> String;
    /// Whether this backend can do `kind` at all (e.g. Slurm has no cordon), and whether the
    /// identity may (the backend's permission preflight; `elevated`: during break-glass).
    fn supports(&self, kind: ActionKind, elevated: bool) -> Result<(), ActionError>;
    /// What the operator can run instead where [`supports`](Self::supports) refuses `req`
    /// because this server cannot do it at all (Slurm 22.05's drain: the `scontrol` line, with
    /// the request's reason and ticket); empty when there is nothing to offer.
    fn instead(&self, _req: &OpRequest) -> Vec<String> {
        Vec::new()
    }
    /// Whether the identity may do `kind` to this job (e.g. cancel another user's job).
    fn permits_job(
        &self,
        _kind: ActionKind,
        _job: &crate::model::Job,
        _elevated: bool,
    ) -> Result<(), ActionError> {
        Ok(())
    }
    /// The acceptance template, when this backend runs acceptance jobs.
    fn acceptance_template(&self) -> Option<&Template> {
        None
    }
    /// The call submitting `job` makes, as shown in the plan.
    fn describe_acceptance(&self, job: &AcceptanceJob) -> String {
        format!("acceptance test on {}", job.target())
    }
}

/// The executing side of a backend: built once and owned by the ops task (or, for a
/// subcommand, by the command), it makes the writes. Its [`planner`](Self::planner) is what
/// the console plans with.
pub trait Executor: Send {
    /// `sim`, `slurm`, `kube`.
    fn backend(&self) -> &str;
    /// Who the next writes go out as (the break-glass identity while elevated), for the audit
    /// log.
    fn identity(&self) -> Option<String>;
    /// The planning side, sharing what this executor's backend learns (connection,
    /// permissions).
    fn planner(&self) -> Arc<dyn Planner>;
    fn execute<'a>(
        &'a mut self,
        kind: ActionKind,
        target: &'a str,
        reason: &'a str,
    ) -> BoxFuture<'a, Result<String, ActionError>>;
    /// Switches to (or back from) the break-glass credentials for the next writes. Backends
    /// without an elevated identity ignore it.
    fn elevate(&mut self, _on: bool) {}
    /// Where to report progress within a step (`None`: nowhere). Backends whose steps are one
    /// call ignore it.
    fn notes(&mut self, _to: Option<StepNotes>) {}
    /// What submits acceptance jobs for this backend (`None`: it cannot). Built with the
    /// executor, once.
    fn launcher(&self) -> Option<Arc<dyn Launcher>> {
        None
    }
    /// Asks the owning backend to read the cluster again at once; the ops task calls it after
    /// every action that sent something. Backends whose writes show up by themselves (the
    /// Kubernetes watches, the simulator's tick after each action) ignore it.
    fn refresh(&self) {}
    /// Where the writes go (a slurmrestd URL), for the audit record beside the identity;
    /// `None` where the identity names it already or there is no server.
    fn endpoint(&self) -> Option<String> {
        None
    }
    /// The cluster's own name as its server gives it (Slurm's `ClusterName`), once learnt.
    fn cluster(&self) -> Option<String> {
        None
    }
}

/// The acceptance plan: one job per node, per pair, or on all targets, each on exactly its
/// nodes, with the command filled in for their GPU count.
fn plan_acceptance(
    req: &OpRequest,
    mode: crate::acceptance::Mode,
    s: &ClusterState,
    cluster: Option<&Text>,
    planner: &dyn Planner,
) -> Result<Plan, OpError> {
    use crate::acceptance::launch::group;
    let t = planner.acceptance_template().ok_or_else(|| OpError::Preflight {
        backend: planner.backend().to_string(),
        action: req.kind.label(),
        error: ActionError::unsupported("no acceptance launcher for this backend"),
        instead: Vec::new(),
    })?;
    // Every node is checked, and every refusal named (a group cannot run without its nodes,
    // so any refusal refuses the whole request).
    let mut refused = Vec::new();
    for name in &req.targets {
        match node_of(s, cluster, name) {
            None => refused.push(format!("node {name} does not exist")),
            Some(n) if !n.state.schedulable() => refused.push(format!(
                "node {name} is {}: it takes no jobs (resume it, or run under a maintenance reservation)",
                n.state.label()
            )),
            Some(_) => {}
        }
    }
    if !refused.is_empty() {
        return Err(OpError::Target(refused.join("; ")));
    }
    let mut steps = Vec::new();
    for nodes in group(mode, &req.targets).map_err(OpError::Target)? {
        let mut gpus = u32::MAX;
        for name in &nodes {
            let n = node_of(s, cluster, name)
                .ok_or_else(|| OpError::Target(format!("node {name} does not exist")))?;
            let have = if n.gpus.is_empty() { n.gpu_slots } else { n.gpus.len() as u32 };
            gpus = gpus.min(have);
        }
        let gpus = t.gpus_per_node.unwrap_or(gpus);
        if gpus == 0 || gpus == u32::MAX {
            return Err(OpError::Target(format!("{} has no GPUs to test", nodes.join(","))));
        }
        let first = nodes.first().and_then(|n| node_of(s, cluster, n));
        let job = AcceptanceJob {
            mode,
            command: t.command_for(gpus, nodes.len()),
            gpus_per_node: gpus,
            gpu_model: first.map(|n| n.gpu_model().to_string()).filter(|m| !m.is_empty()),
            driver: first.and_then(|n| n.driver.as_ref()).map(|d| d.to_string()),
            cuda: first.and_then(|n| n.cuda.as_ref()).map(|d| d.to_string()),
            nodes,
        };
        steps.push(Step {
            target: job.target(),
            call: planner.describe_acceptance(&job),
            affected: Vec::new(),
            job: Some(job),
        });
    }
    let confirm_word = (steps.len() > 1).then(|| steps.len().to_string());
    Ok(Plan {
        kind: req.kind,
        steps,
        refused: Vec::new(),
        confirm_word,
        guard: None,
        groups: Vec::new(),
        notes: Vec::new(),
    })
}

/// Preflight: checks the request against the state and builds the plan (the reason is asked
/// for while the plan is shown, and checked when the plan runs).
pub fn plan(
    req: &OpRequest,
    s: &ClusterState,
    planner: &dyn Planner,
    readonly: bool,
) -> Result<Plan, OpError> {
    plan_as(req, s, planner, readonly, false)
}

/// [`plan`], checked as the break-glass identity would be when `elevated`. A batch with any
/// refused target is refused whole, naming every refused target and why.
pub fn plan_as(
    req: &OpRequest,
    s: &ClusterState,
    planner: &dyn Planner,
    readonly: bool,
    elevated: bool,
) -> Result<Plan, OpError> {
    let p = plan_batch_as(req, s, planner, readonly, elevated)?;
    match p.refused.as_slice() {
        [] => Ok(p),
        _ => Err(refusals(&p.refused)),
    }
}

/// The refusals as one error: the refusal itself when it is alone, else every one named.
fn refusals(refused: &[Refused]) -> OpError {
    match refused {
        [one] => one.error.clone(),
        many => OpError::Target(many.iter().map(Refused::message).collect::<Vec<_>>().join("; ")),
    }
}

/// [`plan_as`] for a batch that may run on part of its targets: the targets the preflight
/// refuses (a node draining already, a job that ended) are listed in [`Plan::refused`] with
/// their reasons and the plan runs on the rest. Refused whole only when nothing is left to run
/// (or the action itself is refused: read-only, capability, permission).
pub fn plan_batch_as(
    req: &OpRequest,
    s: &ClusterState,
    planner: &dyn Planner,
    readonly: bool,
    elevated: bool,
) -> Result<Plan, OpError> {
    plan_batch_in(req, s, None, planner, readonly, elevated)
}

/// The node `name` of `cluster` (as objects carry it: a fleet cluster's name), or, with no
/// cluster, of the first cluster that has one (a single-cluster console).
pub(crate) fn node_of<'a>(s: &'a ClusterState, cluster: Option<&Text>, name: &str) -> Option<&'a Node> {
    match cluster {
        Some(c) => s.node_in(c, name),
        None => s.node(name),
    }
}

fn job_of<'a>(s: &'a ClusterState, cluster: Option<&Text>, id: JobId) -> Option<&'a crate::model::Job> {
    match cluster {
        Some(c) => s.job_in(c, id),
        None => s.job(id),
    }
}

/// [`plan_batch_as`] on the targets of one cluster of a fleet (`cluster`, as objects carry
/// it), or of the one cluster (`None`). Targets are that cluster's node names or job ids.
pub fn plan_batch_in(
    req: &OpRequest,
    s: &ClusterState,
    cluster: Option<&Text>,
    planner: &dyn Planner,
    readonly: bool,
    elevated: bool,
) -> Result<Plan, OpError> {
    if readonly {
        return Err(OpError::ReadOnly(req.kind.label()));
    }
    let refused_by = |error: ActionError| OpError::Preflight {
        backend: planner.backend().to_string(),
        action: req.kind.label(),
        instead: planner.instead(req),
        error,
    };
    planner.supports(req.kind, elevated).map_err(refused_by)?;
    if req.targets.is_empty() {
        return Err(OpError::NoTargets(req.kind.label()));
    }
    if let ActionKind::Acceptance(mode) = req.kind {
        return plan_acceptance(req, mode, s, cluster, planner);
    }
    let mut steps = Vec::new();
    let mut refused = Vec::new();
    for t in &req.targets {
        match plan_target(req.kind, t, s, cluster, planner, elevated) {
            Ok(affected) => steps.push(Step {
                target: t.clone(),
                call: planner.describe(req.kind, t),
                affected,
                job: None,
            }),
            Err(error) => refused.push(Refused { target: t.clone(), error }),
        }
    }
    if steps.is_empty() {
        return Err(refusals(&refused));
    }
    let confirm_word = if steps.len() > 1 {
        Some(steps.len().to_string())
    } else if req.kind.destructive() || !refused.is_empty() {
        Some(steps[0].target.clone())
    } else {
        None
    };
    Ok(Plan {
        kind: req.kind,
        steps,
        refused,
        confirm_word,
        guard: None,
        groups: Vec::new(),
        notes: Vec::new(),
    })
}

/// One target's preflight: the jobs it affects, or why it is refused.
fn plan_target(
    kind: ActionKind,
    t: &str,
    s: &ClusterState,
    cluster: Option<&Text>,
    planner: &dyn Planner,
    elevated: bool,
) -> Result<Vec<Affected>, OpError> {
    if kind.on_jobs() {
        let id: JobId = t.parse().map_err(|_| OpError::Target(format!("{t:?} is not a job id")))?;
        let j = job_of(s, cluster, id).ok_or_else(|| OpError::Target(format!("job {id} does not exist")))?;
        if !j.state.is_active() {
            return Err(OpError::Target(format!(
                "job {id} is {}: there is nothing to cancel",
                j.state.label()
            )));
        }
        planner.permits_job(kind, j, elevated).map_err(|error| OpError::Preflight {
            backend: planner.backend().to_string(),
            action: kind.label(),
            error,
            instead: Vec::new(),
        })?;
        return Ok(vec![Affected {
            job: j.id,
            name: j.name.clone(),
            user: j.user.clone(),
            gpus: j.gpus,
            job_gpus: j.gpus,
            job_nodes: j.nodes.len() as u32,
            fate: String::new(),
        }]);
    }
    let n = node_of(s, cluster, t).ok_or_else(|| OpError::Target(format!("node {t} does not exist")))?;
    let st = n.state;
    let bad = match kind {
        ActionKind::Cordon if !st.schedulable() => Some("is already out of service"),
        ActionKind::Uncordon if st != NodeState::Cordoned => Some("is not cordoned"),
        ActionKind::Drain
            if matches!(st, NodeState::Drained | NodeState::Draining | NodeState::DownDrain) =>
        {
            Some("is draining or drained already")
        }
        ActionKind::Resume if st.schedulable() => Some("is in service already"),
        _ => None,
    };
    if let Some(why) = bad {
        return Err(OpError::Target(format!("node {t} {why} ({})", st.label())));
    }
    // Jobs on the node: drained nodes lose them; cordon leaves them running.
    let mut jobs: BTreeMap<JobId, u32> = BTreeMap::new();
    if kind == ActionKind::Drain {
        for g in &n.gpus {
            if let Some(j) = g.job {
                *jobs.entry(j).or_default() += 1;
            }
        }
    }
    Ok(jobs
        .into_iter()
        .filter_map(|(id, gpus)| {
            let j = job_of(s, cluster, id)?;
            (j.state == JobState::Running).then(|| Affected {
                job: id,
                name: j.name.clone(),
                user: j.user.clone(),
                gpus,
                job_gpus: j.gpus.max(gpus),
                job_nodes: (j.nodes.len() as u32).max(1),
                fate: fate(planner.backend(), j, s.now),
            })
        })
        .collect())
}

/// What a drain does to a running job, per scheduler: Slurm waits for it (until its end, as
/// far as it is known), Kubernetes evicts its pods (PodDisruptionBudgets may hold them).
pub(crate) fn fate(backend: &str, j: &crate::model::Job, now: crate::model::Epoch) -> String {
    match backend {
        "slurm" => match j.end.filter(|e| *e > 0) {
            Some(e) => format!("waited for, ends ~{}", crate::clock::clock_rel(now, e)),
            None => "waited for (no end time known)".into(),
        },
        "kube" => "its pods evicted (a PodDisruptionBudget may hold an eviction; retried)".into(),
        _ => String::new(),
    }
}

/// Checks the plan against the blast-radius limits (`recent_drains`: the nodes drained in the
/// last hour, from the audit log, see [`guard::drains_in_window`]) and records what it goes
/// past in it. Past a limit, it is refused unless `elevated` (break-glass), and then the plan
/// still shows the limits and the audit record names them.
pub fn guard_plan(
    plan: &mut Plan,
    s: &ClusterState,
    limits: &guard::Guard,
    recent_drains: &[String],
    elevated: bool,
) -> Result<(), OpError> {
    guard_plan_in(plan, s, None, limits, recent_drains, elevated)
}

/// [`guard_plan`] for the plan of one cluster of a fleet: its nodes, pools and limits only.
pub fn guard_plan_in(
    plan: &mut Plan,
    s: &ClusterState,
    cluster: Option<&Text>,
    limits: &guard::Guard,
    recent_drains: &[String],
    elevated: bool,
) -> Result<(), OpError> {
    let targets: Vec<String> = plan.steps.iter().map(|st| st.target.clone()).collect();
    let exceeded = guard::check_in(plan.kind, cluster, &targets, s, limits, recent_drains);
    let pools =
        targets.iter().filter_map(|t| Some((t.clone(), node_of(s, cluster, t)?.pool.to_string()))).collect();
    plan.guard = Some(Box::new(Guarded { guard: limits.clone(), pools, exceeded }));
    match plan.exceeded() {
        ex if !ex.is_empty() && !elevated => Err(OpError::Limits(ex.iter().map(|e| e.to_string()).collect())),
        _ => Ok(()),
    }
}

/// A fresh op id: what ties an operation's audit records together.
pub fn new_op_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The audit side of the road.
#[derive(Debug, Clone)]
pub struct Ops {
    pub audit: AuditLog,
    pub readonly: bool,
    pub cluster: String,
    /// The break-glass session tagging every record while it lasts: its id on every record,
    /// and its ticket on every action that names none of its own.
    pub break_glass: Option<crate::audit::BreakGlass>,
}

impl Ops {
    /// The cluster the records name: [`Ops::cluster`], except where that is only the server's
    /// URL (a console on one Slurm cluster starts before the server has named it) and the
    /// executor has learnt the cluster's own name since.
    pub fn cluster_for(&self, exec: &dyn Executor) -> String {
        match exec.cluster() {
            Some(name) if exec.endpoint().as_deref() == Some(self.cluster.as_str()) => name,
            _ => self.cluster.clone(),
        }
    }

    /// The blast-radius check again as the plan runs (fail closed): a plan past a limit runs
    /// only under break-glass, and the drains of the last hour are counted again from the audit
    /// log, so a drain another console sent since the plan was shown counts too.
    async fn guard_at_run(&self, req: &OpRequest, plan: &Plan, cluster: &str) -> Result<(), OpError> {
        let Some(g) = plan.guard.as_deref() else { return Ok(()) };
        if self.break_glass.is_some() {
            return Ok(());
        }
        let mut ex: Vec<String> = g.exceeded.iter().map(|e| e.to_string()).collect();
        if ex.is_empty() && req.kind == ActionKind::Drain && !req.dry_run && g.guard.has_rate() {
            let records = self
                .audit
                .tail_async(guard::RATE_RECORDS)
                .await
                .map_err(|e| OpError::AuditFailed(format!("cannot count the last hour's drains: {e}")))?;
            let recent = guard::drains_in_window(&records, cluster, jiff::Timestamp::now().as_second());
            let targets: Vec<String> = plan.steps.iter().map(|s| s.target.clone()).collect();
            let rate = guard::rate(&g.guard, cluster, &targets, &recent, |t| g.pools.get(t).cloned());
            ex.extend(rate.iter().map(|e| e.to_string()));
        }
        if ex.is_empty() { Ok(()) } else { Err(OpError::Limits(ex)) }
    }

    /// Runs a confirmed plan: audit intent, execute each step, audit outcome. `progress` is
    /// told about each target as it finishes.
    pub async fn run(
        &self,
        req: &OpRequest,
        plan: &Plan,
        exec: &mut dyn Executor,
        progress: impl FnMut(&TargetResult) + Send,
    ) -> Result<Outcome, OpError> {
        self.run_as(None, req, plan, exec, progress).await
    }

    /// [`Ops::run`] under a given op id (`None`: a new one). A fleet plan confirmed once runs
    /// as one part per cluster, each on its own ops task, all under the one op id, so that
    /// every cluster's records of it read as one operation.
    pub async fn run_as(
        &self,
        op_id: Option<String>,
        req: &OpRequest,
        plan: &Plan,
        exec: &mut dyn Executor,
        mut progress: impl FnMut(&TargetResult) + Send,
    ) -> Result<Outcome, OpError> {
        if self.readonly {
            return Err(OpError::ReadOnly(req.kind.label()));
        }
        if req.reason.trim().is_empty() {
            return Err(OpError::NoReason);
        }
        let cluster = self.cluster_for(exec);
        self.guard_at_run(req, plan, &cluster).await?;
        // Elevated only while a break-glass session lasts, whichever surface runs the plan (a
        // console's ops task or a command): the write goes out with the break-glass token, and
        // is dropped back for every other write.
        exec.elevate(self.break_glass.is_some());
        let op_id = op_id.unwrap_or_else(new_op_id);
        let mut params = BTreeMap::new();
        params.insert("backend".to_string(), exec.backend().to_string());
        if let Some(e) = exec.endpoint() {
            params.insert("endpoint".to_string(), e);
        }
        params.insert("dry_run".to_string(), req.dry_run.to_string());
        params.insert("affected_gpus".to_string(), plan.affected_gpus().to_string());
        let mut entry = Entry {
            identity: exec.identity(),
            cluster,
            action: req.kind.label().to_string(),
            targets: plan.steps.iter().map(|s| s.target.clone()).collect(),
            reason: Some(req.reason.clone()),
            ticket: req.ticket.clone(),
            params,
            result: None,
            error: None,
            break_glass: None,
            op_id: op_id.clone(),
        };
        if !plan.refused.is_empty() {
            // Asked for, refused by the preflight, not run: the record says so.
            let r: Vec<String> = plan.refused.iter().map(Refused::message).collect();
            entry.params.insert("refused".to_string(), r.join("; "));
        }
        if let Some(bg) = &self.break_glass {
            entry.break_glass = Some(bg.session.clone());
            match &entry.ticket {
                None => entry.ticket = Some(bg.ticket.clone()),
                // The action's own ticket stays; the session's is kept beside it.
                Some(t) if *t != bg.ticket => {
                    entry.params.insert("break_glass_ticket".to_string(), bg.ticket.clone());
                }
                Some(_) => {}
            }
        }
        if !plan.exceeded().is_empty() {
            // Gone past under break-glass: the record names every limit.
            let ex: Vec<String> = plan.exceeded().iter().map(|e| e.to_string()).collect();
            let names: Vec<String> =
                plan.exceeded().iter().map(|e| format!("{} {}", e.scope, e.limit)).collect();
            entry.params.insert("limits_exceeded".to_string(), names.join(", "));
            entry.params.insert("limits_detail".to_string(), ex.join("; "));
        }
        if let ActionKind::Acceptance(mode) = req.kind {
            entry.params.insert("mode".to_string(), mode.label().to_string());
            if let Some(c) = plan.steps.iter().find_map(|s| s.job.as_ref()) {
                entry.params.insert("command".to_string(), c.command.clone());
            }
        }
        // Fail closed: no record, no request. (The lock wait and the fsync run on the blocking
        // pool, never on a runtime worker.)
        self.audit
            .append_async(Phase::Intent, &entry)
            .await
            .map_err(|e| OpError::AuditFailed(e.to_string()))?;
        let mut results = Vec::new();
        let mut submitted = Vec::new();
        let launcher = exec.launcher();
        if !req.dry_run {
            for step in &plan.steps {
                if let Some(job) = &step.job {
                    let tr = match launcher.as_ref().map(|l| l.submit(job)) {
                        None => TargetResult::failed(
                            &step.target,
                            ActionError::unsupported("no acceptance launcher for this backend"),
                        ),
                        Some(f) => match f.await {
                            Ok(sub) => {
                                let m = format!("submitted job {}", sub.job_id);
                                submitted.push((job.clone(), sub));
                                TargetResult::done(&step.target, m)
                            }
                            Err(e) => TargetResult::failed(&step.target, e),
                        },
                    };
                    progress(&tr);
                    results.push(tr);
                    continue;
                }
                let r = exec.execute(req.kind, &step.target, &req.reason).await;
                let tr = TargetResult::of(&step.target, r);
                progress(&tr);
                results.push(tr);
            }
        }
        let failed: Vec<String> =
            results.iter().filter(|r| !r.ok).map(|r| format!("{}: {}", r.target, r.message)).collect();
        entry.result = Some(
            match (req.dry_run, failed.len()) {
                (true, _) => "dry-run",
                (false, 0) => "ok",
                (false, n) if n == results.len() => "failed",
                _ => "partial",
            }
            .to_string(),
        );
        entry.error = (!failed.is_empty()).then(|| failed.join("; "));
        let kinds: Vec<String> = results
            .iter()
            .filter_map(|r| Some(format!("{}={}", r.target, r.error.as_ref()?.kind().label())))
            .collect();
        if !kinds.is_empty() {
            entry.params.insert("errors".to_string(), kinds.join(" "));
        }
        if !submitted.is_empty() {
            let jobs: Vec<String> =
                submitted.iter().map(|(j, s)| format!("{}={}", j.target(), s.job_id)).collect();
            entry.params.insert("jobs".to_string(), jobs.join(" "));
        }
        let audit_warning = self
            .audit
            .append_async(Phase::Outcome, &entry)
            .await
            .err()
            .map(|e| format!("the action ran but its outcome could not be audited: {e}"));
        Ok(Outcome { op_id, results, dry_run: req.dry_run, audit_warning, submitted })
    }
}

#[cfg(test)]
mod tests;
