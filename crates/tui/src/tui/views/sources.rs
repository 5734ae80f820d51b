//! Sources: every data source the console reads (scheduler, telemetry, local GPUs, the
//! simulator), whether it answers, since when, and what is wrong with it and how to fix it;
//! then gpuplane's own files (usage ledger, ack store, event journal, audit log and each of
//! its witnesses) with their paths, how their last write or read went, and the fix when it
//! failed. Added as one file plus one registry line, as every view is.

pub use crate::tables::sources::*;

use super::{TableView, ViewId};

/// Sources: the data sources and their health.
pub static VIEW: TableView =
    TableView { id: ID, title: "Sources", aliases: &["src", "health"], table: &[&SourcesTable] };

pub const ID: ViewId = ViewId("sources");
