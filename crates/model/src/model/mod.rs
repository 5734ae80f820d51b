//! Backend-neutral domain model of a GPU cluster: the four planes (compute, network,
//! storage, control) as plain data. Backends translate their protocols into these types;
//! views only ever read them.

pub mod acceptance;
mod action;
pub mod alert;
mod cost;
pub mod doctor;
pub mod evidence;
mod fabric;
mod gpu;
mod job;
pub mod jobstats;
mod key;
mod node;
pub mod protocol;
mod queue;
mod storage;
pub mod timeline;
pub mod triage;
pub mod wire;
mod xid;

pub use action::{ActionError, ActionErrorKind, FORBIDDEN_FIX};
pub use cost::{Denominator, MONTH_S, PriceCard, Reservation, Unit, gpu_hours_cost};
pub use fabric::{FabricKind, FabricPort, PortState};
pub use gpu::{EccCounts, Gpu, GpuLocal, GpuProc, LinkErrors, MigSlice, XidEvent, throttle_names};
pub use job::{Job, JobId, JobState, held_gpu_seconds, measured_util, pending_reason_text};
pub use key::{GpuKey, JobKey, NodeKey, ObjKey};
pub use node::{
    GPUS_CLAIMED_LABEL, LinkKind, MAX_GPUS_PER_NODE, MAX_MIG_PER_GPU, Nic, Node, NodeReason, NodeState,
    Topology,
};
pub use queue::{Queue, QueueKind, Quota};
pub use storage::{Filesystem, StorageKind};
pub use triage::{Ack, ActionMark, Handling, IncidentKey};
pub use xid::{XidInfo, xid_info};

/// Short strings from the cluster (names, users, models) are stored inline when they fit.
pub type Text = compact_str::CompactString;

/// Seconds since the Unix epoch. Every timestamp in the model uses this.
pub type Epoch = i64;
