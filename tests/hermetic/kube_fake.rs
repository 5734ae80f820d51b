//! The fake Kubernetes API server (tests/kube_support) against kube-rs itself: paging, watcher
//! and reflector through mutations, 410 Expired after compaction, dropped streams, eviction
//! with PDBs, SelfSubjectAccessReview and enforcement, Kueue in both versions, the visibility
//! API, pod logs, events and jobs.

use crate::kube_support;

use crate::kube_support::{Cluster, FakeKube, Handle, KueueMode, Rule};
use futures::StreamExt;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{
    Api, DeleteParams, DynamicObject, EvictParams, ListParams, LogParams, Patch, PatchParams, PostParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::ApiResource;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::{Value, json};
use std::time::Duration;

async fn client_as(fake: &Handle, user: &str) -> kube::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let kc = Kubeconfig::read_from(fake.kubeconfig_path()).expect("kubeconfig");
    let opts = KubeConfigOptions { context: Some(format!("fake-{user}")), ..Default::default() };
    let mut cfg = kube::Config::from_custom_kubeconfig(kc, &opts).await.expect("config");
    // kube 5 retries 429/503/504 by default (15 times, exponential backoff): the statuses are
    // what these tests look at.
    cfg.default_retry = false;
    kube::Client::try_from(cfg).expect("client")
}

async fn client(fake: &Handle) -> kube::Client {
    client_as(fake, "admin").await
}

/// Waits (polling) until `f` holds; panics after a generous bound so a bug cannot hang CI.
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never happened: {what}");
}

fn api_code(e: &kube::Error) -> u16 {
    match e {
        kube::Error::Api(s) => s.code,
        other => panic!("not an API error: {other:?}"),
    }
}

fn api_err(e: kube::Error) -> (u16, String, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason.clone(), s.message.clone()),
        other => panic!("not an API error: {other:?}"),
    }
}

fn gen_cluster() -> Cluster {
    Cluster::generate(&kube_support::GenOpts {
        nodes: 12,
        pods: 120,
        gpu_pods: 50,
        seed: 7,
        ..Default::default()
    })
}

#[tokio::test]
async fn paging_with_limit_and_continue_equals_the_full_list() {
    let fake = FakeKube::start(gen_cluster(), Default::default());
    let pods: Api<Pod> = Api::all(client(&fake).await);
    let full = pods.list(&ListParams::default()).await.unwrap();
    assert_eq!(full.items.len(), 120);
    let mut paged = Vec::new();
    let mut lp = ListParams::default().limit(7);
    let mut pages = 0;
    let mut page = pods.list(&lp).await.unwrap();
    let first_rv = page.metadata.resource_version.clone();
    loop {
        pages += 1;
        assert!(page.items.len() <= 7);
        // Every page of one list shows the same snapshot.
        assert_eq!(page.metadata.resource_version, first_rv);
        paged.extend(page.items.iter().map(|p| p.metadata.name.clone().unwrap()));
        match page.metadata.continue_.clone().filter(|c| !c.is_empty()) {
            Some(c) => {
                // A write between pages does not leak into the snapshot.
                if pages == 2 {
                    fake.upsert(json!({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": "aaa-late", "namespace": "default"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}))
                        .unwrap();
                }
                lp = lp.continue_token(&c);
                page = pods.list(&lp).await.unwrap();
            }
            None => break,
        }
    }
    let want: Vec<String> = full.items.iter().map(|p| p.metadata.name.clone().unwrap()).collect();
    assert_eq!(paged, want);
    assert_eq!(pages, 120usize.div_ceil(7));

    // Namespaced lists and selectors.
    let ns_pods: Api<Pod> = Api::namespaced(client(&fake).await, "kube-system");
    let ks = ns_pods.list(&ListParams::default().limit(5)).await.unwrap();
    assert!(ks.items.iter().all(|p| p.metadata.namespace.as_deref() == Some("kube-system")));
    let running = pods.list(&ListParams::default().fields("status.phase=Running")).await.unwrap();
    assert!(!running.items.is_empty());
    assert!(running.items.iter().all(|p| p.status.as_ref().unwrap().phase.as_deref() == Some("Running")));
    let not_gpu = pods
        .list(
            &ListParams::default()
                .labels("app.kubernetes.io/name notin (nvidia-device-plugin-daemonset,nvidia-dcgm-exporter)"),
        )
        .await
        .unwrap();
    assert!(not_gpu.items.len() < full.items.len() + 1);
    assert!(not_gpu.items.iter().all(|p| !p.metadata.name.as_ref().unwrap().starts_with("nvidia-")));
    let bad = pods.list(&ListParams::default().fields("spec.bogus=1")).await.unwrap_err();
    let (code, _, msg) = api_err(bad);
    assert_eq!((code, msg.as_str()), (400, "field label not supported: spec.bogus"));

    // A continue token from before a compaction is gone: 410 Expired.
    let page = pods.list(&ListParams::default().limit(10)).await.unwrap();
    let tok = page.metadata.continue_.clone().unwrap();
    fake.compact();
    let e = pods.list(&ListParams::default().limit(10).continue_token(&tok)).await.unwrap_err();
    let (code, reason, _) = api_err(e);
    assert_eq!((code, reason.as_str()), (410, "Expired"));
}

#[tokio::test]
async fn watcher_sees_added_modified_deleted() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let nodes: Api<Node> = Api::all(client(&fake).await);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let mut s = watcher(nodes, watcher::Config::default()).boxed();
        while let Some(ev) = s.next().await {
            let _ = tx.send(ev.expect("watch event"));
        }
    });
    // Initial list.
    let mut initial = Vec::new();
    loop {
        match rx.recv().await.unwrap() {
            watcher::Event::InitApply(n) => initial.push(n.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(initial.len(), 5);
    let new_node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-9", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    fake.upsert(new_node).unwrap();
    fake.set_node_ready("gpu-node-9", false);
    assert!(fake.delete("v1", "Node", "", "gpu-node-9"));
    let mut seen = Vec::new();
    while seen.len() < 3 {
        match rx.recv().await.unwrap() {
            watcher::Event::Apply(n) => {
                let ready = n
                    .status
                    .unwrap()
                    .conditions
                    .unwrap()
                    .iter()
                    .find(|c| c.type_ == "Ready")
                    .unwrap()
                    .status
                    .clone();
                seen.push(format!("apply {} {ready}", n.metadata.name.unwrap()));
            }
            watcher::Event::Delete(n) => seen.push(format!("delete {}", n.metadata.name.unwrap())),
            _ => {}
        }
    }
    assert_eq!(seen, ["apply gpu-node-9 True", "apply gpu-node-9 False", "delete gpu-node-9"]);
    task.abort();
    // The watcher listed with paging and watched from the list's resourceVersion with bookmarks.
    let reqs = fake.requests();
    assert!(
        reqs.iter().any(|r| r.path == "/api/v1/nodes"
            && r.query.contains("limit=500")
            && !r.query.contains("watch"))
    );
    assert!(reqs.iter().any(|r| r.path == "/api/v1/nodes"
        && r.query.contains("watch=true")
        && r.query.contains("allowWatchBookmarks=true")));
}

/// A reflector over pods, its store, and the task driving it.
fn pod_reflector(
    api: Api<Pod>,
    cfg: watcher::Config,
) -> (reflector::Store<Pod>, tokio::task::JoinHandle<()>) {
    let (reader, writer) = reflector::store();
    let stream = reflector(writer, watcher(api, cfg)).default_backoff().applied_objects();
    let task = tokio::spawn(async move {
        let mut s = stream.boxed();
        while s.next().await.is_some() {}
    });
    (reader, task)
}

fn names(store: &reflector::Store<Pod>) -> Vec<String> {
    let mut v: Vec<String> = store
        .state()
        .iter()
        .map(|p| format!("{}/{}", p.metadata.namespace.clone().unwrap(), p.metadata.name.clone().unwrap()))
        .collect();
    v.sort();
    v
}

fn server_names(fake: &Handle) -> Vec<String> {
    let mut v: Vec<String> = fake
        .list("v1", "Pod")
        .iter()
        .map(|p| {
            format!(
                "{}/{}",
                p["metadata"]["namespace"].as_str().unwrap(),
                p["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    v.sort();
    v
}

fn bare_pod(ns: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
}

#[tokio::test]
async fn watch_410_after_compaction_makes_the_watcher_relist_and_lose_nothing() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let (store, task) = pod_reflector(Api::all(client(&fake).await), watcher::Config::default());
    store.wait_until_ready().await.unwrap();
    assert_eq!(names(&store), server_names(&fake));
    let lists_before =
        fake.requests().iter().filter(|r| r.path == "/api/v1/pods" && !r.query.contains("watch")).count();

    // The first watch open before it is dropped: a watch still on its way would subscribe after
    // the drop, see the changes live, and never need the relist this test is about.
    eventually("the first watch is open", || {
        fake.requests().iter().any(|r| r.path == "/api/v1/pods" && r.query.contains("watch"))
    })
    .await;
    // The client is between watches while the cluster changes and the history is compacted.
    fake.pause_watches();
    fake.drop_watches();
    fake.upsert(bare_pod("team-a", "created-while-away")).unwrap();
    assert!(fake.delete("v1", "Pod", "team-a", "debug-shell"));
    fake.compact();
    fake.resume_watches();

    eventually("reflector caught up after relist", || names(&store) == server_names(&fake)).await;
    assert!(names(&store).contains(&"team-a/created-while-away".to_string()));
    assert!(!names(&store).contains(&"team-a/debug-shell".to_string()));
    let reqs = fake.requests();
    let lists_after = reqs.iter().filter(|r| r.path == "/api/v1/pods" && !r.query.contains("watch")).count();
    assert!(lists_after > lists_before, "the 410 must cause a relist");
    task.abort();

    // The raw stream: a watch from a compacted resourceVersion gets an ERROR event with 410.
    let old_rv = "2";
    let body =
        reqwest_like_get(&fake, &format!("/api/v1/pods?watch=1&resourceVersion={old_rv}&timeoutSeconds=1"))
            .await;
    let first: Value = serde_json::from_str(body.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "ERROR");
    assert_eq!(first["object"]["code"], 410);
    assert_eq!(first["object"]["reason"], "Expired");
    assert!(first["object"]["message"].as_str().unwrap().starts_with("too old resource version: 2 ("));
}

/// A raw GET as admin (text body), for what kube-rs does not expose.
async fn reqwest_like_get(fake: &Handle, path: &str) -> String {
    let c = client(fake).await;
    c.request_text(http::Request::get(path).body(Vec::new()).unwrap()).await.expect("GET")
}

#[tokio::test]
async fn dropped_watch_streams_reconnect_without_losing_objects() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let (store, task) = pod_reflector(Api::all(client(&fake).await), watcher::Config::default());
    store.wait_until_ready().await.unwrap();
    let lists_before =
        fake.requests().iter().filter(|r| r.path == "/api/v1/pods" && !r.query.contains("watch")).count();
    for round in 0..3 {
        fake.pause_watches();
        fake.drop_watches();
        fake.upsert(bare_pod("team-b", &format!("round-{round}"))).unwrap();
        fake.set_pod_phase("team-a", "train-llm-0-h5t8r", if round % 2 == 0 { "Failed" } else { "Running" });
        fake.resume_watches();
        eventually("reflector caught up", || names(&store) == server_names(&fake)).await;
    }
    let phase = store
        .state()
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some("train-llm-0-h5t8r"))
        .and_then(|p| p.status.clone()?.phase)
        .unwrap();
    assert_eq!(phase, "Failed");
    // Resumed from the last resourceVersion: no relist was needed.
    let lists_after =
        fake.requests().iter().filter(|r| r.path == "/api/v1/pods" && !r.query.contains("watch")).count();
    assert_eq!(lists_after, lists_before);
    task.abort();
}

#[tokio::test]
async fn streaming_list_watch_sends_initial_events_then_a_bookmark() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let cfg = watcher::Config::default().streaming_lists();
    let (store, task) = pod_reflector(Api::all(client(&fake).await), cfg);
    store.wait_until_ready().await.unwrap();
    assert_eq!(names(&store), server_names(&fake));
    fake.upsert(bare_pod("default", "after-stream")).unwrap();
    eventually("new pod seen", || names(&store) == server_names(&fake)).await;
    assert!(fake.requests().iter().any(|r| r.query.contains("sendInitialEvents=true")));
    assert!(!fake.requests().iter().any(|r| r.path == "/api/v1/pods" && !r.query.contains("watch")));
    task.abort();
}

#[tokio::test]
async fn eviction_is_blocked_by_a_pdb_until_it_is_relaxed() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let c = client(&fake).await;
    let pods: Api<Pod> = Api::namespaced(c.clone(), "team-b");
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(c.clone(), "team-b");
    let st = pdbs.get("inference-pdb").await.unwrap().status.unwrap();
    assert_eq!(
        (st.current_healthy, st.desired_healthy, st.disruptions_allowed, st.expected_pods),
        (2, 2, 0, 2)
    );

    let e = pods.evict("inference-7f6c9d8b4-r9p2k", &EvictParams::default()).await.unwrap_err();
    let kube::Error::Api(s) = e else { panic!("api error") };
    assert_eq!(s.code, 429);
    assert_eq!(s.reason, "TooManyRequests");
    assert_eq!(s.message, "Cannot evict pod as it would violate the pod's disruption budget.");
    let raw = reqwest_like_post(&fake, "/api/v1/namespaces/team-b/pods/inference-7f6c9d8b4-r9p2k/eviction",
        json!({"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": {"name": "inference-7f6c9d8b4-r9p2k", "namespace": "team-b"}})).await;
    assert_eq!(raw["code"], 429);
    assert_eq!(raw["details"]["causes"][0]["reason"], "DisruptionBudget");
    assert_eq!(
        raw["details"]["causes"][0]["message"],
        "The disruption budget inference-pdb needs 2 healthy pods and has 2 currently"
    );
    assert!(pods.get_opt("inference-7f6c9d8b4-r9p2k").await.unwrap().is_some());

    // maxUnavailable 1: one may go, then the budget is spent again.
    fake.set_pdb("team-b", "inference-pdb", None, Some(json!(1)));
    assert_eq!(pdbs.get("inference-pdb").await.unwrap().status.unwrap().disruptions_allowed, 1);
    pods.evict("inference-7f6c9d8b4-r9p2k", &EvictParams::default()).await.unwrap();
    // Graceful: the pod is terminating first (deletionTimestamp), then gone.
    let p = pods.get_opt("inference-7f6c9d8b4-r9p2k").await.unwrap();
    if let Some(p) = p {
        assert!(p.metadata.deletion_timestamp.is_some());
    }
    assert_eq!(pdbs.get("inference-pdb").await.unwrap().status.unwrap().disruptions_allowed, 0);
    let e = pods.evict("inference-7f6c9d8b4-t3v7m", &EvictParams::default()).await.unwrap_err();
    assert_eq!(api_code(&e), 429);
    let store_fake = &fake;
    eventually("evicted pod removed", || {
        store_fake.get("v1", "Pod", "team-b", "inference-7f6c9d8b4-r9p2k").is_none()
    })
    .await;
    let e = pods.evict("inference-7f6c9d8b4-r9p2k", &EvictParams::default()).await.unwrap_err();
    assert_eq!(api_code(&e), 404);

    // Two PDBs over one pod: 500.
    fake.upsert(json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "second", "namespace": "team-b"},
        "spec": {"selector": {"matchLabels": {"app": "inference"}}, "maxUnavailable": "100%"}})).unwrap();
    let e = pods.evict("inference-7f6c9d8b4-t3v7m", &EvictParams::default()).await.unwrap_err();
    assert_eq!(api_code(&e), 500);
    assert!(fake.delete("policy/v1", "PodDisruptionBudget", "team-b", "inference-pdb"));
    // Immediate deletion with deleteOptions.gracePeriodSeconds 0 (posted raw: kube's EvictParams
    // serializes `delete_options` in snake_case, which the API ignores).
    let raw = reqwest_like_post(&fake, "/api/v1/namespaces/team-b/pods/inference-7f6c9d8b4-t3v7m/eviction",
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "inference-7f6c9d8b4-t3v7m", "namespace": "team-b"},
               "deleteOptions": {"gracePeriodSeconds": 0}})).await;
    assert_eq!((raw["status"].as_str(), raw["code"].as_i64()), (Some("Success"), Some(201)));
    assert!(pods.get_opt("inference-7f6c9d8b4-t3v7m").await.unwrap().is_none());
}

async fn reqwest_like_post(fake: &Handle, path: &str, body: Value) -> Value {
    let c = client(fake).await;
    let req = http::Request::post(path)
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    match c.request::<Value>(req).await {
        Ok(v) => v,
        Err(kube::Error::Api(s)) => serde_json::to_value(&*s).unwrap(),
        Err(e) => panic!("{e}"),
    }
}

async fn can(
    c: &kube::Client,
    verb: &str,
    group: &str,
    resource: &str,
    sub: Option<&str>,
    ns: Option<&str>,
) -> bool {
    let ssar = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                group: Some(group.into()),
                resource: Some(resource.into()),
                subresource: sub.map(String::from),
                namespace: ns.map(String::from),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(c.clone());
    api.create(&PostParams::default(), &ssar).await.unwrap().status.unwrap().allowed
}

#[tokio::test]
async fn access_reviews_follow_the_policy_that_requests_are_held_to() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let admin = client(&fake).await;
    let viewer = client_as(&fake, "viewer").await;
    assert!(can(&admin, "patch", "", "nodes", None, None).await);
    assert!(can(&admin, "create", "", "pods", Some("eviction"), Some("team-a")).await);
    assert!(can(&viewer, "list", "", "pods", None, None).await);
    assert!(!can(&viewer, "patch", "", "nodes", None, None).await);
    assert!(!can(&viewer, "create", "", "pods", Some("eviction"), Some("team-a")).await);

    let nodes: Api<Node> = Api::all(viewer.clone());
    assert_eq!(nodes.list(&ListParams::default()).await.unwrap().items.len(), 5);
    let patch = Patch::Merge(json!({"spec": {"unschedulable": true}}));
    let e = nodes.patch("gpu-node-1", &PatchParams::default(), &patch).await.unwrap_err();
    let (code, reason, msg) = api_err(e);
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        msg,
        r#"nodes "gpu-node-1" is forbidden: User "viewer" cannot patch resource "nodes" in API group "" at the cluster scope"#
    );
    let e = Api::<Pod>::namespaced(viewer.clone(), "team-a")
        .evict("debug-shell", &EvictParams::default())
        .await
        .unwrap_err();
    let (code, _, msg) = api_err(e);
    assert_eq!(code, 403);
    assert_eq!(
        msg,
        r#"pods "debug-shell" is forbidden: User "viewer" cannot create resource "pods/eviction" in API group "" in the namespace "team-a""#
    );

    // A custom user: may cordon and evict in team-a, explicitly not in team-b.
    fake.add_user(
        "oncall",
        vec![
            Rule::allow(&["get", "list", "watch"], &["*"], &["*"]),
            Rule::allow(&["patch"], &[""], &["nodes"]),
            Rule::allow(&["create"], &[""], &["pods/eviction"]),
            Rule::deny(&["create"], &[""], &["pods/eviction"]).in_namespaces(&["team-b"]),
        ],
    );
    let oncall = client_as(&fake, "oncall").await;
    assert!(can(&oncall, "patch", "", "nodes", None, None).await);
    assert!(can(&oncall, "create", "", "pods", Some("eviction"), Some("team-a")).await);
    assert!(!can(&oncall, "create", "", "pods", Some("eviction"), Some("team-b")).await);
    assert!(!can(&oncall, "delete", "", "pods", None, Some("team-a")).await);
    Api::<Node>::all(oncall.clone()).patch("gpu-node-1", &PatchParams::default(), &patch).await.unwrap();
    assert_eq!(fake.get("v1", "Node", "", "gpu-node-1").unwrap()["spec"]["unschedulable"], true);
    let e = Api::<Pod>::namespaced(oncall.clone(), "team-b")
        .evict("inference-7f6c9d8b4-r9p2k", &EvictParams::default())
        .await
        .unwrap_err();
    assert_eq!(api_code(&e), 403);
    Api::<Pod>::namespaced(oncall, "team-a").evict("debug-shell", &EvictParams::default()).await.unwrap();

    // Unknown token: 401.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut cfg = kube::Config::new(fake.url().parse().unwrap());
    cfg.default_retry = false;
    cfg.auth_info.token = Some("nope".to_string().into());
    let anon = kube::Client::try_from(cfg).unwrap();
    let e = Api::<Node>::all(anon).list(&ListParams::default()).await.unwrap_err();
    assert_eq!(api_code(&e), 401);
}

#[tokio::test]
async fn patches_dry_run_and_conflicts() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let nodes: Api<Node> = Api::all(client(&fake).await);
    let rv0 = nodes.get("gpu-node-1").await.unwrap().metadata.resource_version.unwrap();
    // Dry run: the answer shows the change, the store does not.
    let dry = PatchParams { dry_run: true, ..Default::default() };
    let n = nodes
        .patch("gpu-node-1", &dry, &Patch::Merge(json!({"spec": {"unschedulable": true}})))
        .await
        .unwrap();
    assert_eq!(n.spec.unwrap().unschedulable, Some(true));
    assert_eq!(nodes.get("gpu-node-1").await.unwrap().metadata.resource_version.unwrap(), rv0);
    // Strategic merge with annotations and a null delete.
    let p = Patch::Strategic(
        json!({"metadata": {"annotations": {"gpuplane.io/cordon-reason": "XID 79"}}, "spec": {"unschedulable": true}}),
    );
    let n = nodes.patch("gpu-node-1", &PatchParams::default(), &p).await.unwrap();
    assert_eq!(n.metadata.annotations.unwrap()["gpuplane.io/cordon-reason"], "XID 79");
    let p = Patch::Strategic(
        json!({"metadata": {"annotations": {"gpuplane.io/cordon-reason": null}}, "spec": {"unschedulable": null}}),
    );
    let n = nodes.patch("gpu-node-1", &PatchParams::default(), &p).await.unwrap();
    assert!(!n.metadata.annotations.unwrap().contains_key("gpuplane.io/cordon-reason"));
    assert_eq!(n.spec.unwrap().unschedulable, None);
    // JSON patch (RFC 6902), sent raw.
    let c = client(&fake).await;
    let req = http::Request::patch("/api/v1/nodes/gpu-node-1")
        .header("Content-Type", "application/json-patch+json")
        .body(
            serde_json::to_vec(&json!([{"op": "add", "path": "/metadata/labels/maint", "value": "yes"}]))
                .unwrap(),
        )
        .unwrap();
    let n: Node = c.request(req).await.unwrap();
    assert_eq!(n.metadata.labels.unwrap()["maint"], "yes");
    // Optimistic concurrency on replace.
    let mut stale = nodes.get("gpu-node-2").await.unwrap();
    let mut fresh = stale.clone();
    fresh.metadata.labels.as_mut().unwrap().insert("a".into(), "1".into());
    nodes.replace("gpu-node-2", &PostParams::default(), &fresh).await.unwrap();
    stale.metadata.labels.as_mut().unwrap().insert("b".into(), "2".into());
    let e = nodes.replace("gpu-node-2", &PostParams::default(), &stale).await.unwrap_err();
    assert_eq!(api_code(&e), 409);
    // Resource versions only go up.
    let rv1: u64 = nodes.get("gpu-node-1").await.unwrap().metadata.resource_version.unwrap().parse().unwrap();
    assert!(rv1 > rv0.parse::<u64>().unwrap());
}

fn cq_resource(version: &str) -> ApiResource {
    ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: version.into(),
        api_version: format!("kueue.x-k8s.io/{version}"),
        kind: "ClusterQueue".into(),
        plural: "clusterqueues".into(),
    }
}

fn lq_resource(version: &str) -> ApiResource {
    ApiResource { kind: "LocalQueue".into(), plural: "localqueues".into(), ..cq_resource(version) }
}

#[tokio::test]
async fn kueue_objects_in_both_versions_with_the_field_renames() {
    let fake = FakeKube::start(Cluster::small_with(KueueMode::Both), Default::default());
    let c = client(&fake).await;
    let v1 = Api::<DynamicObject>::all_with(c.clone(), &cq_resource("v1beta1"));
    let v2 = Api::<DynamicObject>::all_with(c.clone(), &cq_resource("v1beta2"));
    let a = v1.get("research-cq").await.unwrap();
    let b = v2.get("research-cq").await.unwrap();
    assert_eq!(a.data["spec"]["cohort"], "gpu-pool");
    assert!(a.data["spec"].get("cohortName").is_none());
    assert_eq!(b.data["spec"]["cohortName"], "gpu-pool");
    assert!(b.data["spec"].get("cohort").is_none());
    assert_eq!(a.types.unwrap().api_version, "kueue.x-k8s.io/v1beta1");
    assert_eq!(a.metadata.uid, b.metadata.uid);
    // Status counts are consistent with the workloads: 1 admitted, 4 pending.
    assert_eq!(b.data["status"]["admittedWorkloads"], 1);
    assert_eq!(b.data["status"]["pendingWorkloads"], 4);
    assert_eq!(
        b.data["status"]["flavorsUsage"][0]["resources"][2],
        json!({"name": "nvidia.com/gpu", "total": "8", "borrowed": "0"})
    );

    // Written through v1beta1, read through v1beta2.
    v1.patch(
        "research-cq",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"cohort": "other-pool"}})),
    )
    .await
    .unwrap();
    assert_eq!(v2.get("research-cq").await.unwrap().data["spec"]["cohortName"], "other-pool");

    let lq1 = Api::<DynamicObject>::namespaced_with(c.clone(), "team-a", &lq_resource("v1beta1"));
    let lq2 = Api::<DynamicObject>::namespaced_with(c.clone(), "team-a", &lq_resource("v1beta2"));
    let a = lq1.get("research").await.unwrap();
    let b = lq2.get("research").await.unwrap();
    assert!(a.data["status"].get("flavorUsage").is_some() && a.data["status"].get("flavorsUsage").is_none());
    assert!(b.data["status"].get("flavorsUsage").is_some() && b.data["status"].get("flavorUsage").is_none());
    assert_eq!(b.data["status"]["pendingWorkloads"], 3);
    assert_eq!(
        b.data["status"]["flavorsUsage"][0]["resources"],
        json!([{"name": "cpu", "total": "96"}, {"name": "nvidia.com/gpu", "total": "8"}])
    );

    // Workloads list in both; the v1beta1 spelling of the priority class.
    let wl1 = Api::<DynamicObject>::all_with(
        c.clone(),
        &ApiResource { kind: "Workload".into(), plural: "workloads".into(), ..cq_resource("v1beta1") },
    );
    let items = wl1.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(items.len(), 6);
    assert!(
        items.iter().all(|w| w.data["spec"]["priorityClassSource"] == "kueue.x-k8s.io/workloadpriorityclass")
    );
    let pending = items.iter().find(|w| w.metadata.name.as_deref() == Some("job-sweep-a-7c1d2")).unwrap();
    assert_eq!(
        pending.data["status"]["conditions"][0]["message"],
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more needed"
    );

    // Only v1beta1 served: v1beta2 is not found, and discovery says so.
    let old = FakeKube::start(Cluster::small_with(KueueMode::V1beta1), Default::default());
    let c = client(&old).await;
    let e = Api::<DynamicObject>::all_with(c.clone(), &cq_resource("v1beta2"))
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(api_code(&e), 404);
    let group: Value =
        c.request(http::Request::get("/apis/kueue.x-k8s.io").body(Vec::new()).unwrap()).await.unwrap();
    assert_eq!(group["preferredVersion"]["version"], "v1beta1");
    assert_eq!(group["versions"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn visibility_pending_workloads_are_ordered_and_paged() {
    let fake = FakeKube::start(Cluster::small_with(KueueMode::Both), Default::default());
    let c = client(&fake).await;
    let get = |path: &str| {
        let c = c.clone();
        let path = path.to_string();
        async move { c.request::<Value>(http::Request::get(path).body(Vec::new()).unwrap()).await }
    };
    let cq = get("/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/research-cq/pendingworkloads")
        .await
        .unwrap();
    assert_eq!(cq["kind"], "PendingWorkloadsSummary");
    let order: Vec<(String, i64, i64, String)> = cq["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap().to_string(),
                i["positionInClusterQueue"].as_i64().unwrap(),
                i["positionInLocalQueue"].as_i64().unwrap(),
                i["localQueueName"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // Priority 100 first (older first), then priority 0 by creation time.
    assert_eq!(
        order,
        [
            ("job-eval-5d6e7".to_string(), 0, 0, "research".to_string()),
            ("job-hotfix-2b8c3".to_string(), 1, 0, "research-urgent".to_string()),
            ("job-sweep-a-7c1d2".to_string(), 2, 1, "research".to_string()),
            ("job-sweep-b-9e4f1".to_string(), 3, 2, "research".to_string()),
        ]
    );
    assert_eq!(cq["items"][1]["priority"], 100);
    assert_eq!(cq["items"][0]["metadata"]["ownerReferences"][0]["kind"], "Job");
    let lq = get("/apis/visibility.kueue.x-k8s.io/v1beta1/namespaces/team-a/localqueues/research/pendingworkloads?limit=2&offset=1").await.unwrap();
    let got: Vec<(&str, i64)> = lq["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["metadata"]["name"].as_str().unwrap(), i["positionInClusterQueue"].as_i64().unwrap()))
        .collect();
    assert_eq!(got, [("job-sweep-a-7c1d2", 2), ("job-sweep-b-9e4f1", 3)]);
    assert_eq!(lq["apiVersion"], "visibility.kueue.x-k8s.io/v1beta1");

    // Admitting one removes it from the queue.
    fake.admit_workload("team-a", "job-eval-5d6e7", "h100");
    let cq = get("/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/research-cq/pendingworkloads")
        .await
        .unwrap();
    assert_eq!(cq["items"][0]["metadata"]["name"], "job-hotfix-2b8c3");
    let q =
        Api::<DynamicObject>::all_with(c.clone(), &cq_resource("v1beta2")).get("research-cq").await.unwrap();
    assert_eq!(
        (q.data["status"]["admittedWorkloads"].clone(), q.data["status"]["pendingWorkloads"].clone()),
        (json!(2), json!(3))
    );

    // Switched off: 503, like an unavailable APIService.
    fake.set_visibility(false);
    let e = get("/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/research-cq/pendingworkloads")
        .await
        .unwrap_err();
    assert_eq!(api_code(&e), 503);
    fake.set_visibility(true);
    let e =
        get("/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/nope/pendingworkloads").await.unwrap_err();
    assert_eq!(api_code(&e), 404);
}

#[tokio::test]
async fn pod_logs_events_and_jobs() {
    use k8s_openapi::api::core::v1::Event as CoreEvent;
    use k8s_openapi::api::events::v1::Event;
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let c = client(&fake).await;
    let pods: Api<Pod> = Api::namespaced(c.clone(), "team-a");
    let log = pods.logs("train-llm-0-h5t8r", &LogParams::default()).await.unwrap();
    assert_eq!(log, "step 1 loss 4.21\nstep 2 loss 3.98\nstep 3 loss 3.75\n");
    let tail = pods
        .logs("train-llm-0-h5t8r", &LogParams { tail_lines: Some(1), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(tail, "step 3 loss 3.75\n");

    // events.k8s.io/v1 with generateName; seen as a core Event too.
    let events: Api<Event> = Api::namespaced(c.clone(), "default");
    let ev: Event = serde_json::from_value(json!({
        "metadata": {"generateName": "gpu-node-1.gpuplane-"},
        "eventTime": "2026-05-01T12:00:00.000000Z", "reportingController": "gpuplane.io/console",
        "reportingInstance": "gpuplane-test-1", "action": "Drain", "reason": "DrainRequested", "type": "Normal",
        "note": "alice: XID 79 on GPU3, ticket OPS-123",
        "regarding": {"kind": "Node", "apiVersion": "v1", "name": "gpu-node-1"}})).unwrap();
    let made = events.create(&PostParams::default(), &ev).await.unwrap();
    let name = made.metadata.name.clone().unwrap();
    assert!(
        name.starts_with("gpu-node-1.gpuplane-") && name.len() == "gpu-node-1.gpuplane-".len() + 5,
        "{name}"
    );
    let core: Api<CoreEvent> = Api::namespaced(c.clone(), "default");
    let on_node = core
        .list(&ListParams::default().fields("involvedObject.kind=Node,involvedObject.name=gpu-node-1"))
        .await
        .unwrap();
    assert_eq!(on_node.items.len(), 1);
    assert_eq!(on_node.items[0].message.as_deref(), Some("alice: XID 79 on GPU3, ticket OPS-123"));
    let by_regarding = events.list(&ListParams::default().fields("regarding.kind=Node")).await.unwrap();
    assert_eq!(by_regarding.items.len(), 4);
    let mut bad = ev.clone();
    bad.reporting_controller = None;
    let e = events.create(&PostParams::default(), &bad).await.unwrap_err();
    assert_eq!(api_code(&e), 422);

    // A Job pinned to a node starts its pods there; logs come from the handle.
    let jobs: Api<Job> = Api::namespaced(c.clone(), "team-a");
    let job: Job = serde_json::from_value(json!({"metadata": {"name": "gpu-burn"}, "spec": {"completions": 1, "template": {"spec": {
        "nodeName": "gpu-node-2", "restartPolicy": "Never",
        "containers": [{"name": "burn", "image": "gpu-burn:latest", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}})).unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let mine =
        pods.list(&ListParams::default().labels("batch.kubernetes.io/job-name=gpu-burn")).await.unwrap();
    assert_eq!(mine.items.len(), 1);
    let p = &mine.items[0];
    assert_eq!(p.spec.as_ref().unwrap().node_name.as_deref(), Some("gpu-node-2"));
    assert_eq!(p.status.as_ref().unwrap().phase.as_deref(), Some("Running"));
    let pname = p.metadata.name.clone().unwrap();
    assert!(pname.starts_with("gpu-burn-"));
    fake.set_pod_log("team-a", &pname, "burn OK: 8 GPUs\n");
    fake.set_pod_phase("team-a", &pname, "Succeeded");
    assert_eq!(pods.logs(&pname, &LogParams::default()).await.unwrap(), "burn OK: 8 GPUs\n");
    let st = jobs.get("gpu-burn").await.unwrap().status.unwrap();
    assert_eq!((st.succeeded, st.active), (Some(1), Some(0)));
    assert!(st.conditions.unwrap().iter().any(|c| c.type_ == "Complete" && c.status == "True"));
    jobs.delete("gpu-burn", &DeleteParams::background()).await.unwrap();
    assert!(pods.get_opt(&pname).await.unwrap().is_none());
}

fn parsed(c: &Cluster) -> Vec<Value> {
    c.objects.iter().cloned().chain(c.serialized.iter().map(|b| serde_json::from_slice(b).unwrap())).collect()
}

#[test]
fn generator_is_deterministic_and_shaped_like_a_gpu_cluster() {
    let opts = kube_support::GenOpts {
        nodes: 60,
        pods: 900,
        gpu_pods: 300,
        kueue: KueueMode::Both,
        seed: 11,
        ..Default::default()
    };
    let a = parsed(&Cluster::generate(&opts));
    let b = parsed(&Cluster::generate(&opts));
    // Same seed: same objects (timestamps are relative to now, so compare identities).
    let ids = |v: &[Value]| -> Vec<(String, String, String, String)> {
        v.iter()
            .map(|o| {
                (
                    o["kind"].as_str().unwrap().to_string(),
                    o["metadata"]["name"].as_str().unwrap().to_string(),
                    o["metadata"]["uid"].as_str().unwrap_or_default().to_string(),
                    o["spec"]["nodeName"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    };
    let (ia, ib) = (ids(&a), ids(&b));
    let first_diff = ia.iter().zip(&ib).position(|(x, y)| x != y);
    assert!(
        ia.len() == ib.len() && first_diff.is_none(),
        "differ at {first_diff:?}: {:?} vs {:?}",
        first_diff.map(|i| &ia[i]),
        first_diff.map(|i| &ib[i])
    );
    let c = parsed(&Cluster::generate(&kube_support::GenOpts { seed: 12, ..opts.clone() }));
    assert!(ids(&a) != ids(&c), "another seed, another cluster");

    let of = |k: &str| a.iter().filter(|o| o["kind"] == k).collect::<Vec<_>>();
    let (nodes, pods) = (of("Node"), of("Pod"));
    assert_eq!((nodes.len(), pods.len()), (60, 900));
    let gpu_req = |p: &Value| {
        p["spec"]["containers"][0]["resources"]["requests"]
            .as_object()
            .is_some_and(|r| r.keys().any(|k| k == "nvidia.com/gpu" || k.starts_with("nvidia.com/mig-")))
    };
    assert_eq!(pods.iter().filter(|p| gpu_req(p)).count(), 300);
    // GPU requests equal limits.
    for p in pods.iter().filter(|p| gpu_req(p)) {
        let r = &p["spec"]["containers"][0]["resources"];
        assert_eq!(r["requests"]["nvidia.com/gpu"], r["limits"]["nvidia.com/gpu"]);
    }
    let label = |n: &Value, k: &str| n["metadata"]["labels"][k].as_str().map(String::from);
    assert_eq!(nodes.iter().filter(|n| n["spec"]["unschedulable"] == true).count(), 1);
    assert!(nodes.iter().any(|n| n["status"]["conditions"][3]["status"] != "True"));
    assert!(nodes.iter().any(|n| label(n, "nvidia.com/mig.strategy").as_deref() == Some("mixed")));
    assert!(
        nodes.iter().any(|n| label(n, "nvidia.com/gpu.sharing-strategy").as_deref() == Some("time-slicing"))
    );
    assert!(
        nodes.iter().any(
            |n| n["status"]["allocatable"]["nvidia.com/gpu"] != n["status"]["capacity"]["nvidia.com/gpu"]
        )
    );
    assert!(
        nodes.iter().any(|n| label(n, "nvidia.com/gpu.product").as_deref() == Some("NVIDIA-H100-80GB-HBM3"))
    );
    assert!(
        nodes.iter().any(|n| label(n, "nvidia.com/gpu.product").as_deref() == Some("NVIDIA-A100-SXM4-80GB"))
    );
    assert!(nodes.iter().filter(|n| label(n, "nvidia.com/gpu.present").is_some()).all(|n| {
        n["spec"]["taints"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["key"] == "nvidia.com/gpu" && t["value"] == "present" && t["effect"] == "NoSchedule")
    }));
    // Owners of every kind the console groups by, and the drain edge cases.
    let owner_kinds: std::collections::BTreeSet<&str> =
        pods.iter().filter_map(|p| p["metadata"]["ownerReferences"][0]["kind"].as_str()).collect();
    for k in ["DaemonSet", "Job", "PyTorchJob", "MPIJob", "RayCluster", "ReplicaSet", "StatefulSet", "Node"] {
        assert!(owner_kinds.contains(k), "no pod owned by a {k}: {owner_kinds:?}");
    }
    assert!(pods.iter().any(|p| p["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"].is_string()));
    assert!(pods.iter().any(|p| p["metadata"]["ownerReferences"].is_null()));
    assert!(pods.iter().any(|p| p["status"]["phase"] == "Pending" && p["spec"]["nodeName"].is_null()));
    assert!(
        pods.iter()
            .any(|p| p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff")
    );
    let sizes: Vec<usize> = pods.iter().map(|p| serde_json::to_vec(p).unwrap().len()).collect();
    let avg = sizes.iter().sum::<usize>() / sizes.len();
    assert!((3000..=6500).contains(&avg), "average pod JSON {avg} bytes");
    // Namespaces carry the team label; quotas and Kueue objects exist and queues are consistent.
    assert!(of("Namespace").iter().any(|n| n["metadata"]["labels"]["gpuplane.io/team"] == "llm-training"));
    assert_eq!(of("ResourceQuota").len(), 6);
    assert!(!of("PodDisruptionBudget").is_empty() && !of("DaemonSet").is_empty() && !of("Event").is_empty());
    let wls = of("Workload");
    assert!(wls.iter().any(|w| w["status"]["admission"].is_object()));
    assert!(wls.iter().any(|w| w["status"]["conditions"][0]["reason"] == "Pending"));
    assert_eq!(of("ClusterQueue").len(), 6);
}

#[tokio::test]
async fn a_generated_cluster_serves_consistent_kueue_status() {
    let opts = kube_support::GenOpts {
        nodes: 40,
        pods: 400,
        gpu_pods: 200,
        kueue: KueueMode::V1beta2,
        seed: 3,
        ..Default::default()
    };
    let fake = FakeKube::start(Cluster::generate(&opts), Default::default());
    let c = client(&fake).await;
    let wl = Api::<DynamicObject>::all_with(
        c.clone(),
        &ApiResource { kind: "Workload".into(), plural: "workloads".into(), ..cq_resource("v1beta2") },
    );
    let wls = wl.list(&ListParams::default()).await.unwrap().items;
    let cqs = Api::<DynamicObject>::all_with(c.clone(), &cq_resource("v1beta2"))
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    let pending: i64 = cqs.iter().map(|q| q.data["status"]["pendingWorkloads"].as_i64().unwrap()).sum();
    let admitted: i64 = cqs.iter().map(|q| q.data["status"]["admittedWorkloads"].as_i64().unwrap()).sum();
    assert_eq!((pending + admitted) as usize, wls.len());
    assert_eq!(admitted as usize, wls.iter().filter(|w| w.data["status"]["admission"].is_object()).count());
    // The visibility API agrees with the counts.
    for q in &cqs {
        let name = q.metadata.name.clone().unwrap();
        let path = format!("/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{name}/pendingworkloads");
        let v: Value = c.request(http::Request::get(path).body(Vec::new()).unwrap()).await.unwrap();
        assert_eq!(
            v["items"].as_array().unwrap().len() as i64,
            q.data["status"]["pendingWorkloads"].as_i64().unwrap()
        );
    }
}

#[tokio::test]
async fn watches_follow_selectors_graceful_deletes_and_bookmarks() {
    let opts = kube_support::Opts { bookmark_interval: Duration::from_millis(100), ..Default::default() };
    let fake = FakeKube::start(Cluster::small(), opts);
    let c = client(&fake).await;
    let pods: Api<Pod> = Api::namespaced(c.clone(), "team-b");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let w = watcher(pods.clone(), watcher::Config::default().labels("app=inference"));
    let task = tokio::spawn(async move {
        let mut s = w.boxed();
        while let Some(ev) = s.next().await {
            let _ = tx.send(ev.expect("watch event"));
        }
    });
    let mut initial = 0;
    loop {
        match rx.recv().await.unwrap() {
            watcher::Event::InitApply(_) => initial += 1,
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(initial, 2);
    let mut next = async || loop {
        match rx.recv().await.unwrap() {
            watcher::Event::Apply(p) => {
                return format!(
                    "apply {} {}",
                    p.metadata.name.unwrap(),
                    p.metadata.deletion_timestamp.is_some()
                );
            }
            watcher::Event::Delete(p) => return format!("delete {}", p.metadata.name.unwrap()),
            _ => {}
        }
    };
    // Relabelled out of the selector: DELETED; back in: ADDED.
    fake.patch(
        "v1",
        "Pod",
        "team-b",
        "inference-7f6c9d8b4-r9p2k",
        json!({"metadata": {"labels": {"app": "canary"}}}),
    );
    assert_eq!(next().await, "delete inference-7f6c9d8b4-r9p2k");
    fake.patch(
        "v1",
        "Pod",
        "team-b",
        "inference-7f6c9d8b4-r9p2k",
        json!({"metadata": {"labels": {"app": "inference"}}}),
    );
    assert_eq!(next().await, "apply inference-7f6c9d8b4-r9p2k false");
    // Graceful delete: terminating first, then gone.
    pods.delete(
        "inference-7f6c9d8b4-t3v7m",
        &DeleteParams { grace_period_seconds: Some(1), ..Default::default() },
    )
    .await
    .unwrap();
    assert_eq!(next().await, "apply inference-7f6c9d8b4-t3v7m true");
    assert_eq!(next().await, "delete inference-7f6c9d8b4-t3v7m");
    task.abort();

    // Raw stream: bookmarks arrive when allowed, and the stream ends at timeoutSeconds.
    let rv = fake.resource_version();
    let body = reqwest_like_get(
        &fake,
        &format!("/api/v1/pods?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=1"),
    )
    .await;
    let lines: Vec<Value> = body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!lines.is_empty() && lines.iter().all(|l| l["type"] == "BOOKMARK"), "{body}");
    assert_eq!(lines[0]["object"]["kind"], "Pod");
    assert_eq!(lines[0]["object"]["metadata"]["resourceVersion"], rv.to_string());
    // Without bookmarks: nothing but the end of the stream.
    let body =
        reqwest_like_get(&fake, &format!("/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=1"))
            .await;
    assert_eq!(body, "");
}
