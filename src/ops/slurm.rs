//! Slurm as an executor: drain, resume and cancel over slurmrestd. Slurm has no cordon; its
//! closest is drain, so cordon/uncordon are refused with that advice. What the identity may do
//! is asked beforehand (uid 0 / SlurmUser / slurmdbd's AdminLevel and coordinators, see
//! [`crate::backend::slurm::perm`]); a known refusal disables the action with the reason
//! before anything is planned or sent.

use super::{ActionKind, BoxFuture, Executor};
use crate::backend::slurm::perm::Permission;
use crate::backend::slurm::{Client, ClientConfig};
use crate::model::Job;
use std::sync::{Arc, RwLock};
use std::time::Duration;

pub struct SlurmExecutor {
    client: Client,
    user: Option<String>,
    /// The privileged token source used during break-glass (e.g. an operator token).
    privileged: Option<(Client, Option<String>)>,
    elevated: bool,
    cfg: ClientConfig,
    launcher: Option<std::sync::Arc<crate::acceptance::launch::SlurmLauncher>>,
    /// The cluster's SlurmUser (privileged like root).
    slurm_user: String,
    /// The preflight's latest answer, shared by the planner and the ops task's executor.
    permission: Arc<RwLock<Option<Permission>>>,
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
            slurm_user: "slurm".into(),
            permission: Arc::new(RwLock::new(None)),
        })
    }

    /// The cluster's `SlurmUser`, privileged like root (default `slurm`).
    pub fn with_slurm_user(mut self, user: &str) -> Self {
        self.slurm_user = user.to_string();
        self
    }

    /// Plans with the permission `other` learns (the console's planner and the ops task's
    /// executor are two executors over one preflight).
    pub fn sharing_permission(mut self, other: &SlurmExecutor) -> Self {
        self.permission = other.permission.clone();
        self
    }

    /// The preflight's latest answer (`None` before the first one).
    pub fn permission(&self) -> Option<Permission> {
        self.permission.read().ok().and_then(|p| p.clone())
    }

    /// Asks the server who we are and what slurmdbd lets that user do; keeps the answer for
    /// [`Executor::supports`]. A failure (server down, token refused) keeps the last answer.
    pub async fn check_permission(&self) -> Result<Permission, String> {
        let mut c = Client::new(&self.cfg).map_err(|e| e.to_string())?;
        let p = c.permission(&self.slurm_user).await.map_err(|e| e.to_string())?;
        if let Ok(mut slot) = self.permission.write() {
            *slot = Some(p.clone());
        }
        Ok(p)
    }

    /// Repeats the preflight every `every` (AdminLevels change while the console runs).
    pub fn permission_watch(
        &self,
        every: Duration,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let probe = SlurmExecutor {
            client: self.client.clone(),
            user: self.user.clone(),
            privileged: None,
            elevated: false,
            cfg: self.cfg.clone(),
            launcher: None,
            slurm_user: self.slurm_user.clone(),
            permission: self.permission.clone(),
        };
        async move {
            loop {
                if let Err(e) = probe.check_permission().await {
                    tracing::warn!("slurm permission preflight: {e}");
                }
                tokio::time::sleep(every).await;
            }
        }
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
        let learnt = self.permission().map(|p| p.user).filter(|u| !u.is_empty());
        let user = user.map(str::to_string).or(learnt).unwrap_or_else(|| "(token user)".into());
        Some(format!("slurm:{user}{how}"))
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
            // Under break-glass the privileged token's rights are the server's to check.
            ActionKind::Drain | ActionKind::Resume if !self.elevated => match self.permission() {
                Some(p) => p.may_update_nodes(),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    fn permits_job(&self, kind: ActionKind, job: &Job) -> Result<(), String> {
        match (kind, self.permission()) {
            (ActionKind::Cancel, Some(p)) if !self.elevated => {
                p.may_cancel(&job.id.to_string(), &job.user, &job.account)
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
