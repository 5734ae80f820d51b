//! Secrets never enter the audit log: keys that name secrets are dropped and values that look
//! like credentials (JWTs, bearer tokens, `token=…`/`password=…` pairs) are masked.

use std::borrow::Cow;

/// Parameter names whose values are never written.
pub fn is_secret_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    [
        "token",
        "password",
        "passwd",
        "secret",
        "jwt",
        "authorization",
        "cookie",
        "api_key",
        "apikey",
        "credential",
    ]
    .iter()
    .any(|s| k.contains(s))
}

/// A JWT: three base64url segments, the first starting with `eyJ` (`{"`).
fn is_jwt(w: &str) -> bool {
    let parts: Vec<&str> = w.split('.').collect();
    parts.len() == 3
        && parts[0].starts_with("eyJ")
        && parts
            .iter()
            .all(|p| p.len() >= 4 && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
}

/// Masks credentials in free text.
pub fn redact(s: &str) -> Cow<'_, str> {
    let needs = s.contains("eyJ") || s.contains('=') || s.to_ascii_lowercase().contains("bearer ");
    if !needs {
        return Cow::Borrowed(s);
    }
    let mut out = Vec::new();
    let mut mask_next = false;
    for w in s.split(' ') {
        let lw = w.to_ascii_lowercase();
        if mask_next {
            out.push("[REDACTED]".to_string());
            mask_next = false;
        } else if is_jwt(
            w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '.' && c != '-' && c != '_'),
        ) {
            out.push("[REDACTED]".to_string());
        } else if let Some((k, _)) = w.split_once('=').filter(|(k, _)| is_secret_key(k)) {
            out.push(format!("{k}=[REDACTED]"));
        } else {
            if lw == "bearer" {
                mask_next = true;
            }
            out.push(w.to_string());
        }
    }
    Cow::Owned(out.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_jwts_bearer_tokens_and_secret_pairs() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJyb290In0.c2lnbmF0dXJlLXZhbHVl";
        assert_eq!(redact(&format!("used {jwt} here")), "used [REDACTED] here");
        assert_eq!(redact("Authorization: Bearer abc.def"), "Authorization: Bearer [REDACTED]");
        assert_eq!(redact("SLURM_JWT=xyz ok"), "SLURM_JWT=[REDACTED] ok");
        assert_eq!(redact("password=hunter2"), "password=[REDACTED]");
        assert!(matches!(redact("drain for RMA, ticket INC-42"), Cow::Borrowed(_)));
    }

    #[test]
    fn secret_keys() {
        assert!(
            is_secret_key("slurm_token") && is_secret_key("Authorization") && !is_secret_key("grace_period")
        );
    }
}
