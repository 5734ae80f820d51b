//! Configuration: built-in defaults < config file < environment < flags.

use crate::backend::slurm::{ApiVersion, ClientConfig, SlurmConfig, TokenSource};
use crate::cli::Cli;
use crate::datafile;
use crate::model::PriceCard;
use crate::state::Thresholds;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct SimSection {
    nodes: Option<usize>,
    gpus_per_node: Option<u8>,
    jobs: Option<usize>,
    seed: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct ThresholdSection {
    idle_util_pct: Option<u8>,
    idle_after: Option<String>,
    hot_temp_c: Option<u8>,
    storage_full_pct: Option<u8>,
    flap_count: Option<u32>,
}

/// `[slurm]`: a Slurm cluster through slurmrestd.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct SlurmSection {
    url: Option<String>,
    user: Option<String>,
    token_file: Option<PathBuf>,
    token_cmd: Option<String>,
    ca_file: Option<PathBuf>,
    refresh: Option<String>,
    /// Pin an API version (`v0.0.42`) instead of negotiating.
    version: Option<String>,
    /// Break-glass: the privileged token writes use while a session lasts (file or command).
    break_glass_token_file: Option<PathBuf>,
    break_glass_token_cmd: Option<String>,
    break_glass_user: Option<String>,
    /// The cluster's `SlurmUser` (privileged like root in the permission preflight).
    slurm_user: Option<String>,
    /// The largest answer read whole (`"256MiB"`), and the largest job list (streamed).
    max_body: Option<String>,
    max_job_list: Option<String>,
}

/// `[kube]`: a Kubernetes cluster through a kubeconfig context.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct KubeSection {
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
    namespace: Option<String>,
    /// Contexts where every write is refused.
    readonly_contexts: Vec<String>,
    team_label: Option<String>,
    pool_labels: Option<Vec<String>>,
    user_labels: Option<Vec<String>>,
    drain_timeout: Option<String>,
    drain_grace_seconds: Option<i64>,
    drain_delete_emptydir: Option<bool>,
    acceptance_namespace: Option<String>,
    break_glass_user: Option<String>,
    break_glass_groups: Vec<String>,
    /// The largest answer and the longest watch event (`"256MiB"`).
    max_body: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct BreakGlassSection {
    default_minutes: Option<i64>,
    max_minutes: Option<i64>,
}

/// `[audit]`: where the log's head is witnessed, and how often a checkpoint is signed.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct AuditSection {
    /// Send each head to syslog (default true).
    syslog: Option<bool>,
    /// The syslog datagram socket (default /dev/log).
    syslog_socket: Option<PathBuf>,
    /// A program run with each head on its stdin (argv, no shell).
    witness_command: Vec<String>,
    /// An HTTP(S) endpoint each head is POSTed to (a SIEM).
    witness_url: Option<String>,
    /// Seconds a witness command or POST may take (default 3).
    witness_timeout_seconds: Option<u64>,
    /// A signed checkpoint every N records (default 100; 0: only at a session's end).
    checkpoint_every: Option<u64>,
}

/// `[[cluster]]`: one cluster of a fleet, with any of its sources.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct ClusterSection {
    name: String,
    slurm: Option<SlurmSection>,
    kube: Option<KubeSection>,
    prometheus: Option<crate::backend::prom::PromSection>,
    alertmanager: Option<crate::backend::alertmanager::client::AmSection>,
    /// A simulated cluster (`[cluster.sim]`), when it has no other source.
    sim: Option<SimSection>,
    readonly: Option<bool>,
    /// This cluster's price card (else the top-level `[prices]`).
    prices: Option<PriceCard>,
    /// Slurm account or Kubernetes namespace → team.
    teams: std::collections::BTreeMap<String, String>,
    /// Slurm user or Kubernetes user (label) → person.
    people: std::collections::BTreeMap<String, String>,
}

/// The config file as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct FileConfig {
    theme: Option<String>,
    keymap: Option<String>,
    refresh: Option<String>,
    user: Option<String>,
    ascii: Option<bool>,
    /// Show times in UTC instead of the local zone.
    utc: Option<bool>,
    view: Option<String>,
    readonly: Option<bool>,
    audit_log: Option<PathBuf>,
    audit: AuditSection,
    break_glass: BreakGlassSection,
    sim: SimSection,
    prices: Option<PriceCard>,
    thresholds: ThresholdSection,
    slurm: SlurmSection,
    kube: Option<KubeSection>,
    prometheus: Option<crate::backend::prom::PromSection>,
    alertmanager: Option<crate::backend::alertmanager::client::AmSection>,
    acceptance: crate::acceptance::config::AcceptanceSection,
    ledger: LedgerSection,
    timeline: TimelineSection,
    recorder: RecorderSection,
    efficiency: crate::cost::eff::Rules,
    limits: crate::ops::guard::GuardConfig,
    /// `[[cluster]]` entries: the fleet (`--cluster a,b`, `--all-clusters`).
    cluster: Vec<ClusterSection>,
    /// `[[shared_hosts]]`: hosts that are nodes of a Slurm and of a Kubernetes cluster.
    shared_hosts: Vec<crate::state::HostPairing>,
}

/// `[ledger]`: the usage ledger (cost windows from what was recorded).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct LedgerSection {
    /// `false` turns the ledger off (cost windows then cover what the console holds).
    enabled: Option<bool>,
    /// Where the ledger files go (one per cluster); default `$XDG_DATA_HOME/gpuplane/ledger`.
    dir: Option<PathBuf>,
    /// Records older than this are forgotten (default 400 days; 0 keeps everything).
    retention_days: Option<u32>,
}

/// `[timeline]`: the event journal (what changed; the Timeline view, `gpuplane timeline`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct TimelineSection {
    /// `false` turns the journal off (the Timeline shows what this console saw).
    enabled: Option<bool>,
    /// The journal's file; default `timeline.sqlite` beside the audit log (the data dir).
    path: Option<PathBuf>,
    /// Events older than this are forgotten (default 30 days; 0: no limit by age).
    retention_days: Option<u32>,
    /// At most this many events are kept, the oldest go first (default 1,000,000; 0: no limit).
    max_events: Option<u64>,
}

/// `[recorder]`: the flight recorder (what the console saw, for `gpuplane replay`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RecorderSection {
    /// `false` turns it off (`--no-record` too).
    enabled: Option<bool>,
    /// Where the ring of segments goes; default `$XDG_STATE_HOME/gpuplane/recordings`.
    dir: Option<PathBuf>,
    /// The ring's size at most, in GB (default 2): the oldest segments go first.
    max_gb: Option<f64>,
    /// Hours kept at most (default 24).
    max_hours: Option<f64>,
    /// A keyframe (the whole state; replays seek from one) at least this often (default 10m).
    keyframe_every: Option<String>,
}

/// The flight recorder as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct RecorderConfig {
    pub ring: crate::record::writer::RingOpts,
    pub keyframe_every: Duration,
}

/// The recorder from `[recorder]`: on unless turned off, in the state dir unless told.
fn recorder(
    r: &RecorderSection,
    no_record: bool,
    state_dir: Option<&std::path::Path>,
    warnings: &mut Vec<String>,
) -> Option<RecorderConfig> {
    if no_record || r.enabled == Some(false) {
        return None;
    }
    let dir = r.dir.clone().or_else(|| state_dir.map(|d| d.join("recordings")))?;
    let gb = r.max_gb.filter(|g| g.is_finite() && *g > 0.0).unwrap_or(2.0);
    let mut ring = crate::record::writer::RingOpts::new(dir, (gb * 1e9) as u64);
    if let Some(h) = r.max_hours.filter(|h| h.is_finite() && *h > 0.0) {
        ring.max_age_s = (h * 3600.0) as i64;
    }
    let keyframe_every = match r.keyframe_every.as_deref().map(humantime::parse_duration) {
        None => Duration::from_secs(600),
        Some(Ok(d)) if d >= Duration::from_secs(10) => d,
        Some(_) => {
            warnings.push("[recorder] keyframe_every: a duration of 10s or more (10m, 1h); using 10m".into());
            Duration::from_secs(600)
        }
    };
    Some(RecorderConfig { ring, keyframe_every })
}

/// A simulated cluster's size and seed.
#[derive(Debug, Clone, PartialEq)]
pub struct SimSize {
    pub nodes: usize,
    pub gpus: u8,
    pub jobs: usize,
    pub seed: u64,
}

/// One cluster of the fleet, resolved: its name and the sources it has.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    pub name: String,
    pub slurm: Option<SlurmConfig>,
    /// The Slurm client configuration writes use during break-glass (a privileged token).
    pub slurm_break_glass: Option<ClientConfig>,
    pub kube: Option<crate::backend::kube::KubeConfig>,
    pub prometheus: Option<crate::backend::prom::PromConfig>,
    pub alertmanager: Option<crate::backend::alertmanager::AmConfig>,
    /// Simulated (`--sim-clusters`, `[cluster.sim]`, or a cluster with no source at all).
    pub sim: Option<SimSize>,
    /// Every write to this cluster is refused (or the whole console is read-only).
    pub readonly: bool,
    pub prices: PriceCard,
    /// Slurm account or Kubernetes namespace → team.
    pub teams: std::collections::BTreeMap<String, String>,
    /// Slurm user or Kubernetes user (label) → person.
    pub people: std::collections::BTreeMap<String, String>,
}

/// The resolved configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub theme: String,
    pub keymap: String,
    pub refresh: Duration,
    pub user: String,
    pub ascii: bool,
    /// Times in UTC (`--utc`, `utc = true`) instead of the local zone.
    pub utc: bool,
    pub view: Option<String>,
    pub sim_nodes: usize,
    pub sim_gpus: u8,
    pub sim_jobs: usize,
    pub seed: u64,
    pub prices: PriceCard,
    /// `[efficiency]`: the rules of per-job efficiency notes.
    pub efficiency: crate::cost::eff::Rules,
    pub thresholds: Thresholds,
    pub config_dir: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
    pub exit_after_frames: Option<u64>,
    pub no_color: bool,
    pub readonly: bool,
    pub audit_log: Option<PathBuf>,
    /// Where the audit log's heads are witnessed (`[audit]`).
    pub audit_witness: crate::audit::Witness,
    /// A signed checkpoint every N records (`[audit] checkpoint_every`).
    pub audit_checkpoint_every: u64,
    /// Set when a slurmrestd URL is configured: the Slurm backend replaces the simulator.
    pub slurm: Option<SlurmConfig>,
    /// The Slurm client configuration writes use during break-glass (a privileged token).
    pub slurm_break_glass: Option<ClientConfig>,
    /// Break-glass session length when none is given, and the longest allowed (minutes).
    pub break_glass_default_min: i64,
    pub break_glass_max_min: i64,
    /// `[prometheus]`, `--prometheus URL` or `PROMETHEUS_URL`.
    pub prometheus: Option<crate::backend::prom::PromConfig>,
    /// `[alertmanager]`, `--alertmanager URL` or `ALERTMANAGER_URL`.
    pub alertmanager: Option<crate::backend::alertmanager::AmConfig>,
    /// Set when Kubernetes is asked for (`--kube`, `--context`, `--kubeconfig`, `$KUBECONFIG`
    /// or `[kube]`) and no Slurm URL is configured.
    pub kube: Option<crate::backend::kube::KubeConfig>,
    /// `[acceptance]`: the NCCL test template, its run store and the judging thresholds.
    pub acceptance: crate::acceptance::AcceptanceConfig,
    /// `--local`: this host's GPUs through NVML (alone, instead of the simulator).
    pub local: bool,
    /// The usage ledger's directory (one file per cluster); `None` when it is off.
    pub ledger_dir: Option<PathBuf>,
    /// Days the ledger keeps (0: everything).
    pub ledger_retention_days: u32,
    /// The event journal's file (`[timeline] path`); `None`: beside the audit log. Off when
    /// `timeline_enabled` is false.
    pub timeline_path: Option<PathBuf>,
    pub timeline_enabled: bool,
    /// The flight recorder; `None` when it is off (or there is no state dir).
    pub recorder: Option<RecorderConfig>,
    /// How long the event journal keeps events (days, rows).
    pub timeline_retention: crate::store::timeline::Retention,
    /// Blast-radius limits (`[limits]`): nodes out of service, drains an hour, per cluster and
    /// pool.
    pub limits: crate::ops::guard::GuardConfig,
    /// The clusters opened together (`--cluster`, `--all-clusters`, `--sim-clusters`); empty:
    /// one cluster from the flags and the single-cluster sections, as before.
    pub clusters: Vec<ClusterConfig>,
    /// Every `[[cluster]]` name of the config (for completion and `--cluster` errors).
    pub cluster_names: Vec<String>,
    /// Hosts of a Slurm cluster that are nodes of a Kubernetes cluster (`[[shared_hosts]]`),
    /// for the clusters opened.
    pub shared_hosts: Vec<crate::state::HostPairing>,
}

fn dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("io", "gpuplane", "gpuplane")
}

impl Config {
    /// Resolves the configuration; problems with the file come back as warnings (file, line,
    /// field) and the defaults are used for what could not be read.
    pub fn load(cli: &Cli) -> (Config, Vec<String>) {
        let mut warnings = Vec::new();
        let pd = dirs();
        let config_dir = cli
            .config
            .as_ref()
            .and_then(|p| p.parent().map(|p| p.to_path_buf()))
            .or_else(|| pd.as_ref().map(|d| d.config_dir().to_path_buf()));
        let state_dir = pd.as_ref().map(|d| d.state_dir().unwrap_or(d.cache_dir()).to_path_buf());
        let path = cli.config.clone().or_else(|| pd.as_ref().map(|d| d.config_dir().join("config.toml")));
        let file: FileConfig = match &path {
            Some(p) if p.exists() => match std::fs::read_to_string(p) {
                Ok(text) => datafile::parse(&p.display().to_string(), &text).unwrap_or_else(|e| {
                    warnings.push(format!("config ignored: {e}"));
                    FileConfig::default()
                }),
                Err(e) => {
                    warnings.push(format!("config ignored: {}: {e}", p.display()));
                    FileConfig::default()
                }
            },
            Some(p) if cli.config.is_some() => {
                warnings.push(format!("config ignored: {}: no such file", p.display()));
                FileConfig::default()
            }
            _ => FileConfig::default(),
        };
        let refresh = cli
            .refresh
            .or_else(|| {
                let r = file.refresh.as_deref()?;
                humantime::parse_duration(r)
                    .map_err(|e| warnings.push(format!("config: refresh = {r:?}: {e}")))
                    .ok()
            })
            .unwrap_or(Duration::from_secs(2))
            .max(Duration::from_millis(100));
        let d = Thresholds::default();
        let th = &file.thresholds;
        let idle_after_s = th
            .idle_after
            .as_deref()
            .and_then(|v| {
                humantime::parse_duration(v)
                    .map_err(|e| warnings.push(format!("config: thresholds.idle_after = {v:?}: {e}")))
                    .ok()
            })
            // Longer than i64 seconds (`300000000000y`) is never; `as` would wrap it negative.
            .map_or(d.idle_after_s, |v| i64::try_from(v.as_secs()).unwrap_or(i64::MAX));
        let thresholds = Thresholds {
            idle_util_pct: th.idle_util_pct.unwrap_or(d.idle_util_pct),
            idle_after_s,
            hot_temp_c: th.hot_temp_c.unwrap_or(d.hot_temp_c),
            storage_full_pct: th.storage_full_pct.unwrap_or(d.storage_full_pct),
            flap_count: th.flap_count.unwrap_or(d.flap_count),
        };
        let user = cli
            .user
            .clone()
            .or(file.user)
            .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
            .or_else(|| std::env::var("LOGNAME").ok().filter(|u| !u.is_empty()))
            .or_else(os_user)
            .unwrap_or_else(|| "unknown".into());
        let env_jwt = std::env::var("SLURM_JWT").ok().filter(|t| !t.trim().is_empty());
        let slurm = slurm_config(cli, &file.slurm, env_jwt, &mut warnings);
        let bg_token = file
            .slurm
            .break_glass_token_cmd
            .clone()
            .map(TokenSource::Command)
            .or_else(|| file.slurm.break_glass_token_file.clone().map(TokenSource::File));
        let slurm_break_glass = slurm.as_ref().zip(bg_token).map(|(s, token)| ClientConfig {
            token,
            user: file.slurm.break_glass_user.clone().or_else(|| s.client.user.clone()),
            ..s.client.clone()
        });
        let bg_max = file.break_glass.max_minutes.unwrap_or(240).clamp(1, 24 * 60);
        let bg_default = file.break_glass.default_minutes.unwrap_or(30).clamp(1, bg_max);
        let prometheus = crate::backend::prom::PromConfig::resolve(
            cli.prometheus.as_deref(),
            file.prometheus.as_ref(),
            &mut warnings,
        );
        let alertmanager = crate::backend::alertmanager::AmConfig::resolve(
            cli.alertmanager.as_deref(),
            file.alertmanager.as_ref(),
            &mut warnings,
        );
        let kube = if slurm.is_some() { None } else { kube_config(cli, file.kube.as_ref(), &mut warnings) };
        let acceptance = crate::acceptance::AcceptanceConfig::resolve(&file.acceptance, &mut warnings);
        warnings.extend(file.limits.problems());
        let readonly = cli.readonly || file.readonly.unwrap_or(false);
        let prices = file.prices.clone().map(|p| price_card(p, &mut warnings)).unwrap_or_default();
        let sim_size = SimSize {
            nodes: cli.sim_nodes.or(file.sim.nodes).unwrap_or(16).max(1),
            gpus: cli.sim_gpus.or(file.sim.gpus_per_node).unwrap_or(8).clamp(1, 16),
            jobs: cli.sim_jobs.or(file.sim.jobs).unwrap_or(0),
            seed: cli.seed.or(file.sim.seed).unwrap_or(42),
        };
        let clusters = fleet(cli, &file.cluster, &sim_size, readonly, &prices, &mut warnings);
        let cluster_names = file.cluster.iter().map(|c| c.name.clone()).collect();
        let shared_hosts = shared_hosts(&file.shared_hosts, &file.cluster, &clusters, &mut warnings);
        let config = Config {
            theme: cli.theme.clone().or(file.theme).unwrap_or_else(|| "dark".into()),
            keymap: cli.keymap.clone().or(file.keymap).unwrap_or_else(|| "default".into()),
            refresh,
            user,
            ascii: cli.ascii || file.ascii.unwrap_or(false),
            utc: cli.utc || file.utc.unwrap_or(false),
            view: cli.view.clone().or(file.view),
            sim_nodes: cli.sim_nodes.or(file.sim.nodes).unwrap_or(16).max(1),
            sim_gpus: cli.sim_gpus.or(file.sim.gpus_per_node).unwrap_or(8).clamp(1, 16),
            sim_jobs: cli.sim_jobs.or(file.sim.jobs).unwrap_or(0),
            seed: cli.seed.or(file.sim.seed).unwrap_or(42),
            prices,
            efficiency: file.efficiency.clone(),
            thresholds,
            config_dir,
            state_dir: state_dir.clone(),
            exit_after_frames: cli.exit_after_frames,
            no_color: std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
            readonly,
            audit_log: cli.audit_log.clone().or(file.audit_log),
            audit_witness: crate::audit::Witness {
                journal: true,
                syslog: file.audit.syslog.unwrap_or(true).then(|| {
                    file.audit.syslog_socket.clone().unwrap_or_else(|| crate::audit::witness::DEV_LOG.into())
                }),
                command: file.audit.witness_command.clone(),
                url: file.audit.witness_url.clone(),
                timeout: Duration::from_secs(file.audit.witness_timeout_seconds.unwrap_or(3).max(1)),
            },
            audit_checkpoint_every: file.audit.checkpoint_every.unwrap_or(crate::audit::CHECKPOINT_EVERY),
            slurm,
            slurm_break_glass,
            break_glass_default_min: bg_default,
            break_glass_max_min: bg_max,
            prometheus,
            alertmanager,
            kube,
            acceptance,
            local: cli.local,
            ledger_dir: if file.ledger.enabled.unwrap_or(true) {
                file.ledger.dir.clone().or_else(|| pd.as_ref().map(|d| d.data_dir().join("ledger")))
            } else {
                None
            },
            ledger_retention_days: file.ledger.retention_days.unwrap_or(400),
            timeline_path: file.timeline.path.clone(),
            timeline_enabled: file.timeline.enabled.unwrap_or(true),
            recorder: recorder(&file.recorder, cli.no_record, state_dir.as_deref(), &mut warnings),
            timeline_retention: crate::store::timeline::Retention {
                days: file.timeline.retention_days.unwrap_or(crate::store::timeline::DEFAULT_RETENTION_DAYS),
                max_rows: file.timeline.max_events.unwrap_or(crate::store::timeline::DEFAULT_MAX_ROWS),
            },
            limits: file.limits,
            clusters,
            cluster_names,
            shared_hosts,
        };
        (config, warnings)
    }
}

/// The clusters opened together. `--sim-clusters N` makes N simulated clusters (sizes from
/// the full `--sim-nodes` down to five eighths of it, seeds counting up); `--cluster a,b` and
/// `--all-clusters` pick `[[cluster]]` entries; with neither, a config whose only sources are
/// `[[cluster]]` entries opens them all. Empty: a single cluster from the flags, as before.
fn fleet(
    cli: &Cli,
    sections: &[ClusterSection],
    sim: &SimSize,
    readonly: bool,
    prices: &PriceCard,
    warnings: &mut Vec<String>,
) -> Vec<ClusterConfig> {
    if let Some(n) = cli.sim_clusters.filter(|&n| n > 0) {
        return (0..n)
            .map(|i| ClusterConfig {
                name: format!("sim-{}", i + 1),
                sim: Some(SimSize {
                    nodes: (sim.nodes * (8 - i % 4) / 8).max(1),
                    seed: sim.seed.wrapping_add(i as u64),
                    ..sim.clone()
                }),
                ..ClusterConfig::empty(readonly, prices)
            })
            .collect();
    }
    let mut seen = std::collections::HashSet::new();
    for c in sections {
        if c.name.trim().is_empty() || c.name.contains(['/', ',']) || !seen.insert(c.name.as_str()) {
            warnings.push(format!(
                "config: [[cluster]] name = {:?}: each cluster needs its own name, without '/' or ','",
                c.name
            ));
        }
    }
    let chosen: Vec<&ClusterSection> = if cli.all_clusters {
        sections.iter().collect()
    } else if !cli.clusters.is_empty() {
        for want in &cli.clusters {
            if !sections.iter().any(|c| c.name == *want) {
                let known: Vec<&str> = sections.iter().map(|c| c.name.as_str()).collect();
                warnings.push(format!(
                    "--cluster {want}: no [[cluster]] of that name (known: {})",
                    known.join(", ")
                ));
            }
        }
        sections.iter().filter(|c| cli.clusters.contains(&c.name)).collect()
    } else if cli.slurm.is_none() && cli.prometheus.is_none() && !cli.kube && cli.context.is_none() {
        sections.iter().collect()
    } else {
        Vec::new()
    };
    // The first of two entries of one name is the one opened.
    let mut kept = std::collections::HashSet::new();
    chosen
        .into_iter()
        .filter(|c| !c.name.trim().is_empty() && !c.name.contains(['/', ',']))
        .filter(|c| kept.insert(c.name.as_str()))
        .map(|c| cluster_config(c, sim, readonly, prices, warnings))
        .collect()
}

/// One `[[cluster]]` entry resolved with the same rules as the single-cluster sections
/// (flags do not apply: they describe the single cluster).
fn cluster_config(
    c: &ClusterSection,
    sim: &SimSize,
    readonly: bool,
    prices: &PriceCard,
    warnings: &mut Vec<String>,
) -> ClusterConfig {
    let mut w = Vec::new();
    let none = Cli::default();
    let slurm = c.slurm.as_ref().and_then(|s| slurm_config(&none, s, None, &mut w));
    let bg_token = c.slurm.as_ref().and_then(|s| {
        s.break_glass_token_cmd
            .clone()
            .map(TokenSource::Command)
            .or_else(|| s.break_glass_token_file.clone().map(TokenSource::File))
    });
    let slurm_break_glass = slurm.as_ref().zip(bg_token).map(|(s, token)| ClientConfig {
        token,
        user: c.slurm.as_ref().and_then(|f| f.break_glass_user.clone()).or_else(|| s.client.user.clone()),
        ..s.client.clone()
    });
    let kube = c.kube.as_ref().and_then(|k| kube_config(&none, Some(k), &mut w));
    let prometheus = crate::backend::prom::PromConfig::resolve(None, c.prometheus.as_ref(), &mut w);
    let alertmanager = crate::backend::alertmanager::AmConfig::resolve(None, c.alertmanager.as_ref(), &mut w);
    let sim = match &c.sim {
        Some(s) => Some(SimSize {
            nodes: s.nodes.unwrap_or(sim.nodes).max(1),
            gpus: s.gpus_per_node.unwrap_or(sim.gpus).clamp(1, 16),
            jobs: s.jobs.unwrap_or(sim.jobs),
            seed: s.seed.unwrap_or(sim.seed),
        }),
        None if slurm.is_none() && kube.is_none() && prometheus.is_none() => Some(sim.clone()),
        None => None,
    };
    // The cluster's warnings name it: `config: [[cluster]] prod-a: slurm.max_body = …`.
    warnings.extend(w.into_iter().map(|m| format!("[[cluster]] {}: {m}", c.name)));
    ClusterConfig {
        name: c.name.clone(),
        slurm,
        slurm_break_glass,
        kube,
        prometheus,
        alertmanager,
        sim,
        readonly: readonly || c.readonly.unwrap_or(false),
        prices: c.prices.clone().map(|p| price_card(p, warnings)).unwrap_or_else(|| prices.clone()),
        teams: c.teams.clone(),
        people: c.people.clone(),
    }
}

/// The `[[shared_hosts]]` pairings of the clusters opened. A pairing that names a cluster the
/// config does not have, or one cluster twice, is a warning and ignored; one of clusters not
/// opened now is left out quietly.
fn shared_hosts(
    pairs: &[crate::state::HostPairing],
    sections: &[ClusterSection],
    open: &[ClusterConfig],
    warnings: &mut Vec<String>,
) -> Vec<crate::state::HostPairing> {
    let opened = |n: &str| open.iter().any(|c| c.name == n);
    let known = |n: &str| sections.iter().any(|c| c.name == n) || opened(n);
    pairs
        .iter()
        .filter(|p| {
            let bad = [&p.slurm, &p.kube].into_iter().find(|n| !known(n));
            if let Some(n) = bad {
                warnings.push(format!(
                    "config: [[shared_hosts]] slurm = {:?}, kube = {:?}: no [[cluster]] named {n:?}; ignored",
                    p.slurm, p.kube
                ));
                return false;
            }
            if p.slurm == p.kube {
                warnings.push(format!(
                    "config: [[shared_hosts]] pairs the cluster {:?} with itself; ignored",
                    p.slurm
                ));
                return false;
            }
            opened(&p.slurm) && opened(&p.kube)
        })
        .cloned()
        .collect()
}

impl Config {
    /// The single-cluster configuration of one fleet cluster: its sources in place of the
    /// flags' (what a command that reads or acts on one cluster takes).
    pub fn for_cluster(&self, c: &ClusterConfig) -> Config {
        let sim = c.sim.clone().unwrap_or(SimSize {
            nodes: self.sim_nodes,
            gpus: self.sim_gpus,
            jobs: self.sim_jobs,
            seed: self.seed,
        });
        Config {
            slurm: c.slurm.clone(),
            slurm_break_glass: c.slurm_break_glass.clone(),
            kube: c.kube.clone(),
            prometheus: c.prometheus.clone(),
            alertmanager: c.alertmanager.clone(),
            readonly: c.readonly,
            prices: c.prices.clone(),
            sim_nodes: sim.nodes,
            sim_gpus: sim.gpus,
            sim_jobs: sim.jobs,
            seed: sim.seed,
            local: false,
            clusters: Vec::new(),
            ..self.clone()
        }
    }
}

impl Config {
    /// The opened clusters' team and people names, for the state's roll-ups.
    pub fn directory(&self) -> crate::state::Directory {
        let mut d = crate::state::Directory::default();
        for c in &self.clusters {
            d.add(&c.name, &c.teams, &c.people);
        }
        d
    }
}

impl ClusterConfig {
    fn empty(readonly: bool, prices: &PriceCard) -> Self {
        ClusterConfig {
            name: String::new(),
            slurm: None,
            slurm_break_glass: None,
            kube: None,
            prometheus: None,
            alertmanager: None,
            sim: None,
            readonly,
            prices: prices.clone(),
            teams: Default::default(),
            people: Default::default(),
        }
    }

    /// The sources this cluster has, as the header names them.
    pub fn sources(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.sim.is_some() {
            v.push("sim");
        }
        if self.slurm.is_some() {
            v.push("slurm");
        }
        if self.kube.is_some() {
            v.push("kube");
        }
        if self.prometheus.is_some() {
            v.push("prom");
        }
        if self.alertmanager.is_some() {
            v.push("alerts");
        }
        v
    }
}

/// `[prices]` with every price a number of money (TOML also has `nan` and `inf`, and a sign):
/// a price that is not finite or is below zero is dropped (the default price: the built-in one)
/// with a warning, so no cost shows NaN.
fn price_card(mut p: PriceCard, warnings: &mut Vec<String>) -> PriceCard {
    let ok = |v: f64| v.is_finite() && v >= 0.0;
    p.per_gpu_hour.retain(|model, v| {
        if !ok(*v) {
            warnings.push(format!("config: prices.per_gpu_hour.{model:?} = {v}: not a price; ignored"));
        }
        ok(*v)
    });
    if !ok(p.default) {
        let d = PriceCard::default().default;
        warnings.push(format!("config: prices.default = {}: not a price; using {d}", p.default));
        p.default = d;
    }
    p.reserved.retain(|r| {
        let good = ok(r.monthly) && !r.model.trim().is_empty();
        if !good {
            warnings.push(format!(
                "config: prices.reserved model {:?} monthly = {}: not a commitment; ignored",
                r.model, r.monthly
            ));
        }
        good
    });
    p.share.retain(|k, v| {
        let good = v.is_finite() && *v > 0.0 && *v <= 1.0;
        if !good {
            warnings.push(format!(
                "config: prices.share.{k:?} = {v}: not a share of a GPU (0 < share <= 1); ignored"
            ));
        }
        good
    });
    if p.denominator.as_ref().is_some_and(|d| d.promql.trim().is_empty()) {
        warnings.push("config: prices.denominator.promql is empty; using prices.unit".into());
        p.denominator = None;
    }
    for (section, map) in [("overhead", &mut p.overhead), ("budgets", &mut p.budgets)] {
        map.retain(|k, v| {
            if !ok(*v) {
                warnings
                    .push(format!("config: prices.{section}.{k:?} = {v}: not an amount of money; ignored"));
            }
            ok(*v)
        });
    }
    p
}

/// The Kubernetes settings; `None` unless Kubernetes is asked for.
fn kube_config(
    cli: &Cli,
    file: Option<&KubeSection>,
    warnings: &mut Vec<String>,
) -> Option<crate::backend::kube::KubeConfig> {
    let env = std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty());
    if !(cli.kube
        || cli.context.is_some()
        || cli.kubeconfig.is_some()
        || cli.namespace.is_some()
        || env
        || file.is_some())
    {
        return None;
    }
    let f = file.cloned().unwrap_or_default();
    let mut k = crate::backend::kube::KubeConfig {
        kubeconfig: cli.kubeconfig.clone().or(f.kubeconfig),
        context: cli.context.clone().or(f.context),
        namespace: cli.namespace.clone().or(f.namespace),
        readonly_contexts: f.readonly_contexts,
        drain_grace_s: f.drain_grace_seconds,
        drain_delete_emptydir: f.drain_delete_emptydir.unwrap_or(false),
        acceptance_namespace: f.acceptance_namespace.unwrap_or_else(|| "default".into()),
        break_glass_user: f.break_glass_user,
        break_glass_groups: f.break_glass_groups,
        ..Default::default()
    };
    k.max_body =
        crate::backend::bounds::setting("kube.max_body", f.max_body.as_deref(), k.max_body, warnings);
    if let Some(t) = f.team_label {
        k.mapping.team_label = t;
    }
    if let Some(p) = f.pool_labels {
        k.mapping.pool_labels = p;
    }
    if let Some(u) = f.user_labels {
        k.mapping.user_labels = u;
    }
    if let Some(d) = f.drain_timeout.as_deref() {
        match humantime::parse_duration(d) {
            Ok(d) => k.drain_timeout = d,
            Err(e) => warnings.push(format!("config: kube.drain_timeout = {d:?}: {e}")),
        }
    }
    Some(k)
}

/// The Slurm settings: flags and environment over the `[slurm]` section. `None` without a URL.
fn slurm_config(
    cli: &Cli,
    file: &SlurmSection,
    env_jwt: Option<String>,
    warnings: &mut Vec<String>,
) -> Option<SlurmConfig> {
    let url = cli.slurm.clone().or_else(|| file.url.clone()).filter(|u| !u.trim().is_empty())?;
    let token = if let Some(c) = &cli.slurm_token_cmd {
        TokenSource::Command(c.clone())
    } else if let Some(f) = &cli.slurm_token_file {
        TokenSource::File(f.clone())
    } else if let Some(t) = env_jwt {
        TokenSource::Static(t)
    } else if let Some(c) = &file.token_cmd {
        TokenSource::Command(c.clone())
    } else if let Some(f) = &file.token_file {
        TokenSource::File(f.clone())
    } else {
        TokenSource::Static(String::new())
    };
    let version = file.version.as_deref().and_then(|v| {
        let parsed = ApiVersion::parse(v);
        if parsed.is_none() {
            warnings.push(format!(
                "config: slurm.version = {v:?} is not one of v0.0.43, v0.0.42, v0.0.41, v0.0.40, v0.0.38"
            ));
        }
        parsed
    });
    let mut cfg = SlurmConfig::new(ClientConfig {
        url,
        user: cli.slurm_user.clone().or_else(|| file.user.clone()),
        token,
        ca_file: cli.slurm_ca.clone().or_else(|| file.ca_file.clone()),
        timeout: Duration::from_secs(30),
        version,
    });
    let refresh = cli.slurm_refresh.or_else(|| {
        let r = file.refresh.as_deref()?;
        humantime::parse_duration(r)
            .map_err(|e| warnings.push(format!("config: slurm.refresh = {r:?}: {e}")))
            .ok()
    });
    if let Some(u) = file.slurm_user.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
        cfg.slurm_user = u.to_string();
    }
    cfg.max_body =
        crate::backend::bounds::setting("slurm.max_body", file.max_body.as_deref(), cfg.max_body, warnings);
    cfg.max_job_list = crate::backend::bounds::setting(
        "slurm.max_job_list",
        file.max_job_list.as_deref(),
        cfg.max_job_list,
        warnings,
    );
    if let Some(r) = refresh {
        cfg.refresh = r.max(Duration::from_secs(1));
        // Keep the full job list at one per 5 minutes whatever the refresh.
        cfg.full_jobs_every = (300 / cfg.refresh.as_secs().max(1)).max(1) as u32;
    }
    Some(cfg)
}

/// The name the OS gives this process's user (the password database entry for its uid), for
/// when `$USER` and `$LOGNAME` are unset (cron, `env -i`, some containers).
pub fn os_user() -> Option<String> {
    whoami::username().ok().filter(|u| !u.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_file(text: &str) -> (Config, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, text).unwrap();
        Config::load(&Cli { config: Some(p), ..Cli::default() })
    }

    /// With `$USER` unset the console names the OS user (as `id -un` does), not "unknown".
    #[test]
    fn the_os_user_is_the_password_database_name() {
        let id = std::process::Command::new("id").arg("-un").output().expect("id -un");
        let want = String::from_utf8_lossy(&id.stdout).trim().to_string();
        assert!(!want.is_empty());
        assert_eq!(os_user().as_deref(), Some(want.as_str()));
    }

    #[test]
    fn file_values_apply_and_flags_win() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, "theme = \"light\"\nrefresh = \"5s\"\n[sim]\nnodes = 64\n").unwrap();
        let (c, w) = Config::load(&Cli { config: Some(p.clone()), ..Cli::default() });
        assert!(w.is_empty(), "{w:?}");
        assert_eq!((c.theme.as_str(), c.refresh, c.sim_nodes), ("light", Duration::from_secs(5), 64));
        let (c, _) = Config::load(&Cli {
            config: Some(p),
            theme: Some("monochrome".into()),
            sim_nodes: Some(8),
            ..Cli::default()
        });
        assert_eq!((c.theme.as_str(), c.sim_nodes), ("monochrome", 8));
    }

    #[test]
    fn cluster_entries_are_picked_by_name_and_sim_clusters_differ() {
        let text = "[[cluster]]\nname = \"prod-a\"\nreadonly = true\n[cluster.slurm]\nurl = \"http://a:6820\"\n\
                    token_file = \"/t/a\"\nbreak_glass_token_file = \"/t/a-bg\"\n[cluster.prometheus]\nurl = \"http://p:9090\"\n\
                    [cluster.teams]\nphys = \"physics\"\n\
                    [[cluster]]\nname = \"prod-b\"\n[cluster.kube]\ncontext = \"b\"\nnamespace = \"ml\"\n\
                    [[cluster]]\nname = \"lab\"\n[cluster.sim]\nnodes = 4\nseed = 7\n";
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, text).unwrap();
        let load = |cli: Cli| Config::load(&Cli { config: Some(p.clone()), ..cli });
        // No single-cluster flag: the whole fleet.
        let (c, w) = load(Cli::default());
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.cluster_names, ["prod-a", "prod-b", "lab"]);
        let names: Vec<&str> = c.clusters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["prod-a", "prod-b", "lab"]);
        let a = &c.clusters[0];
        assert_eq!(a.slurm.as_ref().unwrap().client.url, "http://a:6820");
        assert_eq!(a.slurm_break_glass.as_ref().unwrap().token, TokenSource::File("/t/a-bg".into()));
        assert!(a.readonly && !c.clusters[1].readonly);
        assert_eq!(a.teams.get("phys").map(String::as_str), Some("physics"));
        assert_eq!(a.sources(), ["slurm", "prom"]);
        assert_eq!(c.clusters[1].kube.as_ref().unwrap().context.as_deref(), Some("b"));
        assert_eq!(c.clusters[2].sim, Some(SimSize { nodes: 4, gpus: 8, jobs: 0, seed: 7 }));
        // --cluster picks, and an unknown name is a warning naming the known ones.
        let (c, w) = load(Cli { clusters: vec!["lab".into(), "prod-z".into()], ..Cli::default() });
        assert_eq!(c.clusters.len(), 1);
        assert_eq!(c.clusters[0].name, "lab");
        assert_eq!(w, ["--cluster prod-z: no [[cluster]] of that name (known: prod-a, prod-b, lab)"]);
        // A single-cluster flag keeps the single cluster.
        let (c, _) = load(Cli { slurm: Some("http://h:1".into()), ..Cli::default() });
        assert!(c.clusters.is_empty() && c.slurm.is_some());
        let (c, _) = load(Cli { slurm: Some("http://h:1".into()), all_clusters: true, ..Cli::default() });
        assert_eq!(c.clusters.len(), 3);
        // --sim-clusters: own names, sizes and seeds.
        let (c, _) = Config::load(&Cli {
            sim_clusters: Some(3),
            sim_nodes: Some(80),
            seed: Some(1),
            ..Cli::default()
        });
        let got: Vec<(String, usize, u64)> = c
            .clusters
            .iter()
            .map(|c| (c.name.clone(), c.sim.as_ref().unwrap().nodes, c.sim.as_ref().unwrap().seed))
            .collect();
        assert_eq!(got, [("sim-1".into(), 80, 1), ("sim-2".into(), 70, 2), ("sim-3".into(), 60, 3)]);
    }

    #[test]
    fn shared_hosts_and_people_are_read_and_a_pairing_of_an_unknown_cluster_is_named() {
        let (c, w) = with_file(
            "[[cluster]]\nname = \"prod-a\"\n[cluster.sim]\nnodes = 2\n[cluster.people]\nasmith = \"alice\"\n\
             [[cluster]]\nname = \"prod-k8s\"\n[cluster.sim]\nnodes = 2\n[cluster.teams]\nml = \"research\"\n\
             [[shared_hosts]]\nslurm = \"prod-a\"\nkube = \"prod-k8s\"\nkube_suffix = \".prod.internal\"\n\
             [shared_hosts.hosts]\n\"slinky-0\" = \"gpu-node-17\"\n\
             [[shared_hosts]]\nslurm = \"prod-a\"\nkube = \"prod-z\"\n",
        );
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("no [[cluster]] named \"prod-z\""), "{w:?}");
        assert_eq!(c.shared_hosts.len(), 1);
        let p = &c.shared_hosts[0];
        assert_eq!(
            (p.kube_name("gpu-001"), p.kube_name("slinky-0")),
            ("gpu-001.prod.internal".to_string(), "gpu-node-17".to_string())
        );
        let mut s = crate::state::ClusterState::default();
        s.directory = c.directory();
        assert_eq!(s.person_of(&"prod-a".into(), "asmith"), "alice");
        assert_eq!(s.person_of(&"prod-k8s".into(), "asmith"), "asmith");
        assert_eq!(s.team_of(&"prod-k8s".into(), "ml"), "research");
        assert_eq!(s.team_of(&"prod-a".into(), "ml"), "ml");
        // Opening one of the two clusters leaves the pairing out.
        let (c, _) = with_file(
            "[[cluster]]\nname = \"a\"\n[[cluster]]\nname = \"b\"\n[[shared_hosts]]\nslurm = \"a\"\nkube = \"b\"\n",
        );
        assert_eq!(c.shared_hosts.len(), 1);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[[cluster]]\nname = \"a\"\n[[cluster]]\nname = \"b\"\n[[shared_hosts]]\nslurm = \"a\"\nkube = \"b\"\n").unwrap();
        let (c, _) = Config::load(&Cli { config: Some(path), clusters: vec!["a".into()], ..Cli::default() });
        assert!(c.shared_hosts.is_empty());
    }

    #[test]
    fn a_cluster_without_a_usable_name_is_refused() {
        let (c, w) =
            with_file("[[cluster]]\nname = \"a/b\"\n[[cluster]]\nname = \"x\"\n[[cluster]]\nname = \"x\"\n");
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("\"a/b\""), "{w:?}");
        assert_eq!(c.clusters.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["x"]);
    }

    #[test]
    fn prices_that_are_not_money_and_endless_idle_times_are_refused() {
        // What the toml_files fuzz target's checks refused (kept as fuzz/corpus/toml_files/crash-*).
        let (c, w) = with_file(
            "[prices]\ncurrency = \"USD\"\ndefault = nan\n[prices.per_gpu_hour]\nH100 = -inf\nH200 = 3.5\n\
             [thresholds]\nidle_after = \"300000000000y\"\n",
        );
        assert_eq!(c.prices.per_gpu_hour.len(), 1);
        assert_eq!(c.prices.price("NVIDIA H200"), 3.5);
        assert_eq!(c.prices.default, PriceCard::default().default);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("\"H100\" = -inf: not a price"), "{}", w[0]);
        assert!(w[1].contains("prices.default = NaN: not a price"), "{}", w[1]);
        assert_eq!(c.thresholds.idle_after_s, i64::MAX);
    }

    #[test]
    fn a_bad_field_names_file_line_and_field() {
        let (c, w) = with_file("theme = \"dark\"\n[sim]\nnodez = 3\n");
        assert_eq!(c.sim_nodes, 16);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("config.toml: line 3"), "{}", w[0]);
        assert!(w[0].contains("nodez"), "{}", w[0]);
    }

    #[test]
    fn a_bad_duration_is_reported() {
        let (c, w) = with_file("refresh = \"soon\"\n");
        assert_eq!(c.refresh, Duration::from_secs(2));
        assert!(w[0].contains("refresh"), "{w:?}");
    }

    #[test]
    fn size_limits_are_read_with_units_and_a_bad_one_is_named() {
        let text = "[slurm]\nurl = \"http://h:1\"\nmax_body = \"1 MiB\"\nmax_job_list = \"lots\"\n";
        let file: FileConfig = toml::from_str(text).unwrap();
        let mut w = Vec::new();
        let s = slurm_config(&Cli::default(), &file.slurm, None, &mut w).unwrap();
        assert_eq!((s.max_body, s.max_job_list), (1 << 20, 2 << 30));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("config: slurm.max_job_list = \"lots\" is not a size"), "{w:?}");
        assert!(w[0].ends_with("using 2 GiB"), "{w:?}");
    }

    #[test]
    fn slurm_section_selects_the_slurm_backend_and_flags_win() {
        let text = "[slurm]\nurl = \"http://127.0.0.1:6820\"\nuser = \"alice\"\ntoken_cmd = \"scontrol token\"\nrefresh = \"30s\"\nslurm_user = \"slurmadm\"\n";
        let file: FileConfig = toml::from_str(text).unwrap();
        let mut w = Vec::new();
        let s = slurm_config(&Cli::default(), &file.slurm, None, &mut w).expect("slurm configured");
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(s.slurm_user, "slurmadm");
        let plain: FileConfig = toml::from_str("[slurm]\nurl = \"http://h:1\"\n").unwrap();
        assert_eq!(slurm_config(&Cli::default(), &plain.slurm, None, &mut w).unwrap().slurm_user, "slurm");
        assert_eq!(s.client.url, "http://127.0.0.1:6820");
        assert_eq!(s.client.user.as_deref(), Some("alice"));
        assert_eq!(s.client.token, TokenSource::Command("scontrol token".into()));
        assert_eq!(s.refresh, Duration::from_secs(30));
        // $SLURM_JWT beats the file, flags beat both
        let s = slurm_config(&Cli::default(), &file.slurm, Some("jwt".into()), &mut w).unwrap();
        assert_eq!(s.client.token, TokenSource::Static("jwt".into()));
        let (c, _) = Config::load(&Cli {
            slurm: Some("http://h:1".into()),
            slurm_token_file: Some("/t".into()),
            ..Cli::default()
        });
        let s = c.slurm.expect("slurm from the flag");
        assert_eq!((s.client.url.as_str(), &s.client.token), ("http://h:1", &TokenSource::File("/t".into())));
        assert_eq!(s.refresh, Duration::from_secs(10));
        let (c, _) = with_file("theme = \"dark\"\n");
        assert!(c.slurm.is_none());
    }

    #[test]
    fn price_card_with_commitments_shares_overhead_and_budgets() {
        let (c, w) = with_file(
            "[prices]\ncurrency = \"EUR\"\ndefault = 1.0\nunit = \"gpu-hours\"\n\
             [prices.per_gpu_hour]\nH100 = 2.5\n\
             [[prices.reserved]]\nmodel = \"H100\"\ngpus = 64\nmonthly = 90000\n\
             [[prices.reserved]]\nmodel = \"A100\"\ngpus = 8\nmonthly = -1\n\
             [prices.share]\n\"1g.10gb\" = 0.142857\n\"3g\" = 3.0\n\
             [prices.overhead]\nnetwork = 12000\nstorage = inf\n\
             [prices.teams]\nproj-a = \"research\"\n\
             [prices.budgets]\nresearch = 50000\n",
        );
        assert_eq!(c.prices.reserved.len(), 1, "{w:?}");
        assert_eq!(c.prices.reservation("NVIDIA H100 80GB").map(|r| r.gpus), Some(64));
        assert_eq!(c.prices.share("A100 MIG 1g.10gb"), 0.142857);
        assert_eq!(c.prices.share("A100 MIG 3g.40gb"), 1.0);
        assert_eq!(c.prices.overhead.len(), 1);
        assert_eq!(c.prices.unit, crate::model::Unit::GpuHours);
        assert_eq!(c.prices.team_of("proj-a"), "research");
        assert_eq!(c.prices.team_of("proj-b"), "proj-b");
        assert_eq!(c.prices.budgets.get("research"), Some(&50000.0));
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w.iter().any(|m| m.contains("prices.reserved model \"A100\"")), "{w:?}");
        assert!(w.iter().any(|m| m.contains("prices.share.\"3g\" = 3")), "{w:?}");
        assert!(w.iter().any(|m| m.contains("prices.overhead.\"storage\"")), "{w:?}");
    }

    #[test]
    fn acceptance_section_from_the_file() {
        let (c, w) = with_file(
            "[acceptance]\ncommand = \"/opt/nccl-tests/all_reduce_perf -b 8G -e 8G -g {gpus}\"\n[acceptance.baseline]\n\"8xH100\" = 360.0\n",
        );
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(
            c.acceptance.template.command_for(8, 1),
            "/opt/nccl-tests/all_reduce_perf -b 8G -e 8G -g 8"
        );
        assert_eq!(c.acceptance.judge.baseline.get("8xH100"), Some(&360.0));
        let (_, w) = with_file("[acceptance]\ncomand = \"x\"\n");
        assert!(w[0].contains("comand"), "{w:?}");
    }

    #[test]
    fn price_card_from_the_file() {
        let (c, w) =
            with_file("[prices]\ncurrency = \"EUR\"\ndefault = 1.0\n[prices.per_gpu_hour]\nH100 = 2.5\n");
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.prices.price("NVIDIA H100 80GB HBM3"), 2.5);
        assert_eq!(c.prices.price("T4"), 1.0);
    }
}
