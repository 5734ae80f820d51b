//! Job summaries for the ledger, on the one road: the ledger says which ended job wants one
//! ([`Answer::SummaryWanted`](crate::store::ledger::Answer::SummaryWanted)), this component
//! asks the Prometheus backend ([`FiguresWanted`] on its channel), and the backend's answer
//! ([`Update::JobFigures`](crate::model::protocol::Update::JobFigures)) becomes the summary the
//! ledger keeps ([`Request::PutSummary`]), an effect the console carries out. No query runs
//! here or on the ledger's thread.

use crate::backend::prom::figures::FiguresWanted;
use crate::cost::eff::Rules;
use crate::model::PriceCard;
use crate::model::jobstats::JobFigures;
use crate::store::ledger::Request;
use crate::store::{GpuInterval, JobRecord};
use std::collections::HashMap;
use tokio::sync::mpsc;

/// Jobs asked about and not answered yet, at most; past it a job gets no summary.
const PENDING: usize = 64;

/// The console's side of job summaries.
pub struct Summaries {
    tx: mpsc::Sender<FiguresWanted>,
    /// Each asked job's cluster (its ledger), record and GPU intervals, by id.
    pending: HashMap<u64, (String, Box<JobRecord>, Vec<GpuInterval>)>,
}

impl Summaries {
    pub fn new(tx: mpsc::Sender<FiguresWanted>) -> Summaries {
        Summaries { tx, pending: HashMap::new() }
    }

    /// Asks the backend about `job` (dropped when the backend is busy or gone, or too many wait).
    pub fn want(
        &mut self,
        cluster: String,
        job: Box<JobRecord>,
        intervals: Vec<GpuInterval>,
        rules: &Rules,
        prices: &PriceCard,
    ) {
        let Some(end) = job.end else { return };
        if self.pending.len() >= PENDING || self.pending.contains_key(&job.id) {
            return;
        }
        let mut e = crate::cost::eff::job(&job, &intervals, rules);
        let gpus = crate::cost::summary::placement(&intervals);
        let Some(want) = crate::cost::summary::wanted(&mut e, &job, gpus, end, rules, prices) else { return };
        if self.tx.try_send(want).is_ok() {
            self.pending.insert(job.id, (cluster, job, intervals));
        }
    }

    /// The backend's answer for a job asked about: what the ledger should keep (`None`:
    /// nothing worth keeping, or a job not asked about here).
    pub fn answered(&mut self, f: JobFigures, at: i64, rules: &Rules, prices: &PriceCard) -> Option<Request> {
        let (cluster, job, intervals) = self.pending.remove(&f.job)?;
        let summary = crate::cost::summary::summary_json(&job, &intervals, f, rules, prices)?;
        Some(Request::PutSummary { cluster, job: job.id, at, summary })
    }

    /// Jobs asked about and not answered yet.
    pub fn waiting(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::jobstats::{GpuTelemetry, JobTelemetry};

    fn ended(id: u64) -> Box<JobRecord> {
        Box::new(JobRecord {
            id,
            gpus: 1,
            start: Some(1000),
            end: Some(4600),
            nodes: vec!["n1".into()],
            ..Default::default()
        })
    }

    fn iv(job: u64) -> Vec<GpuInterval> {
        vec![GpuInterval {
            job,
            node: "n1".into(),
            gpu: Some(0),
            gpus: 1,
            start: 1000,
            end: 4600,
            util: Some(90.0),
        }]
    }

    /// A wanted job is asked about once, on the backend's channel, with its run and placement;
    /// the backend's answer becomes the ledger's request for that job's cluster, and an answer
    /// for a job not asked about, or a failure, becomes nothing.
    #[test]
    fn a_wanted_job_is_asked_once_and_its_answer_becomes_the_ledger_s_summary() {
        let (tx, mut rx) = mpsc::channel(8);
        let mut s = Summaries::new(tx);
        let (rules, prices) = (Rules::default(), PriceCard::default());
        s.want("prod".into(), ended(7), iv(7), &rules, &prices);
        s.want("prod".into(), ended(7), iv(7), &rules, &prices);
        let asked = rx.try_recv().expect("asked");
        assert_eq!((asked.sel.id, asked.sel.start, asked.sel.end), (7, 1000, 4600));
        assert_eq!(asked.sel.gpus, vec![("n1".into(), 0)]);
        assert!(rx.try_recv().is_err(), "asked once");
        assert_eq!(s.waiting(), 1);
        let t = JobTelemetry {
            selected_by: "placement".into(),
            start: 1000,
            end: 4600,
            step_s: 60,
            gpus: vec![GpuTelemetry {
                node: "n1".into(),
                gpu: "0".into(),
                util: Some(93.0),
                util_field: "DCGM_FI_DEV_GPU_UTIL".into(),
                ..Default::default()
            }],
            queries: 13,
        };
        let f = JobFigures { job: 7, telemetry: Ok(Some(t)), evidence: None };
        assert!(s.answered(JobFigures { job: 8, ..f.clone() }, 5000, &rules, &prices).is_none());
        let Some(Request::PutSummary { cluster, job, at, summary }) = s.answered(f, 5000, &rules, &prices)
        else {
            panic!("a summary for the ledger")
        };
        assert_eq!((cluster.as_str(), job, at), ("prod", 7, 5000));
        let v: serde_json::Value = serde_json::from_str(&summary).expect("JSON");
        assert_eq!(v["telemetry"]["gpus"][0]["util"], 93.0, "{v}");
        assert_eq!(s.waiting(), 0);
        s.want("prod".into(), ended(9), iv(9), &rules, &prices);
        let failed = JobFigures { job: 9, telemetry: Err("refused".into()), evidence: None };
        assert!(s.answered(failed, 5000, &rules, &prices).is_none(), "no summary of a failure");
        assert_eq!(s.waiting(), 0, "a failure lets the job go: nothing is kept waiting");
    }
}
