//! Job-derived figures: queue counts, wait times and pending ranks, computed from the set of
//! active jobs (a few percent of all jobs on a large cluster).

use super::ClusterState;
use crate::model::{Epoch, JobState, Text};
use std::collections::HashMap;

/// Cluster-wide counts for the overview and the header.
#[derive(
    Debug, Clone, Default, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
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
    pub ports_flapping: u32,
    /// Symbol + receive errors + transmit discards over every port.
    pub port_errors: u64,
    pub jobs_running: u32,
    pub jobs_pending: u32,
    pub jobs_failed: u32,
}

/// One cluster's health card on the Overview: its nodes in service and out, its GPUs and how
/// many are allocated (counted on the derivation's walk, so a frame never walks the nodes).
#[derive(Debug, Clone, Default, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct ClusterCard {
    pub cluster: Text,
    pub nodes_up: u32,
    pub nodes_out: u32,
    pub gpus: u32,
    pub gpus_alloc: u32,
}

/// Per-queue counts and wait times.
#[derive(
    Debug, Clone, Default, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
pub struct QueueStats {
    pub name: Text,
    pub pending: u32,
    pub running: u32,
    pub pending_gpus: u32,
    pub running_gpus: u32,
    /// Median and 90th percentile queue wait of the jobs that started in the last day
    /// (start − submit) and of those still waiting for the queue (now − submit so far: a
    /// queue whose jobs have all waited 13 minutes does not read "1s" because its last starts
    /// were quick).
    pub wait_p50_s: Option<i64>,
    pub wait_p90_s: Option<i64>,
    /// Submit time of the longest-waiting pending job.
    pub oldest_submit: Option<Epoch>,
}

/// What queue figures and ranks need of an active job.
#[derive(Debug, Clone, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub(super) struct ActiveJob {
    cluster: Text,
    queue: Text,
    state: JobState,
    gpus: u32,
    priority: u32,
    submit: Epoch,
    position: Option<u32>,
}

impl ActiveJob {
    pub(super) fn of(j: &crate::model::Job) -> Self {
        ActiveJob {
            cluster: j.cluster.clone(),
            queue: j.queue.clone(),
            state: j.state,
            gpus: j.gpus,
            priority: j.priority,
            submit: j.submit,
            position: j.position,
        }
    }
}

/// p50/p90 of the queue wait per queue ([`QueueStats::wait_p50_s`]): jobs that started in the
/// last day and jobs still waiting for the queue (a full pass over all jobs; the caller runs it
/// at most once a minute).
pub(super) fn wait_percentiles(s: &ClusterState) -> super::Map<Text, (i64, i64)> {
    let day_ago: Epoch = s.now - 86_400;
    let mut waits: HashMap<&str, Vec<i64>> = HashMap::new();
    for j in &s.jobs {
        let counts = match j.start {
            // A job cancelled before it ran (no nodes) has a start time too (its end): it never
            // left the queue, so its "wait" is no queue wait.
            Some(start) => {
                start >= day_ago
                    && j.state != JobState::Pending
                    && !(j.state == JobState::Cancelled && j.nodes.is_empty())
            }
            None => j.waits_for_queue(),
        };
        if counts {
            waits.entry(j.queue.as_str()).or_default().push(j.wait(s.now));
        }
    }
    waits
        .into_iter()
        .map(|(q, mut w)| {
            w.sort_unstable();
            (Text::from(q), (percentile(&w, 50), percentile(&w, 90)))
        })
        .collect()
}

/// Queue counts, running and pending totals, and pending ranks, in one walk over the active
/// jobs. Returns (queue stats, running, pending).
pub(super) fn active_figures(s: &mut ClusterState) -> (Vec<QueueStats>, u32, u32) {
    let mut out: Vec<QueueStats> = s
        .queues
        .iter()
        .map(|q| {
            let w = s.waits.get(&q.name);
            QueueStats {
                name: q.name.clone(),
                wait_p50_s: w.map(|w| w.0),
                wait_p90_s: w.map(|w| w.1),
                ..Default::default()
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    let (mut running, mut pending) = (0, 0);
    // Plain tuples sort without chasing pointers: (queue group, position, -priority, submit,
    // id). Groups number the queues of pending jobs, known to `queues` or not.
    // A queue is one cluster's: the same name in two clusters is two groups.
    let mut waiting: Vec<(usize, u32, i64, i64, u64, &Text)> = Vec::new();
    {
        let mut groups: HashMap<(&str, &str), usize> = HashMap::new();
        for ((cluster, id), j) in &s.active {
            let id = *id;
            let q = out.binary_search_by(|q| q.name.as_str().cmp(j.queue.as_str())).ok();
            match j.state {
                JobState::Pending => {
                    pending += 1;
                    let next = groups.len();
                    let g = *groups.entry((cluster.as_str(), j.queue.as_str())).or_insert(next);
                    waiting.push((
                        g,
                        j.position.unwrap_or(u32::MAX),
                        -i64::from(j.priority),
                        j.submit,
                        id,
                        cluster,
                    ));
                    if let Some(qs) = q.map(|q| &mut out[q]) {
                        qs.pending += 1;
                        qs.pending_gpus = qs.pending_gpus.saturating_add(j.gpus);
                        qs.oldest_submit = Some(qs.oldest_submit.map_or(j.submit, |o| o.min(j.submit)));
                    }
                }
                JobState::Running | JobState::Completing => {
                    running += 1;
                    if let Some(qs) = q.map(|q| &mut out[q]) {
                        qs.running += 1;
                        qs.running_gpus = qs.running_gpus.saturating_add(j.gpus);
                    }
                }
                _ => {}
            }
        }
    }
    waiting.sort_unstable();
    let mut ranks = Vec::with_capacity(waiting.len());
    let (mut prev, mut rank) = (usize::MAX, 0u32);
    for &(g, pos, _, _, id, cluster) in &waiting {
        if g != prev {
            (prev, rank) = (g, 0);
        }
        rank += 1;
        if let Some(i) = s.job_ix.get(&s.jobs, cluster, id) {
            ranks.push((i, if pos == u32::MAX { rank } else { pos }));
        }
    }
    drop(waiting);
    for (i, r) in ranks {
        s.jobs[i].rank = Some(r);
    }
    (out, running, pending)
}

fn percentile(sorted: &[i64], p: usize) -> i64 {
    let idx = ((sorted.len() - 1) * p).div_ceil(100);
    sorted[idx.min(sorted.len() - 1)]
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
