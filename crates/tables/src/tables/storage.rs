//! Storage: filesystems and volumes holding datasets, weights and checkpoints.

use super::detail::{kv, section, spark_line};
use super::fmt::{bytes, opt, rate, untrusted};
use super::table::TableId;
use super::table::to_json;
use super::table::{Column, Cx, RowKey, SortKey, TableSource, col};
use super::tone::{Cell, Line};
use crate::model::Filesystem;
use crate::model::ObjKey;
use crate::state::ClusterState;
use std::borrow::Cow;

pub struct StorageTable;

pub const TABLE: TableId = TableId("storage");

static COLS: [Column; 11] = [
    col(
        "NAME",
        12,
        |cx, key| {
            let f = fs(cx.s, key);
            SortKey::Str(&f.name)
        },
        |cx, key| {
            let f = fs(cx.s, key);
            let t = cx.tones;
            untrusted(&f.name, t.text)
        },
    ),
    col(
        "KIND",
        6,
        |cx, key| {
            let f = fs(cx.s, key);
            SortKey::Int(f.kind as i64)
        },
        |cx, key| {
            let f = fs(cx.s, key);
            let t = cx.tones;
            Cell::new(f.kind.label(), t.dim)
        },
    )
    .drop(3),
    col(
        "MOUNT",
        18,
        |cx, key| {
            let f = fs(cx.s, key);
            SortKey::Str(&f.mount)
        },
        |cx, key| {
            let f = fs(cx.s, key);
            let t = cx.tones;
            untrusted(&f.mount, t.text)
        },
    ),
    col(
        "USE",
        4,
        |cx, key| {
            let f = fs(cx.s, key);
            SortKey::Int(i64::from(f.used_pct()))
        },
        |cx, key| {
            let f = fs(cx.s, key);
            let t = cx.tones;
            let pct = f.used_pct();
            Cell::new(
                format!("{pct}%"),
                t.level(u32::from(pct), u32::from(cx.s.thresholds.storage_full_pct), 97),
            )
        },
    )
    .right(),
    col(
        "FULL IN",
        7,
        |cx, key| SortKey::Int(full_in(cx.s, key).unwrap_or(i64::MAX)),
        |cx, key| {
            let t = cx.tones;
            match full_in(cx.s, key) {
                Some(secs) => {
                    Cell::new(format!("~{}", about(secs)), if secs < 86_400 { t.warn } else { t.text })
                }
                None => Cell::new("-", t.dim),
            }
        },
    )
    .right()
    .drop(2),
    col(
        "SIZE",
        6,
        |cx, key| {
            let f = fs(cx.s, key);
            SortKey::Int(f.capacity_bytes as i64)
        },
        |cx, key| {
            let f = fs(cx.s, key);
            let t = cx.tones;
            Cell::new(bytes(f.capacity_bytes), t.dim)
        },
    )
    .right(),
    col(
        "READ",
        9,
        |cx, key| {
            let f = fs(cx.s, key);
            SortKey::Float(f.read_bps)
        },
        |cx, key| {
            let f = fs(cx.s, key);
            let t = cx.tones;
            Cell::new(rate(f.read_bps), t.text)
        },
    )
    .right(),
    col(
        "WRITE",
        9,
        |cx, key| {
            let f = fs(cx.s, key);
            SortKey::Float(f.write_bps)
        },
        |cx, key| {
            let f = fs(cx.s, key);
            let t = cx.tones;
            Cell::new(rate(f.write_bps), t.text)
        },
    )
    .right(),
    col(
        "CKPT-W",
        6,
        |cx, key| {
            let f = fs(cx.s, key);
            SortKey::Float(f64::from(f.ckpt_write_s.unwrap_or(-1.0)))
        },
        |cx, key| {
            let f = fs(cx.s, key);
            let t = cx.tones;
            Cell::new(opt(f.ckpt_write_s.map(|v| format!("{v:.0}s"))), t.dim)
        },
    )
    .right()
    .drop(2),
    col(
        "CKPT-R",
        6,
        |cx, key| {
            let f = fs(cx.s, key);
            SortKey::Float(f64::from(f.ckpt_restore_s.unwrap_or(-1.0)))
        },
        |cx, key| {
            let f = fs(cx.s, key);
            let t = cx.tones;
            Cell::new(opt(f.ckpt_restore_s.map(|v| format!("{v:.0}s"))), t.dim)
        },
    )
    .right()
    .drop(2),
    col(
        "PURPOSE",
        10,
        |cx, key| {
            let f = fs(cx.s, key);
            SortKey::Str(&f.purpose)
        },
        |cx, key| {
            let f = fs(cx.s, key);
            let t = cx.tones;
            untrusted(&f.purpose, t.dim)
        },
    )
    .drop(1),
];

fn fs(s: &ClusterState, key: RowKey) -> &Filesystem {
    &s.storage[key as usize]
}

impl TableSource for StorageTable {
    fn id(&self) -> TableId {
        TABLE
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
        detail(cx, key, width)
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        to_json(&cx.s.storage[key as usize])
    }

    fn columns(&self) -> &'static [Column] {
        &COLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.s.storage.get(key as usize).map(|f| ObjKey::Filesystem(f.name.clone()))
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        let s = cx.s;
        out.extend(0..s.storage.len() as RowKey);
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let f = fs(cx.s, key);
        vec![
            f.name.as_str().into(),
            f.mount.as_str().into(),
            f.purpose.as_str().into(),
            f.kind.label().into(),
        ]
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let f = fs(cx.s, key);
        Some(match name {
            "name" => f.name.as_str().into(),
            "kind" | "type" => f.kind.label().into(),
            "mount" => f.mount.as_str().into(),
            "purpose" => f.purpose.as_str().into(),
            _ => return None,
        })
    }

    fn fields(&self) -> &'static [&'static str] {
        &["name", "kind", "type", "mount", "purpose"]
    }
}

/// Seconds until the filesystem is full at the trend of its recorded fill, if it is filling.
fn full_in(s: &ClusterState, key: RowKey) -> Option<i64> {
    let f = s.storage.get(key as usize)?;
    s.storage_history.get(key as usize)?.time_to_full(f.capacity_bytes)
}

/// How much fill history the forecast had.
fn history_span(s: &ClusterState, key: RowKey) -> String {
    let Some(h) = s.storage_history.get(key as usize) else { return "-".into() };
    match (h.used.tail(h.used.len()).next(), h.used.last()) {
        (Some((t0, _)), Some((t1, _))) => super::fmt::dur(t1 - t0),
        _ => "-".into(),
    }
}

/// A forecast's duration to one unit, as precise as a trend is: `45s`, `16m`, `6h`, `3d`.
pub fn about(secs: i64) -> String {
    let s = secs.max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3_600 => format!("{}m", (s + 30) / 60),
        3_600..172_800 => format!("{}h", (s + 1_800) / 3_600),
        _ => format!("{}d", (s + 43_200) / 86_400),
    }
}

pub fn detail<'a>(cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
    let s = cx.s;
    let Some(f) = s.storage.get(key as usize) else { return vec![] };
    let t = cx.tones;
    let g = cx.glyphs;
    let pct = f.used_pct();
    let mut out = vec![
        kv(cx, "name", untrusted(&f.name, t.accent)),
        kv(cx, "mount", untrusted(&f.mount, t.text)),
        kv(cx, "kind", Cell::new(f.kind.label(), t.text)),
        kv(cx, "purpose", untrusted(&f.purpose, t.text)),
        kv(
            cx,
            "used",
            Cell::new(
                format!(
                    "{} {} of {} ({pct}%)",
                    g.bar(u32::from(pct), 20),
                    bytes(f.used_bytes),
                    bytes(f.capacity_bytes)
                ),
                t.level(u32::from(pct), 90, 97),
            ),
        ),
        kv(
            cx,
            "full in",
            match full_in(s, key) {
                Some(secs) => Cell::new(
                    format!("~{} at the fill rate of the last {}", about(secs), history_span(s, key)),
                    if secs < 86_400 { t.warn } else { t.text },
                ),
                None => Cell::new("- (not filling, or too little history)", t.dim),
            },
        ),
        kv(
            cx,
            "checkpt",
            Cell::new(
                format!(
                    "write {}  restore {}",
                    opt(f.ckpt_write_s.map(|v| format!("{v:.0}s"))),
                    opt(f.ckpt_restore_s.map(|v| format!("{v:.0}s")))
                ),
                t.text,
            ),
        ),
    ];
    if let Some(h) = s.storage_history.get(key as usize) {
        let w = (width as usize).saturating_sub(14).min(120);
        out.push(section(cx, "throughput"));
        let max = h.read_mbps.tail(w).chain(h.write_mbps.tail(w)).max().unwrap_or(1);
        out.push(spark_line(
            cx,
            width,
            "read",
            g.spark(h.read_mbps.tail(w), max),
            h.read_mbps.last().map(|v| format!(" {v} MB/s")),
        ));
        out.push(spark_line(
            cx,
            width,
            "write",
            g.spark(h.write_mbps.tail(w), max),
            h.write_mbps.last().map(|v| format!(" {v} MB/s")),
        ));
    }
    out
}
