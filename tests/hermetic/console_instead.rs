//! A drain the cluster cannot perform (Slurm 22.05: REST v0.0.38 has no node update) in the
//! console: the reason and ticket are asked without a confirmation, then the `scontrol` line
//! to run instead is shown wrapped and copied as one OSC 52 sequence. Against a mock
//! slurmrestd answering the ping recorded from a real 22.05.8 (tests/fixtures/slurm/v0.0.38).

use crate::common;

use crate::common::{app, key, render, typed};
use base64::Engine;
use gpuplane::ops::{Executor, SlurmExecutor};
use gpuplane::tui::app::{App, Mode};
use gpuplane::tui::views;
use ratatui::crossterm::event::KeyCode;
use std::time::Duration;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const REASON: &str = "IB port flaps, it's the cable on the leaf switch";
const TICKET: &str = "INC-77";

/// The simulated cluster in the console, planning as a Slurm 22.05 cluster whose preflight has
/// run (as root: every right, and still no node update over REST).
async fn app_on_22_05() -> (App, MockServer) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = MockServer::start().await;
    let ping = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/slurm/v0.0.38/ping.json"))
        .unwrap();
    Mock::given(method("GET"))
        .and(path("/slurm/v0.0.38/ping"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(ping))
        .mount(&server)
        .await;
    let cfg = gpuplane::backend::slurm::ClientConfig {
        url: server.uri(),
        user: Some("root".into()),
        token: gpuplane::backend::slurm::TokenSource::Static("x.y.z".into()),
        ca_file: None,
        timeout: Duration::from_secs(5),
        version: None,
    };
    let exec = SlurmExecutor::new(&cfg).unwrap();
    exec.check_permission().await.unwrap();
    let mut a = app();
    a.planner = Some(exec.planner());
    a.goto(views::nodes::ID);
    (a, server)
}

fn selected_node(a: &mut App) -> String {
    a.prepare();
    a.selected_obj().and_then(|o| o.node()).expect("a selected node").name.to_string()
}

/// The line the command line prints for the same request: `gpuplane drain`'s refusal, from the
/// planner (ops::plan, which the command line calls).
fn cli_line(a: &App, node: &str) -> Vec<String> {
    let req = gpuplane::ops::OpRequest {
        kind: gpuplane::ops::ActionKind::Drain,
        targets: vec![node.into()],
        reason: REASON.into(),
        ticket: Some(TICKET.into()),
        dry_run: false,
    };
    gpuplane::ops::plan(&req, a.state(), a.planner.as_deref().unwrap(), false).unwrap_err().instead().to_vec()
}

#[tokio::test]
async fn a_22_05_drain_asks_only_the_reason_then_shows_the_line_to_run() {
    let (mut a, _server) = app_on_22_05().await;
    let node = selected_node(&mut a);
    key(&mut a, KeyCode::Char('r'));
    let Mode::Instead(d) = &a.ui.mode else { panic!("no prompt: {:?} {:?}", a.ui.mode, a.ui.message) };
    assert!(d.lines.is_empty() && d.refusal.contains("v0.0.38"), "{d:?}");
    let screen = render(&mut a, 80, 24);
    assert!(screen.contains("gpuplane cannot send this") && !screen.contains("enter run"), "{screen}");
    // No reason, no line.
    key(&mut a, KeyCode::Enter);
    let Mode::Instead(d) = &a.ui.mode else { panic!() };
    assert!(d.lines.is_empty() && d.error.is_some(), "{d:?}");
    typed(&mut a, &format!("{REASON}\t{TICKET}\r"));
    let Mode::Instead(d) = &a.ui.mode else { panic!("{:?}", a.ui.mode) };
    // The console's line is the command line's, for the same reason and ticket.
    assert_eq!(d.lines, cli_line(&a, &node));
    let words = shlex::split(&d.lines[0]).unwrap();
    assert_eq!(
        words,
        [
            "scontrol".to_string(),
            "update".into(),
            format!("nodename={node}"),
            "state=drain".into(),
            format!("reason={REASON} [{TICKET}]")
        ]
    );
    // Nothing went to the ops task: nothing sent, nothing audited.
    assert!(a.op_panel.is_empty() && a.pending_plugin.is_none());
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.ui.mode.name(), "normal");
}

/// The copy key hands the terminal exactly the OSC 52 sequence of the line: ESC ] 52 ; c ;
/// base64(line) BEL (the escape the terminal puts on its clipboard).
#[tokio::test]
async fn the_copy_key_sends_the_osc52_sequence_of_exactly_the_line() {
    let (mut a, _server) = app_on_22_05().await;
    key(&mut a, KeyCode::Char('r'));
    typed(&mut a, &format!("{REASON}\t{TICKET}\r"));
    let Mode::Instead(d) = &a.ui.mode else { panic!("{:?}", a.ui.mode) };
    let line = d.lines[0].clone();
    key(&mut a, KeyCode::Char('c'));
    let run = a.pending_plugin.take().expect("a copy to run");
    assert!(!run.background, "the escape must reach the terminal");
    let out = std::process::Command::new(&run.program).args(&run.args).output().unwrap();
    let want = format!("\x1b]52;c;{}\x07", base64::engine::general_purpose::STANDARD.encode(line.as_bytes()));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), want);
    let Mode::Instead(d) = &a.ui.mode else { panic!("the panel stays open") };
    assert!(d.copied);
}

/// A resume takes no reason: the panel shows its line at once.
#[tokio::test]
async fn a_22_05_resume_shows_its_line_at_once() {
    let (mut a, _server) = app_on_22_05().await;
    let node = selected_node(&mut a);
    key(&mut a, KeyCode::Char('R'));
    let Mode::Instead(d) = &a.ui.mode else { panic!("{:?} {:?}", a.ui.mode, a.ui.message) };
    assert_eq!(d.lines, [format!("scontrol update nodename={node} state=resume")]);
}

#[tokio::test]
async fn the_prompt_and_the_panel_at_every_size() {
    for (w, h) in [(60u16, 20u16), (80, 24), (160, 48)] {
        let (mut a, _server) = app_on_22_05().await;
        key(&mut a, KeyCode::Char('r'));
        typed(&mut a, REASON);
        insta::assert_snapshot!(format!("instead_prompt_{w}x{h}"), render(&mut a, w, h));
        typed(&mut a, &format!("\t{TICKET}\r"));
        let screen = render(&mut a, w, h);
        // Wrapped, not cut: every word of the line is on the screen.
        let Mode::Instead(d) = &a.ui.mode else { panic!() };
        let flat = screen.split_whitespace().collect::<Vec<_>>().join(" ");
        let inner: String = flat.replace(" │ ", " ").replace("│ ", "").replace(" │", "");
        for word in d.lines[0].split(' ') {
            assert!(inner.contains(word), "{word:?} missing at {w}x{h}:\n{screen}");
        }
        insta::assert_snapshot!(format!("instead_panel_{w}x{h}"), screen);
    }
}

/// In a fleet, a drain on the 22.05 cluster's node is asked and answered the same way: its
/// planner's line, with the node's name in that cluster; the other cluster still confirms.
#[tokio::test]
async fn a_fleet_drain_on_the_22_05_cluster_shows_its_line() {
    use gpuplane::backend::sim::{Sim, SimConfig};
    use gpuplane::model::protocol::Update;
    use gpuplane::ops::fleet::Route;
    let (one, _server) = app_on_22_05().await;
    let planner22 = one.planner.clone().unwrap();
    common::pin_utc();
    let mut a = App::new(
        gpuplane::state::ClusterState::new(Default::default(), Default::default()),
        gpuplane::tui::keymap::Keymap::builtin("default"),
        gpuplane::tui::theme::Theme::builtin("dark"),
        gpuplane::tui::widgets::Glyphs::UNICODE,
        "researcher".into(),
    );
    for (c, seed) in [("c22", 1), ("c24", 2)] {
        let sim = Sim::new(SimConfig { nodes: 4, seed, ..SimConfig::default() });
        for u in sim.initial() {
            a.update(gpuplane::tui::app::Msg::Update(Update::Cluster {
                cluster: c.into(),
                update: Box::new(u),
            }));
        }
        let planner = if c == "c22" {
            planner22.clone()
        } else {
            std::sync::Arc::new(gpuplane::ops::SimPlanner::new("op"))
        };
        a.routes.insert(c.into(), Route { planner, readonly: false, tx: None });
    }
    a.goto(views::nodes::ID);
    a.prepare();
    let node = a.selected_obj().and_then(|o| o.node()).expect("a selected node").clone();
    assert_eq!(node.cluster, "c22", "the first row is c22's");
    key(&mut a, KeyCode::Char('r'));
    typed(&mut a, &format!("{REASON}\t{TICKET}\r"));
    let Mode::Instead(d) = &a.ui.mode else { panic!("{:?} {:?}", a.ui.mode, a.ui.message) };
    let words = shlex::split(&d.lines[0]).unwrap();
    assert_eq!(words[2], format!("nodename={}", node.name));
    assert_eq!(words[4], format!("reason={REASON} [{TICKET}]"));
    key(&mut a, KeyCode::Esc);
    // The other cluster's node is confirmed as ever.
    typed(&mut a, ":nodes state=alloc\r");
    key(&mut a, KeyCode::End);
    a.prepare();
    assert_eq!(a.selected_obj().and_then(|o| o.node()).unwrap().cluster, "c24");
    key(&mut a, KeyCode::Char('r'));
    assert!(matches!(a.ui.mode, Mode::Confirm(_)), "{:?} {:?}", a.ui.mode, a.ui.message);
}
