//! Writes with the API server's semantics: create (generateName, uid, timestamps), update with
//! optimistic concurrency and status-subresource rules, patches, graceful pod deletion, the
//! small controllers the tests rely on (job → pods, PDB status, a "kubelet" that starts pods
//! bound to existing nodes).

use super::Shared;
use super::eviction;
use super::resources::{self, ResDef, StorageKey};
use super::store::{Obj, Store};
use super::util::{ApiError, json_patch, merge_patch, name_suffix, new_uid, now_secs, ts};
use serde_json::{Value, json};
use std::sync::Arc;

pub const PODS: StorageKey = ("", "pods");
pub const NODES: StorageKey = ("", "nodes");
pub const NAMESPACES: StorageKey = ("", "namespaces");
pub const JOBS: StorageKey = ("batch", "jobs");
pub const PDBS: StorageKey = ("policy", "poddisruptionbudgets");
pub const EVENTS: StorageKey = ("", "events");

/// A pod removal to run once its grace period is over.
#[derive(Debug)]
pub struct Removal {
    pub ns: String,
    pub name: String,
    pub uid: String,
    pub secs: i64,
}

/// Side effects a write leaves for the caller (which owns the runtime).
#[derive(Debug, Default)]
pub struct Effects {
    pub removals: Vec<Removal>,
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOpts {
    pub grace: Option<i64>,
    pub propagation: Option<String>,
    pub uid: Option<String>,
    pub rv: Option<String>,
    pub dry_run: bool,
}

impl DeleteOpts {
    /// From query parameters and an optional `DeleteOptions` body.
    pub fn parse(q: &[(String, String)], body: &[u8]) -> DeleteOpts {
        let mut o = DeleteOpts::default();
        let get = |k: &str| q.iter().find(|(a, _)| a == k).map(|(_, v)| v.clone());
        o.grace = get("gracePeriodSeconds").and_then(|v| v.parse().ok());
        o.propagation = get("propagationPolicy");
        o.dry_run = get("dryRun").is_some_and(|v| v == "All");
        if let Ok(b) = serde_json::from_slice::<Value>(body) {
            if let Some(g) = b["gracePeriodSeconds"].as_i64() {
                o.grace = Some(g);
            }
            if let Some(p) = b["propagationPolicy"].as_str() {
                o.propagation = Some(p.into());
            }
            if b["orphanDependents"] == json!(true) {
                o.propagation = Some("Orphan".into());
            }
            o.uid = b["preconditions"]["uid"].as_str().map(String::from);
            o.rv = b["preconditions"]["resourceVersion"].as_str().map(String::from);
            if b["dryRun"].as_array().is_some_and(|a| a.iter().any(|x| x == "All")) {
                o.dry_run = true;
            }
        }
        o
    }
}

fn has_status_sub(def: &ResDef) -> bool {
    def.subs.iter().any(|s| s.name == "status")
}

/// Fills server-set metadata of a new object and checks name / namespace.
pub fn prepare_new(
    st: &Store,
    def: &ResDef,
    ns: &str,
    mut v: Value,
    keep_meta: bool,
) -> Result<Value, ApiError> {
    if !v["metadata"].is_object() {
        v["metadata"] = json!({});
    }
    let md = v["metadata"].as_object_mut().expect("metadata");
    if def.namespaced {
        match md.get("namespace").and_then(Value::as_str) {
            Some(n) if !n.is_empty() && n != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {
                md.insert("namespace".into(), json!(ns));
            }
        }
        if st.get(NAMESPACES, "", ns).is_none() {
            return Err(ApiError::not_found("", "namespaces", ns));
        }
    } else {
        md.remove("namespace");
    }
    let key = def.storage();
    let name = md.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
    if name.is_empty() {
        let prefix = md.get("generateName").and_then(Value::as_str).unwrap_or_default().to_string();
        if prefix.is_empty() {
            return Err(ApiError::invalid(def.kind, "", "metadata.name", "name or generateName is required"));
        }
        let mut n = format!("{prefix}{}", name_suffix());
        while st.get(key, ns_of(def, ns), &n).is_some() {
            n = format!("{prefix}{}", name_suffix());
        }
        md.insert("name".into(), json!(n));
    } else if st.get(key, ns_of(def, ns), &name).is_some() {
        return Err(ApiError::already_exists(def.group, def.plural, &name));
    }
    if !keep_meta || !md.contains_key("uid") {
        md.insert("uid".into(), json!(new_uid()));
    }
    if !keep_meta || !md.contains_key("creationTimestamp") {
        md.insert("creationTimestamp".into(), json!(ts(now_secs())));
    }
    if !keep_meta {
        md.remove("deletionTimestamp");
        md.remove("deletionGracePeriodSeconds");
    }
    md.remove("resourceVersion");
    if !matches!(def.kind, "Pod" | "Event" | "Namespace" | "Node") && !md.contains_key("generation") {
        md.insert("generation".into(), json!(1));
    }
    match def.kind {
        "Namespace" if v["status"].is_null() => v["status"] = json!({"phase": "Active"}),
        "Pod" if v["status"]["phase"].is_null() => {
            let node = v["spec"]["nodeName"].as_str().unwrap_or_default().to_string();
            if !node.is_empty() && st.get(NODES, "", &node).is_some() {
                v["status"] = running_status(&v, now_secs());
            } else {
                v["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"});
            }
        }
        _ => {}
    }
    Ok(v)
}

fn ns_of<'a>(def: &ResDef, ns: &'a str) -> &'a str {
    if def.namespaced { ns } else { "" }
}

/// The status a started pod has: Running, every container ready.
pub fn running_status(pod: &Value, now: i64) -> Value {
    let start = ts(now);
    let containers: Vec<Value> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| {
            json!({
                "name": c["name"], "ready": true, "started": true, "restartCount": 0,
                "image": c["image"], "imageID": format!("docker.io/library/fake@sha256:{:064x}", i + 1),
                "containerID": format!("containerd://{:064x}", now as u64 * 31 + i as u64),
                "state": {"running": {"startedAt": start}}, "lastState": {},
            })
        })
        .collect();
    let cond =
        |t: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": start});
    json!({
        "phase": "Running",
        "conditions": [cond("PodReadyToStartContainers"), cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")],
        "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}],
        "podIP": "10.244.0.10", "podIPs": [{"ip": "10.244.0.10"}],
        "startTime": start, "containerStatuses": containers, "qosClass": "Burstable",
    })
}

/// Creates an object (already in stored form). Runs the controllers.
pub fn create(
    sh: &Arc<Shared>,
    def: &ResDef,
    ns: &str,
    body: Value,
    dry_run: bool,
) -> Result<Value, ApiError> {
    let mut eff = Effects::default();
    let out = {
        let mut st = sh.store.lock().unwrap();
        let v = prepare_new(&st, def, ns, body, false)?;
        if dry_run {
            return Ok(v);
        }
        let obj = st.put(def.storage(), v);
        after_write(&mut st, def.storage(), &obj, &mut eff);
        obj.value()
    };
    sh.finish(eff);
    Ok(out)
}

/// Applies an update to `old` following the status-subresource rules.
fn merge_update(def: &ResDef, sub: &str, old: &Value, mut new: Value) -> Value {
    if sub == "status" {
        let mut r = old.clone();
        r["status"] = new["status"].take();
        if let Some(rv) = new["metadata"].get("resourceVersion") {
            r["metadata"]["resourceVersion"] = rv.clone();
        }
        return r;
    }
    if has_status_sub(def) && !old["status"].is_null() {
        new["status"] = old["status"].clone();
    }
    for k in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "name",
        "namespace",
    ] {
        match old["metadata"].get(k) {
            Some(v) => new["metadata"][k] = v.clone(),
            None => {
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.remove(k);
                }
            }
        }
    }
    if old["metadata"]["generation"].is_i64() && old["spec"] != new["spec"] {
        new["metadata"]["generation"] = json!(old["metadata"]["generation"].as_i64().unwrap_or(1) + 1);
    }
    new
}

/// PUT (stored form in, stored form out).
pub fn replace(
    sh: &Arc<Shared>,
    def: &ResDef,
    ns: &str,
    name: &str,
    sub: &str,
    body: Value,
    dry_run: bool,
) -> Result<Value, ApiError> {
    update_with(sh, def, ns, name, dry_run, |_old| Ok(body), sub)
}

/// Reads the current stored object, lets `f` produce the new stored form, checks preconditions
/// and writes it.
pub fn update_with(
    sh: &Arc<Shared>,
    def: &ResDef,
    ns: &str,
    name: &str,
    dry_run: bool,
    f: impl FnOnce(&Value) -> Result<Value, ApiError>,
    sub: &str,
) -> Result<Value, ApiError> {
    let mut eff = Effects::default();
    let key = def.storage();
    let out = {
        let mut st = sh.store.lock().unwrap();
        let old = st
            .get(key, ns_of(def, ns), name)
            .ok_or_else(|| ApiError::not_found(def.group, def.plural, name))?;
        let old_v = old.value();
        let new = f(&old_v)?;
        if let Some(rv) = new["metadata"]["resourceVersion"].as_str()
            && !rv.is_empty()
            && rv != old.rv.to_string()
        {
            return Err(ApiError::conflict(def.group, def.plural, name));
        }
        if let Some(n) = new["metadata"]["name"].as_str()
            && n != name
        {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        let merged = merge_update(def, sub, &old_v, new);
        if dry_run {
            return Ok(merged);
        }
        if merged == {
            let mut o = old_v.clone();
            o["metadata"]["resourceVersion"] = merged["metadata"]["resourceVersion"].clone();
            o
        } {
            // No-op writes keep the resourceVersion, like the real server.
            return Ok(old_v);
        }
        let obj = st.put(key, merged);
        after_write(&mut st, key, &obj, &mut eff);
        obj.value()
    };
    sh.finish(eff);
    Ok(out)
}

/// PATCH: the patch applies to the object as seen in `version`.
#[allow(clippy::too_many_arguments)]
pub fn patch(
    sh: &Arc<Shared>,
    def: &ResDef,
    version: &str,
    ns: &str,
    name: &str,
    sub: &str,
    content_type: &str,
    body: &[u8],
    dry_run: bool,
) -> Result<Value, ApiError> {
    let ctype = content_type.split(';').next().unwrap_or_default().trim().to_string();
    let patch: Value = match ctype.as_str() {
        "application/json-patch+json"
        | "application/merge-patch+json"
        | "application/strategic-merge-patch+json" => {
            serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("invalid patch: {e}")))?
        }
        _ => {
            return Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!(
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {ctype})"
                ),
            ));
        }
    };
    update_with(
        sh,
        def,
        ns,
        name,
        dry_run,
        |old| {
            let mut seen = super::convert::out(def, version, old.clone());
            if ctype == "application/json-patch+json" {
                json_patch(&mut seen, &patch).map_err(|e| ApiError::new(422, "Invalid", e))?;
            } else {
                merge_patch(&mut seen, &patch);
            }
            Ok(super::convert::into_stored(def, version, seen))
        },
        sub,
    )
}

/// DELETE. Pods are deleted gracefully; Jobs cascade to their pods unless orphaned.
pub fn delete(
    sh: &Arc<Shared>,
    def: &ResDef,
    ns: &str,
    name: &str,
    o: &DeleteOpts,
) -> Result<Value, ApiError> {
    let mut eff = Effects::default();
    let out = {
        let mut st = sh.store.lock().unwrap();
        delete_in(&mut st, def, ns_of(def, ns), name, o, &mut eff)?
    };
    sh.finish(eff);
    Ok(out)
}

pub fn delete_in(
    st: &mut Store,
    def: &ResDef,
    ns: &str,
    name: &str,
    o: &DeleteOpts,
    eff: &mut Effects,
) -> Result<Value, ApiError> {
    let key = def.storage();
    let old = st.get(key, ns, name).ok_or_else(|| ApiError::not_found(def.group, def.plural, name))?;
    if o.uid.as_ref().is_some_and(|u| *u != old.uid) {
        return Err(ApiError::conflict(def.group, def.plural, name).with_details(json!({
            "name": name, "kind": def.plural,
        })));
    }
    if o.rv.as_ref().is_some_and(|r| *r != old.rv.to_string()) {
        return Err(ApiError::conflict(def.group, def.plural, name));
    }
    let mut v = old.value();
    if key == PODS {
        let phase = v["status"]["phase"].as_str().unwrap_or_default();
        let bound = v["spec"]["nodeName"].as_str().is_some_and(|n| !n.is_empty());
        let mut grace =
            o.grace.or_else(|| v["spec"]["terminationGracePeriodSeconds"].as_i64()).unwrap_or(30).max(0);
        if !bound || phase == "Succeeded" || phase == "Failed" {
            grace = 0;
        }
        if grace > 0 {
            if o.dry_run || !v["metadata"]["deletionTimestamp"].is_null() {
                return Ok(v);
            }
            v["metadata"]["deletionTimestamp"] = json!(ts(now_secs() + grace));
            v["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
            let obj = st.put(key, v);
            after_write(st, key, &obj, eff);
            eff.removals.push(Removal {
                ns: ns.into(),
                name: name.into(),
                uid: old.uid.clone(),
                secs: grace,
            });
            return Ok(obj.value());
        }
    }
    if o.dry_run {
        return Ok(v);
    }
    let gone = st.remove(key, ns, name).expect("present");
    after_write(st, key, &gone, eff);
    if key == JOBS && o.propagation.as_deref().is_some_and(|p| p != "Orphan") {
        let pods: Vec<Arc<Obj>> =
            st.iter(PODS, Some(ns)).into_iter().filter(|p| owned_by(&p.value(), &gone.uid)).collect();
        let pod_def = resources::by_storage(PODS);
        for p in pods {
            let _ = delete_in(st, pod_def, ns, &p.name, &DeleteOpts::default(), eff);
        }
    }
    if key == NAMESPACES {
        for d in resources::RESOURCES.iter().filter(|d| d.namespaced && d.storage() == (d.group, d.plural)) {
            for o in st.iter(d.storage(), Some(name)) {
                st.remove(d.storage(), name, &o.name);
            }
        }
    }
    Ok(gone.value())
}

pub fn owned_by(v: &Value, uid: &str) -> bool {
    v["metadata"]["ownerReferences"].as_array().into_iter().flatten().any(|r| r["uid"] == uid)
}

/// The pod's controller owner reference, if any.
pub fn controller_of(v: &Value) -> Option<&Value> {
    v["metadata"]["ownerReferences"].as_array()?.iter().find(|r| r["controller"] == json!(true))
}

/// Controllers run after each write (under the store lock).
pub fn after_write(st: &mut Store, key: StorageKey, obj: &Obj, eff: &mut Effects) {
    match key {
        PODS => {
            let old = st.last_old(PODS).map(|o| o.labels.clone());
            let mut labels = vec![&obj.labels];
            labels.extend(old.as_ref());
            eviction::refresh_pdbs_matching(st, &obj.ns, Some(&labels));
            let v = obj.value();
            if let Some(owner) = controller_of(&v)
                && owner["kind"] == "Job"
                && let Some(job) = owner["name"].as_str()
            {
                refresh_job(st, &obj.ns, job);
            }
        }
        PDBS => eviction::refresh_pdbs(st, &obj.ns),
        // A new job starts its pods.
        JOBS if st.get(JOBS, &obj.ns, &obj.name).is_some_and(|j| j.rv == obj.rv)
            && obj.value()["status"]["startTime"].is_null() =>
        {
            start_job(st, &obj.ns, &obj.name, eff);
        }
        _ => {}
    }
}

fn start_job(st: &mut Store, ns: &str, name: &str, eff: &mut Effects) {
    let Some(job) = st.get_value(JOBS, ns, name) else { return };
    let completions = job["spec"]["completions"].as_i64().unwrap_or(1);
    let parallelism = job["spec"]["parallelism"].as_i64().unwrap_or(1).min(completions).max(0);
    let indexed = job["spec"]["completionMode"] == "Indexed";
    let uid = job["metadata"]["uid"].as_str().unwrap_or_default().to_string();
    let pod_def = resources::by_storage(PODS);
    for i in 0..parallelism {
        let tpl = &job["spec"]["template"];
        let mut labels = tpl["metadata"]["labels"].clone();
        if !labels.is_object() {
            labels = json!({});
        }
        labels["batch.kubernetes.io/job-name"] = json!(name);
        labels["job-name"] = json!(name);
        labels["batch.kubernetes.io/controller-uid"] = json!(uid);
        labels["controller-uid"] = json!(uid);
        let mut annotations = tpl["metadata"]["annotations"].clone();
        if indexed {
            labels["batch.kubernetes.io/job-completion-index"] = json!(i.to_string());
            if !annotations.is_object() {
                annotations = json!({});
            }
            annotations["batch.kubernetes.io/job-completion-index"] = json!(i.to_string());
        }
        let mut spec = tpl["spec"].clone();
        if spec["nodeName"].is_null()
            && let Some(h) = spec["nodeSelector"]["kubernetes.io/hostname"].as_str()
        {
            spec["nodeName"] = json!(h);
        }
        let prefix = if indexed { format!("{name}-{i}-") } else { format!("{name}-") };
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": prefix, "namespace": ns, "labels": labels,
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": uid,
                                     "controller": true, "blockOwnerDeletion": true}]},
            "spec": spec,
        });
        if annotations.is_object() {
            pod["metadata"]["annotations"] = annotations;
        }
        if let Ok(p) = prepare_new(st, pod_def, ns, pod, false) {
            let obj = st.put(PODS, p);
            eviction::refresh_pdbs(st, ns);
            let _ = (&obj, &eff);
        }
    }
    refresh_job(st, ns, name);
}

/// Job status from its pods: active / ready / succeeded / failed, Complete when done.
pub fn refresh_job(st: &mut Store, ns: &str, name: &str) {
    let Some(mut job) = st.get_value(JOBS, ns, name) else { return };
    let uid = job["metadata"]["uid"].as_str().unwrap_or_default().to_string();
    let (mut active, mut ready, mut succeeded, mut failed) = (0, 0, 0, 0);
    for p in st.iter(PODS, Some(ns)) {
        if p.labels.get("batch.kubernetes.io/controller-uid") != Some(&uid) {
            continue;
        }
        let v = p.value();
        match v["status"]["phase"].as_str().unwrap_or_default() {
            "Succeeded" => succeeded += 1,
            "Failed" => failed += 1,
            _ if v["metadata"]["deletionTimestamp"].is_null() => {
                active += 1;
                if v["status"]["phase"] == "Running" {
                    ready += 1;
                }
            }
            _ => {}
        }
    }
    let mut status = job["status"].clone();
    if !status.is_object() {
        status = json!({});
    }
    if status["startTime"].is_null() {
        status["startTime"] = json!(ts(now_secs()));
    }
    status["active"] = json!(active);
    status["ready"] = json!(ready);
    status["succeeded"] = json!(succeeded);
    status["failed"] = json!(failed);
    let completions = job["spec"]["completions"].as_i64().unwrap_or(1);
    if succeeded >= completions && status["completionTime"].is_null() {
        let now = ts(now_secs());
        status["completionTime"] = json!(now);
        status["conditions"] = json!([
            {"type": "SuccessCriteriaMet", "status": "True", "lastProbeTime": now, "lastTransitionTime": now},
            {"type": "Complete", "status": "True", "lastProbeTime": now, "lastTransitionTime": now}
        ]);
    }
    if status != job["status"] {
        job["status"] = status;
        st.put(JOBS, job);
    }
}

/// Inserts or replaces an object as given (status included), keeping uid and creation time of
/// an existing one. For the handle's mutators.
pub fn upsert_in(
    st: &mut Store,
    def: &ResDef,
    mut v: Value,
    eff: &mut Effects,
) -> Result<Arc<Obj>, ApiError> {
    let ns = v["metadata"]["namespace"].as_str().unwrap_or_default().to_string();
    let name = v["metadata"]["name"].as_str().unwrap_or_default().to_string();
    let key = def.storage();
    v["apiVersion"] = json!(def.api_version(def.versions[0]));
    v["kind"] = json!(def.kind);
    let v = match st.get(key, ns_of(def, &ns), &name) {
        Some(old) => {
            let ov = old.value();
            for k in ["uid", "creationTimestamp"] {
                v["metadata"][k] = ov["metadata"][k].clone();
            }
            v
        }
        None => prepare_new(st, def, &ns, v, true)?,
    };
    let obj = st.put(key, v);
    after_write(st, key, &obj, eff);
    Ok(obj)
}

/// Applies a JSON merge patch to a stored object directly (no status rules). For mutators.
pub fn merge_in(
    st: &mut Store,
    key: StorageKey,
    ns: &str,
    name: &str,
    patch: &Value,
    eff: &mut Effects,
) -> Option<Arc<Obj>> {
    let mut v = st.get_value(key, ns, name)?;
    merge_patch(&mut v, patch);
    let obj = st.put(key, v);
    after_write(st, key, &obj, eff);
    Some(obj)
}
