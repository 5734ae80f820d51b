//! Audit log: `audit verify` on 1,000,000 records, and one append with fsync.
//! Run: `cargo bench --bench audit`.

use divan::Bencher;
use gpuplane::audit::{AuditLog, Entry, GENESIS, Phase, Record, verify};
use std::io::Write;

fn main() {
    append_percentiles();
    divan::main();
}

/// p50/p99 of 1,000 appends with fsync (divan reports medians, not tails).
fn append_percentiles() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"));
    let e = Entry {
        cluster: "prod-a".into(),
        action: "cordon".into(),
        targets: vec!["gpu-00001".into()],
        op_id: "op".into(),
        ..Entry::default()
    };
    let mut t: Vec<std::time::Duration> = (0..1000)
        .map(|_| {
            let start = std::time::Instant::now();
            log.append(Phase::Event, &e).unwrap();
            start.elapsed()
        })
        .collect();
    t.sort();
    println!(
        "audit append with fsync over 1000 appends: p50 {:?}, p99 {:?}, max {:?}",
        t[499], t[989], t[999]
    );
}

/// Writes a valid chain of `n` records (no fsync: this only builds the input).
fn build_log(path: &std::path::Path, n: u64) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut prev = GENESIS.to_string();
    for seq in 0..n {
        let mut r = Record {
            seq,
            ts: "2026-11-29T12:00:00.000000Z".into(),
            os_user: "alice".into(),
            identity: Some("slurm:alice".into()),
            host: "ops-1".into(),
            cluster: "prod-a".into(),
            action: if seq % 2 == 0 { "drain".into() } else { "cordon".into() },
            targets: vec![format!("gpu-{:05}", seq % 10_000)],
            reason: Some("XID 79 on GPU 3".into()),
            ticket: Some("INC-4711".into()),
            params: [("backend".to_string(), "slurm".to_string())].into_iter().collect(),
            phase: if seq % 2 == 0 { Phase::Intent } else { Phase::Outcome },
            result: (seq % 2 == 1).then(|| "ok".into()),
            error: None,
            break_glass: None,
            op_id: format!("op-{}", seq / 2),
            prev_hash: prev.clone(),
            hash: String::new(),
        };
        r.hash = r.compute_hash();
        prev.clone_from(&r.hash);
        writeln!(out, "{}", serde_json::to_string(&r).unwrap()).unwrap();
    }
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn verify_1m_records(bencher: Bencher) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    build_log(&path, 1_000_000);
    bencher.bench_local(|| {
        let r = verify(&path).unwrap();
        assert_eq!((r.records, r.problem), (1_000_000, None));
    });
}

/// One append: lock, read the tail, write, fsync (p50/p99 from the samples).
#[divan::bench(sample_count = 300, sample_size = 1)]
fn append_with_fsync(bencher: Bencher) {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"));
    let e = Entry {
        cluster: "prod-a".into(),
        action: "cordon".into(),
        targets: vec!["gpu-00001".into()],
        reason: Some("bench".into()),
        op_id: "op".into(),
        ..Entry::default()
    };
    bencher.bench_local(|| log.append(Phase::Event, &e).unwrap());
}
