//! Cost: money and GPU-hours per team and per job over a window, useful vs idle.

use super::fmt::{money, opt, untrusted};
use super::jobs::{job_field, job_state_style, job_text};
use super::table::TableId;
use super::table::to_json;
use super::table::{Column, Cx, RowKey, SortKey, TableSource, col};
use super::tone::Cell;
use super::tone::Line;
use crate::cost::bill::{CauseShare, Dimension, Share, WaitShare};
use crate::cost::{By, JobCost, TeamCost};
use crate::model::{Epoch, JobKey, ObjKey};
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

/// The tables shown in a mode, as indexes into [`TABLES`].
pub fn shown(by: By) -> &'static [usize] {
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
            let t = cx.tones;
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
            let t = cx.tones;
            Cell::new(tc.jobs.to_string(), t.dim)
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
            let t = cx.tones;
            Cell::new(format!("{:.0}", tc.gpu_hours), t.text)
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
            let t = cx.tones;
            let cur = &cx.cost.currency;
            Cell::new(money(tc.cost, cur), t.accent)
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
            let t = cx.tones;
            Cell::new(opt(tc.useful_pct().map(|p| format!("{p:.0}%"))), t.text)
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
            let t = cx.tones;
            let cur = &cx.cost.currency;
            Cell::new(money(tc.idle_cost, cur), if tc.idle_cost > 0.0 { t.warn } else { t.dim })
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
            let t = cx.tones;
            Cell::new(
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
            let t = cx.tones;
            let cur = &cx.cost.currency;
            Cell::new(money(tc.failed_cost, cur), t.dim)
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

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
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
            let t = cx.tones;
            Cell::new(j.id.to_string(), t.dim)
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
            let t = cx.tones;
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
            let t = cx.tones;
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
            let t = cx.tones;
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
            Cell::new(j.state.short(), job_state_style(cx, j.state))
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
            let t = cx.tones;
            Cell::new(format!("{:.1}", k.gpu_hours), t.text)
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
            let t = cx.tones;
            let cur = &cx.cost.currency;
            Cell::new(money(k.cost, cur), t.accent)
        },
    )
    .num(|cx, k| Some(jc(cx, k).cost))
    .right(),
    col(
        "USEFUL",
        6,
        |cx, key| SortKey::Float(jc(cx, key).useful_pct().unwrap_or(-1.0)),
        |cx, key| {
            let t = cx.tones;
            Cell::new(opt(jc(cx, key).useful_pct().map(|p| format!("{p:.0}%"))), t.text)
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
            let t = cx.tones;
            let cur = &cx.cost.currency;
            Cell::new(money(k.idle_cost, cur), if k.idle_cost > 1.0 { t.warn } else { t.dim })
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

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
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
        |cx, key| untrusted(&share(cx, key).name, cx.tones.text),
    ),
    col(
        "JOBS",
        5,
        |cx, key| SortKey::Int(i64::from(share(cx, key).jobs)),
        |cx, key| Cell::new(share(cx, key).jobs.to_string(), cx.tones.dim),
    )
    .num(|cx, k| Some(f64::from(share(cx, k).jobs)))
    .right()
    .drop(3),
    col(
        "GPU-H",
        8,
        |cx, key| SortKey::Float(share(cx, key).gpu_hours),
        |cx, key| Cell::new(format!("{:.0}", share(cx, key).gpu_hours), cx.tones.text),
    )
    .num(|cx, k| Some(share(cx, k).gpu_hours))
    .right(),
    col(
        "TOTAL",
        10,
        |cx, key| SortKey::Float(share(cx, key).total),
        |cx, key| Cell::new(money(share(cx, key).total, &cx.cost.currency), cx.tones.accent),
    )
    .num(|cx, k| Some(share(cx, k).total))
    .right(),
    col(
        "USEFUL",
        6,
        |cx, key| SortKey::Float(share(cx, key).useful_pct().unwrap_or(-1.0)),
        |cx, key| Cell::new(opt(share(cx, key).useful_pct().map(|p| format!("{p:.0}%"))), cx.tones.text),
    )
    .num(|cx, k| share(cx, k).useful_pct())
    .right(),
    col(
        "IDLE $",
        9,
        |cx, key| SortKey::Float(share(cx, key).parts.allocated_idle),
        |cx, key| {
            let v = share(cx, key).parts.allocated_idle;
            Cell::new(money(v, &cx.cost.currency), if v > 0.0 { cx.tones.warn } else { cx.tones.dim })
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
            Cell::new(money(v, &cx.cost.currency), if v > 0.0 { cx.tones.crit } else { cx.tones.dim })
        },
    )
    .num(|cx, k| Some(share(cx, k).parts.failed))
    .right()
    .drop(2),
    col(
        "SHARED $",
        9,
        |cx, key| SortKey::Float(share(cx, key).parts.shared()),
        |cx, key| Cell::new(money(share(cx, key).parts.shared(), &cx.cost.currency), cx.tones.dim),
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
        let t = cx.tones;
        let cur = &cx.cost.currency;
        let mut v = vec![
            kv(cx, dim(cx).label(), untrusted(&sh.name, t.accent)),
            kv(cx, "jobs", Cell::new(format!("{} holding {:.1} GPU-h", sh.jobs, sh.gpu_hours), t.text)),
            kv(cx, "total", Cell::new(money(sh.total, cur), t.accent)),
        ];
        for (name, val) in sh.parts.named() {
            let pct = if sh.total > 0.0 { 100.0 * val / sh.total } else { 0.0 };
            v.push(kv(cx, name, Cell::new(format!("{} ({pct:.0}%)", money(val, cur)), t.text)));
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
                cx.tones.dim
            } else if c.failed {
                cx.tones.crit
            } else {
                cx.tones.warn
            };
            Cell::new(c.cause.label(), style)
        },
    ),
    col(
        "JOBS",
        5,
        |cx, key| SortKey::Int(i64::from(cause(cx, key).jobs)),
        |cx, key| Cell::new(cause(cx, key).jobs.to_string(), cx.tones.dim),
    )
    .num(|cx, k| Some(f64::from(cause(cx, k).jobs)))
    .right(),
    col(
        "GPU-H",
        8,
        |cx, key| SortKey::Float(cause(cx, key).gpu_hours),
        |cx, key| Cell::new(format!("{:.1}", cause(cx, key).gpu_hours), cx.tones.text),
    )
    .num(|cx, k| Some(cause(cx, k).gpu_hours))
    .right(),
    col(
        "COST",
        9,
        |cx, key| SortKey::Float(cause(cx, key).cost),
        |cx, key| Cell::new(money(cause(cx, key).cost, &cx.cost.currency), cx.tones.accent),
    )
    .num(|cx, k| Some(cause(cx, k).cost))
    .right(),
    col(
        "BILL",
        6,
        |cx, key| SortKey::Int(i64::from(cause(cx, key).failed)),
        |cx, key| Cell::new(if cause(cx, key).failed { "failed" } else { "kept" }, cx.tones.dim),
    )
    .drop(2),
    col(
        "TOP BURNER",
        18,
        |cx, key| SortKey::Float(cause(cx, key).cost),
        |cx, key| Cell::new(top_burner(cx, cause(cx, key)), cx.tones.text),
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
        let t = cx.tones;
        let cur = &cx.cost.currency;
        let mut v = vec![
            kv(cx, "cause", Cell::new(c.cause.label(), t.accent)),
            Line::styled(c.cause.definition(), t.dim),
            kv(
                cx,
                "runs",
                Cell::new(format!("{}, {:.1} GPU-h, {}", c.jobs, c.gpu_hours, money(c.cost, cur)), t.text),
            ),
            kv(
                cx,
                "in bill",
                Cell::new(if c.failed { "the failed part" } else { "useful/idle (not failed)" }, t.text),
            ),
        ];
        let burners: Vec<_> = cx.cost.bill.burners.iter().filter(|b| b.cause == c.cause).collect();
        if !burners.is_empty() {
            v.push(Line::styled("top burners:", t.dim));
        }
        for b in burners {
            v.push(Line::from(vec![
                Cell::new(format!("{} ", b.id), t.accent),
                untrusted(&b.name, t.text),
                Cell::new(format!(" {} {:.1} GPU-h {} ", b.user, b.gpu_hours, money(b.cost, cur)), t.dim),
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
        |cx, key| untrusted(&wait(cx, key).team, cx.tones.text),
    ),
    col(
        "QUEUE",
        12,
        |cx, key| SortKey::Str(&wait(cx, key).queue),
        |cx, key| untrusted(&wait(cx, key).queue, cx.tones.dim),
    ),
    col(
        "JOBS",
        5,
        |cx, key| SortKey::Int(i64::from(wait(cx, key).jobs)),
        |cx, key| Cell::new(wait(cx, key).jobs.to_string(), cx.tones.dim),
    )
    .num(|cx, k| Some(f64::from(wait(cx, k).jobs)))
    .right()
    .drop(1),
    col(
        "WAIT GPU-H",
        10,
        |cx, key| SortKey::Float(wait(cx, key).gpu_hours),
        |cx, key| Cell::new(format!("{:.1}", wait(cx, key).gpu_hours), cx.tones.warn),
    )
    .num(|cx, k| Some(wait(cx, k).gpu_hours))
    .right(),
    col(
        "LONGEST",
        8,
        |cx, key| SortKey::Int(wait(cx, key).longest_s),
        |cx, key| Cell::new(crate::clock::dur(wait(cx, key).longest_s), cx.tones.text),
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
        let t = cx.tones;
        vec![
            kv(cx, "team", untrusted(&w.team, t.accent)),
            kv(cx, "queue", untrusted(&w.queue, t.text)),
            kv(cx, "jobs", Cell::new(w.jobs.to_string(), t.text)),
            kv(cx, "waited", Cell::new(format!("{:.1} GPU-h (requested GPUs × wait)", w.gpu_hours), t.text)),
            kv(cx, "longest", Cell::new(crate::clock::dur(w.longest_s), t.text)),
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

/// A team's cost detail.
pub fn team_detail<'a>(cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<Line<'a>> {
    use super::detail::kv;
    let Some(tc) = cx.cost.teams.get(key as usize) else { return vec![] };
    let t = cx.tones;
    let cur = &cx.cost.currency;
    let share = if cx.cost.total > 0.0 { 100.0 * tc.cost / cx.cost.total } else { 0.0 };
    vec![
        kv(cx, "team", untrusted(&tc.team, t.accent)),
        kv(cx, "jobs", Cell::new(tc.jobs.to_string(), t.text)),
        kv(
            cx,
            "GPU-hours",
            Cell::new(format!("{:.1} ({:.1} useful)", tc.gpu_hours, tc.useful_gpu_hours), t.text),
        ),
        kv(cx, "cost", Cell::new(format!("{} ({share:.0}% of the window)", money(tc.cost, cur)), t.text)),
        kv(cx, "idle", Cell::new(money(tc.idle_cost, cur), t.warn)),
        kv(
            cx,
            "failed",
            Cell::new(format!("{:.1} GPU-h, {}", tc.failed_gpu_hours, money(tc.failed_cost, cur)), t.crit),
        ),
    ]
}

/// The detail of a job only the ledger holds (it has left the console's state).
fn recorded_detail<'a>(cx: &Cx<'a>, c: &'a JobCost) -> Vec<Line<'a>> {
    use super::detail::kv;
    let t = cx.tones;
    let j = &c.job;
    let cur = &cx.cost.currency;
    let time = |at: Option<Epoch>| at.map_or_else(|| "-".to_string(), crate::clock::stamp);
    vec![
        kv(cx, "job", Cell::new(format!("{} (from the ledger)", j.id), t.accent)),
        kv(cx, "name", untrusted(&j.name, t.text)),
        kv(cx, "user", untrusted(&j.user, t.text)),
        kv(cx, "team", untrusted(&j.account, t.text)),
        kv(cx, "state", Cell::new(j.state.label(), job_state_style(cx, j.state))),
        kv(cx, "ran", Cell::new(format!("{} → {}", time(j.start), time(j.end)), t.text)),
        kv(cx, "GPUs", Cell::new(format!("{} on {}", j.gpus, j.nodes.join(",")), t.text)),
        kv(cx, "in window", Cell::new(format!("{:.1} GPU-h, {}", c.gpu_hours, money(c.cost, cur)), t.text)),
        kv(cx, "useful", Cell::new(opt(c.useful_pct().map(|p| format!("{p:.0}% of its GPU-hours"))), t.text)),
        kv(
            cx,
            "utilisation",
            Cell::new(opt(j.useful_pct().map(|p| format!("{p:.0}% measured over its run"))), t.text),
        ),
        kv(cx, "exit", Cell::new(opt(j.exit_reason.as_deref()), t.dim)),
    ]
}
