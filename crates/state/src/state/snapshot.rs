//! The whole state as bytes and back (borsh): the flight recorder's keyframes. What is an index
//! over other fields is not written and is rebuilt on reading.

use super::{ClusterState, job_index::JobIndex};
use crate::model::JobId;
use borsh::io::{Read, Result, Write};
use borsh::{BorshDeserialize, BorshSerialize};
use std::collections::BTreeMap;

type TelemetryJobs<K> = BTreeMap<K, smallvec::SmallVec<[JobId; 2]>>;

pub(super) fn write_telemetry_jobs<K: BorshSerialize, W: Write>(
    m: &TelemetryJobs<K>,
    w: &mut W,
) -> Result<()> {
    (m.len() as u32).serialize(w)?;
    for (k, v) in m {
        k.serialize(w)?;
        v.as_slice().serialize(w)?;
    }
    Ok(())
}

pub(super) fn read_telemetry_jobs<K: BorshDeserialize + Ord, R: Read>(r: &mut R) -> Result<TelemetryJobs<K>> {
    let n = u32::deserialize_reader(r)?;
    let mut m = BTreeMap::new();
    for _ in 0..n {
        let k = K::deserialize_reader(r)?;
        let v = Vec::<JobId>::deserialize_reader(r)?;
        m.insert(k, smallvec::SmallVec::from_vec(v));
    }
    Ok(m)
}

impl ClusterState {
    /// The state as bytes ([`ClusterState::from_snapshot`] reads them back).
    pub fn snapshot(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1 << 20);
        // Writing to a vector cannot fail.
        let _ = self.serialize(&mut out);
        out
    }

    /// A state from [`ClusterState::snapshot`]'s bytes, its indexes rebuilt.
    pub fn from_snapshot(mut bytes: &[u8]) -> std::result::Result<ClusterState, String> {
        let mut s = ClusterState::deserialize_reader(&mut bytes).map_err(|e| e.to_string())?;
        if !bytes.is_empty() {
            return Err(format!("{} bytes after the state", bytes.len()));
        }
        // The indexes are rebuilt from what they index, never trusted from the bytes.
        s.job_ix = JobIndex::of(&s.jobs);
        s.node_ix =
            s.nodes.iter().enumerate().map(|(i, n)| ((n.cluster.clone(), n.name.clone()), i)).collect();
        let mut base = 0;
        s.gpu_base = s
            .nodes
            .iter()
            .map(|n| {
                let b = base;
                base += n.gpus.len();
                b
            })
            .collect();
        if !s.fleet.fits(s.nodes.len(), base) {
            return Err(format!("a history of {} nodes and {base} GPUs, as the state holds", s.nodes.len()));
        }
        if s.storage_history.len() != s.storage.len() {
            return Err(format!("a storage history per filesystem ({} of them)", s.storage.len()));
        }
        Ok(s)
    }
}
