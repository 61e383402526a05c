//! Test helpers shared by the hot store's unit tests.

use std::sync::Arc;

use engine::arrow::array::{
    ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array,
};
use engine::arrow::datatypes::{DataType, Field, Schema};

/// Rows (series, time, f) as ingest lays them out.
pub(super) fn batch(rows: &[(u64, i64, f64)]) -> RecordBatch {
    let schema = Schema::new(vec![
        Field::new("time", DataType::Int64, false),
        Field::new("series_id", DataType::UInt64, false),
        Field::new("host", DataType::Utf8, false),
        Field::new("f", DataType::Float64, true),
    ]);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| format!("h{}", r.0)),
        )),
        Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.2))),
    ];
    RecordBatch::try_new(Arc::new(schema), cols).unwrap()
}

/// Series 1's `(time, f)` in measurement `m` of database `d`, as the store holds
/// them; `None` when it holds no such table.
pub(super) fn floats(s: &super::HotStore, m: &str) -> Option<Vec<(i64, f64)>> {
    let t = s.read();
    let series = t.get("d", m)?.series[&1].all();
    let Some(Some(c)) = series.columns.first() else {
        panic!("no f")
    };
    let super::table::Values::Float(v) = &c.values else {
        panic!("not floats")
    };
    Some(
        series
            .times
            .iter()
            .copied()
            .zip(v.iter().copied())
            .collect(),
    )
}
