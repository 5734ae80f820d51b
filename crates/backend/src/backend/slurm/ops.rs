//! Writes, as backend operations for the `ops` layer: drain a node with a reason, resume it,
//! cancel a job, submit a batch job. Each speaks the negotiated version's request shape.

use super::client::{ApiVersion, Client};
use super::error::SlurmError;
use super::wire::{ApiError, Num};
use crate::model::JobId;
use serde::Deserialize;
use serde_json::{Value, json};

/// A batch job to submit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubmitSpec {
    pub name: String,
    pub partition: Option<String>,
    pub script: String,
    pub nodes: u32,
    /// GPUs per node (`gres/gpu:N`), optionally of a type.
    pub gpus_per_node: u32,
    pub gpu_type: Option<String>,
    pub tasks: u32,
    pub time_limit_min: Option<u32>,
    /// Working directory on the cluster (required by slurmctld).
    pub cwd: String,
    /// `KEY=value` pairs; slurmrestd needs at least one.
    pub env: Vec<(String, String)>,
    pub comment: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    pub hold: bool,
    pub priority: Option<u32>,
    /// Exactly these nodes (`--nodelist`); `nodes` should equal their count.
    pub required_nodes: Vec<String>,
    /// Tasks per node (`--ntasks-per-node`).
    pub tasks_per_node: u32,
    /// The batch script's stdout file on the cluster (`%j` = job id), and stderr with it.
    pub standard_output: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WriteResp {
    errors: Vec<ApiError>,
    job_id: Num,
}

/// What REST v0.0.38 cannot do, said once: the refusal before a plan and the executor's
/// failure both use it.
pub const NO_NODE_UPDATE: &str = "this slurmrestd speaks REST v0.0.38 (Slurm 22.05/23.02), which has no node \
     update: gpuplane cannot drain or resume nodes here (nothing was sent)";

/// The `scontrol` line that does over Slurm's own tools what REST v0.0.38 cannot: drain `nodes`
/// with `reason` (`Some`), or resume them (`None`). Names and reason are quoted for a POSIX
/// shell, with control characters removed, so the line can be pasted as it is.
pub fn scontrol_update(nodes: &[&str], reason: Option<&str>) -> String {
    let quote = |s: &str| {
        let s = crate::sanitize::sanitize(s).into_owned();
        // Without control characters there is no NUL, the one thing that cannot be quoted.
        shlex::try_quote(&s).map(|q| q.into_owned()).unwrap_or_else(|_| "''".into())
    };
    let names = quote(&nodes.join(","));
    match reason {
        Some(r) => format!("scontrol update nodename={names} state=drain reason={}", quote(r)),
        None => format!("scontrol update nodename={names} state=resume"),
    }
}

/// Why a write needs a person: phrased for the operator, with the line to run instead.
pub fn drain_unsupported(node: &str, reason: Option<&str>) -> SlurmError {
    SlurmError::Unsupported(format!(
        "{NO_NODE_UPDATE}; on a host with Slurm's tools run: {}",
        scontrol_update(&[node], reason)
    ))
}

/// Whether a `scontrol` that can reach the cluster exists locally (the v0.0.38 fallback is
/// offered only then).
pub async fn scontrol_available() -> bool {
    let run = tokio::process::Command::new("scontrol")
        .arg("ping")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .status();
    matches!(tokio::time::timeout(std::time::Duration::from_secs(5), run).await, Ok(Ok(s)) if s.success())
}

fn check_name(what: &str, name: &str) -> Result<(), SlurmError> {
    let ok = !name.is_empty()
        && name.len() <= 256
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(SlurmError::Config(format!("invalid {what} name {:?}", crate::sanitize::sanitize(name))))
    }
}

impl Client {
    async fn write(
        &mut self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<WriteResp, SlurmError> {
        let a = self.send(method, path, &[], body).await?;
        let parsed: Option<WriteResp> = serde_json::from_slice(&a.body).ok();
        // Slurm 22.05 answers a held submission (`hold: true`) with HTTP 500 and error 2042
        // "Job is in held state" although the job was created.
        if let Some(r) = &parsed
            && r.job_id.get().is_some_and(|id| id > 0)
            && !r.errors.is_empty()
            && r.errors.iter().all(|e| e.number() == Some(2042))
        {
            return Ok(WriteResp { errors: Vec::new(), job_id: r.job_id });
        }
        if !(200..300).contains(&a.status) {
            return Err(self.error_of(path, &a));
        }
        let r = parsed.ok_or_else(|| SlurmError::Malformed {
            endpoint: path.to_string(),
            detail: format!(
                "not JSON: {}",
                crate::sanitize::sanitize(
                    &String::from_utf8_lossy(&a.body).chars().take(100).collect::<String>()
                )
            ),
        })?;
        if !r.errors.is_empty() {
            let mut a = a;
            a.status = 500;
            return Err(self.error_of(path, &a));
        }
        Ok(r)
    }

    /// Drains a node: no new work; running jobs finish. A reason is required (scontrol insists
    /// on one; REST does not, gpuplane does).
    pub async fn drain(
        &mut self,
        node: &str,
        reason: &str,
        reason_user: Option<&str>,
    ) -> Result<(), SlurmError> {
        check_name("node", node)?;
        if reason.trim().is_empty() {
            return Err(SlurmError::Config("a reason is required to drain a node".into()));
        }
        let v = self.version().await?;
        if v.is_legacy() {
            return Err(drain_unsupported(node, Some(reason)));
        }
        let mut body = json!({"state": ["DRAIN"], "reason": reason});
        if let Some(u) = reason_user {
            body["reason_uid"] = json!(u);
        }
        self.write(reqwest::Method::POST, &v.ctld(&format!("node/{node}")), Some(&body)).await.map(drop)
    }

    /// Returns a drained or down node to service.
    pub async fn resume(&mut self, node: &str) -> Result<(), SlurmError> {
        check_name("node", node)?;
        let v = self.version().await?;
        if v.is_legacy() {
            return Err(drain_unsupported(node, None));
        }
        let body = json!({"state": ["RESUME"]});
        self.write(reqwest::Method::POST, &v.ctld(&format!("node/{node}")), Some(&body)).await.map(drop)
    }

    /// Cancels a job (SIGKILL to every step, as `scancel` does).
    pub async fn cancel(&mut self, job: JobId) -> Result<(), SlurmError> {
        let v = self.version().await?;
        self.write(reqwest::Method::DELETE, &v.ctld(&format!("job/{job}")), None).await.map(drop)
    }

    /// One job as the model sees it (`None` when slurmctld no longer knows it).
    pub async fn job(&mut self, id: JobId) -> Result<Option<crate::model::Job>, SlurmError> {
        let v = self.version().await?;
        let Some(body) = self.get(&v.ctld(&format!("job/{id}")), &[]).await? else { return Ok(None) };
        let out = super::parse::jobs(v, &body)?;
        Ok(out.data.jobs.into_iter().find(|j| j.id == id))
    }

    /// Submits a batch job; returns its id.
    pub async fn submit(&mut self, spec: &SubmitSpec) -> Result<JobId, SlurmError> {
        for n in &spec.required_nodes {
            check_name("node", n)?;
        }
        let v = self.version().await?;
        let body = submit_body(v, spec);
        let path = v.ctld("job/submit");
        let r = self.write(reqwest::Method::POST, &path, Some(&body)).await?;
        r.job_id
            .get()
            .filter(|id| *id > 0)
            .map(|id| id as JobId)
            .ok_or_else(|| SlurmError::Malformed { endpoint: path, detail: "no job_id in the answer".into() })
    }
}

/// The submit body in the version's shape (see the reference: v0.0.38 takes `environment` as a
/// map, `nodes` as an integer, `gres` and minutes; v0.0.40+ an array of `KEY=value`, a string
/// node count, `tres_per_node` and `{set, infinite, number}` numbers, with the script inside
/// `job`).
pub fn submit_body(v: ApiVersion, s: &SubmitSpec) -> Value {
    let gres = (s.gpus_per_node > 0).then(|| match &s.gpu_type {
        Some(t) => format!("gpu:{t}:{}", s.gpus_per_node),
        None => format!("gpu:{}", s.gpus_per_node),
    });
    let mut job = json!({
        "name": s.name,
        "current_working_directory": s.cwd,
    });
    let put = |job: &mut Value, k: &str, val: Value| {
        job[k] = val;
    };
    if let Some(p) = &s.partition {
        put(&mut job, "partition", json!(p));
    }
    if let Some(c) = &s.comment {
        put(&mut job, "comment", json!(c));
    }
    if let Some(a) = &s.account {
        put(&mut job, "account", json!(a));
    }
    if let Some(q) = &s.qos {
        put(&mut job, "qos", json!(q));
    }
    if s.tasks > 0 {
        put(&mut job, "tasks", json!(s.tasks));
    }
    if s.tasks_per_node > 0 {
        put(&mut job, "tasks_per_node", json!(s.tasks_per_node));
    }
    if let Some(o) = &s.standard_output {
        put(&mut job, "standard_output", json!(o));
        put(&mut job, "standard_error", json!(o));
    }
    // `--nodelist`: a list of names in every version (v0.0.40+ `csv_string`; v0.0.38 reads the
    // same field though its schema does not list it; the acceptance tracker checks placement).
    if !s.required_nodes.is_empty() {
        put(&mut job, "required_nodes", json!(s.required_nodes));
    }
    let nodes = s.nodes.max(1);
    if v.is_legacy() {
        let env: serde_json::Map<String, Value> =
            s.env.iter().map(|(k, val)| (k.clone(), json!(val))).collect();
        put(&mut job, "environment", Value::Object(env));
        put(&mut job, "nodes", json!(nodes));
        if let Some(g) = gres {
            put(&mut job, "gres", json!(g));
        }
        if let Some(t) = s.time_limit_min {
            put(&mut job, "time_limit", json!(t));
        }
        if s.hold {
            put(&mut job, "hold", json!(true));
        }
        if let Some(p) = s.priority {
            put(&mut job, "priority", json!(p));
        }
        json!({"job": job, "script": s.script})
    } else {
        let env: Vec<String> = s.env.iter().map(|(k, val)| format!("{k}={val}")).collect();
        put(&mut job, "environment", json!(env));
        put(&mut job, "nodes", json!(nodes.to_string()));
        if let Some(g) = gres {
            put(&mut job, "tres_per_node", json!(format!("gres/{g}")));
        }
        if let Some(t) = s.time_limit_min {
            put(&mut job, "time_limit", json!({"set": true, "infinite": false, "number": t}));
        }
        if s.hold {
            put(&mut job, "hold", json!(true));
        }
        if let Some(p) = s.priority {
            put(&mut job, "priority", json!({"set": true, "infinite": false, "number": p}));
        }
        put(&mut job, "script", json!(s.script));
        json!({"job": job})
    }
}

#[cfg(test)]
mod submit_tests {
    use super::*;

    fn spec() -> SubmitSpec {
        SubmitSpec {
            name: "acc".into(),
            script: "#!/bin/sh\nsrun x\n".into(),
            nodes: 2,
            gpus_per_node: 8,
            tasks_per_node: 8,
            required_nodes: vec!["h100-01".into(), "h100-02".into()],
            standard_output: Some("/tmp/acc-%j.out".into()),
            time_limit_min: Some(15),
            cwd: "/tmp".into(),
            env: vec![("NCCL_DEBUG".into(), "WARN".into())],
            ..Default::default()
        }
    }

    #[test]
    fn nodelist_and_output_in_both_shapes() {
        let new = submit_body(ApiVersion::V0041, &spec());
        let j = &new["job"];
        assert_eq!(j["required_nodes"], json!(["h100-01", "h100-02"]));
        assert_eq!(j["nodes"], json!("2"));
        assert_eq!(j["tasks_per_node"], json!(8));
        assert_eq!(j["tres_per_node"], json!("gres/gpu:8"));
        assert_eq!(j["standard_output"], json!("/tmp/acc-%j.out"));
        assert_eq!(j["environment"], json!(["NCCL_DEBUG=WARN"]));
        let old = submit_body(ApiVersion::V0038, &spec());
        assert_eq!(old["job"]["required_nodes"], json!(["h100-01", "h100-02"]));
        assert_eq!(old["job"]["nodes"], json!(2));
        assert_eq!(old["job"]["gres"], json!("gpu:8"));
        assert_eq!(old["job"]["environment"], json!({"NCCL_DEBUG": "WARN"}));
        assert_eq!(old["script"], json!("#!/bin/sh\nsrun x\n"));
        // Without a node list nothing is pinned.
        let free = submit_body(ApiVersion::V0041, &SubmitSpec { required_nodes: vec![], ..spec() });
        assert!(free["job"].get("required_nodes").is_none());
    }

    #[test]
    fn the_scontrol_line_quotes_the_reason_for_the_shell() {
        let reason = "it's $(rm -rf /) \u{1b}[31mred\nnext [INC-7]";
        let line = scontrol_update(&["gpu-001", "gpu-002"], Some(reason));
        // What a shell makes of the line: the words scontrol gets.
        let words = shlex::split(&line).unwrap();
        assert_eq!(
            words,
            [
                "scontrol",
                "update",
                "nodename=gpu-001,gpu-002",
                "state=drain",
                "reason=it's $(rm -rf /) red next [INC-7]"
            ]
        );
        let words = shlex::split(&scontrol_update(&["gpu-001"], None)).unwrap();
        assert_eq!(words, ["scontrol", "update", "nodename=gpu-001", "state=resume"]);
    }
}
