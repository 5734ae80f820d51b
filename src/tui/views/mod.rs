//! The view registry: every view is one file plus one line in [`VIEWS`].

pub mod audit;
pub mod cost;
pub mod detail;
pub mod fabric;
pub mod gpus;
pub mod jobs;
pub mod nodes;
pub mod overview;
pub mod queues;
pub mod quotas;
pub mod storage;
pub mod topology;

use super::widgets::table::TableSource;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ViewId {
    Overview,
    Nodes,
    Gpus,
    Topology,
    Fabric,
    Storage,
    Jobs,
    Queues,
    Quotas,
    Cost,
    Audit,
}

/// Every table in the console; each has its own selection, sort and filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TableId {
    Incidents,
    Nodes,
    Gpus,
    Fabric,
    FabricNodes,
    Storage,
    Jobs,
    Queues,
    MyJobs,
    Quotas,
    CostTeams,
    CostJobs,
    Audit,
}

impl TableId {
    pub const COUNT: usize = 13;

    pub fn source(self) -> &'static dyn TableSource {
        match self {
            TableId::Incidents => &overview::IncidentsTable,
            TableId::Nodes => &nodes::NodesTable,
            TableId::Gpus => &gpus::GpusTable,
            TableId::Fabric => &fabric::PortsTable,
            TableId::FabricNodes => &fabric::NodesTable,
            TableId::Storage => &storage::StorageTable,
            TableId::Jobs => &jobs::JobsTable,
            TableId::Queues => &queues::QueuesTable,
            TableId::MyJobs => &queues::MyJobsTable,
            TableId::Quotas => &quotas::QuotasTable,
            TableId::CostTeams => &cost::TeamsTable,
            TableId::CostJobs => &cost::CostJobsTable,
            TableId::Audit => &audit::AuditTable,
        }
    }
}

pub struct ViewMeta {
    pub id: ViewId,
    pub title: &'static str,
    /// Names accepted in command mode; the first is canonical.
    pub names: &'static [&'static str],
    /// Focusable tables, in Tab order.
    pub tables: &'static [TableId],
}

pub const VIEWS: &[ViewMeta] = &[
    ViewMeta {
        id: ViewId::Overview,
        title: "Overview",
        names: &["overview", "ov", "home", "incidents"],
        tables: &[TableId::Incidents],
    },
    ViewMeta {
        id: ViewId::Nodes,
        title: "Nodes",
        names: &["nodes", "no", "node"],
        tables: &[TableId::Nodes],
    },
    ViewMeta {
        id: ViewId::Gpus,
        title: "GPUs",
        names: &["gpus", "gpu", "wall", "heatmap"],
        tables: &[TableId::Gpus],
    },
    ViewMeta { id: ViewId::Topology, title: "Topology", names: &["topology", "topo", "tree"], tables: &[] },
    ViewMeta {
        id: ViewId::Fabric,
        title: "Fabric",
        names: &["fabric", "fab", "ib", "net"],
        tables: &[TableId::FabricNodes, TableId::Fabric],
    },
    ViewMeta {
        id: ViewId::Storage,
        title: "Storage",
        names: &["storage", "st", "fs"],
        tables: &[TableId::Storage],
    },
    ViewMeta { id: ViewId::Jobs, title: "Jobs", names: &["jobs", "jo", "job"], tables: &[TableId::Jobs] },
    ViewMeta {
        id: ViewId::Queues,
        title: "Queues",
        names: &["queues", "queue", "qu", "partitions"],
        tables: &[TableId::Queues, TableId::MyJobs],
    },
    ViewMeta {
        id: ViewId::Quotas,
        title: "Quotas",
        names: &["quotas", "quota", "quo"],
        tables: &[TableId::Quotas],
    },
    ViewMeta {
        id: ViewId::Cost,
        title: "Cost",
        names: &["cost", "costs", "bill"],
        tables: &[TableId::CostTeams, TableId::CostJobs],
    },
    ViewMeta { id: ViewId::Audit, title: "Audit", names: &["audit", "au", "log"], tables: &[TableId::Audit] },
];

impl ViewId {
    pub fn meta(self) -> &'static ViewMeta {
        VIEWS.iter().find(|v| v.id == self).unwrap_or(&VIEWS[0])
    }

    pub fn by_name(name: &str) -> Option<ViewId> {
        VIEWS.iter().find(|v| v.names.contains(&name)).map(|v| v.id)
    }
}
