//! `DROP DATABASE` with the points on a ClickHouse cluster (issue #25): the database's
//! points acknowledged — by any node — before every node learned of the drop, gone from
//! every shard; each node refuses writes to it from then on (`database not found`), until
//! a `CREATE DATABASE` makes it anew.
//!
//! 1. The drop is listed on the shards at `began` (`cluster`'s `databases` module):
//!    the commit point. From here every node reading the cluster's catalog finds the
//!    database gone, and a crash of this node leaves a listed drop its own refresh applies
//!    after the restart.
//! 2. Every node applies it, this one at once and the others at their next refresh
//!    ([`ClusterSync::apply_database_drops`]): the drop as on one node (`registry.rs`:
//!    durable, new writes refused, the node's undelivered rows of it discarded, its
//!    deliveries of it finished), a durable marker so it is applied once, then the node
//!    lists that it applied it. A node that created the database after `began` (by its own
//!    clock) skips it: what it holds was written after the drop.
//! 3. Once every node listed on the shards (`__chingest.nodes`) has applied it — no node
//!    can deliver a row of it any more — every shard drops its tables, and the drop is
//!    listed as done. A node that does not apply it within `delete_wait_secs` fails the
//!    statement with 503 naming it; the database stays gone (step 1), its tables stay on
//!    the shards, invisible, until a `DROP DATABASE` of it completes. A `CREATE DATABASE`
//!    of that name is refused meanwhile: it would show them again.

use std::sync::Weak;
use std::time::{Duration, Instant};

use cluster::{Cluster, ClusterCatalog, DROP_DONE};

use crate::cluster::catalog::ClusterSync;
use crate::cluster::delete::now_ms;
use crate::cluster::drop_measurement::{lifecycle_at, record_lifecycle};
use crate::{Storage, StorageError};

impl Storage {
    /// `DROP DATABASE` on the cluster (see the [module](self)).
    pub(crate) fn drop_database_on_cluster(
        &self,
        cluster: &Cluster,
        db: &str,
    ) -> Result<(), StorageError> {
        let began = {
            // The admin lock before the refresh's, as `DROP MEASUREMENT` takes them.
            let _admin = self.lifecycle.admin.lock();
            // No refresh that read the cluster before the listing may learn the database
            // again after this node dropped it.
            let _no_refresh = self.cluster_sync.as_ref().map(|s| s.hold());
            let began = now_ms();
            cluster.list_database_drop(db, began)?;
            self.apply_database_drop_admin_held(cluster, db, began)?;
            began
        };
        self.wait_drop_applied(cluster, db, began)?;
        cluster.drop_database_tables(db)?;
        cluster.confirm_database_drop(DROP_DONE, db, began)?;
        tracing::info!(db, "database dropped on the cluster");
        Ok(())
    }

    /// Step 2 on this node: drops `db` here unless this node created it after `at`, marks
    /// the drop applied, and lists that on the shards.
    pub(crate) fn apply_database_drop(
        &self,
        cluster: &Cluster,
        db: &str,
        at: u64,
    ) -> Result<(), StorageError> {
        let _admin = self.lifecycle.admin.lock();
        self.apply_database_drop_admin_held(cluster, db, at)
    }

    fn apply_database_drop_admin_held(
        &self,
        cluster: &Cluster,
        db: &str,
        at: u64,
    ) -> Result<(), StorageError> {
        if lifecycle_at(&self.wal, db)? < at {
            if self.catalog.database_exists(db) {
                self.drop_admin_held(db)?;
                tracing::info!(
                    db,
                    "database drop applied: this node's writes of it are gone"
                );
            }
            record_lifecycle(&self.wal, db, at)?;
        }
        cluster.forget_database(db);
        if let Some(sync) = &self.cluster_sync {
            sync.forget_applied_database(db);
        }
        cluster.confirm_database_drop(cluster.node(), db, at)?;
        Ok(())
    }

    /// Step 3's wait: until every node listed on the shards applied the drop at `at`.
    fn wait_drop_applied(&self, cluster: &Cluster, db: &str, at: u64) -> Result<(), StorageError> {
        let deadline = Instant::now() + cluster.delete_wait();
        let mut pause = Duration::from_millis(50);
        loop {
            let lives = cluster.all_database_lives()?;
            let behind: Vec<String> = cluster
                .nodes_delivered()?
                .into_keys()
                .filter(|node| !lives.has_applied(node, db, at))
                .collect();
            if behind.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(StorageError::DropNotAppliedByNodes {
                    db: db.to_string(),
                    nodes: behind.join(", "),
                    waited_secs: cluster.delete_wait().as_secs(),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(250));
        }
    }

    /// Refuses a `CREATE DATABASE` of a name whose drop on the cluster has not finished:
    /// its tables are still on the shards and would show again.
    pub(crate) fn check_no_unfinished_drop(
        &self,
        cluster: &Cluster,
        db: &str,
    ) -> Result<(), StorageError> {
        match cluster.all_database_lives()?.unfinished_drop(db) {
            Some(_) => Err(StorageError::DropUnfinished { db: db.to_string() }),
            None => Ok(()),
        }
    }
}

/// The database drops a refresh found this node has not applied (or not listed as
/// applied): `(db, at)`.
pub(crate) fn drops_to_apply(node: &str, theirs: &ClusterCatalog) -> Vec<(String, u64)> {
    theirs
        .lives
        .dropped
        .iter()
        .filter(|(db, at)| !theirs.lives.has_applied(node, db, **at))
        .map(|(db, at)| (db.clone(), *at))
        .collect()
}

impl ClusterSync {
    /// Applies the database drops of [`drops_to_apply`] (step 2), after the refresh that
    /// found them let go of its lock (a drop takes the admin lock, which `DROP
    /// MEASUREMENT` holds while it waits for the refresh's). Needs the storage (a drop runs
    /// through it); before it is attached, drops wait for a later refresh.
    pub(crate) fn apply_database_drops(
        &self,
        storage: &Weak<Storage>,
        drops: Vec<(String, u64)>,
    ) -> Result<(), String> {
        for (db, at) in &drops {
            let Some(storage) = storage.upgrade() else {
                return Ok(());
            };
            storage
                .apply_database_drop(&self.cluster, db, *at)
                .map_err(|e| format!("applying the drop of database {db:?}: {e}"))?;
        }
        Ok(())
    }
}
