//! Quotas: each team's GPU quota, use, borrowing and lending.

pub use crate::tables::quotas::*;

use super::super::widgets::table::TableSource;
use super::ViewId;

/// Quotas: GPU quotas per team, used and borrowed; below, teams and people across the fleet
/// (quotas and active jobs summed over the clusters, each row expanding per cluster in its
/// detail pane).
pub struct QuotasView;

pub static VIEW: QuotasView = QuotasView;

impl super::View for QuotasView {
    fn id(&self) -> ViewId {
        ID
    }

    fn title(&self) -> &'static str {
        "Quotas"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["quota", "quo", "teams", "people"]
    }

    fn tables(&self) -> &'static [&'static dyn TableSource] {
        &[&QuotasTable, &super::rollup::TeamsTable, &super::rollup::PeopleTable]
    }

    fn draw(&self, f: &mut ratatui::Frame, area: ratatui::layout::Rect, cx: &mut super::ViewCx<'_>) {
        use crate::tui::draw::table_with_detail;
        use ratatui::layout::{Constraint, Layout};
        let focus = *cx.focus;
        let names = [(TABLE, "Quotas"), (super::rollup::TEAMS, "Teams"), (super::rollup::PEOPLE, "People")];
        if cx.detail && area.width < 120 {
            let (id, name) = names[focus.min(2)];
            table_with_detail(f, area, cx, id, name, true);
            return;
        }
        let [top, bottom] =
            Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(area);
        let [left, right] = if area.width >= 100 {
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(bottom)
        } else {
            Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(bottom)
        };
        for (i, a) in [top, left, right].into_iter().enumerate() {
            table_with_detail(f, a, cx, names[i].0, names[i].1, focus == i);
        }
    }
}

pub const ID: ViewId = ViewId("quotas");
