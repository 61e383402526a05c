//! The catalog: schema, series registry, database registry and cardinality limits of every
//! database.
//!
//! # Rules
//! * Per (database, measurement, field) the first type written wins; later points with another
//!   type are dropped with InfluxDB's `field type conflict` message.
//! * Limits (0 = unlimited) are checked on every write whose series is new: series per
//!   database, measurements per database, tag values per (measurement, tag key). Counts are
//!   exact and rebuilt from the persisted records at start-up.
//! * What storage cannot hold is refused when the catalog first meets it, never per known
//!   name (so a warm write pays nothing): a measurement, tag key or tag value of a new series,
//!   a field new to the measurement ([`names`](crate::names) has the rules: UTF-8, the
//!   engine's reserved columns, file-name lengths, the statement-size budget of a table's
//!   columns), and columns past `max_columns_per_measurement`. Such points are dropped with
//!   HTTP 400 ([`DropKind::InvalidName`](crate::DropKind::InvalidName),
//!   [`DropKind::TooManyColumns`](crate::DropKind::TooManyColumns)). Column counts are
//!   checked again, exactly, under the schema's write lock when a column is registered.
//! * Databases exist once a [`Record::Database`] is applied (`CREATE DATABASE`, durable first)
//!   and stop existing with [`Catalog::drop_database`]. Writes do not register databases:
//!   the caller checks [`Catalog::database_exists`] before it writes.
//!
//! # Hot path
//! A known series costs one hash (computed by the parser) and one lookup in a sharded set under
//! a read lock held for the whole request; field types are looked up once per (request,
//! measurement, field). Only new series, measurements and fields take write locks.
//!
//! # Metadata records (version 1)
//! Every change returns records `(key, value)` that the caller commits in the same WAL batch as
//! the data; [`Record`] is their one codec. `lp(x)` is `u32be(len(x)) x`.
//!
//! | key                                                           | value                      |
//! |---------------------------------------------------------------|----------------------------|
//! | `"ic1" 'M' lp(db) lp(measurement)`                            | empty                      |
//! | `"ic1" 'F' lp(db) lp(measurement) lp(field)`                  | one byte: [`FieldType`] as u8 |
//! | `"ic1" 'T' lp(db) lp(measurement) lp(tag key)`                | empty                      |
//! | `"ic1" 'V' lp(db) lp(measurement) lp(tag key) lp(tag value)`  | empty                      |
//! | `"ic1" 'S' lp(db) u64be(series id)`                           | canonical series key ([`SeriesKey`](crate::series::SeriesKey)) |
//! | `"srv1D" db`                                                  | `1` exists (kept forever), `1;retention=<secs>`, `0` dropped |
//!
//! Records are idempotent puts; [`Catalog::load`] ignores keys with neither prefix (they
//! belong to someone else) and rejects malformed `ic1` records. The registry records (`srv1D`)
//! were first written by the server; their format is kept as it was.
//!
//! Known limitation: if the WAL write carrying a request's records fails, the in-memory catalog
//! keeps what that request added (until restart). Concurrent requests relying on it then do not
//! re-emit the records. The same holds for what [`Catalog::schema`] answers.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::point::FieldType;

mod create;
mod load;
mod record;
mod resolve;
mod rules;
mod schema;
mod series_drop;
mod state;

pub use record::{series_prefix, MetaRecord, Record, DB_RECORD_PREFIX, RECORD_PREFIX};
pub use resolve::{MeasurementPlan, Resolution};
pub use schema::MeasurementSchema;
pub use series_drop::SeriesDrop;

use record::{kind_prefix, measurement_prefix, Kind};
use state::{shard_of, DbCatalog};

/// Cardinality limits per database; 0 means unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Maximum distinct series per database. Default: 0 (unlimited).
    pub max_series_per_database: u64,
    /// Maximum distinct measurements per database. Default: 0 (unlimited).
    pub max_measurements_per_database: u64,
    /// Maximum distinct values per (measurement, tag key). Default: 0 (unlimited).
    pub max_values_per_tag: u64,
    /// Maximum columns (tag keys plus fields) per measurement; a point that would add one
    /// more is dropped (HTTP 400). Default: 0 (no count limit). Whatever this says, a
    /// measurement's column names never pass [`MAX_COLUMN_BYTES`](crate::names::MAX_COLUMN_BYTES),
    /// the engine's statement size.
    pub max_columns_per_measurement: u64,
}

/// In-memory schema, series and database registry of all databases. `Sync`; share it behind
/// an `Arc`.
pub struct Catalog {
    limits: Limits,
    dbs: RwLock<HashMap<String, Arc<DbCatalog>>>,
    /// Registered databases and their retention in seconds (0 = forever).
    registry: RwLock<BTreeMap<String, u64>>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("limits", &self.limits)
            .field("databases", &self.registry.read().len())
            .field("with_schema", &self.dbs.read().len())
            .finish()
    }
}

impl Catalog {
    /// An empty catalog with the given limits.
    pub fn new(limits: Limits) -> Catalog {
        Catalog {
            limits,
            dbs: RwLock::new(HashMap::new()),
            registry: RwLock::new(BTreeMap::new()),
        }
    }

    /// The configured limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The state of `name`, created if new.
    fn db(&self, name: &str) -> Arc<DbCatalog> {
        if let Some(db) = self.dbs.read().get(name) {
            return db.clone();
        }
        self.dbs
            .write()
            .entry(name.to_owned())
            .or_insert_with(|| Arc::new(DbCatalog::new(name)))
            .clone()
    }

    /// The state of `name`, if it has any.
    fn existing(&self, name: &str) -> Option<Arc<DbCatalog>> {
        self.dbs.read().get(name).cloned()
    }

    /// The type of a field, if known.
    pub fn field_type(&self, db: &str, measurement: &[u8], field: &[u8]) -> Option<FieldType> {
        let db = self.existing(db)?;
        let schema = db.schema.read();
        schema.get(measurement)?.fields.get(field).copied()
    }

    /// Number of series in `db`.
    pub fn series_count(&self, db: &str) -> u64 {
        self.existing(db)
            .map_or(0, |d| d.series_count.load(Ordering::Relaxed))
    }

    /// Number of measurements in `db`.
    pub fn measurement_count(&self, db: &str) -> usize {
        self.existing(db).map_or(0, |d| d.schema.read().len())
    }

    /// Number of distinct values of `tag_key` in `measurement` of `db`.
    pub fn tag_value_count(&self, db: &str, measurement: &[u8], tag_key: &[u8]) -> usize {
        self.existing(db).map_or(0, |d| {
            d.slow
                .lock()
                .tag_values
                .get(&(measurement.to_vec(), tag_key.to_vec()))
                .map_or(0, |s| s.len())
        })
    }

    /// Whether `db` is registered (created and not dropped).
    pub fn database_exists(&self, db: &str) -> bool {
        self.registry.read().contains_key(db)
    }

    /// Names of the registered databases, sorted.
    pub fn databases(&self) -> Vec<String> {
        self.registry.read().keys().cloned().collect()
    }

    /// The retention of `db` in seconds; 0 keeps its data forever (also for an unknown `db`).
    pub fn retention_secs(&self, db: &str) -> u64 {
        self.registry.read().get(db).copied().unwrap_or(0)
    }

    /// Forgets everything known of `db` (`DROP DATABASE`): its registration, measurements,
    /// field types, tags, series and their counts. Returns the key prefixes of its persisted
    /// schema and series records, which the caller deletes in the same durable write that
    /// records the drop ([`Record::DatabaseDropped`]), so a restart does not bring them back.
    pub fn drop_database(&self, db: &str) -> Vec<Vec<u8>> {
        self.forget(db);
        Kind::ALL
            .iter()
            .map(|&kind| kind_prefix(kind, db))
            .collect()
    }

    fn forget(&self, db: &str) {
        self.dbs.write().remove(db);
        self.registry.write().remove(db);
    }

    /// Whether `db` has `measurement` (a write registered it).
    pub fn measurement_exists(&self, db: &str, measurement: &[u8]) -> bool {
        self.existing(db)
            .is_some_and(|d| d.schema.read().contains_key(measurement))
    }

    /// `DROP MEASUREMENT`: the keys to delete for `measurement` of `db` — the key prefixes
    /// of its measurement, field, tag and tag value records, and the keys of its series
    /// records among `series_records` (`db`'s series records as stored, key and value: a
    /// scan of [`series_prefix`]) — and
    /// the ids of those series. Changes nothing: [`Catalog::forget_measurement`] follows the
    /// durable delete.
    pub fn measurement_keys(
        db: &str,
        measurement: &[u8],
        series_records: impl IntoIterator<Item = MetaRecord>,
    ) -> (Vec<Vec<u8>>, Vec<u64>) {
        let mut keys: Vec<Vec<u8>> = [Kind::Measurement, Kind::Field, Kind::Tag, Kind::TagValue]
            .iter()
            .map(|&kind| measurement_prefix(kind, db, measurement))
            .collect();
        let mut ids = Vec::new();
        for (k, v) in series_records {
            if let Ok(Some(Record::Series { id, key, .. })) = Record::decode(&k, &v) {
                if key.measurement() == measurement {
                    ids.push(id);
                    keys.push(k);
                }
            }
        }
        (keys, ids)
    }

    /// Forgets `measurement` of `db` in memory (`DROP MEASUREMENT`, after its records were
    /// deleted durably): its fields and their types, tag keys, tag values, and `series`.
    pub fn forget_measurement(&self, db: &str, measurement: &[u8], series: &[u64]) {
        let Some(d) = self.existing(db) else {
            return;
        };
        d.schema.write().remove(measurement);
        d.slow
            .lock()
            .tag_values
            .retain(|(m, _), _| m.as_slice() != measurement);
        let mut gone = 0;
        for &id in series {
            if d.series[shard_of(id)].write().remove(&id) {
                gone += 1;
            }
        }
        d.series_count.fetch_sub(gone, Ordering::Relaxed);
    }
}
