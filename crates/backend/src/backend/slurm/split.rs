//! Splits a `jobs` response into one JSON text per job while the body streams in, so that jobs
//! can be parsed as they arrive (on several threads) and the whole body is never held.
//!
//! The body is `{"jobs": [ {…}, {…} ], "last_update": …, "meta": …, "errors": […]}`. The
//! [`Splitter`] is fed the body chunk by chunk (chunks may end anywhere: inside a string, after
//! a backslash, between two brackets). It reports each element of the top-level `jobs` array as
//! a range of the current chunk, or, when the element began in an earlier chunk, as the bytes
//! it carried over. Everything outside the `jobs` elements (the envelope, with `"jobs":[]`) is
//! kept aside and parsed at the end; it is small.
//!
//! A [`Splitter::picking`] also walks each object element that lies wholly in one chunk for
//! the members a struct reads ([`scan`]), so that the body is scanned once; with
//! [`Splitter::push_with`] it walks only the elements its caller asks it to, and reports the
//! others whole. Inside objects and arrays the [`Lexer`] goes 64 bytes at a time (see
//! [`scan::container_resume`]).
//!
//! Only the structure needed to find the elements is checked here: strings and their escapes,
//! bracket nesting, the commas between elements. The element texts themselves go to a real
//! JSON parser, which rejects whatever else is wrong with them.

use super::scan::{self, Member, Walk, Wanted};
use std::ops::Range;

/// The envelope (everything outside the `jobs` elements) may not grow past this.
pub const MAX_ENVELOPE: usize = 32 << 20;
/// Nor may one job.
pub const MAX_ELEMENT: usize = 64 << 20;

/// Why a body could not be split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    #[error("the body ended inside the jobs list (after {0} jobs)")]
    Truncated(usize),
    #[error("unexpected {found:?} in the jobs list after {jobs} jobs")]
    Syntax { found: char, jobs: usize },
    #[error("{what} is larger than {limit} bytes")]
    TooLarge { what: &'static str, limit: usize },
}

/// One element of the `jobs` array.
#[derive(Debug, PartialEq, Eq)]
pub enum Elem<'a> {
    /// Wholly inside the chunk just pushed.
    In(Range<usize>),
    /// Began in an earlier chunk: its bytes.
    Carried(Vec<u8>),
    /// An object wholly inside the chunk just pushed, walked already (see
    /// [`Splitter::picking`]): its range and its wanted members (ranges of the chunk).
    Picked(Range<usize>, &'a [Member]),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Outside the `jobs` array.
    Envelope,
    /// Inside the `jobs` array, between elements.
    Between { need_comma: bool },
    /// Inside an object or array element.
    Container,
    /// Inside a string element.
    Str,
    /// Inside a bare element (number, `true`, `null`…).
    Bare,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Other,
    /// The last string in the top-level object was `"jobs"`…
    JobsString,
    /// …and a colon followed it.
    JobsColon,
}

/// Stops the container scan: quotes and brackets.
static STOP: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'{' as usize] = true;
    t[b'}' as usize] = true;
    t[b'[' as usize] = true;
    t[b']' as usize] = true;
    t
};

pub fn bare_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')
}

/// Finds where a JSON string, object or array ends: tracks strings, escapes and nesting (not
/// which bracket closes which; the parser that reads the value checks that).
#[derive(Debug, Clone, Copy, Default)]
pub struct Lexer {
    in_str: bool,
    escape: bool,
    depth: u32,
}

impl Lexer {
    /// For scanning from just after a string's opening quote.
    pub fn in_string() -> Lexer {
        Lexer { in_str: true, ..Lexer::default() }
    }

    /// Scans on from `i` (the state carries over from an earlier call, for a value split across
    /// chunks); the index just past the value's end, if it ends in `chunk`.
    pub fn value_end(&mut self, chunk: &[u8], mut i: usize) -> Option<usize> {
        if self.escape && i < chunk.len() {
            self.escape = false;
            i += 1;
        }
        // At or inside an object or array: 64 bytes at a time (see `scan`), stopping where
        // `value_end_bytes` would.
        let opens = !self.in_str && matches!(chunk.get(i), Some(b'{' | b'['));
        if (self.depth > 0 || opens) && !self.escape {
            let (mut depth, mut in_str) = (u64::from(self.depth), self.in_str);
            let r = scan::container_resume(chunk, i, &mut depth, &mut in_str);
            self.depth = u32::try_from(depth).unwrap_or(u32::MAX);
            self.in_str = in_str;
            return match r {
                Ok(end) => Some(end),
                Err(next) => {
                    self.escape = next > chunk.len();
                    None
                }
            };
        }
        self.value_end_bytes(chunk, i)
    }

    /// [`Lexer::value_end`] byte by byte.
    fn value_end_bytes(&mut self, chunk: &[u8], mut i: usize) -> Option<usize> {
        let n = chunk.len();
        while i < n {
            if self.in_str {
                if self.escape {
                    self.escape = false;
                    i += 1;
                    continue;
                }
                let k = memchr::memchr2(b'"', b'\\', &chunk[i..])?;
                i += k + 1;
                if chunk[i - 1] == b'\\' {
                    self.escape = true;
                } else {
                    self.in_str = false;
                    if self.depth == 0 {
                        return Some(i);
                    }
                }
            } else {
                while i < n && !STOP[usize::from(chunk[i])] {
                    i += 1;
                }
                if i == n {
                    return None;
                }
                match chunk[i] {
                    b'"' => self.in_str = true,
                    b'{' | b'[' => self.depth += 1,
                    _ => {
                        self.depth = self.depth.saturating_sub(1);
                        if self.depth == 0 {
                            return Some(i + 1);
                        }
                    }
                }
                i += 1;
            }
        }
        None
    }
}

/// The push-based splitter (see the module docs).
#[derive(Debug)]
pub struct Splitter {
    mode: Mode,
    /// The envelope's string state.
    in_str: bool,
    escape: bool,
    /// The element in progress.
    lex: Lexer,
    /// Nesting of the envelope.
    env_depth: u32,
    key: Key,
    /// Where the envelope's current string's content starts.
    str_start: usize,
    envelope: Vec<u8>,
    carry: Vec<u8>,
    jobs: usize,
    /// `jobs` when the list opened (an empty list may close at once).
    list_start: usize,
    /// The keys whose values object elements are walked for.
    wanted: Option<Wanted>,
    members: Vec<Member>,
}

impl Default for Splitter {
    fn default() -> Self {
        Self::new()
    }
}

impl Splitter {
    pub fn new() -> Splitter {
        Splitter {
            mode: Mode::Envelope,
            in_str: false,
            escape: false,
            lex: Lexer::default(),
            env_depth: 0,
            key: Key::Other,
            str_start: 0,
            envelope: Vec::new(),
            carry: Vec::new(),
            jobs: 0,
            list_start: 0,
            wanted: None,
            members: Vec::new(),
        }
    }

    /// A splitter that also walks each object element lying wholly in one chunk for the members
    /// named in `wanted` (see [`scan`]), reporting it as [`Elem::Picked`]: the body is scanned
    /// once. Elements it cannot walk (cut by a chunk's end, or malformed) are reported whole.
    pub fn picking(wanted: Wanted) -> Splitter {
        Splitter { wanted: Some(wanted), ..Splitter::new() }
    }

    /// Feeds the next chunk; `emit` receives each element that ends in it, in order.
    #[cfg(test)]
    pub fn push(&mut self, chunk: &[u8], emit: impl FnMut(Elem<'_>)) -> Result<(), SplitError> {
        self.push_with(chunk, || true, emit)
    }

    /// [`Splitter::push`], asking `walk_here` before each object element a picking splitter could
    /// walk: `false` reports it whole (as [`Elem::In`]) for its reader to walk, which gives the
    /// same job (the stream hands work to idle parser threads this way).
    pub fn push_with(
        &mut self,
        chunk: &[u8],
        mut walk_here: impl FnMut() -> bool,
        mut emit: impl FnMut(Elem<'_>),
    ) -> Result<(), SplitError> {
        let n = chunk.len();
        let mut i = 0;
        // Where the element in progress starts in this chunk (0 when it was carried in).
        let mut start = 0;
        while i < n {
            match self.mode {
                Mode::Envelope => {
                    i = self.envelope_until_jobs(chunk, i)?;
                    start = i;
                }
                Mode::Between { need_comma } => {
                    let b = chunk[i];
                    match b {
                        b' ' | b'\t' | b'\n' | b'\r' => i += 1,
                        b',' if need_comma => {
                            self.mode = Mode::Between { need_comma: false };
                            i += 1;
                        }
                        b']' if need_comma || self.jobs == self.list_start => {
                            self.envelope.push(b']');
                            self.env_depth = self.env_depth.saturating_sub(1);
                            self.mode = Mode::Envelope;
                            self.key = Key::Other;
                            i += 1;
                        }
                        _ if !need_comma && b != b',' && b != b']' && b != b'}' && b != b':' => {
                            start = i;
                            if let (b'{', Some(w)) = (b, &self.wanted)
                                && walk_here()
                                && let Walk::Done(end) = scan::walk(chunk, i, w, &mut self.members)
                            {
                                emit(Elem::Picked(i..end, &self.members));
                                self.jobs += 1;
                                self.mode = Mode::Between { need_comma: true };
                                i = end;
                                continue;
                            }
                            self.lex = Lexer::default();
                            self.mode = match b {
                                b'{' | b'[' => Mode::Container,
                                b'"' => Mode::Str,
                                _ if bare_byte(b) => Mode::Bare,
                                _ => return Err(self.syntax(b)),
                            };
                            if self.mode == Mode::Str {
                                self.lex.in_str = true;
                                i += 1;
                            }
                        }
                        _ => return Err(self.syntax(b)),
                    }
                }
                Mode::Container | Mode::Str => match self.lex.value_end(chunk, i) {
                    Some(end) => {
                        self.finish_element(chunk, start, end, &mut emit)?;
                        i = end;
                    }
                    None => i = n,
                },
                Mode::Bare => {
                    let len = chunk[i..].iter().position(|b| !bare_byte(*b));
                    match len {
                        Some(k) => {
                            self.finish_element(chunk, start, i + k, &mut emit)?;
                            i += k;
                        }
                        None => i = n,
                    }
                }
            }
        }
        if matches!(self.mode, Mode::Container | Mode::Str | Mode::Bare) {
            self.carry_over(&chunk[start.min(n)..])?;
        }
        Ok(())
    }

    fn syntax(&self, b: u8) -> SplitError {
        SplitError::Syntax { found: char::from(b), jobs: self.jobs }
    }

    fn carry_over(&mut self, bytes: &[u8]) -> Result<(), SplitError> {
        if self.carry.len() + bytes.len() > MAX_ELEMENT {
            return Err(SplitError::TooLarge { what: "one job", limit: MAX_ELEMENT });
        }
        self.carry.extend_from_slice(bytes);
        Ok(())
    }

    fn finish_element(
        &mut self,
        chunk: &[u8],
        start: usize,
        end: usize,
        emit: &mut impl FnMut(Elem<'_>),
    ) -> Result<(), SplitError> {
        if self.carry.is_empty() {
            emit(Elem::In(start..end));
        } else {
            self.carry_over(&chunk[..end])?;
            emit(Elem::Carried(std::mem::take(&mut self.carry)));
        }
        self.jobs += 1;
        self.mode = Mode::Between { need_comma: true };
        Ok(())
    }

    /// Copies envelope bytes from `i` until the `jobs` array opens (or the chunk ends); returns
    /// where it stopped.
    fn envelope_until_jobs(&mut self, chunk: &[u8], mut i: usize) -> Result<usize, SplitError> {
        let from = i;
        let mut open = false;
        while i < chunk.len() {
            let b = chunk[i];
            i += 1;
            if self.in_str {
                if self.escape {
                    self.escape = false;
                } else if b == b'\\' {
                    self.escape = true;
                } else if b == b'"' {
                    self.in_str = false;
                    let at = self.envelope.len() + (i - 1 - from);
                    let s = self.str_start.min(at);
                    let is_jobs = self.env_depth == 1 && self.string_is_jobs(chunk, from, s, at);
                    self.key = if is_jobs { Key::JobsString } else { Key::Other };
                }
                continue;
            }
            match b {
                b'"' => {
                    self.in_str = true;
                    self.str_start = self.envelope.len() + (i - from);
                    self.key = Key::Other;
                }
                b':' => self.key = if self.key == Key::JobsString { Key::JobsColon } else { Key::Other },
                b'[' if self.key == Key::JobsColon && self.env_depth == 1 => {
                    self.env_depth += 1;
                    open = true;
                    break;
                }
                b'{' | b'[' => {
                    self.env_depth += 1;
                    self.key = Key::Other;
                }
                b'}' | b']' => {
                    self.env_depth = self.env_depth.saturating_sub(1);
                    self.key = Key::Other;
                }
                b' ' | b'\t' | b'\n' | b'\r' => {}
                _ => self.key = Key::Other,
            }
        }
        if self.envelope.len() + (i - from) > MAX_ENVELOPE {
            return Err(SplitError::TooLarge {
                what: "the response outside the jobs list",
                limit: MAX_ENVELOPE,
            });
        }
        self.envelope.extend_from_slice(&chunk[from..i]);
        if open {
            self.mode = Mode::Between { need_comma: false };
            self.list_start = self.jobs;
        }
        Ok(i)
    }

    /// Whether the envelope string between `s` and `at` (envelope offsets, counting the bytes of
    /// `chunk[from..]` not yet copied as if they were) reads `jobs`.
    fn string_is_jobs(&self, chunk: &[u8], from: usize, s: usize, at: usize) -> bool {
        if at - s != 4 {
            return false;
        }
        let have = self.envelope.len();
        (s..at).zip(b"jobs").all(|(k, want)| {
            let b = if k < have { self.envelope[k] } else { chunk[from + (k - have)] };
            b == *want
        })
    }

    /// The end of the body: the envelope (with `"jobs":[]`) to parse, or why the body is
    /// incomplete.
    pub fn finish(self) -> Result<Vec<u8>, SplitError> {
        match self.mode {
            Mode::Envelope => Ok(self.envelope),
            _ => Err(SplitError::Truncated(self.jobs)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits `body` fed in chunks of `size` bytes: the element texts and the envelope.
    fn split(body: &[u8], size: usize) -> Result<(Vec<String>, String), SplitError> {
        let mut s = Splitter::new();
        let mut out = Vec::new();
        for chunk in body.chunks(size.max(1)) {
            s.push(chunk, |e| {
                let bytes = match e {
                    Elem::In(r) | Elem::Picked(r, _) => chunk[r].to_vec(),
                    Elem::Carried(v) => v,
                };
                out.push(String::from_utf8(bytes).unwrap());
            })?;
        }
        let env = s.finish()?;
        Ok((out, String::from_utf8(env).unwrap()))
    }

    /// The same result for every chunk size from 1 to the whole body.
    fn split_all_ways(body: &str) -> Result<(Vec<String>, String), SplitError> {
        let whole = split(body.as_bytes(), body.len());
        for size in 1..body.len() {
            assert_eq!(split(body.as_bytes(), size), whole, "chunks of {size} bytes");
        }
        whole
    }

    #[test]
    fn elements_and_envelope() {
        let body = r#"{"meta":{"jobs":[1]},"jobs": [ {"job_id":1,"a":[1,{"b":2}]} , {"job_id":2} ],"last_update":{"number":7}}"#;
        let (jobs, env) = split_all_ways(body).unwrap();
        assert_eq!(jobs, [r#"{"job_id":1,"a":[1,{"b":2}]}"#, r#"{"job_id":2}"#]);
        // Only the top-level `jobs` is split; the nested one stays in the envelope.
        assert_eq!(env, r#"{"meta":{"jobs":[1]},"jobs": []"#.to_string() + r#","last_update":{"number":7}}"#);
        let v: serde_json::Value = serde_json::from_str(&env).unwrap();
        assert_eq!(v["jobs"], serde_json::json!([]));
    }

    #[test]
    fn strings_with_brackets_quotes_and_escapes() {
        let body = r#"{"jobs":[{"name":"a}]\"{[","x":"\\","y":"\\\"}"},{"name":"\u0041\\\\"}],"errors":[]}"#;
        let (jobs, env) = split_all_ways(body).unwrap();
        assert_eq!(jobs, [r#"{"name":"a}]\"{[","x":"\\","y":"\\\"}"}"#, r#"{"name":"\u0041\\\\"}"#]);
        assert_eq!(env, r#"{"jobs":[],"errors":[]}"#);
        for j in &jobs {
            serde_json::from_str::<serde_json::Value>(j).unwrap();
        }
    }

    #[test]
    fn a_key_that_only_looks_like_jobs() {
        // "jobs" as a value, an escaped key, and a longer key are not the list.
        let body = r#"{"a":"jobs","b":["jobs"],"jo\"bs":[{"x":1}],"jobsx":[{"y":2}],"jobs":[{"z":3}]}"#;
        let (jobs, env) = split_all_ways(body).unwrap();
        assert_eq!(jobs, [r#"{"z":3}"#]);
        assert!(env.contains(r#""jobsx":[{"y":2}]"#) && env.ends_with(r#""jobs":[]}"#), "{env}");
    }

    #[test]
    fn bare_and_string_elements_are_passed_on() {
        let (jobs, env) = split_all_ways(r#"{"jobs":[null, 12 ,"s,]\"",true,[1,[2]]]}"#).unwrap();
        assert_eq!(jobs, ["null", "12", r#""s,]\"""#, "true", "[1,[2]]"]);
        assert_eq!(env, r#"{"jobs":[]}"#);
        let (jobs, _) = split_all_ways(r#"{"jobs":[ ]}"#).unwrap();
        assert!(jobs.is_empty());
    }

    #[test]
    fn bodies_without_a_jobs_list_are_all_envelope() {
        for body in ["Unable to parse query.", r#"{"errors":[{"error":"x"}]}"#, r#"{"jobs":null}"#, ""] {
            let (jobs, env) = split_all_ways(body).unwrap();
            assert!(jobs.is_empty());
            assert_eq!(env, body);
        }
    }

    #[test]
    fn truncated_bodies_are_errors_not_panics() {
        let body = r#"{"jobs":[{"a":"x\"y"},{"b":[1,2]}],"last_update":1}"#;
        let open = body.find('[').unwrap() + 1;
        let close = body.find("],").unwrap() + 1;
        for cut in 0..body.len() {
            let r = split(&body.as_bytes()[..cut], 3);
            let inside = (open..close).contains(&cut);
            match r {
                Err(SplitError::Truncated(n)) => assert!(inside && n <= 2, "cut {cut}: {n}"),
                Ok((jobs, env)) => {
                    assert!(!inside, "cut {cut} passed: {env}");
                    // Outside the list the envelope parser reports the truncation.
                    if cut < body.len() {
                        assert!(serde_json::from_str::<serde_json::Value>(&env).is_err(), "cut {cut}");
                    }
                    assert!(jobs.len() <= 2);
                }
                Err(e) => panic!("cut {cut}: {e}"),
            }
        }
    }

    #[test]
    fn broken_lists_are_errors() {
        for body in [
            r#"{"jobs":[{}{}]}"#,
            r#"{"jobs":[,{}]}"#,
            r#"{"jobs":[{},]}"#,
            r#"{"jobs":[}]}"#,
            r#"{"jobs":[:]}"#,
        ] {
            assert!(matches!(split(body.as_bytes(), 2), Err(SplitError::Syntax { .. })), "{body}");
        }
    }

    const FIELDS: &[&str] = &["job_id", "name"];

    /// Splits with picking: each element's text, and for those picked, the kept members as
    /// (field, value text).
    type PickedSplit = (Vec<(String, Option<Vec<(u16, String)>>)>, String);

    fn split_picking(body: &[u8], size: usize) -> Result<PickedSplit, SplitError> {
        // `push` walks every element it can: `push_with` asked "yes" each time.
        split_picking_some(body, size, 1)
    }

    #[test]
    fn picking_finds_the_same_elements_and_only_top_level_wanted_members() {
        let body = r#"{"meta":{"job_id":1},"jobs":[{"x":{"job_id":9,"name":"deep"},"job_id":1,"name":"a\"}]\\","y":["name",{"job_id":2}]},{"name":"\u0041","name":"dup","job_id":{"set":true,"number":3}},{},"s",{"job_id":4 , "z":[[],{}] }],"last_update":5}"#;
        let plain = split_all_ways(body).unwrap();
        let whole = split_picking(body.as_bytes(), body.len()).unwrap();
        let texts: Vec<String> = whole.0.iter().map(|(t, _)| t.clone()).collect();
        assert_eq!((texts, whole.1.clone()), plain);
        let kept: Vec<_> = whole.0.iter().map(|(_, k)| k.clone()).collect();
        let k = |v: &[(u16, &str)]| Some(v.iter().map(|(f, s)| (*f, s.to_string())).collect::<Vec<_>>());
        assert_eq!(
            kept,
            [
                k(&[(0, "1"), (1, r#""a\"}]\\""#)]),
                k(&[(1, r#""\u0041""#), (1, r#""dup""#), (0, r#"{"set":true,"number":3}"#)]),
                k(&[]),
                None,
                k(&[(0, "4")]),
            ]
        );
        // Any chunking: the same elements; those wholly in a chunk picked the same way, the
        // others (and all with 1-byte chunks) reported whole.
        for size in 1..body.len() {
            let (got, env) = split_picking(body.as_bytes(), size).unwrap();
            assert_eq!(env, whole.1, "chunks of {size}");
            assert_eq!(got.len(), whole.0.len());
            for (g, w) in got.iter().zip(&whole.0) {
                assert_eq!(g.0, w.0, "chunks of {size}");
                assert!(g.1.is_none() || g.1 == w.1, "chunks of {size}: {g:?}");
                assert!(size > 1 || g.1.is_none());
            }
        }
    }

    /// A picking splitter that walks only every `k`th element it could walk.
    fn split_picking_some(body: &[u8], size: usize, k: usize) -> Result<PickedSplit, SplitError> {
        let mut s = Splitter::picking(Wanted::new(FIELDS));
        let (mut out, mut asked) = (Vec::new(), 0);
        for chunk in body.chunks(size.max(1)) {
            let walk_here = || {
                asked += 1;
                asked % k == 0
            };
            s.push_with(chunk, walk_here, |e| {
                let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
                out.push(match e {
                    Elem::In(r) => (text(&chunk[r]), None),
                    Elem::Carried(v) => (text(&v), None),
                    Elem::Picked(r, found) => {
                        let kept = found.iter().map(|m| (m.field, text(&chunk[m.value.clone()]))).collect();
                        (text(&chunk[r]), Some(kept))
                    }
                });
            })?;
        }
        Ok((out, String::from_utf8(s.finish()?).unwrap()))
    }

    #[test]
    fn elements_not_walked_here_are_the_same_elements() {
        let body = r#"{"jobs":[{"job_id":1,"x":[{"a":"]}\""}]},{"job_id":2} ,{"name":"n"},[1,{"job_id":3}],{"job_id":4}],"last_update":5}"#;
        let whole = split_picking(body.as_bytes(), body.len()).unwrap();
        for k in [1, 2, 3, usize::MAX] {
            for size in [1, 2, 7, 30, body.len()] {
                let (got, env) = split_picking_some(body.as_bytes(), size, k).unwrap();
                assert_eq!(env, whole.1);
                assert_eq!(got.len(), whole.0.len());
                for (g, w) in got.iter().zip(&whole.0) {
                    assert_eq!(g.0, w.0, "every {k}th walked, chunks of {size}");
                    assert!(g.1.is_none() || g.1 == w.1);
                }
            }
        }
        // Cut anywhere, the same error or the same count as the plain splitter.
        for cut in 0..body.len() {
            let plain = split(&body.as_bytes()[..cut], 5).map(|(jobs, _)| jobs.len());
            let some = split_picking_some(&body.as_bytes()[..cut], 5, 2).map(|(jobs, _)| jobs.len());
            assert_eq!(plain, some, "cut {cut}");
        }
    }

    /// The lexer fed `s` in pieces cut at `cuts` (as chunks arrive): where the value ends in `s`.
    fn lex_in_pieces(mut lex: Lexer, s: &[u8], from: usize, cuts: &[usize]) -> Option<usize> {
        let mut start = from;
        for &cut in cuts.iter().chain([&s.len()]) {
            let cut = cut.max(start);
            if let Some(end) = lex.value_end(&s[..cut], start) {
                return Some(end);
            }
            start = cut;
        }
        None
    }

    /// Ends found 64 bytes at a time, in one piece or many, are where the byte-by-byte lexer
    /// finds them, on random bytes (escapes, strings and brackets cut anywhere).
    #[test]
    fn block_ends_are_the_lexers() {
        let mut rng = fastrand::Rng::with_seed(17);
        let alphabet = br#"{}[]"\ a,:"#;
        for _ in 0..20_000 {
            let mut s = vec![if rng.bool() { b'{' } else { b'[' }];
            let len = rng.usize(0..300);
            s.extend((0..len).map(|_| alphabet[rng.usize(..alphabet.len())]));
            let want = Lexer::default().value_end_bytes(&s, 0);
            let show = String::from_utf8_lossy(&s);
            assert_eq!(scan::container_end(&s, 0), want, "{show}");
            let mut cuts: Vec<usize> = (0..rng.usize(0..6)).map(|_| rng.usize(..=s.len())).collect();
            cuts.sort_unstable();
            assert_eq!(lex_in_pieces(Lexer::default(), &s, 0, &cuts), want, "{show} cut at {cuts:?}");
            // From inside a string, as the whole-record reader starts on a key.
            let q = Lexer::in_string().value_end_bytes(&s, 1);
            assert_eq!(lex_in_pieces(Lexer::in_string(), &s, 1, &cuts), q, "{show} cut at {cuts:?}");
        }
    }

    #[test]
    fn picking_leaves_malformed_jobs_whole_and_cut_bodies_fail_alike() {
        let body = r#"{"jobs":[{"job_id":1 "name":2},{"job_id":tru},{"job_id":[1,"]"]}],"last_update":1}"#;
        let (got, _) = split_picking(body.as_bytes(), body.len()).unwrap();
        assert_eq!(got.iter().map(|(_, k)| k.is_some()).collect::<Vec<_>>(), [false, false, true]);
        for cut in 0..body.len() {
            for size in [1, 3, body.len()] {
                let plain = split(&body.as_bytes()[..cut], size).map(|(jobs, _)| jobs.len());
                let picked = split_picking(&body.as_bytes()[..cut], size).map(|(jobs, _)| jobs.len());
                assert_eq!(plain, picked, "cut {cut}, chunks of {size}");
            }
        }
    }

    #[test]
    fn odd_bytes_do_not_panic() {
        let mut rng = fastrand::Rng::with_seed(7);
        let alphabet = br#"{}[]",:\ jobs1"#;
        for _ in 0..2000 {
            let len = rng.usize(0..40);
            let mut body = br#"{"jobs":["#.to_vec();
            body.extend((0..len).map(|_| alphabet[rng.usize(0..alphabet.len())]));
            let size = rng.usize(1..8);
            let _ = split(&body, size);
            let _ = split_picking(&body, size);
            let _ = split_picking(&body, body.len());
        }
    }
}
