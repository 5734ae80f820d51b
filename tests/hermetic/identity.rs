//! Rows are objects, not positions: a backend that reorders, removes and relists between
//! keystrokes must not move the cursor, the marks, the detail pane or an action's target to
//! another object. Every table view is driven the same way.

use crate::common;

use crate::common::{app, key, render};
use gpuplane::model::protocol::{Inventory, Update};
use gpuplane::model::{NodeKey, ObjKey, Text};
use gpuplane::ops::ActionKind;
use gpuplane::tui::app::{App, Mode, Msg};
use gpuplane::tui::views;
use gpuplane::tui::views::{TableId, VIEWS, ViewId};
use gpuplane::tui::widgets::table::TableExt;
use ratatui::crossterm::event::KeyCode;

/// A backend that lists what the cluster holds in another order each time, leaving out the
/// objects named in `drop` (a node or job that went away), as a relisting scheduler would.
struct Reorderer {
    rng: fastrand::Rng,
}

impl Reorderer {
    fn relist(&mut self, a: &App, drop_node: Option<&str>, drop_job: Option<u64>) -> Update {
        let s = a.state();
        let mut nodes = s.nodes.clone();
        nodes.retain(|n| Some(n.name.as_str()) != drop_node);
        self.rng.shuffle(&mut nodes);
        nodes.reverse();
        let mut jobs = s.jobs.clone();
        jobs.retain(|j| Some(j.id) != drop_job);
        self.rng.shuffle(&mut jobs);
        let mut queues = s.queues.clone();
        queues.reverse();
        let mut quotas = s.quotas.clone();
        quotas.reverse();
        let mut storage = s.storage.clone();
        storage.reverse();
        Update::Inventory {
            at: s.now + 1,
            inventory: Box::new(Inventory {
                source: "sim".into(),
                cluster: Some(s.cluster.clone()),
                nodes: Some(nodes),
                jobs: Some(jobs),
                queues: Some(queues),
                quotas: Some(quotas),
                storage: Some(storage),
            }),
        }
    }

    /// The same alerts and silences, in another order.
    fn realert(&mut self, a: &App) -> Update {
        let s = a.state();
        let mut alerts = s.alerts.clone();
        self.rng.shuffle(&mut alerts);
        let mut silences = s.silences.clone();
        silences.reverse();
        Update::Alerts(Box::new(gpuplane::model::alert::AlertSnapshot {
            source: "am".into(),
            at: s.now + 1,
            alerts,
            silences,
        }))
    }
}

/// The names an object's row must show.
fn names(o: &ObjKey) -> Vec<String> {
    match o {
        ObjKey::Node(n) => vec![n.name.to_string()],
        ObjKey::Gpu(g) => vec![g.node.name.to_string(), g.index.to_string()],
        ObjKey::Job(j) => vec![j.id.to_string()],
        ObjKey::Port(n, p) => vec![n.name.to_string(), p.to_string()],
        ObjKey::Filesystem(x) | ObjKey::Quota(x) | ObjKey::Team(x) | ObjKey::Person(x) => vec![x.to_string()],
        // A queue, or a team's wait in a queue (`team/queue`, the Cost view's waits): each part
        // is its own cell.
        ObjKey::Queue(x) => x.split('/').map(str::to_string).collect(),
        ObjKey::Incident(_, subject, _) => vec![subject.to_string()],
        ObjKey::Audit(seq) => vec![format!("gpu-{seq:03}")],
        ObjKey::Source(x) => vec![x.to_string()],
        // An alert's row shows its labels, not its fingerprint (the selection is compared).
        ObjKey::Alert(_) => vec![],
        ObjKey::Silence(id) => vec![id.get(..8).unwrap_or(id).to_string()],
        // An event's row shows its subject and words, not its key (the selection is compared).
        ObjKey::Event(_) => vec![],
    }
}

/// What the focused table's selected row shows (its cells, as drawn).
fn selected_cells(a: &mut App, t: TableId) -> Vec<String> {
    a.prepare();
    let key = a.ui.tables[t].selected_key().expect("a selected row");
    let cx = a.cx();
    t.source().cells(&cx, key).iter().map(|s| s.text.to_string()).collect()
}

/// Opens `view`, focuses table `t`, moves the cursor a few rows down.
fn open(a: &mut App, view: ViewId, t: TableId, down: usize) {
    a.goto(view);
    let pos = view.tables().iter().position(|&x| x == t).expect("table of the view");
    for _ in 0..pos {
        key(a, KeyCode::Tab);
    }
    assert_eq!(a.focused_table(), Some(t));
    a.prepare();
    for _ in 0..down {
        key(a, KeyCode::Char('j'));
    }
    a.prepare();
}

/// Every table of every view, with the number of rows to move down (fewer for short tables).
fn tables() -> Vec<(ViewId, TableId)> {
    VIEWS
        .iter()
        .flat_map(|v| v.tables().iter().map(move |t| (v.id(), t.id())))
        .filter(|(_, t)| *t != views::audit::TABLE)
        .collect()
}

#[test]
fn every_table_keeps_its_selection_through_a_reordering_relist() {
    let mut checked = 0;
    for (view, t) in tables() {
        // With the recorded alerts and silences, so that the Alerts view's tables have rows.
        let mut a = common::app_with_alerts();
        // A second source, so that the Sources table has rows to move between.
        a.update(Msg::Update(Update::Status(gpuplane::model::protocol::SourceStatus {
            cluster: Default::default(),
            name: "prom".into(),
            simulated: false,
            ok_at: None,
            error: Some("connection refused".into()),
            detail: None,
        })));
        let mut backend = Reorderer { rng: fastrand::Rng::with_seed(7) };
        a.goto(view);
        a.prepare();
        let rows = a.ui.tables[t].rows.len();
        assert!(rows >= 2, "{t:?}: the fixed cluster gives this table at least two rows ({rows})");
        open(&mut a, view, t, (rows / 2).min(5));
        let before = a.selected_obj().cloned().unwrap_or_else(|| panic!("{t:?}: a selection"));
        let cells = selected_cells(&mut a, t);
        for n in names(&before) {
            assert!(cells.iter().any(|c| c.contains(&n)), "{t:?}: the row of {before:?} shows {cells:?}");
        }
        // Drop an object the cursor is not on.
        let drop_node = a
            .state()
            .nodes
            .iter()
            .map(|n| n.name.clone())
            .find(|n| before.node().is_none_or(|b| b.name != *n));
        let drop_job = a.state().jobs.iter().map(|j| j.id).find(|&id| before.job() != Some(id));
        for _ in 0..3 {
            let u = backend.relist(&a, drop_node.as_deref(), drop_job);
            assert!(a.update(Msg::Update(u)), "a relist is a change");
            let u = backend.realert(&a);
            a.update(Msg::Update(u));
            a.prepare();
            assert_eq!(a.selected_obj(), Some(&before), "{t:?}: the cursor left its object");
            let now = selected_cells(&mut a, t);
            for n in names(&before) {
                assert!(now.iter().any(|c| c.contains(&n)), "{t:?}: the selected row shows {now:?}, not {n}");
            }
        }
        checked += 1;
    }
    assert!(checked >= 12, "every table view is driven ({checked})");
}

/// The node and job of the table's first row, unless the cursor is on them: removing them
/// moves every row below up by one.
fn first_row_objects(a: &mut App, t: TableId) -> (Option<String>, Option<u64>) {
    a.prepare();
    let first = a.ui.tables[t].rows[0];
    let cx = a.cx();
    let id = t.source().identity(&cx, first).expect("an identity");
    let sel = a.selected_obj().cloned().expect("a selection");
    let node = id.node().filter(|n| sel.node() != Some(*n)).map(|n| n.name.to_string());
    let job = id.job().filter(|&j| sel.job() != Some(j));
    (node, job)
}

#[test]
fn the_detail_pane_and_the_history_focus_stay_on_the_chosen_node_gpu_and_job() {
    for (view, t, name_of) in [
        (views::nodes::ID, views::nodes::TABLE, 0usize),
        (views::gpus::ID, views::gpus::TABLE, 0),
        (views::jobs::ID, views::jobs::TABLE, 1),
    ] {
        let mut a = app();
        let mut backend = Reorderer { rng: fastrand::Rng::with_seed(11) };
        open(&mut a, view, t, 12);
        let (drop_node, drop_job) = first_row_objects(&mut a, t);
        assert!(drop_node.is_some() || drop_job.is_some(), "{t:?}: a row above the cursor to remove");
        key(&mut a, KeyCode::Enter);
        assert!(a.ui.detail, "{t:?}: detail open");
        let focus = a.focus().expect("a focus");
        let shown = selected_cells(&mut a, t)[name_of].trim_end_matches('~').to_string();
        for _ in 0..3 {
            let u = backend.relist(&a, drop_node.as_deref(), drop_job);
            a.update(Msg::Update(u));
            let screen = render(&mut a, 160, 48);
            assert_eq!(a.focus(), Some(focus.clone()), "{t:?}");
            assert!(screen.contains(&shown), "{t:?}: the detail pane lost {shown:?}:\n{screen}");
        }
    }
}

#[test]
fn marks_and_action_targets_are_the_objects_the_operator_saw() {
    let mut a = app();
    let mut backend = Reorderer { rng: fastrand::Rng::with_seed(3) };
    open(&mut a, views::nodes::ID, views::nodes::TABLE, 0);
    // Nodes that can be cordoned and drained.
    common::typed(&mut a, "/state=alloc\r");
    key(&mut a, KeyCode::Char('j'));
    // Mark two nodes (space marks and moves down), then put the cursor on a third.
    let mut marked: Vec<String> = Vec::new();
    for _ in 0..2 {
        marked.push(selected_cells(&mut a, views::nodes::TABLE)[0].clone());
        key(&mut a, KeyCode::Char(' '));
    }
    key(&mut a, KeyCode::Char('j'));
    let cursor = match a.selected_obj() {
        Some(ObjKey::Node(n)) => n.name.to_string(),
        o => panic!("{o:?}"),
    };
    // The node shown first (not marked: the cursor started one below it) goes away.
    let (gone, _) = first_row_objects(&mut a, views::nodes::TABLE);
    let gone = gone.expect("a first row");
    assert!(!marked.contains(&gone));
    let u = backend.relist(&a, Some(&gone), None);
    a.update(Msg::Update(u));
    a.prepare();
    // The marks are the same nodes, shown as marked wherever they sorted to.
    let cluster = a.state().cluster.clone();
    let want: std::collections::BTreeSet<NodeKey> =
        marked.iter().map(|m| NodeKey { cluster: cluster.clone(), name: Text::from(m.as_str()) }).collect();
    assert_eq!(a.marks.nodes, want);
    // The action takes the marked nodes.
    a.start_action(ActionKind::Cordon);
    let Mode::Confirm(c) = &a.ui.mode else { panic!("confirm: {:?}", a.ui.message) };
    let mut targets = c.req.targets.clone();
    targets.sort();
    assert_eq!(targets, marked);
    key(&mut a, KeyCode::Esc);
    // Without marks, the node under the cursor, after another relist.
    a.marks.nodes.clear();
    a.ui.mode = Mode::Normal;
    let u = backend.relist(&a, Some(&gone), None);
    a.update(Msg::Update(u));
    a.start_action(ActionKind::Drain);
    let Mode::Confirm(c) = &a.ui.mode else { panic!("confirm: {:?}", a.ui.message) };
    assert_eq!(c.req.targets, vec![cursor]);
}

#[test]
fn a_removed_object_is_never_claimed_by_the_cursor() {
    let mut a = app();
    let mut backend = Reorderer { rng: fastrand::Rng::with_seed(5) };
    open(&mut a, views::jobs::ID, views::jobs::TABLE, 3);
    let Some(ObjKey::Job(gone)) = a.selected_obj().cloned() else { panic!("a job") };
    let u = backend.relist(&a, None, Some(gone.id));
    a.update(Msg::Update(u));
    a.prepare();
    let now = a.selected_obj().cloned().expect("the cursor stays on a row");
    assert_ne!(now, ObjKey::Job(gone.clone()), "the cursor still claims the removed job");
    // … and what it claims is what its row shows.
    let id = selected_cells(&mut a, views::jobs::TABLE)[0].clone();
    assert_eq!(now.job().map(|j| j.to_string()), Some(id));
}

#[test]
fn an_incident_jump_lands_on_the_incident_the_operator_chose() {
    let mut a = app();
    let mut backend = Reorderer { rng: fastrand::Rng::with_seed(9) };
    open(&mut a, views::overview::ID, views::overview::INCIDENTS, 0);
    // The first incident about a node.
    let node = loop {
        let s = a.state();
        let row = a.ui.tables[views::overview::INCIDENTS].selected_key().expect("incidents");
        if let Some(n) = &s.incidents[row as usize].node {
            break n.clone();
        }
        let before = a.ui.tables[views::overview::INCIDENTS].selected;
        key(&mut a, KeyCode::Char('j'));
        a.prepare();
        assert_ne!(a.ui.tables[views::overview::INCIDENTS].selected, before, "an incident about a node");
    };
    key(&mut a, KeyCode::Enter); // open the detail
    let u = backend.relist(&a, None, None);
    a.update(Msg::Update(u));
    a.prepare();
    key(&mut a, KeyCode::Enter); // jump
    assert_eq!(a.ui.view, views::nodes::ID);
    match a.selected_obj() {
        Some(ObjKey::Node(n)) => assert_eq!(n.name, node),
        o => panic!("{o:?}"),
    }
}

#[test]
fn the_audit_table_follows_its_record_when_newer_ones_arrive() {
    let mut a = app();
    let rec = |seq: u64| {
        serde_json::from_value::<gpuplane::audit::Record>(serde_json::json!({
            "seq": seq, "ts": "2026-01-01T00:00:00Z", "os_user": "u", "identity": null, "host": "h",
            "cluster": "c", "action": "cordon", "targets": [format!("gpu-{seq:03}")], "reason": null,
            "ticket": null, "params": {}, "phase": "intent", "result": null, "error": null,
            "break_glass": null, "op_id": format!("op-{seq}"), "prev_hash": "", "hash": ""
        }))
        .expect("a record")
    };
    a.update(Msg::Op(gpuplane::ops::OpEvent::Audit((1..=5).rev().map(rec).collect())));
    open(&mut a, views::audit::ID, views::audit::TABLE, 2);
    let before = a.selected_obj().cloned().expect("a record");
    a.update(Msg::Op(gpuplane::ops::OpEvent::Audit((1..=8).rev().map(rec).collect())));
    a.prepare();
    assert_eq!(a.selected_obj(), Some(&before));
}
