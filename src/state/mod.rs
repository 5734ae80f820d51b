//! `ClusterState`: the one merged picture of the cluster. It changes only by applying
//! [`Update`]s, so it can be tested without a terminal, and every view reads it.

mod derive;
pub mod history;
mod incidents;

pub use derive::{QueueStats, Totals};
pub use incidents::{Incident, Plane, Severity};

use crate::backend::{Delta, Inventory, NodeSample, SourceStatus, Update};
use crate::model::{Epoch, Filesystem, Job, JobId, Node, PriceCard, Queue, Quota, Text};
use history::{ClusterHistory, NodeHistory, StorageHistory};
use std::collections::HashMap;

/// Thresholds for derived incidents.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    /// An allocated GPU below this utilisation (percent) counts as idle.
    pub idle_util_pct: u8,
    /// … for at least this long.
    pub idle_after_s: i64,
    /// A GPU at or above this temperature is hot.
    pub hot_temp_c: u8,
    /// A filesystem at or above this fill level needs attention.
    pub storage_full_pct: u8,
    /// A port with this many state changes in the window is flapping.
    pub flap_count: u32,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self { idle_util_pct: 5, idle_after_s: 600, hot_temp_c: 85, storage_full_pct: 90, flap_count: 3 }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ClusterState {
    pub cluster: Text,
    /// Bumped on every change; views cache sorted/filtered rows per generation.
    pub generation: u64,
    /// The clock of the newest update (source time).
    pub now: Epoch,
    pub nodes: Vec<Node>,
    node_ix: HashMap<Text, usize>,
    pub jobs: Vec<Job>,
    job_ix: HashMap<JobId, usize>,
    pub queues: Vec<Queue>,
    pub quotas: Vec<Quota>,
    pub storage: Vec<Filesystem>,
    pub sources: Vec<SourceStatus>,
    pub prices: PriceCard,
    pub thresholds: Thresholds,
    // derived
    pub totals: Totals,
    pub queue_stats: Vec<QueueStats>,
    pub incidents: Vec<Incident>,
    // history
    pub history: ClusterHistory,
    pub node_history: Vec<NodeHistory>,
    pub storage_history: Vec<StorageHistory>,
    last_telemetry_at: Option<Epoch>,
}

impl ClusterState {
    pub fn new(prices: PriceCard, thresholds: Thresholds) -> Self {
        Self { prices, thresholds, ..Self::default() }
    }

    pub fn node(&self, name: &str) -> Option<&Node> {
        self.node_ix.get(name).map(|&i| &self.nodes[i])
    }

    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.node_ix.get(name).copied()
    }

    pub fn job(&self, id: JobId) -> Option<&Job> {
        self.job_ix.get(&id).map(|&i| &self.jobs[i])
    }

    pub fn gpu_count(&self) -> usize {
        self.nodes.iter().map(|n| n.gpus.len()).sum()
    }

    /// Whether every source is simulated.
    pub fn is_simulated(&self) -> bool {
        !self.sources.is_empty() && self.sources.iter().all(|s| s.simulated)
    }

    /// Applies one update. Returns whether anything changed.
    pub fn apply(&mut self, update: Update) -> bool {
        match update {
            Update::Status(status) => {
                self.set_status(status);
            }
            Update::Inventory { at, inventory } => {
                self.now = self.now.max(at);
                self.mark_fresh(&inventory.source, at);
                self.apply_inventory(*inventory);
                self.rederive();
            }
            Update::Delta(delta) => {
                self.mark_fresh(&delta.source, delta.at);
                self.apply_delta(*delta);
                self.rederive();
            }
        }
        self.generation += 1;
        true
    }

    /// Data from a source is proof of life: its last success moves to `at`.
    fn mark_fresh(&mut self, source: &str, at: Epoch) {
        if let Some(s) = self.sources.iter_mut().find(|s| s.name == source) {
            s.ok_at = Some(s.ok_at.map_or(at, |t| t.max(at)));
        }
    }

    fn set_status(&mut self, status: SourceStatus) {
        match self.sources.iter_mut().find(|s| s.name == status.name) {
            Some(s) => {
                // Keep the last success when an error arrives, so the header can say how stale.
                let ok_at = status.ok_at.or(s.ok_at);
                *s = SourceStatus { ok_at, ..status };
            }
            None => self.sources.push(status),
        }
    }

    fn apply_inventory(&mut self, inv: Inventory) {
        if let Some(cluster) = inv.cluster {
            self.cluster = cluster;
        }
        if let Some(nodes) = inv.nodes {
            let mut old: HashMap<Text, NodeHistory> = self
                .nodes
                .iter()
                .map(|n| n.name.clone())
                .zip(std::mem::take(&mut self.node_history))
                .collect();
            self.node_history = nodes.iter().map(|n| old.remove(&n.name).unwrap_or_default()).collect();
            self.nodes = nodes;
            self.node_ix = self.nodes.iter().enumerate().map(|(i, n)| (n.name.clone(), i)).collect();
        }
        if let Some(jobs) = inv.jobs {
            self.jobs = jobs;
            self.job_ix = self.jobs.iter().enumerate().map(|(i, j)| (j.id, i)).collect();
        }
        if let Some(queues) = inv.queues {
            self.queues = queues;
        }
        if let Some(quotas) = inv.quotas {
            self.quotas = quotas;
        }
        if let Some(storage) = inv.storage {
            self.set_storage(storage);
        }
    }

    fn set_storage(&mut self, storage: Vec<Filesystem>) {
        if storage.len() != self.storage_history.len() {
            self.storage_history = vec![StorageHistory::default(); storage.len()];
        }
        for (fs, h) in storage.iter().zip(&mut self.storage_history) {
            h.read_mbps.push((fs.read_bps / 1e6) as u32);
            h.write_mbps.push((fs.write_bps / 1e6) as u32);
        }
        self.storage = storage;
    }

    fn apply_delta(&mut self, d: Delta) {
        let dt = self.last_telemetry_at.map(|t| (d.at - t).clamp(0, 300)).unwrap_or(0) as f64;
        self.now = self.now.max(d.at);
        let telemetry = !d.nodes.is_empty();
        for id in &d.jobs_remove {
            self.remove_job(*id);
        }
        for job in d.jobs_upsert {
            match self.job_ix.get(&job.id) {
                Some(&i) => {
                    // Usage accumulates here; a backend that knows better (accounting) sends it.
                    let (gs, us) = (self.jobs[i].gpu_seconds, self.jobs[i].useful_gpu_seconds);
                    self.jobs[i] = job;
                    let j = &mut self.jobs[i];
                    if j.gpu_seconds == 0.0 {
                        j.gpu_seconds = gs;
                        j.useful_gpu_seconds = us;
                    }
                }
                None => {
                    self.job_ix.insert(job.id, self.jobs.len());
                    self.jobs.push(job);
                }
            }
        }
        for sample in d.nodes {
            self.apply_node_sample(sample);
        }
        if let Some(q) = d.quotas {
            self.quotas = q;
        }
        if let Some(s) = d.storage {
            self.set_storage(s);
        }
        if telemetry {
            self.accumulate_usage(dt);
            self.track_idle();
            self.last_telemetry_at = Some(d.at);
            self.push_node_history();
        }
    }

    fn remove_job(&mut self, id: JobId) {
        if let Some(i) = self.job_ix.remove(&id) {
            self.jobs.swap_remove(i);
            if let Some(moved) = self.jobs.get(i) {
                self.job_ix.insert(moved.id, i);
            }
        }
    }

    fn apply_node_sample(&mut self, s: NodeSample) {
        let Some(&i) = self.node_ix.get(&s.node) else {
            tracing::debug!(node = %s.node, "telemetry for an unknown node dropped");
            return;
        };
        let node = &mut self.nodes[i];
        if let Some(state) = s.state {
            node.state = state;
        }
        if let Some(reason) = s.reason {
            node.reason = reason;
        }
        if let Some(v) = s.gpu_alloc {
            node.gpu_alloc = v;
        }
        if let Some(v) = s.cpus_alloc {
            node.cpus_alloc = v;
        }
        if let Some(v) = s.mem_alloc_mib {
            node.mem_alloc_mib = v;
        }
        if let Some(ports) = s.ports {
            node.ports = ports;
        }
        for g in s.gpus {
            let Some(gpu) = node.gpus.iter_mut().find(|x| x.index == g.index) else { continue };
            macro_rules! set {
                ($($f:ident),*) => { $( if let Some(v) = g.$f { gpu.$f = Some(v); } )* };
            }
            set!(util, tensor_active, temp_c, power_w, mem_used_mib, xid);
            if let Some(ecc) = g.ecc {
                gpu.ecc = ecc;
            }
            if let Some(job) = g.job {
                if gpu.job != job {
                    gpu.idle_since = None;
                }
                gpu.job = job;
            }
        }
    }

    /// Adds `dt` seconds of GPU time (and utilisation-weighted time) to each running job.
    fn accumulate_usage(&mut self, dt: f64) {
        if dt <= 0.0 {
            return;
        }
        for node in &self.nodes {
            for gpu in &node.gpus {
                let Some(id) = gpu.job else { continue };
                if let Some(&j) = self.job_ix.get(&id) {
                    let job = &mut self.jobs[j];
                    job.gpu_seconds += dt;
                    job.useful_gpu_seconds += dt * f64::from(gpu.util.unwrap_or(0)) / 100.0;
                }
            }
        }
    }

    fn track_idle(&mut self) {
        let (now, limit) = (self.now, self.thresholds.idle_util_pct);
        for gpu in self.nodes.iter_mut().flat_map(|n| n.gpus.iter_mut()) {
            let idle = gpu.job.is_some() && gpu.util.is_some_and(|u| u < limit);
            if !idle {
                gpu.idle_since = None;
            } else if gpu.idle_since.is_none() {
                gpu.idle_since = Some(now);
            }
        }
    }

    fn push_node_history(&mut self) {
        if self.node_history.len() != self.nodes.len() {
            self.node_history.resize_with(self.nodes.len(), NodeHistory::default);
        }
        for (node, h) in self.nodes.iter().zip(&mut self.node_history) {
            if h.gpu_util.len() != node.gpus.len() {
                h.gpu_util = vec![Default::default(); node.gpus.len()];
                h.gpu_temp = vec![Default::default(); node.gpus.len()];
            }
            let (mut sum, mut n) = (0u32, 0u32);
            for (k, g) in node.gpus.iter().enumerate() {
                if let Some(u) = g.util {
                    h.gpu_util[k].push(u);
                    sum += u32::from(u);
                    n += 1;
                }
                if let Some(t) = g.temp_c {
                    h.gpu_temp[k].push(t);
                }
            }
            if let Some(mean) = sum.checked_div(n) {
                h.util.push(mean as u8);
            }
            h.power_w.push(node.power_w());
            h.port_errors
                .push(node.ports.iter().map(|p| p.errors()).sum::<u64>().min(u32::MAX as u64) as u32);
        }
    }

    /// Recomputes everything derived from the raw data: totals, queue statistics and
    /// positions, incidents, and the cluster-wide history point.
    fn rederive(&mut self) {
        self.totals = derive::totals(self);
        self.queue_stats = derive::queue_stats(self);
        derive::assign_ranks(&mut self.jobs);
        self.incidents = incidents::detect(self);
        let t = &self.totals;
        let h = &mut self.history;
        if let Some(u) = t.mean_util {
            h.util.push(u.round() as u8);
        }
        h.power_kw.push((t.power_w / 1000) as u32);
        h.running.push(t.jobs_running);
        h.pending.push(t.jobs_pending);
        h.idle_alloc.push(t.gpus_idle_alloc);
    }
}
