//! Sources: every data source the console reads (scheduler, telemetry, local GPUs, the
//! simulator), whether it answers, since when, and what is wrong with it and how to fix it.
//! Added as one file plus one registry line, as every view is.

use super::super::widgets::table::{Column, Cx, RowKey, SortKey, TableSource, cluster_cell, col, to_json};
use super::super::widgets::{ago, opt, stamp, stamp_rel, untrusted};
use super::detail::kv;
use super::{TableId, TableView, ViewId};
use crate::model::ObjKey;
use crate::model::protocol::SourceStatus;
use ratatui::text::{Line, Span};
use std::borrow::Cow;

pub struct SourcesTable;

pub const TABLE: TableId = TableId("sources");

static COLS: [Column; 7] = [
    col(
        "SOURCE",
        8,
        |cx, key| {
            let s = src(cx, key);
            SortKey::Str(&s.name)
        },
        |cx, key| {
            let (s, t) = (src(cx, key), cx.theme);
            untrusted(&s.name, t.text)
        },
    ),
    col(
        "STATE",
        8,
        |cx, key| {
            let s = src(cx, key);
            SortKey::Str(state(s))
        },
        |cx, key| {
            let (s, t) = (src(cx, key), cx.theme);
            let style = match state(s) {
                "failing" => t.crit,
                "never" => t.warn,
                _ => t.ok,
            };
            Span::styled(state(s), style)
        },
    )
    .exact(),
    col(
        "LAST OK",
        20,
        |cx, key| {
            let s = src(cx, key);
            SortKey::Int(s.ok_at.unwrap_or(i64::MIN))
        },
        |cx, key| {
            let (s, t) = (src(cx, key), cx.theme);
            Span::styled(s.ok_at.map_or("-".into(), stamp), t.dim)
        },
    )
    .whole()
    .drop(2),
    col(
        "AGE",
        8,
        |cx, key| {
            let s = src(cx, key);
            SortKey::Int(s.ok_at.unwrap_or(i64::MIN))
        },
        |cx, key| {
            let (s, t) = (src(cx, key), cx.theme);
            Span::styled(s.ok_at.map_or("-".into(), |at| ago(cx.s.now, at)), t.dim)
        },
    )
    .right(),
    col(
        "DETAIL",
        12,
        |cx, key| {
            let s = src(cx, key);
            SortKey::Str(s.detail.as_deref().unwrap_or(""))
        },
        |cx, key| {
            let (s, t) = (src(cx, key), cx.theme);
            untrusted(s.detail.as_deref().unwrap_or("-"), t.dim)
        },
    )
    .drop(1),
    col(
        "ERROR",
        30,
        |cx, key| {
            let s = src(cx, key);
            SortKey::Str(s.error.as_deref().unwrap_or(""))
        },
        |cx, key| {
            let (s, t) = (src(cx, key), cx.theme);
            untrusted(s.error.as_deref().unwrap_or(""), t.crit)
        },
    ),
    col(
        "CLUSTER",
        8,
        |cx, k| SortKey::Str(cx.s.cluster_of(&src(cx, k).cluster)),
        |cx, k| cluster_cell(cx, &src(cx, k).cluster),
    )
    // Which cluster a failing source serves is the point of this view: never dropped.
    .fleet(),
];

fn src<'a>(cx: &Cx<'a>, key: RowKey) -> &'a SourceStatus {
    &cx.s.sources[key as usize]
}

/// `ok`, `failing` or `never` (no answer yet).
fn state(s: &SourceStatus) -> &'static str {
    match (&s.error, s.ok_at) {
        (Some(_), _) => "failing",
        (None, Some(_)) => "ok",
        (None, None) => "never",
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
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let s = src(cx, key);
        let mut v: Vec<Cow<'a, str>> = vec![s.name.as_str().into(), state(s).into()];
        v.extend(s.error.as_deref().map(Cow::from));
        v.extend(s.detail.as_deref().map(Cow::from));
        v
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let s = src(cx, key);
        Some(match name {
            "cluster" => cx.s.cluster_of(&s.cluster).as_str().into(),
            "source" | "name" => s.name.as_str().into(),
            "state" => state(s).into(),
            "error" => s.error.as_deref()?.into(),
            "detail" => s.detail.as_deref()?.into(),
            _ => return None,
        })
    }

    fn fields(&self) -> &'static [&'static str] {
        &["cluster", "source", "name", "state", "error", "detail"]
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<Line<'a>> {
        let (s, t) = (src(cx, key), cx.theme);
        let mut out = vec![
            kv(cx, "source", untrusted(&s.name, t.title)),
            kv(cx, "state", Span::styled(state(s), t.text)),
            kv(cx, "last ok", Span::styled(opt(s.ok_at.map(|at| stamp_rel(cx.s.now, at))), t.text)),
            kv(cx, "detail", untrusted(s.detail.as_deref().unwrap_or("-"), t.text)),
        ];
        if s.simulated {
            out.push(kv(cx, "data", Span::styled("SIMULATED", t.warn)));
        }
        if let Some(e) = &s.error {
            out.push(kv(cx, "error", untrusted(e, t.crit)));
            out.push(Line::styled("the data from this source is stale until it recovers", t.dim));
        }
        out
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        to_json(src(cx, key))
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.s.sources.get(key as usize).map(|s| ObjKey::Source(s.name.clone()))
    }
}

/// Sources: the data sources and their health.
pub static VIEW: TableView =
    TableView { id: ID, title: "Sources", aliases: &["src", "health"], table: &[&SourcesTable] };

pub const ID: ViewId = ViewId("sources");
