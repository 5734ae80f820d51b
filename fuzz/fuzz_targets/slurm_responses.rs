//! slurmrestd answers of every API version (v0.0.38 to v0.0.43: nodes, partitions, jobs, job
//! states, associations, QOS, accounting jobs, users, error bodies) through the Slurm backend's
//! own parse functions and the poller's steps after them (`gpuplane::fuzzing::slurm`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| gpuplane::fuzzing::slurm::check(data));
