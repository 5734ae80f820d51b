//! Alerts: what Alertmanager holds — firing (`active`), received but not yet processed
//! (`unprocessed`), silenced and inhibited (`suppressed`) — with labels, annotations and since
//! when, and its silences. Enter opens an alert's detail; Enter again goes to the GPU, node or
//! job it names. Added as one file plus one registry line, as every view is.
//!
//! Prometheus's own `pending` (a rule true for less than its `for:`) never reaches
//! Alertmanager. Where no Alertmanager is configured, the alerts are Prometheus's own
//! (`/api/v1/alerts`: firing and pending); the title says so, and no silence is offered then
//! (Prometheus has none).

pub use crate::tables::alerts::*;

use super::super::widgets::table::TableSource;
use super::ViewId;
use crate::model::ObjKey;
use crate::model::alert::{AlertOrigin, AlertState, SilenceState};
use crate::state::ClusterState;
use crate::tui::draw::table_with_detail;
use crate::tui::keymap::Action;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};

pub const ID: ViewId = ViewId("alerts");

/// The alerts pane's title: where they come from and how many fire.
pub fn title(s: &ClusterState) -> String {
    let firing = s.alerts.iter().filter(|a| a.state == AlertState::Active).count();
    let total = s.alerts.len();
    match s.alerts_origin {
        None => {
            "Alerts (no alert source: --alertmanager URL, or --prometheus URL for its rules' alerts)".into()
        }
        Some(AlertOrigin::Prometheus) => {
            let pending = s.alerts.iter().filter(|a| a.state == AlertState::Pending).count();
            format!("Alerts from Prometheus, read-only ({firing} firing, {pending} pending, {total} total)")
        }
        Some(AlertOrigin::Alertmanager) => {
            let silenced = s.alerts.iter().filter(|a| a.silenced()).count();
            format!("Alerts from Alertmanager ({firing} firing, {silenced} silenced, {total} total)")
        }
    }
}

pub struct View;

impl super::View for View {
    fn id(&self) -> ViewId {
        ID
    }

    fn title(&self) -> &'static str {
        "Alerts"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["alert", "al", "silences", "alertmanager"]
    }

    fn tables(&self) -> &'static [&'static dyn TableSource] {
        &[&AlertsTable, &SilencesTable]
    }

    fn draw(&self, f: &mut Frame, area: Rect, cx: &mut super::ViewCx<'_>) {
        let s = cx.dx.s;
        let active = s.silences.iter().filter(|x| x.state != SilenceState::Expired).count();
        let top_title = title(s);
        let bottom_title = match can_silence(s) {
            true => format!("Silences ({active} active or pending)"),
            false => "Silences (none: Prometheus has no silences; they need --alertmanager URL)".into(),
        };
        let focus = *cx.focus;
        if cx.detail && area.width < 120 {
            let (id, name) = if focus == 0 { (ALERTS, top_title) } else { (SILENCES, bottom_title) };
            table_with_detail(f, area, cx, id, &name, true);
        } else {
            let [top, bottom] =
                Layout::vertical([Constraint::Percentage(65), Constraint::Percentage(35)]).areas(area);
            table_with_detail(f, top, cx, ALERTS, &top_title, focus == 0);
            table_with_detail(f, bottom, cx, SILENCES, &bottom_title, focus == 1);
        }
    }

    fn keys(&self) -> &'static [super::ViewKey] {
        static KEYS: [super::ViewKey; 2] = [
            super::ViewKey {
                name: "silence_alert",
                help: "alerts: silence the selected alert (:silence 2h why)",
                hint: Some("silence"),
                anywhere: false,
                run: |_| super::Outcome::Begin(super::Begin::Silence),
            },
            super::ViewKey {
                name: "expire_silence",
                help: "alerts: expire the selected silence (:unsilence why)",
                hint: Some("expire"),
                anywhere: false,
                run: |_| super::Outcome::Begin(super::Begin::Unsilence),
            },
        ];
        &KEYS
    }

    fn offers(&self, s: &ClusterState, key: &str) -> bool {
        // Silencing needs an Alertmanager: alerts read from Prometheus offer neither key.
        !matches!(key, "silence_alert" | "expire_silence") || can_silence(s)
    }

    fn on_action(&self, a: Action, k: &mut super::KeyCx<'_>) -> Option<super::Outcome> {
        // The first Enter opens the detail; the second goes where the alert points.
        if a != Action::Enter || !k.detail || *k.focus != 0 {
            return None;
        }
        let Some(ObjKey::Alert(fp)) = k.tables[ALERTS].selected_id().cloned() else { return None };
        let s = k.cx.s;
        let target = s.alerts.iter().find(|a| a.fingerprint == fp).map(|a| jump_target(s, a));
        Some(match target {
            None => super::Outcome::Say("this alert has resolved".into(), false),
            Some(None) => {
                super::Outcome::Say("this alert names no node, GPU or job of this cluster".into(), false)
            }
            Some(Some((_, table, id))) => super::Outcome::Show(table, id),
        })
    }
}
