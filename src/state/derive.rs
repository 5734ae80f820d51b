//! Figures derived from the raw data after every update.

use super::ClusterState;
use crate::model::{Epoch, Job, JobState, NodeState, Text};
use std::collections::HashMap;

/// Cluster-wide counts for the overview and the header.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Totals {
    pub nodes: u32,
    pub nodes_down: u32,
    pub nodes_drained: u32,
    pub nodes_schedulable: u32,
    pub gpus: u32,
    pub gpus_alloc: u32,
    pub gpus_failed: u32,
    pub gpus_hot: u32,
    pub gpus_idle_alloc: u32,
    pub mean_util: Option<f32>,
    pub power_w: u64,
    pub ports: u32,
    pub ports_down: u32,
    pub jobs_running: u32,
    pub jobs_pending: u32,
    pub jobs_failed: u32,
}

/// Per-queue counts and wait times.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct QueueStats {
    pub name: Text,
    pub pending: u32,
    pub running: u32,
    pub pending_gpus: u32,
    pub running_gpus: u32,
    /// Median and 90th percentile wait (start − submit) of jobs that started in the last day.
    pub wait_p50_s: Option<i64>,
    pub wait_p90_s: Option<i64>,
    /// Longest current wait among pending jobs.
    pub oldest_pending_s: Option<i64>,
}

pub(super) fn totals(s: &ClusterState) -> Totals {
    let th = &s.thresholds;
    let mut t = Totals { nodes: s.nodes.len() as u32, ..Totals::default() };
    let (mut util_sum, mut util_n) = (0u64, 0u64);
    for n in &s.nodes {
        match n.state {
            NodeState::Down | NodeState::Unknown => t.nodes_down += 1,
            NodeState::Drained | NodeState::Draining | NodeState::Cordoned | NodeState::Maintenance => {
                t.nodes_drained += 1
            }
            _ => t.nodes_schedulable += 1,
        }
        t.gpus += n.gpu_slots;
        t.gpus_alloc += n.gpu_alloc;
        for g in &n.gpus {
            if g.is_failed() {
                t.gpus_failed += 1;
            }
            if g.temp_c.is_some_and(|c| c >= th.hot_temp_c) {
                t.gpus_hot += 1;
            }
            if g.idle_since.is_some_and(|since| s.now - since >= th.idle_after_s) {
                t.gpus_idle_alloc += 1;
            }
            if let Some(u) = g.util {
                util_sum += u64::from(u);
                util_n += 1;
            }
            t.power_w += u64::from(g.power_w.unwrap_or(0));
        }
        t.ports += n.ports.len() as u32;
        t.ports_down += n.ports.iter().filter(|p| p.state != crate::model::PortState::Active).count() as u32;
    }
    t.mean_util = (util_n > 0).then(|| util_sum as f32 / util_n as f32);
    for j in &s.jobs {
        match j.state {
            JobState::Running | JobState::Completing => t.jobs_running += 1,
            JobState::Pending => t.jobs_pending += 1,
            st if st.is_failure() => t.jobs_failed += 1,
            _ => {}
        }
    }
    t
}

pub(super) fn queue_stats(s: &ClusterState) -> Vec<QueueStats> {
    let mut by_name: HashMap<&str, (QueueStats, Vec<i64>)> = s
        .queues
        .iter()
        .map(|q| (q.name.as_str(), (QueueStats { name: q.name.clone(), ..Default::default() }, Vec::new())))
        .collect();
    let day_ago: Epoch = s.now - 86_400;
    for j in &s.jobs {
        let Some((qs, waits)) = by_name.get_mut(j.queue.as_str()) else { continue };
        match j.state {
            JobState::Pending => {
                qs.pending += 1;
                qs.pending_gpus += j.gpus;
                let w = j.wait(s.now);
                qs.oldest_pending_s = Some(qs.oldest_pending_s.map_or(w, |o| o.max(w)));
            }
            JobState::Running | JobState::Completing => {
                qs.running += 1;
                qs.running_gpus += j.gpus;
            }
            _ => {}
        }
        if let Some(start) = j.start
            && start >= day_ago
        {
            waits.push(start - j.submit);
        }
    }
    let mut out: Vec<QueueStats> = by_name
        .into_values()
        .map(|(mut qs, mut waits)| {
            if !waits.is_empty() {
                waits.sort_unstable();
                qs.wait_p50_s = Some(percentile(&waits, 50));
                qs.wait_p90_s = Some(percentile(&waits, 90));
            }
            qs
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn percentile(sorted: &[i64], p: usize) -> i64 {
    let idx = ((sorted.len() - 1) * p).div_ceil(100);
    sorted[idx.min(sorted.len() - 1)]
}

/// Ranks each pending job among the pending jobs of its queue: by the backend's position when it
/// gives one, otherwise by priority (higher first), then submit time, then id — Slurm's order.
pub(super) fn assign_ranks(jobs: &mut [Job]) {
    let mut by_queue: HashMap<Text, Vec<usize>> = HashMap::new();
    for (i, j) in jobs.iter_mut().enumerate() {
        j.rank = None;
        if j.state == JobState::Pending {
            by_queue.entry(j.queue.clone()).or_default().push(i);
        }
    }
    for (_, mut ix) in by_queue {
        ix.sort_unstable_by(|&a, &b| {
            let (a, b) = (&jobs[a], &jobs[b]);
            a.position
                .unwrap_or(u32::MAX)
                .cmp(&b.position.unwrap_or(u32::MAX))
                .then(b.priority.cmp(&a.priority))
                .then(a.submit.cmp(&b.submit))
                .then(a.id.cmp(&b.id))
        });
        for (rank, i) in ix.into_iter().enumerate() {
            jobs[i].rank = Some(jobs[i].position.unwrap_or(rank as u32 + 1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_small_sample() {
        let v = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
        assert_eq!(percentile(&v, 50), 6);
        assert_eq!(percentile(&v, 90), 10);
        assert_eq!(percentile(&[7], 90), 7);
    }
}
