//! Storage: filesystems and volumes holding datasets, weights and checkpoints.

pub use crate::tables::storage::*;

use super::{TableView, ViewId};

/// Storage: filesystems, fill, throughput and what they hold.
pub static VIEW: TableView =
    TableView { id: ID, title: "Storage", aliases: &["st", "fs"], table: &[&StorageTable] };

pub const ID: ViewId = ViewId("storage");
