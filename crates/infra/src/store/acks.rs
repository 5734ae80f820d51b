//! The ack store: acknowledgements of incidents, one SQLite file in the data dir
//! (`<data dir>/acks.sqlite`) that every console on that data dir shares, so an ack made in one
//! console shows in the others on their next refresh.
//!
//! One row per incident key and cluster (the newest ack wins). Like the usage ledger: schema
//! version in `user_version` with migrations from an empty file, WAL, a busy timeout for the
//! other writer, and a thread of its own ([`Worker`]) so the console never touches the file.

use crate::model::{Ack, Epoch, IncidentKey};
use rusqlite::{Connection, ErrorCode, params};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const SCHEMA_VERSION: i64 = 1;
const _: () = assert!(SCHEMA_VERSION == super::sqlite::version_of(MIGRATIONS));

/// `MIGRATIONS[v]` takes a file from version `v` to `v + 1`.
pub const MIGRATIONS: &[&str] = &[r#"
    CREATE TABLE acks (
        cluster TEXT NOT NULL,
        subject TEXT NOT NULL,
        signal TEXT NOT NULL,
        by_user TEXT NOT NULL,
        at INTEGER NOT NULL,
        note TEXT NOT NULL,
        ticket TEXT,
        PRIMARY KEY (cluster, subject, signal)
    ) WITHOUT ROWID;
    CREATE INDEX acks_at ON acks (at);
    "#];

/// Acks older than this are not loaded (and are pruned): an incident open for longer needs a
/// fresh look.
pub const KEEP_S: i64 = 7 * 86_400;

/// An ack store failure, phrased for an operator.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("ack store {}: {detail}", path.display())]
pub struct AckError {
    pub path: PathBuf,
    pub detail: String,
}

impl AckError {
    fn of(path: &Path, e: &rusqlite::Error) -> AckError {
        let detail = match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
                format!("damaged or not a database ({e}): move it aside and gpuplane starts a new one")
            }
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
                format!("locked by another gpuplane ({e}); retrying")
            }
            _ => e.to_string(),
        };
        AckError { path: path.to_path_buf(), detail }
    }
}

/// The store's file inside a data dir.
pub fn path_in(data_dir: &Path) -> PathBuf {
    data_dir.join("acks.sqlite")
}

pub struct AckStore {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for AckStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AckStore").field("path", &self.path).finish()
    }
}

impl AckStore {
    /// Opens (creating it and its directory) and migrates the store at `path`.
    pub fn open(path: &Path) -> Result<AckStore, AckError> {
        let conn =
            super::sqlite::open(path, Duration::from_secs(2), MIGRATIONS, |_| Ok(())).map_err(|e| {
                let detail = match e {
                    super::sqlite::OpenError::Sqlite(e) => return AckError::of(path, &e),
                    super::sqlite::OpenError::Dir(d) => d,
                    super::sqlite::OpenError::TooNew(v, ours) => {
                        format!("schema version {v} is newer than this gpuplane reads ({ours})")
                    }
                };
                AckError { path: path.to_path_buf(), detail }
            })?;
        Ok(AckStore { conn, path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records an ack (replacing an older one of the same incident).
    pub fn put(&self, a: &Ack) -> Result<(), AckError> {
        self.conn
            .execute(
                "INSERT INTO acks (cluster, subject, signal, by_user, at, note, ticket)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (cluster, subject, signal) DO UPDATE SET by_user = excluded.by_user,
                    at = excluded.at, note = excluded.note, ticket = excluded.ticket
                 WHERE excluded.at >= acks.at",
                params![a.cluster, a.key.subject, a.key.signal, a.by, a.at, a.note, a.ticket],
            )
            .map(drop)
            .map_err(|e| AckError::of(&self.path, &e))
    }

    /// The cluster's acks made after `since`, oldest first.
    pub fn load(&self, cluster: &str, since: Epoch) -> Result<Vec<Ack>, AckError> {
        let err = |e| AckError::of(&self.path, &e);
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT subject, signal, by_user, at, note, ticket FROM acks
                 WHERE cluster = ?1 AND at >= ?2 ORDER BY at, subject, signal",
            )
            .map_err(err)?;
        st.query_map(params![cluster, since], |r| {
            Ok(Ack {
                cluster: cluster.to_string(),
                key: IncidentKey { subject: r.get(0)?, signal: r.get(1)? },
                by: r.get(2)?,
                at: r.get(3)?,
                note: r.get(4)?,
                ticket: r.get(5)?,
            })
        })
        .and_then(|rows| rows.collect())
        .map_err(err)
    }

    /// Forgets acks made before `before`.
    pub fn prune(&self, before: Epoch) -> Result<usize, AckError> {
        self.conn
            .execute("DELETE FROM acks WHERE at < ?1", [before])
            .map_err(|e| AckError::of(&self.path, &e))
    }
}

/// A request to the ack store's thread.
#[derive(Debug)]
pub enum Request {
    Put(Ack),
    /// Answered with [`Answer::Acks`].
    Load {
        cluster: String,
        now: Epoch,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Acks {
        cluster: String,
        acks: Vec<Ack>,
    },
    /// An ack was written.
    Stored(Ack),
    Failed(AckError),
    /// How the last write or read went (each failure, else every
    /// [`super::status::REPORT_EVERY`]).
    Store(crate::model::protocol::StoreStatus),
}

/// The ack store's own thread: it owns the file, writes acks and answers loads, so the
/// console's task never waits for the disk or another console's lock.
pub struct Worker {
    tx: Option<std::sync::mpsc::Sender<Request>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    pub fn spawn(path: PathBuf, answer: impl Fn(Answer) + Send + 'static) -> std::io::Result<Worker> {
        let (tx, rx) = std::sync::mpsc::channel::<Request>();
        let thread = std::thread::Builder::new().name("acks".into()).spawn(move || {
            let mut store: Option<AckStore> = None;
            let mut reporter = super::status::Reporter::default();
            while let Ok(r) = rx.recv() {
                let op = if matches!(r, Request::Put(_)) { "write" } else { "read" };
                if store.is_none() {
                    match AckStore::open(&path) {
                        Ok(s) => {
                            let _ = s.prune(jiff::Timestamp::now().as_second() - KEEP_S);
                            store = Some(s);
                        }
                        Err(e) => {
                            if let Some(st) = reporter.outcome(super::status::ACKS, &path, op, Err(&e)) {
                                answer(Answer::Store(st));
                            }
                            answer(Answer::Failed(e));
                            continue;
                        }
                    }
                }
                let Some(s) = store.as_ref() else { continue };
                let a = match r {
                    Request::Put(a) => match s.put(&a) {
                        Ok(()) => Answer::Stored(a),
                        Err(e) => Answer::Failed(e),
                    },
                    Request::Load { cluster, now } => match s.load(&cluster, now - KEEP_S) {
                        Ok(acks) => Answer::Acks { cluster, acks },
                        Err(e) => Answer::Failed(e),
                    },
                };
                let r = match &a {
                    Answer::Failed(e) => Err(e),
                    _ => Ok(()),
                };
                if let Some(st) = reporter.outcome(super::status::ACKS, &path, op, r) {
                    answer(Answer::Store(st));
                }
                answer(a);
            }
        })?;
        Ok(Worker { tx: Some(tx), thread: Some(thread) })
    }

    /// Queues a request; `false` when the thread is gone.
    pub fn send(&self, r: Request) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(r).is_ok())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(subject: &str, signal: &str, by: &str, at: Epoch, ticket: Option<&str>) -> Ack {
        Ack {
            cluster: "c1".into(),
            key: IncidentKey { subject: subject.into(), signal: signal.into() },
            by: by.into(),
            at,
            note: format!("{by} looking"),
            ticket: ticket.map(Into::into),
        }
    }

    #[test]
    fn two_stores_on_one_file_see_each_others_acks() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        let a = AckStore::open(&path).unwrap();
        let b = AckStore::open(&path).unwrap();
        a.put(&ack("gpu-004/gpu3", "xid:79", "alice", 1_000, Some("INC-1"))).unwrap();
        let seen = b.load("c1", 0).unwrap();
        assert_eq!(seen, vec![ack("gpu-004/gpu3", "xid:79", "alice", 1_000, Some("INC-1"))]);
        // The newer ack of the same incident wins, whoever writes it; an older one does not.
        b.put(&ack("gpu-004/gpu3", "xid:79", "bob", 2_000, None)).unwrap();
        a.put(&ack("gpu-004/gpu3", "xid:79", "carol", 1_500, None)).unwrap();
        let seen = a.load("c1", 0).unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!((seen[0].by.as_str(), seen[0].at), ("bob", 2_000));
        // Other clusters' acks and old ones are not loaded; prune removes old ones.
        b.put(&Ack { cluster: "c2".into(), ..ack("x", "hot", "dave", 3_000, None) }).unwrap();
        assert_eq!(a.load("c1", 0).unwrap().len(), 1);
        assert!(a.load("c1", 2_001).unwrap().is_empty());
        assert_eq!(b.prune(2_500).unwrap(), 1);
        assert!(a.load("c1", 0).unwrap().is_empty());
        assert_eq!(a.load("c2", 0).unwrap().len(), 1);
    }

    #[test]
    fn the_schema_is_versioned_and_a_newer_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        drop(AckStore::open(&path).unwrap());
        let c = Connection::open(&path).unwrap();
        assert_eq!(
            c.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0)).unwrap(),
            SCHEMA_VERSION
        );
        c.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
        drop(c);
        let e = AckStore::open(&path).unwrap_err();
        assert!(e.detail.contains("newer"), "{e}");
        std::fs::write(dir.path().join("junk.sqlite"), b"this is not a database, not at all....").unwrap();
        let e = AckStore::open(&dir.path().join("junk.sqlite")).unwrap_err();
        assert!(e.detail.contains("not a database"), "{e}");
    }

    #[test]
    fn the_worker_stores_and_loads_off_the_callers_thread() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let w = Worker::spawn(path_in(dir.path()), move |a| {
            let _ = tx.send(a);
        })
        .unwrap();
        let now = jiff::Timestamp::now().as_second();
        let a = ack("gpu-1", "hot", "alice", now, None);
        w.send(Request::Put(a.clone()));
        w.send(Request::Load { cluster: "c1".into(), now });
        // Each answer, and the store's status once (a success is said again only after
        // `REPORT_EVERY`).
        let Answer::Store(st) = rx.recv().unwrap() else { panic!("the status first") };
        assert_eq!((st.op, st.error, st.path), ("write", None, path_in(dir.path()).display().to_string()));
        assert_eq!(rx.recv().unwrap(), Answer::Stored(a.clone()));
        assert_eq!(rx.recv().unwrap(), Answer::Acks { cluster: "c1".into(), acks: vec![a] });
    }
}
