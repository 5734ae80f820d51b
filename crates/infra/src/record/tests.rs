use super::reader::{Segment, frame_bytes, header_bytes};
use super::writer::{Recorder, RingOpts};
use super::*;
use std::os::unix::fs::PermissionsExt;

fn ring(dir: &std::path::Path) -> RingOpts {
    RingOpts::new(dir.to_path_buf(), 64 << 20)
}

fn bad(e: RecordError) -> (u64, String) {
    match e {
        RecordError::Bad { offset, what, .. } => (offset, what),
        RecordError::Io { error, .. } => panic!("io: {error}"),
    }
}

#[test]
fn frames_round_trip_in_order_and_the_segment_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let r = Recorder::start(ring(dir.path())).unwrap();
    assert!(r.wants_keyframe());
    r.updates(5, b"dropped: no keyframe yet".to_vec());
    assert!(r.keyframe(10, b"state".repeat(1000)));
    r.updates(20, b"batch one".to_vec());
    r.updates(30, b"batch two".to_vec());
    r.flush();
    let st = r.status();
    assert_eq!((st.frames, st.error.clone()), (3, None));
    drop(r);
    let files = segments(dir.path()).unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::metadata(dir.path()).unwrap().permissions().mode() & 0o077,
        0,
        "the ring's dir is private"
    );
    let s = Segment::open(&files[0]).unwrap();
    assert_eq!(s.truncated, None);
    let got: Vec<(Kind, i64, Vec<u8>)> =
        s.frames.iter().map(|f| (f.kind, f.wall_ms, s.payload(f).unwrap())).collect();
    assert_eq!(
        got,
        vec![
            (Kind::Keyframe, 10, b"state".repeat(1000)),
            (Kind::Updates, 20, b"batch one".to_vec()),
            (Kind::Updates, 30, b"batch two".to_vec()),
        ]
    );
    assert!(s.frames[0].len < 200, "compressed: {}", s.frames[0].len);
}

fn file(frames: &[Vec<u8>]) -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(segment_name(1));
    let mut bytes = header_bytes(1);
    for f in frames {
        bytes.extend_from_slice(f);
    }
    std::fs::write(&p, &bytes).unwrap();
    (dir, p, bytes)
}

#[test]
fn a_crash_mid_frame_leaves_every_complete_frame_readable() {
    let k = frame_bytes(Kind::Keyframe, 1, b"state", 3).unwrap();
    let u = frame_bytes(Kind::Updates, 2, b"updates", 3).unwrap();
    let (_d, p, bytes) = file(&[k.clone(), u.clone()]);
    for cut in [1, 5, 12, u.len() - 1] {
        std::fs::write(&p, &bytes[..bytes.len() - cut]).unwrap();
        let s = Segment::open(&p).unwrap();
        assert_eq!(s.frames.len(), 1, "cut {cut}");
        let (at, why) = s.truncated.clone().unwrap();
        assert_eq!(at, HEADER_LEN + k.len() as u64, "{why}");
        assert_eq!(s.payload(&s.frames[0]).unwrap(), b"state");
    }
}

#[test]
fn hostile_files_are_refused_naming_the_offset_and_what_was_expected() {
    let k = frame_bytes(Kind::Keyframe, 1, b"state", 3).unwrap();
    let u = frame_bytes(Kind::Updates, 2, b"updates", 3).unwrap();
    let second = HEADER_LEN + k.len() as u64;
    // Not a recording.
    let (_d, p, mut bytes) = file(&[k.clone(), u.clone()]);
    std::fs::write(&p, b"{\"not\": \"a recording\"}").unwrap();
    assert!(bad(Segment::open(&p).unwrap_err()).1.contains("not a gpuplane recording"));
    std::fs::write(&p, b"GPU").unwrap();
    assert!(bad(Segment::open(&p).unwrap_err()).1.contains("20-byte recording header"));
    // From a newer gpuplane.
    let mut newer = bytes.clone();
    newer[8..10].copy_from_slice(&(VERSION + 1).to_le_bytes());
    std::fs::write(&p, &newer).unwrap();
    let (at, what) = bad(Segment::open(&p).unwrap_err());
    assert_eq!(at, 8);
    assert!(what.contains("from a newer gpuplane"), "{what}");
    // A length past the limit (it would allocate that much).
    let mut huge = bytes.clone();
    huge[second as usize..second as usize + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&p, &huge).unwrap();
    let (at, what) = bad(Segment::open(&p).unwrap_err());
    assert_eq!(at, second);
    assert!(what.contains(&format!("to {MAX_FRAME} bytes (it says {})", u32::MAX)), "{what}");
    // An unknown frame kind.
    let mut kind = bytes.clone();
    kind[second as usize + 8] = 9;
    std::fs::write(&p, &kind).unwrap();
    assert_eq!(
        bad(Segment::open(&p).unwrap_err()),
        (second + 8, "frame kind 1 (keyframe) or 2 (updates), not 9".into())
    );
    // A payload that claims more than a reader decompresses.
    let mut raw = bytes.clone();
    raw[second as usize + 17..second as usize + 21].copy_from_slice(&(MAX_RAW + 1).to_le_bytes());
    std::fs::write(&p, &raw).unwrap();
    assert_eq!(bad(Segment::open(&p).unwrap_err()).0, second + 17);
    // Updates before any keyframe.
    let (_d2, p2, _) = file(std::slice::from_ref(&u));
    assert!(bad(Segment::open(&p2).unwrap_err()).1.contains("a keyframe first"));
    // A flipped bit in a payload: found when the frame is read, the others still read.
    let last = bytes.len() - 3;
    bytes[last] ^= 0x40;
    std::fs::write(&p, &bytes).unwrap();
    let s = Segment::open(&p).unwrap();
    assert_eq!(s.payload(&s.frames[0]).unwrap(), b"state");
    let (at, what) = bad(s.payload(&s.frames[1]).unwrap_err());
    assert_eq!(at, second + 4);
    assert!(what.contains("CRC-32") && what.contains("corrupted"), "{what}");
}

#[test]
fn a_payload_larger_than_it_says_is_refused() {
    // A well-formed frame whose raw length understates the payload (a zip bomb's shape).
    let mut f = frame_bytes(Kind::Keyframe, 1, &[7u8; 100_000], 3).unwrap();
    f[17..21].copy_from_slice(&10u32.to_le_bytes());
    let crc = crc32fast::hash(&f[8..]);
    f[4..8].copy_from_slice(&crc.to_le_bytes());
    let (_d, p, _) = file(&[f]);
    let s = Segment::open(&p).unwrap();
    let (at, what) = bad(s.payload(&s.frames[0]).unwrap_err());
    assert_eq!(at, HEADER_LEN + PREFIX_LEN + u64::from(BODY_HEAD));
    assert!(what.contains("zstd payload of 10 bytes"), "{what}");
}

#[test]
fn the_ring_keeps_under_its_size_and_age_and_rotates_only_at_keyframes() {
    let dir = tempfile::tempdir().unwrap();
    let opts = RingOpts {
        max_bytes: 3 * 4096,
        segment_bytes: 4096,
        segment_age_s: 3600,
        max_age_s: 10 * 3600,
        level: 1,
        ..ring(dir.path())
    };
    let r = Recorder::start(opts).unwrap();
    // Incompressible payloads: each segment is a keyframe and a few updates of 1 kB.
    let noise = |seed: u64| -> Vec<u8> {
        let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        (0..1024)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    };
    for seg in 0..8i64 {
        let t = seg * 60_000;
        assert!(r.keyframe(t, noise(seg as u64)));
        for i in 1..5 {
            r.updates(t + i, noise((seg * 10 + i) as u64));
        }
    }
    r.flush();
    drop(r);
    let files = segments(dir.path()).unwrap();
    let total: u64 = files.iter().map(|p| std::fs::metadata(p).unwrap().len()).sum();
    assert!(total <= 3 * 4096 + 5 * 1100, "{total} bytes in {files:?}");
    assert!(files.len() < 8 && files.len() >= 2, "{files:?}");
    // The newest segment is the last keyframe's, and each segment begins with a keyframe.
    assert_eq!(files.last().unwrap().file_name().unwrap().to_str().unwrap(), segment_name(7 * 60_000));
    for f in &files {
        assert_eq!(Segment::open(f).unwrap().frames[0].kind, Kind::Keyframe);
    }
    // By age: a segment whose successor began more than max_age ago goes.
    let dir = tempfile::tempdir().unwrap();
    let r = Recorder::start(RingOpts { max_age_s: 3600, segment_age_s: 60, ..ring(dir.path()) }).unwrap();
    for h in 0..5i64 {
        r.keyframe(h * 3_600_000, b"k".to_vec());
    }
    r.flush();
    drop(r);
    let names: Vec<String> = segments(dir.path())
        .unwrap()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec![segment_name(3 * 3_600_000), segment_name(4 * 3_600_000)]);
}
