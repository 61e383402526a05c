//! The hot store's refill (`crate::hot`, issue #44) reads a measurement's
//! points as every InfluxQL read does: the table's rows and the acknowledged
//! rows not flushed yet (`unflushed.rs`), merged into points (`sql::merged`:
//! last write wins, field by field), grouping only what the flusher's
//! identity index says may share a point. The answer comes back in ingest's
//! batch layout (docs/architecture.md: `time`, `series_id`, tags non-null
//! Utf8, fields nullable), what `hot::table::Table` merges.

use std::sync::Arc;

use engine::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray};
use engine::arrow::datatypes::{DataType, Field, Schema};
use engine::{quote_ident, SqlAccess, SqlCancel};
use flush::Rewrites;
use ingest::{FieldType, MeasurementSchema};

use super::error::InfluxqlError;
use super::plan::Plan;
use super::range::TimeRange;
use super::{sql, unflushed};
use crate::Storage;

/// Attempts of one read (a rewrite found while it ran, a first flush waited for).
const ATTEMPTS: usize = 4;

/// One read's answer.
pub(crate) enum Refilled {
    /// The points, in ingest's layout, ordered by series then time.
    Points(Vec<RecordBatch>),
    /// The engine's answer was larger than `[sql]` allows: read less at once.
    TooLarge,
}

impl Storage {
    /// The newest point time of `db`.`measurement`, in the engine or not
    /// flushed yet; `None` when it has none.
    pub(crate) fn newest_point(
        &self,
        db: &str,
        measurement: &str,
    ) -> Result<Option<i64>, InfluxqlError> {
        let engine = self.refill_engine()?;
        let unflushed = self
            .reads
            .unflushed()
            .parts(db, measurement, i64::MIN, i64::MAX)
            .iter()
            .map(|p| p.max_time)
            .max();
        let sql = format!(
            "SELECT max(toUnixTimestamp64Nano(`time`)), count() FROM {}",
            engine::table::qualified(db, measurement)
        );
        let mut answer = Vec::new();
        let ran = engine.sql_generated(
            engine::Lane::Background,
            &sql,
            engine::OutputFormat::TabSeparated,
            &SqlAccess::Admin,
            &SqlCancel::new(),
            &mut |block| {
                answer.extend_from_slice(block);
                true
            },
        );
        let in_table = match ran {
            Ok(_) => {
                let text = String::from_utf8_lossy(&answer);
                let mut cells = text.trim().split('\t');
                let newest = cells.next().and_then(|c| c.parse::<i64>().ok());
                let count = cells.next().and_then(|c| c.parse::<u64>().ok());
                match (newest, count) {
                    (Some(t), Some(n)) if n > 0 => Some(t),
                    (_, Some(0)) => None,
                    _ => {
                        return Err(InfluxqlError::EngineAnswer(format!(
                            "the newest point of {measurement:?}: {text:?}"
                        )))
                    }
                }
            }
            Err(engine::SqlError::Invalid(m)) if crate::read::not_flushed_yet(&m) => None,
            Err(e) => return Err(e.into()),
        };
        Ok(in_table.max(unflushed))
    }

    /// The points of `schema`'s measurement with a time in `[min, max]` (ns,
    /// inclusive; `i64::MAX`: unbounded) and a series id in `sids`
    /// (inclusive) as the engine's reads see them, in ingest's layout.
    ///
    /// Sliced by series id, not by time: the table is sorted by `(series_id,
    /// time)`, so a series-id range reads only its own granules, while a time
    /// range reads a granule of every series each time (issue #44: a refill
    /// of 8.64M points in 173 time slices took 63 s).
    pub(crate) fn refill_points(
        &self,
        db: &str,
        schema: &MeasurementSchema,
        (min, max): (i64, i64),
        sids: (u64, u64),
    ) -> Result<Refilled, InfluxqlError> {
        let mut plan = plan(db, schema, sids);
        plan.range.min = Some(min);
        plan.range.max = (max != i64::MAX).then_some(max);
        self.refill_read(schema, &plan, Shape::Points)
    }

    /// One row per series of `schema`'s measurement with a point before
    /// `before` (ns), its time 0 and its fields null: the series a refill
    /// from `before` on does not read, whose tags `SHOW TAG VALUES` lists all
    /// the same (`hot/refill.rs`).
    pub(crate) fn refill_series_before(
        &self,
        db: &str,
        schema: &MeasurementSchema,
        before: i64,
    ) -> Result<Refilled, InfluxqlError> {
        let mut plan = plan(db, schema, (0, u64::MAX));
        plan.range.max = Some(before.saturating_sub(1));
        self.refill_read(schema, &plan, Shape::SeriesOnly)
    }

    fn refill_read(
        &self,
        schema: &MeasurementSchema,
        plan: &Plan,
        shape: Shape,
    ) -> Result<Refilled, InfluxqlError> {
        let db = plan.db.as_str();
        let engine = self.refill_engine()?;
        let cancel = SqlCancel::new();
        for _ in 0..ATTEMPTS {
            // Every acknowledged write received first (the refill's argument,
            // `hot/refill.rs`, needs the snapshot to see at least them).
            let acked = self.wal.last_seq();
            let scan = unflushed::scan(
                &engine,
                self.reads.unflushed(),
                plan,
                schema,
                acked,
                self.row_limit(),
                &cancel,
            )?;
            let table = scan.as_ref().map(|s| move |k: usize| s.arrow.table_sql(k));
            let refs = scan
                .as_ref()
                .zip(table.as_ref())
                .map(|(s, t)| sql::Unflushed::new(t, s.min, s.max));
            let index = self.reads.identity();
            let snapshot = index
                .snapshot(&|| engine.connection(), db, &schema.name)
                .map_err(|e| {
                    engine::SqlError::Unavailable(format!(
                        "cannot read the table's point index: {e}"
                    ))
                })?;
            let merged = sql::merged(plan, &snapshot.rewrites, refs.as_ref());
            if let (Some(s), Some(r)) = (scan.as_ref(), refs.as_ref()) {
                s.arrow.register(r.used()).map_err(|e| {
                    engine::SqlError::Unavailable(format!(
                        "cannot read the points not flushed yet: {e}"
                    ))
                })?;
            }
            let statement = match shape {
                Shape::Points => {
                    let mut list = vec![
                        "toUnixTimestamp64Nano(`time`) AS `__refill_t`".to_string(),
                        "`__iq_sid` AS `__refill_sid`".to_string(),
                    ];
                    list.extend(plan.tags.iter().chain(&plan.fields).map(|c| quote_ident(c)));
                    format!(
                        "SELECT {} FROM ({merged}) ORDER BY `__refill_sid`, `__refill_t`",
                        list.join(", ")
                    )
                }
                Shape::SeriesOnly => {
                    // Tags only: the engine reads no field column.
                    let mut list = vec![
                        "toInt64(0) AS `__refill_t`".to_string(),
                        "`__iq_sid` AS `__refill_sid`".to_string(),
                    ];
                    list.extend(plan.tags.iter().map(|c| quote_ident(c)));
                    format!(
                        "SELECT {} FROM ({merged}) LIMIT 1 BY `__refill_sid`",
                        list.join(", ")
                    )
                }
            };
            let mut answer = Vec::new();
            let ran = engine.sql_generated(
                engine::Lane::Background,
                &statement,
                engine::OutputFormat::ArrowStream,
                &SqlAccess::Admin,
                &cancel,
                &mut |block| {
                    answer.extend_from_slice(block);
                    true
                },
            );
            match ran {
                Ok(_) => {}
                Err(engine::SqlError::Invalid(m)) if crate::read::not_flushed_yet(&m) => {
                    // The table or a column is only in unflushed rows: have them flushed.
                    unflushed::wait_first_flush(
                        self.reads.unflushed(),
                        db,
                        &schema.name,
                        acked,
                        &cancel,
                    )?;
                    continue;
                }
                Err(engine::SqlError::LimitExceeded(_)) => return Ok(Refilled::TooLarge),
                Err(e) => return Err(e.into()),
            }
            if snapshot.rewrites != Rewrites::All && !snapshot.still_valid(index) {
                // A rewrite the flusher found while it ran may be in what it read.
                continue;
            }
            return ingest_layout(&answer, schema, shape).map(Refilled::Points);
        }
        Err(engine::SqlError::Unavailable(format!(
            "the points of {:?} kept changing under the refill's read; try again",
            schema.name
        ))
        .into())
    }

    fn refill_engine(&self) -> Result<engine::Engine, InfluxqlError> {
        self.engine()
            .map_err(|_| engine::SqlError::Unavailable("the server is shutting down".into()).into())
    }
}

/// What a refill read answers.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    /// Every point.
    Points,
    /// One row per series, tags only (fields null).
    SeriesOnly,
}

/// A raw read of every tag and field of `schema` at any time (the caller
/// bounds it), of the series with an id in `sids`.
fn plan(db: &str, schema: &MeasurementSchema, sids: (u64, u64)) -> Plan {
    let sid = format!("{}`series_id`", super::expr::SRC);
    Plan {
        db: db.to_string(),
        measurement: schema.name.clone(),
        source: None,
        tags: schema.tag_keys.clone(),
        fields: schema.fields.iter().map(|(f, _)| f.clone()).collect(),
        columns: Vec::new(),
        aggregate: None,
        group_tags: Vec::new(),
        order_tags: Vec::new(),
        range: TimeRange {
            min: None,
            max: None,
        },
        // Both the table's rows and the unflushed ones are read as `__src`.
        inner_where: vec![format!("{sid} >= {} AND {sid} <= {}", sids.0, sids.1)],
        outer_where: Vec::new(),
        nonnull: Vec::new(),
        shows_every_point: true,
        nonnull_implied: true,
        order_desc: false,
        limit: None,
        offset: None,
    }
}

/// The engine's Arrow answer (`__refill_t`, `__refill_sid`, tags, fields) in
/// ingest's layout: `time` Int64, `series_id` UInt64, tags non-null Utf8,
/// fields nullable of their catalog type.
fn ingest_layout(
    answer: &[u8],
    schema: &MeasurementSchema,
    shape: Shape,
) -> Result<Vec<RecordBatch>, InfluxqlError> {
    let bad = |e: engine::arrow::error::ArrowError| InfluxqlError::EngineAnswer(e.to_string());
    let mut fields = vec![
        Field::new("time", DataType::Int64, false),
        Field::new("series_id", DataType::UInt64, false),
    ];
    fields.extend(
        schema
            .tag_keys
            .iter()
            .map(|t| Field::new(t, DataType::Utf8, false)),
    );
    fields.extend(
        schema
            .fields
            .iter()
            .map(|(f, ty)| Field::new(f, arrow_type(*ty), true)),
    );
    let layout = Arc::new(Schema::new(fields));
    let mut out = Vec::new();
    let mut cursor = std::io::Cursor::new(answer);
    while (cursor.position() as usize) < answer.len() {
        let reader =
            engine::arrow::ipc::reader::StreamReader::try_new(&mut cursor, None).map_err(bad)?;
        for batch in reader {
            let batch = batch.map_err(bad)?;
            if batch.num_rows() == 0 {
                continue;
            }
            let answered = match shape {
                Shape::Points => layout.fields().len(),
                Shape::SeriesOnly => 2 + schema.tag_keys.len(),
            };
            if batch.num_columns() != answered {
                return Err(InfluxqlError::EngineAnswer(format!(
                    "the refill's read: {} columns for {}",
                    batch.num_columns(),
                    answered
                )));
            }
            let mut columns: Vec<ArrayRef> = batch
                .columns()
                .iter()
                .zip(layout.fields())
                .map(|(c, f)| {
                    let cast = engine::arrow::compute::cast(c, f.data_type()).map_err(bad)?;
                    if f.is_nullable() || cast.null_count() == 0 {
                        return Ok(cast);
                    }
                    // A tag without a value is "" in ingest's batches.
                    let s = cast.as_string::<i32>();
                    Ok(
                        Arc::new(StringArray::from_iter_values((0..s.len()).map(|i| {
                            if s.is_null(i) {
                                ""
                            } else {
                                s.value(i)
                            }
                        }))) as ArrayRef,
                    )
                })
                .collect::<Result<_, InfluxqlError>>()?;
            for f in &layout.fields()[answered..] {
                columns.push(engine::arrow::array::new_null_array(
                    f.data_type(),
                    batch.num_rows(),
                ));
            }
            out.push(RecordBatch::try_new(layout.clone(), columns).map_err(bad)?);
        }
    }
    Ok(out)
}

fn arrow_type(ty: FieldType) -> DataType {
    match ty {
        FieldType::Float => DataType::Float64,
        FieldType::Integer => DataType::Int64,
        FieldType::UInteger => DataType::UInt64,
        FieldType::String => DataType::Utf8,
        FieldType::Boolean => DataType::Boolean,
    }
}
