//! Timeline: what changed, newest first — node state transitions (with the reason and who set
//! it), XIDs and ECC errors, ports going down and flapping, failed and preempted jobs, actions
//! and acks, alerts firing and resolving — from the event journal that the consoles on this
//! data dir share, and what this console saw since its last read of it.
//!
//! `:timeline node=gpu-004 since=2h` opens it filtered: `node`, `job`, `team`, `kind` and
//! `since` (an age: `since=2h` is the last two hours) are its filter keys, through the same
//! filter language as every table. Enter on an event's detail goes to its node, GPU or job.
//! One file plus one registry line, as every view.

pub use crate::tables::timeline::*;

use super::super::widgets::table::TableSource;
use super::ViewId;
use crate::clock::clock;
use crate::model::ObjKey;
use crate::tui::draw::table_with_detail;
use crate::tui::keymap::Action;
use ratatui::Frame;
use ratatui::layout::Rect;

pub const ID: ViewId = ViewId("timeline");

pub struct View;

impl super::View for View {
    fn id(&self) -> ViewId {
        ID
    }

    fn title(&self) -> &'static str {
        "Timeline"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["tl", "events"]
    }

    fn tables(&self) -> &'static [&'static dyn TableSource] {
        &[&TimelineTable]
    }

    fn draw(&self, f: &mut Frame, area: Rect, cx: &mut super::ViewCx<'_>) {
        let n = cx.dx.s.timeline.events.len();
        let title = match cx.dx.s.timeline.events.first() {
            Some(e) => format!("Timeline ({n} events since {})", clock(cx.dx.s.now, e.at)),
            None => "Timeline (nothing recorded yet)".into(),
        };
        table_with_detail(f, area, cx, TABLE, &title, true);
    }

    fn on_action(&self, a: Action, k: &mut super::KeyCx<'_>) -> Option<super::Outcome> {
        // The first Enter opens the detail; the second goes to the event's subject.
        if a != Action::Enter || !k.detail {
            return None;
        }
        let Some(ObjKey::Event(id)) = k.tables[TABLE].selected_id().cloned() else { return None };
        let target = k.cx.s.timeline.events.iter().find(|e| e.id() == id).map(|e| jump_target(&k.cx, e));
        Some(match target {
            None => {
                super::Outcome::Say("this event is no longer held (past the journal's window)".into(), false)
            }
            Some(None) => {
                super::Outcome::Say("this event names no node, GPU or job this console holds".into(), false)
            }
            Some(Some((_, table, obj))) => super::Outcome::Show(table, obj),
        })
    }
}
