//! The real `kubectl` against the fake API server: get, cordon/uncordon and drain with its
//! filters and PDB retries. kubectl must be installed (scripts/test installs Debian's
//! `kubernetes-client` when it is missing).
//!
//! Behind the `live` feature (`cargo test --features live`, as scripts/test runs it): they need
//! the real `kubectl` (or $KUBECTL), and without it they fail, never pass.

use crate::kube_support::{Cluster, FakeKube, Handle};
use std::process::{Command, Output};

fn kubectl_bin() -> String {
    let bin = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into());
    match Command::new(&bin).args(["version", "--client"]).output() {
        Ok(o) if o.status.success() => bin,
        _ => panic!(
            "`{bin}` not found or not runnable: these tests need the real kubectl; run scripts/test \
             (it installs Debian's kubernetes-client) or `apt-get install -y kubernetes-client`"
        ),
    }
}

/// kubectl's minor version (messages differ between Debian 12's 1.20 and current ones).
fn kubectl_minor() -> u32 {
    let o =
        Command::new(kubectl_bin()).args(["version", "--client", "-o", "json"]).output().expect("kubectl");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("kubectl version json");
    v["clientVersion"]["minor"].as_str().unwrap_or("0").trim_end_matches('+').parse().unwrap_or(0)
}

/// kubectl ≤1.21 words the "no controller" filter differently.
const NO_CONTROLLER: [&str; 2] = [
    "Pods that declare no controller",
    "Pods not managed by ReplicationController, ReplicaSet, Job, DaemonSet or StatefulSet",
];

fn kubectl(fake: &Handle, cache: &std::path::Path, args: &[&str]) -> Output {
    Command::new(kubectl_bin())
        .arg("--kubeconfig")
        .arg(fake.kubeconfig_path())
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .output()
        .expect("run kubectl")
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn ok(o: &Output, what: &str) -> String {
    let (out, err) = text(o);
    assert!(o.status.success(), "kubectl {what} failed ({}):\nstdout:\n{out}\nstderr:\n{err}", o.status);
    out
}

fn unschedulable(fake: &Handle, node: &str) -> bool {
    fake.get("v1", "Node", "", node).expect("node")["spec"]["unschedulable"] == serde_json::json!(true)
}

/// Rows of a kubectl table: the first line is the header.
fn rows(out: &str) -> Vec<Vec<String>> {
    out.lines().map(|l| l.split_whitespace().map(String::from).collect()).collect()
}

#[test]
fn get_nodes_lists_every_node_with_status_and_roles() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let cache = tempfile::tempdir().unwrap();
    let out = ok(&kubectl(&fake, cache.path(), &["get", "nodes"]), "get nodes");
    let r = rows(&out);
    assert_eq!(r[0], ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]);
    let status: Vec<(&str, &str, &str)> =
        r[1..].iter().map(|c| (c[0].as_str(), c[1].as_str(), c[2].as_str())).collect();
    assert_eq!(
        status,
        [
            ("cpu-node-1", "Ready", "control-plane"),
            ("gpu-node-1", "Ready", "<none>"),
            ("gpu-node-2", "Ready", "<none>"),
            ("gpu-node-3", "Ready,SchedulingDisabled", "<none>"),
            ("gpu-node-4", "NotReady", "<none>"),
        ]
    );
    assert!(r[1..].iter().all(|c| c[3] == "20d" && c[4] == "v1.34.1"), "{out}");

    let wide = ok(&kubectl(&fake, cache.path(), &["get", "nodes", "-o", "wide"]), "get nodes -o wide");
    assert!(wide.lines().next().unwrap().contains("INTERNAL-IP"), "{wide}");
    assert!(wide.contains("10.0.1.2") && wide.contains("containerd://1.7.27"), "{wide}");

    // Label selectors go to the server.
    let out = ok(
        &kubectl(
            &fake,
            cache.path(),
            &["get", "nodes", "-l", "nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB"],
        ),
        "get -l",
    );
    let names: Vec<String> = rows(&out)[1..].iter().map(|c| c[0].clone()).collect();
    assert_eq!(names, ["gpu-node-3"]);
}

#[test]
fn get_pods_all_namespaces_and_wide() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let cache = tempfile::tempdir().unwrap();
    let out = ok(&kubectl(&fake, cache.path(), &["get", "pods", "-A"]), "get pods -A");
    let r = rows(&out);
    assert_eq!(r[0], ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    let mut want: Vec<String> = fake
        .list("v1", "Pod")
        .iter()
        .map(|p| {
            format!(
                "{}/{}",
                p["metadata"]["namespace"].as_str().unwrap(),
                p["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    want.sort();
    let mut got: Vec<String> = r[1..].iter().map(|c| format!("{}/{}", c[0], c[1])).collect();
    got.sort();
    assert_eq!(got, want);
    let row =
        |name: &str| r.iter().find(|c| c[1] == name).unwrap_or_else(|| panic!("{name} in {out}")).clone();
    assert_eq!(row("train-pending")[2..4], ["0/1", "Pending"]);
    assert_eq!(row("preflight-check")[2..4], ["0/1", "Completed"]);
    assert_eq!(row("train-llm-1-b2n6w")[2..5], ["1/1", "Running", "1"]);

    let out =
        ok(&kubectl(&fake, cache.path(), &["get", "pods", "-n", "team-b", "-o", "wide"]), "get pods -o wide");
    let r = rows(&out);
    assert_eq!(r[0][..7], ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]);
    assert_eq!(r.len(), 3, "{out}");
    assert!(r[1..].iter().all(|c| c[6] == "gpu-node-2"), "{out}");

    // Field selectors as kubectl sends them.
    let out = ok(
        &kubectl(&fake, cache.path(), &["get", "pods", "-A", "--field-selector", "spec.nodeName=gpu-node-2"]),
        "get pods --field-selector",
    );
    assert_eq!(rows(&out).len() - 1, fake.pods_on("gpu-node-2").len(), "{out}");
}

#[test]
fn cordon_and_uncordon_change_the_node() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let cache = tempfile::tempdir().unwrap();
    assert!(!unschedulable(&fake, "gpu-node-1"));
    let out = ok(&kubectl(&fake, cache.path(), &["cordon", "gpu-node-1"]), "cordon");
    assert_eq!(out.trim(), "node/gpu-node-1 cordoned");
    assert!(unschedulable(&fake, "gpu-node-1"));
    let out = ok(&kubectl(&fake, cache.path(), &["get", "node", "gpu-node-1"]), "get node");
    assert!(out.contains("Ready,SchedulingDisabled"), "{out}");
    // Again: nothing to do, said like kubectl says it.
    let out = ok(&kubectl(&fake, cache.path(), &["cordon", "gpu-node-1"]), "cordon again");
    assert_eq!(out.trim(), "node/gpu-node-1 already cordoned");
    let out = ok(&kubectl(&fake, cache.path(), &["uncordon", "gpu-node-1"]), "uncordon");
    assert_eq!(out.trim(), "node/gpu-node-1 uncordoned");
    assert!(!unschedulable(&fake, "gpu-node-1"));
    // Server-side dry run changes nothing. kubectl before 1.26 first checks the server's
    // OpenAPI document for dry-run support, which the fake does not serve.
    let o = kubectl(&fake, cache.path(), &["cordon", "gpu-node-2", "--dry-run=server"]);
    let dry_patches = if kubectl_minor() >= 26 {
        let out = ok(&o, "cordon dry-run");
        assert!(out.contains("node/gpu-node-2 cordoned (server dry run)"), "{out}");
        1
    } else {
        assert!(text(&o).1.contains("failed to download openapi"), "{:?}", text(&o));
        0
    };
    assert!(!unschedulable(&fake, "gpu-node-2"));
    let patches: Vec<_> = fake.requests().into_iter().filter(|r| r.method == "PATCH").collect();
    assert_eq!(patches.len(), 2 + dry_patches, "{patches:?}");
    assert!(patches.iter().all(|r| r.path.starts_with("/api/v1/nodes/gpu-node-") && r.status == 200));
}

#[test]
fn viewer_context_cannot_cordon() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let cache = tempfile::tempdir().unwrap();
    let o = kubectl(&fake, cache.path(), &["--context", "fake-viewer", "cordon", "gpu-node-1"]);
    // kubectl reports the failed patch on stderr (its exit status stays 0 for cordon).
    let (_, err) = text(&o);
    assert!(
        err.contains(r#"nodes "gpu-node-1" is forbidden: User "viewer" cannot patch resource "nodes" in API group "" at the cluster scope"#),
        "{err}"
    );
    assert!(!unschedulable(&fake, "gpu-node-1"));
    ok(&kubectl(&fake, cache.path(), &["--context", "fake-viewer", "get", "nodes"]), "viewer get nodes");
}

#[test]
fn drain_evicts_exactly_the_evictable_pods() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let cache = tempfile::tempdir().unwrap();
    let o = kubectl(
        &fake,
        cache.path(),
        &["drain", "gpu-node-1", "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=60s"],
    );
    let out = ok(&o, "drain");
    let (_, err) = text(&o);
    // "drained" (kubectl 1.20 said "evicted").
    assert!(out.contains("node/gpu-node-1 drained") || out.contains("node/gpu-node-1 evicted"), "{out}");
    // kubectl joins its warnings into one line in an order that varies from run to run.
    let lower = err.to_lowercase();
    assert!(lower.starts_with("warning: ") || lower.contains("\nwarning: "), "{err}");
    assert!(lower.contains("ignoring daemonset-managed pods: gpu-operator/nvidia-dcgm-exporter-w8d5c, kube-system/nvidia-device-plugin-daemonset-x7k2p"), "{err}");
    assert!(
        NO_CONTROLLER.iter().any(|m| err.contains(&format!("deleting {m}: team-a/debug-shell"))),
        "{err}"
    );
    assert!(unschedulable(&fake, "gpu-node-1"));
    // Left: DaemonSet pods and the mirror pod.
    assert_eq!(
        fake.pods_on("gpu-node-1"),
        [
            "gpu-operator/nvidia-dcgm-exporter-w8d5c",
            "kube-system/kube-proxy-gpu-node-1",
            "kube-system/nvidia-device-plugin-daemonset-x7k2p"
        ]
    );
    let mut evicted: Vec<String> = fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/eviction"))
        .map(|r| {
            assert_eq!(r.status, 201, "{r:?}");
            r.path
                .trim_start_matches("/api/v1/namespaces/")
                .trim_end_matches("/eviction")
                .replace("/pods/", "/")
        })
        .collect();
    evicted.sort();
    assert_eq!(
        evicted,
        [
            "team-a/cache-warmer-6d9f8b7c5-qk2xv",
            "team-a/debug-shell",
            "team-a/preflight-check",
            "team-a/train-llm-0-h5t8r",
            "team-a/train-llm-1-b2n6w"
        ]
    );
    // kubectl checked the DaemonSets exist.
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.path
                == "/apis/apps/v1/namespaces/kube-system/daemonsets/nvidia-device-plugin-daemonset")
    );
}

#[test]
fn drain_without_flags_refuses_and_evicts_nothing() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let cache = tempfile::tempdir().unwrap();
    let before = fake.pods_on("gpu-node-1");
    let o = kubectl(&fake, cache.path(), &["drain", "gpu-node-1", "--timeout=30s"]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): gpu-operator/nvidia-dcgm-exporter-w8d5c, kube-system/nvidia-device-plugin-daemonset-x7k2p"), "{err}");
    assert!(err.contains("cannot delete Pods with local storage (use --delete-emptydir-data to override): team-a/cache-warmer-6d9f8b7c5-qk2xv, team-a/train-llm-0-h5t8r, team-a/train-llm-1-b2n6w"), "{err}");
    assert!(
        NO_CONTROLLER.iter().any(
            |m| err.contains(&format!("cannot delete {m} (use --force to override): team-a/debug-shell"))
        ),
        "{err}"
    );
    assert_eq!(fake.pods_on("gpu-node-1"), before);
    assert!(!fake.requests().iter().any(|r| r.path.ends_with("/eviction")));
    // kubectl cordons first, and leaves the node cordoned.
    assert!(unschedulable(&fake, "gpu-node-1"));
}

#[test]
fn drain_blocked_by_pdb_retries_until_the_budget_allows() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let cache = tempfile::tempdir().unwrap();
    let pdb = fake.get("policy/v1", "PodDisruptionBudget", "team-b", "inference-pdb").unwrap();
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    assert_eq!(pdb["status"]["currentHealthy"], 2);
    let mut child = Command::new(kubectl_bin())
        .arg("--kubeconfig")
        .arg(fake.kubeconfig_path())
        .arg("--cache-dir")
        .arg(cache.path())
        .args(["drain", "gpu-node-2", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl");
    let stdout = child.stdout.take().unwrap();
    let out_thread = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap());
    let mut err_lines = Vec::new();
    let mut relaxed = false;
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        if !relaxed && line.contains("will retry after 5s") {
            assert!(
                line.contains("Cannot evict pod as it would violate the pod's disruption budget."),
                "{line}"
            );
            // Nothing went while the budget said no.
            assert_eq!(fake.pods_on("gpu-node-2").len(), 3);
            fake.set_pdb("team-b", "inference-pdb", Some(serde_json::json!(0)), None);
            relaxed = true;
        }
        err_lines.push(line);
    }
    let status = child.wait().unwrap();
    let out = out_thread.join().unwrap();
    assert!(relaxed, "kubectl never reported the PDB retry: {err_lines:#?}");
    assert!(status.success(), "drain failed: {out}\n{err_lines:#?}");
    assert!(out.contains("node/gpu-node-2 drained") || out.contains("node/gpu-node-2 evicted"), "{out}");
    assert_eq!(fake.pods_on("gpu-node-2"), ["kube-system/nvidia-device-plugin-daemonset-m4q9z"]);
    let codes: Vec<u16> =
        fake.requests().iter().filter(|r| r.path.ends_with("/eviction")).map(|r| r.status).collect();
    assert!(codes.contains(&429) && codes.iter().filter(|c| **c == 201).count() == 2, "{codes:?}");
}

#[test]
fn drain_gives_up_at_its_timeout_while_the_pdb_holds() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let cache = tempfile::tempdir().unwrap();
    let o = kubectl(
        &fake,
        cache.path(),
        &["drain", "gpu-node-2", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=2s"],
    );
    let (_, err) = text(&o);
    assert!(!o.status.success(), "{err}");
    for pod in ["inference-7f6c9d8b4-r9p2k", "inference-7f6c9d8b4-t3v7m"] {
        assert!(
            err.contains(&format!(
                r#"error when evicting pods/"{pod}" -n "team-b": global timeout reached: 2s"#
            )),
            "{err}"
        );
    }
    assert_eq!(fake.pods_on("gpu-node-2").len(), 3);
    assert!(unschedulable(&fake, "gpu-node-2"));
    assert!(fake.requests().iter().filter(|r| r.path.ends_with("/eviction")).all(|r| r.status == 429));
}
