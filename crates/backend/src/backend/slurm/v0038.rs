//! Version family v0.0.38 (Slurm 22.05 and 23.02; slurmdbd `dbv0.0.38`).
//!
//! What sets it apart: plain integers (`-1` or `null` for "unlimited"/"unset"), node `state` as
//! a lower-case string plus a separate `state_flags[]`, job `job_state` as a string, `exit_code`
//! as a raw wait status, flat partition records, `meta.Slurm` with a capital S, and in slurmdbd
//! `state.current` as a string (see `db.rs`). Node updates are not available over REST in
//! this version.

use super::Parsed;
use super::map::{NodeIn, PartitionIn};
use super::wire::{Loose, Num, Words};
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

/// One element of `jobs[]`. A v0.0.38 job record has the fields the v0.0.40+ reader takes, under
/// the same names; the differences (a string `job_state`, a raw wait status in `exit_code`) are
/// shapes that reader's lenient types accept, so it is shared.
pub const JOB: super::stream::JobReader = super::v0040::JOB;
