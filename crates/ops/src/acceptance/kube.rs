//! Kubernetes: the acceptance test as a `batch/v1` Job pinned to the node under test
//! (`spec.nodeName`, so a cordoned node under repair can be tested before it is uncordoned),
//! asking for the node's GPUs and tolerating the GPU taint; its pod's log is the output.
//!
//! One Job per node (per-node mode). Runs across nodes (pairs, all) need MPI between the pods —
//! the MPI Operator's MPIJob — and are refused here with that explanation.

use super::config::Template;
use super::launch::{AcceptanceJob, Launcher, Progress, Submitted};
use crate::backend::kube::{Shared, action_error};
use crate::model::ActionError;
use futures::future::BoxFuture;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams, PostParams};
use serde_json::json;

pub struct KubeLauncher {
    shared: Shared,
    template: Template,
    namespace: String,
}

impl KubeLauncher {
    pub fn new(shared: Shared, template: Template, namespace: String) -> Self {
        KubeLauncher { shared, template, namespace }
    }

    pub fn template_image(&self) -> Option<&str> {
        self.template.image.as_deref()
    }

    /// Where the Jobs are created.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn client(&self) -> Result<kube::Client, ActionError> {
        self.shared
            .connection()
            .map(|c| c.client)
            .ok_or_else(|| ActionError::unreachable("not connected to the Kubernetes API"))
    }

    /// Whether this job can run here, and why not.
    pub fn check(&self, job: &AcceptanceJob) -> Result<(), ActionError> {
        check(&self.template, job)
    }

    /// The Job for one node.
    pub fn manifest(&self, job: &AcceptanceJob) -> serde_json::Value {
        let node = job.nodes.first().cloned().unwrap_or_default();
        let env: Vec<serde_json::Value> =
            self.template.env.iter().map(|(k, v)| json!({"name": k, "value": v})).collect();
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "generateName": format!("gpuplane-acceptance-{}-", dns_label(&node)),
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/managed-by": "gpuplane", "gpuplane.io/acceptance": "true"},
                "annotations": {"gpuplane.io/nodes": job.target()},
            },
            "spec": {
                "backoffLimit": 0,
                "ttlSecondsAfterFinished": 86_400,
                "activeDeadlineSeconds": u64::from(self.template.time_limit_min.max(1)) * 60,
                "template": {
                    "metadata": {"labels": {"gpuplane.io/acceptance": "true"}},
                    "spec": {
                        "nodeName": node,
                        "restartPolicy": "Never",
                        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                        "containers": [{
                            "name": "nccl",
                            "image": self.template.image,
                            "command": ["sh", "-c", job.command],
                            "env": env,
                            "resources": {"limits": {"nvidia.com/gpu": job.gpus_per_node}},
                        }],
                    },
                },
            },
        })
    }

    async fn job_pods(&self, client: &kube::Client, name: &str) -> Result<Vec<Pod>, ActionError> {
        let pods: Api<Pod> = Api::namespaced(client.clone(), &self.namespace);
        let lp = ListParams::default().labels(&format!("job-name={name}"));
        Ok(pods.list(&lp).await.map_err(|e| action_error(e).context("list the job's pods"))?.items)
    }
}

/// Whether `job` can run on Kubernetes with template `t`, and why not.
pub fn check(t: &Template, job: &AcceptanceJob) -> Result<(), ActionError> {
    if t.image.is_none() {
        return Err(ActionError::unsupported(
            "set [acceptance] image: a container image with nccl-tests' all_reduce_perf",
        ));
    }
    if job.nodes.len() != 1 {
        return Err(ActionError::unsupported(format!(
            "a run across {} nodes needs MPI between the pods (the MPI Operator's MPIJob); \
             use per-node mode on Kubernetes",
            job.nodes.len()
        )));
    }
    Ok(())
}

/// The plan's line for a Kubernetes acceptance job: the Job `submit` creates in `namespace`.
pub fn describe(namespace: &str, t: &Template, job: &AcceptanceJob) -> String {
    match check(t, job) {
        Ok(()) => format!(
            "POST /apis/batch/v1/namespaces/{namespace}/jobs (nodeName={}, nvidia.com/gpu={}, image {}): {}",
            job.target(),
            job.gpus_per_node,
            t.image.as_deref().unwrap_or("-"),
            job.command
        ),
        Err(e) => format!("cannot run: {e}"),
    }
}

/// A node name as part of a DNS label (lower case, `[a-z0-9-]`, at most 30 characters).
fn dns_label(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
        .take(30)
        .collect();
    while out.ends_with('-') {
        out.pop();
    }
    out
}

fn split(id: &str) -> (&str, &str) {
    id.split_once('/').unwrap_or(("default", id))
}

impl Launcher for KubeLauncher {
    fn backend(&self) -> &str {
        "kube"
    }

    fn template(&self) -> &Template {
        &self.template
    }

    fn submit<'a>(&'a self, job: &'a AcceptanceJob) -> BoxFuture<'a, Result<Submitted, ActionError>> {
        Box::pin(async move {
            self.check(job)?;
            let client = self.client()?;
            let jobs: Api<Job> = Api::namespaced(client, &self.namespace);
            let manifest: Job = serde_json::from_value(self.manifest(job))
                .map_err(|e| ActionError::other(format!("the Job manifest: {e}")))?;
            let created = jobs
                .create(&PostParams::default(), &manifest)
                .await
                .map_err(|e| action_error(e).context("create the Job"))?;
            let name = created.metadata.name.unwrap_or_default();
            Ok(Submitted {
                job_id: format!("{}/{name}", self.namespace),
                output: None,
                submitted_at: jiff::Timestamp::now().as_second(),
            })
        })
    }

    fn poll<'a>(
        &'a self,
        _job: &'a AcceptanceJob,
        sub: &'a Submitted,
    ) -> BoxFuture<'a, Result<Progress, ActionError>> {
        Box::pin(async move {
            let client = self.client()?;
            let (ns, name) = split(&sub.job_id);
            let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
            let Some(j) = jobs.get_opt(name).await.map_err(|e| action_error(e).context("read the Job"))?
            else {
                return Ok(Progress::Ended { state: "UNKNOWN".into(), nodes: vec![] });
            };
            let pods = self.job_pods(&client, name).await?;
            let mut nodes: Vec<String> =
                pods.iter().filter_map(|p| p.spec.as_ref()?.node_name.clone()).collect();
            nodes.sort();
            nodes.dedup();
            let st = j.status.unwrap_or_default();
            let cond = |t: &str| st.conditions.iter().flatten().any(|c| c.type_ == t && c.status == "True");
            Ok(if cond("Complete") || st.succeeded.unwrap_or(0) > 0 {
                Progress::Ended { state: "COMPLETED".into(), nodes }
            } else if cond("Failed") || st.failed.unwrap_or(0) > 0 {
                Progress::Ended { state: "FAILED".into(), nodes }
            } else if pods
                .iter()
                .any(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            {
                Progress::Running { nodes }
            } else {
                let why = pods
                    .iter()
                    .flat_map(|p| p.status.iter().flat_map(|s| s.container_statuses.iter().flatten()))
                    .find_map(|c| c.state.as_ref()?.waiting.as_ref()?.reason.clone())
                    .unwrap_or_else(|| "pod starting".into());
                Progress::Waiting(why)
            })
        })
    }

    fn output<'a>(
        &'a self,
        _job: &'a AcceptanceJob,
        sub: &'a Submitted,
    ) -> BoxFuture<'a, Result<Vec<u8>, ActionError>> {
        Box::pin(async move {
            let client = self.client()?;
            let (ns, name) = split(&sub.job_id);
            let mut pods = self.job_pods(&client, name).await?;
            pods.sort_by_key(|p| p.metadata.creation_timestamp.as_ref().map(|t| t.0));
            let pod = pods
                .last()
                .and_then(|p| p.metadata.name.clone())
                .ok_or_else(|| ActionError::not_found(format!("a pod of the Job {ns}/{name} to read")))?;
            let api: Api<Pod> = Api::namespaced(client, ns);
            api.logs(&pod, &LogParams::default())
                .await
                .map(String::into_bytes)
                .map_err(|e| action_error(e).context(&format!("read the log of {ns}/{pod}")))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acceptance::Mode;

    fn job(nodes: &[&str]) -> AcceptanceJob {
        AcceptanceJob {
            mode: Mode::PerNode,
            nodes: nodes.iter().map(|s| s.to_string()).collect(),
            gpus_per_node: 8,
            command: "all_reduce_perf -b 8 -e 8G -f 2 -g 8".into(),
            gpu_model: None,
            driver: None,
            cuda: None,
        }
    }

    #[test]
    fn one_pinned_job_per_node_and_honest_refusals() {
        let t = Template { image: Some("ghcr.io/acme/nccl-tests:2.13".into()), ..Default::default() };
        let l = KubeLauncher::new(Shared::default(), t, "gpu-ops".into());
        let m = l.manifest(&job(&["GPU_Node.7"]));
        assert_eq!(m["spec"]["template"]["spec"]["nodeName"], "GPU_Node.7");
        assert_eq!(m["metadata"]["generateName"], "gpuplane-acceptance-gpu-node-7-");
        assert_eq!(
            m["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
            8
        );
        assert_eq!(m["metadata"]["namespace"], "gpu-ops");
        assert!(serde_json::from_value::<Job>(m).is_ok());
        assert!(l.check(&job(&["a", "b"])).unwrap_err().to_string().contains("MPIJob"));
        let l = KubeLauncher::new(Shared::default(), Template::default(), "x".into());
        assert!(l.check(&job(&["a"])).unwrap_err().to_string().contains("[acceptance] image"));
    }
}
