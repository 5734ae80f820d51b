//! slurmdbd records (`/slurmdb/{version}/…`): associations, QOS and job history.
//!
//! dbv0.0.38 and v0.0.40+ share this shape; their differences (the `QOS` vs `qos` list key,
//! `state.current` as a string or an array, `exit_code.return_code` as an integer or a
//! `{set, infinite, number}` struct, `signal.signal_id` vs `signal.id`) are absorbed here and
//! by the lenient types of `wire.rs`.
//!
//! What Slurm 24.11's slurmdbd really sends (tests/fixtures/slurm/v0.0.4{0,1,2}/db_*.json):
//! `time.start`/`time.end` of a job not yet started, and `time.end` of a running one, are the
//! time of the query rather than 0; `nodes` of a pending job is the text `None assigned`;
//! `elapsed` of a running job grows with every query. Only finished jobs' GPU time is taken.

use super::map::{Exit, JobIn};
use super::wire::{Loose, Num, Words};
use super::{DbJobs, Limit, LimitScope};
use serde::Deserialize;

/// `{type, name, count}` as slurmdbd writes TRES.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Tres {
    #[serde(rename = "type")]
    kind: Loose,
    name: Loose,
    count: Num,
}

/// GPUs in a structured TRES list (`type: gres, name: gpu`).
fn tres_list_gpus(list: &[Tres]) -> Option<u32> {
    list.iter().find(|t| t.kind.as_str() == "gres" && t.name.as_str() == "gpu").map(|t| t.count.u32())
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct AssocMaxTres {
    total: Vec<Tres>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct AssocMax {
    tres: AssocMaxTres,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DbAssoc {
    account: Loose,
    user: Loose,
    partition: Loose,
    max: AssocMax,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct AssocsResp {
    associations: Vec<DbAssoc>,
}

pub fn associations(body: &[u8]) -> serde_json::Result<Vec<Limit>> {
    let r: AssocsResp = serde_json::from_slice(body)?;
    Ok(r.associations
        .into_iter()
        .filter_map(|a| {
            let gpus = tres_list_gpus(&a.max.tres.total)?;
            // Account-level limits are team quotas; per-user rows are not.
            (a.user.as_str().is_empty() && a.partition.as_str().is_empty()).then(|| Limit {
                scope: LimitScope::Account,
                name: a.account.text(),
                gpus,
            })
        })
        .collect())
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct QosMaxTres {
    total: Vec<Tres>,
    per: QosTresPer,
}

/// `MaxTRESPerUser` etc.
#[derive(Deserialize, Default)]
#[serde(default)]
struct QosTresPer {
    user: Vec<Tres>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct QosMax {
    tres: QosMaxTres,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct QosLimits {
    max: QosMax,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DbQos {
    name: Loose,
    limits: QosLimits,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct QosResp {
    #[serde(rename = "QOS", alias = "qos")]
    qos: Vec<DbQos>,
}

pub fn qos(body: &[u8]) -> serde_json::Result<Vec<Limit>> {
    let r: QosResp = serde_json::from_slice(body)?;
    let mut out = Vec::new();
    for q in r.qos {
        let tres = &q.limits.max.tres;
        if let Some(gpus) = tres_list_gpus(&tres.total) {
            out.push(Limit { scope: LimitScope::Qos, name: q.name.text(), gpus });
        }
        if let Some(gpus) = tres_list_gpus(&tres.per.user) {
            out.push(Limit { scope: LimitScope::QosPerUser, name: q.name.text(), gpus });
        }
    }
    Ok(out)
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DbState {
    current: Words,
    reason: Loose,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DbTime {
    elapsed: Num,
    limit: Num,
    submission: Num,
    start: Num,
    end: Num,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DbTres {
    allocated: Vec<Tres>,
    requested: Vec<Tres>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DbExit {
    return_code: Num,
    signal: DbSignal,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DbSignal {
    signal_id: Num,
    id: Num,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DbJob {
    job_id: Num,
    name: Loose,
    user: Loose,
    account: Loose,
    qos: Loose,
    partition: Loose,
    state: DbState,
    time: DbTime,
    tres: DbTres,
    nodes: Loose,
    priority: Num,
    exit_code: DbExit,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DbJobsResp {
    jobs: Vec<DbJob>,
}

pub fn db_jobs(body: &[u8]) -> serde_json::Result<DbJobs> {
    let r: DbJobsResp = serde_json::from_slice(body)?;
    let mut allocs = Vec::new();
    let jobs = r
        .jobs
        .into_iter()
        .filter_map(|j| {
            let id = j.job_id.get().filter(|id| *id > 0)? as u64;
            let signal = j.exit_code.signal.signal_id.get().or(j.exit_code.signal.id.get());
            let state = j.state.current.upper();
            // slurmdbd fills a pending job's start and end with "now": neither happened.
            let pending = state.iter().any(|s| s.as_str() == "PENDING");
            let (start, end) = if pending { (None, None) } else { (j.time.start.pos(), j.time.end.pos()) };
            Some(super::map::job(
                JobIn {
                    id,
                    name: j.name.text(),
                    user: j.user.text(),
                    account: j.account.text(),
                    qos: j.qos.text(),
                    partition: j.partition.text(),
                    state,
                    reason: j.state.reason.text(),
                    priority: j.priority.get(),
                    submit: j.time.submission.pos(),
                    start,
                    end,
                    nodes: j.nodes.into_string(),
                    exit: Exit { code: j.exit_code.return_code.get(), signal: signal.filter(|s| *s > 0) },
                    gpus_alloc: tres_list_gpus(&j.tres.allocated),
                    gpus_req: tres_list_gpus(&j.tres.requested),
                    elapsed: j.time.elapsed.get(),
                    time_limit: super::wire::Limit(j.time.limit),
                    ..Default::default()
                },
                &mut allocs,
            ))
        })
        .collect();
    Ok(jobs)
}
