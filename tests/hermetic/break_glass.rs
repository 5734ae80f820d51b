//! Break-glass without holes: one session per operator, every action under it carries its
//! ticket and session id, every start has an end on the record, and read-only stays read-only.

use crate::common::{app, gpuplane_cmd, render, typed};
use gpuplane::audit::{AuditLog, Phase, Record};
use gpuplane::backend::sim::{Sim, SimConfig};
use gpuplane::ops::{self, ActionKind, BreakGlassMsg, OpEvent, OpJob, OpMsg, OpRequest, Ops, SimExecutor};
use gpuplane::tui::app::Msg;

fn message(a: &gpuplane::tui::app::App) -> String {
    a.ui.message.as_ref().map(|m| m.0.clone()).unwrap_or_default()
}

#[test]
fn a_second_session_is_refused_while_the_first_runs() {
    let mut a = app();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    a.ops_tx = Some(tx);
    a.wall_now = 1_000_000;
    typed(&mut a, ":breakglass INC-1 30 first\r");
    let first = a.break_glass.clone().expect("started");
    assert!(matches!(rx.try_recv(), Ok(OpMsg::BreakGlass(BreakGlassMsg::Start { .. }))));
    a.wall_now += 60;
    typed(&mut a, ":breakglass INC-2 10 second\r");
    assert_eq!(a.break_glass.as_ref(), Some(&first), "the first session stays");
    let m = message(&a);
    assert!(
        m.contains("INC-1 is already open (29:00 left): refused") && m.contains(":breakglass end"),
        "{m}"
    );
    assert!(rx.try_recv().is_err(), "nothing recorded for the refused start");
    // Ended, a new one may start; the end is recorded with why.
    typed(&mut a, ":breakglass end\r");
    assert!(matches!(rx.try_recv(), Ok(OpMsg::BreakGlass(BreakGlassMsg::End { session, why }))
        if session.session == first.id && why == "ended by operator"));
    typed(&mut a, ":breakglass INC-2 10 second\r");
    assert_eq!(a.break_glass.as_ref().map(|b| b.ticket.as_str()), Some("INC-2"));
}

/// A start record of this OS user from another console on the same log.
fn start_record(session: &str, until: i64) -> Record {
    let v = serde_json::json!({
        "seq": 0, "ts": "2026-12-01T00:00:00Z", "os_user": gpuplane::audit::os_user(), "identity": null,
        "host": "ops-2", "cluster": "sim", "action": "break-glass-start", "targets": [], "reason": "fire",
        "ticket": "INC-7", "params": {"until": until.to_string()}, "phase": "event", "result": null,
        "error": null, "break_glass": session, "op_id": session, "prev_hash": "", "hash": ""
    });
    serde_json::from_value(v).unwrap()
}

#[test]
fn an_open_session_of_the_same_operator_in_another_console_is_refused() {
    let mut a = app();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    a.ops_tx = Some(tx);
    a.wall_now = 1_000_000;
    a.audit = vec![start_record("other", 1_000_600)];
    typed(&mut a, ":breakglass INC-8 10 mine\r");
    assert!(a.break_glass.is_none());
    let m = message(&a);
    assert!(m.contains("INC-7 is already open") && m.contains("another console on ops-2"), "{m}");
    // Lapsed (that console died without an end record): no longer in the way.
    a.audit = vec![start_record("other", 999_000)];
    typed(&mut a, ":breakglass INC-8 10 mine\r");
    assert!(a.break_glass.is_some(), "{}", message(&a));
}

#[test]
fn break_glass_cannot_lift_read_only() {
    let mut a = app();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    a.ops_tx = Some(tx);
    a.readonly = true;
    a.wall_now = 1_000_000;
    typed(&mut a, ":breakglass INC-3 30 let me in\r");
    assert!(a.break_glass.is_none());
    assert!(rx.try_recv().is_err(), "nothing started, nothing recorded");
    let m = message(&a);
    assert!(m.contains("break-glass cannot lift read-only mode; no session was started"), "{m}");
    let screen = render(&mut a, 120, 30);
    assert!(screen.contains("READ-ONLY") && !screen.contains("BREAK-GLASS"), "{screen}");
    // A session already open when the console becomes read-only is not shown beside it.
    a.readonly = false;
    typed(&mut a, ":breakglass INC-3 30 fire\r");
    assert!(render(&mut a, 120, 30).contains("BREAK-GLASS"));
    a.readonly = true;
    let screen = render(&mut a, 120, 30);
    assert!(screen.contains("READ-ONLY") && !screen.contains("BREAK-GLASS"), "{screen}");
}

#[test]
fn switching_to_a_read_only_context_ends_break_glass() {
    let mut a = app();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let (ctx_tx, _ctx_rx) = tokio::sync::mpsc::unbounded_channel();
    a.ops_tx = Some(tx);
    a.kube_ctx = Some(gpuplane::tui::app::KubeContexts {
        tx: ctx_tx,
        names: vec!["dev".into(), "prod".into()],
        readonly: vec!["prod".into()],
        readonly_all: false,
    });
    a.wall_now = 1_000_000;
    typed(&mut a, ":breakglass INC-6 30 fire\r");
    let _ = rx.try_recv();
    typed(&mut a, ":ctx prod\r");
    assert!(a.readonly && a.break_glass.is_none());
    assert!(matches!(rx.try_recv(), Ok(OpMsg::BreakGlass(BreakGlassMsg::End { why, .. }))
        if why == "context prod is read-only"));
}

/// Through the ops task and the real log: the actions carry the session's ticket and id, a
/// console that goes away with a session open ends it on the record and signs the head, and
/// `audit tail` shows the tag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_under_break_glass_carry_ticket_and_session_and_every_start_has_an_end() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"));
    let ops = Ops { audit: log.clone(), readonly: false, cluster: "sim".into(), break_glass: None };
    let sim = Sim::new(SimConfig::default());
    let _ = sim.initial();
    let state = gpuplane::testing::state_after(SimConfig::default(), 0);
    let exec = SimExecutor::Direct { sim: Box::new(sim), user: "oncall".into() };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (ev_tx, mut ev_rx) = tokio::sync::mpsc::unbounded_channel();
    let planner = ops::start(ops, Box::new(exec), rx, ev_tx, None);
    let session = gpuplane::audit::BreakGlass { session: "bg-session-1".into(), ticket: "INC-4242".into() };
    tx.send(OpMsg::BreakGlass(BreakGlassMsg::Start {
        session: session.clone(),
        reason: "GPU node on fire".into(),
        minutes: 30,
        until: 2_000_000_000,
    }))
    .unwrap();
    let node = state.nodes.iter().find(|n| n.state.schedulable()).unwrap().name.to_string();
    let req = |ticket: Option<&str>| OpRequest {
        kind: ActionKind::Cordon,
        targets: vec![node.clone()],
        reason: "XID 79".into(),
        ticket: ticket.map(String::from),
        dry_run: true,
    };
    for ticket in [None, Some("CHG-1")] {
        let plan = ops::plan(&req(ticket), &state, planner.as_ref(), false).unwrap();
        tx.send(OpMsg::Run(OpJob {
            req: req(ticket),
            plan,
            break_glass: Some(session.clone()),
            op_id: None,
        }))
        .unwrap();
    }
    let mut done = 0;
    while done < 2 {
        match tokio::time::timeout(std::time::Duration::from_secs(10), ev_rx.recv()).await.unwrap() {
            Some(OpEvent::Done { result, .. }) => {
                result.unwrap();
                done += 1;
            }
            Some(_) => {}
            None => panic!("the ops task stopped"),
        }
    }
    drop(tx);
    ops::finish(std::time::Duration::from_secs(10)).await;
    let recs = log.read_all().unwrap();
    let actions: Vec<&Record> = recs.iter().filter(|r| r.action == "cordon").collect();
    assert_eq!(actions.len(), 4, "intent and outcome of each");
    for r in &actions {
        assert_eq!(r.break_glass.as_deref(), Some("bg-session-1"), "{r:?}");
    }
    // No ticket of its own: the session's. Its own ticket: kept, with the session's beside it.
    assert!(actions[..2].iter().all(|r| r.ticket.as_deref() == Some("INC-4242")));
    assert!(actions[2..].iter().all(|r| r.ticket.as_deref() == Some("CHG-1")
        && r.params.get("break_glass_ticket").map(String::as_str) == Some("INC-4242")));
    // The console went away with the session open: ended on the record, then the head signed.
    let n = recs.len();
    assert_eq!(recs[n - 2].action, "break-glass-end");
    assert_eq!(
        (recs[n - 2].op_id.as_str(), recs[n - 2].reason.as_deref(), recs[n - 2].ticket.as_deref()),
        ("bg-session-1", Some("the console closed"), Some("INC-4242"))
    );
    assert_eq!(recs[n - 1].phase, Phase::Checkpoint);
    assert!(gpuplane::audit::open_sessions(&recs).is_empty());

    let home = dir.path().join("home");
    let path = log.path.to_str().unwrap();
    let out = gpuplane_cmd(&home).args(["audit", "tail", "-n", "50", "--audit-log", path]).output().unwrap();
    let tail = String::from_utf8_lossy(&out.stdout);
    let tagged: Vec<&str> = tail.lines().filter(|l| l.contains("[BREAK-GLASS bg-sessi]")).collect();
    assert_eq!(tagged.len(), 6, "start, 4 action records, end:\n{tail}");
    assert!(tagged.iter().any(|l| l.contains("cordon") && l.contains("ticket=INC-4242")), "{tail}");
    assert!(!tail.lines().any(|l| l.contains("checkpoint") && l.contains("BREAK-GLASS")), "{tail}");
    let out = gpuplane_cmd(&home).args(["audit", "verify", path]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("chain intact") && !text.contains("warning"), "{text}");
}

#[test]
fn expiry_ends_the_session_on_the_record() {
    let mut a = app();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    a.ops_tx = Some(tx);
    a.wall_now = 1_000_000;
    typed(&mut a, ":breakglass INC-5 1 quick\r");
    let _ = rx.try_recv();
    a.wall_now += 61;
    a.update(Msg::Tick);
    assert!(a.break_glass.is_none());
    assert!(
        matches!(rx.try_recv(), Ok(OpMsg::BreakGlass(BreakGlassMsg::End { why, .. })) if why == "expired")
    );
}
