//! The console's silence road against a real Alertmanager (started by scripts/test): a silence
//! sent to the ops task as the Alerts view sends it exists in Alertmanager's API with the
//! alert's matchers, the operator's name and `TICKET: reason`, then expires the same way; the
//! audit log holds the intent and outcome of each, as for `gpuplane silence`; read-only sends
//! nothing and writes nothing.
//!
//! Behind the `live` feature: it needs GPUPLANE_TEST_AM_URL, and without it fails, never passes.

use gpuplane::audit::AuditLog;
use gpuplane::backend::alertmanager::AmConfig;
use gpuplane::backend::sim::{Sim, SimConfig};
use gpuplane::model::alert::Matcher;
use gpuplane::ops::silence::{SilenceOp, SilenceReq, Why};
use gpuplane::ops::{OpEvent, OpMsg, Ops, SimExecutor};
use std::time::Duration;

fn am_url() -> String {
    match std::env::var("GPUPLANE_TEST_AM_URL") {
        Ok(u) if !u.is_empty() => u,
        _ => panic!(
            "GPUPLANE_TEST_AM_URL is not set: this test needs the Alertmanager that scripts/test starts"
        ),
    }
}

fn silences(url: &str) -> Vec<serde_json::Value> {
    let out = std::process::Command::new("curl")
        .args(["-fsS", &format!("{url}/api/v2/silences")])
        .output()
        .expect("curl");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .expect("json")
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// An ops task as the console starts it (its executor does not matter to silences).
fn ops_task(
    audit: &std::path::Path,
    readonly: bool,
) -> (tokio::sync::mpsc::UnboundedSender<OpMsg>, tokio::sync::mpsc::UnboundedReceiver<OpEvent>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (ev_tx, ev_rx) = tokio::sync::mpsc::unbounded_channel();
    let ops =
        Ops { audit: AuditLog::new(audit.to_path_buf()), readonly, cluster: "sim".into(), break_glass: None };
    let exec = SimExecutor::Direct { sim: Box::new(Sim::new(SimConfig::default())), user: "alice".into() };
    gpuplane::ops::start(ops, Box::new(exec), rx, ev_tx, None);
    (tx, ev_rx)
}

/// The ops task's answer to a silence request (skipping its audit snapshots).
async fn answer(ev: &mut tokio::sync::mpsc::UnboundedReceiver<OpEvent>) -> Result<String, String> {
    loop {
        match tokio::time::timeout(Duration::from_secs(20), ev.recv()).await {
            Ok(Some(OpEvent::Silence(r))) => return r,
            Ok(Some(_)) => continue,
            other => panic!("no answer from the ops task: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_silence_from_the_console_exists_in_alertmanager_and_expires() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = am_url();
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let (tx, mut ev) = ops_task(&audit, false);
    // As the Alerts view builds it for an alert on a node (a name no other test uses).
    let node = format!("console-{}", std::process::id());
    let matchers = vec![
        Matcher::parse("alertname=GpuXid79").unwrap(),
        Matcher::parse(&format!("Hostname={node}")).unwrap(),
    ];
    let req = |op: SilenceOp, reason: &str| SilenceReq {
        am: AmConfig::new(url.clone()),
        op,
        why: Why { reason: reason.into(), ticket: Some("INC-42".into()), dry_run: false },
        user: "researcher".into(),
    };
    tx.send(OpMsg::Silence(Box::new(req(
        SilenceOp::Create { matchers: matchers.clone(), duration: Duration::from_secs(7200) },
        "swapping the GPU",
    ))))
    .unwrap();
    let line = answer(&mut ev).await.expect("created");
    assert!(line.contains("created") && line.contains("(audited)"), "{line}");

    let ours: Vec<_> = silences(&url)
        .into_iter()
        .filter(|s| s["matchers"].as_array().is_some_and(|m| m.iter().any(|m| m["value"] == node.as_str())))
        .collect();
    assert_eq!(ours.len(), 1, "{ours:?}");
    let s = &ours[0];
    let id = s["id"].as_str().unwrap().to_string();
    assert!(line.contains(&id), "{line} names {id}");
    assert_eq!(s["status"]["state"], "active");
    assert_eq!(s["createdBy"], "researcher");
    assert_eq!(s["comment"], "INC-42: swapping the GPU");
    let names: Vec<(&str, &str)> = s["matchers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap(), m["value"].as_str().unwrap()))
        .collect();
    assert_eq!(names, [("alertname", "GpuXid79"), ("Hostname", node.as_str())]);

    tx.send(OpMsg::Silence(Box::new(req(SilenceOp::Expire { ids: vec![id.clone()] }, "done")))).unwrap();
    let line = answer(&mut ev).await.expect("expired");
    assert!(line.contains("expired"), "{line}");
    let s = silences(&url).into_iter().find(|s| s["id"] == id.as_str()).expect("still listed");
    assert_eq!(s["status"]["state"], "expired");

    // Audited as the CLI audits: intent and outcome of each, the outcome with the silence's id.
    let recs = AuditLog::new(audit.clone()).read_all().unwrap();
    let seen: Vec<(&str, String, Option<&str>)> =
        recs.iter().map(|r| (r.action.as_str(), format!("{:?}", r.phase), r.result.as_deref())).collect();
    assert_eq!(
        seen,
        [
            ("silence-create", "Intent".to_string(), None),
            ("silence-create", "Outcome".to_string(), Some("ok")),
            ("silence-expire", "Intent".to_string(), None),
            ("silence-expire", "Outcome".to_string(), Some("ok")),
        ]
    );
    assert_eq!(recs[1].params.get("silence_id"), Some(&id));
    assert_eq!(recs[0].ticket.as_deref(), Some("INC-42"));
    assert_eq!(recs[0].identity.as_deref(), Some("researcher"));
    assert_eq!(recs[0].targets, ["alertname=\"GpuXid79\"", format!("Hostname=\"{node}\"").as_str()]);
    assert_eq!(recs[2].targets, [id.as_str()]);
    assert!(gpuplane::audit::verify(&audit).unwrap().problem.is_none());

    // Read-only: the ops task refuses too (the console refuses first), sends and writes nothing.
    let ro_audit = dir.path().join("ro.jsonl");
    let (tx, mut ev) = ops_task(&ro_audit, true);
    let before = silences(&url).len();
    tx.send(OpMsg::Silence(Box::new(req(
        SilenceOp::Create { matchers, duration: Duration::from_secs(3600) },
        "typed anyway",
    ))))
    .unwrap();
    let err = answer(&mut ev).await.unwrap_err();
    assert!(err.contains("read-only"), "{err}");
    assert_eq!(silences(&url).len(), before);
    assert!(!ro_audit.exists() || std::fs::read_to_string(&ro_audit).unwrap().is_empty());
}
