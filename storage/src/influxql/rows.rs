//! The engine's answer to a planned statement, read back. Most answers come as Arrow
//! (`ArrowStream`, [`parse_arrow`]): columns of the engine's types, no text to format or
//! parse (a `high-cpu-all` answer of 94k rows × 21 columns: ~0.25 s as Arrow against
//! ~0.8 s as JSON, engine and parse). A statement with a reducer's array column
//! (`reduce.rs` decodes its JSON form) comes as `JSONCompactEachRowWithNamesAndTypes`
//! ([`parse`]), so every value is read by the type the engine declares (64-bit integers
//! arrive quoted, NaN and infinities as strings or null, NULL as null), never guessed from
//! its JSON form. Both give the same [`Row`]s.

use engine::arrow::array::{self as dt_array, Array, ArrayRef, AsArray, RecordBatch};
use engine::arrow::datatypes::{self as dt, DataType};
use serde_json::Value as Json;

use super::error::InfluxqlError;
use super::series::Value;

/// One answer row: time (ns), the `GROUP BY` tag values, the output columns.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// The point's or the bucket's time, ns.
    pub(crate) time: Option<i64>,
    /// The group's tag values (`''` where the series lacks the tag).
    pub(crate) group: Vec<String>,
    /// The output columns.
    pub(crate) values: Vec<Value>,
}

/// Parses the whole answer; `groups` columns after the time are tag values.
/// The engine may repeat the two header lines once per block: they are
/// skipped (a data row never equals them: its first cell is a number).
pub(crate) fn parse(answer: &[u8], groups: usize) -> Result<Vec<Row>, InfluxqlError> {
    let bad = |m: String| InfluxqlError::EngineAnswer(m);
    let mut names: Option<Vec<Json>> = None;
    let mut types: Option<Vec<String>> = None;
    let mut expect_types = false;
    let mut rows = Vec::new();
    for line in answer.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let cells: Vec<Json> = serde_json::from_slice(line).map_err(|e| bad(e.to_string()))?;
        if expect_types {
            types = Some(
                cells
                    .iter()
                    .map(|c| c.as_str().unwrap_or_default().to_string())
                    .collect(),
            );
            expect_types = false;
            continue;
        }
        if names.is_none() || names.as_ref() == Some(&cells) {
            names = Some(cells);
            expect_types = true;
            continue;
        }
        let types = types
            .as_ref()
            .ok_or_else(|| bad("no column types".into()))?;
        rows.push(row(&cells, types, groups)?);
    }
    Ok(rows)
}

fn row(cells: &[Json], types: &[String], groups: usize) -> Result<Row, InfluxqlError> {
    if cells.len() != types.len() || cells.len() < 1 + groups {
        return Err(InfluxqlError::EngineAnswer(format!(
            "a row of {} cells for {} columns",
            cells.len(),
            types.len()
        )));
    }
    let time = match value(&cells[0], &types[0])? {
        Value::Integer(t) => Some(t),
        Value::Unsigned(t) => i64::try_from(t).ok(),
        _ => None,
    };
    let group = cells[1..=groups]
        .iter()
        .map(|c| c.as_str().unwrap_or_default().to_string())
        .collect();
    let values = cells[1 + groups..]
        .iter()
        .zip(&types[1 + groups..])
        .map(|(c, t)| value(c, t))
        .collect::<Result<_, _>>()?;
    Ok(Row {
        time,
        group,
        values,
    })
}

/// Parses an `ArrowStream` answer (maybe several streams one after another); `groups`
/// columns after the time are tag values.
pub(crate) fn parse_arrow(answer: &[u8], groups: usize) -> Result<Vec<Row>, InfluxqlError> {
    let bad = |e: engine::arrow::error::ArrowError| InfluxqlError::EngineAnswer(e.to_string());
    let mut rows = Vec::new();
    let mut cursor = std::io::Cursor::new(answer);
    while (cursor.position() as usize) < answer.len() {
        let reader =
            engine::arrow::ipc::reader::StreamReader::try_new(&mut cursor, None).map_err(bad)?;
        for batch in reader {
            batch_rows(&batch.map_err(bad)?, groups, &mut rows)?;
        }
    }
    Ok(rows)
}

fn batch_rows(batch: &RecordBatch, groups: usize, out: &mut Vec<Row>) -> Result<(), InfluxqlError> {
    let columns = batch.columns();
    if columns.len() < 1 + groups {
        return Err(InfluxqlError::EngineAnswer(format!(
            "{} columns for a time and {groups} tags",
            columns.len()
        )));
    }
    // Tags as text once per column (dictionary, binary or string arrays alike).
    let tags: Vec<ArrayRef> = columns[1..=groups]
        .iter()
        .map(|c| {
            engine::arrow::compute::cast(c, &DataType::Utf8)
                .map_err(|e| InfluxqlError::EngineAnswer(format!("a tag column: {e}")))
        })
        .collect::<Result<_, _>>()?;
    // A dictionary column as text once, not cell by cell.
    let values: Vec<ArrayRef> = columns[1 + groups..]
        .iter()
        .map(|c| match c.data_type() {
            DataType::Dictionary(_, _) => engine::arrow::compute::cast(c, &DataType::Utf8)
                .map_err(|e| InfluxqlError::EngineAnswer(format!("a column: {e}"))),
            _ => Ok(c.clone()),
        })
        .collect::<Result<_, _>>()?;
    // Each column's type is looked at once per batch, not once per cell.
    let time = Cells::of(&columns[0])?;
    let tags: Vec<_> = tags.iter().map(|t| t.as_string::<i32>()).collect();
    let values: Vec<Cells<'_>> = values.iter().map(Cells::of).collect::<Result<_, _>>()?;
    out.reserve(batch.num_rows());
    for i in 0..batch.num_rows() {
        let time = match time.get(i) {
            Value::Integer(t) => Some(t),
            Value::Unsigned(t) => i64::try_from(t).ok(),
            _ => None,
        };
        let group = tags
            .iter()
            .map(|t| {
                if t.is_null(i) {
                    String::new()
                } else {
                    t.value(i).to_string()
                }
            })
            .collect();
        // One slot more: the answer row puts the time in front (`exec::to_series`).
        let mut row = Vec::with_capacity(values.len() + 1);
        row.extend(values.iter().map(|c| c.get(i)));
        out.push(Row {
            time,
            group,
            values: row,
        });
    }
    Ok(())
}

/// One answer column, its Arrow type resolved (the engine's, as `value` reads the JSON form).
pub(crate) enum Cells<'a> {
    Null,
    Float64(&'a dt_array::Float64Array),
    Float32(&'a dt_array::Float32Array),
    Int64(&'a dt_array::Int64Array),
    Int32(&'a dt_array::Int32Array),
    Int16(&'a dt_array::Int16Array),
    Int8(&'a dt_array::Int8Array),
    UInt64(&'a dt_array::UInt64Array),
    UInt32(&'a dt_array::UInt32Array),
    UInt16(&'a dt_array::UInt16Array),
    UInt8(&'a dt_array::UInt8Array),
    Boolean(&'a dt_array::BooleanArray),
    Utf8(&'a dt_array::StringArray),
    LargeUtf8(&'a dt_array::LargeStringArray),
    Binary(&'a dt_array::BinaryArray),
    LargeBinary(&'a dt_array::LargeBinaryArray),
}

impl<'a> Cells<'a> {
    pub(crate) fn of(col: &'a ArrayRef) -> Result<Cells<'a>, InfluxqlError> {
        Ok(match col.data_type() {
            DataType::Null => Cells::Null,
            DataType::Float64 => Cells::Float64(col.as_primitive::<dt::Float64Type>()),
            DataType::Float32 => Cells::Float32(col.as_primitive::<dt::Float32Type>()),
            DataType::Int64 => Cells::Int64(col.as_primitive::<dt::Int64Type>()),
            DataType::Int32 => Cells::Int32(col.as_primitive::<dt::Int32Type>()),
            DataType::Int16 => Cells::Int16(col.as_primitive::<dt::Int16Type>()),
            DataType::Int8 => Cells::Int8(col.as_primitive::<dt::Int8Type>()),
            DataType::UInt64 => Cells::UInt64(col.as_primitive::<dt::UInt64Type>()),
            DataType::UInt32 => Cells::UInt32(col.as_primitive::<dt::UInt32Type>()),
            DataType::UInt16 => Cells::UInt16(col.as_primitive::<dt::UInt16Type>()),
            DataType::UInt8 => Cells::UInt8(col.as_primitive::<dt::UInt8Type>()),
            DataType::Boolean => Cells::Boolean(col.as_boolean()),
            DataType::Utf8 => Cells::Utf8(col.as_string::<i32>()),
            DataType::LargeUtf8 => Cells::LargeUtf8(col.as_string::<i64>()),
            DataType::Binary => Cells::Binary(col.as_binary::<i32>()),
            DataType::LargeBinary => Cells::LargeBinary(col.as_binary::<i64>()),
            other => {
                return Err(InfluxqlError::EngineAnswer(format!(
                    "a column of Arrow type {other} in an answer"
                )))
            }
        })
    }

    /// Row `i`.
    pub(crate) fn get(&self, i: usize) -> Value {
        let float = |f: f64| {
            // InfluxDB has no NaN or infinities to show: null.
            if f.is_finite() {
                Value::Float(f)
            } else {
                Value::Null
            }
        };
        macro_rules! cell {
            ($a:expr, $v:expr) => {
                if $a.is_null(i) {
                    Value::Null
                } else {
                    $v($a.value(i))
                }
            };
        }
        match self {
            Cells::Null => Value::Null,
            Cells::Float64(a) => cell!(a, float),
            Cells::Float32(a) => cell!(a, |f: f32| float(f64::from(f))),
            Cells::Int64(a) => cell!(a, Value::Integer),
            Cells::Int32(a) => cell!(a, |v: i32| Value::Integer(v.into())),
            Cells::Int16(a) => cell!(a, |v: i16| Value::Integer(v.into())),
            Cells::Int8(a) => cell!(a, |v: i8| Value::Integer(v.into())),
            Cells::UInt64(a) => cell!(a, Value::Unsigned),
            Cells::UInt32(a) => cell!(a, |v: u32| Value::Unsigned(v.into())),
            Cells::UInt16(a) => cell!(a, |v: u16| Value::Unsigned(v.into())),
            Cells::UInt8(a) => cell!(a, |v: u8| Value::Unsigned(v.into())),
            Cells::Boolean(a) => cell!(a, Value::Boolean),
            Cells::Utf8(a) => cell!(a, |v: &str| Value::String(v.into())),
            Cells::LargeUtf8(a) => cell!(a, |v: &str| Value::String(v.into())),
            Cells::Binary(a) => cell!(a, |v: &[u8]| Value::String(
                String::from_utf8_lossy(v).into()
            )),
            Cells::LargeBinary(a) => cell!(a, |v: &[u8]| Value::String(
                String::from_utf8_lossy(v).into()
            )),
        }
    }
}

/// The engine type without `Nullable(...)` and `LowCardinality(...)`.
fn base_type(t: &str) -> &str {
    let mut t = t;
    for wrapper in ["Nullable(", "LowCardinality("] {
        if let Some(inner) = t.strip_prefix(wrapper).and_then(|r| r.strip_suffix(')')) {
            t = inner;
        }
    }
    if let Some(inner) = t
        .strip_prefix("Nullable(")
        .and_then(|r| r.strip_suffix(')'))
    {
        t = inner;
    }
    t
}

/// One cell, read as its declared type.
pub(crate) fn value(cell: &Json, engine_type: &str) -> Result<Value, InfluxqlError> {
    if cell.is_null() {
        return Ok(Value::Null);
    }
    if engine_type.starts_with("Array(") {
        // A group's points for a reducer (`reduce.rs` decodes them).
        return Ok(Value::String(cell.to_string().into()));
    }
    let t = base_type(engine_type);
    let text = match cell {
        Json::String(s) => Some(s.as_str()),
        _ => None,
    };
    let bad =
        || InfluxqlError::EngineAnswer(format!("{cell} is not a value of type {engine_type}"));
    Ok(match t {
        "Float64" | "Float32" => {
            let f = match (cell.as_f64(), text) {
                (Some(f), _) => f,
                (None, Some(s)) => s.parse::<f64>().map_err(|_| bad())?,
                _ => return Err(bad()),
            };
            // InfluxDB has no NaN or infinities to show: null.
            if f.is_finite() {
                Value::Float(f)
            } else {
                Value::Null
            }
        }
        "Bool" => match cell {
            Json::Bool(b) => Value::Boolean(*b),
            Json::Number(n) => Value::Boolean(n.as_u64() != Some(0)),
            _ => return Err(bad()),
        },
        "String" => Value::String(text.ok_or_else(bad)?.into()),
        t if t.starts_with("UInt") => {
            let n = match (cell.as_u64(), text) {
                (Some(n), _) => n,
                (None, Some(s)) => s.parse().map_err(|_| bad())?,
                _ => return Err(bad()),
            };
            Value::Unsigned(n)
        }
        t if t.starts_with("Int") => {
            let n: i128 = match (cell.as_i64(), text) {
                (Some(n), _) => n.into(),
                (None, Some(s)) => s.parse().map_err(|_| bad())?,
                _ => return Err(bad()),
            };
            i64::try_from(n).map_or(Value::Float(n as f64), Value::Integer)
        }
        _ => return Err(bad()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_by_declared_type() {
        let answer = br#"["__iq_t","__iq_g0","__iq_c0","__iq_c1","__iq_c2","__iq_c3"]
["Int64","LowCardinality(String)","Nullable(Float64)","Nullable(UInt64)","Nullable(Bool)","Nullable(String)"]
["1600000000000000000","a",1.5,"18446744073709551615",true,"x"]
["__iq_t","__iq_g0","__iq_c0","__iq_c1","__iq_c2","__iq_c3"]
["Int64","LowCardinality(String)","Nullable(Float64)","Nullable(UInt64)","Nullable(Bool)","Nullable(String)"]
[-5,"",null,null,null,"12"]
[7,"b","nan",1,false,""]
"#;
        let rows = parse(answer, 1).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].time, Some(1_600_000_000_000_000_000));
        assert_eq!(rows[0].group, ["a"]);
        assert_eq!(
            rows[0].values,
            [
                Value::Float(1.5),
                Value::Unsigned(u64::MAX),
                Value::Boolean(true),
                Value::String("x".into())
            ]
        );
        assert_eq!(rows[1].time, Some(-5));
        assert_eq!(rows[1].values[3], Value::String("12".into()));
        assert_eq!(rows[2].values[0], Value::Null);
        assert!(parse(b"[1]\n[\"Int64\"]\n[\"x\"]\n", 0).is_err());
    }

    #[test]
    fn an_arrow_answer_reads_as_the_same_rows_as_its_json_form() {
        use engine::arrow::array::{
            BinaryArray, BooleanArray, DictionaryArray, Float64Array, Int64Array, NullArray,
            StringArray, UInt64Array,
        };
        use engine::arrow::datatypes::Int8Type;
        use std::sync::Arc;
        let tags: DictionaryArray<Int8Type> =
            vec![Some("a"), None, Some("b")].into_iter().collect();
        let batch = RecordBatch::try_from_iter(vec![
            (
                "__iq_t",
                Arc::new(Int64Array::from(vec![1_600_000_000_000_000_000, -5, 7])) as ArrayRef,
            ),
            ("__iq_g0", Arc::new(tags) as ArrayRef),
            (
                "__iq_c0",
                Arc::new(Float64Array::from(vec![Some(1.5), None, Some(f64::NAN)])) as ArrayRef,
            ),
            (
                "__iq_c1",
                Arc::new(UInt64Array::from(vec![Some(u64::MAX), None, Some(1)])) as ArrayRef,
            ),
            (
                "__iq_c2",
                Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])) as ArrayRef,
            ),
            (
                "__iq_c3",
                Arc::new(BinaryArray::from(vec![
                    Some(&b"x"[..]),
                    Some(b"12"),
                    Some(b""),
                ])) as ArrayRef,
            ),
            ("__iq_c4", Arc::new(NullArray::new(3)) as ArrayRef),
            (
                "__iq_c5",
                Arc::new(StringArray::from(vec!["s", "t", "u"])) as ArrayRef,
            ),
        ])
        .unwrap();
        let mut ipc = Vec::new();
        {
            let mut w =
                engine::arrow::ipc::writer::StreamWriter::try_new(&mut ipc, &batch.schema())
                    .unwrap();
            w.write(&batch).unwrap();
            w.finish().unwrap();
        }
        // Two streams one after another, as the engine may answer.
        let twice = [ipc.clone(), ipc].concat();
        let rows = parse_arrow(&twice, 1).unwrap();
        assert_eq!(rows.len(), 6);
        let json = br#"["__iq_t","__iq_g0","__iq_c0","__iq_c1","__iq_c2","__iq_c3","__iq_c4","__iq_c5"]
["Int64","LowCardinality(Nullable(String))","Nullable(Float64)","Nullable(UInt64)","Nullable(Bool)","String","Nullable(Nothing)","String"]
["1600000000000000000","a",1.5,"18446744073709551615",true,"x",null,"s"]
[-5,null,null,null,null,"12",null,"t"]
[7,"b","nan",1,false,"",null,"u"]
"#;
        let want = parse(json, 1).unwrap();
        assert_eq!(rows[..3], want[..]);
        assert_eq!(rows[3..], want[..]);
    }
}
