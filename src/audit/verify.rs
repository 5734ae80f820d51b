//! `gpuplane audit verify`: walks the chain and names the first record that was edited,
//! removed, inserted or reordered, or a truncated tail.

use super::GENESIS;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
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
    /// The file ends in the middle of a record.
    TruncatedTail { line: u64 },
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
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    pub records: u64,
    /// The first problem, if any.
    pub problem: Option<Problem>,
}

/// The fields the chain needs; the rest of the record is covered by the hash of the raw line.
#[derive(serde::Deserialize)]
struct Chain {
    seq: u64,
    prev_hash: String,
    hash: String,
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
}

/// Verifies the chain of the log at `path`.
pub fn verify(path: &Path) -> std::io::Result<VerifyReport> {
    let file = std::fs::File::open(path)?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut lines: Vec<Option<Line>> = Vec::new();
    let mut buf = String::new();
    let mut ends_with_newline = true;
    loop {
        buf.clear();
        if reader.read_line(&mut buf)? == 0 {
            break;
        }
        ends_with_newline = buf.ends_with('\n');
        let text = buf.trim_end_matches('\n');
        lines.push(serde_json::from_str::<Chain>(text).ok().map(|r| Line {
            seq: r.seq,
            hash_ok: line_hash(text, &r.hash).is_some_and(|h| h == r.hash),
            hash: r.hash,
            prev_hash: r.prev_hash,
        }));
    }
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
            return Ok(VerifyReport { records: i as u64, problem: Some(problem) });
        };
        let occ = occurrences.entry(l.seq).or_default();
        *occ += 1;
        let fail = |p| Ok(VerifyReport { records: i as u64, problem: Some(p) });
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
    Ok(VerifyReport { records: n, problem: None })
}
