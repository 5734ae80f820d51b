//! The watched objects → the domain model. Pure functions over the [`Store`], so the mapping
//! is tested without a server.

use super::kueue::{ClusterQueue, LocalQueue, Pending, WlState, Workload};
use super::slim::{self, SlimEvent, SlimNode, SlimPod, SlimQuota};
use crate::model::{
    Epoch, GPUS_CLAIMED_LABEL, Gpu, Job, JobId, JobState, MAX_GPUS_PER_NODE, MAX_MIG_PER_GPU, MigSlice, Node,
    NodeReason, NodeState, Queue, QueueKind, Quota, Text,
};
use crate::sanitize::sanitize;
use std::collections::{BTreeMap, HashMap};

/// How the cluster's labels map onto the console's notions.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    /// Node labels naming the pool, first present wins.
    pub pool_labels: Vec<String>,
    /// Namespace label naming the team (the namespace itself when absent).
    pub team_label: String,
    /// Pod labels naming the user who launched the work (the namespace when absent).
    pub user_labels: Vec<String>,
}

impl Default for Mapping {
    fn default() -> Self {
        Mapping {
            pool_labels: [
                "gpuplane.io/pool",
                "cloud.google.com/gke-nodepool",
                "eks.amazonaws.com/nodegroup",
                "karpenter.sh/nodepool",
                "kubernetes.azure.com/agentpool",
                "node.kubernetes.io/instance-type",
            ]
            .map(String::from)
            .to_vec(),
            team_label: "gpuplane.io/team".into(),
            user_labels: ["gpuplane.io/user", "user", "owner"].map(String::from).to_vec(),
        }
    }
}

/// What the watches have seen, trimmed. Pods are kept only when they ask for GPUs.
#[derive(Debug, Default)]
pub struct Store {
    pub nodes: HashMap<String, Box<SlimNode>>,
    /// `namespace/name` → pod, boxed: the table's 32,768 slots for 20,000 pods then take
    /// 1 MB instead of 19 MB (a `SlimPod` is 560 bytes; heaptrack, docs/performance.md).
    pub pods: HashMap<String, Box<SlimPod>>,
    /// Namespace → its team label value.
    pub teams: HashMap<String, Option<String>>,
    /// `namespace/name` → quota.
    pub quotas: HashMap<String, SlimQuota>,
    /// Node → its latest Warning event (reason, message, when).
    pub node_events: HashMap<String, (String, String, Epoch)>,
    pub cluster_queues: HashMap<String, ClusterQueue>,
    /// `namespace/name` → local queue.
    pub local_queues: HashMap<String, LocalQueue>,
    /// `namespace/name` → workload.
    pub workloads: HashMap<String, Workload>,
    /// `namespace/name` of a workload → its pending positions (visibility API).
    pub positions: HashMap<String, Pending>,
    /// The namespace label that names a team.
    pub team_label: String,
    /// Bumped when a pod is added or removed (pod names only change then).
    pub pod_set_version: u64,
    /// Something the node rows show changed (a node, or a pod's placement, requests or phase)
    /// since the nodes were last built. Starts set.
    pub nodes_dirty: bool,
}

pub fn key(ns: Option<&str>, name: Option<&str>) -> String {
    format!("{}/{}", ns.unwrap_or(""), name.unwrap_or(""))
}

fn epoch(t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> Epoch {
    t.map_or(0, |t| t.0.as_second())
}

fn text(s: &str) -> Text {
    sanitize(s).as_ref().into()
}

impl Store {
    /// Keeps a pod only when it asks for GPUs (a pod that stops asking is dropped). Returns
    /// whether anything the console shows changed.
    pub fn put_pod(&mut self, mut p: SlimPod) -> bool {
        let k = key(p.metadata.namespace.as_deref(), p.metadata.name.as_deref());
        if p.gpus() > 0 {
            if self.pods.get(&k).is_some_and(|old| slim::unchanged(&**old, &mut p)) {
                return false;
            }
            // A restart or a status message changes the job, not the node it runs on.
            let placed = |q: &SlimPod| (q.spec.clone(), q.terminal(), q.metadata.creation_timestamp.clone());
            let new_place = placed(&p);
            match self.pods.insert(k, Box::new(p)) {
                None => {
                    self.pod_set_version += 1;
                    self.nodes_dirty = true;
                }
                Some(old) => self.nodes_dirty |= placed(&old) != new_place,
            }
            true
        } else {
            let gone = self.pods.remove(&k).is_some();
            self.pod_set_version += u64::from(gone);
            self.nodes_dirty |= gone;
            gone
        }
    }

    /// Keeps a node's newest Warning event; returns whether it replaced anything.
    pub fn put_event(&mut self, e: &SlimEvent) -> bool {
        if e.involved_object.kind.as_deref() != Some("Node") || e.type_.as_deref() != Some("Warning") {
            return false;
        }
        let Some(node) = e.involved_object.name.clone() else { return false };
        let at = e
            .last_timestamp
            .as_ref()
            .map(|t| t.0.as_second())
            .or_else(|| {
                e.event_time
                    .as_ref()
                    .and_then(|v| v.as_str())
                    .and_then(|s| s.parse::<jiff::Timestamp>().ok())
                    .map(|t| t.as_second())
            })
            .unwrap_or_else(|| epoch(e.metadata.creation_timestamp.as_ref()));
        let ev = (e.reason.clone().unwrap_or_default(), e.message.clone().unwrap_or_default(), at);
        let newer = self.node_events.get(&node).is_none_or(|(_, _, t)| at >= *t);
        if newer && self.node_events.get(&node) != Some(&ev) {
            self.node_events.insert(node, ev);
            self.nodes_dirty = true;
            return true;
        }
        false
    }

    fn team(&self, ns: &str) -> Text {
        match self.teams.get(ns) {
            Some(Some(t)) => text(t),
            _ => text(ns),
        }
    }
}

/// The physical GPUs of a node: the GFD count label, else the device plugin's capacity divided
/// by the sharing replicas; never more than [`MAX_GPUS_PER_NODE`] (`nvidia.com/gpu: 4000000000`
/// is a broken or hostile answer, and everything after is built per GPU).
fn physical_gpus(n: &SlimNode) -> u32 {
    physical_gpus_claimed(n).min(MAX_GPUS_PER_NODE)
}

fn physical_gpus_claimed(n: &SlimNode) -> u32 {
    let label = |k: &str| n.labels.get(k);
    if let Some(c) = label("nvidia.com/gpu.count").map(|v| slim::quantity_count(v)).filter(|c| *c > 0) {
        return c;
    }
    let cap = n
        .status
        .capacity
        .get("nvidia.com/gpu")
        .or_else(|| n.status.capacity.get("nvidia.com/gpu.shared"))
        .map_or(0, |v| slim::quantity_count(v));
    let replicas = label("nvidia.com/gpu.replicas").map_or(1, |v| slim::quantity_count(v).max(1));
    cap / replicas
}

/// Millicores as whole cores, `u32::MAX` for more (a hostile `1e300` does not wrap).
fn cores(millis: u64) -> u32 {
    u32::try_from(millis / 1000).unwrap_or(u32::MAX)
}

/// GPUs the device plugin reports unhealthy (capacity − allocatable).
pub fn unhealthy_gpus(n: &SlimNode) -> u32 {
    let get = |m: &slim::Resources| m.get("nvidia.com/gpu").map_or(0, |v| slim::quantity_count(v));
    get(&n.status.capacity).saturating_sub(get(&n.status.allocatable))
}

fn node_ready(n: &SlimNode) -> Option<&slim::Condition> {
    n.status.conditions.iter().find(|c| c.type_ == "Ready")
}

/// Builds one node, with its GPUs assigned to the jobs of the pods on it (in creation order:
/// the API does not say which device a pod holds; Prometheus' pod labels do, when joined).
pub fn node(n: &SlimNode, pods: &[(&SlimPod, JobId)], store: &Store, m: &Mapping) -> Node {
    let labels = &n.labels;
    let name = n.metadata.name.clone().unwrap_or_default();
    let count = physical_gpus(n);
    let product = labels.get("nvidia.com/gpu.product").map(|s| text(s)).unwrap_or_default();
    let mem = labels.get("nvidia.com/gpu.memory").map_or(0, |v| slim::quantity_count(v));
    let mut gpus: Vec<Gpu> = (0..count)
        .map(|i| Gpu {
            index: i as u8,
            uuid: Text::default(),
            model: product.clone(),
            mem_total_mib: mem,
            mem_used_mib: None,
            util: None,
            tensor_active: None,
            temp_c: None,
            power_w: None,
            power_limit_w: 0,
            ecc: Default::default(),
            ecc_at: None,
            xid: None,
            mig: Vec::new(),
            job: None,
            processes: Vec::new(),
            local: None,
            links: Default::default(),
            idle_since: None,
        })
        .collect();
    // MIG (mixed strategy): the slices the device plugin advertises, spread over the GPUs, no
    // more than a GPU can hold (`nvidia.com/mig-1g.10gb: 4000000000` stops at the cap).
    let max_slices = gpus.len() * MAX_MIG_PER_GPU as usize;
    let mut slot = 0usize;
    for (res, q) in &n.status.capacity {
        let Some(profile) = res.strip_prefix("nvidia.com/mig-") else { continue };
        for _ in 0..slim::quantity_count(q) {
            if slot >= max_slices {
                break;
            }
            let g = slot % gpus.len();
            gpus[g].mig.push(MigSlice { profile: profile.into(), job: None });
            slot += 1;
        }
    }
    let (mut cpus_alloc, mut mem_alloc) = (0u64, 0u64);
    let mut next = 0usize;
    for (p, job) in pods {
        if p.terminal() {
            continue;
        }
        cpus_alloc = cpus_alloc.saturating_add(p.request("cpu"));
        mem_alloc = mem_alloc.saturating_add(p.request("memory"));
        for c in &p.spec.containers {
            let r = if c.resources.requests.keys().any(|k| slim::is_gpu_resource(k)) {
                &c.resources.requests
            } else {
                &c.resources.limits
            };
            for (res, q) in r {
                let want = slim::quantity_count(q);
                if let Some(profile) = res.strip_prefix("nvidia.com/mig-") {
                    let mut left = want;
                    for s in gpus.iter_mut().flat_map(|g| g.mig.iter_mut()) {
                        if left == 0 {
                            break;
                        }
                        if s.job.is_none() && s.profile == profile {
                            s.job = Some(*job);
                            left -= 1;
                        }
                    }
                } else if slim::is_gpu_resource(res) {
                    // A pod holds at most every GPU of the node, whatever it asks for.
                    for _ in 0..want.min(gpus.len() as u32) {
                        while next < gpus.len() && gpus[next].job.is_some() {
                            next += 1;
                        }
                        if let Some(g) = gpus.get_mut(next) {
                            g.job = Some(*job);
                        }
                    }
                }
            }
        }
    }
    for g in &mut gpus {
        if g.job.is_none() {
            g.job = g.mig.iter().find_map(|s| s.job);
        }
    }
    let gpu_alloc = gpus.iter().filter(|g| g.job.is_some()).count() as u32;
    let ready = node_ready(n);
    let not_ready = ready.is_none_or(|c| c.status != "True")
        || n.spec.taints.iter().any(|t| t.key == "node.kubernetes.io/unreachable");
    let ann = n.metadata.annotations.clone().unwrap_or_default();
    let state = if not_ready && n.spec.unschedulable {
        NodeState::DownDrain
    } else if not_ready {
        NodeState::Down
    } else if n.spec.unschedulable {
        NodeState::Cordoned
    } else if gpu_alloc == 0 {
        NodeState::Idle
    } else if gpu_alloc >= count {
        NodeState::Allocated
    } else {
        NodeState::Mixed
    };
    let reason = node_reason(n, state, &ann, store.node_events.get(&name), ready);
    let pool = m
        .pool_labels
        .iter()
        .find_map(|k| labels.get(k.as_str()))
        .map(|s| text(s))
        .unwrap_or_else(|| Text::from("default"));
    let mut keep: BTreeMap<Text, Text> = labels
        .iter()
        .filter(|(k, _)| {
            k.starts_with("nvidia.com/")
                || m.pool_labels.iter().any(|p| p == k.as_str())
                || k.starts_with("topology.kubernetes.io/")
                || k.as_str() == "node.kubernetes.io/instance-type"
        })
        .map(|(k, v)| (text(k), text(v)))
        .collect();
    let claimed = physical_gpus_claimed(n);
    if claimed > count {
        keep.insert(Text::from(GPUS_CLAIMED_LABEL), Text::from(claimed.to_string()));
    }
    let label = |k: &str| labels.get(k).map(|s| text(s));
    let driver = label("nvidia.com/cuda.driver-version.full").or_else(|| {
        let p = ["major", "minor", "rev"].map(|x| labels.get(format!("nvidia.com/cuda.driver.{x}").as_str()));
        match p {
            [Some(a), Some(b), Some(c)] => Some(text(&format!("{a}.{b}.{c}"))),
            _ => None,
        }
    });
    let cuda = label("nvidia.com/cuda.runtime-version.full").or_else(|| {
        match (labels.get("nvidia.com/cuda.runtime.major"), labels.get("nvidia.com/cuda.runtime.minor")) {
            (Some(a), Some(b)) => Some(text(&format!("{a}.{b}"))),
            _ => None,
        }
    });
    Node {
        cluster: Default::default(),
        name: text(&name),
        state,
        reason,
        pool,
        labels: keep,
        cpus_total: cores(n.status.allocatable.get("cpu").map_or(0, |v| slim::cpu_millis(v))),
        cpus_alloc: cores(cpus_alloc),
        mem_total_mib: n.status.allocatable.get("memory").map_or(0, |v| slim::bytes(v) >> 20),
        mem_alloc_mib: mem_alloc,
        gpu_slots: count,
        gpu_alloc,
        gpus,
        topology: None,
        ports: Vec::new(),
        driver,
        cuda,
    }
}

fn node_reason(
    n: &SlimNode,
    state: NodeState,
    ann: &BTreeMap<String, String>,
    event: Option<&(String, String, Epoch)>,
    ready: Option<&slim::Condition>,
) -> Option<NodeReason> {
    let r = |t: String, by: &str, at: Epoch| Some(NodeReason { text: text(&t), by: text(by), at });
    match state {
        NodeState::Down | NodeState::DownDrain => {
            let (why, at) = match ready {
                Some(c) => (
                    format!(
                        "NotReady: {}",
                        c.message
                            .as_deref()
                            .or(c.reason.as_deref())
                            .unwrap_or("the kubelet stopped posting status")
                    ),
                    epoch(c.last_transition_time.as_ref()),
                ),
                None => ("NotReady: no Ready condition".to_string(), 0),
            };
            r(why, "kubelet", at)
        }
        NodeState::Cordoned => {
            let taint_at = n
                .spec
                .taints
                .iter()
                .find(|t| t.key == "node.kubernetes.io/unschedulable")
                .and_then(|t| t.time_added.as_ref())
                .map_or(0, |t| t.0.as_second());
            match ann.get("gpuplane.io/reason") {
                Some(why) => r(
                    why.clone(),
                    ann.get("gpuplane.io/by").map_or("-", String::as_str),
                    ann.get("gpuplane.io/at").and_then(|s| s.parse().ok()).unwrap_or(taint_at),
                ),
                None => r("cordoned (spec.unschedulable)".into(), "-", taint_at),
            }
        }
        _ => {
            let bad = unhealthy_gpus(n);
            if bad > 0 {
                return r(
                    format!("{bad} GPU(s) unhealthy: the device plugin reports allocatable below capacity"),
                    "device-plugin",
                    0,
                );
            }
            let taint = n.spec.taints.iter().find(|t| {
                (t.effect == "NoSchedule" || t.effect == "NoExecute")
                    && !t.key.starts_with("nvidia.com/")
                    && t.key != "node.kubernetes.io/unschedulable"
            });
            if let Some(t) = taint {
                return r(
                    format!("taint {}={}:{}", t.key, t.value.as_deref().unwrap_or(""), t.effect),
                    "-",
                    t.time_added.as_ref().map_or(0, |t| t.0.as_second()),
                );
            }
            event.and_then(|(reason, msg, at)| r(format!("event {reason}: {msg}"), "event", *at))
        }
    }
}

/// The object that owns a pod's work, as the console groups it: (kind, name).
pub fn owner_of(p: &SlimPod) -> (String, String) {
    let label = |k: &str| p.labels.get(k).map(|v| v.to_string());
    if let Some(js) = label("jobset.sigs.k8s.io/jobset-name") {
        return ("JobSet".into(), js);
    }
    if let Some(lws) = label("leaderworkerset.sigs.k8s.io/name") {
        return ("LeaderWorkerSet".into(), lws);
    }
    if let (Some(kind), Some(name)) =
        (label("ray.io/originated-from-crd"), label("ray.io/originated-from-cr-name"))
    {
        return (kind, name);
    }
    let ctrl = p
        .metadata
        .owner_references
        .as_ref()
        .and_then(|o| o.iter().find(|r| r.controller == Some(true)).or_else(|| o.first()));
    match ctrl {
        Some(r) if r.kind == "ReplicaSet" => match label("pod-template-hash") {
            Some(h) => match r.name.strip_suffix(&format!("-{h}")) {
                Some(d) => ("Deployment".into(), d.to_string()),
                None => ("ReplicaSet".into(), r.name.clone()),
            },
            None => ("ReplicaSet".into(), r.name.clone()),
        },
        Some(r) => (r.kind.clone(), r.name.clone()),
        None => ("Pod".into(), p.metadata.name.clone().unwrap_or_default()),
    }
}

/// A stable id for `namespace/kind/name` (see [`ids::job_id`](crate::backend::ids::job_id)).
pub fn job_id(ns: &str, kind: &str, name: &str) -> JobId {
    crate::backend::ids::job_id(&[ns, kind, name])
}

/// Builds everything, nodes included.
pub fn build(store: &Store, m: &Mapping) -> Built {
    build_with(store, m, true)
}

/// Work grouped by owner: the pods of a Job/JobSet/… and its Kueue workload.
#[derive(Default)]
struct Group<'a> {
    ns: &'a str,
    kind: String,
    name: String,
    pods: Vec<&'a SlimPod>,
    workload: Option<&'a Workload>,
}

/// Everything the backend reports, from the store.
pub struct Built {
    pub nodes: Vec<Node>,
    pub jobs: Vec<Job>,
    pub queues: Vec<Queue>,
    pub quotas: Vec<Quota>,
    /// Job id → (namespace, owner kind, owner name), for actions on jobs.
    pub owners: HashMap<JobId, (String, String, String)>,
}

/// Pod UID → `namespace/name` for the pods kept (those with GPUs: the ones that own GPU
/// processes NVML reports).
pub fn pod_names(store: &Store) -> HashMap<Text, Text> {
    store.pods.iter().filter_map(|(k, p)| Some((text(p.metadata.uid.as_deref()?), text(k)))).collect()
}

/// Builds the model; the nodes only when `with_nodes` (they are the costly part and most events
/// leave them as they were).
pub fn build_with(store: &Store, m: &Mapping, with_nodes: bool) -> Built {
    let t0 = std::time::Instant::now();
    // Group pods and workloads by owner.
    let mut groups: HashMap<(String, String, String), Group> = HashMap::new();
    for p in store.pods.values().map(|p| &**p) {
        let ns = p.metadata.namespace.as_deref().unwrap_or("");
        let (kind, name) = owner_of(p);
        let g = groups.entry((ns.to_string(), kind.clone(), name.clone())).or_insert_with(|| Group {
            ns,
            kind,
            name,
            ..Default::default()
        });
        g.pods.push(p);
    }
    // A workload names the object Kueue manages; its pods may be grouped under a higher owner
    // (a JobSet's child Job): follow the pods' direct controllers to find their group.
    let mut direct: HashMap<(&str, &str, &str), (String, String, String)> = HashMap::new();
    for p in store.pods.values() {
        let ns = p.metadata.namespace.as_deref().unwrap_or("");
        if let Some(r) =
            p.metadata.owner_references.as_ref().and_then(|o| o.iter().find(|r| r.controller == Some(true)))
        {
            let (kind, name) = owner_of(p);
            direct.insert((ns, r.kind.as_str(), r.name.as_str()), (ns.to_string(), kind, name));
        }
    }
    for w in store.workloads.values() {
        let (kind, name) = w.owner.clone().unwrap_or_else(|| ("Workload".into(), w.name.clone()));
        let gk = direct
            .get(&(w.namespace.as_str(), kind.as_str(), name.as_str()))
            .cloned()
            .unwrap_or_else(|| (w.namespace.clone(), kind.clone(), name.clone()));
        let g =
            groups.entry(gk).or_insert_with(|| Group { ns: &w.namespace, kind, name, ..Default::default() });
        g.workload = Some(w);
    }
    let lq_to_cq: HashMap<String, &str> = store
        .local_queues
        .values()
        .map(|l| (key(Some(&l.namespace), Some(&l.name)), l.cluster_queue.as_str()))
        .collect();
    let mut jobs = Vec::with_capacity(groups.len());
    let mut pod_job: HashMap<*const SlimPod, JobId> = HashMap::with_capacity(store.pods.len());
    let mut cq_pending: HashMap<String, u32> = HashMap::new();
    let mut owners = HashMap::with_capacity(groups.len());
    for g in groups.values() {
        let id = job_id(g.ns, &g.kind, &g.name);
        owners.insert(id, (g.ns.to_string(), g.kind.clone(), g.name.clone()));
        for p in &g.pods {
            pod_job.insert(*p as *const SlimPod, id);
        }
        let j = job(g, id, store, m, &lq_to_cq);
        if j.state == JobState::Pending && !j.queue.is_empty() {
            let sum = cq_pending.entry(j.queue.to_string()).or_default();
            *sum = sum.saturating_add(j.gpus);
        }
        jobs.push(j);
    }
    jobs.sort_by_key(|j| j.id);
    let t_jobs = t0.elapsed();
    // Pods per node, in creation order, for GPU assignment.
    let mut by_node: HashMap<&str, Vec<(&SlimPod, JobId)>> = HashMap::new();
    for p in store.pods.values().map(|p| &**p) {
        if let Some(n) = p.spec.node_name.as_deref() {
            by_node
                .entry(n)
                .or_default()
                .push((p, pod_job.get(&(p as *const SlimPod)).copied().unwrap_or(0)));
        }
    }
    for v in by_node.values_mut() {
        v.sort_by(|a, b| {
            (epoch(a.0.metadata.creation_timestamp.as_ref()), &a.0.metadata.name)
                .cmp(&(epoch(b.0.metadata.creation_timestamp.as_ref()), &b.0.metadata.name))
        });
    }
    let t_bynode = t0.elapsed();
    let mut nodes: Vec<Node> = if with_nodes {
        store
            .nodes
            .values()
            .map(|n| {
                let name = n.metadata.name.as_deref().unwrap_or("");
                node(n, by_node.get(name).map_or(&[][..], Vec::as_slice), store, m)
            })
            .collect()
    } else {
        Vec::new()
    };
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    // A job's GPU model: its first node's product label.
    for j in &mut jobs {
        let product = j
            .nodes
            .first()
            .and_then(|n| store.nodes.get(n.as_str()))
            .and_then(|n| n.labels.get("nvidia.com/gpu.product"))
            .filter(|p| !p.is_empty());
        if let Some(p) = product {
            j.gpu_model = Some(text(p));
        }
    }
    let mut queues: Vec<Queue> = store
        .cluster_queues
        .values()
        .map(|c| Queue {
            cluster: Default::default(),
            name: text(&c.name),
            kind: QueueKind::ClusterQueue,
            parent: c.cohort.as_deref().map(text),
            up: c.active,
            nodes: 0,
            gpus: c.nominal,
            max_time_s: None,
        })
        .chain(store.local_queues.values().map(|l| Queue {
            cluster: Default::default(),
            name: text(&key(Some(&l.namespace), Some(&l.name))),
            kind: QueueKind::LocalQueue,
            parent: Some(text(&l.cluster_queue)),
            up: l.active,
            nodes: 0,
            gpus: 0,
            max_time_s: None,
        }))
        .collect();
    queues.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    let mut quotas: Vec<Quota> = store
        .cluster_queues
        .values()
        .map(|c| Quota {
            cluster: Default::default(),
            team: text(&c.name),
            gpu_quota: c.nominal,
            gpu_used: c.used,
            borrowed: c.borrowed,
            lendable: c.lending_limit.unwrap_or(c.nominal).min(c.nominal),
            gpu_pending: cq_pending.get(&c.name).copied().unwrap_or(0),
        })
        .collect();
    // ResourceQuotas, summed per team (a team may span namespaces).
    let mut rq: BTreeMap<Text, (u32, u32)> = BTreeMap::new();
    for q in store.quotas.values() {
        if let Some((hard, used)) = q.gpus() {
            let e = rq.entry(store.team(q.metadata.namespace.as_deref().unwrap_or(""))).or_default();
            e.0 = e.0.saturating_add(hard);
            e.1 = e.1.saturating_add(used);
        }
    }
    for (team, (hard, used)) in rq {
        if quotas.iter().any(|q| q.team == team) {
            continue;
        }
        quotas.push(Quota {
            cluster: Default::default(),
            team,
            gpu_quota: hard,
            gpu_used: used,
            borrowed: 0,
            lendable: 0,
            gpu_pending: 0,
        });
    }
    quotas.sort_by(|a, b| a.team.cmp(&b.team));
    tracing::debug!(?t_jobs, ?t_bynode, total = ?t0.elapsed(), with_nodes, "kube build phases");
    Built { nodes, jobs, queues, quotas, owners }
}

fn job(g: &Group, id: JobId, store: &Store, m: &Mapping, lq_to_cq: &HashMap<String, &str>) -> Job {
    let live: Vec<&&SlimPod> = g.pods.iter().filter(|p| !p.terminal()).collect();
    let phase = |ph: &str| g.pods.iter().filter(|p| p.phase() == ph).count();
    let (running, pending, failed, succeeded) =
        (phase("Running"), phase("Pending"), phase("Failed"), phase("Succeeded"));
    let w = g.workload;
    let state = if running > 0 {
        JobState::Running
    } else if pending > 0 {
        JobState::Pending
    } else if let Some(w) = w.filter(|_| g.pods.is_empty()) {
        match w.state {
            WlState::Succeeded => JobState::Completed,
            WlState::Failed => JobState::Failed,
            WlState::Evicted => JobState::Preempted,
            _ => JobState::Pending,
        }
    } else if failed > 0 {
        JobState::Failed
    } else if succeeded > 0 {
        JobState::Completed
    } else {
        JobState::Pending
    };
    let first = g.pods.first();
    let label = |k: &str| first.and_then(|p| p.labels.get(k));
    let user = m.user_labels.iter().find_map(|k| label(k)).map_or_else(|| text(g.ns), |u| text(u));
    let lq = w
        .map(|w| w.queue.clone())
        .filter(|q| !q.is_empty())
        .or_else(|| label("kueue.x-k8s.io/queue-name").map(|q| q.to_string()));
    let queue = match (&lq, w.and_then(|w| w.cluster_queue.clone())) {
        (_, Some(cq)) => text(&cq),
        (Some(lq), None) => lq_to_cq.get(&key(Some(g.ns), Some(lq))).map_or_else(|| text(lq), |cq| text(cq)),
        (None, None) => Text::default(),
    };
    let pod_gpus = live.iter().map(|p| p.gpus()).fold(0, u32::saturating_add);
    let gpus = if pod_gpus > 0 { pod_gpus } else { w.map_or(0, |w| w.gpus) };
    let mut nodes: Vec<Text> = live.iter().filter_map(|p| p.spec.node_name.as_deref()).map(text).collect();
    nodes.sort();
    nodes.dedup();
    let submit = g
        .pods
        .iter()
        .map(|p| epoch(p.metadata.creation_timestamp.as_ref()))
        .chain(w.map(|w| w.created))
        .filter(|t| *t > 0)
        .min()
        .unwrap_or(0);
    let start = g
        .pods
        .iter()
        .filter(|p| p.phase() != "Pending")
        .filter_map(|p| p.status.start_time.as_ref())
        .map(|t| t.0.as_second())
        .min();
    let end = (!state.is_active())
        .then(|| {
            g.pods
                .iter()
                .flat_map(|p| &p.status.container_statuses)
                .filter_map(|c| c.state.terminated.as_ref()?.finished_at.as_ref())
                .map(|t| t.0.as_second())
                .max()
        })
        .flatten();
    let waiting = g
        .pods
        .iter()
        .flat_map(|p| &p.status.container_statuses)
        .filter_map(|c| c.state.waiting.as_ref()?.reason.clone())
        .find(|r| r != "ContainerCreating" && r != "PodInitializing");
    let unschedulable = g.pods.iter().find_map(|p| {
        let c = p.status.conditions.iter().find(|c| c.type_ == "PodScheduled" && c.status == "False")?;
        Some(format!(
            "{}: {}",
            c.reason.as_deref().unwrap_or("Unschedulable"),
            c.message.as_deref().unwrap_or("no node fits")
        ))
    });
    let pending_reason = if state == JobState::Pending {
        match w {
            Some(w) if g.pods.is_empty() => {
                Some(match (w.state, w.reason.as_deref(), w.message.as_deref()) {
                    (WlState::Reserved, _, _) => "QuotaReserved".to_string(),
                    (WlState::Admitted, _, _) => "admitted by Kueue, pods starting".to_string(),
                    (_, Some("Inadmissible"), _) => "Inadmissible".into(),
                    (_, _, Some(msg)) if msg.contains("insufficient unused quota") => {
                        format!("InsufficientQuota: {msg}")
                    }
                    (_, _, Some(msg)) => msg.to_string(),
                    (_, Some(r), None) => r.to_string(),
                    _ => "WaitingForScheduling".into(),
                })
            }
            _ => waiting.clone().or(unschedulable),
        }
    } else {
        None
    };
    let exit_reason = g
        .pods
        .iter()
        .flat_map(|p| &p.status.container_statuses)
        .filter_map(|c| c.state.terminated.as_ref())
        .find(|t| t.exit_code != 0)
        .map(|t| format!("{} (exit {})", t.reason.as_deref().unwrap_or("Error"), t.exit_code))
        .or_else(|| if state == JobState::Running { waiting } else { None })
        .or_else(|| w.filter(|w| w.state == WlState::Evicted).and_then(|w| w.reason.clone()));
    let position = w
        .and_then(|w| store.positions.get(&key(Some(&w.namespace), Some(&w.name))))
        .map(|p| p.in_cluster_queue + 1);
    let priority =
        g.pods.iter().filter_map(|p| p.spec.priority).chain(w.map(|w| w.priority)).max().unwrap_or(0).max(0)
            as u32;
    Job {
        cluster: Default::default(),
        id,
        name: text(&g.name),
        user,
        account: store.team(g.ns),
        queue,
        state,
        pending_reason: pending_reason.map(|r| text(&r)),
        priority,
        submit,
        start: if state == JobState::Pending { None } else { start },
        end,
        est_start: None,
        gpus,
        gpu_model: None,
        nodes,
        exit_reason: exit_reason.map(|r| text(&r)),
        retries: g
            .pods
            .iter()
            .flat_map(|p| &p.status.container_statuses)
            .map(|c| c.restart_count)
            .fold(0, u32::saturating_add),
        position: if state == JobState::Pending { position } else { None },
        rank: None,
        gpu_seconds: 0.0,
        useful_gpu_seconds: 0.0,
        time_limit: None,
        no_time_limit: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node_obj(v: serde_json::Value) -> SlimNode {
        serde_json::from_value(v).unwrap()
    }

    fn pod_obj(v: serde_json::Value) -> SlimPod {
        serde_json::from_value(v).unwrap()
    }

    fn gpu_node(name: &str) -> serde_json::Value {
        json!({"metadata": {"name": name, "labels": {
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
                "nvidia.com/gpu.memory": "81559", "nvidia.com/cuda.driver-version.full": "550.107.02",
                "nvidia.com/cuda.runtime-version.full": "12.5", "gpuplane.io/pool": "h100", "irrelevant": "x"}},
            "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
            "status": {"capacity": {"nvidia.com/gpu": "8", "cpu": "224", "memory": "2Ti"},
                       "allocatable": {"nvidia.com/gpu": "8", "cpu": "220", "memory": "1900Gi"},
                       "conditions": [{"type": "Ready", "status": "True"}]}})
    }

    fn gpu_pod(
        ns: &str,
        name: &str,
        node: Option<&str>,
        gpus: u32,
        owner: (&str, &str),
        phase: &str,
    ) -> serde_json::Value {
        json!({"metadata": {"name": name, "namespace": ns, "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"pod-template-hash": "abc12"},
                "ownerReferences": [{"apiVersion": "v1", "kind": owner.0, "name": owner.1, "uid": "u", "controller": true}]},
            "spec": {"nodeName": node, "priority": 100, "containers": [{"resources": {"requests": {"nvidia.com/gpu": gpus.to_string(), "cpu": "8"}}}]},
            "status": {"phase": phase, "startTime": "2026-01-01T00:01:00Z"}})
    }

    #[test]
    fn nodes_gpus_and_jobs_from_pods() {
        let mut s = Store::default();
        s.nodes.insert("n1".into(), Box::new(node_obj(gpu_node("n1"))));
        s.put_pod(pod_obj(gpu_pod("team-a", "train-0", Some("n1"), 4, ("Job", "train"), "Running")));
        s.put_pod(pod_obj(gpu_pod("team-a", "train-1", Some("n1"), 2, ("Job", "train"), "Running")));
        s.put_pod(pod_obj(gpu_pod(
            "serve",
            "llm-abc12-xyz",
            Some("n1"),
            1,
            ("ReplicaSet", "llm-abc12"),
            "Running",
        )));
        // A pod without GPUs never enters the store.
        s.put_pod(pod_obj(gpu_pod("team-a", "cpu-only", Some("n1"), 0, ("Job", "etl"), "Running")));
        s.teams.insert("team-a".into(), Some("vision".into()));
        let b = build(&s, &Mapping::default());
        assert_eq!(s.pods.len(), 3);
        let n = &b.nodes[0];
        assert_eq!((n.gpu_slots, n.gpu_alloc, n.state), (8, 7, NodeState::Mixed));
        assert_eq!(n.pool, "h100");
        assert_eq!(n.driver.as_deref(), Some("550.107.02"));
        assert_eq!(n.cuda.as_deref(), Some("12.5"));
        assert_eq!(n.gpus[0].mem_total_mib, 81559);
        assert_eq!((n.cpus_total, n.cpus_alloc), (220, 24));
        assert!(!n.labels.contains_key("irrelevant"));
        assert_eq!(b.jobs.len(), 2);
        let train = b.jobs.iter().find(|j| j.name == "train").unwrap();
        assert_eq!((train.gpus, train.state, train.account.as_str()), (6, JobState::Running, "vision"));
        assert_eq!(train.nodes, vec![Text::from("n1")]);
        assert_eq!(train.gpu_model.as_deref(), Some("NVIDIA-H100-80GB-HBM3"));
        let llm = b.jobs.iter().find(|j| j.name == "llm").unwrap();
        assert_eq!(llm.account, "serve");
        assert_eq!(n.gpus.iter().filter(|g| g.job == Some(train.id)).count(), 6);
        assert_eq!(n.gpus.iter().filter(|g| g.job == Some(llm.id)).count(), 1);
    }

    #[test]
    fn node_states_and_reasons() {
        let mut down = gpu_node("d");
        down["status"]["conditions"] = json!([{"type": "Ready", "status": "False", "message": "Kubelet stopped posting node status.", "lastTransitionTime": "2026-01-01T00:00:00Z"}]);
        let mut cordoned = gpu_node("c");
        cordoned["spec"]["unschedulable"] = json!(true);
        cordoned["metadata"]["annotations"] = json!({"gpuplane.io/reason": "XID 79 on GPU3", "gpuplane.io/by": "alice", "gpuplane.io/at": "1767225600"});
        let mut sick = gpu_node("s");
        sick["status"]["allocatable"]["nvidia.com/gpu"] = json!("6");
        let s = Store::default();
        let m = Mapping::default();
        let d = node(&node_obj(down), &[], &s, &m);
        assert_eq!(d.state, NodeState::Down);
        assert!(d.reason.unwrap().text.contains("Kubelet stopped"));
        let c = node(&node_obj(cordoned), &[], &s, &m);
        assert_eq!(c.state, NodeState::Cordoned);
        let r = c.reason.unwrap();
        assert_eq!((r.text.as_str(), r.by.as_str(), r.at), ("XID 79 on GPU3", "alice", 1_767_225_600));
        let k = node(&node_obj(sick), &[], &s, &m);
        assert_eq!(k.state, NodeState::Idle);
        // Cordoned while NotReady: down, and out of service once it is back.
        let mut both = gpu_node("b");
        both["status"]["conditions"] = json!([{"type": "Ready", "status": "Unknown", "message": "Kubelet stopped posting node status.", "lastTransitionTime": "2026-01-01T00:00:00Z"}]);
        both["spec"]["unschedulable"] = json!(true);
        let b = node(&node_obj(both), &[], &s, &m);
        assert_eq!(b.state, NodeState::DownDrain);
        assert!(b.reason.unwrap().text.contains("Kubelet stopped"));
        assert!(k.reason.unwrap().text.starts_with("2 GPU(s) unhealthy"));
    }

    #[test]
    fn mig_and_shared_nodes() {
        let mut mig = gpu_node("m");
        mig["status"]["capacity"] = json!({"nvidia.com/mig-1g.10gb": "14", "nvidia.com/mig-3g.40gb": "2"});
        mig["metadata"]["labels"]["nvidia.com/gpu.count"] = json!("2");
        let mut p = gpu_pod("a", "mig-pod", Some("m"), 0, ("Job", "small"), "Running");
        p["spec"]["containers"] = json!([{"resources": {"limits": {"nvidia.com/mig-1g.10gb": "3"}}}]);
        let mut s = Store::default();
        s.put_pod(pod_obj(p));
        s.nodes.insert("m".into(), Box::new(node_obj(mig)));
        let b = build(&s, &Mapping::default());
        let n = &b.nodes[0];
        assert_eq!(n.gpus.len(), 2);
        assert_eq!(n.gpus.iter().map(|g| g.mig.len()).sum::<usize>(), 16);
        assert_eq!(n.gpus.iter().flat_map(|g| &g.mig).filter(|s| s.job.is_some()).count(), 3);
        assert_eq!(b.jobs[0].gpus, 3);

        let mut shared = gpu_node("sh");
        shared["metadata"]["labels"].as_object_mut().unwrap().remove("nvidia.com/gpu.count");
        shared["metadata"]["labels"]["nvidia.com/gpu.replicas"] = json!("10");
        shared["status"]["capacity"]["nvidia.com/gpu"] = json!("80");
        assert_eq!(physical_gpus(&node_obj(shared)), 8);
    }

    /// A node claiming four billion GPUs and as many MIG slices, and pods asking for four
    /// billion GPUs each: the mapping builds 64 GPUs with 7 slices each. Without the caps it
    /// pushes four billion slices (over 100 GB) and walks 12 billion requests; with them the
    /// work is bounded by `MAX_GPUS_PER_NODE` and `MAX_MIG_PER_GPU`, whatever the numbers say.
    #[test]
    fn hostile_gpu_and_mig_counts_are_capped_before_anything_is_built() {
        let huge = "4000000000";
        let mut n = gpu_node("big");
        n["metadata"]["labels"].as_object_mut().unwrap().remove("nvidia.com/gpu.count");
        n["status"]["capacity"] = json!({"nvidia.com/gpu": huge, "nvidia.com/mig-1g.10gb": huge,
            "nvidia.com/mig-3g.40gb": huge, "cpu": "1e300"});
        let mut s = Store::default();
        s.nodes.insert("big".into(), Box::new(node_obj(n)));
        for i in 0..3 {
            let mut p = gpu_pod("a", &format!("p{i}"), Some("big"), 0, ("Job", &format!("j{i}")), "Running");
            p["spec"]["containers"] = json!([
                {"resources": {"requests": {"nvidia.com/gpu": huge, "cpu": "1e300"}}},
                {"resources": {"requests": {"nvidia.com/gpu": huge, "cpu": "1e300"}}}]);
            s.put_pod(pod_obj(p));
        }
        let b = build(&s, &Mapping::default());
        let n = &b.nodes[0];
        assert_eq!((n.gpu_slots, n.gpus.len()), (MAX_GPUS_PER_NODE, MAX_GPUS_PER_NODE as usize));
        assert_eq!(n.labels.get(GPUS_CLAIMED_LABEL).map(|c| c.to_string()), Some(huge.to_string()));
        let slices: Vec<usize> = n.gpus.iter().map(|g| g.mig.len()).collect();
        assert!(slices.iter().all(|&k| k == MAX_MIG_PER_GPU as usize), "{slices:?}");
        // The first pod takes every GPU; the sums saturate instead of overflowing.
        assert_eq!(n.gpu_alloc, MAX_GPUS_PER_NODE);
        assert_eq!(n.cpus_alloc, u32::MAX);
        assert!(n.gpus[0].job.is_some() && n.gpus.iter().all(|g| g.job == n.gpus[0].job));
        assert!(
            b.jobs.iter().all(|j| j.gpus == u32::MAX),
            "{:?}",
            b.jobs.iter().map(|j| j.gpus).collect::<Vec<_>>()
        );
    }

    #[test]
    fn owners_group_pods_like_an_operator_would() {
        let mut js = gpu_pod("a", "p", None, 1, ("Job", "trainer-workers-0"), "Pending");
        js["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] = json!("trainer");
        assert_eq!(owner_of(&pod_obj(js)), ("JobSet".into(), "trainer".into()));
        let dep = gpu_pod("a", "p", None, 1, ("ReplicaSet", "vllm-abc12"), "Running");
        assert_eq!(owner_of(&pod_obj(dep)), ("Deployment".into(), "vllm".into()));
        let pt = gpu_pod("a", "p", None, 1, ("PyTorchJob", "bert"), "Running");
        assert_eq!(owner_of(&pod_obj(pt)), ("PyTorchJob".into(), "bert".into()));
        let mut bare = gpu_pod("a", "lonely", None, 1, ("Job", "x"), "Running");
        bare["metadata"]["ownerReferences"] = json!([]);
        assert_eq!(owner_of(&pod_obj(bare)), ("Pod".into(), "lonely".into()));
        assert_ne!(job_id("a", "Job", "x"), job_id("b", "Job", "x"));
        assert!(job_id("a", "Job", "x") >= 1 << 63);
        // FNV-1a of `namespace/kind/name` with the top bit set: kept and joined across runs.
        assert_eq!(job_id("a", "Job", "x"), 0x8483_bbb9_9f45_b86f);
        assert_eq!(job_id("ml", "JobSet", "llama-70b"), 0xef61_99f5_a101_87f4);
    }

    #[test]
    fn kueue_workloads_become_queued_jobs_with_positions() {
        let mut s = Store::default();
        s.cluster_queues.insert(
            "research".into(),
            ClusterQueue {
                name: "research".into(),
                nominal: 64,
                used: 60,
                lending_limit: Some(16),
                active: true,
                ..Default::default()
            },
        );
        s.local_queues.insert(
            "team-a/lq".into(),
            LocalQueue {
                namespace: "team-a".into(),
                name: "lq".into(),
                cluster_queue: "research".into(),
                active: true,
            },
        );
        let wl = |name: &str, owner: &str| {
            Workload {
            namespace: "team-a".into(),
            name: name.into(),
            queue: "lq".into(),
            owner: Some(("Job".into(), owner.into())),
            priority: 5,
            gpus: 8,
            state: WlState::Pending,
            reason: Some("Pending".into()),
            message: Some("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 4 more needed".into()),
            cluster_queue: None,
            created: 100,
        }
        };
        s.workloads.insert("team-a/w1".into(), wl("w1", "big"));
        s.positions.insert(
            "team-a/w1".into(),
            Pending { namespace: "team-a".into(), name: "w1".into(), in_cluster_queue: 2, in_local_queue: 0 },
        );
        let b = build(&s, &Mapping::default());
        let j = &b.jobs[0];
        assert_eq!(
            (j.state, j.gpus, j.queue.as_str(), j.position),
            (JobState::Pending, 8, "research", Some(3))
        );
        assert!(j.pending_reason.as_deref().unwrap().starts_with("InsufficientQuota"));
        assert_eq!(b.queues.len(), 2);
        assert_eq!(b.queues[0].kind, QueueKind::ClusterQueue);
        let q = &b.quotas[0];
        assert_eq!((q.gpu_quota, q.gpu_used, q.lendable, q.gpu_pending), (64, 60, 16, 8));
    }

    #[test]
    fn a_workload_joins_the_pods_of_the_job_it_manages() {
        let mut s = Store::default();
        let mut p = gpu_pod("a", "w-0", Some("n1"), 4, ("Job", "trainer-workers-0"), "Running");
        p["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] = json!("trainer");
        s.put_pod(pod_obj(p));
        s.workloads.insert(
            "a/wl".into(),
            Workload {
                namespace: "a".into(),
                name: "wl".into(),
                queue: "lq".into(),
                owner: Some(("Job".into(), "trainer-workers-0".into())),
                priority: 0,
                gpus: 4,
                state: WlState::Admitted,
                reason: None,
                message: None,
                cluster_queue: Some("cq".into()),
                created: 1,
            },
        );
        let b = build(&s, &Mapping::default());
        assert_eq!(b.jobs.len(), 1);
        assert_eq!(
            (b.jobs[0].name.as_str(), b.jobs[0].queue.as_str(), b.jobs[0].state),
            ("trainer", "cq", JobState::Running)
        );
    }

    #[test]
    fn only_changes_that_move_work_between_nodes_rebuild_the_nodes() {
        let mut s = Store::default();
        let p = gpu_pod("a", "p", Some("n1"), 4, ("Job", "j"), "Running");
        assert!(s.put_pod(pod_obj(p.clone())));
        assert!(std::mem::take(&mut s.nodes_dirty), "a new pod");
        let mut restarted = p.clone();
        restarted["status"]["containerStatuses"] = json!([{"restartCount": 3}]);
        restarted["metadata"]["resourceVersion"] = json!("99");
        assert!(s.put_pod(pod_obj(restarted.clone())), "the job changed");
        assert!(!s.nodes_dirty, "a restart leaves the nodes as they were");
        assert!(!s.put_pod(pod_obj(restarted.clone())), "the same again changes nothing");
        let mut done = restarted;
        done["status"]["phase"] = json!("Succeeded");
        assert!(s.put_pod(pod_obj(done)));
        assert!(std::mem::take(&mut s.nodes_dirty), "a finished pod frees its GPUs");
        let b = build_with(&s, &Mapping::default(), false);
        assert!(b.nodes.is_empty() && b.jobs.len() == 1);
    }

    #[test]
    fn hostile_text_is_cleaned() {
        let mut s = Store::default();
        let p = gpu_pod("a", "p", Some("n1"), 1, ("Job", "evil\u{1b}]0;pwned\u{7}job"), "Running");
        s.put_pod(pod_obj(p));
        let b = build(&s, &Mapping::default());
        assert!(!b.jobs[0].name.contains('\u{1b}'));
    }
}
