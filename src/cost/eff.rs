//! Per-job efficiency from the usage ledger: utilisation per GPU and weighted by GPU-hours for
//! the job (a per-job mean of per-GPU means misleads when GPUs differ), GPUs idle the whole
//! run, and notes from [`Rules`] with jobstats-like defaults.

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
}

impl Default for Rules {
    fn default() -> Self {
        Rules { util_red: 15.0, util_warn: 25.0, idle_gpu: 1.0, min_run_s: 300 }
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
    pub notes: Vec<Note>,
}

/// One GPU's sums: (GPUs, seconds held, utilisation × measured seconds, measured seconds).
type Sums = (u32, f64, f64, f64);

/// The efficiency of a job as the ledger recorded it (a running job: until it last saw it).
pub fn job(r: &JobRecord, intervals: &[GpuInterval], rules: &Rules) -> JobEfficiency {
    let end = r.end.unwrap_or(r.last_seen);
    let run_s = r.start.map_or(0, |s| (end - s).max(0));
    // Per GPU: GPUs, seconds held, utilisation × measured seconds, measured seconds.
    let mut by: BTreeMap<(String, Option<u8>), Sums> = BTreeMap::new();
    for i in intervals {
        let secs = (i.end - i.start).max(0) as f64 * f64::from(i.gpus);
        let e = by.entry((i.node.clone(), i.gpu)).or_insert((i.gpus, 0.0, 0.0, 0.0));
        e.0 = e.0.max(i.gpus);
        e.1 += secs;
        if let Some(u) = i.util.filter(|u| u.is_finite()) {
            e.2 += f64::from(u) * secs;
            e.3 += secs;
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
    } else if r.gpu_seconds > 0.0 && r.useful_gpu_seconds > 0.0 {
        Some(100.0 * r.useful_gpu_seconds / r.gpu_seconds)
    } else {
        None
    };
    let held: f64 = per_gpu.iter().map(|g| g.gpu_hours).sum();
    let gpu_hours = if held > 0.0 { held } else { r.gpu_seconds / 3600.0 };
    let idle_gpus: Vec<String> = per_gpu
        .iter()
        .filter(|g| g.gpu.is_some() && g.util.is_some_and(|u| u < rules.idle_gpu))
        .map(|g| format!("{}:{}", g.node, g.gpu.unwrap_or_default()))
        .collect();
    let notes = notes(r, run_s, util, &idle_gpus, rules);
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
        notes,
    }
}

fn notes(r: &JobRecord, run_s: i64, util: Option<f64>, idle: &[String], rules: &Rules) -> Vec<Note> {
    let mut v = Vec::new();
    let note = |level, text: String| Note { level, text };
    if run_s < rules.min_run_s {
        v.push(note(Level::Info, format!("ran {}: too short for advice", crate::clock::dur(run_s))));
        return v;
    }
    match util {
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
    if !idle.is_empty() {
        v.push(note(
            Level::Red,
            format!("{} allocated GPU(s) idle the whole run: {}", idle.len(), idle.join(", ")),
        ));
        if r.nodes.len() > 1 {
            v.push(note(
                Level::Warn,
                format!("multi-node job ({} nodes) with idle GPUs: fewer nodes would do", r.nodes.len()),
            ));
        }
    }
    if r.gpus == 1 && util.is_some_and(|u| u < rules.util_red) {
        v.push(note(
            Level::Info,
            "by utilisation it would fit a MIG slice (GPU memory is not in the ledger: check it)".into(),
        ));
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
        assert!((e.gpu_hours - 5.0).abs() < 1e-9);
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
}
