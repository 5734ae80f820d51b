//! Chaos without live services: the real binary in a pseudo-terminal while the in-repo fake
//! Kubernetes API server drops every watch and compacts its history (410 Gone) over and over,
//! while a proxy holds every request for seconds, and while a host name does not resolve. The
//! console keeps answering keys, keeps the rows it had, says what is wrong, and picks up again by
//! itself. (scripts/chaos runs the same faults, and those against real slurmrestd and Prometheus,
//! and measures them; tests/live/chaos_live.rs has the real-server cases the test command runs.)

use crate::kube_support;
use crate::pty_support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn kube_console(kubeconfig: &str) -> pty_support::Console {
    pty_support::spawn(
        120,
        30,
        &[
            "--user",
            "researcher",
            "--refresh",
            "500ms",
            "--kubeconfig",
            kubeconfig,
            "--context",
            "fake-admin",
        ],
        None,
    )
}

/// Every watch dropped and the history compacted, ten times, 300 ms apart, with a change in
/// between: a re-watch from the old resourceVersion would get 410 Gone and must re-list. Keys keep their frames, the nodes stay
/// on screen, and a change made on the server afterwards reaches the screen without a key.
#[test]
fn kube_watches_dropped_and_compacted_repeatedly_keep_the_rows_and_recover() {
    let fake = kube_support::FakeKube::start(kube_support::Cluster::small(), Default::default());
    let kc = fake.kubeconfig_path().display().to_string();
    let mut c = kube_console(&kc);
    c.send("2");
    c.wait_for("gpu-node-1", 30);
    c.wait_for("kube ●", 30);
    let rows = c.node_rows().expect("node count in the title");
    assert!(rows > 0);
    fake.clear_requests();
    for i in 0..10 {
        // The console is between watches while the cluster changes and the history is
        // compacted: its re-watch from the old resourceVersion is answered 410 Gone, every other
        // time as the watch request's own status rather than an ERROR event in the stream.
        fake.expire_watches_with_status(i % 2 == 1);
        fake.pause_watches();
        fake.drop_watches();
        fake.set_node_ready("gpu-node-2", i % 2 == 1);
        fake.compact();
        fake.resume_watches();
        c.answers_keys(3);
        assert_eq!(c.node_rows(), Some(rows), "rows kept through the fault:\n{}", c.screen());
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(fake.expired_watches() >= 10, "{} watches answered 410 in 10 faults", fake.expired_watches());
    let lists =
        fake.requests().iter().filter(|r| r.path == "/api/v1/nodes" && !r.query.contains("watch=")).count();
    // After a dropped watch the client lists again (kube-rs' watcher re-lists rather than
    // re-watching from the old resourceVersion), with backoff: not a tight loop on the server.
    assert!(lists < 100, "{lists} node lists for 10 faults: the client hammers the server");
    // Recovered by itself: a node going NotReady on the server shows on screen.
    fake.set_node_ready("gpu-node-1", false);
    c.send("/gpu-node-1\r");
    c.wait_for("</gpu-node-1>", 10);
    assert!(
        c.wait_until(60, |s| s.contains("down")),
        "the change after the fault never showed:\n{}",
        c.screen()
    );
    assert!(c.wait_until(30, |s| s.lines().next().unwrap_or("").contains("kube ●")), "{}", c.header());
    c.quit();
}

/// A TCP proxy that holds each chunk a client sends (each request) for `delay` ms before
/// passing it on.
fn delaying_proxy(upstream: std::net::SocketAddr, delay: Arc<AtomicU64>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let Ok(u) = TcpStream::connect(upstream) else { continue };
            let pipe = |mut a: TcpStream, mut b: TcpStream, delay: Option<Arc<AtomicU64>>| {
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 65536];
                    while let Ok(n) = a.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        if let Some(d) = &delay {
                            std::thread::sleep(Duration::from_millis(d.load(Ordering::SeqCst)));
                        }
                        if b.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = b.shutdown(std::net::Shutdown::Both);
                });
            };
            pipe(c.try_clone().unwrap(), u.try_clone().unwrap(), Some(delay.clone()));
            pipe(u, c, None);
        }
    });
    port
}

/// The server answers every request 5 s late (and its watches are dropped, so everything goes
/// through the slow path): keys still get their frames at once, the rows stay, and when the server
/// is fast again a change reaches the screen by itself.
#[test]
fn a_server_answering_five_seconds_late_never_holds_up_a_key() {
    let fake = kube_support::FakeKube::start(kube_support::Cluster::small(), Default::default());
    let delay = Arc::new(AtomicU64::new(0));
    // The kubeconfig names the https URL; the proxy passes TLS through untouched.
    let url = fake.https_url();
    let upstream: std::net::SocketAddr =
        url.trim_start_matches("https://").parse().expect("fake kube address");
    let port = delaying_proxy(upstream, delay.clone());
    let kc_text = std::fs::read_to_string(fake.kubeconfig_path()).unwrap();
    let kc = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(kc.path(), kc_text.replace(&url, &format!("https://127.0.0.1:{port}"))).unwrap();
    let mut c = kube_console(&kc.path().display().to_string());
    c.send("2");
    c.wait_for("gpu-node-1", 30);
    c.wait_for("kube ●", 30);
    let rows = c.node_rows().expect("node count");
    delay.store(5000, Ordering::SeqCst);
    fake.drop_watches();
    let until = Instant::now() + Duration::from_secs(12);
    while Instant::now() < until {
        // A key answered within 2 s while every request takes 5 s: the loop does not wait on it.
        c.answers_keys(2);
        assert_eq!(c.node_rows(), Some(rows), "rows kept:\n{}", c.screen());
    }
    delay.store(0, Ordering::SeqCst);
    fake.set_node_ready("gpu-node-1", false);
    c.send("/gpu-node-1\r");
    c.wait_for("</gpu-node-1>", 10);
    assert!(c.wait_until(60, |s| s.contains("down")), "the change never showed:\n{}", c.screen());
    c.quit();
}

/// A host name that does not resolve: the source is shown down in the header, the Sources view
/// says it is a name-resolution failure for that host, and the console answers keys meanwhile.
#[test]
fn a_host_name_that_does_not_resolve_is_shown_as_such_and_keys_are_answered() {
    // Wide enough for the whole error in the Sources view.
    let mut c = pty_support::spawn(
        250,
        30,
        &["--user", "researcher", "--prometheus", "http://prometheus.gpuplane-chaos.invalid:9090"],
        None,
    );
    assert!(
        c.wait_until(60, |s| s.lines().next().unwrap_or("").contains("prom down")),
        "header: {}",
        c.header()
    );
    c.answers_keys(3);
    let line = c.source_line("prom");
    let l = line.to_lowercase();
    assert!(
        l.contains("dns") || l.contains("resolve") || l.contains("lookup") || l.contains("name"),
        "the reason names the resolution failure: {line}"
    );
    c.answers_keys(3);
    c.quit();
}
