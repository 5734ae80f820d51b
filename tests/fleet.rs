//! A fleet in one console: three simulated clusters (as `--sim-clusters 3` makes them) fed
//! into one state, each object carrying its cluster; the screens, the filter, and `get` on the
//! same fleet.

mod common;

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
        let theme = gpuplane::tui::theme::Theme::builtin("monochrome");
        let cx = gpuplane::tui::widgets::table::Cx {
            s: a.state(),
            cost: &cost,
            theme: &theme,
            glyphs: gpuplane::tui::widgets::Glyphs::ASCII,
            user: "researcher",
            audit: &[],
            marked: &marks,
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
