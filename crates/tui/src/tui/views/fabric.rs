//! Fabric: per node the fabric ports in short and the last acceptance (NCCL all_reduce) result
//! with its busbw trend and drift badges; the suspect nodes ranked by evidence; and every
//! InfiniBand/RoCE/EFA port with its state, rate, errors and flaps.

pub use crate::tables::fabric::*;

use super::super::widgets::table::TableSource;
use super::ViewId;
use crate::tui::draw::table_with_detail;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Span;

/// Fabric: suspect nodes, every node's ports and acceptance results, and the ports.
pub struct View;

pub const ID: ViewId = ViewId("fabric");

impl super::View for View {
    fn id(&self) -> ViewId {
        ID
    }

    fn title(&self) -> &'static str {
        "Fabric"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["fab", "ib", "net"]
    }

    fn tables(&self) -> &'static [&'static dyn TableSource] {
        &[&NodesTable, &PortsTable]
    }

    fn draw(&self, f: &mut Frame, area: Rect, cx: &mut super::ViewCx<'_>) {
        let n = crate::state::suspects(cx.dx.s).len();
        let wide = area.width >= 140;
        let most = if wide { 12 } else { 7 };
        let h = (n.max(1) as u16 + 2).min(most).min(area.height / 3).max(3);
        let [suspects, tables] = Layout::vertical([Constraint::Length(h), Constraint::Min(3)]).areas(area);
        let focus = *cx.focus;
        if cx.detail && !wide {
            let (id, name) = if focus == 0 { (NODES, "Nodes") } else { (PORTS, "Ports") };
            table_with_detail(f, area, cx, id, name, true);
            return;
        }
        let [first, second] = if wide {
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(tables)
        } else {
            Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(tables)
        };
        table_with_detail(f, first, cx, NODES, "Nodes: ports and acceptance", focus == 0);
        table_with_detail(f, second, cx, PORTS, "Ports", focus == 1);
        let t = cx.dx.theme;
        let title = vec![
            Span::styled(" Suspect nodes ", t.title),
            Span::styled(format!("[{n}] fail > degraded > drift > ports "), t.dim),
        ];
        let b = crate::tui::draw::bordered(t, cx.dx.glyphs, title, false);
        let inner = b.inner(suspects);
        let lines =
            super::super::widgets::lines(t, suspect_lines(&cx.dx, inner.width, inner.height as usize));
        f.render_widget(ratatui::widgets::Paragraph::new(lines).block(b), suspects);
    }
}
