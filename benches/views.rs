//! Benchmarks at scale: 10,000 nodes × 8 GPUs and 200,000 jobs from the simulator.
//! Run: `cargo bench --bench views` (figures in docs/performance.md, Console and views).

use divan::Bencher;
use gpuplane::backend::sim::{Sim, SimConfig};
use gpuplane::model::protocol::Update;
use gpuplane::state::ClusterState;
use gpuplane::tui::app::{App, Msg};
use gpuplane::tui::draw::draw;
use gpuplane::tui::keymap::Keymap;
use gpuplane::tui::theme::Theme;
use gpuplane::tui::views;
use gpuplane::tui::widgets::Glyphs;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::sync::LazyLock;

fn big() -> SimConfig {
    SimConfig { nodes: 10_000, gpus_per_node: 8, jobs: 200_000, ..SimConfig::default() }
}

/// The large cluster after a few ticks, and the simulator that made it.
static BIG: LazyLock<(ClusterState, Sim)> = LazyLock::new(|| {
    let mut sim = Sim::new(big());
    let mut s = ClusterState::new(Default::default(), Default::default());
    for u in sim.initial() {
        s.apply(u);
    }
    for _ in 0..3 {
        s.apply(sim.tick());
    }
    (s, sim)
});

fn app(view: &str) -> App {
    let mut a = App::new(
        BIG.0.clone(),
        Keymap::builtin("default"),
        Theme::builtin("dark"),
        Glyphs::UNICODE,
        "researcher".into(),
    );
    a.run_command(view);
    a.prepare();
    a
}

fn main() {
    divan::main();
}

/// One full frame at 200×60 once rows are cached (the steady state between updates).
#[divan::bench(args = ["nodes", "gpus", "wall", "jobs"], sample_count = 50)]
fn render_frame_200x60(bencher: Bencher, view: &str) {
    let mut a = app(view);
    let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let now = a.state().now;
    bencher.bench_local(|| {
        term.draw(|f| draw(f, &mut a, now)).unwrap();
    });
}

/// Applying one simulator tick (80,000 GPU samples plus job changes) to the state, as the
/// running console does: one long-lived state, each iteration the next tick.
#[divan::bench(sample_count = 30, sample_size = 1)]
fn apply_tick(bencher: Bencher) {
    let (s, sim) = &*BIG;
    let mut state = s.clone();
    let mut sim = sim.clone();
    bencher.with_inputs(|| sim.tick()).bench_local_values(|u: Update| {
        state.apply(u);
    });
}

/// Changing the Jobs filter (200,000 jobs), the sort already cached.
#[divan::bench(args = ["llama", "user=alice", "state=pending"], sample_count = 20, sample_size = 1)]
fn jobs_filter_change(bencher: Bencher, filter: &str) {
    bencher.with_inputs(|| app("jobs")).bench_local_values(|mut a| {
        a.run_command(&format!("jobs {filter}"));
        a.prepare();
        a
    });
}

/// Re-sorting 200,000 jobs by another column with a filter in place.
#[divan::bench(args = ["NAME", "WAIT", "PRIO"], sample_count = 20, sample_size = 1)]
fn jobs_resort(bencher: Bencher, name: &str) {
    let cols = views::jobs::TABLE.source().columns();
    let col = cols.iter().position(|c| c.name == name).expect("a Jobs column");
    bencher.with_inputs(|| app("jobs")).bench_local_values(|mut a| {
        let ncols = cols.len();
        a.ui.tables[views::jobs::TABLE].sort_by(col, ncols);
        a.prepare();
        a
    });
}

/// A tick arriving while the Jobs view is open: apply + refilter/resort + draw.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn tick_to_frame_jobs_view(bencher: Bencher) {
    let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();
    bencher
        .with_inputs(|| {
            let mut sim = BIG.1.clone();
            (app("jobs"), sim.tick())
        })
        .bench_local_values(|(mut a, u)| {
            a.update(Msg::Update(u));
            let now = a.state().now;
            term.draw(|f| draw(f, &mut a, now)).unwrap();
            assert_eq!(a.ui.view, views::jobs::ID);
            a
        });
}
