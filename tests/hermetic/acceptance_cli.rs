//! `gpuplane acceptance parse` and `gpuplane get acceptance` through the real binary.

use crate::common;

const GCP: &str = "tests/fixtures/nccl/01_h100x16_2node_gcp_a3mega_allreduce.txt";

fn run(home: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = common::gpuplane_cmd(home).args(args).output().expect("run gpuplane");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn parse_a_sample_as_table_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let (rc, out, err) = run(dir.path(), &["acceptance", "parse", GCP]);
    assert_eq!(rc, Some(0), "{err}");
    assert!(out.contains("devices: 16"), "{out}");
    assert!(out.contains("peak busbw      338.82 GB/s"), "{out}");
    assert!(out.contains("avg busbw       70.742 GB/s"), "{out}");
    let (rc, out, _) = run(dir.path(), &["acceptance", "parse", GCP, "-o", "json"]);
    assert_eq!(rc, Some(0));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["devices"].as_array().unwrap().len(), 16);
    assert_eq!(v["sweeps"][0]["rows"].as_array().unwrap().len(), 31);
    assert_eq!(v["sweeps"][0]["avg_busbw"], 70.742);
}

#[test]
fn bad_output_exits_non_zero_and_says_what_was_read() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(GCP).unwrap();
    let cut = dir.path().join("cut.txt");
    std::fs::write(&cut, &text[..text.find("# Out of bounds").unwrap()]).unwrap();
    let (rc, out, err) = run(dir.path(), &["acceptance", "parse", cut.to_str().unwrap()]);
    assert_eq!(rc, Some(2));
    assert!(err.contains("truncated nccl-tests output"), "{err}");
    assert!(out.contains("read before the problem") && out.contains("devices: 16"), "{out}");
    let (rc, out, _) = run(dir.path(), &["acceptance", "parse", cut.to_str().unwrap(), "-o", "json"]);
    assert_eq!(rc, Some(2));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["kind"], "truncated");
    assert_eq!(v["partial"]["sweeps"][0]["rows"].as_array().unwrap().len(), 31);
    // Wrong values: parsed, but exit 1.
    let bad = dir.path().join("wrong.txt");
    std::fs::write(&bad, text.replace("338.82      0", "338.82     12")).unwrap();
    let (rc, out, _) = run(dir.path(), &["acceptance", "parse", bad.to_str().unwrap()]);
    assert_eq!(rc, Some(1), "{out}");
    assert!(out.contains("12 wrong value(s)"), "{out}");
    let (rc, _, err) = run(dir.path(), &["acceptance", "parse", "/nonexistent/x.txt"]);
    assert_eq!(rc, Some(2));
    assert!(err.contains("/nonexistent/x.txt"), "{err}");
}

#[test]
fn get_acceptance_with_an_empty_store() {
    let dir = tempfile::tempdir().unwrap();
    let (rc, out, err) = run(dir.path(), &["get", "acceptance"]);
    assert_eq!(rc, Some(0), "{err}");
    assert_eq!(out.lines().count(), 1);
    assert!(out.starts_with("RUN"), "{out}");
    let (_, out, _) = run(dir.path(), &["get", "acceptance", "-o", "json"]);
    assert_eq!(out.trim(), "[]");
}

/// On the simulator the whole road runs: plan, audit intent, submit, collect, parse, record,
/// judge, audit outcome with the job ids; then `get acceptance` lists the runs.
#[test]
fn run_on_the_simulator_records_judges_and_audits() {
    let dir = tempfile::tempdir().unwrap();
    let (rc, out, err) = run(
        dir.path(),
        &["acceptance", "run", "gpu-001", "gpu-002", "--mode", "pairs", "--reason", "after repair", "--yes"],
    );
    assert_eq!(rc, Some(0), "{out}{err}");
    assert!(
        out.contains("acceptance gpu-001,gpu-002: sim: run `all_reduce_perf -b 8 -e 8G -f 2 -g 8`"),
        "{out}"
    );
    assert!(out.contains("PASS job sim-"), "{out}");
    let (_, json, _) = run(dir.path(), &["get", "acceptance", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["nodes"], serde_json::json!(["gpu-001", "gpu-002"]));
    assert_eq!(runs[0]["mode"], "pairs");
    assert_eq!(runs[0]["judgement"]["verdict"], "pass");
    assert_eq!(runs[0]["result"]["devices"].as_array().unwrap().len(), 16);
    let job = runs[0]["job_id"].as_str().unwrap().to_string();
    let (_, csv_text, _) = run(dir.path(), &["get", "acceptance", "-o", "csv"]);
    assert_eq!(csv_text.lines().count(), 2, "{csv_text}");
    assert!(csv_text.contains(&job));
    let (_, tail, _) = run(dir.path(), &["audit", "tail", "--json"]);
    let recs: Vec<serde_json::Value> = tail.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(recs.len(), 2);
    assert_eq!((recs[0]["phase"].as_str(), recs[1]["phase"].as_str()), (Some("intent"), Some("outcome")));
    assert_eq!(recs[1]["params"]["jobs"], format!("gpu-001,gpu-002={job}"));
    assert_eq!(recs[1]["params"]["mode"], "pairs");
    // Three nodes cannot pair: nothing is submitted.
    let (rc, _, err) = run(
        dir.path(),
        &["acceptance", "run", "gpu-001", "gpu-002", "gpu-003", "--mode", "pairs", "-r", "x", "--yes"],
    );
    assert_eq!(rc, Some(2));
    assert!(err.contains("even number"), "{err}");
}

/// In a fleet, runs submitted on several clusters under one confirmation are each followed to
/// their result through their own cluster and recorded with it, all under one op id.
#[test]
fn fleet_runs_are_followed_per_cluster_and_recorded_with_their_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = |args: &[&str]| {
        let out = common::gpuplane_cmd(dir.path())
            .args(args)
            .args(["--sim-clusters", "2"])
            .env("GPUPLANE_SIM_START", "1767225600")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // A node of each cluster that takes jobs.
    let (_, json, _) = fleet(&["get", "nodes", "-o", "json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    let pick = |c: &str| -> String {
        rows.iter()
            .find(|r| r["cluster"] == c && ["idle", "mixed", "allocated"].iter().any(|s| r["state"] == *s))
            .and_then(|r| r["name"].as_str())
            .map(|n| format!("{c}/{n}"))
            .expect("a node that takes jobs")
    };
    let (a, b) = (pick("sim-1"), pick("sim-2"));
    let (rc, out, err) = fleet(&["acceptance", "run", &a, &b, "--reason", "after repair", "--yes"]);
    assert_eq!(rc, Some(0), "{out}{err}");
    assert!(out.contains("on sim-1:") && out.contains("on sim-2:"), "{out}");
    assert_eq!(out.matches("PASS job sim-").count(), 2, "{out}");
    let (_, json, _) = run(dir.path(), &["get", "acceptance", "-o", "json"]);
    let runs: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    let mut got: Vec<(String, String)> = runs
        .iter()
        .map(|r| {
            (
                r["cluster"].as_str().unwrap_or("-").to_string(),
                r["nodes"][0].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect();
    got.sort();
    let want = |t: &str| {
        let (c, n) = t.split_once('/').unwrap();
        (c.to_string(), n.to_string())
    };
    assert_eq!(got, vec![want(&a), want(&b)]);
    assert!(runs.iter().all(|r| r["judgement"]["verdict"] == "pass"), "{runs:?}");
    assert_eq!(runs[0]["op_id"], runs[1]["op_id"], "one confirmation, one op id");
}
