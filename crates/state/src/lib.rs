//! gpuplane's cluster state: every backend's updates folded into one [`state::ClusterState`],
//! with incidents, the why of a waiting job and the journal. Views read it; nothing writes it
//! but [`state::ClusterState::apply`].

use gpuplane_backend::backend;
use gpuplane_infra::{audit, playbook, store};
use gpuplane_model::{clock, model, sanitize};

pub mod replay;
pub mod state;
#[doc(hidden)]
pub mod testing;
