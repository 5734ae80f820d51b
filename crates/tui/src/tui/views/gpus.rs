//! GPUs: a table of every GPU, and the "wall" heatmap of every GPU coloured by utilisation or
//! temperature.

pub use crate::tables::gpus::*;

use super::super::keymap::Action;
use super::super::widgets::table::Dx;
use super::super::widgets::table::TableSource;
use super::super::widgets::table::TableStates;
use super::super::widgets::{opt, safe};
use super::detail::spark_line;
use super::{KeyCx, Outcome, ViewId, ViewKey};
use crate::model::Gpu;
use crate::model::ObjKey;
use crate::tui::draw::table_with_detail;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use unicode_width::UnicodeWidthStr;

/// What the wall colours by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WallMetric {
    #[default]
    Util,
    Temp,
}

/// The GPUs view's own state: whether the wall is shown, and its scroll and selection, in
/// nodes (state order).
#[derive(Debug, Clone, Default)]
pub struct WallState {
    /// The wall is shown instead of the table.
    pub on: bool,
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

fn wall_cell(cx: &Dx<'_>, failed: bool, v: Option<u8>, selected: bool) -> Span<'static> {
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
pub fn draw_wall(f: &mut Frame, area: Rect, block: Block<'_>, cx: &Dx<'_>, ws: &mut WallState) {
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
        legend.push(super::super::widgets::untrusted_span(&n.name, t.accent));
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
            lines.push(super::super::widgets::line(
                t,
                spark_line(cx, width, "fleet 1h", g.spark_gaps(&ints, 100), last),
            ));
        }
        None => lines.push(super::super::widgets::line(
            t,
            spark_line(
                cx,
                width,
                "cluster",
                g.spark(s.history.util.tail(w).map(u32::from), 100),
                s.history.util.last().map(|v| format!(" {v}%")),
            ),
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

    fn state(&self) -> super::Own {
        Box::new(WallState::default())
    }

    fn draw(&self, f: &mut Frame, area: Rect, cx: &mut super::ViewCx<'_>) {
        let Some(ws) = cx.own.downcast_mut::<WallState>() else { return };
        if !ws.on {
            table_with_detail(f, area, cx, TABLE, "GPUs", true);
            return;
        }
        let metric = match ws.metric {
            WallMetric::Util => "utilisation",
            WallMetric::Temp => "temperature",
        };
        let gpus = cx.dx.s.gpu_count();
        let title = vec![Span::styled(format!(" GPU wall: {gpus} GPUs by {metric} "), cx.dx.theme.title)];
        let blk = crate::tui::draw::bordered(cx.dx.theme, cx.dx.glyphs, title, true);
        draw_wall(f, area, blk, &cx.dx, ws);
    }

    fn opened(&self, name: Option<&str>, own: &mut (dyn std::any::Any + Send)) {
        if let Some(ws) = own.downcast_mut::<WallState>() {
            // `:wall` and `:heatmap` open on the wall; leaving the view closes it.
            ws.on = matches!(name, Some("wall" | "heatmap")) || (name.is_some() && ws.on);
        }
    }

    fn shows_tables(&self, own: &(dyn std::any::Any + Send)) -> bool {
        own.downcast_ref::<WallState>().is_none_or(|ws| !ws.on)
    }

    fn charts(&self, own: &(dyn std::any::Any + Send)) -> Option<crate::model::protocol::Focus> {
        // The heatmap's strip charts the fleet's last hour.
        own.downcast_ref::<WallState>().filter(|ws| ws.on).map(|_| crate::model::protocol::Focus::Fleet)
    }

    fn prepare(
        &self,
        s: &crate::state::ClusterState,
        tables: &TableStates,
        own: &mut (dyn std::any::Any + Send),
    ) {
        // The wall's cursor is the GPU table's selected node (one identity for both).
        if let Some(ws) = own.downcast_mut::<WallState>()
            && let Some(ObjKey::Gpu(g)) = tables[TABLE].selected_id()
            && let Some(ni) = s.node_at(&g.node)
        {
            ws.selected = ni;
        }
    }

    fn on_action(&self, a: Action, k: &mut KeyCx<'_>) -> Option<Outcome> {
        let s = k.cx.s;
        let ws = k.own.downcast_mut::<WallState>().filter(|ws| ws.on)?;
        let nodes = s.nodes.len();
        let rows = match a {
            Action::Enter => {
                // To the node under the cursor.
                let n = s.node_key(ws.selected)?;
                return Some(Outcome::Show(super::nodes::TABLE, ObjKey::Node(n)));
            }
            Action::Back => {
                ws.on = false;
                return Some(Outcome::Done);
            }
            Action::Up => -1,
            Action::Down => 1,
            Action::PageUp => -10,
            Action::PageDown => 10,
            Action::Top => -(nodes as isize),
            Action::Bottom => nodes as isize,
            _ => return None,
        };
        ws.move_rows(rows, nodes);
        // The GPU table selects the node's first GPU, so both follow the same node when the
        // nodes are relisted.
        let ni = ws.selected;
        if let Some(node) = s.node_key(ni)
            && let Some(index) = s.nodes[ni].gpus.first().map(|g| g.index)
        {
            k.tables[TABLE].select_id(&GpusTable, &k.cx, ObjKey::Gpu(crate::model::GpuKey { node, index }));
        }
        Some(Outcome::Done)
    }

    fn keys(&self) -> &'static [ViewKey] {
        static KEYS: [ViewKey; 2] = [
            ViewKey {
                name: "toggle_wall",
                help: "GPUs: table / heatmap wall",
                hint: Some("wall"),
                anywhere: true,
                run: |k| {
                    if let Some(ws) = k.own.downcast_mut::<WallState>() {
                        ws.on = k.opened || !ws.on;
                    }
                    Outcome::Done
                },
            },
            ViewKey {
                name: "toggle_metric",
                help: "wall: utilisation / temperature",
                hint: None,
                anywhere: false,
                run: |k| {
                    if let Some(ws) = k.own.downcast_mut::<WallState>() {
                        ws.metric = match ws.metric {
                            WallMetric::Util => WallMetric::Temp,
                            WallMetric::Temp => WallMetric::Util,
                        }
                    }
                    Outcome::Done
                },
            },
        ];
        &KEYS
    }
}
