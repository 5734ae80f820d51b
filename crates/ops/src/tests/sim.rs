use crate::backend::sim::*;
use crate::model::protocol::Update;
use crate::model::{Epoch, JobId, JobState, NodeState, Text};
use crate::model::{LinkKind, PriceCard};
use crate::ops::ApplyOp;
use crate::state::{ClusterState, Severity, Thresholds};
use crate::testing::state_after;
use std::collections::{HashMap, HashSet};

fn cfg(nodes: usize) -> SimConfig {
    SimConfig { nodes, ..SimConfig::default() }
}

fn fresh(sim: &Sim) -> ClusterState {
    let mut state = ClusterState::new(PriceCard::default(), Thresholds::default());
    for u in sim.initial() {
        state.apply(u);
    }
    state
}

/// Everything that must hold after every update.
fn check_invariants(s: &ClusterState) {
    let mut ids = HashSet::new();
    for j in &s.jobs {
        assert!(ids.insert(j.id), "job id {} twice", j.id);
        assert_eq!(j.position, None);
    }
    let mut held: HashMap<JobId, Vec<&str>> = HashMap::new();
    for n in &s.nodes {
        let alloc = n.gpus.iter().filter(|g| g.job.is_some()).count() as u32;
        assert_eq!(alloc, n.gpu_alloc, "{}: gpu_alloc", n.name);
        assert!(n.gpu_alloc <= n.gpu_slots, "{}: over-allocated", n.name);
        assert_eq!(n.gpus.len() as u32, n.gpu_slots);
        if matches!(
            n.state,
            NodeState::Down | NodeState::Drained | NodeState::Cordoned | NodeState::Maintenance
        ) {
            assert_eq!(n.gpu_alloc, 0, "{} is {:?} but holds GPUs", n.name, n.state);
        }
        if n.state.schedulable() {
            let want = match n.gpu_alloc {
                0 => NodeState::Idle,
                a if a == n.gpu_slots => NodeState::Allocated,
                _ => NodeState::Mixed,
            };
            assert_eq!(n.state, want, "{}: state vs allocation", n.name);
        }
        let per_gpu_cpus = n.cpus_total / n.gpu_slots;
        assert_eq!(n.cpus_alloc, n.gpu_alloc * per_gpu_cpus, "{}: cpus", n.name);
        for g in &n.gpus {
            if let Some(id) = g.job {
                held.entry(id).or_default().push(n.name.as_str());
                assert!(!g.is_failed(), "{}/gpu{} failed but allocated", n.name, g.index);
                assert!(g.mig.is_empty(), "MIG GPU handed out whole");
            }
        }
    }
    for (id, nodes) in &held {
        let j = s.job(*id).unwrap_or_else(|| panic!("GPU held by unknown job {id}"));
        assert_eq!(j.state, JobState::Running, "GPU held by job {id} in {:?}", j.state);
        assert_eq!(nodes.len() as u32, j.gpus, "job {id}: GPUs held vs asked");
        for n in nodes {
            assert!(j.nodes.iter().any(|x| x == n), "job {id} holds a GPU on {n}, not in its node list");
        }
    }
    for j in &s.jobs {
        match j.state {
            JobState::Running => {
                assert!(held.contains_key(&j.id), "running job {} holds no GPU", j.id);
                assert!(j.start.is_some() && j.end.is_none());
            }
            JobState::Pending => {
                assert!(j.pending_reason.is_some(), "pending job {} without reason", j.id);
                assert!(j.rank.is_some());
                assert!(j.start.is_none());
            }
            _ => {
                assert!(j.end.is_some(), "finished job {} without end", j.id);
                if j.start.is_some() {
                    assert!(j.gpu_seconds > 0.0, "finished job {} without accounting", j.id);
                    assert!(j.useful_gpu_seconds <= j.gpu_seconds);
                }
            }
        }
    }
}

fn run_checked(cfg: SimConfig, ticks: usize) -> (Sim, ClusterState) {
    let mut sim = Sim::new(cfg);
    let mut state = fresh(&sim);
    check_invariants(&state);
    let mut draining: HashMap<Text, u32> = state
        .nodes
        .iter()
        .filter(|n| n.state == NodeState::Draining)
        .map(|n| (n.name.clone(), n.gpu_alloc))
        .collect();
    for _ in 0..ticks {
        let u = sim.tick();
        if let Update::Delta(d) = &u {
            assert_eq!(d.at, sim.now());
        }
        state.apply(u);
        check_invariants(&state);
        for n in state.nodes.iter().filter(|n| n.state == NodeState::Draining) {
            let before = draining.insert(n.name.clone(), n.gpu_alloc).unwrap_or(0);
            assert!(n.gpu_alloc <= before, "{} got new work while draining", n.name);
        }
    }
    (sim, state)
}

#[test]
fn invariants_hold_over_fifty_ticks() {
    let (sim, state) = run_checked(cfg(16), 50);
    assert_eq!(state.now, SimConfig::default().start + 100);
    assert_eq!(sim.now(), state.now);
    assert_eq!(state.cluster, "sim-16x8");
}

#[test]
fn invariants_hold_at_500_nodes() {
    let (_, state) = run_checked(cfg(500), 4);
    assert_eq!(state.nodes.len(), 500);
    assert_eq!(state.nodes[0].name, "gpu-001");
    let running = state.jobs.iter().filter(|j| j.state == JobState::Running).count();
    assert!(running > 100, "only {running} running");
    assert!(state.jobs.iter().any(|j| j.gpus >= 32 && j.state == JobState::Running), "no multi-node job");
}

#[test]
fn jobs_come_and_go_over_a_long_run() {
    let cfg = cfg(16);
    let target = cfg.job_target();
    let mut sim = Sim::new(cfg);
    let mut state = fresh(&sim);
    let first_new = state.jobs.iter().map(|j| j.id).max().unwrap() + 1;
    let (mut started, mut finished, mut removed) = (0, 0, 0);
    for _ in 0..3000 {
        let Update::Delta(d) = sim.tick() else { panic!("tick is a delta") };
        removed += d.jobs_remove.len();
        for j in &d.jobs_upsert {
            started += usize::from(j.state == JobState::Running && j.start == Some(d.at));
            finished += usize::from(j.end == Some(d.at) || (!j.state.is_active() && j.end.is_some()));
        }
        state.apply(Update::Delta(d));
    }
    check_invariants(&state);
    assert!(started > 5 && finished > 5, "started {started}, finished {finished}");
    assert!(removed > 0, "history never trimmed");
    assert!(state.jobs.iter().any(|j| j.id >= first_new), "no new submissions");
    let total = state.jobs.len();
    assert!(total.abs_diff(target) <= target / 3, "{total} jobs, target {target}");
    // The planted problems outlive an hour and a half of sim time.
    check_planted(&sim, &state);
}

fn digest(s: &ClusterState) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(&s.nodes).unwrap().hash(&mut h);
    serde_json::to_string(&s.jobs).unwrap().hash(&mut h);
    serde_json::to_string(&s.storage).unwrap().hash(&mut h);
    h.finish()
}

#[test]
fn same_seed_same_state_other_seed_other_state() {
    let a = digest(&state_after(cfg(16), 40));
    let b = digest(&state_after(cfg(16), 40));
    let c = digest(&state_after(SimConfig { seed: 7, ..cfg(16) }, 40));
    assert_eq!(a, b);
    assert_ne!(a, c);
    let a = digest(&state_after(cfg(120), 3));
    assert_eq!(a, digest(&state_after(cfg(120), 3)));
}

#[test]
fn a_clone_ticks_the_same() {
    let mut a = Sim::new(cfg(16));
    a.tick();
    let mut b = a.clone();
    let (mut sa, mut sb) = (fresh(&a), fresh(&b));
    for _ in 0..20 {
        sa.apply(a.tick());
        sb.apply(b.tick());
    }
    assert_eq!(digest(&sa), digest(&sb));
    assert!(format!("{a:?}").contains("nodes: 16"));
}

fn check_planted(sim: &Sim, s: &ClusterState) {
    let p = sim.planted();
    let has = |pred: &dyn Fn(&crate::state::Incident) -> bool| s.incidents.iter().any(pred);
    let xid_node = p.xid_node.as_deref().expect("xid node");
    assert!(has(&|i| i.severity == Severity::Critical
        && i.title.contains("XID 79")
        && i.node.as_deref() == Some(xid_node)));
    let xn = s.node(xid_node).unwrap();
    assert!(matches!(xn.state, NodeState::Down | NodeState::Drained));
    let r = xn.reason.as_ref().expect("reason");
    assert!(!r.by.is_empty() && r.at < s.now);

    let dbe = s.node(p.dbe_node.as_deref().expect("dbe node")).unwrap();
    assert!(dbe.gpus[usize::from(p.dbe_gpu)].ecc.dbe > 0);
    assert!(has(&|i| i.severity == Severity::Critical
        && i.title.contains("XID 48")
        && i.node.as_deref() == Some(dbe.name.as_str())));

    let hot = format!("{}/gpu{}", p.hot_node, p.hot_gpu);
    assert!(has(&|i| i.subject == hot && i.title.contains("hot")), "no hot GPU");
    let hg = &s.node(&p.hot_node).unwrap().gpus[usize::from(p.hot_gpu)];
    assert!(hg.temp_c.unwrap() >= 88);

    let port = format!("{}/{}", p.flap_node, p.flap_port);
    assert!(has(&|i| i.subject == port), "no incident on the flapping port");
    let fp = s.node(&p.flap_node).unwrap().ports.iter().find(|x| x.name == p.flap_port).unwrap();
    assert!(fp.flaps >= 3 && fp.link_downed > 0);

    assert!(
        has(&|i| i.job == Some(p.idle_job)
            && i.title.contains("idle")
            && i.cost_per_hour.is_some_and(|c| c > 0.0)),
        "no idle-GPU incident for job {}",
        p.idle_job
    );
    let idle = s.job(p.idle_job).unwrap();
    assert_eq!(idle.state, JobState::Running);
    assert!(idle.start.unwrap() < sim.config().start - 600);

    let team = format!("team {}", p.over_quota_team);
    assert!(has(&|i| i.subject == team && i.title.contains("over quota")));
    let q = s.quotas.iter().find(|q| q.team == p.over_quota_team).unwrap();
    assert!(q.gpu_used > q.gpu_quota && q.borrowed > 0);

    let demo = s.job(p.demo_job).unwrap();
    assert_eq!(demo.user, "researcher");
    assert_eq!(demo.state, JobState::Pending);
    assert_eq!(demo.pending_reason.as_deref(), Some("Priority"));
    assert!(demo.rank.unwrap() > 1, "demo job rank {:?}", demo.rank);
    assert!(demo.est_start.unwrap() > s.now);
    assert_eq!(demo.queue, "h100");

    assert!(!p.drained_nodes.is_empty());
    for name in &p.drained_nodes {
        let n = s.node(name).unwrap();
        assert!(matches!(n.state, NodeState::Drained | NodeState::Cordoned), "{name}: {:?}", n.state);
        let r = n.reason.as_ref().expect("drain reason");
        assert!(!r.text.is_empty() && !r.by.is_empty() && r.at <= s.now);
    }
    let m = s.node(p.maintenance_node.as_deref().expect("maintenance node")).unwrap();
    assert_eq!(m.state, NodeState::Maintenance);
    assert!(s.storage.iter().any(|f| f.used_pct() >= 90));
}

#[test]
fn planted_problems_are_present_from_the_start() {
    let sim = Sim::new(cfg(16));
    let state = fresh(&sim);
    check_planted(&sim, &state);
    let (sim, state) = run_checked(cfg(16), 50);
    check_planted(&sim, &state);
    // The flapping port shows up as down at times, too.
    let mut sim = Sim::new(cfg(16));
    let mut state = fresh(&sim);
    let port = format!("{}/{}", sim.planted().flap_node, sim.planted().flap_port);
    let mut down = false;
    for _ in 0..12 {
        state.apply(sim.tick());
        down |= state.incidents.iter().any(|i| i.subject == port && i.severity == Severity::Critical);
    }
    assert!(down);
}

#[test]
fn default_layout_is_stable() {
    let sim = Sim::new(SimConfig::default());
    let p = sim.planted();
    assert_eq!(p.xid_node.as_deref(), Some("gpu-004"));
    assert_eq!(p.dbe_node.as_deref(), Some("gpu-007"));
    assert_eq!(p.drained_nodes, ["gpu-009", "gpu-010"]);
    assert_eq!(p.maintenance_node.as_deref(), Some("gpu-014"));
    assert_eq!((p.flap_node.as_str(), p.flap_port.as_str()), ("gpu-002", "mlx5_3/1"));
    assert_eq!((p.hot_node.as_str(), p.hot_gpu), ("gpu-005", 6));
    assert_eq!(p.idle_node, "gpu-006");
    assert_eq!(p.drift_nodes, ["gpu-003", "gpu-008"]);
}

#[test]
fn planted_problems_at_small_and_odd_sizes() {
    for (nodes, gpn) in [(4, 8), (5, 8), (6, 4), (8, 8), (12, 2), (9, 16), (4, 1), (7, 3), (20, 16)] {
        let c = SimConfig { nodes, gpus_per_node: gpn, ..SimConfig::default() };
        let (sim, state) = run_checked(c, 8);
        check_planted(&sim, &state);
        assert!(state.nodes.iter().all(|n| n.gpus.len() == usize::from(gpn)));
    }
    // Tiny clusters still run.
    for nodes in 1..4 {
        let (_, state) = run_checked(SimConfig { nodes, ..SimConfig::default() }, 5);
        assert_eq!(state.nodes.len(), nodes);
    }
}

#[test]
fn hardware_looks_real() {
    let state = state_after(cfg(16), 0);
    let h100 = &state.nodes[0];
    assert_eq!(h100.pool, "h100");
    assert_eq!(h100.gpu_model(), "NVIDIA H100 80GB HBM3");
    assert_eq!((h100.cpus_total, h100.mem_total_mib), (224, 2 * 1024 * 1024));
    assert_eq!(h100.labels.get("nvidia.com/gpu.product").map(|s| s.as_str()), Some("NVIDIA-H100-80GB-HBM3"));
    assert!(h100.labels.contains_key("topology.kubernetes.io/zone"));
    assert!(h100.gpus[0].uuid.starts_with("GPU-") && h100.gpus[0].uuid.len() == 40);
    let uuids: HashSet<_> = state.nodes.iter().flat_map(|n| n.gpus.iter().map(|g| g.uuid.clone())).collect();
    assert_eq!(uuids.len(), state.gpu_count());
    let topo = h100.topology.as_ref().unwrap();
    assert_eq!(topo.nvlink_islands().len(), 1);
    assert_eq!(topo.matrix[0][1], LinkKind::Nv(18));
    assert_eq!(topo.nics.len(), h100.ports.len());
    assert_eq!(topo.nics[0].to_gpu[..3], [LinkKind::Pix, LinkKind::Pix, LinkKind::Node]);
    assert_eq!(topo.nics[0].to_gpu[7], LinkKind::Sys);
    assert_eq!(topo.cpu_affinity[0], "0-55,112-167");
    // All nodes of a pool share one topology.
    assert!(std::sync::Arc::ptr_eq(topo, state.nodes[1].topology.as_ref().unwrap()));
    let a100 = state.nodes.iter().find(|n| n.pool == "a100").unwrap();
    let islands = a100.topology.as_ref().unwrap().nvlink_islands();
    assert_eq!(islands, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    assert_eq!(a100.topology.as_ref().unwrap().matrix[0][4], LinkKind::Sys);
    assert!(state.nodes.iter().any(|n| n.gpus.iter().any(|g| !g.mig.is_empty())), "no MIG GPU");
    let drivers: HashSet<_> = state.nodes.iter().filter_map(|n| n.driver.clone()).collect();
    assert_eq!(drivers.len(), 2);
    assert!(state.nodes.iter().all(|n| (4..=8).contains(&n.ports.len())));
    assert_eq!(state.storage.len(), 5);
    let queues: Vec<_> = state.queues.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(queues, ["h100", "h200", "a100", "debug"]);
    assert_eq!(state.quotas.len(), 5);
    // Every job state shows up in the history.
    for st in [JobState::Completed, JobState::Failed, JobState::Running, JobState::Pending] {
        let s = state_after(cfg(64), 0);
        assert!(s.jobs.iter().any(|j| j.state == st), "no {st:?} job");
    }
}

#[test]
fn explicit_job_count_is_kept() {
    let c = SimConfig { nodes: 32, jobs: 2_000, ..SimConfig::default() };
    let s = state_after(c, 2);
    assert!(s.jobs.len().abs_diff(2_000) < 20, "{} jobs", s.jobs.len());
    let finished = s.jobs.iter().filter(|j| !j.state.is_active()).count();
    assert!(finished > 1_800);
    assert!(s.jobs.iter().all(|j| j.id >= FIRST_JOB_ID));
    assert!(s.jobs.iter().any(|j| j.retries > 0));
    assert!(s.jobs.iter().any(|j| j.exit_reason.as_deref() == Some("OOM")));
    assert!(s.jobs.iter().any(|j| j.state == JobState::Timeout));
}

#[tokio::test]
async fn run_sends_initial_then_ticks_until_cancelled() {
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(run(cfg(8), tx, std::time::Duration::from_millis(1), cancel.clone()));
    assert!(matches!(rx.recv().await, Some(Update::Status(s)) if s.simulated && s.name == "sim"));
    assert!(matches!(rx.recv().await, Some(Update::Inventory { .. })));
    let mut last = 0;
    for _ in 0..3 {
        let Some(Update::Delta(d)) = rx.recv().await else { panic!("expected a delta") };
        assert!(d.at > last);
        last = d.at;
    }
    cancel.cancel();
    tokio::time::timeout(std::time::Duration::from_secs(5), task).await.unwrap().unwrap();
}

#[tokio::test]
async fn run_stops_when_the_receiver_is_gone() {
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(run(cfg(8), tx, std::time::Duration::from_millis(1), cancel));
    drop(rx);
    tokio::time::timeout(std::time::Duration::from_secs(5), task).await.unwrap().unwrap();
}

/// The full-size cluster.
#[test]
fn invariants_hold_at_full_scale() {
    let c = SimConfig { nodes: 10_000, jobs: 200_000, ..SimConfig::default() };
    let (sim, state) = run_checked(c, 3);
    check_planted(&sim, &state);
    assert_eq!(state.nodes[9_999].name, "gpu-10000");
    assert!(state.jobs.len().abs_diff(200_000) < 100, "{} jobs", state.jobs.len());
    let active = state.jobs.iter().filter(|j| j.state.is_active()).count();
    assert!(active < 20_000, "{active} active jobs");
}

/// Slurm semantics: draining a down node leaves it DOWN+DRAIN. It stays down with its
/// "Not responding" reason (who and since when too), its node-down incident stays but is
/// mitigated (no longer open: it pages nobody), its GPUs stay silent (no cooling to idle), a
/// second drain is a conflict, and only a resume brings it back.
#[test]
fn draining_a_down_node_keeps_it_down_with_its_reason() {
    let mut sim = Sim::new(cfg(16));
    let mut state = fresh(&sim);
    for _ in 0..3 {
        state.apply(sim.tick());
    }
    let name = sim.planted().xid_node.clone().expect("xid node");
    let node_down = |s: &ClusterState| {
        s.incidents
            .iter()
            // A cleared one stays listed a while as resolved; it has ended.
            .filter(|i| i.subject == name && i.title.starts_with("node down"))
            .filter(|i| !matches!(i.lifecycle, crate::state::Lifecycle::Resolved { .. }))
            .map(|i| (i.title.clone(), i.since))
            .next()
    };
    let before = state.node(&name).unwrap().clone();
    assert_eq!(before.state, NodeState::Down);
    let down_reason = before.reason.clone().expect("down reason");
    assert!(down_reason.text.starts_with("Not responding"), "{}", down_reason.text);
    let (title, since) = node_down(&state).expect("node-down incident before the drain");
    assert!(title.contains("Not responding"), "{title}");
    let temps: Vec<_> = before.gpus.iter().map(|g| g.temp_c).collect();

    sim.drain(&name, "RMA 4411", "alice").expect("drain a down node");
    for _ in 0..10 {
        state.apply(sim.tick());
        let n = state.node(&name).unwrap();
        assert_eq!(n.state, NodeState::DownDrain, "a drained down node stays down, drained too");
        assert_eq!(n.state.label(), "down+drain");
        let r = n.reason.as_ref().expect("reason kept");
        assert!(r.text.starts_with(down_reason.text.as_str()), "{}", r.text);
        assert!(r.text.contains("drain by alice: RMA 4411"), "{}", r.text);
        assert_eq!((r.by.as_str(), r.at), (down_reason.by.as_str(), down_reason.at));
        let (title, since2) = node_down(&state).expect("the node-down incident stays");
        assert!(title.contains("Not responding") && title.contains("RMA 4411"), "{title}");
        assert_eq!(since2, since);
        let i =
            state.incidents.iter().find(|i| i.subject == name && i.title.starts_with("node down")).unwrap();
        assert!(
            matches!(&i.lifecycle, crate::state::Lifecycle::Mitigated { how, .. } if how == "drained (down)"),
            "{:?}",
            i.lifecycle
        );
        assert!(!i.action.contains("drain it"), "{}", i.action);
        let now: Vec<_> = n.gpus.iter().map(|g| g.temp_c).collect();
        assert_eq!(now, temps, "a down node's GPUs report nothing, so nothing cools");
        check_invariants(&state);
    }
    let again = sim.drain(&name, "again", "bob").expect_err("drained twice");
    assert!(again.to_string().contains("down+drain"), "{again}");
    assert_eq!(sim.apply_op(crate::ops::ActionKind::Drain, &name, "x", "y").ok(), None);

    sim.resume(&name).expect("resume");
    state.apply(sim.tick());
    let n = state.node(&name).unwrap();
    assert!(n.state.schedulable(), "{:?}", n.state);
    assert!(node_down(&state).is_none(), "the node-down incident ends when the node is back");
    // Back in service, a drain is an ordinary drain again.
    sim.drain(&name, "after repair", "alice").expect("drain after resume");
    assert!(matches!(sim.node_state(&name), Some(NodeState::Drained | NodeState::Draining)));
}

#[test]
fn the_simulator_says_a_down_node_stays_down_when_drained() {
    let mut sim = Sim::new(cfg(16));
    let name = sim.planted().xid_node.clone().expect("xid node");
    let msg = sim.apply_op(crate::ops::ActionKind::Drain, &name, "RMA", "alice").expect("drain");
    assert_eq!(msg, format!("{name} down+drain (stays down)"));
    let other = sim.planted().hot_node.clone();
    let msg = sim.apply_op(crate::ops::ActionKind::Drain, &other, "hot", "alice").expect("drain");
    assert_eq!(msg, format!("{other} draining"));
}

/// The scheduler plans start times in queue order: along a queue, the estimates of the jobs
/// waiting for their turn or for GPUs never run backwards (the job ahead does not read
/// "unknown" while the one behind has a time), and jobs held or over quota get none.
#[test]
fn start_estimates_follow_the_queue_order() {
    let (sim, state) = run_checked(cfg(32), 40);
    let demo = sim.planted().demo_job;
    let mut by_queue: HashMap<&str, Vec<&crate::model::Job>> = HashMap::new();
    for j in state.jobs.iter().filter(|j| j.state == JobState::Pending && j.id != demo) {
        by_queue.entry(j.queue.as_str()).or_default().push(j);
    }
    let mut planned = 0;
    for (q, mut jobs) in by_queue {
        jobs.sort_by_key(|j| j.rank);
        let mut last: Option<Epoch> = None;
        for j in jobs {
            let reason = j.pending_reason.as_deref().unwrap_or("");
            match (reason, j.est_start) {
                ("Priority" | "Resources", Some(e)) => {
                    assert!(e > state.now, "job {}: an estimate in the past", j.id);
                    assert!(last.is_none_or(|l| l <= e), "{q}: job {} planned before the job ahead", j.id);
                    last = Some(e);
                    planned += 1;
                }
                ("Priority" | "Resources", None) => {
                    let in_service: u32 = state
                        .nodes
                        .iter()
                        .filter(|n| n.pool == q && n.state.schedulable())
                        .map(|n| n.gpu_slots)
                        .sum();
                    assert!(j.gpus > in_service, "{q}: job {} left unplanned though it fits", j.id);
                }
                (_, est) => assert_eq!(est, None, "job {} ({reason}) is not planned", j.id),
            }
        }
    }
    assert!(planned > 0, "some jobs have estimates");
}

/// The simulated controller drops finished jobs' records once they are handed out; the console
/// sees exactly what it saw while the controller kept them (dependencies on failed jobs,
/// trimming, cancels of finished jobs).
#[test]
fn forgetting_handed_out_jobs_changes_nothing_the_console_sees() {
    let c = SimConfig { nodes: 32, jobs: 2_000, ..SimConfig::default() };
    let mut keeps = Sim::new(c);
    let mut forgets = keeps.clone();
    let mut a = fresh(&keeps);
    let mut b = fresh(&forgets);
    forgets.handed_out();
    assert!(forgets.records_all_active(), "only active jobs' records are kept");
    assert!(forgets.records_kept() < keeps.records_kept() / 4);
    assert_eq!(forgets.jobs_known(), keeps.jobs_known());
    for _ in 0..400 {
        a.apply(keeps.tick());
        b.apply(forgets.tick());
    }
    assert_eq!(digest(&a), digest(&b));
    assert_eq!(forgets.jobs_known(), keeps.jobs_known());
    assert!(
        b.jobs.len().abs_diff(2_000) < 100,
        "{} jobs: the history is still trimmed to its target",
        b.jobs.len()
    );
    let done = b.jobs.iter().find(|j| j.state == JobState::Completed).expect("a completed job").id;
    let e = forgets.cancel(done).unwrap_err();
    assert!(e.to_string().contains("COMPLETED: there is nothing to cancel"), "{e}");
}

#[test]
fn each_fleet_cluster_s_acceptance_picture_is_its_own() {
    use crate::acceptance::store::tests::record;
    let (mut s, ..) = crate::testing::two_clusters(1);
    let cfg = crate::acceptance::JudgeConfig::default();
    let name = s.nodes.iter().find(|n| n.cluster == "lab").unwrap().name.to_string();
    let picture = |c: &str, bw: f64| {
        let mut r = record(c, &[name.as_str()], Some(bw));
        r.cluster = Some(c.to_string());
        Box::new(crate::acceptance::by_node(&[r], &cfg))
    };
    let wrap = |c: &str, u| Update::Cluster { cluster: c.into(), update: Box::new(u) };
    s.apply(wrap("prod-a", Update::Acceptance(picture("prod-a", 400.0))));
    s.apply(wrap("lab", Update::Acceptance(picture("lab", 300.0))));
    // Each cluster's ops task sends its own picture: the other cluster's stays.
    let bw = |s: &ClusterState, c: &str| {
        s.acceptance_of(s.node_in(&c.into(), &name).unwrap()).and_then(|a| a.last_busbw)
    };
    assert_eq!((bw(&s, "prod-a"), bw(&s, "lab")), (Some(400.0), Some(300.0)));
    s.apply(wrap("lab", Update::Acceptance(picture("lab", 250.0))));
    assert_eq!((bw(&s, "prod-a"), bw(&s, "lab")), (Some(400.0), Some(250.0)));
    assert_eq!(s.acceptance.len(), 2);
}
