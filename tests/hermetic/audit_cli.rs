//! The audit log through the real binary and across processes.

use gpuplane::audit::{AuditLog, Entry, Phase, verify};
use std::process::Command;

fn gpuplane(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuplane"))
        .args(args)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("USER", "tester")
        .output()
        .expect("run gpuplane");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn actions_from_the_command_line_are_audited_and_verify_catches_tampering() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let l = log.to_str().unwrap();
    let (rc, out, err) = gpuplane(
        dir.path(),
        &[
            "drain",
            "gpu-001",
            "gpu-002",
            "--reason",
            "IB flaps",
            "--ticket",
            "INC-7",
            "--yes",
            "--audit-log",
            l,
        ],
    );
    assert_eq!(rc, 0, "{out}{err}");
    assert!(out.contains("ok   gpu-001") && out.contains("ok   gpu-002"), "{out}");
    let (rc, out, _) =
        gpuplane(dir.path(), &["cordon", "gpu-011", "-r", "fan noise", "-y", "--audit-log", l]);
    assert_eq!(rc, 0, "{out}");
    let (rc, out, _) = gpuplane(dir.path(), &["audit", "verify", l]);
    assert_eq!(rc, 0);
    assert!(out.contains("4 records, chain intact"), "{out}");
    let (_, tail, _) = gpuplane(dir.path(), &["audit", "tail", "--audit-log", l]);
    assert!(
        tail.contains("drain") && tail.contains("tester") && tail.contains("INC-7") && tail.contains("-> ok"),
        "{tail}"
    );
    // edit a field
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, text.replacen("fan noise", "routine", 1)).unwrap();
    let (rc, out, _) = gpuplane(dir.path(), &["audit", "verify", l]);
    assert_eq!(rc, 1);
    assert!(out.contains("line 3: record 2 was edited"), "{out}");
}

#[test]
fn an_unwritable_audit_log_refuses_the_action() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plain-file"), "x").unwrap();
    let bad = dir.path().join("plain-file").join("audit.jsonl");
    let (rc, out, err) =
        gpuplane(dir.path(), &["cordon", "gpu-001", "-r", "x", "-y", "--audit-log", bad.to_str().unwrap()]);
    assert_eq!(rc, 2, "{out}{err}");
    assert!(
        err.contains("the audit record could not be written") && err.contains("nothing was sent"),
        "{err}"
    );
    assert!(!out.contains("ok   gpu-001"));
}

#[test]
fn read_only_refuses_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let (rc, _, err) = gpuplane(dir.path(), &["--readonly", "drain", "gpu-001", "-r", "x", "-y"]);
    assert_eq!(rc, 2);
    assert!(err.contains("read-only mode"), "{err}");
}

#[test]
fn without_a_terminal_an_action_needs_yes() {
    let dir = tempfile::tempdir().unwrap();
    let (rc, _, err) = gpuplane(dir.path(), &["cordon", "gpu-001", "-r", "x"]);
    assert_eq!(rc, 2);
    assert!(err.contains("pass --yes"), "{err}");
}

/// Two processes append 1,000 records each to one log: one valid chain of 2,000.
#[test]
fn two_processes_appending_keep_one_chain() {
    if let Ok(path) = std::env::var("GPUPLANE_AUDIT_CHILD") {
        let log = AuditLog::new(path);
        for i in 0..1000 {
            let e = Entry {
                cluster: "c".into(),
                action: "cordon".into(),
                targets: vec![format!("n{i}")],
                op_id: format!("{i}"),
                ..Entry::default()
            };
            log.append(Phase::Event, &e).expect("append");
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let me = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(&me)
                .args(["--exact", "audit_cli::two_processes_appending_keep_one_chain", "--nocapture"])
                .env("GPUPLANE_AUDIT_CHILD", &path)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let r = verify(&path).unwrap();
    // 2000 records and a signed checkpoint every 100, the checkpoint counted.
    assert_eq!(r.records, 2020);
    assert_eq!(r.problem, None);
    // Both processes signed with the one key beside the log, and witnessed every head.
    let log = AuditLog::new(&path);
    let opts = gpuplane::audit::VerifyOptions {
        heads: gpuplane::audit::witness::read_heads(&[gpuplane::audit::witness::journal_path(&path)])
            .unwrap(),
        pubkey: Some(gpuplane::audit::sign::parse_public(&log.public_key().unwrap()).unwrap()),
        now: 0,
    };
    let full = gpuplane::audit::verify_full(&path, &opts).unwrap();
    assert!(full.intact(), "{full:?}");
    assert_eq!((full.signed, full.witness.last), (Some((20, Some(2000))), Some(2019)));
}

/// `gpuplane audit tail --json | head -1`: the reader goes away before the records are
/// written; the command ends quietly (no panic, no backtrace) with status 0.
#[test]
fn audit_tail_into_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let audit = AuditLog::new(log.clone());
    for i in 0..50 {
        let e = Entry {
            action: "drain".into(),
            targets: vec![format!("gpu-{i:03}")],
            op_id: format!("op{i}"),
            ..Default::default()
        };
        audit.append(Phase::Intent, &e).unwrap();
    }
    for json in [true, false] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpuplane"));
        cmd.args(["audit", "tail", "--audit-log", log.to_str().unwrap()]);
        if json {
            cmd.arg("--json");
        }
        let mut child = cmd
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("RUST_BACKTRACE", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The reader closes before reading anything.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked") && !err.contains("backtrace"), "{err}");
        assert_eq!(out.status.code(), Some(0), "{err}");
    }
}
