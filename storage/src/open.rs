//! [`Storage::open`]: engine, WAL, catalog, then the flusher (which first replays what
//! the engine lacks).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::quarantine::{DeadLetters, Quarantine};
use crate::{recovery, registry, Storage, StorageConfig, StorageError, Wal};

impl Storage {
    /// Opens storage under `config.data_dir`: the engine in `chdb/`, the WAL in `wal/`
    /// (recovering it), the catalog from the WAL's metadata records, and the flusher,
    /// which first re-inserts what the WAL holds and the engine lacks. SQL runs with
    /// the default `[sql]` limits and only the "read all" and "read nothing" roles;
    /// see [`Storage::open_with_sql`].
    pub fn open(
        config: &StorageConfig,
        wal: wal::WalConfig,
        flush: flush::FlushConfig,
        limits: ingest::Limits,
    ) -> Result<Arc<Storage>, StorageError> {
        let access = engine::EngineAccess::new([]);
        Storage::open_with_sql(
            config,
            wal,
            flush,
            limits,
            engine::SqlConfig::default(),
            &access,
        )
    }

    /// [`Storage::open`], with the SQL sandbox's limits and the engine roles of
    /// the read scopes users will query with (`engine::access`: roles exist only
    /// if the engine boots with them).
    pub fn open_with_sql(
        config: &StorageConfig,
        wal: wal::WalConfig,
        flush: flush::FlushConfig,
        limits: ingest::Limits,
        sql: engine::SqlConfig,
        access: &engine::EngineAccess,
    ) -> Result<Arc<Storage>, StorageError> {
        std::fs::create_dir_all(&config.data_dir).map_err(|e| StorageError::Open {
            what: "creating the data directory",
            message: format!("{}: {e}", config.data_dir.display()),
        })?;
        crate::repair::move_aside_empty_metadata(&config.engine_dir());
        // The flusher keeps it, reads ask it; the engine's sandbox tells its identity index
        // of admin writes.
        let reads = flush::ReadState::new(sql.last_point_cache_series);
        // The hot store learns of admin writes too (it then serves nothing).
        let hot = Arc::new(crate::hot::HotStore::new([]));
        let admin_writes = Arc::new(crate::hot::AdminWrites {
            identity: reads.admin_writes(),
            hot: hot.clone(),
        });
        let engine = engine::Engine::open_with(
            &engine::EngineConfig {
                data_dir: config.engine_dir(),
                ..flush.engine.clone()
            },
            access,
            sql,
            admin_writes,
        )?;
        let queue_capacity = wal.queue_capacity;
        let (wal, committed, recovery) = open_wal(config, wal)?;
        let catalog = load_catalog(&wal, limits)?;
        // Start-up always succeeds on a data directory an older version wrote: what
        // cannot be tidied or replayed is reported (and quarantined by the flusher),
        // not fatal.
        if let Err(e) = drop_legacy_series_tables(&engine, &catalog) {
            tracing::error!(error = %e, "could not drop a legacy __series table; continuing");
        }
        let (quarantine, dead_lettered) = Quarantine::load(&wal)?;
        let quarantine = Arc::new(quarantine);
        let fences = registry::fences(&wal, recovery.flushed_seq)?;
        let pending = registry::pending_drops(&wal)?;
        let resume = recovery::resume(&recovery, &catalog, fences, dead_lettered);
        let log = recovery::WalWatermark(
            wal.clone(),
            DeadLetters {
                wal: wal.clone(),
                quarantine: quarantine.clone(),
            },
        );
        let cluster = match config.engine {
            crate::config::StorageEngine::Embedded => None,
            crate::config::StorageEngine::Clickhouse => {
                let cluster_config = cluster::ClusterConfig {
                    incarnation: incarnation(&wal)?,
                    ..config.clickhouse.cluster()
                };
                let c =
                    cluster::Cluster::connect(cluster_config).map_err(|e| StorageError::Open {
                        what: "connecting to the ClickHouse cluster ([storage.clickhouse])",
                        message: e.to_string(),
                    })?;
                tracing::info!(
                    shards = config.clickhouse.shards.len(),
                    versions = ?c.versions(),
                    "flushed points go to the ClickHouse cluster"
                );
                // Before replay delivers anything: a table it makes is partitioned for
                // its database's retention (the catalog refresh keeps this up to date).
                for db in catalog.databases() {
                    c.note_retention(&db, catalog.retention_secs(&db));
                }
                Some(Arc::new(c))
            }
        };
        // Before the flusher replays anything: what existed at start is in the
        // engine, so not served by the hot store until refilled (`hot/refill.rs`,
        // started by `configure_hot`).
        hot.existed(catalog.databases().into_iter().flat_map(|db| {
            catalog
                .schema(&db)
                .into_iter()
                .map(move |m| (db.clone(), m.name))
        }));
        if cluster.is_some() {
            // Other nodes may write the same series: nothing here is complete.
            hot.forget_all();
        }
        reads.unflushed().observe(hot.clone());
        let flusher = match &cluster {
            None => flush::Flusher::start(
                engine.clone(),
                reads.clone(),
                flush,
                committed,
                resume,
                Arc::new(log),
            ),
            // The engine is the cluster's client: flushed rows go to the shards.
            Some(cluster) => flush::Flusher::start_to(
                engine.clone(),
                reads.clone(),
                flush,
                committed,
                resume,
                Arc::new(log),
                Arc::new(crate::cluster::destination::ClusterDestination {
                    cluster: cluster.clone(),
                    engine: engine.clone(),
                }),
            ),
        }
        .map_err(|e| StorageError::Open {
            what: "starting the flusher",
            message: e.to_string(),
        })?;
        // Everything the WAL held at start is in the engine, replayed (now
        // readable as unflushed) or set aside: reads need not wait for it.
        reads.unflushed().mark_received(wal.last_seq());
        crate::influxql::register_metrics();
        crate::cluster::catalog::register_metrics();
        let catalog = Arc::new(catalog);
        // Before the first write is taken: another node's databases and field types.
        let cluster_sync = cluster.as_ref().map(|c| {
            crate::cluster::catalog::ClusterSync::start(c.clone(), catalog.clone(), wal.clone())
        });
        let storage = Arc::new(Storage {
            engine: RwLock::new(Some(engine)),
            reads,
            wal,
            catalog,
            ingestor: ingest::Ingestor::default(),
            flusher: Mutex::new(Some(flusher)),
            last_engine_stats: Mutex::new(None),
            queue_capacity: queue_capacity as u64,
            closed: AtomicBool::new(false),
            quarantine,
            lifecycle: registry::Lifecycle::default(),
            wal_lz4: config.wal_compression == crate::WalCompression::Lz4,
            cluster,
            cluster_sync,
            hot,
        });
        if let Some(sync) = &storage.cluster_sync {
            sync.attach(Arc::downgrade(&storage));
        }
        // A DROP DATABASE decided before a crash finishes now (the fence already keeps
        // replay from resurrecting it); a failure is logged and retried at the next
        // start or by a CREATE DATABASE of the same name.
        for (db, up_to) in pending {
            tracing::info!(
                db,
                up_to,
                "finishing a DROP DATABASE interrupted by a crash"
            );
            if let Err(e) = storage.finish_drop(&db, up_to) {
                tracing::error!(db, error = %e, "could not finish DROP DATABASE; will retry");
            }
        }
        // Likewise a DROP MEASUREMENT (bounded by its fence: rows written after it stay).
        if let Err(e) = storage.finish_pending_measurement_drops() {
            tracing::error!(error = %e, "could not finish DROP MEASUREMENT; will retry");
        }
        Ok(storage)
    }
}

type Committed = crossbeam_channel::Receiver<wal::Committed<flush::FlushWrite>>;

/// Opens (and recovers) the WAL. Its channel to the flusher is bounded: a stalled
/// flusher stalls the WAL writer, whose queue then fills and writes are refused with
/// 503/429 instead of growing memory.
fn open_wal(
    config: &StorageConfig,
    mut wal_config: wal::WalConfig,
) -> Result<(Arc<Wal>, Committed, wal::Recovery), StorageError> {
    wal_config.dir = config.wal_dir();
    let (tx, rx) = crossbeam_channel::bounded(wal_config.queue_capacity.max(64));
    let (wal, recovery) = Wal::open(wal_config, tx).map_err(|e| StorageError::Open {
        what: "opening the WAL",
        message: e.to_string(),
    })?;
    Ok((Arc::new(wal), rx, recovery))
}

/// The WAL metadata key of the data directory's incarnation ([`incarnation`]).
const INCARNATION_KEY: &[u8] = b"cluster/incarnation";

/// This data directory's incarnation (`cluster::ClusterConfig::incarnation`), kept in its
/// WAL's metadata, so it goes with the WAL's sequences: made with the WAL (a random
/// 64-bit id in hex); a WAL that took writes before incarnations existed keeps none (its
/// rows on the shards carry the node's name alone, and a retry must find them so).
fn incarnation(wal: &Wal) -> Result<String, StorageError> {
    let failed = |e: wal::WalError| StorageError::Open {
        what: "reading or recording the data directory's incarnation",
        message: e.to_string(),
    };
    if let Some(id) = wal.meta_get(INCARNATION_KEY).map_err(failed)? {
        return Ok(String::from_utf8_lossy(&id).into_owned());
    }
    let id = if wal.last_seq() == 0 {
        new_incarnation()
    } else {
        String::new()
    };
    wal.put_meta(vec![(INCARNATION_KEY.to_vec(), id.clone().into_bytes())])
        .and_then(|ticket| ticket.wait())
        .map_err(failed)?;
    tracing::info!(incarnation = %id, "the data directory's incarnation recorded");
    Ok(id)
}

/// A random 64-bit id in hex: the OS-seeded keys of std's hasher, mixed with the time and
/// the process id (no two directories made apart share one but by a 2^-64 chance).
fn new_incarnation() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

/// The catalog (schema, series, databases) from the WAL's metadata records.
fn load_catalog(wal: &Wal, limits: ingest::Limits) -> Result<ingest::Catalog, StorageError> {
    let records = wal.meta_scan().map_err(|e| StorageError::Open {
        what: "reading WAL metadata",
        message: e.to_string(),
    })?;
    ingest::Catalog::load(
        limits,
        records.iter().map(|(k, v)| (k.as_slice(), v.as_slice())),
    )
    .map_err(|e| StorageError::Open {
        what: "loading the catalog",
        message: e.to_string(),
    })
}

/// Versions before the storage crate kept a `__series` table in every database (the series
/// registry is now the catalog's series records); it collided with a user measurement of that
/// name. It is recognised by lacking `__seq`, which every measurement table has.
fn drop_legacy_series_tables(
    engine: &engine::Engine,
    catalog: &ingest::Catalog,
) -> Result<(), StorageError> {
    for db in catalog.databases() {
        let legacy = engine.query_text(&format!(
            "SELECT count() FROM system.tables WHERE database = {db} AND name = '__series' \
             AND name NOT IN (SELECT table FROM system.columns WHERE database = {db} AND name = '__seq')",
            db = engine::quote_string(&db)
        ))?;
        if legacy.trim() != "0" {
            engine.execute(&format!(
                "DROP TABLE IF EXISTS {}.`__series` SYNC",
                engine::quote_ident(&db)
            ))?;
            tracing::info!(
                db,
                "dropped the legacy __series table (the catalog holds the series)"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &std::path::Path) -> (Wal, Committed) {
        let (tx, rx) = crossbeam_channel::bounded(64);
        let (wal, _) = Wal::open(wal::WalConfig::new(dir), tx).unwrap();
        (wal, rx)
    }

    /// A data directory keeps the incarnation its WAL was made with; another directory
    /// gets another; a WAL that took writes before incarnations existed keeps none.
    #[test]
    fn a_data_directory_keeps_the_incarnation_it_was_made_with() {
        let dir = tempfile::tempdir().unwrap();
        let (wal, rx) = open(dir.path());
        let id = incarnation(&wal).unwrap();
        assert_eq!(id.len(), 16, "{id}");
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        assert_eq!(incarnation(&wal).unwrap(), id);
        wal.shutdown();
        drop((wal, rx));
        let (wal, rx) = open(dir.path());
        assert_eq!(incarnation(&wal).unwrap(), id, "kept across a restart");
        wal.shutdown();
        drop((wal, rx));

        let other = tempfile::tempdir().unwrap();
        let (wal, rx) = open(other.path());
        assert_ne!(incarnation(&wal).unwrap(), id);
        wal.shutdown();
        drop((wal, rx));

        let older = tempfile::tempdir().unwrap();
        let (wal, rx) = open(older.path());
        wal.submit(wal::Entry {
            payload: vec![1],
            points: 1,
            held_bytes: 0,
            meta: Vec::new(),
            attachment: flush::FlushWrite {
                db: "d".into(),
                tables: Vec::new(),
            },
        })
        .unwrap()
        .wait()
        .unwrap();
        assert_eq!(incarnation(&wal).unwrap(), "");
        wal.shutdown();
        drop((wal, rx));
        let (wal, _rx) = open(older.path());
        assert_eq!(incarnation(&wal).unwrap(), "");
    }
}
