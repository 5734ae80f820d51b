//! Audit: the newest records of the audit log, as written.

pub use crate::tables::audit::*;

use super::{TableView, ViewId};

/// Audit: the newest records of the audit log.
pub static VIEW: TableView =
    TableView { id: ID, title: "Audit", aliases: &["au", "log"], table: &[&AuditTable] };

pub const ID: ViewId = ViewId("audit");
