//! Shared helpers: a fixed simulated cluster and a headless app.
#![allow(dead_code)]

use gpuplane::backend::sim::{self, SimConfig};
use gpuplane::tui::app::{App, Msg};
use gpuplane::tui::draw::draw;
use gpuplane::tui::keymap::Keymap;
use gpuplane::tui::theme::Theme;
use gpuplane::tui::widgets::Glyphs;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Times are shown in UTC on this thread, so snapshots do not depend on the machine's zone.
pub fn pin_utc() {
    gpuplane::clock::pin_zone(Some(jiff::tz::TimeZone::UTC));
}

/// The fixed simulated cluster every snapshot uses: default size, seed 42, 30 ticks in (times
/// shown in UTC).
pub fn app() -> App {
    pin_utc();
    let state = gpuplane::testing::state_after(SimConfig::default(), 30);
    let mut a = App::new(
        state,
        Keymap::builtin("default"),
        Theme::builtin("dark"),
        Glyphs::UNICODE,
        "researcher".into(),
    );
    // Plans actions against the same simulated cluster (execution happens in the ops task).
    a.planner = Some(std::sync::Arc::new(gpuplane::ops::SimPlanner::new("researcher")));
    a
}

/// An app on a simulated cluster of `nodes` nodes (seed 42, 30 ticks in), with a theme and glyphs.
pub fn app_sized(nodes: usize, theme: &str, glyphs: Glyphs) -> App {
    pin_utc();
    let state = gpuplane::testing::state_after(SimConfig { nodes, ..SimConfig::default() }, 30);
    let mut a =
        App::new(state, Keymap::builtin("default"), Theme::builtin(theme), glyphs, "researcher".into());
    a.planner = Some(std::sync::Arc::new(gpuplane::ops::SimPlanner::new("researcher")));
    a
}

/// The same app and the simulator that made it, to keep it ticking.
pub fn app_with_sim() -> (App, sim::Sim) {
    pin_utc();
    let mut s = sim::Sim::new(SimConfig::default());
    let mut a = App::new(
        gpuplane::state::ClusterState::new(Default::default(), Default::default()),
        Keymap::builtin("default"),
        Theme::builtin("dark"),
        Glyphs::UNICODE,
        "researcher".into(),
    );
    for u in s.initial() {
        a.update(Msg::Update(u));
    }
    for _ in 0..30 {
        a.update(Msg::Update(s.tick()));
    }
    (a, s)
}

pub fn render(app: &mut App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    let now = app.state().now;
    term.draw(|f| draw(f, app, now)).expect("draw");
    let buf = term.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..h {
        let mut line = String::new();
        for x in 0..w {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

pub fn key(app: &mut App, code: KeyCode) {
    app.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

pub fn typed(app: &mut App, s: &str) {
    for c in s.chars() {
        let code = match c {
            '\r' => KeyCode::Enter,
            '\x1b' => KeyCode::Esc,
            '\t' => KeyCode::Tab,
            c => KeyCode::Char(c),
        };
        key(app, code);
    }
}

/// The real binary with its own home, config, data and state folders under `home`, and no
/// cluster taken from the caller's environment (tests pass the cluster they mean).
/// The config file a [`gpuplane_cmd`] in `home` reads (`$XDG_CONFIG_HOME/gpuplane/config.toml`),
/// written with `text`.
pub fn write_config(home: &std::path::Path, text: &str) {
    let dir = home.join("config/gpuplane");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

/// A syslog datagram socket in `home`, configured as the audit witness's socket there (a host
/// without a syslog daemon fails every head sent to `/dev/log`, and doctor says so).
pub fn syslog_at(home: &std::path::Path) -> std::os::unix::net::UnixDatagram {
    let sock = home.join("syslog.sock");
    let s = std::os::unix::net::UnixDatagram::bind(&sock).unwrap();
    write_config(home, &format!("[audit]\nsyslog_socket = {:?}\n", sock.to_str().unwrap()));
    s
}

pub fn gpuplane_cmd(home: &std::path::Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gpuplane"));
    cmd.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env_remove("SLURMRESTD_URL")
        .env_remove("SLURM_USER_NAME")
        .env_remove("SLURM_JWT")
        .env_remove("PROMETHEUS_URL")
        .env_remove("ALERTMANAGER_URL")
        .env_remove("KUBECONFIG")
        .env_remove("GPUPLANE_UTC")
        .env("TZ", "UTC");
    cmd
}

/// Acceptance results for the first twelve simulated nodes: most pass, gpu-005 fails, gpu-009
/// is degraded, gpu-011 runs another driver, gpu-012 dropped against its own history.
pub fn acceptance_data() -> std::collections::BTreeMap<String, gpuplane::acceptance::NodeAcceptance> {
    use gpuplane::acceptance::judge::{Drift, DriftKind};
    use gpuplane::acceptance::{NodeAcceptance, Verdict};
    let mut m = std::collections::BTreeMap::new();
    for i in 1..=12u32 {
        let node = format!("gpu-{i:03}");
        let base = 470.0 - f64::from(i % 5) * 2.5;
        let mut history: Vec<f64> = (0..6).map(|k| base - f64::from((k * 7 + i) % 4)).collect();
        let (verdict, last) = match i {
            5 => (Verdict::Fail, 291.4),
            9 => (Verdict::Degraded, 402.6),
            12 => (Verdict::Pass, 423.0),
            _ => (Verdict::Pass, base),
        };
        history.push(last);
        let pct = last / 468.2 * 100.0;
        let mut drift = Vec::new();
        if i == 11 {
            drift.push(Drift {
                node: node.clone(),
                kind: DriftKind::Driver,
                found: "535.161.08".into(),
                expected: "550.54.15".into(),
            });
        }
        if i == 12 {
            drift.push(Drift {
                node: node.clone(),
                kind: DriftKind::Busbw,
                found: "423.0 GB/s".into(),
                expected: "467.5 GB/s (own median)".into(),
            });
        }
        let a = NodeAcceptance {
            node: node.clone(),
            last_run: format!("run-{i}"),
            last_verdict: Some(verdict),
            last_busbw: Some(last),
            last_at: 1_767_225_600,
            last_baseline: Some(468.2),
            last_pct: Some(pct),
            last_why: format!(
                "{last:.1} GB/s = {pct:.0}% of 468.2 GB/s (fleet median of 12 8xH100 node sets)"
            ),
            history,
            drift,
        };
        m.insert(node, a);
    }
    m
}

/// The fixed app with [`acceptance_data`] loaded, as the ops task would send it.
pub fn app_with_acceptance() -> App {
    let mut a = app();
    a.update(Msg::Op(gpuplane::ops::OpEvent::Acceptance(Box::new(acceptance_data()))));
    a
}

/// Alerts and silences recorded from the real Alertmanager fed by the test Prometheus
/// (tests/fixtures/alertmanager/), their times moved so the last thing recorded happened a
/// minute before `now`.
pub fn recorded_alerts(now: i64) -> gpuplane::model::alert::AlertSnapshot {
    use gpuplane::backend::alertmanager::wire;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/alertmanager");
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    let mut alerts = wire::alerts(&read("alerts.json")).expect("recorded alerts");
    let mut silences = wire::silences(&read("silences.json")).expect("recorded silences");
    let last =
        alerts.iter().map(|a| a.starts_at).chain(silences.iter().map(|s| s.starts_at)).max().unwrap_or(now);
    let shift = now - 60 - last;
    for a in &mut alerts {
        a.starts_at += shift;
        a.ends_at = a.ends_at.map(|t| t + shift);
    }
    for s in &mut silences {
        s.starts_at += shift;
        s.ends_at += shift;
    }
    gpuplane::model::alert::AlertSnapshot { source: "am".into(), at: now, alerts, silences }
}

/// [`app`] with the recorded alerts and silences applied (and Alertmanager as a source).
pub fn app_with_alerts() -> App {
    let mut a = app();
    let now = a.state().now;
    a.update(Msg::Update(gpuplane::model::protocol::Update::Status(
        gpuplane::model::protocol::SourceStatus {
            cluster: Default::default(),
            name: "am".into(),
            simulated: false,
            ok_at: Some(now),
            error: None,
            detail: Some("0.25.0".into()),
        },
    )));
    a.update(Msg::Update(gpuplane::model::protocol::Update::Alerts(Box::new(recorded_alerts(now)))));
    a
}

/// The URL of the test Prometheus (scripts/test starts it); a live test fails without it.
pub fn prom_url() -> String {
    match std::env::var("GPUPLANE_TEST_PROM_URL") {
        Ok(u) if !u.is_empty() => u,
        _ => panic!(
            "GPUPLANE_TEST_PROM_URL is not set: this test needs the real Prometheus that the test command starts — run scripts/test"
        ),
    }
}

/// One value of an instant PromQL query at `at` (`None`: no series; more than one fails).
pub fn prom_value(url: &str, promql: &str, at: i64) -> Option<f64> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let c = gpuplane::backend::prom::PromClient::new(&gpuplane::backend::prom::PromConfig::new(url)).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let body = rt.block_on(c.query(promql, Some(at as f64))).unwrap_or_else(|e| panic!("{promql}: {e}"));
    let r = body.parse().unwrap();
    let v: Vec<f64> = r.results.iter().filter_map(|s| s.last()).map(|p| p.v).collect();
    assert!(v.len() <= 1, "{promql}: {v:?}");
    v.first().copied()
}

/// A finished job as the scheduler side records it in the usage ledger (alice, vision, queue
/// gpu, COMPLETED), on `node`, holding `gpus` GPUs of `model` for `[start, end)`.
pub fn finished_job(
    id: u64,
    name: &str,
    gpus: u32,
    model: &str,
    node: &str,
    (start, end): (i64, i64),
) -> gpuplane::store::JobRecord {
    gpuplane::store::JobRecord {
        id,
        name: name.into(),
        user: "alice".into(),
        account: "vision".into(),
        queue: "gpu".into(),
        state: "COMPLETED".into(),
        submit: start - 60,
        start: Some(start),
        end: Some(end),
        gpus,
        gpu_model: Some(model.into()),
        nodes: vec![node.into()],
        exit_reason: None,
        gpu_seconds: f64::from(gpus) * (end - start) as f64,
        useful_gpu_seconds: 0.0,
        mean_util: None,
        first_seen: start,
        last_seen: end,
        time_limit: None,
    }
}

/// The ledger file `report job` reads, from its answer for a job that is not there (it names
/// the file, which is named after the cluster).
pub fn ledger_path_of(missing_job: &std::process::Output) -> std::path::PathBuf {
    assert_eq!(missing_job.status.code(), Some(2));
    let err = String::from_utf8_lossy(&missing_job.stderr).to_string();
    let path = err.rsplit_once('(').and_then(|(_, p)| p.split_once(')')).map(|(p, _)| p.to_string());
    path.unwrap_or_else(|| panic!("the ledger's path in {err}")).into()
}
