//! The one place executors are built, for the console, each cluster of a fleet and the command
//! line alike: what an action goes out with (the Slurm token and its break-glass token, the
//! `X-SLURM-USER-NAME`, the acceptance template, the Kubernetes identity and its impersonation)
//! comes from the configuration here and nowhere else, so no surface can send a write with
//! another's credentials.

use crate::backend::kube::Shared;
use crate::backend::sim::{Sim, SimOp};
use crate::config::Config;
use crate::ops::{Executor, KubeExecutor, SimExecutor, SlurmExecutor, SlurmPreflight};
use std::sync::Arc;
use tokio::sync::{Notify, mpsc};

/// What the executor acts through, shared with the source that reads the same cluster.
pub enum Reach {
    /// slurmrestd, with the poller to wake after each write (a console's; `None` for a command).
    Slurm { refresh: Option<Arc<Notify>> },
    /// The Kubernetes connection and permissions the watch loop (or a one-off read) keeps.
    Kube(Shared),
    /// The simulator task of a console, through its channel.
    SimTask(mpsc::Sender<SimOp>),
    /// A simulator the command line holds itself.
    SimHere(Box<Sim>),
}

/// An executor and, on Slurm, its permission preflight (a console watches it every five
/// minutes; a command asks it once before planning).
pub struct Built {
    pub exec: Box<dyn Executor>,
    pub preflight: Option<SlurmPreflight>,
}

/// The Slurm executor of `config` (its token, acceptance template, Slurm user, break-glass
/// token and, in a console, the poller to wake).
fn slurm(config: &Config, refresh: Option<Arc<Notify>>) -> Result<SlurmExecutor, String> {
    let slurm = config.slurm.as_ref().ok_or("no Slurm cluster is configured")?;
    let exec = SlurmExecutor::new(&slurm.client)?
        .with_acceptance(config.acceptance.template.clone())?
        .with_slurm_user(&slurm.slurm_user);
    let exec = match refresh {
        Some(r) => exec.with_refresh(r),
        None => exec,
    };
    match &config.slurm_break_glass {
        Some(bg) => exec.with_break_glass(bg),
        None => Ok(exec),
    }
}

/// The executor of `config`'s cluster through `reach`.
pub fn build(config: &Config, reach: Reach) -> Result<Built, String> {
    Ok(match reach {
        Reach::Slurm { refresh } => {
            let exec = slurm(config, refresh)?;
            let preflight = Some(exec.preflight());
            Built { exec: Box::new(exec), preflight }
        }
        Reach::Kube(shared) => {
            let k = config.kube.clone().ok_or("no Kubernetes cluster is configured")?;
            let namespace = k.acceptance_namespace.clone();
            let exec =
                KubeExecutor::new(shared, k).with_acceptance(config.acceptance.template.clone(), namespace);
            Built { exec: Box::new(exec), preflight: None }
        }
        Reach::SimTask(tx) => {
            Built { exec: Box::new(SimExecutor::Remote { tx, user: config.user.clone() }), preflight: None }
        }
        Reach::SimHere(sim) => {
            Built { exec: Box::new(SimExecutor::Direct { sim, user: config.user.clone() }), preflight: None }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::sim::SimConfig;
    use crate::cli::Cli;

    /// The configuration of an empty config file, as `user`, with no cluster configured
    /// whatever the environment says.
    fn config(user: &str) -> Config {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, "").unwrap();
        let (mut c, _) = Config::load(&Cli { config: Some(p), user: Some(user.into()), ..Cli::default() });
        (c.slurm, c.kube) = (None, None);
        c
    }

    #[test]
    fn every_surface_s_simulator_executor_acts_as_the_configured_user() {
        let config = config("carol");
        let (tx, _rx) = crate::ops::sim_ops_channel();
        for reach in [Reach::SimTask(tx), Reach::SimHere(Box::new(Sim::new(SimConfig::default())))] {
            let built = build(&config, reach).expect("a simulator executor");
            assert_eq!(built.exec.backend(), "sim");
            assert_eq!(built.exec.identity().as_deref(), Some("sim:carol"));
            assert!(built.preflight.is_none());
        }
    }

    #[test]
    fn without_the_cluster_configured_the_factory_says_so() {
        let config = config("dave");
        let e = build(&config, Reach::Slurm { refresh: None }).err().expect("no Slurm");
        assert!(e.contains("no Slurm cluster"), "{e}");
        let e = build(&config, Reach::Kube(Shared::default())).err().expect("no Kubernetes");
        assert!(e.contains("no Kubernetes cluster"), "{e}");
    }
}
