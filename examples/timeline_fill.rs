//! Fills an event journal with 30 days of a 1,000-node cluster's typical churn and measures it:
//! insert rate as the console writes (one transaction a minute), the same events again from a
//! second console (all deduplicated), file size, and a day's query (docs/performance.md).
//!
//! `cargo run --release --example timeline_fill -- [NODES] [DAYS] [EVENTS_PER_DAY] [FILE]`
//! (defaults 1000 30 3500 and a temporary file). The events end now (wall clock), so
//! `gpuplane timeline --since 24h` with `[timeline] path = FILE` reads the last day of them.
//!
//! The churn per day, scaled to the node count (per 1,000 nodes): 2,700 failed and 300
//! preempted jobs, 60 node state changes (drain, down, resume, with a reason and who), 30 XIDs,
//! 2 ECC errors, 40 port downs and recoveries, 8 flaps, 50 actions, 20 acks and 100 alert
//! firings and resolutions; EVENTS_PER_DAY scales all of them together.

use gpuplane::model::timeline::{Event, EventKind, SubjectKind};
use gpuplane::store::timeline::{Journal, Query};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, d: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let (nodes, days, per_day) = (arg(0, 1_000), arg(1, 30) as i64, arg(2, 3_500));
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = args.get(3).map_or_else(|| tmp.path().join("timeline.sqlite"), std::path::PathBuf::from);
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
    let end = jiff::Timestamp::now().as_second();
    let start = end - days * 86_400;
    // Weights of the kinds (per 1,000 nodes a day, summing to 3,310), scaled to `per_day`.
    let mix: [(EventKind, u64); 11] = [
        (EventKind::JobFailed, 2_700),
        (EventKind::JobPreempted, 300),
        (EventKind::NodeState, 60),
        (EventKind::Xid, 30),
        (EventKind::Ecc, 2),
        (EventKind::PortDown, 40),
        (EventKind::PortFlap, 8),
        (EventKind::Action, 50),
        (EventKind::Ack, 20),
        (EventKind::AlertFiring, 50),
        (EventKind::AlertResolved, 50),
    ];
    let total_w: u64 = mix.iter().map(|m| m.1).sum();
    let mut rng = fastrand::Rng::with_seed(11);
    let n = (per_day * nodes / 1_000) as i64 * days;
    let mut events: Vec<Event> = (0..n)
        .map(|i| {
            let at = start + rng.i64(0..days * 86_400);
            let mut w = rng.u64(0..total_w);
            let kind = mix
                .iter()
                .find(|(_, k)| {
                    let hit = w < *k;
                    w = w.saturating_sub(*k);
                    hit
                })
                .map_or(EventKind::JobFailed, |m| m.0);
            let node = format!("gpu-{:04}", rng.u64(0..nodes));
            let job = 1_000_000 + i as u64;
            let (sk, subject, what, who, jobf, team, dedupe) = match kind {
                EventKind::JobFailed | EventKind::JobPreempted => (
                    SubjectKind::Job,
                    job.to_string(),
                    format!("train-{} FAILED: exit code 1 (8 GPUs on {node}, ran 2h10m)", job % 977),
                    Some(format!("user{}", job % 53)),
                    Some(job),
                    Some(format!("team-{}", job % 11)),
                    format!("job:{job}:FAILED:{at}"),
                ),
                EventKind::Xid | EventKind::Ecc => (
                    SubjectKind::Gpu,
                    format!("{node}/gpu{}", rng.u8(0..8)),
                    "XID 79: GPU has fallen off the bus (1 in window)".to_string(),
                    None,
                    None,
                    None,
                    format!("xid:{node}:{at}:{i}"),
                ),
                EventKind::NodeState => (
                    SubjectKind::Node,
                    node.clone(),
                    "mixed → draining: XID 79 INC-4242 (by oncall)".to_string(),
                    Some("oncall".into()),
                    None,
                    None,
                    format!("node-state:{node}:draining:{at}"),
                ),
                _ => (
                    SubjectKind::Node,
                    node.clone(),
                    format!("{} on {node}", kind.label()),
                    Some("oncall".into()),
                    None,
                    None,
                    format!("{}:{node}:{i}", kind.label()),
                ),
            };
            Event {
                cluster: "bench".into(),
                at,
                kind,
                subject_kind: sk,
                subject,
                node: Some(node),
                job: jobf,
                team,
                what,
                who,
                gpus: 8,
                dedupe,
            }
        })
        .collect();
    events.sort_by_key(|e| e.at);
    // One transaction a minute of events, as the console's writer commits what is queued.
    let by_minute = |evs: &[Event]| {
        let mut out: Vec<Vec<Event>> = Vec::new();
        let mut cur: Vec<Event> = Vec::new();
        let mut minute = None;
        for e in evs {
            if minute != Some(e.at / 60) && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            minute = Some(e.at / 60);
            cur.push(e.clone());
        }
        out.push(cur);
        out
    };
    let batches = by_minute(&events);
    let mut j = Journal::open(&path).expect("open");
    let t = Instant::now();
    let mut added = 0;
    for b in &batches {
        added += j.record(b).expect("record");
    }
    let write_s = t.elapsed().as_secs_f64();
    // A second console on the same data dir: the same events, a few seconds later where the
    // time is only when they were seen.
    let mut j2 = Journal::open(&path).expect("open again");
    let t = Instant::now();
    let mut again = 0;
    for b in &batches {
        again += j2.record(b).expect("record again");
    }
    let dup_s = t.elapsed().as_secs_f64();
    drop(j2);
    drop(j);
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let j = Journal::open(&path).expect("reopen");
    let t = Instant::now();
    let day = j.query(&Query { from: end - 86_400, to: end, ..Default::default() }).expect("query");
    let day_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let node = j
        .query(&Query { from: start, to: end, node: Some("gpu-0007".into()), ..Default::default() })
        .expect("node query");
    let node_ms = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "{added} events in {} transactions: written in {write_s:.2} s ({:.0} events/s); \
         a second console's copy: {again} added, {dup_s:.2} s",
        batches.len(),
        added as f64 / write_s
    );
    println!(
        "file {:.1} MiB ({:.0} bytes/event) at {}",
        size(&path) as f64 / 1_048_576.0,
        size(&path) as f64 / added.max(1) as f64,
        path.display()
    );
    println!(
        "last 24 h: {} events read in {day_ms:.0} ms; one node's 30 days: {} in {node_ms:.1} ms",
        day.len(),
        node.len()
    );
    // What the diff costs the console per update: a simulated cluster of NODES nodes.
    let cfg = gpuplane::testing::SimConfig { nodes: nodes as usize, ..Default::default() };
    let s = gpuplane::testing::state_after(cfg, 3);
    let (snap, _) = gpuplane::state::journal::diff(None, &s);
    let t = Instant::now();
    let rounds = 20;
    for _ in 0..rounds {
        std::hint::black_box(gpuplane::state::journal::diff(Some(&snap), &s));
    }
    println!(
        "diff of two looks at {nodes} nodes ({} GPUs, {} jobs): {:.2} ms each",
        s.gpu_count(),
        s.jobs.len(),
        t.elapsed().as_secs_f64() * 1e3 / f64::from(rounds)
    );
}
