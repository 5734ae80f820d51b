//! Signed checkpoints: an Ed25519 key kept beside the log (`<log>.key`, mode 0600) signs the
//! chain's head every N records and at a session's end, so whoever holds a copy of the log and
//! the public key (`gpuplane audit pubkey`) can check it without the writer's machine: the
//! chain ties every record to the head a checkpoint signed.
//!
//! A checkpoint is a record of phase `checkpoint` whose params carry `key` (the public key, hex)
//! and `sig` (hex), the signature of [`message`] over its own `seq` and `prev_hash`.

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The key file beside the log at `log`.
pub fn key_path(log: &Path) -> PathBuf {
    let mut p = log.as_os_str().to_owned();
    p.push(".key");
    PathBuf::from(p)
}

/// What a checkpoint at `seq`, chained to `prev_hash`, signs.
pub fn message(seq: u64, prev_hash: &str) -> String {
    format!("gpuplane-audit-checkpoint v1 seq={seq} prev_hash={prev_hash}")
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("audit signing key {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("audit signing key {path}: {detail}")]
    Bad { path: PathBuf, detail: String },
}

/// Loads the signing key at `path`.
pub fn load(path: &Path) -> Result<SigningKey, KeyError> {
    let text = std::fs::read_to_string(path).map_err(|source| KeyError::Io { path: path.into(), source })?;
    let bad = |detail: &str| KeyError::Bad { path: path.into(), detail: detail.into() };
    let bytes = hex::decode(text.trim()).map_err(|_| bad("not hex"))?;
    let secret: [u8; 32] = bytes.try_into().map_err(|_| bad("not 32 bytes"))?;
    Ok(SigningKey::from_bytes(&secret))
}

/// Loads the key at `path`, creating it (mode 0600, from the OS's random source) when there is
/// none.
pub fn load_or_create(path: &Path) -> Result<SigningKey, KeyError> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| KeyError::Io { path: path.into(), source };
    match load(path) {
        Err(KeyError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
        other => return other,
    }
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| io(std::io::Error::other(e.to_string())))?;
    let mut f =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).map_err(io)?;
    f.write_all(format!("{}\n", hex::encode(secret)).as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    Ok(SigningKey::from_bytes(&secret))
}

/// The public key as printed and as `--pubkey` takes it (64 hex digits).
pub fn public_hex(key: &SigningKey) -> String {
    hex::encode(key.verifying_key().as_bytes())
}

/// A public key from 64 hex digits, or from a file holding them.
pub fn parse_public(s: &str) -> Result<VerifyingKey, String> {
    let text = if s.len() != 64 && Path::new(s).exists() {
        std::fs::read_to_string(s).map_err(|e| format!("{s}: {e}"))?
    } else {
        s.to_string()
    };
    let bytes = hex::decode(text.trim()).map_err(|_| format!("{s:?} is not a public key (64 hex digits)"))?;
    let b: [u8; 32] = bytes.try_into().map_err(|_| format!("{s:?} is not a public key (64 hex digits)"))?;
    VerifyingKey::from_bytes(&b).map_err(|e| format!("{s:?} is not an Ed25519 public key: {e}"))
}

/// The signature (hex) of the checkpoint at `seq` chained to `prev_hash`.
pub fn sign(key: &SigningKey, seq: u64, prev_hash: &str) -> String {
    hex::encode(key.sign(message(seq, prev_hash).as_bytes()).to_bytes())
}

/// Whether `sig` (hex) is `key`'s signature of the checkpoint at `seq` chained to `prev_hash`.
pub fn check(key: &VerifyingKey, seq: u64, prev_hash: &str, sig: &str) -> bool {
    let Ok(bytes) = hex::decode(sig) else { return false };
    let Ok(b): Result<[u8; 64], _> = bytes.try_into() else { return false };
    key.verify_strict(message(seq, prev_hash).as_bytes(), &Signature::from_bytes(&b)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_created_key_is_private_and_reloads_the_same() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = key_path(&dir.path().join("audit.jsonl"));
        let k = load_or_create(&p).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(load_or_create(&p).unwrap().to_bytes(), k.to_bytes());
        let public = parse_public(&public_hex(&k)).unwrap();
        let sig = sign(&k, 7, "ab");
        assert!(check(&public, 7, "ab", &sig));
        assert!(
            !check(&public, 7, "ac", &sig)
                && !check(&public, 8, "ab", &sig)
                && !check(&public, 7, "ab", "zz")
        );
    }
}
