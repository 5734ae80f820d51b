//! The job list parsed while it streams in: the [`Splitter`] cuts the body into jobs and, for
//! each, either picks out the values of the members the job struct reads (see
//! [`scan`](super::scan)) or, while the parser threads are idle, only finds the job's end and
//! leaves the picking to them ([`Policy`]). Batches of picked values or job texts go to parser
//! threads (one per core, at most [`MAX_WORKERS`]), and each job becomes its compact model record
//! there. Memory is bounded by the records and the batches in flight, not by the size of the
//! JSON; the body's chunks are dropped as soon as their jobs are parsed. Job order is kept.

use super::scan::{self, Member, Walk, Wanted};
use super::split::{Elem, Splitter};
use super::wire::Num;
use super::{JobsOut, Parsed};
use bytes::Bytes;
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};

/// Parser threads at most.
pub const MAX_WORKERS: usize = 4;
/// A batch goes to a parser thread once it holds this many bytes of job text (picked jobs count
/// their kept values and a sixteenth of their text)…
const BATCH_BYTES: usize = 256 << 10;
/// …or, further into a long list, a 64th of the bytes seen so far, up to this: fewer, larger
/// batches cost less to hand over and to gather (measured: about 10 % less CPU on 100,000 jobs),
/// while a short list still reaches every parser thread early and batches in flight stay small.
const MAX_BATCH_BYTES: usize = 4 << 20;

/// A piece of the body that job texts can be cut from without copying.
pub trait Chunk: AsRef<[u8]> + Send {
    fn part(&self, r: Range<usize>) -> Self;
}

impl Chunk for Bytes {
    fn part(&self, r: Range<usize>) -> Bytes {
        self.slice(r)
    }
}

impl Chunk for &[u8] {
    fn part(&self, r: Range<usize>) -> Self {
        &self[r]
    }
}

/// One job: its JSON text, or its wanted members (a range of the batch's `members`).
enum Piece<C> {
    Part(C),
    Own(Vec<u8>),
    Picked(Range<usize>),
}

/// A version family's reader of one job element: adds the job (if it has an id) to `out`.
#[derive(Clone, Copy)]
pub struct JobReader {
    /// The job struct's fields (see [`pick::fields_of`](super::pick::fields_of)); `None`: no
    /// job is picked in the splitter, each goes whole to `whole`.
    pub fields: fn() -> Option<&'static [&'static str]>,
    /// From the job's JSON text.
    pub whole: fn(&[u8], &mut JobsOut) -> serde_json::Result<()>,
    /// From its wanted members, found by [`scan::walk`](super::scan::walk) (values are ranges of
    /// the buffer).
    pub picked: fn(&[u8], &[Member], &mut JobsOut) -> serde_json::Result<()>,
}

/// Jobs for one parser thread.
struct Batch<C> {
    /// Batch number, number of the batch's first job.
    idx: usize,
    first: usize,
    pieces: Vec<Piece<C>>,
    /// The picked jobs' members, and their values' bytes.
    members: Vec<Member>,
    values: Vec<u8>,
}

impl<C> Batch<C> {
    fn new(idx: usize, first: usize) -> Batch<C> {
        Batch { idx, first, pieces: Vec::new(), members: Vec::new(), values: Vec::new() }
    }
}

/// What the body holds besides the jobs (`jobs` is the emptied list).
#[derive(Deserialize, Default)]
#[serde(default)]
struct Envelope {
    jobs: Vec<IgnoredAny>,
    last_update: Num,
}

/// Who walks a job for its wanted members: the result is the same, only the work moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// The splitter while a batch waits for a parser thread, else the parser thread: every core
    /// stays busy whichever side is slower.
    Balanced,
    /// Always the splitter.
    Splitter,
    /// Always the parser thread.
    Readers,
}

/// Parses a `jobs` body arriving as `chunks`. The error is a message for
/// [`SlurmError::Malformed`](super::SlurmError::Malformed).
pub fn jobs<C: Chunk>(
    read: JobReader,
    chunks: impl IntoIterator<Item = C>,
) -> Result<Parsed<JobsOut>, String> {
    jobs_with(read, chunks, Policy::Balanced)
}

/// [`jobs`] with the walking done as `policy` says (for tests and the fuzz target: the result is
/// the same under every policy).
#[doc(hidden)]
pub fn jobs_with<C: Chunk>(
    read: JobReader,
    chunks: impl IntoIterator<Item = C>,
    policy: Policy,
) -> Result<Parsed<JobsOut>, String> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_WORKERS);
    let (tx, rx) = mpsc::sync_channel::<Batch<C>>(workers * 2);
    let rx = Mutex::new(rx);
    let failed = AtomicBool::new(false);
    let queued = AtomicUsize::new(0);
    let wanted = (read.fields)().map(Wanted::new);
    let shared = Shared { read, wanted: wanted.as_ref(), failed: &failed, queued: &queued, policy };
    let (split, done) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers).map(|_| s.spawn(|| work(shared, &rx))).collect();
        let split = split_into_batches(chunks, shared, &tx);
        drop(tx);
        let done: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        (split, done)
    });
    let mut parts = Vec::new();
    for d in done {
        parts.extend(d.map_err(|_| "a parser thread failed".to_string())?);
    }
    parts.sort_by_key(|(idx, _)| *idx);
    let mut outs = Vec::with_capacity(parts.len());
    for (_, p) in parts {
        outs.push(p?);
    }
    let envelope = split?;
    let env: Envelope = serde_json::from_slice(&envelope).map_err(|e| e.to_string())?;
    if !env.jobs.is_empty() {
        return Err("a jobs list written in a form gpuplane does not read".to_string());
    }
    let total = outs.iter().map(|o| o.jobs.len()).sum();
    let mut out = JobsOut { jobs: Vec::with_capacity(total), ..Default::default() };
    for o in outs {
        out.jobs.extend(o.jobs);
        out.allocs.extend(o.allocs);
        out.qos.extend(o.qos);
    }
    Ok(Parsed { data: out, last_update: env.last_update.pos() })
}

/// What the splitter and the parser threads share.
#[derive(Clone, Copy)]
struct Shared<'a> {
    read: JobReader,
    wanted: Option<&'a Wanted>,
    /// A parser thread has failed: stop.
    failed: &'a AtomicBool,
    /// Batches sent and not yet taken by a parser thread.
    queued: &'a AtomicUsize,
    policy: Policy,
}

/// Feeds the splitter and sends batches of job texts; the envelope at the end. Stops early
/// (with an empty envelope) once a parser thread has failed.
///
/// With [`Policy::Balanced`] the splitter walks a job for its wanted members itself only while a
/// batch is waiting for a parser thread; otherwise it finds just the job's end (64 bytes at a
/// time, cheaper) and the parser thread walks it. Either way the job reads the same (see
/// [`read_text`]).
fn split_into_batches<C: Chunk>(
    chunks: impl IntoIterator<Item = C>,
    shared: Shared<'_>,
    tx: &mpsc::SyncSender<Batch<C>>,
) -> Result<Vec<u8>, String> {
    let mut splitter = shared.wanted.cloned().map_or_else(Splitter::new, Splitter::picking);
    let (mut batch, mut bytes, mut seen) = (Batch::new(0, 0), 0usize, 0usize);
    let walk_here = || match shared.policy {
        Policy::Balanced => shared.queued.load(Ordering::Relaxed) > 0,
        Policy::Splitter => true,
        Policy::Readers => false,
    };
    for chunk in chunks {
        if shared.failed.load(Ordering::Relaxed) {
            return Ok(Vec::new());
        }
        let raw = chunk.as_ref();
        seen += raw.len();
        splitter
            .push_with(raw, walk_here, |e| {
                let p = match e {
                    Elem::In(r) => {
                        bytes += r.len();
                        Piece::Part(chunk.part(r))
                    }
                    Elem::Carried(v) => {
                        bytes += v.len();
                        Piece::Own(v)
                    }
                    Elem::Picked(r, found) => {
                        // Only the wanted values are kept (copied: the chunk can go at once);
                        // the parser thread's work is in proportion to them.
                        let from = batch.members.len();
                        let before = batch.values.len();
                        for m in found {
                            let at = batch.values.len();
                            batch.values.extend_from_slice(&raw[m.value.clone()]);
                            batch.members.push(Member { field: m.field, value: at..batch.values.len() });
                        }
                        bytes += (batch.values.len() - before) + r.len() / 16;
                        Piece::Picked(from..batch.members.len())
                    }
                };
                batch.pieces.push(p);
                if bytes >= (seen / 64).clamp(BATCH_BYTES, MAX_BATCH_BYTES) {
                    let next = Batch::new(batch.idx + 1, batch.first + batch.pieces.len());
                    shared.queued.fetch_add(1, Ordering::Relaxed);
                    // A send fails only when every parser thread has stopped (after a failure).
                    let _ = tx.send(std::mem::replace(&mut batch, next));
                    bytes = 0;
                }
            })
            .map_err(|e| e.to_string())?;
    }
    if !batch.pieces.is_empty() {
        shared.queued.fetch_add(1, Ordering::Relaxed);
        let _ = tx.send(batch);
    }
    splitter.finish().map_err(|e| e.to_string())
}

/// One job from its text: walked for the wanted members and read from them when the walk
/// finds a well-formed object (as the splitter does), else read whole, which names the fault.
fn read_text(
    shared: Shared<'_>,
    text: &[u8],
    scratch: &mut Vec<Member>,
    out: &mut JobsOut,
) -> serde_json::Result<()> {
    if let Some(w) = shared.wanted
        && scan::walk(text, 0, w, scratch) == Walk::Done(text.len())
    {
        return (shared.read.picked)(text, scratch, out);
    }
    (shared.read.whole)(text, out)
}

/// A parser thread: batches in, model records out, tagged with the batch number.
fn work<C: AsRef<[u8]>>(
    shared: Shared<'_>,
    rx: &Mutex<mpsc::Receiver<Batch<C>>>,
) -> Vec<(usize, Result<JobsOut, String>)> {
    let mut done = Vec::new();
    let mut scratch = Vec::new();
    loop {
        let next = match rx.lock() {
            Ok(r) => r.recv(),
            Err(_) => break,
        };
        let Ok(batch) = next else { break };
        shared.queued.fetch_sub(1, Ordering::Relaxed);
        let (idx, first) = (batch.idx, batch.first);
        let mut out = JobsOut::default();
        out.jobs.reserve(batch.pieces.len());
        let mut result = Ok(());
        for (k, p) in batch.pieces.iter().enumerate() {
            let r = match p {
                Piece::Part(c) => read_text(shared, c.as_ref(), &mut scratch, &mut out),
                Piece::Own(v) => read_text(shared, v, &mut scratch, &mut out),
                Piece::Picked(m) => match batch.members.get(m.clone()) {
                    Some(found) => (shared.read.picked)(&batch.values, found, &mut out),
                    None => Err(serde::de::Error::custom("picked members out of range")),
                },
            };
            if let Err(e) = r {
                result = Err(format!("job {} of the list: {e}", first + k + 1));
                shared.failed.store(true, Ordering::Relaxed);
                break;
            }
        }
        drop(batch);
        let stop = result.is_err();
        done.push((idx, result.map(|()| out)));
        if stop {
            break;
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::slurm::map::JobIn;
    use crate::model::Text;

    #[derive(Deserialize)]
    struct J {
        job_id: u64,
    }

    fn add(j: J, out: &mut JobsOut) {
        let job = JobIn { id: j.job_id, state: vec!["PENDING".into()], ..Default::default() };
        out.jobs.push(crate::backend::slurm::map::job(job, &mut out.allocs));
        out.qos.push(Text::from(format!("q{}", j.job_id)));
    }

    fn whole(elem: &[u8], out: &mut JobsOut) -> serde_json::Result<()> {
        add(serde_json::from_slice(elem)?, out);
        Ok(())
    }

    fn picked(values: &[u8], members: &[Member], out: &mut JobsOut) -> serde_json::Result<()> {
        add(crate::backend::slurm::pick::from_members(values, members)?, out);
        Ok(())
    }

    /// Readers that record the `job_id` only: one that has the splitter pick it, one that
    /// reads each job whole.
    const IDS: JobReader = JobReader { fields: crate::backend::slurm::pick::fields_of::<J>, whole, picked };
    const WHOLE: JobReader = JobReader { fields: || None, whole, picked };

    fn body(n: usize) -> String {
        let jobs: Vec<String> =
            (1..=n).map(|i| format!(r#"{{"job_id":{i},"name":"j\"{{[{i}","x":[{{"y":"\\"}}]}}"#)).collect();
        format!(
            r#"{{"meta":{{"jobs":7}},"jobs":[{}],"last_update":{{"set":true,"number":99}}}}"#,
            jobs.join(",")
        )
    }

    fn chunked(b: &str, size: usize) -> Vec<Bytes> {
        b.as_bytes().chunks(size).map(Bytes::copy_from_slice).collect()
    }

    const POLICIES: [Policy; 3] = [Policy::Balanced, Policy::Splitter, Policy::Readers];

    #[test]
    fn many_jobs_in_order_whatever_the_chunks() {
        let b = body(3000);
        let cases = [1, 7, 4096, b.len()].into_iter().flat_map(|n| [(n, IDS), (n, WHOLE)]);
        for ((size, read), policy) in cases.flat_map(|c| POLICIES.map(|p| (c, p))) {
            let p = jobs_with(read, chunked(&b, size), policy).unwrap();
            let got: Vec<u64> = p.data.jobs.iter().map(|j| j.id).collect();
            assert_eq!(got, (1..=3000).collect::<Vec<u64>>(), "chunks of {size}");
            assert_eq!(p.data.qos[2999], "q3000");
            assert_eq!(p.last_update, Some(99));
        }
        let p = jobs(IDS, [b.as_bytes()]).unwrap();
        assert_eq!(p.data.jobs.len(), 3000);
    }

    /// A list long enough (~41 MB) for batches to grow past `BATCH_BYTES` (to a 64th of the bytes
    /// seen): every job, in order, under every policy.
    #[test]
    fn a_long_list_keeps_its_order_as_batches_grow() {
        let pad = "p".repeat(4000);
        let n = 10_000u64;
        let jobs: Vec<String> = (1..=n).map(|i| format!(r#"{{"pad":"{pad}","job_id":{i}}}"#)).collect();
        let b = format!(r#"{{"jobs":[{}],"last_update":{{"set":true,"number":5}}}}"#, jobs.join(","));
        assert!(b.len() / 64 > 2 * BATCH_BYTES, "{} bytes", b.len());
        for policy in POLICIES {
            let p = jobs_with(IDS, chunked(&b, 64 << 10), policy).unwrap();
            let got: Vec<u64> = p.data.jobs.iter().map(|j| j.id).collect();
            assert_eq!(got, (1..=n).collect::<Vec<u64>>(), "{policy:?}");
            assert_eq!(p.last_update, Some(5));
        }
    }

    #[test]
    fn a_bad_job_names_its_place_and_fails_the_list() {
        let b = body(2000).replace(r#"{"job_id":1500,"#, r#"{"job_id":"x","#);
        for read in [IDS, WHOLE] {
            for size in [1000, b.len()] {
                for policy in POLICIES {
                    let e = jobs_with(read, chunked(&b, size), policy).unwrap_err();
                    assert!(e.starts_with("job 1500 of the list: "), "{e}");
                }
            }
        }
        // Malformed JSON in a job that would be picked: the whole job goes to the reader, which
        // names it.
        let b = body(2000).replace(r#"{"job_id":1500,"#, r#"{"job_id":1500 "#);
        for policy in POLICIES {
            let e = jobs_with(IDS, [b.as_bytes()], policy).unwrap_err();
            assert!(e.starts_with("job 1500 of the list: "), "{e}");
        }
    }

    #[test]
    fn truncated_and_broken_bodies_are_errors() {
        let b = body(50);
        let e = jobs(IDS, chunked(&b[..b.len() / 2], 64)).unwrap_err();
        assert!(e.contains("ended inside the jobs list"), "{e}");
        let e = jobs(IDS, chunked(&b[..b.len() - 1], 64)).unwrap_err();
        assert!(e.contains("EOF"), "{e}");
        assert!(jobs(IDS, chunked("Unable to parse query.", 5)).is_err());
        assert!(jobs(IDS, [&b"{\"jobs\":null}"[..]]).is_err());
        // `jobs` spelt with an escape is not split, and not silently dropped either.
        assert!(jobs(IDS, [&br#"{"job\u0073":[{"job_id":1}]}"#[..]]).is_err());
        let empty = jobs(IDS, [&b"{\"jobs\":[]}"[..]]).unwrap();
        assert!(empty.data.jobs.is_empty() && empty.last_update.is_none());
    }
}
