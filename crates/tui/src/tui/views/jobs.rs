//! Jobs: every job with its state, queue position and pending reason.

pub use crate::tables::jobs::*;

use super::{TableView, ViewId};

/// Jobs: every job, where it runs or why it pends.
pub static VIEW: TableView =
    TableView { id: ID, title: "Jobs", aliases: &["jo", "job"], table: &[&JobsTable] };

pub const ID: ViewId = ViewId("jobs");
