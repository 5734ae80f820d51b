//! gpuplane's backends: the simulator, Slurm (slurmrestd), Kubernetes (kube-rs, Kueue),
//! Prometheus, Alertmanager and NVML. Each speaks [`model::protocol::Update`] and nothing above.

use gpuplane_model::{clock, memory, model, sanitize};

pub mod backend;
