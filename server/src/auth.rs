//! Authentication (off by default) and per-database authorization.
//!
//! Credentials, in the order InfluxDB 1.x looks for them: `u`/`p` query
//! parameters, `Authorization: Basic`, `Authorization: Token <token>` (a
//! configured token, or `user:password` as the 1.8 v2-compatibility API uses).
//! Secrets are stored as `sha256$<salt hex>$<digest hex>` with a per-secret
//! random salt and compared in constant time.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::config::{AuthConfig, UserConfig};
use crate::error::{Api, ApiError};

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
        let d = digest(&self.salt, secret);
        d.iter()
            .zip(self.digest.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

impl std::fmt::Display for SecretHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sha256${}${}", hex(&self.salt), hex(&self.digest))
    }
}

fn digest(salt: &[u8], secret: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(secret.as_bytes());
    h.finalize().into()
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

/// A configured user.
#[derive(Debug)]
pub struct User {
    /// Name.
    pub name: String,
    password: Option<SecretHash>,
    tokens: Vec<SecretHash>,
    /// May manage databases and run any SQL.
    pub admin: bool,
    read: Vec<String>,
    write: Vec<String>,
}

impl User {
    /// The databases this user may read (`*` = all), as configured.
    pub fn read(&self) -> &[String] {
        &self.read
    }
}

/// Who is making a request; inserted into request extensions by [`require_auth`].
#[derive(Debug, Clone)]
pub enum Identity {
    /// Auth is disabled: everything but SQL writes is allowed (SQL reads every
    /// database, read-only; see `sql::sql_access`).
    Anonymous,
    /// An authenticated user.
    User(Arc<User>),
}

impl Identity {
    fn allowed(list: &[String], db: &str) -> bool {
        list.iter().any(|d| d == "*" || d == db)
    }
    /// May read `db`.
    pub fn can_read(&self, db: &str) -> bool {
        match self {
            Identity::Anonymous => true,
            Identity::User(u) => u.admin || Self::allowed(&u.read, db),
        }
    }
    /// May write `db`.
    pub fn can_write(&self, db: &str) -> bool {
        match self {
            Identity::Anonymous => true,
            Identity::User(u) => u.admin || Self::allowed(&u.write, db),
        }
    }
    /// May create and drop databases (anonymous may, when auth is off, so
    /// Telegraf's `CREATE DATABASE` works out of the box).
    pub fn can_manage_databases(&self) -> bool {
        match self {
            Identity::Anonymous => true,
            Identity::User(u) => u.admin,
        }
    }
    /// May run SQL that is not read-only: authenticated admins only.
    pub fn can_write_sql(&self) -> bool {
        matches!(self, Identity::User(u) if u.admin)
    }
    /// The user's name, for logs.
    pub fn name(&self) -> &str {
        match self {
            Identity::Anonymous => "anonymous",
            Identity::User(u) => &u.name,
        }
    }
}

/// Checks credentials against the configured users.
#[derive(Debug, Default)]
pub struct Authenticator {
    enabled: bool,
    metrics_require_auth: bool,
    users: HashMap<String, Arc<User>>,
}

impl Authenticator {
    /// Builds from `[auth]` (already validated: unparsable hashes are skipped).
    pub fn new(config: &AuthConfig) -> Authenticator {
        let users = config
            .users
            .iter()
            .map(|u: &UserConfig| {
                let user = User {
                    name: u.name.clone(),
                    password: SecretHash::parse(&u.password_hash),
                    tokens: u
                        .token_hashes
                        .iter()
                        .filter_map(|t| SecretHash::parse(t))
                        .collect(),
                    admin: u.admin,
                    read: u.read.clone(),
                    write: u.write.clone(),
                };
                (u.name.clone(), Arc::new(user))
            })
            .collect();
        Authenticator {
            enabled: config.enabled,
            metrics_require_auth: config.metrics_require_auth,
            users,
        }
    }

    /// Whether auth is on.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    fn check_password(&self, user: &str, password: &str) -> Result<Identity, ApiError> {
        match self.users.get(user) {
            Some(u) if u.password.as_ref().is_some_and(|h| h.verify(password)) => {
                Ok(Identity::User(u.clone()))
            }
            // Same answer for an unknown user and a wrong password: no user enumeration.
            _ => Err(ApiError::AuthFailed),
        }
    }

    fn check_token(&self, token: &str) -> Result<Identity, ApiError> {
        for u in self.users.values() {
            if u.tokens.iter().any(|t| t.verify(token)) {
                return Ok(Identity::User(u.clone()));
            }
        }
        if let Some((user, password)) = token.split_once(':') {
            return self.check_password(user, password);
        }
        Err(ApiError::AuthFailed)
    }

    /// Authenticates a request from its query string and headers.
    pub fn authenticate(
        &self,
        query: Option<&str>,
        headers: &axum::http::HeaderMap,
    ) -> Result<Identity, ApiError> {
        if !self.enabled {
            return Ok(Identity::Anonymous);
        }
        let params = crate::params::Params::parse(query.unwrap_or(""));
        if let Some(user) = params.get("u") {
            return self.check_password(user, params.get("p").unwrap_or(""));
        }
        let Some(value) = headers.get(axum::http::header::AUTHORIZATION) else {
            return Err(ApiError::AuthMissing);
        };
        let value = value.to_str().map_err(|_| ApiError::AuthMissing)?.trim();
        let (scheme, rest) = value.split_once(' ').ok_or(ApiError::AuthMissing)?;
        let rest = rest.trim();
        if scheme.eq_ignore_ascii_case("basic") {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(rest)
                .map_err(|_| ApiError::AuthMissing)?;
            let decoded = String::from_utf8(decoded).map_err(|_| ApiError::AuthMissing)?;
            let (user, password) = decoded.split_once(':').ok_or(ApiError::AuthMissing)?;
            self.check_password(user, password)
        } else if scheme.eq_ignore_ascii_case("token") || scheme.eq_ignore_ascii_case("bearer") {
            self.check_token(rest)
        } else {
            Err(ApiError::AuthMissing)
        }
    }
}

/// Middleware: authenticates (unless the path is exempt) and stores the
/// [`Identity`] in the request's extensions; 401 in the path's API shape.
pub async fn require_auth(
    State(auth): State<Arc<Authenticator>>,
    mut req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path();
    let exempt =
        path == "/ping" || path == "/health" || (path == "/metrics" && !auth.metrics_require_auth);
    let identity = if exempt {
        Ok(Identity::Anonymous)
    } else {
        auth.authenticate(req.uri().query(), req.headers())
    };
    match identity {
        Ok(id) => {
            req.extensions_mut().insert(id);
            next.run(req).await
        }
        Err(e) => {
            tracing::debug!(path, "authentication failed: {e}");
            e.into_response_for(Api::for_path(path))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderMap, HeaderValue};

    fn config() -> AuthConfig {
        AuthConfig {
            enabled: true,
            metrics_require_auth: false,
            users: vec![
                UserConfig {
                    name: "alice".into(),
                    password_hash: SecretHash::new("s3cret").to_string(),
                    token_hashes: vec![SecretHash::new("tok-alice").to_string()],
                    admin: false,
                    read: vec!["a".into()],
                    write: vec!["a".into(), "w".into()],
                },
                UserConfig {
                    name: "root".into(),
                    password_hash: SecretHash::new("rootpw").to_string(),
                    admin: true,
                    ..Default::default()
                },
            ],
        }
    }

    fn hdr(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("authorization", HeaderValue::from_str(v).unwrap());
        h
    }

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
    fn every_credential_form_is_accepted() {
        let a = Authenticator::new(&config());
        let none = HeaderMap::new();
        assert_eq!(
            a.authenticate(Some("u=alice&p=s3cret&db=a"), &none)
                .unwrap()
                .name(),
            "alice"
        );
        let basic = base64::engine::general_purpose::STANDARD.encode("alice:s3cret");
        assert_eq!(
            a.authenticate(None, &hdr(&format!("Basic {basic}")))
                .unwrap()
                .name(),
            "alice"
        );
        assert_eq!(
            a.authenticate(None, &hdr("Token tok-alice"))
                .unwrap()
                .name(),
            "alice"
        );
        assert_eq!(
            a.authenticate(None, &hdr("Token root:rootpw"))
                .unwrap()
                .name(),
            "root"
        );
    }

    #[test]
    fn wrong_and_missing_credentials_are_distinguished() {
        let a = Authenticator::new(&config());
        let none = HeaderMap::new();
        assert!(matches!(
            a.authenticate(None, &none),
            Err(ApiError::AuthMissing)
        ));
        assert!(matches!(
            a.authenticate(Some("u=alice&p=x"), &none),
            Err(ApiError::AuthFailed)
        ));
        assert!(matches!(
            a.authenticate(Some("u=bob&p=s3cret"), &none),
            Err(ApiError::AuthFailed)
        ));
        assert!(matches!(
            a.authenticate(None, &hdr("Token nope")),
            Err(ApiError::AuthFailed)
        ));
        assert!(matches!(
            a.authenticate(None, &hdr("Basic !!!")),
            Err(ApiError::AuthMissing)
        ));
    }

    #[test]
    fn permissions_follow_the_lists() {
        let a = Authenticator::new(&config());
        let alice = a
            .authenticate(Some("u=alice&p=s3cret"), &HeaderMap::new())
            .unwrap();
        assert!(alice.can_read("a") && !alice.can_read("w"));
        assert!(alice.can_write("w") && !alice.can_write("b"));
        assert!(!alice.can_manage_databases() && !alice.can_write_sql());
        let root = a
            .authenticate(Some("u=root&p=rootpw"), &HeaderMap::new())
            .unwrap();
        assert!(root.can_read("zzz") && root.can_write("zzz") && root.can_write_sql());
        let off = Authenticator::new(&AuthConfig::default());
        let anon = off.authenticate(None, &HeaderMap::new()).unwrap();
        assert!(anon.can_write("x") && anon.can_manage_databases() && !anon.can_write_sql());
    }
}
