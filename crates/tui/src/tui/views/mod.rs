//! The view registry: a view is one file (its tables, its drawing, its names) plus one line
//! in [`VIEWS`]. The tab row, `:` commands, completion, the help screen's view keys, the
//! keymap's view actions, `gpuplane get` and the filter's key list are all derived from it;
//! nothing is counted or listed by hand elsewhere.

pub mod alerts;
pub mod audit;
pub mod cost;
pub mod fabric;
pub mod gpus;
pub mod jobs;
pub mod nodes;
pub mod overview;
pub mod queues;
pub mod quotas;
pub mod sources;
pub mod storage;
pub mod timeline;
pub mod topology;

pub use crate::tables::table::TableId;
pub use crate::tables::{detail, rollup};

use super::app::Shown;
use super::keymap::{Action, Keymap};
use super::widgets::table::{Cx, Dx, TableSource, TableStates};
use crate::model::ObjKey;
use crate::state::ClusterState;
use ratatui::Frame;
use ratatui::layout::Rect;
use std::any::Any;

/// Every view, in tab order: one line each.
pub static VIEWS: &[&dyn View] = &[
    &overview::View,
    &nodes::VIEW,
    &gpus::View,
    &topology::View,
    &fabric::View,
    &storage::VIEW,
    &jobs::VIEW,
    &queues::View,
    &quotas::VIEW,
    &cost::View,
    &audit::VIEW,
    &sources::VIEW,
    &alerts::View,
    &timeline::View,
];

/// A view, named by its canonical command name (`nodes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ViewId(pub &'static str);

/// A view's own state (the GPU wall's cursor, the topology tree's, the Cost view's window),
/// made by the view when the console starts and kept for it; `()` for most.
pub type Own = Box<dyn Any + Send>;

/// What a view declares. Every method but the hints is required: a view that forgets one does
/// not compile.
///
/// A view is a component: it owns its state ([`View::state`]) and its keys, draws from `&self`,
/// the read-only cluster state and that state ([`ViewCx`]), and answers a key with what it asks
/// of the console ([`Outcome`]) instead of doing it.
pub trait View: Sync {
    fn id(&self) -> ViewId;
    /// The tab's title.
    fn title(&self) -> &'static str;
    /// Names accepted in command mode after the canonical one (`no`, `node`).
    fn aliases(&self) -> &'static [&'static str];
    /// Focusable tables, in Tab order (none for a view that is not a table).
    fn tables(&self) -> &'static [&'static dyn TableSource];
    /// Draws the view's body.
    fn draw(&self, f: &mut Frame, area: Rect, cx: &mut ViewCx<'_>);

    /// Its own state, made once (none for most).
    fn state(&self) -> Own {
        Box::new(())
    }

    /// A movement key, Enter or Esc in this view, before the console's default (the focused
    /// table's rows, the detail pane): what it asks, when the view takes the key (the tree and
    /// the wall move their own cursors; the Alerts view goes, from an alert's detail, to the
    /// node, GPU or job it names).
    fn on_action(&self, _a: Action, _cx: &mut KeyCx<'_>) -> Option<Outcome> {
        None
    }

    /// The view was opened by one of its names (`:wall` opens the GPUs view on the wall), or
    /// left (`None`).
    fn opened(&self, _name: Option<&str>, _own: &mut (dyn Any + Send)) {}

    /// Whether its tables are on screen now (the wall and the tree stand in for them): the
    /// detail pane and its keys belong to the table then.
    fn shows_tables(&self, _own: &(dyn Any + Send)) -> bool {
        true
    }

    /// What it charts beside the tables for the history source (the wall: the fleet's hour).
    fn charts(&self, _own: &(dyn Any + Send)) -> Option<crate::model::protocol::Focus> {
        None
    }

    /// The object it has selected where it shows no table (the topology tree's node).
    fn selected(&self, _own: &(dyn Any + Send)) -> Option<ObjKey> {
        None
    }

    /// Brings its own state in line with the tables before a frame (the wall's cursor follows
    /// the GPU table's node).
    fn prepare(&self, _s: &ClusterState, _tables: &TableStates, _own: &mut (dyn Any + Send)) {}

    /// The keys that mean something only in this view (none for most).
    fn keys(&self) -> &'static [ViewKey] {
        &[]
    }

    /// Whether the footer offers the key named `key` now (the Alerts view offers no silence
    /// for alerts read from Prometheus).
    fn offers(&self, _s: &ClusterState, _key: &str) -> bool {
        true
    }

    /// What the words this view shows mean, for the help while it is open (none for most).
    fn help(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
}

/// A key one view declares: bound in a keymap by `name` like any action, listed in help under
/// the view, shown in the footer by its `hint` while the view is open.
pub struct ViewKey {
    /// Its name in a keymap (`toggle_wall`); unique across views.
    pub name: &'static str,
    /// What it does, for help.
    pub help: &'static str,
    /// The footer's word for it, if it gets one.
    pub hint: Option<&'static str>,
    /// Pressed in another view: open this view and run it (`true`), or say where it works.
    pub anywhere: bool,
    /// Runs it: what it asks of the console ([`KeyCx::opened`] says the view was just opened
    /// for it).
    pub run: fn(&mut KeyCx<'_>) -> Outcome,
}

/// What a view draws with: the read-only picture (the state, the theme, the marks), the
/// tables' rows and scroll, the pane around them, and the view's own state.
pub struct ViewCx<'a> {
    pub dx: Dx<'a>,
    pub keymap: &'a Keymap,
    /// The fleet cluster `:cluster` focuses.
    pub cluster: Option<&'a str>,
    pub tables: &'a mut TableStates,
    /// Which of the view's tables has focus (a view may move it to one it shows).
    pub focus: &'a mut usize,
    /// Whether the detail pane is open, and its first line.
    pub detail: bool,
    pub detail_scroll: &'a mut u16,
    /// What the last frame showed (for paging).
    pub shown: &'a mut Shown,
    pub own: &'a mut (dyn Any + Send),
}

/// What a view's key may read and change: the shown state (read-only), the tables, its own
/// state and which table has focus.
pub struct KeyCx<'a> {
    pub cx: Cx<'a>,
    pub tables: &'a mut TableStates,
    pub own: &'a mut (dyn Any + Send),
    pub focus: &'a mut usize,
    pub detail: bool,
    /// The key opened the view (it was pressed in another).
    pub opened: bool,
}

/// What a view's key asks of the console.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Nothing more (the view's own state may have changed).
    Done,
    /// Go to the table's view and show the object there, detail open (its filter cleared if
    /// it hides it).
    Show(TableId, ObjKey),
    /// Open the command line on a command for the selection, checked by the console first.
    Begin(Begin),
    /// Say this (an error when `true`).
    Say(String, bool),
    /// The cost report is rebuilt (its grouping changed).
    Rebuild,
}

/// The commands a view's key opens on the selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin {
    Ack,
    Silence,
    Unsilence,
}

/// Every view's own state, by view.
pub struct ViewStates(Vec<(ViewId, Own)>);

impl Default for ViewStates {
    fn default() -> Self {
        ViewStates(VIEWS.iter().map(|v| (v.id(), v.state())).collect())
    }
}

impl std::fmt::Debug for ViewStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|(id, _)| id)).finish()
    }
}

impl ViewStates {
    /// The view's own state.
    pub fn of(&mut self, id: ViewId) -> &mut (dyn Any + Send) {
        let i = match self.0.iter().position(|(v, _)| *v == id) {
            Some(i) => i,
            None => {
                self.0.push((id, id.def().state()));
                self.0.len() - 1
            }
        };
        self.0[i].1.as_mut()
    }

    /// The view's own state, read-only (`()` for a view not known).
    pub fn peek(&self, id: ViewId) -> &(dyn Any + Send) {
        self.0.iter().find(|(v, _)| *v == id).map_or(&(), |(_, s)| s.as_ref())
    }

    /// The view's own state as its type, when it is of that type.
    pub fn get<T: 'static>(&self, id: ViewId) -> Option<&T> {
        self.peek(id).downcast_ref()
    }

    pub fn get_mut<T: 'static>(&mut self, id: ViewId) -> Option<&mut T> {
        self.of(id).downcast_mut()
    }
}

/// The view declaring the key named `name`, and the key.
pub fn view_key(name: &str) -> Option<(&'static dyn View, &'static ViewKey)> {
    VIEWS.iter().find_map(|v| v.keys().iter().find(|k| k.name == name).map(|k| (*v, k)))
}

/// A view that is one table with its detail pane (Nodes, Jobs, Storage, …): a file declares
/// one of these as a `static` instead of implementing [`View`] itself.
pub struct TableView {
    pub id: ViewId,
    pub title: &'static str,
    pub aliases: &'static [&'static str],
    /// Exactly one table.
    pub table: &'static [&'static dyn TableSource],
}

impl View for TableView {
    fn id(&self) -> ViewId {
        self.id
    }

    fn title(&self) -> &'static str {
        self.title
    }

    fn aliases(&self) -> &'static [&'static str] {
        self.aliases
    }

    fn tables(&self) -> &'static [&'static dyn TableSource] {
        self.table
    }

    fn draw(&self, f: &mut Frame, area: Rect, cx: &mut ViewCx<'_>) {
        if let Some(t) = self.table.first() {
            super::draw::table_with_detail(f, area, cx, t.id(), self.title, true);
        }
    }
}

impl ViewId {
    pub fn def(self) -> &'static dyn View {
        VIEWS.iter().copied().find(|v| v.id() == self).unwrap_or(VIEWS[0])
    }

    /// The canonical name or an alias.
    pub fn by_name(name: &str) -> Option<ViewId> {
        VIEWS.iter().find(|v| v.id().0 == name || v.aliases().contains(&name)).map(|v| v.id())
    }

    /// The view's tables' ids, in Tab order.
    pub fn tables(self) -> Vec<TableId> {
        self.def().tables().iter().map(|t| t.id()).collect()
    }
}

/// The view showing the table `id` (each table is in one view).
pub fn view_of(id: TableId) -> ViewId {
    VIEWS.iter().find(|v| v.tables().iter().any(|t| t.id() == id)).map_or(VIEWS[0].id(), |v| v.id())
}

/// Every table of every view, each once, in tab order.
pub fn all_tables() -> impl Iterator<Item = &'static dyn TableSource> {
    VIEWS.iter().flat_map(|v| v.tables().iter().copied())
}

/// Every name a view answers to, canonical first within each view.
pub fn all_names() -> impl Iterator<Item = &'static str> {
    VIEWS.iter().flat_map(|v| std::iter::once(v.id().0).chain(v.aliases().iter().copied()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_table_ids_are_unique() {
        let mut names: Vec<&str> = all_names().collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "a view name or alias is used twice");
        let mut keys: Vec<&str> = VIEWS.iter().flat_map(|v| v.keys().iter().map(|k| k.name)).collect();
        let n = keys.len();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), n, "a view key name is used twice");
        for k in &keys {
            assert!(
                crate::tui::keymap::Action::by_name(k) == Ok(crate::tui::keymap::Action::Local(k)),
                "view key {k} is shadowed by an action or a view of the same name"
            );
        }
        let mut tables: Vec<TableId> = all_tables().map(|t| t.id()).collect();
        let n = tables.len();
        tables.sort_unstable();
        tables.dedup();
        assert_eq!(tables.len(), n, "a table id is used twice");
    }

    #[test]
    fn every_table_is_found_by_its_id() {
        for t in all_tables() {
            assert_eq!(t.id(), t.id().source().id());
        }
    }

    /// The table model's registry and the views list the same tables in the same order: a
    /// table no view shows, or shown twice, fails here.
    #[test]
    fn the_views_show_every_table_of_the_registry_once() {
        let views: Vec<TableId> = all_tables().map(|t| t.id()).collect();
        let registry: Vec<TableId> = crate::tables::all().map(|t| t.id()).collect();
        assert_eq!(views, registry);
    }
}
