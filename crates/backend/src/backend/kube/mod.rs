//! The Kubernetes backend: watches (never polls) nodes, GPU pods, namespaces, ResourceQuotas,
//! node Events and — when discovery shows them — Kueue ClusterQueues, LocalQueues and
//! Workloads, through kube-rs watchers that relist on 410 Gone and back off on errors. Objects
//! are trimmed as they are decoded ([`slim`]), kept in one [`map::Store`], and turned into the
//! same [`Update`]s every backend sends, at most every `coalesce` interval.
//!
//! Queue positions come from the Kueue visibility API (`pendingworkloads`); when it is not
//! served the console derives them from the workloads' priority and age.

pub mod bounded;
mod error;
pub mod kueue;
pub mod map;
pub mod slim;
mod watch;

pub use error::action_error;
pub use map::Mapping;
pub use watch::{CHECKS, access_review, kueue_resources, run, visibility_version};

use kube::config::{KubeConfigOptions, Kubeconfig};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The source name in the header.
pub const SOURCE: &str = "kube";

/// Everything the Kubernetes backend needs.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeConfig {
    /// A kubeconfig file; `None`: `$KUBECONFIG`, then `~/.kube/config`, then in-cluster.
    pub kubeconfig: Option<PathBuf>,
    /// The context to use; `None`: the kubeconfig's current context.
    pub context: Option<String>,
    /// Watch pods, quotas and Kueue workloads of this namespace only (for identities that may
    /// not list them cluster-wide); `None`: all namespaces.
    pub namespace: Option<String>,
    pub mapping: Mapping,
    /// Contexts where every write is refused (e.g. production).
    pub readonly_contexts: Vec<String>,
    /// At most one model update per this interval, however fast events come (a rebuild of
    /// 5,000 nodes and 20,000 GPU pods costs ~60–130 ms on this machine).
    pub coalesce: Duration,
    /// How often queue positions are read from the Kueue visibility API.
    pub positions_every: Duration,
    /// Objects per list page while (re)listing.
    pub page_size: u32,
    /// Drain: the longest an eviction may wait on a PodDisruptionBudget, and the grace period
    /// (`None`: each pod's own).
    pub drain_timeout: Duration,
    pub drain_grace_s: Option<i64>,
    /// Drain pods with `emptyDir` volumes (their data is lost), like `--delete-emptydir-data`.
    pub drain_delete_emptydir: bool,
    /// Where acceptance-test Jobs are created.
    pub acceptance_namespace: String,
    /// Break-glass: the identity writes impersonate while a session lasts.
    pub break_glass_user: Option<String>,
    pub break_glass_groups: Vec<String>,
    /// The largest answer, and the longest watch event: `[kube] max_body` (default 256 MiB).
    pub max_body: u64,
}

impl Default for KubeConfig {
    fn default() -> Self {
        KubeConfig {
            kubeconfig: None,
            context: None,
            namespace: None,
            mapping: Mapping::default(),
            readonly_contexts: Vec::new(),
            coalesce: Duration::from_secs(1),
            positions_every: Duration::from_secs(10),
            page_size: 500,
            drain_timeout: Duration::from_secs(300),
            drain_grace_s: None,
            drain_delete_emptydir: false,
            acceptance_namespace: "default".into(),
            break_glass_user: None,
            break_glass_groups: Vec::new(),
            max_body: bounded::DEFAULT_MAX_BODY,
        }
    }
}

/// A connected client and where it points.
#[derive(Clone)]
pub struct Connection {
    pub client: kube::Client,
    /// The elevated client (impersonating the break-glass identity), when configured.
    pub elevated: Option<kube::Client>,
    pub context: String,
    /// The kubeconfig user name (for the audit log's identity).
    pub user: String,
    /// The API server's URL.
    pub server: String,
    pub readonly: bool,
}

/// What this identity may do, asked with SelfSubjectAccessReview (`Err`: why not).
pub type Permissions = HashMap<&'static str, Result<(), crate::model::ActionError>>;

/// Shared between the watch loop (which connects and switches contexts) and the executor
/// (which writes through the same connection). Also carries job id → owner for cancel.
#[derive(Clone, Default)]
pub struct Shared {
    inner: Arc<RwLock<SharedInner>>,
}

#[derive(Default)]
struct SharedInner {
    conn: Option<Connection>,
    perms: Permissions,
    owners: HashMap<crate::model::JobId, (String, String, String)>,
}

impl Shared {
    pub fn connection(&self) -> Option<Connection> {
        self.inner.read().ok()?.conn.clone()
    }

    pub fn set_connection(&self, c: Option<Connection>, perms: Permissions) {
        if let Ok(mut g) = self.inner.write() {
            g.conn = c;
            g.perms = perms;
        }
    }

    /// The permission answer for a check name (see [`watch::CHECKS`]); unknown means not yet asked.
    pub fn permission(&self, check: &str) -> Result<(), crate::model::ActionError> {
        use crate::model::ActionError;
        let g = self.inner.read().map_err(|_| ActionError::other("permissions unavailable"))?;
        match g.perms.get(check) {
            Some(r) => r.clone(),
            None if g.conn.is_none() => {
                Err(ActionError::unreachable("not connected to the Kubernetes API yet"))
            }
            None => Err(ActionError::other(format!("permission for {check} not checked yet"))),
        }
    }

    pub fn set_owners(&self, owners: HashMap<crate::model::JobId, (String, String, String)>) {
        if let Ok(mut g) = self.inner.write() {
            g.owners = owners;
        }
    }

    /// (namespace, kind, name) of a job.
    pub fn owner(&self, id: crate::model::JobId) -> Option<(String, String, String)> {
        self.inner.read().ok()?.owners.get(&id).cloned()
    }
}

/// Builds a client for `context` (or the current one) from the kubeconfig, falling back to
/// the in-cluster service account when there is no kubeconfig at all.
pub async fn connect(cfg: &KubeConfig, context: Option<&str>) -> Result<Connection, String> {
    let context = context.map(str::to_string).or_else(|| cfg.context.clone());
    let kc = match &cfg.kubeconfig {
        Some(p) => Some(Kubeconfig::read_from(p).map_err(|e| format!("kubeconfig {}: {e}", p.display()))?),
        None => Kubeconfig::read().ok(),
    };
    let (config, ctx, user) = match kc {
        Some(kc) => {
            let ctx = context.clone().or_else(|| kc.current_context.clone()).unwrap_or_default();
            if !kc.contexts.iter().any(|c| c.name == ctx) {
                let known: Vec<&str> = kc.contexts.iter().map(|c| c.name.as_str()).collect();
                return Err(format!("no context {ctx:?} in the kubeconfig (known: {})", known.join(", ")));
            }
            let user = kc
                .contexts
                .iter()
                .find(|c| c.name == ctx)
                .and_then(|c| c.context.as_ref())
                .and_then(|c| c.user.clone())
                .unwrap_or_default();
            let opts = KubeConfigOptions { context: Some(ctx.clone()), ..Default::default() };
            let config = kube::Config::from_custom_kubeconfig(kc, &opts)
                .await
                .map_err(|e| format!("kubeconfig context {ctx}: {e}"))?;
            (config, ctx, user)
        }
        None => {
            let config = kube::Config::incluster().map_err(|e| {
                format!("no kubeconfig ($KUBECONFIG, ~/.kube/config) and not running in a cluster: {e}")
            })?;
            (config, "in-cluster".to_string(), "serviceaccount".to_string())
        }
    };
    let mut config = config;
    config.default_retry = false;
    let server = config.cluster_url.to_string();
    let client =
        bounded::client(config.clone(), cfg.max_body).map_err(|e| format!("Kubernetes client: {e}"))?;
    let elevated = match &cfg.break_glass_user {
        Some(u) => {
            let mut c = config;
            c.auth_info.impersonate = Some(u.clone());
            c.auth_info.impersonate_groups =
                (!cfg.break_glass_groups.is_empty()).then(|| cfg.break_glass_groups.clone());
            Some(bounded::client(c, cfg.max_body).map_err(|e| format!("break-glass client: {e}"))?)
        }
        None => None,
    };
    let readonly = cfg.readonly_contexts.contains(&ctx);
    Ok(Connection { client, elevated, context: ctx, user, server, readonly })
}

/// The contexts of the kubeconfig (for `:ctx` completion and errors).
pub fn contexts(cfg: &KubeConfig) -> Vec<String> {
    let kc = match &cfg.kubeconfig {
        Some(p) => Kubeconfig::read_from(p).ok(),
        None => Kubeconfig::read().ok(),
    };
    kc.map(|k| k.contexts.into_iter().map(|c| c.name).collect()).unwrap_or_default()
}
