//! Per-job efficiency from Prometheus, as jobstats reports it: for one job's GPUs over its run,
//! utilisation (on a MIG slice, `GR_ENGINE_ACTIVE` of the slice, never the whole GPU's
//! utilisation field), DCGM profiling activity when exported, GPU memory peak against its size,
//! power and energy, and the longest idle stretch.
//!
//! A job's GPUs are selected by dcgm-exporter's `hpc_job` label when its series carry it (exact,
//! MIG slices included), else by placement: the nodes and GPU indices the ledger recorded.
//! Means, peaks and energy are instant queries over the run (`avg_over_time(m[run])` at the
//! end), one value per GPU whatever the run's length; idle stretches come from one
//! `query_range` of `max_over_time(util[2 × step])`, its step chosen so that a series has at most
//! [`MAX_POINTS`] points. A figure that has no data is `None`, never 0.

use super::api::ResultType;
use super::client::{Body, PromClient, PromError};
use super::config::PromConfig;
use super::focus::{job_terms, quoted};
use crate::model::Text;
use std::collections::BTreeMap;

/// The most points one series of the idle-stretch range query has.
pub const MAX_POINTS: i64 = 10_000;
/// The finest step of that query, s: a sample per step at common scrape intervals.
pub const MIN_STEP_S: i64 = 60;

pub use crate::model::jobstats::{GpuTelemetry, JobSelect, JobTelemetry, NO_PROCESS_MIB};

/// The idle-stretch step for a run of `span` seconds: at least [`MIN_STEP_S`], at most
/// [`MAX_POINTS`] points.
pub fn step_for(span: i64) -> i64 {
    let span = span.max(1);
    MIN_STEP_S.max((span + MAX_POINTS - 1) / MAX_POINTS)
}

/// The series selectors (inside `{}`) that pick a job's GPUs: one per host label and term.
/// `None` when the placement cannot be selected (custom host regex, no GPUs).
pub fn placement(cfg: &PromConfig, gpus: &[(Text, u8)]) -> Option<Vec<String>> {
    let terms = job_terms(cfg, gpus).filter(|t| !t.is_empty())?;
    let g = &cfg.labels.gpu;
    let mut out = Vec::new();
    for (re, gs) in terms {
        for h in &cfg.labels.gpu_host {
            out.push(join(&[&cfg.selector, &format!("{h}=~\"{}\"", quoted(&re)), &format!("{g}=~\"{gs}\"")]));
        }
    }
    Some(out)
}

/// The selector of a job's series by dcgm-exporter's `hpc_job` label.
pub fn by_label(cfg: &PromConfig, id: u64) -> Vec<String> {
    vec![join(&[&cfg.selector, &format!("{}=\"{id}\"", cfg.labels.hpc_job)])]
}

fn join(parts: &[&str]) -> String {
    parts.iter().filter(|p| !p.is_empty()).copied().collect::<Vec<_>>().join(",")
}

/// The labels answers are grouped by: host labels, GPU index, MIG instance and profile.
fn by(cfg: &PromConfig) -> String {
    let l = &cfg.labels;
    let mut v: Vec<&str> = l.gpu_host.iter().map(String::as_str).collect();
    v.extend([l.gpu.as_str(), l.mig_instance.as_str(), l.mig_profile.as_str()]);
    v.join(", ")
}

/// What each instant query measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Figure {
    Util,
    UtilPeak,
    Gr,
    GrPeak,
    Sm,
    Tensor,
    Dram,
    MemPeak,
    MemTotal,
    Power,
    PowerPeak,
    Energy,
}

pub const FIGURES: [Figure; 12] = [
    Figure::Util,
    Figure::UtilPeak,
    Figure::Gr,
    Figure::GrPeak,
    Figure::Sm,
    Figure::Tensor,
    Figure::Dram,
    Figure::MemPeak,
    Figure::MemTotal,
    Figure::Power,
    Figure::PowerPeak,
    Figure::Energy,
];

/// The instant query (evaluated at the run's end) of a figure over a run of `span` s.
pub fn instant(cfg: &PromConfig, sel: &[String], f: Figure, span: i64, step: i64) -> String {
    let m = &cfg.metrics;
    let w = format!("{}s", span.max(1));
    let over = |func: &str, metric: &str| {
        let terms: Vec<String> = sel.iter().map(|s| format!("{func}({metric}{{{s}}}[{w}])")).collect();
        format!("max by ({}) ({})", by(cfg), terms.join(" or "))
    };
    match f {
        Figure::Util => over("avg_over_time", &m.gpu_util),
        Figure::UtilPeak => over("max_over_time", &m.gpu_util),
        Figure::Gr => format!("100 * {}", over("avg_over_time", &m.gr_engine_active)),
        Figure::GrPeak => format!("100 * {}", over("max_over_time", &m.gr_engine_active)),
        Figure::Sm => format!("100 * {}", over("avg_over_time", &m.sm_active)),
        Figure::Tensor => format!("100 * {}", over("avg_over_time", &m.tensor_active)),
        Figure::Dram => format!("100 * {}", over("avg_over_time", &m.dram_active)),
        Figure::MemPeak => over("max_over_time", &m.fb_used),
        Figure::MemTotal => {
            let terms: Vec<String> = sel
                .iter()
                .map(|s| format!("max_over_time(({}{{{s}}} + {}{{{s}}})[{w}:{step}s])", m.fb_used, m.fb_free))
                .collect();
            format!("max by ({}) ({})", by(cfg), terms.join(" or "))
        }
        Figure::Power => over("avg_over_time", &m.power),
        Figure::PowerPeak => over("max_over_time", &m.power),
        Figure::Energy => over("increase", &m.energy),
    }
}

/// The idle-stretch range query: per GPU, the highest utilisation over the two steps before
/// each point (on MIG slices, `100 × GR_ENGINE_ACTIVE`): with a scrape interval up to the step
/// no window is empty, so scrapes that miss a step's window do not break a stretch.
pub fn idle_query(cfg: &PromConfig, sel: &[String], step: i64, mig: bool) -> String {
    let m = &cfg.metrics;
    let (metric, scale) = if mig { (&m.gr_engine_active, "100 * ") } else { (&m.gpu_util, "") };
    let extra = if mig { format!("{}!=\"\"", cfg.labels.mig_instance) } else { String::new() };
    let terms: Vec<String> = sel
        .iter()
        .map(|s| format!("max_over_time({metric}{{{}}}[{}s])", join(&[s, &extra]), 2 * step))
        .collect();
    format!("{scale}max by ({}) ({})", by(cfg), terms.join(" or "))
}

/// One GPU's key in the answers: (node, GPU index, MIG instance, MIG profile).
type Key = (String, String, String, String);

fn key_of(cfg: &PromConfig, s: &super::api::Series<'_, '_>) -> Option<Key> {
    let host = s.first_label(&cfg.labels.gpu_host)?;
    let gpu = s.label(&cfg.labels.gpu)?;
    let node = crate::sanitize::sanitize(&cfg.host_map.map(host)).into_owned();
    let inst = s.label(&cfg.labels.mig_instance).unwrap_or("");
    let prof = s.label(&cfg.labels.mig_profile).unwrap_or("");
    Some((
        node,
        crate::sanitize::sanitize(gpu).into_owned(),
        inst.into(),
        crate::sanitize::sanitize(prof).into_owned(),
    ))
}

/// One value per GPU from an instant answer (NaN and infinities are no data).
pub fn values(cfg: &PromConfig, body: &Body) -> Result<BTreeMap<Key, f64>, PromError> {
    let r = body.parse()?;
    let mut out = BTreeMap::new();
    for s in r.results.iter() {
        let (Some(k), Some(p)) = (key_of(cfg, &s), s.last()) else { continue };
        if p.v.is_finite() {
            out.insert(k, p.v);
        }
    }
    Ok(out)
}

/// The longest run of consecutive idle points per GPU, s; a missing point ends a run.
pub fn idle_stretches(
    cfg: &PromConfig,
    body: &Body,
    step: i64,
    idle_below: f64,
) -> Result<BTreeMap<Key, i64>, PromError> {
    let r = body.parse()?;
    let mut out = BTreeMap::new();
    if r.results.result_type != ResultType::Matrix {
        return Ok(out);
    }
    for s in r.results.iter() {
        let Some(k) = key_of(cfg, &s) else { continue };
        let (mut best, mut run, mut prev) = (0i64, 0i64, f64::NAN);
        for p in s.points {
            let idle = p.v.is_finite() && p.v < idle_below;
            let contiguous = (p.t - prev - step as f64).abs() < 0.5;
            run = if !idle {
                0
            } else if contiguous && run > 0 {
                run + step
            } else {
                step
            };
            best = best.max(run);
            prev = p.t;
        }
        out.insert(k, best);
    }
    Ok(out)
}

/// Joins the answers into one [`GpuTelemetry`] per GPU or slice seen.
pub fn assemble(
    figures: &BTreeMap<Figure, BTreeMap<Key, f64>>,
    idle: &BTreeMap<Key, i64>,
    span: i64,
    idle_below: f64,
    util_name: &str,
    gr_name: &str,
) -> Vec<GpuTelemetry> {
    let mut keys: Vec<&Key> = figures.values().flat_map(|m| m.keys()).collect();
    keys.sort();
    keys.dedup();
    let get = |f: Figure, k: &Key| figures.get(&f).and_then(|m| m.get(k)).copied();
    // A MIG GPU's own series (no instance) say nothing of a slice: where a GPU has slices in
    // the answers, its whole-GPU series are left out.
    let sliced: std::collections::BTreeSet<(&str, &str)> =
        keys.iter().filter(|k| !k.2.is_empty()).map(|k| (k.0.as_str(), k.1.as_str())).collect();
    keys.into_iter()
        .filter(|k| !k.2.is_empty() || !sliced.contains(&(k.0.as_str(), k.1.as_str())))
        .map(|k| {
            let mig = !k.2.is_empty();
            let (util, peak, field) = if mig {
                (get(Figure::Gr, k), get(Figure::GrPeak, k), gr_name)
            } else {
                (get(Figure::Util, k), get(Figure::UtilPeak, k), util_name)
            };
            let power = get(Figure::Power, k);
            let (energy_kwh, energy_from) = match (get(Figure::Energy, k), power) {
                (Some(mj), _) => (Some(mj / 3.6e9), Some("counter")),
                (None, Some(w)) => (Some(w * span as f64 / 3.6e6), Some("power")),
                (None, None) => (None, None),
            };
            let mem_peak = get(Figure::MemPeak, k);
            let never_ran = match (peak, mem_peak) {
                (Some(p), Some(m)) => Some(p < idle_below && m <= NO_PROCESS_MIB),
                _ => None,
            };
            GpuTelemetry {
                node: k.0.clone(),
                gpu: k.1.clone(),
                mig_instance: mig.then(|| k.2.clone()),
                mig_profile: (mig && !k.3.is_empty()).then(|| k.3.clone()),
                util,
                util_field: field.to_string(),
                util_peak: peak,
                sm_active: get(Figure::Sm, k),
                tensor_active: get(Figure::Tensor, k),
                dram_active: get(Figure::Dram, k),
                mem_peak_mib: mem_peak,
                mem_total_mib: get(Figure::MemTotal, k),
                power_mean_w: power,
                power_peak_w: get(Figure::PowerPeak, k),
                energy_kwh,
                energy_from: energy_from.map(String::from),
                idle_longest_s: idle.get(k).copied(),
                never_ran,
            }
        })
        .collect()
}

/// Every figure of `job`, or `None` when Prometheus has no series of its GPUs for the run.
pub async fn fetch(
    client: &PromClient,
    cfg: &PromConfig,
    job: &JobSelect,
) -> Result<Option<JobTelemetry>, PromError> {
    let span = (job.end - job.start).max(1);
    let step = step_for(span);
    let mut tries: Vec<(String, Vec<String>)> =
        vec![(format!("label {}=\"{}\"", cfg.labels.hpc_job, job.id), by_label(cfg, job.id))];
    if let Some(p) = placement(cfg, &job.gpus) {
        tries.push(("placement".into(), p));
    }
    let mut queries = 0;
    let end = job.end as f64;
    for (how, sel) in tries {
        let futures = FIGURES.iter().map(|f| {
            let q = instant(cfg, &sel, *f, span, step);
            async move { (*f, client.query(&q, Some(end)).await) }
        });
        let answers = futures::future::join_all(futures).await;
        queries += answers.len();
        let mut figures = BTreeMap::new();
        for (f, body) in answers {
            figures.insert(f, values(cfg, &body?)?);
        }
        let found = [Figure::Util, Figure::Gr].iter().any(|f| figures.get(f).is_some_and(|m| !m.is_empty()));
        if !found {
            continue;
        }
        let has_mig = figures.values().any(|m| m.keys().any(|k| !k.2.is_empty()));
        let (from, to) = ((job.start + step) as f64, end);
        let mut idle = idle_stretches(
            cfg,
            &client.query_range(&idle_query(cfg, &sel, step, false), from, to, step as f64).await?,
            step,
            job.idle_below,
        )?;
        queries += 1;
        if has_mig {
            let q = idle_query(cfg, &sel, step, true);
            idle.extend(idle_stretches(
                cfg,
                &client.query_range(&q, from, to, step as f64).await?,
                step,
                job.idle_below,
            )?);
            queries += 1;
        }
        let gpus = assemble(
            &figures,
            &idle,
            span,
            job.idle_below,
            &cfg.metrics.gpu_util,
            &cfg.metrics.gr_engine_active,
        );
        return Ok(Some(JobTelemetry {
            selected_by: how,
            start: job.start,
            end: job.end,
            step_s: step,
            gpus,
            queries,
        }));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(series: &[(&str, &[(i64, &str)])]) -> Body {
        let list: Vec<String> = series
            .iter()
            .map(|(labels, pts)| {
                let p: Vec<String> = pts.iter().map(|(t, v)| format!("[{t},\"{v}\"]")).collect();
                format!(r#"{{"metric":{{{labels}}},"values":[{}]}}"#, p.join(","))
            })
            .collect();
        Body(
            format!(
                r#"{{"status":"success","data":{{"resultType":"matrix","result":[{}]}}}}"#,
                list.join(",")
            )
            .into_bytes(),
        )
    }

    fn vector(series: &[(&str, &str)]) -> Body {
        let list: Vec<String> =
            series.iter().map(|(l, v)| format!(r#"{{"metric":{{{l}}},"value":[100,"{v}"]}}"#)).collect();
        Body(
            format!(
                r#"{{"status":"success","data":{{"resultType":"vector","result":[{}]}}}}"#,
                list.join(",")
            )
            .into_bytes(),
        )
    }

    #[test]
    fn steps_keep_series_bounded() {
        assert_eq!(step_for(3600), 60);
        assert_eq!(step_for(0), 60);
        // A week: one point a minute would be 10,080; the step grows instead.
        let week = 7 * 86_400;
        assert!(week / step_for(week) <= MAX_POINTS, "{}", step_for(week));
        assert!(30 * 86_400 / step_for(30 * 86_400) <= MAX_POINTS);
    }

    #[test]
    fn queries_select_the_job_by_label_or_placement_and_group_by_slice() {
        let c = PromConfig::new("http://x");
        let q = instant(&c, &by_label(&c, 42), Figure::Util, 3600, 60);
        assert_eq!(
            q,
            "max by (Hostname, hostname, gpu, GPU_I_ID, GPU_I_PROFILE) (avg_over_time(DCGM_FI_DEV_GPU_UTIL{hpc_job=\"42\"}[3600s]))"
        );
        let p = placement(&c, &[(Text::from("gpu-016"), 0), (Text::from("gpu-016"), 1)]).unwrap();
        assert_eq!(p.len(), 2, "one per host label: {p:?}");
        assert!(
            p[0].contains(r#"Hostname=~"(gpu\\-016)([.:].*)?""#) && p[0].contains("gpu=~\"0|1\""),
            "{p:?}"
        );
        let q = instant(&c, &p, Figure::MemTotal, 3600, 60);
        assert!(q.contains("[3600s:60s]") && q.contains(" or "), "{q}");
        let q = instant(&c, &p, Figure::Gr, 3600, 60);
        assert!(q.starts_with("100 * max by") && q.contains("DCGM_FI_PROF_GR_ENGINE_ACTIVE"), "{q}");
        let q = idle_query(&c, &by_label(&c, 42), 60, true);
        assert!(q.contains("GPU_I_ID!=\"\"") && q.starts_with("100 * "), "{q}");
        // A hostile job id cannot reach here (a number); a hostile node name stays quoted.
        let p = placement(&c, &[(Text::from("n\"}) or up{x=\""), 0)]).unwrap();
        assert!(p[0].contains(r#"\"\\}\\)"#), "{p:?}");
    }

    #[test]
    fn idle_stretches_count_consecutive_idle_steps_and_gaps_break_them() {
        let c = PromConfig::new("http://x");
        let b = matrix(&[
            (
                r#""Hostname":"a","gpu":"0""#,
                &[(60, "0"), (120, "0"), (180, "50"), (240, "0"), (300, "0"), (360, "0")],
            ),
            // A gap at 180: two runs of one and two steps.
            (r#""Hostname":"a","gpu":"1""#, &[(60, "0"), (120, "0"), (240, "0"), (300, "NaN"), (360, "0")]),
            (r#""Hostname":"a","gpu":"2""#, &[(60, "90"), (120, "80")]),
        ]);
        let m = idle_stretches(&c, &b, 60, 1.0).unwrap();
        let k = |g: &str| (String::from("a"), g.to_string(), String::new(), String::new());
        assert_eq!(m[&k("0")], 180);
        assert_eq!(m[&k("1")], 120);
        assert_eq!(m[&k("2")], 0);
    }

    #[test]
    fn a_mig_slice_uses_its_engine_activity_and_missing_figures_stay_missing() {
        let c = PromConfig::new("http://x");
        let mut figures = BTreeMap::new();
        let whole = r#""Hostname":"a","gpu":"7""#;
        let slice = r#""Hostname":"a","gpu":"7","GPU_I_ID":"9","GPU_I_PROFILE":"1g.10gb""#;
        let plain = r#""Hostname":"a","gpu":"0""#;
        // The whole MIG GPU reports 0 % utilisation; the slice is 60 % busy.
        figures.insert(Figure::Util, values(&c, &vector(&[(whole, "0"), (plain, "0.25")])).unwrap());
        figures.insert(Figure::UtilPeak, values(&c, &vector(&[(whole, "0"), (plain, "0.5")])).unwrap());
        figures.insert(Figure::Gr, values(&c, &vector(&[(slice, "60"), (plain, "NaN")])).unwrap());
        figures.insert(Figure::GrPeak, values(&c, &vector(&[(slice, "95")])).unwrap());
        figures.insert(Figure::MemPeak, values(&c, &vector(&[(plain, "12"), (slice, "4000")])).unwrap());
        figures.insert(Figure::Power, values(&c, &vector(&[(plain, "100")])).unwrap());
        let g = assemble(&figures, &BTreeMap::new(), 3600, 1.0, "UTIL", "GR");
        assert_eq!(g.len(), 2, "the whole MIG GPU is left out: {g:#?}");
        let s = g.iter().find(|g| g.mig_instance.is_some()).unwrap();
        assert_eq!((s.util, s.util_field.as_str()), (Some(60.0), "GR"));
        assert_eq!(s.mig_profile.as_deref(), Some("1g.10gb"));
        assert_eq!(s.never_ran, Some(false));
        let p = g.iter().find(|g| g.gpu == "0").unwrap();
        assert_eq!(p.util, Some(0.25));
        assert_eq!(p.sm_active, None, "not exported: missing, not 0");
        // 100 W for an hour, no energy counter: 0.1 kWh from power.
        assert_eq!((p.energy_kwh, p.energy_from.as_deref()), (Some(0.1), Some("power")));
        assert_eq!(p.never_ran, Some(true), "peak 0.5 % and 12 MiB");
        assert_eq!(p.idle_longest_s, None);
    }
}
