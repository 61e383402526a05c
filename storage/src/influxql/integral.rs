//! `integral(field[, unit])`: the area under a series' points, by the
//! trapezium rule, in `unit`s (default 1 s) of time, as InfluxDB 1.x's
//! integral reducer computes it (`query/functions.go`):
//!
//! - points are taken in time order; a point at the time of the one before it
//!   replaces it (several series merged into one group);
//! - with `GROUP BY time(i)`, the area between a window's last point and the
//!   next point is split at the window's end by linear interpolation: the part
//!   before the end closes the window, the rest (up to the next point, even
//!   across empty windows) opens the next point's window; a window whose only
//!   point lies on its start has no area and emits nothing;
//! - without `GROUP BY time`, one value per series: at time 0 for a float field, at the
//!   start of the statement's time range for an integer one (InfluxDB's integer reducer
//!   starts its window there; time 0 without a lower bound);
//! - a string or boolean field is InfluxDB's error (`unsupported integral iterator type`);
//! - each series whole, in tag order (InfluxDB writes each series' last
//!   window when its reducers close, in an order that changes from run to
//!   run: a listed deviation).
//!
//! The statement runs as the raw read of its fields (the same planner, point
//! identity, unflushed points and limits as any raw `SELECT`: a series of more
//! points than `[sql] max_result_rows` is refused by that limit), then this
//! module integrates each series and `fill` completes the windows.

use influxql::ast::{Dimension, Expr, Field, Literal, SelectStatement};

use super::error::InfluxqlError;
use super::expr::strip_parens;
use super::fill::window_start_in;
use super::plan;
use super::series::{Columns, Series, StatementResult, Value};
use super::zone::TimeZone;

/// One `integral()` of the statement.
pub(crate) struct Call {
    pub(crate) field: String,
    /// ns (> 0).
    pub(crate) unit: i64,
}

/// Whether `stmt` selects `integral()`: then every field must be one.
pub(crate) fn applies(stmt: &SelectStatement) -> bool {
    stmt.fields.iter().any(|f| is_integral(&f.expr))
}

fn is_integral(e: &Expr) -> bool {
    matches!(strip_parens(e), Expr::Call { name, .. } if name == "integral")
}

/// The statement's calls, checked as InfluxDB checks them.
pub(crate) fn calls(stmt: &SelectStatement) -> Result<Vec<Call>, InfluxqlError> {
    stmt.fields
        .iter()
        .map(|f| {
            let Expr::Call { args, .. } = strip_parens(&f.expr) else {
                return Err(InfluxqlError::unsupported(
                    "integral() together with other columns",
                ));
            };
            if args.is_empty() || args.len() > 2 {
                return Err(InfluxqlError::invalid(format!(
                    "invalid number of arguments for integral, expected 1-2, got {}",
                    args.len()
                )));
            }
            let unit = match args.get(1).map(strip_parens) {
                None => 1_000_000_000,
                Some(Expr::Literal(Literal::Duration(d))) if d.0 > 0 => d.0,
                Some(Expr::Literal(Literal::Duration(d))) => {
                    return Err(InfluxqlError::invalid(format!(
                        "duration argument must be positive, got {d}"
                    )))
                }
                Some(_) => {
                    return Err(InfluxqlError::invalid("second argument must be a duration"))
                }
            };
            match strip_parens(&args[0]) {
                Expr::VarRef { name, .. } => Ok(Call {
                    field: name.clone(),
                    unit,
                }),
                _ => Err(InfluxqlError::invalid(
                    "expected field argument in integral()",
                )),
            }
        })
        .collect()
}

/// The raw statement whose points the integrals read: the fields, the same
/// sources, condition and tag dimensions, ascending, unlimited.
pub(crate) fn raw_statement(stmt: &SelectStatement) -> Result<SelectStatement, InfluxqlError> {
    if stmt.order_desc {
        return Err(InfluxqlError::unsupported(
            "integral() with ORDER BY time DESC",
        ));
    }
    let mut fields: Vec<String> = calls(stmt)?.into_iter().map(|c| c.field).collect();
    fields.dedup();
    Ok(SelectStatement {
        fields: fields
            .into_iter()
            .map(|name| Field {
                expr: Expr::VarRef {
                    name,
                    data_type: None,
                },
                alias: None,
            })
            .collect(),
        into: None,
        sources: stmt.sources.clone(),
        condition: stmt.condition.clone(),
        dimensions: stmt
            .dimensions
            .iter()
            .filter(|d| !matches!(d, Dimension::Time { .. }))
            .cloned()
            .collect(),
        fill: None,
        order_desc: false,
        limit: None,
        offset: None,
        slimit: None,
        soffset: None,
        timezone: stmt.timezone.clone(),
    })
}

/// The windows of `GROUP BY time(interval, offset)` (in the `tz()` zone).
pub(crate) struct Windows {
    pub(crate) interval: i64,
    pub(crate) offset: i64,
    pub(crate) zone: Option<TimeZone>,
}

impl Windows {
    /// `[start, end)` of the window holding `t`.
    fn of(&self, t: i64) -> (i64, i64) {
        let start = window_start_in(t, self.interval, self.offset, self.zone.as_ref());
        (start, start.saturating_add(self.interval))
    }
}

/// The windows of the statement's `GROUP BY time(...)`, if any.
pub(crate) fn windows(stmt: &SelectStatement) -> Result<Option<Windows>, InfluxqlError> {
    let Some(w) = plan::window(stmt)? else {
        return Ok(None);
    };
    Ok(Some(Windows {
        interval: w.interval,
        offset: w.offset,
        zone: plan::zone(stmt)?,
    }))
}

/// The integrals of `raw` (the answer of [`raw_statement`]) as the
/// statement's answer.
/// `start` is the lower bound of the statement's time range, if any.
pub(crate) fn answer(
    stmt: &SelectStatement,
    raw: StatementResult,
    windows: Option<&Windows>,
    start: Option<i64>,
) -> Result<StatementResult, InfluxqlError> {
    let calls = calls(stmt)?;
    let names = column_names(stmt);
    let mut series = Vec::new();
    for s in raw.series {
        let mut emitted: Vec<Vec<(i64, f64)>> = Vec::with_capacity(calls.len());
        for c in &calls {
            let at = s.columns.iter().position(|n| *n == c.field);
            let cells = s.values.iter().filter_map(|r| {
                let Some(Value::Time(t)) = r.first() else {
                    return None;
                };
                Some((*t, at.and_then(|i| r.get(i))?))
            });
            let first = cells.clone().find(|(_, v)| !matches!(v, Value::Null));
            let integer = match first.map(|(_, v)| v) {
                Some(Value::Integer(_) | Value::Unsigned(_)) => true,
                Some(Value::String(_)) => return Err(unsupported("string")),
                Some(Value::Boolean(_)) => return Err(unsupported("boolean")),
                _ => false,
            };
            let points = cells.filter_map(|(t, v)| Some((t, v.as_f64()?)));
            let mut rows = integrate(points, c.unit, integer, windows);
            if integer && windows.is_none() {
                for (t, _) in &mut rows {
                    *t = start.unwrap_or(0);
                }
            }
            emitted.push(rows);
        }
        series.extend(assemble(stmt, s.name, s.tags, &names, emitted));
    }
    Ok(StatementResult {
        series,
        messages: raw.messages,
    })
}

/// The answer's columns: `time`, then each call's name (its alias, or `integral`,
/// numbered past the first of a name).
pub(crate) fn column_names(stmt: &SelectStatement) -> Columns {
    let mut names: Vec<String> = vec!["time".to_string()];
    for f in &stmt.fields {
        let base = f.alias.clone().unwrap_or_else(|| "integral".to_string());
        let mut name = base.clone();
        let mut n = 1;
        while names[1..].contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        names.push(name);
    }
    std::sync::Arc::new(names)
}

/// One series of the answer from each call's `(time, integral)` rows in time order (`None`:
/// no row after the statement's `LIMIT`/`OFFSET`).
pub(crate) fn assemble(
    stmt: &SelectStatement,
    name: String,
    tags: Vec<(String, String)>,
    columns: &Columns,
    emitted: Vec<Vec<(i64, f64)>>,
) -> Option<Series> {
    let mut times: Vec<i64> = emitted.iter().flatten().map(|(t, _)| *t).collect();
    times.sort_unstable();
    times.dedup();
    let mut values: Vec<Vec<Value>> = times
        .iter()
        .map(|t| {
            let mut row = vec![Value::Time(*t)];
            row.extend(emitted.iter().map(|col| {
                col.iter()
                    .find(|(u, _)| u == t)
                    .map_or(Value::Null, |(_, v)| Value::Float(*v))
            }));
            row
        })
        .collect();
    // InfluxDB fills no window of an integral (not even with `fill(0)`).
    values = super::page(values, stmt.limit, stmt.offset);
    (!values.is_empty()).then(|| Series {
        name,
        tags,
        columns: columns.clone(),
        values,
        packed: None,
        one_row: None,
    })
}

/// InfluxDB's error for the integral of a field of `kind` (its iterator's type name).
fn unsupported(kind: &str) -> InfluxqlError {
    InfluxqlError::invalid(format!(
        "unsupported integral iterator type: *query.{kind}InterruptIterator"
    ))
}

/// InfluxDB's integral reducer over `(time, value)` points in time order
/// (`(window start, area)` per window; one at time 0 without windows). For an
/// integer field, the next window's first area is InfluxDB's integer
/// reducer's: between the previous point's value and the value interpolated
/// at the window's end, over the time from that end to the current point.
pub(crate) fn integrate(
    points: impl Iterator<Item = (i64, f64)>,
    unit: i64,
    integer: bool,
    windows: Option<&Windows>,
) -> Vec<(i64, f64)> {
    let unit = unit as f64;
    let mut rows = Vec::new();
    let mut prev: Option<(i64, f64)> = None;
    let (mut start, mut end) = (0i64, 0i64);
    let mut sum = 0.0;
    for (t, v) in points {
        let Some((pt, pv)) = prev else {
            prev = Some((t, v));
            if let Some(w) = windows {
                (start, end) = w.of(t);
            }
            continue;
        };
        if pt == t {
            prev = Some((t, v));
            continue;
        }
        let (mut pt, mut pv, mut cur) = (pt, pv, v);
        if let Some(w) = windows.filter(|_| t >= end) {
            if pt != end {
                let value = pv + (v - pv) / (t - pt) as f64 * (end - pt) as f64;
                sum += 0.5 * (value + pv) * ((end - pt) as f64 / unit);
                if integer {
                    // InfluxDB's integer reducer moves only the previous
                    // point's time to the window's end and goes on with the
                    // interpolated value in place of the current point's.
                    (pt, cur) = (end, value);
                } else {
                    (pt, pv) = (end, value);
                }
            }
            rows.push((start, sum));
            (start, end) = w.of(t);
            sum = 0.0;
        }
        sum += 0.5 * (cur + pv) * ((t - pt) as f64 / unit);
        prev = Some((t, v));
    }
    if prev.is_some_and(|(t, _)| t != start) {
        rows.push((start, sum));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn windows(interval: i64) -> Windows {
        Windows {
            interval,
            offset: 0,
            zone: None,
        }
    }

    #[test]
    fn trapezia_in_units_without_windows() {
        // 0..10 s rising 0 → 10: area 50 unit-seconds; in minutes 50/60.
        let pts = [(0, 0.0), (10 * S, 10.0)];
        assert_eq!(integrate(pts.into_iter(), S, false, None), vec![(0, 50.0)]);
        let m = integrate(pts.into_iter(), 60 * S, false, None);
        assert!((m[0].1 - 50.0 / 60.0).abs() < 1e-12);
        // A point at the time of the one before replaces it.
        let dup = [(0, 0.0), (0, 2.0), (10 * S, 2.0)];
        assert_eq!(integrate(dup.into_iter(), S, false, None), vec![(0, 20.0)]);
        // One point alone at time 0 has no area.
        assert!(integrate([(0, 1.0)].into_iter(), S, false, None).is_empty());
    }

    #[test]
    fn windows_split_the_area_at_their_end_by_interpolation() {
        let w = windows(10 * S);
        // Points at 5 s (0) and 15 s (10): the line crosses 10 s at 5.
        // Window 0: 5..10 s, area (0 + 5) / 2 * 5 = 12.5; window 10: 10..15 s,
        // (5 + 10) / 2 * 5 = 37.5.
        let got = integrate(
            [(5 * S, 0.0), (15 * S, 10.0)].into_iter(),
            S,
            false,
            Some(&w),
        );
        assert_eq!(got, vec![(0, 12.5), (10 * S, 37.5)]);
        // An integer field's next area, as InfluxDB's integer reducer has it:
        // the previous value (0) and the interpolated one (5).
        let got = integrate(
            [(5 * S, 0.0), (15 * S, 10.0)].into_iter(),
            S,
            true,
            Some(&w),
        );
        assert_eq!(got, vec![(0, 12.5), (10 * S, 0.5 * (0.0 + 5.0) * 5.0)]);
        // A last point on a window's start closes nothing.
        let got = integrate(
            [(5 * S, 0.0), (10 * S, 10.0)].into_iter(),
            S,
            false,
            Some(&w),
        );
        assert_eq!(got, vec![(0, 25.0)]);
        // Across an empty window the rest goes to the next point's window.
        let got = integrate(
            [(5 * S, 0.0), (35 * S, 30.0)].into_iter(),
            S,
            false,
            Some(&w),
        );
        assert_eq!(got, vec![(0, 12.5), (30 * S, 0.5 * (5.0 + 30.0) * 25.0)]);
    }
}
