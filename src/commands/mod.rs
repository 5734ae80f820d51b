//! Subcommands: actions for runbooks and scripts, through the same ops road and audit log as
//! the console, and the audit log's verify/tail.

pub mod acceptance;
pub mod complete;
pub mod doctor;
pub mod get;
pub mod machine;
pub mod man;
pub mod report;
pub mod silence;
pub mod timeline;

use crate::audit::{AuditLog, Record, VerifyOptions, verify_full};
use crate::backend::sim::{Sim, SimConfig};
use crate::cli::{ActionArgs, AuditCommand, Command};
use crate::config::Config;
use crate::ops::{self, ActionKind, Executor, OpRequest, Ops};
use crate::state::ClusterState;
use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

/// The audit log in use: `--audit-log`, else the XDG data dir; witnessed and checkpointed as
/// `[audit]` says (syslog by default).
pub fn audit_log(config: &Config) -> AuditLog {
    AuditLog::new(config.audit_log.clone().unwrap_or_else(|| {
        AuditLog::default_path().unwrap_or_else(|| std::path::PathBuf::from("gpuplane-audit.jsonl"))
    }))
    .with_witness(config.audit_witness.clone())
    .with_checkpoint_every(config.audit_checkpoint_every)
}

/// The ack store: beside the audit log, in the same data dir (consoles that share one share
/// both).
pub fn ack_store_path(config: &Config) -> std::path::PathBuf {
    let log = config.audit_log.clone().unwrap_or_else(|| {
        AuditLog::default_path().unwrap_or_else(|| std::path::PathBuf::from("gpuplane-audit.jsonl"))
    });
    let dir = log.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    crate::store::acks::path_in(&dir)
}

/// The event journal's file: `[timeline] path`, else `timeline.sqlite` beside the ack store
/// (the audit log's directory).
pub fn timeline_path(config: &Config) -> std::path::PathBuf {
    config.timeline_path.clone().unwrap_or_else(|| {
        let acks = ack_store_path(config);
        crate::store::timeline::path_in(acks.parent().unwrap_or(std::path::Path::new("")))
    })
}

/// The acks and audited node actions the incidents' lifecycle comes from, read once (for
/// `get`); a store or log that cannot be read leaves its part empty, with a warning.
/// `label` is the cluster name the ops road records for this cluster in the audit log.
pub fn load_handling(
    config: &Config,
    cluster: &str,
    label: &str,
    now: crate::model::Epoch,
) -> crate::model::Handling {
    let mut h = crate::model::Handling::default();
    match audit_log(config).tail(crate::ops::AUDIT_VIEW_RECORDS) {
        Ok(records) => h.actions = crate::state::actions_from_audit(&records, &[cluster, label]),
        Err(e) => eprintln!("gpuplane: audit log: {e}; mitigations are read from the scheduler only"),
    }
    let path = ack_store_path(config);
    if path.exists() {
        match crate::store::acks::AckStore::open(&path)
            .and_then(|s| s.load(cluster, now - crate::store::acks::KEEP_S))
        {
            Ok(acks) => h.acks = acks,
            Err(e) => eprintln!("gpuplane: {e}; acks are not shown"),
        }
    }
    h
}

/// What the console tells the command line about itself: the names `completions` offers and
/// the keys `man` documents. The binary fills it in from the console
/// ([`crate::console_facts`]); the commands never import the console.
#[derive(Debug, Clone, Default)]
pub struct ConsoleFacts {
    /// The views' canonical names (`nodes`).
    pub views: Vec<String>,
    /// The built-in themes' and keymaps' names.
    pub themes: Vec<String>,
    pub keymaps: Vec<String>,
    /// The default keymap's bindings, in the help screen's order: group, keys, what it does.
    pub keys: Vec<(String, String, String)>,
}

/// Runs a subcommand, with the configuration's warnings (a bad field in the config file),
/// which `doctor` reports as checks.
pub fn run(cmd: &Command, config: &Config, warnings: &[String], console: &ConsoleFacts) -> ExitCode {
    match cmd {
        Command::Doctor { output, timeout } => doctor::run(*output, *timeout, config, warnings),
        Command::Cordon(a) => action(ActionKind::Cordon, a, config),
        Command::Uncordon(a) => action(ActionKind::Uncordon, a, config),
        Command::Drain(a) => action(ActionKind::Drain, a, config),
        Command::Resume(a) => action(ActionKind::Resume, a, config),
        Command::Cancel(a) => action(ActionKind::Cancel, a, config),
        Command::Audit { command } => audit(command, config),
        Command::Acceptance { command } => acceptance::run(command, config),
        Command::Get { resource, output, filter, fail_on, window, team, strict } => get::run(
            resource,
            *output,
            filter,
            *fail_on,
            &get::CostArgs { window: window.clone(), team: team.clone() },
            config,
            *strict,
        ),
        Command::Silence { command } => silence::run(command, config),
        Command::Report { command } => report::run(command, config),
        Command::Timeline(a) => timeline::run(a, config),
        // The console on a recording: the binary opens it (it needs the terminal).
        Command::Replay(_) => {
            eprintln!("gpuplane: replay opens the console: run it in a terminal");
            ExitCode::from(2)
        }
        Command::Completions { shell, list } => complete::run(*shell, *list, config, console),
        Command::Man { page, dir } => man::run(page, dir.as_deref(), console),
    }
}

fn audit(cmd: &AuditCommand, config: &Config) -> ExitCode {
    let log = audit_log(config);
    match cmd {
        AuditCommand::Verify { file, witness, pubkey } => {
            audit_verify(file.clone().unwrap_or(log.path), witness, pubkey.as_deref())
        }
        AuditCommand::Pubkey => match log.public_key() {
            Ok(k) => {
                println!("{k}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("gpuplane: {e}");
                ExitCode::from(2)
            }
        },
        AuditCommand::Checkpoint => match log.checkpoint() {
            Ok(Some(r)) => {
                println!("{}: checkpoint {} signed", log.path.display(), r.seq);
                ExitCode::SUCCESS
            }
            Ok(None) => {
                println!(
                    "{}: nothing to sign (empty, or already ends with a checkpoint)",
                    log.path.display()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("gpuplane: {e}");
                ExitCode::from(2)
            }
        },
        AuditCommand::Tail { n, json } => match log.tail(*n) {
            Ok(recs) => {
                let lines = recs.into_iter().map(|r| {
                    if *json { serde_json::to_string(&r).unwrap_or_default() } else { tail_line(r) }
                });
                write_lines(lines)
            }
            Err(e) => {
                eprintln!("gpuplane: {e}");
                ExitCode::from(2)
            }
        },
    }
}

/// Prints lines to stdout; a reader that stops early (`| head -1`) ends the command quietly
/// and successfully, as with any Unix tool, instead of a panic on the closed pipe.
fn write_lines(mut lines: impl Iterator<Item = String>) -> ExitCode {
    let mut out = std::io::stdout().lock();
    let r = lines.try_for_each(|l| writeln!(out, "{l}")).and_then(|_| out.flush());
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gpuplane: stdout: {e}");
            ExitCode::from(1)
        }
    }
}

/// One record as `audit tail` prints it; a record written under break-glass carries the tag
/// `[BREAK-GLASS <session>]`.
fn tail_line(r: Record) -> String {
    let bg = r.break_glass.as_deref().filter(|s| !s.is_empty());
    format!(
        "{} #{} {:<7} {:<8} {} by {}@{}{}{}{} {}",
        r.ts,
        r.seq,
        format!("{:?}", r.phase).to_lowercase(),
        r.action,
        r.targets.join(","),
        r.os_user,
        r.host,
        bg.map(|s| format!(" [BREAK-GLASS {}]", s.get(..8).unwrap_or(s))).unwrap_or_default(),
        r.reason.map(|x| format!(" reason={x:?}")).unwrap_or_default(),
        r.ticket.map(|x| format!(" ticket={x}")).unwrap_or_default(),
        r.result.map(|x| format!("-> {x}")).unwrap_or_default(),
    )
}

/// `gpuplane audit verify`: exit 0 when intact (warnings aside), 1 when tampered or torn, 2
/// when it cannot be read.
fn audit_verify(path: std::path::PathBuf, witness: &[std::path::PathBuf], pubkey: Option<&str>) -> ExitCode {
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("gpuplane: {e}");
        ExitCode::from(2)
    };
    let pubkey = match pubkey.map(crate::audit::sign::parse_public).transpose() {
        Ok(k) => k,
        Err(e) => return fail(&e),
    };
    let journal = crate::audit::witness::journal_path(&path);
    let (journal_heads, more) = match (
        crate::audit::witness::read_heads(std::slice::from_ref(&journal)),
        crate::audit::witness::read_heads(witness),
    ) {
        (Ok(j), Ok(m)) => (j, m),
        (Err(e), _) | (_, Err(e)) => return fail(&format!("cannot read the witness: {e}")),
    };
    let heads: Vec<_> = journal_heads.iter().cloned().chain(more).collect();
    // Without a key given, the checkpoints are checked with the key beside the log, if any.
    let pubkey = pubkey.or_else(|| {
        crate::audit::sign::load(&crate::audit::sign::key_path(&path)).ok().map(|k| k.verifying_key())
    });
    let opts = VerifyOptions { heads, pubkey, now: jiff::Timestamp::now().as_second() };
    let r = match verify_full(&path, &opts) {
        Ok(r) => r,
        Err(e) => return fail(&format!("cannot read {}: {e}", path.display())),
    };
    let p = path.display();
    match (&r.problem, r.incomplete_write) {
        (Some(problem), _) => {
            println!("{p}: TAMPERED: {problem} ({} records verified before it)", r.records)
        }
        (None, Some(line)) => println!(
            "{p}: incomplete write: line {line} is a partial record (a crash while appending; the witness never saw it whole); {} records before it verified",
            r.records
        ),
        (None, None) => println!("{p}: {} records, chain intact", r.records),
    }
    match r.witness.last {
        Some(last) => println!("  witness: {} heads read, up to record {last}", r.witness.heads),
        None => println!(
            "  witness: no heads found for this log: records removed from its end cannot be detected (pass --witness FILE)"
        ),
    }
    match r.signed {
        Some((n, Some(through))) => println!("  signed: {n} checkpoints verify, up to record {through}"),
        Some((_, None)) | None if opts.pubkey.is_some() && r.problem.is_none() => {
            println!("  signed: no checkpoint verified")
        }
        _ => {}
    }
    for w in &r.warnings {
        println!("  warning: {w}");
    }
    // The journal beside the file witnessed another log at this path: replaced, or rotated.
    if let Some(id) = &r.log
        && let Some(other) = journal_heads.iter().filter(|h| &h.log != id).max_by_key(|h| h.seq)
    {
        println!(
            "  warning: {} also witnessed another log here (log={}, up to record {}): was this log replaced or rotated?",
            journal.display(),
            other.log,
            other.seq
        );
    }
    if r.intact() { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// Joins one Prometheus refresh into `state` (discovering the nodes when no scheduler listed
/// them). An unreachable or failing Prometheus is an error.
async fn prom_once(config: &Config, state: &mut ClusterState) -> Result<(), String> {
    let Some(p) = &config.prometheus else { return Ok(()) };
    let mut p = p.clone();
    p.discover_nodes = state.nodes.is_empty();
    // Without an Alertmanager, the alerts are Prometheus's own (read-only).
    p.alerts = config.alertmanager.is_none();
    let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(crate::backend::prom::run(p, tx, cancel.clone()));
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    let result = loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(u)) => {
                let status = match &u {
                    crate::model::protocol::Update::Status(s) => Some((s.ok_at.is_some(), s.error.clone())),
                    _ => None,
                };
                state.apply(u);
                match status {
                    // The first status after a live refresh carries its time.
                    Some((true, None)) => break Ok(()),
                    Some((_, Some(e))) => break Err(e),
                    _ => {}
                }
            }
            Ok(None) => break Err("prometheus: the backend stopped".into()),
            Err(_) => break Err("prometheus: no answer within 60 s".into()),
        }
    };
    cancel.cancel();
    let _ = task.await;
    result
}

/// Reads Alertmanager's alerts and silences once into `state` (when configured). An
/// unreachable Alertmanager is an error: a check that cannot see the alerts must not pass.
async fn am_once(config: &Config, state: &mut ClusterState) -> Result<(), String> {
    let Some(am) = &config.alertmanager else { return Ok(()) };
    let client = crate::backend::alertmanager::AmClient::new(am).map_err(|e| format!("alertmanager: {e}"))?;
    let snap =
        crate::backend::alertmanager::snapshot(&client).await.map_err(|e| format!("alertmanager: {e}"))?;
    let at = snap.at;
    state.apply(crate::model::protocol::Update::Status(crate::model::protocol::SourceStatus {
        cluster: Default::default(),
        name: crate::backend::alertmanager::SOURCE.into(),
        simulated: false,
        ok_at: Some(at),
        error: None,
        detail: client.version().await.map(Into::into),
    }));
    state.apply(crate::model::protocol::Update::Alerts(Box::new(snap)));
    Ok(())
}

/// Watches the Kubernetes context until every kind has listed once, applies that to `state`,
/// and keeps the connection (and its permission answers) for the executor.
async fn kube_once(
    k: &crate::backend::kube::KubeConfig,
    state: &mut ClusterState,
) -> Result<crate::backend::kube::Shared, String> {
    use crate::model::protocol::Update;
    let shared = crate::backend::kube::Shared::default();
    let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
    let (_ctx_tx, ctx_rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(crate::backend::kube::run(k.clone(), shared.clone(), tx, ctx_rx, cancel.clone()));
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    let result = loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(u)) => {
                let complete = matches!(&u, Update::Inventory { inventory, .. }
                    if inventory.jobs.is_some() && inventory.queues.is_some() && inventory.quotas.is_some());
                let failed = match &u {
                    Update::Status(s) if shared.connection().is_none() => s.error.clone(),
                    _ => None,
                };
                state.apply(u);
                if complete {
                    break Ok(());
                }
                if let Some(e) = failed {
                    break Err(format!("kubernetes: {e}"));
                }
            }
            Ok(None) => break Err("kubernetes: the backend stopped".into()),
            Err(_) => break Err("kubernetes: the cluster did not list within 60 s".into()),
        }
    };
    cancel.cancel();
    let _ = task.await;
    result.map(|_| shared)
}

/// The cluster a command acts on: the configured Slurm cluster (read once; Prometheus telemetry
/// joined when configured), Prometheus alone (no executor: it cannot act), else a freshly
/// generated simulated cluster.
pub(crate) async fn target_cluster(
    config: &Config,
) -> Result<(ClusterState, Option<Box<dyn Executor>>, String), String> {
    if !config.clusters.is_empty() {
        return Ok((fleet_state(config).await?, None, "the fleet".into()));
    }
    let (mut state, exec, label) = cluster_only(config).await?;
    am_once(config, &mut state).await?;
    Ok((state, exec, label))
}

/// Every selected cluster read once, side by side (each as [`target_cluster`] reads one),
/// merged into one state where each object carries its cluster: what the console shows with
/// the same clusters. Fails when any cluster cannot be read, naming it.
async fn fleet_state(config: &Config) -> Result<ClusterState, String> {
    match fleet_read_all(config, None).await {
        (s, _, failed) if failed.is_empty() => Ok(s),
        (_, _, failed) => {
            Err(failed.iter().map(|(name, e)| format!("cluster {name}: {e}")).collect::<Vec<_>>().join("; "))
        }
    }
}

/// [`fleet_state`] that keeps going past a cluster that cannot be read: the others' objects,
/// and each failed cluster with why (for `get`, which prints what it could read).
pub(crate) async fn fleet_state_partial(config: &Config) -> (ClusterState, Vec<(String, String)>) {
    let (s, _, failed) = fleet_read_all(config, None).await;
    (s, failed)
}

/// Each fleet cluster's executor (as [`target_cluster`] builds one for a single cluster), by
/// cluster name.
pub(crate) type FleetExecs = std::collections::BTreeMap<crate::model::Text, Box<dyn Executor>>;

/// The clusters a fleet action on `targets` must read: the ones its `cluster/name` targets
/// name, with the Kubernetes (or Slurm) cluster sharing hosts with one of them where `pick`
/// acts there (`[[shared_hosts]]`); `None` (every cluster) when a target is a bare name, whose
/// cluster is found by looking in all.
pub(crate) fn clusters_named(
    config: &Config,
    targets: &[String],
    pick: ops::fleet::Pick,
) -> Option<Vec<String>> {
    use crate::state::Scheduler;
    let mut named: Vec<String> = Vec::new();
    for t in targets {
        let (Some(c), _) = ops::fleet::split(t.trim()) else { return None };
        if !named.iter().any(|n| n == c) {
            named.push(c.to_string());
        }
    }
    for p in &config.shared_hosts {
        for (from, to, side) in
            [(&p.slurm, &p.kube, Scheduler::Kubernetes), (&p.kube, &p.slurm, Scheduler::Slurm)]
        {
            if named.contains(from) && !named.contains(to) && pick.takes(side) {
                named.push(to.clone());
            }
        }
    }
    Some(named)
}

/// Every cluster (or those of `only`) read side by side; the ones that could not be read,
/// with why.
async fn fleet_read_all(
    config: &Config,
    only: Option<&[String]>,
) -> (ClusterState, FleetExecs, Vec<(String, String)>) {
    use crate::model::protocol::{Inventory, Update};
    let chosen = config.clusters.iter().filter(|c| only.is_none_or(|o| o.contains(&c.name)));
    let reads = chosen.map(|c| async move {
        let one = config.for_cluster(c);
        let r = async {
            let (mut s, exec, _) = cluster_only(&one).await?;
            am_once(&one, &mut s).await?;
            Ok::<_, String>((s, exec))
        };
        (c.name.clone(), r.await)
    });
    let mut fleet = ClusterState::new(config.prices.clone(), config.thresholds.clone());
    let mut execs = FleetExecs::new();
    let mut failed = Vec::new();
    fleet.host_pairs = config.shared_hosts.clone();
    fleet.directory = config.directory();
    for (name, read) in futures::future::join_all(reads).await {
        let (s, exec) = match read {
            Ok(r) => r,
            Err(e) => {
                failed.push((name, e));
                continue;
            }
        };
        if let Some(e) = exec {
            execs.insert(name.as_str().into(), e);
        }
        let wrap = |u| Update::Cluster { cluster: name.as_str().into(), update: Box::new(u) };
        for st in s.sources.iter().cloned() {
            fleet.apply(wrap(Update::Status(st)));
        }
        fleet.apply(wrap(Update::Inventory {
            at: s.now,
            inventory: Box::new(Inventory {
                source: s.sources.first().map(|x| x.name.clone()).unwrap_or_default(),
                cluster: None,
                nodes: Some(s.nodes),
                jobs: Some(s.jobs),
                queues: Some(s.queues),
                quotas: Some(s.quotas),
                storage: Some(s.storage),
            }),
        }));
    }
    (fleet, execs, failed)
}

/// [`target_cluster`] without the alerts.
async fn cluster_only(config: &Config) -> Result<(ClusterState, Option<Box<dyn Executor>>, String), String> {
    let mut state = ClusterState::new(config.prices.clone(), config.thresholds.clone());
    let (playbooks, err) = crate::playbook::Playbooks::load(config.config_dir.as_deref());
    if let Some(e) = err {
        eprintln!("gpuplane: {e} (using the built-in playbooks)");
    }
    state.playbooks = std::sync::Arc::new(playbooks);
    if let Some(slurm) = &config.slurm {
        let mut poller = crate::backend::slurm::Poller::new(slurm.clone()).map_err(|e| e.to_string())?;
        let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
        let r = poller.refresh(&tx).await;
        drop(tx);
        while let Some(u) = rx.recv().await {
            state.apply(u);
        }
        r.map_err(|e| e.to_string())?;
        prom_once(config, &mut state).await?;
        let built = crate::executors::build(config, crate::executors::Reach::Slurm { refresh: None })?;
        // The permission preflight; when it cannot answer, the server decides.
        if let Some(p) = &built.preflight
            && let Err(e) = p.check().await
        {
            tracing::warn!("slurm permission preflight: {e}");
        }
        let label = format!("{} (Slurm, {})", state.cluster, slurm.client.url);
        return Ok((state, Some(built.exec), label));
    }
    if let Some(k) = &config.kube {
        let shared = kube_once(k, &mut state).await?;
        prom_once(config, &mut state).await?;
        let built = crate::executors::build(config, crate::executors::Reach::Kube(shared))?;
        let label = format!("{} (Kubernetes)", state.cluster);
        return Ok((state, Some(built.exec), label));
    }
    if config.prometheus.is_some() {
        prom_once(config, &mut state).await?;
        return Ok((state, None, "Prometheus (telemetry only)".into()));
    }
    if config.local {
        let node = local_node().await?;
        let label = format!("{} (local NVML)", node.name);
        state.apply(crate::model::protocol::Update::Inventory {
            at: jiff::Timestamp::now().as_second(),
            inventory: Box::new(crate::model::protocol::Inventory {
                source: crate::backend::nvml::SOURCE.into(),
                nodes: Some(vec![node]),
                ..Default::default()
            }),
        });
        // Alone, NVML sees one host and no scheduler: nothing to act through.
        return Ok((state, None, label));
    }
    // GPUPLANE_SIM_START pins the simulated clock (reproducible output for tests and docs).
    let start = std::env::var("GPUPLANE_SIM_START")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| jiff::Timestamp::now().as_second());
    let sim = Sim::new(SimConfig {
        seed: config.seed,
        nodes: config.sim_nodes,
        gpus_per_node: config.sim_gpus,
        jobs: config.sim_jobs,
        start,
        tick_s: 2,
    });
    for u in sim.initial() {
        state.apply(u);
    }
    let label = format!("{} (SIMULATED)", state.cluster);
    let built = crate::executors::build(config, crate::executors::Reach::SimHere(Box::new(sim)))?;
    Ok((state, Some(built.exec), label))
}

/// This host's GPUs, read once through NVML (`--local` with no cluster configured).
async fn local_node() -> Result<crate::model::Node, String> {
    let cfg = crate::backend::nvml::NvmlConfig { explicit: true, ..Default::default() };
    let read = tokio::task::spawn_blocking(move || {
        crate::backend::nvml::Reader::open(&cfg).map(|mut r| crate::backend::nvml::node_of(&r.read()))
    });
    match read.await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(e) => Err(format!("nvml: the read failed: {e}")),
    }
}

/// A command's look at the usage ledger, over `[from, to]`: the look recorded first (so a
/// scheduler's accounting is kept), then the window read back. Each configured cluster has its
/// own ledger, the file the console writes for it; a look at several clusters records into and
/// reads each one's, so `get cost --all-clusters` sees what every console recorded.
pub fn ledger_windows(
    state: &ClusterState,
    dir: &std::path::Path,
    from: crate::model::Epoch,
    to: crate::model::Epoch,
) -> Result<Vec<(crate::model::Text, crate::store::ledger::WindowData)>, crate::store::LedgerError> {
    use crate::cost::track::Tracker;
    let trackers: Vec<Tracker> = match state.clusters() {
        [] | [_] => vec![Tracker::for_state(state)],
        many => many.iter().map(|c| Tracker::for_cluster(c.clone())).collect(),
    };
    let mut out = Vec::with_capacity(trackers.len());
    for mut t in trackers {
        let name = t.ledger_name(state);
        let mut l = crate::store::Ledger::open(&crate::store::ledger::path_for(dir, &name))?;
        if let Some(o) = t.observe(state) {
            l.record(&[o])?;
        }
        out.push((t.scope().clone(), l.window(from, to)?));
    }
    Ok(out)
}

/// gpuplane's own files for `get sources`: each opened and read once as the console would
/// (the ledger of each cluster, the ack store, the event journal), the audit log and its
/// witnesses probed (nothing written or sent).
pub fn store_statuses(config: &Config, state: &ClusterState) -> Vec<crate::model::protocol::StoreStatus> {
    use crate::store::status::{self, probe_read};
    let mut out = Vec::new();
    if let Some(dir) = &config.ledger_dir {
        let names: Vec<crate::model::Text> = match state.clusters() {
            [] | [_] => vec![crate::cost::track::Tracker::for_state(state).ledger_name(state)],
            many => many
                .iter()
                .map(|c| crate::cost::track::Tracker::for_cluster(c.clone()).ledger_name(state))
                .collect(),
        };
        for name in names {
            let p = crate::store::ledger::path_for(dir, &name);
            out.push(probe_read(status::LEDGER, &p, || {
                crate::store::Ledger::open(&p).and_then(|l| l.version())
            }));
        }
    }
    let p = ack_store_path(config);
    out.push(probe_read(status::ACKS, &p, || crate::store::acks::AckStore::open(&p)));
    if config.timeline_enabled {
        let p = timeline_path(config);
        out.push(probe_read(status::TIMELINE, &p, || {
            crate::store::timeline::Journal::open(&p).and_then(|j| j.count())
        }));
    }
    out.extend(status::probe_audit(&audit_log(config)));
    out
}

/// The cost report of [`ledger_windows`]' answer.
pub fn ledger_report(
    state: &ClusterState,
    from: crate::model::Epoch,
    to: crate::model::Epoch,
    windows: &[(crate::model::Text, crate::store::ledger::WindowData)],
) -> crate::cost::CostReport {
    match windows {
        [(_, w)] => crate::cost::report_range(state, from, to, w),
        _ => crate::cost::report_clusters_range(state, from, to, windows),
    }
}

/// Asks for the plan's confirmation word on a terminal, unless `--yes` or `--dry-run`.
pub(crate) fn confirm(plan: &ops::Plan, kind: ActionKind, yes: bool, dry_run: bool) -> Result<(), ExitCode> {
    if yes || dry_run {
        return Ok(());
    }
    let word = plan.confirm_word.clone().unwrap_or_else(|| "yes".into());
    if !std::io::stdin().is_terminal() {
        eprintln!("gpuplane: not a terminal: pass --yes to {} without confirmation", kind.label());
        return Err(ExitCode::from(2));
    }
    print!("type {word:?} to {}: ", kind.label());
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() || line.trim() != word {
        eprintln!("gpuplane: not confirmed; nothing was done");
        return Err(ExitCode::from(1));
    }
    Ok(())
}

/// A command-line action read, planned, shown and confirmed: what `action` and
/// `gpuplane acceptance run` share. `Err` carries the exit code (the reason is printed).
pub(crate) struct Prepared {
    pub rt: tokio::runtime::Runtime,
    pub state: ClusterState,
    pub exec: Box<dyn Executor>,
    pub req: OpRequest,
    pub plan: ops::Plan,
    /// This operator's open break-glass session from the audit log (started in a console),
    /// which the action runs under.
    pub break_glass: Option<crate::audit::BreakGlass>,
    /// Acting on a freshly generated simulated cluster: nothing it does persists.
    pub simulated: bool,
}

/// What every command-line action on the simulator says after its results.
pub const SIMULATED_NOTE: &str = "(simulated cluster; nothing persists)";

/// Says `e` on stderr as the command's error and gives the exit status `code`.
pub(crate) fn fail(e: &dyn std::fmt::Display, code: u8) -> ExitCode {
    eprintln!("gpuplane: {e}");
    ExitCode::from(code)
}

/// Refused before a cluster is read or a plan is shown: the audit log needs a reason.
fn needs_reason(req: &OpRequest) -> Result<(), ExitCode> {
    if req.reason.trim().is_empty() {
        return Err(fail(
            &format!("a reason is required to {} (--reason TEXT); nothing was planned", req.kind.label()),
            2,
        ));
    }
    Ok(())
}

pub(crate) fn prepare(config: &Config, req: OpRequest, yes: bool) -> Result<Prepared, ExitCode> {
    needs_reason(&req)?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| fail(&e, 1))?;
    let (state, exec, label) =
        rt.block_on(target_cluster(config)).map_err(|e| fail(&format!("cannot read the cluster: {e}"), 2))?;
    let Some(exec) = exec else {
        return Err(fail(
            &format!(
                "{label} has no scheduler to run {} through: configure one (--slurm, --kube)",
                req.kind.label()
            ),
            2,
        ));
    };
    // Blast radius: the limits, the drains of the last hour and this operator's break-glass
    // session, all from the audit log every console writes. The session is read first: under
    // it the plan is made (and the permission preflight judged) as the break-glass identity,
    // and the write goes out with its token.
    let limits = config.limits.for_cluster(&state.cluster);
    let records = match audit_log(config).tail(ops::guard::RATE_RECORDS) {
        Ok(r) => r,
        // Fail closed when the count of drains needs the log; otherwise the intent record,
        // which cannot be written either, refuses the action.
        Err(e) if ops::guard::takes_out(req.kind) && limits.has_rate() => {
            return Err(fail(&format!("cannot read the audit log to count the last hour's drains: {e}"), 2));
        }
        Err(_) => Vec::new(),
    };
    let now = jiff::Timestamp::now().as_second();
    let break_glass = open_break_glass(&records, now);
    // The command plans with the executor's planning side, then runs the plan through the
    // same executor: one per command, as one per console.
    let mut plan =
        ops::plan_as(&req, &state, exec.planner().as_ref(), config.readonly, break_glass.is_some())
            .map_err(|e| fail(&e, 2))?;
    let recent = ops::guard::drains_in_window(&records, &state.cluster, now);
    let guarded = ops::guard_plan(&mut plan, &state, &limits, &recent, break_glass.is_some());
    println!("cluster {label}");
    for l in plan.lines() {
        println!("  {l}");
    }
    if let Err(e) = guarded {
        return Err(fail(&e, 2));
    }
    if let Some(bg) = &break_glass {
        println!("  under break-glass session {} ({})", bg.session, bg.ticket);
    }
    confirm(&plan, req.kind, yes, req.dry_run)?;
    let simulated = state.is_simulated();
    Ok(Prepared { rt, state, exec, req, plan, break_glass, simulated })
}

impl Prepared {
    /// Runs the plan through the audited road, printing each target's result.
    pub fn run(&mut self, config: &Config) -> (Ops, Result<ops::Outcome, ops::OpError>) {
        let ops = Ops {
            audit: audit_log(config),
            readonly: config.readonly,
            cluster: self.state.cluster.to_string(),
            break_glass: self.break_glass.clone(),
        };
        let out = self.rt.block_on(ops.run(&self.req, &self.plan, self.exec.as_mut(), |t| {
            println!(
                "  {} {}: {}",
                if t.ok { "ok  " } else { "FAIL" },
                crate::sanitize::sanitize(&t.target),
                crate::sanitize::sanitize(&t.message)
            );
        }));
        if self.simulated {
            println!("{SIMULATED_NOTE}");
        }
        (ops, out)
    }
}

fn action(kind: ActionKind, a: &ActionArgs, config: &Config) -> ExitCode {
    if !config.clusters.is_empty() {
        return fleet_action(kind, a, config);
    }
    let req = OpRequest {
        kind,
        targets: a.targets.clone(),
        reason: a.reason.clone(),
        ticket: a.ticket.clone(),
        dry_run: a.dry_run,
    };
    let mut p = match prepare(config, req, a.yes) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (ops, out) = p.run(config);
    match out {
        Ok(o) => {
            if o.dry_run {
                println!("dry run: nothing was executed (recorded in {})", ops.audit.path.display());
            }

            if let Some(w) = o.audit_warning {
                eprintln!("gpuplane: {w}");
                return ExitCode::from(3);
            }
            if o.results.iter().all(|r| r.ok) { ExitCode::SUCCESS } else { ExitCode::from(1) }
        }
        Err(e) => {
            eprintln!("gpuplane: {e}");
            ExitCode::from(2)
        }
    }
}

/// This operator's open break-glass session in the audit records (started in a console), which
/// a command-line action runs under.
fn open_break_glass(records: &[Record], now: i64) -> Option<crate::audit::BreakGlass> {
    let me = crate::audit::os_user();
    crate::audit::open_sessions(records)
        .into_iter()
        .rev()
        .find(|o| o.os_user == me && o.until.is_some_and(|u| u > now))
        .map(|o| crate::audit::BreakGlass { ticket: o.ticket.unwrap_or_default(), session: o.session })
}

/// A fleet action read, planned, shown and confirmed: what a fleet's `action` and
/// `gpuplane acceptance run` share.
pub(crate) struct FleetPrepared {
    pub rt: tokio::runtime::Runtime,
    /// Each cluster read, with its executor.
    pub execs: FleetExecs,
    /// The clusters whose configuration makes them read-only.
    pub readonly: Vec<crate::model::Text>,
    pub parts: Vec<ops::fleet::Part>,
    pub break_glass: Option<crate::audit::BreakGlass>,
    pub simulated: bool,
}

/// One cluster's part of a fleet action, run: through which audit road, and its outcome.
pub(crate) struct PartRun {
    pub cluster: crate::model::Text,
    pub ops: Ops,
    pub out: Result<ops::Outcome, ops::OpError>,
}

/// Why a fleet action cannot go ahead when clusters it needs could not be read: a target named
/// in an unreadable cluster, a bare name that might also be in one, the other scheduler of a
/// paired host.
fn unreadable(targets: &[String], failed: &[(String, String)]) -> String {
    let mut why = Vec::new();
    for (c, e) in failed {
        let mut said = false;
        for t in targets.iter().map(|t| t.trim()) {
            match ops::fleet::split(t) {
                (None, name) => why.push(format!(
                    "cannot tell whether {name} also exists on {c} (unreachable: {e}); name it as CLUSTER/{name}"
                )),
                (Some(k), _) if k == c => why.push(format!("{t}: cluster {c} cannot be read: {e}")),
                _ => continue,
            }
            said = true;
        }
        if !said {
            why.push(format!(
                "cluster {c} shares hosts with a target's cluster and cannot be read ({e}): \
                 --sched names the one scheduler to act in"
            ));
        }
    }
    format!("{}; nothing was sent", why.join("; "))
}

/// Reads the clusters a fleet action needs (only those its targets name, see
/// [`clusters_named`]), plans it per cluster ([`ops::fleet::plan`]), shows the plan and asks
/// for its confirmation. Refused whole (nothing sent) when a needed cluster cannot be read or
/// any target is refused.
pub(crate) fn fleet_prepare(
    config: &Config,
    req: &OpRequest,
    pick: ops::fleet::Pick,
    yes: bool,
) -> Result<FleetPrepared, ExitCode> {
    needs_reason(req)?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| fail(&e, 1))?;
    let only = clusters_named(config, &req.targets, pick);
    // A cluster the fleet does not have: said before anything is read.
    let known: Vec<&str> = config.clusters.iter().map(|c| c.name.as_str()).collect();
    if let Some(bad) = only.iter().flatten().find(|c| !known.contains(&c.as_str())) {
        return Err(fail(
            &format!("no cluster {bad:?} in this fleet (clusters: {}); nothing was sent", known.join(", ")),
            2,
        ));
    }
    let (state, execs, failed) = rt.block_on(fleet_read_all(config, only.as_deref()));
    if !failed.is_empty() {
        return Err(fail(&unreadable(&req.targets, &failed), 2));
    }
    let readonly: Vec<crate::model::Text> =
        config.clusters.iter().filter(|c| c.readonly).map(|c| c.name.as_str().into()).collect();
    let routes: std::collections::BTreeMap<_, _> = execs
        .iter()
        .map(|(c, e)| {
            let route = ops::fleet::Route { planner: e.planner(), readonly: readonly.contains(c), tx: None };
            (c.clone(), route)
        })
        .collect();
    let records = match audit_log(config).tail(ops::guard::RATE_RECORDS) {
        Ok(r) => r,
        Err(e)
            if ops::guard::takes_out(req.kind)
                && config.clusters.iter().any(|c| config.limits.for_cluster(&c.name).has_rate()) =>
        {
            return Err(fail(&format!("cannot read the audit log to count the last hour's drains: {e}"), 2));
        }
        Err(_) => Vec::new(),
    };
    let now = jiff::Timestamp::now().as_second();
    let break_glass = open_break_glass(&records, now);
    let recent = |c: &str| ops::guard::drains_in_window(&records, c, now);
    let checks = ops::fleet::Checks {
        routes: &routes,
        limits: &config.limits,
        recent: &recent,
        elevated: break_glass.is_some(),
        pick,
    };
    let (plan, parts) = ops::fleet::plan(req, &state, &checks).map_err(|e| fail(&e, 2))?;
    // As for one cluster, a command runs all its targets or none: any refusal refuses it.
    if !plan.refused.is_empty() {
        let why: Vec<String> = plan.refused.iter().map(ops::Refused::message).collect();
        return Err(fail(&format!("{}; nothing was sent", why.join("; ")), 2));
    }
    let names: Vec<&str> = execs.keys().map(|c| c.as_str()).collect();
    println!("fleet {}", names.join(", "));
    for l in plan.lines() {
        println!("  {l}");
    }
    if let Some(bg) = &break_glass {
        println!("  under break-glass session {} ({})", bg.session, bg.ticket);
    }
    confirm(&plan, req.kind, yes, req.dry_run)?;
    let simulated = state.is_simulated();
    Ok(FleetPrepared { rt, execs, readonly, parts, break_glass, simulated })
}

impl FleetPrepared {
    /// Runs each cluster's part through that cluster's executor and audit road, all under one
    /// op id, printing each target's result as `cluster/target`. A part refused before it sent
    /// anything (its audit record could not be written, read-only, past a limit) stops the
    /// parts after it: they are reported as not sent.
    pub fn run(&mut self, config: &Config) -> Vec<PartRun> {
        let log = audit_log(config);
        let op_id = ops::new_op_id();
        let mut runs = Vec::new();
        let mut stopped: Option<String> = None;
        for p in &self.parts {
            if let Some(why) = &stopped {
                let e = ops::OpError::Target(format!("not sent: {why}"));
                runs.push(PartRun {
                    cluster: p.cluster.clone(),
                    ops: Ops {
                        audit: log.clone(),
                        readonly: true,
                        cluster: p.cluster.to_string(),
                        break_glass: None,
                    },
                    out: Err(e),
                });
                continue;
            }
            let Some(exec) = self.execs.get_mut(&p.cluster) else { continue };
            let ops = Ops {
                audit: log.clone(),
                readonly: config.readonly || self.readonly.contains(&p.cluster),
                cluster: p.cluster.to_string(),
                break_glass: self.break_glass.clone(),
            };
            let cluster = p.cluster.clone();
            let out =
                self.rt.block_on(ops.run_as(Some(op_id.clone()), &p.req, &p.plan, exec.as_mut(), |t| {
                    println!(
                        "  {} {}: {}",
                        if t.ok { "ok  " } else { "FAIL" },
                        crate::sanitize::sanitize(&ops::fleet::qualify(&cluster, &t.target)),
                        crate::sanitize::sanitize(&t.message)
                    );
                }));
            if let Err(e) = &out {
                stopped = Some(format!("{} refused the action ({e})", p.cluster));
            }
            runs.push(PartRun { cluster: p.cluster.clone(), ops, out });
        }
        if self.simulated {
            println!("{SIMULATED_NOTE}");
        }
        runs
    }
}

/// An action on a fleet (`[[cluster]]` entries, `--cluster`, `--sim-clusters`): targets are
/// `cluster/node` (or `cluster/jobid`), a bare name only where one cluster has it. Each
/// cluster's part is planned by its own executor's planner (its read-only flag, permission
/// preflight and blast-radius limits), shown grouped by cluster, and run through that
/// executor, audited under the cluster's name and the one op id of the action. A host in two
/// schedulers is acted on in those `--sched` picks. Exit codes as for one cluster; the worst of
/// the clusters' wins.
fn fleet_action(kind: ActionKind, a: &ActionArgs, config: &Config) -> ExitCode {
    let req = OpRequest {
        kind,
        targets: a.targets.clone(),
        reason: a.reason.clone(),
        ticket: a.ticket.clone(),
        dry_run: a.dry_run,
    };
    let mut p = match fleet_prepare(config, &req, a.sched, a.yes) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let mut worst = 0u8;
    for r in p.run(config) {
        let c = match r.out {
            Ok(o) if o.audit_warning.is_some() => {
                eprintln!("gpuplane: {}: {}", r.cluster, o.audit_warning.unwrap_or_default());
                3
            }
            Ok(o) if o.dry_run => {
                println!(
                    "{}: dry run: nothing was executed (recorded in {})",
                    r.cluster,
                    r.ops.audit.path.display()
                );
                0
            }
            Ok(o) => u8::from(!o.results.iter().all(|r| r.ok)),
            Err(e) => {
                eprintln!("gpuplane: {}: {e}", r.cluster);
                2
            }
        };
        worst = worst.max(c);
    }
    ExitCode::from(worst)
}
