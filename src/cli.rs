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

    /// View to open first: overview, nodes, gpus, wall, topology, fabric, storage, jobs, queues, quotas, cost.
    #[arg(long, env = "GPUPLANE_VIEW", value_name = "VIEW")]
    pub view: Option<String>,

    /// Prometheus (or Thanos/Mimir/Cortex) query URL for GPU, fabric and storage telemetry.
    /// Alone, nodes and GPUs are discovered from its series; more in [prometheus] of the config.
    #[arg(long, env = "PROMETHEUS_URL", value_name = "URL")]
    pub prometheus: Option<String>,

    /// Simulator: number of nodes.
    #[arg(long, env = "GPUPLANE_SIM_NODES", value_name = "N")]
    pub sim_nodes: Option<usize>,

    /// Simulator: GPUs per node (1-16).
    #[arg(long, env = "GPUPLANE_SIM_GPUS", value_name = "N", value_parser = clap::value_parser!(u8).range(1..=16))]
    pub sim_gpus: Option<u8>,

    /// Simulator: number of jobs kept (running, pending and history); 0 = automatic.
    #[arg(long, env = "GPUPLANE_SIM_JOBS", value_name = "N")]
    pub sim_jobs: Option<usize>,

    /// Simulator: random seed (the same seed gives the same cluster).
    #[arg(long, env = "GPUPLANE_SEED", value_name = "N")]
    pub seed: Option<u64>,

    /// Exit after drawing this many frames (for measuring time to first frame and memory).
    #[arg(long, value_name = "N")]
    pub exit_after_frames: Option<u64>,
}
