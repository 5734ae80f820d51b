//! `ClusterState`: the one merged picture of the cluster. It changes only by applying
//! [`Update`]s, so it can be tested without a terminal, and every view reads it.
//!
//! Applying an update is proportional to what changed plus one fused pass over the fleet:
//! job-derived figures (ranks, queue counts) are recomputed from the set of active jobs only,
//! and per-GPU bookkeeping (usage, idle tracking, history, totals, incident candidates) happens
//! in a single walk over the nodes.

mod derive;
pub mod disagree;
mod fleet;
pub mod history;
mod incidents;
mod job_index;
pub mod journal;
mod lifecycle;
mod rollup;
mod snapshot;
pub mod suspects;
mod twins;
pub mod why;

pub use derive::{ClusterCard, QueueStats, Totals};
pub use fleet::port_flagged;
pub use incidents::{Incident, Plane, Severity, alert_severity};
pub use lifecycle::{Lifecycle, RESOLVED_KEEP_S, actions_from_audit};
pub use rollup::{Directory, Part, Rollup};
pub use suspects::{Evidence, Suspect, suspects};
pub use twins::{HostPairing, Scheduler, Twin};
pub use why::{Wait, explain};

use crate::model::protocol::{Delta, Inventory, NodeSample, SourceStatus, StoreStatus, Update};
use crate::model::{
    Epoch, Filesystem, Job, JobId, JobKey, JobState, Node, NodeKey, PriceCard, Queue, Quota, Text,
};
use history::{ClusterHistory, FleetHistory, NONE_U8, StorageHistory};
use std::collections::{BTreeMap, HashMap};

/// Fast, seeded hashing for the state's indexes (keys come from the cluster, so not
/// predictable-by-attacker-free; foldhash's per-process seed keeps it DoS-resistant enough).
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Seconds of source time per point of the cluster-wide history, unless set otherwise.
pub const DEFAULT_HISTORY_STEP_S: i64 = 2;

/// Thresholds for derived incidents.
#[derive(Debug, Clone, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
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

#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct ClusterState {
    pub cluster: Text,
    /// Bumped on every change; views cache sorted/filtered rows per generation.
    pub generation: u64,
    /// The clock of the newest update (source time).
    pub now: Epoch,
    pub nodes: Vec<Node>,
    /// Node position by (cluster, name): two clusters may have a node of the same name.
    node_ix: Map<(Text, Text), usize>,
    /// Flat index of each node's first GPU (for the per-GPU history).
    gpu_base: Vec<usize>,
    pub jobs: Vec<Job>,
    /// Rebuilt from `jobs` when a snapshot is read ([`ClusterState::from_snapshot`]).
    #[borsh(skip)]
    job_ix: job_index::JobIndex,
    /// Pending, running and completing jobs, in compact form: what ranks and queue counts are
    /// made of, without touching the (large) job records.
    active: Map<(Text, JobId), derive::ActiveJob>,
    jobs_failed: u32,
    pub queues: Vec<Queue>,
    pub quotas: Vec<Quota>,
    pub storage: Vec<Filesystem>,
    pub sources: Vec<SourceStatus>,
    /// gpuplane's own files and the audit log's witnesses, by name and path (one console's, so
    /// not per cluster: a fleet's ledgers are one path each).
    pub stores: Vec<StoreStatus>,
    /// Pod UID → `namespace/name`, from the Kubernetes backend.
    pub pod_names: std::collections::HashMap<Text, Text>,
    /// Range-query history of what the detail pane shows (Prometheus), when fetched.
    pub focus_history: Option<crate::model::protocol::FocusHistory>,
    pub prices: PriceCard,
    pub thresholds: Thresholds,
    /// Acceptance results per node name (may name nodes this cluster does not have).
    pub acceptance: std::collections::BTreeMap<String, crate::model::acceptance::NodeAcceptance>,
    /// Alerts and silences from the alert manager (Alertmanager), as last reported.
    pub alerts: Vec<crate::model::alert::Alert>,
    pub silences: Vec<crate::model::alert::Silence>,
    /// Where `alerts` came from (`None`: no alert source has reported).
    pub alerts_origin: Option<crate::model::alert::AlertOrigin>,
    /// Where the telemetry joined to a node says what its scheduler does not ([`disagree`]).
    pub disagreements: disagree::Disagreements,
    /// Job ids the telemetry names per node (where another source lists the nodes): what
    /// [`disagree::job_matches`] counts.
    #[borsh(
        serialize_with = "snapshot::write_telemetry_jobs",
        deserialize_with = "snapshot::read_telemetry_jobs"
    )]
    pub telemetry_jobs: BTreeMap<NodeKey, smallvec::SmallVec<[JobId; 2]>>,
    /// The source that listed each cluster's nodes (scope → source): its own samples are not
    /// judged against its listing.
    listed_by: BTreeMap<Text, Text>,
    /// Acks (the ack store) and node actions (the audit log): what the incidents' lifecycle
    /// is derived from besides the cluster.
    pub handling: crate::model::Handling,
    /// The remediation catalogue each incident's next step comes from.
    pub playbooks: std::sync::Arc<crate::playbook::Playbooks>,
    /// What changed (the Timeline view): the event journal's window and what this state saw.
    pub timeline: journal::Timeline,
    // derived
    pub totals: Totals,
    /// Per cluster (in the order the walk met them): the Overview's health card figures.
    pub cards: Vec<ClusterCard>,
    pub queue_stats: Vec<QueueStats>,
    pub incidents: Vec<Incident>,
    /// Wait percentiles per queue, refreshed at most once a minute (they span a day).
    waits: Map<Text, (i64, i64)>,
    waits_at: Option<Epoch>,
    // history
    pub history: ClusterHistory,
    pub fleet: FleetHistory,
    pub storage_history: Vec<StorageHistory>,
    /// Per cluster: each cluster's telemetry accounts its own intervals.
    last_telemetry_at: Map<Text, Epoch>,
    /// The configured clusters whose objects the state holds, in the order first heard of
    /// (objects are grouped in this order); `[""]` in a single-cluster console.
    clusters: Vec<Text>,
    /// The cluster of the update being applied (empty outside [`Update::Cluster`]).
    scope: Text,
    /// Seconds of source time per point of the cluster-wide history (default 2 s).
    pub history_step_s: i64,
    /// The step of the newest history point.
    history_bucket: Option<i64>,
    /// Hosts that are a node of a Slurm cluster and of a Kubernetes cluster (`[[shared_hosts]]`).
    pub host_pairs: Vec<HostPairing>,
    /// Their pairing in the current node listing, and since when each pair disagrees.
    twins: twins::Twins,
    /// Per cluster: account or namespace → team, user → person (`[cluster.teams]`,
    /// `[cluster.people]`).
    pub directory: Directory,
    /// Quotas and active jobs per team and per person across the fleet, with each
    /// cluster's part (derived when jobs or quotas change).
    pub team_rollup: Vec<Rollup>,
    pub people_rollup: Vec<Rollup>,
    rollup_dirty: bool,
    /// While [`Self::apply_batch`] applies several updates: what to derive once at its end.
    batch: Option<Batch>,
}

/// What a batch of updates left to derive (one walk over the fleet for the whole batch,
/// instead of one per update: a fleet of ten large clusters sends ten updates per tick).
#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
struct Batch {
    rederive: bool,
    jobs_changed: bool,
    /// Seconds of telemetry per cluster that sent some (each cluster its own interval).
    dts: Vec<(Text, f64)>,
    incidents: bool,
    observe: bool,
}

impl ClusterState {
    pub fn new(prices: PriceCard, thresholds: Thresholds) -> Self {
        Self {
            prices,
            thresholds,
            history_step_s: DEFAULT_HISTORY_STEP_S,
            playbooks: crate::playbook::Playbooks::shared_builtin(),
            ..Self::default()
        }
    }

    /// The node of this name: in the first cluster (in [`Self::clusters`] order) that has
    /// one. Where the cluster is known, [`Self::node_in`] is exact.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.node_index(name).map(|i| &self.nodes[i])
    }

    pub fn node_index(&self, name: &str) -> Option<usize> {
        let name = Text::from(name);
        self.clusters.iter().find_map(|c| self.node_ix.get(&(c.clone(), name.clone())).copied())
    }

    /// The node `name` of the cluster `cluster` (as objects carry it: empty in a
    /// single-cluster console).
    pub fn node_in(&self, cluster: &Text, name: &str) -> Option<&Node> {
        self.node_index_in(cluster, name).map(|i| &self.nodes[i])
    }

    /// The position of the node `name` of the cluster `cluster` (as objects carry it).
    pub fn node_index_in(&self, cluster: &Text, name: &str) -> Option<usize> {
        self.node_ix.get(&(cluster.clone(), Text::from(name))).copied()
    }

    /// The job of this id: in the first cluster that has one ([`Self::job_in`] is exact).
    pub fn job(&self, id: JobId) -> Option<&Job> {
        self.job_index(id).map(|i| &self.jobs[i])
    }

    pub fn job_index(&self, id: JobId) -> Option<usize> {
        self.clusters.iter().find_map(|c| self.job_ix.get(&self.jobs, c, id))
    }

    /// The job `id` of the cluster `cluster` (as objects carry it).
    pub fn job_in(&self, cluster: &Text, id: JobId) -> Option<&Job> {
        self.job_ix.get(&self.jobs, cluster, id).map(|i| &self.jobs[i])
    }

    /// The name of the cluster an object carrying `cluster` belongs to: its configured
    /// cluster, or (single-cluster console) the cluster its scheduler reports.
    pub fn cluster_of<'a>(&'a self, cluster: &'a Text) -> &'a Text {
        if cluster.is_empty() { &self.cluster } else { cluster }
    }

    /// The latest acceptance result of node `n`: under `cluster/node` for a fleet cluster's
    /// node, its name otherwise.
    pub fn acceptance_of(&self, n: &crate::model::Node) -> Option<&crate::model::acceptance::NodeAcceptance> {
        if n.cluster.is_empty() {
            self.acceptance.get(n.name.as_str())
        } else {
            self.acceptance.get(&format!("{}/{}", n.cluster, n.name))
        }
    }

    /// The configured clusters the state holds objects of, in order (empty names: the one
    /// cluster of a single-cluster console).
    pub fn clusters(&self) -> &[Text] {
        &self.clusters
    }

    /// More than one configured cluster: tables show a CLUSTER column.
    pub fn is_fleet(&self) -> bool {
        self.fleet_size() > 1
    }

    /// How many configured clusters the state holds objects of (the header's "fleet of N").
    pub fn fleet_size(&self) -> usize {
        self.clusters.iter().filter(|c| !c.is_empty()).count()
    }

    /// The cluster as objects carry it, for a key's cluster name.
    fn raw_cluster(&self, name: &Text) -> Text {
        if *name == self.cluster && !self.clusters.contains(name) { Text::default() } else { name.clone() }
    }

    /// The identity of the node at position `i`.
    pub fn node_key(&self, i: usize) -> Option<NodeKey> {
        let n = self.nodes.get(i)?;
        Some(NodeKey { cluster: self.cluster_of(&n.cluster).clone(), name: n.name.clone() })
    }

    /// The position of the node `k` names, if the state holds it.
    pub fn node_at(&self, k: &NodeKey) -> Option<usize> {
        self.node_ix.get(&(self.raw_cluster(&k.cluster), k.name.clone())).copied()
    }

    /// The identity of the job at position `i`.
    pub fn job_key(&self, i: usize) -> Option<JobKey> {
        let j = self.jobs.get(i)?;
        Some(JobKey { cluster: self.cluster_of(&j.cluster).clone(), id: j.id })
    }

    /// The position of the job `k` names, if the state holds it.
    pub fn job_at(&self, k: &JobKey) -> Option<usize> {
        self.job_ix.get(&self.jobs, &self.raw_cluster(&k.cluster), k.id)
    }

    /// Registers the cluster of the update being applied.
    fn note_scope(&mut self) {
        if !self.clusters.contains(&self.scope) {
            self.clusters.push(self.scope.clone());
        }
    }

    /// The node an alert names (its `node`/`Hostname`/`instance` label), matched by name,
    /// then by short hostname either way (`gpu-004.dc1` ~ `gpu-004`).
    pub fn alert_node(&self, a: &crate::model::alert::Alert) -> Option<&Node> {
        let host = a.host()?;
        if let Some(n) = self.node(host) {
            return Some(n);
        }
        let short = host.split('.').next().unwrap_or(host);
        self.node(short).or_else(|| self.nodes.iter().find(|n| n.name.split('.').next() == Some(short)))
    }

    pub fn gpu_count(&self) -> usize {
        self.nodes.iter().map(|n| n.gpus.len()).sum()
    }

    /// Whether every source is simulated.
    pub fn is_simulated(&self) -> bool {
        !self.sources.is_empty() && self.sources.iter().all(|s| s.simulated)
    }

    /// Utilisation history of GPU `gpu` (position in `nodes[node].gpus`), newest `n` points.
    pub fn gpu_util_history(&self, node: usize, gpu: usize, n: usize) -> Vec<u8> {
        self.gpu_col(node, gpu).map_or_else(Vec::new, |c| self.fleet.gpu_util.column(c, n, NONE_U8))
    }

    pub fn gpu_temp_history(&self, node: usize, gpu: usize, n: usize) -> Vec<u8> {
        self.gpu_col(node, gpu).map_or_else(Vec::new, |c| self.fleet.gpu_temp.column(c, n, NONE_U8))
    }

    pub fn node_util_history(&self, node: usize, n: usize) -> Vec<u8> {
        self.fleet.node_util.column(node, n, NONE_U8)
    }

    pub fn node_power_history(&self, node: usize, n: usize) -> Vec<u32> {
        self.fleet.node_power_w.column(node, n, u32::MAX)
    }

    pub fn node_port_error_history(&self, node: usize, n: usize) -> Vec<u32> {
        self.fleet.node_port_errors.column(node, n, u32::MAX)
    }

    fn gpu_col(&self, node: usize, gpu: usize) -> Option<usize> {
        let n = self.nodes.get(node)?;
        (gpu < n.gpus.len()).then(|| self.gpu_base.get(node).map(|b| b + gpu))?
    }

    /// Applies one update. Returns whether anything the screen shows changed: a no-op update
    /// (a poll that found nothing new, a status that only moves the last success on, the same
    /// history or acceptance again) marks its source fresh and returns `false` without
    /// re-deriving, so views neither re-sort nor redraw for it.
    pub fn apply(&mut self, update: Update) -> bool {
        if let Update::Cluster { cluster, update } = update {
            let outer = std::mem::replace(&mut self.scope, cluster);
            let changed = self.apply(*update);
            self.scope = outer;
            return changed;
        }
        // A local store is the console's own, no cluster's: it names no cluster of the fleet.
        let update = match update {
            Update::Store(status) => return self.set_store(status),
            u => u,
        };
        self.note_scope();
        let is_delta = matches!(update, Update::Delta(_));
        let changed = match update {
            Update::Cluster { .. } => unreachable!("unwrapped above"),
            Update::Store(_) => unreachable!("applied above"),
            Update::Status(status) => {
                if !self.set_status(status) {
                    return false;
                }
                self.redetect();
                true
            }
            // A fleet cluster's picture replaces that cluster's share (its `cluster/node`
            // keys) only.
            Update::Acceptance(by_node) if !self.scope.is_empty() => {
                let prefix = format!("{}/", self.scope);
                let mine: std::collections::BTreeMap<_, _> =
                    self.acceptance.iter().filter(|(k, _)| k.starts_with(&prefix)).collect();
                if mine.len() == by_node.len() && by_node.iter().all(|(k, v)| mine.get(k) == Some(&v)) {
                    return false;
                }
                self.acceptance.retain(|k, _| !k.starts_with(&prefix));
                self.acceptance.extend(by_node.into_iter().filter(|(k, _)| k.starts_with(&prefix)));
                self.redetect();
                true
            }
            Update::Acceptance(by_node) => {
                if self.acceptance == *by_node {
                    return false;
                }
                self.acceptance = *by_node;
                self.redetect();
                true
            }
            Update::Inventory { at, inventory } => {
                let was_fresh = self.mark_fresh(&inventory.source, at);
                if inventory.is_empty() {
                    // Proof of life only (a poll that found nothing new).
                    self.now = self.now.max(at);
                    return !was_fresh;
                }
                self.now = self.now.max(at);
                let jobs_changed = inventory.jobs.is_some();
                self.apply_inventory(*inventory);
                self.derive(jobs_changed, None, Samples::default());
                true
            }
            Update::Alerts(snap) => {
                let was_fresh = self.mark_fresh(&snap.source, snap.at);
                let origin = Some(snap.origin());
                if self.alerts == snap.alerts
                    && self.silences == snap.silences
                    && self.alerts_origin == origin
                {
                    return !was_fresh;
                }
                let snap = *snap;
                self.alerts_origin = origin;
                self.alerts = snap.alerts;
                self.silences = snap.silences;
                self.redetect();
                true
            }
            Update::Handling(h) => {
                if self.handling == *h {
                    return false;
                }
                self.handling = *h;
                self.redetect();
                true
            }
            Update::Timeline(load) => {
                if !self.timeline.load(*load) {
                    return false;
                }
                self.generation += 1;
                return true;
            }
            // A job's figures are the ledger's (the console hands them on); nothing shown.
            Update::JobFigures(_) => return false,
            Update::PodNames(names) => {
                if self.pod_names == names {
                    return false;
                }
                self.pod_names = names;
                true
            }
            Update::History(h) => {
                if self.focus_history.as_ref() == Some(&*h) {
                    return false;
                }
                self.focus_history = Some(*h);
                true
            }
            Update::Delta(delta) => {
                let was_fresh = self.mark_fresh(&delta.source, delta.at);
                if delta.is_empty() {
                    self.now = self.now.max(delta.at);
                    return !was_fresh;
                }
                let telemetry = !delta.nodes.is_empty();
                let jobs_changed = !delta.jobs_upsert.is_empty() || !delta.jobs_remove.is_empty();
                let dt = match (telemetry, self.last_telemetry_at.get(&self.scope)) {
                    (true, Some(&t)) => (delta.at - t).clamp(0, 300) as f64,
                    _ => 0.0,
                };
                if telemetry {
                    self.last_telemetry_at.insert(self.scope.clone(), delta.at);
                }
                let samples = self.apply_delta(*delta);
                self.derive(jobs_changed, telemetry.then_some(dt), samples);
                true
            }
        };
        // What changed becomes timeline events (a compact snapshot is compared); telemetry
        // within the second of the last look waits for the next one.
        if !is_delta || self.timeline.looked_at() != Some(self.now) {
            match self.batch.as_mut() {
                Some(b) => b.observe = true,
                None => {
                    let (snap, events) = journal::Timeline::observe(self);
                    self.timeline.add(snap, events);
                }
            }
        }
        self.generation += 1;
        changed
    }

    /// Applies updates that arrived together, deriving once at the end (the fleet walk, the
    /// incidents, the timeline's look) instead of after each. The result equals applying them
    /// one by one, except that telemetry within the batch is accounted at the batch's end
    /// (each cluster for its own interval). Returns whether anything shown changed.
    pub fn apply_batch(&mut self, updates: Vec<Update>) -> bool {
        if updates.len() < 2 {
            return updates.into_iter().fold(false, |c, u| self.apply(u) | c);
        }
        self.batch = Some(Batch::default());
        let mut changed = false;
        for u in updates {
            changed |= self.apply(u);
        }
        let b = self.batch.take().unwrap_or_default();
        if b.rederive {
            self.rederive_with(b.jobs_changed, &b.dts, Samples::default());
        } else if b.incidents {
            self.incidents = incidents::detect(self, &self.flag_scan());
        }
        if b.observe {
            let (snap, events) = journal::Timeline::observe(self);
            self.timeline.add(snap, events);
        }
        self.generation += 1;
        changed
    }

    /// Incidents again after a change that touches no node data (now, or at the batch's end).
    fn redetect(&mut self) {
        match self.batch.as_mut() {
            Some(b) => b.incidents = true,
            None => self.incidents = incidents::detect(self, &self.flag_scan()),
        }
    }

    /// Derives after data changed; `telemetry`: the seconds of telemetry of the update's
    /// cluster (`None`: no telemetry). In a batch, the node samples are applied now and the
    /// walk waits for the batch's end.
    fn derive(&mut self, jobs_changed: bool, telemetry: Option<f64>, mut samples: Samples) {
        let Some(b) = self.batch.as_mut() else {
            let dts = telemetry.map(|dt| vec![(self.scope.clone(), dt)]).unwrap_or_default();
            self.rederive_with(jobs_changed, &dts, samples);
            return;
        };
        b.rederive = true;
        b.jobs_changed |= jobs_changed;
        if let Some(dt) = telemetry {
            match b.dts.iter_mut().find(|(c, _)| *c == self.scope) {
                Some((_, sum)) => *sum += dt,
                None => b.dts.push((self.scope.clone(), dt)),
            }
        }
        for (&ni, sample) in samples.at.iter().zip(samples.samples.iter_mut()) {
            if let Some(node) = self.nodes.get_mut(ni) {
                apply_node_sample(node, sample);
            }
        }
    }

    /// Data from a source is proof of life: its last success moves to `at`. Returns whether
    /// the source had succeeded before (so the header already showed it as live).
    fn mark_fresh(&mut self, source: &str, at: Epoch) -> bool {
        let scope = &self.scope;
        match self.sources.iter_mut().find(|s| s.name == source && s.cluster == *scope) {
            Some(s) => {
                let was = s.ok_at.is_some();
                s.ok_at = Some(s.ok_at.map_or(at, |t| t.max(at)));
                was
            }
            None => true,
        }
    }

    /// Returns whether anything shown changed: an error, the detail, or the last success of a
    /// failing source (its age is the incident's `since`). A healthy source's last success
    /// moving on is not a change: the header's age is drawn from the clock.
    fn set_status(&mut self, mut status: SourceStatus) -> bool {
        status.cluster = self.scope.clone();
        match self.sources.iter_mut().find(|s| s.name == status.name && s.cluster == status.cluster) {
            Some(s) => {
                // Keep the last success when an error arrives, so the header can say how stale.
                let ok_at = status.ok_at.or(s.ok_at);
                let next = SourceStatus { ok_at, ..status };
                let changed = s.error != next.error
                    || s.detail != next.detail
                    || s.simulated != next.simulated
                    || (next.error.is_some() && s.ok_at != next.ok_at)
                    || s.ok_at.is_none() != next.ok_at.is_none();
                *s = next;
                changed
            }
            None => {
                self.sources.push(status);
                true
            }
        }
    }

    /// Returns whether anything shown changed. A failure keeps the last success (how long the
    /// store has been failing); a success moving on is a change (the age shown is of it).
    fn set_store(&mut self, status: StoreStatus) -> bool {
        match self.stores.iter_mut().find(|s| s.name == status.name && s.path == status.path) {
            Some(s) => {
                let next = StoreStatus { ok_at: status.ok_at.or(s.ok_at), ..status };
                let changed = *s != next;
                *s = next;
                changed
            }
            None => {
                self.stores.push(status);
                true
            }
        }
    }

    fn apply_inventory(&mut self, inv: Inventory) {
        // A configured cluster keeps its configured name whatever its scheduler calls itself.
        if let Some(cluster) = inv.cluster
            && self.scope.is_empty()
        {
            self.cluster = cluster;
        }
        if let Some(nodes) = inv.nodes {
            self.listed_by.insert(self.scope.clone(), inv.source.clone());
            self.set_nodes(nodes);
        }
        let scope = self.scope.clone();
        if let Some(mut jobs) = inv.jobs {
            jobs.iter_mut().for_each(|j| {
                j.rank = None;
                j.cluster = scope.clone();
                // Kept for as long as the job is: at its length (a collected list has room
                // for four).
                j.nodes.shrink_to_fit();
            });
            // Only this cluster's jobs are replaced.
            self.jobs.retain(|j| j.cluster != scope);
            self.jobs.extend(jobs);
            self.job_ix = job_index::JobIndex::of(&self.jobs);
            self.active = self
                .jobs
                .iter()
                .filter(|j| j.state.is_active())
                .map(|j| ((j.cluster.clone(), j.id), derive::ActiveJob::of(j)))
                .collect();
            self.jobs_failed = self.jobs.iter().filter(|j| j.state.is_failure()).count() as u32;
            self.waits_at = None;
        }
        if let Some(mut queues) = inv.queues {
            queues.iter_mut().for_each(|q| q.cluster = scope.clone());
            self.queues.retain(|q| q.cluster != scope);
            self.queues.extend(queues);
        }
        if let Some(quotas) = inv.quotas {
            self.set_quotas(quotas);
        }
        if let Some(storage) = inv.storage {
            self.set_storage(storage);
        }
    }

    /// Replaces the nodes, keeping each node's and GPU's history by name, and keeping what
    /// other sources reported that the new listing leaves empty (see [`merge_node`]).
    fn set_nodes(&mut self, mut nodes: Vec<Node>) {
        let scope = self.scope.clone();
        for n in &mut nodes {
            n.cluster = scope.clone();
            if let Some(&o) = self.node_ix.get(&(scope.clone(), n.name.clone())) {
                merge_node(n, &self.nodes[o]);
            }
        }
        let old_gpus: Vec<usize> = self.nodes.iter().map(|n| n.gpus.len()).collect();
        // Other clusters' nodes stay, grouped in the order the clusters were first heard of.
        // They are moved, not copied: a copy of a 10,000-node cluster's nodes on every other
        // cluster's inventory held 52 MB more at the fleet's peak (heaptrack).
        if self.nodes.iter().any(|n| n.cluster != scope) {
            let rank = |c: &Text| self.clusters.iter().position(|x| x == c).unwrap_or(usize::MAX);
            let mut all = std::mem::take(&mut self.nodes);
            all.retain(|n| n.cluster != scope);
            all.sort_by_key(|n| rank(&n.cluster));
            let at = all.partition_point(|n| rank(&n.cluster) < rank(&scope));
            all.splice(at..at, nodes);
            nodes = all;
        }
        let same_layout = nodes.len() == old_gpus.len()
            && nodes.iter().enumerate().all(|(i, n)| {
                n.gpus.len() == old_gpus[i]
                    && self.node_ix.get(&(n.cluster.clone(), n.name.clone())) == Some(&i)
            });
        let old_ix = std::mem::take(&mut self.node_ix);
        let old_base = std::mem::take(&mut self.gpu_base);
        let mut base = 0;
        self.gpu_base = nodes
            .iter()
            .map(|n| {
                let b = base;
                base += n.gpus.len();
                b
            })
            .collect();
        if !same_layout {
            let old = std::mem::replace(&mut self.fleet, FleetHistory::new(nodes.len(), base));
            for (i, n) in nodes.iter().enumerate() {
                let Some(&o) = old_ix.get(&(n.cluster.clone(), n.name.clone())) else { continue };
                self.fleet.node_util.copy_column(i, &old.node_util, o);
                self.fleet.node_power_w.copy_column(i, &old.node_power_w, o);
                self.fleet.node_port_errors.copy_column(i, &old.node_port_errors, o);
                for k in 0..n.gpus.len().min(old_gpus.get(o).copied().unwrap_or(0)) {
                    self.fleet.gpu_util.copy_column(self.gpu_base[i] + k, &old.gpu_util, old_base[o] + k);
                    self.fleet.gpu_temp.copy_column(self.gpu_base[i] + k, &old.gpu_temp, old_base[o] + k);
                }
            }
            let f = &mut self.fleet;
            f.gpu_util.align_with(&old.gpu_util);
            f.gpu_temp.align_with(&old.gpu_temp);
            f.node_util.align_with(&old.node_util);
            f.node_power_w.align_with(&old.node_power_w);
            f.node_port_errors.align_with(&old.node_port_errors);
        }
        self.nodes = nodes;
        self.node_ix =
            self.nodes.iter().enumerate().map(|(i, n)| ((n.cluster.clone(), n.name.clone()), i)).collect();
        self.pair_hosts();
    }

    /// Replaces the quotas of the cluster being applied.
    fn set_quotas(&mut self, mut quotas: Vec<Quota>) {
        let scope = &self.scope;
        self.rollup_dirty = true;
        quotas.iter_mut().for_each(|q| q.cluster = scope.clone());
        self.quotas.retain(|q| q.cluster != *scope);
        self.quotas.extend(quotas);
    }

    fn set_storage(&mut self, storage: Vec<Filesystem>) {
        if storage.len() != self.storage_history.len() {
            self.storage_history = vec![StorageHistory::default(); storage.len()];
        }
        for (fs, h) in storage.iter().zip(&mut self.storage_history) {
            h.read_mbps.push((fs.read_bps / 1e6) as u32);
            h.write_mbps.push((fs.write_bps / 1e6) as u32);
            h.used.push((self.now, fs.used_bytes));
        }
        self.storage = storage;
    }

    /// Applies everything but the node samples. Those come back with the node index each one
    /// belongs to (`usize::MAX` when already applied or unknown), for the fleet pass to apply
    /// while it walks the nodes: each node's GPUs are touched once.
    fn apply_delta(&mut self, mut d: Delta) -> Samples {
        self.now = self.now.max(d.at);
        for id in &d.jobs_remove {
            self.remove_job((self.scope.clone(), *id));
        }
        if d.jobs_upsert.len() > 1024 {
            // A snapshot of many new jobs grows the list once, to its size, instead of doubling
            // through a realloc that holds both copies (137 MB at the peak for 200,000 jobs,
            // measured with heaptrack; docs/performance.md).
            let new =
                d.jobs_upsert.iter().filter(|j| !self.job_ix.contains(&self.jobs, &self.scope, j.id)).count();
            self.jobs.reserve_exact(new);
            self.job_ix.reserve(&self.jobs, new);
        }
        for mut job in std::mem::take(&mut d.jobs_upsert) {
            job.cluster = self.scope.clone();
            self.upsert_job(job);
        }
        if let Some(q) = d.quotas.take() {
            self.set_quotas(q);
        }
        if let Some(s) = d.storage.take() {
            self.set_storage(s);
        }
        let mut at = Vec::with_capacity(d.nodes.len());
        let (mut hint, mut last) = (0, None);
        // Telemetry from another source than the one that listed the nodes is compared with it.
        let judged = self.listed_by.get(&self.scope).is_some_and(|by| *by != d.source);
        for sample in &mut d.nodes {
            let i = match self.nodes.get(hint) {
                Some(n) if n.name == sample.node && n.cluster == self.scope => Some(hint),
                _ => self.node_ix.get(&(self.scope.clone(), sample.node.clone())).copied(),
            };
            let Some(i) = i else {
                tracing::debug!(node = %sample.node, "telemetry for an unknown node dropped");
                at.push(usize::MAX);
                continue;
            };
            hint = i + 1;
            if judged && sample.gpus.iter().any(|g| g.util.is_some()) {
                self.judge_telemetry(i, sample, d.at);
            }
            if last.is_some_and(|l| l >= i) {
                // Out of order: apply it now; the walk only takes ascending node indexes.
                apply_node_sample(&mut self.nodes[i], sample);
                at.push(usize::MAX);
            } else {
                last = Some(i);
                at.push(i);
            }
        }
        Samples { samples: d.nodes, at }
    }

    /// Compares one node's telemetry with the node as its scheduler lists it, before it is
    /// applied (the GPUs the scheduler does not have would be dropped there).
    fn judge_telemetry(&mut self, i: usize, sample: &NodeSample, at: Epoch) {
        let n = &self.nodes[i];
        let key = NodeKey { cluster: n.cluster.clone(), name: n.name.clone() };
        let (jobs, ix, scope) = (&self.jobs, &self.job_ix, &self.scope);
        let known = |j: JobId| ix.contains(jobs, scope, j);
        match disagree::judge(n, sample, at, known, self.disagreements.get(&key)) {
            Some(d) => {
                self.disagreements.insert(key.clone(), d);
            }
            None => {
                self.disagreements.remove(&key);
            }
        }
        let mut seen: smallvec::SmallVec<[JobId; 2]> =
            sample.gpus.iter().filter_map(|g| g.telemetry_job).collect();
        seen.sort_unstable();
        seen.dedup();
        if seen.is_empty() {
            self.telemetry_jobs.remove(&key);
        } else if self.telemetry_jobs.get(&key) != Some(&seen) {
            self.telemetry_jobs.insert(key, seen);
        }
    }

    /// Keeps the active set and the failed-job count in step with a job leaving the state.
    fn uncount_job(&mut self, id: (Text, JobId), state: JobState) {
        if state.is_failure() {
            self.jobs_failed = self.jobs_failed.saturating_sub(1);
        }
        if state.is_active() {
            self.active.remove(&id);
        }
    }

    /// … and with a job entering it.
    fn count_job(&mut self, job: &Job) {
        if job.state.is_failure() {
            self.jobs_failed += 1;
        }
        if job.state.is_active() {
            self.active.insert((job.cluster.clone(), job.id), derive::ActiveJob::of(job));
        }
    }

    fn upsert_job(&mut self, mut job: Job) {
        job.rank = None;
        // Kept for as long as the job is: at its length (a collected list has room for four).
        job.nodes.shrink_to_fit();
        let key = (job.cluster.clone(), job.id);
        match self.job_ix.get(&self.jobs, &key.0, key.1) {
            Some(i) => {
                self.uncount_job(key, self.jobs[i].state);
                self.count_job(&job);
                let old = std::mem::replace(&mut self.jobs[i], job);
                // Usage accumulates here; a backend that knows better (accounting) sends it.
                let j = &mut self.jobs[i];
                if j.gpu_seconds == 0.0 {
                    j.gpu_seconds = old.gpu_seconds;
                    j.useful_gpu_seconds = old.useful_gpu_seconds;
                }
            }
            None => {
                self.count_job(&job);
                self.jobs.push(job);
                self.job_ix.insert(&self.jobs, self.jobs.len() - 1);
            }
        }
    }

    fn remove_job(&mut self, key: (Text, JobId)) {
        if let Some(i) = self.job_ix.remove(&self.jobs, &key.0, key.1) {
            let last = self.jobs.len() - 1;
            let old = self.jobs.swap_remove(i);
            self.uncount_job(key, old.state);
            if i < last {
                self.job_ix.moved(&self.jobs, last, i);
            }
        }
    }

    /// Recomputes what is derived from the raw data after an update; `dts`: the seconds of
    /// telemetry per cluster that sent some (empty: no telemetry).
    fn rederive_with(&mut self, jobs_changed: bool, dts: &[(Text, f64)], samples: Samples) {
        let (running, pending) = (self.totals.jobs_running, self.totals.jobs_pending);
        let flags = fleet::pass(self, dts, samples);
        if jobs_changed || self.queue_stats.len() != self.queues.len() {
            if self.waits_at.is_none_or(|t| self.now - t >= 60) {
                self.waits = derive::wait_percentiles(self);
                self.waits_at = Some(self.now);
            }
            let (stats, running, pending) = derive::active_figures(self);
            self.queue_stats = stats;
            self.totals.jobs_running = running;
            self.totals.jobs_pending = pending;
        } else {
            self.totals.jobs_running = running;
            self.totals.jobs_pending = pending;
        }
        self.totals.jobs_failed = self.jobs_failed;
        if jobs_changed || self.rollup_dirty {
            self.roll_up();
        }
        self.track_twins();
        self.incidents = incidents::detect(self, &flags);
        self.sample_history();
    }

    /// The cluster-wide series hold one point per `history_step_s` of source time, however
    /// many updates arrive in it: the last update of a step sets its point, and steps with no
    /// update (an idle cluster sends none that change anything) repeat the point before.
    fn sample_history(&mut self) {
        let step = self.history_step_s.max(1);
        let bucket = self.now.div_euclid(step);
        let h = &mut self.history;
        let fresh = match self.history_bucket {
            Some(b) if bucket <= b => false,
            Some(b) => {
                let gap = (bucket - b - 1).clamp(0, history::HISTORY_LEN as i64);
                for _ in 0..gap {
                    h.repeat_last();
                }
                true
            }
            None => true,
        };
        self.history_bucket = Some(bucket.max(self.history_bucket.unwrap_or(bucket)));
        let t = &self.totals;
        let util = t.mean_util.map(|u| u.round() as u8);
        let point = (util, (t.power_w / 1000) as u32, t.jobs_running, t.jobs_pending, t.gpus_idle_alloc);
        if fresh { h.push(point) } else { h.set_last(point) }
    }

    /// Incident candidates without touching history or usage (for status changes).
    fn flag_scan(&self) -> fleet::Flags {
        fleet::flags_only(self)
    }
}

#[cfg(test)]
mod tests;

/// Fills what a node listing leaves empty from the previous record of the same node: a
/// scheduler lists nodes without GPU telemetry, ports or topology, which other sources
/// (Prometheus, NVML) report. Job ownership belongs to the listing and is not carried over.
pub(crate) fn merge_node(new: &mut Node, old: &Node) {
    if new.ports.is_empty() {
        new.ports = old.ports.clone();
    }
    if new.topology.is_none() {
        new.topology = old.topology.clone();
    }
    if new.driver.is_none() {
        new.driver = old.driver.clone();
    }
    if new.cuda.is_none() {
        new.cuda = old.cuda.clone();
    }
    for g in &mut new.gpus {
        let Some(o) = old.gpus.iter().find(|o| o.index == g.index) else { continue };
        macro_rules! keep {
            ($($f:ident),*) => { $( if g.$f.is_none() { g.$f = o.$f; } )* };
        }
        keep!(util, tensor_active, temp_c, power_w, mem_used_mib, xid);
        if g.ecc == Default::default() {
            g.ecc = o.ecc;
        }
        if !g.links.any() {
            g.links = o.links;
        }
        if g.uuid.is_empty() {
            g.uuid = o.uuid.clone();
        }
        if g.mem_total_mib == 0 {
            g.mem_total_mib = o.mem_total_mib;
        }
        if g.power_limit_w == 0 {
            g.power_limit_w = o.power_limit_w;
        }
        if g.mig.is_empty() {
            g.mig = o.mig.clone();
        }
        if g.local.is_none() {
            g.local = o.local.clone();
        }
        if g.processes.is_empty() {
            g.processes = o.processes.clone();
        }
        if g.job == o.job && g.idle_since.is_none() {
            g.idle_since = o.idle_since;
        }
    }
}

/// Node samples of a delta and the node each belongs to.
#[derive(Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub(crate) struct Samples {
    pub samples: Vec<NodeSample>,
    /// Node index per sample; `usize::MAX`: skip.
    pub at: Vec<usize>,
}

/// Applies one node's changes (`None` fields leave the node as it was).
pub(crate) fn apply_node_sample(node: &mut Node, s: &mut NodeSample) {
    if let Some(state) = s.state {
        node.state = state;
    }
    if let Some(reason) = s.reason.take() {
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
    if let Some(ports) = s.ports.take() {
        node.ports = ports;
    }
    if let Some(t) = s.topology.take() {
        node.topology = Some(t);
    }
    if let Some(procs) = s.processes.take() {
        for g in &mut node.gpus {
            g.processes = procs.iter().filter(|p| p.gpu == g.index).cloned().collect();
        }
    }
    if let Some(local) = s.local.take() {
        for g in &mut node.gpus {
            g.local = local.iter().find(|l| l.index == g.index).map(|l| Box::new(*l));
        }
    }
    for (n, g) in s.gpus.iter().enumerate() {
        // GPUs usually come in index order: try the same position first.
        let pos = match node.gpus.get(n) {
            Some(x) if x.index == g.index => Some(n),
            _ => node.gpus.iter().position(|x| x.index == g.index),
        };
        let Some(gpu) = pos.map(|p| &mut node.gpus[p]) else { continue };
        macro_rules! set {
            ($($f:ident),*) => { $( if let Some(v) = g.$f { gpu.$f = Some(v); } )* };
        }
        set!(util, tensor_active, temp_c, power_w, mem_used_mib, xid);
        if let Some(links) = g.links {
            gpu.links = links;
        }
        if let Some(ecc) = g.ecc {
            gpu.ecc = ecc;
            gpu.ecc_at = g.ecc_at;
        }
        if let Some(job) = g.job {
            if gpu.job != job {
                gpu.idle_since = None;
            }
            gpu.job = job;
        }
    }
}
