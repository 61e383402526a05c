//! A pushed-down read's answer from its partial rows: the shards', and the node's own over
//! the rows it holds for the series with undelivered rows (their shard rows and the
//! undelivered ones, an undelivered row maybe rewriting a point a shard holds).
//!
//! The node's partials come from the partial statement run in the embedded engine (point
//! identity by `argMax` over `(__seq, __row)`, as on the shards); there are none once every
//! acknowledged row of the measurement's range is delivered, the common case. The partials
//! are then combined in Rust ([`Pushdown::combine`]), so a read without undelivered rows
//! runs no engine statement at all. Partials that combination does not read (a column of
//! an unexpected type: a bug) are combined by the engine's statement
//! ([`Pushdown::combine_sql`]) instead, as before, counted in
//! `chingest_cluster_pushdown_combined_total{by="engine"}`.

use engine::arrow::array::RecordBatch;
use engine::table::ColumnKind;
use engine::{quote_ident, ArrowScan};

use super::{sql_type, Call, Pushdown};
use crate::influxql::error::InfluxqlError;
use crate::influxql::rows::Row;
use crate::influxql::InfluxqlRequest;
use crate::Storage;

/// What was read for a pushed-down statement.
pub(super) struct Partials<'a> {
    /// The shards' partial rows (`None`: no shard answered a row).
    pub(super) shards: Option<RecordBatch>,
    /// The node's rows of the series with undelivered rows, their shard rows included.
    pub(super) node: Option<RecordBatch>,
    /// The shard columns the node's rows have after `time`, `series_id`, `__seq`, `__row`.
    pub(super) columns: &'a [(String, ColumnKind)],
    /// The measurement (for logs and errors).
    pub(super) measurement: &'a str,
    /// The shards' partial statement (for the debug log).
    pub(super) shard_sql: &'a str,
}

/// Counts which combined a pushed-down read's partials, in
/// `chingest_cluster_pushdown_combined_total{by}`: `rust` ([`Pushdown::combine`]) or
/// `engine` (its statement, the fallback), or `rows` (not combined: a `count(DISTINCT)` set
/// over its bound, the rows read instead).
fn count_combined(by: &'static str) {
    metrics::counter!("chingest_cluster_pushdown_combined_total", "by" => by).increment(1);
}

/// Registers the counter, so both labels are exported before the first read.
pub(super) fn register_metrics() {
    for by in ["rust", "engine", "rows"] {
        metrics::counter!("chingest_cluster_pushdown_combined_total", "by" => by).absolute(0);
    }
}

impl Storage {
    /// The rows `sql.rs`'s aggregate statement would answer, from `read`'s partials;
    /// `None` where they cannot answer it (a `count(DISTINCT)` set over its bound): then
    /// the statement reads the rows.
    pub(super) fn pushdown_answer(
        &self,
        push: &Pushdown,
        read: Partials<'_>,
        req: &InfluxqlRequest<'_>,
    ) -> Result<Option<Vec<Row>>, InfluxqlError> {
        if read.shards.is_none() && read.node.is_none() {
            // Nothing to combine (the engine's statement is not run either).
            count_combined("rust");
            return Ok(Some(Vec::new()));
        }
        let engine = self
            .engine()
            .map_err(|_| engine::SqlError::Unavailable("the server is shutting down".into()))?;
        let unavailable = crate::influxql::cluster::unavailable(format!("{:?}", read.measurement));
        let kinds = push.partial_kinds();
        // Arrow scans stay registered until the statements reading them are done.
        let mut scans: Vec<ArrowScan> = Vec::new();
        let mut register = |batch: RecordBatch| {
            let scan = engine
                .arrow_scan(batch)
                .and_then(|s| s.register(1).map(|()| s))
                .map_err(|e| unavailable(e.to_string()))?;
            let sql = scan.table_sql(0);
            scans.push(scan);
            Ok::<_, InfluxqlError>(sql)
        };
        let node_sql = match read.node {
            Some(rows) => Some(node_partial_sql(
                push,
                &register(rows)?,
                read.columns,
                &kinds,
            )),
            None => None,
        };
        let node_parts = match &node_sql {
            Some(sql) => self.engine_batches(sql, req)?,
            None => Vec::new(),
        };
        let batches: Vec<&RecordBatch> = read.shards.iter().chain(&node_parts).collect();
        match push.combine(&batches) {
            Ok(rows) => {
                count_combined("rust");
                tracing::debug!(
                    measurement = read.measurement,
                    combined = "rust",
                    node_rows = node_sql.is_some(),
                    "InfluxQL pushed down: {}",
                    read.shard_sql
                );
                return Ok(Some(rows));
            }
            Err(e) if push.calls.iter().any(Call::rust_only) => {
                // The engine's statement has no sets or whole aggregates to combine either.
                tracing::debug!(
                    measurement = read.measurement,
                    "pushed-down partials not combined, reading the rows: {e}"
                );
                count_combined("rows");
                return Ok(None);
            }
            Err(e) => tracing::warn!(
                measurement = read.measurement,
                "pushed-down partials combined by the engine instead: {e}"
            ),
        }
        count_combined("engine");
        let mut branches = Vec::new();
        if let Some(p) = read.shards {
            let names: Vec<String> = kinds.iter().map(|(n, _)| quote_ident(n)).collect();
            branches.push(format!("SELECT {} FROM {}", names.join(", "), register(p)?));
        }
        branches.extend(node_sql);
        let sql = push.combine_sql(&format!("({})", branches.join(" UNION ALL ")));
        tracing::debug!(
            measurement = read.measurement,
            combined = "engine",
            "InfluxQL pushed down: {} | {sql}",
            read.shard_sql
        );
        let groups = push.groups.len();
        let rows = self.engine_rows(&sql, req, groups, true, read.measurement)?;
        drop(scans);
        Ok(Some(rows))
    }

    /// The engine's `ArrowStream` answer to `sql` as batches (maybe several streams).
    pub(super) fn engine_batches(
        &self,
        sql: &str,
        req: &InfluxqlRequest<'_>,
    ) -> Result<Vec<RecordBatch>, InfluxqlError> {
        let engine = self
            .engine()
            .map_err(|_| engine::SqlError::Unavailable("the server is shutting down".into()))?;
        let mut answer = Vec::new();
        // Generated from the parsed statement, every name and literal quoted.
        engine.sql_generated(
            engine::Lane::Clients,
            sql,
            engine::OutputFormat::ArrowStream,
            req.access,
            req.cancel,
            &mut |block| {
                answer.extend_from_slice(block);
                true
            },
        )?;
        let bad = |e: engine::arrow::error::ArrowError| InfluxqlError::EngineAnswer(e.to_string());
        let mut out = Vec::new();
        let mut cursor = std::io::Cursor::new(answer.as_slice());
        while (cursor.position() as usize) < answer.len() {
            let reader = engine::arrow::ipc::reader::StreamReader::try_new(&mut cursor, None)
                .map_err(bad)?;
            for batch in reader {
                out.push(batch.map_err(bad)?);
            }
        }
        Ok(out)
    }
}

/// The node's rows (an Arrow scan `scan` with `time` as a `DateTime64`) as a table with the
/// shard table's columns: `time` as `Int64` ns, `series_id`, `__seq`, `__row`, `columns`.
pub(super) fn node_source(scan: &str, columns: &[(String, ColumnKind)]) -> String {
    let mut cols = vec![
        "toUnixTimestamp64Nano(__n.`time`) AS `time`".to_string(),
        "__n.`series_id` AS `series_id`".to_string(),
        "__n.`__seq` AS `__seq`".to_string(),
        "__n.`__row` AS `__row`".to_string(),
    ];
    cols.extend(
        columns
            .iter()
            .map(|(c, _)| format!("__n.{q} AS {q}", q = quote_ident(c))),
    );
    format!("(SELECT {} FROM {scan} AS __n)", cols.join(", "))
}

/// The partial statement over the node's rows (an Arrow scan `scan` with `time` as a
/// `DateTime64`), its columns named and typed as the shards' partials ([`Pushdown::partial_kinds`]).
fn node_partial_sql(
    push: &Pushdown,
    scan: &str,
    columns: &[(String, ColumnKind)],
    kinds: &[(String, ColumnKind)],
) -> String {
    let source = node_source(scan, columns);
    let partial = push.partial_sql_with(&source, None, None, false);
    let list: Vec<String> = kinds
        .iter()
        .enumerate()
        .map(|(i, (n, k))| format!("CAST(__p{i} AS {}) AS {}", sql_type(*k), quote_ident(n)))
        .collect();
    format!("SELECT {} FROM ({partial})", list.join(", "))
}
