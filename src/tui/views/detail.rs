//! Building blocks of detail panes.

use super::super::widgets::table::Cx;
use ratatui::text::{Line, Span};

/// `label   value`
pub fn kv<'a>(cx: &Cx<'a>, label: &str, value: Span<'a>) -> Line<'a> {
    Line::from(vec![Span::styled(format!("{label:<9} "), cx.theme.dim), value])
}

/// A section heading.
pub fn section<'a>(cx: &Cx<'a>, title: &str) -> Line<'a> {
    Line::styled(format!("-- {title}"), cx.theme.title)
}

/// `label   ▁▂▅▇ 42%`
pub fn spark_line<'a>(cx: &Cx<'a>, label: &str, spark: String, last: Option<String>) -> Line<'a> {
    Line::from(vec![
        Span::styled(format!("{label:<9} "), cx.theme.dim),
        Span::styled(spark, cx.theme.accent),
        Span::styled(last.unwrap_or_default(), cx.theme.text),
    ])
}
