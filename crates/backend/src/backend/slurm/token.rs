//! Where the JWT comes from: given (config or `SLURM_JWT`), read from a file (re-read each time
//! it is needed, so an external refresher works), or printed by a command such as
//! `scontrol token lifespan=3600` and re-run when the token nears expiry or is refused.
//! The token itself is never logged, displayed or put into an error message.

use super::error::SlurmError;
use std::path::PathBuf;

/// Re-mint a command token this long before it expires.
const REFRESH_BEFORE_S: i64 = 120;

#[derive(Clone, PartialEq, Eq)]
pub enum TokenSource {
    Static(String),
    File(PathBuf),
    Command(String),
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenSource::Static(_) => f.write_str("Static(<redacted>)"),
            TokenSource::File(p) => f.debug_tuple("File").field(p).finish(),
            TokenSource::Command(c) => f.debug_tuple("Command").field(c).finish(),
        }
    }
}

/// A token and its expiry (from the JWT's `exp` claim, when it has one).
#[derive(Clone, Default)]
pub struct Token {
    value: String,
    pub exp: Option<i64>,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token").field("exp", &self.exp).finish_non_exhaustive()
    }
}

impl Token {
    pub fn new(raw: &str) -> Self {
        let value = clean(raw);
        let exp = jwt_exp(&value);
        Token { value, exp }
    }

    pub fn value(&self) -> &str {
        &self.value
    }

    pub fn expired(&self, now: i64) -> bool {
        self.exp.is_some_and(|e| e <= now)
    }
}

/// `SLURM_JWT=abc\n` (what `scontrol token` prints) or `abc` → `abc`.
fn clean(raw: &str) -> String {
    let line = raw.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    line.strip_prefix("SLURM_JWT=").unwrap_or(line).trim().to_string()
}

/// The payload of a JWT as JSON, without verifying it (only the server can). `None` for a
/// token that is not a JWT.
pub fn jwt_claims(token: &str) -> Option<serde_json::Value> {
    use base64::Engine as _;
    let payload = token.split('.').nth(1)?;
    // base64url without padding is the JWT form; accept padding and the standard alphabet too.
    let cfg = base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent);
    let url = base64::engine::GeneralPurpose::new(&base64::alphabet::URL_SAFE, cfg);
    let std = base64::engine::GeneralPurpose::new(&base64::alphabet::STANDARD, cfg);
    let bytes = url.decode(payload).or_else(|_| std.decode(payload)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// What a Slurm JWT says about itself (never the token): who it names, when it was issued and
/// when it expires.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct Claims {
    /// The Slurm user (`sun`).
    #[serde(default)]
    pub sun: Option<String>,
    #[serde(default)]
    pub exp: Option<i64>,
    #[serde(default)]
    pub iat: Option<i64>,
}

/// The claims gpuplane reads from a Slurm JWT, without verifying it. `None` for a token that is
/// not a JWT (or whose claims are not what Slurm writes).
pub fn claims(token: &str) -> Option<Claims> {
    let mut c: Claims = serde_json::from_value(jwt_claims(token)?).ok()?;
    c.sun = c.sun.filter(|u| !u.is_empty());
    Some(c)
}

/// The `exp` claim of a JWT, without verifying it (only the server can).
pub fn jwt_exp(token: &str) -> Option<i64> {
    jwt_claims(token)?.get("exp")?.as_i64()
}

/// The user a Slurm JWT names (`sun`), without verifying it.
pub fn jwt_user(token: &str) -> Option<String> {
    claims(token)?.sun
}

/// Holds the current token and knows how to get a new one.
#[derive(Debug, Clone)]
pub struct TokenKeeper {
    source: TokenSource,
    current: Option<Token>,
}

impl TokenKeeper {
    pub fn new(source: TokenSource) -> Self {
        TokenKeeper { source, current: None }
    }

    /// Forgets the current token (after the server refused it), so the next call mints anew.
    pub fn invalidate(&mut self) {
        if matches!(self.source, TokenSource::Command(_) | TokenSource::File(_)) {
            self.current = None;
        }
    }

    pub fn can_refresh(&self) -> bool {
        !matches!(self.source, TokenSource::Static(_))
    }

    /// The token to send now. Runs the token command (blocking the calling task briefly) when
    /// there is none yet or it is about to expire; re-reads a token file each time.
    pub async fn get(&mut self, now: i64) -> Result<Token, SlurmError> {
        match &self.source {
            TokenSource::Static(t) => {
                let tok = self.current.get_or_insert_with(|| Token::new(t)).clone();
                if tok.value.is_empty() {
                    return Err(SlurmError::NoToken(
                        "set SLURM_JWT, --slurm-token-file or --slurm-token-cmd".into(),
                    ));
                }
                Ok(tok)
            }
            TokenSource::File(p) => {
                let text = tokio::fs::read_to_string(p).await.map_err(|e| {
                    SlurmError::NoToken(format!("cannot read token file {}: {e}", p.display()))
                })?;
                let tok = Token::new(&text);
                if tok.value.is_empty() {
                    return Err(SlurmError::NoToken(format!("token file {} is empty", p.display())));
                }
                self.current = Some(tok.clone());
                Ok(tok)
            }
            TokenSource::Command(cmd) => {
                if let Some(t) = &self.current
                    && t.exp.is_none_or(|e| e - REFRESH_BEFORE_S > now)
                {
                    return Ok(t.clone());
                }
                let tok = run_command(cmd).await?;
                self.current = Some(tok.clone());
                Ok(tok)
            }
        }
    }
}

async fn run_command(cmd: &str) -> Result<Token, SlurmError> {
    let fail = |detail: String| SlurmError::TokenCommand { cmd: cmd.to_string(), detail };
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        tokio::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .map_err(|_| fail("no answer within 20 s".into()))?
    .map_err(|e| fail(e.to_string()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        return Err(fail(format!("{}: {}", out.status, crate::sanitize::sanitize(last))));
    }
    let tok = Token::new(&String::from_utf8_lossy(&out.stdout));
    if tok.value.is_empty() {
        return Err(fail("it printed no token".into()));
    }
    Ok(tok)
}

#[cfg(test)]
mod tests {
    use super::*;

    // {"alg":"HS256","typ":"JWT"} . {"exp":1796051537,"iat":1795965137,"sun":"root"} . sig
    const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjE3OTYwNTE1MzcsImlhdCI6MTc5NTk2NTEzNywic3VuIjoicm9vdCJ9.sig";

    #[test]
    fn expiry_is_read_from_the_jwt() {
        assert_eq!(jwt_exp(JWT), Some(1_796_051_537));
        assert_eq!(jwt_exp("not-a-jwt"), None);
        assert_eq!(jwt_user(JWT).as_deref(), Some("root"));
        assert_eq!(jwt_user("not-a-jwt"), None);
        let c = claims(JWT).unwrap();
        assert_eq!(
            (c.sun.as_deref(), c.exp, c.iat),
            (Some("root"), Some(1_796_051_537), Some(1_795_965_137))
        );
        // padded, and the standard alphabet, read too
        let padded = "x.eyJleHAiOjE3OTYwNTE1MzcsInN1biI6ImFsaWNlIn0=.s";
        assert_eq!(claims(padded).unwrap().sun.as_deref(), Some("alice"));
        assert_eq!(claims("a.!!!.b"), None);
        let t = Token::new(&format!("SLURM_JWT={JWT}\n"));
        assert_eq!(t.value(), JWT);
        assert!(t.expired(1_796_051_537));
        assert!(!t.expired(1_796_051_536));
    }

    #[test]
    fn debug_output_never_shows_the_token() {
        let t = Token::new(JWT);
        assert!(!format!("{t:?}").contains("eyJ"));
        assert!(!format!("{:?}", TokenSource::Static(JWT.into())).contains("eyJ"));
    }

    #[tokio::test]
    async fn a_command_token_is_minted_and_reused_until_near_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let count = dir.path().join("count");
        let cmd = format!("echo x >> {}; echo SLURM_JWT={JWT}", count.display());
        let mut k = TokenKeeper::new(TokenSource::Command(cmd));
        assert_eq!(k.get(1_796_000_000).await.unwrap().value(), JWT);
        k.get(1_796_000_001).await.unwrap();
        assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 1);
        // within two minutes of `exp`: minted again
        k.get(1_796_051_537 - 60).await.unwrap();
        assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 2);
        let mut bad = TokenKeeper::new(TokenSource::Command("echo nope >&2; exit 3".into()));
        let e = bad.get(0).await.unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains("token command"), "{e}");
    }
}
