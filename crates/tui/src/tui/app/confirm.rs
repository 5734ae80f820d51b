//! The confirmation dialog: an action planned for its targets, its reason and ticket, the typed
//! confirmation, and the plan sent to each cluster's ops task.

use super::*;

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
/// The plan lines that scroll in the confirmation: the plan's body, with each marked target the
/// filter hides flagged.
pub fn confirm_body(c: &Confirm) -> Vec<String> {
    c.plan.body_with(|t| c.hidden.iter().any(|h| h == t).then_some("[hidden by filter] "))
}
impl App {
    /// Opens the confirmation of `kind` on the marked rows, or on the selected one.
    /// The reason and ticket an action on the selected incident starts with: the playbook
    /// step's reason when the step is this action, the ticket its ack or mitigation carries.
    pub(crate) fn incident_prefill(&self, kind: ActionKind) -> (String, String) {
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
                let mut d = crate::tui::instead::Instead::new(req, refusal, reason, ticket);
                if !crate::tui::instead::Instead::needs_reason(kind) {
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
    pub(crate) fn on_instead_key(&mut self, k: KeyEvent, mut d: crate::tui::instead::Instead) {
        use crate::tui::instead::Step;
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
            Step::Copy => match crate::tui::instead::copy(&self.plugins, &d.copied_text()) {
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
    pub(crate) fn plan_fleet(
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

    pub(crate) fn on_confirm_key(&mut self, k: KeyEvent, mut c: Confirm) {
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

    pub(crate) fn submit(&mut self, c: Confirm) {
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
        if self.ops_tx.is_none() {
            self.ui.message = Some(("actions are not available: the ops task is not running".into(), true));
            return;
        }
        self.op_panel =
            vec![(format!("{} {} target(s): running…", req.kind.label(), req.targets.len()), false)];
        let job = OpJob {
            req,
            plan: c.plan,
            break_glass: self.break_glass.as_ref().map(BreakGlass::tag),
            op_id: None,
        };
        self.emit(Effect::Ops(To::Console, OpMsg::Run(job)));
        self.marks = Marks::default();
    }

    /// A fleet plan: each cluster's part to that cluster's ops task, with the reason, ticket
    /// and dry run the operator confirmed.
    pub(crate) fn submit_parts(&mut self, req: &OpRequest, parts: Vec<ops::fleet::Part>) {
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
            let job = OpJob { req: r, plan: p.plan, break_glass: tag.clone(), op_id: op_id.clone() };
            self.emit(Effect::Ops(To::Cluster(p.cluster), OpMsg::Run(job)));
        }
        self.marks = Marks::default();
    }

    /// `:acceptance [per-node|pairs|all]`: the NCCL test on the marked nodes (or the selected
    /// one), through the confirmation.
    pub(crate) fn acceptance_command(&mut self, args: &str) {
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
}
