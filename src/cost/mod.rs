//! Cost: GPU-hours and money per job and per team over a time window, split into useful and
//! idle GPU-hours, from the price card.

use crate::model::{Epoch, Job, JobState, Text};
use crate::state::ClusterState;
use std::collections::HashMap;

/// The windows the Cost view offers.
pub const WINDOWS: &[(i64, &str)] =
    &[(3_600, "1h"), (86_400, "24h"), (7 * 86_400, "7d"), (30 * 86_400, "30d")];

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct JobCost {
    /// Index into `ClusterState::jobs` at the time of the report.
    #[serde(skip)]
    pub index: usize,
    pub id: u64,
    pub gpu_hours: f64,
    pub cost: f64,
    pub idle_cost: f64,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TeamCost {
    pub team: Text,
    pub jobs: u32,
    pub gpu_hours: f64,
    pub useful_gpu_hours: f64,
    pub cost: f64,
    pub idle_cost: f64,
    /// GPU-hours burnt by jobs that failed (FAILED, TIMEOUT, NODE_FAIL).
    pub failed_gpu_hours: f64,
    pub failed_cost: f64,
}

impl TeamCost {
    pub fn useful_pct(&self) -> Option<f64> {
        (self.gpu_hours > 0.0).then(|| 100.0 * self.useful_gpu_hours / self.gpu_hours)
    }
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CostReport {
    pub window_s: i64,
    pub until: Epoch,
    pub currency: String,
    pub teams: Vec<TeamCost>,
    /// Jobs with GPU time inside the window, most expensive first.
    pub jobs: Vec<JobCost>,
    pub total: f64,
    pub idle_total: f64,
    /// What the built key was: (generation, window).
    #[serde(skip)]
    pub built_for: Option<(u64, i64)>,
}

/// GPU-seconds of a job that fall inside [from, to]: its accumulated GPU time scaled by the
/// share of its run inside the window (GPU count × overlap when no usage was accumulated).
fn in_window(j: &Job, from: Epoch, to: Epoch) -> Option<(f64, f64)> {
    let start = j.start?;
    let end = j.end.unwrap_or(to);
    let overlap = (end.min(to) - start.max(from)).max(0) as f64;
    if overlap <= 0.0 {
        return None;
    }
    let run = (end - start).max(1) as f64;
    let (gs, us) = if j.gpu_seconds > 0.0 {
        (j.gpu_seconds, j.useful_gpu_seconds)
    } else {
        (f64::from(j.gpus) * run, 0.0)
    };
    let share = (overlap / run).min(1.0);
    Some((gs * share, us * share))
}

pub fn report(s: &ClusterState, window_s: i64) -> CostReport {
    let (from, to) = (s.now - window_s, s.now);
    let mut teams: HashMap<&str, TeamCost> = HashMap::new();
    let mut jobs = Vec::new();
    let (mut total, mut idle_total) = (0.0, 0.0);
    for (index, j) in s.jobs.iter().enumerate() {
        let Some((gs, us)) = in_window(j, from, to) else { continue };
        let price = s.prices.price(j.gpu_model.as_deref().unwrap_or(""));
        let (gh, uh) = (gs / 3600.0, us / 3600.0);
        let cost = gh * price;
        let idle_cost = (gh - uh).max(0.0) * price;
        total += cost;
        idle_total += idle_cost;
        let t = teams
            .entry(j.account.as_str())
            .or_insert_with(|| TeamCost { team: j.account.clone(), ..Default::default() });
        t.jobs += 1;
        t.gpu_hours += gh;
        t.useful_gpu_hours += uh;
        t.cost += cost;
        t.idle_cost += idle_cost;
        if j.state.is_failure() || (j.state == JobState::Cancelled && j.exit_reason.is_some()) {
            t.failed_gpu_hours += gh;
            t.failed_cost += cost;
        }
        jobs.push(JobCost { index, id: j.id, gpu_hours: gh, cost, idle_cost });
    }
    let mut teams: Vec<TeamCost> = teams.into_values().collect();
    teams.sort_by(|a, b| b.cost.total_cmp(&a.cost).then(a.team.cmp(&b.team)));
    jobs.sort_by(|a, b| b.cost.total_cmp(&a.cost).then(a.id.cmp(&b.id)));
    CostReport {
        window_s,
        until: to,
        currency: s.prices.currency.clone(),
        teams,
        jobs,
        total,
        idle_total,
        built_for: Some((s.generation, window_s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(start: i64, end: Option<i64>, gpus: u32, gs: f64) -> Job {
        Job {
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
        }
    }

    #[test]
    fn window_takes_the_overlapping_share() {
        // ran 0..200, window 100..300: half of it
        let (gs, us) = in_window(&job(0, Some(200), 8, 1600.0), 100, 300).unwrap();
        assert_eq!((gs, us), (800.0, 400.0));
        assert!(in_window(&job(0, Some(50), 8, 400.0), 100, 300).is_none());
    }

    #[test]
    fn without_accumulated_usage_gpu_count_times_overlap() {
        let (gs, us) = in_window(&job(0, None, 4, 0.0), 0, 100).unwrap();
        assert_eq!((gs, us), (400.0, 0.0));
    }
}
