//! Prometheus telemetry: GPU (dcgm-exporter), fabric and storage (node_exporter) health from
//! any Prometheus-compatible query API (Prometheus, Thanos, Mimir, Cortex).
//!
//! The backend is a tokio task that sends [`Update`]s; nothing here runs on the UI task.
//! Each refresh (default 15 s, jittered ±10 %) sends [`queries::PER_REFRESH`] queries (19) —
//! [`queries::EVERY`] and one [`queries::ROTATING`] family, each for the whole cluster,
//! whatever its size — concurrently, parses and joins the answers off the async threads, and
//! sends one [`Update::Delta`] (`source: "prom"`) with a [`NodeSample`](crate::model::protocol::NodeSample)
//! per node that has data, plus the storage list.
//!
//! * **Prometheus alone** (`discover_nodes`): nodes and GPUs are discovered from the series
//!   (one query at start and every 20 refreshes, or sooner when an unknown host shows up) and
//!   sent as an [`Update::Inventory`] before the deltas; GPU ownership, node allocation and
//!   jobs come from dcgm-exporter's `pod`/`namespace` and `hpc_job` labels.
//! * **With a scheduler**: only deltas; telemetry joins the scheduler's nodes by name (map
//!   host labels to node names with `[prometheus.host_map]`), and ownership stays the
//!   scheduler's.
//! * **History**: at start, the last `backfill` minutes of GPU utilisation and temperature
//!   come from one `query_range` each and are replayed as deltas, so sparklines and the
//!   allocated-but-idle timer start filled; the XID window is read once to date each GPU's
//!   current XID. After that the state's own history rings fill from the deltas, and the
//!   detail pane's last hour comes from [`focus`]: the console publishes what it shows (a node,
//!   a GPU, a job) and only that is range-queried (three queries, debounced while scrolling,
//!   renewed every minute while it stays on screen; for a job, also the evidence on its nodes
//!   over the hour, [`evidence`]).
//! * **Alerts** (`alerts`, set where no Alertmanager is configured): each refresh also reads
//!   `/api/v1/alerts` (the alerting rules' firing and pending alerts) and sends them as an
//!   [`Update::Alerts`] with `source: "prom"`, so the Alerts view and the incidents see what
//!   Prometheus fires; read-only (Prometheus has no silences). A failure there is partial data.
//! * **Health**: every outcome is an [`Update::Status`]: unreachable, slow, 5xx or refused
//!   credentials say so with the age of the last data, and retry with exponential backoff and
//!   jitter; the API's own errors (`bad_data`, `execution`) and warnings are shown verbatim, and
//!   a refresh where some families failed still delivers the others (partial data).

pub mod alerts;
pub mod api;
pub mod client;
pub mod config;
pub mod evidence;
pub mod figures;
pub mod focus;
pub mod jobstats;
pub mod map;
pub mod queries;

pub use client::{PromClient, PromError};
pub use config::{PromConfig, PromSection};

use crate::backend::retry::{Backoff, jitter};
use crate::model::alert::AlertSnapshot;
use crate::model::protocol::{Delta, Inventory, SourceStatus, Update};
use crate::model::{Epoch, Text};
use client::Body;
use map::{Mapped, Memory, Refresh};
use queries::{BACKFILL, Family};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::Sender;
use tokio_util::sync::CancellationToken;

/// The source name in the header.
pub const SOURCE: &str = "prom";

/// Refreshes between two discovery queries (Prometheus alone).
const REDISCOVER_EVERY: u32 = 20;

/// Wait after the focus changes before asking (scrolling settles first).
const FOCUS_DEBOUNCE: Duration = Duration::from_millis(250);

/// Age at which the focus's history is asked again while it stays on screen.
const FOCUS_RENEW_S: Epoch = 60;

/// How far back, and at what step, the start of each GPU's current XID and double-bit ECC
/// count is looked for at start (steps aligned to multiples of the step, so every console
/// dates it the same); an ECC count older than that is left undated, an XID dated at its start.
pub const DATING: (i64, i64) = (24 * 3600, 60);

/// Longest wait between retries.
const MAX_BACKOFF: Duration = Duration::from_secs(300);

fn now() -> Epoch {
    jiff::Timestamp::now().as_second()
}

/// The waits after consecutive failed refreshes: twice the refresh period (at least 1 s), doubling
/// up to five minutes, ±10 % jitter.
pub fn backoff(refresh: Duration) -> Backoff {
    Backoff::new(refresh.max(Duration::from_secs(1)).saturating_mul(2), MAX_BACKOFF, 0.1)
}

/// How old the last data is, for an error message.
pub fn age_text(ok_at: Option<Epoch>, now: Epoch) -> String {
    match ok_at {
        Some(t) => format!("last data {} s ago", (now - t).max(0)),
        None => "no data yet".into(),
    }
}

/// The answers of one refresh, parsed and joined: what the delta carries, plus problems
/// (failed families, verbatim) and the server's warnings.
#[derive(Debug, Default)]
pub struct Outcome {
    pub mapped: Mapped,
    /// `family: error`, one per family that failed.
    pub failed: Vec<(Family, PromError)>,
    pub warnings: Vec<String>,
    /// How many queries the refresh sent.
    pub asked: usize,
    /// Whether the answers were joined as they were read (else parsed first).
    pub as_read: bool,
}

/// Refreshes joined from parsed answers after one whose answers were not all read directly
/// (an escape in a label value is likely to come again): the direct reading is tried again
/// after these.
const PARSED_ONLY_FOR: u32 = 20;

/// Parses and joins one refresh's bodies (CPU work: run it off the async threads).
///
/// Each body is joined as it is read ([`Refresh::add_body`]); where one is not a plain
/// success that the direct reading takes (an error, an escape, a truncated body), the refresh
/// starts again from parsed answers, which give the precise errors. Both ways join the same.
pub fn map_refresh(
    cfg: &PromConfig,
    bodies: &[(Family, Result<Body, PromError>)],
    at: Epoch,
    mem: &mut Memory,
) -> Outcome {
    if mem.parsed_only > 0 {
        mem.parsed_only -= 1;
    } else {
        match map_direct(cfg, bodies, at, mem) {
            Some(out) => return out,
            None => mem.parsed_only = PARSED_ONLY_FOR,
        }
    }
    map_parsed(cfg, bodies, at, mem)
}

/// [`map_refresh`] straight from the bodies; `None` (and nothing joined) where one is not read.
fn map_direct(
    cfg: &PromConfig,
    bodies: &[(Family, Result<Body, PromError>)],
    at: Epoch,
    mem: &mut Memory,
) -> Option<Outcome> {
    let mut r = Refresh::with_memory(mem);
    let mut out = Outcome { asked: bodies.len(), as_read: true, ..Outcome::default() };
    for (f, body) in bodies {
        match body {
            Ok(b) => {
                let Some(notes) = r.add_body(cfg, *f, &b.0) else {
                    r.abandon(mem);
                    return None;
                };
                for w in notes.warnings.iter().chain(&notes.infos) {
                    if !out.warnings.contains(w) {
                        out.warnings.push(w.clone());
                    }
                }
            }
            Err(e) => out.failed.push((*f, e.clone())),
        }
    }
    out.mapped = r.finish(at, cfg.discover_nodes, mem);
    Some(out)
}

/// [`map_refresh`] from parsed answers.
fn map_parsed(
    cfg: &PromConfig,
    bodies: &[(Family, Result<Body, PromError>)],
    at: Epoch,
    mem: &mut Memory,
) -> Outcome {
    let mut r = Refresh::with_memory(mem);
    let mut out = Outcome { asked: bodies.len(), ..Outcome::default() };
    for (f, body) in bodies {
        let parsed = body.as_ref().map_err(Clone::clone).and_then(Body::parse);
        match parsed {
            Ok(resp) => {
                r.add(cfg, *f, &resp.results);
                for w in resp.warnings.iter().chain(&resp.infos) {
                    if !out.warnings.contains(w) {
                        out.warnings.push(w.clone());
                    }
                }
            }
            Err(e) => out.failed.push((*f, e)),
        }
    }
    out.mapped = r.finish(at, cfg.discover_nodes, mem);
    out
}

impl Outcome {
    /// Everything went wrong in the same way a server that is down does, or every answer was
    /// refused or unreadable (a hostile or broken server): nothing new to show.
    pub fn unreachable(&self) -> Option<&PromError> {
        let first = &self.failed.first()?.1;
        let refused = |e: &PromError| matches!(e, PromError::TooLarge { .. } | PromError::Decode { .. });
        let all = self.failed.len() == self.asked;
        (all && (first.is_unreachable() || self.failed.iter().all(|(_, e)| refused(e)))).then_some(first)
    }

    /// The status text for partial data and warnings (`None` when all is well).
    pub fn problems(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.failed.is_empty() {
            let list: Vec<String> = self.failed.iter().map(|(f, e)| format!("{}: {e}", f.name())).collect();
            parts.push(format!(
                "partial data, {} of {} queries failed: {}",
                self.failed.len(),
                self.asked,
                list.join("; ")
            ));
        }
        if !self.warnings.is_empty() {
            parts.push(format!("warning: {}", self.warnings.join("; ")));
        }
        (!parts.is_empty()).then(|| format!("prometheus: {}", parts.join(" — ")))
    }
}

/// The backend task: runs until `cancel`.
pub async fn run(cfg: PromConfig, tx: Sender<Update>, cancel: CancellationToken) {
    run_with_focus(cfg, tx, cancel, None).await
}

/// The backend task, also range-querying what the console's detail pane shows (`focus`).
pub async fn run_with_focus(
    cfg: PromConfig,
    tx: Sender<Update>,
    cancel: CancellationToken,
    focus: Option<tokio::sync::watch::Receiver<Option<crate::model::protocol::Focus>>>,
) {
    let mut b = Backend::new(cfg, tx, cancel.clone());
    b.focus = focus;
    tokio::select! {
        _ = cancel.cancelled() => {}
        _ = b.main() => {}
    }
}

struct Backend {
    cfg: Arc<PromConfig>,
    tx: Sender<Update>,
    cancel: CancellationToken,
    ok_at: Option<Epoch>,
    version: Option<Text>,
    mem: Memory,
    /// Refreshes sent so far (picks the rotating family, see [`queries::schedule`]).
    refreshes: u64,
    known: HashSet<Text>,
    /// Discovered nodes not sent yet: the first inventory goes out dated at the backfill's start,
    /// so that replayed history is not older than the state's clock.
    pending: Option<Vec<crate::model::Node>>,
    /// What the console shows, and what was last fetched for it (and when).
    focus: Option<tokio::sync::watch::Receiver<Option<crate::model::protocol::Focus>>>,
    focus_fetched: Option<(crate::model::protocol::Focus, Epoch)>,
}

impl Backend {
    fn new(cfg: PromConfig, tx: Sender<Update>, cancel: CancellationToken) -> Self {
        Self {
            cfg: Arc::new(cfg),
            tx,
            cancel,
            ok_at: None,
            version: None,
            mem: Memory::default(),
            refreshes: 0,
            known: HashSet::new(),
            pending: None,
            focus: None,
            focus_fetched: None,
        }
    }

    async fn send(&self, u: Update) -> bool {
        tokio::select! {
            _ = self.cancel.cancelled() => false,
            r = self.tx.send(u) => r.is_ok(),
        }
    }

    async fn status(&self, error: Option<String>, ok_at: Option<Epoch>) -> bool {
        self.send(Update::Status(SourceStatus {
            cluster: Default::default(),
            name: Text::const_new(SOURCE),
            simulated: false,
            ok_at,
            error,
            detail: self.version.clone(),
        }))
        .await
    }

    async fn fail(&self, e: &PromError) -> bool {
        let msg = format!("prometheus: {e} ({})", age_text(self.ok_at, now()));
        tracing::warn!("{msg}");
        self.status(Some(msg), None).await
    }

    async fn main(&mut self) {
        let client = match PromClient::new(&self.cfg) {
            Ok(c) => c,
            Err(e) => {
                self.fail(&e).await;
                return;
            }
        };
        if !self.status(None, None).await {
            return;
        }
        let mut retry = backoff(self.cfg.refresh);
        let mut since_discovery = u32::MAX;
        let mut backfilled = false;
        loop {
            if self.cfg.discover_nodes && since_discovery >= REDISCOVER_EVERY {
                match self.discover(&client).await {
                    Ok(()) => since_discovery = 0,
                    Err(e) => {
                        if !self.fail(&e).await {
                            return;
                        }
                        tokio::time::sleep(retry.next_delay()).await;
                        continue;
                    }
                }
            }
            if self.version.is_none() {
                self.version = client.version().await.map(Text::from);
            }
            if !backfilled {
                backfilled = true;
                if let Err(e) = self.backfill(&client).await {
                    tracing::warn!("prometheus: history backfill skipped: {e}");
                }
            }
            if !self.send_inventory(now()).await {
                return;
            }
            let (ok, unknown) = match self.refresh(&client).await {
                Some(x) => x,
                None => return,
            };
            since_discovery = since_discovery.saturating_add(1);
            if unknown && self.cfg.discover_nodes {
                since_discovery = REDISCOVER_EVERY;
            }
            let wait = if ok {
                retry.reset();
                jitter(self.cfg.refresh, 0.1)
            } else {
                retry.next_delay()
            };
            if ok {
                self.fetch_focus(&client, false).await;
            }
            self.pause(&client, wait).await;
        }
    }

    /// Waits `wait`, fetching the history of each new focus meanwhile.
    async fn pause(&mut self, client: &PromClient, wait: Duration) {
        let until = tokio::time::Instant::now() + wait;
        loop {
            let Some(rx) = self.focus.as_mut() else {
                tokio::time::sleep_until(until).await;
                return;
            };
            tokio::select! {
                _ = tokio::time::sleep_until(until) => return,
                changed = rx.changed() => {
                    if changed.is_err() {
                        self.focus = None;
                        continue;
                    }
                    // Scrolling through rows asks once, for the row it stops on.
                    tokio::time::sleep(FOCUS_DEBOUNCE).await;
                    self.fetch_focus(client, true).await;
                }
            }
        }
    }

    /// Range-queries the focus when it is new (or `changed`), or its history is a minute old.
    async fn fetch_focus(&mut self, client: &PromClient, changed: bool) {
        let Some(focus) = self.focus.as_mut().and_then(|rx| rx.borrow_and_update().clone()) else {
            return;
        };
        let t = now();
        let fresh = matches!(&self.focus_fetched, Some((f, at)) if *f == focus && t - at < FOCUS_RENEW_S);
        if fresh && !changed {
            return;
        }
        match focus::fetch(client, &self.cfg, &focus, t).await {
            Ok(Some(h)) => {
                self.focus_fetched = Some((focus, t));
                self.send(Update::History(Box::new(h))).await;
            }
            Ok(None) => self.focus_fetched = Some((focus, t)),
            Err(e) => tracing::warn!("prometheus: history for the detail pane: {e}"),
        }
    }

    /// One discovery query → an Inventory with the nodes and GPUs found.
    async fn discover(&mut self, client: &PromClient) -> Result<(), PromError> {
        let body = client.query(&queries::discovery(&self.cfg), None).await?;
        let cfg = self.cfg.clone();
        let nodes = tokio::task::spawn_blocking(move || {
            let resp = body.parse()?;
            Ok::<_, PromError>(map::discover(&cfg, &resp.results))
        })
        .await
        .map_err(|e| PromError::Decode { url: client.url().into(), detail: e.to_string() })??;
        self.known = nodes.iter().map(|n| n.name.clone()).collect();
        self.ok_at = Some(now());
        self.pending = Some(nodes);
        Ok(())
    }

    async fn send_inventory(&mut self, at: Epoch) -> bool {
        let Some(nodes) = self.pending.take() else { return true };
        let inventory =
            Inventory { source: Text::const_new(SOURCE), nodes: Some(nodes), ..Inventory::default() };
        self.send(Update::Inventory { at, inventory: Box::new(inventory) }).await
    }

    /// History at start: one `query_range` per [`BACKFILL`] family, replayed as deltas.
    async fn backfill(&mut self, client: &PromClient) -> Result<(), PromError> {
        let span = self.cfg.backfill.as_secs();
        if span == 0 {
            return Ok(());
        }
        // One point per refresh period, but no more points than the state keeps.
        let max_points = crate::model::protocol::HISTORY_LEN as f64 - 2.0;
        let step = (self.cfg.refresh.as_secs().max(1) as f64).max((span as f64 / max_points).ceil());
        let end = now() as f64;
        let start = end - span as f64;
        let mut bodies = Vec::new();
        // Only to date the current XIDs and double-bit ECC counts: a day, aligned steps.
        let (span, dstep) = DATING;
        let dend = (end as i64).div_euclid(dstep) * dstep;
        for f in BACKFILL {
            let q = queries::promql(&self.cfg, *f);
            let body = match f {
                Family::XidLast => {
                    client.query_range(&q, (dend - span) as f64, dend as f64, dstep as f64).await?
                }
                _ => client.query_range(&q, start, end - step, step).await?,
            };
            bodies.push((*f, body));
        }
        for f in [Family::EccDbe, Family::IbState, Family::IbFlaps] {
            let q = queries::promql(&self.cfg, f);
            bodies.push((f, client.query_range(&q, (dend - span) as f64, dend as f64, dstep as f64).await?));
        }
        if !self.send_inventory(start as Epoch).await {
            return Ok(());
        }
        let cfg = self.cfg.clone();
        let mut mem = std::mem::take(&mut self.mem);
        let steps = tokio::task::spawn_blocking(move || {
            let deltas = replay(&cfg, &bodies, start, end - step, step, &mut mem);
            (deltas, mem)
        })
        .await;
        let (deltas, mem) =
            steps.map_err(|e| PromError::Decode { url: client.url().into(), detail: e.to_string() })?;
        self.mem = mem;
        let deltas = deltas?;
        for d in deltas {
            if !self.send(Update::Delta(Box::new(d))).await {
                break;
            }
        }
        Ok(())
    }

    /// One refresh. `None`: the console is gone. `Some((ok, unknown hosts seen))`.
    async fn refresh(&mut self, client: &PromClient) -> Option<(bool, bool)> {
        let at = now();
        let t = at as f64;
        let families = queries::schedule(self.refreshes);
        let futures = families.into_iter().map(|f| {
            let q = queries::promql(&self.cfg, f);
            async move { (f, client.query(&q, Some(t)).await) }
        });
        let read_alerts = async {
            match self.cfg.alerts {
                true => Some(client.alerts().await),
                false => None,
            }
        };
        let (bodies, alerts): (Vec<(Family, Result<Body, PromError>)>, _) =
            tokio::join!(futures::future::join_all(futures), read_alerts);
        let cfg = self.cfg.clone();
        let mut mem = std::mem::take(&mut self.mem);
        let joined = tokio::task::spawn_blocking(move || {
            let out = map_refresh(&cfg, &bodies, at, &mut mem);
            (out, mem)
        })
        .await;
        let Ok((out, mem)) = joined else {
            return Some((false, false));
        };
        self.mem = mem;
        if let Some(e) = out.unreachable() {
            return self.fail(e).await.then_some((false, false));
        }
        let unknown =
            self.cfg.discover_nodes && out.mapped.samples.iter().any(|s| !self.known.contains(&s.node));
        let mut problems = out.problems();
        let alerts = match alerts {
            Some(Ok(body)) => match alerts::parse(&body.0) {
                Ok(a) => Some(a),
                Err(e) => {
                    problems = Some(join_problem(problems, &e));
                    None
                }
            },
            Some(Err(e)) => {
                problems = Some(join_problem(problems, &format!("alerts: {e}")));
                None
            }
            None => None,
        };
        if let Some(p) = &problems {
            tracing::warn!("{p}");
        }
        let delta = out.mapped.into_delta(at);
        self.ok_at = Some(at);
        self.refreshes += 1;
        if !self.send(Update::Delta(Box::new(delta))).await {
            return None;
        }
        if let Some(alerts) = alerts {
            let snap = AlertSnapshot { source: Text::const_new(SOURCE), at, alerts, silences: vec![] };
            if !self.send(Update::Alerts(Box::new(snap))).await {
                return None;
            }
        }
        if !self.status(problems, Some(at)).await {
            return None;
        }
        Some((true, unknown))
    }
}

/// A problem added to the status text (`prometheus: a — b`).
fn join_problem(problems: Option<String>, more: &str) -> String {
    match problems {
        Some(p) => format!("{p} — {more}"),
        None => format!("prometheus: {more}"),
    }
}

/// The GPU a series is about: its node (mapped to the scheduler's name) and index.
fn gpu_key(cfg: &PromConfig, s: &api::Series<'_, '_>) -> Option<(Text, u8)> {
    let host = s.first_label(&cfg.labels.gpu_host)?;
    let idx = s.label(&cfg.labels.gpu).and_then(|g| g.parse::<u8>().ok())?;
    Some((Text::from(cfg.host_map.map(host).as_ref()), idx))
}

/// The first point of a series' newest run of its last value (when it took that value).
fn newest_run(s: &api::Series<'_, '_>) -> Option<api::Point> {
    let last = s.last()?;
    let run = s.points.iter().rev().take_while(|p| p.v == last.v).count();
    s.points.get(s.points.len() - run).copied()
}

/// Range answers → one delta per step, oldest first.
pub fn replay(
    cfg: &PromConfig,
    bodies: &[(Family, Body)],
    start: f64,
    end: f64,
    step: f64,
    mem: &mut Memory,
) -> Result<Vec<Delta>, PromError> {
    let parsed: Vec<(Family, api::Response<'_>)> =
        bodies.iter().map(|(f, b)| b.parse().map(|r| (*f, r))).collect::<Result<_, _>>()?;
    // Date each GPU's current XID: the start of the newest run of the same code.
    for (f, r) in &parsed {
        if *f != Family::XidLast {
            continue;
        }
        for s in r.results.iter() {
            let (Some(key), Some(last), Some(first)) = (gpu_key(cfg, &s), s.last(), newest_run(&s)) else {
                continue;
            };
            mem.xid_first.insert(key, (last.v as u16, first.t as Epoch));
        }
    }
    // Date each GPU's double-bit ECC count: the first step of its newest run, unless the run
    // goes back to the range's start (older than the range: not dated).
    for (f, r) in &parsed {
        if *f != Family::EccDbe {
            continue;
        }
        for s in r.results.iter() {
            let (Some(key), Some(last), Some(first)) = (gpu_key(cfg, &s), s.last(), newest_run(&s)) else {
                continue;
            };
            let (span, step) = DATING;
            if first.t <= last.t - (span - step / 2) as f64 {
                continue;
            }
            mem.dbe_first.insert(key, (last.v as u32, first.t as Epoch));
        }
    }
    // Date each port that is not Active (and each flapping port): the first step of its newest
    // unbroken run in the same state (flapping at all); a step missing is the port back up (not
    // flapping). A run over the whole range is left undated.
    for (f, r) in &parsed {
        if !matches!(f, Family::IbState | Family::IbFlaps) {
            continue;
        }
        let (span, step) = DATING;
        for s in r.results.iter() {
            let (Some(host), Some(dev), Some(last)) =
                (s.first_label(&cfg.labels.node_host), s.label("device"), s.last())
            else {
                continue;
            };
            let mut first = last;
            let flaps = *f == Family::IbFlaps;
            for p in s.points.iter().rev().skip(1) {
                if (!flaps && p.v != last.v) || first.t - p.t > step as f64 * 1.5 {
                    break;
                }
                first = *p;
            }
            if first.t <= last.t - (span - step / 2) as f64 {
                continue;
            }
            let port = Text::from(format!("{dev}/{}", s.label("port").unwrap_or("1")));
            let key = (Text::from(cfg.host_map.map(host).as_ref()), port);
            match flaps {
                true => mem.flaps_since.insert(key, first.t as Epoch),
                false => mem.port_since.insert(key, (map::port_state(last.v), first.t as Epoch)).map(|x| x.1),
            };
        }
    }
    let n = (((end - start) / step).round().max(0.0) as usize) + 1;
    let mut cursors: Vec<Vec<usize>> = parsed.iter().map(|(_, r)| vec![0; r.results.len()]).collect();
    let mut out = Vec::with_capacity(n);
    for k in 0..n {
        let t = start + k as f64 * step;
        let mut r = Refresh::new();
        for ((f, resp), cur) in parsed.iter().zip(&mut cursors) {
            if matches!(f, Family::XidLast | Family::EccDbe | Family::IbState | Family::IbFlaps) {
                continue;
            }
            let pts = resp.results.iter().zip(cur.iter_mut()).filter_map(|(s, c)| {
                while let Some(p) = s.points.get(*c) {
                    if p.t < t - step / 2.0 {
                        *c += 1;
                        continue;
                    }
                    if p.t <= t + step / 2.0 {
                        *c += 1;
                        return Some((s, *p));
                    }
                    break;
                }
                None
            });
            r.add_points(cfg, *f, pts);
        }
        let m = r.finish(t as Epoch, cfg.discover_nodes, mem);
        if m.samples.is_empty() {
            continue;
        }
        // History replays telemetry only: the storage list is the live refresh's.
        out.push(Delta { storage: None, ..m.into_delta(t as Epoch) });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use queries::schedule;

    fn vector(series: &[(String, &str)]) -> Body {
        let list: Vec<String> = series
            .iter()
            .map(|(labels, v)| format!(r#"{{"metric":{{{labels}}},"value":[1795959344.452,"{v}"]}}"#))
            .collect();
        Body(
            format!(
                r#"{{"status":"success","data":{{"resultType":"vector","result":[{}]}}}}"#,
                list.join(",")
            )
            .into_bytes(),
        )
    }

    /// The answers of refresh `k` on a small fleet that has a bit of everything: pods and
    /// Slurm jobs, free GPUs, a GPU answered twice, values that are no numbers, hosts out of
    /// order, hostile label values, sparse families, ports coming and going, a failed query.
    fn answers(k: u64) -> Vec<(Family, Result<Body, PromError>)> {
        // Node 5's name needs sanitising (no escapes: JSON carries these raw).
        let host = |n: usize| if n == 5 { "gpu-\u{202e}\u{7f}05".to_string() } else { format!("gpu-{n:02}") };
        let nodes = [0, 1, 2, 3, 5, 4, 6, 7, 8, 9];
        let gpu = |n: usize, g: usize| format!(r#""Hostname":"{}","gpu":"{g}""#, host(n));
        let port =
            |n: usize, p: usize| format!(r#""device":"mlx5_{p}","instance":"{}:9100","port":"1""#, host(n));
        let k = k as usize;
        schedule(k as u64)
            .into_iter()
            .map(|f| {
                let mut s: Vec<(String, &str)> = Vec::new();
                let vals = ["1", "73", "0", "NaN", "12345678901234", "2.5", "+Inf", "7"];
                match f {
                    Family::Gpu => {
                        for n in nodes {
                            for g in 0..8 {
                                s.push((gpu(n, g), vals[(n + g + k) % 8]));
                            }
                        }
                        s.push((gpu(3, 2), "99"));
                    }
                    Family::GpuAlloc => {
                        for n in nodes.iter().filter(|n| **n != 7) {
                            for g in 0..8 {
                                let job = if n % 3 == 0 {
                                    format!(r#","hpc_job":"{}""#, 1000 + n * 10 + (k % 2))
                                } else {
                                    format!(r#","namespace":"team-{}","pod":"train-{}-{}""#, n % 2, n, g / 4)
                                };
                                s.push((format!("{}{job}", gpu(*n, g)), "1"));
                            }
                        }
                    }
                    Family::XidLast | Family::XidCount | Family::EccDbe | Family::NvlinkCrc => {
                        s.push((gpu(2, 3), if k.is_multiple_of(3) { "43" } else { "79" }));
                        s.push((gpu(9, 0), "2"));
                    }
                    Family::IbState | Family::IbFlaps => s.push((port(4, 1), "1")),
                    Family::IbRate | Family::IbRx | Family::IbTx => {
                        for n in nodes {
                            // Node 6 loses a port on odd refreshes.
                            for p in 0..(if n == 6 && k % 2 == 1 { 3 } else { 4 }) {
                                s.push((port(n, p), vals[(n * 3 + p + k) % 8]));
                            }
                        }
                    }
                    Family::IbSymbol => s.push((port(1, 2), "12")),
                    Family::FsSize | Family::FsAvail => s.push((
                        r#""device":"10.0.0.1@o2ib:/ckptfs","fstype":"lustre","mountpoint":"/mnt/ckpt""#
                            .into(),
                        "4503600000000",
                    )),
                    Family::FsRead | Family::FsWrite => {
                        s.push((r#""export":"10.0.0.2:/home""#.into(), vals[k % 8]));
                        s.push((format!(r#""instance":"{}:9100""#, host(3)), "1048576"));
                    }
                    _ => {}
                }
                if f == Family::EccSbe && k == 3 {
                    return (f, Err(PromError::Api { error_type: "execution".into(), error: "boom".into() }));
                }
                (f, Ok(vector(&s)))
            })
            .collect()
    }

    /// What a refresh delivers and what the backend remembers of it, as text.
    fn seen(out: &Outcome, mem: &Memory) -> String {
        let mut xid: Vec<_> = mem.xid_first.iter().collect();
        xid.sort();
        format!(
            "{:?} {:?} {:?} {:?} {:?} {:?}",
            out.mapped, out.failed, out.warnings, mem.jobs, mem.nodes, xid
        )
    }

    /// Joining the bodies as they are read and joining them parsed give the same deltas and
    /// memory, refresh after refresh; a body the direct reading does not take sends the
    /// refresh, and the next few, the parsed way.
    #[test]
    fn joining_as_read_and_joining_parsed_agree() {
        let cfg = PromConfig { discover_nodes: true, ..PromConfig::new("http://x") };
        let (mut direct, mut parsed) = (Memory::default(), Memory::default());
        for k in 0..9 {
            let bodies = answers(k);
            parsed.parsed_only = u32::MAX;
            let a = map_refresh(&cfg, &bodies, 1_795_959_000 + 15 * k as i64, &mut direct);
            assert!(a.as_read && direct.parsed_only == 0, "refresh {k} joined as read");
            let b = map_refresh(&cfg, &bodies, 1_795_959_000 + 15 * k as i64, &mut parsed);
            assert!(!b.as_read);
            assert_eq!(seen(&a, &direct), seen(&b, &parsed), "refresh {k}");
            assert!(!a.mapped.samples.is_empty());
        }
        // An escape in one answer: that refresh and the next ones are joined parsed, alike.
        let mut bodies = answers(9);
        let Some((_, Ok(b))) = bodies.iter_mut().find(|(f, _)| *f == Family::XidLast) else { panic!() };
        let text = String::from_utf8(b.0.clone()).unwrap().replace("gpu-02", r"gpu-\u0030\u0032");
        b.0 = text.into_bytes();
        let a = map_refresh(&cfg, &bodies, 1_795_959_200, &mut direct);
        assert!(!a.as_read);
        assert_eq!(direct.parsed_only, PARSED_ONLY_FOR);
        let b = map_refresh(&cfg, &bodies, 1_795_959_200, &mut parsed);
        assert_eq!(seen(&a, &direct), seen(&b, &parsed));
        assert!(a.mapped.samples.iter().any(|s| s.node == "gpu-02" && s.gpus[3].xid.is_some()));
        let a = map_refresh(&cfg, &answers(10), 1_795_959_215, &mut direct);
        assert_eq!(direct.parsed_only, PARSED_ONLY_FOR - 1);
        let b = map_refresh(&cfg, &answers(10), 1_795_959_215, &mut parsed);
        assert_eq!(seen(&a, &direct), seen(&b, &parsed));
    }

    /// A port not Active is dated at start by the first step of its newest unbroken run in that
    /// state (a missing step is the port back up), and a refresh that still sees it so carries
    /// that date; one down for the whole range is not dated by the range.
    #[test]
    fn ports_not_active_are_dated_by_their_series() {
        let (_, step) = DATING;
        let t0 = 1_795_000_000i64;
        // Down (1) at t0..t0+2 steps, back up (missing) for two steps, down again from t0+5.
        let pts: Vec<String> =
            [0, 1, 2, 5, 6, 7, 8].iter().map(|k| format!("[{},\"1\"]", t0 + k * step)).collect();
        let body = format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{"instance":"gpu-010:9100","device":"mlx5_3","port":"1"}},"values":[{}]}}]}}}}"#,
            pts.join(",")
        );
        let cfg = PromConfig { discover_nodes: true, ..PromConfig::new("http://x") };
        let mut mem = Memory::default();
        let end = (t0 + 8 * step) as f64;
        // Flapping (2, then 3 downs in the window) without a break from t0+5.
        let flaps: Vec<String> =
            [0, 5, 6, 7, 8].iter().map(|k| format!("[{},\"{}\"]", t0 + k * step, 2 + k / 7)).collect();
        let flap_body = body.replace(&pts.join(","), &flaps.join(","));
        let bodies =
            [(Family::IbState, Body(body.into_bytes())), (Family::IbFlaps, Body(flap_body.into_bytes()))];
        replay(&cfg, &bodies, end, end, step as f64, &mut mem).unwrap();
        let key = (Text::from("gpu-010"), Text::from("mlx5_3/1"));
        assert_eq!(mem.port_since.get(&key), Some(&(crate::model::PortState::Down, t0 + 5 * step)));
        assert_eq!(mem.flaps_since.get(&key), Some(&(t0 + 5 * step)));
        // The next refresh still sees it down: the sample carries the series' date.
        let down = r#"{"instance":"gpu-010:9100","device":"mlx5_3","port":"1"}"#;
        let body = format!(
            r#"{{"status":"success","data":{{"resultType":"vector","result":[{{"metric":{down},"value":[{end},"1"]}}]}}}}"#
        );
        let out =
            map_refresh(&cfg, &[(Family::IbState, Ok(Body(body.into_bytes())))], end as Epoch + 15, &mut mem);
        let port = out
            .mapped
            .samples
            .iter()
            .find(|n| n.node == "gpu-010")
            .and_then(|n| n.ports.as_ref()?.iter().find(|p| p.name == "mlx5_3/1").cloned())
            .expect("the port in the refresh");
        assert_eq!((port.state, port.state_since), (crate::model::PortState::Down, Some(t0 + 5 * step)));
    }
}
