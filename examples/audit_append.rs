//! What the witness and the signed checkpoints cost an audit append: p50/p99 per append (each
//! one locked and fsynced) with no witness (the append as it was before the witness), with the
//! journal beside the log, with the journal and a syslog datagram (the default; here to a socket
//! this program binds and drains), and with checkpoints every 100 records on top. Rounds of 200
//! appends alternate between the set-ups so that disk noise falls on all of them alike.
//!
//! `cargo run --release --example audit_append [-- ROUNDS]`

use gpuplane::audit::{AuditLog, Entry, Phase, Witness};
use std::time::{Duration, Instant};

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(10);
    let dir = tempfile::tempdir().expect("tempdir");
    let sock = dir.path().join("syslog.sock");
    let sink = std::os::unix::net::UnixDatagram::bind(&sock).expect("bind");
    sink.set_nonblocking(true).expect("nonblocking");
    let syslog = Witness { syslog: Some(sock.clone()), ..Witness::default() };
    let setups: Vec<(&str, AuditLog)> = vec![
        (
            "no witness, no checkpoints (before)",
            AuditLog::new(dir.path().join("a.jsonl")).with_witness(Witness::none()).with_checkpoint_every(0),
        ),
        ("journal", AuditLog::new(dir.path().join("b.jsonl")).with_checkpoint_every(0)),
        (
            "journal + syslog",
            AuditLog::new(dir.path().join("c.jsonl")).with_witness(syslog.clone()).with_checkpoint_every(0),
        ),
        (
            "journal + syslog + checkpoint/100 (default)",
            AuditLog::new(dir.path().join("d.jsonl")).with_witness(syslog),
        ),
    ];
    let e = Entry {
        cluster: "prod-a".into(),
        action: "cordon".into(),
        targets: vec!["gpu-00001".into()],
        reason: Some("XID 79 on GPU 3".into()),
        ticket: Some("INC-4711".into()),
        op_id: "op".into(),
        ..Entry::default()
    };
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); setups.len()];
    let mut buf = [0u8; 4096];
    for _ in 0..rounds {
        for (i, (_, log)) in setups.iter().enumerate() {
            for _ in 0..200 {
                let t = Instant::now();
                log.append(Phase::Event, &e).expect("append");
                times[i].push(t.elapsed());
            }
            while sink.recv(&mut buf).is_ok() {}
        }
    }
    println!("audit append, {} appends per set-up, each locked and fsynced:", rounds * 200);
    for ((name, _), t) in setups.iter().zip(&mut times) {
        t.sort();
        let at = |q: f64| t[((t.len() as f64 * q) as usize).min(t.len() - 1)].as_secs_f64() * 1e6;
        let mean = t.iter().sum::<Duration>().as_secs_f64() * 1e6 / t.len() as f64;
        println!("  {name:<45} p50 {:>7.1} µs  p99 {:>8.1} µs  mean {:>7.1} µs", at(0.5), at(0.99), mean);
    }
}
