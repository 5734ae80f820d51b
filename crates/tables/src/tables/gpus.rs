//! GPUs: a table of every GPU, and the "wall" heatmap of every GPU coloured by utilisation or
//! temperature.

use super::detail::{kv, section, spark_line};
use super::fmt::{ago, opt, untrusted};
use super::table::TableId;
use super::table::{Column, Cx, RowKey, SortKey, TableSource, cluster_cell, col, pack, to_json, unpack};
use super::tone::{Cell, Line};
use crate::model::{Gpu, GpuLocal, Node, throttle_names, xid_info};
use crate::model::{GpuKey, ObjKey};
use crate::state::ClusterState;
use std::borrow::Cow;

pub struct GpusTable;

pub const TABLE: TableId = TableId("gpus");

static COLS: [Column; 12] = [
    col(
        "NODE",
        12,
        |cx, key| {
            let (n, _) = get(cx.s, key);
            SortKey::Str(&n.name)
        },
        |cx, key| {
            let (n, _) = get(cx.s, key);
            let t = cx.tones;
            untrusted(&n.name, t.text)
        },
    ),
    col(
        "GPU",
        3,
        |cx, key| {
            let (_, g) = get(cx.s, key);
            SortKey::Int(i64::from(g.index))
        },
        |cx, key| {
            let (_, g) = get(cx.s, key);
            let t = cx.tones;
            Cell::new(g.index.to_string(), t.dim)
        },
    )
    .right(),
    col(
        "UTIL",
        4,
        |cx, key| {
            let (_, g) = get(cx.s, key);
            let o = |v: Option<u8>| SortKey::Int(v.map_or(-1, i64::from));
            o(g.util)
        },
        |cx, key| {
            let (_, g) = get(cx.s, key);
            let t = cx.tones;
            let pct = |v: Option<u8>| opt(v.map(|v| format!("{v}%")));
            Cell::new(pct(g.util), t.text)
        },
    )
    .right(),
    col(
        "TENS",
        4,
        |cx, key| {
            let (_, g) = get(cx.s, key);
            let o = |v: Option<u8>| SortKey::Int(v.map_or(-1, i64::from));
            o(g.tensor_active)
        },
        |cx, key| {
            let (_, g) = get(cx.s, key);
            let t = cx.tones;
            let pct = |v: Option<u8>| opt(v.map(|v| format!("{v}%")));
            Cell::new(pct(g.tensor_active), t.dim)
        },
    )
    .right()
    .drop(3),
    col(
        "MEM",
        4,
        |cx, key| {
            let (_, g) = get(cx.s, key);
            let o = |v: Option<u8>| SortKey::Int(v.map_or(-1, i64::from));
            o(g.mem_used_pct())
        },
        |cx, key| {
            let (_, g) = get(cx.s, key);
            let t = cx.tones;
            let pct = |v: Option<u8>| opt(v.map(|v| format!("{v}%")));
            Cell::new(pct(g.mem_used_pct()), t.text)
        },
    )
    .right(),
    col(
        "TEMP",
        4,
        |cx, key| {
            let (_, g) = get(cx.s, key);
            let o = |v: Option<u8>| SortKey::Int(v.map_or(-1, i64::from));
            o(g.temp_c)
        },
        |cx, key| {
            let (_, g) = get(cx.s, key);
            let t = cx.tones;
            let temp = g.temp_c.unwrap_or(0);
            Cell::new(opt(g.temp_c.map(|c| format!("{c}C"))), t.level(u32::from(temp), 80, 88))
        },
    )
    .right(),
    col(
        "POWER",
        5,
        |cx, key| {
            let (_, g) = get(cx.s, key);
            SortKey::Int(g.power_w.map_or(-1, i64::from))
        },
        |cx, key| {
            let (_, g) = get(cx.s, key);
            let t = cx.tones;
            Cell::new(opt(g.power_w.map(|w| format!("{w}W"))), t.dim)
        },
    )
    .right()
    .drop(2),
    col(
        "ECC",
        7,
        |cx, key| {
            let (_, g) = get(cx.s, key);
            SortKey::Int(i64::from(g.ecc.dbe) * 1_000_000 + i64::from(g.ecc.sbe))
        },
        |cx, key| {
            let (_, g) = get(cx.s, key);
            let t = cx.tones;
            Cell::new(format!("{}/{}", g.ecc.sbe, g.ecc.dbe), if g.ecc.dbe > 0 { t.crit } else { t.dim })
        },
    )
    .right()
    .drop(4),
    col(
        "XID",
        4,
        |cx, key| {
            let (_, g) = get(cx.s, key);
            SortKey::Int(g.xid.map_or(-1, |x| i64::from(x.code)))
        },
        |cx, key| {
            let (_, g) = get(cx.s, key);
            let t = cx.tones;
            match g.xid {
                Some(x) => {
                    Cell::new(x.code.to_string(), if xid_info(x.code).fatal { t.crit } else { t.warn })
                }
                None => Cell::new("-", t.dim),
            }
        },
    )
    .right(),
    col(
        "MODEL",
        12,
        |cx, key| {
            let (_, g) = get(cx.s, key);
            SortKey::Str(&g.model)
        },
        |cx, key| {
            let (_, g) = get(cx.s, key);
            let t = cx.tones;
            untrusted(g.model.trim_start_matches("NVIDIA "), t.dim)
        },
    )
    .drop(5),
    col(
        "JOB",
        8,
        |cx, key| {
            let (_, g) = get(cx.s, key);
            SortKey::Int(g.job.map_or(-1, |j| j as i64))
        },
        |cx, key| {
            let (_, g) = get(cx.s, key);
            let t = cx.tones;
            Cell::new(opt(g.job), t.text)
        },
    ),
    col(
        "CLUSTER",
        8,
        |cx, k| SortKey::Str(cx.s.cluster_of(&get(cx.s, k).0.cluster)),
        |cx, k| cluster_cell(cx, &get(cx.s, k).0.cluster),
    )
    .drop(9)
    .fleet(),
];

fn get(s: &ClusterState, key: RowKey) -> (&Node, &Gpu) {
    let (n, g) = unpack(key);
    (&s.nodes[n], &s.nodes[n].gpus[g])
}

impl TableSource for GpusTable {
    fn id(&self) -> TableId {
        TABLE
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
        detail(cx, key, width)
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        let (n, g) = unpack(key);
        let node = &cx.s.nodes[n];
        // One flat object per GPU: its node, then the GPU's own fields.
        super::table::with_field("node", node.name.as_str(), to_json(&node.gpus[g]))
    }

    fn columns(&self) -> &'static [Column] {
        &COLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        let (ni, gi) = unpack(key);
        let index = cx.s.nodes.get(ni)?.gpus.get(gi)?.index;
        Some(ObjKey::Gpu(GpuKey { node: cx.s.node_key(ni)?, index }))
    }

    fn locate(&self, cx: &Cx<'_>, id: &ObjKey) -> Option<RowKey> {
        let ObjKey::Gpu(g) = id else { return None };
        let ni = cx.s.node_at(&g.node)?;
        let gi = cx.s.nodes[ni].gpus.iter().position(|x| x.index == g.index)?;
        Some(pack(ni, gi))
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        let s = cx.s;
        for (i, n) in s.nodes.iter().enumerate() {
            out.extend((0..n.gpus.len()).map(|g| pack(i, g)));
        }
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let (n, g) = get(cx.s, key);
        vec![n.name.as_str().into(), g.uuid.as_str().into(), g.model.as_str().into()]
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let (n, g) = get(cx.s, key);
        Some(match name {
            "cluster" => cx.s.cluster_of(&n.cluster).as_str().into(),
            "node" => n.name.as_str().into(),
            "uuid" => g.uuid.as_str().into(),
            "model" => g.model.as_str().into(),
            "job" => g.job?.to_string().into(),
            "xid" => g.xid?.code.to_string().into(),
            "pool" => n.pool.as_str().into(),
            _ => return None,
        })
    }

    fn fields(&self) -> &'static [&'static str] {
        &["cluster", "node", "uuid", "model", "job", "xid", "pool"]
    }

    fn default_sort(&self) -> (usize, bool) {
        (0, false)
    }
}

/// The rows only the local NVML source fills: clocks, throttle reasons, engines, memory
/// health, NVLinks. Throttling that means heat or a hardware brake is a warning; the power cap
/// under load is normal.
fn local_rows<'a>(cx: &Cx<'a>, l: &GpuLocal, out: &mut Vec<Line<'a>>) {
    let t = cx.tones;
    let mhz = |v: Option<u32>| v.map_or_else(|| "-".into(), |v| format!("{v} MHz"));
    out.push(kv(
        cx,
        "clocks",
        Cell::new(format!("SM {}, memory {}", mhz(l.clock_sm_mhz), mhz(l.clock_mem_mhz)), t.text),
    ));
    if let Some(bits) = l.throttle {
        let names = throttle_names(bits);
        let serious = names
            .iter()
            .any(|n| matches!(*n, "hw_slowdown" | "sw_thermal" | "hw_thermal" | "hw_power_brake"));
        let text = if names.is_empty() { "none".to_string() } else { names.join(", ") };
        out.push(kv(cx, "throttle", Cell::new(text, if serious { t.warn } else { t.text })));
    }
    let pct = |v: Option<u8>| v.map_or_else(|| "-".into(), |v| format!("{v}%"));
    out.push(kv(
        cx,
        "engines",
        Cell::new(
            format!("memory {}, encoder {}, decoder {}", pct(l.mem_util), pct(l.enc_util), pct(l.dec_util)),
            t.text,
        ),
    ));
    if let (Some(c), Some(u)) = (l.remap_correctable, l.remap_uncorrectable) {
        let mut text = format!("{c} correctable, {u} uncorrectable remapped");
        let style = if l.remap_failure {
            text.push_str("; remap failed: replace");
            t.crit
        } else if l.remap_pending {
            text.push_str("; reset pending");
            t.warn
        } else {
            t.text
        };
        out.push(kv(cx, "rows", Cell::new(text, style)));
    } else if l.retired_sbe.is_some() || l.retired_dbe.is_some() {
        let dbe = l.retired_dbe.unwrap_or(0);
        out.push(kv(
            cx,
            "retired",
            Cell::new(
                format!("{} single-bit, {dbe} double-bit pages", l.retired_sbe.unwrap_or(0)),
                if dbe > 0 { t.warn } else { t.text },
            ),
        ));
    }
    if l.nvlinks > 0 {
        out.push(kv(
            cx,
            "nvlink",
            Cell::new(
                format!("{}/{} links up", l.nvlinks_active, l.nvlinks),
                if l.nvlinks_active < l.nvlinks { t.warn } else { t.text },
            ),
        ));
    }
}

pub fn detail<'a>(cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
    let s = cx.s;
    let (ni, gi) = unpack(key);
    let Some(n) = s.nodes.get(ni) else { return vec![] };
    let Some(g) = n.gpus.get(gi) else { return vec![] };
    let t = cx.tones;
    let mut out = vec![
        kv(cx, "gpu", Cell::new(format!("{}/gpu{}", super::fmt::safe(&n.name), g.index), t.accent)),
        kv(cx, "uuid", untrusted(&g.uuid, t.text)),
        kv(cx, "model", untrusted(&g.model, t.text)),
        kv(cx, "memory", Cell::new(format!("{} / {} MiB", opt(g.mem_used_mib), g.mem_total_mib), t.text)),
        kv(cx, "power", Cell::new(format!("{} / {} W", opt(g.power_w), g.power_limit_w), t.text)),
        kv(cx, "tensor", Cell::new(opt(g.tensor_active.map(|v| format!("{v}%"))), t.text)),
        kv(
            cx,
            "ecc",
            Cell::new(
                format!("{} corrected, {} uncorrectable", g.ecc.sbe, g.ecc.dbe),
                if g.ecc.dbe > 0 { t.crit } else { t.text },
            ),
        ),
        kv(cx, "job", Cell::new(opt(g.job), t.text)),
    ];
    if g.links.any() {
        let l = &g.links;
        out.push(kv(
            cx,
            "links",
            Cell::new(
                format!(
                    "NVLink {} CRC, {} replays; PCIe {} replays (in the window)",
                    l.nvlink_crc, l.nvlink_replay, l.pcie_replay
                ),
                t.warn,
            ),
        ));
    }
    if let Some(l) = g.local.as_deref() {
        local_rows(cx, l, &mut out);
    }
    if let Some(since) = g.idle_since {
        out.push(kv(
            cx,
            "idle",
            Cell::new(format!("allocated but idle since {}", ago(s.now, since)), t.warn),
        ));
    }
    if let Some(x) = g.xid {
        let info = xid_info(x.code);
        out.push(kv(
            cx,
            "xid",
            Cell::new(format!("{} {} (×{}, {})", x.code, info.name, x.count, ago(s.now, x.at)), t.crit),
        ));
        out.push(kv(cx, "action", Cell::new(info.action, t.warn)));
    }
    if !g.processes.is_empty() {
        out.push(section(cx, "processes"));
        for p in &g.processes {
            out.push(super::nodes::proc_line(cx, p, false));
        }
    }
    for m in &g.mig {
        out.push(kv(
            cx,
            "mig",
            Cell::new(
                format!("{} {}", super::fmt::safe(&m.profile), opt(m.job.map(|j| format!("job {j}")))),
                t.info,
            ),
        ));
    }
    let w = (width as usize).saturating_sub(14).min(120);
    let util = s.gpu_util_history(ni, gi, w);
    let temp = s.gpu_temp_history(ni, gi, w);
    if !util.is_empty() || !temp.is_empty() {
        out.push(section(cx, "history"));
        let last = util.last().map(|v| format!(" {v}%"));
        out.push(spark_line(cx, width, "util", cx.glyphs.spark(util.into_iter().map(u32::from), 100), last));
        let last = temp.last().map(|v| format!(" {v}C"));
        out.push(spark_line(cx, width, "temp", cx.glyphs.spark(temp.into_iter().map(u32::from), 100), last));
    }
    out.extend(super::detail::focus_history(
        cx,
        &crate::model::protocol::Focus::Gpu(n.name.clone(), g.index),
        width,
    ));
    out
}
