//! Cost: money and GPU-hours per team and per job over a window, useful vs idle.

use super::super::widgets::table::to_json;
use super::super::widgets::table::{Column, Cx, RowKey, SortKey, TableSource, col};
use super::super::widgets::{money, opt, untrusted};
use super::jobs::{job_field, job_state_style, job_text};
use super::{TableId, ViewId, ViewKey};
use crate::cost::{CostReport, JobCost, TeamCost};
use crate::model::{Epoch, JobKey, ObjKey};
use crate::tui::app::App;
use crate::tui::draw::table_with_detail;
use crate::tui::keymap::Action;
use crate::tui::theme::Theme;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::text::Span;
use ratatui::widgets::Paragraph;
use std::borrow::Cow;

pub struct TeamsTable;
pub struct CostJobsTable;

pub const TEAMS: TableId = TableId("cost-teams");
pub const JOBS: TableId = TableId("cost");

static TCOLS: [Column; 8] = [
    col(
        "TEAM",
        14,
        |cx, key| {
            let t = team(cx, key);
            SortKey::Str(&t.team)
        },
        |cx, key| {
            let tc = team(cx, key);
            let t = cx.theme;
            untrusted(&tc.team, t.text)
        },
    ),
    col(
        "JOBS",
        5,
        |cx, key| {
            let t = team(cx, key);
            SortKey::Int(i64::from(t.jobs))
        },
        |cx, key| {
            let tc = team(cx, key);
            let t = cx.theme;
            Span::styled(tc.jobs.to_string(), t.dim)
        },
    )
    .num(|cx, k| Some(f64::from(team(cx, k).jobs)))
    .right()
    .drop(3),
    col(
        "GPU-H",
        8,
        |cx, key| {
            let t = team(cx, key);
            SortKey::Float(t.gpu_hours)
        },
        |cx, key| {
            let tc = team(cx, key);
            let t = cx.theme;
            Span::styled(format!("{:.0}", tc.gpu_hours), t.text)
        },
    )
    .num(|cx, k| Some(team(cx, k).gpu_hours))
    .right(),
    col(
        "COST",
        10,
        |cx, key| {
            let t = team(cx, key);
            SortKey::Float(t.cost)
        },
        |cx, key| {
            let tc = team(cx, key);
            let t = cx.theme;
            let cur = &cx.cost.currency;
            Span::styled(money(tc.cost, cur), t.accent)
        },
    )
    .num(|cx, k| Some(team(cx, k).cost))
    .right(),
    col(
        "USEFUL",
        6,
        |cx, key| {
            let t = team(cx, key);
            SortKey::Float(t.useful_pct().unwrap_or(-1.0))
        },
        |cx, key| {
            let tc = team(cx, key);
            let t = cx.theme;
            Span::styled(opt(tc.useful_pct().map(|p| format!("{p:.0}%"))), t.text)
        },
    )
    .num(|cx, k| team(cx, k).useful_pct())
    .right(),
    col(
        "IDLE $",
        9,
        |cx, key| {
            let t = team(cx, key);
            SortKey::Float(t.idle_cost)
        },
        |cx, key| {
            let tc = team(cx, key);
            let t = cx.theme;
            let cur = &cx.cost.currency;
            Span::styled(money(tc.idle_cost, cur), if tc.idle_cost > 0.0 { t.warn } else { t.dim })
        },
    )
    .num(|cx, k| Some(team(cx, k).idle_cost))
    .right(),
    col(
        "FAILED-H",
        8,
        |cx, key| {
            let t = team(cx, key);
            SortKey::Float(t.failed_gpu_hours)
        },
        |cx, key| {
            let tc = team(cx, key);
            let t = cx.theme;
            Span::styled(
                format!("{:.0}", tc.failed_gpu_hours),
                if tc.failed_gpu_hours > 0.0 { t.crit } else { t.dim },
            )
        },
    )
    .num(|cx, k| Some(team(cx, k).failed_gpu_hours))
    .right()
    .drop(1),
    col(
        "FAILED $",
        9,
        |cx, key| {
            let t = team(cx, key);
            SortKey::Float(t.failed_cost)
        },
        |cx, key| {
            let tc = team(cx, key);
            let t = cx.theme;
            let cur = &cx.cost.currency;
            Span::styled(money(tc.failed_cost, cur), t.dim)
        },
    )
    .num(|cx, k| Some(team(cx, k).failed_cost))
    .right()
    .drop(2),
];

fn team<'a>(cx: &Cx<'a>, key: RowKey) -> &'a TeamCost {
    &cx.cost.teams[key as usize]
}

impl TableSource for TeamsTable {
    fn id(&self) -> TableId {
        TEAMS
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<ratatui::text::Line<'a>> {
        team_detail(cx, key, width)
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        to_json(&cx.cost.teams[key as usize])
    }

    fn columns(&self) -> &'static [Column] {
        &TCOLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.cost.teams.get(key as usize).map(|t| ObjKey::Team(t.team.clone()))
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        out.extend(0..cx.cost.teams.len() as RowKey);
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        vec![team(cx, key).team.as_str().into()]
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        (name == "team").then(|| team(cx, key).team.as_str().into())
    }

    fn fields(&self) -> &'static [&'static str] {
        &["team"]
    }

    fn default_sort(&self) -> (usize, bool) {
        (3, true)
    }
}

static JCOLS: [Column; 9] = [
    col(
        "ID",
        7,
        |cx, key| {
            let j = &jc(cx, key).job;
            SortKey::Int(j.id as i64)
        },
        |cx, key| {
            let j = &jc(cx, key).job;
            let t = cx.theme;
            Span::styled(j.id.to_string(), t.dim)
        },
    )
    .num(|cx, k| Some(jc(cx, k).id as f64))
    .right(),
    col(
        "NAME",
        16,
        |cx, key| {
            let j = &jc(cx, key).job;
            SortKey::Str(&j.name)
        },
        |cx, key| {
            let j = &jc(cx, key).job;
            let t = cx.theme;
            untrusted(&j.name, t.text)
        },
    ),
    col(
        "USER",
        9,
        |cx, key| {
            let j = &jc(cx, key).job;
            SortKey::Str(&j.user)
        },
        |cx, key| {
            let j = &jc(cx, key).job;
            let t = cx.theme;
            untrusted(&j.user, t.text)
        },
    )
    .drop(2),
    col(
        "TEAM",
        12,
        |cx, key| {
            let j = &jc(cx, key).job;
            SortKey::Str(&j.account)
        },
        |cx, key| {
            let j = &jc(cx, key).job;
            let t = cx.theme;
            untrusted(&j.account, t.dim)
        },
    )
    .drop(3),
    col(
        "ST",
        3,
        |cx, key| {
            let j = &jc(cx, key).job;
            SortKey::Int(j.state as i64)
        },
        |cx, key| {
            let j = &jc(cx, key).job;
            Span::styled(j.state.short(), job_state_style(cx, j.state))
        },
    )
    .key("state")
    .exact(),
    col(
        "GPU-H",
        7,
        |cx, key| {
            let k = jc(cx, key);
            SortKey::Float(k.gpu_hours)
        },
        |cx, key| {
            let k = jc(cx, key);
            let t = cx.theme;
            Span::styled(format!("{:.1}", k.gpu_hours), t.text)
        },
    )
    .num(|cx, k| Some(jc(cx, k).gpu_hours))
    .right(),
    col(
        "COST",
        9,
        |cx, key| {
            let k = jc(cx, key);
            SortKey::Float(k.cost)
        },
        |cx, key| {
            let k = jc(cx, key);
            let t = cx.theme;
            let cur = &cx.cost.currency;
            Span::styled(money(k.cost, cur), t.accent)
        },
    )
    .num(|cx, k| Some(jc(cx, k).cost))
    .right(),
    col(
        "USEFUL",
        6,
        |cx, key| {
            let j = &jc(cx, key).job;
            SortKey::Float(j.useful_pct().unwrap_or(-1.0))
        },
        |cx, key| {
            let j = &jc(cx, key).job;
            let t = cx.theme;
            Span::styled(opt(j.useful_pct().map(|p| format!("{p:.0}%"))), t.text)
        },
    )
    .num(|cx, k| jc(cx, k).job.useful_pct())
    .right(),
    col(
        "IDLE $",
        8,
        |cx, key| {
            let k = jc(cx, key);
            SortKey::Float(k.idle_cost)
        },
        |cx, key| {
            let k = jc(cx, key);
            let t = cx.theme;
            let cur = &cx.cost.currency;
            Span::styled(money(k.idle_cost, cur), if k.idle_cost > 1.0 { t.warn } else { t.dim })
        },
    )
    .num(|cx, k| Some(jc(cx, k).idle_cost))
    .right(),
];

fn jc<'a>(cx: &Cx<'a>, key: RowKey) -> &'a JobCost {
    &cx.cost.jobs[key as usize]
}

impl TableSource for CostJobsTable {
    fn id(&self) -> TableId {
        JOBS
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<ratatui::text::Line<'a>> {
        let Some(c) = cx.cost.jobs.get(key as usize) else { return vec![] };
        match cx.s.job_index(c.id).filter(|_| c.live) {
            Some(i) => super::jobs::detail(cx, i as RowKey, width),
            None => recorded_detail(cx, c),
        }
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        let c = &cx.cost.jobs[key as usize];
        let j = &c.job;
        serde_json::json!({"id": j.id, "name": j.name, "user": j.user, "account": j.account, "state": j.state,
               "gpus": j.gpus, "gpu_hours": c.gpu_hours, "cost": c.cost, "idle_cost": c.idle_cost,
               "useful_pct": j.useful_pct(), "currency": cx.cost.currency, "window_s": cx.cost.window_s})
    }

    fn columns(&self) -> &'static [Column] {
        &JCOLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        let c = cx.cost.jobs.get(key as usize)?;
        Some(ObjKey::Job(JobKey { cluster: cx.s.cluster.clone(), id: c.id }))
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        out.extend(0..cx.cost.jobs.len() as RowKey);
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        job_text(&jc(cx, key).job)
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        job_field(&jc(cx, key).job, name)
    }

    fn fields(&self) -> &'static [&'static str] {
        &[
            "id",
            "name",
            "user",
            "account",
            "team",
            "namespace",
            "queue",
            "partition",
            "state",
            "reason",
            "node",
            "nodes",
            "gpus",
        ]
    }

    fn default_sort(&self) -> (usize, bool) {
        (6, true)
    }
}

/// A team's cost detail.
pub fn team_detail<'a>(cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<ratatui::text::Line<'a>> {
    use super::detail::kv;
    let Some(tc) = cx.cost.teams.get(key as usize) else { return vec![] };
    let t = cx.theme;
    let cur = &cx.cost.currency;
    let share = if cx.cost.total > 0.0 { 100.0 * tc.cost / cx.cost.total } else { 0.0 };
    vec![
        kv(cx, "team", untrusted(&tc.team, t.accent)),
        kv(cx, "jobs", Span::styled(tc.jobs.to_string(), t.text)),
        kv(
            cx,
            "GPU-hours",
            Span::styled(format!("{:.1} ({:.1} useful)", tc.gpu_hours, tc.useful_gpu_hours), t.text),
        ),
        kv(cx, "cost", Span::styled(format!("{} ({share:.0}% of the window)", money(tc.cost, cur)), t.text)),
        kv(cx, "idle", Span::styled(money(tc.idle_cost, cur), t.warn)),
        kv(
            cx,
            "failed",
            Span::styled(format!("{:.1} GPU-h, {}", tc.failed_gpu_hours, money(tc.failed_cost, cur)), t.crit),
        ),
    ]
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
    let mut first = vec![
        Span::styled(format!(" {wname} "), t.title),
        Span::styled(m(c.total), t.accent),
        Span::styled(if wide { " total = jobs " } else { " = jobs " }, t.dim),
        Span::styled(m(c.allocated), t.text),
        Span::styled(if wide { " (idle on them " } else { " (idle " }, t.dim),
        Span::styled(m(c.idle_total), t.warn),
        Span::styled(if wide { ") + GPUs no job held " } else { ") + no job " }, t.dim),
    ];
    match &c.basis {
        Basis::Ledger { .. } => first.push(Span::styled(m(c.unused.total().cost), t.warn)),
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
                format!(" · data since {when} ({} of the window)", crate::clock::dur(now - since))
            } else {
                format!(" · since {when}")
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
                    "  ([prices] in the config; USEFUL = mean GPU util over GPU-hours)",
                    t.dim,
                ));
            }
            l
        }
    };
    vec![Line::from(first), Line::from(second), Line::from(third)]
}

/// The detail of a job only the ledger holds (it has left the console's state).
fn recorded_detail<'a>(cx: &Cx<'a>, c: &'a JobCost) -> Vec<Line<'a>> {
    use super::detail::kv;
    let t = cx.theme;
    let j = &c.job;
    let cur = &cx.cost.currency;
    let time = |at: Option<Epoch>| at.map_or_else(|| "-".to_string(), crate::clock::stamp);
    vec![
        kv(cx, "job", Span::styled(format!("{} (from the ledger)", j.id), t.accent)),
        kv(cx, "name", untrusted(&j.name, t.text)),
        kv(cx, "user", untrusted(&j.user, t.text)),
        kv(cx, "team", untrusted(&j.account, t.text)),
        kv(cx, "state", Span::styled(j.state.label(), job_state_style(cx, j.state))),
        kv(cx, "ran", Span::styled(format!("{} → {}", time(j.start), time(j.end)), t.text)),
        kv(cx, "GPUs", Span::styled(format!("{} on {}", j.gpus, j.nodes.join(",")), t.text)),
        kv(
            cx,
            "in window",
            Span::styled(format!("{:.1} GPU-h, {}", c.gpu_hours, money(c.cost, cur)), t.text),
        ),
        kv(
            cx,
            "useful",
            Span::styled(opt(j.useful_pct().map(|p| format!("{p:.0}% of its GPU-hours"))), t.text),
        ),
        kv(cx, "exit", Span::styled(opt(j.exit_reason.as_deref()), t.dim)),
    ]
}

/// Cost: the bill over a window, by team and by job.
pub struct View;

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
        &[&TeamsTable, &CostJobsTable]
    }

    fn draw(&self, f: &mut Frame, area: Rect, app: &mut App) {
        let [head, rest] = Layout::vertical([Constraint::Length(3), Constraint::Min(3)]).areas(area);
        let keys = format!(
            "  ({}/{} window)",
            app.keymap.hint(Action::Local("window_shorter")).unwrap_or_default(),
            app.keymap.hint(Action::Local("window_longer")).unwrap_or_default()
        );
        let (_, wname) = crate::cost::WINDOWS[app.ui.cost_window];
        let lines = summary(&app.cost, &app.theme, wname, &keys, app.state().now, area.width);
        // A ledger failure wraps onto the lines below the total: its fix must be readable.
        f.render_widget(Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false }), head);
        let [top, bottom] =
            Layout::vertical([Constraint::Percentage(40), Constraint::Percentage(60)]).areas(rest);
        let focus = app.ui.focus;
        if app.ui.detail && rest.width < 120 {
            let (id, name) = if focus == 0 { (TEAMS, "Teams") } else { (JOBS, "Jobs by cost") };
            table_with_detail(f, rest, app, id, name, true);
        } else {
            table_with_detail(f, top, app, TEAMS, "Teams", focus == 0);
            table_with_detail(f, bottom, app, JOBS, "Jobs by cost", focus == 1);
        }
    }

    fn keys(&self) -> &'static [ViewKey] {
        static KEYS: [ViewKey; 2] = [
            ViewKey {
                name: "window_longer",
                help: "cost: longer window",
                hint: Some("window"),
                anywhere: false,
                run: |app, _| {
                    app.ui.cost_window = (app.ui.cost_window + 1).min(crate::cost::WINDOWS.len() - 1)
                },
            },
            ViewKey {
                name: "window_shorter",
                help: "cost: shorter window",
                hint: None,
                anywhere: false,
                run: |app, _| app.ui.cost_window = app.ui.cost_window.saturating_sub(1),
            },
        ];
        &KEYS
    }
}
