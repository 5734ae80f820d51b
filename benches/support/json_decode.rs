//! The Slurm job list and the Prometheus answers decoded by JSON crates through serde, into the
//! same records today's scanners produce: typed structs that name only the members gpuplane
//! reads (the fields of `Job40` in `slurm/v0040.rs`; `metric` and `value` of a series), with
//! strings borrowed from the body where the crate allows it and every other member skipped
//! (serde's `IgnoredAny`). The Slurm half is the library's reference decoder
//! (`gpuplane::backend::slurm::reference::Decoded`, the one the differential test and the fuzz
//! target check `parse::jobs` against). Each crate runs through the same `Deserialize` code, so
//! the comparison is between the crates' parsers.
//!
//! Used by `benches/json_crates.rs` and `examples/json_crates_rss.rs`; [`check_slurm`] and
//! [`check_prom`] assert that every decoder gives today's result.
#![allow(dead_code)]

use gpuplane::backend::prom::api::{self, Point, ResultType, Results, Str};
use gpuplane::backend::slurm::reference::{self, Decoded};
use gpuplane::backend::slurm::{ApiVersion, JobsOut, Parsed, parse};
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// The Slurm decoders compared (besides today's `parse::jobs`).
pub fn slurm_serde_json(body: &[u8]) -> Decoded {
    serde_json::from_slice(body).expect("serde_json")
}

/// From a reader, as the body would stream in (strings are copied: nothing to borrow from).
pub fn slurm_serde_json_reader(r: impl std::io::Read) -> Decoded {
    serde_json::from_reader(r).expect("serde_json reader")
}

pub fn slurm_sonic_rs(body: &[u8]) -> Decoded {
    sonic_rs::from_slice(body).expect("sonic-rs")
}

/// simd-json rewrites the body in place (strings are unescaped into it).
pub fn slurm_simd_json(body: &mut [u8]) -> Decoded {
    simd_json::serde::from_slice(body).expect("simd-json")
}

fn same_jobs(what: &str, today: &Parsed<JobsOut>, d: Decoded) {
    let d = Parsed { data: d.out, last_update: d.last_update };
    if let Some(diff) = reference::differ(today, &d) {
        panic!("{what}: {diff}");
    }
}

/// Every decoder's jobs, allocations, QOS and `last_update` equal today's (panics otherwise);
/// returns the number of jobs.
pub fn check_slurm(body: &[u8]) -> usize {
    let today = parse::jobs(ApiVersion::V0042, body).expect("today");
    assert!(!today.data.jobs.is_empty() && !today.data.allocs.is_empty());
    same_jobs("serde_json", &today, slurm_serde_json(body));
    same_jobs("serde_json reader", &today, slurm_serde_json_reader(body));
    same_jobs("sonic-rs", &today, slurm_sonic_rs(body));
    same_jobs("simd-json", &today, slurm_simd_json(&mut body.to_vec()));
    today.data.jobs.len()
}

// ---- Prometheus ----

#[derive(Deserialize)]
struct PromData<'a> {
    #[serde(rename = "resultType", borrow)]
    result_type: Option<Str<'a>>,
    #[serde(borrow, default)]
    result: Results<'a>,
}

/// The envelope `api::parse` reads with serde when its direct scan declines (`parse_serde`).
#[derive(Deserialize)]
pub struct PromEnv<'a> {
    #[serde(borrow)]
    status: Option<Str<'a>>,
    #[serde(borrow)]
    data: Option<PromData<'a>>,
    #[serde(rename = "errorType")]
    error_type: Option<String>,
    error: Option<String>,
    #[serde(default)]
    warnings: Vec<String>,
    #[serde(default)]
    infos: Vec<String>,
}

impl<'a> PromEnv<'a> {
    /// The results of a successful vector/matrix answer.
    pub fn results(self) -> Results<'a> {
        assert!(self.status.is_some_and(|s| s.0 == "success") && self.error.is_none());
        let data = self.data.expect("data");
        let mut r = data.result;
        r.result_type = match data.result_type.as_ref().map(|s| s.0.as_ref()) {
            Some("matrix") => ResultType::Matrix,
            _ => ResultType::Vector,
        };
        r
    }
}

pub fn prom_serde_json(body: &[u8]) -> Results<'_> {
    serde_json::from_slice::<PromEnv>(body).expect("serde_json").results()
}

pub fn prom_sonic_rs(body: &[u8]) -> Results<'_> {
    sonic_rs::from_slice::<PromEnv>(body).expect("sonic-rs").results()
}

pub fn prom_simd_json(body: &mut [u8]) -> Results<'_> {
    simd_json::serde::from_slice::<PromEnv>(body).expect("simd-json").results()
}

/// Reads an answer as `api::for_each_series` does: each series' labels and newest sample handed
/// to a closure, nothing kept per series (one label buffer, reused).
pub struct Each<F>(pub F);

type Labels<'a> = Vec<(Str<'a>, Str<'a>)>;

impl<'de, F: FnMut(&[(Str<'de>, Str<'de>)], Point)> DeserializeSeed<'de> for Each<F> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(EachEnv(self.0, Vec::new()))
    }
}

struct EachEnv<'a, F>(F, Labels<'a>);

/// `{"status":…,"data":{"resultType":…,"result":[…]}}`: the status must be `success`.
impl<'de, F: FnMut(&[(Str<'de>, Str<'de>)], Point)> Visitor<'de> for EachEnv<'de, F> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a query answer")
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        let mut ok = false;
        while let Some(k) = map.next_key::<Str<'de>>()? {
            match k.0.as_ref() {
                "status" => ok = map.next_value::<Str<'de>>()?.0 == "success",
                "data" => map.next_value_seed(EachData(&mut self.0, &mut self.1))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !ok {
            return Err(serde::de::Error::custom("not a success"));
        }
        Ok(())
    }
}

struct EachData<'s, 'a, F>(&'s mut F, &'s mut Labels<'a>);

impl<'de, F: FnMut(&[(Str<'de>, Str<'de>)], Point)> DeserializeSeed<'de> for EachData<'_, 'de, F> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, F: FnMut(&[(Str<'de>, Str<'de>)], Point)> Visitor<'de> for EachData<'_, 'de, F> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an answer's data")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(k) = map.next_key::<Str<'de>>()? {
            match k.0.as_ref() {
                "result" => map.next_value_seed(EachList(&mut *self.0, &mut *self.1))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct EachList<'s, 'a, F>(&'s mut F, &'s mut Labels<'a>);

impl<'de, F: FnMut(&[(Str<'de>, Str<'de>)], Point)> DeserializeSeed<'de> for EachList<'_, 'de, F> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, F: FnMut(&[(Str<'de>, Str<'de>)], Point)> Visitor<'de> for EachList<'_, 'de, F> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a result list")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(EachSeries(&mut *self.0, &mut *self.1))?.is_some() {}
        Ok(())
    }
}

struct EachSeries<'s, 'a, F>(&'s mut F, &'s mut Labels<'a>);

impl<'de, F: FnMut(&[(Str<'de>, Str<'de>)], Point)> DeserializeSeed<'de> for EachSeries<'_, 'de, F> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// `[ts, "value"]`, the value read as `api` reads it (plain digits, else Rust's parser, else NaN).
struct PointV;

impl<'de> Visitor<'de> for PointV {
    type Value = Point;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sample")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Point, A::Error> {
        use serde::de::Error;
        let t: f64 = seq.next_element()?.ok_or_else(|| Error::invalid_length(0, &self))?;
        let v: Str<'de> = seq.next_element()?.ok_or_else(|| Error::invalid_length(1, &self))?;
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Point { t, v: v.0.parse().unwrap_or(f64::NAN) })
    }
}

struct PointS;

impl<'de> DeserializeSeed<'de> for PointS {
    type Value = Point;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Point, D::Error> {
        d.deserialize_seq(PointV)
    }
}

/// `values` of a range answer: the newest sample.
struct Newest(Option<Point>);

impl<'de> Deserialize<'de> for Newest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Newest;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("samples")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Newest, A::Error> {
                let mut last = None;
                while let Some(p) = seq.next_element_seed(PointS)? {
                    last = Some(p);
                }
                Ok(Newest(last))
            }
        }
        d.deserialize_seq(V)
    }
}

impl<'de, F: FnMut(&[(Str<'de>, Str<'de>)], Point)> Visitor<'de> for EachSeries<'_, 'de, F> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a series")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let labels = &mut *self.1;
        labels.clear();
        let mut last = None;
        while let Some(k) = map.next_key::<Str<'de>>()? {
            match k.0.as_ref() {
                "metric" => map.next_value_seed(LabelsS(&mut *labels))?,
                "value" => last = Some(map.next_value_seed(PointS)?),
                "values" => last = map.next_value::<Newest>()?.0.or(last),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        // Series without samples are skipped, as `for_each_series` skips them.
        if let Some(p) = last {
            (self.0)(labels, p);
        }
        Ok(())
    }
}

struct LabelsS<'s, 'a>(&'s mut Labels<'a>);

impl<'de> DeserializeSeed<'de> for LabelsS<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LabelsS<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("labels")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(kv) = map.next_entry::<Str<'de>, Str<'de>>()? {
            self.0.push(kv);
        }
        Ok(())
    }
}

/// Each series of an answer, read by a crate: `each` gets the labels and newest sample.
pub fn prom_each_serde_json<'a>(body: &'a [u8], each: impl FnMut(&[(Str<'a>, Str<'a>)], Point)) {
    Each(each).deserialize(&mut serde_json::Deserializer::from_slice(body)).expect("serde_json");
}

pub fn prom_each_sonic_rs<'a>(body: &'a [u8], each: impl FnMut(&[(Str<'a>, Str<'a>)], Point)) {
    Each(each).deserialize(&mut sonic_rs::Deserializer::from_slice(body)).expect("sonic-rs");
}

pub fn prom_each_simd_json<'a>(body: &'a mut [u8], each: impl FnMut(&[(Str<'a>, Str<'a>)], Point)) {
    let mut d = simd_json::Deserializer::from_slice(body).expect("simd-json");
    Each(each).deserialize(&mut d).expect("simd-json");
}

type Seen = Vec<(Vec<(String, String)>, u64, u64)>;

fn seen_today(body: &[u8]) -> Seen {
    let mut v = Seen::new();
    api::for_each_series(body, |l, p| {
        v.push((
            l.iter().map(|(k, x)| (k.to_string(), x.to_string())).collect(),
            p.t.to_bits(),
            p.v.to_bits(),
        ))
    })
    .expect("today's scan reads the answer");
    v
}

fn seen_by<'a>(v: &mut Seen) -> impl FnMut(&[(Str<'a>, Str<'a>)], Point) + '_ {
    |l, p| {
        v.push((
            l.iter().map(|(k, x)| (k.0.to_string(), x.0.to_string())).collect(),
            p.t.to_bits(),
            p.v.to_bits(),
        ))
    }
}

fn same_results(what: &str, a: &Results<'_>, b: &Results<'_>) {
    assert_eq!(a.result_type, b.result_type, "{what}: result type");
    assert_eq!(a.series, b.series, "{what}: series");
    assert_eq!(a.labels, b.labels, "{what}: labels");
    assert_eq!(a.points.len(), b.points.len(), "{what}: points");
    for (x, y) in a.points.iter().zip(&b.points) {
        assert_eq!((x.t.to_bits(), x.v.to_bits()), (y.t.to_bits(), y.v.to_bits()), "{what}: point");
    }
}

/// Every decoder reads every answer as today's scan does (parsed results and series handed
/// out); returns the number of series.
pub fn check_prom(bodies: &[Vec<u8>]) -> usize {
    let mut n = 0;
    for b in bodies {
        let today = api::parse(b).expect("today").results;
        n += today.len();
        same_results("serde_json", &today, &prom_serde_json(b));
        same_results("sonic-rs", &today, &prom_sonic_rs(b));
        let mut copy = b.clone();
        same_results("simd-json", &today, &prom_simd_json(&mut copy));
        let want = seen_today(b);
        let mut got = Seen::new();
        prom_each_serde_json(b, seen_by(&mut got));
        assert_eq!(want, got, "serde_json: series handed out");
        got.clear();
        prom_each_sonic_rs(b, seen_by(&mut got));
        assert_eq!(want, got, "sonic-rs: series handed out");
        got.clear();
        let mut copy = b.clone();
        prom_each_simd_json(&mut copy, seen_by(&mut got));
        assert_eq!(want, got, "simd-json: series handed out");
    }
    n
}
