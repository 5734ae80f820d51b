//! Version family v0.0.40 – v0.0.43 (Slurm 23.11 – 26.05, the `data_parser` plugins).
//!
//! What sets it apart from v0.0.38: numbers that may be unset are `{set, infinite, number}`
//! structs, node `state` and job `job_state` are arrays of flags (base state first), `exit_code`
//! is `{status[], return_code, signal{id, name}}`, partitions are nested
//! (`nodes.total`, `maximums.time`, `partition.state[]`), node `partitions` may be an array,
//! responses carry `last_update` (used for `update_time`), and there is a light
//! `jobs/state/` listing. The four versions agree on every field read here (checked against the
//! recorded v0.0.42 responses and the v0.0.40/41/43 specs).

use super::map::{Exit, JobIn, NodeIn, PartitionIn};
use super::scan::Member;
use super::stream::JobReader;
use super::wire::{Loose, Num, Words};
use super::{JobsOut, Parsed};
use crate::model::{JobId, JobState, Node, Queue};
use serde::Deserialize;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Node40 {
    name: Loose,
    state: Words,
    reason: Loose,
    reason_set_by_user: Loose,
    reason_changed_at: Num,
    partitions: Words,
    cpus: Num,
    alloc_cpus: Num,
    real_memory: Num,
    alloc_memory: Num,
    gres: Loose,
    gres_used: Loose,
    tres: Loose,
    tres_used: Loose,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct NodesResp {
    nodes: Vec<Node40>,
    last_update: Num,
}

pub fn nodes(body: &[u8]) -> serde_json::Result<Parsed<Vec<Node>>> {
    let r: NodesResp = serde_json::from_slice(body)?;
    let nodes = r
        .nodes
        .into_iter()
        .map(|n| {
            super::map::node(NodeIn {
                name: n.name.text(),
                state: n.state.upper(),
                reason: n.reason.into_string(),
                reason_by: n.reason_set_by_user.text(),
                reason_at: n.reason_changed_at.pos(),
                partitions: n.partitions.0,
                cpus: n.cpus.u32(),
                cpus_alloc: n.alloc_cpus.u32(),
                mem_mib: n.real_memory.u64(),
                mem_alloc_mib: n.alloc_memory.u64(),
                gres: n.gres.into_string(),
                gres_used: n.gres_used.into_string(),
                tres: n.tres.into_string(),
                tres_used: n.tres_used.into_string(),
            })
        })
        .collect();
    Ok(Parsed { data: nodes, last_update: r.last_update.pos() })
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PartNodes {
    total: Num,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PartMax {
    time: Num,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PartState {
    state: Words,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Partition40 {
    name: Loose,
    nodes: PartNodes,
    maximums: PartMax,
    partition: PartState,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PartitionsResp {
    partitions: Vec<Partition40>,
    last_update: Num,
}

pub fn partitions(body: &[u8]) -> serde_json::Result<Parsed<Vec<Queue>>> {
    let r: PartitionsResp = serde_json::from_slice(body)?;
    let queues = r
        .partitions
        .into_iter()
        .map(|p| {
            super::map::queue(PartitionIn {
                name: p.name.text(),
                up: p.partition.state.upper().iter().any(|s| s == "UP"),
                total_nodes: p.nodes.total.u32(),
                max_time_min: p.maximums.time.get(),
            })
        })
        .collect();
    Ok(Parsed { data: queues, last_update: r.last_update.pos() })
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Signal {
    id: Num,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ExitCode {
    return_code: Num,
    signal: Signal,
}

/// `exit_code` is verbose from v0.0.40 on; the v0.0.38 raw wait status is read too.
#[derive(Deserialize)]
#[serde(untagged)]
enum ExitField {
    Verbose(ExitCode),
    Raw(Num),
}

impl Default for ExitField {
    fn default() -> Self {
        ExitField::Raw(Num::Unset)
    }
}

impl ExitField {
    fn exit(&self) -> Exit {
        match self {
            ExitField::Verbose(e) => {
                Exit { code: e.return_code.get(), signal: e.signal.id.get().filter(|s| *s > 0) }
            }
            ExitField::Raw(n) => n.get().map(Exit::from_wait_status).unwrap_or_default(),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Job40 {
    job_id: Num,
    name: Loose,
    user_name: Loose,
    account: Loose,
    qos: Loose,
    partition: Loose,
    job_state: Words,
    state_reason: Loose,
    priority: Num,
    submit_time: Num,
    start_time: Num,
    end_time: Num,
    nodes: Loose,
    node_count: Num,
    tasks: Num,
    tres_alloc_str: Loose,
    tres_req_str: Loose,
    tres_per_node: Loose,
    tres_per_job: Loose,
    tres_per_task: Loose,
    gres_detail: Words,
    exit_code: ExitField,
    restart_cnt: Num,
}

/// The reader of `jobs[]` elements (see [`super::stream`]); v0.0.38 uses it too.
pub const JOB: JobReader = JobReader { fields: job_fields, whole: job, picked: job_picked };

fn job_fields() -> Option<&'static [&'static str]> {
    super::pick::fields_of::<Job40>()
}

/// One element of `jobs[]`; jobs without an id are skipped.
pub fn job(elem: &[u8], out: &mut JobsOut) -> serde_json::Result<()> {
    add_job(super::pick::from_object(elem)?, out);
    Ok(())
}

/// One element of `jobs[]` from its members found by the splitter.
fn job_picked(values: &[u8], members: &[Member], out: &mut JobsOut) -> serde_json::Result<()> {
    add_job(super::pick::from_members(values, members)?, out);
    Ok(())
}

fn add_job(j: Job40, out: &mut JobsOut) {
    let Some(id) = j.job_id.get().filter(|id| *id > 0) else { return };
    let exit = j.exit_code.exit();
    out.qos.push(j.qos.text());
    out.jobs.push(super::map::job(
        JobIn {
            id: id as u64,
            name: j.name.text(),
            user: j.user_name.text(),
            account: j.account.text(),
            qos: j.qos.text(),
            partition: j.partition.text(),
            state: j.job_state.upper(),
            reason: j.state_reason.text(),
            priority: j.priority.get(),
            submit: j.submit_time.pos(),
            start: j.start_time.pos(),
            end: j.end_time.pos(),
            nodes: j.nodes.into_string(),
            node_count: j.node_count.get(),
            tasks: j.tasks.get(),
            tres_alloc: j.tres_alloc_str.into_string(),
            tres_req: j.tres_req_str.into_string(),
            tres_per_node: j.tres_per_node.into_string(),
            tres_per_job: j.tres_per_job.into_string(),
            tres_per_task: j.tres_per_task.into_string(),
            gres_detail: j.gres_detail.0.into_iter().map(|t| t.to_string()).collect(),
            exit,
            restarts: j.restart_cnt.u32(),
            ..Default::default()
        },
        &mut out.allocs,
    ));
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct JobStateRec {
    /// A string in `jobs/state/` (an integer elsewhere).
    job_id: Num,
    state: Words,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct JobStatesResp {
    jobs: Vec<JobStateRec>,
}

/// The light `jobs/state/` listing: every job's id and state, sorted by id.
pub fn job_states(body: &[u8]) -> serde_json::Result<Vec<(JobId, JobState)>> {
    let r: JobStatesResp = serde_json::from_slice(body)?;
    let mut out: Vec<(JobId, JobState)> = r
        .jobs
        .into_iter()
        .filter_map(|j| {
            Some((j.job_id.get().filter(|i| *i > 0)? as u64, super::map::job_state(&j.state.upper())))
        })
        .collect();
    out.sort_unstable_by_key(|(id, _)| *id);
    Ok(out)
}
