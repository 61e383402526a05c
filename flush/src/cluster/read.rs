//! The rows of a measurement on the shards, as one Arrow batch in the embedded layout: what
//! chingest's InfluxQL reads when the points are on a ClickHouse cluster (it merges them
//! with the acknowledged rows not delivered yet and applies point identity, as it does for
//! the embedded tables).
//!
//! Each shard is asked for the rows of the statement's time range in `TabSeparated` (the
//! text format every supported server speaks); the node converts them. Bounded: more than
//! `max_rows` rows over all shards fails the read rather than growing memory.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, RecordBatch, StringBuilder,
    TimestampNanosecondBuilder, UInt32Builder, UInt64Builder,
};

use super::{schema, Cluster, ClusterError};
use crate::table::{engine_schema, ColumnKind};
use crate::{quote_ident, unescape_tsv};

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

    /// Appends one TabSeparated cell (`\N`: null).
    fn push(&mut self, cell: &str) -> Result<(), String> {
        let null = cell == "\\N";
        let bad = |e: &dyn std::fmt::Display| format!("{cell:?}: {e}");
        match self {
            Builder::Tag(b) => b.append_value(unescape_tsv(cell)),
            Builder::String(b) if null => b.append_null(),
            Builder::String(b) => b.append_value(unescape_tsv(cell)),
            Builder::Float(b) if null => b.append_null(),
            Builder::Float(b) => b.append_value(cell.parse().map_err(|e| bad(&e))?),
            Builder::Integer(b) if null => b.append_null(),
            Builder::Integer(b) => b.append_value(cell.parse().map_err(|e| bad(&e))?),
            Builder::Unsigned(b) if null => b.append_null(),
            Builder::Unsigned(b) => b.append_value(cell.parse().map_err(|e| bad(&e))?),
            Builder::Boolean(b) if null => b.append_null(),
            Builder::Boolean(b) => b.append_value(cell != "0"),
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
        let list: String = columns
            .iter()
            .map(|(n, _)| format!(", {}", quote_ident(n)))
            .collect();
        let mut rows = 0u64;
        let sql = format!(
            "SELECT `time`, `series_id`, `__seq`, `__row`{list} FROM {table} \
             WHERE {filter} LIMIT {} FORMAT TabSeparated",
            max_rows.saturating_add(1)
        );
        let answers = self.read_table_everywhere(db, measurement, columns, &sql)?;
        for (k, answer) in answers.iter().enumerate() {
            let bad = |message: String| ClusterError::Refused {
                shard: k,
                endpoint: self.config.shards[k].clone(),
                statement: "SELECT … FORMAT TabSeparated".into(),
                message: format!("unexpected answer: {message}"),
            };
            for line in answer.lines() {
                rows += 1;
                if rows > max_rows {
                    return Err(ClusterError::TooManyRows { max_rows });
                }
                let mut cells = line.split('\t');
                let mut next = || {
                    cells
                        .next()
                        .ok_or_else(|| bad(format!("short row {line:?}")))
                };
                let parse = |c: &str| c.parse::<u64>().map_err(|e| bad(format!("{c:?}: {e}")));
                let t = next()?;
                time.append_value(t.parse::<i64>().map_err(|e| bad(format!("{t:?}: {e}")))?);
                series.append_value(parse(next()?)?);
                seq.append_value(parse(next()?)?);
                let r = next()?;
                row.append_value(r.parse::<u32>().map_err(|e| bad(format!("{r:?}: {e}")))?);
                for b in &mut cols {
                    b.push(next()?).map_err(bad)?;
                }
            }
        }
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
            .map_err(|e| ClusterError::Engine(crate::EngineError::Arrow(e.to_string())))
    }
}
