//! Command-line interface. Every flag also has an environment variable; both override the
//! config file.

use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;

/// gpuplane: one terminal console for every plane of a GPU cluster — nodes, GPUs and their
/// topology, the fabric, storage, queues, quotas and cost.
///
/// With no cluster configured it opens a built-in simulated GPU cluster (marked SIMULATED).
///
/// Config file: $XDG_CONFIG_HOME/gpuplane/config.toml (see --config). Themes and keymaps are
/// looked up in themes/ and keymaps/ beside it before the built-in ones. Logs go to
/// $XDG_STATE_HOME/gpuplane/gpuplane.log, never to the terminal.
#[derive(Debug, Clone, Parser, Default)]
#[command(name = "gpuplane", version, about, long_about)]
pub struct Cli {
    // Flags under `help_heading = BACKENDS` choose and configure where data comes from; the
    // subcommands that read no cluster ([`NO_BACKEND`]) hide them.
    /// Config file to read instead of the default one.
    #[arg(long, env = "GPUPLANE_CONFIG", value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// Theme: dark, light, high-contrast, monochrome, or a file in <config>/themes/. NO_COLOR forces monochrome.
    #[arg(long, env = "GPUPLANE_THEME", value_name = "NAME")]
    pub theme: Option<String>,

    /// Keymap: default (k9s/vim), emacs, or a file in <config>/keymaps/.
    #[arg(long, env = "GPUPLANE_KEYMAP", value_name = "NAME")]
    pub keymap: Option<String>,

    /// How often backends refresh (and the simulator ticks), e.g. 2s, 500ms.
    #[arg(long, env = "GPUPLANE_REFRESH", value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub refresh: Option<Duration>,

    /// The user whose jobs "my jobs" shows (default: $USER).
    #[arg(long, env = "GPUPLANE_USER", value_name = "NAME")]
    pub user: Option<String>,

    /// Plain ASCII borders and bars (default: Unicode when the locale is UTF-8).
    #[arg(long, env = "GPUPLANE_ASCII")]
    pub ascii: bool,

    /// Show times in UTC instead of the local time zone (TZ, else /etc/localtime).
    #[arg(long, env = "GPUPLANE_UTC", global = true)]
    pub utc: bool,

    /// View to open first: overview, nodes, gpus, wall, topology, fabric, storage, jobs, queues, quotas, cost.
    #[arg(long, env = "GPUPLANE_VIEW", value_name = "VIEW")]
    pub view: Option<String>,

    /// Prometheus (or Thanos/Mimir/Cortex) query URL for GPU, fabric and storage telemetry.
    /// Alone, nodes and GPUs are discovered from its series; more in [prometheus] of the config.
    #[arg(help_heading = BACKENDS, long, env = "PROMETHEUS_URL", value_name = "URL", global = true)]
    pub prometheus: Option<String>,

    /// Alertmanager URL (API v2): what is firing and silenced, in the Alerts view and the
    /// incident list; `gpuplane silence` creates and expires silences there. More in
    /// [alertmanager] of the config.
    #[arg(help_heading = BACKENDS, long, env = "ALERTMANAGER_URL", value_name = "URL", global = true)]
    pub alertmanager: Option<String>,

    /// This host's GPUs through NVML (libnvidia-ml.so.1), instead of the simulator; with --slurm
    /// or --prometheus they join that cluster's node of this host's name (done anyway when NVML loads).
    #[arg(help_heading = BACKENDS, long, env = "GPUPLANE_LOCAL")]
    pub local: bool,

    /// Kubernetes: use the kubeconfig's current context ($KUBECONFIG, else ~/.kube/config, else
    /// the in-cluster service account) instead of the simulator. Implied by --context,
    /// --kubeconfig, $KUBECONFIG or a [kube] section in the config.
    #[arg(help_heading = BACKENDS, long, env = "GPUPLANE_KUBE", global = true)]
    pub kube: bool,

    /// Kubernetes: the kubeconfig file to read.
    #[arg(help_heading = BACKENDS, long, value_name = "PATH", global = true)]
    pub kubeconfig: Option<PathBuf>,

    /// Kubernetes: the kubeconfig context to open (switch inside the console with :ctx NAME).
    #[arg(help_heading = BACKENDS, long, value_name = "NAME", global = true)]
    pub context: Option<String>,

    /// Kubernetes: watch pods, quotas and Kueue workloads of this namespace only (default: all).
    #[arg(help_heading = BACKENDS, long, value_name = "NS", global = true)]
    pub namespace: Option<String>,

    /// Simulator: number of nodes.
    #[arg(help_heading = BACKENDS, long, env = "GPUPLANE_SIM_NODES", value_name = "N")]
    pub sim_nodes: Option<usize>,

    /// Simulator: GPUs per node (1-16).
    #[arg(help_heading = BACKENDS, long, env = "GPUPLANE_SIM_GPUS", value_name = "N", value_parser = clap::value_parser!(u8).range(1..=16))]
    pub sim_gpus: Option<u8>,

    /// Simulator: number of jobs kept (running, pending and history); 0 = automatic.
    #[arg(help_heading = BACKENDS, long, env = "GPUPLANE_SIM_JOBS", value_name = "N")]
    pub sim_jobs: Option<usize>,

    /// Simulator: random seed (the same seed gives the same cluster).
    #[arg(help_heading = BACKENDS, long, env = "GPUPLANE_SEED", value_name = "N")]
    pub seed: Option<u64>,

    /// Fleet: open these clusters of the config's [[cluster]] entries (comma-separated names),
    /// all in one console.
    #[arg(long = "cluster", value_name = "NAMES", value_delimiter = ',', global = true)]
    pub clusters: Vec<String>,

    /// Fleet: open every [[cluster]] of the config.
    #[arg(long, global = true)]
    pub all_clusters: bool,

    /// Fleet: N simulated clusters (sim-1 … sim-N), each with its own size and seed.
    #[arg(long, env = "GPUPLANE_SIM_CLUSTERS", value_name = "N", global = true)]
    pub sim_clusters: Option<usize>,

    /// Slurm: slurmrestd URL (e.g. http://127.0.0.1:6820). gpuplane then opens on that cluster
    /// instead of the simulator. The token comes from --slurm-token-cmd, --slurm-token-file or
    /// $SLURM_JWT (in that order), or the config file's [slurm] section.
    #[arg(help_heading = BACKENDS, long = "slurm", env = "SLURMRESTD_URL", value_name = "URL", global = true)]
    pub slurm: Option<String>,

    /// Slurm: user name sent as X-SLURM-USER-NAME (optional with tokens that name the user).
    #[arg(help_heading = BACKENDS, long, env = "SLURM_USER_NAME", value_name = "NAME", global = true)]
    pub slurm_user: Option<String>,

    /// Slurm: file holding the JWT (re-read at every refresh, so a cron job can renew it).
    #[arg(help_heading = BACKENDS, long, env = "GPUPLANE_SLURM_TOKEN_FILE", value_name = "PATH", global = true)]
    pub slurm_token_file: Option<PathBuf>,

    /// Slurm: command printing a JWT, re-run when the token nears expiry or is refused,
    /// e.g. "scontrol token lifespan=3600".
    #[arg(help_heading = BACKENDS, long, env = "GPUPLANE_SLURM_TOKEN_CMD", value_name = "COMMAND", global = true)]
    pub slurm_token_cmd: Option<String>,

    /// Slurm: PEM CA file to trust for an https:// URL (a TLS proxy in front of slurmrestd).
    #[arg(help_heading = BACKENDS, long, env = "GPUPLANE_SLURM_CA", value_name = "PATH", global = true)]
    pub slurm_ca: Option<PathBuf>,

    /// Slurm: time between refreshes (default 10s; jittered).
    #[arg(help_heading = BACKENDS, long, env = "GPUPLANE_SLURM_REFRESH", value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub slurm_refresh: Option<Duration>,

    /// Exit after drawing this many frames (for measuring time to first frame and memory).
    #[arg(long, value_name = "N")]
    pub exit_after_frames: Option<u64>,

    /// Do not record what the console sees (the flight recorder, `[recorder]`; on by default).
    #[arg(long)]
    pub no_record: bool,

    /// Read-only: every action is refused and nothing is written to the cluster.
    #[arg(long, global = true, env = "GPUPLANE_READONLY")]
    pub readonly: bool,

    /// Audit log file (default: $XDG_DATA_HOME/gpuplane/audit.jsonl; may be on a shared filesystem).
    #[arg(long, global = true, env = "GPUPLANE_AUDIT_LOG", value_name = "PATH")]
    pub audit_log: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The help heading of the flags that choose and configure the backends.
pub const BACKENDS: &str = "Backends";

/// Subcommands (by path) that read no cluster: their help and man page leave out the backend
/// flags (nested subcommands inherit it).
pub const NO_BACKEND: &[&[&str]] = &[&["completions"], &["man"], &["audit"], &["acceptance", "parse"]];

/// The command line's definition, built, with the backend flags hidden where they do nothing:
/// what parsing, help, man pages and completions all use.
pub fn command() -> clap::Command {
    command_with(|c| c)
}

/// [`command`], with `edit` applied to the root before clap propagates global flags (what
/// completions use to give flags their possible values without restricting parsing).
pub fn command_with(edit: impl FnOnce(clap::Command) -> clap::Command) -> clap::Command {
    let mut cmd = edit(<Cli as clap::CommandFactory>::command());
    // A subcommand that already has a global flag keeps its own copy when clap propagates
    // them: a hidden copy hides it there (and below it).
    let backend: Vec<clap::Arg> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set() && a.get_help_heading() == Some(BACKENDS))
        .map(|a| a.clone().hide(true))
        .collect();
    for path in NO_BACKEND {
        cmd = hide_in(cmd, path, &backend);
    }
    cmd.build();
    cmd
}

fn hide_in(cmd: clap::Command, path: &[&str], hidden: &[clap::Arg]) -> clap::Command {
    match path {
        [] => cmd.args(hidden.iter().cloned()),
        [first, rest @ ..] => cmd.mut_subcommand(*first, |s| hide_in(s, rest, hidden)),
    }
}

/// Parses the process's arguments with [`command`].
pub fn parse() -> Cli {
    use clap::FromArgMatches;
    Cli::from_arg_matches(&command().get_matches()).unwrap_or_else(|e| e.exit())
}

/// Targets, reason and confirmation of an action run from a script or runbook.
#[derive(Debug, Clone, clap::Args)]
pub struct ActionArgs {
    /// Nodes (or, for cancel, job ids).
    #[arg(required = true, value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Why (required; recorded in the audit log).
    #[arg(long, short)]
    pub reason: String,
    /// Ticket or incident id.
    #[arg(long, short)]
    pub ticket: Option<String>,
    /// Print the plan and record it, without executing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation.
    #[arg(long, short)]
    pub yes: bool,
    /// A host that is a node of a Slurm and of a Kubernetes cluster (`[[shared_hosts]]`): act
    /// in both schedulers (the default), or in one only.
    #[arg(long, value_name = "slurm|kube|both", default_value = "both")]
    pub sched: crate::ops::fleet::Pick,
}

/// Subcommands: actions through the same road and audit log as the console, and the audit log.
/// With no cluster configured, actions act on a freshly generated simulated cluster.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Mark nodes unschedulable (running jobs continue).
    Cordon(ActionArgs),
    /// Mark cordoned nodes schedulable again.
    Uncordon(ActionArgs),
    /// Drain nodes: no new work; running work ends (Kubernetes: evicted; Slurm: finishes).
    Drain(ActionArgs),
    /// Return drained or down nodes to service (Slurm resume).
    Resume(ActionArgs),
    /// Cancel jobs.
    Cancel(ActionArgs),
    /// Print a resource once, from the same backends as the console, for scripts and tickets.
    Get {
        #[arg(value_parser = resource_parser())]
        resource: String,
        /// table (the console's columns), wide (every column), json (stable field names), csv.
        #[arg(short, long, value_enum, default_value_t = Output::Table)]
        output: Output,
        /// The console's filter: text, key=value (labels too), key==exact, !negate.
        #[arg(long, default_value = "")]
        filter: String,
        /// cost, cost-teams: the window (1h, 24h, 1d, 7d, 30d or any duration; default 24h),
        /// read from the usage ledger.
        #[arg(long, value_name = "DURATION")]
        window: Option<String>,
        /// cost, cost-teams: only this team (Slurm account, Kubernetes namespace).
        #[arg(long, value_name = "TEAM")]
        team: Option<String>,
        /// With `incidents`: exit 3 when an unhandled incident (state open: not acked, not
        /// mitigated by a drain or cordon, not resolved; after --filter) is at this severity or
        /// worse (crit, or warn: WARN and CRIT), for cron and CI checks. The table is printed
        /// either way; JSON rows carry state, since, acked_by, ticket, mitigation, playbook_step.
        #[arg(long, value_enum, value_name = "SEVERITY")]
        fail_on: Option<FailOn>,
        /// A fleet with a cluster that cannot be read: exit 2 (the other clusters' rows are
        /// printed either way, and the failed cluster named on stderr). Without it, exit 0
        /// unless --fail-on is given (a check that cannot see a cluster does not pass).
        #[arg(long)]
        strict: bool,
    },
    /// Reports for people who pay and people who run jobs: `report cost` (chargeback).
    Report {
        #[command(subcommand)]
        command: ReportCommand,
    },
    /// Alertmanager silences, through the audit log like every write: create one for a set of
    /// matchers (reason, ticket, duration), or expire one. Needs --alertmanager URL (or
    /// [alertmanager] url). Exit status: 0 done; 1 Alertmanager refused or failed; 2 refused
    /// before anything was sent (usage, read-only, no audit record, unknown silence); 3 done
    /// but its outcome could not be audited.
    Silence {
        #[command(subcommand)]
        command: SilenceCommand,
    },
    /// What changed, for a handover or a postmortem: node state transitions (with the reason
    /// and who set it), XIDs and ECC errors, ports going down and flapping, failed and
    /// preempted jobs, actions and acks, alerts firing and resolving — from the event journal
    /// the consoles on this data dir write ([timeline] in the config), and the audit log's
    /// actions. `-o markdown` is a postmortem skeleton: summary, what happened when, who did
    /// what, GPU-hours lost (from the usage ledger, or "unknown"), open questions. JSON and
    /// CSV hold the fields of docs/get.md (`timeline`). Exit status: 0 printed (an empty
    /// window too); 2 a bad time or filter, or a journal that cannot be read.
    Timeline(TimelineArgs),
    /// Open the console on a recording (the flight recorder): every view as it was at an
    /// instant, read-only, with a REPLAY badge and the replayed clock. Keys: p plays / pauses,
    /// , and . step, - and + change the speed (x0.25 to x16), n jumps to the next change of the
    /// incidents, `:at TIME` goes to an instant. PATH is a segment (rec-*.gprec) or a directory
    /// of them (default: the recorder's). Exit status: 2 when it cannot be read (the error
    /// names the file, the byte offset and what was expected there).
    Replay(ReplayArgs),
    /// Check the whole configuration before an incident, one line per check (OK, WARN or FAIL
    /// with the fix). Exit status: 0 all OK; 1 a WARN and no FAIL; 2 a FAIL.
    ///
    /// For every configured source (Slurm, Kubernetes, Prometheus, NVML): reachability (DNS,
    /// TCP, TLS), authentication (who the token names, when it expires), the permission behind
    /// each action, API versions, the Prometheus series and labels gpuplane reads (and what a
    /// missing one disables) and clock skew; and whether the audit log can be written. Nothing
    /// is changed on any cluster; token values are never printed.
    ///
    /// Exit status: 0 every check OK; 1 at least one WARN (something is disabled or degraded)
    /// and no FAIL; 2 at least one FAIL (a source gpuplane cannot use), or a usage error.
    Doctor {
        /// table (one line per check, for people) or json (for scripts and tickets).
        #[arg(short, long, value_enum, default_value_t = DoctorOutput::Table)]
        output: DoctorOutput,
        /// Give up on one check after this long (a server that accepts but never answers).
        #[arg(long, value_parser = humantime::parse_duration, default_value = "10s", value_name = "DURATION")]
        timeout: Duration,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    ///
    /// --view, --theme, --keymap and --context complete to their names: views, the built-in
    /// themes and keymaps and those in the config directory, the kubeconfig's contexts (bash
    /// asks `gpuplane completions --list contexts` at each completion; other shells get the
    /// names known when the script is printed).
    Completions {
        #[arg(required_unless_present = "list")]
        shell: Option<clap_complete::Shell>,
        /// Print the names one kind of value completes to, one a line (what the bash script
        /// runs for contexts).
        #[arg(long, value_enum, value_name = "KIND", conflicts_with = "shell")]
        list: Option<Names>,
    },
    /// Print a man page (roff), generated from this command line's definition: gpuplane(1), or
    /// a subcommand's (`gpuplane man drain` is gpuplane-drain(1), `gpuplane man audit verify`
    /// gpuplane-audit-verify(1)); with --dir, write every page into DIR (for packages).
    Man {
        /// The subcommand whose page to print (words, or joined with `-`).
        #[arg(value_name = "SUBCOMMAND")]
        page: Vec<String>,
        /// Write every page (gpuplane.1, gpuplane-drain.1, …) into this directory.
        #[arg(long, value_name = "DIR", conflicts_with = "page")]
        dir: Option<PathBuf>,
    },
    /// The audit log.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// NCCL acceptance tests: run all_reduce_perf on nodes, or parse any saved output.
    Acceptance {
        #[command(subcommand)]
        command: AcceptanceCommand,
    },
}

/// `gpuplane timeline`.
#[derive(Debug, Clone, clap::Args)]
pub struct TimelineArgs {
    /// Start: a duration back from now (2h, 30m, 1d) or a date (2026-11-01, 00:00 UTC) or an
    /// RFC 3339 time.
    #[arg(long, value_name = "WHEN", default_value = "24h")]
    pub since: String,
    /// End, included: the same forms (default: now).
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// Only events about this node (its GPUs and ports too).
    #[arg(long, value_name = "NODE")]
    pub node: Option<String>,
    /// Only events about this job.
    #[arg(long, value_name = "ID")]
    pub job: Option<u64>,
    /// Only events about this team's jobs (Slurm account, Kubernetes namespace).
    #[arg(long, value_name = "TEAM")]
    pub team: Option<String>,
    /// Only this kind: node-state, xid, ecc, port-down, port-flap, job-failed, job-preempted,
    /// action, ack, alert-firing, alert-resolved.
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// table (for people), markdown (a postmortem skeleton), json or csv (docs/get.md).
    #[arg(short, long, value_enum, default_value_t = TimelineOutput::Table)]
    pub output: TimelineOutput,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// A segment file or a directory of segments (default: the recorder's directory).
    pub path: Option<std::path::PathBuf>,
    /// The instant to open at: 2026-12-04T02:10:00Z, "2026-12-04 02:10" or 02:10 (in the shown
    /// zone, that day), or -1h30m from the end of the recording (default: its start).
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
}

/// `timeline -o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TimelineOutput {
    Table,
    Markdown,
    Json,
    Csv,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum ReportCommand {
    /// Chargeback: the bill of [--from, --to) by team, user or account, every part priced
    /// (useful, allocated-idle, unmeasured, unallocated, unhealthy, failed, overhead) and a
    /// TOTAL row equal to the Cost view's total for the same window. Read from the usage
    /// ledger (what it does not cover is said on stderr). CSV and JSON hold plain numbers.
    Cost(ReportCostArgs),
    /// Runs that did not complete, by cause (node failure with its node and XID, OOM,
    /// timeout, preemption, user cancel, non-zero exit), the top burners, and queue wait
    /// GPU-hours (requested GPUs × wait) per team and queue, over [--from, --to). Node
    /// failures, OOM, timeouts and non-zero exits add up to `report cost`'s failed part.
    Failures(ReportFailuresArgs),
    /// A job's efficiency, for the researcher who ran it: GPU utilisation per GPU and weighted
    /// by GPU-hours, GPUs idle the whole run, and notes ([efficiency] in the config: util below
    /// 15 % red, below 25 % a warning; no notes for runs under 5 minutes). From the usage
    /// ledger, so it outlives Prometheus retention. With Prometheus, its GPUs' figures over the
    /// run and, when they idled, what its nodes were doing meanwhile (storage, disk, CPU and
    /// InfiniBand against [prometheus.evidence] ceilings); the ledger keeps both at the job's end.
    Job {
        /// The job id.
        id: u64,
        /// json, markdown or text.
        #[arg(short, long, value_enum, default_value_t = ReportOutput::Markdown)]
        output: ReportOutput,
    },
}

#[derive(Debug, Clone, clap::Args)]
pub struct ReportCostArgs {
    /// Start: a date (2026-11-01, 00:00 UTC) or an RFC 3339 time.
    #[arg(long, value_name = "DATE")]
    pub from: String,
    /// End, not included: a date (00:00 UTC) or an RFC 3339 time (default: now).
    #[arg(long, value_name = "DATE")]
    pub to: Option<String>,
    /// One row per team (accounts mapped by [prices.teams]), user, account or cluster.
    #[arg(long, value_enum, default_value_t = ReportBy::Team)]
    pub by: ReportBy,
    /// csv, json (plain numbers, for scripts and finance tools) or markdown (for people).
    #[arg(short, long, value_enum, default_value_t = ReportOutput::Markdown)]
    pub output: ReportOutput,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ReportFailuresArgs {
    /// Start: a date (2026-11-01, 00:00 UTC) or an RFC 3339 time.
    #[arg(long, value_name = "DATE")]
    pub from: String,
    /// End, not included: a date (00:00 UTC) or an RFC 3339 time (default: now).
    #[arg(long, value_name = "DATE")]
    pub to: Option<String>,
    /// csv (one row per cause, burner and team/queue wait, a `section` column), json or markdown.
    #[arg(short, long, value_enum, default_value_t = ReportOutput::Markdown)]
    pub output: ReportOutput,
}

/// `report cost --by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportBy {
    Team,
    User,
    Account,
    /// The configured cluster (fleet mode; one row otherwise).
    Cluster,
}

/// `report -o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportOutput {
    Csv,
    Json,
    Markdown,
    /// Plain text (`report job`; `report cost` writes markdown).
    Text,
}

/// `get incidents --fail-on`: the least severity that fails the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// CRIT incidents.
    #[value(alias = "critical")]
    Crit,
    /// WARN and CRIT incidents.
    #[value(alias = "warning")]
    Warn,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum SilenceCommand {
    /// Silence the alerts matching every MATCHER (name=value, name!=value, name=~regex,
    /// name!~regex), e.g. `gpuplane silence create alertname=GpuXidError Hostname=gpu-004
    /// --duration 4h -r "GPU swap" -t INC-4242`. The plan lists the alerts it mutes now.
    Create {
        #[arg(required = true, value_name = "MATCHER")]
        matchers: Vec<String>,
        /// How long it lasts, e.g. 30m, 4h.
        #[arg(long, short, value_parser = humantime::parse_duration, default_value = "2h")]
        duration: Duration,
        #[command(flatten)]
        why: SilenceWhy,
    },
    /// Expire silences now (their alerts notify again).
    Expire {
        /// Silence ids (as `gpuplane get silences` lists them).
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
        #[command(flatten)]
        why: SilenceWhy,
    },
}

/// Reason, ticket and confirmation of a silence change.
#[derive(Debug, Clone, clap::Args)]
pub struct SilenceWhy {
    /// Why (required; recorded in the audit log and in the silence's comment).
    #[arg(long, short)]
    pub reason: String,
    /// Ticket or incident id.
    #[arg(long, short)]
    pub ticket: Option<String>,
    /// Print the plan and record it, without sending.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation.
    #[arg(long, short)]
    pub yes: bool,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum AcceptanceCommand {
    /// Parse saved nccl-tests output (devices, per-size rows, peak and average busbw, errors).
    /// Exit 0: clean; 1: the output reports wrong values or errors; 2: unreadable or not parseable.
    Parse {
        /// The output file ("-" for stdin).
        file: PathBuf,
        /// table (for people) or json.
        #[arg(short, long, value_enum, default_value_t = Output::Table)]
        output: Output,
    },
    /// Submit the acceptance test to nodes through the audited ops road, wait for it, then
    /// parse, record and judge the output. Exit 0: every run passed; 1: a run degraded or
    /// failed; 2: nothing was submitted.
    Run(AcceptanceRunArgs),
}

#[derive(Debug, Clone, clap::Args)]
pub struct AcceptanceRunArgs {
    /// The nodes under test.
    #[arg(required = true, value_name = "NODE")]
    pub nodes: Vec<String>,
    /// per-node (one job per node), pairs (one job per two nodes), all (one job on all).
    #[arg(long, value_enum, default_value_t = crate::acceptance::Mode::PerNode)]
    pub mode: crate::acceptance::Mode,
    /// Why (required; recorded in the audit log).
    #[arg(long, short)]
    pub reason: String,
    /// Ticket or incident id.
    #[arg(long, short)]
    pub ticket: Option<String>,
    /// Print the plan and record it, without submitting.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation.
    #[arg(long, short)]
    pub yes: bool,
    /// Give up waiting for the jobs after this long (they keep running), e.g. 30m.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1h")]
    pub wait: Duration,
}

/// What `get` can print: every table of the console's views (by its id, from the registry),
/// and the acceptance run store.
pub fn resources() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = crate::tables::all().map(|t| t.id().0).collect();
    v.push(ACCEPTANCE);
    v
}

/// `get acceptance`: the recorded acceptance runs, not a console table.
pub const ACCEPTANCE: &str = "acceptance";

fn resource_parser() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(resources())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Table,
    Wide,
    Json,
    Csv,
}

/// `completions --list`: values that complete to names known only at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Names {
    Views,
    Themes,
    Keymaps,
    Contexts,
    /// The config's `[[cluster]]` names.
    Clusters,
}

/// `doctor -o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DoctorOutput {
    Table,
    Json,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum AuditCommand {
    /// Check the hash chain and the witnessed heads; names the first edited, removed,
    /// inserted or reordered record, records missing at the end, a torn last write; lists
    /// intents without outcomes and break-glass sessions without an end. Exit 1 when the log
    /// is not intact.
    Verify {
        /// The log to check (default: the configured audit log).
        file: Option<PathBuf>,
        /// Also read witnessed heads from this file (a syslog file, `journalctl -o cat`
        /// output, a SIEM export); the journal beside the log is always read. Repeatable.
        #[arg(long, value_name = "FILE")]
        witness: Vec<PathBuf>,
        /// Check the signed checkpoints with this public key (64 hex digits, or a file holding
        /// them), as `gpuplane audit pubkey` prints it: a copy of the log verifies with it alone.
        #[arg(long, value_name = "KEY")]
        pubkey: Option<String>,
    },
    /// Print the public key that signs the log's checkpoints (created on first use).
    Pubkey,
    /// Append a signed checkpoint now (before handing a copy of the log to someone else).
    Checkpoint,
    /// Print the newest records.
    Tail {
        /// How many.
        #[arg(short, default_value_t = 20)]
        n: usize,
        /// As JSON Lines, exactly as stored.
        #[arg(long)]
        json: bool,
    },
}
