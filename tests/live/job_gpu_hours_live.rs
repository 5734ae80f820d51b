//! One job's GPU-hours on every surface (issue 30, finding 3), against the real Slurm 24.11
//! with slurmdbd (scripts/test starts it and exports GPUPLANE_TEST_SLURM24_*): a console that
//! looks at the cluster while a 4-GPU job runs, a command (`get cost`) that writes its own
//! look into the same ledger, and a restarted console that first sees the job after it ended.
//! `report job`, `get cost` and the Cost view's report then say GPUs × run time, the run time
//! from `sacct` (ElapsedRaw), and nothing booked as allocated-idle that nothing measured.
//!
//! Behind the `live` feature (`cargo test --features live`, as scripts/test runs it).

use crate::common;
use crate::slurm_support;

use gpuplane::cost::track::Tracker;
use gpuplane::state::ClusterState;
use gpuplane::store::{Ledger, ledger};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The node this test's job runs on: no other live test names it.
const NODE: &str = "h100-10";
const GPUS: u32 = 4;

fn submit(c: &slurm_support::Cluster, secs: u32) -> u64 {
    let gres = format!("--gres=gpu:{GPUS}");
    let wrap = format!("sleep {secs}");
    let out = c.cli(&[
        "sbatch",
        "--parsable",
        "-D",
        "/tmp",
        "-o",
        "/dev/null",
        "-e",
        "/dev/null",
        "-p",
        "train",
        "-w",
        NODE,
        "-N",
        "1",
        &gres,
        "--priority=3000",
        "-t",
        "5",
        "-J",
        "gpu-hours",
        "--wrap",
        &wrap,
    ]);
    out.trim().split(';').next().unwrap_or("").parse().unwrap_or_else(|e| panic!("sbatch said {out:?}: {e}"))
}

fn sacct(c: &slurm_support::Cluster, id: u64, field: &str) -> String {
    let out = c.cli(&["sacct", "-n", "-X", "-P", "-j", &id.to_string(), "-o", field]);
    out.lines().next().unwrap_or("").trim().to_string()
}

/// A console's look: refreshes its state and writes what its tracker sees.
async fn look(
    p: &mut gpuplane::backend::slurm::Poller,
    s: &mut ClusterState,
    t: &mut Tracker,
    dir: &std::path::Path,
) {
    slurm_support::refresh_into(p, s).await.expect("refresh");
    let mut l = Ledger::open(&ledger::path_for(dir, &t.ledger_name(s))).expect("ledger");
    if let Some(o) = t.observe(s) {
        l.record(&[o]).expect("record");
    }
}

struct Cli {
    home: tempfile::TempDir,
    config: std::path::PathBuf,
    url: String,
    jwt: String,
}

impl Cli {
    fn new(c: &slurm_support::Cluster, ledger_dir: &std::path::Path) -> Cli {
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join("config.toml");
        std::fs::write(&config, format!("[ledger]\ndir = {:?}\n", ledger_dir.display().to_string())).unwrap();
        Cli { home, config, url: c.url.clone(), jwt: c.jwt.clone() }
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = common::gpuplane_cmd(self.home.path())
            .args(["--config", self.config.to_str().unwrap(), "--slurm", &self.url])
            .args(args)
            .args(["-o", "json"])
            .env("SLURM_JWT", &self.jwt)
            .output()
            .expect("run gpuplane");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{args:?}: {}{stdout}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stdout}"))
    }

    /// The job's row of `get cost`.
    fn cost_row(&self, id: u64) -> Value {
        let v = self.json(&["get", "cost"]);
        let rows = v.as_array().cloned().unwrap_or_default();
        rows.into_iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("job {id} in get cost: {v}"))
    }
}

/// Equal up to the 4 decimals JSON prints: a second of one GPU is 0.00028 GPU-h.
fn close(got: f64, want: f64, what: &str) {
    assert!((got - want).abs() <= 0.6e-4, "{what}: {got} GPU-h, want {want} (sacct)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_a_command_and_a_restart_agree_on_a_jobs_gpu_hours() {
    let (c, _guard) = slurm_support::slurm24().await;
    let dir = tempfile::tempdir().unwrap();
    let ledger_dir = dir.path().join("ledger");
    let cli = Cli::new(&c, &ledger_dir);
    let id = submit(&c, 30);
    let t0 = Instant::now();
    while c.cli(&["squeue", "-h", "-j", &id.to_string(), "-o", "%T"]).trim() != "RUNNING" {
        assert!(t0.elapsed() < Duration::from_secs(90), "job {id} did not start");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // A job that started this second has held nothing yet (no cost row): let it run a while.
    tokio::time::sleep(Duration::from_secs(3)).await;
    // The console looks twice while it runs; the command writes its own look in between.
    let mut p = c.poller();
    let mut s = ClusterState::new(Default::default(), Default::default());
    let mut console = Tracker::default();
    look(&mut p, &mut s, &mut console, &ledger_dir).await;
    let running = cli.cost_row(id);
    assert!(running["gpu_hours"].as_f64().unwrap() > 0.0, "{running}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    look(&mut p, &mut s, &mut console, &ledger_dir).await;
    // It ends; slurmdbd records it; the console's next look comes well after the end.
    let t0 = Instant::now();
    loop {
        let st = sacct(&c, id, "State");
        if st.starts_with("COMPLETED") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "sacct says {st:?}");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    tokio::time::sleep(Duration::from_secs(15)).await;
    look(&mut p, &mut s, &mut console, &ledger_dir).await;
    // A restarted console: a new state and tracker, first seeing the job ended.
    let mut p2 = c.poller();
    let mut s2 = ClusterState::new(Default::default(), Default::default());
    let mut restarted = Tracker::default();
    look(&mut p2, &mut s2, &mut restarted, &ledger_dir).await;

    let elapsed: f64 = sacct(&c, id, "ElapsedRaw").parse().expect("ElapsedRaw");
    let want = f64::from(GPUS) * elapsed / 3600.0;
    let job = cli.json(&["report", "job", &id.to_string()]);
    close(job["gpu_hours"].as_f64().expect("gpu_hours"), want, "report job");
    let per_gpu = job["per_gpu"].as_array().expect("per_gpu");
    let held: f64 = per_gpu.iter().map(|g| g["gpu_hours"].as_f64().unwrap()).sum();
    // Each GPU's figure is rounded to 4 decimals on its own: the sum may be off by up to half a
    // unit of the last decimal per entry (4 GPUs × 30 s: 4 × 0.0083 = 0.0332 against 0.0333).
    let tol = per_gpu.len() as f64 * 0.5e-4 + 1e-9;
    assert!((held - want).abs() <= tol, "report job's GPUs: {held} GPU-h, want {want} (sacct) ± {tol}");
    // Slurm alone measures no utilisation: not 0 %.
    assert!(job["util"].is_null(), "not measured: {}", job["util"]);
    let row = cli.cost_row(id);
    close(row["gpu_hours"].as_f64().unwrap(), want, "get cost");
    assert!(row["useful_pct"].is_null() && row["idle_cost"].as_f64() == Some(0.0), "{row}");
    // The Cost view's report: the restarted console's state joined with the ledger.
    let l = Ledger::open(&ledger::path_for(&ledger_dir, &restarted.ledger_name(&s2))).unwrap();
    let w = l.window(s2.now - 86_400, s2.now).unwrap();
    let view = gpuplane::cost::report_ledger(&s2, 86_400, &w);
    let vj = view.jobs.iter().find(|j| j.id == id).expect("the job in the Cost view");
    close(vj.gpu_hours, want, "the Cost view");
    // Nothing measured any job of this cluster: nothing is booked as allocated-idle.
    let from = jiff::Timestamp::from_second(s2.now - 86_400).unwrap().to_string();
    let bill = cli.json(&["report", "cost", "--from", &from]);
    assert_eq!(bill["gpu_hours"]["allocated_idle"].as_f64(), Some(0.0), "{}", bill["gpu_hours"]);
    assert!(bill["gpu_hours"]["unmeasured"].as_f64().unwrap() >= want, "{}", bill["gpu_hours"]);
}
