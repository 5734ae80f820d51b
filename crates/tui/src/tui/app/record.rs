//! The flight recorder's side of the console: every batch the live state applies goes to the
//! recorder as it is applied (a keyframe of the whole state first, then one every
//! `keyframe_every`), and a console showing a recording ([`Replay`]) sends nothing.

use super::*;
use crate::record::writer::Recorder;

/// A running recorder and when its last keyframe was.
pub struct Recording {
    pub recorder: Recorder,
    /// A keyframe at least this often (unix ms between them).
    pub every_ms: i64,
    last_key_ms: Option<i64>,
    /// Time spent encoding on this task (the state's snapshot, the batches), for the log.
    pub encode_ms: f64,
}

impl Recording {
    pub fn new(recorder: Recorder, every_ms: i64) -> Recording {
        Recording { recorder, every_ms, last_key_ms: None, encode_ms: 0.0 }
    }

    /// Hands the recorder `batch` (and, when one is due, a keyframe of `live` before it).
    fn before(&mut self, live: &ClusterState, batch: &[Update], wall_ms: i64) {
        let started = std::time::Instant::now();
        let due = self.recorder.wants_keyframe()
            || self.last_key_ms.is_none_or(|k| wall_ms.saturating_sub(k) >= self.every_ms);
        if due && self.recorder.keyframe(wall_ms, live.snapshot()) {
            self.last_key_ms = Some(wall_ms);
        }
        let mut raw = Vec::with_capacity(4096);
        // A slice is written as a `Vec` is (a u32 count, then each): read back as one.
        if borsh::BorshSerialize::serialize(batch, &mut raw).is_ok() {
            self.recorder.updates(wall_ms, raw);
        }
        self.encode_ms += started.elapsed().as_secs_f64() * 1000.0;
    }
}

/// A console showing a recording: the replayed clock, the speed, and whether it plays.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// The instant shown (unix ms).
    pub at_ms: i64,
    /// ×0.25 to ×16.
    pub speed: f64,
    pub playing: bool,
    /// What the recording said when it was opened (an incomplete last frame, a gap).
    pub note: Option<String>,
}

impl App {
    /// Applies a batch to the live state (deriving once), handing it to the recorder first.
    pub(crate) fn feed(&mut self, batch: Vec<Update>) -> bool {
        if let Some(r) = self.recording.as_mut() {
            r.before(&self.live, &batch, self.wall_now.saturating_mul(1000));
        }
        self.live.apply_batch(batch)
    }

    pub(crate) fn feed_one(&mut self, u: Update) -> bool {
        self.feed(vec![u])
    }
}
