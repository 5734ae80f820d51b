//! USEFUL and IDLE $ are one definition on every surface (issue 30, finding 3c): a failed job
//! that kept its GPUs 93 % busy is not 93 % useful while its team is 0 %; `get cost`, `get
//! cost-teams`, `get cost-by` (the Cost view's upper table) and `report cost` (JSON and CSV) say
//! the same USEFUL for the same team and window. The expected figures are computed here from
//! the job records written into the ledger (the scheduler's side): GPUs × run, the utilisation
//! the record measured, and the price card this test configures.

use crate::common;

use gpuplane::store::{JobRecord, Ledger, Observation};
use serde_json::Value;

const T0: i64 = 1_800_000_000;
const TEAM: &str = "costqa";
const MODEL: &str = "NVIDIA H100 80GB HBM3";
const PRICE: f64 = 4.0;

/// A finished job of the test's team: `gpus` GPUs for an hour, `util` % measured (None: not
/// measured), ended in `state`.
fn rec(id: u64, state: &str, gpus: u32, util: Option<f64>) -> JobRecord {
    let (start, end) = (T0 - 7_200, T0 - 3_600);
    let held = f64::from(gpus) * (end - start) as f64;
    JobRecord {
        id,
        name: format!("qa-{id}"),
        user: "qa".into(),
        account: TEAM.into(),
        queue: "gpu".into(),
        state: state.into(),
        submit: start - 60,
        start: Some(start),
        end: Some(end),
        gpus,
        gpu_model: Some(MODEL.into()),
        nodes: vec!["gpu-001".into()],
        exit_reason: None,
        // What telemetry measured (the ledger's GPU-seconds are measured ones: none here when
        // nothing measured the job).
        gpu_seconds: if util.is_some() { held } else { 0.0 },
        useful_gpu_seconds: util.map_or(0.0, |u| held * u / 100.0),
        mean_util: None,
        time_limit: None,
        first_seen: start,
        last_seen: end,
    }
}

struct Home {
    home: tempfile::TempDir,
    config: std::path::PathBuf,
}

impl Home {
    fn new() -> Home {
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join("config.toml");
        let dir = home.path().join("ledger").display().to_string();
        std::fs::write(
            &config,
            format!(
                "[ledger]\ndir = {dir:?}\n[prices]\ncurrency = \"USD\"\ndefault = 1.0\n[prices.per_gpu_hour]\nH100 = {PRICE}\n"
            ),
        )
        .unwrap();
        Home { home, config }
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        common::gpuplane_cmd(self.home.path())
            .args(["--config", self.config.to_str().unwrap()])
            .args(args)
            .env("GPUPLANE_SIM_START", T0.to_string())
            .output()
            .expect("run gpuplane")
    }

    fn out(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let text = self.out(args);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: {e}: {text}"))
    }
}

fn close(got: Option<f64>, want: Option<f64>, what: &str) {
    match (got, want) {
        (Some(g), Some(w)) => assert!((g - w).abs() < 1e-3, "{what}: {g}, want {w}"),
        _ => assert_eq!(got, want, "{what}"),
    }
}

#[test]
fn useful_and_idle_are_one_definition_on_every_surface() {
    let h = Home::new();
    // The ledger the simulated cluster's commands read (named after its cluster).
    let path = common::ledger_path_of(&h.run(&["report", "job", "1"]));
    let failed = rec(990_001, "FAILED", 4, Some(93.0));
    let done = rec(990_002, "COMPLETED", 2, Some(50.0));
    let unmeasured = rec(990_003, "COMPLETED", 1, None);
    let jobs = [failed.clone(), done.clone(), unmeasured.clone()];
    let mut l = Ledger::open(&path).unwrap();
    l.record(&[Observation {
        cluster: "sim".into(),
        at: T0 - 3_600,
        jobs: jobs.to_vec(),
        intervals: vec![],
        capacity: vec![],
    }])
    .unwrap();
    drop(l);

    // The oracle, from the records: a failed run's GPU-hours are failed (not useful, not idle);
    // a completed one's are useful at its utilisation and idle for the rest; an unmeasured one's
    // are in neither.
    let hours = |r: &JobRecord| f64::from(r.gpus) * (r.end.unwrap() - r.start.unwrap()) as f64 / 3600.0;
    let useful = |r: &JobRecord| r.useful_gpu_seconds / 3600.0;
    let job_useful = |r: &JobRecord| match r.state.as_str() {
        "FAILED" => Some(0.0),
        _ if r.gpu_seconds > 0.0 => Some(100.0 * r.useful_gpu_seconds / r.gpu_seconds),
        _ => None,
    };
    let job_idle = |r: &JobRecord| match r.state.as_str() {
        "FAILED" => 0.0,
        _ if r.gpu_seconds > 0.0 => (hours(r) - useful(r)) * PRICE,
        _ => 0.0,
    };
    let team_useful = 100.0 * useful(&done) / (hours(&done) + hours(&failed));
    let team_idle = job_idle(&done);

    // get cost: each job's row.
    let rows = h.json(&["get", "cost", "--window", "24h", "--team", TEAM, "-o", "json"]);
    for r in &jobs {
        let row =
            rows.as_array().unwrap().iter().find(|x| x["id"] == r.id).unwrap_or_else(|| panic!("{rows}"));
        close(row["useful_pct"].as_f64(), job_useful(r), &format!("get cost USEFUL of {} {}", r.id, r.state));
        close(row["idle_cost"].as_f64(), Some(job_idle(r)), &format!("get cost IDLE $ of {}", r.id));
    }
    // get cost-teams: the team's row.
    let teams = h.json(&["get", "cost-teams", "--window", "24h", "--team", TEAM, "-o", "json"]);
    let t = &teams[0];
    close(t["useful_pct"].as_f64(), Some(team_useful), "get cost-teams USEFUL");
    close(t["idle_cost"].as_f64(), Some(team_idle), "get cost-teams IDLE $");
    close(t["failed_gpu_hours"].as_f64(), Some(hours(&failed)), "get cost-teams FAILED-H");
    // get cost-by: the Cost view's upper table (the bill's shares by team).
    let by = h.json(&["get", "cost-by", "--window", "24h", "-o", "json"]);
    let row = by.as_array().unwrap().iter().find(|x| x["name"] == TEAM).unwrap_or_else(|| panic!("{by}"));
    close(row["useful_pct"].as_f64(), Some(team_useful), "get cost-by USEFUL");
    close(row["idle_cost"].as_f64(), Some(team_idle), "get cost-by IDLE $");
    // report cost, JSON and CSV.
    let from = jiff::Timestamp::from_second(T0 - 86_400).unwrap().to_string();
    let to = jiff::Timestamp::from_second(T0).unwrap().to_string();
    let bill = h.json(&["report", "cost", "--from", &from, "--to", &to, "--by", "team", "-o", "json"]);
    let row = bill["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["team"] == TEAM)
        .unwrap_or_else(|| panic!("{bill}"));
    close(row["useful_pct"].as_f64(), Some(team_useful), "report cost USEFUL");
    close(row["allocated_idle"].as_f64(), Some(team_idle), "report cost allocated-idle");
    let csv_text = h.out(&["report", "cost", "--from", &from, "--to", &to, "--by", "team", "-o", "csv"]);
    let mut rd = csv::Reader::from_reader(csv_text.as_bytes());
    let head = rd.headers().unwrap().clone();
    let col = |n: &str| head.iter().position(|x| x == n).unwrap_or_else(|| panic!("{n} in {head:?}"));
    let rec = rd.records().map(|r| r.unwrap()).find(|r| &r[0] == TEAM).expect("the team's CSV row");
    close(rec[col("useful_pct")].parse().ok(), Some(team_useful), "report cost CSV USEFUL");
}
