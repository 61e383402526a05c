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

/// The time grid of a `GROUP BY time(interval, offset)` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// The interval, ns (> 0).
    pub interval: i64,
    /// The `GROUP BY time(_, offset)` offset, ns (may be negative).
    pub offset: i64,
    /// The query's lower time bound, ns inclusive; `None` when the `WHERE`
    /// clause has none.
    pub start: Option<i64>,
    /// The query's upper time bound, ns inclusive (`time < t` is `t - 1`;
    /// without one, InfluxDB uses `now()`).
    pub end: i64,
    /// `ORDER BY time DESC`.
    pub descending: bool,
}

impl Grid {
    /// The start of the interval holding `t`: InfluxDB's
    /// `IteratorOptions.Window` in UTC (intervals are aligned on the epoch plus
    /// the offset).
    pub fn window(&self, t: i64) -> i64 {
        window_start(t, self.interval, self.offset)
    }

    fn step(&self) -> i64 {
        if self.descending {
            -self.interval
        } else {
            self.interval
        }
    }

    /// Whether `t` comes strictly before `u` in output order.
    fn before(&self, t: i64, u: i64) -> bool {
        if self.descending {
            t > u
        } else {
            t < u
        }
    }
}

/// The start of the `interval`-long window (aligned on the epoch plus
/// `offset`) that holds `t`, as InfluxDB computes it in UTC.
pub fn window_start(t: i64, interval: i64, offset: i64) -> i64 {
    window_start_in(t, interval, offset, None)
}

/// [`window_start`] in a `tz()` zone, as InfluxDB's `Window` computes it:
/// windows are aligned on local time (a `1d` window starts at local
/// midnight), the zone's offset taken at `t` and then at the window's start
/// when the two differ by less than the interval.
pub fn window_start_in(t: i64, interval: i64, offset: i64, zone: Option<&TimeZone>) -> i64 {
    let t = t.saturating_sub(offset);
    let local = zone_ns(zone, t);
    let start = t - t.saturating_add(local).rem_euclid(interval);
    let shift = local - zone_ns(zone, start);
    let start = if shift != 0 && shift.abs() < interval {
        start + shift
    } else {
        start
    };
    start + offset
}

/// The zone's offset at `t`, ns (0 without a zone).
fn zone_ns(zone: Option<&TimeZone>, t: i64) -> i64 {
    zone.map_or(0, |z| i64::from(z.offset_at(t)) * 1_000_000_000)
}

/// A grid's windows in a zone: where they start and how the fill iterator
/// steps from one to the next (a step across an offset change is shifted by
/// it, unless the change is as long as the interval).
#[derive(Debug, Clone, Copy)]
struct Walk<'a> {
    grid: &'a Grid,
    zone: Option<&'a TimeZone>,
}

impl Walk<'_> {
    fn window(&self, t: i64) -> i64 {
        window_start_in(t, self.grid.interval, self.grid.offset, self.zone)
    }

    /// The window after `t` in output order; `at` is the zone offset the walk
    /// is at (InfluxDB's `window.offset`), updated.
    fn next(&self, t: i64, at: &mut i64) -> Option<i64> {
        let mut n = t.checked_add(self.grid.step())?;
        if self.zone.is_some() {
            let now = zone_ns(self.zone, n - 1);
            if now != *at {
                let diff = *at - now;
                if diff.abs() < self.grid.interval {
                    n += diff;
                }
                *at = now;
            }
        }
        Some(n)
    }
}

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
    let present = split_columns(&series.values, columns.len());
    let emitted: Vec<Vec<(i64, Value)>> = present
        .iter()
        .zip(columns)
        .map(|(points, column)| {
            let filled = fill_column(points, fill, &walk, column);
            paginate(filled, limit, offset)
        })
        .collect();
    series.values = join_rows(&emitted, fill, grid, columns);
}

/// Keeps `offset..offset + limit` of one column's points.
fn paginate<T>(points: Vec<T>, limit: Option<u64>, offset: Option<u64>) -> Vec<T> {
    let skip = usize::try_from(offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let take = limit
        .filter(|&l| l > 0)
        .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    points.into_iter().skip(skip).take(take).collect()
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
            let value = fill_value(fill, column, prev, points.get(next), t, grid);
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

/// The value InfluxDB's fill iterator gives an empty interval at `t`.
fn fill_value(
    fill: &Fill,
    column: &FillColumn,
    prev: Option<&(i64, Value)>,
    next: Option<&(i64, Value)>,
    t: i64,
    grid: &Grid,
) -> Value {
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
fn linear(t: i64, prev: &(i64, Value), next: &(i64, Value), interval: i64) -> Value {
    let (x0, x1, x) = (prev.0 / interval, next.0 / interval, t / interval);
    let dx = (x1.wrapping_sub(x0)) as f64;
    let at = (x.wrapping_sub(x0)) as f64;
    match (&prev.1, &next.1) {
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
        Some(FieldType::String) => Value::String(String::new()),
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
mod tests {
    //! Expected answers come from influxd 1.6.7 (Debian's 1.6.7~rc0) over
    //! this data, written to database `t`:
    //!
    //! ```text
    //! m,host=a f=1.5,i=1i,s="x",b=true 0s      m,host=b f=10,i=100i,s="z" 5s
    //! m,host=a f=2.5,i=4i,s="y",b=false 10s    m,host=b f=8,i=50i 25s
    //! m,host=a f=4,i=2i 20s                    m,host=b f=12,i=70i 65s
    //! m,host=a f=3,i=10i 50s                   m,host=c f=1 15s   (later)
    //! m,host=a f=7.25,i=3i 60s                 m,host=c i=5i 45s  (later)
    //! ```
    //!
    //! The inputs are what the engine returns: one row per interval with data.
    use super::*;

    const S: i64 = 1_000_000_000;

    fn f(x: f64) -> Value {
        Value::Float(x)
    }
    fn i(x: i64) -> Value {
        Value::Integer(x)
    }
    fn s(x: &str) -> Value {
        Value::String(x.to_string())
    }
    const N: Value = Value::Null;

    /// A series from `(seconds, cells)` rows.
    fn series(rows: &[(i64, Vec<Value>)]) -> Series {
        Series {
            name: "m".into(),
            values: rows
                .iter()
                .map(|(t, cells)| {
                    let mut row = vec![Value::Time(t * S)];
                    row.extend(cells.iter().cloned());
                    row
                })
                .collect(),
            ..Series::default()
        }
    }

    fn grid(start: Option<i64>, end: i64, interval: i64, descending: bool) -> Grid {
        Grid {
            interval: interval * S,
            offset: 0,
            start: start.map(|s| s * S),
            end: end * S,
            descending,
        }
    }

    fn cols(n: usize) -> Vec<FillColumn> {
        vec![FillColumn::default(); n]
    }

    fn run(input: &[(i64, Vec<Value>)], fill: Fill, g: Grid, columns: &[FillColumn]) -> Series {
        run_limit(input, fill, g, columns, None, None)
    }

    fn run_limit(
        input: &[(i64, Vec<Value>)],
        fill: Fill,
        g: Grid,
        columns: &[FillColumn],
        limit: Option<u64>,
        offset: Option<u64>,
    ) -> Series {
        let mut out = series(input);
        fill_series(&mut out, &fill, &g, columns, limit, offset);
        out
    }

    /// `mean(f)`, `max(i)` per 10 s over all hosts before host c was written.
    fn mean_max() -> Vec<(i64, Vec<Value>)> {
        vec![
            (0, vec![f(5.75), i(100)]),
            (10, vec![f(2.5), i(4)]),
            (20, vec![f(6.0), i(50)]),
            (50, vec![f(3.0), i(10)]),
            (60, vec![f(9.625), i(70)]),
        ]
    }

    fn column(out: &Series, c: usize) -> Vec<Value> {
        out.values.iter().map(|r| r[c].clone()).collect()
    }

    fn times(out: &Series) -> Vec<i64> {
        out.values
            .iter()
            .map(|r| match r[0] {
                Value::Time(t) => t / S,
                _ => panic!("no time"),
            })
            .collect()
    }

    #[test]
    fn window_start_aligns_on_epoch_plus_offset() {
        assert_eq!(window_start(25 * S, 10 * S, 0), 20 * S);
        assert_eq!(window_start(-5 * S, 10 * S, 0), -10 * S);
        assert_eq!(window_start(0, 20 * S, 5 * S), -15 * S);
        assert_eq!(window_start(5 * S, 20 * S, 5 * S), 5 * S);
    }

    #[test]
    fn fill_null_covers_the_range_from_the_interval_holding_start() {
        // SELECT mean(f) FROM m WHERE time >= 3s AND time <= 60s GROUP BY time(20s)
        let input = vec![
            (0, vec![f(6.25)]),
            (20, vec![f(6.0)]),
            (40, vec![f(3.0)]),
            (60, vec![f(7.25)]),
        ];
        let out = run(&input, Fill::Null, grid(Some(3), 60, 20, false), &cols(1));
        assert_eq!(times(&out), vec![0, 20, 40, 60]);
        // ... time >= 0 AND time <= 90s GROUP BY time(10s): nulls in the gaps.
        let out = run(
            &mean_max(),
            Fill::Null,
            grid(Some(0), 90, 10, false),
            &cols(2),
        );
        assert_eq!(times(&out), (0..10).map(|k| k * 10).collect::<Vec<_>>());
        assert_eq!(
            column(&out, 1),
            vec![f(5.75), f(2.5), f(6.0), N, N, f(3.0), f(9.625), N, N, N]
        );
    }

    #[test]
    fn fill_previous_carries_each_column() {
        // ... GROUP BY time(10s) fill(previous)
        let out = run(
            &mean_max(),
            Fill::Previous,
            grid(Some(0), 90, 10, false),
            &cols(2),
        );
        assert_eq!(
            column(&out, 1),
            vec![
                f(5.75),
                f(2.5),
                f(6.0),
                f(6.0),
                f(6.0),
                f(3.0),
                f(9.625),
                f(9.625),
                f(9.625),
                f(9.625)
            ]
        );
    }

    #[test]
    fn fill_linear_interpolates_numbers_and_truncates_integers() {
        // SELECT mean(f), max(i) ... fill(linear)
        let out = run(
            &mean_max(),
            Fill::Linear,
            grid(Some(0), 90, 10, false),
            &cols(2),
        );
        assert_eq!(
            column(&out, 1),
            vec![
                f(5.75),
                f(2.5),
                f(6.0),
                f(5.0),
                f(4.0),
                f(3.0),
                f(9.625),
                N,
                N,
                N
            ]
        );
        assert_eq!(
            column(&out, 2),
            vec![i(100), i(4), i(50), i(36), i(23), i(10), i(70), N, N, N]
        );
    }

    #[test]
    fn fill_linear_per_series() {
        // SELECT mean(f) ... GROUP BY time(10s), host fill(linear), host a
        let a = vec![
            (0, vec![f(1.5)]),
            (10, vec![f(2.5)]),
            (20, vec![f(4.0)]),
            (50, vec![f(3.0)]),
            (60, vec![f(7.25)]),
        ];
        let out = run(&a, Fill::Linear, grid(Some(0), 90, 10, false), &cols(1));
        assert_eq!(
            column(&out, 1),
            vec![
                f(1.5),
                f(2.5),
                f(4.0),
                f(3.6666666666666665),
                f(3.3333333333333335),
                f(3.0),
                f(7.25),
                N,
                N,
                N
            ]
        );
    }

    #[test]
    fn fill_number_is_cast_to_the_column_type() {
        // fill(7): `7` in both; fill(7.5): 7.5 in the float, 7 in the integer.
        let out = run(
            &mean_max(),
            Fill::Number(Literal::Float(7.5)),
            grid(Some(0), 90, 10, false),
            &cols(2),
        );
        assert_eq!(out.values[3], vec![Value::Time(30 * S), f(7.5), i(7)]);
        let out = run(
            &mean_max(),
            Fill::Number(Literal::Integer(7)),
            grid(Some(0), 90, 10, false),
            &cols(2),
        );
        assert_eq!(out.values[3], vec![Value::Time(30 * S), f(7.0), i(7)]);
    }

    #[test]
    fn fill_number_in_string_and_boolean_columns() {
        // SELECT first(s), first(b) ... time <= 40s GROUP BY time(10s) fill(5)
        let input = vec![
            (0, vec![s("x"), Value::Boolean(true)]),
            (10, vec![s("y"), Value::Boolean(false)]),
        ];
        let out = run(
            &input,
            Fill::Number(Literal::Integer(5)),
            grid(Some(0), 40, 10, false),
            &cols(2),
        );
        assert_eq!(column(&out, 1), vec![s("x"), s("y"), s(""), s(""), s("")]);
        assert_eq!(column(&out, 2)[2], Value::Boolean(false));
        // fill(linear) leaves them null.
        let out = run(&input, Fill::Linear, grid(Some(0), 40, 10, false), &cols(2));
        assert_eq!(column(&out, 1), vec![s("x"), s("y"), N, N, N]);
    }

    #[test]
    fn count_shows_zero_under_fill_null() {
        // SELECT count(f) ... WHERE time >= 0 AND time <= 40s GROUP BY time(10s)
        let input = vec![(0, vec![i(2)]), (10, vec![i(1)]), (20, vec![i(2)])];
        let count = [FillColumn {
            data_type: Some(FieldType::Integer),
            count: true,
        }];
        let out = run(&input, Fill::Null, grid(Some(0), 40, 10, false), &count);
        assert_eq!(column(&out, 1), vec![i(2), i(1), i(2), i(0), i(0)]);
    }

    #[test]
    fn a_column_without_data_in_the_series_is_not_filled_as_a_column() {
        // SELECT first(s), mean(f), count(s) ... GROUP BY time(10s), host fill(5)
        // Host c has no `s`: its cells show the raw 5 (first) and 5 (count).
        let columns = [
            FillColumn {
                data_type: Some(FieldType::String),
                count: false,
            },
            FillColumn {
                data_type: Some(FieldType::Float),
                count: false,
            },
            FillColumn {
                data_type: Some(FieldType::Integer),
                count: true,
            },
        ];
        let c = vec![(10, vec![N, f(1.0), N])];
        let out = run(
            &c,
            Fill::Number(Literal::Integer(5)),
            grid(Some(0), 40, 10, false),
            &columns,
        );
        assert_eq!(out.values[0], vec![Value::Time(0), i(5), f(5.0), i(5)]);
        assert_eq!(out.values[1], vec![Value::Time(10 * S), i(5), f(1.0), i(5)]);
        // Host b has an `s` at 0s only: "" elsewhere.
        let b = vec![(0, vec![s("z"), f(10.0), i(1)]), (20, vec![N, f(8.0), N])];
        let out = run(
            &b,
            Fill::Number(Literal::Integer(5)),
            grid(Some(0), 40, 10, false),
            &columns,
        );
        assert_eq!(
            out.values[1],
            vec![Value::Time(10 * S), s(""), f(5.0), i(5)]
        );
        // SELECT count(s), mean(f) ... fill(null): host c's count stays null.
        let out = run(&c, Fill::Null, grid(Some(0), 40, 10, false), &columns);
        assert_eq!(column(&out, 3), vec![N, N, N, N, N]);
    }

    /// Host c: `mean(f)` at 10s, `max(i)` at 40s.
    fn host_c() -> Vec<(i64, Vec<Value>)> {
        vec![(10, vec![f(1.0), N]), (40, vec![N, i(5)])]
    }

    #[test]
    fn host_c_fill_previous_and_none() {
        // WHERE host='c' AND time >= 0 AND time <= 60s GROUP BY time(10s) fill(previous)
        let out = run(
            &host_c(),
            Fill::Previous,
            grid(Some(0), 60, 10, false),
            &cols(2),
        );
        assert_eq!(
            column(&out, 1),
            vec![N, f(1.0), f(1.0), f(1.0), f(1.0), f(1.0), f(1.0)]
        );
        assert_eq!(column(&out, 2), vec![N, N, N, N, i(5), i(5), i(5)]);
        // fill(none)
        let out = run(
            &host_c(),
            Fill::None,
            grid(Some(0), 60, 10, false),
            &cols(2),
        );
        assert_eq!(out.values, series(&host_c()).values);
    }

    #[test]
    fn limit_and_offset_count_each_columns_points() {
        // fill(none) LIMIT 1: two rows (one per column); OFFSET 1: nothing.
        let g = grid(Some(0), 60, 10, false);
        let out = run_limit(&host_c(), Fill::None, g, &cols(2), Some(1), None);
        assert_eq!(out.values, series(&host_c()).values);
        let out = run_limit(&host_c(), Fill::None, g, &cols(2), None, Some(1));
        assert!(out.values.is_empty());
        // fill(null) LIMIT 3 OFFSET 2 over all hosts (before host c).
        let g = grid(Some(0), 90, 10, false);
        let out = run_limit(&mean_max(), Fill::Null, g, &cols(2), Some(3), Some(2));
        assert_eq!(times(&out), vec![20, 30, 40]);
        assert_eq!(column(&out, 1), vec![f(6.0), N, N]);
        // fill(none) LIMIT 3 OFFSET 2
        let out = run_limit(&mean_max(), Fill::None, g, &cols(2), Some(3), Some(2));
        assert_eq!(times(&out), vec![20, 50, 60]);
    }

    #[test]
    fn without_a_lower_bound_each_column_starts_at_its_data() {
        // WHERE host='c' AND time <= 60s GROUP BY time(10s): count(f), count(i)
        let counts = [FillColumn {
            data_type: Some(FieldType::Integer),
            count: true,
        }; 2];
        let input = vec![(10, vec![i(1), N]), (40, vec![N, i(1)])];
        let out = run(&input, Fill::Null, grid(None, 60, 10, false), &counts);
        assert_eq!(times(&out), vec![10, 20, 30, 40, 50, 60]);
        assert_eq!(column(&out, 1), vec![i(1), i(0), i(0), i(0), i(0), i(0)]);
        assert_eq!(column(&out, 2), vec![N, N, N, i(1), i(0), i(0)]);
        // ... mean(f), max(i) fill(5)
        let out = run(
            &host_c(),
            Fill::Number(Literal::Integer(5)),
            grid(None, 60, 10, false),
            &cols(2),
        );
        assert_eq!(out.values[0], vec![Value::Time(10 * S), f(1.0), i(5)]);
        assert_eq!(out.values[5], vec![Value::Time(60 * S), f(5.0), i(5)]);
    }

    #[test]
    fn descending_walks_down_from_the_end() {
        let desc: Vec<_> = mean_max().into_iter().rev().collect();
        let g = grid(Some(0), 90, 10, true);
        // ORDER BY time DESC, fill(null)
        let out = run(&desc, Fill::Null, g, &cols(2));
        assert_eq!(
            times(&out),
            (0..10).rev().map(|k| k * 10).collect::<Vec<_>>()
        );
        // fill(previous) carries downwards.
        let out = run(&desc, Fill::Previous, g, &cols(2));
        assert_eq!(
            column(&out, 1),
            vec![
                N,
                N,
                N,
                f(9.625),
                f(3.0),
                f(3.0),
                f(3.0),
                f(6.0),
                f(2.5),
                f(5.75)
            ]
        );
        // fill(linear)
        let out = run(&desc, Fill::Linear, g, &cols(2));
        assert_eq!(
            column(&out, 1),
            vec![
                N,
                N,
                N,
                f(9.625),
                f(3.0),
                f(4.0),
                f(5.0),
                f(6.0),
                f(2.5),
                f(5.75)
            ]
        );
    }

    #[test]
    fn descending_without_lower_bound_stops_at_the_earliest_data() {
        // WHERE host='c' AND time <= 60s GROUP BY time(10s) fill(previous) ORDER BY time DESC
        let desc: Vec<_> = host_c().into_iter().rev().collect();
        let out = run(&desc, Fill::Previous, grid(None, 60, 10, true), &cols(2));
        assert_eq!(times(&out), vec![60, 50, 40, 30, 20, 10]);
        assert_eq!(column(&out, 1), vec![N, N, N, N, N, f(1.0)]);
        assert_eq!(column(&out, 2), vec![N, N, i(5), i(5), i(5), i(5)]);
        // ... fill(5)
        let out = run(
            &desc,
            Fill::Number(Literal::Integer(5)),
            grid(None, 60, 10, true),
            &cols(2),
        );
        assert_eq!(
            column(&out, 1),
            vec![f(5.0), f(5.0), f(5.0), f(5.0), f(5.0), f(1.0)]
        );
        assert_eq!(column(&out, 2), vec![i(5); 6]);
    }

    #[test]
    fn offset_grid() {
        // SELECT mean(f) ... WHERE time >= 0 AND time <= 90s GROUP BY time(20s,5s)
        let input = vec![
            (-15, vec![f(1.5)]),
            (5, vec![f(5.5)]),
            (25, vec![f(8.0)]),
            (45, vec![f(5.125)]),
            (65, vec![f(12.0)]),
        ];
        let mut g = grid(Some(0), 90, 20, false);
        g.offset = 5 * S;
        let out = run(&input, Fill::Null, g, &cols(1));
        assert_eq!(times(&out), vec![-15, 5, 25, 45, 65, 85]);
        assert_eq!(column(&out, 1)[5], N);
    }

    #[test]
    fn fill_linear_counts_whole_intervals_as_go_truncates_them() {
        // lin v=10 -10s, v=30 30s, v=50 70s:
        // SELECT mean(v) FROM lin WHERE time >= -15s AND time <= 80s
        //   GROUP BY time(20s,5s) fill(linear)
        // -15s/20s and 5s/20s both truncate to 0: the 5s interval gets 10.
        let input = vec![
            (-15, vec![f(10.0)]),
            (25, vec![f(30.0)]),
            (65, vec![f(50.0)]),
        ];
        let mut g = grid(Some(-15), 80, 20, false);
        g.offset = 5 * S;
        let out = run(&input, Fill::Linear, g, &cols(1));
        assert_eq!(times(&out), vec![-15, 5, 25, 45, 65]);
        assert_eq!(
            column(&out, 1),
            vec![f(10.0), f(10.0), f(30.0), f(40.0), f(50.0)]
        );
        // ... GROUP BY time(20s) fill(linear)
        let input = vec![
            (-20, vec![f(10.0)]),
            (20, vec![f(30.0)]),
            (60, vec![f(50.0)]),
        ];
        let out = run(
            &input,
            Fill::Linear,
            grid(Some(-15), 80, 20, false),
            &cols(1),
        );
        assert_eq!(times(&out), vec![-20, 0, 20, 40, 60, 80]);
        assert_eq!(
            column(&out, 1),
            vec![f(10.0), f(20.0), f(30.0), f(40.0), f(50.0), N]
        );
    }

    #[test]
    fn empty_input_stays_empty() {
        let out = run(&[], Fill::Null, grid(Some(100), 190, 10, false), &cols(1));
        assert!(out.values.is_empty());
    }
}

#[cfg(test)]
mod zone_tests {
    //! `tz()` windows. Expected answers come from influxd 1.6.7 (Debian's
    //! 1.6.7~rc0): `dst v=<h>` every hour from 2020-10-31T00:00Z (h = 0..71,
    //! without h = 30..33, 50, 51), `dsts v=<h>` every 3 hours from
    //! 2020-03-07T00:00Z (h = 0, 3, ..., 69, without 30, 33).
    use super::*;

    const S: i64 = 1_000_000_000;
    const H: i64 = 3600 * S;

    fn zone(name: &str) -> TimeZone {
        TimeZone::load(name)
            .unwrap_or_else(|e| panic!("{e}: tzdata (/usr/share/zoneinfo) is needed"))
    }

    fn run(input: &[(i64, Value)], fill: Fill, grid: Grid, zone: &TimeZone) -> Vec<(i64, Value)> {
        let mut s = Series {
            values: input
                .iter()
                .map(|(t, v)| vec![Value::Time(t * S), v.clone()])
                .collect(),
            ..Series::default()
        };
        let columns = [FillColumn {
            data_type: Some(FieldType::Integer),
            count: false,
        }];
        fill_series_in(&mut s, &fill, &grid, Some(zone), &columns, None, None);
        s.values
            .into_iter()
            .map(|r| match &r[..] {
                [Value::Time(t), v] => (t / S, v.clone()),
                _ => panic!("{r:?}"),
            })
            .collect()
    }

    fn grid(start: i64, end: i64, interval: i64) -> Grid {
        Grid {
            interval,
            offset: 0,
            start: Some(start * S),
            end: end * S - 1,
            descending: false,
        }
    }

    fn i(x: i64) -> Value {
        Value::Integer(x)
    }

    #[test]
    fn days_in_chicago_across_the_fall_back() {
        // SELECT sum(v) FROM dst WHERE time >= '2020-10-31T00:00:00Z'
        //   AND time < '2020-11-03T00:00:00Z' GROUP BY time(1d) tz('America/Chicago')
        let chicago = zone("America/Chicago");
        assert_eq!(
            window_start_in(1_604_102_400 * S, 24 * H, 0, Some(&chicago)),
            1_604_034_000 * S
        );
        let rows = [
            (1_604_034_000, i(10)),
            (1_604_120_400, i(396)),
            (1_604_206_800, i(798)),
            (1_604_296_800, i(1125)),
        ];
        let out = run(
            &rows,
            Fill::Null,
            grid(1_604_102_400, 1_604_361_600, 24 * H),
            &chicago,
        );
        assert_eq!(out, rows.to_vec());
    }

    #[test]
    fn days_in_chicago_across_the_spring_forward() {
        // SELECT sum(v) FROM dsts WHERE time >= '2020-03-07T00:00:00Z'
        //   AND time < '2020-03-10T00:00:00Z' GROUP BY time(1d) tz('America/Chicago')
        let chicago = zone("America/Chicago");
        let rows = [
            (1_583_474_400, i(3)),
            (1_583_560_800, i(132)),
            (1_583_647_200, i(261)),
            (1_583_730_000, i(369)),
        ];
        let out = run(
            &rows,
            Fill::Null,
            grid(1_583_539_200, 1_583_798_400, 24 * H),
            &chicago,
        );
        assert_eq!(out, rows.to_vec());
    }

    #[test]
    fn hours_in_chicago_shift_across_offset_changes() {
        let chicago = zone("America/Chicago");
        // ... GROUP BY time(2h) fill(previous): the window at 07:00Z lasts 3 h.
        let rows = [
            (1_604_199_600, i(28)),
            (1_604_206_800, i(29)),
            (1_604_224_800, i(35)),
        ];
        let g = grid(1_604_199_600, 1_604_232_000, 2 * H);
        let out = run(&rows, Fill::Previous, g, &chicago);
        assert_eq!(
            out,
            vec![
                (1_604_199_600, i(28)),
                (1_604_206_800, i(29)),
                (1_604_214_000, i(29)),
                (1_604_224_800, i(35))
            ]
        );
        // ... fill(linear) ORDER BY time DESC: 33 at 08:00Z.
        let desc: Vec<_> = rows.iter().rev().cloned().collect();
        let mut g = g;
        g.descending = true;
        let out = run(&desc, Fill::Linear, g, &chicago);
        assert_eq!(
            out,
            vec![
                (1_604_224_800, i(35)),
                (1_604_217_600, i(33)),
                (1_604_206_800, i(29)),
                (1_604_199_600, i(28))
            ]
        );
        // dsts ... GROUP BY time(3h): the window after 06:00Z starts at 08:00Z.
        let rows = [
            (1_583_625_600, i(24)),
            (1_583_636_400, i(27)),
            (1_583_665_200, i(36)),
            (1_583_676_000, i(39)),
        ];
        let out = run(
            &rows,
            Fill::Null,
            grid(1_583_625_600, 1_583_690_400, 3 * H),
            &chicago,
        );
        let times: Vec<i64> = out.iter().map(|r| r.0).collect();
        assert_eq!(
            times,
            vec![
                1_583_625_600,
                1_583_636_400,
                1_583_647_200,
                1_583_654_400,
                1_583_665_200,
                1_583_676_000,
                1_583_686_800
            ]
        );
    }

    #[test]
    fn half_hour_zones_align_on_local_time() {
        // dsts ... GROUP BY time(90m) tz('Asia/Kolkata'): 13 windows from 23:00Z.
        let kolkata = zone("Asia/Kolkata");
        let rows = [
            (1_583_622_000, i(24)),
            (1_583_632_800, i(27)),
            (1_583_665_200, i(36)),
            (1_583_676_000, i(39)),
        ];
        let out = run(
            &rows,
            Fill::Null,
            grid(1_583_625_600, 1_583_690_400, 90 * 60 * S),
            &kolkata,
        );
        assert_eq!(out.len(), 13);
        assert_eq!(out[0], (1_583_622_000, i(24)));
        assert_eq!(out[12], (1_583_686_800, Value::Null));
    }
}
