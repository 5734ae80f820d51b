//! Kueue objects, read as dynamic objects in whichever version the server serves (v1beta2
//! preferred, v1beta1 otherwise) and trimmed to what the console shows. The two versions differ
//! in a few field names (`spec.cohort` → `spec.cohortName`, LocalQueue `status.flavorUsage` →
//! `status.flavorsUsage`); both spellings are read.

use super::slim::{is_gpu_resource, quantity_count};
use serde_json::Value;

/// The Kueue API group and the visibility (pending workloads) group.
pub const GROUP: &str = "kueue.x-k8s.io";
pub const VISIBILITY_GROUP: &str = "visibility.kueue.x-k8s.io";

/// A ClusterQueue's GPU quota and use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterQueue {
    pub name: String,
    pub cohort: Option<String>,
    pub nominal: u32,
    pub borrowing_limit: Option<u32>,
    pub lending_limit: Option<u32>,
    /// GPUs held by admitted workloads, and how many of those are borrowed from the cohort.
    pub used: u32,
    pub borrowed: u32,
    pub pending: u32,
    pub admitted: u32,
    pub active: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LocalQueue {
    pub namespace: String,
    pub name: String,
    pub cluster_queue: String,
    pub active: bool,
}

/// Where a workload stands, from its conditions (kueue.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WlState {
    Pending,
    /// Quota reserved, waiting on admission checks.
    Reserved,
    Admitted,
    Evicted,
    Succeeded,
    Failed,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub namespace: String,
    pub name: String,
    pub queue: String,
    /// The object that owns the workload (`Job`, `JobSet`, …) and its name.
    pub owner: Option<(String, String)>,
    pub priority: i32,
    pub gpus: u32,
    pub state: WlState,
    /// The condition's reason (`Pending`, `Inadmissible`, `Preempted`, …) and message.
    pub reason: Option<String>,
    pub message: Option<String>,
    pub cluster_queue: Option<String>,
    pub created: i64,
}

fn s(v: &Value, path: &[&str]) -> Option<String> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str().map(str::to_string)
}

fn qty(v: &Value) -> u32 {
    match v {
        Value::String(s) => quantity_count(s),
        Value::Number(n) => n.as_u64().unwrap_or(0).min(u64::from(u32::MAX)) as u32,
        _ => 0,
    }
}

fn arr<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    let mut cur = v;
    for p in path {
        match cur.get(p) {
            Some(x) => cur = x,
            None => return &[],
        }
    }
    cur.as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn condition<'a>(v: &'a Value, ty: &str) -> Option<&'a Value> {
    arr(v, &["status", "conditions"]).iter().find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
}

fn is_true(c: Option<&Value>) -> bool {
    c.and_then(|c| c.get("status")).and_then(Value::as_str) == Some("True")
}

fn epoch(v: &Value, path: &[&str]) -> i64 {
    s(v, path).and_then(|t| t.parse::<jiff::Timestamp>().ok()).map_or(0, |t| t.as_second())
}

/// Sum of GPU resources over `[{name, resources: [{name, total|nominalQuota|…}]}]`.
fn gpu_sum(list: &[Value], field: &str) -> u32 {
    list.iter()
        .flat_map(|f| arr(f, &["resources"]))
        .filter(|r| r.get("name").and_then(Value::as_str).is_some_and(is_gpu_resource))
        .filter_map(|r| r.get(field))
        .map(qty)
        .fold(0, u32::saturating_add)
}

pub fn cluster_queue(obj: &Value) -> ClusterQueue {
    let flavors: Vec<Value> = arr(obj, &["spec", "resourceGroups"])
        .iter()
        .flat_map(|g| arr(g, &["flavors"]).iter().cloned())
        .collect();
    let limit = |field: &str| -> Option<u32> {
        let mut any = false;
        let mut sum = 0u32;
        for r in flavors.iter().flat_map(|f| arr(f, &["resources"])) {
            if r.get("name").and_then(Value::as_str).is_some_and(is_gpu_resource)
                && let Some(v) = r.get(field)
            {
                any = true;
                sum = sum.saturating_add(qty(v));
            }
        }
        any.then_some(sum)
    };
    let usage = arr(obj, &["status", "flavorsUsage"]);
    ClusterQueue {
        name: s(obj, &["metadata", "name"]).unwrap_or_default(),
        cohort: s(obj, &["spec", "cohortName"]).or_else(|| s(obj, &["spec", "cohort"])),
        nominal: gpu_sum(&flavors, "nominalQuota"),
        borrowing_limit: limit("borrowingLimit"),
        lending_limit: limit("lendingLimit"),
        used: gpu_sum(usage, "total"),
        borrowed: gpu_sum(usage, "borrowed"),
        pending: count(obj, "pendingWorkloads"),
        admitted: count(obj, "admittedWorkloads"),
        active: condition(obj, "Active").is_none_or(|c| is_true(Some(c))),
    }
}

fn count(obj: &Value, field: &str) -> u32 {
    obj.get("status").and_then(|s| s.get(field)).and_then(Value::as_u64).unwrap_or(0) as u32
}

pub fn local_queue(obj: &Value) -> LocalQueue {
    LocalQueue {
        namespace: s(obj, &["metadata", "namespace"]).unwrap_or_default(),
        name: s(obj, &["metadata", "name"]).unwrap_or_default(),
        cluster_queue: s(obj, &["spec", "clusterQueue"]).unwrap_or_default(),
        active: condition(obj, "Active").is_none_or(|c| is_true(Some(c))),
    }
}

pub fn workload(obj: &Value) -> Workload {
    let gpus = arr(obj, &["spec", "podSets"])
        .iter()
        .map(|ps| {
            let count = ps.get("count").and_then(Value::as_u64).unwrap_or(1).min(u64::from(u32::MAX)) as u32;
            let per_pod: u32 = arr(ps, &["template", "spec", "containers"])
                .iter()
                .map(|c| {
                    let res = c.get("resources");
                    let pick = |k: &str| res.and_then(|r| r.get(k)).and_then(Value::as_object);
                    let m = pick("requests")
                        .filter(|m| m.keys().any(|k| is_gpu_resource(k)))
                        .or_else(|| pick("limits"));
                    m.map(|m| {
                        m.iter()
                            .filter(|(k, _)| is_gpu_resource(k))
                            .map(|(_, v)| qty(v))
                            .fold(0, u32::saturating_add)
                    })
                    .unwrap_or(0)
                })
                .fold(0, u32::saturating_add);
            count.saturating_mul(per_pod)
        })
        .fold(0, u32::saturating_add);
    let finished = condition(obj, "Finished");
    let evicted = condition(obj, "Evicted");
    let admitted = condition(obj, "Admitted");
    let reserved = condition(obj, "QuotaReserved");
    let (state, cond) = if is_true(finished) {
        let failed = finished.and_then(|c| c.get("reason")).and_then(Value::as_str) == Some("Failed");
        (if failed { WlState::Failed } else { WlState::Succeeded }, finished)
    } else if is_true(evicted) && !is_true(admitted) {
        (WlState::Evicted, evicted)
    } else if is_true(admitted) {
        (WlState::Admitted, admitted)
    } else if is_true(reserved) {
        (WlState::Reserved, reserved)
    } else {
        (WlState::Pending, reserved)
    };
    let owner = arr(obj, &["metadata", "ownerReferences"])
        .first()
        .and_then(|o| Some((o.get("kind")?.as_str()?.to_string(), o.get("name")?.as_str()?.to_string())));
    Workload {
        namespace: s(obj, &["metadata", "namespace"]).unwrap_or_default(),
        name: s(obj, &["metadata", "name"]).unwrap_or_default(),
        queue: s(obj, &["spec", "queueName"]).unwrap_or_default(),
        owner,
        priority: obj.get("spec").and_then(|s| s.get("priority")).and_then(Value::as_i64).unwrap_or(0) as i32,
        gpus,
        state,
        reason: cond.and_then(|c| s(c, &["reason"])),
        message: cond.and_then(|c| s(c, &["message"])),
        cluster_queue: s(obj, &["status", "admission", "clusterQueue"]),
        created: epoch(obj, &["metadata", "creationTimestamp"]),
    }
}

/// One entry of a `PendingWorkloadsSummary` (visibility API): the workload and its 0-based
/// positions.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub namespace: String,
    pub name: String,
    pub in_cluster_queue: u32,
    pub in_local_queue: u32,
}

pub fn pending_summary(body: &[u8]) -> Result<Vec<Pending>, serde_json::Error> {
    let v: Value = serde_json::from_slice(body)?;
    Ok(arr(&v, &["items"])
        .iter()
        .map(|i| Pending {
            namespace: s(i, &["metadata", "namespace"]).unwrap_or_default(),
            name: s(i, &["metadata", "name"]).unwrap_or_default(),
            in_cluster_queue: i.get("positionInClusterQueue").and_then(Value::as_u64).unwrap_or(0) as u32,
            in_local_queue: i.get("positionInLocalQueue").and_then(Value::as_u64).unwrap_or(0) as u32,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cluster_queue_in_both_versions() {
        let spec = json!({"resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
            {"name": "h100", "resources": [{"name": "cpu", "nominalQuota": "1792"},
                {"name": "nvidia.com/gpu", "nominalQuota": "64", "borrowingLimit": "32", "lendingLimit": "16"}]},
            {"name": "a100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]});
        let status = json!({"pendingWorkloads": 3, "admittedWorkloads": 5,
            "flavorsUsage": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "total": "70", "borrowed": "6"}]}],
            "conditions": [{"type": "Active", "status": "True"}]});
        let mut b2 = spec.clone();
        b2["cohortName"] = json!("pool");
        let mut b1 = spec;
        b1["cohort"] = json!("pool");
        for s in [b2, b1] {
            let cq = cluster_queue(&json!({"metadata": {"name": "research"}, "spec": s, "status": status}));
            assert_eq!(cq.cohort.as_deref(), Some("pool"));
            assert_eq!((cq.nominal, cq.borrowing_limit, cq.lending_limit), (72, Some(32), Some(16)));
            assert_eq!((cq.used, cq.borrowed, cq.pending, cq.admitted, cq.active), (70, 6, 3, 5, true));
        }
    }

    #[test]
    fn workload_state_from_conditions() {
        let wl = |conds: Value| {
            workload(&json!({"metadata": {"name": "job-a-1", "namespace": "team-a",
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "ownerReferences": [{"kind": "Job", "name": "a", "apiVersion": "batch/v1", "uid": "u"}]},
                "spec": {"queueName": "lq", "priority": 10, "podSets": [{"name": "main", "count": 2,
                    "template": {"spec": {"containers": [{"resources": {"requests": {"nvidia.com/gpu": "4"}}}]}}}]},
                "status": {"conditions": conds}}))
        };
        let p = wl(json!([{"type": "QuotaReserved", "status": "False", "reason": "Pending",
            "message": "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more needed"}]));
        assert_eq!((p.state, p.gpus, p.priority), (WlState::Pending, 8, 10));
        assert_eq!(p.owner, Some(("Job".into(), "a".into())));
        assert!(p.message.unwrap().contains("8 more needed"));
        assert_eq!(p.created, 1_767_225_600);
        let a =
            wl(json!([{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]));
        assert_eq!(a.state, WlState::Admitted);
        let r =
            wl(json!([{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "False"}]));
        assert_eq!(r.state, WlState::Reserved);
        let f = wl(json!([{"type": "Finished", "status": "True", "reason": "Failed"}]));
        assert_eq!(f.state, WlState::Failed);
        let e = wl(json!([{"type": "Evicted", "status": "True", "reason": "Preempted"}]));
        assert_eq!((e.state, e.reason.as_deref()), (WlState::Evicted, Some("Preempted")));
    }

    #[test]
    fn pending_workloads_summary() {
        let body = br#"{"kind":"PendingWorkloadsSummary","items":[
            {"metadata":{"name":"w1","namespace":"a"},"priority":0,"localQueueName":"q","positionInClusterQueue":0,"positionInLocalQueue":0},
            {"metadata":{"name":"w2","namespace":"b"},"positionInClusterQueue":1,"positionInLocalQueue":0}]}"#;
        let p = pending_summary(body).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!((p[1].name.as_str(), p[1].in_cluster_queue), ("w2", 1));
        assert!(pending_summary(b"<html>").is_err());
    }
}
