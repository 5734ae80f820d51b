//! Today's hand-written JSON scanners against JSON crates, side by side in one run on the same
//! bodies (issue 16, item 6): `serde_json` (from a slice, and from a reader as a streamed body
//! would be read), `sonic-rs` and `simd-json`, each through serde into typed structs that name only
//! the members gpuplane reads, borrowing strings where the crate can (`support/json_decode.rs`).
//!
//! * `slurm_100k_jobs`: the 486 MB v0.0.42 body of `slurm_parse.rs`, decoded into the model's
//!   jobs (`parse::jobs` today: the streaming splitter, the AVX2/AVX-512 walk and the parser
//!   threads); the records are made but not applied.
//! * `prom_startup_refresh`: the 22 answers of the start-up refresh of `prom_join.rs` (every query
//!   of the schedule, 41.7 MB, 10,000 nodes × 8 GPUs), read into `Results` (`api::parse`) and
//!   read series by series without keeping them (`api::for_each_series`, what a refresh joins
//!   from).
//!
//! Before measuring, every decoder's result is checked equal to today's (the same jobs, fields,
//! GPU allocations, QOS and `last_update`; the same labels and samples): the run stops otherwise.
//!
//! Run: `cargo bench --bench json_crates` (about 5 minutes; needs ~3 GB of memory: the body,
//! and simd-json's copy and tape). Peak memory per decoder:
//! `cargo run --release --example json_crates_rss -- --file BODY --decoder NAME [--stream]`.
//! Figures and the decision: `docs/json.md`.

use divan::Bencher;
use gpuplane::backend::prom::api;
use gpuplane::backend::prom::queries::schedule;
use gpuplane::backend::slurm::{ApiVersion, parse};
use std::sync::LazyLock;

#[path = "support/json_decode.rs"]
mod json_decode;
#[path = "support/prom_body.rs"]
mod prom_body;
#[path = "support/slurm_body.rs"]
mod slurm_body;

use json_decode as d;

const JOBS: usize = 100_000;

/// A `GET /slurm/v0.0.42/jobs/` body with `JOBS` jobs (as in `slurm_parse.rs`).
static BODY: LazyLock<Vec<u8>> = LazyLock::new(|| slurm_body::jobs_body(JOBS));

/// The answers of the start-up refresh: every query of the schedule.
static PROM: LazyLock<Vec<Vec<u8>>> =
    LazyLock::new(|| schedule(0).into_iter().map(prom_body::answer).collect());

fn main() {
    let prom_bytes: usize = PROM.iter().map(Vec::len).sum();
    eprintln!("v0.0.42 jobs body: {JOBS} jobs, {:.1} MB", BODY.len() as f64 / 1e6);
    eprintln!("start-up refresh: {} answers, {:.1} MB", PROM.len(), prom_bytes as f64 / 1e6);
    let jobs = d::check_slurm(&BODY);
    let series = d::check_prom(&PROM);
    eprintln!("checked: every decoder gives today's {jobs} jobs and {series} series");
    // Give back what the checks freed before the first sample.
    unsafe { libc::malloc_trim(0) };
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!("load average before: {}", load.trim());
    divan::main();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!("load average after: {}", load.trim());
}

mod slurm_100k_jobs {
    use super::*;

    #[divan::bench(sample_count = 10, sample_size = 1)]
    fn today(b: Bencher) {
        let body = &*BODY;
        b.bench(|| parse::jobs(ApiVersion::V0042, body).expect("parse").data.jobs.len());
    }

    #[divan::bench(sample_count = 10, sample_size = 1)]
    fn serde_json_from_slice(b: Bencher) {
        let body = &*BODY;
        b.bench(|| d::slurm_serde_json(body).out.jobs.len());
    }

    #[divan::bench(sample_count = 10, sample_size = 1)]
    fn serde_json_from_reader(b: Bencher) {
        let body = &*BODY;
        b.bench(|| {
            d::slurm_serde_json_reader(std::io::BufReader::with_capacity(64 << 10, &body[..])).out.jobs.len()
        });
    }

    #[divan::bench(sample_count = 10, sample_size = 1)]
    fn sonic_rs_from_slice(b: Bencher) {
        let body = &*BODY;
        b.bench(|| d::slurm_sonic_rs(body).out.jobs.len());
    }

    /// The copy simd-json rewrites is made before each sample, outside the time.
    #[divan::bench(sample_count = 10, sample_size = 1)]
    fn simd_json_from_slice(b: Bencher) {
        b.with_inputs(|| BODY.clone()).bench_local_refs(|body| d::slurm_simd_json(body).out.jobs.len());
    }
}

mod prom_startup_refresh {
    use super::*;

    #[divan::bench(sample_count = 30, sample_size = 1)]
    fn today_parse(b: Bencher) {
        b.bench(|| PROM.iter().map(|x| api::parse(x).expect("parse").results.len()).sum::<usize>());
    }

    #[divan::bench(sample_count = 30, sample_size = 1)]
    fn serde_json_parse(b: Bencher) {
        b.bench(|| PROM.iter().map(|x| d::prom_serde_json(x).len()).sum::<usize>());
    }

    #[divan::bench(sample_count = 30, sample_size = 1)]
    fn sonic_rs_parse(b: Bencher) {
        b.bench(|| PROM.iter().map(|x| d::prom_sonic_rs(x).len()).sum::<usize>());
    }

    #[divan::bench(sample_count = 30, sample_size = 1)]
    fn simd_json_parse(b: Bencher) {
        b.with_inputs(|| PROM.clone())
            .bench_local_refs(|bodies| bodies.iter_mut().map(|x| d::prom_simd_json(x).len()).sum::<usize>());
    }

    #[divan::bench(sample_count = 30, sample_size = 1)]
    fn today_for_each_series(b: Bencher) {
        b.bench(|| {
            let mut n = 0usize;
            for x in PROM.iter() {
                api::for_each_series(x, |l, p| n += l.len() + (p.v > 0.0) as usize).expect("scan");
            }
            n
        });
    }

    #[divan::bench(sample_count = 30, sample_size = 1)]
    fn serde_json_each(b: Bencher) {
        b.bench(|| {
            let mut n = 0usize;
            for x in PROM.iter() {
                d::prom_each_serde_json(x, |l, p| n += l.len() + (p.v > 0.0) as usize);
            }
            n
        });
    }

    #[divan::bench(sample_count = 30, sample_size = 1)]
    fn sonic_rs_each(b: Bencher) {
        b.bench(|| {
            let mut n = 0usize;
            for x in PROM.iter() {
                d::prom_each_sonic_rs(x, |l, p| n += l.len() + (p.v > 0.0) as usize);
            }
            n
        });
    }

    #[divan::bench(sample_count = 30, sample_size = 1)]
    fn simd_json_each(b: Bencher) {
        b.with_inputs(|| PROM.clone()).bench_local_refs(|bodies| {
            let mut n = 0usize;
            for x in bodies.iter_mut() {
                d::prom_each_simd_json(x, |l, p| n += l.len() + (p.v > 0.0) as usize);
            }
            n
        });
    }
}
