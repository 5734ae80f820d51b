//! The bill of a window: every GPU-hour the cluster had, priced from the price card (on-demand
//! rates, reserved commitments, fractional shares), plus the overhead lines, split by cause so
//! the parts add up to the total:
//!
//! ```text
//! total = useful + allocated-idle + unmeasured + unallocated + unhealthy + failed + overhead
//! ```
//!
//! * **useful**: GPU-hours jobs held × their measured utilisation;
//! * **allocated-idle**: the rest of what jobs that did not fail held (100 % − utilisation);
//! * **unmeasured**: what jobs held with no utilisation telemetry at all (neither useful nor
//!   idle can be claimed);
//! * **unallocated**: schedulable GPUs no job held, and reserved GPUs the window never saw;
//! * **unhealthy**: GPUs on drained, down or maintenance nodes;
//! * **failed**: everything jobs that failed (FAILED, TIMEOUT, NODE_FAIL) held;
//! * **overhead**: the monthly lines (network, storage, support, operations) for the window.
//!
//! Each team's (user's, account's) share is what its jobs held (direct) plus a part of the
//! shared costs (unallocated, unhealthy, overhead) in proportion to its direct cost; when no
//! job held anything, the shared costs go to one row, [`UNASSIGNED`]. So the shares add up to
//! the total too.
//!
//! Reserved commitments: for each `[[prices.reserved]]` line, the GPU-hours of the models it
//! covers are paid by the commitment up to `gpus × window`, beyond that at their on-demand
//! rates; every covered GPU-hour costs the blend, and committed GPU-hours the window never saw
//! are unallocated. The commitment is paid in full whatever happened.

use super::cause::Cause;
use crate::model::{Epoch, MONTH_S, PriceCard, Unit};
use std::collections::BTreeMap;

/// The row that takes the shared costs when no job held a GPU in the window.
pub const UNASSIGNED: &str = "(unassigned)";

/// Money (or GPU-hours) by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Parts {
    pub useful: f64,
    pub allocated_idle: f64,
    pub unmeasured: f64,
    pub unallocated: f64,
    pub unhealthy: f64,
    pub failed: f64,
    pub overhead: f64,
}

impl Parts {
    pub fn sum(&self) -> f64 {
        self.useful
            + self.allocated_idle
            + self.unmeasured
            + self.unallocated
            + self.unhealthy
            + self.failed
            + self.overhead
    }

    /// What jobs held (useful, allocated-idle, unmeasured, failed).
    pub fn direct(&self) -> f64 {
        self.useful + self.allocated_idle + self.unmeasured + self.failed
    }

    /// What no job held (unallocated, unhealthy, overhead).
    pub fn shared(&self) -> f64 {
        self.unallocated + self.unhealthy + self.overhead
    }

    /// USEFUL, the one definition every surface shows (the Cost view's rows by team, user,
    /// cluster and job, `get cost`, `get cost-teams`, `get cost-by`, `report cost`): of the
    /// GPU-hours jobs held whose use is known, the useful part (%):
    ///
    /// ```text
    /// useful / (useful + allocated-idle + failed)
    /// ```
    ///
    /// over GPU-hours (`Parts` of [`job_hours`]). A failed run's GPU-hours are all failed, so a
    /// failed job is 0 % useful whatever its GPUs did; unmeasured GPU-hours are in neither part
    /// of the ratio. `None` when nothing held is known (only unmeasured, or nothing held).
    pub fn useful_pct(&self) -> Option<f64> {
        let known = self.useful + self.allocated_idle + self.failed;
        (known > 0.0).then(|| 100.0 * self.useful / known)
    }

    /// The causes with their names, in the order shown.
    pub fn named(&self) -> [(&'static str, f64); 7] {
        [
            ("useful", self.useful),
            ("allocated-idle", self.allocated_idle),
            ("unmeasured", self.unmeasured),
            ("unallocated", self.unallocated),
            ("unhealthy", self.unhealthy),
            ("failed", self.failed),
            ("overhead", self.overhead),
        ]
    }

    pub fn add(&mut self, o: &Parts) {
        self.useful += o.useful;
        self.allocated_idle += o.allocated_idle;
        self.unmeasured += o.unmeasured;
        self.unallocated += o.unallocated;
        self.unhealthy += o.unhealthy;
        self.failed += o.failed;
        self.overhead += o.overhead;
    }
}

/// One job's GPU-hours (or money) by part: everything it held is `failed` when its run
/// failed ([`Cause::is_failure`]); else its measured useful part is `useful` and the rest
/// `allocated_idle`; `unmeasured` when no utilisation was measured. The definition of the
/// parts, for the bill and for every row that shows a job's or a team's USEFUL and IDLE.
pub fn job_hours(held: f64, useful: Option<f64>, failed: bool) -> Parts {
    let held = held.max(0.0);
    let mut p = Parts::default();
    if failed {
        p.failed = held;
    } else if let Some(u) = useful {
        p.useful = u.max(0.0).min(held);
        p.allocated_idle = held - p.useful;
    } else {
        p.unmeasured = held;
    }
    p
}

/// One job's GPU time inside the window, as the bill takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Use {
    pub id: u64,
    pub account: String,
    pub user: String,
    /// The GPU model name (a MIG profile or time-sliced name prices at its share).
    pub model: String,
    /// GPU-seconds held inside the window (GPUs as counted by the scheduler).
    pub gpu_s: f64,
    /// The useful part of `gpu_s` (held × utilisation); `None` without any telemetry.
    pub useful_s: Option<f64>,
    /// Why the run ended without completing ([`crate::cost::cause`]); `None` when it completed
    /// or still runs. A cause that [is a failure](Cause::is_failure) puts the job in `failed`.
    pub cause: Option<Cause>,
    /// The cluster it ran on (fleet mode; the console's cluster otherwise).
    pub cluster: String,
    /// Its name, and what is known about its end (the node and XID of a node failure), for
    /// the top burners.
    pub name: String,
    pub detail: String,
    /// It completed inside the window.
    pub completed: bool,
    /// It ended inside the window (any outcome).
    pub finished: bool,
}

/// GPU-seconds of a model that no job held, by cause.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Unheld {
    pub model: String,
    pub unallocated_s: f64,
    pub unhealthy_s: f64,
}

/// A model's rate in this window.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Rate {
    pub model: String,
    /// On-demand price per whole-GPU-hour.
    pub on_demand: f64,
    /// The part of a whole GPU one counted GPU of this model is.
    pub share: f64,
    /// What one whole-GPU-hour cost in the window (the blend with a reserved commitment).
    pub effective: f64,
}

/// A team's, user's or account's share of the bill.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Share {
    pub name: String,
    pub jobs: u32,
    /// GPU-hours its jobs held (whole-GPU equivalents).
    pub gpu_hours: f64,
    /// Those GPU-hours by part (useful, allocated-idle, unmeasured, failed).
    pub hours: Parts,
    pub parts: Parts,
    pub total: f64,
}

impl Share {
    /// [`Parts::useful_pct`] of what its jobs held.
    pub fn useful_pct(&self) -> Option<f64> {
        self.hours.useful_pct()
    }
}

/// The bill of one window.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Bill {
    pub from: i64,
    pub to: i64,
    pub currency: String,
    /// Money by cause.
    pub parts: Parts,
    /// Whole-GPU-hours by cause (overhead: 0).
    pub gpu_hours: Parts,
    pub total: f64,
    /// Overhead lines for the window, by name.
    pub overhead_lines: Vec<(String, f64)>,
    /// Reserved commitments for the window (paid in full).
    pub committed: f64,
    pub rates: Vec<Rate>,
    pub unit: Unit,
    /// The units' name when they came from `[prices.denominator]` (see [`Bill::set_units`]).
    pub unit_name: Option<String>,
    pub units: f64,
    /// total / units, when there were any.
    pub unit_cost: Option<f64>,
    pub teams: Vec<Share>,
    pub users: Vec<Share>,
    pub accounts: Vec<Share>,
    pub clusters: Vec<Share>,
    /// GPU-hours and money of runs that did not complete, by cause (every cause, in
    /// [`Cause::ALL`] order); the causes that are failures add up to `parts.failed`.
    pub causes: Vec<CauseShare>,
    /// The runs that did not complete, most expensive first (at most [`BURNERS`]).
    pub burners: Vec<Burner>,
    /// Queue wait per team and queue (set by the caller from [`waits`]).
    pub waits: Vec<WaitShare>,
    /// Teams with a budget in `[prices.budgets]`: what they spent and when it runs out.
    pub budgets: Vec<BudgetUse>,
}

/// The runs of one cause.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CauseShare {
    pub cause: Cause,
    /// Whether these are in the bill's `failed` part (preemption and user cancel are not).
    pub failed: bool,
    pub jobs: u32,
    /// Whole-GPU-hours its runs held in the window.
    pub gpu_hours: f64,
    pub cost: f64,
}

/// How many runs the top burners list.
pub const BURNERS: usize = 10;

/// A run that did not complete and what it burnt in the window.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Burner {
    pub id: u64,
    pub name: String,
    pub user: String,
    pub team: String,
    pub cluster: String,
    pub cause: Cause,
    /// The node and XID of a node failure, when known; the exit reason otherwise.
    pub detail: String,
    pub gpu_hours: f64,
    pub cost: f64,
}

/// A job's wait in a queue, as [`waits`] takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub account: String,
    pub queue: String,
    /// GPUs requested.
    pub gpus: u32,
    pub submit: Epoch,
    /// When it started; `None` while it still waits (it waits until `until`).
    pub start: Option<Epoch>,
    pub until: Epoch,
}

/// Queue wait of one team in one queue: requested GPUs × time waited inside the window.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct WaitShare {
    pub team: String,
    pub queue: String,
    /// Jobs that waited some of the window.
    pub jobs: u32,
    /// Requested GPUs × seconds waited inside the window, in hours.
    pub gpu_hours: f64,
    /// The longest wait inside the window, seconds.
    pub longest_s: i64,
}

/// Queue wait GPU-hours per team and queue over `[from, to]`: each job's requested GPUs ×
/// the part of `[submit, start)` inside the window; most GPU-hours first.
pub fn waits(card: &PriceCard, from: Epoch, to: Epoch, jobs: &[Waiting]) -> Vec<WaitShare> {
    let mut by: BTreeMap<(String, String), WaitShare> = BTreeMap::new();
    for j in jobs {
        let end = j.start.unwrap_or(j.until).min(to);
        let waited = end - j.submit.max(from);
        if waited <= 0 || j.gpus == 0 {
            continue;
        }
        let team = card.team_of(&j.account).to_string();
        let w = by.entry((team.clone(), j.queue.clone())).or_insert_with(|| WaitShare {
            team,
            queue: j.queue.clone(),
            ..WaitShare::default()
        });
        w.jobs += 1;
        w.gpu_hours += f64::from(j.gpus) * waited as f64 / 3600.0;
        w.longest_s = w.longest_s.max(waited);
    }
    let mut v: Vec<WaitShare> = by.into_values().collect();
    v.sort_by(|a, b| {
        b.gpu_hours.total_cmp(&a.gpu_hours).then_with(|| (&a.team, &a.queue).cmp(&(&b.team, &b.queue)))
    });
    v
}

/// A team's budget against its share of the window.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BudgetUse {
    pub team: String,
    /// Money per month.
    pub monthly: f64,
    /// The team's share of the window.
    pub spent: f64,
    /// Spend per day over the window.
    pub burn_per_day: f64,
    /// At that burn, when a month's budget counted from the window's start is spent; `None`
    /// when it lasts the month.
    pub runs_out: Option<i64>,
}

/// Each budgeted team's use of its budget over `[from, to]`.
fn budgets(card: &PriceCard, teams: &[Share], from: i64, to: i64) -> Vec<BudgetUse> {
    let days = (to - from).max(0) as f64 / 86_400.0;
    card.budgets
        .iter()
        .map(|(team, &monthly)| {
            let spent = teams.iter().find(|s| &s.name == team).map_or(0.0, |s| s.total);
            let burn_per_day = if days > 0.0 { spent / days } else { 0.0 };
            let runs_out = (burn_per_day > 0.0)
                .then(|| from + (monthly / burn_per_day * 86_400.0) as i64)
                .filter(|&t| t < from + MONTH_S);
            BudgetUse { team: team.clone(), monthly, spent, burn_per_day, runs_out }
        })
        .collect()
}

/// The reservations of one model key in the window.
struct Group {
    /// Whole-GPU-hours committed.
    committed_h: f64,
    /// What they cost for the window.
    paid: f64,
    /// Whole-GPU-hours of the models they cover that the window saw.
    seen_h: f64,
}

impl Group {
    /// The reserved rate per whole-GPU-hour.
    fn rate(&self) -> f64 {
        if self.committed_h > 0.0 { self.paid / self.committed_h } else { 0.0 }
    }
}

/// The bill of `[from, to]` for these jobs and unheld GPUs.
pub fn compute(card: &PriceCard, from: i64, to: i64, uses: &[Use], unheld: &[Unheld]) -> Bill {
    let window_s = (to - from).max(0) as f64;
    let month = window_s / MONTH_S as f64;
    // Whole-GPU-hours per model, then per reservation.
    let mut hours: BTreeMap<&str, f64> = BTreeMap::new();
    for u in uses {
        *hours.entry(&u.model).or_default() += u.gpu_s.max(0.0) * card.share(&u.model) / 3600.0;
    }
    for h in unheld {
        *hours.entry(&h.model).or_default() += (h.unallocated_s.max(0.0) + h.unhealthy_s.max(0.0)) / 3600.0;
    }
    // Reservations by their (lower-cased) model key: lines with the same key add up.
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for r in &card.reserved {
        let g = groups.entry(r.model.to_ascii_lowercase()).or_insert(Group {
            committed_h: 0.0,
            paid: 0.0,
            seen_h: 0.0,
        });
        g.committed_h += f64::from(r.gpus) * window_s / 3600.0;
        g.paid += r.monthly.max(0.0) * month;
    }
    let group_of = |m: &str| card.reservation(m).map(|r| r.model.to_ascii_lowercase());
    for (m, h) in &hours {
        if let Some(g) = group_of(m).and_then(|k| groups.get_mut(&k)) {
            g.seen_h += h;
        }
    }
    let rates: Vec<Rate> = hours
        .keys()
        .map(|m| {
            let on_demand = card.price(m);
            let effective = match group_of(m).and_then(|k| groups.get(&k)) {
                Some(g) if g.seen_h > 0.0 && g.committed_h > 0.0 => {
                    let reserved = (g.committed_h / g.seen_h).min(1.0);
                    reserved * g.rate() + (1.0 - reserved) * on_demand
                }
                _ => on_demand,
            };
            Rate { model: m.to_string(), on_demand, share: card.share(m), effective }
        })
        .collect();
    let rate_of: BTreeMap<&str, &Rate> = rates.iter().map(|r| (r.model.as_str(), r)).collect();
    let mut parts = Parts::default();
    let mut gh = Parts::default();
    // What the commitments paid for GPU-hours the window never saw: unallocated.
    let committed: f64 = groups.values().fold(0.0, |a, g| a + g.paid);
    for g in groups.values() {
        let used = g.seen_h.min(g.committed_h);
        parts.unallocated += (g.paid - used * g.rate()).max(0.0);
        gh.unallocated += g.committed_h - used;
    }
    for h in unheld {
        let rate = rate_of.get(h.model.as_str()).map_or(0.0, |r| r.effective);
        let (ua, uh) = (h.unallocated_s.max(0.0) / 3600.0, h.unhealthy_s.max(0.0) / 3600.0);
        parts.unallocated += ua * rate;
        parts.unhealthy += uh * rate;
        gh.unallocated += ua;
        gh.unhealthy += uh;
    }
    let overhead_lines: Vec<(String, f64)> =
        card.overhead.iter().map(|(k, v)| (k.clone(), v.max(0.0) * month)).collect();
    parts.overhead = overhead_lines.iter().fold(0.0, |a, (_, v)| a + v);
    // Jobs: each one's direct parts, summed per team, user, account and cluster.
    let mut by: [BTreeMap<String, Share>; 4] = Default::default();
    let mut causes: Vec<CauseShare> = Cause::ALL
        .iter()
        .map(|&c| CauseShare { cause: c, failed: c.is_failure(), jobs: 0, gpu_hours: 0.0, cost: 0.0 })
        .collect();
    let mut burners: Vec<Burner> = Vec::new();
    for u in uses {
        let r = rate_of.get(u.model.as_str());
        let (rate, share) = r.map_or((0.0, 1.0), |r| (r.effective, r.share));
        let h = u.gpu_s.max(0.0) * share / 3600.0;
        let mut p = Parts::default();
        let useful = u.useful_s.map(|us| us * share / 3600.0);
        let hp = job_hours(h, useful, u.cause.is_some_and(Cause::is_failure));
        p.useful = hp.useful * rate;
        p.allocated_idle = hp.allocated_idle * rate;
        p.unmeasured = hp.unmeasured * rate;
        p.failed = hp.failed * rate;
        parts.add(&p);
        gh.add(&hp);
        if let Some(c) = u.cause {
            let cost = h * rate;
            if let Some(row) = causes.iter_mut().find(|r| r.cause == c) {
                row.jobs += 1;
                row.gpu_hours += h;
                row.cost += cost;
            }
            burners.push(Burner {
                id: u.id,
                name: u.name.clone(),
                user: u.user.clone(),
                team: card.team_of(&u.account).to_string(),
                cluster: u.cluster.clone(),
                cause: c,
                detail: u.detail.clone(),
                gpu_hours: h,
                cost,
            });
        }
        let names = [card.team_of(&u.account), u.user.as_str(), u.account.as_str(), u.cluster.as_str()];
        for (map, name) in by.iter_mut().zip(names) {
            let s = map
                .entry(name.to_string())
                .or_insert_with(|| Share { name: name.to_string(), ..Share::default() });
            s.jobs += 1;
            s.gpu_hours += h;
            s.hours.add(&hp);
            s.parts.add(&p);
        }
    }
    let total = parts.sum();
    let direct = parts.direct();
    let [teams, users, accounts, clusters] = by.map(|m| spread(m, &parts, direct));
    burners.sort_by(|a, b| {
        b.cost.total_cmp(&a.cost).then(b.gpu_hours.total_cmp(&a.gpu_hours)).then(a.id.cmp(&b.id))
    });
    burners.truncate(BURNERS);
    let budgets = budgets(card, &teams, from, to);
    let units = match card.unit {
        Unit::CompletedRuns => uses.iter().filter(|u| u.completed).count() as f64,
        Unit::FinishedJobs => uses.iter().filter(|u| u.finished).count() as f64,
        Unit::GpuHours => gh.direct(),
    };
    Bill {
        from,
        to,
        currency: card.currency.clone(),
        parts,
        gpu_hours: gh,
        total,
        overhead_lines,
        committed,
        rates,
        unit: card.unit,
        unit_name: None,
        units,
        unit_cost: (units > 0.0).then(|| total / units),
        teams,
        users,
        accounts,
        clusters,
        causes,
        burners,
        waits: Vec::new(),
        budgets,
    }
}

/// What a chargeback's rows are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    Team,
    User,
    Account,
    Cluster,
}

impl Dimension {
    pub fn label(self) -> &'static str {
        match self {
            Dimension::Team => "team",
            Dimension::User => "user",
            Dimension::Account => "account",
            Dimension::Cluster => "cluster",
        }
    }
}

/// The name of the totals row.
pub const TOTAL: &str = "TOTAL";

impl Bill {
    /// What one unit is, for the effective unit cost.
    pub fn unit_label(&self) -> &str {
        self.unit_name.as_deref().unwrap_or(self.unit.label())
    }

    /// Units from elsewhere (a PromQL denominator): the unit cost is total / units when
    /// there are any.
    pub fn set_units(&mut self, name: &str, units: f64) {
        self.unit_name = Some(name.to_string());
        self.units = units;
        self.unit_cost = (units > 0.0 && units.is_finite()).then(|| self.total / units);
    }

    /// The shares along one dimension, most expensive first.
    pub fn shares(&self, by: Dimension) -> &[Share] {
        match by {
            Dimension::Team => &self.teams,
            Dimension::User => &self.users,
            Dimension::Account => &self.accounts,
            Dimension::Cluster => &self.clusters,
        }
    }

    /// The totals row: every job, every GPU-hour jobs held, every part.
    pub fn totals(&self) -> Share {
        Share {
            name: TOTAL.into(),
            jobs: self.teams.iter().map(|s| s.jobs).sum(),
            gpu_hours: self.gpu_hours.direct(),
            hours: self.gpu_hours,
            parts: self.parts,
            total: self.total,
        }
    }
}

/// Shares with the shared costs spread by direct cost, most expensive first.
fn spread(map: BTreeMap<String, Share>, all: &Parts, direct: f64) -> Vec<Share> {
    let mut v: Vec<Share> = map.into_values().collect();
    if direct > 0.0 {
        for s in &mut v {
            let k = s.parts.direct() / direct;
            s.parts.unallocated = all.unallocated * k;
            s.parts.unhealthy = all.unhealthy * k;
            s.parts.overhead = all.overhead * k;
        }
    } else if all.shared() > 0.0 {
        v.retain(|s| s.parts.direct() > 0.0);
        v.push(Share {
            name: UNASSIGNED.into(),
            parts: Parts {
                unallocated: all.unallocated,
                unhealthy: all.unhealthy,
                overhead: all.overhead,
                ..Parts::default()
            },
            ..Share::default()
        });
    }
    for s in &mut v {
        s.total = s.parts.sum();
    }
    v.sort_by(|a, b| b.total.total_cmp(&a.total).then_with(|| a.name.cmp(&b.name)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Reservation;
    use proptest::prelude::*;

    fn card() -> PriceCard {
        PriceCard {
            per_gpu_hour: [("H100".to_string(), 3.0), ("A100".to_string(), 2.0)].into(),
            ..PriceCard::default()
        }
    }

    fn job(id: u64, account: &str, model: &str, gpu_h: f64, util: Option<f64>) -> Use {
        Use {
            id,
            account: account.into(),
            user: format!("u{}", id % 3),
            model: model.into(),
            gpu_s: gpu_h * 3600.0,
            useful_s: util.map(|u| gpu_h * 3600.0 * u),
            cause: None,
            cluster: "c1".into(),
            name: "j".into(),
            detail: String::new(),
            completed: true,
            finished: true,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn the_parts_of_a_small_window() {
        let mut c = card();
        c.overhead = [("network".to_string(), 730.0)].into();
        let day = 86_400;
        let mut failed = job(3, "b", "NVIDIA H100", 2.0, Some(0.9));
        failed.cause = Some(Cause::Oom);
        failed.completed = false;
        let uses = vec![job(1, "a", "NVIDIA H100", 10.0, Some(0.75)), job(2, "b", "A100", 5.0, None), failed];
        let unheld =
            vec![Unheld { model: "NVIDIA H100".into(), unallocated_s: 4.0 * 3600.0, unhealthy_s: 3600.0 }];
        let b = compute(&c, 0, day, &uses, &unheld);
        assert!(close(b.parts.useful, 7.5 * 3.0));
        assert!(close(b.parts.allocated_idle, 2.5 * 3.0));
        assert!(close(b.parts.unmeasured, 5.0 * 2.0));
        assert!(close(b.parts.failed, 2.0 * 3.0));
        assert!(close(b.parts.unallocated, 12.0));
        assert!(close(b.parts.unhealthy, 3.0));
        // 730 a month of 730 h: one per hour, 24 for the day.
        assert!(close(b.parts.overhead, 24.0), "{}", b.parts.overhead);
        assert!(close(b.total, 22.5 + 7.5 + 10.0 + 6.0 + 12.0 + 3.0 + 24.0));
        assert_eq!(b.units, 2.0);
        assert!(close(b.unit_cost.unwrap(), b.total / 2.0));
        // Team a: direct 30 of the 46 held; the shared 39 split the same way.
        let a = b.teams.iter().find(|t| t.name == "a").unwrap();
        assert!(close(a.total, 30.0 + 39.0 * 30.0 / 46.0), "{}", a.total);
    }

    #[test]
    fn a_reservation_is_paid_in_full_and_blends_the_rate() {
        let mut c = card();
        c.reserved = vec![Reservation { model: "H100".into(), gpus: 10, monthly: 10.0 * 730.0 }];
        // Reserved rate 1/h. 10 GPUs for 10 h = 100 committed GPU-hours.
        let ten_h = 36_000;
        // Half seen: 50 GPU-hours held; the other 50 committed are unallocated.
        let b = compute(&c, 0, ten_h, &[job(1, "a", "H100", 50.0, Some(1.0))], &[]);
        assert!(close(b.parts.useful, 50.0));
        assert!(close(b.parts.unallocated, 50.0));
        assert!(close(b.total, 100.0));
        assert!(close(b.committed, 100.0));
        // 150 seen: 100 by the commitment, 50 on demand at 3; all at the blend.
        let b = compute(&c, 0, ten_h, &[job(1, "a", "H100", 150.0, Some(1.0))], &[]);
        assert!(close(b.total, 100.0 + 150.0), "{}", b.total);
        assert!(close(b.rates[0].effective, 250.0 / 150.0));
    }

    #[test]
    fn a_budget_burns_and_runs_out() {
        let mut c = card();
        c.budgets = [("a".to_string(), 300.0), ("b".to_string(), 1.0e9)].into();
        // Team a spends 30 (10 H100-hours) in a day: 300 lasts 10 days.
        let b = compute(&c, 0, 86_400, &[job(1, "a", "H100", 10.0, Some(1.0))], &[]);
        let a = &b.budgets[0];
        assert_eq!(a.team, "a");
        assert!(close(a.spent, 30.0) && close(a.burn_per_day, 30.0));
        assert_eq!(a.runs_out, Some(10 * 86_400));
        assert_eq!(b.budgets[1].runs_out, None, "b spent nothing");
    }

    #[test]
    fn failed_hours_split_by_cause_and_the_top_burners() {
        let mut oom = job(1, "a", "H100", 4.0, Some(0.5));
        oom.cause = Some(Cause::Oom);
        let mut nf = job(2, "b", "H100", 10.0, None);
        nf.cause = Some(Cause::NodeFailure);
        nf.detail = "node gpu-004 XID 79".into();
        let mut cancelled = job(3, "a", "H100", 2.0, Some(1.0));
        cancelled.cause = Some(Cause::UserCancel);
        let b = compute(&card(), 0, 86_400, &[oom, nf, cancelled, job(4, "a", "H100", 1.0, Some(1.0))], &[]);
        let of = |c: Cause| b.causes.iter().find(|r| r.cause == c).unwrap();
        assert!(close(of(Cause::Oom).cost, 12.0) && close(of(Cause::NodeFailure).gpu_hours, 10.0));
        assert!(close(b.parts.failed, 42.0), "OOM and node failure are failed: {}", b.parts.failed);
        // A cancelled run is listed under its cause but counted useful, not failed.
        assert!(!of(Cause::UserCancel).failed && close(of(Cause::UserCancel).gpu_hours, 2.0));
        assert!(close(b.parts.useful, 3.0 * 3.0 + 0.0), "{}", b.parts.useful);
        assert_eq!(b.causes.len(), Cause::ALL.len());
        assert_eq!(of(Cause::Timeout).jobs, 0);
        let ids: Vec<u64> = b.burners.iter().map(|x| x.id).collect();
        assert_eq!(ids, [2, 1, 3], "most expensive first; the completed job is not a burner");
        assert_eq!(b.burners[0].detail, "node gpu-004 XID 79");
        assert_eq!(b.clusters.len(), 1);
        assert_eq!(b.clusters[0].name, "c1");
    }

    #[test]
    fn queue_wait_is_requested_gpus_times_the_wait_inside_the_window() {
        let c = PriceCard {
            teams: [("proj".to_string(), "research".to_string())].into(),
            ..PriceCard::default()
        };
        let w = |account: &str, queue: &str, gpus, submit, start| Waiting {
            account: account.into(),
            queue: queue.into(),
            gpus,
            submit,
            start,
            until: 10_000,
        };
        let jobs = [
            w("proj", "gpu", 8, 0, Some(3_600)),      // 8 GPUs × 1 h
            w("proj", "gpu", 4, -3_600, Some(1_800)), // half an hour inside the window
            w("other", "gpu", 2, 9_000, None),        // still waiting at 10,000
            w("other", "cpu", 0, 0, Some(5_000)),     // no GPUs: no GPU-hours
            w("other", "gpu", 1, 0, Some(0)),         // never waited
        ];
        let v = waits(&c, 0, 10_000, &jobs);
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].team.as_str(), v[0].queue.as_str(), v[0].jobs), ("research", "gpu", 2));
        assert!(close(v[0].gpu_hours, 8.0 + 2.0));
        assert_eq!(v[0].longest_s, 3_600);
        assert_eq!((v[1].team.as_str(), v[1].jobs, v[1].longest_s), ("other", 1, 1_000));
        assert!(close(v[1].gpu_hours, 2.0 * 1_000.0 / 3_600.0));
    }

    #[test]
    fn a_mig_slice_prices_at_its_share() {
        let mut c = card();
        c.share = [("1g.10gb".to_string(), 1.0 / 7.0)].into();
        let b = compute(&c, 0, 3600, &[job(1, "a", "NVIDIA H100 MIG 1g.10gb", 7.0, Some(1.0))], &[]);
        assert!(close(b.total, 3.0));
        assert!(close(b.gpu_hours.useful, 1.0));
    }

    #[test]
    fn with_no_jobs_the_shared_costs_go_to_one_row() {
        let mut c = card();
        c.overhead = [("support".to_string(), 100.0)].into();
        let unheld = vec![Unheld { model: "H100".into(), unallocated_s: 3600.0, unhealthy_s: 0.0 }];
        let b = compute(&c, 0, 3600, &[], &unheld);
        assert_eq!(b.teams.len(), 1);
        assert_eq!(b.teams[0].name, UNASSIGNED);
        assert!(close(b.teams[0].total, b.total));
        assert_eq!(b.unit_cost, None);
    }

    fn arb_use() -> impl Strategy<Value = Use> {
        (
            0u64..50,
            prop::sample::select(vec!["a", "b", "c", "d"]),
            prop::sample::select(vec!["NVIDIA H100", "A100 MIG 1g.10gb", "L4", "T4", ""]),
            0.0f64..1.0e6,
            prop::option::of(0.0f64..1.5),
            prop::option::of(prop::sample::select(Cause::ALL.to_vec())),
            any::<bool>(),
        )
            .prop_map(|(id, acct, model, gpu_s, util, cause, completed)| Use {
                id,
                account: acct.into(),
                user: format!("user{}", id % 5),
                model: model.into(),
                gpu_s,
                useful_s: util.map(|u| u * gpu_s),
                cause,
                cluster: format!("c{}", id % 2),
                name: "j".into(),
                detail: String::new(),
                completed: completed && cause.is_none(),
                finished: completed || cause.is_some(),
            })
    }

    fn arb_card() -> impl Strategy<Value = PriceCard> {
        (
            prop::collection::vec(
                (prop::sample::select(vec!["H100", "A100", "L4", "GPU"]), 0u32..64, 0.0f64..1.0e6),
                0..3,
            ),
            prop::collection::btree_map(
                prop::sample::select(vec!["network".to_string(), "storage".into(), "support".into()]),
                0.0f64..1.0e5,
                0..3,
            ),
            prop::option::of(0.01f64..1.0),
            prop::sample::select(vec![Unit::CompletedRuns, Unit::FinishedJobs, Unit::GpuHours]),
            any::<bool>(),
        )
            .prop_map(|(res, overhead, mig, unit, map_team)| {
                let mut c = PriceCard {
                    reserved: res
                        .into_iter()
                        .map(|(m, gpus, monthly)| Reservation { model: m.into(), gpus, monthly })
                        .collect(),
                    overhead,
                    unit,
                    ..PriceCard::default()
                };
                if let Some(s) = mig {
                    c.share.insert("1g.10gb".into(), s);
                }
                if map_team {
                    c.teams.insert("a".into(), "research".into());
                    c.teams.insert("b".into(), "research".into());
                }
                c
            })
    }

    fn arb_unheld() -> impl Strategy<Value = Unheld> {
        (prop::sample::select(vec!["NVIDIA H100", "L4", "B200"]), 0.0f64..1.0e6, 0.0f64..1.0e6)
            .prop_map(|(m, a, h)| Unheld { model: m.into(), unallocated_s: a, unhealthy_s: h })
    }

    proptest! {
        /// The parts always add up to the total; every team's, user's and account's shares add
        /// up to it too, each share's parts to its own total; a commitment is always paid; and
        /// without commitments the total is every GPU-hour at its price and share plus overhead.
        #[test]
        fn the_bill_reconciles(
            card in arb_card(),
            uses in prop::collection::vec(arb_use(), 0..40),
            unheld in prop::collection::vec(arb_unheld(), 0..4),
            window in 0i64..(90 * 86_400),
        ) {
            let b = compute(&card, 1_000, 1_000 + window, &uses, &unheld);
            prop_assert!(b.total.is_finite());
            prop_assert!(close(b.parts.sum(), b.total), "{} vs {}", b.parts.sum(), b.total);
            // The failed part is the sum of its causes; every interrupted run is under one.
            let (mut fc, mut fh) = (0.0, 0.0);
            for c in b.causes.iter().filter(|c| c.failed) {
                fc += c.cost;
                fh += c.gpu_hours;
            }
            prop_assert!(close(fc, b.parts.failed), "causes {} vs failed {}", fc, b.parts.failed);
            prop_assert!(close(fh, b.gpu_hours.failed), "cause hours {} vs {}", fh, b.gpu_hours.failed);
            let interrupted = uses.iter().filter(|u| u.cause.is_some()).count() as u32;
            prop_assert_eq!(b.causes.iter().map(|c| c.jobs).sum::<u32>(), interrupted);
            prop_assert!(b.burners.len() <= BURNERS);
            prop_assert!(b.burners.windows(2).all(|w| w[0].cost >= w[1].cost));
            for shares in [&b.teams, &b.users, &b.accounts, &b.clusters] {
                let sum: f64 = shares.iter().map(|s| s.total).sum();
                prop_assert!(close(sum, b.total), "shares {} vs total {}", sum, b.total);
                for s in shares.iter() {
                    prop_assert!(close(s.parts.sum(), s.total));
                    prop_assert!(s.total >= 0.0);
                }
            }
            let overhead: f64 = card.overhead.values().sum::<f64>() * window as f64 / MONTH_S as f64;
            prop_assert!(close(b.parts.overhead, overhead));
            prop_assert!(b.total + 1e-6 * b.total.max(1.0) >= b.committed + overhead);
            if card.reserved.is_empty() {
                let held: f64 = uses.iter().map(|u| u.gpu_s / 3600.0 * card.share(&u.model) * card.price(&u.model)).sum();
                let free: f64 = unheld.iter().map(|h| (h.unallocated_s + h.unhealthy_s) / 3600.0 * card.price(&h.model)).sum();
                prop_assert!(close(b.total, held + free + overhead), "{} vs {}", b.total, held + free + overhead);
            }
        }
    }
}
