//! A `DELETE`'s share of the dead-letter queue: the rows it matches go from every dead
//! letter written before it, so an operator's retry after the delete cannot bring them back
//! (`series_delete.rs` runs this under the same admin lock as retries and discards).
//!
//! Each dead letter written at or below the statement's position is filtered by the
//! statement's engine condition, evaluated by the engine over the letter's key and tag
//! columns ([`flush::dead_letter::rows_not_matching`]); a letter left without rows is
//! removed, one with fewer rows rewritten (same key, same error and time). A `kill -9`
//! between two letters leaves each one either as it was or filtered: the statement, not
//! answered, can be run again.

use std::collections::HashSet;

use engine::arrow::array::{AsArray, RecordBatch};
use engine::arrow::datatypes::UInt64Type;

use crate::quarantine::{encode, parse_key, parse_value, prefix};
use crate::{Storage, StorageError};

/// What a `DELETE` did to one table's dead letters.
#[derive(Debug, Default)]
pub(crate) struct DeadLetterDelete {
    /// Series of the rows removed.
    pub(crate) removed: HashSet<u64>,
    /// Series of the rows the table's dead letters still hold (any position).
    pub(crate) kept: HashSet<u64>,
    /// Rows removed.
    pub(crate) points: u64,
}

impl Storage {
    /// Removes the rows `condition` matches from the dead letters of `db`.`measurement`
    /// written at or below `up_to`; `tags` are the measurement's tag keys.
    pub(crate) fn delete_from_dead_letters(
        &self,
        db: &str,
        measurement: &str,
        tags: &[String],
        condition: &str,
        up_to: u64,
    ) -> Result<DeadLetterDelete, StorageError> {
        let mut out = DeadLetterDelete::default();
        let records = self.wal.dead_letter_scan(&prefix(db, Some(measurement)))?;
        if records.is_empty() {
            return Ok(out);
        }
        let engine = self.engine()?;
        let (mut rewrite, mut remove) = (Vec::new(), Vec::new());
        for (k, v) in records {
            let (Some((d, m, seq)), Some(h)) = (parse_key(&k), parse_value(&v)) else {
                continue;
            };
            let batch = flush::dead_letter::decode_batch(h.ipc)?;
            if seq > up_to {
                out.kept.extend(series_of(&batch));
                continue;
            }
            let left =
                flush::dead_letter::rows_not_matching(&engine, &batch, seq, tags, condition)?;
            if left.num_rows() == batch.num_rows() {
                out.kept.extend(series_of(&batch));
                continue;
            }
            out.points += (batch.num_rows() - left.num_rows()) as u64;
            let kept_here = series_of(&left);
            out.removed
                .extend(series_of(&batch).difference(&kept_here).copied());
            out.kept.extend(kept_here);
            if left.num_rows() == 0 {
                remove.push(k);
            } else {
                let letter = flush::DeadLetter {
                    db: d,
                    measurement: m,
                    seq,
                    batch: left,
                    error: h.error,
                };
                rewrite.push(encode(&letter, h.at_ns)?);
            }
        }
        if rewrite.is_empty() && remove.is_empty() {
            return Ok(out);
        }
        if !rewrite.is_empty() {
            self.wal.dead_letter_put(rewrite)?;
        }
        if !remove.is_empty() {
            self.wal.dead_letter_delete(remove, Vec::new())?;
        }
        self.reload_quarantine()?;
        tracing::info!(
            db,
            measurement,
            points = out.points,
            up_to,
            "points deleted from dead letters"
        );
        Ok(out)
    }
}

/// The `series_id`s of an ingest batch.
fn series_of(batch: &RecordBatch) -> HashSet<u64> {
    batch
        .column_by_name(engine::table::SERIES_ID)
        .and_then(|c| c.as_primitive_opt::<UInt64Type>())
        .map(|ids| ids.values().iter().copied().collect())
        .unwrap_or_default()
}
