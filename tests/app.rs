//! Headless tests of the console: messages in, UI state and screen out.

mod common;

use common::{app, app_with_sim, key, render, typed};
use gpuplane::model::JobState;
use gpuplane::model::protocol::{Delta, Update};
use gpuplane::tui::app::{Mode, Msg, complete};
use gpuplane::tui::views;
use ratatui::crossterm::event::KeyCode;

/// The names in the Jobs table, in display order.
fn job_names(a: &mut gpuplane::tui::app::App) -> Vec<String> {
    a.prepare();
    a.ui.tables[views::jobs::TABLE]
        .rows
        .iter()
        .map(|&k| a.state().jobs[k as usize].name.to_string())
        .collect()
}

#[test]
fn command_mode_switches_view_and_sets_the_filter() {
    let mut a = app();
    typed(&mut a, ":jobs user=alice\r");
    assert_eq!(a.ui.view, views::jobs::ID);
    a.prepare();
    let t = &a.ui.tables[views::jobs::TABLE];
    assert_eq!(t.filter.raw, "user=alice");
    assert!(!t.rows.is_empty());
    assert!(t.rows.iter().all(|&k| a.state().jobs[k as usize].user.contains("alice")));
}

#[test]
fn unknown_command_says_so() {
    let mut a = app();
    typed(&mut a, ":bogus\r");
    assert_eq!(a.ui.view, views::overview::ID);
    assert!(a.ui.message.as_ref().unwrap().0.contains("unknown command"));
}

#[test]
fn completion_goes_to_the_canonical_name() {
    assert_eq!(complete("jo").0, "jobs ");
    assert_eq!(complete("no").0, "nodes ");
    assert_eq!(complete("topo").0, "topology ");
    let (buf, cands) = complete("qu");
    assert_eq!(buf, "qu");
    assert!(cands.contains(&"queues") && cands.contains(&"quotas") && cands.contains(&"quit"), "{cands:?}");
    assert_eq!(complete("zzz").1.len(), 0);
}

#[test]
fn q_command_quits() {
    let mut a = app();
    typed(&mut a, ":q\r");
    assert!(a.ui.quit);
}

#[test]
fn filter_narrows_live_and_esc_clears() {
    let mut a = app();
    typed(&mut a, ":nodes\r");
    a.prepare();
    let all = a.ui.tables[views::nodes::TABLE].rows.len();
    typed(&mut a, "/state=down");
    assert!(matches!(a.ui.mode, Mode::Filter(_)));
    a.prepare();
    let down = a.ui.tables[views::nodes::TABLE].rows.clone();
    assert!(!down.is_empty() && down.len() < all);
    assert!(down.iter().all(|&k| a.state().nodes[k as usize].state.label() == "down"));
    // negation gives the complement
    typed(&mut a, "\x1b/!state=down\r");
    a.prepare();
    assert_eq!(a.ui.tables[views::nodes::TABLE].rows.len(), all - down.len());
    key(&mut a, KeyCode::Esc);
    a.prepare();
    assert_eq!(a.ui.tables[views::nodes::TABLE].rows.len(), all);
}

#[test]
fn label_filters_match_node_labels() {
    let mut a = app();
    let (k, v) = {
        let n = &a.state().nodes[0];
        let (k, v) = n.labels.iter().next().expect("simulated nodes have labels");
        (k.to_string(), v.to_string())
    };
    typed(&mut a, &format!(":nodes {k}=={v}\r"));
    a.prepare();
    let rows = &a.ui.tables[views::nodes::TABLE].rows;
    assert!(!rows.is_empty());
    assert!(
        rows.iter()
            .all(|&r| a.state().nodes[r as usize].labels.get(k.as_str()).map(|x| x.as_str())
                == Some(v.as_str()))
    );
}

#[test]
fn sorting_orders_rows_and_reverses() {
    let mut a = app();
    typed(&mut a, ":jobs\r");
    a.prepare();
    let ids: Vec<u64> =
        a.ui.tables[views::jobs::TABLE].rows.iter().map(|&k| a.state().jobs[k as usize].id).collect();
    assert!(ids.windows(2).all(|w| w[0] >= w[1]), "default: newest first");
    // next column: NAME ascending
    typed(&mut a, ">");
    a.prepare();
    let names = job_names(&mut a);
    assert!(names.windows(2).all(|w| w[0] <= w[1]));
    typed(&mut a, "s");
    a.prepare();
    let names = job_names(&mut a);
    assert!(names.windows(2).all(|w| w[0] >= w[1]));
}

#[test]
fn selection_follows_the_row_when_data_changes() {
    let (mut a, mut sim) = app_with_sim();
    // sort by utilisation so the order moves as the data does
    typed(&mut a, ":nodes\r>>>>jjj");
    a.prepare();
    let before = a.ui.tables[views::nodes::TABLE].selected_key();
    let name = a.state().nodes[before.unwrap() as usize].name.clone();
    for _ in 0..10 {
        a.update(Msg::Update(sim.tick()));
    }
    a.prepare();
    let after = a.ui.tables[views::nodes::TABLE].selected_key().unwrap();
    assert_eq!(a.state().nodes[after as usize].name, name);
}

#[test]
fn pause_freezes_what_is_shown_while_updates_arrive() {
    let (mut a, mut sim) = app_with_sim();
    let gen_before = a.state().generation;
    typed(&mut a, "p");
    assert!(a.ui.paused);
    assert!(render(&mut a, 100, 30).contains("PAUSED"));
    let changed = a.update(Msg::Update(sim.tick()));
    assert!(!changed, "no redraw for data while paused");
    assert_eq!(a.state().generation, gen_before, "the screen shows the frozen state");
    assert!(a.live.generation > gen_before, "updates keep arriving");
    typed(&mut a, "p");
    assert_eq!(a.state().generation, a.live.generation);
    assert!(!render(&mut a, 100, 30).contains("PAUSED"));
}

#[test]
fn enter_on_an_incident_jumps_to_its_node() {
    let mut a = app();
    let idx = a.state().incidents.iter().position(|i| i.title.starts_with("XID 79")).expect("planted XID 79");
    let node = a.state().incidents[idx].node.clone().unwrap();
    a.prepare();
    a.ui.tables[views::overview::INCIDENTS].select_key(idx as u64);
    typed(&mut a, "\r\r");
    assert_eq!(a.ui.view, views::nodes::ID);
    assert!(a.ui.detail);
    let k = a.ui.tables[views::nodes::TABLE].selected_key().unwrap();
    assert_eq!(a.state().nodes[k as usize].name, node);
    let screen = render(&mut a, 160, 48);
    assert!(screen.contains("XID 79"), "{screen}");
}

#[test]
fn hostile_text_from_the_cluster_never_reaches_the_terminal() {
    let mut a = app();
    let mut job = a.state().jobs.iter().find(|j| j.state == JobState::Running).unwrap().clone();
    job.name = "\u{1b}]0;owned\u{7}evil\u{1b}[2J\u{1b}[31mname\u{202e}gpj".into();
    job.user = "mal\u{1b}[1Alory".into();
    job.exit_reason = Some("\u{9b}6nboom\r\nline2".into());
    let at = a.state().now;
    a.update(Msg::Update(Update::Delta(Box::new(Delta {
        at,
        jobs_upsert: vec![job.clone()],
        ..Default::default()
    }))));
    typed(&mut a, &format!(":jobs {}\r\r", job.id));
    for (w, h) in [(80, 24), (160, 48)] {
        let screen = render(&mut a, w, h);
        assert!(screen.contains("evilname"), "{screen}");
        assert!(screen.contains("mallory"), "{screen}");
        for bad in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}', '\r'] {
            assert!(!screen.contains(bad), "{bad:?} reached the screen");
        }
        assert!(!screen.contains("owned") && !screen.contains("[2J") && !screen.contains("6n"));
    }
}

#[test]
fn help_is_generated_from_the_active_keymap() {
    let mut a = app();
    typed(&mut a, "?");
    let screen = render(&mut a, 100, 60);
    assert!(screen.contains("keymap: default"));
    assert!(screen.contains("filter rows"));
    let mut e = app();
    e.keymap = gpuplane::tui::keymap::Keymap::builtin("emacs");
    e.ui.mode = Mode::Help;
    let screen = render(&mut e, 100, 60);
    assert!(screen.contains("keymap: emacs"));
    assert!(screen.contains("^n"), "emacs bindings listed:\n{screen}");
}

#[test]
fn cost_window_changes_the_totals() {
    let mut a = app();
    typed(&mut a, ":cost\r");
    a.prepare();
    let day = a.cost.total;
    typed(&mut a, "]");
    a.prepare();
    assert!(a.cost.total >= day);
    assert_eq!(a.cost.window_s, 7 * 86_400);
    typed(&mut a, "[[[");
    a.prepare();
    assert_eq!(a.cost.window_s, 3_600);
    assert!(a.cost.total <= day);
}

#[test]
fn long_names_sharing_a_prefix_sort_by_the_whole_name_both_ways() {
    let mut a = app();
    let base = a.state().jobs[0].clone();
    let names = [
        "experiment-sweep-lr-0.003",
        "experiment-sweep-lr-0.0001",
        "experiment-sweep-lr-0.02",
        "experiment-sweep",
    ];
    let jobs: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut j = base.clone();
            j.id = 900_000 + i as u64;
            j.name = (*n).into();
            j
        })
        .collect();
    let at = a.state().now;
    a.update(Msg::Update(Update::Delta(Box::new(Delta { at, jobs_upsert: jobs, ..Default::default() }))));
    typed(&mut a, ":jobs experiment-sweep\r>");
    a.prepare();
    let got = job_names(&mut a);
    let mut want: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(got, want);
    typed(&mut a, "s");
    a.prepare();
    let got = job_names(&mut a);
    want.reverse();
    assert_eq!(got, want);
}

#[test]
fn ctrl_r_asks_polling_backends_to_refresh_now() {
    use futures::FutureExt;
    let mut a = app();
    let n = std::sync::Arc::new(tokio::sync::Notify::new());
    a.refresh_now.push(n.clone());
    assert!(n.notified().now_or_never().is_none(), "no permit before the key");
    a.update(Msg::Key(ratatui::crossterm::event::KeyEvent::new(
        KeyCode::Char('r'),
        ratatui::crossterm::event::KeyModifiers::CONTROL,
    )));
    assert!(n.notified().now_or_never().is_some(), "the key left a permit for the backend");
}

#[test]
fn break_glass_is_time_boxed_audited_and_tags_actions_until_it_expires() {
    use gpuplane::ops::{BreakGlassMsg, OpMsg};
    let mut a = app();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    a.ops_tx = Some(tx);
    a.wall_now = 1_000_000;
    typed(&mut a, ":breakglass INC-42 30 GPU node on fire\r");
    let b = a.break_glass.clone().expect("session started");
    assert_eq!((b.until, b.ticket.as_str()), (1_000_000 + 1800, "INC-42"));
    assert!(matches!(rx.try_recv(), Ok(OpMsg::BreakGlass(BreakGlassMsg::Start { session, minutes: 30, .. }))
        if session.ticket == "INC-42"));
    assert!(render(&mut a, 120, 30).contains("BREAK-GLASS 30:00 INC-42"));
    // an action during the session carries its id
    typed(&mut a, ":nodes state=alloc\rc");
    typed(&mut a, "reason\r");
    match rx.try_recv() {
        Ok(OpMsg::Run(job)) => {
            assert_eq!(job.break_glass.map(|t| (t.session, t.ticket)), Some((b.id, b.ticket)))
        }
        other => panic!("expected the cordon: {other:?}"),
    }
    // expiry drops the elevation and is audited
    a.wall_now += 1800;
    a.update(Msg::Tick);
    assert!(a.break_glass.is_none());
    assert!(
        matches!(rx.try_recv(), Ok(OpMsg::BreakGlass(BreakGlassMsg::End { why, .. })) if why == "expired")
    );
    typed(&mut a, "\x1b:nodes state=alloc\rc");
    typed(&mut a, "reason\r");
    match rx.try_recv() {
        Ok(OpMsg::Run(job)) => assert_eq!(job.break_glass, None, "no elevation after expiry"),
        other => panic!("expected the cordon: {other:?}"),
    }
    // limits
    typed(&mut a, ":breakglass INC-1 9999 too long\r");
    assert!(a.break_glass.is_none());
}

#[test]
fn ctrl_d_in_the_confirmation_makes_it_a_dry_run() {
    use gpuplane::ops::OpMsg;
    let mut a = app();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    a.ops_tx = Some(tx);
    typed(&mut a, ":nodes state=alloc\rc");
    a.update(Msg::Key(ratatui::crossterm::event::KeyEvent::new(
        KeyCode::Char('d'),
        ratatui::crossterm::event::KeyModifiers::CONTROL,
    )));
    assert!(render(&mut a, 100, 30).contains("DRY RUN cordon"));
    typed(&mut a, "check the plan\r");
    match rx.try_recv() {
        Ok(OpMsg::Run(job)) => assert!(job.req.dry_run),
        other => panic!("expected a dry run: {other:?}"),
    }
}

#[test]
fn the_mine_alias_lists_the_current_users_jobs() {
    let mut a = app();
    typed(&mut a, ":mine\r");
    assert_eq!(a.ui.view, views::jobs::ID);
    a.prepare();
    let t = &a.ui.tables[views::jobs::TABLE];
    assert_eq!(t.filter.raw, "user==researcher");
    assert!(!t.rows.is_empty() && t.rows.iter().all(|&k| a.state().jobs[k as usize].user == "researcher"));
}

#[test]
fn user_hotkeys_and_aliases_from_the_config_dir() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hotkeys.toml"),
        "[aliases]\ndown = \"nodes state=down\"\n\n[[hotkeys]]\nkey = \"ctrl-g\"\ncommand = \"gpus\"\ndescription = \"GPU table\"\n\n[[hotkeys]]\nkey = \"j\"\ncommand = \"jobs\"\n",
    )
    .unwrap();
    let mut a = app();
    let (uc, errs) = gpuplane::tui::usercmd::UserCommands::load(Some(dir.path()), &a.keymap);
    assert_eq!(errs.len(), 1, "j is the keymap's: {errs:?}");
    assert!(errs[0].message.contains("already bound"));
    a.user_commands = uc;
    typed(&mut a, ":down\r");
    assert_eq!(a.ui.view, views::nodes::ID);
    assert_eq!(a.ui.tables[views::nodes::TABLE].filter.raw, "state=down");
    a.update(Msg::Key(ratatui::crossterm::event::KeyEvent::new(
        KeyCode::Char('g'),
        ratatui::crossterm::event::KeyModifiers::CONTROL,
    )));
    assert_eq!(a.ui.view, views::gpus::ID);
    typed(&mut a, "?");
    let screen = render(&mut a, 120, 200);
    assert!(screen.contains(":down") && screen.contains("GPU table"), "{screen}");
    // A broken file names the line; the built-in alias stays.
    std::fs::write(dir.path().join("hotkeys.toml"), "[aliases]\nx = 3\n").unwrap();
    let (uc, errs) = gpuplane::tui::usercmd::UserCommands::load(Some(dir.path()), &a.keymap);
    assert!(errs[0].message.starts_with("line 2"), "{errs:?}");
    assert!(uc.aliases.contains_key("mine"));
}

#[test]
fn dangerous_plugins_are_audited_and_hidden_in_read_only_mode() {
    use gpuplane::ops::OpMsg;
    let plugin = gpuplane::tui::plugins::Plugin {
        name: "power-cycle".into(),
        shortcut: "ctrl-x".into(),
        scopes: vec!["nodes".into()],
        command: "ipmitool".into(),
        args: vec!["-H".into(), "$NODE-bmc".into(), "power".into(), "cycle".into()],
        confirm: true,
        background: true,
        dangerous: true,
        shell: false,
        description: String::new(),
    };
    let ctrl_b = || {
        Msg::Key(ratatui::crossterm::event::KeyEvent::new(
            KeyCode::Char('x'),
            ratatui::crossterm::event::KeyModifiers::CONTROL,
        ))
    };
    let mut a = app();
    a.plugins = vec![plugin.clone()];
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    a.ops_tx = Some(tx);
    typed(&mut a, ":nodes\r");
    a.update(ctrl_b());
    assert!(a.pending_plugin.is_none(), "confirm: the first press only arms it");
    assert!(a.ui.message.as_ref().unwrap().0.contains("again"));
    a.update(ctrl_b());
    let run = a.pending_plugin.take().expect("runs on the second press");
    assert_eq!((run.program.as_str(), run.args[1].as_str()), ("ipmitool", "gpu-001-bmc"));
    match rx.try_recv() {
        Ok(OpMsg::Event { action, reason, .. }) => {
            assert_eq!(action, "plugin power-cycle");
            assert!(reason.contains("gpu-001-bmc"));
        }
        other => panic!("a dangerous plugin is audited: {other:?}"),
    }
    // Read-only: the shortcut does nothing.
    let mut ro = app();
    ro.plugins = vec![plugin];
    ro.readonly = true;
    typed(&mut ro, ":nodes\r");
    ro.update(ctrl_b());
    ro.update(ctrl_b());
    assert!(ro.pending_plugin.is_none());
}

/// The whole console road of an acceptance run on the simulator: mark nodes in the Fabric
/// view, press the key, read the plan, give the reason and the count, and watch the ops task
/// follow each job through its states to a verdict that the Fabric view, the suspects list
/// and the Overview's incidents then show.
#[tokio::test]
async fn acceptance_key_on_marked_simulated_nodes_runs_tracks_and_judges() {
    use gpuplane::acceptance::{JudgeConfig, Store};
    use gpuplane::ops::{AcceptanceSetup, OpEvent, Ops, SimExecutor, worker_with};
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let mut a = app();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (ev_tx, mut ev_rx) = tokio::sync::mpsc::unbounded_channel();
    a.ops_tx = Some(tx);
    let ops = Ops {
        audit: gpuplane::audit::AuditLog::new(dir.path().join("audit.jsonl")),
        readonly: false,
        cluster: "sim".into(),
        break_glass: None,
    };
    let exec = SimExecutor::Direct {
        sim: Box::new(gpuplane::backend::sim::Sim::new(gpuplane::backend::sim::SimConfig::default())),
        user: "researcher".into(),
    };
    let mut judge = JudgeConfig::default();
    // The simulated fleet mixes H100 and H200 nodes.
    judge.baseline.insert("8xH100".into(), 470.0);
    judge.baseline.insert("8xH200".into(), 470.0);
    let store = Store::new(dir.path().join("acceptance.jsonl"));
    let setup = AcceptanceSetup {
        store: store.clone(),
        judge,
        wait: Duration::from_secs(60),
        every: Duration::from_millis(1),
    };
    tokio::spawn(worker_with(ops, Box::new(exec), rx, ev_tx, Some(setup)));
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(60), ev_rx.recv()).await.expect("an event").expect("open")
    };
    // Start-up: the (empty) store is read by the ops task, not the UI.
    loop {
        match next().await {
            OpEvent::Acceptance(m) => {
                assert!(m.is_empty());
                break;
            }
            ev => {
                a.update(Msg::Op(ev));
            }
        }
    }
    // A cordoned node takes no jobs: refused before any dialog.
    typed(&mut a, ":fabric gpu-010\r N");
    assert!(matches!(a.ui.mode, Mode::Normal));
    let msg = &a.ui.message.as_ref().expect("why not").0;
    assert!(msg.contains("node gpu-010 is cordoned: it takes no jobs"), "{msg}");
    typed(&mut a, " ");
    assert!(a.marks.nodes.is_empty());
    let nodes = ["gpu-001", "gpu-012", "gpu-005"];
    for n in nodes {
        assert!(a.state().node(n).unwrap().state.schedulable(), "{n} takes jobs");
        typed(&mut a, &format!(":fabric {n}\r "));
    }
    assert_eq!(a.ui.focus, 0, "the per-node table has the focus");
    typed(&mut a, "\x1bN");
    let screen = render(&mut a, 160, 40);
    let Mode::Confirm(c) = &a.ui.mode else { panic!("no confirmation: {screen}") };
    assert_eq!(c.plan.confirm_word.as_deref(), Some("3"));
    let plan = c.plan.lines();
    for n in nodes {
        let line =
            format!("acceptance {n}: sim: run `all_reduce_perf -b 8 -e 8G -f 2 -g 8` on {n} (8 GPUs each)");
        assert!(plan.contains(&line), "{plan:#?}");
        assert!(screen.contains(&line[..line.len() - " (8 GPUs each)".len()]), "{screen}");
    }
    assert_eq!(
        plan.last().unwrap(),
        "3 test job(s) to submit on 3 node(s), 24 GPUs; running jobs are not touched"
    );
    assert!(screen.contains("type \"3\" to confirm"), "{screen}");
    typed(&mut a, "after the cable swap\r3\r");
    assert_eq!(a.ui.mode, Mode::Normal);
    assert!(a.marks.nodes.is_empty(), "marks are spent on the action");
    // Follow the events until every job is judged and the store's picture comes back.
    let mut results = 0;
    while results < 3 || a.state().acceptance.len() < 3 {
        match next().await {
            ev @ OpEvent::AcceptanceResult { .. } => {
                results += 1;
                a.update(Msg::Op(ev));
            }
            ev => {
                a.update(Msg::Op(ev));
            }
        }
    }
    let panel: Vec<&str> = a.op_panel.iter().map(|(l, _)| l.as_str()).collect();
    assert!(panel.iter().any(|l| l.starts_with("acceptance done: 3/3 succeeded")), "{panel:#?}");
    for n in nodes {
        let states: Vec<&str> = panel
            .iter()
            .filter(|l| l.starts_with(&format!("acceptance {n}: job sim-")))
            .map(|l| l.rsplit(' ').next().unwrap_or(""))
            .collect();
        assert_eq!(states[..3], ["(Resources)", "RUNNING", "COMPLETED"], "{n}: {panel:#?}");
    }
    let verdict = |n: &str| {
        panel
            .iter()
            .find(|l| l.starts_with(&format!("acceptance {n}: job")) && l.contains(" — "))
            .unwrap_or_else(|| panic!("no verdict for {n}: {panel:#?}"))
            .to_string()
    };
    // Recorded, with the audited operation's id; the verdicts shown are the recorded ones.
    let runs = store.load().unwrap().runs;
    assert_eq!(runs.len(), 3);
    assert!(runs.iter().all(|r| r.op_id.is_some() && r.backend == "sim"));
    let bw = |n: &str| runs.iter().find(|r| r.nodes == [n]).and_then(|r| r.busbw).expect("busbw");
    for (n, want, shape) in
        [("gpu-001", "PASS", "8xH100"), ("gpu-005", "PASS", "8xH100"), ("gpu-012", "FAIL", "8xH200")]
    {
        let v = verdict(n);
        let b = bw(n);
        let pct = b / 470.0 * 100.0;
        assert!(
            v.contains(&format!(
                "{want} {b:.1} GB/s — {b:.1} GB/s = {pct:.0}% of 470.0 GB/s (config {shape})"
            )),
            "{v}"
        );
    }
    assert!(bw("gpu-012") < 0.7 * 470.0 && bw("gpu-001") > 0.9 * 470.0);
    // Red for what did not pass.
    assert!(a.op_panel.iter().any(|(l, bad)| l.contains("FAIL") && *bad));
    // The Fabric view and its suspects list show the verdicts.
    typed(&mut a, "\x1b:fabric\r");
    let screen = render(&mut a, 160, 48);
    let (b, pct) = (bw("gpu-012"), bw("gpu-012") / 470.0 * 100.0);
    let line = format!(" 1 gpu-012      fail     {b:.1} GB/s = {pct:.0}% of 470.0 GB/s");
    assert!(screen.contains(&line), "{screen}");
    assert!(screen.contains("Suspect nodes [2]"), "gpu-012, and gpu-002's flapping port: {screen}");
    let row = screen.lines().find(|l| l.contains("│gpu-012 ")).expect("gpu-012 row");
    assert!(row.contains(&format!("fail      {b:.1}   {pct:.0}%")), "{row}");
    // The Overview's incidents carry the fail with what to do.
    let inc = a.state().incidents.iter().find(|i| i.subject == "gpu-012" && i.title.contains("acceptance"));
    let inc = inc.expect("an incident for the failed node");
    assert_eq!(inc.title, format!("NCCL acceptance fail: {b:.1} GB/s vs baseline 470.0 GB/s ({pct:.0}%)"));
    assert!(inc.action.starts_with("drain and run field diagnostics"));
}

#[test]
fn acceptance_command_modes_usage_and_help() {
    let mut a = app();
    typed(&mut a, ":acceptance sideways\r");
    let (msg, bad) = a.ui.message.clone().expect("usage");
    assert!(bad && msg.starts_with("usage: :acceptance [per-node|pairs|all]"), "{msg}");
    // Pairs need an even number of nodes: one selected node is refused before any dialog.
    typed(&mut a, ":fabric node==gpu-001\r:acceptance pairs\r");
    assert_eq!(a.ui.mode, Mode::Normal);
    assert!(a.ui.message.as_ref().unwrap().0.contains("pairs needs an even number of nodes (got 1)"));
    // All on the selected node: one job, a plain confirmation.
    typed(&mut a, ":acceptance all\r");
    let Mode::Confirm(c) = &a.ui.mode else { panic!("{:?}", a.ui.message) };
    assert_eq!(c.req.kind, gpuplane::ops::ActionKind::Acceptance(gpuplane::acceptance::Mode::All));
    assert_eq!(c.plan.confirm_word, None);
    typed(&mut a, "\x1b");
    // Read-only consoles refuse it like every action.
    a.readonly = true;
    typed(&mut a, "N");
    assert!(a.ui.message.as_ref().unwrap().0.contains("read-only mode: acceptance is not available"));
    typed(&mut a, "?");
    let screen = render(&mut a, 120, 200);
    assert!(screen.contains("NCCL acceptance test per node"), "{screen}");
    assert!(screen.contains(":acceptance"), "{screen}");
}

/// A drain's per-pod progress arrives as `Step` events while it runs: each becomes a panel line
/// (cluster text sanitised), and a very long drain keeps the panel bounded.
#[test]
fn step_progress_lines_reach_the_panel_sanitised_and_bounded() {
    use gpuplane::ops::{ActionKind, OpEvent};
    let mut a = app();
    a.update(Msg::Op(OpEvent::Step {
        kind: ActionKind::Drain,
        target: "gpu-node-2".into(),
        message: "team-b/evil\x1b[2Jpod eviction accepted; waiting for it to terminate".into(),
    }));
    let last = &a.op_panel.last().expect("a line").0;
    assert!(last.starts_with("drain gpu-node-2: team-b/evil"), "{last}");
    assert!(!last.contains('\x1b'), "escape sequences never reach the screen: {last:?}");
    assert!(render(&mut a, 80, 24).contains("drain gpu-node-2: team-b/evil"));
    for i in 0..2_000 {
        a.update(Msg::Op(OpEvent::Step {
            kind: ActionKind::Drain,
            target: "gpu-node-2".into(),
            message: format!("ns/pod-{i} evicted and gone"),
        }));
    }
    assert!(a.op_panel.len() <= 500, "{}", a.op_panel.len());
    assert_eq!(a.op_panel.last().unwrap().0, "drain gpu-node-2: ns/pod-1999 evicted and gone");
}

/// Every view in the registry is reachable by its name, completes, is in the help and the tab
/// row: nothing about a view is listed by hand outside its file and its registry line.
#[test]
fn every_registered_view_is_reachable_everywhere() {
    for v in views::VIEWS {
        let name = v.id().0;
        let mut a = app();
        typed(&mut a, &format!(":{name}\r"));
        assert_eq!(a.ui.view, v.id(), "{name}");
        assert_eq!(complete(name).0, format!("{name} "), "{name} completes");
        let help: String = gpuplane::tui::draw::help_lines(&a)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.to_string()).collect::<String>() + "\n")
            .collect();
        assert!(help.contains(&format!(":{name}")), "{name} is in the help");
        let screen = render(&mut a, 160, 48);
        assert!(screen.lines().nth(1).unwrap().contains(v.title()), "{name} is in the tab row");
        for alias in v.aliases() {
            assert_eq!(views::ViewId::by_name(alias), Some(v.id()), "{alias}");
        }
    }
}

/// The tab row fits every width down to 60 columns and always names the current view in full.
#[test]
fn the_tab_row_fits_and_names_the_current_view() {
    for v in views::VIEWS {
        let mut a = app();
        a.goto(v.id());
        for w in [60u16, 80, 100, 200] {
            let labels = gpuplane::tui::draw::tab_labels(&a, w as usize);
            let used: usize =
                labels.iter().map(|(l, _)| unicode_width::UnicodeWidthStr::width(l.as_str()) + 1).sum();
            assert!(used <= w as usize + 1, "{w} columns: {labels:?}");
            assert!(labels.iter().any(|(l, cur)| *cur && l.contains(v.title())), "{w}: {labels:?}");
            let screen = render(&mut a, w, 24);
            assert!(screen.lines().nth(1).unwrap().contains(v.title()), "{w} columns:\n{screen}");
        }
    }
}

/// A refusal reaches the console typed: the result line carries the server's own words and what
/// to do, the summary counts failures by kind, and the screen shows it.
#[test]
fn a_forbidden_write_shows_the_servers_reason_in_the_result_line() {
    use gpuplane::ops::{ActionError, ActionKind, OpEvent, Outcome, TargetResult};
    let mut a = app();
    let said = r#"nodes "gpu-003" is forbidden: User "viewer" cannot patch resource "nodes""#;
    let refused = TargetResult::failed("gpu-003", ActionError::forbidden(said));
    let gone = TargetResult::failed("gpu-099", ActionError::not_found("node gpu-099 does not exist"));
    for r in [&refused, &gone] {
        a.update(Msg::Op(OpEvent::Target { kind: ActionKind::Cordon, result: r.clone() }));
    }
    let outcome = Outcome {
        op_id: "0123456789abcdef".into(),
        results: vec![refused, gone],
        dry_run: false,
        audit_warning: None,
        submitted: vec![],
    };
    a.update(Msg::Op(OpEvent::Done { kind: ActionKind::Cordon, result: Ok(outcome) }));
    let lines: Vec<(&str, bool)> = a.op_panel.iter().map(|(l, e)| (l.as_str(), *e)).collect();
    assert_eq!(
        lines[0],
        (
            format!(
                "cordon gpu-003: forbidden: {said} — have this identity granted the right, or use break-glass"
            )
            .as_str(),
            true
        )
    );
    assert!(lines[1].0.starts_with("cordon gpu-099: not found: node gpu-099 does not exist — "), "{lines:?}");
    assert_eq!(lines[2], ("cordon done: 0/2 succeeded; 1 forbidden, 1 not-found (audit op 01234567)", true));
    let screen = render(&mut a, 160, 40);
    assert!(
        screen.contains(r#"cordon gpu-003: forbidden: nodes "gpu-003" is forbidden: User "viewer""#),
        "{screen}"
    );
}
