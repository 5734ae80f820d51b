//! Queues: Slurm partitions and Kueue queues with pending/running counts and wait times, and
//! "my jobs": where each of the current user's jobs stands and why it waits.

pub use crate::tables::queues::*;

use super::super::widgets::safe;
use super::super::widgets::table::TableSource;
use super::ViewId;
use crate::tui::draw::table_with_detail;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};

/// Queues: partitions and queues with their waits, and my jobs in them.
pub struct View;

pub const ID: ViewId = ViewId("queues");

impl super::View for View {
    fn id(&self) -> ViewId {
        ID
    }

    fn title(&self) -> &'static str {
        "Queues"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["queue", "qu", "partitions"]
    }

    fn tables(&self) -> &'static [&'static dyn TableSource] {
        &[&QueuesTable, &MyJobsTable]
    }

    fn draw(&self, f: &mut Frame, area: Rect, cx: &mut super::ViewCx<'_>) {
        let [top, bottom] =
            Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(area);
        let focus = *cx.focus;
        let my = format!("My jobs ({})", safe(cx.dx.user));
        if cx.detail && area.width < 120 {
            let (id, name) = if focus == 0 { (QUEUES, "Queues") } else { (MY_JOBS, my.as_str()) };
            table_with_detail(f, area, cx, id, name, true);
        } else {
            table_with_detail(f, top, cx, QUEUES, "Queues", focus == 0);
            table_with_detail(f, bottom, cx, MY_JOBS, &my, focus == 1);
        }
    }
}
