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
        s.job_ix = JobIndex::of(&s.jobs);
        Ok(s)
    }
}
