//! The usage ledger: a real SQLite file in a temporary directory, written and read back the
//! way the console and `get` do it.

use crate::common;

use gpuplane::backend::sim::{Sim, SimConfig};
use gpuplane::cost::track::Tracker;
use gpuplane::model::protocol::Update;
use gpuplane::model::{JobState, NodeState};
use gpuplane::store::ledger::{self, Answer, Request, Writer};
use gpuplane::store::{
    CapacitySample, GpuInterval, JobRecord, Ledger, LedgerErrorKind, Observation, WindowData,
};
use gpuplane::tui::app::{LedgerLink, Msg};
use gpuplane::tui::views;
use std::time::Duration;

const DAY: i64 = 86_400;
const T0: i64 = 1_800_000_000;

fn job(id: u64, account: &str, start: i64, end: Option<i64>, gpus: u32, last_seen: i64) -> JobRecord {
    let run = end.unwrap_or(last_seen) - start;
    JobRecord {
        id,
        name: format!("job-{id}"),
        user: "alice".into(),
        account: account.into(),
        queue: "gpu".into(),
        state: if end.is_some() { "COMPLETED" } else { "RUNNING" }.into(),
        submit: start - 60,
        start: Some(start),
        end,
        gpus,
        gpu_model: Some("NVIDIA H100 80GB HBM3".into()),
        nodes: vec!["node-1".into()],
        exit_reason: None,
        gpu_seconds: f64::from(gpus) * run as f64,
        useful_gpu_seconds: f64::from(gpus) * run as f64 * 0.5,
        mean_util: None,
        time_limit: None,
        first_seen: last_seen,
        last_seen,
    }
}

fn obs(at: i64, jobs: Vec<JobRecord>) -> Observation {
    Observation {
        cluster: "c1".into(),
        at,
        jobs,
        intervals: vec![],
        capacity: vec![CapacitySample {
            at,
            step_s: 60,
            model: "NVIDIA H100 80GB HBM3".into(),
            allocated: 8,
            unallocated: 4,
            drained: 2,
            down: 1,
            maintenance: 1,
        }],
    }
}

#[test]
fn a_ledger_survives_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = ledger::path_for(dir.path(), "prod/gpu a");
    assert_eq!(path.file_name().and_then(|n| n.to_str()), Some("prod_gpu_a.sqlite"));
    {
        let mut l = Ledger::open(&path).expect("open");
        let mut o = obs(T0, vec![job(7, "ml", T0 - 3_600, Some(T0), 8, T0)]);
        o.intervals.push(GpuInterval {
            job: 7,
            node: "node-1".into(),
            gpu: Some(3),
            gpus: 1,
            start: T0 - 3_600,
            end: T0,
            util: Some(42.0),
        });
        l.record(&[o]).expect("record");
    }
    let l = Ledger::open(&path).expect("reopen");
    assert_eq!(l.version().expect("version"), ledger::SCHEMA_VERSION);
    let w = l.window(T0 - DAY, T0).expect("window");
    assert_eq!(w.jobs.len(), 1);
    let j = &w.jobs[0];
    assert_eq!((j.id, j.account.as_str(), j.gpus, j.end), (7, "ml", 8, Some(T0)));
    // The efficiency summary at the job's end: useful over allocated GPU-seconds.
    assert_eq!(j.mean_util, Some(50.0));
    let (_, ivs) = l.job(7).expect("job").expect("recorded");
    assert_eq!(ivs.len(), 1);
    assert_eq!((ivs[0].node.as_str(), ivs[0].gpu, ivs[0].util), ("node-1", Some(3), Some(42.0)));
    assert_eq!(l.counts().expect("counts"), (1, 1, 1));
}

#[test]
fn windows_differ_when_the_data_differs_and_say_since_when() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut l = Ledger::open(&dir.path().join("c1.sqlite")).expect("open");
    // Three days of records: a job each day, and capacity samples each day.
    for d in 0..3 {
        let at = T0 - d * DAY;
        l.record(&[obs(at, vec![job(100 + d as u64, "ml", at - 7_200, Some(at - 3_600), 4, at)])])
            .expect("record");
    }
    let day = l.window(T0 - DAY, T0).expect("1d");
    let week = l.window(T0 - 7 * DAY, T0).expect("7d");
    assert_eq!(day.jobs.len(), 1);
    assert_eq!(week.jobs.len(), 3);
    assert_eq!(day.capacity[0].unallocated_s, 4.0 * 60.0);
    assert_eq!(week.capacity[0].unallocated_s, 3.0 * 4.0 * 60.0);
    assert_eq!(week.capacity[0].drained_s, 3.0 * 2.0 * 60.0);
    // The ledger began two days before T0 (minus the first sample's minute).
    let first = T0 - 2 * DAY - 60;
    assert_eq!(week.first_record, Some(first));
    assert_eq!(week.data_since(), Some(first), "the ledger is younger than 7 days");
    assert_eq!(l.window(T0 - DAY / 2, T0).expect("12h").data_since(), None);
}

#[test]
fn cost_windows_from_the_ledger_count_idle_gpus_by_cause() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut l = Ledger::open(&dir.path().join("c1.sqlite")).expect("open");
    for d in 0..3 {
        let at = T0 - d * DAY;
        l.record(&[obs(at, vec![job(100 + d as u64, "ml", at - 7_200, Some(at - 3_600), 4, at)])])
            .expect("record");
    }
    let mut s = gpuplane::testing::state_after(SimConfig::default(), 1);
    s.now = T0;
    s.jobs.clear();
    let r1 = gpuplane::cost::report_ledger(&s, DAY, &l.window(T0 - DAY, T0).expect("1d"));
    let r7 = gpuplane::cost::report_ledger(&s, 7 * DAY, &l.window(T0 - 7 * DAY, T0).expect("7d"));
    let h100 = s.prices.price("H100");
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(close(r1.allocated, 4.0 * h100), "{}", r1.allocated);
    assert!(close(r7.allocated, 3.0 * 4.0 * h100), "{}", r7.allocated);
    assert!(close(r7.unused.unallocated.gpu_hours, 3.0 * 4.0 / 60.0));
    assert!(close(r7.unused.drained.gpu_hours, 3.0 * 2.0 / 60.0));
    assert!(close(r7.unused.down.gpu_hours, 3.0 / 60.0));
    assert!(close(r7.unused.maintenance.gpu_hours, 3.0 / 60.0));
    // The parts add up to the total.
    assert!(close(r7.total, r7.allocated + r7.unused.total().cost));
    assert!(r7.total > r1.total);
    assert!(r7.data_since.is_some() && r1.data_since.is_none());
    assert!(r7.rates.iter().any(|(m, p)| m == "H100" && close(*p, h100)), "{:?}", r7.rates);
}

/// A version-1 file (before time limits) keeps its jobs when opened, and then keeps time
/// limits; a later observation without one does not erase it.
#[test]
fn a_version_1_file_migrates_and_keeps_time_limits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v1.sqlite");
    let c = rusqlite::Connection::open(&path).expect("raw");
    c.execute_batch(ledger::MIGRATIONS[0]).expect("schema 1");
    c.pragma_update(None, "user_version", 1).expect("version 1");
    c.execute(
        "INSERT INTO jobs (id, name, user_name, account, queue, state, submitted, started, ended, gpus,
            nodes, gpu_seconds, useful_gpu_seconds, first_seen, last_seen)
         VALUES (5, 'old', 'bob', 'a', 'q', 'COMPLETED', 0, 10, 3610, 1, 'n1', 3600, 0, 10, 3610)",
        [],
    )
    .expect("a v1 job");
    drop(c);
    let mut l = Ledger::open(&path).expect("migrates");
    assert_eq!(l.version().expect("version"), ledger::SCHEMA_VERSION);
    let (old, _) = l.job(5).expect("read").expect("kept");
    assert_eq!((old.name.as_str(), old.time_limit), ("old", None));
    let mut j = job(6, "a", T0, Some(T0 + 3600), 2, T0 + 3600);
    j.time_limit = Some(7200);
    l.record(&[obs(T0 + 3600, vec![j.clone()])]).expect("record");
    j.time_limit = None;
    l.record(&[obs(T0 + 3660, vec![j])]).expect("again, without a limit");
    assert_eq!(l.job(6).expect("read").expect("there").0.time_limit, Some(7200));
}

#[test]
fn migrations_start_from_an_empty_file_and_refuse_a_newer_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("empty.sqlite");
    std::fs::write(&path, b"").expect("empty file");
    let l = Ledger::open(&path).expect("an empty file is schema version 0");
    assert_eq!(l.version().expect("version"), ledger::SCHEMA_VERSION);
    assert_eq!(l.counts().expect("counts"), (0, 0, 0));
    drop(l);
    // Opening again migrates nothing and keeps the data.
    assert_eq!(Ledger::open(&path).expect("again").version().expect("version"), ledger::SCHEMA_VERSION);
    // A file from a newer gpuplane is refused with the fix.
    let c = rusqlite::Connection::open(&path).expect("raw");
    c.pragma_update(None, "user_version", 99).expect("bump");
    drop(c);
    let e = Ledger::open(&path).expect_err("too new");
    assert_eq!(e.kind, LedgerErrorKind::TooNew(99));
    assert!(e.to_string().contains("upgrade gpuplane"), "{e}");
}

#[test]
fn a_damaged_file_is_named_with_what_to_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c1.sqlite");
    std::fs::write(&path, vec![0x5a; 8192]).expect("garbage");
    let e = Ledger::open(&path).expect_err("not a database");
    assert_eq!(e.kind, LedgerErrorKind::Corrupt);
    let msg = e.to_string();
    assert!(msg.contains("c1.sqlite") && msg.contains("move it aside"), "{msg}");
}

#[test]
fn a_locked_file_says_another_process_writes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c1.sqlite");
    let mut l = Ledger::open_with(&path, Duration::from_millis(100)).expect("open");
    let other = rusqlite::Connection::open(&path).expect("other");
    other.execute_batch("BEGIN EXCLUSIVE").expect("lock");
    let e = l.record(&[obs(T0, vec![job(1, "ml", T0 - 60, None, 1, T0)])]).expect_err("locked");
    assert_eq!(e.kind, LedgerErrorKind::Locked, "{e}");
    assert!(e.to_string().contains("locked by another process"), "{e}");
    other.execute_batch("COMMIT").expect("unlock");
    l.record(&[obs(T0, vec![job(1, "ml", T0 - 60, None, 1, T0)])]).expect("written once free");
    assert_eq!(l.counts().expect("counts").0, 1);
}

#[test]
fn a_reader_reads_while_the_writer_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (tx, rx) = std::sync::mpsc::channel();
    let w = Writer::spawn(dir.path().to_path_buf(), 0, move |a| {
        let _ = tx.send(a);
    })
    .expect("writer");
    // The file exists once the first record is written.
    w.send(Request::Record(Box::new(obs(T0, vec![job(1, "ml", T0 - 60, None, 1, T0)]))));
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    w.send(Request::Flush(done_tx));
    done_rx.recv_timeout(Duration::from_secs(10)).expect("flushed");
    let path = ledger::path_for(dir.path(), "c1");
    let reader = std::thread::spawn(move || {
        let l = Ledger::open(&path).expect("reader");
        let mut last = 0;
        for _ in 0..200 {
            let n = l.window(0, T0 + 10 * DAY).expect("a read never fails while writing").jobs.len();
            assert!(n >= last, "rows only grow: {n} after {last}");
            last = n;
        }
        last
    });
    for i in 2..=500u64 {
        let at = T0 + i as i64;
        w.send(Request::Record(Box::new(obs(at, vec![job(i, "ml", at - 60, None, 1, at)]))));
    }
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    w.send(Request::Flush(done_tx));
    done_rx.recv_timeout(Duration::from_secs(30)).expect("flushed");
    let seen = reader.join().expect("reader thread");
    assert!(seen >= 1);
    w.send(Request::Window { cluster: "c1".into(), from: 0, to: T0 + DAY });
    let n = loop {
        match rx.recv_timeout(Duration::from_secs(10)).expect("an answer") {
            Answer::Window { result, .. } => break result.expect("window").jobs.len(),
            Answer::Failed(e) => panic!("{e}"),
            Answer::Recovered | Answer::Store(_) | Answer::SummaryWanted { .. } => {}
        }
    };
    assert_eq!(n, 500);
    w.finish();
}

/// The simulator's cluster, observed for a while: jobs, GPU-intervals and GPUs by cause.
#[test]
fn the_tracker_records_what_the_simulator_runs() {
    let mut sim = Sim::new(SimConfig::default());
    let mut s = gpuplane::state::ClusterState::new(Default::default(), Default::default());
    for u in sim.initial() {
        s.apply(u);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut l = Ledger::open(&ledger::path_for(dir.path(), &s.cluster)).expect("open");
    let mut t = Tracker::default();
    // Take one node down and drain another: their free GPUs are counted by cause.
    let down = s.nodes[0].name.clone();
    let drained = s.nodes[1].name.clone();
    let mut observations = 0;
    for tick in 0..400 {
        s.apply(sim.tick());
        if tick == 5 {
            let mut d =
                gpuplane::model::protocol::Delta { source: "sim".into(), at: s.now, ..Default::default() };
            for (n, st) in [(&down, NodeState::Down), (&drained, NodeState::Drained)] {
                d.nodes.push(gpuplane::model::protocol::NodeSample {
                    node: n.clone(),
                    state: Some(st),
                    ..Default::default()
                });
            }
            s.apply(Update::Delta(Box::new(d)));
        }
        if t.due(&s)
            && let Some(o) = t.observe(&s)
        {
            l.record(&[o]).expect("record");
            observations += 1;
        }
    }
    assert!(observations >= 10, "{observations} observations in 800 s");
    let w: WindowData = l.window(s.now - DAY, s.now).expect("window");
    assert!(!w.jobs.is_empty());
    let finished = w.jobs.iter().filter(|j| j.end.is_some() && j.gpu_seconds > 0.0).count();
    assert!(finished > 0, "jobs finished meanwhile");
    assert!(w.jobs.iter().filter(|j| j.end.is_some() && j.gpu_seconds > 0.0).all(|j| j.mean_util.is_some()));
    let cap: f64 = w.capacity.iter().map(|c| c.down_s + c.drained_s).sum();
    assert!(cap > 0.0, "the down and drained nodes' GPUs were counted: {:?}", w.capacity);
    // A running job's GPUs are recorded as intervals on the GPUs it holds.
    let running = s.jobs.iter().find(|j| j.state == JobState::Running && j.gpus > 0).expect("a running job");
    let (_, ivs) = l.job(running.id).expect("job").expect("recorded");
    assert!(!ivs.is_empty(), "intervals of job {}", running.id);
    assert!(ivs.iter().all(|i| i.end >= i.start && i.gpu.is_some()));
}

/// A damaged ledger: the console stays up and its Cost view says why.
#[test]
fn the_cost_view_says_why_when_the_ledger_is_damaged() {
    let mut a = common::app();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(ledger::path_for(dir.path(), &a.state().cluster), vec![0x5a; 4096]).expect("garbage");
    let (tx, rx) = std::sync::mpsc::channel();
    let w = Writer::spawn(dir.path().to_path_buf(), 0, move |a| {
        let _ = tx.send(a);
    })
    .expect("writer");
    a.ledger = Some(LedgerLink::new(w));
    common::typed(&mut a, ":cost\r");
    a.ledger_tick();
    a.flush();
    let answer = rx.recv_timeout(Duration::from_secs(10)).expect("an answer");
    a.update(Msg::Ledger(answer));
    while let Ok(more) = rx.recv_timeout(Duration::from_millis(200)) {
        a.update(Msg::Ledger(more));
    }
    assert_eq!(a.ui.view, views::cost::ID);
    let screen = common::render(&mut a, 200, 30);
    assert!(screen.contains("damaged or not a database"), "{screen}");
    assert!(screen.contains("ledger failed"), "{screen}");
    // The tables still show what the console holds.
    assert!(!a.cost.jobs.is_empty());
    assert!(matches!(a.cost.basis, gpuplane::cost::Basis::Unavailable { .. }));
}

/// The console fed by the simulator for a few minutes: the Cost view reads its window from
/// the ledger, says since when it has data, and prices the GPUs no job held by cause.
#[test]
fn the_cost_view_reads_the_ledger_the_console_writes() {
    let (mut a, mut sim) = common::app_with_sim();
    let dir = tempfile::tempdir().expect("tempdir");
    let (tx, rx) = std::sync::mpsc::channel();
    let w = Writer::spawn(dir.path().to_path_buf(), 0, move |a| {
        let _ = tx.send(a);
    })
    .expect("writer");
    a.ledger = Some(LedgerLink::new(w));
    for _ in 0..300 {
        a.update(Msg::Update(sim.tick()));
        a.ledger_tick();
        a.flush();
    }
    common::typed(&mut a, ":cost\r");
    a.ledger_tick();
    a.flush();
    // The thread's reports of its writes (for the Sources view) come first.
    let answer = loop {
        match rx.recv_timeout(Duration::from_secs(20)).expect("an answer") {
            Answer::Store(s) => assert!(s.error.is_none(), "{s:?}"),
            a => break a,
        }
    };
    assert!(matches!(answer, Answer::Window { .. }), "{answer:?}");
    a.update(Msg::Ledger(answer));
    let screen = common::render(&mut a, 160, 48);
    assert!(matches!(a.cost.basis, gpuplane::cost::Basis::Ledger { .. }), "{:?}", a.cost.basis);
    // Every job of the window is counted, the GPUs no job held only since the ledger began:
    // the total is a lower bound and says so.
    assert!(screen.contains("capacity since"), "the ledger is 10 minutes old:\n{screen}");
    assert!(screen.contains(" ≥$"), "the total is at least:\n{screen}");
    assert!(a.cost.unused.drained.cost > 0.0, "the simulator has drained nodes: {:?}", a.cost.unused);
    assert!(a.cost.unused.unallocated.gpu_hours > 0.0 || a.cost.now_gpus[1] == 0);
    assert!(screen.contains("drained $"), "{screen}");
    let parts = a.cost.allocated + a.cost.unused.total().cost;
    assert!((a.cost.total - parts).abs() < 1e-6);
    // The jobs table holds the ledger's jobs joined with the live ones.
    assert!(a.cost.jobs.iter().any(|j| j.live));
}

/// Two consoles on one cluster write the same minutes: the GPUs no job held are counted once.
#[test]
fn two_writers_do_not_count_idle_gpus_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c1.sqlite");
    let mut a = Ledger::open(&path).expect("a");
    let mut b = Ledger::open(&path).expect("b");
    for m in 0..10 {
        a.record(&[obs(T0 + m * 60, vec![])]).expect("a writes");
        // b looks 30 s later each minute
        b.record(&[obs(T0 + m * 60 + 30, vec![])]).expect("b writes");
    }
    let w = a.window(T0 - 3_600, T0 + 3_600).expect("window");
    assert_eq!(w.capacity[0].unallocated_s, 10.0 * 4.0 * 60.0, "{:?}", w.capacity);
    assert_eq!(a.counts().expect("counts").2, 10);
}

/// `report cost` for the window the Cost view shows, read from the file the console wrote:
/// its TOTAL row equals the view's total (on screen too), whatever the rows are; the rows add
/// up to it; CSV holds plain numbers.
#[test]
fn the_chargeback_total_equals_the_cost_view() {
    use gpuplane::commands::report;
    use gpuplane::cost::bill::Dimension;
    let (mut a, mut sim) = common::app_with_sim();
    let dir = tempfile::tempdir().expect("tempdir");
    let (tx, rx) = std::sync::mpsc::channel();
    let w = Writer::spawn(dir.path().to_path_buf(), 0, move |a| {
        let _ = tx.send(a);
    })
    .expect("writer");
    a.ledger = Some(LedgerLink::new(w));
    for _ in 0..300 {
        a.update(Msg::Update(sim.tick()));
        a.ledger_tick();
        a.flush();
    }
    common::typed(&mut a, ":cost\r");
    a.ledger_tick();
    a.flush();
    // The thread's reports of its writes (for the Sources view) come first.
    let answer = loop {
        match rx.recv_timeout(Duration::from_secs(20)).expect("an answer") {
            Answer::Store(_) => {}
            a => break a,
        }
    };
    a.update(Msg::Ledger(answer));
    let screen = common::render(&mut a, 160, 48);
    assert!(matches!(a.cost.basis, gpuplane::cost::Basis::Ledger { .. }), "{:?}", a.cost.basis);
    let s = a.state();
    let window = gpuplane::cost::WINDOWS[gpuplane::tui::views::cost::settings(&a.ui.own).window].0;
    let l = Ledger::open(&ledger::path_for(dir.path(), &s.cluster)).expect("ledger");
    let data = l.window(s.now - window, s.now).expect("window");
    let r = gpuplane::cost::report_range(s, s.now - window, s.now, &data);
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(1.0);
    assert!(a.cost.total > 0.0);
    for by in [Dimension::Team, Dimension::User, Dimension::Account] {
        let rows = report::rows(&r.bill, by);
        let (total, rest) = rows.split_last().expect("a totals row");
        assert_eq!(total.name, "TOTAL");
        assert!(close(total.total, a.cost.total), "{by:?}: {} vs the view's {}", total.total, a.cost.total);
        let sum: f64 = rest.iter().map(|s| s.total).sum();
        assert!(close(sum, total.total), "{by:?}: rows {sum} vs {}", total.total);
    }
    let csv = report::csv(&r.bill, Dimension::Team).expect("csv");
    assert!(!csv.contains('$') && !csv.contains('%'), "{csv}");
    let last = csv.lines().last().expect("rows");
    assert!(last.starts_with("TOTAL,"), "{csv}");
    let at =
        csv.lines().next().and_then(|h| h.split(',').position(|c| c == "total")).expect("a total column");
    let printed: f64 = last.split(',').nth(at).and_then(|v| v.parse().ok()).expect("a number");
    assert!((printed - a.cost.total).abs() < 1e-3, "{printed} vs {}", a.cost.total);
    let shown = gpuplane::tui::widgets::money(printed, "USD");
    // A ledger younger than the window counts the GPUs no job held only since it began: at least.
    let ge = if a.cost.data_since.is_some() { "≥" } else { "" };
    assert!(screen.contains(&format!(" {ge}{shown} total")), "{ge}{shown} on\n{screen}");
}

/// The console's writer thread says which jobs it sees end want a summary (a recent end only,
/// each job once, with its record and GPU intervals), between writes, and keeps the summary it
/// is handed back, read back as written; a file from before summaries (version 2) migrates to
/// a table that holds them.
#[test]
fn the_writer_asks_for_a_summary_when_a_job_ends_and_keeps_the_one_handed_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    let answer = move |a: ledger::Answer| {
        if let ledger::Answer::SummaryWanted { cluster, job, intervals } = a {
            seen.lock().unwrap().push((cluster, job.id, job.end, intervals.len()));
        }
    };
    let w = Writer::spawn_with(dir.path().to_path_buf(), 0, answer, Some(3600)).expect("writer");
    let mut o = obs(T0, vec![job(1, "a", T0 - 7200, None, 2, T0)]);
    o.intervals = vec![GpuInterval {
        job: 1,
        node: "node-1".into(),
        gpu: Some(0),
        gpus: 1,
        start: T0 - 7200,
        end: T0,
        util: Some(10.0),
    }];
    assert!(w.send(Request::Record(Box::new(o))));
    // Job 1 ends; job 2 ended two days ago (accounting history: not asked); job 3 ends too.
    let ended = obs(
        T0 + 60,
        vec![
            job(1, "a", T0 - 7200, Some(T0 + 30), 2, T0 + 60),
            job(2, "a", T0 - 3 * DAY, Some(T0 - 2 * DAY), 1, T0 + 60),
            job(3, "a", T0 - 600, Some(T0 + 50), 1, T0 + 60),
        ],
    );
    assert!(w.send(Request::Record(Box::new(ended.clone()))));
    // The same end seen again (another observation) is not asked again.
    assert!(w.send(Request::Record(Box::new(ended))));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while asked.lock().unwrap().len() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (done, wait) = std::sync::mpsc::channel();
    assert!(w.send(Request::Flush(done)));
    wait.recv_timeout(Duration::from_secs(20)).expect("flushed");
    w.finish();
    let want = |id: u64, end: i64, n: usize| ("c1".to_string(), id, Some(end), n);
    assert_eq!(
        *asked.lock().unwrap(),
        vec![want(1, T0 + 30, 1), want(3, T0 + 50, 0)],
        "job 2 ended too long ago; each once"
    );
    // The console hands back job 1's summary (job 3's Prometheus had nothing: none).
    let w = Writer::spawn_with(dir.path().to_path_buf(), 0, |_| {}, Some(3600)).expect("writer again");
    assert!(w.send(Request::PutSummary {
        cluster: "c1".into(),
        job: 1,
        at: T0 + 90,
        summary: "{\"job\":1,\"gpus\":1}".into(),
    }));
    w.finish();
    let l = Ledger::open(&ledger::path_for(dir.path(), "c1")).expect("open");
    assert_eq!(l.summary(1).expect("read"), Some((T0 + 90, "{\"job\":1,\"gpus\":1}".into())));
    assert_eq!(l.summary(3).expect("read"), None, "Prometheus had nothing: no summary");
    assert_eq!(l.summary(2).expect("read"), None);
    drop(l);

    // A version-2 file gains the table and keeps its jobs.
    let path = dir.path().join("old.sqlite");
    let mut l = Ledger::open(&path).expect("new");
    l.record(&[obs(T0, vec![job(9, "a", T0 - 600, Some(T0), 1, T0)])]).expect("record");
    drop(l);
    let c = rusqlite::Connection::open(&path).expect("sqlite");
    c.execute_batch("DROP TABLE job_summaries").expect("drop");
    c.pragma_update(None, "user_version", 2).expect("version 2");
    drop(c);
    let mut l = Ledger::open(&path).expect("migrated");
    assert_eq!(l.version().expect("version"), ledger::SCHEMA_VERSION);
    assert!(l.job(9).expect("read").is_some());
    l.put_summary(9, T0, "{}").expect("a summary");
    assert_eq!(l.summary(9).expect("read"), Some((T0, "{}".into())));
    // Pruning a job forgets its summary.
    l.prune(T0 + 1).expect("prune");
    assert_eq!(l.summary(9).expect("read"), None);
}

/// `report job` with no Prometheus to ask: the summary the ledger recorded at the job's end
/// answers, and the report says whose figures they are and when they were recorded.
#[test]
fn report_job_answers_from_the_ledgers_summary_without_prometheus() {
    common::pin_utc();
    let home = tempfile::tempdir().expect("tempdir");
    let config = home.path().join("config.toml");
    let dir = home.path().join("ledger").display().to_string();
    std::fs::write(&config, format!("[ledger]\ndir = {dir:?}\n")).expect("config");
    let run = |args: &[&str]| {
        common::gpuplane_cmd(home.path())
            .args(["--config", config.to_str().expect("utf-8"), "report", "job"])
            .args(args)
            .output()
            .expect("run gpuplane")
    };
    let path = common::ledger_path_of(&run(&["1"]));
    let mut l = Ledger::open(std::path::Path::new(&path)).expect("ledger");
    let (start, end) = (T0 - 3600, T0);
    l.record(&[obs(end, vec![job(4242, "vision", start, Some(end), 2, end)])]).expect("record");
    let finding = "storage at 98% of its 2.0 GB/s ceiling for 20m00s of the run on node-1";
    let summary = serde_json::json!({
        "telemetry": {"source": "prometheus", "selected_by": "placement", "start": start, "end": end,
                      "step_s": 60, "util": 9.5, "mem_peak_mib": 30000.0, "energy_kwh": 0.21,
                      "never_ran": ["node-1:1"], "gpus": []},
        "evidence": {"start": start, "end": end, "step_s": 60, "ceilings": {}, "nodes": [],
                     "findings": [{"kind": "storage", "node": "node-1", "value": 1.96e9,
                                   "ceiling": 2.0e9, "seconds": 1200, "text": finding}],
                     "no_data": ["no data for CPU (node_cpu_seconds_total)"], "queries": 15},
        "evidence_missing": null,
    });
    l.put_summary(4242, T0 + 600, &summary.to_string()).expect("summary");
    drop(l);
    let out = run(&["4242", "-o", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let e: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let t = &e["telemetry"];
    assert_eq!(
        (t["source"].as_str(), t["recorded_at_unix"].as_i64()),
        (Some("ledger"), Some(T0 + 600)),
        "{e:#}"
    );
    assert_eq!((t["util"].as_f64(), t["energy_kwh"].as_f64()), (Some(9.5), Some(0.21)));
    assert!(e.get("telemetry_missing").is_none(), "the ledger answered: {e:#}");
    assert_eq!(e["evidence"]["findings"][0]["value"].as_f64(), Some(1.96e9));
    let notes = e["notes"].to_string();
    assert!(notes.contains("never ran a process") && notes.contains(finding), "{notes}");
    let out = run(&["4242", "-o", "text"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let when = gpuplane::clock::stamp(T0 + 600);
    assert!(text.contains(&format!("From Prometheus (from the ledger, recorded at {when})")), "{text}");
    assert!(text.contains(finding) && text.contains("no data for CPU"), "{text}");
    // A job with no summary says why there are no figures, and invents none.
    let mut l = Ledger::open(std::path::Path::new(&path)).expect("ledger");
    l.record(&[obs(end, vec![job(4243, "vision", start, Some(end), 2, end)])]).expect("record");
    drop(l);
    let e: serde_json::Value = serde_json::from_slice(&run(&["4243", "-o", "json"]).stdout).expect("json");
    assert!(e["telemetry"].is_null() && e["evidence"].is_null(), "{e:#}");
    assert_eq!(e["telemetry_missing"], "no Prometheus configured ([prometheus] url)");
}

/// The console's looks are bounded (a first look at 200,000 finished jobs cost ~130 MB at
/// once): the finished jobs left out follow in catch-up observations, one per tick, and the
/// ledger ends up holding what one unbounded look records.
#[test]
fn bounded_looks_catch_up_to_what_one_unbounded_look_records() {
    let mut sim = Sim::new(SimConfig::default());
    let mut s = gpuplane::state::ClusterState::new(Default::default(), Default::default());
    for u in sim.initial() {
        s.apply(u);
    }
    for _ in 0..30 {
        s.apply(sim.tick());
    }
    let finished = s.jobs.iter().filter(|j| j.start.is_some() && j.end.is_some()).count();
    assert!(finished > 10, "the simulator has finished jobs to record: {finished}");
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut one, mut bounded) = (
        Ledger::open(&dir.path().join("one.db")).expect("open"),
        Ledger::open(&dir.path().join("bounded.db")).expect("open"),
    );
    one.record(&[Tracker::default().observe(&s).expect("a look")]).expect("record");
    let mut t = Tracker::default();
    let max = 4;
    let first = t.next(&s, max).expect("a look is due");
    assert_eq!(first.jobs.iter().filter(|j| j.end.is_some()).count(), max);
    assert!(t.behind());
    bounded.record(&[first]).expect("record");
    let mut catch_ups = 0;
    while let Some(o) = t.next(&s, max) {
        assert!(o.jobs.iter().all(|j| j.end.is_some()), "a catch-up carries finished jobs only");
        assert!(o.jobs.len() <= max && o.capacity.is_empty());
        bounded.record(&[o]).expect("record");
        catch_ups += 1;
        assert!(catch_ups <= finished, "catching up ends");
    }
    assert!(!t.behind());
    assert_eq!(catch_ups, finished.div_ceil(max) - 1, "{finished} finished jobs, {max} per observation");
    let ids = |l: &mut Ledger| {
        let mut v: Vec<(u64, Option<i64>)> =
            l.window(0, s.now).expect("window").jobs.iter().map(|j| (j.id, j.end)).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(ids(&mut bounded), ids(&mut one));
}

/// In a fleet each cluster has its own ledger: two clusters with the same job ids (the same
/// simulator seed) write two files, each holding only its own cluster's jobs. They were one
/// file (`_.sqlite`) where one cluster's job 4242 overwrote the other's.
#[test]
fn each_cluster_of_a_fleet_is_recorded_in_its_own_ledger() {
    use gpuplane::backend::sim::SimConfig;
    let mut a = common::app();
    a.live = gpuplane::state::ClusterState::new(Default::default(), Default::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let w = Writer::spawn(dir.path().to_path_buf(), 0, |_| {}).expect("writer");
    a.ledger = Some(LedgerLink::new(w));
    let mut sims: Vec<(&str, Sim)> = ["east", "west"]
        .into_iter()
        .map(|c| (c, Sim::new(SimConfig { nodes: 24, seed: 7, ..SimConfig::default() })))
        .collect();
    let wrap = |c: &str, u: Update| Msg::Update(Update::Cluster { cluster: c.into(), update: Box::new(u) });
    for (c, s) in &sims {
        for u in s.initial() {
            a.update(wrap(c, u));
        }
    }
    // Every job each cluster has had with a start (the simulator trims old ones meanwhile).
    let mut seen: [std::collections::BTreeSet<u64>; 2] = Default::default();
    for _ in 0..90 {
        for (c, s) in &mut sims {
            a.update(wrap(c, s.tick()));
        }
        a.ledger_tick();
        a.flush();
        for (k, c) in ["east", "west"].into_iter().enumerate() {
            seen[k]
                .extend(a.state().jobs.iter().filter(|j| j.cluster == c && j.start.is_some()).map(|j| j.id));
        }
    }
    let finish = a.ledger.take().expect("ledger");
    finish.writer.finish();
    assert!(!ledger::path_for(dir.path(), "").exists(), "no fleet-wide file");
    let mut ids = Vec::new();
    for (k, c) in ["east", "west"].into_iter().enumerate() {
        let l = Ledger::open(&ledger::path_for(dir.path(), c)).expect("the cluster's own ledger");
        let w = l.window(0, a.state().now).expect("window");
        let got: Vec<u64> = w.jobs.iter().map(|j| j.id).collect();
        assert!(!got.is_empty());
        let foreign: Vec<&u64> = got.iter().filter(|id| !seen[k].contains(id)).collect();
        assert!(foreign.is_empty(), "{c}'s ledger holds jobs {c} never had: {foreign:?}");
        ids.push(got);
    }
    assert!(ids[0].iter().any(|id| ids[1].contains(id)), "the two clusters share job ids");
}

/// A command reading one configured cluster records into, and reads from, the ledger the
/// console writes for that cluster (`<cluster>.sqlite`); a state of several clusters is looked
/// at whole.
#[test]
fn a_commands_look_at_one_configured_cluster_uses_that_clusters_ledger() {
    use gpuplane::backend::sim::SimConfig;
    let fleet = |names: &[&str]| {
        let mut s = gpuplane::state::ClusterState::new(Default::default(), Default::default());
        for c in names {
            let sim = Sim::new(SimConfig { nodes: 8, seed: 3, ..SimConfig::default() });
            for u in sim.initial() {
                s.apply(Update::Cluster { cluster: (*c).into(), update: Box::new(u) });
            }
        }
        s
    };
    let one = fleet(&["prod-a"]);
    let mut t = Tracker::for_state(&one);
    assert_eq!(t.ledger_name(&one), "prod-a");
    let o = t.observe(&one).expect("a look");
    assert_eq!(o.cluster, "prod-a");
    assert!(!o.jobs.is_empty());
    let two = fleet(&["prod-a", "prod-b"]);
    assert_eq!(Tracker::for_state(&two).scope(), "");
    let single = gpuplane::testing::state_after(SimConfig::default(), 3);
    let t = Tracker::for_state(&single);
    assert_eq!((t.scope().as_str(), t.ledger_name(&single)), ("", single.cluster.clone()));
}

/// `get cost --all-clusters` (a command's look at several clusters) records into and reads each
/// cluster's own ledger, the files the console writes: a job only a console recorded is
/// counted under its cluster, and two clusters' jobs of the same id stay two jobs.
#[test]
fn a_commands_look_at_several_clusters_reads_each_clusters_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = gpuplane::state::ClusterState::new(Default::default(), Default::default());
    for c in ["prod-a", "prod-b"] {
        let sim = Sim::new(SimConfig { nodes: 8, seed: 3, ..SimConfig::default() });
        for u in sim.initial() {
            s.apply(Update::Cluster { cluster: c.into(), update: Box::new(u) });
        }
    }
    // What a console recorded for prod-b alone: a job that has since left the scheduler.
    let now = s.now;
    let mut gone = job(9_999_999, "vision", now - 3_600, Some(now - 600), 8, now - 600);
    gone.gpu_model = None;
    let mut l = Ledger::open(&ledger::path_for(dir.path(), "prod-b")).unwrap();
    l.record(&[Observation { cluster: "prod-b".into(), ..obs(now - 600, vec![gone]) }]).unwrap();
    drop(l);

    let windows = gpuplane::commands::ledger_windows(&s, dir.path(), now - DAY, now).unwrap();
    let names: Vec<&str> = windows.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(names, ["prod-a", "prod-b"]);
    for c in ["prod-a", "prod-b"] {
        assert!(ledger::path_for(dir.path(), c).exists(), "{c}'s ledger");
    }
    assert!(!ledger::path_for(dir.path(), "").exists(), "no ledger for the fleet as a whole");

    let r = gpuplane::commands::ledger_report(&s, now - DAY, now, &windows);
    let gone: Vec<&str> =
        r.jobs.iter().filter(|j| j.id == 9_999_999).map(|j| j.job.cluster.as_str()).collect();
    assert_eq!(gone, ["prod-b"], "the recorded job, under its own cluster only");
    // Both simulators have the same seed: every running job's id is in both clusters.
    let running = s.jobs.iter().find(|j| j.state == JobState::Running && j.cluster == "prod-a").unwrap().id;
    let mut of: Vec<&str> =
        r.jobs.iter().filter(|j| j.id == running).map(|j| j.job.cluster.as_str()).collect();
    of.sort_unstable();
    assert_eq!(of, ["prod-a", "prod-b"]);
}
