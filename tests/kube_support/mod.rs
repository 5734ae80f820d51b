//! An in-process fake Kubernetes API server with the real API's semantics for the calls
//! gpuplane (and kubectl get/cordon/drain) make: discovery, list with paging and selectors,
//! watch with history, bookmarks and 410 Expired, get/create/update/patch/delete, graceful pod
//! deletion, eviction with PodDisruptionBudgets, SelfSubjectAccessReview backed by the policy it
//! enforces, Tables for kubectl, events, jobs and pod logs, Kueue v1beta1/v1beta2 and the
//! visibility API.
//!
//! ```ignore
//! mod kube_support;
//! let fake = kube_support::FakeKube::start(kube_support::Cluster::small(), Default::default());
//! std::process::Command::new("kubectl").arg("--kubeconfig").arg(fake.kubeconfig_path()).args(["get", "nodes"]);
//! ```
#![allow(dead_code)]

pub mod convert;
pub mod eviction;
pub mod generator;
pub mod http;
pub mod kubeconfig;
pub mod kueue;
pub mod ops;
pub mod policy;
pub mod resources;
pub mod selectors;
pub mod store;
pub mod tables;
pub mod util;

#[allow(unused_imports)]
pub use generator::{Cluster, GenOpts, KueueMode};
#[allow(unused_imports)]
pub use policy::{Policy, Rule};

use ops::Effects;
use resources::{ResDef, Served};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;
use store::Store;
use util::ApiError;

/// Server options.
#[derive(Debug, Clone)]
pub struct Opts {
    /// 127.0.0.1 port; 0 picks a free one.
    pub port: u16,
    /// Watch events kept for replay; older resourceVersions get 410 Expired.
    pub history: usize,
    /// Graceful pod deletions finish after `min(gracePeriodSeconds, grace_cap)` of real time.
    pub grace_cap: Duration,
    /// How often a watch that allows bookmarks gets one.
    pub bookmark_interval: Duration,
    /// Watch length when the client gives no `timeoutSeconds`.
    pub max_watch: Duration,
    /// Visibility API on at start (only served when Kueue is on).
    pub visibility: bool,
    /// Where to write the kubeconfig (default: a temporary directory removed on drop).
    pub kubeconfig: Option<PathBuf>,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            port: 0,
            history: 10_000,
            grace_cap: Duration::from_millis(500),
            bookmark_interval: Duration::from_secs(2),
            max_watch: Duration::from_secs(1800),
            visibility: true,
            kubeconfig: None,
        }
    }
}

/// One served request, for asserting what a client did.
#[derive(Debug, Clone)]
pub struct RequestLog {
    pub method: String,
    pub path: String,
    pub query: String,
    pub user: String,
    pub status: u16,
}

/// State shared by the HTTP tasks and the handle.
pub struct Shared {
    pub store: Mutex<Store>,
    pub rv_tx: tokio::sync::watch::Sender<u64>,
    pub drop_tx: tokio::sync::watch::Sender<u64>,
    /// While true, new watch streams are accepted but send nothing (a stalled connection).
    pub watch_gate: tokio::sync::watch::Sender<bool>,
    /// Watches answered 410 Expired (in the stream or as the answer's status).
    pub expired_watches: AtomicUsize,
    /// Answer a watch from a compacted resourceVersion with HTTP 410 instead of an ERROR event.
    pub expired_as_status: AtomicBool,
    pub policy: RwLock<Policy>,
    /// token → user
    pub tokens: RwLock<HashMap<String, String>>,
    pub visibility: AtomicBool,
    pub served: Served,
    pub opts: Opts,
    pub requests: Mutex<Vec<RequestLog>>,
    pub pod_logs: Mutex<HashMap<(String, String), String>>,
    pub addr: SocketAddr,
    rt: OnceLock<tokio::runtime::Handle>,
}

impl Shared {
    pub fn rt(&self) -> &tokio::runtime::Handle {
        self.rt.get().expect("runtime started")
    }

    /// Wakes watchers and schedules graceful removals left by a write.
    pub fn finish(self: &Arc<Self>, eff: Effects) {
        self.rv_tx.send_modify(|x| *x += 1);
        for r in eff.removals {
            let sh = self.clone();
            let wait = Duration::from_secs(r.secs.max(0) as u64).min(self.opts.grace_cap);
            self.rt().spawn(async move {
                tokio::time::sleep(wait).await;
                let mut eff = Effects::default();
                {
                    let mut st = sh.store.lock().unwrap();
                    if st.get(ops::PODS, &r.ns, &r.name).is_some_and(|p| p.uid == r.uid)
                        && let Some(gone) = st.remove(ops::PODS, &r.ns, &r.name)
                    {
                        ops::after_write(&mut st, ops::PODS, &gone, &mut eff);
                    }
                }
                sh.finish(eff);
            });
        }
    }
}

/// Starts fake API servers.
pub struct FakeKube;

impl FakeKube {
    /// Serves `cluster` on 127.0.0.1 from its own thread and tokio runtime; stops on drop of
    /// the handle.
    pub fn start(cluster: Cluster, opts: Opts) -> Handle {
        let listener = std::net::TcpListener::bind(("127.0.0.1", opts.port)).expect("bind 127.0.0.1");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let Cluster { objects, serialized, pod_logs, kueue } = cluster;
        let served = Served {
            kueue_v1beta1: matches!(kueue, KueueMode::V1beta1 | KueueMode::Both),
            kueue_v1beta2: matches!(kueue, KueueMode::V1beta2 | KueueMode::Both),
        };
        let mut st = Store::new(opts.history);
        let parsed =
            serialized.into_iter().map(|b| serde_json::from_slice::<Value>(&b).expect("serialized object"));
        for v in objects.into_iter().chain(parsed) {
            let av = v["apiVersion"].as_str().unwrap_or_default().to_string();
            let def = def_for(&av, v["kind"].as_str().unwrap_or_default())
                .unwrap_or_else(|| panic!("unknown kind in cluster: {} {}", v["apiVersion"], v["kind"]));
            let version = av.rsplit('/').next().unwrap_or_default();
            st.load(def.storage(), convert::into_stored(def, version, v));
        }
        let mut tokens = HashMap::new();
        for user in ["admin", "viewer"] {
            tokens.insert(format!("fake-{user}-{}", &util::new_uid()[..8]), user.to_string());
        }
        let (rv_tx, _) = tokio::sync::watch::channel(0);
        let (drop_tx, _) = tokio::sync::watch::channel(0);
        let sh = Arc::new(Shared {
            store: Mutex::new(st),
            rv_tx,
            drop_tx,
            watch_gate: tokio::sync::watch::channel(false).0,
            expired_watches: AtomicUsize::new(0),
            expired_as_status: AtomicBool::new(false),
            policy: RwLock::new(Policy::default()),
            tokens: RwLock::new(tokens),
            visibility: AtomicBool::new(opts.visibility),
            served,
            opts: opts.clone(),
            requests: Mutex::new(Vec::new()),
            pod_logs: Mutex::new(pod_logs.into_iter().collect()),
            addr,
            rt: OnceLock::new(),
        });
        {
            let mut st = sh.store.lock().unwrap();
            let namespaces: Vec<String> =
                st.iter(ops::NAMESPACES, None).iter().map(|n| n.name.clone()).collect();
            for ns in namespaces {
                eviction::refresh_pdbs(&mut st, &ns);
            }
            if served.kueue_v1beta1 || served.kueue_v1beta2 {
                kueue::refresh_queues(&mut st);
            }
            st.min_rv = st.rv;
        }
        let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let sh2 = sh.clone();
        let thread = std::thread::Builder::new()
            .name("fake-kube".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("runtime");
                let _ = sh2.rt.set(rt.handle().clone());
                let tls = tls_acceptor();
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                    let _ = ready_tx.send(());
                    loop {
                        tokio::select! {
                            _ = stop_rx.changed() => break,
                            acc = listener.accept() => {
                                let Ok((stream, _)) = acc else { continue };
                                let sh = sh2.clone();
                                let tls = tls.clone();
                                tokio::spawn(async move {
                                    let svc = hyper::service::service_fn(move |req| http::handle(sh.clone(), req));
                                    let http = hyper::server::conn::http1::Builder::new();
                                    // TLS and plain HTTP share the port: a TLS ClientHello starts with 0x16.
                                    let mut first = [0u8; 1];
                                    if matches!(stream.peek(&mut first).await, Ok(1)) && first[0] == 0x16 {
                                        let Ok(s) = tls.accept(stream).await else { return };
                                        let _ = http.serve_connection(hyper_util::rt::TokioIo::new(s), svc).await;
                                    } else {
                                        let _ = http.serve_connection(hyper_util::rt::TokioIo::new(stream), svc).await;
                                    }
                                });
                            }
                        }
                    }
                });
                rt.shutdown_background();
            })
            .expect("thread");
        ready_rx.recv().expect("server thread started");
        let (kubeconfig, tmp) = match &opts.kubeconfig {
            Some(p) => (p.clone(), None),
            None => {
                let d = tempfile::tempdir().expect("tempdir");
                (d.path().join("kubeconfig"), Some(d))
            }
        };
        let handle = Handle { sh, stop: stop_tx, thread: Some(thread), kubeconfig, _tmp: tmp };
        handle.write_kubeconfig();
        handle
    }
}

/// The fake's CA (PEM); the kubeconfig embeds it.
pub const CA_PEM: &str = include_str!("tls/ca.crt");

/// TLS with the checked-in test certificate (CN fake-kube-apiserver, SAN 127.0.0.1 and
/// localhost, signed by `CA_PEM`, valid 2020–2120).
fn tls_acceptor() -> tokio_rustls::TlsAcceptor {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(include_bytes!("tls/server.crt"))
            .collect::<Result<_, _>>()
            .expect("server cert");
    let key = PrivateKeyDer::from_pem_slice(include_bytes!("tls/server.key")).expect("server key");
    let mut cfg =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("protocols")
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("server tls config");
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    tokio_rustls::TlsAcceptor::from(Arc::new(cfg))
}

/// The resource definition for an object's apiVersion + kind.
pub fn def_for(api_version: &str, kind: &str) -> Option<&'static ResDef> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    resources::RESOURCES.iter().find(|d| {
        d.group == group
            && d.kind == kind
            && d.versions.contains(&version)
            && d.feature != resources::Feature::Visibility
    })
}

/// A running fake API server. Dropping it stops the server.
pub struct Handle {
    sh: Arc<Shared>,
    stop: tokio::sync::watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
    kubeconfig: PathBuf,
    _tmp: Option<tempfile::TempDir>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Handle {
    /// `http://127.0.0.1:PORT` (plain HTTP; the same port also speaks TLS, see `https_url`).
    pub fn url(&self) -> String {
        format!("http://{}", self.sh.addr)
    }

    /// `https://127.0.0.1:PORT`: what the kubeconfig names, because kubectl (client-go) only
    /// sends bearer tokens over TLS. The certificate is signed by `CA_PEM`.
    pub fn https_url(&self) -> String {
        format!("https://{}", self.sh.addr)
    }

    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The bearer token of `user` (panics if the user has none; see `add_user`).
    pub fn token_for(&self, user: &str) -> String {
        self.sh
            .tokens
            .read()
            .unwrap()
            .iter()
            .find(|(_, u)| *u == user)
            .map(|(t, _)| t.clone())
            .unwrap_or_else(|| panic!("no token for user {user}"))
    }

    /// Adds a user with a fresh token (and a `fake-<user>` context in the kubeconfig).
    pub fn add_user(&self, user: &str, rules: Vec<Rule>) -> String {
        let token = format!("fake-{user}-{}", &util::new_uid()[..8]);
        self.sh.tokens.write().unwrap().insert(token.clone(), user.to_string());
        self.sh.policy.write().unwrap().set_user(user, rules);
        self.write_kubeconfig();
        token
    }

    fn write_kubeconfig(&self) {
        let mut users: Vec<(String, String)> =
            self.sh.tokens.read().unwrap().iter().map(|(t, u)| (u.clone(), t.clone())).collect();
        users.sort();
        std::fs::write(&self.kubeconfig, kubeconfig::render(&self.https_url(), CA_PEM, &users))
            .expect("write kubeconfig");
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.sh
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.sh.store.lock().unwrap().rv
    }

    fn write<R>(&self, f: impl FnOnce(&mut Store, &mut Effects) -> R) -> R {
        let mut eff = Effects::default();
        let r = {
            let mut st = self.sh.store.lock().unwrap();
            f(&mut st, &mut eff)
        };
        self.sh.finish(eff);
        r
    }

    fn def(api_version: &str, kind: &str) -> &'static ResDef {
        def_for(api_version, kind).unwrap_or_else(|| panic!("unknown kind {api_version} {kind}"))
    }

    /// An object in stored form (Kueue objects as v1beta2, events as core/v1).
    pub fn get(&self, api_version: &str, kind: &str, ns: &str, name: &str) -> Option<Value> {
        let def = Self::def(api_version, kind);
        self.sh.store.lock().unwrap().get_value(def.storage(), if def.namespaced { ns } else { "" }, name)
    }

    /// Every object of a kind, in stored form.
    pub fn list(&self, api_version: &str, kind: &str) -> Vec<Value> {
        let def = Self::def(api_version, kind);
        self.sh.store.lock().unwrap().iter(def.storage(), None).iter().map(|o| o.value()).collect()
    }

    /// Creates or replaces an object as given (status included); emits ADDED/MODIFIED.
    pub fn upsert(&self, v: Value) -> Result<Value, ApiError> {
        let av = v["apiVersion"].as_str().unwrap_or_default().to_string();
        let def = Self::def(&av, v["kind"].as_str().unwrap_or_default());
        let version = av.rsplit('/').next().unwrap_or_default().to_string();
        let v = convert::into_stored(def, &version, v);
        self.write(|st, eff| ops::upsert_in(st, def, v, eff).map(|o| o.value()))
    }

    /// Removes an object immediately (no grace); emits DELETED.
    pub fn delete(&self, api_version: &str, kind: &str, ns: &str, name: &str) -> bool {
        let def = Self::def(api_version, kind);
        let o =
            ops::DeleteOpts { grace: Some(0), propagation: Some("Background".into()), ..Default::default() };
        self.write(|st, eff| {
            ops::delete_in(st, def, if def.namespaced { ns } else { "" }, name, &o, eff).is_ok()
        })
    }

    /// Merge-patches an object directly (status included).
    pub fn patch(&self, api_version: &str, kind: &str, ns: &str, name: &str, patch: Value) -> Option<Value> {
        let def = Self::def(api_version, kind);
        self.write(|st, eff| {
            ops::merge_in(st, def.storage(), if def.namespaced { ns } else { "" }, name, &patch, eff)
        })
        .map(|o| o.value())
    }

    /// Sets a node's Ready condition (NotReady also gets the not-ready taint, like the node
    /// lifecycle controller).
    /// `namespace/name` of every pod bound to `node`, sorted.
    pub fn pods_on(&self, node: &str) -> Vec<String> {
        let name = |p: &Value, f: &str| p["metadata"][f].as_str().unwrap_or_default().to_string();
        let mut v: Vec<String> = self
            .list("v1", "Pod")
            .iter()
            .filter(|p| p["spec"]["nodeName"] == node)
            .map(|p| format!("{}/{}", name(p, "namespace"), name(p, "name")))
            .collect();
        v.sort();
        v
    }

    pub fn set_node_ready(&self, node: &str, ready: bool) {
        self.write(|st, eff| {
            let Some(mut v) = st.get_value(ops::NODES, "", node) else { panic!("no node {node}") };
            let now = util::ts(util::now_secs());
            if let Some(conds) = v["status"]["conditions"].as_array_mut() {
                for c in conds.iter_mut().filter(|c| c["type"] == "Ready") {
                    c["status"] = json!(if ready { "True" } else { "False" });
                    c["reason"] = json!(if ready { "KubeletReady" } else { "KubeletNotReady" });
                    c["message"] = json!(if ready {
                        "kubelet is posting ready status"
                    } else {
                        "container runtime network not ready"
                    });
                    c["lastTransitionTime"] = json!(now);
                    c["lastHeartbeatTime"] = json!(now);
                }
            }
            let mut taints: Vec<Value> = v["spec"]["taints"].as_array().cloned().unwrap_or_default();
            taints.retain(|t| t["key"] != "node.kubernetes.io/not-ready");
            if !ready {
                taints.push(
                    json!({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule", "timeAdded": now}),
                );
            }
            if taints.is_empty() {
                if let Some(s) = v["spec"].as_object_mut() {
                    s.remove("taints");
                }
            } else {
                v["spec"]["taints"] = json!(taints);
            }
            let obj = st.put(ops::NODES, v);
            ops::after_write(st, ops::NODES, &obj, eff);
        });
    }

    /// Binds a pending pod to a node and starts it (Running, Ready).
    pub fn schedule_pod(&self, ns: &str, name: &str, node: &str) {
        self.write(|st, eff| {
            let Some(mut v) = st.get_value(ops::PODS, ns, name) else { panic!("no pod {ns}/{name}") };
            v["spec"]["nodeName"] = json!(node);
            v["status"] = ops::running_status(&v, util::now_secs());
            let obj = st.put(ops::PODS, v);
            ops::after_write(st, ops::PODS, &obj, eff);
        });
    }

    /// Sets a pod's phase (`Succeeded` / `Failed` terminate its containers).
    pub fn set_pod_phase(&self, ns: &str, name: &str, phase: &str) {
        self.write(|st, eff| {
            let Some(mut v) = st.get_value(ops::PODS, ns, name) else { panic!("no pod {ns}/{name}") };
            v["status"]["phase"] = json!(phase);
            if matches!(phase, "Succeeded" | "Failed") {
                let code = if phase == "Succeeded" { 0 } else { 1 };
                let reason = if phase == "Succeeded" { "Completed" } else { "Error" };
                let now = util::ts(util::now_secs());
                for c in v["status"]["containerStatuses"].as_array_mut().into_iter().flatten() {
                    c["ready"] = json!(false);
                    c["started"] = json!(false);
                    c["state"] =
                        json!({"terminated": {"exitCode": code, "reason": reason, "finishedAt": now}});
                }
                for c in v["status"]["conditions"].as_array_mut().into_iter().flatten() {
                    if c["type"] == "Ready" || c["type"] == "ContainersReady" {
                        c["status"] = json!("False");
                        c["reason"] = json!("PodCompleted");
                    }
                }
            }
            let obj = st.put(ops::PODS, v);
            ops::after_write(st, ops::PODS, &obj, eff);
        });
    }

    /// What `GET .../pods/{name}/log` returns.
    pub fn set_pod_log(&self, ns: &str, name: &str, text: &str) {
        self.sh.pod_logs.lock().unwrap().insert((ns.to_string(), name.to_string()), text.to_string());
    }

    /// Admits a Kueue workload with `flavor` (QuotaReserved + Admitted, `status.admission`) and
    /// updates queue status.
    pub fn admit_workload(&self, ns: &str, name: &str, flavor: &str) {
        self.write(|st, _| {
            let mut v =
                st.get_value(kueue::WLS, ns, name).unwrap_or_else(|| panic!("no workload {ns}/{name}"));
            kueue::admit(st, &mut v, flavor).expect("admit");
            st.put(kueue::WLS, v);
            kueue::refresh_queues(st);
        });
    }

    /// Sets a PDB's `minAvailable` / `maxUnavailable` (one of them; `None` removes it).
    pub fn set_pdb(
        &self,
        ns: &str,
        name: &str,
        min_available: Option<Value>,
        max_unavailable: Option<Value>,
    ) {
        self.write(|st, eff| {
            let mut v = st.get_value(ops::PDBS, ns, name).unwrap_or_else(|| panic!("no pdb {ns}/{name}"));
            let spec = v["spec"].as_object_mut().expect("spec");
            spec.remove("minAvailable");
            spec.remove("maxUnavailable");
            if let Some(m) = min_available {
                spec.insert("minAvailable".into(), m);
            }
            if let Some(m) = max_unavailable {
                spec.insert("maxUnavailable".into(), m);
            }
            v["metadata"]["generation"] = json!(v["metadata"]["generation"].as_i64().unwrap_or(1) + 1);
            let obj = st.put(ops::PDBS, v);
            ops::after_write(st, ops::PDBS, &obj, eff);
        });
    }

    pub fn set_policy(&self, p: Policy) {
        *self.sh.policy.write().unwrap() = p;
    }

    pub fn set_user_rules(&self, user: &str, rules: Vec<Rule>) {
        self.sh.policy.write().unwrap().set_user(user, rules);
    }

    /// Turns the visibility API on or off (off: 503 ServiceUnavailable).
    pub fn set_visibility(&self, on: bool) {
        self.sh.visibility.store(on, Ordering::SeqCst);
    }

    /// Forgets the watch history: a watch from an older resourceVersion gets 410 Expired, and
    /// outstanding continue tokens expire.
    pub fn compact(&self) {
        self.sh.store.lock().unwrap().compact();
    }

    /// Ends every open watch stream (clients must re-watch).
    pub fn drop_watches(&self) {
        self.sh.drop_tx.send_modify(|x| *x += 1);
    }

    /// Holds new watch streams before their first event until `resume_watches` (to change the
    /// cluster while a client is between watches, deterministically).
    pub fn pause_watches(&self) {
        self.sh.watch_gate.send_replace(true);
    }

    pub fn resume_watches(&self) {
        self.sh.watch_gate.send_replace(false);
    }

    /// How many watches were answered 410 Expired since the start.
    pub fn expired_watches(&self) -> usize {
        self.sh.expired_watches.load(Ordering::SeqCst)
    }

    /// How a watch from a compacted resourceVersion is refused: `false` (the default) as the
    /// API server's watch cache does, an answer of 200 whose one event is an ERROR with a 410
    /// Status; `true` as the answer itself, HTTP 410 Gone before any event (what a server
    /// without a watch cache can send). Either way the client must list again.
    pub fn expire_watches_with_status(&self, on: bool) {
        self.sh.expired_as_status.store(on, Ordering::SeqCst);
    }

    /// Number of watch streams currently open.
    pub fn open_watches(&self) -> usize {
        self.sh.drop_tx.receiver_count()
    }

    pub fn requests(&self) -> Vec<RequestLog> {
        self.sh.requests.lock().unwrap().clone()
    }

    pub fn clear_requests(&self) {
        self.sh.requests.lock().unwrap().clear();
    }
}
