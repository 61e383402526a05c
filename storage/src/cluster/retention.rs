//! Retention with the points on a ClickHouse cluster (issue #25; the design is
//! `cluster`'s `retention` module): a database's retention is set on the shards
//! first, then in this node's catalog; every node learns the newest setting at its catalog
//! refresh and drops the expired partitions on the shards every [`EXPIRE_EVERY`].

use std::time::Duration;

use cluster::Cluster;
use ingest::catalog::Record;

use crate::cluster::catalog::ClusterSync;
use crate::{Storage, StorageError};

/// How often each node drops the shards' expired partitions. InfluxDB checks every 30
/// minutes by default (`[retention] check-interval`); a point outlives its retention by
/// up to a partition's span anyway ([`cluster`]), so this adds little to that.
pub(crate) const EXPIRE_EVERY: Duration = Duration::from_secs(60);

impl Storage {
    /// Sets `db`'s retention on the cluster (every shard that answers; none: an error and
    /// nothing changed), then in this node's catalog (durably; the door refuses points
    /// older than it), then drops what it expires on the shards at once.
    pub(crate) fn set_cluster_retention(
        &self,
        cluster: &Cluster,
        db: &str,
        retention_secs: u64,
    ) -> Result<(), StorageError> {
        self.require(db)?;
        cluster.set_retention(db, retention_secs)?;
        self.set_retention(db, retention_secs)?;
        expire_logged(cluster, db, retention_secs);
        Ok(())
    }
}

/// Drops the shards' partitions of `db` that `retention_secs` expired; failures are
/// logged (the next run, [`EXPIRE_EVERY`] later, tries again).
pub(crate) fn expire_logged(cluster: &Cluster, db: &str, retention_secs: u64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    match cluster.expire(db, retention_secs, now) {
        Ok(done) => {
            for table in done.unpartitioned {
                tracing::warn!(
                    table,
                    "a shard table without chingest's partitioning: retention does not \
                     expire its points (made by an earlier build? copy it into a new table)"
                );
            }
        }
        Err(e) => tracing::warn!(db, error = %e, "cannot drop expired partitions on the cluster"),
    }
}

impl ClusterSync {
    /// Applies the cluster's retention settings (`theirs`) to this node: a database's
    /// newest setting goes to the catalog (durably) when it differs; a retention only this
    /// node knows (set before it joined the cluster) is listed on the shards; a shard
    /// behind the others gets the newest again. Every database's retention is noted for
    /// the partitions of the tables this node makes.
    pub(crate) fn apply_retention(&self, theirs: &cluster::ClusterCatalog) -> Result<(), String> {
        for db in self.catalog.databases() {
            let ours = self.catalog.retention_secs(&db);
            match theirs.retention.get(&db) {
                Some(setting) if setting.secs != ours => {
                    let record = Record::Database {
                        name: db.clone(),
                        retention_secs: setting.secs,
                    };
                    self.wal
                        .put_meta(vec![record.encode()])
                        .and_then(|t| t.wait())
                        .map_err(|e| format!("recording the retention of {db:?}: {e}"))?;
                    self.catalog.apply(&record);
                    tracing::info!(
                        db,
                        retention_secs = setting.secs,
                        "retention learned from the ClickHouse cluster"
                    );
                }
                Some(_) => {}
                None if ours > 0 => {
                    self.cluster
                        .set_retention(&db, ours)
                        .map_err(|e| format!("listing the retention of {db:?}: {e}"))?;
                }
                None => {}
            }
            self.cluster
                .note_retention(&db, self.catalog.retention_secs(&db));
        }
        for (k, db) in &theirs.retention_behind {
            if let Some(setting) = theirs.retention.get(db) {
                self.cluster
                    .relist_retention(*k, db, *setting)
                    .map_err(|e| format!("listing the retention of {db:?} on shard {k}: {e}"))?;
            }
        }
        Ok(())
    }

    /// Drops the expired partitions of every database with a retention.
    pub(crate) fn expire_all(&self) {
        for db in self.catalog.databases() {
            let secs = self.catalog.retention_secs(&db);
            if secs > 0 {
                expire_logged(&self.cluster, &db, secs);
            }
        }
    }
}
