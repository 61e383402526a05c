//! The engine's answer to a planned statement, read back: the output format is
//! `JSONCompactEachRowWithNamesAndTypes`, so every value is read by the type
//! the engine declares (64-bit integers arrive quoted, NaN and infinities as
//! strings or null, NULL as null), never guessed from its JSON form.

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
        return Ok(Value::String(cell.to_string()));
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
        "String" => Value::String(text.ok_or_else(bad)?.to_string()),
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
}
