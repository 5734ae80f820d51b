//! `gpuplane doctor` through the real binary, against what needs no external service: the
//! in-repo fake Kubernetes API server (with identities the fake's policy restricts), a closed
//! port, a server that accepts connections and never answers, a name that does not resolve,
//! an expired token and audit logs that cannot be written or were edited. The real Slurm and
//! Prometheus are in `doctor_live.rs`.

use crate::common;

use crate::kube_support::{Cluster, FakeKube, KueueMode, Rule};
use serde_json::Value;
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// Runs `gpuplane ARGS doctor -o json --timeout 2s` in a fresh home; (exit code, report, the
/// whole output as text for secret checks).
fn doctor(home: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> (i32, Value, String) {
    let mut cmd = common::gpuplane_cmd(home);
    cmd.args(args).args(["doctor", "-o", "json", "--timeout", "2s"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run gpuplane");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let text = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {text}"));
    (out.status.code().expect("exit code"), report, text)
}

/// The check named `source`/`check`.
fn check<'a>(r: &'a Value, source: &str, check: &str) -> &'a Value {
    r["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["source"] == source && c["check"] == check)
        .unwrap_or_else(|| panic!("no check {source}/{check} in {r:#}"))
}

fn status<'a>(r: &'a Value, source: &str, name: &str) -> &'a str {
    check(r, source, name)["status"].as_str().expect("status")
}

/// A JWT (unsigned: doctor never verifies, the server does) with these claims.
fn jwt(claims: &str) -> String {
    use base64::Engine as _;
    let e = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    format!("{}.{}.c2lnbmF0dXJl", e(r#"{"alg":"HS256","typ":"JWT"}"#), e(claims))
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// A port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A server that accepts connections and never answers (holds them open).
fn hung_server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming() {
            held.push(s);
        }
    });
    port
}

#[test]
fn kubernetes_admin_has_every_permission_and_is_named_by_the_server() {
    let fake = FakeKube::start(Cluster::small_with(KueueMode::V1beta2), Default::default());
    let home = tempfile::tempdir().unwrap();
    // A syslog that takes the heads (a host without one gets a warning, see below).
    let _syslog = common::syslog_at(home.path());
    let kc = fake.kubeconfig_path().to_str().unwrap().to_string();
    let (code, r, text) = doctor(home.path(), &["--kubeconfig", &kc, "--context", "fake-admin"], &[]);
    assert_eq!(status(&r, "kube", "kubeconfig"), "ok", "{text}");
    assert_eq!(status(&r, "kube", "tls"), "ok", "https with the kubeconfig's CA: {text}");
    assert!(check(&r, "kube", "api")["detail"].as_str().unwrap().contains("v1.34.0-gpuplane-fake"), "{text}");
    // SelfSubjectReview names the identity the server authenticated.
    assert_eq!(check(&r, "kube", "auth")["data"]["user"], "admin", "{text}");
    for c in [
        "read/nodes",
        "read/pods",
        "permission/cordon",
        "permission/drain",
        "permission/cancel",
        "permission/acceptance",
    ] {
        assert_eq!(status(&r, "kube", c), "ok", "{c}: {text}");
    }
    assert!(check(&r, "kube", "kueue")["detail"].as_str().unwrap().contains("v1beta2"), "{text}");
    assert_eq!(status(&r, "kube", "clock"), "ok", "{text}");
    assert_eq!(code, 0, "every check OK for admin on the fake: {text}");
    // The token is never printed.
    assert!(!text.contains(&fake.token_for("admin")), "{text}");
    // Nothing was written: only reads and reviews reached the server.
    for q in fake.requests() {
        assert!(
            q.method == "GET" || (q.method == "POST" && q.path.contains("/selfsubject")),
            "doctor wrote to the cluster: {q:?}"
        );
    }
}

#[test]
fn a_kubernetes_identity_the_policy_restricts_gets_warnings_with_fixes() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    // May read nodes only; the policy answers the access reviews (as RBAC would).
    fake.add_user("nodes-reader", vec![Rule::allow(&["get", "list", "watch"], &[""], &["nodes"])]);
    fake.add_user("outsider", vec![]);
    let home = tempfile::tempdir().unwrap();
    let kc = fake.kubeconfig_path().to_str().unwrap().to_string();
    let (code, r, text) = doctor(home.path(), &["--kubeconfig", &kc, "--context", "fake-nodes-reader"], &[]);
    assert_eq!(check(&r, "kube", "auth")["data"]["user"], "nodes-reader", "{text}");
    assert_eq!(status(&r, "kube", "read/nodes"), "ok", "{text}");
    for c in ["read/pods", "permission/cordon", "permission/drain", "permission/cancel", "permission/events"]
    {
        let ch = check(&r, "kube", c);
        assert_eq!(ch["status"], "warn", "{c}: {text}");
        assert!(ch["detail"].as_str().unwrap().contains("may not"), "{c}: {text}");
        assert!(ch["fix"].as_str().unwrap().contains("Role"), "{c}: {text}");
    }
    assert!(
        check(&r, "kube", "permission/drain")["detail"].as_str().unwrap().contains("pods/eviction"),
        "{text}"
    );
    assert_eq!(status(&r, "kube", "kueue"), "ok", "no Kueue served: {text}");
    assert_eq!(code, 1, "denied actions are warnings: {text}");
    // Whoever the policy does not know may not even list nodes: gpuplane cannot work.
    let (code, r, text) = doctor(home.path(), &["--kubeconfig", &kc, "--context", "fake-outsider"], &[]);
    assert_eq!(status(&r, "kube", "read/nodes"), "fail", "{text}");
    assert_eq!(code, 2, "{text}");
    // The answers are the policy's: what the fake enforces on a real request too.
    let cordon = check(&r, "kube", "permission/cordon");
    assert_eq!(cordon["status"], "warn");
    assert!(cordon["data"]["denied"].as_str().unwrap().contains("forbidden"), "{cordon}");
}

#[test]
fn refused_credentials_fail_auth() {
    let fake = FakeKube::start(Cluster::small(), Default::default());
    let home = tempfile::tempdir().unwrap();
    let kc = std::fs::read_to_string(fake.kubeconfig_path()).unwrap();
    let tok = fake.token_for("admin");
    let path = home.path().join("kubeconfig");
    std::fs::write(&path, kc.replace(&tok, "not-a-token-the-server-knows")).unwrap();
    let (code, r, text) =
        doctor(home.path(), &["--kubeconfig", path.to_str().unwrap(), "--context", "fake-admin"], &[]);
    assert_eq!(status(&r, "kube", "auth"), "fail", "{text}");
    assert_eq!(code, 2, "{text}");
    assert!(!text.contains("not-a-token-the-server-knows"), "{text}");
}

#[test]
fn a_closed_port_fails_tcp_at_once() {
    let port = closed_port();
    let home = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let token = jwt(&format!(r#"{{"sun":"alice","exp":{}}}"#, now() + 86_400));
    let t0 = Instant::now();
    let (code, r, text) =
        doctor(home.path(), &["--slurm", &url, "--prometheus", &url], &[("SLURM_JWT", token.as_str())]);
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    for s in ["slurm", "prometheus"] {
        let c = check(&r, s, "tcp");
        assert_eq!(c["status"], "fail", "{text}");
        assert!(c["detail"].as_str().unwrap().contains("refused"), "{text}");
        assert!(c["fix"].as_str().unwrap().contains(&format!("127.0.0.1:{port}")), "{text}");
    }
    // The token was still read, locally: who it names and when it expires.
    let t = check(&r, "slurm", "token");
    assert_eq!((t["status"].as_str(), t["data"]["user"].as_str()), (Some("ok"), Some("alice")), "{text}");
    assert_eq!(code, 2);
    assert!(!text.contains(&token), "the token is never printed: {text}");
}

#[test]
fn a_server_that_never_answers_times_out_instead_of_hanging() {
    let port = hung_server();
    let home = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    // A kubeconfig pointing at it too.
    let kc = home.path().join("kubeconfig");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\ncontexts:\n- name: hung\n  context:\n    cluster: c\n    user: u\ncurrent-context: hung\nusers:\n- name: u\n  user:\n    token: t0ken\n"
        ),
    )
    .unwrap();
    let token = jwt(&format!(r#"{{"sun":"alice","exp":{}}}"#, now() + 86_400));
    for (what, args) in [
        ("slurm", vec!["--slurm", url.as_str()]),
        ("prometheus", vec!["--prometheus", url.as_str()]),
        ("kube", vec!["--kubeconfig", kc.to_str().unwrap()]),
    ] {
        let t0 = Instant::now();
        let (code, r, text) = doctor(home.path(), &args, &[("SLURM_JWT", token.as_str())]);
        let took = t0.elapsed();
        assert!(took < Duration::from_secs(15), "{what}: {took:?}: {text}");
        assert_eq!(status(&r, what, "tcp"), "ok", "{what}: it accepts: {text}");
        let api = check(&r, what, "api");
        assert_eq!(api["status"], "fail", "{what}: {text}");
        assert!(api["detail"].as_str().unwrap().contains("answer"), "{what}: {text}");
        assert_eq!(code, 2, "{what}");
    }
}

#[test]
fn a_name_that_does_not_resolve_fails_dns() {
    let home = tempfile::tempdir().unwrap();
    // .invalid never resolves (RFC 6761).
    let (code, r, text) = doctor(home.path(), &["--prometheus", "http://gpuplane-doctor.invalid:9090"], &[]);
    let c = check(&r, "prometheus", "dns");
    assert_eq!(c["status"], "fail", "{text}");
    assert!(c["fix"].as_str().unwrap().contains("host name"), "{text}");
    assert_eq!(code, 2);
}

#[test]
fn token_problems_are_told_without_the_token() {
    let home = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", closed_port());
    let expired = jwt(&format!(r#"{{"sun":"bob","exp":{},"iat":{}}}"#, now() - 7200, now() - 90_000));
    let (_, r, text) = doctor(home.path(), &["--slurm", &url], &[("SLURM_JWT", expired.as_str())]);
    let t = check(&r, "slurm", "token");
    assert_eq!(t["status"], "fail", "{text}");
    assert!(
        t["detail"].as_str().unwrap().contains("expired") && t["detail"].as_str().unwrap().contains("bob"),
        "{text}"
    );
    assert!(t["data"]["expires_unix"].as_i64().unwrap() < now(), "{text}");
    assert!(!text.contains(&expired), "{text}");
    // Soon to expire and not renewable ($SLURM_JWT): a warning saying how to renew.
    let soon = jwt(&format!(r#"{{"sun":"bob","exp":{}}}"#, now() + 600));
    let (_, r, text) = doctor(home.path(), &["--slurm", &url], &[("SLURM_JWT", soon.as_str())]);
    let t = check(&r, "slurm", "token");
    assert_eq!(t["status"], "warn", "{text}");
    assert!(t["fix"].as_str().unwrap().contains("--slurm-token-cmd"), "{text}");
    // No token at all.
    let (code, r, text) = doctor(home.path(), &["--slurm", &url], &[]);
    assert_eq!(status(&r, "slurm", "token"), "fail", "{text}");
    assert_eq!(code, 2);
}

#[test]
fn the_audit_log_unwritable_or_edited_fails() {
    let home = tempfile::tempdir().unwrap();
    // Fine: not there yet, in a writable directory.
    let fresh = home.path().join("new/dir/audit.jsonl");
    let (code, r, text) = doctor(home.path(), &["--audit-log", fresh.to_str().unwrap()], &[]);
    assert_eq!(status(&r, "audit", "log"), "ok", "{text}");
    assert!(!fresh.exists() && !home.path().join("new").exists(), "doctor created nothing");
    // No cluster configured: a warning, not a failure.
    assert_eq!(status(&r, "config", "sources"), "warn", "{text}");
    assert_eq!(code, 1);
    // /proc takes no new files, even for root.
    let (code, r, text) = doctor(home.path(), &["--audit-log", "/proc/gpuplane-audit.jsonl"], &[]);
    assert_eq!(status(&r, "audit", "log"), "fail", "{text}");
    assert_eq!(code, 2);
    // A log with an edited record.
    let log = gpuplane::audit::AuditLog::new(home.path().join("audit.jsonl"));
    let e = gpuplane::audit::Entry {
        cluster: "c".into(),
        action: "drain".into(),
        targets: vec!["gpu-001".into()],
        ..Default::default()
    };
    for _ in 0..3 {
        log.append(gpuplane::audit::Phase::Intent, &e).unwrap();
    }
    let (_, r, text) = doctor(home.path(), &["--audit-log", log.path.to_str().unwrap()], &[]);
    assert_eq!(status(&r, "audit", "log"), "ok", "{text}");
    assert_eq!(check(&r, "audit", "log")["data"]["records"], 3);
    let edited = std::fs::read_to_string(&log.path).unwrap().replacen("gpu-001", "gpu-002", 1);
    std::fs::write(&log.path, edited).unwrap();
    let (code, r, text) = doctor(home.path(), &["--audit-log", log.path.to_str().unwrap()], &[]);
    assert_eq!(status(&r, "audit", "log"), "fail", "{text}");
    assert_eq!(code, 2);
}

/// The audit log's witnesses: a syslog socket nobody listens on fails every head sent to it
/// (as a datagram sent there by hand does), so doctor warns with the fix; one that takes
/// datagrams is OK, and doctor sends it nothing; a witness command that cannot run warns.
#[test]
fn a_witness_that_fails_on_every_append_is_a_warning() {
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("audit.jsonl");
    let args = ["--audit-log", log.to_str().unwrap()];
    let gone = home.path().join("no-syslog.sock");
    common::write_config(home.path(), &format!("[audit]\nsyslog_socket = {:?}\n", gone.to_str().unwrap()));
    let sent = std::os::unix::net::UnixDatagram::unbound().unwrap().send_to(b"x", &gone);
    assert!(sent.is_err(), "the oracle: a head sent there fails");
    let (_, r, text) = doctor(home.path(), &args, &[]);
    assert_eq!(status(&r, "audit", "log"), "ok", "{text}");
    assert_eq!(status(&r, "audit", "witness/syslog"), "warn", "{text}");
    assert!(
        check(&r, "audit", "witness/syslog")["fix"].as_str().unwrap().contains("syslog = false"),
        "{text}"
    );
    assert_eq!(status(&r, "audit", "witness/journal"), "ok", "{text}");

    let listening = common::syslog_at(home.path());
    listening.set_nonblocking(true).unwrap();
    let (_, r, text) = doctor(home.path(), &args, &[]);
    assert_eq!(status(&r, "audit", "witness/syslog"), "ok", "{text}");
    assert!(listening.recv(&mut [0u8; 64]).is_err(), "doctor sent nothing");

    common::write_config(
        home.path(),
        "[audit]\nsyslog = false\nwitness_command = [\"/nonexistent/ship-head\"]\n",
    );
    let (_, r, text) = doctor(home.path(), &args, &[]);
    assert_eq!(status(&r, "audit", "witness/command"), "warn", "{text}");
    assert!(!r["checks"].as_array().unwrap().iter().any(|c| c["check"] == "witness/syslog"), "{text}");
    assert!(!log.exists(), "doctor wrote no record");
}

#[test]
fn config_file_problems_are_checks_and_the_table_is_one_line_per_check() {
    let home = tempfile::tempdir().unwrap();
    let cfg = home.path().join("config.toml");
    std::fs::write(&cfg, "[sim]\nnodez = 3\n").unwrap();
    let (_, r, text) = doctor(home.path(), &["--config", cfg.to_str().unwrap()], &[]);
    let c = check(&r, "config", "file");
    assert_eq!(c["status"], "warn", "{text}");
    assert!(c["detail"].as_str().unwrap().contains("nodez"), "{text}");
    // The table: a heading per source, then one line per check with its status, and the count.
    let out = common::gpuplane_cmd(home.path())
        .args(["--config", cfg.to_str().unwrap(), "doctor"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let t = String::from_utf8(out.stdout).unwrap();
    let checks = r["checks"].as_array().unwrap().len();
    let lines: Vec<&str> = t.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(lines.len(), checks, "{t}");
    assert!(lines.iter().all(|l| ["  OK ", "  WARN", "  FAIL"].iter().any(|s| l.starts_with(s))), "{t}");
    assert!(t.lines().last().unwrap().ends_with("exit 1"), "{t}");
    // The exit status is documented in the man page and the help.
    for args in [&["man"][..], &["doctor", "--help"][..]] {
        let out = common::gpuplane_cmd(home.path()).args(args).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("Exit status: 0 all OK; 1 a WARN and no FAIL; 2 a FAIL"), "{args:?}: {text}");
    }
}
