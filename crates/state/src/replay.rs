//! A recording read back ([`gpuplane_infra::record`]): its frames in order across segments,
//! and the state at any instant — the last keyframe at or before it, then the batches of
//! updates after it, applied as the live console applied them.

use crate::model::protocol::Update;
use crate::state::ClusterState;
use gpuplane_infra::record::reader::Segment;
use gpuplane_infra::record::{FrameInfo, Kind, RecordError, segments};
use std::path::Path;

/// One frame: its segment and where it is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    pub segment: usize,
    pub info: FrameInfo,
}

/// A recording: one segment, or a ring's directory of them.
#[derive(Debug)]
pub struct Tape {
    pub segments: Vec<Segment>,
    /// Every frame, in the order written.
    pub frames: Vec<Frame>,
    /// What a reader should be told (an incomplete last frame).
    pub notes: Vec<String>,
}

/// A state reached on a tape: the state, the next frame to apply, and the instant shown.
#[derive(Debug)]
pub struct Cursor {
    pub state: ClusterState,
    /// Index into [`Tape::frames`] of the next frame to apply.
    pub next: usize,
    /// The wall clock of the last frame applied (unix ms).
    pub at_ms: i64,
}

impl Tape {
    /// A segment file, or a directory of segments (a ring).
    pub fn open(path: &Path) -> Result<Tape, RecordError> {
        let files = if path.is_dir() {
            segments(path).map_err(|error| RecordError::Io { path: path.display().to_string(), error })?
        } else {
            vec![path.to_path_buf()]
        };
        if files.is_empty() {
            return Err(RecordError::Bad {
                path: path.display().to_string(),
                offset: 0,
                what: "a recording segment (rec-*.gprec) in this directory: there is none".into(),
            });
        }
        let mut tape = Tape { segments: Vec::new(), frames: Vec::new(), notes: Vec::new() };
        for f in files {
            let s = Segment::open(&f)?;
            if let Some((at, why)) = &s.truncated {
                tape.notes
                    .push(format!("{}: incomplete frame at byte {at} ({why}): read up to it", f.display()));
            }
            let i = tape.segments.len();
            tape.frames.extend(s.frames.iter().map(|&info| Frame { segment: i, info }));
            tape.segments.push(s);
        }
        Ok(tape)
    }

    /// The first and last instants recorded (unix ms).
    pub fn span(&self) -> Option<(i64, i64)> {
        Some((self.frames.first()?.info.wall_ms, self.frames.last()?.info.wall_ms))
    }

    fn payload(&self, f: &Frame) -> Result<Vec<u8>, RecordError> {
        self.segments[f.segment].payload(&f.info)
    }

    fn bad(&self, f: &Frame, what: String) -> RecordError {
        RecordError::Bad {
            path: self.segments[f.segment].path.display().to_string(),
            offset: f.info.offset,
            what,
        }
    }

    /// A frame's batch of updates.
    pub fn updates(&self, i: usize) -> Result<Vec<Update>, RecordError> {
        let f = &self.frames[i];
        let raw = self.payload(f)?;
        borsh::from_slice::<Vec<Update>>(&raw)
            .map_err(|e| self.bad(f, format!("a batch of updates (as this version writes them): {e}")))
    }

    /// The state at `t_ms`: the last keyframe at or before it, and every batch after it up to
    /// `t_ms`. Before the first keyframe: an error saying when the recording begins.
    pub fn at(&self, t_ms: i64) -> Result<Cursor, RecordError> {
        let key = self
            .frames
            .iter()
            .rposition(|f| f.info.kind == Kind::Keyframe && f.info.wall_ms <= t_ms)
            .ok_or_else(|| {
            let first = self.frames.first().copied();
            let shown = first.map_or("nothing".into(), |f| format!("unix ms {}", f.info.wall_ms));
            RecordError::Bad {
                path: first.map_or(String::new(), |f| self.segments[f.segment].path.display().to_string()),
                offset: first.map_or(0, |f| f.info.offset),
                what: format!("an instant the recording holds: it begins at {shown}, after unix ms {t_ms}"),
            }
        })?;
        let f = &self.frames[key];
        let state = ClusterState::from_snapshot(&self.payload(f)?)
            .map_err(|e| self.bad(f, format!("a state snapshot (as this version writes it): {e}")))?;
        let mut c = Cursor { state, next: key + 1, at_ms: f.info.wall_ms };
        self.advance(&mut c, t_ms)?;
        Ok(c)
    }

    /// Applies the batches after the cursor up to `t_ms` (a keyframe on the way is passed: the
    /// state it holds is the one the batches made). Returns whether anything was applied.
    pub fn advance(&self, c: &mut Cursor, t_ms: i64) -> Result<bool, RecordError> {
        let mut any = false;
        while let Some(f) = self.frames.get(c.next) {
            if f.info.wall_ms > t_ms {
                break;
            }
            if f.info.kind == Kind::Updates {
                let batch = self.updates(c.next)?;
                c.state.apply_batch(batch);
                any = true;
            }
            c.at_ms = f.info.wall_ms;
            c.next += 1;
        }
        // The instant shown is the one asked for, within what the tape holds.
        let (first, last) = self.span().unwrap_or((t_ms, t_ms));
        c.at_ms = c.at_ms.max(t_ms.clamp(first, last));
        Ok(any)
    }

    /// The instant of the frame after the cursor, if any.
    pub fn next_at(&self, c: &Cursor) -> Option<i64> {
        self.frames.get(c.next).map(|f| f.info.wall_ms)
    }

    /// The instant of the last frame before the one the cursor shows, if any.
    pub fn prev_at(&self, c: &Cursor) -> Option<i64> {
        let shown = c.next.checked_sub(1)?;
        self.frames[..shown].iter().rev().map(|f| f.info.wall_ms).find(|&w| w < c.at_ms)
    }
}
