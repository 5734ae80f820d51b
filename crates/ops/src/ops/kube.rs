//! Kubernetes as an executor: cordon/uncordon (patch `spec.unschedulable` with who and why as
//! annotations), drain with kubectl's semantics (cordon, then evict every pod on the node
//! through `policy/v1` Eviction, honouring PodDisruptionBudgets by retrying on 429, skipping
//! DaemonSet and mirror pods, refusing pods with `emptyDir` data or without a controller),
//! resume (= uncordon) and cancel (delete the job's owning object). Each action also records
//! a Kubernetes Event on the node. What the identity may do is asked beforehand with
//! SelfSubjectAccessReview; a refusal disables the action with the server's reason. The API
//! server's answers become typed errors ([`action_error`]): 403 forbidden with its message,
//! 404 not found, 409 conflict, 429 busy.
//!
//! The connection, the permission answers and the job owners live in the backend's
//! [`Shared`]; the executor (owned by the ops task) writes through it and its
//! [`KubePlanner`] (held by the console) reads it. Changes reach the console through the
//! watches, so no refresh is needed after a write.

use super::{ActionError, ActionKind, BoxFuture, Executor, Planner};
use crate::acceptance::Template;
use crate::acceptance::launch::{AcceptanceJob, Launcher};
use crate::backend::kube::slim::MIRROR_ANNOTATION;
use crate::backend::kube::{Connection, KubeConfig, Shared, action_error};
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Plans Kubernetes actions from what the backend's connection learnt (context, user,
/// SelfSubjectAccessReview answers, job owners). No I/O.
#[derive(Clone)]
pub struct KubePlanner {
    shared: Shared,
    break_glass_user: Option<String>,
    drain_timeout: Duration,
    /// The acceptance template and the namespace its Jobs go to.
    acceptance: Option<(Template, String)>,
}

impl KubePlanner {
    fn checks(kind: ActionKind) -> &'static [&'static str] {
        match kind {
            ActionKind::Cordon | ActionKind::Uncordon | ActionKind::Resume => &["patch nodes"],
            ActionKind::Drain => &["patch nodes", "list pods", "evict pods"],
            ActionKind::Cancel => &["delete jobs"],
            ActionKind::Acceptance(_) => &["create jobs"],
        }
    }

    fn elevated(&self, on: bool) -> bool {
        on && self.break_glass_user.is_some()
    }
}

impl Planner for KubePlanner {
    fn backend(&self) -> &str {
        "kube"
    }

    fn identity(&self, elevated: bool) -> Option<String> {
        let c = self.shared.connection()?;
        let how = match (&self.break_glass_user, self.elevated(elevated)) {
            (Some(u), true) => format!(" as {u} (break-glass impersonation)"),
            _ => String::new(),
        };
        Some(format!("kube:{}@{}{how}", c.user, c.context))
    }

    fn describe(&self, kind: ActionKind, target: &str) -> String {
        match kind {
            ActionKind::Cordon => {
                format!(
                    "PATCH /api/v1/nodes/{target} {{\"spec\":{{\"unschedulable\":true}}}} + reason annotations; Event"
                )
            }
            ActionKind::Uncordon | ActionKind::Resume => {
                format!("PATCH /api/v1/nodes/{target} {{\"spec\":{{\"unschedulable\":null}}}}; Event")
            }
            ActionKind::Drain => format!(
                "cordon {target}; POST …/pods/<pod>/eviction (policy/v1) for each pod on {target} — DaemonSet and mirror \
                 pods skipped, PodDisruptionBudgets honoured (retry on 429, up to {}s); Event",
                self.drain_timeout.as_secs()
            ),
            ActionKind::Acceptance(_) => format!("acceptance test on {target}"),
            ActionKind::Cancel => match target.parse().ok().and_then(|id| self.shared.owner(id)) {
                Some((ns, kind, name)) => format!("DELETE {kind} {ns}/{name} (propagationPolicy=Background)"),
                None => format!("DELETE the owner of job {target}"),
            },
        }
    }

    fn supports(&self, kind: ActionKind, elevated: bool) -> Result<(), ActionError> {
        if let ActionKind::Acceptance(mode) = kind {
            let (t, _) = self
                .acceptance
                .as_ref()
                .ok_or_else(|| ActionError::unsupported("no acceptance template configured"))?;
            if mode != crate::acceptance::Mode::PerNode {
                return Err(ActionError::unsupported(
                    "runs across nodes need MPI between the pods (the MPI Operator's MPIJob); \
                     use per-node mode on Kubernetes",
                ));
            }
            if t.image.is_none() {
                return Err(ActionError::unsupported(
                    "set [acceptance] image: a container image with nccl-tests' all_reduce_perf",
                ));
            }
        }
        let c = self
            .shared
            .connection()
            .ok_or_else(|| ActionError::unreachable("not connected to the Kubernetes API"))?;
        if c.readonly {
            return Err(ActionError::Forbidden {
                reason: format!("context {} is read-only in the configuration", c.context),
                fix: "switch context with :ctx, or change [kube] readonly_contexts".into(),
            });
        }
        // Under break-glass the elevated identity is checked by the server when it writes.
        if self.elevated(elevated) {
            return Ok(());
        }
        for check in Self::checks(kind) {
            self.shared.permission(check)?;
        }
        Ok(())
    }

    fn acceptance_template(&self) -> Option<&Template> {
        self.acceptance.as_ref().map(|(t, _)| t)
    }

    fn describe_acceptance(&self, job: &AcceptanceJob) -> String {
        match &self.acceptance {
            Some((t, ns)) => crate::acceptance::kube::describe(ns, t, job),
            None => format!("acceptance test on {}", job.target()),
        }
    }
}

pub struct KubeExecutor {
    shared: Shared,
    cfg: KubeConfig,
    elevated: bool,
    /// Between eviction retries while a PodDisruptionBudget says no (kubectl: 5 s), and between
    /// checks that an evicted pod is gone (kubectl: 1 s).
    pub evict_retry: Duration,
    pub poll: Duration,
    launcher: Option<Arc<crate::acceptance::kube::KubeLauncher>>,
    /// Per-pod progress of a drain, as it happens.
    notes: Option<super::StepNotes>,
}

impl KubeExecutor {
    pub fn new(shared: Shared, cfg: KubeConfig) -> Self {
        KubeExecutor {
            shared,
            cfg,
            elevated: false,
            evict_retry: Duration::from_secs(5),
            poll: Duration::from_secs(1),
            launcher: None,
            notes: None,
        }
    }

    /// Acceptance runs: a Job per node in `namespace`, from this template.
    pub fn with_acceptance(mut self, template: Template, namespace: String) -> Self {
        self.launcher = Some(Arc::new(crate::acceptance::kube::KubeLauncher::new(
            self.shared.clone(),
            template,
            namespace,
        )));
        self
    }

    fn planner_now(&self) -> KubePlanner {
        KubePlanner {
            shared: self.shared.clone(),
            break_glass_user: self.cfg.break_glass_user.clone(),
            drain_timeout: self.cfg.drain_timeout,
            acceptance: self.launcher.as_ref().map(|l| (l.template().clone(), l.namespace().to_string())),
        }
    }

    fn conn(&self) -> Result<Connection, ActionError> {
        self.shared
            .connection()
            .ok_or_else(|| ActionError::unreachable("not connected to the Kubernetes API"))
    }

    fn client(&self, conn: &Connection) -> kube::Client {
        match (&conn.elevated, self.elevated) {
            (Some(c), true) => c.clone(),
            _ => conn.client.clone(),
        }
    }
}

/// The owning object's API, for cancel.
fn owner_resource(kind: &str) -> Option<ApiResource> {
    let (group, version, plural) = match kind {
        "Job" => ("batch", "v1", "jobs"),
        "Pod" => ("", "v1", "pods"),
        "JobSet" => ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
        "PyTorchJob" => ("kubeflow.org", "v1", "pytorchjobs"),
        "MPIJob" => ("kubeflow.org", "v2beta1", "mpijobs"),
        "RayJob" => ("ray.io", "v1", "rayjobs"),
        _ => return None,
    };
    Some(ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() { version.into() } else { format!("{group}/{version}") },
        kind: kind.into(),
        plural: plural.into(),
    })
}

fn code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// The failures of several pods as one error: their common kind, or a plain error when they
/// differ.
fn combined(failed: Vec<ActionError>, text: String) -> ActionError {
    let kind = failed.first().map(ActionError::kind);
    if let Some(k) = kind.filter(|k| failed.iter().all(|e| e.kind() == *k)) {
        ActionError::of_kind(k, text)
    } else {
        ActionError::Other(text)
    }
}

impl Executor for KubeExecutor {
    fn backend(&self) -> &str {
        "kube"
    }

    fn identity(&self) -> Option<String> {
        self.planner_now().identity(self.elevated)
    }

    fn planner(&self) -> Arc<dyn Planner> {
        Arc::new(self.planner_now())
    }

    fn elevate(&mut self, on: bool) {
        self.elevated = on && self.cfg.break_glass_user.is_some();
    }

    fn notes(&mut self, to: Option<super::StepNotes>) {
        self.notes = to;
    }

    fn launcher(&self) -> Option<Arc<dyn Launcher>> {
        self.launcher.clone().map(|l| l as Arc<dyn Launcher>)
    }

    fn execute<'a>(
        &'a mut self,
        kind: ActionKind,
        target: &'a str,
        reason: &'a str,
    ) -> BoxFuture<'a, Result<String, ActionError>> {
        Box::pin(async move {
            self.planner_now().supports(kind, self.elevated)?;
            let conn = self.conn()?;
            let client = self.client(&conn);
            let who = self.identity().unwrap_or_default();
            let result = match kind {
                ActionKind::Cordon => {
                    cordon(&client, target, true, reason, &who).await.map(|_| format!("{target} cordoned"))
                }
                ActionKind::Uncordon | ActionKind::Resume => {
                    cordon(&client, target, false, reason, &who).await.map(|_| format!("{target} uncordoned"))
                }
                ActionKind::Drain => self.drain(&client, target, reason, &who).await,
                ActionKind::Cancel => self.cancel(&client, target).await,
                ActionKind::Acceptance(_) => {
                    Err(ActionError::other("acceptance jobs are submitted by the launcher"))
                }
            };
            if kind != ActionKind::Cancel && result.is_ok() {
                let note = format!("{}: {reason}", who);
                if let Err(e) = record_event(&client, target, kind, &note).await {
                    return result.map(|m| format!("{m} (the node Event was not recorded: {e})"));
                }
            }
            result
        })
    }
}

/// Sets or clears `spec.unschedulable`, with who, why and when as annotations.
pub async fn cordon(
    client: &kube::Client,
    node: &str,
    on: bool,
    reason: &str,
    who: &str,
) -> Result<(), ActionError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let patch = if on {
        serde_json::json!({
            "metadata": {"annotations": {
                "gpuplane.io/reason": reason, "gpuplane.io/by": who,
                "gpuplane.io/at": jiff::Timestamp::now().as_second().to_string()}},
            "spec": {"unschedulable": true}
        })
    } else {
        serde_json::json!({
            "metadata": {"annotations": {"gpuplane.io/reason": null, "gpuplane.io/by": null, "gpuplane.io/at": null}},
            "spec": {"unschedulable": null}
        })
    };
    nodes.patch(node, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ()).map_err(action_error)
}

/// Records what was done on the node as an `events.k8s.io/v1` Event in `default` (where
/// node events live), so `kubectl describe node` shows it.
pub async fn record_event(
    client: &kube::Client,
    node: &str,
    kind: ActionKind,
    note: &str,
) -> Result<(), ActionError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let uid = nodes.get_opt(node).await.ok().flatten().and_then(|n| n.metadata.uid);
    let host = hostname::get().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default();
    let action = kind.label();
    let mut note: String = note.chars().take(1000).collect();
    note.retain(|c| !c.is_control());
    let ev = Event {
        metadata: ObjectMeta {
            generate_name: Some(format!("{node}.gpuplane-")),
            namespace: Some("default".into()),
            ..Default::default()
        },
        event_time: Some(MicroTime(jiff::Timestamp::now())),
        reporting_controller: Some("gpuplane.io/console".into()),
        reporting_instance: Some(format!("gpuplane-{host}-{}", std::process::id())),
        action: Some(format!("{}{}", action[..1].to_uppercase(), &action[1..])),
        reason: Some(format!("{}Requested", &action[..1].to_uppercase()) + &action[1..]),
        type_: Some("Normal".into()),
        note: Some(note),
        regarding: Some(ObjectReference {
            kind: Some("Node".into()),
            api_version: Some("v1".into()),
            name: Some(node.into()),
            uid,
            ..Default::default()
        }),
        ..Default::default()
    };
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    events.create(&PostParams::default(), &ev).await.map(|_| ()).map_err(action_error)
}

/// `namespace/name` of a pod, as drain reports it.
fn pod_name(p: &Pod) -> String {
    format!("{}/{}", p.metadata.namespace.as_deref().unwrap_or(""), p.metadata.name.as_deref().unwrap_or(""))
}

/// What drain does with one pod (kubectl's filters, in its order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodVerdict {
    Evict,
    Skip(&'static str),
    Refuse(&'static str),
}

pub fn drain_filter(p: &Pod, delete_emptydir: bool) -> PodVerdict {
    if p.metadata.deletion_timestamp.is_some() {
        return PodVerdict::Skip("already terminating");
    }
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("");
    let finished = phase == "Succeeded" || phase == "Failed";
    let ctrl =
        p.metadata.owner_references.as_ref().and_then(|o| o.iter().find(|r| r.controller == Some(true)));
    if ctrl.is_some_and(|c| c.kind == "DaemonSet") && !finished {
        return PodVerdict::Skip("DaemonSet-managed");
    }
    if p.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(MIRROR_ANNOTATION)) {
        return PodVerdict::Skip("mirror (static) pod");
    }
    if finished {
        return PodVerdict::Evict;
    }
    let local = p.spec.as_ref().is_some_and(|s| s.volumes.iter().flatten().any(|v| v.empty_dir.is_some()));
    if local && !delete_emptydir {
        return PodVerdict::Refuse(
            "has local storage (emptyDir); allow it with [kube] drain_delete_emptydir",
        );
    }
    if ctrl.is_none() {
        return PodVerdict::Refuse("declares no controller: it would not be recreated elsewhere");
    }
    PodVerdict::Evict
}

impl KubeExecutor {
    fn note(&self, node: &str, message: &str) {
        if let Some(n) = &self.notes {
            n(node, message);
        }
    }

    async fn drain(
        &self,
        client: &kube::Client,
        node: &str,
        reason: &str,
        who: &str,
    ) -> Result<String, ActionError> {
        cordon(client, node, true, reason, who).await?;
        let pods: Api<Pod> = Api::all(client.clone());
        let mut all = Vec::new();
        let mut lp = ListParams::default().fields(&format!("spec.nodeName={node}")).limit(500);
        loop {
            let page =
                pods.list(&lp).await.map_err(|e| action_error(e).context(&format!("list pods on {node}")))?;
            all.extend(page.items);
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(c) => lp = lp.continue_token(&c),
                None => break,
            }
        }
        let mut evict = Vec::new();
        let mut skipped: Vec<String> = Vec::new();
        let mut refused: Vec<String> = Vec::new();
        for p in &all {
            let name = pod_name(p);
            match drain_filter(p, self.cfg.drain_delete_emptydir) {
                PodVerdict::Evict => evict.push(p),
                PodVerdict::Skip(why) => skipped.push(format!("{name} ({why})")),
                PodVerdict::Refuse(why) => refused.push(format!("{name} {why}")),
            }
        }
        if !refused.is_empty() {
            return Err(ActionError::other(format!(
                "{node} is cordoned but not drained: {}",
                refused.join("; ")
            )));
        }
        self.note(node, &format!("cordoned; evicting {} pod(s), skipping {}", evict.len(), skipped.len()));
        let deadline = Instant::now() + self.cfg.drain_timeout;
        let results =
            futures::future::join_all(evict.iter().map(|p| self.evict(client, node, p, deadline))).await;
        let mut done = Vec::new();
        let mut failed = Vec::new();
        let mut errors = Vec::new();
        let mut waited = 0;
        for (p, r) in evict.iter().zip(results) {
            let name = pod_name(p);
            match r {
                Ok(tries) => {
                    waited += tries;
                    done.push(name);
                }
                Err(e) => {
                    failed.push(format!("{name}: {e}"));
                    errors.push(e);
                }
            }
        }
        let mut msg = format!("{node} drained: evicted {} pod(s)", done.len());
        if !done.is_empty() {
            msg.push_str(&format!(" ({})", done.join(", ")));
        }
        if waited > 0 {
            msg.push_str(&format!("; waited on PodDisruptionBudgets {waited} time(s)"));
        }
        if !skipped.is_empty() {
            msg.push_str(&format!("; skipped {}", skipped.join(", ")));
        }
        if failed.is_empty() {
            Ok(msg)
        } else {
            Err(combined(errors, format!("{msg}; NOT evicted: {}", failed.join("; "))))
        }
    }

    /// Evicts one pod, retrying while a PodDisruptionBudget refuses (429), then waits until it
    /// is gone. Returns how many times a budget said no.
    async fn evict(
        &self,
        client: &kube::Client,
        node: &str,
        p: &Pod,
        deadline: Instant,
    ) -> Result<u32, ActionError> {
        let r = self.evict_pod(client, node, p, deadline).await;
        let pod = pod_name(p);
        match &r {
            Ok(_) => self.note(node, &format!("{pod} evicted and gone")),
            Err(e) => self.note(node, &format!("{pod} not evicted: {e}")),
        }
        r
    }

    async fn evict_pod(
        &self,
        client: &kube::Client,
        node: &str,
        p: &Pod,
        deadline: Instant,
    ) -> Result<u32, ActionError> {
        let ns = p.metadata.namespace.as_deref().unwrap_or("default");
        let name = p.metadata.name.as_deref().unwrap_or("");
        let uid = p.metadata.uid.clone();
        let api: Api<Pod> = Api::namespaced(client.clone(), ns);
        // Built by hand: kube-rs' own eviction body spells the options `delete_options`, which
        // the API server ignores, so a grace period would silently not apply.
        let mut body = serde_json::json!({
            "apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": ns},
        });
        if let Some(g) = self.cfg.drain_grace_s {
            body["deleteOptions"] = serde_json::json!({"gracePeriodSeconds": g});
        }
        let path = format!("/api/v1/namespaces/{ns}/pods/{name}/eviction");
        let mut refusals = 0;
        loop {
            let req = http::Request::post(&path)
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(serde_json::to_vec(&body).unwrap_or_default())
                .map_err(|e| ActionError::other(e.to_string()))?;
            match client.request::<serde_json::Value>(req).await {
                Ok(_) => {
                    self.note(node, &format!("{ns}/{name} eviction accepted; waiting for it to terminate"));
                    break;
                }
                Err(e) if code(&e) == Some(404) => return Ok(refusals),
                Err(e) if code(&e) == Some(429) => {
                    refusals += 1;
                    self.note(
                        node,
                        &format!(
                            "{ns}/{name}: a PodDisruptionBudget refuses (try {refusals}); retrying in {}s",
                            self.evict_retry.as_secs_f32()
                        ),
                    );
                    if Instant::now() + self.evict_retry > deadline {
                        return Err(action_error(e).context(&format!(
                            "a PodDisruptionBudget still refuses after {}s",
                            self.cfg.drain_timeout.as_secs()
                        )));
                    }
                    tokio::time::sleep(self.evict_retry).await;
                }
                Err(e) => return Err(action_error(e)),
            }
        }
        loop {
            match api.get_opt(name).await {
                Ok(None) => return Ok(refusals),
                Ok(Some(now)) if now.metadata.uid != uid => return Ok(refusals),
                Ok(Some(_)) | Err(_) if Instant::now() > deadline => {
                    return Err(ActionError::Timeout {
                        what: format!("{ns}/{name} (evicted, but still terminating)"),
                        after: Some(self.cfg.drain_timeout),
                    });
                }
                _ => tokio::time::sleep(self.poll).await,
            }
        }
    }

    async fn cancel(&self, client: &kube::Client, target: &str) -> Result<String, ActionError> {
        let id: u64 =
            target.parse().map_err(|_| ActionError::other(format!("{target:?} is not a job id")))?;
        let (ns, kind, name) = self
            .shared
            .owner(id)
            .ok_or_else(|| ActionError::not_found(format!("job {target} (not known in this context)")))?;
        let ar = owner_resource(&kind).ok_or_else(|| {
            ActionError::unsupported(format!(
                "{kind} {ns}/{name} is not a batch job; gpuplane will not delete it (scale or delete it with kubectl)"
            ))
        })?;
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &ar);
        api.delete(&name, &DeleteParams::background()).await.map_err(action_error)?;
        Ok(format!("{kind} {ns}/{name} deleted"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn drain_filters_like_kubectl() {
        let owned = |kind: &str| json!([{"apiVersion": "v1", "kind": kind, "name": "o", "uid": "u", "controller": true}]);
        let ds = pod(
            json!({"metadata": {"name": "dp", "ownerReferences": owned("DaemonSet")}, "status": {"phase": "Running"}}),
        );
        assert_eq!(drain_filter(&ds, false), PodVerdict::Skip("DaemonSet-managed"));
        let mirror = pod(
            json!({"metadata": {"name": "m", "annotations": {MIRROR_ANNOTATION: "x"}}, "status": {"phase": "Running"}}),
        );
        assert_eq!(drain_filter(&mirror, false), PodVerdict::Skip("mirror (static) pod"));
        let job = pod(
            json!({"metadata": {"name": "j", "ownerReferences": owned("Job")}, "status": {"phase": "Running"}}),
        );
        assert_eq!(drain_filter(&job, false), PodVerdict::Evict);
        let scratch = pod(json!({"metadata": {"name": "s", "ownerReferences": owned("Job")},
            "spec": {"containers": [], "volumes": [{"name": "x", "emptyDir": {}}]}, "status": {"phase": "Running"}}));
        assert!(matches!(drain_filter(&scratch, false), PodVerdict::Refuse(_)));
        assert_eq!(drain_filter(&scratch, true), PodVerdict::Evict);
        let bare = pod(json!({"metadata": {"name": "b"}, "status": {"phase": "Running"}}));
        assert!(matches!(drain_filter(&bare, false), PodVerdict::Refuse(_)));
        let done = pod(json!({"metadata": {"name": "d"}, "status": {"phase": "Succeeded"}}));
        assert_eq!(drain_filter(&done, false), PodVerdict::Evict);
    }
}
