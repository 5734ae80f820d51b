//! The filter language against the console's real tables: what the issue saw go wrong, each
//! checked against the cells the screen shows.

use crate::common;

use crate::common::{app, typed};
use gpuplane::model::JobState;
use gpuplane::tui::app::App;
use gpuplane::tui::views::{self, TableId};
use gpuplane::tui::widgets::table::TableExt;

/// The displayed cells of every row the table keeps under `filter` (set as the operator would:
/// `:view filter`).
fn rows(a: &mut App, view: &str, t: TableId, filter: &str) -> Vec<Vec<String>> {
    typed(a, &format!(":{view} {filter}\r"));
    a.prepare();
    let cx = a.cx();
    let src = t.source();
    a.ui.tables[t]
        .rows
        .iter()
        .map(|&k| src.cells(&cx, k).iter().map(|c| c.text.to_string()).collect())
        .collect()
}

fn col(t: TableId, name: &str) -> usize {
    t.source().columns().iter().position(|c| c.name == name).expect("column")
}

fn num(s: &str) -> f64 {
    s.trim_end_matches(['C', '%']).parse().expect("a number")
}

#[test]
fn job_state_matches_by_its_code_and_its_name() {
    let mut a = app();
    let t = views::jobs::TABLE;
    let st = col(t, "ST");
    let pending = a.state().jobs.iter().filter(|j| j.state == JobState::Pending).count();
    assert!(pending > 0);
    for f in ["st=PD", "state=PD", "state=pending", "st==pd"] {
        let r = rows(&mut a, "jobs", t, f);
        assert_eq!(r.len(), pending, "{f}");
        assert!(r.iter().all(|c| c[st] == "PD"), "{f}");
    }
    // `st=R` is running only: not PR (preempted) nor CD.
    let r = rows(&mut a, "jobs", t, "st=R");
    assert!(!r.is_empty() && r.iter().all(|c| c[st] == "R"));
    // Negation: everything but completed.
    let all = a.state().jobs.len();
    let done = rows(&mut a, "jobs", t, "st=CD").len();
    assert_eq!(rows(&mut a, "jobs", t, "!st=CD").len(), all - done);
    assert_eq!(rows(&mut a, "jobs", t, "st!=CD").len(), all - done);
}

#[test]
fn free_text_finds_what_the_row_shows_and_its_whole_node_list() {
    let mut a = app();
    let t = views::jobs::TABLE;
    let reason = col(t, "REASON");
    let r = rows(&mut a, "jobs", t, "QOSGrpGRES");
    assert!(!r.is_empty(), "the REASON column shows QOSGrpGRES");
    assert!(r.iter().all(|c| c.iter().any(|x| x.contains("QOSGrpGRES"))), "{:?}", r[0]);
    assert!(r.iter().any(|c| c[reason].contains("QOSGrpGRES")));
    // A node in the middle of a job's node list (NODES shows only the first).
    let (id, node) = a
        .state()
        .jobs
        .iter()
        .find_map(|j| (j.nodes.len() > 2).then(|| (j.id, j.nodes[1].to_string())))
        .expect("a job on three nodes");
    let r = rows(&mut a, "jobs", t, &node);
    assert!(r.iter().any(|c| c[col(t, "ID")] == id.to_string()), "{node} finds job {id}");
}

#[test]
fn gpu_columns_compare_as_numbers() {
    let mut a = app();
    let t = views::gpus::TABLE;
    let (gpu, temp, util) = (col(t, "GPU"), col(t, "TEMP"), col(t, "UTIL"));
    let r = rows(&mut a, "gpus", t, "gpu=3");
    assert!(!r.is_empty() && r.iter().all(|c| c[gpu] == "3"), "gpu=3 is GPU 3, not 13");
    let hot = rows(&mut a, "gpus", t, "temp>80");
    assert!(!hot.is_empty() && hot.iter().all(|c| num(&c[temp]) > 80.0));
    let cool = rows(&mut a, "gpus", t, "temp<=80");
    let unknown = rows(&mut a, "gpus", t, "temp=-").len();
    assert_eq!(hot.len() + cool.len() + unknown, a.state().gpu_count(), "every GPU on one side");
    let t73 = rows(&mut a, "gpus", t, "temp=73");
    assert!(t73.iter().all(|c| c[temp] == "73C"));
    let busy = rows(&mut a, "gpus", t, "util>=90");
    assert!(!busy.is_empty() && busy.iter().all(|c| num(&c[util]) >= 90.0));
    // A negated term beside another: both apply.
    let node = col(t, "NODE");
    let r = rows(&mut a, "gpus", t, "node=gpu-00 !gpu=0");
    assert!(!r.is_empty());
    assert!(r.iter().all(|c| c[node].contains("gpu-00") && c[gpu] != "0"));
}

#[test]
fn an_unknown_key_is_an_error_listing_the_keys_and_the_rows_stay() {
    let mut a = app();
    let t = views::jobs::TABLE;
    let before = rows(&mut a, "jobs", t, "st=PD").len();
    let after = rows(&mut a, "jobs", t, "bogus=1").len();
    assert_eq!(after, before, "the last good filter stays in force");
    let e = a.ui.tables[t].filter_error().expect("an error").to_string();
    assert!(e.contains("unknown key \"bogus\""), "{e}");
    for k in ["st", "state", "user", "reason", "gpus"] {
        assert!(e.split_whitespace().any(|w| w == k), "{k} listed in {e}");
    }
    // Negating an unknown key is the same error, not "everything".
    rows(&mut a, "jobs", t, "!bogus=1");
    assert!(a.ui.tables[t].filter_error().is_some());
    // A malformed term too.
    rows(&mut a, "jobs", t, "gpus>");
    assert!(a.ui.tables[t].filter_error().unwrap().contains("needs a number"));
    // And a good one clears it.
    rows(&mut a, "jobs", t, "gpus>=8");
    assert!(a.ui.tables[t].filter_error().is_none());
}

#[test]
fn the_title_says_how_many_of_how_many() {
    let mut a = app();
    let all = a.state().jobs.len();
    let n = rows(&mut a, "jobs", views::jobs::TABLE, "st=PD").len();
    let screen = common::render(&mut a, 100, 30);
    assert!(screen.contains(&format!("[filtered: {n} of {all}]")), "{screen}");
}

#[test]
fn node_labels_are_keys_when_the_nodes_have_them() {
    let mut a = app();
    let t = views::nodes::TABLE;
    let (k, v) = a
        .state()
        .nodes
        .iter()
        .find_map(|n| n.labels.iter().next().map(|(k, v)| (k.to_string(), v.to_string())))
        .expect("the simulator labels its nodes");
    let r = rows(&mut a, "nodes", t, &format!("{k}=={v}"));
    assert!(a.ui.tables[t].filter_error().is_none(), "{:?}", a.ui.tables[t].filter_error());
    assert!(!r.is_empty());
}
