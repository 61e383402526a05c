//! Runs a planned `SELECT`: one engine statement per measurement in the SQL
//! sandbox (with the caller's access), its rows cut into series, then what
//! the engine does not do (fill, `ORDER BY time DESC` of aggregates,
//! `LIMIT`/`OFFSET` of filled intervals, `SLIMIT`/`SOFFSET`).

use std::collections::HashMap;

use flush::Rewrites;
use influxql::ast::{Fill, SelectStatement, Source, Statement};

use super::error::InfluxqlError;
use super::fill::{fill_series_in, Grid};
use super::hot::RawRows;
use super::plan::{self, Plan};
use super::range;
use super::rows::{self, Row};
use super::schema;
use super::series::{Series, StatementResult, Value};
use super::{
    integral, page, post, read_path, reduce, sql, stages, subquery, unflushed, InfluxqlRequest,
};
use crate::Storage;
use stages::Stage;

/// Counts the time since `read` began as the `shards` stage, and in `spent` (taken off the
/// `plan` stage, which a statement's clock otherwise gives it).
fn shards_read(spent: &mut std::time::Duration, read: std::time::Instant) {
    let took = read.elapsed();
    *spent += took;
    stages::add(Stage::Shards, took);
}

/// Reads of one table that a concurrent rewrite may invalidate before the
/// read groups every row (a rewrite is rare; many in a row mean a backfill).
const READ_ATTEMPTS: usize = 3;

/// Reads that found the measurement's table (or a column) not in the engine
/// yet while some of its points were unflushed: each waits for that flush and
/// reads again.
const FIRST_FLUSH_ATTEMPTS: usize = 3;

/// A measurement's rows as its read path gives them.
enum Measured {
    Raw(RawRows),
    /// The last points' answer, as series in the answer's order
    /// (`last_point.rs`).
    LastPoints(Vec<Series>),
}

/// What one engine statement came to.
pub(crate) enum Ran {
    Rows(Vec<Row>),
    /// The table or a column is not in the engine (nothing of it flushed).
    NotFlushedYet(String),
}

impl Storage {
    /// Answers one statement (see [`crate::Store::influxql`]).
    pub(crate) fn run_influxql(
        &self,
        req: InfluxqlRequest<'_>,
    ) -> Result<StatementResult, InfluxqlError> {
        match req.statement {
            Statement::Select(s) => self.run_select(&req, s),
            Statement::Delete(d) => self.run_deletion(&req, d, false),
            Statement::DropSeries(d) => self.run_deletion(&req, d, true),
            other => self.run_show(&req, other),
        }
    }

    fn run_select(
        &self,
        req: &InfluxqlRequest<'_>,
        stmt: &SelectStatement,
    ) -> Result<StatementResult, InfluxqlError> {
        if integral::applies(stmt) {
            return self.run_integral(req, stmt);
        }
        let started = std::time::Instant::now();
        let shape = plan::check(stmt)?;
        let zone = plan::zone(stmt)?;
        let filter = range::split_in(stmt.condition.as_ref(), req.now_ns, zone.as_ref())?;
        // The answer rows of measurements whose aggregate the shards computed, by index
        // in `tables`.
        let mut pushed: HashMap<usize, Vec<Row>> = HashMap::new();
        // Time spent reading a cluster's shards, timed as its own stage and not as planning.
        let mut shards_spent = std::time::Duration::ZERO;
        let (db, tables) = match stmt.sources.as_slice() {
            [Source::Subquery(inner)] => {
                // Read as rows here (`InfluxqlRequest::packed`).
                let plain = InfluxqlRequest {
                    packed: false,
                    ..*req
                };
                let inner = self.run_select(&plain, &subquery::with_outer_tags(inner, stmt))?;
                let engine = self.engine().map_err(|_| {
                    engine::SqlError::Unavailable("the server is shutting down".into())
                })?;
                let tables = subquery::materialize(&inner)?
                    .into_iter()
                    .map(|m| {
                        let scan = engine.arrow_scan(m.batch).map_err(|e| {
                            engine::SqlError::Unavailable(format!(
                                "cannot hand a subquery's answer to the engine: {e}"
                            ))
                        })?;
                        Ok((m.schema, Some((scan.table_sql(0), scan))))
                    })
                    .collect::<Result<Vec<_>, InfluxqlError>>()?;
                (String::new(), tables)
            }
            sources if sources.iter().any(|s| matches!(s, Source::Subquery(_))) => {
                return Err(InfluxqlError::unsupported(
                    "a subquery together with other sources",
                ))
            }
            sources => {
                let catalog = |db: &str| {
                    self.catalog
                        .database_exists(db)
                        .then(|| self.statement_schema(db, sources))
                };
                let resolved = schema::resolve(req.db, sources, &catalog)?;
                let all = schema::union(&resolved.measurements);
                let mut tables: Vec<(_, Option<(String, engine::ArrowScan)>)> = Vec::new();
                let pushed = &mut pushed;
                let shards_spent = &mut shards_spent;
                for m in &resolved.measurements {
                    // Points on a ClickHouse cluster are read as a subquery's answer is
                    // (`cluster.rs`), over the range the plan reads (a transformation's
                    // reaches back a window); a measurement without points has no answer.
                    let scan = match &self.cluster {
                        None => None,
                        Some(c) => {
                            let target = plan::Target {
                                db: &resolved.db,
                                schema: m,
                                all: &all,
                                source: None,
                            };
                            let Some(probe) = plan::plan(stmt, shape, target, &filter, req.now_ns)?
                            else {
                                continue;
                            };
                            let read = std::time::Instant::now();
                            // Each group's last point comes back as the answer's rows,
                            // merged in Rust as the embedded last points are
                            // (`cluster_last_point.rs`).
                            let rows = match probe.asks_last_point() {
                                true => self.cluster_last_points(c, m, &probe, req)?,
                                false => None,
                            };
                            if let Some(rows) = rows {
                                super::pushdown::count_read("last_point");
                                read_path::record(read_path::Path::LastPoint, read.elapsed());
                                shards_read(shards_spent, read);
                                pushed.insert(tables.len(), rows);
                                tables.push((m.clone(), None));
                                continue;
                            }
                            // An aggregate the shards can compute comes back as the
                            // answer's rows (`pushdown.rs`).
                            let rows = self.cluster_pushdown(
                                c,
                                &resolved.db,
                                m,
                                stmt,
                                &probe,
                                &filter.rest,
                                req,
                            )?;
                            if let Some(rows) = rows {
                                shards_read(shards_spent, read);
                                pushed.insert(tables.len(), rows);
                                tables.push((m.clone(), None));
                                continue;
                            }
                            // A raw read whose condition the shards apply whole: its
                            // answer rows built here (`cluster_raw.rs`).
                            let replan = |source: &str| {
                                let target = plan::Target {
                                    source: Some(source),
                                    ..target
                                };
                                plan::plan(stmt, shape, target, &filter, req.now_ns)
                            };
                            let rows = self.cluster_raw_rows(
                                c,
                                &resolved.db,
                                m,
                                &probe,
                                &filter.rest,
                                req,
                                &replan,
                            )?;
                            if let Some((rows, merged)) = rows {
                                // The engine's merge of some series' rows is its own stage.
                                let took = read.elapsed();
                                *shards_spent += took;
                                stages::add(Stage::Shards, took.saturating_sub(merged));
                                stages::add(Stage::Engine, merged);
                                pushed.insert(tables.len(), rows);
                                tables.push((m.clone(), None));
                                continue;
                            }
                            let scan = self.cluster_scan(
                                c,
                                &resolved.db,
                                m,
                                &probe,
                                &filter.rest,
                                req.cancel,
                            )?;
                            shards_read(shards_spent, read);
                            match scan {
                                Some(scan) => Some((scan.table_sql(0), scan)),
                                None => continue,
                            }
                        }
                    };
                    tables.push((m.clone(), scan));
                }
                (resolved.db, tables)
            }
        };
        // Every answer row is built in memory: the sandbox's row limit bounds
        // them as it bounds the engine's answers.
        let limit = self.row_limit();
        let mut budget = RowBudget { limit, left: limit };
        let schemas: Vec<_> = tables.iter().map(|(m, _)| m.clone()).collect();
        let all = schema::union(&schemas);
        let mut series = Vec::new();
        // A subquery's inner statement timed its own stages: the outer one's start here.
        let mut at = match stmt.sources.as_slice() {
            [Source::Subquery(_)] => std::time::Instant::now(),
            _ => started + shards_spent,
        };
        // A scan that is not a subquery's answer holds a cluster's shard rows.
        let shard_rows = !matches!(stmt.sources.as_slice(), [Source::Subquery(_)]);
        for (i, (m, table)) in tables.iter().enumerate() {
            let target = plan::Target {
                db: &db,
                schema: m,
                all: &all,
                source: table.as_ref().map(|(t, _)| t.as_str()),
            };
            let planned = plan::plan(stmt, shape, target, &filter, req.now_ns)?;
            stages::lap(Stage::Plan, at);
            let Some(plan) = planned else {
                at = std::time::Instant::now();
                continue;
            };
            if plan.range.is_empty() {
                at = std::time::Instant::now();
                continue;
            }
            let rows = match table {
                _ if pushed.contains_key(&i) => pushed.remove(&i).unwrap_or_default(),
                Some((name, scan)) => {
                    let ran = std::time::Instant::now();
                    let rows = self.read_source(&plan, req, name, scan, shard_rows)?;
                    stages::lap(Stage::Engine, ran);
                    rows
                }
                None => match self.read_measurement(stmt, &filter.rest, &plan, req, m)? {
                    Measured::Raw(RawRows::Rows(rows)) => rows,
                    Measured::LastPoints(found) => {
                        // Built by the read, in order (`last_point.rs`).
                        let built = std::time::Instant::now();
                        for s in &found {
                            budget.spend(s.len() as u64)?;
                        }
                        series.extend(found);
                        at = stages::lap(Stage::Build, built);
                        continue;
                    }
                    Measured::Raw(RawRows::Packed(groups)) => {
                        let built = std::time::Instant::now();
                        let mut found = packed_series(&plan, groups, &mut budget)?;
                        if plan.order_desc {
                            found.reverse();
                        }
                        series.extend(found);
                        at = stages::lap(Stage::Build, built);
                        continue;
                    }
                },
            };
            let built = std::time::Instant::now();
            let rows = plan.drop_valueless(rows);
            let mut found = to_series(&plan, rows, &mut budget)?;
            if plan.order_desc {
                // Series come in descending tag order too.
                found.reverse();
            }
            series.extend(found);
            at = stages::lap(Stage::Build, built);
        }
        Ok(StatementResult {
            series: slimit(series, stmt),
            messages: Vec::new(),
        })
    }

    /// `SELECT integral(...) ...`: the raw points of its fields, integrated
    /// per series and window (`integral.rs`).
    fn run_integral(
        &self,
        req: &InfluxqlRequest<'_>,
        stmt: &SelectStatement,
    ) -> Result<StatementResult, InfluxqlError> {
        let raw = integral::raw_statement(stmt)?;
        // On a cluster, where every group is one series, its shard integrates it
        // (`pushdown/integral.rs`); a statement the rows path refuses is refused there.
        if let (Some(cluster), Ok(windows), Ok(zone)) =
            (&self.cluster, integral::windows(stmt), plan::zone(stmt))
        {
            let start = range::split_in(stmt.condition.as_ref(), req.now_ns, zone.as_ref())
                .ok()
                .and_then(|w| w.range.min);
            let answer =
                self.cluster_integral(cluster, req, stmt, &raw, windows.as_ref(), start)?;
            if let Some(mut answer) = answer {
                answer.series = slimit(answer.series, stmt);
                return Ok(answer);
            }
        }
        let plain = InfluxqlRequest {
            packed: false,
            ..*req
        };
        let points = self.run_select(&plain, &raw)?;
        let windows = integral::windows(stmt)?;
        let zone = plan::zone(stmt)?;
        let start = range::split_in(stmt.condition.as_ref(), req.now_ns, zone.as_ref())?
            .range
            .min;
        let mut answer = integral::answer(stmt, points, windows.as_ref(), start)?;
        answer.series = slimit(answer.series, stmt);
        Ok(answer)
    }

    /// The rows of `plan` from the hot store, the last points or the engine,
    /// whichever may answer first, recorded by path (`read_path.rs`).
    fn read_measurement(
        &self,
        stmt: &SelectStatement,
        rest: &[influxql::ast::Expr],
        plan: &Plan,
        req: &InfluxqlRequest<'_>,
        m: &ingest::MeasurementSchema,
    ) -> Result<Measured, InfluxqlError> {
        let started = std::time::Instant::now();
        // One-row series side by side where only the JSON renderer reads
        // them and nothing counts series (`one_row.rs`).
        let one_row = req.packed && stmt.slimit.is_none() && stmt.soffset.is_none();
        let (rows, path) = if let Some(found) = self.read_last_points(plan, req, m, one_row)? {
            (Measured::LastPoints(found), read_path::Path::LastPoint)
        } else if let Some(rows) = self.read_hot(stmt, rest, plan, req, m)? {
            (Measured::Raw(rows), read_path::Path::Hot)
        } else {
            let ran = std::time::Instant::now();
            let rows = self.read_points(plan, req, m)?;
            stages::lap(Stage::Engine, ran);
            (Measured::Raw(RawRows::Rows(rows)), read_path::Path::Engine)
        };
        read_path::record(path, started.elapsed());
        Ok(rows)
    }

    /// The engine's rows for `plan`: the table's and the acknowledged points
    /// not flushed yet (`unflushed.rs`), grouping into points only the rows
    /// that may share one. A measurement or field whose first points are not
    /// in the engine yet waits for that flush.
    fn read_points(
        &self,
        plan: &Plan,
        req: &InfluxqlRequest<'_>,
        schema: &ingest::MeasurementSchema,
    ) -> Result<Vec<Row>, InfluxqlError> {
        let engine = self
            .engine()
            .map_err(|_| engine::SqlError::Unavailable("the server is shutting down".into()))?;
        for _ in 0..FIRST_FLUSH_ATTEMPTS {
            let acked = self.wal.last_seq();
            let scan = unflushed::scan(
                &engine,
                self.reads.unflushed(),
                plan,
                schema,
                acked,
                self.row_limit(),
                req.cancel,
            )?;
            match self.read_table(&engine, plan, req, scan.as_ref())? {
                Ran::Rows(rows) => return Ok(rows),
                Ran::NotFlushedYet(m) if scan.is_some() => {
                    tracing::debug!(measurement = %plan.measurement,
                        "InfluxQL read waits for a first flush: {m}");
                    unflushed::wait_first_flush(
                        self.reads.unflushed(),
                        &plan.db,
                        &plan.measurement,
                        acked,
                        req.cancel,
                    )?;
                }
                Ran::NotFlushedYet(m) => {
                    tracing::debug!(measurement = %plan.measurement,
                        "InfluxQL read of unflushed data: {m}");
                    return Ok(Vec::new());
                }
            }
        }
        Err(engine::SqlError::Unavailable(format!(
            "the newest points of {:?} are not in the engine yet; try again",
            plan.measurement
        ))
        .into())
    }

    /// The rows of a plan over a subquery's answer or a cluster's shard rows
    /// (`shard_rows`), registered as `scan` (`name` is its first reference): each
    /// reference of the statement gets its own registration (the engine reads one
    /// once). Shard rows are points of series: a raw answer is ordered here
    /// (`row_order.rs`); a subquery's keeps the engine's order.
    fn read_source(
        &self,
        plan: &Plan,
        req: &InfluxqlRequest<'_>,
        name: &str,
        scan: &engine::ArrowScan,
        shard_rows: bool,
    ) -> Result<Vec<Row>, InfluxqlError> {
        let (mut rows, order) = self.source_rows(plan, req, name, scan, shard_rows)?;
        if let Some(order) = order {
            order.sort(&mut rows);
        }
        Ok(rows)
    }

    /// [`read_source`](Self::read_source)'s rows before its sort, and the sort (a raw
    /// answer's rows then carry the columns it orders by after the plan's).
    pub(crate) fn source_rows(
        &self,
        plan: &Plan,
        req: &InfluxqlRequest<'_>,
        name: &str,
        scan: &engine::ArrowScan,
        shard_rows: bool,
    ) -> Result<(Vec<Row>, Option<super::row_order::RowOrder>), InfluxqlError> {
        let (sql, order) = match shard_rows {
            true => sql::render_shard_rows(plan),
            false => (sql::render_with(plan, &Rewrites::All, None), None),
        };
        let mut parts = sql.split(name);
        let mut numbered = parts.next().unwrap_or_default().to_string();
        let mut references = 0;
        for part in parts {
            numbered.push_str(&scan.table_sql(references));
            numbered.push_str(part);
            references += 1;
        }
        scan.register(references).map_err(|e| {
            engine::SqlError::Unavailable(format!(
                "cannot hand a subquery's answer to the engine: {e}"
            ))
        })?;
        let rows = self.engine_rows(
            &numbered,
            req,
            plan.group_tags.len(),
            as_arrow(plan),
            &plan.measurement,
        )?;
        Ok((rows, order))
    }

    /// One read of the table (and `scan`'s rows), grouping into points only
    /// the rows the flusher's index says may share one (`flush::identity`).
    /// A rewrite the flusher found while the statement ran may be in what it
    /// read: then it runs again, and after [`READ_ATTEMPTS`] groups every row.
    fn read_table(
        &self,
        engine: &engine::Engine,
        plan: &Plan,
        req: &InfluxqlRequest<'_>,
        scan: Option<&unflushed::Scan>,
    ) -> Result<Ran, InfluxqlError> {
        let table = scan.map(|s| move |k: usize| s.arrow.table_sql(k));
        let refs = scan
            .zip(table.as_ref())
            .map(|(s, t)| sql::Unflushed::new(t, s.min, s.max));
        let run = |rewrites: &Rewrites| {
            let (sql, order) = sql::render_read(plan, rewrites, refs.as_ref());
            if let (Some(s), Some(r)) = (scan, refs.as_ref()) {
                s.arrow.register(r.used()).map_err(|e| {
                    engine::SqlError::Unavailable(format!(
                        "cannot read the points not flushed yet: {e}"
                    ))
                })?;
            }
            tracing::debug!(measurement = %plan.measurement, "InfluxQL read: {sql}");
            let mut ran = self.engine_read(&sql, req, plan.group_tags.len(), as_arrow(plan))?;
            if let (Ran::Rows(rows), Some(order)) = (&mut ran, order) {
                order.sort(rows);
            }
            Ok(ran)
        };
        let index = self.reads.identity();
        for _ in 0..READ_ATTEMPTS {
            let snapshot = index
                .snapshot(&|| engine.connection(), &plan.db, &plan.measurement)
                .map_err(|e| {
                    engine::SqlError::Unavailable(format!(
                        "cannot read the table's point index: {e}"
                    ))
                })?;
            let ran = run(&snapshot.rewrites)?;
            if snapshot.rewrites == Rewrites::All || snapshot.still_valid(index) {
                return Ok(ran);
            }
        }
        run(&Rewrites::All)
    }

    /// Rows one InfluxQL answer may have: `[sql] max_result_rows`.
    pub(crate) fn row_limit(&self) -> u64 {
        // Not `engine()`: reading a setting refuses no inline statement.
        self.engine
            .read()
            .as_ref()
            .map_or(0, |e| e.sql_config().max_result_rows)
    }

    /// The engine's rows for `sql` (`groups` tag columns after the time);
    /// none when the measurement's table (or a column) is not in the engine
    /// yet (nothing of it flushed).
    pub(crate) fn engine_rows(
        &self,
        sql: &str,
        req: &InfluxqlRequest<'_>,
        groups: usize,
        arrow: bool,
        measurement: &str,
    ) -> Result<Vec<Row>, InfluxqlError> {
        match self.engine_read(sql, req, groups, arrow)? {
            Ran::Rows(rows) => Ok(rows),
            Ran::NotFlushedYet(m) => {
                tracing::debug!(measurement, "InfluxQL read of unflushed data: {m}");
                Ok(Vec::new())
            }
        }
    }

    /// The engine's rows for `sql`, answered as Arrow when `arrow` (no column is a reducer's
    /// array), else as JSON (`rows.rs`).
    pub(crate) fn engine_read(
        &self,
        sql: &str,
        req: &InfluxqlRequest<'_>,
        groups: usize,
        arrow: bool,
    ) -> Result<Ran, InfluxqlError> {
        let engine = self
            .engine()
            .map_err(|_| engine::SqlError::Unavailable("the server is shutting down".into()))?;
        let mut answer = Vec::new();
        // Generated from the parsed statement, every name and literal quoted:
        // the sandbox's connections, limits and the caller's role, not the
        // gate for user SQL.
        let format = if arrow {
            engine::OutputFormat::ArrowStream
        } else {
            engine::OutputFormat::JSONCompactEachRowWithNamesAndTypes
        };
        let ran = engine.sql_generated(
            engine::Lane::Clients,
            sql,
            format,
            req.access,
            req.cancel,
            &mut |block| {
                answer.extend_from_slice(block);
                true
            },
        );
        match ran {
            Ok(_) if arrow => rows::parse_arrow(&answer, groups).map(Ran::Rows),
            Ok(_) => rows::parse(&answer, groups).map(Ran::Rows),
            Err(engine::SqlError::Invalid(m)) if crate::read::not_flushed_yet(&m) => {
                Ok(Ran::NotFlushedYet(m))
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Whether `plan`'s answer can come as Arrow: no column is a reducer's array, which
/// `reduce.rs` reads in its JSON form.
fn as_arrow(plan: &Plan) -> bool {
    plan.columns.iter().all(|c| c.reducer.is_none())
}

/// The answer's column names: one list shared by every series.
pub(super) fn column_names(plan: &Plan) -> std::sync::Arc<Vec<String>> {
    let mut columns = Vec::with_capacity(plan.columns.len() + 1);
    columns.push("time".to_string());
    columns.extend(plan.columns.iter().map(|c| c.name.clone()));
    std::sync::Arc::new(columns)
}

/// A hot raw answer's groups (`hot/raw.rs`: ordered, paged) as series whose
/// rows stay packed (`packed.rs`): raw points need no fill or reduction.
fn packed_series(
    plan: &Plan,
    groups: Vec<(Vec<String>, super::series::Packed)>,
    budget: &mut RowBudget,
) -> Result<Vec<Series>, InfluxqlError> {
    let columns = column_names(plan);
    let mut out = Vec::with_capacity(groups.len());
    for (group, packed) in groups {
        budget.spend(packed.len() as u64)?;
        if packed.is_empty() {
            continue;
        }
        out.push(Series {
            name: plan.measurement.clone(),
            tags: plan.group_tags.iter().cloned().zip(group).collect(),
            columns: columns.clone(),
            values: Vec::new(),
            packed: Some(Box::new(packed)),
            one_row: None,
        });
    }
    Ok(out)
}

/// Rows (ordered by group) cut into series, filled where the plan says.
fn to_series(
    plan: &Plan,
    rows: Vec<Row>,
    budget: &mut RowBudget,
) -> Result<Vec<Series>, InfluxqlError> {
    // One list of names for every group (TSBS `lastpoint`: 20 names × 200
    // groups were copied), and each group's key moved, not copied.
    let columns = column_names(plan);
    let mut out: Vec<Series> = Vec::new();
    for row in rows {
        // A new group when its key differs from the last series' tags (the
        // key itself moved into them: TSBS `lastpoint` at 1,000 hosts copied
        // each one-row group's key once more here).
        let same = out.last().is_some_and(|s: &Series| {
            s.tags.len() == row.group.len()
                && s.tags.iter().zip(&row.group).all(|((_, v), g)| v == g)
        });
        if !same {
            out.push(Series {
                name: plan.measurement.clone(),
                tags: plan.group_tags.iter().cloned().zip(row.group).collect(),
                columns: columns.clone(),
                values: Vec::new(),
                packed: None,
                one_row: None,
            });
        }
        // In place: the engine's rows leave a slot for the time (`rows.rs`).
        let mut values = row.values;
        values.insert(0, row.time.map_or(Value::Null, Value::Time));
        if let Some(s) = out.last_mut() {
            s.values.push(values);
        }
    }
    for s in &mut out {
        if reduce_rows(plan, s)? {
            // Several rows per group, at their points' times: no fill.
            if plan.order_desc {
                s.values.reverse();
            }
            s.values = page(std::mem::take(&mut s.values), plan.limit, plan.offset);
        } else {
            finish(plan, s, budget)?;
        }
        budget.spend(s.values.len() as u64)?;
    }
    out.retain(|s| !s.values.is_empty());
    Ok(out)
}

/// Computes the reducer column (`mode`, `distinct`, `top`, `bottom`) of each
/// row from its group's points; true when groups answer several rows.
fn reduce_rows(plan: &Plan, s: &mut Series) -> Result<bool, InfluxqlError> {
    let Some((i, r)) = plan
        .columns
        .iter()
        .enumerate()
        .find_map(|(i, c)| c.reducer.as_ref().map(|r| (i + 1, r)))
    else {
        return Ok(false);
    };
    let mut rows = Vec::with_capacity(s.values.len());
    for row in std::mem::take(&mut s.values) {
        let group_time = match row.first() {
            Some(Value::Time(t)) => *t,
            _ => 0,
        };
        let tuples = reduce::decode(&row[i], r)?;
        for (t, v, extras) in reduce::reduce(r, &tuples, group_time) {
            let mut out = row.clone();
            out[0] = Value::Time(t);
            out[i] = v;
            for (c, col) in plan.columns.iter().enumerate() {
                if let Some(e) = col.companion {
                    out[c + 1] = extras.get(e).cloned().unwrap_or(Value::Null);
                }
            }
            rows.push(out);
        }
    }
    s.values = rows;
    Ok(r.multi_row())
}

/// Fill, transformations, order and limits of one series.
fn finish(plan: &Plan, s: &mut Series, budget: &RowBudget) -> Result<(), InfluxqlError> {
    let window = plan.aggregate.as_ref().and_then(|a| a.window);
    let transforms = plan.transforms();
    if let (Some(agg), Some(w)) = (&plan.aggregate, window) {
        if plan.order_desc {
            s.values.reverse();
        }
        let grid = Grid {
            interval: w.interval,
            offset: w.offset,
            start: plan.range.min,
            end: plan.range.max.unwrap_or(i64::MAX),
            descending: plan.order_desc,
        };
        if !matches!(agg.fill, Fill::None) {
            budget.check_buckets(&grid, s)?;
        }
        let columns: Vec<_> = plan.columns.iter().map(|c| c.fill).collect();
        if !transforms {
            let zone = agg.zone.as_ref();
            fill_series_in(s, &agg.fill, &grid, zone, &columns, plan.limit, plan.offset);
            return Ok(());
        }
        fill_series_in(s, &agg.fill, &grid, agg.zone.as_ref(), &columns, None, None);
    }
    if transforms {
        let list: Vec<_> = plan.columns.iter().map(|c| c.transform.clone()).collect();
        let opts = post::Options {
            interval: window.map(|w| w.interval),
            descending: plan.order_desc,
            limit: plan.limit,
            offset: plan.offset,
        };
        post::apply(s, &list, opts);
        return Ok(());
    } else if plan.aggregate.is_none() {
        // Raw points: the engine applied LIMIT and OFFSET.
        return Ok(());
    }
    s.values = page(std::mem::take(&mut s.values), plan.limit, plan.offset);
    Ok(())
}

/// Rows an answer may still build. `GROUP BY time(1ns)` over a year with
/// `fill(null)` would otherwise build ~10^16 empty intervals in memory: the
/// intervals a series would be filled with are counted before they are built,
/// and refused with InfluxDB's `max-select-buckets` error past the limit.
struct RowBudget {
    limit: u64,
    left: u64,
}

impl RowBudget {
    fn check_buckets(&self, grid: &Grid, s: &Series) -> Result<(), InfluxqlError> {
        let first_time = s.values.iter().find_map(|r| match r.first() {
            Some(Value::Time(t)) => Some(*t),
            _ => None,
        });
        let Some(start) = grid.start.or(first_time) else {
            return Ok(());
        };
        let (first, last) = (grid.window(start), grid.window(grid.end));
        let buckets = (i128::from(last) - i128::from(first)) / i128::from(grid.interval.max(1)) + 1;
        let buckets = u64::try_from(buckets.max(0)).unwrap_or(u64::MAX);
        if buckets > self.left {
            return Err(InfluxqlError::invalid(format!(
                "max-select-buckets limit exceeded: ({buckets}/{}) ([sql] max_result_rows)",
                self.left
            )));
        }
        Ok(())
    }

    fn spend(&mut self, rows: u64) -> Result<(), InfluxqlError> {
        self.left = self.left.checked_sub(rows).ok_or_else(|| {
            InfluxqlError::invalid(format!(
                "max-select-point limit exceeded: ({}/{}) ([sql] max_result_rows)",
                self.limit - self.left + rows,
                self.limit
            ))
        })?;
        Ok(())
    }
}

/// `SOFFSET`/`SLIMIT` over the statement's series.
fn slimit(series: Vec<Series>, stmt: &SelectStatement) -> Vec<Series> {
    page(series, stmt.slimit, stmt.soffset)
}
