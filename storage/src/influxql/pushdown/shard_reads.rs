//! What every pushed-down read asks of the shards besides its own statement, and how it
//! puts their answer beside the node's: the statement narrowed to the series the
//! condition's tag values name; the raw shard rows of the series with undelivered rows,
//! merged with the node's own (it computes those series itself: `answer.rs`); and whether
//! every write sequence fits the packed point identity.

use engine::arrow::array::RecordBatch;
use engine::table::ColumnKind;

use super::{max_seq, Pushdown, PACKED_SEQ_LIMIT};

impl Pushdown {
    /// This statement narrowed to the series `ids` (those holding the condition's tag
    /// values, as a shard's index lists them): the primary key skips the rest of the table.
    pub(super) fn only_series(&mut self, ids: &[u64]) {
        let only = cluster::series_in(ids);
        self.condition = Some(match &self.condition {
            Some(c) => format!("({c}) AND {only}"),
            None => only,
        });
    }

    /// The shards' raw rows in range of the series listed in `list` (comma-separated ids:
    /// those with undelivered rows, bounded because undelivered rows are).
    pub(super) fn listed_rows(
        &self,
        cluster: &cluster::Cluster,
        db: &str,
        measurement: &str,
        columns: &[(String, ColumnKind)],
        list: &str,
        max_rows: u64,
    ) -> Result<Option<RecordBatch>, cluster::ClusterError> {
        let mut cond = format!("`series_id` IN ({list})");
        if let Some(c) = &self.condition {
            cond = format!("{cond} AND ({c})");
        }
        cluster.read_rows(
            db,
            measurement,
            columns,
            cluster::RowSelection {
                min: self.min,
                max: self.max,
                condition: Some(&cond),
                last_per_series: false,
                pointwise: None,
                whole_series: &[],
                series_of: None,
                source: None,
            },
            max_rows,
        )
    }
}

/// The node's rows of the series with undelivered rows: their shard rows (`stored`) and
/// its own not yet delivered (`pending`), in one batch.
pub(super) fn node_rows(
    stored: Option<RecordBatch>,
    pending: Option<RecordBatch>,
) -> Result<Option<RecordBatch>, engine::arrow::error::ArrowError> {
    Ok(match (stored, pending) {
        (None, None) => None,
        (Some(b), None) | (None, Some(b)) => Some(b),
        (Some(a), Some(b)) => Some(engine::arrow::compute::concat_batches(
            &a.schema(),
            &[a.clone(), b],
        )?),
    })
}

/// Whether every write `__seq` of the shards' answer (column `ms`) and of the node's rows
/// fits the packed identity the statements compare points by ([`PACKED_SEQ_LIMIT`]).
pub(super) fn seqs_pack(parts: Option<&RecordBatch>, node: Option<&RecordBatch>) -> bool {
    parts.map_or(0, |p| max_seq(p, "ms")) < PACKED_SEQ_LIMIT
        && node.map_or(0, |n| max_seq(n, engine::table::SEQ)) < PACKED_SEQ_LIMIT
}
