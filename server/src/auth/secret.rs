//! How secrets are stored and checked.
//!
//! - Config users and tokens: `sha256$<salt hex>$<digest hex>` ([`SecretHash`]), from
//!   `chingest hash-password`; fast, fine for tokens (random, long) and kept for existing
//!   configs.
//! - Users created through InfluxQL: bcrypt (`$2b$10$…`, [`PasswordHash::Bcrypt`]), as
//!   InfluxDB 1.x stores them: slow on purpose, so a stolen users file does not give the
//!   passwords away cheaply. Config files may use bcrypt hashes too.
//!
//! A bcrypt check costs ~50–100 ms of a core. [`VerifiedCache`] remembers, per user, a salted
//! SHA-256 of the last password that passed against the user's current hash (as InfluxDB
//! 1.x's auth cache does), so a client sending its credentials with every request pays it
//! once; a wrong password always pays it (guessing stays slow), on at most
//! [`SLOW_CHECKS`] blocking threads at once.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use sha2::{Digest, Sha256};

/// bcrypt cost of new passwords: InfluxDB 1.x's (`bcrypt.DefaultCost`).
pub const BCRYPT_COST: u32 = 10;

/// Bcrypt checks that may run at once (each holds a blocking thread for ~50–100 ms):
/// a flood of wrong passwords costs at most these cores, and cached credentials never wait.
pub const SLOW_CHECKS: usize = 2;

/// A parsed stored secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretHash {
    salt: Vec<u8>,
    digest: [u8; 32],
}

impl SecretHash {
    /// Parses `sha256$<salt hex>$<digest hex>` (the salt may be empty).
    pub fn parse(s: &str) -> Option<SecretHash> {
        let mut parts = s.split('$');
        if parts.next()? != "sha256" {
            return None;
        }
        let salt = unhex(parts.next()?)?;
        let digest: [u8; 32] = unhex(parts.next()?)?.try_into().ok()?;
        if parts.next().is_some() {
            return None;
        }
        Some(SecretHash { salt, digest })
    }

    /// Hashes `secret` with a fresh 16-byte random salt.
    pub fn new(secret: &str) -> SecretHash {
        let salt: [u8; 16] = rand::random();
        SecretHash {
            digest: digest(&salt, secret),
            salt: salt.to_vec(),
        }
    }

    /// Whether `secret` matches, in time independent of where it differs.
    pub fn verify(&self, secret: &str) -> bool {
        same(&digest(&self.salt, secret), &self.digest)
    }
}

impl std::fmt::Display for SecretHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sha256${}${}", hex(&self.salt), hex(&self.digest))
    }
}

/// A user's stored password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PasswordHash {
    /// `sha256$…` (config files).
    Sha256(SecretHash),
    /// A bcrypt hash (`$2a$`, `$2b$`, `$2y$`), as InfluxDB 1.x and chingest's InfluxQL
    /// users store them.
    Bcrypt(Arc<str>),
}

impl PasswordHash {
    /// Parses either form; `None` for anything else.
    pub fn parse(s: &str) -> Option<PasswordHash> {
        if let Some(h) = SecretHash::parse(s) {
            return Some(PasswordHash::Sha256(h));
        }
        // Valid bcrypt: `$2?$<cost>$<53 chars of salt and hash>`; `verify` re-checks.
        let ok = s.len() == 60
            && ["$2a$", "$2b$", "$2y$"].iter().any(|p| s.starts_with(p))
            && s.as_bytes()[6] == b'$'
            && s[4..6].parse::<u32>().is_ok_and(|c| (4..=31).contains(&c));
        ok.then(|| PasswordHash::Bcrypt(s.into()))
    }

    /// A new bcrypt hash of `password` (slow: call off the async threads).
    pub fn bcrypt(password: &str) -> PasswordHash {
        let h = bcrypt::hash(password, BCRYPT_COST).expect("cost is in bcrypt's range");
        PasswordHash::Bcrypt(h.into())
    }

    /// Whether `password` matches (bcrypt: slow; call off the async threads).
    pub fn verify_slow(&self, password: &str) -> bool {
        match self {
            PasswordHash::Sha256(h) => h.verify(password),
            PasswordHash::Bcrypt(h) => bcrypt::verify(password, h).unwrap_or(false),
        }
    }

    /// The stored text.
    pub fn as_stored(&self) -> String {
        match self {
            PasswordHash::Sha256(h) => h.to_string(),
            PasswordHash::Bcrypt(h) => h.to_string(),
        }
    }
}

/// Per user, the last password that passed a slow check, as a salted SHA-256, with the
/// stored hash it passed against (a changed password or a recreated user misses).
/// One entry per user at most: bounded by the users there are.
#[derive(Debug, Default)]
pub struct VerifiedCache {
    entries: Mutex<HashMap<String, Verified>>,
}

#[derive(Debug)]
struct Verified {
    against: Arc<str>,
    salt: [u8; 16],
    digest: [u8; 32],
}

impl VerifiedCache {
    /// Whether `password` is the one that last passed against `hash` for `user`.
    pub fn hit(&self, user: &str, hash: &Arc<str>, password: &str) -> bool {
        let entries = self.entries.lock();
        entries
            .get(user)
            .is_some_and(|v| v.against == *hash && same(&digest(&v.salt, password), &v.digest))
    }

    /// Remembers that `password` passed against `hash` for `user`.
    pub fn insert(&self, user: &str, hash: &Arc<str>, password: &str) {
        let salt: [u8; 16] = rand::random();
        let v = Verified {
            against: hash.clone(),
            digest: digest(&salt, password),
            salt,
        };
        self.entries.lock().insert(user.to_string(), v);
    }

    /// Forgets `user` (dropped, or its password changed).
    pub fn forget(&self, user: &str) {
        self.entries.lock().remove(user);
    }
}

fn digest(salt: &[u8], secret: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(secret.as_bytes());
    h.finalize().into()
}

/// Equal, in time independent of where they differ.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() & 1 == 1 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_round_trip_and_use_fresh_salts() {
        let a = SecretHash::new("pw");
        let b = SecretHash::new("pw");
        assert_ne!(a, b, "two hashes of one secret must differ by salt");
        let parsed = SecretHash::parse(&a.to_string()).unwrap();
        assert!(parsed.verify("pw"));
        assert!(!parsed.verify("pw "));
        assert!(SecretHash::parse("md5$00$00").is_none());
        assert!(SecretHash::parse("sha256$zz$00").is_none());
        assert!(SecretHash::parse("sha256$$0011").is_none(), "short digest");
    }

    #[test]
    fn bcrypt_hashes_parse_verify_and_differ_by_salt() {
        let a = PasswordHash::bcrypt("s3cret");
        let b = PasswordHash::bcrypt("s3cret");
        assert_ne!(a, b);
        let stored = a.as_stored();
        assert!(stored.starts_with("$2b$10$"), "{stored}");
        let parsed = PasswordHash::parse(&stored).unwrap();
        assert!(parsed.verify_slow("s3cret"));
        assert!(!parsed.verify_slow("s3cret "));
        // InfluxDB 1.x's hashes (Go's bcrypt writes `$2a$`) are accepted as they are.
        let go = stored.replacen("$2b$", "$2a$", 1);
        assert!(PasswordHash::parse(&go).unwrap().verify_slow("s3cret"));
        for bad in ["$2b$10$short", "$2b$99$", "$1$abc", ""] {
            assert!(PasswordHash::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_cache_hits_only_the_verified_password_against_the_same_hash() {
        let cache = VerifiedCache::default();
        let h: Arc<str> = "hash-1".into();
        assert!(!cache.hit("bob", &h, "pw"));
        cache.insert("bob", &h, "pw");
        assert!(cache.hit("bob", &h, "pw"));
        assert!(!cache.hit("bob", &h, "pw2"), "another password");
        assert!(
            !cache.hit("bob", &"hash-2".into(), "pw"),
            "password changed"
        );
        assert!(!cache.hit("alice", &h, "pw"), "another user");
        cache.forget("bob");
        assert!(!cache.hit("bob", &h, "pw"));
    }
}
