//! Slurm as an executor: drain, resume and cancel over slurmrestd. Slurm has no cordon; its
//! closest is drain, so cordon/uncordon are refused with that advice.

use super::{ActionKind, BoxFuture, Executor};
use crate::backend::slurm::{Client, ClientConfig};

pub struct SlurmExecutor {
    client: Client,
    user: Option<String>,
    /// The privileged token source used during break-glass (e.g. an operator token).
    privileged: Option<(Client, Option<String>)>,
    elevated: bool,
    cfg: ClientConfig,
    launcher: Option<std::sync::Arc<crate::acceptance::launch::SlurmLauncher>>,
}

impl SlurmExecutor {
    pub fn new(cfg: &ClientConfig) -> Result<Self, String> {
        Ok(SlurmExecutor {
            client: Client::new(cfg).map_err(|e| e.to_string())?,
            user: cfg.user.clone(),
            privileged: None,
            elevated: false,
            cfg: cfg.clone(),
            launcher: None,
        })
    }

    /// Acceptance runs are submitted with this template (as the executor's normal identity).
    pub fn with_acceptance(mut self, t: crate::acceptance::Template) -> Result<Self, String> {
        self.launcher =
            Some(std::sync::Arc::new(crate::acceptance::launch::SlurmLauncher::new(&self.cfg, t)?));
        Ok(self)
    }

    /// Writes during break-glass go through this configuration (same URL, a privileged token).
    pub fn with_break_glass(mut self, cfg: &ClientConfig) -> Result<Self, String> {
        self.privileged = Some((Client::new(cfg).map_err(|e| e.to_string())?, cfg.user.clone()));
        Ok(self)
    }

    fn active(&mut self) -> (&mut Client, Option<String>) {
        match (&mut self.privileged, self.elevated) {
            (Some((c, u)), true) => (c, u.clone()),
            _ => (&mut self.client, self.user.clone()),
        }
    }
}

impl Executor for SlurmExecutor {
    fn backend(&self) -> &str {
        "slurm"
    }

    fn identity(&self) -> Option<String> {
        let (user, how) = match (&self.privileged, self.elevated) {
            (Some((_, u)), true) => (u.as_deref(), " (break-glass token)"),
            _ => (self.user.as_deref(), ""),
        };
        Some(format!("slurm:{}{how}", user.unwrap_or("(token user)")))
    }

    fn elevate(&mut self, on: bool) {
        self.elevated = on && self.privileged.is_some();
    }

    fn launcher(&self) -> Option<std::sync::Arc<dyn crate::acceptance::launch::Launcher>> {
        self.launcher.clone().map(|l| l as std::sync::Arc<dyn crate::acceptance::launch::Launcher>)
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
            ActionKind::Acceptance(_) => {
                format!("POST {url}/slurm/<ver>/job/submit (acceptance job on {target})")
            }
        }
    }

    fn supports(&self, kind: ActionKind) -> Result<(), String> {
        match kind {
            ActionKind::Cordon | ActionKind::Uncordon => {
                Err("Slurm has no cordon: drain the node instead (running jobs finish)".into())
            }
            ActionKind::Acceptance(_) if self.launcher.is_none() => {
                Err("no acceptance template configured".into())
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
            self.supports(kind)?;
            let (client, user) = self.active();
            let r = match kind {
                ActionKind::Drain => {
                    client.drain(target, reason, user.as_deref()).await.map(|_| format!("{target} draining"))
                }
                ActionKind::Resume => client.resume(target).await.map(|_| format!("{target} resumed")),
                ActionKind::Cancel => {
                    let id = target.parse().map_err(|_| format!("{target:?} is not a job id"))?;
                    client.cancel(id).await.map(|_| format!("job {id} cancelled"))
                }
                ActionKind::Cordon | ActionKind::Uncordon => return Err("not supported by Slurm".into()),
                ActionKind::Acceptance(_) => {
                    return Err("acceptance jobs are submitted by the launcher".into());
                }
            };
            r.map_err(|e| e.to_string())
        })
    }
}
