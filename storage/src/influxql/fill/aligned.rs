//! The fill of a series whose rows each hold a value in every column, at
//! times strictly in output order: what the hot evaluator and the engine
//! answer for TSBS's `single-groupby-*` and `cpu-max-all-*` (every bucket has
//! every field). Then every column emits points at the same times, so the
//! column-by-column fill and join of [`super::fill_series_in`] (a cell cloned
//! out and back in, a row map keyed by time) come to walking the grid once:
//! the input rows are moved into the answer as they are and only the empty
//! intervals get new rows. The answer is the generic one, value by value
//! (`aligned_tests.rs` compares the two).

use influxql::ast::Fill;

use super::grid::{zone_ns, Walk};
use super::{fill_value, FillColumn};
use crate::influxql::series::Value;

/// `rows` filled as [`super::fill_series_in`] fills them, `limit`/`offset`
/// applied; `Err(rows)` (given back untouched) where a row lacks a value in
/// some column or the times are not strictly in output order.
pub(super) fn fill_aligned(
    rows: Vec<Vec<Value>>,
    fill: &Fill,
    walk: &Walk<'_>,
    columns: &[FillColumn],
    limit: Option<u64>,
    offset: Option<u64>,
) -> Result<Vec<Vec<Value>>, Vec<Vec<Value>>> {
    let Some(times) = aligned_times(&rows, walk, columns.len()) else {
        return Err(rows);
    };
    if matches!(fill, Fill::None) {
        return Ok(crate::influxql::page(rows, limit, offset));
    }
    let grid = walk.grid;
    let (first, last) = (times[0], times[times.len() - 1]);
    let (from, to) = if grid.descending {
        (
            walk.window(grid.end),
            grid.start.map_or(last, |s| walk.window(s)),
        )
    } else {
        (
            grid.start.map_or(first, |s| walk.window(s)),
            walk.window(grid.end),
        )
    };
    let mut input = rows.into_iter().zip(times.iter().copied()).peekable();
    let mut out: Vec<Vec<Value>> = Vec::new();
    // The last input row emitted (its index in `out`): `fill(previous)`'s and
    // `fill(linear)`'s left neighbour in every column.
    let mut prev: Option<usize> = None;
    let mut last_emitted: Option<i64> = None;
    let mut t = from;
    let mut at = zone_ns(walk.zone, t);
    while !grid.before(to, t) {
        // Rows outside the grid are emitted where they fall, as in `fill_column`.
        while let Some((row, time)) = input.next_if(|(_, time)| !grid.before(t, *time)) {
            prev = Some(out.len());
            last_emitted = Some(time);
            out.push(row);
        }
        if last_emitted != Some(t) {
            let before = prev.map(|i| (&out[i], times_of(&out[i])));
            let after = input.peek().map(|(row, time)| (row, *time));
            let mut row = Vec::with_capacity(columns.len() + 1);
            row.push(Value::Time(t));
            for (c, column) in columns.iter().enumerate() {
                let around = (
                    before.map(|(r, time)| (time, &r[c + 1])),
                    after.map(|(r, time)| (time, &r[c + 1])),
                );
                row.push(fill_value(fill, column, around, t, grid));
            }
            last_emitted = Some(t);
            out.push(row);
        }
        match walk.next(t, &mut at) {
            Some(n) => t = n,
            None => break,
        }
    }
    out.extend(input.map(|(row, _)| row));
    Ok(crate::influxql::page(out, limit, offset))
}

/// The rows' times where every row is `[Time(t), v1, …, v_width]` with no
/// null value and the times run strictly in output order (and there is a row).
fn aligned_times(rows: &[Vec<Value>], walk: &Walk<'_>, width: usize) -> Option<Vec<i64>> {
    let mut times = Vec::with_capacity(rows.len());
    for row in rows {
        let (Some(Value::Time(t)), true) = (row.first(), row.len() == width + 1) else {
            return None;
        };
        if row[1..].iter().any(|v| matches!(v, Value::Null)) {
            return None;
        }
        if times.last().is_some_and(|&p| !walk.grid.before(p, *t)) {
            return None;
        }
        times.push(*t);
    }
    (!times.is_empty()).then_some(times)
}

/// A row's time (its first cell; every row [`fill_aligned`] emits has one).
fn times_of(row: &[Value]) -> i64 {
    match row.first() {
        Some(Value::Time(t)) => *t,
        _ => 0,
    }
}
