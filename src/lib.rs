//! gpuplane: one terminal console for every plane of a GPU cluster.
//!
//! Backends → [`backend::Update`] → one [`state::ClusterState`] → pure views.

pub mod acceptance;
pub mod audit;
pub mod backend;
pub mod cli;
pub mod commands;
pub mod config;
pub mod cost;
pub mod get;
pub mod model;
pub mod ops;
pub mod plugins;
pub mod sanitize;
pub mod state;
pub mod tui;
