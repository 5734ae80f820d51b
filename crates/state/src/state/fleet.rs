//! One walk over every node, GPU and port after an update: GPU-time accounting for jobs, idle
//! tracking, a history row, the fleet totals and the list of incident candidates.

use super::Samples;
use super::history::NONE_U8;
use super::{ClusterCard, ClusterState, Thresholds, Totals};
use crate::model::{
    Epoch, FabricPort, GPUS_CLAIMED_LABEL, Gpu, JobId, MAX_GPUS_PER_NODE, Node, NodeState, PortState, Text,
};

/// Where incidents may be: found during the walk, turned into incidents afterwards.
#[derive(Debug, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub(super) struct Flags {
    pub nodes: Vec<usize>,
    pub gpus: Vec<(usize, usize)>,
    pub ports: Vec<(usize, usize)>,
    /// Nodes whose answer claimed more GPUs than the cap (see [`GPUS_CLAIMED_LABEL`]).
    pub capped: Vec<usize>,
}

/// Whether the backend cut the node's GPU count to the cap (a rare case: the label is looked up
/// only for nodes at the cap).
fn capped(n: &Node) -> bool {
    n.gpu_slots >= MAX_GPUS_PER_NODE && n.labels.contains_key(GPUS_CLAIMED_LABEL)
}

fn gpu_flagged(g: &Gpu, now: Epoch, th: &Thresholds) -> bool {
    g.xid.is_some()
        || g.ecc.dbe > 0
        || super::incidents::link_errors_flagged(&g.links)
        || g.temp_c.is_some_and(|t| t >= th.hot_temp_c)
        || g.idle_since.is_some_and(|s| now - s >= th.idle_after_s)
}

/// Whether a port is down, flapping or erring enough to be an incident.
pub fn port_flagged(p: &FabricPort, th: &Thresholds) -> bool {
    p.state != PortState::Active || p.flaps >= th.flap_count || p.symbol_errors + p.rcv_errors > 1000
}

/// Flags only, for updates that change no data (a source's status).
pub(super) fn flags_only(s: &ClusterState) -> Flags {
    let mut f = Flags::default();
    for (ni, n) in s.nodes.iter().enumerate() {
        if n.state.is_unhealthy() {
            f.nodes.push(ni);
        }
        if capped(n) {
            f.capped.push(ni);
        }
        f.gpus.extend(
            n.gpus
                .iter()
                .enumerate()
                .filter(|(_, g)| gpu_flagged(g, s.now, &s.thresholds))
                .map(|(k, _)| (ni, k)),
        );
        f.ports.extend(
            n.ports.iter().enumerate().filter(|(_, p)| port_flagged(p, &s.thresholds)).map(|(k, _)| (ni, k)),
        );
    }
    f
}

/// The fused walk. For the nodes of each cluster in `dts` (those that sent telemetry), also
/// accounts that cluster's seconds of GPU time to its jobs and tracks idle allocated GPUs; with
/// any telemetry, writes a history row. A cluster's telemetry never accounts time to another
/// cluster's jobs.
pub(super) fn pass(s: &mut ClusterState, dts: &[(Text, f64)], mut samples: Samples) -> Flags {
    let telemetry = !dts.is_empty();
    let ClusterState { nodes, jobs, job_ix, fleet, gpu_base, thresholds: th, now, twins, cards, .. } = s;
    // Each cluster's card on the Overview, counted on this walk (a cluster's nodes sit together:
    // the last card is tried first).
    cards.clear();
    // Cursor into the samples (ascending node indexes; usize::MAX entries are skipped).
    let mut next = 0;
    let now = *now;
    let mut flags = Flags::default();
    let mut t = Totals { nodes: nodes.len() as u32, ..Totals::default() };
    let (mut util_sum, mut util_n) = (0u64, 0u64);
    let mut rows = telemetry.then(|| {
        (
            fleet.gpu_util.next_row(),
            fleet.gpu_temp.next_row(),
            fleet.node_util.next_row(),
            fleet.node_power_w.next_row(),
            fleet.node_port_errors.next_row(),
        )
    });
    for (ni, node) in nodes.iter_mut().enumerate() {
        while samples.at.get(next).is_some_and(|&i| i == usize::MAX) {
            next += 1;
        }
        if samples.at.get(next) == Some(&ni) {
            super::apply_node_sample(node, &mut samples.samples[next]);
            next += 1;
        }
        // This node's cluster's telemetry interval, if it sent any (one entry in a
        // single-cluster console, a few in a fleet batch).
        let node_dt =
            if telemetry { dts.iter().find(|(c, _)| *c == node.cluster).map(|d| d.1) } else { None };
        match node.state {
            NodeState::Down | NodeState::DownDrain | NodeState::Unknown => {
                t.nodes_down += 1;
                flags.nodes.push(ni);
            }
            NodeState::Drained | NodeState::Draining | NodeState::Cordoned | NodeState::Maintenance => {
                t.nodes_drained += 1
            }
            _ => t.nodes_schedulable += 1,
        }
        if capped(node) {
            flags.capped.push(ni);
        }
        t.gpus += node.gpu_slots;
        t.gpus_alloc += node.gpu_alloc;
        if cards.last().is_none_or(|c| c.cluster != node.cluster) {
            match cards.iter().position(|c| c.cluster == node.cluster) {
                Some(i) => {
                    let c = cards.remove(i);
                    cards.push(c);
                }
                None => cards.push(ClusterCard { cluster: node.cluster.clone(), ..Default::default() }),
            }
        }
        if let Some(c) = cards.last_mut() {
            let up = node.state.schedulable();
            c.nodes_up += u32::from(up);
            c.nodes_out += u32::from(!up);
            c.gpus = c.gpus.saturating_add(node.gpu_slots);
            c.gpus_alloc = c.gpus_alloc.saturating_add(node.gpu_alloc);
        }
        let mut port_errors = 0u64;
        for (pi, p) in node.ports.iter().enumerate() {
            t.ports += 1;
            if p.state != PortState::Active {
                t.ports_down += 1;
            }
            port_errors += p.errors();
            if p.flaps >= th.flap_count {
                t.ports_flapping += 1;
            }
            if port_flagged(p, th) {
                flags.ports.push((ni, pi));
            }
        }
        let base = gpu_base.get(ni).copied();
        let (mut node_sum, mut node_n, mut node_power) = (0u32, 0u32, 0u32);
        // GPUs of one job sit next to each other: remember the last job's index.
        let mut last: Option<(JobId, usize)> = None;
        for (k, g) in node.gpus.iter_mut().enumerate() {
            if let Some(dt) = node_dt {
                let idle = g.job.is_some() && g.util.is_some_and(|u| u < th.idle_util_pct);
                if !idle {
                    g.idle_since = None;
                } else if g.idle_since.is_none() {
                    g.idle_since = Some(now);
                }
                // Measured GPU-seconds: a GPU whose utilisation is reported, for the part of
                // the step inside the job's run (a history replay reaches back before it).
                if dt > 0.0
                    && let Some(id) = g.job
                    && let Some(u) = g.util
                {
                    let ix = match last {
                        Some((lid, ix)) if lid == id => Some(ix),
                        _ => job_ix.get(jobs, &node.cluster, id),
                    };
                    if let Some(ix) = ix {
                        last = Some((id, ix));
                        let j = &mut jobs[ix];
                        let run = j.start.map_or(0.0, |st| {
                            let (lo, hi) = (st as f64, j.end.unwrap_or(now) as f64);
                            (hi.min(now as f64) - lo.max(now as f64 - dt)).clamp(0.0, dt)
                        });
                        j.gpu_seconds += run;
                        j.useful_gpu_seconds += run * f64::from(u.min(100)) / 100.0;
                    }
                }
            }
            // The history row holds every GPU's latest values (another cluster's too).
            if let (Some((gu, gt, ..)), Some(b)) = (rows.as_mut(), base)
                && let (Some(u), Some(c)) = (gu.get_mut(b + k), gt.get_mut(b + k))
            {
                *u = g.util.map_or(NONE_U8, |v| v.min(100));
                *c = g.temp_c.map_or(NONE_U8, |v| v.min(254));
            }
            if g.is_failed() {
                t.gpus_failed += 1;
            }
            if g.temp_c.is_some_and(|c| c >= th.hot_temp_c) {
                t.gpus_hot += 1;
            }
            if g.idle_since.is_some_and(|since| now - since >= th.idle_after_s) {
                t.gpus_idle_alloc += 1;
            }
            if let Some(u) = g.util {
                node_sum += u32::from(u);
                node_n += 1;
            }
            node_power += u32::from(g.power_w.unwrap_or(0));
            if gpu_flagged(g, now, th) {
                flags.gpus.push((ni, k));
            }
        }
        t.port_errors += port_errors;
        util_sum += u64::from(node_sum);
        util_n += u64::from(node_n);
        t.power_w += u64::from(node_power);
        if let Some((_, _, nu, np, ne)) = rows.as_mut()
            && let (Some(u), Some(p), Some(e)) = (nu.get_mut(ni), np.get_mut(ni), ne.get_mut(ni))
        {
            *u = node_sum.checked_div(node_n).map_or(NONE_U8, |m| m as u8);
            *p = node_power;
            *e = port_errors.min(u64::from(u32::MAX - 1)) as u32;
        }
    }
    t.mean_util = (util_n > 0).then(|| util_sum as f32 / util_n as f32);
    for &(a, b) in &twins.pairs {
        once_per_host(&mut t, &nodes[a], &nodes[b], now, th);
    }
    s.totals = t;
    flags
}

/// A host that is a node of a Slurm and of a Kubernetes cluster is one host in the totals:
/// counted once as a node (as its Slurm node: the row the Nodes view shows it on), its GPUs
/// once (the larger count), its allocated GPUs the two schedulers' together, at most all of
/// them, and its GPUs' telemetry once where both nodes carry it. Undoes the walk's second
/// count of the Kubernetes node `k8`.
fn once_per_host(
    t: &mut Totals,
    sl: &crate::model::Node,
    k8: &crate::model::Node,
    now: Epoch,
    th: &Thresholds,
) {
    t.nodes = t.nodes.saturating_sub(1);
    let bucket = match k8.state {
        NodeState::Down | NodeState::DownDrain | NodeState::Unknown => &mut t.nodes_down,
        NodeState::Drained | NodeState::Draining | NodeState::Cordoned | NodeState::Maintenance => {
            &mut t.nodes_drained
        }
        _ => &mut t.nodes_schedulable,
    };
    *bucket = bucket.saturating_sub(1);
    let slots = sl.gpu_slots.max(k8.gpu_slots);
    t.gpus = t.gpus.saturating_sub(sl.gpu_slots + k8.gpu_slots - slots);
    let alloc = sl.gpu_alloc + k8.gpu_alloc;
    t.gpus_alloc = t.gpus_alloc.saturating_sub(alloc - alloc.min(slots));
    if !sl.gpus.is_empty() {
        for g in &k8.gpus {
            t.gpus_failed = t.gpus_failed.saturating_sub(u32::from(g.is_failed()));
            t.gpus_hot = t.gpus_hot.saturating_sub(u32::from(g.temp_c.is_some_and(|c| c >= th.hot_temp_c)));
            let idle = g.idle_since.is_some_and(|since| now - since >= th.idle_after_s);
            t.gpus_idle_alloc = t.gpus_idle_alloc.saturating_sub(u32::from(idle));
            t.power_w = t.power_w.saturating_sub(u64::from(g.power_w.unwrap_or(0)));
        }
    }
}
