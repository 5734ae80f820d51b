//! Why a write did not happen, as the console and the command line can act on it: refused by
//! the server (with its own words), the target is gone, it is already in that state, the
//! server cannot be reached or did not answer in time. Every backend maps its own errors
//! (HTTP statuses, slurmctld's error texts, the simulator's refusals) into this one enum at
//! the seams between the console and the backends (the ops executors and the acceptance
//! launchers). Each variant's text says what is wrong and what to do about it; none carries
//! a credential (backends never put tokens in errors, and the audit log redacts anyway).

use std::time::Duration;

/// A write (or an acceptance job's submit, poll or output) that did not go through.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    /// The server (or the preflight, or the configuration) says this identity may not.
    /// `reason` is the server's own words; `fix` what to do, when the reason does not say.
    #[error("forbidden: {reason}{}", suffix(fix))]
    Forbidden { reason: String, fix: String },
    /// The node or job no longer exists (or never did) where the write went.
    #[error("not found: {what} — it may have been removed or renamed; refresh and check the name")]
    NotFound { what: String },
    /// Already in that state (a node already draining, a job already finished).
    #[error("already in that state: {detail} — nothing to do; refresh to see the current state")]
    Conflict { detail: String },
    /// The server refuses for now (a PodDisruptionBudget, rate limiting): retrying may work.
    #[error("refused for now: {detail} — retry later")]
    Busy { detail: String },
    /// The server could not be reached (connection refused, DNS, TLS, not connected).
    #[error("unreachable: {detail} — check the network and that the server runs, then retry")]
    Unreachable { detail: String },
    /// No answer in time: the write may or may not have been applied.
    #[error(
        "timed out: {what} did not answer{} — the change may or may not have been applied; refresh and check before retrying",
        within(after)
    )]
    Timeout { what: String, after: Option<Duration> },
    /// This backend (or its API version) cannot do it; `detail` says what to do instead.
    #[error("not supported: {detail}")]
    Unsupported { detail: String },
    #[error("{0}")]
    Other(String),
}

fn suffix(fix: &str) -> String {
    if fix.is_empty() { String::new() } else { format!(" — {fix}") }
}

fn within(after: &Option<Duration>) -> String {
    after.map(|d| format!(" within {}", humantime::format_duration(d))).unwrap_or_default()
}

/// The advice for a refusal whose reason does not carry its own.
pub const FORBIDDEN_FIX: &str = "have this identity granted the right, or use break-glass";

/// The kind of an [`ActionError`], without its text (for counting, audit params and tests).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
pub enum ActionErrorKind {
    Forbidden,
    NotFound,
    Conflict,
    Busy,
    Unreachable,
    Timeout,
    Unsupported,
    Other,
}

impl ActionErrorKind {
    pub fn label(self) -> &'static str {
        match self {
            Self::Forbidden => "forbidden",
            Self::NotFound => "not-found",
            Self::Conflict => "conflict",
            Self::Busy => "busy",
            Self::Unreachable => "unreachable",
            Self::Timeout => "timeout",
            Self::Unsupported => "unsupported",
            Self::Other => "error",
        }
    }
}

impl ActionError {
    /// Refused, with the generic advice ([`FORBIDDEN_FIX`]).
    pub fn forbidden(reason: impl Into<String>) -> ActionError {
        ActionError::Forbidden { reason: reason.into(), fix: FORBIDDEN_FIX.into() }
    }

    /// Refused, with a reason that already says what to do.
    pub fn forbidden_as_said(reason: impl Into<String>) -> ActionError {
        ActionError::Forbidden { reason: reason.into(), fix: String::new() }
    }

    pub fn not_found(what: impl Into<String>) -> ActionError {
        ActionError::NotFound { what: what.into() }
    }

    pub fn conflict(detail: impl Into<String>) -> ActionError {
        ActionError::Conflict { detail: detail.into() }
    }

    pub fn unreachable(detail: impl Into<String>) -> ActionError {
        ActionError::Unreachable { detail: detail.into() }
    }

    pub fn unsupported(detail: impl Into<String>) -> ActionError {
        ActionError::Unsupported { detail: detail.into() }
    }

    pub fn other(detail: impl Into<String>) -> ActionError {
        ActionError::Other(detail.into())
    }

    pub fn kind(&self) -> ActionErrorKind {
        match self {
            Self::Forbidden { .. } => ActionErrorKind::Forbidden,
            Self::NotFound { .. } => ActionErrorKind::NotFound,
            Self::Conflict { .. } => ActionErrorKind::Conflict,
            Self::Busy { .. } => ActionErrorKind::Busy,
            Self::Unreachable { .. } => ActionErrorKind::Unreachable,
            Self::Timeout { .. } => ActionErrorKind::Timeout,
            Self::Unsupported { .. } => ActionErrorKind::Unsupported,
            Self::Other(_) => ActionErrorKind::Other,
        }
    }

    /// The same kind, its text prefixed with where it happened (`list pods on gpu-1: …`).
    pub fn context(self, ctx: &str) -> ActionError {
        let pre = |s: String| if ctx.is_empty() { s } else { format!("{ctx}: {s}") };
        match self {
            Self::Forbidden { reason, fix } => Self::Forbidden { reason: pre(reason), fix },
            Self::NotFound { what } => Self::NotFound { what: pre(what) },
            Self::Conflict { detail } => Self::Conflict { detail: pre(detail) },
            Self::Busy { detail } => Self::Busy { detail: pre(detail) },
            Self::Unreachable { detail } => Self::Unreachable { detail: pre(detail) },
            Self::Timeout { what, after } => Self::Timeout { what: pre(what), after },
            Self::Unsupported { detail } => Self::Unsupported { detail: pre(detail) },
            Self::Other(s) => Self::Other(pre(s)),
        }
    }

    /// An error of `kind` with `text` as its detail (the generic advice for a refusal).
    pub fn of_kind(kind: ActionErrorKind, text: impl Into<String>) -> ActionError {
        let text = text.into();
        match kind {
            ActionErrorKind::Forbidden => Self::forbidden(text),
            ActionErrorKind::NotFound => Self::NotFound { what: text },
            ActionErrorKind::Conflict => Self::Conflict { detail: text },
            ActionErrorKind::Busy => Self::Busy { detail: text },
            ActionErrorKind::Unreachable => Self::Unreachable { detail: text },
            ActionErrorKind::Timeout => Self::Timeout { what: text, after: None },
            ActionErrorKind::Unsupported => Self::Unsupported { detail: text },
            ActionErrorKind::Other => Self::Other(text),
        }
    }

    /// Whether the console's picture is likely out of date (the target is gone or already
    /// changed): worth a refresh.
    pub fn stale_view(&self) -> bool {
        matches!(self, Self::NotFound { .. } | Self::Conflict { .. })
    }
}

impl From<String> for ActionError {
    fn from(s: String) -> ActionError {
        ActionError::Other(s)
    }
}

impl From<&str> for ActionError {
    fn from(s: &str) -> ActionError {
        ActionError::Other(s.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_says_what_is_wrong_and_what_to_do() {
        let f = ActionError::forbidden(
            r#"nodes "gpu-1" is forbidden: User "viewer" cannot patch resource "nodes""#,
        );
        assert_eq!(
            f.to_string(),
            r#"forbidden: nodes "gpu-1" is forbidden: User "viewer" cannot patch resource "nodes" — have this identity granted the right, or use break-glass"#
        );
        let own = ActionError::forbidden_as_said("token expired: mint a new one with `scontrol token`");
        assert_eq!(own.to_string(), "forbidden: token expired: mint a new one with `scontrol token`");
        assert!(ActionError::not_found("node gpu-9").to_string().starts_with("not found: node gpu-9 — "));
        assert!(
            ActionError::conflict("node gpu-1 is already draining").to_string().contains("nothing to do")
        );
        let t = ActionError::Timeout {
            what: "slurmrestd at http://x".into(),
            after: Some(Duration::from_secs(30)),
        };
        assert!(
            t.to_string().starts_with("timed out: slurmrestd at http://x did not answer within 30s — "),
            "{t}"
        );
        assert!(ActionError::unreachable("x").to_string().contains("check the network"));
    }

    #[test]
    fn context_keeps_the_kind() {
        let e = ActionError::forbidden("no").context("evict team-a/p");
        assert_eq!(e.kind(), ActionErrorKind::Forbidden);
        assert!(e.to_string().starts_with("forbidden: evict team-a/p: no — "), "{e}");
        assert_eq!(ActionError::of_kind(ActionErrorKind::Busy, "pdb").kind(), ActionErrorKind::Busy);
        assert!(ActionError::not_found("x").stale_view() && !ActionError::other("x").stale_view());
    }
}
