//! A fleet's actions: every target goes to the cluster that owns it. In a fleet a target is
//! named with its cluster, `prod-a/gpu-003` (a node) or `prod-a/4242` (a job), so two
//! clusters' nodes of one name stay apart; a bare name is taken only when exactly one cluster
//! has it. The request is planned per cluster — with that cluster's planner (its capability
//! and permission preflight, its break-glass identity), its read-only flag and its blast-radius
//! limits — and shown as one plan, grouped by cluster. Each cluster's [`Part`] then runs on
//! that cluster's own ops task, through its own executor, and is audited under its name.
//!
//! A host that is a node of a Slurm cluster and of a Kubernetes cluster (`[[shared_hosts]]`)
//! is acted on in the schedulers the operator picks ([`Pick`]: both by default): a drain
//! drains it in Slurm and cordons and drains it in Kubernetes, each through its own cluster's
//! road. The plan names both; when either side is refused (read-only, permission), nothing of
//! the request is sent. Every part of one confirmed plan is audited under one op id.

use super::{ActionKind, OpError, OpMsg, OpRequest, Plan, PlanGroup, Planner, Refused, guard};
use crate::model::{JobId, NodeKey, Text};
use crate::state::{ClusterState, Scheduler};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One cluster of a fleet as the ops road sees it.
#[derive(Clone)]
pub struct Route {
    /// The planning side of the cluster's one executor.
    pub planner: Arc<dyn Planner>,
    /// Every write to this cluster is refused (the cluster's `readonly`, or the console's).
    pub readonly: bool,
    /// Where its confirmed plans go: its ops task (`None` where the caller runs the part
    /// itself, as a command does).
    pub tx: Option<tokio::sync::mpsc::UnboundedSender<OpMsg>>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("backend", &self.planner.backend())
            .field("readonly", &self.readonly)
            .finish()
    }
}

/// One cluster's share of a fleet plan: the request and plan its ops task runs, with its own
/// node names or job ids as targets.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub cluster: Text,
    pub req: OpRequest,
    pub plan: Plan,
}

/// Which schedulers an action on a paired host (`[[shared_hosts]]`) goes to. Targets of one
/// scheduler only are acted on where they are, whatever the pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pick {
    /// Both schedulers (the default): drain in Slurm, cordon and drain in Kubernetes.
    #[default]
    Both,
    Slurm,
    Kube,
}

impl Pick {
    pub fn label(self) -> &'static str {
        match self {
            Self::Both => "both",
            Self::Slurm => "slurm",
            Self::Kube => "kube",
        }
    }

    /// The next pick (the console's confirmation cycles through them).
    pub fn next(self) -> Pick {
        match self {
            Self::Both => Self::Slurm,
            Self::Slurm => Self::Kube,
            Self::Kube => Self::Both,
        }
    }

    /// Whether a paired host's node in scheduler `s` is acted on.
    pub fn takes(self, s: Scheduler) -> bool {
        matches!(
            (self, s),
            (Self::Both, _) | (Self::Slurm, Scheduler::Slurm) | (Self::Kube, Scheduler::Kubernetes)
        )
    }

    /// In words, for the plan: `in both schedulers`, `in Slurm only`.
    fn words(self) -> &'static str {
        match self {
            Self::Both => "in both schedulers",
            Self::Slurm => "in Slurm only",
            Self::Kube => "in Kubernetes only",
        }
    }
}

impl std::str::FromStr for Pick {
    type Err = String;
    fn from_str(v: &str) -> Result<Pick, String> {
        match v.trim().to_ascii_lowercase().as_str() {
            "both" => Ok(Self::Both),
            "slurm" => Ok(Self::Slurm),
            "kube" | "kubernetes" | "k8s" => Ok(Self::Kube),
            other => Err(format!("{other:?}: pick slurm, kube or both")),
        }
    }
}

/// What `kind` is in scheduler `s` when a paired host is its target: Slurm has no cordon, and
/// its drain is what stops new work there (running jobs finish), so a cordon is a Slurm drain
/// and an uncordon a Slurm resume. Kubernetes takes each as it is (its drain cordons first).
fn kind_in(kind: ActionKind, s: Scheduler) -> ActionKind {
    match (kind, s) {
        (ActionKind::Cordon, Scheduler::Slurm) => ActionKind::Drain,
        (ActionKind::Uncordon, Scheduler::Slurm) => ActionKind::Resume,
        _ => kind,
    }
}

/// Each resolved node target, with the twin a paired host adds (as `pick` wants), each with
/// the action it takes there; and one line per paired host for the plan.
type Expanded = (Vec<(Text, ActionKind, String)>, Vec<String>, Vec<(Text, String)>);

fn expand(kind: ActionKind, resolved: Vec<(Text, String)>, s: &ClusterState, pick: Pick) -> Expanded {
    let mut out = Vec::with_capacity(resolved.len());
    let mut notes = Vec::new();
    let mut paired = Vec::new();
    let node_action =
        matches!(kind, ActionKind::Cordon | ActionKind::Uncordon | ActionKind::Drain | ActionKind::Resume);
    for (c, name) in resolved {
        let key = NodeKey { cluster: c.clone(), name: Text::from(name.as_str()) };
        let sides = if node_action { s.schedulers_for(&key) } else { Vec::new() };
        let [(Some(a), ka), (Some(b), kb)] = sides.as_slice() else {
            out.push((c, kind, name));
            continue;
        };
        let mut said = Vec::new();
        for (sched, k) in [(*a, ka), (*b, kb)] {
            let q = qualify(&k.cluster, &k.name);
            if pick.takes(sched) {
                let act = kind_in(kind, sched);
                out.push((k.cluster.clone(), act, k.name.to_string()));
                paired.push((k.cluster.clone(), k.name.to_string()));
                said.push(format!("{} {q} ({})", sched.label(), act.label()));
            } else {
                said.push(format!("{} {q} (not picked)", sched.label()));
            }
        }
        let host = if *a == Scheduler::Slurm { &ka.name } else { &kb.name };
        let line = format!("host {host} is {}: {} {}", said.join(" and "), kind.label(), pick.words());
        if !notes.contains(&line) {
            notes.push(line);
        }
    }
    (out, notes, paired)
}

/// `prod-a/gpu-003` → `(Some("prod-a"), "gpu-003")`; `gpu-003` → `(None, "gpu-003")`.
pub fn split(target: &str) -> (Option<&str>, &str) {
    match target.split_once('/') {
        Some((c, name)) => (Some(c), name),
        None => (None, target),
    }
}

/// A target named with its cluster.
pub fn qualify(cluster: &str, name: &str) -> String {
    format!("{cluster}/{name}")
}

/// The cluster of each target, with the name its cluster knows it by. `cluster/name` names its
/// cluster (which must be one of `clusters`); a bare name must exist in exactly one cluster:
/// in none it is an error, in two or more an error listing each `cluster/name`.
pub fn resolve(
    kind: ActionKind,
    targets: &[String],
    s: &ClusterState,
    clusters: &[Text],
) -> Result<Vec<(Text, String)>, OpError> {
    let mut out = Vec::with_capacity(targets.len());
    let mut errors = Vec::new();
    for t in targets {
        let t = t.trim();
        match split(t) {
            (Some(c), name) => match clusters.iter().find(|k| k.as_str() == c) {
                Some(k) if !name.is_empty() => out.push((k.clone(), name.to_string())),
                Some(_) => errors.push(format!("{t:?}: no {} after the cluster", what(kind))),
                None => errors.push(format!(
                    "{t}: no cluster {c:?} here (clusters: {})",
                    clusters.iter().map(Text::as_str).collect::<Vec<_>>().join(", ")
                )),
            },
            (None, name) => {
                let has: Vec<&Text> = clusters.iter().filter(|c| exists(kind, s, c, name)).collect();
                match has.as_slice() {
                    [one] => out.push(((*one).clone(), name.to_string())),
                    [] => errors.push(format!("{} {name} is in no cluster of this fleet", what(kind))),
                    many => errors.push(format!(
                        "{} {name} is in {} clusters: name one of {}",
                        what(kind),
                        many.len(),
                        many.iter().map(|c| qualify(c, name)).collect::<Vec<_>>().join(", ")
                    )),
                }
            }
        }
    }
    if errors.is_empty() { Ok(out) } else { Err(OpError::Target(errors.join("; "))) }
}

fn what(kind: ActionKind) -> &'static str {
    if kind.on_jobs() { "job" } else { "node" }
}

fn exists(kind: ActionKind, s: &ClusterState, cluster: &Text, name: &str) -> bool {
    if kind.on_jobs() {
        name.parse::<JobId>().is_ok_and(|id| s.job_in(cluster, id).is_some())
    } else {
        s.node_in(cluster, name).is_some()
    }
}

/// What a fleet plan is checked against besides the state: each cluster's route, the
/// blast-radius limits (`[limits.clusters.NAME]` per cluster), and the nodes each cluster
/// drained in the last hour (from the audit log, by cluster name).
pub struct Checks<'a> {
    pub routes: &'a BTreeMap<Text, Route>,
    pub limits: &'a guard::GuardConfig,
    pub recent: &'a dyn Fn(&str) -> Vec<String>,
    /// During break-glass: checked as each cluster's elevated identity would be.
    pub elevated: bool,
    /// Which schedulers of a paired host to act in.
    pub pick: Pick,
}

/// Plans `req` (targets named as [`resolve`] takes them) across the fleet: one plan per
/// cluster, each preflighted by its own cluster; a cluster that refuses (read-only, no
/// permission, nothing left to do) has its targets listed as refused and the others run. Past
/// a blast-radius limit of any cluster without break-glass, the whole request is refused
/// (nothing is sent). A paired host (`[[shared_hosts]]`) adds its twin in the other scheduler
/// as `checks.pick` says; when either side refuses the action itself (read-only, permission,
/// no executor there), the plan has no steps and no parts, only that refusal. Returns the plan
/// to show (targets as `cluster/name`, grouped by cluster) and each cluster's part to run.
pub fn plan(req: &OpRequest, s: &ClusterState, checks: &Checks<'_>) -> Result<(Plan, Vec<Part>), OpError> {
    if req.targets.is_empty() {
        return Err(OpError::NoTargets(req.kind.label()));
    }
    let clusters: Vec<Text> = checks.routes.keys().cloned().collect();
    let resolved = resolve(req.kind, &req.targets, s, &clusters)?;
    let (targets, notes, paired) = expand(req.kind, resolved, s, checks.pick);
    // One part per cluster and action (a paired host's cordon is a drain in Slurm).
    let mut by: BTreeMap<(Text, ActionKind), Vec<String>> = BTreeMap::new();
    for (c, kind, name) in targets {
        let names = by.entry((c, kind)).or_default();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let mut parts = Vec::new();
    let mut refused = Vec::new();
    // The refusals of whole clusters, as their planners said them (with what to run instead).
    let mut whole: Vec<OpError> = Vec::new();
    for ((c, kind), names) in by {
        // A node of a paired host among this cluster's targets.
        let twin =
            names.iter().find(|n| paired.contains(&(c.clone(), n.to_string()))).map(|n| qualify(&c, n));
        let Some(route) = checks.routes.get(&c) else {
            // A paired host's twin in a cluster this fleet cannot act on: fail closed.
            if let Some(t) = twin {
                let why = format!("cluster {c} has no scheduler to act through here");
                return Ok(refused_whole(req.kind, t, &why, notes));
            }
            continue;
        };
        let sub = OpRequest { kind, targets: names.clone(), ..req.clone() };
        let planned =
            super::plan_batch_in(&sub, s, Some(&c), route.planner.as_ref(), route.readonly, checks.elevated)
                .and_then(|mut p| {
                    let limits = checks.limits.for_cluster(&c);
                    let recent = (checks.recent)(&c);
                    super::guard_plan_in(&mut p, s, Some(&c), &limits, &recent, checks.elevated).map(|()| p)
                });
        match planned {
            Ok(p) => parts.push(Part { cluster: c, req: sub, plan: p }),
            // Fail closed: past a limit, nothing of the request is sent.
            Err(e @ OpError::Limits(_)) => return Err(e),
            // A paired host whose one scheduler refuses the action itself (read-only, no
            // permission, no such action): neither scheduler gets it; the plan shows why,
            // with nothing to run (the operator may pick the other scheduler alone).
            Err(e @ (OpError::ReadOnly(_) | OpError::Preflight { .. })) if twin.is_some() => {
                let why = format!("{c} refuses: {e}");
                return Ok(refused_whole(req.kind, twin.unwrap_or_default(), &why, notes));
            }
            Err(e) => {
                refused.extend(names.iter().map(|n| Refused {
                    target: qualify(&c, n),
                    error: OpError::Target(format!("{}: {e}", qualify(&c, n))),
                }));
                whole.push(e);
            }
        }
    }
    // One cluster refuses all of it and says what to run there instead (Slurm 22.05's drain):
    // its own refusal, so the console can offer that.
    if parts.is_empty()
        && let [e @ OpError::Preflight { .. }] = whole.as_slice()
        && !e.instead().is_empty()
    {
        return Err(e.clone());
    }
    for p in &parts {
        refused.extend(p.plan.refused.iter().map(|r| Refused {
            target: qualify(&p.cluster, &r.target),
            error: OpError::Target(format!("{}: {}", p.cluster, r.error)),
        }));
    }
    if parts.is_empty() {
        return Err(match refused.as_slice() {
            [one] => one.error.clone(),
            many => OpError::Target(many.iter().map(Refused::message).collect::<Vec<_>>().join("; ")),
        });
    }
    let mut shown = merge(req.kind, &parts, refused, checks);
    shown.notes = notes;
    Ok((shown, parts))
}

/// A plan with nothing to run: one side of the paired host `target` refuses (`why`), so
/// neither scheduler gets anything.
fn refused_whole(kind: ActionKind, target: String, why: &str, notes: Vec<String>) -> (Plan, Vec<Part>) {
    let error = OpError::Target(format!(
        "{target} is one host in two schedulers and {why}; nothing will be sent to either \
         (pick one scheduler to act in the other alone)"
    ));
    let refused = vec![Refused { target, error }];
    (
        Plan { kind, steps: Vec::new(), refused, confirm_word: None, guard: None, groups: Vec::new(), notes },
        Vec::new(),
    )
}

/// The plan shown for confirmation: every part's steps under its cluster's line, targets as
/// `cluster/name`, every limit any part goes past (under break-glass).
fn merge(kind: ActionKind, parts: &[Part], refused: Vec<Refused>, checks: &Checks<'_>) -> Plan {
    let mut steps = Vec::new();
    let mut groups = Vec::new();
    let mut guarded: Option<super::Guarded> = None;
    for p in parts {
        let planner = &checks.routes[&p.cluster].planner;
        groups.push(PlanGroup {
            cluster: p.cluster.to_string(),
            backend: planner.backend().to_string(),
            identity: planner.identity(checks.elevated),
            steps: p.plan.steps.len(),
            action: (p.req.kind != kind).then(|| p.req.kind.label()),
        });
        steps.extend(
            p.plan
                .steps
                .iter()
                .map(|st| super::Step { target: qualify(&p.cluster, &st.target), ..st.clone() }),
        );
        if let Some(g) = p.plan.guard.as_deref() {
            let m = guarded.get_or_insert_with(|| super::Guarded {
                guard: g.guard.clone(),
                pools: BTreeMap::new(),
                exceeded: Vec::new(),
            });
            m.pools.extend(g.pools.iter().map(|(t, pool)| (qualify(&p.cluster, t), pool.clone())));
            m.exceeded.extend(g.exceeded.iter().cloned());
        }
    }
    let confirm_word = if steps.len() > 1 {
        Some(steps.len().to_string())
    } else if kind.destructive() || !refused.is_empty() {
        steps.first().map(|s| s.target.clone())
    } else {
        None
    };
    Plan { kind, steps, refused, confirm_word, guard: guarded.map(Box::new), groups, notes: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::sim::SimConfig;
    use crate::model::protocol::{Inventory, Update};
    use crate::model::{Node, NodeState};
    use crate::ops::SimPlanner;

    fn node(name: &str, state: NodeState) -> Node {
        let mut n =
            crate::testing::state_after(SimConfig { nodes: 1, ..SimConfig::default() }, 1).nodes.remove(0);
        (n.name, n.state, n.pool) = (name.into(), state, "gpu".into());
        n.gpus.iter_mut().for_each(|g| g.job = None);
        n
    }

    /// Two clusters, each with a `gpu-001`; only `b` has `gpu-002`.
    fn fleet() -> ClusterState {
        let mut s = ClusterState::default();
        add_clusters(
            &mut s,
            [
                ("a", vec![node("gpu-001", NodeState::Idle), node("gpu-009", NodeState::Idle)]),
                ("b", vec![node("gpu-001", NodeState::Idle), node("gpu-002", NodeState::Drained)]),
            ],
        );
        s
    }

    /// Each cluster's first inventory: its nodes.
    fn add_clusters<'a>(s: &mut ClusterState, clusters: impl IntoIterator<Item = (&'a str, Vec<Node>)>) {
        for (c, nodes) in clusters {
            s.apply(Update::Cluster {
                cluster: c.into(),
                update: Box::new(Update::Inventory {
                    at: 100,
                    inventory: Box::new(Inventory {
                        source: "sim".into(),
                        nodes: Some(nodes),
                        ..Default::default()
                    }),
                }),
            });
        }
    }

    fn routes(readonly_b: bool) -> BTreeMap<Text, Route> {
        let r = |readonly| Route { planner: Arc::new(SimPlanner::new("op")), readonly, tx: None };
        BTreeMap::from([(Text::from("a"), r(false)), (Text::from("b"), r(readonly_b))])
    }

    fn req(kind: ActionKind, targets: &[&str]) -> OpRequest {
        OpRequest {
            kind,
            targets: targets.iter().map(|t| t.to_string()).collect(),
            reason: "r".into(),
            ticket: None,
            dry_run: false,
        }
    }

    fn checks<'a>(routes: &'a BTreeMap<Text, Route>, limits: &'a guard::GuardConfig) -> Checks<'a> {
        Checks { routes, limits, recent: &|_| Vec::new(), elevated: false, pick: Pick::Both }
    }

    #[test]
    fn a_bare_name_in_two_clusters_is_an_error_naming_both() {
        let s = fleet();
        let clusters = [Text::from("a"), Text::from("b")];
        let e = resolve(ActionKind::Drain, &["gpu-001".into()], &s, &clusters).unwrap_err().to_string();
        assert!(e.contains("a/gpu-001") && e.contains("b/gpu-001"), "{e}");
        // A name only one cluster has is that cluster's; a qualified one is exact.
        let r = resolve(ActionKind::Drain, &["gpu-002".into(), "a/gpu-001".into()], &s, &clusters).unwrap();
        assert_eq!(r, vec![(Text::from("b"), "gpu-002".into()), (Text::from("a"), "gpu-001".into())]);
        let e = resolve(ActionKind::Drain, &["c/gpu-001".into()], &s, &clusters).unwrap_err().to_string();
        assert!(e.contains("no cluster \"c\""), "{e}");
        let e = resolve(ActionKind::Drain, &["gpu-404".into()], &s, &clusters).unwrap_err().to_string();
        assert!(e.contains("in no cluster"), "{e}");
    }

    #[test]
    fn the_plan_groups_targets_by_cluster_and_each_part_keeps_its_own_names() {
        let s = fleet();
        let (routes, limits) = (routes(false), guard::GuardConfig::default());
        let (shown, parts) = plan(
            &req(ActionKind::Drain, &["b/gpu-001", "a/gpu-001", "a/gpu-009"]),
            &s,
            &checks(&routes, &limits),
        )
        .unwrap();
        let targets: Vec<&str> = shown.steps.iter().map(|s| s.target.as_str()).collect();
        assert_eq!(targets, ["a/gpu-001", "a/gpu-009", "b/gpu-001"]);
        assert_eq!(parts.len(), 2);
        assert_eq!(
            (parts[0].cluster.as_str(), parts[0].req.targets.clone()),
            ("a", vec!["gpu-001".into(), "gpu-009".into()])
        );
        assert_eq!(parts[1].plan.steps[0].target, "gpu-001");
        let body = shown.body();
        assert_eq!(body[0], "on a (sim as sim:op): 2 target(s)");
        assert!(body.contains(&"on b (sim as sim:op): 1 target(s)".to_string()), "{body:?}");
        assert_eq!(shown.confirm_word.as_deref(), Some("3"));
    }

    #[test]
    fn read_only_and_state_refusals_are_per_cluster() {
        let s = fleet();
        let (routes, limits) = (routes(true), guard::GuardConfig::default());
        // b is read-only: its target is refused, a's runs.
        let (shown, parts) =
            plan(&req(ActionKind::Drain, &["a/gpu-001", "b/gpu-001"]), &s, &checks(&routes, &limits))
                .unwrap();
        assert_eq!(parts.iter().map(|p| p.cluster.as_str()).collect::<Vec<_>>(), ["a"]);
        assert_eq!(shown.refused.len(), 1);
        assert_eq!(shown.refused[0].target, "b/gpu-001");
        assert!(
            shown.refused[0].message().starts_with("b/gpu-001: read-only"),
            "{}",
            shown.refused[0].message()
        );
        // Only b's: nothing left to run.
        let e = plan(&req(ActionKind::Drain, &["b/gpu-001"]), &s, &checks(&routes, &limits)).unwrap_err();
        assert!(e.to_string().contains("read-only"), "{e}");
        // b/gpu-002 is drained already: b refuses it, a's same-named node is not involved.
        let routes = self::routes(false);
        let (shown, _) =
            plan(&req(ActionKind::Drain, &["b/gpu-002", "a/gpu-001"]), &s, &checks(&routes, &limits))
                .unwrap();
        assert_eq!(shown.refused[0].target, "b/gpu-002");
    }

    #[test]
    fn blast_radius_limits_count_each_cluster_alone() {
        let s = fleet();
        let routes = routes(false);
        // At most one node out per cluster: b has one out already (gpu-002 drained).
        let limits = guard::GuardConfig { max_out_nodes: Some(1), ..Default::default() };
        let e = plan(&req(ActionKind::Drain, &["b/gpu-001"]), &s, &checks(&routes, &limits)).unwrap_err();
        assert!(e.to_string().contains("cluster b"), "{e}");
        // a has none out: draining one of a's is within a's limit, whatever b has out.
        assert!(plan(&req(ActionKind::Drain, &["a/gpu-001"]), &s, &checks(&routes, &limits)).is_ok());
        // The last hour's drains are counted per cluster too.
        let limits = guard::GuardConfig { max_drains_per_hour: Some(1), ..Default::default() };
        let recent = |c: &str| if c == "b" { vec!["gpu-009".to_string()] } else { Vec::new() };
        let ck =
            Checks { routes: &routes, limits: &limits, recent: &recent, elevated: false, pick: Pick::Both };
        assert!(plan(&req(ActionKind::Drain, &["a/gpu-001"]), &s, &ck).is_ok());
        assert!(matches!(plan(&req(ActionKind::Drain, &["b/gpu-001"]), &s, &ck), Err(OpError::Limits(_))));
    }

    /// `a` (Slurm) and `k` (Kubernetes) share the host `gpu-001` (`gpu-001.x` in `k`); `a`
    /// also has `gpu-009`, a host of its own.
    fn shared() -> ClusterState {
        let mut s = ClusterState::default();
        s.set_host_pairs(vec![crate::state::HostPairing {
            slurm: "a".into(),
            kube: "k".into(),
            kube_suffix: ".x".into(),
            ..Default::default()
        }]);
        add_clusters(
            &mut s,
            [
                ("a", vec![node("gpu-001", NodeState::Idle), node("gpu-009", NodeState::Idle)]),
                ("k", vec![node("gpu-001.x", NodeState::Idle)]),
            ],
        );
        s
    }

    fn shared_routes(readonly_k: bool) -> BTreeMap<Text, Route> {
        let r = |readonly| Route { planner: Arc::new(SimPlanner::new("op")), readonly, tx: None };
        BTreeMap::from([(Text::from("a"), r(false)), (Text::from("k"), r(readonly_k))])
    }

    fn parts_of(parts: &[Part]) -> Vec<(&str, &str, Vec<String>)> {
        parts.iter().map(|p| (p.cluster.as_str(), p.req.kind.label(), p.req.targets.clone())).collect()
    }

    #[test]
    fn a_paired_host_is_acted_on_in_the_schedulers_picked() {
        let s = shared();
        let (routes, limits) = (shared_routes(false), guard::GuardConfig::default());
        let with = |pick| Checks { pick, ..checks(&routes, &limits) };
        // Named by either of its nodes, a drain goes to both schedulers, each its own node.
        for t in ["a/gpu-001", "k/gpu-001.x"] {
            let (shown, parts) = plan(&req(ActionKind::Drain, &[t]), &s, &with(Pick::Both)).unwrap();
            assert_eq!(
                parts_of(&parts),
                [("a", "drain", vec!["gpu-001".to_string()]), ("k", "drain", vec!["gpu-001.x".to_string()])],
                "{t}"
            );
            assert_eq!(
                shown.notes,
                [
                    "host gpu-001 is Slurm a/gpu-001 (drain) and Kubernetes k/gpu-001.x (drain): drain in both schedulers"
                ]
            );
            assert_eq!(shown.body()[0], shown.notes[0]);
        }
        // One scheduler only: the other is named as not picked and gets nothing.
        let (shown, parts) = plan(&req(ActionKind::Drain, &["a/gpu-001"]), &s, &with(Pick::Kube)).unwrap();
        assert_eq!(parts_of(&parts), [("k", "drain", vec!["gpu-001.x".to_string()])]);
        assert!(shown.notes[0].contains("Slurm a/gpu-001 (not picked)"), "{:?}", shown.notes);
        let (_, parts) = plan(&req(ActionKind::Drain, &["k/gpu-001.x"]), &s, &with(Pick::Slurm)).unwrap();
        assert_eq!(parts_of(&parts), [("a", "drain", vec!["gpu-001".to_string()])]);
        // A host of one scheduler is acted on where it is, whatever the pick.
        let (shown, parts) = plan(&req(ActionKind::Drain, &["a/gpu-009"]), &s, &with(Pick::Kube)).unwrap();
        assert_eq!(parts_of(&parts), [("a", "drain", vec!["gpu-009".to_string()])]);
        assert!(shown.notes.is_empty());
        // Slurm has no cordon: a paired host's cordon is a drain there (no new jobs, running
        // ones finish), said on its cluster's line and its step.
        let (shown, parts) = plan(&req(ActionKind::Cordon, &["a/gpu-001"]), &s, &with(Pick::Both)).unwrap();
        assert_eq!(
            parts_of(&parts),
            [("a", "drain", vec!["gpu-001".to_string()]), ("k", "cordon", vec!["gpu-001.x".to_string()])]
        );
        let body = shown.body();
        assert!(body.contains(&"on a (sim as sim:op): 1 target(s), drain".to_string()), "{body:?}");
        assert!(body.iter().any(|l| l.starts_with("drain a/gpu-001: ")), "{body:?}");
        assert!(body.iter().any(|l| l.starts_with("cordon k/gpu-001.x: ")), "{body:?}");
    }

    #[test]
    fn a_paired_host_one_scheduler_refuses_gets_nothing_in_either() {
        let s = shared();
        let (routes, limits) = (shared_routes(true), guard::GuardConfig::default());
        let with = |pick| Checks { pick, ..checks(&routes, &limits) };
        // k is read-only: the host's drain is refused whole, naming why, with nothing to run
        // (a's own host would have run).
        let (shown, parts) =
            plan(&req(ActionKind::Drain, &["a/gpu-001", "a/gpu-009"]), &s, &with(Pick::Both)).unwrap();
        assert!(parts.is_empty() && shown.steps.is_empty());
        let e = shown.refused_line().unwrap();
        assert!(
            e.contains("k/gpu-001.x")
                && e.contains("read-only")
                && e.contains("nothing will be sent to either"),
            "{e}"
        );
        // Picking Slurm alone leaves the read-only side out: it runs.
        let (_, parts) = plan(&req(ActionKind::Drain, &["a/gpu-001"]), &s, &with(Pick::Slurm)).unwrap();
        assert_eq!(parts_of(&parts), [("a", "drain", vec!["gpu-001".to_string()])]);
        // A twin's cluster this fleet has no executor for: refused whole too.
        let only_a: BTreeMap<Text, Route> =
            shared_routes(false).into_iter().filter(|(c, _)| c == "a").collect();
        let ck = Checks {
            routes: &only_a,
            limits: &limits,
            recent: &|_| Vec::new(),
            elevated: false,
            pick: Pick::Both,
        };
        let (shown, parts) = plan(&req(ActionKind::Drain, &["a/gpu-001"]), &s, &ck).unwrap();
        assert!(parts.is_empty() && shown.steps.is_empty());
        let e = shown.refused[0].message();
        assert!(e.contains("k/gpu-001.x") && e.contains("no scheduler to act through"), "{e}");
        assert_eq!("kubernetes".parse::<Pick>(), Ok(Pick::Kube));
        assert!("lsf".parse::<Pick>().is_err());
    }
}
