//! `SHOW MEASUREMENTS|TAG KEYS|TAG VALUES|SERIES ... WHERE <tag condition>`:
//! which series match is the engine's to say (one `SELECT DISTINCT` of the
//! tag columns per measurement, in the SQL sandbox with the caller's access);
//! without `WHERE` the server answers from the catalog.

use engine::quote_ident;
use influxql::ast::{Expr, MeasurementName, NameMatch, ShowCommon, Statement, TagKeyMatch};
use ingest::MeasurementSchema;

use super::error::InfluxqlError;
use super::exec::Ran;
use super::expr::{Scope, SRC};
use super::range;
use super::schema::name_matches;
use super::series::{Series, StatementResult, Value};
use super::{page, read_path, unflushed, InfluxqlRequest};
use crate::Storage;

impl Storage {
    /// Answers a `SHOW` statement with a `WHERE` clause.
    pub(crate) fn run_show(
        &self,
        req: &InfluxqlRequest<'_>,
        statement: &Statement,
    ) -> Result<StatementResult, InfluxqlError> {
        let (on, from, cond, limit, offset) = match statement {
            Statement::ShowMeasurements(s) => (&s.on, &[][..], &s.condition, s.limit, s.offset),
            Statement::ShowTagKeys(c) | Statement::ShowSeries(c) => common(c),
            Statement::ShowTagValues { common: c, .. } => common(c),
            other => {
                return Err(InfluxqlError::unsupported(format!("{other:?}")));
            }
        };
        let db = on
            .as_deref()
            .or(req.db)
            .ok_or(InfluxqlError::DatabaseRequired)?;
        if !self.catalog.database_exists(db) {
            return Err(InfluxqlError::DatabaseNotFound { db: db.into() });
        }
        let Some(cond) = cond else {
            return Err(InfluxqlError::unsupported("SHOW without WHERE in storage"));
        };
        let mut out: Vec<Series> = Vec::new();
        let mut flat: Vec<Vec<Value>> = Vec::new();
        for m in self.catalog.schema(db) {
            if !in_from(from, &m.name)? {
                continue;
            }
            if let Statement::ShowMeasurements(s) = statement {
                if let Some(p) = &s.with_measurement {
                    if !name_matches(p, &m.name)? {
                        continue;
                    }
                }
            }
            let keys = match statement {
                Statement::ShowTagValues { key, .. } => wanted_keys(&m, key)?,
                _ => m.tag_keys.clone(),
            };
            if let Statement::ShowTagValues { .. } = statement {
                let started = std::time::Instant::now();
                let hot =
                    self.hot_tag_values(Some(req.access), db, &m, &keys, Some(cond), req.now_ns)?;
                if let Some(pairs) = hot {
                    read_path::record(read_path::Path::Hot, started.elapsed());
                    let values = pairs
                        .into_iter()
                        .map(|(k, v)| vec![Value::String(k.into()), Value::String(v.into())])
                        .collect();
                    push(
                        &mut out,
                        &m.name,
                        &["key", "value"],
                        page(values, limit, offset),
                    );
                    continue;
                }
            }
            let started = std::time::Instant::now();
            let sets = self.tag_sets(req, db, &m, cond, &keys)?;
            if let Statement::ShowTagValues { .. } = statement {
                read_path::record(read_path::Path::Engine, started.elapsed());
            }
            if sets.is_empty() {
                continue;
            }
            match statement {
                Statement::ShowMeasurements(_) => {
                    flat.push(vec![Value::String(m.name.as_str().into())])
                }
                Statement::ShowSeries(_) => flat.extend(
                    sets.iter()
                        .map(|s| vec![Value::String(series_key(&m.name, &keys, s).into())]),
                ),
                Statement::ShowTagKeys(_) => {
                    let values = keys
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| sets.iter().any(|s| !s[*i].is_empty()))
                        .map(|(_, k)| vec![Value::String(k.as_str().into())])
                        .collect();
                    push(&mut out, &m.name, &["tagKey"], page(values, limit, offset));
                }
                _ => {
                    let mut pairs: Vec<(String, String)> = Vec::new();
                    for s in &sets {
                        for (k, v) in keys.iter().zip(s) {
                            if !v.is_empty() {
                                pairs.push((k.clone(), v.clone()));
                            }
                        }
                    }
                    pairs.sort();
                    pairs.dedup();
                    let values = pairs
                        .into_iter()
                        .map(|(k, v)| vec![Value::String(k.into()), Value::String(v.into())])
                        .collect();
                    push(
                        &mut out,
                        &m.name,
                        &["key", "value"],
                        page(values, limit, offset),
                    );
                }
            }
        }
        match statement {
            Statement::ShowMeasurements(_) => push(
                &mut out,
                "measurements",
                &["name"],
                page(flat, limit, offset),
            ),
            Statement::ShowSeries(_) => {
                flat.sort_by(|a, b| match (&a[0], &b[0]) {
                    (Value::String(x), Value::String(y)) => x.cmp(y),
                    _ => std::cmp::Ordering::Equal,
                });
                push(&mut out, "", &["key"], page(flat, limit, offset))
            }
            _ => {}
        }
        Ok(StatementResult {
            series: out,
            messages: Vec::new(),
        })
    }

    /// The distinct values of `keys` (`''` where absent) over the series of
    /// `m` that match `cond`, sorted.
    fn tag_sets(
        &self,
        req: &InfluxqlRequest<'_>,
        db: &str,
        m: &MeasurementSchema,
        cond: &Expr,
        keys: &[String],
    ) -> Result<Vec<Vec<String>>, InfluxqlError> {
        let filter = range::split(Some(cond), req.now_ns)?;
        let mut scope = Scope::new(m);
        scope.qualifier = SRC;
        let mut conds = Vec::new();
        for c in &filter.rest {
            conds.push(scope.condition(c)?);
        }
        let mut select = String::from("SELECT toInt64(0) AS __iq_t");
        for (i, k) in keys.iter().enumerate() {
            let col = if m.tag_keys.contains(k) {
                format!("{SRC}{}", quote_ident(k))
            } else {
                "''".into()
            };
            select.push_str(&format!(", toString({col}) AS __iq_c{i}"));
        }
        let group_order = |sql: &mut String| {
            sql.push_str(" GROUP BY ");
            let groups: Vec<String> = (0..keys.len()).map(|i| format!("__iq_c{i}")).collect();
            sql.push_str(&if groups.is_empty() {
                "__iq_t".to_string()
            } else {
                groups.join(", ")
            });
            if !groups.is_empty() {
                sql.push_str(&format!(" ORDER BY {}", groups.join(", ")));
            }
        };
        let mut rows = Vec::new();
        if let Some(cluster) = &self.cluster {
            // The cluster's series, read where the table would be.
            if let Some(scan) = self.cluster_tag_scan(cluster, db, m, req.cancel)? {
                let mut sql = format!("{select} FROM {} AS __src", scan.table_sql(0));
                if !conds.is_empty() {
                    sql.push_str(&format!(" WHERE {}", conds.join(" AND ")));
                }
                group_order(&mut sql);
                scan.register(1).map_err(|e| {
                    engine::SqlError::Unavailable(format!("cannot read the cluster's series: {e}"))
                })?;
                if let Ran::Rows(r) = self.engine_read(&sql, req, 0, true)? {
                    rows = r;
                }
            }
            return Ok(strings(rows));
        }
        let engine = self
            .engine()
            .map_err(|_| engine::SqlError::Unavailable("the server is shutting down".into()))?;
        // The series of acknowledged points not flushed yet count too (as
        // `SELECT` sees them); a tag only they have waits for their flush.
        for attempt in 0..2 {
            let acked = self.wal.last_seq();
            let scan = unflushed::scan_tags(
                &engine,
                self.reads.unflushed(),
                db,
                &m.name,
                &m.tag_keys,
                acked,
                self.row_limit(),
                req.cancel,
            )?;
            let table = engine::table::qualified(db, &m.name);
            let table = match &scan {
                Some(s) => {
                    let cols = std::iter::once("series_id")
                        .chain(m.tag_keys.iter().map(String::as_str))
                        .map(quote_ident)
                        .collect::<Vec<_>>()
                        .join(", ");
                    format!(
                        "(SELECT {cols} FROM {table} UNION ALL SELECT {cols} FROM {})",
                        s.arrow.table_sql(0)
                    )
                }
                None => table,
            };
            let mut sql = format!("{select} FROM {table} AS __src");
            if !conds.is_empty() {
                sql.push_str(&format!(" WHERE {}", conds.join(" AND ")));
            }
            group_order(&mut sql);
            if let Some(s) = &scan {
                s.arrow.register(1).map_err(|e| {
                    engine::SqlError::Unavailable(format!(
                        "cannot read the points not flushed yet: {e}"
                    ))
                })?;
            }
            match self.engine_read(&sql, req, 0, true)? {
                Ran::Rows(r) => {
                    rows = r;
                    break;
                }
                Ran::NotFlushedYet(_) if scan.is_some() && attempt == 0 => {
                    unflushed::wait_first_flush(
                        self.reads.unflushed(),
                        db,
                        &m.name,
                        acked,
                        req.cancel,
                    )?;
                }
                Ran::NotFlushedYet(msg) => {
                    tracing::debug!(measurement = %m.name, "SHOW of unflushed data: {msg}");
                    break;
                }
            }
        }
        Ok(strings(rows))
    }
}

/// The engine's rows of tag values as strings.
fn strings(rows: Vec<super::rows::Row>) -> Vec<Vec<String>> {
    rows.into_iter()
        .map(|r| {
            r.values
                .into_iter()
                .map(|v| match v {
                    Value::String(s) => s.to_string(),
                    _ => String::new(),
                })
                .collect()
        })
        .collect()
}

/// The clauses every `SHOW` with a condition has.
type Clauses<'a> = (
    &'a Option<String>,
    &'a [MeasurementName],
    &'a Option<Expr>,
    Option<u64>,
    Option<u64>,
);

fn common(c: &ShowCommon) -> Clauses<'_> {
    (&c.on, c.from.as_slice(), &c.condition, c.limit, c.offset)
}

pub(super) fn in_from(from: &[MeasurementName], m: &str) -> Result<bool, InfluxqlError> {
    if from.is_empty() {
        return Ok(true);
    }
    for f in from {
        if name_matches(&f.name, m)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The tag keys of `m` that `WITH KEY ...` asks for.
fn wanted_keys(m: &MeasurementSchema, key: &TagKeyMatch) -> Result<Vec<String>, InfluxqlError> {
    let mut out = Vec::new();
    for k in &m.tag_keys {
        let hit = match key {
            TagKeyMatch::Eq(x) => x == k,
            TagKeyMatch::NotEq(x) => x != k,
            TagKeyMatch::In(xs) => xs.contains(k),
            TagKeyMatch::Regex(re) => name_matches(&NameMatch::Regex(re.clone()), k)?,
            TagKeyMatch::NotRegex(re) => !name_matches(&NameMatch::Regex(re.clone()), k)?,
        };
        if hit {
            out.push(k.clone());
        }
    }
    Ok(out)
}

/// `m,k=v,...` with InfluxDB's escaping, tags a series lacks left out.
fn series_key(m: &str, keys: &[String], values: &[String]) -> String {
    let esc = |s: &str, chars: &[char]| {
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            if chars.contains(&c) {
                out.push('\\');
            }
            out.push(c);
        }
        out
    };
    let mut key = esc(m, &[',', ' ']);
    for (k, v) in keys.iter().zip(values) {
        if !v.is_empty() {
            key.push(',');
            key.push_str(&esc(k, &[',', '=', ' ']));
            key.push('=');
            key.push_str(&esc(v, &[',', '=', ' ']));
        }
    }
    key
}

fn push(out: &mut Vec<Series>, name: &str, columns: &[&str], values: Vec<Vec<Value>>) {
    if values.is_empty() {
        return;
    }
    out.push(Series {
        name: name.to_string(),
        tags: Vec::new(),
        columns: std::sync::Arc::new(columns.iter().map(|c| c.to_string()).collect()),
        values,
        packed: None,
        one_row: None,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_keys_escape_and_skip_absent_tags() {
        let keys = ["host".to_string(), "pa th".to_string()];
        assert_eq!(
            series_key("c,pu", &keys, &["a=b".into(), String::new()]),
            r"c\,pu,host=a\=b"
        );
        assert_eq!(
            series_key("cpu", &keys, &["a".into(), "/x".into()]),
            r"cpu,host=a,pa\ th=/x"
        );
    }
}
