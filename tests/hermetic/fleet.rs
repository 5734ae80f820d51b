//! A fleet in one console: three simulated clusters (as `--sim-clusters 3` makes them) fed
//! into one state, each object carrying its cluster; the screens, the filter, and `get` on the
//! same fleet.

use crate::common;

use gpuplane::backend::sim::{Sim, SimConfig};
use gpuplane::model::protocol::Update;
use gpuplane::tui::app::{App, Msg};

const START: i64 = 1_767_225_600;

/// The clusters `--sim-clusters 3` makes at the default size and seed: (name, nodes, seed).
const FLEET: [(&str, usize, u64); 3] = [("sim-1", 16, 42), ("sim-2", 14, 43), ("sim-3", 12, 44)];

fn sim(nodes: usize, seed: u64) -> Sim {
    Sim::new(SimConfig { nodes, seed, start: START, tick_s: 2, ..SimConfig::default() })
}

fn wrap(cluster: &str, u: Update) -> Msg {
    Msg::Update(Update::Cluster { cluster: cluster.into(), update: Box::new(u) })
}

fn app_with(state: gpuplane::state::ClusterState) -> App {
    common::pin_utc();
    App::new(
        state,
        gpuplane::tui::keymap::Keymap::builtin("default"),
        gpuplane::tui::theme::Theme::builtin("dark"),
        gpuplane::tui::widgets::Glyphs::UNICODE,
        "researcher".into(),
    )
}

/// The fleet after `ticks` ticks of each cluster; sim-3's source then fails (stale).
fn fleet(ticks: usize, stale: bool) -> App {
    let mut a = app_with(gpuplane::state::ClusterState::new(Default::default(), Default::default()));
    let mut sims: Vec<(&str, Sim)> = FLEET.iter().map(|&(c, n, seed)| (c, sim(n, seed))).collect();
    for (c, s) in &sims {
        for u in s.initial() {
            a.update(wrap(c, u));
        }
    }
    for _ in 0..ticks {
        for (c, s) in &mut sims {
            a.update(wrap(c, s.tick()));
        }
    }
    if stale {
        a.update(wrap(
            "sim-3",
            Update::Status(gpuplane::model::protocol::SourceStatus {
                cluster: Default::default(),
                name: "sim".into(),
                simulated: true,
                ok_at: Some(START + 2 * ticks as i64 - 120),
                error: Some("connection refused".into()),
                detail: None,
            }),
        ));
    }
    a.wall_now = START + 2 * ticks as i64;
    a
}

fn snap(name: &str, keys: &str) {
    for (w, h) in [(60u16, 20u16), (80, 24), (160, 48)] {
        let mut a = fleet(30, true);
        common::typed(&mut a, keys);
        let screen = common::render(&mut a, w, h);
        insta::assert_snapshot!(format!("fleet_{name}_{w}x{h}"), screen);
    }
}

#[test]
fn fleet_overview() {
    snap("overview", "");
}

#[test]
fn fleet_nodes() {
    snap("nodes", ":nodes\r");
}

#[test]
fn fleet_jobs() {
    snap("jobs", ":jobs\r");
}

#[test]
fn fleet_sources() {
    snap("sources", ":sources\r");
}

/// Same-named nodes of three clusters are three rows; `cluster=` and `cluster!=` pick them.
#[test]
fn the_cluster_filter_keeps_one_cluster_or_leaves_one_out() {
    let mut a = fleet(5, false);
    let rows = |a: &mut App, filter: &str| -> Vec<(String, String)> {
        common::typed(a, &format!(":nodes {filter}\r"));
        a.prepare();
        let s = a.state();
        a.ui.tables[gpuplane::tui::views::nodes::TABLE]
            .rows
            .iter()
            .map(|&k| {
                let n = &s.nodes[k as usize];
                (n.cluster.to_string(), n.name.to_string())
            })
            .collect()
    };
    let all = rows(&mut a, "");
    assert_eq!(all.len(), 16 + 14 + 12);
    assert_eq!(all.iter().filter(|(_, n)| n == "gpu-001").count(), 3, "one gpu-001 per cluster");
    let two = rows(&mut a, "cluster=sim-2");
    assert_eq!(two.len(), 14);
    assert!(two.iter().all(|(c, _)| c == "sim-2"));
    let not_one = rows(&mut a, "cluster!=sim-1");
    assert_eq!(not_one.len(), 14 + 12);
    assert!(not_one.iter().all(|(c, _)| c != "sim-1"));
}

/// `get --sim-clusters 3 -o json` prints the rows the console shows for the same fleet.
#[test]
fn get_all_clusters_json_equals_the_console_rows() {
    let dir = tempfile::tempdir().unwrap();
    for (resource, table) in
        [("nodes", gpuplane::tui::views::nodes::TABLE), ("jobs", gpuplane::tui::views::jobs::TABLE)]
    {
        let out = common::gpuplane_cmd(dir.path())
            .args(["get", resource, "--sim-clusters", "3", "-o", "json"])
            .env("GPUPLANE_SIM_START", START.to_string())
            .env("USER", "researcher")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let from_get: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        let mut a = fleet(0, false);
        common::typed(&mut a, &format!(":{resource}\r"));
        a.prepare();
        let src = gpuplane::tui::views::all_tables().find(|t| t.id() == table).unwrap();
        let (cost, marks) = (gpuplane::cost::CostReport::default(), Default::default());
        let cx = gpuplane::tables::table::Cx {
            s: a.state(),
            cost: &cost,
            tones: &gpuplane::tables::tone::TONES,
            glyphs: gpuplane::tables::fmt::Glyphs::ASCII,
            user: "researcher",
            audit: &[],
            marked: &marks,
            rules: &Default::default(),
        };
        // Through text, as `get` prints it (serde_json reads a float back to the nearest it
        // parses, not always the value written).
        let from_console: Vec<serde_json::Value> = a.ui.tables[table]
            .rows
            .iter()
            .map(|&k| {
                let rec = gpuplane::commands::machine::record(
                    resource,
                    src.columns(),
                    src.json(&cx, k),
                    &jiff::tz::TimeZone::UTC,
                );
                serde_json::from_str(&serde_json::to_string(&rec).unwrap()).unwrap()
            })
            .collect();
        assert!(from_get.len() > 40, "{resource}: {}", from_get.len());
        assert!(from_get.iter().all(|r| r["cluster"].as_str().is_some_and(|c| c.starts_with("sim-"))));
        assert_eq!(from_get.len(), from_console.len(), "{resource}");
        let id =
            |r: &serde_json::Value| (r["cluster"].to_string(), r["name"].to_string(), r["id"].to_string());
        let (g, c): (Vec<_>, Vec<_>) =
            (from_get.iter().map(id).collect(), from_console.iter().map(id).collect());
        assert_eq!(g, c, "{resource}: the same rows in the same order");
        for (x, y) in from_get.iter().zip(&from_console) {
            if x != y {
                let diff: Vec<&String> = x
                    .as_object()
                    .unwrap()
                    .iter()
                    .filter(|(k, v)| y.get(*k) != Some(v))
                    .map(|(k, _)| k)
                    .collect();
                panic!(
                    "{resource} {:?}: fields differ: {diff:?}\n{}\n{}",
                    id(x),
                    x[diff[0].as_str()],
                    y[diff[0].as_str()]
                );
            }
        }
    }
}

/// Actions route to the owning cluster: a node of one name marked in two clusters is planned
/// per cluster (grouped, each under its cluster's line) and each cluster's part goes to that
/// cluster's own ops task, with that cluster's node name.
#[test]
fn a_plan_across_clusters_sends_each_cluster_its_own_part() {
    use gpuplane::model::NodeKey;
    use gpuplane::ops::{ActionKind, OpMsg, fleet::Route};
    let mut a = fleet(5, false);
    let mut rxs = Vec::new();
    for (c, ..) in FLEET {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let planner = std::sync::Arc::new(gpuplane::ops::SimPlanner::new("op"));
        a.routes.insert(c.into(), Route { planner, readonly: c == "sim-3", tx: Some(tx) });
        rxs.push((c, rx));
    }
    common::typed(&mut a, ":nodes\r");
    let name = {
        let s = a.state();
        let schedulable = |c: &'static str| -> Vec<gpuplane::model::Text> {
            s.nodes
                .iter()
                .filter(|n| n.cluster == c && n.state.schedulable())
                .map(|n| n.name.clone())
                .collect()
        };
        let two = schedulable("sim-2");
        schedulable("sim-1").into_iter().find(|n| two.contains(n)).expect("a name in both")
    };
    for c in ["sim-1", "sim-2", "sim-3"] {
        a.marks.nodes.insert(NodeKey { cluster: c.into(), name: name.clone() });
    }
    a.start_action(ActionKind::Cordon);
    let gpuplane::tui::app::Mode::Confirm(c) = &a.ui.mode else {
        panic!("no confirmation: {:?}", a.ui.message)
    };
    let lines = c.plan.lines();
    // sim-3 is read-only: its target is refused by sim-3, the others run.
    assert!(
        lines[0].starts_with(&format!("2 of 3 will run; 1 refused: sim-3/{name}: read-only")),
        "{lines:?}"
    );
    assert!(lines.contains(&"on sim-1 (sim as sim:op): 1 target(s)".to_string()), "{lines:?}");
    assert!(
        lines.contains(&format!(
            "cordon sim-2/{name}: sim: mark {name} unschedulable (running jobs continue)"
        )),
        "{lines:?}"
    );
    assert_eq!(c.plan.confirm_word.as_deref(), Some("2"));
    common::typed(&mut a, "replace fans\t\t2\r");
    assert!(!matches!(a.ui.mode, gpuplane::tui::app::Mode::Confirm(_)), "{:?}", a.ui.message);
    let mut op_ids = Vec::new();
    for (c, rx) in &mut rxs {
        let sent: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        match *c {
            "sim-3" => assert!(sent.is_empty(), "nothing to the read-only cluster"),
            _ => {
                let [OpMsg::Run(job)] = sent.as_slice() else { panic!("{c}: {sent:?}") };
                assert_eq!(job.req.targets, vec![name.to_string()], "{c}");
                assert_eq!(job.plan.steps.len(), 1);
                assert_eq!(job.req.reason, "replace fans");
                op_ids.push(job.op_id.clone().expect("the plan's op id"));
            }
        }
    }
    // Confirmed once: one op id for every cluster's part.
    assert_eq!(op_ids.len(), 2);
    assert_eq!(op_ids[0], op_ids[1]);
    assert!(a.marks.nodes.is_empty());
}

/// `gpuplane drain NAME` on a fleet where three clusters have NAME: refused, naming each
/// `cluster/NAME`; `cluster/NAME` acts on that cluster alone and is audited under its name.
#[test]
fn command_line_targets_name_their_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let run = |args: &[&str]| {
        common::gpuplane_cmd(dir.path())
            .args(args)
            .args(["--sim-clusters", "3", "--audit-log", log.to_str().unwrap(), "--yes"])
            .env("GPUPLANE_SIM_START", START.to_string())
            .output()
            .unwrap()
    };
    let out = run(&["cordon", "gpu-001", "--reason", "fans"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(["sim-1/gpu-001", "sim-2/gpu-001", "sim-3/gpu-001"].iter().all(|t| err.contains(t)), "{err}");
    assert!(!log.exists() || std::fs::read_to_string(&log).unwrap().is_empty(), "nothing audited");
    let out = run(&["cordon", "sim-2/gpu-001", "--reason", "fans"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("on sim-2 (sim as sim:") && text.contains("ok   sim-2/gpu-001"), "{text}");
    let recs = gpuplane::audit::AuditLog::new(log.clone()).read_all().unwrap();
    let cordons: Vec<_> = recs.iter().filter(|r| r.action == "cordon").collect();
    assert_eq!(cordons.len(), 2, "intent and outcome");
    assert!(cordons.iter().all(|r| r.cluster == "sim-2" && r.targets == ["gpu-001"]), "{cordons:?}");
    // One plan on two clusters, confirmed once: every record of it carries one op id, each
    // naming its own cluster and backend identity.
    let out = run(&["cordon", "sim-1/gpu-002", "sim-3/gpu-002", "--reason", "fans"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = gpuplane::audit::AuditLog::new(log.clone()).read_all().unwrap();
    let these: Vec<_> = recs.iter().filter(|r| r.action == "cordon" && r.targets == ["gpu-002"]).collect();
    assert_eq!(these.len(), 4, "intent and outcome on each cluster: {these:?}");
    assert!(these.iter().all(|r| r.op_id == these[0].op_id), "{these:?}");
    assert_ne!(these[0].op_id, cordons[0].op_id, "another plan, another op id");
    let mut clusters: Vec<&str> = these.iter().map(|r| r.cluster.as_str()).collect();
    clusters.dedup();
    assert_eq!(clusters, ["sim-1", "sim-3"]);
    assert!(these.iter().all(|r| r.params.get("backend").map(String::as_str) == Some("sim")), "{these:?}");
    assert!(these.iter().all(|r| r.identity.as_deref().is_some_and(|i| i.starts_with("sim:"))), "{these:?}");
}

/// A fleet command reads only the clusters its targets name: one unreachable cluster does not
/// block an action on another. A bare name still looks in every cluster, and refuses when one
/// cannot be read (the name might be there too).
#[test]
fn a_command_needs_only_the_clusters_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tok = dir.path().join("tok");
    std::fs::write(&tok, "not-a-token").unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "[[cluster]]\nname = \"lab\"\n[cluster.sim]\nnodes = 8\n\n\
             [[cluster]]\nname = \"gone\"\n[cluster.slurm]\nurl = \"http://{}\"\ntoken_file = \"{}\"\n",
            dead.local_addr().unwrap(),
            tok.display()
        ),
    )
    .unwrap();
    drop(dead);
    let run = |args: &[&str]| {
        common::gpuplane_cmd(dir.path())
            .args(args)
            .args(["--audit-log", log.to_str().unwrap(), "--yes"])
            .env("GPUPLANE_CONFIG", &cfg)
            .env("GPUPLANE_SIM_START", START.to_string())
            .output()
            .unwrap()
    };
    // A node of lab's that takes work (`get` prints the clusters it can read).
    let out = common::gpuplane_cmd(dir.path())
        .args(["get", "nodes", "-o", "json"])
        .env("GPUPLANE_CONFIG", &cfg)
        .env("GPUPLANE_SIM_START", START.to_string())
        .output()
        .unwrap();
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let node = rows
        .iter()
        .find(|r| r["cluster"] == "lab" && ["idle", "mixed", "allocated"].iter().any(|s| r["state"] == *s))
        .and_then(|r| r["name"].as_str())
        .expect("a schedulable node")
        .to_string();
    let out = run(&["cordon", &format!("lab/{node}"), "--reason", "fans"]);
    let (text, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{text}{err}");
    assert!(text.contains("fleet lab\n") && text.contains(&format!("ok   lab/{node}")), "{text}");
    let out = run(&["cordon", "gpu-002", "--reason", "fans"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot tell whether gpu-002 also exists on gone (unreachable"), "{err}");
    let recs = gpuplane::audit::AuditLog::new(log.clone()).read_all().unwrap();
    assert!(recs.iter().all(|r| r.targets != ["gpu-002"]), "nothing audited for the refused name");
    let out = run(&["cordon", "gone/gpu-002", "--reason", "fans"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("gone/gpu-002: cluster gone cannot be read"), "{err}");
    let out = run(&["cordon", "labb/gpu-002", "--reason", "fans"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no cluster \"labb\" in this fleet (clusters: lab, gone)"), "{err}");
}

/// `:cluster NAME` focuses one cluster in every table (and the header), `:cluster all` returns;
/// the `:` prompt completes the cluster names.
#[test]
fn cluster_focus_narrows_every_table_to_one_cluster() {
    let mut a = fleet(5, false);
    let clusters = |a: &mut App, cmd: &str, table| -> Vec<String> {
        common::typed(a, cmd);
        a.prepare();
        let s = a.state();
        let rows = &a.ui.tables[table].rows;
        rows.iter()
            .map(|&k| match table {
                t if t == gpuplane::tui::views::nodes::TABLE => s.nodes[k as usize].cluster.to_string(),
                _ => s.jobs[k as usize].cluster.to_string(),
            })
            .collect()
    };
    use gpuplane::tui::views::{jobs, nodes};
    common::typed(&mut a, ":cluster sim-2\r");
    assert_eq!(a.focus.as_deref(), Some("sim-2"), "{:?}", a.ui.message);
    let n = clusters(&mut a, ":nodes\r", nodes::TABLE);
    assert_eq!(n.len(), 14);
    assert!(n.iter().all(|c| c == "sim-2"));
    let j = clusters(&mut a, ":jobs\r", jobs::TABLE);
    assert!(!j.is_empty() && j.iter().all(|c| c == "sim-2"), "{j:?}");
    // The table's own filter applies within the focus.
    let n = clusters(&mut a, ":nodes cluster!=sim-1\r", nodes::TABLE);
    assert_eq!(n.len(), 14);
    // Esc in the filter prompt clears the table's own filter.
    common::typed(&mut a, "/\x1b");
    common::typed(&mut a, ":cluster nope\r");
    assert!(a.ui.message.as_ref().is_some_and(|(m, err)| *err && m.contains("sim-1, sim-2, sim-3")));
    assert_eq!(a.focus.as_deref(), Some("sim-2"), "an unknown name keeps the focus");
    let n = clusters(&mut a, ":cluster all\r", nodes::TABLE);
    assert_eq!(n.len(), 16 + 14 + 12);
    assert_eq!(a.focus, None);
    // Completion: the command, then its argument.
    common::typed(&mut a, ":clu\t");
    assert_eq!(a.ui.mode.command_line(), Some("cluster "), "{:?}", a.ui.mode);
    common::typed(&mut a, "s\t");
    assert_eq!(a.ui.mode.command_line(), Some("cluster sim-"));
    let gpuplane::tui::app::Mode::Prompt(p) = &a.ui.mode else { panic!("{:?}", a.ui.mode) };
    assert_eq!(p.completions, ["sim-1", "sim-2", "sim-3"]);
    common::typed(&mut a, "3\t\r");
    assert_eq!(a.focus.as_deref(), Some("sim-3"));
}

#[test]
fn fleet_nodes_focused() {
    snap("nodes_focused", ":cluster sim-2\r:nodes\r");
}

/// An ack belongs to its incident's cluster: acknowledging sim-2's `SUBJECT`/`SIGNAL` goes to
/// sim-2's ops task under sim-2's name, and the same incident of another cluster stays open.
#[test]
fn an_ack_is_its_own_clusters() {
    use gpuplane::model::ObjKey;
    use gpuplane::ops::{OpEvent, OpMsg, fleet::Route};
    use gpuplane::state::Lifecycle;
    let mut a = fleet(30, false);
    let mut rxs = std::collections::BTreeMap::new();
    for (c, ..) in FLEET {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let planner = std::sync::Arc::new(gpuplane::ops::SimPlanner::new("op"));
        a.routes.insert(c.into(), Route { planner, readonly: false, tx: Some(tx) });
        rxs.insert(c, rx);
    }
    // An incident sim-2 has and another cluster has too.
    let (subject, signal) = {
        let s = a.state();
        s.incidents
            .iter()
            .filter(|i| i.cluster == "sim-2")
            .find(|i| s.incidents.iter().any(|o| o.cluster != "sim-2" && o.key() == i.key()))
            .map(|i| (i.subject.clone(), i.signal.clone()))
            .expect("an incident in two clusters")
    };
    a.prepare();
    let key = ObjKey::Incident("sim-2".into(), subject.clone(), signal.clone());
    a.select_obj(gpuplane::tui::views::overview::INCIDENTS, key);
    a.prepare();
    a.begin_ack();
    common::typed(&mut a, "INC-9 on it\r");
    let sent: Vec<_> = std::iter::from_fn(|| rxs.get_mut("sim-2").unwrap().try_recv().ok()).collect();
    let [OpMsg::Ack(ack)] = sent.as_slice() else { panic!("sim-2 got {sent:?} ({:?})", a.ui.message) };
    assert_eq!((ack.cluster.as_str(), ack.key.subject.as_str()), ("sim-2", subject.as_str()));
    for c in ["sim-1", "sim-3"] {
        assert!(rxs.get_mut(c).unwrap().try_recv().is_err(), "nothing to {c}");
    }
    // Audited: the console stores it; only sim-2's incident is acknowledged.
    a.update(gpuplane::tui::app::Msg::Op(OpEvent::Acked(ack.clone())));
    let s = a.state();
    for i in s.incidents.iter().filter(|i| i.subject == subject && i.signal == signal) {
        let acked = matches!(i.lifecycle, Lifecycle::Acked { .. });
        assert_eq!(acked, i.cluster == "sim-2", "{} {}: {:?}", i.cluster, i.subject, i.lifecycle);
    }
}

/// Under `:cluster sim-2`, a mark left on a sim-1 node is flagged in the plan as hidden.
#[test]
fn marks_outside_the_focus_are_flagged_in_the_plan() {
    use gpuplane::model::NodeKey;
    use gpuplane::ops::{ActionKind, fleet::Route};
    let mut a = fleet(5, false);
    for (c, ..) in FLEET {
        let planner = std::sync::Arc::new(gpuplane::ops::SimPlanner::new("op"));
        a.routes.insert(c.into(), Route { planner, readonly: false, tx: None });
    }
    common::typed(&mut a, ":cluster sim-2\r:nodes\r");
    let name =
        a.state().nodes.iter().find(|n| n.cluster == "sim-1" && n.state.schedulable()).unwrap().name.clone();
    let other =
        a.state().nodes.iter().find(|n| n.cluster == "sim-2" && n.state.schedulable()).unwrap().name.clone();
    a.marks.nodes.insert(NodeKey { cluster: "sim-1".into(), name: name.clone() });
    a.marks.nodes.insert(NodeKey { cluster: "sim-2".into(), name: other.clone() });
    a.start_action(ActionKind::Cordon);
    let gpuplane::tui::app::Mode::Confirm(c) = &a.ui.mode else { panic!("{:?}", a.ui.message) };
    assert_eq!(c.hidden, vec![format!("sim-1/{name}")]);
    let body = gpuplane::tui::app::confirm_body(c);
    assert!(
        body.contains(&format!(
            "[hidden by filter] cordon sim-1/{name}: sim: mark {name} unschedulable (running jobs continue)"
        )),
        "{body:?}"
    );
}

/// A host in two schedulers (`[[shared_hosts]]`: here sim-1's nodes are also sim-2's, by the
/// same name) named once: the plan names both schedulers and acts in both; ^s picks Slurm only
/// (then Kubernetes only) and plans again; what is confirmed goes to the picked scheduler's
/// ops task alone, under the plan's op id.
#[test]
fn a_paired_hosts_plan_names_both_schedulers_and_the_operator_picks() {
    use gpuplane::model::NodeKey;
    use gpuplane::ops::{ActionKind, OpMsg, fleet::Route};
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let mut a = fleet(5, false);
    a.live.set_host_pairs(vec![gpuplane::state::HostPairing {
        slurm: "sim-1".into(),
        kube: "sim-2".into(),
        ..Default::default()
    }]);
    let mut rxs = Vec::new();
    for (c, ..) in FLEET {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let planner = std::sync::Arc::new(gpuplane::ops::SimPlanner::new("op"));
        a.routes.insert(c.into(), Route { planner, readonly: false, tx: Some(tx) });
        rxs.push((c, rx));
    }
    let name = {
        let s = a.state();
        let ok = |c: &str, n: &gpuplane::model::Text| {
            s.node_in(&c.into(), n).is_some_and(|n| n.state.schedulable())
        };
        s.nodes
            .iter()
            .find(|n| n.cluster == "sim-1" && ok("sim-2", &n.name) && n.state.schedulable())
            .map(|n| n.name.clone())
            .expect("a host in service in both")
    };
    a.marks.nodes.insert(NodeKey { cluster: "sim-2".into(), name: name.clone() });
    a.start_action(ActionKind::Drain);
    let targets = |a: &App| {
        let gpuplane::tui::app::Mode::Confirm(c) = &a.ui.mode else {
            panic!("no confirmation: {:?}", a.ui.message)
        };
        (c.plan.notes.clone(), c.parts.iter().map(|p| p.cluster.to_string()).collect::<Vec<_>>())
    };
    let (notes, parts) = targets(&a);
    assert_eq!(
        notes,
        [format!(
            "host {name} is Slurm sim-1/{name} (drain) and Kubernetes sim-2/{name} (drain): drain in both schedulers"
        )]
    );
    assert_eq!(parts, ["sim-1", "sim-2"]);
    let screen = common::render(&mut a, 160, 48);
    assert!(screen.contains("schedulers of paired hosts: both (^s: both, slurm, kube)"), "{screen}");
    insta::assert_snapshot!("fleet_paired_host_confirm_80x24", common::render(&mut a, 80, 24));
    let ctrl_s = || Msg::Key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL));
    a.update(ctrl_s());
    let (notes, parts) = targets(&a);
    assert!(notes[0].ends_with("drain in Slurm only") && notes[0].contains("(not picked)"), "{notes:?}");
    assert_eq!(parts, ["sim-1"]);
    a.update(ctrl_s());
    assert_eq!(targets(&a).1, ["sim-2"]);
    a.update(ctrl_s());
    a.update(ctrl_s());
    assert_eq!(targets(&a).1, ["sim-1"], "round again to Slurm only");
    common::typed(&mut a, "fans\t\t");
    let gpuplane::tui::app::Mode::Confirm(c) = &a.ui.mode else { panic!() };
    let word = c.plan.confirm_word.clone().unwrap_or_default();
    common::typed(&mut a, &format!("{word}\r"));
    assert!(!matches!(a.ui.mode, gpuplane::tui::app::Mode::Confirm(_)), "{:?}", a.ui.message);
    for (c, rx) in &mut rxs {
        let sent: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        match *c {
            "sim-1" => {
                let [OpMsg::Run(job)] = sent.as_slice() else { panic!("{c}: {sent:?}") };
                assert_eq!(
                    (job.req.kind, job.req.targets.clone()),
                    (ActionKind::Drain, vec![name.to_string()])
                );
                assert!(job.op_id.is_some());
            }
            _ => assert!(sent.is_empty(), "{c}: {sent:?}"),
        }
    }
    // The Kubernetes side read-only: the plan runs nothing until one scheduler is picked.
    a.routes.get_mut(&gpuplane::model::Text::from("sim-2")).unwrap().readonly = true;
    a.marks.nodes.insert(NodeKey { cluster: "sim-1".into(), name: name.clone() });
    a.start_action(ActionKind::Drain);
    let gpuplane::tui::app::Mode::Confirm(c) = &a.ui.mode else { panic!("{:?}", a.ui.message) };
    assert!(c.plan.steps.is_empty() && c.parts.is_empty());
    let why = c.plan.refused_line().unwrap();
    assert!(
        why.contains(&format!("sim-2/{name}")) && why.contains("nothing will be sent to either"),
        "{why}"
    );
    common::typed(&mut a, "fans\r");
    let gpuplane::tui::app::Mode::Confirm(c) = &a.ui.mode else {
        panic!("Enter ran a plan with nothing in it")
    };
    assert!(
        c.error.as_deref().is_some_and(|e| e.starts_with("nothing will run as planned")),
        "{:?}",
        c.error
    );
    a.update(ctrl_s());
    assert_eq!(targets(&a).1, ["sim-1"]);
}

/// The Overview's health cards are counted on the derivation's walk (a frame no longer walks
/// the nodes): each card equals its cluster's nodes counted directly, after ticks and after a
/// node leaves service.
#[test]
fn each_clusters_card_counts_its_own_nodes() {
    let mut a = fleet(10, false);
    let count = |a: &App| {
        let s = a.state();
        let mut want: Vec<(String, [u32; 4])> = Vec::new();
        for n in &s.nodes {
            let i = match want.iter().position(|(c, _)| c.as_str() == n.cluster.as_str()) {
                Some(i) => i,
                None => {
                    want.push((n.cluster.to_string(), [0; 4]));
                    want.len() - 1
                }
            };
            let up = n.state.schedulable();
            want[i].1[0] += u32::from(up);
            want[i].1[1] += u32::from(!up);
            want[i].1[2] += n.gpu_slots;
            want[i].1[3] += n.gpu_alloc;
        }
        let mut got: Vec<(String, [u32; 4])> = s
            .cards
            .iter()
            .map(|k| (k.cluster.to_string(), [k.nodes_up, k.nodes_out, k.gpus, k.gpus_alloc]))
            .collect();
        got.sort();
        want.sort();
        (got, want)
    };
    let (got, want) = count(&a);
    assert_eq!(got.len(), FLEET.len());
    assert_eq!(got, want);
    let node = a
        .state()
        .nodes
        .iter()
        .find(|n| n.cluster == "sim-2" && n.state.schedulable())
        .expect("a node")
        .name
        .clone();
    let mut d =
        gpuplane::model::protocol::Delta { source: "sim".into(), at: START + 40, ..Default::default() };
    d.nodes.push(gpuplane::model::protocol::NodeSample {
        node,
        state: Some(gpuplane::model::NodeState::Drained),
        ..Default::default()
    });
    let before = got.iter().find(|(c, _)| c == "sim-2").expect("sim-2's card").1;
    a.update(wrap("sim-2", Update::Delta(Box::new(d))));
    let (got, want) = count(&a);
    assert_eq!(got, want);
    let after = got.iter().find(|(c, _)| c == "sim-2").expect("sim-2's card").1;
    assert_eq!((after[0], after[1]), (before[0] - 1, before[1] + 1), "the drained node is out of service");
}

/// The fleet's clusters share rack and node names (`r001`, `gpu-001`): the Topology tree keeps
/// each cluster's racks apart (a rack of two clusters' same-named nodes was dropped whole),
/// and the node selected under sim-2's rack is sim-2's.
#[test]
fn topology_keeps_same_named_racks_and_nodes_of_each_cluster_apart() {
    let mut a = fleet(5, false);
    common::typed(&mut a, ":topo\r");
    let screen = common::render(&mut a, 160, 48);
    let racks = |c: &str| -> usize {
        let s = a.state();
        let mut r: Vec<&str> = s
            .nodes
            .iter()
            .filter(|n| n.cluster == c)
            .filter_map(|n| n.labels.get("topology.kubernetes.io/rack").or_else(|| n.labels.get("rack")))
            .map(|v| v.as_str())
            .collect();
        r.sort_unstable();
        r.dedup();
        r.len()
    };
    let (r1, r2) = (racks("sim-1"), racks("sim-2"));
    assert!(r1 > 0 && r2 > 0, "the simulator labels racks");
    for (c, _, _) in FLEET {
        assert!(screen.contains(&format!("{c}: rack r001")), "{c}'s first rack is listed: {screen}");
    }
    // Past sim-1's racks to sim-2's first; open it and select its first node.
    common::typed(&mut a, &"j".repeat(r1));
    common::typed(&mut a, "\r");
    common::render(&mut a, 160, 48);
    common::typed(&mut a, "j");
    let k = a.topology_node().expect("a node is selected");
    assert_eq!(k.cluster.as_str(), "sim-2", "{k:?}");
    assert!(a.state().node_in(&k.cluster, &k.name).is_some_and(|n| n.cluster == "sim-2"));
}
