//! Limits on what a server may send. Every HTTP body a backend reads is read through these: a
//! body over its source's limit (checked against `Content-Length` first, then counted chunk by
//! chunk, so an endless stream stops at the limit), a Prometheus answer with more series than
//! its limit or a string (a label value) longer than its limit, a Kubernetes answer or watch
//! event over its limit — each is refused with a message naming the source and the limit, and
//! memory stays bounded by the limit, whatever the server does.

use bytes::Bytes;

/// 1 MiB.
pub const MIB: u64 = 1 << 20;

/// A size for the operator: `256 MiB`, `1 GiB`, `64 KiB`, `100 bytes`.
pub fn show(n: u64) -> String {
    for (unit, name) in [(1u64 << 30, "GiB"), (MIB, "MiB"), (1 << 10, "KiB")] {
        if n >= unit && n.is_multiple_of(unit) {
            return format!("{} {name}", n / unit);
        }
    }
    for (unit, name) in [(1u64 << 30, "GiB"), (MIB, "MiB"), (1 << 10, "KiB")] {
        if n >= unit {
            return format!("{:.1} {name}", n as f64 / unit as f64);
        }
    }
    format!("{n} bytes")
}

/// Reads a size from the configuration: a number of bytes, or a number with `KiB`, `MiB`, `GiB`
/// (or `K`, `M`, `G`, `KB`, `MB`, `GB`, all powers of 1024), spaces allowed: `"256MiB"`, `"1 GiB"`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num.parse().map_err(|_| format!("{s:?} is not a size (e.g. \"256MiB\")"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => MIB,
        "g" | "gb" | "gib" => 1 << 30,
        u => return Err(format!("{s:?}: unknown unit {u:?} (use KiB, MiB or GiB)")),
    };
    let v = n.checked_mul(mult).ok_or_else(|| format!("{s:?} is too large"))?;
    if v == 0 {
        return Err(format!("{s:?}: a limit of 0 would refuse every answer"));
    }
    Ok(v)
}

/// A size limit from the configuration (`"256MiB"`); `default` when unset or unreadable (with a
/// warning naming the key).
pub fn setting(key: &str, value: Option<&str>, default: u64, warnings: &mut Vec<String>) -> u64 {
    match value.map(parse_size) {
        None => default,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            warnings.push(format!("config: {key} = {e}; using {}", show(default)));
            default
        }
    }
}

/// Why a body was not read.
#[derive(Debug)]
pub enum ReadError {
    /// Over `limit` bytes: `declared` when `Content-Length` said so before anything was read.
    TooLarge { limit: u64, declared: Option<u64> },
    /// A [`Guard`] refused it (its words).
    Refused(String),
    /// The transfer failed.
    Transport(reqwest::Error),
}

impl ReadError {
    /// What went wrong, for a message that names the source and the configuration key.
    pub fn describe(&self, key: &str) -> Option<String> {
        match self {
            ReadError::TooLarge { limit, declared: Some(d) } => {
                Some(format!("answer of {} refused, over the limit of {} ({key})", show(*d), show(*limit)))
            }
            ReadError::TooLarge { limit, declared: None } => {
                Some(format!("answer refused after {} (the limit, {key}): larger, or endless", show(*limit)))
            }
            ReadError::Refused(why) => Some(why.clone()),
            ReadError::Transport(_) => None,
        }
    }
}

/// Looks at a body chunk by chunk while it is read, and may refuse it.
pub trait Guard {
    fn feed(&mut self, chunk: &[u8]) -> Result<(), String>;
}

/// No check beyond the size.
pub struct Any;

impl Guard for Any {
    fn feed(&mut self, _: &[u8]) -> Result<(), String> {
        Ok(())
    }
}

/// Reads the rest of `resp` after `head` (bytes already read), refusing it past `limit` bytes
/// or when `guard` refuses a chunk. The body is never held past the limit.
pub async fn read(
    resp: &mut reqwest::Response,
    head: &[u8],
    limit: u64,
    guard: &mut impl Guard,
) -> Result<Bytes, ReadError> {
    if let Some(n) = resp.content_length().filter(|n| *n > limit) {
        return Err(ReadError::TooLarge { limit, declared: Some(n) });
    }
    if head.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit, declared: None });
    }
    guard.feed(head).map_err(ReadError::Refused)?;
    let cap = resp.content_length().unwrap_or(0).min(limit) as usize;
    let mut body = bytes::BytesMut::with_capacity(cap.max(head.len()));
    body.extend_from_slice(head);
    while let Some(c) = resp.chunk().await.map_err(ReadError::Transport)? {
        if (body.len() + c.len()) as u64 > limit {
            return Err(ReadError::TooLarge { limit, declared: None });
        }
        guard.feed(&c).map_err(ReadError::Refused)?;
        body.extend_from_slice(&c);
    }
    Ok(body.freeze())
}

/// What a Prometheus answer may hold, checked while it is read: how many series (counted as
/// `"metric"` keys, one per series) and how long any one string (a label name or value, a
/// warning) may be, escapes included.
#[derive(Debug, Clone)]
pub struct SeriesGuard {
    pub max_series: usize,
    pub max_string: usize,
    series: usize,
    /// The last bytes of the chunk before (a key cut between two chunks).
    tail: Vec<u8>,
    in_str: bool,
    escape: bool,
    str_len: usize,
}

const METRIC_KEY: &[u8] = b"\"metric\"";

impl SeriesGuard {
    pub fn new(max_series: usize, max_string: usize) -> SeriesGuard {
        SeriesGuard {
            max_series,
            max_string,
            series: 0,
            tail: Vec::new(),
            in_str: false,
            escape: false,
            str_len: 0,
        }
    }

    fn count_series(&mut self, chunk: &[u8]) -> Result<(), String> {
        let k = METRIC_KEY.len() - 1;
        // A key cut by the chunk boundary: the tail holds fewer than its length, so any match
        // in tail + head straddles the two.
        let mut joined = std::mem::take(&mut self.tail);
        joined.extend_from_slice(&chunk[..chunk.len().min(k)]);
        self.series += memchr::memmem::find_iter(&joined, METRIC_KEY).count();
        self.series += memchr::memmem::find_iter(chunk, METRIC_KEY).count();
        let keep = chunk.len().min(k);
        if keep == k {
            joined.clear();
            joined.extend_from_slice(&chunk[chunk.len() - k..]);
        } else {
            let from = joined.len().saturating_sub(k);
            joined.drain(..from);
        }
        self.tail = joined;
        if self.series > self.max_series {
            return Err(format!(
                "answer refused: more than {} series (the limit, [prometheus] max_series)",
                self.max_series
            ));
        }
        Ok(())
    }

    fn string_lengths(&mut self, chunk: &[u8]) -> Result<(), String> {
        let mut i = 0;
        while i < chunk.len() {
            if !self.in_str {
                match memchr::memchr(b'"', &chunk[i..]) {
                    Some(k) => {
                        i += k + 1;
                        self.in_str = true;
                        self.escape = false;
                        self.str_len = 0;
                    }
                    None => break,
                }
                continue;
            }
            if self.escape {
                self.escape = false;
                self.str_len += 1;
                i += 1;
                continue;
            }
            match memchr::memchr2(b'"', b'\\', &chunk[i..]) {
                Some(k) => {
                    self.str_len += k;
                    if chunk[i + k] == b'"' {
                        self.in_str = false;
                    } else {
                        self.escape = true;
                        self.str_len += 1;
                    }
                    i += k + 1;
                }
                None => {
                    self.str_len += chunk.len() - i;
                    i = chunk.len();
                }
            }
            if self.str_len > self.max_string {
                return Err(format!(
                    "answer refused: a string (label value) longer than {} (the limit, [prometheus] max_label)",
                    show(self.max_string as u64)
                ));
            }
        }
        if self.in_str && self.str_len > self.max_string {
            return Err(format!(
                "answer refused: a string (label value) longer than {} (the limit, [prometheus] max_label)",
                show(self.max_string as u64)
            ));
        }
        Ok(())
    }
}

impl Guard for SeriesGuard {
    fn feed(&mut self, chunk: &[u8]) -> Result<(), String> {
        self.count_series(chunk)?;
        self.string_lengths(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_and_show() {
        assert_eq!(parse_size("256MiB"), Ok(256 * MIB));
        assert_eq!(parse_size(" 1 GiB "), Ok(1 << 30));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("0").is_err() && parse_size("12 parsecs").is_err() && parse_size("MiB").is_err());
        assert_eq!(show(256 * MIB), "256 MiB");
        assert_eq!(show(1 << 30), "1 GiB");
        assert_eq!(show(1500), "1.5 KiB");
        assert_eq!(show(100), "100 bytes");
    }

    #[test]
    fn series_are_counted_across_any_cut() {
        let body =
            br#"{"data":{"result":[{"metric":{"a":"b"}},{"metric":{}},{"metric":{"x":"\"metric\""}}]}}"#;
        for cut in 1..body.len() {
            let mut g = SeriesGuard::new(3, 100);
            let ok = body.chunks(cut).try_for_each(|c| g.feed(c));
            assert!(ok.is_ok(), "cut {cut}: {ok:?}");
            assert_eq!(g.series, 3, "cut {cut}");
            let mut g = SeriesGuard::new(2, 100);
            assert!(body.chunks(cut).try_for_each(|c| g.feed(c)).unwrap_err().contains("more than 2 series"));
        }
    }

    #[test]
    fn a_long_string_is_refused_across_any_cut_escapes_included() {
        let long = format!(r#"{{"metric":{{"host":"{}"}}}}"#, "a\\\"".repeat(40));
        let short = r#"{"metric":{"host":"abc\"def","v":"12345"}}"#;
        for cut in 1..long.len() {
            let mut g = SeriesGuard::new(10, 100);
            assert!(long.as_bytes().chunks(cut).try_for_each(|c| g.feed(c)).is_err(), "cut {cut}");
            let mut g = SeriesGuard::new(10, 8);
            let r = short.as_bytes().chunks(cut).try_for_each(|c| g.feed(c));
            assert!(r.is_ok(), "cut {cut}: {r:?}");
        }
    }
}
