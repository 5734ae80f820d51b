//! gpuplane's infrastructure: the tamper-evident audit log, the stores (the usage ledger, acks,
//! the timeline), data files and playbooks. Above the model; below the backends' consumers.

use gpuplane_model::{model, sanitize};

pub mod audit;
pub mod datafile;
pub mod playbook;
pub mod store;
