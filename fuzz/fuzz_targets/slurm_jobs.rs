//! `parse::jobs_streamed` (v0.0.42) under every `stream::Policy` against the serde_json
//! reference decoder, on arbitrary bytes: the first byte says how many chunk sizes follow
//! (0–3), each next byte one size; the rest is the body (`gpuplane::fuzzing::slurm_jobs`, which
//! the corpus replay test `tests/hermetic/fuzz_corpus.rs` runs too).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| gpuplane::fuzzing::slurm_jobs(data));
