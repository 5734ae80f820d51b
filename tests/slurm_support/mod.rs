//! Helpers for the Slurm tests: the test clusters started by scripts/test, a poller that
//! applies what it reads to a `ClusterState`, and CLI access to the same cluster.
#![allow(dead_code)]

use gpuplane::backend::slurm::{ClientConfig, Poller, SlurmConfig, SlurmError, TokenSource};
use gpuplane::model::protocol::Update;
use gpuplane::state::ClusterState;
use std::process::Command;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{Mutex, MutexGuard};

/// A test cluster from the environment scripts/test exports.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub name: &'static str,
    pub url: String,
    pub jwt: String,
    /// A token allowed to update nodes (24.11: SlurmUser; 22.05: root is the user token).
    pub admin_jwt: String,
    pub user: Option<String>,
    /// 22.05: the slurm.conf on the host; 24.11: the chroot holding the CLI.
    pub conf: Option<String>,
    pub chroot: Option<String>,
    /// Working directory for jobs submitted over REST.
    pub cwd: String,
}

fn need(var: &str) -> String {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!(
            "{var} is not set: these tests need the real Slurm test clusters; run scripts/test \
             (it starts Slurm 22.05 and 24.11 on 127.0.0.1 and exports GPUPLANE_TEST_SLURM*)"
        ),
    }
}

static LOCK22: Mutex<()> = Mutex::const_new(());
static LOCK24: Mutex<()> = Mutex::const_new(());

/// Slurm 22.05 (v0.0.38) with slurmdbd. Holds the cluster's lock: tests that change or compare
/// a cluster run one at a time.
pub async fn slurm22() -> (Cluster, MutexGuard<'static, ()>) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let g = LOCK22.lock().await;
    let jwt = need("GPUPLANE_TEST_SLURM22_JWT");
    let c = Cluster {
        name: "22.05",
        url: need("GPUPLANE_TEST_SLURM22_URL"),
        admin_jwt: jwt.clone(),
        jwt,
        user: Some("root".into()),
        conf: Some(need("GPUPLANE_TEST_SLURM22_CONF")),
        chroot: None,
        cwd: need("GPUPLANE_TEST_SLURM22_JOBDIR"),
    };
    (c, g)
}

/// Slurm 24.11 (v0.0.40–42) in its chroot, with slurmdbd.
pub async fn slurm24() -> (Cluster, MutexGuard<'static, ()>) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let g = LOCK24.lock().await;
    let c = Cluster {
        name: "24.11",
        url: need("GPUPLANE_TEST_SLURM24_URL"),
        jwt: need("GPUPLANE_TEST_SLURM24_JWT"),
        admin_jwt: need("GPUPLANE_TEST_SLURM24_JWT_ADMIN"),
        user: None,
        conf: None,
        chroot: Some(need("GPUPLANE_TEST_SLURM24_ROOT")),
        cwd: "/tmp".into(),
    };
    (c, g)
}

impl Cluster {
    pub fn config(&self, token: &str) -> SlurmConfig {
        SlurmConfig::new(ClientConfig {
            url: self.url.clone(),
            user: self.user.clone(),
            token: TokenSource::Static(token.to_string()),
            ca_file: None,
            timeout: Duration::from_secs(30),
            version: None,
        })
    }

    pub fn poller(&self) -> Poller {
        Poller::new(self.config(&self.jwt)).expect("poller")
    }

    pub fn admin_client(&self) -> gpuplane::backend::slurm::Client {
        gpuplane::backend::slurm::Client::new(&self.config(&self.admin_jwt).client).expect("client")
    }

    /// Runs a Slurm CLI command against this cluster; its stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        let mut cmd = match &self.chroot {
            Some(root) => {
                let mut c = Command::new("chroot");
                c.arg(root).env_remove("SLURM_CONF").args(args);
                c
            }
            None => {
                let mut c = Command::new(args[0]);
                c.args(&args[1..]).env("SLURM_CONF", self.conf.as_deref().unwrap_or(""));
                c
            }
        };
        let out = cmd.output().unwrap_or_else(|e| panic!("{}: {args:?}: {e}", self.name));
        assert!(out.status.success(), "{}: {args:?}: {}", self.name, String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// Applies every update a refresh sends; returns the state and the updates' count.
pub async fn refresh_into(p: &mut Poller, state: &mut ClusterState) -> Result<usize, SlurmError> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Update>(64);
    let r = p.refresh(&tx).await;
    drop(tx);
    let mut n = 0;
    while let Some(u) = rx.recv().await {
        state.apply(u);
        n += 1;
    }
    r.map(|_| n)
}

/// A fresh state read from the cluster.
pub async fn read(c: &Cluster) -> ClusterState {
    let mut p = c.poller();
    let mut s = ClusterState::new(Default::default(), Default::default());
    refresh_into(&mut p, &mut s).await.unwrap_or_else(|e| panic!("{}: refresh failed: {e}", c.name));
    s
}

/// A TCP proxy in front of `upstream` (`host:port`) that records the request line
/// (`POST /slurm/v0.0.42/node/n1 HTTP/1.1`) of every HTTP/1 request passing through it.
pub async fn counting_proxy(upstream: String) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = l.accept().await {
            let up = tokio::net::TcpStream::connect(&upstream).await.unwrap();
            let log = log.clone();
            tokio::spawn(async move {
                let (mut cr, mut cw) = client.into_split();
                let (mut ur, mut uw) = up.into_split();
                let down = tokio::spawn(async move { tokio::io::copy(&mut ur, &mut cw).await });
                let mut buf = vec![0u8; 64 * 1024];
                let mut carry = String::new();
                loop {
                    let n = match cr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    carry.push_str(&String::from_utf8_lossy(&buf[..n]));
                    while let Some(i) = carry.find("\r\n") {
                        let line: String = carry.drain(..i + 2).collect();
                        let first = line.split(' ').next().unwrap_or("");
                        if ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"].contains(&first)
                            && line.trim_end().ends_with("HTTP/1.1")
                        {
                            log.lock().unwrap().push(line.trim_end().to_string());
                        }
                    }
                    if uw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
                let _ = uw.shutdown().await;
                let _ = down.await;
            });
        }
    });
    (url, seen)
}

pub fn writes(seen: &std::sync::Mutex<Vec<String>>) -> Vec<String> {
    seen.lock().unwrap().iter().filter(|l| !l.starts_with("GET ")).cloned().collect()
}
