//! `DROP MEASUREMENT` with the points on a ClickHouse cluster (issue #25): the
//! measurement's points acknowledged — by any node — before the statement, gone from every
//! shard, and its fields and tags forgotten by every node, so a later write may give a
//! field another type, as in InfluxDB 1.x.
//!
//! 1. The fence of `cluster/delete.rs`: this node delivered everything up to its WAL
//!    position, and every node lists a delivery through the statement's start.
//! 2. This node drops the measurement as on one node (`measurement_drop.rs`: the write
//!    gate drained, the catalog's records deleted and a fence stamped in one durable write;
//!    nothing of it is left to deliver at or below the fence, step 1 waited for it).
//! 3. Every shard drops the shard table and its `Distributed` table (all must answer); a
//!    node that delivers rows written since makes the table again
//!    (`cluster`'s `tables` module).
//! 4. The drop is listed on the shards (`__chingest.drops`: database, measurement, start);
//!    every node's catalog refresh forgets the measurement's fields, tags and series once
//!    per listed drop (a durable marker keeps a restart from forgetting a measurement
//!    written again since), and learns it again from the shards, in the same catalog read,
//!    if rows written since made its table anew (the read lists the tables after the
//!    drops). A statement naming a measurement the catalog lacks asks the shards first
//!    (`cluster/named.rs`): its table may be newer than the last read. What a node still holds to deliver was acknowledged after the
//!    drop began (step 1): delivered as it is.

use std::collections::HashSet;

use cluster::Cluster;

use crate::cluster::catalog::ClusterSync;
use crate::quarantine::lp;
use crate::{Storage, StorageError, Wal};

/// The marker of a listed drop this node applied: `st1C lp(db) lp(measurement)` → the
/// drop's start (8 bytes, big-endian); with measurement `''`, the database's
/// [`lifecycle_at`].
const APPLIED: &[u8] = b"st1C";

fn applied_key(db: &str, measurement: &str) -> Vec<u8> {
    let mut k = APPLIED.to_vec();
    lp(&mut k, db.as_bytes());
    lp(&mut k, measurement.as_bytes());
    k
}

/// The start of the newest drop of `db`.`measurement` this node applied (0: none).
fn applied(wal: &Wal, db: &str, measurement: &str) -> Result<u64, StorageError> {
    let key = applied_key(db, measurement);
    Ok(wal
        .meta_scan_prefix(&key)?
        .into_iter()
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| <[u8; 8]>::try_from(v.as_slice()).ok())
        .map_or(0, u64::from_be_bytes))
}

/// The time (ms) of the newest event in `db`'s life this node knows on the cluster: its
/// dated creation, or the newest drop of it applied here (`cluster/drop_database.rs`); 0:
/// none (a database from before dated listings). A listed drop older than it is not
/// applied: what this node holds of `db` was written after that drop.
pub(crate) fn lifecycle_at(wal: &Wal, db: &str) -> Result<u64, StorageError> {
    applied(wal, db, "")
}

/// Records `at` as [`lifecycle_at`] of `db`, durably.
pub(crate) fn record_lifecycle(wal: &Wal, db: &str, at: u64) -> Result<(), StorageError> {
    wal.put_meta(vec![(applied_key(db, ""), at.to_be_bytes().to_vec())])?
        .wait()?;
    Ok(())
}

impl Storage {
    /// `DROP MEASUREMENT` on the cluster (see the [module](self)); false if neither this
    /// node nor any shard had it.
    pub(crate) fn drop_measurement_on_cluster(
        &self,
        cluster: &Cluster,
        db: &str,
        measurement: &str,
    ) -> Result<bool, StorageError> {
        self.require(db)?;
        let _admin = self.lifecycle.admin.lock();
        let (began, _) = self.fence_cluster(cluster)?;
        // No refresh that read the cluster before the drop may apply it after.
        let _no_refresh = self.cluster_sync.as_ref().map(|s| s.hold());
        let known = {
            let _drained = self.lifecycle.writes.drain();
            self.drop_measurement_drained(db, measurement)?
        };
        let on_shards = cluster.has_table(db, measurement)?;
        cluster.drop_table(db, measurement)?;
        cluster.list_drop(db, measurement, began)?;
        self.wal
            .put_meta(vec![(
                applied_key(db, measurement),
                began.to_be_bytes().to_vec(),
            )])?
            .wait()?;
        if let Some(sync) = &self.cluster_sync {
            sync.forget_applied(db, measurement);
        }
        tracing::info!(db, measurement, "measurement dropped on the cluster");
        Ok(known || on_shards)
    }
}

impl ClusterSync {
    /// Forgets, in this node's catalog, each measurement whose listed drop (`theirs`) is
    /// newer than the last this node applied (module doc, step 4); the ones it forgot. The
    /// caller learns the tables of the same `theirs` next: they were read after its drops
    /// (`Cluster::catalog`), so a table it lists was made again after the drop, never the
    /// one the drop removed.
    pub(crate) fn apply_drops(
        &self,
        theirs: &cluster::ClusterCatalog,
    ) -> Result<HashSet<(String, String)>, StorageError> {
        let mut forgotten = HashSet::new();
        for ((db, measurement), at) in &theirs.drops {
            if !self.catalog.database_exists(db) || applied(&self.wal, db, measurement)? >= *at {
                continue;
            }
            let series = self
                .wal
                .meta_scan_prefix(&ingest::catalog::series_prefix(db))?;
            let (deletes, series) =
                ingest::Catalog::measurement_keys(db, measurement.as_bytes(), series);
            self.wal
                .update_meta(
                    vec![(applied_key(db, measurement), at.to_be_bytes().to_vec())],
                    deletes,
                )?
                .wait()?;
            self.catalog
                .forget_measurement(db, measurement.as_bytes(), &series);
            self.forget_applied(db, measurement);
            // Its shard tables may be made again under their old part names.
            self.cluster.forget_identity(db, Some(measurement));
            forgotten.insert((db.clone(), measurement.clone()));
            tracing::info!(
                db,
                measurement,
                "measurement drop learned from the ClickHouse cluster: its fields and tags forgotten"
            );
        }
        Ok(forgotten)
    }
}
