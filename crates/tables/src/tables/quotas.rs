//! Quotas: each team's GPU quota, use, borrowing and lending.

use super::detail::kv;
use super::fmt::untrusted;
use super::table::TableId;
use super::table::to_json;
use super::table::{Column, Cx, RowKey, SortKey, TableSource, cluster_cell, col};
use super::tone::{Cell, Line};
use crate::model::ObjKey;
use crate::model::Quota;
use crate::state::ClusterState;
use std::borrow::Cow;

pub struct QuotasTable;

pub const TABLE: TableId = TableId("quotas");

static COLS: [Column; 9] = [
    col(
        "TEAM",
        14,
        |cx, key| {
            let q = quota(cx.s, key);
            SortKey::Str(&q.team)
        },
        |cx, key| {
            let q = quota(cx.s, key);
            let t = cx.tones;
            untrusted(&q.team, t.text)
        },
    ),
    col(
        "QUOTA",
        6,
        |cx, key| {
            let q = quota(cx.s, key);
            SortKey::Int(i64::from(q.gpu_quota))
        },
        |cx, key| {
            let q = quota(cx.s, key);
            let t = cx.tones;
            Cell::new(q.gpu_quota.to_string(), t.text)
        },
    )
    .right(),
    col(
        "USED",
        6,
        |cx, key| {
            let q = quota(cx.s, key);
            SortKey::Int(i64::from(q.gpu_used))
        },
        |cx, key| {
            let q = quota(cx.s, key);
            let t = cx.tones;
            let pct = q.used_pct();
            let style = if q.over_quota() { t.crit } else { t.level(pct, 90, 101) };
            Cell::new(q.gpu_used.to_string(), style)
        },
    )
    .right(),
    col(
        "USE%",
        5,
        |cx, key| {
            let q = quota(cx.s, key);
            SortKey::Int(i64::from(q.used_pct()))
        },
        |cx, key| {
            let q = quota(cx.s, key);
            let t = cx.tones;
            let pct = q.used_pct();
            let style = if q.over_quota() { t.crit } else { t.level(pct, 90, 101) };
            Cell::new(format!("{pct}%"), style)
        },
    )
    .right(),
    col(
        "BORROW",
        6,
        |cx, key| {
            let q = quota(cx.s, key);
            SortKey::Int(i64::from(q.borrowed))
        },
        |cx, key| {
            let q = quota(cx.s, key);
            let t = cx.tones;
            Cell::new(q.borrowed.to_string(), if q.borrowed > 0 { t.warn } else { t.dim })
        },
    )
    .right(),
    col(
        "LEND",
        5,
        |cx, key| {
            let q = quota(cx.s, key);
            SortKey::Int(i64::from(q.lendable))
        },
        |cx, key| {
            let q = quota(cx.s, key);
            let t = cx.tones;
            Cell::new(q.lendable.to_string(), t.dim)
        },
    )
    .right()
    .drop(2),
    col(
        "PEND",
        5,
        |cx, key| {
            let q = quota(cx.s, key);
            SortKey::Int(i64::from(q.gpu_pending))
        },
        |cx, key| {
            let q = quota(cx.s, key);
            let t = cx.tones;
            Cell::new(q.gpu_pending.to_string(), t.dim)
        },
    )
    .right()
    .drop(1),
    col(
        "",
        10,
        |cx, key| {
            let q = quota(cx.s, key);
            SortKey::Int(i64::from(q.used_pct()))
        },
        |cx, key| {
            let q = quota(cx.s, key);
            let t = cx.tones;
            let pct = q.used_pct();
            let style = if q.over_quota() { t.crit } else { t.level(pct, 90, 101) };
            Cell::new(cx.glyphs.bar(pct.min(100), 10), style)
        },
    ),
    col(
        "CLUSTER",
        8,
        |cx, k| SortKey::Str(cx.s.cluster_of(&quota(cx.s, k).cluster)),
        |cx, k| cluster_cell(cx, &quota(cx.s, k).cluster),
    )
    .drop(9)
    .fleet(),
];

fn quota(s: &ClusterState, key: RowKey) -> &Quota {
    &s.quotas[key as usize]
}

impl TableSource for QuotasTable {
    fn id(&self) -> TableId {
        TABLE
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
        detail(cx, key, width)
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        to_json(&cx.s.quotas[key as usize])
    }

    fn columns(&self) -> &'static [Column] {
        &COLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.s.quotas.get(key as usize).map(|q| ObjKey::Quota(q.team.clone()))
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        out.extend(0..cx.s.quotas.len() as RowKey);
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let s = cx.s;
        vec![quota(s, key).team.as_str().into()]
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let q = quota(cx.s, key);
        match name {
            "cluster" => Some(cx.s.cluster_of(&q.cluster).as_str().into()),
            "team" => Some(q.team.as_str().into()),
            "over" => Some(q.over_quota().to_string().into()),
            _ => None,
        }
    }

    fn fields(&self) -> &'static [&'static str] {
        &["cluster", "team", "over"]
    }
}

pub fn detail<'a>(cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<Line<'a>> {
    let Some(q) = cx.s.quotas.get(key as usize) else { return vec![] };
    let t = cx.tones;
    let pct = q.used_pct();
    let mut out = vec![
        kv(cx, "team", untrusted(&q.team, t.accent)),
        kv(cx, "quota", Cell::new(format!("{} GPUs", q.gpu_quota), t.text)),
        kv(
            cx,
            "used",
            Cell::new(format!("{} {} GPUs ({pct}%)", cx.glyphs.bar(pct.min(100), 20), q.gpu_used), t.text),
        ),
        kv(cx, "borrowed", Cell::new(format!("{} GPUs beyond quota", q.borrowed), t.text)),
        kv(cx, "lendable", Cell::new(format!("{} GPUs others may borrow", q.lendable), t.text)),
        kv(cx, "pending", Cell::new(format!("{} GPUs requested by pending jobs", q.gpu_pending), t.text)),
    ];
    if q.over_quota() {
        out.push(Line::styled(
            "over quota: borrowed GPUs may be reclaimed (preempted) when their owners need them",
            t.warn,
        ));
    }
    let running: Vec<_> =
        cx.s.jobs.iter().filter(|j| j.account == q.team && j.state.is_active()).take(200).collect();
    out.push(super::detail::section(cx, "active jobs"));
    for j in running.iter().take(20) {
        out.push(Line::from(vec![
            Cell::new(format!("  {:>7} {:<2} {:>3} GPUs ", j.id, j.state.short(), j.gpus), t.dim),
            untrusted(&j.name, t.text),
        ]));
    }
    out
}
