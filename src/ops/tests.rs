use super::*;
use crate::audit::{AuditLog, verify};
use crate::backend::sim::{Sim, SimConfig};
use crate::testing::state_after;

fn setup() -> (tempfile::TempDir, Ops, SimExecutor, crate::state::ClusterState) {
    let dir = tempfile::tempdir().unwrap();
    let ops = Ops {
        audit: AuditLog::new(dir.path().join("audit.jsonl")),
        readonly: false,
        cluster: "sim".into(),
        break_glass: None,
    };
    let mut sim = Sim::new(SimConfig::default());
    let _ = sim.initial();
    for _ in 0..5 {
        sim.tick();
    }
    let exec = SimExecutor::Direct { sim: Box::new(sim), user: "alice".into() };
    (dir, ops, exec, state_after(SimConfig::default(), 5))
}

fn req(kind: ActionKind, targets: &[&str]) -> OpRequest {
    OpRequest {
        kind,
        targets: targets.iter().map(|t| t.to_string()).collect(),
        reason: "RMA".into(),
        ticket: Some("INC-1".into()),
        dry_run: false,
    }
}

fn busy_node(s: &crate::state::ClusterState) -> String {
    s.nodes.iter().find(|n| n.state == NodeState::Allocated).unwrap().name.to_string()
}

#[tokio::test]
async fn drain_plans_the_jobs_it_affects_and_is_audited_before_and_after() {
    let (_d, ops, mut exec, s) = setup();
    let node = busy_node(&s);
    let r = req(ActionKind::Drain, &[&node]);
    let p = plan(&r, &s, &exec, false).unwrap();
    assert_eq!(p.confirm_word.as_deref(), Some(node.as_str()), "destructive: type the name");
    assert_eq!(p.affected_gpus(), 8, "an allocated node's 8 GPUs are affected");
    let mut seen = Vec::new();
    let out = ops.run(&r, &p, &mut exec, |t| seen.push(t.clone())).await.unwrap();
    assert!(out.results.iter().all(|t| t.ok), "{out:?}");
    assert_eq!(seen.len(), 1);
    let SimExecutor::Direct { sim, .. } = &exec else { unreachable!() };
    assert_eq!(sim.node_state(&node), Some(NodeState::Draining));
    let recs = ops.audit.read_all().unwrap();
    assert_eq!(recs.len(), 2);
    assert_eq!((recs[0].phase, recs[1].phase), (Phase::Intent, Phase::Outcome));
    assert_eq!(recs[1].result.as_deref(), Some("ok"));
    assert_eq!(recs[0].op_id, recs[1].op_id);
    assert_eq!(recs[0].ticket.as_deref(), Some("INC-1"));
    assert!(verify(&ops.audit.path).unwrap().problem.is_none());
}

#[tokio::test]
async fn an_unwritable_audit_log_refuses_and_nothing_is_sent() {
    let (d, mut ops, mut exec, s) = setup();
    std::fs::write(d.path().join("file"), "x").unwrap();
    ops.audit = AuditLog::new(d.path().join("file").join("audit.jsonl"));
    let node = busy_node(&s);
    let r = req(ActionKind::Cordon, &[&node]);
    let p = plan(&r, &s, &exec, false).unwrap();
    let err = ops.run(&r, &p, &mut exec, |_| {}).await.unwrap_err();
    assert!(matches!(err, OpError::AuditFailed(_)), "{err}");
    let SimExecutor::Direct { sim, .. } = &exec else { unreachable!() };
    assert_eq!(sim.node_state(&node), Some(NodeState::Allocated), "the node was not touched");
}

#[tokio::test]
async fn read_only_mode_blocks_every_action() {
    let (_d, mut ops, mut exec, s) = setup();
    ops.readonly = true;
    let node = busy_node(&s);
    let job = s.jobs.iter().find(|j| j.state == JobState::Running).unwrap().id.to_string();
    for (kind, target) in [
        (ActionKind::Cordon, node.as_str()),
        (ActionKind::Uncordon, node.as_str()),
        (ActionKind::Drain, node.as_str()),
        (ActionKind::Resume, node.as_str()),
        (ActionKind::Cancel, job.as_str()),
    ] {
        let r = req(kind, &[target]);
        assert!(matches!(plan(&r, &s, &exec, true), Err(OpError::ReadOnly(_))));
        // even a plan made elsewhere does not run
        let p = Plan { kind, steps: vec![], confirm_word: None };
        assert!(matches!(ops.run(&r, &p, &mut exec, |_| {}).await, Err(OpError::ReadOnly(_))));
    }
    assert!(ops.audit.read_all().unwrap().is_empty());
}

#[tokio::test]
async fn a_reason_is_required() {
    let (_d, ops, mut exec, s) = setup();
    let mut r = req(ActionKind::Cordon, &[&busy_node(&s)]);
    r.reason = "  ".into();
    let p = plan(&r, &s, &exec, false).unwrap();
    assert_eq!(ops.run(&r, &p, &mut exec, |_| {}).await, Err(OpError::NoReason));
    assert!(ops.audit.read_all().unwrap().is_empty());
}

#[test]
fn preflight_checks_target_state() {
    let (_d, _ops, exec, s) = setup();
    let node = busy_node(&s);
    let r = req(ActionKind::Resume, &[&node]);
    assert!(
        matches!(plan(&r, &s, &exec, false), Err(OpError::Target(m)) if m.contains("in service already"))
    );
    let r = req(ActionKind::Drain, &["nope"]);
    assert!(matches!(plan(&r, &s, &exec, false), Err(OpError::Target(m)) if m.contains("does not exist")));
    let done = s.jobs.iter().find(|j| j.state == JobState::Completed).unwrap().id.to_string();
    let r = req(ActionKind::Cancel, &[&done]);
    assert!(matches!(plan(&r, &s, &exec, false), Err(OpError::Target(m)) if m.contains("nothing to cancel")));
    // bulk: type the count
    let two: Vec<String> =
        s.nodes.iter().filter(|n| n.state.schedulable()).take(2).map(|n| n.name.to_string()).collect();
    let r = req(ActionKind::Cordon, &[&two[0], &two[1]]);
    assert_eq!(plan(&r, &s, &exec, false).unwrap().confirm_word.as_deref(), Some("2"));
}

#[tokio::test]
async fn dry_run_prints_the_plan_and_changes_nothing() {
    let (_d, ops, mut exec, s) = setup();
    let node = busy_node(&s);
    let mut r = req(ActionKind::Drain, &[&node]);
    r.dry_run = true;
    let p = plan(&r, &s, &exec, false).unwrap();
    assert!(p.lines().iter().any(|l| l.contains("drain") && l.contains(&node)));
    let out = ops.run(&r, &p, &mut exec, |_| {}).await.unwrap();
    assert!(out.dry_run && out.results.is_empty());
    let SimExecutor::Direct { sim, .. } = &exec else { unreachable!() };
    assert_eq!(sim.node_state(&node), Some(NodeState::Allocated));
    assert_eq!(ops.audit.read_all().unwrap()[1].result.as_deref(), Some("dry-run"));
}

#[tokio::test]
async fn cancel_frees_the_gpus_in_the_simulator() {
    let (_d, ops, mut exec, s) = setup();
    let job = s.jobs.iter().find(|j| j.state == JobState::Running && j.gpus >= 8).unwrap().clone();
    let r = req(ActionKind::Cancel, &[&job.id.to_string()]);
    let p = plan(&r, &s, &exec, false).unwrap();
    assert_eq!(p.affected_gpus(), job.gpus);
    ops.run(&r, &p, &mut exec, |_| {}).await.unwrap();
    let SimExecutor::Direct { sim, .. } = &mut exec else { unreachable!() };
    let mut st = crate::state::ClusterState::default();
    for u in sim.initial() {
        st.apply(u);
    }
    assert_eq!(st.job(job.id).unwrap().state, JobState::Cancelled);
    assert!(st.nodes.iter().flat_map(|n| &n.gpus).all(|g| g.job != Some(job.id)));
}
