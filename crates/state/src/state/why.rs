//! Why a pending job waits, in the words a researcher asks for, from what the state knows: the
//! real blocking cause when the data names one (the team is under quota while another team
//! borrows the GPUs, the queue is short of nodes that are down, drained or in maintenance, the
//! node it needs is down), why there is no start estimate when the scheduler gives none, and
//! what could help — only when the data supports it, never invented.

use super::ClusterState;
use crate::clock::dur;
use crate::model::{Job, JobState, Node, NodeState, Queue, Text, pending_reason_text};

/// The explanation of one pending job.
#[derive(
    Debug, Clone, Default, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
pub struct Wait {
    /// What blocks it, most telling first; the scheduler's reason in plain language when the
    /// state knows nothing more.
    pub causes: Vec<String>,
    /// Why there is no start estimate (set only when the scheduler gives none).
    pub no_estimate: Option<String>,
    /// What could help, when the data supports it.
    pub hints: Vec<String>,
}

impl Wait {
    /// The most telling cause.
    pub fn cause(&self) -> &str {
        self.causes.first().map_or("", String::as_str)
    }
}

/// Reasons that say the job waits for capacity (its turn, or GPUs to free up).
fn waits_for_capacity(reason: &str) -> bool {
    matches!(reason, "Priority" | "Resources" | "InsufficientQuota" | "None" | "WaitingForScheduling")
}

fn is_quota(reason: &str) -> bool {
    matches!(reason, "QOSGrpGRES" | "AssocGrpGRES")
}

/// Whether a node of the state belongs to `queue` (Slurm: one of its partitions).
fn in_queue(n: &Node, queue: &str) -> bool {
    n.pool.split(',').any(|p| p.trim() == queue)
}

fn out_of_service(st: NodeState) -> bool {
    !st.schedulable()
}

/// GPUs per node of a queue, from its declared capacity.
fn gpus_per_node(q: &Queue) -> Option<u32> {
    (q.nodes > 0 && q.gpus > 0).then(|| q.gpus.div_ceil(q.nodes))
}

/// `gpu-004 down, gpu-009 drained, gpu-014 maint` (at most `max`, then `+N more`).
fn name_nodes(nodes: &[&Node], max: usize) -> String {
    let mut parts: Vec<String> = nodes
        .iter()
        .take(max)
        .map(|n| format!("{} {}", crate::sanitize::sanitize(&n.name), n.state.label()))
        .collect();
    if nodes.len() > max {
        parts.push(format!("+{} more", nodes.len() - max));
    }
    parts.join(", ")
}

/// The nodes of `queue` that are out of service (down, drained, draining, cordoned, in
/// maintenance), and how many nodes the queue has in all (as the state sees them).
pub fn queue_out_of_service<'a>(s: &'a ClusterState, queue: &str) -> (Vec<&'a Node>, usize) {
    queue_out_of_service_in(s, None, queue)
}

/// [`queue_out_of_service`] of one cluster's queue (`cluster` as objects carry it), or of
/// every cluster's queue of that name (`None`).
pub fn queue_out_of_service_in<'a>(
    s: &'a ClusterState,
    cluster: Option<&Text>,
    queue: &str,
) -> (Vec<&'a Node>, usize) {
    let mut total = 0;
    let mut out = Vec::new();
    for n in s.nodes.iter().filter(|n| in_queue(n, queue) && cluster.is_none_or(|c| n.cluster == *c)) {
        total += 1;
        if out_of_service(n.state) {
            out.push(n);
        }
    }
    (out, total)
}

/// GPUs free right now on the in-service nodes of `queue`.
fn free_gpus(s: &ClusterState, cluster: &Text, queue: &str) -> u32 {
    s.nodes
        .iter()
        .filter(|n| n.cluster == *cluster && in_queue(n, queue) && n.state.schedulable())
        .map(|n| n.gpu_slots.saturating_sub(n.gpu_alloc))
        .fold(0, u32::saturating_add)
}

/// The pending jobs of `j`'s queue ranked ahead of it, in queue order.
fn ahead<'a>(s: &'a ClusterState, j: &Job) -> Vec<&'a Job> {
    let Some(rank) = j.rank else { return Vec::new() };
    let mut v: Vec<&Job> = s
        .active
        .keys()
        .filter(|(c, _)| *c == j.cluster)
        .filter_map(|(c, id)| s.job_in(c, *id))
        .filter(|o| o.state == JobState::Pending && o.queue == j.queue && o.rank.is_some_and(|r| r < rank))
        .collect();
    v.sort_by_key(|o| (o.rank, o.id));
    v
}

fn nodes_needed(gpus: u32, gpn: Option<u32>) -> String {
    match gpn {
        Some(g) if gpus > g => format!("{} nodes ({gpus} GPUs)", gpus.div_ceil(g)),
        _ => format!("{gpus} GPUs"),
    }
}

/// The running jobs with no time limit that keep `j` from starting: on the nodes it can use
/// (those it asks for, else its queue's nodes in service), the GPUs free now and those held by
/// jobs that end by their limit (or whose limit is unknown) are fewer than it needs, so it
/// waits for a job that may never end and no start can be estimated. Empty when the jobs that
/// will end can make room, or when no job without a limit holds anything there.
fn held_without_limit<'a>(s: &'a ClusterState, j: &Job) -> Vec<&'a Job> {
    let usable: Vec<&Node> = if j.nodes.is_empty() {
        s.nodes.iter().filter(|n| n.cluster == j.cluster && in_queue(n, &j.queue)).collect()
    } else {
        j.nodes.iter().filter_map(|n| s.node_in(&j.cluster, n)).collect()
    };
    let usable: Vec<&Node> = usable.into_iter().filter(|n| n.state.schedulable()).collect();
    if usable.is_empty() || j.gpus == 0 {
        return Vec::new();
    }
    let on = |name: &Text| usable.iter().any(|n| n.name == *name);
    let free = usable.iter().map(|n| n.gpu_slots.saturating_sub(n.gpu_alloc)).fold(0, u32::saturating_add);
    let mut ending = 0u32;
    let mut forever: Vec<&Job> = Vec::new();
    for r in s.active.keys().filter(|(c, _)| *c == j.cluster).filter_map(|(c, id)| s.job_in(c, *id)) {
        let here = r.nodes.iter().filter(|n| on(n)).count();
        if r.state != JobState::Running || here == 0 || r.gpus == 0 {
            continue;
        }
        // Its GPUs on these nodes (spread evenly over its nodes).
        let held =
            (u64::from(r.gpus) * here as u64 / r.nodes.len().max(1) as u64).min(u64::from(u32::MAX)) as u32;
        if r.no_time_limit {
            forever.push(r);
        } else {
            ending = ending.saturating_add(held);
        }
    }
    if forever.is_empty() || free.saturating_add(ending) >= j.gpus {
        return Vec::new();
    }
    forever.sort_by_key(|r| r.id);
    forever
}

/// `job 123` / `jobs 123, 124` / `jobs 1, 2, 3 and 4 more`.
fn name_jobs(jobs: &[&Job]) -> String {
    let ids: Vec<String> = jobs.iter().take(3).map(|r| r.id.to_string()).collect();
    let more = if jobs.len() > 3 { format!(" and {} more", jobs.len() - 3) } else { String::new() };
    let what = if jobs.len() == 1 { "job" } else { "jobs" };
    format!("{what} {}{more}", ids.join(", "))
}

/// The per-user QOS limit that holds `j` (the backend's `qos:NAME/USER` quota of its user
/// whose pending GPUs include it; the one it goes past first).
fn per_user_limit<'a>(s: &'a ClusterState, j: &Job) -> Option<&'a crate::model::Quota> {
    let suffix = format!("/{}", j.user);
    s.quotas
        .iter()
        .filter(|q| q.cluster == j.cluster && q.team.starts_with("qos:") && q.team.ends_with(suffix.as_str()))
        .filter(|q| q.gpu_pending >= j.gpus)
        .min_by_key(|q| (q.gpu_quota.saturating_sub(q.gpu_used) >= j.gpus, q.gpu_quota))
}

/// Explains a pending job; `None` for a job that does not pend. `viewer` is the user looking:
/// their own team is "your team".
pub fn explain(s: &ClusterState, j: &Job, viewer: &str) -> Option<Wait> {
    if j.state != JobState::Pending {
        return None;
    }
    let reason = j.pending_reason.as_deref().unwrap_or("None");
    let queue = s.queues.iter().find(|q| q.name == j.queue);
    let gpn = queue.and_then(gpus_per_node);
    let team = crate::sanitize::sanitize(&j.account);
    let whose = if j.user == viewer { "your team".to_string() } else { format!("team {team}") };
    let quota = s.quotas.iter().find(|q| q.team == j.account && q.cluster == j.cluster);
    let (down, total) = queue_out_of_service_in(s, Some(&j.cluster), &j.queue);
    let qname = crate::sanitize::sanitize(&j.queue);
    let mut w = Wait::default();

    // The causes.
    if matches!(reason, "ReqNodeNotAvail" | "NodeDown") {
        let needed: Vec<&Node> = j
            .nodes
            .iter()
            .filter_map(|n| s.node_in(&j.cluster, n))
            .filter(|n| out_of_service(n.state))
            .collect();
        for n in &needed {
            let why = n
                .reason
                .as_ref()
                .map(|r| format!(": {}", crate::sanitize::sanitize(&r.text)))
                .unwrap_or_default();
            w.causes.push(format!(
                "it needs {}, which is {}{why}",
                crate::sanitize::sanitize(&n.name),
                n.state.label()
            ));
        }
    }
    if reason == "QOSMaxGRESPerUser"
        && let Some(q) = per_user_limit(s, j)
    {
        let qos = q.team.strip_prefix("qos:").and_then(|t| t.rsplit_once('/')).map_or("", |(q, _)| q);
        let qos = crate::sanitize::sanitize(qos);
        let you = if j.user == viewer {
            "you".to_string()
        } else {
            crate::sanitize::sanitize(&j.user).into_owned()
        };
        if j.gpus > q.gpu_quota {
            w.causes.push(format!(
                "it asks for {} GPUs and QOS {qos} allows {} per user: it can never start as it is",
                j.gpus, q.gpu_quota
            ));
            w.hints.push(format!(
                "resubmit it asking for {} GPUs or fewer, or under a QOS that allows {}",
                q.gpu_quota, j.gpus
            ));
        } else {
            w.causes.push(format!(
                "{you} use {} of the {} GPUs QOS {qos} allows per user; its {} GPUs wait until that use falls to {}",
                q.gpu_used,
                q.gpu_quota,
                j.gpus,
                q.gpu_quota - j.gpus
            ));
        }
    }
    if is_quota(reason)
        && let Some(q) = quota
    {
        let borrowed = if q.borrowed > 0 { format!(" ({} borrowed)", q.borrowed) } else { String::new() };
        w.causes.push(format!(
            "{whose} uses {} GPUs of its {}-GPU quota{borrowed}; these {} GPUs wait until its use falls",
            q.gpu_used, q.gpu_quota, j.gpus
        ));
    }
    if waits_for_capacity(reason) {
        // GPUs held by jobs that may never end block it whatever else is short: said first.
        let forever = held_without_limit(s, j);
        if !forever.is_empty() {
            let have = if forever.len() == 1 { "has" } else { "have" };
            w.causes.push(format!(
                "waits for GPUs held by {} that {have} no time limit: no start can be estimated",
                name_jobs(&forever)
            ));
        }
        if let Some(q) = quota.filter(|q| q.gpu_used.saturating_add(j.gpus) <= q.gpu_quota) {
            // Teams over their quota that run in this queue hold GPUs lent by the others.
            let mut lenders: Vec<(String, u32)> =
                s.quotas
                    .iter()
                    .filter(|o| o.cluster == j.cluster && o.team != j.account && o.borrowed > 0)
                    .filter(|o| {
                        s.active.keys().filter_map(|(c, id)| s.job_in(c, *id)).any(|r| {
                            r.account == o.team && r.queue == j.queue && r.state == JobState::Running
                        })
                    })
                    .map(|o| (crate::sanitize::sanitize(&o.team).into_owned(), o.borrowed))
                    .collect();
            lenders.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            if !lenders.is_empty() {
                let names: Vec<String> =
                    lenders.iter().take(2).map(|(t, n)| format!("{t} ({n} borrowed)")).collect();
                w.causes.push(format!(
                    "{whose} is under quota ({} of {} GPUs in use); GPUs are lent to {} until reclaimed",
                    q.gpu_used,
                    q.gpu_quota,
                    names.join(" and ")
                ));
            }
        }
        if !down.is_empty() {
            w.causes.push(format!(
                "{qname} is short of {} of its {total} nodes: {}",
                down.len(),
                name_nodes(&down, 3)
            ));
        }
        let before = ahead(s, j);
        if reason == "Priority" && !before.is_empty() {
            let gpus = before.iter().map(|o| o.gpus).fold(0u32, u32::saturating_add);
            let n = before.len();
            let (jobs, ask) = if n == 1 { ("job", "asks") } else { ("jobs", "ask") };
            w.causes.push(format!("{n} {jobs} ahead of it in {qname} {ask} for {gpus} GPUs"));
        }
        if reason == "Resources" {
            w.causes.push(format!(
                "it waits for {} to free up in {qname} ({} free now)",
                nodes_needed(j.gpus, gpn),
                free_gpus(s, &j.cluster, &j.queue)
            ));
        }
    }
    if w.causes.is_empty() {
        w.causes.push(pending_reason_text(reason).to_string());
    }

    // Why no estimate.
    if j.est_start.is_none() {
        w.no_estimate = Some(format!("no estimate: {}", no_estimate(s, j, reason, gpn, &down, total)));
    }

    // What could help.
    if waits_for_capacity(reason) {
        w.hints.extend(other_queue(s, j, queue));
        let free = free_gpus(s, &j.cluster, &j.queue);
        if free > 0 && free < j.gpus {
            let are = if free == 1 { "GPU is" } else { "GPUs are" };
            w.hints.push(format!(
                "{free} {are} free in {qname} now: a job asking for {free} or fewer could start sooner (backfill)"
            ));
        }
    }
    Some(w)
}

fn no_estimate(
    s: &ClusterState,
    j: &Job,
    reason: &str,
    gpn: Option<u32>,
    down: &[&Node],
    total: usize,
) -> String {
    match reason {
        "JobHeldUser" | "JobHeldAdmin" => return "it is held; it is planned once released".into(),
        "QOSMaxGRESPerUser" => {
            return match per_user_limit(s, j) {
                Some(q) if j.gpus > q.gpu_quota => "it cannot start as it is".into(),
                _ => "it is planned once the user's GPUs under its QOS fall below the limit".into(),
            };
        }
        "Dependency" => return "it is planned once its dependency finishes".into(),
        "BeginTime" => return "it is not planned before its begin time".into(),
        "DependencyNeverSatisfied"
        | "BadConstraints"
        | "InvalidAccount"
        | "InvalidQOS"
        | "QOSNotAllowed"
        | "PartitionTimeLimit"
        | "QOSMaxGRESPerJob"
        | "AssocMaxGRESPerJob" => {
            return "it cannot start as it is".into();
        }
        "PartitionDown" | "PartitionInactive" => return "the queue is down".into(),
        r if is_quota(r) => return "the team's quota is full; it is planned once its use falls".into(),
        "ReqNodeNotAvail" | "NodeDown" => return "a node it needs is out of service".into(),
        _ => {}
    }
    if waits_for_capacity(reason) {
        let forever = held_without_limit(s, j);
        if !forever.is_empty() {
            return format!("its GPUs are held by {} with no time limit", name_jobs(&forever));
        }
    }
    // Behind a job the scheduler cannot plan either: it cannot plan past it.
    let before = ahead(s, j);
    if let Some(b) = before
        .iter()
        .find(|o| o.est_start.is_none() && waits_for_capacity(o.pending_reason.as_deref().unwrap_or("None")))
    {
        return format!(
            "behind job {} that needs {} and has no estimate itself",
            b.id,
            nodes_needed(b.gpus, gpn)
        );
    }
    let in_service = total.saturating_sub(down.len()) as u32;
    if let Some(g) = gpn
        && total > 0
        && j.gpus > in_service.saturating_mul(g)
    {
        return format!(
            "it needs {} and {} has {in_service} in service",
            nodes_needed(j.gpus, gpn),
            crate::sanitize::sanitize(&j.queue)
        );
    }
    "the scheduler has not planned it yet".into()
}

/// A queue with the same GPU model, room for the job and a shorter typical wait.
fn other_queue(s: &ClusterState, j: &Job, here: Option<&Queue>) -> Option<String> {
    let model = j.gpu_model.as_deref()?;
    let model_of = |q: &str| {
        let mut models =
            s.nodes.iter().filter(|n| n.cluster == j.cluster && in_queue(n, q)).map(|n| n.gpu_model());
        let first = models.next()?;
        models.all(|m| m == first).then_some(first)
    };
    let wait = |q: &str| s.queue_stats.iter().find(|x| x.name == q).and_then(|x| x.wait_p50_s);
    let here_wait = wait(&here?.name)?;
    let best = s
        .queues
        .iter()
        .filter(|q| {
            q.cluster == j.cluster
                && q.name != j.queue
                && q.up
                && q.gpus >= j.gpus
                && model_of(&q.name) == Some(model)
        })
        .filter_map(|q| Some((q, wait(&q.name)?)))
        .filter(|&(_, w)| w < here_wait)
        .min_by_key(|&(q, w)| (w, q.name.clone()))?;
    let (q, w) = best;
    let limit = q.max_time_s.map(|m| format!(", up to {} per job", dur(m))).unwrap_or_default();
    Some(format!(
        "queue {} has the same {} GPUs and a shorter typical wait (p50 {} vs {}{limit})",
        crate::sanitize::sanitize(&q.name),
        crate::sanitize::sanitize(model),
        dur(w),
        dur(here_wait)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::sim::SimConfig;
    use crate::model::JobId;
    use crate::model::protocol::{Inventory, Update};

    /// The researcher's planted pending job in the simulator.
    const DEMO: &str = "llama3-8b-ablation";

    /// The simulator's default cluster 30 ticks in (the snapshots' cluster).
    fn sim_state() -> ClusterState {
        crate::testing::state_after(SimConfig::default(), 30)
    }

    /// `s` rebuilt from its data after `change`, as a backend's next inventory would bring it.
    fn changed(s: &ClusterState, change: impl FnOnce(&mut Inventory)) -> ClusterState {
        let mut inv = Inventory {
            source: "x".into(),
            cluster: Some(s.cluster.clone()),
            nodes: Some(s.nodes.clone()),
            jobs: Some(s.jobs.clone()),
            queues: Some(s.queues.clone()),
            quotas: Some(s.quotas.clone()),
            storage: Some(s.storage.clone()),
        };
        change(&mut inv);
        let mut fresh = ClusterState::new(s.prices.clone(), s.thresholds.clone());
        fresh.apply(Update::Inventory { at: s.now, inventory: Box::new(inv) });
        fresh
    }

    fn job_named<'a>(s: &'a ClusterState, name: &str) -> &'a Job {
        s.jobs.iter().find(|j| j.name == name && j.state == JobState::Pending).expect(name)
    }

    /// The GPUs a pending job waits for are held by running jobs without a time limit: that is
    /// the lead cause (before the queue's drained and down nodes), and why there is no
    /// estimate. When jobs that end by their limit can make room, it is not said.
    #[test]
    fn gpus_held_by_jobs_without_a_time_limit_lead_the_why() {
        let s = sim_state();
        let demo = job_named(&s, DEMO).clone();
        // The queue's nodes in service: what the job can start on.
        let queue_nodes: Vec<Text> = s
            .nodes
            .iter()
            .filter(|n| in_queue(n, &demo.queue) && n.state.schedulable())
            .map(|n| n.name.clone())
            .collect();
        let (down, _) = queue_out_of_service(&s, &demo.queue);
        assert!(!down.is_empty(), "the queue has nodes out of service");
        let holders: Vec<JobId> = {
            let mut v: Vec<JobId> = s
                .jobs
                .iter()
                .filter(|r| r.state == JobState::Running && r.nodes.iter().any(|n| queue_nodes.contains(n)))
                .map(|r| r.id)
                .collect();
            v.sort();
            v
        };
        assert!(holders.len() > 3, "{holders:?}");
        // Every running job there without a limit, every GPU there taken; the demo job waits
        // for its turn (no estimate).
        let full = |unlimited: &dyn Fn(JobId) -> bool| {
            changed(&s, |inv| {
                for n in inv.nodes.as_mut().unwrap().iter_mut().filter(|n| queue_nodes.contains(&n.name)) {
                    n.gpu_alloc = n.gpu_slots;
                }
                for j in inv.jobs.as_mut().unwrap() {
                    if holders.contains(&j.id) {
                        j.no_time_limit = unlimited(j.id);
                        j.time_limit = (!j.no_time_limit).then_some(3_600);
                    }
                    if j.id == demo.id {
                        (j.pending_reason, j.est_start) = (Some("Resources".into()), None);
                    }
                }
            })
        };
        let s1 = full(&|_| true);
        let w = explain(&s1, s1.job(demo.id).unwrap(), &demo.user).unwrap();
        let ids: Vec<String> = holders.iter().take(3).map(|i| i.to_string()).collect();
        assert_eq!(
            w.cause(),
            format!(
                "waits for GPUs held by jobs {} and {} more that have no time limit: no start can be estimated",
                ids.join(", "),
                holders.len() - 3
            )
        );
        assert!(w.causes[1..].iter().any(|c| c.contains("is short of")), "{:?}", w.causes);
        assert!(w.no_estimate.as_deref().unwrap().contains("with no time limit"), "{w:?}");
        // One job without a limit, the others end by theirs: they make room; not said.
        let s2 = full(&|id| id == holders[0]);
        let w = explain(&s2, s2.job(demo.id).unwrap(), &demo.user).unwrap();
        assert!(!w.causes.iter().any(|c| c.contains("no time limit")), "{:?}", w.causes);
    }

    /// Jobs asking for 4 billion GPUs (a broken or hostile answer) ahead of each other, in a
    /// team at its quota: the sums saturate (they overflowed, a panic in debug builds) and the
    /// explanation still names the figures.
    #[test]
    fn hostile_gpu_counts_saturate_in_the_explanation() {
        let s = sim_state();
        let a100: Vec<JobId> = {
            let mut v: Vec<&Job> =
                s.jobs.iter().filter(|j| j.queue == "a100" && j.state == JobState::Pending).collect();
            v.sort_by_key(|j| j.rank);
            v.iter().map(|j| j.id).collect()
        };
        assert!(a100.len() >= 3, "three jobs pend in a100");
        let hostile = changed(&s, |inv| {
            for j in inv.jobs.as_mut().unwrap() {
                if a100.contains(&j.id) {
                    (j.gpus, j.est_start, j.pending_reason) = (u32::MAX, None, Some("Priority".into()));
                }
            }
            for q in inv.quotas.as_mut().unwrap() {
                q.gpu_used = u32::MAX - 1;
            }
        });
        let last = hostile.job(a100[2]).unwrap();
        let w = explain(&hostile, last, "researcher").expect("a pending job is explained");
        assert!(w.causes.iter().any(|c| c.contains(&format!("ask for {} GPUs", u32::MAX))), "{:?}", w.causes);
    }

    /// A QOS's per-user limit (the backend's `qos:NAME/USER` quota): a job asking more than it
    /// can never start; one that fits waits for the user's own use to fall, with the figures.
    #[test]
    fn a_per_user_qos_limit_says_whether_the_job_can_ever_start() {
        let s = sim_state();
        let demo = job_named(&s, DEMO).clone();
        let limited = |limit: u32, used: u32| {
            changed(&s, |inv| {
                for j in inv.jobs.as_mut().unwrap().iter_mut().filter(|j| j.id == demo.id) {
                    (j.pending_reason, j.est_start) = (Some("QOSMaxGRESPerUser".into()), None);
                }
                inv.quotas.as_mut().unwrap().push(crate::model::Quota {
                    cluster: demo.cluster.clone(),
                    team: format!("qos:capped/{}", demo.user).into(),
                    gpu_quota: limit,
                    gpu_used: used,
                    borrowed: 0,
                    lendable: 0,
                    gpu_pending: demo.gpus,
                });
            })
        };
        let never = limited(demo.gpus - 1, 0);
        let w = explain(&never, never.job(demo.id).unwrap(), &demo.user).unwrap();
        assert_eq!(
            w.cause(),
            format!(
                "it asks for {} GPUs and QOS capped allows {} per user: it can never start as it is",
                demo.gpus,
                demo.gpus - 1
            )
        );
        assert_eq!(w.no_estimate.as_deref(), Some("no estimate: it cannot start as it is"));
        let fits = limited(demo.gpus + 2, 4);
        let w = explain(&fits, fits.job(demo.id).unwrap(), &demo.user).unwrap();
        assert_eq!(
            w.cause(),
            format!(
                "you use 4 of the {} GPUs QOS capped allows per user; its {} GPUs wait until that use falls to 2",
                demo.gpus + 2,
                demo.gpus
            )
        );
    }

    #[test]
    fn only_pending_jobs_are_explained() {
        let s = sim_state();
        let running = s.jobs.iter().find(|j| j.state == JobState::Running).expect("a running job");
        assert_eq!(explain(&s, running, "researcher"), None);
    }

    /// The researcher's team is under quota while llm-pretrain runs on borrowed GPUs in the
    /// same queue: that is the cause, not "Priority (normal)".
    #[test]
    fn a_team_under_quota_is_told_its_gpus_are_lent() {
        let s = sim_state();
        let demo = job_named(&s, DEMO);
        assert_eq!(demo.pending_reason.as_deref(), Some("Priority"));
        let q = s.quotas.iter().find(|q| q.team == demo.account).unwrap();
        let lender = s.quotas.iter().find(|q| q.team == "llm-pretrain").unwrap();
        assert!(q.gpu_used + demo.gpus <= q.gpu_quota && lender.borrowed > 0);
        let w = explain(&s, demo, "researcher").unwrap();
        assert_eq!(
            w.cause(),
            format!(
                "your team is under quota ({} of {} GPUs in use); GPUs are lent to llm-pretrain ({} borrowed) until reclaimed",
                q.gpu_used, q.gpu_quota, lender.borrowed
            )
        );
        // Someone else looking at the same job reads the team's name.
        let other = explain(&s, demo, "alice").unwrap();
        assert!(other.cause().starts_with("team research is under quota"), "{}", other.cause());

        // Nobody borrows: no such claim, the jobs ahead are the answer.
        let calm = changed(&s, |inv| {
            for q in inv.quotas.as_mut().unwrap() {
                q.borrowed = 0;
            }
        });
        let w = explain(&calm, job_named(&calm, DEMO), "researcher").unwrap();
        assert!(w.causes.iter().all(|c| !c.contains("lent")), "{:?}", w.causes);
        assert!(w.causes.iter().any(|c| c.contains("ahead of it in h100")), "{:?}", w.causes);

        // Over its own quota, the team is not "under quota".
        let over = changed(&s, |inv| {
            for q in inv.quotas.as_mut().unwrap().iter_mut().filter(|q| q.team == "research") {
                q.gpu_used = q.gpu_quota;
            }
        });
        let w = explain(&over, job_named(&over, DEMO), "researcher").unwrap();
        assert!(w.causes.iter().all(|c| !c.contains("under quota")), "{:?}", w.causes);
    }

    /// A queue short of nodes that are down, drained or in maintenance names them.
    #[test]
    fn a_queue_short_of_nodes_names_them() {
        let s = sim_state();
        let demo = job_named(&s, DEMO);
        let (out, total) = queue_out_of_service(&s, "h100");
        assert!(out.iter().any(|n| n.state == NodeState::Down));
        let w = explain(&s, demo, "researcher").unwrap();
        let short = w.causes.iter().find(|c| c.starts_with("h100 is short of")).expect("the short queue");
        assert!(
            short.starts_with(&format!("h100 is short of {} of its {total} nodes: ", out.len())),
            "{short}"
        );
        assert!(short.contains(&format!("{} down", out[0].name)), "{short}");

        // Every node back in service: nothing to name.
        let healthy = changed(&s, |inv| {
            for n in inv.nodes.as_mut().unwrap() {
                if !n.state.schedulable() {
                    (n.state, n.reason) = (NodeState::Idle, None);
                }
            }
        });
        let w = explain(&healthy, job_named(&healthy, DEMO), "researcher").unwrap();
        assert!(w.causes.iter().all(|c| !c.contains("short of")), "{:?}", w.causes);
    }

    #[test]
    fn a_job_waiting_for_a_node_names_the_node_and_why_it_is_out() {
        let s = sim_state();
        let j = s
            .jobs
            .iter()
            .find(|j| j.pending_reason.as_deref() == Some("ReqNodeNotAvail"))
            .expect("a job waiting for a node");
        let node = s.node(&j.nodes[0]).unwrap();
        let w = explain(&s, j, "researcher").unwrap();
        let why = &node.reason.as_ref().unwrap().text;
        assert_eq!(w.cause(), format!("it needs {}, which is down: {why}", node.name));
        assert_eq!(w.no_estimate.as_deref(), Some("no estimate: a node it needs is out of service"));
    }

    #[test]
    fn no_estimate_says_why() {
        let s = sim_state();
        let quota = s.jobs.iter().find(|j| j.pending_reason.as_deref() == Some("QOSGrpGRES")).unwrap();
        let w = explain(&s, quota, "researcher").unwrap();
        assert_eq!(
            w.no_estimate.as_deref(),
            Some("no estimate: the team's quota is full; it is planned once its use falls")
        );
        assert!(w.cause().contains("GPUs of its") && w.cause().contains("-GPU quota"), "{}", w.cause());

        // The head of a100 needs 3 nodes and has no estimate: the job behind cannot be planned
        // past it, and says so.
        let a100: Vec<&Job> = {
            let mut v: Vec<&Job> =
                s.jobs.iter().filter(|j| j.queue == "a100" && j.state == JobState::Pending).collect();
            v.sort_by_key(|j| j.rank);
            v
        };
        assert!(a100.len() >= 2, "two jobs pend in a100");
        let (head, next) = (a100[0].id, a100[1].id);
        let blocked = changed(&s, |inv| {
            for j in inv.jobs.as_mut().unwrap() {
                if j.id == head {
                    (j.gpus, j.est_start, j.pending_reason) = (24, None, Some("Resources".into()));
                }
                if j.id == next {
                    (j.est_start, j.pending_reason) = (None, Some("Priority".into()));
                }
            }
        });
        let w = explain(&blocked, blocked.job(next).unwrap(), "researcher").unwrap();
        assert_eq!(
            w.no_estimate.as_deref(),
            Some(
                format!(
                    "no estimate: behind job {head} that needs 3 nodes (24 GPUs) and has no estimate itself"
                )
                .as_str()
            )
        );
        // With an estimate there is no "no estimate".
        assert!(explain(&s, s.job(head).unwrap(), "researcher").unwrap().no_estimate.is_none());
    }

    /// "What could help" only when the data supports it: another queue of the same GPU model
    /// with a shorter typical wait.
    #[test]
    fn another_queue_is_suggested_only_when_it_has_the_same_gpus_and_waits_less() {
        let s = sim_state();
        let p50 =
            |s: &ClusterState, q: &str| s.queue_stats.iter().find(|x| x.name == q).and_then(|x| x.wait_p50_s);
        let (a100, h100) = (p50(&s, "a100").unwrap(), p50(&s, "h100").unwrap());
        assert!(h100 < a100, "the fixture: h100 waits less than a100");
        let j = s
            .jobs
            .iter()
            .find(|j| {
                j.queue == "a100"
                    && j.state == JobState::Pending
                    && matches!(j.pending_reason.as_deref(), Some("Priority" | "Resources"))
            })
            .expect("a job waiting for its turn in a100");
        let w = explain(&s, j, "researcher").unwrap();
        assert!(w.hints.iter().all(|h| !h.starts_with("queue")), "no other queue has A100s: {:?}", w.hints);

        // The same job asking for H100s (as if a100 had them): h100 is named, with both waits.
        let id = j.id;
        let moved = changed(&s, |inv| {
            let h100_model = inv
                .nodes
                .as_ref()
                .unwrap()
                .iter()
                .find(|n| n.pool == "h100")
                .unwrap()
                .gpu_model()
                .to_string();
            for n in inv.nodes.as_mut().unwrap().iter_mut().filter(|n| n.pool == "a100") {
                for g in &mut n.gpus {
                    g.model = h100_model.as_str().into();
                }
            }
            for j in inv.jobs.as_mut().unwrap().iter_mut().filter(|j| j.id == id) {
                j.gpu_model = Some(h100_model.as_str().into());
            }
        });
        let w = explain(&moved, moved.job(id).unwrap(), "researcher").unwrap();
        let hint = w
            .hints
            .iter()
            .find(|h| h.starts_with("queue"))
            .unwrap_or_else(|| panic!("h100 suggested: {w:?} {:?}", moved.job(id)));
        // The waits as the state the hint is read from has them (pending jobs' waits grow).
        let (a100, h100) = (p50(&moved, "a100").unwrap(), p50(&moved, "h100").unwrap());
        assert!(
            hint.starts_with(&format!(
                "queue h100 has the same NVIDIA H100 80GB HBM3 GPUs and a shorter typical wait (p50 {} vs {}",
                dur(h100),
                dur(a100)
            )),
            "{hint}"
        );
        // From h100 nothing is suggested: a100 waits longer.
        let demo = job_named(&moved, DEMO);
        let w = explain(&moved, demo, "researcher").unwrap();
        assert!(w.hints.iter().all(|h| !h.starts_with("queue")), "{:?}", w.hints);
    }

    #[test]
    fn a_backfill_hole_is_named_only_when_some_gpus_are_free_but_too_few() {
        let s = sim_state();
        for j in s.jobs.iter().filter(|j| j.state == JobState::Pending) {
            let w = explain(&s, j, "researcher").unwrap();
            let free = free_gpus(&s, &j.cluster, &j.queue);
            let hole = w.hints.iter().any(|h| h.contains("(backfill)"));
            let capacity = matches!(j.pending_reason.as_deref(), Some("Priority" | "Resources"));
            assert_eq!(
                hole,
                capacity && free > 0 && free < j.gpus,
                "job {} ({free} free): {:?}",
                j.id,
                w.hints
            );
        }
    }
}
