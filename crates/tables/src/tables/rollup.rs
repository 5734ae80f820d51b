//! Teams and people across the fleet (the Quotas view's lower tables): one row per team or
//! person with its quota, use and active jobs summed over the clusters; the detail pane
//! expands the row per cluster (and lists a person's jobs, each with its position in its own
//! cluster's queue).

use super::detail::{kv, section};
use super::fmt::{opt, safe, untrusted};
use super::table::TableId;
use super::table::{Column, Cx, RowKey, SortKey, TableSource, col};
use super::tone::{Cell, Line};
use crate::model::{JobState, ObjKey};
use crate::state::{Part, Rollup};
use std::borrow::Cow;

pub const TEAMS: TableId = TableId("teams");
pub const PEOPLE: TableId = TableId("people");

pub struct TeamsTable;
pub struct PeopleTable;

fn team<'a>(cx: &Cx<'a>, k: RowKey) -> &'a Rollup {
    &cx.s.team_rollup[k as usize]
}

fn person<'a>(cx: &Cx<'a>, k: RowKey) -> &'a Rollup {
    &cx.s.people_rollup[k as usize]
}

/// `prod-a,prod-b`: the clusters a row has a part in.
fn clusters(cx: &Cx<'_>, r: &Rollup) -> String {
    let names: Vec<&str> = r.clusters.iter().map(|p| cx.s.cluster_of(&p.cluster).as_str()).collect();
    safe(&names.join(",")).into_owned()
}

macro_rules! num_col {
    ($name:expr, $w:expr, $row:ident, $f:ident) => {
        col(
            $name,
            $w,
            |cx, k| SortKey::Int(i64::from($row(cx, k).total.$f)),
            |cx, k| Cell::new($row(cx, k).total.$f.to_string(), cx.tones.text),
        )
        .right()
    };
}

static TEAM_COLS: [Column; 8] = [
    col(
        "TEAM",
        12,
        |cx, k| SortKey::Str(&team(cx, k).name),
        |cx, k| untrusted(&team(cx, k).name, cx.tones.text),
    ),
    num_col!("QUOTA", 5, team, gpu_quota),
    col(
        "USED",
        5,
        |cx, k| SortKey::Int(i64::from(team(cx, k).total.gpu_used)),
        |cx, k| {
            let p = &team(cx, k).total;
            let over = p.gpu_quota > 0 && p.gpu_used > p.gpu_quota;
            Cell::new(p.gpu_used.to_string(), if over { cx.tones.crit } else { cx.tones.text })
        },
    )
    .right(),
    num_col!("RUN", 4, team, running),
    num_col!("RGPU", 5, team, running_gpus).drop(2),
    num_col!("PEND", 4, team, pending),
    num_col!("PGPU", 5, team, pending_gpus).drop(1),
    col(
        "CLUSTERS",
        10,
        |cx, k| SortKey::Int(team(cx, k).clusters.len() as i64),
        |cx, k| Cell::new(clusters(cx, team(cx, k)), cx.tones.dim),
    )
    .grow(40),
];

static PEOPLE_COLS: [Column; 6] = [
    col(
        "PERSON",
        12,
        |cx, k| SortKey::Str(&person(cx, k).name),
        |cx, k| {
            let p = person(cx, k);
            let me = p.name == cx.s.person(cx.user);
            untrusted(&p.name, if me { cx.tones.accent } else { cx.tones.text })
        },
    ),
    num_col!("RUN", 4, person, running),
    num_col!("RGPU", 5, person, running_gpus).drop(2),
    num_col!("PEND", 4, person, pending),
    num_col!("PGPU", 5, person, pending_gpus).drop(1),
    col(
        "CLUSTERS",
        10,
        |cx, k| SortKey::Int(person(cx, k).clusters.len() as i64),
        |cx, k| Cell::new(clusters(cx, person(cx, k)), cx.tones.dim),
    )
    .grow(40),
];

/// One cluster's part as a detail line.
fn part_line<'a>(cx: &Cx<'a>, p: &Part, quota: bool) -> Line<'a> {
    let t = cx.tones;
    let mut text = format!(
        "  {:<10} run {} ({} GPUs)  pend {} ({} GPUs)",
        safe(cx.s.cluster_of(&p.cluster)),
        p.running,
        p.running_gpus,
        p.pending,
        p.pending_gpus
    );
    if quota {
        text = format!("{text}  quota {} used {}", p.gpu_quota, p.gpu_used);
    }
    Line::styled(text, t.text)
}

fn json(r: &Rollup, cx: &Cx<'_>) -> serde_json::Value {
    let mut v = super::table::to_json(r);
    if let Some(parts) = v.get_mut("clusters").and_then(|c| c.as_array_mut()) {
        for (p, part) in parts.iter_mut().zip(&r.clusters) {
            p["cluster"] = cx.s.cluster_of(&part.cluster).as_str().into();
        }
    }
    v
}

impl TableSource for TeamsTable {
    fn id(&self) -> TableId {
        TEAMS
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<Line<'a>> {
        let Some(r) = cx.s.team_rollup.get(key as usize) else { return vec![] };
        let mut out = vec![kv(cx, "team", untrusted(&r.name, cx.tones.accent)), section(cx, "per cluster")];
        out.extend(r.clusters.iter().map(|p| part_line(cx, p, true)));
        out
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        json(team(cx, key), cx)
    }

    fn columns(&self) -> &'static [Column] {
        &TEAM_COLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.s.team_rollup.get(key as usize).map(|r| ObjKey::Team(r.name.clone()))
    }

    fn locate(&self, cx: &Cx<'_>, id: &ObjKey) -> Option<RowKey> {
        let ObjKey::Team(t) = id else { return None };
        cx.s.team_rollup.iter().position(|r| r.name == *t).map(|i| i as RowKey)
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        out.extend(0..cx.s.team_rollup.len() as RowKey);
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        vec![team(cx, key).name.as_str().into()]
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let r = team(cx, key);
        match name {
            "team" => Some(r.name.as_str().into()),
            "clusters" => Some(clusters(cx, r).into()),
            _ => None,
        }
    }

    fn fields(&self) -> &'static [&'static str] {
        &["team", "clusters"]
    }
}

impl TableSource for PeopleTable {
    fn id(&self) -> TableId {
        PEOPLE
    }

    /// Per cluster, then the person's active jobs on every cluster, each with its position in
    /// its own cluster's queue.
    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<Line<'a>> {
        let s = cx.s;
        let t = cx.tones;
        let Some(r) = s.people_rollup.get(key as usize) else { return vec![] };
        let mut out = vec![kv(cx, "person", untrusted(&r.name, t.accent)), section(cx, "per cluster")];
        out.extend(r.clusters.iter().map(|p| part_line(cx, p, false)));
        let mut jobs: Vec<_> =
            s.jobs.iter().filter(|j| j.state.is_active() && s.is_persons(j, &r.name)).collect();
        jobs.sort_by_key(|j| (j.state != JobState::Pending, j.rank.unwrap_or(u32::MAX), j.id));
        out.push(section(cx, "active jobs (position in each cluster's own queue)"));
        for j in jobs.iter().take(30) {
            out.push(Line::from(vec![
                Cell::new(
                    format!(
                        "  {:<10} {:>7} {:<2} pos {:>4} {:<8} {:>3} GPUs ",
                        safe(s.cluster_of(&j.cluster)),
                        j.id,
                        j.state.short(),
                        opt(j.rank.filter(|_| j.state == JobState::Pending)),
                        safe(&j.queue),
                        j.gpus
                    ),
                    t.dim,
                ),
                untrusted(&j.name, t.text),
            ]));
        }
        out
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        json(person(cx, key), cx)
    }

    fn columns(&self) -> &'static [Column] {
        &PEOPLE_COLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.s.people_rollup.get(key as usize).map(|r| ObjKey::Person(r.name.clone()))
    }

    fn locate(&self, cx: &Cx<'_>, id: &ObjKey) -> Option<RowKey> {
        let ObjKey::Person(p) = id else { return None };
        cx.s.people_rollup.iter().position(|r| r.name == *p).map(|i| i as RowKey)
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        out.extend(0..cx.s.people_rollup.len() as RowKey);
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        vec![person(cx, key).name.as_str().into()]
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let r = person(cx, key);
        match name {
            "person" | "user" => Some(r.name.as_str().into()),
            "clusters" => Some(clusters(cx, r).into()),
            _ => None,
        }
    }

    fn fields(&self) -> &'static [&'static str] {
        &["person", "user", "clusters"]
    }
}
