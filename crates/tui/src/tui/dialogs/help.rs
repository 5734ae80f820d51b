//! The `?` help as a pager (j/k a line, PgUp/PgDn a page, g/G the ends), searched with `/`
//! (the lines shown are those that match, under their heading), and closed by q, Esc or `?`;
//! `:doctor`'s report is shown in the same pager. The entries come from the shell
//! ([`super::Lend::entries`]): the keymap, the registries and the user's config.

use super::{Cx, Dialog, Drawn, Reply, centred};
use crate::sanitize::sanitize;
use crate::tui::keymap::Action;
use crate::tui::widgets::safe;
use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

pub use crate::tui::help::Entry;

/// `:doctor`'s report: the checks while they run (none yet), then their lines.
#[derive(Debug, Clone, Default)]
pub struct DoctorReport {
    pub running: bool,
    pub lines: Vec<crate::model::doctor::Check>,
}

/// The pager: where it is, its search, and the doctor's report when it shows one.
#[derive(Debug, Clone, Default)]
pub struct Help {
    pub scroll: u16,
    pub query: String,
    /// Whether keys go to the search line.
    pub searching: bool,
    /// `:doctor`'s report, shown instead of the help.
    pub doctor: Option<DoctorReport>,
    /// Rows the last frame had for the text (a page for PgUp/PgDn, and the clamp).
    pub rows: u16,
}

impl Help {
    /// The help, at its top, without a search.
    pub fn new() -> Help {
        Help::default()
    }

    /// The pager showing the doctor's checks, running.
    pub fn doctor() -> Help {
        Help { doctor: Some(DoctorReport { running: true, lines: Vec::new() }), ..Help::default() }
    }

    fn searched(&self) -> bool {
        self.searching || !self.query.is_empty()
    }

    /// The lines shown: the help's entries (or the doctor's report) searched with the query.
    pub fn lines(&self, cx: &Cx<'_>) -> Vec<Line<'static>> {
        let t = cx.theme;
        if let Some(d) = &self.doctor {
            return self.doctor_lines(cx, d);
        }
        let shown = crate::tui::help::search(cx.lend.entries(), &self.query);
        if shown.is_empty() {
            return vec![Line::styled(format!("nothing matches {:?}", safe(&self.query)), t.dim)];
        }
        shown
            .into_iter()
            .map(|e| match e {
                Entry::Heading(h) => Line::styled(h, t.title),
                Entry::Note(n) => Line::styled(n, t.dim),
                Entry::Item(k, what) => {
                    Line::from(vec![Span::styled(format!("  {k:<14}"), t.key), Span::styled(what, t.text)])
                }
            })
            .collect()
    }

    /// `:doctor`'s report: one line per check (OK, WARN, FAIL), its fix under it; the search
    /// keeps the checks whose text matches.
    fn doctor_lines(&self, cx: &Cx<'_>, d: &DoctorReport) -> Vec<Line<'static>> {
        use crate::model::doctor::Status;
        let t = cx.theme;
        if d.running {
            return vec![Line::styled("running the checks of gpuplane doctor…", t.dim)];
        }
        let q = self.query.to_lowercase();
        let (mut ok, mut warn, mut fail) = (0, 0, 0);
        let mut out = Vec::new();
        for c in &d.lines {
            match c.status {
                Status::Ok => ok += 1,
                Status::Warn => warn += 1,
                Status::Fail => fail += 1,
            }
            let what = c.what();
            let text = format!("{what} {} {}", c.detail, c.fix.as_deref().unwrap_or("")).to_lowercase();
            if !q.is_empty() && !text.contains(&q) {
                continue;
            }
            let style = match c.status {
                Status::Ok => t.ok,
                Status::Warn => t.warn,
                Status::Fail => t.crit,
            };
            out.push(Line::from(vec![
                Span::styled(format!("{:<5}", c.status.label()), style),
                Span::styled(format!("{} ", sanitize(&what)), t.key),
                Span::styled(sanitize(&c.detail).into_owned(), t.text),
            ]));
            if let Some(fix) = &c.fix {
                out.push(Line::styled(format!("      fix: {}", sanitize(fix)), t.dim));
            }
        }
        let mut head = vec![Line::styled(
            format!("{ok} OK · {warn} WARN · {fail} FAIL (as `gpuplane doctor`)"),
            t.title,
        )];
        if out.is_empty() {
            head.push(Line::styled(format!("nothing matches {:?}", sanitize(&self.query)), t.dim));
        }
        head.extend(out);
        head
    }

    /// Where the text of `area` goes, and how many rows it has.
    fn text_rows(&self, area: Rect) -> u16 {
        area.height.saturating_sub(2 + u16::from(self.searched())).max(1)
    }
}

impl Dialog for Help {
    fn name(&self) -> &'static str {
        "help"
    }

    /// Other keys do nothing (a stray key does not close it).
    fn key(&mut self, k: KeyEvent, cx: &Cx<'_>) -> Reply {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if self.searching {
            match k.code {
                KeyCode::Char('c') if ctrl => return Reply::Quit,
                KeyCode::Esc => {
                    self.query.clear();
                    self.searching = false;
                }
                KeyCode::Enter => self.searching = false,
                KeyCode::Backspace if self.query.pop().is_none() => self.searching = false,
                KeyCode::Char('u') if ctrl => self.query.clear(),
                KeyCode::Char(c) if !ctrl => self.query.push(c),
                _ => {}
            }
            self.scroll = 0;
            return Reply::Stay;
        }
        let page = crate::tui::app::Shown::page(self.rows);
        let max = (self.lines(cx).len() as u16).saturating_sub(self.rows.max(1));
        let action = cx.keymap.action(&k);
        let scroll = &mut self.scroll;
        match (k.code, action) {
            (_, Some(Action::Quit)) if ctrl => return Reply::Quit,
            (KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('?'), _)
            | (_, Some(Action::Help | Action::Back | Action::Quit)) => {
                if self.query.is_empty() || !matches!(k.code, KeyCode::Esc) {
                    return Reply::Close;
                }
                // Esc first drops the search, then closes.
                self.query.clear();
            }
            (KeyCode::Char('/'), _) | (_, Some(Action::Filter)) => {
                self.query.clear();
                self.searching = true;
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
        self.scroll = self.scroll.min(max);
        Reply::Stay
    }

    /// Paged, searched, clamped: it never runs into blank space.
    fn draw(&self, f: &mut Frame, area: Rect, cx: &Cx<'_>) -> Drawn {
        let t = cx.theme;
        let lines = self.lines(cx);
        let rows = self.text_rows(area);
        let total = lines.len() as u16;
        let first = self.scroll.min(total.saturating_sub(rows));
        let r = centred(area, 72);
        f.render_widget(Clear, r);
        let name = if self.doctor.is_some() { " doctor " } else { " help " };
        let mut title = vec![Span::styled(name, t.title)];
        if total > rows {
            title.push(Span::styled(
                format!("{}-{} of {} ", first + 1, (first + rows).min(total), total),
                t.dim,
            ));
        }
        title.push(Span::styled("(pgdn/pgup page · / search · q esc ? close) ", t.dim));
        let b = crate::tui::draw::bordered(t, cx.glyphs, title, true);
        let inner = b.inner(r);
        f.render_widget(b, r);
        let searching = self.searched();
        let [text, search] =
            Layout::vertical([Constraint::Min(1), Constraint::Length(u16::from(searching))]).areas(inner);
        f.render_widget(Paragraph::new(lines).scroll((first, 0)), text);
        if searching {
            let mut spans =
                vec![Span::styled("/", t.prompt), Span::styled(safe(&self.query).into_owned(), t.text)];
            if self.searching {
                spans.push(Span::styled("_", t.prompt));
            }
            f.render_widget(Paragraph::new(Line::from(spans)), search);
        }
        Drawn { rows, total, first }
    }

    fn drawn(&mut self, d: Drawn) {
        self.rows = d.rows;
        self.scroll = d.first;
    }
}
