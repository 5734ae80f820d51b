//! The prompt lines and the help pager: the keys of the `:` command line, the `/` filter line and
//! the help (search, scroll).

use super::*;

impl App {
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
    pub(crate) fn on_help_key(&mut self, k: KeyEvent) {
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
        let max = (crate::tui::help::lines(self).len() as u16).saturating_sub(self.ui.shown.help_rows.max(1));
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

    pub(crate) fn on_prompt_key(&mut self, k: KeyEvent, mut buf: String, command: bool) {
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

    pub(crate) fn end_filter_edit(&mut self) {
        if let Some(t) = self.focused_table() {
            let st = self.table(t);
            st.end_edit();
            // Enter on a bad filter keeps the one in force and says why.
            if let Some(e) = st.filter_error().map(str::to_string) {
                self.ui.message = Some((format!("filter not applied: {e}"), true));
            }
        }
    }

    pub(crate) fn set_filter(&mut self, f: String) {
        if let Some(t) = self.focused_table() {
            self.table(t).set_filter(&f);
            // Apply it now (or say why not), so keys after it move in the filtered rows.
            self.prepare();
        }
    }
}
