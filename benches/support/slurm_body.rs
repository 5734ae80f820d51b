//! The large `GET /slurm/v0.0.42/jobs/` body of the Slurm parse bench and the memory example:
//! full recorded 24.11 job records, 90 % pending and 10 % running, as in a deep queue; id, name,
//! partition and priority varied.
//!
//! The jobs are written one at a time into the body, so that building it leaves no large number
//! of freed allocations behind: with the whole list built as one `serde_json::Value` first, the
//! allocator's clean-up of its millions of freed nodes landed in the first parse measured.

use serde_json::Value;

/// A body with `n` jobs, compact.
pub fn jobs_body(n: usize) -> Vec<u8> {
    build(n, false)
}

/// [`jobs_body`] indented with two spaces, as slurmrestd writes it.
#[allow(dead_code)]
pub fn jobs_body_pretty(n: usize) -> Vec<u8> {
    build(n, true)
}

fn build(n: usize, pretty: bool) -> Vec<u8> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/slurm/v0.0.42/24_jobs.json");
    let text = std::fs::read_to_string(path).expect("fixture");
    let mut doc: Value = serde_json::from_str(&text).expect("fixture JSON");
    let all = doc["jobs"].as_array().cloned().unwrap_or_default();
    let is = |j: &Value, s: &str| j["job_state"][0] == s;
    let pending: Vec<_> = all.iter().filter(|j| is(j, "PENDING")).cloned().collect();
    let running: Vec<_> = all.iter().filter(|j| is(j, "RUNNING")).cloned().collect();
    doc["jobs"] = Value::Array(Vec::new());
    let ser = |v: &Value| if pretty { serde_json::to_vec_pretty(v) } else { serde_json::to_vec(v) };
    let envelope = ser(&doc).expect("serialise");
    let list: &[u8] = if pretty { b"\"jobs\": []" } else { b"\"jobs\":[]" };
    let at = memchr::memmem::find(&envelope, list).expect("jobs list") + list.len() - 1;
    let mut out = Vec::with_capacity(n * if pretty { 9000 } else { 5000 } + envelope.len());
    out.extend_from_slice(&envelope[..at]);
    for i in 0..n {
        let mut j =
            if i % 10 == 0 { running[i % running.len()].clone() } else { pending[i % pending.len()].clone() };
        j["job_id"] = (i as u64 + 1).into();
        j["name"] = format!("job-{i}").into();
        j["priority"]["number"] = ((i * 7919) % 10_000).into();
        j["partition"] = if i % 3 == 0 { "infer" } else { "train" }.into();
        if i > 0 {
            out.push(b',');
        }
        if pretty {
            // Two levels deeper than the job's own root: `{"jobs": [ here ]}`.
            out.extend_from_slice(b"\n    ");
            for b in ser(&j).expect("serialise") {
                out.push(b);
                if b == b'\n' {
                    out.extend_from_slice(b"    ");
                }
            }
        } else {
            serde_json::to_writer(&mut out, &j).expect("serialise");
        }
    }
    if pretty && n > 0 {
        out.extend_from_slice(b"\n  ");
    }
    out.extend_from_slice(&envelope[at..]);
    out
}
