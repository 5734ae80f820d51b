use gpuplane::backend::sim::{self, SimConfig};
use gpuplane::cli::Cli;
use gpuplane::config::Config;
use gpuplane::executors;
use gpuplane::state::ClusterState;
use gpuplane::tui::app::App;
use gpuplane::tui::keymap::Keymap;
use gpuplane::tui::theme::Theme;
use gpuplane::tui::views::ViewId;
use gpuplane::tui::widgets::Glyphs;
use gpuplane::tui::{self, Exit, RunOpts};
use std::io::IsTerminal;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

fn main() -> ExitCode {
    // At most two malloc arenas, set before any thread starts: with one per thread (runtime
    // workers, the blocking pool, the store writers) memory one thread freed stayed in its arena.
    // Measured (docs/performance.md, Memory): 10,000 simulated nodes 329 -> 319 MB RSS, the
    // Kubernetes source at 5,000 nodes 201 -> 195 MB.
    // And a fixed mmap threshold (glibc's default, 128 KiB): left dynamic, glibc raises it to
    // 32 MB after the first large free, and from then on the large temporaries of each tick (a
    // snapshot's lists, a look's records) come from the heap and leave it fragmented. Measured
    // on the fleet (Kubernetes 5,000 nodes + 10,000 simulated): 374 -> 343 MB at 40 s.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; no thread has started yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = gpuplane::cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            tui::restore_terminal();
            eprintln!("gpuplane: {e:?}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to a file under the XDG state directory, never to the terminal.
fn init_logging(config: &Config) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let dir = config.state_dir.clone()?;
    std::fs::create_dir_all(&dir).ok()?;
    let file = tracing_appender::rolling::never(&dir, "gpuplane.log");
    // Room for 8,192 lines waiting for the writer thread: the default (128,000) is allocated up
    // front, 4.1 MB of every console's memory (heaptrack), for a log of a few lines a minute.
    let (writer, guard) =
        tracing_appender::non_blocking::NonBlockingBuilder::default().buffered_lines_limit(8192).finish(file);
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("GPUPLANE_LOG").unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_writer(writer).with_ansi(false).with_env_filter(filter).try_init().ok()?;
    Some(guard)
}

fn run(cli: Cli) -> color_eyre::Result<ExitCode> {
    tui::install_hooks()?;
    let (config, mut warnings) = Config::load(&cli);
    let _log = init_logging(&config);
    // Every time shown is in this zone, named; what is stored stays UTC.
    gpuplane::clock::set_zone(gpuplane::clock::local_or_utc(config.utc));
    if let Some(gpuplane::cli::Command::Replay(a)) = &cli.command {
        return replay(a, &config, warnings);
    }
    if let Some(cmd) = &cli.command {
        // doctor reports the configuration's warnings as checks.
        if !matches!(cmd, gpuplane::cli::Command::Doctor { .. }) {
            for w in &warnings {
                eprintln!("gpuplane: warning: {w}");
            }
        }
        return Ok(gpuplane::commands::run(cmd, &config, &warnings, &gpuplane::console_facts()));
    }
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        color_eyre::eyre::bail!("gpuplane is an interactive console and needs a terminal (stdin and stdout)");
    }
    let (theme, err) = Theme::load(&config.theme, config.config_dir.as_deref(), config.no_color);
    warnings.extend(err.map(|e| e.to_string()));
    let (keymap, err) = Keymap::load(&config.keymap, config.config_dir.as_deref());
    warnings.extend(err.map(|e| e.to_string()));
    let (playbooks, err) = gpuplane::playbook::Playbooks::load(config.config_dir.as_deref());
    warnings.extend(err.map(|e| format!("{e} (using the built-in playbooks)")));
    for w in &warnings {
        tracing::warn!("{w}");
    }
    let mut state = ClusterState::new(config.prices.clone(), config.thresholds.clone());
    // One point of the cluster-wide history per refresh interval, however many sources send.
    state.history_step_s = config.refresh.as_secs().max(1) as i64;
    state.playbooks = std::sync::Arc::new(playbooks);
    // One host, two schedulers: the nodes of a Slurm and a Kubernetes cluster that are one host.
    state.host_pairs = config.shared_hosts.clone();
    // Each cluster's names for teams and people, for the roll-ups across the fleet.
    state.directory = config.directory();
    let mut app = App::new(state, keymap, theme, Glyphs::detect(config.ascii), config.user.clone());
    app.config_dir = config.config_dir.clone();
    // The flight recorder: what the state applies, as it applies it (gpuplane replay).
    if let Some(rc) = &config.recorder {
        match gpuplane::record::writer::Recorder::start(rc.ring.clone()) {
            Ok(r) => {
                let every = rc.keyframe_every.as_millis() as i64;
                app.recording = Some(gpuplane::tui::app::Recording::new(r, every));
            }
            Err(e) => warnings.push(format!(
                "the flight recorder is off: {}: {e} ([recorder] dir, or --no-record)",
                rc.ring.dir.display()
            )),
        }
    }
    // `:doctor`: the checks of `gpuplane doctor` (the config's warnings among them).
    app.doctor = Some(gpuplane::commands::doctor::console_runner(
        config.clone(),
        warnings.clone(),
        std::time::Duration::from_secs(10),
    ));
    let (user_commands, errs) =
        gpuplane::tui::usercmd::UserCommands::load(config.config_dir.as_deref(), &app.keymap);
    app.user_commands = user_commands;
    warnings.extend(errs.into_iter().map(|e| e.to_string()));
    let (plugins, errs) = gpuplane::tui::plugins::load(config.config_dir.as_deref(), config.readonly);
    app.plugins = plugins;
    warnings.extend(errs.into_iter().map(|e| e.to_string()));
    if let Some(v) = &config.view {
        app.run_command(v);
        if ViewId::by_name(v).is_none() {
            warnings.push(format!("unknown view {v:?}"));
        }
    }
    if let Some(w) = warnings.first() {
        let more = if warnings.len() > 1 {
            format!(" (+{} more in the log)", warnings.len() - 1)
        } else {
            String::new()
        };
        app.ui.message = Some((format!("{w}{more}"), true));
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let exit = rt.block_on(async {
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        // The job-summary task's way to the state's channel (see the ledger below).
        let tx_summaries =
            (config.prometheus.is_some() && config.clusters.is_empty() && config.ledger_dir.is_some())
                .then(|| tx.clone());
        let cancel = CancellationToken::new();
        // The audit log and its witnesses, probed for the Sources view (nothing written or sent).
        tokio::spawn(gpuplane::store::status::watch_audit(
            gpuplane::commands::audit_log(&config),
            tx.clone(),
            cancel.clone(),
        ));
        let (ops_tx, ops_rx) = tokio::sync::mpsc::unbounded_channel();
        let (ev_tx, ev_rx) = tokio::sync::mpsc::unbounded_channel();
        app.readonly = config.readonly;
        app.efficiency = config.efficiency.clone();
        app.break_glass_limits = (config.break_glass_default_min, config.break_glass_max_min);
        app.limits = config.limits.clone();
        // Acceptance runs the console launches are followed, judged and recorded by the ops task.
        let acceptance = Some(gpuplane::ops::AcceptanceSetup::new(
            gpuplane::commands::acceptance::store(&config),
            config.acceptance.judge.clone(),
        ));
        let ops = |cluster: String| gpuplane::ops::Ops {
            audit: gpuplane::commands::audit_log(&config),
            readonly: config.readonly || config.clusters.iter().any(|c| c.name == cluster && c.readonly),
            cluster,
            break_glass: None,
        };
        // A fleet: each cluster's sources run as their own tasks, their updates wrapped in
        // the cluster's name on the way to the one state. Each cluster has its own executor
        // and ops task (audited under its name); actions route to the cluster of each target.
        let fleet = !config.clusters.is_empty();
        let mut keep_alive = Vec::new();
        for c in &config.clusters {
            let one = config.for_cluster(c);
            let (ctx, mut crx) = tokio::sync::mpsc::channel(64);
            let (name, out) = (gpuplane::model::Text::from(c.name.as_str()), tx.clone());
            tokio::spawn(async move {
                while let Some(u) = crx.recv().await {
                    let u = gpuplane::model::protocol::Update::Cluster {
                        cluster: name.clone(),
                        update: Box::new(u),
                    };
                    if out.send(u).await.is_err() {
                        break;
                    }
                }
            });
            let (alive, exec) = spawn_cluster(&one, ctx, &cancel, &mut app);
            keep_alive.push(alive);
            match exec {
                Ok(Some(exec)) => {
                    let (otx, orx) = tokio::sync::mpsc::unbounded_channel();
                    // Its acceptance runs are followed to their result by its own ops task,
                    // recorded with the cluster's name.
                    let acc = acceptance.as_ref().map(|a| a.in_cluster(&c.name));
                    let planner = gpuplane::ops::start(ops(c.name.clone()), exec, orx, ev_tx.clone(), acc);
                    app.routes.insert(
                        c.name.as_str().into(),
                        gpuplane::ops::fleet::Route { planner, readonly: one.readonly, tx: Some(otx) },
                    );
                }
                Ok(None) => {}
                Err(e) => tracing::warn!("cluster {}: actions unavailable: {e}", c.name),
            }
        }
        // Prometheus telemetry; alone, it discovers the nodes; with a scheduler it joins its nodes.
        if let Some(mut p) = config.prometheus.clone().filter(|_| !fleet) {
            p.discover_nodes = config.slurm.is_none() && config.kube.is_none();
            // Without an Alertmanager, Prometheus's own alerts are the Alerts view's (read-only).
            p.alerts = config.alertmanager.is_none();
            // The detail pane's last hour is range-queried for what it shows, nothing else.
            let (focus_tx, focus_rx) = tokio::sync::watch::channel(None);
            app.focus_tx = Some(focus_tx);
            tokio::spawn(gpuplane::backend::prom::run_with_focus(
                p,
                tx.clone(),
                cancel.clone(),
                Some(focus_rx),
            ));
        }
        // Alertmanager: alerts and silences, beside whatever else is configured.
        if let Some(am) = config.alertmanager.clone().filter(|_| !fleet) {
            // Silences made in the Alerts view go to the same Alertmanager, through the ops task.
            app.alertmanager = Some(am.clone());
            tokio::spawn(gpuplane::backend::alertmanager::run(am, tx.clone(), cancel.clone()));
        }
        // This host's GPUs through NVML: asked for with --local, or joined to a configured
        // cluster when NVML loads (silently nothing on hosts without the driver).
        let cluster_configured =
            config.slurm.is_some() || config.prometheus.is_some() || config.kube.is_some();
        if !fleet && (cli.local || cluster_configured) {
            let nvml = gpuplane::backend::nvml::NvmlConfig {
                explicit: cli.local,
                join: cluster_configured,
                ..Default::default()
            };
            tokio::spawn(gpuplane::backend::nvml::run(nvml, tx.clone(), cancel.clone()));
        }
        match config.slurm.clone() {
            // The fleet's clusters are running already.
            _ if fleet => drop((tx, ops_rx, ev_tx)),
            // A Kubernetes context: watched, and written through the same connection.
            None if config.kube.is_some() => {
                let kube_cfg = config.kube.clone().unwrap_or_default();
                let shared = gpuplane::backend::kube::Shared::default();
                let (ctx_tx, ctx_rx) = tokio::sync::mpsc::unbounded_channel();
                let names = gpuplane::backend::kube::contexts(&kube_cfg);
                let initial = kube_cfg.context.clone();
                app.readonly = config.readonly
                    || initial.as_ref().is_some_and(|c| kube_cfg.readonly_contexts.contains(c));
                app.kube_ctx = Some(gpuplane::tui::app::KubeContexts {
                    tx: ctx_tx,
                    names,
                    readonly: kube_cfg.readonly_contexts.clone(),
                    readonly_all: config.readonly,
                });
                // One executor, owned by the ops task; the console plans with its planner (both
                // read the connection and permissions the watch loop keeps in `shared`). Writes
                // reach the console through the watches: no refresh needed.
                let label = format!("kube:{}", initial.as_deref().unwrap_or("current-context"));
                match executors::build(&config, executors::Reach::Kube(shared.clone())) {
                    Ok(built) => {
                        app.audit_cluster = Some(label.clone());
                        app.planner =
                            Some(gpuplane::ops::start(ops(label), built.exec, ops_rx, ev_tx, acceptance));
                        app.ops_tx = Some(ops_tx);
                    }
                    Err(e) => {
                        tracing::warn!("actions unavailable: {e}");
                        drop((ops_rx, ev_tx));
                    }
                }
                tokio::spawn(gpuplane::backend::kube::run(kube_cfg, shared, tx, ctx_rx, cancel.clone()));
            }
            // A configured Slurm cluster replaces the simulator.
            Some(slurm_cfg) => {
                let refresh_now = std::sync::Arc::new(tokio::sync::Notify::new());
                app.refresh_now.push(refresh_now.clone());
                // Actions go to slurmrestd through the ops task (drain, resume, cancel, and
                // acceptance jobs submitted with the configured template): one executor, which
                // wakes the poller after each write; the console plans with its planner.
                match executors::build(
                    &config,
                    executors::Reach::Slurm { refresh: Some(refresh_now.clone()) },
                ) {
                    Ok(built) => {
                        // The permission preflight: asked at start and every 5 minutes; the
                        // planner refuses what the identity may not do before a plan is shown.
                        if let Some(p) = built.preflight {
                            tokio::spawn(p.watch(std::time::Duration::from_secs(300)));
                        }
                        app.audit_cluster = Some(slurm_cfg.client.url.clone());
                        app.planner = Some(gpuplane::ops::start(
                            ops(slurm_cfg.client.url.clone()),
                            built.exec,
                            ops_rx,
                            ev_tx,
                            acceptance,
                        ));
                        app.ops_tx = Some(ops_tx);
                    }
                    Err(e) => {
                        tracing::warn!("actions unavailable: {e}");
                        drop((ops_rx, ev_tx));
                    }
                }
                tokio::spawn(gpuplane::backend::slurm::run(slurm_cfg, tx, refresh_now, cancel.clone()));
            }
            // Prometheus alone (a DCGM-only fleet): no scheduler, so no actions.
            None if config.prometheus.is_some() || cli.local => drop((tx, ops_rx, ev_tx)),
            None => {
                // Actions: one executor, owned by the ops task, sending them to the simulator
                // task (which ticks at once after each); the console plans with its planner.
                let (sim_ops_tx, sim_ops_rx) = gpuplane::ops::sim_ops_channel();
                let exec = executors::build(&config, executors::Reach::SimTask(sim_ops_tx))
                    .map_err(color_eyre::eyre::Report::msg)?
                    .exec;
                let cluster = format!("sim-{}x{}", config.sim_nodes, config.sim_gpus);
                app.audit_cluster = Some(cluster.clone());
                app.planner = Some(gpuplane::ops::start(ops(cluster), exec, ops_rx, ev_tx, acceptance));
                app.ops_tx = Some(ops_tx);
                let sim_cfg = SimConfig {
                    seed: config.seed,
                    nodes: config.sim_nodes,
                    gpus_per_node: config.sim_gpus,
                    jobs: config.sim_jobs,
                    start: jiff::Timestamp::now().as_second(),
                    tick_s: config.refresh.as_secs().max(1) as i64,
                };
                tokio::spawn(sim::run_with_ops(
                    sim_cfg,
                    tx,
                    config.refresh,
                    cancel.clone(),
                    Some(sim_ops_rx),
                ));
            }
        }
        // The usage ledger: its own thread writes and answers; the console only hands it records.
        let mut ledger_answers = None;
        if let Some(dir) = config.ledger_dir.clone() {
            let (ltx, lrx) = tokio::sync::mpsc::unbounded_channel();
            let retention = i64::from(config.ledger_retention_days) * 86_400;
            // With Prometheus, each ended job's efficiency summary is kept too: the ledger says
            // which job wants one, the Prometheus backend's task measures it, and the console
            // hands the answer back to the ledger (one road; no query on the ledger's thread).
            // Not in a fleet: each cluster's jobs would need that cluster's Prometheus.
            let prom = config.prometheus.clone().zip(tx_summaries);
            let summarise = prom.map(|(p, utx)| {
                let (ftx, frx) = tokio::sync::mpsc::channel(16);
                tokio::spawn(gpuplane::backend::prom::figures::serve(p, frx, utx, cancel.clone()));
                app.summaries = Some(gpuplane::tui::summaries::Summaries::new(ftx));
                gpuplane::cost::summary::SUMMARY_MAX_AGE_S
            });
            match gpuplane::store::ledger::Writer::spawn_with(
                dir,
                retention,
                move |a| {
                    let _ = ltx.send(a);
                },
                summarise,
            ) {
                Ok(w) => {
                    app.ledger = Some(gpuplane::tui::app::LedgerLink::new(w));
                    ledger_answers = Some(lrx);
                }
                Err(e) => tracing::warn!("ledger thread: {e}"),
            }
        }
        // The ack store beside the audit log: its own thread reads and writes it.
        let mut ack_answers = None;
        {
            let (atx, arx) = tokio::sync::mpsc::unbounded_channel();
            match gpuplane::store::acks::Worker::spawn(
                gpuplane::commands::ack_store_path(&config),
                move |a| {
                    let _ = atx.send(a);
                },
            ) {
                Ok(w) => {
                    app.acks = Some(gpuplane::tui::app::AckLink::new(w));
                    ack_answers = Some(arx);
                }
                Err(e) => tracing::warn!("ack store thread: {e}"),
            }
        }
        // The event journal beside the ack store: its own thread writes and reads it.
        let mut timeline_answers = None;
        if config.timeline_enabled {
            let (ttx, trx) = tokio::sync::mpsc::unbounded_channel();
            match gpuplane::store::timeline::Writer::spawn(
                gpuplane::commands::timeline_path(&config),
                config.timeline_retention,
                move |a| {
                    let _ = ttx.send(a);
                },
            ) {
                Ok(w) => {
                    app.timeline = Some(gpuplane::tui::journal::TimelineLink::new(w));
                    timeline_answers = Some(trx);
                }
                Err(e) => tracing::warn!("event journal thread: {e}"),
            }
        }
        let exit = tui::run(
            app,
            rx,
            ev_rx,
            RunOpts {
                exit_after_frames: config.exit_after_frames,
                ledger_answers,
                ack_answers,
                timeline_answers,
            },
        )
        .await;
        cancel.cancel();
        drop(keep_alive);
        // The console is gone: its ops task ends an open break-glass session on the record and
        // signs the head before the runtime stops.
        gpuplane::ops::finish(std::time::Duration::from_secs(3)).await;
        exit
    })?;
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(match exit {
        Exit::Quit | Exit::FramesDone => ExitCode::SUCCESS,
        Exit::HungUp => ExitCode::from(129),
        Exit::Terminated => ExitCode::from(143),
    })
}

/// `gpuplane replay`: the console on a recording, read-only, nothing started but the terminal.
fn replay(
    a: &gpuplane::cli::ReplayArgs,
    config: &Config,
    mut warnings: Vec<String>,
) -> color_eyre::Result<ExitCode> {
    let Some(path) = a.path.clone().or_else(|| config.recorder.as_ref().map(|r| r.ring.dir.clone())) else {
        eprintln!("gpuplane: replay: give a recording (a rec-*.gprec file or its directory)");
        return Ok(ExitCode::from(2));
    };
    let tape = match gpuplane::replay::Tape::open(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("gpuplane: replay: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let Some((first, last)) = tape.span() else {
        eprintln!("gpuplane: replay: {}: the recording holds no frame", path.display());
        return Ok(ExitCode::from(2));
    };
    let at_ms = match a.at.as_deref().map(|s| gpuplane::clock::parse_instant(s, last.div_euclid(1000))) {
        None => first,
        Some(Ok(t)) => t.saturating_mul(1000),
        Some(Err(e)) => {
            eprintln!("gpuplane: replay: --at {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let cursor = match tape.at(at_ms) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gpuplane: replay: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        color_eyre::eyre::bail!(
            "gpuplane replay is an interactive console and needs a terminal (stdin and stdout)"
        );
    }
    warnings.extend(tape.notes.iter().cloned());
    let (theme, err) = Theme::load(&config.theme, config.config_dir.as_deref(), config.no_color);
    warnings.extend(err.map(|e| e.to_string()));
    let (keymap, err) = Keymap::load(&config.keymap, config.config_dir.as_deref());
    warnings.extend(err.map(|e| e.to_string()));
    let replay = gpuplane::tui::app::Replay::new(std::sync::Arc::new(tape), &cursor);
    let mut app = App::new(cursor.state, keymap, theme, Glyphs::detect(config.ascii), config.user.clone());
    app.config_dir = config.config_dir.clone();
    app.readonly = true;
    app.replay = Some(replay);
    if let Some(v) = &config.view {
        app.run_command(v);
    }
    if let Some(w) = warnings.first() {
        app.ui.message = Some((w.clone(), true));
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let exit = rt.block_on(async {
        // No source and no ops task: the tape is the only thing that changes the state.
        let (_tx, rx) = tokio::sync::mpsc::channel(1);
        let (_ev_tx, ev_rx) = tokio::sync::mpsc::unbounded_channel();
        let opts = RunOpts {
            exit_after_frames: config.exit_after_frames,
            ledger_answers: None,
            ack_answers: None,
            timeline_answers: None,
        };
        tui::run(app, rx, ev_rx, opts).await
    })?;
    Ok(match exit {
        Exit::Quit | Exit::FramesDone => ExitCode::SUCCESS,
        Exit::HungUp => ExitCode::from(129),
        Exit::Terminated => ExitCode::from(143),
    })
}

type ContextTx = Option<tokio::sync::mpsc::UnboundedSender<String>>;
type ClusterExec = Result<Option<Box<dyn gpuplane::ops::Executor>>, String>;

/// Starts one fleet cluster's sources (its single-cluster configuration), sending on `tx`.
/// Returns what must live as long as the console (a Kubernetes watch's context channel), and
/// the cluster's one executor, sharing what its scheduler source learns (none for a cluster
/// of telemetry only).
fn spawn_cluster(
    c: &Config,
    tx: tokio::sync::mpsc::Sender<gpuplane::model::protocol::Update>,
    cancel: &CancellationToken,
    app: &mut App,
) -> (ContextTx, ClusterExec) {
    if let Some(mut p) = c.prometheus.clone() {
        p.discover_nodes = c.slurm.is_none() && c.kube.is_none();
        p.alerts = c.alertmanager.is_none();
        tokio::spawn(gpuplane::backend::prom::run_with_focus(p, tx.clone(), cancel.clone(), None));
    }
    if let Some(am) = c.alertmanager.clone() {
        tokio::spawn(gpuplane::backend::alertmanager::run(am, tx.clone(), cancel.clone()));
    }
    if let Some(slurm) = c.slurm.clone() {
        let refresh_now = std::sync::Arc::new(tokio::sync::Notify::new());
        app.refresh_now.push(refresh_now.clone());
        // As for one Slurm cluster: its token, its break-glass token, its preflight.
        let exec =
            executors::build(c, executors::Reach::Slurm { refresh: Some(refresh_now.clone()) }).map(|b| {
                if let Some(p) = b.preflight {
                    tokio::spawn(p.watch(std::time::Duration::from_secs(300)));
                }
                Some(b.exec)
            });
        tokio::spawn(gpuplane::backend::slurm::run(slurm, tx, refresh_now, cancel.clone()));
        return (None, exec);
    }
    if let Some(k) = c.kube.clone() {
        let (ctx_tx, ctx_rx) = tokio::sync::mpsc::unbounded_channel();
        let shared = gpuplane::backend::kube::Shared::default();
        let exec = executors::build(c, executors::Reach::Kube(shared.clone())).map(|b| Some(b.exec));
        tokio::spawn(gpuplane::backend::kube::run(k, shared, tx, ctx_rx, cancel.clone()));
        return (Some(ctx_tx), exec);
    }
    if c.prometheus.is_none() {
        let sim_cfg = SimConfig {
            seed: c.seed,
            nodes: c.sim_nodes,
            gpus_per_node: c.sim_gpus,
            jobs: c.sim_jobs,
            start: jiff::Timestamp::now().as_second(),
            tick_s: c.refresh.as_secs().max(1) as i64,
        };
        let (sim_ops_tx, sim_ops_rx) = gpuplane::ops::sim_ops_channel();
        tokio::spawn(sim::run_with_ops(sim_cfg, tx, c.refresh, cancel.clone(), Some(sim_ops_rx)));
        let exec = executors::build(c, executors::Reach::SimTask(sim_ops_tx)).map(|b| Some(b.exec));
        return (None, exec);
    }
    (None, Ok(None))
}
