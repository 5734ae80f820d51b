//! The flight recorder's files: what the console's state applied, as it applied it, in
//! segments that each begin with a keyframe (the whole state), so a replay seeks to any instant
//! by reading one keyframe and the updates after it.
//!
//! A segment is a header and frames:
//!
//! ```text
//! header  "GPUPREC\0" · version u16 · reserved u16 · created (unix ms) i64      20 bytes
//! frame   body length u32 · CRC-32 of the body u32 · body                      8 + length
//! body    kind u8 (1 keyframe, 2 updates) · wall clock (unix ms) i64 ·
//!         raw length u32 · the payload, zstd-compressed
//! ```
//!
//! Integers are little-endian. A keyframe's payload is the state's snapshot; an updates frame's
//! is the batch of updates the state applied together (borsh). Writing is off the console's
//! task ([`writer::Recorder`]); a crash leaves every complete frame readable
//! ([`reader::Segment::truncated`] says where the incomplete one began). The reader checks every
//! length against a limit before it allocates, and every error names the byte offset and what
//! was expected there.

pub mod reader;
pub mod writer;

/// The first bytes of every segment.
pub const MAGIC: [u8; 8] = *b"GPUPREC\0";
/// The format this build writes, and the newest it reads.
pub const VERSION: u16 = 1;
/// Bytes of the segment header.
pub const HEADER_LEN: u64 = 20;
/// Bytes before a frame's body: its length and checksum.
pub const PREFIX_LEN: u64 = 8;
/// Bytes of a body before its payload: kind, wall clock, raw length.
pub const BODY_HEAD: u32 = 13;
/// The largest body a reader accepts (compressed).
pub const MAX_FRAME: u32 = 256 << 20;
/// The largest payload a reader decompresses.
pub const MAX_RAW: u32 = 1 << 30;
/// A segment's file name: `rec-<unix ms, 16 digits>.gprec` (sorted by name, sorted by time).
pub const EXT: &str = "gprec";

/// What a frame holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The whole state: a replay starts here.
    Keyframe,
    /// A batch of updates the state applied together.
    Updates,
}

impl Kind {
    pub fn byte(self) -> u8 {
        match self {
            Kind::Keyframe => 1,
            Kind::Updates => 2,
        }
    }

    pub fn of(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Keyframe),
            2 => Some(Kind::Updates),
            _ => None,
        }
    }
}

/// Where a frame is and what it says of itself (its payload is read on demand).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    /// Byte offset of the frame (its length field) in the segment.
    pub offset: u64,
    pub kind: Kind,
    /// The console's wall clock when the state applied it (unix ms).
    pub wall_ms: i64,
    /// The body's length.
    pub len: u32,
    /// The payload's length once decompressed.
    pub raw_len: u32,
}

/// A recording that cannot be read (or not past a point): the file, the byte offset and what was
/// expected there.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{path}: byte {offset}: {what}")]
    Bad { path: String, offset: u64, what: String },
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
}

/// A segment's file name for a keyframe at `wall_ms`.
pub fn segment_name(wall_ms: i64) -> String {
    format!("rec-{:016}.{EXT}", wall_ms.max(0))
}

/// The segments in `dir`, oldest first.
pub fn segments(dir: &std::path::Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut v: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == EXT)
                && p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("rec-"))
        })
        .collect();
    v.sort();
    Ok(v)
}

#[cfg(test)]
mod tests;
