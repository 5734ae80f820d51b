//! Teams and people across the fleet. Each cluster names them its own way (a Slurm account
//! or a Kubernetes namespace; a Slurm user or a Kubernetes user label); the configuration maps
//! those per cluster to one team and one person (`[cluster.teams]`, `[cluster.people]`), and
//! quotas and active jobs roll up per team and per person, each with its clusters' parts.

use super::ClusterState;
use crate::model::{JobState, Text};
use std::collections::{BTreeMap, HashMap};

/// Per cluster: account or namespace → team, and scheduler user → person.
#[derive(Debug, Clone, Default, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Directory {
    teams: HashMap<(Text, Text), Text>,
    people: HashMap<(Text, Text), Text>,
}

impl Directory {
    /// Adds one cluster's names (`cluster` as its objects carry it).
    pub fn add(
        &mut self,
        cluster: &str,
        teams: &BTreeMap<String, String>,
        people: &BTreeMap<String, String>,
    ) {
        let c = Text::from(cluster);
        for (k, v) in teams {
            self.teams.insert((c.clone(), Text::from(k.as_str())), Text::from(v.as_str()));
        }
        for (k, v) in people {
            self.people.insert((c.clone(), Text::from(k.as_str())), Text::from(v.as_str()));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.teams.is_empty() && self.people.is_empty()
    }
}

/// One cluster's part of a team's or a person's roll-up (`cluster` empty: the whole).
#[derive(
    Debug, Clone, Default, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
pub struct Part {
    #[serde(skip_serializing_if = "Text::is_empty")]
    pub cluster: Text,
    /// GPU quota and GPUs in use by the quotas mapped to the team (people have none).
    pub gpu_quota: u32,
    pub gpu_used: u32,
    pub running: u32,
    pub pending: u32,
    pub running_gpus: u32,
    pub pending_gpus: u32,
}

impl Part {
    fn add(&mut self, o: &Part) {
        self.gpu_quota = self.gpu_quota.saturating_add(o.gpu_quota);
        self.gpu_used = self.gpu_used.saturating_add(o.gpu_used);
        self.running = self.running.saturating_add(o.running);
        self.pending = self.pending.saturating_add(o.pending);
        self.running_gpus = self.running_gpus.saturating_add(o.running_gpus);
        self.pending_gpus = self.pending_gpus.saturating_add(o.pending_gpus);
    }
}

/// A team or a person across the fleet: the whole, and each cluster's part.
#[derive(
    Debug, Clone, Default, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
pub struct Rollup {
    pub name: Text,
    pub total: Part,
    pub clusters: Vec<Part>,
}

impl ClusterState {
    /// Sets the per-cluster team and people names and rolls up again.
    pub fn set_directory(&mut self, d: Directory) {
        self.directory = d;
        self.roll_up();
        self.generation += 1;
    }

    /// The team of a cluster's account or namespace: the cluster's `[cluster.teams]`, else
    /// the price card's `[prices.teams]`, else the account itself.
    pub fn team_of<'a>(&'a self, cluster: &Text, account: &'a str) -> &'a str {
        match self.directory.teams.get(&(cluster.clone(), Text::from(account))) {
            Some(t) => t,
            None => self.prices.team_of(account),
        }
    }

    /// The person a cluster's user is (`[cluster.people]`), else the user name itself.
    pub fn person_of<'a>(&'a self, cluster: &Text, user: &'a str) -> &'a str {
        match self.directory.people.get(&(cluster.clone(), Text::from(user))) {
            Some(p) => p,
            None => user,
        }
    }

    /// The person the console's user `user` is: the person some cluster maps that name to
    /// (the first cluster in order that does), else the name itself.
    pub fn person<'a>(&'a self, user: &'a str) -> &'a str {
        let u = Text::from(user);
        self.clusters
            .iter()
            .find_map(|c| self.directory.people.get(&(c.clone(), u.clone())))
            .map_or(user, |p| p.as_str())
    }

    /// Whether job `j` is the person `person`'s (as [`Self::person`] names them).
    pub fn is_persons(&self, j: &crate::model::Job, person: &str) -> bool {
        if self.directory.people.is_empty() {
            return j.user == person;
        }
        self.person_of(&j.cluster, &j.user) == person
    }

    /// Re-derives the roll-ups after jobs or quotas changed: one walk over the quotas and
    /// the active jobs, keyed by borrowed names (no allocation per job).
    pub(super) fn roll_up(&mut self) {
        type Acc<'s> = super::Map<(&'s str, &'s Text), Part>;
        let (mut teams, mut people): (Acc<'_>, Acc<'_>) = Default::default();
        for q in &self.quotas {
            let t = teams.entry((self.team_of(&q.cluster, &q.team), &q.cluster)).or_default();
            // Sums of cluster figures saturate: a hostile quota or job size never overflows.
            t.gpu_quota = t.gpu_quota.saturating_add(q.gpu_quota);
            t.gpu_used = t.gpu_used.saturating_add(q.gpu_used);
        }
        for (cluster, id) in self.active.keys() {
            let Some(i) = self.job_ix.get(&self.jobs, cluster, *id) else { continue };
            let j = &self.jobs[i];
            let team = self.team_of(&j.cluster, &j.account);
            let person = self.person_of(&j.cluster, &j.user);
            for p in [
                teams.entry((team, &j.cluster)).or_default(),
                people.entry((person, &j.cluster)).or_default(),
            ] {
                if j.state == JobState::Pending {
                    p.pending += 1;
                    p.pending_gpus = p.pending_gpus.saturating_add(j.gpus);
                } else {
                    p.running += 1;
                    p.running_gpus = p.running_gpus.saturating_add(j.gpus);
                }
            }
        }
        let order: HashMap<&Text, usize> = self.clusters.iter().enumerate().map(|(i, c)| (c, i)).collect();
        let done = |m: Acc<'_>| -> Vec<Rollup> {
            let mut by: BTreeMap<&str, Vec<Part>> = BTreeMap::new();
            for ((who, cluster), mut p) in m {
                p.cluster = cluster.clone();
                by.entry(who).or_default().push(p);
            }
            by.into_iter()
                .map(|(name, mut clusters)| {
                    clusters.sort_by_key(|p| order.get(&p.cluster).copied().unwrap_or(usize::MAX));
                    let mut total = Part::default();
                    clusters.iter().for_each(|p| total.add(p));
                    Rollup { name: Text::from(name), total, clusters }
                })
                .collect()
        };
        let (t, p) = (done(teams), done(people));
        self.team_rollup = t;
        self.people_rollup = p;
        self.rollup_dirty = false;
    }
}
