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

fn jwt_claims(token: &str) -> Option<serde_json::Value> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64url_decode(payload)?;
    serde_json::from_slice(&bytes).ok()
}

/// The `exp` claim of a JWT, without verifying it (only the server can).
pub fn jwt_exp(token: &str) -> Option<i64> {
    jwt_claims(token)?.get("exp")?.as_i64()
}

/// The user a Slurm JWT names (`sun`), without verifying it.
pub fn jwt_user(token: &str) -> Option<String> {
    let v = jwt_claims(token)?;
    v.get("sun")?.as_str().filter(|u| !u.is_empty()).map(str::to_string)
}

fn base64url_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            b'=' => break,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
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
