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

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, RecordBatch, StringBuilder,
    TimestampNanosecondBuilder, UInt32Builder, UInt64Builder,
};
use arrow::datatypes::{Field, Schema};
use engine::quote_ident;
use engine::table::{engine_schema, ColumnKind};

use crate::last_points::LastPointRead;
use crate::series_of_tags::series_in;
use crate::{folded, schema, Cluster, ClusterError, Grouped, IdentitySnapshot, TagValues};

/// One column being built.
enum Builder {
    Tag(StringBuilder),
    Float(Float64Builder),
    Integer(Int64Builder),
    Unsigned(UInt64Builder),
    String(StringBuilder),
    Boolean(BooleanBuilder),
}

impl Builder {
    fn new(kind: ColumnKind) -> Builder {
        match kind {
            ColumnKind::Tag => Builder::Tag(StringBuilder::new()),
            ColumnKind::Float => Builder::Float(Float64Builder::new()),
            ColumnKind::Integer => Builder::Integer(Int64Builder::new()),
            ColumnKind::Unsigned => Builder::Unsigned(UInt64Builder::new()),
            ColumnKind::String => Builder::String(StringBuilder::new()),
            ColumnKind::Boolean => Builder::Boolean(BooleanBuilder::new()),
        }
    }

    /// Appends one value of a `RowBinary` answer of a column cast to its shard type
    /// ([`schema::shard_type`]).
    fn read(&mut self, r: &mut RowBinary<'_>) -> Result<(), String> {
        match self {
            Builder::Tag(b) => b.append_value(r.string()?),
            Builder::String(b) => match r.present()? {
                true => b.append_value(r.string()?),
                false => b.append_null(),
            },
            Builder::Float(b) => match r.present()? {
                true => b.append_value(f64::from_bits(r.u64()?)),
                false => b.append_null(),
            },
            Builder::Integer(b) => match r.present()? {
                true => b.append_value(r.i64()?),
                false => b.append_null(),
            },
            Builder::Unsigned(b) => match r.present()? {
                true => b.append_value(r.u64()?),
                false => b.append_null(),
            },
            Builder::Boolean(b) => match r.present()? {
                true => b.append_value(r.take(1)?[0] != 0),
                false => b.append_null(),
            },
        }
        Ok(())
    }

    fn finish(self) -> ArrayRef {
        match self {
            Builder::Tag(mut b) | Builder::String(mut b) => Arc::new(b.finish()),
            Builder::Float(mut b) => Arc::new(b.finish()),
            Builder::Integer(mut b) => Arc::new(b.finish()),
            Builder::Unsigned(mut b) => Arc::new(b.finish()),
            Builder::Boolean(mut b) => Arc::new(b.finish()),
        }
    }
}

/// A `RowBinary` answer being read: little-endian numbers, strings as a LEB128 length and
/// the bytes, a nullable value as a null byte (1: null) then the value if not null.
pub(crate) struct RowBinary<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> RowBinary<'a> {
    pub(crate) fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("cut short at byte {}", self.at))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    pub(crate) fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    pub(crate) fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    /// A nullable value's null byte: whether the value follows.
    pub(crate) fn present(&mut self) -> Result<bool, String> {
        match self.take(1)?[0] {
            0 => Ok(true),
            1 => Ok(false),
            b => Err(format!("null byte {b} at byte {}", self.at - 1)),
        }
    }

    pub(crate) fn string(&mut self) -> Result<&'a str, String> {
        let mut len = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            len |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                let bytes = self.take(usize::try_from(len).map_err(|e| e.to_string())?)?;
                return std::str::from_utf8(bytes).map_err(|e| e.to_string());
            }
        }
        Err(format!("string length too long at byte {}", self.at))
    }
}

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
fn folds_listing() -> bool {
    std::env::var("CHINGEST_CLUSTER_FOLD_LISTING").as_deref() != Ok("0")
}

impl Cluster {
    /// Shard `k`'s `RowBinary` answer could not be read as the statement's columns.
    fn unexpected_answer(&self, k: usize, message: String) -> ClusterError {
        ClusterError::Refused {
            shard: k,
            endpoint: self.http.endpoint(k),
            statement: "SELECT … FORMAT RowBinary".into(),
            message: format!("unexpected answer: {message}"),
            code: None,
        }
    }

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
        let table = schema::table(db, measurement);
        let mut filter = format!("`time` >= {} AND `time` <= {}", rows.min, rows.max);
        if let Some(c) = rows.condition {
            filter.push_str(&format!(" AND ({c})"));
        }
        if rows.last_per_series {
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
        let sql = |filter: &str| {
            format!(
                "SELECT `time`, `series_id`, `__seq`, `__row`{list} FROM {table} \
                 WHERE {filter} LIMIT {} FORMAT RowBinary",
                max_rows.saturating_add(1)
            )
        };
        let answers = match rows.pointwise.filter(|_| !rows.last_per_series) {
            None if rows.last_per_series => {
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
            None => {
                let sql = sql(&filter);
                self.read_table_everywhere(db, measurement, columns, |k| {
                    self.http.statement_bytes(k, &sql)
                })?
            }
            Some(pointwise) => {
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
                    let Some(s) = snapshot else {
                        return Ok((self.http.statement_bytes(k, &sql(&filter))?, None));
                    };
                    let filter =
                        pointwise_filter(&filter, pointwise, rows.whole_series, &s.rewritten);
                    if !folds_listing() {
                        return Ok((self.http.statement_bytes(k, &sql(&filter))?, None));
                    }
                    let from = format!("{table} WHERE {filter}");
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

impl Cluster {
    /// The answer of `sql(k, snapshot)` on shard `k` — a `SELECT` whose columns are named
    /// `__p0`, `__p1`, … over [`Cluster::shard_table`] of `db`.`measurement`, grouping by
    /// point identity only the rows `snapshot` says may share a point (`None`: every row) —
    /// from every shard at once, each checked by its index after its read and read again
    /// if a rewrite landed meanwhile (`Cluster::read_identified`); every shard's rows in
    /// one batch, column `i` read as `out[i]` says (cast to the kind's shard type, so the
    /// binary answer's layout is known); `None` when no shard answers a row, with what the
    /// shards grouped. `columns` are made on a shard that lacks them first. More than
    /// `max_rows` rows over all shards fail the read: what a pushed-down aggregate sends
    /// (`storage/src/influxql/pushdown.rs`) is one row per group and interval. `prune`: the
    /// tag values its rows all hold; `sql` is then given the series of those on the shard,
    /// to add [`series_in`] of them to its condition (`None`: every series,
    /// [`crate::series_of_tags`]).
    #[allow(clippy::too_many_arguments)]
    pub fn read_partials(
        &self,
        db: &str,
        measurement: &str,
        columns: &[(String, ColumnKind)],
        prune: Option<&TagValues>,
        sql: impl Fn(usize, Option<&IdentitySnapshot>, Option<&[u64]>) -> String + Sync,
        out: &[(String, ColumnKind)],
        max_rows: u64,
    ) -> Result<(Option<RecordBatch>, Grouped), ClusterError> {
        let list: Vec<String> = out
            .iter()
            .enumerate()
            .map(|(i, (_, k))| format!("CAST(__p{i} AS {})", schema::shard_type(*k)))
            .collect();
        let cells: Vec<folded::Cell> = out.iter().map(|(_, k)| folded::Cell::Column(*k)).collect();
        let placeholders: Vec<String> = out.iter().map(|(_, k)| folded::placeholder(*k)).collect();
        let (answers, grouped) =
            self.read_identified(db, measurement, columns, prune, |k, snapshot, series| {
                let from = format!("({})", sql(k, snapshot, series));
                let limit = max_rows.saturating_add(1);
                if snapshot.is_none() || !folds_listing() {
                    let sql = format!(
                        "SELECT {} FROM {from} LIMIT {limit} FORMAT RowBinary",
                        list.join(", ")
                    );
                    return Ok((self.http.statement_bytes(k, &sql)?, None));
                }
                let sql = folded::statement(&list, &placeholders, &from, limit, db, measurement);
                self.read_folded(k, &sql, &cells)
            })?;
        let mut cols: Vec<Builder> = out.iter().map(|(_, k)| Builder::new(*k)).collect();
        let rows = self.each_row(&answers, max_rows, |r| {
            cols.iter_mut().try_for_each(|b| b.read(r))
        })?;
        if rows == 0 {
            return Ok((None, grouped));
        }
        let arrays: Vec<ArrayRef> = cols.into_iter().map(Builder::finish).collect();
        let fields: Vec<Field> = out
            .iter()
            .zip(&arrays)
            .map(|((name, kind), a)| {
                Field::new(name, a.data_type().clone(), *kind != ColumnKind::Tag)
            })
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
            .map(|b| (Some(b), grouped))
            .map_err(|e| ClusterError::Engine(engine::EngineError::Arrow(e.to_string())))
    }

    /// Shard `k`'s answer to a folded read `sql` ([`folded::statement`]): its rows as the
    /// plain read would have answered them, and the listing's lines.
    fn read_folded(
        &self,
        k: usize,
        sql: &str,
        cells: &[folded::Cell],
    ) -> Result<(Vec<u8>, Option<String>), ClusterError> {
        let answer = self.http.statement_bytes(k, sql)?;
        let (rows, listed) =
            folded::split(&answer, cells).map_err(|message| self.unexpected_answer(k, message))?;
        Ok((rows, Some(listed)))
    }

    /// Reads every row of every shard's `RowBinary` answer (shard order) with `row`; how
    /// many there were. More than `max_rows` fail the read; an answer `row` cannot read is
    /// the shard's unexpected answer.
    fn each_row(
        &self,
        answers: &[Vec<u8>],
        max_rows: u64,
        mut row: impl FnMut(&mut RowBinary<'_>) -> Result<(), String>,
    ) -> Result<u64, ClusterError> {
        let mut rows = 0u64;
        for (k, answer) in answers.iter().enumerate() {
            let mut r = RowBinary {
                bytes: answer,
                at: 0,
            };
            while !r.done() {
                rows += 1;
                if rows > max_rows {
                    return Err(ClusterError::TooManyRows { max_rows });
                }
                row(&mut r).map_err(|message| self.unexpected_answer(k, message))?;
            }
        }
        Ok(rows)
    }

    /// The table of `db`.`measurement` on each shard, as [`Cluster::read_partials`]'
    /// statements name it.
    pub fn shard_table(db: &str, measurement: &str) -> String {
        schema::table(db, measurement)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(out: &mut Vec<u8>, s: &str) {
        let mut len = s.len();
        loop {
            let b = (len & 0x7f) as u8;
            len >>= 7;
            if len == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        }
        out.extend_from_slice(s.as_bytes());
    }

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

    #[test]
    fn row_binary_reads_every_kind_nulls_and_long_strings_and_refuses_a_cut_answer() {
        let long = "x".repeat(300); // a two-byte length
        let mut bytes = Vec::new();
        string(&mut bytes, &long);
        bytes.extend_from_slice(&[0]);
        bytes.extend_from_slice(&1.5f64.to_bits().to_le_bytes());
        bytes.extend_from_slice(&[1]); // a null integer
        bytes.extend_from_slice(&[0]);
        bytes.extend_from_slice(&u64::MAX.to_le_bytes());
        bytes.extend_from_slice(&[0]);
        string(&mut bytes, "é\t\n");
        bytes.extend_from_slice(&[0, 1]);
        let kinds = [
            ColumnKind::Tag,
            ColumnKind::Float,
            ColumnKind::Integer,
            ColumnKind::Unsigned,
            ColumnKind::String,
            ColumnKind::Boolean,
        ];
        let mut cols: Vec<Builder> = kinds.iter().map(|k| Builder::new(*k)).collect();
        let mut r = RowBinary {
            bytes: &bytes,
            at: 0,
        };
        for b in &mut cols {
            b.read(&mut r).unwrap();
        }
        assert!(r.done());
        let arrays: Vec<ArrayRef> = cols.into_iter().map(Builder::finish).collect();
        use arrow::array::{Array, AsArray};
        use arrow::datatypes::{Float64Type, Int64Type, UInt64Type};
        assert_eq!(arrays[0].as_string::<i32>().value(0), long);
        assert_eq!(arrays[1].as_primitive::<Float64Type>().value(0), 1.5);
        assert!(arrays[2].as_primitive::<Int64Type>().is_null(0));
        assert_eq!(arrays[3].as_primitive::<UInt64Type>().value(0), u64::MAX);
        assert_eq!(arrays[4].as_string::<i32>().value(0), "é\t\n");
        assert!(arrays[5].as_boolean().value(0));

        // Cut short, or a null byte that is neither 0 nor 1: an error, not a value.
        let mut cut = RowBinary {
            bytes: &bytes[..bytes.len() - 1],
            at: 0,
        };
        let mut cols: Vec<Builder> = kinds.iter().map(|k| Builder::new(*k)).collect();
        let failed = cols.iter_mut().try_for_each(|b| b.read(&mut cut));
        assert!(failed.unwrap_err().contains("cut short"));
        let mut bad = RowBinary {
            bytes: &[7, 0, 0, 0, 0, 0, 0, 0, 0],
            at: 0,
        };
        assert!(Builder::new(ColumnKind::Float)
            .read(&mut bad)
            .unwrap_err()
            .contains("null byte 7"));
    }
}
