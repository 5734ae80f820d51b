//! Moving about: the keymap's actions on views, tables and the detail pane, Enter and Esc, and the
//! selection that follows its object.

use super::*;

impl App {
    pub(crate) fn act(&mut self, a: Action) {
        if let Some(v) = a.view() {
            self.goto(v);
            return;
        }
        if self.replay_key(a) {
            return;
        }
        let page = 20isize;
        let view = self.ui.view;
        match a {
            Action::Quit => self.ui.quit = true,
            Action::Help => self.open_help(),
            Action::Command => self.ui.mode = Mode::Prompt(Prompt::command("")),
            Action::Filter => {
                let current = match self.focused_table() {
                    Some(t) => {
                        self.table(t).begin_edit();
                        self.ui.tables[t].filter.raw.clone()
                    }
                    None => String::new(),
                };
                self.ui.mode = Mode::Prompt(Prompt::filter(&current));
            }
            Action::Pause => self.toggle_pause(),
            Action::Up | Action::Down | Action::PageUp | Action::PageDown | Action::Top | Action::Bottom
                if self.detail_has_focus() =>
            {
                // The open detail pane has the keys (k9s's describe): it scrolls; Esc goes
                // back to the table.
                let page = Shown::page(self.ui.shown.detail_rows);
                let sc = &mut self.ui.detail_scroll;
                *sc = match a {
                    Action::Up => sc.saturating_sub(1),
                    Action::Down => sc.saturating_add(1),
                    Action::PageUp => sc.saturating_sub(page),
                    Action::PageDown => sc.saturating_add(page),
                    Action::Top => 0,
                    _ => u16::MAX,
                };
                let max = self.ui.shown.detail_lines.saturating_sub(self.ui.shown.detail_rows);
                if self.ui.shown.detail_rows > 0 {
                    self.ui.detail_scroll = self.ui.detail_scroll.min(max);
                }
            }
            Action::Up | Action::Down | Action::PageUp | Action::PageDown | Action::Top | Action::Bottom
                if self.in_view(view, false, |k| view.def().on_action(a, k)) => {}
            Action::Up | Action::Down | Action::PageUp | Action::PageDown | Action::Top | Action::Bottom => {
                let delta = match a {
                    Action::Up => -1,
                    Action::Down => 1,
                    Action::PageUp => -page,
                    Action::PageDown => page,
                    Action::Top => isize::MIN / 2,
                    _ => isize::MAX / 2,
                };
                if let Some(t) = self.focused_table() {
                    let t = self.table(t);
                    match a {
                        Action::Top => t.top(),
                        Action::Bottom => t.bottom(),
                        _ => t.move_by(delta),
                    }
                }
            }
            Action::Enter => self.enter(),
            Action::Back => self.back(),
            Action::NextPane | Action::PrevPane => {
                let n = self.ui.view.tables().len().max(1);
                self.ui.focus =
                    if a == Action::NextPane { (self.ui.focus + 1) % n } else { (self.ui.focus + n - 1) % n };
            }
            Action::SortNext | Action::SortPrev | Action::SortReverse => {
                if let Some(id) = self.focused_table() {
                    let ncols = id.source().columns().len();
                    let t = self.table(id);
                    match a {
                        Action::SortNext => t.sort_by(t.sort_col + 1, ncols),
                        Action::SortPrev => t.sort_by(t.sort_col + ncols - 1, ncols),
                        _ => t.desc = !t.desc,
                    }
                }
            }
            Action::Local(name) => self.view_key(name),
            Action::Mark => self.toggle_mark(),
            Action::ClearMarks => self.clear_marks(),
            Action::Refresh => {
                if self.refresh_now.is_empty() {
                    self.ui.message =
                        Some(("nothing to refresh: the simulator updates on its own".into(), false));
                } else {
                    self.emit(Effect::Refresh);
                    self.ui.message = Some(("refreshing…".into(), false));
                }
            }
            Action::Cordon => self.start_action(ActionKind::Cordon),
            Action::Uncordon => self.start_action(ActionKind::Uncordon),
            Action::Drain => self.start_action(ActionKind::Drain),
            Action::Resume => self.start_action(ActionKind::Resume),
            Action::CancelJob => self.start_action(ActionKind::Cancel),
            Action::Acceptance => self.start_action(ActionKind::Acceptance(crate::acceptance::Mode::PerNode)),
            _ => {}
        }
    }

    /// Runs a key a view declares: in its view, or (when it works anywhere) after opening it.
    pub(crate) fn view_key(&mut self, name: &str) {
        let Some((view, key)) = views::view_key(name) else { return };
        let opened = self.ui.view != view.id();
        if opened {
            if !key.anywhere {
                self.ui.message = Some((format!("{}: only in the {} view", key.help, view.title()), false));
                return;
            }
            self.goto(view.id());
        }
        self.in_view(view.id(), opened, |k| Some((key.run)(k)));
    }

    /// Enter: the view's first (go where the detail points, open a tree node, leave the wall
    /// for its node), else the detail pane.
    pub(crate) fn enter(&mut self) {
        let view = self.ui.view;
        if self.in_view(view, false, |k| view.def().on_action(Action::Enter, k)) {
            return;
        }
        self.ui.detail = true;
        self.ui.detail_scroll = 0;
    }

    /// Whether the detail pane is open on a table view, where it takes the movement keys.
    pub fn detail_has_focus(&self) -> bool {
        self.ui.detail
            && self.focused_table().is_some()
            && self.ui.view.def().shows_tables(self.ui.own.peek(self.ui.view))
    }

    /// Selects the row of `id` in table `t` (it follows the object from then on).
    pub fn select_obj(&mut self, t: TableId, id: ObjKey) {
        let cx = cx_of!(self);
        self.ui.tables[t].select_id(t.source(), &cx, id);
    }

    /// Records what each shown table's selection stands for, while its rows are current: after
    /// a key or an action result, before any later update can move the rows.
    pub(crate) fn capture_selection(&mut self) {
        let cx = cx_of!(self);
        for t in self.ui.view.tables() {
            self.ui.tables[t].capture(t.source(), &cx);
        }
    }

    /// The object the focused table's selection stands for.
    pub fn selected_obj(&self) -> Option<&ObjKey> {
        self.ui.tables[self.focused_table()?].selected_id()
    }

    pub(crate) fn back(&mut self) {
        let view = self.ui.view;
        if !self.op_panel.is_empty() {
            self.op_panel.clear();
        } else if self.ui.detail {
            self.ui.detail = false;
        } else if let Some(t) = self.focused_table().filter(|t| !self.ui.tables[*t].filter.is_empty()) {
            self.table(t).set_filter("");
        } else if self.in_view(view, false, |k| view.def().on_action(Action::Back, k)) {
            // The view stepped back inside itself (the wall to the table).
        } else if let Some(v) = self.ui.back.pop() {
            self.ui.view = v;
            self.ui.focus = 0;
        }
    }

    /// The node selected in the topology tree: its name and its cluster as objects carry it
    /// (empty in a single-cluster console).
    pub fn topology_node(&self) -> Option<crate::model::NodeKey> {
        match views::topology::ID.def().selected(self.ui.own.peek(views::topology::ID))? {
            ObjKey::Node(n) => Some(n),
            _ => None,
        }
    }

    /// The node, GPU or job the open detail pane shows, or the fleet under the GPU heatmap
    /// (`None` when there is no such chart on screen).
    pub fn focus(&self) -> Option<crate::model::protocol::Focus> {
        use crate::model::protocol::Focus;
        if !self.ui.detail {
            // A chart the view draws beside its tables (the heatmap's strip: the fleet's hour).
            return self.ui.view.def().charts(self.ui.own.peek(self.ui.view));
        }
        let s = self.state();
        match self.selected_obj()? {
            ObjKey::Node(n) => s.node_at(n).map(|_| Focus::Node(n.name.clone())),
            ObjKey::Gpu(g) => s.node_at(&g.node).map(|_| Focus::Gpu(g.node.name.clone(), g.index)),
            ObjKey::Job(k) => {
                let j = &s.jobs[s.job_at(k)?];
                let gpus: Vec<(Text, u8)> = j
                    .nodes
                    .iter()
                    .filter_map(|n| s.node_in(&j.cluster, n))
                    .flat_map(|n| {
                        n.gpus.iter().filter(|g| g.job == Some(j.id)).map(|g| (n.name.clone(), g.index))
                    })
                    .collect();
                Some(Focus::Job(j.id, gpus))
            }
            _ => None,
        }
    }

    /// Publishes [`App::focus`] to the history source when it changed (after each frame).
    pub fn publish_focus(&self) {
        if let Some(tx) = &self.focus_tx {
            let now = self.focus();
            tx.send_if_modified(|f| {
                if *f == now {
                    false
                } else {
                    *f = now;
                    true
                }
            });
        }
    }
}
