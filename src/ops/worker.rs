//! The ops task: runs confirmed plans off the UI task (audit writes and backend calls never
//! block drawing) and reports progress and the audit log back to the console.

use super::{ActionKind, Executor, OpError, OpRequest, Ops, Outcome, Plan, TargetResult};
use crate::audit::Record;
use tokio::sync::mpsc;

/// A confirmed plan to run.
#[derive(Debug, Clone)]
pub struct OpJob {
    pub req: OpRequest,
    pub plan: Plan,
    /// The break-glass session to tag the records with.
    pub break_glass: Option<String>,
}

/// What the console sends the ops task.
#[derive(Debug, Clone)]
pub enum OpMsg {
    Run(OpJob),
    /// A record that is not an action (break-glass start and end).
    Event {
        action: String,
        session: String,
        ticket: String,
        reason: String,
    },
}

/// What the console hears back.
#[derive(Debug, Clone)]
pub enum OpEvent {
    Target {
        kind: ActionKind,
        result: TargetResult,
    },
    Done {
        kind: ActionKind,
        result: Result<Outcome, OpError>,
    },
    /// The newest audit records (after start-up and after every action).
    Audit(Vec<Record>),
    /// The audit log could not be read.
    AuditError(String),
}

/// How many records the console keeps for its Audit view.
pub const AUDIT_VIEW_RECORDS: usize = 2_000;

fn audit_snapshot(ops: &Ops, events: &mpsc::UnboundedSender<OpEvent>) {
    let ev = match ops.audit.tail(AUDIT_VIEW_RECORDS) {
        Ok(r) => OpEvent::Audit(r),
        Err(e) => OpEvent::AuditError(e.to_string()),
    };
    let _ = events.send(ev);
}

pub async fn worker(
    mut ops: Ops,
    mut exec: Box<dyn Executor>,
    mut jobs: mpsc::UnboundedReceiver<OpMsg>,
    events: mpsc::UnboundedSender<OpEvent>,
) {
    audit_snapshot(&ops, &events);
    while let Some(msg) = jobs.recv().await {
        let job = match msg {
            OpMsg::Run(job) => job,
            OpMsg::Event { action, session, ticket, reason } => {
                let e = crate::audit::Entry {
                    identity: exec.identity(),
                    cluster: ops.cluster.clone(),
                    action,
                    reason: Some(reason),
                    ticket: Some(ticket),
                    break_glass: Some(session.clone()),
                    op_id: session,
                    ..Default::default()
                };
                if let Err(err) = ops.audit.append(crate::audit::Phase::Event, &e) {
                    let _ = events.send(OpEvent::AuditError(err.to_string()));
                }
                audit_snapshot(&ops, &events);
                continue;
            }
        };
        ops.break_glass = job.break_glass.clone();
        // Elevated only while a break-glass session lasts; dropped for every other write.
        exec.elevate(job.break_glass.is_some());
        let kind = job.req.kind;
        let ev = events.clone();
        let result = ops
            .run(&job.req, &job.plan, exec.as_mut(), move |t| {
                let _ = ev.send(OpEvent::Target { kind, result: t.clone() });
            })
            .await;
        let _ = events.send(OpEvent::Done { kind, result });
        audit_snapshot(&ops, &events);
    }
}
