//! gpuplane's console: views over the cluster state, the keymap, themes, dialogs and plugins.

use gpuplane_backend::backend;
use gpuplane_infra::{audit, datafile, record, store};
use gpuplane_model::{clock, memory, model, sanitize};
use gpuplane_ops::{acceptance, cost, ops};
use gpuplane_state::{replay, state};
use gpuplane_tables::tables;

pub mod tui;
