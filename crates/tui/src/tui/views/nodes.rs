//! Nodes: one row per node with its scheduling state, GPU allocation and health.

pub use crate::tables::nodes::*;

use super::{TableView, ViewId};

/// Nodes: every node with its state, GPUs, load and reason.
pub static VIEW: TableView =
    TableView { id: ID, title: "Nodes", aliases: &["no", "node"], table: &[&NodesTable] };

pub const ID: ViewId = ViewId("nodes");
