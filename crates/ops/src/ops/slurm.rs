//! Slurm as an executor: drain, resume and cancel over slurmrestd. Slurm has no cordon; its
//! closest is drain, so cordon/uncordon are refused with that advice. What the identity may do
//! is asked beforehand (uid 0 / SlurmUser / slurmdbd's AdminLevel and coordinators, see
//! [`crate::backend::slurm::perm`]); a known refusal disables the action with the reason
//! before anything is planned or sent.
//!
//! One [`SlurmExecutor`] is built per cluster and owned by the ops task; its
//! [`SlurmPlanner`] (plain data plus the shared preflight answer) plans in the console, and its
//! [`SlurmPreflight`] asks the server what the identity may do.

use super::{ActionError, ActionKind, BoxFuture, Executor, OpRequest, Planner};
use crate::acceptance::Template;
use crate::acceptance::launch::{AcceptanceJob, Launcher, SlurmLauncher, describe_slurm};
use crate::backend::slurm::perm::Permission;
use crate::backend::slurm::{Client, ClientConfig};
use crate::model::Job;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::Notify;

/// The permission preflight's latest answer, shared by the executor, its planners and the
/// preflight task.
type Slot = Arc<RwLock<Option<Permission>>>;

fn read(slot: &Slot) -> Option<Permission> {
    slot.read().ok().and_then(|p| p.clone())
}

/// Whether `kind` can be asked of this cluster as this identity (`elevated`: as the
/// break-glass token, whose rights are the server's to check).
fn supports(kind: ActionKind, acceptance: bool, elevated: bool, slot: &Slot) -> Result<(), ActionError> {
    match kind {
        ActionKind::Cordon | ActionKind::Uncordon => {
            Err(ActionError::unsupported("Slurm has no cordon: drain the node instead (running jobs finish)"))
        }
        ActionKind::Acceptance(_) if !acceptance => {
            Err(ActionError::unsupported("no acceptance template configured"))
        }
        // REST v0.0.38 has no node update, for any identity (break-glass included); the
        // scontrol line offered instead needs the same rights, so a missing one is said too.
        ActionKind::Drain | ActionKind::Resume if read(slot).is_some_and(|p| !p.node_updates()) => {
            let rights = match read(slot).map(|p| p.may_update_nodes()) {
                Some(Err(why)) if !elevated => format!("; and scontrol needs the right too: {why}"),
                _ => String::new(),
            };
            Err(ActionError::unsupported(format!("{}{rights}", crate::backend::slurm::ops::NO_NODE_UPDATE)))
        }
        ActionKind::Drain | ActionKind::Resume if !elevated => match read(slot) {
            Some(p) => p.may_update_nodes().map_err(ActionError::forbidden_as_said),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Plans Slurm actions: the URL, the identities, the acceptance template and the preflight's
/// latest answer. No I/O.
#[derive(Debug, Clone)]
pub struct SlurmPlanner {
    url: String,
    user: Option<String>,
    /// `Some(user)` when a break-glass token is configured.
    break_glass: Option<Option<String>>,
    template: Option<Template>,
    permission: Slot,
}

impl SlurmPlanner {
    /// The preflight's latest answer (`None` before the first one).
    pub fn permission(&self) -> Option<Permission> {
        read(&self.permission)
    }

    fn elevated(&self, on: bool) -> bool {
        on && self.break_glass.is_some()
    }
}

impl Planner for SlurmPlanner {
    fn backend(&self) -> &str {
        "slurm"
    }

    fn identity(&self, elevated: bool) -> Option<String> {
        let (user, how) = match (&self.break_glass, self.elevated(elevated)) {
            (Some(u), true) => (u.as_deref(), " (break-glass token)"),
            _ => (self.user.as_deref(), ""),
        };
        let learnt = self.permission().map(|p| p.user).filter(|u| !u.is_empty());
        let user = user.map(str::to_string).or(learnt).unwrap_or_else(|| "(token user)".into());
        Some(format!("slurm:{user}{how}"))
    }

    fn describe(&self, kind: ActionKind, target: &str) -> String {
        let url = &self.url;
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

    fn supports(&self, kind: ActionKind, elevated: bool) -> Result<(), ActionError> {
        supports(kind, self.template.is_some(), self.elevated(elevated), &self.permission)
    }

    fn instead(&self, req: &OpRequest) -> Vec<String> {
        use crate::backend::slurm::ops::scontrol_update;
        if self.permission().is_none_or(|p| p.node_updates()) || req.targets.is_empty() {
            return Vec::new();
        }
        let nodes: Vec<&str> = req.targets.iter().map(String::as_str).collect();
        match req.kind {
            ActionKind::Drain => vec![scontrol_update(&nodes, Some(&super::node_reason(req)))],
            ActionKind::Resume => vec![scontrol_update(&nodes, None)],
            _ => Vec::new(),
        }
    }

    fn permits_job(&self, kind: ActionKind, job: &Job, elevated: bool) -> Result<(), ActionError> {
        match (kind, self.permission()) {
            (ActionKind::Cancel, Some(p)) if !self.elevated(elevated) => p
                .may_cancel(&job.id.to_string(), &job.user, &job.account)
                .map_err(ActionError::forbidden_as_said),
            _ => Ok(()),
        }
    }

    fn acceptance_template(&self) -> Option<&Template> {
        self.template.as_ref()
    }

    fn describe_acceptance(&self, job: &AcceptanceJob) -> String {
        match &self.template {
            Some(t) => describe_slurm(&self.url, t, job),
            None => format!("acceptance test on {}", job.target()),
        }
    }
}

/// Asks slurmrestd who the identity is and what slurmdbd lets it do, and keeps the answer
/// where the executor and its planners read it.
#[derive(Debug, Clone)]
pub struct SlurmPreflight {
    cfg: ClientConfig,
    slurm_user: String,
    permission: Slot,
}

impl SlurmPreflight {
    /// One preflight. A failure (server down, token refused) keeps the last answer.
    pub async fn check(&self) -> Result<Permission, ActionError> {
        let mut c = Client::new(&self.cfg)?;
        let p = c.permission(&self.slurm_user).await?;
        if let Ok(mut slot) = self.permission.write() {
            *slot = Some(p.clone());
        }
        Ok(p)
    }

    /// Repeats the preflight every `every` (AdminLevels change while the console runs).
    pub async fn watch(self, every: Duration) {
        loop {
            if let Err(e) = self.check().await {
                tracing::warn!("slurm permission preflight: {e}");
            }
            tokio::time::sleep(every).await;
        }
    }
}

pub struct SlurmExecutor {
    client: Client,
    user: Option<String>,
    /// The privileged token source used during break-glass (e.g. an operator token).
    privileged: Option<(Client, Option<String>)>,
    elevated: bool,
    cfg: ClientConfig,
    launcher: Option<Arc<SlurmLauncher>>,
    /// The cluster's SlurmUser (privileged like root).
    slurm_user: String,
    /// The preflight's latest answer, shared with the planners.
    permission: Slot,
    /// Wakes the Slurm poller after a write, so the console shows the result at once.
    refresh: Option<Arc<Notify>>,
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
            refresh: None,
        })
    }

    /// The cluster's `SlurmUser`, privileged like root (default `slurm`).
    pub fn with_slurm_user(mut self, user: &str) -> Self {
        self.slurm_user = user.to_string();
        self
    }

    /// Acceptance runs are submitted with this template (as the executor's normal identity).
    pub fn with_acceptance(mut self, t: Template) -> Result<Self, String> {
        self.launcher = Some(Arc::new(SlurmLauncher::new(&self.cfg, t)?));
        Ok(self)
    }

    /// Writes during break-glass go through this configuration (same URL, a privileged token).
    pub fn with_break_glass(mut self, cfg: &ClientConfig) -> Result<Self, String> {
        self.privileged = Some((Client::new(cfg).map_err(|e| e.to_string())?, cfg.user.clone()));
        Ok(self)
    }

    /// After every write, wake the poller that reads this cluster.
    pub fn with_refresh(mut self, refresh: Arc<Notify>) -> Self {
        self.refresh = Some(refresh);
        self
    }

    /// The permission preflight, writing where this executor and its planners read.
    pub fn preflight(&self) -> SlurmPreflight {
        SlurmPreflight {
            cfg: self.cfg.clone(),
            slurm_user: self.slurm_user.clone(),
            permission: self.permission.clone(),
        }
    }

    /// The preflight's latest answer (`None` before the first one).
    pub fn permission(&self) -> Option<Permission> {
        read(&self.permission)
    }

    /// Asks the server who we are and what slurmdbd lets that user do; keeps the answer for
    /// the planners. A failure (server down, token refused) keeps the last answer.
    pub async fn check_permission(&self) -> Result<Permission, ActionError> {
        self.preflight().check().await
    }

    fn active(&mut self) -> (&mut Client, Option<String>) {
        match (&mut self.privileged, self.elevated) {
            (Some((c, u)), true) => (c, u.clone()),
            _ => (&mut self.client, self.user.clone()),
        }
    }

    fn planner_now(&self) -> SlurmPlanner {
        SlurmPlanner {
            url: self.client.url().to_string(),
            user: self.user.clone(),
            break_glass: self.privileged.as_ref().map(|(_, u)| u.clone()),
            template: self.launcher.as_ref().map(|l| l.template().clone()),
            permission: self.permission.clone(),
        }
    }
}

impl Executor for SlurmExecutor {
    fn backend(&self) -> &str {
        "slurm"
    }

    fn identity(&self) -> Option<String> {
        self.planner_now().identity(self.elevated)
    }

    fn planner(&self) -> Arc<dyn Planner> {
        Arc::new(self.planner_now())
    }

    fn endpoint(&self) -> Option<String> {
        Some(self.client.url().to_string())
    }

    fn cluster(&self) -> Option<String> {
        self.permission().and_then(|p| p.cluster)
    }

    fn elevate(&mut self, on: bool) {
        self.elevated = on && self.privileged.is_some();
    }

    fn launcher(&self) -> Option<Arc<dyn Launcher>> {
        self.launcher.clone().map(|l| l as Arc<dyn Launcher>)
    }

    fn refresh(&self) {
        if let Some(n) = &self.refresh {
            n.notify_one();
        }
    }

    fn execute<'a>(
        &'a mut self,
        kind: ActionKind,
        target: &'a str,
        reason: &'a str,
    ) -> BoxFuture<'a, Result<String, ActionError>> {
        Box::pin(async move {
            supports(kind, self.launcher.is_some(), self.elevated, &self.permission)?;
            let (client, user) = self.active();
            let r = match kind {
                ActionKind::Drain => {
                    client.drain(target, reason, user.as_deref()).await.map(|_| format!("{target} draining"))
                }
                ActionKind::Resume => client.resume(target).await.map(|_| format!("{target} resumed")),
                ActionKind::Cancel => {
                    let id = target
                        .parse()
                        .map_err(|_| ActionError::other(format!("{target:?} is not a job id")))?;
                    client.cancel(id).await.map(|_| format!("job {id} cancelled"))
                }
                ActionKind::Cordon | ActionKind::Uncordon => {
                    return Err(ActionError::unsupported("not supported by Slurm"));
                }
                ActionKind::Acceptance(_) => {
                    return Err(ActionError::other("acceptance jobs are submitted by the launcher"));
                }
            };
            Ok(r?)
        })
    }
}
