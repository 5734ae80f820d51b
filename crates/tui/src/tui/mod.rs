//! The terminal console: one module owns the terminal (enter, restore on every exit path),
//! the event loop turns keys, backend updates and ticks into `Msg`s, and draws only when
//! something changed.

pub mod app;
pub mod dialogs;
pub mod draw;
pub mod help;
pub mod journal;
pub mod keymap;
pub mod plugins;
pub mod summaries;
pub mod theme;
pub mod usercmd;
pub mod views;
pub mod widgets;

use crate::model::protocol::Update;
use app::{App, Msg};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{Event, EventStream};
use ratatui::crossterm::{cursor, execute, terminal};
use std::io::{self, Write};
use std::time::{Duration, Instant};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

/// Leaves the alternate screen, shows the cursor and turns raw mode off. Safe to call twice
/// and from a panic hook; never panics.
pub fn restore_terminal() {
    let _ = terminal::disable_raw_mode();
    let mut out = io::stdout();
    let _ = execute!(out, terminal::LeaveAlternateScreen, cursor::Show);
    let _ = out.flush();
}

/// Takes the terminal: raw mode, the alternate screen, cleared, cursor hidden. (Cleared through
/// crossterm, not Terminal::clear, which asks the terminal for the cursor position and fails on
/// terminals that do not answer.)
fn enter_terminal() -> io::Result<()> {
    terminal::enable_raw_mode()?;
    execute!(
        io::stdout(),
        terminal::EnterAlternateScreen,
        cursor::Hide,
        terminal::Clear(terminal::ClearType::All)
    )
}

/// Ctrl-Z. Raw mode turns off the terminal's own suspend character, so the console does what it
/// would have done: give the terminal back, stop (SIGTSTP, so the shell's job control sees a
/// stopped job), and, once `fg` continues it, take the terminal back. The caller redraws.
fn suspend() -> io::Result<()> {
    restore_terminal();
    signal_hook::low_level::raise(signal_hook::consts::SIGTSTP)?;
    enter_terminal()
}

fn is_suspend(k: &ratatui::crossterm::event::KeyEvent) -> bool {
    use ratatui::crossterm::event::{KeyCode, KeyEventKind, KeyModifiers};
    k.kind == KeyEventKind::Press
        && k.modifiers.contains(KeyModifiers::CONTROL)
        && matches!(k.code, KeyCode::Char('z' | 'Z'))
}

/// Installs color-eyre's hooks wrapped so the terminal is restored before anything is printed.
pub fn install_hooks() -> color_eyre::Result<()> {
    let (panic, eyre) = color_eyre::config::HookBuilder::default().into_hooks();
    eyre.install()?;
    let panic = panic.into_panic_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_terminal();
        panic(info);
    }));
    Ok(())
}

/// Restores the terminal when dropped, so every return path (errors included) restores it.
struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Why the loop ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Exit {
    Quit,
    /// SIGHUP, or the terminal stopped answering (SSH dropped).
    HungUp,
    Terminated,
    FramesDone,
}

pub struct RunOpts {
    /// Stop after this many frames (benchmarks: time to first frame).
    pub exit_after_frames: Option<u64>,
    /// Answers from the usage ledger's thread (`app.ledger`), when there is a ledger.
    pub ledger_answers: Option<mpsc::UnboundedReceiver<crate::store::ledger::Answer>>,
    /// Answers from the ack store's thread (`app.acks`), when there is one.
    pub ack_answers: Option<mpsc::UnboundedReceiver<crate::store::acks::Answer>>,
    /// Answers from the event journal's thread (`app.timeline`), when there is one.
    pub timeline_answers: Option<mpsc::UnboundedReceiver<crate::store::timeline::Answer>>,
}

fn wall_now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// Runs a background plugin and sends back its output (the last 200 lines, sanitised on screen).
async fn run_background(run: app::PluginRun, tx: mpsc::UnboundedSender<Vec<(String, bool)>>) {
    let out = tokio::process::Command::new(&run.program)
        .args(&run.args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await;
    let lines = match out {
        Ok(o) => {
            let mut v: Vec<(String, bool)> =
                vec![(format!("plugin {}: {}", run.name, o.status), !o.status.success())];
            let text =
                format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            let all: Vec<&str> = text.lines().collect();
            v.extend(all[all.len().saturating_sub(200)..].iter().map(|l| (l.to_string(), false)));
            v
        }
        Err(e) => vec![(format!("plugin {}: {}: {e}", run.name, run.program), true)],
    };
    let _ = tx.send(lines);
}

/// The terminal event that is already waiting, if any (`None` when reading it would wait). Polled
/// with the task's own waker, so the stream's wake-up thread stays registered for the next key.
async fn ready_event(events: &mut EventStream) -> Option<Option<io::Result<Event>>> {
    std::future::poll_fn(|cx| match events.poll_next_unpin(cx) {
        std::task::Poll::Ready(ev) => std::task::Poll::Ready(Some(ev)),
        std::task::Poll::Pending => std::task::Poll::Ready(None),
    })
    .await
}

/// Handles a message and carries out the effects it returns (the console's only I/O besides
/// the terminal: [`app::Effect`]); whether to redraw.
fn carry(app: &mut App, msg: Msg) -> bool {
    let (redraw, fx) = app.step(msg);
    app.carry(fx);
    redraw
}

/// The most queued updates applied as one batch (one derivation) before keys are read again.
const UPDATE_BATCH_MAX: usize = 64;

/// Runs the console until the user quits, the terminal goes away or a signal arrives.
pub async fn run(
    mut app: App,
    mut updates: mpsc::Receiver<Update>,
    mut op_events: mpsc::UnboundedReceiver<crate::ops::OpEvent>,
    mut opts: RunOpts,
) -> color_eyre::Result<Exit> {
    let started = Instant::now();
    let _guard = Guard;
    enter_terminal()?;
    let mut term = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    let mut events = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut hup = signal(SignalKind::hangup())?;
    let mut term_sig = signal(SignalKind::terminate())?;
    let mut int_sig = signal(SignalKind::interrupt())?;
    let mut dirty = true;
    let mut frames = 0u64;
    // Closed channels are no longer polled (a closed receiver answers at once, forever).
    let (mut updates_open, mut ops_open) = (true, true);
    // Background plugins report their output here.
    let (plugin_tx, mut plugin_rx) = mpsc::unbounded_channel::<Vec<(String, bool)>>();
    let mut seen_jobs = false;
    // In a fleet, the clusters whose nodes have been on a frame (each logged once, so a large
    // source delaying a small one shows in the log).
    let mut clusters_drawn: Vec<crate::model::Text> = Vec::new();
    let mut ledger_answers = opts.ledger_answers.take();
    let mut ledger_open = ledger_answers.is_some();
    let mut ack_answers = opts.ack_answers.take();
    let mut acks_open = ack_answers.is_some();
    let mut timeline_answers = opts.timeline_answers.take();
    let mut timeline_open = timeline_answers.is_some();
    app.acks_tick();
    app.flush();
    // Key-to-frame latency: from a key's arrival to the end of the frame that shows its effect
    // (summarised in the log at exit; benchmarks read it there).
    let mut key_at: Option<Instant> = None;
    let mut key_ms: Vec<f64> = Vec::new();
    let exit = loop {
        if app.ui.quit {
            break Exit::Quit;
        }
        app.wall_now = app.clock(wall_now());
        if let Some(run) = app.pending_plugin.take() {
            if run.background {
                let tx = plugin_tx.clone();
                tokio::spawn(run_background(run, tx));
                app.op_panel = vec![("plugin running…".into(), false)];
            } else {
                // Foreground: hand the terminal over, take it back after. (The event stream stays:
                // it is not polled while the plugin runs.)
                restore_terminal();
                let status = std::process::Command::new(&run.program).args(&run.args).status();
                enter_terminal()?;
                term = Terminal::new(CrosstermBackend::new(io::stdout()))?;
                app.ui.message = Some(match status {
                    Ok(s) if s.success() => (format!("plugin {} finished", run.name), false),
                    Ok(s) => (format!("plugin {} exited with {s}", run.name), true),
                    Err(e) => (format!("plugin {}: {}: {e}", run.name, run.program), true),
                });
            }
            dirty = true;
        }
        if dirty {
            // A failed write means the terminal is gone: exit instead of living on.
            if let Err(e) = term.draw(|f| {
                let now = app.clock(wall_now());
                draw::draw(f, &mut app, now)
            }) {
                tracing::warn!("terminal write failed, exiting: {e}");
                break Exit::HungUp;
            }
            app.publish_focus();
            // Frames count once there is data to show: nodes (a usable first screen); the first
            // frame with jobs is logged too (the complete Jobs view).
            if !app.state().nodes.is_empty() {
                frames += 1;
                if frames == 1 {
                    tracing::info!(ms = started.elapsed().as_millis() as u64, "first frame with data");
                }
            }
            let st = app.state();
            if st.is_fleet() && clusters_drawn.len() < st.clusters().len() {
                for c in st.clusters() {
                    if !clusters_drawn.contains(c) && st.nodes.iter().any(|n| n.cluster == *c) {
                        tracing::info!(
                            ms = started.elapsed().as_millis() as u64,
                            cluster = %crate::sanitize::sanitize(c),
                            "first frame with the cluster's nodes"
                        );
                        clusters_drawn.push(c.clone());
                    }
                }
            }
            if !seen_jobs && !app.state().jobs.is_empty() {
                seen_jobs = true;
                tracing::info!(
                    ms = started.elapsed().as_millis() as u64,
                    jobs = app.state().jobs.len(),
                    "first frame with jobs"
                );
            }
            if let Some(k) = key_at.take() {
                key_ms.push(k.elapsed().as_secs_f64() * 1000.0);
            }
            dirty = false;
            if opts.exit_after_frames.is_some_and(|n| frames >= n) {
                break Exit::FramesDone;
            }
        }
        tokio::select! {
            ev = events.next() => {
                // Every key already typed is applied before the next frame: when the terminal
                // is slow, or keys come faster than frames, the intermediate frames are never
                // drawn, so output never queues up behind input.
                let mut next = ev;
                let gone = loop {
                    match next {
                        Some(Ok(Event::Key(k))) if is_suspend(&k) => {
                            suspend()?;
                            // The terminal may have been resized or scribbled on meanwhile: a
                            // new terminal (empty previous buffer) redraws every cell.
                            term = Terminal::new(CrosstermBackend::new(io::stdout()))?;
                            dirty = true;
                        }
                        Some(Ok(Event::Key(k))) => {
                            key_at.get_or_insert_with(Instant::now);
                            dirty |= carry(&mut app, Msg::Key(k));
                            app.ledger_tick();
                            app.flush();
                        }
                        Some(Ok(Event::Resize(..))) => dirty |= carry(&mut app, Msg::Resize),
                        Some(Ok(_)) => {}
                        Some(Err(e)) => {
                            tracing::warn!("terminal read failed, exiting: {e}");
                            break true;
                        }
                        None => break true,
                    }
                    // A quit or a foreground plugin is acted on before any later key.
                    if app.ui.quit || app.pending_plugin.is_some() {
                        break false;
                    }
                    match ready_event(&mut events).await {
                        Some(ev) => next = ev,
                        None => break false,
                    }
                };
                if gone {
                    break Exit::HungUp;
                }
            }
            u = updates.recv(), if updates_open => match u {
                Some(u) => {
                    // The recorder dates the batch when it is applied.
                    app.wall_now = app.clock(wall_now());
                    // Apply whatever else is queued with it, deriving once, before drawing
                    // once (a fleet's clusters tick together). Bounded, so keys are read
                    // between batches however fast sources send.
                    let mut batch = vec![u];
                    while batch.len() < UPDATE_BATCH_MAX
                        && let Ok(u) = updates.try_recv()
                    {
                        batch.push(u);
                    }
                    dirty |= carry(&mut app, Msg::Updates(batch));
                    // What changed goes to the event journal, off this task.
                    journal::tick(&mut app);
                    app.flush();
                }
                // Every backend is gone: keep showing the last data, keep reading keys.
                None => updates_open = false,
            },
            out = plugin_rx.recv() => {
                if let Some(lines) = out {
                    app.op_panel = lines;
                    dirty = true;
                }
            }
            ev = op_events.recv(), if ops_open => match ev {
                Some(ev) => dirty |= carry(&mut app, Msg::Op(ev)),
                None => ops_open = false,
            },
            a = async {
                match ledger_answers.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            }, if ledger_open => match a {
                Some(a) => dirty |= carry(&mut app, Msg::Ledger(a)),
                None => ledger_open = false,
            },
            a = async {
                match ack_answers.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            }, if acks_open => match a {
                Some(a) => dirty |= carry(&mut app, Msg::Acks(a)),
                None => acks_open = false,
            },
            a = async {
                match timeline_answers.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            }, if timeline_open => match a {
                Some(a) => dirty |= carry(&mut app, Msg::Timeline(a)),
                None => timeline_open = false,
            },
            _ = tick.tick() => {
                // The ledger records once a minute of source time, off this task.
                app.ledger_tick();
                // Freed heap handed back once a large update has settled.
                app.memory_tick();
                // Acks made in other consoles on this data dir, read off this task.
                app.acks_tick();
                // The Timeline's window, read again (events other consoles recorded).
                journal::tick(&mut app);
                // What the ticks asked of the stores' threads.
                app.flush();
                // Only real sources, pause and break-glass have ages that move on the screen.
                if !app.state().is_simulated() || app.ui.paused || app.break_glass.is_some() {
                    app.wall_now = wall_now();
                    dirty |= carry(&mut app, Msg::Tick);
                }
            }
            _ = hup.recv() => break Exit::HungUp,
            _ = term_sig.recv() => break Exit::Terminated,
            _ = int_sig.recv() => break Exit::Terminated,
        }
    };
    drop(term);
    restore_terminal();
    // The last look goes to the ledger, and what is queued is written before the console goes
    // (joined on the blocking pool, not on this task).
    if let Some(mut l) = app.ledger.take() {
        for t in &mut l.trackers {
            if let Some(o) = t.observe(&app.live) {
                l.writer.send(crate::store::ledger::Request::Record(Box::new(o)));
            }
        }
        let _ = tokio::task::spawn_blocking(move || l.writer.finish()).await;
    }
    // The event journal writes what was seen last before the console goes.
    if let Some(w) = journal::finish(&mut app) {
        let _ = tokio::task::spawn_blocking(move || w.finish()).await;
    }
    // The flight recorder writes what it was handed, then says what it cost.
    if let Some(r) = app.recording.take() {
        let encode_ms = r.encode_ms;
        let st = tokio::task::spawn_blocking(move || {
            r.recorder.flush();
            r.recorder.status()
        })
        .await
        .unwrap_or_default();
        tracing::info!(
            frames = st.frames,
            bytes = st.bytes,
            raw_bytes = st.raw_bytes,
            dropped = st.dropped,
            encode_ms = format!("{encode_ms:.0}"),
            error = st.error.as_deref().unwrap_or(""),
            "recorder"
        );
    }
    if !key_ms.is_empty() {
        key_ms.sort_by(f64::total_cmp);
        let q = |p: f64| key_ms[((key_ms.len() - 1) as f64 * p).round() as usize];
        tracing::info!(
            keys = key_ms.len(),
            p50_ms = format!("{:.1}", q(0.5)),
            p99_ms = format!("{:.1}", q(0.99)),
            max_ms = format!("{:.1}", q(1.0)),
            "key to frame"
        );
    }
    Ok(exit)
}
