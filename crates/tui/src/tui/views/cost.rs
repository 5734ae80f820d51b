//! Cost: money and GPU-hours per team and per job over a window, useful vs idle.

pub use crate::tables::cost::*;

use super::super::widgets::money;
use super::super::widgets::table::TableSource;
use super::{ViewId, ViewKey};
use crate::cost::{By, CostReport};
use crate::model::Epoch;
use crate::tui::draw::table_with_detail;
use crate::tui::keymap::Action;
use crate::tui::theme::Theme;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::text::Span;
use ratatui::widgets::Paragraph;

/// The view's tables in Tab order (indexes into [`View::tables`]); which are shown depends on
/// the `by` mode.
const TABLES: [&dyn TableSource; 5] = [&ByTable, &CostJobsTable, &CausesTable, &WaitsTable, &TeamsTable];

/// The breakdown bar: the window's total split into its seven parts, each drawn with its
/// letter over `width` cells, then (when `legend`) a line naming each part that is above
/// zero with its money and share of the total.
pub fn breakdown<'a>(c: &CostReport, t: &Theme, width: u16, legend: bool) -> Vec<Line<'a>> {
    let named = c.bill.parts.named();
    let styles = [t.ok, t.warn, t.dim, t.info, t.crit, t.crit, t.text];
    let total = c.bill.total;
    let label = " bill ";
    let bar_w = usize::from(width).saturating_sub(label.len() + 2);
    let cells = proportional(&named.map(|(_, v)| v), bar_w);
    let mut bar = vec![Span::styled(label, t.dim), Span::styled("[", t.dim)];
    for (i, n) in cells.iter().enumerate() {
        if *n > 0 {
            bar.push(Span::styled(BAR_LETTERS[i].to_string().repeat(*n), styles[i]));
        }
    }
    if total <= 0.0 {
        bar.push(Span::styled(format!("{:bar_w$}", "nothing in this window"), t.dim));
    }
    bar.push(Span::styled("]", t.dim));
    let mut out = vec![Line::from(bar)];
    if legend {
        let wide = width >= 140;
        let mut l = vec![Span::raw(" ")];
        for (i, (name, v)) in named.iter().enumerate() {
            if *v <= 0.0 {
                continue;
            }
            if l.len() > 1 {
                l.push(Span::styled(" · ", t.dim));
            }
            let pct = 100.0 * v / total.max(f64::MIN_POSITIVE);
            l.push(Span::styled(BAR_LETTERS[i].to_string(), styles[i]));
            let text = if wide {
                format!(" {name} {} {pct:.0}%", money(*v, &c.currency))
            } else {
                format!(" {name} {pct:.0}%")
            };
            l.push(Span::styled(text, t.text));
        }
        out.push(Line::from(l));
    }
    out
}

/// One line of the team budgets: each team's burn per day and when its month's budget runs
/// out at that burn (from the window's start), when `[prices.budgets]` has any.
pub fn budgets<'a>(c: &CostReport, t: &Theme, width: u16) -> Option<Line<'a>> {
    let b = &c.bill.budgets;
    if b.is_empty() {
        return None;
    }
    let cur = &c.currency;
    let wide = width >= 100;
    let mut l = vec![Span::styled(if wide { " budgets:" } else { " budget:" }, t.dim)];
    // Narrow: the budgets that run out, then how many last the month.
    let lasting = b.iter().filter(|u| u.runs_out.is_none()).count();
    let shown: Vec<_> = b.iter().filter(|u| wide || u.runs_out.is_some()).collect();
    for (i, u) in shown.into_iter().enumerate() {
        l.push(Span::styled(if i == 0 { " " } else { " · " }, t.dim));
        l.push(Span::styled(crate::sanitize::sanitize(&u.team).into_owned(), t.text));
        let pct = if u.monthly > 0.0 { 100.0 * u.spent / u.monthly } else { 0.0 };
        l.push(Span::styled(format!(" {}/day", money(u.burn_per_day, cur)), t.text));
        if width >= 100 {
            l.push(Span::styled(format!(" ({pct:.0}% of {}/mo)", money(u.monthly, cur)), t.dim));
        }
        match u.runs_out {
            Some(at) => l.push(Span::styled(format!(" out {}", crate::clock::clock(c.until, at)), t.crit)),
            None => l.push(Span::styled(" lasts the month", t.ok)),
        }
    }
    if !wide && lasting > 0 {
        let sep = if l.len() > 1 { " · " } else { " " };
        l.push(Span::styled(format!("{sep}{lasting} last the month"), t.ok));
    }
    Some(Line::from(l))
}

/// The three lines above the tables: the window's total and its parts; GPUs no job held, by
/// cause (and what the free ones cost per hour now); the rate card — or, when the ledger
/// failed, what is wrong with it and what to do. Shorter words below 120 columns.
pub fn summary<'a>(
    c: &CostReport,
    t: &Theme,
    wname: &str,
    keys: &str,
    now: Epoch,
    width: u16,
) -> Vec<Line<'a>> {
    use crate::cost::Basis;
    let wide = width >= 140;
    let cur = &c.currency;
    let m = |v: f64| money(v, cur);
    // A ledger younger than the window holds every job of it (the scheduler's history) but
    // the GPUs no job held only since it began: the total is then a lower bound, and says so.
    let lower = matches!(c.basis, Basis::Ledger { .. }) && c.data_since.is_some();
    let ge = if lower { "≥" } else { "" };
    let mut first = vec![
        Span::styled(format!(" {wname} "), t.title),
        Span::styled(format!("{ge}{}", m(c.total)), t.accent),
        Span::styled(if wide { " total = jobs " } else { " = jobs " }, t.dim),
        Span::styled(m(c.allocated), t.text),
        Span::styled(if wide { " (idle on them " } else { " (idle " }, t.dim),
        Span::styled(m(c.idle_total), t.warn),
        Span::styled(if wide { ") + GPUs no job held " } else { ") + no job " }, t.dim),
    ];
    match &c.basis {
        Basis::Ledger { .. } => first.push(Span::styled(format!("{ge}{}", m(c.unused.total().cost)), t.warn)),
        _ => first.push(Span::styled("?", t.dim)),
    }
    // Overhead lines and reserved GPU-hours the window never saw, when the card has them.
    let overhead = c.bill.parts.overhead;
    if overhead > 0.0 {
        first.push(Span::styled(" + overhead ", t.dim));
        first.push(Span::styled(m(overhead), t.text));
    }
    let unseen = c.total - c.allocated - c.unused.total().cost - overhead;
    if matches!(c.basis, Basis::Ledger { .. }) && unseen > 0.005 {
        first.push(Span::styled(if wide { " + reserved, not seen " } else { " + rsv " }, t.dim));
        first.push(Span::styled(m(unseen), t.warn));
    }
    match (&c.basis, c.data_since) {
        (Basis::Ledger { .. }, Some(since)) => {
            let when = crate::clock::clock(now, since);
            let text = if wide {
                format!(
                    " · capacity since {when} ({} of the window; jobs: all of it)",
                    crate::clock::dur(now - since)
                )
            } else {
                format!(" · capacity since {when}")
            };
            first.push(Span::styled(text, t.warn));
        }
        (Basis::Ledger { .. }, None) if wide => {
            first.push(Span::styled(" · ledger covers the window", t.dim))
        }
        (Basis::Console, _) => first.push(Span::styled(
            if wide { " · no ledger: only the jobs this console holds" } else { " · no ledger" },
            t.dim,
        )),
        (Basis::Reading, _) => first.push(Span::styled(
            if wide {
                " · reading the ledger… (meanwhile the jobs this console holds)"
            } else {
                " · reading ledger…"
            },
            t.dim,
        )),
        (Basis::Unavailable { .. }, _) => first.push(Span::styled(" · ledger failed", t.crit)),
        _ => {}
    }
    if wide {
        first.push(Span::styled(keys.to_string(), t.dim));
    }
    let [_, un, dr, dn, mt] = c.now_gpus;
    let now_text = if wide {
        format!(" · now {un} free, {dr} drained, {dn} down, {mt} maint = {}/h", m(c.now_unused_per_hour))
    } else {
        format!(" · now {}/h", m(c.now_unused_per_hour))
    };
    let mut second = vec![Span::styled(if wide { " GPUs no job held:" } else { " no job:" }, t.dim)];
    match &c.basis {
        Basis::Ledger { .. } => {
            for (i, (name, p)) in c.unused.parts().into_iter().enumerate() {
                let name = if wide { name } else { ["free", "drained", "down", "maint"][i] };
                second.push(Span::styled(format!("{} {name} ", if i == 0 { "" } else { " ·" }), t.dim));
                second.push(Span::styled(m(p.cost), if p.cost > 0.0 { t.warn } else { t.dim }));
                if wide {
                    second.push(Span::styled(format!(" ({:.0} GPU-h)", p.gpu_hours), t.dim));
                }
            }
        }
        Basis::Reading => second.push(Span::styled(" reading the ledger…", t.dim)),
        _ => second.push(Span::styled(" not known without the ledger", t.dim)),
    }
    second.push(Span::styled(now_text, t.dim));
    let third = match &c.basis {
        Basis::Unavailable { why } => {
            return vec![Line::from(first), Line::styled(format!(" {why}"), t.crit)];
        }
        _ => {
            let rates: Vec<String> = c.rates.iter().map(|(m, r)| format!("{m} {r:.2}")).collect();
            let unit = if cur == "USD" { "$".to_string() } else { format!("{cur} ") };
            let mut l =
                vec![Span::styled(format!(" {unit}/GPU-h "), t.dim), Span::styled(rates.join(" · "), t.text)];
            if wide {
                l.push(Span::styled(
                    "  ([prices] in the config; USEFUL = useful / (useful + idle + failed) GPU-h)",
                    t.dim,
                ));
            }
            l
        }
    };
    vec![Line::from(first), Line::from(second), Line::from(third)]
}

/// What every word of the Cost view means, for the help.
const HELP: [(&str, &str); 18] = [
    ("total", "every GPU-hour the cluster had, priced, plus overhead: the sum of the 7 parts"),
    ("U useful", "GPU-hours jobs held x their measured GPU utilisation"),
    ("i alloc-idle", "the rest of what jobs that did not fail held (100% - utilisation)"),
    ("? unmeasured", "what jobs held with no utilisation telemetry (neither useful nor idle)"),
    ("- unallocated", "schedulable GPUs no job held; reserved GPUs the window never saw"),
    ("x unhealthy", "GPUs on drained, down or maintenance nodes"),
    ("F failed", "all that runs held which failed: node failure, OOM, timeout, non-zero exit"),
    ("o overhead", "[prices.overhead] lines (network, storage, support, ops) for the window"),
    ("SHARED $", "a row's part of unallocated + unhealthy + overhead, by what its jobs held"),
    ("USEFUL", "useful / (useful + alloc-idle + failed) GPU-hours; a failed run is 0%"),
    ("IDLE $", "the alloc-idle part of what the row's jobs held (a failed run's is failed)"),
    ("GPU-H", "GPU-hours held inside the window (a MIG slice counts as its share)"),
    ("$/GPU-h", "the price card ([prices]): on-demand rates, blended with reservations"),
    ("unit cost", "total / units ([prices] unit: completed runs, finished jobs, GPU-hours)"),
    ("causes", "node-failure, oom, timeout, non-zero-exit (in failed); preemption, user-cancel (kept)"),
    ("WAIT GPU-H", "requested GPUs x time waited in the queue, inside the window"),
    ("budget", "[prices.budgets] per month; /day = the window's burn; out = when it is spent"),
    (
        "capacity since",
        "the usage ledger is younger than the window: every job of the window is counted (the scheduler's history), the GPUs no job held only since the ledger began, so the total is a lower bound (≥)",
    ),
];

/// Cost: the bill over a window, by team and by job.
pub struct View;

/// The Cost view's own state: its window, what its upper table lists, and its table that last
/// had focus (Tab among the tables its mode shows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostView {
    /// An index into [`crate::cost::WINDOWS`].
    pub window: usize,
    pub by: By,
    pub focus: usize,
}

impl Default for CostView {
    fn default() -> Self {
        CostView { window: 1, by: By::default(), focus: 0 }
    }
}

/// The Cost view's window and grouping as it holds them (its defaults for a state without it).
pub fn settings(own: &super::ViewStates) -> CostView {
    own.get::<CostView>(ID).copied().unwrap_or_default()
}

pub const ID: ViewId = ViewId("cost");

impl super::View for View {
    fn id(&self) -> ViewId {
        ID
    }

    fn title(&self) -> &'static str {
        "Cost"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["costs", "bill"]
    }

    fn tables(&self) -> &'static [&'static dyn TableSource] {
        &TABLES
    }

    fn state(&self) -> super::Own {
        Box::new(CostView::default())
    }

    fn draw(&self, f: &mut Frame, area: Rect, cx: &mut super::ViewCx<'_>) {
        let Some(cv) = cx.own.downcast_mut::<CostView>() else { return };
        let by = cv.by;
        let budget = budgets(cx.dx.cost, cx.dx.theme, area.width);
        // The legend under the bar when there is room for it (80×24 has; 60×20 has not).
        let legend = area.height >= 20;
        let head_h = 4 + u16::from(legend) + u16::from(budget.is_some());
        let [head, rest] = Layout::vertical([Constraint::Length(head_h), Constraint::Min(3)]).areas(area);
        let keys = format!(
            "  ({}/{} window, {} by)",
            cx.keymap.hint(Action::Local("window_shorter")).unwrap_or_default(),
            cx.keymap.hint(Action::Local("window_longer")).unwrap_or_default(),
            cx.keymap.hint(Action::Local("cost_by")).unwrap_or_default(),
        );
        let (_, wname) = crate::cost::WINDOWS[cv.window];
        let mut lines = summary(cx.dx.cost, cx.dx.theme, wname, &keys, cx.dx.s.now, area.width);
        let failed = matches!(cx.dx.cost.basis, crate::cost::Basis::Unavailable { .. }) && lines.len() < 3;
        if !failed {
            // The bar under the total, before the lines that may wrap on a narrow terminal.
            let at = lines.len().min(1);
            let mut bar = breakdown(cx.dx.cost, cx.dx.theme, area.width, legend);
            bar.extend(budget);
            lines.splice(at..at, bar);
        }
        // A ledger failure wraps onto the lines below the total: its fix must be readable.
        f.render_widget(Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false }), head);
        // Focus stays on a table the mode shows: Tab past the last shown one comes back round.
        let shows = shown(by);
        if !shows.contains(cx.focus) {
            *cx.focus = shows.iter().copied().find(|i| *i != cv.focus).unwrap_or(shows[0]);
        }
        cv.focus = *cx.focus;
        let focus = *cx.focus;
        let name = |i: usize| -> &'static str {
            match (i, by) {
                (0, By::User) => "By user",
                (0, By::Cluster) => "By cluster",
                (0, _) => "By team",
                (1, _) => "Jobs by cost",
                (2, _) => "Runs that did not complete, by cause",
                (3, _) => "Queue wait by team and queue",
                _ => "Teams",
            }
        };
        let ids = |i: usize| TABLES[i].id();
        match shows {
            [one] => table_with_detail(f, rest, cx, ids(*one), name(*one), true),
            [top_i, bottom_i, ..] => {
                if cx.detail && rest.width < 120 {
                    table_with_detail(f, rest, cx, ids(focus), name(focus), true);
                } else {
                    let [top, bottom] =
                        Layout::vertical([Constraint::Percentage(40), Constraint::Percentage(60)])
                            .areas(rest);
                    table_with_detail(f, top, cx, ids(*top_i), name(*top_i), focus == *top_i);
                    table_with_detail(f, bottom, cx, ids(*bottom_i), name(*bottom_i), focus == *bottom_i);
                }
            }
            [] => {}
        }
    }

    fn help(&self) -> &'static [(&'static str, &'static str)] {
        &HELP
    }

    fn keys(&self) -> &'static [ViewKey] {
        static KEYS: [ViewKey; 3] = [
            ViewKey {
                name: "window_longer",
                help: "cost: longer window",
                hint: Some("window"),
                anywhere: false,
                run: |k| {
                    if let Some(cv) = k.own.downcast_mut::<CostView>() {
                        cv.window = (cv.window + 1).min(crate::cost::WINDOWS.len() - 1)
                    }
                    super::Outcome::Done
                },
            },
            ViewKey {
                name: "window_shorter",
                help: "cost: shorter window",
                hint: None,
                anywhere: false,
                run: |k| {
                    if let Some(cv) = k.own.downcast_mut::<CostView>() {
                        cv.window = cv.window.saturating_sub(1)
                    }
                    super::Outcome::Done
                },
            },
            ViewKey {
                name: "cost_by",
                help: "cost: rows by team, user, cluster, job, cause (and queue wait)",
                hint: Some("by"),
                anywhere: false,
                run: |k| {
                    let Some(cv) = k.own.downcast_mut::<CostView>() else { return super::Outcome::Done };
                    cv.by = cv.by.next();
                    *k.focus = shown(cv.by)[0];
                    super::Outcome::Rebuild
                },
            },
        ];
        &KEYS
    }
}
