//! Authentication (off by default) and per-database authorization.
//!
//! Credentials, in the order InfluxDB 1.x looks for them: `u`/`p` query
//! parameters, `Authorization: Basic`, `Authorization: Token <token>` (a
//! configured token, or `user:password` as the 1.8 v2-compatibility API uses).
//!
//! Users come from two places: `[[auth.users]]` in the config file (read-only at run time)
//! and InfluxQL (`CREATE USER`, `GRANT`, …: [`users::Directory`], durable in
//! `<data_dir>/users.json`). A change through InfluxQL applies to every request
//! authenticated after it answered, on every endpoint (`/write`, `/query`, `/api/v1/sql`,
//! the engine roles reads use). With auth on and no user at all, the only thing the server
//! does is create the first admin (`CREATE USER … WITH ALL PRIVILEGES` on `/query`), as in
//! InfluxDB 1.x. Secrets: [`secret`].

mod manage;
pub mod secret;
pub mod users;

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine as _;
use influxql::ast::Privilege;
use parking_lot::RwLock;
use tokio::sync::Semaphore;

use crate::config::{AuthConfig, UserConfig};
use crate::error::{Api, ApiError};
pub use secret::{PasswordHash, SecretHash};
use users::{Directory, StoredUser, UsersFileError};

/// A user: from the config file or from InfluxQL.
#[derive(Debug)]
pub struct User {
    /// Name.
    pub name: String,
    password: Option<PasswordHash>,
    tokens: Vec<SecretHash>,
    /// May manage databases and users and run any SQL.
    pub admin: bool,
    read: Vec<String>,
    write: Vec<String>,
    /// Defined in the config file (InfluxQL cannot change it).
    from_config: bool,
}

impl User {
    /// The databases this user may read (`*` = all).
    pub fn read(&self) -> &[String] {
        &self.read
    }

    fn from_stored(u: &StoredUser) -> User {
        let on = |f: fn(Privilege) -> bool| {
            u.privileges
                .keys()
                .filter(|db| f(u.privilege(db)))
                .cloned()
                .collect()
        };
        User {
            name: u.name.clone(),
            password: PasswordHash::parse(&u.hash),
            tokens: Vec::new(),
            admin: u.admin,
            read: on(Privilege::reads),
            write: on(Privilege::writes),
            from_config: false,
        }
    }

    fn from_config(u: &UserConfig) -> User {
        User {
            name: u.name.clone(),
            password: PasswordHash::parse(&u.password_hash),
            tokens: u
                .token_hashes
                .iter()
                .filter_map(|t| SecretHash::parse(t))
                .collect(),
            admin: u.admin,
            read: u.read.clone(),
            write: u.write.clone(),
            from_config: true,
        }
    }

    /// `SHOW GRANTS`: per database (sorted), what the user may do there.
    fn grants(&self) -> Vec<(String, Privilege)> {
        let mut dbs: Vec<&String> = self.read.iter().chain(&self.write).collect();
        dbs.sort();
        dbs.dedup();
        dbs.into_iter()
            .map(|db| {
                let p = match (self.read.contains(db), self.write.contains(db)) {
                    (true, true) => Privilege::All,
                    (true, false) => Privilege::Read,
                    (false, true) => Privilege::Write,
                    (false, false) => Privilege::None,
                };
                (db.clone(), p)
            })
            .collect()
    }
}

/// Who is making a request; inserted into request extensions by [`require_auth`].
#[derive(Debug, Clone)]
pub enum Identity {
    /// Auth is disabled: everything but SQL writes is allowed (SQL reads every
    /// database, read-only; see `sql::sql_access`).
    Anonymous,
    /// Auth is on and no user exists yet: only `/query` answers, and only a query whose
    /// first statement creates an admin (InfluxDB 1.x's way to start). Such a query runs as
    /// that admin would.
    Bootstrap,
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
            Identity::Bootstrap => false,
            Identity::User(u) => u.admin || Self::allowed(&u.read, db),
        }
    }
    /// May write `db`.
    pub fn can_write(&self, db: &str) -> bool {
        match self {
            Identity::Anonymous => true,
            Identity::Bootstrap => false,
            Identity::User(u) => u.admin || Self::allowed(&u.write, db),
        }
    }
    /// May create and drop databases and manage users (anonymous may, when auth is off, so
    /// Telegraf's `CREATE DATABASE` works out of the box and users can be created before
    /// auth is turned on, as in InfluxDB 1.x).
    pub fn can_manage_databases(&self) -> bool {
        match self {
            Identity::Anonymous => true,
            Identity::Bootstrap => false,
            Identity::User(u) => u.admin,
        }
    }
    /// May run SQL that is not read-only: authenticated admins only.
    pub fn can_write_sql(&self) -> bool {
        matches!(self, Identity::User(u) if u.admin)
    }
    /// An admin, or the creator of the first admin (its query was authorized as such).
    pub fn is_admin(&self) -> bool {
        matches!(self, Identity::Bootstrap) || matches!(self, Identity::User(u) if u.admin)
    }
    /// The user's name, for logs.
    pub fn name(&self) -> &str {
        match self {
            Identity::Anonymous => "anonymous",
            Identity::Bootstrap => "",
            Identity::User(u) => &u.name,
        }
    }
}

/// Why a user statement failed: InfluxDB 1.x's texts where it has the case.
#[derive(Debug, thiserror::Error)]
pub enum UserError {
    /// No such user.
    #[error("user not found")]
    NotFound,
    /// `CREATE USER` of an existing name with another password or admin flag.
    #[error("user already exists")]
    Exists,
    /// `CREATE USER ""`.
    #[error("username required")]
    NameRequired,
    /// `GRANT`/`REVOKE` on a database that does not exist.
    #[error("database not found: {0}")]
    DatabaseNotFound(String),
    /// The user is defined in the config file.
    #[error("user {0:?} is defined in the configuration file ([[auth.users]]): change it there")]
    FromConfig(String),
    /// The change would leave users and no admin to manage them (InfluxDB 1.x allows it
    /// and then refuses every request).
    #[error("{0:?} is the last admin user: make another user admin first")]
    LastAdmin(String),
    /// bcrypt reads only a password's first 72 bytes: a longer one would match any
    /// password sharing them, so it is refused.
    #[error("password must be at most 72 bytes")]
    PasswordTooLong,
    /// A first admin was being created while another one was.
    #[error("error authorizing query: create admin user first or disable authentication")]
    NotFirst,
    /// A backup's users are not what chingest writes.
    #[error("{0}")]
    Invalid(String),
    /// The users file could not be written.
    #[error(transparent)]
    File(#[from] UsersFileError),
}

/// Checks credentials against the configured and the InfluxQL users.
#[derive(Debug)]
pub struct Authenticator {
    enabled: bool,
    metrics_require_auth: bool,
    /// `[[auth.users]]`, in config order.
    configured: Vec<Arc<User>>,
    directory: Directory,
    /// The directory's users as [`User`]s, rebuilt at each change.
    stored: RwLock<Arc<HashMap<String, Arc<User>>>>,
    verified: secret::VerifiedCache,
    slow_checks: Semaphore,
}

impl Default for Authenticator {
    fn default() -> Authenticator {
        Authenticator::new(&AuthConfig::default())
    }
}

impl Authenticator {
    /// Builds from `[auth]` (already validated: unparsable hashes are skipped) with no
    /// durable InfluxQL users (handler tests).
    pub fn new(config: &AuthConfig) -> Authenticator {
        Authenticator::with_directory(config, Directory::in_memory())
    }

    /// Builds from `[auth]` and the InfluxQL users kept in `users_file`.
    pub fn open(
        config: &AuthConfig,
        users_file: &std::path::Path,
    ) -> Result<Authenticator, UsersFileError> {
        Ok(Authenticator::with_directory(
            config,
            Directory::open(users_file)?,
        ))
    }

    fn with_directory(config: &AuthConfig, directory: Directory) -> Authenticator {
        let configured: Vec<Arc<User>> = config
            .users
            .iter()
            .map(|u| Arc::new(User::from_config(u)))
            .collect();
        let a = Authenticator {
            enabled: config.enabled,
            metrics_require_auth: config.metrics_require_auth,
            configured,
            directory,
            stored: RwLock::default(),
            verified: secret::VerifiedCache::default(),
            slow_checks: Semaphore::new(secret::SLOW_CHECKS),
        };
        a.rebuild();
        for u in a.directory.snapshot().iter() {
            if a.configured.iter().any(|c| c.name == u.name) {
                tracing::warn!(
                    user = %u.name,
                    "a user created through InfluxQL has the name of a config file user: the config file's applies"
                );
            }
        }
        a
    }

    fn rebuild(&self) {
        let map = self
            .directory
            .snapshot()
            .iter()
            .map(|u| (u.name.clone(), Arc::new(User::from_stored(u))))
            .collect();
        *self.stored.write() = Arc::new(map);
    }

    /// Whether auth is on.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Auth is on and there is no user at all: only the first admin can be created.
    pub fn awaiting_first_admin(&self) -> bool {
        self.enabled && self.configured.is_empty() && self.directory.snapshot().is_empty()
    }

    fn lookup(&self, name: &str) -> Option<Arc<User>> {
        self.configured
            .iter()
            .find(|u| u.name == name)
            .cloned()
            .or_else(|| self.stored.read().get(name).cloned())
    }

    async fn check_password(&self, user: &str, password: &str) -> Result<Identity, ApiError> {
        // Same answer for an unknown user and a wrong password: no user enumeration.
        let u = self.lookup(user).ok_or(ApiError::AuthFailed)?;
        let ok = match &u.password {
            None => false,
            Some(PasswordHash::Sha256(h)) => h.verify(password),
            Some(hash @ PasswordHash::Bcrypt(stored)) => {
                if self.verified.hit(user, stored, password) {
                    true
                } else {
                    let _permit = self
                        .slow_checks
                        .acquire()
                        .await
                        .map_err(|_| ApiError::AuthFailed)?;
                    let (hash, pw) = (hash.clone(), password.to_string());
                    let ok = tokio::task::spawn_blocking(move || hash.verify_slow(&pw))
                        .await
                        .unwrap_or(false);
                    if ok {
                        self.verified.insert(user, stored, password);
                    }
                    ok
                }
            }
        };
        if ok {
            Ok(Identity::User(u))
        } else {
            Err(ApiError::AuthFailed)
        }
    }

    async fn check_token(&self, token: &str) -> Result<Identity, ApiError> {
        for u in &self.configured {
            if u.tokens.iter().any(|t| t.verify(token)) {
                return Ok(Identity::User(u.clone()));
            }
        }
        if let Some((user, password)) = token.split_once(':') {
            return self.check_password(user, password).await;
        }
        Err(ApiError::AuthFailed)
    }

    /// Authenticates a request from its query string and headers.
    pub async fn authenticate(
        &self,
        query: Option<&str>,
        headers: &axum::http::HeaderMap,
    ) -> Result<Identity, ApiError> {
        if !self.enabled {
            return Ok(Identity::Anonymous);
        }
        if self.awaiting_first_admin() {
            return Ok(Identity::Bootstrap);
        }
        match credentials(query, headers)? {
            Credentials::Password { user, password } => self.check_password(&user, &password).await,
            Credentials::Token(token) => self.check_token(&token).await,
        }
    }
}

enum Credentials {
    Password { user: String, password: String },
    Token(String),
}

/// The credentials of a request, in InfluxDB 1.x's order.
fn credentials(
    query: Option<&str>,
    headers: &axum::http::HeaderMap,
) -> Result<Credentials, ApiError> {
    let params = crate::params::Params::parse(query.unwrap_or(""));
    // Both or neither, as InfluxDB 1.x reads them (`u` alone falls through to the header).
    if let (Some(user), Some(password)) = (params.get_nonempty("u"), params.get_nonempty("p")) {
        return Ok(Credentials::Password {
            user: user.to_string(),
            password: password.to_string(),
        });
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
        Ok(Credentials::Password {
            user: user.to_string(),
            password: password.to_string(),
        })
    } else if scheme.eq_ignore_ascii_case("token") || scheme.eq_ignore_ascii_case("bearer") {
        Ok(Credentials::Token(rest.to_string()))
    } else {
        Err(ApiError::AuthMissing)
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
        auth.authenticate(req.uri().query(), req.headers()).await
    };
    match identity {
        // Until the first admin exists only `/query` may create it.
        Ok(Identity::Bootstrap) if path != "/query" => ApiError::Forbidden(
            UserError::NotFirst
                .to_string()
                .replace("error authorizing query: ", ""),
        )
        .into_response_for(Api::for_path(path)),
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

    #[tokio::test]
    async fn every_credential_form_is_accepted() {
        let a = Authenticator::new(&config());
        let none = HeaderMap::new();
        assert_eq!(
            a.authenticate(Some("u=alice&p=s3cret&db=a"), &none)
                .await
                .unwrap()
                .name(),
            "alice"
        );
        let basic = base64::engine::general_purpose::STANDARD.encode("alice:s3cret");
        assert_eq!(
            a.authenticate(None, &hdr(&format!("Basic {basic}")))
                .await
                .unwrap()
                .name(),
            "alice"
        );
        assert_eq!(
            a.authenticate(None, &hdr("Token tok-alice"))
                .await
                .unwrap()
                .name(),
            "alice"
        );
        assert_eq!(
            a.authenticate(None, &hdr("Token root:rootpw"))
                .await
                .unwrap()
                .name(),
            "root"
        );
    }

    #[tokio::test]
    async fn wrong_and_missing_credentials_are_distinguished() {
        let a = Authenticator::new(&config());
        let none = HeaderMap::new();
        assert!(matches!(
            a.authenticate(None, &none).await,
            Err(ApiError::AuthMissing)
        ));
        assert!(matches!(
            a.authenticate(Some("u=alice&p=x"), &none).await,
            Err(ApiError::AuthFailed)
        ));
        assert!(matches!(
            a.authenticate(Some("u=bob&p=s3cret"), &none).await,
            Err(ApiError::AuthFailed)
        ));
        assert!(matches!(
            a.authenticate(None, &hdr("Token nope")).await,
            Err(ApiError::AuthFailed)
        ));
        assert!(matches!(
            a.authenticate(None, &hdr("Basic !!!")).await,
            Err(ApiError::AuthMissing)
        ));
    }

    #[tokio::test]
    async fn permissions_follow_the_lists() {
        let a = Authenticator::new(&config());
        let alice = a
            .authenticate(Some("u=alice&p=s3cret"), &HeaderMap::new())
            .await
            .unwrap();
        assert!(alice.can_read("a") && !alice.can_read("w"));
        assert!(alice.can_write("w") && !alice.can_write("b"));
        assert!(!alice.can_manage_databases() && !alice.can_write_sql());
        let root = a
            .authenticate(Some("u=root&p=rootpw"), &HeaderMap::new())
            .await
            .unwrap();
        assert!(root.can_read("zzz") && root.can_write("zzz") && root.can_write_sql());
        let off = Authenticator::new(&AuthConfig::default());
        let anon = off.authenticate(None, &HeaderMap::new()).await.unwrap();
        assert!(anon.can_write("x") && anon.can_manage_databases() && !anon.can_write_sql());
    }
}
