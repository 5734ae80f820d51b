//! gpuplane: one terminal console for every plane of a GPU cluster.
//!
//! Backends → [`model::protocol::Update`] → one [`state::ClusterState`] → pure views.
//!
//! The layers are crates (docs/architecture.md): `gpuplane-model` at the bottom, then
//! `gpuplane-infra` and `gpuplane-backend`, `gpuplane-state`, `gpuplane-ops`, `gpuplane-tui`,
//! and this crate on top (the command line, configuration and the binary). It re-exports every
//! layer's modules under their old paths, so `gpuplane::state::ClusterState` still names them.

pub use gpuplane_backend::backend;
pub use gpuplane_infra::{audit, datafile, playbook, store};
pub use gpuplane_model::{clock, memory, model, sanitize};
pub use gpuplane_ops::{acceptance, cost, ops};
pub use gpuplane_state::{state, testing};
pub use gpuplane_tui::tui;

pub mod cli;
pub mod commands;
pub mod config;
pub mod executors;
#[doc(hidden)]
pub mod fuzzing;
