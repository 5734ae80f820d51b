//! Time and peak memory of decoding and applying a large Slurm job list with each decoder of
//! `benches/json_crates.rs`, one decoder per process (for `/usr/bin/time -v`).
//!
//! `cargo run --release --example json_crates_rss -- --file BODY --decoder today|serde_json|serde_json_reader|sonic_rs|simd_json [--stream]`
//!
//! BODY is a saved body (`cargo run --release --example slurm_parse_rss -- 100000 --save BODY`).
//! Without `--stream` the file is read whole first and the figure is the memory added on top of
//! it; with `--stream` the body is read from the file as it is parsed, as from the network, and
//! never held whole (today's decoder in 64 KiB chunks; `serde_json_reader` through a 64 KiB
//! `BufReader`); the figure is then everything the parse and the state add. The crates that
//! cannot parse a stream (`serde_json` from a slice, `sonic_rs`, `simd_json`: sonic-rs's and
//! simd-json's `from_reader` read the whole body into a buffer first) take the in-memory path.

#[path = "../benches/support/json_decode.rs"]
mod json_decode;

use gpuplane::backend::slurm::{ApiVersion, JobsOut, parse};
use gpuplane::model::protocol::{Inventory, Update};
use gpuplane::state::ClusterState;
use std::io::Read;
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
    // SAFETY: a zeroed rusage is valid, and getrusage fills it.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let file = arg("--file").expect("--file BODY");
    let decoder = arg("--decoder").unwrap_or_else(|| "today".into());
    let stream =
        args.iter().any(|a| a == "--stream") && matches!(decoder.as_str(), "today" | "serde_json_reader");
    let mut body = if stream { Vec::new() } else { std::fs::read(&file).expect("read body") };
    // Start the peak from here.
    unsafe { libc::malloc_trim(0) };
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let base = status_kib("VmRSS:");
    let (t0, c0) = (Instant::now(), cpu_s());
    let out: JobsOut = match (decoder.as_str(), stream) {
        ("today", true) => {
            let mut f = std::fs::File::open(&file).expect("open body");
            let chunks = std::iter::from_fn(move || {
                let mut buf = vec![0u8; 64 << 10];
                let k = f.read(&mut buf).ok().filter(|k| *k > 0)?;
                buf.truncate(k);
                Some(bytes::Bytes::from(buf))
            });
            parse::jobs_streamed(ApiVersion::V0042, chunks).expect("parse").data
        }
        ("today", false) => parse::jobs(ApiVersion::V0042, &body).expect("parse").data,
        ("serde_json_reader", true) => {
            let f = std::fs::File::open(&file).expect("open body");
            json_decode::slurm_serde_json_reader(std::io::BufReader::with_capacity(64 << 10, f)).out
        }
        ("serde_json_reader", false) => json_decode::slurm_serde_json_reader(&body[..]).out,
        ("serde_json", _) => json_decode::slurm_serde_json(&body).out,
        ("sonic_rs", _) => json_decode::slurm_sonic_rs(&body).out,
        ("simd_json", _) => json_decode::slurm_simd_json(&mut body).out,
        (other, _) => panic!("unknown decoder {other}"),
    };
    let (t1, c1) = (Instant::now(), cpu_s());
    let jobs = out.jobs.len();
    let mut s = ClusterState::new(Default::default(), Default::default());
    let inv = Inventory { source: "slurm".into(), jobs: Some(out.jobs), ..Default::default() };
    s.apply(Update::Inventory { at: 1_795_960_100, inventory: Box::new(inv) });
    let (t2, c2) = (Instant::now(), cpu_s());
    let peak = status_kib("VmHWM:");
    println!(
        "{decoder}{}: {jobs} jobs; parse {:.0} ms ({:.0} ms CPU), parse + apply {:.0} ms ({:.0} ms CPU); \
         RSS before {:.0} MB, peak {:.0} MB, added {:.0} MB",
        if stream { ", streamed from the file" } else { ", body in memory" },
        (t1 - t0).as_secs_f64() * 1e3,
        (c1 - c0) * 1e3,
        (t2 - t0).as_secs_f64() * 1e3,
        (c2 - c0) * 1e3,
        base as f64 / 1024.0,
        peak as f64 / 1024.0,
        peak.saturating_sub(base) as f64 / 1024.0,
    );
    drop(body);
}
