//! A job's Prometheus figures over its run — its GPUs' telemetry and, when they idled, the
//! evidence on its nodes — for `gpuplane report job`, and the summary the ledger keeps of them at
//! the job's end (so the report still answers once Prometheus has forgotten the run).

use super::eff::{self, JobEfficiency, Rules, Summary};
use crate::backend::prom::{PromClient, PromConfig, evidence, jobstats};
use crate::model::{Epoch, PriceCard, Text};
use crate::store::{GpuInterval, JobRecord};

/// Asks Prometheus for `r`'s figures over `[start, end]` and adds them to `e`: the telemetry of
/// its GPUs (`gpus`: where it ran, the placement fallback), then, when its GPUs idled, the
/// evidence on its nodes. What could not be had is said in `telemetry_missing` and
/// `evidence_missing`; an error is returned as well, for the caller to report.
#[allow(clippy::too_many_arguments)]
pub async fn measure(
    client: &PromClient,
    cfg: &PromConfig,
    rules: &Rules,
    prices: &PriceCard,
    e: &mut JobEfficiency,
    r: &JobRecord,
    gpus: Vec<(Text, u8)>,
    end: Epoch,
) -> Result<(), String> {
    let Some(start) = r.start else {
        e.telemetry_missing = Some("the job has not started".into());
        return Ok(());
    };
    let end = end.max(start + 1);
    let sel = jobstats::JobSelect { id: r.id, start, end, gpus, idle_below: rules.idle_gpu };
    match jobstats::fetch(client, cfg, &sel).await {
        Ok(Some(t)) => eff::with_telemetry(e, r, t, rules, prices),
        Ok(None) => {
            e.telemetry_missing =
                Some("Prometheus has no GPU series of this job for its run (retention, or no labels)".into())
        }
        Err(err) => {
            e.telemetry_missing = Some(format!("prometheus: {err}"));
            return Err(err.to_string());
        }
    }
    let Some(why) = eff::idle_cause(e, rules) else {
        e.evidence_missing = Some("its GPUs were busy: no idle time to explain".into());
        return Ok(());
    };
    let nodes: Vec<String> = if r.nodes.is_empty() {
        e.telemetry.iter().flat_map(|t| t.gpus.iter().map(|g| g.node.clone())).collect()
    } else {
        r.nodes.clone()
    };
    match evidence::fetch(client, cfg, &nodes, start, end, "the run").await {
        Ok(Some(ev)) => eff::with_evidence(e, r, ev, rules),
        Ok(None) => {
            e.evidence_missing =
                Some(format!("{why}, but its nodes cannot be selected by name (host_map.regex, or none)"))
        }
        Err(err) => {
            e.evidence_missing = Some(format!("prometheus: {err}"));
            return Err(err.to_string());
        }
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

/// The longest one job's summary may take: the ledger's thread (and the console's exit, which
/// waits for it) is held no longer.
pub const SUMMARY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(15);
/// After Prometheus failed a summary, ended jobs get none for this long (a Prometheus that is
/// down is not asked about every job).
pub const SUMMARY_PAUSE: std::time::Duration = std::time::Duration::from_secs(300);

/// The ledger thread's summariser: for a job that ended, its figures from Prometheus as the JSON
/// the ledger keeps (`None`: Prometheus had nothing, or failed — said in the log). It blocks the
/// ledger's own thread, never the console's, for at most [`SUMMARY_DEADLINE`].
pub fn summariser(
    cfg: PromConfig,
    rules: Rules,
    prices: PriceCard,
) -> Option<impl FnMut(&JobRecord, &[GpuInterval]) -> Option<String> + Send + 'static> {
    let client = PromClient::new(&cfg).map_err(|e| tracing::warn!("job summaries: {e}")).ok()?;
    // Made on the ledger's thread at first use (and dropped there), never on the console's.
    let mut rt: Option<tokio::runtime::Runtime> = None;
    let mut paused_until: Option<std::time::Instant> = None;
    Some(move |r: &JobRecord, intervals: &[GpuInterval]| {
        let end = r.end.filter(|_| r.gpus > 0)?;
        if paused_until.is_some_and(|t| std::time::Instant::now() < t) {
            return None;
        }
        if rt.is_none() {
            rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| tracing::warn!("job summaries: {e}"))
                .ok();
        }
        let rt = rt.as_ref()?;
        let mut e = eff::job(r, intervals, &rules);
        let ask = measure(&client, &cfg, &rules, &prices, &mut e, r, placement(intervals), end);
        let done = rt.block_on(async { tokio::time::timeout(SUMMARY_DEADLINE, ask).await });
        let failed = match done {
            Ok(Ok(())) => None,
            Ok(Err(err)) => Some(err),
            Err(_) => Some(format!("no answer within {} s", SUMMARY_DEADLINE.as_secs())),
        };
        if let Some(err) = failed {
            tracing::warn!(job = r.id, "job summary: {err}; none for {} min", SUMMARY_PAUSE.as_secs() / 60);
            paused_until = Some(std::time::Instant::now() + SUMMARY_PAUSE);
            return None;
        }
        Summary::of(&e).and_then(|s| serde_json::to_string(&s).ok())
    })
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

    /// A Prometheus that never answers: no summary once its timeout passes, and the next jobs
    /// are not asked about for a while (each would wait as long); a job without GPUs, or not
    /// ended, is never asked about.
    #[test]
    fn a_failing_prometheus_gives_no_summary_and_pauses_the_asking() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        // Connections are accepted (the listen backlog) and never answered.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut cfg = PromConfig::new(format!("http://{}", silent.local_addr().unwrap()));
        cfg.timeout = std::time::Duration::from_millis(300);
        let mut f = summariser(cfg, Rules::default(), PriceCard::default()).expect("a summariser");
        let t = std::time::Instant::now();
        assert_eq!(f(&ended(1, 2), &[]), None);
        let waited = t.elapsed();
        assert!(waited >= std::time::Duration::from_millis(300) && waited < SUMMARY_DEADLINE, "{waited:?}");
        let t = std::time::Instant::now();
        assert_eq!(f(&ended(2, 2), &[]), None);
        assert!(t.elapsed() < std::time::Duration::from_millis(50), "paused: not asked ({:?})", t.elapsed());
        assert_eq!(f(&ended(3, 0), &[]), None);
        let running = JobRecord { end: None, ..ended(4, 2) };
        assert_eq!(f(&running, &[]), None);
    }
}
