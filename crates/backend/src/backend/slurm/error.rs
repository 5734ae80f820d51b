//! What can go wrong talking to slurmrestd, phrased for the operator who reads it in the
//! header: what is wrong and what to do about it. No message ever contains the token.

/// The advice every authentication failure ends with.
pub const TOKEN_ADVICE: &str = "token expired or invalid: mint a new one with `scontrol token`";

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SlurmError {
    /// 401, 511, or a slurmctld authentication error (1007) behind another status.
    #[error("slurmrestd: {status} {TOKEN_ADVICE}")]
    Auth { status: u16 },
    /// No token could be found or minted.
    #[error("slurmrestd: no token: {0}")]
    NoToken(String),
    /// The token command failed.
    #[error("slurmrestd: token command `{cmd}` failed: {detail}")]
    TokenCommand { cmd: String, detail: String },
    /// Connection refused, DNS, TLS, reset.
    #[error("slurmrestd unreachable at {url}: {detail} (is slurmrestd running?)")]
    Unreachable { url: String, detail: String },
    #[error("slurmrestd at {url} did not answer within {secs} s")]
    Timeout { url: String, secs: u64 },
    /// 5xx and other unexpected statuses, with what the server said.
    #[error("slurmrestd: {endpoint}: HTTP {status}: {detail}")]
    Http { endpoint: String, status: u16, detail: String },
    /// The body was not the JSON this version promises.
    #[error("slurmrestd: {endpoint}: malformed response: {detail}")]
    Malformed { endpoint: String, detail: String },
    /// An answer over a configured limit (`[slurm] max_body`, `max_job_list`): refused unread.
    #[error("slurmrestd: {endpoint}: {detail}")]
    TooLarge { endpoint: String, detail: String },
    /// 200 with `errors[]`.
    #[error("slurmrestd: {endpoint}: {detail}")]
    Api { endpoint: String, detail: String },
    /// None of the supported versions answered.
    #[error(
        "slurmrestd at {url} serves none of the API versions gpuplane speaks (v0.0.43, v0.0.42, v0.0.41, v0.0.40, v0.0.38)"
    )]
    NoVersion { url: String },
    /// The operation does not exist in this API version.
    #[error("{0}")]
    Unsupported(String),
    /// Bad settings (URL, CA file).
    #[error("slurm: {0}")]
    Config(String),
}

impl SlurmError {
    pub fn is_auth(&self) -> bool {
        matches!(self, SlurmError::Auth { .. } | SlurmError::NoToken(_) | SlurmError::TokenCommand { .. })
    }

    /// Worth retrying soon (server or network trouble), as opposed to needing a person.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            SlurmError::Unreachable { .. }
                | SlurmError::Timeout { .. }
                | SlurmError::Http { .. }
                | SlurmError::Malformed { .. }
                | SlurmError::TooLarge { .. }
                | SlurmError::Api { .. }
        )
    }
}

/// What slurmctld's error texts mean for a write (matched on the words, which are stable
/// across releases; the numbers are not).
fn classify(detail: &str) -> Option<crate::model::ActionErrorKind> {
    use crate::model::ActionErrorKind as K;
    let d = detail.to_ascii_lowercase();
    if d.contains("invalid node name") || d.contains("invalid job id") || d.contains("unknown node") {
        Some(K::NotFound)
    } else if d.contains("invalid user id")
        || d.contains("access/permission denied")
        || d.contains("access denied")
        || d.contains("permission denied")
    {
        Some(K::Forbidden)
    } else if d.contains("already completing or completed") || d.contains("already done") {
        Some(K::Conflict)
    } else {
        None
    }
}

/// A failed Slurm write as the console can act on it: 401/511 (and slurmctld's authentication
/// error) and 403 are refusals with the server's words; 404 and slurmctld's "Invalid node
/// name" / "Invalid job id" are not-found; "Invalid user id" and "Access/permission denied"
/// are refusals; a job "already completing or completed" is a conflict; transport failures
/// are unreachable or timed out.
impl From<SlurmError> for crate::model::ActionError {
    fn from(e: SlurmError) -> crate::model::ActionError {
        use crate::model::{ActionError, ActionErrorKind as K};
        let text = e.to_string();
        match e {
            SlurmError::Auth { .. } => ActionError::forbidden_as_said(text),
            SlurmError::Unreachable { url, detail } => {
                ActionError::unreachable(format!("slurmrestd at {url}: {detail} (is slurmrestd running?)"))
            }
            SlurmError::Timeout { url, secs } => ActionError::Timeout {
                what: format!("slurmrestd at {url}"),
                after: Some(std::time::Duration::from_secs(secs)),
            },
            SlurmError::Unsupported(detail) => ActionError::Unsupported { detail },
            SlurmError::Http { status, detail, .. } => match (status, classify(&detail)) {
                (_, Some(K::Forbidden)) | (403, _) => ActionError::forbidden(detail),
                (_, Some(K::NotFound)) | (404, _) => ActionError::not_found(detail),
                (_, Some(K::Conflict)) | (409, _) => ActionError::conflict(detail),
                (502..=504, _) => ActionError::unreachable(text),
                _ => ActionError::Other(text),
            },
            SlurmError::Api { ref detail, .. } => match classify(detail) {
                Some(k) => ActionError::of_kind(k, detail.clone()),
                None => ActionError::Other(text),
            },
            SlurmError::NoToken(_)
            | SlurmError::TokenCommand { .. }
            | SlurmError::Malformed { .. }
            | SlurmError::TooLarge { .. }
            | SlurmError::NoVersion { .. }
            | SlurmError::Config(_) => ActionError::Other(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ActionError, ActionErrorKind as K};

    fn http(status: u16, detail: &str) -> SlurmError {
        SlurmError::Http { endpoint: "/slurm/v0.0.42/node/gpu-1".into(), status, detail: detail.into() }
    }

    #[test]
    fn slurm_errors_map_to_what_the_console_can_act_on() {
        let kind = |e: SlurmError| ActionError::from(e).kind();
        assert_eq!(kind(SlurmError::Auth { status: 401 }), K::Forbidden);
        let e = ActionError::from(http(403, "Access denied by policy"));
        assert!(
            matches!(&e, ActionError::Forbidden { reason, .. } if reason == "Access denied by policy"),
            "{e:?}"
        );
        assert_eq!(kind(http(404, "no such node")), K::NotFound);
        assert_eq!(kind(http(500, "Invalid node name specified (error 2018)")), K::NotFound);
        assert_eq!(kind(http(500, "Invalid job id specified (error 2017)")), K::NotFound);
        let e = ActionError::from(http(500, "Invalid user id (error 2010)"));
        assert_eq!(e.kind(), K::Forbidden);
        assert!(e.to_string().contains("Invalid user id"), "the server's words: {e}");
        assert_eq!(kind(http(500, "Job/step already completing or completed (error 2021)")), K::Conflict);
        assert_eq!(kind(http(502, "Unable to contact slurmctld")), K::Unreachable);
        assert_eq!(kind(http(500, "something else")), K::Other);
        let api = SlurmError::Api { endpoint: "/x".into(), detail: "Invalid job id specified".into() };
        assert_eq!(kind(api), K::NotFound);
        let e = ActionError::from(SlurmError::Unreachable {
            url: "http://h:6820".into(),
            detail: "refused".into(),
        });
        assert_eq!(
            e,
            ActionError::unreachable("slurmrestd at http://h:6820: refused (is slurmrestd running?)")
        );
        let e = ActionError::from(SlurmError::Timeout { url: "http://h".into(), secs: 5 });
        assert!(e.to_string().contains("slurmrestd at http://h did not answer within 5s"), "{e}");
        assert_eq!(kind(SlurmError::Unsupported("v0.0.38 cannot drain".into())), K::Unsupported);
    }
}
