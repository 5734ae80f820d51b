//! Where each job is in `ClusterState::jobs`, by (cluster, id).
//!
//! A `HashMap<(Text, JobId), usize>` keeps a copy of every key: 40 bytes a slot, 10.7 MB for
//! 200,000 jobs (heaptrack, docs/performance.md). This table keeps only the position (4 bytes
//! a slot) and compares keys in the job list itself, as `indexmap` does for its entries.

use crate::model::{Job, JobId};
use hashbrown::HashTable;
use std::hash::BuildHasher;

#[derive(Debug, Clone, Default)]
pub(super) struct JobIndex {
    table: HashTable<u32>,
    hasher: foldhash::fast::FixedState,
}

fn is(j: &Job, cluster: &str, id: JobId) -> bool {
    j.id == id && j.cluster == cluster
}

fn hash_of(hasher: &foldhash::fast::FixedState, j: &Job) -> u64 {
    hasher.hash_one((j.cluster.as_str(), j.id))
}

impl JobIndex {
    fn hash(&self, cluster: &str, id: JobId) -> u64 {
        self.hasher.hash_one((cluster, id))
    }

    /// An index of every job in `jobs`.
    pub fn of(jobs: &[Job]) -> Self {
        let mut ix = Self::default();
        ix.reserve(jobs, jobs.len());
        for i in 0..jobs.len() {
            ix.insert(jobs, i);
        }
        ix
    }

    pub fn get(&self, jobs: &[Job], cluster: &str, id: JobId) -> Option<usize> {
        let h = self.hash(cluster, id);
        self.table.find(h, |&i| is(&jobs[i as usize], cluster, id)).map(|&i| i as usize)
    }

    pub fn contains(&self, jobs: &[Job], cluster: &str, id: JobId) -> bool {
        self.get(jobs, cluster, id).is_some()
    }

    pub fn reserve(&mut self, jobs: &[Job], more: usize) {
        let Self { table, hasher } = self;
        table.reserve(more, |&i| hash_of(hasher, &jobs[i as usize]));
    }

    /// Indexes `jobs[i]` (a job not indexed yet).
    pub fn insert(&mut self, jobs: &[Job], i: usize) {
        let Self { table, hasher } = self;
        table.insert_unique(hash_of(hasher, &jobs[i]), i as u32, |&k| hash_of(hasher, &jobs[k as usize]));
    }

    /// Forgets a job; its position, when it was indexed.
    pub fn remove(&mut self, jobs: &[Job], cluster: &str, id: JobId) -> Option<usize> {
        let h = self.hash(cluster, id);
        let entry = self.table.find_entry(h, |&i| is(&jobs[i as usize], cluster, id)).ok()?;
        Some(entry.remove().0 as usize)
    }

    /// The job now at `i` (moved there from `from`) is indexed at its new place.
    pub fn moved(&mut self, jobs: &[Job], from: usize, i: usize) {
        let h = hash_of(&self.hasher, &jobs[i]);
        if let Some(slot) = self.table.find_mut(h, |&k| k as usize == from) {
            *slot = i as u32;
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.table.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Text;

    fn base() -> Job {
        let c = crate::backend::sim::SimConfig { nodes: 4, ..Default::default() };
        crate::testing::state_after(c, 0).jobs.swap_remove(0)
    }

    fn job(base: &Job, cluster: &str, id: JobId) -> Job {
        Job { cluster: Text::from(cluster), id, ..base.clone() }
    }

    #[test]
    fn same_ids_in_two_clusters_are_two_jobs() {
        let b = base();
        let mut jobs = vec![job(&b, "a", 1), job(&b, "b", 1), job(&b, "a", 2)];
        let mut ix = JobIndex::of(&jobs);
        assert_eq!(
            (ix.get(&jobs, "a", 1), ix.get(&jobs, "b", 1), ix.get(&jobs, "a", 2)),
            (Some(0), Some(1), Some(2))
        );
        assert_eq!(ix.get(&jobs, "b", 2), None);
        // Removed as the state removes: swap_remove, then the moved job's place.
        assert_eq!(ix.remove(&jobs, "a", 1), Some(0));
        jobs.swap_remove(0);
        ix.moved(&jobs, 2, 0);
        assert_eq!(
            (ix.get(&jobs, "a", 2), ix.get(&jobs, "b", 1), ix.get(&jobs, "a", 1)),
            (Some(0), Some(1), None)
        );
        assert_eq!(ix.len(), 2);
    }

    #[test]
    fn positions_hold_through_growth() {
        let b = base();
        let mut jobs = Vec::new();
        let mut ix = JobIndex::default();
        for id in 0..5_000 {
            jobs.push(job(&b, if id % 2 == 0 { "even" } else { "odd" }, id / 2));
            ix.insert(&jobs, jobs.len() - 1);
        }
        for (i, j) in jobs.iter().enumerate() {
            assert_eq!(ix.get(&jobs, &j.cluster, j.id), Some(i));
        }
    }
}
