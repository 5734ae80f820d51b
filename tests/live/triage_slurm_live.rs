//! The incident lifecycle against the real Slurm 24.11 of the test command: a drain sent
//! through the audited road with a ticket makes the node's incident mitigated with that ticket,
//! and a drain someone else set with scontrol shows who set it and why (Slurm's
//! `reason_set_by_user`).
//!
//! Behind the `live` feature; without the Slurm test cluster (GPUPLANE_TEST_SLURM24_*) it
//! fails, never passes.

use crate::slurm_support;

use crate::slurm_support::{read, slurm24};
use gpuplane::audit::AuditLog;
use gpuplane::model::alert::{Alert, AlertSnapshot, AlertState};
use gpuplane::model::protocol::Update;
use gpuplane::model::{Handling, NodeState};
use gpuplane::ops::{ActionKind, Executor, OpRequest, Ops, SlurmExecutor, plan};
use gpuplane::state::{ClusterState, Incident, Lifecycle, actions_from_audit};
use std::time::Duration;

/// A firing alert about each of `nodes` (as Alertmanager would report them), so each node has
/// an incident.
fn alert_on(s: &mut ClusterState, nodes: &[&str]) {
    let alert = |node: &str| Alert {
        fingerprint: format!("fp-{node}").into(),
        name: "GpuFellOffTheBus".into(),
        state: AlertState::Active,
        silenced_by: vec![],
        inhibited_by: vec![],
        labels: [("node".into(), node.into()), ("severity".into(), "critical".into())].into_iter().collect(),
        annotations: Default::default(),
        starts_at: s.now - 600,
        ends_at: None,
        generator_url: None,
    };
    let at = s.now;
    let alerts = nodes.iter().map(|n| alert(n)).collect();
    s.apply(Update::Alerts(Box::new(AlertSnapshot { source: "am".into(), at, alerts, silences: vec![] })));
}

fn incident<'a>(s: &'a ClusterState, node: &str) -> &'a Incident {
    s.incidents
        .iter()
        .find(|i| i.subject == node && i.signal == "alert:GpuFellOffTheBus")
        .unwrap_or_else(|| panic!("no incident on {node}: {:#?}", s.incidents))
}

/// Slurm applies state changes asynchronously: read until `node` shows `want` (up to 20 s).
async fn read_until(c: &slurm_support::Cluster, node: &str, want: fn(NodeState) -> bool) -> ClusterState {
    for _ in 0..40 {
        let s = read(c).await;
        if s.node(node).is_some_and(|n| want(n.state)) {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("{node} did not reach the expected state");
}

fn out_of_service(st: NodeState) -> bool {
    matches!(st, NodeState::Draining | NodeState::Drained)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm24_a_ticketed_drain_mitigates_and_a_drain_by_someone_else_says_who() {
    let (c, _g) = slurm24().await;
    let s = read(&c).await;
    let idle: Vec<String> =
        s.nodes.iter().filter(|n| n.state == NodeState::Idle).map(|n| n.name.to_string()).take(2).collect();
    assert_eq!(idle.len(), 2, "two idle nodes");
    let (ours, theirs) = (idle[0].clone(), idle[1].clone());
    let cluster = s.cluster.to_string();

    // Open before anyone acts.
    let mut s0 = s.clone();
    alert_on(&mut s0, &[&ours]);
    assert_eq!(incident(&s0, &ours).lifecycle, Lifecycle::Open);

    // gpuplane drains it with a ticket, through the audited road.
    let mut admin_cfg = c.config(&c.admin_jwt).client;
    admin_cfg.user = None;
    let mut exec = SlurmExecutor::new(&admin_cfg).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ops = Ops {
        audit: AuditLog::new(dir.path().join("audit.jsonl")),
        readonly: false,
        // As the console records it: the slurmrestd URL, not the scheduler's cluster name.
        cluster: c.url.clone(),
        break_glass: None,
    };
    let r = OpRequest {
        kind: ActionKind::Drain,
        targets: vec![ours.clone()],
        reason: "XID 79 GPU fell off the bus".into(),
        ticket: Some("INC-4242".into()),
        dry_run: false,
    };
    let p = plan(&r, &s, &*exec.planner(), false).unwrap();
    let out = ops.run(&r, &p, &mut exec, |_| {}).await.unwrap();
    assert!(out.results[0].ok, "{out:?}");

    // Someone else drains another node with scontrol (as root, like a health checker).
    let sc = c.cli(&[
        "scontrol",
        "update",
        &format!("nodename={theirs}"),
        "state=drain",
        "reason=healthcheck: IB port down",
    ]);
    assert!(!sc.to_lowercase().contains("error"), "{sc}");

    read_until(&c, &ours, out_of_service).await;
    let mut s = read_until(&c, &theirs, out_of_service).await;
    alert_on(&mut s, &[&ours, &theirs]);
    let records = ops.audit.read_all().unwrap();
    s.apply(Update::Handling(Box::new(Handling {
        acks: vec![],
        actions: actions_from_audit(&records, &[&cluster, &c.url]),
    })));

    let mine = incident(&s, &ours);
    assert_eq!(mine.lifecycle.label(), "mitigated", "{mine:#?}");
    assert_eq!(mine.lifecycle.ticket(), Some("INC-4242"));
    let how = mine.lifecycle.phrase(s.now);
    assert!(how.starts_with("drained by ") && how.contains(" INC-4242 "), "{how}");
    assert!(matches!(mine.lifecycle, Lifecycle::Mitigated { audited: true, .. }));

    let other = incident(&s, &theirs);
    assert!(matches!(other.lifecycle, Lifecycle::Mitigated { audited: false, .. }), "{other:#?}");
    let how = other.lifecycle.phrase(s.now);
    assert!(how.contains(" by root") && how.ends_with(": healthcheck: IB port down"), "{how}");
    assert_eq!(other.lifecycle.ticket(), None);

    // Both are handled: they sort after every unhandled incident.
    let first_handled = s.incidents.iter().position(|i| i.lifecycle.handled()).unwrap();
    assert!(s.incidents[first_handled..].iter().all(|i| i.lifecycle.handled()));

    for n in [&ours, &theirs] {
        c.cli(&["scontrol", "update", &format!("nodename={n}"), "state=resume"]);
    }
    read_until(&c, &ours, |st| !out_of_service(st)).await;
    read_until(&c, &theirs, |st| !out_of_service(st)).await;
}
