//! Acceptance tests: rerun NCCL `all_reduce_perf` on chosen nodes, read what it printed, keep
//! every run, and judge it against a baseline and against the fleet.

pub mod config;
pub mod judge;
pub mod kube;
pub mod launch;
pub mod parse;
pub mod report;
pub mod store;

pub use config::{AcceptanceConfig, JudgeConfig, Template};
pub use judge::{Judgement, NodeAcceptance, Verdict, by_node, judge};
pub use store::{Mode, RunRecord, Store};

/// The largest output read (a real sweep is a few KB; NCCL_DEBUG=INFO logs a few MB).
pub const MAX_OUTPUT: u64 = 256 << 20;
