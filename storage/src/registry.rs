//! Database lifecycle. The catalog is the registry (its records live in the WAL's
//! metadata store), so `CREATE DATABASE` is durable before it is acknowledged, like a
//! write.
//!
//! `DROP DATABASE` is one durable decision, recorded first and honoured everywhere:
//! 1. Under the commit lock (no write can enter the WAL meanwhile), one metadata write
//!    records the drop (`Record::DatabaseDropped`), deletes the catalog's records of the
//!    database, and puts two markers stamped with the WAL position of the drop (the last
//!    data sequence before it): a *fence* (`st1F`) and a *pending engine drop* (`st1P`).
//!    Then the in-memory catalog forgets the database, and the lock is released: a write
//!    that passed the existence check but commits after this gets 404 (`commit.rs`
//!    re-checks under the lock), so nothing can re-register the database.
//! 2. The flusher discards the database's parts at or below the fence (buffered or still
//!    arriving) and waits out its running inserts; replay after a restart discards them
//!    too (`Resume::dropped`, from the fence), so no unflushed entry resurrects it.
//! 3. The engine's `DROP DATABASE`, the dead letters of the database, then the pending
//!    marker is deleted. A `kill -9` anywhere after step 1 leaves the pending marker, and
//!    start-up ([`Storage::finish_pending_drops`]) finishes steps 2–3; a `CREATE DATABASE`
//!    of the same name finishes them first too. The fence stays until the flushed
//!    watermark has passed it (no entry it covers is left in the WAL).

use parking_lot::{Mutex, RwLock};

use ingest::catalog::Record;

use crate::{Storage, StorageError, Wal};

/// Orders writes against database lifecycle changes.
#[derive(Debug, Default)]
pub(crate) struct Lifecycle {
    /// Held shared by a commit from its existence check to its WAL submit, exclusively by
    /// `CREATE/DROP DATABASE` while they change the registry.
    pub(crate) commits: RwLock<()>,
    /// Serialises drops with quarantine retries and discards (a retry must not insert
    /// into a database being dropped).
    pub(crate) admin: Mutex<()>,
    /// Held by a write from its parse to its WAL submit; drained by `DROP MEASUREMENT`
    /// (`gate.rs`).
    pub(crate) writes: std::sync::Arc<crate::gate::WriteGate>,
}

const FENCE: &[u8] = b"st1F";
const PENDING: &[u8] = b"st1P";

/// A marker key: `kind u32be(len(db)) db` (never a prefix of another database's key).
fn marker(kind: &[u8], db: &str) -> Vec<u8> {
    let mut k = kind.to_vec();
    k.extend_from_slice(&(db.len() as u32).to_be_bytes());
    k.extend_from_slice(db.as_bytes());
    k
}

/// (db, stamped sequence) of every marker of `kind`.
fn markers(wal: &Wal, kind: &[u8]) -> Result<Vec<(String, u64)>, StorageError> {
    let mut out = Vec::new();
    for (k, v) in wal.meta_scan_prefix(kind)? {
        let rest = &k[kind.len()..];
        let (Some(len), Ok(seq)) = (
            rest.get(..4)
                .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize),
            <[u8; 8]>::try_from(v.as_slice()),
        ) else {
            tracing::warn!("unreadable database marker ignored");
            continue;
        };
        let Some(name) = rest.get(4..4 + len) else {
            continue;
        };
        out.push((
            String::from_utf8_lossy(name).into_owned(),
            u64::from_be_bytes(seq),
        ));
    }
    Ok(out)
}

/// The `DROP DATABASE` and `DROP MEASUREMENT` fences still needed by replay (removing
/// those the flushed watermark has passed: no entry they cover is left).
pub(crate) fn fences(wal: &Wal, flushed_seq: u64) -> Result<flush::Fences, StorageError> {
    let mut keep = flush::Fences::default();
    let mut stale = Vec::new();
    for (db, seq) in markers(wal, FENCE)? {
        if seq <= flushed_seq {
            stale.push(marker(FENCE, &db));
        } else {
            keep.raise(flush::DropScope::database(&db), seq);
        }
    }
    if !stale.is_empty() {
        wal.update_meta(Vec::new(), stale)?.wait()?;
    }
    for (scope, seq) in crate::measurement_drop::fences(wal, flushed_seq)? {
        keep.raise(scope, seq);
    }
    Ok(keep)
}

/// Databases whose drop was decided but whose engine drop may not have finished.
pub(crate) fn pending_drops(wal: &Wal) -> Result<Vec<(String, u64)>, StorageError> {
    markers(wal, PENDING)
}

impl Storage {
    pub(crate) fn create(&self, db: &str, retention_secs: Option<u64>) -> Result<(), StorageError> {
        ingest::names::check_database(db)?;
        self.create_unchecked(db, retention_secs)
    }

    /// A database holding a retention policy's data (`__rp_<n>`: a name no user database
    /// can have), otherwise as [`create`](Self::create).
    pub(crate) fn create_policy_database(
        &self,
        db: &str,
        retention_secs: u64,
    ) -> Result<(), StorageError> {
        if !ingest::names::is_policy_database(db) {
            return Err(StorageError::Open {
                what: "creating a retention policy's database",
                message: format!("{db:?} is not a policy database name"),
            });
        }
        self.create_unchecked(db, Some(retention_secs))
    }

    /// Changes how long `db` keeps points: new tables get the new TTL, existing ones are
    /// altered (the engine then deletes what the new TTL expires in its merges), the door
    /// refuses points older than it, and the catalog records it durably.
    pub(crate) fn set_retention(&self, db: &str, retention_secs: u64) -> Result<(), StorageError> {
        let _admin = self.lifecycle.admin.lock();
        self.require(db)?;
        if let Some(f) = self.flusher.lock().as_ref() {
            f.set_retention(db, retention_secs);
        }
        let engine = self.engine()?;
        let quoted = engine::quote_string(db);
        let tables = engine.query_text(&format!(
            "SELECT DISTINCT table FROM system.columns WHERE database = {quoted} AND name = 'time' \
             AND table IN (SELECT name FROM system.tables WHERE database = {quoted} AND engine LIKE '%MergeTree')"
        ))?;
        for table in tables.lines().filter(|t| !t.is_empty()) {
            let table = engine::unescape_tsv(table);
            let target = format!(
                "{}.{}",
                engine::quote_ident(db),
                engine::quote_ident(&table)
            );
            let sql = if retention_secs == 0 {
                format!("ALTER TABLE {target} REMOVE TTL")
            } else {
                format!(
                    "ALTER TABLE {target} MODIFY {}",
                    engine::table::ttl_clause(retention_secs)
                )
            };
            match engine.execute(&sql) {
                Ok(()) => {}
                // REMOVE TTL of a table that has none.
                Err(e) if retention_secs == 0 && e.to_string().contains("BAD_ARGUMENTS") => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.record_database(db, retention_secs)?;
        tracing::info!(db, retention_secs, "retention changed");
        Ok(())
    }

    /// The database and its retention, durably in the catalog, then in memory.
    fn record_database(&self, db: &str, retention_secs: u64) -> Result<(), StorageError> {
        let record = Record::Database {
            name: db.to_string(),
            retention_secs,
        };
        let _commits = self.lifecycle.commits.write();
        self.wal.put_meta(vec![record.encode()])?.wait()?;
        self.catalog.apply(&record);
        Ok(())
    }

    fn create_unchecked(&self, db: &str, retention_secs: Option<u64>) -> Result<(), StorageError> {
        let _admin = self.lifecycle.admin.lock();
        if self.catalog.database_exists(db) {
            return match retention_secs {
                Some(r) if r != self.catalog.retention_secs(db) => {
                    Err(StorageError::RetentionConflict { db: db.to_string() })
                }
                _ => Ok(()),
            };
        }
        // A drop of this name that has not finished must finish first: its
        // engine DROP would otherwise remove the new database's data later.
        if let Some((_, up_to)) = pending_drops(&self.wal)?.into_iter().find(|(d, _)| d == db) {
            self.finish_drop(db, up_to)?;
        }
        let retention_secs = retention_secs.unwrap_or(0);
        self.engine()?.execute(&format!(
            "CREATE DATABASE IF NOT EXISTS {}",
            engine::quote_ident(db)
        ))?;
        // The flusher learns the retention before the database can be written
        // to, so its first table is created with the TTL.
        if let Some(f) = self.flusher.lock().as_ref() {
            f.set_retention(db, retention_secs);
        }
        self.record_database(db, retention_secs)?;
        tracing::info!(db, retention_secs, "database created");
        // Every node learns it from the shards; one that is down gets it at a later
        // refresh (`cluster/catalog.rs`).
        // (A retention policy's database too: every node writes the policy's points.)
        if let Some(cluster) = &self.cluster {
            // Dated: newer than any drop of the name listed before it
            // (`cluster/drop_database.rs`).
            let at = crate::cluster::delete::now_ms();
            crate::cluster::drop_measurement::record_lifecycle(&self.wal, db, at)?;
            if let Err(e) = cluster.create_database(db, at) {
                tracing::warn!(db, error = %e, "database not listed on the cluster yet");
            }
        }
        Ok(())
    }

    pub(crate) fn drop(&self, db: &str) -> Result<(), StorageError> {
        let _admin = self.lifecycle.admin.lock();
        self.drop_admin_held(db)
    }

    /// [`drop`](Self::drop), the admin lock held by the caller.
    pub(crate) fn drop_admin_held(&self, db: &str) -> Result<(), StorageError> {
        self.hot.forget_database(db);
        let up_to_seq = {
            let _commits = self.lifecycle.commits.write();
            if !self.catalog.database_exists(db) {
                return Ok(());
            }
            // The key prefixes of the database's catalog records, without forgetting it
            // yet (a throwaway catalog computes them): memory follows the durable write.
            let prefixes = ingest::Catalog::new(ingest::Limits::default()).drop_database(db);
            let record = Record::DatabaseDropped {
                name: db.to_string(),
            };
            let up_to_seq = self
                .wal
                .update_meta_stamped(
                    vec![record.encode()],
                    prefixes,
                    vec![marker(FENCE, db), marker(PENDING, db)],
                )?
                .wait()?;
            // New writes are refused from here on; the catalog's records of `db` were
            // deleted in the same durable write, so a restart does not resurrect them.
            self.catalog.apply(&record);
            up_to_seq
        };
        tracing::info!(db, up_to_seq, "database drop recorded");
        self.finish_drop(db, up_to_seq)
    }

    /// Steps 2–3 of a drop (idempotent): the flusher forgets the database's entries up to
    /// the fence, the engine drops it, its dead letters go, the pending marker goes.
    pub(crate) fn finish_drop(&self, db: &str, up_to_seq: u64) -> Result<(), StorageError> {
        // Every write accepted before the drop has a sequence ≤ up_to_seq: the
        // flusher discards those and waits out running inserts, so none can
        // re-create the database after the engine drops it.
        if let Some(f) = self.flusher.lock().as_ref() {
            f.drop_database(db, up_to_seq);
        }
        self.engine()?.execute(&format!(
            "DROP DATABASE IF EXISTS {} SYNC",
            engine::quote_ident(db)
        ))?;
        self.drop_dead_letters_of(db, None)?;
        self.wal
            .update_meta(Vec::new(), vec![marker(PENDING, db)])?
            .wait()?;
        tracing::info!(db, up_to_seq, "database dropped");
        Ok(())
    }
}

pub use ingest::names::POLICY_DATABASE_PREFIX;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_key_is_never_a_prefix_of_another_databases() {
        assert!(!marker(FENCE, "ab").starts_with(&marker(FENCE, "a")));
        assert_ne!(marker(FENCE, "a"), marker(PENDING, "a"));
    }
}
