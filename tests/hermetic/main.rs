//! Every integration test that needs no service, in one binary: the support modules (the fake
//! Kubernetes API server, the PTY driver, the fake NVML library, the Slurm recordings) are
//! compiled once, and one link serves them all. Each file is one suite (README, "Tests").

#[path = "../common/mod.rs"]
mod common;
#[path = "../kube_support/mod.rs"]
mod kube_support;
#[path = "../nvml_support/mod.rs"]
mod nvml_support;
#[path = "../pty_support/mod.rs"]
mod pty_support;
#[path = "../slurm_support/mod.rs"]
mod slurm_support;

mod acceptance_cli;
mod alertmanager_recorded;
mod app;
mod audit_cli;
mod audit_witness;
mod break_glass;
mod chaos;
mod cli_scripting;
mod console_instead;
mod cost_reading;
mod cost_useful;
mod doctor;
mod e2e_pty;
mod eff_held_idle;
mod filter;
mod filter_property;
mod fleet;
mod fuzz_corpus;
mod get_cli;
mod hostile;
mod identity;
mod job_gpu_hours;
mod json_differential;
mod kube_backend;
mod kube_fake;
mod layers;
mod ledger;
mod nvml_cgroup;
mod nvml_e2e;
mod nvml_fake;
mod prom_recorded;
mod replay;
mod screenshots;
mod shared_hosts;
mod slow_link;
mod slurm_recorded;
mod sources_stores;
mod timeline;
mod views;
