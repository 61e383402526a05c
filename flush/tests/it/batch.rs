//! Test batches in ingest's layout (`time` Int64 ns, `series_id`, tags, fields), as the
//! flusher takes them from the WAL and hands them to the engine or the cluster. One file for
//! both crates' tests: the cluster tests include it by path (`cluster/tests/it/main.rs`).

use std::sync::Arc;

use engine::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array,
};
use engine::arrow::datatypes::{DataType, Field, Schema};

/// A column of a test batch (each crate's tests use a subset of the kinds).
#[allow(dead_code)]
pub(crate) enum Col {
    Tag(&'static str, Vec<&'static str>),
    F(&'static str, Vec<Option<f64>>),
    I(&'static str, Vec<Option<i64>>),
    U(&'static str, Vec<Option<u64>>),
    S(&'static str, Vec<Option<&'static str>>),
    B(&'static str, Vec<Option<bool>>),
}

/// A batch in ingest's layout.
pub(crate) fn batch(times: Vec<i64>, series: Vec<u64>, cols: Vec<Col>) -> RecordBatch {
    let mut fields = vec![
        Field::new("time", DataType::Int64, false),
        Field::new("series_id", DataType::UInt64, false),
    ];
    let mut arrays: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(times)),
        Arc::new(UInt64Array::from(series)),
    ];
    for c in cols {
        let (f, a): (Field, ArrayRef) = match c {
            Col::Tag(n, v) => (
                Field::new(n, DataType::Utf8, false),
                Arc::new(StringArray::from(v)),
            ),
            Col::F(n, v) => (
                Field::new(n, DataType::Float64, true),
                Arc::new(Float64Array::from(v)),
            ),
            Col::I(n, v) => (
                Field::new(n, DataType::Int64, true),
                Arc::new(Int64Array::from(v)),
            ),
            Col::U(n, v) => (
                Field::new(n, DataType::UInt64, true),
                Arc::new(UInt64Array::from(v)),
            ),
            Col::S(n, v) => (
                Field::new(n, DataType::Utf8, true),
                Arc::new(StringArray::from(v)),
            ),
            Col::B(n, v) => (
                Field::new(n, DataType::Boolean, true),
                Arc::new(BooleanArray::from(v)),
            ),
        };
        fields.push(f);
        arrays.push(a);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}
