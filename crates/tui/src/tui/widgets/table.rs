//! Drawing a table: the table model ([`crate::tables::table`]) lays out and sorts the rows; this
//! draws only the visible ones, each cell in the theme's style for its tone.

use super::super::theme::Theme;
pub use crate::tables::table::*;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use unicode_width::UnicodeWidthStr;

/// What the console draws with: the table model's context ([`Cx`], which it derefs to) and
/// the theme its tones are drawn in.
pub struct Dx<'a> {
    pub cx: Cx<'a>,
    pub theme: &'a Theme,
}

impl<'a> std::ops::Deref for Dx<'a> {
    type Target = Cx<'a>;
    fn deref(&self) -> &Cx<'a> {
        &self.cx
    }
}

/// Draws the table inside `block`, scrolled so the selection is visible. Only visible rows are
/// rendered.
pub fn render<S: TableSource + ?Sized>(
    f: &mut Frame,
    area: Rect,
    block: Block<'_>,
    src: &S,
    st: &mut TableState,
    cx: &Dx<'_>,
    focused: bool,
) {
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    let cols = src.columns();
    let body_h = inner.height.saturating_sub(1) as usize;
    if st.selected < st.offset {
        st.offset = st.selected;
    } else if body_h > 0 && st.selected >= st.offset + body_h {
        st.offset = st.selected + 1 - body_h;
    }
    st.offset = st.offset.min(st.rows.len().saturating_sub(body_h.max(1)));
    let t = cx.theme;
    let arrow = |i: usize| {
        if i == st.sort_col { if st.desc { cx.glyphs.down() } else { cx.glyphs.up() } } else { "" }
    };
    // The visible rows' cells, once: they are measured, then drawn.
    let visible: Vec<(usize, RowKey, bool, Vec<Span>)> = st
        .rows
        .iter()
        .enumerate()
        .skip(st.offset)
        .take(body_h)
        .map(|(n, &key)| {
            let marked = src.marked(cx, key);
            let mut cells: Vec<Span> = cols.iter().map(|c| super::span(t, (c.cell)(cx, key))).collect();
            if marked && let Some(first) = cells.first_mut() {
                // The mark shows as text too, so it survives NO_COLOR and monochrome terminals.
                first.content = format!("*{}", first.content).into();
            }
            if n == st.selected
                && focused
                && !t.cursor.is_empty()
                && let Some(first) = cells.first_mut()
            {
                // So does the cursor, where the theme asks (monochrome: reverse video is CRIT too).
                first.content = format!("{}{}", t.cursor, first.content).into();
            }
            (n, key, marked, cells)
        })
        .collect();
    let content: Vec<usize> = (0..cols.len())
        .map(|i| {
            if !cols[i].shown_for(cx.s) {
                return 0;
            }
            let head = cols[i].name.width() + arrow(i).width();
            visible.iter().map(|(_, _, _, c)| c[i].content.width()).fold(head, usize::max)
        })
        .collect();
    let shown = layout_for(cols, &content, inner.width, cx.s.is_fleet());
    let mut lines = Vec::with_capacity(body_h + 1);
    let header: Vec<Span> = shown
        .iter()
        .flat_map(|&(i, w)| {
            // The sort arrow stays when the header is cut: `PRI~▼`.
            let a = arrow(i);
            let name = if cols[i].name.width() + a.width() > w && !a.is_empty() {
                format!("{}{a}", pad(cols[i].name, w.saturating_sub(a.width()), false))
            } else {
                format!("{}{a}", cols[i].name)
            };
            [Span::styled(pad(&name, w, cols[i].right), t.header), Span::raw(" ")]
        })
        .collect();
    lines.push(Line::from(header));
    if st.rows.is_empty() {
        let msg = if st.filter.is_empty() { "no rows" } else { "no rows match the filter (esc clears it)" };
        lines.push(Line::styled(msg, t.dim));
    }
    for (n, _key, marked, cells) in visible {
        let selected = n == st.selected;
        let mut spans = Vec::with_capacity(shown.len() * 2);
        for &(i, w) in &shown {
            let cell = &cells[i];
            let style = match (selected && focused, marked) {
                (true, _) => t.selected,
                (false, true) => t.marked,
                _ => cell.style,
            };
            spans.push(Span::styled(pad(&cell.content, w, cols[i].right), style));
            spans.push(Span::styled(" ", if selected && focused { t.selected } else { Style::default() }));
        }
        lines.push(Line::from(spans));
    }
    f.render_widget(Paragraph::new(lines), inner);
}
