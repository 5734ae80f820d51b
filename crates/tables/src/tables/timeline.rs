//! Timeline: what changed, newest first — node state transitions (with the reason and who set
//! it), XIDs and ECC errors, ports going down and flapping, failed and preempted jobs, actions
//! and acks, alerts firing and resolving — from the event journal that the consoles on this
//! data dir share, and what this console saw since its last read of it.
//!
//! `:timeline node=gpu-004 since=2h` opens it filtered: `node`, `job`, `team`, `kind` and
//! `since` (an age: `since=2h` is the last two hours) are its filter keys, through the same
//! filter language as every table. Enter on an event's detail goes to its node, GPU or job.
//! One file plus one registry line, as every view.

use super::detail::{kv, section};
use super::fmt::untrusted;
use super::table::TableId;
use super::table::{Column, Cx, RowKey, SortKey, TableSource, col, to_json};
use super::tone::{Cell, Line, Tone};
use crate::clock::{clock, dur, stamp_rel};
use crate::model::ObjKey;
use crate::model::timeline::{Event, EventKind};
use std::borrow::Cow;

pub const TABLE: TableId = TableId("timeline");

pub struct TimelineTable;

fn event<'a>(cx: &Cx<'a>, key: RowKey) -> &'a Event {
    &cx.s.timeline.events[key as usize]
}

fn kind_style(cx: &Cx<'_>, e: &Event) -> Tone {
    let t = cx.tones;
    match e.kind {
        EventKind::Xid | EventKind::Ecc | EventKind::JobFailed | EventKind::AlertFiring => t.crit,
        EventKind::PortDown | EventKind::PortFlap | EventKind::JobPreempted => t.warn,
        EventKind::NodeState if e.what.contains("down") || e.what.contains("drain") => t.warn,
        EventKind::Action | EventKind::Ack => t.accent,
        EventKind::AlertResolved | EventKind::NodeState => t.text,
    }
}

static COLS: [Column; 7] = [
    col(
        "CLUSTER",
        8,
        |cx, k| SortKey::Str(&event(cx, k).cluster),
        |cx, k| untrusted(&event(cx, k).cluster, cx.tones.dim),
    )
    .drop(9)
    .fleet(),
    col(
        "TIME",
        9,
        |cx, k| SortKey::Int(event(cx, k).at),
        |cx, k| Cell::new(clock(cx.s.now, event(cx, k).at), cx.tones.dim),
    )
    .grow(16)
    .key("at")
    .whole(),
    col(
        "AGE",
        6,
        |cx, k| SortKey::Int(-event(cx, k).at),
        |cx, k| Cell::new(dur(cx.s.now - event(cx, k).at), cx.tones.dim),
    )
    .right()
    .key("since")
    .within()
    .drop(3),
    col(
        "KIND",
        10,
        |cx, k| SortKey::Str(event(cx, k).kind.label()),
        |cx, k| {
            let e = event(cx, k);
            Cell::new(e.kind.label(), kind_style(cx, e))
        },
    )
    .grow(14)
    .exact(),
    col(
        "SUBJECT",
        12,
        |cx, k| SortKey::Str(&event(cx, k).subject),
        |cx, k| untrusted(&event(cx, k).subject, cx.tones.text),
    )
    .grow(22),
    col(
        "WHAT",
        20,
        |cx, k| SortKey::Str(&event(cx, k).what),
        |cx, k| untrusted(&event(cx, k).what, cx.tones.text),
    )
    .grow(90),
    col(
        "WHO",
        8,
        |cx, k| SortKey::Str(event(cx, k).who.as_deref().unwrap_or("")),
        |cx, k| untrusted(event(cx, k).who.as_deref().unwrap_or("-"), cx.tones.dim),
    )
    .grow(14)
    .drop(1),
];

impl TableSource for TimelineTable {
    fn id(&self) -> TableId {
        TABLE
    }

    fn columns(&self) -> &'static [Column] {
        &COLS
    }

    fn default_sort(&self) -> (usize, bool) {
        (1, true)
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        // Newest first.
        out.extend((0..cx.s.timeline.events.len() as RowKey).rev());
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let e = event(cx, key);
        let mut v: Vec<Cow<'a, str>> = vec![e.subject.as_str().into(), e.what.as_str().into()];
        v.extend(e.who.as_deref().map(Cow::from));
        v
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let e = event(cx, key);
        Some(match name {
            "node" => e.node.as_deref()?.into(),
            "job" => e.job?.to_string().into(),
            "team" => e.team.as_deref()?.into(),
            "kind" => e.kind.label().into(),
            // The exact age, for `since=2h` (the AGE column shows it rounded).
            "since" => format!("{}s", (cx.s.now - e.at).max(0)).into(),
            "who" => e.who.as_deref()?.into(),
            "subject" => e.subject.as_str().into(),
            "what" => e.what.as_str().into(),
            "cluster" => e.cluster.as_str().into(),
            _ => return None,
        })
    }

    fn fields(&self) -> &'static [&'static str] {
        &["node", "job", "team", "kind", "since", "who", "subject", "what", "cluster"]
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<Line<'a>> {
        let (e, t) = (event(cx, key), cx.tones);
        let mut out = vec![
            kv(cx, "when", Cell::new(stamp_rel(cx.s.now, e.at), t.title)),
            kv(cx, "kind", Cell::new(e.kind.label(), kind_style(cx, e))),
            kv(cx, "subject", untrusted(&e.subject, t.text)),
            kv(cx, "what", untrusted(&e.what, t.text)),
            kv(cx, "who", untrusted(e.who.as_deref().unwrap_or("-"), t.text)),
            kv(cx, "cluster", untrusted(&e.cluster, t.dim)),
        ];
        if let Some(n) = &e.node {
            out.push(kv(cx, "node", untrusted(n, t.text)));
        }
        if let Some(j) = e.job {
            out.push(kv(cx, "job", Cell::new(j.to_string(), t.text)));
        }
        if let Some(team) = &e.team {
            out.push(kv(cx, "team", untrusted(team, t.text)));
        }
        if e.gpus > 0 {
            out.push(kv(cx, "GPUs", Cell::new(e.gpus.to_string(), t.text)));
        }
        if let Some(to) = jump_target(cx, e) {
            out.push(Line::styled(format!("Enter: go to {}", to.0), t.accent));
        }
        out.push(section(cx, "journal"));
        out.push(kv(cx, "key", untrusted(&e.dedupe, t.dim)));
        let node =
            e.node.as_deref().map_or(String::new(), |n| format!(" --node {}", crate::sanitize::sanitize(n)));
        let hours = (cx.s.now - e.at).max(0) / 3_600 + 1;
        out.push(Line::styled(
            format!("postmortem: gpuplane timeline --since {hours}h -o markdown{node}"),
            t.dim,
        ));
        out
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        to_json(event(cx, key))
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.s.timeline.events.get(key as usize).map(|e| ObjKey::Event(e.id()))
    }
}

/// Where Enter on an event's detail goes: its GPU, node or job when this console holds it.
pub fn jump_target(cx: &Cx<'_>, e: &Event) -> Option<(String, TableId, ObjKey)> {
    let key = e.obj_key()?;
    match &key {
        ObjKey::Gpu(g) => {
            cx.s.node_at(&g.node)?;
            Some((format!("GPU {} of {}", g.index, g.node.name), super::gpus::TABLE, key))
        }
        ObjKey::Node(n) | ObjKey::Port(n, _) => {
            cx.s.node_at(n)?;
            let to = ObjKey::Node(n.clone());
            Some((format!("node {}", n.name), super::nodes::TABLE, to))
        }
        ObjKey::Job(j) => {
            cx.s.job_at(j)?;
            Some((format!("job {}", j.id), super::jobs::TABLE, key))
        }
        _ => None,
    }
}
