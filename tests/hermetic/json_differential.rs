//! The hand-written JSON scanners against serde_json (issue 16, item 6; `docs/json.md`): the
//! contracts written on `slurm::parse::jobs_streamed` and `prom::api::parse`, checked over the
//! recorded bodies, their truncations and their chunk boundaries. The fuzz targets in `fuzz/`
//! run the same checks (`reference::check`, `api::check`) on arbitrary bytes.

use gpuplane::backend::prom::api;
use gpuplane::backend::slurm::reference::{self, Agreed};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn files(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && keep(p))
        .collect();
    v.sort();
    v
}

fn slurm_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/slurm").join(name)
}

/// Every recorded v0.0.4x body (job lists, and the others: no jobs either way, or both refuse),
/// and the spec examples of the job list.
fn slurm_fixtures() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for d in ["v0.0.40", "v0.0.41", "v0.0.42"] {
        v.extend(files(&slurm_dir(d), |_| true));
    }
    v.extend(files(&slurm_dir("spec"), |p| p.to_string_lossy().ends_with("_jobs.json")));
    v
}

fn check(body: &[u8], sizes: &[usize], what: &str) -> Agreed {
    reference::check(body, sizes).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// A small job list: two recorded jobs cut down to about half the members read, one nested
/// member skipped, with an escape, a raw exit status and a job without an id.
fn small_body() -> Vec<u8> {
    let path = slurm_dir("v0.0.42/24_jobs.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let keep = [
        "job_id",
        "name",
        "user_name",
        "qos",
        "partition",
        "job_state",
        "priority",
        "submit_time",
        "nodes",
        "tres_per_node",
        "gres_detail",
        "exit_code",
    ];
    let mut jobs = Vec::new();
    for j in doc["jobs"].as_array().unwrap().iter().filter(|j| j["job_state"][0] == "RUNNING").take(2) {
        let mut o = serde_json::Map::new();
        for k in keep {
            if let Some(v) = j.get(k) {
                o.insert(k.into(), v.clone());
            }
        }
        jobs.push(Value::Object(o));
    }
    jobs[0]["job_resources"] = json!({"nodes": {"allocation": [{"name": "gpu-001",
        "sockets": [{"index": 0, "cores": [{"index": 0, "status": ["ALLOCATED"]}]}]}]},
        "threads_per_core": {"set": true, "infinite": false, "number": 1}});
    jobs[0]["name"] = "tab\there \"q\" ✓".into();
    jobs[1]["exit_code"] = 768.into();
    jobs.push(json!({"name": "no id", "job_id": 0}));
    let body = json!({"meta": {"plugin": {"type": "x"}}, "jobs": jobs, "last_update": {"set": true, "infinite": false, "number": 1_795_960_100u64}});
    serde_json::to_vec(&body).unwrap()
}

#[test]
fn slurm_fixtures_read_as_the_reference_reads_them() {
    let mut jobs = 0;
    for p in slurm_fixtures() {
        let body = std::fs::read(&p).unwrap();
        let what = p.display().to_string();
        for sizes in [&[][..], &[1], &[7, 64], &[4096]] {
            if let Agreed::Jobs(n) = check(&body, sizes, &what) {
                jobs += n;
            }
        }
        // Truncations (about 200 per body).
        let step = (body.len() / 200).max(1);
        for cut in (0..body.len()).step_by(step) {
            check(&body[..cut], &[], &format!("{what} cut at {cut}"));
        }
    }
    assert!(jobs > 100, "{jobs} jobs compared");
}

#[test]
fn a_small_body_reads_as_the_reference_at_every_truncation_and_chunk_boundary() {
    let body = small_body();
    assert!(body.len() < 8000, "{} bytes", body.len());
    assert_eq!(check(&body, &[], "whole"), Agreed::Jobs(2));
    let mut refused = 0;
    for cut in 0..body.len() {
        if check(&body[..cut], &[], &format!("cut at {cut}")) == Agreed::Refused {
            refused += 1;
        }
    }
    // A truncated body is never read (it is not JSON), however short.
    assert_eq!(refused, body.len());
    for at in 1..body.len() {
        assert_eq!(check(&body, &[at, body.len()], &format!("split at {at}")), Agreed::Jobs(2));
    }
    for size in 1..40 {
        assert_eq!(check(&body, &[size], &format!("chunks of {size}")), Agreed::Jobs(2));
    }
}

#[test]
fn the_documented_exceptions_are_skipped_and_only_they() {
    let b = br#"{"jobs":[{"job\u005fid":5}]}"#;
    assert_eq!(reference::check(b, &[]), Ok(Agreed::EscapedKey));
    let b = br#"{"job\u0073":[{"job_id":5}]}"#;
    assert_eq!(reference::check(b, &[]), Ok(Agreed::EscapedKey));
    // Garbage inside a member that is not read: the scanners read the job, serde refuses.
    let b = br#"{"jobs":[{"job_id":5,"job_resources":{"x":[1 2],"y" "z"}}]}"#;
    assert_eq!(reference::check(b, &[]), Ok(Agreed::ReadNotJson));
    let mut b = br#"{"jobs":[{"job_id":5,"tres_":1}]}"#.to_vec();
    b[25] = 0xa1;
    assert_eq!(reference::check(&b, &[]), Ok(Agreed::ReadNotJson));
    // …but not in a member that is read, nor between jobs.
    let b = br#"{"jobs":[{"job_id":5,"nodes":[1 2]}]}"#;
    assert_eq!(reference::check(b, &[]), Ok(Agreed::Refused));
    let b = br#"{"jobs":[{"job_id":5} {"job_id":6}]}"#;
    assert_eq!(reference::check(b, &[]), Ok(Agreed::Refused));
    // Escapes in values, and in keys deeper down, are compared.
    let b = br#"{"jobs":[{"job_id":5,"name":"\u0041","exit_code":{"return\u005fcode":3}}]}"#;
    assert_eq!(reference::check(b, &[3]), Ok(Agreed::Jobs(1)));
}

fn prom_fixtures() -> Vec<PathBuf> {
    files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/prometheus"), |_| true)
}

#[test]
fn prometheus_answers_read_as_serde_reads_them() {
    let mut scanned = 0;
    for p in prom_fixtures() {
        let body = std::fs::read(&p).unwrap();
        let what = p.display();
        if let api::Agreed::Scanned(_) = api::check(&body).unwrap_or_else(|e| panic!("{what}: {e}")) {
            scanned += 1;
        }
        // Every truncation of the small answers, about 500 of the larger ones.
        let step = (body.len() / 500).max(1);
        for cut in (0..body.len()).step_by(step) {
            api::check(&body[..cut]).unwrap_or_else(|e| panic!("{what} cut at {cut}: {e}"));
        }
    }
    assert!(scanned >= 8, "{scanned} answers read by the direct scan");
}

/// Timestamps Rust's float parser takes and serde_json does not (found by the fuzz target): the direct
/// scan once read them; now it leaves them to serde, which refuses them.
#[test]
fn prometheus_timestamps_that_are_not_json_numbers_are_refused() {
    for ts in ["01", "+1", "1.", ".5", "1e", "-", "1.5e+", "0795959329", "171e308", "-1e999"] {
        let body = format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{"a":"b"}},"values":[[1,"2"],[{ts},"3"]]}}]}}}}"#
        );
        assert_eq!(api::check(body.as_bytes()), Ok(api::Agreed::Refused), "{ts}");
    }
    for ts in ["0", "-0", "1.5", "1795959344.452", "1795959329"] {
        let body = format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{"a":"b"}},"values":[[1,"2"],[{ts},"3"]]}}]}}}}"#
        );
        assert_eq!(api::check(body.as_bytes()), Ok(api::Agreed::Scanned(1)), "{ts}");
    }
    // Long numbers and exponents, which serde_json may round differently from Rust's parser:
    // left to serde.
    for ts in ["1e3", "1E+3", "-1.5e-3", "179595841117959525345958426", "1.0000000000000001"] {
        let body = format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{"a":"b"}},"values":[[1,"2"],[{ts},"3"]]}}]}}}}"#
        );
        assert_eq!(api::check(body.as_bytes()), Ok(api::Agreed::Serde), "{ts}");
    }
}
