//! Kueue: queue status bookkeeping, workload admission and the visibility API
//! (pending workloads per ClusterQueue / LocalQueue).

use super::store::Store;
use super::util::{ApiError, now_secs, ts};
use serde_json::{Value, json};
use std::collections::BTreeMap;

pub const CQS: (&str, &str) = ("kueue.x-k8s.io", "clusterqueues");
pub const LQS: (&str, &str) = ("kueue.x-k8s.io", "localqueues");
pub const WLS: (&str, &str) = ("kueue.x-k8s.io", "workloads");
pub const RFS: (&str, &str) = ("kueue.x-k8s.io", "resourceflavors");

fn cond_true(wl: &Value, t: &str) -> bool {
    wl["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == t && c["status"] == "True")
}

pub fn is_pending(wl: &Value) -> bool {
    !cond_true(wl, "QuotaReserved") && !cond_true(wl, "Finished") && wl["spec"]["active"] != json!(false)
}

fn cq_of(st: &Store, wl: &Value) -> Option<String> {
    let ns = wl["metadata"]["namespace"].as_str()?;
    let lq = wl["spec"]["queueName"].as_str()?;
    st.get_value(LQS, ns, lq)?["spec"]["clusterQueue"].as_str().map(String::from)
}

/// Pending workloads of a ClusterQueue in admission order: priority desc, then creation time.
fn pending_in(st: &Store, cq: &str) -> Vec<Value> {
    let mut v: Vec<Value> = st
        .iter(WLS, None)
        .into_iter()
        .map(|o| o.value())
        .filter(|w| is_pending(w) && cq_of(st, w).as_deref() == Some(cq))
        .collect();
    v.sort_by(|a, b| {
        let pa = a["spec"]["priority"].as_i64().unwrap_or(0);
        let pb = b["spec"]["priority"].as_i64().unwrap_or(0);
        pb.cmp(&pa)
            .then_with(|| {
                let ta =
                    super::util::parse_ts(a["metadata"]["creationTimestamp"].as_str().unwrap_or_default());
                let tb =
                    super::util::parse_ts(b["metadata"]["creationTimestamp"].as_str().unwrap_or_default());
                ta.cmp(&tb)
            })
            .then_with(|| a["metadata"]["name"].as_str().cmp(&b["metadata"]["name"].as_str()))
    });
    v
}

/// `PendingWorkloadsSummary` for a ClusterQueue (`lq` = None) or a LocalQueue (`Some((ns, lq))`).
pub fn pending_workloads(
    st: &Store,
    version: &str,
    cq: Option<&str>,
    lq: Option<(&str, &str)>,
    limit: usize,
    offset: usize,
) -> Result<Value, ApiError> {
    let cq_name = match (cq, lq) {
        (Some(c), _) => {
            st.get(CQS, "", c)
                .ok_or_else(|| ApiError::not_found("visibility.kueue.x-k8s.io", "clusterqueues", c))?;
            c.to_string()
        }
        (None, Some((ns, l))) => {
            let q = st
                .get_value(LQS, ns, l)
                .ok_or_else(|| ApiError::not_found("visibility.kueue.x-k8s.io", "localqueues", l))?;
            q["spec"]["clusterQueue"].as_str().unwrap_or_default().to_string()
        }
        _ => return Err(ApiError::bad_request("need a ClusterQueue or LocalQueue")),
    };
    let all = pending_in(st, &cq_name);
    let mut per_lq: BTreeMap<(String, String), i64> = BTreeMap::new();
    let mut items = Vec::new();
    for (pos, w) in all.iter().enumerate() {
        let ns = w["metadata"]["namespace"].as_str().unwrap_or_default().to_string();
        let q = w["spec"]["queueName"].as_str().unwrap_or_default().to_string();
        let c = per_lq.entry((ns.clone(), q.clone())).or_insert(0);
        let lq_pos = *c;
        *c += 1;
        if let Some((lns, lname)) = lq
            && (lns != ns || lname != q)
        {
            continue;
        }
        let mut md = json!({
            "name": w["metadata"]["name"], "namespace": ns,
            "creationTimestamp": w["metadata"]["creationTimestamp"],
        });
        if w["metadata"]["ownerReferences"].is_array() {
            md["ownerReferences"] = w["metadata"]["ownerReferences"].clone();
        }
        items.push(json!({
            "metadata": md,
            "priority": w["spec"]["priority"].as_i64().unwrap_or(0),
            "localQueueName": q,
            "positionInClusterQueue": pos,
            "positionInLocalQueue": lq_pos,
        }));
    }
    let items: Vec<Value> = items.into_iter().skip(offset).take(limit).collect();
    Ok(json!({
        "kind": "PendingWorkloadsSummary",
        "apiVersion": format!("visibility.kueue.x-k8s.io/{version}"),
        "metadata": {"creationTimestamp": null},
        "items": items,
    }))
}

/// Marks a workload admitted to its ClusterQueue with `flavor` for every resource its pod sets
/// request (QuotaReserved + Admitted conditions and `status.admission`).
pub fn admit(st: &Store, wl: &mut Value, flavor: &str) -> Result<(), ApiError> {
    let cq = cq_of(st, wl).ok_or_else(|| ApiError::bad_request("workload's LocalQueue not found"))?;
    let now = ts(now_secs());
    let mut assignments = Vec::new();
    for ps in wl["spec"]["podSets"].as_array().into_iter().flatten() {
        let count = ps["count"].as_i64().unwrap_or(1);
        let mut flavors = serde_json::Map::new();
        let mut usage = serde_json::Map::new();
        for (res, q) in pod_set_requests(ps) {
            flavors.insert(res.clone(), json!(flavor));
            usage.insert(res, json!(fmt_qty(q * count as f64)));
        }
        assignments
            .push(json!({"name": ps["name"], "flavors": flavors, "resourceUsage": usage, "count": count}));
    }
    wl["status"]["admission"] = json!({"clusterQueue": cq, "podSetAssignments": assignments});
    let generation = wl["metadata"]["generation"].as_i64().unwrap_or(1);
    let mut conds: Vec<Value> = wl["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c["type"] != "QuotaReserved" && c["type"] != "Admitted")
        .collect();
    conds.push(json!({"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
        "message": format!("Quota reserved in ClusterQueue {cq}"), "lastTransitionTime": now, "observedGeneration": generation}));
    conds.push(json!({"type": "Admitted", "status": "True", "reason": "Admitted",
        "message": "The workload is admitted", "lastTransitionTime": now, "observedGeneration": generation}));
    wl["status"]["conditions"] = json!(conds);
    Ok(())
}

/// Per-pod requests of a pod set (first container's requests summed over containers).
pub fn pod_set_requests(ps: &Value) -> Vec<(String, f64)> {
    let mut m: BTreeMap<String, f64> = BTreeMap::new();
    for c in ps["template"]["spec"]["containers"].as_array().into_iter().flatten() {
        for (k, q) in c["resources"]["requests"].as_object().into_iter().flatten() {
            *m.entry(k.clone()).or_default() += parse_qty(q.as_str().unwrap_or("0"));
        }
    }
    m.into_iter().collect()
}

pub fn parse_qty(s: &str) -> f64 {
    let units = [
        ("Ki", 1024f64),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("Ti", 1099511627776.0),
        ("m", 0.001),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
    ];
    for (u, f) in units {
        if let Some(n) = s.strip_suffix(u) {
            return n.parse::<f64>().unwrap_or(0.0) * f;
        }
    }
    s.parse().unwrap_or(0.0)
}

pub fn fmt_qty(q: f64) -> String {
    if q.fract() == 0.0 {
        return format!("{}", q as i64);
    }
    format!("{}m", (q * 1000.0).round() as i64)
}

/// Recomputes ClusterQueue and LocalQueue status (counts, reservation/usage per flavor) from
/// the workloads.
pub fn refresh_queues(st: &mut Store) {
    // (cq) -> counts, (cq, flavor, resource) -> total
    let mut cq_counts: BTreeMap<String, (i64, i64, i64)> = BTreeMap::new();
    let mut lq_counts: BTreeMap<(String, String), (i64, i64, i64)> = BTreeMap::new();
    let mut cq_use: BTreeMap<String, BTreeMap<(String, String), f64>> = BTreeMap::new();
    let mut lq_use: BTreeMap<(String, String), BTreeMap<(String, String), f64>> = BTreeMap::new();
    for w in st.iter(WLS, None) {
        let w = w.value();
        if cond_true(&w, "Finished") {
            continue;
        }
        let ns = w["metadata"]["namespace"].as_str().unwrap_or_default().to_string();
        let q = w["spec"]["queueName"].as_str().unwrap_or_default().to_string();
        let Some(cq) = cq_of(st, &w) else { continue };
        let c = cq_counts.entry(cq.clone()).or_default();
        let l = lq_counts.entry((ns.clone(), q.clone())).or_default();
        if cond_true(&w, "QuotaReserved") {
            c.1 += 1;
            l.1 += 1;
            if cond_true(&w, "Admitted") {
                c.2 += 1;
                l.2 += 1;
            }
            for a in w["status"]["admission"]["podSetAssignments"].as_array().into_iter().flatten() {
                for (res, fl) in a["flavors"].as_object().into_iter().flatten() {
                    let qty = parse_qty(a["resourceUsage"][res].as_str().unwrap_or("0"));
                    let k = (fl.as_str().unwrap_or_default().to_string(), res.clone());
                    *cq_use.entry(cq.clone()).or_default().entry(k.clone()).or_default() += qty;
                    *lq_use.entry((ns.clone(), q.clone())).or_default().entry(k).or_default() += qty;
                }
            }
        } else if is_pending(&w) {
            c.0 += 1;
            l.0 += 1;
        }
    }
    for cq in st.iter(CQS, None) {
        let mut v = cq.value();
        let (p, r, a) = cq_counts.get(&cq.name).copied().unwrap_or_default();
        let used = cq_use.get(&cq.name).cloned().unwrap_or_default();
        let mut flavors = Vec::new();
        for rg in v["spec"]["resourceGroups"].as_array().into_iter().flatten() {
            for f in rg["flavors"].as_array().into_iter().flatten() {
                let fname = f["name"].as_str().unwrap_or_default().to_string();
                let res: Vec<Value> = f["resources"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| {
                        let rn = r["name"].as_str().unwrap_or_default().to_string();
                        let total = used.get(&(fname.clone(), rn.clone())).copied().unwrap_or(0.0);
                        let nominal = parse_qty(r["nominalQuota"].as_str().unwrap_or("0"));
                        json!({"name": rn, "total": fmt_qty(total), "borrowed": fmt_qty((total - nominal).max(0.0))})
                    })
                    .collect();
                flavors.push(json!({"name": fname, "resources": res}));
            }
        }
        let mut status = v["status"].clone();
        if !status.is_object() {
            status = json!({});
        }
        status["pendingWorkloads"] = json!(p);
        status["reservingWorkloads"] = json!(r);
        status["admittedWorkloads"] = json!(a);
        status["flavorsReservation"] = json!(flavors);
        status["flavorsUsage"] = json!(flavors);
        if status["conditions"].is_null() {
            status["conditions"] = json!([{"type": "Active", "status": "True", "reason": "Ready",
                "message": "Can admit new workloads", "lastTransitionTime": ts(now_secs()), "observedGeneration": 1}]);
        }
        if status != v["status"] {
            v["status"] = status;
            st.put(CQS, v);
        }
    }
    for lq in st.iter(LQS, None) {
        let mut v = lq.value();
        let key = (lq.ns.clone(), lq.name.clone());
        let (p, r, a) = lq_counts.get(&key).copied().unwrap_or_default();
        let used = lq_use.get(&key).cloned().unwrap_or_default();
        let mut by_flavor: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for ((f, res), total) in used {
            by_flavor.entry(f).or_default().push(json!({"name": res, "total": fmt_qty(total)}));
        }
        let flavors: Vec<Value> =
            by_flavor.into_iter().map(|(f, r)| json!({"name": f, "resources": r})).collect();
        let mut status = v["status"].clone();
        if !status.is_object() {
            status = json!({});
        }
        status["pendingWorkloads"] = json!(p);
        status["reservingWorkloads"] = json!(r);
        status["admittedWorkloads"] = json!(a);
        status["flavorsReservation"] = json!(flavors);
        status["flavorsUsage"] = json!(flavors);
        if status["conditions"].is_null() {
            status["conditions"] = json!([{"type": "Active", "status": "True", "reason": "Ready",
                "message": "Can submit new workloads to localQueue", "lastTransitionTime": ts(now_secs()), "observedGeneration": 1}]);
        }
        if status != v["status"] {
            v["status"] = status;
            st.put(LQS, v);
        }
    }
}
