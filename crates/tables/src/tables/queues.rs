//! Queues: Slurm partitions and Kueue queues with pending/running counts and wait times, and
//! "my jobs": where each of the current user's jobs stands and why it waits.

use super::fmt::{dur, opt, safe, untrusted};
use super::jobs::{
    est_cell, est_sort, job_field, job_json, job_state_style, job_text, pending_in_queue, wait_s,
};
use super::table::TableId;
use super::table::{Column, Cx, RowKey, SortKey, TableSource, cluster_cell, col, to_json};
use super::tone::{Cell, Line};
use crate::model::ObjKey;
use crate::model::{JobState, Queue};
use crate::state::{ClusterState, QueueStats};
use std::borrow::Cow;

pub struct QueuesTable;
pub struct MyJobsTable;

pub const QUEUES: TableId = TableId("queues");
pub const MY_JOBS: TableId = TableId("my-jobs");

static QCOLS: [Column; 11] = [
    col(
        "QUEUE",
        10,
        |cx, key| {
            let (q, _) = queue(cx.s, key);
            SortKey::Str(&q.name)
        },
        |cx, key| {
            let (q, _) = queue(cx.s, key);
            let t = cx.tones;
            untrusted(&q.name, t.text)
        },
    ),
    col(
        "KIND",
        9,
        |cx, key| {
            let (q, _) = queue(cx.s, key);
            SortKey::Int(q.kind as i64)
        },
        |cx, key| {
            let (q, _) = queue(cx.s, key);
            let t = cx.tones;
            Cell::new(q.kind.label(), t.dim)
        },
    )
    .drop(3),
    col(
        "UP",
        4,
        |cx, key| {
            let (q, _) = queue(cx.s, key);
            SortKey::Int(i64::from(q.up))
        },
        |cx, key| {
            let (q, _) = queue(cx.s, key);
            let t = cx.tones;
            Cell::new(if q.up { "up" } else { "DOWN" }, if q.up { t.ok } else { t.crit })
        },
    )
    .drop(4),
    col(
        "PEND",
        5,
        |cx, key| {
            let (_, st) = queue(cx.s, key);
            let n = |f: fn(&QueueStats) -> i64| SortKey::Int(st.map_or(-1, f));
            n(|x| i64::from(x.pending))
        },
        |cx, key| {
            let (_, st) = queue(cx.s, key);
            let t = cx.tones;
            let st = st.cloned().unwrap_or_default();
            Cell::new(st.pending.to_string(), if st.pending > 0 { t.warn } else { t.dim })
        },
    )
    .right(),
    col(
        "RUN",
        5,
        |cx, key| {
            let (_, st) = queue(cx.s, key);
            let n = |f: fn(&QueueStats) -> i64| SortKey::Int(st.map_or(-1, f));
            n(|x| i64::from(x.running))
        },
        |cx, key| {
            let (_, st) = queue(cx.s, key);
            let t = cx.tones;
            let st = st.cloned().unwrap_or_default();
            Cell::new(st.running.to_string(), t.ok)
        },
    )
    .right(),
    col(
        "PGPU",
        5,
        |cx, key| {
            let (_, st) = queue(cx.s, key);
            let n = |f: fn(&QueueStats) -> i64| SortKey::Int(st.map_or(-1, f));
            n(|x| i64::from(x.pending_gpus))
        },
        |cx, key| {
            let (_, st) = queue(cx.s, key);
            let t = cx.tones;
            let st = st.cloned().unwrap_or_default();
            Cell::new(st.pending_gpus.to_string(), t.dim)
        },
    )
    .right()
    .drop(1),
    col(
        "RGPU",
        5,
        |cx, key| {
            let (_, st) = queue(cx.s, key);
            let n = |f: fn(&QueueStats) -> i64| SortKey::Int(st.map_or(-1, f));
            n(|x| i64::from(x.running_gpus))
        },
        |cx, key| {
            let (_, st) = queue(cx.s, key);
            let t = cx.tones;
            let st = st.cloned().unwrap_or_default();
            Cell::new(st.running_gpus.to_string(), t.dim)
        },
    )
    .right()
    .drop(1),
    col(
        "WAIT50",
        6,
        |cx, key| {
            let (_, st) = queue(cx.s, key);
            let n = |f: fn(&QueueStats) -> i64| SortKey::Int(st.map_or(-1, f));
            n(|x| x.wait_p50_s.unwrap_or(-1))
        },
        |cx, key| {
            let (_, st) = queue(cx.s, key);
            let t = cx.tones;
            let d = |v: Option<i64>| v.map_or("-".into(), dur);
            let st = st.cloned().unwrap_or_default();
            Cell::new(d(st.wait_p50_s), t.text)
        },
    )
    .right(),
    col(
        "WAIT90",
        6,
        |cx, key| {
            let (_, st) = queue(cx.s, key);
            let n = |f: fn(&QueueStats) -> i64| SortKey::Int(st.map_or(-1, f));
            n(|x| x.wait_p90_s.unwrap_or(-1))
        },
        |cx, key| {
            let (_, st) = queue(cx.s, key);
            let t = cx.tones;
            let d = |v: Option<i64>| v.map_or("-".into(), dur);
            let st = st.cloned().unwrap_or_default();
            Cell::new(d(st.wait_p90_s), t.text)
        },
    )
    .right()
    .drop(2),
    col(
        "OLDEST",
        6,
        |cx, key| {
            let (_, st) = queue(cx.s, key);
            SortKey::Int(st.and_then(|x| x.oldest_submit).map_or(-1, |t| cx.s.now - t))
        },
        |cx, key| {
            let (_, st) = queue(cx.s, key);
            let t = cx.tones;
            let d = |v: Option<i64>| v.map_or("-".into(), dur);
            let st = st.cloned().unwrap_or_default();
            Cell::new(d(st.oldest_submit.map(|t| cx.s.now - t)), t.text)
        },
    )
    .right(),
    col(
        "CLUSTER",
        8,
        |cx, k| SortKey::Str(cx.s.cluster_of(&queue(cx.s, k).0.cluster)),
        |cx, k| cluster_cell(cx, &queue(cx.s, k).0.cluster),
    )
    .drop(9)
    .fleet(),
];

fn queue(s: &ClusterState, key: RowKey) -> (&Queue, Option<&QueueStats>) {
    let q = &s.queues[key as usize];
    let st = s.queue_stats.binary_search_by(|x| x.name.cmp(&q.name)).ok().map(|i| &s.queue_stats[i]);
    (q, st)
}

impl TableSource for QueuesTable {
    fn id(&self) -> TableId {
        QUEUES
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
        detail(cx, key, width)
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        let q = &cx.s.queues[key as usize];
        let stats = cx.s.queue_stats.iter().find(|x| x.name == q.name);
        // One flat object per queue: its definition, then its statistics (of the same name).
        let mut v = to_json(q);
        if let (Some(o), Some(serde_json::Value::Object(st))) = (v.as_object_mut(), stats.map(to_json)) {
            for (k, x) in st {
                o.entry(k).or_insert(x);
            }
        }
        v
    }

    fn columns(&self) -> &'static [Column] {
        &QCOLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.s.queues.get(key as usize).map(|q| ObjKey::Queue(q.name.clone()))
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        out.extend(0..cx.s.queues.len() as RowKey);
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let (q, _) = queue(cx.s, key);
        vec![q.name.as_str().into(), q.kind.label().into()]
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let (q, _) = queue(cx.s, key);
        Some(match name {
            "cluster" => cx.s.cluster_of(&q.cluster).as_str().into(),
            "name" | "queue" => q.name.as_str().into(),
            "kind" => q.kind.label().into(),
            _ => return None,
        })
    }

    fn fields(&self) -> &'static [&'static str] {
        &["cluster", "name", "queue", "kind"]
    }
}

static MCOLS: [Column; 10] = [
    col(
        "ID",
        7,
        |cx, key| {
            let s = cx.s;
            let j = &s.jobs[key as usize];
            SortKey::Int(j.id as i64)
        },
        |cx, key| {
            let s = cx.s;
            let j = &s.jobs[key as usize];
            let t = cx.tones;
            Cell::new(j.id.to_string(), t.dim)
        },
    )
    .drop(5)
    .right(),
    col(
        "NAME",
        14,
        |cx, key| {
            let s = cx.s;
            let j = &s.jobs[key as usize];
            SortKey::Str(&j.name)
        },
        |cx, key| {
            let s = cx.s;
            let j = &s.jobs[key as usize];
            let t = cx.tones;
            untrusted(&j.name, t.text)
        },
    ),
    col(
        "QUEUE",
        7,
        |cx, key| {
            let s = cx.s;
            let j = &s.jobs[key as usize];
            SortKey::Str(&j.queue)
        },
        |cx, key| {
            let s = cx.s;
            let j = &s.jobs[key as usize];
            let t = cx.tones;
            untrusted(&j.queue, t.text)
        },
    )
    .drop(4),
    col(
        "ST",
        3,
        |cx, key| {
            let s = cx.s;
            let j = &s.jobs[key as usize];
            SortKey::Int(j.state as i64)
        },
        |cx, key| {
            let s = cx.s;
            let j = &s.jobs[key as usize];
            Cell::new(j.state.short(), job_state_style(cx, j.state))
        },
    )
    .drop(3)
    .key("state")
    .exact(),
    col(
        "GPUS",
        4,
        |cx, key| {
            let s = cx.s;
            let j = &s.jobs[key as usize];
            SortKey::Int(i64::from(j.gpus))
        },
        |cx, key| {
            let s = cx.s;
            let j = &s.jobs[key as usize];
            let t = cx.tones;
            Cell::new(j.gpus.to_string(), t.text)
        },
    )
    .right()
    .drop(2),
    col(
        "POS",
        9,
        |cx, key| {
            let s = cx.s;
            let j = &s.jobs[key as usize];
            SortKey::Int(my_order(j))
        },
        |cx, key| {
            let s = cx.s;
            let j = &s.jobs[key as usize];
            let t = cx.tones;
            let pending = j.state == JobState::Pending;
            Cell::new(
                if pending {
                    format!("{}/{}", opt(j.rank), pending_in_queue(s, &j.queue))
                } else {
                    "-".into()
                },
                t.warn,
            )
        },
    )
    .right(),
    col(
        "EST START",
        21,
        |cx, key| {
            let j = &cx.s.jobs[key as usize];
            SortKey::Int(est_sort(j))
        },
        |cx, key| {
            let j = &cx.s.jobs[key as usize];
            let t = cx.tones;
            Cell::new(est_cell(j, cx.s.now), if j.est_start.is_some() { t.text } else { t.dim })
        },
    )
    .whole()
    .grow(28),
    col(
        "WAIT",
        6,
        |cx, key| {
            let j = &cx.s.jobs[key as usize];
            SortKey::Int(wait_s(j, cx.s.now))
        },
        |cx, key| {
            let j = &cx.s.jobs[key as usize];
            let t = cx.tones;
            Cell::new(dur(wait_s(j, cx.s.now)), t.text)
        },
    )
    .right()
    .drop(2),
    col(
        "RUN",
        6,
        |cx, key| {
            let j = &cx.s.jobs[key as usize];
            SortKey::Int(j.elapsed(cx.s.now).unwrap_or(-1))
        },
        |cx, key| {
            let j = &cx.s.jobs[key as usize];
            let t = cx.tones;
            Cell::new(j.elapsed(cx.s.now).map_or("-".into(), dur), t.text)
        },
    )
    .right()
    .drop(2),
    col(
        "WHY",
        20,
        |cx, key| {
            let s = cx.s;
            let j = &s.jobs[key as usize];
            SortKey::Str(j.pending_reason.as_deref().unwrap_or(""))
        },
        |cx, key| {
            let s = cx.s;
            let j = &s.jobs[key as usize];
            let t = cx.tones;
            match crate::state::explain(s, j, cx.user) {
                Some(w) => Cell::new(w.cause().to_string(), t.warn),
                None => Cell::raw(""),
            }
        },
    ),
];

impl TableSource for MyJobsTable {
    fn id(&self) -> TableId {
        MY_JOBS
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
        super::jobs::detail(cx, key, width)
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        job_json(cx, &cx.s.jobs[key as usize])
    }

    fn columns(&self) -> &'static [Column] {
        &MCOLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.s.job_key(key as usize).map(ObjKey::Job)
    }

    fn locate(&self, cx: &Cx<'_>, id: &ObjKey) -> Option<RowKey> {
        let ObjKey::Job(j) = id else { return None };
        cx.s.job_at(j).map(|i| i as RowKey)
    }

    /// The console user's active jobs on every cluster: theirs by each cluster's name for
    /// the same person (`[cluster.people]`).
    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        let me = cx.s.person(cx.user);
        out.extend(
            cx.s.jobs
                .iter()
                .enumerate()
                .filter(|(_, j)| j.state.is_active() && cx.s.is_persons(j, me))
                .map(|(i, _)| i as RowKey),
        );
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let s = cx.s;
        job_text(&s.jobs[key as usize])
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let s = cx.s;
        job_field(&s.jobs[key as usize], name)
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

    /// By position: pending jobs first, next to start first; then the running ones.
    fn default_sort(&self) -> (usize, bool) {
        (MY_POS, false)
    }
}

/// The POS column of My jobs.
const MY_POS: usize = 5;

/// My jobs' order: pending ones by position (ties by estimate, then id), running ones after.
fn my_order(j: &crate::model::Job) -> i64 {
    match j.rank {
        Some(r) if j.state == JobState::Pending => i64::from(r),
        _ => i64::from(u32::MAX) + 1,
    }
}

/// A queue's detail: its figures and the head of its pending line, in order.
pub fn detail<'a>(cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<Line<'a>> {
    use super::detail::{kv, section};
    let s = cx.s;
    let Some(q) = s.queues.get(key as usize) else { return vec![] };
    let (_, st) = queue(s, key);
    let st = st.cloned().unwrap_or_default();
    let t = cx.tones;
    let mut out = vec![
        kv(cx, "queue", untrusted(&q.name, t.accent)),
        kv(cx, "kind", Cell::new(q.kind.label(), t.text)),
        kv(cx, "capacity", Cell::new(capacity(s, q), t.text)),
        kv(cx, "max time", Cell::new(q.max_time_s.map_or("unlimited".into(), dur), t.text)),
        kv(
            cx,
            "jobs",
            Cell::new(
                format!(
                    "{} running ({} GPUs), {} pending ({} GPUs)",
                    st.running, st.running_gpus, st.pending, st.pending_gpus
                ),
                t.text,
            ),
        ),
        kv(
            cx,
            "wait",
            Cell::new(
                format!(
                    "p50 {}  p90 {}",
                    st.wait_p50_s.map_or("-".into(), dur),
                    st.wait_p90_s.map_or("-".into(), dur)
                ),
                t.text,
            ),
        ),
    ];
    let mut pending: Vec<_> =
        s.jobs.iter().filter(|j| j.queue == q.name && j.state == JobState::Pending).collect();
    pending.sort_by_key(|j| j.rank.unwrap_or(u32::MAX));
    out.push(section(cx, "pending, in order"));
    for j in pending.iter().take(30) {
        let style = if j.user == cx.user { t.accent } else { t.text };
        out.push(Line::from(vec![
            Cell::new(format!("{:>4}. {:>7} ", opt(j.rank), j.id), t.dim),
            Cell::new(format!("{:<10} ", safe(&j.user)), style),
            Cell::new(format!("{:>3} GPUs ", j.gpus), t.dim),
            Cell::new(safe(j.pending_reason.as_deref().unwrap_or("")).into_owned(), t.warn),
        ]));
    }
    out
}

/// `12 nodes, 96 GPUs; 3 out of service: gpu-004 down, gpu-009 drained, gpu-014 maint`.
fn capacity(s: &ClusterState, q: &Queue) -> String {
    let (out, _) = crate::state::why::queue_out_of_service_in(s, Some(&q.cluster), &q.name);
    let mut text = format!("{} nodes, {} GPUs", q.nodes, q.gpus);
    if !out.is_empty() {
        let names: Vec<String> = out
            .iter()
            .take(5)
            .map(|n| format!("{} {}", safe(&n.name), n.state.label()))
            .chain((out.len() > 5).then(|| format!("+{} more", out.len() - 5)))
            .collect();
        text.push_str(&format!("; {} out of service: {}", out.len(), names.join(", ")));
    }
    text
}
