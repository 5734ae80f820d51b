//! The ops task: runs confirmed plans off the UI task (audit writes and backend calls never
//! block drawing) and reports progress and the audit log back to the console. It owns the
//! backend's one executor; the console plans with that executor's planner ([`start`]). Audit
//! appends and reads run on the blocking pool, never on a runtime worker.

use super::{ActionKind, Executor, OpError, OpRequest, Ops, Outcome, Plan, Planner, TargetResult};
use crate::acceptance::launch::{AcceptanceJob, Launcher, Origin, Submitted, record, track};
use crate::acceptance::{JudgeConfig, NodeAcceptance, RunRecord, Store, Verdict, by_node};
use crate::audit::Record;
use crate::sanitize::sanitize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Where acceptance runs are recorded, how they are judged, and how long and how often the
/// ops task follows a submitted job.
#[derive(Debug, Clone)]
pub struct AcceptanceSetup {
    pub store: Store,
    pub judge: JudgeConfig,
    pub wait: Duration,
    pub every: Duration,
    /// The fleet cluster this ops task acts on (`None` outside a fleet): its runs are recorded
    /// with it, and only its runs make its per-node picture.
    pub cluster: Option<String>,
}

impl AcceptanceSetup {
    pub fn new(store: Store, judge: JudgeConfig) -> AcceptanceSetup {
        // A real job waits in the queue, then runs a few minutes.
        AcceptanceSetup {
            store,
            judge,
            wait: Duration::from_secs(3600),
            every: Duration::from_secs(2),
            cluster: None,
        }
    }

    /// This setup for the ops task of fleet cluster `cluster`.
    pub fn in_cluster(&self, cluster: &str) -> AcceptanceSetup {
        AcceptanceSetup { cluster: Some(cluster.to_string()), ..self.clone() }
    }

    /// Every node's latest result as the console takes it: for a fleet cluster, that
    /// cluster's share of the picture.
    fn event(&self, by_node: BTreeMap<String, NodeAcceptance>) -> OpEvent {
        match &self.cluster {
            Some(c) => OpEvent::ClusterAcceptance { cluster: c.clone(), by_node: Box::new(by_node) },
            None => OpEvent::Acceptance(Box::new(by_node)),
        }
    }
}

/// A confirmed plan to run.
#[derive(Debug, Clone)]
pub struct OpJob {
    pub req: OpRequest,
    pub plan: Plan,
    /// The break-glass session to tag the records with (its id, and its ticket when the
    /// action names none).
    pub break_glass: Option<crate::audit::BreakGlass>,
    /// The op id to audit it under: a fleet plan's parts share the one the operator confirmed
    /// (`None`: a new one).
    pub op_id: Option<String>,
}

/// Break-glass start and end, sent by the console.
#[derive(Debug, Clone, PartialEq)]
pub enum BreakGlassMsg {
    Start {
        session: crate::audit::BreakGlass,
        reason: String,
        minutes: i64,
        /// When it lapses (Unix seconds).
        until: i64,
    },
    End {
        session: crate::audit::BreakGlass,
        /// Why it ended: by the operator, expired, the context became read-only.
        why: String,
    },
}

/// What the console sends the ops task.
#[derive(Debug, Clone)]
pub enum OpMsg {
    Run(OpJob),
    /// Break-glass start and end. The ops task remembers the open session: a console that
    /// stops with one open still ends it on the record, and every session end is followed by
    /// a signed checkpoint.
    BreakGlass(BreakGlassMsg),
    /// An incident acknowledged in the console: audited first; only when the record is
    /// written does the console hear [`OpEvent::Acked`] and store the ack.
    Ack(crate::model::Ack),
    /// An Alertmanager silence to create or expire ([`super::silence`]): checked, planned,
    /// audited and sent here, off the UI task; the console hears [`OpEvent::Silence`].
    Silence(Box<super::silence::SilenceReq>),
    /// A record that is not an action (a dangerous plugin run).
    Event {
        action: String,
        session: String,
        ticket: String,
        reason: String,
    },
}

/// The audit log's action name for an incident acknowledgement.
pub const ACK_ACTION: &str = "incident-ack";

/// What the console hears back.
#[derive(Debug, Clone)]
pub enum OpEvent {
    Target {
        kind: ActionKind,
        result: TargetResult,
    },
    /// Progress inside one target's step (e.g. each pod a drain evicts), as it happens.
    Step {
        kind: ActionKind,
        target: String,
        message: String,
    },
    Done {
        kind: ActionKind,
        result: Result<Outcome, OpError>,
    },
    /// The newest audit records (after start-up and after every action).
    Audit(Vec<Record>),
    /// A silence request's end: the operator's line, or why it was refused or failed.
    Silence(Result<String, String>),
    /// An ack's audit record is written: the console stores it in the ack store.
    Acked(crate::model::Ack),
    /// The audit log could not be read.
    AuditError(String),
    /// A submitted acceptance job changed state (`PENDING (Resources)`, `RUNNING`,
    /// `COMPLETED`, ...).
    AcceptanceProgress {
        target: String,
        job_id: String,
        state: String,
    },
    /// A job's output was collected, parsed and judged; `recorded` says why the run could not
    /// be stored, when it could not.
    AcceptanceResult {
        target: String,
        job_id: String,
        verdict: Verdict,
        busbw: Option<f64>,
        why: String,
        recorded: Result<(), String>,
    },
    /// Every node's latest acceptance result (at start-up and after each run is recorded).
    Acceptance(Box<BTreeMap<String, NodeAcceptance>>),
    /// [`OpEvent::Acceptance`] from a fleet cluster's ops task: that cluster's nodes, keyed
    /// `cluster/node`.
    ClusterAcceptance {
        cluster: String,
        by_node: Box<BTreeMap<String, NodeAcceptance>>,
    },
    /// The run store could not be read.
    AcceptanceError(String),
}

/// How many records the console keeps for its Audit view.
pub const AUDIT_VIEW_RECORDS: usize = 2_000;

/// Reads the newest records (on the blocking pool) and sends them to the console.
async fn audit_snapshot(ops: &Ops, events: &mpsc::UnboundedSender<OpEvent>) {
    let ev = match ops.audit.tail_async(AUDIT_VIEW_RECORDS).await {
        Ok(r) => OpEvent::Audit(r),
        Err(e) => OpEvent::AuditError(e.to_string()),
    };
    let _ = events.send(ev);
}

/// The runs of one backend (and, in a fleet, of one cluster) in the store (a simulator's runs
/// do not judge a cluster's), and how many lines could not be read. Blocking: call off the
/// async tasks.
fn load_runs(store: &Store, backend: &str, cluster: Option<&str>) -> Result<Vec<RunRecord>, String> {
    let loaded = store.load().map_err(|e| e.to_string())?;
    if loaded.skipped > 0 {
        tracing::warn!(path = %store.path.display(), skipped = loaded.skipped, "unreadable acceptance runs");
    }
    Ok(loaded.runs.into_iter().filter(|r| r.backend == backend && r.cluster.as_deref() == cluster).collect())
}

/// Reads the run store off the async tasks and sends what it holds per node.
async fn acceptance_snapshot(acc: &AcceptanceSetup, backend: &str, events: &mpsc::UnboundedSender<OpEvent>) {
    let (store, backend, judge) = (acc.store.clone(), backend.to_string(), acc.judge.clone());
    let cluster = acc.cluster.clone();
    let r = tokio::task::spawn_blocking(move || {
        load_runs(&store, &backend, cluster.as_deref()).map(|runs| by_node(&runs, &judge))
    })
    .await
    .map_err(|e| e.to_string())
    .and_then(|r| r);
    let _ = events.send(match r {
        Ok(m) => acc.event(m),
        Err(e) => OpEvent::AcceptanceError(e),
    });
}

/// Follows one submitted acceptance job to its end, then records and judges the run and sends
/// the new per-node picture. `lock` keeps runs finishing together from recording (and
/// reporting) over each other.
#[allow(clippy::too_many_arguments)]
async fn follow(
    l: Arc<dyn Launcher>,
    acc: AcceptanceSetup,
    op_id: String,
    job: AcceptanceJob,
    sub: Submitted,
    lock: Arc<tokio::sync::Mutex<()>>,
    events: mpsc::UnboundedSender<OpEvent>,
) {
    // In a fleet, the console says which cluster's run it is.
    let target = match &acc.cluster {
        Some(c) => format!("{c}/{}", job.target()),
        None => job.target(),
    };
    let ev = events.clone();
    let (t, id) = (target.clone(), sub.job_id.clone());
    let c = track(l.as_ref(), &job, &sub, acc.wait, acc.every, move |p| {
        let _ = ev.send(OpEvent::AcceptanceProgress {
            target: t.clone(),
            job_id: id.clone(),
            state: sanitize(&p.label()).into_owned(),
        });
    })
    .await;
    let _guard = lock.lock().await;
    let backend = l.backend().to_string();
    let image = l.template().image.clone();
    let job_id = sub.job_id.clone();
    let setup = acc.clone();
    let done = tokio::task::spawn_blocking(move || {
        let history = load_runs(&acc.store, &backend, acc.cluster.as_deref());
        let mut runs = history.as_ref().cloned().unwrap_or_default();
        let origin = Origin {
            op_id: Some(&op_id),
            backend: &backend,
            image: image.as_deref(),
            cluster: acc.cluster.as_deref(),
        };
        let rec = record(origin, &job, &sub, &c, &runs, &acc.judge);
        let recorded = match (&history, acc.store.append(&rec)) {
            (_, Err(e)) => Err(e.to_string()),
            (Err(e), Ok(())) => Err(format!("recorded, but earlier runs could not be read: {e}")),
            (Ok(_), Ok(())) => Ok(()),
        };
        runs.push(rec.clone());
        (rec, recorded, by_node(&runs, &acc.judge))
    })
    .await;
    match done {
        Ok((rec, recorded, nodes)) => {
            let (verdict, why) = rec
                .judgement
                .as_ref()
                .map_or((Verdict::Fail, "not judged".to_string()), |j| (j.verdict, j.why.clone()));
            let _ = events.send(OpEvent::AcceptanceResult {
                target,
                job_id,
                verdict,
                busbw: rec.busbw,
                why: sanitize(&why).into_owned(),
                recorded,
            });
            let _ = events.send(setup.event(nodes));
        }
        Err(e) => {
            let _ = events.send(OpEvent::AcceptanceError(format!("{target}: recording failed: {e}")));
        }
    }
}

/// The ops tasks [`start`] spawned, so that [`finish`] can wait for their last records.
static WORKERS: std::sync::LazyLock<tokio_util::task::TaskTracker> =
    std::sync::LazyLock::new(tokio_util::task::TaskTracker::new);

/// Starts the ops task with the backend's one executor, and returns the planner the console
/// plans with: the executor's own planning side, reading what its backend learns.
pub fn start(
    ops: Ops,
    exec: Box<dyn Executor>,
    jobs: mpsc::UnboundedReceiver<OpMsg>,
    events: mpsc::UnboundedSender<OpEvent>,
    acceptance: Option<AcceptanceSetup>,
) -> Arc<dyn Planner> {
    let planner = exec.planner();
    WORKERS.spawn(worker_with(ops, exec, jobs, events, acceptance));
    planner
}

/// Waits (at most `limit`) for the ops tasks to write their last records once their console
/// has gone (its sender dropped): the end of an open break-glass session and the session's
/// signed checkpoint.
pub async fn finish(limit: Duration) {
    WORKERS.close();
    let _ = tokio::time::timeout(limit, WORKERS.wait()).await;
}

/// Appends an event record on the blocking pool, reporting a failure to the console.
async fn append_event(ops: &Ops, e: crate::audit::Entry, events: &mpsc::UnboundedSender<OpEvent>) {
    if let Err(err) = ops.audit.append_async(crate::audit::Phase::Event, &e).await {
        let _ = events.send(OpEvent::AuditError(err.to_string()));
    }
}

/// Signs the head at a session's end, on the blocking pool.
async fn checkpoint(ops: &Ops, events: &mpsc::UnboundedSender<OpEvent>) {
    let log = ops.audit.clone();
    match tokio::task::spawn_blocking(move || log.checkpoint()).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            let _ = events.send(OpEvent::AuditError(format!("no signed checkpoint: {e}")));
        }
        Err(e) => tracing::warn!("audit checkpoint: {e}"),
    }
}

/// The record of a break-glass session's end.
fn break_glass_end(
    ops: &Ops,
    exec: &dyn Executor,
    b: &crate::audit::BreakGlass,
    why: &str,
) -> crate::audit::Entry {
    crate::audit::Entry {
        identity: exec.identity(),
        cluster: ops.cluster_for(exec),
        action: crate::audit::BREAK_GLASS_END.into(),
        reason: Some(why.to_string()),
        ticket: Some(b.ticket.clone()),
        break_glass: Some(b.session.clone()),
        op_id: b.session.clone(),
        ..Default::default()
    }
}

pub async fn worker(
    ops: Ops,
    exec: Box<dyn Executor>,
    jobs: mpsc::UnboundedReceiver<OpMsg>,
    events: mpsc::UnboundedSender<OpEvent>,
) {
    worker_with(ops, exec, jobs, events, None).await
}

/// The ops task; with `acceptance`, it also loads the run store at start and follows, records
/// and judges every acceptance job it submits.
pub async fn worker_with(
    mut ops: Ops,
    mut exec: Box<dyn Executor>,
    mut jobs: mpsc::UnboundedReceiver<OpMsg>,
    events: mpsc::UnboundedSender<OpEvent>,
    acceptance: Option<AcceptanceSetup>,
) {
    audit_snapshot(&ops, &events).await;
    if let Some(acc) = &acceptance {
        acceptance_snapshot(acc, exec.backend(), &events).await;
    }
    let record_lock = Arc::new(tokio::sync::Mutex::new(()));
    let mut open: Option<crate::audit::BreakGlass> = None;
    while let Some(msg) = jobs.recv().await {
        let job = match msg {
            OpMsg::Run(job) => job,
            OpMsg::BreakGlass(BreakGlassMsg::Start { session, reason, minutes, until }) => {
                // The console refuses a second session; should one arrive, the first still ends
                // on the record.
                if let Some(b) = open.take().filter(|b| b.session != session.session) {
                    let why = format!("superseded by break-glass session {}", session.session);
                    append_event(&ops, break_glass_end(&ops, exec.as_ref(), &b, &why), &events).await;
                }
                let mut params = BTreeMap::new();
                params.insert("minutes".to_string(), minutes.to_string());
                params.insert("until".to_string(), until.to_string());
                let e = crate::audit::Entry {
                    identity: exec.identity(),
                    cluster: ops.cluster_for(exec.as_ref()),
                    action: crate::audit::BREAK_GLASS_START.into(),
                    reason: Some(reason),
                    ticket: Some(session.ticket.clone()),
                    params,
                    break_glass: Some(session.session.clone()),
                    op_id: session.session.clone(),
                    ..Default::default()
                };
                append_event(&ops, e, &events).await;
                open = Some(session);
                audit_snapshot(&ops, &events).await;
                continue;
            }
            OpMsg::BreakGlass(BreakGlassMsg::End { session, why }) => {
                append_event(&ops, break_glass_end(&ops, exec.as_ref(), &session, &why), &events).await;
                if open.as_ref().is_some_and(|b| b.session == session.session) {
                    open = None;
                }
                checkpoint(&ops, &events).await;
                audit_snapshot(&ops, &events).await;
                continue;
            }
            OpMsg::Ack(ack) => {
                let mut params = BTreeMap::new();
                params.insert("signal".to_string(), ack.key.signal.clone());
                let e = crate::audit::Entry {
                    identity: exec.identity(),
                    cluster: ops.cluster_for(exec.as_ref()),
                    action: ACK_ACTION.into(),
                    targets: vec![ack.key.subject.clone()],
                    reason: Some(ack.note.clone()).filter(|n| !n.is_empty()),
                    ticket: ack.ticket.clone(),
                    params,
                    op_id: uuid::Uuid::new_v4().to_string(),
                    ..Default::default()
                };
                // Fail closed: an ack that could not be audited is not stored.
                match ops.audit.append_async(crate::audit::Phase::Event, &e).await {
                    Ok(_) => {
                        let _ = events.send(OpEvent::Acked(ack));
                    }
                    Err(err) => {
                        let _ = events.send(OpEvent::AuditError(format!("ack not recorded: {err}")));
                    }
                }
                audit_snapshot(&ops, &events).await;
                continue;
            }
            OpMsg::Silence(req) => {
                let r = super::silence::run(&req, &ops.audit, ops.readonly).await;
                let _ = events.send(OpEvent::Silence(r));
                audit_snapshot(&ops, &events).await;
                continue;
            }
            OpMsg::Event { action, session, ticket, reason } => {
                let e = crate::audit::Entry {
                    identity: exec.identity(),
                    cluster: ops.cluster_for(exec.as_ref()),
                    action,
                    reason: Some(reason),
                    ticket: Some(ticket).filter(|t| !t.is_empty()),
                    break_glass: Some(session.clone()).filter(|s| !s.is_empty()),
                    op_id: session,
                    ..Default::default()
                };
                append_event(&ops, e, &events).await;
                audit_snapshot(&ops, &events).await;
                continue;
            }
        };
        // Elevated only while a break-glass session lasts (`Ops::run_as` elevates the executor).
        ops.break_glass = job.break_glass.clone();
        let kind = job.req.kind;
        let ev = events.clone();
        exec.notes(Some(Arc::new(move |target: &str, message: &str| {
            let _ = ev.send(OpEvent::Step { kind, target: target.to_string(), message: message.to_string() });
        })));
        let ev = events.clone();
        let result = ops
            .run_as(job.op_id.clone(), &job.req, &job.plan, exec.as_mut(), move |t| {
                let _ = ev.send(OpEvent::Target { kind, result: t.clone() });
            })
            .await;
        exec.notes(None);
        // Something was sent: the owning backend reads the cluster again at once, so the
        // console shows the result (or, after a not-found or conflict, the truth).
        if matches!(&result, Ok(o) if !o.dry_run && !o.results.is_empty()) {
            exec.refresh();
        }
        let follow_up = match (&result, &acceptance, exec.launcher()) {
            (Ok(o), Some(acc), Some(l)) if !o.dry_run => o
                .submitted
                .iter()
                .map(|(j, s)| (l.clone(), acc.clone(), o.op_id.clone(), j.clone(), s.clone()))
                .collect(),
            _ => Vec::new(),
        };
        let _ = events.send(OpEvent::Done { kind, result });
        audit_snapshot(&ops, &events).await;
        for (l, acc, op_id, job, sub) in follow_up {
            tokio::spawn(follow(l, acc, op_id, job, sub, record_lock.clone(), events.clone()));
        }
    }
    // The console is gone: a session it left open ends on the record, and the console's
    // session ends with a signed checkpoint (a read-only console writes nothing).
    if let Some(b) = open.take() {
        append_event(&ops, break_glass_end(&ops, exec.as_ref(), &b, "the console closed"), &events).await;
    }
    if !ops.readonly {
        checkpoint(&ops, &events).await;
    }
}
