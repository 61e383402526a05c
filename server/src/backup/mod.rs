//! `chingest backup` and `chingest restore`: a portable, logical backup through the HTTP API
//! of a running server, as InfluxDB's `influxd backup -portable` / `restore -portable` are
//! used (no access to the server's files needed, and the result can be restored into any
//! chingest, or its data into InfluxDB 1.x with `/write`).
//!
//! A backup is a directory: `manifest.json` (each database's retention policies with their
//! durations and default, its continuous queries, and the data files with the SHA-256 of
//! each) and, per retention policy and measurement, a gzipped line-protocol file of every
//! point (`data/<n>.lp.gz`, nanosecond times; the points as reads answer them: a point
//! written twice is one point). With `--key-file` the manifest is signed (`manifest.sig`,
//! HMAC-SHA-256, [`sign`]): since it holds every file's digest, the signature covers the
//! whole backup. Data is read page by page with InfluxQL (`ORDER BY time LIMIT n`, the next
//! page from the last page's last time), so no answer passes the server's `[sql]
//! max_result_rows`; each page is consistent, the backup as a whole is not a snapshot: each
//! measurement is read up to its last time when its export starts, so every point
//! acknowledged before the backup began is in it, points written meanwhile may or may not
//! be, and a source written to all the time still ends. Only what any InfluxDB 1.x answers
//! is used, so a backup of an InfluxDB 1.x server restores into chingest: the way to move
//! over. With an admin's credentials a chingest server's InfluxQL users are in it too
//! (`users.json`, mode 0600: bcrypt hashes, admin flags, privileges; `GET /api/v1/users`).
//!
//! Restore runs as an admin, so it trusts nothing in the backup (issue #41): [`verify`]
//! checks the whole backup before anything is sent — the signature when a key is given,
//! every file confined to the backup directory and equal to its digest, every continuous
//! query parsed as one `CREATE CONTINUOUS QUERY` of its own database, every duration parsed
//! as a duration — and restore sends only statements rendered anew from those parsed,
//! typed values. It creates the databases, policies and continuous queries and writes the
//! points through `/write` in bodies of at most [`BODY_BYTES`] with the policy named (`rp=`):
//! writing a backup twice leaves the same points. It is all or nothing: a failure (a write
//! refused, the server gone) undoes what it made (databases it created, policies and
//! continuous queries it added, settings it changed; points written into a database that
//! existed before stay). Users are restored only when asked (`--users`), admins only with
//! `--admins` too, and only names the target does not have (`POST /api/v1/users`).

mod export;
mod import;
pub mod lp;
pub mod sign;
mod verify;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use export::{backup, BackupSummary};
pub use import::{restore, RestoreOptions, RestoreSummary};

/// Manifest format version: 2 lists every file's SHA-256 (version 1, without them, is
/// refused: nothing would tell its files from forged ones).
pub const VERSION: u32 = 2;

/// Largest `/write` body restore sends.
pub const BODY_BYTES: usize = 4 << 20;

/// Where the server is and who asks.
#[derive(Debug, Clone)]
pub struct Target {
    /// `http://host:port`.
    pub url: String,
    /// Credentials (`u`/`p`), when auth is on.
    pub user: Option<(String, String)>,
    /// Only these databases (all when empty).
    pub databases: Vec<String>,
    /// Backup: only points at or after this time (RFC3339).
    pub start: Option<String>,
    /// Backup: only points before this time (RFC3339).
    pub end: Option<String>,
}

/// Why a backup or restore stopped.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// The server could not be reached or answered something else than expected.
    #[error("{0}")]
    Http(String),
    /// The server answered a statement with an error.
    #[error("{statement}: {error}")]
    Statement {
        /// The statement.
        statement: String,
        /// InfluxDB's error text.
        error: String,
    },
    /// Reading or writing the backup's files.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The backup directory holds no manifest this version reads.
    #[error("{0}")]
    Manifest(String),
    /// The backup is refused before anything was changed: a file outside the backup or not
    /// equal to its digest, a statement of another kind than its section holds, a bad or
    /// missing signature.
    #[error("backup refused, nothing restored: {0}")]
    Refused(String),
    /// A restore failed part way and undid what it had made.
    #[error("{error} (restore undone: {undone})")]
    Undone {
        /// What failed.
        error: Box<BackupError>,
        /// What was undone, or what could not be.
        undone: String,
    },
}

/// `manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// [`VERSION`].
    pub version: u32,
    /// The server the backup was taken from (`X-Influxdb-Version`).
    pub server_version: String,
    /// The databases.
    pub databases: Vec<DatabaseBackup>,
    /// The file holding the server's InfluxQL users (`GET /api/v1/users`: bcrypt hashes,
    /// mode 0600), when the server has them and the caller is an admin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<String>,
    /// The SHA-256 of [`Manifest::users`]' file, lowercase hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users_sha256: Option<String>,
}

/// One database of a backup.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DatabaseBackup {
    /// Its name.
    pub name: String,
    /// Its retention policies, as `SHOW RETENTION POLICIES` answered.
    pub policies: Vec<PolicyBackup>,
    /// Its continuous queries: (name, statement).
    pub continuous_queries: Vec<(String, String)>,
    /// Its data files.
    pub files: Vec<DataFile>,
}

/// One retention policy of a backup.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PolicyBackup {
    /// Name.
    pub name: String,
    /// Duration as InfluxDB prints it (`168h0m0s`, `0s` = forever).
    pub duration: String,
    /// Shard group duration as printed.
    pub shard_duration: String,
    /// Whether it is the default.
    pub default: bool,
}

/// One data file: one measurement of one policy.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DataFile {
    /// The retention policy.
    pub policy: String,
    /// The measurement.
    pub measurement: String,
    /// The file, relative to the backup directory.
    pub file: String,
    /// Points in it.
    pub points: u64,
    /// Its SHA-256, lowercase hex.
    pub sha256: String,
}

/// A blocking client of the server's `/query` and `/write`.
pub(crate) struct Client {
    http: reqwest::blocking::Client,
    target: Target,
}

impl Client {
    pub(crate) fn new(target: Target) -> Result<Client, BackupError> {
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(300))
            .build()
            .map_err(|e| BackupError::Http(e.to_string()))?;
        Ok(Client { http, target })
    }

    fn auth(&self, req: reqwest::blocking::RequestBuilder) -> reqwest::blocking::RequestBuilder {
        match &self.target.user {
            Some((u, p)) => req.basic_auth(u, Some(p)),
            None => req,
        }
    }

    /// One statement's result (`results[0]`), times in ns; a statement error is an error.
    pub(crate) fn query(
        &self,
        q: &str,
        db: Option<&str>,
        rp: Option<&str>,
    ) -> Result<Value, BackupError> {
        let mut params = vec![("epoch", "ns")];
        params.extend(db.map(|d| ("db", d)));
        params.extend(rp.map(|r| ("rp", r)));
        let r = self
            .auth(self.http.post(format!("{}/query", self.target.url)))
            .query(&params)
            .form(&[("q", q)])
            .send()
            .map_err(|e| BackupError::Http(format!("{}: {e}", self.target.url)))?;
        let status = r.status();
        let body: Value = r
            .json()
            .map_err(|e| BackupError::Http(format!("{q}: {status}: {e}")))?;
        let result = body["results"][0].clone();
        let error = body["error"].as_str().or(result["error"].as_str());
        if let Some(error) = error {
            return Err(BackupError::Statement {
                statement: q.to_string(),
                error: error.to_string(),
            });
        }
        if !status.is_success() {
            return Err(BackupError::Http(format!("{q}: {status}")));
        }
        Ok(result)
    }

    /// Writes a line-protocol body (ns) to `db`/`rp`: `Err` with the server's text.
    pub(crate) fn write(&self, db: &str, rp: &str, body: Vec<u8>) -> Result<(), String> {
        let r = self
            .auth(self.http.post(format!("{}/write", self.target.url)))
            .query(&[("db", db), ("rp", rp), ("precision", "ns")])
            .body(body)
            .send()
            .map_err(|e| e.to_string())?;
        if r.status().as_u16() == 204 {
            return Ok(());
        }
        let status = r.status();
        Err(format!("{status}: {}", r.text().unwrap_or_default()))
    }

    /// The server's InfluxQL users for a backup (`GET /api/v1/users`): the body, or why
    /// not (an InfluxDB 1.x server has no such route; a caller who is not an admin may not).
    pub(crate) fn users(&self) -> Result<Result<Vec<u8>, String>, BackupError> {
        let r = self
            .auth(self.http.get(format!("{}/api/v1/users", self.target.url)))
            .send()
            .map_err(|e| BackupError::Http(format!("{}: {e}", self.target.url)))?;
        let status = r.status().as_u16();
        let body = r.bytes().map_err(|e| BackupError::Http(e.to_string()))?;
        Ok(match status {
            200 => Ok(body.to_vec()),
            404 => Err("the server keeps no users chingest can back up".into()),
            403 | 401 => Err("only an admin may back up the users".into()),
            s => Err(format!("{s}: {}", String::from_utf8_lossy(&body))),
        })
    }

    /// Adds a backup's users (`POST /api/v1/users`): (added, kept).
    pub(crate) fn restore_users(&self, body: Vec<u8>) -> Result<(u64, u64), BackupError> {
        let r = self
            .auth(self.http.post(format!("{}/api/v1/users", self.target.url)))
            .body(body)
            .send()
            .map_err(|e| BackupError::Http(format!("{}: {e}", self.target.url)))?;
        let status = r.status();
        let text = r.text().unwrap_or_default();
        if !status.is_success() {
            return Err(BackupError::Http(format!(
                "restoring the users: {status}: {text}"
            )));
        }
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| BackupError::Http(format!("restoring the users: {e}: {text}")))?;
        Ok((
            v["added"].as_u64().unwrap_or(0),
            v["kept"].as_u64().unwrap_or(0),
        ))
    }

    /// The server's `X-Influxdb-Version`.
    fn version(&self) -> Result<String, BackupError> {
        let r = self
            .http
            .get(format!("{}/ping", self.target.url))
            .send()
            .map_err(|e| BackupError::Http(format!("{}: {e}", self.target.url)))?;
        Ok(r.headers()
            .get("X-Influxdb-Version")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string())
    }

    fn wanted(&self, db: &str) -> bool {
        self.target.databases.is_empty() || self.target.databases.iter().any(|d| d == db)
    }
}

/// The values of the first series of a statement's result (empty without one).
fn rows(result: &Value) -> Vec<Vec<Value>> {
    result["series"][0]["values"]
        .as_array()
        .map(|rows| rows.iter().filter_map(|r| r.as_array().cloned()).collect())
        .unwrap_or_default()
}

/// Column `i` of each row, as text.
fn column(rows: &[Vec<Value>], i: usize) -> Vec<String> {
    rows.iter()
        .filter_map(|r| r.get(i).and_then(Value::as_str).map(str::to_string))
        .collect()
}
