//! The Rust combination on hand-made partial rows: each of the engine statement's rules
//! (`combine.rs`'s documentation). That the answers equal the embedded engine's on real
//! shards is `server/tests/http/cluster_combine.rs`'s.

use std::collections::BTreeMap;
use std::sync::Arc;

use engine::arrow::array::{
    ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array,
};
use serde_json::{json, Value as Json};

use super::super::tests::pushed;
use super::*;

/// A batch of `push`'s partial columns; each row names the cells it has (a tag `''`, any
/// other cell null when not named).
fn batch(push: &Pushdown, rows: &[Json]) -> RecordBatch {
    let cell = |r: &Json, name: &str| r.get(name).cloned().unwrap_or(Json::Null);
    let columns: Vec<(String, ArrayRef)> = push
        .partial_kinds()
        .into_iter()
        .map(|(name, kind)| {
            let cells: Vec<Json> = rows.iter().map(|r| cell(r, &name)).collect();
            let array: ArrayRef = match kind {
                ColumnKind::Tag => Arc::new(StringArray::from_iter_values(
                    cells.iter().map(|c| c.as_str().unwrap_or("").to_string()),
                )),
                ColumnKind::String => Arc::new(StringArray::from(
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
            (name, array)
        })
        .collect();
    RecordBatch::try_from_iter(columns).unwrap()
}

fn row(time: Option<i64>, group: &[&str], values: Vec<Value>) -> Row {
    Row {
        time,
        group: group.iter().map(|g| g.to_string()).collect(),
        values,
    }
}

#[test]
fn counts_sums_and_means_add_up_with_their_types_and_nulls() {
    let p = pushed("SELECT count(v), sum(n), mean(v), sum(u) FROM cpu GROUP BY dc").unwrap();
    let names: BTreeMap<String, ColumnKind> = p.partial_kinds().into_iter().collect();
    assert!(names.contains_key("s1") && names.contains_key("s2") && names.contains_key("s3"));
    let shard0 = batch(
        &p,
        &[
            json!({"k0": "b", "n0": 2, "n1": 2, "n2": 0, "s1": 5, "s2": 3.5}),
            json!({"k0": "a", "n0": 0, "n1": 1, "n2": 0, "s1": -3}),
            json!({"k0": "c", "n0": 0, "n1": 0, "n2": 0}),
        ],
    );
    let shard1 = batch(
        &p,
        &[json!({"k0": "b", "n0": 1, "n1": 0, "n2": 2, "s2": 1.0, "s3": 7})],
    );
    let rows = p.combine(&[&shard0, &shard1]).unwrap();
    let t = Some(p.start);
    let mut want = vec![
        row(
            t,
            &["a"],
            vec![Value::Null, Value::Integer(-3), Value::Null, Value::Null],
        ),
        row(
            t,
            &["b"],
            vec![
                Value::Integer(3),
                Value::Integer(5),
                Value::Float(1.5),
                Value::Unsigned(7),
            ],
        ),
    ];
    if p.presence != Presence::InSql {
        want.push(row(t, &["c"], vec![Value::Null; 4]));
    }
    assert_eq!(rows, want);
}

#[test]
fn without_group_by_one_row_answers_and_sums_wrap_as_the_engine_s() {
    let p = pushed("SELECT sum(n), spread(u), min(n), max(v) FROM cpu").unwrap();
    let rows = p.combine(&[]).unwrap();
    let empty = row(Some(p.start), &[], vec![Value::Null; 4]);
    if p.presence == Presence::InSql {
        assert_eq!(rows, []);
    } else {
        assert_eq!(rows, [empty]);
    }
    let parts = batch(
        &p,
        &[
            json!({"n0": 1, "n1": 1, "n2": 1, "s0": i64::MAX, "m1": 10, "x1": 12, "m2": 4, "x3": 2.5}),
            json!({"n0": 1, "n1": 1, "n2": 1, "s0": 2, "m1": 7, "x1": 9, "m2": -1, "x3": 3.0}),
        ],
    );
    let rows = p.combine(&[&parts]).unwrap();
    assert_eq!(
        rows,
        [row(
            Some(p.start),
            &[],
            vec![
                Value::Integer(i64::MIN + 1),
                // Two `UInt64`s' difference is an `Int64`.
                Value::Integer(5),
                Value::Integer(-1),
                Value::Float(3.0),
            ]
        )]
    );
}

#[test]
fn first_and_last_pick_by_time_then_the_larger_value_among_partials_with_one() {
    let p = pushed(
        "SELECT first(v), last(s) FROM cpu WHERE time >= 0 AND time < 20 \
         GROUP BY time(10ns), host",
    )
    .unwrap();
    let parts = batch(
        &p,
        &[
            // Bucket 0, host b: first at 5 by three series, the larger value 2.0 (shown
            // as the engine does, the earlier of equal ones); last at 8, the larger "y".
            json!({"b": 0, "k0": "b", "n0": 1, "v0": 1.0, "t0": 5, "n1": 1, "v1": "x", "t1": 8}),
            json!({"b": 0, "k0": "b", "n0": 1, "v0": 2.0, "t0": 5, "n1": 1, "v1": "y", "t1": 8}),
            json!({"b": 0, "k0": "b", "n0": 1, "v0": 9.0, "t0": 6, "n1": 1, "v1": "z", "t1": 7}),
            // A partial without a value of the field does not count, whatever it holds.
            json!({"b": 0, "k0": "b", "n0": 0, "v0": 99.0, "t0": 1, "n1": 0, "v1": "zz", "t1": 9}),
            json!({"b": 10, "k0": "a", "n0": 1, "v0": -4.0, "t0": 12, "n1": 0}),
        ],
    );
    let rows = p.combine(&[&parts]).unwrap();
    assert_eq!(
        rows,
        [
            row(Some(10), &["a"], vec![Value::Float(-4.0), Value::Null]),
            row(
                Some(0),
                &["b"],
                vec![Value::Float(2.0), Value::String("y".into())]
            ),
        ]
    );
    // A lone selector's time is its point's.
    let p = pushed("SELECT last(n) FROM cpu GROUP BY host").unwrap();
    let parts = batch(
        &p,
        &[
            json!({"k0": "h", "n0": 1, "v0": 3, "t0": 40}),
            json!({"k0": "h", "n0": 2, "v0": 1, "t0": 41}),
            json!({"k0": "h", "n0": 1, "v0": 0, "t0": 41}),
        ],
    );
    assert_eq!(
        p.combine(&[&parts]).unwrap(),
        [row(Some(41), &["h"], vec![Value::Integer(1)])]
    );
}

#[test]
fn groups_come_in_byte_order_of_their_tags_then_by_interval() {
    let p = pushed(
        "SELECT count(v) FROM cpu WHERE time >= 0 AND time < 30 GROUP BY time(10ns), dc, host",
    )
    .unwrap();
    let parts = batch(
        &p,
        &[
            json!({"b": 20, "k0": "a", "k1": "x", "n0": 1}),
            json!({"b": 0, "k0": "a", "k1": "x", "n0": 2}),
            json!({"b": 10, "k0": "B", "k1": "y", "n0": 3}),
            json!({"b": 10, "k0": "a", "k1": "", "n0": 4}),
        ],
    );
    let got: Vec<(Option<i64>, Vec<String>)> = p
        .combine(&[&parts])
        .unwrap()
        .into_iter()
        .map(|r| (r.time, r.group))
        .collect();
    let g = |a: &str, b: &str| vec![a.to_string(), b.to_string()];
    assert_eq!(
        got,
        [
            (Some(10), g("B", "y")),
            (Some(10), g("a", "")),
            (Some(0), g("a", "x")),
            (Some(20), g("a", "x")),
        ]
    );
}

#[test]
fn partials_of_an_unexpected_shape_are_left_to_the_engine() {
    let p = pushed("SELECT sum(v) FROM cpu GROUP BY host").unwrap();
    let whole = batch(&p, &[json!({"k0": "h", "n0": 1, "s0": 1.5})]);
    let without = whole.project(&[0, 1, 2]).unwrap();
    assert!(matches!(
        p.combine(&[&without]),
        Err(CombineError::Missing(c)) if c == "s0"
    ));
    let i = whole.schema().index_of("s0").unwrap();
    let mut cols = whole.columns().to_vec();
    cols[i] = Arc::new(Int64Array::from(vec![Some(1)]));
    let names: Vec<(String, ArrayRef)> = whole
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .zip(cols)
        .collect();
    let typed = RecordBatch::try_from_iter(names).unwrap();
    assert!(matches!(
        p.combine(&[&typed]),
        Err(CombineError::Type { name, .. }) if name == "s0"
    ));
}
