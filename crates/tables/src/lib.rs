//! gpuplane's table model: every table's columns, rows, filter and sort, and the detail of a
//! row, as cells of text and a tone. The console draws them in its theme; `gpuplane get` and
//! the reports print them. Nothing here knows a terminal.

use gpuplane_infra::audit;
use gpuplane_model::{clock, model, sanitize};
use gpuplane_ops::{acceptance, cost};
use gpuplane_state::state;

pub mod tables;
