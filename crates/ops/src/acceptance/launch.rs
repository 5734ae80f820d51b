//! Launching acceptance jobs, tracking them, and turning what they printed into a judged
//! [`RunRecord`].
//!
//! A [`Launcher`] is the scheduler's side: submit a job pinned to exactly the nodes under test,
//! say how it is doing, and hand back its output. Slurm ([`SlurmLauncher`]: a batch job with
//! `required_nodes`, `srun` of the command, output read from the templated path) and the
//! simulator ([`SimLauncher`]) implement it. A Kubernetes launcher (a Job pinned to the nodes,
//! its pod log as the output) plugs in the same way: `submit` creates the Job, `poll` reads its
//! status and the pods' nodes, `output` reads the launcher pod's log.

use super::config::{JudgeConfig, Template};
use super::judge::judge;
use super::parse::parse;
use super::store::{Mode, RunRecord};
use crate::backend::slurm::{Client, ClientConfig, SubmitSpec};
use crate::model::ActionError;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One job of an acceptance run, as planned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcceptanceJob {
    pub mode: Mode,
    pub nodes: Vec<String>,
    pub gpus_per_node: u32,
    /// The command with its placeholders filled in.
    pub command: String,
    /// What the cluster said about the nodes when the run was planned.
    pub gpu_model: Option<String>,
    pub driver: Option<String>,
    pub cuda: Option<String>,
}

impl AcceptanceJob {
    /// The plan's and the audit log's name for it: the node list.
    pub fn target(&self) -> String {
        self.nodes.join(",")
    }
}

/// Splits the nodes into the jobs a mode runs.
pub fn group(mode: Mode, nodes: &[String]) -> Result<Vec<Vec<String>>, String> {
    let mut seen = std::collections::BTreeSet::new();
    if let Some(d) = nodes.iter().find(|n| !seen.insert(n.as_str())) {
        return Err(format!("node {d} is named twice"));
    }
    Ok(match mode {
        Mode::PerNode => nodes.iter().map(|n| vec![n.clone()]).collect(),
        Mode::Pairs => {
            if nodes.len() < 2 || !nodes.len().is_multiple_of(2) {
                return Err(format!("pairs needs an even number of nodes (got {})", nodes.len()));
            }
            nodes.chunks(2).map(<[String]>::to_vec).collect()
        }
        Mode::All => vec![nodes.to_vec()],
    })
}

/// A submitted job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submitted {
    pub job_id: String,
    /// Where the console reads the output (a file path; for Kubernetes, a pod).
    pub output: Option<String>,
    pub submitted_at: i64,
}

/// A job's state as the scheduler reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// Not started (`PENDING` and its reason).
    Waiting(String),
    Running {
        nodes: Vec<String>,
    },
    /// Ended (`COMPLETED`, `FAILED`, `TIMEOUT`, ...; `UNKNOWN` when the scheduler forgot it).
    Ended {
        state: String,
        nodes: Vec<String>,
    },
}

impl Progress {
    pub fn label(&self) -> String {
        match self {
            Progress::Waiting(why) => format!("PENDING ({why})"),
            Progress::Running { .. } => "RUNNING".into(),
            Progress::Ended { state, .. } => state.clone(),
        }
    }
}

/// The scheduler's side of an acceptance run: built once with the executor that owns it, and
/// used by the ops task only (the plan's text comes from the planner: [`describe_slurm`],
/// [`super::kube::describe`], [`describe_sim`]). Failures are typed like every other write's.
pub trait Launcher: Send + Sync {
    /// `slurm`, `sim`, `kube`.
    fn backend(&self) -> &str;
    fn template(&self) -> &Template;
    fn submit<'a>(&'a self, job: &'a AcceptanceJob) -> BoxFuture<'a, Result<Submitted, ActionError>>;
    fn poll<'a>(
        &'a self,
        job: &'a AcceptanceJob,
        sub: &'a Submitted,
    ) -> BoxFuture<'a, Result<Progress, ActionError>>;
    fn output<'a>(
        &'a self,
        job: &'a AcceptanceJob,
        sub: &'a Submitted,
    ) -> BoxFuture<'a, Result<Vec<u8>, ActionError>>;
}

/// What tracking a job found.
#[derive(Debug, Clone, PartialEq)]
pub struct Collected {
    pub state: Option<String>,
    pub nodes: Vec<String>,
    pub output: Result<Vec<u8>, String>,
    pub finished_at: Option<i64>,
}

/// Follows a job until it ends (or `wait` passes), then fetches its output. `progress` hears
/// every state change.
pub async fn track(
    l: &dyn Launcher,
    job: &AcceptanceJob,
    sub: &Submitted,
    wait: Duration,
    every: Duration,
    mut progress: impl FnMut(&Progress) + Send,
) -> Collected {
    let deadline = tokio::time::Instant::now() + wait;
    let mut last: Option<String> = None;
    let mut errors = 0;
    loop {
        match l.poll(job, sub).await {
            Ok(p) => {
                errors = 0;
                let label = p.label();
                if last.as_deref() != Some(label.as_str()) {
                    progress(&p);
                    last = Some(label);
                }
                if let Progress::Ended { state, nodes } = p {
                    let output = l.output(job, sub).await.map_err(|e| e.to_string());
                    return Collected {
                        state: Some(state),
                        nodes,
                        output,
                        finished_at: Some(jiff::Timestamp::now().as_second()),
                    };
                }
            }
            Err(e) => {
                errors += 1;
                if errors >= 5 {
                    return Collected {
                        state: None,
                        nodes: vec![],
                        output: Err(e.to_string()),
                        finished_at: None,
                    };
                }
            }
        }
        if tokio::time::Instant::now() + every > deadline {
            return Collected {
                state: last,
                nodes: vec![],
                output: Err(format!("gave up waiting after {}", humantime::format_duration(wait))),
                finished_at: None,
            };
        }
        tokio::time::sleep(every).await;
    }
}

/// Who launched a run and with what.
#[derive(Debug, Clone, Copy, Default)]
pub struct Origin<'a> {
    /// The audited operation.
    pub op_id: Option<&'a str>,
    pub backend: &'a str,
    pub image: Option<&'a str>,
    /// The fleet cluster it runs on (`None` outside a fleet).
    pub cluster: Option<&'a str>,
}

/// Parses, checks placement and judges: the record to store. `history`: the stored runs.
pub fn record(
    origin: Origin<'_>,
    job: &AcceptanceJob,
    sub: &Submitted,
    c: &Collected,
    history: &[RunRecord],
    cfg: &JudgeConfig,
) -> RunRecord {
    let mut error = None;
    let mut result = None;
    match &c.output {
        Ok(bytes) => match parse(bytes) {
            Ok(r) => result = Some(r),
            Err(e) => error = Some(e.to_string()),
        },
        Err(e) => error = Some(format!("output not collected: {}", crate::sanitize::sanitize(e))),
    }
    let mut want = job.nodes.clone();
    want.sort();
    let mut got = c.nodes.clone();
    got.sort();
    if !got.is_empty() && got != want {
        error =
            Some(format!("the job ran on {}, not on the nodes under test {}", got.join(","), want.join(",")));
    }
    let busbw = result.as_ref().and_then(|r| r.largest()).map(|x| x.1);
    let gpu_model =
        job.gpu_model.clone().or_else(|| result.as_ref()?.devices.first().map(|d| d.model.clone()));
    let mut rec = RunRecord {
        id: uuid::Uuid::new_v4().to_string(),
        op_id: origin.op_id.map(String::from),
        mode: job.mode,
        nodes: job.nodes.clone(),
        backend: origin.backend.into(),
        cluster: origin.cluster.map(String::from),
        job_id: Some(sub.job_id.clone()),
        job_state: c.state.clone(),
        gpus_per_node: job.gpus_per_node,
        gpu_model,
        driver: job.driver.clone(),
        cuda: job.cuda.clone(),
        nccl: result.as_ref().and_then(|r| r.nccl_version.clone()),
        image: origin.image.map(String::from),
        command: job.command.clone(),
        submitted_at: sub.submitted_at,
        finished_at: c.finished_at,
        output_path: sub.output.clone(),
        result,
        error,
        busbw,
        judgement: None,
    };
    rec.judgement = Some(judge(&rec, history, cfg));
    rec
}

/// Reads at most [`super::MAX_OUTPUT`] bytes of a file.
async fn read_file(path: &str) -> Result<Vec<u8>, ActionError> {
    use tokio::io::AsyncReadExt;
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => ActionError::not_found(format!("{path}: {e}")),
        std::io::ErrorKind::PermissionDenied => ActionError::forbidden(format!("{path}: {e}")),
        _ => ActionError::other(format!("{path}: {e}")),
    };
    let f = tokio::fs::File::open(path).await.map_err(io)?;
    let mut buf = Vec::new();
    f.take(super::MAX_OUTPUT).read_to_end(&mut buf).await.map_err(io)?;
    Ok(buf)
}

/// The plan's line for a Slurm acceptance job: the call `submit` makes.
pub fn describe_slurm(url: &str, t: &Template, job: &AcceptanceJob) -> String {
    format!(
        "POST {url}/slurm/<ver>/job/submit nodelist={} gpus/node={} time={}m: srun {}",
        job.target(),
        job.gpus_per_node,
        t.time_limit_min,
        job.command
    )
}

/// The plan's line for a simulated acceptance job.
pub fn describe_sim(job: &AcceptanceJob) -> String {
    format!("sim: run `{}` on {} ({} GPUs each)", job.command, job.target(), job.gpus_per_node)
}

/// Slurm: a batch job on exactly the nodes under test, `srun` of the command on each.
pub struct SlurmLauncher {
    client: tokio::sync::Mutex<Client>,
    template: Template,
}

impl SlurmLauncher {
    pub fn new(cfg: &ClientConfig, template: Template) -> Result<Self, String> {
        Ok(SlurmLauncher {
            client: tokio::sync::Mutex::new(Client::new(cfg).map_err(|e| e.to_string())?),
            template,
        })
    }

    /// The batch script.
    pub fn script(&self, job: &AcceptanceJob) -> String {
        let srun_args = if self.template.srun_args.trim().is_empty() {
            String::new()
        } else {
            format!(" {}", self.template.srun_args.trim())
        };
        format!(
            "#!/bin/bash\n# gpuplane acceptance ({}) on {}\nsrun --nodes={} --ntasks-per-node=1{srun_args} {}\n",
            job.mode.label(),
            job.target(),
            job.nodes.len(),
            job.command
        )
    }

    pub fn spec(&self, job: &AcceptanceJob) -> SubmitSpec {
        let t = &self.template;
        let mut env = vec![("PATH".to_string(), "/usr/local/bin:/usr/bin:/bin".to_string())];
        env.extend(t.env.iter().cloned());
        SubmitSpec {
            name: "gpuplane-acceptance".into(),
            partition: t.partition.clone(),
            script: self.script(job),
            nodes: job.nodes.len() as u32,
            gpus_per_node: job.gpus_per_node,
            tasks_per_node: 1,
            required_nodes: job.nodes.clone(),
            standard_output: Some(t.output_for("%j", "gpuplane-acceptance")),
            time_limit_min: Some(t.time_limit_min),
            cwd: t.cwd.clone(),
            env,
            comment: Some(format!("gpuplane acceptance {}", job.mode.label())),
            account: t.account.clone(),
            ..Default::default()
        }
    }
}

impl Launcher for SlurmLauncher {
    fn backend(&self) -> &str {
        "slurm"
    }

    fn template(&self) -> &Template {
        &self.template
    }

    fn submit<'a>(&'a self, job: &'a AcceptanceJob) -> BoxFuture<'a, Result<Submitted, ActionError>> {
        Box::pin(async move {
            let spec = self.spec(job);
            let id = self.client.lock().await.submit(&spec).await?;
            let id = id.to_string();
            Ok(Submitted {
                output: Some(self.template.read_output_for(&id, "gpuplane-acceptance")),
                job_id: id,
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
            let id = sub
                .job_id
                .parse()
                .map_err(|_| ActionError::other(format!("{:?} is not a Slurm job id", sub.job_id)))?;
            let j = self.client.lock().await.job(id).await?;
            let Some(j) = j else { return Ok(Progress::Ended { state: "UNKNOWN".into(), nodes: vec![] }) };
            let nodes = j.nodes.iter().map(|n| n.to_string()).collect();
            Ok(match j.state {
                crate::model::JobState::Pending => {
                    Progress::Waiting(j.pending_reason.as_deref().unwrap_or("queued").to_string())
                }
                crate::model::JobState::Running | crate::model::JobState::Completing => {
                    Progress::Running { nodes }
                }
                s => Progress::Ended { state: s.label().into(), nodes },
            })
        })
    }

    fn output<'a>(
        &'a self,
        _job: &'a AcceptanceJob,
        sub: &'a Submitted,
    ) -> BoxFuture<'a, Result<Vec<u8>, ActionError>> {
        Box::pin(async move {
            let path = sub.output.as_deref().ok_or(ActionError::other("no output path"))?;
            // slurmstepd may close the file a moment after the job is reported done.
            let mut last = ActionError::other(format!("{path}: not read"));
            for _ in 0..10 {
                match read_file(path).await {
                    Ok(b) if !b.is_empty() => return Ok(b),
                    Ok(_) => last = ActionError::other(format!("{path}: empty")),
                    Err(e) => last = e,
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(last)
        })
    }
}

/// The simulator: a job waits one poll, runs for one, then ends and prints a plausible
/// all_reduce sweep for its nodes, slower on a few of them, so the whole road (the states
/// included) can be tried without a cluster.
pub struct SimLauncher {
    template: Template,
    /// Polls seen per job id.
    polls: std::sync::Mutex<std::collections::HashMap<String, u32>>,
}

impl SimLauncher {
    pub fn new(template: Template) -> SimLauncher {
        SimLauncher { template, polls: Default::default() }
    }
}

static SIM_JOBS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A stable number in 0..1000 for a name.
fn name_hash(s: &str) -> u64 {
    s.bytes().fold(1469598103934665603u64, |h, b| (h ^ u64::from(b)).wrapping_mul(1099511628211)) % 1000
}

/// The busbw the simulator reports for a node set: ~470 GB/s for one node, ~440 for more;
/// one node in twelve is slow.
pub fn sim_busbw(nodes: &[String]) -> f64 {
    let base = if nodes.len() <= 1 { 470.0 } else { 440.0 };
    let mut f = 1.0;
    for n in nodes {
        let h = name_hash(n);
        f *= if h % 12 == 5 {
            0.62
        } else if h % 12 == 7 {
            0.83
        } else {
            1.0 - (h % 20) as f64 / 1000.0
        };
    }
    base * f
}

/// nccl-tests text for `nodes` × `gpus` with `peak` busbw at 8 GiB.
pub fn sim_output(nodes: &[String], gpus: u32, model: &str, peak: f64) -> String {
    let mut o = String::from(
        "# nccl-tests version 2.13.10 nccl-headers=22105 nccl-library=22105\n\
         # Collective test starting: all_reduce_perf\n\
         # nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n",
    );
    let ranks = nodes.len() as u32 * gpus;
    for (ni, n) in nodes.iter().enumerate() {
        for g in 0..gpus {
            let rank = ni as u32 * gpus + g;
            o.push_str(&format!(
                "#  Rank {rank:2} Group  0 Pid {:6} on {n:>10} device {g:2} [0000:{:02x}:00] {model}\n",
                1000 + ni,
                0x18 + g * 0x10
            ));
        }
    }
    o.push_str("#\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n");
    let factor = if ranks > 1 { 2.0 * f64::from(ranks - 1) / f64::from(ranks) } else { 1.0 };
    let mut sum = 0.0;
    let mut rows = 0;
    for p in 3..=33 {
        let size: u64 = 1 << p;
        // Latency-bound small sizes, bandwidth-bound large ones.
        let busbw = peak * (size as f64 / (size as f64 + 64.0 * 1024.0 * 1024.0)).max(0.0);
        let algbw = busbw / factor;
        let time = if algbw > 0.0 { size as f64 / (algbw * 1e3) + 20.0 } else { 20.0 };
        sum += 2.0 * busbw;
        rows += 2;
        o.push_str(&format!(
            "{size:>12}  {:>12}     float     sum      -1  {time:>7.1}  {algbw:>6.2}  {busbw:>6.2}      0  {time:>7.1}  {algbw:>6.2}  {busbw:>6.2}      0\n",
            size / 4
        ));
    }
    o.push_str(&format!(
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : {:.3}\n#\n# Collective test concluded: all_reduce_perf\n",
        sum / f64::from(rows)
    ));
    o
}

impl Launcher for SimLauncher {
    fn backend(&self) -> &str {
        "sim"
    }

    fn template(&self) -> &Template {
        &self.template
    }

    fn submit<'a>(&'a self, _job: &'a AcceptanceJob) -> BoxFuture<'a, Result<Submitted, ActionError>> {
        Box::pin(async move {
            let n = SIM_JOBS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(Submitted {
                job_id: format!("sim-{:x}-{n}", std::process::id()),
                output: None,
                submitted_at: jiff::Timestamp::now().as_second(),
            })
        })
    }

    fn poll<'a>(
        &'a self,
        job: &'a AcceptanceJob,
        sub: &'a Submitted,
    ) -> BoxFuture<'a, Result<Progress, ActionError>> {
        Box::pin(async move {
            let n = {
                let mut polls = self.polls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let n = polls.entry(sub.job_id.clone()).or_default();
                *n += 1;
                let seen = *n;
                if seen >= 3 {
                    polls.remove(&sub.job_id);
                }
                seen
            };
            Ok(match n {
                1 => Progress::Waiting("Resources".into()),
                2 => Progress::Running { nodes: job.nodes.clone() },
                _ => Progress::Ended { state: "COMPLETED".into(), nodes: job.nodes.clone() },
            })
        })
    }

    fn output<'a>(
        &'a self,
        job: &'a AcceptanceJob,
        _sub: &'a Submitted,
    ) -> BoxFuture<'a, Result<Vec<u8>, ActionError>> {
        Box::pin(async move {
            let model = job.gpu_model.as_deref().unwrap_or("NVIDIA H100 80GB HBM3");
            Ok(sim_output(&job.nodes, job.gpus_per_node.max(1), model, sim_busbw(&job.nodes)).into_bytes())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(nodes: &[&str]) -> AcceptanceJob {
        AcceptanceJob {
            mode: if nodes.len() == 1 { Mode::PerNode } else { Mode::All },
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            gpus_per_node: 8,
            command: "all_reduce_perf -b 8 -e 8G -f 2 -g 8".into(),
            gpu_model: Some("NVIDIA H100 80GB HBM3".into()),
            driver: Some("550.54.15".into()),
            cuda: Some("12.4".into()),
        }
    }

    #[test]
    fn modes_group_nodes_into_jobs() {
        let n: Vec<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
        assert_eq!(group(Mode::PerNode, &n).unwrap().len(), 4);
        assert_eq!(group(Mode::Pairs, &n).unwrap(), vec![vec!["a", "b"], vec!["c", "d"]]);
        assert_eq!(group(Mode::All, &n).unwrap(), vec![n.clone()]);
        assert!(group(Mode::Pairs, &n[..3]).unwrap_err().contains("even number"));
        let dup = vec!["a".to_string(), "a".to_string()];
        assert!(group(Mode::All, &dup).unwrap_err().contains("named twice"));
    }

    #[test]
    fn slurm_script_and_spec_pin_the_nodes() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let cfg = ClientConfig {
            url: "http://127.0.0.1:1".into(),
            user: None,
            token: crate::backend::slurm::TokenSource::Static("t".into()),
            ca_file: None,
            timeout: Duration::from_secs(1),
            version: None,
        };
        let l = SlurmLauncher::new(&cfg, Template { srun_args: "--mpi=pmix".into(), ..Template::default() })
            .unwrap();
        let j = job(&["h100-01", "h100-02"]);
        let s = l.spec(&j);
        assert_eq!(s.required_nodes, vec!["h100-01", "h100-02"]);
        assert_eq!((s.nodes, s.gpus_per_node, s.tasks_per_node), (2, 8, 1));
        assert_eq!(s.standard_output.as_deref(), Some("/tmp/gpuplane-acceptance-%j.out"));
        assert!(
            s.script.contains(
                "srun --nodes=2 --ntasks-per-node=1 --mpi=pmix all_reduce_perf -b 8 -e 8G -f 2 -g 8\n"
            ),
            "{}",
            s.script
        );
        assert!(s.env.contains(&("NCCL_DEBUG".into(), "WARN".into())));
        assert!(describe_slurm(&cfg.url, l.template(), &j).contains("nodelist=h100-01,h100-02 gpus/node=8"));
    }

    #[tokio::test]
    async fn sim_runs_parse_record_and_judge() {
        let l = SimLauncher::new(Template::default());
        let j = job(&["node001"]);
        let sub = l.submit(&j).await.unwrap();
        let mut seen = Vec::new();
        let c =
            track(&l, &j, &sub, Duration::from_secs(5), Duration::from_millis(1), |p| seen.push(p.label()))
                .await;
        assert_eq!(c.state.as_deref(), Some("COMPLETED"));
        assert_eq!(seen, ["PENDING (Resources)", "RUNNING", "COMPLETED"]);
        let r = record(
            Origin { op_id: Some("op"), backend: "sim", image: None, cluster: None },
            &j,
            &sub,
            &c,
            &[],
            &JudgeConfig::default(),
        );
        assert!(r.error.is_none(), "{:?}", r.error);
        let parsed = r.result.as_ref().unwrap();
        assert_eq!(parsed.devices.len(), 8);
        assert_eq!(parsed.hosts(), vec!["node001"]);
        let bw = r.busbw.unwrap();
        assert!((bw - sim_busbw(&j.nodes)).abs() < 0.1 * bw, "{bw}");
        assert_eq!(r.judgement.as_ref().unwrap().verdict, super::super::Verdict::Pass);
    }

    #[test]
    fn wrong_placement_and_missing_output_fail() {
        let j = job(&["a", "b"]);
        let sub = Submitted { job_id: "7".into(), output: Some("/x".into()), submitted_at: 1 };
        let out = sim_output(&j.nodes, 8, "NVIDIA H100 80GB HBM3", 400.0).into_bytes();
        let c = Collected {
            state: Some("COMPLETED".into()),
            nodes: vec!["a".into(), "c".into()],
            output: Ok(out),
            finished_at: Some(2),
        };
        let r = record(
            Origin { backend: "slurm", ..Origin::default() },
            &j,
            &sub,
            &c,
            &[],
            &JudgeConfig::default(),
        );
        assert_eq!(r.judgement.as_ref().unwrap().verdict, super::super::Verdict::Fail);
        assert!(r.error.as_deref().unwrap().contains("ran on a,c, not on the nodes under test a,b"));
        let c = Collected { output: Err("/x: No such file".into()), nodes: vec![], ..c };
        let r = record(
            Origin { backend: "slurm", ..Origin::default() },
            &j,
            &sub,
            &c,
            &[],
            &JudgeConfig::default(),
        );
        assert!(r.judgement.unwrap().why.contains("output not collected: /x: No such file"));
    }
}
