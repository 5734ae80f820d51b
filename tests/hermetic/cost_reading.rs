//! The Cost view with a ledger (issue 30, finding 3d): until the ledger's first answer for the
//! window arrives it says it is reading the ledger, never "no ledger" (the file is there and
//! written); in a fleet it reads each cluster's own ledger (the files the console writes, one
//! per cluster) and its window holds every cluster's recorded jobs, as those files say.

use crate::common;

use gpuplane::backend::sim::{Sim, SimConfig};
use gpuplane::model::protocol::Update;
use gpuplane::store::Ledger;
use gpuplane::store::ledger::{self, Answer, Writer};
use gpuplane::tui::app::{LedgerLink, Msg};
use gpuplane::tui::views;
use std::time::Duration;

fn writer(dir: &std::path::Path) -> (Writer, std::sync::mpsc::Receiver<Answer>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let w = Writer::spawn(dir.to_path_buf(), 0, move |a| {
        let _ = tx.send(a);
    })
    .expect("writer");
    (w, rx)
}

/// Window answers, `n` of them (other answers are applied as they come).
fn answers(a: &mut gpuplane::tui::app::App, rx: &std::sync::mpsc::Receiver<Answer>, n: usize) {
    let mut got = 0;
    while got < n {
        let answer = rx.recv_timeout(Duration::from_secs(20)).expect("an answer");
        got += usize::from(matches!(answer, Answer::Window { .. }));
        a.update(Msg::Ledger(answer));
    }
}

#[test]
fn before_its_first_answer_the_cost_view_is_reading_the_ledger_not_without_one() {
    let (mut a, mut sim) = common::app_with_sim();
    let dir = tempfile::tempdir().expect("tempdir");
    let (w, rx) = writer(dir.path());
    a.ledger = Some(LedgerLink::new(w));
    for _ in 0..60 {
        a.update(Msg::Update(sim.tick()));
        a.ledger_tick();
        a.flush();
    }
    common::typed(&mut a, ":cost\r");
    a.ledger_tick();
    a.flush();
    // Asked; the answer is not handled yet.
    for (w, h) in [(60, 20), (80, 24), (160, 48)] {
        let screen = common::render(&mut a, w, h);
        assert!(!screen.contains("no ledger"), "{w}x{h}: the ledger is written, not absent:\n{screen}");
        assert!(screen.contains("reading"), "{w}x{h}: says it reads the ledger:\n{screen}");
        if w == 80 {
            insta::assert_snapshot!("cost_reading_the_ledger_80x24", screen);
        }
    }
    assert_eq!(a.cost.basis, gpuplane::cost::Basis::Reading);
    answers(&mut a, &rx, 1);
    let screen = common::render(&mut a, 160, 48);
    assert!(matches!(a.cost.basis, gpuplane::cost::Basis::Ledger { .. }), "{:?}", a.cost.basis);
    assert!(!screen.contains("reading"), "{screen}");
}

#[test]
fn a_fleets_cost_view_reads_each_clusters_own_ledger() {
    let mut a = common::app();
    a.live = gpuplane::state::ClusterState::new(Default::default(), Default::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let (w, rx) = writer(dir.path());
    a.ledger = Some(LedgerLink::new(w));
    let names = ["east", "west"];
    let mut sims: Vec<(&str, Sim)> = names
        .into_iter()
        .map(|c| (c, Sim::new(SimConfig { nodes: 24, seed: 7, ..SimConfig::default() })))
        .collect();
    let wrap = |c: &str, u: Update| Msg::Update(Update::Cluster { cluster: c.into(), update: Box::new(u) });
    for (c, s) in &sims {
        for u in s.initial() {
            a.update(wrap(c, u));
        }
    }
    for _ in 0..90 {
        for (c, s) in &mut sims {
            a.update(wrap(c, s.tick()));
        }
        a.ledger_tick();
        a.flush();
    }
    // Each tracker's writes are on disk before the view asks (the writer batches).
    let (done, wait) = std::sync::mpsc::channel();
    a.ledger.as_ref().unwrap().writer.send(ledger::Request::Flush(done));
    wait.recv_timeout(Duration::from_secs(20)).expect("flushed");
    common::typed(&mut a, ":cost\r");
    assert_eq!(a.ui.view, views::cost::ID);
    a.ledger_tick();
    a.flush();
    answers(&mut a, &rx, names.len());
    common::render(&mut a, 160, 48);
    assert!(matches!(a.cost.basis, gpuplane::cost::Basis::Ledger { .. }), "{:?}", a.cost.basis);
    // The oracle: what each cluster's own file holds for the window.
    let s = a.state();
    let window = gpuplane::cost::WINDOWS[gpuplane::tui::views::cost::settings(&a.ui.own).window].0;
    for c in names {
        let l = Ledger::open(&ledger::path_for(dir.path(), c)).expect("the cluster's ledger");
        let w = l.window(s.now - window, s.now).expect("window");
        let held: Vec<u64> = w
            .jobs
            .iter()
            .filter(|j| {
                j.gpus > 0 && j.start.is_some_and(|st| j.end.unwrap_or(j.last_seen) > st.max(s.now - window))
            })
            .map(|j| j.id)
            .collect();
        assert!(!held.is_empty(), "{c} recorded jobs");
        for id in held {
            assert!(
                a.cost.jobs.iter().any(|j| j.id == id && j.job.cluster == c),
                "{c}'s job {id} from its ledger is in the fleet's window"
            );
        }
        assert!(w.capacity.iter().map(|x| x.unallocated_s + x.drained_s + x.down_s).sum::<f64>() > 0.0);
    }
    assert!(a.cost.unused.total().gpu_hours > 0.0, "the clusters' capacity: {:?}", a.cost.unused);
}
