//! Snapshot tests of every view at 60×20, 80×24 and 160×48 (and 120×40, 200×60) from a fixed simulator seed.

use crate::common;

use crate::common::{app, app_with_acceptance, render, typed};

fn snap(name: &str, keys: &str) {
    for (w, h) in [(60u16, 20u16), (80, 24), (160, 48)] {
        let mut a = app();
        typed(&mut a, keys);
        let screen = render(&mut a, w, h);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen);
    }
}

#[test]
fn sources() {
    snap("sources", ":sources\r");
}

#[test]
fn overview() {
    snap("overview", "");
}

#[test]
fn overview_incident_detail() {
    snap("overview_detail", "\r");
}

#[test]
fn nodes() {
    snap("nodes", ":nodes\r");
}

#[test]
fn nodes_detail() {
    snap("nodes_detail", ":nodes\r\r");
}

#[test]
fn gpus_table() {
    snap("gpus", ":gpus\r");
}

#[test]
fn gpus_wall_util_and_temp() {
    snap("wall", ":wall\r");
    snap("wall_temp", ":wall\rt");
}

#[test]
fn topology_with_a_node_open() {
    // open the first pool, go to its first node and open it
    snap("topology", ":topo\r\rj\r");
}

#[test]
fn fabric_with_acceptance_results() {
    for (w, h) in [(60u16, 20u16), (80, 24), (160, 48)] {
        let mut a = app_with_acceptance();
        typed(&mut a, ":fabric\r");
        let screen = render(&mut a, w, h);
        insta::assert_snapshot!(format!("fabric_acceptance_{w}x{h}"), screen);
    }
}

#[test]
fn fabric() {
    snap("fabric", ":fabric\r");
}

#[test]
fn storage() {
    snap("storage", ":storage\r\r");
}

#[test]
fn jobs() {
    snap("jobs", ":jobs\r");
}

/// A running job's detail: its Efficiency section (EFF weighted by GPU-hours, GPUs idle now).
#[test]
fn jobs_running_detail() {
    snap("jobs_running_detail", ":jobs id==100034\r\r");
}

/// A job's detail with the evidence on its nodes over the hour beside its Efficiency section:
/// a finding with its figure, ceiling and time, a quiet node's measured figures, and a figure
/// that had no data said as such.
#[test]
fn jobs_detail_evidence() {
    use gpuplane::model::evidence::{Ceilings, Evidence, EvidenceKind, Finding, Load, NodeEvidence};
    use gpuplane::model::protocol::{Focus, FocusHistory, Update};
    use gpuplane::tui::app::Msg;
    for (w, h) in [(60u16, 20u16), (80, 24), (160, 48)] {
        let mut a = app();
        typed(&mut a, ":jobs id==100034\r\r");
        render(&mut a, w, h);
        let focus = a.focus().expect("the open pane has a focus");
        let Focus::Job(id, gpus) = &focus else { panic!("{focus:?}") };
        let mut nodes: Vec<String> = gpus.iter().map(|(n, _)| n.to_string()).collect();
        nodes.dedup();
        let now = a.state().now;
        let load = |mean: f64, at: i64| Load {
            mean: Some(mean),
            peak: Some(mean * 1.2),
            at_ceiling_s: Some(at),
            at_ceiling_mean: (at > 0).then_some(mean),
        };
        let node = |n: &str, storage: f64, at: i64| NodeEvidence {
            node: n.into(),
            storage: load(storage, at),
            disk: load(0.02, 0),
            cpu: Load::default(),
            ib_errors_received: Some(0.0),
            ib_symbol_errors: Some(0.0),
            ib_link_downed: Some(0.0),
        };
        let mut ev_nodes = vec![node(&nodes[0], 1.96e9, 2460)];
        ev_nodes.extend(nodes.iter().skip(1).map(|n| node(n, 3.0e6, 0)));
        ev_nodes.push(node("quiet-1", 3.0e6, 0));
        let text =
            format!("storage at 98% of its 2.0 GB/s ceiling for 41m00s of the last hour on {}", nodes[0]);
        let evidence = Evidence {
            start: now - 3600,
            end: now,
            step_s: 60,
            ceilings: Ceilings::default(),
            nodes: ev_nodes,
            findings: vec![Finding {
                kind: EvidenceKind::Storage,
                node: nodes[0].clone(),
                value: 1.96e9,
                ceiling: Some(2.0e9),
                seconds: Some(2460),
                text: text.clone(),
            }],
            no_data: vec!["no data for CPU (node_cpu_seconds_total)".into()],
            queries: 15,
        };
        a.update(Msg::Update(Update::History(Box::new(FocusHistory {
            focus: Focus::Job(*id, gpus.clone()),
            start: now - 3600,
            step: 30,
            series: vec![gpuplane::model::protocol::HistorySeries {
                metric: "util",
                values: (0..121).map(|k| Some(if k % 10 < 2 { 90.0 } else { 3.0 })).collect(),
            }],
            at: now,
            evidence: Some(Box::new(evidence)),
        }))));
        let screen = render(&mut a, w, h);
        if h == 48 {
            assert!(screen.contains("Evidence on its nodes (last 60 min"), "{screen}");
            assert!(screen.contains("storage at 98% of its 2.0 GB/s"), "{screen}");
            assert!(screen.contains("no data for CPU"), "{screen}");
            assert!(screen.contains("quiet-1: nothing at a ceiling; storage 3.0MB/s"), "{screen}");
        }
        insta::assert_snapshot!(format!("jobs_detail_evidence_{w}x{h}"), screen);
    }
}

#[test]
fn jobs_pending_detail() {
    snap("jobs_pending_detail", ":jobs user==researcher state=pending\r\r");
}

#[test]
fn queues_and_my_jobs() {
    snap("queues", ":queues\r");
}

#[test]
fn quotas() {
    snap("quotas", ":quotas\r");
}

/// The Cost view's `by` key (b): rows by user, by cluster, the jobs alone, runs that did not
/// complete by cause beside the queue wait.
#[test]
fn cost_by_user_cluster_job_and_cause() {
    snap("cost_by_user", ":cost\rb");
    snap("cost_by_cluster", ":cost\rbb");
    snap("cost_by_job", ":cost\rbbb");
    snap("cost_by_cause", ":cost\rbbbb");
}

/// Team budgets in the view (burn per day, the date a budget runs out), and the breakdown bar
/// legible without colour or Unicode: the monochrome theme on an ASCII terminal.
#[test]
fn cost_budgets_monochrome_ascii() {
    use gpuplane::tui::{app::App, keymap::Keymap, theme::Theme, widgets::Glyphs};
    for (w, h) in [(60u16, 20u16), (80, 24), (160, 48)] {
        common::pin_utc();
        let mut state = gpuplane::testing::state_after(Default::default(), 30);
        state.prices.budgets.insert("llm-pretrain".into(), 60_000.0);
        state.prices.budgets.insert("vision".into(), 500_000.0);
        let mut a = App::new(
            state,
            Keymap::builtin("default"),
            Theme::builtin("monochrome"),
            Glyphs::ASCII,
            "researcher".into(),
        );
        typed(&mut a, ":cost\r");
        let screen = render(&mut a, w, h);
        assert!(screen.is_ascii(), "{screen}");
        insta::assert_snapshot!(format!("cost_budgets_ascii_{w}x{h}"), screen);
    }
}

/// Every part of the bar and every column the Cost view shows is defined in its help.
#[test]
fn cost_help_defines_every_term() {
    let mut a = app();
    typed(&mut a, ":cost\r");
    let help: Vec<String> = gpuplane::tui::help::entries(&a)
        .into_iter()
        .filter_map(|e| match e {
            gpuplane::tui::help::Entry::Item(k, t) => Some(format!("{k} {t}")),
            _ => None,
        })
        .collect();
    for term in [
        "U useful",
        "i alloc-idle",
        "? unmeasured",
        "- unallocated",
        "x unhealthy",
        "F failed",
        "o overhead",
        "SHARED $",
        "USEFUL",
        "GPU-H",
        "WAIT GPU-H",
        "budget",
        "causes",
        "unit cost",
    ] {
        assert!(help.iter().any(|l| l.starts_with(term)), "help does not define {term:?}");
    }
    // Only while the Cost view is open.
    typed(&mut a, ":nodes\r");
    assert!(
        !gpuplane::tui::help::entries(&a)
            .iter()
            .any(|e| matches!(e, gpuplane::tui::help::Entry::Item(k, _) if k == "U useful"))
    );
}

#[test]
fn cost() {
    snap("cost", ":cost\r");
    snap("cost_7d", ":cost\r]");
}

#[test]
fn help() {
    snap("help", "?");
}

#[test]
fn audit_view_and_confirmation_dialog() {
    snap("audit_empty", ":audit\r");
    // drain the first allocated node: the dialog shows the plan, reason, ticket, typed name
    snap("confirm_drain", ":nodes state=alloc\rr");
}

/// The node detail pane with its last hour from the history source (range queries for what the
/// pane shows): the pane publishes its focus, and a history for it is drawn, gaps as dots.
#[test]
fn nodes_detail_with_range_history() {
    use gpuplane::model::protocol::{Focus, FocusHistory, HistorySeries, Update};
    use gpuplane::tui::app::Msg;
    for (w, h) in [(60u16, 20u16), (80, 24), (160, 48)] {
        let mut a = app();
        typed(&mut a, ":nodes\r\r");
        render(&mut a, w, h);
        let focus = a.focus().expect("the open pane has a focus");
        let Focus::Node(name) = &focus else { panic!("{focus:?}") };
        assert_eq!(name, &a.state().nodes[0].name);
        let wave = |k: usize, base: f32, amp: f32| {
            (!(40..46).contains(&k)).then(|| base + amp * ((k as f32) / 9.0).sin())
        };
        let start = a.state().now - 3600;
        a.update(Msg::Update(Update::History(Box::new(FocusHistory {
            focus: focus.clone(),
            start,
            step: 30,
            series: vec![
                HistorySeries { metric: "util", values: (0..121).map(|k| wave(k, 60.0, 35.0)).collect() },
                HistorySeries { metric: "temp", values: (0..121).map(|k| wave(k, 62.0, 10.0)).collect() },
                HistorySeries {
                    metric: "power",
                    values: (0..121).map(|k| wave(k, 4800.0, 1500.0)).collect(),
                },
                HistorySeries { metric: "nvlink", values: (0..121).map(|k| wave(k, 900.0, 400.0)).collect() },
            ],
            at: a.state().now,
            evidence: None,
        }))));
        let screen = render(&mut a, w, h);
        if h == 48 {
            assert!(screen.contains("last 60 min (Prometheus, 30 s steps)"), "{screen}");
            assert!(screen.contains('·'), "the gap is drawn: {screen}");
            assert!(screen.contains("nvlink") && screen.contains("TB/s"), "NVLink throughput: {screen}");
        }
        insta::assert_snapshot!(format!("nodes_detail_history_{w}x{h}"), screen);
        // Another node's history is not drawn in this pane.
        typed(&mut a, "\x1bj\r");
        render(&mut a, w, h);
        assert_ne!(a.focus(), Some(focus.clone()));
        assert!(!render(&mut a, w, h).contains("last 60 min"));
    }
}

/// The GPU heatmap asks for the fleet's last hour; once it arrives the strip charts it.
#[test]
fn wall_strip_charts_the_fleets_hour() {
    use gpuplane::model::protocol::{Focus, FocusHistory, HistorySeries, Update};
    use gpuplane::tui::app::Msg;
    let mut a = app();
    typed(&mut a, ":wall\r");
    let before = render(&mut a, 80, 24);
    assert_eq!(a.focus(), Some(Focus::Fleet));
    assert!(before.contains("cluster") && !before.contains("fleet 1h"), "{before}");
    let start = a.state().now - 3600;
    a.update(Msg::Update(Update::History(Box::new(FocusHistory {
        focus: Focus::Fleet,
        start,
        step: 30,
        series: vec![HistorySeries {
            metric: "util",
            values: (0..121).map(|k| Some(k as f32 * 0.5 + 20.0)).collect(),
        }],
        at: a.state().now,
        evidence: None,
    }))));
    let screen = render(&mut a, 80, 24);
    let strip = screen.lines().find(|l| l.contains("fleet 1h")).unwrap_or_else(|| panic!("{screen}"));
    assert!(
        strip.contains("▂") && strip.contains("▄") && strip.trim_end_matches('│').trim_end().ends_with("80%"),
        "{strip}"
    );
    // Leaving the heatmap drops the fleet focus (nothing on screen to chart).
    typed(&mut a, ":nodes\r");
    assert_eq!(a.focus(), None);
}

/// Like [`snap`], with keys a string cannot type.
fn snap_with(name: &str, prepare: impl Fn(&mut gpuplane::tui::app::App)) {
    for (w, h) in [(60u16, 20u16), (80, 24), (160, 48)] {
        let mut a = app();
        prepare(&mut a);
        let screen = render(&mut a, w, h);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen);
    }
}

/// Jumped from the first incident (an open XID on gpu-004's GPU 3; gpu-007's XID 48 sorts below,
/// mitigated by the simulator's drain): the GPU leads the node's detail.
#[test]
fn nodes_detail_jumped_from_an_incident() {
    snap_with("nodes_detail_incident", |a| {
        typed(a, "\r");
        render(a, 80, 24);
        typed(a, "\r");
    });
}

/// The detail pane a page down (its own scroll).
#[test]
fn nodes_detail_scrolled() {
    use common::key;
    use ratatui::crossterm::event::KeyCode;
    snap_with("nodes_detail_pgdn", |a| {
        typed(a, ":nodes\r\r");
        render(a, 80, 24);
        key(a, KeyCode::PageDown);
    });
}

#[test]
fn help_searched() {
    snap("help_search", "?/drain");
}

#[test]
fn command_line_candidates() {
    snap("command_candidates", ":qu\t");
}

/// Twelve marked nodes, one draining already: the dialog says 11 will run and why one will not.
#[test]
fn confirm_batch_with_a_refused_target() {
    snap_with("confirm_batch_refused", |a| {
        let cluster = a.state().cluster.clone();
        let draining = a.state().nodes.iter().find(|n| n.state.label() == "draining").map(|n| n.name.clone());
        let names: Vec<_> = a
            .state()
            .nodes
            .iter()
            .filter(|n| n.state.schedulable())
            .take(11)
            .map(|n| n.name.clone())
            .chain(draining)
            .collect();
        assert_eq!(names.len(), 12);
        for name in names {
            a.marks.nodes.insert(gpuplane::model::NodeKey { cluster: cluster.clone(), name });
        }
        typed(a, ":nodes\rr");
    });
}

/// Every view in the registry at 120×40 and 200×60 (the sizes above cover 60×20 and 80×24):
/// columns take the room their values need and long names get the rest.
#[test]
fn every_view_at_medium_and_large_sizes() {
    for v in gpuplane::tui::views::VIEWS {
        for (w, h) in [(120u16, 40u16), (200, 60)] {
            let mut a = app();
            typed(&mut a, &format!(":{}\r", v.id().0));
            let screen = render(&mut a, w, h);
            insta::assert_snapshot!(format!("view_{}_{w}x{h}", v.id().0), screen);
        }
    }
}

/// Alerts and silences recorded from the real Alertmanager (tests/fixtures/alertmanager/).
#[test]
fn alerts() {
    snap_alerts("alerts", ":alerts\r");
}

/// An alert's detail: labels, annotations, where Enter goes.
#[test]
fn alerts_detail() {
    snap_alerts("alerts_detail", ":alerts\r\r");
}

/// Without an Alertmanager: Prometheus's own alerts (recorded from the test Prometheus's
/// `/api/v1/alerts`, tests/fixtures/prometheus/alerts.json) are the view's, said to come from
/// Prometheus, read-only: no silence is offered, and the silence key says why.
#[test]
fn alerts_from_prometheus() {
    use gpuplane::model::protocol::Update;
    use gpuplane::tui::app::Msg;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/prometheus/alerts.json");
    let body = std::fs::read(path).unwrap();
    // The oracle: the recorded answer itself.
    let raw: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let firing = raw["data"]["alerts"].as_array().unwrap().iter().filter(|a| a["state"] == "firing").count();
    assert!(firing > 0);
    for (w, h) in [(60u16, 20u16), (80, 24), (160, 48)] {
        let mut a = app();
        let now = a.state().now;
        let mut alerts = gpuplane::backend::prom::alerts::parse(&body).unwrap();
        let last = alerts.iter().map(|a| a.starts_at).max().unwrap();
        for x in &mut alerts {
            x.starts_at += now - 60 - last;
        }
        let snap = gpuplane::model::alert::AlertSnapshot {
            source: "prom".into(),
            at: now,
            alerts,
            silences: vec![],
        };
        a.update(Msg::Update(Update::Alerts(Box::new(snap))));
        typed(&mut a, ":alerts\r");
        let screen = render(&mut a, w, h);
        if w >= 160 {
            assert!(
                screen.contains(&format!("Alerts from Prometheus, read-only ({firing} firing")),
                "{screen}"
            );
            assert!(!screen.contains(" silence "), "no silence offered:\n{screen}");
        }
        insta::assert_snapshot!(format!("alerts_prometheus_{w}x{h}"), screen);
        typed(&mut a, "z");
        let msg = a.ui.message.clone().map(|m| m.0).unwrap_or_default();
        assert!(msg.contains("read from Prometheus") && msg.contains("--alertmanager"), "{msg}");
        assert!(!matches!(a.ui.mode, gpuplane::tui::app::Mode::Prompt(_)), "no silence prompt opened");
    }
}

fn snap_alerts(name: &str, keys: &str) {
    for (w, h) in [(60u16, 20u16), (80, 24), (120, 40), (200, 60)] {
        let mut a = common::app_with_alerts();
        typed(&mut a, keys);
        let screen = render(&mut a, w, h);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen);
    }
}

/// The Overview after triage: the first incident acked by bob 3 minutes ago, the incidents of a
/// node the simulator drained mitigated by an audited drain (oncall, INC-4242, 12 minutes ago);
/// unhandled incidents first, handled ones saying how.
fn with_handled_incidents(a: &mut gpuplane::tui::app::App) {
    use gpuplane::model::protocol::Update;
    use gpuplane::model::{Ack, ActionMark, Handling};
    use gpuplane::tui::app::Msg;
    let s = a.state();
    let first = s.incidents.iter().find(|i| !i.lifecycle.handled()).expect("an open incident");
    let drained =
        s.incidents.iter().find(|i| i.lifecycle.label() == "mitigated").and_then(|i| i.node.clone());
    let h = Handling {
        acks: vec![Ack {
            cluster: s.cluster.to_string(),
            key: first.key(),
            by: "bob".into(),
            at: s.now - 180,
            note: "looking".into(),
            ticket: None,
        }],
        actions: drained
            .map(|n| ActionMark {
                cluster: String::new(),
                target: n.to_string(),
                action: "drain".into(),
                by: "oncall".into(),
                at: s.now - 720,
                ticket: Some("INC-4242".into()),
                reason: Some("XID 79 GPU fell off the bus: reboot pending".into()),
            })
            .into_iter()
            .collect(),
    };
    a.update(Msg::Update(Update::Handling(Box::new(h))));
}

#[test]
fn overview_with_handled_incidents() {
    snap_with("overview_handled", with_handled_incidents);
}

/// The mitigated XID 48's detail: how it is handled, its playbook's steps, and the escalation
/// its repeat count (×2 in 24 h) reached.
#[test]
fn overview_incident_playbook_detail() {
    snap_with("overview_playbook_detail", |a| {
        with_handled_incidents(a);
        typed(a, "/Double-bit\r\r");
    });
}

/// ASCII mode (`LANG=C`, the Linux console): every view, the help and the confirmation dialog
/// draw nothing but ASCII (no `×`, `°`, `…`, box drawing, arrows or dots).
#[test]
fn ascii_mode_draws_only_ascii() {
    use gpuplane::tui::widgets::Glyphs;
    let mut keys: Vec<String> =
        gpuplane::tui::views::VIEWS.iter().map(|v| format!(":{}\r\r", v.id().0)).collect();
    keys.extend([
        "?".into(),
        ":nodes state=alloc\rr".into(),
        ":wall\r".into(),
        ":topo\r\rj\r".into(),
        "\r\r".into(),
    ]);
    for k in keys {
        let mut a = common::app_sized(16, "dark", Glyphs::ASCII);
        typed(&mut a, &k);
        let screen = render(&mut a, 120, 40);
        let bad: String = screen.chars().filter(|c| !c.is_ascii()).collect();
        assert!(bad.is_empty(), "{k:?} draws {bad:?}:\n{screen}");
    }
}

/// Without colour (NO_COLOR: the monochrome theme) the cursor row and CRIT cells are both
/// reverse video: the cursor row also starts with `>`, and only that row does.
#[test]
fn monochrome_marks_the_cursor_row_in_text() {
    use gpuplane::tui::widgets::Glyphs;
    for keys in [":nodes\r", ":jobs\rjj"] {
        let mut a = common::app_sized(16, "monochrome", Glyphs::UNICODE);
        typed(&mut a, keys);
        let screen = render(&mut a, 80, 24);
        let marked: Vec<&str> = screen.lines().filter(|l| l.starts_with("│>")).collect();
        assert_eq!(marked.len(), 1, "{keys:?}:\n{screen}");
        // The colour themes need no marker.
        let mut a = app();
        typed(&mut a, keys);
        assert!(!render(&mut a, 80, 24).lines().any(|l| l.starts_with("│>")));
    }
}

/// 2,000 nodes do not fit a GPU a cell: the wall labels its rows and falls back to a node a
/// cell (160x48), then to a row per pool (80x24); 16 nodes keep a GPU a cell, rows labelled.
#[test]
fn wall_labels_rows_and_aggregates_when_the_cluster_does_not_fit() {
    use gpuplane::tui::widgets::Glyphs;
    let mut a = app();
    typed(&mut a, ":wall\r");
    let small = render(&mut a, 80, 24);
    assert!(small.lines().nth(3).is_some_and(|l| l.starts_with("│gpu-001 ")), "{small}");
    assert!(!small.contains("cell=node"), "{small}");
    let mut big = common::app_sized(2000, "dark", Glyphs::UNICODE);
    typed(&mut big, ":wall\r");
    let wide = render(&mut big, 160, 48);
    assert!(wide.contains("cell=node"), "{wide}");
    let rows = wide.lines().filter(|l| l.starts_with("│gpu-")).count();
    assert!((2000usize.div_ceil(160)..=44).contains(&rows), "{rows} labelled rows:\n{wide}");
    insta::assert_snapshot!("wall_2000_nodes_160x48", wide);
    let narrow = render(&mut big, 80, 24);
    assert!(narrow.contains("row=pool"), "{narrow}");
    let pools: std::collections::BTreeSet<&str> = big.state().nodes.iter().map(|n| n.pool.as_str()).collect();
    for p in &pools {
        assert!(narrow.lines().any(|l| l.starts_with(&format!("│{p} "))), "pool {p} labels a row:\n{narrow}");
    }
    insta::assert_snapshot!("wall_2000_nodes_80x24", narrow);
}

/// Figures scale their units: at 2,000 nodes the power reads in MW and throughput in TB/s.
#[test]
fn units_scale_at_two_thousand_nodes() {
    use gpuplane::tui::widgets::Glyphs;
    let mut a = common::app_sized(2000, "dark", Glyphs::UNICODE);
    let overview = render(&mut a, 120, 40);
    assert!(overview.contains("MW") && !overview.contains("00kW"), "{overview}");
    typed(&mut a, ":storage\r");
    let storage = render(&mut a, 120, 40);
    assert!(storage.contains("TB/s"), "{storage}");
    assert!(
        !storage
            .lines()
            .any(|l| l.contains("GB/s") && l.split_whitespace().any(|w| w.len() > 9 && w.ends_with("GB/s"))),
        "{storage}"
    );
}

/// The Topology tree groups by rack when nodes carry a rack label (the simulator's do), by
/// pool when none does.
#[test]
fn topology_groups_by_rack_else_by_pool() {
    let mut a = app();
    typed(&mut a, ":topo\r");
    let racks = render(&mut a, 120, 40);
    assert!(racks.contains("rack r001") && racks.contains("4 nodes, 32 GPUs ("), "{racks}");
    let mut state = gpuplane::testing::state_after(gpuplane::testing::SimConfig::default(), 30);
    for n in &mut state.nodes {
        n.labels.retain(|k, _| !k.contains("rack"));
    }
    let pools: std::collections::BTreeSet<String> = state.nodes.iter().map(|n| n.pool.to_string()).collect();
    let mut a = gpuplane::tui::app::App::new(
        state,
        gpuplane::tui::keymap::Keymap::builtin("default"),
        gpuplane::tui::theme::Theme::builtin("dark"),
        gpuplane::tui::widgets::Glyphs::UNICODE,
        "researcher".into(),
    );
    typed(&mut a, ":topo\r");
    let by_pool = render(&mut a, 120, 40);
    assert!(!by_pool.contains("rack "), "{by_pool}");
    for p in pools {
        assert!(by_pool.contains(&p), "{p}: {by_pool}");
    }
}

/// A filesystem filling up says when it will be full, from its recorded fill.
#[test]
fn storage_forecasts_time_to_full() {
    let mut a = app();
    typed(&mut a, ":storage\r");
    let screen = render(&mut a, 120, 40);
    assert!(screen.contains("FULL IN"), "{screen}");
    let ckpt = screen.lines().find(|l| l.contains("weka-ckpt")).unwrap_or_else(|| panic!("{screen}"));
    assert!(ckpt.contains(" ~"), "the checkpoint store fills during a checkpoint burst: {ckpt}");
    typed(&mut a, "/weka\r\r");
    let detail = render(&mut a, 120, 40);
    assert!(detail.contains("full in") && detail.contains("at the fill rate of the last"), "{detail}");
}

/// The Timeline on the fixed cluster: what its first look dated (XIDs, drains with their
/// reason time, jobs that ended failed or preempted), newest first, times with their zone.
#[test]
fn timeline() {
    snap("timeline", ":timeline\r");
}

/// A timeline event's detail, and the view filtered to one kind.
#[test]
fn timeline_detail_and_filtered() {
    snap("timeline_detail", ":timeline\r\r");
    snap("timeline_xid", ":timeline kind=xid since=1h\r");
}
