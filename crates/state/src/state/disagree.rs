//! Where telemetry and the scheduler disagree about a node, said instead of hidden: the
//! telemetry (Prometheus's dcgm-exporter, or local NVML) joined to a node another source listed
//! (Slurm, Kubernetes) may report
//!
//! * more GPUs busy than the scheduler has allocated there (busy GPUs on a node it calls idle:
//!   work it does not know about, or a wrong host mapping);
//! * another number of GPUs than the scheduler has (the GPUs beyond the scheduler's are not
//!   shown anywhere else: their readings have no GPU to join);
//! * job ids (dcgm-exporter's `hpc_job`) the scheduler does not list.
//!
//! Each is judged when the telemetry for the node arrives ([`judge`], from the state's one
//! place where samples join nodes), kept per node with since when it holds, and raised as an
//! incident ([`incidents`]). `doctor` counts the same job matches ([`job_matches`]).

use super::{ClusterState, Lifecycle, Plane, Severity};
use crate::model::protocol::NodeSample;
use crate::model::{Epoch, JobId, Node, NodeKey, Text};
use std::collections::BTreeMap;

/// A GPU at or above this utilisation (percent) is busy.
pub const BUSY_UTIL_PCT: u8 = 50;

/// What the telemetry says about one node that its scheduler does not; each part with since
/// when it has held.
#[derive(Debug, Clone, PartialEq, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Disagreement {
    /// `(busy GPUs, allocated by the scheduler, highest utilisation, since)`.
    pub busy: Option<(u32, u32, u8, Epoch)>,
    /// `(the scheduler's GPUs, the telemetry's GPUs, the telemetry's GPU indexes the scheduler's
    /// node does not have, since)`.
    pub count: Option<(u32, u32, Vec<u8>, Epoch)>,
    /// `(telemetry job ids the scheduler does not list, since)`.
    pub jobs: Option<(Vec<JobId>, Epoch)>,
}

impl Disagreement {
    pub fn is_empty(&self) -> bool {
        self.busy.is_none() && self.count.is_none() && self.jobs.is_none()
    }
}

/// The disagreements per node.
pub type Disagreements = BTreeMap<NodeKey, Disagreement>;

/// The scheduler's GPU count of a node: its slots, else the GPUs it lists.
fn scheduler_gpus(n: &Node) -> u32 {
    n.gpu_slots.max(n.gpus.len() as u32)
}

/// Judges one node's telemetry sample against the node as its scheduler lists it (before the
/// sample is applied), at `at`; `known` says whether the scheduler lists a job. `prev`: what was
/// judged before (its `since`s carry on while a part holds). `None`: they agree.
pub fn judge(
    n: &Node,
    sample: &NodeSample,
    at: Epoch,
    known: impl Fn(JobId) -> bool,
    prev: Option<&Disagreement>,
) -> Option<Disagreement> {
    let reported: Vec<_> = sample.gpus.iter().filter(|g| g.util.is_some()).collect();
    let mut d = Disagreement::default();
    let busy: Vec<u8> = reported.iter().filter_map(|g| g.util).filter(|&u| u >= BUSY_UTIL_PCT).collect();
    if busy.len() as u32 > n.gpu_alloc {
        let since = prev.and_then(|p| p.busy).map_or(at, |b| b.3);
        d.busy = Some((busy.len() as u32, n.gpu_alloc, busy.iter().copied().max().unwrap_or(0), since));
    }
    let sched = scheduler_gpus(n);
    let dropped: Vec<u8> =
        reported.iter().map(|g| g.index).filter(|i| !n.gpus.iter().any(|x| x.index == *i)).collect();
    if !reported.is_empty() && (reported.len() as u32 != sched || !dropped.is_empty()) {
        let since = prev.and_then(|p| p.count.as_ref()).map_or(at, |c| c.3);
        d.count = Some((sched, reported.len() as u32, dropped, since));
    }
    let mut unknown: Vec<JobId> =
        sample.gpus.iter().filter_map(|g| g.telemetry_job).filter(|&j| !known(j)).collect();
    unknown.sort_unstable();
    unknown.dedup();
    if !unknown.is_empty() {
        let since = prev.and_then(|p| p.jobs.as_ref()).map_or(at, |j| j.1);
        d.jobs = Some((unknown, since));
    }
    (!d.is_empty()).then_some(d)
}

fn list(ids: &[impl std::fmt::Display], most: usize) -> String {
    let mut s: Vec<String> = ids.iter().take(most).map(ToString::to_string).collect();
    if ids.len() > most {
        s.push(format!("+{} more", ids.len() - most));
    }
    s.join(", ")
}

/// One incident per disagreeing part of each node.
pub(super) fn incidents(s: &ClusterState, out: &mut Vec<super::Incident>) {
    for (key, d) in &s.disagreements {
        let Some(n) = s.node_in(&key.cluster, &key.name) else { continue };
        let inc =
            |severity, subject: Text, title: String, action: &str, since, signal: &str| super::Incident {
                cluster: key.cluster.clone(),
                severity,
                plane: Plane::Control,
                subject,
                title,
                action: action.into(),
                since: Some(since),
                cost_per_hour: None,
                node: Some(n.name.clone()),
                job: None,
                signal: signal.into(),
                repeats: 0,
                lifecycle: Lifecycle::Open,
                waiting: None,
            };
        if let Some((busy, alloc, max, since)) = d.busy {
            let sched = match alloc {
                0 => format!("the scheduler calls it {} with no GPU allocated", n.state.label()),
                a => format!("the scheduler allocates {a}"),
            };
            out.push(inc(
                Severity::Warning,
                n.name.clone(),
                format!("telemetry: {busy} GPUs busy (up to {max}%), {sched}"),
                "find what runs there outside the scheduler (nvidia-smi on the node), or check that the telemetry's host label maps to this node ([prometheus.host_map])",
                since,
                "disagree-busy",
            ));
        }
        if let Some((sched, tele, dropped, since)) = &d.count {
            let hidden = match dropped.is_empty() {
                true => String::new(),
                false => format!("; GPUs {} are not shown (no such GPU in the scheduler)", list(dropped, 8)),
            };
            out.push(inc(
                Severity::Warning,
                n.name.clone(),
                format!("telemetry reports {tele} GPUs, the scheduler {sched}{hidden}"),
                "check the node's GPU count at the scheduler (Slurm Gres= / gres.conf, the device plugin's capacity) and that the telemetry's host label maps to this node ([prometheus.host_map])",
                *since,
                "disagree-gpus",
            ));
        }
        if let Some((jobs, since)) = &d.jobs {
            out.push(inc(
                Severity::Warning,
                n.name.clone(),
                format!("telemetry names job(s) {} the scheduler does not list", list(jobs, 4)),
                "check that dcgm-exporter's hpc_job label comes from this scheduler (its job mapping directory) and that the host label maps to this node",
                *since,
                "disagree-jobs",
            ));
        }
    }
}

/// Of the job ids telemetry names on the scheduler's nodes: `(listed by the scheduler, not)`,
/// each id counted once.
pub fn job_matches(s: &ClusterState) -> (usize, usize) {
    let unknown: std::collections::BTreeSet<JobId> = s
        .disagreements
        .values()
        .filter_map(|d| d.jobs.as_ref())
        .flat_map(|(j, _)| j.iter().copied())
        .collect();
    let all: std::collections::BTreeSet<JobId> = s.telemetry_jobs.values().flatten().copied().collect();
    (all.len().saturating_sub(unknown.len()), unknown.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::protocol::GpuSample;

    fn node(gpus: u8, alloc: u32) -> Node {
        let mut n = crate::testing::state_after(Default::default(), 1).nodes[0].clone();
        n.gpus.truncate(usize::from(gpus));
        n.gpu_slots = u32::from(gpus);
        n.gpu_alloc = alloc;
        n
    }

    fn sample(utils: &[u8], job: Option<JobId>) -> NodeSample {
        let gpus = utils
            .iter()
            .enumerate()
            .map(|(i, &u)| GpuSample {
                index: i as u8,
                util: Some(u),
                telemetry_job: job,
                ..Default::default()
            })
            .collect();
        NodeSample { node: "n".into(), gpus, ..Default::default() }
    }

    #[test]
    fn busy_beyond_the_allocation_other_counts_and_unknown_jobs_are_judged_and_keep_their_since() {
        let n = node(4, 0);
        let d = judge(&n, &sample(&[98; 8], Some(7)), 100, |_| false, None).unwrap();
        assert_eq!(d.busy, Some((8, 0, 98, 100)));
        assert_eq!(d.count, Some((4, 8, vec![4, 5, 6, 7], 100)));
        assert_eq!(d.jobs, Some((vec![7], 100)));
        // Still so later: since when it first held.
        let later = judge(&n, &sample(&[98; 8], Some(7)), 160, |_| false, Some(&d)).unwrap();
        assert_eq!((later.busy.unwrap().3, later.count.unwrap().3, later.jobs.unwrap().1), (100, 100, 100));
        // Agreeing: nothing.
        let n = node(4, 2);
        assert_eq!(judge(&n, &sample(&[98, 98, 0, 3], Some(7)), 100, |j| j == 7, None), None);
        // Below the busy threshold is not busy; a GPU without a reading is not counted.
        let mut s = sample(&[BUSY_UTIL_PCT - 1, 0, 0, 0], None);
        s.gpus[3].util = None;
        let d = judge(&n, &s, 100, |_| true, None).unwrap();
        assert_eq!((d.busy, d.count, d.jobs), (None, Some((4, 3, vec![], 100)), None));
    }
}
