//! The timeline end to end: the simulator's cluster goes through transitions (a drain with its
//! reason and who set it, a failed job), the state turns them into events, two writers put
//! them in one journal without duplicates, an action goes through the real ops road
//! (`gpuplane drain`, audited), and `gpuplane timeline` prints the postmortem skeleton and the
//! machine records; in the console, `:timeline node=… since=…` filters the view.

use crate::common;

use gpuplane::backend::sim::{Sim, SimConfig};
use gpuplane::model::protocol::{Inventory, Update};
use gpuplane::model::timeline::{Event, EventKind};
use gpuplane::model::{JobState, NodeReason, NodeState};
use gpuplane::state::ClusterState;
use gpuplane::store::timeline::{Journal, Query};

/// A simulated cluster that started `ago` seconds before now (wall clock), 30 ticks in.
fn cluster(ago: i64) -> (Sim, ClusterState) {
    let now = jiff::Timestamp::now().as_second();
    let mut sim = Sim::new(SimConfig { nodes: 8, start: now - ago, ..SimConfig::default() });
    let mut s = ClusterState::new(Default::default(), Default::default());
    for u in sim.initial() {
        s.apply(u);
    }
    for _ in 0..30 {
        s.apply(sim.tick());
    }
    (sim, s)
}

fn relist(
    s: &mut ClusterState,
    at: i64,
    f: impl FnOnce(&mut Vec<gpuplane::model::Node>, &mut Vec<gpuplane::model::Job>),
) {
    let (mut nodes, mut jobs) = (s.nodes.clone(), s.jobs.clone());
    f(&mut nodes, &mut jobs);
    s.apply(Update::Inventory {
        at,
        inventory: Box::new(Inventory {
            source: "sim".into(),
            cluster: Some(s.cluster.clone()),
            nodes: Some(nodes),
            jobs: Some(jobs),
            ..Default::default()
        }),
    });
}

#[test]
fn transitions_reach_the_journal_once_and_the_postmortem() {
    let home = tempfile::tempdir().unwrap();
    let journal = home.path().join("timeline.sqlite");
    let ledger_dir = home.path().join("ledger");
    let log = home.path().join("audit.jsonl");
    let cfg = home.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "audit_log = {:?}\n[timeline]\npath = {:?}\n[ledger]\ndir = {:?}\n",
            log.display().to_string(),
            journal.display().to_string(),
            ledger_dir.display().to_string()
        ),
    )
    .unwrap();
    let (_sim, mut s) = cluster(1_800);
    // The usage ledger sees the cluster before and after (GPU-hours lost come from it).
    let ledger_path = gpuplane::store::ledger::path_for(&ledger_dir, &s.cluster);
    let mut ledger = gpuplane::store::Ledger::open(&ledger_path).unwrap();
    let mut tracker = gpuplane::cost::track::Tracker::default();
    ledger.record(&[tracker.observe(&s).expect("a first observation")]).unwrap();

    // What the console's first look already saw goes to the journal.
    let (first, _) = s.timeline.take_unsent();
    let t0 = s.now;
    let node = s.nodes[2].name.to_string();
    let victim = s.jobs.iter().find(|j| j.state == JobState::Running).map(|j| j.id).expect("a running job");
    relist(&mut s, t0 + 90, |nodes, jobs| {
        nodes[2].state = NodeState::Draining;
        nodes[2].reason =
            Some(NodeReason { text: "XID 79 INC-4242".into(), by: "oncall".into(), at: t0 + 80 });
        let j = jobs.iter_mut().find(|j| j.id == victim).unwrap();
        j.state = JobState::Failed;
        j.end = Some(t0 + 85);
        j.exit_reason = Some("NodeFail on the drained node".into());
    });
    relist(&mut s, t0 + 200, |nodes, _| nodes[2].state = NodeState::Drained);
    ledger.record(&[tracker.observe(&s).expect("a second observation")]).unwrap();
    let (seen, _) = s.timeline.take_unsent();
    let drain = seen
        .iter()
        .find(|e| e.kind == EventKind::NodeState && e.subject == node && e.what.contains("draining"))
        .expect("the drain is an event");
    assert_eq!((drain.at, drain.who.as_deref()), (t0 + 80, Some("oncall")), "{drain:?}");
    assert!(seen.iter().any(|e| e.kind == EventKind::JobFailed && e.job == Some(victim)));
    assert!(seen.iter().any(|e| e.kind == EventKind::NodeState && e.what.contains("draining → drained")));

    // Two consoles on one data dir: the second saw everything a few seconds later.
    let all: Vec<Event> = first.into_iter().chain(seen).collect();
    let mut a = Journal::open(&journal).unwrap();
    let mut b = Journal::open(&journal).unwrap();
    let added = a.record(&all).unwrap();
    // Distinct but for a change seen twice within the window without a source time (a
    // simulated node going down twice in ten minutes).
    let keys: std::collections::HashSet<(&str, &str)> =
        all.iter().map(|e| (e.cluster.as_str(), e.dedupe.as_str())).collect();
    assert!(added >= keys.len() && added <= all.len(), "{added} of {} ({} keys)", all.len(), keys.len());
    for e in all.iter().filter(|e| !e.dedupe.contains('>')) {
        let n = all.iter().filter(|x| x.dedupe == e.dedupe).count();
        assert_eq!(n, 1, "a dated change is seen once: {e:?}");
    }
    let later: Vec<Event> = all
        .iter()
        .map(|e| if e.dedupe.contains('>') { Event { at: e.at + 4, ..e.clone() } } else { e.clone() })
        .collect();
    assert_eq!(b.record(&later).unwrap(), 0, "the second console adds nothing");
    assert_eq!(a.count().unwrap() as usize, added);
    let on_node =
        a.query(&Query { from: 0, to: i64::MAX, node: Some(node.clone()), ..Default::default() }).unwrap();
    assert!(on_node.iter().all(|e| e.node.as_deref() == Some(node.as_str())) && on_node.len() >= 2);

    // An action through the real ops road (audited), with no console running.
    let run = |args: &[&str]| {
        let out = common::gpuplane_cmd(home.path())
            .arg("--config")
            .arg(&cfg)
            .args(args)
            .env("USER", "oncall")
            .output()
            .expect("run gpuplane");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (rc, out, err) = run(&["drain", "gpu-005", "-r", "IB flaps", "-t", "INC-7", "--yes"]);
    assert_eq!(rc, Some(0), "{out}{err}");
    // The state change the drain caused, as a console would have journaled it: the scheduler's
    // account (`root`) set the reason, at the time the audit log gives the drain.
    let outcome = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|r| r["action"] == "drain" && r["phase"] == "outcome")
        .expect("the drain's outcome in the audit log");
    let drained_at = outcome["ts"].as_str().unwrap().parse::<jiff::Timestamp>().unwrap().as_second();
    a.record(&[Event {
        cluster: s.cluster.to_string(),
        at: drained_at,
        kind: EventKind::NodeState,
        subject_kind: gpuplane::model::timeline::SubjectKind::Node,
        subject: "gpu-005".into(),
        node: Some("gpu-005".into()),
        job: None,
        team: None,
        what: "idle → draining: INC-7: IB flaps (by root)".into(),
        who: Some("root".into()),
        gpus: 8,
        dedupe: format!("node-state:gpu-005:draining:{drained_at}"),
    }])
    .unwrap();

    let (rc, md, err) = run(&["timeline", "--since", "2h", "-o", "markdown"]);
    assert_eq!(rc, Some(0), "{err}");
    for h in [
        "# Postmortem draft",
        "## Summary",
        "## What happened when",
        "## Who did what",
        "## GPU-hours lost",
        "## Open questions",
    ] {
        assert!(md.contains(h), "{h}:\n{md}");
    }
    assert!(
        md.contains(&format!("| {node} | idle → draining: XID 79 INC-4242 (by oncall) | oncall |"))
            || md.contains("→ draining: XID 79 INC-4242 (by oncall) | oncall |"),
        "{md}"
    );
    assert!(md.contains("drain gpu-005 ok [INC-7]: IB flaps"), "the CLI's audited drain is an action:\n{md}");
    // Who: the operator (the OS user that ran it), not the backend's identity (`sim:oncall`).
    assert!(md.contains("drain gpu-005 ok [INC-7]: IB flaps | oncall |"), "{md}");
    assert!(!md.contains("sim:oncall"), "{md}");
    // The state change the drain caused is the operator's too, not the scheduler's account.
    assert!(md.contains("| oncall | set gpu-005 idle → draining"), "{md}");
    // A document meant for sharing names no local path.
    let home_path = home.path().display().to_string();
    assert!(!md.contains(&home_path), "an absolute local path in the postmortem:\n{md}");
    assert!(md.contains(&format!("{node} was last seen drained")), "{md}");
    let lost = md.lines().find(|l| l.starts_with(&format!("| {} |", s.cluster))).expect("a GPU-hours row");
    assert!(lost.contains("usage ledger") && !lost.contains("unknown"), "{lost}");
    assert!(lost.contains(" jobs)"), "{lost}");
    // The node's own postmortem: its events only; per-node capacity is unknown, said so.
    let (rc, md, _) = run(&["timeline", "--since", "2h", "--node", &node, "-o", "markdown"]);
    assert_eq!(rc, Some(0));
    assert!(md.contains(&format!("node {node}")) && !md.contains("gpu-005 ok"), "{md}");
    assert!(md.contains("| unknown | unknown |"), "{md}");

    // JSON: every field documented in docs/get.md's `timeline` section; CSV has the same.
    // One fixed window for both (the clock moves between runs).
    let now = jiff::Timestamp::now();
    let (since, until) = ((now - jiff::SignedDuration::from_hours(2)).to_string(), now.to_string());
    let (rc, json, err) = run(&["timeline", "--since", &since, "--until", &until, "-o", "json"]);
    assert_eq!(rc, Some(0), "{err}");
    let rows: Vec<serde_json::Map<String, serde_json::Value>> = serde_json::from_str(&json).unwrap();
    let has = |kind: &str, subject: &str| rows.iter().any(|r| r["kind"] == kind && r["subject"] == subject);
    assert!(
        has("node-state", &node) && has("job-failed", &victim.to_string()) && has("action", "gpu-005"),
        "{json}"
    );
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/get.md")).unwrap();
    let section =
        doc.split("## `timeline`").nth(1).expect("a timeline section").split("\n## ").next().unwrap();
    for r in &rows {
        for k in r.keys() {
            assert!(section.contains(&format!("`{k}`")), "{k} is not documented in docs/get.md");
        }
        assert!(r["at"].as_str().is_some_and(|t| t.ends_with('Z')) && r["at_unix"].is_i64(), "{r:?}");
    }
    // Identity first: cluster, time, kind, subject (the text, as the map sorts its keys).
    let first = json.split('}').next().unwrap();
    let pos = |k: &str| first.find(&format!("\"{k}\":")).unwrap_or_else(|| panic!("{k} in {first}"));
    assert!(pos("cluster") < pos("at") && pos("at") < pos("kind") && pos("kind") < pos("subject"), "{first}");
    assert!(pos("subject") < pos("what") && pos("what") < pos("dedupe"), "{first}");
    let (rc, csv, _) = run(&["timeline", "--since", &since, "--until", &until, "-o", "csv"]);
    assert_eq!(rc, Some(0));
    assert!(csv.starts_with("cluster,at,at_unix,kind,subject"), "{csv}");
    let records = csv::Reader::from_reader(csv.as_bytes()).records().count();
    assert_eq!(records, rows.len(), "{csv}\n{json}");
    // A bad kind says which there are.
    let (rc, _, err) = run(&["timeline", "--kind", "bogus"]);
    assert_eq!(rc, Some(2));
    assert!(err.contains("node-state") && err.contains("alert-resolved"), "{err}");
}

#[test]
fn the_console_opens_the_timeline_filtered() {
    let mut a = common::app();
    assert!(a.state().timeline.events.len() >= 2, "the first look records the timestamped changes");
    let node = a.state().timeline.events.iter().find_map(|e| e.node.clone()).expect("an event about a node");
    common::typed(&mut a, &format!(":timeline node=={node} since=7d\r"));
    assert_eq!(a.ui.view, gpuplane::tui::views::timeline::ID);
    a.prepare();
    let rows = a.ui.tables[gpuplane::tui::views::timeline::TABLE].rows.len();
    let expect =
        a.state().timeline.events.iter().filter(|e| e.node.as_deref() == Some(node.as_str())).count();
    assert!(rows > 0 && rows == expect, "{rows} rows, {expect} events on {node}");
    // `since` is an age: nothing is 0 seconds old but what happened at the last update.
    common::typed(&mut a, ":timeline since=0s\r");
    a.prepare();
    let now = a.state().now;
    let fresh = a.state().timeline.events.iter().filter(|e| e.at >= now).count();
    assert_eq!(a.ui.tables[gpuplane::tui::views::timeline::TABLE].rows.len(), fresh);
    // A key the table does not have is an error that lists the keys.
    common::typed(&mut a, ":timeline bogus=1\r");
    let msg =
        a.ui.tables[gpuplane::tui::views::timeline::TABLE].filter_error().unwrap_or_default().to_string();
    assert!(msg.contains("unknown key \"bogus\""), "{msg}");
    for k in ["node", "job", "team", "kind", "since"] {
        assert!(msg.contains(k), "{k} in {msg}");
    }
}
