//! The event journal: what changed on the clusters (node state transitions, XIDs, ECC errors,
//! port flaps, failed and preempted jobs, actions, acks, alerts), one SQLite file in the data
//! dir (`<data dir>/timeline.sqlite`, beside the ack store) that every console on that data
//! dir writes, for every cluster it shows.
//!
//! Its own file rather than a table in the usage ledger: the ledger is one file per cluster and
//! the timeline is read across the fleet in one query (`gpuplane timeline`, the fleet's
//! Timeline view); its retention (days and rows) is its own; and its writes never wait on the
//! ledger's lock.
//!
//! Like the ledger and the ack store: schema version in `user_version` with migrations from an
//! empty file (in one immediate transaction), WAL, a busy timeout for the other writer, and a
//! thread of its own ([`Writer`]) so the console never touches the file.
//!
//! Two consoles see the same change and both record it: an event is kept unless the journal
//! already holds one with the same cluster and dedupe key within [`DEDUPE_WINDOW_S`] of it.
//! Keys of changes the source timestamps (an XID, a drain reason, an audit record, an ack)
//! carry that time, so they are equal exactly when the change is; changes known only by when
//! they were seen (a node going down) differ by the two consoles' poll times, which the window
//! covers. The check and the insert run in one immediate transaction, so two writers cannot
//! both pass it.

use crate::model::timeline::{Event, EventKind, SubjectKind};
use crate::model::{Epoch, JobId};
use rusqlite::{Connection, ErrorCode, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const SCHEMA_VERSION: i64 = 1;
const _: () = assert!(SCHEMA_VERSION == super::sqlite::version_of(MIGRATIONS));

/// `MIGRATIONS[v]` takes a file from version `v` to `v + 1`.
pub const MIGRATIONS: &[&str] = &[r#"
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        cluster TEXT NOT NULL,
        at INTEGER NOT NULL,
        kind TEXT NOT NULL,
        subject_kind TEXT NOT NULL,
        subject TEXT NOT NULL,
        node TEXT,
        job INTEGER,
        team TEXT,
        what TEXT NOT NULL,
        who TEXT,
        gpus INTEGER NOT NULL,
        dedupe TEXT NOT NULL
    );
    CREATE UNIQUE INDEX events_dedupe ON events (cluster, dedupe, at);
    CREATE INDEX events_at ON events (at);
    CREATE INDEX events_node ON events (node, at);
    "#];

/// Two events with the same cluster and dedupe key closer than this are one event.
pub const DEDUPE_WINDOW_S: i64 = 600;

/// Default retention: 30 days, at most a million events (the oldest go first).
pub const DEFAULT_RETENTION_DAYS: u32 = 30;
pub const DEFAULT_MAX_ROWS: u64 = 1_000_000;

/// A journal failure, phrased for an operator.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("event journal {}: {detail}", path.display())]
pub struct JournalError {
    pub path: PathBuf,
    pub detail: String,
}

impl JournalError {
    fn of(path: &Path, e: &rusqlite::Error) -> JournalError {
        let detail = match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
                format!("damaged or not a database ({e}): move it aside and gpuplane starts a new one")
            }
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
                format!("locked by another gpuplane ({e}); retrying")
            }
            _ => e.to_string(),
        };
        JournalError { path: path.to_path_buf(), detail }
    }
}

/// The journal's file inside a data dir.
pub fn path_in(data_dir: &Path) -> PathBuf {
    data_dir.join("timeline.sqlite")
}

/// How long the journal keeps events: days (0: no limit by age) and rows (0: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub days: u32,
    pub max_rows: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention { days: DEFAULT_RETENTION_DAYS, max_rows: DEFAULT_MAX_ROWS }
    }
}

/// Which events to read: a window and optional filters (all must match).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    pub from: Epoch,
    pub to: Epoch,
    /// Only these clusters (empty: all).
    pub clusters: Vec<String>,
    pub node: Option<String>,
    pub job: Option<JobId>,
    pub team: Option<String>,
    pub kind: Option<EventKind>,
    /// The newest this many (0: all), returned oldest first.
    pub limit: usize,
}

impl Query {
    /// Whether `e` is one of the events this query asks for (window and filters; not the limit):
    /// what [`Journal::query`] selects, for events from elsewhere (the audit log).
    pub fn matches(&self, e: &Event) -> bool {
        e.at >= self.from
            && e.at <= self.to
            && (self.clusters.is_empty() || self.clusters.contains(&e.cluster))
            && self.node.as_ref().is_none_or(|n| e.node.as_ref() == Some(n))
            && self.job.is_none_or(|j| e.job == Some(j))
            && self.team.as_ref().is_none_or(|t| e.team.as_ref() == Some(t))
            && self.kind.is_none_or(|k| e.kind == k)
    }
}

pub struct Journal {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("path", &self.path).finish()
    }
}

impl Journal {
    /// Opens (creating it and its directory) and migrates the journal at `path`.
    pub fn open(path: &Path) -> Result<Journal, JournalError> {
        let conn =
            super::sqlite::open(path, Duration::from_secs(2), MIGRATIONS, |_| Ok(())).map_err(|e| {
                let detail = match e {
                    super::sqlite::OpenError::Sqlite(e) => return JournalError::of(path, &e),
                    super::sqlite::OpenError::Dir(d) => d,
                    super::sqlite::OpenError::TooNew(v, ours) => {
                        format!(
                            "schema version {v} is newer than this gpuplane reads ({ours}): upgrade gpuplane"
                        )
                    }
                };
                JournalError { path: path.to_path_buf(), detail }
            })?;
        Ok(Journal { conn, path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: rusqlite::Error) -> JournalError {
        JournalError::of(&self.path, &e)
    }

    /// Records events in one transaction; returns how many were new (the others were already
    /// there, from this console or another one on the data dir).
    pub fn record(&mut self, events: &[Event]) -> Result<usize, JournalError> {
        let r = (|| {
            let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut added = 0;
            {
                let mut ins = tx.prepare_cached(
                    "INSERT OR IGNORE INTO events
                        (cluster, at, kind, subject_kind, subject, node, job, team, what, who, gpus, dedupe)
                     SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12
                     WHERE NOT EXISTS (SELECT 1 FROM events WHERE cluster = ?1 AND dedupe = ?12
                                       AND at BETWEEN ?2 - ?13 AND ?2 + ?13)",
                )?;
                for e in events {
                    added += ins.execute(params![
                        e.cluster,
                        e.at,
                        e.kind.label(),
                        e.subject_kind.label(),
                        e.subject,
                        e.node,
                        e.job.map(|j| j as i64),
                        e.team,
                        e.what,
                        e.who,
                        e.gpus,
                        e.dedupe,
                        DEDUPE_WINDOW_S,
                    ])?;
                }
            }
            tx.commit()?;
            Ok(added)
        })();
        r.map_err(|e| self.err(e))
    }

    /// The events `q` asks for, oldest first.
    pub fn query(&self, q: &Query) -> Result<Vec<Event>, JournalError> {
        let mut sql = String::from(
            "SELECT cluster, at, kind, subject_kind, subject, node, job, team, what, who, gpus, dedupe
             FROM events WHERE at >= ?1 AND at <= ?2",
        );
        let mut args: Vec<rusqlite::types::Value> = vec![q.from.into(), q.to.into()];
        let mut arg = |sql: &mut String, cond: &str, v: rusqlite::types::Value| {
            args.push(v);
            sql.push_str(&cond.replace('?', &format!("?{}", args.len())));
        };
        if let Some(n) = &q.node {
            arg(&mut sql, " AND node = ?", n.clone().into());
        }
        if let Some(j) = q.job {
            arg(&mut sql, " AND job = ?", (j as i64).into());
        }
        if let Some(t) = &q.team {
            arg(&mut sql, " AND team = ?", t.clone().into());
        }
        if let Some(k) = q.kind {
            arg(&mut sql, " AND kind = ?", k.label().to_string().into());
        }
        if !q.clusters.is_empty() {
            sql.push_str(" AND cluster IN (");
            for (i, c) in q.clusters.iter().enumerate() {
                if i > 0 {
                    sql.push(',');
                }
                arg(&mut sql, "?", c.clone().into());
            }
            sql.push(')');
        }
        sql.push_str(" ORDER BY at DESC, id DESC");
        if q.limit > 0 {
            sql.push_str(&format!(" LIMIT {}", q.limit));
        }
        let err = |e| self.err(e);
        let mut st = self.conn.prepare_cached(&sql).map_err(err)?;
        let mut out = st
            .query_map(rusqlite::params_from_iter(args), |r| {
                let kind: String = r.get(2)?;
                let sk: String = r.get(3)?;
                Ok(Event {
                    cluster: r.get(0)?,
                    at: r.get(1)?,
                    // A kind a newer gpuplane wrote reads as an action (shown, not lost).
                    kind: EventKind::from_label(&kind).unwrap_or(EventKind::Action),
                    subject_kind: SubjectKind::from_label(&sk).unwrap_or(SubjectKind::Other),
                    subject: r.get(4)?,
                    node: r.get(5)?,
                    job: r.get::<_, Option<i64>>(6)?.map(|j| j as u64),
                    team: r.get(7)?,
                    what: r.get(8)?,
                    who: r.get(9)?,
                    gpus: r.get(10)?,
                    dedupe: r.get(11)?,
                })
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(err)?;
        out.reverse();
        Ok(out)
    }

    /// How many events the journal holds.
    pub fn count(&self) -> Result<u64, JournalError> {
        self.conn
            .query_row("SELECT COUNT(*) FROM events", [], |r| r.get::<_, i64>(0))
            .map(|n| n.max(0) as u64)
            .map_err(|e| self.err(e))
    }

    /// Forgets events older than the retention's days before `now`, then the oldest beyond its
    /// rows. Returns how many went.
    pub fn prune(&mut self, now: Epoch, keep: Retention) -> Result<usize, JournalError> {
        let r = (|| {
            let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut gone = 0;
            if keep.days > 0 {
                gone +=
                    tx.execute("DELETE FROM events WHERE at < ?1", [now - i64::from(keep.days) * 86_400])?;
            }
            if keep.max_rows > 0 {
                let n: i64 = tx.query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))?;
                let over = n - keep.max_rows.min(i64::MAX as u64) as i64;
                if over > 0 {
                    gone += tx.execute(
                        "DELETE FROM events WHERE id IN (SELECT id FROM events ORDER BY at, id LIMIT ?1)",
                        [over],
                    )?;
                }
            }
            tx.commit()?;
            Ok(gone)
        })();
        r.map_err(|e| self.err(e))
    }
}

/// A request to the journal's thread.
#[derive(Debug)]
pub enum Request {
    Record(Vec<Event>),
    /// Answered with [`Answer::Events`]; `seq` comes back with it.
    Load {
        query: Query,
        seq: u64,
    },
    /// Answered by sending on the channel once everything before it is written.
    Flush(std::sync::mpsc::Sender<()>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The events a load asked for, with the load's `seq`.
    Events { seq: u64, events: Vec<Event> },
    /// A write or read failed (the events of a failed write are dropped).
    Failed(JournalError),
    /// Writes succeed again after a failure.
    Recovered,
    /// How the last write or read went (each failure, else every
    /// [`super::status::REPORT_EVERY`]).
    Store(crate::model::protocol::StoreStatus),
}

/// The journal's own thread: it owns the file, writes events, answers loads and prunes past
/// the retention (at most once an hour), so no journal I/O runs on the console's task.
pub struct Writer {
    tx: Option<std::sync::mpsc::Sender<Request>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    pub fn spawn(
        path: PathBuf,
        keep: Retention,
        answer: impl Fn(Answer) + Send + 'static,
    ) -> std::io::Result<Writer> {
        let (tx, rx) = std::sync::mpsc::channel::<Request>();
        let thread = std::thread::Builder::new().name("timeline".into()).spawn(move || {
            let mut journal: Option<Journal> = None;
            let mut failing: Option<JournalError> = None;
            let mut pruned_at: Option<Epoch> = None;
            let mut reporter = super::status::Reporter::default();
            let mut report = |op: &'static str, r: Result<(), &JournalError>| {
                if let Some(st) = reporter.outcome(super::status::TIMELINE, &path, op, r) {
                    answer(Answer::Store(st));
                }
            };
            while let Ok(r) = rx.recv() {
                if let Request::Flush(done) = r {
                    let _ = done.send(());
                    continue;
                }
                let op = if matches!(r, Request::Load { .. }) { "read" } else { "write" };
                if journal.is_none() {
                    match Journal::open(&path) {
                        Ok(j) => journal = Some(j),
                        Err(e) => {
                            report(op, Err(&e));
                            if failing.as_ref() != Some(&e) {
                                answer(Answer::Failed(e.clone()));
                            }
                            failing = Some(e);
                            continue;
                        }
                    }
                }
                let Some(j) = journal.as_mut() else { continue };
                let result = match r {
                    Request::Record(events) => j.record(&events).map(drop).and_then(|()| {
                        let now = jiff::Timestamp::now().as_second();
                        if pruned_at.is_none_or(|p| now - p >= 3_600) {
                            pruned_at = Some(now);
                            j.prune(now, keep)?;
                        }
                        Ok(())
                    }),
                    Request::Load { query, seq } => {
                        j.query(&query).map(|events| answer(Answer::Events { seq, events }))
                    }
                    Request::Flush(_) => Ok(()),
                };
                report(op, result.as_ref().map(drop));
                match result {
                    Ok(()) => {
                        if failing.take().is_some() {
                            answer(Answer::Recovered);
                        }
                    }
                    Err(e) => {
                        tracing::warn!("{e}");
                        if e.detail.contains("not a database") || e.detail.contains("damaged") {
                            journal = None;
                        }
                        if failing.as_ref() != Some(&e) {
                            answer(Answer::Failed(e.clone()));
                        }
                        failing = Some(e);
                    }
                }
            }
        })?;
        Ok(Writer { tx: Some(tx), thread: Some(thread) })
    }

    /// Queues a request; `false` when the thread is gone.
    pub fn send(&self, r: Request) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(r).is_ok())
    }

    /// Writes what is queued and stops the thread.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(cluster: &str, at: Epoch, kind: EventKind, node: &str, dedupe: &str) -> Event {
        Event {
            cluster: cluster.into(),
            at,
            kind,
            subject_kind: SubjectKind::Node,
            subject: node.into(),
            node: Some(node.into()),
            job: None,
            team: None,
            what: format!("{} on {node}", kind.label()),
            who: Some("root".into()),
            gpus: 8,
            dedupe: dedupe.into(),
        }
    }

    fn all(j: &Journal) -> Vec<Event> {
        j.query(&Query { from: 0, to: i64::MAX, ..Default::default() }).unwrap()
    }

    #[test]
    fn two_writers_on_one_file_keep_each_event_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        let mut a = Journal::open(&path).unwrap();
        let mut b = Journal::open(&path).unwrap();
        // The same XID (timestamped by the source): equal keys and times.
        let xid = ev("c1", 1_000, EventKind::Xid, "gpu-004", "xid:gpu-004/gpu3:79:1000");
        assert_eq!(a.record(std::slice::from_ref(&xid)).unwrap(), 1);
        assert_eq!(b.record(std::slice::from_ref(&xid)).unwrap(), 0);
        // A node seen going down by two consoles polling 7 s apart: one event.
        let down_a = ev("c1", 2_000, EventKind::NodeState, "gpu-005", "node-state:gpu-005:idle>down");
        let down_b = Event { at: 2_007, ..down_a.clone() };
        assert_eq!(a.record(&[down_a]).unwrap(), 1);
        assert_eq!(b.record(std::slice::from_ref(&down_b)).unwrap(), 0);
        // The same transition an hour later is a new event; so is one on another cluster.
        assert_eq!(b.record(&[Event { at: 5_600, ..down_b.clone() }]).unwrap(), 1);
        assert_eq!(b.record(&[Event { cluster: "c2".into(), ..down_b }]).unwrap(), 1);
        let got = all(&a);
        assert_eq!(got.len(), 4, "{got:#?}");
        assert_eq!(got.iter().map(|e| e.at).collect::<Vec<_>>(), vec![1_000, 2_000, 2_007, 5_600]);
        assert_eq!(got[0], xid, "read back as written");
    }

    #[test]
    fn two_writer_threads_racing_do_not_duplicate() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        drop(Journal::open(&path).unwrap());
        let events: Vec<Event> = (0..200)
            .map(|i| {
                ev("c1", 10_000 + i * 700, EventKind::NodeState, "n", &format!("node-state:n{}:a>b", i % 7))
            })
            .collect();
        let run = |shift: i64| {
            let (path, events) = (path.clone(), events.clone());
            std::thread::spawn(move || {
                let mut j = Journal::open(&path).unwrap();
                let mut added = 0;
                for chunk in events.chunks(10) {
                    let shifted: Vec<Event> =
                        chunk.iter().map(|e| Event { at: e.at + shift, ..e.clone() }).collect();
                    added += j.record(&shifted).unwrap();
                }
                added
            })
        };
        let (t1, t2) = (run(0), run(5));
        let added = t1.join().unwrap() + t2.join().unwrap();
        let j = Journal::open(&path).unwrap();
        assert_eq!(j.count().unwrap(), 200);
        assert_eq!(added, 200);
    }

    #[test]
    fn queries_filter_and_retention_prunes() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(&path_in(dir.path())).unwrap();
        let mut job = ev("c1", 3_000, EventKind::JobFailed, "gpu-002", "job:7:FAILED");
        job.job = Some(7);
        job.team = Some("vision".into());
        j.record(&[
            ev("c1", 1_000, EventKind::NodeState, "gpu-001", "a"),
            ev("c2", 2_000, EventKind::Xid, "gpu-001", "b"),
            job,
            ev("c1", 90_000, EventKind::Ecc, "gpu-003", "d"),
        ])
        .unwrap();
        let q = |j: &Journal, f: &dyn Fn(&mut Query)| {
            let mut q = Query { from: 0, to: 100_000, ..Default::default() };
            f(&mut q);
            j.query(&q).unwrap().into_iter().map(|e| e.dedupe).collect::<Vec<_>>()
        };
        assert_eq!(q(&j, &|q| q.node = Some("gpu-001".into())), ["a", "b"]);
        assert_eq!(q(&j, &|q| q.clusters = vec!["c2".into()]), ["b"]);
        assert_eq!(q(&j, &|q| q.job = Some(7)), ["job:7:FAILED"]);
        assert_eq!(q(&j, &|q| q.team = Some("vision".into())), ["job:7:FAILED"]);
        assert_eq!(q(&j, &|q| q.kind = Some(EventKind::Ecc)), ["d"]);
        assert_eq!(q(&j, &|q| q.from = 1_500), ["b", "job:7:FAILED", "d"]);
        // The newest two, oldest first.
        assert_eq!(q(&j, &|q| q.limit = 2), ["job:7:FAILED", "d"]);
        // One day kept: nothing is older yet; a little later the first two go; then rows.
        assert_eq!(j.prune(86_400 + 999, Retention { days: 1, max_rows: 0 }).unwrap(), 0);
        assert_eq!(j.prune(86_400 + 2_500, Retention { days: 1, max_rows: 0 }).unwrap(), 2);
        assert_eq!(j.count().unwrap(), 2);
        assert_eq!(j.prune(90_000, Retention { days: 0, max_rows: 1 }).unwrap(), 1);
        assert_eq!(q(&j, &|_| ()), ["d"]);
    }

    #[test]
    fn the_schema_is_versioned_and_a_newer_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        drop(Journal::open(&path).unwrap());
        let c = Connection::open(&path).unwrap();
        assert_eq!(
            c.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0)).unwrap(),
            SCHEMA_VERSION
        );
        c.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
        drop(c);
        assert!(Journal::open(&path).unwrap_err().detail.contains("newer"));
    }

    #[test]
    fn the_writer_records_and_loads_off_the_callers_thread() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let w = Writer::spawn(path_in(dir.path()), Retention::default(), move |a| {
            let _ = tx.send(a);
        })
        .unwrap();
        let now = jiff::Timestamp::now().as_second();
        let e = ev("c1", now, EventKind::NodeState, "gpu-001", "k");
        w.send(Request::Record(vec![e.clone(), e.clone()]));
        w.send(Request::Load { query: Query { from: now - 60, to: now + 60, ..Default::default() }, seq: 9 });
        let Answer::Store(st) = rx.recv().unwrap() else { panic!("the status of the write first") };
        assert_eq!((st.op, st.error), ("write", None));
        assert_eq!(rx.recv().unwrap(), Answer::Events { seq: 9, events: vec![e] });
    }
}
