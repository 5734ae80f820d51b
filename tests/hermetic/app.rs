//! Headless tests of the console: messages in, UI state and screen out.

use crate::common::{app, app_with_sim, key, render, typed};
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
    assert!(a.ui.mode.filter_line().is_some());
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
    e.open_help();
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
    a.prepare();
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
        cluster: None,
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
    assert_eq!(a.ui.mode.name(), "normal");
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
    assert_eq!(a.ui.mode.name(), "normal");
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

#[test]
fn a_views_own_keys_work_there_and_say_where_they_work_elsewhere() {
    let mut a = app();
    a.goto(views::nodes::ID);
    // `w` works anywhere: it opens the GPUs view on its wall.
    key(&mut a, KeyCode::Char('w'));
    assert_eq!(a.ui.view, views::gpus::ID);
    assert!(wall_on(&a));
    key(&mut a, KeyCode::Char('w'));
    assert!(!wall_on(&a), "w in the GPUs view toggles back to the table");
    // `]` belongs to Cost: elsewhere it says so and changes nothing.
    a.goto(views::nodes::ID);
    let before = gpuplane::tui::views::cost::settings(&a.ui.own).window;
    key(&mut a, KeyCode::Char(']'));
    assert_eq!(a.ui.view, views::nodes::ID);
    assert_eq!(gpuplane::tui::views::cost::settings(&a.ui.own).window, before);
    assert!(a.ui.message.as_ref().unwrap().0.contains("only in the Cost view"), "{:?}", a.ui.message);
    a.goto(views::cost::ID);
    key(&mut a, KeyCode::Char(']'));
    assert_eq!(gpuplane::tui::views::cost::settings(&a.ui.own).window, before + 1);
    key(&mut a, KeyCode::Char('['));
    assert_eq!(gpuplane::tui::views::cost::settings(&a.ui.own).window, before);
}

/// The nodes of the fixed cluster in `state`, by name.
fn nodes_in(a: &gpuplane::tui::app::App, f: impl Fn(&gpuplane::model::Node) -> bool) -> Vec<String> {
    a.state().nodes.iter().filter(|n| f(n)).map(|n| n.name.to_string()).collect()
}

#[test]
fn marked_rows_a_filter_hides_are_flagged_in_the_plan_and_m_clears_the_marks() {
    let mut a = app();
    // Mark gpu-001 and gpu-002 (space marks and moves down), then filter them away and put the
    // cursor on another node.
    typed(&mut a, ":nodes\r");
    typed(&mut a, "  ");
    assert_eq!(a.marks.nodes.len(), 2);
    assert_eq!(a.ui.tables[views::nodes::TABLE].selected, 2, "space moves down");
    typed(&mut a, "/gpu-01\r");
    a.prepare();
    let highlighted = match a.selected_obj() {
        Some(gpuplane::model::ObjKey::Node(n)) => n.name.to_string(),
        o => panic!("{o:?}"),
    };
    typed(&mut a, "c");
    let Mode::Confirm(c) = &a.ui.mode else { panic!("no confirmation: {:?}", a.ui.message) };
    let mut targets = c.req.targets.clone();
    targets.sort();
    assert_eq!(targets, ["gpu-001", "gpu-002"], "the marks, not the highlighted row");
    assert_eq!(c.hidden, ["gpu-001", "gpu-002"]);
    let note = c.note.clone().expect("a note");
    assert!(
        note.contains(&format!("not the highlighted {highlighted}")) && note.contains("M clears"),
        "{note}"
    );
    let screen = render(&mut a, 100, 30);
    assert!(screen.contains("2 of the marked targets are hidden by the filter"), "{screen}");
    assert!(
        screen.lines().filter(|l| l.contains("[hidden by filter] cordon gpu-00")).count() == 2,
        "{screen}"
    );
    // Esc cancels; M clears every mark and says how many.
    key(&mut a, KeyCode::Esc);
    typed(&mut a, "M");
    assert!(a.marks.nodes.is_empty() && a.marks.jobs.is_empty());
    assert_eq!(a.ui.message.as_ref().map(|m| m.0.as_str()), Some("cleared 2 mark(s)"));
    // Without marks the action takes the highlighted row (cordoned: drain it), with no note.
    typed(&mut a, "r");
    let Mode::Confirm(c) = &a.ui.mode else { panic!("no confirmation: {:?}", a.ui.message) };
    assert_eq!(c.req.targets, [highlighted]);
    assert!(c.hidden.is_empty() && c.note.is_none());
}

#[test]
fn the_footer_shows_the_selected_rows_actions_and_the_marks_when_there_is_room() {
    let mut a = app();
    typed(&mut a, ":nodes\r");
    let footer =
        |a: &mut gpuplane::tui::app::App, w: u16| render(a, w, 24).lines().last().unwrap().to_string();
    let f = footer(&mut a, 80);
    assert!(f.contains("r drain") && f.contains("c cordon") && f.contains("N acceptance"), "{f}");
    assert!(f.contains("? help") && f.ends_with("q quit"), "{f}");
    let f = footer(&mut a, 60);
    assert!(f.contains("r drain") && f.ends_with("q quit"), "whole words, quit kept: {f}");
    typed(&mut a, " ");
    assert!(footer(&mut a, 100).contains("M unmark 1"));
    typed(&mut a, "M:jobs\r");
    let f = footer(&mut a, 100);
    assert!(f.contains("^k cancel") && f.contains("space mark") && !f.contains("drain"), "{f}");
    // Read-only: no action keys.
    a.readonly = true;
    let f = footer(&mut a, 100);
    assert!(!f.contains("cancel"), "{f}");
}

#[test]
fn a_batch_with_a_refused_target_lists_it_and_confirming_runs_the_rest() {
    use gpuplane::ops::OpMsg;
    let mut a = app();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    a.ops_tx = Some(tx);
    let draining = nodes_in(&a, |n| matches!(n.state.label(), "draining" | "drained"));
    let fine = nodes_in(&a, |n| n.state.schedulable());
    assert!(!draining.is_empty() && fine.len() >= 11);
    let cluster = a.state().cluster.clone();
    for n in fine[..11].iter().chain(&draining[..1]) {
        a.marks.nodes.insert(gpuplane::model::NodeKey { cluster: cluster.clone(), name: n.as_str().into() });
    }
    typed(&mut a, ":nodes\rr");
    let Mode::Confirm(c) = &a.ui.mode else { panic!("no confirmation: {:?}", a.ui.message) };
    assert_eq!(c.plan.steps.len(), 11);
    assert_eq!(c.plan.confirm_word.as_deref(), Some("11"));
    let screen = render(&mut a, 80, 24);
    let label = a.state().node(&draining[0]).unwrap().state.label();
    let want = format!(
        "11 of 12 will run; 1 refused: node {} is draining or drained already ({label})",
        draining[0]
    );
    let flat: String = screen.lines().map(|l| l.trim_matches('│').trim_end()).collect::<Vec<_>>().join(" ");
    assert!(flat.contains(&want), "{want}\n{screen}");
    assert!(screen.contains("drain 11 target(s)"), "{screen}");
    // Confirm: a reason, then the count typed; the 11 run.
    typed(&mut a, "rack 4 PSU swap\t\t11\r");
    match rx.try_recv() {
        Ok(OpMsg::Run(job)) => {
            assert_eq!(job.req.targets.len(), 11);
            assert!(!job.req.targets.contains(&draining[0]));
            assert_eq!(job.plan.steps.len(), 11);
        }
        other => panic!("expected the batch to run: {other:?}; {:?}", a.ui.mode),
    }
}

#[test]
fn the_plan_scrolls_inside_the_confirmation_before_confirming() {
    let mut a = app();
    let fine = nodes_in(&a, |n| n.state.schedulable());
    let cluster = a.state().cluster.clone();
    for n in &fine {
        a.marks.nodes.insert(gpuplane::model::NodeKey { cluster: cluster.clone(), name: n.as_str().into() });
    }
    typed(&mut a, ":nodes\rr");
    let Mode::Confirm(c) = &a.ui.mode else { panic!("no confirmation: {:?}", a.ui.message) };
    let body = gpuplane::tui::app::confirm_body(c);
    let last_step = format!("drain {}:", fine.last().unwrap());
    let screen = render(&mut a, 80, 24);
    assert!(screen.contains("more below (pgdn/pgup scroll)"), "{screen}");
    assert!(!screen.contains(&last_step), "{screen}");
    // The summary stays on top whatever the scroll.
    let summary = match &a.ui.mode {
        Mode::Confirm(c) => c.plan.summary(),
        _ => unreachable!(),
    };
    assert!(screen.contains(&summary), "{screen}");
    key(&mut a, KeyCode::PageDown);
    let scrolled = render(&mut a, 80, 24);
    let Mode::Confirm(c) = &a.ui.mode else { panic!() };
    assert!(c.scroll > 0, "pgdn scrolls the plan");
    assert!(scrolled.contains(&summary) && scrolled.contains(&body[c.scroll]), "{scrolled}");
    key(&mut a, KeyCode::End);
    let end = render(&mut a, 80, 24);
    assert!(end.contains(body.last().unwrap().trim_start()), "the last line is reachable:\n{end}");
    key(&mut a, KeyCode::Home);
    render(&mut a, 80, 24);
    let Mode::Confirm(c) = &a.ui.mode else { panic!() };
    assert_eq!(c.scroll, 0);
    assert!(c.reason.is_empty(), "scrolling typed nothing");
}

/// Enter on the first incident, then Enter again: its node's detail.
fn jump_from_first_incident(a: &mut gpuplane::tui::app::App) -> String {
    a.prepare();
    let row = a.ui.tables[views::overview::INCIDENTS].selected_key().expect("incidents");
    let subject = a.state().incidents[row as usize].subject.to_string();
    typed(a, "\r\r");
    assert_eq!(a.ui.view, views::nodes::ID);
    assert!(a.ui.detail);
    subject
}

#[test]
fn the_detail_pane_scrolls_with_its_own_keys_and_leads_with_the_fault() {
    let mut a = app();
    let subject = jump_from_first_incident(&mut a);
    let (node, gpu) = subject.split_once("/gpu").expect("a GPU incident first");
    let screen = render(&mut a, 80, 24);
    // The incident's GPU is named at the top and listed first among the GPUs, marked.
    let inc = screen.lines().find(|l| l.contains("incident")).unwrap_or_else(|| panic!("{screen}"));
    assert!(inc.contains(&format!("GPU {gpu}: XID")), "{inc}");
    let gpus = screen.lines().position(|l| l.contains("-- GPUs")).unwrap_or_else(|| panic!("{screen}"));
    let first = screen.lines().nth(gpus + 1).unwrap();
    assert!(first.starts_with(&format!("│!{gpu:>2} ")), "{first}\n{screen}");
    assert!(screen.contains(&format!("node      {node}")));
    // The pane has the move keys: they scroll it, the selection stays.
    let before = a.selected_obj().cloned();
    assert!(screen.contains("pgdn more"), "{screen}");
    key(&mut a, KeyCode::PageDown);
    let down = render(&mut a, 80, 24);
    assert!(a.ui.detail_scroll > 0);
    assert_eq!(a.selected_obj().cloned(), before, "PgDn scrolls, it does not move to another node");
    assert_ne!(down, screen);
    typed(&mut a, "j");
    assert_eq!(a.selected_obj().cloned(), before, "j scrolls too");
    key(&mut a, KeyCode::End);
    let end = render(&mut a, 80, 24);
    let last = a.ui.detail_scroll;
    assert!(!end.contains("pgdn more"), "at the end: {end}");
    key(&mut a, KeyCode::PageDown);
    render(&mut a, 80, 24);
    assert_eq!(a.ui.detail_scroll, last, "clamped at the end");
    key(&mut a, KeyCode::Home);
    assert_eq!(a.ui.detail_scroll, 0);
    // Esc closes it; j moves the table again.
    key(&mut a, KeyCode::Esc);
    typed(&mut a, "j");
    assert_ne!(a.selected_obj().cloned(), before);
    // A hot GPU that is not the first: it leads its node's detail too.
    let hot = a.state().incidents.iter().find(|i| i.title.starts_with("GPU hot")).expect("a hot GPU").clone();
    let (hn, hg) = hot.subject.split_once("/gpu").unwrap();
    typed(&mut a, &format!(":nodes {hn}\r\r"));
    let screen = render(&mut a, 80, 24);
    let gpus = screen.lines().position(|l| l.contains("-- GPUs")).unwrap_or_else(|| panic!("{screen}"));
    assert!(screen.lines().nth(gpus + 1).unwrap().starts_with(&format!("│!{hg:>2} ")), "{screen}");
    // A flapping port: named at the top, first under fabric and marked.
    let flap =
        a.state().incidents.iter().find(|i| i.title.contains("flapping")).expect("a flapping port").clone();
    let (pn, port) = flap.subject.split_once('/').unwrap();
    typed(&mut a, &format!("\x1b\x1b:nodes {pn}\r\r"));
    let screen = render(&mut a, 160, 48);
    assert!(screen.contains(&format!("incident  port {port}: ")), "{screen}");
    let fabric = screen.lines().position(|l| l.contains("-- fabric")).unwrap_or_else(|| panic!("{screen}"));
    assert!(screen.lines().nth(fabric + 1).unwrap().contains(&format!("! {port} ")), "{screen}");
}

#[test]
fn a_sparklines_value_stays_on_its_labels_line() {
    let (mut a, mut sim) = app_with_sim();
    for _ in 0..200 {
        a.update(Msg::Update(sim.tick()));
    }
    typed(&mut a, ":nodes\r\r");
    for w in [60u16, 80, 100] {
        let screen = render(&mut a, w, 24);
        let util = screen.lines().find(|l| l.contains("│util ")).unwrap_or_else(|| panic!("{screen}"));
        assert!(util.trim_end_matches('│').trim_end().ends_with('%'), "{w}: {util}");
        let power = screen.lines().find(|l| l.contains("│power ")).unwrap_or_else(|| panic!("{screen}"));
        assert!(power.trim_end_matches('│').trim_end().ends_with("kW"), "{w}: {power}");
    }
}

/// The help as plain text.
fn help_text(a: &gpuplane::tui::app::App) -> String {
    gpuplane::tui::draw::help_lines(a)
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.to_string()).collect::<String>() + "\n")
        .collect()
}

#[test]
fn help_pages_closes_only_on_q_esc_or_question_mark_and_reopens_at_the_top() {
    let mut a = app();
    typed(&mut a, "?");
    render(&mut a, 80, 24);
    key(&mut a, KeyCode::PageDown);
    assert_eq!(a.ui.mode.name(), "help", "PgDn pages, it does not close");
    assert!(a.ui.mode.help().map_or(0, |h| h.scroll) > 1);
    typed(&mut a, "x");
    assert_eq!(a.ui.mode.name(), "help", "a stray key does nothing");
    // Clamped: the end shows the last line, never blank space.
    key(&mut a, KeyCode::End);
    for _ in 0..5 {
        key(&mut a, KeyCode::PageDown);
    }
    let screen = render(&mut a, 80, 24);
    let total = help_text(&a).lines().count() as u16;
    assert_eq!(
        a.ui.mode.help().map_or(0, |h| h.scroll),
        total - a.ui.mode.help().map_or(0, |h| h.rows),
        "{screen}"
    );
    let last = help_text(&a).lines().last().unwrap_or_default().trim().to_string();
    assert!(!last.is_empty() && screen.contains(&last), "the last line ({last}) shows: {screen}");
    for close in ["q", "\x1b", "?"] {
        typed(&mut a, close);
        assert_eq!(a.ui.mode.name(), "normal", "{close:?} closes");
        assert!(!a.ui.quit);
        // Every way in opens at the top.
        typed(&mut a, "?G");
        assert!(a.ui.mode.help().map_or(0, |h| h.scroll) > 0 || render(&mut a, 80, 24).is_empty());
        key(&mut a, KeyCode::Esc);
        typed(&mut a, ":help\r");
        assert_eq!(a.ui.mode.help().map(|h| h.scroll), Some(0));
    }
}

#[test]
fn help_is_searchable() {
    let mut a = app();
    typed(&mut a, "?/drain");
    assert!(a.ui.mode.help().is_some_and(|h| h.searching));
    let text = help_text(&a);
    assert!(text.contains("drain node(s)") && text.contains("actions"), "{text}");
    assert!(!text.contains("page down") && !text.contains(":quotas"), "{text}");
    let screen = render(&mut a, 80, 24);
    assert!(screen.contains("/drain_"), "{screen}");
    // Enter keeps the search (keys page again); Esc drops it, a second Esc closes.
    typed(&mut a, "\rj");
    assert_eq!(a.ui.mode.name(), "help");
    assert_eq!(a.ui.mode.help().map(|h| h.query.as_str()), Some("drain"));
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.ui.mode.help().map(|h| h.query.as_str()), Some(""));
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.ui.mode.name(), "normal");
    typed(&mut a, "?/zzzz");
    assert!(render(&mut a, 80, 24).contains("nothing matches \"zzzz\""));
}

#[test]
fn help_lists_every_key_and_every_command_of_the_active_keymap() {
    for name in ["default", "emacs"] {
        let mut a = app();
        a.keymap = gpuplane::tui::keymap::Keymap::builtin(name);
        let text = help_text(&a);
        for (action, keys) in a.keymap.bindings() {
            for k in keys {
                let line = text.lines().find(|l| l.split_whitespace().any(|w| w == k.label()));
                assert!(line.is_some(), "{name}: {action:?} key {} is not in the help:\n{text}", k.label());
            }
        }
        // Every command, and every name a view answers to on the line of its view.
        for c in gpuplane::tui::app::command_names() {
            let canonical = views::ViewId::by_name(c).map_or(c, |v| v.0);
            let line = text.lines().find(|l| l.split_whitespace().next() == Some(&format!(":{canonical}")));
            let line = line.unwrap_or_else(|| panic!("{name}: :{canonical} is not in the help:\n{text}"));
            assert!(line.contains(c), "{name}: {c} is not on {line:?}");
        }
        for gpuplane::tui::app::Command { names, .. } in gpuplane::tui::app::COMMANDS.iter() {
            for n in names.iter() {
                assert!(
                    text.lines().any(|l| l.contains(&format!(":{}", names[0])) && l.contains(n)),
                    "{name}: {n}"
                );
            }
        }
        for want in
            [":breakglass", ":ctx", "clear all marks", "mark and move down", "go back", "scroll a page"]
        {
            assert!(text.contains(want), "{name}: {want:?} is not in the help:\n{text}");
        }
    }
}

#[test]
fn an_ambiguous_tab_shows_the_candidates_beside_the_command_line() {
    let mut a = app();
    typed(&mut a, ":qu\t");
    let screen = render(&mut a, 100, 24);
    let footer = screen.lines().last().unwrap();
    assert!(
        footer.starts_with(":qu")
            && footer.contains("queues")
            && footer.contains("quotas")
            && footer.contains("quit"),
        "{footer}"
    );
    // The next key drops them.
    typed(&mut a, "o");
    assert!(!render(&mut a, 100, 24).lines().last().unwrap().contains("queues"));
}

/// My jobs: pending jobs by queue position (next to start first), running ones after; each
/// pending job shows its estimate or "no estimate", and its detail says why it waits and, when
/// there is no estimate, why not.
#[test]
fn my_jobs_are_in_position_order_with_estimates_and_real_causes() {
    let mut a = app();
    typed(&mut a, ":queues\r\t");
    a.prepare();
    let rows: Vec<gpuplane::model::Job> = a.ui.tables[views::queues::MY_JOBS]
        .rows
        .iter()
        .map(|&k| a.state().jobs[k as usize].clone())
        .collect();
    assert!(rows.len() >= 2, "the researcher has jobs");
    let order: Vec<u32> = rows.iter().map(|j| j.rank.unwrap_or(u32::MAX)).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "by position");
    let pending_then_running = rows.iter().map(|j| j.state != JobState::Pending).collect::<Vec<_>>();
    assert!(pending_then_running.windows(2).all(|w| w[0] <= w[1]), "pending before running");

    let screen = render(&mut a, 200, 50);
    assert!(screen.contains("EST START") && screen.contains("WAIT") && screen.contains("RUN"), "{screen}");
    for j in rows.iter().filter(|j| j.state == JobState::Pending) {
        let line =
            screen.lines().find(|l| l.contains(&j.id.to_string())).unwrap_or_else(|| panic!("{}", j.id));
        match j.est_start {
            Some(e) => {
                let t = jiff::Timestamp::from_second(e).unwrap().strftime("%H:%M UTC").to_string();
                assert!(line.contains(&t), "{line}");
            }
            None => assert!(line.contains("no estimate"), "{line}"),
        }
    }
    // The demo job: its team is under quota while llm-pretrain borrows in h100.
    let demo = rows.iter().find(|j| j.name == "llama3-8b-ablation").expect("demo job");
    let demo_line = screen.lines().find(|l| l.contains(&demo.id.to_string())).unwrap();
    assert!(demo_line.contains("your team is under quota"), "{demo_line}");

    // The detail of a job without an estimate says why.
    if let Some(i) = rows.iter().position(|j| j.state == JobState::Pending && j.est_start.is_none()) {
        for _ in 0..i {
            typed(&mut a, "j");
        }
        typed(&mut a, "\r");
        let screen = render(&mut a, 200, 50);
        assert!(screen.contains("est start") && screen.contains("no estimate: "), "{screen}");
    }
}

/// Jobs: WAIT and RUN are two columns (a pending job has no run time, a finished one keeps
/// its wait), EST START shows the estimate in the display zone.
#[test]
fn jobs_show_wait_and_run_apart_and_the_estimate() {
    let mut a = app();
    typed(&mut a, ":jobs\r");
    let screen = render(&mut a, 220, 60);
    let header = screen.lines().find(|l| l.contains("NAME")).unwrap();
    for h in ["WAIT", "RUN", "EST START"] {
        assert!(header.contains(h), "{header}");
    }
    assert!(!header.contains("TIME"), "{header}");
    let s = a.state();
    let demo = s.jobs.iter().find(|j| j.name == "llama3-8b-ablation").unwrap();
    let line = screen.lines().find(|l| l.contains(&demo.id.to_string())).unwrap();
    let est =
        jiff::Timestamp::from_second(demo.est_start.unwrap()).unwrap().strftime("%H:%M UTC").to_string();
    assert!(line.contains(&format!("{est} (in ")), "{line}");
}

/// The detail pane of a job shows its times in the display zone, named.
#[test]
fn job_times_carry_the_zone() {
    let mut a = app();
    gpuplane::clock::pin_zone(Some(jiff::tz::TimeZone::get("Asia/Kolkata").unwrap()));
    typed(&mut a, ":jobs\r\r");
    let screen = render(&mut a, 200, 50);
    let submitted = screen.lines().find(|l| l.contains("submitted")).expect("submitted line");
    assert!(submitted.contains("2026-01-01 05:30 IST ("), "{submitted}");
    gpuplane::clock::pin_zone(Some(jiff::tz::TimeZone::UTC));
    let screen = render(&mut a, 200, 50);
    let submitted = screen.lines().find(|l| l.contains("submitted")).unwrap();
    assert!(submitted.contains(" UTC ("), "{submitted}");
}

/// Past a blast-radius limit the console refuses the action and names the limit; under
/// break-glass the confirmation shows the limit it goes past and the action is sent.
#[test]
fn an_action_past_a_blast_radius_limit_needs_break_glass() {
    use gpuplane::ops::OpMsg;
    let mut a = app();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    a.ops_tx = Some(tx);
    a.wall_now = 1_000_000;
    a.limits = toml::from_str("max_out_nodes = 0").unwrap();
    typed(&mut a, ":nodes state=alloc\rc");
    assert!(matches!(a.ui.mode, Mode::Normal), "no confirmation past the limit");
    let (m, err) = a.ui.message.clone().expect("a refusal");
    assert!(err && m.contains("at most 0 node(s) out of service") && m.contains("start break-glass"), "{m}");
    assert!(rx.try_recv().is_err(), "nothing sent");

    typed(&mut a, "\x1b:breakglass INC-42 30 GPU node on fire\r");
    let _ = rx.try_recv();
    typed(&mut a, ":nodes state=alloc\rc");
    let Mode::Confirm(c) = &a.ui.mode else { panic!("no confirmation: {:?}", a.ui.message) };
    assert_eq!(c.plan.exceeded().len(), 1);
    assert!(render(&mut a, 120, 30).contains("PAST 1 BLAST-RADIUS LIMIT"));
    typed(&mut a, "reason\r");
    match rx.try_recv() {
        Ok(OpMsg::Run(job)) => {
            assert!(job.break_glass.is_some());
            assert_eq!(job.plan.exceeded()[0].limit, "max_out_nodes");
        }
        other => panic!("expected the cordon: {other:?}"),
    }
}

/// `:doctor` starts the checks through its runner (off the UI task: the console keeps
/// answering while they run), then shows each check with its status and fix in a pager that
/// scrolls and searches like the help.
#[test]
fn doctor_runs_off_the_ui_task_and_shows_each_check_with_its_fix() {
    use gpuplane::model::doctor::{Check, Status};
    use gpuplane::tui::app::DoctorRunner;
    use std::sync::{Arc, Mutex};
    let mut a = app();
    typed(&mut a, ":doctor\r");
    assert!(a.ui.message.as_ref().is_some_and(|(m, err)| *err && m.contains("not available")));
    let pending: Arc<Mutex<Vec<tokio::sync::oneshot::Sender<Vec<Check>>>>> = Default::default();
    let p = pending.clone();
    let runner: DoctorRunner = Arc::new(move || {
        let (tx, rx) = tokio::sync::oneshot::channel();
        p.lock().unwrap().push(tx);
        rx
    });
    a.doctor = Some(runner);
    typed(&mut a, ":doctor\r");
    assert_eq!(a.ui.mode.name(), "help");
    assert!(render(&mut a, 80, 24).contains("running the checks"));
    // The console still answers while the checks run.
    key(&mut a, KeyCode::Char('j'));
    a.update(Msg::Tick);
    assert!(render(&mut a, 80, 24).contains("running the checks"));
    let fixed = |mut c: Check, fix: &str| {
        c.fix(fix);
        c
    };
    let mut lines = vec![
        fixed(
            Check::line("slurm", "10.0.0.5:6820", "tcp", Status::Fail, "connection refused"),
            "start slurmrestd or correct --slurm",
        ),
        fixed(
            Check::line(
                "prometheus",
                "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                "series",
                Status::Warn,
                "missing: TENS is empty",
            ),
            "enable the profiling fields in dcgm-exporter",
        ),
    ];
    lines.extend((0..28).map(|i| Check::line("audit", "", &format!("check-{i:02}"), Status::Ok, "fine")));
    let senders = std::mem::take(&mut *pending.lock().unwrap());
    assert_eq!(senders.len(), 1, "one run of the checks");
    senders.into_iter().next().unwrap().send(lines).unwrap();
    a.update(Msg::Tick);
    let screen = render(&mut a, 80, 24);
    for want in [" doctor ", "28 OK · 1 WARN · 1 FAIL", "FAIL", "connection refused", "fix: start slurmrestd"]
    {
        assert!(screen.contains(want), "{want} in\n{screen}");
    }
    assert!(!screen.contains("check-27"), "the last line is below the page");
    key(&mut a, KeyCode::Char('G'));
    assert!(render(&mut a, 80, 24).contains("check-27"), "scrolled to the end");
    // Searched like the help.
    typed(&mut a, "/tensor\r");
    let screen = render(&mut a, 80, 24);
    assert!(screen.contains("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE") && !screen.contains("check-00"), "{screen}");
    key(&mut a, KeyCode::Esc);
    key(&mut a, KeyCode::Char('q'));
    assert_eq!(a.ui.mode.name(), "normal");
    // The help is the help again.
    typed(&mut a, ":help\r");
    assert!(!render(&mut a, 80, 24).contains(" doctor "));
}

/// The incident rows of the Overview, in display order, as (subject, signal, state).
fn incident_rows(a: &mut gpuplane::tui::app::App) -> Vec<(String, String, &'static str)> {
    a.prepare();
    a.ui.tables[views::overview::INCIDENTS]
        .rows
        .iter()
        .map(|&k| {
            let i = &a.state().incidents[k as usize];
            (i.subject.to_string(), i.signal.clone(), i.lifecycle.label())
        })
        .collect()
}

/// `a` on the first incident opens `:ack`, the ops task is asked to audit it, and once the
/// record is written the incident is acked: it says by whom, with which ticket and note, and
/// sorts below every unhandled one. Read-only mode refuses and says why.
#[test]
fn a_acknowledges_the_selected_incident_and_it_sorts_below_unhandled_ones() {
    use gpuplane::ops::{OpEvent, OpMsg};
    let mut a = app();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    a.ops_tx = Some(tx);
    let rows = incident_rows(&mut a);
    assert_eq!(rows[0].2, "open");
    let first = (rows[0].0.clone(), rows[0].1.clone());
    typed(&mut a, "a");
    assert!(render(&mut a, 100, 30).contains(":ack "), "the prompt opens");
    typed(&mut a, "INC-4242 looking at it\r");
    let ack = match rx.try_recv() {
        Ok(OpMsg::Ack(ack)) => ack,
        other => panic!("the ack goes to the ops task to be audited: {other:?}"),
    };
    assert_eq!((ack.key.subject.as_str(), ack.key.signal.as_str()), (first.0.as_str(), first.1.as_str()));
    assert_eq!(
        (ack.by.as_str(), ack.ticket.as_deref(), ack.note.as_str()),
        ("researcher", Some("INC-4242"), "looking at it")
    );
    // Not acked until the audit record is written.
    assert_eq!(incident_rows(&mut a)[0].2, "open");
    a.update(Msg::Op(OpEvent::Acked(ack)));
    let rows = incident_rows(&mut a);
    let at = rows
        .iter()
        .position(|r| (r.0.as_str(), r.1.as_str()) == (first.0.as_str(), first.1.as_str()))
        .unwrap();
    assert_eq!(rows[at].2, "acked");
    assert!(at > 0 && rows[..at].iter().any(|r| r.2 == "open"), "{rows:?}");
    let first_handled = rows.iter().position(|r| r.2 != "open").unwrap();
    assert!(rows[first_handled..].iter().all(|r| r.2 != "open"), "unhandled above handled: {rows:?}");
    // The selection followed the incident by identity; the row says how it is handled.
    let screen = render(&mut a, 160, 48);
    assert!(screen.contains("acked by researcher INC-4242"), "{screen}");
    // The same incident's identity survives a refresh of the data.
    let s = a.state().clone();
    let mut nodes = s.nodes.clone();
    nodes.reverse();
    a.update(Msg::Update(Update::Inventory {
        at: s.now + 5,
        inventory: Box::new(gpuplane::model::protocol::Inventory {
            source: "sim".into(),
            cluster: Some(s.cluster.clone()),
            nodes: Some(nodes),
            ..Default::default()
        }),
    }));
    let rows = incident_rows(&mut a);
    assert!(
        rows.iter()
            .any(|r| (r.0.as_str(), r.1.as_str(), r.2) == (first.0.as_str(), first.1.as_str(), "acked"))
    );

    // Read-only: refused, with the reason.
    let mut ro = app();
    ro.readonly = true;
    typed(&mut ro, "a");
    let msg = ro.ui.message.clone().expect("a reason").0;
    assert!(msg.starts_with("read-only:") && msg.contains("refused"), "{msg}");
    assert!(!render(&mut ro, 100, 30).contains(":ack "));
}

/// The state with one firing alert (on `gpu-004`) and one active silence, from Alertmanager.
fn with_alerts(a: &mut gpuplane::tui::app::App) {
    use gpuplane::model::alert::{Alert, AlertSnapshot, AlertState, Matcher, Silence, SilenceState};
    let at = a.state().now;
    let labels = [("alertname", "GpuXid79"), ("Hostname", "gpu-004"), ("severity", "critical")];
    let alert = Alert {
        fingerprint: "fp-1".into(),
        name: "GpuXid79".into(),
        state: AlertState::Active,
        silenced_by: vec![],
        inhibited_by: vec![],
        labels: labels.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect(),
        annotations: Default::default(),
        starts_at: at - 60,
        ends_at: None,
        generator_url: None,
    };
    let silence = Silence {
        id: "sil-7".into(),
        state: SilenceState::Active,
        matchers: vec![Matcher::parse("alertname=Other").unwrap()],
        starts_at: at - 600,
        ends_at: at + 3600,
        created_by: "ops".into(),
        comment: "maintenance".into(),
    };
    a.update(Msg::Update(Update::Alerts(Box::new(AlertSnapshot {
        source: "am".into(),
        at,
        alerts: vec![alert],
        silences: vec![silence],
    }))));
}

/// `z` in the Alerts view opens `:silence` for the selected alert; the confirmed command goes
/// to the ops task with the alert's name and node as matchers, the duration, ticket and
/// reason; `X` on a silence sends its expiry the same way; read-only refuses both and says why.
#[test]
fn z_silences_the_selected_alert_through_the_ops_task() {
    use gpuplane::ops::silence::SilenceOp;
    use gpuplane::ops::{OpEvent, OpMsg};
    let mut a = app();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    a.ops_tx = Some(tx);
    a.alertmanager = Some(gpuplane::backend::alertmanager::AmConfig::new("http://127.0.0.1:9"));
    with_alerts(&mut a);
    typed(&mut a, ":alerts\r");
    typed(&mut a, "z");
    let screen = render(&mut a, 120, 30);
    assert!(screen.contains(":silence "), "the prompt opens: {screen}");
    assert!(screen.contains("Hostname=\"gpu-004\""), "the prompt names the matchers: {screen}");
    typed(&mut a, "2h INC-42 swapping the GPU\r");
    let req = match rx.try_recv() {
        Ok(OpMsg::Silence(req)) => req,
        other => panic!("the silence goes to the ops task: {other:?}"),
    };
    let SilenceOp::Create { matchers, duration } = &req.op else { panic!("a create: {req:?}") };
    let m: Vec<String> = matchers.iter().map(ToString::to_string).collect();
    assert_eq!(m, ["alertname=\"GpuXid79\"", "Hostname=\"gpu-004\""]);
    assert_eq!(duration.as_secs(), 7200);
    assert_eq!((req.why.ticket.as_deref(), req.why.reason.as_str()), (Some("INC-42"), "swapping the GPU"));
    assert_eq!(
        (req.user.as_str(), req.am.url.as_str(), req.why.dry_run),
        ("researcher", "http://127.0.0.1:9", false)
    );
    // The ops task's answer is shown.
    a.update(Msg::Op(OpEvent::Silence(Ok("silence abc created".into()))));
    assert_eq!(a.ui.message.clone().unwrap(), ("silence abc created".to_string(), false));

    // No reason: refused here, nothing sent.
    typed(&mut a, "z");
    typed(&mut a, "2h\r");
    assert!(rx.try_recv().is_err());
    assert!(a.ui.message.clone().unwrap().0.contains("reason"), "{:?}", a.ui.message);

    // The silences pane: `X` expires the selected one.
    typed(&mut a, "\t");
    typed(&mut a, "X");
    assert!(render(&mut a, 120, 30).contains(":unsilence "));
    typed(&mut a, "done with it\r");
    match rx.try_recv() {
        Ok(OpMsg::Silence(req)) => {
            assert_eq!(req.op, SilenceOp::Expire { ids: vec!["sil-7".into()] });
            assert_eq!((req.why.ticket.as_deref(), req.why.reason.as_str()), (None, "done with it"));
        }
        other => panic!("the expiry goes to the ops task: {other:?}"),
    }

    // Read-only: refused, with the reason; the typed command is refused too.
    let mut ro = app();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    ro.ops_tx = Some(tx);
    ro.readonly = true;
    with_alerts(&mut ro);
    typed(&mut ro, ":alerts\r");
    typed(&mut ro, "z");
    let msg = ro.ui.message.clone().expect("a reason").0;
    assert!(msg.starts_with("read-only:") && msg.contains("refused"), "{msg}");
    assert!(!render(&mut ro, 120, 30).contains(":silence "));
    typed(&mut ro, ":silence 2h INC-1 typed anyway\r");
    assert!(rx.try_recv().is_err(), "nothing reaches the ops task");
    assert!(ro.ui.message.clone().unwrap().0.starts_with("read-only:"));
}

/// Whether the GPUs view shows its wall (its own state).
fn wall_on(a: &gpuplane::tui::app::App) -> bool {
    use gpuplane::tui::views::{self, gpus::WallState};
    a.ui.own.get::<WallState>(views::gpus::ID).is_some_and(|w| w.on)
}
