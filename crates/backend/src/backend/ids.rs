//! Stable ids shared by the backends.

use crate::model::JobId;
use std::hash::Hasher;

/// The id of work that has no number of its own (a pod, a Kubernetes owner): FNV-1a (64-bit,
/// the `fnv` crate's hasher) of `parts` joined by `/`, with the top bit set so that it never
/// equals a Slurm job id. The same in every run and every process: these ids are kept and
/// joined across sources, so the hash must never change.
pub fn job_id(parts: &[&str]) -> JobId {
    let mut h = fnv::FnvHasher::default();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h.write(b"/");
        }
        h.write(p.as_bytes());
    }
    h.finish() | 1 << 63
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_1a_as_published() {
        // The published FNV-1a 64-bit values of "", "a" and "foobar" (top bit set here).
        assert_eq!(job_id(&[]), 0xcbf2_9ce4_8422_2325 | 1 << 63);
        assert_eq!(job_id(&["a"]), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(job_id(&["foobar"]), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn ids_never_change() {
        assert_eq!(job_id(&["team-3", "train-0-worker-1"]), 0xef79_f109_602b_a0b7);
        assert_eq!(job_id(&["ml", "JobSet", "llama-70b"]), 0xef61_99f5_a101_87f4);
        assert_eq!(job_id(&["a", "Job", "x"]), 0x8483_bbb9_9f45_b86f);
        // The parts are joined with `/`: the same text split differently is the same id.
        assert_eq!(job_id(&["a", "Job", "x"]), job_id(&["a/Job", "x"]));
    }
}
