//! Fills a usage ledger with a month of a 1,000-GPU cluster and measures it: insert rate,
//! file size and the 30-day window read (docs/performance.md).
//!
//! `cargo run --release --example ledger_fill -- [JOBS] [GPUS] [DAYS] [DIR] [START]`
//! (defaults 100000 1000 30, a temporary directory and a fixed start in 2027). Run under `/usr/bin/time -v` for the
//! peak memory.

use gpuplane::store::ledger::{self, Ledger};
use gpuplane::store::{CapacitySample, GpuInterval, JobRecord, Observation};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, d: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let (jobs, gpus, days) = (arg(0, 100_000), arg(1, 1_000), arg(2, 30) as i64);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = args.get(3).map_or_else(|| tmp.path().to_path_buf(), std::path::PathBuf::from);
    let path = ledger::path_for(&dir, "bench");
    let _ = std::fs::remove_file(&path);
    let mut l = Ledger::open(&path).expect("open");
    // START (epoch seconds, 5th argument): when the month begins; `now - DAYS` makes a ledger
    // that `gpuplane report cost` reads as the last DAYS days.
    let t0: i64 = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(1_800_000_000);
    let span = days * 86_400;
    let nodes = gpus.div_ceil(8);
    let mut rng = fastrand::Rng::with_seed(7);
    // One observation a minute, as the console writes: the jobs that ended in that minute,
    // their GPU-intervals, and the capacity sample.
    let per_min = (jobs as f64 / (span / 60) as f64).max(0.0);
    let mut acc = 0.0;
    let mut next_id = 1u64;
    let (mut n_jobs, mut n_iv, mut n_cap) = (0u64, 0u64, 0u64);
    let started = Instant::now();
    let mut batch = Vec::new();
    for m in 0..span / 60 {
        let at = t0 + m * 60;
        let mut o = Observation { cluster: "bench".into(), at, ..Default::default() };
        acc += per_min;
        while acc >= 1.0 && next_id <= jobs {
            acc -= 1.0;
            let id = next_id;
            next_id += 1;
            let g = [1u32, 2, 4, 8][rng.usize(0..4)];
            let run = rng.i64(1_800..12_600);
            let node = format!("gpu-{:04}", rng.u64(0..nodes));
            let first = rng.u8(0..(9 - g as u8));
            let util = rng.f64() * 100.0;
            o.jobs.push(JobRecord {
                id,
                name: format!("train-{}", id % 977),
                user: format!("user{}", id % 53),
                account: format!("team-{}", id % 11),
                queue: "gpu".into(),
                state: if id.is_multiple_of(9) { "FAILED" } else { "COMPLETED" }.into(),
                submit: at - run - 300,
                start: Some(at - run),
                end: Some(at),
                gpus: g,
                gpu_model: Some("NVIDIA H100 80GB HBM3".into()),
                nodes: vec![node.clone()],
                exit_reason: None,
                gpu_seconds: f64::from(g) * run as f64,
                useful_gpu_seconds: f64::from(g) * run as f64 * util / 100.0,
                mean_util: None,
                time_limit: None,
                first_seen: at - run,
                last_seen: at,
            });
            for k in 0..g as u8 {
                o.intervals.push(GpuInterval {
                    job: id,
                    node: node.clone(),
                    gpu: Some(first + k),
                    gpus: 1,
                    start: at - run,
                    end: at,
                    util: Some(util as f32),
                });
            }
        }
        let alloc = (gpus as u32 * 7) / 10;
        o.capacity.push(CapacitySample {
            at,
            step_s: 60,
            model: "NVIDIA H100 80GB HBM3".into(),
            allocated: alloc,
            unallocated: gpus as u32 - alloc - 24,
            drained: 16,
            down: 8,
            maintenance: 0,
        });
        n_jobs += o.jobs.len() as u64;
        n_iv += o.intervals.len() as u64;
        n_cap += o.capacity.len() as u64;
        batch.push(o);
        // The writer thread commits what is queued together; an hour at a time here.
        if batch.len() == 60 {
            l.record(&batch).expect("record");
            batch.clear();
        }
    }
    l.record(&batch).expect("record");
    let write_s = started.elapsed().as_secs_f64();
    drop(l);
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let l = Ledger::open(&path).expect("reopen");
    let t = Instant::now();
    let w = l.window(t0 + span - 30 * 86_400, t0 + span).expect("window");
    let read_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut st = gpuplane::testing::state_after(gpuplane::testing::SimConfig::default(), 0);
    st.now = t0 + span;
    st.jobs.clear();
    let t = Instant::now();
    let r = gpuplane::cost::report_ledger(&st, 30 * 86_400, &w);
    let report_ms = t.elapsed().as_secs_f64() * 1e3;
    let wal = path.with_extension("sqlite-wal");
    println!(
        "jobs {n_jobs}, gpu-intervals {n_iv}, capacity samples {n_cap}: written in {write_s:.2} s \
         ({:.0} jobs/s, {:.0} rows/s)",
        n_jobs as f64 / write_s,
        (n_jobs + n_iv + n_cap) as f64 / write_s
    );
    println!(
        "file {:.1} MiB (+ WAL {:.1} MiB) at {}",
        size(&path) as f64 / 1_048_576.0,
        size(&wal) as f64 / 1_048_576.0,
        path.display()
    );
    println!(
        "30-day window: {} jobs read in {read_ms:.0} ms; report built in {report_ms:.0} ms (total {:.0}, {} teams)",
        w.jobs.len(),
        r.total,
        r.teams.len()
    );
}
