//! The catalog: schema, series registry and cardinality limits of every database.
//!
//! # Rules
//! * Per (database, measurement, field) the first type written wins; later points with another
//!   type are dropped with InfluxDB's `field type conflict` message.
//! * Limits (0 = unlimited) are checked on every write whose series is new: series per
//!   database, measurements per database, tag values per (measurement, tag key). Counts are
//!   exact and rebuilt from the persisted records at start-up.
//!
//! # Hot path
//! A known series costs one hash (computed by the parser) and one lookup in a sharded set under
//! a read lock held for the whole request; field types are looked up once per (request,
//! measurement, field). Only new series, measurements and fields take write locks.
//!
//! # Metadata records (version 1)
//! Every change returns records `(key, value)` that the caller commits in the same WAL batch as
//! the data. `lp(x)` is `u32be(len(x)) x`.
//!
//! | key                                                           | value                      |
//! |---------------------------------------------------------------|----------------------------|
//! | `"ic1" 'M' lp(db) lp(measurement)`                            | empty                      |
//! | `"ic1" 'F' lp(db) lp(measurement) lp(field)`                  | one byte: [`FieldType`] as u8 |
//! | `"ic1" 'T' lp(db) lp(measurement) lp(tag key)`                | empty                      |
//! | `"ic1" 'V' lp(db) lp(measurement) lp(tag key) lp(tag value)`  | empty                      |
//! | `"ic1" 'S' lp(db) u64be(series id)`                           | canonical series key       |
//!
//! Records are idempotent puts; [`Catalog::load`] ignores keys without the `ic1` prefix (they
//! belong to someone else) and rejects malformed `ic1` records.
//!
//! Known limitation: if the WAL write carrying a request's records fails, the in-memory catalog
//! keeps what that request added (until restart). Concurrent requests relying on it then do not
//! re-emit the records.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{CatalogError, DropKind, DroppedPoint};
use crate::point::{same, FieldType, ParsedBatch};
use crate::series::write_series_key;

/// Key prefix of every catalog record.
pub const RECORD_PREFIX: &[u8] = b"ic1";

const SHARDS: usize = 16;

/// A metadata record: key and value bytes.
pub type MetaRecord = (Vec<u8>, Vec<u8>);

/// Cardinality limits per database; 0 means unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Maximum distinct series per database. Default: 0 (unlimited).
    pub max_series_per_database: u64,
    /// Maximum distinct measurements per database. Default: 0 (unlimited).
    pub max_measurements_per_database: u64,
    /// Maximum distinct values per (measurement, tag key). Default: 0 (unlimited).
    pub max_values_per_tag: u64,
}

/// Hasher for keys that already are 64-bit hashes (series ids).
#[derive(Default)]
struct IdHasher(u64);

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

type IdSet = HashSet<u64, BuildHasherDefault<IdHasher>>;

#[derive(Default)]
struct MeasurementSchema {
    fields: HashMap<Vec<u8>, FieldType>,
    tag_keys: HashSet<Vec<u8>>,
}

/// Catalog state of one database.
struct DbCatalog {
    name: String,
    schema: RwLock<HashMap<Vec<u8>, MeasurementSchema>>,
    series: [RwLock<IdSet>; SHARDS],
    series_count: AtomicU64,
    /// Serialises the slow path (new series) so limit checks are exact under concurrency.
    slow: Mutex<SlowState>,
}

#[derive(Default)]
struct SlowState {
    /// (measurement, tag key) -> hashes of the distinct values.
    tag_values: HashMap<(Vec<u8>, Vec<u8>), IdSet>,
}

impl DbCatalog {
    fn new(name: &str) -> DbCatalog {
        DbCatalog {
            name: name.to_owned(),
            schema: RwLock::new(HashMap::new()),
            series: std::array::from_fn(|_| RwLock::new(IdSet::default())),
            series_count: AtomicU64::new(0),
            slow: Mutex::new(SlowState::default()),
        }
    }
}

#[inline]
fn shard_of(id: u64) -> usize {
    (id >> 60) as usize % SHARDS
}

/// In-memory schema and series registry of all databases. `Sync`; share it behind an `Arc`.
pub struct Catalog {
    limits: Limits,
    dbs: RwLock<HashMap<String, Arc<DbCatalog>>>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("limits", &self.limits)
            .field("databases", &self.dbs.read().len())
            .finish()
    }
}

/// Per-request, per-measurement resolution: column layout and types.
#[derive(Debug, Clone)]
pub struct MeasurementPlan<'b> {
    /// Measurement name.
    pub name: &'b [u8],
    /// Tag keys in first-seen order; `tag_cols` index into this.
    pub tag_keys: Vec<&'b [u8]>,
    /// Fields in first-seen order with their (winning) type; `field_cols` index into this.
    pub fields: Vec<(&'b [u8], FieldType)>,
    /// Accepted points of this measurement (rows of its batch).
    pub rows: usize,
    field_new: Vec<bool>,
    field_used: Vec<bool>,
}

/// Result of [`Catalog::resolve`]: which points are accepted and where their values go.
#[derive(Debug, Default)]
pub struct Resolution<'b> {
    /// Indices (into the batch's points) of accepted points, in input order.
    pub accepted: Vec<u32>,
    /// Per point: index into `measurements` (meaningful for accepted points).
    pub point_meas: Vec<u32>,
    /// Per entry of the batch's tag pool: column index in its measurement's `tag_keys`.
    pub tag_cols: Vec<u32>,
    /// Per entry of the batch's field pool: column index in its measurement's `fields`.
    pub field_cols: Vec<u32>,
    /// Measurements seen in this request.
    pub measurements: Vec<MeasurementPlan<'b>>,
    /// Points dropped after parsing, grouped by reason (first-seen order).
    pub dropped: Vec<DroppedPoint>,
    /// Number of dropped points.
    pub dropped_count: usize,
    /// New metadata records to persist with this request's data.
    pub meta: Vec<MetaRecord>,
    /// Series created by this request.
    pub new_series: usize,
}

struct Drops {
    list: Vec<DroppedPoint>,
    index: HashMap<String, usize>,
    count: usize,
}

impl Drops {
    fn add(&mut self, kind: DropKind, reason: String) {
        self.count += 1;
        if let Some(&i) = self.index.get(&reason) {
            self.list[i].count += 1;
        } else {
            self.index.insert(reason.clone(), self.list.len());
            self.list.push(DroppedPoint {
                kind,
                reason,
                count: 1,
            });
        }
    }
}

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

fn conflict_reason(field: &[u8], meas: &[u8], got: FieldType, have: FieldType) -> String {
    format!(
        "field type conflict: input field \"{}\" on measurement \"{}\" is type {}, already exists as type {}",
        lossy(field),
        lossy(meas),
        got.name(),
        have.name()
    )
}

fn column_conflict_reason(what: &str, key: &[u8], meas: &[u8], other: &str) -> String {
    format!(
        "conflicting field and tag key: input {what} \"{}\" on measurement \"{}\" is already a {other} key",
        lossy(key),
        lossy(meas)
    )
}

fn push_lp(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_be_bytes());
    out.extend_from_slice(b);
}

fn record_key(kind: u8, parts: &[&[u8]]) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + parts.iter().map(|p| p.len() + 4).sum::<usize>());
    k.extend_from_slice(RECORD_PREFIX);
    k.push(kind);
    for p in parts {
        push_lp(&mut k, p);
    }
    k
}

fn series_record(db: &str, id: u64, canonical: Vec<u8>) -> MetaRecord {
    let mut k = record_key(b'S', &[db.as_bytes()]);
    k.extend_from_slice(&id.to_be_bytes());
    (k, canonical)
}

/// Reads `lp(x)` records from a key body.
fn split_lp(mut b: &[u8], max: usize) -> Option<(Vec<&[u8]>, &[u8])> {
    let mut parts = Vec::new();
    while b.len() >= 4 && parts.len() < max {
        let n = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        if b.len() - 4 < n {
            return None;
        }
        parts.push(&b[4..4 + n]);
        b = &b[4 + n..];
    }
    Some((parts, b))
}

impl Catalog {
    /// An empty catalog with the given limits.
    pub fn new(limits: Limits) -> Catalog {
        Catalog {
            limits,
            dbs: RwLock::new(HashMap::new()),
        }
    }

    /// The configured limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Rebuilds a catalog from persisted metadata records (any order). Records whose key does
    /// not start with [`RECORD_PREFIX`] are ignored.
    pub fn load<I, K, V>(limits: Limits, records: I) -> Result<Catalog, CatalogError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let cat = Catalog::new(limits);
        for (k, v) in records {
            let (k, v) = (k.as_ref(), v.as_ref());
            if !k.starts_with(RECORD_PREFIX) || k.len() < RECORD_PREFIX.len() + 1 {
                continue;
            }
            let corrupt = |reason| CatalogError::CorruptRecord {
                key: k.to_vec(),
                reason,
            };
            let kind = k[RECORD_PREFIX.len()];
            let max_parts = if kind == b'S' { 1 } else { 4 };
            let (parts, rest) = split_lp(&k[RECORD_PREFIX.len() + 1..], max_parts)
                .ok_or(corrupt("bad length prefix"))?;
            let db_name = parts.first().ok_or(corrupt("missing database"))?;
            let db_name =
                std::str::from_utf8(db_name).map_err(|_| corrupt("database is not UTF-8"))?;
            let db = cat.db(db_name);
            match kind {
                b'M' | b'F' | b'T' | b'V' => {
                    let want = match kind {
                        b'M' => 2,
                        b'F' | b'T' => 3,
                        _ => 4,
                    };
                    if parts.len() != want || !rest.is_empty() {
                        return Err(corrupt("wrong number of key parts"));
                    }
                    let mut schema = db.schema.write();
                    let m = schema.entry(parts[1].to_vec()).or_default();
                    match kind {
                        b'F' => {
                            let t = v
                                .first()
                                .and_then(|&b| FieldType::from_u8(b))
                                .filter(|_| v.len() == 1)
                                .ok_or(corrupt("bad field type"))?;
                            m.fields.insert(parts[2].to_vec(), t);
                        }
                        b'T' => {
                            m.tag_keys.insert(parts[2].to_vec());
                        }
                        b'V' => {
                            m.tag_keys.insert(parts[2].to_vec());
                            db.slow
                                .lock()
                                .tag_values
                                .entry((parts[1].to_vec(), parts[2].to_vec()))
                                .or_default()
                                .insert(xxh3_64(parts[3]));
                        }
                        _ => {}
                    }
                }
                b'S' => {
                    if parts.len() != 1 || rest.len() != 8 {
                        return Err(corrupt("bad series record"));
                    }
                    let id =
                        u64::from_be_bytes(rest.try_into().map_err(|_| corrupt("bad series id"))?);
                    if db.series[shard_of(id)].write().insert(id) {
                        db.series_count.fetch_add(1, Ordering::Relaxed);
                    }
                }
                _ => return Err(corrupt("unknown record kind")),
            }
        }
        Ok(cat)
    }

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

    /// The type of a field, if known.
    pub fn field_type(&self, db: &str, measurement: &[u8], field: &[u8]) -> Option<FieldType> {
        let db = self.dbs.read().get(db)?.clone();
        let schema = db.schema.read();
        schema.get(measurement)?.fields.get(field).copied()
    }

    /// Number of series in `db`.
    pub fn series_count(&self, db: &str) -> u64 {
        self.dbs
            .read()
            .get(db)
            .map_or(0, |d| d.series_count.load(Ordering::Relaxed))
    }

    /// Number of measurements in `db`.
    pub fn measurement_count(&self, db: &str) -> usize {
        self.dbs.read().get(db).map_or(0, |d| d.schema.read().len())
    }

    /// Number of distinct values of `tag_key` in `measurement` of `db`.
    pub fn tag_value_count(&self, db: &str, measurement: &[u8], tag_key: &[u8]) -> usize {
        self.dbs.read().get(db).map_or(0, |d| {
            d.slow
                .lock()
                .tag_values
                .get(&(measurement.to_vec(), tag_key.to_vec()))
                .map_or(0, |s| s.len())
        })
    }

    /// Forgets everything known of `db` (`DROP DATABASE`): its measurements, field types,
    /// tags, series and their counts. Returns the key prefixes of its persisted records, which
    /// the caller deletes in the same durable write that records the drop, so a restart does
    /// not bring them back.
    pub fn drop_database(&self, db: &str) -> Vec<Vec<u8>> {
        self.dbs.write().remove(db);
        [b'M', b'F', b'T', b'V', b'S']
            .iter()
            .map(|kind| record_key(*kind, &[db.as_bytes()]))
            .collect()
    }

    /// Names of the databases known.
    pub fn databases(&self) -> Vec<String> {
        let mut v: Vec<String> = self.dbs.read().values().map(|d| d.name.clone()).collect();
        v.sort();
        v
    }

    /// Resolves series, field types and limits for the points of `batch` written to `db`, in
    /// input order; registers what is new and returns the records to persist.
    pub fn resolve<'b>(&self, db_name: &str, batch: &'b ParsedBatch<'_>) -> Resolution<'b> {
        let db = self.db(db_name);
        let n = batch.points.len();
        let mut res = Resolution {
            accepted: Vec::with_capacity(n),
            point_meas: vec![u32::MAX; n],
            tag_cols: vec![u32::MAX; batch.tags.len()],
            field_cols: vec![u32::MAX; batch.fields.len()],
            ..Resolution::default()
        };
        let mut drops = Drops {
            list: Vec::new(),
            index: HashMap::new(),
            count: 0,
        };
        // Pass 1: field types (catalog read lock only for fields first seen in this request).
        let mut ok = vec![false; n];
        // Few measurements per request: a linear scan with cheap comparisons beats hashing;
        // beyond SMALL a map takes over.
        const SMALL: usize = 16;
        let mut meas_index: HashMap<&'b [u8], u32> = HashMap::new();
        for (pi, p) in batch.points.iter().enumerate() {
            let mname: &'b [u8] = batch.own_bytes(p.measurement);
            let found = if res.measurements.len() <= SMALL {
                res.measurements
                    .iter()
                    .position(|m| same(m.name, mname))
                    .map(|i| i as u32)
            } else {
                meas_index.get(mname).copied()
            };
            let mi = match found {
                Some(i) => i,
                None => {
                    res.measurements.push(MeasurementPlan {
                        name: mname,
                        tag_keys: Vec::new(),
                        fields: Vec::new(),
                        rows: 0,
                        field_new: Vec::new(),
                        field_used: Vec::new(),
                    });
                    let i = (res.measurements.len() - 1) as u32;
                    if res.measurements.len() == SMALL + 1 {
                        for (j, m) in res.measurements.iter().enumerate() {
                            meas_index.insert(m.name, j as u32);
                        }
                    } else if res.measurements.len() > SMALL {
                        meas_index.insert(mname, i);
                    }
                    i
                }
            };
            res.point_meas[pi] = mi;
            let plan = &mut res.measurements[mi as usize];
            if p.fields.is_empty() {
                drops.add(
                    DropKind::InvalidField,
                    format!(
                        "invalid field name: input field \"time\" on measurement \"{}\" is invalid",
                        lossy(mname)
                    ),
                );
                continue;
            }
            let mut conflict: Option<(DropKind, String)> = None;
            for (j, fi) in (p.fields.start as usize..p.fields.end as usize).enumerate() {
                let (key, value) = batch.fields[fi];
                let key: &'b [u8] = batch.own_bytes(key);
                let col = match plan.fields.get(j) {
                    Some((name, _)) if same(name, key) => j,
                    _ => match plan.fields.iter().position(|(name, _)| same(name, key)) {
                        Some(c) => c,
                        None => {
                            let (known, is_tag) = {
                                let schema = db.schema.read();
                                let m = schema.get(mname);
                                (
                                    m.and_then(|m| m.fields.get(key).copied()),
                                    m.is_some_and(|m| m.tag_keys.contains(key)),
                                )
                            };
                            // One name cannot be both a tag column and a field column.
                            if is_tag || plan.tag_keys.iter().any(|t| same(t, key)) {
                                conflict = Some((
                                    DropKind::ColumnConflict,
                                    column_conflict_reason("field", key, mname, "tag"),
                                ));
                                break;
                            }
                            plan.fields.push((key, known.unwrap_or(value.field_type())));
                            plan.field_new.push(known.is_none());
                            plan.field_used.push(false);
                            plan.fields.len() - 1
                        }
                    },
                };
                res.field_cols[fi] = col as u32;
                let have = plan.fields[col].1;
                if have != value.field_type() && conflict.is_none() {
                    conflict = Some((
                        DropKind::TypeConflict,
                        conflict_reason(key, mname, value.field_type(), have),
                    ));
                }
            }
            if conflict.is_none() {
                for (j, ti) in (p.tags.start as usize..p.tags.end as usize).enumerate() {
                    let key: &'b [u8] = batch.own_bytes(batch.tags[ti].0);
                    let col = match plan.tag_keys.get(j) {
                        Some(name) if same(name, key) => j,
                        _ => match plan.tag_keys.iter().position(|name| same(name, key)) {
                            Some(c) => c,
                            None => {
                                let is_field = plan.fields.iter().any(|(f, _)| same(f, key))
                                    || db
                                        .schema
                                        .read()
                                        .get(mname)
                                        .is_some_and(|m| m.fields.contains_key(key));
                                if is_field {
                                    conflict = Some((
                                        DropKind::ColumnConflict,
                                        column_conflict_reason("tag", key, mname, "field"),
                                    ));
                                    break;
                                }
                                plan.tag_keys.push(key);
                                plan.tag_keys.len() - 1
                            }
                        },
                    };
                    res.tag_cols[ti] = col as u32;
                }
            }
            if let Some((kind, reason)) = conflict {
                drops.add(kind, reason);
                continue;
            }
            ok[pi] = true;
        }

        // Pass 2: series. Known series: one lookup under read locks held for the pass.
        let mut misses = Vec::new();
        {
            let guards: Vec<_> = db.series.iter().map(|s| s.read()).collect();
            for (pi, p) in batch.points.iter().enumerate() {
                if ok[pi] && !guards[shard_of(p.series_id)].contains(&p.series_id) {
                    misses.push(pi);
                }
            }
        }
        if !misses.is_empty() {
            self.create_series(&db, batch, &misses, &mut ok, &mut drops, &mut res);
        }

        // Pass 3: register fields first seen in this request (first type wins, also across
        // concurrent requests: a lost race turns into conflicts for this request's points).
        let mut raced: Vec<(u32, usize, FieldType)> = Vec::new();
        let any_new = res
            .measurements
            .iter()
            .any(|m| m.field_new.iter().any(|n| *n));
        for (pi, p) in batch.points.iter().enumerate() {
            // Warm path (no field new to the catalog): nothing to mark.
            if any_new && ok[pi] {
                let plan = &mut res.measurements[res.point_meas[pi] as usize];
                for fi in p.fields.start as usize..p.fields.end as usize {
                    plan.field_used[res.field_cols[fi] as usize] = true;
                }
            }
        }
        if res
            .measurements
            .iter()
            .any(|m| m.field_new.iter().zip(&m.field_used).any(|(n, u)| *n && *u))
        {
            let mut schema = db.schema.write();
            for (mi, plan) in res.measurements.iter_mut().enumerate() {
                for c in 0..plan.fields.len() {
                    if !(plan.field_new[c] && plan.field_used[c]) {
                        continue;
                    }
                    let (fname, ftype) = plan.fields[c];
                    let m = schema.entry(plan.name.to_vec()).or_default();
                    match m.fields.get(fname) {
                        Some(&existing) if existing != ftype => {
                            plan.fields[c].1 = existing;
                            raced.push((mi as u32, c, existing));
                        }
                        Some(_) => {}
                        None => {
                            m.fields.insert(fname.to_vec(), ftype);
                            res.meta.push((
                                record_key(b'F', &[db_name.as_bytes(), plan.name, fname]),
                                vec![ftype as u8],
                            ));
                        }
                    }
                }
            }
        }
        if !raced.is_empty() {
            for (pi, p) in batch.points.iter().enumerate() {
                if !ok[pi] {
                    continue;
                }
                let mi = res.point_meas[pi];
                for fi in p.fields.start as usize..p.fields.end as usize {
                    let c = res.field_cols[fi] as usize;
                    if let Some(&(_, _, have)) =
                        raced.iter().find(|(m, rc, _)| *m == mi && *rc == c)
                    {
                        let (key, value) = batch.fields[fi];
                        let key = batch.bytes(key);
                        if value.field_type() != have {
                            let name = res.measurements[mi as usize].name;
                            drops.add(
                                DropKind::TypeConflict,
                                conflict_reason(key, name, value.field_type(), have),
                            );
                            ok[pi] = false;
                            break;
                        }
                    }
                }
            }
        }

        for (pi, keep) in ok.iter().enumerate() {
            if *keep {
                res.accepted.push(pi as u32);
                res.measurements[res.point_meas[pi] as usize].rows += 1;
            }
        }
        res.dropped = drops.list;
        res.dropped_count = drops.count;
        res
    }

    /// Slow path: series not yet in the registry. Serialised per database so limits are exact.
    fn create_series<'b>(
        &self,
        db: &DbCatalog,
        batch: &'b ParsedBatch<'_>,
        misses: &[usize],
        ok: &mut [bool],
        drops: &mut Drops,
        res: &mut Resolution<'b>,
    ) {
        let limits = self.limits;
        let mut slow = db.slow.lock();
        for &pi in misses {
            let p = &batch.points[pi];
            let shard = &db.series[shard_of(p.series_id)];
            if shard.read().contains(&p.series_id) {
                continue; // created earlier in this request or by a concurrent one
            }
            let mname: &[u8] = batch.measurement(p);
            // Slow path (a series new to the registry): materialise the pairs once.
            let tags: Vec<(&[u8], &[u8])> = batch.tags_of(p).collect();
            let tags = &tags[..];
            // Limits, checked before anything is registered.
            let (meas_known, mcount) = {
                let schema = db.schema.read();
                (schema.contains_key(mname), schema.len() as u64)
            };
            if !meas_known
                && limits.max_measurements_per_database > 0
                && mcount >= limits.max_measurements_per_database
            {
                drops.add(
                    DropKind::Limit,
                    format!(
                        "max-measurements-per-database limit exceeded: ({}) database=\"{}\" measurement=\"{}\"",
                        limits.max_measurements_per_database,
                        db.name,
                        lossy(mname)
                    ),
                );
                ok[pi] = false;
                continue;
            }
            if limits.max_series_per_database > 0
                && db.series_count.load(Ordering::Relaxed) >= limits.max_series_per_database
            {
                drops.add(
                    DropKind::Limit,
                    format!(
                        "max-series-per-database limit exceeded: ({})",
                        limits.max_series_per_database
                    ),
                );
                ok[pi] = false;
                continue;
            }
            let mut over = None;
            if limits.max_values_per_tag > 0 {
                for (k, v) in tags {
                    let set = slow.tag_values.get(&(mname.to_vec(), k.to_vec()));
                    let have = set.map_or(0, |s| s.len() as u64);
                    let new = !set.is_some_and(|s| s.contains(&xxh3_64(v)));
                    if new && have >= limits.max_values_per_tag {
                        over = Some(format!(
                            "max-values-per-tag limit exceeded ({}/{}): measurement=\"{}\" tag=\"{}\" value=\"{}\"",
                            have,
                            limits.max_values_per_tag,
                            lossy(mname),
                            lossy(k),
                            lossy(v)
                        ));
                        break;
                    }
                }
            }
            if let Some(reason) = over {
                drops.add(DropKind::Limit, reason);
                ok[pi] = false;
                continue;
            }
            // Register measurement, tag keys, tag values, series.
            let dbn = db.name.as_bytes();
            {
                let mut schema = db.schema.write();
                let m = match schema.get_mut(mname) {
                    Some(m) => m,
                    None => {
                        res.meta.push((record_key(b'M', &[dbn, mname]), Vec::new()));
                        schema.entry(mname.to_vec()).or_default()
                    }
                };
                for (k, _) in tags {
                    if !m.tag_keys.contains(*k) {
                        m.tag_keys.insert(k.to_vec());
                        res.meta
                            .push((record_key(b'T', &[dbn, mname, k]), Vec::new()));
                    }
                }
            }
            for (k, v) in tags {
                if slow
                    .tag_values
                    .entry((mname.to_vec(), k.to_vec()))
                    .or_default()
                    .insert(xxh3_64(v))
                {
                    res.meta
                        .push((record_key(b'V', &[dbn, mname, k, v]), Vec::new()));
                }
            }
            let mut canonical = Vec::new();
            write_series_key(&mut canonical, mname, tags);
            shard.write().insert(p.series_id);
            db.series_count.fetch_add(1, Ordering::Relaxed);
            res.meta
                .push(series_record(&db.name, p.series_id, canonical));
            res.new_series += 1;
        }
    }
}
