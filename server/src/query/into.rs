//! `SELECT … INTO <target> FROM …`: the statement's answer written back as points, as
//! InfluxDB 1.x does it (answers compared with influxd 1.6.7 in `server/tests/http/into.rs`).
//!
//! Each answered series becomes points of the target measurement (`:MEASUREMENT`: the
//! source's name): its `GROUP BY` tags stay tags, every other column is a field (so
//! without `GROUP BY` a tag becomes a string field, as in 1.x), a row without any value is
//! no point, the row's time is the point's. The points go through the write path like a
//! `/write` (ingest's checks, the WAL, durable before the answer), as ingest's columnar
//! msgpack in bodies of at most [`ROWS_PER_WRITE`] rows. Writing the same answer twice
//! leaves the same points (point identity), so a rerun after a crash neither loses nor
//! doubles anything. The answer is InfluxDB's: series `result`, `written` points at time 0.

use influxql::ast::{Fill, NameMatch, SelectStatement, Statement};
use storage::influxql::{Series, StatementResult, Value};
use storage::InfluxqlError;

use super::execute::{in_storage_rows, Context};
use crate::error::ApiError;
use crate::{AppState, Store};

/// Rows per write body: large enough that the engine's per-insert cost amortises, small
/// enough that one body stays far below `/write`'s limits.
pub(super) const ROWS_PER_WRITE: usize = 50_000;

/// Runs a `SELECT` with `INTO` and writes its answer. Blocking (inside the runtime).
pub(super) fn execute<S: Store>(
    state: &AppState<S>,
    cx: &Context<'_>,
    select: &SelectStatement,
) -> Result<StatementResult, ApiError> {
    let written = write_answer(state, cx, select)?;
    Ok(StatementResult::of(vec![Series::untagged(
        "result",
        &["time", "written"],
        vec![vec![Value::Time(0), Value::Integer(written as i64)]],
    )]))
}

/// Runs a `SELECT` with `INTO` and writes its answer: the points written.
pub(super) fn write_answer<S: Store>(
    state: &AppState<S>,
    cx: &Context<'_>,
    select: &SelectStatement,
) -> Result<u64, ApiError> {
    let target = select.into.as_ref().expect("a SELECT with INTO");
    let db = target_database(target.database.as_deref(), cx.db)?;
    if !state.store.database_exists(&db) {
        return Err(ApiError::Query(format!("database not found: {db}")));
    }
    // The target policy's data (else the database's default policy).
    let db = state
        .policies
        .resolve(&db, target.retention_policy.as_deref())
        .map_err(|rp| ApiError::from(InfluxqlError::RetentionPolicyNotFound { rp }))?;
    let measurement = match &target.name {
        NameMatch::Name(n) if !n.is_empty() => Some(n.as_str()),
        _ => None, // `:MEASUREMENT`
    };
    let mut inner = select.clone();
    inner.into = None;
    // Rows without values are written as nothing, so `fill(null)` (the default) is
    // `fill(none)` here, and a window grid that runs to now() from the first point (no lower
    // bound in the statement) costs nothing: InfluxDB streams those empty windows, chingest
    // does not produce them.
    if matches!(inner.fill, None | Some(Fill::Null)) {
        inner.fill = Some(Fill::None);
    }
    let answer = in_storage_rows(state, cx, &Statement::Select(Box::new(inner)))?;
    let mut written = 0;
    for body in bodies(&answer.series, measurement, ROWS_PER_WRITE) {
        written +=
            crate::write::write_internal(state, &db, &body, ingest::Format::MsgpackColumnar)?;
    }
    Ok(written)
}

/// The database `INTO` names, else the request's.
pub(super) fn target_database(
    named: Option<&str>,
    request: Option<&str>,
) -> Result<String, ApiError> {
    named
        .filter(|d| !d.is_empty())
        .or(request)
        .map(str::to_string)
        .ok_or_else(|| ApiError::Query("database name required".into()))
}

/// The answer as columnar msgpack bodies (ingest's format: one map per series chunk,
/// `fields` holding a column per answered column, `nil` where a row has no value), at most
/// `rows` rows each; rows without any value are left out.
fn bodies(series: &[Series], measurement: Option<&str>, rows: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut body = Vec::new();
    let mut maps = 0u32;
    let mut in_body = 0usize;
    let flush = |body: &mut Vec<u8>, maps: &mut u32, out: &mut Vec<Vec<u8>>| {
        if *maps > 0 {
            let mut framed = Vec::with_capacity(body.len() + 5);
            let _ = rmp::encode::write_array_len(&mut framed, *maps);
            framed.extend_from_slice(body);
            out.push(framed);
        }
        body.clear();
        *maps = 0;
    };
    for s in series {
        let Some(time_col) = s.columns.iter().position(|c| c == "time") else {
            continue;
        };
        let kept: Vec<&Vec<Value>> = s
            .values
            .iter()
            .filter(|row| {
                row.iter()
                    .enumerate()
                    .any(|(i, v)| i != time_col && storable(v))
            })
            .collect();
        for chunk in kept.chunks(rows.max(1)) {
            if in_body + chunk.len() > rows {
                flush(&mut body, &mut maps, &mut out);
                in_body = 0;
            }
            encode_series(
                &mut body,
                s,
                measurement.unwrap_or(&s.name),
                time_col,
                chunk,
            );
            maps += 1;
            in_body += chunk.len();
        }
    }
    flush(&mut body, &mut maps, &mut out);
    out
}

/// A value a point can hold (not null, not a non-finite float, not a time).
fn storable(v: &Value) -> bool {
    match v {
        Value::Null | Value::Time(_) => false,
        Value::Float(f) => f.is_finite(),
        _ => true,
    }
}

fn encode_series(
    out: &mut Vec<u8>,
    s: &Series,
    measurement: &str,
    time_col: usize,
    rows: &[&Vec<Value>],
) {
    use rmp::encode::{write_array_len, write_map_len, write_sint, write_str};
    // An empty tag value is the tag's absence (a series lacking a grouped-by tag).
    let tags: Vec<&(String, String)> = s.tags.iter().filter(|(_, v)| !v.is_empty()).collect();
    let fields: Vec<(usize, &String)> = s
        .columns
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != time_col)
        .collect();
    // Writes to a Vec cannot fail.
    let _ = write_map_len(out, 4);
    let _ = write_str(out, "measurement");
    let _ = write_str(out, measurement);
    let _ = write_str(out, "tags");
    let _ = write_map_len(out, tags.len() as u32);
    for (k, v) in tags {
        let _ = write_str(out, k);
        let _ = write_str(out, v);
    }
    let _ = write_str(out, "timestamps");
    let _ = write_array_len(out, rows.len() as u32);
    for row in rows {
        let t = match row[time_col] {
            Value::Time(t) | Value::Integer(t) => t,
            _ => 0,
        };
        let _ = write_sint(out, t);
    }
    let _ = write_str(out, "fields");
    let _ = write_map_len(out, fields.len() as u32);
    for (i, name) in fields {
        let _ = write_str(out, name);
        let _ = write_array_len(out, rows.len() as u32);
        for row in rows {
            encode_value(out, &row[i]);
        }
    }
}

fn encode_value(out: &mut Vec<u8>, v: &Value) {
    use rmp::encode as e;
    // Writes to a Vec cannot fail.
    match v {
        Value::Float(f) if f.is_finite() => {
            let _ = e::write_f64(out, *f);
        }
        Value::Integer(i) => {
            let _ = e::write_sint(out, *i);
        }
        // Tagged: a plain msgpack integer would be read as an integer field.
        Value::Unsigned(u) => {
            let _ = e::write_map_len(out, 1);
            let _ = e::write_str(out, "UInteger");
            let _ = e::write_uint(out, *u);
        }
        Value::String(s) => {
            let _ = e::write_str(out, s);
        }
        Value::Boolean(b) => {
            let _ = e::write_bool(out, *b);
        }
        _ => {
            let _ = e::write_nil(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(name: &str, tags: &[(&str, &str)], rows: Vec<Vec<Value>>) -> Series {
        Series {
            name: name.into(),
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            columns: std::sync::Arc::new(vec!["time".into(), "a".into(), "b".into()]),
            values: rows,
            packed: None,
            one_row: None,
        }
    }

    /// A point as line protocol (unescaped: enough to compare).
    fn show(b: &ingest::ParsedBatch<'_>, p: &ingest::PointEntry) -> String {
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        let mut out = text(b.measurement(p));
        for (k, v) in &b.tags()[p.tags.start as usize..p.tags.end as usize] {
            out += &format!(",{}={}", text(b.bytes(*k)), text(b.bytes(*v)));
        }
        let fields: Vec<String> = b.fields()[p.fields.start as usize..p.fields.end as usize]
            .iter()
            .map(|(k, v)| {
                let value = match b.value(*v) {
                    ingest::FieldValue::Float(f) => f.to_string(),
                    ingest::FieldValue::Integer(i) => format!("{i}i"),
                    ingest::FieldValue::UInteger(u) => format!("{u}u"),
                    ingest::FieldValue::String(s) => format!("{:?}", text(&s)),
                    ingest::FieldValue::Boolean(x) => x.to_string(),
                };
                format!("{}={value}", text(b.bytes(*k)))
            })
            .collect();
        format!("{out} {} {}", fields.join(","), p.time)
    }

    #[test]
    fn answers_become_columnar_bodies_ingest_reads_back() {
        let s = vec![
            series(
                "cpu",
                &[("host", "h1"), ("missing", "")],
                vec![
                    vec![Value::Time(10), Value::Float(1.5), Value::Null],
                    vec![Value::Time(20), Value::Null, Value::Null],
                    vec![Value::Time(30), Value::Null, Value::Unsigned(7)],
                ],
            ),
            series(
                "mem",
                &[],
                vec![vec![
                    Value::Time(40),
                    Value::String("x\ny".into()),
                    Value::Boolean(true),
                ]],
            ),
        ];
        let bodies = bodies(&s, None, 2);
        assert_eq!(bodies.len(), 2, "2 rows per body");
        let mut points = Vec::new();
        for b in &bodies {
            let batch = ingest::msgpack::parse_columnar(b, ingest::Precision::Nanoseconds, 0)
                .expect("ingest reads the body");
            assert!(batch.errors.is_empty(), "{:?}", batch.errors);
            points.extend(batch.points().iter().map(|p| show(&batch, p)));
        }
        assert_eq!(
            points,
            vec![
                "cpu,host=h1 a=1.5 10".to_string(),
                "cpu,host=h1 b=7u 30".to_string(),
                "mem a=\"x\\ny\",b=true 40".to_string(),
            ]
        );
        assert_eq!(super::bodies(&s, Some("t"), 10).len(), 1);
    }
}
