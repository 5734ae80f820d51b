//! Files gpuplane keeps beside the console that outlive it: the usage ledger, the ack store
//! (acknowledged incidents, shared by the consoles on one data dir) and the event journal
//! (`timeline`: what changed, shared the same way).
//!
//! This is base-layer code: plain records in, plain records out, no cluster state. What to
//! record is decided above the state (`cost::track`); the console and `get` hand the records
//! to [`ledger::Writer`], which owns the database on a thread of its own.

pub mod acks;
pub mod ledger;
pub mod sqlite;
pub mod status;
pub mod timeline;

pub use ledger::{
    CapacitySample, GpuInterval, JobRecord, Ledger, LedgerError, LedgerErrorKind, Observation, WindowData,
};
