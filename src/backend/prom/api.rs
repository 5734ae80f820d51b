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
                if let Some(n) = seq.size_hint() {
                    out.series.reserve(n);
                }
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
pub fn parse(body: &[u8]) -> Result<Response<'_>, BodyError> {
    let env: Envelope<'_> = serde_json::from_slice(body).map_err(|e| BodyError::NotJson(e.to_string()))?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
