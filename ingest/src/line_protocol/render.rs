//! Points back to line protocol: the inverse of the parser for every value it can produce
//! (round-trip tested).

use crate::point::FieldValue;

/// Appends `s` escaped for a measurement, tag key, tag value or field key.
pub fn escape_key(out: &mut Vec<u8>, s: &[u8]) {
    for &c in s {
        if matches!(c, b',' | b' ' | b'=') {
            out.push(b'\\');
        }
        out.push(c);
    }
}

/// Appends `s` escaped as InfluxDB escapes a measurement in a series key (`,` and space;
/// `=` stays as it is).
pub fn escape_measurement(out: &mut Vec<u8>, s: &[u8]) {
    for &c in s {
        if matches!(c, b',' | b' ') {
            out.push(b'\\');
        }
        out.push(c);
    }
}

/// Appends `s` as a double-quoted string field value.
pub fn escape_string_value(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &c in s {
        if matches!(c, b'"' | b'\\') {
            out.push(b'\\');
        }
        out.push(c);
    }
    out.push(b'"');
}

/// Renders one point as a line of line protocol (no newline); the inverse of the parser for
/// every value the parser can produce (round-trip tested).
pub fn render_point<K: AsRef<[u8]>, V: AsRef<[u8]>, F: AsRef<[u8]>>(
    out: &mut Vec<u8>,
    measurement: &[u8],
    tags: &[(K, V)],
    fields: &[(F, FieldValue<'_>)],
    time: Option<i64>,
) {
    escape_key(out, measurement);
    for (k, v) in tags {
        out.push(b',');
        escape_key(out, k.as_ref());
        out.push(b'=');
        escape_key(out, v.as_ref());
    }
    out.push(b' ');
    for (n, (k, v)) in fields.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        escape_key(out, k.as_ref());
        out.push(b'=');
        match v {
            FieldValue::Float(f) => {
                // `{:?}` keeps full precision and always shows a `.` or exponent.
                out.extend_from_slice(format!("{f:?}").as_bytes());
            }
            FieldValue::Integer(i) => out.extend_from_slice(format!("{i}i").as_bytes()),
            FieldValue::UInteger(u) => out.extend_from_slice(format!("{u}u").as_bytes()),
            FieldValue::String(s) => escape_string_value(out, s),
            FieldValue::Boolean(v) => out.extend_from_slice(if *v { b"true" } else { b"false" }),
        }
    }
    if let Some(t) = time {
        out.push(b' ');
        out.extend_from_slice(t.to_string().as_bytes());
    }
}
