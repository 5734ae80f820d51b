//! End-to-end: the real binary in a pseudo-terminal. Keys in, screen out, terminal restored.

use crate::kube_support;

use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Console {
    parser: Arc<Mutex<vt100::Parser>>,
    /// Everything the program wrote, raw.
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    /// Set to close every master fd (an SSH drop): the reader thread drops them.
    hangup: Arc<AtomicBool>,
    _home: Option<tempfile::TempDir>,
}

fn spawn(cols: u16, rows: u16, env: &[(&str, &str)], args: &[&str]) -> Console {
    let home = tempfile::tempdir().expect("tempdir");
    let mut c = spawn_in(home.path(), cols, rows, env, args);
    c._home = Some(home);
    c
}

/// A console whose home (config, data: audit log, ack store) is `home`.
fn spawn_in(home: &std::path::Path, cols: u16, rows: u16, env: &[(&str, &str)], args: &[&str]) -> Console {
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_gpuplane"));
    cmd.args(["--user", "researcher", "--refresh", "500ms"]);
    cmd.args(args);
    spawn_cmd(cmd, home, cols, rows, env)
}

/// An interactive bash (job control on) in the terminal, to run gpuplane as a shell job.
fn spawn_shell(cols: u16, rows: u16) -> Console {
    let home = tempfile::tempdir().expect("tempdir");
    let mut cmd = CommandBuilder::new("bash");
    cmd.args(["--norc", "--noprofile", "-i"]);
    let mut c = spawn_cmd(cmd, home.path(), cols, rows, &[("PS1", "sh$ ")]);
    c._home = Some(home);
    c
}

fn spawn_cmd(
    mut cmd: CommandBuilder,
    home: &std::path::Path,
    cols: u16,
    rows: u16,
    env: &[(&str, &str)],
) -> Console {
    let pty = native_pty_system();
    let pair = pty.openpty(PtySize { rows, cols, pixel_width: 0, pixel_height: 0 }).expect("openpty");
    cmd.env_clear();
    cmd.env("HOME", home);
    cmd.env("XDG_CONFIG_HOME", home.join("config"));
    cmd.env("XDG_STATE_HOME", home.join("state"));
    cmd.env("TERM", "xterm-256color");
    cmd.env("LANG", "C.UTF-8");
    cmd.env("PATH", "/usr/bin:/bin");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = pair.slave.spawn_command(cmd).expect("spawn gpuplane");
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().expect("reader");
    let writer = pair.master.take_writer().expect("writer");
    let parser = Arc::new(Mutex::new(vt100::Parser::new(
        std::num::NonZeroU16::new(rows).unwrap(),
        std::num::NonZeroU16::new(cols).unwrap(),
        0,
    )));
    let raw = Arc::new(Mutex::new(Vec::new()));
    let (p, r) = (parser.clone(), raw.clone());
    let hangup = Arc::new(AtomicBool::new(false));
    let hup = hangup.clone();
    let master: Box<dyn MasterPty + Send> = pair.master;
    std::thread::spawn(move || {
        // Polled, not a blocking read: a hang-up is noticed within 100 ms even when the console
        // has nothing new to draw (a read would wait for its next frame, seconds under load).
        let fd = master.as_raw_fd().expect("the master's fd");
        let _master = master;
        let mut buf = [0u8; 8192];
        loop {
            if hup.load(Ordering::SeqCst) {
                // dropping the reader and the master closes the terminal's master side
                break;
            }
            let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd for the duration of the call; the fd is the master's,
            // kept open by `_master` until this thread ends.
            if unsafe { libc::poll(&mut pfd, 1, 100) } == 0 {
                continue;
            }
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    p.lock().unwrap().process(&buf[..n]);
                    r.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            }
        }
    });
    Console { parser, raw, writer, child, hangup, _home: None }
}

impl Console {
    fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.screen().contains(text) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("timed out waiting for {text:?}; screen:\n{}", self.screen());
    }

    fn send(&mut self, s: &str) {
        self.writer.write_all(s.as_bytes()).unwrap();
        self.writer.flush().unwrap();
        std::thread::sleep(Duration::from_millis(150));
    }

    fn wait_exit(&mut self) -> portable_pty::ExitStatus {
        // Generous: the full suite runs 16 consoles at once on 2 cores, and a hang-up is only
        // noticed after the next frame is written; this asserts that it exits, not how fast.
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        panic!("gpuplane did not exit; screen:\n{}", self.screen());
    }

    fn restored(&self) -> bool {
        // Give the reader thread a moment to drain the last bytes.
        std::thread::sleep(Duration::from_millis(200));
        let p = self.parser.lock().unwrap();
        !p.screen().alternate_screen() && !p.screen().hide_cursor()
    }
}

#[test]
fn switches_views_filters_opens_details_and_quits_restoring_the_terminal() {
    let mut c = spawn(100, 30, &[], &[]);
    c.wait_for("SIMULATED");
    c.wait_for("Incidents");
    assert!(c.parser.lock().unwrap().screen().alternate_screen(), "runs on the alternate screen");
    // command mode with completion: ":jo<tab>" completes to jobs
    c.send(":jo\t");
    c.wait_for(":jobs");
    c.send("\r");
    c.wait_for(" Jobs [");
    // filter to the researcher's jobs
    c.send("/user==researcher\r");
    c.wait_for("</user==researcher>");
    let screen = c.screen();
    let rows: Vec<&str> = screen.lines().filter(|l| l.contains(" PD ") || l.contains(" R ")).collect();
    assert!(!rows.is_empty(), "the researcher has jobs:\n{screen}");
    assert!(rows.iter().all(|l| l.contains("researcher")), "{screen}");
    // details of the selected job
    c.send("\r");
    c.wait_for("details");
    c.wait_for("submitted");
    c.send("\x1b");
    // nodes view by alias, then the GPU wall
    c.send(":no\r");
    c.wait_for(" Nodes [");
    c.send(":wall\r");
    c.wait_for("GPU wall");
    c.send("q");
    let status = c.wait_exit();
    assert!(status.success(), "{status:?}");
    assert!(c.restored(), "alternate screen left and cursor shown");
}

/// The marks flow through the real binary: space marks and moves down, a filter hides the
/// marks, the confirmation says it acts on them (flagged hidden by filter, not the highlighted
/// row), `M` clears them, and the help says so.
#[test]
fn marks_hidden_by_a_filter_are_flagged_in_the_plan_and_cleared_with_m() {
    let mut c = spawn(100, 30, &[], &[]);
    c.wait_for("Incidents");
    c.send(":nodes\r");
    c.wait_for(" Nodes [");
    c.send("  ");
    c.wait_for("M unmark 2");
    c.send("/gpu-01\r");
    c.wait_for("</gpu-01>");
    c.send("c");
    c.wait_for("hidden by the filter");
    let screen = c.screen();
    assert!(screen.contains("cordon 2 target(s)"), "{screen}");
    assert!(screen.contains("acting on the 2 marked node(s), not the highlighted gpu-01"), "{screen}");
    assert!(screen.contains("[hidden by filter] cordon gpu-001"), "{screen}");
    assert!(screen.contains("[hidden by filter] cordon gpu-002"), "{screen}");
    c.send("\x1b");
    c.wait_for("cordon cancelled; nothing was done");
    c.send("M");
    c.wait_for("cleared 2 mark(s)");
    c.send("?/mark");
    c.wait_for("clear every mark");
    assert!(c.screen().contains("move down"), "{}", c.screen());
    c.send("\r");
    c.send("q");
    c.send(":q\r");
    assert!(c.wait_exit().success());
    assert!(c.restored());
}

#[test]
fn pause_freezes_the_screen_and_says_so() {
    let mut c = spawn(100, 30, &[], &[]);
    c.wait_for("Incidents");
    c.send("p");
    c.wait_for("PAUSED");
    c.send("p");
    let deadline = Instant::now() + Duration::from_secs(5);
    while c.screen().contains("PAUSED") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!c.screen().contains("PAUSED"));
    c.send("\x03"); // ctrl-c
    assert!(c.wait_exit().success());
    assert!(c.restored());
}

#[test]
fn sighup_exits_at_once_and_restores_the_terminal() {
    let mut c = spawn(80, 24, &[], &[]);
    c.wait_for("SIMULATED");
    let pid = c.child.process_id().expect("pid");
    let ok = std::process::Command::new("kill").args(["-HUP", &pid.to_string()]).status().unwrap();
    assert!(ok.success());
    let status = c.wait_exit();
    assert_eq!(status.exit_code(), 129);
    assert!(c.restored());
}

#[test]
fn exits_when_the_terminal_goes_away() {
    let mut c = spawn(80, 24, &[], &[]);
    c.wait_for("SIMULATED");
    // An SSH drop: every fd of the master side closes (the reader thread lets go of its own
    // after the next screen update arrives).
    drop(std::mem::replace(&mut c.writer, Box::new(std::io::sink())));
    c.hangup.store(true, Ordering::SeqCst);
    // wait_exit panics unless the process is gone within seconds.
    let status = c.wait_exit();
    assert!(!status.success(), "a hang-up is not a clean quit: {status:?}");
}

/// Ctrl-Z stops the console as a shell job with the terminal given back (main screen, cursor
/// shown), and `fg` takes the screen back and redraws it. Run with `$USER` and `$LOGNAME` unset,
/// the header names the OS user.
#[test]
fn ctrl_z_suspends_to_the_shell_and_fg_restores_the_screen() {
    let mut c = spawn_shell(100, 30);
    c.wait_for("sh$");
    let bin = env!("CARGO_BIN_EXE_gpuplane");
    c.send(&format!("unset USER LOGNAME; '{bin}' --refresh 500ms\r"));
    c.wait_for("SIMULATED");
    c.wait_for("Incidents");
    let id = std::process::Command::new("id").arg("-un").output().expect("id -un");
    let me = String::from_utf8_lossy(&id.stdout).trim().to_string();
    let header = c.screen().lines().next().unwrap_or_default().to_string();
    assert!(header.contains(&format!("user {me}")), "the OS user, not unknown: {header}");
    c.send(":nodes\r");
    c.wait_for(" Nodes [");
    c.send("\x1a"); // ctrl-z
    c.wait_for("Stopped");
    assert!(c.restored(), "the terminal is given back while stopped");
    c.send("fg\r");
    c.wait_for(" Nodes [");
    {
        let p = c.parser.lock().unwrap();
        assert!(
            p.screen().alternate_screen() && p.screen().hide_cursor(),
            "the console took the screen back"
        );
    }
    // The whole screen is drawn again, not only what changed.
    let screen = c.screen();
    assert!(screen.contains("SIMULATED") && screen.contains("STATE"), "{screen}");
    c.send("q");
    c.wait_for("sh$");
    assert!(c.restored());
    c.send("exit\r");
    c.wait_exit();
}

#[test]
fn ascii_fallback_without_a_utf8_locale_and_monochrome_with_no_color() {
    let mut c = spawn(80, 24, &[("LANG", "C"), ("NO_COLOR", "1"), ("TERM", "linux")], &[]);
    c.wait_for("SIMULATED");
    c.wait_for("Incidents");
    let screen = c.screen();
    assert!(screen.contains("+-"), "ASCII borders:\n{screen}");
    assert!(!screen.contains('│') && !screen.contains('─'), "no box drawing:\n{screen}");
    let raw = c.raw.lock().unwrap().clone();
    let text = String::from_utf8_lossy(&raw);
    assert!(!text.contains("\x1b[38;5;") && !text.contains("\x1b[38;2;"), "no colours with NO_COLOR");
    // Pure ASCII whatever the view shows (no ×, °, …, arrows or dots), and the cursor row is
    // marked in text, apart from CRIT cells (both are reverse video without colour).
    for (view, title) in
        [(":nodes\r", " Nodes ["), (":gpus\r", " GPUs ["), (":topo\r", "Topology"), ("?", "keys")]
    {
        c.send(view);
        c.wait_for(title);
        c.send("\x1b");
    }
    c.send(":nodes\r");
    c.wait_for(" Nodes [");
    assert!(c.screen().lines().any(|l| l.starts_with("|>")), "cursor marker:\n{}", c.screen());
    let raw = c.raw.lock().unwrap().clone();
    let bad: String = String::from_utf8_lossy(&raw).chars().filter(|c| !c.is_ascii()).collect();
    assert!(bad.is_empty(), "non-ASCII sent in ASCII mode: {bad:?}");
    c.send("q");
    assert!(c.wait_exit().success());
}

#[test]
fn a_broken_theme_file_still_starts_on_defaults_and_says_which_line() {
    let home = tempfile::tempdir().unwrap();
    let themes = home.path().join("themes");
    std::fs::create_dir_all(&themes).unwrap();
    std::fs::write(themes.join("broken.toml"), "name = \"broken\"\n[styles]\ntext = { fg = 12x }\n").unwrap();
    let cfg = home.path().join("config.toml");
    std::fs::write(&cfg, "theme = \"broken\"\n").unwrap();
    let mut c = spawn(120, 30, &[], &["--config", cfg.to_str().unwrap()]);
    c.wait_for("SIMULATED");
    c.wait_for("broken.toml: line 3");
    c.send("q");
    assert!(c.wait_exit().success());
}

#[test]
fn drain_two_marked_nodes_with_a_reason_shows_progress_and_audit_records() {
    let mut c = spawn(120, 36, &[], &[]);
    c.wait_for("Incidents");
    c.send(":nodes state=alloc\r");
    c.wait_for("</state=alloc>");
    // mark the first two rows, then drain
    c.send(" ");
    c.send(" ");
    c.send("r");
    c.wait_for("drain 2 target(s)");
    c.wait_for("type \"2\" to confirm");
    c.send("IB link flaps");
    c.send("\t");
    c.send("INC-9");
    c.send("\t");
    c.send("2");
    c.send("\r");
    c.wait_for("drain done: 2/2 succeeded");
    c.send("\x1b");
    c.send(":audit\r");
    c.wait_for(" Audit [");
    c.wait_for("IB link flaps");
    let screen = c.screen();
    assert!(screen.contains("intent") && screen.contains("outcome"), "{screen}");
    assert!(screen.contains("INC-9"), "{screen}");
    c.send("q");
    assert!(c.wait_exit().success());
    assert!(c.restored());
}

/// A fleet of two simulated clusters: focused on sim-2, a drain of two marked nodes is planned
/// under sim-2's line and run by sim-2's own ops task and simulator.
#[test]
fn a_fleet_drain_goes_to_the_focused_clusters_ops_task() {
    let mut c = spawn(120, 36, &[], &["--sim-clusters", "2"]);
    c.wait_for("fleet of 2");
    c.send(":cluster sim-2\r");
    c.wait_for("sim-2 (1 of 2)");
    c.send(":nodes state=alloc\r");
    c.wait_for("</state=alloc>");
    c.send(" ");
    c.send(" ");
    c.send("r");
    c.wait_for("on sim-2 (sim as sim:researcher): 2 target(s)");
    assert!(c.screen().contains("drain sim-2/gpu-"), "{}", c.screen());
    c.send("fleet e2e");
    c.send("\t\t2\r");
    c.wait_for("drain done: 2/2 succeeded");
    c.send("\x1b");
    c.send("q");
    assert!(c.wait_exit().success());
    assert!(c.restored());
}

#[test]
fn read_only_mode_says_so_and_refuses_actions() {
    let mut c = spawn(100, 30, &[], &["--readonly"]);
    c.wait_for("READ-ONLY");
    c.send(":nodes\r");
    c.wait_for(" Nodes [");
    c.send("r");
    c.wait_for("read-only mode: drain is not available");
    c.send("q");
    assert!(c.wait_exit().success());
}

/// With Prometheus alone (no ops task) and the server unreachable, the console neither spins
/// nor stops reading keys.
#[test]
fn an_unreachable_source_neither_spins_nor_freezes_the_console() {
    let mut c = spawn(100, 30, &[], &["--prometheus", "http://127.0.0.1:9"]);
    c.wait_for("prom");
    let pid = c.child.process_id().expect("pid");
    let cpu = || -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let f: Vec<&str> = stat.rsplit(')').next().unwrap().split_whitespace().collect();
        f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
    };
    let before = cpu();
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu() - before;
    assert!(used < 50, "{used} ticks of CPU in 2 s: the loop spins");
    c.send(":nodes\r");
    c.wait_for(" Nodes [");
    c.send("q");
    assert!(c.wait_exit().success());
}

/// A background plugin's output lands in a pane; a foreground plugin gets the terminal and
/// the console comes back after it.
#[test]
fn plugins_run_in_the_background_and_in_the_foreground() {
    let home = tempfile::tempdir().unwrap();
    let plugins = home.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::write(
        plugins.join("whereami.toml"),
        "name = \"whereami\"\nshortcut = \"ctrl-t\"\nscopes = [\"nodes\"]\ncommand = \"printf\"\nargs = [\"plugin-saw %s as %s\", \"$NODE\", \"$USER\"]\nbackground = true\n",
    )
    .unwrap();
    std::fs::write(
        plugins.join("fg.toml"),
        "name = \"fg\"\nshortcut = \"ctrl-u\"\nscopes = [\"nodes\"]\ncommand = \"sh\"\nargs = [\"-c\", \"echo FOREGROUND-PLUGIN; sleep 1\"]\n",
    )
    .unwrap();
    let cfg = home.path().join("config.toml");
    std::fs::write(&cfg, "").unwrap();
    let mut c = spawn(120, 30, &[], &["--config", cfg.to_str().unwrap()]);
    c.wait_for("Incidents");
    c.send(":nodes\r");
    c.wait_for(" Nodes [");
    c.send("\x14"); // ctrl-t
    c.wait_for("plugin-saw gpu-001 as researcher");
    c.send("\x1b");
    c.send("\x15"); // ctrl-u
    c.wait_for("FOREGROUND-PLUGIN");
    c.wait_for("plugin fg finished");
    c.wait_for(" Nodes [");
    c.send("q");
    assert!(c.wait_exit().success());
    assert!(c.restored());
}

#[test]
fn a_kubernetes_context_watch_events_reach_the_screen_and_ctx_switches() {
    let fake = kube_support::FakeKube::start(kube_support::Cluster::small(), Default::default());
    let kc = fake.kubeconfig_path().display().to_string();
    let mut c = spawn(120, 30, &[], &["--kubeconfig", &kc, "--context", "fake-admin"]);
    // The context is always in the header; the data is not simulated.
    c.wait_for("fake-admin");
    c.send(":nodes\r");
    c.wait_for("gpu-node-1");
    assert!(!c.screen().contains("SIMULATED"));
    c.send("/gpu-node-1\r");
    c.wait_for("</gpu-node-1>");
    assert!(!c.screen().contains("gpu-node-4"));
    // A node going NotReady on the server shows on screen, without a key press.
    fake.set_node_ready("gpu-node-1", false);
    c.wait_for("down");
    // :ctx switches context; the header follows.
    c.send(":ctx fake-viewer\r");
    c.wait_for("fake-viewer");
    c.send(":ctx nope\r");
    c.wait_for("no context \"nope\"");
    c.send("q");
    let status = c.wait_exit();
    assert!(status.success(), "{status:?}");
    assert!(c.restored(), "alternate screen left and cursor shown");
}

#[test]
fn acceptance_key_on_the_simulator_shows_states_and_the_verdict_in_the_fabric_view() {
    let mut c = spawn(120, 36, &[], &[]);
    c.wait_for("Incidents");
    c.send(":nodes state=alloc\r");
    c.wait_for("</state=alloc>");
    c.send(" ");
    c.send("N");
    c.wait_for("acceptance 1 target(s)");
    c.wait_for("all_reduce_perf -b 8 -e 8G -f 2 -g 8");
    c.send("after the cable swap\r");
    c.wait_for("acceptance done: 1/1 succeeded");
    c.wait_for("PENDING (Resources)");
    c.wait_for("RUNNING");
    c.wait_for("COMPLETED");
    c.wait_for(" PASS ");
    c.send("\x1b");
    c.send(":fabric\r");
    c.wait_for("Nodes: ports and acceptance");
    c.wait_for(" pass ");
    c.send("q");
    assert!(c.wait_exit().success());
    assert!(c.restored());
}

#[test]
fn a_bad_filter_says_so_in_the_filter_line_and_keeps_the_rows() {
    let mut c = spawn(100, 30, &[], &[]);
    c.wait_for("SIMULATED");
    c.send(":jobs st=PD\r");
    c.wait_for("[filtered: ");
    let before = c.screen();
    let count = |s: &str| s.lines().filter(|l| l.contains(" PD ")).count();
    let n = count(&before);
    assert!(n > 0, "{before}");
    // An unknown key while typing (the prompt starts with the filter in force; ^U clears it):
    // the error and the keys, at once; the rows stay.
    c.send("/\x15stat=R");
    c.wait_for("unknown key \"stat\"");
    let screen = c.screen();
    assert!(screen.contains(" st ") || screen.contains(" state "), "keys listed:\n{screen}");
    assert_eq!(count(&screen), n, "the table is not emptied:\n{screen}");
    assert!(screen.contains("</st=PD>"), "the filter in force is still the last good one:\n{screen}");
    // Fixed, it applies.
    c.send("\x15st=R\r");
    c.wait_for("</st=R>");
    c.send("q");
    assert!(c.wait_exit().success());
}

/// `a` on the first incident, a ticket and a note: the ack is audited, the row says who acked
/// it, and a second console on the same data dir shows the same ack on its next refresh.
#[test]
fn a_acks_an_incident_and_another_console_on_the_data_dir_sees_it() {
    let home = tempfile::tempdir().unwrap();
    let mut one = spawn_in(home.path(), 160, 40, &[], &[]);
    // The first incident row drawn, not only the table's title: a key pressed before the rows
    // exist has no incident to act on.
    one.wait_for("XID 79");
    one.send("a");
    one.wait_for(":ack ");
    one.send("INC-77 on it\r");
    one.wait_for("(audited)");
    one.wait_for("acked by researcher INC-77");
    let mut two = spawn_in(home.path(), 160, 40, &[], &[]);
    two.wait_for("Incidents");
    two.wait_for("acked by researcher INC-77");
    one.send(":audit\r");
    one.wait_for("incident-ack");
    for c in [&mut one, &mut two] {
        c.send("q");
        assert!(c.wait_exit().success());
    }
    // Read-only: refused, with the reason.
    let mut ro = spawn_in(home.path(), 160, 40, &[], &["--readonly"]);
    ro.wait_for("Incidents");
    ro.send("a");
    ro.wait_for("read-only: acknowledging");
    ro.send("q");
    assert!(ro.wait_exit().success());
}
