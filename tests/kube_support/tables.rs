//! Server-side printing: `meta.k8s.io/v1 Table` responses for kubectl.

use super::util::{human_age, now_secs, parse_ts};
use serde_json::{Value, json};

/// What rows carry as `object` (`includeObject` query parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    None,
    Metadata,
    Object,
}

impl Include {
    pub fn parse(s: Option<&str>) -> Include {
        match s {
            Some("None") => Include::None,
            Some("Object") => Include::Object,
            _ => Include::Metadata,
        }
    }
}

fn col(name: &str, typ: &str, format: &str, desc: &str, priority: i32) -> Value {
    json!({"name": name, "type": typ, "format": format, "description": desc, "priority": priority})
}

fn columns(kind: &str) -> Vec<Value> {
    match kind {
        "Node" => vec![
            col("Name", "string", "name", "Name must be unique within a namespace.", 0),
            col("Status", "string", "", "The status of the node", 0),
            col("Roles", "string", "", "The roles of the node", 0),
            col(
                "Age",
                "string",
                "",
                "CreationTimestamp is a timestamp representing the server time when this object was created.",
                0,
            ),
            col("Version", "string", "", "Kubelet Version reported by the node.", 0),
            col("Internal-IP", "string", "", "List of addresses reachable to the node.", 1),
            col("External-IP", "string", "", "List of addresses reachable to the node.", 1),
            col(
                "OS-Image",
                "string",
                "",
                "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
                1,
            ),
            col(
                "Kernel-Version",
                "string",
                "",
                "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
                1,
            ),
            col(
                "Container-Runtime",
                "string",
                "",
                "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
                1,
            ),
        ],
        "Pod" => vec![
            col("Name", "string", "name", "Name must be unique within a namespace.", 0),
            col("Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic.", 0),
            col("Status", "string", "", "The aggregate status of the containers in this pod.", 0),
            col(
                "Restarts",
                "string",
                "",
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
                0,
            ),
            col(
                "Age",
                "string",
                "",
                "CreationTimestamp is a timestamp representing the server time when this object was created.",
                0,
            ),
            col(
                "IP",
                "string",
                "",
                "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
                1,
            ),
            col("Node", "string", "", "NodeName is a request to schedule this pod onto a specific node.", 1),
            col(
                "Nominated Node",
                "string",
                "",
                "nominatedNodeName is set when this pod preempts other pods on the node.",
                1,
            ),
            col(
                "Readiness Gates",
                "string",
                "",
                "If specified, all readiness gates will be evaluated for pod readiness.",
                1,
            ),
        ],
        _ => vec![
            col("Name", "string", "name", "Name must be unique within a namespace.", 0),
            col(
                "Age",
                "string",
                "",
                "CreationTimestamp is a timestamp representing the server time when this object was created.",
                0,
            ),
        ],
    }
}

fn age(v: &Value, now: i64) -> String {
    match v["metadata"]["creationTimestamp"].as_str().and_then(parse_ts) {
        Some(t) => human_age(now - t),
        None => "<unknown>".into(),
    }
}

fn node_cells(v: &Value, now: i64) -> Vec<Value> {
    let mut status =
        match v["status"]["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Ready") {
            Some(c) if c["status"] == "True" => "Ready".to_string(),
            Some(_) => "NotReady".to_string(),
            None => "Unknown".to_string(),
        };
    if v["spec"]["unschedulable"] == json!(true) {
        status.push_str(",SchedulingDisabled");
    }
    let mut roles: Vec<String> = v["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/").map(String::from))
        .filter(|r| !r.is_empty())
        .collect();
    roles.sort();
    let roles = if roles.is_empty() { "<none>".to_string() } else { roles.join(",") };
    let addr = |t: &str| {
        v["status"]["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["type"] == t)
            .and_then(|a| a["address"].as_str())
            .unwrap_or("<none>")
            .to_string()
    };
    let info = &v["status"]["nodeInfo"];
    let s = |x: &Value| x.as_str().unwrap_or("<unknown>").to_string();
    vec![
        v["metadata"]["name"].clone(),
        json!(status),
        json!(roles),
        json!(age(v, now)),
        json!(s(&info["kubeletVersion"])),
        json!(addr("InternalIP")),
        json!(addr("ExternalIP")),
        json!(s(&info["osImage"])),
        json!(s(&info["kernelVersion"])),
        json!(s(&info["containerRuntimeVersion"])),
    ]
}

fn pod_cells(v: &Value, now: i64) -> Vec<Value> {
    let st = &v["status"];
    let total = v["spec"]["containers"].as_array().map_or(0, |a| a.len());
    let statuses = st["containerStatuses"].as_array().cloned().unwrap_or_default();
    let ready = statuses.iter().filter(|c| c["ready"] == json!(true)).count();
    let restarts: i64 = statuses.iter().map(|c| c["restartCount"].as_i64().unwrap_or(0)).sum();
    let mut reason = st["reason"].as_str().or(st["phase"].as_str()).unwrap_or("Unknown").to_string();
    for c in &statuses {
        if let Some(r) = c["state"]["waiting"]["reason"].as_str() {
            reason = r.to_string();
        } else if let Some(r) = c["state"]["terminated"]["reason"].as_str() {
            reason = r.to_string();
        }
    }
    if st["phase"] == "Pending"
        && statuses.is_empty()
        && st["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "PodScheduled" && c["status"] == "False")
    {
        reason = "Pending".into();
    }
    if !v["metadata"]["deletionTimestamp"].is_null() {
        reason = "Terminating".into();
    }
    let node = v["spec"]["nodeName"].as_str().unwrap_or("<none>");
    let gates = match v["spec"]["readinessGates"].as_array() {
        Some(g) if !g.is_empty() => format!("0/{}", g.len()),
        _ => "<none>".into(),
    };
    vec![
        v["metadata"]["name"].clone(),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts),
        json!(age(v, now)),
        json!(st["podIP"].as_str().unwrap_or("<none>")),
        json!(node),
        json!(st["nominatedNodeName"].as_str().unwrap_or("<none>")),
        json!(gates),
    ]
}

fn row_object(v: &Value, inc: Include) -> Option<Value> {
    match inc {
        Include::None => None,
        Include::Object => Some(v.clone()),
        Include::Metadata => {
            let mut md = v["metadata"].clone();
            if let Some(m) = md.as_object_mut() {
                m.remove("managedFields");
            }
            Some(json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": md}))
        }
    }
}

/// One row for an object.
pub fn row(kind: &str, v: &Value, inc: Include) -> Value {
    let now = now_secs();
    let cells = match kind {
        "Node" => node_cells(v, now),
        "Pod" => pod_cells(v, now),
        _ => vec![v["metadata"]["name"].clone(), json!(age(v, now))],
    };
    let mut r = json!({"cells": cells});
    if let Some(o) = row_object(v, inc) {
        r["object"] = o;
    }
    r
}

/// A Table around rows (list metadata passed through).
pub fn table(kind: &str, rows: Vec<Value>, list_meta: Value) -> Value {
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
        "columnDefinitions": columns(kind), "rows": rows,
    })
}
