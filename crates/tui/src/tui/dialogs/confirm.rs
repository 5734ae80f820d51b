//! The confirmation of an action: exactly what will happen (the plan, what was refused, the
//! limits), the reason, the ticket and the typed word. Enter sends the plan
//! ([`Reply::Submit`]); ^d makes it a dry run; ^s, on a host in two schedulers, plans it again
//! in both, Slurm only or Kubernetes only; the plan scrolls (PgUp/PgDn, Home/End).

use super::{Cx, Dialog, Drawn, Reply, centred};
use crate::ops::{self, OpRequest, Plan};
use crate::tui::widgets::safe;
use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

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
    /// Rows the last frame had for the plan, and the plan's wrapped lines.
    pub rows: u16,
    pub total: u16,
}

impl Confirm {
    /// The confirmation of `plan` for `req`, prefilled with a reason and a ticket.
    pub fn new(
        req: OpRequest,
        plan: Plan,
        parts: Vec<ops::fleet::Part>,
        reason: String,
        ticket: String,
    ) -> Confirm {
        Confirm {
            req,
            plan,
            reason,
            ticket,
            typed: String::new(),
            field: 0,
            error: None,
            hidden: Vec::new(),
            note: None,
            scroll: 0,
            parts,
            pick: ops::fleet::Pick::default(),
            rows: 0,
            total: 0,
        }
    }
}

/// The plan lines that scroll in the confirmation: the plan's body, with each marked target the
/// filter hides flagged.
pub fn confirm_body(c: &Confirm) -> Vec<String> {
    c.plan.body_with(|t| c.hidden.iter().any(|h| h == t).then_some("[hidden by filter] "))
}

impl Dialog for Confirm {
    fn name(&self) -> &'static str {
        "confirm"
    }

    fn key(&mut self, k: KeyEvent, cx: &Cx<'_>) -> Reply {
        let c = self;
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let fields = if c.plan.confirm_word.is_some() { 3 } else { 2 };
        let field = match c.field {
            0 => &mut c.reason,
            1 => &mut c.ticket,
            _ => &mut c.typed,
        };
        match k.code {
            KeyCode::Esc => {
                return Reply::Say(format!("{} cancelled; nothing was done", c.req.kind.label()), false);
            }
            KeyCode::Char('c') if ctrl => return Reply::Close,
            // Dry run: audit the plan, execute nothing.
            KeyCode::Char('d') if ctrl => c.req.dry_run = !c.req.dry_run,
            // A paired host: act in both schedulers, Slurm only or Kubernetes only, planned
            // again. A pick that cannot be planned (a scheduler refuses it, nothing is left to
            // do there) is passed over, saying why.
            KeyCode::Char('s') if ctrl && !c.plan.notes.is_empty() => {
                let mut pick = c.pick.next();
                let mut skipped = Vec::new();
                while pick != c.pick {
                    match cx.lend.plan(&c.req, pick) {
                        Some(Ok((plan, parts))) => {
                            (c.plan, c.parts, c.pick, c.typed, c.scroll) =
                                (plan, parts, pick, String::new(), 0);
                            break;
                        }
                        Some(Err(e)) => skipped.push(format!("{}: {e}", pick.label())),
                        None => skipped.push(format!("{}: nothing can plan it", pick.label())),
                    }
                    pick = pick.next();
                }
                c.error = (!skipped.is_empty()).then(|| skipped.join("; "));
            }
            // The plan scrolls before confirming (the fields take every printable key).
            KeyCode::PageDown | KeyCode::PageUp | KeyCode::Home | KeyCode::End => {
                let page = usize::from(crate::tui::app::Shown::page(c.rows));
                let max = usize::from(c.total.saturating_sub(c.rows.max(1)));
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
                    return Reply::Submit(Box::new(c.clone()));
                }
            }
            _ => {}
        }
        Reply::Stay
    }

    /// The summary (and what was refused, and a note when the marks are not the highlighted
    /// row) stay on top; the plan's lines scroll between them and the fields.
    fn draw(&self, f: &mut Frame, body: Rect, cx: &Cx<'_>) -> Drawn {
        let c = self;
        let t = cx.theme;
        let r = centred(body, 90);
        f.render_widget(Clear, r);
        let dry = if c.req.dry_run { "DRY RUN " } else { "" };
        let title = format!(" {dry}{} {} target(s) ", c.req.kind.label(), c.plan.steps.len());
        let b = crate::tui::draw::bordered(
            t,
            cx.glyphs,
            vec![Span::styled(title, if c.req.kind.destructive() { t.crit } else { t.title })],
            true,
        );
        let inner = b.inner(r);
        f.render_widget(b, r);
        let mut top: Vec<Line> = Vec::new();
        if let Some(l) = c.plan.refused_line() {
            top.push(Line::styled(safe(&l).into_owned(), t.warn));
        }
        // Past a blast-radius limit under break-glass: every limit, in the alarm colour.
        for l in c.plan.limit_lines() {
            top.push(Line::styled(safe(&l).into_owned(), t.crit));
        }
        if let Some(n) = &c.note {
            top.push(Line::styled(safe(n).into_owned(), t.info));
        }
        if !c.hidden.is_empty() {
            top.push(Line::styled(
                format!("{} of the marked targets are hidden by the filter", c.hidden.len()),
                t.warn,
            ));
        }
        top.push(Line::styled(safe(&c.plan.summary()).into_owned(), t.text));
        let field = |n: usize, label: &str, value: &str| {
            let active = c.field == n;
            Line::from(vec![
                Span::styled(format!("{label:<22}"), if active { t.prompt } else { t.dim }),
                Span::styled(safe(value).into_owned(), t.text),
                Span::styled(if active { "_" } else { "" }, t.prompt),
            ])
        };
        let mut bottom =
            vec![Line::raw(""), field(0, "reason (required):", &c.reason), field(1, "ticket:", &c.ticket)];
        if let Some(word) = &c.plan.confirm_word {
            bottom.push(field(2, &format!("type {word:?} to confirm:"), &c.typed));
        }
        if let Some(e) = &c.error {
            bottom.push(Line::styled(safe(e).into_owned(), t.crit));
        }
        if !c.plan.notes.is_empty() {
            bottom.push(Line::styled(
                format!("schedulers of paired hosts: {} (^s: both, slurm, kube)", c.pick.label()),
                t.info,
            ));
        }
        bottom.push(Line::styled("tab field · enter run · ^d dry run · pgdn plan · esc cancel", t.dim));
        let height = |ls: &[Line]| -> u16 {
            Paragraph::new(ls.to_vec()).wrap(Wrap { trim: false }).line_count(inner.width) as u16
        };
        let (top_h, bottom_h) = (height(&top), height(&bottom));
        // The plan wraps (nothing cut mid-value on a narrow terminal) and scrolls by rows.
        let plan: Vec<Line> = confirm_body(c)
            .iter()
            .map(|l| {
                let st = if l.trim_start().starts_with("[hidden by filter]") { t.warn } else { t.text };
                Line::styled(safe(l).into_owned(), st)
            })
            .collect();
        let plan = Paragraph::new(plan).wrap(Wrap { trim: false });
        let total = plan.line_count(inner.width) as u16;
        // The plan's rows: what is left, less one for the "more" line when it does not all fit.
        let room = inner.height.saturating_sub(top_h + bottom_h);
        let fits = total <= room;
        let rows = if fits { total } else { room.saturating_sub(1) };
        let first = (c.scroll.min(usize::from(u16::MAX)) as u16).min(total.saturating_sub(rows));
        let more = (!fits && room > 0).then(|| {
            let below = total.saturating_sub(first + rows);
            Line::styled(
                format!(
                    "rows {}-{} of {total}; {below} more below (pgdn/pgup scroll)",
                    first + 1,
                    first + rows
                ),
                t.dim,
            )
        });
        let [a, m, more_area, z] = Layout::vertical([
            Constraint::Length(top_h),
            Constraint::Length(rows),
            Constraint::Length(u16::from(more.is_some())),
            Constraint::Min(0),
        ])
        .areas(inner);
        f.render_widget(Paragraph::new(top).wrap(Wrap { trim: false }), a);
        f.render_widget(plan.scroll((first, 0)), m);
        if let Some(l) = more {
            f.render_widget(Paragraph::new(l), more_area);
        }
        f.render_widget(Paragraph::new(bottom).wrap(Wrap { trim: false }), z);
        Drawn { rows, total, first }
    }

    fn drawn(&mut self, d: Drawn) {
        (self.rows, self.total, self.scroll) = (d.rows, d.total, usize::from(d.first));
    }
}
