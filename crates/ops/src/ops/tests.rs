use super::*;
use crate::audit::{AuditLog, verify};
use crate::backend::sim::{Sim, SimConfig};
use crate::ops::ApplyOp;
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
    let p = plan(&r, &s, &*exec.planner(), false).unwrap();
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
    let p = plan(&r, &s, &*exec.planner(), false).unwrap();
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
        assert!(matches!(plan(&r, &s, &*exec.planner(), true), Err(OpError::ReadOnly(_))));
        // even a plan made elsewhere does not run
        let p = Plan {
            kind,
            steps: vec![],
            refused: vec![],
            confirm_word: None,
            guard: None,
            groups: vec![],
            notes: vec![],
        };
        assert!(matches!(ops.run(&r, &p, &mut exec, |_| {}).await, Err(OpError::ReadOnly(_))));
    }
    assert!(ops.audit.read_all().unwrap().is_empty());
}

#[tokio::test]
async fn a_reason_is_required() {
    let (_d, ops, mut exec, s) = setup();
    let mut r = req(ActionKind::Cordon, &[&busy_node(&s)]);
    r.reason = "  ".into();
    let p = plan(&r, &s, &*exec.planner(), false).unwrap();
    assert_eq!(ops.run(&r, &p, &mut exec, |_| {}).await, Err(OpError::NoReason));
    assert!(ops.audit.read_all().unwrap().is_empty());
}

#[test]
fn preflight_checks_target_state() {
    let (_d, _ops, exec, s) = setup();
    let node = busy_node(&s);
    let r = req(ActionKind::Resume, &[&node]);
    assert!(
        matches!(plan(&r, &s, &*exec.planner(), false), Err(OpError::Target(m)) if m.contains("in service already"))
    );
    let r = req(ActionKind::Drain, &["nope"]);
    assert!(
        matches!(plan(&r, &s, &*exec.planner(), false), Err(OpError::Target(m)) if m.contains("does not exist"))
    );
    let done = s.jobs.iter().find(|j| j.state == JobState::Completed).unwrap().id.to_string();
    let r = req(ActionKind::Cancel, &[&done]);
    assert!(
        matches!(plan(&r, &s, &*exec.planner(), false), Err(OpError::Target(m)) if m.contains("nothing to cancel"))
    );
    // bulk: type the count
    let two: Vec<String> =
        s.nodes.iter().filter(|n| n.state.schedulable()).take(2).map(|n| n.name.to_string()).collect();
    let r = req(ActionKind::Cordon, &[&two[0], &two[1]]);
    assert_eq!(plan(&r, &s, &*exec.planner(), false).unwrap().confirm_word.as_deref(), Some("2"));
}

#[tokio::test]
async fn dry_run_prints_the_plan_and_changes_nothing() {
    let (_d, ops, mut exec, s) = setup();
    let node = busy_node(&s);
    let mut r = req(ActionKind::Drain, &[&node]);
    r.dry_run = true;
    let p = plan(&r, &s, &*exec.planner(), false).unwrap();
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
    let p = plan(&r, &s, &*exec.planner(), false).unwrap();
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

/// The simulator answers like a scheduler: an unknown node is not found, a node already
/// draining is a conflict, a finished job has nothing to cancel; the results carry the typed
/// error and its text, and the audit outcome records the text and the kinds.
#[tokio::test]
async fn the_simulator_says_not_found_and_conflict_and_the_audit_keeps_the_text() {
    let (_d, ops, mut exec, s) = setup();
    let node = busy_node(&s);
    let r = req(ActionKind::Drain, &[&node]);
    let p = plan(&r, &s, &*exec.planner(), false).unwrap();
    ops.run(&r, &p, &mut exec, |_| {}).await.unwrap();
    // The console's picture is stale: the same plan again, and a node that is gone.
    let mut p2 = p.clone();
    p2.steps.push(Step { target: "gpu-999".into(), job: None, call: String::new(), affected: vec![] });
    let r2 = req(ActionKind::Drain, &[&node, "gpu-999"]);
    let out = ops.run(&r2, &p2, &mut exec, |_| {}).await.unwrap();
    let kinds: Vec<_> = out.results.iter().map(|t| t.error.as_ref().map(ActionError::kind)).collect();
    assert_eq!(kinds, [Some(ActionErrorKind::Conflict), Some(ActionErrorKind::NotFound)]);
    assert!(out.results[0].message.starts_with(&format!("already in that state: node {node} is draining")));
    assert!(out.results[1].message.contains("gpu-999 does not exist"), "{:?}", out.results[1]);
    let recs = ops.audit.read_all().unwrap();
    let last = recs.last().unwrap();
    assert_eq!(last.result.as_deref(), Some("failed"));
    assert!(last.error.as_deref().unwrap().contains("not found: node gpu-999 does not exist"), "{last:?}");
    assert_eq!(last.params["errors"], format!("{node}=conflict gpu-999=not-found"));
    // A job that ended: nothing to cancel, said by the simulator itself.
    let done = s.jobs.iter().find(|j| j.state == JobState::Completed).unwrap().id.to_string();
    let SimExecutor::Direct { sim, user } = &mut exec else { unreachable!() };
    let e = sim.apply_op(ActionKind::Cancel, &done, "x", &user.clone()).unwrap_err();
    assert_eq!(e.kind(), ActionErrorKind::Conflict, "{e}");
    let e = sim.apply_op(ActionKind::Uncordon, &node, "x", "alice").unwrap_err();
    assert!(matches!(&e, ActionError::Conflict { detail } if detail.contains("is not cordoned")), "{e:?}");
}

/// An executor that counts what the ops task asks of it.
struct Counting {
    executed: Arc<std::sync::Mutex<Vec<String>>>,
    refreshed: Arc<std::sync::atomic::AtomicUsize>,
    planner: Arc<dyn Planner>,
    /// The target the server refuses.
    refuse: String,
}

impl Executor for Counting {
    fn backend(&self) -> &str {
        "sim"
    }
    fn identity(&self) -> Option<String> {
        Some("sim:counting".into())
    }
    fn planner(&self) -> Arc<dyn Planner> {
        self.planner.clone()
    }
    fn execute<'a>(
        &'a mut self,
        kind: ActionKind,
        target: &'a str,
        _reason: &'a str,
    ) -> BoxFuture<'a, Result<String, ActionError>> {
        self.executed.lock().unwrap().push(format!("{} {target}", kind.label()));
        Box::pin(async move {
            if target == self.refuse {
                Err(ActionError::forbidden("User \"viewer\" cannot patch resource \"nodes\""))
            } else {
                Ok(format!("{target} cordoned"))
            }
        })
    }
    fn refresh(&self) {
        self.refreshed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The wiring the console uses: the ops task owns the one executor, the console gets that
/// executor's planner, a confirmed plan is executed by that executor, the owning backend is
/// asked to refresh once after the write, and the audit log is read back without blocking.
#[tokio::test]
async fn start_hands_the_console_the_executors_planner_and_runs_its_plans() {
    let (_d, ops, _exec, s) = setup();
    let executed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let refreshed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let own: Arc<dyn Planner> = Arc::new(SimPlanner::new("counting"));
    let two: Vec<String> =
        s.nodes.iter().filter(|n| n.state.schedulable()).take(2).map(|n| n.name.to_string()).collect();
    let exec = Counting {
        executed: executed.clone(),
        refreshed: refreshed.clone(),
        planner: own.clone(),
        refuse: two[1].clone(),
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (ev_tx, mut ev_rx) = tokio::sync::mpsc::unbounded_channel();
    let planner = start(ops.clone(), Box::new(exec), rx, ev_tx, None);
    assert!(Arc::ptr_eq(&planner, &own), "the console plans with the executor's own planner");
    let r = req(ActionKind::Cordon, &[&two[0], &two[1]]);
    let p = plan(&r, &s, planner.as_ref(), false).unwrap();
    // A dry run sends nothing: no refresh.
    let mut dry = r.clone();
    dry.dry_run = true;
    tx.send(OpMsg::Run(OpJob { req: dry, plan: p.clone(), break_glass: None, op_id: None })).unwrap();
    // A fleet plan's part arrives with the plan's op id: its records carry it.
    let op_id = Some("op-of-the-fleet-plan".to_string());
    tx.send(OpMsg::Run(OpJob { req: r, plan: p, break_glass: None, op_id: op_id.clone() })).unwrap();
    let mut done = Vec::new();
    while done.len() < 2 {
        match tokio::time::timeout(std::time::Duration::from_secs(10), ev_rx.recv()).await.unwrap().unwrap() {
            OpEvent::Done { result, .. } => done.push(result.unwrap()),
            _ => continue,
        }
    }
    assert_eq!(*executed.lock().unwrap(), [format!("cordon {}", two[0]), format!("cordon {}", two[1])]);
    assert_eq!(refreshed.load(std::sync::atomic::Ordering::SeqCst), 1, "one refresh, after the real run");
    let failed = &done[1].results[1];
    assert!(matches!(failed.error, Some(ActionError::Forbidden { .. })), "{failed:?}");
    // The audit snapshot after the run carries the outcome with the server's words.
    let recs = loop {
        match tokio::time::timeout(std::time::Duration::from_secs(10), ev_rx.recv()).await.unwrap().unwrap() {
            OpEvent::Audit(r) if r.len() == 4 => break r,
            _ => continue,
        }
    };
    let said = format!(r#"{}: forbidden: User "viewer" cannot patch"#, two[1]);
    assert!(recs[3].error.as_deref().unwrap().contains(&said), "{:?}", recs[3]);
    assert_eq!(done[1].op_id, "op-of-the-fleet-plan");
    assert!(recs[2..].iter().all(|r| Some(&r.op_id) == op_id.as_ref()), "{recs:?}");
    assert!(recs[0].op_id != recs[2].op_id, "the dry run had its own");
}

/// A job on more than one node whose nodes can all be drained.
fn multi_node_job(s: &crate::state::ClusterState) -> &crate::model::Job {
    s.jobs
        .iter()
        .find(|j| {
            j.state == JobState::Running
                && j.nodes.len() >= 2
                && j.nodes.iter().all(|n| s.node(n).is_some_and(|n| n.state.schedulable()))
        })
        .expect("a running multi-node job in the simulated cluster")
}

#[test]
fn a_job_on_several_drained_nodes_is_counted_once_with_its_total() {
    let (_d, _ops, exec, s) = setup();
    let j = multi_node_job(&s);
    let targets: Vec<&str> = j.nodes.iter().map(|n| n.as_str()).collect();
    let p = plan(&req(ActionKind::Drain, &targets), &s, &*exec.planner(), false).unwrap();
    let jobs = p.jobs();
    let mine = jobs.iter().find(|t| t.job == j.id).expect("the job is affected");
    assert_eq!(jobs.iter().filter(|t| t.job == j.id).count(), 1, "one entry per job");
    assert_eq!((mine.nodes, mine.job_nodes), (j.nodes.len() as u32, j.nodes.len() as u32));
    let on_its_nodes: u32 = j
        .nodes
        .iter()
        .filter_map(|n| s.node(n))
        .flat_map(|n| &n.gpus)
        .filter(|g| g.job == Some(j.id))
        .count() as u32;
    assert_eq!(mine.gpus, on_its_nodes);
    // The summary counts jobs, not (job, node) pairs.
    let others: std::collections::BTreeSet<JobId> =
        p.steps.iter().flat_map(|s| &s.affected).map(|a| a.job).collect();
    assert_eq!(
        p.summary(),
        format!("{} target(s); {} job(s) affected, {} GPUs", targets.len(), others.len(), p.affected_gpus())
    );
    let lines = p.lines();
    let once: Vec<&String> =
        lines.iter().filter(|l| l.contains(&format!("job {} ", j.id)) && l.contains("all its")).collect();
    assert_eq!(once.len(), 1, "{lines:#?}");
    assert!(
        once[0].contains(&format!("all its {on_its_nodes} GPUs on {} node(s)", j.nodes.len())),
        "{}",
        once[0]
    );
    // Part of it: the line says how much of the job the targets hold.
    let p = plan(&req(ActionKind::Drain, &targets[..1]), &s, &*exec.planner(), false).unwrap();
    let t = p.jobs().into_iter().find(|t| t.job == j.id).unwrap();
    assert_eq!((t.nodes, t.job_nodes), (1, j.nodes.len() as u32));
}

#[test]
fn a_batch_runs_on_the_rest_and_lists_every_refused_target() {
    let (_d, _ops, exec, s) = setup();
    let draining: Vec<&str> = s
        .nodes
        .iter()
        .filter(|n| matches!(n.state, NodeState::Draining | NodeState::Drained))
        .map(|n| n.name.as_str())
        .collect();
    let fine: Vec<&str> = s.nodes.iter().filter(|n| n.state.schedulable()).map(|n| n.name.as_str()).collect();
    assert!(!draining.is_empty() && fine.len() >= 11, "{draining:?} {fine:?}");
    let mut twelve: Vec<&str> = fine[..11].to_vec();
    twelve.insert(3, draining[0]);
    let r = req(ActionKind::Drain, &twelve);
    let p = plan_batch_as(&r, &s, &*exec.planner(), false, false).unwrap();
    assert_eq!(p.steps.len(), 11);
    assert!(p.steps.iter().all(|st| st.target != draining[0]));
    assert_eq!(p.refused.len(), 1);
    assert_eq!(p.refused[0].target, draining[0]);
    let label = s.node(draining[0]).unwrap().state.label();
    assert_eq!(
        p.refused_line().unwrap(),
        format!(
            "11 of 12 will run; 1 refused: node {} is draining or drained already ({label})",
            draining[0]
        )
    );
    assert_eq!(p.confirm_word.as_deref(), Some("11"), "the count that will run is typed");
    assert_eq!(p.lines().first(), p.refused_line().as_ref());
    // The strict plan (the command line) refuses the batch, naming the refused target.
    let e = plan(&r, &s, &*exec.planner(), false).unwrap_err().to_string();
    assert!(e.contains(draining[0]), "{e}");
    // Several refused: each named with its reason, in the body and in the strict error.
    let mut more = twelve.clone();
    more.push("no-such-node");
    let p = plan_batch_as(&req(ActionKind::Drain, &more), &s, &*exec.planner(), false, false).unwrap();
    assert_eq!(p.refused.len(), 2);
    assert!(p.refused_line().unwrap().starts_with("11 of 13 will run; 2 refused"));
    let body = p.body().join("\n");
    assert!(body.contains("node no-such-node does not exist") && body.contains(draining[0]), "{body}");
    let e = plan(&req(ActionKind::Drain, &more), &s, &*exec.planner(), false).unwrap_err().to_string();
    assert!(e.contains("no-such-node") && e.contains(draining[0]), "{e}");
    // Nothing left to run: refused whole, every reason given.
    let e = plan_batch_as(
        &req(ActionKind::Drain, &[draining[0], "no-such-node"]),
        &s,
        &*exec.planner(),
        false,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no-such-node") && e.contains(draining[0]), "{e}");
}

#[tokio::test]
async fn a_partial_batch_runs_only_what_was_planned_and_the_audit_names_the_refused() {
    let (_d, ops, mut exec, s) = setup();
    let fine = busy_node(&s);
    let r = req(ActionKind::Cordon, &[&fine, "no-such-node"]);
    let p = plan_batch_as(&r, &s, &*exec.planner(), false, false).unwrap();
    assert_eq!(p.steps.len(), 1);
    assert_eq!(p.confirm_word.as_deref(), Some(fine.as_str()), "a batch cut to one: its name is typed");
    let out = ops.run(&r, &p, &mut exec, |_| {}).await.unwrap();
    assert_eq!(out.results.len(), 1);
    let recs = ops.audit.read_all().unwrap();
    assert_eq!(recs[0].targets, vec![fine.clone()]);
    assert_eq!(recs[0].params.get("refused").map(String::as_str), Some("node no-such-node does not exist"));
}

/// Past a blast-radius limit: refused at preflight and again when run, nothing sent and
/// nothing recorded; under break-glass it runs, and the plan and the record name the limit.
#[tokio::test]
async fn a_plan_past_a_limit_needs_break_glass_and_the_record_names_it() {
    let (_d, ops, mut exec, s) = setup();
    let node = busy_node(&s);
    let r = req(ActionKind::Drain, &[&node]);
    let g = guard::Guard { max_out_nodes: Some(0), ..guard::Guard::default() };
    let mut p = plan(&r, &s, &*exec.planner(), false).unwrap();
    let e = guard_plan(&mut p, &s, &g, &[], false).unwrap_err();
    assert!(matches!(&e, OpError::Limits(l) if l[0].contains("max") || l[0].contains("at most")), "{e}");
    assert!(e.to_string().contains("start break-glass"), "{e}");
    // A plan carrying the exceeded limit does not run without break-glass.
    let e = ops.run(&r, &p, &mut exec, |_| {}).await.unwrap_err();
    assert!(matches!(e, OpError::Limits(_)), "{e}");
    assert!(ops.audit.read_all().unwrap().is_empty(), "nothing recorded, nothing sent");
    assert!(p.lines().iter().any(|l| l.contains("PAST 1 BLAST-RADIUS LIMIT")), "{:?}", p.lines());

    // Under break-glass.
    let mut p = plan(&r, &s, &*exec.planner(), false).unwrap();
    guard_plan(&mut p, &s, &g, &[], true).unwrap();
    assert_eq!(p.exceeded().len(), 1);
    let bg = Ops {
        break_glass: Some(crate::audit::BreakGlass { session: "bg-1".into(), ticket: "INC-9".into() }),
        ..ops.clone()
    };
    let out = bg.run(&r, &p, &mut exec, |_| {}).await.unwrap();
    assert!(out.results[0].ok, "{out:?}");
    let recs = ops.audit.read_all().unwrap();
    assert_eq!(recs.len(), 2);
    for rec in &recs {
        assert!(rec.params["limits_exceeded"].ends_with("max_out_nodes"), "{:?}", rec.params);
        assert_eq!(rec.break_glass.as_deref(), Some("bg-1"));
    }
}

/// The drains of the last hour are counted again from the audit log when the plan runs: a
/// drain sent by another console after the plan was shown counts.
#[tokio::test]
async fn drains_per_hour_are_counted_again_from_the_log_at_run_time() {
    let (_d, ops, mut exec, s) = setup();
    let mut idle = s.nodes.iter().filter(|n| n.state.schedulable()).map(|n| n.name.to_string());
    let (a, b) = (idle.next().unwrap(), idle.next().unwrap());
    let g =
        guard::Guard { max_drains_per_hour: Some(1), keep_last_healthy: Some(false), ..Default::default() };
    let ra = req(ActionKind::Drain, &[&a]);
    let rb = req(ActionKind::Drain, &[&b]);
    let mut pa = plan(&ra, &s, &*exec.planner(), false).unwrap();
    guard_plan(&mut pa, &s, &g, &[], false).unwrap();
    let mut pb = plan(&rb, &s, &*exec.planner(), false).unwrap();
    guard_plan(&mut pb, &s, &g, &[], false).unwrap();
    // Both were within the limit when planned; the first runs, the second is refused.
    ops.run(&ra, &pa, &mut exec, |_| {}).await.unwrap();
    let e = ops.run(&rb, &pb, &mut exec, |_| {}).await.unwrap_err();
    assert!(e.to_string().contains("1 in the last hour + 1 now = 2 (1 over)"), "{e}");
    assert_eq!(ops.audit.read_all().unwrap().len(), 2, "only the first drain is recorded");
}

/// What a drain does to a running job, as each scheduler does it.
#[test]
fn a_drain_says_what_happens_to_each_job_per_scheduler() {
    crate::clock::pin_zone(Some(jiff::tz::TimeZone::UTC));
    let s = state_after(crate::backend::sim::SimConfig::default(), 5);
    let mut j = s.jobs.iter().find(|j| j.state == JobState::Running).unwrap().clone();
    let now = 1_000_000_000;
    j.end = Some(now + 5 * 3600);
    let f = fate("slurm", &j, now);
    assert!(f.starts_with("waited for, ends ~") && f.contains("UTC") && f.ends_with("(in 5h00m)"), "{f}");
    j.end = None;
    assert_eq!(fate("slurm", &j, now), "waited for (no end time known)");
    assert!(
        fate("kube", &j, now).contains("evicted") && fate("kube", &j, now).contains("PodDisruptionBudget")
    );
    assert_eq!(fate("sim", &j, now), "");
}
