//! `audit_verify`: `audit verify` on mutated logs. The log is a valid one written by the audit
//! writer (`tests/fixtures/audit/base.jsonl`: intents and outcomes, a break-glass session,
//! signed checkpoints every 4 records, with its witness journal and public key); the input is
//! a list of mutations applied to it, and the mutated file is verified three ways: the chain
//! alone (`verify`), with the witnessed heads and the public key (`verify_full`, as the
//! command does by default), and with neither.
//!
//! Mutations, read from the input until it ends (numbers are little-endian, positions taken
//! modulo the length): `0 POS:u16 MASK` XOR a byte; `1 POS:u16` cut the file there;
//! `2 I` delete line I; `3 I J` copy line I before line J; `4 I J` swap lines I and J;
//! `5 POS:u16 N BYTES…` insert N bytes. A copy that would take the file past 1 MiB is skipped.
//!
//! Checks: no panic and no I/O error (a byte that is not UTF-8 is a bad line, not a failure to
//! read); the unchanged log is intact; any change is caught by the full check; without
//! witness or key, the log verifies intact exactly when it is what the writer wrote cut at a
//! line end (that is what the witness is for), and a log cut inside its last line is an
//! incomplete write at that line, not tampering; every line number named is a line of the
//! file (or the one after it).

use crate::audit::{Problem, Report, VerifyOptions as Options, sign, verify, verify_full, witness};
use std::path::Path;
use std::sync::LazyLock;

/// The log as the writer wrote it, its witness journal and its public key (read once, from
/// the source tree).
struct Fixture {
    log: Vec<u8>,
    witness: String,
    pubkey: String,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/audit");
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    Fixture {
        log: read("base.jsonl"),
        witness: String::from_utf8_lossy(&read("base.jsonl.witness")).into_owned(),
        pubkey: String::from_utf8_lossy(&read("base.pub")).trim().to_string(),
    }
});

/// The log the mutations start from.
pub fn base() -> &'static [u8] {
    &FIXTURE.log
}

/// The largest file the mutations may make (copies stop there).
const MAX_FILE: usize = 1 << 20;

/// Applies the mutations the input describes to `base`.
pub fn mutate(base: &[u8], mut ops: &[u8]) -> Vec<u8> {
    let mut file = base.to_vec();
    fn take<'a>(ops: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = ops.split_at_checked(n)?;
        *ops = rest;
        Some(head)
    }
    let pos = |ops: &mut &[u8], len: usize| {
        take(ops, 2).map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])) % (len + 1))
    };
    while let Some(&[op]) = take(&mut ops, 1) {
        let mut lines: Vec<Vec<u8>> = file.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        let line = |ops: &mut &[u8], n: usize| take(ops, 1).map(|b| usize::from(b[0]) % n.max(1));
        match op % 6 {
            0 => {
                let (Some(p), Some(&[mask])) = (pos(&mut ops, file.len()), take(&mut ops, 1)) else { break };
                if let Some(b) = file.get_mut(p) {
                    *b ^= mask;
                }
            }
            1 => {
                let Some(p) = pos(&mut ops, file.len()) else { break };
                file.truncate(p);
            }
            2..=4 if lines.is_empty() => {}
            2 => {
                let Some(i) = line(&mut ops, lines.len()) else { break };
                lines.remove(i);
                file = lines.concat();
            }
            3 => {
                let (Some(i), Some(j)) = (line(&mut ops, lines.len()), line(&mut ops, lines.len() + 1))
                else {
                    break;
                };
                // Copies of one long line would double the file each time: a fuzz input of 60
                // bytes made 100+ MB (a harness hang, not a slow verify). Past 1 MiB, no copies.
                if file.len() + lines[i].len() > MAX_FILE {
                    continue;
                }
                let copy = lines[i].clone();
                lines.insert(j, copy);
                file = lines.concat();
            }
            4 => {
                let (Some(i), Some(j)) = (line(&mut ops, lines.len()), line(&mut ops, lines.len())) else {
                    break;
                };
                lines.swap(i, j);
                file = lines.concat();
            }
            _ => {
                let (Some(p), Some(&[n])) = (pos(&mut ops, file.len()), take(&mut ops, 1)) else { break };
                let Some(bytes) = take(&mut ops, usize::from(n)) else { break };
                file.splice(p..p, bytes.iter().copied());
            }
        }
    }
    file
}

/// Every line number a report names is a line of the file or the one after it.
fn lines_named_exist(r: &Report, lines: u64) {
    let line = match &r.problem {
        Some(
            Problem::Corrupt { line }
            | Problem::Edited { line, .. }
            | Problem::Removed { line, .. }
            | Problem::Inserted { line, .. }
            | Problem::Reordered { line, .. }
            | Problem::Replaced { line }
            | Problem::TruncatedTail { line }
            | Problem::Unwitnessed { line, .. }
            | Problem::BadCheckpoint { line, .. },
        ) => Some(*line),
        _ => None,
    };
    for l in line.into_iter().chain(r.incomplete_write) {
        assert!((1..=lines + 1).contains(&l), "line {l} of a file of {lines} lines: {r:?}");
    }
    if let Some(p) = &r.problem {
        assert!(!p.to_string().is_empty());
    }
}

pub fn check(dir: &Path, data: &[u8]) {
    let base = base();
    let file = mutate(base, data);
    let path = dir.join("audit.jsonl");
    std::fs::write(&path, &file).expect("scratch file");
    let opts = Options {
        heads: witness::parse_heads(&FIXTURE.witness),
        pubkey: Some(sign::parse_public(&FIXTURE.pubkey).expect("the fixture's public key")),
        now: 1_767_225_600,
    };
    let read =
        |o: &Options| verify_full(&path, o).unwrap_or_else(|e| panic!("verify could not read the log: {e}"));
    let full = read(&opts);
    let bare = read(&Options { now: opts.now, ..Options::default() });
    let chain = verify(&path).unwrap_or_else(|e| panic!("verify could not read the log: {e}"));
    let lines = file.split_inclusive(|&b| b == b'\n').count() as u64;
    for r in [&full, &bare] {
        lines_named_exist(r, lines);
    }
    if file == base {
        assert!(full.intact() && bare.intact() && chain.problem.is_none(), "{full:?}");
        return;
    }
    assert!(!full.intact(), "a changed log verified intact: {:?}", String::from_utf8_lossy(&file));
    let prefix = base.starts_with(&file);
    let at_line_end = file.is_empty() || file.ends_with(b"\n");
    assert_eq!(bare.intact(), prefix && at_line_end, "{bare:?} for {:?}", String::from_utf8_lossy(&file));
    assert_eq!(chain.problem.is_none(), prefix && at_line_end, "{chain:?}");
    if prefix && !at_line_end {
        // Torn while appending: the last line is an incomplete write, not tampering.
        assert_eq!((bare.problem.as_ref(), bare.incomplete_write), (None, Some(lines)), "{bare:?}");
        assert_eq!(chain.problem, Some(Problem::TruncatedTail { line: lines }));
        // The witness saw that record whole, so with it the cut shows as records missing.
        assert!(matches!(full.problem, Some(Problem::Missing { .. })), "{full:?}");
    }
}
