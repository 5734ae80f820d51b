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
//! * one pass (the splitter walks each job as it finds it and keeps only the wanted members'
//!   bytes, stepping over the rest 64 bytes at a time with SSE2 bit masks; the parser threads
//!   read the values with serde), load average 3.1–3.5: parse 382 ms–1.11 s (medians 397 and
//!   653 ms), parse + apply 390–662 ms (medians 395 and 623 ms); about 0.6–0.75 CPU-s.
//! * now: the values read by hand where slurmrestd's shapes are known (`quick.rs`, serde for
//!   anything else); each job seen through 64-byte windows of masks computed once (AVX-512BW or
//!   AVX2 picked at run time, the walk compiled for each); the splitter walks a job only while a
//!   batch waits for a parser thread, else the parser thread walks it (`stream::Policy`). Three
//!   runs with the load average falling from 3.2 to 2.2 (other builds): parse fastest 226, 252,
//!   300 ms (medians 254, 270, 304 ms), parse + apply fastest 248, 204, 268 ms (medians 260, 261,
//!   283 ms). The first sample of a run is the cold one (0.7–1.3 s: fresh threads and pages).
//!   With one core taken by other builds (load 3.2–3.6, slightly earlier code) parse + apply
//!   was 400–480 ms. CPU time of a parse + apply in a fresh process (`slurm_parse_rss --file
//!   BODY --in-memory`, BODY built the same way and saved): 0.52–0.66 CPU-s, against 0.87–0.95
//!   for the one-pass code in the same session (back to back, five runs each).
//! * memory: 85–87 MB added over the body (in memory), 90–91 MB peak in all when streamed (the
//!   body is never held): < 200 MB.

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

#[divan::bench(sample_count = 10)]
fn parse_100k_jobs(b: Bencher) {
    let body = &*BODY;
    b.bench(|| parse::jobs(ApiVersion::V0042, body).expect("parse").data.jobs.len());
}

#[divan::bench(sample_count = 10)]
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
