//! The fixed catalogue the simulator draws from: node pools and their hardware, teams, users
//! and job templates. Plain data, no randomness.

/// How the GPUs of one node are wired together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// NVSwitch box: every GPU reaches every other over `NV<n>`.
    NvSwitch(u8),
    /// Two NVLink islands (one per CPU socket), `NV<n>` inside, `SYS` across.
    Islands(u8),
    /// PCIe only: `PIX` within a switch pair, `NODE`/`SYS` otherwise.
    Pcie,
}

/// One node pool (Slurm partition) and the hardware of its nodes.
#[derive(Debug)]
pub(super) struct PoolSpec {
    pub name: &'static str,
    pub gpu_model: &'static str,
    /// `nvidia.com/gpu.product` as GPU feature discovery writes it.
    pub product_label: &'static str,
    pub machine: &'static str,
    pub gpu_mem_mib: u32,
    pub power_limit_w: u16,
    pub idle_w: u16,
    pub cpus: u32,
    pub mem_mib: u64,
    pub ports: u8,
    pub shape: Shape,
    pub max_time_s: i64,
    /// Largest job (GPUs) this pool takes; debug is for small, short work.
    pub max_job_gpus: Option<u32>,
    pub max_run_s: Option<i64>,
}

pub(super) const H100: usize = 0;
pub(super) const H200: usize = 1;
pub(super) const A100: usize = 2;
pub(super) const DEBUG: usize = 3;
pub(super) const NPOOLS: usize = 4;

const DAY: i64 = 86_400;
const HOUR: i64 = 3_600;
const MIN: i64 = 60;

pub(super) const POOLS: [PoolSpec; NPOOLS] = [
    PoolSpec {
        name: "h100",
        gpu_model: "NVIDIA H100 80GB HBM3",
        product_label: "NVIDIA-H100-80GB-HBM3",
        machine: "DGX-H100",
        gpu_mem_mib: 81_559,
        power_limit_w: 700,
        idle_w: 72,
        cpus: 224,
        mem_mib: 2 * 1024 * 1024,
        ports: 8,
        shape: Shape::NvSwitch(18),
        max_time_s: 14 * DAY,
        max_job_gpus: None,
        max_run_s: None,
    },
    PoolSpec {
        name: "h200",
        gpu_model: "NVIDIA H200",
        product_label: "NVIDIA-H200",
        machine: "DGX-H200",
        gpu_mem_mib: 143_771,
        power_limit_w: 700,
        idle_w: 76,
        cpus: 224,
        mem_mib: 2 * 1024 * 1024,
        ports: 8,
        shape: Shape::NvSwitch(18),
        max_time_s: 14 * DAY,
        max_job_gpus: None,
        max_run_s: None,
    },
    PoolSpec {
        name: "a100",
        gpu_model: "NVIDIA A100-SXM4-80GB",
        product_label: "NVIDIA-A100-SXM4-80GB",
        machine: "HGX-A100",
        gpu_mem_mib: 81_920,
        power_limit_w: 400,
        idle_w: 55,
        cpus: 256,
        mem_mib: 1024 * 1024,
        ports: 4,
        shape: Shape::Islands(12),
        max_time_s: 7 * DAY,
        max_job_gpus: None,
        max_run_s: None,
    },
    PoolSpec {
        name: "debug",
        gpu_model: "NVIDIA L40S",
        product_label: "NVIDIA-L40S",
        machine: "SYS-421GE-TNRT",
        gpu_mem_mib: 46_068,
        power_limit_w: 350,
        idle_w: 34,
        cpus: 128,
        mem_mib: 512 * 1024,
        ports: 4,
        shape: Shape::Pcie,
        max_time_s: 2 * HOUR,
        max_job_gpus: Some(2),
        max_run_s: Some(90 * MIN),
    },
];

/// MIG layout of a MIG-enabled A100 80GB (7 compute slices, 80 GB).
pub(super) const MIG_LAYOUT: [&str; 4] = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"];

pub(super) const DRIVER: &str = "550.127.08";
pub(super) const CUDA: &str = "12.4";
/// The older driver a couple of nodes were left on (version drift).
pub(super) const DRIFT_DRIVER: &str = "535.183.06";
pub(super) const DRIFT_CUDA: &str = "12.2";

pub(super) const ZONES: [&str; 3] = ["us-central1-a", "us-central1-b", "us-central1-c"];
/// Nodes per rack.
pub(super) const RACK_NODES: usize = 4;

pub(super) struct TeamSpec {
    pub name: &'static str,
    pub users: &'static [&'static str],
    /// Slurm multifactor priority range of the team's jobs.
    pub prio: (u32, u32),
    /// Nominal quota as a percentage of all GPUs (the over-quota team's is derived instead).
    pub quota_pct: u32,
}

pub(super) const LLM: usize = 0;
pub(super) const VISION: usize = 1;
pub(super) const SPEECH: usize = 2;
pub(super) const INFERENCE: usize = 3;
pub(super) const RESEARCH: usize = 4;

pub(super) const TEAMS: [TeamSpec; 5] = [
    TeamSpec {
        name: "llm-pretrain",
        users: &["alice", "bob", "carol"],
        prio: (8_000, 12_000),
        quota_pct: 20,
    },
    TeamSpec { name: "vision", users: &["dave", "erin"], prio: (5_000, 8_000), quota_pct: 20 },
    TeamSpec { name: "speech", users: &["frank", "grace"], prio: (4_000, 7_000), quota_pct: 10 },
    TeamSpec { name: "inference", users: &["heidi", "ivan"], prio: (8_500, 11_000), quota_pct: 15 },
    TeamSpec {
        name: "research",
        users: &["judy", "researcher", "oscar"],
        prio: (3_000, 6_000),
        quota_pct: 20,
    },
];

/// Every user, flattened; jobs store an index into this.
pub(super) const USERS: [&str; 12] = [
    "alice",
    "bob",
    "carol",
    "dave",
    "erin",
    "frank",
    "grace",
    "heidi",
    "ivan",
    "judy",
    "researcher",
    "oscar",
];

pub(super) fn user_index(name: &str) -> u8 {
    // Only called with the simulator's own names; an unknown one falls back
    // to the first user rather than stopping the console.
    let i = USERS.iter().position(|u| *u == name);
    debug_assert!(i.is_some(), "unknown simulated user {name}");
    i.unwrap_or(0) as u8
}

/// A kind of job a team submits.
pub(super) struct Template {
    pub name: &'static str,
    pub team: usize,
    /// Pools it runs in (bit per pool).
    pub pools: u8,
    /// GPU counts as on an 8-GPU node; above 8 they mean whole nodes (see `scale_size`).
    pub sizes: &'static [u32],
    pub min_s: i64,
    pub max_s: i64,
    /// Typical utilisation range while running.
    pub util: (u8, u8),
    pub weight: u32,
}

const fn bit(p: usize) -> u8 {
    1 << p
}

const HX: u8 = bit(H100) | bit(H200);

pub(super) const TEMPLATES: &[Template] = &[
    // llm-pretrain
    t("llama3-70b-sft", LLM, HX, &[8, 16, 32], 2 * HOUR, 16 * HOUR, (82, 97), 6),
    t("llama3-8b-dpo", LLM, HX, &[8, 16], HOUR, 6 * HOUR, (75, 95), 5),
    t("mixtral-8x7b-pretrain", LLM, HX, &[32, 64], DAY, 3 * DAY, (85, 98), 2),
    t("tokenizer-eval", LLM, HX, &[1, 2], 10 * MIN, 40 * MIN, (55, 80), 3),
    // vision
    t("vit-h-pretrain", VISION, bit(H100) | bit(A100), &[16, 32], 6 * HOUR, 2 * DAY, (80, 96), 3),
    t("sam2-finetune", VISION, bit(H100) | bit(A100), &[4, 8], HOUR, 8 * HOUR, (70, 92), 5),
    t("clip-l14-train", VISION, bit(H100) | bit(A100), &[8, 16], 3 * HOUR, DAY, (78, 95), 4),
    t("dinov2-eval", VISION, bit(A100) | bit(DEBUG), &[1, 2], 5 * MIN, 30 * MIN, (60, 85), 4),
    // speech
    t("whisper-ft", SPEECH, bit(A100), &[2, 4, 8], 30 * MIN, 6 * HOUR, (70, 92), 6),
    t("tts-vits-train", SPEECH, bit(A100), &[1, 2, 4], HOUR, 10 * HOUR, (60, 88), 4),
    t("wav2vec2-pretrain", SPEECH, bit(A100), &[8, 16], 4 * HOUR, 2 * DAY, (80, 95), 2),
    // inference
    t("eval-harness", INFERENCE, HX | bit(DEBUG), &[1, 2, 4, 8], 5 * MIN, 45 * MIN, (60, 90), 7),
    t("vllm-bench", INFERENCE, bit(H200) | bit(H100), &[1, 2, 8], 10 * MIN, HOUR, (65, 95), 4),
    t("llama3-70b-serve-canary", INFERENCE, bit(H200), &[4, 8], HOUR, DAY, (60, 85), 3),
    // research
    t("nccl-acceptance", RESEARCH, HX, &[8, 16], 3 * MIN, 15 * MIN, (88, 99), 3),
    t("moe-ablation", RESEARCH, bit(H100) | bit(A100), &[4, 8], 30 * MIN, 5 * HOUR, (70, 93), 5),
    t("flash-attn-bench", RESEARCH, bit(H100) | bit(DEBUG), &[1], 5 * MIN, 20 * MIN, (85, 99), 3),
    t("diffusion-dit-xl", RESEARCH, bit(H100) | bit(A100), &[8, 16], 3 * HOUR, DAY, (80, 96), 3),
    t("rl-sweep", RESEARCH, bit(H100) | bit(DEBUG) | bit(A100), &[1, 2], 20 * MIN, 3 * HOUR, (60, 90), 4),
];

#[allow(clippy::too_many_arguments)]
const fn t(
    name: &'static str,
    team: usize,
    pools: u8,
    sizes: &'static [u32],
    min_s: i64,
    max_s: i64,
    util: (u8, u8),
    weight: u32,
) -> Template {
    Template { name, team, pools, sizes, min_s, max_s, util, weight }
}

/// Names of the planted and long-running jobs (not drawn at random).
pub(super) const ANCHOR_NAMES: [&str; 2] = ["llama3-405b-pretrain", "mixtral-8x22b-pretrain"];
pub(super) const IDLE_JOB_NAME: &str = "sam2-finetune-dev";
pub(super) const DEMO_JOB_NAME: &str = "llama3-8b-ablation";
pub(super) const BLOCKER_JOB_NAME: &str = "llama3-405b-pretrain";
pub(super) const DRAIN_JOB_NAME: &str = "clip-l14-train";
pub(super) const REQNODE_JOB_NAME: &str = "nccl-acceptance";
pub(super) const NODEFAIL_JOB_NAME: &str = "llama3-70b-sft";

/// A template size on a node with `gpn` GPUs: up to 8 is a single-node job (capped at the node);
/// above 8 it is `size / 8` whole nodes.
pub(super) fn scale_size(size: u32, gpn: u32) -> u32 {
    if size <= 8 { size.min(gpn) } else { (size / 8) * gpn }
}

/// Templates a pool runs, with their weights.
pub(super) fn templates_for(pool: usize) -> Vec<(u16, u32)> {
    TEMPLATES
        .iter()
        .enumerate()
        .filter(|(_, t)| t.pools & bit(pool) != 0)
        .map(|(i, t)| (i as u16, t.weight))
        .collect()
}

/// Extra template-like entries for jobs with fixed names; their index lies past `TEMPLATES`.
pub(super) const NAMED: [(&str, usize); 7] = [
    (ANCHOR_NAMES[0], LLM),
    (ANCHOR_NAMES[1], LLM),
    (IDLE_JOB_NAME, VISION),
    (DEMO_JOB_NAME, RESEARCH),
    (DRAIN_JOB_NAME, VISION),
    (REQNODE_JOB_NAME, RESEARCH),
    (NODEFAIL_JOB_NAME, LLM),
];

/// Name and team of a job's template index (a `TEMPLATES` index or a `NAMED` one after it).
pub(super) fn job_kind(tpl: u16) -> (&'static str, usize) {
    let i = usize::from(tpl);
    match TEMPLATES.get(i) {
        Some(t) => (t.name, t.team),
        None => NAMED[i - TEMPLATES.len()],
    }
}

pub(super) fn named(name: &str) -> u16 {
    let i = NAMED.iter().position(|(n, _)| *n == name);
    debug_assert!(i.is_some(), "unknown named job {name}");
    (TEMPLATES.len() + i.unwrap_or(0)) as u16
}
