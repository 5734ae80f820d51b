//! The polite refresh loop. Per refresh, whatever the cluster size:
//!
//! * `nodes` and `partitions` with `update_time` (304 when nothing changed), sent to the state
//!   at once, so the first screen never waits for the job list;
//! * jobs: v0.0.40+ asks the light `jobs/state/` first and fetches the full `jobs/` only when a
//!   job appeared, left or changed state (and at least every `full_jobs_every` refreshes);
//!   v0.0.38 sends `jobs?update_time=` (304 when nothing changed);
//! * accounting (`slurmdb/` QOS, associations, job history) once a minute when slurmdbd is
//!   reachable through slurmrestd.
//!
//! That is 3 requests per refresh (4 when the job list changed), plus 3 per minute for
//! accounting; never a request per node or per job. Errors are retried with exponential backoff
//! and jitter; the state keeps the last good data and the header shows the error and its age.

use super::client::{ApiVersion, Client, Fetched};
use super::error::SlurmError;
use super::map::GpuAlloc;
use super::{JobsOut, Limit, SOURCE, SlurmConfig, parse};
use crate::backend::retry::{Backoff, jitter};
use crate::model::protocol::{Inventory, SourceStatus, Update};
use crate::model::{Epoch, Job, JobId, JobState, Node, Queue, Text};
use bytes::Bytes;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// Chunks of a streaming job list read ahead of the parser at most.
const CHUNKS_IN_FLIGHT: usize = 32;

fn now() -> Epoch {
    jiff::Timestamp::now().as_second()
}

/// Parses off the async workers (a 10,000-job answer is tens of megabytes).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, SlurmError> + Send + 'static,
) -> Result<T, SlurmError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(SlurmError::Malformed { endpoint: "parser".into(), detail: format!("parser task failed: {e}") })
    })
}

/// One Slurm cluster's reader: the client plus what the last refreshes learned.
#[derive(Debug)]
pub struct Poller {
    pub client: Client,
    cfg: SlurmConfig,
    nodes: Vec<Node>,
    queues: Vec<Queue>,
    live: JobsOut,
    history: Vec<Job>,
    limits: Vec<Limit>,
    nodes_stamp: Option<i64>,
    parts_stamp: Option<i64>,
    jobs_stamp: Option<i64>,
    states: Vec<(JobId, JobState)>,
    refreshes: u64,
    since_full_jobs: u32,
    last_accounting: Option<Instant>,
    /// `Some(false)`: slurmdbd endpoints answered 404 (not loaded); probed again later.
    accounting: Option<bool>,
    accounting_error: Option<String>,
    sent_nodes: bool,
}

impl Poller {
    pub fn new(cfg: SlurmConfig) -> Result<Poller, SlurmError> {
        let mut client = Client::new(&cfg.client)?;
        client.max_body = cfg.max_body;
        Ok(Poller {
            client,
            cfg,
            nodes: Vec::new(),
            queues: Vec::new(),
            live: JobsOut::default(),
            history: Vec::new(),
            limits: Vec::new(),
            nodes_stamp: None,
            parts_stamp: None,
            jobs_stamp: None,
            states: Vec::new(),
            refreshes: 0,
            since_full_jobs: 0,
            last_accounting: None,
            accounting: None,
            accounting_error: None,
            sent_nodes: false,
        })
    }

    /// Whether slurmdbd answered through slurmrestd at the last try.
    pub fn accounting_available(&self) -> Option<bool> {
        self.accounting
    }

    /// The status line detail: `v0.0.42 · Slurm 24.11.5`.
    pub fn detail(&self) -> Option<Text> {
        let v = self.client.version?;
        let mut s = v.as_str().to_string();
        if let Some(r) = &self.client.release {
            s.push_str(&format!(" · Slurm {r}"));
        }
        if self.accounting == Some(false) {
            s.push_str(" · no accounting");
        }
        Some(s.into())
    }

    async fn get(&mut self, path: &str, stamp: Option<i64>) -> Result<Option<Bytes>, SlurmError> {
        let q: Vec<(&str, String)> = stamp.map(|t| vec![("update_time", t.to_string())]).unwrap_or_default();
        self.client.get(path, &q).await
    }

    /// One refresh: sends what changed to `tx`, nodes and partitions before jobs.
    pub async fn refresh(&mut self, tx: &mpsc::Sender<Update>) -> Result<(), SlurmError> {
        let v = self.client.version().await?;
        let t0 = now();
        let full = self.refreshes.is_multiple_of(u64::from(self.cfg.full_jobs_every.max(1)));
        self.refreshes += 1;
        // v0.0.38 has no `last_update`: use our clock, a little early (the periodic full
        // fetch bounds the damage of a skewed clock).
        let legacy_stamp = |s: Option<i64>| if v.is_legacy() { s.map(|_| t0 - 2) } else { s };

        // ---- nodes and partitions first
        let ns = if full { None } else { self.nodes_stamp };
        let nodes = self.get(&v.ctld("nodes"), ns).await?;
        let ps = if full { None } else { self.parts_stamp };
        let parts = self.get(&v.ctld("partitions"), ps).await?;
        let mut topo_changed = false;
        if let Some(body) = nodes {
            let p = blocking(move || parse::nodes(v, &body)).await?;
            self.nodes = p.data;
            self.nodes_stamp = legacy_stamp(Some(p.last_update.unwrap_or(t0)));
            super::assign_gpus(&mut self.nodes, &self.live.allocs);
            topo_changed = true;
        }
        if let Some(body) = parts {
            let p = blocking(move || parse::partitions(v, &body)).await?;
            self.queues = p.data;
            self.parts_stamp = legacy_stamp(Some(p.last_update.unwrap_or(t0)));
            topo_changed = true;
        }
        if topo_changed {
            super::queue_gpus(&mut self.queues, &self.nodes);
            self.send_topology(tx, t0).await;
        }

        // ---- jobs
        let mut jobs_changed = false;
        let force =
            full || self.since_full_jobs + 1 >= self.cfg.full_jobs_every.max(1) || self.jobs_stamp.is_none();
        if v.is_legacy() {
            let stamp = if force { None } else { self.jobs_stamp };
            if self.fetch_jobs(v, stamp, t0).await? {
                jobs_changed = true;
            } else {
                self.since_full_jobs += 1;
            }
        } else {
            let mut fetch = force;
            if !fetch {
                match self.get(&v.ctld("jobs/state/"), None).await? {
                    Some(body) => {
                        let states = blocking(move || parse::job_states(v, &body)).await?;
                        fetch = states != self.states;
                        self.states = states;
                    }
                    None => fetch = false,
                }
            }
            if fetch {
                jobs_changed = self.fetch_jobs(v, None, t0).await?;
            } else {
                self.since_full_jobs += 1;
            }
        }

        // ---- accounting
        let acct_changed = self.maybe_accounting(v).await;

        if jobs_changed || acct_changed {
            super::assign_gpus(&mut self.nodes, &self.live.allocs);
            let mut live = self.live.jobs.clone();
            super::drop_impossible_estimates(&mut live, &self.limits, &self.live.qos);
            let jobs = super::merge_jobs(live, &self.history, &self.nodes);
            let quotas = (!self.limits.is_empty() || self.accounting == Some(true))
                .then(|| super::quotas(&self.limits, &self.live.jobs, &self.live.qos));
            let inv = Inventory {
                source: SOURCE.into(),
                cluster: self.client.cluster.clone().map(Text::from),
                nodes: Some(self.nodes.clone()),
                jobs: Some(jobs),
                quotas,
                ..Default::default()
            };
            let _ = tx.send(Update::Inventory { at: t0, inventory: Box::new(inv) }).await;
        } else if !topo_changed {
            // Nothing changed: still proof of life for the header.
            let inv = Inventory { source: SOURCE.into(), ..Default::default() };
            let _ = tx.send(Update::Inventory { at: t0, inventory: Box::new(inv) }).await;
        }
        let status = SourceStatus {
            cluster: Default::default(),
            name: SOURCE.into(),
            simulated: false,
            ok_at: Some(now()),
            error: self.accounting_error.clone(),
            detail: self.detail(),
        };
        let _ = tx.send(Update::Status(status)).await;
        Ok(())
    }

    async fn send_topology(&mut self, tx: &mpsc::Sender<Update>, at: Epoch) {
        let inv = Inventory {
            source: SOURCE.into(),
            cluster: self.client.cluster.clone().map(Text::from),
            nodes: Some(self.nodes.clone()),
            queues: Some(self.queues.clone()),
            ..Default::default()
        };
        self.sent_nodes = true;
        let _ = tx.send(Update::Inventory { at, inventory: Box::new(inv) }).await;
    }

    /// GETs the job list and parses it while it streams in (a large list is never held whole).
    /// `Ok(false)`: 304, nothing changed.
    async fn fetch_jobs(&mut self, v: ApiVersion, stamp: Option<i64>, t0: Epoch) -> Result<bool, SlurmError> {
        let q: Vec<(&str, String)> = stamp.map(|t| vec![("update_time", t.to_string())]).unwrap_or_default();
        let p = match self.client.get_streamed(&v.ctld("jobs"), &q).await? {
            None => return Ok(false),
            Some(Fetched::Whole(body)) => blocking(move || parse::jobs(v, &body)).await?,
            Some(Fetched::Streaming { head, mut rest }) => {
                // The list is never held whole, but its jobs are: refused past the limit.
                let limit = self.cfg.max_job_list;
                let endpoint = v.ctld("jobs");
                let too_large = |declared: Option<u64>| SlurmError::TooLarge {
                    endpoint: endpoint.clone(),
                    detail: crate::backend::bounds::ReadError::TooLarge { limit, declared }
                        .describe("[slurm] max_job_list")
                        .unwrap_or_default(),
                };
                if let Some(n) = rest.content_length().filter(|n| *n > limit) {
                    return Err(too_large(Some(n)));
                }
                let mut seen = head.len() as u64;
                let (tx, mut rx) = mpsc::channel::<Bytes>(CHUNKS_IN_FLIGHT);
                let parser = tokio::task::spawn_blocking(move || {
                    let more = std::iter::from_fn(move || rx.blocking_recv());
                    parse::jobs_streamed(v, std::iter::once(head).chain(more))
                });
                let mut read = Ok(());
                loop {
                    match self.client.chunk(&mut rest).await {
                        Ok(Some(c)) => {
                            seen += c.len() as u64;
                            if seen > limit {
                                read = Err(too_large(None));
                                break;
                            }
                            // A closed channel: the parser stopped, and its result says why.
                            if tx.send(c).await.is_err() {
                                break;
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            read = Err(e);
                            break;
                        }
                    }
                }
                drop(tx);
                let parsed = parser.await.unwrap_or_else(|e| {
                    Err(SlurmError::Malformed {
                        endpoint: "parser".into(),
                        detail: format!("parser task failed: {e}"),
                    })
                });
                // A broken download explains a list that ended early.
                read?;
                parsed?
            }
        };
        self.take_jobs(v, p, t0);
        Ok(true)
    }

    fn take_jobs(&mut self, v: ApiVersion, p: super::Parsed<JobsOut>, t0: Epoch) {
        if !v.is_legacy() {
            let mut st: Vec<(JobId, JobState)> = p.data.jobs.iter().map(|j| (j.id, j.state)).collect();
            st.sort_unstable_by_key(|(id, _)| *id);
            self.states = st;
        }
        self.live = p.data;
        self.jobs_stamp = if v.is_legacy() { Some(t0 - 2) } else { Some(p.last_update.unwrap_or(t0)) };
        self.since_full_jobs = 0;
    }

    /// Reads accounting when it is due. Failures are kept aside (the header shows them) and
    /// never stop the live data.
    async fn maybe_accounting(&mut self, v: ApiVersion) -> bool {
        let every = match self.accounting {
            Some(false) => Duration::from_secs(600),
            _ => self.cfg.accounting_every,
        };
        if self.last_accounting.is_some_and(|t| t.elapsed() < every) {
            return false;
        }
        self.last_accounting = Some(Instant::now());
        match self.read_accounting(v).await {
            Ok(true) => {
                self.accounting = Some(true);
                self.accounting_error = None;
                true
            }
            Ok(false) => {
                self.accounting = Some(false);
                self.accounting_error = None;
                false
            }
            Err(e) => {
                tracing::warn!("slurm accounting: {e}");
                self.accounting_error = Some(format!("accounting: {e}"));
                false
            }
        }
    }

    /// `Ok(false)` when slurmdbd is not reachable through this slurmrestd (404).
    async fn read_accounting(&mut self, v: ApiVersion) -> Result<bool, SlurmError> {
        let qos = match self.client.get(&v.db("qos"), &[]).await {
            Err(SlurmError::Http { status: 404, .. }) => return Ok(false),
            r => r?,
        };
        let assocs = self.client.get(&v.db("associations"), &[]).await?;
        let days = (self.cfg.history.as_secs() / 86_400).max(1);
        let jobs = self.client.get(&v.db("jobs"), &[("start_time", format!("now-{days}days"))]).await?;
        let (limits, history) = blocking(move || {
            let mut limits = Vec::new();
            if let Some(b) = qos {
                limits.extend(parse::qos(v, &b)?);
            }
            if let Some(b) = assocs {
                limits.extend(parse::associations(v, &b)?);
            }
            let history = match jobs {
                Some(b) => parse::db_jobs(v, &b)?,
                None => Vec::new(),
            };
            Ok((limits, history))
        })
        .await?;
        self.limits = limits;
        self.history = history;
        Ok(true)
    }

    /// The GPU allocations seen in the last job list.
    pub fn allocs(&self) -> &[GpuAlloc] {
        &self.live.allocs
    }
}

/// The waits after consecutive failures: 2 s doubling to 5 min, ±20 % jitter.
pub fn backoff() -> Backoff {
    Backoff::new(Duration::from_secs(2), Duration::from_secs(300), 0.2)
}

/// The backend task: refreshes until cancelled. `refresh_now` triggers an immediate refresh
/// (the manual refresh key).
pub async fn run(
    cfg: SlurmConfig,
    tx: mpsc::Sender<Update>,
    refresh_now: Arc<Notify>,
    cancel: CancellationToken,
) {
    let status = |error: String, detail: Option<Text>| {
        Update::Status(SourceStatus {
            cluster: Default::default(),
            name: SOURCE.into(),
            simulated: false,
            ok_at: None,
            error: Some(error),
            detail,
        })
    };
    let _ = tx
        .send(Update::Status(SourceStatus {
            cluster: Default::default(),
            name: SOURCE.into(),
            simulated: false,
            ok_at: None,
            error: None,
            detail: Some("connecting".into()),
        }))
        .await;
    let mut poller = match Poller::new(cfg.clone()) {
        Ok(p) => p,
        Err(e) => {
            let _ = tx.send(status(e.to_string(), None)).await;
            return;
        }
    };
    let mut retry = backoff();
    loop {
        let result = tokio::select! {
            _ = cancel.cancelled() => return,
            r = poller.refresh(&tx) => r,
        };
        let wait = match result {
            Ok(()) => {
                retry.reset();
                jitter(cfg.refresh, 0.1)
            }
            Err(e) => {
                tracing::warn!("slurm refresh failed: {e}");
                if matches!(e, SlurmError::Http { status: 404, .. } | SlurmError::NoVersion { .. }) {
                    // The server may have been upgraded: negotiate again.
                    poller.client.version = cfg.client.version;
                    poller.client.release = None;
                }
                let _ = tx.send(status(e.to_string(), poller.detail())).await;
                // An authentication failure counts as a failure too, but waits as below.
                let wait = retry.next_delay();
                if e.is_auth() { cfg.refresh.max(Duration::from_secs(30)) } else { wait }
            }
        };
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
            _ = refresh_now.notified() => {}
        }
    }
}
