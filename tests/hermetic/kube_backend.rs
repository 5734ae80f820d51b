//! The Kubernetes backend (real kube-rs client) against the in-repo fake API server: the model
//! matches the server's objects, watch events reach the state, a dropped watch and a 410
//! relist lose nothing, drain evicts what kubectl would and waits on a PodDisruptionBudget,
//! a forbidden SelfSubjectAccessReview disables actions with the server's reason, and Kueue
//! queue positions come from the visibility API (or priority order without it).

use crate::common;

use crate::kube_support::{Cluster, FakeKube, Handle, KueueMode, Opts, Rule};
use gpuplane::backend::kube::{KubeConfig, Shared};
use gpuplane::model::protocol::Update;
use gpuplane::model::{JobState, NodeState};
use gpuplane::ops::{self, ActionError, ActionKind, Executor, KubeExecutor, OpRequest, Ops};
use gpuplane::state::ClusterState;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn init() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The viewer as a real cluster would have it: read-only RBAC plus what every authenticated
/// user may do (system:basic-user: ask what it may do).
fn real_viewer(fake: &Handle) {
    fake.set_user_rules(
        "viewer",
        vec![
            Rule::allow(&["get", "list", "watch"], &["*"], &["*"]),
            Rule::allow(&["create"], &["authorization.k8s.io"], &["selfsubjectaccessreviews"]),
        ],
    );
}

fn config(fake: &Handle, context: &str) -> KubeConfig {
    KubeConfig {
        kubeconfig: Some(fake.kubeconfig_path().to_path_buf()),
        context: Some(context.into()),
        coalesce: Duration::from_millis(50),
        positions_every: Duration::from_millis(300),
        drain_timeout: Duration::from_secs(20),
        ..Default::default()
    }
}

/// The backend running against the fake, with the state it feeds.
struct Live {
    state: ClusterState,
    rx: mpsc::Receiver<Update>,
    shared: Shared,
    ctx_tx: mpsc::UnboundedSender<String>,
    cancel: CancellationToken,
    cfg: KubeConfig,
}

impl Live {
    fn start(cfg: KubeConfig) -> Live {
        let shared = Shared::default();
        let (tx, rx) = mpsc::channel(256);
        let (ctx_tx, ctx_rx) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        tokio::spawn(gpuplane::backend::kube::run(cfg.clone(), shared.clone(), tx, ctx_rx, cancel.clone()));
        Live {
            state: ClusterState::new(Default::default(), Default::default()),
            rx,
            shared,
            ctx_tx,
            cancel,
            cfg,
        }
    }

    /// Applies updates until `pred` holds (20 s at most).
    async fn until(&mut self, what: &str, pred: impl Fn(&ClusterState) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !pred(&self.state) {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.rx.recv()).await {
                Ok(Some(u)) => {
                    self.state.apply(u);
                }
                _ => panic!(
                    "timed out waiting for {what}; sources: {:?}; nodes: {:?}",
                    self.state.sources,
                    self.state.nodes.iter().map(|n| (&n.name, n.state)).collect::<Vec<_>>()
                ),
            }
        }
    }

    async fn synced(&mut self) {
        self.until("the first complete listing", |s| !s.nodes.is_empty() && !s.jobs.is_empty()).await;
    }

    fn executor(&self) -> KubeExecutor {
        let mut e = KubeExecutor::new(self.shared.clone(), self.cfg.clone());
        e.evict_retry = Duration::from_millis(200);
        e.poll = Duration::from_millis(100);
        e
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// The backend on `context` of a running fake, after its first complete listing.
async fn synced(fake: &Handle, context: &str) -> Live {
    let mut live = Live::start(config(fake, context));
    live.synced().await;
    live
}

/// Plans and runs one action through the audited road.
async fn run_op(ops: &Ops, r: &OpRequest, live: &Live, exec: &mut KubeExecutor) -> ops::Outcome {
    let plan = ops::plan(r, &live.state, &*exec.planner(), false).expect("plan");
    ops.run(r, &plan, exec, |_| {}).await.expect("run")
}

fn node<'a>(s: &'a ClusterState, name: &str) -> &'a gpuplane::model::Node {
    s.node(name).unwrap_or_else(|| panic!("node {name} missing"))
}

fn job<'a>(s: &'a ClusterState, name: &str) -> &'a gpuplane::model::Job {
    s.jobs.iter().find(|j| j.name == name).unwrap_or_else(|| panic!("job {name} missing"))
}

fn ops_for(dir: &std::path::Path) -> Ops {
    Ops {
        audit: gpuplane::audit::AuditLog::new(dir.join("audit.jsonl")),
        readonly: false,
        cluster: "fake".into(),
        break_glass: None,
    }
}

fn req(kind: ActionKind, target: &str) -> OpRequest {
    OpRequest {
        kind,
        targets: vec![target.into()],
        reason: "test: maintenance".into(),
        ticket: Some("OPS-1".into()),
        dry_run: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_matches_the_fake_servers_objects() {
    init();
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    let mut live = synced(&fake, "fake-admin").await;
    live.until("the quotas and the teams", |s| {
        s.quotas.len() >= 2 && s.jobs.iter().any(|j| j.name == "llm-pretrain" && j.account == "research")
    })
    .await;
    let s = &live.state;
    // Every node the server has, and nothing else.
    let mut names: Vec<String> =
        fake.list("v1", "Node").iter().map(|n| n["metadata"]["name"].as_str().unwrap().to_string()).collect();
    names.sort();
    let mut got: Vec<String> = s.nodes.iter().map(|n| n.name.to_string()).collect();
    got.sort();
    assert_eq!(got, names);
    assert_eq!(s.cluster, "fake-admin");
    let g1 = node(s, "gpu-node-1");
    assert_eq!((g1.gpu_slots, g1.gpu_alloc, g1.state), (8, 8, NodeState::Allocated));
    assert_eq!(g1.pool, "h100");
    assert!(g1.gpus[0].model.contains("H100"));
    let g2 = node(s, "gpu-node-2");
    assert_eq!((g2.gpu_alloc, g2.state), (2, NodeState::Mixed));
    assert!(g2.reason.as_ref().unwrap().text.contains("1 GPU(s) unhealthy"), "{:?}", g2.reason);
    let g3 = node(s, "gpu-node-3");
    assert_eq!(g3.state, NodeState::Cordoned);
    assert_eq!(g3.gpus.iter().map(|g| g.mig.len()).sum::<usize>(), 16, "MIG slices of the mixed node");
    assert_eq!(node(s, "gpu-node-4").state, NodeState::Down);
    assert_eq!(node(s, "cpu-node-1").gpu_slots, 0);
    // Pods grouped by owner: the JobSet, the Deployment, the bare pending pod.
    let llm = job(s, "llm-pretrain");
    assert_eq!((llm.state, llm.gpus, llm.account.as_str()), (JobState::Running, 8, "research"));
    assert_eq!(llm.nodes.len(), 1);
    let inf = job(s, "inference");
    assert_eq!((inf.state, inf.gpus, inf.account.as_str()), (JobState::Running, 2, "serving"));
    let pend = job(s, "train-pending");
    assert_eq!((pend.state, pend.gpus), (JobState::Pending, 8));
    assert_eq!(
        s.jobs.len(),
        3,
        "pods without GPUs are not jobs: {:?}",
        s.jobs.iter().map(|j| &j.name).collect::<Vec<_>>()
    );
    // ResourceQuotas per team.
    let q: Vec<(String, u32, u32)> =
        s.quotas.iter().map(|q| (q.team.to_string(), q.gpu_quota, q.gpu_used)).collect();
    assert!(q.contains(&("research".into(), 16, 8)), "{q:?}");
    assert!(q.contains(&("serving".into(), 8, 2)), "{q:?}");
    // GPU pods are named by UID, for the owners of GPU processes NVML reports.
    let uid = fake.get("v1", "Pod", "team-a", "train-llm-0-h5t8r").unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    live.until("pod names", |s| !s.pod_names.is_empty()).await;
    assert_eq!(live.state.pod_names.get(uid.as_str()).map(|n| n.as_str()), Some("team-a/train-llm-0-h5t8r"));
    // Watches, not polls: nothing was fetched per node or per pod.
    let per_object = fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && (r.path.starts_with("/api/v1/nodes/") || r.path.contains("/pods/")))
        .count();
    assert_eq!(per_object, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_events_reach_the_state() {
    init();
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    let mut live = synced(&fake, "fake-admin").await;
    fake.set_node_ready("gpu-node-1", false);
    live.until("gpu-node-1 down", |s| s.node("gpu-node-1").is_some_and(|n| n.state == NodeState::Down)).await;
    fake.schedule_pod("team-a", "train-pending", "gpu-node-2");
    fake.set_pod_phase("team-a", "train-pending", "Running");
    live.until("the pending pod running on gpu-node-2", |s| {
        s.jobs.iter().any(|j| j.name == "train-pending" && j.state == JobState::Running)
            && s.node("gpu-node-2").is_some_and(|n| n.gpu_alloc == 8)
    })
    .await;
    fake.delete("v1", "Pod", "team-b", "inference-7f6c9d8b4-r9p2k");
    live.until("one inference pod left", |s| s.jobs.iter().any(|j| j.name == "inference" && j.gpus == 1))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_watch_and_a_410_relist_lose_no_objects() {
    init();
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    let mut live = synced(&fake, "fake-admin").await;
    let mut relisted = false;
    for round in 0..10 {
        let lists_before = list_requests(&fake);
        // Changes while the watches are down, then the history they would resume from is gone.
        fake.drop_watches();
        let mut n = fake.get("v1", "Node", "", "gpu-node-1").unwrap();
        let name = format!("gpu-node-new-{round}");
        n["metadata"]["name"] = serde_json::json!(name);
        n["metadata"].as_object_mut().unwrap().remove("uid");
        n["metadata"].as_object_mut().unwrap().remove("resourceVersion");
        fake.upsert(n).unwrap();
        if round == 0 {
            fake.delete("v1", "Pod", "team-b", "inference-7f6c9d8b4-t3v7m");
        }
        fake.compact();
        live.until("the new node", |s| s.node(&name).is_some()).await;
        live.until("the deleted pod gone", |s| s.jobs.iter().any(|j| j.name == "inference" && j.gpus == 1))
            .await;
        if list_requests(&fake) > lists_before {
            relisted = true;
            break;
        }
    }
    assert!(relisted, "no relist after compaction (410 Gone) in 10 rounds");
    // The store equals the server, object for object.
    let mut want: Vec<String> =
        fake.list("v1", "Node").iter().map(|n| n["metadata"]["name"].as_str().unwrap().to_string()).collect();
    want.sort();
    let mut got: Vec<String> = live.state.nodes.iter().map(|n| n.name.to_string()).collect();
    got.sort();
    assert_eq!(got, want);
}

/// Every re-watch answered 410 Gone, round after round, in both forms the API sends it (an
/// ERROR event in the watch, and the watch request's own status): each time the source lists
/// again, says meanwhile that it is stale and why (the watch history compacted: listing again),
/// and afterwards holds exactly the server's objects, the ones changed while it was away
/// included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rewatch_answered_410_relists_shows_the_source_stale_and_loses_nothing() {
    init();
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    let mut live = synced(&fake, "fake-admin").await;
    for round in 0..6 {
        fake.expire_watches_with_status(round % 2 == 1);
        // Lists of every kind: the watch answered 410 may be any kind's (a node watch that
        // re-watched before the compaction resumes without one, the pods' does not).
        let (expired, lists) = (fake.expired_watches(), all_list_requests(&fake));
        // The console is between watches while the cluster changes and the history is
        // compacted: every re-watch from the resourceVersion it had is answered 410.
        fake.pause_watches();
        fake.drop_watches();
        let mut n = fake.get("v1", "Node", "", "gpu-node-1").unwrap();
        let name = format!("gpu-node-new-{round}");
        n["metadata"]["name"] = serde_json::json!(name);
        n["metadata"].as_object_mut().unwrap().remove("uid");
        n["metadata"].as_object_mut().unwrap().remove("resourceVersion");
        fake.upsert(n).unwrap();
        if round > 0 {
            fake.delete("v1", "Node", "", &format!("gpu-node-new-{}", round - 1));
        }
        fake.compact();
        fake.resume_watches();
        let mut stale = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let u = tokio::time::timeout(deadline.saturating_duration_since(Instant::now()), live.rx.recv())
                .await
                .unwrap_or_else(|_| panic!("round {round}: no recovery; stale: {stale:?}"))
                .expect("backend running");
            if let Update::Status(s) = &u
                && let Some(e) = &s.error
            {
                stale.push(e.clone());
            }
            live.state.apply(u);
            let kube = live.state.sources.iter().find(|s| s.name == "kube").expect("kube source");
            // Recovered once the relist is under way too: the error may clear (another kind's
            // watch answering) before the 410'd kind's list goes out, under load.
            if kube.error.is_none()
                && live.state.node(&name).is_some()
                && (round == 0 || live.state.node(&format!("gpu-node-new-{}", round - 1)).is_none())
                && all_list_requests(&fake) > lists
            {
                break;
            }
        }
        assert!(fake.expired_watches() > expired, "round {round}: no watch was answered 410");
        assert!(all_list_requests(&fake) > lists, "round {round}: no list after the 410");
        assert!(
            stale.iter().any(|e| e.contains("410") && e.contains("listing again")),
            "round {round}: the source was not shown stale for the 410: {stale:?}"
        );
        // Exactly the server's nodes.
        let mut want: Vec<String> = fake
            .list("v1", "Node")
            .iter()
            .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        want.sort();
        let mut got: Vec<String> = live.state.nodes.iter().map(|n| n.name.to_string()).collect();
        got.sort();
        assert_eq!(got, want, "round {round}");
    }
}

/// Every list request (no `watch=`) of a kind the backend watches.
fn all_list_requests(fake: &Handle) -> usize {
    const WATCHED: &[&str] = &[
        "nodes",
        "pods",
        "namespaces",
        "resourcequotas",
        "events",
        "clusterqueues",
        "localqueues",
        "workloads",
    ];
    fake.requests()
        .iter()
        .filter(|r| r.method == "GET" && !r.query.contains("watch="))
        .filter(|r| r.path.rsplit('/').next().is_some_and(|k| WATCHED.contains(&k)))
        .count()
}

fn list_requests(fake: &Handle) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.method == "GET" && !r.query.contains("watch=") && r.path.ends_with("/nodes"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cordon_and_uncordon_record_who_and_why_and_an_event() {
    init();
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    let mut live = synced(&fake, "fake-admin").await;
    let dir = tempfile::tempdir().unwrap();
    let ops = ops_for(dir.path());
    let mut exec = live.executor();
    let r = req(ActionKind::Cordon, "gpu-node-1");
    let plan = ops::plan(&r, &live.state, &*exec.planner(), false).expect("plan");
    assert!(plan.steps[0].call.contains("PATCH /api/v1/nodes/gpu-node-1"));
    let out = ops.run(&r, &plan, &mut exec, |_| {}).await.expect("run");
    assert!(out.results[0].ok, "{:?}", out.results);
    let n = fake.get("v1", "Node", "", "gpu-node-1").unwrap();
    assert_eq!(n["spec"]["unschedulable"], true);
    assert_eq!(n["metadata"]["annotations"]["gpuplane.io/reason"], "test: maintenance");
    live.until("gpu-node-1 cordoned with the reason", |s| {
        s.node("gpu-node-1").is_some_and(|n| {
            n.state == NodeState::Cordoned && n.reason.as_ref().is_some_and(|r| r.text == "test: maintenance")
        })
    })
    .await;
    let events = fake.list("events.k8s.io/v1", "Event");
    assert!(
        events
            .iter()
            .any(|e| (e["regarding"]["name"] == "gpu-node-1" || e["involvedObject"]["name"] == "gpu-node-1")
                && e["action"] == "Cordon"),
        "no Event on the node: {events:#?}"
    );
    let r = req(ActionKind::Uncordon, "gpu-node-1");
    let out = run_op(&ops, &r, &live, &mut exec).await;
    assert!(out.results[0].ok, "{:?}", out.results);
    let n = fake.get("v1", "Node", "", "gpu-node-1").unwrap();
    assert!(n["spec"]["unschedulable"].is_null() || n["spec"]["unschedulable"] == false);
    assert!(n["metadata"]["annotations"].get("gpuplane.io/reason").is_none());
    // The audit log holds intent and outcome of both, and the chain verifies.
    let text = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    assert_eq!(text.lines().count(), 4);
    assert!(text.contains("kube:admin@fake-admin"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_evicts_what_kubectl_would_and_waits_on_a_pdb() {
    init();
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    let mut live = synced(&fake, "fake-admin").await;
    let dir = tempfile::tempdir().unwrap();
    let ops = ops_for(dir.path());
    // gpu-node-2: two inference pods behind a PDB that allows no disruption, and a DaemonSet pod.
    let before = fake.pods_on("gpu-node-2");
    assert!(before.iter().any(|p| p.starts_with("kube-system/nvidia-device-plugin")));
    // GPU pods mount a memory-backed emptyDir (/dev/shm): like `kubectl drain
    // --delete-emptydir-data`, that has to be allowed.
    let r = req(ActionKind::Drain, "gpu-node-2");
    let plan = ops::plan(&r, &live.state, &*live.executor().planner(), false).expect("plan");
    assert_eq!(plan.affected_gpus(), 2);
    live.cfg.drain_delete_emptydir = true;
    let mut exec = live.executor();
    live.cfg.drain_delete_emptydir = false;
    // Per-pod progress is reported while the drain runs, not only in the final result.
    let notes = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = notes.clone();
    exec.notes(Some(std::sync::Arc::new(move |t: &str, m: &str| {
        sink.lock().unwrap().push(format!("{t}: {m}"));
    })));
    let seen = |what: &str| notes.lock().unwrap().iter().any(|n| n.contains(what));
    let run = tokio::spawn(async move {
        let out = ops.run(&r, &plan, &mut exec, |_| {}).await;
        (out, ops)
    });
    // The budget refuses (429) until it is relaxed.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !fake.requests().iter().any(|r| r.path.ends_with("/eviction") && r.status == 429) {
        if run.is_finished() {
            let (out, _) = run.await.unwrap();
            panic!("drain ended before the PDB was relaxed: {out:?}; requests: {:#?}", fake.requests());
        }
        assert!(Instant::now() < deadline, "no eviction was refused by the PDB");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!run.is_finished(), "drain must wait while the PDB refuses");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen("a PodDisruptionBudget refuses (try 1)") {
        assert!(Instant::now() < deadline, "no per-pod progress while waiting: {:?}", notes.lock().unwrap());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(seen("gpu-node-2: cordoned; evicting 2 pod(s), skipping 1"), "{:?}", notes.lock().unwrap());
    assert!(!seen("evicted and gone"), "{:?}", notes.lock().unwrap());
    fake.set_pdb("team-b", "inference-pdb", Some(serde_json::json!(0)), None);
    let (out, _ops) =
        tokio::time::timeout(Duration::from_secs(20), run).await.expect("drain finished").unwrap();
    let out = out.expect("run");
    assert!(out.results[0].ok, "{:?}", out.results);
    assert!(out.results[0].message.contains("waited on PodDisruptionBudgets"), "{}", out.results[0].message);
    let gone: Vec<String> =
        notes.lock().unwrap().iter().filter(|n| n.ends_with("evicted and gone")).cloned().collect();
    assert_eq!(gone.len(), 2, "one line per evicted pod: {:?}", notes.lock().unwrap());
    assert!(gone.iter().all(|n| n.starts_with("gpu-node-2: team-b/")), "{gone:?}");
    let after = fake.pods_on("gpu-node-2");
    assert_eq!(
        after,
        before.iter().filter(|p| p.starts_with("kube-system/")).cloned().collect::<Vec<_>>(),
        "only the DaemonSet pod stays"
    );
    assert_eq!(fake.get("v1", "Node", "", "gpu-node-2").unwrap()["spec"]["unschedulable"], true);

    // gpu-node-1 has a pod with emptyDir data and a bare pod: drain refuses and evicts nothing.
    let before = fake.pods_on("gpu-node-1");
    let ops = ops_for(dir.path());
    let r = req(ActionKind::Drain, "gpu-node-1");
    let plan = ops::plan(&r, &live.state, &*live.executor().planner(), false).expect("plan");
    let mut exec = live.executor();
    let out = ops.run(&r, &plan, &mut exec, |_| {}).await.expect("run");
    assert!(!out.results[0].ok);
    let msg = &out.results[0].message;
    assert!(msg.contains("team-a/cache-warmer-6d9f8b7c5-qk2xv has local storage"), "{msg}");
    assert!(msg.contains("team-a/debug-shell declares no controller"), "{msg}");
    assert_eq!(fake.pods_on("gpu-node-1"), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_access_review_disables_actions_with_the_reason() {
    init();
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    real_viewer(&fake);
    let live = synced(&fake, "fake-viewer").await;
    let exec = live.executor();
    let why = exec.planner().supports(ActionKind::Cordon, false).expect_err("viewer may not cordon");
    assert!(matches!(why, ActionError::Forbidden { .. }), "{why:?}");
    assert!(why.to_string().contains("may not patch nodes"), "{why}");
    let err = ops::plan(&req(ActionKind::Drain, "gpu-node-1"), &live.state, &*exec.planner(), false)
        .expect_err("refused");
    assert!(err.to_string().contains("may not patch nodes"), "{err}");
    assert!(fake.requests().iter().all(|r| r.method != "PATCH" && !r.path.ends_with("/eviction")));
    // The same user with the right granted: the action is offered.
    fake.set_user_rules("viewer", vec![Rule::allow(&["*"], &["*"], &["*"])]);
    live.ctx_tx.send("fake-viewer".into()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while exec.planner().supports(ActionKind::Cordon, false).is_err() {
        assert!(Instant::now() < deadline, "permissions were not asked again after reconnecting");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_context_and_context_switch() {
    init();
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    real_viewer(&fake);
    let mut cfg = config(&fake, "fake-admin");
    cfg.readonly_contexts = vec!["fake-admin".into()];
    let mut live = Live::start(cfg);
    live.synced().await;
    let exec = live.executor();
    assert!(
        exec.planner().supports(ActionKind::Cordon, false).unwrap_err().to_string().contains("read-only")
    );
    live.ctx_tx.send("fake-viewer".into()).unwrap();
    live.until("the viewer context", |s| s.cluster == "fake-viewer").await;
    let why = exec.planner().supports(ActionKind::Cordon, false).unwrap_err().to_string();
    assert!(why.contains("may not patch nodes"), "{why}");
    assert!(exec.identity().unwrap().contains("viewer@fake-viewer"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_deletes_the_owning_job() {
    init();
    let fake = FakeKube::start(Cluster::small_with(KueueMode::V1beta2), Opts::default());
    let mut live = synced(&fake, "fake-admin").await;
    live.until("the sweep-a workload", |s| s.jobs.iter().any(|j| j.name == "sweep-a")).await;
    let id = job(&live.state, "sweep-a").id;
    // Kueue holds the Job suspended while its workload waits.
    fake.upsert(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "sweep-a", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "research"}},
        "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "x"}]}}}}))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ops = ops_for(dir.path());
    let mut exec = live.executor();
    let r = req(ActionKind::Cancel, &id.to_string());
    let plan = ops::plan(&r, &live.state, &*exec.planner(), false).expect("plan");
    assert!(plan.steps[0].call.contains("DELETE Job team-a/sweep-a"), "{}", plan.steps[0].call);
    // The owner object must exist for the delete to succeed.
    let out = ops.run(&r, &plan, &mut exec, |_| {}).await.expect("run");
    let have_job = fake.get("batch/v1", "Job", "team-a", "sweep-a");
    assert!(out.results[0].ok, "{:?} (job object was {have_job:?})", out.results);
    assert!(fake.get("batch/v1", "Job", "team-a", "sweep-a").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kueue_queues_quotas_and_positions_from_the_visibility_api() {
    init();
    for mode in [KueueMode::V1beta2, KueueMode::V1beta1] {
        let fake = FakeKube::start(Cluster::small_with(mode), Opts::default());
        let mut live = Live::start(config(&fake, "fake-admin"));
        live.until("kueue workloads with positions", |s| {
            s.jobs.iter().any(|j| j.name == "sweep-a" && j.position.is_some())
        })
        .await;
        let s = &live.state;
        assert!(s.queues.iter().any(|q| q.name == "research-cq"), "{mode:?}");
        assert!(
            s.queues
                .iter()
                .any(|q| q.name == "team-a/research" && q.parent.as_deref() == Some("research-cq"))
        );
        let cq = s.quotas.iter().find(|q| q.team == "research-cq").expect("CQ quota");
        assert_eq!((cq.gpu_quota, cq.lendable), (16, 4), "{mode:?}");
        // Visibility order: priority first (hotfix, eval: 100), then age (sweep-a before sweep-b).
        let pos = |n: &str| job(s, n).rank.or(job(s, n).position).unwrap();
        assert!(pos("hotfix") < pos("sweep-a") && pos("eval") < pos("sweep-a"), "{mode:?}");
        assert!(pos("sweep-a") < pos("sweep-b"), "{mode:?}");
        let sweep = job(s, "sweep-a");
        assert_eq!((sweep.state, sweep.queue.as_str(), sweep.gpus), (JobState::Pending, "research-cq", 8));
        assert!(sweep.pending_reason.as_deref().unwrap().contains("insufficient unused quota"));
        // The workload of the running JobSet joins its pods.
        assert_eq!(job(s, "llm-pretrain").queue, "research-cq");
        // Visibility off: positions come from priority order instead, the same order.
        fake.set_visibility(false);
        live.until("positions without the visibility API", |s| {
            s.jobs.iter().filter(|j| j.state == JobState::Pending).all(|j| j.position.is_none())
        })
        .await;
        let s = &live.state;
        let rank = |n: &str| job(s, n).rank.unwrap();
        assert!(rank("hotfix") < rank("sweep-a") && rank("sweep-a") < rank("sweep-b"), "{mode:?}");
        // A workload admitted by Kueue changes state on screen.
        fake.admit_workload("team-a", "job-sweep-b-9e4f1", "h100");
        live.until("sweep-b admitted", |s| {
            s.jobs.iter().any(|j| {
                j.name == "sweep-b" && j.pending_reason.as_deref().is_some_and(|r| r.contains("admitted"))
            })
        })
        .await;
    }
}

#[test]
fn subcommands_read_and_act_on_a_kubernetes_context() {
    init();
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    let home = tempfile::tempdir().unwrap();
    let kc = fake.kubeconfig_path().display().to_string();
    let out = common::gpuplane_cmd(home.path())
        .args(["get", "nodes", "-o", "json", "--kubeconfig", &kc, "--context", "fake-admin"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v.as_array().unwrap().iter().filter_map(|n| n["name"].as_str()).collect();
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(names.contains(&"gpu-node-3"));
    let out = common::gpuplane_cmd(home.path())
        .args(["cordon", "gpu-node-1", "--reason", "bad NVLink", "--ticket", "OPS-9", "--yes"])
        .args(["--kubeconfig", &kc])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("PATCH /api/v1/nodes/gpu-node-1"), "{text}");
    let n = fake.get("v1", "Node", "", "gpu-node-1").unwrap();
    assert_eq!(n["spec"]["unschedulable"], true);
    assert_eq!(n["metadata"]["annotations"]["gpuplane.io/reason"], "bad NVLink");
    let audit = common::gpuplane_cmd(home.path()).args(["audit", "verify"]).output().unwrap();
    assert!(audit.status.success(), "{}", String::from_utf8_lossy(&audit.stdout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_fail_closed_when_the_audit_log_cannot_be_written() {
    init();
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    let live = synced(&fake, "fake-admin").await;
    let dir = tempfile::tempdir().unwrap();
    // The audit "file" is a directory: the intent record cannot be written.
    let ops = Ops {
        audit: gpuplane::audit::AuditLog::new(dir.path().to_path_buf()),
        readonly: false,
        cluster: "fake".into(),
        break_glass: None,
    };
    fake.clear_requests();
    let mut exec = live.executor();
    let r = req(ActionKind::Drain, "gpu-node-2");
    let plan = ops::plan(&r, &live.state, &*exec.planner(), false).expect("plan");
    let err = ops.run(&r, &plan, &mut exec, |_| {}).await.expect_err("refused");
    assert!(err.to_string().contains("nothing was sent"), "{err}");
    let writes: Vec<_> = fake.requests().into_iter().filter(|r| r.method != "GET").collect();
    assert!(writes.is_empty(), "requests were sent: {writes:?}");
    assert_ne!(fake.get("v1", "Node", "", "gpu-node-2").unwrap()["spec"]["unschedulable"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_scoped_identity_sees_its_namespace() {
    init();
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    // May read nodes cluster-wide, but pods and quotas only in team-b.
    fake.set_user_rules(
        "viewer",
        vec![
            Rule::allow(&["get", "list", "watch"], &[""], &["nodes", "events"]),
            Rule::allow(&["get", "list", "watch"], &[""], &["pods", "resourcequotas"])
                .in_namespaces(&["team-b"]),
            Rule::allow(&["create"], &["authorization.k8s.io"], &["selfsubjectaccessreviews"]),
        ],
    );
    let mut cfg = config(&fake, "fake-viewer");
    cfg.namespace = Some("team-b".into());
    let mut live = Live::start(cfg);
    live.synced().await;
    live.until("team-b's quota", |s| !s.quotas.is_empty()).await;
    let names: Vec<&str> = live.state.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, vec!["inference"]);
    assert_eq!(live.state.quotas.len(), 1);
    assert!(live.state.sources.iter().all(|s| s.error.is_none()), "{:?}", live.state.sources);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acceptance_runs_as_a_job_pinned_to_the_node_and_its_log_is_judged() {
    use gpuplane::acceptance::launch::{Origin, record, track};
    use gpuplane::acceptance::{JudgeConfig, Mode, Template, Verdict};
    init();
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    let live = synced(&fake, "fake-admin").await;
    let template = Template { image: Some("ghcr.io/acme/nccl-tests:2.13".into()), ..Default::default() };
    let mut exec = live.executor().with_acceptance(template, "default".into());
    // Across nodes needs MPI: refused with the reason, nothing created.
    let pairs = OpRequest { kind: ActionKind::Acceptance(Mode::Pairs), ..req(ActionKind::Cordon, "x") };
    let pairs = OpRequest { targets: vec!["gpu-node-1".into(), "gpu-node-2".into()], ..pairs };
    let err = ops::plan(&pairs, &live.state, &*exec.planner(), false).expect_err("pairs refused");
    assert!(err.to_string().contains("MPIJob"), "{err}");
    let r =
        OpRequest { kind: ActionKind::Acceptance(Mode::PerNode), ..req(ActionKind::Cordon, "gpu-node-1") };
    let plan = ops::plan(&r, &live.state, &*exec.planner(), false).expect("plan");
    assert!(plan.steps[0].call.contains("nodeName=gpu-node-1"), "{}", plan.steps[0].call);
    let dir = tempfile::tempdir().unwrap();
    let ops = ops_for(dir.path());
    let out = ops.run(&r, &plan, &mut exec, |_| {}).await.expect("run");
    assert!(out.results[0].ok, "{:?}", out.results);
    let (job, sub) = out.submitted[0].clone();
    let (ns, name) = sub.job_id.split_once('/').unwrap();
    let created = fake.get("batch/v1", "Job", ns, name).expect("the Job exists");
    let pod_spec = &created["spec"]["template"]["spec"];
    assert_eq!(pod_spec["nodeName"], "gpu-node-1");
    assert_eq!(pod_spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "8");
    // The fake's job controller started the pod on the node; it prints the sample and ends.
    let sample = include_str!("../fixtures/nccl/01_h100x16_2node_gcp_a3mega_allreduce.txt")
        .replace("ztan-mig-235z", "gpu-node-1")
        .replace("ztan-mig-gq73", "gpu-node-1");
    let pods: Vec<serde_json::Value> =
        fake.list("v1", "Pod").into_iter().filter(|p| p["metadata"]["labels"]["job-name"] == name).collect();
    assert_eq!(pods.len(), 1, "{pods:#?}");
    assert_eq!(pods[0]["spec"]["nodeName"], "gpu-node-1");
    let pod = pods[0]["metadata"]["name"].as_str().unwrap().to_string();
    fake.set_pod_log(ns, &pod, &sample);
    fake.set_pod_phase(ns, &pod, "Succeeded");
    let launcher = exec.launcher().unwrap();
    let collected =
        track(launcher.as_ref(), &job, &sub, Duration::from_secs(20), Duration::from_millis(100), |_| {})
            .await;
    assert_eq!(collected.state.as_deref(), Some("COMPLETED"), "{collected:?}");
    assert_eq!(collected.nodes, vec!["gpu-node-1".to_string()]);
    let origin = Origin { op_id: Some(&out.op_id), backend: launcher.backend(), image: None, cluster: None };
    let rec = record(origin, &job, &sub, &collected, &[], &JudgeConfig::default());
    assert!(rec.error.is_none(), "{:?}", rec.error);
    assert_eq!(rec.busbw, Some(338.82));
    assert_ne!(rec.judgement.as_ref().unwrap().verdict, Verdict::Fail, "{:?}", rec.judgement);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn break_glass_writes_impersonate_the_configured_identity_only_while_elevated() {
    init();
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    // The viewer may read and may impersonate the break-glass user, nothing more; the
    // break-glass user may do everything.
    fake.set_user_rules(
        "viewer",
        vec![
            Rule::allow(&["get", "list", "watch"], &["*"], &["*"]),
            Rule::allow(&["create"], &["authorization.k8s.io"], &["selfsubjectaccessreviews"]),
            Rule::allow(&["impersonate"], &[""], &["users"]).names(&["sre-breakglass"]),
        ],
    );
    fake.set_user_rules("sre-breakglass", vec![Rule::allow(&["*"], &["*"], &["*"])]);
    let mut cfg = config(&fake, "fake-viewer");
    cfg.break_glass_user = Some("sre-breakglass".into());
    let mut live = Live::start(cfg);
    live.synced().await;
    let mut exec = live.executor();
    assert!(exec.planner().supports(ActionKind::Cordon, false).is_err(), "the viewer alone may not cordon");
    exec.elevate(true);
    assert!(exec.identity().unwrap().contains("as sre-breakglass (break-glass impersonation)"));
    let dir = tempfile::tempdir().unwrap();
    let mut ops = ops_for(dir.path());
    ops.break_glass = Some(gpuplane::audit::BreakGlass { session: "bg-1".into(), ticket: "INC-1".into() });
    let r = req(ActionKind::Cordon, "gpu-node-1");
    let plan = ops::plan_as(&r, &live.state, &*exec.planner(), false, true).expect("plan under break-glass");
    let out = ops.run(&r, &plan, &mut exec, |_| {}).await.expect("run");
    assert!(out.results[0].ok, "{:?}", out.results);
    assert_eq!(fake.get("v1", "Node", "", "gpu-node-1").unwrap()["spec"]["unschedulable"], true);
    let patch = fake.requests().into_iter().find(|r| r.method == "PATCH").expect("a PATCH");
    assert_eq!(patch.user, "viewer as sre-breakglass");
    // The audit records carry the session and the impersonated identity.
    let text = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    assert!(text.contains("bg-1") && text.contains("sre-breakglass"), "{text}");
    // Back to normal: the viewer's own refusal again.
    exec.elevate(false);
    assert!(exec.planner().supports(ActionKind::Uncordon, false).is_err());
}

/// The Kubernetes executor's failures, typed at the seam with the API server's own words: a
/// node that is gone is not found (404), an object that already exists is a conflict (409),
/// and rights taken away after the preflight come back as a refusal (403) naming the user, the
/// verb and the resource.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_write_failures_are_typed_with_the_servers_words() {
    use gpuplane::ops::ActionErrorKind;
    init();
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    let live = synced(&fake, "fake-admin").await;
    let mut exec = live.executor();
    let e = exec.execute(ActionKind::Cordon, "gpu-node-99", "test").await.unwrap_err();
    assert!(matches!(&e, ActionError::NotFound { what } if what.contains("gpu-node-99")), "{e:?}");
    // 409 through the same mapping, from the server's own answer.
    let client = live.shared.connection().expect("connected").client;
    let ns: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);
    let dup = serde_json::from_value(serde_json::json!({"metadata": {"name": "team-a"}})).unwrap();
    let err = ns.create(&Default::default(), &dup).await.expect_err("team-a exists");
    let e = gpuplane::backend::kube::action_error(err);
    assert_eq!(e.kind(), ActionErrorKind::Conflict, "{e}");
    assert!(e.to_string().contains("already exists"), "{e}");
    // The preflight said yes; the rights are gone by the time the write is sent.
    fake.set_user_rules("admin", vec![Rule::allow(&["get", "list", "watch"], &["*"], &["*"])]);
    let e = exec.execute(ActionKind::Cordon, "gpu-node-1", "test").await.unwrap_err();
    let ActionError::Forbidden { reason, .. } = &e else { panic!("{e:?}") };
    assert!(
        reason.contains(r#"nodes "gpu-node-1" is forbidden: User "admin" cannot patch resource "nodes""#),
        "the server's words: {reason}"
    );
    assert!(e.to_string().ends_with("have this identity granted the right, or use break-glass"), "{e}");
    assert_ne!(
        fake.get("v1", "Node", "", "gpu-node-1").unwrap()["spec"]["unschedulable"],
        true,
        "nothing changed"
    );
}
