//! The Prometheus HTTP API's JSON envelope (`/api/v1/query`, `/api/v1/query_range`), parsed
//! without copying label text: every series' labels and points go into three flat vectors, so a
//! response with 80,000 series costs a handful of allocations, not 80,000 ([`parse`]); or read
//! without keeping anything per series, each series handed out in place
//! ([`for_each_series`], what a refresh joins from).
//!
//! Everything in a response is untrusted text. Label values are kept as they came (borrowed
//! from the body when unescaped) and are sanitised where they reach the screen.

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// A string borrowed from the body when it has no escapes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Str<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// What kind of result a query returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResultType {
    #[default]
    Vector,
    Matrix,
    Scalar,
    String,
}

/// One series: ranges into [`Results::labels`] and [`Results::points`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesRef {
    pub labels: (u32, u32),
    pub points: (u32, u32),
}

/// A sample: Unix seconds (fractional) and value. Unparsable values are NaN.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub t: f64,
    pub v: f64,
}

/// The `data.result` of a query, flattened.
#[derive(Debug, Clone, Default)]
pub struct Results<'a> {
    pub result_type: ResultType,
    pub labels: Vec<(Str<'a>, Str<'a>)>,
    pub points: Vec<Point>,
    pub series: Vec<SeriesRef>,
    /// The text of a `string` result.
    pub text: Option<String>,
}

/// One series, as handed out by [`Results::iter`].
#[derive(Debug, Clone, Copy)]
pub struct Series<'r, 'a> {
    pub labels: &'r [(Str<'a>, Str<'a>)],
    pub points: &'r [Point],
}

impl<'r> Series<'r, '_> {
    /// The value of label `name` (`None` when absent; Prometheus never sends empty labels).
    pub fn label(&self, name: &str) -> Option<&'r str> {
        self.labels.iter().find(|(k, _)| k.0 == name).map(|(_, v)| v.0.as_ref())
    }

    /// The values of labels `names`, in one pass over the series' labels.
    pub fn labels<const N: usize>(&self, names: [&str; N]) -> [Option<&'r str>; N] {
        let mut out = [None; N];
        for (k, v) in self.labels {
            for (o, n) in out.iter_mut().zip(names) {
                if o.is_none() && n == k.0 {
                    *o = Some(v.0.as_ref());
                }
            }
        }
        out
    }

    /// The first of `names` that is present.
    pub fn first_label(&self, names: &[String]) -> Option<&'r str> {
        names.iter().find_map(|n| self.label(n))
    }

    /// The newest sample (instant vectors have exactly one).
    pub fn last(&self) -> Option<Point> {
        self.points.last().copied()
    }
}

impl<'a> Results<'a> {
    pub fn len(&self) -> usize {
        self.series.len()
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = Series<'_, 'a>> + '_ {
        self.series.iter().map(|s| Series {
            labels: self.labels.get(s.labels.0 as usize..s.labels.1 as usize).unwrap_or(&[]),
            points: self.points.get(s.points.0 as usize..s.points.1 as usize).unwrap_or(&[]),
        })
    }

    /// The value of a `scalar` result (or of a one-element vector).
    pub fn scalar(&self) -> Option<f64> {
        match self.result_type {
            ResultType::Scalar => self.points.first().map(|p| p.v),
            _ if self.series.len() == 1 => self.iter().next()?.last().map(|p| p.v),
            _ => None,
        }
    }
}

thread_local! {
    /// Series in the body being parsed (counted before parsing) and the body's length, to size
    /// the vectors once. A label or a point takes more than 8 bytes of JSON: the body bounds
    /// what is reserved.
    static SERIES_HINT: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

/// Most values are integers (packed GPU fields, counters, Mbit/s), read directly when they
/// have up to this many digits: any 19 digits fit a `u64`, and `u64 as f64` rounds to the
/// nearest float (ties to even) as Rust's parser rounds the same number written in decimal.
const MAX_DIGITS: usize = 19;

fn parse_value(s: &str) -> f64 {
    // Everything but plain digits — "NaN", "+Inf", "-Inf", decimals, exponents, longer
    // numbers — goes to Rust's parser, which reads all of them.
    let b = s.as_bytes();
    if !b.is_empty() && b.len() <= MAX_DIGITS {
        let mut x: u64 = 0;
        let mut digits = true;
        for &c in b {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                digits = false;
                break;
            }
            x = x * 10 + u64::from(d);
        }
        if digits {
            return x as f64;
        }
    }
    s.parse().unwrap_or(f64::NAN)
}

/// `[ts, "value"]`.
struct PointVisitor;
impl<'de> Visitor<'de> for PointVisitor {
    type Value = Point;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a [timestamp, \"value\"] pair")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Point, A::Error> {
        let t: f64 = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let v: Str<'de> = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(1, &self))?;
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Point { t, v: parse_value(&v.0) })
    }
}

struct PointSeed<'s>(&'s mut Vec<Point>);
impl<'de> DeserializeSeed<'de> for PointSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let p = d.deserialize_seq(PointVisitor)?;
        self.0.push(p);
        Ok(())
    }
}

struct PointsSeed<'s>(&'s mut Vec<Point>);
impl<'de> DeserializeSeed<'de> for PointsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}
impl<'de> Visitor<'de> for PointsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of samples")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(PointSeed(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

struct LabelsSeed<'s, 'a>(&'s mut Vec<(Str<'a>, Str<'a>)>);
impl<'de> DeserializeSeed<'de> for LabelsSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}
impl<'de> Visitor<'de> for LabelsSeed<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a label map")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some((k, v)) = map.next_entry::<Str<'de>, Str<'de>>()? {
            self.0.push((k, v));
        }
        Ok(())
    }
}

/// One element of `result`: a series object, or a scalar/string's `ts` or `"value"`.
struct ElemSeed<'s, 'a> {
    out: &'s mut Results<'a>,
    bare: &'s mut (Option<f64>, Option<String>),
}
impl<'de> DeserializeSeed<'de> for ElemSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}
impl<'de> Visitor<'de> for ElemSeed<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a series, a timestamp or a value")
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.bare.0 = Some(v);
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.visit_f64(v as f64)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.visit_f64(v as f64)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.bare.1 = Some(v.to_owned());
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let out = self.out;
        let l0 = out.labels.len() as u32;
        let p0 = out.points.len() as u32;
        while let Some(key) = map.next_key::<Str<'de>>()? {
            match key.0.as_ref() {
                "metric" => map.next_value_seed(LabelsSeed(&mut out.labels))?,
                "value" => map.next_value_seed(PointSeed(&mut out.points))?,
                "values" => map.next_value_seed(PointsSeed(&mut out.points))?,
                // Native histograms and anything newer: not used here.
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        out.series
            .push(SeriesRef { labels: (l0, out.labels.len() as u32), points: (p0, out.points.len() as u32) });
        if out.series.len() == 1 {
            // Series of one answer have the same labels and (instant or range) point counts.
            let (n, len) = SERIES_HINT.get();
            out.labels.reserve(n.saturating_mul(out.labels.len()).min(len / 8));
            out.points.reserve(n.saturating_mul(out.points.len()).min(len / 8));
        }
        Ok(())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Results<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Results<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a query result list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Results<'de>, A::Error> {
                let mut out = Results::default();
                out.series.reserve(seq.size_hint().unwrap_or(0).max(SERIES_HINT.get().0));
                let mut bare = (None, None);
                while seq.next_element_seed(ElemSeed { out: &mut out, bare: &mut bare })?.is_some() {}
                if let (Some(t), Some(v)) = bare {
                    out.points.push(Point { t, v: parse_value(&v) });
                    out.text = Some(v);
                    out.result_type = ResultType::Scalar;
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V)
    }
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(rename = "resultType", borrow)]
    result_type: Option<Str<'a>>,
    #[serde(borrow, default)]
    result: Results<'a>,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    status: Option<Str<'a>>,
    #[serde(borrow)]
    data: Option<Data<'a>>,
    #[serde(rename = "errorType")]
    error_type: Option<String>,
    error: Option<String>,
    #[serde(default)]
    warnings: Vec<String>,
    /// Prometheus 2.45+: informational annotations (PromQL "info" notes).
    #[serde(default)]
    infos: Vec<String>,
}

/// A parsed response: the results (on success) and the server's notes, verbatim.
#[derive(Debug, Clone, Default)]
pub struct Response<'a> {
    pub results: Results<'a>,
    pub warnings: Vec<String>,
    pub infos: Vec<String>,
}

/// Why a body is not a successful response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyError {
    /// `{"status":"error","errorType":…,"error":…}`: the API's own words.
    Api { error_type: String, error: String, warnings: Vec<String> },
    /// Not the API's JSON (a proxy's HTML page, a plain-text 404, a truncated body).
    NotJson(String),
}

/// Parses a query/query_range body. The API's error is returned verbatim.
///
/// A successful vector or matrix answer without escapes in its strings (what Prometheus sends
/// for a fleet's series) takes a direct scan of the bytes ([`fast`]); anything else — errors,
/// scalars, escapes, unknown keys, malformed bodies — goes through serde, which gives the
/// verbatim errors and the precise reasons.
///
/// The contract: for every body, `parse(b)` equals the serde path, [`parse_serde`]: the same
/// [`Results`] (result type, labels, series ranges, points with NaN equal to NaN, text), the
/// same warnings and infos, or the same error. [`for_each_series`] is `Some` exactly when the
/// direct scan reads the body, and then hands out the series of `parse(b)` that have samples,
/// each with its newest sample, and the same notes. Checked by `tests/hermetic/json_differential.rs`
/// (fixtures and their truncations) and the `prom_answer` fuzz target, through [`check`].
pub fn parse(body: &[u8]) -> Result<Response<'_>, BodyError> {
    match fast::parse(body) {
        Some(r) => Ok(r),
        None => parse_serde(body, memchr::memmem::find_iter(body, b"\"metric\"").count()),
    }
}

/// The server's notes on an answer read by [`for_each_series`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notes {
    pub warnings: Vec<String>,
    pub infos: Vec<String>,
}

/// Reads a successful vector or matrix answer without building its [`Results`]: `each` gets
/// every series' labels (borrowed from the body) and newest sample, in the answer's order;
/// series without samples are skipped, as [`Results`] readers skip them.
///
/// `None` for any body that [`parse`] would not read with its direct scan (errors, scalars,
/// escapes, unknown keys, malformed or truncated bodies). `each` may then have seen some of
/// the body's series already: the caller discards what it made of them and reads the body with
/// [`parse`].
pub fn for_each_series<'a>(body: &'a [u8], each: impl FnMut(&[(&'a str, &'a str)], Point)) -> Option<Notes> {
    let mut sink = fast::Each { last: None, each };
    let (_, notes) = fast::scan(body, &mut sink)?;
    Some(notes)
}

/// The serde path of [`parse`], whatever the body (`hint`: the series expected, to size the
/// vectors; 0 when unknown). Public for the differential test and the fuzz target.
#[doc(hidden)]
pub fn parse_serde(body: &[u8], hint: usize) -> Result<Response<'_>, BodyError> {
    SERIES_HINT.set((hint, body.len()));
    let env: Result<Envelope<'_>, _> = serde_json::from_slice(body);
    SERIES_HINT.set((0, 0));
    let env = env.map_err(|e| BodyError::NotJson(e.to_string()))?;
    let status = env.status.as_ref().map(|s| s.0.as_ref()).unwrap_or("");
    if status != "success" || env.error.is_some() {
        return Err(BodyError::Api {
            error_type: env.error_type.unwrap_or_else(|| "unknown".into()),
            error: env.error.unwrap_or_else(|| format!("status {status:?} without an error text")),
            warnings: env.warnings,
        });
    }
    let data = env.data.ok_or_else(|| BodyError::NotJson("a success without data".into()))?;
    let mut results = data.result;
    let rt = data.result_type.as_ref().map(|s| s.0.as_ref()).unwrap_or("vector");
    results.result_type = match rt {
        "matrix" => ResultType::Matrix,
        "scalar" => ResultType::Scalar,
        "string" => ResultType::String,
        _ => ResultType::Vector,
    };
    if results.result_type == ResultType::Scalar {
        results.text = None;
    }
    Ok(Response { results, warnings: env.warnings, infos: env.infos })
}

/// How a [`check`] came out (the two readings agreed).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agreed {
    /// The direct scan read the body: this many series.
    Scanned(usize),
    /// Serde read it (the scan declined).
    Serde,
    /// An error either way.
    Refused,
}

/// The differential check of the contract on [`parse`]: `parse` against [`parse_serde`], and
/// [`for_each_series`] against iterating `parse`. `Err` says what differs.
#[doc(hidden)]
pub fn check(body: &[u8]) -> Result<Agreed, String> {
    let got = parse(body);
    let want = parse_serde(body, 0);
    let scanned = fast::parse(body).is_some();
    let mut seen = Vec::new();
    let notes = for_each_series(body, |l, p| seen.push((l.to_vec(), p)));
    if notes.is_some() != scanned {
        return Err(format!("for_each_series gave {notes:?}, the direct scan read the body: {scanned}"));
    }
    let (a, b) = match (&got, &want) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(x), Err(y)) if x == y => return Ok(Agreed::Refused),
        _ => return Err(format!("parse: {got:?}\nserde: {want:?}")),
    };
    let same = |x: &Point, y: &Point| {
        let eq = |p: f64, q: f64| p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan());
        eq(x.t, y.t) && eq(x.v, y.v)
    };
    let (r, s) = (&a.results, &b.results);
    if r.result_type != s.result_type
        || r.labels != s.labels
        || r.series != s.series
        || r.text != s.text
        || r.points.len() != s.points.len()
        || !r.points.iter().zip(&s.points).all(|(x, y)| same(x, y))
        || (&a.warnings, &a.infos) != (&b.warnings, &b.infos)
    {
        return Err(format!("parse: {a:?}\nserde: {b:?}"));
    }
    let Some(notes) = notes else { return Ok(Agreed::Serde) };
    let want: Vec<_> = r
        .iter()
        .filter_map(|x| {
            Some((x.labels.iter().map(|(k, v)| (k.0.as_ref(), v.0.as_ref())).collect::<Vec<_>>(), x.last()?))
        })
        .collect();
    if seen.len() != want.len() || !seen.iter().zip(&want).all(|(x, y)| x.0 == y.0 && same(&x.1, &y.1)) {
        return Err(format!("for_each_series handed out {seen:?}\nparse has {want:?}"));
    }
    if notes.warnings != a.warnings || notes.infos != a.infos {
        return Err(format!("for_each_series notes {notes:?}, parse {:?} {:?}", a.warnings, a.infos));
    }
    Ok(Agreed::Scanned(r.len()))
}

/// The direct scan of a successful vector/matrix answer. `None` at the first thing it does not
/// expect (the caller then parses with serde). Never panics: every read is checked.
///
/// The scan hands what it reads to a [`Sink`]: [`Collect`] builds [`Results`] ([`parse`]),
/// [`Each`] hands each series to a closure without storing it ([`super::for_each_series`]).
///
/// Series of one answer look alike (the same label names, often the same host as the series
/// before, one timestamp): where the body repeats, at the same place, a string of the series
/// before, the scan checks the bytes and hands out that same string (the same slice of the
/// body), and readers may recognise it by address.
mod fast {
    use super::{MAX_DIGITS, Notes, Point, Response, ResultType, Results, SeriesRef, Str, parse_value};
    use std::borrow::Cow;

    /// The index of the first `"`, `\` or control character in `b`, eight bytes at a time.
    pub(super) fn special(b: &[u8]) -> Option<usize> {
        const LO: u64 = 0x0101_0101_0101_0101;
        const HI: u64 = 0x8080_8080_8080_8080;
        let mut i = 0;
        while let Some(w) = b.get(i..i + 8).and_then(|c| <[u8; 8]>::try_from(c).ok()) {
            let x = u64::from_le_bytes(w);
            let (q, e) = (x ^ (LO * u64::from(b'"')), x ^ (LO * u64::from(b'\\')));
            // A byte's top bit: zero (`"`, `\`) or below 0x20. Bits above the first match may be
            // wrong (borrows), the lowest one is exact.
            let m =
                ((q.wrapping_sub(LO) & !q) | (e.wrapping_sub(LO) & !e) | (x.wrapping_sub(LO * 0x20) & !x))
                    & HI;
            if m != 0 {
                return Some(i + (m.trailing_zeros() / 8) as usize);
            }
            i += 8;
        }
        let tail = b.get(i..)?;
        tail.iter().position(|c| matches!(c, b'"' | b'\\' | 0..0x20)).map(|p| i + p)
    }

    /// Whether `b` is a JSON number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn json_number(b: &[u8]) -> bool {
        let digits = |b: &[u8], i: usize| i + b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        let mut i = usize::from(b.first() == Some(&b'-'));
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = digits(b, i),
            _ => return false,
        }
        if b.get(i) == Some(&b'.') {
            let j = digits(b, i + 1);
            if j == i + 1 {
                return false;
            }
            i = j;
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let j = digits(b, i);
            if j == i {
                return false;
            }
            i = j;
        }
        i == b.len()
    }

    /// Whether `b` holds `s` at `i`.
    #[inline]
    fn holds(b: &[u8], i: usize, s: &[u8]) -> bool {
        b.get(i..i + s.len()) == Some(s)
    }

    /// Where the scan puts what it reads.
    pub(super) trait Sink<'a> {
        /// A sample of the series being read.
        fn point(&mut self, p: Point);
        /// The series is complete, with these labels: `read` bytes of the body's `len` are
        /// read, the result list began at `start`.
        fn end(&mut self, labels: &[(&'a str, &'a str)], start: usize, read: usize, len: usize);
    }

    /// Builds [`Results`].
    pub(super) struct Collect<'r, 'a>(pub &'r mut Results<'a>);

    impl<'a> Sink<'a> for Collect<'_, 'a> {
        fn point(&mut self, p: Point) {
            self.0.points.push(p);
        }

        fn end(&mut self, labels: &[(&'a str, &'a str)], start: usize, read: usize, len: usize) {
            let out = &mut *self.0;
            out.labels.extend(labels.iter().map(|(k, v)| (Str(Cow::Borrowed(*k)), Str(Cow::Borrowed(*v)))));
            let (l0, p0) = out.series.last().map_or((0, 0), |s| (s.labels.1, s.points.1));
            out.series.push(SeriesRef {
                labels: (l0, out.labels.len() as u32),
                points: (p0, out.points.len() as u32),
            });
            if out.series.len() == 1 {
                // Series of one answer are much alike: the first one's size says about how many
                // follow (an eighth more for longer ones). A label or a point takes more than 8
                // bytes of JSON: the body bounds what is reserved.
                let each = read.saturating_sub(start).max(1);
                let n = len.saturating_sub(read) / each;
                let n = n + n / 8 + 1;
                let cap = len / 8;
                out.series.reserve(n.min(cap));
                out.labels.reserve(n.saturating_mul(out.labels.len()).min(cap));
                out.points.reserve(n.saturating_mul(out.points.len()).min(cap));
            }
        }
    }

    /// Hands each series' labels and newest sample to a closure.
    pub(super) struct Each<F> {
        pub last: Option<Point>,
        pub each: F,
    }

    impl<'a, F: FnMut(&[(&'a str, &'a str)], Point)> Sink<'a> for Each<F> {
        fn point(&mut self, p: Point) {
            self.last = Some(p);
        }

        fn end(&mut self, labels: &[(&'a str, &'a str)], _: usize, _: usize, _: usize) {
            if let Some(p) = self.last.take() {
                (self.each)(labels, p);
            }
        }
    }

    static METRIC: &str = "metric";
    static VALUE: &str = "value";

    /// The number that the eight ASCII digits at `i` make; `None` where one is no digit.
    pub(super) fn eight_digits(b: &[u8], i: usize) -> Option<u64> {
        const HI: u64 = 0xF0F0_F0F0_F0F0_F0F0;
        const ZERO: u64 = 0x3030_3030_3030_3030;
        let x = u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?);
        // Every byte 0x30..=0x3f, and none above 0x39 (adding 6 would carry into its top half).
        if x & HI != ZERO || x.wrapping_add(0x0606_0606_0606_0606) & HI != ZERO {
            return None;
        }
        // Digits to pairs, pairs to fours, fours to the eight (first digit in the lowest byte);
        // no lane overflows.
        let d = x - ZERO;
        let d = (d * 10 + (d >> 8)) & 0x00FF_00FF_00FF_00FF;
        let d = (d * 100 + (d >> 16)) & 0x0000_FFFF_0000_FFFF;
        Some((d * 10_000 + (d >> 32)) & 0xFFFF_FFFF)
    }

    /// Reads a body. Strings are checked to be UTF-8 one by one (a string repeated from the
    /// series before is the same bytes as one checked); everything between them is ASCII that
    /// the scan checks byte by byte. A body that is not UTF-8 is therefore not read.
    struct Scan<'a> {
        b: &'a [u8],
        i: usize,
        /// The last timestamp's bytes and value: an instant answer repeats one timestamp.
        ts: (&'a [u8], f64),
        /// The labels of the series being read, and of the one before.
        labels: Vec<(&'a str, &'a str)>,
        prev: Vec<(&'a str, &'a str)>,
    }

    impl<'a> Scan<'a> {
        fn peek(&mut self) -> Option<u8> {
            while let Some(c) = self.b.get(self.i) {
                if !matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                    return Some(*c);
                }
                self.i += 1;
            }
            None
        }

        #[inline]
        fn eat(&mut self, c: u8) -> Option<()> {
            if self.b.get(self.i) == Some(&c) {
                self.i += 1;
                return Some(());
            }
            (self.peek()? == c).then(|| self.i += 1)
        }

        /// `,` then true, or `close` then false.
        #[inline]
        fn next(&mut self, close: u8) -> Option<bool> {
            let c = match self.b.get(self.i) {
                Some(&c) if !matches!(c, b' ' | b'\n' | b'\r' | b'\t') => c,
                _ => self.peek()?,
            };
            self.i += 1;
            match c {
                b',' => Some(true),
                c if c == close => Some(false),
                _ => None,
            }
        }

        /// Bytes `a..b` of the body as a string.
        fn utf8(&self, a: usize, b: usize) -> Option<&'a str> {
            std::str::from_utf8(self.b.get(a..b)?).ok()
        }

        /// A string without escapes or control characters, borrowed.
        fn str(&mut self) -> Option<&'a str> {
            self.eat(b'"')?;
            let start = self.i;
            let n = special(self.b.get(start..)?)?;
            // Escapes and control characters: left to serde.
            if self.b.get(start + n) != Some(&b'"') {
                return None;
            }
            self.i = start + n + 1;
            self.utf8(start, start + n)
        }

        /// A string: `guess` itself where the body holds it here (a string read before, so
        /// known to be free of escapes and control characters), else [`Scan::str`].
        #[inline]
        fn str_or(&mut self, guess: Option<&'a str>) -> Option<&'a str> {
            if let Some(g) = guess {
                let (i, n) = (self.i, g.len());
                if self.b.get(i) == Some(&b'"')
                    && self.b.get(i + 1 + n) == Some(&b'"')
                    && holds(self.b, i + 1, g.as_bytes())
                {
                    self.i = i + n + 2;
                    return Some(g);
                }
            }
            self.str()
        }

        fn num(&mut self) -> Option<f64> {
            let is_num = |c: Option<&u8>| matches!(c, Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'));
            let n = self.ts.0.len();
            if n > 0 && holds(self.b, self.i, self.ts.0) && !is_num(self.b.get(self.i + n)) {
                self.i += n;
                return Some(self.ts.1);
            }
            self.peek()?;
            let start = self.i;
            while is_num(self.b.get(self.i)) {
                self.i += 1;
            }
            let raw = self.b.get(start..self.i)?;
            // Rust's parser also takes `+1`, `01`, `1.` and `.5`, which are not JSON. And it
            // rounds every number correctly where serde_json (without `float_roundtrip`) may be
            // a bit off for long ones or exponents (and refuses `1e999`): the scan reads only
            // numbers both read alike (up to 15 digits, no exponent: one exact division by a
            // power of ten), which Prometheus's timestamps are, and leaves the rest to serde.
            if !json_number(raw)
                || raw.iter().filter(|c| c.is_ascii_digit()).count() > 15
                || raw.iter().any(|c| matches!(c, b'e' | b'E'))
            {
                return None;
            }
            let v = self.utf8(start, self.i)?.parse().ok()?;
            self.ts = (raw, v);
            Some(v)
        }

        /// A sample's value: `"digits"` (up to [`MAX_DIGITS`]) read directly, anything else
        /// as [`parse_value`] reads it.
        fn value(&mut self) -> Option<f64> {
            if self.b.get(self.i) == Some(&b'"') {
                let mut j = self.i + 1;
                let mut x: u64 = 0;
                while let Some(&c) = self.b.get(j)
                    && c.is_ascii_digit()
                    && j - self.i <= MAX_DIGITS
                {
                    x = x * 10 + u64::from(c - b'0');
                    j += 1;
                }
                if j > self.i + 1 && self.b.get(j) == Some(&b'"') {
                    self.i = j + 1;
                    return Some(x as f64);
                }
            }
            Some(parse_value(self.str()?))
        }

        /// `[ts, "value"]`.
        fn point(&mut self) -> Option<Point> {
            self.eat(b'[')?;
            let t = self.num()?;
            self.eat(b',')?;
            let v = self.value()?;
            self.eat(b']')?;
            Some(Point { t, v })
        }

        fn strings(&mut self) -> Option<Vec<String>> {
            self.eat(b'[')?;
            let mut out = Vec::new();
            if self.peek()? == b']' {
                self.i += 1;
                return Some(out);
            }
            loop {
                out.push(self.str()?.to_owned());
                if !self.next(b']')? {
                    return Some(out);
                }
            }
        }

        /// `{"k":"v",…}`; each name and value guessed from the series before.
        fn metric(&mut self) -> Option<()> {
            self.eat(b'{')?;
            if self.peek()? == b'}' {
                self.i += 1;
                return Some(());
            }
            loop {
                let j = self.labels.len();
                let guess = self.prev.get(j).copied();
                let k = self.str_or(guess.map(|g| g.0))?;
                self.eat(b':')?;
                let v = self.str_or(guess.map(|g| g.1))?;
                self.labels.push((k, v));
                if !self.next(b'}')? {
                    return Some(());
                }
            }
        }

        /// The series at `self.i` when it has the usual shape of an instant answer's series,
        /// `{"metric":{…},"value":[ts,"digits"]}` with the label names of the series before,
        /// the timestamp before and no whitespace (its labels and sample then go to `sink`);
        /// `None`, with nothing read, for anything else. Spares [`Scan::series`] its many
        /// small steps on the answers that matter for speed.
        fn usual<S: Sink<'a>>(&mut self, sink: &mut S, start: usize) -> Option<()> {
            let b = self.b;
            let mut i = self.i;
            if self.prev.is_empty() || self.ts.0.is_empty() || !holds(b, i, br#"{"metric":{""#) {
                return None;
            }
            i += 11;
            self.labels.clear();
            for j in 0..self.prev.len() {
                let (k, pv) = self.prev[j];
                // `"name":"` (the opening quote was checked before).
                if !(holds(b, i + 1, k.as_bytes()) && holds(b, i + 1 + k.len(), br#"":""#)) {
                    return None;
                }
                i += k.len() + 4;
                let v = if holds(b, i, pv.as_bytes()) && b.get(i + pv.len()) == Some(&b'"') {
                    pv
                } else {
                    let n = special(b.get(i..)?)?;
                    if b.get(i + n) != Some(&b'"') {
                        return None;
                    }
                    self.utf8(i, i + n)?
                };
                i += v.len() + 1;
                self.labels.push((k, v));
                // `,"` before the next label, `}` after the last.
                let last = j + 1 == self.prev.len();
                if !(if last { b.get(i) == Some(&b'}') } else { holds(b, i, br#",""#) }) {
                    return None;
                }
                i += 1;
            }
            if !(holds(b, i, br#","value":["#)
                && holds(b, i + 10, self.ts.0)
                && holds(b, i + 10 + self.ts.0.len(), br#",""#))
            {
                return None;
            }
            i += 12 + self.ts.0.len();
            let first = i;
            let mut x: u64 = 0;
            while i - first + 8 <= MAX_DIGITS
                && let Some(d) = eight_digits(b, i)
            {
                x = x * 100_000_000 + d;
                i += 8;
            }
            while let Some(&c) = b.get(i)
                && c.is_ascii_digit()
                && i - first < MAX_DIGITS
            {
                x = x * 10 + u64::from(c - b'0');
                i += 1;
            }
            if i == first || !holds(b, i, br#""]}"#) {
                return None;
            }
            self.i = i + 3;
            sink.point(Point { t: self.ts.1, v: x as f64 });
            sink.end(&self.labels, start, self.i, b.len());
            std::mem::swap(&mut self.labels, &mut self.prev);
            Some(())
        }

        fn series<S: Sink<'a>>(&mut self, sink: &mut S, start: usize) -> Option<()> {
            if self.usual(sink, start).is_some() {
                return Some(());
            }
            self.eat(b'{')?;
            self.labels.clear();
            if self.peek()? != b'}' {
                let mut guess = Some(METRIC);
                loop {
                    let key = self.str_or(guess)?;
                    self.eat(b':')?;
                    if std::ptr::eq(key, METRIC) {
                        self.metric()?;
                        guess = Some(VALUE);
                    } else if std::ptr::eq(key, VALUE) {
                        let p = self.point()?;
                        sink.point(p);
                        guess = None;
                    } else {
                        match key {
                            "metric" => self.metric()?,
                            "value" => {
                                let p = self.point()?;
                                sink.point(p);
                            }
                            "values" => {
                                self.eat(b'[')?;
                                if self.peek()? == b']' {
                                    self.i += 1;
                                } else {
                                    loop {
                                        let p = self.point()?;
                                        sink.point(p);
                                        if !self.next(b']')? {
                                            break;
                                        }
                                    }
                                }
                            }
                            _ => return None,
                        }
                        guess = None;
                    }
                    if !self.next(b'}')? {
                        break;
                    }
                }
            }
            sink.end(&self.labels, start, self.i, self.b.len());
            std::mem::swap(&mut self.labels, &mut self.prev);
            Some(())
        }

        fn data<S: Sink<'a>>(&mut self, sink: &mut S) -> Option<ResultType> {
            self.eat(b'{')?;
            let mut result_type = ResultType::Vector;
            loop {
                match self.str()? {
                    "resultType" => {
                        self.eat(b':')?;
                        result_type = match self.str()? {
                            "vector" => ResultType::Vector,
                            "matrix" => ResultType::Matrix,
                            _ => return None,
                        };
                    }
                    "result" => {
                        self.eat(b':')?;
                        self.eat(b'[')?;
                        let start = self.i;
                        if self.peek()? == b']' {
                            self.i += 1;
                        } else {
                            loop {
                                self.series(sink, start)?;
                                if !self.next(b']')? {
                                    break;
                                }
                            }
                        }
                    }
                    _ => return None,
                }
                if !self.next(b'}')? {
                    return Some(result_type);
                }
            }
        }
    }

    /// Reads a whole body into `sink`: the result type and the notes of a success.
    pub(super) fn scan<'a, S: Sink<'a>>(body: &'a [u8], sink: &mut S) -> Option<(ResultType, Notes)> {
        let mut s = Scan { b: body, i: 0, ts: (&[], 0.0), labels: Vec::new(), prev: Vec::new() };
        let mut notes = Notes::default();
        let (mut success, mut data) = (false, None);
        s.eat(b'{')?;
        loop {
            match s.str()? {
                "status" => {
                    s.eat(b':')?;
                    success = s.str()? == "success";
                }
                "data" if data.is_none() => {
                    s.eat(b':')?;
                    data = Some(s.data(sink)?);
                }
                "warnings" => {
                    s.eat(b':')?;
                    notes.warnings = s.strings()?;
                }
                "infos" => {
                    s.eat(b':')?;
                    notes.infos = s.strings()?;
                }
                _ => return None,
            }
            if !s.next(b'}')? {
                break;
            }
        }
        // Only whitespace after the object.
        if !success || s.peek().is_some() {
            return None;
        }
        Some((data?, notes))
    }

    pub(super) fn parse(body: &[u8]) -> Option<Response<'_>> {
        let mut results = Results::default();
        let (result_type, notes) = scan(body, &mut Collect(&mut results))?;
        results.result_type = result_type;
        Some(Response { results, warnings: notes.warnings, infos: notes.infos })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_scan_finds_the_first_quote_backslash_or_control_character() {
        let naive = |b: &[u8]| b.iter().position(|c| matches!(c, b'"' | b'\\' | 0..0x20));
        let alphabet =
            [b'a', b'"', b'\\', 0, 0x1f, b' ', 0x7f, 0x80, 0xff, b'!', b'#', b'[', b']', 0x21, 0x9c];
        let mut x: u32 = 12345;
        for len in 0..40 {
            for _ in 0..300 {
                let b: Vec<u8> = (0..len)
                    .map(|_| {
                        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                        // Mostly plain letters, so that matches land anywhere in a word.
                        if (x >> 16).is_multiple_of(8) {
                            alphabet[(x >> 20) as usize % alphabet.len()]
                        } else {
                            b'a' + (x >> 24) as u8 % 26
                        }
                    })
                    .collect();
                assert_eq!(fast::special(&b), naive(&b), "{b:?}");
            }
        }
    }

    #[test]
    fn eight_digits_at_once_read_as_one_by_one() {
        let naive = |b: &[u8]| {
            b.iter().all(u8::is_ascii_digit).then(|| b.iter().fold(0u64, |x, c| x * 10 + u64::from(c - b'0')))
        };
        let alphabet = b"0123456789/:\x00\xff a9";
        let mut x: u64 = 5;
        for _ in 0..50_000 {
            let mut b = [0u8; 9];
            for c in &mut b {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                // Mostly digits, so that the odd byte lands anywhere.
                *c = if (x >> 60) < 14 {
                    b'0' + (x >> 33) as u8 % 10
                } else {
                    alphabet[(x >> 40) as usize % alphabet.len()]
                };
            }
            assert_eq!(fast::eight_digits(&b, 1), naive(&b[1..]), "{b:?}");
            assert_eq!(fast::eight_digits(&b, 2), None);
        }
        assert_eq!(fast::eight_digits(b"99999999", 0), Some(99_999_999));
        assert_eq!(fast::eight_digits(b"00000007", 0), Some(7));
    }

    #[test]
    fn values_read_as_rust_reads_them() {
        for v in [
            "0",
            "7",
            "42",
            "007",
            "123456789012345",
            "1234567890123456",
            "99999999999999999999",
            "9007199254740993",
            "9007199254740995",
            "9999999999999999999",
            "18446744073709551615",
            "0000000000000000001",
            "",
            "-1",
            "+5",
            "1.5",
            "1e3",
            "NaN",
            "+Inf",
            "-Inf",
            "x",
            "12a",
            " 1",
            "0.0000001",
        ] {
            let want: f64 = v.parse().unwrap_or(f64::NAN);
            let got = parse_value(v);
            assert!(got == want || (got.is_nan() && want.is_nan()), "{v:?}: {got} {want}");
        }
        // Long integers, where floats are far apart and rounding matters.
        let mut x: u64 = 1;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let v = (x >> (x % 8)).to_string();
            assert_eq!(parse_value(&v), v.parse::<f64>().unwrap(), "{v}");
        }
    }

    /// An answer whose series change shape along the way (label names, counts, order,
    /// timestamps, values the direct reading of digits does not take, whitespace): the direct
    /// scan reads each series as serde does, and hands the same series to `for_each_series`.
    #[test]
    fn series_of_every_shape_read_alike() {
        let series = [
            r#"{"metric":{"Hostname":"a","gpu":"0"},"value":[1.5,"1"]}"#,
            r#"{"metric":{"Hostname":"a","gpu":"1"},"value":[1.5,"123456789012345"]}"#,
            r#"{"metric":{"Hostname":"a","gpu":"10"},"value":[1.5,"1234567890123456"]}"#,
            r#"{"metric":{"Hostname":"a","gpu":"10"},"value":[1.5,"9999999999999999999"]}"#,
            r#"{"metric":{"Hostname":"a","gpu":"10"},"value":[1.5,"12345678901234567890"]}"#,
            r#"{"metric":{"Hostname":"ab","gpu":"1"},"value":[1.5,"2.5"]}"#,
            r#"{"metric":{"Hostname":"ab","gpu":"1"},"value":[1.5,"NaN"]}"#,
            r#"{"metric":{"Hostname":"ab","gpu":"1"},"value":[1.50,"3"]}"#,
            r#"{"metric":{"Hostname":"ab","gpu":"1"},"value":[1.5,"-3"]}"#,
            r#"{"metric":{"Hostname":"ab","gpu":"1","pod":"p"},"value":[1.5,"4"]}"#,
            r#"{"metric":{"Hostname":"ab"},"value":[1.5,"5"]}"#,
            r#"{"metric":{"gpu":"1","Hostname":"ab"},"value":[1.5,"6"]}"#,
            r#"{"metric":{"gpu":"1","Hostname":"ab"},"value":[1.5,""]}"#,
            r#"{"metric":{"gpu":"1","Hostnam":"ab"},"value":[1.5,"7"]}"#,
            r#"{"metric":{"gpu":"1","Hostname":"abc"},"value":[2,"8"]}"#,
            r#"{"metric":{},"value":[2,"9"]}"#,
            r#"{"metric":{"gpu":"1"},"value":[2,"10"]}"#,
            r#"{ "metric":{"gpu":"1"},"value":[2,"11"]}"#,
            r#"{"metric":{"gpu" :"1"},"value":[2,"12"]}"#,
            r#"{"metric":{"gpu":"1"} ,"value":[2,"13"]}"#,
            r#"{"metric":{"gpu":"1"},"value":[2, "14"]}"#,
            r#"{"metric":{"gpu":"1"},"value":[2,"15"] }"#,
            r#"{"value":[2,"16"],"metric":{"gpu":"1"}}"#,
            r#"{"metric":{"gpu":"1"},"values":[[2,"17"],[3,"18"]]}"#,
            r#"{"metric":{"gpu":"1"},"value":[2,"19"]}"#,
            r#"{"metric":{"gpu":"1"}}"#,
            r#"{"metric":{"gpu":"1"},"value":[2,"20"]}"#,
            r#"{"metric":{"gpu":"1","gpu":"2"},"value":[2,"21"]}"#,
            r#"{"metric":{"gpu":"1","gpu":"2"},"value":[2,"22"]}"#,
        ];
        // Every rotation, so that each series follows each other kind.
        for r in 0..series.len() {
            let list: Vec<&str> = series[r..].iter().chain(&series[..r]).copied().collect();
            let body = format!(
                r#"{{"status":"success","data":{{"resultType":"vector","result":[{}]}}}}"#,
                list.join(",")
            );
            let b = body.as_bytes();
            let slow = parse_serde(b, 0).unwrap();
            let f = fast::parse(b).expect("read directly");
            assert_eq!(f.results.labels, slow.results.labels);
            assert_eq!(f.results.series, slow.results.series);
            assert_eq!(format!("{:?}", f.results.points), format!("{:?}", slow.results.points));
            let mut each = Vec::new();
            for_each_series(b, |l, p| each.push((l.to_vec(), format!("{p:?}")))).unwrap();
            let want: Vec<_> = slow
                .results
                .iter()
                .filter_map(|s| {
                    let l = s.labels.iter().map(|(k, v)| (k.0.as_ref(), v.0.as_ref())).collect::<Vec<_>>();
                    Some((l, format!("{:?}", s.last()?)))
                })
                .collect();
            assert_eq!(each, want);
        }
    }

    #[test]
    fn for_each_series_reads_what_the_direct_scan_reads() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/prometheus");
        for e in std::fs::read_dir(dir).unwrap() {
            let b = std::fs::read(e.unwrap().path()).unwrap();
            for cut in [b.len(), b.len() / 2, b.len().saturating_sub(2)] {
                let t = &b[..cut];
                let mut n = 0;
                let each = for_each_series(t, |_, _| n += 1);
                match fast::parse(t) {
                    Some(r) => {
                        assert_eq!(each, Some(Notes { warnings: r.warnings, infos: r.infos }));
                        assert_eq!(n, r.results.iter().filter(|s| s.last().is_some()).count());
                    }
                    None => assert_eq!(each, None),
                }
            }
        }
    }

    #[test]
    fn vector_labels_and_values() {
        let body = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"Hostname":"gpu-001","gpu":"0"},"value":[1795959344.452,"87"]},
            {"metric":{"Hostname":"gpu-00\u0032","gpu":"1"},"value":[1795959344.452,"NaN"]}]}}"#;
        let r = parse(body).unwrap();
        let s: Vec<_> = r.results.iter().collect();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].label("Hostname"), Some("gpu-001"));
        assert_eq!(s[0].last().unwrap().v, 87.0);
        assert_eq!(s[1].label("Hostname"), Some("gpu-002"));
        assert!(s[1].last().unwrap().v.is_nan());
    }

    /// The direct scan and serde read the same answers the same way, and the scan leaves to
    /// serde whatever it does not expect.
    #[test]
    fn the_fast_scan_agrees_with_serde() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/prometheus");
        let mut bodies: Vec<Vec<u8>> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .map(|p| std::fs::read(p).unwrap())
            .collect();
        assert!(bodies.len() > 20);
        bodies.push(br#" { "status" : "success" , "data" : { "resultType" : "matrix" , "result" : [ { "metric" : { } , "values" : [ [ 1 , "2" ] , [ 1.5e3 , "+Inf" ] ] } ] } , "warnings" : [ "w" ] } "#.to_vec());
        let mut fast_count = 0;
        for b in &bodies {
            let hint = memchr::memmem::find_iter(b, b"\"metric\"").count();
            let slow = parse_serde(b, hint);
            if let Some(f) = fast::parse(b) {
                fast_count += 1;
                let s = slow.unwrap();
                assert_eq!(f.results.result_type, s.results.result_type);
                assert_eq!(f.results.labels, s.results.labels);
                assert_eq!(f.results.series, s.results.series);
                assert_eq!(format!("{:?}", f.results.points), format!("{:?}", s.results.points));
                assert_eq!((f.warnings, f.infos), (s.warnings, s.infos));
            }
            // Every truncation of a body: an error or the same answer, never a panic.
            for cut in [1, b.len() / 2, b.len().saturating_sub(2)] {
                let t = &b[..cut.min(b.len())];
                if let Some(f) = fast::parse(t) {
                    assert_eq!(f.results.series.len(), parse_serde(t, hint).unwrap().results.series.len());
                }
            }
        }
        assert!(fast_count >= 8, "{fast_count}");
        // Escapes, scalars, errors and unknown keys go to serde.
        for b in [
            &br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"\u0041"},"value":[1,"2"]}]}}"#[..],
            br#"{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}"#,
            br#"{"status":"error","errorType":"bad_data","error":"x"}"#,
            br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[1,{}]}]}}"#,
            br#"{"status":"success","data":{"resultType":"vector","result":[]}} x"#,
        ] {
            assert!(fast::parse(b).is_none(), "{}", String::from_utf8_lossy(b));
        }
        // Not UTF-8, in a string (also where the series before had a string that starts the
        // same) or between them: not read, and serde says why.
        let ok = br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"x\xc3\xa9"},"value":[1,"2"]},{"metric":{"a":"x\xc3"},"value":[1,"2"]}]}}"#;
        assert!(fast::parse(ok).is_none());
        assert!(matches!(parse(ok), Err(BodyError::NotJson(_))));
        let mut twice = br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"xy"},"value":[1,"2"]},{"metric":{"a":"xy"},"value":[1,"2"]}]}}"#.to_vec();
        assert!(fast::parse(&twice).is_some());
        let at = twice.len() - 8;
        twice.insert(at, 0xff);
        assert!(fast::parse(&twice).is_none());
        assert!(matches!(parse(&twice), Err(BodyError::NotJson(_))));
    }

    #[test]
    fn errors_come_back_verbatim() {
        let body = br#"{"status":"error","errorType":"bad_data","error":"1:18: parse error"}"#;
        assert_eq!(
            parse(body).unwrap_err(),
            BodyError::Api {
                error_type: "bad_data".into(),
                error: "1:18: parse error".into(),
                warnings: vec![]
            }
        );
        assert!(matches!(parse(b"404 page not found"), Err(BodyError::NotJson(_))));
    }
}
