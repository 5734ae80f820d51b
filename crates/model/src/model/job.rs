use super::{Epoch, Text};

/// Job identifier. Slurm job ids are numbers; Kubernetes workloads get a stable hash id and keep
/// their name in [`Job::name`].
pub type JobId = u64;

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Pending,
    Running,
    Completing,
    Completed,
    Failed,
    Cancelled,
    Timeout,
    Preempted,
    NodeFail,
}

impl JobState {
    pub fn label(self) -> &'static str {
        match self {
            Self::Pending => "PENDING",
            Self::Running => "RUNNING",
            Self::Completing => "COMPLETING",
            Self::Completed => "COMPLETED",
            Self::Failed => "FAILED",
            Self::Cancelled => "CANCELLED",
            Self::Timeout => "TIMEOUT",
            Self::Preempted => "PREEMPTED",
            Self::NodeFail => "NODE_FAIL",
        }
    }

    /// The state whose [`label`](Self::label) this is.
    pub fn from_label(s: &str) -> Option<JobState> {
        const ALL: [JobState; 9] = [
            JobState::Pending,
            JobState::Running,
            JobState::Completing,
            JobState::Completed,
            JobState::Failed,
            JobState::Cancelled,
            JobState::Timeout,
            JobState::Preempted,
            JobState::NodeFail,
        ];
        ALL.into_iter().find(|j| j.label() == s)
    }

    pub fn short(self) -> &'static str {
        match self {
            Self::Pending => "PD",
            Self::Running => "R",
            Self::Completing => "CG",
            Self::Completed => "CD",
            Self::Failed => "F",
            Self::Cancelled => "CA",
            Self::Timeout => "TO",
            Self::Preempted => "PR",
            Self::NodeFail => "NF",
        }
    }

    pub fn is_active(self) -> bool {
        matches!(self, Self::Pending | Self::Running | Self::Completing)
    }

    pub fn is_failure(self) -> bool {
        matches!(self, Self::Failed | Self::Timeout | Self::NodeFail)
    }
}

/// A job (Slurm job, Kubernetes workload grouped by owner).
#[derive(Debug, Clone, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Job {
    /// The configured cluster this job belongs to; empty in a single-cluster console.
    #[serde(skip_serializing_if = "Text::is_empty")]
    pub cluster: Text,
    pub id: JobId,
    pub name: Text,
    pub user: Text,
    /// Team: Slurm account or Kubernetes namespace (mapped through a label when configured).
    pub account: Text,
    /// Queue: Slurm partition or Kueue LocalQueue.
    pub queue: Text,
    pub state: JobState,
    /// Scheduler's raw pending reason (`Priority`, `Resources`, `QOSGrpGRES`, …).
    pub pending_reason: Option<Text>,
    pub priority: u32,
    pub submit: Epoch,
    pub start: Option<Epoch>,
    pub end: Option<Epoch>,
    /// Scheduler's estimate of the start time of a pending job.
    pub est_start: Option<Epoch>,
    pub gpus: u32,
    pub gpu_model: Option<Text>,
    pub nodes: Vec<Text>,
    pub exit_reason: Option<Text>,
    pub retries: u32,
    /// Position among pending jobs of the same queue as the backend reports it (Kueue
    /// visibility API). When `None` the state derives it from priority order.
    pub position: Option<u32>,
    /// Final queue position (1 = next): the backend's `position` when given, otherwise
    /// derived by the state from priority order. `None` for jobs that are not pending.
    pub rank: Option<u32>,
    /// GPU-seconds measured by utilisation telemetry and their utilisation-weighted part,
    /// accumulated by the state (a simulator's accounting gives both). Not what the job held:
    /// that is [`Job::held_gpu_seconds`], from its GPUs, start and end. 0 when nothing measured
    /// the job (a job first seen in accounting history): its utilisation is not measured.
    pub gpu_seconds: f64,
    pub useful_gpu_seconds: f64,
    /// The scheduler's time limit, seconds (Slurm's `time_limit`); `None` when unknown or
    /// unlimited ([`Job::no_time_limit`] tells them apart).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<i64>,
    /// The scheduler says the job has no time limit (Slurm's `UNLIMITED`): it runs until it
    /// ends by itself, so nobody can say when its resources free up.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub no_time_limit: bool,
}

impl Job {
    /// Wall time so far (running) or in total (finished), in seconds.
    pub fn elapsed(&self, now: Epoch) -> Option<i64> {
        let start = self.start?;
        Some((self.end.unwrap_or(now) - start).max(0))
    }

    /// Queue wait: start − submit, or now − submit while pending.
    pub fn wait(&self, now: Epoch) -> i64 {
        (self.start.unwrap_or(now) - self.submit).max(0)
    }

    /// Whether a pending job waits for its queue (its turn, resources, limits), not for its
    /// owner or another job (held, a dependency, a begin time): only such waits are queue
    /// waits.
    pub fn waits_for_queue(&self) -> bool {
        self.state == JobState::Pending
            && !matches!(
                self.pending_reason.as_deref(),
                Some(
                    "JobHeldUser" | "JobHeldAdmin" | "Dependency" | "DependencyNeverSatisfied" | "BeginTime"
                )
            )
    }

    /// Mean utilisation of the job's GPUs over what telemetry measured of its run, 0–100;
    /// `None` when nothing measured it (not 0 %).
    pub fn useful_pct(&self) -> Option<f64> {
        measured_util(self.gpu_seconds, self.useful_gpu_seconds)
    }

    /// GPU-seconds the job held inside `[from, to]` (a running job until `until`): see
    /// [`held_gpu_seconds`].
    pub fn held_gpu_seconds(&self, from: Epoch, to: Epoch, until: Epoch) -> f64 {
        held_gpu_seconds(self.gpus, self.start, self.end, until, from, to)
    }
}

/// GPU-seconds a job held inside `[from, to]`: its GPU count × the part of its run (start to
/// end, or to `until` while it runs) inside the window. The one definition of a job's
/// GPU-hours: every surface (the Cost view, `get cost`, `report cost`, `report job`) takes it,
/// never what one process happened to observe.
pub fn held_gpu_seconds(
    gpus: u32,
    start: Option<Epoch>,
    end: Option<Epoch>,
    until: Epoch,
    from: Epoch,
    to: Epoch,
) -> f64 {
    let Some(start) = start else { return 0.0 };
    let end = end.unwrap_or(until);
    f64::from(gpus) * (end.min(to) - start.max(from)).max(0) as f64
}

/// Utilisation (0–100) of `useful` out of `measured` GPU-seconds; `None` when nothing was
/// measured.
pub fn measured_util(measured: f64, useful: f64) -> Option<f64> {
    (measured > 0.0 && measured.is_finite()).then(|| (100.0 * useful / measured).clamp(0.0, 100.0))
}

/// The pending reason in plain language, as a researcher would want it explained.
pub fn pending_reason_text(reason: &str) -> &'static str {
    match reason {
        "Resources" => "waiting for GPUs/nodes to free up (normal)",
        "Priority" => "higher-priority jobs are ahead in this queue (normal)",
        "Dependency" => "waiting for another job to finish",
        "DependencyNeverSatisfied" => "its dependency failed: it will never run; cancel it",
        "BeginTime" => "its requested start time has not come yet",
        "ReqNodeNotAvail" => "a required node is unavailable (down, drained or reserved)",
        "NodeDown" => "a node it needs is down",
        "PartitionDown" | "PartitionInactive" => "the queue is down: an admin must bring it up",
        "PartitionNodeLimit" => "node count is outside the queue's limits",
        "PartitionTimeLimit" => "time limit exceeds the queue's maximum: it will not start as is",
        "PartitionConfig" => "it violates a queue limit",
        "Reservation" => "waiting for its reservation to start or free up",
        "JobHeldUser" => "held by its owner (release it to run)",
        "JobHeldAdmin" => "held by an admin",
        "QOSMaxGRESPerUser" => "its GPUs and the user's running ones would pass the QOS's per-user limit",
        "QOSMaxGRESPerJob" | "AssocMaxGRESPerJob" => {
            "asks for more GPUs than one job may use: it will not start as is"
        }
        "QOSGrpGRES" | "AssocGrpGRES" => "the team's GPU quota is fully in use",
        "QOSGrpCpuLimit" | "AssocGrpCpuLimit" => "the team's CPU quota is fully in use",
        "QOSGrpNodeLimit" | "AssocGrpNodeLimit" => "the team's node quota is fully in use",
        "QOSMaxJobsPerUserLimit" | "AssocMaxJobsLimit" => "you have the most running jobs allowed",
        "AssocGrpJobsLimit" => "the team has the most running jobs allowed",
        "JobArrayTaskLimit" => "the array's concurrent-task limit is reached",
        "Licenses" => "waiting for a license",
        "InvalidAccount" | "InvalidQOS" | "QOSNotAllowed" => {
            "bad or forbidden account/QOS: it will not run until fixed"
        }
        "BadConstraints" => "its requirements can never be satisfied",
        "Prolog" => "the prolog is still running",
        "Cleaning" => "a requeued job is still cleaning up",
        "WaitingForScheduling" | "None" => "not yet evaluated by the scheduler",
        "QuotaReserved" => "quota reserved, waiting for admission checks",
        "Inadmissible" => "the queue cannot admit it (check the LocalQueue and ClusterQueue)",
        "InsufficientQuota" => "the queue's quota (including what it may borrow) is in use",
        _ => "see the scheduler's reason",
    }
}
