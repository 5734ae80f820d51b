//! The recorder: frames handed over by the console (already encoded: the state's snapshot, a
//! batch of updates) compressed and written by a thread of its own, into a ring of segments
//! that is kept under a size and an age.

use super::reader::{frame_bytes, header_bytes};
use super::{Kind, segment_name, segments};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};

/// Where the ring is and how large it may grow.
#[derive(Debug, Clone, PartialEq)]
pub struct RingOpts {
    pub dir: PathBuf,
    /// The ring's size at most: the oldest segments go first.
    pub max_bytes: u64,
    /// Segments older than this go (seconds).
    pub max_age_s: i64,
    /// A segment is closed at the next keyframe once it is this large…
    pub segment_bytes: u64,
    /// …or this old (seconds).
    pub segment_age_s: i64,
    /// zstd's level.
    pub level: i32,
}

impl RingOpts {
    /// The ring in `dir`: 24 hours in at most `max_bytes`, segments of an hour or a sixteenth.
    pub fn new(dir: PathBuf, max_bytes: u64) -> RingOpts {
        RingOpts {
            dir,
            max_bytes,
            max_age_s: 24 * 3600,
            segment_bytes: (max_bytes / 16).max(1 << 20),
            segment_age_s: 3600,
            level: 3,
        }
    }
}

/// How the recorder is doing (the Sources view lists it beside the stores).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Status {
    pub frames: u64,
    /// Bytes written (compressed, with headers).
    pub bytes: u64,
    /// Bytes handed over before compression.
    pub raw_bytes: u64,
    /// Frames not recorded because the writer fell behind (the next keyframe resumes it).
    pub dropped: u64,
    /// The segment being written.
    pub segment: Option<PathBuf>,
    /// The last failure, until a write succeeds again.
    pub error: Option<String>,
}

enum Msg {
    Frame { kind: Kind, wall_ms: i64, raw: Vec<u8> },
    Flush(SyncSender<()>),
}

/// The console's handle on the writer thread.
pub struct Recorder {
    tx: Option<SyncSender<Msg>>,
    thread: Option<std::thread::JoinHandle<()>>,
    status: Arc<Mutex<Status>>,
    /// A frame was dropped (or none has been sent): updates wait for a keyframe.
    gap: AtomicBool,
}

/// Frames queued for the writer at most (a keyframe of a large cluster is tens of MB).
const QUEUE: usize = 64;

impl Recorder {
    /// Starts the writer thread on the ring in `opts.dir` (created 0700; segments 0600).
    pub fn start(opts: RingOpts) -> std::io::Result<Recorder> {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&opts.dir)?;
        // A dir that was there already is made private too (recordings show the whole fleet).
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&opts.dir, std::fs::Permissions::from_mode(0o700))?;
        let (tx, rx) = sync_channel::<Msg>(QUEUE);
        let status = Arc::new(Mutex::new(Status::default()));
        let st = status.clone();
        let thread = std::thread::Builder::new().name("recorder".into()).spawn(move || {
            let mut w = Writer { opts, file: None, seg_bytes: 0, seg_start: 0 };
            for m in rx {
                match m {
                    Msg::Frame { kind, wall_ms, raw } => {
                        let res = w.write(kind, wall_ms, &raw);
                        let mut s = st.lock().unwrap_or_else(|e| e.into_inner());
                        match res {
                            Ok(n) => {
                                s.frames += 1;
                                s.bytes += n;
                                s.raw_bytes += raw.len() as u64;
                                s.error = None;
                                s.segment = w.current();
                            }
                            Err(e) => s.error = Some(e),
                        }
                    }
                    Msg::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        })?;
        Ok(Recorder { tx: Some(tx), thread: Some(thread), status, gap: AtomicBool::new(true) })
    }

    /// Whether the next frame must be a keyframe (at the start, and after a dropped frame).
    pub fn wants_keyframe(&self) -> bool {
        self.gap.load(Ordering::Relaxed)
    }

    /// Hands over the state's snapshot; `false` when the writer is behind (try again later).
    pub fn keyframe(&self, wall_ms: i64, raw: Vec<u8>) -> bool {
        let ok = self.send(Kind::Keyframe, wall_ms, raw);
        if ok {
            self.gap.store(false, Ordering::Relaxed);
        }
        ok
    }

    /// Hands over a batch of updates (encoded). After a gap nothing is sent until a keyframe.
    pub fn updates(&self, wall_ms: i64, raw: Vec<u8>) {
        if self.wants_keyframe() {
            return;
        }
        if !self.send(Kind::Updates, wall_ms, raw) {
            self.gap.store(true, Ordering::Relaxed);
        }
    }

    fn send(&self, kind: Kind, wall_ms: i64, raw: Vec<u8>) -> bool {
        let Some(tx) = &self.tx else { return false };
        match tx.try_send(Msg::Frame { kind, wall_ms, raw }) {
            Ok(()) => true,
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.status.lock().unwrap_or_else(|e| e.into_inner()).dropped += 1;
                false
            }
        }
    }

    pub fn status(&self) -> Status {
        self.status.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until everything handed over so far is written.
    pub fn flush(&self) {
        let Some(tx) = &self.tx else { return };
        let (done, wait) = sync_channel(1);
        if tx.send(Msg::Flush(done)).is_ok() {
            let _ = wait.recv();
        }
    }
}

impl Drop for Recorder {
    /// Writes what was handed over, then stops the thread.
    fn drop(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Writer {
    opts: RingOpts,
    file: Option<(PathBuf, File)>,
    seg_bytes: u64,
    seg_start: i64,
}

impl Writer {
    fn current(&self) -> Option<PathBuf> {
        self.file.as_ref().map(|(p, _)| p.clone())
    }

    /// Writes one frame: a keyframe may begin a segment (the first, or when this one is full or
    /// old); updates go to the open segment only. Returns the bytes written.
    fn write(&mut self, kind: Kind, wall_ms: i64, raw: &[u8]) -> Result<u64, String> {
        let full = self.seg_bytes >= self.opts.segment_bytes
            || wall_ms.saturating_sub(self.seg_start) >= self.opts.segment_age_s.saturating_mul(1000);
        if kind == Kind::Keyframe && (self.file.is_none() || full) {
            self.rotate(wall_ms)?;
        }
        let Some((path, file)) = self.file.as_mut() else {
            return Err("no segment is open (the first frame was not a keyframe)".into());
        };
        let frame = frame_bytes(kind, wall_ms, raw, self.opts.level)
            .map_err(|e| format!("{}: compressing a frame: {e}", path.display()))?;
        // One write per frame: a crash leaves the frames before it whole.
        file.write_all(&frame).map_err(|e| format!("{}: {e}", path.display()))?;
        self.seg_bytes += frame.len() as u64;
        Ok(frame.len() as u64)
    }

    fn rotate(&mut self, wall_ms: i64) -> Result<(), String> {
        let mut path = self.opts.dir.join(segment_name(wall_ms));
        let mut n = 0;
        while path.exists() {
            n += 1;
            path = self.opts.dir.join(segment_name(wall_ms + n));
        }
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let head = header_bytes(wall_ms);
        f.write_all(&head).map_err(|e| format!("{}: {e}", path.display()))?;
        self.file = Some((path, f));
        self.seg_bytes = head.len() as u64;
        self.seg_start = wall_ms;
        self.prune(wall_ms);
        Ok(())
    }

    /// Removes the oldest segments (never the open one) while the ring is over its size, or
    /// while the segment after one began before the age limit.
    fn prune(&self, now_ms: i64) {
        let Ok(all) = segments(&self.opts.dir) else { return };
        let open = self.current();
        let sizes: Vec<u64> = all.iter().map(|p| std::fs::metadata(p).map_or(0, |m| m.len())).collect();
        let mut total: u64 = sizes.iter().sum();
        let oldest_kept = now_ms.saturating_sub(self.opts.max_age_s.saturating_mul(1000));
        for (i, p) in all.iter().enumerate() {
            if Some(p) == open.as_ref() {
                break;
            }
            let next_start = all.get(i + 1).and_then(|n| start_of(n)).unwrap_or(i64::MAX);
            if total <= self.opts.max_bytes && next_start > oldest_kept {
                break;
            }
            if std::fs::remove_file(p).is_ok() {
                total = total.saturating_sub(sizes[i]);
            }
        }
    }
}

/// The start a segment's name gives (unix ms).
fn start_of(p: &std::path::Path) -> Option<i64> {
    p.file_stem()?.to_str()?.strip_prefix("rec-")?.parse().ok()
}
