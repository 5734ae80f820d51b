//! The simulator's own bookkeeping; its world as the state sees it is tested in gpuplane-ops
//! (crates/ops/src/tests/sim.rs), above the state.

use super::*;
use crate::model::LinkKind;

#[test]
fn node_names_widen_with_the_count() {
    assert_eq!(hardware::node_name(0, 16), "gpu-001");
    assert_eq!(hardware::node_name(999, 1000), "gpu-1000");
    assert_eq!(hardware::node_name(0, 10_000), "gpu-00001");
    assert_eq!(hardware::node_name(9_999, 10_000), "gpu-10000");
}

#[test]
fn topologies_for_any_node_size() {
    for spec in &catalog::POOLS {
        for gpn in 1..=16 {
            let t = hardware::topology(spec, gpn);
            assert_eq!(t.matrix.len(), gpn);
            assert!(t.matrix.iter().all(|r| r.len() == gpn));
            assert!((0..gpn).all(|i| t.matrix[i][i] == LinkKind::X));
            assert!((0..gpn).all(|i| (0..gpn).all(|j| t.matrix[i][j] == t.matrix[j][i])));
            assert!(t.nics.iter().all(|n| n.to_gpu.len() == gpn && n.to_gpu.contains(&LinkKind::Pix)));
            assert_eq!(t.cpu_affinity.len(), gpn);
            assert_eq!(t.numa.len(), gpn);
        }
    }
}

#[test]
fn ended_states_are_kept_by_id_in_any_order() {
    let mut e = jobs::Ended::default();
    e.insert(105, JobState::Failed);
    e.insert(103, JobState::Completed);
    e.insert(108, JobState::Cancelled);
    assert_eq!(
        (e.len(), e.get(103), e.get(105), e.get(104), e.get(7)),
        (3, Some(JobState::Completed), Some(JobState::Failed), None, None)
    );
    assert!(e.remove(103));
    assert!(!e.remove(103), "forgotten once");
    assert!(!e.remove(104), "never kept");
    assert_eq!((e.len(), e.get(105), e.get(108)), (2, Some(JobState::Failed), Some(JobState::Cancelled)));
    assert!(e.remove(105) && e.remove(108));
    assert_eq!(e.len(), 0);
    e.insert(2, JobState::Timeout);
    assert_eq!(e.get(2), Some(JobState::Timeout));
}
