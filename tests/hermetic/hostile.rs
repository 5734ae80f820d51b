//! Hostile servers: a body over its source's limit (declared, or endless), a JSON nesting bomb,
//! a 10 MB label value, 1,000,000 series in one Prometheus answer. Each is refused with an
//! error that names the source and the limit, memory stays bounded (the bodies are generated
//! as they are sent and refused early, see docs/performance.md for peak RSS per case), and the
//! same client or backend reads a normal answer right after. No live services: the hostile
//! server is an in-process hyper server.

use bytes::Bytes;
use gpuplane::backend::prom::{PromClient, PromConfig};
use gpuplane::backend::slurm::{ClientConfig, Poller, SlurmConfig, TokenSource};
use gpuplane::model::protocol::{SourceStatus, Update};
use gpuplane::state::ClusterState;
use gpuplane::tui::app::{App, Msg};
use gpuplane::tui::keymap::Keymap;
use gpuplane::tui::theme::Theme;
use gpuplane::tui::widgets::Glyphs;
use http_body_util::{BodyExt, StreamBody, combinators::BoxBody};
use hyper::body::Frame;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common;
use crate::slurm_support;

// ------------------------------------------------------------------ the hostile server

type Body = BoxBody<Bytes, std::io::Error>;
type Chunks = Box<dyn Iterator<Item = Bytes> + Send>;

/// What a path answers.
#[derive(Clone)]
enum Reply {
    /// 200 with this body.
    Ok(Bytes),
    /// This status and body.
    Status(u16, Bytes),
    /// 200, chunked, this unit repeated forever.
    Endless(Bytes),
    /// 200 declaring this `Content-Length`, then sending zeros forever.
    Declared(u64),
    /// 200, chunked, the chunks a generator makes (generated as they are sent).
    Generated(Arc<dyn Fn() -> Chunks + Send + Sync>),
}

#[derive(Clone, Default)]
struct Routes(Arc<Mutex<HashMap<String, Reply>>>);

impl Routes {
    fn set(&self, path: &str, r: Reply) {
        self.0.lock().unwrap().insert(path.to_string(), r);
    }
}

fn full(b: Bytes) -> Body {
    http_body_util::Full::new(b).map_err(|never| match never {}).boxed()
}

fn stream(chunks: impl Iterator<Item = Bytes> + Send + Sync + 'static) -> Body {
    let s = futures::stream::iter(chunks.map(|c| Ok::<_, std::io::Error>(Frame::data(c))));
    BodyExt::boxed(StreamBody::new(s))
}

fn answer(r: Option<Reply>) -> hyper::Response<Body> {
    let json = |b: hyper::http::response::Builder| b.header("content-type", "application/json");
    let b = hyper::Response::builder();
    match r {
        None => b.status(404).body(full(Bytes::from_static(b"not here"))),
        Some(Reply::Ok(body)) => json(b).body(full(body)),
        Some(Reply::Status(s, body)) => json(b.status(s)).body(full(body)),
        Some(Reply::Endless(unit)) => json(b).body(stream(std::iter::repeat(unit))),
        Some(Reply::Declared(n)) => json(b)
            .header("content-length", n.to_string())
            .body(stream(std::iter::repeat(Bytes::from(vec![b'0'; 64 << 10])))),
        Some(Reply::Generated(g)) => {
            let it = Mutex::new(g());
            json(b).body(stream(std::iter::from_fn(move || it.lock().unwrap().next())))
        }
    }
    .unwrap()
}

/// Serves `routes` (matched on the path, the query ignored) on 127.0.0.1 until the test ends.
async fn serve(routes: Routes) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((s, _)) = l.accept().await else { return };
            let routes = routes.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let r = routes.0.lock().unwrap().get(req.uri().path()).cloned();
                    async move { Ok::<_, std::convert::Infallible>(answer(r)) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    url
}

/// `depth` nested arrays inside `before` … `after`.
fn bomb(before: &str, depth: usize, after: &str) -> Bytes {
    let mut b = before.as_bytes().to_vec();
    b.extend(std::iter::repeat_n(b'[', depth));
    b.extend(std::iter::repeat_n(b']', depth));
    b.extend_from_slice(after.as_bytes());
    Bytes::from(b)
}

fn fixture(p: &str) -> Bytes {
    let path = format!("{}/tests/fixtures/{p}", env!("CARGO_MANIFEST_DIR"));
    Bytes::from(std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
}

// ------------------------------------------------------------------ Slurm

const NODES: &str = "/slurm/v0.0.42/nodes/";
const JOBS: &str = "/slurm/v0.0.42/jobs/";

/// A 24.11 slurmrestd answering the recorded nodes, partitions and jobs.
async fn slurmrestd() -> (Routes, String) {
    let r = Routes::default();
    r.set("/slurm/v0.0.43/ping/", Reply::Status(404, Bytes::new()));
    r.set("/slurm/v0.0.42/ping/", Reply::Ok(fixture("slurm/v0.0.42/02_ping.json")));
    r.set(NODES, Reply::Ok(fixture("slurm/v0.0.42/35_nodes_busy.json")));
    r.set("/slurm/v0.0.42/partitions/", Reply::Ok(fixture("slurm/v0.0.42/36_partitions_busy.json")));
    r.set(JOBS, Reply::Ok(fixture("slurm/v0.0.42/24_jobs.json")));
    r.set("/slurm/v0.0.42/jobs/state/", Reply::Ok(fixture("slurm/v0.0.42/25_jobs_state.json")));
    r.set("/slurmdb/v0.0.42/qos/", Reply::Status(404, Bytes::new()));
    let url = serve(r.clone()).await;
    (r, url)
}

/// Limits small enough to reach quickly: 1 MiB read whole, 4 MiB of job list.
fn slurm_cfg(url: &str) -> SlurmConfig {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut c = SlurmConfig::new(ClientConfig {
        url: url.into(),
        user: Some("alice".into()),
        token: TokenSource::Static("tok".into()),
        ca_file: None,
        timeout: Duration::from_secs(20),
        version: None,
    });
    c.max_body = 1 << 20;
    c.max_job_list = 4 << 20;
    c
}

/// What a fresh poller reads from the normal server: (nodes, jobs).
async fn normal_counts(url: &str) -> (usize, usize) {
    let mut p = Poller::new(slurm_cfg(url)).unwrap();
    let mut s = ClusterState::new(Default::default(), Default::default());
    slurm_support::refresh_into(&mut p, &mut s).await.unwrap();
    (s.nodes.len(), s.jobs.len())
}

/// `reply` on `path` is refused with an error containing each of `want` (`None`: the answer
/// may also be read, see the nesting bombs); then, with the recorded answer back on `path`,
/// the same poller reads the cluster as a fresh one does.
async fn slurm_refuses(path: &str, reply: Reply, want: Option<&[&str]>) {
    let (routes, url) = slurmrestd().await;
    let normal = routes.0.lock().unwrap()[path].clone();
    let counts = normal_counts(&url).await;
    assert_eq!(counts.0, 18);
    routes.set(path, reply);
    let mut p = Poller::new(slurm_cfg(&url)).unwrap();
    let mut s = ClusterState::new(Default::default(), Default::default());
    let r = slurm_support::refresh_into(&mut p, &mut s).await;
    match (want, r) {
        (Some(want), r) => {
            let e = r.unwrap_err().to_string();
            for w in want {
                assert!(e.contains(w), "{e:?} lacks {w:?}");
            }
        }
        (None, Err(e)) => assert!(e.to_string().contains(&format!("{path}: malformed response")), "{e}"),
        (None, Ok(_)) => {}
    }
    routes.set(path, normal);
    slurm_support::refresh_into(&mut p, &mut s).await.expect("a normal answer after the hostile one");
    assert_eq!((s.nodes.len(), s.jobs.len()), counts, "the cluster is read after the refusal");
}

#[tokio::test]
async fn slurm_a_body_declared_over_the_limit_is_refused_unread() {
    slurm_refuses(
        NODES,
        Reply::Declared(10 << 30),
        Some(&["slurmrestd: /slurm/v0.0.42/nodes/: answer of 10 GiB refused, over the limit of 1 MiB ([slurm] max_body)"]),
    )
    .await;
}

#[tokio::test]
async fn slurm_an_endless_body_is_refused_at_the_limit() {
    slurm_refuses(
        NODES,
        Reply::Endless(Bytes::from_static(b"{\"nodes\":[{\"name\":\"x\"},")),
        Some(&["slurmrestd: /slurm/v0.0.42/nodes/: answer refused after 1 MiB (the limit, [slurm] max_body): larger, or endless"]),
    )
    .await;
}

#[tokio::test]
async fn slurm_an_endless_job_list_is_refused_at_its_limit() {
    let job = r#"{"job_id":7,"name":"x","job_state":["PENDING"]},"#;
    let mut head = br#"{"jobs":["#.to_vec();
    head.extend(job.repeat(2000).as_bytes());
    slurm_refuses(
        JOBS,
        Reply::Endless(Bytes::from(head)),
        Some(&[
            "slurmrestd: /slurm/v0.0.42/jobs/: answer refused after 4 MiB (the limit, [slurm] max_job_list)",
        ]),
    )
    .await;
}

// Nesting bombs: serde's readers refuse JSON nested past 128 levels; the hand-written Slurm
// readers (the job list's splitter and member scanner, the value readers) count depth without
// recursing, so a bomb where they skip a value is skipped, not refused (`{"nodes":[[[…]]]}`
// reads as one node without a name). Either way the stack holds, memory is bounded by the
// body limit, and the next normal answer reads.

#[tokio::test]
async fn slurm_a_nesting_bomb_in_the_nodes_holds() {
    slurm_refuses(NODES, Reply::Ok(bomb(r#"{"nodes":"#, 500_000, "}")), None).await;
}

#[tokio::test]
async fn slurm_a_nesting_bomb_in_a_streamed_job_list_holds() {
    // Past the streaming threshold, into the hand-written splitter and member scanner.
    let job = r#"{"job_id":7,"name":"x","job_state":["PENDING"]},"#;
    let before = format!(r#"{{"jobs":[{}{{"job_id":8,"name":"#, job.repeat(2000));
    slurm_refuses(JOBS, Reply::Ok(bomb(&before, 1_000_000, "}]}")), None).await;
}

#[tokio::test]
async fn slurm_a_nesting_bomb_in_the_job_list_envelope_holds() {
    // Outside the jobs array, in a body small enough to be read whole.
    slurm_refuses(JOBS, Reply::Ok(bomb(r#"{"meta":"#, 20_000, r#","jobs":[]}"#)), None).await;
}

/// The next status update, and the update itself.
async fn next_status(rx: &mut tokio::sync::mpsc::Receiver<Update>) -> (Update, SourceStatus) {
    loop {
        let u = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await.unwrap().unwrap();
        if let Update::Status(st) = &u {
            let st = st.clone();
            return (u, st);
        }
    }
}

/// The next status that has (or has not) an error, applying every update on the way.
async fn status_with(
    rx: &mut tokio::sync::mpsc::Receiver<Update>,
    s: &mut ClusterState,
    want_error: bool,
) -> SourceStatus {
    loop {
        let u = tokio::time::timeout(Duration::from_secs(60), rx.recv()).await.unwrap().unwrap();
        let st = match &u {
            Update::Status(st) if st.ok_at.is_some() || st.error.is_some() => Some(st.clone()),
            _ => None,
        };
        s.apply(u);
        if let Some(st) = st
            && st.error.is_some() == want_error
        {
            return st;
        }
    }
}

/// The backend keeps running through a refusal: the status names the source and the limit,
/// the last good data stays (stale, its last success remembered), and the next normal answer
/// clears the error.
#[tokio::test]
async fn slurm_backend_shows_the_refusal_as_stale_and_recovers() {
    let (routes, url) = slurmrestd().await;
    let mut cfg = slurm_cfg(&url);
    cfg.refresh = Duration::from_millis(200);
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(gpuplane::backend::slurm::run(cfg, tx, Default::default(), cancel.clone()));
    common::pin_utc();
    let mut app = App::new(
        ClusterState::new(Default::default(), Default::default()),
        Keymap::builtin("default"),
        Theme::builtin("dark"),
        Glyphs::UNICODE,
        "alice".into(),
    );
    // A first good refresh.
    loop {
        let u = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await.unwrap().unwrap();
        let done = matches!(&u, Update::Status(st) if st.error.is_none() && st.ok_at.is_some());
        app.update(Msg::Update(u));
        if done {
            break;
        }
    }
    assert_eq!(app.state().nodes.len(), 18);
    routes.set(NODES, Reply::Endless(Bytes::from_static(b"[[[[[[[[")));
    let err = loop {
        let (u, st) = next_status(&mut rx).await;
        app.update(Msg::Update(u));
        if let Some(e) = st.error {
            break e;
        }
    };
    assert!(err.contains("slurmrestd: /slurm/v0.0.42/nodes/: answer refused after 1 MiB"), "{err}");
    assert!(err.contains("[slurm] max_body"), "{err}");
    let src = app.state().sources.iter().find(|x| x.name == "slurm").unwrap();
    assert!(src.ok_at.is_some() && src.error.as_deref() == Some(err.as_str()), "stale: {src:?}");
    assert_eq!(app.state().nodes.len(), 18, "the last good nodes stay on screen");
    // The console shows it: the header marks the source stale, the Sources view says why.
    common::typed(&mut app, ":sources\r");
    let screen = common::render(&mut app, 200, 40);
    assert!(screen.contains("slurm stale"), "{screen}");
    assert!(screen.contains("answer refused after 1 MiB"), "{screen}");
    routes.set(NODES, Reply::Ok(fixture("slurm/v0.0.42/35_nodes_busy.json")));
    loop {
        let (u, st) = next_status(&mut rx).await;
        app.update(Msg::Update(u));
        if st.error.is_none() {
            break;
        }
    }
    assert!(app.state().sources.iter().find(|x| x.name == "slurm").unwrap().error.is_none(), "recovered");
    assert!(!task.is_finished());
    cancel.cancel();
    task.await.unwrap();
}

// ------------------------------------------------------------------ Prometheus

const QUERY: &str = "/api/v1/query";

fn vector(series: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = series.collect();
    format!(r#"{{"status":"success","data":{{"resultType":"vector","result":[{}]}}}}"#, items.join(","))
}

fn series(host: &str, gpu: u32, v: u32) -> String {
    format!(r#"{{"metric":{{"Hostname":"{host}","gpu":"{gpu}"}},"value":[1700000000,"{v}"]}}"#)
}

/// `n` series, generated as they are sent (1,000 a chunk).
fn many_series(n: usize) -> Reply {
    Reply::Generated(Arc::new(move || {
        let head = Bytes::from_static(br#"{"status":"success","data":{"resultType":"vector","result":["#);
        let body = (0..n.div_ceil(1000)).map(move |c| {
            let lo = c * 1000;
            let s: Vec<String> = (lo..(lo + 1000).min(n))
                .map(|i| series(&format!("gpu-{:07}", i / 8), (i % 8) as u32, 50))
                .collect();
            let sep = if c == 0 { "" } else { "," };
            Bytes::from(format!("{sep}{}", s.join(",")))
        });
        Box::new(std::iter::once(head).chain(body).chain(std::iter::once(Bytes::from_static(b"]}}"))))
    }))
}

async fn prometheus(reply: Reply) -> (Routes, PromClient) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let r = Routes::default();
    r.set(QUERY, reply);
    let url = serve(r.clone()).await;
    let mut cfg = PromConfig::new(&url);
    cfg.timeout = Duration::from_secs(30);
    cfg.max_body = 64 << 20;
    (r, PromClient::new(&cfg).unwrap())
}

/// `reply` is refused with an error containing each of `want`; the same client then reads a
/// normal answer.
async fn prom_refuses(reply: Reply, want: &[&str]) {
    let (routes, c) = prometheus(reply).await;
    let e = match c.query("up", None).await {
        Ok(body) => body.parse().map(|r| r.results.len()).unwrap_err().to_string(),
        Err(e) => e.to_string(),
    };
    for w in want {
        assert!(e.contains(w), "{e:?} lacks {w:?}");
    }
    routes.set(QUERY, Reply::Ok(Bytes::from(vector((0..8).map(|g| series("gpu-1", g, 7))))));
    let body = c.query("up", None).await.expect("a normal answer after the hostile one");
    let r = body.parse().unwrap();
    assert_eq!(r.results.len(), 8);
    assert_eq!(r.results.iter().next().unwrap().label("Hostname"), Some("gpu-1"));
}

#[tokio::test]
async fn prom_a_million_series_are_refused_at_the_series_limit() {
    prom_refuses(
        many_series(1_000_000),
        &["/api/v1/query: answer refused: more than 500000 series (the limit, [prometheus] max_series)"],
    )
    .await;
}

#[tokio::test]
async fn prom_a_ten_megabyte_label_value_is_refused() {
    let g = Reply::Generated(Arc::new(|| {
        let head = Bytes::from_static(
            br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"Hostname":""#,
        );
        let tail = Bytes::from_static(br#"","gpu":"0"},"value":[1700000000,"1"]}]}}"#);
        let value = std::iter::repeat_n(Bytes::from(vec![b'a'; 1 << 20]), 10);
        Box::new(std::iter::once(head).chain(value).chain(std::iter::once(tail)))
    }));
    prom_refuses(
        g,
        &["answer refused: a string (label value) longer than 64 KiB (the limit, [prometheus] max_label)"],
    )
    .await;
}

#[tokio::test]
async fn prom_an_endless_body_is_refused_at_the_limit() {
    // Samples without labels: no series counted, no long string, just bytes.
    let head = Bytes::from_static(br#"{"status":"success","data":{"resultType":"vector","result":["#);
    let unit = Bytes::from(r#"{"value":[1700000000,"1"]},"#.repeat(1000));
    let g = Reply::Generated(Arc::new(move || {
        Box::new(std::iter::once(head.clone()).chain(std::iter::repeat(unit.clone())))
    }));
    prom_refuses(
        g,
        &["/api/v1/query: answer refused after 64 MiB (the limit, [prometheus] max_body): larger, or endless"],
    )
    .await;
}

#[tokio::test]
async fn prom_a_body_declared_over_the_limit_is_refused_unread() {
    prom_refuses(
        Reply::Declared(1 << 40),
        &["/api/v1/query: answer of 1024 GiB refused, over the limit of 64 MiB ([prometheus] max_body)"],
    )
    .await;
}

/// Nesting bombs: in a typed place serde refuses the first wrong type; in an unknown key
/// serde_json skips the value without recursing. Either way the stack holds and the same
/// client reads the next answer.
#[tokio::test]
async fn prom_nesting_bombs_hold() {
    let typed = bomb(
        r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":"#,
        1_000_000,
        "}]}}",
    );
    let (routes, c) = prometheus(Reply::Ok(typed)).await;
    let e = c.query("up", None).await.unwrap().parse().map(|r| r.results.len()).unwrap_err().to_string();
    assert!(e.starts_with("unreadable answer: invalid type: sequence"), "{e}");
    let unknown =
        bomb(r#"{"status":"success","data":{"resultType":"vector","result":[],"extra":"#, 1_000_000, "}}");
    routes.set(QUERY, Reply::Ok(unknown));
    assert_eq!(c.query("up", None).await.unwrap().parse().map(|r| r.results.len()), Ok(0));
    routes.set(QUERY, Reply::Ok(Bytes::from(vector((0..8).map(|g| series("gpu-1", g, 7))))));
    assert_eq!(c.query("up", None).await.unwrap().parse().unwrap().results.len(), 8);
}

/// The backend: every query refused → the source is stale with the reason (not "partial
/// data"), and it recovers by itself.
#[tokio::test]
async fn prom_backend_shows_the_refusal_as_stale_and_recovers() {
    let (routes, _) = prometheus(Reply::Ok(Bytes::from(vector((0..8).map(|g| series("gpu-1", g, 7)))))).await;
    let url = {
        // A second server on the same routes, for the backend's own config.
        serve(routes.clone()).await
    };
    let mut cfg = PromConfig::new(&url);
    cfg.refresh = Duration::from_secs(1);
    cfg.backfill = Duration::ZERO;
    cfg.max_series = 1000;
    routes.set(
        "/api/v1/query_range",
        Reply::Ok(Bytes::from(r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#)),
    );
    let (tx, mut rx) = tokio::sync::mpsc::channel(256);
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(gpuplane::backend::prom::run(cfg, tx, cancel.clone()));
    let mut s = ClusterState::new(Default::default(), Default::default());
    status_with(&mut rx, &mut s, false).await;
    routes.set(QUERY, many_series(5000));
    let st = status_with(&mut rx, &mut s, true).await;
    let e = st.error.unwrap();
    assert!(e.starts_with("prometheus: "), "{e}");
    assert!(e.contains("answer refused: more than 1000 series (the limit, [prometheus] max_series)"), "{e}");
    assert!(!e.contains("partial data"), "every answer refused is no data at all: {e}");
    assert!(st.ok_at.is_none(), "no new success: the last one stays the source's age");
    routes.set(QUERY, Reply::Ok(Bytes::from(vector((0..8).map(|g| series("gpu-1", g, 7))))));
    status_with(&mut rx, &mut s, false).await;
    assert!(!task.is_finished());
    cancel.cancel();
    task.await.unwrap();
}

// ------------------------------------------------------------------ Kubernetes

async fn kube_client(reply: Reply, path: &str, limit: u64) -> (Routes, kube::Client) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let r = Routes::default();
    r.set(path, reply);
    let url = serve(r.clone()).await;
    let config = kube::Config::new(url.parse().unwrap());
    (r, gpuplane::backend::kube::bounded::client(config, limit).unwrap())
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut s = e.source();
    while let Some(x) = s {
        out.push_str(" / ");
        out.push_str(&x.to_string());
        s = x.source();
    }
    out
}

const NODE_LIST: &str = r#"{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"gpu-1"}}]}"#;

async fn kube_list_refuses(reply: Reply, want: &str) {
    use k8s_openapi::api::core::v1::Node;
    let (routes, client) = kube_client(reply, "/api/v1/nodes", 1 << 20).await;
    let api: kube::Api<Node> = kube::Api::all(client);
    let e = api.list(&Default::default()).await.unwrap_err();
    let text = chain(&e);
    assert!(text.contains(want), "{text}");
    routes.set("/api/v1/nodes", Reply::Ok(Bytes::from_static(NODE_LIST.as_bytes())));
    let l = api.list(&Default::default()).await.expect("a normal answer after the hostile one");
    assert_eq!(l.items[0].metadata.name.as_deref(), Some("gpu-1"));
}

#[tokio::test]
async fn kube_a_list_declared_over_the_limit_is_refused() {
    kube_list_refuses(
        Reply::Declared(5 << 30),
        "Kubernetes API answer of 5 GiB refused, over the limit of 1 MiB ([kube] max_body)",
    )
    .await;
}

#[tokio::test]
async fn kube_an_endless_list_is_refused_at_the_limit() {
    kube_list_refuses(
        Reply::Endless(Bytes::from_static(br#"{"metadata":{"name":"gpu-1"}},"#)),
        "Kubernetes API answer refused after 1 MiB (the limit, [kube] max_body): larger, or endless",
    )
    .await;
}

#[tokio::test]
async fn kube_a_nesting_bomb_is_refused_by_the_decoder() {
    kube_list_refuses(
        Reply::Ok(bomb(r#"{"kind":"NodeList","items":[],"extra":"#, 100_000, "}")),
        "recursion limit exceeded",
    )
    .await;
}

/// A watch event (one line) over the limit ends the watch with the reason; short events on a
/// long watch do not count against it.
#[tokio::test]
async fn kube_a_watch_event_over_the_limit_is_refused() {
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::Node;
    let event = r#"{"type":"ADDED","object":{"kind":"Node","apiVersion":"v1","metadata":{"name":"gpu-1","resourceVersion":"2"}}}"#;
    // 3 MiB of short events (more than the limit in all), then one endless line.
    let short = Bytes::from(format!("{event}\n"));
    let n = (3 << 20) / short.len();
    let g = Reply::Generated(Arc::new(move || {
        let short = short.clone();
        let endless =
            std::iter::once(Bytes::from_static(br#"{"type":"ADDED","object":{"metadata":{"name":""#))
                .chain(std::iter::repeat(Bytes::from(vec![b'a'; 64 << 10])));
        Box::new(std::iter::repeat_n(short, n).chain(endless))
    }));
    let (_routes, client) = kube_client(g, "/api/v1/nodes", 1 << 20).await;
    let api: kube::Api<Node> = kube::Api::all(client);
    let mut events = api.watch(&Default::default(), "1").await.unwrap().boxed();
    let mut ok = 0;
    let err = loop {
        match tokio::time::timeout(Duration::from_secs(60), events.next()).await.unwrap() {
            Some(Ok(_)) => ok += 1,
            Some(Err(e)) => break chain(&e),
            None => panic!("the watch ended without an error after {ok} events"),
        }
    };
    assert_eq!(ok, n, "every short event was read");
    assert!(
        err.contains("Kubernetes watch event refused: longer than 1 MiB (the limit, [kube] max_body)"),
        "{err}"
    );
}
