//! The resources the fake serves, and the discovery documents built from them.

use serde_json::{Value, json};

/// When a resource is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    Always,
    Kueue,
    Visibility,
}

#[derive(Debug)]
pub struct Sub {
    pub name: &'static str,
    pub kind: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub verbs: &'static [&'static str],
}

#[derive(Debug)]
pub struct ResDef {
    pub group: &'static str,
    /// Versions this resource exists in, preferred first.
    pub versions: &'static [&'static str],
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short: &'static [&'static str],
    pub verbs: &'static [&'static str],
    pub subs: &'static [Sub],
    /// Field-selector fields besides `metadata.name` / `metadata.namespace`.
    pub fields: &'static [&'static str],
    pub feature: Feature,
}

impl ResDef {
    /// Where the objects live: events.k8s.io Events are core Events seen another way.
    pub fn storage(&self) -> StorageKey {
        if self.group == "events.k8s.io" { ("", "events") } else { (self.group, self.plural) }
    }
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() { version.to_string() } else { format!("{}/{version}", self.group) }
    }
}

/// (group, plural) of the stored resource.
pub type StorageKey = (&'static str, &'static str);

const RW: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
const STATUS: Sub =
    Sub { name: "status", kind: "", group: "", version: "", verbs: &["get", "patch", "update"] };
const POD_FIELDS: &[&str] = &[
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
];
const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];
const NEW_EVENT_FIELDS: &[&str] = &[
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reason",
    "reportingController",
    "type",
];

macro_rules! res {
    ($g:expr, $v:expr, $p:expr, $s:expr, $k:expr, $ns:expr, $short:expr) => {
        res!($g, $v, $p, $s, $k, $ns, $short, RW, &[], &[], Feature::Always)
    };
    ($g:expr, $v:expr, $p:expr, $s:expr, $k:expr, $ns:expr, $short:expr, $verbs:expr, $subs:expr, $fields:expr, $f:expr) => {
        ResDef {
            group: $g,
            versions: $v,
            plural: $p,
            singular: $s,
            kind: $k,
            namespaced: $ns,
            short: $short,
            verbs: $verbs,
            subs: $subs,
            fields: $fields,
            feature: $f,
        }
    };
}

pub static RESOURCES: &[ResDef] = &[
    res!(
        "",
        &["v1"],
        "namespaces",
        "namespace",
        "Namespace",
        false,
        &["ns"],
        RW,
        &[STATUS],
        &["status.phase"],
        Feature::Always
    ),
    res!(
        "",
        &["v1"],
        "nodes",
        "node",
        "Node",
        false,
        &["no"],
        RW,
        &[STATUS],
        &["spec.unschedulable"],
        Feature::Always
    ),
    res!(
        "",
        &["v1"],
        "pods",
        "pod",
        "Pod",
        true,
        &["po"],
        RW,
        &[
            Sub { name: "eviction", kind: "Eviction", group: "policy", version: "v1", verbs: &["create"] },
            Sub { name: "log", kind: "Pod", group: "", version: "", verbs: &["get"] },
            STATUS,
        ],
        POD_FIELDS,
        Feature::Always
    ),
    res!("", &["v1"], "events", "event", "Event", true, &["ev"], RW, &[], EVENT_FIELDS, Feature::Always),
    res!(
        "",
        &["v1"],
        "resourcequotas",
        "resourcequota",
        "ResourceQuota",
        true,
        &["quota"],
        RW,
        &[STATUS],
        &[],
        Feature::Always
    ),
    res!("apps", &["v1"], "daemonsets", "daemonset", "DaemonSet", true, &["ds"]),
    res!("apps", &["v1"], "deployments", "deployment", "Deployment", true, &["deploy"]),
    res!("apps", &["v1"], "replicasets", "replicaset", "ReplicaSet", true, &["rs"]),
    res!("apps", &["v1"], "statefulsets", "statefulset", "StatefulSet", true, &["sts"]),
    res!(
        "batch",
        &["v1"],
        "jobs",
        "job",
        "Job",
        true,
        &[],
        RW,
        &[STATUS],
        &["status.successful"],
        Feature::Always
    ),
    res!(
        "policy",
        &["v1", "v1beta1"],
        "poddisruptionbudgets",
        "poddisruptionbudget",
        "PodDisruptionBudget",
        true,
        &["pdb"],
        RW,
        &[STATUS],
        &[],
        Feature::Always
    ),
    res!(
        "authentication.k8s.io",
        &["v1"],
        "selfsubjectreviews",
        "selfsubjectreview",
        "SelfSubjectReview",
        false,
        &[],
        &["create"],
        &[],
        &[],
        Feature::Always
    ),
    res!(
        "authorization.k8s.io",
        &["v1"],
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
        "SelfSubjectAccessReview",
        false,
        &[],
        &["create"],
        &[],
        &[],
        Feature::Always
    ),
    res!(
        "events.k8s.io",
        &["v1"],
        "events",
        "event",
        "Event",
        true,
        &["ev"],
        RW,
        &[],
        NEW_EVENT_FIELDS,
        Feature::Always
    ),
    res!(
        "kueue.x-k8s.io",
        &["v1beta2", "v1beta1"],
        "clusterqueues",
        "clusterqueue",
        "ClusterQueue",
        false,
        &["cq"],
        RW,
        &[STATUS],
        &[],
        Feature::Kueue
    ),
    res!(
        "kueue.x-k8s.io",
        &["v1beta2", "v1beta1"],
        "localqueues",
        "localqueue",
        "LocalQueue",
        true,
        &["queue", "queues", "lq"],
        RW,
        &[STATUS],
        &[],
        Feature::Kueue
    ),
    res!(
        "kueue.x-k8s.io",
        &["v1beta2", "v1beta1"],
        "workloads",
        "workload",
        "Workload",
        true,
        &["wl"],
        RW,
        &[STATUS],
        &[],
        Feature::Kueue
    ),
    res!(
        "kueue.x-k8s.io",
        &["v1beta2", "v1beta1"],
        "resourceflavors",
        "resourceflavor",
        "ResourceFlavor",
        false,
        &["flavor", "flavors", "rf"],
        RW,
        &[],
        &[],
        Feature::Kueue
    ),
    res!(
        "kueue.x-k8s.io",
        &["v1beta2", "v1beta1"],
        "cohorts",
        "cohort",
        "Cohort",
        false,
        &["co"],
        RW,
        &[STATUS],
        &[],
        Feature::Kueue
    ),
    res!(
        "visibility.kueue.x-k8s.io",
        &["v1beta2", "v1beta1"],
        "clusterqueues",
        "clusterqueue",
        "ClusterQueue",
        false,
        &[],
        &["get"],
        &[Sub {
            name: "pendingworkloads",
            kind: "PendingWorkloadsSummary",
            group: "",
            version: "",
            verbs: &["get"]
        }],
        &[],
        Feature::Visibility
    ),
    res!(
        "visibility.kueue.x-k8s.io",
        &["v1beta2", "v1beta1"],
        "localqueues",
        "localqueue",
        "LocalQueue",
        true,
        &[],
        &["get"],
        &[Sub {
            name: "pendingworkloads",
            kind: "PendingWorkloadsSummary",
            group: "",
            version: "",
            verbs: &["get"]
        }],
        &[],
        Feature::Visibility
    ),
];

/// Which optional API groups are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Served {
    pub kueue_v1beta1: bool,
    pub kueue_v1beta2: bool,
}

impl Served {
    pub fn version_on(&self, def: &ResDef, version: &str) -> bool {
        if !def.versions.contains(&version) {
            return false;
        }
        match def.feature {
            Feature::Always => true,
            Feature::Kueue | Feature::Visibility => match version {
                "v1beta1" => self.kueue_v1beta1,
                "v1beta2" => self.kueue_v1beta2,
                _ => false,
            },
        }
    }
}

pub fn find(group: &str, version: &str, plural: &str, served: &Served) -> Option<&'static ResDef> {
    RESOURCES.iter().find(|d| d.group == group && d.plural == plural && served.version_on(d, version))
}

/// The stored definition for a storage key.
pub fn by_storage(key: StorageKey) -> &'static ResDef {
    RESOURCES.iter().find(|d| d.group == key.0 && d.plural == key.1).expect("known storage")
}

/// Group versions served, in discovery order, preferred first within a group.
fn group_versions(served: &Served) -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for d in RESOURCES {
        if d.group.is_empty() {
            continue;
        }
        for v in d.versions {
            if !served.version_on(d, v) {
                continue;
            }
            match out.iter_mut().find(|(g, _)| *g == d.group) {
                Some((_, vs)) => {
                    if !vs.contains(v) {
                        vs.push(v)
                    }
                }
                None => out.push((d.group, vec![v])),
            }
        }
    }
    out
}

pub fn api_versions(addr: &str) -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"],
           "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr}]})
}

fn group_json(g: &str, vs: &[&str]) -> Value {
    let versions: Vec<Value> =
        vs.iter().map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v})).collect();
    json!({"name": g, "versions": versions, "preferredVersion": versions[0]})
}

pub fn api_group_list(served: &Served) -> Value {
    let groups: Vec<Value> = group_versions(served).iter().map(|(g, vs)| group_json(g, vs)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn api_group(group: &str, served: &Served) -> Option<Value> {
    let (g, vs) = group_versions(served).into_iter().find(|(g, _)| *g == group)?;
    let mut v = group_json(g, &vs);
    v["kind"] = json!("APIGroup");
    v["apiVersion"] = json!("v1");
    Some(v)
}

/// `APIResourceList` for a group version, `None` if not served.
pub fn resource_list(group: &str, version: &str, served: &Served) -> Option<Value> {
    let mut list = Vec::new();
    for d in RESOURCES.iter().filter(|d| d.group == group && served.version_on(d, version)) {
        let mut r = json!({
            "name": d.plural, "singularName": d.singular, "namespaced": d.namespaced,
            "kind": d.kind, "verbs": d.verbs,
        });
        if !d.short.is_empty() {
            r["shortNames"] = json!(d.short);
        }
        if d.verbs.len() > 1 {
            r["storageVersionHash"] = json!(format!("{:x}", d.plural.len() * 7919 + d.kind.len()));
        }
        list.push(r);
        for s in d.subs {
            let mut r = json!({
                "name": format!("{}/{}", d.plural, s.name), "singularName": "",
                "namespaced": d.namespaced,
                "kind": if s.kind.is_empty() { d.kind } else { s.kind }, "verbs": s.verbs,
            });
            if !s.group.is_empty() {
                r["group"] = json!(s.group);
                r["version"] = json!(s.version);
            }
            list.push(r);
        }
    }
    if list.is_empty() {
        return None;
    }
    let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}))
}
