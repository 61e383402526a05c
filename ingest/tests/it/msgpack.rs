//! msgpack row and columnar formats.

use arrow::array::{Array, Float64Array, Int64Array, StringArray, UInt64Array};
use ingest::msgpack::{parse_columnar, parse_rows};
use ingest::{FieldValue, Format, Ingestor, Precision};
use rmp::encode as e;

use crate::util::{catalog, NOW};

fn s(b: &mut Vec<u8>, v: &str) {
    e::write_str(b, v).unwrap();
}

fn row_body() -> Vec<u8> {
    let mut b = Vec::new();
    e::write_array_len(&mut b, 3).unwrap();
    // point 0: plain scalars
    e::write_map_len(&mut b, 4).unwrap();
    s(&mut b, "measurement");
    s(&mut b, "cpu");
    s(&mut b, "tags");
    e::write_map_len(&mut b, 1).unwrap();
    s(&mut b, "host");
    s(&mut b, "a");
    s(&mut b, "fields");
    e::write_map_len(&mut b, 4).unwrap();
    s(&mut b, "f");
    e::write_f64(&mut b, 1.5).unwrap();
    s(&mut b, "i");
    e::write_sint(&mut b, -3).unwrap();
    s(&mut b, "s");
    s(&mut b, "x");
    s(&mut b, "b");
    e::write_bool(&mut b, true).unwrap();
    s(&mut b, "timestamp");
    e::write_uint(&mut b, 10).unwrap();
    // point 1: tagged values (HyperbyteDB form)
    e::write_map_len(&mut b, 3).unwrap();
    s(&mut b, "measurement");
    s(&mut b, "cpu");
    s(&mut b, "fields");
    e::write_map_len(&mut b, 2).unwrap();
    s(&mut b, "u");
    e::write_map_len(&mut b, 1).unwrap();
    s(&mut b, "UInteger");
    e::write_uint(&mut b, 7).unwrap();
    s(&mut b, "f");
    e::write_map_len(&mut b, 1).unwrap();
    s(&mut b, "Float");
    e::write_sint(&mut b, 2).unwrap();
    s(&mut b, "time");
    e::write_uint(&mut b, 20).unwrap();
    // point 2: no fields -> per-point error
    e::write_map_len(&mut b, 2).unwrap();
    s(&mut b, "measurement");
    s(&mut b, "cpu");
    s(&mut b, "fields");
    e::write_map_len(&mut b, 0).unwrap();
    b
}

#[test]
fn rows() {
    let body = row_body();
    let p = parse_rows(&body, Precision::Nanoseconds, NOW).unwrap();
    assert_eq!(p.points().len(), 2);
    assert_eq!(p.errors.len(), 1);
    assert_eq!(
        p.errors[0].to_string(),
        "unable to parse 'msgpack point #2': missing fields"
    );
    assert_eq!(p.points()[0].time, 10);
    assert_eq!(p.points()[1].time, 20);
    assert_eq!(
        p.points()[0].series_id,
        ingest::series::series_id(b"cpu", &[("host", "a")])
    );
    let f0: Vec<_> = p
        .fields_of(&p.points()[0])
        .map(|(k, v)| (k.to_vec(), v.clone()))
        .collect();
    assert_eq!(f0[0], (b"f".to_vec(), FieldValue::Float(1.5)));
    assert_eq!(f0[1], (b"i".to_vec(), FieldValue::Integer(-3)));
    let f1: Vec<_> = p.fields_of(&p.points()[1]).collect();
    assert_eq!(f1[0].1, FieldValue::UInteger(7));
    assert_eq!(f1[1].1, FieldValue::Float(2.0));

    let w = Ingestor::write(
        &catalog(),
        "db",
        &body,
        Format::MsgpackRows,
        Precision::Nanoseconds,
        NOW,
    )
    .unwrap();
    assert_eq!(w.points, 2);
    let t = &w.tables[0].batch;
    let u = t.column_by_name("u").unwrap();
    assert_eq!(
        u.as_any().downcast_ref::<UInt64Array>().unwrap().value(1),
        7
    );
}

#[test]
fn columnar() {
    let mut b = Vec::new();
    e::write_map_len(&mut b, 5).unwrap();
    s(&mut b, "measurement");
    s(&mut b, "disk");
    s(&mut b, "tags");
    e::write_map_len(&mut b, 2).unwrap();
    s(&mut b, "host");
    s(&mut b, "h1");
    s(&mut b, "dev");
    e::write_array_len(&mut b, 3).unwrap();
    for d in ["sda", "sdb", "sdc"] {
        s(&mut b, d);
    }
    s(&mut b, "timestamps");
    e::write_array_len(&mut b, 3).unwrap();
    for t in [1u64, 2, 3] {
        e::write_uint(&mut b, t).unwrap();
    }
    s(&mut b, "field");
    s(&mut b, "used");
    s(&mut b, "values");
    e::write_array_len(&mut b, 3).unwrap();
    e::write_f64(&mut b, 0.5).unwrap();
    e::write_nil(&mut b).unwrap();
    e::write_f64(&mut b, 0.7).unwrap();
    let p = parse_columnar(&b, Precision::Seconds, NOW).unwrap();
    assert_eq!(p.points().len(), 2);
    assert_eq!(p.errors.len(), 1);
    assert_eq!(
        p.errors[0].to_string(),
        "unable to parse 'msgpack block #0 row 1 of measurement \"disk\"': missing fields"
    );
    assert_eq!(p.points()[1].time, 3_000_000_000);

    // Superset: several columns under "fields".
    let mut b = Vec::new();
    e::write_map_len(&mut b, 2).unwrap();
    s(&mut b, "measurement");
    s(&mut b, "net");
    s(&mut b, "fields");
    e::write_map_len(&mut b, 2).unwrap();
    s(&mut b, "rx");
    e::write_array_len(&mut b, 2).unwrap();
    e::write_uint(&mut b, 1).unwrap();
    e::write_uint(&mut b, 2).unwrap();
    s(&mut b, "name");
    e::write_array_len(&mut b, 2).unwrap();
    s(&mut b, "eth0");
    s(&mut b, "eth1");
    let w = Ingestor::write(
        &catalog(),
        "db",
        &b,
        Format::MsgpackColumnar,
        Precision::Nanoseconds,
        NOW,
    )
    .unwrap();
    assert_eq!(w.points, 2);
    let t = &w.tables[0].batch;
    let rx = t.column_by_name("rx").unwrap();
    assert_eq!(
        rx.as_any().downcast_ref::<Int64Array>().unwrap().values(),
        &[1, 2]
    );
    let name = t.column_by_name("name").unwrap();
    assert_eq!(
        name.as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .value(1),
        "eth1"
    );
    let time = t.column_by_name("time").unwrap();
    assert_eq!(
        time.as_any().downcast_ref::<Int64Array>().unwrap().value(0),
        NOW
    );
    let _ = Float64Array::from(vec![0.0]);
}

#[test]
fn malformed_bodies() {
    // Truncated: error with an offset, never a panic.
    let body = row_body();
    for n in 1..body.len() {
        assert!(
            parse_rows(&body[..n], Precision::Nanoseconds, NOW).is_err(),
            "prefix {n}"
        );
    }
    // An array claiming 4 billion elements.
    let e1 = parse_rows(b"\xdd\xff\xff\xff\xff\x80", Precision::Nanoseconds, NOW).unwrap_err();
    assert!(e1.reason.contains("exceeds the remaining input"), "{e1}");
    // Deep nesting inside an ignored key.
    let mut deep = vec![0x81, 0xa1, b'x'];
    deep.extend(std::iter::repeat_n(0x91u8, 100));
    deep.push(0xc0);
    let mut body = vec![0x91];
    body.extend(deep);
    let e2 = parse_rows(&body, Precision::Nanoseconds, NOW).unwrap_err();
    assert!(e2.reason.contains("nesting"), "{e2}");
    // Not an array or map.
    assert_eq!(
        parse_rows(b"\x05", Precision::Nanoseconds, NOW)
            .unwrap_err()
            .offset,
        0
    );
    // Columnar with mismatched lengths.
    let mut b = Vec::new();
    e::write_map_len(&mut b, 4).unwrap();
    s(&mut b, "measurement");
    s(&mut b, "m");
    s(&mut b, "timestamps");
    e::write_array_len(&mut b, 1).unwrap();
    e::write_uint(&mut b, 1).unwrap();
    s(&mut b, "field");
    s(&mut b, "v");
    s(&mut b, "values");
    e::write_array_len(&mut b, 2).unwrap();
    e::write_uint(&mut b, 1).unwrap();
    e::write_uint(&mut b, 2).unwrap();
    let e3 = parse_columnar(&b, Precision::Nanoseconds, NOW).unwrap_err();
    assert!(e3.reason.contains("different lengths"), "{e3}");
}

#[test]
fn per_point_rules() {
    let mut b = Vec::new();
    e::write_array_len(&mut b, 2).unwrap();
    e::write_map_len(&mut b, 2).unwrap();
    s(&mut b, "measurement");
    s(&mut b, "m");
    s(&mut b, "fields");
    e::write_map_len(&mut b, 1).unwrap();
    s(&mut b, "v");
    e::write_f64(&mut b, f64::NAN).unwrap();
    e::write_map_len(&mut b, 3).unwrap();
    s(&mut b, "measurement");
    s(&mut b, "m");
    s(&mut b, "tags");
    e::write_map_len(&mut b, 1).unwrap();
    s(&mut b, "time");
    s(&mut b, "x");
    s(&mut b, "fields");
    e::write_map_len(&mut b, 1).unwrap();
    s(&mut b, "v");
    e::write_f64(&mut b, 1.0).unwrap();
    let p = parse_rows(&b, Precision::Nanoseconds, NOW).unwrap();
    assert_eq!(p.points().len(), 0);
    assert_eq!(
        p.errors[0].reason,
        "NaN is an unsupported value for field v"
    );
    assert!(p.errors[1]
        .reason
        .starts_with("invalid tag key: input tag \"time\""));
}
