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
                | SlurmError::Api { .. }
        )
    }
}
