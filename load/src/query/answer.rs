//! Comparing two InfluxDB-shaped `/query` answers: the same series (name, tags,
//! columns) with the same values, in any series order. Numbers compare exactly
//! when both are integers (times with `epoch=`), otherwise to a relative 1e-9:
//! two engines may sum a mean's terms in a different order.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an answer holds, counted once it is known to agree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    /// Series over all statements.
    pub series: u64,
    /// Rows (one per time bucket) over all series.
    pub rows: u64,
    /// Non-null values over all rows, the time column excluded.
    pub values: u64,
}

/// One series: its identity (name, tags, columns) and rows.
struct Series<'a> {
    key: String,
    rows: &'a [Value],
}

/// The series of every statement, sorted by key; an error answer is refused.
fn series_of(answer: &Value) -> Result<Vec<Series<'_>>, String> {
    if let Some(e) = answer.get("error") {
        return Err(format!("error answer: {e}"));
    }
    let results = answer
        .get("results")
        .and_then(Value::as_array)
        .ok_or("no `results` array")?;
    let mut out = Vec::new();
    for (i, r) in results.iter().enumerate() {
        if let Some(e) = r.get("error") {
            return Err(format!("statement {i}: error {e}"));
        }
        for s in r
            .get("series")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = format!(
                "{i}/{}/{}/{}",
                s.get("name").unwrap_or(&Value::Null),
                // serde_json's maps are sorted, so equal tag sets print equal.
                s.get("tags").unwrap_or(&Value::Null),
                s.get("columns").unwrap_or(&Value::Null)
            );
            let rows = s
                .get("values")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            out.push(Series { key, rows });
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

fn numbers_equal(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return x == y;
    }
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => {
            let d = (x - y).abs();
            d <= 1e-12 || d <= 1e-9 * x.abs().max(y.abs())
        }
        _ => false,
    }
}

fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => numbers_equal(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| values_equal(p, q))
        }
        _ => a == b,
    }
}

/// Counts series, rows and non-null values of agreeing series.
fn shape(series: &[Series<'_>]) -> Shape {
    let mut s = Shape {
        series: series.len() as u64,
        ..Shape::default()
    };
    for x in series {
        s.rows += x.rows.len() as u64;
        for row in x.rows {
            let cells = row.as_array().map(Vec::as_slice).unwrap_or(&[]);
            s.values += cells.iter().skip(1).filter(|v| !v.is_null()).count() as u64;
        }
    }
    s
}

/// Parses an answer body, refusing anything but a JSON document.
pub fn parse(body: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(body).map_err(|e| format!("not one JSON document: {e}"))
}

/// `Ok(shape)` when `want` and `got` hold the same series and values, else
/// the first difference found.
pub fn compare(want: &Value, got: &Value) -> Result<Shape, String> {
    let (a, b) = (series_of(want)?, series_of(got)?);
    if a.len() != b.len() {
        return Err(format!("{} series vs {}", a.len(), b.len()));
    }
    for (x, y) in a.iter().zip(&b) {
        if x.key != y.key {
            return Err(format!("series {} vs {}", x.key, y.key));
        }
        if x.rows.len() != y.rows.len() {
            return Err(format!(
                "series {}: {} rows vs {}",
                x.key,
                x.rows.len(),
                y.rows.len()
            ));
        }
        if let Some((i, (p, q))) = x
            .rows
            .iter()
            .zip(y.rows)
            .enumerate()
            .find(|(_, (p, q))| !values_equal(p, q))
        {
            return Err(format!("series {} row {i}: {p} vs {q}", x.key));
        }
    }
    Ok(shape(&a))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn answer(series: Value) -> Value {
        json!({"results": [{"statement_id": 0, "series": series}]})
    }

    fn s(host: &str, v: Value) -> Value {
        json!({"name": "cpu", "tags": {"host": host}, "columns": ["time", "mean"], "values": v})
    }

    #[test]
    fn same_series_in_any_order_agree_within_float_noise() {
        let a = answer(json!([
            s("a", json!([[0, 1.5], [10, null]])),
            s("b", json!([[0, 2]]))
        ]));
        let b = answer(json!([
            s("b", json!([[0, 2]])),
            s("a", json!([[0, 1.5000000000001], [10, null]]))
        ]));
        assert_eq!(
            compare(&a, &b),
            Ok(Shape {
                series: 2,
                rows: 3,
                values: 2
            })
        );
    }

    #[test]
    fn differences_are_named() {
        let a = answer(json!([s("a", json!([[0, 1.5]]))]));
        for (b, says) in [
            (answer(json!([s("a", json!([[0, 1.6]]))])), "row 0"),
            (answer(json!([s("a", json!([[1, 1.5]]))])), "row 0"),
            (answer(json!([s("a", json!([[0, null]]))])), "row 0"),
            (answer(json!([s("x", json!([[0, 1.5]]))])), "series"),
            (answer(json!([s("a", json!([]))])), "rows"),
            (answer(json!([])), "series vs"),
            (
                json!({"results": [{"statement_id": 0, "error": "boom"}]}),
                "error",
            ),
        ] {
            let e = compare(&a, &b).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
        // Times are integers with epoch=: no tolerance there.
        let t = answer(json!([s("a", json!([[1_767_225_600_000i64, 1.5]]))]));
        let u = answer(json!([s("a", json!([[1_767_225_600_001i64, 1.5]]))]));
        assert!(compare(&t, &u).is_err());
    }
}
