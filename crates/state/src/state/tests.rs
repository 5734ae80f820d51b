//! The incremental bookkeeping must agree with a from-scratch computation.

use super::*;
use crate::backend::sim::{Sim, SimConfig};
use crate::testing::two_clusters;

/// A fresh state built from `s`'s data in one inventory.
fn rebuilt(s: &ClusterState) -> ClusterState {
    let mut fresh = ClusterState::new(s.prices.clone(), s.thresholds.clone());
    fresh.apply(Update::Inventory {
        at: s.now,
        inventory: Box::new(Inventory {
            source: "x".into(),
            cluster: Some(s.cluster.clone()),
            nodes: Some(s.nodes.clone()),
            jobs: Some(s.jobs.clone()),
            queues: Some(s.queues.clone()),
            quotas: Some(s.quotas.clone()),
            storage: Some(s.storage.clone()),
        }),
    });
    fresh
}

#[test]
fn incremental_figures_match_a_full_recomputation() {
    let cfg = SimConfig { nodes: 64, ..SimConfig::default() };
    let mut sim = Sim::new(cfg);
    let mut s = ClusterState::new(PriceCard::default(), Thresholds::default());
    for u in sim.initial() {
        s.apply(u);
    }
    for _ in 0..120 {
        s.apply(sim.tick());
    }
    let fresh = rebuilt(&s);
    assert_eq!(s.totals, fresh.totals);
    let strip = |q: &[QueueStats]| {
        q.iter()
            .map(|x| (x.name.clone(), x.pending, x.running, x.pending_gpus, x.running_gpus, x.oldest_submit))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&s.queue_stats), strip(&fresh.queue_stats));
    let ranks = |st: &ClusterState| {
        let mut v: Vec<(JobId, Option<u32>)> = st.jobs.iter().map(|j| (j.id, j.rank)).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(ranks(&s), ranks(&fresh));
    assert!(s.jobs.iter().any(|j| j.rank.is_some()), "some jobs pend");
    assert!(s.jobs.iter().filter(|j| j.state != JobState::Pending).all(|j| j.rank.is_none()));
    // The same incidents, but for those that cleared during the run (kept as resolved).
    let current =
        |st: &ClusterState| st.incidents.iter().filter(|i| i.lifecycle.label() != "resolved").count();
    assert_eq!(current(&s), current(&fresh));
}

#[test]
fn ranks_follow_priority_then_submit_within_a_queue() {
    let s = crate::testing::state_after(SimConfig::default(), 10);
    let mut by_queue: HashMap<&str, Vec<&Job>> = HashMap::new();
    for j in s.jobs.iter().filter(|j| j.state == JobState::Pending) {
        by_queue.entry(j.queue.as_str()).or_default().push(j);
    }
    for (_, mut v) in by_queue {
        v.sort_by_key(|j| j.rank);
        let ranks: Vec<u32> = v.iter().filter_map(|j| j.rank).collect();
        assert_eq!(ranks, (1..=v.len() as u32).collect::<Vec<_>>());
        for w in v.windows(2) {
            assert!(
                w[0].priority > w[1].priority
                    || (w[0].priority == w[1].priority && w[0].submit <= w[1].submit)
            );
        }
    }
}

#[test]
fn history_survives_a_new_inventory_with_the_same_nodes_and_moves_with_renames() {
    let mut s = crate::testing::state_after(SimConfig::default(), 20);
    let before = s.gpu_util_history(1, 2, 100);
    assert_eq!(before.len(), 20);
    // the same nodes again (a scheduler's periodic full listing)
    let nodes = s.nodes.clone();
    s.apply(Update::Inventory {
        at: s.now,
        inventory: Box::new(Inventory { nodes: Some(nodes.clone()), ..Default::default() }),
    });
    assert_eq!(s.gpu_util_history(1, 2, 100), before);
    // a node disappears: the others keep their history under their new positions
    let name = nodes[1].name.clone();
    let fewer: Vec<Node> = nodes.into_iter().skip(1).collect();
    s.apply(Update::Inventory {
        at: s.now,
        inventory: Box::new(Inventory { nodes: Some(fewer), ..Default::default() }),
    });
    let i = s.node_index(&name).unwrap();
    assert_eq!(i, 0);
    assert_eq!(s.gpu_util_history(i, 2, 100), before);
}

#[test]
fn a_source_error_keeps_the_last_success_and_becomes_an_incident() {
    let mut s = crate::testing::state_after(SimConfig::default(), 2);
    let ok_at = s.sources[0].ok_at;
    s.apply(Update::Status(SourceStatus {
        cluster: Default::default(),
        name: s.sources[0].name.clone(),
        simulated: true,
        ok_at: None,
        error: Some("slurmrestd: 401 token expired".into()),
        detail: None,
    }));
    assert_eq!(s.sources[0].ok_at, ok_at);
    assert!(
        s.incidents.iter().any(|i| i.title.contains("401 token expired") && i.severity == Severity::Critical)
    );
}

#[test]
fn a_scheduler_listing_keeps_telemetry_from_other_sources() {
    let mut s = crate::testing::state_after(SimConfig::default(), 5);
    let before = s.nodes[1].clone();
    assert!(before.gpus[0].util.is_some() && !before.ports.is_empty());
    // What a scheduler knows of the node: no telemetry, ports, topology or UUIDs.
    let mut bare = before.clone();
    bare.ports.clear();
    bare.topology = None;
    for g in &mut bare.gpus {
        (g.util, g.temp_c, g.power_w, g.uuid) = (None, None, None, Text::default());
    }
    let mut nodes = s.nodes.clone();
    nodes[1] = bare;
    s.apply(Update::Inventory {
        at: s.now,
        inventory: Box::new(Inventory { nodes: Some(nodes), ..Default::default() }),
    });
    let after = &s.nodes[1];
    assert_eq!(after.gpus[0].util, before.gpus[0].util);
    assert_eq!(after.gpus[0].uuid, before.gpus[0].uuid);
    assert_eq!(after.ports.len(), before.ports.len());
    assert!(after.topology.is_some());
}

/// A sim state whose only source is `slurm` (healthy), at `now`.
fn quiet_state() -> ClusterState {
    let mut s = crate::testing::state_after(SimConfig::default(), 3);
    s.apply(Update::Status(SourceStatus {
        cluster: Default::default(),
        name: "slurm".into(),
        simulated: false,
        ok_at: Some(s.now),
        error: None,
        detail: Some("v0.0.40".into()),
    }));
    s
}

#[test]
fn a_poll_that_found_nothing_new_changes_nothing() {
    let mut s = quiet_state();
    let (generation, incidents, history) = (s.generation, s.incidents.clone(), s.history.clone());
    let at = s.now + 10;
    let empty = Inventory { source: "slurm".into(), ..Default::default() };
    assert!(!s.apply(Update::Inventory { at, inventory: Box::new(empty) }), "empty inventory");
    let delta = Delta { source: "slurm".into(), at: at + 1, ..Delta::default() };
    assert!(!s.apply(Update::Delta(Box::new(delta))), "empty delta");
    let again = SourceStatus {
        cluster: Default::default(),
        name: "slurm".into(),
        simulated: false,
        ok_at: Some(at + 1),
        error: None,
        detail: Some("v0.0.40".into()),
    };
    assert!(!s.apply(Update::Status(again.clone())), "a healthy status that only moves on");
    assert_eq!(s.generation, generation, "views keep their sorted rows");
    assert_eq!(s.incidents, incidents);
    assert_eq!(s.history, history, "no point for a no-op");
    // … but the source is fresh: its last success moved on.
    let src = s.sources.iter().find(|x| x.name == "slurm").unwrap();
    assert_eq!(src.ok_at, Some(at + 1));
    // A real change is one.
    let failing = SourceStatus { ok_at: None, error: Some("401 token expired".into()), ..again };
    assert!(s.apply(Update::Status(failing.clone())));
    assert!(s.incidents.iter().any(|i| i.title == "401 token expired"));
    assert!(!s.apply(Update::Status(failing)), "the same error again");
    let names: std::collections::HashMap<Text, Text> = [("uid".into(), "ns/pod".into())].into();
    assert!(s.apply(Update::PodNames(names.clone())));
    assert!(!s.apply(Update::PodNames(names)));
}

#[test]
fn the_cluster_history_holds_one_point_per_step_of_time() {
    let cfg = SimConfig { tick_s: 1, ..SimConfig::default() };
    let mut sim = Sim::new(cfg);
    let mut s = ClusterState::new(PriceCard::default(), Thresholds::default());
    s.history_step_s = 10;
    for u in sim.initial() {
        s.apply(u);
    }
    let first = s.now;
    for _ in 0..40 {
        s.apply(sim.tick());
    }
    // 40 one-second ticks after `first`: the steps `first` … `first + 40` span.
    let steps = ((first + 40).div_euclid(10) - first.div_euclid(10) + 1) as usize;
    assert_eq!(s.history.power_kw.len(), steps, "a point per 10 s, not per update");
    assert_eq!(s.history.running.last(), Some(s.totals.jobs_running), "the last update of a step wins");
    // An idle minute (no update that changes anything), then one change: the minute's steps
    // repeat the point before it.
    let before = s.history.running.last().unwrap();
    let len = s.history.running.len();
    let mut d = sim.tick();
    if let Update::Delta(delta) = &mut d {
        delta.at = s.now + 60;
    }
    assert!(s.apply(d));
    assert_eq!(s.history.running.len(), len + 6, "5 held steps and the new one");
    let tail: Vec<u32> = s.history.running.tail(6).collect();
    assert!(tail[..5].iter().all(|&v| v == before), "{tail:?}");
}

#[test]
fn two_clusters_keep_same_named_nodes_and_jobs_apart() {
    let (s, ..) = two_clusters(30);
    assert!(s.is_fleet());
    assert_eq!(s.clusters(), ["prod-a", "lab"]);
    assert_eq!(s.nodes.len(), 20);
    // The simulator names nodes the same way in both: both are there, each with its cluster.
    let name = s.nodes.iter().find(|n| n.cluster == "lab").unwrap().name.clone();
    let a = s.node_in(&"prod-a".into(), &name).expect("prod-a has it too");
    let b = s.node_in(&"lab".into(), &name).expect("lab has it");
    assert!(!std::ptr::eq(a, b));
    let (ka, kb) = (
        s.node_key(s.node_at(&NodeKey { cluster: "prod-a".into(), name: name.clone() }).unwrap()).unwrap(),
        s.node_key(s.node_at(&NodeKey { cluster: "lab".into(), name: name.clone() }).unwrap()).unwrap(),
    );
    assert_eq!((ka.cluster.as_str(), kb.cluster.as_str()), ("prod-a", "lab"));
    // Jobs of the same id in both clusters are two jobs.
    let shared: Vec<JobId> = s
        .jobs
        .iter()
        .filter(|j| j.cluster == "lab")
        .map(|j| j.id)
        .filter(|id| s.job_in(&"prod-a".into(), *id).is_some())
        .collect();
    assert!(!shared.is_empty(), "the simulators number jobs alike");
    for id in shared {
        assert_ne!(
            s.job_in(&"prod-a".into(), id).unwrap().cluster,
            s.job_in(&"lab".into(), id).unwrap().cluster
        );
    }
    // Sources are per cluster; every object carries its cluster.
    let srcs: Vec<(&str, &str)> = s.sources.iter().map(|x| (x.cluster.as_str(), x.name.as_str())).collect();
    assert_eq!(srcs, [("prod-a", "sim"), ("lab", "sim")]);
    assert!(s.jobs.iter().all(|j| j.cluster == "prod-a" || j.cluster == "lab"));
    assert!(s.queues.iter().all(|q| !q.cluster.is_empty()) && !s.queues.is_empty());
    assert!(s.quotas.iter().all(|q| !q.cluster.is_empty()));
}

#[test]
fn one_cluster_s_inventory_and_error_touch_only_that_cluster() {
    let (mut s, ..) = two_clusters(5);
    let lab_nodes: Vec<Node> = s.nodes.iter().filter(|n| n.cluster == "lab").cloned().collect();
    let lab_jobs = s.jobs.iter().filter(|j| j.cluster == "lab").count();
    // prod-a relists with two nodes and no jobs: lab keeps everything.
    let mut two: Vec<Node> = s.nodes.iter().filter(|n| n.cluster == "prod-a").take(2).cloned().collect();
    two.iter_mut().for_each(|n| n.cluster = Text::default());
    s.apply(Update::Cluster {
        cluster: "prod-a".into(),
        update: Box::new(Update::Inventory {
            at: s.now,
            inventory: Box::new(Inventory {
                source: "sim".into(),
                cluster: Some("whatever-slurm-calls-it".into()),
                nodes: Some(two),
                jobs: Some(Vec::new()),
                ..Inventory::default()
            }),
        }),
    });
    assert_eq!(s.nodes.iter().filter(|n| n.cluster == "prod-a").count(), 2);
    let now_lab: Vec<&Text> = s.nodes.iter().filter(|n| n.cluster == "lab").map(|n| &n.name).collect();
    assert_eq!(now_lab, lab_nodes.iter().map(|n| &n.name).collect::<Vec<_>>());
    assert_eq!(s.jobs.iter().filter(|j| j.cluster == "lab").count(), lab_jobs);
    assert_eq!(s.jobs.iter().filter(|j| j.cluster == "prod-a").count(), 0);
    assert_eq!(s.clusters(), ["prod-a", "lab"], "a configured name is kept");
    // lab's source fails: only lab's source carries the error, and the incident names lab.
    s.apply(Update::Cluster {
        cluster: "lab".into(),
        update: Box::new(Update::Status(SourceStatus {
            cluster: Default::default(),
            name: "sim".into(),
            simulated: true,
            ok_at: None,
            error: Some("connection refused".into()),
            detail: None,
        })),
    });
    let errs: Vec<(&str, bool)> = s.sources.iter().map(|x| (x.cluster.as_str(), x.error.is_some())).collect();
    assert_eq!(errs, [("prod-a", false), ("lab", true)]);
    let inc = s.incidents.iter().find(|i| i.title == "connection refused").unwrap();
    assert_eq!(inc.cluster, "lab");
}

/// A node whose answer claimed more GPUs than the cap is shown as an incident naming the claim
/// (the cut is never silent), and only that node; the totals count the capped figure.
#[test]
fn a_node_cut_to_the_gpu_cap_is_an_incident() {
    let s = crate::testing::state_after(SimConfig::default(), 3);
    assert!(!s.incidents.iter().any(|i| i.signal == "gpu-count"));
    let mut big = s.clone();
    let n = &mut big.nodes[0];
    n.gpu_slots = crate::model::MAX_GPUS_PER_NODE;
    n.labels.insert(crate::model::GPUS_CLAIMED_LABEL.into(), "4000000000".into());
    let name = n.name.clone();
    let big = rebuilt(&big);
    let cut: Vec<_> = big.incidents.iter().filter(|i| i.signal == "gpu-count").collect();
    assert_eq!(cut.len(), 1, "{cut:?}");
    assert_eq!(cut[0].node.as_ref(), Some(&name));
    assert!(cut[0].title.contains("claims 4000000000 GPUs; counted as 64"), "{}", cut[0].title);
    // A node at the cap without the label (a real 64-GPU node) is no incident.
    let mut real = s.clone();
    real.nodes[0].gpu_slots = crate::model::MAX_GPUS_PER_NODE;
    assert!(!rebuilt(&real).incidents.iter().any(|i| i.signal == "gpu-count"));
}

/// A single-cluster state of `sim`'s cluster wrapped as `cluster` (the fleet's view of it).
fn alone(cluster: &str, cfg: SimConfig, ticks: usize) -> ClusterState {
    let mut sim = Sim::new(cfg);
    let mut s = ClusterState::new(PriceCard::default(), Thresholds::default());
    let wrap = |u| Update::Cluster { cluster: cluster.into(), update: Box::new(u) };
    for u in sim.initial() {
        s.apply(wrap(u));
    }
    for _ in 0..ticks {
        s.apply(wrap(sim.tick()));
    }
    s
}

fn gpu_seconds(s: &ClusterState, cluster: &str) -> f64 {
    s.jobs.iter().filter(|j| j.cluster == cluster).map(|j| j.gpu_seconds).sum()
}

/// One cluster's telemetry accounts GPU time to its own jobs only: in a fleet, each cluster's
/// jobs hold exactly the GPU-seconds they hold when their cluster is opened alone (they held
/// one cluster's interval more for every other cluster's update).
#[test]
fn a_cluster_s_telemetry_accounts_gpu_time_to_its_own_jobs_only() {
    let (fleet, ..) = two_clusters(30);
    for (name, cfg) in [
        ("prod-a", SimConfig { nodes: 12, seed: 1, ..SimConfig::default() }),
        ("lab", SimConfig { nodes: 8, seed: 2, ..SimConfig::default() }),
    ] {
        let own = gpu_seconds(&alone(name, cfg, 30), name);
        assert!(own > 0.0, "{name} accounts GPU time");
        let in_fleet = gpu_seconds(&fleet, name);
        assert!((in_fleet - own).abs() < 1e-6, "{name}: {in_fleet} GPU-s in the fleet, {own} alone");
    }
}

/// Updates applied as one batch give the state that applying them one by one gives: the same
/// nodes, jobs, GPU-seconds, totals and incidents (a fleet's ticks arrive together).
#[test]
fn a_batch_of_updates_equals_applying_them_one_by_one() {
    let (mut one, mut a1, mut b1) = two_clusters(5);
    let (mut batched, mut a2, mut b2) = two_clusters(5);
    let wrap = |c: &str, u| Update::Cluster { cluster: c.into(), update: Box::new(u) };
    for _ in 0..20 {
        let (ua, ub) = (a1.tick(), b1.tick());
        assert_eq!(format!("{ua:?}"), format!("{:?}", a2.tick()), "the simulators agree");
        b2.tick();
        one.apply(wrap("prod-a", ua.clone()));
        one.apply(wrap("lab", ub.clone()));
        assert!(batched.apply_batch(vec![wrap("prod-a", ua), wrap("lab", ub)]));
    }
    let view = |s: &ClusterState| {
        let jobs: Vec<String> = s
            .jobs
            .iter()
            .map(|j| format!("{}/{} {:?} {:.3}", j.cluster, j.id, j.state, j.gpu_seconds))
            .collect();
        let nodes: Vec<String> =
            s.nodes.iter().map(|n| format!("{}/{} {:?}", n.cluster, n.name, n.state)).collect();
        let incidents: Vec<String> =
            s.incidents.iter().map(|i| format!("{}/{}", i.cluster, i.title)).collect();
        (jobs, nodes, incidents, format!("{:?}", s.totals))
    };
    assert_eq!(view(&one), view(&batched));
}

/// A cluster's new node listing replaces only its own nodes; the others keep their place,
/// their records and their history (they are moved, not copied, since a copy of every other
/// cluster's nodes held 52 MB more at a fleet's peak).
#[test]
fn a_clusters_new_inventory_leaves_the_other_clusters_nodes_in_place() {
    let (mut s, a, _) = two_clusters(5);
    let wrap = |c: &str, u| Update::Cluster { cluster: c.into(), update: Box::new(u) };
    let lab_before: Vec<String> =
        s.nodes.iter().filter(|n| n.cluster == "lab").map(|n| serde_json::to_string(n).unwrap()).collect();
    let lab_node = s.nodes[12].name.clone();
    let lab_util = |s: &ClusterState| -> Vec<u8> {
        let i = s.node_at(&NodeKey { cluster: "lab".into(), name: lab_node.clone() }).unwrap();
        s.fleet.node_util.column(i, 10, NONE_U8)
    };
    let util_before = lab_util(&s);
    // prod-a lists its nodes again, one fewer.
    let mut listing = a.initial();
    for u in &mut listing {
        if let Update::Inventory { inventory, .. } = u {
            inventory.nodes.as_mut().unwrap().pop();
        }
    }
    for u in listing {
        s.apply(wrap("prod-a", u));
    }
    let clusters: Vec<&str> = s.nodes.iter().map(|n| n.cluster.as_str()).collect();
    assert_eq!(clusters[..11], ["prod-a"; 11]);
    assert_eq!(clusters[11..], ["lab"; 8], "the lab's nodes after prod-a's, as first heard of");
    let lab_after: Vec<String> =
        s.nodes.iter().filter(|n| n.cluster == "lab").map(|n| serde_json::to_string(n).unwrap()).collect();
    assert_eq!(lab_after, lab_before);
    assert!(util_before.iter().any(|&u| u != NONE_U8), "the lab's node has a history");
    assert_eq!(lab_util(&s), util_before, "the lab's history moved with its nodes");
    for (i, n) in s.nodes.iter().enumerate() {
        assert_eq!(s.node_at(&NodeKey { cluster: n.cluster.clone(), name: n.name.clone() }), Some(i));
    }
}

/// Three clusters whose nodes, jobs and incidents are alike (one seed): a drain in one
/// mitigates that cluster's incidents only, names that cluster's jobs, and a node another
/// cluster's scheduler drained shows as mitigated there (identity is (cluster, node), never
/// the name).
#[test]
fn a_drain_in_one_cluster_of_a_fleet_mitigates_only_that_clusters_incidents() {
    use crate::model::{ActionMark, Handling, NodeReason, NodeState};
    let names = ["sim-1", "sim-2", "sim-3"];
    let mut sims: Vec<Sim> =
        names.iter().map(|_| Sim::new(SimConfig { nodes: 12, seed: 5, ..SimConfig::default() })).collect();
    let mut s = ClusterState::new(PriceCard::default(), Thresholds::default());
    let wrap = |c: &str, u| Update::Cluster { cluster: c.into(), update: Box::new(u) };
    for (c, sim) in names.iter().zip(&mut sims) {
        for u in sim.initial() {
            s.apply(wrap(c, u));
        }
    }
    for _ in 0..40 {
        for (c, sim) in names.iter().zip(&mut sims) {
            s.apply(wrap(c, sim.tick()));
        }
    }
    // A node with an open incident about it in every cluster, and a running job in each.
    let about = |i: &Incident, n: &str| {
        !matches!(i.lifecycle, Lifecycle::Resolved { .. })
            && (i.subject == n || i.subject.starts_with(&format!("{n}/")))
    };
    let node = s
        .nodes
        .iter()
        .filter(|n| n.cluster == "sim-1")
        .map(|n| n.name.clone())
        .find(|n| {
            names.iter().all(|c| {
                s.incidents
                    .iter()
                    .any(|i| i.cluster == *c && i.node.as_deref() == Some(n.as_str()) && about(i, n))
                    && s.jobs.iter().any(|j| {
                        j.cluster == *c && j.state == JobState::Running && j.nodes.iter().any(|x| x == n)
                    })
            })
        })
        .expect("a node with an incident and a running job in all three clusters");
    let now = s.now;
    let set_state = |s: &mut ClusterState, c: &str, by: &str| {
        let mut nodes: Vec<Node> = s.nodes.iter().filter(|n| n.cluster == c).cloned().collect();
        for n in &mut nodes {
            n.cluster = Text::default();
            if n.name == node {
                n.state = NodeState::Draining;
                n.reason = Some(NodeReason { text: "xid".into(), by: by.into(), at: now - 60 });
            }
        }
        s.apply(wrap(
            c,
            Update::Inventory {
                at: now,
                inventory: Box::new(Inventory {
                    source: "sim".into(),
                    nodes: Some(nodes),
                    ..Inventory::default()
                }),
            },
        ));
    };
    // sim-3's own scheduler drains it; sim-1 drains it through gpuplane (audited under sim-1).
    set_state(&mut s, "sim-3", "root");
    set_state(&mut s, "sim-1", "slurm");
    s.apply(Update::Handling(Box::new(Handling {
        acks: vec![],
        actions: vec![ActionMark {
            cluster: "sim-1".into(),
            target: node.to_string(),
            action: "drain".into(),
            by: "oncall".into(),
            at: now - 60,
            ticket: Some("INC-1".into()),
            reason: Some("xid".into()),
        }],
    })));
    let of = |c: &str| -> Vec<&Incident> {
        s.incidents
            .iter()
            .filter(|i| i.cluster == c && i.node.as_deref() == Some(node.as_str()) && about(i, &node))
            .collect()
    };
    for i in of("sim-2") {
        assert_eq!(i.lifecycle, Lifecycle::Open, "sim-2 was never touched: {i:#?}");
        assert!(i.waiting.is_none(), "sim-2's node is not draining: {:?}", i.waiting);
    }
    let sim1_jobs: Vec<String> = s
        .jobs
        .iter()
        .filter(|j| j.cluster == "sim-1" && j.state == JobState::Running && j.nodes.contains(&node))
        .map(|j| format!("job {} ({}", j.id, j.user))
        .collect();
    for i in of("sim-1") {
        assert!(
            matches!(&i.lifecycle, Lifecycle::Mitigated { audited: true, by: Some(b), .. } if b == "oncall"),
            "{i:#?}"
        );
        let w = i.waiting.as_deref().expect("the drain waits for sim-1's job");
        assert!(
            sim1_jobs.iter().any(|j| w.contains(j.as_str())),
            "{w} names one of sim-1's jobs {sim1_jobs:?}"
        );
    }
    for i in of("sim-3") {
        assert!(
            matches!(&i.lifecycle, Lifecycle::Mitigated { audited: false, by: Some(b), .. } if b == "root"),
            "sim-3's scheduler drained it: {i:#?}"
        );
    }
    assert!(!of("sim-1").is_empty() && !of("sim-2").is_empty() && !of("sim-3").is_empty());
}
