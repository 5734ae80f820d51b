//! Blast-radius limits against the real Slurm 24.11: a drain past a limit is refused without
//! break-glass and no write reaches slurmrestd — every request the command sends goes through a
//! counting proxy in front of slurmrestd, which sees reads only, and the node stays as it was.
//! Under break-glass the same drain is sent, and its audit records name the limit.
//!
//! Behind the `live` feature: it needs GPUPLANE_TEST_SLURM24_* (scripts/test) and fails
//! without them.

use crate::common;

use crate::slurm_support::{counting_proxy, read, slurm24, writes};
use gpuplane::audit::{AuditLog, BREAK_GLASS_START, Entry, Phase};
use gpuplane::model::NodeState;
use std::collections::BTreeMap;
use std::time::Duration;

/// This operator's break-glass session of 10 minutes, as a console starts it: a start record in
/// the audit log that commands read.
fn start_break_glass(audit: &AuditLog, cluster: &str, session: &str, ticket: &str) {
    let until = jiff::Timestamp::now().as_second() + 600;
    let mut params = BTreeMap::new();
    params.insert("until".to_string(), until.to_string());
    params.insert("minutes".to_string(), "10".to_string());
    let e = Entry {
        cluster: cluster.to_string(),
        action: BREAK_GLASS_START.into(),
        reason: Some("a test's break-glass".into()),
        ticket: Some(ticket.into()),
        params,
        break_glass: Some(session.into()),
        op_id: session.into(),
        ..Default::default()
    };
    audit.append(Phase::Event, &e).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm24_a_drain_past_the_limit_sends_nothing_without_break_glass() {
    let (c, _g) = slurm24().await;
    let s = read(&c).await;
    let node = s.nodes.iter().find(|n| n.state == NodeState::Idle).expect("an idle node").name.to_string();
    let out_now = s.nodes.iter().filter(|n| !n.state.schedulable()).count();
    let upstream = c.url.trim_start_matches("http://").trim_end_matches('/').to_string();
    let (proxy, seen) = counting_proxy(upstream).await;

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    // As many out of service as there are now: one more is one over.
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, format!("[limits]\nmax_out_nodes = {out_now}\nkeep_last_healthy = false\n"))
        .unwrap();
    let run = |args: &[&str]| {
        let out = common::gpuplane_cmd(dir.path())
            .args(args)
            .args(["--slurm", &proxy, "--audit-log", log.to_str().unwrap(), "--yes"])
            .env("GPUPLANE_CONFIG", &cfg)
            .env("SLURM_JWT", &c.admin_jwt)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let drain = ["drain", node.as_str(), "--reason", "gpuplane guard test", "--ticket", "GUARD-1"];
    let (rc, out, err) = tokio::task::block_in_place(|| run(&drain));
    assert_eq!(rc, Some(2), "{out}{err}");
    assert!(err.contains("blast-radius limits") && err.contains("(1 over)"), "{err}");
    assert!(err.contains("start break-glass"), "{err}");
    let sent = seen.lock().unwrap().clone();
    assert!(!sent.is_empty(), "the command read the cluster through the proxy");
    assert_eq!(writes(&seen), Vec::<String>::new(), "no write reached slurmrestd");
    let sc = c.cli(&["scontrol", "-o", "show", "node", &node]);
    assert!(!sc.contains("DRAIN"), "the node is unchanged: {sc}");
    assert!(AuditLog::new(log.clone()).read_all().unwrap_or_default().is_empty(), "nothing recorded");

    // Under this operator's break-glass session (started in a console: a start record in the
    // same log), the drain is sent and both records name the limit.
    let audit = AuditLog::new(log.clone());
    start_break_glass(&audit, &s.cluster, "bg-guard", "INC-77");
    let (rc, out, err) = tokio::task::block_in_place(|| run(&drain));
    assert_eq!(rc, Some(0), "{out}{err}");
    assert!(
        out.contains("PAST 1 BLAST-RADIUS LIMIT") && out.contains("under break-glass session bg-guard"),
        "{out}"
    );
    let w = writes(&seen);
    assert!(w.iter().any(|l| l.starts_with("POST ") && l.contains(&format!("/node/{node}"))), "{w:?}");
    assert!(c.cli(&["scontrol", "-o", "show", "node", &node]).contains("DRAIN"));
    let recs = audit.read_all().unwrap();
    let drains: Vec<_> = recs.iter().filter(|r| r.action == "drain").collect();
    assert_eq!(drains.len(), 2, "{recs:?}");
    for r in drains {
        assert!(r.params["limits_exceeded"].contains("max_out_nodes"), "{:?}", r.params);
        assert_eq!(r.break_glass.as_deref(), Some("bg-guard"));
    }

    // Back in service (resume is never limited), and wait until Slurm has applied it.
    let (rc, out, err) = tokio::task::block_in_place(|| run(&["resume", &node, "--reason", "done"]));
    assert_eq!(rc, Some(0), "{out}{err}");
    for _ in 0..40 {
        if !c.cli(&["scontrol", "-o", "show", "node", &node]).contains("DRAIN") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("{node} still drained after resume");
}

/// A command-line drain under this operator's break-glass session goes out with the
/// break-glass token (`[slurm] break_glass_token_file`), not the ordinary one: the ordinary
/// user may not drain, so only the privileged token can have drained the node (scontrol, the
/// oracle). Without a session the same command is refused and the node is unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm24_a_command_line_drain_under_break_glass_uses_the_break_glass_token() {
    let (c, _g) = slurm24().await;
    let s = read(&c).await;
    let node =
        s.nodes.iter().rev().find(|n| n.state == NodeState::Idle).expect("an idle node").name.to_string();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let token = dir.path().join("bg.jwt");
    std::fs::write(&token, &c.admin_jwt).unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "[slurm]\nbreak_glass_token_file = {:?}\n[limits]\nkeep_last_healthy = false\n",
            token.to_str().unwrap()
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = common::gpuplane_cmd(dir.path())
            .args(args)
            .args(["--slurm", &c.url, "--audit-log", log.to_str().unwrap(), "--yes"])
            .env("GPUPLANE_CONFIG", &cfg)
            .env("SLURM_JWT", &c.jwt)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let drain = ["drain", node.as_str(), "--reason", "gpuplane bg cli test", "--ticket", "INC-78"];
    let (rc, out, err) = tokio::task::block_in_place(|| run(&drain));
    assert_ne!(rc, Some(0), "the ordinary token may not drain: {out}{err}");
    assert!(!c.cli(&["scontrol", "-o", "show", "node", &node]).contains("DRAIN"));

    let audit = AuditLog::new(log.clone());
    start_break_glass(&audit, &s.cluster, "bg-cli", "INC-78");
    let (rc, out, err) = tokio::task::block_in_place(|| run(&drain));
    assert_eq!(rc, Some(0), "{out}{err}");
    assert!(out.contains("under break-glass session bg-cli"), "{out}");
    assert!(
        c.cli(&["scontrol", "-o", "show", "node", &node]).contains("DRAIN"),
        "drained with the privileged token"
    );
    let recs = audit.read_all().unwrap();
    let outcome = recs.iter().rfind(|r| r.action == "drain").expect("the drain's outcome");
    assert_eq!(outcome.result.as_deref(), Some("ok"), "{outcome:?}");
    assert!(
        outcome.identity.as_deref().unwrap_or("").contains("break-glass token"),
        "{:?}",
        outcome.identity
    );
    let (rc, out, err) = tokio::task::block_in_place(|| run(&["resume", &node, "--reason", "done"]));
    assert_eq!(rc, Some(0), "{out}{err}");
    for _ in 0..40 {
        if !c.cli(&["scontrol", "-o", "show", "node", &node]).contains("DRAIN") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("{node} still drained after resume");
}
