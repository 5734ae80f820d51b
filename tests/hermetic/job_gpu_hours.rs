//! A job's GPU-hours are one figure, whoever wrote the ledger last (issue 30, finding 3): its
//! GPUs × its run from the scheduler's start and end, never what one process happened to
//! observe; a GPU-interval ends at its job's end; a shorter observation (a restarted console, a
//! command's one look) does not overwrite a longer one; a job nothing measured is "not
//! measured", not 0 % utilisation, and its GPU-hours are not booked as allocated-idle.

use gpuplane::cost::eff::{self, Rules};
use gpuplane::store::{GpuInterval, JobRecord, Ledger, Observation};

const T0: i64 = 1_800_000_000;

fn running(id: u64, gpus: u32, start: i64, seen: i64, measured_s: f64, util: f64) -> JobRecord {
    JobRecord {
        id,
        name: format!("job-{id}"),
        user: "alice".into(),
        account: "vision".into(),
        queue: "gpu".into(),
        state: "RUNNING".into(),
        submit: start - 60,
        start: Some(start),
        end: None,
        gpus,
        gpu_model: Some("NVIDIA H100 80GB HBM3".into()),
        nodes: vec!["node-1".into()],
        exit_reason: None,
        gpu_seconds: measured_s,
        useful_gpu_seconds: measured_s * util / 100.0,
        mean_util: None,
        first_seen: seen,
        last_seen: seen,
        time_limit: None,
    }
}

fn obs(at: i64, jobs: Vec<JobRecord>, intervals: Vec<GpuInterval>) -> Observation {
    Observation { cluster: "c1".into(), at, jobs, intervals, capacity: vec![] }
}

fn per_gpu(job: u64, gpus: u8, start: i64, end: i64, util: f32) -> Vec<GpuInterval> {
    (0..gpus)
        .map(|g| GpuInterval {
            job,
            node: "node-1".into(),
            gpu: Some(g),
            gpus: 1,
            start,
            end,
            util: Some(util),
        })
        .collect()
}

/// A console that saw 15 minutes of a job, then a restarted one that has seen one minute: the
/// ledger keeps the 15 minutes' measurement (and its utilisation), not the last writer's.
#[test]
fn a_shorter_observation_does_not_overwrite_a_longer_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = Ledger::open(&dir.path().join("c1.sqlite")).unwrap();
    let start = T0 - 900;
    let long = running(7, 32, start, T0, 32.0 * 900.0, 80.0);
    l.record(&[obs(T0, vec![long.clone()], vec![])]).unwrap();
    let short = running(7, 32, start, T0 + 60, 32.0 * 60.0, 10.0);
    l.record(&[obs(T0 + 60, vec![short], vec![])]).unwrap();
    let (j, _) = l.job(7).unwrap().unwrap();
    assert_eq!((j.gpu_seconds, j.useful_gpu_seconds), (long.gpu_seconds, long.useful_gpu_seconds));
    assert_eq!(j.last_seen, T0 + 60, "the later sighting still moves last_seen");
    // A later, longer one replaces it.
    let longer = running(7, 32, start, T0 + 120, 32.0 * 1_000.0, 50.0);
    l.record(&[obs(T0 + 120, vec![longer.clone()], vec![])]).unwrap();
    let (j, _) = l.job(7).unwrap().unwrap();
    assert_eq!((j.gpu_seconds, j.useful_gpu_seconds), (longer.gpu_seconds, longer.useful_gpu_seconds));
    // A stale process that still sees it running does not reopen an ended job.
    let mut done = running(7, 32, start, T0 + 180, 32.0 * 1_000.0, 50.0);
    (done.state, done.end) = ("COMPLETED".into(), Some(T0 + 150));
    l.record(&[obs(T0 + 180, vec![done], vec![])]).unwrap();
    l.record(&[obs(T0 + 190, vec![running(7, 32, start, T0 + 190, 32.0 * 1_000.0, 50.0)], vec![])]).unwrap();
    let (j, _) = l.job(7).unwrap().unwrap();
    assert_eq!((j.state.as_str(), j.end), ("COMPLETED", Some(T0 + 150)));
}

/// A 150 s job on 4 GPUs that a console looks at every minute: its last look comes 60 s after
/// the end. The intervals stop at the end, and `report job` says 4 × 150 GPU-seconds.
#[test]
fn intervals_end_at_the_jobs_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = Ledger::open(&dir.path().join("c1.sqlite")).unwrap();
    let (start, end) = (T0, T0 + 150);
    // Looks at +60 and +120 while it runs; intervals written as they stand.
    for at in [T0 + 60, T0 + 120] {
        l.record(&[obs(at, vec![running(9, 4, start, at, 0.0, 0.0)], per_gpu(9, 4, start, at, 50.0))])
            .unwrap();
    }
    // The look at +210 sees it ended and closes the GPUs at +210 (intervals first, then a
    // second process's look that sees the end).
    l.record(&[obs(T0 + 210, vec![], per_gpu(9, 4, start, T0 + 210, 50.0))]).unwrap();
    let mut done = running(9, 4, start, T0 + 215, 0.0, 0.0);
    (done.state, done.end) = ("COMPLETED".into(), Some(end));
    l.record(&[obs(T0 + 215, vec![done], per_gpu(9, 4, start, T0 + 215, 50.0))]).unwrap();
    let (j, ivs) = l.job(9).unwrap().unwrap();
    assert_eq!(ivs.len(), 4, "{ivs:?}");
    assert!(ivs.iter().all(|i| i.end == end), "{ivs:?}");
    let e = eff::job(&j, &ivs, &Rules::default());
    assert_eq!(e.gpu_hours * 3600.0, 4.0 * (end - start) as f64);
    let held: f64 = e.per_gpu.iter().map(|g| g.gpu_hours).sum();
    assert_eq!(held * 3600.0, 4.0 * (end - start) as f64, "{:?}", e.per_gpu);
}

/// Two processes' intervals of the same GPUs (one saw the job from its start, one from a later
/// look), and accounting's counted GPUs beside them: each GPU's time counts once.
#[test]
fn overlapping_intervals_count_each_gpu_once() {
    let (start, end) = (T0, T0 + 3_600);
    let mut j = running(11, 2, start, end, 0.0, 0.0);
    (j.state, j.end) = ("COMPLETED".into(), Some(end));
    let mut ivs = per_gpu(11, 2, start, end, 40.0);
    ivs.extend(per_gpu(11, 2, start + 600, end, 40.0));
    ivs.push(GpuInterval { job: 11, node: "node-1".into(), gpu: None, gpus: 2, start, end, util: None });
    let e = eff::job(&j, &ivs, &Rules::default());
    let held: f64 = e.per_gpu.iter().map(|g| g.gpu_hours).sum();
    assert_eq!(held, 2.0, "{:?}", e.per_gpu);
    assert_eq!(e.gpu_hours, 2.0);
    assert_eq!(e.util, Some(40.0));
}
