//! GPUs: a table of every GPU, and the "wall" heatmap of every GPU coloured by utilisation or
//! temperature.

use super::super::widgets::table::{
    Column, Cx, RowKey, SortKey, TableSource, cluster_cell, col, pack, to_json, unpack,
};
use super::super::widgets::{ago, opt, safe, untrusted};
use super::detail::{kv, section, spark_line};
use super::{TableId, ViewId, ViewKey};
use crate::model::{Gpu, GpuLocal, Node, throttle_names, xid_info};
use crate::model::{GpuKey, ObjKey};
use crate::state::ClusterState;
use crate::tui::app::App;
use crate::tui::draw::table_with_detail;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use std::borrow::Cow;
use unicode_width::UnicodeWidthStr;

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
            let t = cx.theme;
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
            let t = cx.theme;
            Span::styled(g.index.to_string(), t.dim)
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
            let t = cx.theme;
            let pct = |v: Option<u8>| opt(v.map(|v| format!("{v}%")));
            Span::styled(pct(g.util), t.text)
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
            let t = cx.theme;
            let pct = |v: Option<u8>| opt(v.map(|v| format!("{v}%")));
            Span::styled(pct(g.tensor_active), t.dim)
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
            let t = cx.theme;
            let pct = |v: Option<u8>| opt(v.map(|v| format!("{v}%")));
            Span::styled(pct(g.mem_used_pct()), t.text)
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
            let t = cx.theme;
            let temp = g.temp_c.unwrap_or(0);
            Span::styled(opt(g.temp_c.map(|c| format!("{c}C"))), t.level(u32::from(temp), 80, 88))
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
            let t = cx.theme;
            Span::styled(opt(g.power_w.map(|w| format!("{w}W"))), t.dim)
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
            let t = cx.theme;
            Span::styled(format!("{}/{}", g.ecc.sbe, g.ecc.dbe), if g.ecc.dbe > 0 { t.crit } else { t.dim })
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
            let t = cx.theme;
            match g.xid {
                Some(x) => {
                    Span::styled(x.code.to_string(), if xid_info(x.code).fatal { t.crit } else { t.warn })
                }
                None => Span::styled("-", t.dim),
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
            let t = cx.theme;
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
            let t = cx.theme;
            Span::styled(opt(g.job), t.text)
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

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<ratatui::text::Line<'a>> {
        detail(cx, key, width)
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        let (n, g) = unpack(key);
        let node = &cx.s.nodes[n];
        // One flat object per GPU: its node, then the GPU's own fields.
        crate::tui::widgets::table::with_field("node", node.name.as_str(), to_json(&node.gpus[g]))
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
    let t = cx.theme;
    let mhz = |v: Option<u32>| v.map_or_else(|| "-".into(), |v| format!("{v} MHz"));
    out.push(kv(
        cx,
        "clocks",
        Span::styled(format!("SM {}, memory {}", mhz(l.clock_sm_mhz), mhz(l.clock_mem_mhz)), t.text),
    ));
    if let Some(bits) = l.throttle {
        let names = throttle_names(bits);
        let serious = names
            .iter()
            .any(|n| matches!(*n, "hw_slowdown" | "sw_thermal" | "hw_thermal" | "hw_power_brake"));
        let text = if names.is_empty() { "none".to_string() } else { names.join(", ") };
        out.push(kv(cx, "throttle", Span::styled(text, if serious { t.warn } else { t.text })));
    }
    let pct = |v: Option<u8>| v.map_or_else(|| "-".into(), |v| format!("{v}%"));
    out.push(kv(
        cx,
        "engines",
        Span::styled(
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
        out.push(kv(cx, "rows", Span::styled(text, style)));
    } else if l.retired_sbe.is_some() || l.retired_dbe.is_some() {
        let dbe = l.retired_dbe.unwrap_or(0);
        out.push(kv(
            cx,
            "retired",
            Span::styled(
                format!("{} single-bit, {dbe} double-bit pages", l.retired_sbe.unwrap_or(0)),
                if dbe > 0 { t.warn } else { t.text },
            ),
        ));
    }
    if l.nvlinks > 0 {
        out.push(kv(
            cx,
            "nvlink",
            Span::styled(
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
    let t = cx.theme;
    let mut out = vec![
        kv(
            cx,
            "gpu",
            Span::styled(format!("{}/gpu{}", super::super::widgets::safe(&n.name), g.index), t.accent),
        ),
        kv(cx, "uuid", untrusted(&g.uuid, t.text)),
        kv(cx, "model", untrusted(&g.model, t.text)),
        kv(cx, "memory", Span::styled(format!("{} / {} MiB", opt(g.mem_used_mib), g.mem_total_mib), t.text)),
        kv(cx, "power", Span::styled(format!("{} / {} W", opt(g.power_w), g.power_limit_w), t.text)),
        kv(cx, "tensor", Span::styled(opt(g.tensor_active.map(|v| format!("{v}%"))), t.text)),
        kv(
            cx,
            "ecc",
            Span::styled(
                format!("{} corrected, {} uncorrectable", g.ecc.sbe, g.ecc.dbe),
                if g.ecc.dbe > 0 { t.crit } else { t.text },
            ),
        ),
        kv(cx, "job", Span::styled(opt(g.job), t.text)),
    ];
    if g.links.any() {
        let l = &g.links;
        out.push(kv(
            cx,
            "links",
            Span::styled(
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
            Span::styled(format!("allocated but idle since {}", ago(s.now, since)), t.warn),
        ));
    }
    if let Some(x) = g.xid {
        let info = xid_info(x.code);
        out.push(kv(
            cx,
            "xid",
            Span::styled(format!("{} {} (×{}, {})", x.code, info.name, x.count, ago(s.now, x.at)), t.crit),
        ));
        out.push(kv(cx, "action", Span::styled(info.action, t.warn)));
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
            Span::styled(
                format!(
                    "{} {}",
                    super::super::widgets::safe(&m.profile),
                    opt(m.job.map(|j| format!("job {j}")))
                ),
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

/// What the wall colours by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WallMetric {
    #[default]
    Util,
    Temp,
}

/// Scroll and selection of the wall, in nodes (state order).
#[derive(Debug, Clone, Default)]
pub struct WallState {
    pub metric: WallMetric,
    pub selected: usize,
    pub offset_rows: usize,
    /// Nodes per row at the last draw (for moving up/down by rows).
    pub per_row: usize,
    /// What a cell stood for at the last draw.
    pub level: WallLevel,
}

impl WallState {
    pub fn move_rows(&mut self, rows: isize, nodes: usize) {
        let step = self.per_row.max(1) as isize;
        let max = nodes.saturating_sub(1) as isize;
        self.selected = (self.selected as isize + rows * step).clamp(0, max.max(0)) as usize;
    }
}

/// How much one cell of the wall stands for: the wall falls back a level when the cluster does
/// not fit the screen (2,000 nodes of 8 GPUs at 80x24).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WallLevel {
    /// One cell per GPU, nodes separated by a space.
    #[default]
    Gpu,
    /// One cell per node (the mean of its GPUs; `X` when one has failed).
    Node,
    /// One row per pool, each cell a run of its nodes.
    Pool,
}

/// A cell's level (0-100) for the metric, or `None` when unknown.
fn gpu_level(gpu: &Gpu, metric: WallMetric) -> Option<u8> {
    match metric {
        WallMetric::Util => gpu.util,
        // 30 C ... 95 C onto 0-100
        WallMetric::Temp => gpu.temp_c.map(|c| ((u32::from(c).saturating_sub(30)) * 100 / 65).min(100) as u8),
    }
}

/// What a group of GPUs shows: failed when one is, else the mean of the known levels.
fn group_cell(gpus: impl Iterator<Item = (bool, Option<u8>)>) -> (bool, Option<u8>) {
    let (mut failed, mut sum, mut n) = (false, 0u32, 0u32);
    for (f, v) in gpus {
        failed |= f;
        if let Some(v) = v {
            sum += u32::from(v);
            n += 1;
        }
    }
    (failed, (n > 0).then(|| ((sum + n / 2) / n) as u8))
}

fn wall_cell(cx: &Cx<'_>, failed: bool, v: Option<u8>, selected: bool) -> Span<'static> {
    let t = cx.theme;
    let (glyph, style) = match (failed, v) {
        (true, _) => ("X", t.crit),
        (false, None) => ("?", t.dim),
        (false, Some(v)) => match t.heat(v) {
            Some(c) => (cx.glyphs.full(), Style::default().fg(c)),
            None => (cx.glyphs.level(v), t.text),
        },
    };
    Span::styled(glyph, if selected { style.add_modifier(Modifier::REVERSED) } else { style })
}

/// Scrolls `offset` so `row` is within `body_h` rows.
fn follow(offset: &mut usize, row: usize, body_h: usize) {
    if row < *offset {
        *offset = row;
    } else if row >= *offset + body_h {
        *offset = row + 1 - body_h;
    }
}

/// Draws every GPU as one cell, nodes as groups separated by a space, each row labelled with
/// its first node; when that does not fit, one cell per node, then one row per pool. A legend
/// and the cluster utilisation strip below.
pub fn draw_wall(f: &mut Frame, area: Rect, block: Block<'_>, cx: &Cx<'_>, ws: &mut WallState) {
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height < 3 || inner.width < 4 {
        return;
    }
    let s = cx.s;
    let t = cx.theme;
    let g = cx.glyphs;
    let width = inner.width as usize;
    let body_h = inner.height as usize - 2;
    let gpn = s.nodes.iter().map(|n| n.gpus.len().max(n.gpu_slots as usize)).max().unwrap_or(1).max(1);
    ws.selected = ws.selected.min(s.nodes.len().saturating_sub(1));
    let metric = ws.metric;
    // Row labels when there is room for them beside at least a few cells.
    let label_w = |names: &mut dyn Iterator<Item = usize>| {
        let w = names.max().unwrap_or(0).min(14);
        if w > 0 && width >= w + 1 + 24 { w + 1 } else { 0 }
    };
    let node_lw = label_w(&mut s.nodes.iter().map(|n| safe(&n.name).width()));
    let per_row_gpu = (width.saturating_sub(node_lw) / (gpn + 1)).max(1);
    let per_row_node = width.saturating_sub(node_lw).max(1);
    let level = if s.nodes.len().div_ceil(per_row_gpu) <= body_h {
        WallLevel::Gpu
    } else if s.nodes.len().div_ceil(per_row_node) <= body_h {
        WallLevel::Node
    } else {
        WallLevel::Pool
    };
    ws.level = level;
    let label = |text: &str, w: usize| -> Span<'static> {
        let text = safe(text);
        let cut: String = text.chars().take(w.saturating_sub(1)).collect();
        Span::styled(format!("{cut:<w$}", w = w), t.dim)
    };
    let node_cell = |ni: usize| {
        let n = &s.nodes[ni];
        let (failed, v) = group_cell(n.gpus.iter().map(|gpu| (gpu.is_failed(), gpu_level(gpu, metric))));
        (failed || (n.gpus.is_empty() && n.gpu_slots > 0), v)
    };
    let mut lines = Vec::with_capacity(inner.height as usize);
    match level {
        WallLevel::Gpu | WallLevel::Node => {
            let per_row = if level == WallLevel::Gpu { per_row_gpu } else { per_row_node };
            ws.per_row = per_row;
            let rows_total = s.nodes.len().div_ceil(per_row);
            follow(&mut ws.offset_rows, ws.selected / per_row, body_h);
            for row in ws.offset_rows..(ws.offset_rows + body_h).min(rows_total) {
                let first = row * per_row;
                let mut spans = Vec::with_capacity(per_row * (gpn + 1) + 1);
                if node_lw > 0 {
                    spans.push(label(&s.nodes[first].name, node_lw));
                }
                for ni in first..(first + per_row).min(s.nodes.len()) {
                    let selected = ni == ws.selected;
                    if level == WallLevel::Node {
                        let (failed, v) = node_cell(ni);
                        spans.push(wall_cell(cx, failed, v, selected));
                        continue;
                    }
                    let n = &s.nodes[ni];
                    for k in 0..gpn {
                        spans.push(match n.gpus.get(k) {
                            None => Span::styled(" ", t.dim),
                            Some(gpu) => wall_cell(cx, gpu.is_failed(), gpu_level(gpu, metric), selected),
                        });
                    }
                    spans.push(Span::raw(" "));
                }
                lines.push(Line::from(spans));
            }
        }
        WallLevel::Pool => {
            let mut pools: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
            for (i, n) in s.nodes.iter().enumerate() {
                pools.entry(n.pool.as_str()).or_default().push(i);
            }
            let pool_lw = label_w(&mut pools.keys().map(|p| safe(p).width())).max(1);
            // Each row ends with its node count.
            let count_w = pools.values().map(|v| v.len().to_string().len() + 1).max().unwrap_or(2);
            let cells = width.saturating_sub(pool_lw + count_w).max(1);
            let sel_pool = s.nodes.get(ws.selected).map(|n| n.pool.as_str());
            let sel_row = pools.keys().position(|p| Some(*p) == sel_pool).unwrap_or(0);
            follow(&mut ws.offset_rows, sel_row, body_h);
            ws.per_row = 1;
            for (pool, nodes) in pools.iter().skip(ws.offset_rows).take(body_h) {
                let chunk = nodes.len().div_ceil(cells).max(1);
                ws.per_row = ws.per_row.max(chunk);
                let mut spans = vec![label(pool, pool_lw)];
                for run in nodes.chunks(chunk) {
                    let (failed, v) = group_cell(run.iter().map(|&ni| node_cell(ni)));
                    spans.push(wall_cell(cx, failed, v, run.contains(&ws.selected)));
                }
                let nodes_n = nodes.len();
                spans.push(Span::styled(format!(" {nodes_n}"), t.dim));
                lines.push(Line::from(spans));
            }
        }
    }
    while lines.len() < body_h {
        lines.push(Line::raw(""));
    }
    let sel = s.nodes.get(ws.selected);
    let what = match metric {
        WallMetric::Util => "utilisation",
        WallMetric::Temp => "temperature 30-95C",
    };
    let mut legend = vec![Span::styled(format!("{what}: "), t.dim)];
    for v in [0u8, 25, 50, 75, 100] {
        match t.heat(v) {
            Some(c) => legend.push(Span::styled(g.full(), Style::default().fg(c))),
            None => legend.push(Span::styled(g.level(v), t.text)),
        }
    }
    let cell = match ws.level {
        WallLevel::Gpu => "",
        WallLevel::Node => "cell=node  ",
        WallLevel::Pool => "row=pool, cell=nodes  ",
    };
    legend.push(Span::styled(format!(" low-high  X failed  {cell}"), t.dim));
    if let Some(n) = sel {
        legend.push(untrusted(&n.name, t.accent));
        legend.push(Span::styled(
            format!(
                " {} util {} max {}",
                n.state.label(),
                opt(n.mean_util().map(|u| format!("{u:.0}%"))),
                opt(n.max_temp().map(|c| format!("{c}C")))
            ),
            t.text,
        ));
    }
    lines.push(Line::from(legend));
    let w = (inner.width as usize).saturating_sub(16);
    // The strip has no border of its own: as wide as a bordered pane two columns wider.
    let width = inner.width.saturating_add(2);
    // The fleet's last hour when the history source has it, else the live ring.
    let hour = s
        .focus_history
        .as_ref()
        .filter(|h| h.focus == crate::model::protocol::Focus::Fleet)
        .and_then(|h| h.series("util"));
    match hour {
        Some(util) => {
            let cols = super::detail::resample(util, w);
            let ints: Vec<Option<u32>> = cols.iter().map(|v| v.map(|x| x.max(0.0).round() as u32)).collect();
            let last = util.iter().rev().find_map(|v| *v).map(|v| format!(" {v:.0}%"));
            lines.push(spark_line(cx, width, "fleet 1h", g.spark_gaps(&ints, 100), last));
        }
        None => lines.push(spark_line(
            cx,
            width,
            "cluster",
            g.spark(s.history.util.tail(w).map(u32::from), 100),
            s.history.util.last().map(|v| format!(" {v}%")),
        )),
    }
    f.render_widget(Paragraph::new(lines), inner);
}

/// GPUs: every GPU as a table row, or all of them as a heatmap wall (`w`).
pub struct View;

pub const ID: ViewId = ViewId("gpus");

impl super::View for View {
    fn id(&self) -> ViewId {
        ID
    }

    fn title(&self) -> &'static str {
        "GPUs"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["gpu", "wall", "heatmap"]
    }

    fn tables(&self) -> &'static [&'static dyn TableSource] {
        &[&GpusTable]
    }

    fn draw(&self, f: &mut Frame, area: Rect, app: &mut App) {
        if !app.ui.wall {
            table_with_detail(f, area, app, TABLE, "GPUs", true);
            return;
        }
        let metric = match app.ui.wall_state.metric {
            WallMetric::Util => "utilisation",
            WallMetric::Temp => "temperature",
        };
        let gpus = app.state().gpu_count();
        let title = vec![Span::styled(format!(" GPU wall: {gpus} GPUs by {metric} "), app.theme.title)];
        let blk = crate::tui::draw::block(app, title, true);
        let mut ws = std::mem::take(&mut app.ui.wall_state);
        draw_wall(f, area, blk, &app.cx(), &mut ws);
        app.ui.wall_state = ws;
    }

    fn keys(&self) -> &'static [ViewKey] {
        static KEYS: [ViewKey; 2] = [
            ViewKey {
                name: "toggle_wall",
                help: "GPUs: table / heatmap wall",
                hint: Some("wall"),
                anywhere: true,
                run: |app, opened| app.ui.wall = opened || !app.ui.wall,
            },
            ViewKey {
                name: "toggle_metric",
                help: "wall: utilisation / temperature",
                hint: None,
                anywhere: false,
                run: |app, _| {
                    app.ui.wall_state.metric = match app.ui.wall_state.metric {
                        WallMetric::Util => WallMetric::Temp,
                        WallMetric::Temp => WallMetric::Util,
                    }
                },
            },
        ];
        &KEYS
    }
}
