//! The live suites, in one binary behind the `live` feature: they need the services that
//! `scripts/test` starts (Slurm 22.05 and 24.11, Prometheus, Alertmanager) or a real tool
//! (kubectl, cargo-deb). Tests that change or compare a Slurm cluster hold its lock
//! (`slurm_support::slurm22`/`slurm24`), so suites that share a cluster never overlap on it.
#![cfg(feature = "live")]

#[path = "../common/mod.rs"]
mod common;
#[path = "../kube_support/mod.rs"]
mod kube_support;
#[path = "../pty_support/mod.rs"]
mod pty_support;
#[path = "../slurm_support/mod.rs"]
mod slurm_support;

mod acceptance_slurm_live;
mod alertmanager_live;
mod chaos_live;
mod cost_causes_slurm_live;
mod cost_denominator_live;
mod doctor_live;
mod eff_live;
mod evidence_live;
mod fleet_slurm_live;
mod guard_slurm_live;
mod job_gpu_hours_live;
mod kubectl_fake;
mod ops_slurm_live;
mod package_live;
mod prom_live;
mod shared_hosts_live;
mod silence_console_live;
mod slurm_live;
mod triage_slurm_live;
