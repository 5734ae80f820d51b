//! The watch loop: one kube-rs watcher per kind, merged into one stream, applied to the
//! [`Store`], and reported as a coalesced [`Update::Inventory`].

use super::kueue::{self, ClusterQueue, LocalQueue, Workload};
use super::map::{self, Store, key};
use super::slim::{SlimEvent, SlimNamespace, SlimNode, SlimPod, SlimQuota};
use super::{Connection, KubeConfig, Permissions, SOURCE, Shared, connect};
use crate::backend::retry::Backoff;
use crate::model::ActionError;
use crate::model::protocol::{Inventory, SourceStatus, Update};
use futures::stream::{BoxStream, StreamExt, select_all};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The permission checks asked before actions are offered: (name, verb, group, resource,
/// subresource).
pub const CHECKS: &[(&str, &str, &str, &str, &str)] = &[
    ("patch nodes", "patch", "", "nodes", ""),
    ("list pods", "list", "", "pods", ""),
    ("evict pods", "create", "", "pods", "eviction"),
    ("create events", "create", "events.k8s.io", "events", ""),
    ("delete jobs", "delete", "batch", "jobs", ""),
    ("create jobs", "create", "batch", "jobs", ""),
];

/// Asks the server, with SelfSubjectAccessReview, what this identity may do.
pub async fn permissions(client: &kube::Client) -> Permissions {
    let mut out = Permissions::new();
    for (name, verb, group, resource, sub) in CHECKS {
        out.insert(*name, access_review(client, verb, group, resource, sub, None).await);
    }
    out
}

/// One SelfSubjectAccessReview: may this identity `verb` `resource`[/`sub`] of `group` (in
/// `namespace`, or cluster-wide)? `Err` says why not, in the server's words.
pub async fn access_review(
    client: &kube::Client,
    verb: &str,
    group: &str,
    resource: &str,
    sub: &str,
    namespace: Option<&str>,
) -> Result<(), ActionError> {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.to_string()),
                group: Some(group.to_string()),
                resource: Some(resource.to_string()),
                subresource: (!sub.is_empty()).then(|| sub.to_string()),
                namespace: namespace.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    match api.create(&PostParams::default(), &review).await {
        Ok(r) => match r.status {
            Some(s) if s.allowed => Ok(()),
            Some(s) => Err(ActionError::forbidden(format!(
                "the API server says you may not {verb} {resource}{}{}",
                if sub.is_empty() { String::new() } else { format!("/{sub}") },
                s.reason.filter(|r| !r.is_empty()).map(|r| format!(": {r}")).unwrap_or_default()
            ))),
            None => Err(ActionError::other("the access review came back without an answer")),
        },
        Err(e) => Err(super::action_error(e)
            .context(&format!("could not ask the API server whether you may {verb} {resource}"))),
    }
}

enum Ev {
    Node(watcher::Result<Event<SlimNode>>),
    Pod(watcher::Result<Event<SlimPod>>),
    Namespace(watcher::Result<Event<SlimNamespace>>),
    Quota(watcher::Result<Event<SlimQuota>>),
    NodeEvent(watcher::Result<Event<SlimEvent>>),
    Cq(watcher::Result<Event<DynamicObject>>),
    Lq(watcher::Result<Event<DynamicObject>>),
    Wl(watcher::Result<Event<DynamicObject>>),
}

/// How each kind enters and leaves the store.
trait Keep: Sized {
    const KIND: &'static str;
    /// Stores the object; returns whether anything the console shows changed.
    fn put(self, s: &mut Store) -> bool;
    /// Whether the object is worth keeping at all (a relist buffers only these).
    fn wanted(&self) -> bool {
        true
    }
    fn remove(&self, s: &mut Store);
    fn clear(s: &mut Store);
}

impl Keep for SlimNode {
    const KIND: &'static str = "nodes";
    fn put(mut self, s: &mut Store) -> bool {
        let name = self.metadata.name.clone().unwrap_or_default();
        if s.nodes.get(&name).is_some_and(|old| super::slim::unchanged(&**old, &mut self)) {
            return false;
        }
        s.nodes.insert(name, Box::new(self));
        s.nodes_dirty = true;
        true
    }
    fn remove(&self, s: &mut Store) {
        s.nodes.remove(self.metadata.name.as_deref().unwrap_or(""));
        s.nodes_dirty = true;
    }
    fn clear(s: &mut Store) {
        s.nodes.clear();
        s.nodes_dirty = true;
    }
}

impl Keep for SlimPod {
    const KIND: &'static str = "pods";
    fn wanted(&self) -> bool {
        self.gpus() > 0
    }
    fn put(self, s: &mut Store) -> bool {
        s.put_pod(self)
    }
    fn remove(&self, s: &mut Store) {
        if s.pods.remove(&key(self.metadata.namespace.as_deref(), self.metadata.name.as_deref())).is_some() {
            s.pod_set_version += 1;
            s.nodes_dirty = true;
        }
    }
    fn clear(s: &mut Store) {
        s.pods.clear();
        s.pod_set_version += 1;
        s.nodes_dirty = true;
    }
}

impl Keep for SlimNamespace {
    const KIND: &'static str = "namespaces";
    fn put(self, s: &mut Store) -> bool {
        let team = self.metadata.labels.as_ref().and_then(|l| l.get(&s.team_label).cloned());
        s.teams.insert(self.metadata.name.unwrap_or_default(), team.clone()) != Some(team)
    }
    fn remove(&self, s: &mut Store) {
        s.teams.remove(self.metadata.name.as_deref().unwrap_or(""));
    }
    fn clear(s: &mut Store) {
        s.teams.clear();
    }
}

impl Keep for SlimQuota {
    const KIND: &'static str = "resourcequotas";
    fn put(mut self, s: &mut Store) -> bool {
        let k = key(self.metadata.namespace.as_deref(), self.metadata.name.as_deref());
        if s.quotas.get(&k).is_some_and(|old| super::slim::unchanged(old, &mut self)) {
            return false;
        }
        s.quotas.insert(k, self);
        true
    }
    fn remove(&self, s: &mut Store) {
        s.quotas.remove(&key(self.metadata.namespace.as_deref(), self.metadata.name.as_deref()));
    }
    fn clear(s: &mut Store) {
        s.quotas.clear();
    }
}

impl Keep for SlimEvent {
    const KIND: &'static str = "events";
    fn put(self, s: &mut Store) -> bool {
        s.put_event(&self)
    }
    fn remove(&self, _: &mut Store) {}
    fn clear(s: &mut Store) {
        s.node_events.clear();
    }
}

impl Keep for ClusterQueue {
    const KIND: &'static str = "clusterqueues";
    fn put(self, s: &mut Store) -> bool {
        s.cluster_queues.insert(self.name.clone(), self.clone()) != Some(self)
    }
    fn remove(&self, s: &mut Store) {
        s.cluster_queues.remove(&self.name);
    }
    fn clear(s: &mut Store) {
        s.cluster_queues.clear();
    }
}

impl Keep for LocalQueue {
    const KIND: &'static str = "localqueues";
    fn put(self, s: &mut Store) -> bool {
        s.local_queues.insert(key(Some(&self.namespace), Some(&self.name)), self.clone()) != Some(self)
    }
    fn remove(&self, s: &mut Store) {
        s.local_queues.remove(&key(Some(&self.namespace), Some(&self.name)));
    }
    fn clear(s: &mut Store) {
        s.local_queues.clear();
    }
}

impl Keep for Workload {
    const KIND: &'static str = "workloads";
    fn put(self, s: &mut Store) -> bool {
        s.workloads.insert(key(Some(&self.namespace), Some(&self.name)), self.clone()) != Some(self)
    }
    fn remove(&self, s: &mut Store) {
        s.workloads.remove(&key(Some(&self.namespace), Some(&self.name)));
    }
    fn clear(s: &mut Store) {
        s.workloads.clear();
    }
}

fn map_event<A, B>(e: Event<A>, f: impl Fn(A) -> B) -> Event<B> {
    match e {
        Event::Apply(a) => Event::Apply(f(a)),
        Event::Delete(a) => Event::Delete(f(a)),
        Event::Init => Event::Init,
        Event::InitApply(a) => Event::InitApply(f(a)),
        Event::InitDone => Event::InitDone,
    }
}

fn dynamic_value(o: DynamicObject) -> serde_json::Value {
    serde_json::to_value(&o).unwrap_or_default()
}

/// Per-session bookkeeping: relist buffers, which kinds have synced, the last error per kind.
#[derive(Default)]
struct Session {
    store: Store,
    buffers: HashMap<&'static str, Box<dyn std::any::Any + Send>>,
    synced: std::collections::HashSet<&'static str>,
    errors: BTreeMap<&'static str, String>,
    dirty: bool,
    errors_changed: bool,
    /// A kind whose watch request itself was answered 410 Gone, and the error: kube-rs keeps
    /// re-watching from the same resourceVersion then (it lists again only on a 410 inside a
    /// watch), so the session starts over, listing every kind.
    restart: Option<(&'static str, String)>,
}

impl Session {
    fn handle<K: Keep + Send + 'static>(&mut self, r: watcher::Result<Event<K>>) {
        let ev = match r {
            Ok(ev) => ev,
            Err(e) => {
                let msg = phrase(K::KIND, &e);
                if matches!(&e, watcher::Error::WatchStartFailed(_)) && gone(&e) {
                    self.restart = Some((K::KIND, msg.clone()));
                }
                if self.errors.get(K::KIND) != Some(&msg) {
                    self.errors.insert(K::KIND, msg);
                    self.errors_changed = true;
                }
                return;
            }
        };
        // A kind that failed stays stale (its error shown) while it lists again, until the list
        // is complete or the watch brings a change: its objects are the old ones until then.
        if !matches!(ev, Event::Init | Event::InitApply(_)) && self.errors.remove(K::KIND).is_some() {
            self.errors_changed = true;
        }
        match ev {
            Event::Apply(k) => {
                self.dirty |= k.put(&mut self.store);
            }
            Event::Delete(k) => {
                k.remove(&mut self.store);
                self.dirty = true;
            }
            Event::Init => {
                self.buffers.insert(K::KIND, Box::new(Vec::<K>::new()));
            }
            Event::InitApply(k) => {
                match self.buffers.get_mut(K::KIND).and_then(|b| b.downcast_mut::<Vec<K>>()) {
                    // Only what will be kept waits for the end of the list (a pod list is
                    // mostly pods without GPUs).
                    Some(b) if k.wanted() => b.push(k),
                    Some(_) => {}
                    None => {
                        k.put(&mut self.store);
                    }
                }
            }
            Event::InitDone => {
                // A (re)list is complete: it replaces what the store held, so objects deleted
                // while the watch was down disappear and none are lost.
                let buf = self.buffers.remove(K::KIND).and_then(|b| b.downcast::<Vec<K>>().ok());
                K::clear(&mut self.store);
                for k in buf.map(|b| *b).unwrap_or_default() {
                    k.put(&mut self.store);
                }
                tracing::debug!(kind = K::KIND, "listed");
                // The list's pages and the objects filtered out are garbage now.
                crate::memory::release_free();
                self.synced.insert(K::KIND);
                self.dirty = true;
            }
        }
    }
}

/// A watch error phrased for an operator.
fn phrase(kind: &str, e: &watcher::Error) -> String {
    // An answer refused for its size says so (kube-rs wraps it where its own text hides it).
    let mut src: Option<&dyn std::error::Error> = Some(e);
    while let Some(x) = src {
        // By its words: an `io::Error` (the watch's line reader) shows it but hides it from
        // `source()`.
        let t = x.to_string();
        if x.downcast_ref::<super::bounded::TooLarge>().is_some() || t.contains("[kube] max_body)") {
            let t = t.find("Kubernetes ").map_or(t.as_str(), |i| &t[i..]);
            return format!("watch {kind}: {t} — retrying with backoff");
        }
        src = x.source();
    }
    if gone(e) {
        return format!(
            "watch {kind}: 410 Gone — the server compacted its history past this watch; listing again"
        );
    }
    let s = e.to_string();
    let hint = if s.contains("401") || s.contains("Unauthorized") {
        " — the credentials were refused: refresh the token in the kubeconfig"
    } else if s.contains("403") || s.contains("forbidden") {
        " — RBAC forbids it: ask for list/watch on this resource"
    } else {
        " — retrying with backoff"
    };
    format!("watch {kind}: {s}{hint}")
}

/// A watch refused with 410 Gone (Expired): the resourceVersion it resumes from is older than
/// the server's history. The API server's watch cache says so in the stream (an ERROR event);
/// a server without one answers the watch request itself with the status.
fn gone(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::WatchError(s) => s.code == 410,
        watcher::Error::WatchStartFailed(kube::Error::Api(s)) => s.code == 410,
        _ => false,
    }
}

/// How a session ended.
enum End {
    Cancelled,
    Switch(String),
    /// Start over on the same context, the kind and error that made it so still shown.
    Restart((&'static str, String)),
}

/// The waits between failed connections: 0.5 s doubling to 30 s.
fn reconnect_backoff() -> Backoff {
    Backoff::new(Duration::from_millis(500), Duration::from_secs(30), 0.0)
}

/// Watches the cluster until cancelled, reconnecting with backoff and switching contexts on
/// request (`:ctx`).
pub async fn run(
    cfg: KubeConfig,
    shared: Shared,
    tx: mpsc::Sender<Update>,
    mut ctx_rx: mpsc::UnboundedReceiver<String>,
    cancel: CancellationToken,
) {
    let mut context = cfg.context.clone();
    let mut retry = reconnect_backoff();
    let mut carried = None;
    let m = &cfg.mapping;
    super::slim::keep_labels(
        m.pool_labels.iter().chain(&m.user_labels).chain(std::iter::once(&m.team_label)).cloned().collect(),
    );
    loop {
        let conn = match connect(&cfg, context.as_deref()).await {
            Ok(c) => c,
            Err(e) => {
                shared.set_connection(None, Permissions::new());
                let _ =
                    tx.send(Update::Status(status(context.as_deref().unwrap_or("-"), Some(e), None))).await;
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    c = ctx_rx.recv() => match c {
                        Some(c) => context = Some(c),
                        None => return,
                    },
                    _ = tokio::time::sleep(retry.next_delay()) => {}
                }
                continue;
            }
        };
        retry.reset();
        let perms = permissions(&conn.client).await;
        shared.set_connection(Some(conn.clone()), perms);
        match session(&cfg, &conn, &shared, &tx, &mut ctx_rx, &cancel, carried.take()).await {
            End::Cancelled => return,
            End::Switch(c) => context = Some(c),
            End::Restart(why) => {
                carried = Some(why);
                // Not a tight loop on a server that compacts all the time.
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(retry.next_delay()) => {}
                }
            }
        }
    }
}

fn status(context: &str, error: Option<String>, detail: Option<String>) -> SourceStatus {
    SourceStatus {
        cluster: Default::default(),
        name: SOURCE.into(),
        simulated: false,
        ok_at: error.is_none().then(|| jiff::Timestamp::now().as_second()),
        error,
        detail: Some(detail.unwrap_or_else(|| format!("ctx {context}")).into()),
    }
}

/// The Kueue resources the server serves: (version, resources by plural), preferring v1beta2.
pub async fn kueue_resources(client: &kube::Client) -> Option<(String, HashMap<String, ApiResource>)> {
    let g = kube::discovery::oneshot::group(client, kueue::GROUP).await.ok()?;
    let versions: Vec<&str> = g.versions().collect();
    let v = ["v1beta2", "v1beta1"].into_iter().find(|v| versions.contains(v))?;
    let res = g.versioned_resources(v).into_iter().map(|(ar, _)| (ar.plural.clone(), ar)).collect();
    Some((v.to_string(), res))
}

pub async fn visibility_version(client: &kube::Client) -> Option<String> {
    let g = kube::discovery::oneshot::group(client, kueue::VISIBILITY_GROUP).await.ok()?;
    let versions: Vec<&str> = g.versions().collect();
    ["v1beta2", "v1beta1"].into_iter().find(|v| versions.contains(v)).map(str::to_string)
}

/// Reads every ClusterQueue's pending workloads; `Err` says why positions are unavailable.
async fn positions(
    client: &kube::Client,
    version: &str,
    cqs: Vec<String>,
) -> Result<HashMap<String, kueue::Pending>, String> {
    let mut out = HashMap::new();
    for cq in cqs {
        let path = format!(
            "/apis/{}/{version}/clusterqueues/{cq}/pendingworkloads?limit=1000",
            kueue::VISIBILITY_GROUP
        );
        let req = http::Request::get(path).body(Vec::new()).map_err(|e| e.to_string())?;
        let body = tokio::time::timeout(Duration::from_secs(5), client.request_text(req))
            .await
            .map_err(|_| "the visibility API did not answer in 5 s".to_string())?
            .map_err(|e| format!("visibility API: {e}"))?;
        for p in kueue::pending_summary(body.as_bytes()).map_err(|e| format!("visibility API answer: {e}"))? {
            out.insert(key(Some(&p.namespace), Some(&p.name)), p);
        }
    }
    Ok(out)
}

fn streams(
    cfg: &KubeConfig,
    client: &kube::Client,
    kueue: Option<&HashMap<String, ApiResource>>,
) -> BoxStream<'static, Ev> {
    let wc = || watcher::Config::default().any_semantic().page_size(cfg.page_size);
    let ns = cfg.namespace.as_deref();
    let pods: Api<SlimPod> = match ns {
        Some(n) => Api::namespaced(client.clone(), n),
        None => Api::all(client.clone()),
    };
    let quotas: Api<SlimQuota> = match ns {
        Some(n) => Api::namespaced(client.clone(), n),
        None => Api::all(client.clone()),
    };
    let mut all: Vec<BoxStream<'static, Ev>> = vec![
        watcher(Api::<SlimNode>::all(client.clone()), wc()).default_backoff().map(Ev::Node).boxed(),
        // Pods are the big list: paged (a page at a time in memory), not one answer from the cache.
        watcher(pods, watcher::Config::default().page_size(cfg.page_size))
            .default_backoff()
            .map(Ev::Pod)
            .boxed(),
        watcher(quotas, wc()).default_backoff().map(Ev::Quota).boxed(),
        watcher(Api::<SlimEvent>::all(client.clone()), wc().fields("involvedObject.kind=Node"))
            .default_backoff()
            .map(Ev::NodeEvent)
            .boxed(),
    ];
    // Namespaces only for their team label; an identity scoped to one namespace may not list them.
    if ns.is_none() {
        all.push(
            watcher(Api::<SlimNamespace>::all(client.clone()), wc())
                .default_backoff()
                .map(Ev::Namespace)
                .boxed(),
        );
    }
    if let Some(res) = kueue {
        let dynamic = |plural: &str| {
            res.get(plural).map(|ar| {
                let api = match ns {
                    Some(n) if plural != "clusterqueues" => {
                        Api::<DynamicObject>::namespaced_with(client.clone(), n, ar)
                    }
                    _ => Api::<DynamicObject>::all_with(client.clone(), ar),
                };
                watcher(api, wc()).default_backoff()
            })
        };
        if let Some(s) = dynamic("clusterqueues") {
            all.push(s.map(Ev::Cq).boxed());
        }
        if let Some(s) = dynamic("localqueues") {
            all.push(s.map(Ev::Lq).boxed());
        }
        if let Some(s) = dynamic("workloads") {
            all.push(s.map(Ev::Wl).boxed());
        }
    }
    select_all(all).boxed()
}

use kube::runtime::watcher::watcher;

async fn session(
    cfg: &KubeConfig,
    conn: &Connection,
    shared: &Shared,
    tx: &mpsc::Sender<Update>,
    ctx_rx: &mut mpsc::UnboundedReceiver<String>,
    cancel: &CancellationToken,
    carried: Option<(&'static str, String)>,
) -> End {
    let client = &conn.client;
    let kueue = kueue_resources(client).await;
    let visibility = match &kueue {
        Some(_) => visibility_version(client).await,
        None => None,
    };
    let mut detail = format!("ctx {}", conn.context);
    if conn.readonly {
        detail.push_str(" (read-only)");
    }
    if let Some((v, _)) = &kueue {
        detail.push_str(&format!(" · kueue {v}"));
    }
    let mut events = streams(cfg, client, kueue.as_ref().map(|(_, r)| r));
    // Kinds watched: nodes, pods, quotas, node events, namespaces (all-namespace mode), Kueue's.
    let expected = 4
        + usize::from(cfg.namespace.is_none())
        + kueue.as_ref().map_or(0, |(_, r)| {
            ["clusterqueues", "localqueues", "workloads"].iter().filter(|p| r.contains_key(**p)).count()
        });
    let mut s = Session::default();
    s.store.team_label = cfg.mapping.team_label.clone();
    // After a restart for a 410, the kind stays stale until it has listed again.
    s.errors.extend(carried);
    let first_error =
        (!s.errors.is_empty()).then(|| s.errors.values().cloned().collect::<Vec<_>>().join("; "));
    let mut coalesce = tokio::time::interval(cfg.coalesce);
    coalesce.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut heartbeat = tokio::time::interval(Duration::from_secs(5));
    let mut pos_tick = tokio::time::interval(cfg.positions_every);
    let mut pos_note: Option<String> = None;
    let mut names_version = u64::MAX;
    let _ = tx.send(Update::Status(status(&conn.context, first_error, Some(detail.clone())))).await;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return End::Cancelled,
            c = ctx_rx.recv() => match c {
                Some(c) => return End::Switch(c),
                None => return End::Cancelled,
            },
            ev = events.next() => {
                let Some(ev) = ev else { return End::Switch(conn.context.clone()) };
                let synced_before = (s.synced.len(), s.synced.contains("nodes"));
                match ev {
                    Ev::Node(r) => s.handle(r),
                    Ev::Pod(r) => s.handle(r),
                    Ev::Namespace(r) => s.handle(r),
                    Ev::Quota(r) => s.handle(r),
                    Ev::NodeEvent(r) => s.handle(r),
                    Ev::Cq(r) => s.handle(r.map(|e| map_event(e, |o| kueue::cluster_queue(&dynamic_value(o))))),
                    Ev::Lq(r) => s.handle(r.map(|e| map_event(e, |o| kueue::local_queue(&dynamic_value(o))))),
                    Ev::Wl(r) => s.handle(r.map(|e| map_event(e, |o| kueue::workload(&dynamic_value(o))))),
                }
                // The nodes' first listing, and the moment every kind has listed, are shown at
                // once, not at the next tick.
                let nodes_now = s.synced.contains("nodes") && !synced_before.1;
                let all_now = s.synced.len() > synced_before.0 && s.synced.len() == expected;
                if (nodes_now || all_now)
                    && s.synced.contains("nodes")
                    && emit(&mut s, &mut names_version, tx, conn, cfg, kueue.is_some(), shared).await.is_err()
                {
                    return End::Cancelled;
                }
                if s.errors_changed {
                    s.errors_changed = false;
                    let err = (!s.errors.is_empty()).then(|| s.errors.values().cloned().collect::<Vec<_>>().join("; "));
                    let _ = tx.send(Update::Status(status(&conn.context, err, Some(detail.clone())))).await;
                }
                if let Some(why) = s.restart.take() {
                    tracing::info!(kind = why.0, "watch answered 410 Gone: listing every kind again");
                    return End::Restart(why);
                }
            }
            _ = coalesce.tick() => {
                if s.dirty && s.synced.contains("nodes") && emit(&mut s, &mut names_version, tx, conn, cfg, kueue.is_some(), shared).await.is_err() {
                    return End::Cancelled;
                }
            }
            _ = heartbeat.tick() => {
                if s.errors.is_empty() {
                    let d = match &pos_note { Some(n) => format!("{detail} · {n}"), None => detail.clone() };
                    let _ = tx.send(Update::Status(status(&conn.context, None, Some(d)))).await;
                }
            }
            _ = pos_tick.tick() => {
                let Some(v) = &visibility else {
                    if kueue.is_some() {
                        pos_note = Some("queue positions from priority (no visibility API)".into());
                    }
                    continue;
                };
                let cqs: Vec<String> = s.store.cluster_queues.keys().cloned().collect();
                match positions(client, v, cqs).await {
                    Ok(p) => {
                        pos_note = None;
                        if p != s.store.positions {
                            s.store.positions = p;
                            s.dirty = true;
                        }
                    }
                    Err(e) => {
                        tracing::warn!("{e}");
                        pos_note = Some("queue positions from priority (visibility API unavailable)".into());
                        if !s.store.positions.is_empty() {
                            s.store.positions.clear();
                            s.dirty = true;
                        }
                    }
                }
            }
        }
    }
}

/// Sends the model built from the store (and the pod names when the set of pods changed).
async fn emit(
    s: &mut Session,
    names_version: &mut u64,
    tx: &mpsc::Sender<Update>,
    conn: &Connection,
    cfg: &KubeConfig,
    kueue: bool,
    shared: &Shared,
) -> Result<(), ()> {
    s.dirty = false;
    if s.store.pod_set_version != *names_version {
        *names_version = s.store.pod_set_version;
        tx.send(Update::PodNames(map::pod_names(&s.store))).await.map_err(|_| ())?;
    }
    let inv = inventory(s, &conn.context, &cfg.mapping, kueue, shared);
    let at = jiff::Timestamp::now().as_second();
    tx.send(Update::Inventory { at, inventory: Box::new(inv) }).await.map_err(|_| ())?;
    crate::memory::release_free();
    Ok(())
}

fn inventory(
    s: &mut Session,
    context: &str,
    mapping: &map::Mapping,
    kueue: bool,
    shared: &Shared,
) -> Inventory {
    let t = std::time::Instant::now();
    let with_nodes = std::mem::take(&mut s.store.nodes_dirty);
    let b = map::build_with(&s.store, mapping, with_nodes);
    tracing::debug!(
        us = t.elapsed().as_micros() as u64,
        nodes = b.nodes.len(),
        jobs = b.jobs.len(),
        "kube model built"
    );
    let pods_synced = s.synced.contains("pods") && (!kueue || s.synced.contains("workloads"));
    if pods_synced {
        shared.set_owners(b.owners);
    }
    Inventory {
        source: SOURCE.into(),
        cluster: Some(context.into()),
        nodes: with_nodes.then_some(b.nodes),
        jobs: pods_synced.then_some(b.jobs),
        queues: (!kueue || s.synced.contains("clusterqueues")).then_some(b.queues),
        quotas: s.synced.contains("resourcequotas").then_some(b.quotas),
        storage: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::kube::bounded::TooLarge;

    /// A refused answer reads as what it is, wherever kube-rs wraps it: a list's body error
    /// (`Service`), a watch line's (`ReadEvents`, an `io::Error` that hides its source).
    #[test]
    fn a_refused_answer_is_phrased_with_its_limit() {
        let list = watcher::Error::InitialListFailed(kube::Error::Service(Box::new(TooLarge::Body {
            limit: 1 << 20,
        })));
        assert_eq!(
            phrase("pods", &list),
            "watch pods: Kubernetes API answer refused after 1 MiB (the limit, [kube] max_body): larger, or endless — retrying with backoff"
        );
        let io = std::io::Error::other(TooLarge::Event { limit: 256 << 20 });
        let watch = watcher::Error::WatchFailed(kube::Error::ReadEvents(io));
        assert_eq!(
            phrase("nodes", &watch),
            "watch nodes: Kubernetes watch event refused: longer than 256 MiB (the limit, [kube] max_body) — retrying with backoff"
        );
    }
}
