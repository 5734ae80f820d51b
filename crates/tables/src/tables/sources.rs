//! Sources: every data source the console reads (scheduler, telemetry, local GPUs, the
//! simulator), whether it answers, since when, and what is wrong with it and how to fix it;
//! then gpuplane's own files (usage ledger, ack store, event journal, audit log and each of
//! its witnesses) with their paths, how their last write or read went, and the fix when it
//! failed. Added as one file plus one registry line, as every view is.

use super::detail::kv;
use super::fmt::{ago, opt, safe, stamp, stamp_rel, untrusted};
use super::table::TableId;
use super::table::{Column, Cx, RowKey, SortKey, TableSource, cluster_cell, col, to_json};
use super::tone::{Cell, Line};
use crate::model::ObjKey;
use crate::model::protocol::{SourceStatus, StoreStatus};
use std::borrow::Cow;

pub struct SourcesTable;

pub const TABLE: TableId = TableId("sources");

static COLS: [Column; 7] = [
    col(
        "SOURCE",
        8,
        |cx, key| SortKey::Str(row(cx, key).name()),
        |cx, key| untrusted(row(cx, key).name(), cx.tones.text),
    ),
    col(
        "STATE",
        8,
        |cx, key| SortKey::Str(row(cx, key).state()),
        |cx, key| {
            let (r, t) = (row(cx, key), cx.tones);
            let style = match r.state() {
                "failing" => t.crit,
                "never" => t.warn,
                _ => t.ok,
            };
            Cell::new(r.state(), style)
        },
    )
    .exact(),
    col(
        "LAST OK",
        20,
        |cx, key| SortKey::Int(row(cx, key).ok_at().unwrap_or(i64::MIN)),
        |cx, key| Cell::new(row(cx, key).ok_at().map_or("-".into(), stamp), cx.tones.dim),
    )
    .whole()
    .drop(2),
    col(
        "AGE",
        8,
        |cx, key| SortKey::Int(row(cx, key).ok_at().unwrap_or(i64::MIN)),
        |cx, key| Cell::new(row(cx, key).ok_at().map_or("-".into(), |at| ago(cx.s.now, at)), cx.tones.dim),
    )
    .right(),
    col(
        "DETAIL",
        12,
        |cx, key| match row(cx, key) {
            Row::Source(s) => SortKey::Str(s.detail.as_deref().unwrap_or("")),
            Row::Store(s) => SortKey::Str(&s.path),
        },
        |cx, key| match row(cx, key) {
            Row::Source(s) => untrusted(s.detail.as_deref().unwrap_or("-"), cx.tones.dim),
            Row::Store(s) => Cell::new(safe(&store_detail(s)).into_owned(), cx.tones.dim),
        },
    )
    .drop(1),
    col(
        "ERROR",
        30,
        |cx, key| SortKey::Str(row(cx, key).error()),
        |cx, key| match row(cx, key) {
            Row::Source(s) => untrusted(s.error.as_deref().unwrap_or(""), cx.tones.crit),
            // A failing store says what to do on its row: nobody else will.
            Row::Store(s) => Cell::new(safe(&store_error(s)).into_owned(), cx.tones.crit),
        },
    ),
    col(
        "CLUSTER",
        8,
        |cx, k| SortKey::Str(cx.s.cluster_of(row(cx, k).cluster())),
        |cx, k| cluster_cell(cx, row(cx, k).cluster()),
    )
    // Which cluster a failing source serves is the point of this view: never dropped.
    .fleet(),
];

/// Stores' rows come after the sources' (their keys from here).
const STORE: RowKey = 1 << 32;

/// A row: a data source, or one of gpuplane's own files.
#[derive(Clone, Copy)]
enum Row<'a> {
    Source(&'a SourceStatus),
    Store(&'a StoreStatus),
}

static NO_CLUSTER: crate::model::Text = crate::model::Text::const_new("");

impl<'a> Row<'a> {
    fn name(self) -> &'a str {
        match self {
            Row::Source(s) => &s.name,
            Row::Store(s) => &s.name,
        }
    }
    fn ok_at(self) -> Option<i64> {
        match self {
            Row::Source(s) => s.ok_at,
            Row::Store(s) => s.ok_at,
        }
    }
    fn error(self) -> &'a str {
        match self {
            Row::Source(s) => s.error.as_deref().unwrap_or(""),
            Row::Store(s) => s.error.as_deref().unwrap_or(""),
        }
    }
    fn cluster(self) -> &'a crate::model::Text {
        match self {
            Row::Source(s) => &s.cluster,
            Row::Store(_) => &NO_CLUSTER,
        }
    }
    /// `ok`, `failing` or `never` (no answer yet).
    fn state(self) -> &'static str {
        match (self.error(), self.ok_at()) {
            ("", Some(_)) => "ok",
            ("", None) => "never",
            _ => "failing",
        }
    }
}

/// A store's DETAIL: its file's name, or the whole path when short (the whole path is always in
/// the detail pane and the JSON), what was done last, and a note.
fn store_detail(s: &StoreStatus) -> String {
    let note = s.note.as_deref().map(|n| format!("; {n}")).unwrap_or_default();
    // A short path (`/dev/log`) says more whole than its last part.
    let name = if s.path.contains("://") || s.path.len() <= 24 {
        s.path.as_str()
    } else {
        std::path::Path::new(&s.path).file_name().and_then(|n| n.to_str()).unwrap_or(&s.path)
    };
    format!("{name} (last {}{note})", s.op)
}

/// A store's ERROR: what failed and what to do.
fn store_error(s: &StoreStatus) -> String {
    match (&s.error, &s.fix) {
        (Some(e), Some(f)) => format!("{e} — fix: {f}"),
        (Some(e), None) => e.clone(),
        _ => String::new(),
    }
}

fn row<'a>(cx: &Cx<'a>, key: RowKey) -> Row<'a> {
    match key.checked_sub(STORE) {
        Some(i) => Row::Store(&cx.s.stores[i as usize]),
        None => Row::Source(&cx.s.sources[key as usize]),
    }
}

impl TableSource for SourcesTable {
    fn id(&self) -> TableId {
        TABLE
    }

    fn columns(&self) -> &'static [Column] {
        &COLS
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        out.extend(0..cx.s.sources.len() as RowKey);
        out.extend((0..cx.s.stores.len() as RowKey).map(|i| STORE + i));
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let r = row(cx, key);
        let mut v: Vec<Cow<'a, str>> = vec![r.name().into(), r.state().into()];
        match r {
            Row::Source(s) => {
                v.extend(s.error.as_deref().map(Cow::from));
                v.extend(s.detail.as_deref().map(Cow::from));
            }
            Row::Store(s) => {
                v.push(s.path.as_str().into());
                v.extend(s.error.as_deref().map(Cow::from));
            }
        }
        v
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let r = row(cx, key);
        Some(match (name, r) {
            ("cluster", _) => cx.s.cluster_of(r.cluster()).as_str().into(),
            ("source" | "name", _) => r.name().into(),
            ("state", _) => r.state().into(),
            ("kind", Row::Source(_)) => "source".into(),
            ("kind", Row::Store(_)) => "store".into(),
            ("error", _) => Some(r.error()).filter(|e| !e.is_empty())?.into(),
            ("detail", Row::Source(s)) => s.detail.as_deref()?.into(),
            ("path", Row::Store(s)) => s.path.as_str().into(),
            ("fix", Row::Store(s)) => s.fix.as_deref()?.into(),
            _ => return None,
        })
    }

    fn fields(&self) -> &'static [&'static str] {
        &["cluster", "source", "name", "kind", "state", "error", "detail", "path", "fix"]
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<Line<'a>> {
        let t = cx.tones;
        let r = row(cx, key);
        let mut out = vec![
            kv(cx, "source", untrusted(r.name(), t.title)),
            kv(cx, "state", Cell::new(r.state(), t.text)),
            kv(cx, "last ok", Cell::new(opt(r.ok_at().map(|at| stamp_rel(cx.s.now, at))), t.text)),
        ];
        match r {
            Row::Source(s) => {
                out.push(kv(cx, "detail", untrusted(s.detail.as_deref().unwrap_or("-"), t.text)));
                if s.simulated {
                    out.push(kv(cx, "data", Cell::new("SIMULATED", t.warn)));
                }
                if let Some(e) = &s.error {
                    out.push(kv(cx, "error", untrusted(e, t.crit)));
                    out.push(Line::styled("the data from this source is stale until it recovers", t.dim));
                }
            }
            Row::Store(s) => {
                out.push(kv(cx, "path", untrusted(&s.path, t.text)));
                out.push(kv(cx, "last", Cell::new(s.op, t.text)));
                if let Some(n) = &s.note {
                    out.push(kv(cx, "note", untrusted(n, t.dim)));
                }
                if let Some(e) = &s.error {
                    out.push(kv(cx, "error", untrusted(e, t.crit)));
                }
                if let Some(f) = &s.fix {
                    out.push(kv(cx, "fix", untrusted(f, t.text)));
                }
            }
        }
        out
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        let r = row(cx, key);
        let (mut v, kind) = match r {
            Row::Source(s) => (to_json(s), "source"),
            Row::Store(s) => (to_json(s), "store"),
        };
        if let Some(o) = v.as_object_mut() {
            o.insert("kind".into(), kind.into());
            o.insert("state".into(), r.state().into());
        }
        v
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        match key.checked_sub(STORE) {
            Some(i) => {
                cx.s.stores.get(i as usize).map(|s| ObjKey::Source(format!("{} {}", s.name, s.path).into()))
            }
            None => cx.s.sources.get(key as usize).map(|s| ObjKey::Source(s.name.clone())),
        }
    }
}
