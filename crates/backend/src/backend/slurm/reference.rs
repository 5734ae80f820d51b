//! The reference decoder of a `jobs` body: serde alone, no hand-written scanner. It reads the
//! members `Job40` (`v0040.rs`) reads, in the same lenient types of [`wire`](super::wire), with
//! strings borrowed from the body where the deserializer allows it and every other member
//! skipped (serde's `IgnoredAny`), and makes the same model records.
//!
//! It is what [`parse::jobs`](super::parse::jobs) is checked against ([`check`]): by the
//! differential test (`tests/hermetic/json_differential.rs`), by the fuzz targets (`fuzz/`), and by
//! `benches/json_crates.rs`, which runs [`Decoded`] through serde_json, sonic-rs and simd-json
//! to compare the crates with today's scanners.
//!
//! Compiled always (hidden from the docs) rather than under `cfg(test)` or a cargo feature:
//! integration tests, benches and the separate fuzz crate see only the library's public items,
//! serde_json is a dependency anyway, and a feature would have to be switched on by hand (or by
//! a self dev-dependency) for `cargo test`, `cargo bench` and `scripts/test` alike.

use super::map::{self, Exit, JobIn};
use super::wire::{Limit, Num, Words};
use super::{ApiVersion, JobsOut, Parsed, parse, stream};
use crate::model::Text;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// A string as `wire::Loose` reads it (numbers and booleans become their text; null, objects and
/// arrays nothing), borrowed from the body when the decoder hands out a borrowed string.
#[derive(Debug, Default)]
pub struct Lstr<'a>(Option<Cow<'a, str>>);

impl Lstr<'_> {
    fn text(&self) -> Text {
        self.0.as_deref().map(Text::from).unwrap_or_default()
    }

    fn string(self) -> String {
        self.0.map(Cow::into_owned).unwrap_or_default()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Lstr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Lstr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Lstr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Lstr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Lstr(Some(Cow::Owned(v))))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Lstr(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Lstr(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Lstr(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Lstr(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Lstr(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Lstr(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Lstr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Lstr(None))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Signal {
    id: Num,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Verbose {
    return_code: Num,
    signal: Signal,
}

/// `exit_code`: the verbose struct of v0.0.40+ (`return_code`, `signal.id`), else a raw wait
/// status read as a [`Num`]: the untagged enum `Job40` has (serde buffers the value and tries
/// each shape in turn), so odd shapes (a key twice, `"signal": null`) read as they do there.
#[derive(Deserialize)]
#[serde(untagged)]
enum ExitCode {
    Verbose(Verbose),
    Raw(Num),
}

impl Default for ExitCode {
    fn default() -> Self {
        ExitCode::Raw(Num::Unset)
    }
}

impl ExitCode {
    fn exit(&self) -> Exit {
        match self {
            ExitCode::Verbose(e) => {
                Exit { code: e.return_code.get(), signal: e.signal.id.get().filter(|s| *s > 0) }
            }
            ExitCode::Raw(n) => n.get().map(Exit::from_wait_status).unwrap_or_default(),
        }
    }
}

/// The members of `Job40` (slurm/v0040.rs), in the same lenient types.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Job<'a> {
    job_id: Num,
    #[serde(borrow)]
    name: Lstr<'a>,
    #[serde(borrow)]
    user_name: Lstr<'a>,
    #[serde(borrow)]
    account: Lstr<'a>,
    #[serde(borrow)]
    qos: Lstr<'a>,
    #[serde(borrow)]
    partition: Lstr<'a>,
    job_state: Words,
    #[serde(borrow)]
    state_reason: Lstr<'a>,
    priority: Num,
    submit_time: Num,
    start_time: Num,
    end_time: Num,
    #[serde(borrow)]
    nodes: Lstr<'a>,
    node_count: Num,
    tasks: Num,
    #[serde(borrow)]
    tres_alloc_str: Lstr<'a>,
    #[serde(borrow)]
    tres_req_str: Lstr<'a>,
    #[serde(borrow)]
    tres_per_node: Lstr<'a>,
    #[serde(borrow)]
    tres_per_job: Lstr<'a>,
    #[serde(borrow)]
    tres_per_task: Lstr<'a>,
    gres_detail: Words,
    exit_code: ExitCode,
    restart_cnt: Num,
    time_limit: Limit,
    #[serde(borrow)]
    required_nodes: Lstr<'a>,
}

/// As `v0040::add_job`: jobs without an id are skipped.
fn add_job(j: Job<'_>, out: &mut JobsOut) {
    let Some(id) = j.job_id.get().filter(|id| *id > 0) else { return };
    let qos = j.qos.text();
    out.qos.push(qos.clone());
    out.jobs.push(map::job(
        JobIn {
            id: id as u64,
            name: j.name.text(),
            user: j.user_name.text(),
            account: j.account.text(),
            qos,
            partition: j.partition.text(),
            state: j.job_state.into_upper(),
            reason: j.state_reason.text(),
            priority: j.priority.get(),
            submit: j.submit_time.pos(),
            start: j.start_time.pos(),
            end: j.end_time.pos(),
            nodes: j.nodes.string(),
            node_count: j.node_count.get(),
            tasks: j.tasks.get(),
            tres_alloc: j.tres_alloc_str.string(),
            tres_req: j.tres_req_str.string(),
            tres_per_node: j.tres_per_node.string(),
            tres_per_job: j.tres_per_job.string(),
            tres_per_task: j.tres_per_task.string(),
            gres_detail: j.gres_detail.0.into_iter().map(|t| t.to_string()).collect(),
            exit: j.exit_code.exit(),
            restarts: j.restart_cnt.u32(),
            time_limit: j.time_limit,
            required_nodes: j.required_nodes.string(),
            ..Default::default()
        },
        &mut out.allocs,
    ));
}

/// The keys of the response object.
enum Key {
    Jobs,
    LastUpdate,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "jobs" => Key::Jobs,
                    "last_update" => Key::LastUpdate,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

/// The `jobs` list: each element made a model record as it is read (no list of parsed structs).
struct Jobs<'o>(&'o mut JobsOut);

impl<'de> DeserializeSeed<'de> for Jobs<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Jobs<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a job list")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(j) = seq.next_element::<Job<'de>>()? {
            add_job(j, self.0);
        }
        Ok(())
    }
}

/// A `jobs` body decoded: what [`parse::jobs`] gives.
#[derive(Default)]
pub struct Decoded {
    pub out: JobsOut,
    pub last_update: Option<i64>,
}

/// The response as serde's derive reads a struct `{jobs, last_update}` with `#[serde(default)]`:
/// other members skipped, a member twice an error, and the struct also read from an array
/// (`[jobs, last_update]`), where a job list is an error as in `stream::jobs` (only the list
/// under `"jobs"` is read).
impl<'de> Deserialize<'de> for Decoded {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Decoded;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a jobs response")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Decoded, A::Error> {
                let mut d = Decoded::default();
                let (mut jobs, mut last) = (false, false);
                while let Some(k) = map.next_key::<Key>()? {
                    match k {
                        Key::Jobs if jobs => return Err(de::Error::duplicate_field("jobs")),
                        Key::LastUpdate if last => return Err(de::Error::duplicate_field("last_update")),
                        Key::Jobs => {
                            jobs = true;
                            map.next_value_seed(Jobs(&mut d.out))?;
                        }
                        Key::LastUpdate => {
                            last = true;
                            d.last_update = map.next_value::<Num>()?.pos();
                        }
                        Key::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Decoded, A::Error> {
                let mut d = Decoded::default();
                if let Some(jobs) = seq.next_element::<Vec<IgnoredAny>>()? {
                    if !jobs.is_empty() {
                        return Err(de::Error::custom(
                            "a jobs list written in a form gpuplane does not read",
                        ));
                    }
                    if let Some(n) = seq.next_element::<Num>()? {
                        d.last_update = n.pos();
                    }
                }
                Ok(d)
            }
        }
        d.deserialize_struct("Envelope", &["jobs", "last_update"], V)
    }
}

/// A `jobs` body decoded by serde_json through [`Decoded`].
pub fn jobs(body: &[u8]) -> serde_json::Result<Parsed<JobsOut>> {
    let d: Decoded = serde_json::from_slice(body)?;
    Ok(Parsed { data: d.out, last_update: d.last_update })
}

/// `None` when both results hold the same jobs (every field), GPU allocations, QOS and
/// `last_update`; else what differs first.
pub fn differ(today: &Parsed<JobsOut>, reference: &Parsed<JobsOut>) -> Option<String> {
    let (a, b) = (&today.data, &reference.data);
    if a.jobs.len() != b.jobs.len() {
        return Some(format!("{} jobs, the reference {}", a.jobs.len(), b.jobs.len()));
    }
    if let Some((x, y)) = a.jobs.iter().zip(&b.jobs).find(|(x, y)| x != y) {
        return Some(format!("job {}: {x:?}\nthe reference: {y:?}", x.id));
    }
    if a.allocs != b.allocs {
        return Some(format!("GPU allocations {:?}\nthe reference: {:?}", a.allocs, b.allocs));
    }
    if a.qos != b.qos {
        return Some(format!("QOS {:?}\nthe reference: {:?}", a.qos, b.qos));
    }
    if today.last_update != reference.last_update {
        return Some(format!(
            "last_update {:?}, the reference {:?}",
            today.last_update, reference.last_update
        ));
    }
    None
}

/// How a [`check`] came out (the bodies agreed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agreed {
    /// Both read the body: this many jobs.
    Jobs(usize),
    /// Both refused it.
    Refused,
    /// A documented exception, not compared: a member of the response or of a job whose key is
    /// spelt with an escape (`"job\u005fid"`), which the scanners do not recognise
    /// (`pick.rs`; slurmrestd never writes one) and serde does.
    EscapedKey,
    /// The other documented exception: the scanners read a body that is not JSON at all (serde
    /// refuses it as a `serde_json::Value`). They check the strings, the brackets, the list's
    /// commas and the members they read, and step over the rest of a job by its strings and
    /// brackets only, so text such as `[1 2]` inside a member gpuplane does not read passes, and
    /// so does a key of such a member that is not UTF-8.
    ReadNotJson,
}

/// The differential check of the contract on [`parse::jobs_streamed`]: `body` cut into chunks
/// of `sizes` (cycled; an empty `sizes` is one chunk), parsed as v0.0.42 under every
/// [`stream::Policy`], against [`jobs`]. `Err` says what differs.
pub fn check(body: &[u8], sizes: &[usize]) -> Result<Agreed, String> {
    if escaped_key(body) {
        return Ok(Agreed::EscapedKey);
    }
    let want = jobs(body);
    let chunks = chunked(body, sizes);
    let balanced = parse::jobs_streamed(ApiVersion::V0042, chunks.iter().copied()).map_err(|e| e.to_string());
    let mut got = vec![("Balanced", balanced)];
    for policy in [stream::Policy::Splitter, stream::Policy::Readers] {
        let name = if policy == stream::Policy::Splitter { "Splitter" } else { "Readers" };
        got.push((name, stream::jobs_with(super::v0040::JOB, chunks.iter().copied(), policy)));
    }
    let mut agreed = Agreed::Refused;
    for (policy, today) in got {
        agreed = match (&today, &want) {
            (Ok(a), Ok(b)) => match differ(a, b) {
                None => Agreed::Jobs(a.data.jobs.len()),
                Some(d) => return Err(format!("{policy}, chunks of {sizes:?}: {d}")),
            },
            (Err(_), Err(_)) => Agreed::Refused,
            (Ok(_), Err(_)) if serde_json::from_slice::<serde_json::Value>(body).is_err() => {
                Agreed::ReadNotJson
            }
            (Ok(a), Err(e)) => {
                return Err(format!(
                    "{policy}, chunks of {sizes:?}: read {} jobs, the reference refused: {e}",
                    a.data.jobs.len()
                ));
            }
            (Err(e), Ok(b)) => {
                return Err(format!(
                    "{policy}, chunks of {sizes:?}: refused ({e}), the reference read {} jobs",
                    b.data.jobs.len()
                ));
            }
        };
    }
    Ok(agreed)
}

/// `body` cut into pieces of `sizes` (cycled, zeros read as one).
fn chunked<'b>(body: &'b [u8], sizes: &[usize]) -> Vec<&'b [u8]> {
    if sizes.is_empty() {
        return vec![body];
    }
    let mut out = Vec::new();
    let mut rest = body;
    for &n in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (a, b) = rest.split_at(n.clamp(1, rest.len()));
        out.push(a);
        rest = b;
    }
    out
}

/// Whether serde_json reads `body` as JSON in which a key of the response object or of an
/// element of its `jobs` list is spelt with an escape (serde_json hands such a key over as a
/// copied string, an unescaped one as a borrowed string).
fn escaped_key(body: &[u8]) -> bool {
    let mut found = false;
    let mut de = serde_json::Deserializer::from_slice(body);
    let _ = KeySeed { depth: Depth::Response, found: &mut found }.deserialize(&mut de);
    found
}

#[derive(Clone, Copy, PartialEq)]
enum Depth {
    /// The response object.
    Response,
    /// The value of its `jobs` member.
    List,
    /// An element of that list.
    Job,
    /// Anything deeper.
    Below,
}

struct KeySeed<'f> {
    depth: Depth,
    found: &'f mut bool,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.depth == Depth::Below {
            return IgnoredAny::deserialize(d).map(|_| ());
        }
        d.deserialize_any(self)
    }
}

/// A key, and whether it was borrowed (written without escapes).
struct KeyName<'de>(Option<&'de str>);

impl<'de> Deserialize<'de> for KeyName<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyName<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<KeyName<'de>, E> {
                Ok(KeyName(Some(v)))
            }
            fn visit_str<E>(self, _: &str) -> Result<KeyName<'de>, E> {
                Ok(KeyName(None))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let depth = if self.depth == Depth::List { Depth::Job } else { Depth::Below };
        while seq.next_element_seed(KeySeed { depth, found: &mut *self.found })?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(KeyName(k)) = map.next_key::<KeyName<'de>>()? {
            if self.depth != Depth::List && k.is_none() {
                *self.found = true;
            }
            let depth = match (self.depth, k) {
                (Depth::Response, Some("jobs")) => Depth::List,
                _ => Depth::Below,
            };
            map.next_value_seed(KeySeed { depth, found: &mut *self.found })?;
        }
        Ok(())
    }
}
