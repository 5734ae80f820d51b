//! HTTP to slurmrestd: headers and token, version negotiation, status codes and the irregular
//! error bodies turned into [`SlurmError`]s. Reads return raw bodies; the version families
//! parse them.

use super::error::SlurmError;
use super::token::{TokenKeeper, TokenSource};
use super::wire::Envelope;
use bytes::Bytes;
use std::time::Duration;

/// The API versions gpuplane speaks, newest first (the probe order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ApiVersion {
    V0043,
    V0042,
    V0041,
    V0040,
    V0038,
}

impl ApiVersion {
    pub const ALL: [ApiVersion; 5] =
        [ApiVersion::V0043, ApiVersion::V0042, ApiVersion::V0041, ApiVersion::V0040, ApiVersion::V0038];

    pub fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V0043 => "v0.0.43",
            ApiVersion::V0042 => "v0.0.42",
            ApiVersion::V0041 => "v0.0.41",
            ApiVersion::V0040 => "v0.0.40",
            ApiVersion::V0038 => "v0.0.38",
        }
    }

    pub fn parse(s: &str) -> Option<ApiVersion> {
        ApiVersion::ALL.into_iter().find(|v| v.as_str() == s.trim())
    }

    /// The v0.0.38 family (Slurm 22.05/23.02): plain numbers, string states, no node updates.
    pub fn is_legacy(self) -> bool {
        self == ApiVersion::V0038
    }

    /// `/slurm/{v}/{tail}`: the generated (v0.0.40+) specs end collections with a slash.
    pub fn ctld(self, tail: &str) -> String {
        self.path("slurm", tail)
    }

    /// `/slurmdb/{v}/{tail}`.
    pub fn db(self, tail: &str) -> String {
        self.path("slurmdb", tail)
    }

    fn path(self, api: &str, tail: &str) -> String {
        let slash = !self.is_legacy() && !tail.contains('/') && !tail.contains('?');
        format!("/{api}/{}/{tail}{}", self.as_str(), if slash { "/" } else { "" })
    }
}

impl std::fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How to reach slurmrestd.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConfig {
    pub url: String,
    /// `X-SLURM-USER-NAME`; optional with tokens that carry the user.
    pub user: Option<String>,
    pub token: TokenSource,
    /// PEM file of a CA to trust (for a TLS proxy in front of slurmrestd).
    pub ca_file: Option<std::path::PathBuf>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Skip negotiation and speak this version.
    pub version: Option<ApiVersion>,
}

/// An HTTP answer that was not a transport failure.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Bytes,
}

/// A success body longer than this is streamed rather than read whole (and, like every body of
/// 64 KiB or more, taken as data rather than checked for `errors[]`).
pub const STREAM_AFTER: usize = 64 * 1024;

/// The largest body read whole (everything but the job list), by default: `[slurm] max_body`.
pub const DEFAULT_MAX_BODY: u64 = 256 * crate::backend::bounds::MIB;
/// The largest job list, streamed and never held whole, by default: `[slurm] max_job_list`
/// (100,000 jobs are ~490 MB as slurmrestd writes them compactly, ~890 MB indented).
pub const DEFAULT_MAX_JOB_LIST: u64 = 2 << 30;

/// What [`Client::get_streamed`] got.
#[derive(Debug)]
pub enum Fetched {
    /// A small body, read and checked.
    Whole(Bytes),
    /// A large success: its first bytes, and the response to read the rest from.
    Streaming { head: Bytes, rest: reqwest::Response },
}

#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    user: Option<String>,
    tokens: TokenKeeper,
    timeout: Duration,
    pub version: Option<ApiVersion>,
    /// `22.05.8`, from the ping's `meta`.
    pub release: Option<String>,
    pub cluster: Option<String>,
    /// Requests sent so far (for tests and the load figures).
    pub requests: u64,
    /// The largest body read whole ([`DEFAULT_MAX_BODY`] unless configured).
    pub max_body: u64,
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// slurmdbd's "Nothing found" (`ESLURM_REST_EMPTY_RESULT`): a query that matched nothing — a
/// fresh slurmdbd's job history, say — answered as a 200 with this in `errors[]` beside an
/// empty list. An empty answer, not a fault.
pub const NOTHING_FOUND: i64 = 9003;

/// At most this much of an error body goes into a message.
const MAX_DETAIL: usize = 300;

fn body_text(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    let s = crate::sanitize::sanitize(s.trim()).into_owned();
    match s.char_indices().nth(MAX_DETAIL) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

impl Client {
    pub fn new(cfg: &ClientConfig) -> Result<Client, SlurmError> {
        let base = cfg.url.trim().trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(SlurmError::Config(format!(
                "slurmrestd URL {base:?} must start with http:// or https:// (a unix socket needs a proxy)"
            )));
        }
        let mut b = reqwest::Client::builder()
            .timeout(cfg.timeout)
            .connect_timeout(cfg.timeout.min(Duration::from_secs(5)))
            .user_agent(concat!("gpuplane/", env!("CARGO_PKG_VERSION")))
            .pool_max_idle_per_host(2);
        if let Some(ca) = &cfg.ca_file {
            let pem = std::fs::read(ca)
                .map_err(|e| SlurmError::Config(format!("cannot read CA file {}: {e}", ca.display())))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| SlurmError::Config(format!("CA file {} is not PEM: {e}", ca.display())))?;
            b = b.tls_certs_merge(certs);
        }
        let http = b.build().map_err(|e| SlurmError::Config(format!("HTTP client: {e}")))?;
        Ok(Client {
            http,
            base,
            user: cfg.user.clone().filter(|u| !u.is_empty()),
            tokens: TokenKeeper::new(cfg.token.clone()),
            timeout: cfg.timeout,
            version: cfg.version,
            release: None,
            cluster: None,
            requests: 0,
            max_body: DEFAULT_MAX_BODY,
        })
    }

    pub fn url(&self) -> &str {
        &self.base
    }

    /// One request. 401/511 and expired tokens become [`SlurmError::Auth`]; transport failures
    /// become `Unreachable`/`Timeout`; every other status comes back as an [`Answer`].
    pub async fn send(
        &mut self,
        method: reqwest::Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&serde_json::Value>,
    ) -> Result<Answer, SlurmError> {
        let mut resp = self.start(method, path, query, body).await?;
        let status = resp.status().as_u16();
        let body = self.read_rest(path, &mut resp, &[], self.max_body, "[slurm] max_body").await?;
        Ok(Answer { status, body })
    }

    /// The rest of a body after `head`, refused past `limit` bytes (`key` names the setting).
    pub async fn read_rest(
        &self,
        endpoint: &str,
        resp: &mut reqwest::Response,
        head: &[u8],
        limit: u64,
        key: &str,
    ) -> Result<Bytes, SlurmError> {
        use crate::backend::bounds;
        bounds::read(resp, head, limit, &mut bounds::Any).await.map_err(|e| match e {
            bounds::ReadError::Transport(e) => self.transport(e),
            e => SlurmError::TooLarge {
                endpoint: endpoint.to_string(),
                detail: e.describe(key).unwrap_or_default(),
            },
        })
    }

    /// [`send`](Self::send) up to the status line: the body is left to read.
    async fn start(
        &mut self,
        method: reqwest::Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&serde_json::Value>,
    ) -> Result<reqwest::Response, SlurmError> {
        let t = now();
        let token = self.tokens.get(t).await?;
        if token.expired(t) && !self.tokens.can_refresh() {
            return Err(SlurmError::Auth { status: 401 });
        }
        let mut req = self
            .http
            .request(method, format!("{}{}", self.base, path))
            .header("X-SLURM-USER-TOKEN", token.value())
            .header("Accept", "application/json");
        if let Some(u) = &self.user {
            req = req.header("X-SLURM-USER-NAME", u);
        }

        if !query.is_empty() {
            req = req.query(query);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        self.requests += 1;
        let resp = req.send().await.map_err(|e| self.transport(e))?;
        let status = resp.status().as_u16();
        if status == 401 || status == 511 || (token.expired(now()) && status >= 400) {
            self.tokens.invalidate();
            return Err(SlurmError::Auth { status });
        }
        Ok(resp)
    }

    /// The next piece of a body being read.
    pub async fn chunk(&self, resp: &mut reqwest::Response) -> Result<Option<Bytes>, SlurmError> {
        resp.chunk().await.map_err(|e| self.transport(e))
    }

    fn transport(&self, e: reqwest::Error) -> SlurmError {
        if e.is_timeout() {
            SlurmError::Timeout { url: self.base.clone(), secs: self.timeout.as_secs().max(1) }
        } else {
            let mut detail = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                detail = s.to_string();
                src = s.source();
            }
            SlurmError::Unreachable { url: self.base.clone(), detail }
        }
    }

    /// A Slurm 22.05 answer (HTTP 500, or a small 200) whose only errors are
    /// "Unspecified error" (-1).
    fn ambiguous_500(&self, a: &Answer) -> bool {
        let suspicious = a.status == 500 || ((200..300).contains(&a.status) && a.body.len() < STREAM_AFTER);
        if !(self.version.is_some_and(ApiVersion::is_legacy) && suspicious) {
            return false;
        }
        let errors = serde_json::from_slice::<Envelope>(&a.body).map(|e| e.errors).unwrap_or_default();
        !errors.is_empty() && errors.iter().all(|e| e.number() == Some(-1))
    }

    /// Turns a non-success answer into an error, reading whatever body slurmrestd sent
    /// (JSON `errors[]` of one of three shapes, or plain text).
    pub fn error_of(&mut self, endpoint: &str, a: &Answer) -> SlurmError {
        let env: Option<Envelope> = serde_json::from_slice(&a.body).ok();
        let errors = env.map(|e| e.errors).unwrap_or_default();
        if errors.iter().any(|e| e.number() == Some(1007)) {
            self.tokens.invalidate();
            return SlurmError::Auth { status: a.status };
        }
        // Slurm 22.05 loses slurmctld's authentication errno: a refused token reads as
        // HTTP 500 with only "Unspecified error" (-1) entries.
        if self.version.is_some_and(ApiVersion::is_legacy)
            && a.status == 500
            && !errors.is_empty()
            && errors.iter().all(|e| e.number() == Some(-1))
        {
            self.tokens.invalidate();
            return SlurmError::Auth { status: a.status };
        }
        let detail = if errors.is_empty() {
            let t = body_text(&a.body);
            if t.is_empty() { "(empty body)".to_string() } else { t }
        } else {
            errors
                .iter()
                .map(|e| crate::sanitize::sanitize(&e.message()).into_owned())
                .collect::<Vec<_>>()
                .join("; ")
        };
        SlurmError::Http { endpoint: endpoint.to_string(), status: a.status, detail }
    }

    /// GET a collection. `Ok(None)` for 304 (nothing changed since `update_time`).
    pub async fn get(&mut self, path: &str, query: &[(&str, String)]) -> Result<Option<Bytes>, SlurmError> {
        let a = self.send(reqwest::Method::GET, path, query, None).await?;
        self.settle(path, query, a).await
    }

    /// GET a collection whose body may be large (the job list): a success larger than
    /// [`STREAM_AFTER`] comes back unread past its head, for the caller to stream; anything else
    /// is read whole and judged as by [`get`](Self::get).
    pub async fn get_streamed(
        &mut self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<Option<Fetched>, SlurmError> {
        let mut resp = self.start(reqwest::Method::GET, path, query, None).await?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let body = self.read_rest(path, &mut resp, &[], self.max_body, "[slurm] max_body").await?;
            let a = Answer { status, body };
            return Ok(self.settle(path, query, a).await?.map(Fetched::Whole));
        }
        // A success: its first STREAM_AFTER bytes (and at most one chunk more).
        let mut head = bytes::BytesMut::new();
        let whole = loop {
            if head.len() >= STREAM_AFTER {
                break false;
            }
            match self.chunk(&mut resp).await? {
                Some(c) => head.extend_from_slice(&c),
                None => break true,
            }
        };
        let head = head.freeze();
        if !whole {
            return Ok(Some(Fetched::Streaming { head, rest: resp }));
        }
        let a = Answer { status, body: head };
        Ok(self.settle(path, query, a).await?.map(Fetched::Whole))
    }

    /// Judges a GET's answer: retries a failed incremental fetch in full, turns errors (and a
    /// small 200 carrying `errors[]`) into [`SlurmError`]s.
    async fn settle(
        &mut self,
        path: &str,
        query: &[(&str, String)],
        mut a: Answer,
    ) -> Result<Option<Bytes>, SlurmError> {
        let incremental = query.iter().any(|(k, _)| *k == "update_time");
        if incremental && (a.status >= 500 || self.ambiguous_500(&a)) {
            // An incremental fetch (`update_time`) can fail where a full one succeeds: seen on
            // both releases in the live tests, e.g. 24.11's `nodes/` answering 500 "Unable to
            // query partitions: Unspecified error" when nodes changed but partitions did not,
            // and 22.05 answering a bare "Unspecified error". A full fetch answers properly;
            // a refused token or a broken server fails that too.
            let full: Vec<(&str, String)> =
                query.iter().filter(|(k, _)| *k != "update_time").cloned().collect();
            a = self.send(reqwest::Method::GET, path, &full, None).await?;
        }
        match a.status {
            304 => Ok(None),
            200..=299 => {
                // Small bodies are checked for `errors[]` (a 200 can carry them); large ones
                // are data, and so is an answer that only says it found nothing.
                if a.body.len() < STREAM_AFTER
                    && let Ok(env) = serde_json::from_slice::<Envelope>(&a.body)
                    && !env.errors.is_empty()
                    && !env.errors.iter().all(|e| e.number() == Some(NOTHING_FOUND))
                {
                    let mut a = a;
                    a.status = 500;
                    return Err(self.error_of(path, &a));
                }
                Ok(Some(a.body))
            }
            _ => Err(self.error_of(path, &a)),
        }
    }

    /// Finds the newest API version the server speaks (unless one was configured) by pinging
    /// each, newest first; 404 means "not loaded".
    pub async fn negotiate(&mut self) -> Result<ApiVersion, SlurmError> {
        let candidates: Vec<ApiVersion> = match self.version {
            Some(v) if self.release.is_some() => return Ok(v),
            Some(v) => vec![v],
            None => ApiVersion::ALL.to_vec(),
        };
        for v in candidates {
            let path = v.ctld("ping");
            let a = self.send(reqwest::Method::GET, &path, &[], None).await?;
            match a.status {
                200 => {
                    let env: Envelope = serde_json::from_slice(&a.body).map_err(|e| {
                        SlurmError::Malformed { endpoint: path.clone(), detail: e.to_string() }
                    })?;
                    self.version = Some(v);
                    self.release = env.meta.release().map(str::to_string);
                    self.cluster = env.meta.cluster().map(str::to_string);
                    if !env.errors.is_empty() {
                        let a = Answer { status: 500, body: a.body };
                        return Err(self.error_of(&path, &a));
                    }
                    if self.cluster.is_none() {
                        self.cluster = self.db_cluster(v).await;
                    }
                    return Ok(v);
                }
                404 => continue,
                _ => {
                    self.version = Some(v);
                    let e = self.error_of(&path, &a);
                    self.version = None;
                    return Err(e);
                }
            }
        }
        Err(SlurmError::NoVersion { url: self.base.clone() })
    }

    /// The cluster's name from slurmdbd (`ClusterName`) where the ping does not carry it (REST
    /// v0.0.38): the one cluster slurmdbd lists. `None` without slurmdbd, on any failure, or
    /// when it keeps several clusters (which one this slurmctld is, it does not say).
    async fn db_cluster(&mut self, v: ApiVersion) -> Option<String> {
        #[derive(serde::Deserialize, Default)]
        #[serde(default)]
        struct Clusters {
            clusters: Vec<Named>,
        }
        #[derive(serde::Deserialize, Default)]
        #[serde(default)]
        struct Named {
            name: super::wire::Loose,
        }
        let path = v.db("clusters");
        let a = self.send(reqwest::Method::GET, &path, &[], None).await.ok()?;
        if a.status != 200 {
            return None;
        }
        let c: Clusters = serde_json::from_slice(&a.body).ok()?;
        match c.clusters.as_slice() {
            [one] => Some(one.name.as_str().trim()).filter(|n| !n.is_empty()).map(str::to_string),
            _ => None,
        }
    }

    /// The Slurm user requests act as: `X-SLURM-USER-NAME` when configured, else the token's
    /// `sun` claim. (The v0.0.40+ `meta.client.user` is not it: slurmrestd reports `root` there
    /// for a user token, seen live on 24.11.)
    pub async fn identity(&mut self) -> Option<String> {
        if let Some(u) = self.user.clone() {
            return Some(u);
        }
        let t = self.tokens.get(now()).await.ok()?;
        super::token::jwt_user(t.value())
    }

    /// What the token says about itself (user, issue and expiry times), read without
    /// verifying it and without contacting the server (a token command is run when needed).
    /// `Ok(None)`: the token is not a JWT. Never the token itself.
    pub async fn token_claims(&mut self) -> Result<Option<super::token::Claims>, SlurmError> {
        let t = self.tokens.get(now()).await?;
        Ok(super::token::claims(t.value()))
    }

    /// `X-SLURM-USER-NAME`, when configured.
    pub fn user_header(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// The negotiated version (negotiating first when needed).
    pub async fn version(&mut self) -> Result<ApiVersion, SlurmError> {
        match self.version {
            Some(v) if self.release.is_some() => Ok(v),
            _ => self.negotiate().await,
        }
    }
}
