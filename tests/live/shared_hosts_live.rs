//! One host, two schedulers, on the real Slurm 24.11 and the in-repo fake Kubernetes API
//! server: a Slurm node of `prod-a` is paired (`[[shared_hosts]]`, by suffix) with a node of
//! `prod-k8s`. `gpuplane drain prod-a/NODE` names both schedulers in its plan and drains the
//! host in both — DRAIN in `scontrol`, `spec.unschedulable` in the fake — audited under one op
//! id; with the Kubernetes cluster read-only it sends nothing to either. Resumed in Kubernetes
//! alone (`--sched kube`), the host is drained in Slurm and schedulable in Kubernetes: the
//! mismatch incident. The Slurm node is resumed at the end.
//!
//! Behind the `live` feature: it needs GPUPLANE_TEST_SLURM24_* (scripts/test) and fails
//! without them.

use crate::common;

use crate::kube_support::{Cluster, FakeKube, Opts};
use crate::slurm_support::{read, slurm24};
use gpuplane::audit::AuditLog;
use gpuplane::model::NodeState;
use std::time::Duration;

const SUFFIX: &str = ".prod.internal";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_of_a_paired_host_drains_it_in_slurm_and_cordons_it_in_kubernetes_under_one_op_id() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (c24, _g24) = slurm24().await;
    let s = read(&c24).await;
    let node =
        s.nodes.iter().rev().find(|n| n.state == NodeState::Idle).expect("an idle node").name.to_string();
    let kname = format!("{node}{SUFFIX}");
    // The fake's twin of the Slurm node: a GPU node like gpu-node-1, with no pods of its own.
    let fake = FakeKube::start(Cluster::small(), Opts::default());
    let mut twin = fake.get("v1", "Node", "", "gpu-node-1").expect("gpu-node-1");
    twin["metadata"]["name"] = kname.clone().into();
    twin["metadata"]["labels"]["kubernetes.io/hostname"] = kname.clone().into();
    for k in ["uid", "resourceVersion"] {
        twin["metadata"].as_object_mut().unwrap().remove(k);
    }
    fake.upsert(twin).expect("the twin node");

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let tok = dir.path().join("tok24");
    std::fs::write(&tok, &c24.admin_jwt).unwrap();
    let config = |kube_readonly: bool| {
        let path = dir.path().join(format!("config-{kube_readonly}.toml"));
        std::fs::write(
            &path,
            format!(
                "[[cluster]]\nname = \"prod-a\"\n[cluster.slurm]\nurl = \"{url}\"\ntoken_file = \"{tok}\"\n\n\
                 [[cluster]]\nname = \"prod-k8s\"\nreadonly = {kube_readonly}\n[cluster.kube]\n\
                 kubeconfig = \"{kc}\"\ncontext = \"fake-admin\"\ndrain_timeout = \"20s\"\n\n\
                 [[shared_hosts]]\nslurm = \"prod-a\"\nkube = \"prod-k8s\"\nkube_suffix = \"{SUFFIX}\"\n",
                url = c24.url,
                tok = tok.display(),
                kc = fake.kubeconfig_path().display(),
            ),
        )
        .unwrap();
        path
    };
    let (open, kube_readonly) = (config(false), config(true));
    let run = |cfg: &std::path::Path, args: &[&str]| {
        let out = common::gpuplane_cmd(dir.path()).args(args).env("GPUPLANE_CONFIG", cfg).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let act = |cfg: &std::path::Path, args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--audit-log", log.to_str().unwrap(), "--yes"]);
        tokio::task::block_in_place(|| run(cfg, &all))
    };
    let unschedulable = || {
        fake.get("v1", "Node", "", &kname).expect("the twin")["spec"]["unschedulable"]
            .as_bool()
            .unwrap_or(false)
    };
    let drained = || c24.cli(&["scontrol", "-o", "show", "node", &node]).contains("DRAIN");
    let target = format!("prod-a/{node}");

    // The Kubernetes cluster read-only: one side refuses, so neither gets anything.
    let (rc, out, err) = act(&kube_readonly, &["drain", &target, "--reason", "shared host test"]);
    assert_eq!(rc, Some(2), "{out}{err}");
    assert!(
        err.contains(&format!("prod-k8s/{kname}")) && err.contains("nothing will be sent to either"),
        "{err}"
    );
    assert!(!drained() && !unschedulable(), "nothing sent");
    assert!(!log.exists() || AuditLog::new(log.clone()).read_all().unwrap().is_empty(), "nothing audited");

    // Both schedulers: the plan names them, each through its own road.
    let (rc, out, err) =
        act(&open, &["drain", &target, "--reason", "shared host test", "--ticket", "HOST-1"]);
    assert_eq!(rc, Some(0), "{out}{err}");
    assert!(
        out.contains(&format!(
            "host {node} is Slurm prod-a/{node} (drain) and Kubernetes prod-k8s/{kname} (drain): drain in both schedulers"
        )),
        "{out}"
    );
    assert!(out.contains("on prod-a (slurm") && out.contains("on prod-k8s (kube"), "{out}");
    assert!(
        out.contains(&format!("ok   prod-a/{node}")) && out.contains(&format!("ok   prod-k8s/{kname}")),
        "{out}"
    );
    assert!(drained(), "DRAIN in scontrol");
    assert!(unschedulable(), "cordoned in Kubernetes");
    let recs = AuditLog::new(log.clone()).read_all().unwrap();
    let drains: Vec<_> = recs.iter().filter(|r| r.action == "drain").collect();
    assert_eq!(drains.len(), 4, "intent and outcome in each scheduler: {drains:?}");
    assert!(drains.iter().all(|r| r.op_id == drains[0].op_id), "one op id: {drains:?}");
    let sides: Vec<(&str, &str, &[String])> = drains
        .iter()
        .map(|r| (r.cluster.as_str(), r.params["backend"].as_str(), r.targets.as_slice()))
        .collect();
    assert!(sides.contains(&("prod-a", "slurm", std::slice::from_ref(&node))), "{sides:?}");
    assert!(sides.contains(&("prod-k8s", "kube", std::slice::from_ref(&kname))), "{sides:?}");
    assert!(
        drains.iter().all(|r| r.identity.is_some() && r.ticket.as_deref() == Some("HOST-1")),
        "{drains:?}"
    );

    // Back in service in Kubernetes alone: drained in Slurm, schedulable in Kubernetes.
    let (rc, out, err) =
        act(&open, &["resume", &format!("prod-k8s/{kname}"), "--sched", "kube", "--reason", "k8s side only"]);
    assert_eq!(rc, Some(0), "{out}{err}");
    assert!(!unschedulable() && drained());
    let (rc, json, err) = tokio::task::block_in_place(|| {
        run(&open, &["get", "incidents", "-o", "json", "--filter", "signal=twin-mismatch"])
    });
    assert_eq!(rc, Some(0), "{err}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    let text = rows[0].to_string();
    assert!(
        text.contains(&format!("host {node}"))
            && text.contains("in Slurm")
            && text.contains(&format!("schedulable in Kubernetes (prod-k8s/{kname})")),
        "{text}"
    );
    assert_eq!(rows[0]["cluster"], "prod-a", "{text}");

    // The Slurm side back in service (through Slurm alone), for the tests after this one.
    let (rc, out, err) =
        act(&open, &["resume", &target, "--sched", "slurm", "--reason", "shared host test done"]);
    assert_eq!(rc, Some(0), "{out}{err}");
    for _ in 0..40 {
        if !drained() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("{node} still drained after resume");
}
