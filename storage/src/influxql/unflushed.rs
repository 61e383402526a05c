//! Reads see acknowledged points the engine does not hold yet (InfluxDB
//! answers with every point acknowledged before the query started).
//!
//! Before a statement is rendered, [`scan`] waits until the flusher has
//! received every entry the WAL acknowledged so far, takes the measurement's
//! unflushed rows inside the plan's time range (`flush::unflushed`) as one
//! Arrow batch in the table's layout and registers it with the engine; the
//! statement reads the table and that batch together (`sql::Unflushed`),
//! grouping into points the table's rows inside the batch's time span with
//! the batch's rows. A measurement with nothing unflushed in the range
//! reads exactly as before.

use std::time::Duration;

use engine::arrow::array::AsArray;
use engine::arrow::datatypes::TimestampNanosecondType;
use engine::table::ColumnKind;
use ingest::catalog::MeasurementSchema;
use ingest::FieldType;

use super::error::InfluxqlError;
use super::plan::Plan;

/// How long a read waits for the flusher to receive what the WAL has
/// acknowledged (normally microseconds: entries are handed on before their
/// acknowledgement). Past it the read goes on with what was received.
const RECEIVE_WAIT: Duration = Duration::from_secs(5);

/// Rows of acknowledged points InfluxQL statements read from memory.
pub(crate) const UNFLUSHED_ROWS: &str = "chingest_influxql_unflushed_rows_total";
/// Reads that had the flusher insert a table's buffer before reading.
pub(crate) const FLUSH_WAITS: &str = "chingest_influxql_flush_waits_total";

/// Registers the counters above, so they are exported (at 0) before the first read.
pub(crate) fn register_metrics() {
    metrics::counter!(UNFLUSHED_ROWS).increment(0);
    metrics::counter!(FLUSH_WAITS).increment(0);
}

/// The unflushed rows of one plan, registered with the engine.
pub(crate) struct Scan {
    pub(crate) arrow: engine::ArrowScan,
    /// The span of their times (ns).
    pub(crate) min: i64,
    pub(crate) max: i64,
}

/// The acknowledged rows of `plan`'s measurement inside its time range that
/// the engine does not hold yet; `None` when there are none. `acked` is the
/// WAL's last acknowledged sequence when the read started (later writes are
/// not needed). More than `max_rows` of them are not copied: the read has
/// the flusher insert them and reads the table (memory stays bounded by the
/// same limit as an answer's rows).
pub(crate) fn scan(
    engine: &engine::Engine,
    unflushed: &flush::Unflushed,
    plan: &Plan,
    schema: &MeasurementSchema,
    acked: u64,
    max_rows: u64,
    cancel: &engine::SqlCancel,
) -> Result<Option<Scan>, InfluxqlError> {
    let (min, max) = (
        plan.range.min.unwrap_or(i64::MIN),
        plan.range.max.unwrap_or(i64::MAX),
    );
    let Some(parts) = acked_parts(
        unflushed,
        &plan.db,
        &plan.measurement,
        min,
        max,
        acked,
        max_rows,
        cancel,
    )?
    else {
        return Ok(None);
    };
    let columns = columns(plan, schema);
    let unavailable = |e: engine::EngineError| {
        InfluxqlError::from(engine::SqlError::Unavailable(format!(
            "cannot read the points not flushed yet: {e}"
        )))
    };
    let Some(batch) = flush::unflushed::rows_in(&parts, &columns, min, max).map_err(unavailable)?
    else {
        return Ok(None);
    };
    let time = batch
        .column(0)
        .as_primitive_opt::<TimestampNanosecondType>()
        .expect("the engine layout starts with time");
    let (Some(lo), Some(hi)) = (
        engine::arrow::compute::min(time),
        engine::arrow::compute::max(time),
    ) else {
        return Ok(None);
    };
    metrics::counter!(UNFLUSHED_ROWS).increment(batch.num_rows() as u64);
    let arrow = engine.arrow_scan(batch).map_err(unavailable)?;
    Ok(Some(Scan {
        arrow,
        min: lo,
        max: hi,
    }))
}

/// Every unflushed row of `db`.`measurement` with the tag columns `tags`,
/// registered with the engine (`SHOW … WHERE`); `None` when there is none.
/// Bounded by `max_rows` as [`scan`] is.
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_tags(
    engine: &engine::Engine,
    unflushed: &flush::Unflushed,
    db: &str,
    measurement: &str,
    tags: &[String],
    acked: u64,
    max_rows: u64,
    cancel: &engine::SqlCancel,
) -> Result<Option<Scan>, InfluxqlError> {
    let Some(parts) = acked_parts(
        unflushed,
        db,
        measurement,
        i64::MIN,
        i64::MAX,
        acked,
        max_rows,
        cancel,
    )?
    else {
        return Ok(None);
    };
    let columns: Vec<_> = tags.iter().map(|t| (t.clone(), ColumnKind::Tag)).collect();
    let unavailable = |e: engine::EngineError| {
        InfluxqlError::from(engine::SqlError::Unavailable(format!(
            "cannot read the points not flushed yet: {e}"
        )))
    };
    let Some(batch) =
        flush::unflushed::rows_in(&parts, &columns, i64::MIN, i64::MAX).map_err(unavailable)?
    else {
        return Ok(None);
    };
    let arrow = engine.arrow_scan(batch).map_err(unavailable)?;
    Ok(Some(Scan {
        arrow,
        min: i64::MIN,
        max: i64::MAX,
    }))
}

/// The unflushed parts of `db`.`measurement` acknowledged up to `acked` with
/// a row in `[min, max]`, once the flusher has received them all; `None`
/// when there are none, or when there were more than `max_rows` rows and the
/// flusher has now inserted them (the table has them).
#[allow(clippy::too_many_arguments)]
pub(crate) fn acked_parts(
    unflushed: &flush::Unflushed,
    db: &str,
    measurement: &str,
    min: i64,
    max: i64,
    acked: u64,
    max_rows: u64,
    cancel: &engine::SqlCancel,
) -> Result<Option<Vec<flush::UnflushedPart>>, InfluxqlError> {
    if !unflushed.wait_received(acked, RECEIVE_WAIT) {
        tracing::warn!(
            acked,
            received = unflushed.received(),
            "read: the flusher has not received every acknowledged write; reading what it has"
        );
    }
    let mut parts = unflushed.parts(db, measurement, min, max);
    parts.retain(|p| p.seq <= acked);
    if parts.is_empty() {
        return Ok(None);
    }
    let rows: u64 = parts.iter().map(|p| p.batch.num_rows() as u64).sum();
    if rows <= max_rows {
        return Ok(Some(parts));
    }
    // Run inline (`inline.rs`): their flush is not waited for.
    if super::inline::refuse() {
        return Ok(None);
    }
    tracing::debug!(
        db,
        measurement,
        rows,
        max_rows,
        "read: too many unflushed rows to copy; waiting for their flush"
    );
    wait_first_flush(unflushed, db, measurement, acked, cancel)?;
    if unflushed.holds_up_to(db, measurement, acked) {
        return Err(engine::SqlError::Unavailable(format!(
            "the newest points of {measurement:?} are not in the engine yet; try again"
        ))
        .into());
    }
    Ok(None)
}

/// Waits (at most [`FIRST_FLUSH_WAIT`]) until the flusher has inserted every
/// part of `db`.`measurement` up to `acked`, having it insert them at once: a
/// read found the table or a column only unflushed points have.
pub(crate) fn wait_first_flush(
    unflushed: &flush::Unflushed,
    db: &str,
    measurement: &str,
    acked: u64,
    cancel: &engine::SqlCancel,
) -> Result<(), InfluxqlError> {
    metrics::counter!(FLUSH_WAITS).increment(1);
    let deadline = std::time::Instant::now() + FIRST_FLUSH_WAIT;
    while unflushed.holds_up_to(db, measurement, acked) && std::time::Instant::now() < deadline {
        unflushed.hurry(db, measurement);
        std::thread::sleep(Duration::from_millis(10));
        if cancel.is_cancelled() {
            return Err(engine::SqlError::Cancelled.into());
        }
    }
    Ok(())
}

/// How long a read waits for the first flush of a measurement or field it
/// reads (`flush.max_age_ms`, 1 s by default, plus the INSERT).
const FIRST_FLUSH_WAIT: Duration = Duration::from_secs(10);

/// The plan's tags and fields with the kinds the table stores them as.
pub(crate) fn columns(plan: &Plan, schema: &MeasurementSchema) -> Vec<(String, ColumnKind)> {
    let tags = plan.tags.iter().map(|t| (t.clone(), ColumnKind::Tag));
    let fields = plan.fields.iter().filter_map(|f| {
        let (_, ty) = schema.fields.iter().find(|(name, _)| name == f)?;
        Some((f.clone(), kind(*ty)))
    });
    tags.chain(fields).collect()
}

pub(crate) fn kind(ty: FieldType) -> ColumnKind {
    match ty {
        FieldType::Float => ColumnKind::Float,
        FieldType::Integer => ColumnKind::Integer,
        FieldType::UInteger => ColumnKind::Unsigned,
        FieldType::String => ColumnKind::String,
        FieldType::Boolean => ColumnKind::Boolean,
    }
}
