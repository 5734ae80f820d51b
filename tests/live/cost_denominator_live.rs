//! The unit cost's denominator from a PromQL counter (`[prices.denominator]`), through the real
//! binary against the real Prometheus scripts/test starts (GPUPLANE_TEST_PROM_URL): the units
//! `report cost` divides by equal the same query asked of Prometheus directly at the window's
//! end, and a query that does not give one number fails the report (exit 2), never a silent
//! default.
//!
//! Behind the `live` feature (`cargo test --features live`, as scripts/test runs it).

use crate::common;

use serde_json::Value;

fn url() -> String {
    match std::env::var("GPUPLANE_TEST_PROM_URL") {
        Ok(u) if !u.is_empty() => u,
        _ => panic!(
            "GPUPLANE_TEST_PROM_URL is not set: these tests need the real Prometheus that the test command starts — run scripts/test"
        ),
    }
}

/// A counter of the backfilled history (the fake node_exporter's disk writes), summed.
const PROMQL: &str = "sum(increase(node_disk_written_bytes_total[$window]))";

fn rfc3339(t: i64) -> String {
    jiff::Timestamp::from_second(t).unwrap().to_string()
}

/// Runs `report cost` over [from, to) with `denominator` as the PromQL; (exit code, stdout, stderr).
fn report(promql: &str, from: i64, to: i64) -> (i32, String, String) {
    let home = tempfile::tempdir().unwrap();
    let cfg = home.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "[prometheus]\nurl = {:?}\n[ledger]\nenabled = false\n[prices]\ncurrency = \"USD\"\ndefault = 2.0\nper_gpu_hour = {{}}\n\
             [prices.denominator]\npromql = {promql:?}\nname = \"byte written\"\n",
            url()
        ),
    )
    .unwrap();
    let out = common::gpuplane_cmd(home.path())
        .arg("--config")
        .arg(&cfg)
        .args(["report", "cost", "--from", &rfc3339(from), "--to", &rfc3339(to), "-o", "json"])
        .output()
        .expect("run gpuplane");
    (
        out.status.code().expect("exit code"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The query asked of Prometheus directly, at `at`.
fn direct(promql: &str, at: i64) -> f64 {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let body: Value = rt.block_on(async {
        reqwest::Client::new()
            .get(format!("{}/api/v1/query", url()))
            .query(&[("query", promql.to_string()), ("time", at.to_string())])
            .send()
            .await
            .expect("prometheus answers")
            .json()
            .await
            .expect("json")
    });
    let r = &body["data"]["result"];
    assert_eq!(r.as_array().map(Vec::len), Some(1), "{body}");
    r[0]["value"][1].as_str().expect("a value").parse().expect("a number")
}

#[test]
fn the_units_are_the_promql_counter_over_the_window() {
    let now = jiff::Timestamp::now().as_second();
    // Inside the backfilled two hours: from 90 to 30 minutes ago.
    let (from, to) = (now - 90 * 60, now - 30 * 60);
    let (code, stdout, stderr) = report(PROMQL, from, to);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("config ignored"), "{stderr}");
    let j: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let want = direct(&PROMQL.replace("$window", &format!("{}s", to - from)), to);
    assert!(want > 0.0, "the test counter grew in the window: {want}");
    let units = j["units"].as_f64().expect("units");
    assert!((units - want).abs() <= 1e-9 * want, "report {units} vs PromQL {want}");
    assert_eq!(j["unit"], "byte written");
    let total = j["totals"]["total"].as_f64().expect("total");
    let unit_cost = j["unit_cost"].as_f64().expect("a unit cost");
    assert!(
        (unit_cost - total / units).abs() <= 1e-9 * unit_cost.max(1e-12),
        "{unit_cost} vs {total}/{units}"
    );
}

#[test]
fn a_denominator_that_is_not_one_number_fails_the_report() {
    let now = jiff::Timestamp::now().as_second();
    let (from, to) = (now - 90 * 60, now - 30 * 60);
    // Several series: not one number.
    let (code, stdout, stderr) = report("increase(node_disk_written_bytes_total[$window])", from, to);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stdout.is_empty(), "no report is printed: {stdout}");
    assert!(stderr.contains("[prices.denominator]") && stderr.contains("wrap it in sum"), "{stderr}");
    // No series at all.
    let (code, _, stderr) = report("sum(increase(no_such_counter_total[$window]))", from, to);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("0 series"), "{stderr}");
    // Not PromQL.
    let (code, _, stderr) = report("sum(increase(", from, to);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("parse error") || stderr.contains("bad_data"), "{stderr}");
}
