//! # storage: chingest's storage engine, with no HTTP in it
//!
//! Brief overview:
//! - [`Storage::open`] ([`open`]) opens the engine, the WAL (recovering it), the catalog
//!   (schema, series and the database registry, rebuilt from the WAL's metadata records)
//!   and the flusher, which first re-inserts what the WAL holds and the engine lacks
//!   ([`recovery`]).
//! - A write is [`Store::prepare`]d (parse, series, schema, Arrow, WAL encoding: CPU only)
//!   and then [`Store::commit`]ted ([`commit`]): one WAL entry, acknowledged once durable,
//!   handed to the flusher in sequence order.
//! - Database lifecycle ([`registry`]): create (with retention), drop, existence.
//! - What `SHOW` statements, `/api/v1/sql` and `/metrics` read ([`read`]).
//! - InfluxQL `SELECT` ([`influxql`]): planned against the catalog, run as engine SQL in
//!   the SQL sandbox with the caller's access, over merged points (point identity).
//! - [`Store::shutdown`] ([`shutdown`]): commit the WAL, flush everything, close the engine;
//!   bounded by a grace period whatever the flusher's state.
//! - Quarantine ([`quarantine`]): parts the engine refuses deterministically become durable
//!   dead letters (the WAL moves on, every other table keeps flowing), listed, retried or
//!   discarded by an operator.
//!
//! The HTTP server sees storage through the [`Store`] trait (so its handlers are tested
//! with an in-memory double); [`StorageError`] is the one error type of the seam.
//!
//! Layout under the data directory: `wal/` (RocksDB) and `chdb/` (the engine).
#![deny(missing_docs)]
#![deny(unsafe_code)]

mod cluster;
mod commit;
pub mod config;
mod dead_letter_delete;
pub mod error;
mod gate;
mod health;
mod hot;
pub mod influxql;
mod measurement_drop;
mod open;
mod quarantine;
mod read;
mod recovery;
mod registry;
mod repair;
mod series_delete;
mod shutdown;
pub mod store;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

pub use ::cluster::ClusterError;
pub use config::{StorageConfig, WalCompression};
pub use error::StorageError;
pub use hot::{Hold, HotConfig};
pub use influxql::{InfluxqlError, InfluxqlRequest, StatementResult};
pub use registry::POLICY_DATABASE_PREFIX;
pub use store::{
    BoxFuture, EngineStats, Prepared, QuarantineAction, QuarantinedTable, Rejection, SqlFormat,
    StorageStats, Store, WriteRequest,
};
pub use store::{ReadScope, SqlAccess, SqlCancel, SqlConfig, SqlError, SqlRequest, SqlSummary};

/// The WAL of this storage: entries carry their flusher-ready batches.
type Wal = wal::Wal<flush::FlushWrite>;

/// The storage engine of this process: engine, WAL, catalog and flusher.
pub struct Storage {
    engine: RwLock<Option<engine::Engine>>,
    /// What reads need from the flusher: the identity index, the unflushed rows.
    reads: flush::ReadState,
    wal: Arc<Wal>,
    catalog: Arc<ingest::Catalog>,
    ingestor: ingest::Ingestor,
    flusher: Mutex<Option<flush::Flusher>>,
    /// The engine's stats as last read, served when the engine is busy.
    last_engine_stats: Mutex<Option<EngineStats>>,
    queue_capacity: u64,
    closed: AtomicBool,
    /// Dead letters per table (`quarantine.rs`).
    quarantine: Arc<quarantine::Quarantine>,
    /// Orders commits against `DROP/CREATE DATABASE` (`registry.rs`).
    lifecycle: registry::Lifecycle,
    /// `[storage] wal_compression = "lz4"`.
    wal_lz4: bool,
    /// `[storage] engine = "clickhouse"`: flushed points go to this cluster's shards.
    cluster: Option<Arc<::cluster::Cluster>>,
    /// Keeps the catalog in step with the cluster's (`cluster/catalog.rs`).
    cluster_sync: Option<Arc<cluster::catalog::ClusterSync>>,
    /// The recent points of every series, for small reads (`hot/`, issue #44).
    hot: Arc<hot::HotStore>,
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storage")
            .field("wal", &self.wal.config().dir)
            .finish_non_exhaustive()
    }
}

impl Storage {
    /// Applies `[hot]` (call before the first write) and, when it is on,
    /// starts its applier and its refill thread (`hot/refiller.rs`: with
    /// `hold = "all"` it first refills the measurements that existed at
    /// start). With `[storage] engine = "clickhouse"` the hot store stays off
    /// whatever it says.
    pub fn configure_hot(self: &Arc<Self>, config: HotConfig) -> Result<(), StorageError> {
        let config = HotConfig {
            enabled: config.enabled && self.cluster.is_none(),
            ..config
        };
        self.hot
            .configure(config)
            .map_err(|message| StorageError::Open {
                what: "applying [hot]",
                message,
            })?;
        self.hot.start();
        self.start_hot_refill();
        Ok(())
    }

    /// The engine, unless storage is shut down.
    fn engine(&self) -> Result<engine::Engine, StorageError> {
        // Whatever needs the engine blocks (a statement, the last points'
        // build): refused in a statement run inline (`influxql/inline.rs`),
        // which runs again on a blocking thread.
        if influxql::inline::refuse() {
            return Err(StorageError::ShuttingDown);
        }
        self.engine.read().clone().ok_or(StorageError::ShuttingDown)
    }
}

pub use commit::EncodedWrite;

impl Store for Storage {
    type Write = EncodedWrite;

    fn prepare(&self, req: WriteRequest<'_>) -> Result<Prepared<EncodedWrite>, StorageError> {
        self.prepare_write(req)
    }
    fn commit(&self, prepared: Prepared<EncodedWrite>) -> BoxFuture<Result<(), StorageError>> {
        self.commit_write(prepared)
    }
    fn database_exists(&self, db: &str) -> bool {
        self.catalog.database_exists(db)
    }
    fn refresh_catalog(&self) {
        if let Some(sync) = &self.cluster_sync {
            sync.refresh_if_older(cluster::catalog::STATEMENT_AGE);
        }
    }
    fn create_database(&self, db: &str, retention_secs: Option<u64>) -> Result<(), StorageError> {
        if let Some(cluster) = &self.cluster {
            if !self.catalog.database_exists(db) {
                self.check_no_unfinished_drop(cluster, db)?;
            }
        }
        match (&self.cluster, retention_secs) {
            // Listed on the shards before the catalog has it, as `ALTER RETENTION POLICY`.
            (Some(cluster), Some(secs)) if secs > 0 => {
                ingest::names::check_database(db)?;
                if self.catalog.database_exists(db) {
                    return self.create(db, retention_secs);
                }
                cluster.set_retention(db, secs)?;
                self.create(db, retention_secs)
            }
            _ => self.create(db, retention_secs),
        }
    }
    fn retention_secs(&self, db: &str) -> u64 {
        self.catalog.retention_secs(db)
    }
    fn set_retention(&self, db: &str, retention_secs: u64) -> Result<(), StorageError> {
        match &self.cluster {
            Some(cluster) => self.set_cluster_retention(cluster, db, retention_secs),
            None => self.set_retention(db, retention_secs),
        }
    }
    fn create_policy_database(&self, db: &str, retention_secs: u64) -> Result<(), StorageError> {
        // On a cluster, listed there as any database (its retention first, as
        // `create_database` does), so every node learns it.
        if let Some(cluster) = &self.cluster {
            if !self.catalog.database_exists(db) {
                self.check_no_unfinished_drop(cluster, db)?;
                if retention_secs > 0 {
                    cluster.set_retention(db, retention_secs)?;
                }
            }
        }
        self.create_policy_database(db, retention_secs)
    }
    fn forget_cluster_node(&self, node: &str) -> Result<bool, StorageError> {
        let Some(cluster) = &self.cluster else {
            return Err(StorageError::NotOnCluster);
        };
        if node == cluster.node() {
            return Err(StorageError::ForgetSelf {
                node: node.to_string(),
            });
        }
        let listed = cluster.forget_node(node)?;
        tracing::warn!(
            node,
            listed,
            "ingest node forgotten: cluster deletes and drops no longer wait for it"
        );
        Ok(listed)
    }
    fn cluster_policies(&self) -> Option<std::collections::BTreeMap<String, (String, u64)>> {
        self.cluster_sync.as_ref().map(|s| s.policies())
    }
    fn publish_policies(&self, db: &str, doc: &str, at: u64) -> Result<(), StorageError> {
        if let Some(cluster) = &self.cluster {
            cluster.list_policies(db, doc, at)?;
            if let Some(sync) = &self.cluster_sync {
                sync.note_policies(db, doc, at);
            }
        }
        Ok(())
    }
    fn drop_database(&self, db: &str) -> Result<(), StorageError> {
        match &self.cluster {
            Some(cluster) => self.drop_database_on_cluster(cluster, db),
            None => self.drop(db),
        }
    }
    fn drop_measurement(&self, db: &str, measurement: &str) -> Result<bool, StorageError> {
        match &self.cluster {
            Some(cluster) => self.drop_measurement_on_cluster(cluster, db, measurement),
            None => self.drop_measurement_now(db, measurement),
        }
    }
    fn databases(&self) -> Vec<String> {
        self.catalog.databases()
    }
    fn schema(&self, db: &str) -> Result<Vec<ingest::MeasurementSchema>, StorageError> {
        self.require(db)?;
        Ok(self.catalog.schema(db))
    }
    fn series(&self, db: &str, measurement: Option<&str>) -> Result<Vec<String>, StorageError> {
        self.series_keys(db, measurement)
    }
    fn tag_values(
        &self,
        db: &str,
        measurement: &str,
        keys: &[String],
    ) -> Result<Vec<(String, String)>, StorageError> {
        self.distinct_tag_values(db, measurement, keys)
    }
    fn sql(
        &self,
        req: SqlRequest<'_>,
        sink: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<SqlSummary, SqlError> {
        if let Some(cluster) = &self.cluster {
            return self.run_cluster_sql(cluster, req, sink);
        }
        self.run_sql(req, sink)
    }
    fn influxql(&self, req: InfluxqlRequest<'_>) -> Result<StatementResult, InfluxqlError> {
        if self.cluster.is_some() && !answered_on_a_cluster(req.statement) {
            return Err(InfluxqlError::Unsupported {
                what: "this statement with the points on a ClickHouse cluster \
                       (issue #25: run it on the cluster)"
                    .into(),
            });
        }
        self.run_influxql(req)
    }
    fn answers_inline(&self) -> bool {
        // On a cluster the catalog refreshes over the network.
        self.hot.enabled() && self.cluster.is_none()
    }
    fn tag_value_count(&self, db: &str, measurement: &str, key: &str) -> usize {
        // On a cluster the values are those every node wrote (this catalog counts its own),
        // and no key loses its series (deletes are not built there yet): a key any shard
        // has, has values.
        if self.cluster.is_some() {
            return 1;
        }
        self.catalog
            .tag_value_count(db, measurement.as_bytes(), key.as_bytes())
    }
    fn has_read_role(&self, scope: &ReadScope) -> bool {
        // Not `engine()`: a lookup in its roles refuses no inline statement.
        self.engine
            .read()
            .as_ref()
            .is_some_and(|e| e.has_read_role(scope))
    }
    fn series_cardinality(&self) -> Vec<(String, u64)> {
        self.cardinality()
    }
    fn engine_stats(&self) -> Option<EngineStats> {
        self.read_engine_stats()
    }
    fn stats(&self) -> StorageStats {
        self.stats_with_disk()
    }
    fn shutdown(&self) -> Result<(), StorageError> {
        self.close()
    }
    fn shutdown_within(&self, grace: std::time::Duration) -> Result<(), StorageError> {
        self.close_within(grace)
    }
    fn quarantine(&self) -> Vec<QuarantinedTable> {
        self.quarantined()
    }
    fn retry_quarantine(
        &self,
        db: &str,
        measurement: Option<&str>,
    ) -> Result<QuarantineAction, StorageError> {
        self.retry_quarantined(db, measurement)
    }
    fn discard_quarantine(
        &self,
        db: &str,
        measurement: Option<&str>,
    ) -> Result<QuarantineAction, StorageError> {
        self.discard_quarantined(db, measurement)
    }
}

/// Whether a node whose points are on a ClickHouse cluster answers `statement`: the
/// catalog's answers, `SHOW` with or without `WHERE` (over the shards' series), and `SELECT`
/// (read from the shards), `DELETE` and `DROP SERIES`; not yet the drops of measurements and
/// databases.
fn answered_on_a_cluster(statement: &::influxql::ast::Statement) -> bool {
    use ::influxql::ast::Statement as S;
    match statement {
        // With `WHERE`, the shards' series are read as the table (`influxql/show.rs`).
        S::ShowMeasurements(_) | S::ShowTagKeys(_) | S::ShowSeries(_) | S::ShowFieldKeys(_) => true,
        S::ShowTagValues { .. } => true,
        // Read from the shards (`influxql/cluster.rs`).
        S::Select(_) => true,
        // Deleted on every shard behind a cluster-wide fence (`cluster/delete.rs`).
        S::Delete(_) | S::DropSeries(_) => true,
        _ => false,
    }
}

/// The write path reports here the time it held a core; the SQL sandbox's
/// adaptive threads take what it leaves.
pub use engine::ingest_load::INGEST_LOAD;
/// The engine roles chingest boots the engine with (one per read scope).
pub use engine::EngineAccess;
/// The configs of the crates below, which the server's configuration file nests.
pub use flush::FlushConfig;
pub use wal::{Durability, WalConfig};
