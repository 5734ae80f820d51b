//! `gpuplane doctor`: checks the whole configuration before an incident. For every configured
//! source — Slurm (slurmrestd), Kubernetes, Prometheus, NVML — and the audit log: reachability
//! (DNS, TCP, TLS), authentication (who the token names and when it expires; never the token),
//! the permission behind each action, API versions, the Prometheus series and labels gpuplane
//! reads (and what a missing one disables), and clock skew. One line per check, OK / WARN /
//! FAIL with the fix.
//!
//! Nothing here writes to a cluster: Slurm is asked with GETs (ping, diag, slurmdbd's user
//! record), Kubernetes with reviews (SelfSubjectReview, SelfSubjectAccessReview), Prometheus
//! with instant queries. Every check is bounded by `--timeout`, so a server that accepts a
//! connection and never answers fails its check instead of hanging the command.
//!
//! Exit status: 0 every check OK; 1 a WARN and no FAIL; 2 a FAIL.

use crate::backend::{kube as k8s, prom, slurm};
use crate::cli::DoctorOutput;
use crate::config::Config;
use crate::sanitize::sanitize;
use serde::Serialize;
use serde_json::{Value, json};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::{Duration, Instant};

pub use crate::model::doctor::{Check, Status};

/// The whole report (`-o json` prints it as is).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The worst status of any check.
    pub status: Status,
    pub exit: u8,
    pub ok: usize,
    pub warn: usize,
    pub fail: usize,
    pub checks: Vec<Check>,
}

impl Report {
    pub fn new(checks: Vec<Check>) -> Report {
        let count = |s: Status| checks.iter().filter(|c| c.status == s).count();
        let status = checks.iter().map(|c| c.status).max().unwrap_or(Status::Ok);
        Report {
            status,
            exit: status.exit_code(),
            ok: count(Status::Ok),
            warn: count(Status::Warn),
            fail: count(Status::Fail),
            checks,
        }
    }

    /// One line per check: status, source, check, detail and the fix.
    pub fn table(&self) -> String {
        let sw = self.checks.iter().map(|c| c.source.len()).max().unwrap_or(0);
        let cw = self.checks.iter().map(|c| c.check.len()).max().unwrap_or(0);
        let mut s = String::new();
        let mut target = None;
        for c in &self.checks {
            if target != Some((&c.source, &c.target)) {
                s.push_str(&format!("{} {}\n", c.source, c.target));
                target = Some((&c.source, &c.target));
            }
            s.push_str(&format!(
                "  {:<4}  {:<sw$}  {:<cw$}  {}",
                c.status.label(),
                c.source,
                c.check,
                c.detail
            ));
            if let Some(f) = &c.fix {
                s.push_str(&format!("  fix: {f}"));
            }
            s.push('\n');
        }
        s.push_str(&format!("{} OK, {} WARN, {} FAIL: exit {}\n", self.ok, self.warn, self.fail, self.exit));
        s
    }
}

/// The checks of one source, in order.
struct Out {
    source: &'static str,
    target: String,
    checks: Vec<Check>,
}

impl Out {
    fn new(source: &'static str, target: impl Into<String>) -> Out {
        Out { source, target: sanitize(&target.into()).into_owned(), checks: Vec::new() }
    }

    fn push(&mut self, status: Status, check: &str, detail: impl AsRef<str>) -> &mut Check {
        self.checks.push(Check {
            source: self.source,
            target: self.target.clone(),
            check: check.to_string(),
            status,
            detail: sanitize(detail.as_ref()).into_owned(),
            fix: None,
            data: Value::Null,
        });
        let n = self.checks.len() - 1;
        &mut self.checks[n]
    }

    fn ok(&mut self, check: &str, detail: impl AsRef<str>) -> &mut Check {
        self.push(Status::Ok, check, detail)
    }

    fn warn(&mut self, check: &str, detail: impl AsRef<str>) -> &mut Check {
        self.push(Status::Warn, check, detail)
    }

    fn fail(&mut self, check: &str, detail: impl AsRef<str>) -> &mut Check {
        self.push(Status::Fail, check, detail)
    }
}

/// `None` when `f` did not finish within `t`.
async fn within<T>(t: Duration, f: impl Future<Output = T>) -> Option<T> {
    tokio::time::timeout(t, f).await.ok()
}

fn secs(t: Duration) -> String {
    humantime::format_duration(Duration::from_secs(t.as_secs().max(1))).to_string()
}

fn now_s() -> f64 {
    jiff::Timestamp::now().as_millisecond() as f64 / 1000.0
}

/// `2026-12-02T17:14:24Z`.
fn rfc3339(t: i64) -> String {
    jiff::Timestamp::from_second(t).map(|t| t.to_string()).unwrap_or_else(|_| t.to_string())
}

/// `3h 12m`, `45s`: a duration to the minute once it is over an hour.
fn span(s: i64) -> String {
    let s = s.unsigned_abs();
    let s = if s >= 3600 { s - s % 60 } else { s };
    humantime::format_duration(Duration::from_secs(s)).to_string()
}

/// Skew over this is a WARN (ages and "last success" times on screen are off), over
/// [`SKEW_FAIL_S`] a FAIL (token and certificate validity go wrong).
pub const SKEW_WARN_S: f64 = 2.0;
pub const SKEW_FAIL_S: f64 = 300.0;

/// The clock line: `server` is the server's time at `local` (both in seconds).
fn clock(out: &mut Out, server: f64, local: f64, how: &str, resolution: f64) {
    let skew = server - local;
    let data =
        json!({"server": server, "local": local, "skew_s": (skew * 1000.0).round() / 1000.0, "from": how});
    let said = if skew >= 0.0 { "ahead of" } else { "behind" };
    let fix = "run NTP (chrony, systemd-timesyncd) on this host and the server";
    if skew.abs() <= SKEW_WARN_S + resolution {
        let res = if resolution > 0.0 { format!(", to {resolution:.0} s") } else { String::new() };
        out.ok("clock", format!("{:.1} s off this host's clock ({how}{res})", skew.abs())).data(data);
    } else if skew.abs() <= SKEW_FAIL_S {
        out.warn("clock", format!("the server's clock is {} {said} this host's ({how}): ages and times on screen are off by that much", span(skew.round() as i64)))
            .fix(fix)
            .data(data);
    } else {
        out.fail("clock", format!("the server's clock is {} {said} this host's ({how}): token expiry and certificate validity are judged wrongly", span(skew.round() as i64)))
            .fix(fix)
            .data(data);
    }
}

/// The DNS and TCP checks (and the transport check of a plain-HTTP URL). Returns whether a
/// TCP connection was made.
async fn reach(out: &mut Out, url: &str, t: Duration, sends_secret: bool) -> bool {
    let parsed = match reqwest::Url::parse(url.trim()) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => u,
        Ok(_) | Err(_) => {
            out.fail("url", format!("{url:?} is not an http:// or https:// URL with a host"))
                .fix("give the URL as http(s)://HOST:PORT");
            return false;
        }
    };
    let host =
        parsed.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_string();
    let port = parsed.port_or_known_default().unwrap_or(80);
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => {
            out.ok("dns", format!("{host} is an address: nothing to resolve"));
            vec![SocketAddr::new(ip, port)]
        }
        Err(_) => {
            let t0 = Instant::now();
            match within(t, tokio::net::lookup_host((host.as_str(), port))).await {
                None => {
                    out.fail("dns", format!("the resolver did not answer for {host} within {}", secs(t)))
                        .fix("check /etc/resolv.conf and the DNS servers it names");
                    return false;
                }
                Some(Err(e)) => {
                    out.fail("dns", format!("{host} does not resolve: {e}"))
                        .fix("check the host name in the URL, and DNS or /etc/hosts on this machine");
                    return false;
                }
                Some(Ok(a)) => {
                    let a: Vec<SocketAddr> = a.collect();
                    let shown: Vec<String> = a.iter().take(3).map(|a| a.ip().to_string()).collect();
                    out.ok(
                        "dns",
                        format!("{host} resolves to {} ({} ms)", shown.join(", "), t0.elapsed().as_millis()),
                    )
                    .data(json!({"addresses": a.iter().map(|a| a.ip().to_string()).collect::<Vec<_>>()}));
                    a
                }
            }
        }
    };
    let mut last = String::from("no address");
    let mut connected = None;
    for a in &addrs {
        let t0 = Instant::now();
        match within(t, tokio::net::TcpStream::connect(a)).await {
            Some(Ok(_)) => {
                connected = Some((*a, t0.elapsed()));
                break;
            }
            Some(Err(e)) => last = format!("{a}: {e}"),
            None => last = format!("{a}: no answer within {} (a firewall dropping packets?)", secs(t)),
        }
    }
    let Some((a, took)) = connected else {
        out.fail("tcp", format!("cannot connect: {last}")).fix(format!(
            "is the service running and listening on {host}:{port}? check the URL's port and any firewall on the way"
        ));
        return false;
    };
    out.ok("tcp", format!("{a} accepts connections ({:.1} ms)", took.as_secs_f64() * 1000.0));
    if parsed.scheme() == "http" {
        let loopback = addrs.iter().all(|a| a.ip().is_loopback());
        if sends_secret && !loopback {
            out.warn("tls", "plain HTTP to another host: the credentials cross the network unencrypted")
                .fix("serve it over TLS (a TLS proxy in front) and use an https:// URL");
        } else {
            out.ok(
                "tls",
                if loopback {
                    "plain HTTP on loopback (no TLS needed)"
                } else {
                    "plain HTTP (no credentials sent)"
                },
            );
        }
    }
    true
}

/// Whether a transport error is about TLS (handshake, certificate).
fn is_tls_error(detail: &str) -> bool {
    let d = detail.to_ascii_lowercase();
    ["certificate", "tls", "handshake", "ssl", "unknownissuer", "alert"].iter().any(|w| d.contains(w))
}

/// The TLS line of an https:// URL after its first request: `err` is the transport error, if
/// any. Returns whether the error was a TLS one (and reported).
fn tls(out: &mut Out, url: &str, err: Option<&str>, ca: Option<&std::path::Path>, ca_hint: &str) -> bool {
    if !url.trim().starts_with("https://") {
        return false;
    }
    match err {
        Some(e) if is_tls_error(e) => {
            out.fail("tls", format!("TLS failed: {e}")).fix(format!(
                "trust the server's CA ({ca_hint}), or check that the URL's host name is in its certificate"
            ));
            true
        }
        Some(_) => false,
        None => {
            let by = ca
                .map(|p| format!("the system roots and {}", p.display()))
                .unwrap_or("the system roots".into());
            out.ok("tls", format!("TLS handshake done, certificate verified against {by}"));
            false
        }
    }
}

/// Every check, for every configured source, concurrently; the report keeps a fixed order
/// (config, slurm, kube, prometheus, nvml, audit).
pub async fn checks(config: &Config, warnings: &[String], t: Duration) -> Vec<Check> {
    let mut out = Out::new("config", "");
    for w in warnings {
        out.warn("file", w).fix("correct the config file (its defaults are used meanwhile)");
    }
    if config.slurm.is_none() && config.kube.is_none() && config.prometheus.is_none() && !config.local {
        out.warn("sources", "no cluster configured: the console opens the built-in SIMULATED cluster")
            .fix("configure --slurm URL, --kube/--context, --prometheus URL or --local (README: Connecting to a cluster)");
    }
    let slurm = async {
        match &config.slurm {
            Some(s) => slurm_checks(s, config.slurm_break_glass.as_ref(), t).await,
            None => Vec::new(),
        }
    };
    let kube = async {
        match &config.kube {
            Some(k) => kube_checks(k, t).await,
            None => Vec::new(),
        }
    };
    let prom = async {
        match &config.prometheus {
            Some(p) => prom_checks(p, config, t).await,
            None => Vec::new(),
        }
    };
    let (s, k, p) = tokio::join!(slurm, kube, prom);
    let mut all = out.checks;
    all.extend(s);
    all.extend(k);
    all.extend(p);
    if config.local {
        all.extend(nvml_checks(t).await);
    }
    if config.slurm.is_some() && config.prometheus.is_some() {
        all.extend(join_checks(config, t).await);
    }
    all.extend(audit_checks(config));
    all
}

/// Whether the telemetry joins the scheduler: the cluster read once as the console reads it
/// (Slurm, then one Prometheus refresh joined to its nodes), and the telemetry's job ids
/// (`hpc_job`) counted against the scheduler's jobs, with the nodes where telemetry and the
/// scheduler disagree ([`crate::state::disagree`]).
async fn join_checks(config: &Config, t: Duration) -> Vec<Check> {
    let mut out = Out::new("join", "");
    let read = within(t.saturating_mul(3) + Duration::from_secs(5), super::cluster_only(config)).await;
    let state = match read {
        Some(Ok((s, _, _))) => s,
        Some(Err(e)) => {
            out.warn("jobs", format!("the cluster could not be read to join it: {e}"));
            return out.checks;
        }
        None => {
            out.warn("jobs", "the cluster could not be read to join it in time");
            return out.checks;
        }
    };
    let (matched, unknown) = crate::state::disagree::job_matches(&state);
    let total = matched + unknown;
    let unknown_ids: std::collections::BTreeSet<u64> = state
        .disagreements
        .values()
        .filter_map(|d| d.jobs.as_ref())
        .flat_map(|(j, _)| j.iter().copied())
        .collect();
    let data = json!({"telemetry_jobs": total, "scheduler_jobs": matched, "unknown": unknown_ids});
    if total == 0 {
        out.warn(
            "jobs",
            "no telemetry job id (hpc_job) on the scheduler's nodes: GPUs are not joined to jobs",
        )
        .fix("run dcgm-exporter with --hpc-job-mapping-dir (the Slurm prolog writes the job of each GPU)")
        .data(data);
    } else if unknown == 0 {
        out.ok(
            "jobs",
            format!("{matched} of {total} telemetry job ids are the scheduler's jobs: GPUs join their jobs"),
        )
        .data(data);
    } else {
        let some: Vec<String> = unknown_ids.iter().take(5).map(u64::to_string).collect();
        out.warn(
            "jobs",
            format!(
                "{matched} of {total} telemetry job ids are the scheduler's jobs; {unknown} are not ({}{})",
                some.join(", "),
                if unknown > 5 { ", …" } else { "" }
            ),
        )
        .fix("check that dcgm-exporter's hpc_job comes from this Slurm cluster, and [prometheus.host_map] (the telemetry's hosts must be this cluster's nodes)")
        .data(data);
    }
    let busy = state.disagreements.values().filter(|d| d.busy.is_some()).count();
    let count = state.disagreements.values().filter(|d| d.count.is_some()).count();
    let data = json!({"busy_beyond_allocation": busy, "gpu_count_differs": count});
    if busy + count == 0 {
        out.ok("nodes", "telemetry and the scheduler agree on every node's GPUs").data(data);
    } else {
        out.warn(
            "nodes",
            format!(
                "telemetry and the scheduler disagree: {busy} node(s) with more GPUs busy than allocated, {count} with another GPU count"
            ),
        )
        .fix("see the disagreement incidents (gpuplane get incidents --filter signal=disagree): a wrong [prometheus.host_map], or GPUs the scheduler does not know")
        .data(data);
    }
    out.checks
}

/// What `:doctor` runs in the console: [`checks`] on the console's runtime (off its UI task),
/// answered as the model's typed checks (the console's `DoctorRunner`).
pub fn console_runner(
    config: Config,
    warnings: Vec<String>,
    t: Duration,
) -> std::sync::Arc<dyn Fn() -> tokio::sync::oneshot::Receiver<Vec<Check>> + Send + Sync> {
    let config = std::sync::Arc::new(config);
    let warnings = std::sync::Arc::new(warnings);
    std::sync::Arc::new(move || {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (config, warnings) = (config.clone(), warnings.clone());
        tokio::spawn(async move {
            let lines = checks(&config, &warnings, t).await;
            let _ = tx.send(lines);
        });
        rx
    })
}

/// `gpuplane doctor`.
pub fn run(output: DoctorOutput, timeout: Duration, config: &Config, warnings: &[String]) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("gpuplane: {e}");
            return ExitCode::from(2);
        }
    };
    let report = Report::new(rt.block_on(checks(config, warnings, timeout.max(Duration::from_millis(100)))));
    rt.shutdown_timeout(Duration::from_millis(100));
    match output {
        DoctorOutput::Table => print!("{}", report.table()),
        DoctorOutput::Json => match crate::sanitize::json_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("gpuplane: {e}");
                return ExitCode::from(2);
            }
        },
    }
    ExitCode::from(report.exit)
}

// ------------------------------------------------------------------------------------ Slurm

fn token_source(t: &slurm::TokenSource) -> String {
    match t {
        slurm::TokenSource::Static(_) => "$SLURM_JWT (or the config)".into(),
        slurm::TokenSource::File(p) => format!("the file {}", p.display()),
        slurm::TokenSource::Command(c) => format!("the command `{c}`"),
    }
}

/// Warn when a token that gpuplane cannot renew expires within this long.
const EXPIRY_WARN_S: i64 = 3600;

/// The token line (read locally, never sent anywhere by this check). Returns the user the
/// token names.
async fn slurm_token(
    out: &mut Out,
    check: &str,
    client: &mut slurm::Client,
    cc: &slurm::ClientConfig,
    t: Duration,
) -> Option<String> {
    let from = token_source(&cc.token);
    // A token command may take its own 20 s.
    let claims = match within(t + Duration::from_secs(20), client.token_claims()).await {
        None => {
            out.fail(check, format!("the token from {from} did not come within {}", secs(t)));
            return None;
        }
        Some(Err(e)) => {
            out.fail(check, e.to_string()).fix(
                "set SLURM_JWT, --slurm-token-file or --slurm-token-cmd 'scontrol token lifespan=86400'",
            );
            return None;
        }
        Some(Ok(c)) => c,
    };
    let header = cc.user.clone().filter(|u| !u.is_empty());
    let Some(c) = claims else {
        out.warn(
            check,
            format!(
                "the token from {from} is not a JWT: gpuplane cannot tell whom it names or when it expires"
            ),
        )
        .fix("check that it is what `scontrol token` prints (SLURM_JWT=… is read too)");
        return header;
    };
    let user = header.clone().or(c.sun.clone());
    let who = match (&c.sun, &header) {
        (Some(s), Some(h)) if s != h => format!("names {s}, sent as user {h} (X-SLURM-USER-NAME)"),
        (Some(s), _) => format!("names {s}"),
        (None, Some(h)) => format!("names no user; sent as {h} (X-SLURM-USER-NAME)"),
        (None, None) => "names no user".into(),
    };
    let now = jiff::Timestamp::now().as_second();
    let data = json!({
        "user": c.sun, "user_header": header, "source": match cc.token {
            slurm::TokenSource::Static(_) => "static", slurm::TokenSource::File(_) => "file", slurm::TokenSource::Command(_) => "command" },
        "expires": c.exp.map(rfc3339), "expires_unix": c.exp, "issued": c.iat.map(rfc3339), "issued_unix": c.iat,
    });
    let renewable = !matches!(cc.token, slurm::TokenSource::Static(_));
    if c.sun.is_none() && header.is_none() {
        out.warn(check, format!("the token from {from} {who}: slurmrestd cannot tell whom to act as"))
            .fix("set --slurm-user NAME (X-SLURM-USER-NAME)")
            .data(data);
        return user;
    }
    match c.exp {
        Some(e) if e <= now => {
            let fix = if renewable {
                format!(
                    "{from} gave an expired token: check that it mints a fresh one (`scontrol token lifespan=86400`)"
                )
            } else {
                "mint a new one with `scontrol token lifespan=86400`, or use --slurm-token-cmd so gpuplane renews it".into()
            };
            out.fail(
                check,
                format!("the token from {from} {who} and expired at {} ({} ago)", rfc3339(e), span(now - e)),
            )
            .fix(fix)
            .data(data);
        }
        Some(e) if e - now < EXPIRY_WARN_S && !renewable => {
            out.warn(check, format!("the token from {from} {who} and expires at {} (in {}); gpuplane cannot renew it", rfc3339(e), span(e - now)))
                .fix("use --slurm-token-cmd 'scontrol token lifespan=86400' (re-run near expiry) or a --slurm-token-file a cron job renews")
                .data(data);
        }
        Some(e) => {
            let renew = if renewable { "; renewed from there when it nears expiry" } else { "" };
            out.ok(
                check,
                format!("the token from {from} {who}, expires {} (in {}){renew}", rfc3339(e), span(e - now)),
            )
            .data(data);
        }
        None => {
            out.ok(check, format!("the token from {from} {who}; it carries no expiry")).data(data);
        }
    }
    user
}

/// `statistics.req_time` of a diag answer: `1796145269` (v0.0.38) or `{"number": …}`.
fn diag_time(body: &[u8]) -> Option<f64> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let t = &v["statistics"]["req_time"];
    t.as_f64().or_else(|| t["number"].as_f64()).filter(|t| *t > 0.0)
}

async fn slurm_checks(cfg: &slurm::SlurmConfig, bg: Option<&slurm::ClientConfig>, t: Duration) -> Vec<Check> {
    let mut out = Out::new("slurm", cfg.client.url.clone());
    let mut cc = cfg.client.clone();
    cc.timeout = t;
    let mut client = match slurm::Client::new(&cc) {
        Ok(c) => c,
        Err(e) => {
            out.fail("config", e.to_string()).fix("correct --slurm / [slurm] url and ca_file");
            return out.checks;
        }
    };
    let user = slurm_token(&mut out, "token", &mut client, &cc, t).await;
    let token_failed = out.checks.iter().any(|c| c.check == "token" && c.status == Status::Fail);
    // Without a usable token only the network is checked.
    if !reach(&mut out, &cc.url, t, true).await || token_failed {
        return out.checks;
    }
    // Which REST versions answer (a ping each; 404: that plugin is not loaded).
    let mut served = Vec::new();
    let mut odd = Vec::new();
    let mut failed: Option<slurm::SlurmError> = None;
    for v in slurm::ApiVersion::ALL {
        match within(
            t + Duration::from_secs(1),
            client.send(reqwest::Method::GET, &v.ctld("ping"), &[], None),
        )
        .await
        {
            None => {
                failed = Some(slurm::SlurmError::Timeout { url: cc.url.clone(), secs: t.as_secs().max(1) });
                break;
            }
            Some(Err(e)) => {
                failed = Some(e);
                break;
            }
            Some(Ok(a)) if a.status == 200 => served.push(v),
            Some(Ok(a)) if a.status == 404 => {}
            Some(Ok(a)) => {
                // Read as that version's answer: Slurm 22.05 reports a refused token as HTTP 500
                // "Unspecified error".
                let saved = client.version;
                client.version = Some(v);
                let e = client.error_of(&v.ctld("ping"), &a);
                client.version = saved;
                if e.is_auth() {
                    failed = Some(e);
                    break;
                }
                odd.push(format!("{v}: {e}"));
            }
        }
    }
    let err_text = failed.as_ref().map(|e| e.to_string());
    if tls(&mut out, &cc.url, err_text.as_deref(), cc.ca_file.as_deref(), "--slurm-ca PATH") {
        return out.checks;
    }
    match failed {
        Some(e) if e.is_auth() => {
            let mut fix = String::from(
                "mint a new token with `scontrol token` (check it is for this cluster's jwt key)",
            );
            if cc.user.is_none() {
                fix.push_str("; Slurm 22.05/23.02 also need the user name: --slurm-user NAME");
            }
            let detail = match &e {
                slurm::SlurmError::Auth { status } => format!("slurmrestd refused the token (HTTP {status})"),
                e => e.to_string(),
            };
            if matches!(e, slurm::SlurmError::Auth { status: 500 }) {
                fix.push_str(" (Slurm 22.05 reports a refused token as HTTP 500 \"Unspecified error\")");
            }
            out.fail("auth", detail).fix(fix);
            return out.checks;
        }
        Some(e @ slurm::SlurmError::Timeout { .. }) => {
            out.fail("api", format!("{e}: it accepts connections but does not answer HTTP"))
                .fix("is this slurmrestd's port (not slurmctld's)? is slurmrestd overloaded or stuck?");
            return out.checks;
        }
        Some(e) => {
            out.fail("api", e.to_string()).fix("check that the URL is slurmrestd's");
            return out.checks;
        }
        None => {}
    }
    if served.is_empty() {
        let seen = if odd.is_empty() { String::new() } else { format!(" ({})", odd.join(", ")) };
        out.fail("api", format!("slurmrestd serves none of the REST versions gpuplane speaks (v0.0.43 … v0.0.40, v0.0.38){seen}"))
            .fix("Slurm 22.05 or newer with slurmrestd's openapi plugins loaded (-s openapi/slurmctld,openapi/slurmdbd)");
        return out.checks;
    }
    let names: Vec<&str> = served.iter().map(|v| v.as_str()).collect();
    if let Some(pin) = cc.version.filter(|p| !served.contains(p)) {
        out.fail(
            "api",
            format!("[slurm] version = {pin} is pinned, but the server serves {}", names.join(", ")),
        )
        .fix(format!("remove `version` from [slurm] or set one of {}", names.join(", ")));
        return out.checks;
    }
    let v = match within(t + Duration::from_secs(1), client.negotiate()).await {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            out.fail("api", e.to_string());
            return out.checks;
        }
        None => {
            out.fail("api", format!("slurmrestd did not answer the ping within {}", secs(t)));
            return out.checks;
        }
    };
    let release = client.release.clone().unwrap_or_else(|| "(release not told)".into());
    let cluster = client.cluster.clone().map(|c| format!(", cluster {c}")).unwrap_or_default();
    out.ok("api", format!("Slurm {release}{cluster}: REST {} answer; gpuplane uses {v}", names.join(", ")))
        .data(json!({"release": client.release, "cluster": client.cluster, "served": names, "used": v.as_str()}));

    // The token, verified: a ping is not (slurmrestd 24.11 answers it with any token), so ask
    // slurmctld for diag, which it authenticates, and which carries its clock (slurmrestd sends
    // no Date header).
    let acting = user.clone().unwrap_or_else(|| "an unnamed user".into());
    let t0 = now_s();
    let diag =
        within(t + Duration::from_secs(1), client.send(reqwest::Method::GET, &v.ctld("diag"), &[], None))
            .await;
    let local = (t0 + now_s()) / 2.0;
    let mut server_time = None;
    match diag {
        Some(Ok(a)) if a.status == 200 => {
            out.ok("auth", format!("slurmctld accepted the token (diag), acting as {acting}"));
            server_time = diag_time(&a.body);
        }
        Some(Ok(a)) => {
            let e = client.error_of(&v.ctld("diag"), &a);
            if e.is_auth() {
                out.fail("auth", format!("slurmctld refused the token (HTTP {})", a.status))
                    .fix("mint a new token with `scontrol token` on this cluster (its jwt key signs it)");
                return out.checks;
            }
            out.warn("auth", format!("the token is not verified: diag answered {e}"));
        }
        Some(Err(e)) if e.is_auth() => {
            let status = match e {
                slurm::SlurmError::Auth { status } => status.to_string(),
                _ => "no token".into(),
            };
            out.fail("auth", format!("slurmctld refused the token (HTTP {status})"))
                .fix("mint a new token with `scontrol token` on this cluster (its jwt key signs it)");
            return out.checks;
        }
        Some(Err(e)) => {
            out.warn("auth", format!("the token is not verified: {e}"));
        }
        None => {
            out.warn("auth", format!("the token is not verified: diag did not answer within {}", secs(t)));
        }
    }

    // slurmdbd behind slurmrestd: quotas, cost and the permission check need it.
    match within(t + Duration::from_secs(1), client.send(reqwest::Method::GET, &v.db("qos"), &[], None)).await
    {
        Some(Ok(a)) if a.status == 200 => {
            out.ok(
                "slurmdbd",
                "answers: quotas (QOS and association GPU limits) and cost (job history) are read",
            );
        }
        Some(Ok(a)) if a.status == 404 => {
            out.warn("slurmdbd", "slurmrestd has no slurmdbd behind it: no quotas, no cost, and AdminLevel cannot be checked")
                .fix("load slurmrestd's slurmdbd plugin (openapi/slurmdbd; dbv0.0.38 on 22.05) with AccountingStorageType=accounting_storage/slurmdbd");
        }
        Some(Ok(a)) => {
            let e = client.error_of(&v.db("qos"), &a);
            out.warn("slurmdbd", format!("{e}: quotas and cost may be missing"))
                .fix("check slurmdbd's log and that slurmdbd runs");
        }
        Some(Err(e)) => {
            out.warn("slurmdbd", format!("{e}: quotas and cost may be missing"));
        }
        None => {
            out.warn("slurmdbd", format!("no answer within {}: quotas and cost may be missing", secs(t)));
        }
    }

    permissions(&mut out, "", &mut client, v, &cfg.slurm_user, t).await;

    if let Some(bg) = bg {
        let mut bc = bg.clone();
        bc.timeout = t;
        bc.version = Some(v);
        match slurm::Client::new(&bc) {
            Ok(mut b) => {
                if slurm_token(&mut out, "break-glass/token", &mut b, &bc, t).await.is_some() {
                    permissions(&mut out, "break-glass/", &mut b, v, &cfg.slurm_user, t).await;
                }
            }
            Err(e) => {
                out.fail("break-glass/token", e.to_string());
            }
        }
    }

    match server_time {
        Some(server) => clock(&mut out, server, local, "slurmctld's diag req_time", 1.0),
        None => {
            out.warn("clock", "skew not measured: no diag answer with a req_time");
        }
    }
    out.checks
}

/// The permission lines: drain/resume (node updates) and cancel, from slurmdbd's AdminLevel.
async fn permissions(
    out: &mut Out,
    prefix: &str,
    client: &mut slurm::Client,
    v: slurm::ApiVersion,
    slurm_user: &str,
    t: Duration,
) {
    let drain = format!("{prefix}permission/drain");
    let cancel = format!("{prefix}permission/cancel");
    let p = match within(t + Duration::from_secs(1), client.permission(slurm_user)).await {
        Some(Ok(p)) => p,
        Some(Err(e)) => {
            out.warn(&drain, format!("not checked: {e}"));
            return;
        }
        None => {
            out.warn(&drain, format!("not checked: slurmdbd did not answer within {}", secs(t)));
            return;
        }
    };
    let level = p.level.map(|l| l.label());
    let data = json!({"user": p.user, "admin_level": level, "from": p.source, "coordinates": p.coordinates});
    if v.is_legacy() {
        out.warn(&drain, "REST v0.0.38 (Slurm 22.05/23.02) has no node update: gpuplane cannot drain or resume here and shows the `scontrol update` line to run instead")
            .fix("Slurm 23.11 or newer (REST v0.0.40+) for drain and resume from gpuplane")
            .data(data.clone());
    } else {
        match (p.level, p.may_update_nodes()) {
            (None, _) => {
                out.warn(
                    &drain,
                    format!(
                        "unknown whether {} may drain or resume: {}; slurmctld decides when you act",
                        p.user, p.source
                    ),
                )
                .data(data.clone());
            }
            (Some(l), Ok(())) => {
                out.ok(
                    &drain,
                    format!("{} may drain and resume nodes ({}: {})", p.user, p.source, l.label()),
                )
                .data(data.clone());
            }
            (Some(l), Err(_)) => {
                out.warn(&drain, format!("{} has AdminLevel {} ({}): drain and resume will be refused (they need Administrator, root or SlurmUser)", p.user, l.label(), p.source))
                    .fix(format!("sacctmgr modify user {} set adminlevel=Administrator, or configure break-glass ([slurm] break_glass_token_cmd)", p.user))
                    .data(data.clone());
            }
        }
    }
    match p.level {
        None => {
            out.warn(
                &cancel,
                format!("unknown which jobs {} may cancel: {}; slurmctld decides", p.user, p.source),
            )
            .data(data);
        }
        Some(slurm::perm::AdminLevel::None) => {
            let coord = if p.coordinates.is_empty() {
                String::new()
            } else {
                format!(" and the jobs of accounts it coordinates ({})", p.coordinates.join(", "))
            };
            out.ok(&cancel, format!("{} may cancel its own jobs{coord}; others' jobs need Operator", p.user))
                .data(data);
        }
        Some(l) => {
            out.ok(&cancel, format!("{} may cancel any job ({})", p.user, l.label())).data(data);
        }
    }
}

// ------------------------------------------------------------------------------- Kubernetes

/// One permission gpuplane needs: (check, verb, group, resource, subresource, what it serves,
/// whether a refusal means the source is unusable).
type Need = (&'static str, &'static str, &'static str, &'static str, &'static str, &'static str, bool);

/// What gpuplane reads and writes on Kubernetes. Reads first: without listing and watching
/// nodes nothing works.
const KUBE_NEEDS: &[Need] = &[
    ("read/nodes", "watch", "", "nodes", "", "the node list (nothing works without it)", true),
    ("read/pods", "watch", "", "pods", "", "jobs, GPU allocation and drain's pod list", false),
    ("read/namespaces", "watch", "", "namespaces", "", "teams (the namespace team label)", false),
    ("read/quotas", "watch", "", "resourcequotas", "", "quotas from ResourceQuotas", false),
    ("read/events", "watch", "", "events", "", "node events in the detail pane", false),
    ("permission/cordon", "patch", "", "nodes", "", "cordon, uncordon and drain", false),
    ("permission/drain", "create", "", "pods", "eviction", "drain (evictions)", false),
    ("permission/cancel", "delete", "batch", "jobs", "", "cancel (deleting the owning Job)", false),
    (
        "permission/events",
        "create",
        "events.k8s.io",
        "events",
        "",
        "the Event each action writes on its node",
        false,
    ),
    ("permission/acceptance", "create", "batch", "jobs", "", "NCCL acceptance tests (Jobs)", false),
];

/// The kubeconfig's credential for `context`: a description, and the bearer token when it
/// has one (to read a JWT's claims; never shown).
fn kube_credential(cfg: &k8s::KubeConfig, context: &str) -> Option<(String, Option<String>)> {
    use secrecy::ExposeSecret;
    let kc = match &cfg.kubeconfig {
        Some(p) => kube::config::Kubeconfig::read_from(p).ok()?,
        None => kube::config::Kubeconfig::read().ok()?,
    };
    let user = kc.contexts.iter().find(|c| c.name == context)?.context.as_ref()?.user.clone()?;
    let auth = kc.auth_infos.iter().find(|a| a.name == user)?.auth_info.clone()?;
    if let Some(t) = &auth.token {
        return Some(("a bearer token".into(), Some(t.expose_secret().trim().to_string())));
    }
    if let Some(f) = &auth.token_file {
        return Some((
            format!("a bearer token from {f}"),
            std::fs::read_to_string(f).ok().map(|t| t.trim().to_string()),
        ));
    }
    if let Some(e) = &auth.exec {
        return Some((format!("the exec plugin `{}`", e.command.clone().unwrap_or_default()), None));
    }
    if auth.client_certificate.is_some() || auth.client_certificate_data.is_some() {
        return Some(("a client certificate".into(), None));
    }
    if auth.username.is_some() {
        return Some(("basic auth".into(), None));
    }
    if auth.auth_provider.is_some() {
        return Some(("an auth-provider plugin".into(), None));
    }
    Some(("no credential (anonymous)".into(), None))
}

async fn kube_checks(cfg: &k8s::KubeConfig, t: Duration) -> Vec<Check> {
    let name = cfg.context.clone().unwrap_or_else(|| "current context".into());
    let mut out = Out::new("kube", name);
    let conn = match within(t, k8s::connect(cfg, None)).await {
        Some(Ok(c)) => c,
        Some(Err(e)) => {
            out.fail("kubeconfig", e)
                .fix("check --kubeconfig/$KUBECONFIG and --context (`kubectl config get-contexts`)");
            return out.checks;
        }
        None => {
            out.fail("kubeconfig", format!("loading the kubeconfig took over {} (an exec plugin?)", secs(t)));
            return out.checks;
        }
    };
    out.target = sanitize(&format!("{} ({})", conn.context, conn.server)).into_owned();
    let cred = kube_credential(cfg, &conn.context);
    let how = cred.as_ref().map(|c| c.0.clone()).unwrap_or_else(|| "the in-cluster service account".into());
    out.ok(
        "kubeconfig",
        format!("context {}, user {}, server {}, credential: {how}", conn.context, conn.user, conn.server),
    );
    let token = cred.and_then(|c| c.1);
    if let Some(c) = token.as_deref().and_then(slurm::token::jwt_claims) {
        let now = jiff::Timestamp::now().as_second();
        let sub = c["sub"].as_str().unwrap_or("(no sub)").to_string();
        let data =
            json!({"sub": sub, "expires": c["exp"].as_i64().map(rfc3339), "expires_unix": c["exp"].as_i64()});
        match c["exp"].as_i64() {
            Some(e) if e <= now => {
                out.fail(
                    "token",
                    format!(
                        "the bearer token (a JWT for {sub}) expired at {} ({} ago)",
                        rfc3339(e),
                        span(now - e)
                    ),
                )
                .fix("get a new token (kubectl create token …) and update the kubeconfig")
                .data(data);
            }
            Some(e) if e - now < EXPIRY_WARN_S => {
                out.warn(
                    "token",
                    format!(
                        "the bearer token (a JWT for {sub}) expires at {} (in {})",
                        rfc3339(e),
                        span(e - now)
                    ),
                )
                .fix("use a longer-lived token or an exec credential plugin")
                .data(data);
            }
            Some(e) => {
                out.ok(
                    "token",
                    format!(
                        "the bearer token is a JWT for {sub}, expires {} (in {})",
                        rfc3339(e),
                        span(e - now)
                    ),
                )
                .data(data);
            }
            None => {
                out.ok("token", format!("the bearer token is a JWT for {sub} with no expiry")).data(data);
            }
        }
    }
    if !reach(&mut out, &conn.server, t, true).await {
        return out.checks;
    }
    // The server's version, and its clock from the Date header.
    let req = match http::Request::get("/version").body(Vec::new()) {
        Ok(r) => r,
        Err(e) => {
            out.fail("api", e.to_string());
            return out.checks;
        }
    };
    let t0 = now_s();
    let resp = within(t, async {
        let r = conn.client.send(req.map(kube::client::Body::from)).await?;
        let date = r.headers().get(http::header::DATE).and_then(|d| d.to_str().ok()).map(str::to_string);
        let status = r.status().as_u16();
        let body = r.into_body().collect_bytes().await?;
        Ok::<_, kube::Error>((status, date, body))
    })
    .await;
    let local = (t0 + now_s()) / 2.0;
    let (status, date, body) = match resp {
        None => {
            out.fail(
                "api",
                format!("the API server accepts connections but did not answer /version within {}", secs(t)),
            )
            .fix("is this the API server's address? is it overloaded?");
            return out.checks;
        }
        Some(Err(e)) => {
            let text = e.to_string();
            if !tls(
                &mut out,
                &conn.server,
                Some(&text),
                None,
                "the kubeconfig's certificate-authority(-data)",
            ) {
                out.fail("api", format!("/version: {text}")).fix("check the server URL in the kubeconfig");
            }
            return out.checks;
        }
        Some(Ok(r)) => r,
    };
    tls(&mut out, &conn.server, None, None, "");
    if status == 401 {
        out.fail("auth", "the API server refused the credentials (HTTP 401)")
            .fix("renew the token or credential in the kubeconfig (`kubectl get nodes` shows the same)");
        return out.checks;
    }
    match serde_json::from_slice::<k8s_openapi::apimachinery::pkg::version::Info>(&body) {
        Ok(info) if status == 200 => {
            out.ok("api", format!("Kubernetes {} ({})", info.git_version, info.platform))
                .data(json!({"git_version": info.git_version, "major": info.major, "minor": info.minor}));
        }
        _ => {
            out.warn("api", format!("/version answered HTTP {status} without a version"))
                .fix("check that the URL is a Kubernetes API server");
        }
    }
    // Who the server says we are.
    let api: kube::Api<k8s_openapi::api::authentication::v1::SelfSubjectReview> =
        kube::Api::all(conn.client.clone());
    match within(t, api.create(&kube::api::PostParams::default(), &Default::default())).await {
        Some(Ok(r)) => {
            let ui = r.status.and_then(|s| s.user_info).unwrap_or_default();
            let user = ui.username.unwrap_or_else(|| "(no name)".into());
            let groups = ui.groups.unwrap_or_default();
            out.ok(
                "auth",
                format!(
                    "the API server knows you as {user} (groups: {})",
                    if groups.is_empty() { "none".into() } else { groups.join(", ") }
                ),
            )
            .data(json!({"user": user, "groups": groups}));
        }
        Some(Err(kube::Error::Api(e))) if e.code == 401 => {
            out.fail("auth", format!("the API server refused the credentials: {}", e.message))
                .fix("renew the token or credential in the kubeconfig");
            return out.checks;
        }
        Some(Err(kube::Error::Api(e))) if e.code == 404 => {
            out.ok("auth", format!("the credentials are accepted (this server has no SelfSubjectReview, Kubernetes < 1.28: kubeconfig user {})", conn.user));
        }
        Some(Err(e)) => {
            out.warn("auth", format!("SelfSubjectReview: {e}"));
        }
        None => {
            out.warn("auth", format!("SelfSubjectReview did not answer within {}", secs(t)));
        }
    }
    let ns = cfg.namespace.as_deref();
    for (check, verb, group, resource, sub, serves, vital) in KUBE_NEEDS {
        let namespaced = !matches!(*resource, "nodes" | "namespaces");
        let what = format!(
            "{verb} {}{}",
            if group.is_empty() { String::new() } else { format!("{group}/") },
            if sub.is_empty() { resource.to_string() } else { format!("{resource}/{sub}") }
        );
        let scope = match (ns, namespaced) {
            (Some(n), true) => format!(" in {n}"),
            _ => String::new(),
        };
        let r = within(
            t,
            k8s::access_review(&conn.client, verb, group, resource, sub, ns.filter(|_| namespaced)),
        )
        .await;
        let data = json!({"verb": verb, "group": group, "resource": resource, "subresource": sub, "namespace": ns.filter(|_| namespaced)});
        match r {
            Some(Ok(())) => {
                out.ok(check, format!("may {what}{scope}: {serves}")).data(data);
            }
            Some(Err(e @ crate::model::ActionError::Forbidden { .. })) => {
                let c = if *vital {
                    out.fail(check, format!("may not {what}{scope}: gpuplane cannot read the cluster"))
                } else {
                    out.warn(check, format!("may not {what}{scope}: {serves} disabled"))
                };
                c.fix(format!("bind a (Cluster)Role allowing {verb} on {resource}{} to this identity, or use a context that has it", if sub.is_empty() { String::new() } else { format!("/{sub}") }))
                    .data(json!({"verb": verb, "group": group, "resource": resource, "subresource": sub, "denied": e.to_string()}));
            }
            Some(Err(e)) => {
                out.warn(check, format!("not checked: {e}")).data(data);
            }
            None => {
                out.warn(check, format!("not checked: the access review did not answer within {}", secs(t)))
                    .data(data);
            }
        }
    }
    // Kueue and its visibility API (queue positions).
    match within(t, k8s::kueue_resources(&conn.client)).await {
        Some(Some((v, _))) => match within(t, k8s::visibility_version(&conn.client)).await {
            Some(Some(vv)) => {
                out.ok("kueue", format!("Kueue {v} served; visibility API {vv}: queue positions from Kueue"));
            }
            _ => {
                out.warn("kueue", format!("Kueue {v} served, but not its visibility API: queue positions are estimated from priority and age"))
                    .fix("enable Kueue's visibility API (visibility.kueue.x-k8s.io; the VisibilityOnDemand feature on older Kueue)");
            }
        },
        Some(None) => {
            out.ok("kueue", "Kueue is not installed: queues and quotas come from ResourceQuotas");
        }
        None => {
            out.warn("kueue", format!("API discovery did not answer within {}", secs(t)));
        }
    }
    if let Some(d) = date.as_deref().and_then(|d| jiff::fmt::rfc2822::parse(d).ok()) {
        let server = d.timestamp().as_second() as f64;
        clock(&mut out, server, local, "the API server's Date header", 1.0);
    } else {
        out.warn("clock", "the API server sent no Date header: skew not measured");
    }
    out.checks
}

// ------------------------------------------------------------------------------- Prometheus

/// What each series gpuplane reads gives, grouped as the report shows them:
/// (group, metric key, what it disables when missing).
fn series_needs(m: &prom::config::MetricNames) -> Vec<(&'static str, &str, &'static str)> {
    vec![
        ("series/gpu", &m.gpu_util, "GPU utilisation, idle-GPU incidents and the GPU wall"),
        ("series/gpu", &m.gpu_temp, "GPU temperature and hot-GPU incidents"),
        ("series/gpu", &m.power, "GPU power"),
        ("series/gpu", &m.fb_used, "GPU memory used"),
        ("series/gpu", &m.fb_free, "GPU memory size (node discovery)"),
        ("series/gpu", &m.tensor_active, "tensor activity (a DCGM profiling field)"),
        ("series/gpu-errors", &m.xid, "XID incidents"),
        ("series/gpu-errors", &m.ecc_sbe, "single-bit ECC incidents"),
        ("series/gpu-errors", &m.ecc_dbe, "double-bit ECC incidents"),
        ("series/nvlink", &m.nvlink_crc_flit, "NVLink CRC (flit) error incidents"),
        ("series/nvlink", &m.nvlink_crc_data, "NVLink CRC (data) error incidents"),
        ("series/nvlink", &m.nvlink_replay, "NVLink replay incidents"),
        ("series/nvlink", &m.nvlink_bw, "NVLink throughput in the detail pane"),
        ("series/nvlink", &m.pcie_replay, "PCIe replay incidents"),
        ("series/infiniband", &m.ib_state, "port state and port-down incidents"),
        ("series/infiniband", &m.ib_rate, "the port list and rates (Fabric view)"),
        ("series/infiniband", &m.ib_symbol_errors, "symbol error counts"),
        ("series/infiniband", &m.ib_rcv_errors, "receive error counts"),
        ("series/infiniband", &m.ib_xmit_discards, "transmit discard counts"),
        ("series/infiniband", &m.ib_link_downed, "link-down counts and flap incidents"),
        ("series/infiniband", &m.ib_rx_bytes, "port receive traffic"),
        ("series/infiniband", &m.ib_tx_bytes, "port transmit traffic"),
        ("series/storage", &m.fs_size, "filesystem size (Storage view)"),
        ("series/storage", &m.fs_avail, "filesystem fill and full-filesystem incidents"),
        ("series/storage", &m.disk_read, "local disk read throughput"),
        ("series/storage", &m.disk_written, "local disk write throughput"),
        ("series/storage", &m.nfs_read, "NFS read throughput"),
        ("series/storage", &m.nfs_written, "NFS write throughput"),
        ("series/storage", &m.disk_io_time, "local disk busy beside idle jobs (report job evidence)"),
        ("series/cpu", &m.cpu_seconds, "CPU busy beside idle jobs (report job evidence)"),
    ]
}

/// What a group's absence as a whole means, and how to fix it.
fn series_group(group: &str) -> (&'static str, &'static str) {
    match group {
        "series/gpu" => (
            "dcgm-exporter's GPU gauges",
            "scrape dcgm-exporter (and check [prometheus] selector and [prometheus.metrics])",
        ),
        "series/gpu-errors" => {
            ("dcgm-exporter's XID and ECC fields", "enable them in dcgm-exporter's collectors CSV")
        }
        "series/nvlink" => {
            ("dcgm-exporter's NVLink and PCIe error fields", "enable them in dcgm-exporter's collectors CSV")
        }
        "series/infiniband" => (
            "node_exporter's infiniband collector",
            "run node_exporter with the infiniband collector on the GPU nodes (fine to ignore on a fleet without InfiniBand)",
        ),
        "series/cpu" => ("node_exporter's cpu collector", "run node_exporter with its default cpu collector"),
        _ => (
            "node_exporter's filesystem, diskstats and mountstats collectors",
            "run node_exporter with --collector.mountstats (NFS) and the default filesystem/diskstats collectors",
        ),
    }
}

/// `data.result` of an instant query.
fn result(body: &prom::client::Body) -> Vec<Value> {
    serde_json::from_slice::<Value>(&body.0)
        .ok()
        .and_then(|v| v["data"]["result"].as_array().cloned())
        .unwrap_or_default()
}

/// The first value of a vector answer (`count(...)`), 0 when empty.
fn first_value(body: &prom::client::Body) -> f64 {
    result(body).first().and_then(|r| r["value"][1].as_str().and_then(|v| v.parse().ok())).unwrap_or(0.0)
}

fn sel(c: &prom::PromConfig, extra: &str) -> String {
    [c.selector.as_str(), extra].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join(",")
}

fn label_names(v: &[String]) -> String {
    v.join(" or ")
}

async fn prom_checks(cfg: &prom::PromConfig, config: &Config, t: Duration) -> Vec<Check> {
    let mut out = Out::new("prometheus", cfg.url.clone());
    let mut pc = cfg.clone();
    pc.timeout = t;
    let client = match prom::client::PromClient::new(&pc) {
        Ok(c) => c,
        Err(e) => {
            out.fail("config", e.to_string()).fix("correct --prometheus / [prometheus]");
            return out.checks;
        }
    };
    let secret = !matches!(pc.auth, prom::config::Auth::None) || !pc.headers.is_empty();
    if !reach(&mut out, &pc.url, t, secret).await {
        return out.checks;
    }
    let q = |promql: String| {
        let client = client.clone();
        async move {
            match within(t + Duration::from_secs(1), client.query(&promql, None)).await {
                Some(r) => r,
                None => {
                    Err(prom::client::PromError::Timeout { url: String::new(), secs: t.as_secs().max(1) })
                }
            }
        }
    };
    // The API, and the server's clock: time() is its evaluation time (Thanos and Mimir too).
    let t0 = now_s();
    let answer = q("time()".into()).await;
    let local = (t0 + now_s()) / 2.0;
    let err_text = answer.as_ref().err().map(|e| e.to_string());
    if tls(&mut out, &pc.url, err_text.as_deref(), pc.ca_file.as_deref(), "[prometheus] ca_file") {
        return out.checks;
    }
    let body = match answer {
        Ok(b) => b,
        Err(e @ prom::client::PromError::Auth { .. }) => {
            out.fail("auth", e.to_string()).fix("set [prometheus] bearer_token_file (or PROMETHEUS_BEARER_TOKEN), or username and password_file");
            return out.checks;
        }
        Err(prom::client::PromError::Timeout { .. }) => {
            out.fail(
                "api",
                format!("{} accepts connections but did not answer a query within {}", pc.url, secs(t)),
            )
            .fix("is this Prometheus's port? is it overloaded? (raise --timeout to wait longer)");
            return out.checks;
        }
        Err(e) => {
            out.fail("api", e.to_string())
                .fix("check that the URL is a Prometheus query API (…/api/v1/query answers)");
            return out.checks;
        }
    };
    let server_time = serde_json::from_slice::<Value>(&body.0)
        .ok()
        .and_then(|v| v["data"]["result"][1].as_str().and_then(|s| s.parse::<f64>().ok()));
    let auth = match &pc.auth {
        prom::config::Auth::None => "no credentials".to_string(),
        prom::config::Auth::Bearer(_) => "a bearer token".to_string(),
        prom::config::Auth::Basic { username, .. } => format!("basic auth as {username}"),
    };
    let version = within(t, client.version()).await.flatten();
    out.ok(
        "api",
        format!(
            "the query API answers ({}; {auth})",
            version.as_deref().map(|v| format!("Prometheus {v}")).unwrap_or("version not told".into())
        ),
    )
    .data(json!({"version": version}));

    // Which series exist (one query, aggregated server-side).
    let needs = series_needs(&pc.metrics);
    let mut names: Vec<&str> = needs.iter().map(|n| n.1).collect();
    names.sort_unstable();
    names.dedup();
    let re: Vec<String> = names.iter().map(|n| regex::escape(n)).collect();
    let present: std::collections::BTreeSet<String> = match q(format!(
        "count by (__name__) ({{{}}})",
        sel(&pc, &format!("__name__=~\"{}\"", re.join("|").replace('\\', "\\\\")))
    ))
    .await
    {
        Ok(b) => {
            result(&b).iter().filter_map(|r| r["metric"]["__name__"].as_str().map(str::to_string)).collect()
        }
        Err(e) => {
            out.fail("series", format!("the series query failed: {e}"));
            return out.checks;
        }
    };
    let mut groups: Vec<&str> = needs.iter().map(|n| n.0).collect();
    groups.dedup();
    for g in groups {
        let of: Vec<&(&str, &str, &str)> = needs.iter().filter(|n| n.0 == g).collect();
        let missing: Vec<&&(&str, &str, &str)> = of.iter().filter(|n| !present.contains(n.1)).collect();
        let (what, fix) = series_group(g);
        let data = json!({
            "present": of.iter().filter(|n| present.contains(n.1)).map(|n| n.1).collect::<Vec<_>>(),
            "missing": missing.iter().map(|n| json!({"metric": n.1, "disables": n.2})).collect::<Vec<_>>(),
        });
        if missing.is_empty() {
            out.ok(g, format!("all {} series present ({what})", of.len())).data(data);
        } else if missing.len() == of.len() && g == "series/gpu" {
            out.fail(g, format!("none of {what} is present ({}): no GPU telemetry", names_of(&missing)))
                .fix(fix)
                .data(data);
        } else if missing.len() == of.len() {
            out.warn(g, format!("none of {what} is present: {}", disables(&missing))).fix(fix).data(data);
        } else {
            out.warn(g, format!("{} of {} missing: {}", missing.len(), of.len(), disables(&missing)))
                .fix("check [prometheus.metrics] against the names your exporters serve (versions rename some), or enable the field in the exporter")
                .data(data);
        }
    }

    // The labels that place GPUs on nodes and join them to jobs.
    let util = &pc.metrics.gpu_util;
    if present.contains(util.as_str()) {
        let l = &pc.labels;
        let count = |extra: String| q(format!("count({util}{{{}}})", sel(&pc, &extra)));
        let total = count(String::new()).await.map(|b| first_value(&b)).unwrap_or(0.0);
        let any = |labels: &[String]| {
            let labels = labels.to_vec();
            let count = &count;
            async move {
                let mut n: f64 = 0.0;
                for lb in &labels {
                    n = n.max(count(format!("{lb}!=\"\"")).await.map(|b| first_value(&b)).unwrap_or(0.0));
                }
                n
            }
        };
        let host = any(&l.gpu_host).await;
        let data = json!({"series": total, "with_label": host, "labels": l.gpu_host});
        if host < total || total == 0.0 {
            out.fail(
                "labels/gpu-host",
                format!(
                    "{} of {total} {util} series carry {}: GPUs without it cannot be placed on a node",
                    total - host,
                    label_names(&l.gpu_host)
                ),
            )
            .fix("set [prometheus.labels] gpu_host to the label naming the node (dcgm-exporter: Hostname)")
            .data(data);
        } else {
            out.ok(
                "labels/gpu-host",
                format!("every {util} series names its node ({})", label_names(&l.gpu_host)),
            )
            .data(data);
        }
        let idx = any(std::slice::from_ref(&l.gpu)).await;
        let uuid = any(&l.uuid).await;
        let model = any(&l.model).await;
        let data = json!({"series": total, "gpu": idx, "uuid": uuid, "model": model});
        let mut lack = Vec::new();
        if idx < total {
            lack.push(format!("{} (GPU index: GPUs of a node merge)", l.gpu));
        }
        if uuid < total {
            lack.push(format!("{} (GPU UUID)", label_names(&l.uuid)));
        }
        if model < total {
            lack.push(format!("{} (GPU model: prices and discovery)", label_names(&l.model)));
        }
        if lack.is_empty() {
            out.ok("labels/gpu", format!("every {util} series carries its GPU index, UUID and model"))
                .data(data);
        } else {
            out.warn("labels/gpu", format!("some {util} series lack {}", lack.join(", ")))
                .fix("set [prometheus.labels] gpu, uuid and model to the labels your exporter uses")
                .data(data);
        }
        let pods = count(format!("{}!=\"\"", l.pod)).await.map(|b| first_value(&b)).unwrap_or(0.0);
        let jobs = count(format!("{}!=\"\"", l.hpc_job)).await.map(|b| first_value(&b)).unwrap_or(0.0);
        let data = json!({"series": total, "pod": pods, "hpc_job": jobs, "labels": [l.pod.clone(), l.namespace.clone(), l.hpc_job.clone()]});
        let slurm = config.slurm.is_some();
        let kube = config.kube.is_some();
        let (needed, n, fix) = if slurm {
            (
                l.hpc_job.as_str(),
                jobs,
                "run dcgm-exporter with --hpc-job-mapping-dir (the Slurm prolog writes the job of each GPU)",
            )
        } else {
            (
                l.pod.as_str(),
                pods,
                "run dcgm-exporter with --kubernetes (pod and namespace labels from the kubelet)",
            )
        };
        if n > 0.0 || (!slurm && !kube && (pods > 0.0 || jobs > 0.0)) {
            let n = if slurm || kube { n } else { pods.max(jobs) };
            out.ok(
                "labels/jobs",
                format!(
                    "{n} GPU series carry {needed} ({pods} with {}, {jobs} with {}){}",
                    l.pod,
                    l.hpc_job,
                    // With Slurm, whether they are its jobs is the join check's to say.
                    if slurm { "" } else { ": GPUs join their jobs" }
                ),
            )
            .data(data);
        } else {
            out.warn("labels/jobs", format!("no {util} series carries {needed}: GPUs are not joined to jobs (per-job GPU use, idle allocated GPU incidents, useful % in cost) — or no GPU is allocated right now"))
                .fix(fix)
                .data(data);
        }
        // dcgm-exporter's hosts and node_exporter's must map to the same node names.
        let gpu_hosts = q(format!("count by ({}) ({util}{{{}}})", l.gpu_host.join(", "), sel(&pc, ""))).await;
        let node_metric =
            if present.contains(pc.metrics.fs_size.as_str()) { Some(&pc.metrics.fs_size) } else { None };
        if let (Ok(g), Some(nm)) = (gpu_hosts, node_metric) {
            let gh: std::collections::BTreeSet<String> = result(&g)
                .iter()
                .filter_map(|r| {
                    l.gpu_host.iter().find_map(|lb| r["metric"][lb].as_str().filter(|s| !s.is_empty()))
                })
                .map(|h| pc.host_map.map(h).into_owned())
                .collect();
            if let Ok(n) =
                q(format!("count by ({}) ({nm}{{{}}})", l.node_host.join(", "), sel(&pc, ""))).await
            {
                let nh: std::collections::BTreeSet<String> = result(&n)
                    .iter()
                    .filter_map(|r| {
                        l.node_host.iter().find_map(|lb| r["metric"][lb].as_str().filter(|s| !s.is_empty()))
                    })
                    .map(|h| pc.host_map.map(h).into_owned())
                    .collect();
                let both = gh.intersection(&nh).count();
                let data = json!({"gpu_hosts": gh.len(), "node_hosts": nh.len(), "matched": both, "gpu_example": gh.iter().next(), "node_example": nh.iter().next()});
                if gh.is_empty() || nh.is_empty() || both > 0 {
                    out.ok(
                        "labels/host-map",
                        format!(
                            "{both} of {} GPU hosts match a node_exporter host after the host map",
                            gh.len()
                        ),
                    )
                    .data(data);
                } else {
                    out.warn("labels/host-map", format!(
                        "no GPU host matches a node_exporter host after the host map (e.g. {:?} vs {:?}): fabric and storage will not join the GPUs' nodes",
                        gh.iter().next().map(String::as_str).unwrap_or(""),
                        nh.iter().next().map(String::as_str).unwrap_or("")
                    ))
                    .fix("set [prometheus.host_map] (strip_port, strip_domain, regex, names) so both map to the node name")
                    .data(data);
                }
            }
        }
    }
    match server_time {
        Some(s) => clock(&mut out, s, local, "Prometheus's time()", 0.0),
        None => {
            out.warn("clock", "time() gave no time: skew not measured");
        }
    }
    out.checks
}

fn names_of(missing: &[&&(&str, &str, &str)]) -> String {
    missing.iter().map(|n| n.1).collect::<Vec<_>>().join(", ")
}

fn disables(missing: &[&&(&str, &str, &str)]) -> String {
    missing.iter().map(|n| format!("{} (disables {})", n.1, n.2)).collect::<Vec<_>>().join("; ")
}

// ------------------------------------------------------------------------------------- NVML

async fn nvml_checks(t: Duration) -> Vec<Check> {
    let mut out = Out::new("nvml", "libnvidia-ml.so.1");
    let cfg = k_nvml_config();
    let read = tokio::task::spawn_blocking(move || {
        crate::backend::nvml::Reader::open(&cfg).map(|mut r| {
            let s = r.read();
            (s.gpus.len(), s.driver.map(|d| d.to_string()), s.cuda.map(|c| c.to_string()))
        })
    });
    match within(t, read).await {
        Some(Ok(Ok((n, driver, cuda)))) => {
            out.ok(
                "gpus",
                format!(
                    "{n} GPUs, driver {}, CUDA {}",
                    driver.as_deref().unwrap_or("?"),
                    cuda.as_deref().unwrap_or("?")
                ),
            )
            .data(json!({"gpus": n, "driver": driver, "cuda": cuda}));
        }
        Some(Ok(Err(e))) => {
            out.fail("gpus", e.to_string())
                .fix("run on a GPU host with the NVIDIA driver (libnvidia-ml.so.1), or drop --local");
        }
        Some(Err(e)) => {
            out.fail("gpus", format!("the NVML read failed: {e}"));
        }
        None => {
            out.fail("gpus", format!("NVML did not answer within {} (a hung driver?)", secs(t)));
        }
    }
    out.checks
}

fn k_nvml_config() -> crate::backend::nvml::NvmlConfig {
    crate::backend::nvml::NvmlConfig { explicit: true, ..Default::default() }
}

// ------------------------------------------------------------------------------------ audit

/// Whether a file can be created in `dir` (tried with a file removed at once).
fn dir_writable(dir: &std::path::Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".gpuplane-doctor-{}", std::process::id()));
    std::fs::OpenOptions::new().write(true).create_new(true).open(&probe)?;
    std::fs::remove_file(&probe)
}

fn audit_checks(config: &Config) -> Vec<Check> {
    let log = super::audit_log(config);
    let path = log.path.clone();
    let mut out = Out::new("audit", path.display().to_string());
    let ro = if config.readonly { " (read-only: no action will write it)" } else { "" };
    let fix_perm =
        format!("make {} writable by this user, or point --audit-log at a writable path", path.display());
    if path.exists() {
        match std::fs::OpenOptions::new().append(true).open(&path) {
            Ok(_) => match crate::audit::verify(&path) {
                Ok(r) => match r.problem {
                    None => {
                        out.ok("log", format!("writable; {} records, hash chain intact{ro}", r.records))
                            .data(json!({"records": r.records}));
                    }
                    Some(p) => {
                        out.fail("log", format!("writable, but the hash chain is broken: {p} ({} records verified before it)", r.records))
                            .fix("investigate (`gpuplane audit verify`); keep the file as evidence and start a new log with --audit-log");
                    }
                },
                Err(e) => {
                    out.fail("log", format!("cannot be read: {e}")).fix(fix_perm);
                }
            },
            Err(e) => {
                out.fail(
                    "log",
                    format!("cannot be opened for appending: {e}: every action would be refused"),
                )
                .fix(fix_perm);
            }
        }
    } else {
        // The first action creates it (and its directories): find where creation starts.
        let mut dir = path.parent().map(|p| p.to_path_buf()).unwrap_or_default();
        if dir.as_os_str().is_empty() {
            dir = std::path::PathBuf::from(".");
        }
        while !dir.exists() {
            match dir.parent() {
                Some(p) if !p.as_os_str().is_empty() => dir = p.to_path_buf(),
                _ => break,
            }
        }
        match dir_writable(&dir) {
            Ok(()) => {
                out.ok(
                    "log",
                    format!(
                        "does not exist yet; {} is writable, so the first action creates it{ro}",
                        dir.display()
                    ),
                );
            }
            Err(e) => {
                out.fail(
                    "log",
                    format!(
                        "does not exist and cannot be created ({}: {e}): every action would be refused",
                        dir.display()
                    ),
                )
                .fix(fix_perm);
            }
        }
    }
    witness_checks(&mut out, &log);
    out.checks
}

/// The witnesses of the log's head, each asked whether it can take one (without sending it):
/// a witness that fails fails on every append, silently but for the log file.
fn witness_checks(out: &mut Out, log: &crate::audit::AuditLog) {
    if !log.witness.any() {
        out.warn("witness", "none configured: a log whose last records were cut off cannot be told apart")
            .fix("configure `[audit] syslog`, `witness_command` or `witness_url`");
        return;
    }
    // The probe the Sources view shows (one wording of each witness and its fix).
    for s in crate::store::status::probe_witnesses(log) {
        match (&s.error, &s.fix) {
            (Some(e), fix) => {
                let c = out.warn(&s.name, e.clone());
                if let Some(f) = fix {
                    c.fix(f.clone());
                }
            }
            (None, _) => {
                let text = match &s.note {
                    Some(n) => format!("{} ({n})", s.path),
                    None => s.path.clone(),
                };
                out.ok(&s.name, text);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(status: Status) -> Check {
        Check {
            source: "slurm",
            target: "http://x".into(),
            check: "api".into(),
            status,
            detail: "d".into(),
            fix: None,
            data: Value::Null,
        }
    }

    #[test]
    fn the_exit_status_is_the_worst_check() {
        assert_eq!(Report::new(vec![]).exit, 0);
        assert_eq!(Report::new(vec![check(Status::Ok), check(Status::Ok)]).exit, 0);
        let r = Report::new(vec![check(Status::Ok), check(Status::Warn)]);
        assert_eq!((r.exit, r.ok, r.warn, r.fail, r.status), (1, 1, 1, 0, Status::Warn));
        assert_eq!(Report::new(vec![check(Status::Fail), check(Status::Warn)]).exit, 2);
    }

    #[test]
    fn the_table_has_one_line_per_check_with_its_fix() {
        let mut out = Out::new("slurm", "http://h:1");
        out.ok("dns", "fine");
        out.warn("permission/drain", "no\x1b[31m").fix("sacctmgr …");
        let t = Report::new(out.checks).table();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "slurm http://h:1");
        assert!(lines[1].starts_with("  OK    slurm  dns ") && lines[1].ends_with("fine"), "{t}");
        assert!(
            lines[2].starts_with("  WARN  slurm  permission/drain  no")
                && lines[2].ends_with("fix: sacctmgr …"),
            "{t}"
        );
        assert!(!t.contains('\x1b'), "text from servers is sanitised: {t:?}");
        assert_eq!(lines[3], "1 OK, 1 WARN, 0 FAIL: exit 1");
    }

    #[test]
    fn skew_thresholds() {
        let mut out = Out::new("x", "");
        clock(&mut out, 1000.0, 1000.4, "t", 0.0);
        clock(&mut out, 1010.0, 1000.0, "t", 0.0);
        clock(&mut out, 1000.0, 2000.0, "t", 0.0);
        let s: Vec<Status> = out.checks.iter().map(|c| c.status).collect();
        assert_eq!(s, [Status::Ok, Status::Warn, Status::Fail]);
        assert!(out.checks[1].detail.contains("10s ahead"), "{}", out.checks[1].detail);
        assert!(out.checks[2].detail.contains("16m 40s behind"), "{}", out.checks[2].detail);
    }

    #[test]
    fn diag_time_of_both_shapes() {
        assert_eq!(diag_time(br#"{"statistics":{"req_time":1796145269}}"#), Some(1_796_145_269.0));
        assert_eq!(
            diag_time(br#"{"statistics":{"req_time":{"set":true,"infinite":false,"number":1796145269}}}"#),
            Some(1_796_145_269.0)
        );
        assert_eq!(diag_time(b"{}"), None);
        assert_eq!(diag_time(b"<html>"), None);
    }

    #[test]
    fn tls_errors_are_told_apart() {
        assert!(is_tls_error("invalid peer certificate: UnknownIssuer"));
        assert!(!is_tls_error("Connection refused (os error 111)"));
    }
}
