//! Version family v0.0.38 (Slurm 22.05 and 23.02; slurmdbd `dbv0.0.38`).
//!
//! What sets it apart: plain integers (`-1` or `null` for "unlimited"/"unset"), node `state` as
//! a lower-case string plus a separate `state_flags[]`, job `job_state` as a string, `exit_code`
//! as a raw wait status, flat partition records, `meta.Slurm` with a capital S, and in slurmdbd
//! `state.current` as a string (see `db.rs`). Node updates are not available over REST in
//! this version.

use super::map::{Exit, JobIn, NodeIn, PartitionIn};
use super::wire::{Loose, Num, Words};
use super::{JobsOut, Parsed};
use crate::model::{Node, Queue};
use serde::Deserialize;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Node38 {
    name: Loose,
    state: Words,
    state_flags: Words,
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
    nodes: Vec<Node38>,
}

pub fn nodes(body: &[u8]) -> serde_json::Result<Parsed<Vec<Node>>> {
    let r: NodesResp = serde_json::from_slice(body)?;
    let nodes = r
        .nodes
        .into_iter()
        .map(|n| {
            let mut state = n.state.upper();
            state.extend(n.state_flags.upper());
            super::map::node(NodeIn {
                name: n.name.text(),
                state,
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
    Ok(Parsed { data: nodes, last_update: None })
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Partition38 {
    name: Loose,
    state: Loose,
    total_nodes: Num,
    max_time_limit: Num,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PartitionsResp {
    partitions: Vec<Partition38>,
}

pub fn partitions(body: &[u8]) -> serde_json::Result<Parsed<Vec<Queue>>> {
    let r: PartitionsResp = serde_json::from_slice(body)?;
    let queues = r
        .partitions
        .into_iter()
        .map(|p| {
            super::map::queue(PartitionIn {
                name: p.name.text(),
                up: p.state.as_str().eq_ignore_ascii_case("UP"),
                total_nodes: p.total_nodes.u32(),
                // -1 is INFINITE in this version.
                max_time_min: p.max_time_limit.get().filter(|m| *m >= 0),
            })
        })
        .collect();
    Ok(Parsed { data: queues, last_update: None })
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Job38 {
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
    exit_code: Num,
    restart_cnt: Num,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct JobsResp {
    jobs: Vec<Job38>,
}

pub fn jobs(body: &[u8]) -> serde_json::Result<Parsed<JobsOut>> {
    let r: JobsResp = serde_json::from_slice(body)?;
    let mut out = JobsOut { jobs: Vec::with_capacity(r.jobs.len()), ..Default::default() };
    for j in r.jobs {
        let Some(id) = j.job_id.get().filter(|id| *id > 0) else { continue };
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
                exit: j.exit_code.get().map(Exit::from_wait_status).unwrap_or_default(),
                restarts: j.restart_cnt.u32(),
                ..Default::default()
            },
            &mut out.allocs,
        ));
    }
    Ok(Parsed { data: out, last_update: None })
}
