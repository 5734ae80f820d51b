//! Slurm as an executor: drain, resume and cancel over slurmrestd. Slurm has no cordon; its
//! closest is drain, so cordon/uncordon are refused with that advice.

use super::{ActionKind, BoxFuture, Executor};
use crate::backend::slurm::{Client, ClientConfig};

pub struct SlurmExecutor {
    client: Client,
    user: Option<String>,
}

impl SlurmExecutor {
    pub fn new(cfg: &ClientConfig) -> Result<Self, String> {
        Ok(SlurmExecutor { client: Client::new(cfg).map_err(|e| e.to_string())?, user: cfg.user.clone() })
    }
}

impl Executor for SlurmExecutor {
    fn backend(&self) -> &str {
        "slurm"
    }

    fn identity(&self) -> Option<String> {
        Some(format!("slurm:{}", self.user.as_deref().unwrap_or("(token user)")))
    }

    fn describe(&self, kind: ActionKind, target: &str) -> String {
        let url = self.client.url();
        match kind {
            ActionKind::Drain => {
                format!("POST {url}/slurm/<ver>/node/{target} {{\"state\":[\"DRAIN\"],\"reason\":…}}")
            }
            ActionKind::Resume => format!("POST {url}/slurm/<ver>/node/{target} {{\"state\":[\"RESUME\"]}}"),
            ActionKind::Cancel => format!("DELETE {url}/slurm/<ver>/job/{target}"),
            ActionKind::Cordon | ActionKind::Uncordon => "not supported by Slurm".into(),
        }
    }

    fn supports(&self, kind: ActionKind) -> Result<(), String> {
        match kind {
            ActionKind::Cordon | ActionKind::Uncordon => {
                Err("Slurm has no cordon: drain the node instead (running jobs finish)".into())
            }
            _ => Ok(()),
        }
    }

    fn execute<'a>(
        &'a mut self,
        kind: ActionKind,
        target: &'a str,
        reason: &'a str,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let r = match kind {
                ActionKind::Drain => self
                    .client
                    .drain(target, reason, self.user.as_deref())
                    .await
                    .map(|_| format!("{target} draining")),
                ActionKind::Resume => self.client.resume(target).await.map(|_| format!("{target} resumed")),
                ActionKind::Cancel => {
                    let id = target.parse().map_err(|_| format!("{target:?} is not a job id"))?;
                    self.client.cancel(id).await.map(|_| format!("job {id} cancelled"))
                }
                ActionKind::Cordon | ActionKind::Uncordon => return Err(self.supports(kind).unwrap_err()),
            };
            r.map_err(|e| e.to_string())
        })
    }
}
