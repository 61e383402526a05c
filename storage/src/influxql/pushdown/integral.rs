//! `integral()` on a ClickHouse cluster where every group is one series (grouped by every
//! tag key of each measurement: `GROUP BY *` or each named): a series lives on one shard,
//! so that shard integrates it (`integral_sql.rs`) and sends one row per series, call and
//! window instead of every point. The rows path read every raw row to the node
//! (`influxql/integral.rs` over the raw statement's answer), failing past
//! `[sql] max_result_rows`.
//!
//! The series with acknowledged rows not delivered yet are left out of the shards'
//! statement; their shard rows are read raw, merged with the undelivered ones, and the same
//! statement runs over them in the embedded engine (an undelivered row may rewrite a point a
//! shard holds), as `median` does (`mod.rs`). Anything else reads the rows: a group of
//! several series, a `tz()` window, a field condition or a tag condition the shards cannot
//! evaluate, a field that is not a number (the rows path answers InfluxDB's error), a
//! subquery, more than [`MAX_PENDING_SERIES`] series with undelivered rows, a write
//! `__seq` past 2³².

use std::collections::BTreeMap;

use engine::arrow::array::{Array, AsArray, RecordBatch};
use engine::arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};
use engine::quote_ident;
use engine::table::ColumnKind;
use influxql::ast::{SelectStatement, Source};
use ingest::{FieldType, MeasurementSchema};

use super::integral_sql::{integral_sql, Grid, IntegralCall};
use super::{shard_reads, sql_type, FieldUse, Pushdown, MAX_PENDING_SERIES};
use crate::influxql::cluster::{strict_shard_condition, unavailable};
use crate::influxql::error::InfluxqlError;
use crate::influxql::integral::{self, Windows};
use crate::influxql::plan::{self, Presence};
use crate::influxql::series::{Series, StatementResult};
use crate::influxql::series_prune::tag_values;
use crate::influxql::unflushed::kind;
use crate::influxql::{range, schema, InfluxqlRequest};
use crate::Storage;

/// One measurement's integrals as its shards compute them.
struct Measurement {
    schema: MeasurementSchema,
    /// The `GROUP BY` tags (sorted, as the raw read's series have them).
    group_tags: Vec<String>,
    push: Pushdown,
    calls: Vec<IntegralCall>,
}

impl Measurement {
    /// The columns of a row of [`integral_sql`] as `cluster::Cluster::read_partials` reads
    /// them.
    fn kinds(&self) -> Vec<(String, ColumnKind)> {
        let mut out: Vec<(String, ColumnKind)> = (0..self.group_tags.len())
            .map(|g| (format!("k{g}"), ColumnKind::Tag))
            .collect();
        out.extend([
            ("c".to_string(), ColumnKind::Unsigned),
            ("w".to_string(), ColumnKind::Integer),
            ("v".to_string(), ColumnKind::Float),
            ("ms".to_string(), ColumnKind::Unsigned),
        ]);
        out
    }

    fn sql(&self, points: &str) -> String {
        let known: Vec<bool> = self.push.groups.iter().map(|(_, k)| *k).collect();
        let grid = self.push.window.map(|w| Grid {
            interval: w.interval,
            offset: w.offset,
        });
        integral_sql(points, &known, &self.push.fields, &self.calls, grid)
    }
}

/// The database and the measurements of `raw` (the statement's raw read,
/// `integral::raw_statement`) whose integrals the shards can compute, or `None` if one's
/// cannot.
fn decompose(
    storage: &Storage,
    req: &InfluxqlRequest<'_>,
    stmt: &SelectStatement,
    raw: &SelectStatement,
    windows: Option<&Windows>,
) -> Result<Option<(String, Vec<Measurement>)>, InfluxqlError> {
    let window = match windows {
        Some(w) if w.zone.is_some() => return Ok(None),
        Some(w) => Some(plan::Window {
            interval: w.interval,
            offset: w.offset,
        }),
        None => None,
    };
    if raw.sources.iter().any(|s| matches!(s, Source::Subquery(_))) {
        return Ok(None);
    }
    let calls = integral::calls(stmt)?;
    let shape = plan::check(raw)?;
    let zone = plan::zone(raw)?;
    let filter = range::split_in(raw.condition.as_ref(), req.now_ns, zone.as_ref())?;
    let catalog = |db: &str| {
        storage
            .catalog
            .database_exists(db)
            .then(|| storage.statement_schema(db, &raw.sources))
    };
    let resolved = schema::resolve(req.db, &raw.sources, &catalog)?;
    let all = schema::union(&resolved.measurements);
    let mut out = Vec::new();
    for m in &resolved.measurements {
        let target = plan::Target {
            db: &resolved.db,
            schema: m,
            all: &all,
            source: None,
        };
        let Some(p) = plan::plan(raw, shape, target, &filter, req.now_ns)? else {
            continue;
        };
        if p.range.is_empty() {
            continue;
        }
        let one_series = m.tag_keys.iter().all(|k| p.group_tags.contains(k));
        if !one_series || p.source.is_some() || !p.outer_where.is_empty() {
            return Ok(None);
        }
        let Some(condition) = strict_shard_condition(&filter.rest, m) else {
            return Ok(None);
        };
        let mut fields: Vec<FieldUse> = Vec::new();
        let mut pushed = Vec::new();
        for c in &calls {
            let Some((_, ty)) = m.fields.iter().find(|(n, _)| *n == c.field) else {
                return Ok(None);
            };
            let integer = match ty {
                FieldType::Float => false,
                FieldType::Integer | FieldType::UInteger => true,
                _ => return Ok(None),
            };
            let field = match fields.iter().position(|f| f.name == c.field) {
                Some(i) => i,
                None => {
                    fields.push(FieldUse {
                        name: c.field.clone(),
                        kind: kind(*ty),
                        values: true,
                    });
                    fields.len() - 1
                }
            };
            pushed.push(IntegralCall {
                field,
                unit: c.unit,
                integer,
            });
        }
        let push = Pushdown {
            calls: Vec::new(),
            fields,
            groups: p
                .group_tags
                .iter()
                .map(|t| (t.clone(), m.tag_keys.contains(t)))
                .collect(),
            condition,
            series_of: tag_values(&filter.rest, m),
            window,
            shard_window: window,
            zone: None,
            point_time: false,
            min: p.range.min.unwrap_or(i64::MIN),
            max: p.range.max.unwrap_or(i64::MAX),
            presence: Presence::AfterEngine,
            start: p.range.min.unwrap_or(0),
            by_series: false,
            outputs: None,
        };
        out.push(Measurement {
            schema: m.clone(),
            group_tags: p.group_tags.clone(),
            push,
            calls: pushed,
        });
    }
    Ok(Some((resolved.db, out)))
}

/// One group's integrals: per call, `(window start, integral)`.
type Emitted = Vec<Vec<(i64, f64)>>;

impl Storage {
    /// `stmt`'s answer (an `integral()` statement, `raw` its raw read) on `cluster`, the
    /// shards integrating each series, before `SLIMIT`; `None` when they cannot: then the
    /// statement reads the rows. `start`: the lower bound of its time range.
    pub(crate) fn cluster_integral(
        &self,
        cluster: &cluster::Cluster,
        req: &InfluxqlRequest<'_>,
        stmt: &SelectStatement,
        raw: &SelectStatement,
        windows: Option<&Windows>,
        start: Option<i64>,
    ) -> Result<Option<StatementResult>, InfluxqlError> {
        let Some((db, measurements)) = decompose(self, req, stmt, raw, windows)? else {
            return Ok(None);
        };
        let db = db.as_str();
        let columns = integral::column_names(stmt);
        let mut series: Vec<Series> = Vec::new();
        for m in &measurements {
            let Some(groups) = self.integrals_of(cluster, db, m, req)? else {
                return Ok(None);
            };
            for (tags, mut emitted) in groups {
                if windows.is_none() {
                    // Without windows, an integer field's integral is at the range's start.
                    for (c, rows) in m.calls.iter().zip(&mut emitted) {
                        if c.integer {
                            rows.iter_mut().for_each(|(t, _)| *t = start.unwrap_or(0));
                        }
                    }
                }
                let tags = m.group_tags.iter().cloned().zip(tags).collect();
                series.extend(integral::assemble(
                    stmt,
                    m.schema.name.clone(),
                    tags,
                    &columns,
                    emitted,
                ));
            }
        }
        // One per measurement read, as for the other pushed-down reads.
        for _ in &measurements {
            super::count_read("pushdown");
        }
        Ok(Some(StatementResult {
            series,
            messages: Vec::new(),
        }))
    }

    /// Each group's integrals of `m` (by its tag values, in order), from its shards and,
    /// for the series with undelivered rows, from the node; `None`: read the rows.
    fn integrals_of(
        &self,
        cluster: &cluster::Cluster,
        db: &str,
        m: &Measurement,
        req: &InfluxqlRequest<'_>,
    ) -> Result<Option<BTreeMap<Vec<String>, Emitted>>, InfluxqlError> {
        let schema = &m.schema;
        let push = &m.push;
        let unavailable = unavailable(format!("{:?}", schema.name));
        let too_many = |e: cluster::ClusterError| match e {
            cluster::ClusterError::TooManyRows { .. } => {
                InfluxqlError::from(engine::SqlError::LimitExceeded(e.to_string()))
            }
            other => unavailable(other.to_string()),
        };
        let columns: Vec<(String, ColumnKind)> = push
            .groups
            .iter()
            .filter(|(_, known)| *known)
            .map(|(t, _)| (t.clone(), ColumnKind::Tag))
            .chain(push.fields.iter().map(|f| (f.name.clone(), f.kind)))
            .collect();
        let max_rows = self.row_limit();
        let pending = self.undelivered(db, schema, &columns, (push.min, push.max), req.cancel)?;
        let pending_series = pending
            .as_ref()
            .map(crate::influxql::cluster::series_of)
            .unwrap_or_default();
        if pending_series.len() > MAX_PENDING_SERIES {
            return Ok(None);
        }
        let listed = (!pending_series.is_empty()).then(|| {
            let ids: Vec<String> = pending_series.iter().map(u64::to_string).collect();
            ids.join(",")
        });
        let table = cluster::Cluster::shard_table(db, &schema.name);
        let kinds = m.kinds();
        let shard_sql =
            |_: usize, snapshot: Option<&cluster::IdentitySnapshot>, series: Option<&[u64]>| {
                let mut push = push.clone();
                if let Some(ids) = series {
                    push.only_series(ids);
                }
                let split = snapshot.map(|s| s.rewritten.as_slice());
                m.sql(&push.points_sql(&table, listed.as_deref(), split))
            };
        let (parts, node_rows) = std::thread::scope(|s| {
            let raw = listed.as_deref().map(|list| {
                let columns = &columns;
                s.spawn(move || {
                    push.listed_rows(cluster, db, &schema.name, columns, list, max_rows)
                })
            });
            let parts = cluster.read_partials(
                db,
                &schema.name,
                &columns,
                push.series_of.as_ref(),
                shard_sql,
                &kinds,
                max_rows,
            );
            let raw = raw.map(|h| h.join().expect("a shard read does not panic"));
            (parts, raw)
        });
        let (parts, grouped) = parts.map_err(too_many)?;
        super::count_grouping(grouped.label());
        let stored = node_rows.transpose().map_err(too_many)?.flatten();
        let node =
            shard_reads::node_rows(stored, pending).map_err(|e| unavailable(e.to_string()))?;
        if !shard_reads::seqs_pack(parts.as_ref(), node.as_ref()) {
            return Ok(None);
        }
        let mut batches: Vec<RecordBatch> = parts.into_iter().collect();
        if let Some(rows) = node {
            let engine = self
                .engine()
                .map_err(|_| engine::SqlError::Unavailable("the server is shutting down".into()))?;
            let scan = engine
                .arrow_scan(rows)
                .and_then(|s| s.register(1).map(|()| s))
                .map_err(|e| unavailable(e.to_string()))?;
            let source = super::answer::node_source(&scan.table_sql(0), &columns);
            let sql = m.sql(&push.points_sql(&source, None, None));
            let list: Vec<String> = kinds
                .iter()
                .enumerate()
                .map(|(i, (n, k))| {
                    format!("CAST(__p{i} AS {}) AS {}", sql_type(*k), quote_ident(n))
                })
                .collect();
            let sql = format!("SELECT {} FROM ({sql})", list.join(", "));
            batches.extend(self.engine_batches(&sql, req)?);
            drop(scan);
        }
        let mut groups: BTreeMap<Vec<String>, Emitted> = BTreeMap::new();
        for b in &batches {
            read_rows(b, m.group_tags.len(), m.calls.len(), &mut groups).map_err(&unavailable)?;
        }
        for emitted in groups.values_mut() {
            for rows in emitted.iter_mut() {
                rows.sort_unstable_by_key(|(w, _)| *w);
            }
        }
        Ok(Some(groups))
    }
}

/// Column `name` of `batch` as `to` (the engine may send text as binary or a dictionary).
fn column(
    batch: &RecordBatch,
    name: &str,
    to: &DataType,
) -> Result<std::sync::Arc<dyn Array>, String> {
    let col = batch
        .column_by_name(name)
        .ok_or_else(|| format!("no column {name:?} in the integrals"))?;
    if col.data_type() == to {
        return Ok(col.clone());
    }
    engine::arrow::compute::cast(col, to).map_err(|e| format!("column {name:?}: {e}"))
}

/// The rows of `batch` (columns [`Measurement::kinds`]: `tags` group tags, `calls` calls)
/// into `groups`.
fn read_rows(
    batch: &RecordBatch,
    tags: usize,
    calls: usize,
    groups: &mut BTreeMap<Vec<String>, Emitted>,
) -> Result<(), String> {
    let tags = (0..tags)
        .map(|g| column(batch, &format!("k{g}"), &DataType::Utf8))
        .collect::<Result<Vec<_>, _>>()?;
    let call = column(batch, "c", &DataType::UInt64)?;
    let window = column(batch, "w", &DataType::Int64)?;
    let value = column(batch, "v", &DataType::Float64)?;
    let (call, window, value) = (
        call.as_primitive::<UInt64Type>(),
        window.as_primitive::<Int64Type>(),
        value.as_primitive::<Float64Type>(),
    );
    for i in 0..batch.num_rows() {
        let key: Vec<String> = tags
            .iter()
            .map(|t| t.as_string::<i32>().value(i).to_string())
            .collect();
        let c = call.value(i) as usize;
        if c >= calls || window.is_null(i) || value.is_null(i) {
            return Err(format!("an unexpected integral row {i}"));
        }
        let emitted = groups.entry(key).or_insert_with(|| vec![Vec::new(); calls]);
        emitted[c].push((window.value(i), value.value(i)));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
