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

/// A console showing a recording: the tape, where it is on it, the speed, and whether it
/// plays. No action can be sent (the console is read-only).
#[derive(Debug)]
pub struct Replay {
    pub tape: std::sync::Arc<crate::replay::Tape>,
    /// The next frame to apply.
    pub next: usize,
    /// The instant shown (unix ms).
    pub at_ms: i64,
    /// ×0.25 to ×16.
    pub speed: f64,
    pub playing: bool,
}

/// The speeds a recording plays at.
pub const SPEEDS: [f64; 7] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0];

impl Replay {
    /// The console's state of a tape at the cursor: paused, at ×1.
    pub fn new(tape: std::sync::Arc<crate::replay::Tape>, c: &crate::replay::Cursor) -> Replay {
        Replay { tape, next: c.next, at_ms: c.at_ms, speed: 1.0, playing: false }
    }

    /// The header's badge: `REPLAY 2026-12-04 02:10:05 UTC x4 >` (playing) or `… x1 ||`;
    /// without the date when not `wide`.
    pub fn badge(&self, wide: bool) -> String {
        let secs = self.at_ms.div_euclid(1000);
        let when =
            jiff::Timestamp::from_second(secs).map(crate::clock::stamp_secs).unwrap_or_else(|_| "-".into());
        let when = if wide { when.as_str() } else { when.split_once(' ').map_or(when.as_str(), |(_, t)| t) };
        let speed = if self.speed < 1.0 { format!("x{}", self.speed) } else { format!("x{:.0}", self.speed) };
        format!("REPLAY {when} {speed} {}", if self.playing { ">" } else { "||" })
    }
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

impl App {
    /// The clock the screen shows: the replayed instant in a replay, else `real`.
    pub fn clock(&self, real: crate::model::Epoch) -> crate::model::Epoch {
        self.replay.as_ref().map_or(real, |r| r.at_ms.div_euclid(1000))
    }

    /// Shows the tape at `t_ms`: forward by applying what follows, back from the keyframe
    /// before it. A frame that cannot be read stops the playing and says why.
    pub fn replay_to(&mut self, t_ms: i64) {
        let Some(r) = self.replay.as_mut() else { return };
        let tape = r.tape.clone();
        let res = if t_ms >= r.at_ms {
            let mut c =
                crate::replay::Cursor { state: std::mem::take(&mut self.live), next: r.next, at_ms: r.at_ms };
            let res = tape.advance(&mut c, t_ms);
            (r.next, r.at_ms) = (c.next, c.at_ms);
            self.live = c.state;
            res.map(drop)
        } else {
            tape.at(t_ms).map(|mut c| {
                // Newer than anything shown: every cached row is rebuilt.
                c.state.generation = c.state.generation.max(self.live.generation) + 1;
                (r.next, r.at_ms) = (c.next, c.at_ms);
                self.live = c.state;
            })
        };
        if let Err(e) = res {
            r.playing = false;
            self.ui.message = Some((format!("replay: {e}"), true));
        }
    }

    /// One second of the console's clock: a playing replay moves on by the speed.
    pub(crate) fn replay_tick(&mut self) -> bool {
        let Some(r) = self.replay.as_ref().filter(|r| r.playing) else { return false };
        let to = r.at_ms + (r.speed * 1000.0) as i64;
        let end = r.tape.span().map_or(to, |s| s.1);
        self.replay_to(to);
        if let Some(r) = self.replay.as_mut()
            && to >= end
        {
            r.playing = false;
            self.ui.message = Some(("replay: the end of the recording".into(), false));
        }
        true
    }

    /// The time keys of a replay; `false` when this console shows no recording.
    pub(crate) fn replay_key(&mut self, a: Action) -> bool {
        let Some(r) = self.replay.as_mut() else {
            if matches!(
                a,
                Action::ReplayBack
                    | Action::ReplayForward
                    | Action::ReplaySlower
                    | Action::ReplayFaster
                    | Action::ReplayNext
            ) {
                self.ui.message = Some(("time keys work in a recording: gpuplane replay".into(), true));
                return true;
            }
            return false;
        };
        let speed = SPEEDS.iter().position(|&s| s == r.speed).unwrap_or(2);
        match a {
            Action::Pause => r.playing = !r.playing,
            Action::ReplaySlower => r.speed = SPEEDS[speed.saturating_sub(1)],
            Action::ReplayFaster => r.speed = SPEEDS[(speed + 1).min(SPEEDS.len() - 1)],
            Action::ReplayForward => {
                let c = crate::replay::Cursor { state: Default::default(), next: r.next, at_ms: r.at_ms };
                match r.tape.next_at(&c) {
                    Some(t) => self.replay_to(t),
                    None => self.ui.message = Some(("replay: the end of the recording".into(), false)),
                }
            }
            Action::ReplayBack => {
                let c = crate::replay::Cursor { state: Default::default(), next: r.next, at_ms: r.at_ms };
                match r.tape.prev_at(&c) {
                    Some(t) => self.replay_to(t),
                    None => self.ui.message = Some(("replay: the start of the recording".into(), false)),
                }
            }
            Action::ReplayNext => self.replay_next_incident(),
            _ => return false,
        }
        true
    }

    /// Steps forward until the incidents change (one opens, closes or changes state), or the
    /// recording ends.
    fn replay_next_incident(&mut self) {
        let key = |s: &ClusterState| -> Vec<String> {
            s.incidents
                .iter()
                .map(|i| format!("{}|{}|{}|{:?}", i.cluster, i.subject, i.signal, i.lifecycle))
                .collect()
        };
        let before = key(&self.live);
        loop {
            let Some(r) = self.replay.as_ref() else { return };
            let c = crate::replay::Cursor { state: Default::default(), next: r.next, at_ms: r.at_ms };
            let Some(t) = r.tape.next_at(&c) else {
                self.ui.message = Some(("replay: no change of the incidents after this".into(), false));
                return;
            };
            self.replay_to(t);
            if key(&self.live) != before {
                let n = self.live.incidents.len();
                self.ui.message = Some((format!("replay: the incidents changed ({n} open)"), false));
                return;
            }
        }
    }

    /// `:at TIME`: shows the recording at that instant (see [`crate::clock::parse_instant`]).
    pub(crate) fn at_command(&mut self, rest: &str) {
        let Some(r) = self.replay.as_ref() else {
            self.ui.message = Some(("`:at` works in a recording: gpuplane replay --at TIME".into(), true));
            return;
        };
        match crate::clock::parse_instant(rest, r.at_ms.div_euclid(1000)) {
            Ok(t) => self.replay_to(t.saturating_mul(1000)),
            Err(e) => self.ui.message = Some((e, true)),
        }
    }
}
