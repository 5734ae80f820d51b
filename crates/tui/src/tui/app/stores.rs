//! The console's stores: the usage ledger and the ack store (their threads do the file I/O), and
//! handing freed heap back after a large release.

use super::*;

/// The console's side of the usage ledger: what to record (the tracker, on this task; cheap)
/// and the ledger's thread that writes and answers (file I/O, never on this task).
pub struct LedgerLink {
    pub writer: crate::store::ledger::Writer,
    /// One per cluster the state holds (one, scope `""`, in a single-cluster console): each
    /// cluster is recorded in its own ledger.
    pub trackers: Vec<crate::cost::track::Tracker>,
    /// The last window answer of each ledger (one per cluster in a fleet): (ledger name, window
    /// seconds, result).
    pub answers: Vec<(String, i64, Result<crate::store::WindowData, crate::store::LedgerError>)>,
    /// Bumped with each answer (the cost report is rebuilt for it).
    pub seq: u64,
    /// The window asked for last and when (wall clock).
    asked: Option<(i64, std::time::Instant)>,
    /// The last write failure, until writes succeed again.
    pub failure: Option<crate::store::LedgerError>,
}
/// The console's side of the ack store: its thread (file I/O, never on this task) and when it
/// was last asked for the cluster's acks.
pub struct AckLink {
    pub worker: crate::store::acks::Worker,
    asked: Option<std::time::Instant>,
}
impl AckLink {
    pub fn new(worker: crate::store::acks::Worker) -> AckLink {
        AckLink { worker, asked: None }
    }
}
/// How often the console reads the ack store again (acks made in other consoles show within it).
pub const ACK_REFRESH: std::time::Duration = std::time::Duration::from_secs(5);
/// How often the Cost view asks the ledger again for the window it shows.
const LEDGER_REASK: std::time::Duration = std::time::Duration::from_secs(15);
/// The ledgers the Cost view reads for `s`: (the cluster's scope in the state, its ledger's
/// name), one per configured cluster in a fleet, the files the trackers write.
fn ledgers(s: &ClusterState) -> Vec<(Text, Text)> {
    s.clusters()
        .iter()
        .map(|c| {
            let t = crate::cost::track::Tracker::for_cluster(c.clone());
            (c.clone(), t.ledger_name(s))
        })
        .filter(|(_, name)| !name.is_empty())
        .collect()
}
impl LedgerLink {
    pub fn new(writer: crate::store::ledger::Writer) -> LedgerLink {
        LedgerLink { writer, trackers: Vec::new(), answers: Vec::new(), seq: 0, asked: None, failure: None }
    }
}
impl App {
    /// How one of the console's own files did: to the state, like every figure.
    pub fn on_store(&mut self, s: crate::model::protocol::StoreStatus) -> bool {
        self.feed_one(Update::Store(s)) && !self.ui.paused && self.ui.view == views::sources::ID
    }

    pub(crate) fn on_acks(&mut self, a: crate::store::acks::Answer) -> bool {
        use crate::store::acks::Answer;
        match a {
            Answer::Store(s) => self.on_store(s),
            Answer::Acks { cluster, acks } if !self.routes.is_empty() => {
                // A fleet: each cluster's acks replace only that cluster's.
                if !self.routes.contains_key(cluster.as_str()) {
                    return false;
                }
                let mut all: Vec<_> =
                    self.handling.acks.iter().filter(|a| a.cluster != cluster).cloned().collect();
                all.extend(acks);
                if all == self.handling.acks {
                    return false;
                }
                self.handling.acks = all;
                self.push_handling()
            }
            Answer::Acks { cluster, acks } => {
                if cluster != self.live.cluster.as_str() || self.handling.acks == acks {
                    return false;
                }
                self.handling.acks = acks;
                self.push_handling()
            }
            Answer::Stored(_) => false,
            Answer::Failed(e) => {
                self.ui.message = Some((e.to_string(), true));
                true
            }
        }
    }

    /// Hands the state the acks and audited actions its incidents' lifecycle comes from.
    pub(crate) fn push_handling(&mut self) -> bool {
        self.feed_one(Update::Handling(Box::new(self.handling.clone()))) && !self.ui.paused
    }

    /// Asks the ack store for this cluster's acks every [`ACK_REFRESH`] (answers come back as
    /// [`Msg::Acks`]).
    pub fn acks_tick(&mut self) {
        // In a fleet, each cluster's acks by its name.
        let clusters: Vec<String> = if self.routes.is_empty() {
            vec![self.live.cluster.to_string()]
        } else {
            self.routes.keys().map(|c| c.to_string()).collect()
        };
        let now = self.wall_now.max(self.live.now);
        let Some(l) = self.acks.as_mut() else { return };
        if l.asked.is_none_or(|t| t.elapsed() >= ACK_REFRESH) {
            l.asked = Some(std::time::Instant::now());
            for cluster in clusters {
                self.emit(Effect::Acks(crate::store::acks::Request::Load { cluster, now }));
            }
        }
    }

    /// The Prometheus backend's figures of a job the ledger wants a summary of: the summary
    /// goes to the ledger (nothing on screen changes).
    pub(crate) fn on_job_figures(&mut self, f: crate::model::jobstats::JobFigures) -> bool {
        let at = self.state().now;
        let prices = self.state().prices.clone();
        let put = self.summaries.as_mut().and_then(|s| s.answered(f, at, &self.efficiency, &prices));
        if let Some(r) = put.filter(|_| self.ledger.is_some()) {
            self.emit(Effect::Ledger(r));
        }
        false
    }

    pub(crate) fn on_ledger(&mut self, a: crate::store::ledger::Answer) -> bool {
        use crate::store::ledger::Answer;
        let a = match a {
            Answer::Store(s) => return self.on_store(s),
            Answer::SummaryWanted { cluster, job, intervals } => {
                let prices = self.state().prices.clone();
                if let Some(s) = self.summaries.as_mut() {
                    s.want(cluster, job, intervals, &self.efficiency, &prices);
                }
                return false;
            }
            a => a,
        };
        let Some(l) = self.ledger.as_mut() else { return false };
        match a {
            Answer::Store(_) => {}
            Answer::Window { cluster, result } => {
                // The window the answer is for (a key may have changed the asked one since).
                let window = match &result {
                    Ok(w) => w.to - w.from,
                    Err(_) => l.asked.map_or(0, |(w, _)| w),
                };
                l.answers.retain(|(c, _, _)| *c != cluster);
                l.answers.push((cluster, window, result));
                l.seq += 1;
            }
            Answer::Failed(e) => l.failure = Some(e),
            Answer::Recovered => l.failure = None,
            Answer::SummaryWanted { .. } => {}
        }
        self.ui.view == views::cost::ID
    }

    /// Hands the ledger what it should record (an observation once a minute of source time)
    /// and asks it for the Cost view's window when that is shown. Returns whether the screen
    /// changes (it does not: answers come back as [`Msg::Ledger`]).
    /// An update or a look of `objects` jobs and nodes: a large one replaces (and frees) as
    /// much as it brings, so freed memory is handed back once things are quiet again.
    pub(crate) fn note_release(&mut self, objects: usize) {
        if objects >= LARGE_RELEASE {
            self.trim.released(std::time::Instant::now());
        }
    }

    /// Hands freed heap back to the system when a large release has settled, off this task (the
    /// trim walks every arena).
    pub fn memory_tick(&mut self) {
        if self.trim.due(std::time::Instant::now()) {
            self.emit(Effect::TrimHeap);
        }
    }

    pub fn ledger_tick(&mut self) {
        let Some(l) = self.ledger.as_mut() else { return };
        let s = &self.live;
        for c in s.clusters() {
            if !l.trackers.iter().any(|t| t.scope() == c) {
                l.trackers.push(crate::cost::track::Tracker::for_cluster(c.clone()));
            }
        }
        let mut recorded = 0;
        let mut fx = Vec::new();
        for t in &mut l.trackers {
            if let Some(o) = t.next(s, crate::cost::track::JOBS_PER_LOOK) {
                recorded += o.jobs.len() + o.intervals.len();
                fx.push(Effect::Ledger(crate::store::ledger::Request::Record(Box::new(o))));
            }
        }
        self.fx.extend(fx);
        self.note_release(recorded);
        let Some(l) = self.ledger.as_mut() else { return };
        let s = &self.live;
        if self.ui.view != views::cost::ID {
            return;
        }
        let window = cost::WINDOWS[views::cost::settings(&self.ui.own).window].0;
        if l.asked.is_none_or(|(w, at)| w != window || at.elapsed() >= LEDGER_REASK) {
            l.asked = Some((window, std::time::Instant::now()));
            // Each cluster's own ledger (the files the trackers write), one request each.
            let asks: Vec<Effect> = ledgers(s)
                .into_iter()
                .map(|(_, name)| {
                    Effect::Ledger(crate::store::ledger::Request::Window {
                        cluster: name.to_string(),
                        from: s.now - window,
                        to: s.now,
                    })
                })
                .collect();
            self.fx.extend(asks);
        }
    }

    /// The cost report for the shown state and window: from the ledger's answer when it has
    /// one for this window, saying why not when the ledger fails.
    pub(crate) fn cost_report(&self, s: &ClusterState, window: i64) -> CostReport {
        let Some(l) = &self.ledger else { return cost::report(s, window) };
        let mut windows: Vec<(&str, &crate::store::WindowData)> = Vec::new();
        let mut reading = false;
        let names = ledgers(s);
        for (scope, name) in &names {
            match l.answers.iter().find(|(c, w, _)| *w == window && c.as_str() == name.as_str()) {
                Some((_, _, Ok(data))) => windows.push((scope.as_str(), data)),
                Some((_, _, Err(e))) => return cost::report_unavailable(s, window, e.to_string()),
                None => reading = true,
            }
        }
        if let Some(e) = &l.failure
            && (reading || windows.is_empty())
        {
            return cost::report_unavailable(s, window, e.to_string());
        }
        if reading || windows.is_empty() {
            // Asked, not answered yet: the jobs the console holds meanwhile, said to be so.
            return cost::report_reading(s, window);
        }
        let mut r = cost::report_ledgers(s, s.now - window, s.now, &windows);
        if let Some(e) = &l.failure {
            r.basis = cost::Basis::Unavailable { why: format!("{e} (figures up to the last write)") };
        }
        r
    }
}
