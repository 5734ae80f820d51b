//! Tests across the layers this crate joins: the simulator as the state sees it and as actions change it.

mod sim;
