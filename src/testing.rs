//! Helpers for tests, benches and examples: a simulated cluster's state after some ticks.
//! It sits at the top of the layers (it joins the simulator backend to the state), so the
//! layers below can use it only from their test code.

use crate::backend::sim::Sim;
pub use crate::backend::sim::SimConfig;
use crate::state::{ClusterState, Thresholds};

/// A `ClusterState` after the simulator's `initial()` and `ticks` ticks (default prices and
/// thresholds).
pub fn state_after(cfg: SimConfig, ticks: usize) -> ClusterState {
    let mut state = ClusterState::new(crate::model::PriceCard::default(), Thresholds::default());
    let mut sim = Sim::new(cfg);
    for u in sim.initial() {
        state.apply(u);
    }
    for _ in 0..ticks {
        state.apply(sim.tick());
    }
    state
}
