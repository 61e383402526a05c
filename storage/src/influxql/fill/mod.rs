//! `GROUP BY time(...)` output grids and `fill(...)`, as InfluxDB 1.x emits them.
//!
//! The engine answers one row per (series, interval) that holds data. InfluxDB
//! answers more: each selected column of a series covers every interval of
//! the query's range (`fill(null|previous|linear|<n>)`) as soon as that
//! column has one value in the series, and `LIMIT`/`OFFSET` count those filled
//! points per column. [`fill_series`] turns the engine's sparse rows into that
//! answer. Its rules are InfluxDB 1.6's (`query/iterator.gen.go`'s fill
//! iterators, `query/cursor.go`'s row join), checked against a real `influxd`:
//!
//! - The grid runs from the interval containing the query's start (or, with no
//!   lower time bound, the column's first interval with data) to the interval
//!   containing its end; `ORDER BY time DESC` walks it downwards and then stops
//!   at the start (or at the column's earliest data).
//! - Each column is filled on its own: `fill(previous)` carries that column's
//!   last value, `fill(linear)` interpolates between that column's neighbours
//!   (numbers only; the ends stay null), `fill(<n>)` is cast to the column's
//!   type (`7.5` → `7` on an integer, `""` on a string, `false` on a boolean),
//!   and `count(...)` under `fill(null)` is `0`.
//! - A column with no value at all in a series is not filled by the above: its
//!   cells in that series' rows are null, or the `fill(<n>)` number (cast to
//!   the column's declared type when it is numeric, kept as written
//!   otherwise).
//! - `LIMIT`/`OFFSET` apply to each column's filled points, then rows are the
//!   union of the columns' remaining times (so with `fill(none)`, `LIMIT 1` can
//!   answer two rows, as InfluxDB does).
//! - With `tz()` ([`fill_series_in`]), windows are aligned on local time and a
//!   window that spans an offset change is longer or shorter by it (a `1d`
//!   window is 23 or 25 hours on a DST day).

use std::collections::BTreeMap;

use influxql::ast::{Fill, Literal};
use ingest::FieldType;

use super::series::{Series, Value};
use super::zone::TimeZone;

mod aligned;
mod grid;

pub use grid::{window_start, window_start_in, Grid};
use grid::{zone_ns, Walk};

/// What [`fill_series`] needs to know about one selected (non-time) column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FillColumn {
    /// The column's type as the query declares it (e.g. `float` for `mean`,
    /// `integer` for `count`, the field's type for `max`/`first`); `None`
    /// when unknown. Only used to cast a `fill(<n>)` number into a column
    /// that has no value at all in a series.
    pub data_type: Option<FieldType>,
    /// The column is a `count(...)` (or `count(distinct(...))`):
    /// `fill(null)` shows `0` in it.
    pub count: bool,
}

/// Fills `series` in place: see the module documentation for the rules.
///
/// `series.values` are the engine's rows for one series: the first cell is
/// the interval's start ([`Value::Time`]), one row per interval holding data,
/// in output order (ascending, or descending when `grid.descending`); a
/// [`Value::Null`] cell means the column had no value in that interval
/// (`count` must be given as `Null`, not `0`, for intervals where it counted
/// nothing). `columns` describes the columns after `time`.
///
/// Afterwards `series.values` holds InfluxDB's rows, `limit`/`offset`
/// applied. When it is empty, InfluxDB leaves the series out of its answer.
pub fn fill_series(
    series: &mut Series,
    fill: &Fill,
    grid: &Grid,
    columns: &[FillColumn],
    limit: Option<u64>,
    offset: Option<u64>,
) {
    fill_series_in(series, fill, grid, None, columns, limit, offset);
}

/// [`fill_series`] with `tz()`: windows in `zone` (see [`window_start_in`];
/// the input rows' times must be those windows' starts).
pub fn fill_series_in(
    series: &mut Series,
    fill: &Fill,
    grid: &Grid,
    zone: Option<&TimeZone>,
    columns: &[FillColumn],
    limit: Option<u64>,
    offset: Option<u64>,
) {
    let walk = Walk { grid, zone };
    let rows = std::mem::take(&mut series.values);
    series.values = match aligned::fill_aligned(rows, fill, &walk, columns, limit, offset) {
        Ok(rows) => rows,
        Err(rows) => fill_columns(&rows, fill, &walk, columns, limit, offset),
    };
}

/// [`fill_series_in`] column by column, then the columns joined into rows:
/// any rows (a column may lack values, the engine may repeat a time).
fn fill_columns(
    rows: &[Vec<Value>],
    fill: &Fill,
    walk: &Walk<'_>,
    columns: &[FillColumn],
    limit: Option<u64>,
    offset: Option<u64>,
) -> Vec<Vec<Value>> {
    let present = split_columns(rows, columns.len());
    let emitted: Vec<Vec<(i64, Value)>> = present
        .iter()
        .zip(columns)
        .map(|(points, column)| {
            let filled = fill_column(points, fill, walk, column);
            super::page(filled, limit, offset)
        })
        .collect();
    join_rows(&emitted, fill, walk.grid, columns)
}

/// Per column, the (time, value) cells that hold a value, in row order.
fn split_columns(rows: &[Vec<Value>], width: usize) -> Vec<Vec<(i64, Value)>> {
    let mut present = vec![Vec::new(); width];
    for row in rows {
        let Some(Value::Time(t)) = row.first() else {
            continue;
        };
        for (column, cell) in present.iter_mut().zip(&row[1..]) {
            if !matches!(cell, Value::Null) {
                column.push((*t, cell.clone()));
            }
        }
    }
    present
}

/// One column's points as InfluxDB's fill iterator emits them for a series.
fn fill_column(
    points: &[(i64, Value)],
    fill: &Fill,
    walk: &Walk<'_>,
    column: &FillColumn,
) -> Vec<(i64, Value)> {
    let grid = walk.grid;
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Vec::new();
    };
    if matches!(fill, Fill::None) {
        return points.to_vec();
    }
    let (from, to) = if grid.descending {
        (
            walk.window(grid.end),
            grid.start.map_or(last.0, |s| walk.window(s)),
        )
    } else {
        (
            grid.start.map_or(first.0, |s| walk.window(s)),
            walk.window(grid.end),
        )
    };
    let mut out = Vec::new();
    let mut next = 0; // index of the first point not yet emitted
    let mut prev: Option<&(i64, Value)> = None;
    let mut t = from;
    let mut at = zone_ns(walk.zone, t);
    while !grid.before(to, t) {
        // Points outside the grid (which the engine should not return) are
        // emitted where they fall, as InfluxDB does with early points.
        while next < points.len() && !grid.before(t, points[next].0) {
            out.push(points[next].clone());
            prev = Some(&points[next]);
            next += 1;
        }
        if out.last().is_none_or(|(last_t, _)| *last_t != t) {
            let around = (prev.map(cell), points.get(next).map(cell));
            let value = fill_value(fill, column, around, t, grid);
            out.push((t, value));
        }
        match walk.next(t, &mut at) {
            Some(n) => t = n,
            None => break,
        }
    }
    out.extend(points[next..].iter().cloned());
    out
}

/// A column's point as [`fill_value`] reads it.
fn cell(p: &(i64, Value)) -> (i64, &Value) {
    (p.0, &p.1)
}

/// A column's points before and after an empty interval, where it has them.
type Around<'v> = (Option<(i64, &'v Value)>, Option<(i64, &'v Value)>);

/// The value InfluxDB's fill iterator gives an empty interval at `t`.
fn fill_value(fill: &Fill, column: &FillColumn, around: Around<'_>, t: i64, grid: &Grid) -> Value {
    let (prev, next) = around;
    match fill {
        Fill::Null if column.count => Value::Integer(0),
        Fill::Null | Fill::None => Value::Null,
        Fill::Previous => prev.map_or(Value::Null, |(_, v)| v.clone()),
        Fill::Linear => match (prev, next) {
            (Some(p), Some(n)) => linear(t, p, n, grid.interval),
            _ => Value::Null,
        },
        Fill::Number(lit) => {
            // The column's type is that of its values (all points of a
            // column share the iterator's type).
            let kind = prev.or(next).and_then(|(_, v)| kind_of(v));
            cast_in_column(lit, kind)
        }
    }
}

/// `fill(linear)`: InfluxDB's `linearFloat`/`linearInteger`/`linearUnsigned`,
/// with times counted in whole intervals (Go's truncating division).
fn linear(t: i64, prev: (i64, &Value), next: (i64, &Value), interval: i64) -> Value {
    let (x0, x1, x) = (prev.0 / interval, next.0 / interval, t / interval);
    let dx = (x1.wrapping_sub(x0)) as f64;
    let at = (x.wrapping_sub(x0)) as f64;
    match (prev.1, next.1) {
        (Value::Float(y0), Value::Float(y1)) => Value::Float((y1 - y0) / dx * at + y0),
        (Value::Integer(y0), Value::Integer(y1)) => {
            let m = y1.wrapping_sub(*y0) as f64 / dx;
            Value::Integer((m * at + *y0 as f64) as i64)
        }
        (Value::Unsigned(y0), Value::Unsigned(y1)) => {
            // Go subtracts in uint64, wrapping when the line goes down.
            let m = y1.wrapping_sub(*y0) as f64 / dx;
            Value::Unsigned((m * at + *y0 as f64) as u64)
        }
        _ => Value::Null,
    }
}

/// The type of a cell's value, for casting a fill number.
fn kind_of(v: &Value) -> Option<FieldType> {
    match v {
        Value::Float(_) => Some(FieldType::Float),
        Value::Integer(_) => Some(FieldType::Integer),
        Value::Unsigned(_) => Some(FieldType::UInteger),
        Value::String(_) => Some(FieldType::String),
        Value::Boolean(_) => Some(FieldType::Boolean),
        Value::Null | Value::Time(_) => None,
    }
}

/// A literal as a number InfluxDB's casts accept (`float64`, `int64`, `uint64`).
fn literal_value(lit: &Literal) -> Value {
    match lit {
        Literal::Integer(i) => Value::Integer(*i),
        Literal::Unsigned(u) => Value::Unsigned(*u),
        Literal::Float(f) => Value::Float(*f),
        _ => Value::Null,
    }
}

/// `fill(<n>)` inside a column's grid: the fill iterator's cast to the
/// column's type (`castToFloat`... `castToString` fails and gives `""`,
/// `castToBoolean` gives `false`).
fn cast_in_column(lit: &Literal, kind: Option<FieldType>) -> Value {
    let v = literal_value(lit);
    match kind {
        Some(FieldType::String) => Value::String("".into()),
        Some(FieldType::Boolean) => Value::Boolean(false),
        Some(k) => cast_number(v, k),
        None => v,
    }
}

/// `fill(<n>)` in a row where the column has no point: the cursor's
/// `castToType`, which keeps the number as written when the cast fails.
fn cast_outside_column(lit: &Literal, kind: Option<FieldType>) -> Value {
    let v = literal_value(lit);
    match kind {
        Some(k @ (FieldType::Float | FieldType::Integer | FieldType::UInteger)) => {
            cast_number(v, k)
        }
        _ => v,
    }
}

/// Go's numeric conversions (`float64(x)`, `int64(x)`, `uint64(x)`).
fn cast_number(v: Value, kind: FieldType) -> Value {
    match (kind, v) {
        (FieldType::Float, Value::Integer(i)) => Value::Float(i as f64),
        (FieldType::Float, Value::Unsigned(u)) => Value::Float(u as f64),
        (FieldType::Integer, Value::Float(f)) => Value::Integer(f as i64),
        (FieldType::Integer, Value::Unsigned(u)) => Value::Integer(u as i64),
        (FieldType::UInteger, Value::Float(f)) => Value::Unsigned(f as u64),
        (FieldType::UInteger, Value::Integer(i)) => Value::Unsigned(i as u64),
        (_, v) => v,
    }
}

/// Joins the columns' points into rows (InfluxDB's cursor): a row per time
/// any column emitted, in output order; a column without a point at that time
/// gets the cursor's default.
fn join_rows(
    emitted: &[Vec<(i64, Value)>],
    fill: &Fill,
    grid: &Grid,
    columns: &[FillColumn],
) -> Vec<Vec<Value>> {
    let width = emitted.len();
    let mut rows: BTreeMap<i64, Vec<Option<Value>>> = BTreeMap::new();
    for (c, points) in emitted.iter().enumerate() {
        for (t, v) in points {
            let row = rows.entry(*t).or_insert_with(|| vec![None; width]);
            // A column emits one point per time; the first wins, as in the
            // cursor, should the engine repeat one.
            if row[c].is_none() {
                row[c] = Some(v.clone());
            }
        }
    }
    let ordered: Box<dyn Iterator<Item = (i64, Vec<Option<Value>>)>> = if grid.descending {
        Box::new(rows.into_iter().rev())
    } else {
        Box::new(rows.into_iter())
    };
    // `fill(previous)`: the cursor keeps the last value a column set.
    let mut carried: Vec<Value> = vec![Value::Null; width];
    ordered
        .map(|(t, cells)| {
            let mut row = Vec::with_capacity(width + 1);
            row.push(Value::Time(t));
            for (c, cell) in cells.into_iter().enumerate() {
                let value = match cell {
                    Some(Value::Null) if matches!(fill, Fill::Previous) => carried[c].clone(),
                    Some(v) => v,
                    None => match fill {
                        Fill::Previous => carried[c].clone(),
                        Fill::Number(lit) => cast_outside_column(lit, columns[c].data_type),
                        _ => Value::Null,
                    },
                };
                if !matches!(value, Value::Null) {
                    carried[c] = value.clone();
                }
                row.push(value);
            }
            row
        })
        .collect()
}

#[cfg(test)]
mod aligned_tests;
#[cfg(test)]
mod tests;

#[cfg(test)]
mod zone_tests;
