//! Cost: GPU-hours and money per job and per team over a time window, split into useful and
//! idle GPU-hours, from the price card.

pub mod bill;
pub mod cause;
pub mod eff;
pub mod summary;
pub mod track;

use crate::model::{Epoch, Job, JobState, Text};
use crate::state::ClusterState;
use crate::store::WindowData;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};

/// The windows the Cost view offers.
pub const WINDOWS: &[(i64, &str)] =
    &[(3_600, "1h"), (86_400, "24h"), (7 * 86_400, "7d"), (30 * 86_400, "30d")];

/// A window as `get cost --window` takes it: `1h`, `24h`, `1d`, `7d`, `30d` or any duration
/// (`36h`, `2weeks`).
pub fn parse_window(s: &str) -> Result<i64, String> {
    let d = humantime::parse_duration(s.trim()).map_err(|e| format!("window {s:?}: {e}"))?;
    let secs = i64::try_from(d.as_secs()).map_err(|_| format!("window {s:?} is too long"))?;
    if secs <= 0 {
        return Err(format!("window {s:?} is empty"));
    }
    Ok(secs)
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct JobCost {
    pub id: u64,
    /// The job as the state holds it now, or as the ledger recorded it.
    #[serde(skip)]
    pub job: Job,
    /// Whether the job is in the console's state now (otherwise only in the ledger).
    #[serde(skip)]
    pub live: bool,
    pub gpu_hours: f64,
    /// Its GPU-hours by part ([`held_hours`]).
    #[serde(skip)]
    pub hours: bill::Parts,
    pub cost: f64,
    /// The allocated-idle part of `cost` (a failed run's cost is failed, not idle).
    pub idle_cost: f64,
}

impl JobCost {
    /// USEFUL ([`bill::Parts::useful_pct`]): 0 for a failed run, `None` when not measured.
    pub fn useful_pct(&self) -> Option<f64> {
        self.hours.useful_pct()
    }
}

/// A job's GPU-hours by part for `gpu_s` GPU-seconds it held ([`bill::job_hours`]): failed
/// when its run failed ([`cause::classify`]), else useful at the utilisation measured over
/// its run and the rest allocated-idle, unmeasured when nothing measured it.
pub fn held_hours(j: &Job, gpu_s: f64) -> bill::Parts {
    let h = gpu_s.max(0.0) / 3600.0;
    let failed = cause::classify(j.state, j.exit_reason.as_deref()).is_some_and(cause::Cause::is_failure);
    bill::job_hours(h, j.useful_pct().map(|u| h * u / 100.0), failed)
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TeamCost {
    pub team: Text,
    pub jobs: u32,
    pub gpu_hours: f64,
    pub useful_gpu_hours: f64,
    /// USEFUL ([`bill::Parts::useful_pct`] of its jobs' GPU-hours by part), %.
    pub useful_pct: Option<f64>,
    pub cost: f64,
    /// The allocated-idle part of its jobs' cost.
    pub idle_cost: f64,
    /// GPU-hours burnt by jobs that failed (the bill's failed part: [`cause::Cause::is_failure`]).
    pub failed_gpu_hours: f64,
    pub failed_cost: f64,
    /// Its jobs' GPU-hours by part.
    #[serde(skip)]
    pub hours: bill::Parts,
}

impl TeamCost {
    pub fn useful_pct(&self) -> Option<f64> {
        self.hours.useful_pct()
    }
}

/// GPU-hours and money of one cause of GPUs that no job held.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Part {
    pub gpu_hours: f64,
    pub cost: f64,
}

impl Part {
    fn add(&mut self, gpu_s: f64, price: f64) {
        self.gpu_hours += gpu_s / 3600.0;
        self.cost += gpu_s / 3600.0 * price;
    }
}

/// GPUs that no job held, by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Unused {
    /// Schedulable, free.
    pub unallocated: Part,
    /// Draining, drained, cordoned.
    pub drained: Part,
    /// Down, not responding, unknown.
    pub down: Part,
    /// In maintenance.
    pub maintenance: Part,
}

impl Unused {
    pub fn total(&self) -> Part {
        let parts = [self.unallocated, self.drained, self.down, self.maintenance];
        Part { gpu_hours: parts.iter().map(|p| p.gpu_hours).sum(), cost: parts.iter().map(|p| p.cost).sum() }
    }

    /// The causes with their names, in the order shown.
    pub fn parts(&self) -> [(&'static str, Part); 4] {
        [
            ("unallocated", self.unallocated),
            ("drained", self.drained),
            ("down", self.down),
            ("maintenance", self.maintenance),
        ]
    }
}

/// Where a report's figures come from.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(tag = "from", rename_all = "lowercase")]
pub enum Basis {
    /// The usage ledger (and the jobs the console holds now).
    Ledger {
        path: String,
    },
    /// Only the jobs the console holds now: no ledger, with the reason when one failed.
    #[default]
    Console,
    /// The ledger is configured and asked; its answer has not come yet (the jobs the console
    /// holds meanwhile). Not "no ledger".
    Reading,
    Unavailable {
        why: String,
    },
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CostReport {
    pub window_s: i64,
    pub until: Epoch,
    pub currency: String,
    pub teams: Vec<TeamCost>,
    /// Jobs with GPU time inside the window, most expensive first.
    pub jobs: Vec<JobCost>,
    /// Everything: what jobs were allocated plus GPUs no job held.
    pub total: f64,
    /// What jobs were allocated.
    pub allocated: f64,
    /// The part of `allocated` their GPUs spent idle (100 % − utilisation).
    pub idle_total: f64,
    /// GPUs no job held, by cause (from the ledger; zero without one).
    pub unused: Unused,
    /// GPUs by cause right now, as counts: (allocated, unallocated, drained, down, maintenance).
    pub now_gpus: [u32; 5],
    /// What the GPUs no job holds cost per hour right now.
    pub now_unused_per_hour: f64,
    /// When the ledger is younger than the window: its first record.
    pub data_since: Option<Epoch>,
    pub basis: Basis,
    /// The price card's rates for the GPU models in the report, and the default rate.
    pub rates: Vec<(String, f64)>,
    /// What the built key was: (generation, window, ledger answer).
    #[serde(skip)]
    pub built_for: Option<(u64, i64, u64)>,
    /// The window's bill: every part priced, adding up to `total`.
    pub bill: bill::Bill,
    /// What the Cost view's upper table shows (set by the console from its key).
    #[serde(skip)]
    pub by: By,
}

/// What the Cost view's upper table lists, switched by its `by` key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum By {
    #[default]
    Team,
    User,
    Cluster,
    /// The jobs table alone, taller.
    Job,
    /// Runs that did not complete by cause, and queue wait by team and queue.
    Cause,
}

impl By {
    pub const ALL: [By; 5] = [By::Team, By::User, By::Cluster, By::Job, By::Cause];

    pub fn label(self) -> &'static str {
        match self {
            By::Team => "team",
            By::User => "user",
            By::Cluster => "cluster",
            By::Job => "job",
            By::Cause => "cause",
        }
    }

    /// The next one, round.
    pub fn next(self) -> By {
        let i = By::ALL.iter().position(|b| *b == self).unwrap_or(0);
        By::ALL[(i + 1) % By::ALL.len()]
    }

    /// The bill's dimension the upper table lists, for team, user and cluster.
    pub fn dimension(self) -> Option<bill::Dimension> {
        match self {
            By::Team => Some(bill::Dimension::Team),
            By::User => Some(bill::Dimension::User),
            By::Cluster => Some(bill::Dimension::Cluster),
            By::Job | By::Cause => None,
        }
    }
}

/// What is known about how a run ended, for the top burners: for a node failure, the nodes
/// and the XID their GPUs reported during the run (when the console holds it); otherwise
/// the exit reason. Cluster text, sanitised when shown.
fn end_detail(s: &ClusterState, j: &Job, cause: Option<cause::Cause>) -> String {
    let Some(c) = cause else { return String::new() };
    let reason = j.exit_reason.as_deref().unwrap_or("").to_string();
    if c != cause::Cause::NodeFailure {
        return reason;
    }
    let (start, end) = (j.start.unwrap_or(j.submit), j.end.unwrap_or(s.now));
    let mut parts: Vec<String> = Vec::new();
    for name in j.nodes.iter().take(4) {
        let xids: BTreeSet<u16> = s
            .node_in(&j.cluster, name)
            .map(|n| {
                n.gpus
                    .iter()
                    .filter_map(|g| g.xid)
                    .filter(|x| x.at >= start - 60 && x.at <= end + 300)
                    .map(|x| x.code)
                    .collect()
            })
            .unwrap_or_default();
        let codes: Vec<String> = xids.iter().map(|c| format!("XID {c}")).collect();
        parts.push(if codes.is_empty() { name.to_string() } else { format!("{name} {}", codes.join(",")) });
    }
    if j.nodes.len() > 4 {
        parts.push(format!("+{} nodes", j.nodes.len() - 4));
    }
    if !reason.is_empty() && reason != "NODE_FAIL" {
        parts.push(reason);
    }
    parts.join(" · ")
}

/// GPU-seconds of a job that fall inside [from, to]: its GPUs × the part of its run inside
/// the window ([`Job::held_gpu_seconds`]), and their useful part at the utilisation telemetry
/// measured over its run. A job without an end counts until `until` (now, or when the ledger
/// last saw it). Returns (GPU-seconds, useful GPU-seconds, whether any utilisation was
/// measured: a job nothing measured is "unmeasured", not 0 %).
fn in_window(j: &Job, from: Epoch, to: Epoch, until: Epoch) -> Option<(f64, f64, bool)> {
    let gs = j.held_gpu_seconds(from, to, until);
    if gs <= 0.0 {
        return None;
    }
    let util = j.useful_pct();
    Some((gs, gs * util.unwrap_or(0.0) / 100.0, util.is_some()))
}

/// The report over the jobs the console holds now (no ledger).
pub fn report(s: &ClusterState, window_s: i64) -> CostReport {
    let jobs = s.jobs.iter().map(|j| (Cow::Borrowed(j), true, s.now));
    build(s, s.now - window_s, s.now, jobs, None, Basis::Console)
}

/// The report over what the ledger holds for the window, joined with the jobs the console
/// holds now (they are fresher than the ledger's last write).
pub fn report_ledger(s: &ClusterState, window_s: i64, w: &WindowData) -> CostReport {
    report_range(s, s.now - window_s, s.now, w)
}

/// [`report_ledger`] for any `[from, to]` the ledger was read for (`report cost --from --to`).
pub fn report_range(s: &ClusterState, from: Epoch, to: Epoch, w: &WindowData) -> CostReport {
    // One ledger is the state's one cluster's (its configured name, or "" in a single-cluster
    // console), the cluster its jobs carry.
    let scope = match s.clusters() {
        [one] => one.as_str(),
        _ => "",
    };
    from_ledgers(s, from, to, &[(scope, w)], w.path.display().to_string())
}

/// The report while the ledger's answer for the window is awaited: the console's jobs, said to
/// be so ([`Basis::Reading`]).
pub fn report_reading(s: &ClusterState, window_s: i64) -> CostReport {
    let jobs = s.jobs.iter().map(|j| (Cow::Borrowed(j), true, s.now));
    build(s, s.now - window_s, s.now, jobs, None, Basis::Reading)
}

/// The report over each cluster's ledger window (`(the cluster's scope in the state, its
/// window)`): one ledger is [`report_range`], several are a fleet's.
pub fn report_ledgers(
    s: &ClusterState,
    from: Epoch,
    to: Epoch,
    windows: &[(&str, &WindowData)],
) -> CostReport {
    match windows {
        [(_, w)] => report_range(s, from, to, w),
        _ => {
            let dir = windows.first().and_then(|(_, w)| w.path.parent()).map(|d| d.display().to_string());
            let path = format!("{} ({} clusters' ledgers)", dir.unwrap_or_default(), windows.len());
            from_ledgers(s, from, to, windows, path)
        }
    }
}

/// [`report_range`] over several clusters' ledgers (a command's look at a fleet).
pub fn report_clusters_range(
    s: &ClusterState,
    from: Epoch,
    to: Epoch,
    windows: &[(Text, WindowData)],
) -> CostReport {
    let windows: Vec<(&str, &WindowData)> = windows.iter().map(|(c, w)| (c.as_str(), w)).collect();
    report_ledgers(s, from, to, &windows)
}

/// The report over what each cluster's ledger holds for the window, joined with the jobs the
/// console holds now (they are fresher than the ledger's last write): each window's records
/// are its cluster's jobs, so two clusters' jobs of the same id stay two jobs; the unused
/// capacity is every cluster's; the window is covered from the latest first record of them
/// all.
fn from_ledgers(
    s: &ClusterState,
    from: Epoch,
    to: Epoch,
    windows: &[(&str, &WindowData)],
    path: String,
) -> CostReport {
    let live: HashSet<(&str, u64)> = s.jobs.iter().map(|j| (j.cluster.as_str(), j.id)).collect();
    let live = &live;
    let to = to.min(s.now.max(from));
    let recorded = windows.iter().flat_map(|&(c, w)| {
        w.jobs.iter().filter(move |r| !live.contains(&(c, r.id))).map(move |r| {
            let mut j = track::job_of(r);
            j.cluster = c.into();
            (Cow::Owned(j), false, r.end.unwrap_or(r.last_seen))
        })
    });
    let jobs = s.jobs.iter().map(|j| (Cow::Borrowed(j), true, s.now)).chain(recorded);
    let capacity: Vec<_> = windows.iter().flat_map(|(_, w)| w.capacity.iter().cloned()).collect();
    let mut r = build(s, from, to, jobs, Some(&capacity), Basis::Ledger { path });
    r.data_since = windows.iter().filter_map(|(_, w)| w.data_since()).max();
    r
}

/// What a window's figures cover when the ledger is younger than the window (`since`, its
/// first record): every job of the window (the scheduler's history), but the GPUs no job held
/// only since the ledger began, so the total is a lower bound. One phrasing for every command.
pub fn capacity_note(since: Epoch, until: Epoch) -> String {
    format!(
        "capacity since {} ({} of the window): the GPUs no job held before it are not counted, \
         so the total is a lower bound (every job of the window is counted)",
        crate::clock::stamp(since),
        crate::clock::dur((until - since).max(0))
    )
}

/// [`report`] for any `[from, to]`: the jobs the console holds now, no ledger.
pub fn report_console_range(s: &ClusterState, from: Epoch, to: Epoch, basis: Basis) -> CostReport {
    let jobs = s.jobs.iter().map(|j| (Cow::Borrowed(j), true, s.now));
    build(s, from, to.min(s.now.max(from)), jobs, None, basis)
}

/// The report when the ledger failed: the console's jobs, and why.
pub fn report_unavailable(s: &ClusterState, window_s: i64, why: String) -> CostReport {
    let jobs = s.jobs.iter().map(|j| (Cow::Borrowed(j), true, s.now));
    build(s, s.now - window_s, s.now, jobs, None, Basis::Unavailable { why })
}

fn build<'a>(
    s: &ClusterState,
    from: Epoch,
    to: Epoch,
    all: impl Iterator<Item = (Cow<'a, Job>, bool, Epoch)>,
    capacity: Option<&[crate::store::ledger::CapacityTotal]>,
    basis: Basis,
) -> CostReport {
    let window_s = to - from;
    let card = &s.prices;
    // First the bill (it sets each model's rate), then jobs and teams at those rates.
    let mut held = Vec::new();
    let mut uses = Vec::new();
    let mut waiting = Vec::new();
    for (j, live, until) in all {
        waiting.push(bill::Waiting {
            account: j.account.to_string(),
            queue: j.queue.to_string(),
            gpus: j.gpus,
            submit: j.submit,
            start: j.start,
            until: if j.start.is_none() && !j.state.is_active() { j.end.unwrap_or(j.submit) } else { until },
        });
        let Some((gs, us, measured)) = in_window(&j, from, to, until) else { continue };
        let ended_inside = j.end.is_some_and(|e| e > from && e <= to);
        let cause = cause::classify(j.state, j.exit_reason.as_deref());
        uses.push(bill::Use {
            id: j.id,
            account: j.account.to_string(),
            user: j.user.to_string(),
            model: j.gpu_model.as_deref().unwrap_or("").to_string(),
            gpu_s: gs,
            useful_s: measured.then_some(us),
            cause,
            cluster: s.cluster_of(&j.cluster).to_string(),
            name: j.name.to_string(),
            detail: end_detail(s, &j, cause),
            completed: ended_inside && j.state == JobState::Completed,
            finished: ended_inside,
        });
        held.push((j, live, gs));
    }
    let unheld: Vec<bill::Unheld> = capacity
        .unwrap_or_default()
        .iter()
        .map(|c| bill::Unheld {
            model: c.model.clone(),
            unallocated_s: c.unallocated_s,
            unhealthy_s: c.drained_s + c.down_s + c.maintenance_s,
        })
        .collect();
    let mut bill = bill::compute(card, from, to, &uses, &unheld);
    bill.waits = bill::waits(card, from, to, &waiting);
    let rate = |model: &str| {
        bill.rates
            .iter()
            .find(|r| r.model == model)
            .map_or_else(|| card.price(model) * card.share(model), |r| r.effective * r.share)
    };
    let mut teams: HashMap<Text, TeamCost> = HashMap::new();
    let mut jobs = Vec::new();
    let (mut allocated, mut idle_total) = (0.0, 0.0);
    let mut models: BTreeSet<String> = BTreeSet::new();
    for (j, live, gs) in held {
        let model = j.gpu_model.as_deref().unwrap_or("");
        let price = rate(model);
        models.insert(model.to_string());
        let gh = gs / 3600.0;
        let hours = held_hours(&j, gs);
        let cost = gh * price;
        // Idle is what telemetry measured idle: a job nothing measured is unmeasured, not idle;
        // a failed run's cost is failed.
        let idle_cost = hours.allocated_idle * price;
        allocated += cost;
        idle_total += idle_cost;
        let team = Text::from(card.team_of(&j.account));
        let t = teams.entry(team.clone()).or_insert_with(|| TeamCost { team, ..Default::default() });
        t.jobs += 1;
        t.gpu_hours += gh;
        t.useful_gpu_hours += hours.useful;
        t.cost += cost;
        t.idle_cost += idle_cost;
        t.failed_gpu_hours += hours.failed;
        t.failed_cost += hours.failed * price;
        t.hours.add(&hours);
        jobs.push(JobCost { id: j.id, job: j.into_owned(), live, gpu_hours: gh, hours, cost, idle_cost });
    }
    let mut unused = Unused::default();
    for c in capacity.unwrap_or_default() {
        let price = rate(&c.model);
        models.insert(c.model.clone());
        unused.unallocated.add(c.unallocated_s, price);
        unused.drained.add(c.drained_s, price);
        unused.down.add(c.down_s, price);
        unused.maintenance.add(c.maintenance_s, price);
    }
    let (mut now_gpus, mut now_unused_per_hour) = ([0u32; 5], 0.0);
    for c in track::capacity_now(s) {
        let free = c.unallocated + c.drained + c.down + c.maintenance;
        for (n, v) in now_gpus.iter_mut().zip([c.allocated, c.unallocated, c.drained, c.down, c.maintenance])
        {
            *n += v;
        }
        now_unused_per_hour += f64::from(free) * card.price(&c.model);
        models.insert(c.model);
    }
    let mut rates: Vec<(String, f64)> = Vec::new();
    for (k, v) in &card.per_gpu_hour {
        let kl = k.to_ascii_lowercase();
        if models.iter().any(|m| m.to_ascii_lowercase().contains(&kl)) {
            rates.push((k.clone(), *v));
        }
    }
    rates.push(("other".into(), card.default));
    let mut teams: Vec<TeamCost> = teams.into_values().collect();
    for t in &mut teams {
        t.useful_pct = t.hours.useful_pct();
    }
    teams.sort_by(|a, b| b.cost.total_cmp(&a.cost).then(a.team.cmp(&b.team)));
    jobs.sort_by(|a, b| b.cost.total_cmp(&a.cost).then(a.id.cmp(&b.id)));
    CostReport {
        window_s,
        until: to,
        currency: card.currency.clone(),
        teams,
        jobs,
        total: bill.total,
        allocated,
        idle_total,
        unused,
        now_gpus,
        now_unused_per_hour,
        data_since: None,
        basis,
        rates,
        built_for: Some((s.generation, window_s, 0)),
        bill,
        by: By::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(start: i64, end: Option<i64>, gpus: u32, gs: f64) -> Job {
        Job {
            cluster: Default::default(),
            id: 1,
            name: "j".into(),
            user: "u".into(),
            account: "a".into(),
            queue: "q".into(),
            state: JobState::Running,
            pending_reason: None,
            priority: 0,
            submit: start,
            start: Some(start),
            end,
            est_start: None,
            gpus,
            gpu_model: None,
            nodes: vec![],
            exit_reason: None,
            retries: 0,
            position: None,
            rank: None,
            gpu_seconds: gs,
            useful_gpu_seconds: gs / 2.0,
            time_limit: None,
            no_time_limit: false,
        }
    }

    #[test]
    fn window_takes_the_overlapping_share() {
        // ran 0..200, window 100..300: half of it
        let (gs, us, measured) = in_window(&job(0, Some(200), 8, 1600.0), 100, 300, 300).unwrap();
        assert_eq!((gs, us, measured), (800.0, 400.0, true));
        assert!(in_window(&job(0, Some(50), 8, 400.0), 100, 300, 300).is_none());
    }

    #[test]
    fn without_accumulated_usage_gpu_count_times_overlap() {
        let (gs, us, measured) = in_window(&job(0, None, 4, 0.0), 0, 100, 100).unwrap();
        assert_eq!((gs, us, measured), (400.0, 0.0, false));
    }
}
