//! A fleet's actions against the real Slurm 22.05 and 24.11, in one fleet configuration:
//! `prod-a` and `prod-b` are the 24.11 cluster (so every node name is in two clusters) and
//! `lab` is 22.05, each reached through its own counting proxy. A drain of `prod-a/NODE` goes
//! out through prod-a's proxy only — neither prod-b's (the same server, the same node name) nor
//! lab's sees a write, nor even a read — and is audited under prod-a with its endpoint; a bare name that two
//! clusters have is refused, naming both; the node is resumed after. One cluster whose
//! slurmrestd does not answer is stale alone.
//!
//! Behind the `live` feature: it needs GPUPLANE_TEST_SLURM22_* and GPUPLANE_TEST_SLURM24_*
//! (scripts/test) and fails without them.

use crate::common;

use crate::slurm_support::{counting_proxy, read, slurm22, slurm24, writes};
use gpuplane::audit::{AuditLog, Phase};
use gpuplane::model::NodeState;
use gpuplane::model::protocol::Update;
use std::time::Duration;

fn upstream(url: &str) -> String {
    url.trim_start_matches("http://").trim_end_matches('/').to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_on_one_cluster_reaches_only_that_clusters_slurmrestd() {
    let (c24, _g24) = slurm24().await;
    let (c22, _g22) = slurm22().await;
    let s = read(&c24).await;
    let node = s.nodes.iter().find(|n| n.state == NodeState::Idle).expect("an idle node").name.to_string();
    let (prod_a, seen_a) = counting_proxy(upstream(&c24.url)).await;
    let (prod_b, seen_b) = counting_proxy(upstream(&c24.url)).await;
    let (lab, seen_lab) = counting_proxy(upstream(&c22.url)).await;

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let tok24 = dir.path().join("tok24");
    let tok22 = dir.path().join("tok22");
    std::fs::write(&tok24, &c24.admin_jwt).unwrap();
    std::fs::write(&tok22, &c22.admin_jwt).unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "[[cluster]]\nname = \"prod-a\"\n[cluster.slurm]\nurl = \"{prod_a}\"\ntoken_file = \"{t24}\"\n\n\
             [[cluster]]\nname = \"prod-b\"\n[cluster.slurm]\nurl = \"{prod_b}\"\ntoken_file = \"{t24}\"\n\n\
             [[cluster]]\nname = \"lab\"\n[cluster.slurm]\nurl = \"{lab}\"\ntoken_file = \"{t22}\"\nuser = \"root\"\n",
            t24 = tok24.display(),
            t22 = tok22.display(),
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = common::gpuplane_cmd(dir.path())
            .args(args)
            .args(["--audit-log", log.to_str().unwrap(), "--yes"])
            .env("GPUPLANE_CONFIG", &cfg)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    // A bare name two clusters have: refused before anything is planned or sent, naming both.
    let (rc, out, err) = tokio::task::block_in_place(|| run(&["drain", &node, "--reason", "fleet test"]));
    assert_eq!(rc, Some(2), "{out}{err}");
    assert!(err.contains(&format!("prod-a/{node}")) && err.contains(&format!("prod-b/{node}")), "{err}");
    assert!(!err.contains(&format!("lab/{node}")), "{err}");
    for seen in [&seen_a, &seen_b, &seen_lab] {
        assert_eq!(writes(seen), Vec::<String>::new(), "nothing sent for an ambiguous name");
    }

    // Named with its cluster: the plan names the cluster, its backend and identity, and the
    // write goes through prod-a's proxy alone. Only prod-a is read: the others get no request
    // at all (one cluster unreachable would not block an action on another).
    let target = format!("prod-a/{node}");
    let asked = |seen: &std::sync::Arc<std::sync::Mutex<Vec<String>>>| seen.lock().unwrap().len();
    let (before_b, before_lab) = (asked(&seen_b), asked(&seen_lab));
    let (rc, out, err) = tokio::task::block_in_place(|| {
        run(&["drain", &target, "--reason", "fleet routing test", "--ticket", "FLEET-1"])
    });
    assert_eq!(rc, Some(0), "{out}{err}");
    assert!(out.contains("on prod-a (slurm"), "the plan names the cluster: {out}");
    assert!(out.contains(&format!("drain {target}: POST {prod_a}/slurm/")), "{out}");
    assert!(out.contains(&format!("ok   {target}")), "{out}");
    let w = writes(&seen_a);
    assert!(w.iter().any(|l| l.starts_with("POST ") && l.contains(&format!("/node/{node} "))), "{w:?}");
    assert_eq!(writes(&seen_b), Vec::<String>::new(), "prod-b (same server, same name) got no write");
    assert_eq!(writes(&seen_lab), Vec::<String>::new(), "lab got no write");
    assert_eq!((asked(&seen_b), asked(&seen_lab)), (before_b, before_lab), "only prod-a was read");
    assert!(c24.cli(&["scontrol", "-o", "show", "node", &node]).contains("DRAIN"));

    // Audited under prod-a, with the backend identity and the endpoint it went to.
    let recs = AuditLog::new(log.clone()).read_all().unwrap();
    let drains: Vec<_> = recs.iter().filter(|r| r.action == "drain").collect();
    assert_eq!(drains.len(), 2, "{recs:?}");
    assert_eq!(drains[0].phase, Phase::Intent);
    for r in &drains {
        assert_eq!(r.cluster, "prod-a");
        assert_eq!(r.targets, vec![node.clone()]);
        assert_eq!(r.params["backend"], "slurm");
        assert_eq!(r.params["endpoint"], prod_a);
        assert!(r.identity.is_some(), "{r:?}");
    }
    assert_eq!(drains[1].result.as_deref(), Some("ok"));

    // Back in service through the same road, again only through prod-a.
    let (rc, out, err) =
        tokio::task::block_in_place(|| run(&["resume", &target, "--reason", "fleet routing test done"]));
    assert_eq!(rc, Some(0), "{out}{err}");
    assert_eq!(writes(&seen_b), Vec::<String>::new());
    assert_eq!(writes(&seen_lab), Vec::<String>::new());
    assert_eq!((asked(&seen_b), asked(&seen_lab)), (before_b, before_lab), "prod-b and lab untouched");
    for _ in 0..40 {
        if !c24.cli(&["scontrol", "-o", "show", "node", &node]).contains("DRAIN") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("{node} still drained after resume");
}

/// Two clusters' Slurm sources as the console runs them (each its own task, updates wrapped in
/// the cluster's name): `lab`'s slurmrestd answers, `gone`'s refuses connections. Only gone's
/// source is stale; lab's nodes are there, and none is gone's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_cluster_is_stale_alone() {
    let (c22, _g22) = slurm22().await;
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel(256);
    let cancel = tokio_util::sync::CancellationToken::new();
    for (name, url) in [("lab", c22.url.clone()), ("gone", dead)] {
        let mut cfg = c22.config(&c22.jwt);
        cfg.client.url = url;
        cfg.client.timeout = Duration::from_secs(3);
        let (ctx, mut crx) = tokio::sync::mpsc::channel::<Update>(64);
        let out = tx.clone();
        tokio::spawn(async move {
            while let Some(u) = crx.recv().await {
                let u = Update::Cluster { cluster: name.into(), update: Box::new(u) };
                if out.send(u).await.is_err() {
                    break;
                }
            }
        });
        let refresh = std::sync::Arc::new(tokio::sync::Notify::new());
        tokio::spawn(gpuplane::backend::slurm::run(cfg, ctx, refresh, cancel.clone()));
    }
    drop(tx);
    let mut s = gpuplane::state::ClusterState::new(Default::default(), Default::default());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let status = |s: &gpuplane::state::ClusterState, c: &str| {
        s.sources
            .iter()
            .find(|x| x.cluster == c && x.name == "slurm")
            .map(|x| (x.ok_at.is_some(), x.error.clone()))
    };
    while !(status(&s, "lab").is_some_and(|(ok, _)| ok)
        && status(&s, "gone").is_some_and(|(_, e)| e.is_some()))
    {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(u)) => {
                s.apply(u);
            }
            _ => panic!("no fresh lab and failed gone within 60 s: {:?}", s.sources),
        }
    }
    cancel.cancel();
    let (lab_ok, lab_err) = status(&s, "lab").unwrap();
    assert!(lab_ok && lab_err.is_none(), "lab stays live: {:?}", s.sources);
    let (gone_ok, gone_err) = status(&s, "gone").unwrap();
    assert!(!gone_ok && gone_err.is_some(), "gone is stale: {:?}", s.sources);
    assert!(s.nodes.iter().all(|n| n.cluster == "lab") && !s.nodes.is_empty());
}

/// `get … ` on a fleet with one cluster unreachable: the others' rows, the failed cluster named
/// on stderr; exit 0, or 2 with `--strict`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_prints_the_reachable_clusters_and_names_the_one_that_is_not() {
    let (c24, _g24) = slurm24().await;
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let dir = tempfile::tempdir().unwrap();
    let tok = dir.path().join("tok");
    std::fs::write(&tok, &c24.jwt).unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "[[cluster]]\nname = \"prod-a\"\n[cluster.slurm]\nurl = \"{}\"\ntoken_file = \"{t}\"\n\n\
             [[cluster]]\nname = \"gone\"\n[cluster.slurm]\nurl = \"{dead}\"\ntoken_file = \"{t}\"\n",
            c24.url,
            t = tok.display()
        ),
    )
    .unwrap();
    let expected = read(&c24).await.nodes.len();
    for (strict, code) in [(false, 0), (true, 2)] {
        let mut cmd = common::gpuplane_cmd(dir.path());
        cmd.args(["get", "nodes", "-o", "json"]).env("GPUPLANE_CONFIG", &cfg);
        if strict {
            cmd.arg("--strict");
        }
        let out = tokio::task::block_in_place(|| cmd.output().unwrap());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{err}");
        assert!(err.contains("cluster gone could not be read"), "{err}");
        let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(rows.len(), expected);
        assert!(rows.iter().all(|r| r["cluster"] == "prod-a"));
    }
}
