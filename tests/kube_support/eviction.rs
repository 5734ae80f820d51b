//! The eviction subresource and PodDisruptionBudget status, following the apiserver's eviction
//! REST handler and the disruption controller.

use super::Shared;
use super::ops::{self, DeleteOpts, Effects, PDBS, PODS};
use super::resources;
use super::selectors::LabelSelector;
use super::store::Store;
use super::util::{ApiError, int_or_percent, success_status};
use serde_json::{Value, json};
use std::sync::Arc;

fn is_terminal(pod: &Value) -> bool {
    matches!(pod["status"]["phase"].as_str(), Some("Succeeded" | "Failed"))
}

/// Running, Ready and not being deleted.
pub fn is_healthy(pod: &Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_null()
        && pod["status"]["phase"] == "Running"
        && pod["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn selector_of(pdb: &Value) -> LabelSelector {
    let sel = pdb["spec"].get("selector");
    // policy/v1: an empty selector matches every pod in the namespace; a missing one none.
    LabelSelector::from_object(sel)
}

/// (expectedPods, desiredHealthy, currentHealthy, disruptionsAllowed) for a PDB.
fn compute(st: &Store, pdb: &Value, ns: &str) -> (i64, i64, i64, i64) {
    let sel = selector_of(pdb);
    let pods: Vec<Value> = st
        .iter(PODS, Some(ns))
        .into_iter()
        .filter(|p| sel.matches(&p.labels))
        .map(|p| p.value())
        .filter(|v| !is_terminal(v))
        .collect();
    let expected = pods.len() as i64;
    let healthy = pods.iter().filter(|p| is_healthy(p)).count() as i64;
    let spec = &pdb["spec"];
    let desired = if let Some(m) = spec.get("minAvailable").filter(|v| !v.is_null()) {
        int_or_percent(m, expected).unwrap_or(0)
    } else if let Some(m) = spec.get("maxUnavailable").filter(|v| !v.is_null()) {
        (expected - int_or_percent(m, expected).unwrap_or(0)).max(0)
    } else {
        expected
    };
    (expected, desired, healthy, (healthy - desired).max(0))
}

/// Recomputes `status` of every PDB in a namespace (writing only on change).
pub fn refresh_pdbs(st: &mut Store, ns: &str) {
    refresh_pdbs_matching(st, ns, None);
}

/// Recomputes the PDBs of a namespace, only those selecting one of `labels` when given (a pod
/// write touches the budgets that select it before or after).
pub fn refresh_pdbs_matching(
    st: &mut Store,
    ns: &str,
    labels: Option<&[&std::collections::BTreeMap<String, String>]>,
) {
    for pdb in st.iter(PDBS, Some(ns)) {
        let mut v = pdb.value();
        if let Some(ls) = labels
            && !ls.iter().any(|l| selector_of(&v).matches(l))
        {
            continue;
        }
        let (expected, desired, healthy, allowed) = compute(st, &v, ns);
        let generation = v["metadata"]["generation"].as_i64().unwrap_or(1);
        let old = &v["status"];
        if old["expectedPods"] == json!(expected)
            && old["desiredHealthy"] == json!(desired)
            && old["currentHealthy"] == json!(healthy)
            && old["disruptionsAllowed"] == json!(allowed)
            && old["observedGeneration"] == json!(generation)
        {
            continue;
        }
        let (cstatus, reason, msg) =
            if allowed > 0 { ("True", "SufficientPods", "") } else { ("False", "InsufficientPods", "") };
        let now = super::util::ts(super::util::now_secs());
        let since = old["conditions"][0]["lastTransitionTime"]
            .as_str()
            .filter(|_| old["conditions"][0]["status"] == cstatus)
            .map(String::from)
            .unwrap_or(now);
        v["status"] = json!({
            "observedGeneration": generation,
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "conditions": [{"type": "DisruptionAllowed", "status": cstatus, "reason": reason, "message": msg,
                            "observedGeneration": generation, "lastTransitionTime": since}],
        });
        st.put(PDBS, v);
    }
}

/// `POST .../pods/{name}/eviction`.
pub fn evict(
    sh: &Arc<Shared>,
    ns: &str,
    name: &str,
    body: &[u8],
    dry_run_q: bool,
) -> Result<Value, ApiError> {
    let ev: Value =
        serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("invalid Eviction: {e}")))?;
    // The real server decodes leniently: a missing kind defaults to Eviction, unknown fields
    // (kube-rs sends `delete_options`, snake_case) are ignored.
    if !ev["kind"].is_null() && ev["kind"] != "Eviction" {
        return Err(ApiError::bad_request("the body must be an Eviction (policy/v1 or policy/v1beta1)"));
    }
    if let Some(n) = ev["metadata"]["name"].as_str()
        && n != name
    {
        return Err(ApiError::bad_request("name in URL does not match name in Eviction object"));
    }
    let del = &ev["deleteOptions"];
    let mut o = DeleteOpts::parse(&[], &serde_json::to_vec(del).unwrap_or_default());
    o.dry_run |= dry_run_q;
    let pod_def = resources::by_storage(PODS);
    let mut eff = Effects::default();
    {
        let mut st = sh.store.lock().unwrap();
        let pod = st.get_value(PODS, ns, name).ok_or_else(|| ApiError::not_found("", "pods", name))?;
        // Pods that are not running (or already deleting) are deleted without consulting PDBs.
        let ignore_pdb = matches!(pod["status"]["phase"].as_str(), Some("Succeeded" | "Failed" | "Pending"))
            || !pod["metadata"]["deletionTimestamp"].is_null();
        if !ignore_pdb {
            let labels = st.get(PODS, ns, name).map(|p| p.labels.clone()).unwrap_or_default();
            let pdbs: Vec<Value> = st
                .iter(PDBS, Some(ns))
                .into_iter()
                .map(|p| p.value())
                .filter(|p| selector_of(p).matches(&labels))
                .collect();
            if pdbs.len() > 1 {
                return Err(ApiError::new(
                    500,
                    "InternalError",
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                ));
            }
            if let Some(pdb) = pdbs.first() {
                let (_, desired, healthy, allowed) = compute(&st, pdb, ns);
                let pdb_name = pdb["metadata"]["name"].as_str().unwrap_or_default();
                // An unready pod may go if the budget is met anyway (IfHealthyBudget).
                let pod_ok_unhealthy = !is_healthy(&pod) && healthy >= desired;
                if allowed <= 0 && !pod_ok_unhealthy {
                    return Err(ApiError::new(
                        429,
                        "TooManyRequests",
                        "Cannot evict pod as it would violate the pod's disruption budget.",
                    )
                    .with_details(json!({"causes": [{
                        "reason": "DisruptionBudget",
                        "message": format!("The disruption budget {pdb_name} needs {desired} healthy pods and has {healthy} currently"),
                    }]})));
                }
                if !o.dry_run {
                    // Record the disruption like the real handler does, before deleting.
                    let mut p = pdb.clone();
                    let now = super::util::ts(super::util::now_secs());
                    p["status"]["disruptedPods"][name] = json!(now);
                    p["status"]["disruptionsAllowed"] = json!((allowed - 1).max(0));
                    st.put(PDBS, p);
                }
            }
        }
        ops::delete_in(&mut st, pod_def, ns, name, &o, &mut eff)?;
    }
    sh.finish(eff);
    Ok(success_status(json!({"name": name, "kind": "pods"})))
}
