//! A node's catalog kept in step with the ClickHouse cluster's (issue #25): with
//! `[storage] engine = "clickhouse"` several ingest nodes write the same databases, and each
//! node's catalog alone knows only what that node was sent. The cluster's own metadata
//! (`cluster::ClusterCatalog`: the shards' tables and columns, and the databases
//! listed there) is read
//! - every [`REFRESH`] by a thread of its own, so a node's write path checks field types
//!   against what every node delivered (a write whose field another node stored as another
//!   type is refused with InfluxDB's `field type conflict`, as on one node), and learns the
//!   databases other nodes created;
//! - before each InfluxQL statement when the last read is older than [`STATEMENT_AGE`], so
//!   `SHOW` and `SELECT` see the measurements, tags and fields another node delivered. A
//!   statement that finds it older than [`AHEAD_AGE`] (and younger than [`STATEMENT_AGE`])
//!   has the thread read it at once instead of waiting: while statements keep coming, none
//!   waits for the read (issue #43: two statements per shard, before about one statement a
//!   second);
//! - by a `SELECT` naming a measurement the catalog lacks and a shard holds (`named.rs`).
//!
//! The same thread drops the shards' expired partitions every
//! [`EXPIRE_EVERY`] (`cluster/retention.rs`).
//!
//! What is learned is applied to the in-memory catalog (schema) or recorded durably
//! (databases and their retention, as `CREATE DATABASE` does, so replay after a crash finds the database of
//! every acknowledged write). The other way round, a database created on this node is
//! listed on every shard that answers (`Cluster::create_database`), again at each refresh
//! until the shards have it.
//!
//! Two nodes that first see one new field with different types within one refresh both
//! accept their writes; the shard keeps the first column type, and the other node's rows
//! are refused there deterministically and quarantined (dead letters, listed by `/health`).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use cluster::Cluster;
use engine::table::ColumnKind;
use ingest::catalog::Record;
use ingest::FieldType;
use parking_lot::Mutex;

use crate::cluster::delete::{now_ms, DeliveredClock};
use crate::cluster::drop_database::drops_to_apply;
use crate::cluster::drop_measurement::{lifecycle_at, record_lifecycle};
use crate::cluster::retention::EXPIRE_EVERY;
use crate::{Storage, Wal};

/// How often the background thread reads the cluster's catalog.
pub(crate) const REFRESH: Duration = Duration::from_secs(2);
/// The oldest cluster catalog a statement is answered from.
pub(crate) const STATEMENT_AGE: Duration = Duration::from_secs(1);
/// The age past which a statement has the thread read the catalog ahead of the next one.
pub(crate) const AHEAD_AGE: Duration = Duration::from_millis(500);
/// How often the thread looks for a statement's request between its refreshes.
const POLL: Duration = Duration::from_millis(50);

/// The thread's state and the on-demand refresh.
pub(crate) struct ClusterSync {
    pub(crate) cluster: Arc<Cluster>,
    pub(crate) catalog: Arc<ingest::Catalog>,
    pub(crate) wal: Arc<Wal>,
    /// When the last refresh that reached every shard began.
    fresh_since: Mutex<Option<Instant>>,
    /// Held by the refresh running now.
    running: Mutex<()>,
    /// Columns already applied to the catalog: `(db, measurement, column)`.
    applied: Mutex<HashSet<(String, String, String)>>,
    /// Shards the last refresh could not reach: an outage is logged when it begins and
    /// when it ends, not at every refresh.
    unreachable: Mutex<Vec<usize>>,
    /// What this node has delivered, published on the shards at each refresh: the fence
    /// a `DELETE` on any node waits on (`cluster/delete.rs`).
    delivered: DeliveredClock,
    /// Every node's listed delivery time (ms, its clock), as the last refresh read it.
    nodes: Mutex<std::collections::BTreeMap<String, u64>>,
    /// The storage, once opened: a database drop learned from the cluster runs through it
    /// (`cluster/drop_database.rs`).
    storage: OnceLock<Weak<Storage>>,
    /// Each database's retention-policy document as the last refresh read it (and as this
    /// node listed it since): what the server's policies follow.
    policies: Mutex<std::collections::BTreeMap<String, (String, u64)>>,
    /// A statement found the catalog past [`AHEAD_AGE`]: the thread reads it at its next
    /// poll.
    ahead: AtomicBool,
    stop: AtomicBool,
}

/// Who read the catalog: the thread on its period, the thread for a statement
/// ([`AHEAD_AGE`]), or a statement itself (it waited).
fn count_refresh(by: &'static str) {
    metrics::counter!("chingest_cluster_catalog_refreshes_total", "by" => by).increment(1);
}

/// Registers the counter, so every label is exported before the first refresh.
pub(crate) fn register_metrics() {
    for by in ["background", "ahead", "statement"] {
        metrics::counter!("chingest_cluster_catalog_refreshes_total", "by" => by).absolute(0);
    }
}

impl ClusterSync {
    /// Starts the background refresh (its first one at once).
    pub(crate) fn start(
        cluster: Arc<Cluster>,
        catalog: Arc<ingest::Catalog>,
        wal: Arc<Wal>,
    ) -> Arc<ClusterSync> {
        let sync = Arc::new(ClusterSync {
            cluster,
            catalog,
            wal,
            fresh_since: Mutex::new(None),
            running: Mutex::new(()),
            applied: Mutex::new(HashSet::new()),
            unreachable: Mutex::new(Vec::new()),
            delivered: DeliveredClock::default(),
            nodes: Mutex::new(std::collections::BTreeMap::new()),
            storage: OnceLock::new(),
            policies: Mutex::new(std::collections::BTreeMap::new()),
            ahead: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let s = sync.clone();
        let spawned = std::thread::Builder::new()
            .name("chingest-cluster-catalog".into())
            .spawn(move || {
                let mut expired_at: Option<Instant> = None;
                while !s.stop.load(Ordering::Acquire) {
                    // A replica back (or not seen yet) gets the tables made while it was away.
                    s.cluster.repair_replicas();
                    s.refresh_logged();
                    count_refresh("background");
                    if expired_at.is_none_or(|t| t.elapsed() >= EXPIRE_EVERY) {
                        s.expire_all();
                        expired_at = Some(Instant::now());
                    }
                    let until = Instant::now() + REFRESH;
                    while Instant::now() < until && !s.stop.load(Ordering::Acquire) {
                        if s.ahead.swap(false, Ordering::AcqRel) {
                            s.refresh_if_older_by(AHEAD_AGE, "ahead");
                        }
                        std::thread::sleep(POLL);
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the cluster catalog thread; statements refresh it");
        }
        sync
    }

    /// Lets the refresh apply the database drops it learns through `storage`.
    pub(crate) fn attach(&self, storage: Weak<Storage>) {
        let _ = self.storage.set(storage);
    }

    /// Each database's newest retention-policy document known (`db` → (document, ms)).
    pub(crate) fn policies(&self) -> std::collections::BTreeMap<String, (String, u64)> {
        self.policies.lock().clone()
    }

    /// Keeps `db`'s policy document `doc` at `at` unless a newer one is known.
    pub(crate) fn note_policies(&self, db: &str, doc: &str, at: u64) {
        let mut known = self.policies.lock();
        if known.get(db).is_none_or(|(_, t)| *t < at) {
            known.insert(db.to_string(), (doc.to_string(), at));
        }
    }

    /// Stops the background refresh (after the one running, if any).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// Refreshes unless a refresh that began less than `age` ago reached every shard (past
    /// [`AHEAD_AGE`], the thread is asked to refresh ahead of the next caller). Blocks (HTTP
    /// to every shard): call it where blocking is allowed.
    pub(crate) fn refresh_if_older(&self, age: Duration) {
        let since = *self.fresh_since.lock();
        if let Some(elapsed) = since.map(|t| t.elapsed()).filter(|e| *e < age) {
            if elapsed >= AHEAD_AGE {
                self.ahead.store(true, Ordering::Release);
            }
            return;
        }
        self.refresh_if_older_by(age, "statement");
    }

    /// [`ClusterSync::refresh_if_older`] without asking the thread to read ahead; `by`
    /// counts the refresh when it runs.
    fn refresh_if_older_by(&self, age: Duration, by: &'static str) {
        let fresh = |s: &Option<Instant>| s.is_some_and(|t| t.elapsed() < age);
        if fresh(&self.fresh_since.lock()) {
            return;
        }
        // One refresh at a time; whoever waited finds it fresh (or runs its own).
        let drops = {
            let _running = self.running.lock();
            if fresh(&self.fresh_since.lock()) {
                return;
            }
            // The statement waits for this: only what it reads. Publishing this node's
            // fence and reading the others' is the background thread's, every 2 s.
            count_refresh(by);
            self.refresh_locked(false)
        };
        self.apply_learned_drops(drops);
    }

    /// Refreshes unless a refresh that began at or after `asked` reached every shard: what
    /// a statement needs that found on the shards a measurement the catalog lacks (a read
    /// begun before the table was made may have missed it). Blocks, as
    /// [`refresh_if_older`](Self::refresh_if_older); statements that ask at once share one
    /// read. The database drops it finds are left to the background refresh (every
    /// [`REFRESH`], which finds them again): the caller is a statement under way, not one
    /// about to begin.
    pub(crate) fn refresh_since(&self, asked: Instant) {
        let fresh = |s: &Option<Instant>| s.is_some_and(|t| t >= asked);
        let _running = self.running.lock();
        if fresh(&self.fresh_since.lock()) {
            return;
        }
        let _left_to_the_background = self.refresh_locked(false);
    }

    fn refresh_logged(&self) {
        let drops = {
            let _running = self.running.lock();
            self.refresh_locked(true)
        };
        self.apply_learned_drops(drops);
    }

    /// One refresh (with `fence`, this node's delivery fence published and every node's
    /// read too); the database drops it found to apply (after the lock is let go).
    fn refresh_locked(&self, fence: bool) -> Vec<(String, u64)> {
        if fence {
            self.publish_delivered();
            self.read_nodes();
        }
        let began = Instant::now();
        match self.refresh() {
            Ok((down, drops)) => {
                if down.is_empty() {
                    *self.fresh_since.lock() = Some(began);
                }
                self.log_outages(down);
                drops
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the cluster's catalog; using what is known");
                Vec::new()
            }
        }
    }

    fn apply_learned_drops(&self, drops: Vec<(String, u64)>) {
        if drops.is_empty() {
            return;
        }
        let Some(storage) = self.storage.get() else {
            return;
        };
        if let Err(e) = self.apply_database_drops(storage, drops) {
            tracing::warn!(error = %e, "cannot apply a database drop; retried at the next refresh");
        }
    }

    /// Keeps any refresh from running while held (one that began waits to finish first):
    /// a drop on this node must not be undone by a refresh that read the cluster before it.
    pub(crate) fn hold(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.running.lock()
    }

    /// Forgets that `db`'s measurements and columns were applied to the catalog (it was
    /// dropped).
    pub(crate) fn forget_applied_database(&self, db: &str) {
        self.applied.lock().retain(|(d, _, _)| d != db);
    }

    /// Forgets that `db`.`measurement` and its columns were applied to the catalog (it was
    /// dropped): the next refresh learns it again if a shard has its table.
    pub(crate) fn forget_applied(&self, db: &str, measurement: &str) {
        self.applied
            .lock()
            .retain(|(d, m, _)| !(d == db && m == measurement));
    }

    /// Lists on the shards the newest time before which every write this node
    /// acknowledged is delivered, when it advanced (a failure is logged at debug level:
    /// the outage itself is logged by the refresh).
    fn publish_delivered(&self) {
        let at = now_ms();
        let last = self.wal.last_seq();
        let Some(through) = self.delivered.advance(at, last, self.wal.flushed_seq()) else {
            return;
        };
        if let Err(e) = self.cluster.publish_delivered(through) {
            tracing::debug!(error = %e, "cannot list this node's deliveries on the cluster");
        }
    }

    /// Reads every node's listed delivery time for `/health` (kept as it was when no shard
    /// answers).
    fn read_nodes(&self) {
        if let Ok(nodes) = self.cluster.nodes_delivered() {
            *self.nodes.lock() = nodes;
        }
    }

    /// Every node listed on the shards and how many seconds ago (by this node's clock) the
    /// time before which it delivered everything it acknowledged is, as last read.
    pub(crate) fn nodes_delivered_ago(&self) -> Vec<(String, f64)> {
        let now = now_ms();
        self.nodes
            .lock()
            .iter()
            .map(|(node, through)| (node.clone(), now.saturating_sub(*through) as f64 / 1000.0))
            .collect()
    }

    /// Logs the shards that stopped or started answering since the last refresh.
    fn log_outages(&self, down: Vec<usize>) {
        let mut before = self.unreachable.lock();
        if *before == down {
            return;
        }
        let endpoints = self.cluster.shard_statuses();
        let name = |k: &usize| {
            endpoints
                .get(*k)
                .map_or("?", |s| s.endpoint.as_str())
                .to_string()
        };
        for k in down.iter().filter(|k| !before.contains(k)) {
            tracing::warn!(
                shard = k,
                endpoint = %name(k),
                "a shard does not answer: the catalog is read from the others, and this \
                 node's databases are listed there once it is back"
            );
        }
        for k in before.iter().filter(|k| !down.contains(k)) {
            tracing::info!(shard = k, endpoint = %name(k), "a shard answers again");
        }
        *before = down;
    }

    /// One refresh; the shards that did not answer (empty: every shard answered) and the
    /// database drops to apply.
    #[allow(clippy::type_complexity)]
    fn refresh(&self) -> Result<(Vec<usize>, Vec<(String, u64)>), String> {
        let theirs = self.cluster.catalog().map_err(|e| e.to_string())?;
        let db_drops = drops_to_apply(self.cluster.node(), &theirs);
        // Not yet applied here: neither listed again nor learned again below.
        let dropping = |db: &str| -> Result<bool, String> {
            let Some(at) = theirs.lives.dropped.get(db) else {
                return Ok(false);
            };
            Ok(lifecycle_at(&self.wal, db).map_err(|e| e.to_string())? < *at)
        };
        for (db, (doc, at)) in &theirs.policies {
            self.note_policies(db, doc, *at);
        }
        for db in &theirs.databases {
            if self.catalog.database_exists(db)
                || ingest::names::check_written_database(db).is_err()
            {
                continue;
            }
            if let Some(at) = theirs.lives.created.get(db) {
                record_lifecycle(&self.wal, db, *at)
                    .map_err(|e| format!("recording database {db:?}: {e}"))?;
            }
            let record = Record::Database {
                name: db.clone(),
                retention_secs: 0,
            };
            self.wal
                .put_meta(vec![record.encode()])
                .and_then(|t| t.wait())
                .map_err(|e| format!("recording database {db:?}: {e}"))?;
            self.catalog.apply(&record);
            tracing::info!(db, "database learned from the ClickHouse cluster");
        }
        // Ours the shards do not list yet (created while they were down, or before this
        // node was pointed at the cluster).
        for db in self.catalog.databases() {
            if !theirs.databases.contains(&db) && !dropping(&db)? {
                let at = lifecycle_at(&self.wal, &db).map_err(|e| e.to_string())?;
                self.cluster
                    .create_database(&db, at)
                    .map_err(|e| format!("listing database {db:?} on the cluster: {e}"))?;
            }
        }
        // Drops other nodes ran: their measurements' fields and tags forgotten here, before
        // the tables below are learned. The read lists its tables after its drops
        // (`Cluster::catalog`): a table it lists was made again after the drop, and is
        // learned again in this refresh.
        self.apply_drops(&theirs)
            .map_err(|e| format!("applying the cluster's drops: {e}"))?;
        // A retention that cannot be listed (a shard refusing the statement) must not keep
        // the node from learning tables and columns: logged, tried again next refresh.
        if let Err(e) = self.apply_retention(&theirs) {
            tracing::warn!(error = %e, "cannot apply the cluster's retention settings");
        }
        let mut applied = self.applied.lock();
        for ((db, measurement), columns) in &theirs.tables {
            if !self.catalog.database_exists(db) {
                continue;
            }
            let m = measurement.as_bytes().to_vec();
            if applied.insert((db.clone(), measurement.clone(), String::new())) {
                self.catalog.apply(&Record::Measurement {
                    db: db.clone(),
                    measurement: m.clone(),
                });
            }
            for (name, kind) in columns {
                if applied.contains(&(db.clone(), measurement.clone(), name.clone())) {
                    continue;
                }
                let record = match field_type(*kind) {
                    None => Record::Tag {
                        db: db.clone(),
                        measurement: m.clone(),
                        key: name.as_bytes().to_vec(),
                    },
                    Some(ty) => {
                        let ours = self.catalog.field_type(db, &m, name.as_bytes());
                        if ours.is_some_and(|t| t != ty) {
                            tracing::warn!(
                                db,
                                measurement,
                                field = name,
                                "field type differs from the cluster's: this node's rows of it \
                                 will be refused by the shards (quarantined)"
                            );
                        }
                        Record::Field {
                            db: db.clone(),
                            measurement: m.clone(),
                            field: name.as_bytes().to_vec(),
                            ty,
                        }
                    }
                };
                self.catalog.apply(&record);
                applied.insert((db.clone(), measurement.clone(), name.clone()));
            }
        }
        Ok((theirs.unreachable, db_drops))
    }
}

/// The field type a shard column stands for (`None`: a tag).
fn field_type(kind: ColumnKind) -> Option<FieldType> {
    Some(match kind {
        ColumnKind::Tag => return None,
        ColumnKind::Float => FieldType::Float,
        ColumnKind::Integer => FieldType::Integer,
        ColumnKind::Unsigned => FieldType::UInteger,
        ColumnKind::String => FieldType::String,
        ColumnKind::Boolean => FieldType::Boolean,
    })
}
