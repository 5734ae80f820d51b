//! The usage ledger: one SQLite file per cluster (`<data dir>/ledger/<cluster>.sqlite`) that
//! records what ran where, for how long and on which GPUs, so cost windows (1d, 7d, 30d) are
//! answered from what was recorded, not from what one console happens to hold in memory.
//!
//! * `jobs`: one row per job, upserted while it runs (`last_seen` moves on) and finished with
//!   its efficiency summary (`mean_util`: utilisation-weighted over its GPU-hours).
//! * `gpu_intervals`: what held which GPU from when to when, with the mean utilisation seen.
//!   A GPU index of -1 means "this many of the node's GPUs, index unknown" (a scheduler that
//!   reports counts, not devices; accounting history).
//! * `capacity`: per GPU model, how many GPUs were allocated, unallocated, drained, down and in
//!   maintenance, one row per observation covering the `step_s` seconds before `at`.
//!
//! The schema version is SQLite's `user_version`; [`MIGRATIONS`] takes a file from any older
//! version (an empty file is version 0) to [`SCHEMA_VERSION`] in one immediate transaction, so
//! two consoles opening the same new file do not both migrate it. The file is in WAL mode: one
//! writer at a time (a busy timeout waits for the other), readers never block it.

use crate::model::Epoch;
use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior, params};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The version [`MIGRATIONS`] brings a file to.
pub const SCHEMA_VERSION: i64 = 3;
const _: () = assert!(SCHEMA_VERSION == super::sqlite::version_of(MIGRATIONS));

/// `MIGRATIONS[v]` takes a file from version `v` to `v + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 0 → 1: the first schema.
    r#"
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE nodes (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
    CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        user_name TEXT NOT NULL,
        account TEXT NOT NULL,
        queue TEXT NOT NULL,
        state TEXT NOT NULL,
        submitted INTEGER NOT NULL,
        started INTEGER,
        ended INTEGER,
        gpus INTEGER NOT NULL,
        gpu_model TEXT,
        nodes TEXT NOT NULL,
        exit_reason TEXT,
        gpu_seconds REAL NOT NULL,
        useful_gpu_seconds REAL NOT NULL,
        mean_util REAL,
        first_seen INTEGER NOT NULL,
        last_seen INTEGER NOT NULL
    );
    CREATE INDEX jobs_until ON jobs (COALESCE(ended, last_seen));
    CREATE TABLE gpu_intervals (
        job INTEGER NOT NULL,
        node INTEGER NOT NULL REFERENCES nodes (id),
        gpu INTEGER NOT NULL,
        gpus INTEGER NOT NULL,
        started INTEGER NOT NULL,
        ended INTEGER NOT NULL,
        util REAL,
        PRIMARY KEY (job, node, gpu, started)
    ) WITHOUT ROWID;
    CREATE INDEX gpu_intervals_ended ON gpu_intervals (ended);
    CREATE TABLE capacity (
        at INTEGER NOT NULL,
        step_s INTEGER NOT NULL,
        model TEXT NOT NULL,
        allocated INTEGER NOT NULL,
        unallocated INTEGER NOT NULL,
        drained INTEGER NOT NULL,
        down INTEGER NOT NULL,
        maintenance INTEGER NOT NULL
    );
    CREATE INDEX capacity_at ON capacity (at);
    "#,
    // 1 → 2: the scheduler's time limit of a job (seconds), for time-limit use.
    "ALTER TABLE jobs ADD COLUMN time_limit INTEGER;",
    // 2 → 3: a job's efficiency summary from Prometheus, recorded at its end (JSON: the
    // store does not read it), so its report outlives Prometheus's retention.
    "CREATE TABLE job_summaries (job INTEGER PRIMARY KEY, recorded_at INTEGER NOT NULL, summary TEXT NOT NULL);",
];

/// One job as the ledger keeps it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct JobRecord {
    pub id: u64,
    pub name: String,
    pub user: String,
    pub account: String,
    pub queue: String,
    /// The state's label (`RUNNING`, `COMPLETED`, `FAILED`, …).
    pub state: String,
    pub submit: Epoch,
    pub start: Option<Epoch>,
    pub end: Option<Epoch>,
    pub gpus: u32,
    pub gpu_model: Option<String>,
    pub nodes: Vec<String>,
    pub exit_reason: Option<String>,
    pub gpu_seconds: f64,
    pub useful_gpu_seconds: f64,
    /// At the job's end: utilisation weighted by GPU-hours (useful / allocated GPU-seconds), %.
    pub mean_util: Option<f64>,
    pub first_seen: Epoch,
    pub last_seen: Epoch,
    /// The scheduler's time limit, seconds.
    pub time_limit: Option<i64>,
}

/// A GPU (or, with `gpu: None`, `gpus` GPUs of a node) held by a job from `start` to `end`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GpuInterval {
    pub job: u64,
    pub node: String,
    pub gpu: Option<u8>,
    pub gpus: u32,
    pub start: Epoch,
    pub end: Epoch,
    /// Mean utilisation seen over the interval, %.
    pub util: Option<f32>,
}

/// GPUs of one model by what they were doing, over the `step_s` seconds before `at`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CapacitySample {
    pub at: Epoch,
    pub step_s: i64,
    pub model: String,
    pub allocated: u32,
    /// Schedulable but held by no job.
    pub unallocated: u32,
    /// Not held and not schedulable: draining, drained, cordoned.
    pub drained: u32,
    /// Not held: down, not responding, unknown.
    pub down: u32,
    /// Not held: in a maintenance reservation.
    pub maintenance: u32,
}

/// What one look at the cluster adds to the ledger; written in one transaction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observation {
    pub cluster: String,
    pub at: Epoch,
    pub jobs: Vec<JobRecord>,
    pub intervals: Vec<GpuInterval>,
    pub capacity: Vec<CapacitySample>,
}

/// GPU-seconds of one model by cause, summed over a window.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CapacityTotal {
    pub model: String,
    pub allocated_s: f64,
    pub unallocated_s: f64,
    pub drained_s: f64,
    pub down_s: f64,
    pub maintenance_s: f64,
}

/// What the ledger holds for a window `[from, to]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowData {
    pub from: Epoch,
    pub to: Epoch,
    /// The ledger's first record: when it is after `from`, the window is not fully covered.
    pub first_record: Option<Epoch>,
    /// Jobs that ran for some of the window.
    pub jobs: Vec<JobRecord>,
    pub capacity: Vec<CapacityTotal>,
    pub path: PathBuf,
}

impl WindowData {
    /// When the ledger is younger than the window: its first record (the window's end when
    /// it has none yet).
    pub fn data_since(&self) -> Option<Epoch> {
        Some(self.first_record.unwrap_or(self.to)).filter(|&f| f > self.from)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerErrorKind {
    /// The file is not a database, or is damaged.
    Corrupt,
    /// Another process holds the write lock longer than the busy timeout.
    Locked,
    /// Written by a newer gpuplane (its schema version).
    TooNew(i64),
    /// Anything else: the directory cannot be made, the disk is full, permissions.
    Other,
}

/// A ledger failure, phrased for an operator: what is wrong with which file and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerError {
    pub path: PathBuf,
    pub kind: LedgerErrorKind,
    pub detail: String,
}

impl std::fmt::Display for LedgerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = self.path.display();
        match self.kind {
            LedgerErrorKind::Corrupt => write!(
                f,
                "ledger {p} is damaged or not a database ({}): move it aside and gpuplane starts a new one",
                self.detail
            ),
            LedgerErrorKind::Locked => write!(
                f,
                "ledger {p} is locked by another process ({}): another gpuplane is writing it; retrying",
                self.detail
            ),
            LedgerErrorKind::TooNew(v) => write!(
                f,
                "ledger {p} has schema version {v}, newer than this gpuplane reads ({SCHEMA_VERSION}): upgrade gpuplane"
            ),
            LedgerErrorKind::Other => write!(f, "ledger {p}: {}", self.detail),
        }
    }
}

impl std::error::Error for LedgerError {}

impl LedgerError {
    fn of(path: &Path, e: &rusqlite::Error) -> LedgerError {
        let kind = match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => LedgerErrorKind::Corrupt,
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => LedgerErrorKind::Locked,
            _ => LedgerErrorKind::Other,
        };
        LedgerError { path: path.to_path_buf(), kind, detail: e.to_string() }
    }
}

/// The ledger's file for a cluster inside `dir` (the name reduced to `[A-Za-z0-9._-]`).
pub fn path_for(dir: &Path, cluster: &str) -> PathBuf {
    let mut name: String = cluster
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' })
        .collect();
    if name.is_empty() || name.starts_with('.') {
        name.insert(0, '_');
    }
    dir.join(format!("{name}.sqlite"))
}

/// An open ledger file.
pub struct Ledger {
    conn: Connection,
    path: PathBuf,
    nodes: HashMap<String, i64>,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger").field("path", &self.path).finish()
    }
}

/// How long a write waits for another process's write before it reports the file locked.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

impl Ledger {
    /// Opens (creating it and its directory when missing) and migrates the ledger at `path`.
    pub fn open(path: &Path) -> Result<Ledger, LedgerError> {
        Self::open_with(path, BUSY_TIMEOUT)
    }

    pub fn open_with(path: &Path, busy: Duration) -> Result<Ledger, LedgerError> {
        let err = |e: rusqlite::Error| LedgerError::of(path, &e);
        // The migration that creates the file records when the ledger began ("data since").
        let created = |tx: &rusqlite::Transaction<'_>| {
            tx.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('created', CAST(strftime('%s', 'now') AS TEXT))",
                [],
            )
            .map(drop)
        };
        let conn = super::sqlite::open(path, busy, MIGRATIONS, created).map_err(|e| match e {
            super::sqlite::OpenError::Sqlite(e) => LedgerError::of(path, &e),
            super::sqlite::OpenError::Dir(detail) => {
                LedgerError { path: path.to_path_buf(), kind: LedgerErrorKind::Other, detail }
            }
            super::sqlite::OpenError::TooNew(v, _) => LedgerError {
                path: path.to_path_buf(),
                kind: LedgerErrorKind::TooNew(v),
                detail: String::new(),
            },
        })?;
        tracing::debug!(path = %path.display(), "ledger opened");
        let mut l = Ledger { conn, path: path.to_path_buf(), nodes: HashMap::new() };
        l.load_nodes().map_err(err)?;
        Ok(l)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: rusqlite::Error) -> LedgerError {
        LedgerError::of(&self.path, &e)
    }

    fn load_nodes(&mut self) -> rusqlite::Result<()> {
        let mut st = self.conn.prepare("SELECT id, name FROM nodes")?;
        let rows = st.query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, i64>(0)?)))?;
        let nodes = rows.collect::<rusqlite::Result<HashMap<_, _>>>()?;
        drop(st);
        self.nodes = nodes;
        Ok(())
    }

    /// The schema version of the open file.
    pub fn version(&self) -> Result<i64, LedgerError> {
        self.conn.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(|e| self.err(e))
    }

    /// Writes observations in one transaction.
    pub fn record(&mut self, batch: &[Observation]) -> Result<(), LedgerError> {
        let r = self.record_inner(batch);
        if r.is_err() {
            // A failed transaction may have added node ids that were rolled back.
            let _ = self.load_nodes();
        }
        r.map_err(|e| self.err(e))
    }

    fn record_inner(&mut self, batch: &[Observation]) -> rusqlite::Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut job = tx.prepare_cached(
                "INSERT INTO jobs (id, name, user_name, account, queue, state, submitted, started, ended,
                    gpus, gpu_model, nodes, exit_reason, gpu_seconds, useful_gpu_seconds, mean_util,
                    first_seen, last_seen, time_limit)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?17, ?18)
                 ON CONFLICT (id) DO UPDATE SET name = excluded.name, user_name = excluded.user_name,
                    account = excluded.account, queue = excluded.queue,
                    submitted = excluded.submitted, started = excluded.started,
                    ended = COALESCE(excluded.ended, jobs.ended),
                    state = CASE WHEN excluded.ended IS NULL AND jobs.ended IS NOT NULL
                                 THEN jobs.state ELSE excluded.state END,
                    gpus = excluded.gpus, gpu_model = excluded.gpu_model, nodes = excluded.nodes,
                    exit_reason = COALESCE(excluded.exit_reason, jobs.exit_reason),
                    gpu_seconds = MAX(jobs.gpu_seconds, excluded.gpu_seconds),
                    useful_gpu_seconds = CASE WHEN excluded.gpu_seconds >= jobs.gpu_seconds
                                 THEN excluded.useful_gpu_seconds ELSE jobs.useful_gpu_seconds END,
                    mean_util = CASE WHEN excluded.gpu_seconds >= jobs.gpu_seconds THEN excluded.mean_util
                                 WHEN COALESCE(excluded.ended, jobs.ended) IS NOT NULL
                                 THEN 100.0 * jobs.useful_gpu_seconds / jobs.gpu_seconds
                                 ELSE jobs.mean_util END,
                    last_seen = MAX(jobs.last_seen, excluded.last_seen),
                    time_limit = COALESCE(excluded.time_limit, jobs.time_limit)",
            )?;
            let mut node_ins = tx.prepare_cached("INSERT INTO nodes (name) VALUES (?1)")?;
            // An interval ends at its job's end at the latest (a process closes what it holds
            // at its next look, up to a minute after the job ended); a shorter sighting of the
            // same interval (another process's, a restarted one's) does not shorten it.
            let mut iv = tx.prepare_cached(
                "INSERT INTO gpu_intervals (job, node, gpu, gpus, started, ended, util)
                 SELECT ?1, ?2, ?3, ?4, ?5, MAX(?5, MIN(?6, COALESCE((SELECT ended FROM jobs WHERE id = ?1), ?6))), ?7
                 WHERE true
                 ON CONFLICT (job, node, gpu, started) DO UPDATE SET gpus = excluded.gpus,
                    ended = MAX(gpu_intervals.ended, excluded.ended),
                    util = CASE WHEN excluded.ended >= gpu_intervals.ended OR gpu_intervals.util IS NULL
                                THEN COALESCE(excluded.util, gpu_intervals.util) ELSE gpu_intervals.util END",
            )?;
            // What earlier looks wrote past a job's end, once its end is known.
            let mut clip = tx.prepare_cached(
                "UPDATE gpu_intervals SET ended = MAX(started, ?2) WHERE job = ?1 AND ended > ?2",
            )?;
            // A sample is kept only when no sample of its model already covers part of its
            // time: two consoles on one cluster must not count the same idle GPUs twice.
            let mut cap = tx.prepare_cached(
                "INSERT INTO capacity (at, step_s, model, allocated, unallocated, drained, down, maintenance)
                 SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
                 WHERE NOT EXISTS (SELECT 1 FROM capacity
                                   WHERE model = ?3 AND at > ?1 - ?2 AND at - step_s < ?1)",
            )?;
            for o in batch {
                for j in &o.jobs {
                    let mean = j.mean_util.or_else(|| {
                        (j.end.is_some() && j.gpu_seconds > 0.0)
                            .then(|| 100.0 * j.useful_gpu_seconds / j.gpu_seconds)
                    });
                    job.execute(params![
                        j.id as i64,
                        j.name,
                        j.user,
                        j.account,
                        j.queue,
                        j.state,
                        j.submit,
                        j.start,
                        j.end,
                        j.gpus,
                        j.gpu_model,
                        j.nodes.join(","),
                        j.exit_reason,
                        j.gpu_seconds,
                        j.useful_gpu_seconds,
                        mean,
                        o.at.max(j.last_seen),
                        j.time_limit,
                    ])?;
                    if let Some(end) = j.end {
                        clip.execute(params![j.id as i64, end])?;
                    }
                }
                for i in &o.intervals {
                    let node = match self.nodes.get(&i.node) {
                        Some(&id) => id,
                        None => {
                            node_ins.execute([&i.node])?;
                            let id = tx.last_insert_rowid();
                            self.nodes.insert(i.node.clone(), id);
                            id
                        }
                    };
                    let gpu = i.gpu.map_or(-1, i64::from);
                    iv.execute(params![i.job as i64, node, gpu, i.gpus, i.start, i.end, i.util])?;
                }
                for c in &o.capacity {
                    cap.execute(params![
                        c.at,
                        c.step_s,
                        c.model,
                        c.allocated,
                        c.unallocated,
                        c.drained,
                        c.down,
                        c.maintenance
                    ])?;
                }
            }
        }
        tx.commit()
    }

    /// The ledger's first record (its first observation), if any.
    pub fn first_record(&self) -> Result<Option<Epoch>, LedgerError> {
        self.conn
            .query_row(
                "SELECT MIN(m) FROM (SELECT MIN(at - step_s) AS m FROM capacity
                                     UNION ALL SELECT MIN(first_seen) FROM jobs)",
                [],
                |r| r.get::<_, Option<Epoch>>(0),
            )
            .map_err(|e| self.err(e))
    }

    /// What the ledger holds for `[from, to]`.
    pub fn window(&self, from: Epoch, to: Epoch) -> Result<WindowData, LedgerError> {
        let err = |e| self.err(e);
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT id, name, user_name, account, queue, state, submitted, started, ended, gpus,
                        gpu_model, nodes, exit_reason, gpu_seconds, useful_gpu_seconds, mean_util,
                        first_seen, last_seen, time_limit
                 FROM jobs WHERE COALESCE(ended, last_seen) > ?1 AND started IS NOT NULL AND started < ?2",
            )
            .map_err(err)?;
        let jobs = st
            .query_map(params![from, to], job_row)
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(err)?;
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT model,
                        SUM(allocated * MIN(step_s, at - ?1)), SUM(unallocated * MIN(step_s, at - ?1)),
                        SUM(drained * MIN(step_s, at - ?1)), SUM(down * MIN(step_s, at - ?1)),
                        SUM(maintenance * MIN(step_s, at - ?1))
                 FROM capacity WHERE at > ?1 AND at <= ?2 GROUP BY model ORDER BY model",
            )
            .map_err(err)?;
        let capacity = st
            .query_map(params![from, to], |r| {
                Ok(CapacityTotal {
                    model: r.get(0)?,
                    allocated_s: r.get::<_, Option<f64>>(1)?.unwrap_or(0.0),
                    unallocated_s: r.get::<_, Option<f64>>(2)?.unwrap_or(0.0),
                    drained_s: r.get::<_, Option<f64>>(3)?.unwrap_or(0.0),
                    down_s: r.get::<_, Option<f64>>(4)?.unwrap_or(0.0),
                    maintenance_s: r.get::<_, Option<f64>>(5)?.unwrap_or(0.0),
                })
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(err)?;
        Ok(WindowData {
            from,
            to,
            first_record: self.first_record()?,
            jobs,
            capacity,
            path: self.path.clone(),
        })
    }

    /// One job and the GPU-intervals it held.
    pub fn job(&self, id: u64) -> Result<Option<(JobRecord, Vec<GpuInterval>)>, LedgerError> {
        let err = |e| self.err(e);
        let job = self
            .conn
            .query_row(
                "SELECT id, name, user_name, account, queue, state, submitted, started, ended, gpus,
                        gpu_model, nodes, exit_reason, gpu_seconds, useful_gpu_seconds, mean_util,
                        first_seen, last_seen, time_limit FROM jobs WHERE id = ?1",
                [id as i64],
                job_row,
            )
            .optional()
            .map_err(err)?;
        let Some(job) = job else { return Ok(None) };
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT n.name, i.gpu, i.gpus, i.started, i.ended, i.util
                 FROM gpu_intervals i JOIN nodes n ON n.id = i.node
                 WHERE i.job = ?1 ORDER BY n.name, i.gpu, i.started",
            )
            .map_err(err)?;
        let intervals = st
            .query_map([id as i64], |r| {
                Ok(GpuInterval {
                    job: id,
                    node: r.get(0)?,
                    gpu: u8::try_from(r.get::<_, i64>(1)?).ok(),
                    gpus: r.get(2)?,
                    start: r.get(3)?,
                    end: r.get(4)?,
                    util: r.get::<_, Option<f64>>(5)?.map(|u| u as f32),
                })
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(err)?;
        Ok(Some((job, intervals)))
    }

    /// Keeps a job's efficiency summary (JSON), replacing an older one.
    pub fn put_summary(&mut self, job: u64, at: Epoch, summary: &str) -> Result<(), LedgerError> {
        self.conn
            .execute(
                "INSERT INTO job_summaries (job, recorded_at, summary) VALUES (?1, ?2, ?3)
                 ON CONFLICT (job) DO UPDATE SET recorded_at = excluded.recorded_at, summary = excluded.summary",
                params![job as i64, at, summary],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// A job's efficiency summary and when it was recorded.
    pub fn summary(&self, job: u64) -> Result<Option<(Epoch, String)>, LedgerError> {
        self.conn
            .query_row("SELECT recorded_at, summary FROM job_summaries WHERE job = ?1", [job as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Row counts: (jobs, GPU-intervals, capacity samples).
    pub fn counts(&self) -> Result<(u64, u64, u64), LedgerError> {
        self.conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM jobs), (SELECT COUNT(*) FROM gpu_intervals),
                        (SELECT COUNT(*) FROM capacity)",
                [],
                |r| {
                    let n = |i| r.get::<_, i64>(i).map(|v| v.max(0) as u64);
                    Ok((n(0)?, n(1)?, n(2)?))
                },
            )
            .map_err(|e| self.err(e))
    }

    /// Forgets what ended before `before` (the retention setting keeps the file bounded).
    pub fn prune(&mut self, before: Epoch) -> Result<(), LedgerError> {
        let r = (|| {
            let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute("DELETE FROM jobs WHERE COALESCE(ended, last_seen) < ?1", [before])?;
            tx.execute("DELETE FROM gpu_intervals WHERE ended < ?1", [before])?;
            tx.execute("DELETE FROM capacity WHERE at < ?1", [before])?;
            tx.execute("DELETE FROM job_summaries WHERE job NOT IN (SELECT id FROM jobs)", [])?;
            tx.commit()
        })();
        r.map_err(|e| self.err(e))
    }
}

fn job_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<JobRecord> {
    let nodes: String = r.get(11)?;
    Ok(JobRecord {
        id: r.get::<_, i64>(0)? as u64,
        name: r.get(1)?,
        user: r.get(2)?,
        account: r.get(3)?,
        queue: r.get(4)?,
        state: r.get(5)?,
        submit: r.get(6)?,
        start: r.get(7)?,
        end: r.get(8)?,
        gpus: r.get(9)?,
        gpu_model: r.get(10)?,
        nodes: nodes.split(',').filter(|s| !s.is_empty()).map(String::from).collect(),
        exit_reason: r.get(12)?,
        gpu_seconds: r.get(13)?,
        useful_gpu_seconds: r.get(14)?,
        mean_util: r.get(15)?,
        first_seen: r.get(16)?,
        last_seen: r.get(17)?,
        time_limit: r.get(18)?,
    })
}

/// A request to the ledger's thread.
#[derive(Debug)]
pub enum Request {
    Record(Box<Observation>),
    /// Answered with [`Answer::Window`].
    Window {
        cluster: String,
        from: Epoch,
        to: Epoch,
    },
    /// Answered by sending on the channel once everything before it is written.
    Flush(std::sync::mpsc::Sender<()>),
    /// Keeps a job's efficiency summary (JSON), asked for by [`Answer::SummaryWanted`].
    PutSummary {
        cluster: String,
        job: u64,
        at: Epoch,
        summary: String,
    },
}

/// What the ledger's thread reports.
#[derive(Debug, Clone)]
pub enum Answer {
    Window {
        cluster: String,
        result: Result<WindowData, LedgerError>,
    },
    /// A write failed (the records are dropped; the next observation carries the state again).
    Failed(LedgerError),
    /// Writes succeed again after a failure.
    Recovered,
    /// How the last write or read of a cluster's file went (each failure, else every
    /// [`super::status::REPORT_EVERY`]).
    Store(crate::model::protocol::StoreStatus),
    /// A job of `cluster` ended and has no efficiency summary yet: its record and GPU intervals,
    /// for the console to ask Prometheus about (through the Prometheus backend) and hand back
    /// as [`Request::PutSummary`]. Each job is said once.
    SummaryWanted {
        cluster: String,
        job: Box<JobRecord>,
        intervals: Vec<GpuInterval>,
    },
}

/// Jobs waiting for a summary, at most; past it, ended jobs get none from this console.
const SUMMARY_QUEUE: usize = 256;

/// The ledger's own thread: it owns the database, batches queued observations into one
/// transaction, answers window queries, and prunes past the retention; when asked to, it says
/// of each job it sees end (within `max_age` seconds of the observation) that its summary is
/// wanted ([`Answer::SummaryWanted`]), between writes, and keeps the summary it is handed.
/// It never asks a source itself. Nothing here runs on the async runtime's threads.
pub struct Writer {
    tx: Option<std::sync::mpsc::Sender<Request>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    /// Starts the thread; ledgers live in `dir`, one file per cluster. `retention_s` of 0
    /// keeps everything.
    pub fn spawn(
        dir: PathBuf,
        retention_s: i64,
        answer: impl Fn(Answer) + Send + 'static,
    ) -> std::io::Result<Writer> {
        Self::spawn_with(dir, retention_s, answer, None)
    }

    /// [`spawn`](Self::spawn) that also says which ended jobs want a summary: those that
    /// ended at most `summaries` seconds before the observation.
    pub fn spawn_with(
        dir: PathBuf,
        retention_s: i64,
        answer: impl Fn(Answer) + Send + 'static,
        summarise: Option<i64>,
    ) -> std::io::Result<Writer> {
        let (tx, rx) = std::sync::mpsc::channel::<Request>();
        let thread = std::thread::Builder::new()
            .name("ledger".into())
            .spawn(move || writer_loop(&dir, retention_s, &rx, &answer, summarise))?;
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

/// Observations queued together are written in one transaction, up to this many.
const BATCH: usize = 64;

fn writer_loop(
    dir: &Path,
    retention_s: i64,
    rx: &std::sync::mpsc::Receiver<Request>,
    answer: &dyn Fn(Answer),
    summarise: Option<i64>,
) {
    use std::sync::mpsc::TryRecvError;
    let mut open: Option<(String, Ledger)> = None;
    let mut failing: Option<LedgerError> = None;
    let mut pruned_at: Option<Epoch> = None;
    let mut pending: Vec<Request> = Vec::new();
    // Ended jobs waiting for their summary, and those already asked about.
    let mut todo: std::collections::VecDeque<(String, u64)> = Default::default();
    let mut asked: std::collections::HashSet<u64> = Default::default();
    let mut reporters: std::collections::HashMap<String, super::status::Reporter> = Default::default();
    let mut report = |cluster: &str, op: &'static str, r: Result<(), &LedgerError>| {
        let rep = reporters.entry(cluster.to_string()).or_default();
        if let Some(s) = rep.outcome(super::status::LEDGER, &path_for(dir, cluster), op, r) {
            answer(Answer::Store(s));
        }
    };
    loop {
        let first = match pending.pop() {
            Some(r) => r,
            None if !todo.is_empty() => match rx.try_recv() {
                Ok(r) => r,
                Err(TryRecvError::Empty) => {
                    if let Some((cluster, id)) = todo.pop_front() {
                        want_summary(&mut open, dir, &cluster, id, answer);
                    }
                    continue;
                }
                Err(TryRecvError::Disconnected) => return,
            },
            None => match rx.recv() {
                Ok(r) => r,
                Err(_) => return,
            },
        };
        match first {
            Request::Record(o) => {
                let mut batch = vec![*o];
                while batch.len() < BATCH {
                    match rx.try_recv() {
                        Ok(Request::Record(o)) if o.cluster == batch[0].cluster => batch.push(*o),
                        Ok(other) => {
                            pending.push(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                let cluster = batch[0].cluster.clone();
                let at = batch.iter().map(|o| o.at).max().unwrap_or(0);
                let r = ledger_for(&mut open, dir, &cluster).and_then(|l| {
                    l.record(&batch)?;
                    if retention_s > 0 && pruned_at.is_none_or(|p| at - p >= 3_600) {
                        pruned_at = Some(at);
                        l.prune(at - retention_s)?;
                    }
                    Ok(())
                });
                report(&cluster, "write", r.as_ref().map(drop));
                match r {
                    Ok(()) => {
                        if failing.take().is_some() {
                            answer(Answer::Recovered);
                        }
                        if let Some(max_age) = &summarise {
                            for o in &batch {
                                for j in o.jobs.iter().filter(|j| j.end.is_some_and(|e| o.at - e <= *max_age))
                                {
                                    if todo.len() < SUMMARY_QUEUE && asked.insert(j.id) {
                                        todo.push_back((cluster.clone(), j.id));
                                    }
                                }
                            }
                            if asked.len() > 100_000 {
                                asked.clear();
                            }
                        }
                    }
                    Err(e) => {
                        tracing::warn!("{e}");
                        if e.kind == LedgerErrorKind::Corrupt {
                            open = None;
                        }
                        if failing.as_ref() != Some(&e) {
                            answer(Answer::Failed(e.clone()));
                        }
                        failing = Some(e);
                    }
                }
            }
            Request::Window { cluster, from, to } => {
                let result = ledger_for(&mut open, dir, &cluster).and_then(|l| l.window(from, to));
                report(&cluster, "read", result.as_ref().map(drop));
                if let Err(e) = &result
                    && e.kind == LedgerErrorKind::Corrupt
                {
                    open = None;
                }
                answer(Answer::Window { cluster, result });
            }
            Request::Flush(done) => {
                let _ = done.send(());
            }
            Request::PutSummary { cluster, job, at, summary } => {
                let r = ledger_for(&mut open, dir, &cluster).and_then(|l| l.put_summary(job, at, &summary));
                report(&cluster, "write", r.as_ref().map(drop));
                if let Err(e) = r {
                    tracing::warn!("job summary: {e}");
                }
            }
        }
    }
}

/// Says that job `id` of `cluster` wants its summary, with its record and GPU intervals,
/// unless the ledger has one already.
fn want_summary(
    open: &mut Option<(String, Ledger)>,
    dir: &Path,
    cluster: &str,
    id: u64,
    answer: &dyn Fn(Answer),
) {
    let r = ledger_for(open, dir, cluster).and_then(|l| {
        if l.summary(id)?.is_some() {
            return Ok(None);
        }
        l.job(id)
    });
    match r {
        Ok(Some((job, intervals))) if job.gpus > 0 => {
            answer(Answer::SummaryWanted { cluster: cluster.to_string(), job: Box::new(job), intervals })
        }
        Ok(_) => {}
        Err(e) => tracing::warn!("job summary: {e}"),
    }
}

fn ledger_for<'a>(
    open: &'a mut Option<(String, Ledger)>,
    dir: &Path,
    cluster: &str,
) -> Result<&'a mut Ledger, LedgerError> {
    if open.as_ref().is_none_or(|(c, _)| c != cluster) {
        *open = None;
        let l = Ledger::open(&path_for(dir, cluster))?;
        *open = Some((cluster.to_string(), l));
    }
    match open {
        Some((_, l)) => Ok(l),
        None => Err(LedgerError {
            path: path_for(dir, cluster),
            kind: LedgerErrorKind::Other,
            detail: "not open".into(),
        }),
    }
}
