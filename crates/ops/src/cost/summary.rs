//! A job's Prometheus figures over its run — its GPUs' telemetry and, when they idled, the
//! evidence on its nodes — for `gpuplane report job`, and the summary the ledger keeps of them at
//! the job's end (so the report still answers once Prometheus has forgotten the run).

use super::eff::{self, JobEfficiency, Rules, Summary};
use crate::backend::prom::figures::FiguresWanted;
use crate::model::jobstats::{JobFigures, JobSelect, JobTelemetry};
use crate::model::{Epoch, PriceCard, Text};
use crate::store::{GpuInterval, JobRecord};

/// What to ask the Prometheus backend about `r`'s run over `[start, end]` (`gpus`: where it
/// ran, the placement fallback; `e` is its efficiency from the ledger): its GPUs' telemetry, and the evidence on its nodes when the
/// telemetry shows them idle by `rules`. `None` when the job has not started (said in `e`).
pub fn wanted(
    e: &mut JobEfficiency,
    r: &JobRecord,
    gpus: Vec<(Text, u8)>,
    end: Epoch,
    rules: &Rules,
    prices: &PriceCard,
) -> Option<FiguresWanted> {
    let Some(start) = r.start else {
        e.telemetry_missing = Some("the job has not started".into());
        return None;
    };
    let end = end.max(start + 1);
    let sel = JobSelect { id: r.id, start, end, gpus, idle_below: rules.idle_gpu };
    let (r, rules, prices) = (r.clone(), rules.clone(), prices.clone());
    let base = e.clone();
    let evidence_on = Box::new(move |t: Option<&JobTelemetry>| {
        let mut e = base;
        if let Some(t) = t {
            eff::with_telemetry(&mut e, &r, t.clone(), &rules, &prices);
        }
        eff::idle_cause(&e, &rules)?;
        Some(evidence_nodes(&e, &r))
    });
    Some(FiguresWanted { sel, evidence_on })
}

/// The nodes whose evidence explains `r`'s idle GPUs: where it ran, else where its telemetry
/// says its GPUs were.
fn evidence_nodes(e: &JobEfficiency, r: &JobRecord) -> Vec<String> {
    if r.nodes.is_empty() {
        e.telemetry.iter().flat_map(|t| t.gpus.iter().map(|g| g.node.clone())).collect()
    } else {
        r.nodes.clone()
    }
}

/// Adds the backend's answer for `r` to `e`: the telemetry of its GPUs, then the evidence on its
/// nodes. What could not be had is said in `telemetry_missing` and `evidence_missing`; a
/// failure is returned as well, for the caller to report. The one derivation of a job's
/// Prometheus figures, for `report job` and for the summary the ledger keeps.
pub fn apply(
    e: &mut JobEfficiency,
    r: &JobRecord,
    f: JobFigures,
    rules: &Rules,
    prices: &PriceCard,
) -> Result<(), String> {
    match f.telemetry {
        Ok(Some(t)) => eff::with_telemetry(e, r, t, rules, prices),
        Ok(None) => {
            e.telemetry_missing =
                Some("Prometheus has no GPU series of this job for its run (retention, or no labels)".into())
        }
        Err(err) => {
            e.telemetry_missing = Some(format!("prometheus: {err}"));
            return Err(err);
        }
    }
    let Some(why) = eff::idle_cause(e, rules) else {
        e.evidence_missing = Some("its GPUs were busy: no idle time to explain".into());
        return Ok(());
    };
    match f.evidence {
        Some(Ok(Some(ev))) => eff::with_evidence(e, r, ev, rules),
        Some(Ok(None)) => {
            e.evidence_missing =
                Some(format!("{why}, but its nodes cannot be selected by name (host_map.regex, or none)"))
        }
        Some(Err(err)) => {
            e.evidence_missing = Some(format!("prometheus: {err}"));
            return Err(err);
        }
        // Asked with the same rules, so not reached; said rather than left blank.
        None => e.evidence_missing = Some(format!("{why}, but the evidence was not asked for")),
    }
    Ok(())
}

/// The GPUs the ledger saw `r` hold (the placement fallback of its telemetry).
pub fn placement(intervals: &[GpuInterval]) -> Vec<(Text, u8)> {
    let mut gpus: Vec<(Text, u8)> =
        intervals.iter().filter_map(|i| Some((i.node.as_str().into(), i.gpu?))).collect();
    gpus.sort();
    gpus.dedup();
    gpus
}

/// Jobs that ended longer ago than this get no summary from the console: Prometheus is asked
/// only about runs a console saw end, not about every job accounting history brings in.
pub const SUMMARY_MAX_AGE_S: i64 = 6 * 3600;

/// The summary the ledger keeps of `r` from the backend's answer (`None` when Prometheus
/// failed or had nothing worth keeping).
pub fn summary_json(
    r: &JobRecord,
    intervals: &[GpuInterval],
    f: JobFigures,
    rules: &Rules,
    prices: &PriceCard,
) -> Option<String> {
    let mut e = eff::job(r, intervals, rules);
    apply(&mut e, r, f, rules, prices).ok()?;
    Summary::of(&e).and_then(|s| serde_json::to_string(&s).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(id: u64, gpus: u32) -> JobRecord {
        JobRecord {
            id,
            gpus,
            start: Some(1000),
            end: Some(4600),
            nodes: vec!["n1".into()],
            ..Default::default()
        }
    }

    /// What is asked: nothing for a job that never started; the evidence only when the
    /// telemetry shows idle GPUs (by the rules), on the nodes the job ran on.
    #[test]
    fn evidence_is_asked_only_for_idle_gpus_on_the_job_s_nodes() {
        let rules = Rules::default();
        let prices = PriceCard::default();
        let r = ended(1, 2);
        let mut e = eff::job(&r, &[], &rules);
        let never = JobRecord { start: None, ..ended(2, 2) };
        assert!(wanted(&mut eff::job(&never, &[], &rules), &never, vec![], 10, &rules, &prices).is_none());
        let gpu = |util: f64| crate::model::jobstats::GpuTelemetry {
            node: "n1".into(),
            gpu: "0".into(),
            util: Some(util),
            util_field: "DCGM_FI_DEV_GPU_UTIL".into(),
            mem_peak_mib: Some(40_000.0),
            ..Default::default()
        };
        let t = |util: f64| JobTelemetry {
            selected_by: "placement".into(),
            start: 1000,
            end: 4600,
            step_s: 60,
            gpus: vec![gpu(util), crate::model::jobstats::GpuTelemetry { gpu: "1".into(), ..gpu(util) }],
            queries: 13,
        };
        let ask = |util: f64| {
            let mut e = e.clone();
            let w = wanted(&mut e, &r, vec![("n1".into(), 0)], 4600, &rules, &prices).expect("started");
            assert_eq!((w.sel.id, w.sel.start, w.sel.end), (1, 1000, 4600));
            (w.evidence_on)(Some(&t(util)))
        };
        assert_eq!(ask(95.0), None, "busy GPUs: no evidence");
        assert_eq!(ask(5.0), Some(vec!["n1".to_string()]), "idle GPUs: the job's node");
        // The answer applied: busy says so; a failure is said and returned.
        let busy = JobFigures { job: 1, telemetry: Ok(Some(t(95.0))), evidence: None };
        assert_eq!(apply(&mut e, &r, busy, &rules, &prices), Ok(()));
        assert_eq!(e.evidence_missing.as_deref(), Some("its GPUs were busy: no idle time to explain"));
        let mut e = eff::job(&r, &[], &rules);
        let down = JobFigures { job: 1, telemetry: Err("connection refused".into()), evidence: None };
        assert_eq!(apply(&mut e, &r, down.clone(), &rules, &prices), Err("connection refused".into()));
        assert_eq!(e.telemetry_missing.as_deref(), Some("prometheus: connection refused"));
        assert_eq!(summary_json(&r, &[], down, &rules, &prices), None, "no summary of a failure");
    }
}
