//! How gpuplane's own files are doing, said once for every surface (the Sources view, `get
//! sources`, `doctor`): the usage ledger, the ack store and the event journal report each
//! write and read of their threads ([`Reporter`]); the audit log and its witnesses are probed
//! (asked whether they can take a record, nothing written or sent). Each answer is a
//! [`StoreStatus`], handed to the state as an `Update::Store`.

use crate::audit::{AuditLog, witness};
use crate::model::Epoch;
use crate::model::protocol::StoreStatus;
use std::path::Path;
use std::time::{Duration, Instant};

pub const LEDGER: &str = "ledger";
pub const ACKS: &str = "acks";
pub const TIMELINE: &str = "timeline";
pub const AUDIT: &str = "audit";

/// How often a healthy store's thread says so again (its age stays within this).
pub const REPORT_EVERY: Duration = Duration::from_secs(10);

fn now() -> Epoch {
    jiff::Timestamp::now().as_second()
}

/// Where the operator sets the file `name` lives (said in the fix).
fn setting(name: &str) -> &'static str {
    match name {
        LEDGER => "`[ledger] dir`",
        TIMELINE => "`[timeline] path` (by default it sits beside the audit log, `--audit-log`)",
        // The ack store and the witness journal sit beside the audit log.
        _ => "`--audit-log` (or `audit_log` in the config file)",
    }
}

/// What to do about `error` of the store `name` at `path`. The store errors already name the
/// file; the fix is said here, once.
pub fn fix_for(name: &str, path: &Path, error: &str) -> String {
    let e = error.to_ascii_lowercase();
    if e.contains("not a database") || e.contains("damaged") || e.contains("malformed") {
        format!("move {} aside: gpuplane starts a new one", path.display())
    } else if e.contains("locked") || e.contains("busy") {
        "another gpuplane is writing it: it is retried; if it stays, find the process holding it (fuser)"
            .into()
    } else if e.contains("newer than this gpuplane") || e.contains("schema version") {
        "upgrade gpuplane (this file was written by a newer one)".into()
    } else {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        format!(
            "make {} a directory this user can write (permissions, free space, a read-only mount), or point {} elsewhere",
            dir.display(),
            setting(name)
        )
    }
}

/// The status of a success of `op` now.
pub fn ok(name: &str, path: &Path, op: &'static str) -> StoreStatus {
    StoreStatus {
        name: name.into(),
        path: path.display().to_string(),
        op,
        ok_at: Some(now()),
        error: None,
        fix: None,
        note: None,
    }
}

/// The status of a failure of `op` (the last success is kept by the state).
pub fn failed(name: &str, path: &Path, op: &'static str, error: String) -> StoreStatus {
    let fix = fix_for(name, path, &error);
    StoreStatus {
        name: name.into(),
        path: path.display().to_string(),
        op,
        ok_at: None,
        error: Some(error),
        fix: Some(fix),
        note: None,
    }
}

/// A store thread's reports: each failure, the first success after one, and a success every
/// [`REPORT_EVERY`] otherwise (not one per write).
#[derive(Debug, Default)]
pub struct Reporter {
    last: Option<(Instant, bool)>,
}

impl Reporter {
    pub fn outcome<E: std::fmt::Display>(
        &mut self,
        name: &str,
        path: &Path,
        op: &'static str,
        result: Result<(), &E>,
    ) -> Option<StoreStatus> {
        let t = Instant::now();
        match result {
            Err(e) => {
                self.last = Some((t, false));
                Some(failed(name, path, op, e.to_string()))
            }
            Ok(()) => match self.last {
                Some((at, true)) if t.duration_since(at) < REPORT_EVERY => None,
                _ => {
                    self.last = Some((t, true));
                    Some(ok(name, path, op))
                }
            },
        }
    }
}

/// Whether a file can be appended to where it is, asked without writing: an existing file is
/// opened for appending; a missing one needs its nearest existing ancestor to be a directory.
/// `Ok(false)`: it does not exist yet.
fn appendable(path: &Path) -> Result<bool, String> {
    if path.exists() {
        return std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(|_| true)
            .map_err(|e| format!("{} cannot be appended to: {e}", path.display()));
    }
    let mut at = path.parent();
    while let Some(a) = at.filter(|a| !a.as_os_str().is_empty()) {
        if let Ok(m) = std::fs::metadata(a) {
            if !m.is_dir() {
                return Err(format!("cannot create {}: {} is not a directory", path.display(), a.display()));
            }
            if m.permissions().readonly() {
                return Err(format!("cannot create {}: {} is read-only", path.display(), a.display()));
            }
            return Ok(false);
        }
        at = a.parent();
    }
    Ok(false)
}

/// A file probed with [`appendable`].
fn probe_file(name: &str, path: &Path, absent: &str) -> StoreStatus {
    match appendable(path) {
        Ok(true) => ok(name, path, "probe"),
        Ok(false) => StoreStatus { ok_at: None, note: Some(absent.into()), ..ok(name, path, "probe") },
        Err(e) => failed(name, path, "probe", e),
    }
}

/// A URL as it may be shown: without credentials (`user:token@`), query or fragment.
pub fn shown_url(url: &str) -> String {
    let cut = url.find(['?', '#']).map_or(url, |i| &url[..i]);
    match cut.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            crate::sanitize::sanitize(&format!("{scheme}://{host}{path}")).into_owned()
        }
        None => crate::sanitize::sanitize(cut).into_owned(),
    }
}

/// The audit log and each of its witnesses, probed: nothing is written or sent.
pub fn probe_audit(log: &AuditLog) -> Vec<StoreStatus> {
    let mut out = vec![probe_file(AUDIT, &log.path, "no record yet: the first action creates it")];
    out.extend(probe_witnesses(log));
    out
}

/// Each witness of the log's head, asked whether it can take one (without sending it): a
/// witness that fails fails on every append, silently but for the log file.
pub fn probe_witnesses(log: &AuditLog) -> Vec<StoreStatus> {
    let w = &log.witness;
    let mut out = Vec::new();
    if w.journal {
        let p = witness::journal_path(&log.path);
        out.push(probe_file(
            "witness/journal",
            &p,
            "no head yet: written beside the log with the first record",
        ));
    }
    if let Some(sock) = &w.syslog {
        out.push(match witness::probe_syslog(sock) {
            Ok(()) => StoreStatus { note: Some("takes datagrams".into()), ..ok("witness/syslog", sock, "probe") },
            Err(e) => StoreStatus {
                fix: Some(format!(
                    "run a syslog daemon listening on {}, point `[audit] syslog_socket` at one, or set `[audit] syslog = false`",
                    sock.display()
                )),
                ..failed(
                    "witness/syslog",
                    sock,
                    "probe",
                    format!("{}: {e}: every head sent to syslog fails (the others still witness)", sock.display()),
                )
            },
        });
    }
    if !w.command.is_empty() {
        let shown = Path::new(&w.command[0]);
        out.push(match witness::probe_command(&w.command) {
            Ok(p) => {
                StoreStatus { note: Some("found, not run".into()), ..ok("witness/command", &p, "probe") }
            }
            Err(e) => StoreStatus {
                fix: Some("fix `[audit] witness_command`".into()),
                ..failed("witness/command", shown, "probe", format!("{e}: every head sent to it fails"))
            },
        });
    }
    if let Some(url) = &w.url {
        out.push(StoreStatus {
            name: "witness/url".into(),
            path: shown_url(url),
            op: "probe",
            ok_at: None,
            error: None,
            fix: None,
            note: Some("not probed: a POST would record a head".into()),
        });
    }
    out
}

/// A SQLite store opened (created when missing, as the console does) and read once: what
/// `get sources` says of the ledger, the ack store and the journal.
pub fn probe_read<T, E: std::fmt::Display>(
    name: &str,
    path: &Path,
    read: impl FnOnce() -> Result<T, E>,
) -> StoreStatus {
    match read() {
        Ok(_) => ok(name, path, "read"),
        Err(e) => failed(name, path, "read", e.to_string()),
    }
}

/// How often the console probes the audit log and its witnesses again.
pub const PROBE_EVERY: Duration = Duration::from_secs(60);

/// The console's probe of the audit log and its witnesses: at once, then every
/// [`PROBE_EVERY`], each answer an `Update::Store` (off the console's task; the probe touches
/// files and sockets).
pub async fn watch_audit(
    log: AuditLog,
    tx: tokio::sync::mpsc::Sender<crate::model::protocol::Update>,
    cancel: tokio_util::sync::CancellationToken,
) {
    loop {
        let l = log.clone();
        let Ok(all) = tokio::task::spawn_blocking(move || probe_audit(&l)).await else { return };
        for s in all {
            if tx.send(crate::model::protocol::Update::Store(s)).await.is_err() {
                return;
            }
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(PROBE_EVERY) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_credentials() {
        assert_eq!(
            shown_url("https://ship:s3cret@siem.example.com/ingest?token=abc#x"),
            "https://siem.example.com/ingest"
        );
        assert_eq!(shown_url("http://siem:8080"), "http://siem:8080");
    }

    #[test]
    fn a_healthy_thread_reports_once_per_period_and_every_failure() {
        let mut r = Reporter::default();
        let p = Path::new("/x/ledger.sqlite");
        let ok: Result<(), &String> = Ok(());
        assert!(r.outcome(LEDGER, p, "write", ok).is_some());
        assert!(r.outcome(LEDGER, p, "write", ok).is_none());
        let e = "disk full".to_string();
        let f = r.outcome(LEDGER, p, "write", Err(&e)).unwrap();
        assert_eq!((f.error.as_deref(), f.ok_at), (Some("disk full"), None));
        assert!(f.fix.unwrap().contains("/x"));
        assert!(r.outcome(LEDGER, p, "write", ok).is_some(), "the recovery is said at once");
    }

    #[test]
    fn a_file_where_a_directory_should_be_is_a_failing_probe_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "x").unwrap();
        let s = probe_file(AUDIT, &dir.path().join("f/audit.jsonl"), "absent");
        assert!(s.error.as_deref().unwrap().contains("is not a directory"), "{s:?}");
        assert!(s.fix.as_deref().unwrap().contains("--audit-log"), "{s:?}");
        let s = probe_file(AUDIT, &dir.path().join("audit.jsonl"), "absent");
        assert_eq!((s.error, s.ok_at, s.note.as_deref()), (None, None, Some("absent")));
    }
}
