//! HTTP client for Alertmanager's API v2: alerts, silences, the server's status, and the two
//! writes (create a silence, expire one). Errors are phrased for an operator; what the server
//! says is passed on (sanitised, shortened).

use super::wire;
use crate::model::alert::{Alert, Matcher, Silence};
use crate::sanitize::sanitize;
use std::time::Duration;

/// The most one Alertmanager answer may hold.
const MAX_BODY: u64 = 64 << 20;

/// What can go wrong talking to Alertmanager.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmError {
    #[error("connection refused at {url} — is it running?")]
    Refused { url: String },
    #[error("cannot reach {url}: {detail}")]
    Connect { url: String, detail: String },
    #[error("no answer from {url} within {secs} s (raise [alertmanager] timeout)")]
    Timeout { url: String, secs: u64 },
    #[error("{url} refused the credentials (HTTP {status}) — check the bearer token")]
    Auth { url: String, status: u16 },
    #[error("{url} answered HTTP {status}: {body}")]
    Http { url: String, status: u16, body: String },
    #[error("unreadable answer from {url}: {detail}")]
    Decode { url: String, detail: String },
    #[error("configuration: {0}")]
    Config(String),
}

impl AmError {
    /// Whether the server could not be reached at all (as opposed to refusing a request).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Self::Refused { .. } | Self::Connect { .. } | Self::Timeout { .. })
            || matches!(self, Self::Http { status, .. } if *status >= 500)
    }
}

/// `[alertmanager]` resolved: where, how often, how long to wait.
#[derive(Debug, Clone, PartialEq)]
pub struct AmConfig {
    pub url: String,
    pub refresh: Duration,
    pub timeout: Duration,
    pub bearer_token: Option<String>,
}

impl AmConfig {
    pub fn new(url: impl Into<String>) -> AmConfig {
        AmConfig {
            url: url.into(),
            refresh: Duration::from_secs(15),
            timeout: Duration::from_secs(10),
            bearer_token: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct AmClient {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
    timeout: Duration,
}

/// A short, printable excerpt of an untrusted body.
fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(300)]);
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    sanitize(&one_line).into_owned()
}

impl AmClient {
    /// Builds the client. Needs a rustls crypto provider installed (main does it first thing).
    pub fn new(cfg: &AmConfig) -> Result<AmClient, AmError> {
        let base = cfg.url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(AmError::Config(format!("url {base:?} must start with http:// or https://")));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(cfg.timeout.min(Duration::from_secs(5)))
            .timeout(cfg.timeout)
            .user_agent(concat!("gpuplane/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| AmError::Config(format!("HTTP client: {e}")))?;
        Ok(AmClient { http, base, token: cfg.bearer_token.clone(), timeout: cfg.timeout })
    }

    pub fn url(&self) -> &str {
        &self.base
    }

    /// Every alert Alertmanager holds (active, silenced, inhibited, unprocessed).
    pub async fn alerts(&self) -> Result<Vec<Alert>, AmError> {
        let body = self.send(self.http.get(self.at("/api/v2/alerts"))).await?;
        wire::alerts(&body).map_err(|detail| self.decode(detail))
    }

    /// Every silence, expired ones included (Alertmanager keeps them for its retention).
    pub async fn silences(&self) -> Result<Vec<Silence>, AmError> {
        let body = self.send(self.http.get(self.at("/api/v2/silences"))).await?;
        wire::silences(&body).map_err(|detail| self.decode(detail))
    }

    /// The server's version (`/api/v2/status`), when it tells.
    pub async fn version(&self) -> Option<String> {
        let body = self.send(self.http.get(self.at("/api/v2/status"))).await.ok()?;
        wire::version(&body)
    }

    /// Creates a silence; returns its id.
    pub async fn create_silence(
        &self,
        matchers: &[Matcher],
        starts_at: i64,
        ends_at: i64,
        created_by: &str,
        comment: &str,
    ) -> Result<String, AmError> {
        let body = wire::new_silence(matchers, starts_at, ends_at, created_by, comment);
        let req = self.http.post(self.at("/api/v2/silences")).json(&body);
        let answer = self.send(req).await?;
        wire::silence_id(&answer).map_err(|detail| self.decode(detail))
    }

    /// Expires a silence now.
    pub async fn expire_silence(&self, id: &str) -> Result<(), AmError> {
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(AmError::Config(format!("{id:?} is not a silence id")));
        }
        self.send(self.http.delete(self.at(&format!("/api/v2/silence/{id}")))).await.map(drop)
    }

    fn at(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn decode(&self, detail: String) -> AmError {
        AmError::Decode { url: self.base.clone(), detail: sanitize(&detail).into_owned() }
    }

    async fn send(&self, mut req: reqwest::RequestBuilder) -> Result<Vec<u8>, AmError> {
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let mut resp = req.send().await.map_err(|e| self.transport(e))?;
        let status = resp.status().as_u16();
        // Bounded like every other source's answers (backend::bounds).
        let body =
            match crate::backend::bounds::read(&mut resp, &[], MAX_BODY, &mut crate::backend::bounds::Any)
                .await
            {
                Ok(b) => Vec::from(b),
                Err(crate::backend::bounds::ReadError::Transport(e)) => return Err(self.transport(e)),
                Err(e) => {
                    let why =
                        e.describe("built in for Alertmanager").unwrap_or_else(|| "answer refused".into());
                    return Err(self.decode(why));
                }
            };
        match status {
            200..=299 => Ok(body),
            401 | 403 => Err(AmError::Auth { url: self.base.clone(), status }),
            _ => Err(AmError::Http { url: self.base.clone(), status, body: excerpt(&body) }),
        }
    }

    fn transport(&self, e: reqwest::Error) -> AmError {
        let url = self.base.clone();
        if e.is_timeout() {
            return AmError::Timeout { url, secs: self.timeout.as_secs().max(1) };
        }
        let mut detail = e.to_string();
        let mut src: Option<&dyn std::error::Error> = std::error::Error::source(&e);
        while let Some(s) = src {
            detail = s.to_string();
            src = s.source();
        }
        if e.is_connect() && detail.to_ascii_lowercase().contains("refused") {
            return AmError::Refused { url };
        }
        AmError::Connect { url, detail: sanitize(&detail).into_owned() }
    }
}

/// `[alertmanager]` in the config file:
///
/// ```toml
/// [alertmanager]
/// url = "http://alertmanager:9093"     # or --alertmanager URL, or ALERTMANAGER_URL
/// refresh = "15s"                      # jittered ±10 %
/// timeout = "10s"
/// bearer_token_file = "/run/secrets/am"
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AmSection {
    pub url: Option<String>,
    pub refresh: Option<String>,
    pub timeout: Option<String>,
    pub bearer_token_file: Option<std::path::PathBuf>,
}

impl AmConfig {
    /// The flag (or environment) wins over the file; `None` when neither names a URL.
    pub fn resolve(
        flag_url: Option<&str>,
        sec: Option<&AmSection>,
        warnings: &mut Vec<String>,
    ) -> Option<AmConfig> {
        let default = AmSection::default();
        let sec = sec.unwrap_or(&default);
        let url = flag_url.map(str::to_string).or_else(|| sec.url.clone())?;
        let mut c = AmConfig::new(url);
        let mut dur = |name: &str, v: &Option<String>, d: Duration| match v {
            Some(v) => humantime::parse_duration(v).unwrap_or_else(|e| {
                warnings.push(format!("config: alertmanager.{name} = {v:?}: {e}"));
                d
            }),
            None => d,
        };
        c.refresh = dur("refresh", &sec.refresh, c.refresh).max(Duration::from_secs(1));
        c.timeout = dur("timeout", &sec.timeout, c.timeout).max(Duration::from_millis(100));
        c.bearer_token = sec.bearer_token_file.as_ref().and_then(|p| match std::fs::read_to_string(p) {
            Ok(s) => Some(s.trim().to_string()),
            Err(e) => {
                warnings.push(format!("config: alertmanager.bearer_token_file {}: {e}", p.display()));
                None
            }
        });
        Some(c)
    }
}
