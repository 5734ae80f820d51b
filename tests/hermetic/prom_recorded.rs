//! Prometheus backend against recorded API responses (tests/fixtures/prometheus/): every
//! response shape parses, errors and warnings come through verbatim, answers map to the right
//! node/GPU/port, and the client reports transport and HTTP failures as stated (a tiny local
//! HTTP server replays the recorded bodies with their recorded status codes). A closed port
//! stands for a Prometheus that is not running; the live server is tests/live/prom_live.rs.

use crate::common;

use gpuplane::backend::prom::api::{self, BodyError, ResultType};
use gpuplane::backend::prom::client::Body;
use gpuplane::backend::prom::map::{Memory, Refresh};
use gpuplane::backend::prom::queries::{Family, PER_REFRESH, schedule};
use gpuplane::backend::prom::{PromClient, PromConfig, PromError, map_refresh};
use gpuplane::model::PortState;
use std::path::Path;

fn fixture(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/prometheus").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn cfg() -> PromConfig {
    PromConfig::new("http://127.0.0.1:9")
}

#[test]
fn vector_matrix_scalar_string_and_empty_results_parse() {
    let b = fixture("query_avg_util_by_host.json");
    let r = api::parse(&b).unwrap();
    assert_eq!(r.results.result_type, ResultType::Vector);
    assert_eq!(r.results.len(), 16);
    let hosts: Vec<_> = r.results.iter().filter_map(|s| s.label("Hostname")).collect();
    assert!(hosts.contains(&"gpu-001") && hosts.contains(&"gpu-016"), "{hosts:?}");
    assert!(r.results.iter().all(|s| s.points.len() == 1 && (0.0..=100.0).contains(&s.points[0].v)));

    let b = fixture("query_range_hot_gpu_temp.json");
    let r = api::parse(&b).unwrap();
    assert_eq!(r.results.result_type, ResultType::Matrix);
    let s = r.results.iter().next().unwrap();
    assert_eq!(s.points.len(), 481);
    assert_eq!((s.points[0].v, s.label("gpu")), (75.0, Some("4")));
    assert!(s.points.windows(2).all(|w| w[1].t - w[0].t == 15.0));

    let b = fixture("query_scalar.json");
    let r = api::parse(&b).unwrap();
    assert_eq!((r.results.result_type, r.results.scalar()), (ResultType::Scalar, Some(32.0)));

    let b = fixture("query_string.json");
    let r = api::parse(&b).unwrap();
    assert_eq!(r.results.result_type, ResultType::String);
    assert_eq!(r.results.text.as_deref(), Some("gpuplane"));

    let b = fixture("query_count_scalar_like.json");
    let r = api::parse(&b).unwrap();
    assert_eq!(r.results.scalar(), Some(128.0));
    assert!(r.results.iter().next().unwrap().labels.is_empty());

    for f in ["query_empty.json", "query_range_empty.json"] {
        let b = fixture(f);
        assert!(api::parse(&b).unwrap().results.is_empty(), "{f}");
    }
}

#[test]
fn every_recorded_error_comes_back_verbatim() {
    let cases = [
        (
            "error_syntax.json",
            "bad_data",
            "invalid parameter \"query\": 1:18: parse error: unexpected \"(\" in grouping opts, expected \",\" or \")\"",
        ),
        ("error_missing_query.json", "bad_data", ""),
        ("error_bad_time.json", "bad_data", ""),
        (
            "error_range_too_many_points.json",
            "bad_data",
            "exceeded maximum resolution of 11,000 points per timeseries",
        ),
        ("error_range_end_before_start.json", "bad_data", ""),
        ("error_execution_many_to_many.json", "execution", "many-to-many matching not allowed"),
        (
            "error_duplicate_labelset.json",
            "execution",
            "vector cannot contain metrics with the same labelset",
        ),
    ];
    for (file, ty, text) in cases {
        let b = fixture(file);
        let raw: serde_json::Value = serde_json::from_slice(&b).unwrap();
        match api::parse(&b) {
            Err(BodyError::Api { error_type, error, .. }) => {
                assert_eq!(error_type, ty, "{file}");
                assert_eq!(error, raw["error"].as_str().unwrap(), "{file}: not verbatim");
                assert!(error.contains(text), "{file}: {error}");
            }
            other => panic!("{file}: {other:?}"),
        }
    }
    let b = fixture("error_unknown_endpoint.json");
    assert!(matches!(api::parse(&b), Err(BodyError::NotJson(_))));
    let b = fixture("synthetic_error_with_warnings.json");
    assert_eq!(
        api::parse(&b).unwrap_err(),
        BodyError::Api {
            error_type: "timeout".into(),
            error: "query timed out in expression evaluation".into(),
            warnings: vec!["remote store partial response".into()]
        }
    );
}

#[test]
fn warnings_and_infos_are_kept_and_shown_in_the_status() {
    let b = fixture("synthetic_warnings.json");
    let r = api::parse(&b).unwrap();
    assert_eq!(r.warnings.len(), 1);
    assert!(r.infos[0].starts_with("PromQL info: metric might not be a counter"));
    let bodies = vec![(Family::GpuUtil, Ok(Body(b.clone())))];
    let out = map_refresh(&cfg(), &bodies, 1_795_959_344, &mut Memory::default());
    let text = out.problems().expect("warnings are shown");
    assert!(text.contains("warning: PromQL warning: encountered a mix of histograms and floats"), "{text}");
    assert!(text.contains("PromQL info: metric might not be a counter"), "{text}");
    assert_eq!(out.mapped.samples[0].gpus[0].util, Some(97));
}

#[test]
fn hostile_labels_and_bad_values_are_contained() {
    let b = fixture("synthetic_escapes.json");
    let r = api::parse(&b).unwrap();
    assert_eq!(r.results.len(), 3);
    let mut rf = Refresh::new();
    rf.add(&cfg(), Family::GpuUtil, &r.results);
    let m = rf.finish(1, true, &mut Memory::default());
    // +Inf and "garbage" are not numbers a GPU can have; a GPU index that is no number is dropped.
    assert!(m.samples.iter().all(|s| s.gpus.iter().all(|g| g.util.is_none())), "{:?}", m.samples);
    for s in &m.samples {
        assert!(!s.node.chars().any(|c| c.is_control() || c == '\u{202e}'), "{:?}", s.node);
    }
}

#[test]
fn answers_join_to_the_right_nodes_gpus_and_ports() {
    let c = cfg();
    let add = |rf: &mut Refresh, f, file: &str| {
        let b = fixture(file);
        let r = api::parse(&b).unwrap();
        rf.add(&c, f, &r.results);
    };
    let mut rf = Refresh::new();
    add(&mut rf, Family::GpuUtil, "query_gpu_util_node006.json");
    add(&mut rf, Family::XidLast, "query_xid_nonzero.json");
    add(&mut rf, Family::EccDbe, "query_ecc_dbe.json");
    add(&mut rf, Family::EccSbe, "query_empty.json");
    add(&mut rf, Family::GpuTemp, "query_hot_gpus.json");
    add(&mut rf, Family::IbSymbol, "query_ib_symbol_rate.json");
    add(&mut rf, Family::IbState, "query_empty.json");
    let mut mem = Memory::default();
    let m = rf.finish(1_795_959_344, true, &mut mem);
    let node = |n: &str| m.samples.iter().find(|s| s.node == n).unwrap_or_else(|| panic!("{n} missing"));
    let gpu = |n: &str, i: u8| *node(n).gpus.iter().find(|g| g.index == i).unwrap();

    // gpu-006: GPUs 0-1 belong to the notebook pod, the rest are free.
    let n6 = node("gpu-006");
    assert_eq!(n6.gpus.len(), 8);
    let pod = gpu("gpu-006", 0).job.unwrap().unwrap();
    assert_eq!(gpu("gpu-006", 1).job, Some(Some(pod)));
    assert_eq!(gpu("gpu-006", 5).job, Some(None));
    assert_eq!(n6.gpu_alloc, Some(2));
    let job = m.jobs_upsert.iter().find(|j| j.id == pod).unwrap();
    assert_eq!((job.name.as_str(), job.account.as_str(), job.gpus), ("jupyter-alice-0", "ml-research", 2));

    // XIDs: latest code per GPU; the ECC GPU carries its double-bit count.
    for g in 0..4 {
        assert_eq!(gpu("gpu-005", g).xid.map(|x| x.code), Some(43), "gpu-005/{g}");
    }
    assert_eq!(gpu("gpu-011", 6).xid.map(|x| x.code), Some(94));
    assert_eq!(gpu("gpu-011", 6).ecc.map(|e| e.dbe), Some(2));
    assert_eq!(
        gpu("gpu-006", 0).ecc.map(|e| (e.sbe, e.dbe)),
        Some((0, 0)),
        "absent from a sparse answer = 0"
    );
    let t = gpu("gpu-008", 4).temp_c.unwrap();
    assert!((86..=90).contains(&t), "{t}");

    // The flapping port's symbol errors (node_exporter instance gpu-010:9100 → node gpu-010).
    let ports = node("gpu-010").ports.as_ref().expect("ports");
    assert_eq!(ports[0].name, "mlx5_3/1");
    assert_eq!(ports[0].state, PortState::Active, "not in the (non-Active only) state answer");
    assert_eq!(ports[0].symbol_errors, 1, "rate 0.798/s rounds to 1");
}

#[test]
fn range_answers_replay_as_deltas_and_date_the_xids() {
    use gpuplane::backend::prom::replay;
    let c = cfg();
    let util = Body(fixture("query_range_hot_gpu_temp.json"));
    let xid = Body(fixture("query_range_xid_node005.json"));
    let start = 1_795_952_144.0;
    let end = 1_795_959_344.0;
    let mut mem = Memory::default();
    let deltas =
        replay(&c, &[(Family::GpuTemp, util), (Family::XidLast, xid)], start, end, 15.0, &mut mem).unwrap();
    assert_eq!(deltas.len(), 481);
    assert_eq!(deltas[0].at, start as i64);
    assert!(deltas.windows(2).all(|w| w[1].at - w[0].at == 15));
    let temps: Vec<u8> = deltas.iter().filter_map(|d| d.nodes[0].gpus[0].temp_c).collect();
    assert_eq!(temps.len(), 481);
    assert!(temps[0] <= 76 && *temps.last().unwrap() >= 86, "{} .. {}", temps[0], temps.last().unwrap());
    // gpu-005 GPU 0 shows XID 43 since t_end-2820 (t_end = 1795959311).
    let (code, since) = mem.xid_first[&("gpu-005".into(), 0)];
    assert_eq!(code, 43);
    assert!((since - (1_795_959_311 - 2820)).abs() <= 60, "{since}");
}

#[test]
fn status_text_for_partial_data_names_the_family_and_the_error_verbatim() {
    let families = schedule(1);
    assert_eq!(families.len(), PER_REFRESH);
    let bodies: Vec<_> = families
        .iter()
        .map(|f| {
            let b = if *f == Family::IbState {
                fixture("error_syntax.json")
            } else {
                fixture("query_empty.json")
            };
            let r = match api::parse(&b) {
                Ok(_) => Ok(Body(b)),
                Err(BodyError::Api { error_type, error, .. }) => Err(PromError::Api { error_type, error }),
                Err(e) => panic!("{e:?}"),
            };
            (*f, r)
        })
        .collect();
    let out = map_refresh(&cfg(), &bodies, 1, &mut Memory::default());
    assert!(out.unreachable().is_none());
    let text = out.problems().unwrap();
    assert_eq!(
        text,
        "prometheus: partial data, 1 of 19 queries failed: ib_state: bad_data: invalid parameter \"query\": 1:18: parse error: unexpected \"(\" in grouping opts, expected \",\" or \")\""
    );
}

/// Serves one canned response per connection: (status line, content type, body).
async fn serve(responses: Vec<(u16, &'static str, Vec<u8>)>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move {
        for (status, ctype, body) in responses {
            let Ok((mut s, _)) = l.accept().await else { return };
            let mut buf = vec![0u8; 8192];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(&body).await;
            let _ = s.shutdown().await;
        }
    });
    url
}

#[tokio::test]
async fn the_client_reports_http_failures_as_stated() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = serve(vec![
        (400, "application/json", fixture("error_syntax.json")),
        (422, "application/json", fixture("error_execution_many_to_many.json")),
        (404, "text/plain; charset=utf-8", fixture("error_unknown_endpoint.json")),
        (401, "text/plain", b"Unauthorized".to_vec()),
        (502, "text/html", b"<html><body>\x1b[31mBad gateway</body></html>".to_vec()),
        (200, "application/json", fixture("query_scalar.json")),
    ])
    .await;
    let c = PromClient::new(&PromConfig::new(&url)).unwrap();
    let e = c.query("avg by (Hostname (DCGM_FI_DEV_GPU_UTIL)", None).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "bad_data: invalid parameter \"query\": 1:18: parse error: unexpected \"(\" in grouping opts, expected \",\" or \")\""
    );
    assert!(!e.is_unreachable());
    let e = c.query("x", None).await.unwrap_err();
    assert!(matches!(&e, PromError::Api { error_type, .. } if error_type == "execution"), "{e}");
    let e = c.query("x", None).await.unwrap_err();
    assert_eq!(e.to_string(), format!("{url}/api/v1/query answered HTTP 404: 404 page not found"));
    let e = c.query("x", None).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{url} refused the credentials (HTTP 401) — check the bearer token or basic auth")
    );
    let e = c.query("x", None).await.unwrap_err();
    assert!(e.is_unreachable(), "a 5xx counts as the server being unavailable");
    assert!(!e.to_string().contains('\x1b'), "{e}");
    let ok = c.query("scalar(count(up == 1))", None).await.unwrap();
    assert_eq!(ok.parse().unwrap().results.scalar(), Some(32.0));
}

#[tokio::test]
async fn a_closed_port_is_connection_refused() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let c = PromClient::new(&PromConfig::new(&url)).unwrap();
    let e = c.query("up", None).await.unwrap_err();
    assert_eq!(e.to_string(), format!("connection refused at {url} — is it running?"));
    assert!(e.is_unreachable());
}

/// The backend when Prometheus was never up: the status names the URL and says no data came.
#[tokio::test]
async fn the_backend_on_a_closed_port_reports_connection_refused_and_no_data_yet() {
    use gpuplane::model::protocol::Update;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let closed = format!("http://127.0.0.1:{port}");
    let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(gpuplane::backend::prom::run(PromConfig::new(&closed), tx, cancel.clone()));
    let err = loop {
        let u = tokio::time::timeout(std::time::Duration::from_secs(30), rx.recv())
            .await
            .expect("a status within 30 s")
            .expect("the backend stopped");
        if let Update::Status(gpuplane::model::protocol::SourceStatus { error: Some(e), .. }) = u {
            break e;
        }
    };
    assert_eq!(err, format!("prometheus: connection refused at {closed} — is it running? (no data yet)"));
    cancel.cancel();
    let _ = task.await;
}

/// `gpuplane get` against a Prometheus that is not there: exit status 2 and the reason.
#[test]
fn get_on_a_closed_port_fails_with_status_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::gpuplane_cmd(dir.path())
        .args(["get", "nodes", "--prometheus", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("prometheus"), "{err}");
}

#[test]
fn storage_throughput_joins_nfs_exports_and_listed_local_disks() {
    let c = cfg();
    let vector = |rows: &[(&str, &str)]| {
        let r: Vec<String> =
            rows.iter().map(|(l, v)| format!(r#"{{"metric":{{{l}}},"value":[1795959344,"{v}"]}}"#)).collect();
        format!(r#"{{"status":"success","data":{{"resultType":"vector","result":[{}]}}}}"#, r.join(","))
    };
    let nfs = r#""device":"10.40.0.20:/export/home","fstype":"nfs4","mountpoint":"/home""#;
    let lustre = r#""device":"10.40.0.11@o2ib:/ckptfs","fstype":"lustre","mountpoint":"/mnt/checkpoints""#;
    let raid = r#""device":"/dev/md1","fstype":"ext4","instance":"gpu-003:9100","mountpoint":"/raid""#;
    let mut rf = Refresh::new();
    for (f, rows) in [
        (Family::FsSize, vector(&[(nfs, "1000"), (lustre, "5000"), (raid, "100")])),
        (Family::FsAvail, vector(&[(nfs, "400"), (lustre, "1000"), (raid, "5")])),
        (
            Family::FsRead,
            vector(&[
                (r#""export":"10.40.0.20:/export/home""#, "52428800"),
                (r#""instance":"gpu-003:9100""#, "1.5e9"),
            ]),
        ),
        (Family::FsWrite, vector(&[(r#""export":"10.40.0.20:/export/home""#, "1048576")])),
    ] {
        rf.add(&c, f, &api::parse(rows.as_bytes()).unwrap().results);
    }
    let m = rf.finish(1_795_959_344, false, &mut Memory::default());
    let storage = m.storage.expect("storage answered");
    let fs = |mount: &str| storage.iter().find(|f| f.mount == mount).unwrap_or_else(|| panic!("{mount}"));
    let home = fs("/home");
    assert_eq!((home.name.as_str(), home.read_bps, home.write_bps), ("home", 52_428_800.0, 1_048_576.0));
    let raid = fs("/raid");
    assert_eq!(raid.name, "gpu-003:/raid");
    assert_eq!((raid.read_bps, raid.write_bps), (1.5e9, 0.0), "the node's local disks");
    let ckpt = fs("/mnt/checkpoints");
    assert_eq!((ckpt.read_bps, ckpt.write_bps), (0.0, 0.0), "no client-side source for Lustre");
}
