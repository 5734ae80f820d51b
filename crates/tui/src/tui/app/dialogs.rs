//! The shell's side of the dialogs ([`crate::tui::dialogs`]): a key to the open one, what it
//! replies carried out here, and what the console lends them ([`Lend`]).

use super::*;
use crate::tui::dialogs::{Lend, Reply};

impl App {
    /// Opens the help at its top, without a search.
    pub fn open_help(&mut self) {
        self.ui.mode = Mode::Help(Box::default());
    }

    /// What a dialog is lent.
    pub(crate) fn dialog_cx(&self) -> crate::tui::dialogs::Cx<'_> {
        crate::tui::dialogs::Cx { theme: &self.theme, glyphs: self.glyphs, keymap: &self.keymap, lend: self }
    }

    /// A key to the open dialog; its reply carried out.
    pub(crate) fn on_dialog_key(&mut self, k: KeyEvent) {
        let mut mode = std::mem::take(&mut self.ui.mode);
        let reply = match mode.dialog_mut() {
            Some(d) => d.key(k, &self.dialog_cx()),
            None => Reply::Stay,
        };
        self.ui.mode = mode;
        self.on_reply(reply);
    }

    /// Carries out what a dialog asked.
    fn on_reply(&mut self, reply: Reply) {
        match reply {
            Reply::Stay => {}
            Reply::Close => self.ui.mode = Mode::Normal,
            Reply::Say(m, error) => {
                self.ui.mode = Mode::Normal;
                self.ui.message = Some((m, error));
            }
            Reply::Quit => self.ui.quit = true,
            Reply::Run(cmd) => {
                self.ui.mode = Mode::Normal;
                self.run_command(&cmd);
            }
            Reply::Filter(f) => self.set_filter(f),
            Reply::EndFilter { clear } => {
                if clear {
                    self.set_filter(String::new());
                }
                self.end_filter_edit();
                self.ui.mode = Mode::Normal;
            }
            Reply::Submit(c) => self.submit(*c),
            Reply::Plugin(run) => self.pending_plugin = Some(run),
        }
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

    /// Plans `req` as the console does before a confirmation: in a fleet each cluster plans
    /// its own targets (its preflight, read-only flag and limits, its own last hour of drains);
    /// one cluster plans through its planner and its limits.
    pub(crate) fn plan(
        &self,
        req: &OpRequest,
        pick: ops::fleet::Pick,
    ) -> Option<Result<(Plan, Vec<ops::fleet::Part>), ops::OpError>> {
        if !self.routes.is_empty() {
            return Some(self.plan_fleet(req, pick));
        }
        let planner = self.planner.as_ref()?;
        // Plans during break-glass are checked as the elevated identity would be.
        let elevated = self.break_glass.is_some();
        // Blast radius: the drains of the last hour from the audit records the ops task last
        // read (the ops task counts again from the log itself before it sends).
        let recent = ops::guard::drains_in_window(&self.audit, &self.state().cluster, self.wall_now);
        let limits = self.limits.for_cluster(&self.state().cluster);
        Some(
            ops::plan_batch_as(req, self.state(), planner.as_ref(), self.readonly, elevated)
                .and_then(|mut p| {
                    ops::guard_plan(&mut p, self.state(), &limits, &recent, elevated).map(|()| p)
                })
                .map(|p| (p, Vec::new())),
        )
    }
}

impl Lend for App {
    fn entries(&self) -> Vec<crate::tui::help::Entry> {
        crate::tui::help::entries(self)
    }

    fn clusters(&self) -> Vec<String> {
        self.cluster_names()
    }

    fn hint(&self, line: &str) -> Option<String> {
        self.command_hint(line)
    }

    fn filter_error(&self) -> Option<String> {
        self.focused_table().and_then(|id| self.ui.tables[id].filter_error()).map(str::to_string)
    }

    fn plan(
        &self,
        req: &OpRequest,
        pick: ops::fleet::Pick,
    ) -> Option<Result<(Plan, Vec<ops::fleet::Part>), ops::OpError>> {
        App::plan(self, req, pick)
    }

    fn copy(&self, text: &str) -> Option<PluginRun> {
        crate::tui::dialogs::instead::copy(&self.plugins, text)
    }
}
