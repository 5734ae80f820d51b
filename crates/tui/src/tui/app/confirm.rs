//! Actions through the confirmation ([`crate::tui::dialogs::Confirm`]): an action planned for
//! its targets, the dialog opened on the plan, and the confirmed plan sent to each cluster's
//! ops task.

use super::*;

impl App {
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

    /// Opens the confirmation of `kind` on the marked rows, or on the selected one.
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
        // In a fleet each cluster plans its own targets and the plan shows them grouped by
        // cluster.
        let Some(planned) = self.plan(&req, ops::fleet::Pick::default()) else { return };
        match planned {
            Ok((plan, parts)) => {
                let mut c = Confirm::new(req, plan, parts, reason, ticket);
                (c.hidden, c.note) = (hidden, note);
                self.ui.mode = Mode::Confirm(Box::new(c));
            }
            // This cluster cannot do it at all but says what to run instead: ask only what
            // that command needs, and show it (nothing is confirmed, sent or audited).
            Err(e @ ops::OpError::Preflight { .. }) if !e.instead().is_empty() => {
                let ops::OpError::Preflight { backend, action, error, .. } = &e else { return };
                let refusal = format!("{backend} cannot {action}: {error}");
                let mut d = crate::tui::dialogs::Instead::new(req, refusal, reason, ticket);
                if !crate::tui::dialogs::Instead::needs_reason(kind) {
                    d.lines = e.instead().to_vec();
                }
                self.ui.mode = Mode::Instead(Box::new(d));
            }
            Err(e) => self.ui.message = Some((e.to_string(), true)),
        }
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
