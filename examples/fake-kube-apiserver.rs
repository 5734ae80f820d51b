//! A standalone fake Kubernetes API server (the one the tests use, tests/kube_support) with a
//! generated GPU cluster, for benchmarks and for pointing other clients (kubectl, kdash) at.
//!
//! ```text
//! cargo run --release --example fake-kube-apiserver -- --nodes 5000 --pods 50000 --gpu-pods 20000
//! ```
//! Prints the path of the kubeconfig it wrote on the first line of stdout, then serves until
//! killed. The kubeconfig names `https://127.0.0.1:PORT` (kubectl only sends tokens over TLS;
//! the CA is embedded) with contexts `fake-admin` (current) and `fake-viewer`; the same port
//! also answers plain HTTP.

#[path = "../tests/kube_support/mod.rs"]
mod kube_support;

use clap::Parser;
use kube_support::{Cluster, FakeKube, GenOpts, KueueMode, Opts};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(about = "Fake Kubernetes API server with a generated GPU cluster")]
struct Args {
    /// Nodes to generate.
    #[arg(long, default_value_t = 20)]
    nodes: usize,
    /// Pods to generate (DaemonSet pods included).
    #[arg(long, default_value_t = 200)]
    pods: usize,
    /// Pods requesting GPUs (default: 40% of --pods).
    #[arg(long)]
    gpu_pods: Option<usize>,
    /// Kueue API versions to serve: none, v1beta1, v1beta2, both.
    #[arg(long, default_value = "none")]
    kueue: KueueMode,
    /// Generator seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Where to write the kubeconfig (default: a temporary directory).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Serve the small hand-built cluster instead of a generated one.
    #[arg(long)]
    small: bool,
    /// Watch events per second to generate (benchmarks): node heartbeats (the Ready condition's
    /// lastHeartbeatTime) and container restarts of pods, alternately, round-robin over the cluster.
    #[arg(long, default_value_t = 0)]
    churn: u32,
}

fn main() {
    let a = Args::parse();
    let t0 = Instant::now();
    let cluster = if a.small {
        Cluster::small_with(a.kueue)
    } else {
        Cluster::generate(&GenOpts {
            nodes: a.nodes,
            pods: a.pods,
            gpu_pods: a.gpu_pods.unwrap_or(a.pods * 2 / 5),
            kueue: a.kueue,
            seed: a.seed,
            ..Default::default()
        })
    };
    let objects = cluster.objects.len() + cluster.serialized.len();
    let generated = t0.elapsed();
    let opts = Opts { port: a.port, kubeconfig: a.kubeconfig.clone(), ..Default::default() };
    let fake = FakeKube::start(cluster, opts);
    // The churn's targets are read before the server says it serves: reading them copies every
    // object under the store's lock (2.2 s at 50,000 pods), which stalled the first clients'
    // lists and made a console's first screen under churn look 2.3 s slower than it is.
    let targets = (a.churn > 0).then(|| churn_targets(&fake));
    println!("{}", fake.kubeconfig_path().display());
    eprintln!(
        "fake-kube-apiserver: {objects} objects (generated in {:.2?}, loaded in {:.2?}); serving {} (and {}); admin token {}",
        generated,
        t0.elapsed() - generated,
        fake.https_url(),
        fake.url(),
        fake.token_for("admin"),
    );
    if a.kubeconfig.is_none() {
        eprintln!(
            "fake-kube-apiserver: the kubeconfig is in a temporary directory (--kubeconfig PATH to choose)"
        );
    }
    if let Some((nodes, pods)) = targets {
        churn(&fake, a.churn, &nodes, &pods);
    }
    loop {
        std::thread::park();
    }
}

/// Writes `rate` changes per second, in 10 ms steps, forever.
/// The nodes and pods (namespace, name) the churn changes.
type Targets = (Vec<String>, Vec<(String, String)>);

fn churn_targets(fake: &kube_support::Handle) -> Targets {
    let name = |v: &serde_json::Value, f: &str| v["metadata"][f].as_str().unwrap_or_default().to_string();
    let nodes: Vec<String> = fake.list("v1", "Node").iter().map(|n| name(n, "name")).collect();
    let pods: Vec<(String, String)> =
        fake.list("v1", "Pod").iter().map(|p| (name(p, "namespace"), name(p, "name"))).collect();
    (nodes, pods)
}

fn churn(fake: &kube_support::Handle, rate: u32, nodes: &[String], pods: &[(String, String)]) {
    if nodes.is_empty() || pods.is_empty() {
        return;
    }
    eprintln!(
        "fake-kube-apiserver: churn {rate} events/s over {} nodes and {} pods",
        nodes.len(),
        pods.len()
    );
    let start = Instant::now();
    let (mut done, mut i) = (0u64, 0usize);
    let mut report = Instant::now();
    loop {
        let due = (start.elapsed().as_secs_f64() * f64::from(rate)) as u64;
        while done < due {
            let now = kube_support::util::ts(kube_support::util::now_secs());
            if done % 2 == 0 {
                let n = &nodes[i % nodes.len()];
                fake.patch("v1", "Node", "", n, serde_json::json!({"status": {"conditions": [
                    {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
                     "lastHeartbeatTime": now, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}));
            } else {
                let (ns, p) = &pods[i % pods.len()];
                fake.patch(
                    "v1",
                    "Pod",
                    ns,
                    p,
                    // A container restart (every console shows restarts) and a controller's annotation.
                    serde_json::json!({
                        "metadata": {"annotations": {"gpuplane.io/churn": done.to_string()}},
                        "status": {"containerStatuses": [{"name": "main", "ready": true, "restartCount": done / 2 % 50,
                            "image": "nvcr.io/nvidia/pytorch:24.08-py3", "imageID": "", "started": true,
                            "state": {"running": {"startedAt": now}}}]}}),
                );
                i += 1;
            }
            done += 1;
        }
        if report.elapsed().as_secs() >= 10 {
            eprintln!(
                "fake-kube-apiserver: {done} churn events, {:.0}/s",
                done as f64 / start.elapsed().as_secs_f64()
            );
            report = Instant::now();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
