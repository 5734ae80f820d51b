//! Trimmed Kubernetes objects. Each type deserialises only the fields the console uses straight
//! from the wire (managed fields, env, volumes, most annotations are skipped by serde without
//! being allocated), so memory grows with what is shown, not with full objects. Each one is a
//! `kube::Resource` of its own, so the runtime's watcher lists and watches it directly.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::{Deserialize, Deserializer};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Metadata as it comes from the server, without `managedFields` and with only the annotations
/// a filter keeps.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct WireMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    #[serde(deserialize_with = "labels_kept")]
    labels: Option<BTreeMap<String, String>>,
    #[serde(deserialize_with = "annotations_kept")]
    annotations: Option<BTreeMap<String, String>>,
    owner_references: Option<Vec<OwnerReference>>,
}

/// Label prefixes and keys the console reads (GPU Feature Discovery, pools, owners, queues).
const LABEL_PREFIXES: &[&str] = &[
    "nvidia.com/",
    "gpuplane.io/",
    "kueue.x-k8s.io/",
    "jobset.sigs.k8s.io/",
    "leaderworkerset.sigs.k8s.io/",
    "ray.io/",
    "training.kubeflow.org/",
    "topology.kubernetes.io/",
];
const LABEL_KEYS: &[&str] = &[
    "node.kubernetes.io/instance-type",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "pod-template-hash",
    "user",
    "owner",
];

/// Labels the configuration names (pool, team and user labels), kept besides the built-in ones.
static EXTRA_LABELS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Keeps these labels too (the first call wins: the mapping is fixed for the process).
pub fn keep_labels(keys: Vec<String>) {
    let _ = EXTRA_LABELS.set(keys);
}

pub fn label_kept(k: &str) -> bool {
    LABEL_PREFIXES.iter().any(|p| k.starts_with(p))
        || LABEL_KEYS.contains(&k)
        || EXTRA_LABELS.get().is_some_and(|e| e.iter().any(|x| x == k))
}

/// A string map that allocates only the entries `keep` accepts (the rest are skipped unread).
fn filtered_map<'de, D: Deserializer<'de>>(
    d: D,
    keep: fn(&str) -> bool,
) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    struct V(fn(&str) -> bool);
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = Option<BTreeMap<String, String>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map of strings")
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some(k) = m.next_key::<Cow<'de, str>>()? {
                if (self.0)(&k) {
                    let v: String = m.next_value()?;
                    out.insert(k.into_owned(), v);
                } else {
                    m.next_value::<serde::de::IgnoredAny>()?;
                }
            }
            Ok(Some(out))
        }
    }
    d.deserialize_option(V(keep))
}

fn labels_kept<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    filtered_map(d, label_kept)
}

fn annotations_kept<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    filtered_map(d, ours)
}

impl WireMeta {
    fn into_meta(self, keep_annotation: fn(&str) -> bool) -> ObjectMeta {
        let annotations =
            self.annotations.map(|a| a.into_iter().filter(|(k, _)| keep_annotation(k)).collect());
        ObjectMeta {
            name: self.name,
            namespace: self.namespace,
            uid: self.uid,
            resource_version: self.resource_version,
            creation_timestamp: self.creation_timestamp,
            deletion_timestamp: self.deletion_timestamp,
            labels: self.labels,
            annotations,
            // At their length, and without the API version the console never reads (one
            // string fewer per reference).
            owner_references: self.owner_references.map(|mut v| {
                v.shrink_to_fit();
                v.iter_mut().for_each(|r| r.api_version = String::new());
                v
            }),
            ..Default::default()
        }
    }
}

/// Whether `new` says nothing `old` did not, apart from its resourceVersion (a heartbeat, or a
/// change only in fields the trimmed object does not keep).
pub fn unchanged<K: kube::Resource + PartialEq>(old: &K, new: &mut K) -> bool {
    let rv = std::mem::replace(&mut new.meta_mut().resource_version, old.meta().resource_version.clone());
    let same = old == &*new;
    new.meta_mut().resource_version = rv;
    same
}

/// Annotations gpuplane writes (who cordoned, why) and the static-pod marker.
pub fn ours(key: &str) -> bool {
    key.starts_with("gpuplane.io/") || key == MIRROR_ANNOTATION
}

pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

fn ready_only<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Condition>, D::Error> {
    let all: Option<Vec<Condition>> = Option::deserialize(d)?;
    let mut kept: Vec<Condition> =
        all.unwrap_or_default().into_iter().filter(|c| c.type_ == "Ready").collect();
    kept.shrink_to_fit();
    Ok(kept)
}

/// A list kept in the watch store, at its length: JSON gives no length ahead, so a list of one
/// grows to room for four (a pod's one container status took 600 bytes; heaptrack,
/// docs/performance.md).
fn exact<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    let mut v = Vec::<T>::deserialize(d)?;
    v.shrink_to_fit();
    Ok(v)
}

fn unscheduled<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Condition>, D::Error> {
    let all: Option<Vec<Condition>> = Option::deserialize(d)?;
    // Collected in place, the kept conditions would hold the whole list's allocation (about
    // 1 KB per pod, 20 MB for 20,000 pods, measured with heaptrack): shrunk to what is kept.
    let mut kept: Vec<Condition> = all
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.type_ == "PodScheduled" && c.status == "False")
        .collect();
    kept.shrink_to_fit();
    Ok(kept)
}

fn meta_ours<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    Ok(WireMeta::deserialize(d)?.into_meta(ours))
}

fn meta_none<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    Ok(WireMeta::deserialize(d)?.into_meta(|_| false))
}

/// Quantities the console reads: GPUs (`nvidia.com/*`), CPU and memory. A sorted vector
/// (litemap) of inline strings: one allocation of ~150 bytes for a container's three
/// quantities, where a `BTreeMap<String, String>` took a 540-byte node and six strings (27 MB
/// for 20,000 pods, measured with heaptrack; docs/performance.md).
pub type Resources = litemap::LiteMap<compact_str::CompactString, compact_str::CompactString>;

fn gpu_cpu_mem<'de, D: Deserializer<'de>>(d: D) -> Result<Resources, D::Error> {
    let all: Option<BTreeMap<String, serde_json::Value>> = Option::deserialize(d)?;
    Ok(exact_map(
        all.unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| k.starts_with("nvidia.com/") || k == "cpu" || k == "memory")
            .map(|(k, v)| {
                let s = match v {
                    serde_json::Value::String(s) => s.into(),
                    other => other.to_string().into(),
                };
                (k.into(), s)
            }),
    ))
}

/// Quantities from a map's sorted entries, in an allocation of their number (collected from a
/// filter, the vector kept room for four: 385 bytes a pod; heaptrack).
fn exact_map(
    sorted: impl Iterator<Item = (compact_str::CompactString, compact_str::CompactString)>,
) -> Resources {
    let kept: Vec<_> = sorted.collect();
    let mut m = Resources::with_capacity(kept.len());
    for (k, v) in kept {
        // Sorted (they come from a BTreeMap), so each one appends.
        let _ = m.try_append(k, v);
    }
    m
}

macro_rules! resource {
    ($ty:ident, $kind:literal, $group:literal, $version:literal, $plural:literal, $scope:ty) => {
        impl kube::Resource for $ty {
            type DynamicType = ();
            type Scope = $scope;

            fn kind(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($kind)
            }
            fn group(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($group)
            }
            fn version(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($version)
            }
            fn plural(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($plural)
            }
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

// ------------------------------------------------------------------------------------ nodes

/// The labels the console reads, in an allocation of their number (a sorted vector of inline
/// strings): an object's `BTreeMap<String, String>` took 2.9 KB a node and 525 bytes a pod
/// (25 MB at 5,000 nodes and 20,000 pods; heaptrack, docs/performance.md).
pub type Labels = litemap::LiteMap<compact_str::CompactString, compact_str::CompactString>;

fn exact_labels(m: Option<BTreeMap<String, String>>) -> Labels {
    exact_map(m.unwrap_or_default().into_iter().map(|(k, v)| (k.into(), v.into())))
}

/// A node as the store keeps it: its labels out of the metadata (which keeps the name, the
/// resource version the watch needs, and the annotations).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(from = "Wire<NodeSpec, NodeStatus>")]
pub struct SlimNode {
    pub metadata: ObjectMeta,
    pub labels: Labels,
    pub spec: NodeSpec,
    pub status: NodeStatus,
}

/// A node or a pod as it comes from the server; its kept labels then leave the metadata.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Wire<Spec, Status> {
    #[serde(deserialize_with = "meta_ours")]
    metadata: ObjectMeta,
    spec: Spec,
    status: Status,
}

impl<Spec, Status> Wire<Spec, Status> {
    /// (metadata without labels, the labels, spec, status).
    fn split(mut self) -> (ObjectMeta, Labels, Spec, Status) {
        let labels = exact_labels(self.metadata.labels.take());
        (self.metadata, labels, self.spec, self.status)
    }
}

impl From<Wire<NodeSpec, NodeStatus>> for SlimNode {
    fn from(w: Wire<NodeSpec, NodeStatus>) -> Self {
        let (metadata, labels, spec, status) = w.split();
        SlimNode { metadata, labels, spec, status }
    }
}
resource!(SlimNode, "Node", "", "v1", "nodes", k8s_openapi::ClusterResourceScope);

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSpec {
    pub unschedulable: bool,
    #[serde(deserialize_with = "exact")]
    pub taints: Vec<Taint>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Taint {
    pub key: String,
    pub value: Option<String>,
    pub effect: String,
    pub time_added: Option<Time>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeStatus {
    #[serde(deserialize_with = "gpu_cpu_mem")]
    pub capacity: Resources,
    #[serde(deserialize_with = "gpu_cpu_mem")]
    pub allocatable: Resources,
    /// Only the Ready condition (the others are dropped).
    #[serde(deserialize_with = "ready_only")]
    pub conditions: Vec<Condition>,
    pub node_info: NodeInfo,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeInfo {
    pub kubelet_version: String,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub last_transition_time: Option<Time>,
}

// ------------------------------------------------------------------------------------- pods

/// A pod as the store keeps it: its labels out of the metadata, as a node's.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(from = "Wire<PodSpec, PodStatus>")]
pub struct SlimPod {
    pub metadata: ObjectMeta,
    pub labels: Labels,
    pub spec: PodSpec,
    pub status: PodStatus,
}

impl From<Wire<PodSpec, PodStatus>> for SlimPod {
    fn from(w: Wire<PodSpec, PodStatus>) -> Self {
        let (metadata, labels, spec, status) = w.split();
        SlimPod { metadata, labels, spec, status }
    }
}
resource!(SlimPod, "Pod", "", "v1", "pods", k8s_openapi::NamespaceResourceScope);

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSpec {
    pub node_name: Option<String>,
    pub priority: Option<i32>,
    #[serde(deserialize_with = "exact")]
    pub containers: Vec<Container>,
    #[serde(deserialize_with = "exact")]
    pub volumes: Vec<Volume>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Container {
    pub resources: ContainerResources,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct ContainerResources {
    #[serde(deserialize_with = "gpu_cpu_mem")]
    pub requests: Resources,
    #[serde(deserialize_with = "gpu_cpu_mem")]
    pub limits: Resources,
}

/// Only whether the pod has node-local storage (drain refuses those without a flag).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Volume {
    pub empty_dir: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct PodStatus {
    pub phase: Option<String>,
    pub reason: Option<String>,
    pub start_time: Option<Time>,
    /// Only a `PodScheduled=False` condition (why a pod waits); the others are dropped.
    #[serde(deserialize_with = "unscheduled")]
    pub conditions: Vec<Condition>,
    #[serde(deserialize_with = "exact")]
    pub container_statuses: Vec<ContainerStatus>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerStatus {
    pub restart_count: u32,
    pub state: ContainerState,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct ContainerState {
    pub waiting: Option<Reasoned>,
    pub terminated: Option<Terminated>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Reasoned {
    pub reason: Option<String>,
    pub message: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Terminated {
    pub reason: Option<String>,
    pub exit_code: i32,
    pub finished_at: Option<Time>,
}

impl SlimPod {
    /// GPUs this pod asks for: `nvidia.com/gpu`, shared and MIG resources (requests, or
    /// limits when only those are set — extended resources must have both equal).
    pub fn gpus(&self) -> u32 {
        self.spec
            .containers
            .iter()
            .map(|c| {
                let r = if c.resources.requests.keys().any(|k| is_gpu_resource(k)) {
                    &c.resources.requests
                } else {
                    &c.resources.limits
                };
                r.iter()
                    .filter(|(k, _)| is_gpu_resource(k))
                    .map(|(_, v)| quantity_count(v))
                    .fold(0, u32::saturating_add)
            })
            .fold(0, u32::saturating_add)
    }

    /// Sum of a plain resource's requests (CPU in millicores, memory in MiB).
    pub fn request(&self, key: &str) -> u64 {
        self.spec
            .containers
            .iter()
            .filter_map(|c| c.resources.requests.get(key))
            .map(|v| if key == "cpu" { cpu_millis(v) } else { bytes(v) / (1 << 20) })
            .fold(0, u64::saturating_add)
    }

    pub fn phase(&self) -> &str {
        self.status.phase.as_deref().unwrap_or("Pending")
    }

    /// Finished pods hold nothing.
    pub fn terminal(&self) -> bool {
        matches!(self.phase(), "Succeeded" | "Failed")
    }
}

/// `nvidia.com/gpu`, `nvidia.com/gpu.shared`, `nvidia.com/mig-1g.10gb`.
pub fn is_gpu_resource(key: &str) -> bool {
    key == "nvidia.com/gpu" || key == "nvidia.com/gpu.shared" || key.starts_with("nvidia.com/mig-")
}

/// A whole-number quantity (`"8"`); anything unreadable counts 0.
pub fn quantity_count(q: &str) -> u32 {
    q.trim().parse::<u32>().unwrap_or(0)
}

/// CPU quantity (`"2"`, `"500m"`, `"1.5"`) in millicores.
pub fn cpu_millis(q: &str) -> u64 {
    let q = q.trim();
    if let Some(m) = q.strip_suffix('m') {
        return m.parse().unwrap_or(0);
    }
    q.parse::<f64>().map(|v| (v * 1000.0).max(0.0) as u64).unwrap_or(0)
}

/// Memory quantity (`"64Gi"`, `"1500M"`, `"1024"`) in bytes.
pub fn bytes(q: &str) -> u64 {
    let q = q.trim();
    let split = q.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(q.len());
    let (num, unit) = q.split_at(split);
    let n: f64 = num.parse().unwrap_or(0.0);
    let mult: f64 = match unit {
        "" => 1.0,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0f64.powi(4),
        "Pi" => 1024.0f64.powi(5),
        _ => 0.0,
    };
    (n * mult).max(0.0) as u64
}

// ------------------------------------------------------------------------------- namespaces

/// Only the labels (a configurable one names the team).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct SlimNamespace {
    #[serde(deserialize_with = "meta_none")]
    pub metadata: ObjectMeta,
}
resource!(SlimNamespace, "Namespace", "", "v1", "namespaces", k8s_openapi::ClusterResourceScope);

// --------------------------------------------------------------------------- resource quotas

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct SlimQuota {
    #[serde(deserialize_with = "meta_none")]
    pub metadata: ObjectMeta,
    pub status: QuotaStatus,
}
resource!(SlimQuota, "ResourceQuota", "", "v1", "resourcequotas", k8s_openapi::NamespaceResourceScope);

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct QuotaStatus {
    #[serde(deserialize_with = "gpu_quota")]
    pub hard: Resources,
    #[serde(deserialize_with = "gpu_quota")]
    pub used: Resources,
}

fn gpu_quota<'de, D: Deserializer<'de>>(d: D) -> Result<Resources, D::Error> {
    let all: Option<BTreeMap<String, String>> = Option::deserialize(d)?;
    let kept = all
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| k.strip_prefix("requests.").is_some_and(is_gpu_resource))
        .map(|(k, v)| (k.into(), v.into()));
    Ok(exact_map(kept))
}

impl SlimQuota {
    /// (hard, used) GPUs over every GPU resource the quota names.
    pub fn gpus(&self) -> Option<(u32, u32)> {
        if self.status.hard.is_empty() {
            return None;
        }
        let sum = |m: &Resources| m.values().map(|v| quantity_count(v)).fold(0, u32::saturating_add);
        Some((sum(&self.status.hard), sum(&self.status.used)))
    }
}

// ------------------------------------------------------------------------------ node events

/// A core/v1 Event about a node (watched with `involvedObject.kind=Node`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct SlimEvent {
    #[serde(deserialize_with = "meta_none")]
    pub metadata: ObjectMeta,
    pub involved_object: InvolvedObject,
    pub reason: Option<String>,
    pub message: Option<String>,
    #[serde(rename = "type")]
    pub type_: Option<String>,
    pub last_timestamp: Option<Time>,
    pub event_time: Option<serde_json::Value>,
    pub count: Option<u32>,
}
resource!(SlimEvent, "Event", "", "v1", "events", k8s_openapi::NamespaceResourceScope);

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct InvolvedObject {
    pub kind: Option<String>,
    pub name: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_keeps_what_is_used_and_drops_the_rest() {
        let pod: SlimPod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u1",
                "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{…}",
                                "kubernetes.io/config.mirror": "abc"},
                "labels": {"app": "x"}},
            "spec": {"nodeName": "n1", "containers": [
                {"name": "a", "env": [{"name": "X", "value": "1"}],
                 "resources": {"requests": {"nvidia.com/gpu": "4", "cpu": "500m", "memory": "2Gi",
                                            "ephemeral-storage": "1Gi"}}},
                {"name": "b", "resources": {"limits": {"nvidia.com/mig-1g.10gb": 2}}}],
                "volumes": [{"name": "scratch", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}}]},
            "status": {"phase": "Running"}
        }))
        .unwrap();
        assert_eq!(pod.gpus(), 6);
        assert_eq!(pod.request("cpu"), 500);
        assert_eq!(pod.request("memory"), 2048);
        assert_eq!(pod.metadata.annotations.as_ref().unwrap().len(), 1);
        assert!(pod.metadata.managed_fields.is_none());
        assert!(!pod.spec.containers[0].resources.requests.contains_key("ephemeral-storage"));
        assert_eq!(pod.spec.volumes.iter().filter(|v| v.empty_dir.is_some()).count(), 1);
    }

    /// What the store keeps of a pod is held at its size: lists and maps allocated for what
    /// they hold (JSON gives no lengths, so a list grew to room for four), the kept labels out
    /// of the metadata, owner references without their API version. With the rest of the diet
    /// the source's live heap at 5,000 nodes and 20,000 GPU pods went from 178 MB to 82 MB
    /// (heaptrack, docs/performance.md).
    #[test]
    fn a_kept_pod_is_held_at_its_size() {
        let pod: SlimPod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u1",
                "labels": {"app": "x", "kueue.x-k8s.io/queue-name": "q", "pod-template-hash": "abc"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs-abc",
                                     "uid": "u2", "controller": true}]},
            "spec": {"containers": [{"resources": {"requests": {"nvidia.com/gpu": "1", "cpu": "1", "memory": "1Gi",
                                                                  "ephemeral-storage": "1Gi"}}}]},
            "status": {"phase": "Pending", "containerStatuses": [{"restartCount": 2, "state": {}}],
                "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "False"},
                               {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
        }))
        .unwrap();
        assert!(pod.metadata.labels.is_none());
        let kept: Vec<(&str, &str)> = pod.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(kept, [("kueue.x-k8s.io/queue-name", "q"), ("pod-template-hash", "abc")]);
        let owners = pod.metadata.owner_references.as_ref().unwrap();
        assert_eq!(
            (owners[0].kind.as_str(), owners[0].name.as_str(), owners[0].api_version.as_str()),
            ("ReplicaSet", "rs-abc", "")
        );
        let req = &pod.spec.containers[0].resources.requests;
        assert_eq!(req.len(), 3);
        assert_eq!(pod.spec.containers.capacity(), 1);
        assert_eq!(pod.status.container_statuses.capacity(), 1);
        assert_eq!((pod.status.conditions.len(), pod.status.conditions.capacity()), (1, 1));
        assert_eq!(owners.capacity(), 1);
    }

    #[test]
    fn quantities() {
        assert_eq!(cpu_millis("2"), 2000);
        assert_eq!(cpu_millis("250m"), 250);
        assert_eq!(cpu_millis("1.5"), 1500);
        assert_eq!(bytes("64Gi"), 64 << 30);
        assert_eq!(bytes("1500M"), 1_500_000_000);
        assert_eq!(bytes("junk"), 0);
        assert_eq!(quantity_count("8"), 8);
        assert_eq!(quantity_count("x"), 0);
    }

    #[test]
    fn quota_counts_only_gpu_requests() {
        let q: SlimQuota = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "gpu", "namespace": "team-a"},
            "status": {"hard": {"requests.nvidia.com/gpu": "16", "pods": "100", "limits.nvidia.com/gpu": "16"},
                       "used": {"requests.nvidia.com/gpu": "12"}}
        }))
        .unwrap();
        assert_eq!(q.gpus(), Some((16, 12)));
    }
}
