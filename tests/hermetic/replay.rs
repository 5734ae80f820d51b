//! The flight recorder against the live console: a simulator run recorded as the console
//! applied it, then replayed at instants; each replayed screen equals the live one at that
//! instant (the oracle is the live console's own frame, not the recorder's code).

use crate::common::{pin_utc, render, typed};
use gpuplane::backend::sim::{Sim, SimConfig};
use gpuplane::record::writer::{Recorder, RingOpts};
use gpuplane::replay::Tape;
use gpuplane::state::ClusterState;
use gpuplane::tui::app::{App, Msg, Recording, Replay};
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

/// A simulator run of `ticks` ticks recorded into `dir` (a keyframe every 20 s, 2 s ticks): the
/// live state's snapshot at each tick, by its instant.
fn record_run(dir: &std::path::Path, ticks: i64) -> Vec<(i64, Vec<u8>)> {
    let ring = RingOpts { segment_bytes: 64 << 10, ..RingOpts::new(dir.to_path_buf(), 1 << 30) };
    let mut a = console(ClusterState::new(Default::default(), Default::default()));
    a.recording = Some(Recording::new(Recorder::start(ring).unwrap(), 20_000));
    let mut sim = Sim::new(SimConfig { nodes: 24, jobs: 300, ..SimConfig::default() });
    a.wall_now = T0;
    for u in sim.initial() {
        a.update(Msg::Update(u));
    }
    let mut out = vec![(T0 * 1000, a.live.snapshot())];
    for tick in 1..=ticks {
        a.wall_now = T0 + 2 * tick;
        a.update(Msg::Update(sim.tick()));
        out.push((a.wall_now * 1000, a.live.snapshot()));
    }
    a.recording.take().unwrap().recorder.flush();
    out
}

fn replaying(dir: &std::path::Path, at_ms: i64) -> App {
    let tape = std::sync::Arc::new(Tape::open(dir).unwrap());
    let c = tape.at(at_ms).unwrap();
    let r = Replay::new(tape, &c);
    let mut a = console(c.state);
    a.readonly = true;
    a.replay = Some(r);
    a
}

#[test]
fn the_time_keys_step_play_and_seek_and_nothing_can_be_sent() {
    use crate::common::key;
    use ratatui::crossterm::event::KeyCode;
    pin_utc();
    let dir = tempfile::tempdir().unwrap();
    let live = record_run(dir.path(), 40);
    // The live state at `ms`, as bytes, with the generation the replayed one has (a seek back
    // makes it newer than anything shown, so that every cached row is rebuilt).
    let state_at = |ms: i64, now: &ClusterState| {
        let bytes = &live.iter().rev().find(|(t, _)| *t <= ms).unwrap().1;
        let mut s = ClusterState::from_snapshot(bytes).unwrap();
        s.generation = now.generation;
        s.snapshot()
    };
    let same = |a: &App, ms: i64| a.live.snapshot() == state_at(ms, &a.live);
    let mut a = replaying(dir.path(), (T0 + 20) * 1000);
    let at = |a: &App| a.replay.as_ref().unwrap().at_ms;
    assert!(same(&a, (T0 + 20) * 1000));
    let screen = render(&mut a, 80, 24);
    assert!(screen.lines().next().unwrap().contains("REPLAY"), "{screen}");
    assert!(screen.contains("REPLAY 08:00:20 UTC x1 ||"), "{screen}");
    assert!(
        render(&mut a, 160, 48).contains("REPLAY 2027-01-15 08:00:20 UTC x1 ||"),
        "the date when there is room"
    );
    // . and , step one recorded update; the state is the live one of that instant.
    typed(&mut a, ".");
    assert_eq!(at(&a), (T0 + 22) * 1000);
    assert!(same(&a, (T0 + 22) * 1000));
    typed(&mut a, ",,,");
    assert_eq!(at(&a), (T0 + 16) * 1000);
    assert!(same(&a, (T0 + 16) * 1000), "back across a keyframe");
    // Playing at x4: four seconds of the recording a second of the console.
    typed(&mut a, "++p");
    assert_eq!(a.replay.as_ref().map(|r| (r.speed, r.playing)), Some((4.0, true)));
    a.update(Msg::Tick);
    assert_eq!(at(&a), (T0 + 20) * 1000);
    assert!(same(&a, (T0 + 20) * 1000));
    typed(&mut a, "p------");
    assert_eq!(a.replay.as_ref().map(|r| (r.speed, r.playing)), Some((0.25, false)));
    // :at goes to an instant (a time of day on the recording's day, or back from it).
    typed(&mut a, ":at 08:00:30\r");
    assert_eq!(at(&a), (T0 + 30) * 1000);
    assert!(same(&a, (T0 + 30) * 1000));
    typed(&mut a, ":at -25s\r");
    assert_eq!(at(&a), (T0 + 5) * 1000);
    assert!(same(&a, (T0 + 5) * 1000));
    typed(&mut a, ":at yesterday\r");
    assert!(render(&mut a, 80, 24).contains("is not an instant"));
    // Past the end: it stops there, saying so.
    typed(&mut a, ":at +10m\r");
    assert_eq!(at(&a), (T0 + 80) * 1000);
    typed(&mut a, ".");
    assert!(render(&mut a, 80, 24).contains("the end of the recording"));
    // Read-only: an action is refused before anything is planned.
    typed(&mut a, ":nodes\r");
    typed(&mut a, "r");
    assert!(a.ui.mode.confirm().is_none());
    assert!(render(&mut a, 80, 24).contains("read-only"), "{}", render(&mut a, 80, 24));
    key(&mut a, KeyCode::Esc);
}

#[test]
fn the_replay_header() {
    pin_utc();
    let dir = tempfile::tempdir().unwrap();
    record_run(dir.path(), 12);
    for (w, h) in [(60u16, 20u16), (80, 24), (160, 48)] {
        let mut a = replaying(dir.path(), (T0 + 10) * 1000);
        insta::assert_snapshot!(format!("replay_overview_{w}x{h}"), render(&mut a, w, h));
    }
}

/// The recording the `recording` fuzz target mutates (tests/fixtures/record/sim.gprec) is what
/// this build's recorder writes for a small simulator run, byte for byte: a change to the
/// model's binary form fails here (bump `record::VERSION`, then write it again with
/// `GPUPLANE_WRITE_FIXTURE=1 cargo test --test hermetic replay::the_fuzz`).
#[test]
fn the_fuzz_targets_recording_is_what_this_recorder_writes() {
    pin_utc();
    let dir = tempfile::tempdir().unwrap();
    let ring = RingOpts::new(dir.path().to_path_buf(), 1 << 30);
    let mut a = console(ClusterState::new(Default::default(), Default::default()));
    a.recording = Some(Recording::new(Recorder::start(ring).unwrap(), 6_000));
    let mut sim = Sim::new(SimConfig { nodes: 4, gpus_per_node: 4, jobs: 24, ..SimConfig::default() });
    a.wall_now = T0;
    for u in sim.initial() {
        a.update(Msg::Update(u));
    }
    for tick in 1..=8 {
        a.wall_now = T0 + 2 * tick;
        a.update(Msg::Update(sim.tick()));
    }
    a.recording.take().unwrap().recorder.flush();
    let files = gpuplane::record::segments(dir.path()).unwrap();
    assert_eq!(files.len(), 1);
    let written = std::fs::read(&files[0]).unwrap();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/record/sim.gprec");
    if std::env::var_os("GPUPLANE_WRITE_FIXTURE").is_some() {
        std::fs::create_dir_all(fixture.parent().unwrap()).unwrap();
        std::fs::write(&fixture, &written).unwrap();
    }
    let committed = std::fs::read(&fixture).unwrap();
    assert!(committed == written, "the recorder writes other bytes than the committed recording");
    let tape = Tape::open(&fixture).unwrap();
    let keys = tape.frames.iter().filter(|f| f.info.kind == gpuplane::record::Kind::Keyframe).count();
    assert!(keys >= 3, "keyframes to seek from: {keys}");
    assert!(written.len() < 64 << 10, "small enough to fuzz: {} bytes", written.len());
}
