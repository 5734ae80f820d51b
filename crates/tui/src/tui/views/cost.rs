//! Cost: money and GPU-hours per team and per job over a window, useful vs idle.

use super::super::widgets::table::to_json;
use super::super::widgets::table::{Column, Cx, RowKey, SortKey, TableSource, col};
use super::super::widgets::{money, opt, untrusted};
use super::jobs::{job_field, job_state_style, job_text};
use super::{TableId, ViewId, ViewKey};
use crate::cost::bill::{CauseShare, Dimension, Share, WaitShare};
use crate::cost::{By, CostReport, JobCost, TeamCost};
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
/// The bill's shares by team, user or cluster (the view's `by` key).
pub const BY: TableId = TableId("cost-by");
/// Runs that did not complete, by cause.
pub const CAUSES: TableId = TableId("cost-causes");
/// Queue wait by team and queue.
pub const WAITS: TableId = TableId("cost-waits");

/// The view's tables in Tab order (indexes into [`View::tables`]); which are shown depends on
/// the `by` mode.
const TABLES: [&dyn TableSource; 5] = [&ByTable, &CostJobsTable, &CausesTable, &WaitsTable, &TeamsTable];

/// The tables shown in a mode, as indexes into [`TABLES`].
fn shown(by: By) -> &'static [usize] {
    match by {
        By::Team | By::User | By::Cluster => &[0, 1],
        By::Job => &[1],
        By::Cause => &[2, 3],
    }
}

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
        |cx, key| SortKey::Float(jc(cx, key).useful_pct().unwrap_or(-1.0)),
        |cx, key| {
            let t = cx.theme;
            Span::styled(opt(jc(cx, key).useful_pct().map(|p| format!("{p:.0}%"))), t.text)
        },
    )
    .num(|cx, k| jc(cx, k).useful_pct())
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
               "useful_pct": c.useful_pct(), "currency": cx.cost.currency, "window_s": cx.cost.window_s})
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

pub struct ByTable;
pub struct CausesTable;
pub struct WaitsTable;

fn dim(cx: &Cx<'_>) -> Dimension {
    cx.cost.by.dimension().unwrap_or(Dimension::Team)
}

fn share<'a>(cx: &Cx<'a>, key: RowKey) -> &'a Share {
    &cx.cost.bill.shares(dim(cx))[key as usize]
}

static BYCOLS: [Column; 8] = [
    col(
        "NAME",
        14,
        |cx, key| SortKey::Str(&share(cx, key).name),
        |cx, key| untrusted(&share(cx, key).name, cx.theme.text),
    ),
    col(
        "JOBS",
        5,
        |cx, key| SortKey::Int(i64::from(share(cx, key).jobs)),
        |cx, key| Span::styled(share(cx, key).jobs.to_string(), cx.theme.dim),
    )
    .num(|cx, k| Some(f64::from(share(cx, k).jobs)))
    .right()
    .drop(3),
    col(
        "GPU-H",
        8,
        |cx, key| SortKey::Float(share(cx, key).gpu_hours),
        |cx, key| Span::styled(format!("{:.0}", share(cx, key).gpu_hours), cx.theme.text),
    )
    .num(|cx, k| Some(share(cx, k).gpu_hours))
    .right(),
    col(
        "TOTAL",
        10,
        |cx, key| SortKey::Float(share(cx, key).total),
        |cx, key| Span::styled(money(share(cx, key).total, &cx.cost.currency), cx.theme.accent),
    )
    .num(|cx, k| Some(share(cx, k).total))
    .right(),
    col(
        "USEFUL",
        6,
        |cx, key| SortKey::Float(share(cx, key).useful_pct().unwrap_or(-1.0)),
        |cx, key| Span::styled(opt(share(cx, key).useful_pct().map(|p| format!("{p:.0}%"))), cx.theme.text),
    )
    .num(|cx, k| share(cx, k).useful_pct())
    .right(),
    col(
        "IDLE $",
        9,
        |cx, key| SortKey::Float(share(cx, key).parts.allocated_idle),
        |cx, key| {
            let v = share(cx, key).parts.allocated_idle;
            Span::styled(money(v, &cx.cost.currency), if v > 0.0 { cx.theme.warn } else { cx.theme.dim })
        },
    )
    .num(|cx, k| Some(share(cx, k).parts.allocated_idle))
    .right()
    .drop(1),
    col(
        "FAILED $",
        9,
        |cx, key| SortKey::Float(share(cx, key).parts.failed),
        |cx, key| {
            let v = share(cx, key).parts.failed;
            Span::styled(money(v, &cx.cost.currency), if v > 0.0 { cx.theme.crit } else { cx.theme.dim })
        },
    )
    .num(|cx, k| Some(share(cx, k).parts.failed))
    .right()
    .drop(2),
    col(
        "SHARED $",
        9,
        |cx, key| SortKey::Float(share(cx, key).parts.shared()),
        |cx, key| Span::styled(money(share(cx, key).parts.shared(), &cx.cost.currency), cx.theme.dim),
    )
    .num(|cx, k| Some(share(cx, k).parts.shared()))
    .right()
    .drop(4),
];

impl TableSource for ByTable {
    fn id(&self) -> TableId {
        BY
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<Line<'a>> {
        use super::detail::kv;
        let Some(sh) = cx.cost.bill.shares(dim(cx)).get(key as usize) else { return vec![] };
        let t = cx.theme;
        let cur = &cx.cost.currency;
        let mut v = vec![
            kv(cx, dim(cx).label(), untrusted(&sh.name, t.accent)),
            kv(cx, "jobs", Span::styled(format!("{} holding {:.1} GPU-h", sh.jobs, sh.gpu_hours), t.text)),
            kv(cx, "total", Span::styled(money(sh.total, cur), t.accent)),
        ];
        for (name, val) in sh.parts.named() {
            let pct = if sh.total > 0.0 { 100.0 * val / sh.total } else { 0.0 };
            v.push(kv(cx, name, Span::styled(format!("{} ({pct:.0}%)", money(val, cur)), t.text)));
        }
        v.push(Line::styled("shared = unallocated + unhealthy + overhead, in proportion", t.dim));
        v.push(Line::styled("to what this row's jobs held (? in help defines each part)", t.dim));
        v
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        let sh = share(cx, key);
        let mut v = to_json(sh);
        if let Some(o) = v.as_object_mut() {
            o.insert("useful_pct".into(), serde_json::json!(sh.useful_pct()));
            o.insert("idle_cost".into(), serde_json::json!(sh.parts.allocated_idle));
            o.insert("failed_cost".into(), serde_json::json!(sh.parts.failed));
            o.insert("shared_cost".into(), serde_json::json!(sh.parts.shared()));
        }
        v
    }

    fn columns(&self) -> &'static [Column] {
        &BYCOLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.cost.bill.shares(dim(cx)).get(key as usize).map(|s| ObjKey::Team(s.name.as_str().into()))
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        out.extend(0..cx.cost.bill.shares(dim(cx)).len() as RowKey);
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        vec![share(cx, key).name.as_str().into()]
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        (name == "name").then(|| share(cx, key).name.as_str().into())
    }

    fn fields(&self) -> &'static [&'static str] {
        &["name"]
    }

    fn default_sort(&self) -> (usize, bool) {
        (3, true)
    }
}

fn cause<'a>(cx: &Cx<'a>, key: RowKey) -> &'a CauseShare {
    &cx.cost.bill.causes[key as usize]
}

/// The costliest run of a cause, as `#id name`.
fn top_burner(cx: &Cx<'_>, c: &CauseShare) -> String {
    cx.cost
        .bill
        .burners
        .iter()
        .find(|b| b.cause == c.cause)
        .map(|b| {
            let what = if b.detail.is_empty() { b.name.as_str() } else { b.detail.as_str() };
            format!("{} {}", b.id, crate::sanitize::sanitize(what))
        })
        .unwrap_or_default()
}

static CAUSECOLS: [Column; 6] = [
    col(
        "CAUSE",
        13,
        |cx, key| SortKey::Str(cause(cx, key).cause.label()),
        |cx, key| {
            let c = cause(cx, key);
            let style = if c.jobs == 0 {
                cx.theme.dim
            } else if c.failed {
                cx.theme.crit
            } else {
                cx.theme.warn
            };
            Span::styled(c.cause.label(), style)
        },
    ),
    col(
        "JOBS",
        5,
        |cx, key| SortKey::Int(i64::from(cause(cx, key).jobs)),
        |cx, key| Span::styled(cause(cx, key).jobs.to_string(), cx.theme.dim),
    )
    .num(|cx, k| Some(f64::from(cause(cx, k).jobs)))
    .right(),
    col(
        "GPU-H",
        8,
        |cx, key| SortKey::Float(cause(cx, key).gpu_hours),
        |cx, key| Span::styled(format!("{:.1}", cause(cx, key).gpu_hours), cx.theme.text),
    )
    .num(|cx, k| Some(cause(cx, k).gpu_hours))
    .right(),
    col(
        "COST",
        9,
        |cx, key| SortKey::Float(cause(cx, key).cost),
        |cx, key| Span::styled(money(cause(cx, key).cost, &cx.cost.currency), cx.theme.accent),
    )
    .num(|cx, k| Some(cause(cx, k).cost))
    .right(),
    col(
        "BILL",
        6,
        |cx, key| SortKey::Int(i64::from(cause(cx, key).failed)),
        |cx, key| Span::styled(if cause(cx, key).failed { "failed" } else { "kept" }, cx.theme.dim),
    )
    .drop(2),
    col(
        "TOP BURNER",
        18,
        |cx, key| SortKey::Float(cause(cx, key).cost),
        |cx, key| Span::styled(top_burner(cx, cause(cx, key)), cx.theme.text),
    )
    .grow(60)
    .drop(1),
];

impl TableSource for CausesTable {
    fn id(&self) -> TableId {
        CAUSES
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<Line<'a>> {
        use super::detail::kv;
        let Some(c) = cx.cost.bill.causes.get(key as usize) else { return vec![] };
        let t = cx.theme;
        let cur = &cx.cost.currency;
        let mut v = vec![
            kv(cx, "cause", Span::styled(c.cause.label(), t.accent)),
            Line::styled(c.cause.definition(), t.dim),
            kv(
                cx,
                "runs",
                Span::styled(format!("{}, {:.1} GPU-h, {}", c.jobs, c.gpu_hours, money(c.cost, cur)), t.text),
            ),
            kv(
                cx,
                "in bill",
                Span::styled(if c.failed { "the failed part" } else { "useful/idle (not failed)" }, t.text),
            ),
        ];
        let burners: Vec<_> = cx.cost.bill.burners.iter().filter(|b| b.cause == c.cause).collect();
        if !burners.is_empty() {
            v.push(Line::styled("top burners:", t.dim));
        }
        for b in burners {
            v.push(Line::from(vec![
                Span::styled(format!("{} ", b.id), t.accent),
                untrusted(&b.name, t.text),
                Span::styled(format!(" {} {:.1} GPU-h {} ", b.user, b.gpu_hours, money(b.cost, cur)), t.dim),
                untrusted(&b.detail, t.dim),
            ]));
        }
        v
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        to_json(cause(cx, key))
    }

    fn columns(&self) -> &'static [Column] {
        &CAUSECOLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.cost.bill.causes.get(key as usize).map(|c| ObjKey::Team(c.cause.label().into()))
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        out.extend(0..cx.cost.bill.causes.len() as RowKey);
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        vec![cause(cx, key).cause.label().into()]
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        (name == "cause").then(|| cause(cx, key).cause.label().into())
    }

    fn fields(&self) -> &'static [&'static str] {
        &["cause"]
    }

    fn default_sort(&self) -> (usize, bool) {
        (3, true)
    }
}

fn wait<'a>(cx: &Cx<'a>, key: RowKey) -> &'a WaitShare {
    &cx.cost.bill.waits[key as usize]
}

static WAITCOLS: [Column; 5] = [
    col(
        "TEAM",
        14,
        |cx, key| SortKey::Str(&wait(cx, key).team),
        |cx, key| untrusted(&wait(cx, key).team, cx.theme.text),
    ),
    col(
        "QUEUE",
        12,
        |cx, key| SortKey::Str(&wait(cx, key).queue),
        |cx, key| untrusted(&wait(cx, key).queue, cx.theme.dim),
    ),
    col(
        "JOBS",
        5,
        |cx, key| SortKey::Int(i64::from(wait(cx, key).jobs)),
        |cx, key| Span::styled(wait(cx, key).jobs.to_string(), cx.theme.dim),
    )
    .num(|cx, k| Some(f64::from(wait(cx, k).jobs)))
    .right()
    .drop(1),
    col(
        "WAIT GPU-H",
        10,
        |cx, key| SortKey::Float(wait(cx, key).gpu_hours),
        |cx, key| Span::styled(format!("{:.1}", wait(cx, key).gpu_hours), cx.theme.warn),
    )
    .num(|cx, k| Some(wait(cx, k).gpu_hours))
    .right(),
    col(
        "LONGEST",
        8,
        |cx, key| SortKey::Int(wait(cx, key).longest_s),
        |cx, key| Span::styled(crate::clock::dur(wait(cx, key).longest_s), cx.theme.text),
    )
    .num(|cx, k| Some(wait(cx, k).longest_s as f64))
    .right(),
];

impl TableSource for WaitsTable {
    fn id(&self) -> TableId {
        WAITS
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<Line<'a>> {
        use super::detail::kv;
        let Some(w) = cx.cost.bill.waits.get(key as usize) else { return vec![] };
        let t = cx.theme;
        vec![
            kv(cx, "team", untrusted(&w.team, t.accent)),
            kv(cx, "queue", untrusted(&w.queue, t.text)),
            kv(cx, "jobs", Span::styled(w.jobs.to_string(), t.text)),
            kv(
                cx,
                "waited",
                Span::styled(format!("{:.1} GPU-h (requested GPUs × wait)", w.gpu_hours), t.text),
            ),
            kv(cx, "longest", Span::styled(crate::clock::dur(w.longest_s), t.text)),
            Line::styled("only the part of each wait inside the window counts", t.dim),
        ]
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        to_json(wait(cx, key))
    }

    fn columns(&self) -> &'static [Column] {
        &WAITCOLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        let w = cx.cost.bill.waits.get(key as usize)?;
        Some(ObjKey::Queue(format!("{}/{}", w.team, w.queue).into()))
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        out.extend(0..cx.cost.bill.waits.len() as RowKey);
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let w = wait(cx, key);
        vec![w.team.as_str().into(), w.queue.as_str().into()]
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let w = wait(cx, key);
        match name {
            "team" => Some(w.team.as_str().into()),
            "queue" => Some(w.queue.as_str().into()),
            _ => None,
        }
    }

    fn fields(&self) -> &'static [&'static str] {
        &["team", "queue"]
    }

    fn default_sort(&self) -> (usize, bool) {
        (3, true)
    }
}

/// The letter each part of the bill is drawn with in the breakdown bar: the bar reads without
/// colour (monochrome themes, ASCII terminals), and help defines each letter.
pub const BAR_LETTERS: [char; 7] = ['U', 'i', '?', '-', 'x', 'F', 'o'];

/// Splits `width` cells among `values` in proportion (largest remainders), so the cells add up
/// to `width` exactly when any value is above zero.
pub fn proportional(values: &[f64], width: usize) -> Vec<usize> {
    let sum: f64 = values.iter().filter(|v| **v > 0.0).sum();
    if sum <= 0.0 || width == 0 {
        return vec![0; values.len()];
    }
    let exact: Vec<f64> = values.iter().map(|v| v.max(0.0) / sum * width as f64).collect();
    let mut cells: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
    let mut left = width.saturating_sub(cells.iter().sum());
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    for i in order {
        if left == 0 {
            break;
        }
        if values[i] > 0.0 {
            cells[i] += 1;
            left -= 1;
        }
    }
    cells
}

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
            Span::styled(opt(c.useful_pct().map(|p| format!("{p:.0}% of its GPU-hours"))), t.text),
        ),
        kv(
            cx,
            "utilisation",
            Span::styled(opt(j.useful_pct().map(|p| format!("{p:.0}% measured over its run"))), t.text),
        ),
        kv(cx, "exit", Span::styled(opt(j.exit_reason.as_deref()), t.dim)),
    ]
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

    fn draw(&self, f: &mut Frame, area: Rect, app: &mut App) {
        let by = app.ui.cost_by;
        let budget = budgets(&app.cost, &app.theme, area.width);
        // The legend under the bar when there is room for it (80×24 has; 60×20 has not).
        let legend = area.height >= 20;
        let head_h = 4 + u16::from(legend) + u16::from(budget.is_some());
        let [head, rest] = Layout::vertical([Constraint::Length(head_h), Constraint::Min(3)]).areas(area);
        let keys = format!(
            "  ({}/{} window, {} by)",
            app.keymap.hint(Action::Local("window_shorter")).unwrap_or_default(),
            app.keymap.hint(Action::Local("window_longer")).unwrap_or_default(),
            app.keymap.hint(Action::Local("cost_by")).unwrap_or_default(),
        );
        let (_, wname) = crate::cost::WINDOWS[app.ui.cost_window];
        let mut lines = summary(&app.cost, &app.theme, wname, &keys, app.state().now, area.width);
        let failed = matches!(app.cost.basis, crate::cost::Basis::Unavailable { .. }) && lines.len() < 3;
        if !failed {
            // The bar under the total, before the lines that may wrap on a narrow terminal.
            let at = lines.len().min(1);
            let mut bar = breakdown(&app.cost, &app.theme, area.width, legend);
            bar.extend(budget);
            lines.splice(at..at, bar);
        }
        // A ledger failure wraps onto the lines below the total: its fix must be readable.
        f.render_widget(Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false }), head);
        // Focus stays on a table the mode shows: Tab past the last shown one comes back round.
        let shows = shown(by);
        if !shows.contains(&app.ui.focus) {
            app.ui.focus = shows.iter().copied().find(|i| *i != app.ui.cost_focus).unwrap_or(shows[0]);
        }
        app.ui.cost_focus = app.ui.focus;
        let focus = app.ui.focus;
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
            [one] => table_with_detail(f, rest, app, ids(*one), name(*one), true),
            [top_i, bottom_i, ..] => {
                if app.ui.detail && rest.width < 120 {
                    table_with_detail(f, rest, app, ids(focus), name(focus), true);
                } else {
                    let [top, bottom] =
                        Layout::vertical([Constraint::Percentage(40), Constraint::Percentage(60)])
                            .areas(rest);
                    table_with_detail(f, top, app, ids(*top_i), name(*top_i), focus == *top_i);
                    table_with_detail(f, bottom, app, ids(*bottom_i), name(*bottom_i), focus == *bottom_i);
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
            ViewKey {
                name: "cost_by",
                help: "cost: rows by team, user, cluster, job, cause (and queue wait)",
                hint: Some("by"),
                anywhere: false,
                run: |app, _| {
                    app.ui.cost_by = app.ui.cost_by.next();
                    app.ui.focus = shown(app.ui.cost_by)[0];
                    app.cost.built_for = None;
                },
            },
        ];
        &KEYS
    }
}
