//! The footer's prompt lines: the `:` command line (Tab completes commands and `:cluster`'s
//! names; an ambiguous Tab lists the candidates beside the line) and the `/` filter line
//! (applied as it is typed; Enter keeps it, Esc clears it).

use super::{Cx, Dialog, Drawn, Place, Reply};
use crate::tui::app::{complete, complete_from};
use crate::tui::widgets::safe;
use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompt {
    /// The `:` command line (else the `/` filter line).
    pub command: bool,
    pub buf: String,
    /// Command names an ambiguous Tab completion offers, shown beside the line until the next key.
    pub completions: Vec<String>,
}

impl Prompt {
    /// The command line, holding `buf` (`ack ` when a key opens it for a command).
    pub fn command(buf: &str) -> Prompt {
        Prompt { command: true, buf: buf.to_string(), completions: Vec::new() }
    }

    /// The filter line, holding the filter in force.
    pub fn filter(buf: &str) -> Prompt {
        Prompt { command: false, buf: buf.to_string(), completions: Vec::new() }
    }
}

impl Dialog for Prompt {
    fn name(&self) -> &'static str {
        if self.command { "command" } else { "filter" }
    }

    fn place(&self) -> Place {
        Place::Footer
    }

    fn key(&mut self, k: KeyEvent, cx: &Cx<'_>) -> Reply {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if k.code != KeyCode::Tab {
            self.completions.clear();
        }
        let end = |clear| if self.command { Reply::Close } else { Reply::EndFilter { clear } };
        match k.code {
            KeyCode::Char('c') if ctrl => return Reply::Quit,
            KeyCode::Esc => return end(true),
            KeyCode::Enter if self.command => return Reply::Run(self.buf.trim().to_string()),
            KeyCode::Enter => return end(false),
            KeyCode::Backspace if self.buf.is_empty() => return end(false),
            KeyCode::Tab if self.command => {
                let (completed, candidates) = match self.buf.strip_prefix("cluster ") {
                    // `:cluster` completes the fleet's cluster names.
                    Some(arg) => {
                        complete_from(&self.buf[..self.buf.len() - arg.len()], arg, cx.lend.clusters())
                    }
                    None => {
                        let (b, c) = complete(&self.buf);
                        (b, c.into_iter().map(String::from).collect())
                    }
                };
                self.buf = completed;
                self.completions = if candidates.len() > 1 { candidates } else { Vec::new() };
            }
            KeyCode::Backspace => {
                self.buf.pop();
            }
            KeyCode::Char('u') if ctrl => self.buf.clear(),
            KeyCode::Char(c) if !ctrl => self.buf.push(c),
            _ => {}
        }
        if self.command { Reply::Stay } else { Reply::Filter(self.buf.clone()) }
    }

    fn draw(&self, f: &mut Frame, area: Rect, cx: &Cx<'_>) -> Drawn {
        let t = cx.theme;
        let line = if self.command {
            let (completed, _) = complete(&self.buf);
            let ghost = completed.strip_prefix(self.buf.as_str()).unwrap_or("").to_string();
            let mut spans = vec![
                Span::styled(":", t.prompt),
                Span::styled(safe(&self.buf).into_owned(), t.text),
                Span::styled(ghost, t.dim),
                Span::styled("_", t.prompt),
            ];
            // An ambiguous Tab: the candidates, beside the line.
            if !self.completions.is_empty() {
                spans.push(Span::styled("   ", t.dim));
                spans.push(Span::styled(safe(&self.completions.join("  ")).into_owned(), t.info));
            }
            // What a write command would act on (`:silence` names the alert's matchers).
            if let Some(h) = cx.lend.hint(&self.buf) {
                spans.push(Span::styled(format!("   {}", safe(&h)), t.dim));
            }
            Line::from(spans)
        } else {
            let mut v = vec![
                Span::styled("/", t.prompt),
                Span::styled(safe(&self.buf).into_owned(), t.text),
                Span::styled("_", t.prompt),
            ];
            match cx.lend.filter_error() {
                Some(e) => v.push(Span::styled(format!("  {}", safe(&e)), t.crit)),
                None => v.push(Span::styled("  enter keep, esc clear", t.dim)),
            }
            Line::from(v)
        };
        f.render_widget(Paragraph::new(line), area);
        Drawn::default()
    }
}
