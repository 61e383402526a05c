//! In-memory state of one database: schema, series set (sharded), tag value sets.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::AtomicU64;

use parking_lot::{Mutex, RwLock};
use xxhash_rust::xxh3::xxh3_64;

use crate::names::column_cost;
use crate::point::FieldType;

const SHARDS: usize = 16;

/// Hasher for keys that already are 64-bit hashes (series ids).
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed; fall back to xxh3 for anything else.
        self.0 = xxh3_64(bytes);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

pub(super) type IdSet = HashSet<u64, BuildHasherDefault<IdHasher>>;

/// What the catalog knows of one measurement. Columns are added through [`add_field`] and
/// [`add_tag_key`], which keep [`column_bytes`] current.
///
/// [`add_field`]: MeasurementState::add_field
/// [`add_tag_key`]: MeasurementState::add_tag_key
/// [`column_bytes`]: MeasurementState::column_bytes
#[derive(Default)]
pub(super) struct MeasurementState {
    pub(super) fields: HashMap<Vec<u8>, FieldType>,
    pub(super) tag_keys: HashSet<Vec<u8>>,
    /// Sum of [`column_cost`] over the fields and tag keys.
    pub(super) column_bytes: usize,
}

impl MeasurementState {
    /// Tag keys plus fields: the table's user columns.
    pub(super) fn columns(&self) -> usize {
        self.fields.len() + self.tag_keys.len()
    }

    /// Registers a field (first type wins); true if it is new.
    pub(super) fn add_field(&mut self, name: &[u8], ty: FieldType) -> bool {
        if self.fields.contains_key(name) {
            return false;
        }
        self.fields.insert(name.to_vec(), ty);
        self.column_bytes += column_cost(name);
        true
    }

    /// Registers a tag key; true if it is new.
    pub(super) fn add_tag_key(&mut self, name: &[u8]) -> bool {
        if !self.tag_keys.insert(name.to_vec()) {
            return false;
        }
        self.column_bytes += column_cost(name);
        true
    }
}

/// Catalog state of one database.
pub(super) struct DbCatalog {
    pub(super) name: String,
    pub(super) schema: RwLock<HashMap<Vec<u8>, MeasurementState>>,
    pub(super) series: [RwLock<IdSet>; SHARDS],
    pub(super) series_count: AtomicU64,
    /// Serialises the slow path (new series) so limit checks are exact under concurrency.
    pub(super) slow: Mutex<SlowState>,
}

#[derive(Default)]
pub(super) struct SlowState {
    /// (measurement, tag key) -> hashes of the distinct values.
    pub(super) tag_values: HashMap<(Vec<u8>, Vec<u8>), IdSet>,
}

impl DbCatalog {
    pub(super) fn new(name: &str) -> DbCatalog {
        DbCatalog {
            name: name.to_owned(),
            schema: RwLock::new(HashMap::new()),
            series: std::array::from_fn(|_| RwLock::new(IdSet::default())),
            series_count: AtomicU64::new(0),
            slow: Mutex::new(SlowState::default()),
        }
    }
}

/// The series shard of `id`.
#[inline]
pub(super) fn shard_of(id: u64) -> usize {
    (id >> 60) as usize % SHARDS
}
