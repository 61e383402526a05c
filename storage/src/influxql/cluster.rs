//! Reads of points on a ClickHouse cluster (`[storage] engine = "clickhouse"`, issue #25):
//! a measurement's rows in the statement's time range from every shard, with the
//! acknowledged rows not delivered yet, handed to the engine as one Arrow batch in the
//! embedded table's layout, which the statement reads as it reads a subquery's answer:
//! every row grouped into points (InfluxDB's identity: a point written twice reads as
//! one, the later write winning field by field), bounded by `[sql] max_result_rows`.

use flush::cluster::Cluster;
use flush::table::ColumnKind;
use flush::ArrowScan;
use ingest::MeasurementSchema;

use super::error::InfluxqlError;
use super::range::TimeRange;
use super::unflushed::{acked_parts, kind};
use crate::Storage;

impl Storage {
    /// The rows of `schema` in `range` (shards and not yet delivered) as an Arrow scan in
    /// the embedded layout; `None` when there is none.
    pub(crate) fn cluster_scan(
        &self,
        cluster: &Cluster,
        db: &str,
        schema: &MeasurementSchema,
        range: &TimeRange,
        cancel: &flush::SqlCancel,
    ) -> Result<Option<ArrowScan>, InfluxqlError> {
        let engine = self
            .engine()
            .map_err(|_| flush::SqlError::Unavailable("the server is shutting down".into()))?;
        let unavailable = |e: String| {
            InfluxqlError::from(flush::SqlError::Unavailable(format!(
                "cannot read {:?} from the ClickHouse cluster: {e}",
                schema.name
            )))
        };
        let columns: Vec<(String, ColumnKind)> = schema
            .tag_keys
            .iter()
            .map(|t| (t.clone(), ColumnKind::Tag))
            .chain(schema.fields.iter().map(|(f, t)| (f.clone(), kind(*t))))
            .collect();
        let (min, max) = (range.min.unwrap_or(i64::MIN), range.max.unwrap_or(i64::MAX));
        let max_rows = self.row_limit();
        // Acknowledged before the rows are read: a row delivered meanwhile is in both, and
        // reads as one point.
        let acked = self.wal.last_seq();
        let pending = acked_parts(&engine, db, &schema.name, min, max, acked, max_rows, cancel)?
            .map(|parts| flush::unflushed::rows_in(&parts, &columns, min, max))
            .transpose()
            .map_err(|e| unavailable(e.to_string()))?
            .flatten();
        let stored = cluster
            .read_rows(db, &schema.name, &columns, min, max, max_rows)
            .map_err(|e| match e {
                flush::cluster::ClusterError::TooManyRows { .. } => {
                    InfluxqlError::from(flush::SqlError::LimitExceeded(e.to_string()))
                }
                other => unavailable(other.to_string()),
            })?;
        let batch = match (stored, pending) {
            (None, None) => return Ok(None),
            (Some(b), None) | (None, Some(b)) => b,
            (Some(a), Some(b)) => {
                flush::arrow::compute::concat_batches(&a.schema(), &[a.clone(), b])
                    .map_err(|e| unavailable(e.to_string()))?
            }
        };
        engine
            .arrow_scan(batch)
            .map(Some)
            .map_err(|e| unavailable(e.to_string()))
    }
}

impl Storage {
    /// Every series of `schema` on the cluster — the shards' distinct tag values and those of
    /// the acknowledged rows not delivered yet — as an Arrow scan with one string column per
    /// tag key (one `__iq_none` column for a measurement without tags): what `SHOW … WHERE`
    /// reads in place of the table, so the condition runs as it does on the embedded engine.
    /// `None`: no series.
    pub(crate) fn cluster_tag_scan(
        &self,
        cluster: &Cluster,
        db: &str,
        schema: &MeasurementSchema,
        cancel: &flush::SqlCancel,
    ) -> Result<Option<ArrowScan>, InfluxqlError> {
        use flush::arrow::array::{ArrayRef, RecordBatch, StringArray};
        use flush::arrow::datatypes::{DataType, Field, Schema};
        let engine = self
            .engine()
            .map_err(|_| flush::SqlError::Unavailable("the server is shutting down".into()))?;
        let unavailable = |e: String| {
            InfluxqlError::from(flush::SqlError::Unavailable(format!(
                "cannot read the series of {:?} from the ClickHouse cluster: {e}",
                schema.name
            )))
        };
        let max_rows = self.row_limit();
        let keys = &schema.tag_keys;
        let acked = self.wal.last_seq();
        let columns: Vec<(String, ColumnKind)> =
            keys.iter().map(|t| (t.clone(), ColumnKind::Tag)).collect();
        let pending = acked_parts(
            &engine,
            db,
            &schema.name,
            i64::MIN,
            i64::MAX,
            acked,
            max_rows,
            cancel,
        )?
        .map(|parts| flush::unflushed::rows_in(&parts, &columns, i64::MIN, i64::MAX))
        .transpose()
        .map_err(|e| unavailable(e.to_string()))?
        .flatten();
        let mut tuples = cluster
            .distinct_tags(db, &schema.name, keys, max_rows)
            .map_err(|e| match e {
                flush::cluster::ClusterError::TooManyRows { .. } => {
                    InfluxqlError::from(flush::SqlError::LimitExceeded(e.to_string()))
                }
                other => unavailable(other.to_string()),
            })?;
        if let Some(batch) = &pending {
            let cols: Vec<ArrayRef> = keys
                .iter()
                .map(|k| {
                    let c = batch
                        .column_by_name(k)
                        .ok_or_else(|| unavailable(format!("no column {k:?}")))?;
                    flush::arrow::compute::cast(c, &DataType::Utf8)
                        .map_err(|e| unavailable(e.to_string()))
                })
                .collect::<Result<_, _>>()?;
            for i in 0..batch.num_rows() {
                tuples.insert(
                    cols.iter()
                        .map(|c| {
                            c.as_any()
                                .downcast_ref::<StringArray>()
                                .map_or("", |s| s.value(i))
                                .to_string()
                        })
                        .collect(),
                );
            }
        }
        let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = if keys.is_empty() {
            // A measurement without tags has one series (when it has rows).
            let stored = cluster
                .has_rows(db, &schema.name)
                .map_err(|e| unavailable(e.to_string()))?;
            let n = usize::from(pending.is_some() || stored);
            (
                vec![Field::new("__iq_none", DataType::Utf8, false)],
                vec![std::sync::Arc::new(StringArray::from(vec![""; n])) as ArrayRef],
            )
        } else {
            keys.iter()
                .enumerate()
                .map(|(i, k)| {
                    let values: StringArray = tuples.iter().map(|t| Some(t[i].as_str())).collect();
                    (
                        Field::new(k, DataType::Utf8, false),
                        std::sync::Arc::new(values) as ArrayRef,
                    )
                })
                .unzip()
        };
        if arrays[0].is_empty() {
            return Ok(None);
        }
        let batch = RecordBatch::try_new(std::sync::Arc::new(Schema::new(fields)), arrays)
            .map_err(|e| unavailable(e.to_string()))?;
        engine
            .arrow_scan(batch)
            .map(Some)
            .map_err(|e| unavailable(e.to_string()))
    }
}
