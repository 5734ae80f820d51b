//! gpuplane: one terminal console for every plane of a GPU cluster.
//!
//! Backends → [`model::protocol::Update`] → one [`state::ClusterState`] → pure views.
//!
//! The layers are crates (docs/architecture.md): `gpuplane-model` at the bottom, then
//! `gpuplane-infra` and `gpuplane-backend`, `gpuplane-state`, `gpuplane-ops`, `gpuplane-tables`,
//! `gpuplane-tui`,
//! and this crate on top (the command line, configuration and the binary). It re-exports every
//! layer's modules under their old paths, so `gpuplane::state::ClusterState` still names them.

pub use gpuplane_backend::backend;
pub use gpuplane_infra::{audit, datafile, playbook, record, store};
pub use gpuplane_model::{clock, memory, model, sanitize};
pub use gpuplane_ops::{acceptance, cost, ops};
pub use gpuplane_state::{replay, state, testing};
pub use gpuplane_tables::tables;
pub use gpuplane_tui::tui;

pub mod cli;
pub mod commands;
pub mod config;
pub mod executors;
#[doc(hidden)]
pub mod fuzzing;

/// What the console tells the command line (names to complete, keys to document): the binary
/// crate's root is the one place that sees both.
pub fn console_facts() -> commands::ConsoleFacts {
    let km = tui::keymap::Keymap::builtin("default");
    let keys = km
        .bindings()
        .filter_map(|(action, keys)| {
            let (group, what) = action.describe();
            (!keys.is_empty() && !what.is_empty()).then(|| {
                let labels: Vec<String> = keys.iter().map(|k| k.label()).collect();
                (group.to_string(), labels.join(", "), what.to_string())
            })
        })
        .collect();
    commands::ConsoleFacts {
        views: tui::views::VIEWS.iter().map(|v| v.id().0.to_string()).collect(),
        themes: tui::theme::EMBEDDED.iter().map(|(n, _)| n.to_string()).collect(),
        keymaps: tui::keymap::EMBEDDED.iter().map(|(n, _)| n.to_string()).collect(),
        keys,
    }
}
