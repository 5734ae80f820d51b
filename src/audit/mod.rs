//! The tamper-evident audit log: append-only JSON Lines, one record per phase of an action,
//! each carrying `prev_hash` and `hash` (SHA-256 over the record's canonical JSON, which
//! includes `prev_hash`), so editing, removing, inserting or reordering a record breaks the
//! chain. Appends take an exclusive lock and fsync before the action is sent; when a record
//! cannot be written the action is refused (fail closed).

mod redact;
mod verify;

pub use redact::redact;
pub use verify::{Problem, VerifyReport, verify};

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
}

impl AuditLog {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        AuditLog { path: path.into() }
    }

    /// The default location: `$XDG_DATA_HOME/gpuplane/audit.jsonl`.
    pub fn default_path() -> Option<PathBuf> {
        directories::ProjectDirs::from("io", "gpuplane", "gpuplane").map(|d| d.data_dir().join("audit.jsonl"))
    }

    fn io(&self, source: std::io::Error) -> AuditError {
        AuditError::Io { path: self.path.clone(), source }
    }

    /// Appends one record under an exclusive lock and fsyncs it. Nothing secret is written:
    /// every text field passes [`redact`].
    pub fn append(&self, phase: Phase, e: &Entry) -> Result<Record, AuditError> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| self.io(e))?;
        }
        let mut f = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&self.path)
            .map_err(|e| self.io(e))?;
        f.lock().map_err(|e| self.io(e))?;
        let result = self.append_locked(&mut f, phase, e);
        let _ = f.unlock();
        result
    }

    fn append_locked(&self, f: &mut File, phase: Phase, e: &Entry) -> Result<Record, AuditError> {
        let (seq, prev_hash) = match last_line(f).map_err(|e| self.io(e))? {
            Tail::Empty => (0, GENESIS.to_string()),
            Tail::Partial(line) => return Err(AuditError::PartialTail { path: self.path.clone(), line }),
            Tail::Line(text) => {
                let last: Record = serde_json::from_str(&text).map_err(|err| AuditError::BadTail {
                    path: self.path.clone(),
                    detail: err.to_string(),
                })?;
                (last.seq + 1, last.hash)
            }
        };
        let r = |s: &str| redact(s).into_owned();
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
                .filter(|(k, _)| !redact::is_secret_key(k))
                .map(|(k, v)| (r(k), r(v)))
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

/// Shorthand for tests and callers that only have a path.
pub fn append(path: &Path, phase: Phase, e: &Entry) -> Result<Record, AuditError> {
    AuditLog::new(path).append(phase, e)
}

#[cfg(test)]
mod tests;
