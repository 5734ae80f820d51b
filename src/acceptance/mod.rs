//! Acceptance tests: rerun NCCL `all_reduce_perf` on chosen nodes, read what it printed, keep
//! every run, and judge it against a baseline and against the fleet.

pub mod parse;
