//! Cost: money and GPU-hours per team and per job over a window, useful vs idle.

use super::super::widgets::table::to_json;
use super::super::widgets::table::{Column, Cx, RowKey, SortKey, TableSource, col};
use super::super::widgets::{money, opt, untrusted};
use super::jobs::{job_field, job_state_style, job_text};
use super::{TableId, ViewId};
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
    col("TEAM", 14),
    col("JOBS", 5).right().drop(3),
    col("GPU-H", 8).right(),
    col("COST", 10).right(),
    col("USEFUL", 6).right(),
    col("IDLE $", 9).right(),
    col("FAILED-H", 8).right().drop(1),
    col("FAILED $", 9).right().drop(2),
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

    fn sort_key<'a>(&self, cx: &Cx<'a>, key: RowKey, c: usize) -> SortKey<'a> {
        let t = team(cx, key);
        match c {
            0 => SortKey::Str(&t.team),
            1 => SortKey::Int(i64::from(t.jobs)),
            2 => SortKey::Float(t.gpu_hours),
            3 => SortKey::Float(t.cost),
            4 => SortKey::Float(t.useful_pct().unwrap_or(-1.0)),
            5 => SortKey::Float(t.idle_cost),
            6 => SortKey::Float(t.failed_gpu_hours),
            _ => SortKey::Float(t.failed_cost),
        }
    }

    fn cells<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Span<'a>> {
        let tc = team(cx, key);
        let t = cx.theme;
        let cur = &cx.cost.currency;
        vec![
            untrusted(&tc.team, t.text),
            Span::styled(tc.jobs.to_string(), t.dim),
            Span::styled(format!("{:.0}", tc.gpu_hours), t.text),
            Span::styled(money(tc.cost, cur), t.accent),
            Span::styled(opt(tc.useful_pct().map(|p| format!("{p:.0}%"))), t.text),
            Span::styled(money(tc.idle_cost, cur), if tc.idle_cost > 0.0 { t.warn } else { t.dim }),
            Span::styled(
                format!("{:.0}", tc.failed_gpu_hours),
                if tc.failed_gpu_hours > 0.0 { t.crit } else { t.dim },
            ),
            Span::styled(money(tc.failed_cost, cur), t.dim),
        ]
    }

    fn default_sort(&self) -> (usize, bool) {
        (3, true)
    }
}

static JCOLS: [Column; 9] = [
    col("ID", 7).right(),
    col("NAME", 16),
    col("USER", 9).drop(2),
    col("TEAM", 12).drop(3),
    col("ST", 3),
    col("GPU-H", 7).right(),
    col("COST", 9).right(),
    col("USEFUL", 6).right(),
    col("IDLE $", 8).right(),
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

    fn sort_key<'a>(&self, cx: &Cx<'a>, key: RowKey, c: usize) -> SortKey<'a> {
        let k = jc(cx, key);
        let j = &cx.s.jobs[k.index];
        match c {
            0 => SortKey::Int(j.id as i64),
            1 => SortKey::Str(&j.name),
            2 => SortKey::Str(&j.user),
            3 => SortKey::Str(&j.account),
            4 => SortKey::Int(j.state as i64),
            5 => SortKey::Float(k.gpu_hours),
            6 => SortKey::Float(k.cost),
            7 => SortKey::Float(j.useful_pct().unwrap_or(-1.0)),
            _ => SortKey::Float(k.idle_cost),
        }
    }

    fn cells<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Span<'a>> {
        let k = jc(cx, key);
        let j = &cx.s.jobs[k.index];
        let t = cx.theme;
        let cur = &cx.cost.currency;
        vec![
            Span::styled(j.id.to_string(), t.dim),
            untrusted(&j.name, t.text),
            untrusted(&j.user, t.text),
            untrusted(&j.account, t.dim),
            Span::styled(j.state.short(), job_state_style(cx, j.state)),
            Span::styled(format!("{:.1}", k.gpu_hours), t.text),
            Span::styled(money(k.cost, cur), t.accent),
            Span::styled(opt(j.useful_pct().map(|p| format!("{p:.0}%"))), t.text),
            Span::styled(money(k.idle_cost, cur), if k.idle_cost > 1.0 { t.warn } else { t.dim }),
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
            app.keymap.hint(Action::WindowShorter).unwrap_or_default(),
            app.keymap.hint(Action::WindowLonger).unwrap_or_default()
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

    fn hints(&self) -> &'static [(Action, &'static str)] {
        &[(Action::WindowLonger, "window")]
    }
}
