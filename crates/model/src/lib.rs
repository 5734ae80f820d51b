//! gpuplane's bottom layer: the domain types and their identity keys, the update protocol that
//! every backend speaks ([`model::protocol::Update`]), sanitising of cluster text and the clock.
//!
//! It depends on no other gpuplane crate (docs/architecture.md has the crate graph).

pub mod clock;
pub mod memory;
pub mod model;
pub mod sanitize;
