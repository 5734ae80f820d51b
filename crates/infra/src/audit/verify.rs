//! `gpuplane audit verify`: walks the chain and names the first record that was edited,
//! removed, inserted or reordered, or a torn last line; [`verify_full`] also checks the file
//! against the witnessed heads (records missing at the end, records rewritten after they were
//! witnessed), checks signed checkpoints with a public key, and lists warnings (intents
//! without outcomes, break-glass sessions without an end).

use super::witness::{self, Head};
use super::{BREAK_GLASS_END, BREAK_GLASS_START, GENESIS, Phase};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A line that is not a record (and not the last line).
    Corrupt { line: u64 },
    /// The record's content no longer matches its hash.
    Edited { line: u64, seq: u64 },
    /// Records with these sequence numbers are missing before `line`.
    Removed { line: u64, first_seq: u64, last_seq: u64 },
    /// A record that the chain does not account for.
    Inserted { line: u64, seq: u64 },
    /// A record out of its place.
    Reordered { line: u64, seq: u64, expected_seq: u64 },
    /// The record before `line` was replaced (valid on its own, but not the one this record
    /// was chained to).
    Replaced { line: u64 },
    /// The file ends in the middle of a record. [`verify_full`] reports it as an incomplete
    /// write (a crash) unless the witness saw that record whole.
    TruncatedTail { line: u64 },
    /// Records the witness saw are not in the file: the tail was cut.
    Missing { first_seq: u64, last_seq: u64 },
    /// The record at `seq` is not the one the witness saw: the log was rewritten from there.
    Unwitnessed { line: u64, seq: u64 },
    /// A checkpoint whose signature the given public key does not verify.
    BadCheckpoint { line: u64, seq: u64 },
    /// A public key was given but no checkpoint is signed with it.
    Unsigned,
}

/// `7, 8, 9` for a few numbers, `7..=120 (114 records)` for many.
fn numbers(first: u64, last: u64) -> String {
    if last - first < 10 {
        (first..=last).map(|n| n.to_string()).collect::<Vec<_>>().join(", ")
    } else {
        format!("{first}..={last} ({} records)", last - first + 1)
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Corrupt { line } => write!(f, "line {line}: not an audit record"),
            Problem::Edited { line, seq } => {
                write!(f, "line {line}: record {seq} was edited (its hash does not match)")
            }
            Problem::Removed { line, first_seq, last_seq } if first_seq == last_seq => {
                write!(f, "line {line}: record {first_seq} was removed before this line")
            }
            Problem::Removed { line, first_seq, last_seq } => {
                write!(f, "line {line}: records {first_seq}..={last_seq} were removed before this line")
            }
            Problem::Inserted { line, seq } => {
                write!(f, "line {line}: record {seq} was inserted (the chain does not include it)")
            }
            Problem::Reordered { line, seq, expected_seq } => {
                write!(f, "line {line}: record {seq} is out of order (record {expected_seq} belongs here)")
            }
            Problem::Replaced { line } => {
                write!(
                    f,
                    "line {}: the record was replaced (line {line} was chained to a different one)",
                    line - 1
                )
            }
            Problem::TruncatedTail { line } => {
                write!(f, "line {line}: the log is truncated (partial last record)")
            }
            Problem::Missing { first_seq, last_seq } if first_seq == last_seq => write!(
                f,
                "record {first_seq} is missing from the end: the witness saw it, the log ends before it"
            ),
            Problem::Missing { first_seq, last_seq } => write!(
                f,
                "records {} are missing from the end: the witness saw up to record {last_seq}, the log ends before {first_seq}",
                numbers(*first_seq, *last_seq)
            ),
            Problem::Unwitnessed { line, seq } => write!(
                f,
                "line {line}: record {seq} is not the record the witness saw (the log was rewritten from here)"
            ),
            Problem::BadCheckpoint { line, seq } => write!(
                f,
                "line {line}: checkpoint {seq} does not verify with this public key (records before it were altered, or another key signed it)"
            ),
            Problem::Unsigned => write!(f, "no checkpoint in the log is signed with this public key"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    pub records: u64,
    /// The first problem, if any.
    pub problem: Option<Problem>,
}

/// The fields the chain and the warnings need; the rest of the record is covered by the hash
/// of the raw line.
#[derive(serde::Deserialize)]
struct Chain {
    seq: u64,
    prev_hash: String,
    hash: String,
    #[serde(default)]
    phase: Option<Phase>,
    #[serde(default)]
    action: String,
    #[serde(default)]
    op_id: String,
    #[serde(default)]
    ticket: Option<String>,
    #[serde(default)]
    params: BTreeMap<String, String>,
}

/// The hash of a stored line: the line with its `hash` value emptied is exactly the canonical
/// JSON that was hashed when it was written (the writer serialises the same struct in the same
/// field order), so any changed byte shows.
fn line_hash(text: &str, hash: &str) -> Option<String> {
    let key = "\"hash\":\"";
    let pos = text.rfind(key)? + key.len();
    if text.get(pos..pos + hash.len())? != hash {
        return None;
    }
    let mut h = Sha256::new();
    h.update(&text.as_bytes()[..pos]);
    h.update(&text.as_bytes()[pos + hash.len()..]);
    Some(hex::encode(h.finalize()))
}

struct Line {
    seq: u64,
    hash: String,
    prev_hash: String,
    hash_ok: bool,
    phase: Option<Phase>,
    action: String,
    op_id: String,
    ticket: Option<String>,
    params: BTreeMap<String, String>,
}

/// Verifies the chain of the log at `path`.
pub fn verify(path: &Path) -> std::io::Result<VerifyReport> {
    let lines = read(path)?;
    Ok(chain(&lines))
}

struct Lines {
    lines: Vec<Option<Line>>,
    ends_with_newline: bool,
}

fn read(path: &Path) -> std::io::Result<Lines> {
    let file = std::fs::File::open(path)?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut lines: Vec<Option<Line>> = Vec::new();
    let mut buf = Vec::new();
    let mut ends_with_newline = true;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        ends_with_newline = buf.ends_with(b"\n");
        // A line that is not UTF-8 is not a record (read as text, it would fail the whole read).
        let text = std::str::from_utf8(&buf).unwrap_or("").trim_end_matches('\n');
        lines.push(serde_json::from_str::<Chain>(text).ok().map(|r| Line {
            seq: r.seq,
            hash_ok: line_hash(text, &r.hash).is_some_and(|h| h == r.hash),
            hash: r.hash,
            prev_hash: r.prev_hash,
            phase: r.phase,
            action: r.action,
            op_id: r.op_id,
            ticket: r.ticket,
            params: r.params,
        }));
    }
    Ok(Lines { lines, ends_with_newline })
}

fn chain(l: &Lines) -> VerifyReport {
    let (lines, ends_with_newline) = (&l.lines, l.ends_with_newline);
    let n = lines.len() as u64;
    let mut seen: HashMap<u64, u32> = HashMap::with_capacity(lines.len());
    for l in lines.iter().flatten() {
        *seen.entry(l.seq).or_default() += 1;
    }
    let mut occurrences: HashMap<u64, u32> = HashMap::new();
    let (mut expected_seq, mut prev_hash) = (0u64, GENESIS.to_string());
    for (i, l) in lines.iter().enumerate() {
        let line = i as u64 + 1;
        let Some(l) = l else {
            let problem = if line == n && !ends_with_newline {
                Problem::TruncatedTail { line }
            } else {
                Problem::Corrupt { line }
            };
            return VerifyReport { records: i as u64, problem: Some(problem) };
        };
        let occ = occurrences.entry(l.seq).or_default();
        *occ += 1;
        let fail = |p| VerifyReport { records: i as u64, problem: Some(p) };
        if line == n && !ends_with_newline {
            return fail(Problem::TruncatedTail { line });
        }
        // A sequence number seen twice: the copy that does not chain is the inserted one.
        if seen.get(&l.seq).copied().unwrap_or(0) > 1 && (l.prev_hash != prev_hash || !l.hash_ok) {
            return fail(Problem::Inserted { line, seq: l.seq });
        }
        if !l.hash_ok {
            return fail(Problem::Edited { line, seq: l.seq });
        }
        if l.seq != expected_seq {
            if l.seq < expected_seq {
                return fail(Problem::Reordered { line, seq: l.seq, expected_seq });
            }
            // Missing here: moved further down, or gone.
            if seen.contains_key(&expected_seq) {
                return fail(Problem::Reordered { line, seq: l.seq, expected_seq });
            }
            return fail(Problem::Removed { line, first_seq: expected_seq, last_seq: l.seq - 1 });
        }
        if l.prev_hash != prev_hash {
            return fail(if line == 1 {
                Problem::Edited { line, seq: l.seq }
            } else {
                Problem::Replaced { line }
            });
        }
        expected_seq = l.seq + 1;
        prev_hash.clone_from(&l.hash);
    }
    VerifyReport { records: n, problem: None }
}

/// What [`verify_full`] checks besides the chain.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Witnessed heads (from the journal beside the log, a syslog export, a SIEM). Heads of
    /// other logs (another `log=` id) are ignored.
    pub heads: Vec<Head>,
    /// Check the signed checkpoints with this key.
    pub pubkey: Option<ed25519_dalek::VerifyingKey>,
    /// Now (Unix seconds), to tell a break-glass session still within its time from one that
    /// lapsed without an end record.
    pub now: i64,
}

/// Something to look at that is not tampering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// An intent with no outcome: the action was interrupted (or is still running).
    NoOutcome { seq: u64, action: String, op_id: String },
    /// A break-glass session that started and never ended; `open` when it is still within its
    /// time.
    BreakGlassOpen { seq: u64, session: String, ticket: Option<String>, open: bool },
    /// Records after the last checkpoint the key verified: the signature does not cover them.
    UnsignedTail { first_seq: u64, last_seq: u64 },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::NoOutcome { seq, action, op_id } => {
                write!(
                    f,
                    "record {seq}: {action} intent (op {op_id}) has no outcome: interrupted, or still running"
                )
            }
            Warning::BreakGlassOpen { seq, session, ticket, open } => write!(
                f,
                "record {seq}: break-glass session {session} (ticket {}) has no end record{}",
                ticket.as_deref().unwrap_or("none"),
                if *open { " (still within its time)" } else { "" }
            ),
            Warning::UnsignedTail { first_seq, last_seq } if first_seq == last_seq => write!(
                f,
                "record {first_seq} comes after the last signed checkpoint: the signature does not cover it"
            ),
            Warning::UnsignedTail { first_seq, last_seq } => write!(
                f,
                "records {} come after the last signed checkpoint: the signature does not cover them",
                numbers(*first_seq, *last_seq)
            ),
        }
    }
}

/// What the witness told.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WitnessSummary {
    /// Heads of this log that were read.
    pub heads: usize,
    /// The highest record number witnessed.
    pub last: Option<u64>,
}

/// The full verdict on a log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The log's id in witness lines (from its first record), when it has one.
    pub log: Option<String>,
    /// Complete records that verified.
    pub records: u64,
    /// Tampering: the chain broken, records the witness saw missing or rewritten, a bad
    /// signature.
    pub problem: Option<Problem>,
    /// The last line is a torn write (a crash while appending) that the witness never saw
    /// whole: the line number. Not tampering, but the log is not intact.
    pub incomplete_write: Option<u64>,
    pub witness: WitnessSummary,
    /// With a public key: how many checkpoints verified, and the last record they cover.
    pub signed: Option<(u64, Option<u64>)>,
    pub warnings: Vec<Warning>,
}

impl Report {
    /// Whether the log is whole and untampered (warnings aside).
    pub fn intact(&self) -> bool {
        self.problem.is_none() && self.incomplete_write.is_none()
    }
}

/// Verifies the log at `path`: its chain, then the file against the witnessed heads, the
/// checkpoints against a public key, and collects warnings.
pub fn verify_full(path: &Path, opts: &Options) -> std::io::Result<Report> {
    let lines = read(path)?;
    let chain = chain(&lines);
    let mut report = Report { records: chain.records, ..Report::default() };
    let torn = match chain.problem {
        None => None,
        Some(Problem::TruncatedTail { line }) => Some(line),
        Some(p) => {
            report.problem = Some(p);
            return Ok(report);
        }
    };
    // The records that verified: every line but a torn last one; numbered from 0 in order.
    let good: Vec<&Line> = lines.lines.iter().take(report.records as usize).flatten().collect();
    let log = good.first().map(|l| witness::log_id(&l.hash));
    report.log.clone_from(&log);
    let heads: Vec<&Head> =
        opts.heads.iter().filter(|h| log.as_ref().is_none_or(|id| &h.log == id)).collect();
    report.witness = WitnessSummary { heads: heads.len(), last: heads.iter().map(|h| h.seq).max() };
    let next = good.len() as u64;
    if let Some(last) = report.witness.last.filter(|&w| w >= next) {
        // The witness saw records the file does not hold whole: cut, or torn after the fact.
        report.problem = Some(Problem::Missing { first_seq: next, last_seq: last });
        return Ok(report);
    }
    report.incomplete_write = torn;
    if let Some(h) = heads.iter().filter(|h| good[h.seq as usize].hash != h.hash).min_by_key(|h| h.seq) {
        report.problem = Some(Problem::Unwitnessed { line: h.seq + 1, seq: h.seq });
        report.records = h.seq;
        return Ok(report);
    }
    if let Some(key) = &opts.pubkey {
        let mut verified = 0;
        let mut through = None;
        for (i, l) in good.iter().enumerate().filter(|(_, l)| l.phase == Some(Phase::Checkpoint)) {
            let sig = l.params.get("sig").map_or("", String::as_str);
            if !super::sign::check(key, l.seq, &l.prev_hash, sig) {
                report.problem = Some(Problem::BadCheckpoint { line: i as u64 + 1, seq: l.seq });
                // Only what an earlier checkpoint signed is still vouched for.
                report.records = through.map_or(0, |t: u64| t + 1);
                return Ok(report);
            }
            verified += 1;
            through = Some(l.seq);
        }
        report.signed = Some((verified, through));
        if verified == 0 {
            report.problem = Some(Problem::Unsigned);
            return Ok(report);
        }
        if let Some(t) = through.filter(|&t| t + 1 < next) {
            report.warnings.push(Warning::UnsignedTail { first_seq: t + 1, last_seq: next - 1 });
        }
    }
    report.warnings.splice(0..0, warnings(&good, opts.now));
    Ok(report)
}

/// Intents without outcomes and break-glass starts without ends, in log order.
fn warnings(good: &[&Line], now: i64) -> Vec<Warning> {
    let mut intents: HashMap<&str, &Line> = HashMap::new();
    let mut sessions: HashMap<&str, &Line> = HashMap::new();
    for l in good {
        match (l.phase, l.action.as_str()) {
            (Some(Phase::Intent), _) => {
                intents.insert(&l.op_id, l);
            }
            (Some(Phase::Outcome), _) => {
                intents.remove(l.op_id.as_str());
            }
            (_, BREAK_GLASS_START) => {
                sessions.insert(&l.op_id, l);
            }
            (_, BREAK_GLASS_END) => {
                sessions.remove(l.op_id.as_str());
            }
            _ => {}
        }
    }
    let mut w: Vec<(u64, Warning)> = intents
        .into_values()
        .map(|l| (l.seq, Warning::NoOutcome { seq: l.seq, action: l.action.clone(), op_id: l.op_id.clone() }))
        .chain(sessions.into_values().map(|l| {
            let until = l.params.get("until").and_then(|u| u.parse::<i64>().ok());
            (
                l.seq,
                Warning::BreakGlassOpen {
                    seq: l.seq,
                    session: l.op_id.clone(),
                    ticket: l.ticket.clone(),
                    open: until.is_some_and(|u| u > now),
                },
            )
        }))
        .collect();
    w.sort_by_key(|(seq, _)| *seq);
    w.into_iter().map(|(_, w)| w).collect()
}
