//! Refused at the door what storage cannot hold (issue #15): names the engine reserves or
//! cannot hold, names that are not UTF-8, columns past the limits, one field of two types.
//! A table per rule: each case is one request of a bad line between two good ones; the good
//! lines are written, the bad one is dropped with HTTP 400 and InfluxDB's partial-write text.

use ingest::names::{column_cost, ENGINE_RESERVED_COLUMNS, MAX_COLUMN_BYTES};
use ingest::{Catalog, DropKind, Format, Ingestor, Limits, Precision, PreparedWrite, WriteOutcome};

use crate::util::{catalog, write, NOW};

fn write_bytes(cat: &Catalog, db: &str, body: &[u8]) -> PreparedWrite {
    Ingestor::write(
        cat,
        db,
        body,
        Format::LineProtocol,
        Precision::Nanoseconds,
        NOW,
    )
    .expect("write")
}

/// `good\nbad\ngood2` as one request: the two good points written, the bad one dropped with
/// `reason` (the whole v1 text is `partial write: <reason> dropped=1`), 400.
fn refused(cat: &Catalog, db: &str, bad: &[u8], kind: DropKind, reason: &str) {
    let mut body = b"ok,h=a v=1 1\n".to_vec();
    body.extend_from_slice(bad);
    body.extend_from_slice(b"\nok,h=a v=2 2");
    let w = write_bytes(cat, db, &body);
    let label = String::from_utf8_lossy(bad);
    assert_eq!((w.points, w.dropped), (2, 1), "{label}: {w:?}");
    assert_eq!(w.dropped_reasons.len(), 1, "{label}");
    assert_eq!(w.dropped_reasons[0].kind, kind, "{label}");
    assert_eq!(
        w.error_message().unwrap(),
        format!("partial write: {reason} dropped=1"),
        "{label}"
    );
    assert_eq!(w.outcome(), WriteOutcome::Partial, "{label}");
    assert_eq!(w.outcome().http_status(), 400, "{label}");
    let names: Vec<_> = w.tables.iter().map(|t| t.measurement.as_str()).collect();
    assert_eq!(
        names,
        ["ok"],
        "{label}: only the good measurement has a batch"
    );
    assert_eq!(w.tables[0].batch.num_rows(), 2, "{label}");
}

#[test]
fn engine_reserved_names_are_refused_as_fields_and_tag_keys() {
    let cat = catalog();
    for name in ENGINE_RESERVED_COLUMNS {
        refused(
            &cat,
            "db",
            format!("m {name}=1").as_bytes(),
            DropKind::InvalidName,
            &format!(
                "invalid field name: input field \"{name}\" on measurement \"m\" is invalid (reserved by the storage engine)"
            ),
        );
        refused(
            &cat,
            "db",
            format!("m,{name}=a v=1").as_bytes(),
            DropKind::InvalidName,
            &format!(
                "invalid tag key: input tag \"{name}\" on measurement \"m\" is invalid (reserved by the storage engine)"
            ),
        );
    }
    // Nothing of them reached the catalog.
    let schema = cat.schema("db");
    let m: Vec<_> = schema.iter().filter(|m| m.name == "m").collect();
    assert!(m.is_empty(), "{schema:?}");
    // Other `_` names are ordinary columns (the engine holds them).
    for name in ["_part", "_table", "_time", "_", "__x"] {
        let w = write(&cat, &format!("n,{name}t=a {name}=1"));
        assert_eq!((w.points, w.dropped), (1, 0), "{name}");
    }
}

#[test]
fn chingest_own_column_names_are_still_refused_at_parse() {
    let cat = catalog();
    for (line, reason) in [
        ("m __seq=1", "invalid field name: input field \"__seq\" on measurement \"m\" is invalid (reserved column name)"),
        ("m series_id=1", "invalid field name: input field \"series_id\" on measurement \"m\" is invalid (reserved column name)"),
        ("m,__row=a v=1", "invalid tag key: input tag \"__row\" on measurement \"m\" is invalid (reserved column name)"),
    ] {
        let w = write(&cat, &format!("ok v=1 1\n{line}"));
        assert_eq!(w.points, 1, "{line}");
        assert_eq!(
            w.error_message().unwrap(),
            format!("partial write: unable to parse '{line}': {reason} dropped=0"),
            "{line}"
        );
    }
}

#[test]
fn names_that_are_not_utf8_are_refused() {
    let cat = catalog();
    let cases: &[(&[u8], DropKind, &str)] = &[
        (b"m f\xff=1", DropKind::InvalidName, "invalid field name: input field \"f\u{fffd}\" on measurement \"m\" is invalid (not UTF-8)"),
        (b"m\xff v=1", DropKind::InvalidName, "key contains invalid unicode: \"m\u{fffd}\""),
        (b"m,t\xfe=a v=1", DropKind::InvalidName, "key contains invalid unicode: \"m,t\u{fffd}=a\""),
        (b"m,t=a\xfe v=1", DropKind::InvalidName, "key contains invalid unicode: \"m,t=a\u{fffd}\""),
    ];
    for (bad, kind, reason) in cases {
        refused(&cat, "db", bad, *kind, reason);
    }
}

#[test]
fn names_with_control_characters_are_refused_when_new() {
    // Issue #41: the engine refuses a NUL in a table or column name when the flush creates
    // it, long after the write was acknowledged; every control character is refused at the
    // door instead, escaped in the text so it stays one readable line.
    let cat = catalog();
    let control = "is invalid (contains a control character)";
    let cases: &[(&[u8], String)] = &[
        (
            b"m\0 v=1",
            format!("invalid measurement name: measurement \"m\\u{{0}}\" {control}"),
        ),
        (
            b"m\x7f v=1",
            format!("invalid measurement name: measurement \"m\\u{{7f}}\" {control}"),
        ),
        (
            b"m,k\0=a v=1",
            format!("invalid tag key: input tag \"k\\u{{0}}\" on measurement \"m\" {control}"),
        ),
        (
            b"m,k\x1f=a v=1",
            format!("invalid tag key: input tag \"k\\u{{1f}}\" on measurement \"m\" {control}"),
        ),
        (
            b"m f\0=1",
            format!("invalid field name: input field \"f\\u{{0}}\" on measurement \"m\" {control}"),
        ),
        (
            "m f\u{9f}=1".as_bytes(),
            format!(
                "invalid field name: input field \"f\\u{{9f}}\" on measurement \"m\" {control}"
            ),
        ),
    ];
    for (bad, reason) in cases {
        refused(&cat, "db", bad, DropKind::InvalidName, reason);
    }
    // Tag values hold anything; names without control characters (any other Unicode) pass.
    let w = write_bytes(
        &cat,
        "db",
        "m,k=a\0\x01b v=1\n\u{2028}é,\u{feff}=x \u{a0}=1".as_bytes(),
    );
    assert_eq!((w.points, w.dropped), (2, 0), "{w:?}");
    for m in cat.schema("db") {
        let names = std::iter::once(&m.name)
            .chain(&m.tag_keys)
            .chain(m.fields.iter().map(|(f, _)| f));
        for n in names {
            assert!(!n.chars().any(char::is_control), "{n:?} reached the schema");
        }
    }
}

#[test]
fn two_byte_names_that_read_the_same_can_never_share_a_column() {
    // The issue's case: `f\xff` (float) and `f\xfe` (string) in one measurement would both
    // be the column "f\u{fffd}" after lossy conversion.
    let cat = catalog();
    let w = write_bytes(&cat, "db", b"m f\xff=1\nm f\xfe=\"x\"\nm g=1");
    assert_eq!((w.points, w.dropped), (1, 2));
    assert_eq!(w.outcome().http_status(), 400);
    assert_eq!(cat.schema("db")[0].fields.len(), 1, "only g");
}

#[test]
fn one_field_of_two_types_in_a_line_is_a_type_conflict() {
    // InfluxDB 1.x creates the field from the first value and refuses the second:
    // `field type conflict` (tsdb/field_validator.go), the point dropped, 400.
    let cat = catalog();
    for (bad, reason) in [
        ("m f=1,f=\"x\"", "field type conflict: input field \"f\" on measurement \"m\" is type string, already exists as type float"),
        ("m f=1i,g=2,f=true", "field type conflict: input field \"f\" on measurement \"m\" is type boolean, already exists as type integer"),
    ] {
        refused(&cat, "db", bad.as_bytes(), DropKind::TypeConflict, reason);
    }
    // The same type twice: the last value wins, as before.
    let w = write(&cat, "n f=1,f=2");
    assert_eq!((w.points, w.dropped), (1, 0));
    // A field already known: the value of the other type conflicts with it.
    write(&cat, "k f=\"s\"");
    refused(
        &cat,
        "db",
        b"k f=1,f=\"x\"",
        DropKind::TypeConflict,
        "field type conflict: input field \"f\" on measurement \"k\" is type float, already exists as type string",
    );
}

#[test]
fn one_field_of_two_types_in_msgpack_is_a_type_conflict() {
    // {"measurement": "m", "fields": {"f": 1.5, "f": "x"}}
    let mut b = vec![0x82, 0xab];
    b.extend_from_slice(b"measurement");
    b.extend_from_slice(&[0xa1, b'm', 0xa6]);
    b.extend_from_slice(b"fields");
    b.extend_from_slice(&[0x82, 0xa1, b'f', 0xcb]);
    b.extend_from_slice(&1.5f64.to_be_bytes());
    b.extend_from_slice(&[0xa1, b'f', 0xa1, b'x']);
    let cat = catalog();
    let w = Ingestor::write(
        &cat,
        "db",
        &b,
        Format::MsgpackRows,
        Precision::Nanoseconds,
        NOW,
    )
    .map_err(|e| e.to_string())
    .unwrap();
    assert_eq!((w.points, w.dropped), (0, 1), "{w:?}");
    assert_eq!(
        w.error_message().unwrap(),
        "partial write: field type conflict: input field \"f\" on measurement \"m\" is type string, already exists as type float dropped=1"
    );
}

#[test]
fn measurement_names_past_the_engine_file_name_limit_are_refused() {
    // Database "db" (2 bytes as a file name) leaves 211.
    let cat = catalog();
    let ok = "m".repeat(211);
    assert_eq!(write(&cat, &format!("{ok} v=1")).points, 1);
    let long = "m".repeat(212);
    refused(
        &cat,
        "db",
        format!("{long} v=1").as_bytes(),
        DropKind::InvalidName,
        &format!(
            "invalid measurement name: measurement \"{}…\" is invalid (it takes 212 bytes as a table file name, where every byte but A-Z a-z 0-9 _ takes 3; database \"db\" leaves 211)",
            "m".repeat(64)
        ),
    );
    // Non-ASCII bytes take three each: 36 two-byte characters are 216 bytes.
    let w = write(&cat, &format!("{} v=1", "é".repeat(36)));
    assert_eq!((w.points, w.dropped), (0, 1));
    assert_eq!(w.dropped_reasons[0].kind, DropKind::InvalidName);
    assert_eq!(write(&cat, &format!("{} v=1", "é".repeat(35))).points, 1);
    // A longer database name leaves less.
    let db = "d".repeat(200);
    let w = write_bytes(&cat, &db, format!("{} v=1", "m".repeat(14)).as_bytes());
    assert_eq!((w.points, w.dropped), (0, 1));
    let w = write_bytes(&cat, &db, format!("{} v=1", "m".repeat(13)).as_bytes());
    assert_eq!((w.points, w.dropped), (1, 0));
}

fn columns(max: u64) -> Catalog {
    Catalog::new(Limits {
        max_columns_per_measurement: max,
        ..Limits::default()
    })
}

#[test]
fn columns_past_the_limit_are_refused_with_400() {
    let cat = columns(3);
    assert_eq!(write(&cat, "m,a=1 x=1,y=2").points, 1);
    refused(
        &cat,
        "db",
        b"m,a=1 z=1",
        DropKind::TooManyColumns,
        "max-columns-per-measurement limit exceeded: (3) measurement=\"m\" would have 4 columns (tag keys and fields)",
    );
    refused(
        &cat,
        "db",
        b"m,a=1,b=2 x=1",
        DropKind::TooManyColumns,
        "max-columns-per-measurement limit exceeded: (3) measurement=\"m\" would have 4 columns (tag keys and fields)",
    );
    // Known columns keep flowing; other measurements have their own count.
    assert_eq!(write(&cat, "m,a=2 x=1,y=1\nn,a=1 x=1,y=1").points, 2);
    assert_eq!(cat.schema("db")[0].fields.len(), 2);
}

#[test]
fn the_issue_line_of_20000_fields_is_refused_and_registers_nothing() {
    let fields: Vec<String> = (0..20_000).map(|i| format!("f{i}=1")).collect();
    let bad = format!("wide {}", fields.join(","));
    for cat in [columns(1000), columns(0)] {
        let max = cat.limits().max_columns_per_measurement;
        let started = std::time::Instant::now();
        let w = write(&cat, &format!("ok v=1\n{bad}\nok v=2"));
        assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
        assert_eq!((w.points, w.dropped), (2, 1), "max {max}");
        assert_eq!(w.dropped_reasons[0].kind, DropKind::TooManyColumns);
        let text = w.error_message().unwrap();
        let rule = if max > 0 {
            "max-columns-per-measurement limit exceeded: (1000)"
        } else {
            "max-column-bytes-per-measurement limit exceeded: (240000)"
        };
        assert!(text.contains(rule), "{text}");
        assert!(
            cat.schema("db").iter().all(|m| m.name != "wide"),
            "nothing of the refused point was registered"
        );
        // Up to the limit is fine.
        let n = if max > 0 { 999 } else { 5_000 };
        let fields: Vec<String> = (0..n).map(|i| format!("f{i}=1")).collect();
        let w = write(&cat, &format!("wide,t=a {}", fields.join(",")));
        assert_eq!((w.points, w.dropped), (1, 0), "max {max}");
    }
}

#[test]
fn column_names_past_the_engine_statement_size_are_refused() {
    // 900 fields of 250 bytes fit the engine's statement (probed), 1,000 do not.
    let cat = catalog();
    let name = |i: usize| format!("{}{i:05}", "x".repeat(245));
    let budget = MAX_COLUMN_BYTES / column_cost(name(0).as_bytes());
    for chunk in (0..budget).collect::<Vec<_>>().chunks(100) {
        let fields: Vec<String> = chunk.iter().map(|&i| format!("{}=1", name(i))).collect();
        let w = write(&cat, &format!("m {}", fields.join(",")));
        assert_eq!((w.points, w.dropped), (1, 0));
    }
    let w = write(&cat, &format!("m {}=1", name(budget)));
    assert_eq!((w.points, w.dropped), (0, 1));
    assert!(w
        .error_message()
        .unwrap()
        .contains("max-column-bytes-per-measurement limit exceeded"));
    assert_eq!(cat.schema("db")[0].fields.len(), budget);
}

#[test]
fn the_column_limit_is_exact_under_concurrent_writers() {
    // Eight writers add 100 distinct fields each to one measurement limited to 250 columns:
    // exactly 250 (the tag key and 249 fields) end up registered, never more.
    let cat = std::sync::Arc::new(columns(250));
    write(&cat, "m,t=a seed=1");
    let threads: Vec<_> = (0..8)
        .map(|w| {
            let cat = cat.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    write(&cat, &format!("m,t=a w{w}_{i}=1"));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let schema = cat.schema("db");
    assert_eq!(schema[0].tag_keys.len() + schema[0].fields.len(), 250);
}

#[test]
fn wide_lines_keep_the_duplicate_rules() {
    let cat = catalog();
    let many: Vec<String> = (0..40).map(|i| format!("f{i}={i}")).collect();
    let many = many.join(",");
    // The same field again with one type: the last value wins, one column.
    let w = write(&cat, &format!("m {many},f0=99,f39=7"));
    assert_eq!((w.points, w.dropped), (1, 0));
    let b = &w.tables[0].batch;
    assert_eq!(b.num_columns(), 2 + 40);
    let v = |c: &str| {
        b.column_by_name(c)
            .unwrap()
            .as_any()
            .downcast_ref::<arrow::array::Float64Array>()
            .unwrap()
            .value(0)
    };
    assert_eq!((v("f0"), v("f1"), v("f39")), (99.0, 1.0, 7.0));
    // Of another type: the type conflict, as for a short line.
    let w = write(&cat, &format!("m {many},f3=\"x\""));
    assert_eq!((w.points, w.dropped), (0, 1));
    assert_eq!(
        w.error_message().unwrap(),
        "partial write: field type conflict: input field \"f3\" on measurement \"m\" is type string, already exists as type float dropped=1"
    );
    // Wide, unsorted tags: sorted (same series as sorted input), duplicates refused.
    let tags: Vec<String> = (0..40).rev().map(|i| format!("t{i:02}=v")).collect();
    let sorted: Vec<String> = (0..40).map(|i| format!("t{i:02}=v")).collect();
    let a = write(&cat, &format!("n,{} v=1 1", tags.join(",")));
    let b = write(&cat, &format!("n,{} v=1 2", sorted.join(",")));
    assert_eq!(
        (a.points, b.points, a.meta.is_empty(), b.meta.is_empty()),
        (1, 1, false, true)
    );
    let w = write(&cat, &format!("n,{},t05=w v=1", tags.join(",")));
    assert_eq!(
        w.error_message().unwrap(),
        format!(
            "unable to parse 'n,{},t05=w v=1': duplicate tags",
            tags.join(",")
        )
    );
}

#[test]
fn wide_lines_cost_linear_time() {
    // Duplicate detection, tag sorting and the field/tag name clash check were quadratic per
    // line: a 100,000-field line took 7.6 s to parse (release), 5,000 unsorted tags 56 ms a
    // line. Now milliseconds.
    let fields: Vec<String> = (0..100_000).map(|i| format!("f{i}=1")).collect();
    let tags: Vec<String> = (0..5_000).rev().map(|i| format!("t{i:05}=a")).collect();
    let body = format!(
        "m {}\nm,{} v=1\nm,{} v=1\n",
        fields.join(","),
        tags.join(","),
        tags.join(",")
    );
    // And many fields after many tags (each field is checked against the tags).
    let many_tags: Vec<String> = (0..5_000).map(|i| format!("t{i:05}=a")).collect();
    let body = format!("{body}w,{} {}\n", many_tags.join(","), fields.join(","));
    let cat = catalog();
    let started = std::time::Instant::now();
    let w = write(&cat, &body);
    let took = started.elapsed();
    // Debug build, shared machine: generous, and still far below quadratic.
    assert!(took.as_secs() < 10, "{took:?}");
    // The wide points are past the column budget; the two tag points (one series) are written.
    assert_eq!((w.points, w.dropped), (2, 2), "{:?}", w.dropped_reasons);
}
