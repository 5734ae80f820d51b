//! The Prometheus HTTP API's JSON envelope (`/api/v1/query`, `/api/v1/query_range`), parsed
//! without copying label text: every series' labels and points go into three flat vectors, so a
//! response with 80,000 series costs a handful of allocations, not 80,000.
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

fn parse_value(s: &str) -> f64 {
    // Prometheus writes "NaN", "+Inf", "-Inf" and plain decimals; Rust parses all of them.
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
pub fn parse(body: &[u8]) -> Result<Response<'_>, BodyError> {
    let hint = memchr::memmem::find_iter(body, b"\"metric\"").count();
    match fast::parse(body, hint) {
        Some(r) => Ok(r),
        None => parse_serde(body, hint),
    }
}

fn parse_serde(body: &[u8], hint: usize) -> Result<Response<'_>, BodyError> {
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

/// The direct scan of a successful vector/matrix answer. `None` at the first thing it does not
/// expect (the caller then parses with serde). Never panics: every read is checked.
mod fast {
    use super::{Point, Response, ResultType, Results, SeriesRef, Str, parse_value};
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

    struct Scan<'a> {
        /// The body, checked to be UTF-8 once: every slice between ASCII delimiters is a `str`.
        text: &'a str,
        b: &'a [u8],
        i: usize,
        /// The last timestamp's bytes and value: an instant answer repeats one timestamp.
        ts: (&'a [u8], f64),
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

        fn eat(&mut self, c: u8) -> Option<()> {
            (self.peek()? == c).then(|| self.i += 1)
        }

        /// `,` then true, or `close` then false.
        fn next(&mut self, close: u8) -> Option<bool> {
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    Some(true)
                }
                c if c == close => {
                    self.i += 1;
                    Some(false)
                }
                _ => None,
            }
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
            self.text.get(start..start + n)
        }

        fn num(&mut self) -> Option<f64> {
            self.peek()?;
            let start = self.i;
            while matches!(self.b.get(self.i), Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')) {
                self.i += 1;
            }
            let raw = self.b.get(start..self.i)?;
            if raw == self.ts.0 {
                return Some(self.ts.1);
            }
            let v = self.text.get(start..self.i)?.parse().ok()?;
            self.ts = (raw, v);
            Some(v)
        }

        /// `[ts, "value"]`.
        fn point(&mut self) -> Option<Point> {
            self.eat(b'[')?;
            let t = self.num()?;
            self.eat(b',')?;
            let v = parse_value(self.str()?);
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

        fn series(&mut self, out: &mut Results<'a>, hint: usize) -> Option<()> {
            self.eat(b'{')?;
            let l0 = out.labels.len() as u32;
            let p0 = out.points.len() as u32;
            if self.peek()? != b'}' {
                loop {
                    match self.str()? {
                        "metric" => {
                            self.eat(b':')?;
                            self.eat(b'{')?;
                            if self.peek()? == b'}' {
                                self.i += 1;
                            } else {
                                loop {
                                    let k = self.str()?;
                                    self.eat(b':')?;
                                    let v = self.str()?;
                                    out.labels.push((Str(Cow::Borrowed(k)), Str(Cow::Borrowed(v))));
                                    if !self.next(b'}')? {
                                        break;
                                    }
                                }
                            }
                        }
                        "value" => {
                            self.eat(b':')?;
                            let p = self.point()?;
                            out.points.push(p);
                        }
                        "values" => {
                            self.eat(b':')?;
                            self.eat(b'[')?;
                            if self.peek()? == b']' {
                                self.i += 1;
                            } else {
                                loop {
                                    let p = self.point()?;
                                    out.points.push(p);
                                    if !self.next(b']')? {
                                        break;
                                    }
                                }
                            }
                        }
                        _ => return None,
                    }
                    if !self.next(b'}')? {
                        break;
                    }
                }
            }
            out.series.push(SeriesRef {
                labels: (l0, out.labels.len() as u32),
                points: (p0, out.points.len() as u32),
            });
            if out.series.len() == 1 {
                let cap = self.b.len() / 8;
                out.labels.reserve(hint.saturating_mul(out.labels.len()).min(cap));
                out.points.reserve(hint.saturating_mul(out.points.len()).min(cap));
            }
            Some(())
        }

        fn data(&mut self, out: &mut Results<'a>, hint: usize) -> Option<()> {
            self.eat(b'{')?;
            loop {
                match self.str()? {
                    "resultType" => {
                        self.eat(b':')?;
                        out.result_type = match self.str()? {
                            "vector" => ResultType::Vector,
                            "matrix" => ResultType::Matrix,
                            _ => return None,
                        };
                    }
                    "result" => {
                        self.eat(b':')?;
                        self.eat(b'[')?;
                        out.series.reserve(hint);
                        if self.peek()? == b']' {
                            self.i += 1;
                        } else {
                            loop {
                                self.series(out, hint)?;
                                if !self.next(b']')? {
                                    break;
                                }
                            }
                        }
                    }
                    _ => return None,
                }
                if !self.next(b'}')? {
                    return Some(());
                }
            }
        }
    }

    pub(super) fn parse(body: &[u8], hint: usize) -> Option<Response<'_>> {
        let text = std::str::from_utf8(body).ok()?;
        let mut s = Scan { text, b: body, i: 0, ts: (&[], 0.0) };
        let mut out = Response::default();
        let (mut success, mut data) = (false, false);
        s.eat(b'{')?;
        loop {
            match s.str()? {
                "status" => {
                    s.eat(b':')?;
                    success = s.str()? == "success";
                }
                "data" if !data => {
                    s.eat(b':')?;
                    s.data(&mut out.results, hint)?;
                    data = true;
                }
                "warnings" => {
                    s.eat(b':')?;
                    out.warnings = s.strings()?;
                }
                "infos" => {
                    s.eat(b':')?;
                    out.infos = s.strings()?;
                }
                _ => return None,
            }
            if !s.next(b'}')? {
                break;
            }
        }
        // Only whitespace after the object.
        (success && data && s.peek().is_none()).then_some(out)
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
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/prometheus");
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
            if let Some(f) = fast::parse(b, hint) {
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
                if let Some(f) = fast::parse(t, hint) {
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
            assert!(fast::parse(b, 1).is_none(), "{}", String::from_utf8_lossy(b));
        }
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
