//! Retention policies: several per database, each its own data, as in InfluxDB 1.x.
//!
//! A database starts with one policy, `autogen`, whose data is the database itself (its
//! tables, its retention). Each policy created besides it gets a database of its own in
//! storage, `__rp_<n>` (no user database can start with `__`; `n` a hash of the database's
//! and the policy's names, `ingest::names::policy_database`, so every node of a ClickHouse
//! cluster names it alike), whose retention is the
//! policy's duration: the same measurement in two policies is two tables and two series
//! sets, each table's TTL is its policy's, and the door refuses points older than it.
//! Which policies a database has, their storage databases and the default are kept here,
//! in `<data_dir>/retention_policies.json` ([`crate::durable::replace`]); a database nobody
//! gave a policy has no entry and reads and writes exactly as before.
//!
//! Crash safety: a policy's storage database is created before the file names it and
//! dropped after the file forgot it, so a crash leaves at most an unreferenced `__rp_<n>`
//! (invisible: only a policy's name reaches it), never a policy without its data.
//!
//! On a ClickHouse cluster every node keeps this file too, in step with the others: each
//! change lists the database's whole entry, dated, on the shards (`__chingest.policies`),
//! and every node takes the newest listed ([`Policies::sync`]: before each InfluxQL
//! statement, before a write names a policy it does not know, and every 2 s). The storage
//! databases are the cluster's databases (created, retained and dropped there as any).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use storage::Store;

use crate::error::ApiError;

const VERSION: u32 = 1;

/// The policy every database starts with.
pub const AUTOGEN: &str = "autogen";

/// One policy.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Policy {
    /// Its name.
    pub name: String,
    /// The storage database holding its data.
    pub storage: String,
    /// `SHARD DURATION`, ns, when given.
    pub shard_duration_ns: Option<i64>,
}

/// A database's policies, in creation order, and the default's name (which InfluxDB
/// keeps after that policy is dropped: reads and writes without a policy then fail).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DatabasePolicies {
    /// The default policy's name.
    pub default: String,
    /// The policies.
    pub policies: Vec<Policy>,
    /// When they last changed (ms since the epoch; 0: before this was kept). On a
    /// ClickHouse cluster the newest listing wins ([`Policies::sync`]).
    #[serde(default)]
    pub at: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct PolicyFile {
    version: u32,
    /// The number of the next policy database (releases before hashed names; kept so
    /// that a file goes back and forth between them).
    next: u64,
    databases: BTreeMap<String, DatabasePolicies>,
}

/// A row of `SHOW RETENTION POLICIES`.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyInfo {
    /// Name.
    pub name: String,
    /// Retention, seconds (0 = forever).
    pub duration_secs: u64,
    /// Shard group duration, seconds.
    pub shard_secs: u64,
    /// Whether it is the default.
    pub default: bool,
}

/// The retention policies of every database.
#[derive(Debug, Default)]
pub struct Policies {
    /// `None`: in memory only (handler tests).
    path: Option<PathBuf>,
    current: RwLock<Arc<PolicyFile>>,
    writer: Mutex<()>,
}

/// What a statement asks of a policy.
#[derive(Debug, Clone, Copy, Default)]
pub struct Change {
    /// `DURATION`, seconds.
    pub duration_secs: Option<u64>,
    /// `SHARD DURATION`, ns.
    pub shard_duration_ns: Option<i64>,
    /// `DEFAULT`.
    pub default: bool,
}

fn not_found(rp: &str) -> ApiError {
    ApiError::Query(format!("retention policy not found: {rp}"))
}

/// InfluxDB's shard group duration for a retention.
pub fn shard_group_secs(retention: u64) -> u64 {
    match retention {
        0 => 7 * 86_400,
        r if r < 2 * 86_400 => 3_600,
        r if r <= 180 * 86_400 => 86_400,
        _ => 7 * 86_400,
    }
}

impl Policies {
    /// Loads `path` (no file: no database has policies of its own yet).
    pub fn open(path: &Path) -> Result<Policies, String> {
        let file = match std::fs::read(path) {
            Ok(bytes) => {
                let f: PolicyFile = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("retention policies file {}: {e}", path.display()))?;
                if f.version != VERSION {
                    return Err(format!(
                        "retention policies file {}: unknown version {}",
                        path.display(),
                        f.version
                    ));
                }
                f
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => PolicyFile {
                version: VERSION,
                next: 1,
                databases: BTreeMap::new(),
            },
            Err(e) => return Err(format!("retention policies file {}: {e}", path.display())),
        };
        Ok(Policies {
            path: Some(path.to_path_buf()),
            current: RwLock::new(Arc::new(file)),
            writer: Mutex::new(()),
        })
    }

    fn snapshot(&self) -> Arc<PolicyFile> {
        self.current.read().clone()
    }

    /// The storage database of `db`'s policy `rp` (`None`: the default), or the name of the
    /// policy that does not exist. The database is assumed to exist (callers check it first,
    /// for InfluxDB's order of errors).
    pub fn resolve(&self, db: &str, rp: Option<&str>) -> Result<String, String> {
        let rp = rp.filter(|r| !r.is_empty());
        let file = self.snapshot();
        let Some(d) = file.databases.get(db) else {
            return match rp {
                None | Some(AUTOGEN) => Ok(db.to_string()),
                Some(other) => Err(other.to_string()),
            };
        };
        let name = rp.unwrap_or(&d.default);
        d.policies
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.storage.clone())
            .ok_or_else(|| name.to_string())
    }

    /// Every storage database of `db` (the database itself first).
    pub fn storage_databases(&self, db: &str) -> Vec<String> {
        let mut out = vec![db.to_string()];
        if let Some(d) = self.snapshot().databases.get(db) {
            out.extend(
                d.policies
                    .iter()
                    .filter(|p| p.storage != db)
                    .map(|p| p.storage.clone()),
            );
        }
        out
    }

    /// `SHOW RETENTION POLICIES ON db` (the database exists).
    pub fn show<S: Store>(&self, store: &S, db: &str) -> Vec<PolicyInfo> {
        let info = |name: &str, storage: &str, shard_ns: Option<i64>, default: bool| {
            let duration_secs = store.retention_secs(storage);
            PolicyInfo {
                name: name.to_string(),
                duration_secs,
                shard_secs: shard_ns.map_or(shard_group_secs(duration_secs), |ns| {
                    (ns / 1_000_000_000) as u64
                }),
                default,
            }
        };
        match self.snapshot().databases.get(db) {
            None => vec![info(AUTOGEN, db, None, true)],
            Some(d) => d
                .policies
                .iter()
                .map(|p| {
                    info(
                        &p.name,
                        &p.storage,
                        p.shard_duration_ns,
                        p.name == d.default,
                    )
                })
                .collect(),
        }
    }

    /// `CREATE RETENTION POLICY` (the database exists): the same policy again is no error,
    /// another duration under the name is `retention policy already exists` (InfluxDB).
    pub fn create<S: Store>(
        &self,
        store: &S,
        db: &str,
        name: &str,
        duration_secs: u64,
        change: Change,
    ) -> Result<(), ApiError> {
        self.edit(store, db, |file| {
            let d = file.databases.get_mut(db).expect("edit makes the entry");
            if let Some(p) = d.policies.iter().find(|p| p.name == name) {
                if store.retention_secs(&p.storage) != duration_secs {
                    return Err(ApiError::Query("retention policy already exists".into()));
                }
            } else {
                let storage = if name == AUTOGEN {
                    // Created again after a drop: the database itself holds it.
                    store.set_retention(db, duration_secs)?;
                    db.to_string()
                } else {
                    // The same name on every node of a cluster.
                    let storage = ingest::names::policy_database(db, name);
                    store.create_policy_database(&storage, duration_secs)?;
                    storage
                };
                d.policies.push(Policy {
                    name: name.to_string(),
                    storage,
                    shard_duration_ns: change.shard_duration_ns,
                });
            }
            if change.default {
                d.default = name.to_string();
            }
            Ok(())
        })
    }

    /// `ALTER RETENTION POLICY`: a new duration applies to the policy's existing data too.
    pub fn alter<S: Store>(
        &self,
        store: &S,
        db: &str,
        name: &str,
        change: Change,
    ) -> Result<(), ApiError> {
        self.edit(store, db, |file| {
            let d = file.databases.get_mut(db).expect("edit makes the entry");
            let p = d
                .policies
                .iter_mut()
                .find(|p| p.name == name)
                .ok_or_else(|| not_found(name))?;
            if let Some(secs) = change.duration_secs {
                store.set_retention(&p.storage, secs)?;
            }
            if change.shard_duration_ns.is_some() {
                p.shard_duration_ns = change.shard_duration_ns;
            }
            if change.default {
                d.default = name.to_string();
            }
            Ok(())
        })
    }

    /// `DROP RETENTION POLICY` (a policy that does not exist is no error, as in 1.6): its
    /// data goes, after the file forgot it; the default keeps its name if it was this one
    /// (InfluxDB's behaviour).
    pub fn drop_policy<S: Store>(&self, store: &S, db: &str, name: &str) -> Result<(), ApiError> {
        let gone = self.edit(store, db, |file| {
            let d = file.databases.get_mut(db).expect("edit makes the entry");
            Ok(d.policies
                .iter()
                .position(|p| p.name == name)
                .map(|i| d.policies.remove(i)))
        })?;
        match gone {
            None => {}
            // `autogen`: the database stays, its measurements go.
            Some(p) if p.storage == db => {
                for m in store.schema(db)? {
                    store.drop_measurement(db, &m.name)?;
                }
            }
            Some(p) => store.drop_database(&p.storage)?,
        }
        Ok(())
    }

    /// One change of `db`'s policies (its entry made first if it had none), saved durably
    /// once `f` succeeded, then listed for the other nodes of a cluster; changes are
    /// serialised.
    fn edit<S: Store, T>(
        &self,
        store: &S,
        db: &str,
        f: impl FnOnce(&mut PolicyFile) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let _one_writer = self.writer.lock();
        let mut file = (*self.snapshot()).clone();
        file.databases
            .entry(db.to_string())
            .or_insert_with(|| first_entry(db));
        let out = f(&mut file)?;
        let at = now_ms();
        let d = file.databases.get_mut(db).expect("edit makes the entry");
        d.at = at;
        let doc = serde_json::to_string(d).expect("policies serialise");
        self.save(file)?;
        publish(store, db, &doc, at);
        Ok(out)
    }

    /// `DROP DATABASE`: every policy's data, and the database's entry (on a cluster, every
    /// node's).
    pub fn drop_database<S: Store>(&self, store: &S, db: &str) -> Result<(), ApiError> {
        let _one_writer = self.writer.lock();
        let mut file = (*self.snapshot()).clone();
        let Some(d) = file.databases.remove(db) else {
            return Ok(());
        };
        self.save(file)?;
        publish(store, db, "", now_ms());
        for p in d.policies.iter().filter(|p| p.storage != db) {
            store.drop_database(&p.storage)?;
        }
        Ok(())
    }

    /// With the points on a ClickHouse cluster: takes every database's policies the
    /// cluster lists newer than this node's (another node changed them; `""`: dropped with
    /// the database), and lists again those of this node's that the cluster lacks or has
    /// older (a shard was down when they changed). The newest change wins: two nodes
    /// changing one database's policies at once keep the later.
    pub fn sync<S: Store>(&self, store: &S) {
        let Some(theirs) = store.cluster_policies() else {
            return;
        };
        let _one_writer = self.writer.lock();
        let mut file = (*self.snapshot()).clone();
        let mut changed = false;
        for (db, (doc, at)) in &theirs {
            if file.databases.get(db).map_or(0, |d| d.at) >= *at {
                continue;
            }
            if doc.is_empty() {
                changed |= file.databases.remove(db).is_some();
                continue;
            }
            match serde_json::from_str::<DatabasePolicies>(doc) {
                Ok(mut d) => {
                    d.at = *at;
                    tracing::info!(db, "retention policies learned from the ClickHouse cluster");
                    file.databases.insert(db.clone(), d);
                    changed = true;
                }
                Err(e) => {
                    tracing::warn!(db, error = %e, "unreadable retention policies on the cluster")
                }
            }
        }
        let behind: Vec<(String, String, u64)> = file
            .databases
            .iter()
            .filter(|(db, d)| d.at > 0 && theirs.get(*db).is_none_or(|(_, t)| *t < d.at))
            .map(|(db, d)| {
                let doc = serde_json::to_string(d).expect("policies serialise");
                (db.clone(), doc, d.at)
            })
            .collect();
        if changed {
            if let Err(e) = self.save(file) {
                tracing::warn!(error = %e, "cannot save the retention policies learned");
            }
        }
        for (db, doc, at) in behind {
            publish(store, &db, &doc, at);
        }
    }

    fn save(&self, file: PolicyFile) -> Result<(), ApiError> {
        if let Some(path) = &self.path {
            let body = serde_json::to_vec_pretty(&file).expect("policies serialise");
            crate::durable::replace(path, &body).map_err(|e| {
                tracing::error!("retention policies file {}: {e}", path.display());
                ApiError::Internal(format!("retention policies file: {e}"))
            })?;
        }
        *self.current.write() = Arc::new(file);
        Ok(())
    }
}

/// A database's entry when it first gets a policy of its own: `autogen` (the database's
/// own data), the default.
fn first_entry(db: &str) -> DatabasePolicies {
    DatabasePolicies {
        default: AUTOGEN.to_string(),
        policies: vec![Policy {
            name: AUTOGEN.to_string(),
            storage: db.to_string(),
            shard_duration_ns: None,
        }],
        at: 0,
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Lists `db`'s policies for the other nodes of a cluster; a failure is logged, and
/// [`Policies::sync`] lists them again later.
fn publish<S: Store>(store: &S, db: &str, doc: &str, at: u64) {
    if let Err(e) = store.publish_policies(db, doc, at) {
        tracing::warn!(db, error = %e, "retention policies not listed on the cluster yet");
    }
}

/// Whether `db` is a policy's storage database (hidden from `SHOW DATABASES`).
pub fn is_policy_database(db: &str) -> bool {
    ingest::names::is_policy_database(db)
}
