//! HTTP client for the Prometheus query API: auth, tenant headers, a private CA, and errors
//! phrased for an operator. The API's own error and warning texts are passed on verbatim.

use super::api::{self, BodyError};
use super::config::{Auth, PromConfig};
use crate::backend::bounds;
use crate::sanitize::sanitize;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::time::Duration;

/// What can go wrong talking to Prometheus, each phrased as what is wrong and what to check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromError {
    #[error("connection refused at {url} — is it running?")]
    Refused { url: String },
    #[error("cannot reach {url}: {detail}")]
    Connect { url: String, detail: String },
    #[error(
        "no answer from {url} within {secs} s — overloaded or a heavy query? (raise [prometheus] timeout)"
    )]
    Timeout { url: String, secs: u64 },
    #[error("{url} refused the credentials (HTTP {status}) — check the bearer token or basic auth")]
    Auth { url: String, status: u16 },
    #[error("{url} answered HTTP {status}: {body}")]
    Http { url: String, status: u16, body: String },
    /// The API's `errorType` and `error`, verbatim (e.g. `bad_data: 1:18: parse error: …`).
    #[error("{error_type}: {error}")]
    Api { error_type: String, error: String },
    /// An answer over a configured limit (`[prometheus] max_body`, `max_series`, `max_label`).
    #[error("{url}: {detail}")]
    TooLarge { url: String, detail: String },
    #[error("unreadable answer{}: {detail}", if url.is_empty() { String::new() } else { format!(" from {url}") })]
    Decode { url: String, detail: String },
    #[error("configuration: {0}")]
    Config(String),
}

impl PromError {
    /// The server could not be reached at all, or sent what cannot be read safely (as opposed
    /// to a bad query).
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            Self::Refused { .. }
                | Self::Connect { .. }
                | Self::Timeout { .. }
                | Self::Auth { .. }
                | Self::TooLarge { .. }
        ) || matches!(self, Self::Http { status, .. } if *status >= 500)
    }
}

/// A raw successful body; parse it with [`api::parse`] (the parsed form borrows from it).
#[derive(Debug, Clone)]
pub struct Body(pub Vec<u8>);

impl Body {
    pub fn parse(&self) -> Result<api::Response<'_>, PromError> {
        api::parse(&self.0).map_err(|e| match e {
            BodyError::Api { error_type, error, .. } => PromError::Api { error_type, error },
            BodyError::NotJson(d) => PromError::Decode { url: String::new(), detail: d },
        })
    }
}

#[derive(Debug, Clone)]
pub struct PromClient {
    http: reqwest::Client,
    base: String,
    auth: Auth,
    timeout: Duration,
    max_body: u64,
    max_series: usize,
    max_label: usize,
}

/// A short, printable excerpt of an untrusted body.
fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(300)]);
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    sanitize(&one_line).into_owned()
}

impl PromClient {
    /// Builds the client. Needs a rustls crypto provider installed (main does it first thing).
    pub fn new(cfg: &PromConfig) -> Result<Self, PromError> {
        let mut headers = HeaderMap::new();
        for (k, v) in &cfg.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| PromError::Config(format!("header name {k:?}: {e}")))?;
            let mut value =
                HeaderValue::from_str(v).map_err(|e| PromError::Config(format!("header {k}: {e}")))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let mut b = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(cfg.timeout.min(Duration::from_secs(5)))
            .timeout(cfg.timeout)
            .user_agent(concat!("gpuplane/", env!("CARGO_PKG_VERSION")));
        if let Some(ca) = &cfg.ca_file {
            let pem =
                std::fs::read(ca).map_err(|e| PromError::Config(format!("ca_file {}: {e}", ca.display())))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| PromError::Config(format!("ca_file {}: {e}", ca.display())))?;
            b = b.tls_certs_merge(certs);
        }
        let http = b.build().map_err(|e| PromError::Config(format!("HTTP client: {e}")))?;
        let base = cfg.url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(PromError::Config(format!("url {base:?} must start with http:// or https://")));
        }
        Ok(Self {
            http,
            base,
            auth: cfg.auth.clone(),
            timeout: cfg.timeout,
            max_body: cfg.max_body,
            max_series: cfg.max_series,
            max_label: cfg.max_label,
        })
    }

    pub fn url(&self) -> &str {
        &self.base
    }

    /// An instant query at `time` (server's now when `None`).
    pub async fn query(&self, promql: &str, time: Option<f64>) -> Result<Body, PromError> {
        let mut params = vec![("query", promql.to_string())];
        if let Some(t) = time {
            params.push(("time", format!("{t:.3}")));
        }
        self.get("/api/v1/query", &params).await
    }

    /// A range query over `[start, end]` every `step` seconds.
    pub async fn query_range(
        &self,
        promql: &str,
        start: f64,
        end: f64,
        step: f64,
    ) -> Result<Body, PromError> {
        let params = [
            ("query", promql.to_string()),
            ("start", format!("{start:.3}")),
            ("end", format!("{end:.3}")),
            ("step", format!("{step}")),
        ];
        self.get("/api/v1/query_range", &params).await
    }

    /// The alerting rules' alerts (`/api/v1/alerts`); parse with [`super::alerts::parse`].
    pub async fn alerts(&self) -> Result<Body, PromError> {
        self.get("/api/v1/alerts", &[]).await
    }

    /// The server's version (`/api/v1/status/buildinfo`), when it tells.
    pub async fn version(&self) -> Option<String> {
        let body = self.get("/api/v1/status/buildinfo", &[]).await.ok()?;
        let v: serde_json::Value = serde_json::from_slice(&body.0).ok()?;
        let s = v.get("data")?.get("version")?.as_str()?;
        Some(sanitize(s).chars().take(40).collect())
    }

    async fn get(&self, path: &str, params: &[(&str, String)]) -> Result<Body, PromError> {
        let url = format!("{}{path}", self.base);
        let mut req = self.http.get(&url).query(params);
        req = match &self.auth {
            Auth::None => req,
            Auth::Bearer(t) => req.bearer_auth(t),
            Auth::Basic { username, password } => req.basic_auth(username, password.as_ref()),
        };
        let mut resp = req.send().await.map_err(|e| self.transport(e))?;
        let status = resp.status().as_u16();
        let read = if status == 200 {
            let mut guard = bounds::SeriesGuard::new(self.max_series, self.max_label);
            bounds::read(&mut resp, &[], self.max_body, &mut guard).await
        } else {
            bounds::read(&mut resp, &[], self.max_body, &mut bounds::Any).await
        };
        let body = Vec::from(read.map_err(|e| match e {
            bounds::ReadError::Transport(e) => self.transport(e),
            e => PromError::TooLarge {
                url: url.clone(),
                detail: e.describe("[prometheus] max_body").unwrap_or_default(),
            },
        })?);
        if status == 200 {
            return Ok(Body(body));
        }
        if status == 401 || status == 403 {
            return Err(PromError::Auth { url: self.base.clone(), status });
        }
        // 400 bad_data, 422 execution, 503 timeout/unavailable: the API's JSON error, verbatim.
        match api::parse(&body) {
            Err(BodyError::Api { error_type, error, .. }) => Err(PromError::Api {
                error_type: sanitize(&error_type).into_owned(),
                error: sanitize(&error).into_owned(),
            }),
            _ => Err(PromError::Http { url: url.clone(), status, body: excerpt(&body) }),
        }
    }

    fn transport(&self, e: reqwest::Error) -> PromError {
        let url = self.base.clone();
        if e.is_timeout() {
            return PromError::Timeout { url, secs: self.timeout.as_secs().max(1) };
        }
        // The innermost cause says what happened (refused, DNS, TLS).
        let mut detail = e.to_string();
        let mut src: Option<&dyn std::error::Error> = std::error::Error::source(&e);
        while let Some(s) = src {
            detail = s.to_string();
            src = s.source();
        }
        if e.is_connect() && detail.to_ascii_lowercase().contains("refused") {
            return PromError::Refused { url };
        }
        PromError::Connect { url, detail: sanitize(&detail).into_owned() }
    }
}
