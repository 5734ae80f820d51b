//! The shell's side of its components: what a view draws with, what its keys may touch, and
//! carrying out what they ask ([`views::Outcome`]).

use super::*;

impl App {
    /// What the current view draws with ([`views::ViewCx`]), borrowing the console's fields
    /// one by one.
    pub fn view_cx(&mut self) -> views::ViewCx<'_> {
        let view = self.ui.view;
        views::ViewCx {
            dx: cx_of!(self),
            keymap: &self.keymap,
            cluster: self.focus.as_deref(),
            tables: &mut self.ui.tables,
            focus: &mut self.ui.focus,
            detail: self.ui.detail,
            detail_scroll: &mut self.ui.detail_scroll,
            shown: &mut self.ui.shown,
            own: self.ui.own.of(view),
        }
    }

    /// Runs a view's key or action in `view`: what it asks, carried out here.
    pub(crate) fn in_view(
        &mut self,
        view: ViewId,
        opened: bool,
        f: impl FnOnce(&mut views::KeyCx<'_>) -> Option<views::Outcome>,
    ) -> bool {
        let mut kcx = views::KeyCx {
            cx: cx_of!(self).cx,
            tables: &mut self.ui.tables,
            own: self.ui.own.of(view),
            focus: &mut self.ui.focus,
            detail: self.ui.detail,
            opened,
        };
        let Some(out) = f(&mut kcx) else { return false };
        self.outcome(out);
        true
    }

    /// Carries out what a view's key asked.
    fn outcome(&mut self, out: views::Outcome) {
        use views::{Begin, Outcome};
        match out {
            Outcome::Done => {}
            Outcome::Show(table, id) => {
                self.goto(views::view_of(table));
                self.prepare();
                // The object may be filtered out there: show it anyway.
                let cx = cx_of!(self);
                let shown =
                    table.source().locate(&cx, &id).is_some_and(|k| self.ui.tables[table].rows.contains(&k));
                if !shown {
                    self.table(table).set_filter("");
                }
                self.prepare();
                self.select_obj(table, id);
                self.ui.detail = true;
                self.ui.detail_scroll = 0;
            }
            Outcome::Begin(Begin::Ack) => self.begin_ack(),
            Outcome::Begin(Begin::Silence) => self.begin_silence(),
            Outcome::Begin(Begin::Unsilence) => self.begin_unsilence(),
            Outcome::Say(m, error) => self.ui.message = Some((m, error)),
            Outcome::Rebuild => self.cost.built_for = None,
        }
    }
}
