//! Break-glass: a time-boxed, audited elevation for an incident.

use super::*;

/// A time-boxed elevation for incidents.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakGlass {
    pub id: String,
    pub until: crate::model::Epoch,
    pub ticket: String,
    pub reason: String,
}
impl BreakGlass {
    /// What every record written under the session carries.
    pub fn tag(&self) -> crate::audit::BreakGlass {
        crate::audit::BreakGlass { session: self.id.clone(), ticket: self.ticket.clone() }
    }
}
/// The longest break-glass session, in minutes.
pub const BREAK_GLASS_MAX_MIN: i64 = 240;
impl App {
    /// `:breakglass TICKET [MINUTES] REASON…` starts a session, `:breakglass end` ends it. One
    /// session per operator at a time: while one is open (here, or in another console of the
    /// same OS user on this audit log) a second is refused. Read-only stays read-only:
    /// break-glass cannot lift it, and nothing starts.
    pub(crate) fn break_glass_command(&mut self, args: &str) {
        let usage = "usage: :breakglass TICKET [MINUTES] REASON… (or :breakglass end)";
        let mut w = args.split_whitespace().peekable();
        let Some(first) = w.next() else {
            self.ui.message = Some((usage.into(), true));
            return;
        };
        if matches!(first, "end" | "off") {
            match self.break_glass.take() {
                Some(b) => {
                    self.end_break_glass(&b, "ended by operator");
                    self.ui.message = Some(("break-glass ended".into(), false));
                }
                None => self.ui.message = Some(("no break-glass session is open".into(), false)),
            }
            return;
        }
        if self.readonly {
            self.ui.message = Some((
                "read-only: break-glass cannot lift read-only mode; no session was started".into(),
                true,
            ));
            return;
        }
        if let Some(b) = &self.break_glass {
            let left = (b.until - self.wall_now).max(0);
            self.ui.message = Some((
                format!(
                    "break-glass {} is already open ({}:{:02} left): refused; end it first with :breakglass end",
                    crate::sanitize::sanitize(&b.ticket),
                    left / 60,
                    left % 60
                ),
                true,
            ));
            return;
        }
        let me = crate::audit::os_user();
        if let Some(o) = crate::audit::open_sessions(&self.audit).into_iter().find(|o| {
            o.os_user == me
                && o.until.is_some_and(|u| u > self.wall_now)
                && !self.break_glass_ended.contains(&o.session)
        }) {
            self.ui.message = Some((
                format!(
                    "break-glass {} is already open for {me} in another console on {}: refused; end it there first",
                    crate::sanitize::sanitize(o.ticket.as_deref().unwrap_or("(no ticket)")),
                    crate::sanitize::sanitize(&o.host)
                ),
                true,
            ));
            return;
        }
        let (default_min, max_min) = self.break_glass_limits;
        let mins = match w.peek().and_then(|m| m.parse::<i64>().ok()) {
            Some(m) => {
                w.next();
                m
            }
            None => default_min,
        };
        let reason = w.collect::<Vec<_>>().join(" ");
        if reason.is_empty() || !(1..=max_min).contains(&mins) {
            self.ui.message =
                Some((format!("{usage}; a reason and 1..={max_min} minutes are required"), true));
            return;
        }
        let b = BreakGlass {
            id: uuid::Uuid::new_v4().to_string(),
            until: self.wall_now + mins * 60,
            ticket: first.to_string(),
            reason,
        };
        // Break-glass start and end are audited through the ops task's log, so the UI never
        // writes to disk.
        // In a fleet every cluster's ops task records it (each cluster's writes go out as its
        // own break-glass identity).
        self.emit(Effect::Ops(
            To::All,
            OpMsg::BreakGlass(ops::BreakGlassMsg::Start {
                session: b.tag(),
                reason: b.reason.clone(),
                minutes: mins,
                until: b.until,
            }),
        ));
        self.break_glass = Some(b);
    }

    pub(crate) fn expire_break_glass(&mut self) {
        if self.break_glass.as_ref().is_some_and(|b| self.wall_now >= b.until)
            && let Some(b) = self.break_glass.take()
        {
            self.end_break_glass(&b, "expired");
            self.ui.message = Some(("break-glass expired: elevation dropped".into(), true));
        }
    }

    pub(crate) fn end_break_glass(&mut self, b: &BreakGlass, why: &str) {
        self.break_glass_ended.push(b.id.clone());
        self.emit(Effect::Ops(
            To::All,
            OpMsg::BreakGlass(ops::BreakGlassMsg::End { session: b.tag(), why: why.into() }),
        ));
    }
}
