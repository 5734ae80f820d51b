//! The Elm-style core: `Msg` in, `App::update` changes the UI state, `draw` renders from
//! `&ClusterState` and the UI state. No terminal or I/O here, so it is tested headless.

use super::keymap::{Action, Keymap};
use super::theme::Theme;
use super::views::gpus::WallState;
use super::views::topology::{TreeId, selected_node};
use super::views::{self, TableId, ViewId};
use super::widgets::Glyphs;
use super::widgets::table::Marks;
use super::widgets::table::{Cx, Dx, TableExt, TableState, TableStates};
use crate::audit::Record;
use crate::cost::{self, CostReport};
use crate::model::protocol::Update;
use crate::model::{GpuKey, NodeKey, ObjKey, Text};
use crate::ops::{self, ActionKind, OpEvent, OpJob, OpMsg, OpRequest, Plan, Planner};
use crate::state::ClusterState;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui_tree_widget::TreeState;

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

/// The console's side of the usage ledger: what to record (the tracker, on this task; cheap)
/// and the ledger's thread that writes and answers (file I/O, never on this task).
pub struct LedgerLink {
    pub writer: crate::store::ledger::Writer,
    /// One per cluster the state holds (one, scope `""`, in a single-cluster console): each
    /// cluster is recorded in its own ledger.
    pub trackers: Vec<crate::cost::track::Tracker>,
    /// The last window answer of each ledger (one per cluster in a fleet): (ledger name, window
    /// seconds, result).
    pub answers: Vec<(String, i64, Result<crate::store::WindowData, crate::store::LedgerError>)>,
    /// Bumped with each answer (the cost report is rebuilt for it).
    pub seq: u64,
    /// The window asked for last and when (wall clock).
    asked: Option<(i64, std::time::Instant)>,
    /// The last write failure, until writes succeed again.
    pub failure: Option<crate::store::LedgerError>,
}

/// The console's side of the ack store: its thread (file I/O, never on this task) and when it
/// was last asked for the cluster's acks.
pub struct AckLink {
    pub worker: crate::store::acks::Worker,
    asked: Option<std::time::Instant>,
}

impl AckLink {
    pub fn new(worker: crate::store::acks::Worker) -> AckLink {
        AckLink { worker, asked: None }
    }
}

/// How often the console reads the ack store again (acks made in other consoles show within it).
pub const ACK_REFRESH: std::time::Duration = std::time::Duration::from_secs(5);

/// How often the Cost view asks the ledger again for the window it shows.
const LEDGER_REASK: std::time::Duration = std::time::Duration::from_secs(15);

/// The ledgers the Cost view reads for `s`: (the cluster's scope in the state, its ledger's
/// name), one per configured cluster in a fleet, the files the trackers write.
fn ledgers(s: &ClusterState) -> Vec<(Text, Text)> {
    s.clusters()
        .iter()
        .map(|c| {
            let t = crate::cost::track::Tracker::for_cluster(c.clone());
            (c.clone(), t.ledger_name(s))
        })
        .filter(|(_, name)| !name.is_empty())
        .collect()
}

impl LedgerLink {
    pub fn new(writer: crate::store::ledger::Writer) -> LedgerLink {
        LedgerLink { writer, trackers: Vec::new(), answers: Vec::new(), seq: 0, asked: None, failure: None }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    Normal,
    Command(String),
    Filter(String),
    Help,
    /// The confirmation of an action: the plan, and the reason, ticket and typed confirmation.
    Confirm(Box<Confirm>),
    /// An action this cluster cannot perform: its reason and ticket, then what to run instead.
    Instead(Box<super::instead::Instead>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Confirm {
    pub req: OpRequest,
    pub plan: Plan,
    pub reason: String,
    pub ticket: String,
    pub typed: String,
    /// 0 reason, 1 ticket, 2 typed confirmation.
    pub field: usize,
    pub error: Option<String>,
    /// Targets that are marked but hidden by the focused table's filter: the plan flags them.
    pub hidden: Vec<String>,
    /// Says when the action takes the marks and not the highlighted row.
    pub note: Option<String>,
    /// The first plan line shown (the plan scrolls inside the dialog before confirming).
    pub scroll: usize,
    /// In a fleet: each cluster's part of the plan, sent to that cluster's ops task (empty
    /// for one cluster: the plan goes to the one ops task).
    pub parts: Vec<ops::fleet::Part>,
    /// Which schedulers of a paired host the plan acts in (^s cycles, planning again).
    pub pick: ops::fleet::Pick,
}

/// A time-boxed elevation for incidents.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakGlass {
    pub id: String,
    pub until: crate::model::Epoch,
    pub ticket: String,
    pub reason: String,
}

impl BreakGlass {
    /// What every record written under the session carries.
    pub fn tag(&self) -> crate::audit::BreakGlass {
        crate::audit::BreakGlass { session: self.id.clone(), ticket: self.ticket.clone() }
    }
}

/// `:doctor`'s report: the checks while they run (none yet), then their lines.
#[derive(Debug, Clone, Default)]
pub struct DoctorReport {
    pub running: bool,
    pub lines: Vec<crate::model::doctor::Check>,
}

/// Starts the checks of `gpuplane doctor` off the UI task; the answer comes on the receiver.
pub type DoctorRunner = std::sync::Arc<
    dyn Fn() -> tokio::sync::oneshot::Receiver<Vec<crate::model::doctor::Check>> + Send + Sync,
>;

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
    pub wall: bool,
    pub wall_state: WallState,
    pub tree: TreeState<TreeId>,
    pub cost_window: usize,
    /// What the Cost view's upper table lists (its `by` key).
    pub cost_by: crate::cost::By,
    /// The Cost view's table that last had focus (Tab among the tables its mode shows).
    pub cost_focus: usize,
    pub message: Option<(String, bool)>,
    pub help_scroll: u16,
    /// The help's search (`/` in help): the lines shown are those that match.
    pub help_query: String,
    /// Whether keys go to the help's search line.
    pub help_searching: bool,
    /// The detail pane's first line shown (it has focus while open: movement keys scroll it).
    pub detail_scroll: u16,
    /// Command names an ambiguous Tab completion offers, shown beside the command line.
    pub completions: Vec<String>,
    /// Rows the last frame showed of the help, the detail pane and the plan (a page for
    /// PgUp/PgDn, and the clamp).
    pub shown: Shown,
    pub quit: bool,
    /// `:doctor`'s report, shown in the help's pager while it is open (`None`: the help).
    pub doctor: Option<DoctorReport>,
}

/// Rows the last frame had for scrollable text, and how many lines it held.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Shown {
    pub help_rows: u16,
    pub detail_rows: u16,
    pub detail_lines: u16,
    pub plan_rows: u16,
    pub plan_total: u16,
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
            wall: false,
            wall_state: WallState::default(),
            tree: TreeState::default(),
            cost_window: 1,
            cost_by: crate::cost::By::default(),
            cost_focus: 0,
            message: None,
            help_scroll: 0,
            help_query: String::new(),
            help_searching: false,
            detail_scroll: 0,
            completions: Vec::new(),
            shown: Shown::default(),
            quit: false,
            doctor: None,
        }
    }
}

/// An update or ledger look of this many jobs and nodes is a large release (see
/// [`App::memory_tick`]).
const LARGE_RELEASE: usize = 1024;

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

    /// Handles a message; returns whether the screen must be redrawn.
    pub fn update(&mut self, msg: Msg) -> bool {
        match msg {
            Msg::Update(Update::JobFigures(f)) => self.on_job_figures(*f),
            Msg::Update(u) => {
                self.note_release(u.objects());
                // A no-op update (nothing new) neither redraws nor re-sorts; while paused the
                // screen does not change, except the header's PAUSED age.
                self.live.apply(u) && !self.ui.paused
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
                self.live.apply_batch(state) && !self.ui.paused
            }
            Msg::Tick => {
                self.expire_break_glass();
                self.poll_doctor();
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

    /// How one of the console's own files did: to the state, like every figure.
    pub fn on_store(&mut self, s: crate::model::protocol::StoreStatus) -> bool {
        self.live.apply(Update::Store(s)) && !self.ui.paused && self.ui.view == views::sources::ID
    }

    fn on_acks(&mut self, a: crate::store::acks::Answer) -> bool {
        use crate::store::acks::Answer;
        match a {
            Answer::Store(s) => self.on_store(s),
            Answer::Acks { cluster, acks } if !self.routes.is_empty() => {
                // A fleet: each cluster's acks replace only that cluster's.
                if !self.routes.contains_key(cluster.as_str()) {
                    return false;
                }
                let mut all: Vec<_> =
                    self.handling.acks.iter().filter(|a| a.cluster != cluster).cloned().collect();
                all.extend(acks);
                if all == self.handling.acks {
                    return false;
                }
                self.handling.acks = all;
                self.push_handling()
            }
            Answer::Acks { cluster, acks } => {
                if cluster != self.live.cluster.as_str() || self.handling.acks == acks {
                    return false;
                }
                self.handling.acks = acks;
                self.push_handling()
            }
            Answer::Stored(_) => false,
            Answer::Failed(e) => {
                self.ui.message = Some((e.to_string(), true));
                true
            }
        }
    }

    /// Hands the state the acks and audited actions its incidents' lifecycle comes from.
    fn push_handling(&mut self) -> bool {
        self.live.apply(Update::Handling(Box::new(self.handling.clone()))) && !self.ui.paused
    }

    /// Asks the ack store for this cluster's acks every [`ACK_REFRESH`] (answers come back as
    /// [`Msg::Acks`]).
    pub fn acks_tick(&mut self) {
        // In a fleet, each cluster's acks by its name.
        let clusters: Vec<String> = if self.routes.is_empty() {
            vec![self.live.cluster.to_string()]
        } else {
            self.routes.keys().map(|c| c.to_string()).collect()
        };
        let now = self.wall_now.max(self.live.now);
        let Some(l) = self.acks.as_mut() else { return };
        if l.asked.is_none_or(|t| t.elapsed() >= ACK_REFRESH) {
            l.asked = Some(std::time::Instant::now());
            for cluster in clusters {
                l.worker.send(crate::store::acks::Request::Load { cluster, now });
            }
        }
    }

    /// `a` on an incident: opens `:ack [TICKET] NOTE…` for it; refused in read-only mode.
    pub fn begin_ack(&mut self) {
        if self.readonly {
            self.ui.message = Some((ACK_READONLY.into(), true));
            return;
        }
        self.prepare();
        match self.ack_target() {
            Ok(_) => self.ui.mode = Mode::Command("ack ".into()),
            Err(m) => self.ui.message = Some((m, true)),
        }
    }

    /// The incident selected in the Overview, by identity, if it is still listed and not resolved.
    fn ack_target(&self) -> Result<crate::model::IncidentKey, String> {
        let Some(ObjKey::Incident(cluster, subject, signal)) =
            self.ui.tables[views::overview::INCIDENTS].selected_id().cloned()
        else {
            return Err("ack: select an incident in the Overview first".into());
        };
        let s = self.state();
        match s.incidents.iter().find(|i| i.cluster == cluster && i.subject == subject && i.signal == signal)
        {
            Some(i) if matches!(i.lifecycle, crate::state::Lifecycle::Resolved { .. }) => {
                Err(format!("ack: {} has resolved", crate::sanitize::sanitize(&subject)))
            }
            Some(i) => Ok(i.key()),
            None => Err(format!("ack: {}: this incident has cleared", crate::sanitize::sanitize(&subject))),
        }
    }

    /// `:ack [TICKET] NOTE…`: acknowledges the selected incident. The ops task audits it first
    /// (fail closed), then the console stores it in the ack store ([`OpEvent::Acked`]).
    fn ack_command(&mut self, args: &str) {
        if self.readonly {
            self.ui.message = Some((ACK_READONLY.into(), true));
            return;
        }
        let key = match self.ack_target() {
            Ok(k) => k,
            Err(m) => {
                self.ui.message = Some((m, true));
                return;
            }
        };
        let (ticket, note) = split_ticket(args);
        // In a fleet the ack belongs to the incident's cluster: audited by its ops task and
        // stored under its name, so a same-named node's incident in another cluster stays open.
        let (cluster, tx) = if self.routes.is_empty() {
            (self.live.cluster.to_string(), self.ops_tx.as_ref())
        } else {
            let c = self.selected_incident_cluster().unwrap_or_default();
            let tx = self.routes.get(&c).and_then(|r| r.tx.as_ref()).or(self.ops_tx.as_ref());
            (c.to_string(), tx)
        };
        let Some(tx) = tx else {
            self.ui.message =
                Some(("ack: acks are audited and no audit log is open here; refused".into(), true));
            return;
        };
        let ack = crate::model::Ack {
            cluster,
            key,
            by: self.user.clone(),
            at: self.wall_now.max(self.live.now),
            note,
            ticket,
        };
        let what = crate::sanitize::sanitize(&ack.key.subject).into_owned();
        let _ = tx.send(OpMsg::Ack(ack));
        self.ui.message = Some((format!("ack {what}: recording in the audit log"), false));
    }

    /// The cluster of the incident selected in the Overview (a fleet cluster's name).
    fn selected_incident_cluster(&self) -> Option<Text> {
        match self.ui.tables[views::overview::INCIDENTS].selected_id() {
            Some(ObjKey::Incident(cluster, ..)) => Some(cluster.clone()),
            _ => None,
        }
    }

    /// The matchers of a silence for the alert selected in the Alerts view (by fingerprint).
    fn silence_target(&self) -> Result<Vec<crate::model::alert::Matcher>, String> {
        if !views::alerts::can_silence(self.state()) {
            return Err(format!("silence: alerts {}", views::alerts::READ_ONLY));
        }
        let Some(ObjKey::Alert(fp)) = self.ui.tables[views::alerts::ALERTS].selected_id().cloned() else {
            return Err("silence: select an alert in the Alerts view first".into());
        };
        let Some(a) = self.state().alerts.iter().find(|a| a.fingerprint == fp) else {
            return Err("silence: the selected alert is no longer in Alertmanager".into());
        };
        ops::silence::matchers_for(a).ok_or_else(|| {
            format!(
                "silence: {} names no node or instance label; use gpuplane silence create with explicit matchers",
                crate::sanitize::sanitize(&a.name)
            )
        })
    }

    /// The silence selected in the Alerts view, if still listed and not expired.
    fn unsilence_target(&self) -> Result<String, String> {
        if !views::alerts::can_silence(self.state()) {
            return Err(format!("unsilence: alerts {}", views::alerts::READ_ONLY));
        }
        let Some(ObjKey::Silence(id)) = self.ui.tables[views::alerts::SILENCES].selected_id().cloned() else {
            return Err("unsilence: select a silence in the Alerts view first".into());
        };
        match self.state().silences.iter().find(|s| s.id == id) {
            Some(s) if s.state == crate::model::alert::SilenceState::Expired => {
                Err(format!("unsilence: silence {} has expired already", crate::sanitize::sanitize(&id)))
            }
            Some(s) => Ok(s.id.to_string()),
            None => Err("unsilence: the selected silence is no longer in Alertmanager".into()),
        }
    }

    /// Where a silence request goes: the Alertmanager and the ops task, or why not.
    fn silence_road(
        &self,
    ) -> Result<(crate::backend::alertmanager::AmConfig, &tokio::sync::mpsc::UnboundedSender<OpMsg>), String>
    {
        let am =
            self.alertmanager.clone().ok_or("silence: no Alertmanager configured (--alertmanager URL)")?;
        let tx = self
            .ops_tx
            .as_ref()
            .ok_or("silence: silences are audited and no audit log is open here; refused")?;
        Ok((am, tx))
    }

    /// What the command being typed would act on, for the prompt: the matchers of `:silence`
    /// and the silence `:unsilence` expires (read from the selection as it is now).
    pub fn command_hint(&self, buf: &str) -> Option<String> {
        let head = buf.split_whitespace().next()?;
        if head == "silence" && self.ui.view == views::alerts::ID {
            let m = self.silence_target().ok()?;
            let text = m.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
            return Some(format!("silence {{{text}}}: DURATION [TICKET] REASON"));
        }
        if head == "unsilence" && self.ui.view == views::alerts::ID {
            return Some(format!("expire silence {}: [TICKET] REASON", self.unsilence_target().ok()?));
        }
        None
    }

    /// The silence key in the Alerts view: opens `:silence DURATION [TICKET] REASON` for the
    /// selected alert (its name and node); refused in read-only mode.
    pub fn begin_silence(&mut self) {
        if self.readonly {
            self.ui.message = Some((SILENCE_READONLY.into(), true));
            return;
        }
        self.prepare();
        match self.silence_target() {
            Ok(_) => self.ui.mode = Mode::Command("silence ".into()),
            Err(m) => self.ui.message = Some((m, true)),
        }
    }

    /// The expire key in the Alerts view: opens `:unsilence [TICKET] REASON` for the selected
    /// silence; refused in read-only mode.
    pub fn begin_unsilence(&mut self) {
        if self.readonly {
            self.ui.message = Some((SILENCE_READONLY.into(), true));
            return;
        }
        self.prepare();
        match self.unsilence_target() {
            Ok(_) => self.ui.mode = Mode::Command("unsilence ".into()),
            Err(m) => self.ui.message = Some((m, true)),
        }
    }

    /// Sends a checked silence request to the ops task, which plans, audits and sends it.
    fn send_silence(&mut self, op: ops::silence::SilenceOp, args: &str, what: String) {
        let (ticket, reason) = split_ticket(args);
        let why = ops::silence::Why { reason, ticket, dry_run: false };
        if let Err(e) = ops::silence::check(&op, &why, self.readonly) {
            self.ui.message = Some((format!("silence: {e}"), true));
            return;
        }
        let (am, tx) = match self.silence_road() {
            Ok(r) => r,
            Err(m) => {
                self.ui.message = Some((m, true));
                return;
            }
        };
        let req = ops::silence::SilenceReq { am, op, why, user: self.user.clone() };
        let _ = tx.send(OpMsg::Silence(Box::new(req)));
        self.ui.message = Some((format!("{what}: sending to Alertmanager (audited)"), false));
    }

    /// `:silence DURATION [TICKET] REASON…`: silences the selected alert by its name and node.
    fn silence_command(&mut self, args: &str) {
        if self.readonly {
            self.ui.message = Some((SILENCE_READONLY.into(), true));
            return;
        }
        let matchers = match self.silence_target() {
            Ok(m) => m,
            Err(m) => {
                self.ui.message = Some((m, true));
                return;
            }
        };
        let args = args.trim();
        let (first, rest) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
        let duration = match humantime::parse_duration(first) {
            Ok(d) => d,
            Err(_) => {
                self.ui.message = Some((
                    "silence: DURATION [TICKET] REASON (e.g. :silence 2h INC-42 swapping the GPU)".into(),
                    true,
                ));
                return;
            }
        };
        let text = matchers.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        let what = format!("silence {{{}}} for {first}", crate::sanitize::sanitize(&text));
        self.send_silence(ops::silence::SilenceOp::Create { matchers, duration }, rest, what);
    }

    /// `:unsilence [TICKET] REASON…`: expires the selected silence.
    fn unsilence_command(&mut self, args: &str) {
        if self.readonly {
            self.ui.message = Some((SILENCE_READONLY.into(), true));
            return;
        }
        match self.unsilence_target() {
            Ok(id) => {
                let what = format!("expire silence {}", crate::sanitize::sanitize(&id));
                self.send_silence(ops::silence::SilenceOp::Expire { ids: vec![id] }, args, what);
            }
            Err(m) => self.ui.message = Some((m, true)),
        }
    }

    /// The Prometheus backend's figures of a job the ledger wants a summary of: the summary
    /// goes to the ledger (nothing on screen changes).
    fn on_job_figures(&mut self, f: crate::model::jobstats::JobFigures) -> bool {
        let at = self.state().now;
        let prices = self.state().prices.clone();
        let put = self.summaries.as_mut().and_then(|s| s.answered(f, at, &self.efficiency, &prices));
        if let (Some(r), Some(l)) = (put, self.ledger.as_ref()) {
            l.writer.send(r);
        }
        false
    }

    fn on_ledger(&mut self, a: crate::store::ledger::Answer) -> bool {
        use crate::store::ledger::Answer;
        let a = match a {
            Answer::Store(s) => return self.on_store(s),
            Answer::SummaryWanted { cluster, job, intervals } => {
                let prices = self.state().prices.clone();
                if let Some(s) = self.summaries.as_mut() {
                    s.want(cluster, job, intervals, &self.efficiency, &prices);
                }
                return false;
            }
            a => a,
        };
        let Some(l) = self.ledger.as_mut() else { return false };
        match a {
            Answer::Store(_) => {}
            Answer::Window { cluster, result } => {
                // The window the answer is for (a key may have changed the asked one since).
                let window = match &result {
                    Ok(w) => w.to - w.from,
                    Err(_) => l.asked.map_or(0, |(w, _)| w),
                };
                l.answers.retain(|(c, _, _)| *c != cluster);
                l.answers.push((cluster, window, result));
                l.seq += 1;
            }
            Answer::Failed(e) => l.failure = Some(e),
            Answer::Recovered => l.failure = None,
            Answer::SummaryWanted { .. } => {}
        }
        self.ui.view == views::cost::ID
    }

    /// Hands the ledger what it should record (an observation once a minute of source time)
    /// and asks it for the Cost view's window when that is shown. Returns whether the screen
    /// changes (it does not: answers come back as [`Msg::Ledger`]).
    /// An update or a look of `objects` jobs and nodes: a large one replaces (and frees) as
    /// much as it brings, so freed memory is handed back once things are quiet again.
    fn note_release(&mut self, objects: usize) {
        if objects >= LARGE_RELEASE {
            self.trim.released(std::time::Instant::now());
        }
    }

    /// Hands freed heap back to the system when a large release has settled, off this task (the
    /// trim walks every arena).
    pub fn memory_tick(&mut self) {
        if self.trim.due(std::time::Instant::now()) {
            tokio::task::spawn_blocking(|| {
                let t = std::time::Instant::now();
                crate::memory::release_free();
                tracing::debug!(ms = t.elapsed().as_secs_f64() * 1e3, "freed heap handed back to the system");
            });
        }
    }

    pub fn ledger_tick(&mut self) {
        let Some(l) = self.ledger.as_mut() else { return };
        let s = &self.live;
        for c in s.clusters() {
            if !l.trackers.iter().any(|t| t.scope() == c) {
                l.trackers.push(crate::cost::track::Tracker::for_cluster(c.clone()));
            }
        }
        let mut recorded = 0;
        for t in &mut l.trackers {
            if let Some(o) = t.next(s, crate::cost::track::JOBS_PER_LOOK) {
                recorded += o.jobs.len() + o.intervals.len();
                l.writer.send(crate::store::ledger::Request::Record(Box::new(o)));
            }
        }
        self.note_release(recorded);
        let Some(l) = self.ledger.as_mut() else { return };
        let s = &self.live;
        if self.ui.view != views::cost::ID {
            return;
        }
        let window = cost::WINDOWS[self.ui.cost_window].0;
        if l.asked.is_none_or(|(w, at)| w != window || at.elapsed() >= LEDGER_REASK) {
            l.asked = Some((window, std::time::Instant::now()));
            // Each cluster's own ledger (the files the trackers write), one request each.
            for (_, name) in ledgers(s) {
                l.writer.send(crate::store::ledger::Request::Window {
                    cluster: name.to_string(),
                    from: s.now - window,
                    to: s.now,
                });
            }
        }
    }

    /// The cost report for the shown state and window: from the ledger's answer when it has
    /// one for this window, saying why not when the ledger fails.
    fn cost_report(&self, s: &ClusterState, window: i64) -> CostReport {
        let Some(l) = &self.ledger else { return cost::report(s, window) };
        let mut windows: Vec<(&str, &crate::store::WindowData)> = Vec::new();
        let mut reading = false;
        let names = ledgers(s);
        for (scope, name) in &names {
            match l.answers.iter().find(|(c, w, _)| *w == window && c.as_str() == name.as_str()) {
                Some((_, _, Ok(data))) => windows.push((scope.as_str(), data)),
                Some((_, _, Err(e))) => return cost::report_unavailable(s, window, e.to_string()),
                None => reading = true,
            }
        }
        if let Some(e) = &l.failure
            && (reading || windows.is_empty())
        {
            return cost::report_unavailable(s, window, e.to_string());
        }
        if reading || windows.is_empty() {
            // Asked, not answered yet: the jobs the console holds meanwhile, said to be so.
            return cost::report_reading(s, window);
        }
        let mut r = cost::report_ledgers(s, s.now - window, s.now, &windows);
        if let Some(e) = &l.failure {
            r.basis = cost::Basis::Unavailable { why: format!("{e} (figures up to the last write)") };
        }
        r
    }

    fn on_key(&mut self, k: KeyEvent) {
        if k.kind == ratatui::crossterm::event::KeyEventKind::Release {
            return;
        }
        match self.ui.mode.clone() {
            Mode::Confirm(c) => self.on_confirm_key(k, *c),
            Mode::Instead(d) => self.on_instead_key(k, *d),
            Mode::Command(buf) => self.on_prompt_key(k, buf, true),
            Mode::Filter(buf) => self.on_prompt_key(k, buf, false),
            Mode::Help => self.on_help_key(k),
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
        }
    }

    /// Opens the help at its top, without a search.
    pub fn open_help(&mut self) {
        self.ui.doctor = None;
        self.ui.help_scroll = 0;
        self.ui.help_query.clear();
        self.ui.help_searching = false;
        self.ui.mode = Mode::Help;
    }

    /// The help is paged (j/k a line, PgUp/PgDn a page, g/G the ends), searched with `/`, and
    /// closed by q, Esc or ?; other keys do nothing (a stray key does not close it).
    fn on_help_key(&mut self, k: KeyEvent) {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if self.ui.help_searching {
            match k.code {
                KeyCode::Char('c') if ctrl => self.ui.quit = true,
                KeyCode::Esc => {
                    self.ui.help_query.clear();
                    self.ui.help_searching = false;
                }
                KeyCode::Enter => self.ui.help_searching = false,
                KeyCode::Backspace if self.ui.help_query.pop().is_none() => self.ui.help_searching = false,
                KeyCode::Char('u') if ctrl => self.ui.help_query.clear(),
                KeyCode::Char(c) if !ctrl => self.ui.help_query.push(c),
                _ => {}
            }
            self.ui.help_scroll = 0;
            return;
        }
        let page = Shown::page(self.ui.shown.help_rows);
        let max = (super::help::lines(self).len() as u16).saturating_sub(self.ui.shown.help_rows.max(1));
        let action = self.keymap.action(&k);
        let scroll = &mut self.ui.help_scroll;
        match (k.code, action) {
            (_, Some(Action::Quit)) if ctrl => self.ui.quit = true,
            (KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('?'), _)
            | (_, Some(Action::Help | Action::Back | Action::Quit)) => {
                if self.ui.help_query.is_empty() || !matches!(k.code, KeyCode::Esc) {
                    self.ui.mode = Mode::Normal;
                } else {
                    // Esc first drops the search, then closes.
                    self.ui.help_query.clear();
                }
            }
            (KeyCode::Char('/'), _) | (_, Some(Action::Filter)) => {
                self.ui.help_query.clear();
                self.ui.help_searching = true;
            }
            (_, Some(Action::Down)) => *scroll = scroll.saturating_add(1),
            (_, Some(Action::Up)) => *scroll = scroll.saturating_sub(1),
            (KeyCode::PageDown | KeyCode::Char(' '), _) | (_, Some(Action::PageDown)) => {
                *scroll = scroll.saturating_add(page)
            }
            (KeyCode::PageUp, _) | (_, Some(Action::PageUp)) => *scroll = scroll.saturating_sub(page),
            (_, Some(Action::Top)) => *scroll = 0,
            (_, Some(Action::Bottom)) => *scroll = max,
            _ => {}
        }
        self.ui.help_scroll = self.ui.help_scroll.min(max);
    }

    fn on_prompt_key(&mut self, k: KeyEvent, mut buf: String, command: bool) {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if k.code != KeyCode::Tab {
            self.ui.completions.clear();
        }
        match k.code {
            KeyCode::Char('c') if ctrl => self.ui.quit = true,
            KeyCode::Esc => {
                if !command {
                    self.set_filter(String::new());
                    self.end_filter_edit();
                }
                self.ui.mode = Mode::Normal;
                return;
            }
            KeyCode::Enter => {
                if !command {
                    self.end_filter_edit();
                }
                self.ui.mode = Mode::Normal;
                if command {
                    self.run_command(buf.trim());
                }
                return;
            }
            KeyCode::Tab if command => {
                let (completed, candidates) = match buf.strip_prefix("cluster ") {
                    // `:cluster` completes the fleet's cluster names.
                    Some(arg) => complete_from(&buf[..buf.len() - arg.len()], arg, self.cluster_names()),
                    None => {
                        let (b, c) = complete(&buf);
                        (b, c.into_iter().map(String::from).collect())
                    }
                };
                buf = completed;
                // Shown beside the command line until the next key.
                self.ui.completions = if candidates.len() > 1 { candidates } else { Vec::new() };
            }
            KeyCode::Backspace if buf.pop().is_none() => {
                if !command {
                    self.end_filter_edit();
                }
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

    fn end_filter_edit(&mut self) {
        if let Some(t) = self.focused_table() {
            let st = self.table(t);
            st.end_edit();
            // Enter on a bad filter keeps the one in force and says why.
            if let Some(e) = st.filter_error().map(str::to_string) {
                self.ui.message = Some((format!("filter not applied: {e}"), true));
            }
        }
    }

    fn set_filter(&mut self, f: String) {
        if let Some(t) = self.focused_table() {
            self.table(t).set_filter(&f);
            // Apply it now (or say why not), so keys after it move in the filtered rows.
            self.prepare();
        }
    }

    /// Runs a `:` command.
    pub fn run_command(&mut self, cmd: &str) {
        let mut words = cmd.split_whitespace();
        let Some(head) = words.next() else { return };
        let rest = words.collect::<Vec<_>>().join(" ");
        // Aliases expand once (an alias naming an alias is not followed).
        if let Some(expanded) = self.user_commands.expand(head, &rest, &self.user) {
            return self.run_builtin(&expanded);
        }
        self.run_builtin(cmd);
    }

    fn run_builtin(&mut self, cmd: &str) {
        let mut words = cmd.split_whitespace();
        let Some(head) = words.next() else { return };
        let rest = words.collect::<Vec<_>>().join(" ");
        match head {
            "q" | "quit" | "q!" | "exit" => self.ui.quit = true,
            "help" | "h" => self.open_help(),
            "pause" => self.toggle_pause(),
            "breakglass" | "bg" => self.break_glass_command(&rest),
            "ctx" | "context" => self.context_command(&rest),
            "cluster" => self.cluster_command(&rest),
            "acceptance" | "nccl" => self.acceptance_command(&rest),
            "doctor" => self.doctor_command(),
            "ack" => self.ack_command(&rest),
            "silence" => self.silence_command(&rest),
            "unsilence" => self.unsilence_command(&rest),
            "theme" => {
                let (theme, err) = Theme::load(&rest, self.config_dir.as_deref(), false);
                self.theme = theme;
                self.ui.message = err.map(|e| (e.to_string(), true));
            }
            name => match ViewId::by_name(name) {
                Some(v) => {
                    self.goto(v);
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

    /// `:doctor`: the checks of `gpuplane doctor`, run off the UI task; the report opens at
    /// once (saying they run) and fills in when they answer (polled each second).
    fn doctor_command(&mut self) {
        let Some(run) = &self.doctor else {
            self.ui.message = Some(("doctor is not available here (run `gpuplane doctor`)".into(), true));
            return;
        };
        if self.doctor_rx.is_none() {
            self.doctor_rx = Some(run());
        }
        self.open_help();
        self.ui.doctor = Some(DoctorReport { running: true, lines: Vec::new() });
        self.poll_doctor();
    }

    /// Takes the checks' answer when it has come.
    fn poll_doctor(&mut self) {
        let Some(rx) = &mut self.doctor_rx else { return };
        let lines = match rx.try_recv() {
            Ok(lines) => lines,
            Err(tokio::sync::oneshot::error::TryRecvError::Empty) => return,
            Err(tokio::sync::oneshot::error::TryRecvError::Closed) => {
                use crate::model::doctor::{Check, Status};
                let mut c =
                    Check::line("doctor", "", "", Status::Fail, "the checks stopped without an answer");
                c.fix("run `gpuplane doctor` in a shell");
                vec![c]
            }
        };
        self.doctor_rx = None;
        // Shown if the report is still open (a new `:doctor` runs the checks again).
        if let Some(d) = &mut self.ui.doctor {
            d.running = false;
            d.lines = lines;
        }
    }

    /// `:ctx` lists the kubeconfig's contexts; `:ctx NAME` switches to one (the watches
    /// restart there; a read-only context refuses every action).
    /// The fleet's cluster names, and `all`, for `:cluster`.
    fn cluster_names(&self) -> Vec<String> {
        let mut v: Vec<String> =
            self.live.clusters().iter().filter(|c| !c.is_empty()).map(|c| c.to_string()).collect();
        v.push("all".into());
        v
    }

    /// `:cluster NAME` focuses one cluster of a fleet: every table shows only its objects (a
    /// `cluster==NAME` filter beside each table's own) and the header names it; `:cluster all`
    /// returns to the whole fleet; `:cluster` says which clusters there are.
    fn cluster_command(&mut self, rest: &str) {
        let names = self.cluster_names();
        let known = names[..names.len() - 1].join(", ");
        let name = rest.trim();
        if names.len() < 2 {
            self.ui.message = Some(("clusters: this console shows one cluster (a fleet has [[cluster]] entries or --sim-clusters N)".into(), true));
            return;
        }
        let raw = match name {
            "" => {
                let now = self.focus.as_deref().map(|f| format!("; focused on {f}")).unwrap_or_default();
                self.ui.message =
                    Some((crate::sanitize::sanitize(&format!("clusters: {known}{now}")).into_owned(), false));
                return;
            }
            "all" => {
                self.focus = None;
                String::new()
            }
            n if names.iter().any(|c| c == n) => {
                self.focus = Some(n.into());
                format!("cluster=={n}")
            }
            n => {
                self.ui.message = Some((
                    crate::sanitize::sanitize(&format!(
                        "no cluster {n:?} (clusters: {known}; :cluster all for every one)"
                    ))
                    .into_owned(),
                    true,
                ));
                return;
            }
        };
        for t in views::all_tables() {
            self.ui.tables[t.id()].set_scope(&raw);
        }
        self.ui.message = Some(match &self.focus {
            Some(f) => (
                crate::sanitize::sanitize(&format!("focus: {f} (:cluster all returns to the fleet)"))
                    .into_owned(),
                false,
            ),
            None => ("focus: every cluster".into(), false),
        });
    }

    fn context_command(&mut self, rest: &str) {
        let Some(k) = &self.kube_ctx else {
            self.ui.message =
                Some(("contexts are a Kubernetes notion: start with --kube or --context".into(), true));
            return;
        };
        let name = rest.trim();
        if name.is_empty() {
            self.ui.message = Some((format!("contexts: {}", k.names.join(", ")), false));
            return;
        }
        if !k.names.iter().any(|n| n == name) {
            self.ui.message = Some((format!("no context {name:?} (known: {})", k.names.join(", ")), true));
            return;
        }
        if k.tx.send(name.to_string()).is_err() {
            self.ui.message = Some(("the Kubernetes backend has stopped".into(), true));
            return;
        }
        self.readonly = k.readonly_all || k.readonly.iter().any(|r| r == name);
        // A read-only context ends break-glass: it cannot lift read-only.
        if self.readonly
            && let Some(b) = self.break_glass.take()
        {
            self.end_break_glass(&b, &format!("context {name} is read-only"));
        }
        self.marks = Default::default();
        self.ui.message = Some((format!("switching to context {name}…"), false));
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
        if v != views::gpus::ID {
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
        let tree_view = self.ui.view == views::topology::ID;
        if tree_view
            && self.ui.tree.selected().is_empty()
            && let Some(p) = super::views::topology::first_pool(self.state())
        {
            self.ui.tree.select(vec![p]);
        }
        let wall = self.ui.view == views::gpus::ID && self.ui.wall;
        let nodes = self.state().nodes.len();
        let page = 20isize;
        match a {
            Action::Quit => self.ui.quit = true,
            Action::Help => self.open_help(),
            Action::Command => self.ui.mode = Mode::Command(String::new()),
            Action::Filter => {
                let current = match self.focused_table() {
                    Some(t) => {
                        self.table(t).begin_edit();
                        self.ui.tables[t].filter.raw.clone()
                    }
                    None => String::new(),
                };
                self.ui.mode = Mode::Filter(current);
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
                    self.select_wall_node();
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
                    self.refresh_now.iter().for_each(|n| n.notify_one());
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

    /// How many marks the rows of table `id` stand for, and how many of those the filter hides.
    pub fn marks_in(&self, id: TableId) -> (usize, usize) {
        let st = &self.ui.tables[id];
        let cx = self.cx();
        let src = id.source();
        let Some(first) = st.rows.first().or(st.sorted_keys().first()) else { return (0, 0) };
        let marks: Vec<ObjKey> = match src.identity(&cx, *first) {
            Some(ObjKey::Job(_)) => self.marks.jobs.iter().cloned().map(ObjKey::Job).collect(),
            Some(ObjKey::Node(_)) => self.marks.nodes.iter().cloned().map(ObjKey::Node).collect(),
            // GPU and port rows mark their node: the count, not which rows hide it.
            Some(ObjKey::Gpu(..) | ObjKey::Port(..)) => return (self.marks.nodes.len(), 0),
            _ => return (0, 0),
        };
        if marks.is_empty() {
            return (0, 0);
        }
        // A mark is hidden when its row is gone or the filter rejects it (one lookup per mark).
        let hidden = marks
            .iter()
            .filter(|m| match src.locate(&cx, m) {
                Some(row) => !st.filter.matches(src, &cx, row),
                None => true,
            })
            .count();
        (marks.len(), hidden)
    }

    /// Runs a key a view declares: in its view, or (when it works anywhere) after opening it.
    fn view_key(&mut self, name: &str) {
        let Some((view, key)) = views::view_key(name) else { return };
        let opened = self.ui.view != view.id();
        if opened {
            if !key.anywhere {
                self.ui.message = Some((format!("{}: only in the {} view", key.help, view.title()), false));
                return;
            }
            self.goto(view.id());
        }
        (key.run)(self, opened);
    }

    fn enter(&mut self) {
        if self.ui.view.def().enter(self) {
            return;
        }
        match self.ui.view {
            views::topology::ID => {
                self.ui.tree.toggle_selected();
            }
            views::gpus::ID if self.ui.wall => {
                if let Some(n) = self.state().node_key(self.ui.wall_state.selected) {
                    self.jump_to_node(n);
                }
            }
            views::overview::ID if self.ui.detail => {
                // The incident the operator chose, by what it is, not where it sorted.
                let Some(ObjKey::Incident(cluster, subject, signal)) =
                    self.ui.tables[views::overview::INCIDENTS].selected_id().cloned()
                else {
                    return;
                };
                let s = self.state();
                let Some(inc) = s
                    .incidents
                    .iter()
                    .find(|i| i.cluster == cluster && i.subject == subject && i.signal == signal)
                else {
                    self.ui.message = Some((format!("{subject}: this incident has cleared"), false));
                    return;
                };
                // In its own cluster (a fleet's incidents name theirs).
                let job = inc.job.filter(|&id| s.job_in(&inc.cluster, id).is_some());
                let node = inc.node.as_ref().filter(|n| s.node_in(&inc.cluster, n).is_some());
                let cluster = s.cluster_of(&inc.cluster).clone();
                if let Some(id) = job {
                    self.goto(views::jobs::ID);
                    self.prepare();
                    self.select_obj(views::jobs::TABLE, ObjKey::Job(crate::model::JobKey { cluster, id }));
                    self.ui.detail = true;
                    self.ui.detail_scroll = 0;
                } else if let Some(name) = node.cloned() {
                    self.jump_to_node(NodeKey { cluster, name });
                }
            }
            _ => {
                self.ui.detail = true;
                self.ui.detail_scroll = 0;
            }
        }
    }

    /// Whether the detail pane is open on a table view, where it takes the movement keys.
    pub fn detail_has_focus(&self) -> bool {
        self.ui.detail
            && self.focused_table().is_some()
            && self.ui.view != views::topology::ID
            && !(self.ui.view == views::gpus::ID && self.ui.wall)
    }

    fn jump_to_node(&mut self, n: NodeKey) {
        self.goto(views::nodes::ID);
        self.prepare();
        let id = ObjKey::Node(n);
        let cx = cx_of!(self);
        let shown = views::nodes::TABLE
            .source()
            .locate(&cx, &id)
            .is_some_and(|k| self.ui.tables[views::nodes::TABLE].rows.contains(&k));
        if !shown {
            self.table(views::nodes::TABLE).set_filter("");
        }
        self.prepare();
        self.select_obj(views::nodes::TABLE, id);
        self.ui.detail = true;
        self.ui.detail_scroll = 0;
    }

    /// Selects the row of `id` in table `t` (it follows the object from then on).
    pub fn select_obj(&mut self, t: TableId, id: ObjKey) {
        let cx = cx_of!(self);
        self.ui.tables[t].select_id(t.source(), &cx, id);
    }

    /// Records what each shown table's selection stands for, while its rows are current: after
    /// a key or an action result, before any later update can move the rows.
    fn capture_selection(&mut self) {
        let cx = cx_of!(self);
        for t in self.ui.view.tables() {
            self.ui.tables[t].capture(t.source(), &cx);
        }
    }

    /// The object the focused table's selection stands for.
    pub fn selected_obj(&self) -> Option<&ObjKey> {
        self.ui.tables[self.focused_table()?].selected_id()
    }

    /// The wall's cursor moved: the GPU table selects that node's first GPU, so both follow
    /// the same node when the nodes are relisted.
    fn select_wall_node(&mut self) {
        let s = self.state();
        let ni = self.ui.wall_state.selected;
        let Some(node) = s.node_key(ni) else { return };
        let Some(index) = s.nodes[ni].gpus.first().map(|g| g.index) else { return };
        self.select_obj(views::gpus::TABLE, ObjKey::Gpu(GpuKey { node, index }));
    }

    fn back(&mut self) {
        if !self.op_panel.is_empty() {
            self.op_panel.clear();
        } else if self.ui.detail {
            self.ui.detail = false;
        } else if let Some(t) = self.focused_table().filter(|t| !self.ui.tables[*t].filter.is_empty()) {
            self.table(t).set_filter("");
        } else if self.ui.view == views::gpus::ID && self.ui.wall {
            self.ui.wall = false;
        } else if let Some(v) = self.ui.back.pop() {
            self.ui.view = v;
            self.ui.focus = 0;
        }
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
            let window = cost::WINDOWS[self.ui.cost_window].0;
            let key = (s.generation, window, self.ledger.as_ref().map_or(0, |l| l.seq));
            if self.cost.built_for != Some(key) {
                self.cost = self.cost_report(s, window);
                self.cost.built_for = Some(key);
                self.cost.by = self.ui.cost_by;
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
        // The wall's cursor is the GPU table's selected node (one identity for both).
        if self.ui.view == views::gpus::ID
            && let Some(ObjKey::Gpu(g)) = self.ui.tables[views::gpus::TABLE].selected_id()
            && let Some(ni) = s.node_at(&g.node)
        {
            self.ui.wall_state.selected = ni;
        }
    }

    /// The node selected in the topology tree.
    /// The node selected in the topology tree: its name and its cluster as objects carry it
    /// (empty in a single-cluster console).
    pub fn topology_node(&self) -> Option<crate::model::NodeKey> {
        selected_node(&self.ui.tree)
    }
}

/// The built-in `:` commands besides the views: their names (the first is the one completion
/// offers), arguments and what they do. Completion and help read this.
pub const COMMANDS: &[(&[&str], &str, &str)] = &[
    (&["quit", "q", "q!", "exit"], "", "quit"),
    (&["help", "h"], "", "this help"),
    (&["pause"], "", "pause / resume the screen"),
    (&["theme"], "NAME", "dark, light, high-contrast, monochrome"),
    (&["breakglass", "bg"], "TICKET [MIN] REASON", "time-boxed elevation, audited (:breakglass end)"),
    (&["ctx", "context"], "[NAME]", "list / switch Kubernetes contexts"),
    (&["cluster"], "[NAME|all]", "focus one cluster of a fleet (every table, the header); all: the fleet"),
    (&["doctor"], "", "check the configuration, as gpuplane doctor (OK / WARN / FAIL, the fix)"),
    (&["acceptance", "nccl"], "[per-node|pairs|all]", "NCCL test on the marked nodes (confirm, audited)"),
    (&["ack"], "[TICKET] NOTE", "acknowledge the selected incident (audited; shared with other consoles)"),
    (&["silence"], "DURATION [TICKET] REASON", "silence the selected alert in Alertmanager (audited)"),
    (&["unsilence"], "[TICKET] REASON", "expire the selected silence in Alertmanager (audited)"),
];

/// Why an ack is refused in read-only mode.
pub const ACK_READONLY: &str = "read-only: acknowledging writes the audit log and the shared ack store; refused (start without --readonly)";

/// Why a silence is refused in read-only mode.
pub const SILENCE_READONLY: &str =
    "read-only: silences change Alertmanager and write the audit log; refused (start without --readonly)";

/// `INC-4242 looking at it` → (Some("INC-4242"), "looking at it"): the first word is a ticket
/// when it looks like one (`ABC-123`, `#123`).
pub fn split_ticket(args: &str) -> (Option<String>, String) {
    let args = args.trim();
    let (first, rest) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
    let is_ticket = match first.split_once('-') {
        Some((p, n)) => {
            !p.is_empty()
                && p.chars().all(|c| c.is_ascii_alphanumeric())
                && p.starts_with(|c: char| c.is_ascii_alphabetic())
                && !n.is_empty()
                && n.chars().all(|c| c.is_ascii_digit())
        }
        None => {
            first.strip_prefix('#').is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        }
    };
    if is_ticket { (Some(first.to_string()), rest.trim().to_string()) } else { (None, args.to_string()) }
}

/// Command names for completion: every view name and the built-in commands.
pub fn command_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = views::all_names().collect();
    v.extend(COMMANDS.iter().filter_map(|(names, _, _)| names.first().copied()));
    v
}

/// Completes the first word of a command line. Names that mean the same view complete to the
/// view's canonical name (`jo` → `jobs`); otherwise to the longest common prefix. Returns the new
/// buffer and the candidates.
pub fn complete(buf: &str) -> (String, Vec<&'static str>) {
    if buf.contains(' ') {
        return (buf.to_string(), vec![]);
    }
    let canonical = |n: &'static str| ViewId::by_name(n).map_or(n, |v| v.0);
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

/// Completes the argument `arg` of a command line (`head` is the line before it) from
/// `names`: the one that matches, or the longest common prefix and the candidates.
pub fn complete_from(head: &str, arg: &str, names: Vec<String>) -> (String, Vec<String>) {
    let cands: Vec<String> = names.into_iter().filter(|n| n.starts_with(arg)).collect();
    match cands.as_slice() {
        [] => (format!("{head}{arg}"), cands),
        [one] => (format!("{head}{one}"), cands),
        many => {
            let first = &many[0];
            let len = (arg.len()..=first.len())
                .rev()
                .find(|&l| first.is_char_boundary(l) && many.iter().all(|c| c.starts_with(&first[..l])))
                .unwrap_or(arg.len());
            (format!("{head}{}", &first[..len]), cands)
        }
    }
}

/// Actions: marks, the confirmation dialog, results from the ops task, break-glass.
impl App {
    /// The node, GPU or job the open detail pane shows, or the fleet under the GPU heatmap
    /// (`None` when there is no such chart on screen).
    pub fn focus(&self) -> Option<crate::model::protocol::Focus> {
        use crate::model::protocol::Focus;
        if !self.ui.detail {
            // The heatmap's strip charts the fleet's last hour.
            return (self.ui.view == views::gpus::ID && self.ui.wall).then_some(Focus::Fleet);
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

    /// The node or job the selected row stands for in the focused table (a GPU or a port
    /// stands for its node).
    fn selected_target(&self) -> Option<(bool, String)> {
        let s = self.state();
        match self.selected_obj()? {
            ObjKey::Job(k) => s.job_at(k).map(|_| (true, self.target_name(&k.cluster, &k.id.to_string()))),
            // An incident stands for its node (or its job), in its own cluster.
            ObjKey::Incident(cluster, subject, signal) => {
                let i = s
                    .incidents
                    .iter()
                    .find(|i| i.cluster == *cluster && i.subject == *subject && i.signal == *signal)?;
                let c = &i.cluster;
                let (node, job) = if self.routes.is_empty() {
                    (i.node.as_ref().filter(|n| s.node(n).is_some()), i.job.filter(|&j| s.job(j).is_some()))
                } else {
                    (
                        i.node.as_ref().filter(|n| s.node_in(c, n).is_some()),
                        i.job.filter(|&j| s.job_in(c, j).is_some()),
                    )
                };
                match (node, job) {
                    (_, Some(j)) if i.subject.starts_with("job ") => {
                        Some((true, self.target_name(c, &j.to_string())))
                    }
                    (Some(n), _) => Some((false, self.target_name(c, n))),
                    (None, Some(j)) => Some((true, self.target_name(c, &j.to_string()))),
                    (None, None) => None,
                }
            }
            o => o
                .node()
                .filter(|n| s.node_at(n).is_some())
                .map(|n| (false, self.target_name(&n.cluster, &n.name))),
        }
    }

    /// A target as actions name it: `cluster/name` in a fleet (its cluster's executor takes
    /// it), the bare name or job id for one cluster.
    fn target_name(&self, cluster: &Text, name: &str) -> String {
        if self.routes.is_empty() {
            name.to_string()
        } else {
            ops::fleet::qualify(self.state().cluster_of(cluster), name)
        }
    }

    fn toggle_mark(&mut self) {
        self.prepare();
        let s = self.state();
        // A GPU or a port marks its node.
        let (node, job) = match self.selected_obj() {
            Some(ObjKey::Job(k)) if s.job_at(k).is_some() => (None, Some(k.clone())),
            Some(o) => (o.node().filter(|n| s.node_at(n).is_some()).cloned(), None),
            None => (None, None),
        };
        match (node, job) {
            (_, Some(k)) => {
                if !self.marks.jobs.remove(&k) {
                    self.marks.jobs.insert(k);
                }
            }
            (Some(k), _) => {
                if !self.marks.nodes.remove(&k) {
                    self.marks.nodes.insert(k);
                }
            }
            _ => {
                self.ui.message = Some(("nothing to mark here (nodes and jobs can be marked)".into(), false));
                return;
            }
        }
        if let Some(t) = self.focused_table() {
            self.table(t).move_by(1);
        }
    }

    /// Drops every mark (nodes and jobs), saying how many there were.
    fn clear_marks(&mut self) {
        let n = self.marks.nodes.len() + self.marks.jobs.len();
        self.marks = Marks::default();
        self.ui.message = Some((
            if n == 0 { "no marks to clear".to_string() } else { format!("cleared {n} mark(s)") },
            false,
        ));
    }

    /// Of the marked `targets`, those the focused table's filter hides (the table lists
    /// `jobs` or nodes, and has a filter); and a note when the action takes the marks while
    /// the highlighted row is another.
    fn marks_context(&self, jobs: bool, targets: &[String]) -> (Vec<String>, Option<String>) {
        let Some(t) = self.focused_table() else { return (Vec::new(), None) };
        let cx = self.cx();
        let src = t.source();
        let st = &self.ui.tables[t];
        let name_of = |o: ObjKey| match o {
            ObjKey::Job(k) if jobs => Some(self.target_name(&k.cluster, &k.id.to_string())),
            ObjKey::Job(_) => None,
            o if !jobs => o.node().map(|n| self.target_name(&n.cluster, &n.name)),
            _ => None,
        };
        let mut hidden = Vec::new();
        // A filter, or the cluster focus, may hide marked rows.
        if !st.filter.is_empty() || self.focus.is_some() {
            // What the table lists, from a row it shows (or any, when the filter shows none).
            let any = st.rows.first().copied().or_else(|| {
                let mut all = Vec::new();
                src.keys(&cx, &mut all);
                all.first().copied()
            });
            let same_kind = any.and_then(|k| src.identity(&cx, k)).and_then(name_of).is_some();
            if same_kind {
                let shown: std::collections::BTreeSet<String> =
                    st.rows.iter().filter_map(|&k| src.identity(&cx, k).and_then(name_of)).collect();
                hidden = targets.iter().filter(|t| !shown.contains(*t)).cloned().collect();
            }
        }
        let what = if jobs { "job" } else { "node" };
        let highlighted = st.selected_id().cloned().and_then(name_of);
        let clear = self.keymap.hint(Action::ClearMarks).map(|k| format!(" ({k} clears the marks)"));
        let note = match highlighted {
            Some(h) if !targets.contains(&h) => Some(format!(
                "acting on the {} marked {what}(s), not the highlighted {h}{}",
                targets.len(),
                clear.unwrap_or_default()
            )),
            _ => None,
        };
        (hidden, note)
    }

    /// Opens the confirmation of `kind` on the marked rows, or on the selected one.
    /// The reason and ticket an action on the selected incident starts with: the playbook
    /// step's reason when the step is this action, the ticket its ack or mitigation carries.
    fn incident_prefill(&self, kind: ActionKind) -> (String, String) {
        let Some(ObjKey::Incident(cluster, subject, signal)) = self.selected_obj() else {
            return Default::default();
        };
        let s = self.state();
        let Some(i) = s
            .incidents
            .iter()
            .find(|i| i.cluster == *cluster && i.subject == *subject && i.signal == *signal)
        else {
            return Default::default();
        };
        let reason = s
            .playbooks
            .current(&i.signal, i.repeats)
            .filter(|c| c.action.is_some_and(|a| a.label() == kind.label()))
            .and_then(|c| c.reason)
            .unwrap_or_default()
            .to_string();
        (reason, i.lifecycle.ticket().unwrap_or_default().to_string())
    }

    pub fn start_action(&mut self, kind: ActionKind) {
        if self.readonly {
            self.ui.message = Some((format!("read-only mode: {} is not available", kind.label()), true));
            return;
        }
        let fleet = !self.routes.is_empty();
        if self.planner.is_none() && !fleet {
            self.ui.message = Some(("actions are not available: no backend can execute them".into(), true));
            return;
        }
        self.prepare();
        // Plans during break-glass are checked as the elevated identity would be.
        let elevated = self.break_glass.is_some();
        let marked = if kind.on_jobs() { !self.marks.jobs.is_empty() } else { !self.marks.nodes.is_empty() };
        let targets: Vec<String> = if kind.on_jobs() {
            if self.marks.jobs.is_empty() {
                self.selected_target().filter(|(job, _)| *job).map(|(_, t)| vec![t]).unwrap_or_default()
            } else {
                self.marks.jobs.iter().map(|j| self.target_name(&j.cluster, &j.id.to_string())).collect()
            }
        } else if self.marks.nodes.is_empty() {
            self.selected_target().filter(|(job, _)| !*job).map(|(_, t)| vec![t]).unwrap_or_default()
        } else {
            self.marks.nodes.iter().map(|n| self.target_name(&n.cluster, &n.name)).collect()
        };
        if targets.is_empty() {
            let what = if kind.on_jobs() { "a job (Jobs view)" } else { "a node (Nodes view)" };
            self.ui.message = Some((format!("select or mark {what} to {}", kind.label()), true));
            return;
        }
        let (hidden, note) =
            if marked { self.marks_context(kind.on_jobs(), &targets) } else { (Vec::new(), None) };
        let req = OpRequest { kind, targets, reason: String::new(), ticket: None, dry_run: false };
        // On an incident, its playbook's first step prefills the reason (when it is this
        // action) and its ack's ticket prefills the ticket.
        let (reason, ticket) = if marked { Default::default() } else { self.incident_prefill(kind) };
        // A batch runs on the targets the preflight accepts; the refused ones are listed.
        // Blast radius: the drains of the last hour from the audit records the ops task last
        // read (the ops task counts again from the log itself before it sends).
        // In a fleet each cluster plans its own targets (its preflight, read-only flag and
        // limits, its own last hour of drains) and the plan shows them grouped by cluster.
        let planned = if fleet {
            self.plan_fleet(&req, ops::fleet::Pick::default())
        } else {
            let Some(planner) = self.planner.clone() else { return };
            let recent = ops::guard::drains_in_window(&self.audit, &self.state().cluster, self.wall_now);
            let limits = self.limits.for_cluster(&self.state().cluster);
            ops::plan_batch_as(&req, self.state(), planner.as_ref(), self.readonly, elevated)
                .and_then(|mut p| {
                    ops::guard_plan(&mut p, self.state(), &limits, &recent, elevated).map(|()| p)
                })
                .map(|p| (p, Vec::new()))
        };
        match planned {
            Ok((plan, parts)) => {
                self.ui.mode = Mode::Confirm(Box::new(Confirm {
                    req,
                    plan,
                    reason,
                    ticket,
                    typed: String::new(),
                    field: 0,
                    error: None,
                    hidden,
                    note,
                    scroll: 0,
                    parts,
                    pick: ops::fleet::Pick::default(),
                }))
            }
            // This cluster cannot do it at all but says what to run instead: ask only what
            // that command needs, and show it (nothing is confirmed, sent or audited).
            Err(e @ ops::OpError::Preflight { .. }) if !e.instead().is_empty() => {
                let ops::OpError::Preflight { backend, action, error, .. } = &e else { return };
                let refusal = format!("{backend} cannot {action}: {error}");
                let mut d = super::instead::Instead::new(req, refusal, reason, ticket);
                if !super::instead::Instead::needs_reason(kind) {
                    d.lines = e.instead().to_vec();
                }
                self.ui.mode = Mode::Instead(Box::new(d));
            }
            Err(e) => self.ui.message = Some((e.to_string(), true)),
        }
    }

    /// The prompt and panel of an action this cluster cannot perform: the lines come from
    /// the planner's refusal of the filled request (what the command line prints), the copy
    /// goes through the OSC 52 plugin.
    fn on_instead_key(&mut self, k: KeyEvent, mut d: super::instead::Instead) {
        use super::instead::Step;
        match d.on_key(k) {
            Step::Stay => {}
            Step::Close => {
                self.ui.mode = Mode::Normal;
                let what = if d.copied { "copied; " } else { "" };
                self.ui.message =
                    Some((format!("{} not sent ({what}nothing was done here)", d.req.kind.label()), false));
                return;
            }
            Step::Lines => {
                let elevated = self.break_glass.is_some();
                let planned = if self.routes.is_empty() {
                    self.planner.clone().map(|p| {
                        ops::plan_batch_as(&d.filled(), self.state(), p.as_ref(), self.readonly, elevated)
                            .map(drop)
                    })
                } else {
                    Some(self.plan_fleet(&d.filled(), ops::fleet::Pick::default()).map(drop))
                };
                match planned {
                    Some(Err(e)) if !e.instead().is_empty() => d.lines = e.instead().to_vec(),
                    Some(Err(e)) => d.error = Some(e.to_string()),
                    // The preflight learnt meanwhile that it can: ask again from the start.
                    _ => d.error = Some("the cluster now accepts this action: esc, then ask again".into()),
                }
            }
            Step::Copy => match super::instead::copy(&self.plugins, &d.copied_text()) {
                Some(run) => {
                    self.pending_plugin = Some(run);
                    d.copied = true;
                }
                None => d.error = Some("no copy-osc52 plugin to copy with".into()),
            },
        }
        self.ui.mode = Mode::Instead(Box::new(d));
    }

    /// A fleet plan: each cluster plans its own targets (its preflight, read-only flag and
    /// limits, its own last hour of drains), a paired host in the schedulers `pick` names.
    fn plan_fleet(
        &self,
        req: &OpRequest,
        pick: ops::fleet::Pick,
    ) -> Result<(Plan, Vec<ops::fleet::Part>), ops::OpError> {
        let recent = |c: &str| ops::guard::drains_in_window(&self.audit, c, self.wall_now);
        let checks = ops::fleet::Checks {
            routes: &self.routes,
            limits: &self.limits,
            recent: &recent,
            elevated: self.break_glass.is_some(),
            pick,
        };
        ops::fleet::plan(req, self.state(), &checks)
    }

    fn on_confirm_key(&mut self, k: KeyEvent, mut c: Confirm) {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let fields = if c.plan.confirm_word.is_some() { 3 } else { 2 };
        let field = match c.field {
            0 => &mut c.reason,
            1 => &mut c.ticket,
            _ => &mut c.typed,
        };
        match k.code {
            KeyCode::Esc => {
                self.ui.mode = Mode::Normal;
                self.ui.message =
                    Some((format!("{} cancelled; nothing was done", c.req.kind.label()), false));
                return;
            }
            KeyCode::Char('c') if ctrl => {
                self.ui.mode = Mode::Normal;
                return;
            }
            // Dry run: audit the plan, execute nothing.
            KeyCode::Char('d') if ctrl => c.req.dry_run = !c.req.dry_run,
            // A paired host: act in both schedulers, Slurm only or Kubernetes only, planned
            // again. A pick that cannot be planned (a scheduler refuses it, nothing is left to
            // do there) is passed over, saying why.
            KeyCode::Char('s') if ctrl && !c.plan.notes.is_empty() => {
                let mut pick = c.pick.next();
                let mut skipped = Vec::new();
                while pick != c.pick {
                    match self.plan_fleet(&c.req, pick) {
                        Ok((plan, parts)) => {
                            (c.plan, c.parts, c.pick, c.typed, c.scroll) =
                                (plan, parts, pick, String::new(), 0);
                            break;
                        }
                        Err(e) => skipped.push(format!("{}: {e}", pick.label())),
                    }
                    pick = pick.next();
                }
                c.error = (!skipped.is_empty()).then(|| skipped.join("; "));
            }
            // The plan scrolls before confirming (the fields take every printable key).
            KeyCode::PageDown | KeyCode::PageUp | KeyCode::Home | KeyCode::End => {
                let page = usize::from(Shown::page(self.ui.shown.plan_rows));
                let shown = self.ui.shown;
                let max = usize::from(shown.plan_total.saturating_sub(shown.plan_rows.max(1)));
                c.scroll = match k.code {
                    KeyCode::PageDown => c.scroll.saturating_add(page),
                    KeyCode::PageUp => c.scroll.saturating_sub(page),
                    KeyCode::Home => 0,
                    _ => max,
                }
                .min(max);
            }
            KeyCode::Tab | KeyCode::Down => c.field = (c.field + 1) % fields,
            KeyCode::BackTab | KeyCode::Up => c.field = (c.field + fields - 1) % fields,
            KeyCode::Backspace => {
                field.pop();
            }
            KeyCode::Char(ch) if !ctrl => field.push(ch),
            KeyCode::Enter => {
                if c.plan.steps.is_empty() {
                    // A paired host one scheduler refuses: nothing runs as planned.
                    c.error = Some("nothing will run as planned: ^s picks one scheduler, esc cancels".into());
                } else if c.reason.trim().is_empty() {
                    c.error = Some("a reason is required".into());
                    c.field = 0;
                } else if let Some(w) = c.plan.confirm_word.as_ref().filter(|w| c.typed.trim() != w.as_str())
                {
                    if c.field < 2 {
                        c.field = 2;
                    } else {
                        c.error = Some(format!("type {w:?} to confirm"));
                    }
                } else {
                    self.submit(c);
                    return;
                }
            }
            _ => {}
        }
        self.ui.mode = Mode::Confirm(Box::new(c));
    }

    fn submit(&mut self, c: Confirm) {
        self.ui.mode = Mode::Normal;
        let mut req = c.req;
        // What runs is the plan: the targets the preflight refused are not sent.
        req.targets = c.plan.steps.iter().map(|s| s.target.clone()).collect();
        req.reason = c.reason.trim().to_string();
        req.ticket = Some(c.ticket.trim().to_string()).filter(|t| !t.is_empty());
        if !c.parts.is_empty() {
            self.submit_parts(&req, c.parts);
            return;
        }
        let Some(tx) = self.ops_tx.as_ref() else {
            self.ui.message = Some(("actions are not available: the ops task is not running".into(), true));
            return;
        };
        self.op_panel =
            vec![(format!("{} {} target(s): running…", req.kind.label(), req.targets.len()), false)];
        let job = OpJob {
            req,
            plan: c.plan,
            break_glass: self.break_glass.as_ref().map(BreakGlass::tag),
            op_id: None,
        };
        if tx.send(OpMsg::Run(job)).is_err() {
            self.op_panel = vec![("the ops task stopped: nothing was done".into(), true)];
        }
        self.marks = Marks::default();
    }

    /// A fleet plan: each cluster's part to that cluster's ops task, with the reason, ticket
    /// and dry run the operator confirmed.
    fn submit_parts(&mut self, req: &OpRequest, parts: Vec<ops::fleet::Part>) {
        let clusters: Vec<String> = parts.iter().map(|p| p.cluster.to_string()).collect();
        self.op_panel = vec![(
            format!(
                "{} {} target(s) on {}: running…",
                req.kind.label(),
                req.targets.len(),
                crate::sanitize::sanitize(&clusters.join(", "))
            ),
            false,
        )];
        let tag = self.break_glass.as_ref().map(BreakGlass::tag);
        // Fail closed: a cluster whose ops task is gone gets nothing, and then neither does any
        // other (a paired host is never acted on in one scheduler when both were confirmed).
        let gone: Vec<&str> = parts
            .iter()
            .filter(|p| {
                self.routes.get(&p.cluster).and_then(|r| r.tx.as_ref()).is_none_or(|tx| tx.is_closed())
            })
            .map(|p| p.cluster.as_str())
            .collect();
        if !gone.is_empty() {
            self.op_panel = vec![(
                format!(
                    "{}: ops task not running: nothing was sent to any cluster",
                    crate::sanitize::sanitize(&gone.join(", "))
                ),
                true,
            )];
            return;
        }
        // Confirmed once: one op id in every cluster's records of it.
        let op_id = Some(ops::new_op_id());
        for p in parts {
            let mut r = p.req.clone();
            r.targets = p.plan.steps.iter().map(|s| s.target.clone()).collect();
            (r.reason, r.ticket, r.dry_run) = (req.reason.clone(), req.ticket.clone(), req.dry_run);
            let sent = self.routes.get(&p.cluster).and_then(|route| route.tx.as_ref()).is_some_and(|tx| {
                tx.send(OpMsg::Run(OpJob {
                    req: r,
                    plan: p.plan,
                    break_glass: tag.clone(),
                    op_id: op_id.clone(),
                }))
                .is_ok()
            });
            if !sent {
                self.op_panel.push((
                    format!("{}: its ops task is not running: nothing was sent there", p.cluster),
                    true,
                ));
            }
        }
        self.marks = Marks::default();
    }

    fn on_op_event(&mut self, ev: OpEvent) {
        match ev {
            // A failure's text says what is wrong and what to do (a refusal carries the
            // server's own words).
            OpEvent::Target { kind, result } => {
                let (t, m) =
                    (crate::sanitize::sanitize(&result.target), crate::sanitize::sanitize(&result.message));
                self.op_panel.push((format!("{} {t}: {m}", kind.label()), !result.ok))
            }
            OpEvent::Step { kind, target, message } => {
                // The panel shows the newest lines; a long drain keeps the last few hundred.
                if self.op_panel.len() >= 500 {
                    self.op_panel.drain(1..100);
                }
                let (t, m) = (crate::sanitize::sanitize(&target), crate::sanitize::sanitize(&message));
                self.op_panel.push((format!("{} {t}: {m}", kind.label()), false))
            }
            OpEvent::Done { kind, result } => match result {
                Ok(o) if o.dry_run => self.op_panel.push((
                    format!("{} dry run recorded in the audit log; nothing was executed", kind.label()),
                    false,
                )),
                Ok(o) => {
                    let ok = o.results.iter().filter(|r| r.ok).count();
                    let following = o.submitted.len();
                    self.op_panel.push((
                        format!(
                            "{} done: {ok}/{} succeeded{} (audit op {})",
                            kind.label(),
                            o.results.len(),
                            failure_counts(&o.results),
                            &o.op_id[..8.min(o.op_id.len())]
                        ),
                        ok != o.results.len(),
                    ));
                    if let Some(w) = o.audit_warning {
                        self.op_panel.push((w, true));
                    }
                    if following > 0 {
                        self.op_panel.push((
                            format!("following {following} job(s): states and verdicts appear here and in the Fabric view"),
                            false,
                        ));
                    }
                }
                Err(e) => self
                    .op_panel
                    .push((format!("{}: {}", kind.label(), crate::sanitize::sanitize(&e.to_string())), true)),
            },
            OpEvent::Silence(r) => {
                self.ui.message = Some(match r {
                    Ok(m) => (crate::sanitize::sanitize(&m).into_owned(), false),
                    Err(e) => (format!("silence refused or failed: {}", crate::sanitize::sanitize(&e)), true),
                })
            }
            OpEvent::Acked(ack) => {
                let what = crate::sanitize::sanitize(&ack.key.subject).into_owned();
                self.handling.acks.retain(|a| a.key != ack.key);
                self.handling.acks.push(ack.clone());
                if let Some(l) = &self.acks {
                    l.worker.send(crate::store::acks::Request::Put(ack));
                }
                self.push_handling();
                self.ui.message = Some((format!("acked {what} (audited)"), false));
            }
            OpEvent::Audit(records) => {
                let mut clusters = vec![self.live.cluster.as_str()];
                clusters.extend(self.audit_cluster.as_deref());
                clusters.extend(self.routes.keys().map(Text::as_str));
                let actions = crate::state::actions_from_audit(&records, &clusters);
                if actions != self.handling.actions {
                    self.handling.actions = actions;
                    self.push_handling();
                }
                self.audit = records;
                self.ui.tables[views::audit::TABLE].invalidate();
            }
            OpEvent::AuditError(e) => self.ui.message = Some((format!("audit log: {e}"), true)),
            OpEvent::AcceptanceProgress { target, job_id, state } => {
                self.op_panel.push((format!("acceptance {target}: job {job_id} {state}"), false))
            }
            OpEvent::AcceptanceResult { target, job_id, verdict, busbw, why, recorded } => {
                let bw = busbw.map(|b| format!("{b:.1} GB/s ")).unwrap_or_default();
                self.op_panel.push((
                    format!(
                        "acceptance {target}: job {job_id} {} {bw}— {why}",
                        verdict.label().to_uppercase()
                    ),
                    verdict != crate::acceptance::Verdict::Pass,
                ));
                if let Err(e) = recorded {
                    self.op_panel.push((format!("acceptance {target}: the run was not recorded: {e}"), true));
                }
            }
            OpEvent::Acceptance(by_node) => {
                self.live.apply(crate::model::protocol::Update::Acceptance(by_node));
            }
            OpEvent::ClusterAcceptance { cluster, by_node } => {
                self.live.apply(crate::model::protocol::Update::Cluster {
                    cluster: cluster.as_str().into(),
                    update: Box::new(crate::model::protocol::Update::Acceptance(by_node)),
                });
            }
            OpEvent::AcceptanceError(e) => {
                self.ui.message = Some((format!("acceptance runs: {e}"), true));
            }
        }
    }

    /// `:acceptance [per-node|pairs|all]`: the NCCL test on the marked nodes (or the selected
    /// one), through the confirmation.
    fn acceptance_command(&mut self, args: &str) {
        use crate::acceptance::Mode;
        let mode = match args.trim() {
            "" | "per-node" | "node" | "nodes" => Mode::PerNode,
            "pairs" | "pair" => Mode::Pairs,
            "all" => Mode::All,
            other => {
                self.ui.message = Some((
                    format!(
                        "usage: :acceptance [per-node|pairs|all] (not {:?})",
                        crate::sanitize::sanitize(other)
                    ),
                    true,
                ));
                return;
            }
        };
        self.start_action(ActionKind::Acceptance(mode));
    }

    /// `:breakglass TICKET [MINUTES] REASON…` starts a session, `:breakglass end` ends it. One
    /// session per operator at a time: while one is open (here, or in another console of the
    /// same OS user on this audit log) a second is refused. Read-only stays read-only:
    /// break-glass cannot lift it, and nothing starts.
    fn break_glass_command(&mut self, args: &str) {
        let usage = "usage: :breakglass TICKET [MINUTES] REASON… (or :breakglass end)";
        let mut w = args.split_whitespace().peekable();
        let Some(first) = w.next() else {
            self.ui.message = Some((usage.into(), true));
            return;
        };
        if matches!(first, "end" | "off") {
            match self.break_glass.take() {
                Some(b) => {
                    self.end_break_glass(&b, "ended by operator");
                    self.ui.message = Some(("break-glass ended".into(), false));
                }
                None => self.ui.message = Some(("no break-glass session is open".into(), false)),
            }
            return;
        }
        if self.readonly {
            self.ui.message = Some((
                "read-only: break-glass cannot lift read-only mode; no session was started".into(),
                true,
            ));
            return;
        }
        if let Some(b) = &self.break_glass {
            let left = (b.until - self.wall_now).max(0);
            self.ui.message = Some((
                format!(
                    "break-glass {} is already open ({}:{:02} left): refused; end it first with :breakglass end",
                    crate::sanitize::sanitize(&b.ticket),
                    left / 60,
                    left % 60
                ),
                true,
            ));
            return;
        }
        let me = crate::audit::os_user();
        if let Some(o) = crate::audit::open_sessions(&self.audit).into_iter().find(|o| {
            o.os_user == me
                && o.until.is_some_and(|u| u > self.wall_now)
                && !self.break_glass_ended.contains(&o.session)
        }) {
            self.ui.message = Some((
                format!(
                    "break-glass {} is already open for {me} in another console on {}: refused; end it there first",
                    crate::sanitize::sanitize(o.ticket.as_deref().unwrap_or("(no ticket)")),
                    crate::sanitize::sanitize(&o.host)
                ),
                true,
            ));
            return;
        }
        let (default_min, max_min) = self.break_glass_limits;
        let mins = match w.peek().and_then(|m| m.parse::<i64>().ok()) {
            Some(m) => {
                w.next();
                m
            }
            None => default_min,
        };
        let reason = w.collect::<Vec<_>>().join(" ");
        if reason.is_empty() || !(1..=max_min).contains(&mins) {
            self.ui.message =
                Some((format!("{usage}; a reason and 1..={max_min} minutes are required"), true));
            return;
        }
        let b = BreakGlass {
            id: uuid::Uuid::new_v4().to_string(),
            until: self.wall_now + mins * 60,
            ticket: first.to_string(),
            reason,
        };
        // Break-glass start and end are audited through the ops task's log, so the UI never
        // writes to disk.
        // In a fleet every cluster's ops task records it (each cluster's writes go out as its
        // own break-glass identity).
        for tx in self.ops_txs() {
            let _ = tx.send(OpMsg::BreakGlass(ops::BreakGlassMsg::Start {
                session: b.tag(),
                reason: b.reason.clone(),
                minutes: mins,
                until: b.until,
            }));
        }
        self.break_glass = Some(b);
    }

    fn expire_break_glass(&mut self) {
        if self.break_glass.as_ref().is_some_and(|b| self.wall_now >= b.until)
            && let Some(b) = self.break_glass.take()
        {
            self.end_break_glass(&b, "expired");
            self.ui.message = Some(("break-glass expired: elevation dropped".into(), true));
        }
    }

    fn end_break_glass(&mut self, b: &BreakGlass, why: &str) {
        self.break_glass_ended.push(b.id.clone());
        for tx in self.ops_txs() {
            let _ = tx.send(OpMsg::BreakGlass(ops::BreakGlassMsg::End { session: b.tag(), why: why.into() }));
        }
    }

    /// Every ops task: the one, or each fleet cluster's.
    fn ops_txs(&self) -> Vec<&tokio::sync::mpsc::UnboundedSender<OpMsg>> {
        self.ops_tx.iter().chain(self.routes.values().filter_map(|r| r.tx.as_ref())).collect()
    }
}

/// The plan lines that scroll in the confirmation: the plan's body, with each marked target the
/// filter hides flagged.
pub fn confirm_body(c: &Confirm) -> Vec<String> {
    c.plan.body_with(|t| c.hidden.iter().any(|h| h == t).then_some("[hidden by filter] "))
}

/// `; 1 forbidden, 2 not-found` for the failures of an action, by kind.
fn failure_counts(results: &[ops::TargetResult]) -> String {
    let mut by: std::collections::BTreeMap<ops::ActionErrorKind, usize> = Default::default();
    for e in results.iter().filter_map(|r| r.error.as_ref()) {
        *by.entry(e.kind()).or_default() += 1;
    }
    if by.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = by.iter().map(|(k, n)| format!("{n} {}", k.label())).collect();
    format!("; {}", parts.join(", "))
}

/// The longest break-glass session, in minutes.
pub const BREAK_GLASS_MAX_MIN: i64 = 240;

/// Plugins: the shortcut of a plugin in scope builds its variables from the selection.
impl App {
    fn view_scope(&self) -> &'static str {
        self.ui.view.0
    }

    /// The variables a plugin sees for the current selection.
    pub fn plugin_vars(&mut self) -> std::collections::BTreeMap<String, String> {
        self.prepare();
        let mut v = std::collections::BTreeMap::new();
        v.insert("USER".to_string(), self.user.clone());
        v.insert("CLUSTER".to_string(), self.state().cluster.to_string());
        v.insert("CONTEXT".to_string(), self.state().cluster.to_string());
        let Some(t) = self.focused_table() else { return v };
        let Some(key) = self.ui.tables[t].selected_key() else { return v };
        let s = self.state();
        let obj = self.ui.tables[t].selected_id();
        let node = obj.and_then(|o| o.node()).and_then(|n| s.node_at(n)).map(|i| &s.nodes[i]);
        if let Some(n) = node {
            v.insert("NODE".into(), n.name.to_string());
        }
        if let Some(ObjKey::Gpu(gk)) = obj
            && let Some(g) = node.and_then(|n| n.gpus.iter().find(|g| g.index == gk.index))
        {
            v.insert("GPU".into(), g.index.to_string());
            v.insert("GPU_UUID".into(), g.uuid.to_string());
        }
        if let Some(ObjKey::Job(jk)) = obj
            && let Some(j) = s.job_at(jk).map(|i| &s.jobs[i])
        {
            v.insert("JOB".into(), j.id.to_string());
            v.insert("ACCOUNT".into(), j.account.to_string());
            v.insert("NAMESPACE".into(), j.account.to_string());
            v.insert("JOB_USER".into(), j.user.to_string());
        }
        let nodes: Vec<String> = self.marks.nodes.iter().map(|n| n.name.to_string()).collect();
        v.insert(
            "NODES".into(),
            if nodes.is_empty() { v.get("NODE").cloned().unwrap_or_default() } else { nodes.join(",") },
        );
        // Every column of the selected row, as the table shows it.
        let cx = self.cx();
        let src = t.source();
        let cells = src.cells(&cx, key);
        for (c, cell) in src.columns().iter().zip(cells) {
            if !c.name.is_empty() {
                v.insert(
                    format!("COL_{}", c.name.replace(['-', '/', ' ', '%', '$'], "_")),
                    cell.text.to_string(),
                );
            }
        }
        v
    }

    fn plugin_key(&mut self, k: &KeyEvent) {
        let key = super::keymap::Key::from_event(k);
        let scope = self.view_scope();
        let Some(p) = self
            .plugins
            .iter()
            .find(|p| p.applies_to(scope) && super::keymap::Key::parse(&p.shortcut).is_ok_and(|s| s == key))
            .cloned()
        else {
            return;
        };
        if p.dangerous && self.readonly {
            return;
        }
        if p.confirm && self.armed_plugin.as_deref() != Some(p.name.as_str()) {
            self.armed_plugin = Some(p.name.clone());
            self.ui.message = Some((format!("press {} again to run plugin {:?}", p.shortcut, p.name), false));
            return;
        }
        self.armed_plugin = None;
        let vars = self.plugin_vars();
        let (program, args) = p.argv(&vars);
        // In a fleet, recorded by the selected object's cluster (else the first cluster's).
        let fleet_tx = || {
            let c = self.selected_obj().and_then(|o| match o {
                ObjKey::Job(k) => Some(k.cluster.clone()),
                ObjKey::Incident(c, ..) => Some(c.clone()),
                o => o.node().map(|n| n.cluster.clone()),
            });
            c.and_then(|c| self.routes.get(&c))
                .or_else(|| self.routes.values().next())
                .and_then(|r| r.tx.as_ref())
        };
        if p.dangerous
            && let Some(tx) = self.ops_tx.as_ref().or_else(fleet_tx)
        {
            // Audited like an action: who ran what, on what.
            let _ = tx.send(OpMsg::Event {
                action: format!("plugin {}", p.name),
                session: self.break_glass.as_ref().map(|b| b.id.clone()).unwrap_or_default(),
                ticket: self.break_glass.as_ref().map(|b| b.ticket.clone()).unwrap_or_default(),
                reason: format!("{program} {}", args.join(" ")),
            });
        }
        self.pending_plugin = Some(PluginRun { name: p.name, program, args, background: p.background });
    }
}
