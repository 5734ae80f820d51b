//! Parsing and applying a slurmrestd job list at scale: 100,000 jobs in the v0.0.42 shape
//! (486 MB; full recorded 24.11 job records: 90 % pending, 10 % running, as in a deep queue; id,
//! name, partition and priority varied; built by `support/slurm_body.rs`).
//! Run: `cargo bench --bench slurm_parse`; memory and CPU time of the same work:
//! `cargo run --release --example slurm_parse_rss -- 100000 [--stream]`.
//!
//! Measured on the 2-core machine while other builds ran (load average 2.3–4):
//! * before (serde_json over the whole buffered body, one thread): parse 0.96–1.19 s,
//!   parse + apply 1.02–1.19 s;
//! * one pass, then two (the body split into jobs as it streams in, then each job walked again
//!   for the ~20 members gpuplane reads, on two parser threads): parse 0.78–1.08 s, parse +
//!   apply 0.84–1.15 s, about 1.15–1.4 CPU-s (every byte scanned twice).
//! * now (one pass: the splitter walks each job as it finds it and keeps only the wanted
//!   members' bytes, stepping over the rest 64 bytes at a time with SSE2 bit masks; the parser
//!   threads read only those values; `src/backend/slurm/scan.rs`), same machine, load average
//!   3.1–3.5 (another build running), two runs: parse 382 ms–1.11 s (medians 397 and 653 ms),
//!   parse + apply 390–662 ms (medians 395 and 623 ms); about 0.6–0.75 CPU-s (`slurm_parse_rss`: 0.62–0.74 s parse, wall ≈ CPU as
//!   the second core was busy). The splitter thread alone takes about 230 ms of it (was 330 ms
//!   for the split alone). The < 300 ms target is still missed: the rest is the parser threads'
//!   serde work and building the model records (~0.4 CPU-s), which two busy cores cannot hide.
//! * memory: 90–91 MB added over the body (in memory), 92 MB peak in all when streamed (the body
//!   is never held): < 200 MB.

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
