//! gpuplane against a real Alertmanager 0.25 (Debian `prometheus-alertmanager`, started by
//! scripts/test, see scripts/alertmanager/) fed by the test Prometheus, whose rules
//! (scripts/prometheus/rules.yml) fire on the planted anomalies: the alerts appear in gpuplane
//! as the API lists them and as incidents on the planted nodes and GPUs; a silence created
//! through `gpuplane silence create` exists in Alertmanager (its API and `amtool` agree), mutes
//! its alerts, and expires through `gpuplane silence expire`; both are in the audit log.
//!
//! Behind the `live` feature: they need GPUPLANE_TEST_AM_URL and GPUPLANE_TEST_PROM_URL, and
//! without them they fail, never pass.

use crate::common;

use std::time::{Duration, Instant};

fn env(name: &str) -> String {
    match std::env::var(name) {
        Ok(u) if !u.is_empty() => u,
        _ => panic!(
            "{name} is not set: these tests need the Alertmanager and Prometheus that the test command starts — run scripts/test"
        ),
    }
}

fn api(url: &str, path: &str) -> serde_json::Value {
    let out =
        std::process::Command::new("curl").args(["-fsS", &format!("{url}{path}")]).output().expect("curl");
    assert!(out.status.success(), "{path}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

/// Waits until Prometheus has delivered the planted anomalies' alerts (it re-sends every 5 s).
fn wait_for_alerts(am: &str) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let a = api(am, "/api/v2/alerts");
        let list = a.as_array().cloned().unwrap_or_default();
        let names: Vec<&str> = list.iter().filter_map(|x| x["labels"]["alertname"].as_str()).collect();
        if ["GpuXidError", "GpuEccDoubleBit", "GpuTooHot", "InfinibandLinkFlapping"]
            .iter()
            .all(|n| names.contains(n))
        {
            return list;
        }
        assert!(Instant::now() < deadline, "the planted alerts did not reach Alertmanager: {names:?}");
        std::thread::sleep(Duration::from_secs(2));
    }
}

struct Run {
    home: tempfile::TempDir,
    am: String,
    prom: String,
}

impl Run {
    fn new() -> Run {
        Run {
            home: tempfile::tempdir().unwrap(),
            am: env("GPUPLANE_TEST_AM_URL"),
            prom: env("GPUPLANE_TEST_PROM_URL"),
        }
    }

    fn audit(&self) -> std::path::PathBuf {
        self.home.path().join("audit.jsonl")
    }

    fn gpuplane(&self, args: &[&str]) -> std::process::Output {
        common::gpuplane_cmd(self.home.path())
            .args(["--alertmanager", &self.am, "--audit-log"])
            .arg(self.audit())
            .env("GPUPLANE_USER", "oncall")
            .args(args)
            .output()
            .expect("run gpuplane")
    }

    fn json(&self, args: &[&str]) -> Vec<serde_json::Value> {
        let out = self.gpuplane(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .expect("json")
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

#[test]
fn firing_alerts_appear_as_alertmanager_lists_them_and_join_the_incidents() {
    let r = Run::new();
    let listed = wait_for_alerts(&r.am);
    // Same alerts as the API (fingerprints), Prometheus alone discovering the nodes.
    let got = r.json(&["--prometheus", &r.prom.clone(), "get", "alerts", "-o", "json"]);
    let mut want: Vec<&str> = listed.iter().filter_map(|a| a["fingerprint"].as_str()).collect();
    let mut have: Vec<&str> = got.iter().filter_map(|a| a["fingerprint"].as_str()).collect();
    // Prometheus may deliver one more between the two reads: what gpuplane lists is a superset.
    want.sort_unstable();
    have.sort_unstable();
    assert!(want.iter().all(|f| have.contains(f)), "API {want:?} vs gpuplane {have:?}");
    for a in &got {
        assert!(a["subject"].as_str().is_some_and(|s| s != "-"), "every planted alert names a node: {a}");
    }
    // The planted XIDs are CRIT incidents on their GPUs, with the alert's own words.
    let incidents = r.json(&["--prometheus", &r.prom.clone(), "get", "incidents", "-o", "json"]);
    let alert_incidents: Vec<_> =
        incidents.iter().filter(|i| i["title"].as_str().is_some_and(|t| t.starts_with("alert "))).collect();
    for a in listed
        .iter()
        .filter(|a| a["labels"]["alertname"] == "GpuXidError" && a["status"]["state"] == "active")
    {
        let host = a["labels"]["Hostname"].as_str().unwrap();
        let gpu = a["labels"]["gpu"].as_str().unwrap();
        let subject = format!("{host}/gpu{gpu}");
        let i = alert_incidents
            .iter()
            .find(|i| {
                i["subject"] == subject.as_str() && i["title"].as_str().unwrap().contains("GpuXidError")
            })
            .unwrap_or_else(|| panic!("no alert incident on {subject}: {alert_incidents:#?}"));
        assert_eq!(
            (i["severity"].as_str(), i["node"].as_str(), i["state"].as_str()),
            (Some("critical"), Some(host), Some("open"))
        );
    }
    // And --fail-on sees them.
    let out = r.gpuplane(&[
        "--prometheus",
        &r.prom.clone(),
        "get",
        "incidents",
        "--fail-on",
        "crit",
        "--filter",
        "alert",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_silence_created_from_gpuplane_exists_mutes_its_alert_and_expires() {
    let r = Run::new();
    let listed = wait_for_alerts(&r.am);
    // The hot GPU (one alert, on gpu-008 in the planted scenario).
    let hot = listed.iter().find(|a| a["labels"]["alertname"] == "GpuTooHot").expect("a hot GPU");
    let host = hot["labels"]["Hostname"].as_str().unwrap().to_string();
    let fp = hot["fingerprint"].as_str().unwrap().to_string();
    let host_m = format!("Hostname={host}");
    let out = r.gpuplane(&[
        "silence",
        "create",
        "alertname=GpuTooHot",
        &host_m,
        "--duration",
        "15m",
        "-r",
        "fan swap",
        "-t",
        "INC-4242",
        "--yes",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("mutes 1 alert(s)"), "{stdout}");
    let id = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("ok   silence ").and_then(|x| x.split_whitespace().next()))
        .unwrap_or_else(|| panic!("no silence id in {stdout}"))
        .to_string();
    // Alertmanager's API has it, active, with our matchers, author and comment.
    let s = api(&r.am, &format!("/api/v2/silence/{id}"));
    assert_eq!(s["status"]["state"], "active");
    assert_eq!(s["createdBy"], "oncall");
    assert_eq!(s["comment"], "INC-4242: fan swap");
    let mut m: Vec<String> = s["matchers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}={}{}", m["name"].as_str().unwrap(), m["value"].as_str().unwrap(), m["isRegex"]))
        .collect();
    m.sort();
    assert_eq!(m, vec![format!("Hostname={host}false"), "alertname=GpuTooHotfalse".to_string()]);
    let ends: jiff::Timestamp = s["endsAt"].as_str().unwrap().parse().unwrap();
    let starts: jiff::Timestamp = s["startsAt"].as_str().unwrap().parse().unwrap();
    assert!((ends.as_second() - starts.as_second() - 900).abs() <= 1);
    // amtool (same package) agrees.
    let amtool = std::process::Command::new("amtool")
        .args([&format!("--alertmanager.url={}", r.am), "silence", "query", "-q", "alertname=GpuTooHot"])
        .output()
        .expect("amtool (Debian prometheus-alertmanager)");
    assert!(String::from_utf8_lossy(&amtool.stdout).lines().any(|l| l.trim() == id), "amtool: {:?}", amtool);
    // Its alert is muted: suppressed in the API, silenced in gpuplane, no longer an incident.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let a = api(&r.am, "/api/v2/alerts?silenced=true");
        let muted = a
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["fingerprint"] == fp.as_str() && x["status"]["silencedBy"][0] == id.as_str());
        if muted {
            break;
        }
        assert!(Instant::now() < deadline, "the alert was not silenced");
        std::thread::sleep(Duration::from_millis(500));
    }
    let alerts = r.json(&["get", "alerts", "-o", "json", "--filter", "alertname=GpuTooHot"]);
    let row = alerts.iter().find(|a| a["fingerprint"] == fp.as_str()).expect("the hot alert");
    assert_eq!(
        (row["display_state"].as_str(), row["silenced_by"][0].as_str()),
        (Some("silenced"), Some(id.as_str()))
    );
    let incidents = r.json(&["get", "incidents", "-o", "json"]);
    assert!(
        !incidents.iter().any(|i| i["title"].as_str().is_some_and(|t| t.starts_with("alert GpuTooHot"))),
        "a silenced alert is no incident"
    );
    let silences = r.json(&["get", "silences", "-o", "json"]);
    assert!(silences.iter().any(|s| s["id"] == id.as_str() && s["state"] == "active"));

    // Expire it through gpuplane: Alertmanager says expired.
    let out = r.gpuplane(&["silence", "expire", &id, "-r", "fan replaced", "-t", "INC-4242", "--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(api(&r.am, &format!("/api/v2/silence/{id}"))["status"]["state"], "expired");
    // Expiring it again is refused before anything is written.
    let out = r.gpuplane(&["silence", "expire", &id, "-r", "again", "--yes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has expired already"));

    // The audit log: intent and outcome for each, the outcome carrying the silence id; verified.
    let log = std::fs::read_to_string(r.audit()).unwrap();
    let recs: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|x: &serde_json::Value| x["action"].as_str().is_some_and(|a| a.starts_with("silence-")))
        .collect();
    let phases: Vec<(String, String)> = recs
        .iter()
        .map(|x| (x["action"].as_str().unwrap().into(), x["phase"].as_str().unwrap().into()))
        .collect();
    assert_eq!(
        phases,
        [
            ("silence-create", "intent"),
            ("silence-create", "outcome"),
            ("silence-expire", "intent"),
            ("silence-expire", "outcome")
        ]
        .map(|(a, p)| (a.to_string(), p.to_string()))
    );
    assert_eq!(recs[1]["params"]["silence_id"], id.as_str());
    assert_eq!((recs[1]["result"].as_str(), recs[3]["result"].as_str()), (Some("ok"), Some("ok")));
    assert_eq!(recs[0]["ticket"], "INC-4242");
    assert_eq!(recs[2]["targets"][0], id.as_str());
    let out = r.gpuplane(&["audit", "verify"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn read_only_refuses_a_silence_and_sends_nothing() {
    let r = Run::new();
    let before = api(&r.am, "/api/v2/silences").as_array().map_or(0, Vec::len);
    let out = r.gpuplane(&["--readonly", "silence", "create", "alertname=GpuTooHot", "-r", "x", "--yes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("read-only mode"));
    assert_eq!(api(&r.am, "/api/v2/silences").as_array().map_or(0, Vec::len), before);
    assert!(!r.audit().exists() || std::fs::read_to_string(r.audit()).unwrap().is_empty());
}
