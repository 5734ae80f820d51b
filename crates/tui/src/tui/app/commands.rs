//! `:` commands: the registry of built-in commands (names, arguments, help, what runs), their
//! completion, and the commands themselves.

use super::*;

/// Starts the checks of `gpuplane doctor` off the UI task; the answer comes on the receiver.
pub type DoctorRunner = std::sync::Arc<
    dyn Fn() -> tokio::sync::oneshot::Receiver<Vec<crate::model::doctor::Check>> + Send + Sync,
>;
/// A built-in `:` command: its names (the first is the one completion offers), its arguments,
/// what it does, and what runs it. Completion, help and the command line read the registry
/// ([`COMMANDS`]); a new command is one entry here.
pub struct Command {
    pub names: &'static [&'static str],
    pub args: &'static str,
    pub help: &'static str,
    /// Runs it with the rest of the line.
    pub run: fn(&mut App, &str),
}

const fn cmd(
    names: &'static [&'static str],
    args: &'static str,
    help: &'static str,
    run: fn(&mut App, &str),
) -> Command {
    Command { names, args, help, run }
}

/// The built-in `:` commands besides the views.
pub static COMMANDS: &[Command] = &[
    cmd(&["quit", "q", "q!", "exit"], "", "quit", |a, _| a.ui.quit = true),
    cmd(&["help", "h"], "", "this help", |a, _| a.open_help()),
    cmd(&["pause"], "", "pause / resume the screen", |a, _| a.toggle_pause()),
    cmd(&["at"], "TIME", "a recording at that instant (02:10, -1h, 2026-12-04 02:10)", App::at_command),
    cmd(&["theme"], "NAME", "dark, light, high-contrast, monochrome", |a, rest| {
        let (theme, err) = Theme::load(rest, a.config_dir.as_deref(), false);
        a.theme = theme;
        a.ui.message = err.map(|e| (e.to_string(), true));
    }),
    cmd(
        &["breakglass", "bg"],
        "TICKET [MIN] REASON",
        "time-boxed elevation, audited (:breakglass end)",
        App::break_glass_command,
    ),
    cmd(&["ctx", "context"], "[NAME]", "list / switch Kubernetes contexts", App::context_command),
    cmd(
        &["cluster"],
        "[NAME|all]",
        "focus one cluster of a fleet (every table, the header); all: the fleet",
        App::cluster_command,
    ),
    cmd(
        &["doctor"],
        "",
        "check the configuration, as gpuplane doctor (OK / WARN / FAIL, the fix)",
        |a, _| a.doctor_command(),
    ),
    cmd(
        &["acceptance", "nccl"],
        "[per-node|pairs|all]",
        "NCCL test on the marked nodes (confirm, audited)",
        App::acceptance_command,
    ),
    cmd(
        &["ack"],
        "[TICKET] NOTE",
        "acknowledge the selected incident (audited; shared with other consoles)",
        App::ack_command,
    ),
    cmd(
        &["silence"],
        "DURATION [TICKET] REASON",
        "silence the selected alert in Alertmanager (audited)",
        App::silence_command,
    ),
    cmd(
        &["unsilence"],
        "[TICKET] REASON",
        "expire the selected silence in Alertmanager (audited)",
        App::unsilence_command,
    ),
];

/// Command names for completion: every view name and the built-in commands.
pub fn command_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = views::all_names().collect();
    v.extend(COMMANDS.iter().filter_map(|c| c.names.first().copied()));
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
impl App {
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

    pub(crate) fn run_builtin(&mut self, cmd: &str) {
        let mut words = cmd.split_whitespace();
        let Some(head) = words.next() else { return };
        let rest = words.collect::<Vec<_>>().join(" ");
        if let Some(c) = COMMANDS.iter().find(|c| c.names.contains(&head)) {
            return (c.run)(self, &rest);
        }
        let name = head;
        match ViewId::by_name(name) {
            Some(v) => {
                self.goto(v);
                // The name it was opened by may choose what it shows (`:wall`).
                v.def().opened(Some(name), self.ui.own.of(v));
                if !rest.is_empty() {
                    self.set_filter(rest);
                }
            }
            None => {
                self.ui.message =
                    Some((format!("unknown command {name:?} (tab completes; :help lists views)"), true))
            }
        }
    }

    /// `:doctor`: the checks of `gpuplane doctor`, run off the UI task; the report opens at
    /// once (saying they run) and fills in when they answer (polled each second).
    pub(crate) fn doctor_command(&mut self) {
        let Some(run) = &self.doctor else {
            self.ui.message = Some(("doctor is not available here (run `gpuplane doctor`)".into(), true));
            return;
        };
        if self.doctor_rx.is_none() {
            self.doctor_rx = Some(run());
        }
        self.ui.mode = Mode::Help(Box::new(Help::doctor()));
        self.poll_doctor();
    }

    /// Takes the checks' answer when it has come.
    pub(crate) fn poll_doctor(&mut self) {
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
        if let Some(d) = match &mut self.ui.mode {
            Mode::Help(h) => h.doctor.as_mut(),
            _ => None,
        } {
            d.running = false;
            d.lines = lines;
        }
    }

    /// `:ctx` lists the kubeconfig's contexts; `:ctx NAME` switches to one (the watches
    /// restart there; a read-only context refuses every action).
    /// The fleet's cluster names, and `all`, for `:cluster`.
    pub(crate) fn cluster_names(&self) -> Vec<String> {
        let mut v: Vec<String> =
            self.live.clusters().iter().filter(|c| !c.is_empty()).map(|c| c.to_string()).collect();
        v.push("all".into());
        v
    }

    /// `:cluster NAME` focuses one cluster of a fleet: every table shows only its objects (a
    /// `cluster==NAME` filter beside each table's own) and the header names it; `:cluster all`
    /// returns to the whole fleet; `:cluster` says which clusters there are.
    pub(crate) fn cluster_command(&mut self, rest: &str) {
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

    pub(crate) fn context_command(&mut self, rest: &str) {
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
        if k.tx.is_closed() {
            self.ui.message = Some(("the Kubernetes backend has stopped".into(), true));
            return;
        }
        self.emit(Effect::SwitchContext(name.to_string()));
        let Some(k) = &self.kube_ctx else { return };
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
}
