//! Acknowledging an incident and silencing an alert: the target the operator selected, checked,
//! then the request to the ops task, which audits it first.

use super::*;

/// Why an ack is refused in read-only mode.
pub const ACK_READONLY: &str = "read-only: acknowledging writes the audit log and the shared ack store; refused (start without --readonly)";
/// Why a silence is refused in read-only mode.
pub const SILENCE_READONLY: &str =
    "read-only: silences change Alertmanager and write the audit log; refused (start without --readonly)";
/// `INC-4242 looking at it` → (Some("INC-4242"), "looking at it"): the first word is a ticket
/// when it looks like one (`ABC-123`, `#123`).
pub fn split_ticket(args: &str) -> (Option<String>, String) {
    let args = args.trim();
    let (first, rest) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
    let is_ticket = match first.split_once('-') {
        Some((p, n)) => {
            !p.is_empty()
                && p.chars().all(|c| c.is_ascii_alphanumeric())
                && p.starts_with(|c: char| c.is_ascii_alphabetic())
                && !n.is_empty()
                && n.chars().all(|c| c.is_ascii_digit())
        }
        None => {
            first.strip_prefix('#').is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        }
    };
    if is_ticket { (Some(first.to_string()), rest.trim().to_string()) } else { (None, args.to_string()) }
}
impl App {
    /// `a` on an incident: opens `:ack [TICKET] NOTE…` for it; refused in read-only mode.
    pub fn begin_ack(&mut self) {
        if self.readonly {
            self.ui.message = Some((ACK_READONLY.into(), true));
            return;
        }
        self.prepare();
        match self.ack_target() {
            Ok(_) => self.ui.mode = Mode::Prompt(Prompt::command("ack ")),
            Err(m) => self.ui.message = Some((m, true)),
        }
    }

    /// The incident selected in the Overview, by identity, if it is still listed and not resolved.
    pub(crate) fn ack_target(&self) -> Result<crate::model::IncidentKey, String> {
        let Some(ObjKey::Incident(cluster, subject, signal)) =
            self.ui.tables[views::overview::INCIDENTS].selected_id().cloned()
        else {
            return Err("ack: select an incident in the Overview first".into());
        };
        let s = self.state();
        match s.incidents.iter().find(|i| i.cluster == cluster && i.subject == subject && i.signal == signal)
        {
            Some(i) if matches!(i.lifecycle, crate::state::Lifecycle::Resolved { .. }) => {
                Err(format!("ack: {} has resolved", crate::sanitize::sanitize(&subject)))
            }
            Some(i) => Ok(i.key()),
            None => Err(format!("ack: {}: this incident has cleared", crate::sanitize::sanitize(&subject))),
        }
    }

    /// `:ack [TICKET] NOTE…`: acknowledges the selected incident. The ops task audits it first
    /// (fail closed), then the console stores it in the ack store ([`OpEvent::Acked`]).
    pub(crate) fn ack_command(&mut self, args: &str) {
        if self.readonly {
            self.ui.message = Some((ACK_READONLY.into(), true));
            return;
        }
        let key = match self.ack_target() {
            Ok(k) => k,
            Err(m) => {
                self.ui.message = Some((m, true));
                return;
            }
        };
        let (ticket, note) = split_ticket(args);
        // In a fleet the ack belongs to the incident's cluster: audited by its ops task and
        // stored under its name, so a same-named node's incident in another cluster stays open.
        let (cluster, to) = if self.routes.is_empty() {
            (self.live.cluster.to_string(), self.ops_tx.as_ref().map(|_| To::Console))
        } else {
            let c = self.selected_incident_cluster().unwrap_or_default();
            let to = match self.routes.get(&c).and_then(|r| r.tx.as_ref()) {
                Some(_) => Some(To::Cluster(c.clone())),
                None => self.ops_tx.as_ref().map(|_| To::Console),
            };
            (c.to_string(), to)
        };
        let Some(to) = to else {
            self.ui.message =
                Some(("ack: acks are audited and no audit log is open here; refused".into(), true));
            return;
        };
        let ack = crate::model::Ack {
            cluster,
            key,
            by: self.user.clone(),
            at: self.wall_now.max(self.live.now),
            note,
            ticket,
        };
        let what = crate::sanitize::sanitize(&ack.key.subject).into_owned();
        self.emit(Effect::Ops(to, OpMsg::Ack(ack)));
        self.ui.message = Some((format!("ack {what}: recording in the audit log"), false));
    }

    /// The cluster of the incident selected in the Overview (a fleet cluster's name).
    pub(crate) fn selected_incident_cluster(&self) -> Option<Text> {
        match self.ui.tables[views::overview::INCIDENTS].selected_id() {
            Some(ObjKey::Incident(cluster, ..)) => Some(cluster.clone()),
            _ => None,
        }
    }

    /// The matchers of a silence for the alert selected in the Alerts view (by fingerprint).
    pub(crate) fn silence_target(&self) -> Result<Vec<crate::model::alert::Matcher>, String> {
        if !views::alerts::can_silence(self.state()) {
            return Err(format!("silence: alerts {}", views::alerts::READ_ONLY));
        }
        let Some(ObjKey::Alert(fp)) = self.ui.tables[views::alerts::ALERTS].selected_id().cloned() else {
            return Err("silence: select an alert in the Alerts view first".into());
        };
        let Some(a) = self.state().alerts.iter().find(|a| a.fingerprint == fp) else {
            return Err("silence: the selected alert is no longer in Alertmanager".into());
        };
        ops::silence::matchers_for(a).ok_or_else(|| {
            format!(
                "silence: {} names no node or instance label; use gpuplane silence create with explicit matchers",
                crate::sanitize::sanitize(&a.name)
            )
        })
    }

    /// The silence selected in the Alerts view, if still listed and not expired.
    pub(crate) fn unsilence_target(&self) -> Result<String, String> {
        if !views::alerts::can_silence(self.state()) {
            return Err(format!("unsilence: alerts {}", views::alerts::READ_ONLY));
        }
        let Some(ObjKey::Silence(id)) = self.ui.tables[views::alerts::SILENCES].selected_id().cloned() else {
            return Err("unsilence: select a silence in the Alerts view first".into());
        };
        match self.state().silences.iter().find(|s| s.id == id) {
            Some(s) if s.state == crate::model::alert::SilenceState::Expired => {
                Err(format!("unsilence: silence {} has expired already", crate::sanitize::sanitize(&id)))
            }
            Some(s) => Ok(s.id.to_string()),
            None => Err("unsilence: the selected silence is no longer in Alertmanager".into()),
        }
    }

    /// Where a silence request goes: the Alertmanager and the ops task, or why not.
    pub(crate) fn silence_road(&self) -> Result<crate::backend::alertmanager::AmConfig, String> {
        let am =
            self.alertmanager.clone().ok_or("silence: no Alertmanager configured (--alertmanager URL)")?;
        if self.ops_tx.is_none() {
            return Err("silence: silences are audited and no audit log is open here; refused".into());
        }
        Ok(am)
    }

    /// What the command being typed would act on, for the prompt: the matchers of `:silence`
    /// and the silence `:unsilence` expires (read from the selection as it is now).
    pub fn command_hint(&self, buf: &str) -> Option<String> {
        let head = buf.split_whitespace().next()?;
        if head == "silence" && self.ui.view == views::alerts::ID {
            let m = self.silence_target().ok()?;
            let text = m.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
            return Some(format!("silence {{{text}}}: DURATION [TICKET] REASON"));
        }
        if head == "unsilence" && self.ui.view == views::alerts::ID {
            return Some(format!("expire silence {}: [TICKET] REASON", self.unsilence_target().ok()?));
        }
        None
    }

    /// The silence key in the Alerts view: opens `:silence DURATION [TICKET] REASON` for the
    /// selected alert (its name and node); refused in read-only mode.
    pub fn begin_silence(&mut self) {
        if self.readonly {
            self.ui.message = Some((SILENCE_READONLY.into(), true));
            return;
        }
        self.prepare();
        match self.silence_target() {
            Ok(_) => self.ui.mode = Mode::Prompt(Prompt::command("silence ")),
            Err(m) => self.ui.message = Some((m, true)),
        }
    }

    /// The expire key in the Alerts view: opens `:unsilence [TICKET] REASON` for the selected
    /// silence; refused in read-only mode.
    pub fn begin_unsilence(&mut self) {
        if self.readonly {
            self.ui.message = Some((SILENCE_READONLY.into(), true));
            return;
        }
        self.prepare();
        match self.unsilence_target() {
            Ok(_) => self.ui.mode = Mode::Prompt(Prompt::command("unsilence ")),
            Err(m) => self.ui.message = Some((m, true)),
        }
    }

    /// Sends a checked silence request to the ops task, which plans, audits and sends it.
    pub(crate) fn send_silence(&mut self, op: ops::silence::SilenceOp, args: &str, what: String) {
        let (ticket, reason) = split_ticket(args);
        let why = ops::silence::Why { reason, ticket, dry_run: false };
        if let Err(e) = ops::silence::check(&op, &why, self.readonly) {
            self.ui.message = Some((format!("silence: {e}"), true));
            return;
        }
        let am = match self.silence_road() {
            Ok(r) => r,
            Err(m) => {
                self.ui.message = Some((m, true));
                return;
            }
        };
        let req = ops::silence::SilenceReq { am, op, why, user: self.user.clone() };
        self.emit(Effect::Ops(To::Console, OpMsg::Silence(Box::new(req))));
        self.ui.message = Some((format!("{what}: sending to Alertmanager (audited)"), false));
    }

    /// `:silence DURATION [TICKET] REASON…`: silences the selected alert by its name and node.
    pub(crate) fn silence_command(&mut self, args: &str) {
        if self.readonly {
            self.ui.message = Some((SILENCE_READONLY.into(), true));
            return;
        }
        let matchers = match self.silence_target() {
            Ok(m) => m,
            Err(m) => {
                self.ui.message = Some((m, true));
                return;
            }
        };
        let args = args.trim();
        let (first, rest) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
        let duration = match humantime::parse_duration(first) {
            Ok(d) => d,
            Err(_) => {
                self.ui.message = Some((
                    "silence: DURATION [TICKET] REASON (e.g. :silence 2h INC-42 swapping the GPU)".into(),
                    true,
                ));
                return;
            }
        };
        let text = matchers.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        let what = format!("silence {{{}}} for {first}", crate::sanitize::sanitize(&text));
        self.send_silence(ops::silence::SilenceOp::Create { matchers, duration }, rest, what);
    }

    /// `:unsilence [TICKET] REASON…`: expires the selected silence.
    pub(crate) fn unsilence_command(&mut self, args: &str) {
        if self.readonly {
            self.ui.message = Some((SILENCE_READONLY.into(), true));
            return;
        }
        match self.unsilence_target() {
            Ok(id) => {
                let what = format!("expire silence {}", crate::sanitize::sanitize(&id));
                self.send_silence(ops::silence::SilenceOp::Expire { ids: vec![id] }, args, what);
            }
            Err(m) => self.ui.message = Some((m, true)),
        }
    }
}
