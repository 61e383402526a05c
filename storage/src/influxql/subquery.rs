//! Subqueries (`SELECT max(m) FROM (SELECT mean(x) AS m ... GROUP BY time(1m))`):
//! the inner statement is answered first (all of it: fill, transformations),
//! then its series become a table the outer statement is planned against like
//! a measurement: the inner series' tags are tags, its columns fields, each
//! row a point. The table is the engine's `values()` table function, literals
//! quoted like every other value; the engine's statement size limit bounds it.

use flush::{quote_ident, quote_string};
use ingest::{FieldType, MeasurementSchema};

use super::series::{StatementResult, Value};

/// One measurement of a subquery's answer, as a table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Materialized {
    /// Its fields (the inner columns) and tags (the inner `GROUP BY` tags).
    pub(crate) schema: MeasurementSchema,
    /// The `values(...)` table function holding its rows, in the layout of a
    /// measurement table (`time`, `series_id`, `__seq`, `__row`, tags, fields).
    pub(crate) table: String,
}

/// The inner answer as tables, one per measurement name, sorted by name.
pub(crate) fn materialize(inner: &StatementResult) -> Vec<Materialized> {
    let mut names: Vec<&str> = inner.series.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names.into_iter().map(|n| table(inner, n)).collect()
}

fn table(inner: &StatementResult, name: &str) -> Materialized {
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
    let mut structure =
        String::from("time DateTime64(9, 'UTC'), series_id UInt64, __seq UInt64, __row UInt32");
    for t in &tags {
        structure.push_str(&format!(", {} String", quote_ident(t)));
    }
    for (f, t) in &fields {
        structure.push_str(&format!(", {} Nullable({})", quote_ident(f), sql_type(*t)));
    }
    let mut rows = Vec::new();
    let mut row_no = 0u64;
    for s in &series {
        for r in &s.values {
            let Some(Value::Time(t)) = r.first() else {
                continue;
            };
            // Each row a series of its own: rows of one time are not merged
            // (they are distinct answers), and keep their order.
            let mut cells = vec![
                format!("fromUnixTimestamp64Nano(toInt64({t}))"),
                row_no.to_string(),
                "0".to_string(),
                row_no.to_string(),
            ];
            row_no += 1;
            for k in &tags {
                let v = s.tags.iter().find(|(x, _)| x == k).map_or("", |(_, v)| v);
                cells.push(quote_string(v));
            }
            for (f, _) in &fields {
                let v = s
                    .columns
                    .iter()
                    .position(|c| c == f)
                    .and_then(|i| r.get(i))
                    .unwrap_or(&Value::Null);
                cells.push(literal(v));
            }
            rows.push(format!("({})", cells.join(", ")));
        }
    }
    let table = if rows.is_empty() {
        // No rows: an empty table of the same layout.
        format!(
            "(SELECT * FROM values({}, (fromUnixTimestamp64Nano(toInt64(0)), 0, 0, 0{})) WHERE 0)",
            quote_string(&structure),
            ", ''".repeat(tags.len()) + &", NULL".repeat(fields.len())
        )
    } else {
        format!("values({}, {})", quote_string(&structure), rows.join(", "))
    };
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    Materialized {
        schema: MeasurementSchema {
            name: name.to_string(),
            tag_keys: tags,
            fields,
        },
        table,
    }
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

fn sql_type(t: FieldType) -> &'static str {
    match t {
        FieldType::Float => "Float64",
        FieldType::Integer => "Int64",
        FieldType::UInteger => "UInt64",
        FieldType::String => "String",
        FieldType::Boolean => "Bool",
    }
}

fn literal(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Float(f) if f.is_finite() => format!("{f:?}"),
        Value::Float(_) => "NULL".into(),
        Value::Integer(i) | Value::Time(i) => i.to_string(),
        Value::Unsigned(u) => u.to_string(),
        Value::String(s) => quote_string(s),
        Value::Boolean(b) => b.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::influxql::series::Series;

    #[test]
    fn inner_series_become_one_quoted_table() {
        let inner = StatementResult {
            series: vec![Series {
                name: "cpu".into(),
                tags: vec![("host".into(), "a'b".into())],
                columns: vec!["time".into(), "m".into()],
                values: vec![
                    vec![Value::Time(5), Value::Float(1.5)],
                    vec![Value::Time(6), Value::Null],
                ],
            }],
            messages: vec![],
        };
        let m = materialize(&inner);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].schema.tag_keys, ["host"]);
        assert_eq!(m[0].schema.fields, [("m".to_string(), FieldType::Float)]);
        assert_eq!(
            m[0].table,
            "values('time DateTime64(9, \\'UTC\\'), series_id UInt64, __seq UInt64, __row UInt32, `host` String, `m` Nullable(Float64)', \
             (fromUnixTimestamp64Nano(toInt64(5)), 0, 0, 0, 'a\\'b', 1.5), \
             (fromUnixTimestamp64Nano(toInt64(6)), 1, 0, 1, 'a\\'b', NULL))"
        );
    }
}
