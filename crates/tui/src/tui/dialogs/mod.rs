//! The console's dialogs as components: the `:` command line and the `/` filter line
//! ([`Prompt`]), the help pager ([`Help`]), the confirmation of an action ([`Confirm`]) and the
//! panel of an action a cluster cannot send ([`Instead`]).
//!
//! Each owns its state and its keys, draws from `&self` and what [`Cx`] lends it, and answers a
//! key with a [`Reply`] that the shell carries out: a dialog never reaches into the console
//! (a test checks that no dialog names the `App`). [`Mode`] is their registry: the one place a
//! dialog is named, and [`Mode::dialog`] the one dispatch.

pub mod confirm;
pub mod help;
pub mod instead;
pub mod prompt;

pub use confirm::{Confirm, confirm_body};
pub use help::{DoctorReport, Help};
pub use instead::Instead;
pub use prompt::Prompt;

use super::keymap::Keymap;
use super::theme::Theme;
use super::widgets::Glyphs;
use crate::ops::fleet::{Part, Pick};
use crate::ops::{OpError, OpRequest, Plan};
use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;

/// A dialog: its keys, its drawing, what its last frame showed.
pub trait Dialog {
    /// Its name (the registry's, the tests').
    fn name(&self) -> &'static str;
    /// Where it draws: over the body, or in the footer line.
    fn place(&self) -> Place {
        Place::Body
    }
    /// A key, while the dialog is open: what the shell is to do.
    fn key(&mut self, k: KeyEvent, cx: &Cx<'_>) -> Reply;
    /// Draws into `area` (the body, or the footer): what it showed, for [`Dialog::drawn`].
    fn draw(&self, f: &mut Frame, area: Rect, cx: &Cx<'_>) -> Drawn;
    /// What the last frame showed: the rows it had, for paging and clamping the scroll.
    fn drawn(&mut self, _d: Drawn) {}
}

/// Where a dialog draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Body,
    Footer,
}

/// What a frame showed of a dialog's scrolled text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drawn {
    /// Rows the text had.
    pub rows: u16,
    /// Lines the text is, wrapped.
    pub total: u16,
    /// The first line shown (the scroll, clamped).
    pub first: u16,
}

/// What a dialog's key asks of the shell.
#[derive(Debug)]
pub enum Reply {
    /// Stay open; nothing else.
    Stay,
    /// Close.
    Close,
    /// Close, and say this in the footer (an error when `true`).
    Say(String, bool),
    /// Quit the console.
    Quit,
    /// Close the command line and run this `:` command.
    Run(String),
    /// The filter line changed: apply it to the focused table now (the line stays open).
    Filter(String),
    /// Close the filter line, keeping the filter in force or clearing it.
    EndFilter { clear: bool },
    /// Close the confirmation and send what it planned.
    Submit(Box<Confirm>),
    /// Stay open, and run this plugin in the foreground (the copy of a command).
    Plugin(super::app::PluginRun),
}

/// What the shell lends a dialog: the look, the keymap, and the few answers it needs from the
/// console ([`Lend`]).
pub struct Cx<'a> {
    pub theme: &'a Theme,
    pub glyphs: Glyphs,
    pub keymap: &'a Keymap,
    pub lend: &'a dyn Lend,
}

/// The console's answers a dialog may ask for, and nothing else.
pub trait Lend {
    /// The help's entries (from the keymap, the registries and the user's config).
    fn entries(&self) -> Vec<help::Entry>;
    /// The fleet's cluster names and `all` (`:cluster` completes them).
    fn clusters(&self) -> Vec<String>;
    /// What a write command would act on (`:silence` names the alert's matchers).
    fn hint(&self, line: &str) -> Option<String>;
    /// Why the focused table's filter is not applied, if it is not.
    fn filter_error(&self) -> Option<String>;
    /// Plans a request again as the console would (each cluster's preflight and limits in a
    /// fleet, a paired host in the schedulers `pick` names); `None` when nothing can plan.
    fn plan(&self, req: &OpRequest, pick: Pick) -> Option<Result<(Plan, Vec<Part>), OpError>>;
    /// The copy of `text` through the `copy-osc52` plugin; `None` when there is none.
    fn copy(&self, text: &str) -> Option<super::app::PluginRun>;
}

/// The registry of dialogs: none open, or the one open with its state.
#[derive(Debug, Clone, Default)]
pub enum Mode {
    #[default]
    Normal,
    /// The `:` command line or the `/` filter line.
    Prompt(Prompt),
    Help(Box<Help>),
    /// The confirmation of an action: the plan, and the reason, ticket and typed confirmation.
    Confirm(Box<Confirm>),
    /// An action this cluster cannot perform: its reason and ticket, then what to run instead.
    Instead(Box<Instead>),
}

impl Mode {
    /// The open dialog, if any.
    pub fn dialog(&self) -> Option<&dyn Dialog> {
        match self {
            Mode::Normal => None,
            Mode::Prompt(d) => Some(d),
            Mode::Help(d) => Some(d.as_ref()),
            Mode::Confirm(d) => Some(d.as_ref()),
            Mode::Instead(d) => Some(d.as_ref()),
        }
    }

    pub fn dialog_mut(&mut self) -> Option<&mut dyn Dialog> {
        match self {
            Mode::Normal => None,
            Mode::Prompt(d) => Some(d),
            Mode::Help(d) => Some(d.as_mut()),
            Mode::Confirm(d) => Some(d.as_mut()),
            Mode::Instead(d) => Some(d.as_mut()),
        }
    }

    /// The open dialog's name, `normal` when none is.
    pub fn name(&self) -> &'static str {
        self.dialog().map_or("normal", |d| d.name())
    }

    pub fn is_normal(&self) -> bool {
        matches!(self, Mode::Normal)
    }

    /// The `:` command line's text, when it is open.
    pub fn command_line(&self) -> Option<&str> {
        match self {
            Mode::Prompt(p) if p.command => Some(&p.buf),
            _ => None,
        }
    }

    /// The `/` filter line's text, when it is open.
    pub fn filter_line(&self) -> Option<&str> {
        match self {
            Mode::Prompt(p) if !p.command => Some(&p.buf),
            _ => None,
        }
    }

    /// The help, when it is open.
    pub fn help(&self) -> Option<&Help> {
        match self {
            Mode::Help(h) => Some(h),
            _ => None,
        }
    }

    /// The confirmation, when it is open.
    pub fn confirm(&self) -> Option<&Confirm> {
        match self {
            Mode::Confirm(c) => Some(c),
            _ => None,
        }
    }

    /// The panel of an action that cannot be sent, when it is open.
    pub fn instead(&self) -> Option<&Instead> {
        match self {
            Mode::Instead(d) => Some(d),
            _ => None,
        }
    }
}

/// A dialog's box over `area`: at most `width` columns, centred.
pub(crate) fn centred(area: Rect, width: u16) -> Rect {
    let w = area.width.min(width);
    Rect { x: area.x + (area.width - w) / 2, y: area.y, width: w, height: area.height }
}

#[cfg(test)]
mod tests {
    //! The dialogs on their own: a stub [`Lend`] instead of the console.
    use super::*;
    use crate::ops::{ActionKind, Step};
    use crate::tui::help::Entry;
    use ratatui::crossterm::event::{KeyCode, KeyModifiers};
    use std::cell::Cell;

    struct Stub {
        plans: Cell<usize>,
    }

    fn plan(targets: &[&str], notes: bool) -> Plan {
        Plan {
            kind: ActionKind::Drain,
            steps: targets
                .iter()
                .map(|t| Step {
                    target: t.to_string(),
                    job: None,
                    call: format!("drain {t}"),
                    affected: Vec::new(),
                })
                .collect(),
            refused: Vec::new(),
            confirm_word: None,
            guard: None,
            groups: Vec::new(),
            notes: if notes { vec!["paired".into()] } else { Vec::new() },
        }
    }

    impl Lend for Stub {
        fn entries(&self) -> Vec<Entry> {
            vec![
                Entry::Heading("move".into()),
                Entry::Item("j".into(), "down".into()),
                Entry::Heading("actions".into()),
                Entry::Item("r".into(), "drain node(s)".into()),
            ]
        }
        fn clusters(&self) -> Vec<String> {
            vec!["sim-1".into(), "sim-2".into(), "all".into()]
        }
        fn hint(&self, _: &str) -> Option<String> {
            None
        }
        fn filter_error(&self) -> Option<String> {
            None
        }
        fn plan(&self, _: &OpRequest, pick: Pick) -> Option<Result<(Plan, Vec<Part>), OpError>> {
            self.plans.set(self.plans.get() + 1);
            match pick {
                Pick::Slurm => Some(Err(OpError::Target("slurm refuses".into()))),
                _ => Some(Ok((plan(&["gpu-1"], true), Vec::new()))),
            }
        }
        fn copy(&self, _: &str) -> Option<crate::tui::app::PluginRun> {
            None
        }
    }

    fn with<T>(f: impl FnOnce(&Cx<'_>, &Stub) -> T) -> T {
        let (theme, keymap) = (Theme::builtin("default"), Keymap::builtin("default"));
        let stub = Stub { plans: Cell::new(0) };
        let cx = Cx { theme: &theme, glyphs: Glyphs::UNICODE, keymap: &keymap, lend: &stub };
        f(&cx, &stub)
    }

    fn k(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(d: &mut dyn Dialog, cx: &Cx<'_>, text: &str) -> Vec<Reply> {
        text.chars()
            .map(|c| d.key(k(if c == '\r' { KeyCode::Enter } else { KeyCode::Char(c) }), cx))
            .collect()
    }

    #[test]
    fn the_command_line_completes_from_what_it_is_lent_and_runs_the_trimmed_line() {
        with(|cx, _| {
            let mut p = Prompt::command("cluster s");
            assert!(matches!(p.key(k(KeyCode::Tab), cx), Reply::Stay));
            assert_eq!(
                (p.buf.as_str(), p.completions.clone()),
                ("cluster sim-", vec!["sim-1".into(), "sim-2".into()])
            );
            let last = typed(&mut p, cx, "2 \r").pop();
            assert!(matches!(last, Some(Reply::Run(ref c)) if c == "cluster sim-2"), "{last:?}");
        });
    }

    #[test]
    fn the_filter_line_applies_as_typed_and_esc_clears_it() {
        with(|cx, _| {
            let mut p = Prompt::filter("st=");
            let r = typed(&mut p, cx, "PD");
            assert!(matches!(r.last(), Some(Reply::Filter(f)) if f == "st=PD"), "{r:?}");
            assert!(matches!(p.key(k(KeyCode::Esc), cx), Reply::EndFilter { clear: true }));
            assert!(matches!(
                Prompt::filter("").key(k(KeyCode::Backspace), cx),
                Reply::EndFilter { clear: false }
            ));
        });
    }

    #[test]
    fn the_help_searches_the_entries_it_is_lent() {
        with(|cx, _| {
            let mut h = Help::new();
            typed(&mut h, cx, "/drain\r");
            let text: Vec<String> =
                h.lines(cx).iter().map(|l| l.spans.iter().map(|s| s.content.to_string()).collect()).collect();
            assert_eq!(text.len(), 2, "{text:?}");
            assert!(text[1].contains("drain node(s)"), "{text:?}");
            assert!(matches!(h.key(k(KeyCode::Char('x')), cx), Reply::Stay), "a stray key does not close it");
            assert!(matches!(h.key(k(KeyCode::Char('q')), cx), Reply::Close));
        });
    }

    #[test]
    fn the_confirmation_needs_a_reason_replans_on_ctrl_s_and_submits_what_it_shows() {
        with(|cx, stub| {
            let req = OpRequest {
                kind: ActionKind::Drain,
                targets: vec!["gpu-1".into()],
                reason: String::new(),
                ticket: None,
                dry_run: false,
            };
            let mut c = Confirm::new(req, plan(&["gpu-1"], true), Vec::new(), String::new(), String::new());
            assert!(matches!(c.key(k(KeyCode::Enter), cx), Reply::Stay));
            assert_eq!(c.error.as_deref(), Some("a reason is required"));
            // ^s: the next pick (Slurm) is refused and passed over, saying why; Kube is planned.
            let ctrl_s = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
            assert!(matches!(c.key(ctrl_s, cx), Reply::Stay));
            assert_eq!((c.pick, stub.plans.get()), (Pick::Kube, 2));
            assert!(c.error.as_deref().is_some_and(|e| e.contains("slurm refuses")), "{:?}", c.error);
            match typed(&mut c, cx, "xid 79\r").pop() {
                Some(Reply::Submit(s)) => assert_eq!((s.reason.as_str(), s.pick), ("xid 79", Pick::Kube)),
                r => panic!("{r:?}"),
            }
            assert!(matches!(c.key(k(KeyCode::Esc), cx), Reply::Say(m, false) if m.contains("cancelled")));
        });
    }
}
