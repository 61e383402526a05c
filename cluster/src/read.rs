//! The rows of a measurement on the shards, as one Arrow batch in the embedded layout: what
//! chingest's InfluxQL reads when the points are on a ClickHouse cluster (it merges them
//! with the acknowledged rows not delivered yet and applies point identity, as it does for
//! the embedded tables).
//!
//! Each shard is asked for the rows of the statement's time range in `RowBinary` (a binary
//! format every supported server speaks, each column cast to the type the node reads it
//! as, the answer sent once the statement finished); the node converts them (no floats
//! formatted as text and parsed again: 1.26–1.31× faster than `TabSeparated` on a heavy
//! read, equal on small ones, `test_results/latest/tsbs_cluster.md` run 5). Bounded: more than
//! `max_rows` rows over all shards fails the read rather than growing memory.

use std::sync::{Arc, Mutex};

use arrow::array::{
    ArrayRef, RecordBatch, TimestampNanosecondBuilder, UInt32Builder, UInt64Builder,
};
use engine::quote_ident;
use engine::table::{engine_schema, ColumnKind};

use crate::last_points::LastPointRead;
use crate::row_binary::Builder;
use crate::series_of_tags::series_in;
use crate::{folded, schema, Cluster, ClusterError, IdentitySnapshot, TagValues};

/// Which rows of a measurement a read asks the shards for.
#[derive(Debug, Clone, Copy)]
pub struct RowSelection<'a> {
    /// The earliest `time` (ns).
    pub min: i64,
    /// The latest `time` (ns).
    pub max: i64,
    /// SQL over the shard's columns that the rows must also meet, written for every
    /// supported server.
    pub condition: Option<&'a str>,
    /// Only each series' rows at its latest `time` among the others (every row of that
    /// point, rewrites included): what a read of each group's last point needs.
    pub last_per_series: bool,
    /// SQL over a point's fields (and tags) that the statement keeps only the points
    /// meeting (its field condition, `WHERE usage_user > 90`). A row is a point only in a
    /// series no point of which was written twice: the shard applies it to those rows only,
    /// the series its index lists as rewritten (and `whole_series`) sending every row, so
    /// the node merges a point's rows before the condition sees it — point identity first
    /// (a rewrite may set the field the condition reads). Checked by the shard's index
    /// after the read ([`Cluster::read_partials`]'s rule); without an index (replicas, index
    /// off) not applied.
    pub pointwise: Option<&'a str>,
    /// Series whose every row is sent whatever `pointwise` says: those with rows the node
    /// holds undelivered (one may rewrite a point a shard holds).
    pub whole_series: &'a [u64],
    /// The values of a tag every row `condition` selects holds: the shards are asked only
    /// for the series holding them ([`crate::series_of_tags`]; with `pointwise` only, the
    /// read that carries the listing its check needs).
    pub series_of: Option<&'a TagValues>,
    /// A statement over the shard table read in its place ([`Source`]).
    pub source: Option<Source<'a>>,
}

/// The series whose rows a read sent whatever [`RowSelection::pointwise`] says
/// ([`Cluster::read_points`]): every row of theirs in the range came, a point maybe as
/// several rows, the condition not applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unfiltered {
    /// No series' rows were filtered (no condition, or a shard without its index).
    pub every_series: bool,
    /// These series' rows were not (sorted): the undelivered ones' and those some shard's
    /// index lists as holding a point written twice.
    pub series: Vec<u64>,
}

impl Unfiltered {
    /// Whether the rows of `series` came unfiltered.
    pub fn holds(&self, series: u64) -> bool {
        self.every_series || self.series.binary_search(&series).is_ok()
    }
}

/// A statement over the shard table (its name as [`Cluster::shard_table`] writes it) read in
/// its place: it answers the shard table's `time`, `series_id`, `__seq`, `__row` and the
/// read's columns under their names, and applies the read's condition itself (only the time
/// range is applied to its answer; `last_per_series` and `pointwise` are not). Given the
/// series the shard's index lists as holding a point written more than once (`None`: not
/// known, every row may share a point), read again if a rewrite lands meanwhile, as
/// [`RowSelection::pointwise`] is (`top()`'s candidates, `storage`'s `top_candidates.rs`).
#[derive(Clone, Copy)]
pub struct Source<'a>(pub &'a (dyn Fn(Option<&[u64]>) -> String + Sync));

impl std::fmt::Debug for Source<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Source")
    }
}

/// `filter` and, for the rows of series outside `whole` (and the snapshot's rewritten
/// series), `pointwise` ([`RowSelection::pointwise`]).
fn pointwise_filter(filter: &str, pointwise: &str, whole: &[u64], rewritten: &[u64]) -> String {
    let mut list: Vec<u64> = whole.iter().chain(rewritten).copied().collect();
    list.sort_unstable();
    list.dedup();
    match list.is_empty() {
        true => format!("{filter} AND ({pointwise})"),
        false => {
            let list: Vec<String> = list.iter().map(u64::to_string).collect();
            format!(
                "{filter} AND (({pointwise}) OR `series_id` IN ({}))",
                list.join(",")
            )
        }
    }
}

/// Whether a pushed-down read carries the listing its check reads
/// (`CHINGEST_CLUSTER_FOLD_LISTING=0`: asked for on its own after the read, as before; for
/// comparisons and to show the tests see the difference).
pub(crate) fn folds_listing() -> bool {
    std::env::var("CHINGEST_CLUSTER_FOLD_LISTING").as_deref() != Ok("0")
}

impl Cluster {
    /// The rows of `db`.`measurement` on every shard that `rows` selects, in the embedded
    /// layout of `columns` (`table::engine_schema`: a column a shard's rows lack reads as
    /// `''` or null); `None` when there is none. More than `max_rows` rows fail
    /// the read. The table and the columns are created on a shard that lacks them (a shard
    /// that never had a row of it, or was down when they were added).
    pub fn read_rows(
        &self,
        db: &str,
        measurement: &str,
        columns: &[(String, ColumnKind)],
        rows: RowSelection<'_>,
        max_rows: u64,
    ) -> Result<Option<RecordBatch>, ClusterError> {
        self.read_rows_noting(db, measurement, columns, rows, max_rows, None)
    }

    /// [`read_rows`](Self::read_rows), and which series' rows came without
    /// [`RowSelection::pointwise`]: the others' rows are each a whole point that meets it
    /// (a series lives on one shard, and its shard's index listed none of its points as
    /// written twice when the read was checked).
    pub fn read_points(
        &self,
        db: &str,
        measurement: &str,
        columns: &[(String, ColumnKind)],
        rows: RowSelection<'_>,
        max_rows: u64,
    ) -> Result<(Option<RecordBatch>, Unfiltered), ClusterError> {
        let noted = Mutex::new(Unfiltered {
            every_series: rows.pointwise.is_none() || rows.source.is_some() || rows.last_per_series,
            series: rows.whole_series.to_vec(),
        });
        let batch =
            self.read_rows_noting(db, measurement, columns, rows, max_rows, Some(&noted))?;
        let mut unfiltered = noted.into_inner().unwrap_or_else(|e| e.into_inner());
        unfiltered.series.sort_unstable();
        unfiltered.series.dedup();
        Ok((batch, unfiltered))
    }

    fn read_rows_noting(
        &self,
        db: &str,
        measurement: &str,
        columns: &[(String, ColumnKind)],
        rows: RowSelection<'_>,
        max_rows: u64,
        noted: Option<&Mutex<Unfiltered>>,
    ) -> Result<Option<RecordBatch>, ClusterError> {
        let table = schema::table(db, measurement);
        let mut filter = format!("`time` >= {} AND `time` <= {}", rows.min, rows.max);
        if let (Some(c), None) = (rows.condition, rows.source) {
            filter.push_str(&format!(" AND ({c})"));
        }
        if rows.last_per_series && rows.source.is_none() {
            filter = format!(
                "{filter} AND (`series_id`, `time`) IN \
                 (SELECT `series_id`, max(`time`) FROM {table} WHERE {filter} GROUP BY `series_id`)"
            );
        }
        let mut time = TimestampNanosecondBuilder::new().with_timezone("UTC");
        let mut series = UInt64Builder::new();
        let mut seq = UInt64Builder::new();
        let mut row = UInt32Builder::new();
        let mut cols: Vec<Builder> = columns.iter().map(|(_, k)| Builder::new(*k)).collect();
        // Each column cast to the type this node reads it as, so the binary answer's layout
        // is known whatever a shard's column is.
        let list: String = columns
            .iter()
            .map(|(n, k)| format!(", CAST({} AS {})", quote_ident(n), schema::shard_type(*k)))
            .collect();
        let sql_from = |from: &str, filter: &str| {
            format!(
                "SELECT `time`, `series_id`, `__seq`, `__row`{list} FROM {from} \
                 WHERE {filter} LIMIT {} FORMAT RowBinary",
                max_rows.saturating_add(1)
            )
        };
        let sql = |filter: &str| sql_from(&table, filter);
        let answers = match (rows.pointwise, rows.source) {
            (_, None) if rows.last_per_series => {
                let mut cells = vec![folded::Cell::Fixed(8); 3];
                cells.push(folded::Cell::Fixed(4));
                cells.extend(columns.iter().map(|(_, k)| folded::Cell::Column(*k)));
                let select = format!("`time`, `series_id`, `__seq`, `__row`{list}");
                let read = LastPointRead {
                    db,
                    measurement,
                    table: &table,
                    select: &select,
                    cells: &cells,
                    condition: rows.condition,
                    min: rows.min,
                    max: rows.max,
                    max_rows,
                };
                let sql = sql(&filter);
                self.read_table_everywhere(db, measurement, columns, |k| {
                    self.last_points_on(k, &read, || self.http.statement_bytes(k, &sql))
                })?
            }
            (None, None) => {
                let sql = sql(&filter);
                self.read_table_everywhere(db, measurement, columns, |k| {
                    self.http.statement_bytes(k, &sql)
                })?
            }
            (pointwise, source) => {
                // The key columns cast to the types they are read as, for the listing's
                // placeholders to match them on every server.
                let mut select: Vec<String> = [
                    "CAST(`time` AS Int64)",
                    "CAST(`series_id` AS UInt64)",
                    "CAST(`__seq` AS UInt64)",
                    "CAST(`__row` AS UInt32)",
                ]
                .map(String::from)
                .to_vec();
                let mut placeholders: Vec<String> =
                    ["toInt64(0)", "toUInt64(0)", "toUInt64(0)", "toUInt32(0)"]
                        .map(String::from)
                        .to_vec();
                let mut cells = vec![
                    folded::Cell::Fixed(8),
                    folded::Cell::Fixed(8),
                    folded::Cell::Fixed(8),
                    folded::Cell::Fixed(4),
                ];
                for (n, kind) in columns {
                    select.push(format!(
                        "CAST({} AS {})",
                        quote_ident(n),
                        schema::shard_type(*kind)
                    ));
                    placeholders.push(folded::placeholder(*kind));
                    cells.push(folded::Cell::Column(*kind));
                }
                let read = |k: usize,
                            snapshot: Option<&IdentitySnapshot>,
                            series: Option<&[u64]>| {
                    let filter = match series {
                        Some(ids) => format!("{filter} AND {}", series_in(ids)),
                        None => filter.clone(),
                    };
                    let rewritten = snapshot.map(|s| s.rewritten.as_slice());
                    // Every attempt's series, not only the last's: more than needed only
                    // sends rows to the node's merge that did not need it.
                    if let Some(noted) = noted {
                        let mut noted = noted.lock().unwrap_or_else(|e| e.into_inner());
                        match rewritten {
                            Some(r) => noted.series.extend_from_slice(r),
                            None => noted.every_series = true,
                        }
                    }
                    let (from, filter) = match (source, pointwise, rewritten) {
                        (Some(source), _, _) => (format!("({})", (source.0)(rewritten)), filter),
                        (None, Some(pointwise), Some(rewritten)) => (
                            table.clone(),
                            pointwise_filter(&filter, pointwise, rows.whole_series, rewritten),
                        ),
                        (None, _, _) => (table.clone(), filter),
                    };
                    if snapshot.is_none() || !folds_listing() {
                        return Ok((
                            self.http.statement_bytes(k, &sql_from(&from, &filter))?,
                            None,
                        ));
                    }
                    let from = format!("{from} WHERE {filter}");
                    let limit = max_rows.saturating_add(1);
                    let sql =
                        folded::statement(&select, &placeholders, &from, limit, db, measurement);
                    self.read_folded(k, &sql, &cells)
                };
                self.read_identified(db, measurement, columns, rows.series_of, read)?
                    .0
            }
        };
        let rows = self.each_row(&answers, max_rows, |r| {
            time.append_value(r.i64()?);
            series.append_value(r.u64()?);
            seq.append_value(r.u64()?);
            row.append_value(r.u32()?);
            cols.iter_mut().try_for_each(|b| b.read(r))
        })?;
        if rows == 0 {
            return Ok(None);
        }
        let mut arrays: Vec<ArrayRef> = vec![
            Arc::new(time.finish()),
            Arc::new(series.finish()),
            Arc::new(seq.finish()),
            Arc::new(row.finish()),
        ];
        arrays.extend(cols.into_iter().map(Builder::finish));
        RecordBatch::try_new(engine_schema(columns), arrays)
            .map(Some)
            .map_err(|e| ClusterError::Engine(engine::EngineError::Arrow(e.to_string())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_condition_spares_the_rewritten_and_undelivered_series() {
        assert_eq!(
            pointwise_filter("t", "`v` > 1", &[], &[]),
            "t AND (`v` > 1)"
        );
        assert_eq!(
            pointwise_filter("t", "`v` > 1", &[9, 3], &[3, 5]),
            "t AND ((`v` > 1) OR `series_id` IN (3,5,9))"
        );
    }
}
