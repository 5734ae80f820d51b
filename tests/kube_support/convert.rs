//! Version conversion between the stored (canonical) form and what a request asks for:
//! Kueue v1beta2 (stored) ⇄ v1beta1, core/v1 Event (stored) ⇄ events.k8s.io/v1 Event, and the
//! `apiVersion` of multi-version groups (policy v1 / v1beta1).

use super::resources::ResDef;
use serde_json::{Map, Value, json};

fn rename(obj: &mut Value, path: &[&str], from: &str, to: &str) {
    let mut cur = obj;
    for p in path {
        match cur.get_mut(*p) {
            Some(v) => cur = v,
            None => return,
        }
    }
    if let Some(m) = cur.as_object_mut()
        && let Some(v) = m.remove(from)
    {
        m.insert(to.to_string(), v);
    }
}

/// Stored form → the form of `version` of `def`.
pub fn out(def: &ResDef, version: &str, mut v: Value) -> Value {
    v["apiVersion"] = json!(def.api_version(version));
    v["kind"] = json!(def.kind);
    if def.group == "events.k8s.io" {
        return core_event_to_new(v);
    }
    if def.group == "kueue.x-k8s.io" && version == "v1beta1" {
        match def.kind {
            "ClusterQueue" => rename(&mut v, &["spec"], "cohortName", "cohort"),
            "LocalQueue" => rename(&mut v, &["status"], "flavorsUsage", "flavorUsage"),
            "Workload" => {
                rename(
                    &mut v,
                    &["status"],
                    "accumulatedPastExecutionTimeSeconds",
                    "accumulatedPastExexcutionTimeSeconds",
                );
                if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut)
                    && let Some(r) = spec.remove("priorityClassRef")
                {
                    let source = if r["kind"] == "WorkloadPriorityClass" {
                        "kueue.x-k8s.io/workloadpriorityclass"
                    } else {
                        "scheduling.k8s.io/priorityclass"
                    };
                    spec.insert("priorityClassName".into(), r["name"].clone());
                    spec.insert("priorityClassSource".into(), json!(source));
                }
            }
            _ => {}
        }
    }
    v
}

/// A request body in `version` of `def` → the stored form.
pub fn into_stored(def: &ResDef, version: &str, mut v: Value) -> Value {
    if def.group == "events.k8s.io" {
        v = new_event_to_core(v);
        v["apiVersion"] = json!("v1");
        v["kind"] = json!("Event");
        return v;
    }
    let stored_version = def.versions[0];
    v["apiVersion"] = json!(def.api_version(stored_version));
    v["kind"] = json!(def.kind);
    if def.group == "kueue.x-k8s.io" && version == "v1beta1" {
        match def.kind {
            "ClusterQueue" => rename(&mut v, &["spec"], "cohort", "cohortName"),
            "LocalQueue" => rename(&mut v, &["status"], "flavorUsage", "flavorsUsage"),
            "Workload" => {
                rename(
                    &mut v,
                    &["status"],
                    "accumulatedPastExexcutionTimeSeconds",
                    "accumulatedPastExecutionTimeSeconds",
                );
                if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut)
                    && let Some(name) = spec.remove("priorityClassName")
                {
                    let src = spec.remove("priorityClassSource").unwrap_or_default();
                    let (group, kind) = if src == "kueue.x-k8s.io/workloadpriorityclass" {
                        ("kueue.x-k8s.io", "WorkloadPriorityClass")
                    } else {
                        ("scheduling.k8s.io", "PriorityClass")
                    };
                    spec.insert(
                        "priorityClassRef".into(),
                        json!({"group": group, "kind": kind, "name": name}),
                    );
                }
            }
            _ => {}
        }
    }
    v
}

const EVENT_PAIRS: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

fn core_event_to_new(v: Value) -> Value {
    let Value::Object(m) = v else { return v };
    let mut out = Map::new();
    for (k, val) in m {
        let k2 = EVENT_PAIRS.iter().find(|(c, _)| *c == k).map_or(k.clone(), |(_, n)| n.to_string());
        out.insert(k2, val);
    }
    Value::Object(out)
}

fn new_event_to_core(v: Value) -> Value {
    let Value::Object(m) = v else { return v };
    let mut out = Map::new();
    for (k, val) in m {
        let k2 = EVENT_PAIRS.iter().find(|(_, n)| *n == k).map_or(k.clone(), |(c, _)| c.to_string());
        out.insert(k2, val);
    }
    Value::Object(out)
}

/// events.k8s.io field-selector names → the stored core names.
pub fn event_field(f: &str) -> String {
    if let Some(rest) = f.strip_prefix("regarding.") {
        return format!("involvedObject.{rest}");
    }
    if f == "reportingController" {
        return "reportingComponent".into();
    }
    f.to_string()
}
