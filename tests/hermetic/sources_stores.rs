//! The Sources view lists gpuplane's own files after the data sources: what the real store
//! threads and the audit probe report reaches the state as updates and shows with the path,
//! the state and, when failing, the error and the fix.

use crate::common::{app, key, render, typed};
use gpuplane::audit::AuditLog;
use gpuplane::audit::witness::Witness;
use gpuplane::model::protocol::Update;
use gpuplane::tui::app::{App, Msg};
use ratatui::crossterm::event::KeyCode;
use std::path::Path;
use std::time::Duration;

/// Relative paths (under target/, the tests' working directory is the crate root), so that the
/// snapshots are the same on every machine; one folder per test.
const ROOT: &str = "target/tmp-sources-stores";

/// The console fed by a real ack store thread and ledger thread whose directory is a plain
/// file, and by the audit probe of a log not written yet whose syslog witness nobody listens
/// on (the oracle: a datagram sent there fails).
async fn app_with_failing_stores(root: &str) -> App {
    let root = Path::new(root);
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root).unwrap();
    let blocker = root.join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let sock = root.join("no-syslog.sock");
    assert!(std::os::unix::net::UnixDatagram::unbound().unwrap().send_to(b"x", &sock).is_err());

    let mut a = app();
    let (tx, rx) = std::sync::mpsc::channel();
    let acks = gpuplane::store::acks::Worker::spawn(blocker.join("acks.sqlite"), move |x| {
        let _ = tx.send(x);
    })
    .unwrap();
    acks.send(gpuplane::store::acks::Request::Load { cluster: "sim-16x8".into(), now: 0 });
    // Its report of the failed open, then the failure itself.
    for _ in 0..2 {
        a.update(Msg::Acks(rx.recv_timeout(Duration::from_secs(10)).unwrap()));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let ledger = gpuplane::store::ledger::Writer::spawn(blocker.join("ledger"), 0, move |x| {
        let _ = tx.send(x);
    })
    .unwrap();
    ledger.send(gpuplane::store::ledger::Request::Window { cluster: "sim-16x8".into(), from: 0, to: 1 });
    for _ in 0..2 {
        a.update(Msg::Ledger(rx.recv_timeout(Duration::from_secs(10)).unwrap()));
    }
    let witness = Witness { journal: false, syslog: Some(sock), ..Witness::default() };
    let log = AuditLog::new(root.join("audit.jsonl")).with_witness(witness);
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let cancel = tokio_util::sync::CancellationToken::new();
    tokio::spawn(gpuplane::store::status::watch_audit(log, tx, cancel.clone()));
    for _ in 0..2 {
        let u = rx.recv().await.unwrap();
        assert!(matches!(u, Update::Store(_)), "{u:?}");
        a.update(Msg::Update(u));
    }
    cancel.cancel();
    typed(&mut a, ":sources\r");
    a
}

#[tokio::test]
async fn failing_stores_show_their_path_error_and_fix() {
    let root = format!("{ROOT}/detail");
    let mut a = app_with_failing_stores(&root).await;
    let s = a.state();
    let by = |n: &str| s.stores.iter().find(|x| x.name == n).unwrap_or_else(|| panic!("{n}: {:?}", s.stores));
    for (name, path) in [
        ("acks", format!("{root}/not-a-dir/acks.sqlite")),
        ("ledger", format!("{root}/not-a-dir/ledger/sim-16x8.sqlite")),
        ("witness/syslog", format!("{root}/no-syslog.sock")),
    ] {
        let st = by(name);
        assert_eq!(st.path, path);
        assert!(st.error.is_some() && st.fix.is_some() && st.ok_at.is_none(), "{st:?}");
    }
    assert!(by("ledger").fix.as_deref().unwrap().contains("[ledger] dir"));
    assert!(by("witness/syslog").fix.as_deref().unwrap().contains("syslog = false"));
    // Not written yet: never, with why, and not failing.
    let audit = by("audit");
    assert!(audit.error.is_none() && audit.ok_at.is_none() && audit.note.is_some(), "{audit:?}");

    let screen = render(&mut a, 160, 48);
    for want in ["acks", "ledger", "witness/syslog", "audit", "failing", "never", "no-syslog.sock"] {
        assert!(screen.contains(want), "{want}:\n{screen}");
    }
    a.prepare();
    let rows = a.ui.tables[gpuplane::tui::views::sources::TABLE].rows.len();
    assert_eq!(rows, 1 + 4, "the simulator and four stores");
}

#[tokio::test]
async fn the_sources_view_with_its_stores_at_every_size() {
    for (w, h) in [(60u16, 20u16), (80, 24), (160, 48)] {
        let mut a = app_with_failing_stores(&format!("{ROOT}/snap")).await;
        insta::assert_snapshot!(format!("sources_stores_{w}x{h}"), render(&mut a, w, h));
    }
    // The failing witness's detail pane: the error and the fix in full.
    let mut a = app_with_failing_stores(&format!("{ROOT}/snap")).await;
    typed(&mut a, "/syslog\r");
    key(&mut a, KeyCode::Enter);
    insta::assert_snapshot!("sources_stores_syslog_detail_120x40", render(&mut a, 120, 40));
}
