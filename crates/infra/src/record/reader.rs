//! Reading a segment: its frames found by their headers (nothing decompressed), a frame's
//! payload read, checked and decompressed on demand.

use super::{
    BODY_HEAD, FrameInfo, HEADER_LEN, Kind, MAGIC, MAX_FRAME, MAX_RAW, PREFIX_LEN, RecordError, VERSION,
};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// One segment file, its frames indexed.
#[derive(Debug)]
pub struct Segment {
    pub path: PathBuf,
    /// When the segment was begun (unix ms).
    pub created_ms: i64,
    pub frames: Vec<FrameInfo>,
    /// Where an incomplete last frame begins (a crash, or a recorder still writing), and why it
    /// is incomplete: everything before it is readable.
    pub truncated: Option<(u64, String)>,
    file: std::sync::Mutex<File>,
}

impl Segment {
    pub fn open(path: &Path) -> Result<Segment, RecordError> {
        let shown = path.display().to_string();
        let io = |error| RecordError::Io { path: shown.clone(), error };
        let bad = |offset, what: String| RecordError::Bad { path: shown.clone(), offset, what };
        let mut file = File::open(path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        let mut head = [0u8; HEADER_LEN as usize];
        if size < HEADER_LEN {
            return Err(bad(0, format!("a {HEADER_LEN}-byte recording header (the file has {size} bytes)")));
        }
        file.read_exact(&mut head).map_err(io)?;
        if head[..8] != MAGIC {
            return Err(bad(
                0,
                "the recording header \"GPUPREC\\0\" (this is not a gpuplane recording)".into(),
            ));
        }
        let version = u16::from_le_bytes([head[8], head[9]]);
        if version > VERSION {
            return Err(bad(
                8,
                format!(
                    "format version {VERSION} or older: this recording is version {version}, from a newer \
                     gpuplane (replay it with that version)"
                ),
            ));
        }
        if version == 0 {
            return Err(bad(8, "a format version from 1 (it says 0)".into()));
        }
        let created_ms = i64::from_le_bytes(head[12..20].try_into().unwrap_or_default());
        let mut frames = Vec::new();
        let mut truncated = None;
        let mut at = HEADER_LEN;
        let mut prefix = [0u8; PREFIX_LEN as usize + BODY_HEAD as usize];
        while at < size {
            let left = size - at;
            if left < prefix.len() as u64 {
                truncated = Some((at, format!("a frame header of {} bytes; {left} remain", prefix.len())));
                break;
            }
            file.seek(SeekFrom::Start(at)).map_err(io)?;
            file.read_exact(&mut prefix).map_err(io)?;
            let len = u32::from_le_bytes(prefix[0..4].try_into().unwrap_or_default());
            if !(BODY_HEAD..=MAX_FRAME).contains(&len) {
                return Err(bad(
                    at,
                    format!("a frame length from {BODY_HEAD} to {MAX_FRAME} bytes (it says {len})"),
                ));
            }
            let kind = Kind::of(prefix[8]).ok_or_else(|| {
                bad(at + 8, format!("frame kind 1 (keyframe) or 2 (updates), not {}", prefix[8]))
            })?;
            let wall_ms = i64::from_le_bytes(prefix[9..17].try_into().unwrap_or_default());
            let raw_len = u32::from_le_bytes(prefix[17..21].try_into().unwrap_or_default());
            if raw_len > MAX_RAW {
                return Err(bad(
                    at + 17,
                    format!("a payload of at most {MAX_RAW} bytes (it says {raw_len})"),
                ));
            }
            if frames.is_empty() && kind != Kind::Keyframe {
                return Err(bad(at, "a keyframe first (a segment begins with the whole state)".into()));
            }
            if PREFIX_LEN + u64::from(len) > left {
                truncated =
                    Some((at, format!("a frame of {} bytes; {left} remain", PREFIX_LEN + u64::from(len))));
                break;
            }
            frames.push(FrameInfo { offset: at, kind, wall_ms, len, raw_len });
            at += PREFIX_LEN + u64::from(len);
        }
        Ok(Segment {
            path: path.to_path_buf(),
            created_ms,
            frames,
            truncated,
            file: std::sync::Mutex::new(file),
        })
    }

    /// A frame's payload: its checksum checked, decompressed to exactly the length it says.
    pub fn payload(&self, f: &FrameInfo) -> Result<Vec<u8>, RecordError> {
        let shown = self.path.display().to_string();
        let io = |error| RecordError::Io { path: shown.clone(), error };
        let bad = |offset, what: String| RecordError::Bad { path: shown.clone(), offset, what };
        let mut body = vec![0u8; f.len as usize];
        let crc = {
            let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
            let mut crc = [0u8; 4];
            file.seek(SeekFrom::Start(f.offset + 4)).map_err(io)?;
            file.read_exact(&mut crc).map_err(io)?;
            file.read_exact(&mut body).map_err(io)?;
            u32::from_le_bytes(crc)
        };
        let actual = crc32fast::hash(&body);
        if actual != crc {
            return Err(bad(
                f.offset + 4,
                format!("the frame's CRC-32 {crc:08x} (its {} bytes hash to {actual:08x}: corrupted)", f.len),
            ));
        }
        let packed = &body[BODY_HEAD as usize..];
        let raw = zstd::bulk::decompress(packed, f.raw_len as usize).map_err(|e| {
            bad(
                f.offset + PREFIX_LEN + u64::from(BODY_HEAD),
                format!("a zstd payload of {} bytes: {e}", f.raw_len),
            )
        })?;
        if raw.len() != f.raw_len as usize {
            return Err(bad(
                f.offset + PREFIX_LEN + u64::from(BODY_HEAD),
                format!("a payload of {} bytes (it decompresses to {})", f.raw_len, raw.len()),
            ));
        }
        Ok(raw)
    }
}

/// The frame's header and body as the writer lays them out (shared with the tests and the fuzz
/// target's corpus).
pub fn frame_bytes(kind: Kind, wall_ms: i64, raw: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    let packed = zstd::bulk::compress(raw, level)?;
    let len = BODY_HEAD as usize + packed.len();
    let mut body = Vec::with_capacity(len);
    body.push(kind.byte());
    body.extend_from_slice(&wall_ms.to_le_bytes());
    body.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    body.extend_from_slice(&packed);
    let mut out = Vec::with_capacity(PREFIX_LEN as usize + len);
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// A segment's header, written at `created_ms`.
pub fn header_bytes(created_ms: i64) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_LEN as usize);
    h.extend_from_slice(&MAGIC);
    h.extend_from_slice(&VERSION.to_le_bytes());
    h.extend_from_slice(&0u16.to_le_bytes());
    h.extend_from_slice(&created_ms.to_le_bytes());
    h
}
