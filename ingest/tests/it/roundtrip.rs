//! Property: any point rendered to line protocol parses back identical.

use std::collections::BTreeMap;

use ingest::line_protocol::{parse_lines, render_point};
use ingest::{FieldValue, Precision, RESERVED_COLUMNS};
use proptest::prelude::*;

/// Bytes chosen to be hostile to the grammar.
fn hostile_bytes() -> impl Strategy<Value = Vec<u8>> {
    let alphabet: Vec<u8> = b"ab ,=\\\"#\t\x00\xff\xc3\xa9zZ9.-".to_vec();
    prop::collection::vec(prop::sample::select(alphabet), 1..8)
}

/// A name InfluxDB can represent: no newline, no trailing backslash (it would escape the
/// delimiter after it), no leading whitespace/NUL that the parser skips.
fn name() -> impl Strategy<Value = Vec<u8>> {
    hostile_bytes().prop_filter("representable", |v| {
        !v.ends_with(b"\\") && !matches!(v[0], b'\t' | 0)
    })
}

fn value() -> impl Strategy<Value = FieldValue<'static>> {
    prop_oneof![
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(FieldValue::Float),
        any::<i64>().prop_map(FieldValue::Integer),
        any::<u64>().prop_map(FieldValue::UInteger),
        any::<bool>().prop_map(FieldValue::Boolean),
        prop::collection::vec(any::<u8>(), 0..16).prop_map(|v| FieldValue::String(v.into())),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn render_parse_round_trip(
        measurement in name().prop_filter("not a comment", |m| m[0] != b'#'),
        tags in prop::collection::btree_map(name(), name(), 0..4),
        fields in prop::collection::btree_map(name(), value(), 1..5),
        time in prop::option::of(ingest::precision::MIN_NANO_TIME..=ingest::precision::MAX_NANO_TIME),
    ) {
        let reserved = |k: &[u8]| RESERVED_COLUMNS.iter().any(|r| r.as_bytes() == k);
        prop_assume!(!tags.keys().any(|k| reserved(k)));
        prop_assume!(!fields.keys().any(|k| reserved(k) || tags.contains_key(k)));
        let tags: Vec<(Vec<u8>, Vec<u8>)> = tags.into_iter().collect();
        let fields: Vec<(Vec<u8>, FieldValue<'static>)> = fields.into_iter().collect();
        let mut line = Vec::new();
        render_point(&mut line, &measurement, &tags, &fields, time);
        let b = parse_lines(&line, Precision::Nanoseconds, 42);
        prop_assert!(b.errors.is_empty(), "{:?} -> {:?}", String::from_utf8_lossy(&line), b.errors);
        prop_assert_eq!(b.points().len(), 1);
        let p = &b.points()[0];
        prop_assert_eq!(b.measurement(p), &measurement[..]);
        let got_tags: Vec<(Vec<u8>, Vec<u8>)> = b.tags_of(p).map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        prop_assert_eq!(got_tags, tags.clone());
        let got_fields: BTreeMap<Vec<u8>, FieldValue<'_>> = b.fields_of(p).map(|(k, v)| (k.to_vec(), v.clone())).collect();
        let want: BTreeMap<Vec<u8>, FieldValue<'_>> = fields.into_iter().collect();
        prop_assert_eq!(got_fields, want);
        prop_assert_eq!(p.time, time.unwrap_or(42));
        prop_assert_eq!(p.series_id, ingest::series::series_id(&measurement, &tags));
    }
}
