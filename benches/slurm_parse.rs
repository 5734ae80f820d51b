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

#[path = "support/slurm_body.rs"]
mod slurm_body;

/// A `GET /slurm/v0.0.42/jobs/` body with `JOBS` jobs.
static BODY: LazyLock<Vec<u8>> = LazyLock::new(|| slurm_body::jobs_body(JOBS));

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
