//! The object store: one global resourceVersion, objects kept as pre-serialized JSON with a
//! small index (labels, selectable fields), a bounded watch history and list snapshots for
//! `continue` tokens.

use super::resources::{self, StorageKey};
use super::util::field_str;
use bytes::Bytes;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

/// One stored object.
#[derive(Debug)]
pub struct Obj {
    /// The canonical JSON (with `metadata.resourceVersion` = `rv`).
    pub json: Bytes,
    pub ns: String,
    pub name: String,
    pub uid: String,
    pub rv: u64,
    pub labels: BTreeMap<String, String>,
    pub fields: Vec<(&'static str, String)>,
}

impl Obj {
    pub fn build(key: StorageKey, v: &Value, rv: u64) -> Obj {
        let def = resources::by_storage(key);
        let md = &v["metadata"];
        let labels = md["labels"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
            .unwrap_or_default();
        let fields = def.fields.iter().map(|f| (*f, field_str(v, f).unwrap_or_default())).collect();
        Obj {
            json: Bytes::from(serde_json::to_vec(v).expect("serialize")),
            ns: md["namespace"].as_str().unwrap_or_default().to_string(),
            name: md["name"].as_str().unwrap_or_default().to_string(),
            uid: md["uid"].as_str().unwrap_or_default().to_string(),
            rv,
            labels,
            fields,
        }
    }

    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.json).expect("stored JSON")
    }

    /// A selectable field's value.
    pub fn field(&self, name: &str) -> Option<String> {
        match name {
            "metadata.name" => Some(self.name.clone()),
            "metadata.namespace" => Some(self.ns.clone()),
            _ => self.fields.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvType {
    Added,
    Modified,
    Deleted,
}

impl EvType {
    pub fn as_str(self) -> &'static str {
        match self {
            EvType::Added => "ADDED",
            EvType::Modified => "MODIFIED",
            EvType::Deleted => "DELETED",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    pub key: StorageKey,
    pub typ: EvType,
    pub obj: Arc<Obj>,
    /// The object before a modification (to turn selector transitions into ADDED/DELETED).
    pub old: Option<Arc<Obj>>,
}

pub type Snapshot = Arc<Vec<Arc<Obj>>>;

pub struct Store {
    pub rv: u64,
    objs: HashMap<StorageKey, BTreeMap<(String, String), Arc<Obj>>>,
    history: VecDeque<Event>,
    pub history_cap: usize,
    /// Watches from a resourceVersion older than this get 410 Expired.
    pub min_rv: u64,
    snapshots: VecDeque<(StorageKey, u64, Snapshot)>,
}

impl Store {
    pub fn new(history_cap: usize) -> Self {
        Store {
            rv: 1,
            objs: HashMap::new(),
            history: VecDeque::new(),
            history_cap,
            min_rv: 1,
            snapshots: VecDeque::new(),
        }
    }

    pub fn get(&self, key: StorageKey, ns: &str, name: &str) -> Option<Arc<Obj>> {
        self.objs.get(&key)?.get(&(ns.to_string(), name.to_string())).cloned()
    }

    pub fn get_value(&self, key: StorageKey, ns: &str, name: &str) -> Option<Value> {
        self.get(key, ns, name).map(|o| o.value())
    }

    /// Every object of a kind (in one namespace when `ns` is given), in key order.
    pub fn iter(&self, key: StorageKey, ns: Option<&str>) -> Vec<Arc<Obj>> {
        let Some(m) = self.objs.get(&key) else { return Vec::new() };
        match ns {
            None => m.values().cloned().collect(),
            Some(ns) => m
                .range((Bound::Included((ns.to_string(), String::new())), Bound::Unbounded))
                .take_while(|((n, _), _)| n == ns)
                .map(|(_, o)| o.clone())
                .collect(),
        }
    }

    pub fn count(&self, key: StorageKey) -> usize {
        self.objs.get(&key).map_or(0, |m| m.len())
    }

    /// A consistent view of a kind at the current resourceVersion (cached for `continue`).
    pub fn snapshot(&mut self, key: StorageKey) -> (u64, Snapshot) {
        let rv = self.rv;
        if let Some((_, _, s)) = self.snapshots.iter().find(|(k, r, _)| *k == key && *r == rv) {
            return (rv, s.clone());
        }
        let s: Snapshot = Arc::new(self.iter(key, None));
        self.snapshots.push_back((key, rv, s.clone()));
        while self.snapshots.len() > 64 {
            self.snapshots.pop_front();
        }
        (rv, s)
    }

    /// The snapshot a continue token refers to, if still retained.
    pub fn snapshot_at(&self, key: StorageKey, rv: u64) -> Option<Snapshot> {
        if rv < self.min_rv {
            return None;
        }
        self.snapshots.iter().find(|(k, r, _)| *k == key && *r == rv).map(|(_, _, s)| s.clone())
    }

    /// Stores `v` (created or replaced), bumping the resourceVersion; returns the stored object.
    pub fn put(&mut self, key: StorageKey, mut v: Value) -> Arc<Obj> {
        self.rv += 1;
        let rv = self.rv;
        v["metadata"]["resourceVersion"] = json!(rv.to_string());
        let obj = Arc::new(Obj::build(key, &v, rv));
        let k = (obj.ns.clone(), obj.name.clone());
        let old = self.objs.entry(key).or_default().insert(k, obj.clone());
        let typ = if old.is_some() { EvType::Modified } else { EvType::Added };
        self.record(Event { rv, key, typ, obj: obj.clone(), old });
        obj
    }

    /// Loads an object without recording a watch event (initial cluster contents).
    pub fn load(&mut self, key: StorageKey, mut v: Value) {
        self.rv += 1;
        v["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let obj = Arc::new(Obj::build(key, &v, self.rv));
        self.objs.entry(key).or_default().insert((obj.ns.clone(), obj.name.clone()), obj);
        self.min_rv = self.rv;
    }

    /// Removes an object; the DELETED event carries it at the new resourceVersion.
    pub fn remove(&mut self, key: StorageKey, ns: &str, name: &str) -> Option<Arc<Obj>> {
        let old = self.objs.get_mut(&key)?.remove(&(ns.to_string(), name.to_string()))?;
        self.rv += 1;
        let rv = self.rv;
        let mut v = old.value();
        v["metadata"]["resourceVersion"] = json!(rv.to_string());
        let obj = Arc::new(Obj::build(key, &v, rv));
        self.record(Event { rv, key, typ: EvType::Deleted, obj: obj.clone(), old: Some(old) });
        Some(obj)
    }

    fn record(&mut self, ev: Event) {
        self.history.push_back(ev);
        while self.history.len() > self.history_cap {
            if let Some(e) = self.history.pop_front() {
                self.min_rv = e.rv;
            }
        }
    }

    /// The previous version of the object the latest write of `key` replaced or removed.
    pub fn last_old(&self, key: StorageKey) -> Option<Arc<Obj>> {
        self.history.back().filter(|e| e.key == key && e.rv == self.rv).and_then(|e| e.old.clone())
    }

    /// Events of a kind after `since`, or `Err(min_rv)` when `since` is older than the history.
    pub fn events_since(&self, key: StorageKey, since: u64) -> Result<Vec<Event>, u64> {
        if since < self.min_rv {
            return Err(self.min_rv);
        }
        let start = self.history.partition_point(|e| e.rv <= since);
        Ok(self.history.range(start..).filter(|e| e.key == key).cloned().collect())
    }

    /// Forgets the watch history (like etcd compaction): older resourceVersions get 410.
    pub fn compact(&mut self) {
        self.history.clear();
        self.snapshots.clear();
        self.min_rv = self.rv;
    }
}
