//! The simulator as an executor: actions change the simulated world, so every action can be
//! tried without a cluster.

use super::{ActionKind, BoxFuture, Executor};
use crate::backend::sim::{Sim, SimOp};
use tokio::sync::{mpsc, oneshot};

pub fn sim_ops_channel() -> (mpsc::Sender<SimOp>, mpsc::Receiver<SimOp>) {
    mpsc::channel(64)
}

impl Sim {
    /// Applies an operator's action to the simulated world.
    pub fn apply_op(
        &mut self,
        kind: ActionKind,
        target: &str,
        reason: &str,
        by: &str,
    ) -> Result<String, String> {
        match kind {
            ActionKind::Cordon => self.cordon(target, reason, by).map(|_| format!("{target} cordoned")),
            ActionKind::Uncordon => self.resume(target).map(|_| format!("{target} uncordoned")),
            ActionKind::Drain => self.drain(target, reason, by).map(|_| format!("{target} draining")),
            ActionKind::Resume => self.resume(target).map(|_| format!("{target} resumed")),
            ActionKind::Cancel => {
                let id = target.parse().map_err(|_| format!("{target:?} is not a job id"))?;
                self.cancel(id).map(|_| format!("job {id} cancelled"))
            }
            ActionKind::Acceptance(_) => Err("acceptance jobs are submitted by the launcher".into()),
        }
    }
}

/// Runs actions on a simulator: one it owns (subcommands act on a freshly generated cluster),
/// or the running simulator task.
pub enum SimExecutor {
    Direct { sim: Box<Sim>, user: String },
    Remote { tx: mpsc::Sender<SimOp>, user: String },
}

impl Executor for SimExecutor {
    fn backend(&self) -> &str {
        "sim"
    }

    fn identity(&self) -> Option<String> {
        match self {
            SimExecutor::Direct { user, .. } | SimExecutor::Remote { user, .. } => {
                Some(format!("sim:{user}"))
            }
        }
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

    fn launcher(&self) -> Option<std::sync::Arc<dyn crate::acceptance::launch::Launcher>> {
        Some(std::sync::Arc::new(crate::acceptance::launch::SimLauncher::new(Default::default())))
    }

    fn supports(&self, _kind: ActionKind) -> Result<(), String> {
        Ok(())
    }

    fn execute<'a>(
        &'a mut self,
        kind: ActionKind,
        target: &'a str,
        reason: &'a str,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            match self {
                SimExecutor::Direct { sim, user } => sim.apply_op(kind, target, reason, user),
                SimExecutor::Remote { tx, user } => {
                    let (reply, rx) = oneshot::channel();
                    let (target, reason, by) = (target.to_string(), reason.to_string(), user.clone());
                    let op = SimOp(Box::new(move |sim: &mut Sim| {
                        let _ = reply.send(sim.apply_op(kind, &target, &reason, &by));
                    }));
                    tx.send(op).await.map_err(|_| "the simulator is not running".to_string())?;
                    rx.await.map_err(|_| "the simulator stopped before answering".to_string())?
                }
            }
        })
    }
}
