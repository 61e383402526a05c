//! `chingest restore`: see the module doc of [`super`]. The backup is verified whole first
//! ([`super::verify`]); then every change is made with its undo noted, so that a failure
//! part way leaves the target as it found it (but for points written into databases that
//! existed before).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead as _, Read};
use std::path::Path;

use influxql::ast::{CqStatement, RpStatement, Statement};
use influxql::quote_ident;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::sign::Key;
use super::verify::{verify, DatabasePlan, FilePlan, Plan, PolicyPlan};
use super::{column, rows, BackupError, Client, Target, BODY_BYTES};

/// How to restore.
#[derive(Debug, Default, Clone)]
pub struct RestoreOptions {
    /// Check the manifest's signature with this key (a backup without one is refused).
    pub key: Option<Key>,
    /// Restore the backup's InfluxQL users (`--users`).
    pub users: bool,
    /// With [`RestoreOptions::users`], its admins too (`--admins`); without, they are left
    /// out.
    pub admins: bool,
}

/// What a restore did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RestoreSummary {
    /// Users added, and those the target had already (kept as they were).
    pub users: Option<(u64, u64)>,
    /// Admins of the backup left out (no `--admins`).
    pub admins_left_out: usize,
    /// Users the backup holds that were not restored (no `--users`).
    pub users_not_restored: bool,
    /// Databases.
    pub databases: usize,
    /// Points sent and acknowledged.
    pub points: u64,
    /// Whether the manifest's signature was checked.
    pub signed: bool,
}

/// Restores the backup in `dir` into the target (its databases, or those named): all of
/// it, or nothing but points written into databases that existed before.
pub fn restore(
    target: Target,
    dir: &Path,
    options: &RestoreOptions,
) -> Result<RestoreSummary, BackupError> {
    let client = Client::new(target)?;
    let plan = verify(dir, |d| client.wanted(d), options.key.as_ref())?;
    // The users' body is prepared (and its admins taken out) before anything changes.
    let users = match (&plan.users, options.users) {
        (Some(path), true) => Some(users_body(path, options.admins)?),
        _ => None,
    };
    let mut summary = RestoreSummary {
        signed: plan.signed,
        users_not_restored: plan.users.is_some() && !options.users,
        admins_left_out: users.as_ref().map_or(0, |(_, left_out)| *left_out),
        ..RestoreSummary::default()
    };
    let mut undo = Undo::default();
    match apply(
        &client,
        &plan,
        users.map(|(body, _)| body),
        &mut undo,
        &mut summary,
    ) {
        Ok(()) => Ok(summary),
        Err(error) => Err(BackupError::Undone {
            error: Box::new(error),
            undone: undo.run(&client),
        }),
    }
}

/// The statements that take back what a restore did, last first.
#[derive(Default)]
struct Undo(Vec<String>);

impl Undo {
    fn push(&mut self, statement: impl ToString) {
        self.0.push(statement.to_string());
    }

    /// Runs them: what was undone, or what could not be.
    fn run(self, client: &Client) -> String {
        if self.0.is_empty() {
            return "nothing had been changed".into();
        }
        let (n, mut failed) = (self.0.len(), Vec::new());
        for statement in self.0.into_iter().rev() {
            if let Err(e) = client.query(&statement, None, None) {
                failed.push(e.to_string());
            }
        }
        if failed.is_empty() {
            format!("{n} change(s) taken back")
        } else {
            format!(
                "{} of {n} change(s) could not be taken back: {}",
                failed.len(),
                failed.join("; ")
            )
        }
    }
}

fn apply(
    client: &Client,
    plan: &Plan,
    users: Option<Vec<u8>>,
    undo: &mut Undo,
    summary: &mut RestoreSummary,
) -> Result<(), BackupError> {
    let existing: BTreeSet<String> = column(&rows(&client.query("SHOW DATABASES", None, None)?), 0)
        .into_iter()
        .collect();
    let cqs = existing_cqs(client)?;
    for db in &plan.databases {
        let existed = existing.contains(&db.name);
        restore_database(client, db, existed, &cqs, undo, summary)?;
    }
    // The users last: their privileges name the databases restored above.
    if let Some(body) = users {
        summary.users = Some(client.restore_users(body)?);
    }
    Ok(())
}

/// The target's continuous queries: (database, name) → statement.
fn existing_cqs(client: &Client) -> Result<BTreeMap<(String, String), String>, BackupError> {
    let shown = client.query("SHOW CONTINUOUS QUERIES", None, None)?;
    let mut out = BTreeMap::new();
    for s in shown["series"].as_array().into_iter().flatten() {
        let db = s["name"].as_str().unwrap_or_default();
        for r in s["values"].as_array().into_iter().flatten() {
            if let (Some(name), Some(q)) = (r[0].as_str(), r[1].as_str()) {
                out.insert((db.to_string(), name.to_string()), q.to_string());
            }
        }
    }
    Ok(out)
}

/// A database's policies as the target has them now.
fn existing_policies(client: &Client, db: &str) -> Result<Vec<PolicyPlan>, BackupError> {
    let shown = client.query(
        &format!("SHOW RETENTION POLICIES ON {}", quote_ident(db)),
        None,
        None,
    )?;
    Ok(rows(&shown)
        .iter()
        .filter_map(|r| {
            let ns = |v: &Value| v.as_str().and_then(|s| influxql::parse_duration(s).ok());
            Some(PolicyPlan {
                name: r.first()?.as_str()?.to_string(),
                duration_secs: (ns(r.get(1)?)? / 1_000_000_000) as u64,
                shard_duration_ns: ns(r.get(2)?).filter(|n| *n > 0),
                default: r.get(4)?.as_bool().unwrap_or(false),
            })
        })
        .collect())
}

fn rp(statement: RpStatement) -> Statement {
    Statement::RetentionPolicy(statement)
}

/// One database: the database, its policies, points and continuous queries.
fn restore_database(
    client: &Client,
    db: &DatabasePlan,
    existed: bool,
    cqs: &BTreeMap<(String, String), String>,
    undo: &mut Undo,
    summary: &mut RestoreSummary,
) -> Result<(), BackupError> {
    let on = db.name.clone();
    if !existed {
        client.query(&format!("CREATE DATABASE {}", quote_ident(&on)), None, None)?;
        // Dropping the database takes its policies, points and continuous queries with it.
        undo.push(format!("DROP DATABASE {}", quote_ident(&on)));
    }
    let before = existing_policies(client, &on)?;
    for p in &db.policies {
        match before.iter().find(|b| b.name == p.name) {
            Some(b) => {
                client.query(
                    &rp(RpStatement::Alter {
                        name: p.name.clone(),
                        on: on.clone(),
                        duration_secs: Some(p.duration_secs),
                        replication: None,
                        shard_duration_ns: p.shard_duration_ns,
                        default: false,
                    })
                    .to_string(),
                    None,
                    None,
                )?;
                if existed {
                    undo.push(rp(RpStatement::Alter {
                        name: b.name.clone(),
                        on: on.clone(),
                        duration_secs: Some(b.duration_secs),
                        replication: None,
                        shard_duration_ns: b.shard_duration_ns,
                        default: false,
                    }));
                }
            }
            None => {
                client.query(
                    &rp(RpStatement::Create {
                        name: p.name.clone(),
                        on: on.clone(),
                        duration_secs: p.duration_secs,
                        replication: 1,
                        shard_duration_ns: p.shard_duration_ns,
                        default: false,
                    })
                    .to_string(),
                    None,
                    None,
                )?;
                if existed {
                    undo.push(rp(RpStatement::Drop {
                        name: p.name.clone(),
                        on: on.clone(),
                    }));
                }
            }
        }
    }
    if let Some(p) = db.policies.iter().find(|p| p.default) {
        let default = |name: &str| {
            rp(RpStatement::Alter {
                name: name.to_string(),
                on: on.clone(),
                duration_secs: None,
                replication: None,
                shard_duration_ns: None,
                default: true,
            })
        };
        client.query(&default(&p.name).to_string(), None, None)?;
        if let Some(was) = before.iter().find(|b| b.default).filter(|_| existed) {
            undo.push(default(&was.name));
        }
    }
    for f in &db.files {
        summary.points += send(client, &on, f)?;
    }
    // A database this restore made has exactly the backup's policies; one that existed
    // keeps its own (dropping one would drop its points).
    let autogen = crate::retention::AUTOGEN;
    if !existed && !db.policies.iter().any(|p| p.name == autogen) {
        client.query(
            &rp(RpStatement::Drop {
                name: autogen.to_string(),
                on: on.clone(),
            })
            .to_string(),
            None,
            None,
        )?;
    }
    for cq in &db.continuous_queries {
        let text = cq.to_string();
        let had = cqs.contains_key(&(on.clone(), cq.name.clone()));
        client.query(&text, None, None)?;
        if existed && !had {
            undo.push(Statement::ContinuousQuery(CqStatement::Drop {
                name: cq.name.clone(),
                on: on.clone(),
            }));
        }
    }
    summary.databases += 1;
    Ok(())
}

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// Writes one data file in bodies of at most [`BODY_BYTES`]: the points acknowledged. A
/// write refused is an error (the restore is undone); so is a file that changed since it
/// was verified (its bytes are hashed again as they are sent).
fn send(client: &Client, db: &str, f: &FilePlan) -> Result<u64, BackupError> {
    let path = &f.path;
    let io = |source| BackupError::Io {
        path: path.clone(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut reader = std::io::BufReader::new(flate2::read::GzDecoder::new(Hashing {
        inner: file,
        hasher: Sha256::new(),
    }));
    let mut points = 0u64;
    let mut body = Vec::with_capacity(BODY_BYTES);
    let mut lines = 0u64;
    let mut flush = |body: &mut Vec<u8>, lines: &mut u64| -> Result<(), BackupError> {
        if body.is_empty() {
            return Ok(());
        }
        client
            .write(db, &f.policy, std::mem::take(body))
            .map_err(|error| BackupError::Statement {
                statement: format!("writing {} into {db}/{}", path.display(), f.policy),
                error,
            })?;
        points += *lines;
        *lines = 0;
        Ok(())
    };
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(io)?;
        if n == 0 {
            break;
        }
        if body.len() + line.len() > BODY_BYTES {
            flush(&mut body, &mut lines)?;
        }
        body.extend_from_slice(&line);
        lines += 1;
    }
    // The rest of the file past the gzip stream counts too.
    let mut inner = reader.into_inner().into_inner();
    std::io::copy(&mut inner, &mut std::io::sink()).map_err(io)?;
    let got = super::sign::hex(&inner.hasher.finalize());
    if !got.eq_ignore_ascii_case(&f.sha256) {
        return Err(BackupError::Refused(format!(
            "{} changed while it was restored (SHA-256 {got}, the manifest says {})",
            path.display(),
            f.sha256
        )));
    }
    flush(&mut body, &mut lines)?;
    Ok(points)
}

/// The users file's body for `POST /api/v1/users`, without its admins unless `admins`: the
/// body and how many admins were left out.
fn users_body(path: &Path, admins: bool) -> Result<(Vec<u8>, usize), BackupError> {
    let bytes = std::fs::read(path).map_err(|source| BackupError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut v: Value = serde_json::from_slice(&bytes).map_err(|e| {
        BackupError::Refused(format!("{}: not a users backup: {e}", path.display()))
    })?;
    let Some(users) = v["users"].as_array_mut() else {
        return Err(BackupError::Refused(format!(
            "{}: not a users backup (no \"users\" list)",
            path.display()
        )));
    };
    let before = users.len();
    if !admins {
        users.retain(|u| u["admin"] != Value::Bool(true));
    }
    let left_out = before - users.len();
    Ok((serde_json::to_vec(&v).expect("JSON serialises"), left_out))
}
