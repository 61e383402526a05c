//! Subqueries (`SELECT max(m) FROM (SELECT mean(x) AS m ... GROUP BY time(1m))`):
//! the inner statement is answered first (all of it: fill, transformations),
//! then its series become a table the outer statement is planned against like
//! a measurement: the inner series' tags are tags, its columns fields, each
//! row a point. The table is an Arrow batch in a measurement table's layout,
//! handed to the engine (`engine::Engine::arrow_scan`, read as `ArrowStream`):
//! no statement text grows with the inner answer (as literals it hit the
//! engine's 256 KiB statement limit at a few thousand rows), and no value is
//! ever written into SQL.

use std::sync::Arc;

use engine::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampNanosecondArray, UInt32Array, UInt64Array,
};
use engine::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use influxql::ast::{Dimension, SelectStatement};
use ingest::{FieldType, MeasurementSchema};

use super::error::InfluxqlError;
use super::series::{Series, StatementResult, Value};

/// One measurement of a subquery's answer, as a table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Materialized {
    /// Its fields (the inner columns) and tags (the inner `GROUP BY` tags).
    pub(crate) schema: MeasurementSchema,
    /// Its rows in the layout of a measurement table (`time`, `series_id`,
    /// `__seq`, `__row`, tags, fields); each row a series of its own, so rows
    /// of one time are not merged (they are distinct answers) and keep
    /// their order.
    pub(crate) batch: RecordBatch,
}

/// The inner statement with the outer statement's `GROUP BY` tags added to its own, as
/// InfluxDB 1.x groups a subquery (`newIteratorOptionsSubstatement`: the outer grouping is
/// propagated inward): `SELECT max(m) FROM (SELECT mean(x) AS m FROM cpu GROUP BY host)
/// GROUP BY region` computes the mean per host and region, so each inner series carries the
/// region the outer statement groups by (without it, every row would have an empty region).
pub(crate) fn with_outer_tags<'a>(
    inner: &'a SelectStatement,
    outer: &SelectStatement,
) -> std::borrow::Cow<'a, SelectStatement> {
    let groups_all = inner
        .dimensions
        .iter()
        .any(|d| matches!(d, Dimension::Wildcard));
    let missing: Vec<Dimension> = outer
        .dimensions
        .iter()
        .filter(|d| matches!(d, Dimension::Tag(_)) && !groups_all && !inner.dimensions.contains(d))
        .cloned()
        .collect();
    if missing.is_empty() {
        return std::borrow::Cow::Borrowed(inner);
    }
    let mut inner = inner.clone();
    inner.dimensions.extend(missing);
    std::borrow::Cow::Owned(inner)
}

/// The inner answer as tables, one per measurement name, sorted by name.
pub(crate) fn materialize(inner: &StatementResult) -> Result<Vec<Materialized>, InfluxqlError> {
    let mut names: Vec<&str> = inner.series.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names.into_iter().map(|n| table(inner, n)).collect()
}

fn table(inner: &StatementResult, name: &str) -> Result<Materialized, InfluxqlError> {
    let series: Vec<_> = inner.series.iter().filter(|s| s.name == name).collect();
    let mut tags: Vec<String> = series
        .iter()
        .flat_map(|s| s.tags.iter().map(|(k, _)| k.clone()))
        .collect();
    tags.sort();
    tags.dedup();
    let mut fields: Vec<(String, FieldType)> = Vec::new();
    for s in &series {
        for (i, c) in s.columns.iter().enumerate().skip(1) {
            let t = column_type(s.values.iter().map(|r| &r[i]));
            match fields.iter_mut().find(|(f, _)| f == c) {
                Some((_, have)) => *have = wider(*have, t),
                None => fields.push((c.clone(), t)),
            }
        }
    }
    // The rows: (series, row) of every row that has a time.
    let rows: Vec<(&Series, &Vec<Value>)> = series
        .iter()
        .flat_map(|s| s.values.iter().map(move |r| (*s, r)))
        .filter(|(_, r)| matches!(r.first(), Some(Value::Time(_))))
        .collect();
    let n = rows.len();
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(
            TimestampNanosecondArray::from_iter_values(rows.iter().map(|(_, r)| match r[0] {
                Value::Time(t) => t,
                _ => unreachable!("filtered above"),
            }))
            .with_timezone("UTC"),
        ),
        Arc::new(UInt64Array::from_iter_values(0..n as u64)),
        Arc::new(UInt64Array::from_value(0, n)),
        Arc::new(UInt32Array::from_iter_values(0..n as u32)),
    ];
    let mut schema = vec![
        Field::new(
            "time",
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            false,
        ),
        Field::new("series_id", DataType::UInt64, false),
        Field::new("__seq", DataType::UInt64, false),
        Field::new("__row", DataType::UInt32, false),
    ];
    for k in &tags {
        columns.push(Arc::new(StringArray::from_iter_values(rows.iter().map(
            |(s, _)| {
                s.tags
                    .iter()
                    .find(|(x, _)| x == k)
                    .map_or("", |(_, v)| v.as_str())
            },
        ))));
        schema.push(Field::new(k, DataType::Utf8, false));
    }
    for (f, t) in &fields {
        let cell = |s: &Series, r: &Vec<Value>| -> Value {
            s.columns
                .iter()
                .position(|c| c == f)
                .and_then(|i| r.get(i))
                .cloned()
                .unwrap_or(Value::Null)
        };
        let cells = rows.iter().map(|(s, r)| cell(s, r));
        let (array, data_type): (ArrayRef, DataType) = match t {
            FieldType::Float => (
                Arc::new(
                    cells
                        .map(|v| v.as_f64().filter(|f| f.is_finite()))
                        .collect::<Float64Array>(),
                ),
                DataType::Float64,
            ),
            FieldType::Integer => (
                Arc::new(
                    cells
                        .map(|v| match v {
                            Value::Integer(i) | Value::Time(i) => Some(i),
                            _ => None,
                        })
                        .collect::<Int64Array>(),
                ),
                DataType::Int64,
            ),
            FieldType::UInteger => (
                Arc::new(
                    cells
                        .map(|v| match v {
                            Value::Unsigned(u) => Some(u),
                            _ => None,
                        })
                        .collect::<UInt64Array>(),
                ),
                DataType::UInt64,
            ),
            FieldType::String => (
                Arc::new(cells.map(|v| text(&v)).collect::<StringArray>()),
                DataType::Utf8,
            ),
            FieldType::Boolean => (
                Arc::new(
                    cells
                        .map(|v| match v {
                            Value::Boolean(b) => Some(b),
                            _ => None,
                        })
                        .collect::<BooleanArray>(),
                ),
                DataType::Boolean,
            ),
        };
        columns.push(array);
        schema.push(Field::new(f, data_type, true));
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(schema)), columns).map_err(|e| {
        InfluxqlError::EngineAnswer(format!("cannot hold a subquery's answer as a table: {e}"))
    })?;
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Materialized {
        schema: MeasurementSchema {
            name: name.to_string(),
            tag_keys: tags,
            fields,
        },
        batch,
    })
}

/// A value of a column that holds strings (mixed kinds widen to strings).
fn text(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null => return None,
        Value::Float(f) => f.to_string(),
        Value::Integer(i) | Value::Time(i) => i.to_string(),
        Value::Unsigned(u) => u.to_string(),
        Value::String(s) => s.to_string(),
        Value::Boolean(b) => b.to_string(),
    })
}

/// The type of a column from its values (floats win over integers; a column
/// without values is a float).
fn column_type<'a>(values: impl Iterator<Item = &'a Value>) -> FieldType {
    let mut t: Option<FieldType> = None;
    for v in values {
        let this = match v {
            Value::Float(_) => FieldType::Float,
            Value::Integer(_) | Value::Time(_) => FieldType::Integer,
            Value::Unsigned(_) => FieldType::UInteger,
            Value::String(_) => FieldType::String,
            Value::Boolean(_) => FieldType::Boolean,
            Value::Null => continue,
        };
        t = Some(t.map_or(this, |have| wider(have, this)));
    }
    t.unwrap_or(FieldType::Float)
}

fn wider(a: FieldType, b: FieldType) -> FieldType {
    match (a, b) {
        (a, b) if a == b => a,
        (
            FieldType::Float | FieldType::Integer | FieldType::UInteger,
            FieldType::Float | FieldType::Integer | FieldType::UInteger,
        ) => FieldType::Float,
        _ => FieldType::String,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::arrow::array::Array;

    #[test]
    fn inner_series_become_one_quoted_table() {
        let inner = StatementResult {
            series: vec![Series {
                name: "cpu".into(),
                tags: vec![("host".into(), "a'b".into())],
                columns: std::sync::Arc::new(vec!["time".into(), "m".into()]),
                values: vec![
                    vec![Value::Time(5), Value::Float(1.5)],
                    vec![Value::Time(6), Value::Null],
                ],
                packed: None,
                one_row: None,
            }],
            messages: vec![],
        };
        let m = materialize(&inner).unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].schema.tag_keys, ["host"]);
        assert_eq!(m[0].schema.fields, [("m".to_string(), FieldType::Float)]);
        let b = &m[0].batch;
        let schema = b.schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["time", "series_id", "__seq", "__row", "host", "m"]);
        assert_eq!(b.num_rows(), 2);
        let host = b.column(4).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(host.value(1), "a'b");
        let m = b.column(5).as_any().downcast_ref::<Float64Array>().unwrap();
        assert_eq!((m.value(0), m.is_null(1)), (1.5, true));
        let series = b.column(1).as_any().downcast_ref::<UInt64Array>().unwrap();
        assert_eq!((series.value(0), series.value(1)), (0, 1));
    }
}
