//! Tables in the engine: one chDB database per chingest database, one MergeTree
//! table per measurement, created and widened on demand, and the coalescing of
//! many request batches into one insertable `RecordBatch`.
//!
//! Table layout (`<db>.<measurement>`):
//!
//! | column | type | notes |
//! |---|---|---|
//! | `time` | `DateTime64(9, 'UTC')` | nanoseconds |
//! | `series_id` | `UInt64` | xxh3 of the canonical series key (ingest) |
//! | `__seq` | `UInt64` | WAL sequence of the request that wrote the row |
//! | `__row` | `UInt32` | row index within that request's batch |
//! | one per tag key | `LowCardinality(String)` | `''` where a point lacks the tag |
//! | one per field | `Nullable(Float64/Int64/UInt64/String/Bool)` | NULL where a point lacks the field |
//!
//! `ORDER BY (series_id, time)`, measured against the alternatives by
//! `benches/sort_key.rs` (docs/architecture.md has the table): per-series
//! reads — last value, one host's panel — are fastest with the series
//! leading, rows of a series stay contiguous and time-ordered (delta codecs,
//! "last value" is a tail read); cross-series time-range aggregates would
//! prefer time first. There is no partition key on purpose: an INSERT of one
//! block then creates exactly one part, atomically, which is what makes
//! replay checkable by `__seq` (see `replay.rs`). (Minmax skip indexes on
//! `time` and `__seq` would help time pruning and the replay check, but
//! libchdb 26.7.3 crashes when the last connection closes on a table that
//! has one; docs/architecture.md lists the engine facts.)
//!
//! `(__seq, __row)` is the point version: monotonic in write order, so a later
//! request always wins even when its row index is smaller. [`merged_select`]
//! is the documented read form that applies InfluxDB's point identity.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{new_null_array, ArrayRef, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow::compute::{cast, concat_batches};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::error::{EngineError, Result};
use crate::pool::PooledConnection;
use crate::quote::{quote_ident, quote_string};

/// Column holding the point's time.
pub const TIME: &str = "time";
/// Column holding the series id.
pub const SERIES_ID: &str = "series_id";
/// Column holding the WAL sequence of the writing request.
pub const SEQ: &str = "__seq";
/// Column holding the row index within the writing request.
pub const ROW: &str = "__row";

/// What a batch column is, as the flusher stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ColumnKind {
    /// A tag: `LowCardinality(String)`.
    Tag,
    /// A float field.
    Float,
    /// A signed integer field.
    Integer,
    /// An unsigned integer field.
    Unsigned,
    /// A string field.
    String,
    /// A boolean field.
    Boolean,
}

impl ColumnKind {
    /// The kind of a user column of an ingest batch: tags are non-null Utf8
    /// (or carry `chingest.role = tag` metadata), fields are nullable.
    pub fn of(field: &Field) -> Option<ColumnKind> {
        let tag_meta = field.metadata().get("chingest.role").map(String::as_str) == Some("tag");
        Some(match field.data_type() {
            DataType::Utf8 if tag_meta || !field.is_nullable() => ColumnKind::Tag,
            DataType::Utf8 => ColumnKind::String,
            DataType::Float64 => ColumnKind::Float,
            DataType::Int64 => ColumnKind::Integer,
            DataType::UInt64 => ColumnKind::Unsigned,
            DataType::Boolean => ColumnKind::Boolean,
            _ => return None,
        })
    }

    /// The engine column type.
    pub fn sql_type(self) -> &'static str {
        match self {
            ColumnKind::Tag => "LowCardinality(String)",
            ColumnKind::Float => "Nullable(Float64)",
            ColumnKind::Integer => "Nullable(Int64)",
            ColumnKind::Unsigned => "Nullable(UInt64)",
            ColumnKind::String => "Nullable(String)",
            ColumnKind::Boolean => "Nullable(Bool)",
        }
    }

    fn arrow_type(self) -> DataType {
        match self {
            ColumnKind::Tag | ColumnKind::String => DataType::Utf8,
            ColumnKind::Float => DataType::Float64,
            ColumnKind::Integer => DataType::Int64,
            ColumnKind::Unsigned => DataType::UInt64,
            ColumnKind::Boolean => DataType::Boolean,
        }
    }
}

/// `db`.`table`, quoted.
pub fn qualified(db: &str, table: &str) -> String {
    format!("{}.{}", quote_ident(db), quote_ident(table))
}

/// The user columns (tags and fields) of `schema`, in order, skipping `time`
/// and `series_id`.
pub fn user_columns(schema: &Schema) -> Result<Vec<(String, ColumnKind)>> {
    schema
        .fields()
        .iter()
        .filter(|f| f.name() != TIME && f.name() != SERIES_ID)
        .map(|f| {
            ColumnKind::of(f)
                .map(|k| (f.name().clone(), k))
                .ok_or_else(|| {
                    EngineError::Arrow(format!(
                        "column {:?} has type {} which the flusher does not store",
                        f.name(),
                        f.data_type()
                    ))
                })
        })
        .collect()
}

/// MergeTree settings of every measurement table: durable parts before the WAL
/// is truncated (`fsync_*`), merges tuned for sustained ingest, and granules of
/// 2,048 rows in 16 KiB compressed blocks. A read of a few series' hours needs
/// a few hundred rows per series, but the engine decompresses whole blocks
/// (64 KiB at least by default, 8,192 rows of a column): with the smaller
/// granules and blocks a 10-field read of 8 series' 8 hours took 15 ms instead
/// of 21 on the 200-host TSBS table, whole-table reads took the same time, and
/// the table grew by ~2 % (docs/influxql.md). Tables keep the settings they
/// were created with.
pub const TABLE_SETTINGS: &str = "fsync_after_insert = 1, fsync_part_directory = 1, \
     vertical_merge_algorithm_min_columns_to_activate = 1, merge_selector_base = 10, \
     index_granularity = 2048, min_compress_block_size = 16384, max_compress_block_size = 16384";

/// The columns the engine has for each table this process has touched.
#[derive(Debug, Default)]
pub struct TableCache {
    tables: HashMap<(String, String), HashMap<String, ColumnKind>>,
    databases: std::collections::HashSet<String>,
    retention: HashMap<String, u64>,
}

/// The `TTL` clause of a measurement table kept for `secs` seconds: rows whose
/// `time` is older are deleted by the engine's background merges (checked at
/// least every `merge_with_ttl_timeout`, 4 h by default), not at once.
pub fn ttl_clause(secs: u64) -> String {
    format!("TTL toDateTime(time) + toIntervalSecond({secs})")
}

impl TableCache {
    /// Keeps `db`'s tables created from now on for `secs` seconds (0 = forever).
    pub fn set_retention(&mut self, db: &str, secs: u64) {
        if secs == 0 {
            self.retention.remove(db);
        } else {
            self.retention.insert(db.to_string(), secs);
        }
    }

    /// Makes sure `db`.`measurement` exists with every column of `columns`,
    /// creating the database, the table and missing columns as needed.
    pub fn ensure(
        &mut self,
        conn: &PooledConnection,
        db: &str,
        measurement: &str,
        columns: &[(String, ColumnKind)],
    ) -> Result<()> {
        if !self.databases.contains(db) {
            conn.execute(&format!(
                "CREATE DATABASE IF NOT EXISTS {}",
                quote_ident(db)
            ))?;
            self.databases.insert(db.to_string());
        }
        let key = (db.to_string(), measurement.to_string());
        if !self.tables.contains_key(&key) {
            let table = qualified(db, measurement);
            let mut ddl = format!(
                "CREATE TABLE IF NOT EXISTS {table} (`time` DateTime64(9, 'UTC') CODEC(DoubleDelta, LZ4), \
                 `series_id` UInt64, `__seq` UInt64, `__row` UInt32"
            );
            for (name, kind) in columns {
                ddl.push_str(&format!(", {} {}", quote_ident(name), kind.sql_type()));
            }
            // No data-skipping indexes: with libchdb 26.7.3 a minmax index
            // makes the engine crash when its last connection closes.
            // Background merges are the server's largest CPU consumer under
            // sustained ingest, so the table merges column by column (cheaper
            // per row, `--bench merge_cost`) and less often: a merge-selector
            // base of 10 instead of 5 rewrites each row fewer times at the cost
            // of more parts between merges (docs/architecture.md).
            ddl.push_str(") ENGINE = MergeTree ORDER BY (series_id, time) ");
            if let Some(secs) = self.retention.get(db) {
                ddl.push_str(&ttl_clause(*secs));
                ddl.push(' ');
            }
            ddl.push_str(&format!("SETTINGS {TABLE_SETTINGS}"));
            conn.execute(&ddl)?;
            let existing = describe(conn, db, measurement)?;
            self.tables.insert(key.clone(), existing);
        }
        let known = self.tables.get_mut(&key).expect("inserted above");
        for (name, kind) in columns {
            if known.contains_key(name) {
                continue;
            }
            conn.execute(&format!(
                "ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {}",
                qualified(db, measurement),
                quote_ident(name),
                kind.sql_type()
            ))?;
            known.insert(name.clone(), *kind);
        }
        Ok(())
    }

    /// Forgets what is known of one table, so the next insert asks the engine again
    /// (after a failed insert: the table may have been dropped or altered behind our back;
    /// after `DROP MEASUREMENT`: its next insert creates it again).
    pub fn forget_table(&mut self, db: &str, measurement: &str) {
        self.databases.remove(db);
        self.tables
            .remove(&(db.to_string(), measurement.to_string()));
    }

    /// Forgets what is known of `db` (after `DROP DATABASE`).
    pub fn forget_database(&mut self, db: &str) {
        self.databases.remove(db);
        self.retention.remove(db);
        self.tables.retain(|(d, _), _| d != db);
    }
}

/// The user columns the engine has for a table.
fn describe(
    conn: &PooledConnection,
    db: &str,
    measurement: &str,
) -> Result<HashMap<String, ColumnKind>> {
    let out = conn.query(
        &format!(
            "SELECT name, type FROM system.columns WHERE database = {} AND table = {}",
            quote_string(db),
            quote_string(measurement)
        ),
        chdb_rust::format::OutputFormat::TabSeparatedRaw,
    )?;
    let text = String::from_utf8_lossy(&out);
    let mut cols = HashMap::new();
    for line in text.lines() {
        let Some((name, ty)) = line.split_once('\t') else {
            continue;
        };
        let kind = match ty {
            "LowCardinality(String)" => ColumnKind::Tag,
            "Nullable(Float64)" => ColumnKind::Float,
            "Nullable(Int64)" => ColumnKind::Integer,
            "Nullable(UInt64)" => ColumnKind::Unsigned,
            "Nullable(String)" => ColumnKind::String,
            "Nullable(Bool)" => ColumnKind::Boolean,
            _ => continue,
        };
        cols.insert(name.to_string(), kind);
    }
    Ok(cols)
}

/// One request's batch for a measurement, with the WAL sequence that wrote it.
#[derive(Debug, Clone)]
pub struct Part {
    /// WAL sequence of the request.
    pub seq: u64,
    /// The ingest batch (layout: docs/architecture.md).
    pub batch: RecordBatch,
}

/// Coalesces `parts` of one measurement into one batch in the engine's column
/// order: `time` as Timestamp(ns, UTC), `series_id`, `__seq`, `__row`, then the
/// union of user columns in order of first appearance. A part lacking a tag
/// gets `""`, lacking a field gets NULL.
pub fn coalesce(parts: &[Part]) -> Result<(RecordBatch, Vec<(String, ColumnKind)>)> {
    let mut columns: Vec<(String, ColumnKind)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for p in parts {
        for (name, kind) in user_columns(p.batch.schema_ref())? {
            if let Some(&i) = index.get(&name) {
                if columns[i].1 != kind {
                    return Err(EngineError::Arrow(format!(
                        "column {name:?} is {:?} in one batch and {kind:?} in another",
                        columns[i].1
                    )));
                }
            } else {
                index.insert(name.clone(), columns.len());
                columns.push((name, kind));
            }
        }
    }
    let schema = engine_schema(&columns);
    let aligned = parts
        .iter()
        .map(|p| align(&p.batch, p.seq, &schema, &columns))
        .collect::<Result<Vec<_>>>()?;
    let arrow_err = |e: arrow::error::ArrowError| EngineError::Arrow(e.to_string());
    let batch = concat_batches(&schema, &aligned).map_err(arrow_err)?;
    Ok((batch, columns))
}

/// The engine's column order for `columns`: `time` as Timestamp(ns, UTC),
/// `series_id`, `__seq`, `__row`, then `columns`.
pub fn engine_schema(columns: &[(String, ColumnKind)]) -> SchemaRef {
    let mut fields = vec![
        Field::new(TIME, time_type(), false),
        Field::new(SERIES_ID, DataType::UInt64, false),
        Field::new(SEQ, DataType::UInt64, false),
        Field::new(ROW, DataType::UInt32, false),
    ];
    for (name, kind) in columns {
        fields.push(Field::new(
            name,
            kind.arrow_type(),
            *kind != ColumnKind::Tag,
        ));
    }
    Arc::new(Schema::new(fields))
}

fn time_type() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
}

/// One request's ingest batch in `schema` ([`engine_schema`] of `columns`):
/// `__seq` is `seq`, `__row` the row's index in the batch; a missing tag is
/// `""`, a missing field NULL.
pub fn align(
    batch: &RecordBatch,
    seq: u64,
    schema: &SchemaRef,
    columns: &[(String, ColumnKind)],
) -> Result<RecordBatch> {
    let arrow_err = |e: arrow::error::ArrowError| EngineError::Arrow(e.to_string());
    let n = batch.num_rows();
    let time = batch
        .column_by_name(TIME)
        .ok_or_else(|| EngineError::Arrow("batch has no time column".into()))?;
    let series = batch
        .column_by_name(SERIES_ID)
        .ok_or_else(|| EngineError::Arrow("batch has no series_id column".into()))?;
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    cols.push(cast(time, &time_type()).map_err(arrow_err)?);
    cols.push(series.clone());
    cols.push(Arc::new(UInt64Array::from_value(seq, n)));
    cols.push(Arc::new(UInt32Array::from_iter_values(0..n as u32)));
    for (name, kind) in columns {
        let col: ArrayRef = match batch.column_by_name(name) {
            Some(c) if c.data_type() == &kind.arrow_type() => c.clone(),
            Some(c) => cast(c, &kind.arrow_type()).map_err(arrow_err)?,
            None if *kind == ColumnKind::Tag => {
                Arc::new(StringArray::from_iter_values(std::iter::repeat_n("", n)))
            }
            None => new_null_array(&kind.arrow_type(), n),
        };
        cols.push(col);
    }
    RecordBatch::try_new(schema.clone(), cols).map_err(arrow_err)
}

/// INSERT settings that make a batch of `rows` rows land as one block, hence
/// one part, atomically: what keeps replay's `__seq` check exact. `threads`
/// caps the engine threads of the insert (`max_threads`; 0 = the engine's
/// default).
pub fn single_part_settings(rows: usize, threads: usize) -> Vec<(&'static str, String)> {
    let mut s = vec![
        ("max_insert_block_size", (rows + 1).to_string()),
        ("max_block_size", (rows + 1).to_string()),
        ("min_insert_block_size_rows", (rows + 1).to_string()),
        ("min_insert_block_size_bytes", "0".to_string()),
    ];
    if threads > 0 {
        s.push(("max_threads", threads.to_string()));
    }
    s
}

/// The read form that applies InfluxDB's point identity to `db`.`measurement`:
/// one row per (series, time), each field the value of the latest write that
/// carried it (`argMaxIf` over the version `(__seq, __row)`), each tag as
/// written. `columns` are the table's user columns.
pub fn merged_select(db: &str, measurement: &str, columns: &[(String, ColumnKind)]) -> String {
    let mut sql = String::from("SELECT `time`, `series_id`");
    for (name, kind) in columns {
        let q = quote_ident(name);
        if *kind == ColumnKind::Tag {
            sql.push_str(&format!(", any({q}) AS {q}"));
        } else {
            sql.push_str(&format!(
                ", argMaxIf({q}, (`__seq`, `__row`), {q} IS NOT NULL) AS {q}"
            ));
        }
    }
    sql.push_str(&format!(
        " FROM {} GROUP BY `series_id`, `time`",
        qualified(db, measurement)
    ));
    sql
}

/// The user columns the engine has for `db`.`measurement`, for [`merged_select`].
pub fn table_columns(
    conn: &PooledConnection,
    db: &str,
    measurement: &str,
) -> Result<Vec<(String, ColumnKind)>> {
    let mut cols: Vec<_> = describe(conn, db, measurement)?.into_iter().collect();
    cols.sort();
    Ok(cols)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int64Array};

    fn batch(tags: &[(&str, &str)], fields: &[(&str, f64)], time: i64) -> RecordBatch {
        let mut f = vec![
            Field::new(TIME, DataType::Int64, false),
            Field::new(SERIES_ID, DataType::UInt64, false),
        ];
        let mut c: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![time])),
            Arc::new(UInt64Array::from(vec![7])),
        ];
        for (k, v) in tags {
            f.push(Field::new(*k, DataType::Utf8, false));
            c.push(Arc::new(StringArray::from(vec![*v])));
        }
        for (k, v) in fields {
            f.push(Field::new(*k, DataType::Float64, true));
            c.push(Arc::new(Float64Array::from(vec![Some(*v)])));
        }
        RecordBatch::try_new(Arc::new(Schema::new(f)), c).unwrap()
    }

    #[test]
    fn coalesce_unions_columns_and_fills_gaps() {
        let parts = vec![
            Part {
                seq: 5,
                batch: batch(&[("host", "a")], &[("usage", 1.0)], 10),
            },
            Part {
                seq: 6,
                batch: batch(&[("region", "eu")], &[("idle", 2.0)], 20),
            },
        ];
        let (b, cols) = coalesce(&parts).unwrap();
        assert_eq!(
            cols,
            vec![
                ("host".to_string(), ColumnKind::Tag),
                ("usage".to_string(), ColumnKind::Float),
                ("region".to_string(), ColumnKind::Tag),
                ("idle".to_string(), ColumnKind::Float),
            ]
        );
        assert_eq!(b.num_rows(), 2);
        let host = b
            .column_by_name("host")
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!((host.value(0), host.value(1)), ("a", ""));
        let usage = b.column_by_name("usage").unwrap();
        assert!(usage.is_valid(0) && usage.is_null(1));
        let seq = b
            .column_by_name(SEQ)
            .unwrap()
            .as_any()
            .downcast_ref::<UInt64Array>()
            .unwrap();
        assert_eq!(seq.values(), &[5, 6]);
        assert!(matches!(
            b.schema().field(0).data_type(),
            DataType::Timestamp(TimeUnit::Nanosecond, _)
        ));
    }

    #[test]
    fn a_column_kind_conflict_is_an_error() {
        let mut f = vec![
            Field::new(TIME, DataType::Int64, false),
            Field::new(SERIES_ID, DataType::UInt64, false),
            Field::new("usage", DataType::Int64, true),
        ];
        let b2 = RecordBatch::try_new(
            Arc::new(Schema::new(std::mem::take(&mut f))),
            vec![
                Arc::new(Int64Array::from(vec![1])),
                Arc::new(UInt64Array::from(vec![1])),
                Arc::new(Int64Array::from(vec![1])),
            ],
        )
        .unwrap();
        let parts = vec![
            Part {
                seq: 1,
                batch: batch(&[], &[("usage", 1.0)], 1),
            },
            Part { seq: 2, batch: b2 },
        ];
        assert!(coalesce(&parts).is_err());
    }

    #[test]
    fn merged_select_uses_the_write_order_version() {
        let sql = merged_select(
            "db",
            "cpu",
            &[
                ("host".into(), ColumnKind::Tag),
                ("usage".into(), ColumnKind::Float),
            ],
        );
        assert_eq!(
            sql,
            "SELECT `time`, `series_id`, any(`host`) AS `host`, \
             argMaxIf(`usage`, (`__seq`, `__row`), `usage` IS NOT NULL) AS `usage` \
             FROM `db`.`cpu` GROUP BY `series_id`, `time`"
        );
    }
}
