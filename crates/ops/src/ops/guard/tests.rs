use super::*;
use crate::backend::sim::SimConfig;
use crate::testing::state_after;

/// A simulated cluster with every node idle: the first four in pool `small`, the rest in `big`.
fn cluster() -> ClusterState {
    let mut s = state_after(SimConfig::default(), 1);
    for (i, n) in s.nodes.iter_mut().enumerate() {
        n.state = NodeState::Idle;
        n.pool = if i < 4 { "small".into() } else { "big".into() };
    }
    s
}

fn names(s: &ClusterState, pool: &str, k: usize) -> Vec<String> {
    s.nodes.iter().filter(|n| n.pool.as_str() == pool).take(k).map(|n| n.name.to_string()).collect()
}

fn limits(e: &[Exceeded]) -> Vec<(&str, &str)> {
    e.iter().map(|e| (e.scope.as_str(), e.limit)).collect()
}

#[test]
fn max_out_nodes_counts_what_is_out_already() {
    let mut s = cluster();
    let big = names(&s, "big", 3);
    let g = Guard { max_out_nodes: Some(2), ..Guard::default() };
    assert!(check(ActionKind::Drain, &big[..2], &s, &g, &[]).is_empty());
    let e = check(ActionKind::Drain, &big, &s, &g, &[]);
    assert_eq!(limits(&e), [(format!("cluster {}", s.cluster).as_str(), "max_out_nodes")]);
    assert!(e[0].message.contains("0 out + 3 now = 3 (1 over)"), "{}", e[0].message);
    // A node down already counts; a target out of service already adds nothing.
    let i = s.node_index(&big[2]).unwrap();
    s.nodes[i].state = NodeState::Down;
    let e = check(ActionKind::Cordon, &big, &s, &g, &[]);
    assert!(e[0].message.contains("1 out + 2 now = 3 (1 over)"), "{}", e[0].message);
    // Actions that bring nodes back are never limited.
    assert!(check(ActionKind::Resume, &big, &s, &g, &[]).is_empty());
}

#[test]
fn max_out_percent_per_pool() {
    let s = cluster();
    let mut g = Guard::default();
    g.pools.insert("small".into(), Limits { max_out_percent: Some(50.0), ..Limits::default() });
    let small = names(&s, "small", 3);
    // 2 of 4 is 50 %: allowed; 3 is 75 %.
    assert!(check(ActionKind::Drain, &small[..2], &s, &g, &[]).is_empty());
    let e = check(ActionKind::Drain, &small, &s, &g, &[]);
    assert_eq!(limits(&e), [("pool small", "max_out_percent")]);
    assert!(e[0].message.contains("(2 of 4 nodes)") && e[0].message.contains("1 over"), "{}", e[0].message);
    // The pool limit does not reach the other pool.
    assert!(check(ActionKind::Drain, &names(&s, "big", 6), &s, &g, &[]).is_empty());
}

#[test]
fn never_the_last_healthy_node_of_a_pool() {
    let mut s = cluster();
    let small = names(&s, "small", 4);
    assert!(check(ActionKind::Drain, &small, &s, &Guard::default(), &[]).is_empty(), "off by default");
    let g = Guard { keep_last_healthy: Some(true), ..Guard::default() };
    // All four at once: none would be left.
    let e = check(ActionKind::Drain, &small, &s, &g, &[]);
    assert_eq!(limits(&e), [("pool small", "keep_last_healthy")]);
    // Three out already: the fourth is the last.
    for t in &small[..3] {
        let i = s.node_index(t).unwrap();
        s.nodes[i].state = NodeState::Drained;
    }
    let e = check(ActionKind::Cordon, &small[3..], &s, &g, &[]);
    assert_eq!(limits(&e), [("pool small", "keep_last_healthy")]);
    assert!(e[0].message.contains("1 of its 1 healthy"), "{}", e[0].message);
    // Turned off for the pool.
    let mut off = g.clone();
    off.pools.insert("small".into(), Limits { keep_last_healthy: Some(false), ..Limits::default() });
    assert!(check(ActionKind::Cordon, &small[3..], &s, &off, &[]).is_empty());
}

#[test]
fn drains_per_hour_count_the_audit_log() {
    let s = cluster();
    let big = names(&s, "big", 2);
    let g = Guard { max_drains_per_hour: Some(3), ..Guard::default() };
    let before = vec!["x1".to_string(), "x2".to_string()];
    assert!(check(ActionKind::Drain, &big[..1], &s, &g, &before).is_empty());
    let e = check(ActionKind::Drain, &big, &s, &g, &before);
    assert_eq!(limits(&e), [(format!("cluster {}", s.cluster).as_str(), "max_drains_per_hour")]);
    assert!(e[0].message.contains("2 in the last hour + 2 now = 4 (1 over)"), "{}", e[0].message);
    // Cordons are not drains.
    assert!(check(ActionKind::Cordon, &big, &s, &g, &before).is_empty());
}

fn record(action: &str, cluster: &str, ts: &str, targets: &[&str], phase: crate::audit::Phase) -> Record {
    Record {
        seq: 0,
        ts: ts.into(),
        os_user: "op".into(),
        identity: None,
        host: "h".into(),
        cluster: cluster.into(),
        action: action.into(),
        targets: targets.iter().map(|t| t.to_string()).collect(),
        reason: None,
        ticket: None,
        params: BTreeMap::new(),
        phase,
        result: None,
        error: None,
        break_glass: None,
        op_id: "x".into(),
        prev_hash: String::new(),
        hash: String::new(),
    }
}

#[test]
fn drains_in_window_reads_intents_of_the_last_hour_on_this_cluster() {
    use crate::audit::Phase::{Intent, Outcome};
    let now: jiff::Timestamp = "2026-12-01T12:00:00Z".parse().unwrap();
    let mut dry = record("drain", "c1", "2026-12-01T11:50:00Z", &["d"], Intent);
    dry.params.insert("dry_run".into(), "true".into());
    let recs = vec![
        record("drain", "c1", "2026-12-01T10:59:00Z", &["old"], Intent),
        record("drain", "c1", "2026-12-01T11:30:00Z", &["a", "b"], Intent),
        record("drain", "c1", "2026-12-01T11:30:01Z", &["a", "b"], Outcome),
        record("drain", "c2", "2026-12-01T11:40:00Z", &["other"], Intent),
        record("cordon", "c1", "2026-12-01T11:45:00Z", &["c"], Intent),
        dry,
        record("drain", "c1", "not a time", &["bad"], Intent),
    ];
    assert_eq!(drains_in_window(&recs, "c1", now.as_second()), ["a", "b"]);
}

#[test]
fn config_per_cluster_replaces_the_common_section() {
    let c: GuardConfig = toml::from_str(
        "max_out_nodes = 4\n[pools.a100]\nmax_out_percent = 25\n[clusters.lab]\nmax_drains_per_hour = 1\n",
    )
    .unwrap();
    assert_eq!(c.for_cluster("prod").max_out_nodes, Some(4));
    assert_eq!(c.for_cluster("prod").pools["a100"].max_out_percent, Some(25.0));
    assert_eq!(c.for_cluster("lab").max_out_nodes, None);
    assert_eq!(c.for_cluster("lab").max_drains_per_hour, Some(1));
    assert!(toml::from_str::<GuardConfig>("max_out = 1").is_err(), "unknown keys are refused");
    let bad: GuardConfig = toml::from_str("max_out_percent = 150").unwrap();
    assert_eq!(bad.problems().len(), 1);
}
