//! The flight recorder against the live console: a simulator run recorded as the console
//! applied it, then replayed at instants; each replayed screen equals the live one at that
//! instant (the oracle is the live console's own frame, not the recorder's code).

use crate::common::{pin_utc, render, typed};
use gpuplane::backend::sim::{Sim, SimConfig};
use gpuplane::record::writer::{Recorder, RingOpts};
use gpuplane::replay::Tape;
use gpuplane::state::ClusterState;
use gpuplane::tui::app::{App, Msg, Recording};
use gpuplane::tui::keymap::Keymap;
use gpuplane::tui::theme::Theme;
use gpuplane::tui::widgets::Glyphs;

const T0: i64 = 1_800_000_000;

fn console(state: ClusterState) -> App {
    App::new(state, Keymap::builtin("default"), Theme::builtin("dark"), Glyphs::UNICODE, "researcher".into())
}

/// The screens of a fresh console over `state` in each view, at 80×24 and 200×60.
fn screens(state: ClusterState) -> Vec<String> {
    let mut out = Vec::new();
    for view in ["overview", "nodes", "gpus", "jobs", "queues", "fabric", "timeline"] {
        let mut a = console(state.clone());
        typed(&mut a, &format!(":{view}\r"));
        out.push(render(&mut a, 80, 24));
        out.push(render(&mut a, 200, 60));
    }
    out
}

#[test]
fn a_replayed_instant_shows_what_the_live_console_showed() {
    pin_utc();
    let dir = tempfile::tempdir().unwrap();
    let ring = RingOpts { segment_bytes: 64 << 10, ..RingOpts::new(dir.path().join("rec"), 1 << 30) };
    let mut a = console(ClusterState::new(Default::default(), Default::default()));
    // A keyframe every 20 s of the console's clock: seeks start from one mid-tape.
    a.recording = Some(Recording::new(Recorder::start(ring).unwrap(), 20_000));
    let mut sim = Sim::new(SimConfig { nodes: 24, jobs: 300, ..SimConfig::default() });
    a.wall_now = T0;
    for u in sim.initial() {
        a.update(Msg::Update(u));
    }
    let mut live = Vec::new();
    for tick in 1..=60 {
        a.wall_now = T0 + 2 * tick;
        let batch = if tick % 7 == 0 { vec![sim.tick(), sim.tick()] } else { vec![sim.tick()] };
        a.update(Msg::Updates(batch));
        if [1, 9, 10, 27, 44, 60].contains(&tick) {
            live.push((a.wall_now * 1000, screens(a.live.clone()), a.live.snapshot()));
        }
    }
    let rec = a.recording.take().unwrap();
    rec.recorder.flush();
    let st = rec.recorder.status();
    assert_eq!((st.dropped, st.error.clone()), (0, None), "{st:?}");
    drop(rec);
    let tape = Tape::open(&dir.path().join("rec")).unwrap();
    assert!(tape.segments.len() >= 2, "the run spans segments: {}", tape.segments.len());
    assert!(tape.notes.is_empty(), "{:?}", tape.notes);
    for (at_ms, screens_then, snapshot) in &live {
        let c = tape.at(*at_ms).unwrap();
        assert_eq!(c.at_ms, *at_ms);
        assert!(&c.state.snapshot() == snapshot, "the state at {at_ms} differs from the live one");
        for (i, (want, got)) in screens_then.iter().zip(screens(c.state)).enumerate() {
            assert_eq!(&got, want, "screen {i} at {at_ms}");
        }
    }
    // Before the first keyframe there is nothing to show: said, with when the tape begins.
    let e = tape.at(T0 * 1000 - 1).unwrap_err().to_string();
    assert!(e.contains(&format!("it begins at unix ms {}", T0 * 1000)), "{e}");
}

#[test]
fn a_snapshot_reads_back_to_the_same_state() {
    pin_utc();
    let s = gpuplane::testing::state_after(SimConfig::default(), 30);
    let bytes = s.snapshot();
    let back = ClusterState::from_snapshot(&bytes).unwrap();
    assert!(back.snapshot() == bytes, "the same bytes again");
    assert_eq!(screens(back), screens(s));
    // Its job index is rebuilt: a job is found by its key.
    let j = &bytes[..bytes.len() - 1];
    assert!(ClusterState::from_snapshot(j).is_err(), "a cut snapshot is refused");
}
