//! Parsing and applying a slurmrestd job list at scale: 100,000 jobs in the v0.0.42 shape
//! (full recorded 24.11 job records: 90 % pending, 10 % running, as in a deep queue; id, name,
//! partition and priority varied).
//! Run: `cargo bench --bench slurm_parse`.

use divan::Bencher;
use gpuplane::backend::slurm::{ApiVersion, parse};
use gpuplane::backend::{Inventory, Update};
use gpuplane::state::ClusterState;
use std::sync::LazyLock;

const JOBS: usize = 100_000;

/// A `GET /slurm/v0.0.42/jobs/` body with `JOBS` jobs, built from the recorded answer.
static BODY: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/slurm/v0.0.42/24_jobs.json");
    let text = std::fs::read_to_string(path).expect("fixture");
    let mut doc: serde_json::Value = serde_json::from_str(&text).expect("fixture JSON");
    let all = doc["jobs"].as_array().cloned().unwrap_or_default();
    let is = |j: &serde_json::Value, s: &str| j["job_state"][0] == s;
    let pending: Vec<_> = all.iter().filter(|j| is(j, "PENDING")).cloned().collect();
    let running: Vec<_> = all.iter().filter(|j| is(j, "RUNNING")).cloned().collect();
    let jobs: Vec<serde_json::Value> = (0..JOBS)
        .map(|i| {
            let mut j = if i % 10 == 0 {
                running[i % running.len()].clone()
            } else {
                pending[i % pending.len()].clone()
            };
            j["job_id"] = (i as u64 + 1).into();
            j["name"] = format!("job-{i}").into();
            j["priority"]["number"] = ((i * 7919) % 10_000).into();
            j["partition"] = if i % 3 == 0 { "infer" } else { "train" }.into();
            j
        })
        .collect();
    doc["jobs"] = jobs.into();
    serde_json::to_vec(&doc).expect("serialise")
});

fn main() {
    eprintln!("v0.0.42 jobs body: {} jobs, {:.1} MB", JOBS, BODY.len() as f64 / 1e6);
    divan::main();
}

#[divan::bench(sample_count = 3)]
fn parse_100k_jobs(b: Bencher) {
    let body = &*BODY;
    b.bench(|| parse::jobs(ApiVersion::V0042, body).expect("parse").data.jobs.len());
}

#[divan::bench(sample_count = 3)]
fn parse_and_apply_100k_jobs(b: Bencher) {
    let body = &*BODY;
    b.with_inputs(|| ClusterState::new(Default::default(), Default::default())).bench_local_values(
        |mut s| {
            let out = parse::jobs(ApiVersion::V0042, body).expect("parse").data;
            let inv = Inventory { source: "slurm".into(), jobs: Some(out.jobs), ..Default::default() };
            s.apply(Update::Inventory { at: 1_795_960_100, inventory: Box::new(inv) });
            s
        },
    );
}
