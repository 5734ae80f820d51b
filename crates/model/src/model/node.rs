use super::{Epoch, FabricPort, Gpu, Text};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Scheduling state of a node, normalised across Slurm and Kubernetes.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum NodeState {
    /// Schedulable, nothing allocated.
    Idle,
    /// Some GPUs allocated.
    Mixed,
    /// Every GPU allocated.
    Allocated,
    /// Draining: no new work, running jobs finish.
    Draining,
    /// Drained: no new work, nothing running.
    Drained,
    /// Kubernetes cordon (unschedulable).
    Cordoned,
    /// In a maintenance reservation or marked for repair.
    Maintenance,
    /// Not responding / NotReady.
    Down,
    /// Down and taken out of service as well (Slurm `DOWN+DRAIN`; a cordoned NotReady
    /// Kubernetes node): when it answers again it stays out (drained) until resumed. Its
    /// incidents are mitigated, not open.
    #[serde(rename = "down+drain")]
    DownDrain,
    Unknown,
}

impl NodeState {
    pub fn label(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Mixed => "mixed",
            Self::Allocated => "alloc",
            Self::Draining => "draining",
            Self::Drained => "drained",
            Self::Cordoned => "cordoned",
            Self::Maintenance => "maint",
            Self::Down => "down",
            Self::DownDrain => "down+drain",
            Self::Unknown => "unknown",
        }
    }

    /// Whether the scheduler may place new work here.
    pub fn schedulable(self) -> bool {
        matches!(self, Self::Idle | Self::Mixed | Self::Allocated)
    }

    /// Whether this state needs an operator's attention.
    pub fn is_unhealthy(self) -> bool {
        matches!(self, Self::Down | Self::DownDrain | Self::Unknown)
    }

    /// Not responding, whether or not it is drained too.
    pub fn is_down(self) -> bool {
        matches!(self, Self::Down | Self::DownDrain)
    }
}

/// Why a node is not schedulable, who said so and when (Slurm `reason`, `reason_set_by_user`,
/// `reason_changed_at`; Kubernetes taints/annotations).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct NodeReason {
    pub text: Text,
    pub by: Text,
    pub at: Epoch,
}

/// How two devices inside a node are connected, as `nvidia-smi topo -m` prints it (and
/// serialised so: `"NV18"`, `"PIX"`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
pub enum LinkKind {
    /// The device itself.
    X,
    /// Bonded set of N NVLinks.
    Nv(u8),
    /// At most one PCIe bridge.
    Pix,
    /// Several PCIe bridges, no host bridge.
    Pxb,
    /// Through a PCIe host bridge (same CPU).
    Phb,
    /// Across host bridges within one NUMA node.
    Node,
    /// Across the SMP interconnect between NUMA nodes.
    Sys,
}

impl serde::Serialize for LinkKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.label())
    }
}

impl LinkKind {
    pub fn label(self) -> String {
        match self {
            Self::X => "X".into(),
            Self::Nv(n) => format!("NV{n}"),
            Self::Pix => "PIX".into(),
            Self::Pxb => "PXB".into(),
            Self::Phb => "PHB".into(),
            Self::Node => "NODE".into(),
            Self::Sys => "SYS".into(),
        }
    }

    /// The legend `nvidia-smi topo -m` prints under the matrix.
    pub const LEGEND: &'static [(&'static str, &'static str)] = &[
        ("X", "self"),
        ("SYS", "PCIe + SMP interconnect between NUMA nodes"),
        ("NODE", "PCIe + interconnect between host bridges in one NUMA node"),
        ("PHB", "PCIe + a PCIe host bridge (CPU)"),
        ("PXB", "multiple PCIe bridges, no host bridge"),
        ("PIX", "at most a single PCIe bridge"),
        ("NV#", "a bonded set of # NVLinks"),
    ];
}

/// A network adapter and how close it is to each GPU.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Nic {
    pub name: Text,
    /// Link from this NIC to GPU i.
    pub to_gpu: Vec<LinkKind>,
}

/// A node's GPU↔GPU matrix, NIC affinity and CPU/NUMA affinity.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Topology {
    /// `matrix[i][j]`: link from GPU i to GPU j; the diagonal is `X`.
    pub matrix: Vec<Vec<LinkKind>>,
    pub nics: Vec<Nic>,
    /// CPU affinity per GPU, e.g. `0-55,112-167`.
    pub cpu_affinity: Vec<Text>,
    pub numa: Vec<u8>,
}

impl Topology {
    /// Groups of GPUs that reach each other over NVLink (connected components).
    pub fn nvlink_islands(&self) -> Vec<Vec<usize>> {
        let n = self.matrix.len();
        let mut seen = vec![false; n];
        let mut islands = Vec::new();
        for start in 0..n {
            if seen[start] {
                continue;
            }
            let mut island = vec![start];
            seen[start] = true;
            let mut i = 0;
            while i < island.len() {
                let a = island[i];
                for (b, link) in self.matrix[a].iter().enumerate().take(n) {
                    if !seen[b] && matches!(link, LinkKind::Nv(_)) {
                        seen[b] = true;
                        island.push(b);
                    }
                }
                i += 1;
            }
            island.sort_unstable();
            islands.push(island);
        }
        islands
    }
}

/// The most GPUs one node is taken to have. Real nodes have 4–16; a scheduler answer that claims
/// more (a hostile or broken `nvidia.com/gpu: 4000000000`, `gpu:a100:999999999`) is cut here by
/// the backends before anything is built per GPU, and so are device indexes, MIG slices and the
/// sums over a node's GPUs.
pub const MAX_GPUS_PER_NODE: u32 = 64;

/// The label a backend puts on a node whose answer claimed more than [`MAX_GPUS_PER_NODE`]
/// GPUs: the claimed count, so the cut is shown (an incident) rather than silent.
pub const GPUS_CLAIMED_LABEL: &str = "gpuplane.io/gpus-claimed";

/// The most MIG slices kept per GPU of a node. An A100 or H100 holds at most 7; the device
/// plugin's counts are spread over the GPUs whatever the profile, so the cap leaves room (a
/// node's advertised slices of every profile together may exceed 7 per GPU) while a hostile
/// `nvidia.com/mig-1g.10gb: 4000000000` stops here.
pub const MAX_MIG_PER_GPU: u32 = 16;

/// A compute node with its GPUs and fabric ports.
#[derive(Debug, Clone, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Node {
    /// The configured cluster this node belongs to; empty in a single-cluster console (the
    /// state then names it by the cluster its scheduler reports).
    #[serde(skip_serializing_if = "Text::is_empty")]
    pub cluster: Text,
    pub name: Text,
    pub state: NodeState,
    pub reason: Option<NodeReason>,
    /// Slurm partition(s) or Kubernetes node pool.
    pub pool: Text,
    pub labels: BTreeMap<Text, Text>,
    pub cpus_total: u32,
    pub cpus_alloc: u32,
    pub mem_total_mib: u64,
    pub mem_alloc_mib: u64,
    /// GPU slots the scheduler knows about (may differ from `gpus.len()` when telemetry is missing).
    pub gpu_slots: u32,
    pub gpu_alloc: u32,
    pub gpus: Vec<Gpu>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<Arc<Topology>>,
    pub ports: Vec<FabricPort>,
    pub driver: Option<Text>,
    pub cuda: Option<Text>,
}

impl Node {
    /// The GPU model of the node (its first GPU, or the `gpu.product` label).
    pub fn gpu_model(&self) -> &str {
        self.gpus
            .first()
            .map(|g| g.model.as_str())
            .or_else(|| self.labels.get("nvidia.com/gpu.product").map(|s| s.as_str()))
            .unwrap_or("-")
    }

    /// Mean utilisation over GPUs that report one.
    pub fn mean_util(&self) -> Option<f32> {
        mean(self.gpus.iter().filter_map(|g| g.util))
    }

    pub fn max_temp(&self) -> Option<u8> {
        self.gpus.iter().filter_map(|g| g.temp_c).max()
    }

    pub fn power_w(&self) -> u32 {
        self.gpus.iter().filter_map(|g| g.power_w).map(u32::from).sum()
    }
}

pub(crate) fn mean(it: impl Iterator<Item = u8>) -> Option<f32> {
    let (mut n, mut sum) = (0u32, 0u32);
    for v in it {
        n += 1;
        sum += u32::from(v);
    }
    (n > 0).then(|| sum as f32 / n as f32)
}
