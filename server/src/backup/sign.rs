//! Signed backups: `manifest.sig` holds the HMAC-SHA-256 of `manifest.json`'s bytes under a
//! key only the operator has (`--key-file`), in lowercase hex. The manifest lists the
//! SHA-256 of every other file, so one signature covers the whole backup: a restore given
//! the key refuses a backup whose manifest, data or users file changed after it was
//! signed, or that carries no signature at all.

use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::{Digest as _, Sha256};

use super::BackupError;

/// The signature's file in a backup.
pub const SIGNATURE_FILE: &str = "manifest.sig";

/// Fewest bytes a key file may hold (a key of 32 random bytes is what the docs suggest:
/// `head -c 32 /dev/urandom > backup.key`).
pub const MIN_KEY_BYTES: usize = 16;

/// A signing key, read from a file.
#[derive(Clone)]
pub struct Key(Vec<u8>);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key([REDACTED])")
    }
}

impl Key {
    /// The key in `path` (its bytes as they are).
    pub fn read(path: &Path) -> Result<Key, BackupError> {
        let bytes = std::fs::read(path).map_err(|source| BackupError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Key::new(bytes).map_err(|why| BackupError::Manifest(format!("{}: {why}", path.display())))
    }

    /// A key of these bytes: at least [`MIN_KEY_BYTES`].
    pub fn new(bytes: Vec<u8>) -> Result<Key, String> {
        if bytes.len() < MIN_KEY_BYTES {
            return Err(format!(
                "a key of {} bytes is too short (at least {MIN_KEY_BYTES}; e.g. head -c 32 /dev/urandom > backup.key)",
                bytes.len()
            ));
        }
        Ok(Key(bytes))
    }

    fn mac(&self) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any length")
    }

    /// The signature of `manifest`, lowercase hex.
    pub fn sign(&self, manifest: &[u8]) -> String {
        let mut mac = self.mac();
        mac.update(manifest);
        hex(&mac.finalize().into_bytes())
    }

    /// Whether `signature` (hex, surrounding whitespace ignored) signs `manifest`, compared
    /// in constant time.
    pub fn verify(&self, manifest: &[u8], signature: &str) -> bool {
        let Some(bytes) = unhex(signature.trim()) else {
            return false;
        };
        let mut mac = self.mac();
        mac.update(manifest);
        mac.verify_slice(&bytes).is_ok()
    }
}

/// The SHA-256 of `bytes`, lowercase hex.
pub fn sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() & 1 != 0 || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_checks_only_its_manifest_under_its_key() {
        let key = Key::new(b"0123456789abcdef0123456789abcdef".to_vec()).unwrap();
        let sig = key.sign(b"{\"version\":2}");
        assert_eq!(sig.len(), 64);
        assert!(key.verify(b"{\"version\":2}", &format!("{sig}\n")));
        assert!(!key.verify(b"{\"version\":3}", &sig), "another manifest");
        let other = Key::new(b"0123456789abcdef0123456789abcdeX".to_vec()).unwrap();
        assert!(!other.verify(b"{\"version\":2}", &sig), "another key");
        for bad in ["", "zz", &sig[..63], &sig[..62]] {
            assert!(!key.verify(b"{\"version\":2}", bad), "{bad:?}");
        }
        assert!(Key::new(b"short".to_vec()).is_err());
        assert_eq!(format!("{key:?}"), "Key([REDACTED])");
    }

    #[test]
    fn sha256_is_the_standard_digest() {
        assert_eq!(
            sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
