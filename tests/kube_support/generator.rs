//! Cluster contents: a hand-built `Cluster::small()` for precise tests and a seeded,
//! realistic GPU cluster generator for scale.

use super::util::ts;
use serde_json::{Value, json};

/// Which Kueue API versions are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KueueMode {
    #[default]
    None,
    V1beta1,
    V1beta2,
    Both,
}

impl std::str::FromStr for KueueMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "none" => KueueMode::None,
            "v1beta1" => KueueMode::V1beta1,
            "v1beta2" => KueueMode::V1beta2,
            "both" => KueueMode::Both,
            _ => return Err(format!("kueue: none|v1beta1|v1beta2|both, not {s}")),
        })
    }
}

/// What a fake serves: objects (any served kind, with apiVersion/kind), pod logs, Kueue mode.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    pub objects: Vec<Value>,
    /// More objects, already serialized as JSON (what the generator emits for pods, to keep
    /// memory low at 50k pods).
    pub serialized: Vec<Vec<u8>>,
    pub pod_logs: Vec<((String, String), String)>,
    pub kueue: KueueMode,
}

/// Generator parameters.
#[derive(Debug, Clone)]
pub struct GenOpts {
    pub nodes: usize,
    /// All pods, DaemonSet pods included (as far as they fit).
    pub pods: usize,
    /// Pods requesting `nvidia.com/gpu`.
    pub gpu_pods: usize,
    pub kueue: KueueMode,
    pub seed: u64,
    /// Namespace label naming the owning team.
    pub team_label: String,
    /// Node label naming the pool.
    pub pool_label: String,
}

impl Default for GenOpts {
    fn default() -> Self {
        GenOpts {
            nodes: 20,
            pods: 200,
            gpu_pods: 80,
            kueue: KueueMode::None,
            seed: 1,
            team_label: "gpuplane.io/team".into(),
            pool_label: "gpuplane.io/pool".into(),
        }
    }
}

pub const H100: &str = "NVIDIA-H100-80GB-HBM3";
pub const A100: &str = "NVIDIA-A100-SXM4-80GB";

/// Node shape.
#[derive(Debug, Clone)]
pub struct NodeShape {
    pub name: String,
    pub pool: String,
    /// None = CPU node.
    pub product: Option<&'static str>,
    pub gpus: i64,
    pub allocatable_gpus: i64,
    /// MIG mixed: (profile, count) pairs.
    pub mig: Vec<(&'static str, i64)>,
    /// Time-slicing replicas per GPU (1 = not shared).
    pub replicas: i64,
    pub ready: bool,
    pub cordoned: bool,
    pub control_plane: bool,
    pub created: i64,
    pub uid: String,
    pub ip: String,
}

/// Builds a Node object.
pub fn node(n: &NodeShape, pool_label: &str) -> Value {
    let mut labels = json!({
        "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux",
        pool_label: n.pool,
        "topology.kubernetes.io/zone": "zone-a",
    });
    let mut capacity = json!({"cpu": "192", "memory": "2113334144Ki", "pods": "110", "ephemeral-storage": "3750000000Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0"});
    let mut allocatable = json!({"cpu": "191500m", "memory": "2099999999Ki", "pods": "110", "ephemeral-storage": "3456000000Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0"});
    let mut taints = Vec::new();
    if n.control_plane {
        labels["node-role.kubernetes.io/control-plane"] = json!("");
        taints.push(json!({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}));
    }
    labels["node.kubernetes.io/instance-type"] = json!(match n.product {
        Some(H100) => "p5.48xlarge",
        Some(_) => "p4de.24xlarge",
        None => "m7i.48xlarge",
    });
    if let Some(p) = n.product {
        let (family, mem, machine, major) = if p == H100 {
            ("hopper", "81559", "DGX-H100", "9")
        } else {
            ("ampere", "81920", "DGX-A100", "8")
        };
        let product = if n.replicas > 1 { format!("{p}-SHARED") } else { p.to_string() };
        for (k, v) in [
            ("nvidia.com/gpu.present", "true".to_string()),
            ("nvidia.com/gpu.product", product),
            ("nvidia.com/gpu.count", n.gpus.to_string()),
            ("nvidia.com/gpu.memory", mem.to_string()),
            ("nvidia.com/gpu.family", family.to_string()),
            ("nvidia.com/gpu.machine", machine.to_string()),
            ("nvidia.com/gpu.compute.major", major.to_string()),
            ("nvidia.com/gpu.compute.minor", "0".to_string()),
            ("nvidia.com/gpu.mode", "compute".to_string()),
            ("nvidia.com/gpu.replicas", n.replicas.to_string()),
            (
                "nvidia.com/gpu.sharing-strategy",
                if n.replicas > 1 { "time-slicing" } else { "none" }.to_string(),
            ),
            ("nvidia.com/cuda.driver-version.full", "550.107.02".to_string()),
            ("nvidia.com/cuda.driver-version.major", "550".to_string()),
            ("nvidia.com/cuda.driver-version.minor", "107".to_string()),
            ("nvidia.com/cuda.driver-version.revision", "02".to_string()),
            ("nvidia.com/cuda.runtime-version.full", "12.5".to_string()),
            ("nvidia.com/cuda.runtime-version.major", "12".to_string()),
            ("nvidia.com/cuda.runtime-version.minor", "5".to_string()),
            ("nvidia.com/mig.capable", (p == A100 || p == H100).to_string()),
            ("nvidia.com/mps.capable", "false".to_string()),
        ] {
            labels[k] = json!(v);
        }
        taints.push(json!({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}));
        if n.mig.is_empty() {
            capacity["nvidia.com/gpu"] = json!((n.gpus * n.replicas).to_string());
            allocatable["nvidia.com/gpu"] = json!((n.allocatable_gpus * n.replicas).to_string());
        } else {
            labels["nvidia.com/mig.strategy"] = json!("mixed");
            labels["nvidia.com/mig.config"] = json!("all-balanced");
            labels["nvidia.com/mig.config.state"] = json!("success");
            capacity["nvidia.com/gpu"] = json!("0");
            allocatable["nvidia.com/gpu"] = json!("0");
            for (prof, c) in &n.mig {
                labels[format!("nvidia.com/{prof}.count")] = json!(c.to_string());
                capacity[format!("nvidia.com/{prof}")] = json!(c.to_string());
                allocatable[format!("nvidia.com/{prof}")] = json!(c.to_string());
            }
        }
    }
    let created = ts(n.created);
    let hb = ts(super::util::now_secs() - 7);
    let cond = |t: &str, s: &str, r: &str, m: &str| json!({"type": t, "status": s, "reason": r, "message": m, "lastHeartbeatTime": hb, "lastTransitionTime": created});
    let ready = if n.ready {
        cond("Ready", "True", "KubeletReady", "kubelet is posting ready status")
    } else {
        cond("Ready", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
    };
    if !n.ready {
        taints.push(
            json!({"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": created}),
        );
        taints.push(
            json!({"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": created}),
        );
    }
    if n.cordoned {
        taints.push(
            json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": created}),
        );
    }
    let mut spec = json!({"podCIDR": format!("10.244.{}.0/24", n.ip.rsplit('.').next().unwrap_or("0")), "providerID": format!("aws:///zone-a/i-{}", &n.uid[..17].replace('-', ""))});
    if !taints.is_empty() {
        spec["taints"] = json!(taints);
    }
    if n.cordoned {
        spec["unschedulable"] = json!(true);
    }
    let mut annotations = json!({
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        "csi.volume.kubernetes.io/nodeid": format!("{{\"ebs.csi.aws.com\":\"i-{}\"}}", &n.uid[..8]),
    });
    if n.product.is_some() {
        annotations["nfd.node.kubernetes.io/feature-labels"] =
            json!("nvidia.com/gpu.present,nvidia.com/gpu.product");
    }
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": n.name, "uid": n.uid, "creationTimestamp": created, "labels": labels, "annotations": annotations},
        "spec": spec,
        "status": {
            "capacity": capacity, "allocatable": allocatable,
            "conditions": [
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                ready,
            ],
            "addresses": [{"type": "InternalIP", "address": n.ip}, {"type": "Hostname", "address": n.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": n.uid.replace('-', ""), "systemUUID": n.uid, "bootID": n.uid,
                "kernelVersion": "5.15.0-1063-nvidia", "osImage": "Ubuntu 22.04.4 LTS",
                "containerRuntimeVersion": "containerd://1.7.27", "kubeletVersion": "v1.34.1",
                "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64",
            },
        },
    })
}

/// Owner of a pod: (apiVersion, kind, name, uid).
pub type Owner = (String, String, String, String);

/// Pod shape.
#[derive(Debug, Clone, Default)]
pub struct PodShape {
    pub ns: String,
    pub name: String,
    pub uid: String,
    pub node: Option<String>,
    pub owner: Option<Owner>,
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
    pub image: String,
    /// (resource, count) requested = limit, e.g. ("nvidia.com/gpu", 8).
    pub gpu: Option<(String, i64)>,
    /// Running / Pending / Succeeded / Failed.
    pub phase: String,
    /// For Pending on a node: container waiting reason (ContainerCreating, ImagePullBackOff).
    pub waiting: Option<String>,
    pub restarts: i64,
    pub empty_dir: bool,
    pub grace: i64,
    pub created: i64,
    pub ip: String,
}

/// Builds a Pod object of realistic size (managedFields, env, volumes, status).
pub fn pod(p: &PodShape) -> Value {
    let created = ts(p.created);
    let started = ts(p.created + 4);
    let mut labels = serde_json::Map::new();
    for (k, v) in &p.labels {
        labels.insert(k.clone(), json!(v));
    }
    let mut md = json!({"name": p.name, "namespace": p.ns, "uid": p.uid, "creationTimestamp": created, "labels": labels});
    if !p.annotations.is_empty() {
        let mut a = serde_json::Map::new();
        for (k, v) in &p.annotations {
            a.insert(k.clone(), json!(v));
        }
        md["annotations"] = Value::Object(a);
    }
    if let Some((av, kind, name, uid)) = &p.owner {
        md["ownerReferences"] = json!([{"apiVersion": av, "kind": kind, "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": true}]);
    }
    let mut resources = json!({"requests": {"cpu": "4", "memory": "32Gi"}, "limits": {"memory": "32Gi"}});
    if let Some((r, n)) = &p.gpu {
        resources = json!({"requests": {"cpu": format!("{}", 12 * n), "memory": format!("{}Gi", 100 * n), r: n.to_string()},
                            "limits": {"cpu": format!("{}", 12 * n), "memory": format!("{}Gi", 100 * n), r: n.to_string()}});
    }
    let sa_vol = "kube-api-access-".to_string() + &p.uid[..5];
    let mut volumes = vec![json!({"name": sa_vol, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}})];
    let mut mounts = vec![
        json!({"name": sa_vol, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}),
    ];
    if p.empty_dir {
        volumes.push(json!({"name": "scratch", "emptyDir": {"sizeLimit": "200Gi"}}));
        mounts.push(json!({"name": "scratch", "mountPath": "/scratch"}));
    }
    if p.gpu.is_some() {
        volumes.push(json!({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}}));
        mounts.push(json!({"name": "dshm", "mountPath": "/dev/shm"}));
    }
    let env = json!([
        {"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"},
        {"name": "NCCL_IB_HCA", "value": "mlx5"}, {"name": "TORCH_NCCL_ASYNC_ERROR_HANDLING", "value": "1"},
        {"name": "PYTHONUNBUFFERED", "value": "1"}, {"name": "HF_HOME", "value": "/scratch/hf"},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
    ]);
    let mut tolerations = vec![
        json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}),
        json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}),
    ];
    if p.gpu.is_some() {
        tolerations.push(json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}));
    }
    let mut spec = json!({
        "containers": [{"name": "main", "image": p.image, "imagePullPolicy": "IfNotPresent",
            "command": ["/bin/sh", "-c"], "args": ["exec python -m app.main --config /etc/app/config.yaml"],
            "env": env, "resources": resources, "volumeMounts": mounts,
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "ports": [{"containerPort": 8080, "name": "metrics", "protocol": "TCP"}]}],
        "volumes": volumes, "tolerations": tolerations,
        "restartPolicy": if p.owner.as_ref().is_some_and(|o| o.1 == "Job") { "Never" } else { "Always" },
        "terminationGracePeriodSeconds": p.grace, "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default", "serviceAccount": "default", "securityContext": {},
        "schedulerName": "default-scheduler", "priority": 0, "enableServiceLinks": true,
        "preemptionPolicy": "PreemptLowerPriority",
    });
    if let Some(n) = &p.node {
        spec["nodeName"] = json!(n);
    }
    let cond = |t: &str, s: &str| json!({"type": t, "status": s, "lastProbeTime": null, "lastTransitionTime": started});
    let status = match (p.phase.as_str(), &p.node) {
        ("Pending", None) => json!({
            "phase": "Pending", "qosClass": "Guaranteed",
            "conditions": [{"type": "PodScheduled", "status": "False", "lastProbeTime": null, "lastTransitionTime": created,
                "reason": "Unschedulable",
                "message": format!("0/{} nodes are available: insufficient nvidia.com/gpu. preemption: 0/{} nodes are available: no preemption victims found for incoming pod.", 100, 100)}],
        }),
        (phase, _) => {
            let running = phase == "Running";
            let state = match (phase, &p.waiting) {
                (_, Some(w)) => json!({"waiting": {"reason": w, "message": "Back-off pulling image"}}),
                ("Running", _) => json!({"running": {"startedAt": started}}),
                ("Succeeded", _) => {
                    json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": ts(p.created + 600)}})
                }
                _ => {
                    json!({"terminated": {"exitCode": 1, "reason": "Error", "startedAt": started, "finishedAt": ts(p.created + 60)}})
                }
            };
            let ready = running && p.waiting.is_none();
            let mut cs = json!({"name": "main", "ready": ready, "started": running, "restartCount": p.restarts,
                "image": p.image, "imageID": format!("{}@sha256:{}", p.image.split(':').next().unwrap_or_default(), p.uid.replace('-', "")),
                "state": state, "lastState": {}});
            if p.waiting.is_none() {
                cs["containerID"] =
                    json!(format!("containerd://{}{}", p.uid.replace('-', ""), p.uid.replace('-', "")));
            }
            if p.restarts > 0 {
                cs["lastState"] = json!({"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": created, "finishedAt": started}});
            }
            let r = if ready { "True" } else { "False" };
            json!({
                "phase": phase,
                "conditions": [cond("PodReadyToStartContainers", "True"), cond("Initialized", "True"), cond("Ready", r), cond("ContainersReady", r), cond("PodScheduled", "True")],
                "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}], "podIP": p.ip, "podIPs": [{"ip": p.ip}],
                "startTime": created, "containerStatuses": [cs],
                "qosClass": if p.gpu.is_some() { "Guaranteed" } else { "Burstable" },
            })
        }
    };
    let mut mf = vec![
        json!({"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": created,
        "fieldsType": "FieldsV1", "fieldsV1": {
            "f:metadata": {"f:labels": labels.keys().map(|k| (format!("f:{k}"), json!({}))).collect::<serde_json::Map<_, _>>(),
                            "f:ownerReferences": {".": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:args": {}, "f:command": {}, "f:env": {".": {}}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {".": {}, "f:limits": {}, "f:requests": {}}, "f:volumeMounts": {}}},
                        "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}, "f:tolerations": {}, "f:volumes": {}}}}),
    ];
    if p.node.is_some() {
        mf.push(json!({"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": started, "fieldsType": "FieldsV1", "subresource": "status",
            "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"ContainersReady\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
                "k:{\"type\":\"Initialized\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
                "k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
                "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {".": {}}, "f:startTime": {}}}}));
    }
    md["managedFields"] = json!(mf);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec, "status": status})
}

fn namespace(name: &str, team: Option<&str>, team_label: &str, created: i64) -> Value {
    let mut labels = json!({"kubernetes.io/metadata.name": name});
    if let Some(t) = team {
        labels[team_label] = json!(t);
    }
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "uid": uid_of(name), "creationTimestamp": ts(created), "labels": labels},
           "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
}

fn daemonset(ns: &str, name: &str, image: &str, uid: &str, n: i64, created: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": ns, "uid": uid, "creationTimestamp": ts(created), "generation": 1, "labels": {"app.kubernetes.io/name": name}},
        "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": {"metadata": {"labels": {"app.kubernetes.io/name": name}},
                "spec": {"containers": [{"name": name, "image": image}], "nodeSelector": {"nvidia.com/gpu.present": "true"},
                         "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}},
        "status": {"currentNumberScheduled": n, "desiredNumberScheduled": n, "numberAvailable": n, "numberMisscheduled": 0,
                   "numberReady": n, "observedGeneration": 1, "updatedNumberScheduled": n}})
}

fn pdb(ns: &str, name: &str, selector: Value, min: Option<Value>, max: Option<Value>, created: i64) -> Value {
    let mut spec = json!({"selector": selector});
    if let Some(m) = min {
        spec["minAvailable"] = m;
    }
    if let Some(m) = max {
        spec["maxUnavailable"] = m;
    }
    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": name, "namespace": ns, "uid": uid_of(&format!("pdb/{ns}/{name}")), "creationTimestamp": ts(created), "generation": 1},
           "spec": spec})
}

fn node_event(name: &str, node: &str, reason: &str, typ: &str, msg: &str, component: &str, t: i64) -> Value {
    json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": "default", "uid": uid_of(name), "creationTimestamp": ts(t)},
        "involvedObject": {"kind": "Node", "name": node, "uid": uid_of(&format!("node/{node}")), "apiVersion": "v1"},
        "reason": reason, "message": msg, "type": typ, "count": 1,
        "source": {"component": component, "host": node}, "firstTimestamp": ts(t), "lastTimestamp": ts(t),
        "reportingComponent": component, "reportingInstance": node, "eventTime": null})
}

/// A stable uuid-shaped id derived from a string.
pub fn uid_of(s: &str) -> String {
    use sha2::Digest;
    let h = sha2::Sha256::digest(s.as_bytes());
    let x = hex::encode(&h[..16]);
    format!("{}-{}-4{}-a{}-{}", &x[..8], &x[8..12], &x[13..16], &x[17..20], &x[20..32])
}

fn resource_quota(ns: &str, hard: i64, used: i64, created: i64) -> Value {
    json!({"apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "gpu-quota", "namespace": ns, "uid": uid_of(&format!("quota/{ns}")), "creationTimestamp": ts(created)},
        "spec": {"hard": {"requests.nvidia.com/gpu": hard.to_string(), "requests.cpu": "4000", "pods": "2000"}},
        "status": {"hard": {"requests.nvidia.com/gpu": hard.to_string(), "requests.cpu": "4000", "pods": "2000"},
                   "used": {"requests.nvidia.com/gpu": used.to_string()}}})
}

fn owner(av: &str, kind: &str, name: &str) -> Owner {
    (av.into(), kind.into(), name.into(), uid_of(&format!("{kind}/{name}")))
}

impl Cluster {
    /// Five nodes and a dozen pods covering every drain filter, a PDB and (optionally) Kueue.
    ///
    /// * `cpu-node-1` control-plane, Ready; mirror pod `kube-apiserver-cpu-node-1`.
    /// * `gpu-node-1` H100×8 Ready — the drain target: DaemonSet pods (device plugin, dcgm
    ///   exporter), mirror pod `kube-proxy-gpu-node-1`, emptyDir pod `team-a/cache-warmer-…`,
    ///   bare pod `team-a/debug-shell`, Job pods `team-a/train-llm-0-…`/`-1-…`, a Succeeded
    ///   pod `team-a/preflight-check`.
    /// * `gpu-node-2` H100×8 with 7 allocatable: device-plugin pod and two inference pods
    ///   `team-b/inference-…` guarded by PDB `team-b/inference-pdb` (minAvailable 2 ⇒ 0 allowed).
    /// * `gpu-node-3` A100 MIG mixed, cordoned.
    /// * `gpu-node-4` H100 time-sliced, NotReady.
    /// * `team-a/train-pending` unscheduled (Pending).
    pub fn small() -> Cluster {
        Cluster::small_with(KueueMode::None)
    }

    pub fn small_with(kueue: KueueMode) -> Cluster {
        let now = super::util::now_secs();
        let day = 86_400;
        let mut objects = Vec::new();
        let tl = "gpuplane.io/team";
        for (ns, team) in [
            ("default", None),
            ("kube-system", None),
            ("gpu-operator", None),
            ("team-a", Some("research")),
            ("team-b", Some("serving")),
        ] {
            objects.push(namespace(ns, team, tl, now - 30 * day));
        }
        let shape = |name: &str, product: Option<&'static str>, i: u8| NodeShape {
            name: name.into(),
            pool: match product {
                Some(H100) => "h100".into(),
                Some(_) => "a100".into(),
                None => "cpu".into(),
            },
            product,
            gpus: if product.is_some() { 8 } else { 0 },
            allocatable_gpus: if product.is_some() { 8 } else { 0 },
            mig: vec![],
            replicas: 1,
            ready: true,
            cordoned: false,
            control_plane: false,
            created: now - 20 * day,
            uid: uid_of(&format!("node/{name}")),
            ip: format!("10.0.1.{i}"),
        };
        let mut cpu = shape("cpu-node-1", None, 1);
        cpu.control_plane = true;
        let g1 = shape("gpu-node-1", Some(H100), 2);
        let mut g2 = shape("gpu-node-2", Some(H100), 3);
        g2.allocatable_gpus = 7;
        let mut g3 = shape("gpu-node-3", Some(A100), 4);
        g3.mig = vec![("mig-1g.10gb", 14), ("mig-3g.40gb", 2)];
        g3.cordoned = true;
        let mut g4 = shape("gpu-node-4", Some(H100), 5);
        g4.replicas = 4;
        g4.ready = false;
        for n in [&cpu, &g1, &g2, &g3, &g4] {
            objects.push(node(n, "gpuplane.io/pool"));
        }
        let base = |ns: &str, name: &str, node: Option<&str>| PodShape {
            ns: ns.into(),
            name: name.into(),
            uid: uid_of(&format!("pod/{ns}/{name}")),
            node: node.map(String::from),
            image: "nvcr.io/nvidia/pytorch:24.08-py3".into(),
            phase: "Running".into(),
            grace: 1,
            created: now - 2 * 3600,
            ip: "10.244.1.10".into(),
            ..Default::default()
        };
        // DaemonSets and their pods.
        let dp = owner("apps/v1", "DaemonSet", "nvidia-device-plugin-daemonset");
        let dcgm = owner("apps/v1", "DaemonSet", "nvidia-dcgm-exporter");
        objects.push(daemonset(
            "kube-system",
            &dp.2,
            "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
            &dp.3,
            2,
            now - 20 * day,
        ));
        objects.push(daemonset(
            "gpu-operator",
            &dcgm.2,
            "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.7-3.5.0-ubuntu22.04",
            &dcgm.3,
            1,
            now - 20 * day,
        ));
        for (node, sfx) in [("gpu-node-1", "x7k2p"), ("gpu-node-2", "m4q9z")] {
            let mut p = base("kube-system", &format!("nvidia-device-plugin-daemonset-{sfx}"), Some(node));
            p.owner = Some(dp.clone());
            p.labels = vec![("app.kubernetes.io/name".into(), dp.2.clone())];
            p.image = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0".into();
            objects.push(pod(&p));
        }
        let mut p = base("gpu-operator", "nvidia-dcgm-exporter-w8d5c", Some("gpu-node-1"));
        p.owner = Some(dcgm.clone());
        p.labels = vec![("app.kubernetes.io/name".into(), dcgm.2.clone())];
        objects.push(pod(&p));
        // Mirror (static) pods.
        for (nodename, pname) in
            [("gpu-node-1", "kube-proxy-gpu-node-1"), ("cpu-node-1", "kube-apiserver-cpu-node-1")]
        {
            let mut p = base("kube-system", pname, Some(nodename));
            p.owner =
                Some(("v1".into(), "Node".into(), nodename.into(), uid_of(&format!("node/{nodename}"))));
            p.annotations = vec![
                ("kubernetes.io/config.mirror".into(), "3b1e0c6a9d1f4e2a8c7b5d4e3f2a1b0c".into()),
                ("kubernetes.io/config.source".into(), "file".into()),
            ];
            p.image = "registry.k8s.io/kube-proxy:v1.34.1".into();
            objects.push(pod(&p));
        }
        // emptyDir pod owned by a ReplicaSet.
        let rs_cache = owner("apps/v1", "ReplicaSet", "cache-warmer-6d9f8b7c5");
        let mut p = base("team-a", "cache-warmer-6d9f8b7c5-qk2xv", Some("gpu-node-1"));
        p.owner = Some(rs_cache.clone());
        p.empty_dir = true;
        p.labels =
            vec![("app".into(), "cache-warmer".into()), ("pod-template-hash".into(), "6d9f8b7c5".into())];
        objects.push(pod(&p));
        objects.push(replicaset("team-a", &rs_cache, "cache-warmer", 1, now - 3 * day));
        // Bare pod.
        let mut p = base("team-a", "debug-shell", Some("gpu-node-1"));
        p.image = "ubuntu:24.04".into();
        objects.push(pod(&p));
        // Job pods with JobSet labels.
        let job = owner("batch/v1", "Job", "train-llm");
        objects.push(job_obj("team-a", &job, 2, now - 2 * 3600));
        for (i, sfx) in [(0, "h5t8r"), (1, "b2n6w")] {
            let mut p = base("team-a", &format!("train-llm-{i}-{sfx}"), Some("gpu-node-1"));
            p.owner = Some(job.clone());
            p.gpu = Some(("nvidia.com/gpu".into(), 4));
            p.labels = vec![
                ("batch.kubernetes.io/job-name".into(), "train-llm".into()),
                ("job-name".into(), "train-llm".into()),
                ("batch.kubernetes.io/controller-uid".into(), job.3.clone()),
                ("batch.kubernetes.io/job-completion-index".into(), i.to_string()),
                ("jobset.sigs.k8s.io/jobset-name".into(), "llm-pretrain".into()),
                ("jobset.sigs.k8s.io/replicatedjob-name".into(), "workers".into()),
            ];
            p.restarts = i;
            objects.push(pod(&p));
        }
        let mut p = base("team-a", "preflight-check", Some("gpu-node-1"));
        p.owner = Some(owner("batch/v1", "Job", "preflight"));
        p.phase = "Succeeded".into();
        objects.push(pod(&p));
        // Inference on gpu-node-2 behind a PDB.
        let rs = owner("apps/v1", "ReplicaSet", "inference-7f6c9d8b4");
        objects.push(deployment("team-b", "inference", 2, now - 5 * day));
        objects.push(replicaset("team-b", &rs, "inference", 2, now - 5 * day));
        for sfx in ["r9p2k", "t3v7m"] {
            let mut p = base("team-b", &format!("inference-7f6c9d8b4-{sfx}"), Some("gpu-node-2"));
            p.owner = Some(rs.clone());
            p.gpu = Some(("nvidia.com/gpu".into(), 1));
            p.labels =
                vec![("app".into(), "inference".into()), ("pod-template-hash".into(), "7f6c9d8b4".into())];
            p.image = "nvcr.io/nvidia/tritonserver:24.08-py3".into();
            objects.push(pod(&p));
        }
        objects.push(pdb(
            "team-b",
            "inference-pdb",
            json!({"matchLabels": {"app": "inference"}}),
            Some(json!(2)),
            None,
            now - 5 * day,
        ));
        // Pending, unscheduled.
        let mut p = base("team-a", "train-pending", None);
        p.phase = "Pending".into();
        p.gpu = Some(("nvidia.com/gpu".into(), 8));
        p.labels = vec![("app".into(), "train-pending".into())];
        objects.push(pod(&p));
        objects.push(resource_quota("team-a", 16, 8, now - 30 * day));
        objects.push(resource_quota("team-b", 8, 2, now - 30 * day));
        objects.push(node_event(
            "gpu-node-4.17f0a1b2c3d4e5f6",
            "gpu-node-4",
            "NodeNotReady",
            "Normal",
            "Node gpu-node-4 status is now: NodeNotReady",
            "node-controller",
            now - 600,
        ));
        objects.push(node_event(
            "gpu-node-3.17f0a1b2c3d4e5f7",
            "gpu-node-3",
            "NodeNotSchedulable",
            "Normal",
            "Node gpu-node-3 status is now: NodeNotSchedulable",
            "kubelet",
            now - 3600,
        ));
        objects.push(node_event(
            "gpu-node-2.17f0a1b2c3d4e5f8",
            "gpu-node-2",
            "GPUUnhealthy",
            "Warning",
            "XID 79 on GPU 3 (GPU has fallen off the bus); device marked unhealthy",
            "nvidia-device-plugin",
            now - 1800,
        ));
        let pod_logs = vec![(
            ("team-a".to_string(), "train-llm-0-h5t8r".to_string()),
            "step 1 loss 4.21\nstep 2 loss 3.98\nstep 3 loss 3.75\n".to_string(),
        )];
        if kueue != KueueMode::None {
            objects.extend(small_kueue(now));
        }
        Cluster { objects, serialized: Vec::new(), pod_logs, kueue }
    }
}

fn replicaset(ns: &str, o: &Owner, app: &str, replicas: i64, created: i64) -> Value {
    let hash = o.2.rsplit('-').next().unwrap_or_default();
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": o.2, "namespace": ns, "uid": o.3, "creationTimestamp": ts(created), "generation": 1,
            "labels": {"app": app, "pod-template-hash": hash},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": app, "uid": uid_of(&format!("Deployment/{app}")), "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app, "pod-template-hash": hash}},
                 "template": {"metadata": {"labels": {"app": app, "pod-template-hash": hash}}, "spec": {"containers": [{"name": "main", "image": "nvcr.io/nvidia/tritonserver:24.08-py3"}]}}},
        "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas, "fullyLabeledReplicas": replicas, "observedGeneration": 1}})
}

fn deployment(ns: &str, app: &str, replicas: i64, created: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": app, "namespace": ns, "uid": uid_of(&format!("Deployment/{app}")), "creationTimestamp": ts(created), "generation": 1, "labels": {"app": app}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}},
                 "template": {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "main", "image": "nvcr.io/nvidia/tritonserver:24.08-py3"}]}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}},
        "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas, "updatedReplicas": replicas, "observedGeneration": 1}})
}

fn job_obj(ns: &str, o: &Owner, pods: i64, created: i64) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": o.2, "namespace": ns, "uid": o.3, "creationTimestamp": ts(created), "generation": 1,
                     "labels": {"jobset.sigs.k8s.io/jobset-name": "llm-pretrain"}},
        "spec": {"parallelism": pods, "completions": pods, "completionMode": "Indexed", "backoffLimit": 0, "suspend": false,
                 "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": o.3}},
                 "template": {"metadata": {"labels": {"batch.kubernetes.io/job-name": o.2}},
                              "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.08-py3",
                                  "resources": {"requests": {"nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": "4"}}}]}}},
        "status": {"active": pods, "ready": pods, "startTime": ts(created), "succeeded": 0, "failed": 0}})
}

fn flavor(name: &str, product: &str) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": name, "uid": uid_of(&format!("rf/{name}")), "creationTimestamp": ts(super::util::now_secs() - 864_000), "generation": 1},
        "spec": {"nodeLabels": {"nvidia.com/gpu.product": product},
                 "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                 "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}})
}

fn cluster_queue(name: &str, flavor: &str, nominal: i64, borrow: Option<i64>, lend: Option<i64>) -> Value {
    let mut gpu = json!({"name": "nvidia.com/gpu", "nominalQuota": nominal.to_string()});
    if let Some(b) = borrow {
        gpu["borrowingLimit"] = json!(b.to_string());
    }
    if let Some(l) = lend {
        gpu["lendingLimit"] = json!(l.to_string());
    }
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": name, "uid": uid_of(&format!("cq/{name}")), "creationTimestamp": ts(super::util::now_secs() - 864_000), "generation": 1},
        "spec": {"cohortName": "gpu-pool", "namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO",
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority", "borrowWithinCohort": {"policy": "Never"}},
            "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [{"name": flavor, "resources": [
                {"name": "cpu", "nominalQuota": (nominal * 12).to_string()},
                {"name": "memory", "nominalQuota": format!("{}Gi", nominal * 100)}, gpu]}]}]}})
}

fn local_queue(ns: &str, name: &str, cq: &str) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns, "uid": uid_of(&format!("lq/{ns}/{name}")), "creationTimestamp": ts(super::util::now_secs() - 864_000), "generation": 1},
        "spec": {"clusterQueue": cq}})
}

/// A Workload; `pending_msg` = None means admitted to `flavor`.
#[allow(clippy::too_many_arguments)]
fn workload(
    ns: &str,
    name: &str,
    lq: &str,
    cq: &str,
    owner: &Owner,
    pods: i64,
    gpus: i64,
    priority: i64,
    created: i64,
    flavor: &str,
    pending_msg: Option<&str>,
) -> Value {
    let t = ts(created);
    let ps = json!({"name": "main", "count": pods, "template": {"spec": {"containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.08-py3",
        "resources": {"requests": {"cpu": (12 * gpus).to_string(), "nvidia.com/gpu": gpus.to_string()}}}], "restartPolicy": "Never"}}});
    let mut v = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": ns, "uid": uid_of(&format!("wl/{ns}/{name}")), "creationTimestamp": t, "generation": 1,
            "labels": {"kueue.x-k8s.io/job-uid": owner.3},
            "ownerReferences": [{"apiVersion": owner.0, "kind": owner.1, "name": owner.2, "uid": owner.3, "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"active": true, "queueName": lq, "priority": priority, "podSets": [ps],
                 "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": if priority > 0 { "high" } else { "default" }}},
        "status": {"accumulatedPastExecutionTimeSeconds": 0}});
    match pending_msg {
        Some(m) => {
            v["status"]["conditions"] = json!([{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": m, "lastTransitionTime": t, "observedGeneration": 1}]);
        }
        None => {
            v["status"]["admission"] = json!({"clusterQueue": cq, "podSetAssignments": [{"name": "main", "count": pods,
                "flavors": {"cpu": flavor, "nvidia.com/gpu": flavor},
                "resourceUsage": {"cpu": (12 * gpus * pods).to_string(), "nvidia.com/gpu": (gpus * pods).to_string()}}]});
            v["status"]["conditions"] = json!([
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": format!("Quota reserved in ClusterQueue {cq}"), "lastTransitionTime": t, "observedGeneration": 1},
                {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted", "lastTransitionTime": t, "observedGeneration": 1},
            ]);
        }
    }
    v
}

fn small_kueue(now: i64) -> Vec<Value> {
    let insufficient = |n: i64| {
        format!(
            "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, {n} more needed"
        )
    };
    let j = |n: &str| owner("batch/v1", "Job", n);
    vec![
        flavor("h100", H100),
        flavor("a100", A100),
        cluster_queue("research-cq", "h100", 16, Some(8), Some(4)),
        cluster_queue("serving-cq", "a100", 8, None, None),
        local_queue("team-a", "research", "research-cq"),
        local_queue("team-a", "research-urgent", "research-cq"),
        local_queue("team-b", "serving", "serving-cq"),
        workload(
            "team-a",
            "job-train-llm-3f2a1",
            "research",
            "research-cq",
            &j("train-llm"),
            2,
            4,
            0,
            now - 7200,
            "h100",
            None,
        ),
        workload(
            "team-a",
            "job-sweep-a-7c1d2",
            "research",
            "research-cq",
            &j("sweep-a"),
            1,
            8,
            0,
            now - 3000,
            "h100",
            Some(&insufficient(8)),
        ),
        workload(
            "team-a",
            "job-sweep-b-9e4f1",
            "research",
            "research-cq",
            &j("sweep-b"),
            1,
            8,
            0,
            now - 2000,
            "h100",
            Some(&insufficient(8)),
        ),
        workload(
            "team-a",
            "job-hotfix-2b8c3",
            "research-urgent",
            "research-cq",
            &j("hotfix"),
            1,
            4,
            100,
            now - 1000,
            "h100",
            Some(&insufficient(4)),
        ),
        workload(
            "team-a",
            "job-eval-5d6e7",
            "research",
            "research-cq",
            &j("eval"),
            1,
            2,
            100,
            now - 2500,
            "h100",
            Some(&insufficient(2)),
        ),
        workload(
            "team-b",
            "job-batch-infer-1a2b3",
            "serving",
            "serving-cq",
            &j("batch-infer"),
            1,
            8,
            0,
            now - 500,
            "a100",
            Some(
                "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor a100, 8 more needed",
            ),
        ),
    ]
}

fn push_pod(
    raw: &mut Vec<Vec<u8>>,
    used: &mut std::collections::BTreeMap<String, i64>,
    seen: &mut std::collections::HashSet<(String, String)>,
    rng: &mut fastrand::Rng,
    p: &mut PodShape,
) {
    // Random 5-character suffixes can collide (5000 DaemonSet pods in one namespace): re-roll.
    while !seen.insert((p.ns.clone(), p.name.clone())) {
        let keep = p.name.len().saturating_sub(5);
        p.name = format!("{}{}", &p.name[..keep], rng_suffix(rng));
    }
    if let Some((r, n)) = &p.gpu
        && r == "nvidia.com/gpu"
        && !matches!(p.phase.as_str(), "Succeeded" | "Failed")
    {
        *used.entry(p.ns.clone()).or_default() += n;
    }
    let mut b = serde_json::to_vec(&pod(p)).expect("pod json");
    b.shrink_to_fit();
    raw.push(b);
}

/// Deterministic uuid-shaped ids from the generator's RNG.
fn rng_uid(rng: &mut fastrand::Rng) -> String {
    let a = rng.u64(..);
    let b = rng.u64(..);
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

fn rng_suffix(rng: &mut fastrand::Rng) -> String {
    const ALPHA: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| ALPHA[rng.usize(..ALPHA.len())] as char).collect()
}

const TEAMS: &[&str] = &["ml-research", "llm-training", "inference", "vision", "speech", "platform"];
const MODELS: &[&str] = &[
    "llama3-70b",
    "mixtral-8x22b",
    "vit-h14",
    "whisper-large",
    "sd-xl",
    "bert-base",
    "gpt-neox-20b",
    "qwen2-72b",
];

#[derive(Clone, Copy, PartialEq, Debug)]
enum WKind {
    Job,
    JobSet,
    PyTorchJob,
    MpiJob,
    RayJob,
    Deployment,
    Lws,
}

struct Placer {
    /// (node name, free GPUs, product)
    nodes: Vec<(String, i64, &'static str)>,
    cursor: usize,
}

impl Placer {
    /// Next-fit: O(pods + nodes) overall.
    fn place(&mut self, gpus: i64) -> Option<(String, &'static str)> {
        let n = self.nodes.len();
        for step in 0..n.min(64) {
            let i = (self.cursor + step) % n;
            if self.nodes[i].1 >= gpus {
                self.nodes[i].1 -= gpus;
                self.cursor = if self.nodes[i].1 == 0 { (i + 1) % n } else { i };
                return Some((self.nodes[i].0.clone(), self.nodes[i].2));
            }
        }
        self.cursor = (self.cursor + 64) % n.max(1);
        None
    }
}

impl Cluster {
    /// A realistic GPU cluster, deterministic by `seed` (timestamps are relative to now).
    pub fn generate(o: &GenOpts) -> Cluster {
        let mut rng = fastrand::Rng::with_seed(o.seed);
        let now = super::util::now_secs();
        let day = 86_400;
        let tl = o.team_label.as_str();
        let mut objects = Vec::new();
        // Pods go out serialized right away (a parsed pod is ~10x its JSON), with the GPU
        // requests per namespace tallied for the quotas.
        let mut raw: Vec<Vec<u8>> = Vec::new();
        let mut used: std::collections::BTreeMap<String, i64> = Default::default();
        let mut seen: std::collections::HashSet<(String, String)> = Default::default();
        for ns in ["default", "kube-system", "gpu-operator"] {
            objects.push(namespace(ns, None, tl, now - 400 * day));
        }
        if o.kueue != KueueMode::None {
            objects.push(namespace("kueue-system", None, tl, now - 400 * day));
        }
        for t in TEAMS {
            objects.push(namespace(t, Some(t), tl, now - 300 * day));
        }
        // Nodes.
        let mut shapes = Vec::new();
        for i in 0..o.nodes {
            let r = i % 20;
            let (product, pool, mig) = if i == 0 || r == 19 {
                (None, "cpu", vec![])
            } else if r <= 12 {
                (Some(H100), "h100", vec![])
            } else if r <= 17 {
                (Some(A100), "a100", vec![])
            } else {
                (Some(A100), "a100-mig", vec![("mig-1g.10gb", 14), ("mig-3g.40gb", 2)])
            };
            let shared = i == 5;
            let name = if product.is_some() { format!("gpu-{i:04}") } else { format!("cpu-{i:04}") };
            let gpus = if product.is_some() { 8 } else { 0 };
            let unhealthy = product.is_some() && mig.is_empty() && (i == 4 || i % 37 == 20);
            shapes.push(NodeShape {
                uid: rng_uid(&mut rng),
                name,
                pool: if shared { "h100-shared".into() } else { pool.into() },
                product,
                gpus,
                allocatable_gpus: if unhealthy { gpus - 1 } else { gpus },
                mig,
                replicas: if shared { 4 } else { 1 },
                ready: !(i == 3 || i % 97 == 50),
                cordoned: i == 2,
                control_plane: i == 0,
                created: now - (30 + rng.i64(0..200)) * day,
                ip: format!("10.0.{}.{}", i / 250, i % 250 + 1),
            });
        }
        for s in &shapes {
            objects.push(node(s, &o.pool_label));
        }
        let gpu_nodes: Vec<&NodeShape> = shapes.iter().filter(|s| s.product.is_some()).collect();
        let mut placer = Placer {
            nodes: gpu_nodes
                .iter()
                .filter(|s| s.ready && !s.cordoned && s.mig.is_empty())
                .map(|s| (s.name.clone(), s.allocatable_gpus * s.replicas, s.product.unwrap_or(H100)))
                .collect(),
            cursor: 0,
        };
        let mut pod_count = 0usize;
        let mut gpu_used: std::collections::HashMap<String, i64> = Default::default();
        let mut ip_n = 0u32;
        let mut next_ip = || {
            ip_n += 1;
            format!("10.{}.{}.{}", 244 + (ip_n >> 16) % 8, (ip_n >> 8) & 0xff, ip_n & 0xff)
        };
        // DaemonSets on GPU nodes.
        let ds_budget = (gpu_nodes.len() * 2).min(o.pods.saturating_sub(o.gpu_pods));
        let dp = owner("apps/v1", "DaemonSet", "nvidia-device-plugin-daemonset");
        let dcgm = owner("apps/v1", "DaemonSet", "nvidia-dcgm-exporter");
        objects.push(daemonset(
            "kube-system",
            &dp.2,
            "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
            &dp.3,
            gpu_nodes.len() as i64,
            now - 300 * day,
        ));
        objects.push(daemonset(
            "gpu-operator",
            &dcgm.2,
            "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.7-3.5.0-ubuntu22.04",
            &dcgm.3,
            gpu_nodes.len() as i64,
            now - 300 * day,
        ));
        'ds: for s in &gpu_nodes {
            for (ns, ow, image) in [
                ("kube-system", &dp, "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"),
                ("gpu-operator", &dcgm, "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.7-3.5.0-ubuntu22.04"),
            ] {
                if pod_count >= ds_budget {
                    break 'ds;
                }
                let mut p = PodShape {
                    ns: ns.into(),
                    name: format!("{}-{}", ow.2, rng_suffix(&mut rng)),
                    uid: rng_uid(&mut rng),
                    node: Some(s.name.clone()),
                    owner: Some(ow.clone()),
                    labels: vec![
                        ("app.kubernetes.io/name".into(), ow.2.clone()),
                        ("controller-revision-hash".into(), "6b7c9d5f8".into()),
                    ],
                    image: image.into(),
                    phase: "Running".into(),
                    grace: 30,
                    created: s.created + 600,
                    ip: next_ip(),
                    ..Default::default()
                };
                push_pod(&mut raw, &mut used, &mut seen, &mut rng, &mut p);
                pod_count += 1;
            }
        }
        // GPU workloads.
        let kueue_on = o.kueue != KueueMode::None;
        let mut gpu_left = o.gpu_pods.min(o.pods.saturating_sub(pod_count));
        let mut wl_i = 0usize;
        let mut workloads = Vec::new();
        let mut pending_pods = Vec::new();
        // One MIG inference pod per MIG node.
        for s in gpu_nodes.iter().filter(|s| !s.mig.is_empty()) {
            if gpu_left == 0 {
                break;
            }
            let rs = owner("apps/v1", "ReplicaSet", &format!("mig-embedder-{}", &s.name[4..]));
            let mut p = PodShape {
                ns: "inference".into(),
                name: format!("{}-{}", rs.2, rng_suffix(&mut rng)),
                uid: rng_uid(&mut rng),
                node: Some(s.name.clone()),
                owner: Some(rs),
                labels: vec![("app".into(), "mig-embedder".into())],
                image: "nvcr.io/nvidia/tritonserver:24.08-py3".into(),
                gpu: Some(("nvidia.com/mig-1g.10gb".into(), 1)),
                phase: "Running".into(),
                grace: 30,
                created: now - rng.i64(3600..30 * day),
                ip: next_ip(),
                ..Default::default()
            };
            push_pod(&mut raw, &mut used, &mut seen, &mut rng, &mut p);
            pod_count += 1;
            gpu_left -= 1;
        }
        while gpu_left > 0 {
            wl_i += 1;
            let kind = match rng.u32(0..100) {
                0..35 => {
                    if rng.bool() {
                        WKind::Job
                    } else {
                        WKind::JobSet
                    }
                }
                35..55 => WKind::PyTorchJob,
                55..65 => WKind::MpiJob,
                65..75 => WKind::RayJob,
                75..90 => WKind::Deployment,
                _ => WKind::Lws,
            };
            let inference = matches!(kind, WKind::Deployment | WKind::Lws);
            let team = if inference && rng.bool() { "inference" } else { TEAMS[rng.usize(..TEAMS.len())] };
            let model = MODELS[rng.usize(..MODELS.len())];
            let size = (if inference { rng.usize(1..=4) } else { rng.usize(1..=8) }).min(gpu_left);
            // Sized so that ~20k GPU pods roughly fill ~5k 8-GPU nodes, leaving some pending.
            let gpus: i64 = if inference {
                [1, 1, 1, 1, 2][rng.usize(..5)]
            } else {
                [8, 4, 2, 2, 1, 1, 1, 1][rng.usize(..8)]
            };
            let created = now - rng.i64(300..5 * day);
            let base = format!(
                "{model}-{}-{wl_i}",
                match kind {
                    WKind::Job | WKind::JobSet => "pretrain",
                    WKind::PyTorchJob => "finetune",
                    WKind::MpiJob => "allreduce",
                    WKind::RayJob => "tune",
                    WKind::Deployment => "serve",
                    WKind::Lws => "disagg",
                }
            );
            let hold = !inference && rng.u32(0..100) < 4; // queued as a whole
            let queue = format!("{team}-queue");
            let mut common: Vec<(String, String)> = Vec::new();
            if kueue_on && !inference {
                common.push(("kueue.x-k8s.io/queue-name".into(), queue.clone()));
            }
            // The pods' owner and per-pod naming.
            let (pod_owner, top_owner): (Owner, Owner) = match kind {
                WKind::Job => {
                    let j = (String::from("batch/v1"), String::from("Job"), base.clone(), rng_uid(&mut rng));
                    let mut jv = job_obj(team, &j, size as i64, created);
                    jv["metadata"]["labels"] = json!({"app": base});
                    objects.push(jv);
                    (j.clone(), j)
                }
                WKind::JobSet => {
                    let js = (
                        "jobset.x-k8s.io/v1alpha2".to_string(),
                        "JobSet".to_string(),
                        base.clone(),
                        rng_uid(&mut rng),
                    );
                    let j = (
                        "batch/v1".to_string(),
                        "Job".to_string(),
                        format!("{base}-workers-0"),
                        rng_uid(&mut rng),
                    );
                    let mut jv = job_obj(team, &j, size as i64, created);
                    jv["metadata"]["labels"] = json!({"jobset.sigs.k8s.io/jobset-name": base, "jobset.sigs.k8s.io/replicatedjob-name": "workers"});
                    jv["metadata"]["ownerReferences"] = json!([{"apiVersion": js.0, "kind": js.1, "name": js.2, "uid": js.3, "controller": true, "blockOwnerDeletion": true}]);
                    objects.push(jv);
                    common.push(("jobset.sigs.k8s.io/jobset-name".into(), base.clone()));
                    common.push(("jobset.sigs.k8s.io/replicatedjob-name".into(), "workers".into()));
                    (j, js)
                }
                WKind::PyTorchJob => {
                    let o = (
                        "kubeflow.org/v1".to_string(),
                        "PyTorchJob".to_string(),
                        base.clone(),
                        rng_uid(&mut rng),
                    );
                    common.push(("training.kubeflow.org/job-name".into(), base.clone()));
                    common
                        .push(("training.kubeflow.org/operator-name".into(), "pytorchjob-controller".into()));
                    (o.clone(), o)
                }
                WKind::MpiJob => {
                    let o = (
                        "kubeflow.org/v2beta1".to_string(),
                        "MPIJob".to_string(),
                        base.clone(),
                        rng_uid(&mut rng),
                    );
                    common.push(("training.kubeflow.org/job-name".into(), base.clone()));
                    common.push(("training.kubeflow.org/job-role".into(), "worker".into()));
                    (o.clone(), o)
                }
                WKind::RayJob => {
                    let rj = ("ray.io/v1".to_string(), "RayJob".to_string(), base.clone(), rng_uid(&mut rng));
                    let rc = (
                        "ray.io/v1".to_string(),
                        "RayCluster".to_string(),
                        format!("{base}-raycluster-{}", rng_suffix(&mut rng)),
                        rng_uid(&mut rng),
                    );
                    common.push(("ray.io/cluster".into(), rc.2.clone()));
                    common.push(("ray.io/node-type".into(), "worker".into()));
                    (rc, rj)
                }
                WKind::Deployment => {
                    let hash = format!("{:x}", rng.u32(0x10000000..0xffffffff));
                    let mut dv = deployment(team, &base, size as i64, created);
                    dv["metadata"]["uid"] = json!(uid_of(&format!("Deployment/{team}/{base}")));
                    objects.push(dv);
                    let rs = (
                        "apps/v1".to_string(),
                        "ReplicaSet".to_string(),
                        format!("{base}-{hash}"),
                        rng_uid(&mut rng),
                    );
                    objects.push(replicaset(team, &rs, &base, size as i64, created));
                    common.push(("app".into(), base.clone()));
                    common.push(("pod-template-hash".into(), hash));
                    if wl_i.is_multiple_of(3) {
                        objects.push(pdb(
                            team,
                            &format!("{base}-pdb"),
                            json!({"matchLabels": {"app": base}}),
                            None,
                            Some(json!(1)),
                            created,
                        ));
                    }
                    let d = (
                        "apps/v1".to_string(),
                        "Deployment".to_string(),
                        base.clone(),
                        uid_of(&format!("Deployment/{team}/{base}")),
                    );
                    (rs, d)
                }
                WKind::Lws => {
                    let l = (
                        "leaderworkerset.x-k8s.io/v1".to_string(),
                        "LeaderWorkerSet".to_string(),
                        base.clone(),
                        rng_uid(&mut rng),
                    );
                    let sts =
                        ("apps/v1".to_string(), "StatefulSet".to_string(), base.clone(), rng_uid(&mut rng));
                    common.push(("leaderworkerset.sigs.k8s.io/name".into(), base.clone()));
                    common.push(("leaderworkerset.sigs.k8s.io/group-index".into(), "0".into()));
                    (sts, l)
                }
            };
            if !inference && wl_i.is_multiple_of(5) {
                let key = common.iter().find(|(k, _)| k != "kueue.x-k8s.io/queue-name").cloned();
                let sel = match key {
                    Some((k, v)) => json!({"matchLabels": {k: v}}),
                    None => json!({"matchLabels": {"batch.kubernetes.io/job-name": base}}),
                };
                objects.push(pdb(team, &format!("{base}-pdb"), sel, Some(json!("100%")), None, created));
            }
            let mut placed_product = None;
            let mut any_pending = false;
            for k in 0..size {
                let name = match kind {
                    WKind::Job => format!("{base}-{k}-{}", rng_suffix(&mut rng)),
                    WKind::JobSet => format!("{base}-workers-0-{k}-{}", rng_suffix(&mut rng)),
                    WKind::PyTorchJob => {
                        if k == 0 {
                            format!("{base}-master-0")
                        } else {
                            format!("{base}-worker-{}", k - 1)
                        }
                    }
                    WKind::MpiJob => format!("{base}-worker-{k}"),
                    WKind::RayJob => format!("{}-gpu-group-worker-{}", pod_owner.2, rng_suffix(&mut rng)),
                    WKind::Deployment => format!("{}-{}", pod_owner.2, rng_suffix(&mut rng)),
                    WKind::Lws => {
                        if k == 0 {
                            format!("{base}-0")
                        } else {
                            format!("{base}-0-{k}")
                        }
                    }
                };
                let mut labels = common.clone();
                match kind {
                    WKind::Job | WKind::JobSet => {
                        labels.push(("batch.kubernetes.io/job-name".into(), pod_owner.2.clone()));
                        labels.push(("job-name".into(), pod_owner.2.clone()));
                        labels.push(("batch.kubernetes.io/controller-uid".into(), pod_owner.3.clone()));
                        labels.push(("batch.kubernetes.io/job-completion-index".into(), k.to_string()));
                    }
                    WKind::PyTorchJob => {
                        labels.push((
                            "training.kubeflow.org/replica-type".into(),
                            if k == 0 { "master" } else { "worker" }.into(),
                        ));
                        labels.push((
                            "training.kubeflow.org/replica-index".into(),
                            k.saturating_sub(1).to_string(),
                        ));
                    }
                    WKind::Lws => {
                        labels.push(("leaderworkerset.sigs.k8s.io/worker-index".into(), k.to_string()))
                    }
                    _ => {}
                }
                let spot = if hold { None } else { placer.place(gpus) };
                let (node, phase, waiting, restarts) = match &spot {
                    Some((n, prod)) => {
                        placed_product = Some(*prod);
                        *gpu_used.entry(n.clone()).or_default() += gpus;
                        match rng.u32(0..100) {
                            0..2 => (
                                Some(n.clone()),
                                "Running",
                                Some("CrashLoopBackOff".to_string()),
                                rng.i64(3..40),
                            ),
                            2..4 => (Some(n.clone()), "Pending", Some("ContainerCreating".to_string()), 0),
                            4..9 => (Some(n.clone()), "Running", None, rng.i64(1..4)),
                            _ => (Some(n.clone()), "Running", None, 0),
                        }
                    }
                    None => {
                        any_pending = true;
                        (None, "Pending", None, 0)
                    }
                };
                let mut p = PodShape {
                    ns: team.into(),
                    name,
                    uid: rng_uid(&mut rng),
                    node,
                    owner: Some(pod_owner.clone()),
                    labels,
                    annotations: vec![],
                    image: if inference {
                        "nvcr.io/nvidia/tritonserver:24.08-py3".into()
                    } else {
                        "nvcr.io/nvidia/pytorch:24.08-py3".into()
                    },
                    gpu: Some(("nvidia.com/gpu".into(), gpus)),
                    phase: phase.into(),
                    waiting,
                    restarts,
                    empty_dir: false,
                    grace: 30,
                    created,
                    ip: next_ip(),
                };
                if p.node.is_none() && pending_pods.len() < 20 {
                    pending_pods.push((team.to_string(), p.name.clone()));
                }
                push_pod(&mut raw, &mut used, &mut seen, &mut rng, &mut p);
                pod_count += 1;
                gpu_left -= 1;
            }
            if kueue_on && !inference {
                workloads.push((
                    team.to_string(),
                    top_owner,
                    size as i64,
                    gpus,
                    created,
                    placed_product,
                    any_pending,
                    queue,
                ));
            }
        }
        // CPU pods: the rest, round-robin over ready nodes.
        let ready: Vec<&NodeShape> = shapes.iter().filter(|s| s.ready).collect();
        let mut k = 0usize;
        let specials = ["mirror", "emptydir", "bare"];
        while pod_count < o.pods && !ready.is_empty() {
            let s = ready[k % ready.len()];
            let special = specials.get(k).copied();
            k += 1;
            let team = TEAMS[rng.usize(..TEAMS.len())];
            let mut p = PodShape {
                ns: team.into(),
                uid: rng_uid(&mut rng),
                node: Some(s.name.clone()),
                image: "registry.example.com/platform/service:1.42.0".into(),
                phase: "Running".into(),
                grace: 30,
                created: now - rng.i64(600..20 * day),
                ip: next_ip(),
                ..Default::default()
            };
            match special {
                Some("mirror") => {
                    let n0 = &shapes[0].name;
                    p.ns = "kube-system".into();
                    p.name = format!("kube-apiserver-{n0}");
                    p.node = Some(n0.clone());
                    p.owner = Some(("v1".into(), "Node".into(), n0.clone(), shapes[0].uid.clone()));
                    p.annotations = vec![
                        ("kubernetes.io/config.mirror".into(), "5f2c0e7d1a9b4c3e8f6a0b1c2d3e4f5a".into()),
                        ("kubernetes.io/config.source".into(), "file".into()),
                    ];
                    p.image = "registry.k8s.io/kube-apiserver:v1.34.1".into();
                }
                Some("emptydir") => {
                    p.name = format!("dataset-cache-{}", rng_suffix(&mut rng));
                    p.owner = Some((
                        "apps/v1".into(),
                        "ReplicaSet".into(),
                        "dataset-cache-5c8d9f7b6".into(),
                        rng_uid(&mut rng),
                    ));
                    p.empty_dir = true;
                    p.labels = vec![("app".into(), "dataset-cache".into())];
                }
                Some(_) => {
                    p.name = format!("debug-{}", rng_suffix(&mut rng));
                    p.image = "ubuntu:24.04".into();
                }
                None => {
                    let app =
                        ["router", "tokenizer", "feature-store", "metrics-proxy", "notebook"][rng.usize(..5)];
                    let hash = format!("{:x}", 0x5a00_0000u32 + (k as u32 % 97) * 7919);
                    p.name = format!("{app}-{hash}-{}", rng_suffix(&mut rng));
                    p.owner = Some((
                        "apps/v1".into(),
                        "ReplicaSet".into(),
                        format!("{app}-{hash}"),
                        uid_of(&format!("rs/{team}/{app}-{hash}")),
                    ));
                    p.labels = vec![("app".into(), app.into()), ("pod-template-hash".into(), hash)];
                    match rng.u32(0..100) {
                        0..5 => {
                            p.phase = "Succeeded".into();
                            p.owner = Some((
                                "batch/v1".into(),
                                "Job".into(),
                                format!("{app}-cron-{}", k),
                                uid_of(&format!("job/{team}/{k}")),
                            ));
                        }
                        5..6 => {
                            p.waiting = Some("ImagePullBackOff".into());
                            p.phase = "Pending".into();
                        }
                        6..10 => p.restarts = rng.i64(1..6),
                        _ => {}
                    }
                }
            }
            push_pod(&mut raw, &mut used, &mut seen, &mut rng, &mut p);
            pod_count += 1;
        }
        // Quotas: a share of the GPUs per team, used = what the team's pods request.
        let total_gpus: i64 = gpu_nodes.iter().map(|s| s.allocatable_gpus * s.replicas).sum();
        for t in TEAMS {
            let hard = (total_gpus * 2 / TEAMS.len() as i64).max(8);
            objects.push(resource_quota(t, hard, used.get(*t).copied().unwrap_or(0), now - 300 * day));
        }
        // Node events.
        for s in &shapes {
            let ev = |reason: &str, typ: &str, msg: String, comp: &str, t: i64| {
                node_event(
                    &format!(
                        "{}.{}",
                        s.name,
                        &uid_of(&format!("{}/{reason}", s.name)).replace('-', "")[..16]
                    ),
                    &s.name,
                    reason,
                    typ,
                    &msg,
                    comp,
                    t,
                )
            };
            if !s.ready {
                objects.push(ev(
                    "NodeNotReady",
                    "Normal",
                    format!("Node {} status is now: NodeNotReady", s.name),
                    "node-controller",
                    now - 900,
                ));
            }
            if s.cordoned {
                objects.push(ev(
                    "NodeNotSchedulable",
                    "Normal",
                    format!("Node {} status is now: NodeNotSchedulable", s.name),
                    "kubelet",
                    now - 7200,
                ));
            }
            if s.allocatable_gpus < s.gpus {
                objects.push(ev(
                    "GPUUnhealthy",
                    "Warning",
                    "XID 79 on GPU 3 (GPU has fallen off the bus); device marked unhealthy".into(),
                    "nvidia-device-plugin",
                    now - 3600,
                ));
            }
        }
        for (ns, name) in &pending_pods {
            objects.push(json!({"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": format!("{name}.sched"), "namespace": ns, "uid": uid_of(&format!("ev/{ns}/{name}")), "creationTimestamp": ts(now - 120)},
                "involvedObject": {"kind": "Pod", "namespace": ns, "name": name, "apiVersion": "v1"},
                "reason": "FailedScheduling", "type": "Warning", "count": 3,
                "message": format!("0/{} nodes are available: insufficient nvidia.com/gpu. preemption: not eligible due to preemptionPolicy=Never.", o.nodes),
                "source": {"component": "default-scheduler"}, "reportingComponent": "default-scheduler",
                "firstTimestamp": ts(now - 600), "lastTimestamp": ts(now - 120)}));
        }
        // Kueue.
        if kueue_on {
            objects.push(flavor("h100", H100));
            objects.push(flavor("a100", A100));
            let h100: i64 =
                gpu_nodes.iter().filter(|s| s.product == Some(H100)).map(|s| s.allocatable_gpus).sum();
            for (i, t) in TEAMS.iter().enumerate() {
                let share = (h100 / TEAMS.len() as i64).max(8);
                let mut cq = cluster_queue(
                    &format!("{t}-cq"),
                    "h100",
                    share,
                    Some(share / 2),
                    if i % 2 == 0 { Some(share / 4) } else { None },
                );
                cq["metadata"]["uid"] = json!(rng_uid(&mut rng));
                objects.push(cq);
                objects.push(local_queue(t, &format!("{t}-queue"), &format!("{t}-cq")));
            }
            for (team, own, pods, gpus, created, product, pending, queue) in workloads {
                let flavor = if product == Some(A100) { "a100" } else { "h100" };
                let name = format!("{}-{}-{}", own.1.to_lowercase(), own.2, &own.3[..5]);
                let msg = format!(
                    "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor {flavor}, {} more needed",
                    pods * gpus
                );
                let prio = [0, 0, 0, 100, 1000][rng.usize(..5)];
                let mut w = workload(
                    &team,
                    &name,
                    &queue,
                    &format!("{team}-cq"),
                    &own,
                    pods,
                    gpus,
                    prio,
                    created,
                    flavor,
                    if pending { Some(&msg) } else { None },
                );
                w["metadata"]["uid"] = json!(rng_uid(&mut rng));
                objects.push(w);
            }
        }
        let _ = gpu_used;
        Cluster { objects, serialized: raw, pod_logs: Vec::new(), kueue: o.kueue }
    }
}
