//! The ops road against the real slurmrestd of the test command: writes are audited before
//! they are sent, and refused (nothing sent) when the audit record cannot be written.
//!
//! Behind the `live` feature (`cargo test --features live`, as scripts/test runs it): they need
//! the Slurm test clusters (GPUPLANE_TEST_SLURM*), and without it they fail, never pass.

use crate::common;
use crate::slurm_support;

use crate::slurm_support::{read, slurm22, slurm24};
use gpuplane::audit::{AuditLog, Phase, verify};
use gpuplane::model::NodeState;
use gpuplane::ops::{ActionKind, Executor, OpError, OpRequest, Ops, SlurmExecutor, plan};
use std::time::Duration;

fn req(kind: ActionKind, target: &str) -> OpRequest {
    OpRequest {
        kind,
        targets: vec![target.into()],
        reason: "gpuplane ops test (OPS-2)".into(),
        ticket: Some("OPS-2".into()),
        dry_run: false,
    }
}

/// Slurm applies a resume asynchronously: wait (up to 20 s) until the node has lost DRAIN.
async fn wait_undrained(c: &slurm_support::Cluster, node: &str) {
    for _ in 0..40 {
        if !c.cli(&["scontrol", "-o", "show", "node", node]).contains("DRAIN") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("{node} still drained after resume");
}

fn ops(path: std::path::PathBuf) -> Ops {
    Ops { audit: AuditLog::new(path), readonly: false, cluster: "slurm24".into(), break_glass: None }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm24_drain_and_resume_through_the_audited_road() {
    let (c, _g) = slurm24().await;
    let s = read(&c).await;
    let node = s.nodes.iter().find(|n| n.state == NodeState::Idle).expect("an idle node").name.to_string();
    let mut admin_cfg = c.config(&c.admin_jwt).client;
    admin_cfg.user = None;
    let mut exec = SlurmExecutor::new(&admin_cfg).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ops = ops(dir.path().join("audit.jsonl"));

    // Fail closed: an unwritable audit log refuses, and slurmctld never hears of it.
    std::fs::write(dir.path().join("f"), "x").unwrap();
    let broken = Ops { audit: AuditLog::new(dir.path().join("f").join("audit.jsonl")), ..ops.clone() };
    let r = req(ActionKind::Drain, &node);
    let p = plan(&r, &s, &*exec.planner(), false).unwrap();
    let e = broken.run(&r, &p, &mut exec, |_| {}).await.unwrap_err();
    assert!(matches!(e, OpError::AuditFailed(_)), "{e}");
    let sc = c.cli(&["scontrol", "-o", "show", "node", &node]);
    assert!(!sc.contains("DRAIN"), "nothing was sent: {sc}");

    // Through the road: intent, drain, outcome.
    let out = ops.run(&r, &p, &mut exec, |_| {}).await.unwrap();
    assert!(out.results[0].ok, "{out:?}");
    let sc = c.cli(&["scontrol", "-o", "show", "node", &node]);
    assert!(sc.contains("DRAIN") && sc.contains("gpuplane ops test"), "{sc}");
    let recs = ops.audit.read_all().unwrap();
    assert_eq!(recs.iter().map(|r| r.phase).collect::<Vec<_>>(), vec![Phase::Intent, Phase::Outcome]);
    assert_eq!(recs[1].result.as_deref(), Some("ok"));
    assert!(!std::fs::read_to_string(&ops.audit.path).unwrap().contains(&c.admin_jwt), "no token in the log");

    // Resume.
    let s = read(&c).await;
    let r = req(ActionKind::Resume, &node);
    let p = plan(&r, &s, &*exec.planner(), false).unwrap();
    ops.run(&r, &p, &mut exec, |_| {}).await.unwrap();
    wait_undrained(&c, &node).await;
    assert!(verify(&ops.audit.path).unwrap().problem.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm_has_no_cordon_and_22_05_cannot_drain_over_rest() {
    let (c, _g) = slurm22().await;
    let s = read(&c).await;
    let node = s.nodes[0].name.to_string();
    let mut exec = SlurmExecutor::new(&c.config(&c.jwt).client).unwrap();
    let e = plan(&req(ActionKind::Cordon, &node), &s, &*exec.planner(), false).unwrap_err();
    assert!(e.to_string().contains("drain the node instead"), "{e}");
    // Without the preflight nothing is known: the road records the failure and says how.
    let dir = tempfile::tempdir().unwrap();
    let ops = ops(dir.path().join("audit.jsonl"));
    let r = req(ActionKind::Drain, &node);
    let p = plan(&r, &s, &*exec.planner(), false).unwrap();
    let out = ops.run(&r, &p, &mut exec, |_| {}).await.unwrap();
    assert!(!out.results[0].ok);
    let msg = &out.results[0].message;
    assert!(msg.contains("scontrol update") && msg.contains("reason='gpuplane ops test (OPS-2)'"), "{msg}");
    assert_eq!(ops.audit.read_all().unwrap()[1].result.as_deref(), Some("failed"));
}

/// Slurm 22.05 (REST v0.0.38) has no node update: once the preflight has seen the version, a
/// drain or resume is refused before anything is planned, confirmed or audited (a dry run too),
/// and the refusal carries the `scontrol` line with the operator's reason and ticket. That
/// line, run as it is through the cluster's own scontrol, drains the node with exactly that
/// reason (scontrol's `show node` is the oracle), and the resume line returns it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm22_drain_is_refused_before_asking_with_the_scontrol_line_to_run() {
    let (c, _g) = slurm22().await;
    let s = read(&c).await;
    // The last idle node: no other test drains it.
    let node =
        s.nodes.iter().rev().find(|n| n.state == NodeState::Idle).expect("an idle node").name.to_string();
    let exec = SlurmExecutor::new(&c.config(&c.jwt).client).unwrap();
    exec.check_permission().await.unwrap();
    let mut r = req(ActionKind::Drain, &node);
    r.reason = "IB port flaps, it's the cable".into();
    r.ticket = Some("INC-77".into());
    for dry_run in [false, true] {
        r.dry_run = dry_run;
        let e = plan(&r, &s, &*exec.planner(), false).unwrap_err();
        assert!(
            matches!(e, OpError::Preflight { error: gpuplane::ops::ActionError::Unsupported { .. }, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("v0.0.38") && e.to_string().contains("run instead:"), "{e}");
    }
    let lines = plan(&r, &s, &*exec.planner(), false).unwrap_err().instead().to_vec();
    assert_eq!(lines.len(), 1, "{lines:?}");
    // The command line says the same before asking anything, a dry run too, the line whole on
    // a line of its own; no audit record is written.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let mut cli_lines = Vec::new();
    for dry in [&["--dry-run"][..], &[]] {
        let out = common::gpuplane_cmd(dir.path())
            .args(["drain", &node, "--reason", &r.reason, "--ticket", "INC-77"])
            .args(dry)
            .args(["--slurm", &c.url, "--slurm-user", "root", "--audit-log", log.to_str().unwrap()])
            .env("SLURM_JWT", &c.jwt)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.lines().any(|l| l.trim() == lines[0]), "{err}");
        assert!(String::from_utf8_lossy(&out.stdout).trim().is_empty() && !log.exists());
        cli_lines.push(err.lines().map(str::trim).find(|l| l.starts_with("scontrol ")).map(str::to_string));
    }
    // The console, on the same node with the same reason and ticket, asks only those (no
    // confirmation) and shows the very line the command line printed.
    let mut a = gpuplane::tui::app::App::new(
        s.clone(),
        gpuplane::tui::keymap::Keymap::builtin("default"),
        gpuplane::tui::theme::Theme::builtin("dark"),
        gpuplane::tui::widgets::Glyphs::UNICODE,
        "root".into(),
    );
    a.planner = Some(exec.planner());
    a.goto(gpuplane::tui::views::nodes::ID);
    a.prepare();
    let at = a.ui.tables[gpuplane::tui::views::nodes::TABLE]
        .rows
        .iter()
        .position(|&k| s.nodes[k as usize].name == node)
        .unwrap();
    for _ in 0..at {
        common::key(&mut a, ratatui::crossterm::event::KeyCode::Down);
    }
    common::key(&mut a, ratatui::crossterm::event::KeyCode::Char('r'));
    common::typed(&mut a, &format!("{}\tINC-77\r", r.reason));
    let gpuplane::tui::app::Mode::Instead(d) = &a.ui.mode else {
        panic!("{:?} {:?}", a.ui.mode, a.ui.message)
    };
    assert_eq!(cli_lines, [Some(d.lines[0].clone()), Some(d.lines[0].clone())]);
    let argv = shlex::split(&lines[0]).expect("a shell line");
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    assert_eq!(argv[0], "scontrol");
    c.cli(&argv);
    let shown = c.cli(&["scontrol", "-o", "show", "node", &node]);
    // `Reason=… [root@2026-12-03T14:02:11]`: the reason, then who set it and when.
    let reason = shown.split(" Reason=").nth(1).and_then(|r| r.trim().rsplit_once(" [")).map(|(r, _)| r);
    // What the operator typed, ticket included, is what Slurm keeps.
    assert_eq!(reason, Some("IB port flaps, it's the cable [INC-77]"), "{shown}");
    assert!(shown.contains("DRAIN"), "{shown}");

    let resume = plan(&req(ActionKind::Resume, &node), &read(&c).await, &*exec.planner(), false).unwrap_err();
    let argv = shlex::split(&resume.instead()[0]).expect("a shell line");
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    c.cli(&argv);
    wait_undrained(&c, &node).await;
}

/// Break-glass on Slurm switches writes to the privileged token only while the session lasts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm24_break_glass_uses_the_privileged_token_only_during_the_session() {
    use gpuplane::ops::{OpEvent, OpJob, OpMsg, worker};
    let (c, _g) = slurm24().await;
    let s = read(&c).await;
    let node =
        s.nodes.iter().rev().find(|n| n.state == NodeState::Idle).expect("an idle node").name.to_string();
    let user_cfg = c.config(&c.jwt).client;
    let mut admin_cfg = c.config(&c.admin_jwt).client;
    admin_cfg.user = None;
    let exec = SlurmExecutor::new(&user_cfg).unwrap().with_break_glass(&admin_cfg).unwrap();
    assert!(exec.identity().unwrap().starts_with("slurm:"));
    // The console's planner: the executor's own planning side (one executor, owned by the ops task).
    let planner = exec.planner();
    let dir = tempfile::tempdir().unwrap();
    let ops = ops(dir.path().join("audit.jsonl"));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (ev_tx, mut ev_rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(worker(ops.clone(), Box::new(exec), rx, ev_tx));
    let run = |kind, session: Option<&str>, s: &gpuplane::state::ClusterState| {
        let r = req(kind, &node);
        let plan = plan(&r, s, &*planner, false).unwrap();
        OpMsg::Run(OpJob {
            req: r,
            plan,
            break_glass: session
                .map(|s| gpuplane::audit::BreakGlass { session: s.into(), ticket: "INC-1".into() }),
            op_id: None,
        })
    };
    let mut done = async || loop {
        match ev_rx.recv().await.expect("ops task alive") {
            OpEvent::Done { result, .. } => return result.unwrap(),
            _ => continue,
        }
    };
    // No session: the ordinary user may not drain.
    tx.send(run(ActionKind::Drain, None, &s)).unwrap();
    let out = done().await;
    assert!(!out.results[0].ok, "{out:?}");
    assert!(!c.cli(&["scontrol", "-o", "show", "node", &node]).contains("DRAIN"));
    // During a session the privileged token drains; the records carry the session.
    tx.send(run(ActionKind::Drain, Some("bg-1"), &s)).unwrap();
    let out = done().await;
    assert!(out.results[0].ok, "{out:?}");
    assert!(c.cli(&["scontrol", "-o", "show", "node", &node]).contains("DRAIN"));
    // After the session the elevation is gone: resume as the ordinary user fails.
    let drained = read(&c).await;
    tx.send(run(ActionKind::Resume, None, &drained)).unwrap();
    assert!(!done().await.results[0].ok);
    tx.send(run(ActionKind::Resume, Some("bg-1"), &drained)).unwrap();
    assert!(done().await.results[0].ok);
    let recs = ops.audit.read_all().unwrap();
    let tagged: Vec<_> = recs.iter().map(|r| r.break_glass.as_deref()).collect();
    assert_eq!(tagged, vec![None, None, Some("bg-1"), Some("bg-1"), None, None, Some("bg-1"), Some("bg-1")]);
    assert!(recs[2].identity.as_deref().unwrap().contains("break-glass token"), "{:?}", recs[2].identity);
    wait_undrained(&c, &node).await;
}

/// The subcommands act on the configured Slurm cluster (not the simulator), audited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm24_drain_and_resume_from_the_command_line() {
    let (c, _g) = slurm24().await;
    let s = read(&c).await;
    let node = s.nodes.iter().find(|n| n.state == NodeState::Idle).expect("an idle node").name.to_string();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let run = |args: &[&str]| {
        let out = common::gpuplane_cmd(dir.path())
            .args(args)
            .args(["--slurm", &c.url, "--audit-log", log.to_str().unwrap(), "--yes"])
            .env("SLURM_JWT", &c.admin_jwt)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (rc, out, err) = run(&["drain", &node, "--reason", "gpuplane cli test", "--ticket", "OPS-3"]);
    assert_eq!(rc, Some(0), "{out}{err}");
    assert!(out.contains("(Slurm, ") && !out.contains("SIMULATED"), "{out}");
    assert!(c.cli(&["scontrol", "-o", "show", "node", &node]).contains("DRAIN"));
    let (rc, out, err) = run(&["resume", &node, "--reason", "done"]);
    assert_eq!(rc, Some(0), "{out}{err}");
    assert_eq!(verify(&log).unwrap().records, 4);
    wait_undrained(&c, &node).await;
}

/// `gpuplane get` reads the configured Slurm cluster: the same nodes and jobs as the backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm22_get_lists_what_the_backend_reads() {
    let (c, _g) = slurm22().await;
    let s = read(&c).await;
    let dir = tempfile::tempdir().unwrap();
    for (what, n) in [("nodes", s.nodes.len()), ("jobs", s.jobs.len())] {
        let out = common::gpuplane_cmd(dir.path())
            .args(["get", what, "-o", "json", "--slurm", &c.url])
            .args(c.user.iter().flat_map(|u| ["--slurm-user", u.as_str()]))
            .env("SLURM_JWT", &c.jwt)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v.as_array().unwrap().len(), n, "{what}");
    }
}

/// The permission preflight on Slurm 22.05 with slurmdbd: root is uid 0; `nobody` (AdminLevel
/// None in slurmdbd, coordinator of nothing) may not drain, and may not cancel root's job — both
/// refused before a plan exists, so nothing reaches slurmctld; its own jobs it may cancel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm22_permission_preflight_from_slurmdbd_refuses_before_planning() {
    use gpuplane::backend::slurm::perm::AdminLevel;
    let (c, _g) = slurm22().await;
    let s = read(&c).await;
    let root = SlurmExecutor::new(&c.config(&c.jwt).client).unwrap();
    let p = root.check_permission().await.unwrap();
    assert_eq!((p.user.as_str(), p.level), ("root", Some(AdminLevel::Administrator)), "{p:?}");
    let victim = s
        .jobs
        .iter()
        .find(|j| j.user == "root" && j.state.is_active())
        .expect("an active job of root's on 22.05");
    let id = victim.id.to_string();
    assert!(plan(&req(ActionKind::Cancel, &id), &s, &*root.planner(), false).is_ok());

    let out = c.cli(&["scontrol", "token", "username=nobody", "lifespan=600"]);
    let jwt = out.trim().strip_prefix("SLURM_JWT=").expect("a token for nobody").to_string();
    let mut cfg = c.config(&jwt).client;
    cfg.user = Some("nobody".into());
    let nobody = SlurmExecutor::new(&cfg).unwrap();
    assert_eq!(nobody.permission(), None, "nothing is known before the preflight");
    let p = nobody.check_permission().await.unwrap();
    // What sacctmgr says about the same user.
    let admin = c.cli(&["sacctmgr", "-n", "-P", "show", "user", "nobody", "format=adminlevel"]);
    assert_eq!(admin.trim(), "None");
    assert_eq!(
        (p.user.as_str(), p.level, p.coordinates.len()),
        ("nobody", Some(AdminLevel::None), 0),
        "{p:?}"
    );
    assert_eq!(p.source, "slurmdbd");
    assert_eq!(nobody.identity().as_deref(), Some("slurm:nobody"));

    let e = plan(&req(ActionKind::Cancel, &id), &s, &*nobody.planner(), false).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, OpError::Preflight { error: gpuplane::ops::ActionError::Forbidden { .. }, .. }),
        "{e:?}"
    );
    assert!(msg.contains(&format!("job {id} belongs to root")) && msg.contains("only its own jobs"), "{msg}");
    let node = s.nodes.iter().find(|n| n.state == NodeState::Idle).expect("an idle node").name.to_string();
    let e = plan(&req(ActionKind::Drain, &node), &s, &*nobody.planner(), false).unwrap_err().to_string();
    assert!(e.contains("AdminLevel None") && e.contains("sacctmgr modify user nobody"), "{e}");
    // The job is untouched (no request was ever sent).
    let state = c.cli(&["squeue", "-h", "-j", &id, "-o", "%T"]);
    assert!(matches!(state.trim(), "PENDING" | "RUNNING"), "{state}");
    // Its own job (same model, owner rewritten) is its to cancel.
    let mut own = s.clone();
    if let Some(j) = own.jobs.iter_mut().find(|j| j.id == victim.id) {
        j.user = "nobody".into();
    }
    assert!(plan(&req(ActionKind::Cancel, &id), &own, &*nobody.planner(), false).is_ok());
}

/// The permission preflight on Slurm 24.11 with slurmdbd (v0.0.42), identities from the tokens:
/// `gpuplane` (AdminLevel None) and `gpuops` as an Operator are refused a drain before planning,
/// and slurmctld agrees (the same drain sent without the preflight is refused); made an
/// Administrator, `gpuops` — neither root nor SlurmUser — is allowed and its drain and resume go
/// through; the SlurmUser's token is privileged without a lookup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm24_permission_preflight_follows_slurmdbd_admin_levels() {
    use gpuplane::backend::slurm::perm::AdminLevel;
    let (c, _g) = slurm24().await;
    let s = read(&c).await;
    let node =
        s.nodes.iter().rev().find(|n| n.state == NodeState::Idle).expect("an idle node").name.to_string();
    let level =
        |u: &str| c.cli(&["sacctmgr", "-n", "-P", "show", "user", u, "format=adminlevel"]).trim().to_string();
    let dir = tempfile::tempdir().unwrap();
    let ops = ops(dir.path().join("audit.jsonl"));

    let user = SlurmExecutor::new(&c.config(&c.jwt).client).unwrap();
    let p = user.check_permission().await.unwrap();
    assert_eq!(
        (p.user.as_str(), p.level, p.source.as_str()),
        ("gpuplane", Some(AdminLevel::None), "slurmdbd")
    );
    assert_eq!(level("gpuplane"), "None");
    let e = plan(&req(ActionKind::Drain, &node), &s, &*user.planner(), false).unwrap_err().to_string();
    assert!(e.contains("Slurm user gpuplane has AdminLevel None"), "{e}");

    let out = c.cli(&["scontrol", "token", "username=gpuops", "lifespan=600"]);
    let jwt = out.trim().strip_prefix("SLURM_JWT=").expect("a token for gpuops").to_string();
    let cfg = c.config(&jwt).client;
    let operator = SlurmExecutor::new(&cfg).unwrap();
    let p = operator.check_permission().await.unwrap();
    assert_eq!((p.user.as_str(), p.level), ("gpuops", Some(AdminLevel::Operator)), "{p:?}");
    assert_eq!(level("gpuops"), "Operator");
    let r = req(ActionKind::Drain, &node);
    let e = plan(&r, &s, &*operator.planner(), false).unwrap_err().to_string();
    assert!(e.contains("AdminLevel Operator"), "{e}");
    // slurmctld agrees: the same drain, planned without the preflight, is refused by it.
    let mut unchecked = SlurmExecutor::new(&cfg).unwrap();
    let pl = plan(&r, &s, &*unchecked.planner(), false).unwrap();
    let out = ops.run(&r, &pl, &mut unchecked, |_| {}).await.unwrap();
    assert!(!out.results[0].ok && out.results[0].message.contains("Invalid user id"), "{out:?}");
    assert!(!c.cli(&["scontrol", "-o", "show", "node", &node]).contains("DRAIN"));

    // An Administrator by AdminLevel alone may drain, and slurmctld agrees.
    c.cli(&["sacctmgr", "-i", "modify", "user", "gpuops", "set", "adminlevel=Administrator"]);
    let mut admin = SlurmExecutor::new(&cfg).unwrap();
    let p = admin.check_permission().await.unwrap();
    assert_eq!(p.level, Some(AdminLevel::Administrator), "{p:?}");
    let pl = plan(&r, &s, &*admin.planner(), false).expect("an administrator may drain");
    let mut drained = false;
    for _ in 0..20 {
        // slurmctld hears of the new level from slurmdbd shortly after sacctmgr returns.
        let out = ops.run(&r, &pl, &mut admin, |_| {}).await.unwrap();
        if out.results[0].ok {
            drained = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let resumed = if drained {
        let after = read(&c).await;
        let r = req(ActionKind::Resume, &node);
        let pl = plan(&r, &after, &*admin.planner(), false).unwrap();
        ops.run(&r, &pl, &mut admin, |_| {}).await.unwrap().results[0].ok
    } else {
        false
    };
    c.cli(&["sacctmgr", "-i", "modify", "user", "gpuops", "set", "adminlevel=Operator"]);
    assert!(drained && resumed, "slurmctld agrees with the preflight");
    wait_undrained(&c, &node).await;
    let last = ops.audit.read_all().unwrap();
    assert!(last.last().unwrap().identity.as_deref().unwrap().contains("slurm:gpuops"), "{last:?}");

    let mut admin_cfg = c.config(&c.admin_jwt).client;
    admin_cfg.user = None;
    let p = SlurmExecutor::new(&admin_cfg).unwrap().check_permission().await.unwrap();
    assert_eq!(
        (p.user.as_str(), p.level, p.source.as_str()),
        ("slurm", Some(AdminLevel::Administrator), "the cluster's SlurmUser")
    );
}

/// Undoes a test's `scontrol update` of a node when the test ends, pass or fail.
struct Resume<'a>(&'a slurm_support::Cluster, String);

impl Drop for Resume<'_> {
    fn drop(&mut self) {
        let _ = self.0.cli(&["scontrol", "update", &format!("nodename={}", self.1), "state=resume"]);
    }
}

/// A node that is down and drained (`State=DOWN+DRAIN` in scontrol, the oracle) reads as
/// `down+drain` in STATE and JSON, and its node-down incident is mitigated by the drain (who
/// set it, from Slurm), so `--fail-on crit` does not page for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm24_a_down_and_drained_node_is_down_drain_and_mitigated() {
    let (c, _g) = slurm24().await;
    let s = read(&c).await;
    let node =
        s.nodes.iter().rev().find(|n| n.state == NodeState::Idle).expect("an idle node").name.to_string();
    let _undo = Resume(&c, node.clone());
    c.cli(&[
        "scontrol",
        "update",
        &format!("nodename={node}"),
        "state=down",
        "reason=gpuplane test: BMC says PSU",
    ]);
    c.cli(&[
        "scontrol",
        "update",
        &format!("nodename={node}"),
        "state=drain",
        "reason=gpuplane test: PSU RMA",
    ]);
    let sc = c.cli(&["scontrol", "-o", "show", "node", &node]);
    let st = sc.split_whitespace().find_map(|w| w.strip_prefix("State=")).expect("State=").to_string();
    assert!(st.contains("DOWN") && st.contains("DRAIN"), "scontrol: {sc}");
    let dir = tempfile::tempdir().unwrap();
    let get = |what: &str, extra: &[&str]| {
        let out = common::gpuplane_cmd(dir.path())
            .args(["--slurm", &c.url, "get", what, "-o", "json"])
            .args(extra)
            .env("SLURM_JWT", &c.jwt)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (rc, out, err) = get("nodes", &[]);
    assert_eq!(rc, Some(0), "{err}");
    let nodes: Vec<serde_json::Value> = serde_json::from_str(&out).expect("JSON");
    let n = nodes.iter().find(|n| n["name"] == node.as_str()).unwrap_or_else(|| panic!("{node}: {out}"));
    assert_eq!(n["state"], "down+drain", "{n}");
    let (_, out, err) = get("incidents", &[]);
    let incidents: Vec<serde_json::Value> =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let down: Vec<&serde_json::Value> = incidents.iter().filter(|i| i["subject"] == node.as_str()).collect();
    assert!(!down.is_empty(), "the down node is an incident: {out}");
    for i in &down {
        assert_eq!(i["state"], "mitigated", "{i}");
        assert!(i["title"].as_str().unwrap_or("").contains("down+drain"), "{i}");
    }
    // The check pages only for open CRITs: this node's is not one of them.
    let open_crit_others =
        incidents.iter().filter(|i| i["severity"] == "critical" && i["state"] == "open").count();
    let (rc, _, err) = get("incidents", &["--fail-on", "crit"]);
    assert_eq!(rc, Some(if open_crit_others > 0 { 3 } else { 0 }), "{err}");
}
