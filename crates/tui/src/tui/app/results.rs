//! What the ops task reports: progress and results of actions, acks recorded, the audit log.

use super::*;

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
impl App {
    pub(crate) fn on_op_event(&mut self, ev: OpEvent) {
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
                if self.acks.is_some() {
                    self.emit(Effect::Acks(crate::store::acks::Request::Put(ack)));
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
                self.feed_one(crate::model::protocol::Update::Acceptance(by_node));
            }
            OpEvent::ClusterAcceptance { cluster, by_node } => {
                self.feed_one(crate::model::protocol::Update::Cluster {
                    cluster: cluster.as_str().into(),
                    update: Box::new(crate::model::protocol::Update::Acceptance(by_node)),
                });
            }
            OpEvent::AcceptanceError(e) => {
                self.ui.message = Some((format!("acceptance runs: {e}"), true));
            }
        }
    }
}
