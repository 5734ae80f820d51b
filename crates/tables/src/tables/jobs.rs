//! Jobs: every job with its state, queue position and pending reason.

use super::detail::{kv, section, spark_line};
use super::fmt::{clock_rel, dur, money, opt, safe, stamp, stamp_rel, untrusted};
use super::table::TableId;
use super::table::to_json;
use super::table::{Column, Cx, RowKey, SortKey, TableSource, cluster_cell, col, contains_ci};
use super::tone::{Cell, Line, Tone};
use crate::model::ObjKey;
use crate::model::{Epoch, Job, JobState, gpu_hours_cost, pending_reason_text};
use crate::state::ClusterState;
use std::borrow::Cow;

pub struct JobsTable;

pub const TABLE: TableId = TableId("jobs");

static COLS: [Column; 16] = [
    col(
        "ID",
        7,
        |cx, key| {
            let j = job(cx.s, key);
            SortKey::Int(j.id as i64)
        },
        |cx, key| {
            let j = job(cx.s, key);
            let t = cx.tones;
            Cell::new(j.id.to_string(), t.dim)
        },
    )
    .right(),
    col(
        "NAME",
        16,
        |cx, key| {
            let j = job(cx.s, key);
            SortKey::Str(&j.name)
        },
        |cx, key| {
            let j = job(cx.s, key);
            let t = cx.tones;
            let mine = j.user == cx.user;
            let name_style = if mine { t.accent } else { t.text };
            untrusted(&j.name, name_style)
        },
    ),
    col(
        "USER",
        10,
        |cx, key| {
            let j = job(cx.s, key);
            SortKey::Str(&j.user)
        },
        |cx, key| {
            let j = job(cx.s, key);
            let t = cx.tones;
            let mine = j.user == cx.user;
            let name_style = if mine { t.accent } else { t.text };
            untrusted(&j.user, name_style)
        },
    ),
    col(
        "ACCOUNT",
        12,
        |cx, key| {
            let j = job(cx.s, key);
            SortKey::Str(&j.account)
        },
        |cx, key| {
            let j = job(cx.s, key);
            let t = cx.tones;
            untrusted(&j.account, t.dim)
        },
    )
    .drop(3),
    col(
        "QUEUE",
        7,
        |cx, key| {
            let j = job(cx.s, key);
            SortKey::Str(&j.queue)
        },
        |cx, key| {
            let j = job(cx.s, key);
            let t = cx.tones;
            untrusted(&j.queue, t.text)
        },
    ),
    col(
        "ST",
        3,
        |cx, key| {
            let j = job(cx.s, key);
            SortKey::Int(j.state as i64)
        },
        |cx, key| {
            let j = job(cx.s, key);
            Cell::new(j.state.short(), job_state_style(cx, j.state))
        },
    )
    .key("state")
    .exact(),
    col(
        "GPUS",
        4,
        |cx, key| {
            let j = job(cx.s, key);
            SortKey::Int(i64::from(j.gpus))
        },
        |cx, key| {
            let j = job(cx.s, key);
            let t = cx.tones;
            Cell::new(j.gpus.to_string(), t.text)
        },
    )
    .right(),
    col(
        "NODES",
        12,
        |cx, key| {
            let j = job(cx.s, key);
            SortKey::Str(j.nodes.first().map_or("", |n| n.as_str()))
        },
        |cx, key| {
            let j = job(cx.s, key);
            let t = cx.tones;
            Cell::new(nodes_summary(j), t.dim)
        },
    )
    .drop(4),
    col(
        "WAIT",
        6,
        |cx, key| {
            let j = job(cx.s, key);
            SortKey::Int(wait_s(j, cx.s.now))
        },
        |cx, key| {
            let j = job(cx.s, key);
            let t = cx.tones;
            Cell::new(dur(wait_s(j, cx.s.now)), if j.state == JobState::Pending { t.warn } else { t.dim })
        },
    )
    .right()
    .drop(1),
    col(
        "RUN",
        6,
        |cx, key| {
            let j = job(cx.s, key);
            SortKey::Int(j.elapsed(cx.s.now).unwrap_or(-1))
        },
        |cx, key| {
            let j = job(cx.s, key);
            let t = cx.tones;
            Cell::new(j.elapsed(cx.s.now).map_or("-".into(), dur), t.text)
        },
    )
    .right()
    .drop(1),
    col(
        "EFF",
        4,
        |cx, key| SortKey::Float(eff(job(cx.s, key)).unwrap_or(-1.0)),
        |cx, key| {
            let t = cx.tones;
            match eff(job(cx.s, key)) {
                Some(p) => Cell::new(format!("{p:.0}%"), eff_style(cx, p)),
                None => Cell::new("-", t.dim),
            }
        },
    )
    .right()
    .key("eff")
    .num(|cx, k| eff(job(cx.s, k)))
    .drop(2),
    col(
        "POS",
        4,
        |cx, key| {
            let j = job(cx.s, key);
            SortKey::Int(j.rank.map_or(i64::MAX, i64::from))
        },
        |cx, key| {
            let j = job(cx.s, key);
            let t = cx.tones;
            Cell::new(opt(j.rank), t.warn)
        },
    )
    .right(),
    col(
        "EST START",
        21,
        |cx, key| {
            let j = job(cx.s, key);
            SortKey::Int(est_sort(j))
        },
        |cx, key| {
            let j = job(cx.s, key);
            let t = cx.tones;
            Cell::new(est_cell(j, cx.s.now), if j.est_start.is_some() { t.text } else { t.dim })
        },
    )
    .whole()
    .grow(28)
    .drop(1),
    col(
        "PRIO",
        6,
        |cx, key| {
            let j = job(cx.s, key);
            SortKey::Int(i64::from(j.priority))
        },
        |cx, key| {
            let j = job(cx.s, key);
            let t = cx.tones;
            Cell::new(j.priority.to_string(), t.dim)
        },
    )
    .right()
    .drop(2),
    col(
        "REASON",
        8,
        |cx, key| {
            let j = job(cx.s, key);
            SortKey::Str(j.pending_reason.as_deref().unwrap_or(""))
        },
        |cx, key| {
            let j = job(cx.s, key);
            let t = cx.tones;
            match (&j.pending_reason, &j.exit_reason) {
                (Some(r), _) if j.state == JobState::Pending => untrusted(r, t.warn),
                (_, Some(e)) if !j.state.is_active() => {
                    untrusted(e, if j.state.is_failure() { t.crit } else { t.dim })
                }
                _ => Cell::raw(""),
            }
        },
    ),
    col(
        "CLUSTER",
        8,
        |cx, k| SortKey::Str(cx.s.cluster_of(&job(cx.s, k).cluster)),
        |cx, k| cluster_cell(cx, &job(cx.s, k).cluster),
    )
    .drop(9)
    .fleet(),
];

pub fn job_state_style(cx: &Cx<'_>, st: JobState) -> Tone {
    match st {
        JobState::Running | JobState::Completing => cx.tones.ok,
        JobState::Pending => cx.tones.warn,
        JobState::Completed => cx.tones.dim,
        s if s.is_failure() => cx.tones.crit,
        _ => cx.tones.text,
    }
}

/// Queue wait: until the start, so far while pending, and until the end for a job that
/// ended without starting.
pub fn wait_s(j: &Job, now: i64) -> i64 {
    let until = match (j.start, j.end) {
        (Some(st), _) => st,
        (None, Some(end)) => end,
        (None, None) => now,
    };
    (until - j.submit).max(0)
}

/// The EST START cell: the scheduler's estimate for a pending job (`18:21 UTC (in 47m00s)`),
/// `no estimate` when it gives none (the detail says why), `-` for a job that does not pend.
pub fn est_cell(j: &Job, now: i64) -> String {
    match (j.state, j.est_start) {
        (JobState::Pending, Some(e)) => clock_rel(now, e),
        (JobState::Pending, None) => "no estimate".into(),
        _ => "-".into(),
    }
}

/// Pending jobs by estimate (soonest first), then pending jobs without one, then the rest.
pub fn est_sort(j: &Job) -> i64 {
    match (j.state, j.est_start) {
        (JobState::Pending, Some(e)) => e,
        (JobState::Pending, None) => i64::MAX - 1,
        _ => i64::MAX,
    }
}

pub fn nodes_summary(j: &Job) -> String {
    match j.nodes.as_slice() {
        [] => "-".into(),
        [one] => safe(one).into_owned(),
        [first, rest @ ..] => format!("{}+{}", safe(first), rest.len()),
    }
}

/// EFF: the job's GPU utilisation weighted by GPU-hours, from the telemetry the state
/// accumulated while it ran (live for a running job; for a finished one what accounting or the
/// console measured, the figure the usage ledger keeps at its end). `None` for a job that has
/// not run on GPUs or whose GPUs reported no utilisation.
pub fn eff(j: &Job) -> Option<f64> {
    (j.start.is_some() && j.gpus > 0).then(|| j.useful_pct()).flatten()
}

/// Red under the `[efficiency]` red threshold (`util_red`), a warning under the warning's.
pub fn eff_style(cx: &Cx<'_>, pct: f64) -> Tone {
    let r = cx.rules;
    if pct < r.util_red {
        cx.tones.crit
    } else if pct < r.util_warn {
        cx.tones.warn
    } else {
        cx.tones.text
    }
}

fn job(s: &ClusterState, key: RowKey) -> &Job {
    &s.jobs[key as usize]
}

pub fn job_field<'a>(j: &'a Job, name: &str) -> Option<Cow<'a, str>> {
    Some(match name {
        "id" => j.id.to_string().into(),
        "name" => j.name.as_str().into(),
        "user" => j.user.as_str().into(),
        "account" | "team" | "namespace" => j.account.as_str().into(),
        "queue" | "partition" => j.queue.as_str().into(),
        "state" => j.state.label().into(),
        "reason" => j.pending_reason.as_deref()?.into(),
        "node" | "nodes" => j.nodes.join(",").into(),
        "gpus" => j.gpus.to_string().into(),
        "eff" => eff(j).map(|p| format!("{p:.0}"))?.into(),
        _ => return None,
    })
}

pub fn job_text(j: &Job) -> Vec<Cow<'_, str>> {
    let mut v: Vec<Cow<'_, str>> = vec![
        j.name.as_str().into(),
        j.user.as_str().into(),
        j.account.as_str().into(),
        j.queue.as_str().into(),
        j.id.to_string().into(),
    ];
    v.extend(j.nodes.iter().map(|n| Cow::Borrowed(n.as_str())));
    v
}

impl TableSource for JobsTable {
    fn id(&self) -> TableId {
        TABLE
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
        detail(cx, key, width)
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        job_json(cx, &cx.s.jobs[key as usize])
    }

    fn columns(&self) -> &'static [Column] {
        &COLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.s.job_key(key as usize).map(ObjKey::Job)
    }

    fn locate(&self, cx: &Cx<'_>, id: &ObjKey) -> Option<RowKey> {
        let ObjKey::Job(j) = id else { return None };
        cx.s.job_at(j).map(|i| i as RowKey)
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        let s = cx.s;
        out.extend(0..s.jobs.len() as RowKey);
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let s = cx.s;
        job_text(job(s, key))
    }

    fn text_matches(&self, cx: &Cx<'_>, key: RowKey, needle: &str) -> bool {
        let j = job(cx.s, key);
        // The job's whole node list too: NODES shows only the first (`gpu-001+2`).
        [&j.name, &j.user, &j.account, &j.queue].iter().any(|h| contains_ci(h, needle))
            || j.nodes.iter().any(|n| contains_ci(n, needle))
            || j.pending_reason.as_deref().is_some_and(|r| contains_ci(r, needle))
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let s = cx.s;
        let j = job(s, key);
        if name == "cluster" {
            return Some(s.cluster_of(&j.cluster).as_str().into());
        }
        job_field(j, name)
    }

    fn fields(&self) -> &'static [&'static str] {
        &[
            "cluster",
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
            "eff",
        ]
    }

    fn marked(&self, cx: &Cx<'_>, key: RowKey) -> bool {
        cx.marked.job(cx, job(cx.s, key))
    }

    fn default_sort(&self) -> (usize, bool) {
        (0, true)
    }
}

/// A job as JSON: the model's fields (times as epoch seconds, UTC), its wait and run time, and
/// for a pending job why it waits (`why`: causes, why there is no estimate, what could help).
pub fn job_json(cx: &Cx<'_>, j: &Job) -> serde_json::Value {
    let mut v = to_json(j);
    if let Some(o) = v.as_object_mut() {
        o.insert("wait_s".into(), wait_s(j, cx.s.now).into());
        o.insert("run_s".into(), j.elapsed(cx.s.now).into());
        // The console's POS: the final queue position (the backend's, else derived).
        o.remove("rank");
        o.insert("position".into(), j.rank.into());
        o.insert("eff_pct".into(), eff(j).into());
        if let Some(w) = crate::state::explain(cx.s, j, cx.user) {
            o.insert("why".into(), to_json(&w));
        }
    }
    v
}

/// How many pending jobs compete in `queue`.
pub fn pending_in_queue(s: &ClusterState, queue: &str) -> u32 {
    s.queue_stats.iter().find(|q| q.name == queue).map_or(0, |q| q.pending)
}

pub fn detail<'a>(cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
    let s = cx.s;
    let Some(j) = s.jobs.get(key as usize) else { return vec![] };
    let t = cx.tones;
    let mut out = vec![
        kv(cx, "job", Cell::new(format!("{} ", j.id), t.accent)),
        kv(cx, "name", untrusted(&j.name, t.text)),
        kv(cx, "user", Cell::new(format!("{} ({})", safe(&j.user), safe(&j.account)), t.text)),
        kv(cx, "queue", untrusted(&j.queue, t.text)),
        kv(cx, "state", Cell::new(j.state.label(), job_state_style(cx, j.state))),
    ];
    if j.state == JobState::Pending {
        let total = pending_in_queue(s, &j.queue);
        out.push(kv(
            cx,
            "position",
            Cell::new(format!("{} of {} pending in {}", opt(j.rank), total, safe(&j.queue)), t.warn),
        ));
        let wait = crate::state::explain(s, j, cx.user).unwrap_or_default();
        for (i, c) in wait.causes.iter().enumerate() {
            out.push(kv(cx, if i == 0 { "why" } else { "also" }, Cell::new(c.clone(), t.warn)));
        }
        if let Some(r) = &j.pending_reason {
            out.push(kv(
                cx,
                "reason",
                Cell::new(format!("{} (scheduler): {}", safe(r), pending_reason_text(r)), t.dim),
            ));
        }
        let est = match (j.est_start, &wait.no_estimate) {
            (Some(e), _) => clock_rel(s.now, e),
            (None, Some(why)) => why.clone(),
            (None, None) => "no estimate".into(),
        };
        out.push(kv(cx, "est start", Cell::new(est, t.text)));
        for h in &wait.hints {
            out.push(kv(cx, "could help", Cell::new(h.clone(), t.info)));
        }
        out.push(kv(cx, "waiting", Cell::new(dur(wait_s(j, s.now)), t.text)));
    }
    out.push(kv(cx, "priority", Cell::new(j.priority.to_string(), t.text)));
    out.push(kv(cx, "submitted", Cell::new(stamp_rel(s.now, j.submit), t.text)));
    if let Some(st) = j.start {
        out.push(kv(
            cx,
            "started",
            Cell::new(format!("{} (waited {})", stamp(st), dur(st - j.submit)), t.text),
        ));
        out.push(kv(cx, "running", Cell::new(dur(j.elapsed(s.now).unwrap_or(0)), t.text)));
    }
    if let Some(e) = j.end {
        out.push(kv(cx, "ended", Cell::new(stamp_rel(s.now, e), t.text)));
    }
    out.push(kv(
        cx,
        "gpus",
        Cell::new(format!("{} {}", j.gpus, safe(j.gpu_model.as_deref().unwrap_or(""))), t.text),
    ));
    out.push(kv(
        cx,
        "nodes",
        Cell::new(j.nodes.iter().map(|n| safe(n).into_owned()).collect::<Vec<_>>().join(","), t.text),
    ));
    if let Some(e) = j.exit_reason.as_ref().filter(|_| !j.state.is_active()) {
        out.push(kv(cx, "exit", untrusted(e, if j.state.is_failure() { t.crit } else { t.text })));
    }
    if j.retries > 0 {
        out.push(kv(cx, "retries", Cell::new(j.retries.to_string(), t.warn)));
    }
    // What it held (its GPUs × its run), by part as the Cost view counts it: idle at the
    // utilisation measured (none: not claimed), all of it failed when the run failed.
    let held = j.held_gpu_seconds(Epoch::MIN, Epoch::MAX, s.now);
    if held > 0.0 {
        let model = j.gpu_model.as_deref().unwrap_or("");
        let cost = gpu_hours_cost(&s.prices, model, held);
        let parts = crate::cost::held_hours(j, held);
        let idle = if parts.failed > 0.0 {
            "failed".to_string()
        } else if parts.unmeasured > 0.0 {
            "idle not measured".to_string()
        } else {
            let idle = gpu_hours_cost(&s.prices, model, parts.allocated_idle * 3600.0);
            format!("{} idle", money(idle, &s.prices.currency))
        };
        out.push(kv(
            cx,
            "cost",
            Cell::new(
                format!(
                    "{:.1} GPU-h, {} ({idle}), useful {}",
                    held / 3600.0,
                    money(cost, &s.prices.currency),
                    opt(parts.useful_pct().map(|p| format!("{p:.0}%")))
                ),
                t.text,
            ),
        ));
    }
    out.extend(super::detail::efficiency(cx, j));
    out.extend(super::detail::evidence(cx, j));
    if j.state == JobState::Running {
        let w = (width as usize).saturating_sub(14).min(120);
        let series: Vec<_> = j
            .nodes
            .iter()
            .filter_map(|n| s.node_index_in(&j.cluster, n))
            .flat_map(|i| {
                s.nodes[i]
                    .gpus
                    .iter()
                    .enumerate()
                    .filter(|(_, g)| g.job == Some(j.id))
                    .map(move |(k, _)| (i, k))
            })
            .collect();
        if !series.is_empty() {
            let hist: Vec<Vec<u8>> = series.iter().map(|&(i, k)| s.gpu_util_history(i, k, w)).collect();
            let len = hist.iter().map(Vec::len).max().unwrap_or(0);
            // Mean over the job's GPUs at each point, newest aligned to the right.
            let mean: Vec<u32> = (0..len)
                .filter_map(|p| {
                    let vals: Vec<u32> = hist
                        .iter()
                        .filter_map(|h| {
                            (p + h.len()).checked_sub(len).and_then(|q| h.get(q)).map(|v| u32::from(*v))
                        })
                        .collect();
                    (!vals.is_empty()).then(|| vals.iter().sum::<u32>() / vals.len() as u32)
                })
                .collect();
            out.push(section(cx, "GPU utilisation of this job"));
            let last = mean.last().map(|v| format!(" {v}%"));
            out.push(spark_line(cx, width, "mean", cx.glyphs.spark(mean.into_iter(), 100), last));
        }
    }
    if let Some(h) = s
        .focus_history
        .as_ref()
        .filter(|h| matches!(h.focus, crate::model::protocol::Focus::Job(id, _) if id == j.id))
    {
        out.extend(super::detail::focus_history(cx, &h.focus, width));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::fmt::Glyphs;

    /// EFF is coloured by the configured `[efficiency]` thresholds, not by their defaults.
    #[test]
    fn eff_colours_follow_the_configured_thresholds() {
        let s = ClusterState::new(Default::default(), Default::default());
        let (cost, marks) = (crate::cost::CostReport::default(), Default::default());
        let style = |rules: &crate::cost::eff::Rules, pct: f64| {
            let cx = Cx {
                s: &s,
                cost: &cost,
                tones: &crate::tables::tone::TONES,
                glyphs: Glyphs::ASCII,
                user: "u",
                audit: &[],
                marked: &marks,
                rules,
            };
            eff_style(&cx, pct)
        };
        let defaults = crate::cost::eff::Rules::default();
        assert_eq!(style(&defaults, 30.0), Tone::Text, "30 % is above the default 25 % warning");
        assert_eq!(style(&defaults, 20.0), Tone::Warn);
        assert_eq!(style(&defaults, 10.0), Tone::Crit);
        let strict = crate::cost::eff::Rules { util_red: 40.0, util_warn: 60.0, ..defaults };
        assert_eq!(style(&strict, 30.0), Tone::Crit, "under the configured red threshold");
        assert_eq!(style(&strict, 50.0), Tone::Warn, "under the configured warning threshold");
        assert_eq!(style(&strict, 70.0), Tone::Text);
    }
}
