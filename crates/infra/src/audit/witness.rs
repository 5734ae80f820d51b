//! The witness: after every append the log's head (sequence number and hash) is anchored
//! outside the file, so `audit verify` can tell a log whose last records were removed from one
//! that simply ends there.
//!
//! Every head is written as one line of text, the same wherever it goes:
//!
//! ```text
//! gpuplane-audit-head log=0123456789abcdef seq=41 hash=<64 hex>
//! ```
//!
//! `log` names the log (the first 16 hex digits of its first record's hash), so heads of many
//! logs can share one sink. The heads go to a journal beside the log (`<log>.witness`, read by
//! `verify` by default), to syslog (RFC 5424 datagrams to `/dev/log` or a configured socket),
//! and, when configured, to a command (the line on its stdin) and an HTTP endpoint (a JSON
//! POST). `verify --witness FILE` reads heads back from any text holding those lines: the
//! journal, a syslog file, `journalctl -o cat` output, a SIEM export.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The marker every witnessed head carries.
pub const MARKER: &str = "gpuplane-audit-head";

/// Where heads go, besides the log's own journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witness {
    /// Append each head to `<log>.witness` (on by default).
    pub journal: bool,
    /// A syslog datagram socket (`/dev/log`); `None` sends nothing to syslog.
    pub syslog: Option<PathBuf>,
    /// A program run with the head line on its stdin (argv, no shell).
    pub command: Vec<String>,
    /// An HTTP(S) endpoint the head is POSTed to as JSON.
    pub url: Option<String>,
    /// How long a command or an HTTP POST may take.
    pub timeout: Duration,
}

impl Default for Witness {
    fn default() -> Self {
        Witness {
            journal: true,
            syslog: None,
            command: Vec::new(),
            url: None,
            timeout: Duration::from_secs(3),
        }
    }
}

/// The default syslog socket.
pub const DEV_LOG: &str = "/dev/log";

/// One witnessed head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub log: String,
    pub seq: u64,
    pub hash: String,
}

impl Head {
    /// The witness line (without a newline).
    pub fn line(&self) -> String {
        format!("{MARKER} log={} seq={} hash={}", self.log, self.seq, self.hash)
    }
}

/// The journal of heads beside the log at `log`.
pub fn journal_path(log: &Path) -> PathBuf {
    let mut p = log.as_os_str().to_owned();
    p.push(".witness");
    PathBuf::from(p)
}

/// The id of a log: the first 16 hex digits of its first record's hash.
pub fn log_id(first_hash: &str) -> String {
    first_hash.chars().take(16).collect()
}

/// Every head in `text`, from whatever surrounds the marker (syslog headers, timestamps);
/// lines without the marker or with a malformed head are skipped.
pub fn parse_heads(text: &str) -> Vec<Head> {
    text.lines().filter_map(parse_head).collect()
}

fn parse_head(line: &str) -> Option<Head> {
    let rest = &line[line.find(MARKER)? + MARKER.len()..];
    let mut fields: BTreeMap<&str, &str> = BTreeMap::new();
    for w in rest.split_whitespace() {
        if let Some((k, v)) = w.split_once('=') {
            fields.insert(k, v.trim_matches(|c| c == '"' || c == ']'));
        }
    }
    let hash = fields.get("hash")?;
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(Head {
        log: fields.get("log")?.to_string(),
        seq: fields.get("seq")?.parse().ok()?,
        hash: hash.to_string(),
    })
}

/// The heads in the files at `paths` (a file that does not exist has none).
pub fn read_heads(paths: &[PathBuf]) -> std::io::Result<Vec<Head>> {
    let mut heads = Vec::new();
    for p in paths {
        match std::fs::read(p) {
            Ok(b) => heads.extend(parse_heads(&String::from_utf8_lossy(&b))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(std::io::Error::new(e.kind(), format!("{}: {e}", p.display()))),
        }
    }
    Ok(heads)
}

/// The RFC 5424 message for a head: facility authpriv, severity notice, the head as the
/// message (no structured data, so daemons that parse RFC 3164 keep it whole).
pub fn syslog_message(head: &Head, host: &str, ts: &str) -> String {
    let pri = 10 * 8 + 5;
    let host = if host.is_empty() { "-" } else { host };
    format!("<{pri}>1 {ts} {host} gpuplane {} audit-head - {}", std::process::id(), head.line())
}

impl Witness {
    /// No witness at all: nothing is anchored (a cut tail cannot be detected).
    pub fn none() -> Witness {
        Witness { journal: false, ..Witness::default() }
    }

    /// Whether any witness is configured.
    pub fn any(&self) -> bool {
        self.journal || self.syslog.is_some() || !self.command.is_empty() || self.url.is_some()
    }

    /// Anchors `head` of the log at `log` everywhere configured. The journal is written while
    /// the caller holds the log's lock (so heads land in order); the rest after it. Returns
    /// what failed, phrased for an operator; a failure never undoes the append.
    pub(super) fn journal(&self, log: &Path, head: &Head) -> Option<String> {
        if !self.journal {
            return None;
        }
        let path = journal_path(log);
        let r = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .and_then(|mut f| f.write_all(format!("{} {}\n", now(), head.line()).as_bytes()));
        r.err().map(|e| format!("audit witness journal {}: {e}", path.display()))
    }

    /// Sends `head` to syslog, the command and the endpoint (outside the log's lock).
    pub(super) fn send(&self, head: &Head) -> Vec<String> {
        let mut errors = Vec::new();
        if let Some(sock) = &self.syslog
            && let Err(e) = send_syslog(sock, head)
        {
            errors.push(format!("audit witness syslog {}: {e}", sock.display()));
        }
        if !self.command.is_empty()
            && let Err(e) = run_command(&self.command, head, self.timeout)
        {
            errors.push(format!("audit witness command {:?}: {e}", self.command[0]));
        }
        if let Some(url) = &self.url
            && let Err(e) = post(url, head, self.timeout)
        {
            errors.push(format!("audit witness {url}: {e}"));
        }
        errors
    }
}

/// Whether a syslog datagram socket takes datagrams, asked without sending one: a connect
/// fails as a send would (no such socket, nobody listening, not a datagram socket).
pub fn probe_syslog(sock: &Path) -> std::io::Result<()> {
    std::os::unix::net::UnixDatagram::unbound()?.connect(sock)
}

/// Where a witness command's program is (`argv[0]`, as given or found on `PATH`), or why it
/// cannot be run; nothing is run.
pub fn probe_command(argv: &[String]) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let prog = argv.first().filter(|p| !p.is_empty()).ok_or("no program given")?;
    let runnable =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if prog.contains('/') {
        let p = PathBuf::from(prog);
        return if runnable(&p) { Ok(p) } else { Err(format!("{prog}: not an executable file")) };
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(prog))
        .find(|p| runnable(p))
        .ok_or_else(|| format!("{prog}: not found on PATH"))
}

fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

fn send_syslog(sock: &Path, head: &Head) -> std::io::Result<()> {
    let host = hostname::get().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default();
    let msg = syslog_message(head, &host, &now());
    let s = std::os::unix::net::UnixDatagram::unbound()?;
    // A syslog daemon that stops reading never stalls an action: a full queue drops the head
    // (reported) instead of blocking.
    s.set_nonblocking(true)?;
    s.send_to(msg.as_bytes(), sock)?;
    Ok(())
}

fn run_command(argv: &[String], head: &Head, timeout: Duration) -> std::io::Result<()> {
    use std::process::{Command, Stdio};
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .env("GPUPLANE_AUDIT_LOG_ID", &head.log)
        .env("GPUPLANE_AUDIT_SEQ", head.seq.to_string())
        .env("GPUPLANE_AUDIT_HASH", &head.hash)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that exits without reading is its own business; its status tells.
        let _ = stdin.write_all(format!("{}\n", head.line()).as_bytes());
    }
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            return if status.success() {
                Ok(())
            } else {
                Err(std::io::Error::other(format!("exited with {status}")))
            };
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other(format!("no exit within {timeout:?}; killed")));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// POSTs the head as JSON on a thread of its own (with its own small runtime), so it works
/// from any caller, inside a runtime's blocking pool or outside any runtime.
fn post(url: &str, head: &Head, timeout: Duration) -> Result<(), String> {
    let body = serde_json::json!({
        "source": "gpuplane",
        "log": head.log,
        "seq": head.seq,
        "hash": head.hash,
        "line": head.line(),
        "host": hostname::get().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default(),
        "ts": now(),
    });
    let url = url.to_string();
    let t = std::thread::Builder::new()
        .name("audit-witness".into())
        .spawn(move || -> Result<(), String> {
            let _ = rustls::crypto::ring::default_provider().install_default();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async {
                let client =
                    reqwest::Client::builder().timeout(timeout).build().map_err(|e| e.to_string())?;
                let r = client.post(&url).json(&body).send().await.map_err(|e| e.to_string())?;
                if r.status().is_success() { Ok(()) } else { Err(format!("HTTP {}", r.status())) }
            })
        })
        .map_err(|e| e.to_string())?;
    t.join().unwrap_or_else(|_| Err("the witness thread panicked".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_read_back_from_whatever_surrounds_them() {
        let h = Head { log: "0123456789abcdef".into(), seq: 41, hash: "ab".repeat(32) };
        let text = format!(
            "{}\nDec  3 04:00:01 ops-1 gpuplane[77]: {}\nnoise\n{MARKER} log=x seq=notanumber hash={}\n",
            syslog_message(&h, "ops-1", "2026-12-03T04:00:00Z"),
            Head { seq: 42, ..h.clone() }.line(),
            "ab".repeat(32)
        );
        let heads = parse_heads(&text);
        assert_eq!(heads, vec![h.clone(), Head { seq: 42, ..h }]);
    }

    #[test]
    fn syslog_messages_are_rfc5424() {
        let h = Head { log: "l".into(), seq: 1, hash: "0".repeat(64) };
        let m = syslog_message(&h, "ops-1", "2026-12-03T04:00:00Z");
        assert!(m.starts_with("<85>1 2026-12-03T04:00:00Z ops-1 gpuplane "), "{m}");
        assert!(m.ends_with(&format!(" audit-head - {}", h.line())), "{m}");
    }
}
