//! The whole stage: outcomes, v1 error texts, Arrow layout.

use arrow::array::{Array, BooleanArray, Float64Array, Int64Array, StringArray, UInt64Array};
use arrow::datatypes::DataType;
use ingest::{Catalog, Format, Ingestor, Limits, Precision, WriteOutcome};

use crate::util::{catalog, write, NOW};

#[test]
fn all_accepted() {
    let cat = catalog();
    let w = write(&cat, "cpu,host=a v=1 1\nmem,host=a used=2i 2\n");
    assert_eq!(w.outcome(), WriteOutcome::Ok);
    assert_eq!(w.outcome().http_status(), 204);
    assert_eq!(w.error_message(), None);
    assert_eq!(w.points, 2);
    assert_eq!(w.tables.len(), 2);
}

#[test]
fn partial_write_text() {
    let cat = catalog();
    let w = write(&cat, "cpu v=1\ncpu v=x\ncpu v=1.1.1\n");
    assert_eq!(w.outcome(), WriteOutcome::Partial);
    assert_eq!(w.outcome().http_status(), 400);
    assert_eq!(
        w.error_message().unwrap(),
        "partial write: unable to parse 'cpu v=x': invalid boolean\nunable to parse 'cpu v=1.1.1': invalid number dropped=0"
    );
    assert_eq!(w.points, 1);
}

#[test]
fn all_rejected_text() {
    let cat = catalog();
    let w = write(&cat, "cpu v=x\ncpu");
    assert_eq!(w.outcome(), WriteOutcome::Rejected);
    assert_eq!(
        w.error_message().unwrap(),
        "unable to parse 'cpu v=x': invalid boolean\nunable to parse 'cpu': missing fields"
    );
    assert!(w.tables.is_empty());
}

#[test]
fn empty_body_is_ok() {
    let w = write(&catalog(), "");
    assert_eq!(w.outcome(), WriteOutcome::Ok);
    assert_eq!(w.points, 0);
}

#[test]
fn type_conflict_text() {
    let cat = catalog();
    write(&cat, "m f=1");
    let w = write(&cat, "m f=\"s\"\nm f=2\nm f=\"t\"");
    assert_eq!(w.points, 1);
    assert_eq!(w.dropped, 2);
    assert_eq!(
        w.error_message().unwrap(),
        "partial write: field type conflict: input field \"f\" on measurement \"m\" is type string, already exists as type float dropped=2"
    );
    assert_eq!(w.outcome(), WriteOutcome::Partial);
}

#[test]
fn conflict_within_one_request_first_wins() {
    let cat = catalog();
    let w = write(&cat, "m f=1i\nm f=1\nm f=2i");
    assert_eq!(w.points, 2);
    assert_eq!(w.dropped, 1);
    assert!(w
        .error_message()
        .unwrap()
        .contains("is type float, already exists as type integer"));
    assert_eq!(
        cat.field_type("db", b"m", b"f"),
        Some(ingest::FieldType::Integer)
    );
}

#[test]
fn time_only_point_is_rejected() {
    let w = write(&catalog(), "m time=1");
    assert_eq!(w.points, 0);
    assert_eq!(
        w.error_message().unwrap(),
        "partial write: invalid field name: input field \"time\" on measurement \"m\" is invalid dropped=1"
    );
}

#[test]
fn arrow_layout() {
    let cat = catalog();
    let w = write(
        &cat,
        "cpu,host=a,region=eu f=1.5,i=2i,u=3u,s=\"x\",b=true 10\ncpu,host=b i=5i 20\ncpu,zone=z f=2 30",
    );
    assert_eq!(w.tables.len(), 1);
    let t = &w.tables[0];
    assert_eq!(t.measurement, "cpu");
    let b = &t.batch;
    let schema = b.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        vec![
            "time",
            "series_id",
            "host",
            "region",
            "zone",
            "b",
            "f",
            "i",
            "s",
            "u"
        ]
    );
    let types: Vec<(&DataType, bool)> = schema
        .fields()
        .iter()
        .map(|f| (f.data_type(), f.is_nullable()))
        .collect();
    assert_eq!(
        types,
        vec![
            (&DataType::Int64, false),
            (&DataType::UInt64, false),
            (&DataType::Utf8, false),
            (&DataType::Utf8, false),
            (&DataType::Utf8, false),
            (&DataType::Boolean, true),
            (&DataType::Float64, true),
            (&DataType::Int64, true),
            (&DataType::Utf8, true),
            (&DataType::UInt64, true),
        ]
    );
    let col = |n: &str| b.column_by_name(n).unwrap().clone();
    let time = col("time");
    assert_eq!(
        time.as_any().downcast_ref::<Int64Array>().unwrap().values(),
        &[10, 20, 30]
    );
    let sid = col("series_id");
    let sid = sid.as_any().downcast_ref::<UInt64Array>().unwrap();
    assert_eq!(
        sid.value(0),
        ingest::series::series_id(b"cpu", &[("host", "a"), ("region", "eu")])
    );
    let host = col("host");
    let host = host.as_any().downcast_ref::<StringArray>().unwrap();
    assert_eq!(
        (host.value(0), host.value(1), host.value(2)),
        ("a", "b", "")
    );
    assert_eq!(host.null_count(), 0);
    let f = col("f");
    let f = f.as_any().downcast_ref::<Float64Array>().unwrap();
    assert!(f.is_valid(0) && f.is_null(1) && f.is_valid(2));
    assert_eq!(f.value(2), 2.0);
    let bb = col("b");
    let bb = bb.as_any().downcast_ref::<BooleanArray>().unwrap();
    assert!(bb.value(0) && bb.is_null(1));
    let s = col("s");
    let s = s.as_any().downcast_ref::<StringArray>().unwrap();
    assert_eq!(s.value(0), "x");
    assert!(s.is_null(2));
}

#[test]
fn non_utf8_string_values_are_replaced_in_arrow() {
    // Names and tag values that are not UTF-8 are refused (tests/it/door.rs); string field
    // values are kept with U+FFFD replacement.
    let cat = catalog();
    let w = Ingestor::write(
        &cat,
        "db",
        b"m,t=a v=\"\xfe\"",
        Format::LineProtocol,
        Precision::Nanoseconds,
        NOW,
    )
    .unwrap();
    let b = &w.tables[0].batch;
    let v = b.column_by_name("v").unwrap();
    assert_eq!(
        v.as_any().downcast_ref::<StringArray>().unwrap().value(0),
        "\u{fffd}"
    );
}

#[test]
fn invalid_database() {
    let cat = catalog();
    assert!(Ingestor::write(
        &cat,
        "",
        b"m v=1",
        Format::LineProtocol,
        Precision::Nanoseconds,
        NOW
    )
    .is_err());
}

#[test]
fn limit_outcome_is_422() {
    let cat = Catalog::new(Limits {
        max_series_per_database: 1,
        ..Limits::default()
    });
    let w = write(&cat, "m,h=a v=1\nm,h=b v=1");
    assert_eq!(w.outcome(), WriteOutcome::LimitExceeded);
    assert_eq!(w.outcome().http_status(), 422);
    assert_eq!(
        w.error_message().unwrap(),
        "partial write: max-series-per-database limit exceeded: (1) dropped=1"
    );
}

#[test]
fn content_types() {
    assert_eq!(Format::from_content_type(None), Format::LineProtocol);
    assert_eq!(
        Format::from_content_type(Some("text/plain; charset=utf-8")),
        Format::LineProtocol
    );
    assert_eq!(
        Format::from_content_type(Some("application/msgpack")),
        Format::MsgpackRows
    );
    assert_eq!(
        Format::from_content_type(Some(ingest::CONTENT_TYPE_COLUMNAR_MSGPACK)),
        Format::MsgpackColumnar
    );
    assert_eq!(
        Format::from_content_type(Some(ingest::CONTENT_TYPE_COLUMNAR_MSGPACK_HYPERBYTEDB)),
        Format::MsgpackColumnar
    );
    // The cases of the server's copy of the table (case-insensitive, parameters ignored).
    assert_eq!(
        Format::from_content_type(Some("Application/MsgPack; charset=x")),
        Format::MsgpackRows
    );
    assert_eq!(
        Format::from_content_type(Some(" application/x-msgpack ")),
        Format::MsgpackRows
    );
    assert_eq!(Format::from_content_type(Some("")), Format::LineProtocol);
}

#[test]
fn database_names_are_checked() {
    let cat = catalog();
    for db in ["", "system", "__series", "a\u{1}b"] {
        let err = Ingestor::write(
            &cat,
            db,
            b"m v=1",
            Format::LineProtocol,
            Precision::Nanoseconds,
            NOW,
        )
        .unwrap_err();
        assert!(err.is_client_error(), "{db:?}: {err}");
        assert!(
            err.to_string().starts_with("invalid database name"),
            "{err}"
        );
    }
}

#[test]
fn tag_and_field_of_one_name_across_points() {
    let cat = catalog();
    let w = write(&cat, "m,x=a v=1\nm x=2\nm,y=b v=3");
    assert_eq!((w.points, w.dropped), (2, 1));
    assert_eq!(
        w.error_message().unwrap(),
        "partial write: conflicting field and tag key: input field \"x\" on measurement \"m\" is already a tag key dropped=1"
    );
    // Across requests too, both ways.
    let w = write(&cat, "m y=1");
    assert_eq!(w.dropped, 1);
    let w = write(&cat, "m,v=z q=1");
    assert_eq!(w.dropped, 1);
    assert!(w
        .error_message()
        .unwrap()
        .contains("input tag \"v\" on measurement \"m\" is already a field key"));
    // Every batch has unique column names.
    let w = write(&cat, "m,x=a v=1,q=2\nm,x=b v=3");
    let schema = w.tables[0].batch.schema();
    let mut names: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), schema.fields().len());
}

#[test]
fn points_beyond_retention_are_dropped_before_the_catalog() {
    let cat = catalog();
    let ing = Ingestor::default();
    let prepare = |body: &str, min: Option<i64>| {
        ing.prepare_retained(
            &cat,
            "db",
            body.as_bytes(),
            Format::LineProtocol,
            Precision::Nanoseconds,
            NOW,
            min,
        )
        .unwrap()
    };
    // Two of four points are older than the cutoff (100); one of those has a field
    // and a series nothing else has.
    let w = prepare(
        "cpu,host=a v=1 99\ncpu,host=a v=2 100\ncpu,host=old only_old=1i 5\ncpu,host=b v=3 200\n",
        Some(100),
    );
    assert_eq!(w.outcome(), WriteOutcome::Partial);
    assert_eq!(w.points, 2);
    assert_eq!(w.dropped, 2);
    assert_eq!(
        w.error_message().unwrap(),
        "partial write: points beyond retention policy dropped=2"
    );
    assert_eq!(w.dropped_reasons[0].kind, ingest::DropKind::BeyondRetention);
    let schema = w.tables[0].batch.schema();
    assert!(schema.field_with_name("only_old").is_err(), "{schema:?}");
    // Nothing in the catalog learnt of the dropped point's series or field.
    let w = prepare("cpu,host=c only_old=\"now a string\" 300\n", Some(100));
    assert_eq!(w.outcome(), WriteOutcome::Ok, "{:?}", w.error_message());
    assert_eq!(cat.series_count("db"), 3);

    // Everything too old: nothing written, the same v1 text.
    let w = prepare("cpu v=1 1\ncpu v=2 2\n", Some(100));
    assert_eq!(w.outcome(), WriteOutcome::Rejected);
    assert_eq!(
        w.error_message().unwrap(),
        "partial write: points beyond retention policy dropped=2"
    );
    // No cutoff: the same old points are written.
    assert_eq!(prepare("cpu v=1 1\n", None).outcome(), WriteOutcome::Ok);
}
