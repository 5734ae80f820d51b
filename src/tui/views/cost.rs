//! Cost: money and GPU-hours per team and per job over a window, useful vs idle.

use super::super::widgets::table::to_json;
use super::super::widgets::table::{Column, Cx, RowKey, SortKey, TableSource, col};
use super::super::widgets::{money, opt, untrusted};
use super::jobs::{job_field, job_state_style, job_text};
use super::{TableId, ViewId, ViewKey};
use crate::cost::{JobCost, TeamCost};
use crate::model::{JobKey, ObjKey};
use crate::tui::app::App;
use crate::tui::draw::table_with_detail;
use crate::tui::keymap::Action;
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
            let k = jc(cx, key);
            let j = &cx.s.jobs[k.index];
            SortKey::Int(j.id as i64)
        },
        |cx, key| {
            let k = jc(cx, key);
            let j = &cx.s.jobs[k.index];
            let t = cx.theme;
            Span::styled(j.id.to_string(), t.dim)
        },
    )
    .right(),
    col(
        "NAME",
        16,
        |cx, key| {
            let k = jc(cx, key);
            let j = &cx.s.jobs[k.index];
            SortKey::Str(&j.name)
        },
        |cx, key| {
            let k = jc(cx, key);
            let j = &cx.s.jobs[k.index];
            let t = cx.theme;
            untrusted(&j.name, t.text)
        },
    ),
    col(
        "USER",
        9,
        |cx, key| {
            let k = jc(cx, key);
            let j = &cx.s.jobs[k.index];
            SortKey::Str(&j.user)
        },
        |cx, key| {
            let k = jc(cx, key);
            let j = &cx.s.jobs[k.index];
            let t = cx.theme;
            untrusted(&j.user, t.text)
        },
    )
    .drop(2),
    col(
        "TEAM",
        12,
        |cx, key| {
            let k = jc(cx, key);
            let j = &cx.s.jobs[k.index];
            SortKey::Str(&j.account)
        },
        |cx, key| {
            let k = jc(cx, key);
            let j = &cx.s.jobs[k.index];
            let t = cx.theme;
            untrusted(&j.account, t.dim)
        },
    )
    .drop(3),
    col(
        "ST",
        3,
        |cx, key| {
            let k = jc(cx, key);
            let j = &cx.s.jobs[k.index];
            SortKey::Int(j.state as i64)
        },
        |cx, key| {
            let k = jc(cx, key);
            let j = &cx.s.jobs[k.index];
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
    .right(),
    col(
        "USEFUL",
        6,
        |cx, key| {
            let k = jc(cx, key);
            let j = &cx.s.jobs[k.index];
            SortKey::Float(j.useful_pct().unwrap_or(-1.0))
        },
        |cx, key| {
            let k = jc(cx, key);
            let j = &cx.s.jobs[k.index];
            let t = cx.theme;
            Span::styled(opt(j.useful_pct().map(|p| format!("{p:.0}%"))), t.text)
        },
    )
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
        match cx.cost.jobs.get(key as usize) {
            Some(c) => super::jobs::detail(cx, c.index as RowKey, width),
            None => vec![],
        }
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        let c = &cx.cost.jobs[key as usize];
        let j = &cx.s.jobs[c.index];
        serde_json::json!({"id": j.id, "name": j.name, "user": j.user, "account": j.account, "state": j.state,
               "gpu_hours": c.gpu_hours, "cost": c.cost, "idle_cost": c.idle_cost,
               "currency": cx.cost.currency, "window_s": cx.cost.window_s})
    }

    fn columns(&self) -> &'static [Column] {
        &JCOLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        let c = cx.cost.jobs.get(key as usize)?;
        Some(ObjKey::Job(JobKey { cluster: cx.s.cluster.clone(), id: c.id }))
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        out.extend(
            cx.cost
                .jobs
                .iter()
                .enumerate()
                .filter(|(_, c)| c.index < cx.s.jobs.len())
                .map(|(i, _)| i as RowKey),
        );
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        job_text(&cx.s.jobs[jc(cx, key).index])
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        job_field(&cx.s.jobs[jc(cx, key).index], name)
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
        let [head, rest] = Layout::vertical([Constraint::Length(1), Constraint::Min(3)]).areas(area);
        let t = &app.theme;
        let (_, wname) = crate::cost::WINDOWS[app.ui.cost_window];
        let c = &app.cost;
        let keys = format!(
            "  ({}/{} change window)",
            app.keymap.hint(Action::Local("window_shorter")).unwrap_or_default(),
            app.keymap.hint(Action::Local("window_longer")).unwrap_or_default()
        );
        let line = Line::from(vec![
            Span::styled(format!(" window {wname}: "), t.title),
            Span::styled(money(c.total, &c.currency), t.accent),
            Span::styled(" total, ", t.dim),
            Span::styled(money(c.idle_total, &c.currency), t.warn),
            Span::styled(" on idle GPUs", t.dim),
            Span::styled(keys, t.dim),
        ]);
        f.render_widget(Paragraph::new(line), head);
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
