//! gpuplane's road for writes and runs: operators' actions (plan, confirm, audit, execute),
//! the NCCL acceptance test and cost (the ledger's bill, efficiency, reports).

use gpuplane_backend::backend;
use gpuplane_infra::{audit, store};
use gpuplane_model::{clock, model, sanitize};
use gpuplane_state::state;
#[cfg(test)]
use gpuplane_state::testing;

pub mod acceptance;
pub mod cost;
pub mod ops;

#[cfg(test)]
mod tests;
