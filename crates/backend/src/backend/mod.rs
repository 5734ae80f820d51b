//! Backends own one protocol each and speak to the rest of gpuplane only through [`Update`](crate::model::protocol::Update)s
//! sent on a channel. No backend knows about widgets.

pub mod alertmanager;
pub mod bounds;
pub mod ids;
pub mod kube;
pub mod nvml;
pub mod prom;
pub mod retry;
pub mod sim;
pub mod slurm;
