//! Time and memory of parsing and applying a large Slurm job list (the v0.0.42 body of
//! `benches/slurm_parse.rs`): wall and CPU time, and the peak resident memory it adds.
//!
//! `cargo run --release --example slurm_parse_rss -- [JOBS] [--pretty] [--stream] [--file BODY.json [--in-memory]] [--repeat N] [--save PATH]`
//!
//! Without `--stream` the body is in memory (as in the bench) and the figure is the memory
//! added on top of it. With `--stream` the body is read from a file in 64 KiB chunks, as from the
//! network, and is never held: the figure is everything the parse and the state add. `--pretty`
//! builds the body indented as slurmrestd writes it (the bench's body is compact); `--save PATH`
//! only writes the body built to PATH (for `--file`). `--file`
//! streams a body saved earlier (a real `jobs` answer, say) instead of building one; with
//! `--in-memory` that file is read whole first and parsed as the bench parses (quick to start,
//! for profilers). `--repeat N` parses and applies the in-memory body N times more after the
//! first and prints the fastest and median of those (the memory figure stays the first run's).

#[path = "../benches/support/slurm_body.rs"]
mod slurm_body;

use gpuplane::backend::slurm::{ApiVersion, parse};
use gpuplane::model::protocol::{Inventory, Update};
use gpuplane::state::ClusterState;
use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn cpu_s() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// Minor page faults of the process so far.
fn faults() -> i64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    u.ru_minflt
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(100_000);
    let given = args.iter().position(|a| a == "--file").and_then(|i| args.get(i + 1)).map(PathBuf::from);
    let in_memory = given.is_some() && args.iter().any(|a| a == "--in-memory");
    let stream = !in_memory && (given.is_some() || args.iter().any(|a| a == "--stream"));
    let build = if args.iter().any(|a| a == "--pretty") {
        slurm_body::jobs_body_pretty
    } else {
        slurm_body::jobs_body
    };
    if let Some(path) = args.iter().position(|a| a == "--save").and_then(|i| args.get(i + 1)) {
        std::fs::write(path, build(n)).expect("write body");
        return;
    }
    let own = std::env::temp_dir().join(format!("gpuplane-jobs-{}.json", std::process::id()));
    let file = given.clone().unwrap_or(own);
    let body = if in_memory {
        std::fs::read(&file).expect("read body")
    } else if given.is_some() {
        Vec::new()
    } else if stream {
        let body = build(n);
        std::fs::write(&file, &body).expect("write body");
        drop(body);
        Vec::new()
    } else {
        build(n)
    };
    // Give back what building the body freed, then start the peak from here.
    unsafe { libc::malloc_trim(0) };
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let base = status_kib("VmRSS:");
    let (t0, c0, f0) = (Instant::now(), cpu_s(), faults());
    let parsed = if stream {
        let mut f = std::fs::File::open(&file).expect("open body");
        let chunks = std::iter::from_fn(move || {
            let mut buf = vec![0u8; 64 << 10];
            let k = f.read(&mut buf).ok().filter(|k| *k > 0)?;
            buf.truncate(k);
            Some(bytes::Bytes::from(buf))
        });
        parse::jobs_streamed(ApiVersion::V0042, chunks)
    } else {
        parse::jobs(ApiVersion::V0042, &body)
    }
    .expect("parse")
    .data;
    let (t1, c1) = (Instant::now(), cpu_s());
    let jobs = parsed.jobs.len();
    let mut s = ClusterState::new(Default::default(), Default::default());
    let inv = Inventory { source: "slurm".into(), jobs: Some(parsed.jobs), ..Default::default() };
    s.apply(Update::Inventory { at: 1_795_960_100, inventory: Box::new(inv) });
    let (t2, c2, f2) = (Instant::now(), cpu_s(), faults());
    let peak = status_kib("VmHWM:");
    if given.is_none() {
        let _ = std::fs::remove_file(&file);
    }
    println!(
        "{jobs} jobs{}: parse {:.0} ms ({:.0} ms CPU), parse + apply {:.0} ms ({:.0} ms CPU); \
         RSS before {:.0} MB, peak {:.0} MB, added {:.0} MB (state holds {} jobs); {} page faults",
        if stream { ", streamed from a file" } else { ", body in memory" },
        (t1 - t0).as_secs_f64() * 1e3,
        (c1 - c0) * 1e3,
        (t2 - t0).as_secs_f64() * 1e3,
        (c2 - c0) * 1e3,
        base as f64 / 1024.0,
        peak as f64 / 1024.0,
        peak.saturating_sub(base) as f64 / 1024.0,
        s.jobs.len(),
        f2 - f0,
    );
    let repeat: usize = args
        .iter()
        .position(|a| a == "--repeat")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if repeat > 0 && !stream {
        drop(s);
        let (mut both, mut apply) = (Vec::new(), Vec::new());
        for _ in 0..repeat {
            let t = Instant::now();
            let jobs = parse::jobs(ApiVersion::V0042, &body).expect("parse").data.jobs;
            let ta = Instant::now();
            let mut s = ClusterState::new(Default::default(), Default::default());
            let inv = Inventory { source: "slurm".into(), jobs: Some(jobs), ..Default::default() };
            s.apply(Update::Inventory { at: 1_795_960_100, inventory: Box::new(inv) });
            both.push(t.elapsed().as_secs_f64() * 1e3);
            apply.push(ta.elapsed().as_secs_f64() * 1e3);
        }
        let spread = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            format!(
                "fastest {:.0} ms, median {:.0} ms, slowest {:.0} ms",
                v[0],
                v[v.len() / 2],
                v[v.len() - 1]
            )
        };
        println!("{repeat} more: parse + apply {}; apply alone {}", spread(&mut both), spread(&mut apply));
    }
}
