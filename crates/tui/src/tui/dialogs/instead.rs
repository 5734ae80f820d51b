//! An action this cluster cannot perform at all (a drain on Slurm 22.05, whose REST v0.0.38 has
//! no node update) is not confirmed, audited and then refused: the console says at once that
//! gpuplane cannot send it, asks only for the reason and ticket the command needs, and shows
//! the command to run instead (the planner's own line, the one the command line prints),
//! wrapped to the terminal, with a key that copies it through the `copy-osc52` plugin (the
//! console's OSC 52 path). Nothing is sent and nothing is audited as sent.

use super::{Cx, Dialog, Drawn, Reply, centred};
use crate::ops::{ActionKind, OpRequest};
use crate::tui::app::PluginRun;
use crate::tui::plugins::{self, Plugin};
use crate::tui::widgets::safe;
use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

/// The prompt, then the panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Instead {
    pub req: OpRequest,
    /// Why gpuplane cannot send it: the preflight's refusal.
    pub refusal: String,
    pub reason: String,
    pub ticket: String,
    /// 0 reason, 1 ticket.
    pub field: usize,
    pub error: Option<String>,
    /// The commands to run, one a line, once the reason is in (empty while the prompt is open).
    pub lines: Vec<String>,
    /// Whether the lines were handed to the copy path.
    pub copied: bool,
}

/// What a key asks of the dialog itself.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Stay,
    Close,
    /// The reason and ticket are in: fill the lines from the planner.
    Lines,
    /// Copy the lines.
    Copy,
}

impl Instead {
    /// `reason`, `ticket`: the prefill (an incident's playbook and ack).
    pub fn new(req: OpRequest, refusal: String, reason: String, ticket: String) -> Instead {
        Instead { req, refusal, reason, ticket, field: 0, error: None, lines: Vec::new(), copied: false }
    }

    /// Whether the command to run takes the operator's reason (a drain does, a resume not).
    pub fn needs_reason(kind: ActionKind) -> bool {
        kind == ActionKind::Drain
    }

    /// The request as the command line gets it: the reason trimmed, an empty ticket none.
    pub fn filled(&self) -> OpRequest {
        OpRequest {
            reason: self.reason.trim().to_string(),
            ticket: Some(self.ticket.trim().to_string()).filter(|t| !t.is_empty()),
            ..self.req.clone()
        }
    }

    fn step(&mut self, k: KeyEvent) -> Step {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if !self.lines.is_empty() {
            return match k.code {
                KeyCode::Char('c') if !ctrl => Step::Copy,
                KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') => Step::Close,
                KeyCode::Char('c') => Step::Close,
                _ => Step::Stay,
            };
        }
        let field = if self.field == 0 { &mut self.reason } else { &mut self.ticket };
        match k.code {
            KeyCode::Esc => return Step::Close,
            KeyCode::Char('c') if ctrl => return Step::Close,
            KeyCode::Tab | KeyCode::Down | KeyCode::BackTab | KeyCode::Up => self.field = 1 - self.field,
            KeyCode::Backspace => {
                field.pop();
            }
            KeyCode::Char(ch) if !ctrl => field.push(ch),
            KeyCode::Enter if self.reason.trim().is_empty() => {
                self.error = Some("a reason is required: it is what the node will carry".into());
                self.field = 0;
            }
            KeyCode::Enter => return Step::Lines,
            _ => {}
        }
        Step::Stay
    }

    /// The text the copy key puts on the clipboard: the lines, exactly.
    pub fn copied_text(&self) -> String {
        self.lines.join("\n")
    }
}

/// The copy of `text` through the `copy-osc52` plugin (a configured one of that name replaces
/// the shipped one, as it does for its shortcut), run in the foreground so that the escape
/// reaches the terminal. `None` when no such plugin can be had.
pub fn copy(loaded: &[Plugin], text: &str) -> Option<PluginRun> {
    const NAME: &str = "copy-osc52";
    let p = loaded
        .iter()
        .find(|p| p.name == NAME)
        .cloned()
        .or_else(|| plugins::load(None, false).0.into_iter().find(|p| p.name == NAME))?;
    let vars = std::collections::BTreeMap::from([("NODE".to_string(), text.to_string())]);
    let (program, args) = p.argv(&vars);
    Some(PluginRun { name: p.name, program, args, background: false })
}

impl Dialog for Instead {
    fn name(&self) -> &'static str {
        "instead"
    }

    /// The lines come from the planner's refusal of the filled request (what the command line
    /// prints); the copy goes through the OSC 52 plugin.
    fn key(&mut self, k: KeyEvent, cx: &Cx<'_>) -> Reply {
        match self.step(k) {
            Step::Stay => {}
            Step::Close => {
                let what = if self.copied { "copied; " } else { "" };
                return Reply::Say(
                    format!("{} not sent ({what}nothing was done here)", self.req.kind.label()),
                    false,
                );
            }
            Step::Lines => match cx.lend.plan(&self.filled(), crate::ops::fleet::Pick::default()) {
                Some(Err(e)) if !e.instead().is_empty() => self.lines = e.instead().to_vec(),
                Some(Err(e)) => self.error = Some(e.to_string()),
                // The preflight learnt meanwhile that it can: ask again from the start.
                _ => self.error = Some("the cluster now accepts this action: esc, then ask again".into()),
            },
            Step::Copy => match cx.lend.copy(&self.copied_text()) {
                Some(run) => {
                    self.copied = true;
                    return Reply::Plugin(run);
                }
                None => self.error = Some("no copy-osc52 plugin to copy with".into()),
            },
        }
        Reply::Stay
    }

    /// The prompt or the panel, over the body, wrapped to its width.
    fn draw(&self, f: &mut Frame, body: Rect, cx: &Cx<'_>) -> Drawn {
        let d = self;
        let t = cx.theme;
        let r = centred(body, 100);
        f.render_widget(Clear, r);
        let targets = d.req.targets.join(", ");
        let title = format!(" {} {} — gpuplane cannot send this ", d.req.kind.label(), targets);
        let b = crate::tui::draw::bordered(
            t,
            cx.glyphs,
            vec![Span::styled(safe(&title).into_owned(), t.warn)],
            true,
        );
        let inner = b.inner(r);
        f.render_widget(b, r);
        let mut lines = vec![Line::styled(safe(&d.refusal).into_owned(), t.warn), Line::raw("")];
        if d.lines.is_empty() {
            lines.push(Line::styled(
                "Nothing will be sent or audited. Type the reason and ticket: gpuplane gives you the \
                 command to run on a host with Slurm's tools, carrying them.",
                t.text,
            ));
            lines.push(Line::raw(""));
            let field = |n: usize, label: &str, value: &str| {
                let active = d.field == n;
                Line::from(vec![
                    Span::styled(format!("{label:<20}"), if active { t.prompt } else { t.dim }),
                    Span::styled(safe(value).into_owned(), t.text),
                    Span::styled(if active { "_" } else { "" }, t.prompt),
                ])
            };
            lines.push(field(0, "reason (required):", &d.reason));
            lines.push(field(1, "ticket:", &d.ticket));
            if let Some(e) = &d.error {
                lines.push(Line::styled(safe(e).into_owned(), t.crit));
            }
            lines.push(Line::raw(""));
            lines.push(Line::styled("tab field · enter show the command · esc cancel", t.dim));
        } else {
            lines.push(Line::styled("Run instead, on a host with Slurm's tools:", t.text));
            lines.push(Line::raw(""));
            lines.extend(d.lines.iter().map(|l| Line::styled(safe(l).into_owned(), t.info)));
            lines.push(Line::raw(""));
            if d.copied {
                lines.push(Line::styled("copied (OSC 52: the terminal you sit at)", t.ok));
            }
            if let Some(e) = &d.error {
                lines.push(Line::styled(safe(e).into_owned(), t.crit));
            }
            lines.push(Line::styled("c copy · esc close (nothing was sent)", t.dim));
        }
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
        Drawn::default()
    }
}
