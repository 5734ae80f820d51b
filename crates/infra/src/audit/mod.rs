//! The tamper-evident audit log: append-only JSON Lines, one record per phase of an action,
//! each carrying `prev_hash` and `hash` (SHA-256 over the record's canonical JSON, which
//! includes `prev_hash`), so editing, removing, inserting or reordering a record breaks the
//! chain. Appends take an exclusive lock and fsync before the action is sent; when a record
//! cannot be written the action is refused (fail closed).
//!
//! A hash chain alone cannot see its last records cut off, so after every append the head
//! (sequence number and hash) is anchored outside the file ([`witness`]): a journal beside the
//! log, syslog, a command, an HTTP endpoint. Every N records and at a session's end an
//! Ed25519-signed checkpoint ([`sign`]) lets a third party check a copy with the public key
//! alone.

mod redact;
pub mod sign;
mod verify;
pub mod witness;

pub use redact::redact;
pub use verify::{
    Options as VerifyOptions, Problem, Report, VerifyReport, Warning, WitnessSummary, verify, verify_full,
};
pub use witness::{Head, Witness};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The `prev_hash` of the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Written before anything is sent.
    Intent,
    /// What happened.
    Outcome,
    /// Something that is not an action's phase (break-glass start/end).
    Event,
    /// A signed checkpoint of the chain's head ([`sign`]).
    Checkpoint,
}

/// The break-glass session an action runs under: every record it writes carries the session
/// id (`break_glass`) and, when the operator gave none for the action, the session's ticket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakGlass {
    pub session: String,
    pub ticket: String,
}

/// The action names of break-glass start and end records.
pub const BREAK_GLASS_START: &str = "break-glass-start";
pub const BREAK_GLASS_END: &str = "break-glass-end";

/// A break-glass session with a start record and no end record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenSession {
    pub session: String,
    pub ticket: Option<String>,
    pub os_user: String,
    pub host: String,
    /// The start record's sequence number.
    pub seq: u64,
    /// When it lapses (Unix seconds), from the start record's `until` param.
    pub until: Option<i64>,
}

/// The break-glass sessions in `records` that started and did not end, oldest first.
pub fn open_sessions(records: &[Record]) -> Vec<OpenSession> {
    let mut open: BTreeMap<&str, OpenSession> = BTreeMap::new();
    for r in records {
        if r.action == BREAK_GLASS_START {
            open.insert(
                &r.op_id,
                OpenSession {
                    session: r.op_id.clone(),
                    ticket: r.ticket.clone(),
                    os_user: r.os_user.clone(),
                    host: r.host.clone(),
                    seq: r.seq,
                    until: r.params.get("until").and_then(|u| u.parse().ok()),
                },
            );
        } else if r.action == BREAK_GLASS_END {
            open.remove(r.op_id.as_str());
        }
    }
    let mut v: Vec<OpenSession> = open.into_values().collect();
    v.sort_by_key(|o| o.seq);
    v
}

/// One audit record. Field order is the canonical order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub seq: u64,
    /// RFC 3339, UTC.
    pub ts: String,
    pub os_user: String,
    /// Who the backend knows us as (Slurm user, Kubernetes user or service account).
    pub identity: Option<String>,
    pub host: String,
    /// Cluster or context name.
    pub cluster: String,
    pub action: String,
    pub targets: Vec<String>,
    pub reason: Option<String>,
    pub ticket: Option<String>,
    pub params: BTreeMap<String, String>,
    pub phase: Phase,
    /// `ok`, `failed`, `refused`, `dry-run`, `partial` (outcome only).
    pub result: Option<String>,
    pub error: Option<String>,
    pub break_glass: Option<String>,
    /// Links an intent with its outcome.
    pub op_id: String,
    pub prev_hash: String,
    pub hash: String,
}

/// What the caller fills in; the log adds seq, time, who/where and the chain.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Entry {
    pub identity: Option<String>,
    pub cluster: String,
    pub action: String,
    pub targets: Vec<String>,
    pub reason: Option<String>,
    pub ticket: Option<String>,
    pub params: BTreeMap<String, String>,
    pub result: Option<String>,
    pub error: Option<String>,
    pub break_glass: Option<String>,
    pub op_id: String,
}

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("audit log {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(
        "audit log {path} ends with a partial record (line {line}); refusing to append. Run `gpuplane audit verify {path}`"
    )]
    PartialTail { path: PathBuf, line: u64 },
    #[error("audit log {path}: the last record is unreadable ({detail}); refusing to append")]
    BadTail { path: PathBuf, detail: String },
    #[error(transparent)]
    Key(#[from] sign::KeyError),
}

impl Record {
    /// The canonical JSON the hash covers: the record with an empty `hash`.
    pub fn canonical(&self) -> String {
        let mut r = self.clone();
        r.hash.clear();
        serde_json::to_string(&r).unwrap_or_default()
    }

    pub fn compute_hash(&self) -> String {
        hex::encode(Sha256::digest(self.canonical().as_bytes()))
    }
}

/// The OS user running gpuplane.
pub fn os_user() -> String {
    std::env::var("USER").or_else(|_| std::env::var("LOGNAME")).unwrap_or_else(|_| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").map_or_else(|_| "unknown".into(), |m| format!("uid:{}", m.uid()))
    })
}

/// An append-only, hash-chained audit log at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditLog {
    pub path: PathBuf,
    /// Where each head is anchored. [`AuditLog::new`] keeps only the journal beside the log;
    /// the console and the commands add syslog (by default) and what is configured.
    pub witness: Witness,
    /// A signed checkpoint after every this many records (0: only when asked for).
    pub checkpoint_every: u64,
}

/// The default checkpoint interval.
pub const CHECKPOINT_EVERY: u64 = 100;

impl AuditLog {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        AuditLog { path: path.into(), witness: Witness::default(), checkpoint_every: CHECKPOINT_EVERY }
    }

    pub fn with_witness(mut self, witness: Witness) -> Self {
        self.witness = witness;
        self
    }

    pub fn with_checkpoint_every(mut self, n: u64) -> Self {
        self.checkpoint_every = n;
        self
    }

    /// The signing key's file (beside the log).
    pub fn key_path(&self) -> PathBuf {
        sign::key_path(&self.path)
    }

    /// The public key of the log's signing key (created when there is none), as 64 hex digits.
    pub fn public_key(&self) -> Result<String, AuditError> {
        self.ensure_dir()?;
        Ok(sign::public_hex(&sign::load_or_create(&self.key_path())?))
    }

    fn ensure_dir(&self) -> Result<(), AuditError> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| self.io(e))?;
        }
        Ok(())
    }

    /// The default location: `$XDG_DATA_HOME/gpuplane/audit.jsonl`.
    pub fn default_path() -> Option<PathBuf> {
        directories::ProjectDirs::from("io", "gpuplane", "gpuplane").map(|d| d.data_dir().join("audit.jsonl"))
    }

    fn io(&self, source: std::io::Error) -> AuditError {
        AuditError::Io { path: self.path.clone(), source }
    }

    /// Appends one record under an exclusive lock and fsyncs it, adds a signed checkpoint when
    /// one is due, then anchors the new head with the witness. Nothing secret is written:
    /// every text field passes [`redact`]. A witness that cannot be reached does not undo the
    /// record (it is logged); a record that cannot be written is an error.
    pub fn append(&self, phase: Phase, e: &Entry) -> Result<Record, AuditError> {
        self.locked(|log, f, tail| {
            let rec = log.write_record(f, tail.as_ref(), phase, e)?;
            let due = log.checkpoint_every > 0
                && phase != Phase::Checkpoint
                && (rec.seq + 1).is_multiple_of(log.checkpoint_every);
            if due {
                match log.write_checkpoint(f, &rec) {
                    Ok(c) => return Ok((rec, Some(c))),
                    Err(err) => {
                        tracing::warn!("audit log {}: no signed checkpoint: {err}", log.path.display())
                    }
                }
            }
            Ok((rec.clone(), Some(rec)))
        })
    }

    /// Appends a signed checkpoint of the current head (at a session's end, or before the log
    /// is copied for someone else to check), unless the log is empty or already ends with one.
    pub fn checkpoint(&self) -> Result<Option<Record>, AuditError> {
        if !self.path.exists() {
            return Ok(None);
        }
        self.locked(|log, f, tail| match tail {
            Some(last) if last.phase != Phase::Checkpoint => {
                let c = log.write_checkpoint(f, &last)?;
                Ok((Some(c.clone()), Some(c)))
            }
            _ => Ok((None, None)),
        })
    }

    /// Runs `write` under the log's exclusive lock with the last record (`None` when the log is
    /// empty), writes the head of what it wrote to the witness journal while the lock is held
    /// (so the journal's heads are in order), and sends it to the other witnesses after.
    fn locked<T>(
        &self,
        write: impl FnOnce(&Self, &mut File, Option<Record>) -> Result<(T, Option<Record>), AuditError>,
    ) -> Result<T, AuditError> {
        self.ensure_dir()?;
        let mut f = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&self.path)
            .map_err(|e| self.io(e))?;
        f.lock().map_err(|e| self.io(e))?;
        let result =
            self.last_record(&mut f).and_then(|tail| write(self, &mut f, tail)).map(|(out, last)| {
                let head = last.filter(|_| self.witness.any()).map(|r| self.head_of(&mut f, &r));
                let journal = head.as_ref().and_then(|h| self.witness.journal(&self.path, h));
                (out, head, journal)
            });
        let _ = f.unlock();
        let (out, head, journal) = result?;
        let mut problems: Vec<String> = journal.into_iter().collect();
        if let Some(h) = &head {
            problems.extend(self.witness.send(h));
        }
        for p in problems {
            tracing::warn!("{p}");
        }
        Ok(out)
    }

    /// The witness head for `last`: the log's id (from its first record) with `last`'s number
    /// and hash.
    fn head_of(&self, f: &mut File, last: &Record) -> Head {
        let first = if last.seq == 0 { Some(last.hash.clone()) } else { first_hash(f).ok().flatten() };
        Head {
            log: witness::log_id(first.as_deref().unwrap_or(GENESIS)),
            seq: last.seq,
            hash: last.hash.clone(),
        }
    }

    fn last_record(&self, f: &mut File) -> Result<Option<Record>, AuditError> {
        match last_line(f).map_err(|e| self.io(e))? {
            Tail::Empty => Ok(None),
            Tail::Partial(line) => Err(AuditError::PartialTail { path: self.path.clone(), line }),
            Tail::Line(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|err| AuditError::BadTail { path: self.path.clone(), detail: err.to_string() }),
        }
    }

    /// Writes and fsyncs the signed checkpoint that follows `last`.
    fn write_checkpoint(&self, f: &mut File, last: &Record) -> Result<Record, AuditError> {
        let key = sign::load_or_create(&self.key_path())?;
        let seq = last.seq + 1;
        let mut params = BTreeMap::new();
        params.insert("key".to_string(), sign::public_hex(&key));
        params.insert("sig".to_string(), sign::sign(&key, seq, &last.hash));
        let e = Entry {
            cluster: last.cluster.clone(),
            action: "checkpoint".into(),
            params,
            op_id: format!("checkpoint-{seq}"),
            ..Entry::default()
        };
        self.write_record(f, Some(last), Phase::Checkpoint, &e)
    }

    fn write_record(
        &self,
        f: &mut File,
        last: Option<&Record>,
        phase: Phase,
        e: &Entry,
    ) -> Result<Record, AuditError> {
        let (seq, prev_hash) = match last {
            None => (0, GENESIS.to_string()),
            Some(l) => (l.seq + 1, l.hash.clone()),
        };
        let r = |s: &str| redact(s).into_owned();
        // Checkpoint params are a public key and a signature, not secrets (and must stay whole).
        let keep = |k: &str| phase == Phase::Checkpoint || !redact::is_secret_key(k);
        let mut rec = Record {
            seq,
            ts: jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
            os_user: os_user(),
            identity: e.identity.as_deref().map(r),
            host: hostname::get().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default(),
            cluster: r(&e.cluster),
            action: r(&e.action),
            targets: e.targets.iter().map(|t| r(t)).collect(),
            reason: e.reason.as_deref().map(r),
            ticket: e.ticket.as_deref().map(r),
            params: e
                .params
                .iter()
                .filter(|(k, _)| keep(k))
                .map(|(k, v)| if phase == Phase::Checkpoint { (k.clone(), v.clone()) } else { (r(k), r(v)) })
                .collect(),
            phase,
            result: e.result.as_deref().map(r),
            error: e.error.as_deref().map(r),
            break_glass: e.break_glass.clone(),
            op_id: e.op_id.clone(),
            prev_hash,
            hash: String::new(),
        };
        rec.hash = rec.compute_hash();
        let mut line = serde_json::to_string(&rec).map_err(|e| self.io(std::io::Error::other(e)))?;
        line.push('\n');
        f.write_all(line.as_bytes()).map_err(|e| self.io(e))?;
        f.sync_data().map_err(|e| self.io(e))?;
        Ok(rec)
    }

    /// Every record (for `audit tail` and the Audit view); unreadable lines are skipped.
    pub fn read_all(&self) -> Result<Vec<Record>, AuditError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io(e)),
        };
        Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
    }

    /// The last `n` records.
    pub fn tail(&self, n: usize) -> Result<Vec<Record>, AuditError> {
        let mut all = self.read_all()?;
        let keep = all.len().saturating_sub(n);
        Ok(all.split_off(keep))
    }

    /// [`append`](Self::append) from async code: the lock wait, the write and the fsync run on
    /// the blocking pool, so a slow disk (or another process holding the lock) never stalls a
    /// runtime worker. The record is written, or not, exactly as `append` would.
    pub async fn append_async(&self, phase: Phase, e: &Entry) -> Result<Record, AuditError> {
        let (log, e) = (self.clone(), e.clone());
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || log.append(phase, &e))
            .await
            .unwrap_or_else(|join| Err(AuditError::Io { path, source: std::io::Error::other(join) }))
    }

    /// [`tail`](Self::tail) from async code, on the blocking pool.
    pub async fn tail_async(&self, n: usize) -> Result<Vec<Record>, AuditError> {
        let log = self.clone();
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || log.tail(n))
            .await
            .unwrap_or_else(|join| Err(AuditError::Io { path, source: std::io::Error::other(join) }))
    }
}

enum Tail {
    Empty,
    /// The file does not end with a newline: a torn or truncated write (its line number).
    Partial(u64),
    Line(String),
}

/// Reads the last complete line, scanning back from the end in blocks.
fn last_line(f: &mut File) -> std::io::Result<Tail> {
    let len = f.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok(Tail::Empty);
    }
    let mut last = [0u8; 1];
    f.seek(SeekFrom::Start(len - 1))?;
    f.read_exact(&mut last)?;
    if last[0] != b'\n' {
        let mut all = String::new();
        f.seek(SeekFrom::Start(0))?;
        f.read_to_string(&mut all)?;
        return Ok(Tail::Partial(all.lines().count() as u64));
    }
    let mut end = len - 1; // the final newline
    let mut buf = Vec::new();
    loop {
        let start = end.saturating_sub(4096);
        let mut chunk = vec![0u8; (end - start) as usize];
        f.seek(SeekFrom::Start(start))?;
        f.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&buf);
        buf = chunk;
        if let Some(pos) = memchr::memrchr(b'\n', &buf) {
            return Ok(Tail::Line(String::from_utf8_lossy(&buf[pos + 1..]).into_owned()));
        }
        if start == 0 {
            return Ok(Tail::Line(String::from_utf8_lossy(&buf).into_owned()));
        }
        end = start;
    }
}

/// The hash of the first record (the log's identity for the witness).
fn first_hash(f: &mut File) -> std::io::Result<Option<String>> {
    #[derive(Deserialize)]
    struct HashOnly {
        hash: String,
    }
    f.seek(SeekFrom::Start(0))?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = f.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = memchr::memchr(b'\n', &buf) {
            return Ok(serde_json::from_slice::<HashOnly>(&buf[..end]).ok().map(|h| h.hash));
        }
        if buf.len() > 1 << 20 {
            return Ok(None);
        }
    }
}

/// Shorthand for tests and callers that only have a path.
pub fn append(path: &Path, phase: Phase, e: &Entry) -> Result<Record, AuditError> {
    AuditLog::new(path).append(phase, e)
}

#[cfg(test)]
mod tests;
