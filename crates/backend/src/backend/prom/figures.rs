//! One ended job's figures for its summary, on the one road: the console asks (a
//! [`FiguresWanted`] on this task's channel), this task queries Prometheus with the backend's
//! own client and runtime, and the answer goes back as [`Update::JobFigures`] beside every other
//! update. `gpuplane report job` calls [`measure`] itself, once.
//!
//! Bounded: one job at a time, each for at most [`DEADLINE`]; after a failure no job is asked
//! about for [`PAUSE`] (a Prometheus that is down is not asked about every job that ends): those
//! are answered at once as not asked, so the asker keeps nothing waiting.

use super::client::PromClient;
use super::config::PromConfig;
use super::{evidence, jobstats};
use crate::model::jobstats::{JobFigures, JobSelect, JobTelemetry};
use crate::model::protocol::Update;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The longest one job's figures may take.
pub const DEADLINE: Duration = Duration::from_secs(15);
/// After Prometheus failed a job's figures, ended jobs get none for this long.
pub const PAUSE: Duration = Duration::from_secs(300);

/// Decides, from the job's telemetry (`None`: Prometheus has no series of it), whether its GPUs
/// idled and so which nodes' evidence to read (`None`: none). The asker's rules, not the
/// backend's.
pub type EvidenceOn = Box<dyn FnOnce(Option<&JobTelemetry>) -> Option<Vec<String>> + Send>;

/// A job whose figures are wanted.
pub struct FiguresWanted {
    pub sel: JobSelect,
    pub evidence_on: EvidenceOn,
}

impl std::fmt::Debug for FiguresWanted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FiguresWanted").field("sel", &self.sel).finish_non_exhaustive()
    }
}

/// The job's telemetry over its run, then, when `evidence_on` names nodes, the evidence on them.
pub async fn measure(client: &PromClient, cfg: &PromConfig, want: FiguresWanted) -> JobFigures {
    let FiguresWanted { sel, evidence_on } = want;
    let telemetry = jobstats::fetch(client, cfg, &sel).await.map_err(|e| e.to_string());
    let evidence = match &telemetry {
        Err(_) => None,
        Ok(t) => match evidence_on(t.as_ref()) {
            None => None,
            Some(nodes) => Some(
                evidence::fetch(client, cfg, &nodes, sel.start, sel.end, "the run")
                    .await
                    .map_err(|e| e.to_string()),
            ),
        },
    };
    JobFigures { job: sel.id, telemetry, evidence }
}

/// Whether Prometheus failed (either query): the asking pauses.
fn failed(f: &JobFigures) -> Option<&str> {
    match (&f.telemetry, &f.evidence) {
        (Err(e), _) | (_, Some(Err(e))) => Some(e),
        _ => None,
    }
}

/// [`measure`] within [`DEADLINE`].
async fn measured(client: &PromClient, cfg: &PromConfig, want: FiguresWanted) -> JobFigures {
    let job = want.sel.id;
    match tokio::time::timeout(DEADLINE, measure(client, cfg, want)).await {
        Ok(f) => f,
        Err(_) => JobFigures {
            job,
            telemetry: Err(format!("no answer within {} s", DEADLINE.as_secs())),
            evidence: None,
        },
    }
}

/// Serves `rx` until it closes or `cancel` fires: each job's figures, answered on `tx` (every
/// request gets an answer, a failure included).
pub async fn serve(
    cfg: PromConfig,
    mut rx: mpsc::Receiver<FiguresWanted>,
    tx: mpsc::Sender<Update>,
    cancel: CancellationToken,
) {
    let client = match PromClient::new(&cfg) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!("job summaries: {e}");
            return;
        }
    };
    let mut paused_until: Option<Instant> = None;
    loop {
        let want = tokio::select! {
            _ = cancel.cancelled() => return,
            w = rx.recv() => match w {
                Some(w) => w,
                None => return,
            },
        };
        let job = want.sel.id;
        // Paused: answered at once, so the asker lets the job go (it keeps nothing waiting).
        let f = if paused_until.is_some_and(|t| Instant::now() < t) {
            JobFigures {
                job,
                telemetry: Err(format!(
                    "not asked: Prometheus failed a job less than {} min ago",
                    PAUSE.as_secs() / 60
                )),
                evidence: None,
            }
        } else {
            let f = measured(&client, &cfg, want).await;
            if let Some(e) = failed(&f) {
                tracing::warn!(job, "job summary: {e}; none for {} min", PAUSE.as_secs() / 60);
                paused_until = Some(Instant::now() + PAUSE);
            }
            f
        };
        let sent = tokio::select! {
            _ = cancel.cancelled() => return,
            r = tx.send(Update::JobFigures(Box::new(f))) => r.is_ok(),
        };
        if !sent {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want(id: u64) -> FiguresWanted {
        FiguresWanted {
            sel: JobSelect { id, start: 1000, end: 4600, gpus: vec![("n1".into(), 0)], idle_below: 1.0 },
            evidence_on: Box::new(|_| Some(vec!["n1".into()])),
        }
    }

    /// A Prometheus that never answers: the first job's figures come back as a failure within
    /// the client's timeout, and the next jobs are not asked about for a while (each would wait
    /// as long): they are answered at once as not asked, so the asker lets them go.
    #[tokio::test]
    async fn a_failing_prometheus_answers_the_failure_and_pauses_the_asking() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        // Connections are accepted (the listen backlog) and never answered.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut cfg = PromConfig::new(format!("http://{}", silent.local_addr().unwrap()));
        cfg.timeout = Duration::from_millis(300);
        let (wtx, wrx) = mpsc::channel(4);
        let (utx, mut urx) = mpsc::channel(4);
        let cancel = CancellationToken::new();
        let task = tokio::spawn(serve(cfg, wrx, utx, cancel.clone()));
        let t = Instant::now();
        wtx.send(want(1)).await.unwrap();
        let Some(Update::JobFigures(f)) = urx.recv().await else { panic!("an answer") };
        let waited = t.elapsed();
        assert!(waited >= Duration::from_millis(300) && waited < DEADLINE, "{waited:?}");
        assert_eq!(f.job, 1);
        assert!(f.telemetry.is_err(), "{f:?}");
        assert_eq!(f.evidence, None, "no evidence is asked after the telemetry failed");
        let t = Instant::now();
        wtx.send(want(2)).await.unwrap();
        let Some(Update::JobFigures(f)) = urx.recv().await else { panic!("an answer") };
        assert!(t.elapsed() < Duration::from_millis(200), "paused: not asked ({:?})", t.elapsed());
        assert_eq!(f.job, 2);
        let e = f.telemetry.expect_err("not asked");
        assert!(e.starts_with("not asked: Prometheus failed a job"), "{e}");
        drop(wtx);
        // The task ends when the channel closes.
        tokio::time::timeout(Duration::from_secs(2), task).await.expect("the task ends").unwrap();
        assert!(urx.recv().await.is_none());
    }
}
