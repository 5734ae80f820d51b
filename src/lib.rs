//! gpuplane: one terminal console for every plane of a GPU cluster.
//!
//! Backends → [`model::protocol::Update`] → one [`state::ClusterState`] → pure views.

pub mod acceptance;
pub mod audit;
pub mod backend;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod cost;
pub mod datafile;
#[doc(hidden)]
pub mod fuzzing;
pub mod memory;
pub mod model;
pub mod ops;
pub mod playbook;
pub mod sanitize;
pub mod state;
pub mod store;
#[doc(hidden)]
pub mod testing;
pub mod tui;
