//! `kube_objects`: Kubernetes objects as the watches decode them (the slim k8s-openapi types
//! for core objects; a `kube::api::DynamicObject` turned into JSON for Kueue's), stored the
//! way the watch stores them, then mapped into the model (`backend::kube::map::build`).
//!
//! Input: sections separated by a NUL byte (never in JSON), each a letter naming the kind and
//! the object's JSON: `N` Node, `P` Pod, `S` Namespace, `Q` ResourceQuota, `E` Event,
//! `C` ClusterQueue, `L` LocalQueue, `W` Workload, `V` a visibility API answer
//! (`PendingWorkloadsSummary`).

use super::terminal_safe;
use crate::backend::kube::kueue;
use crate::backend::kube::map::{self, Mapping, Store};
use crate::backend::kube::slim::{SlimEvent, SlimNamespace, SlimNode, SlimPod, SlimQuota};

/// Every string in a model value (keys too) is terminal-safe: the mapping sanitises what it
/// takes from the cluster.
fn strings_safe(v: &serde_json::Value, what: &str) {
    match v {
        serde_json::Value::String(s) => assert!(terminal_safe(s), "{what}: unsafe text {s:?}"),
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings_safe(x, what)),
        serde_json::Value::Object(o) => {
            for (k, x) in o {
                assert!(terminal_safe(k), "{what}: unsafe key {k:?}");
                strings_safe(x, what);
            }
        }
        _ => {}
    }
}

/// A Kueue object as the dynamic watch hands it over: decoded as a `DynamicObject`, then
/// turned back into JSON for the reader.
fn dynamic(body: &[u8]) -> Option<serde_json::Value> {
    let o: kube::api::DynamicObject = serde_json::from_slice(body).ok()?;
    Some(serde_json::to_value(&o).unwrap_or_default())
}

pub fn check(data: &[u8]) {
    let mut s = Store { team_label: Mapping::default().team_label, nodes_dirty: true, ..Store::default() };
    for section in data.split(|&b| b == 0) {
        let Some((&what, body)) = section.split_first() else { continue };
        match what {
            b'N' => {
                if let Ok(n) = serde_json::from_slice::<SlimNode>(body) {
                    s.nodes.insert(n.metadata.name.clone().unwrap_or_default(), Box::new(n));
                }
            }
            b'P' => {
                if let Ok(p) = serde_json::from_slice::<SlimPod>(body) {
                    s.put_pod(p);
                }
            }
            b'S' => {
                if let Ok(ns) = serde_json::from_slice::<SlimNamespace>(body) {
                    let team = ns.metadata.labels.as_ref().and_then(|l| l.get(&s.team_label).cloned());
                    s.teams.insert(ns.metadata.name.unwrap_or_default(), team);
                }
            }
            b'Q' => {
                if let Ok(q) = serde_json::from_slice::<SlimQuota>(body) {
                    let k = map::key(q.metadata.namespace.as_deref(), q.metadata.name.as_deref());
                    s.quotas.insert(k, q);
                }
            }
            b'E' => {
                if let Ok(e) = serde_json::from_slice::<SlimEvent>(body) {
                    s.put_event(&e);
                }
            }
            b'C' => {
                if let Some(v) = dynamic(body) {
                    let cq = kueue::cluster_queue(&v);
                    s.cluster_queues.insert(cq.name.clone(), cq);
                }
            }
            b'L' => {
                if let Some(v) = dynamic(body) {
                    let lq = kueue::local_queue(&v);
                    s.local_queues.insert(map::key(Some(&lq.namespace), Some(&lq.name)), lq);
                }
            }
            b'W' => {
                if let Some(v) = dynamic(body) {
                    let w = kueue::workload(&v);
                    s.workloads.insert(map::key(Some(&w.namespace), Some(&w.name)), w);
                }
            }
            b'V' => {
                if let Ok(list) = kueue::pending_summary(body) {
                    for p in list {
                        s.positions.insert(map::key(Some(&p.namespace), Some(&p.name)), p);
                    }
                }
            }
            _ => {}
        }
    }
    let built = map::build(&s, &Mapping::default());
    for n in &built.nodes {
        assert!(n.gpu_alloc <= n.gpu_slots, "{}: {} of {} GPUs allocated", n.name, n.gpu_alloc, n.gpu_slots);
        assert!(n.gpus.len() <= 64 && n.gpus.len() as u32 <= n.gpu_slots);
        strings_safe(&serde_json::to_value(n).unwrap_or_default(), "node");
    }
    for j in &built.jobs {
        strings_safe(&serde_json::to_value(j).unwrap_or_default(), "job");
    }
    for q in &built.queues {
        strings_safe(&serde_json::to_value(q).unwrap_or_default(), "queue");
    }
    for q in &built.quotas {
        strings_safe(&serde_json::to_value(q).unwrap_or_default(), "quota");
    }
    for id in built.owners.keys() {
        assert!(built.jobs.iter().any(|j| j.id == *id), "an owner of no job");
    }
}
