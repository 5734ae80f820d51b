//! Why a run ended without completing: its cause, read from what the scheduler said — the
//! job's state (Slurm's `NODE_FAIL`, `TIMEOUT`, `PREEMPTED`, `CANCELLED`, `OUT_OF_MEMORY`
//! mapped to failed) and its exit reason (Slurm's exit code, signal and reason; a Kubernetes
//! container's termination reason, `OOMKilled`, `Evicted`, `DeadlineExceeded`).
//!
//! Node failures, OOM, timeouts and non-zero exits are the `failed` part of the bill; a
//! preempted or cancelled run is not (its GPU-hours are counted as useful or idle), but its
//! GPU-hours are listed under its cause too, so the failures table shows every interrupted run.

use crate::model::JobState;

/// The cause of a run that did not complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// The node (or its GPU) failed under the job: `NODE_FAIL`, `BOOT_FAIL`.
    NodeFailure,
    /// Out of memory: Slurm's `OUT_OF_MEMORY`, a container `OOMKilled`.
    Oom,
    /// The time limit (Slurm `TIMEOUT`, Kubernetes `DeadlineExceeded`).
    Timeout,
    /// Preempted or evicted by the scheduler for other work.
    Preemption,
    /// Cancelled by a person.
    UserCancel,
    /// The program exited with an error (any other failure).
    NonZeroExit,
}

impl Cause {
    pub const ALL: [Cause; 6] = [
        Cause::NodeFailure,
        Cause::Oom,
        Cause::Timeout,
        Cause::Preemption,
        Cause::UserCancel,
        Cause::NonZeroExit,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Cause::NodeFailure => "node-failure",
            Cause::Oom => "oom",
            Cause::Timeout => "timeout",
            Cause::Preemption => "preemption",
            Cause::UserCancel => "user-cancel",
            Cause::NonZeroExit => "non-zero-exit",
        }
    }

    /// Whether the bill counts these GPU-hours as `failed`: the run failed for a cause of its
    /// own (a preempted, evicted or cancelled run did not).
    pub fn is_failure(self) -> bool {
        !matches!(self, Cause::Preemption | Cause::UserCancel)
    }

    /// What it means, for the help and the reports.
    pub fn definition(self) -> &'static str {
        match self {
            Cause::NodeFailure => {
                "the node or a GPU failed under the job (NODE_FAIL; the XID when one was seen)"
            }
            Cause::Oom => "killed for memory (Slurm OUT_OF_MEMORY, Kubernetes OOMKilled)",
            Cause::Timeout => "ran into its time limit (TIMEOUT, DeadlineExceeded)",
            Cause::Preemption => "preempted or evicted for other work (not in failed)",
            Cause::UserCancel => "cancelled by a person (not in failed)",
            Cause::NonZeroExit => "the program failed: a non-zero exit or a signal",
        }
    }
}

/// The cause of a job's end, or `None` for a job that completed or has not ended.
///
/// The state decides first; a failed job's exit reason then tells OOM, timeout, node failure
/// and eviction apart from a plain non-zero exit (a failed job always has a cause). A cancelled
/// job whose reason names preemption or eviction was preempted, otherwise a person cancelled it.
pub fn classify(state: JobState, exit_reason: Option<&str>) -> Option<Cause> {
    let reason = exit_reason.unwrap_or("").to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| reason.contains(w));
    let preempted = has(&["preempt", "evict"]);
    match state {
        JobState::Pending | JobState::Running | JobState::Completing | JobState::Completed => None,
        JobState::NodeFail => Some(Cause::NodeFailure),
        JobState::Timeout => Some(Cause::Timeout),
        JobState::Preempted => Some(Cause::Preemption),
        JobState::Cancelled if preempted => Some(Cause::Preemption),
        JobState::Cancelled => Some(Cause::UserCancel),
        JobState::Failed => Some(if has(&["oom", "out_of_memory", "out of memory", "outofmemory"]) {
            Cause::Oom
        } else if has(&["node_fail", "nodefail", "node fail", "boot_fail", "xid"]) {
            Cause::NodeFailure
        } else if has(&["deadlineexceeded", "time limit", "timelimit"]) {
            Cause::Timeout
        } else if preempted {
            Cause::Preemption
        } else {
            Cause::NonZeroExit
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_decide_first() {
        assert_eq!(classify(JobState::NodeFail, Some("exit 1")), Some(Cause::NodeFailure));
        assert_eq!(classify(JobState::Timeout, None), Some(Cause::Timeout));
        assert_eq!(classify(JobState::Preempted, None), Some(Cause::Preemption));
        assert_eq!(classify(JobState::Cancelled, Some("cancelled by alice")), Some(Cause::UserCancel));
        assert_eq!(classify(JobState::Cancelled, None), Some(Cause::UserCancel));
        assert_eq!(classify(JobState::Completed, Some("exit 0")), None);
        assert_eq!(classify(JobState::Running, Some("OOM")), None);
        assert_eq!(classify(JobState::Pending, None), None);
    }

    #[test]
    fn a_failed_jobs_reason_tells_the_cause() {
        // Slurm: OUT_OF_MEMORY is mapped to FAILED with the reason kept.
        assert_eq!(classify(JobState::Failed, Some("signal 9 (OutOfMemory)")), Some(Cause::Oom));
        assert_eq!(classify(JobState::Failed, Some("OUT_OF_MEMORY")), Some(Cause::Oom));
        // Kubernetes container terminations.
        assert_eq!(classify(JobState::Failed, Some("OOMKilled (exit 137)")), Some(Cause::Oom));
        assert_eq!(classify(JobState::Failed, Some("DeadlineExceeded")), Some(Cause::Timeout));
        assert_eq!(classify(JobState::Failed, Some("Evicted")), Some(Cause::Preemption));
        assert_eq!(classify(JobState::Failed, Some("time limit reached")), Some(Cause::Timeout));
        assert_eq!(classify(JobState::Failed, Some("NODE_FAIL")), Some(Cause::NodeFailure));
        // Anything else is the program's own failure.
        assert_eq!(classify(JobState::Failed, Some("exit 1")), Some(Cause::NonZeroExit));
        // A collective's watchdog is the program's failure, not the time limit.
        assert_eq!(classify(JobState::Failed, Some("NCCL watchdog timeout")), Some(Cause::NonZeroExit));
        assert_eq!(classify(JobState::Failed, Some("Error (exit 2)")), Some(Cause::NonZeroExit));
        assert_eq!(classify(JobState::Failed, None), Some(Cause::NonZeroExit));
    }

    #[test]
    fn a_cancelled_job_that_was_preempted() {
        assert_eq!(classify(JobState::Cancelled, Some("Preempted by Kueue")), Some(Cause::Preemption));
        assert_eq!(classify(JobState::Cancelled, Some("Evicted")), Some(Cause::Preemption));
    }

    /// Without a reason, a failing state's cause is a failure and the others' are not.
    #[test]
    fn failures_are_the_bills_failed_part() {
        for c in Cause::ALL {
            let state = match c {
                Cause::NodeFailure => JobState::NodeFail,
                Cause::Timeout => JobState::Timeout,
                Cause::Preemption => JobState::Preempted,
                Cause::UserCancel => JobState::Cancelled,
                Cause::Oom | Cause::NonZeroExit => JobState::Failed,
            };
            assert_eq!(c.is_failure(), state.is_failure(), "{c:?}");
            assert_eq!(classify(state, None).map(Cause::is_failure), Some(state.is_failure()));
        }
    }
}
