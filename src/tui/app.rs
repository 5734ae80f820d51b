//! The Elm-style core: `Msg` in, `App::update` changes the UI state, `draw` renders from
//! `&ClusterState` and the UI state. No terminal or I/O here, so it is tested headless.

use super::keymap::{Action, Keymap};
use super::theme::Theme;
use super::views::gpus::{WallMetric, WallState};
use super::views::topology::{TreeId, selected_node};
use super::views::{TableId, VIEWS, ViewId};
use super::widgets::Glyphs;
use super::widgets::table::{Cx, TableState, pack};
use crate::backend::Update;
use crate::cost::{self, CostReport};
use crate::state::ClusterState;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui_tree_widget::TreeState;

/// Everything that can happen to the console.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Update(Update),
    /// A second passed (ages in the header move).
    Tick,
    Resize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Normal,
    Command(String),
    Filter(String),
    Help,
}

/// UI state: which view, selections, filters, modes. Owned by the UI task only.
#[derive(Debug)]
pub struct Ui {
    pub view: ViewId,
    back: Vec<ViewId>,
    pub tables: Vec<TableState>,
    /// Index into the current view's tables.
    pub focus: usize,
    pub detail: bool,
    pub mode: Mode,
    pub paused: bool,
    pub wall: bool,
    pub wall_state: WallState,
    pub tree: TreeState<TreeId>,
    pub cost_window: usize,
    pub message: Option<(String, bool)>,
    pub help_scroll: u16,
    pub quit: bool,
}

impl Default for Ui {
    fn default() -> Self {
        Ui {
            view: ViewId::Overview,
            back: Vec::new(),
            tables: vec![TableState::default(); TableId::COUNT],
            focus: 0,
            detail: false,
            mode: Mode::Normal,
            paused: false,
            wall: false,
            wall_state: WallState::default(),
            tree: TreeState::default(),
            cost_window: 1,
            message: None,
            help_scroll: 0,
            quit: false,
        }
    }
}

pub struct App {
    pub live: ClusterState,
    frozen: Option<ClusterState>,
    pub ui: Ui,
    pub keymap: Keymap,
    pub theme: Theme,
    pub glyphs: Glyphs,
    /// The current user, for "my jobs".
    pub user: String,
    pub cost: CostReport,
    pub config_dir: Option<std::path::PathBuf>,
}

impl App {
    pub fn new(state: ClusterState, keymap: Keymap, theme: Theme, glyphs: Glyphs, user: String) -> App {
        App {
            live: state,
            frozen: None,
            ui: Ui::default(),
            keymap,
            theme,
            glyphs,
            user,
            cost: CostReport::default(),
            config_dir: None,
        }
    }

    /// What the screen shows: the frozen copy while paused, else the live state.
    pub fn state(&self) -> &ClusterState {
        self.frozen.as_ref().unwrap_or(&self.live)
    }

    pub fn table(&mut self, id: TableId) -> &mut TableState {
        &mut self.ui.tables[id as usize]
    }

    /// The table that has focus in the current view.
    pub fn focused_table(&self) -> Option<TableId> {
        self.ui.view.meta().tables.get(self.ui.focus).copied()
    }

    /// Handles a message; returns whether the screen must be redrawn.
    pub fn update(&mut self, msg: Msg) -> bool {
        match msg {
            Msg::Update(u) => {
                self.live.apply(u);
                // While paused the screen does not change, except the header's PAUSED age.
                !self.ui.paused
            }
            Msg::Tick | Msg::Resize => true,
            Msg::Key(k) => {
                self.on_key(k);
                true
            }
        }
    }

    fn on_key(&mut self, k: KeyEvent) {
        if k.kind == ratatui::crossterm::event::KeyEventKind::Release {
            return;
        }
        match self.ui.mode.clone() {
            Mode::Command(buf) => self.on_prompt_key(k, buf, true),
            Mode::Filter(buf) => self.on_prompt_key(k, buf, false),
            Mode::Help => match self.keymap.action(&k) {
                Some(Action::Down) => self.ui.help_scroll = self.ui.help_scroll.saturating_add(1),
                Some(Action::Up) => self.ui.help_scroll = self.ui.help_scroll.saturating_sub(1),
                Some(Action::Quit) if k.modifiers.contains(KeyModifiers::CONTROL) => self.ui.quit = true,
                _ => self.ui.mode = Mode::Normal,
            },
            Mode::Normal => {
                self.ui.message = None;
                if let Some(a) = self.keymap.action(&k) {
                    self.act(a);
                }
            }
        }
    }

    fn on_prompt_key(&mut self, k: KeyEvent, mut buf: String, command: bool) {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        match k.code {
            KeyCode::Char('c') if ctrl => self.ui.quit = true,
            KeyCode::Esc => {
                if !command {
                    self.set_filter(String::new());
                }
                self.ui.mode = Mode::Normal;
                return;
            }
            KeyCode::Enter => {
                self.ui.mode = Mode::Normal;
                if command {
                    self.run_command(buf.trim());
                }
                return;
            }
            KeyCode::Tab if command => {
                let (completed, candidates) = complete(&buf);
                buf = completed;
                if candidates.len() > 1 {
                    self.ui.message = Some((candidates.join(" "), false));
                }
            }
            KeyCode::Backspace if buf.pop().is_none() => {
                self.ui.mode = Mode::Normal;
                return;
            }
            KeyCode::Char('u') if ctrl => buf.clear(),
            KeyCode::Char(c) if !ctrl => buf.push(c),
            _ => {}
        }
        if !command {
            self.set_filter(buf.clone());
        }
        self.ui.mode = if command { Mode::Command(buf) } else { Mode::Filter(buf) };
    }

    fn set_filter(&mut self, f: String) {
        if let Some(t) = self.focused_table() {
            self.table(t).set_filter(&f);
        }
    }

    /// Runs a `:` command.
    pub fn run_command(&mut self, cmd: &str) {
        let mut words = cmd.split_whitespace();
        let Some(head) = words.next() else { return };
        let rest = words.collect::<Vec<_>>().join(" ");
        match head {
            "q" | "quit" | "q!" | "exit" => self.ui.quit = true,
            "help" | "h" => self.ui.mode = Mode::Help,
            "pause" => self.toggle_pause(),
            "theme" => {
                let (theme, err) = Theme::load(&rest, self.config_dir.as_deref(), false);
                self.theme = theme;
                self.ui.message = err.map(|e| (e.to_string(), true));
            }
            name => match ViewId::by_name(name) {
                Some(v) => {
                    self.goto(v);
                    if name == "mine" {
                        self.ui.focus = 1;
                    }
                    if name == "wall" || name == "heatmap" {
                        self.ui.wall = true;
                    }
                    if !rest.is_empty() {
                        self.set_filter(rest);
                    }
                }
                None => {
                    self.ui.message =
                        Some((format!("unknown command {name:?} (tab completes; :help lists views)"), true))
                }
            },
        }
    }

    pub fn goto(&mut self, v: ViewId) {
        if v != self.ui.view {
            self.ui.back.push(self.ui.view);
            if self.ui.back.len() > 32 {
                self.ui.back.remove(0);
            }
        }
        self.ui.view = v;
        self.ui.focus = 0;
        self.ui.detail = false;
        if v != ViewId::Gpus {
            self.ui.wall = false;
        }
    }

    fn toggle_pause(&mut self) {
        self.ui.paused = !self.ui.paused;
        self.frozen = self.ui.paused.then(|| self.live.clone());
    }

    fn act(&mut self, a: Action) {
        if let Some(v) = a.view() {
            self.goto(v);
            return;
        }
        let tree_view = self.ui.view == ViewId::Topology;
        if tree_view
            && self.ui.tree.selected().is_empty()
            && let Some(p) = super::views::topology::first_pool(self.state())
        {
            self.ui.tree.select(vec![p]);
        }
        let wall = self.ui.view == ViewId::Gpus && self.ui.wall;
        let nodes = self.state().nodes.len();
        let page = 20isize;
        match a {
            Action::Quit => self.ui.quit = true,
            Action::Help => {
                self.ui.help_scroll = 0;
                self.ui.mode = Mode::Help;
            }
            Action::Command => self.ui.mode = Mode::Command(String::new()),
            Action::Filter => {
                let current = self
                    .focused_table()
                    .map(|t| self.ui.tables[t as usize].filter.raw.clone())
                    .unwrap_or_default();
                self.ui.mode = Mode::Filter(current);
            }
            Action::Pause => self.toggle_pause(),
            Action::Up | Action::Down | Action::PageUp | Action::PageDown | Action::Top | Action::Bottom => {
                let delta = match a {
                    Action::Up => -1,
                    Action::Down => 1,
                    Action::PageUp => -page,
                    Action::PageDown => page,
                    Action::Top => isize::MIN / 2,
                    _ => isize::MAX / 2,
                };
                if tree_view {
                    match a {
                        Action::Up => self.ui.tree.key_up(),
                        Action::Down => self.ui.tree.key_down(),
                        Action::Top => self.ui.tree.select_first(),
                        Action::Bottom => self.ui.tree.select_last(),
                        Action::PageUp => self.ui.tree.scroll_up(page as usize),
                        _ => self.ui.tree.scroll_down(page as usize),
                    };
                } else if wall {
                    let rows = match a {
                        Action::Up => -1,
                        Action::Down => 1,
                        Action::PageUp => -10,
                        Action::PageDown => 10,
                        Action::Top => -(nodes as isize),
                        _ => nodes as isize,
                    };
                    self.ui.wall_state.move_rows(rows, nodes);
                } else if let Some(t) = self.focused_table() {
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
                let n = self.ui.view.meta().tables.len().max(1);
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
            Action::ToggleWall => {
                if self.ui.view == ViewId::Gpus {
                    self.ui.wall = !self.ui.wall;
                } else {
                    self.goto(ViewId::Gpus);
                    self.ui.wall = true;
                }
            }
            Action::ToggleMetric => {
                self.ui.wall_state.metric = match self.ui.wall_state.metric {
                    WallMetric::Util => WallMetric::Temp,
                    WallMetric::Temp => WallMetric::Util,
                }
            }
            Action::WindowLonger => {
                self.ui.cost_window = (self.ui.cost_window + 1).min(cost::WINDOWS.len() - 1)
            }
            Action::WindowShorter => self.ui.cost_window = self.ui.cost_window.saturating_sub(1),
            _ => {}
        }
    }

    fn enter(&mut self) {
        match self.ui.view {
            ViewId::Topology => {
                self.ui.tree.toggle_selected();
            }
            ViewId::Gpus if self.ui.wall => {
                let n = self.ui.wall_state.selected;
                self.jump_to_node(n);
            }
            ViewId::Overview if self.ui.detail => {
                let Some(key) = self.ui.tables[TableId::Incidents as usize].selected_key() else { return };
                let Some(inc) = self.state().incidents.get(key as usize).cloned() else { return };
                if let Some(job) = inc.job.and_then(|id| self.state().jobs.iter().position(|j| j.id == id)) {
                    self.goto(ViewId::Jobs);
                    self.prepare();
                    self.table(TableId::Jobs).select_key(job as u64);
                    self.ui.detail = true;
                } else if let Some(n) = inc.node.as_deref().and_then(|n| self.state().node_index(n)) {
                    self.jump_to_node(n);
                }
            }
            _ => self.ui.detail = true,
        }
    }

    fn jump_to_node(&mut self, n: usize) {
        self.goto(ViewId::Nodes);
        self.prepare();
        let t = self.table(TableId::Nodes);
        if !t.rows.contains(&(n as u64)) {
            t.set_filter("");
        }
        self.prepare();
        self.table(TableId::Nodes).select_key(n as u64);
        self.ui.detail = true;
    }

    fn back(&mut self) {
        if self.ui.detail {
            self.ui.detail = false;
        } else if let Some(t) =
            self.focused_table().filter(|t| !self.ui.tables[*t as usize].filter.is_empty())
        {
            self.table(t).set_filter("");
        } else if self.ui.view == ViewId::Gpus && self.ui.wall {
            self.ui.wall = false;
        } else if let Some(v) = self.ui.back.pop() {
            self.ui.view = v;
            self.ui.focus = 0;
        }
    }

    /// The drawing context over the shown state.
    pub fn cx(&self) -> Cx<'_> {
        Cx { s: self.state(), cost: &self.cost, theme: &self.theme, glyphs: self.glyphs, user: &self.user }
    }

    /// Brings the current view's cached rows up to date (filter/sort only when something changed).
    pub fn prepare(&mut self) {
        let s = self.frozen.as_ref().unwrap_or(&self.live);
        if self.ui.view == ViewId::Cost {
            let window = cost::WINDOWS[self.ui.cost_window].0;
            if self.cost.built_for != Some((s.generation, window)) {
                self.cost = cost::report(s, window);
                // The job rows index the report: force a rebuild.
                for id in [TableId::CostTeams, TableId::CostJobs] {
                    self.ui.tables[id as usize].invalidate();
                }
            }
        }
        let cx = Cx { s, cost: &self.cost, theme: &self.theme, glyphs: self.glyphs, user: &self.user };
        for &id in self.ui.view.meta().tables {
            self.ui.tables[id as usize].refresh(id.source(), &cx);
        }
        if self.ui.view == ViewId::Gpus
            && !self.ui.wall
            && let Some(k) = self.ui.tables[TableId::Gpus as usize].selected_key()
        {
            self.ui.wall_state.selected = (k >> 32) as usize;
        }
        if self.ui.view == ViewId::Gpus
            && self.ui.wall
            && let Some(node) = s.nodes.get(self.ui.wall_state.selected)
            && !node.gpus.is_empty()
        {
            self.ui.tables[TableId::Gpus as usize].select_key(pack(self.ui.wall_state.selected, 0));
        }
    }

    /// The node selected in the topology tree.
    pub fn topology_node(&self) -> Option<usize> {
        selected_node(&self.ui.tree)
    }
}

/// Command names for completion: every view name and the built-in commands.
pub fn command_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = VIEWS.iter().flat_map(|v| v.names.iter().copied()).collect();
    v.extend(["quit", "help", "pause", "theme"]);
    v
}

/// Completes the first word of a command line. Names that mean the same view complete to the
/// view's canonical name (`jo` → `jobs`); otherwise to the longest common prefix. Returns the new
/// buffer and the candidates.
pub fn complete(buf: &str) -> (String, Vec<&'static str>) {
    if buf.contains(' ') {
        return (buf.to_string(), vec![]);
    }
    let canonical = |n: &'static str| ViewId::by_name(n).map_or(n, |v| v.meta().names[0]);
    let mut cands: Vec<&'static str> =
        command_names().into_iter().filter(|n| n.starts_with(buf)).map(canonical).collect();
    cands.sort_unstable();
    cands.dedup();
    match cands.as_slice() {
        [] => (buf.to_string(), cands),
        [one] => (format!("{one} "), cands),
        many => {
            let first = many[0];
            let len = (buf.len()..=first.len())
                .rev()
                .find(|&l| many.iter().all(|c| c.starts_with(&first[..l])))
                .unwrap_or(buf.len());
            (first[..len].to_string(), cands)
        }
    }
}
