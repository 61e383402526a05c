//! Points of a query's JSON answer as InfluxDB line protocol (ingest's renderer, the inverse
//! of its parser), for backups any 1.x-compatible server (chingest or InfluxDB) can take
//! back through `/write`.

use std::borrow::Cow;

use ingest::FieldValue;

/// A field's type, as `SHOW FIELD KEYS` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// `float`.
    Float,
    /// `integer`.
    Integer,
    /// `unsigned`.
    Unsigned,
    /// `string`.
    String,
    /// `boolean`.
    Boolean,
}

impl FieldType {
    /// From `SHOW FIELD KEYS`' `fieldType`.
    pub fn parse(s: &str) -> Option<FieldType> {
        Some(match s {
            "float" => FieldType::Float,
            "integer" => FieldType::Integer,
            "unsigned" => FieldType::Unsigned,
            "string" => FieldType::String,
            "boolean" => FieldType::Boolean,
            _ => return None,
        })
    }
}

/// Why a point cannot be written as line protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unwritable {
    /// A name holds a newline (line protocol has no escape for it).
    Newline,
    /// No field has a value.
    NoFields,
    /// A value does not fit its field's type.
    Value(String),
}

fn has_newline(s: &str) -> bool {
    s.contains('\n') || s.contains('\r')
}

/// Appends one point as a line (with its newline).
pub fn line(
    out: &mut Vec<u8>,
    measurement: &str,
    tags: &[(&str, &str)],
    fields: &[(&str, FieldType, &serde_json::Value)],
    time_ns: i64,
) -> Result<(), Unwritable> {
    if has_newline(measurement) || tags.iter().any(|(k, v)| has_newline(k) || has_newline(v)) {
        return Err(Unwritable::Newline);
    }
    let mut values = Vec::with_capacity(fields.len());
    for (k, ty, v) in fields {
        if v.is_null() {
            continue;
        }
        if has_newline(k) {
            return Err(Unwritable::Newline);
        }
        values.push((*k, value(*ty, v)?));
    }
    if values.is_empty() {
        return Err(Unwritable::NoFields);
    }
    ingest::line_protocol::render_point(out, measurement.as_bytes(), tags, &values, Some(time_ns));
    out.push(b'\n');
    Ok(())
}

fn value(ty: FieldType, v: &serde_json::Value) -> Result<FieldValue<'_>, Unwritable> {
    let bad = || Unwritable::Value(format!("{v} is not a {ty:?}"));
    Ok(match ty {
        FieldType::Float => {
            let f = v.as_f64().filter(|f| f.is_finite()).ok_or_else(bad)?;
            FieldValue::Float(f)
        }
        FieldType::Integer => FieldValue::Integer(v.as_i64().ok_or_else(bad)?),
        FieldType::Unsigned => FieldValue::UInteger(v.as_u64().ok_or_else(bad)?),
        FieldType::Boolean => FieldValue::Boolean(v.as_bool().ok_or_else(bad)?),
        FieldType::String => {
            FieldValue::String(Cow::Borrowed(v.as_str().ok_or_else(bad)?.as_bytes()))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_read_back_through_ingest() {
        let (f, i, u, s, b) = (
            json!(0.1),
            json!(-9_007_199_254_740_993i64),
            json!(u64::MAX),
            json!("a \"quoted\" \\ back,slash=x"),
            json!(true),
        );
        let mut out = Vec::new();
        line(
            &mut out,
            "c p,u",
            &[("ho st", "a,b=c"), ("k", "v")],
            &[
                ("f", FieldType::Float, &f),
                ("i", FieldType::Integer, &i),
                ("u", FieldType::Unsigned, &u),
                ("s,x", FieldType::String, &s),
                ("b", FieldType::Boolean, &b),
                ("gone", FieldType::Float, &serde_json::Value::Null),
            ],
            -5,
        )
        .unwrap();
        let batch = ingest::line_protocol::parse_lines(&out, ingest::Precision::Nanoseconds, 0);
        assert!(batch.errors.is_empty(), "{:?}", batch.errors);
        let p = &batch.points()[0];
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        assert_eq!(text(batch.measurement(p)), "c p,u");
        let tags: Vec<(String, String)> = batch.tags()[p.tags.start as usize..p.tags.end as usize]
            .iter()
            .map(|(k, v)| (text(batch.bytes(*k)), text(batch.bytes(*v))))
            .collect();
        assert_eq!(
            tags,
            vec![("ho st".into(), "a,b=c".into()), ("k".into(), "v".into())]
        );
        let fields: Vec<(String, String)> = batch.fields()
            [p.fields.start as usize..p.fields.end as usize]
            .iter()
            .map(|(k, v)| (text(batch.bytes(*k)), format!("{:?}", batch.value(*v))))
            .collect();
        let want = |pairs: &[(&str, String)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect()
        };
        assert_eq!(
            fields,
            want(&[
                ("f", format!("{:?}", FieldValue::Float(0.1))),
                (
                    "i",
                    format!("{:?}", FieldValue::Integer(-9_007_199_254_740_993))
                ),
                ("u", format!("{:?}", FieldValue::UInteger(u64::MAX))),
                (
                    "s,x",
                    format!(
                        "{:?}",
                        FieldValue::String(Cow::Borrowed(b"a \"quoted\" \\ back,slash=x"))
                    )
                ),
                ("b", format!("{:?}", FieldValue::Boolean(true))),
            ])
        );
        assert_eq!(p.time, -5);
        let mut sink = Vec::new();
        assert_eq!(
            line(
                &mut sink,
                "m",
                &[("k", "a\nb")],
                &[("f", FieldType::Float, &f)],
                0
            ),
            Err(Unwritable::Newline)
        );
        assert_eq!(
            line(
                &mut sink,
                "m",
                &[],
                &[("f", FieldType::Float, &serde_json::Value::Null)],
                0
            ),
            Err(Unwritable::NoFields)
        );
        assert!(sink.is_empty());
    }
}
