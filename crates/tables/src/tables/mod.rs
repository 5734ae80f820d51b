//! The tables, one file each, and their registry ([`ALL`]): `gpuplane get`, the console's
//! views, completion and the filter's key list all find a table here by its id.

pub mod detail;
pub mod filter;
pub mod fmt;
pub mod table;
pub mod tone;

pub mod alerts;
pub mod audit;
pub mod cost;
pub mod fabric;
pub mod gpus;
pub mod jobs;
pub mod nodes;
pub mod overview;
pub mod queues;
pub mod quotas;
pub mod rollup;
pub mod sources;
pub mod storage;
pub mod timeline;

use table::{TableId, TableSource};

/// Every table, each once, in the order of the console's views.
pub static ALL: &[&dyn TableSource] = &[
    &overview::IncidentsTable,
    &nodes::NodesTable,
    &gpus::GpusTable,
    &fabric::NodesTable,
    &fabric::PortsTable,
    &storage::StorageTable,
    &jobs::JobsTable,
    &queues::QueuesTable,
    &queues::MyJobsTable,
    &quotas::QuotasTable,
    &rollup::TeamsTable,
    &rollup::PeopleTable,
    &cost::ByTable,
    &cost::CostJobsTable,
    &cost::CausesTable,
    &cost::WaitsTable,
    &cost::TeamsTable,
    &audit::AuditTable,
    &sources::SourcesTable,
    &alerts::AlertsTable,
    &alerts::SilencesTable,
    &timeline::TimelineTable,
];

impl TableId {
    /// The table's source, found in the registry.
    pub fn source(self) -> &'static dyn TableSource {
        ALL.iter().copied().find(|t| t.id() == self).unwrap_or(&overview::IncidentsTable)
    }
}

/// Every table, each once.
pub fn all() -> impl Iterator<Item = &'static dyn TableSource> {
    ALL.iter().copied()
}
