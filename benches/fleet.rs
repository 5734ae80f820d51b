//! The fleet at scale: ten simulated clusters of 10,000 nodes × 8 GPUs each (100,000 nodes,
//! 800,000 GPUs, the simulator's default job count per cluster) in one state, every object
//! carrying its cluster, as ten `[[cluster]]` entries with `[cluster.sim] nodes = 10000` open.
//! Run: `cargo bench --bench fleet` (figures in docs/performance.md, Fleet).

use divan::Bencher;
use gpuplane::backend::sim::{Sim, SimConfig};
use gpuplane::model::protocol::Update;
use gpuplane::state::ClusterState;
use gpuplane::tui::app::App;
use gpuplane::tui::draw::draw;
use gpuplane::tui::keymap::Keymap;
use gpuplane::tui::theme::Theme;
use gpuplane::tui::widgets::Glyphs;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::sync::LazyLock;

const CLUSTERS: u64 = 10;

fn wrap(i: u64, u: Update) -> Update {
    Update::Cluster { cluster: format!("sim-{}", i + 1).into(), update: Box::new(u) }
}

/// The fleet after three ticks of every cluster, and the simulators that made it.
static FLEET: LazyLock<(ClusterState, Vec<Sim>)> = LazyLock::new(|| {
    let mut sims: Vec<Sim> = (0..CLUSTERS)
        .map(|i| {
            Sim::new(SimConfig { nodes: 10_000, gpus_per_node: 8, seed: 42 + i, ..SimConfig::default() })
        })
        .collect();
    let mut s = ClusterState::new(Default::default(), Default::default());
    for (i, sim) in sims.iter().enumerate() {
        for u in sim.initial() {
            s.apply(wrap(i as u64, u));
        }
    }
    for _ in 0..3 {
        for (i, sim) in sims.iter_mut().enumerate() {
            s.apply(wrap(i as u64, sim.tick()));
        }
    }
    (s, sims)
});

fn main() {
    divan::main();
}

/// One full frame at 200×60 in all-clusters mode (CLUSTER column, the whole fleet's rows),
/// rows cached: the steady state between updates.
#[divan::bench(args = ["overview", "nodes", "gpus", "jobs", "quotas"], sample_count = 30)]
fn render_frame_200x60(bencher: Bencher, view: &str) {
    let mut a = App::new(
        FLEET.0.clone(),
        Keymap::builtin("default"),
        Theme::builtin("dark"),
        Glyphs::UNICODE,
        "researcher".into(),
    );
    a.run_command(view);
    a.prepare();
    let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let now = a.state().now;
    bencher.bench_local(|| {
        term.draw(|f| draw(f, &mut a, now)).unwrap();
    });
}

/// One cluster's tick (80,000 GPU samples and its job changes) applied to the fleet's state:
/// the fused pass and incident detection run over the whole fleet.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn apply_one_clusters_tick(bencher: Bencher) {
    let (s, sims) = &*FLEET;
    let mut state = s.clone();
    let mut sim = sims[0].clone();
    bencher.with_inputs(|| wrap(0, sim.tick())).bench_local_values(|u: Update| {
        state.apply(u);
    });
}
