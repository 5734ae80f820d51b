//! The Alertmanager backend against answers recorded from a real Alertmanager 0.25 fed by the
//! test Prometheus (tests/fixtures/alertmanager/): they parse, firing alerts become incidents
//! on the right GPU/node with their severity while silenced ones do not, the backend task sends
//! them with its status and reports a server that goes away, and Enter in the Alerts view goes
//! where an alert points. No service needed; the live server is tests/live/alertmanager_live.rs.

use crate::common;

use crate::common::{app_with_alerts, key, typed};
use gpuplane::backend::alertmanager::{self, AmClient, AmConfig, AmError, wire};
use gpuplane::model::alert::{AlertState, SilenceState};
use gpuplane::model::protocol::Update;
use gpuplane::model::{GpuKey, NodeKey, ObjKey};
use gpuplane::state::{Plane, Severity};
use gpuplane::tui::views;
use ratatui::crossterm::event::KeyCode;
use std::time::Duration;

fn fixture(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/alertmanager").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn recorded_alerts_and_silences_parse_with_their_states() {
    let alerts = wire::alerts(&fixture("alerts.json")).unwrap();
    let silences = wire::silences(&fixture("silences.json")).unwrap();
    assert_eq!(alerts.len(), 14);
    let muted: Vec<_> = alerts.iter().filter(|a| a.state == AlertState::Suppressed).collect();
    assert_eq!(muted.len(), 2);
    // Both muted by the active silence created through `gpuplane silence create`.
    let active: Vec<_> = silences.iter().filter(|s| s.state == SilenceState::Active).collect();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].matchers_text(), r#"{alertname="GpuAllocatedIdle", Hostname="gpu-006"}"#);
    assert_eq!(active[0].comment, "INC-7: owner is debugging");
    assert_eq!(active[0].ends_at - active[0].starts_at, 7200);
    for a in &muted {
        assert_eq!((a.name.as_str(), a.host()), ("GpuAllocatedIdle", Some("gpu-006")));
        assert_eq!(a.silenced_by, vec![active[0].id.clone()]);
    }
    assert!(silences.iter().any(|s| s.state == SilenceState::Expired));
    assert_eq!(wire::version(&fixture("status.json")).as_deref(), Some("0.25.0"));
    // Every alert started before it was recorded and ends after.
    assert!(alerts.iter().all(|a| a.starts_at > 1_700_000_000 && a.ends_at.is_some_and(|e| e > a.starts_at)));
}

#[test]
fn firing_alerts_join_the_incidents_with_their_severity_and_silenced_ones_do_not() {
    let a = app_with_alerts();
    let s = a.state();
    let from_alerts: Vec<_> = s.incidents.iter().filter(|i| i.title.starts_with("alert ")).collect();
    // 14 alerts, 2 silenced.
    assert_eq!(from_alerts.len(), 12, "{from_alerts:#?}");
    let find = |subject: &str, name: &str| {
        from_alerts
            .iter()
            .find(|i| i.subject == subject && i.title.starts_with(&format!("alert {name}:")))
            .unwrap_or_else(|| panic!("no {name} incident on {subject}: {from_alerts:#?}"))
    };
    let xid = find("gpu-005/gpu2", "GpuXidError");
    assert_eq!((xid.severity, xid.plane), (Severity::Critical, Plane::Compute));
    assert_eq!(xid.title, "alert GpuXidError: XID 43 (GPU stopped processing) on gpu-005 GPU 2");
    assert_eq!(xid.node.as_deref(), Some("gpu-005"));
    assert!(xid.since.is_some_and(|t| t < s.now));
    assert_eq!(find("gpu-011/gpu6", "GpuEccDoubleBit").severity, Severity::Critical);
    assert_eq!(find("gpu-008/gpu4", "GpuTooHot").severity, Severity::Warning);
    // The instance label (host:port) names the node; the name says which plane.
    let ib = find("gpu-010", "InfinibandLinkFlapping");
    assert_eq!(
        (ib.severity, ib.plane, ib.node.as_deref()),
        (Severity::Warning, Plane::Network, Some("gpu-010"))
    );
    assert_eq!(find("gpu-003", "LocalRaidAlmostFull").plane, Plane::Storage);
    assert_eq!(find("gpu-013/gpu0", "GpuAllocatedIdle").severity, Severity::Info);
    // Silenced: gpu-006's idle GPUs are not incidents.
    assert!(!from_alerts.iter().any(|i| i.subject.starts_with("gpu-006")), "{from_alerts:#?}");
    // CRIT alerts sort with the other CRIT incidents, above every WARN.
    let first_warn = s.incidents.iter().position(|i| i.severity < Severity::Critical).unwrap();
    let last_crit_alert = s
        .incidents
        .iter()
        .rposition(|i| i.severity == Severity::Critical && i.title.starts_with("alert "))
        .unwrap();
    assert!(last_crit_alert < first_warn);
    // The source is listed with its version.
    let am = s.sources.iter().find(|x| x.name == "am").expect("am source");
    assert_eq!((am.error.as_deref(), am.detail.as_deref()), (None, Some("0.25.0")));
}

#[test]
fn the_same_alerts_again_change_nothing() {
    let mut a = app_with_alerts();
    let now = a.state().now;
    let g = a.state().generation;
    assert!(
        !a.update(gpuplane::tui::app::Msg::Update(Update::Alerts(Box::new(common::recorded_alerts(now)))))
    );
    assert_eq!(a.state().generation, g);
}

/// Enter opens an alert's detail (saying where it goes); Enter again goes to the GPU it names.
#[test]
fn enter_goes_from_an_alert_to_the_gpu_node_or_job_it_names() {
    let mut a = app_with_alerts();
    typed(&mut a, ":alerts\r");
    a.prepare();
    assert_eq!(a.ui.view, views::alerts::ID);
    // The first row: firing, CRIT, oldest.
    let Some(ObjKey::Alert(fp)) = a.selected_obj().cloned() else { panic!("an alert row") };
    let alert = a.state().alerts.iter().find(|x| x.fingerprint == fp).unwrap().clone();
    assert_eq!((alert.state, alert.severity().as_str()), (AlertState::Active, "critical"));
    key(&mut a, KeyCode::Enter);
    assert!(a.ui.detail);
    let screen = common::render(&mut a, 160, 48);
    let host = alert.host().unwrap().to_string();
    let gpu = alert.gpu().unwrap();
    assert!(screen.contains(&format!("Enter: go to GPU {gpu} of {host}")), "{screen}");
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.ui.view, views::gpus::ID);
    let cluster = a.state().cluster.clone();
    let want = ObjKey::Gpu(GpuKey {
        node: NodeKey { cluster: cluster.clone(), name: host.as_str().into() },
        index: gpu,
    });
    assert_eq!(a.selected_obj(), Some(&want));
    assert!(a.ui.detail);

    // An alert on a node without a GPU label goes to the node.
    let mut a = app_with_alerts();
    typed(&mut a, ":alerts\r/InfinibandLinkFlapping\r");
    a.prepare();
    key(&mut a, KeyCode::Enter);
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.ui.view, views::nodes::ID);
    let want = ObjKey::Node(NodeKey { cluster, name: "gpu-010".into() });
    assert_eq!(a.selected_obj(), Some(&want));
}

/// Serves the recorded answers by path; `None` once `stop` is set (the port closes).
async fn serve(stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else { return };
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            let mut buf = vec![0u8; 8192];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let req = String::from_utf8_lossy(&got);
            let path = req.split_whitespace().nth(1).unwrap_or("");
            let (status, body) = match path {
                "/api/v2/alerts" => (200, fixture("alerts.json")),
                "/api/v2/silences" => (200, fixture("silences.json")),
                "/api/v2/status" => (200, fixture("status.json")),
                "/api/v2/forbidden" => (403, b"no".to_vec()),
                _ => (404, b"404 page not found\n".to_vec()),
            };
            let head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(&body).await;
            let _ = s.shutdown().await;
        }
    });
    url
}

async fn next(rx: &mut tokio::sync::mpsc::Receiver<Update>) -> Update {
    tokio::time::timeout(Duration::from_secs(20), rx.recv()).await.expect("an update in time").expect("open")
}

#[tokio::test]
async fn the_backend_sends_alerts_and_its_status_and_reports_a_server_that_went_away() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let url = serve(stop.clone()).await;
    let mut cfg = AmConfig::new(&url);
    cfg.refresh = Duration::from_secs(1);
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(alertmanager::run(cfg, tx, cancel.clone()));
    // Connecting, then the alerts, then the status with the version.
    let Update::Status(s) = next(&mut rx).await else { panic!("a status first") };
    assert_eq!((s.name.as_str(), s.ok_at, s.error), ("am", None, None));
    let Update::Alerts(snap) = next(&mut rx).await else { panic!("the alerts") };
    assert_eq!((snap.source.as_str(), snap.alerts.len(), snap.silences.len()), ("am", 14, 2));
    let Update::Status(s) = next(&mut rx).await else { panic!("a status") };
    assert_eq!((s.ok_at, s.error, s.detail.as_deref()), (Some(snap.at), None, Some("0.25.0")));
    // The server goes away: the next refresh says so, with the age of the last data.
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let err = loop {
        match next(&mut rx).await {
            Update::Status(s) if s.error.is_some() => break s.error.unwrap(),
            _ => {}
        }
    };
    assert!(err.starts_with("alertmanager: "), "{err}");
    assert!(err.contains("last data"), "{err}");
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn the_client_says_what_went_wrong() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let c = AmClient::new(&AmConfig::new(format!("http://127.0.0.1:{port}"))).unwrap();
    let e = c.alerts().await.unwrap_err();
    assert_eq!(e, AmError::Refused { url: format!("http://127.0.0.1:{port}") });
    assert!(e.is_unreachable());
    assert!(matches!(AmClient::new(&AmConfig::new("alertmanager:9093")), Err(AmError::Config(_))));
    // A bad silence id is refused before anything is sent.
    assert!(matches!(c.expire_silence("../../status").await, Err(AmError::Config(_))));
}
