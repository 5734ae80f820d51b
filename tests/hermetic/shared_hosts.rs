//! One host, two schedulers: a simulated Slurm cluster (`prod-a`) and the in-repo fake
//! Kubernetes API server watched by the real backend (`prod-k8s`) in one console, two hosts
//! paired by `[[shared_hosts]]`. The paired host is one row of the Nodes view with both
//! states; a disagreement is an incident from when it was first seen, and clears when the
//! schedulers agree again.

use crate::common;

use crate::kube_support::{Cluster, FakeKube, Opts};
use gpuplane::backend::kube::{KubeConfig, Shared};
use gpuplane::backend::sim::{Sim, SimConfig};
use gpuplane::model::protocol::Update;
use gpuplane::model::{NodeKey, NodeState};
use gpuplane::state::{ClusterState, HostPairing};
use gpuplane::tui::app::{App, Msg};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const START: i64 = 1_767_225_600;

/// `busy` ↔ `gpu-node-1` (Ready and busy in the fake), `cordoned` ↔ `gpu-node-3` (cordoned).
fn pairing(busy: &str, cordoned: &str) -> HostPairing {
    HostPairing {
        slurm: "prod-a".into(),
        kube: "prod-k8s".into(),
        kube_suffix: String::new(),
        hosts: [(busy, "gpu-node-1"), (cordoned, "gpu-node-3")]
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
    }
}

fn app(state: ClusterState) -> App {
    common::pin_utc();
    App::new(
        state,
        gpuplane::tui::keymap::Keymap::builtin("default"),
        gpuplane::tui::theme::Theme::builtin("dark"),
        gpuplane::tui::widgets::Glyphs::UNICODE,
        "researcher".into(),
    )
}

fn wrap(cluster: &str, u: Update) -> Msg {
    Msg::Update(Update::Cluster { cluster: cluster.into(), update: Box::new(u) })
}

/// Applies the Kubernetes backend's updates (as `prod-k8s`) until `pred` holds (20 s at most).
async fn until(
    a: &mut App,
    rx: &mut mpsc::Receiver<Update>,
    what: &str,
    pred: impl Fn(&ClusterState) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !pred(a.state()) {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(u)) => {
                a.update(wrap("prod-k8s", u));
            }
            _ => panic!("timed out waiting for {what}"),
        }
    }
}

fn twin_incidents(s: &ClusterState) -> Vec<(String, String, String)> {
    s.incidents
        .iter()
        .filter(|i| i.signal == "twin-mismatch")
        .map(|i| (i.subject.to_string(), i.title.clone(), i.lifecycle.label().to_string()))
        .collect()
}

fn nodes_rows(a: &mut App) -> Vec<(String, String)> {
    common::typed(a, ":nodes\r");
    a.prepare();
    let s = a.state();
    a.ui.tables[gpuplane::tui::views::nodes::TABLE]
        .rows
        .iter()
        .map(|&k| {
            let n = &s.nodes[k as usize];
            (n.cluster.to_string(), n.name.to_string())
        })
        .collect()
}

fn key(c: &str, n: &str) -> NodeKey {
    NodeKey { cluster: c.into(), name: n.into() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_in_slurm_and_kubernetes_is_one_row_and_a_disagreement_is_an_incident() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    // The Slurm side: a simulated cluster of 8 nodes; two of its nodes in service are paired.
    let mut sim = Sim::new(SimConfig { nodes: 8, seed: 42, start: START, tick_s: 2, ..SimConfig::default() });
    let in_service: Vec<String> = (1..=8)
        .map(|i| format!("gpu-{i:03}"))
        .filter(|n| sim.node_state(n).is_some_and(NodeState::schedulable))
        .collect();
    let (busy, cordoned) = (in_service[0].as_str(), in_service[1].as_str());
    let mut state = ClusterState::new(Default::default(), Default::default());
    state.host_pairs = vec![pairing(busy, cordoned)];
    let mut a = app(state);
    for u in sim.initial() {
        a.update(wrap("prod-a", u));
    }
    a.update(wrap("prod-a", sim.tick()));
    // The Kubernetes side: the real backend watching the fake API server.
    let cfg = KubeConfig {
        kubeconfig: Some(fake.kubeconfig_path().to_path_buf()),
        context: Some("fake-admin".into()),
        coalesce: Duration::from_millis(50),
        ..Default::default()
    };
    let (tx, mut rx) = mpsc::channel(256);
    let (_ctx_tx, ctx_rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    tokio::spawn(gpuplane::backend::kube::run(cfg, Shared::default(), tx, ctx_rx, cancel.clone()));
    until(&mut a, &mut rx, "the Kubernetes nodes", |s| s.node_in(&"prod-k8s".into(), "gpu-node-3").is_some())
        .await;
    let s = a.state();
    assert!(s.has_twins());
    // Both nodes keep their identity; their host is one row, the Slurm node's.
    let rows = nodes_rows(&mut a);
    assert_eq!(rows.len(), 8 + 5 - 2, "{rows:?}");
    assert!(rows.contains(&("prod-a".into(), cordoned.into())));
    assert!(!rows.iter().any(|(c, n)| c == "prod-k8s" && (n == "gpu-node-1" || n == "gpu-node-3")));
    assert!(rows.contains(&("prod-k8s".into(), "gpu-node-2".into())), "an unpaired node keeps its row");
    let s = a.state();
    let k8 = s.node_at(&key("prod-k8s", "gpu-node-3")).unwrap();
    assert_eq!(s.host_row(k8), s.node_at(&key("prod-a", cordoned)).unwrap());
    // The disagreement: schedulable in Slurm, cordoned in Kubernetes, since first seen.
    let seen = s.now;
    let inc = twin_incidents(s);
    assert_eq!(inc.len(), 1, "{inc:?}");
    assert_eq!(inc[0].0, format!("host {cordoned}"));
    assert!(
        inc[0].1.starts_with("schedulable in Slurm, cordoned in Kubernetes")
            && inc[0].1.ends_with("(prod-k8s/gpu-node-3)"),
        "{inc:?}"
    );
    let i = s.incidents.iter().find(|i| i.signal == "twin-mismatch").unwrap();
    assert_eq!((i.cluster.as_str(), i.node.as_deref(), i.since), ("prod-a", Some(cordoned), Some(seen)));
    // On screen: the OTHER SCHED column, the row's detail with the Kubernetes node's state,
    // and the incident on the Overview.
    common::typed(&mut a, ":nodes\r");
    let screen = common::render(&mut a, 160, 48);
    assert!(screen.contains("OTHER SCHED"), "{screen}");
    assert!(screen.contains("!k8s cordoned"), "{screen}");
    let busy_row = screen.lines().find(|l| l.contains(&format!(" {busy} "))).unwrap_or_default();
    assert!(busy_row.contains(" k8s "), "{busy}'s row shows its Kubernetes node's state: {screen}");
    common::typed(&mut a, &format!(":nodes {cordoned}\r"));
    a.prepare();
    common::typed(&mut a, "\r");
    let detail = common::render(&mut a, 160, 48);
    assert!(detail.contains("this node in Slurm"), "{detail}");
    assert!(detail.contains("prod-k8s/gpu-node-3"), "{detail}");
    assert!(detail.contains("schedulable in Slurm, cordoned in Kubernetes since"), "{detail}");
    // Uncordoned in Kubernetes: they agree; the incident resolves.
    fake.patch("v1", "Node", "", "gpu-node-3", serde_json::json!({"spec": {"unschedulable": false}}));
    until(&mut a, &mut rx, "gpu-node-3 uncordoned", |s| {
        s.node_in(&"prod-k8s".into(), "gpu-node-3").is_some_and(|n| n.state != NodeState::Cordoned)
    })
    .await;
    let inc = twin_incidents(a.state());
    assert!(inc.iter().all(|(.., l)| l == "resolved"), "{inc:?}");
    // Drained in Slurm while Kubernetes still schedules there: a new disagreement, naming who.
    sim.drain(busy, "bad DIMM", "alice").unwrap();
    a.update(wrap("prod-a", sim.tick()));
    let inc = twin_incidents(a.state());
    let open: Vec<_> = inc.iter().filter(|(.., l)| l == "open").collect();
    assert_eq!(open.len(), 1, "{inc:?}");
    assert_eq!(open[0].0, format!("host {busy}"));
    assert!(
        open[0].1.starts_with("draining in Slurm by alice, schedulable in Kubernetes")
            || open[0].1.starts_with("drained in Slurm by alice, schedulable in Kubernetes"),
        "{open:?}"
    );
    cancel.cancel();
}

/// Two simulated clusters standing in for Slurm (`sim-1`) and Kubernetes (`sim-2`, the same
/// node names): every node of `sim-2` is paired. Each cluster names its teams and people its
/// own way; the directory maps them to one.
fn sim_fleet(ticks: usize) -> App {
    let mut state = ClusterState::new(Default::default(), Default::default());
    state.host_pairs =
        vec![HostPairing { slurm: "sim-1".into(), kube: "sim-2".into(), ..HostPairing::default() }];
    let mut d = gpuplane::state::Directory::default();
    let map = |v: &[(&str, &str)]| v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    d.add("sim-1", &map(&[("vision", "perception")]), &map(&[]));
    d.add("sim-2", &map(&[("speech", "perception")]), &map(&[("oscar", "researcher")]));
    state.directory = d;
    let mut a = app(state);
    let mut sims: Vec<(&str, Sim)> = [("sim-1", 16, 42), ("sim-2", 14, 43)]
        .into_iter()
        .map(|(c, n, seed)| {
            (c, Sim::new(SimConfig { nodes: n, seed, start: START, tick_s: 2, ..SimConfig::default() }))
        })
        .collect();
    for (c, s) in &sims {
        for u in s.initial() {
            a.update(wrap(c, u));
        }
    }
    for _ in 0..ticks {
        for (c, s) in &mut sims {
            a.update(wrap(c, s.tick()));
        }
    }
    a.wall_now = START + 2 * ticks as i64;
    a
}

#[test]
fn paired_nodes_and_the_fleets_teams_and_people_on_screen() {
    for (w, h) in [(60u16, 20u16), (80, 24), (160, 48)] {
        for (name, keys) in [("nodes", ":nodes\r"), ("quotas", ":quotas\r")] {
            let mut a = sim_fleet(10);
            common::typed(&mut a, keys);
            let screen = common::render(&mut a, w, h);
            insta::assert_snapshot!(format!("shared_hosts_{name}_{w}x{h}"), screen);
        }
    }
}

/// Teams and people roll up over the clusters, each cluster's part equal to what its own
/// jobs and quotas hold; "my jobs" holds the person's jobs on every cluster under each
/// cluster's name for them, each with its position in its own cluster's queue.
#[test]
fn teams_and_people_roll_up_across_clusters() {
    let mut a = sim_fleet(10);
    let s = a.state();
    let active = |c: &str, f: &dyn Fn(&gpuplane::model::Job) -> bool| -> (u32, u32) {
        let js: Vec<_> = s.jobs.iter().filter(|j| j.cluster == c && j.state.is_active() && f(j)).collect();
        (
            js.iter().filter(|j| j.state.is_active() && j.state != gpuplane::model::JobState::Pending).count()
                as u32,
            js.iter().filter(|j| j.state == gpuplane::model::JobState::Pending).count() as u32,
        )
    };
    let team = s.team_rollup.iter().find(|r| r.name == "perception").expect("perception rolled up");
    let parts: Vec<(&str, u32, u32)> =
        team.clusters.iter().map(|p| (p.cluster.as_str(), p.running, p.pending)).collect();
    let (r1, p1) = active("sim-1", &|j| j.account == "vision");
    let (r2, p2) = active("sim-2", &|j| j.account == "speech");
    assert_eq!(parts, [("sim-1", r1, p1), ("sim-2", r2, p2)]);
    assert_eq!((team.total.running, team.total.pending), (r1 + r2, p1 + p2));
    let quota =
        |c: &str, t: &str| s.quotas.iter().find(|q| q.cluster == c && q.team == t).map_or(0, |q| q.gpu_quota);
    assert_eq!(team.total.gpu_quota, quota("sim-1", "vision") + quota("sim-2", "speech"));
    assert!(team.total.gpu_quota > 0);
    // sim-1's speech and sim-2's vision stay their own teams.
    assert!(
        s.team_rollup.iter().any(|r| r.name == "speech" && r.clusters.iter().all(|p| p.cluster == "sim-1"))
    );
    // The researcher is `researcher` on sim-1 and `oscar` on sim-2 (and `researcher` there too).
    let me = s.people_rollup.iter().find(|r| r.name == "researcher").unwrap();
    let (r1, p1) = active("sim-1", &|j| j.user == "researcher");
    let (r2, p2) = active("sim-2", &|j| j.user == "oscar" || j.user == "researcher");
    assert_eq!((me.total.running, me.total.pending), (r1 + r2, p1 + p2));
    assert!(
        s.people_rollup
            .iter()
            .find(|r| r.name == "oscar")
            .is_some_and(|r| r.clusters.iter().all(|p| p.cluster == "sim-1"))
    );
    // My jobs: the same jobs, pending ones by their rank in their own (cluster, queue).
    common::typed(&mut a, ":queues\r");
    a.prepare();
    let s = a.state();
    let mine: Vec<&gpuplane::model::Job> = a.ui.tables[gpuplane::tui::views::queues::MY_JOBS]
        .rows
        .iter()
        .map(|&k| &s.jobs[k as usize])
        .collect();
    assert_eq!(mine.len() as u32, r1 + r2 + p1 + p2);
    assert!(mine.iter().any(|j| j.cluster == "sim-2" && j.user == "oscar"), "oscar's jobs on sim-2 are mine");
    assert!(
        !mine.iter().any(|j| j.cluster == "sim-1" && j.user == "oscar"),
        "oscar on sim-1 is someone else"
    );
    for j in mine.iter().filter(|j| j.state == gpuplane::model::JobState::Pending) {
        let ahead = s
            .jobs
            .iter()
            .filter(|o| {
                o.cluster == j.cluster && o.queue == j.queue && o.state == gpuplane::model::JobState::Pending
            })
            .filter(|o| o.rank < j.rank)
            .count() as u32;
        assert_eq!(j.rank, Some(ahead + 1), "job {} of {}: its place in its own queue", j.id, j.cluster);
    }
}
