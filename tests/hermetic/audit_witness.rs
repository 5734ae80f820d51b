//! The audit log's tail is witnessed: through the real binary, with the heads sent to a test
//! syslog sink (a datagram socket this test binds, as /dev/log would be), `audit verify` names
//! records cut from the end, tells a torn write from tampering, warns of intents without
//! outcomes, and a copied log verifies with the public key alone.

use crate::common::gpuplane_cmd;
use gpuplane::audit::Record;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A syslog daemon stand-in: records every datagram it receives.
struct Sink {
    got: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sink {
    fn bind(path: &Path) -> Sink {
        let sock = UnixDatagram::bind(path).unwrap();
        sock.set_read_timeout(Some(std::time::Duration::from_millis(20))).unwrap();
        let (got, stop) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicBool::new(false)));
        let (g, s) = (got.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            loop {
                match sock.recv(&mut buf) {
                    Ok(n) => g.lock().unwrap().push(String::from_utf8_lossy(&buf[..n]).into_owned()),
                    Err(_) if s.load(Ordering::SeqCst) => return,
                    Err(_) => {}
                }
            }
        });
        Sink { got, stop, thread: Some(thread) }
    }

    /// Stops, and writes what was received to `path` (as a syslog file would hold it).
    fn save(mut self, path: &Path) -> Vec<String> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        let got = self.got.lock().unwrap().clone();
        std::fs::write(path, got.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
        got
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    home: PathBuf,
    log: PathBuf,
    sock: PathBuf,
}

/// A home whose config sends the heads to a socket under it.
fn setup(extra: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let sock = dir.path().join("syslog.sock");
    std::fs::create_dir_all(home.join("config/gpuplane")).unwrap();
    std::fs::write(
        home.join("config/gpuplane/config.toml"),
        format!("[audit]\nsyslog_socket = {:?}\n{extra}", sock.to_str().unwrap()),
    )
    .unwrap();
    let log = dir.path().join("audit.jsonl");
    Setup { _dir: dir, home, log, sock }
}

fn run(s: &Setup, args: &[&str]) -> (i32, String) {
    let out = gpuplane_cmd(&s.home).env("USER", "oncall").args(args).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// `n` cordons on the simulator: two records each (intent, outcome).
fn act(s: &Setup, n: usize) {
    for i in 0..n {
        let node = format!("gpu-{:03}", i + 1);
        let (rc, out) =
            run(s, &["cordon", &node, "-r", "fan noise", "-y", "--audit-log", s.log.to_str().unwrap()]);
        assert_eq!(rc, 0, "{out}");
    }
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p).unwrap().lines().map(String::from).collect()
}

fn keep(p: &Path, lines: &[String]) {
    std::fs::write(p, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
}

fn verify(s: &Setup, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["audit", "verify", s.log.to_str().unwrap()];
    args.extend_from_slice(extra);
    run(s, &args)
}

#[test]
fn records_cut_from_the_end_are_named_by_the_syslog_witness() {
    for cut in [1usize, 3] {
        let s = setup("");
        let sink = Sink::bind(&s.sock);
        act(&s, 3);
        let heard = s.log.with_extension("syslog");
        let got = sink.save(&heard);
        assert_eq!(got.len(), 6, "one datagram per record: {got:#?}");
        assert!(got.iter().all(|m| m.starts_with("<85>1 ") && m.contains(" gpuplane ")), "{got:#?}");
        assert!(got[5].contains("gpuplane-audit-head log=") && got[5].contains(" seq=5 hash="), "{}", got[5]);
        let (rc, out) = verify(&s, &[]);
        assert_eq!(rc, 0, "{out}");
        assert!(out.contains("6 records, chain intact") && out.contains("up to record 5"), "{out}");

        // The last records removed, and the journal beside the log with them: the chain alone
        // still looks whole.
        let all = lines(&s.log);
        keep(&s.log, &all[..6 - cut]);
        std::fs::remove_file(gpuplane::audit::witness::journal_path(&s.log)).unwrap();
        let (rc, out) = verify(&s, &[]);
        assert_eq!(rc, 0, "{out}");
        assert!(out.contains("chain intact") && out.contains("no heads found"), "{out}");

        // The syslog copy of the heads names them.
        let (rc, out) = verify(&s, &["--witness", heard.to_str().unwrap()]);
        assert_eq!(rc, 1, "{out}");
        let want = if cut == 1 {
            "TAMPERED: record 5 is missing from the end".to_string()
        } else {
            "TAMPERED: records 3, 4, 5 are missing from the end: the witness saw up to record 5".to_string()
        };
        assert!(out.contains(&want), "cut {cut}: {out}");
    }
}

#[test]
fn a_torn_last_line_is_an_incomplete_write_not_tampering() {
    let s = setup("");
    let sink = Sink::bind(&s.sock);
    act(&s, 2);
    let heard = s.log.with_extension("syslog");
    sink.save(&heard);
    // A crash in the middle of appending record 4: part of its line reached the disk.
    let all = lines(&s.log);
    let mut text: String = all.iter().map(|l| format!("{l}\n")).collect();
    text.push_str(&all[3][..50]);
    std::fs::write(&s.log, text).unwrap();
    let (rc, out) = verify(&s, &["--witness", heard.to_str().unwrap()]);
    assert_eq!(rc, 1, "{out}");
    assert!(
        out.contains("incomplete write: line 5 is a partial record") && !out.contains("TAMPERED"),
        "{out}"
    );
    assert!(out.contains("4 records before it verified"), "{out}");
    // The same tear in a record the witness saw whole is tampering.
    let text: String = all[..3].iter().map(|l| format!("{l}\n")).collect::<String>() + &all[3][..50];
    std::fs::write(&s.log, text).unwrap();
    let (rc, out) = verify(&s, &["--witness", heard.to_str().unwrap()]);
    assert_eq!(rc, 1, "{out}");
    assert!(out.contains("TAMPERED: record 3 is missing from the end"), "{out}");
}

#[test]
fn an_intent_without_an_outcome_is_a_warning() {
    let s = setup("");
    act(&s, 2);
    // The outcome of the second cordon never written (the process was killed mid-action).
    let all = lines(&s.log);
    keep(&s.log, &all[..3]);
    std::fs::remove_file(gpuplane::audit::witness::journal_path(&s.log)).unwrap();
    let (rc, out) = verify(&s, &[]);
    assert_eq!(rc, 0, "a warning, not a failure: {out}");
    let intent: Record = serde_json::from_str(&all[2]).unwrap();
    assert!(
        out.contains(&format!("warning: record 2: cordon intent (op {}) has no outcome", intent.op_id)),
        "{out}"
    );
}

/// Ed25519 checkpoints: the public key alone verifies a copy made anywhere; a forger who edits
/// a record and recomputes the whole chain is caught by the signature.
#[test]
fn a_copied_log_verifies_with_the_public_key_alone() {
    let s = setup("checkpoint_every = 5\n");
    act(&s, 3);
    let l = s.log.to_str().unwrap();
    let (rc, key) = run(&s, &["audit", "pubkey", "--audit-log", l]);
    assert_eq!(rc, 0, "{key}");
    let key = key.trim().to_string();
    assert_eq!(key.len(), 64, "{key}");
    let (rc, out) = run(&s, &["audit", "checkpoint", "--audit-log", l]);
    assert_eq!(rc, 0, "{out}");
    assert!(out.contains("checkpoint 7 signed"), "{out}");
    // The key stays private beside the log.
    use std::os::unix::fs::PermissionsExt;
    let key_file = gpuplane::audit::sign::key_path(&s.log);
    assert_eq!(std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777, 0o600);

    let elsewhere = tempfile::tempdir().unwrap();
    let copy = elsewhere.path().join("from-ops-1.jsonl");
    std::fs::copy(&s.log, &copy).unwrap();
    let c = copy.to_str().unwrap();
    let (rc, out) = run(&s, &["audit", "verify", "--pubkey", &key, c]);
    assert_eq!(rc, 0, "{out}");
    // 0..=4, checkpoint 5 (every 5, itself counted), 6, and the checkpoint asked for at 7.
    assert!(
        out.contains("8 records, chain intact")
            && out.contains("signed: 2 checkpoints verify, up to record 7"),
        "{out}"
    );
    assert!(!out.contains("warning"), "{out}");
    // The key may come as a file too.
    let key_pub = elsewhere.path().join("ops-1.pub");
    std::fs::write(&key_pub, format!("{key}\n")).unwrap();
    let (rc, _) = run(&s, &["audit", "verify", "--pubkey", key_pub.to_str().unwrap(), c]);
    assert_eq!(rc, 0);

    // One record altered: the chain says so.
    let orig = lines(&copy);
    let mut edited = orig.clone();
    edited[1] = edited[1].replace("fan noise", "routine");
    keep(&copy, &edited);
    let (rc, out) = run(&s, &["audit", "verify", "--pubkey", &key, c]);
    assert_eq!(rc, 1, "{out}");
    assert!(out.contains("TAMPERED: line 2: record 1 was edited"), "{out}");
    // Altered and the whole chain recomputed: only the signature can tell.
    let mut recs: Vec<Record> = orig.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    recs[1].reason = Some("routine".into());
    let mut prev = gpuplane::audit::GENESIS.to_string();
    for r in &mut recs {
        r.prev_hash = prev.clone();
        r.hash = r.compute_hash();
        prev = r.hash.clone();
    }
    keep(&copy, &recs.iter().map(|r| serde_json::to_string(r).unwrap()).collect::<Vec<_>>());
    let (rc, out) = run(&s, &["audit", "verify", c]);
    assert_eq!(rc, 0, "without the key a re-hashed chain looks whole: {out}");
    let (rc, out) = run(&s, &["audit", "verify", "--pubkey", &key, c]);
    assert_eq!(rc, 1, "{out}");
    assert!(out.contains("TAMPERED: line 6: checkpoint 5 does not verify with this public key"), "{out}");
    // A wrong key is refused as such.
    let (rc, out) = run(&s, &["audit", "verify", "--pubkey", "abcd", c]);
    assert_eq!(rc, 2, "{out}");
    assert!(out.contains("is not a public key"), "{out}");
}

#[test]
fn secrets_reach_neither_the_log_nor_the_witness() {
    let s = setup("");
    let sink = Sink::bind(&s.sock);
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJyb290In0.c2lnbmF0dXJlLXZhbHVl";
    let reason = format!("token was {jwt}");
    let (rc, out) =
        run(&s, &["cordon", "gpu-001", "-r", &reason, "-y", "--audit-log", s.log.to_str().unwrap()]);
    assert_eq!(rc, 0, "{out}");
    let heard = s.log.with_extension("syslog");
    let got = sink.save(&heard);
    assert_eq!(got.len(), 2);
    for p in [s.log.clone(), gpuplane::audit::witness::journal_path(&s.log), heard] {
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(!text.contains(jwt) && !text.contains("eyJzdW4"), "{}: {text}", p.display());
    }
}

/// A SIEM endpoint: each head arrives as a JSON POST.
#[test]
fn heads_are_posted_to_a_configured_endpoint() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/ingest", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let mut bodies = Vec::new();
        for _ in 0..2 {
            let (mut c, _) = listener.accept().unwrap();
            c.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
            let mut req = Vec::new();
            let mut buf = [0u8; 4096];
            // Headers, then the body by its Content-Length.
            loop {
                let n = c.read(&mut buf).unwrap();
                req.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&req).into_owned();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let len = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().to_string())
                        })
                        .and_then(|v| v.parse::<usize>().ok())
                        .unwrap_or(0);
                    if body.len() >= len {
                        assert!(head.starts_with("POST /ingest "), "{head}");
                        bodies.push(body.to_string());
                        break;
                    }
                }
                if n == 0 {
                    break;
                }
            }
            c.write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .unwrap();
        }
        bodies
    });
    let s = setup(&format!("syslog = false\nwitness_url = {url:?}\n"));
    act(&s, 1);
    let bodies = server.join().unwrap();
    let v: Vec<serde_json::Value> = bodies.iter().map(|b| serde_json::from_str(b).unwrap()).collect();
    assert_eq!(v.iter().map(|b| b["seq"].as_u64().unwrap()).collect::<Vec<_>>(), [0, 1]);
    let recs: Vec<Record> = lines(&s.log).iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(v[1]["hash"].as_str(), Some(recs[1].hash.as_str()));
    assert!(v[1]["line"].as_str().unwrap().starts_with("gpuplane-audit-head log="));
}

/// The whole log deleted and a fresh one started at the same path: the journal beside it still
/// holds the old log's heads, and verify says so.
#[test]
fn a_replaced_log_is_pointed_out() {
    let s = setup("syslog = false\n");
    act(&s, 2);
    std::fs::remove_file(&s.log).unwrap();
    act(&s, 1);
    let (rc, out) = verify(&s, &[]);
    assert_eq!(rc, 0, "{out}");
    assert!(out.contains("2 records, chain intact"), "{out}");
    assert!(out.contains("also witnessed another log here") && out.contains("up to record 3)"), "{out}");
}
