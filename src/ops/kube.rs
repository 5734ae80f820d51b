//! Kubernetes as an executor: cordon/uncordon (patch `spec.unschedulable` with who and why as
//! annotations), drain with kubectl's semantics (cordon, then evict every pod on the node
//! through `policy/v1` Eviction, honouring PodDisruptionBudgets by retrying on 429, skipping
//! DaemonSet and mirror pods, refusing pods with `emptyDir` data or without a controller),
//! resume (= uncordon) and cancel (delete the job's owning object). Each action also records
//! a Kubernetes Event on the node. What the identity may do is asked beforehand with
//! SelfSubjectAccessReview; a refusal disables the action with the server's reason.

use super::{ActionKind, BoxFuture, Executor};
use crate::backend::kube::slim::MIRROR_ANNOTATION;
use crate::backend::kube::{Connection, KubeConfig, Shared};
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use std::time::{Duration, Instant};

pub struct KubeExecutor {
    shared: Shared,
    cfg: KubeConfig,
    elevated: bool,
    /// Between eviction retries while a PodDisruptionBudget says no (kubectl: 5 s), and between
    /// checks that an evicted pod is gone (kubectl: 1 s).
    pub evict_retry: Duration,
    pub poll: Duration,
    launcher: Option<std::sync::Arc<crate::acceptance::kube::KubeLauncher>>,
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
    pub fn with_acceptance(mut self, template: crate::acceptance::Template, namespace: String) -> Self {
        self.launcher = Some(std::sync::Arc::new(crate::acceptance::kube::KubeLauncher::new(
            self.shared.clone(),
            template,
            namespace,
        )));
        self
    }

    fn conn(&self) -> Result<Connection, String> {
        self.shared.connection().ok_or_else(|| "not connected to the Kubernetes API".to_string())
    }

    fn client(&self, conn: &Connection) -> kube::Client {
        match (&conn.elevated, self.elevated) {
            (Some(c), true) => c.clone(),
            _ => conn.client.clone(),
        }
    }

    fn checks(kind: ActionKind) -> &'static [&'static str] {
        match kind {
            ActionKind::Cordon | ActionKind::Uncordon | ActionKind::Resume => &["patch nodes"],
            ActionKind::Drain => &["patch nodes", "list pods", "evict pods"],
            ActionKind::Cancel => &["delete jobs"],
            ActionKind::Acceptance(_) => &["create jobs"],
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

fn api_err(e: kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} ({} {})", s.message, s.code, s.reason),
        other => other.to_string(),
    }
}

fn code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

impl Executor for KubeExecutor {
    fn backend(&self) -> &str {
        "kube"
    }

    fn identity(&self) -> Option<String> {
        let c = self.shared.connection()?;
        let how = match (&self.cfg.break_glass_user, self.elevated) {
            (Some(u), true) => format!(" as {u} (break-glass impersonation)"),
            _ => String::new(),
        };
        Some(format!("kube:{}@{}{how}", c.user, c.context))
    }

    fn elevate(&mut self, on: bool) {
        self.elevated = on && self.cfg.break_glass_user.is_some();
    }

    fn notes(&mut self, to: Option<super::StepNotes>) {
        self.notes = to;
    }

    fn launcher(&self) -> Option<std::sync::Arc<dyn crate::acceptance::launch::Launcher>> {
        self.launcher.clone().map(|l| l as std::sync::Arc<dyn crate::acceptance::launch::Launcher>)
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
                self.cfg.drain_timeout.as_secs()
            ),
            ActionKind::Acceptance(_) => format!("acceptance test on {target}"),
            ActionKind::Cancel => match target.parse().ok().and_then(|id| self.shared.owner(id)) {
                Some((ns, kind, name)) => format!("DELETE {kind} {ns}/{name} (propagationPolicy=Background)"),
                None => format!("DELETE the owner of job {target}"),
            },
        }
    }

    fn supports(&self, kind: ActionKind) -> Result<(), String> {
        if let ActionKind::Acceptance(mode) = kind {
            let l = self.launcher.as_ref().ok_or("no acceptance template configured")?;
            if mode != crate::acceptance::Mode::PerNode {
                return Err("runs across nodes need MPI between the pods (the MPI Operator's MPIJob); \
                            use per-node mode on Kubernetes"
                    .into());
            }
            if l.template_image().is_none() {
                return Err(
                    "set [acceptance] image: a container image with nccl-tests' all_reduce_perf".into()
                );
            }
        }
        let c = self.conn()?;
        if c.readonly {
            return Err(format!("context {} is read-only in the configuration", c.context));
        }
        // Under break-glass the elevated identity is checked by the server when it writes.
        if self.elevated {
            return Ok(());
        }
        for check in Self::checks(kind) {
            self.shared.permission(check)?;
        }
        Ok(())
    }

    fn execute<'a>(
        &'a mut self,
        kind: ActionKind,
        target: &'a str,
        reason: &'a str,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            self.supports(kind)?;
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
                ActionKind::Acceptance(_) => Err("acceptance jobs are submitted by the launcher".into()),
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
) -> Result<(), String> {
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
    nodes.patch(node, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ()).map_err(api_err)
}

/// Records what was done on the node as an `events.k8s.io/v1` Event in `default` (where
/// node events live), so `kubectl describe node` shows it.
pub async fn record_event(
    client: &kube::Client,
    node: &str,
    kind: ActionKind,
    note: &str,
) -> Result<(), String> {
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
    events.create(&PostParams::default(), &ev).await.map(|_| ()).map_err(api_err)
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
    ) -> Result<String, String> {
        cordon(client, node, true, reason, who).await?;
        let pods: Api<Pod> = Api::all(client.clone());
        let mut all = Vec::new();
        let mut lp = ListParams::default().fields(&format!("spec.nodeName={node}")).limit(500);
        loop {
            let page = pods.list(&lp).await.map_err(|e| format!("list pods on {node}: {}", api_err(e)))?;
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
            return Err(format!("{node} is cordoned but not drained: {}", refused.join("; ")));
        }
        self.note(node, &format!("cordoned; evicting {} pod(s), skipping {}", evict.len(), skipped.len()));
        let deadline = Instant::now() + self.cfg.drain_timeout;
        let results =
            futures::future::join_all(evict.iter().map(|p| self.evict(client, node, p, deadline))).await;
        let mut done = Vec::new();
        let mut failed = Vec::new();
        let mut waited = 0;
        for (p, r) in evict.iter().zip(results) {
            let name = pod_name(p);
            match r {
                Ok(tries) => {
                    waited += tries;
                    done.push(name);
                }
                Err(e) => failed.push(format!("{name}: {e}")),
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
        if failed.is_empty() { Ok(msg) } else { Err(format!("{msg}; NOT evicted: {}", failed.join("; "))) }
    }

    /// Evicts one pod, retrying while a PodDisruptionBudget refuses (429), then waits until it
    /// is gone. Returns how many times a budget said no.
    async fn evict(
        &self,
        client: &kube::Client,
        node: &str,
        p: &Pod,
        deadline: Instant,
    ) -> Result<u32, String> {
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
    ) -> Result<u32, String> {
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
                .map_err(|e| e.to_string())?;
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
                        return Err(format!(
                            "a PodDisruptionBudget still refuses after {}s: {}",
                            self.cfg.drain_timeout.as_secs(),
                            api_err(e)
                        ));
                    }
                    tokio::time::sleep(self.evict_retry).await;
                }
                Err(e) => return Err(api_err(e)),
            }
        }
        loop {
            match api.get_opt(name).await {
                Ok(None) => return Ok(refusals),
                Ok(Some(now)) if now.metadata.uid != uid => return Ok(refusals),
                Ok(Some(_)) | Err(_) if Instant::now() > deadline => {
                    return Err("evicted, but still terminating at the drain timeout".into());
                }
                _ => tokio::time::sleep(self.poll).await,
            }
        }
    }

    async fn cancel(&self, client: &kube::Client, target: &str) -> Result<String, String> {
        let id: u64 = target.parse().map_err(|_| format!("{target:?} is not a job id"))?;
        let (ns, kind, name) =
            self.shared.owner(id).ok_or_else(|| format!("job {target} is not known here"))?;
        let ar = owner_resource(&kind).ok_or_else(|| {
            format!("{kind} {ns}/{name} is not a batch job; gpuplane will not delete it (scale or delete it with kubectl)")
        })?;
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &ar);
        api.delete(&name, &DeleteParams::background()).await.map_err(api_err)?;
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
