//! The update protocol: what every source (backend, acceptance store, history) sends to the
//! state, over one channel. It sits beside the domain model at the bottom of the layers, so
//! backends and the state both import it and neither imports the other.

use super::{
    EccCounts, Epoch, FabricPort, Filesystem, Job, JobId, Node, NodeReason, NodeState, Queue, Quota, Text,
    XidEvent,
};

/// Points kept in each history ring buffer (one per refresh, or per unit of time).
pub const HISTORY_LEN: usize = 120;

/// How a data source is doing, shown in the header.
#[derive(Debug, Clone, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct SourceStatus {
    /// The configured cluster the source serves; empty in a single-cluster console.
    #[serde(skip_serializing_if = "Text::is_empty")]
    pub cluster: Text,
    /// Short name shown in the header: `sim`, `slurm`, `prom`, `kube`, `nvml`.
    pub name: Text,
    /// The data is made up (the built-in simulator).
    pub simulated: bool,
    /// When the source last answered successfully.
    pub ok_at: Option<Epoch>,
    /// The last error, already phrased for an operator (what is wrong and how to fix it).
    pub error: Option<String>,
    /// Protocol detail, e.g. `v0.0.40` or `2.42.0`.
    pub detail: Option<Text>,
}

/// A file gpuplane keeps itself (the usage ledger, the ack store, the event journal, the audit
/// log) or a witness of the audit log's head: how its last write or read went. Listed beside
/// the sources; a failing one carries what is wrong and how to fix it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct StoreStatus {
    /// `ledger`, `acks`, `timeline`, `audit`, `witness/journal`, `witness/syslog`,
    /// `witness/command`, `witness/url`.
    pub name: Text,
    /// The file, socket or program (a URL without its credentials): where to look.
    pub path: String,
    /// What was done last: `write`, `read`, or `probe` (asked whether it can take a write,
    /// nothing written).
    #[borsh(serialize_with = "super::wire::write_static", deserialize_with = "super::wire::read_static")]
    pub op: &'static str,
    /// When that last succeeded.
    pub ok_at: Option<Epoch>,
    /// The last failure, phrased for an operator, until it succeeds again.
    pub error: Option<String>,
    /// What to do about the failure.
    pub fix: Option<String>,
    /// A note on a healthy store (`not probed: a POST would record a head`).
    pub note: Option<String>,
}

/// Everything a source knows about one plane, replacing what it reported before.
#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Inventory {
    /// The source's name (as in its [`SourceStatus`]); its freshness moves with each update.
    pub source: Text,
    pub cluster: Option<Text>,
    pub nodes: Option<Vec<Node>>,
    pub jobs: Option<Vec<Job>>,
    pub queues: Option<Vec<Queue>>,
    pub quotas: Option<Vec<Quota>>,
    pub storage: Option<Vec<Filesystem>>,
}

impl Inventory {
    /// Carries nothing but proof of life (a poll that found nothing new).
    pub fn is_empty(&self) -> bool {
        self.cluster.is_none()
            && self.nodes.is_none()
            && self.jobs.is_none()
            && self.queues.is_none()
            && self.quotas.is_none()
            && self.storage.is_none()
    }
}

/// Telemetry for one GPU; `None` leaves a field as it was.
#[derive(Debug, Clone, Copy, Default, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct GpuSample {
    pub index: u8,
    pub util: Option<u8>,
    pub tensor_active: Option<u8>,
    pub temp_c: Option<u8>,
    pub power_w: Option<u16>,
    pub mem_used_mib: Option<u32>,
    pub ecc: Option<EccCounts>,
    /// With `ecc`: when its double-bit count reached its value, as the source dates it.
    pub ecc_at: Option<Epoch>,
    pub links: Option<super::LinkErrors>,
    pub xid: Option<XidEvent>,
    /// `Some(None)`: released; `Some(Some(id))`: allocated to `id`.
    pub job: Option<Option<JobId>>,
    /// The scheduler job the telemetry's own labels name (dcgm-exporter's `hpc_job`) where
    /// another source owns the GPU: never applied, only compared with the scheduler's jobs.
    pub telemetry_job: Option<JobId>,
}

/// The GPU samples of one node.
pub type GpuSamples = smallvec::SmallVec<[GpuSample; 8]>;

/// Changes to one node; `None` leaves a field as it was.
#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct NodeSample {
    pub node: Text,
    pub state: Option<NodeState>,
    pub reason: Option<Option<NodeReason>>,
    pub gpu_alloc: Option<u32>,
    pub cpus_alloc: Option<u32>,
    pub mem_alloc_mib: Option<u64>,
    /// Inline for up to 8 GPUs: a delta for 10,000 nodes is one allocation, not 10,000.
    #[borsh(serialize_with = "super::wire::write_smallvec", deserialize_with = "super::wire::read_smallvec")]
    pub gpus: GpuSamples,
    /// Replaces the node's GPU topology when present (local NVML joined to a scheduler).
    pub topology: Option<std::sync::Arc<super::Topology>>,
    /// Replaces the processes of the node's GPUs when present.
    pub processes: Option<Vec<super::GpuProc>>,
    /// Replaces the local NVML readings of the node's GPUs (by index) when present.
    pub local: Option<Vec<super::GpuLocal>>,
    /// Replaces the node's ports when present.
    pub ports: Option<Vec<FabricPort>>,
}

/// Incremental changes since the last update, stamped with the source's clock.
#[derive(Debug, Clone, Default, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Delta {
    /// The source's name (as in its [`SourceStatus`]).
    pub source: Text,
    pub at: Epoch,
    pub nodes: Vec<NodeSample>,
    pub jobs_upsert: Vec<Job>,
    pub jobs_remove: Vec<JobId>,
    pub quotas: Option<Vec<Quota>>,
    pub storage: Option<Vec<Filesystem>>,
}

impl Delta {
    /// Carries nothing but proof of life.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
            && self.jobs_upsert.is_empty()
            && self.jobs_remove.is_empty()
            && self.quotas.is_none()
            && self.storage.is_none()
    }
}

/// What a backend sends.
#[derive(Debug, Clone, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub enum Update {
    Inventory {
        at: Epoch,
        inventory: Box<Inventory>,
    },
    Delta(Box<Delta>),
    Status(SourceStatus),
    /// How one of gpuplane's own files did at its last write or read (replaces what was said
    /// of the same name and path).
    Store(StoreStatus),
    /// Pod UID → `namespace/name` (Kubernetes), to name the pods that own GPU processes.
    PodNames(std::collections::HashMap<Text, Text>),
    /// The latest acceptance result, history and drift per node (from the run store; replaces
    /// what was there).
    Acceptance(Box<std::collections::BTreeMap<String, super::acceptance::NodeAcceptance>>),
    /// History of what the console shows in its detail pane, from a history source's range
    /// queries (replaces the previous one).
    History(Box<FocusHistory>),
    /// Every alert and silence an alert manager reports (replaces what it reported before).
    Alerts(Box<super::alert::AlertSnapshot>),
    /// Acknowledgements (the ack store) and node actions (the audit log) the incidents'
    /// lifecycle is derived from (replaces what was there).
    Handling(Box<super::triage::Handling>),
    /// Events read from the event journal for the Timeline view (replaces the last load).
    Timeline(Box<super::timeline::TimelineLoad>),
    /// One ended job's figures from Prometheus, asked for its summary in the ledger (the
    /// console hands them to the ledger; the state holds nothing of them).
    JobFigures(Box<super::jobstats::JobFigures>),
    /// An update from one configured cluster's source (a fleet console): what it carries
    /// belongs to `cluster` and replaces only that cluster's objects.
    Cluster {
        cluster: Text,
        update: Box<Update>,
    },
}

impl Update {
    /// How many jobs and nodes it carries (a large one replaces or adds many objects).
    pub fn objects(&self) -> usize {
        match self {
            Update::Inventory { inventory, .. } => {
                inventory.jobs.as_ref().map_or(0, Vec::len) + inventory.nodes.as_ref().map_or(0, Vec::len)
            }
            Update::Delta(d) => d.jobs_upsert.len() + d.jobs_remove.len(),
            Update::Cluster { update, .. } => update.objects(),
            _ => 0,
        }
    }
}

/// What the detail pane is showing, so a history source can fetch just that.
#[derive(Debug, Clone, PartialEq, Eq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub enum Focus {
    Node(Text),
    Gpu(Text, u8),
    /// A job and the GPUs it holds.
    Job(super::JobId, Vec<(Text, u8)>),
    /// The whole fleet (the GPU heatmap's strip).
    Fleet,
}

/// One series of a [`FocusHistory`]: a value (or a gap) per step.
#[derive(Debug, Clone, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct HistorySeries {
    /// `util`, `temp`, `power`.
    #[borsh(serialize_with = "super::wire::write_static", deserialize_with = "super::wire::read_static")]
    pub metric: &'static str,
    pub values: Vec<Option<f32>>,
}

/// Range-query history for one [`Focus`]: `start + k·step` for each value.
#[derive(Debug, Clone, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct FocusHistory {
    pub focus: Focus,
    pub start: Epoch,
    pub step: u32,
    pub series: Vec<HistorySeries>,
    /// When it was fetched.
    pub at: Epoch,
    /// For a job: what its nodes were doing over the same hour (storage, disk, CPU, InfiniBand).
    pub evidence: Option<Box<super::evidence::Evidence>>,
}

impl FocusHistory {
    pub fn series(&self, metric: &str) -> Option<&[Option<f32>]> {
        self.series.iter().find(|s| s.metric == metric).map(|s| s.values.as_slice())
    }
}
