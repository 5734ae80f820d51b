//! gpuplane's infrastructure: the tamper-evident audit log, the stores (the usage ledger, acks,
//! the timeline), data files, playbooks and the flight recorder's files. Above the model; below the backends' consumers.

use gpuplane_model::{model, sanitize};

pub mod audit;
pub mod datafile;
pub mod playbook;
pub mod record;
pub mod store;
