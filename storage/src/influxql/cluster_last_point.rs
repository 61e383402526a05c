//! Each group's last point on a ClickHouse cluster (`SELECT … ORDER BY time DESC LIMIT 1`:
//! TSBS `lastpoint`, Grafana's current value) answered in Rust (issue #43), as the embedded
//! path answers it from the flusher's last points (`last_point.rs`): no engine statement,
//! whose fixed cost (its analysis, 3–4 ms) was most of what the node spent on such a read.
//!
//! The rows are those the engine statement read before: each series' rows at its latest time
//! in the statement's range on every shard (`cluster/src/last_points.rs`: kept by the node
//! and checked against each shard's parts listing at every read; a shard down fails the read
//! by name), and this node's acknowledged rows not delivered yet (taken first: a row
//! delivered meanwhile is in both, one row). Both go into `flush::TableLasts` — the shards'
//! rows as the table's last points, the undelivered ones as the overlay — and the answer is
//! the embedded one's (`last_point::answer`): point identity field by field by
//! `(__seq, __row)`, the later time winning, groups and ties as there.
//!
//! Which statements: those the embedded last points answer (every shown column a field or a
//! tag as it is, no tag condition), where every field is shown (so every series' last point
//! shows: the shards' cut to each series' last time is exact), in a database without a
//! retention (as the embedded path). Anything else reads the rows through the engine as
//! before, as do these with `CHINGEST_CLUSTER_LAST_POINT_IN_RUST=0` (for comparisons).

use cluster::Cluster;
use flush::TableLasts;
use ingest::MeasurementSchema;

use super::cluster::unavailable;
use super::error::InfluxqlError;
use super::last_point::{answer, may_read, shown};
use super::plan::Plan;
use super::rows::Row;
use super::InfluxqlRequest;
use crate::Storage;

/// Whether such reads are answered in Rust (`CHINGEST_CLUSTER_LAST_POINT_IN_RUST=0`: through
/// an engine statement, as before; for comparisons).
fn enabled() -> bool {
    std::env::var("CHINGEST_CLUSTER_LAST_POINT_IN_RUST").as_deref() != Ok("0")
}

impl Storage {
    /// The rows of `plan` (one per group, ordered by group) from each series' last point on
    /// the shards and this node's undelivered rows; `None` when the statement is not of that
    /// shape (the engine answers it).
    pub(crate) fn cluster_last_points(
        &self,
        cluster: &Cluster,
        schema: &MeasurementSchema,
        plan: &Plan,
        req: &InfluxqlRequest<'_>,
    ) -> Result<Option<Vec<Row>>, InfluxqlError> {
        if !plan.shows_every_point || !may_read(req.access, &plan.db) || !enabled() {
            return Ok(None);
        }
        let Some(shown) = shown(plan) else {
            return Ok(None);
        };
        if self.catalog.retention_secs(&plan.db) > 0 {
            return Ok(None);
        }
        let db = plan.db.as_str();
        let failed = unavailable(format!("{:?}", schema.name));
        let columns = super::cluster::columns_read(schema, plan);
        let range = &plan.range;
        let (min, max) = (range.min.unwrap_or(i64::MIN), range.max.unwrap_or(i64::MAX));
        let max_rows = self.row_limit();
        let pending = self.undelivered(db, schema, &columns, (min, max), req.cancel)?;
        let stored = cluster
            .read_rows(
                db,
                &schema.name,
                &columns,
                cluster::RowSelection {
                    min,
                    max,
                    condition: None,
                    last_per_series: true,
                    pointwise: None,
                    whole_series: &[],
                    series_of: None,
                    source: None,
                },
                max_rows,
            )
            .map_err(|e| match e {
                cluster::ClusterError::TooManyRows { .. } => {
                    InfluxqlError::from(engine::SqlError::LimitExceeded(e.to_string()))
                }
                other => failed(other.to_string()),
            })?;
        let lasts = |batch: Option<engine::arrow::array::RecordBatch>| {
            let mut lasts = TableLasts::default();
            if let Some(b) = batch {
                lasts.merge(&b).map_err(|e| failed(e.to_string()))?;
            }
            Ok::<_, InfluxqlError>(lasts)
        };
        let (table, overlay) = (lasts(stored)?, lasts(pending)?);
        // `None` only when a series' last point falls outside the range or shows nothing,
        // which the shards' cut and the undelivered rows' range rule out; the engine would
        // answer then.
        Ok(answer(plan, &shown, &table, &overlay))
    }
}
