//! Audit: the newest records of the audit log, as written.

use super::detail::kv;
use super::fmt::untrusted;
use super::table::TableId;
use super::table::to_json;
use super::table::{Column, Cx, RowKey, SortKey, TableSource, col};
use super::tone::{Cell, Line};
use crate::audit::{Phase, Record};
use crate::model::ObjKey;
use std::borrow::Cow;

pub struct AuditTable;

pub const TABLE: TableId = TableId("audit");

static COLS: [Column; 9] = [
    col(
        "SEQ",
        6,
        |cx, key| {
            let r = rec(cx, key);
            SortKey::Int(r.seq as i64)
        },
        |cx, key| {
            let r = rec(cx, key);
            let t = cx.tones;
            Cell::new(r.seq.to_string(), t.dim)
        },
    )
    .drop(5)
    .right(),
    col(
        "TIME",
        23,
        |cx, key| {
            let r = rec(cx, key);
            SortKey::Int(r.seq as i64)
        },
        |cx, key| {
            let r = rec(cx, key);
            let t = cx.tones;
            Cell::new(shown_time(&r.ts), t.dim)
        },
    )
    .drop(3)
    .whole(),
    col(
        "PHASE",
        7,
        |cx, key| {
            let r = rec(cx, key);
            SortKey::Int(r.phase as i64)
        },
        |cx, key| {
            let r = rec(cx, key);
            let t = cx.tones;
            Cell::new(
                format!("{:?}", r.phase).to_lowercase(),
                if r.phase == Phase::Intent { t.info } else { t.text },
            )
        },
    )
    .exact()
    .drop(6),
    col(
        "ACTION",
        8,
        |cx, key| {
            let r = rec(cx, key);
            SortKey::Str(&r.action)
        },
        |cx, key| {
            let r = rec(cx, key);
            let t = cx.tones;
            untrusted(&r.action, t.accent)
        },
    ),
    col(
        "TARGETS",
        16,
        |cx, key| {
            let r = rec(cx, key);
            SortKey::Str(r.targets.first().map_or("", |t| t.as_str()))
        },
        |cx, key| {
            let r = rec(cx, key);
            let t = cx.tones;
            Cell::new(super::fmt::safe(&r.targets.join(",")).into_owned(), t.text)
        },
    ),
    col(
        "USER",
        10,
        |cx, key| {
            let r = rec(cx, key);
            SortKey::Str(&r.os_user)
        },
        |cx, key| {
            let r = rec(cx, key);
            let t = cx.tones;
            untrusted(&r.os_user, t.text)
        },
    )
    .drop(0),
    col(
        "RESULT",
        8,
        |cx, key| {
            let r = rec(cx, key);
            SortKey::Str(r.result.as_deref().unwrap_or(""))
        },
        |cx, key| {
            let r = rec(cx, key);
            let t = cx.tones;
            let result_style = match r.result.as_deref() {
                Some("ok") => t.ok,
                Some("failed") | Some("refused") => t.crit,
                Some(_) => t.warn,
                None => t.dim,
            };
            Cell::new(r.result.clone().unwrap_or_default(), result_style)
        },
    )
    .exact(),
    col(
        "TICKET",
        10,
        |cx, key| {
            let r = rec(cx, key);
            SortKey::Str(r.ticket.as_deref().unwrap_or(""))
        },
        |cx, key| {
            let r = rec(cx, key);
            let t = cx.tones;
            untrusted(r.ticket.as_deref().unwrap_or(""), t.dim)
        },
    )
    .drop(4),
    col(
        "REASON",
        10,
        |cx, key| {
            let r = rec(cx, key);
            SortKey::Str(r.reason.as_deref().unwrap_or(""))
        },
        |cx, key| {
            let r = rec(cx, key);
            let t = cx.tones;
            untrusted(r.reason.as_deref().unwrap_or(""), t.text)
        },
    ),
];

fn rec<'a>(cx: &Cx<'a>, key: RowKey) -> &'a Record {
    &cx.audit[key as usize]
}

impl TableSource for AuditTable {
    fn id(&self) -> TableId {
        TABLE
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
        detail(cx, key, width)
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        to_json(&cx.audit[key as usize])
    }

    fn columns(&self) -> &'static [Column] {
        &COLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.audit.get(key as usize).map(|r| ObjKey::Audit(r.seq))
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        out.extend(0..cx.audit.len() as RowKey);
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let r = rec(cx, key);
        let mut v: Vec<Cow<'a, str>> =
            vec![r.action.as_str().into(), r.os_user.as_str().into(), r.targets.join(" ").into()];
        v.extend(r.reason.as_deref().map(Cow::from));
        v.extend(r.ticket.as_deref().map(Cow::from));
        v
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let r = rec(cx, key);
        Some(match name {
            "action" => r.action.as_str().into(),
            "user" => r.os_user.as_str().into(),
            "result" => r.result.as_deref()?.into(),
            "ticket" => r.ticket.as_deref()?.into(),
            "target" | "node" | "job" => r.targets.join(",").into(),
            "phase" => format!("{:?}", r.phase).to_lowercase().into(),
            _ => return None,
        })
    }

    fn fields(&self) -> &'static [&'static str] {
        &["action", "user", "result", "ticket", "target", "node", "job", "phase"]
    }

    fn default_sort(&self) -> (usize, bool) {
        (0, true)
    }
}

/// A record's time in the display zone, named (`2026-01-01 09:25:07 EST`); the log keeps UTC
/// (RFC 3339). A time that does not parse is shown as written.
fn shown_time(ts: &str) -> String {
    crate::clock::record_time(ts).unwrap_or_else(|| super::fmt::safe(ts).into_owned())
}

pub fn detail<'a>(cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<Line<'a>> {
    let Some(r) = cx.audit.get(key as usize) else { return vec![] };
    let t = cx.tones;
    let o = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let mut out = vec![
        kv(cx, "record", Cell::new(format!("#{} {:?}", r.seq, r.phase), t.accent)),
        kv(
            cx,
            "time",
            Cell::new(format!("{} (in the log: {})", shown_time(&r.ts), super::fmt::safe(&r.ts)), t.text),
        ),
        kv(cx, "action", untrusted(&r.action, t.text)),
        kv(cx, "targets", Cell::new(super::fmt::safe(&r.targets.join(", ")).into_owned(), t.text)),
        kv(cx, "who", Cell::new(format!("{} on {} as {}", r.os_user, r.host, o(&r.identity)), t.text)),
        kv(cx, "cluster", untrusted(&r.cluster, t.text)),
        kv(cx, "reason", Cell::new(o(&r.reason), t.text)),
        kv(cx, "ticket", Cell::new(o(&r.ticket), t.text)),
        kv(cx, "result", Cell::new(o(&r.result), t.text)),
        kv(cx, "error", Cell::new(o(&r.error), t.crit)),
        kv(cx, "breakglass", Cell::new(o(&r.break_glass), t.warn)),
        kv(cx, "op", Cell::new(r.op_id.clone(), t.dim)),
        kv(cx, "prev hash", Cell::new(r.prev_hash.clone(), t.dim)),
        kv(cx, "hash", Cell::new(r.hash.clone(), t.dim)),
    ];
    for (k, v) in &r.params {
        out.push(kv(cx, k, Cell::new(super::fmt::safe(v).into_owned(), t.dim)));
    }
    out
}
