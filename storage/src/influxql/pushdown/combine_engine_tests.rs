//! The Rust combination against the engine statement it replaces
//! ([`Pushdown::combine_sql`], run in the embedded engine over an Arrow scan of the same
//! partials): equal rows, value for value, over generated partials — ties of time and value
//! between partials, `-0.0`, sums past `i64::MAX` and `u64::MAX` and to infinity, partials
//! without a value, empty groups, no partial row at all — for statements of every function
//! family.

use std::sync::Arc;

use engine::arrow::array::{
    ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array,
};
use engine::OutputFormat;
use serde_json::{json, Value as Json};

use super::super::tests::{engine_bytes, pushed, Gen};
use super::*;
use crate::influxql::rows::parse_arrow;

/// `rows` partial rows of `push` as a shard sends them: a field's columns null where its
/// count is 0.
fn partials(push: &Pushdown, g: &mut Gen, rows: usize) -> RecordBatch {
    let kinds = push.partial_kinds();
    let floats = [1.5, -2.0, 0.0, -0.0, 3.25, 1e308, -7.125];
    let ints = [3i64, -4, 0, i64::MAX, i64::MIN + 1, 12];
    let uints = [0u64, 5, u64::MAX, 9, 1 << 63];
    let texts = ["a", "b", "", "ab", "B"];
    let mut cells: Vec<Vec<Json>> = vec![Vec::new(); kinds.len()];
    for _ in 0..rows {
        let n: Vec<u64> = (0..push.fields.len())
            .map(|_| g.pick(&[0, 1, 2, 5]))
            .collect();
        for (c, (name, kind)) in kinds.iter().enumerate() {
            let (prefix, index) = name.split_at(1);
            // The field a column is of: its own number for a count, its call's otherwise.
            let field = match (prefix, index.parse::<usize>()) {
                ("n", Ok(j)) => Some(j),
                ("s" | "m" | "x" | "v" | "t" | "y", Ok(i)) => Some(push.calls[i].field),
                _ => None,
            };
            let empty =
                matches!((prefix, field), ("s" | "m" | "x" | "v" | "t", Some(f)) if n[f] == 0);
            let cell = match (prefix, kind) {
                ("b", _) => json!(g.pick(&[0, 10, 20])),
                ("k", _) => json!(g.pick(&texts)),
                ("n", _) => json!(n[field.unwrap()]),
                _ if name == "ms" => json!(1),
                _ if empty => Json::Null,
                ("t", _) => json!(g.pick(&[5, 6, 7])),
                (_, ColumnKind::Float) => json!(g.pick(&floats)),
                (_, ColumnKind::Integer) => json!(g.pick(&ints)),
                (_, ColumnKind::Unsigned) => json!(g.pick(&uints)),
                (_, ColumnKind::String) => json!(g.pick(&texts)),
                _ => Json::Null,
            };
            cells[c].push(cell);
        }
    }
    // Nullable as the shards' batches are (`cluster::read`): the engine reads a column
    // declared not null as a column without `Nullable`, and aggregates no rows of it to `0`.
    let columns: Vec<(String, ArrayRef, bool)> = kinds
        .iter()
        .zip(cells)
        .map(|((name, kind), cells)| {
            let array: ArrayRef = match kind {
                ColumnKind::Tag | ColumnKind::String => Arc::new(StringArray::from(
                    cells.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
                )),
                ColumnKind::Float => Arc::new(Float64Array::from(
                    cells.iter().map(|c| c.as_f64()).collect::<Vec<_>>(),
                )),
                ColumnKind::Integer => Arc::new(Int64Array::from(
                    cells.iter().map(|c| c.as_i64()).collect::<Vec<_>>(),
                )),
                ColumnKind::Unsigned => Arc::new(UInt64Array::from(
                    cells.iter().map(|c| c.as_u64()).collect::<Vec<_>>(),
                )),
                ColumnKind::Boolean => unreachable!("no partial column is boolean"),
            };
            (name.clone(), array, *kind != ColumnKind::Tag)
        })
        .collect();
    RecordBatch::try_from_iter_with_nullable(columns).unwrap()
}

#[test]
fn the_rust_combination_answers_the_engine_statement_s_rows() {
    let engine = super::super::tests::engine();
    let statements = [
        "SELECT count(v), sum(v), mean(v), sum(n), mean(n), sum(u), mean(u), count(s) FROM cpu",
        "SELECT count(v), sum(v), mean(n), sum(u) FROM cpu GROUP BY dc",
        "SELECT min(v), max(v), spread(v), min(n), spread(n), max(u), spread(u) FROM cpu \
         WHERE time >= 0 AND time < 30 GROUP BY time(10ns), host",
        "SELECT first(v), last(v), first(n), last(u), first(s), last(s) FROM cpu GROUP BY host, dc",
        "SELECT last(v) FROM cpu GROUP BY host",
        "SELECT first(s) FROM cpu",
        "SELECT first(n), sum(v) FROM cpu WHERE time >= 0 AND time < 30 GROUP BY time(10ns) fill(0)",
        // A lone `min`/`max`: its point's time, the earliest of equal values.
        "SELECT max(v) FROM cpu",
        "SELECT min(n) FROM cpu GROUP BY host",
        "SELECT max(u) FROM cpu",
        "SELECT count(*), max(*) FROM cpu GROUP BY dc",
        "SELECT count(v), first(v), sum(n) FROM cpu WHERE time >= 0 AND time < 30          GROUP BY time(10ns) tz('Asia/Kolkata')",
    ];
    let mut g = Gen(43);
    for q in statements {
        let p = pushed(q).unwrap();
        for round in 0..100 {
            let rows = (g.next() % 12) as usize;
            let batch = partials(&p, &mut g, rows);
            let rust = p.combine(&[&batch]).unwrap();
            let scan = engine.arrow_scan(batch.clone()).unwrap();
            scan.register(1).unwrap();
            let sql = p.combine_sql(&scan.table_sql(0));
            let answer = engine_bytes(&sql, OutputFormat::ArrowStream);
            let want = parse_arrow(&answer, p.groups.len()).unwrap();
            assert_eq!(rust, want, "{q}, round {round}: {batch:?}");
        }
    }
}
