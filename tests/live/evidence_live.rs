//! The evidence `gpuplane report job` shows beside idle GPUs, against the real test Prometheus
//! (scripts/prometheus/), whose history holds finished jobs planted with a node-side cause:
//! 77004 on gpu-006 (GPUs 10 % busy while the node's NFS reads sit at 98 % of 2 GB/s for
//! 20 minutes), then 77005 on the same node (GPUs 10 % busy while every CPU is 97 % busy for
//! 20 minutes), and 77001 on the quiet gpu-016 (a GPU that never ran a process, nothing on the
//! node). Each figure is checked against PromQL the test writes itself over the same window;
//! a series that is not exported is "no data", never a clean bill; and once the report has run,
//! the ledger keeps the job's summary, which answers when Prometheus has nothing.
//!
//! Behind the `live` feature: it needs GPUPLANE_TEST_PROM_URL and fails without it.

use crate::common;

use gpuplane::backend::prom::PromConfig;
use gpuplane::store::{GpuInterval, JobRecord, Ledger, Observation};
use serde_json::Value;
use std::path::Path;

fn url() -> String {
    common::prom_url()
}

/// One value of an instant query at `at` (`None`: no series).
fn q(url: &str, promql: &str, at: i64) -> Option<f64> {
    common::prom_value(url, promql, at)
}

/// A planted job's run, from its GPU series: the first sample and one step past the last.
fn window(url: &str, job: &str, gpu: u8) -> (i64, i64) {
    let now = jiff::Timestamp::now().as_second();
    let sel = format!(r#"DCGM_FI_DEV_GPU_UTIL{{hpc_job="{job}",gpu="{gpu}"}}"#);
    let first = q(url, &format!("min_over_time(timestamp({sel})[12h:15s])"), now)
        .unwrap_or_else(|| panic!("planted job {job}"));
    let last = q(url, &format!("max_over_time(timestamp({sel})[12h:15s])"), now).unwrap();
    (first as i64, last as i64 + 15)
}

fn record(id: u64, node: &str, start: i64, end: i64) -> JobRecord {
    common::finished_job(id, &format!("planted-{id}"), 2, "NVIDIA H100 80GB HBM3", node, (start, end))
}

struct Home {
    dir: tempfile::TempDir,
    url: String,
}

impl Home {
    fn config(&self, extra: &str) -> std::path::PathBuf {
        let ledger = self.dir.path().join("ledger");
        let p = self.dir.path().join(format!("config-{}.toml", extra.len()));
        std::fs::write(&p, format!("[ledger]\ndir = {:?}\n{extra}", ledger.display().to_string())).unwrap();
        p
    }

    fn run(&self, extra: &str, args: &[&str]) -> std::process::Output {
        let config = self.config(extra);
        common::gpuplane_cmd(self.dir.path())
            .args(["--config", config.to_str().unwrap(), "--prometheus", &self.url, "report", "job"])
            .args(args)
            .output()
            .expect("run gpuplane")
    }

    fn json(&self, extra: &str, id: u64) -> Value {
        let out = self.run(extra, &[&id.to_string(), "-o", "json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn text(&self, extra: &str, id: u64) -> String {
        let out = self.run(extra, &[&id.to_string(), "-o", "text"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// The ledger's file (its name is the cluster's: the report says it when a job is missing).
    fn ledger(&self) -> std::path::PathBuf {
        common::ledger_path_of(&self.run("", &["1"]))
    }
}

fn near(got: &Value, want: f64, tol: f64, what: &str) {
    let g = got.as_f64().unwrap_or_else(|| panic!("{what}: no figure ({got})"));
    assert!((g - want).abs() <= tol * want.abs().max(1.0), "{what}: report {g} vs PromQL {want}");
}

fn findings(e: &Value, kind: &str) -> Vec<Value> {
    e["evidence"]["findings"].as_array().unwrap().iter().filter(|f| f["kind"] == kind).cloned().collect()
}

#[test]
fn evidence_beside_idle_gpus_equals_promql_and_says_no_data() {
    let home = Home { dir: tempfile::tempdir().unwrap(), url: url() };
    let url = home.url.clone();
    let storage_job = window(&url, "77004", 2);
    let cpu_job = window(&url, "77005", 4);
    let quiet_job = window(&url, "77001", 0);
    assert_eq!(storage_job.1 - storage_job.0, 1800, "the planted evidence jobs run 30 min");
    assert_eq!(cpu_job.0, storage_job.1, "77005 starts where 77004 ends");

    // The jobs as the scheduler side records them in the ledger.
    let path = home.ledger();
    let iv = |job: u64, node: &str, g: u8, (start, end): (i64, i64)| GpuInterval {
        job,
        node: node.into(),
        gpu: Some(g),
        gpus: 1,
        start,
        end,
        util: None,
    };
    let mut l = Ledger::open(&path).expect("ledger");
    l.record(&[Observation {
        cluster: String::new(),
        at: storage_job.1.max(cpu_job.1),
        jobs: vec![
            record(77004, "gpu-006", storage_job.0, storage_job.1),
            record(77005, "gpu-006", cpu_job.0, cpu_job.1),
            record(77001, "gpu-016", quiet_job.0, quiet_job.1),
        ],
        intervals: vec![
            iv(77004, "gpu-006", 2, storage_job),
            iv(77004, "gpu-006", 3, storage_job),
            iv(77005, "gpu-006", 4, cpu_job),
            iv(77005, "gpu-006", 5, cpu_job),
            iv(77001, "gpu-016", 0, quiet_job),
            iv(77001, "gpu-016", 1, quiet_job),
        ],
        capacity: Vec::new(),
    }])
    .expect("record");
    drop(l);

    // The test's own PromQL: a node's NFS client bytes/s and CPU busy fraction, sampled every
    // minute over the run (the report's step for a run this short).
    let nfs = |node: &str| {
        format!(
            r#"(sum(rate(node_mountstats_nfs_total_read_bytes_total{{instance="{node}:9100"}}[2m])) + sum(rate(node_mountstats_nfs_total_write_bytes_total{{instance="{node}:9100"}}[2m])))"#
        )
    };
    let cpu = |node: &str| {
        format!(r#"(1 - avg(rate(node_cpu_seconds_total{{instance="{node}:9100",mode="idle"}}[2m])))"#)
    };
    let over = |f: &str, e: &str, (s, t): (i64, i64)| q(&url, &format!("{f}(({e})[{}s:60s])", t - s), t);

    // 77004: its GPUs idle while storage sits at the ceiling.
    let e = home.json("", 77004);
    let ev = &e["evidence"];
    assert!(ev.is_object(), "GPUs 10 % busy: evidence is looked for ({e:#})");
    let n = &ev["nodes"][0];
    assert_eq!(n["node"], "gpu-006");
    let mean = over("avg_over_time", &nfs("gpu-006"), storage_job).unwrap();
    near(&n["storage"]["mean"], mean, 1e-4, "storage mean");
    let peak = over("max_over_time", &nfs("gpu-006"), storage_job).unwrap();
    near(&n["storage"]["peak"], peak, 1e-4, "storage peak");
    let high = over("count_over_time", &format!("{} >= 1.8e9", nfs("gpu-006")), storage_job).unwrap();
    let high_mean = over("avg_over_time", &format!("{} >= 1.8e9", nfs("gpu-006")), storage_job).unwrap();
    assert!((17.0..=22.0).contains(&high), "the planted 20 minutes at the ceiling: {high} samples");
    assert!((high_mean / 2.0e9 - 0.98).abs() < 0.01, "{high_mean}");
    assert_eq!(n["storage"]["at_ceiling_s"], high as i64 * 60);
    near(&n["storage"]["at_ceiling_mean"], high_mean, 1e-4, "storage at the ceiling");
    let f = findings(&e, "storage");
    assert_eq!(f.len(), 1, "{ev:#}");
    let want = format!(
        "storage at {:.0}% of its 2.0 GB/s ceiling for {} of the run on gpu-006",
        100.0 * high_mean / 2.0e9,
        gpuplane::clock::dur(high as i64 * 60)
    );
    assert_eq!(f[0]["text"], want.as_str());
    assert_eq!((f[0]["ceiling"].as_f64(), f[0]["seconds"].as_i64()), (Some(2.0e9), Some(high as i64 * 60)));
    assert!(findings(&e, "cpu").is_empty(), "the CPUs were not busy during 77004: {ev:#}");
    let cpu_mean = over("avg_over_time", &cpu("gpu-006"), storage_job).unwrap();
    near(&n["cpu"]["mean"], cpu_mean, 1e-3, "CPU mean during 77004");
    assert!(e["notes"].to_string().contains("beside the idle GPUs: storage at"), "{}", e["notes"]);
    // The same for people.
    let text = home.text("", 77004);
    assert!(text.contains("Evidence on its nodes") && text.contains(&want), "{text}");

    // 77005: the CPUs saturated, storage quiet.
    let e = home.json("", 77005);
    let n = &e["evidence"]["nodes"][0];
    let busy = over("avg_over_time", &format!("{} >= 0.81", cpu("gpu-006")), cpu_job).unwrap();
    let busy_n = over("count_over_time", &format!("{} >= 0.81", cpu("gpu-006")), cpu_job).unwrap();
    // The planted 97 %, a little less where a rate window straddles the saturation's edges.
    assert!((busy - 0.97).abs() < 0.01 && (17.0..=22.0).contains(&busy_n), "{busy} {busy_n}");
    near(&n["cpu"]["at_ceiling_mean"], busy, 1e-3, "CPU busy at the ceiling");
    assert_eq!(n["cpu"]["at_ceiling_s"], busy_n as i64 * 60);
    near(&n["cpu"]["mean"], over("avg_over_time", &cpu("gpu-006"), cpu_job).unwrap(), 1e-3, "CPU mean");
    let f = findings(&e, "cpu");
    assert_eq!(f.len(), 1, "{e:#}");
    let want_cpu = format!(
        "CPU {:.0}% busy (ceiling 90%) for {} of the run on gpu-006: data loading may be CPU-bound",
        100.0 * busy,
        gpuplane::clock::dur(busy_n as i64 * 60)
    );
    assert_eq!(f[0]["text"], want_cpu.as_str());
    assert!(findings(&e, "storage").is_empty(), "storage was quiet during 77005");
    assert_eq!(n["storage"]["at_ceiling_s"], 0, "measured, never at the ceiling: 0 s, not null");

    // 77001 on the quiet gpu-016: looked for (a GPU never ran), nothing found, figures real.
    let e = home.json("", 77001);
    let n = &e["evidence"]["nodes"][0];
    assert_eq!(n["node"], "gpu-016");
    assert_eq!(e["evidence"]["findings"], serde_json::json!([]), "{e:#}");
    near(
        &n["storage"]["mean"],
        over("avg_over_time", &nfs("gpu-016"), quiet_job).unwrap(),
        1e-4,
        "quiet storage",
    );
    assert_eq!(n["ib_link_downed"], 0.0);
    assert_eq!(e["evidence"]["no_data"], serde_json::json!([]));

    // A series that is not exported: "no data", no finding, never "fine".
    let missing = "[prometheus.metrics]\ncpu_seconds = \"node_cpu_seconds_total_not_exported\"\n";
    let e = home.json(missing, 77005);
    assert!(e["evidence"]["nodes"][0]["cpu"]["mean"].is_null());
    assert!(findings(&e, "cpu").is_empty());
    assert_eq!(
        e["evidence"]["no_data"],
        serde_json::json!(["no data for CPU (node_cpu_seconds_total_not_exported)"])
    );
    assert!(home.text(missing, 77005).contains("no data for CPU"));
    // A higher ceiling from the config: the same storage is no longer a finding.
    let e = home.json("[prometheus.evidence]\nstorage_bytes_s = 4.0e9\n", 77004);
    assert!(findings(&e, "storage").is_empty(), "{:#}", e["evidence"]);

    // The ledger keeps 77004's summary as the last report that reached Prometheus saw it (the
    // default ceilings again); when Prometheus has nothing for the job (a selector that
    // matches no series), the report answers from it and says so.
    assert_eq!(findings(&home.json("", 77004), "storage").len(), 1);
    let l = Ledger::open(&path).unwrap();
    let (at, _) = l.summary(77004).unwrap().expect("the report recorded the summary");
    drop(l);
    let gone = "[prometheus]\nselector = 'cluster=\"forgotten\"'\n";
    let e = home.json(gone, 77004);
    let t = &e["telemetry"];
    assert_eq!((t["source"].as_str(), t["recorded_at_unix"].as_i64()), (Some("ledger"), Some(at)), "{e:#}");
    assert_eq!(findings(&e, "storage").len(), 1, "the evidence came back too: {e:#}");
    let text = home.text(gone, 77004);
    assert!(text.contains("from the ledger, recorded at ") && text.contains(&want), "{text}");
    assert!(Path::new(&path).exists());

    // The console's detail pane: the history of a job's focus carries the evidence on its
    // nodes over the same hour (here the hour up to 77004's end, which holds its saturation).
    let cfg = PromConfig::new(&url);
    let client = gpuplane::backend::prom::PromClient::new(&cfg).unwrap();
    let focus =
        gpuplane::model::protocol::Focus::Job(77004, vec![("gpu-006".into(), 2), ("gpu-006".into(), 3)]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let h = rt
        .block_on(gpuplane::backend::prom::focus::fetch(&client, &cfg, &focus, storage_job.1))
        .expect("history")
        .expect("a job focus is asked for");
    let ev = h.evidence.expect("the job's nodes over the hour");
    assert_eq!((ev.end - ev.start, ev.nodes.len()), (3600, 1));
    let hour = (ev.start, ev.end);
    let s = ev.nodes[0].storage.clone();
    assert_eq!(
        s.at_ceiling_s,
        over("count_over_time", &format!("{} >= 1.8e9", nfs("gpu-006")), hour).map(|n| n as i64 * 60)
    );
    assert!(ev.findings.iter().any(|f| f.text.ends_with("of the last hour on gpu-006")), "{ev:#?}");

    // The console's road makes the same summary at the job's end: the ledger's wanted job asked
    // of the Prometheus backend's job figures, its answer made the ledger's summary.
    let (ftx, mut frx) = tokio::sync::mpsc::channel(4);
    let mut summaries = gpuplane::tui::summaries::Summaries::new(ftx);
    let (rules, prices) = (Default::default(), Default::default());
    let rec = record(77004, "gpu-006", storage_job.0, storage_job.1);
    let ivs = vec![iv(77004, "gpu-006", 2, storage_job), iv(77004, "gpu-006", 3, storage_job)];
    summaries.want("c".into(), Box::new(rec), ivs, &rules, &prices);
    let want_figures = frx.try_recv().expect("asked of the backend");
    let figures = rt.block_on(gpuplane::backend::prom::figures::measure(&client, &cfg, want_figures));
    let Some(gpuplane::store::ledger::Request::PutSummary { job, summary: json, .. }) =
        summaries.answered(figures, storage_job.1 + 60, &rules, &prices)
    else {
        panic!("a summary for the ledger")
    };
    assert_eq!(job, 77004);
    let s: gpuplane::cost::eff::Summary = serde_json::from_str(&json).unwrap();
    assert_eq!(s.telemetry.source, "prometheus");
    let ev = s.evidence.expect("evidence beside the idle GPUs");
    assert_eq!(ev.findings.len(), 1, "{ev:#?}");
    assert_eq!(ev.findings[0].text, want);
}
