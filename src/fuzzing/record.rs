//! `recording`: the flight recorder's reader on mutated recordings. The recording is a valid one
//! the recorder wrote (`tests/fixtures/record/sim.gprec`: a small simulator run, keyframes and
//! updates); the input is a list of mutations applied to it, and the mutated file is opened,
//! every frame decoded, and the state at its first, middle and last instant replayed and drawn.
//!
//! Mutations, read from the input until it ends (numbers little-endian, positions modulo the
//! length): `0 POS:u16 MASK` XOR a byte; `1 POS:u16` cut the file there; `2 POS:u16 N BYTES…`
//! insert N bytes; `3 POS:u16 V:u32` overwrite four bytes (a length, a count) with V.
//!
//! Checks: no panic; the unchanged recording opens with nothing to say and replays to its end;
//! every error names a byte offset inside the file (or its end) and says what was expected.

use crate::record::{Kind, RecordError};
use crate::replay::Tape;
use std::path::Path;
use std::sync::LazyLock;

static FIXTURE: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/record/sim.gprec");
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
});

fn mutate(base: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = base.to_vec();
    let mut i = 0;
    let u16_at = |i: usize| data.get(i..i + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
    while i < data.len() {
        let op = data[i] % 4;
        i += 1;
        let Some(pos) = u16_at(i) else { break };
        i += 2;
        let pos = if out.is_empty() { 0 } else { pos % out.len() };
        match op {
            0 => {
                let Some(&m) = data.get(i) else { break };
                i += 1;
                if let Some(b) = out.get_mut(pos) {
                    *b ^= m;
                }
            }
            1 => out.truncate(pos),
            2 => {
                let Some(&n) = data.get(i) else { break };
                i += 1;
                let end = (i + usize::from(n)).min(data.len());
                out.splice(pos..pos, data[i..end].iter().copied());
                i = end;
            }
            _ => {
                let Some(v) = data.get(i..i + 4) else { break };
                i += 4;
                for (k, b) in v.iter().enumerate() {
                    if let Some(x) = out.get_mut(pos + k) {
                        *x = *b;
                    }
                }
            }
        }
    }
    out
}

fn offset_inside(e: &RecordError, len: u64) {
    match e {
        RecordError::Bad { offset, what, .. } => {
            assert!(*offset <= len, "offset {offset} past the end ({len}): {what}");
            assert!(!what.is_empty());
        }
        RecordError::Io { error, .. } => panic!("an I/O error reading a file that is there: {error}"),
    }
}

pub fn check(dir: &Path, data: &[u8]) {
    let bytes = mutate(&FIXTURE, data);
    let len = bytes.len() as u64;
    let p = dir.join(crate::record::segment_name(1));
    std::fs::write(&p, &bytes).expect("scratch file");
    let tape = match Tape::open(&p) {
        Ok(t) => t,
        Err(e) => return offset_inside(&e, len),
    };
    if data.is_empty() {
        assert!(tape.notes.is_empty(), "{:?}", tape.notes);
    }
    for (i, f) in tape.frames.iter().enumerate() {
        if f.info.kind == Kind::Updates
            && let Err(e) = tape.updates(i)
        {
            assert!(!data.is_empty(), "the unchanged recording: {e}");
            offset_inside(&e, len);
        }
    }
    let Some((first, last)) = tape.span() else { return };
    for t in [first, first + (last - first) / 2, last] {
        match tape.at(t) {
            Ok(c) => draw(c.state),
            Err(e) => {
                assert!(!data.is_empty(), "the unchanged recording at {t}: {e}");
                offset_inside(&e, len);
            }
        }
    }
}

/// The console over a replayed state, in the views that index it most.
fn draw(state: crate::state::ClusterState) {
    use crate::tui::{app::App, keymap::Keymap, theme::Theme, widgets::Glyphs};
    let mut a =
        App::new(state, Keymap::builtin("default"), Theme::builtin("dark"), Glyphs::UNICODE, "fuzz".into());
    for view in ["overview", "nodes", "gpus", "jobs", "fabric"] {
        a.run_command(view);
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, 24)).expect("terminal");
        let now = a.state().now;
        term.draw(|f| crate::tui::draw::draw(f, &mut a, now)).expect("draw");
    }
}
