//! Per-job efficiency from the usage ledger: utilisation per GPU and weighted by GPU-hours for
//! the job (a per-job mean of per-GPU means misleads when GPUs differ), GPUs idle the whole
//! run, and notes from [`Rules`] with jobstats-like defaults.

pub use crate::backend::prom::jobstats::GpuTelemetry;
use crate::backend::prom::jobstats::{self, JobTelemetry};
use crate::model::Epoch;
use crate::model::evidence::Evidence;
use crate::store::{GpuInterval, JobRecord};
use std::collections::BTreeMap;

/// `[efficiency]`: when a note is written.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Rules {
    /// GPU utilisation (GPU-hour weighted, %) below which the note is red.
    pub util_red: f64,
    /// ... below which it is a warning.
    pub util_warn: f64,
    /// A GPU whose mean utilisation stays below this (%) all run is idle the whole run.
    pub idle_gpu: f64,
    /// Runs shorter than this (seconds) get no notes.
    pub min_run_s: i64,
    /// A finished job that used less than this (%) of its time limit gets a note.
    pub time_limit_low: f64,
}

impl Default for Rules {
    fn default() -> Self {
        Rules { util_red: 15.0, util_warn: 25.0, idle_gpu: 1.0, min_run_s: 300, time_limit_low: 10.0 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Red,
    Warn,
    Info,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Note {
    pub level: Level,
    pub text: String,
}

/// One GPU (or, for accounting history, a node's GPUs counted together) of a job.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GpuUse {
    pub node: String,
    /// The GPU's index; `None` when only counts were known.
    pub gpu: Option<u8>,
    pub gpus: u32,
    pub gpu_hours: f64,
    /// Mean utilisation (%) over the time it was measured; `None` without telemetry.
    pub util: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct JobEfficiency {
    pub id: u64,
    pub name: String,
    pub user: String,
    pub account: String,
    pub state: String,
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub run_s: i64,
    pub gpus: u32,
    pub gpu_model: Option<String>,
    pub nodes: Vec<String>,
    pub gpu_hours: f64,
    /// Utilisation (%) weighted by GPU-hours over the GPUs that were measured.
    pub util: Option<f64>,
    pub per_gpu: Vec<GpuUse>,
    /// GPUs (node:index) whose utilisation stayed under [`Rules::idle_gpu`] all run.
    pub idle_gpus: Vec<String>,
    /// The scheduler's time limit (s) and the part of it the run used (%).
    pub time_limit_s: Option<i64>,
    pub time_limit_used: Option<f64>,
    /// What Prometheus measured over the run (`None`: see `telemetry_missing`).
    pub telemetry: Option<Telemetry>,
    /// Why there is no telemetry (no Prometheus configured, no series, an error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry_missing: Option<String>,
    /// What the job's nodes were doing over the run, when its GPUs were idle.
    pub evidence: Option<Evidence>,
    /// Why there is no evidence (the GPUs were busy, no Prometheus, an error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence_missing: Option<String>,
    pub notes: Vec<Note>,
}

/// A job's figures from Prometheus: per GPU (or MIG slice) and for the job. Percentages are
/// 0–100; a figure without data is `None`, never 0.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Telemetry {
    /// `prometheus`, or `ledger` when the summary recorded at the job's end answers.
    pub source: String,
    /// When the ledger recorded it (a summary from the ledger).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_at: Option<Epoch>,
    /// How its GPUs were selected: by the `hpc_job` label or by placement.
    pub selected_by: String,
    pub start: Epoch,
    pub end: Epoch,
    /// The resolution of idle stretches, s.
    pub step_s: i64,
    /// Utilisation weighted by GPU-hours (a MIG slice weighs its share of a GPU).
    pub util: Option<f64>,
    pub sm_active: Option<f64>,
    pub tensor_active: Option<f64>,
    pub dram_active: Option<f64>,
    /// The highest framebuffer use of any one GPU or slice, and that GPU's size (MiB).
    pub mem_peak_mib: Option<f64>,
    pub mem_total_mib: Option<f64>,
    pub energy_kwh: Option<f64>,
    /// The job's mean power (its GPUs' means summed) and the highest one GPU drew (W).
    pub power_mean_w: Option<f64>,
    pub power_peak_w: Option<f64>,
    /// The longest idle stretch of any one GPU, s.
    pub idle_longest_s: Option<i64>,
    /// GPUs (node:index or node:index/slice) that never ran a process.
    pub never_ran: Vec<String>,
    pub gpus: Vec<GpuTelemetry>,
}

/// One GPU's sums: (GPUs, seconds held, utilisation × measured seconds, measured seconds).
type Sums = (u32, f64, f64, f64);
/// A stretch one GPU was held: from, to, the utilisation seen.
type Span = (Epoch, Epoch, Option<f32>);

/// The efficiency of a job as the ledger recorded it (a running job: until it last saw it).
/// Its GPU-hours are [`crate::model::held_gpu_seconds`] of its run, whatever the intervals
/// say; the intervals give the utilisation per GPU, clipped to the run (an interval that a
/// process closed after the job ended does not count past its end), each GPU's time counted
/// once (two processes' overlapping intervals, a node's counted GPUs beside its indexed ones).
pub fn job(r: &JobRecord, intervals: &[GpuInterval], rules: &Rules) -> JobEfficiency {
    let end = r.end.unwrap_or(r.last_seen);
    let run_s = r.start.map_or(0, |s| (end - s).max(0));
    let (lo, hi) = (r.start.unwrap_or(Epoch::MIN), end);
    // Nodes whose GPUs are known by index: their counted ("index unknown") intervals repeat them.
    let indexed: std::collections::HashSet<&str> =
        intervals.iter().filter(|i| i.gpu.is_some()).map(|i| i.node.as_str()).collect();
    let mut spans: BTreeMap<(String, Option<u8>), (u32, Vec<Span>)> = BTreeMap::new();
    for i in intervals.iter().filter(|i| i.gpu.is_some() || !indexed.contains(i.node.as_str())) {
        let (s, e) = (i.start.max(lo), i.end.min(hi));
        let v = spans.entry((i.node.clone(), i.gpu)).or_insert((i.gpus, Vec::new()));
        v.0 = v.0.max(i.gpus);
        if e > s {
            v.1.push((s, e, i.util.filter(|u| u.is_finite())));
        }
    }
    // Per GPU: GPUs, seconds held, utilisation × measured seconds, measured seconds; a stretch
    // two intervals cover counts once (the later-starting one gives what the first did not).
    let mut by: BTreeMap<(String, Option<u8>), Sums> = BTreeMap::new();
    for (k, (gpus, mut v)) in spans {
        v.sort_by_key(|x| (x.0, std::cmp::Reverse(x.1)));
        let e = by.entry(k).or_insert((gpus, 0.0, 0.0, 0.0));
        let mut covered = Epoch::MIN;
        for (s, end, util) in v {
            let s = s.max(covered);
            if end <= s {
                continue;
            }
            covered = end;
            let secs = (end - s) as f64 * f64::from(gpus);
            e.1 += secs;
            if let Some(u) = util {
                e.2 += f64::from(u) * secs;
                e.3 += secs;
            }
        }
    }
    let per_gpu: Vec<GpuUse> = by
        .into_iter()
        .map(|((node, gpu), (gpus, secs, usum, msecs))| GpuUse {
            node,
            gpu,
            gpus,
            gpu_hours: secs / 3600.0,
            util: (msecs > 0.0).then(|| usum / msecs),
        })
        .collect();
    let measured: f64 = per_gpu.iter().filter(|g| g.util.is_some()).map(|g| g.gpu_hours).sum();
    let util = if measured > 0.0 {
        Some(per_gpu.iter().filter_map(|g| g.util.map(|u| u * g.gpu_hours)).sum::<f64>() / measured)
    } else if r.useful_gpu_seconds > 0.0 {
        // A record without intervals: what it measured (a file from before measured
        // GPU-seconds held accounting's GPUs × run there, with nothing useful: not measured).
        crate::model::measured_util(r.gpu_seconds, r.useful_gpu_seconds)
    } else {
        None
    };
    let gpu_hours = crate::model::held_gpu_seconds(r.gpus, r.start, r.end, r.last_seen, lo, hi) / 3600.0;
    let idle_gpus: Vec<String> = per_gpu
        .iter()
        .filter(|g| g.gpu.is_some() && g.util.is_some_and(|u| u < rules.idle_gpu))
        .map(|g| format!("{}:{}", g.node, g.gpu.unwrap_or_default()))
        .collect();
    let time_limit_used = time_used(r, run_s);
    let notes = notes(&Seen { r, run_s, util, idle: &idle_gpus, time_used: time_limit_used, t: None }, rules);
    JobEfficiency {
        id: r.id,
        name: r.name.clone(),
        user: r.user.clone(),
        account: r.account.clone(),
        state: r.state.clone(),
        start: r.start,
        end: r.end,
        run_s,
        gpus: r.gpus,
        gpu_model: r.gpu_model.clone(),
        nodes: r.nodes.clone(),
        gpu_hours,
        util,
        per_gpu,
        idle_gpus,
        time_limit_s: r.time_limit,
        time_limit_used,
        telemetry: None,
        telemetry_missing: None,
        evidence: None,
        evidence_missing: None,
        notes,
    }
}

/// The part (%) of its time limit a finished job used.
fn time_used(r: &JobRecord, run_s: i64) -> Option<f64> {
    let limit = r.time_limit.filter(|l| *l > 0)?;
    r.end.map(|_| 100.0 * run_s as f64 / limit as f64)
}

/// The part of a whole GPU a MIG profile is: `[prices.share]` when it names it, else its
/// compute slices of seven (`3g.40gb`: 3/7).
pub fn slice_share(profile: &str, prices: &crate::model::PriceCard) -> f64 {
    let s = prices.share(profile);
    if s != 1.0 {
        return s;
    }
    profile
        .split_once('g')
        .and_then(|(n, _)| n.parse::<f64>().ok())
        .filter(|n| (1.0..=7.0).contains(n))
        .map_or(1.0, |n| n / 7.0)
}

/// Weighted mean of `(value, weight)` over the pairs with a value.
fn weighted(v: impl Iterator<Item = (Option<f64>, f64)>) -> Option<f64> {
    let (mut sum, mut w) = (0.0, 0.0);
    for (x, wt) in v {
        if let Some(x) = x.filter(|x| x.is_finite()) {
            sum += x * wt;
            w += wt;
        }
    }
    (w > 0.0).then(|| sum / w)
}

/// Adds what Prometheus measured over the run and writes the notes again from it.
pub fn with_telemetry(
    e: &mut JobEfficiency,
    r: &JobRecord,
    t: JobTelemetry,
    rules: &Rules,
    prices: &crate::model::PriceCard,
) {
    let weight = |g: &GpuTelemetry| g.mig_profile.as_deref().map_or(1.0, |p| slice_share(p, prices));
    let avg = |f: fn(&GpuTelemetry) -> Option<f64>| weighted(t.gpus.iter().map(|g| (f(g), weight(g))));
    let name = gpu_name;
    let peak = t
        .gpus
        .iter()
        .filter_map(|g| g.mem_peak_mib.map(|m| (m, g.mem_total_mib)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let sum = |f: fn(&GpuTelemetry) -> Option<f64>| {
        let v: Vec<f64> = t.gpus.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>())
    };
    let tel = Telemetry {
        source: "prometheus".into(),
        recorded_at: None,
        selected_by: t.selected_by,
        start: t.start,
        end: t.end,
        step_s: t.step_s,
        util: avg(|g| g.util),
        sm_active: avg(|g| g.sm_active),
        tensor_active: avg(|g| g.tensor_active),
        dram_active: avg(|g| g.dram_active),
        mem_peak_mib: peak.map(|p| p.0),
        mem_total_mib: peak.and_then(|p| p.1),
        energy_kwh: sum(|g| g.energy_kwh),
        power_mean_w: sum(|g| g.power_mean_w),
        power_peak_w: t.gpus.iter().filter_map(|g| g.power_peak_w).max_by(f64::total_cmp),
        idle_longest_s: t.gpus.iter().filter_map(|g| g.idle_longest_s).max(),
        never_ran: t.gpus.iter().filter(|g| g.never_ran == Some(true)).map(name).collect(),
        gpus: t.gpus,
    };
    e.telemetry = Some(tel);
    renote(e, r, rules);
}

/// A GPU (or MIG slice) as notes name it: `node:index`, `node:index/slice`.
fn gpu_name(g: &GpuTelemetry) -> String {
    match &g.mig_instance {
        Some(i) => format!("{}:{}/{i}", g.node, g.gpu),
        None => format!("{}:{}", g.node, g.gpu),
    }
}

/// GPUs that held memory and did nothing all run: a process had more than
/// [`jobstats::NO_PROCESS_MIB`] of framebuffer (so it is not "never ran a process"), and its
/// utilisation never rose to [`Rules::idle_gpu`] (its peak, or its mean when no peak was
/// read). As (GPU, memory peak MiB), for the note jobstats writes ("did not use 2 of 4").
pub fn held_idle(t: &Telemetry, rules: &Rules) -> Vec<(String, f64)> {
    t.gpus
        .iter()
        .filter(|g| g.never_ran != Some(true))
        .filter_map(|g| {
            let mem = g.mem_peak_mib.filter(|m| *m > jobstats::NO_PROCESS_MIB)?;
            let util = g.util_peak.or(g.util)?;
            (util < rules.idle_gpu).then(|| (gpu_name(g), mem))
        })
        .collect()
}

/// Writes the notes again from the figures `e` holds (the ledger's, Prometheus's, the nodes').
fn renote(e: &mut JobEfficiency, r: &JobRecord, rules: &Rules) {
    let t = e.telemetry.as_ref();
    let util = t.and_then(|t| t.util).or(e.util);
    let mut v =
        notes(&Seen { r, run_s: e.run_s, util, idle: &e.idle_gpus, time_used: e.time_limit_used, t }, rules);
    if let Some(ev) = &e.evidence
        && e.run_s >= rules.min_run_s
    {
        for f in &ev.findings {
            v.push(Note { level: Level::Warn, text: format!("beside the idle GPUs: {}", f.text) });
        }
    }
    e.notes = v;
}

/// Why the job's GPUs count as idle (utilisation under the warning threshold, GPUs that never
/// ran a process or sat idle all run), or `None` when they were busy.
pub fn idle_cause(e: &JobEfficiency, rules: &Rules) -> Option<String> {
    let t = e.telemetry.as_ref();
    if let Some(t) = t.filter(|t| !t.never_ran.is_empty()) {
        return Some(format!("{} GPU(s) never ran a process", t.never_ran.len()));
    }
    if let Some(held) = t.map(|t| held_idle(t, rules)).filter(|h| !h.is_empty()) {
        return Some(format!("{} GPU(s) held memory and did nothing", held.len()));
    }
    if t.is_none() && !e.idle_gpus.is_empty() {
        return Some(format!("{} GPU(s) idle the whole run", e.idle_gpus.len()));
    }
    let util = t.and_then(|t| t.util).or(e.util)?;
    (util < rules.util_warn).then(|| format!("GPU utilisation {util:.0}%"))
}

/// Adds the evidence seen on the job's nodes and writes the notes again with its findings.
pub fn with_evidence(e: &mut JobEfficiency, r: &JobRecord, ev: Evidence, rules: &Rules) {
    e.evidence = Some(ev);
    e.evidence_missing = None;
    renote(e, r, rules);
}

/// What the ledger keeps of a job's Prometheus figures at its end, so that its report still
/// answers after Prometheus has forgotten the run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub telemetry: Telemetry,
    pub evidence: Option<Evidence>,
    pub evidence_missing: Option<String>,
}

impl Summary {
    /// The summary of `e`, when Prometheus answered for it.
    pub fn of(e: &JobEfficiency) -> Option<Summary> {
        let t = e.telemetry.as_ref().filter(|t| t.source == "prometheus")?;
        Some(Summary {
            telemetry: t.clone(),
            evidence: e.evidence.clone(),
            evidence_missing: e.evidence_missing.clone(),
        })
    }
}

/// Puts a summary the ledger recorded at `at` in place of Prometheus's figures.
pub fn from_ledger(e: &mut JobEfficiency, r: &JobRecord, s: Summary, at: Epoch, rules: &Rules) {
    let mut t = s.telemetry;
    t.source = "ledger".into();
    t.recorded_at = Some(at);
    e.telemetry = Some(t);
    e.telemetry_missing = None;
    e.evidence = s.evidence;
    e.evidence_missing = s.evidence_missing;
    renote(e, r, rules);
}

/// What the notes are written from.
struct Seen<'a> {
    r: &'a JobRecord,
    run_s: i64,
    /// Utilisation weighted by GPU-hours: Prometheus's when it answered, else the ledger's.
    util: Option<f64>,
    /// GPUs the ledger saw under the idle threshold all run.
    idle: &'a [String],
    time_used: Option<f64>,
    t: Option<&'a Telemetry>,
}

/// The smallest MIG slice (compute sevenths, memory eighths) that holds a whole-GPU job's
/// utilisation and memory peak, as `(compute slices, memory eighths)`.
fn mig_fit(util: f64, peak_mib: f64, total_mib: f64) -> Option<(u32, u32)> {
    [(1, 1), (2, 2), (3, 4), (4, 4)]
        .into_iter()
        .find(|&(c, m)| util <= 100.0 * f64::from(c) / 7.0 && peak_mib <= total_mib * f64::from(m) / 8.0)
}

fn notes(ev: &Seen<'_>, rules: &Rules) -> Vec<Note> {
    let r = ev.r;
    let mut v = Vec::new();
    let note = |level, text: String| Note { level, text };
    if ev.run_s < rules.min_run_s {
        v.push(note(Level::Info, format!("ran {}: too short for advice", crate::clock::dur(ev.run_s))));
        return v;
    }
    match ev.util {
        None => v.push(note(Level::Info, "no GPU utilisation was recorded for this job".into())),
        Some(u) if u < rules.util_red => v.push(note(
            Level::Red,
            format!("GPU utilisation {u:.0}% (weighted by GPU-hours): request fewer GPUs, or a MIG slice"),
        )),
        Some(u) if u < rules.util_warn => v.push(note(
            Level::Warn,
            format!("GPU utilisation {u:.0}% (weighted by GPU-hours): check the data loader and batch size"),
        )),
        _ => {}
    }
    // Idle GPUs: Prometheus's evidence when it answered (no utilisation and no memory all
    // run), else the ledger's (utilisation under the threshold all run).
    let (idle, what): (Vec<String>, &str) = match ev.t {
        Some(t) => (t.never_ran.clone(), "never ran a process (no utilisation, no GPU memory all run)"),
        None => (ev.idle.to_vec(), "idle the whole run"),
    };
    if !idle.is_empty() {
        v.push(note(Level::Red, format!("{} allocated GPU(s) {what}: {}", idle.len(), idle.join(", "))));
    }
    // GPUs a process held memory on and never used (jobstats: "did not use 2 of 4").
    let held = ev.t.map(|t| held_idle(t, rules)).unwrap_or_default();
    if !held.is_empty() {
        let unused = idle.len() + held.len();
        let of = (r.gpus as usize).max(ev.t.map_or(0, |t| t.gpus.len()));
        for (gpu, mib) in &held {
            v.push(note(
                Level::Red,
                format!(
                    "GPU {gpu} held {:.1} GiB and did nothing all run (utilisation under {}%): did not use {unused} of {of} GPUs",
                    mib / 1024.0,
                    rules.idle_gpu
                ),
            ));
        }
    }
    if (!idle.is_empty() || !held.is_empty()) && r.nodes.len() > 1 {
        v.push(note(
            Level::Warn,
            format!("multi-node job ({} nodes) with idle GPUs: fewer nodes would do", r.nodes.len()),
        ));
    }
    if let Some(p) = ev.time_used.filter(|p| *p < rules.time_limit_low) {
        let limit = r.time_limit.unwrap_or_default();
        v.push(note(
            Level::Warn,
            format!(
                "used {p:.0}% of its time limit ({} of {}): a shorter limit starts sooner",
                crate::clock::dur(ev.run_s),
                crate::clock::dur(limit)
            ),
        ));
    }
    let whole_gpu = ev.t.is_none_or(|t| t.gpus.iter().all(|g| g.mig_instance.is_none()));
    if r.gpus == 1 && whole_gpu && ev.util.is_some_and(|u| u < rules.util_red) {
        let mem = ev.t.and_then(|t| Some((t.mem_peak_mib?, t.mem_total_mib?)));
        match (ev.util, mem) {
            (Some(u), Some((peak, total))) => {
                if let Some((c, m)) = mig_fit(u, peak, total) {
                    v.push(note(
                        Level::Info,
                        format!(
                            "it would fit a MIG slice of {c}/7 compute and {m}/8 memory ({c}g): memory peak {:.1} GiB of {:.1} GiB",
                            peak / 1024.0,
                            total / 1024.0
                        ),
                    ));
                }
            }
            _ => v.push(note(
                Level::Info,
                "by utilisation it would fit a MIG slice (GPU memory peak unknown: check it)".into(),
            )),
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(gpus: u32, nodes: &[&str], run: i64) -> JobRecord {
        JobRecord {
            id: 7,
            name: "train".into(),
            user: "alice".into(),
            account: "vision".into(),
            queue: "gpu".into(),
            state: "COMPLETED".into(),
            submit: 0,
            start: Some(0),
            end: Some(run),
            gpus,
            gpu_model: Some("H100".into()),
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            exit_reason: None,
            gpu_seconds: f64::from(gpus) * run as f64,
            useful_gpu_seconds: 0.0,
            mean_util: None,
            time_limit: None,
            first_seen: 0,
            last_seen: run,
        }
    }

    fn iv(node: &str, gpu: u8, start: i64, end: i64, util: f32) -> GpuInterval {
        GpuInterval { job: 7, node: node.into(), gpu: Some(gpu), gpus: 1, start, end, util: Some(util) }
    }

    #[test]
    fn utilisation_is_weighted_by_gpu_hours_and_idle_gpus_are_named() {
        // GPU 0: 90 % for 2 h; GPU 1: 0 % for 2 h; GPU 2: 60 % for 1 h (then left).
        let ivs = [iv("n1", 0, 0, 7200, 90.0), iv("n2", 1, 0, 7200, 0.0), iv("n2", 2, 0, 3600, 60.0)];
        let e = job(&rec(3, &["n1", "n2"], 7200), &ivs, &Rules::default());
        let want = (90.0 * 2.0 + 0.0 + 60.0) / 5.0;
        assert!((e.util.unwrap() - want).abs() < 1e-9, "{:?}", e.util);
        assert_eq!(e.idle_gpus, vec!["n2:1".to_string()]);
        // GPU-hours are what the scheduler allocated: 3 GPUs for the 2 h run.
        assert!((e.gpu_hours - 6.0).abs() < 1e-9);
        let held: f64 = e.per_gpu.iter().map(|g| g.gpu_hours).sum();
        assert!((held - 5.0).abs() < 1e-9, "the intervals' GPU-hours");
        assert!(e.notes.iter().any(|n| n.level == Level::Red && n.text.contains("idle the whole run")));
        assert!(e.notes.iter().any(|n| n.text.contains("multi-node")));
        // 48 % is neither red nor a warning.
        assert!(!e.notes.iter().any(|n| n.text.contains("GPU utilisation")), "{:?}", e.notes);
    }

    #[test]
    fn thresholds_and_short_runs() {
        let r = rec(1, &["n1"], 3600);
        let e = job(&r, &[iv("n1", 0, 0, 3600, 10.0)], &Rules::default());
        assert!(e.notes.iter().any(|n| n.level == Level::Red && n.text.contains("10%")), "{:?}", e.notes);
        assert!(e.notes.iter().any(|n| n.text.contains("MIG slice")));
        let e = job(&r, &[iv("n1", 0, 0, 3600, 20.0)], &Rules::default());
        assert!(e.notes.iter().any(|n| n.level == Level::Warn), "{:?}", e.notes);
        let short = rec(1, &["n1"], 200);
        let e = job(&short, &[iv("n1", 0, 0, 200, 0.0)], &Rules::default());
        assert_eq!(e.notes.len(), 1);
        assert!(e.notes[0].text.contains("too short"), "{:?}", e.notes);
    }

    fn gpu(node: &str, g: &str, util: f64, mem: f64) -> GpuTelemetry {
        GpuTelemetry {
            node: node.into(),
            gpu: g.into(),
            util: Some(util),
            util_peak: Some(util),
            mem_peak_mib: Some(mem),
            mem_total_mib: Some(81920.0),
            never_ran: Some(util < 1.0 && mem <= 300.0),
            ..Default::default()
        }
    }

    fn tel(gpus: Vec<GpuTelemetry>) -> JobTelemetry {
        JobTelemetry { selected_by: "placement".into(), start: 0, end: 7200, step_s: 60, gpus, queries: 13 }
    }

    #[test]
    fn prometheus_figures_weigh_slices_by_their_share_and_name_gpus_that_never_ran() {
        let r = rec(3, &["n1", "n2"], 7200);
        let mut e = job(&r, &[], &Rules::default());
        let mut slice = gpu("n2", "7", 70.0, 9000.0);
        slice.mig_instance = Some("9".into());
        slice.mig_profile = Some("1g.10gb".into());
        let t = tel(vec![gpu("n1", "0", 50.0, 40000.0), gpu("n1", "1", 0.0, 0.0), slice]);
        with_telemetry(&mut e, &r, t, &Rules::default(), &crate::model::PriceCard::default());
        let t = e.telemetry.as_ref().unwrap();
        // Two whole GPUs and a seventh of one.
        let want = (50.0 + 0.0 + 70.0 / 7.0) / (2.0 + 1.0 / 7.0);
        assert!((t.util.unwrap() - want).abs() < 1e-9, "{:?} vs {want}", t.util);
        assert_eq!(t.never_ran, vec!["n1:1".to_string()]);
        assert_eq!(t.mem_peak_mib, Some(40000.0));
        assert_eq!(t.energy_kwh, None, "no energy figure: missing, not 0");
        assert!(
            e.notes.iter().any(|n| n.level == Level::Red
                && n.text.contains("never ran a process")
                && n.text.ends_with(": n1:1")),
            "{:?}",
            e.notes
        );
        assert!(e.notes.iter().any(|n| n.text.contains("multi-node")));
    }

    #[test]
    fn time_limit_use_and_a_mig_fit_by_memory_peak() {
        let mut r = rec(1, &["n1"], 3600);
        r.time_limit = Some(24 * 3600);
        let mut e = job(&r, &[], &Rules::default());
        assert!((e.time_limit_used.unwrap() - 100.0 / 24.0).abs() < 1e-9);
        assert!(e.notes.iter().any(|n| n.text.contains("used 4% of its time limit")), "{:?}", e.notes);
        // 10 % busy with a 6 GiB peak of 80 GiB: a 1g slice holds it.
        with_telemetry(
            &mut e,
            &r,
            tel(vec![gpu("n1", "0", 10.0, 6144.0)]),
            &Rules::default(),
            &Default::default(),
        );
        assert!(e.notes.iter().any(|n| n.text.contains("1/7 compute and 1/8 memory")), "{:?}", e.notes);
        // The same utilisation with a 60 GiB peak fits no slice smaller than the GPU.
        with_telemetry(
            &mut e,
            &r,
            tel(vec![gpu("n1", "0", 10.0, 61440.0)]),
            &Rules::default(),
            &Default::default(),
        );
        assert!(!e.notes.iter().any(|n| n.text.contains("would fit")), "{:?}", e.notes);
        assert_eq!(slice_share("3g.40gb", &Default::default()), 3.0 / 7.0);
        // A running job has no time-limit use yet.
        r.end = None;
        assert_eq!(job(&r, &[], &Rules::default()).time_limit_used, None);
    }

    #[test]
    fn evidence_beside_idle_gpus_becomes_a_note_and_a_ledger_summary_says_when() {
        use crate::model::evidence::{Evidence, EvidenceKind, Finding};
        let r = rec(2, &["n1"], 3600);
        let mut e = job(&r, &[], &Rules::default());
        assert_eq!(idle_cause(&e, &Rules::default()), None, "nothing measured: nothing to explain");
        // Busy GPUs: nothing to explain; a GPU that never ran a process: evidence is looked for.
        for (second, mem, cause) in [(80.0, 40000.0, None), (0.0, 0.0, Some("1 GPU(s) never ran a process"))]
        {
            let t = tel(vec![gpu("n1", "0", 90.0 - second, 40000.0), gpu("n1", "1", second, mem)]);
            with_telemetry(&mut e, &r, t, &Rules::default(), &Default::default());
            assert_eq!(idle_cause(&e, &Rules::default()).as_deref(), cause);
        }
        let text = "storage at 98% of its 2.0 GB/s ceiling for 20m00s of the run on n1".to_string();
        let ev = Evidence {
            findings: vec![Finding {
                kind: EvidenceKind::Storage,
                node: "n1".into(),
                value: 1.96e9,
                ceiling: Some(2.0e9),
                seconds: Some(1200),
                text: text.clone(),
            }],
            ..Default::default()
        };
        with_evidence(&mut e, &r, ev, &Rules::default());
        assert!(
            e.notes
                .iter()
                .any(|n| n.level == Level::Warn && n.text == format!("beside the idle GPUs: {text}")),
            "{:?}",
            e.notes
        );
        // The summary the ledger keeps, read back: the same figures, said to be the ledger's.
        let s = Summary::of(&e).expect("Prometheus answered");
        let json = serde_json::to_string(&s).unwrap();
        let mut back = job(&r, &[], &Rules::default());
        from_ledger(&mut back, &r, serde_json::from_str(&json).unwrap(), 1234, &Rules::default());
        let t = back.telemetry.as_ref().unwrap();
        assert_eq!((t.source.as_str(), t.recorded_at), ("ledger", Some(1234)));
        assert_eq!(t.util, e.telemetry.as_ref().unwrap().util);
        assert_eq!(back.evidence, e.evidence);
        assert_eq!(back.notes, e.notes);
        assert!(Summary::of(&back).is_none(), "a summary is not kept again from itself");
    }
}
