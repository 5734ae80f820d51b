use super::*;
use crate::acceptance::parse::parse;
use crate::acceptance::store::tests::record;

const NEBIUS: &[u8] =
    include_bytes!("../../../../../tests/fixtures/nccl/02_h100x16_2node_nebius_k8s_ib_allreduce_excerpt.txt");

/// A clean run at `at` with busbw `bw`.
fn run(id: &str, nodes: &[&str], bw: f64, at: i64) -> RunRecord {
    let mut r = record(id, nodes, Some(bw));
    r.result = Some(parse(NEBIUS).unwrap());
    r.submitted_at = at;
    r
}

#[test]
fn configured_baseline_gives_pass_degraded_fail() {
    let mut cfg = JudgeConfig::default();
    cfg.baseline.insert("8xH100".into(), 400.0);
    let v = |bw| judge(&run("a", &["n1"], bw, 1), &[], &cfg);
    assert_eq!(v(400.0).verdict, Verdict::Pass);
    assert_eq!(v(360.0).verdict, Verdict::Pass);
    let d = v(359.0);
    assert_eq!(d.verdict, Verdict::Degraded);
    assert_eq!(d.basis.as_deref(), Some("config 8xH100"));
    assert!(d.why.contains("90% of 400.0 GB/s"), "{}", d.why);
    assert_eq!(v(280.0).verdict, Verdict::Degraded);
    assert_eq!(v(279.0).verdict, Verdict::Fail);
    // Another shape has no configured baseline: first of its kind passes, unjudged.
    let two = judge(&run("b", &["n1", "n2"], 100.0, 1), &[], &cfg);
    assert_eq!((two.verdict, two.baseline), (Verdict::Pass, None));
    assert!(two.why.contains("first 2x8xH100 result"), "{}", two.why);
}

#[test]
fn fleet_median_of_latest_runs_per_node_set() {
    let cfg = JudgeConfig::default();
    let history = vec![
        run("1", &["n1"], 100.0, 1), // superseded by n1's later run
        run("2", &["n1"], 400.0, 2),
        run("3", &["n2"], 410.0, 3),
        run("4", &["n3"], 390.0, 4),
        run("5", &["n4", "n5"], 50.0, 5), // another shape
    ];
    let slow = run("6", &["n4"], 300.0, 6);
    let j = judge(&slow, &history, &cfg);
    // median of 400, 410, 390, 300 = 395
    assert_eq!(j.baseline, Some(395.0));
    assert_eq!(j.basis.as_deref(), Some("fleet median of 4 8xH100 node sets"));
    assert_eq!(j.verdict, Verdict::Degraded);
    assert_eq!(judge(&run("7", &["n4"], 200.0, 6), &history, &cfg).verdict, Verdict::Fail);
    assert_eq!(judge(&run("8", &["n4"], 395.0, 6), &history, &cfg).verdict, Verdict::Pass);
}

#[test]
fn wrong_values_errors_failed_jobs_and_parse_errors_always_fail() {
    let mut cfg = JudgeConfig::default();
    cfg.baseline.insert("8xH100".into(), 100.0);
    let good = run("a", &["n1"], 500.0, 1);
    assert_eq!(judge(&good, &[], &cfg).verdict, Verdict::Pass);

    let mut wrong = good.clone();
    let text = String::from_utf8_lossy(NEBIUS).replace("467.28      0", "467.28      2");
    wrong.result = Some(parse(text.as_bytes()).unwrap());
    let j = judge(&wrong, &[], &cfg);
    assert_eq!(j.verdict, Verdict::Fail);
    assert!(j.why.contains("2 wrong value(s)"), "{}", j.why);

    let mut warned = good.clone();
    if let Some(r) = warned.result.as_mut() {
        r.errors.push("line 3: NCCL WARN NET/IB".into());
    }
    assert!(judge(&warned, &[], &cfg).why.contains("NCCL WARN"));

    let mut job = good.clone();
    job.job_state = Some("TIMEOUT".into());
    assert_eq!(judge(&job, &[], &cfg).why, "the job ended TIMEOUT");

    let mut err = good.clone();
    err.result = None;
    err.error = Some("truncated nccl-tests output at line 40".into());
    let j = judge(&err, &[], &cfg);
    assert_eq!(j.verdict, Verdict::Fail);
    assert!(j.why.contains("truncated"), "{}", j.why);

    let mut none = good;
    none.result = None;
    assert_eq!(judge(&none, &[], &cfg).verdict, Verdict::Fail);
}

#[test]
fn version_drift_against_the_fleet_majority() {
    let cfg = JudgeConfig::default();
    let mut runs: Vec<RunRecord> =
        ["n1", "n2", "n3", "n4"].iter().enumerate().map(|(i, n)| run(n, &[n], 400.0, i as i64)).collect();
    runs[1].driver = Some("535.104.05".into());
    runs[2].nccl = Some("2.18.3".into());
    runs[3].image = Some("nccl:old".into()); // the only image: nothing to compare with
    let by = by_node(&runs, &cfg);
    let kinds = |n: &str| by[n].drift.iter().map(|d| d.kind).collect::<Vec<_>>();
    assert_eq!(kinds("n1"), vec![]);
    assert_eq!(kinds("n2"), vec![DriftKind::Driver]);
    assert_eq!(by["n2"].drift[0].expected, "550.54.15");
    assert_eq!(by["n2"].drift[0].found, "535.104.05");
    assert_eq!(kinds("n3"), vec![DriftKind::Nccl]);
    assert_eq!(kinds("n4"), vec![]);
    // A tie names no majority.
    let tie = vec![run("a", &["a"], 1.0, 1), {
        let mut r = run("b", &["b"], 1.0, 2);
        r.cuda = Some("12.2".into());
        r
    }];
    assert!(by_node(&tie, &cfg).values().all(|n| n.drift.is_empty()));
}

#[test]
fn busbw_drop_against_own_history() {
    let cfg = JudgeConfig::default();
    let runs = vec![
        run("1", &["n1"], 400.0, 1),
        run("2", &["n1"], 410.0, 2),
        run("3", &["n1"], 405.0, 3),
        run("4", &["n2"], 400.0, 1),
        run("5", &["n2"], 370.0, 2), // 7.5 % below: within tolerance
        run("6", &["n1"], 350.0, 4), // 13.6 % below its median 405
    ];
    let by = by_node(&runs, &cfg);
    assert_eq!(by["n1"].history, vec![400.0, 410.0, 405.0, 350.0]);
    assert_eq!(by["n1"].last_busbw, Some(350.0));
    assert_eq!(by["n1"].drift.len(), 1);
    assert_eq!(by["n1"].drift[0].kind, DriftKind::Busbw);
    assert_eq!(by["n1"].drift[0].expected, "405.0 GB/s (own median)");
    assert!(by["n2"].drift.is_empty());
}

#[test]
fn multi_node_runs_count_for_each_node() {
    let by = by_node(&[run("p", &["n1", "n2"], 450.0, 1)], &JudgeConfig::default());
    assert_eq!(by.keys().collect::<Vec<_>>(), vec!["n1", "n2"]);
    assert_eq!(by["n2"].last_run, "p");
}
