//! `gpuplane doctor` through the real binary against the real services scripts/test starts:
//! Slurm 22.05 and 24.11 (slurmrestd + slurmdbd) and Prometheus with its backfilled
//! dcgm/node_exporter series. Each finding is compared with what the service itself says
//! (the token's own claims, sacctmgr's AdminLevel, the REST versions answering a plain GET,
//! Prometheus's list of metric names).
//!
//! Behind the `live` feature (`cargo test --features live`, as scripts/test runs it).

use crate::common;
use crate::slurm_support;

use serde_json::Value;
use std::collections::BTreeSet;

fn doctor(home: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> (i32, Value, String) {
    let mut cmd = common::gpuplane_cmd(home);
    cmd.args(args).args(["doctor", "-o", "json", "--timeout", "10s"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run gpuplane");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let text = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {text}"));
    (out.status.code().expect("exit code"), report, text)
}

fn check<'a>(r: &'a Value, source: &str, check: &str) -> &'a Value {
    r["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["source"] == source && c["check"] == check)
        .unwrap_or_else(|| panic!("no check {source}/{check} in {r:#}"))
}

fn detail<'a>(r: &'a Value, source: &str, name: &str) -> &'a str {
    check(r, source, name)["detail"].as_str().unwrap_or_default()
}

/// The JWT's payload, decoded here independently of gpuplane.
fn claims(jwt: &str) -> Value {
    use base64::Engine as _;
    let p = jwt.split('.').nth(1).expect("a JWT");
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(p.trim_end_matches('=')).unwrap(),
    )
    .unwrap()
}

/// The REST versions that answer a ping, asked with plain HTTP.
async fn served(url: &str, jwt: &str, user: Option<&str>) -> Vec<String> {
    let http = reqwest::Client::new();
    let mut v = Vec::new();
    for ver in gpuplane::backend::slurm::ApiVersion::ALL {
        let mut req = http.get(format!("{url}{}", ver.ctld("ping"))).header("X-SLURM-USER-TOKEN", jwt);
        if let Some(u) = user {
            req = req.header("X-SLURM-USER-NAME", u);
        }
        if req.send().await.unwrap().status() == 200 {
            v.push(ver.to_string());
        }
    }
    v
}

fn prom_url() -> String {
    match std::env::var("GPUPLANE_TEST_PROM_URL") {
        Ok(u) if !u.is_empty() => u,
        _ => panic!("GPUPLANE_TEST_PROM_URL is not set: run scripts/test (it starts the test Prometheus)"),
    }
}

#[tokio::test]
async fn slurm_24_user_and_admin_tokens() {
    let (c, _g) = slurm_support::slurm24().await;
    let home = tempfile::tempdir().unwrap();
    let _syslog = common::syslog_at(home.path());
    let (code, r, text) = doctor(home.path(), &["--slurm", &c.url], &[("SLURM_JWT", c.jwt.as_str())]);
    assert!(!text.contains(&c.jwt), "the token is never printed");
    // The token: who and until when, as the JWT itself says.
    let want = claims(&c.jwt);
    let tok = check(&r, "slurm", "token");
    assert_eq!(tok["status"], "ok", "{text}");
    assert_eq!(tok["data"]["user"], want["sun"], "{text}");
    assert_eq!(tok["data"]["expires_unix"], want["exp"], "{text}");
    assert_eq!(check(&r, "slurm", "auth")["status"], "ok", "{text}");
    // The versions: the same as a plain GET of each ping finds.
    let api = check(&r, "slurm", "api");
    assert_eq!(api["data"]["served"], serde_json::json!(served(&c.url, &c.jwt, None).await), "{text}");
    assert_eq!(api["data"]["used"], "v0.0.42");
    assert!(api["data"]["release"].as_str().unwrap().starts_with("24.11"), "{text}");
    assert_eq!(check(&r, "slurm", "slurmdbd")["status"], "ok", "{text}");
    // The user token's AdminLevel, as sacctmgr says: None, so drain would be refused.
    let user = want["sun"].as_str().unwrap();
    let level = c.cli(&["sacctmgr", "-nP", "show", "user", user, "format=adminlevel"]);
    assert_eq!(level.trim(), "None");
    let drain = check(&r, "slurm", "permission/drain");
    assert_eq!(drain["status"], "warn", "{text}");
    assert_eq!(drain["data"]["admin_level"], "None");
    assert!(drain["fix"].as_str().unwrap().contains(&format!("sacctmgr modify user {user}")), "{text}");
    assert!(detail(&r, "slurm", "permission/cancel").contains("its own jobs"), "{text}");
    assert_eq!(check(&r, "slurm", "clock")["status"], "ok", "{text}");
    assert_eq!(code, 1, "one warning (drain): {text}");

    // The SlurmUser's token may drain: everything OK.
    let (code, r, text) = doctor(home.path(), &["--slurm", &c.url], &[("SLURM_JWT", c.admin_jwt.as_str())]);
    assert_eq!(check(&r, "slurm", "permission/drain")["status"], "ok", "{text}");
    assert!(detail(&r, "slurm", "permission/cancel").contains("any job"), "{text}");
    assert_eq!(code, 0, "{text}");

    // A token slurmrestd refuses (signed with another key): auth fails, nothing further is asked.
    let forged = {
        use base64::Engine as _;
        let p = c.jwt.split('.').collect::<Vec<_>>();
        let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b"not the cluster's signature");
        format!("{}.{}.{sig}", p[0], p[1])
    };
    let (code, r, text) = doctor(home.path(), &["--slurm", &c.url], &[("SLURM_JWT", forged.as_str())]);
    assert_eq!(check(&r, "slurm", "token")["status"], "ok", "the claims read fine locally: {text}");
    assert_eq!(check(&r, "slurm", "auth")["status"], "fail", "{text}");
    assert_eq!(code, 2);
    assert!(!text.contains(&forged));
}

#[tokio::test]
async fn slurm_22_needs_the_user_name_and_cannot_drain() {
    let (c, _g) = slurm_support::slurm22().await;
    let home = tempfile::tempdir().unwrap();
    let user = c.user.clone().unwrap();
    let (code, r, text) =
        doctor(home.path(), &["--slurm", &c.url, "--slurm-user", &user], &[("SLURM_JWT", c.jwt.as_str())]);
    let api = check(&r, "slurm", "api");
    assert_eq!(api["data"]["served"], serde_json::json!(served(&c.url, &c.jwt, Some(&user)).await), "{text}");
    assert_eq!(api["data"]["served"], serde_json::json!(["v0.0.38"]), "{text}");
    assert!(api["data"]["release"].as_str().unwrap().starts_with("22.05"), "{text}");
    assert_eq!(check(&r, "slurm", "slurmdbd")["status"], "ok", "{text}");
    let drain = check(&r, "slurm", "permission/drain");
    assert_eq!(drain["status"], "warn", "{text}");
    assert!(drain["detail"].as_str().unwrap().contains("v0.0.38"), "{text}");
    assert_eq!(check(&r, "slurm", "clock")["status"], "ok", "{text}");
    assert_eq!(code, 1, "{text}");
    // A token signed with another key: 22.05 answers the ping HTTP 500 "Unspecified error".
    let forged = format!("{}.Zm9yZ2Vk", c.jwt.rsplit_once('.').unwrap().0);
    let (code, r, text) =
        doctor(home.path(), &["--slurm", &c.url, "--slurm-user", &user], &[("SLURM_JWT", forged.as_str())]);
    let auth = check(&r, "slurm", "auth");
    assert_eq!(auth["status"], "fail", "{text}");
    assert!(auth["fix"].as_str().unwrap().contains("HTTP 500"), "{text}");
    assert_eq!(code, 2);
    assert!(!text.contains(&forged));
    // Without X-SLURM-USER-NAME, 22.05 refuses even a valid token; the fix says so.
    let (code, r, text) = doctor(home.path(), &["--slurm", &c.url], &[("SLURM_JWT", c.jwt.as_str())]);
    let auth = check(&r, "slurm", "auth");
    assert_eq!(auth["status"], "fail", "{text}");
    assert!(auth["fix"].as_str().unwrap().contains("--slurm-user"), "{text}");
    assert_eq!(code, 2);
}

/// Every metric name the server holds now (its own label-values API).
async fn metric_names(url: &str) -> BTreeSet<String> {
    let v: Value = reqwest::get(format!(
        "{url}/api/v1/label/__name__/values?start={}",
        jiff::Timestamp::now().as_second() - 300
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    v["data"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn prometheus_series_missing_are_named_with_what_they_disable() {
    let url = prom_url();
    let home = tempfile::tempdir().unwrap();
    let (code, r, text) = doctor(home.path(), &["--prometheus", &url], &[]);
    assert_eq!(check(&r, "prometheus", "api")["status"], "ok", "{text}");
    // What doctor says is missing is what the server lacks of gpuplane's metric names.
    let names = metric_names(&url).await;
    let required: Vec<String> = {
        let m = gpuplane::backend::prom::config::MetricNames::default();
        [
            m.gpu_util,
            m.tensor_active,
            m.gpu_temp,
            m.power,
            m.fb_used,
            m.fb_free,
            m.xid,
            m.ecc_sbe,
            m.ecc_dbe,
            m.nvlink_crc_flit,
            m.nvlink_crc_data,
            m.nvlink_replay,
            m.nvlink_bw,
            m.pcie_replay,
            m.ib_state,
            m.ib_rate,
            m.ib_symbol_errors,
            m.ib_rcv_errors,
            m.ib_xmit_discards,
            m.ib_link_downed,
            m.ib_rx_bytes,
            m.ib_tx_bytes,
            m.fs_size,
            m.fs_avail,
            m.disk_read,
            m.disk_written,
            m.nfs_read,
            m.nfs_written,
            m.disk_io_time,
            m.cpu_seconds,
        ]
        .into()
    };
    let want: BTreeSet<&str> = required.iter().map(String::as_str).filter(|n| !names.contains(*n)).collect();
    let said: BTreeSet<&str> = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"].as_str().unwrap().starts_with("series/"))
        .flat_map(|c| c["data"]["missing"].as_array().unwrap().iter().map(|m| m["metric"].as_str().unwrap()))
        .collect();
    assert_eq!(said, want, "{text}");
    // The test data has no transmit-discard counter: a warning that says what it disables.
    assert!(want.contains("node_infiniband_port_discards_transmitted_total"), "{want:?}");
    let ib = check(&r, "prometheus", "series/infiniband");
    assert_eq!(ib["status"], "warn");
    assert!(ib["detail"].as_str().unwrap().contains("transmit discard"), "{text}");
    // Labels: every GPU on a node, allocation labels present (the data has both pod and hpc_job).
    assert_eq!(check(&r, "prometheus", "labels/gpu-host")["status"], "ok", "{text}");
    assert_eq!(check(&r, "prometheus", "labels/jobs")["status"], "ok", "{text}");
    assert_eq!(check(&r, "prometheus", "labels/host-map")["status"], "ok", "{text}");
    assert_eq!(check(&r, "prometheus", "clock")["status"], "ok", "{text}");
    assert_eq!(code, 1, "{text}");

    // A metric the config requires and the server does not have: filesystem fill is disabled.
    let cfg = home.path().join("config.toml");
    std::fs::write(&cfg, "[prometheus.metrics]\nfs_avail = \"node_filesystem_avail_bytes_not_exported\"\n")
        .unwrap();
    let (_, r, text) = doctor(home.path(), &["--config", cfg.to_str().unwrap(), "--prometheus", &url], &[]);
    let st = check(&r, "prometheus", "series/storage");
    assert_eq!(st["status"], "warn", "{text}");
    assert!(
        st["detail"]
            .as_str()
            .unwrap()
            .contains("node_filesystem_avail_bytes_not_exported (disables filesystem fill"),
        "{text}"
    );
    // With Slurm configured, the join label needed is hpc_job; removing GPU telemetry altogether fails.
    std::fs::write(
        &cfg,
        "[prometheus.metrics]\ngpu_util = \"nope_util\"\ngpu_temp = \"nope_temp\"\npower = \"nope_power\"\nfb_used = \"nope_fb\"\nfb_free = \"nope_free\"\ntensor_active = \"nope_tensor\"\n",
    )
    .unwrap();
    let (code, r, text) =
        doctor(home.path(), &["--config", cfg.to_str().unwrap(), "--prometheus", &url], &[]);
    assert_eq!(check(&r, "prometheus", "series/gpu")["status"], "fail", "{text}");
    assert_eq!(code, 2);
}

#[tokio::test]
async fn slurm_24_with_prometheus_the_whole_report() {
    let (c, _g) = slurm_support::slurm24().await;
    let url = prom_url();
    let home = tempfile::tempdir().unwrap();
    let out = common::gpuplane_cmd(home.path())
        .args(["--slurm", &c.url, "--prometheus", &url, "doctor"])
        .env("SLURM_JWT", &c.jwt)
        .output()
        .unwrap();
    let t = String::from_utf8(out.stdout).unwrap();
    println!("{t}");
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(!t.contains(&c.jwt));
    assert!(t.contains("WARN  slurm       permission/drain"), "{t}");
    assert!(t.contains("OK    prometheus  labels/jobs"), "{t}");
}

/// An instant PromQL query's `data.result`, asked with plain HTTP.
async fn promql(url: &str, q: &str) -> Vec<Value> {
    let body = reqwest::Client::new()
        .get(format!("{url}/api/v1/query"))
        .query(&[("query", q)])
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&body).unwrap();
    v["data"]["result"].as_array().unwrap().clone()
}

/// With Slurm and Prometheus, doctor says whether the telemetry's job ids are the scheduler's
/// (never "GPUs join their jobs" when none is) and on how many nodes the GPU counts differ: the
/// ids as Prometheus's own `hpc_job` labels on the Slurm nodes' hosts, the jobs as squeue lists
/// them, the GPU counts as sinfo's Gres and Prometheus's series count.
#[tokio::test]
async fn slurm_22_with_prometheus_counts_the_telemetry_jobs_it_knows() {
    let (c, _g) = slurm_support::slurm22().await;
    let url = prom_url();
    let home = tempfile::tempdir().unwrap();
    let user = c.user.clone().unwrap();
    let (_, r, text) = doctor(
        home.path(),
        &["--slurm", &c.url, "--slurm-user", &user, "--prometheus", &url],
        &[("SLURM_JWT", c.jwt.as_str())],
    );
    // The oracle: sinfo, squeue and PromQL.
    let gres: std::collections::BTreeMap<String, u32> = c
        .cli(&["sinfo", "-N", "-h", "-o", "%N %G"])
        .lines()
        .filter_map(|l| {
            let (n, g) = l.split_once(' ')?;
            Some((n.to_string(), g.rsplit(':').next()?.trim().parse().ok()?))
        })
        .collect();
    let queued: BTreeSet<u64> =
        c.cli(&["squeue", "-h", "-o", "%i"]).lines().filter_map(|l| l.trim().parse().ok()).collect();
    let ids: BTreeSet<u64> =
        promql(&url, r#"count by (Hostname, hpc_job) (DCGM_FI_DEV_GPU_UTIL{hpc_job!=""})"#)
            .await
            .iter()
            .filter(|r| gres.contains_key(r["metric"]["Hostname"].as_str().unwrap_or("")))
            .filter_map(|r| r["metric"]["hpc_job"].as_str()?.parse().ok())
            .collect();
    let matched = ids.intersection(&queued).count();
    assert!(!ids.is_empty());
    let jobs = check(&r, "join", "jobs");
    assert_eq!(jobs["data"]["telemetry_jobs"], ids.len(), "{text}");
    assert_eq!(jobs["data"]["scheduler_jobs"], matched, "{text}");
    let want = format!("{matched} of {} telemetry job ids are the scheduler's jobs", ids.len());
    assert!(jobs["detail"].as_str().unwrap().starts_with(&want), "{text}");
    assert_eq!(jobs["status"], if matched == ids.len() { "ok" } else { "warn" }, "{text}");
    assert!(!detail(&r, "prometheus", "labels/jobs").contains("GPUs join their jobs"), "{text}");
    let counts = promql(&url, "count by (Hostname) (DCGM_FI_DEV_GPU_UTIL)").await;
    let differ = counts
        .iter()
        .filter(|r| {
            let h = r["metric"]["Hostname"].as_str().unwrap_or("");
            let n: u32 = r["value"][1].as_str().unwrap().parse().unwrap();
            gres.get(h).is_some_and(|&g| g != n)
        })
        .count();
    assert!(differ > 0, "the planted 4-GPU nodes: {gres:?}");
    assert_eq!(check(&r, "join", "nodes")["data"]["gpu_count_differs"], differ, "{text}");
}
