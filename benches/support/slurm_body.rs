//! The large `GET /slurm/v0.0.42/jobs/` body of the Slurm parse bench and the memory example:
//! full recorded 24.11 job records, 90 % pending and 10 % running, as in a deep queue; id, name,
//! partition and priority varied.

/// A body with `n` jobs, built from the recorded answer.
pub fn jobs_body(n: usize) -> Vec<u8> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/slurm/v0.0.42/24_jobs.json");
    let text = std::fs::read_to_string(path).expect("fixture");
    let mut doc: serde_json::Value = serde_json::from_str(&text).expect("fixture JSON");
    let all = doc["jobs"].as_array().cloned().unwrap_or_default();
    let is = |j: &serde_json::Value, s: &str| j["job_state"][0] == s;
    let pending: Vec<_> = all.iter().filter(|j| is(j, "PENDING")).cloned().collect();
    let running: Vec<_> = all.iter().filter(|j| is(j, "RUNNING")).cloned().collect();
    let jobs: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let mut j = if i % 10 == 0 {
                running[i % running.len()].clone()
            } else {
                pending[i % pending.len()].clone()
            };
            j["job_id"] = (i as u64 + 1).into();
            j["name"] = format!("job-{i}").into();
            j["priority"]["number"] = ((i * 7919) % 10_000).into();
            j["partition"] = if i % 3 == 0 { "infer" } else { "train" }.into();
            j
        })
        .collect();
    doc["jobs"] = jobs.into();
    serde_json::to_vec(&doc).expect("serialise")
}
