//! Failure causes against the real Slurm 24.11 with slurmdbd (scripts/test starts it and
//! exports GPUPLANE_TEST_SLURM24_*): a job that runs into its time limit and a job a person
//! cancels are read back through gpuplane's Slurm backend and land under `timeout` and
//! `user-cancel` in the Cost report — `sacct`'s own state for each is asked beside.
//!
//! Behind the `live` feature (`cargo test --features live`, as scripts/test runs it).

use crate::slurm_support;

use gpuplane::cost::cause::{Cause, classify};
use std::time::{Duration, Instant};

/// Submits a 1-GPU job on `train` ahead of the pending workload; its id.
fn submit(c: &slurm_support::Cluster, name: &str, limit_min: &str) -> u64 {
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
        "-N",
        "1",
        "--gres=gpu:1",
        "--priority=2000",
        "-t",
        limit_min,
        "-J",
        name,
        "--wrap",
        "sleep 900",
    ]);
    out.trim().split(';').next().unwrap_or("").parse().unwrap_or_else(|e| panic!("sbatch said {out:?}: {e}"))
}

/// `sacct`'s state word for a job (`TIMEOUT`, `CANCELLED`).
fn sacct_state(c: &slurm_support::Cluster, id: u64) -> String {
    let out = c.cli(&["sacct", "-n", "-X", "-P", "-j", &id.to_string(), "-o", "State"]);
    out.lines().next().unwrap_or("").split_whitespace().next().unwrap_or("").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_and_a_cancelled_job_land_under_their_causes() {
    let (c, _guard) = slurm_support::slurm24().await;
    let timeout = submit(&c, "cause-timeout", "1");
    let cancel = submit(&c, "cause-cancel", "30");
    // Cancel the second once it runs (it must have held its GPU to burn GPU-hours).
    let t0 = Instant::now();
    loop {
        let st = c.cli(&["squeue", "-h", "-j", &cancel.to_string(), "-o", "%T"]);
        if st.trim() == "RUNNING" {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "job {cancel} did not start: {st:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    c.cli(&["scancel", &cancel.to_string()]);
    // The time limit is a minute; slurmctld notices within its check interval.
    let t0 = Instant::now();
    loop {
        let (a, b) = (sacct_state(&c, timeout), sacct_state(&c, cancel));
        if a == "TIMEOUT" && b.starts_with("CANCELLED") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(240), "sacct: {timeout} {a:?}, {cancel} {b:?}");
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    // Read back through the backend until both are finished there too.
    let t0 = Instant::now();
    let s = loop {
        let s = slurm_support::read(&c).await;
        let done = |id| s.jobs.iter().any(|j| j.id == id && !j.state.is_active());
        if done(timeout) && done(cancel) {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "the backend still sees them active");
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    let job = |id| s.jobs.iter().find(|j| j.id == id).expect("job read");
    assert_eq!(classify(job(timeout).state, job(timeout).exit_reason.as_deref()), Some(Cause::Timeout));
    assert_eq!(classify(job(cancel).state, job(cancel).exit_reason.as_deref()), Some(Cause::UserCancel));
    // In the Cost report: each under its cause, the timeout in the failed part, the cancel not.
    let r = gpuplane::cost::report(&s, 86_400);
    let b = &r.bill;
    let of = |c: Cause| b.causes.iter().find(|x| x.cause == c).expect("every cause has a row");
    assert!(of(Cause::Timeout).jobs >= 1 && of(Cause::Timeout).gpu_hours > 0.0, "{:?}", b.causes);
    assert!(of(Cause::UserCancel).jobs >= 1 && of(Cause::UserCancel).gpu_hours > 0.0, "{:?}", b.causes);
    assert!(of(Cause::Timeout).failed && !of(Cause::UserCancel).failed);
    let failed: f64 = b.causes.iter().filter(|x| x.failed).map(|x| x.cost).sum();
    assert!(
        (failed - b.parts.failed).abs() < 1e-9 * b.parts.failed.max(1.0),
        "{failed} vs {}",
        b.parts.failed
    );
    // The timed-out job held its GPU about a minute: its GPU-hours are sacct's elapsed.
    let elapsed: i64 = c
        .cli(&["sacct", "-n", "-X", "-P", "-j", &timeout.to_string(), "-o", "ElapsedRaw"])
        .trim()
        .parse()
        .expect("ElapsedRaw");
    let held = r.jobs.iter().find(|j| j.id == timeout).expect("the timed-out job is in the report");
    assert!(
        (held.gpu_hours * 3600.0 - elapsed as f64).abs() < 1e-6,
        "{} vs {elapsed}",
        held.gpu_hours * 3600.0
    );
    if let Some(x) = b.burners.iter().find(|x| x.id == timeout) {
        assert_eq!(x.cause, Cause::Timeout);
    }
}
