//! # cluster: chingest's ClickHouse-cluster client (issue #25)
//!
//! Brief overview: delivery of flushed batches to a ClickHouse cluster (the shard map,
//! the tables on each shard, exactly-once inserts through the embedded engine), and what
//! else a node does there: reads (`read.rs` the rows, `partials.rs` pushed-down answers,
//! both decoded by `row_binary.rs`), `/api/v1/sql` ([`Cluster::sql`]), the catalog the
//! nodes share, deletes, drops and retention. storage uses it; the flusher
//! writes to it through `flush::Destination`, which storage implements over it (flush
//! does not know the cluster, nor this crate the flusher).
//!
//! The embedded engine is the cluster's client: a batch in the embedded layout is handed to
//! it as an Arrow scan and written to each shard with `INSERT INTO FUNCTION url(…, 'Native',
//! …) SELECT … WHERE jumpConsistentHash(series_id, N) = k`, over the shard's HTTP interface
//! (the only one a 26.x engine shares with older servers such as Debian's 18.16: its native
//! `remote()` cannot talk to them). DDL and the delivery checks go over the same HTTP
//! interface from Rust ([`http`]).
//!
//! Exactly once without `insert_deduplication_token` (22.2+): every row carries the writing
//! node and its write's sequence (`__node`, `__seq`), and one shard's rows of one job go in
//! one insert that the shard stores as one block, hence one part, atomically (the insert
//! settings in the URL). A job that may have reached a shard before (an earlier attempt
//! failed after, or during, its insert) first asks that shard which of its sequences it
//! holds and sends only the others ([`Cluster::deliver`]; an insert whose rows span
//! partitions is stored as one part per partition, so a shard may hold a write in part:
//! [`held`]).
//!
//! Not with `insert_deduplication_token` on the servers that have it either (issue #43),
//! because it would be wrong or add nothing next to this scheme:
//! - a token deterministic per delivery (incarnation, shard, first and last `__seq`) names
//!   a retry that sends *other rows* than the first attempt — only those the shard does not
//!   hold — and a server deduplicates an insert's blocks by the token alone (one block per
//!   partition, numbered in order): a retry completing a write held in part would be taken
//!   for the part already stored, and its rows silently dropped;
//! - deduplication remembers only a window of recent blocks per table
//!   (`replicated_deduplication_window`, by count and age; a plain `MergeTree` none by
//!   default), so a node retrying after an outage longer than the window must ask the shard
//!   all the same — and asking is one small `SELECT` per retried job, never per delivery;
//! - a replicated table already drops an insert's block identical to one it holds (by the
//!   block's hash), which a retry of the same rows is: the token would add nothing there.

#![deny(unsafe_code)]

mod catalog;
mod code;
mod config;
mod connect;
mod databases;
mod delete;
mod deliver;
mod error;
mod folded;
mod held;
mod http;
mod identified;
mod identity;
mod last_points;
mod listing;
mod meta;
mod nodes;
mod partials;
mod read;
mod replicas;
mod retention;
mod row_binary;
mod schema;
mod series_of_tags;
mod series_tags;
pub mod shard;
mod sql;
mod status;
mod tables;
mod version;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use engine::table::ColumnKind;
use parking_lot::Mutex;

pub use catalog::ClusterCatalog;
pub use code::in_text as server_error_code;
pub use config::{ClusterConfig, ShardReader};
pub use databases::{DatabaseLives, DROP_DONE};
pub use error::ClusterError;
pub use identified::Grouped;
pub use identity::{IdentitySnapshot, MAX_REWRITTEN_SERIES};
pub use read::{RowSelection, Source, Unfiltered};
pub use retention::{Expired, RetentionSetting};
pub use series_of_tags::{series_in, TagValues, MAX_MAP_BYTES, MAX_PRUNED_SERIES};
pub use series_tags::{GroupTag, SERIES_PER_VALUE};
pub use shard::ShardMap;
pub use status::{Delivered, ReplicaStatus, ShardStatus};
pub use version::ServerVersion;

/// A write's rows of one table a shard has not confirmed: (`db`, `measurement`, `__seq`).
type Waiting = (String, String, u64);

/// One shard's `Distributed` tables: (`db`, `measurement`) → their user columns, or when
/// making one last failed.
type DistributedTables = HashMap<(String, String), Result<usize, Instant>>;

/// One shard's tables this node has checked: (`db`, `measurement`) → user columns.
type ShardTables = HashMap<(String, String), HashMap<String, ColumnKind>>;

/// A connected cluster.
pub struct Cluster {
    config: ClusterConfig,
    map: ShardMap,
    http: http::Client,
    /// Per shard, the user columns known on each table.
    known: Mutex<Vec<ShardTables>>,
    /// Per shard, the writes with rows for it that it has not confirmed yet: (`db`,
    /// `measurement`, `__seq`) → when this process first tried (`/health`'s per-shard lag).
    waiting: Mutex<Vec<HashMap<Waiting, (Instant, u64)>>>,
    /// Each shard's server version (its first answering replica's) at connect (`None`: it
    /// did not answer).
    versions: Vec<Option<ServerVersion>>,
    /// Per shard, the `Distributed` tables made and how many user columns each has, or
    /// when making one last failed (tried again 30 s later, not on every delivery).
    distributed_known: Mutex<Vec<DistributedTables>>,
    /// The shard the next `/api/v1/sql` statement goes to first.
    next_sql_shard: std::sync::atomic::AtomicUsize,
    /// Each database's retention (seconds) as this node knows it: the partition span of
    /// the tables it makes ([`retention`]).
    retention: Mutex<HashMap<String, u64>>,
    /// Per shard table, which series may hold a point written more than once
    /// ([`identity`]).
    identity: identity::Indexes,
    /// Per shard table, each series' last point as of a listing of its parts
    /// ([`last_points`]).
    last_points: last_points::LastPoints,
    /// Per shard table and tag, the series holding each value ([`series_of_tags`]).
    tag_maps: series_of_tags::TagMaps,
}

impl Cluster {
    /// How long a `DELETE` waits for the other nodes' deliveries.
    pub fn delete_wait(&self) -> Duration {
        self.config.delete_wait
    }

    /// This ingest node's name (its rows' `__node`).
    pub fn node(&self) -> &str {
        &self.config.node
    }

    /// The cluster's name for its `Distributed` tables, when configured.
    pub fn distributed(&self) -> Option<&str> {
        self.config.distributed.as_deref()
    }

    /// The shard map in use.
    pub fn map(&self) -> ShardMap {
        self.map
    }

    /// What each shard's last request showed, in shard order (`/health`).
    pub fn shard_statuses(&self) -> Vec<ShardStatus> {
        let waiting = self.waiting.lock();
        let replicas = self.http.replicas_seen.lock().clone();
        self.http
            .seen
            .lock()
            .iter()
            .enumerate()
            .zip(waiting.iter())
            .map(|((k, s), waiting)| ShardStatus {
                endpoint: self.http.endpoint(k),
                replicas: replicas[k]
                    .iter()
                    .enumerate()
                    .map(|(r, seen)| ReplicaStatus {
                        endpoint: self.http.replica_endpoint(k, r),
                        up: seen.up,
                        last_error: seen.last_error.clone(),
                        delay_secs: seen.delay_secs,
                    })
                    .collect(),
                up: s.up,
                last_error: s.last_error.clone(),
                confirmed_secs_ago: s.confirmed.map(|t| t.elapsed().as_secs_f64()),
                waiting_deliveries: waiting.len(),
                waiting_rows: waiting.values().map(|(_, rows)| rows).sum(),
                oldest_waiting_secs: waiting
                    .values()
                    .map(|(t, _)| t)
                    .min()
                    .map_or(0.0, |t| t.elapsed().as_secs_f64()),
            })
            .collect()
    }

    /// Each shard's server version at connect, in shard order (`None`: it did not answer).
    pub fn versions(&self) -> &[Option<ServerVersion>] {
        &self.versions
    }

    /// Runs a statement on one shard; its text answer.
    pub fn statement(&self, shard: usize, sql: &str) -> Result<String, ClusterError> {
        self.http.statement(shard, sql)
    }
}
