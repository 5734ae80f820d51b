//! The simulator as an executor: actions change the simulated world, so every action can be
//! tried without a cluster. The simulator says when a target is gone (not found) or already
//! in the state asked for (conflict), as a real scheduler would.

use super::{ActionError, ActionKind, BoxFuture, Executor, Planner};
use crate::acceptance::Template;
use crate::acceptance::launch::{AcceptanceJob, Launcher, SimLauncher, describe_sim};
use crate::backend::sim::{Sim, SimOp};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

pub fn sim_ops_channel() -> (mpsc::Sender<SimOp>, mpsc::Receiver<SimOp>) {
    mpsc::channel(64)
}

/// Operators' actions on the simulated world (the simulator is a backend, below the actions).
pub trait ApplyOp {
    /// Applies an operator's action to the simulated world.
    fn apply_op(
        &mut self,
        kind: ActionKind,
        target: &str,
        reason: &str,
        by: &str,
    ) -> Result<String, ActionError>;
}

impl ApplyOp for Sim {
    fn apply_op(
        &mut self,
        kind: ActionKind,
        target: &str,
        reason: &str,
        by: &str,
    ) -> Result<String, ActionError> {
        match kind {
            ActionKind::Cordon => self.cordon(target, reason, by).map(|_| format!("{target} cordoned")),
            ActionKind::Uncordon => self.uncordon(target).map(|_| format!("{target} uncordoned")),
            ActionKind::Drain => {
                let down = self.node_state(target).is_some_and(crate::model::NodeState::is_down);
                self.drain(target, reason, by).map(|_| {
                    if down {
                        format!("{target} down+drain (stays down)")
                    } else {
                        format!("{target} draining")
                    }
                })
            }
            ActionKind::Resume => self.resume(target).map(|_| format!("{target} resumed")),
            ActionKind::Cancel => {
                let id =
                    target.parse().map_err(|_| ActionError::other(format!("{target:?} is not a job id")))?;
                self.cancel(id).map(|_| format!("job {id} cancelled"))
            }
            ActionKind::Acceptance(_) => {
                Err(ActionError::other("acceptance jobs are submitted by the launcher"))
            }
        }
    }
}

/// Plans actions on a simulator: everything is allowed, as the simulated operator.
#[derive(Debug, Clone, PartialEq)]
pub struct SimPlanner {
    pub user: String,
    template: Template,
}

impl SimPlanner {
    pub fn new(user: &str) -> SimPlanner {
        SimPlanner { user: user.to_string(), template: Template::default() }
    }
}

impl Planner for SimPlanner {
    fn backend(&self) -> &str {
        "sim"
    }

    fn identity(&self, _elevated: bool) -> Option<String> {
        Some(format!("sim:{}", self.user))
    }

    fn describe(&self, kind: ActionKind, target: &str) -> String {
        match kind {
            ActionKind::Cordon => format!("sim: mark {target} unschedulable (running jobs continue)"),
            ActionKind::Uncordon => format!("sim: mark {target} schedulable"),
            ActionKind::Drain => format!("sim: drain {target} (no new jobs; drained when its jobs end)"),
            ActionKind::Resume => format!("sim: return {target} to service"),
            ActionKind::Cancel => format!("sim: cancel job {target}"),
            ActionKind::Acceptance(_) => format!("sim: acceptance test on {target}"),
        }
    }

    fn supports(&self, _kind: ActionKind, _elevated: bool) -> Result<(), ActionError> {
        Ok(())
    }

    fn acceptance_template(&self) -> Option<&Template> {
        Some(&self.template)
    }

    fn describe_acceptance(&self, job: &AcceptanceJob) -> String {
        describe_sim(job)
    }
}

/// Runs actions on a simulator: one it owns (subcommands act on a freshly generated cluster),
/// or the running simulator task (which ticks at once after each action, so the console sees
/// the result without a separate refresh).
pub enum SimExecutor {
    Direct { sim: Box<Sim>, user: String },
    Remote { tx: mpsc::Sender<SimOp>, user: String },
}

impl SimExecutor {
    fn user(&self) -> &str {
        match self {
            SimExecutor::Direct { user, .. } | SimExecutor::Remote { user, .. } => user,
        }
    }
}

impl Executor for SimExecutor {
    fn backend(&self) -> &str {
        "sim"
    }

    fn identity(&self) -> Option<String> {
        Some(format!("sim:{}", self.user()))
    }

    fn planner(&self) -> Arc<dyn Planner> {
        Arc::new(SimPlanner::new(self.user()))
    }

    fn launcher(&self) -> Option<Arc<dyn Launcher>> {
        Some(Arc::new(SimLauncher::new(Template::default())))
    }

    fn execute<'a>(
        &'a mut self,
        kind: ActionKind,
        target: &'a str,
        reason: &'a str,
    ) -> BoxFuture<'a, Result<String, ActionError>> {
        Box::pin(async move {
            match self {
                SimExecutor::Direct { sim, user } => sim.apply_op(kind, target, reason, user),
                SimExecutor::Remote { tx, user } => {
                    let (reply, rx) = oneshot::channel();
                    let (target, reason, by) = (target.to_string(), reason.to_string(), user.clone());
                    let op = SimOp(Box::new(move |sim: &mut Sim| {
                        let _ = reply.send(sim.apply_op(kind, &target, &reason, &by));
                    }));
                    tx.send(op)
                        .await
                        .map_err(|_| ActionError::unreachable("the simulator is not running"))?;
                    rx.await
                        .map_err(|_| ActionError::unreachable("the simulator stopped before answering"))?
                }
            }
        })
    }
}
