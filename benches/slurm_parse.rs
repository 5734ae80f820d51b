//! Parsing and applying a slurmrestd job list at scale: 100,000 jobs in the v0.0.42 shape
//! (486 MB; full recorded 24.11 job records: 90 % pending, 10 % running, as in a deep queue; id,
//! name, partition and priority varied; built by `support/slurm_body.rs`).
//! Run: `cargo bench --bench slurm_parse`; memory and CPU time of the same work:
//! `cargo run --release --example slurm_parse_rss -- 100000 [--stream] [--repeat N] [--pretty]`.
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
//! * fifth session: the bench's own body building was found in its first sample. The body used
//!   to be built as one `serde_json::Value` of 100,000 jobs; freeing it left millions of small
//!   chunks, and the allocator's clean-up landed in the first parse (a first sample of 630–850 ms
//!   where later ones took ~200 ms; 327 ms once the freed memory was trimmed). The body is now
//!   written job by job (byte-identical), and 10 samples are taken, not 3 (the 3-sample medians
//!   above include that first sample). Batches now grow with the list (256 KiB to 4 MiB): back to
//!   back, five runs each of 10 parses + applies, 5.54 against 6.16 user CPU-s. Three runs of
//!   this bench afterwards on an idle machine: parse medians 179, 189, 185 ms (fastest 167–179,
//!   slowest 233–278 ms); parse + apply medians 214, 197, 212 ms (fastest 187–201, slowest
//!   226–298 ms). The same binary's medians swing between ~200 and ~300 ms from one minute to
//!   the next on this VM, so compare builds back to back, by CPU time.
//! * a first parse in a fresh process (`slurm_parse_rss --file BODY --in-memory`, clean heap):
//!   parse + apply 269–316 ms, 0.43–0.56 CPU-s, ~25,000 page faults (fresh memory for the
//!   records and the state). The body indented as slurmrestd writes it (`--pretty`, 891 MB,
//!   1.8 × the bytes) takes 1.2–1.3 × as long: medians 306–355 ms against 250–272 ms for the
//!   compact body, back to back (`--repeat 10`).
//! * memory: 85–87 MB added over the body (in memory), 92–96 MB peak in all when streamed (the
//!   body is never held): < 200 MB.

use divan::Bencher;
use gpuplane::backend::slurm::{ApiVersion, parse};
use gpuplane::model::protocol::{Inventory, Update};
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
