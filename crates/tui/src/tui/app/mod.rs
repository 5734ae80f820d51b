//! The Elm-style core: `Msg` in, `App::update` changes the UI state, `draw` renders from
//! `&ClusterState` and the UI state. No terminal or I/O here, so it is tested headless.

use super::keymap::{Action, Keymap};
use super::theme::Theme;
use super::views::{self, TableId, ViewId};
use super::widgets::Glyphs;
use super::widgets::table::Marks;
use super::widgets::table::{Cx, Dx, TableExt, TableState, TableStates};
use crate::audit::Record;
use crate::cost::{self, CostReport};
use crate::model::protocol::Update;
use crate::model::{ObjKey, Text};
use crate::ops::{self, ActionKind, OpEvent, OpJob, OpMsg, OpRequest, Plan, Planner};
use crate::state::ClusterState;
use ratatui::crossterm::event::KeyEvent;

/// A [`Cx`] over the shown state that borrows `App`'s fields one by one, so that the tables
/// (`$app.ui.tables`) can be changed while it lives.
macro_rules! cx_of {
    ($app:expr) => {
        Dx {
            cx: Cx {
                s: $app.frozen.as_ref().unwrap_or(&$app.live),
                cost: &$app.cost,
                tones: &crate::tables::tone::TONES,
                glyphs: $app.glyphs,
                user: &$app.user,
                audit: &$app.audit,
                marked: &$app.marks,
                rules: &$app.efficiency,
            },
            theme: &$app.theme,
        }
    };
}

mod breakglass;
mod commands;
mod components;
mod confirm;
mod dialogs;
mod effect;
mod incidents;
mod marks;
mod nav;
mod plugin;
mod record;
mod results;
mod stores;

pub use super::dialogs::{Confirm, DoctorReport, Help, Mode, Prompt, confirm_body};
pub use breakglass::*;
pub use commands::*;
pub use effect::*;
pub use incidents::*;
pub use marks::marks_in;
pub use record::{Recording, Replay};
pub use stores::*;

/// Everything that can happen to the console.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Update(Update),
    /// Updates that arrived together: applied as one batch (derived once).
    Updates(Vec<Update>),
    /// A second passed (ages in the header move).
    Tick,
    Resize,
    /// Progress and results of actions, and the audit log, from the ops task.
    Op(OpEvent),
    /// A window's figures, or a failure, from the usage ledger's thread.
    Ledger(crate::store::ledger::Answer),
    /// Acks loaded or stored, or a failure, from the ack store's thread.
    Acks(crate::store::acks::Answer),
    /// Events read, or a failure, from the event journal's thread.
    Timeline(crate::store::timeline::Answer),
}

/// UI state: which view, selections, filters, modes. Owned by the UI task only.
#[derive(Debug)]
pub struct Ui {
    pub view: ViewId,
    back: Vec<ViewId>,
    pub tables: TableStates,
    /// Index into the current view's tables.
    pub focus: usize,
    pub detail: bool,
    pub mode: Mode,
    pub paused: bool,
    /// Each view's own state (the wall's cursor, the tree's, the Cost view's window).
    pub own: views::ViewStates,
    pub message: Option<(String, bool)>,
    /// The detail pane's first line shown (it has focus while open: movement keys scroll it).
    pub detail_scroll: u16,
    /// Rows the last frame showed of the detail pane (a page for PgUp/PgDn, and the clamp).
    pub shown: Shown,
    pub quit: bool,
}

/// Rows the last frame had for scrollable text, and how many lines it held.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Shown {
    pub detail_rows: u16,
    pub detail_lines: u16,
}

impl Shown {
    /// A page of `rows` (at least one line; 10 before anything was drawn).
    pub fn page(rows: u16) -> u16 {
        if rows == 0 { 10 } else { rows.saturating_sub(1).max(1) }
    }
}

impl Default for Ui {
    fn default() -> Self {
        Ui {
            view: views::overview::ID,
            back: Vec::new(),
            tables: TableStates::default(),
            focus: 0,
            detail: false,
            mode: Mode::Normal,
            paused: false,
            own: views::ViewStates::default(),
            message: None,
            detail_scroll: 0,
            shown: Shown::default(),
            quit: false,
        }
    }
}

/// An update or ledger look of this many jobs and nodes is a large release (see
/// [`App::memory_tick`]).
const LARGE_RELEASE: usize = 1024;

pub struct App {
    pub live: ClusterState,
    frozen: Option<ClusterState>,
    /// The flight recorder: what the live state applies, as it applies it.
    pub recording: Option<Recording>,
    /// Set when the console shows a recording ([`Replay`]): no action can be sent.
    pub replay: Option<Replay>,
    pub ui: Ui,
    pub keymap: Keymap,
    pub theme: Theme,
    pub glyphs: Glyphs,
    /// The current user, for "my jobs".
    pub user: String,
    pub cost: CostReport,
    /// `[efficiency]`: the thresholds of the EFF column and the job detail's notes.
    pub efficiency: crate::cost::eff::Rules,
    pub config_dir: Option<std::path::PathBuf>,
    /// Every action is refused; the header says READ-ONLY.
    pub readonly: bool,
    /// Plans actions (describe, permission preflight, identity): the planning side of the
    /// executor the ops task owns.
    pub planner: Option<std::sync::Arc<dyn Planner>>,
    /// Where confirmed plans go (the ops task).
    pub ops_tx: Option<tokio::sync::mpsc::UnboundedSender<OpMsg>>,
    /// In a fleet: each cluster's planner, read-only flag and ops task, by cluster name.
    /// Actions plan per cluster and each cluster's part goes to its own ops task; targets are
    /// named `cluster/name`.
    pub routes: std::collections::BTreeMap<crate::model::Text, ops::fleet::Route>,
    /// The cluster `:cluster NAME` focuses (every table shows only it); `None`: the fleet.
    pub focus: Option<Text>,
    /// The Alertmanager silences are created in and expired from (through the ops task).
    pub alertmanager: Option<crate::backend::alertmanager::AmConfig>,
    pub marks: Marks,
    pub audit: Vec<Record>,
    /// Results of the last action, shown until Esc.
    pub op_panel: Vec<(String, bool)>,
    pub break_glass: Option<BreakGlass>,
    /// Sessions this console ended (their end may not be in `audit` yet).
    break_glass_ended: Vec<String>,
    /// The real clock (break-glass countdown), set by the loop.
    pub wall_now: crate::model::Epoch,
    /// Asks polling backends for an immediate refresh.
    pub refresh_now: Vec<std::sync::Arc<tokio::sync::Notify>>,
    /// Job summaries for the ledger, asked of the Prometheus backend (with Prometheus and a
    /// ledger, in a single-cluster console).
    pub summaries: Option<super::summaries::Summaries>,
    /// Tells a history source (Prometheus) what the detail pane shows.
    pub focus_tx: Option<tokio::sync::watch::Sender<Option<crate::model::protocol::Focus>>>,
    /// Break-glass session length when none is given, and the longest allowed (minutes).
    pub break_glass_limits: (i64, i64),
    /// Blast-radius limits checked at preflight (`[limits]`).
    pub limits: crate::ops::guard::GuardConfig,
    /// User aliases and hotkeys.
    pub user_commands: super::usercmd::UserCommands,
    pub plugins: Vec<crate::tui::plugins::Plugin>,
    /// A plugin to run, taken by the loop (it owns the terminal and the runtime).
    pub pending_plugin: Option<PluginRun>,
    /// A plugin waiting for its confirming second press.
    armed_plugin: Option<String>,
    /// Kubernetes context switching (`:ctx`), when the Kubernetes backend runs.
    pub kube_ctx: Option<KubeContexts>,
    /// The usage ledger, when one is configured.
    pub ledger: Option<LedgerLink>,
    /// Freed heap handed back after a large update or ledger catch-up (see [`crate::memory`]).
    trim: crate::memory::TrimAfter,
    /// What `:doctor` runs (set by main with the configuration); `None`: not offered.
    pub doctor: Option<DoctorRunner>,
    /// The answer of the checks `:doctor` started, until it comes.
    doctor_rx: Option<tokio::sync::oneshot::Receiver<Vec<crate::model::doctor::Check>>>,
    /// The ack store shared by the consoles on this data dir, when there is one.
    pub acks: Option<AckLink>,
    /// The event journal (Timeline), when there is one.
    pub timeline: Option<super::journal::TimelineLink>,
    /// Acks and audited node actions, as last handed to the state.
    handling: crate::model::Handling,
    /// The cluster label the ops road writes in the audit log (the slurmrestd URL,
    /// `kube:CONTEXT`, `sim-NxG`), besides the scheduler's cluster name.
    pub audit_cluster: Option<String>,
    /// Effects queued by the message being handled (or a tick), until carried out.
    fx: Vec<Effect>,
}

/// The kubeconfig's contexts and where a switch request goes.
pub struct KubeContexts {
    pub tx: tokio::sync::mpsc::UnboundedSender<String>,
    pub names: Vec<String>,
    /// Contexts the configuration makes read-only, and whether the whole console is.
    pub readonly: Vec<String>,
    pub readonly_all: bool,
}

/// A plugin invocation: the program, its argv, and whether it runs in the background.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginRun {
    pub name: String,
    pub program: String,
    pub args: Vec<String>,
    pub background: bool,
}

impl App {
    pub fn new(state: ClusterState, keymap: Keymap, theme: Theme, glyphs: Glyphs, user: String) -> App {
        App {
            live: state,
            frozen: None,
            recording: None,
            replay: None,
            ui: Ui::default(),
            keymap,
            theme,
            glyphs,
            user,
            cost: CostReport::default(),
            efficiency: Default::default(),
            config_dir: None,
            readonly: false,
            planner: None,
            ops_tx: None,
            routes: Default::default(),
            focus: None,
            alertmanager: None,
            marks: Marks::default(),
            audit: Vec::new(),
            op_panel: Vec::new(),
            break_glass: None,
            break_glass_ended: Vec::new(),
            wall_now: 0,
            refresh_now: Vec::new(),
            focus_tx: None,
            summaries: None,
            break_glass_limits: (30, BREAK_GLASS_MAX_MIN),
            limits: Default::default(),
            user_commands: Default::default(),
            plugins: Vec::new(),
            pending_plugin: None,
            armed_plugin: None,
            kube_ctx: None,
            ledger: None,
            trim: crate::memory::TrimAfter::default(),
            doctor: None,
            doctor_rx: None,
            acks: None,
            timeline: None,
            handling: Default::default(),
            audit_cluster: None,
            fx: Vec::new(),
        }
    }

    /// What the screen shows: the frozen copy while paused, else the live state.
    pub fn state(&self) -> &ClusterState {
        self.frozen.as_ref().unwrap_or(&self.live)
    }

    pub fn table(&mut self, id: TableId) -> &mut TableState {
        &mut self.ui.tables[id]
    }

    /// The table that has focus in the current view.
    pub fn focused_table(&self) -> Option<TableId> {
        self.ui.view.tables().get(self.ui.focus).copied()
    }

    /// Handles a message: changes the console's state and queues what it asks of the world
    /// ([`Effect`]); returns whether the screen must be redrawn.
    fn handle(&mut self, msg: Msg) -> bool {
        match msg {
            Msg::Update(Update::JobFigures(f)) => self.on_job_figures(*f),
            Msg::Update(u) => {
                self.note_release(u.objects());
                // A no-op update (nothing new) neither redraws nor re-sorts; while paused the
                // screen does not change, except the header's PAUSED age.
                self.feed(vec![u]) && !self.ui.paused
            }
            Msg::Updates(us) => {
                self.note_release(us.iter().map(Update::objects).sum());
                let mut state = Vec::with_capacity(us.len());
                for u in us {
                    match u {
                        Update::JobFigures(f) => {
                            self.on_job_figures(*f);
                        }
                        u => state.push(u),
                    }
                }
                self.feed(state) && !self.ui.paused
            }
            Msg::Tick => {
                self.expire_break_glass();
                self.poll_doctor();
                self.replay_tick();
                true
            }
            Msg::Resize => true,
            Msg::Op(ev) => {
                self.on_op_event(ev);
                self.capture_selection();
                true
            }
            Msg::Key(k) => {
                self.on_key(k);
                self.capture_selection();
                true
            }
            Msg::Ledger(a) => self.on_ledger(a),
            Msg::Acks(a) => self.on_acks(a),
            Msg::Timeline(a) => super::journal::on_answer(self, a),
        }
    }

    fn on_key(&mut self, k: KeyEvent) {
        if k.kind == ratatui::crossterm::event::KeyEventKind::Release {
            return;
        }
        match self.ui.mode {
            Mode::Normal => {
                self.ui.message = None;
                if let Some(a) = self.keymap.action(&k) {
                    self.act(a);
                } else if let Some(cmd) = self.user_commands.hotkey(&k).map(|h| h.command.clone()) {
                    self.run_command(&cmd);
                } else {
                    self.plugin_key(&k);
                }
            }
            _ => self.on_dialog_key(k),
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
        self.ui.detail_scroll = 0;
        // The views left hear of it (the wall closes behind it).
        for other in views::VIEWS.iter().filter(|o| o.id() != v) {
            other.opened(None, self.ui.own.of(other.id()));
        }
    }

    fn toggle_pause(&mut self) {
        self.ui.paused = !self.ui.paused;
        self.frozen = self.ui.paused.then(|| self.live.clone());
    }

    /// The drawing context over the shown state.
    pub fn cx(&self) -> Dx<'_> {
        Dx {
            cx: Cx {
                s: self.state(),
                cost: &self.cost,
                tones: &crate::tables::tone::TONES,
                glyphs: self.glyphs,
                user: &self.user,
                audit: &self.audit,
                marked: &self.marks,
                rules: &self.efficiency,
            },
            theme: &self.theme,
        }
    }

    /// Brings the current view's cached rows up to date (filter/sort only when something changed).
    pub fn prepare(&mut self) {
        let s = self.frozen.as_ref().unwrap_or(&self.live);
        if self.ui.view == views::cost::ID {
            let cv = views::cost::settings(&self.ui.own);
            let window = cost::WINDOWS[cv.window].0;
            let key = (s.generation, window, self.ledger.as_ref().map_or(0, |l| l.seq));
            if self.cost.built_for != Some(key) {
                self.cost = self.cost_report(s, window);
                self.cost.built_for = Some(key);
                self.cost.by = cv.by;
                // The rows index the report: force a rebuild.
                for id in views::cost::ID.tables() {
                    self.ui.tables[id].invalidate();
                }
            }
        }
        let cx = Cx {
            s,
            cost: &self.cost,
            tones: &crate::tables::tone::TONES,
            glyphs: self.glyphs,
            user: &self.user,
            audit: &self.audit,
            marked: &self.marks,
            rules: &self.efficiency,
        };
        for id in self.ui.view.tables() {
            self.ui.tables[id].refresh(id.source(), &cx);
        }
        let view = self.ui.view;
        view.def().prepare(s, &self.ui.tables, self.ui.own.of(view));
    }
}
