//! Catalog: first type wins, limits with exact counts, persistence through records.

use std::sync::Arc;

use ingest::catalog::Record;
use ingest::{Catalog, FieldType, Limits, MeasurementSchema, WriteOutcome};

use crate::util::{catalog, write};

fn reload(limits: Limits, meta: &[(Vec<u8>, Vec<u8>)]) -> Catalog {
    Catalog::load(limits, meta.iter().cloned()).expect("load")
}

#[test]
fn records_rebuild_the_catalog() {
    let cat = catalog();
    let mut meta = Vec::new();
    for body in [
        "cpu,host=a,dc=x usage=1,n=2i",
        "cpu,host=b,dc=x usage=2",
        "mem,host=a free=1u",
    ] {
        meta.extend(write(&cat, body).meta);
    }
    // Known series and types: no new records.
    assert!(write(&cat, "cpu,host=a,dc=x usage=3,n=4i").meta.is_empty());
    let loaded = reload(Limits::default(), &meta);
    assert_eq!(loaded.series_count("db"), 3);
    assert_eq!(loaded.measurement_count("db"), 2);
    assert_eq!(loaded.tag_value_count("db", b"cpu", b"host"), 2);
    assert_eq!(
        loaded.field_type("db", b"cpu", b"n"),
        Some(FieldType::Integer)
    );
    assert_eq!(
        loaded.field_type("db", b"mem", b"free"),
        Some(FieldType::UInteger)
    );
    // The reloaded catalog treats the same writes as known and keeps the types.
    assert!(write(&loaded, "cpu,host=a,dc=x usage=3,n=4i")
        .meta
        .is_empty());
    let w = write(&loaded, "cpu,host=a,dc=x n=1");
    assert_eq!(w.dropped, 1);
    // Foreign records are ignored; malformed own records are errors.
    let mut with_foreign = meta.clone();
    with_foreign.push((b"wal/other".to_vec(), b"x".to_vec()));
    assert!(Catalog::load(Limits::default(), with_foreign).is_ok());
    assert!(Catalog::load(
        Limits::default(),
        vec![(b"ic1F\x00\x00\x00\x09db".to_vec(), vec![1u8])]
    )
    .is_err());
    assert!(Catalog::load(Limits::default(), vec![(b"ic1Z".to_vec(), vec![])]).is_err());
}

#[test]
fn a_dropped_database_is_forgotten_with_all_its_records() {
    let cat = catalog();
    let mut meta = Vec::new();
    meta.extend(write(&cat, "cpu,host=a usage=1,n=2i").meta);
    let prefixes = cat.drop_database("db");
    assert_eq!(cat.series_count("db"), 0);
    assert_eq!(cat.field_type("db", b"cpu", b"n"), None);
    // Every record the database produced falls under one of the prefixes.
    assert!(!meta.is_empty());
    for (k, _) in &meta {
        assert!(
            prefixes.iter().any(|p| k.starts_with(p)),
            "record {k:?} survives the drop"
        );
    }
    // A re-created database starts fresh: `n` may now be a string.
    let w = write(&cat, "cpu,host=a n=\"x\"");
    assert_eq!(w.outcome(), WriteOutcome::Ok);
}

#[test]
fn series_limit_exact_and_persistent() {
    let limits = Limits {
        max_series_per_database: 3,
        ..Limits::default()
    };
    let cat = Catalog::new(limits);
    let w = write(
        &cat,
        "m,h=1 v=1\nm,h=2 v=1\nm,h=1 v=2\nm,h=3 v=1\nm,h=4 v=1\nm,h=5 v=1\nm,h=2 v=3",
    );
    assert_eq!(w.points, 5);
    assert_eq!(w.dropped, 2);
    assert_eq!(cat.series_count("db"), 3);
    // Existing series still accepted; a new one rejected.
    let w2 = write(&cat, "m,h=3 v=9\nm,h=9 v=1");
    assert_eq!((w2.points, w2.dropped), (1, 1));
    // Survives a restart.
    let loaded = reload(limits, &w.meta);
    assert_eq!(loaded.series_count("db"), 3);
    let w3 = write(&loaded, "m,h=8 v=1\nm,h=1 v=1");
    assert_eq!((w3.points, w3.dropped), (1, 1));
    assert_eq!(w3.outcome(), WriteOutcome::LimitExceeded);
    // Other databases are independent.
    let w4 = ingest::Ingestor::write(
        &loaded,
        "other",
        b"m,h=8 v=1",
        ingest::Format::LineProtocol,
        ingest::Precision::Nanoseconds,
        0,
    )
    .unwrap();
    assert_eq!(w4.points, 1);
}

#[test]
fn measurement_limit() {
    let cat = Catalog::new(Limits {
        max_measurements_per_database: 2,
        ..Limits::default()
    });
    let w = write(&cat, "a v=1\nb v=1\nc v=1\na,x=1 v=1");
    assert_eq!((w.points, w.dropped), (3, 1));
    assert_eq!(
        w.dropped_reasons[0].reason,
        "max-measurements-per-database limit exceeded: (2) database=\"db\" measurement=\"c\""
    );
}

#[test]
fn tag_values_limit() {
    let cat = Catalog::new(Limits {
        max_values_per_tag: 2,
        ..Limits::default()
    });
    let w = write(
        &cat,
        "m,h=a v=1\nm,h=b v=1\nm,h=c v=1\nm,h=a,z=1 v=1\nn,h=c v=1",
    );
    assert_eq!((w.points, w.dropped), (4, 1));
    assert_eq!(
        w.dropped_reasons[0].reason,
        "max-values-per-tag limit exceeded (2/2): measurement=\"m\" tag=\"h\" value=\"c\""
    );
    assert_eq!(cat.tag_value_count("db", b"m", b"h"), 2);
}

#[test]
fn concurrent_first_type_wins() {
    for round in 0..20 {
        let cat = Arc::new(catalog());
        let bodies = ["m f=1", "m f=1i", "m f=\"s\"", "m f=true"];
        let results: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = bodies
                .iter()
                .map(|b| {
                    let cat = cat.clone();
                    s.spawn(move || write(&cat, b))
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winner = cat
            .field_type("db", b"m", b"f")
            .expect("a type was registered");
        let accepted: Vec<_> = results.iter().filter(|w| w.points == 1).collect();
        assert_eq!(
            accepted.len(),
            1,
            "round {round}: exactly one type accepted"
        );
        let t = &accepted[0].tables[0].batch;
        let col = t.schema().field_with_name("f").unwrap().data_type().clone();
        assert_eq!(col, winner.data_type());
        let f_records: usize = results
            .iter()
            .flat_map(|w| &w.meta)
            .filter(|(k, _)| k.starts_with(b"ic1F"))
            .count();
        assert_eq!(f_records, 1, "round {round}: the field is recorded once");
    }
}

fn database(name: &str, retention_secs: u64) -> Record {
    Record::Database {
        name: name.into(),
        retention_secs,
    }
}

#[test]
fn the_registry_knows_databases_and_their_retention() {
    let cat = catalog();
    assert!(!cat.database_exists("db"));
    for record in [database("db", 0), database("a", 3600), database("z", 0)] {
        cat.apply(&record);
    }
    assert!(cat.database_exists("db"));
    assert_eq!(cat.databases(), vec!["a", "db", "z"], "sorted");
    assert_eq!(cat.retention_secs("a"), 3600);
    assert_eq!(cat.retention_secs("db"), 0);
    assert_eq!(cat.retention_secs("unknown"), 0);
    // Writes do not register a database.
    write(&cat, "cpu v=1");
    ingest::Ingestor::write(
        &cat,
        "other",
        b"cpu v=1",
        ingest::Format::LineProtocol,
        ingest::Precision::Nanoseconds,
        0,
    )
    .unwrap();
    assert!(!cat.database_exists("other"));
    // Dropping forgets the registration and the schema.
    cat.drop_database("a");
    cat.apply(&Record::DatabaseDropped { name: "db".into() });
    assert_eq!(cat.databases(), vec!["z"]);
    assert_eq!(cat.series_count("db"), 0);
    assert!(cat.schema("db").is_empty());
}

#[test]
fn load_applies_database_records_and_ignores_dropped_databases() {
    let cat = catalog();
    let mut meta = vec![database("db", 0).encode(), database("gone", 60).encode()];
    meta.extend(write(&cat, "cpu,host=a v=1").meta);
    let gone = ingest::Ingestor::write(
        &cat,
        "gone",
        b"mem,host=a v=1",
        ingest::Format::LineProtocol,
        ingest::Precision::Nanoseconds,
        0,
    )
    .unwrap();
    meta.extend(gone.meta);
    // The registry values older versions wrote, then the drop (records after it in the list
    // still lose: the drop is the database's last word).
    meta.push((b"srv1Dold".to_vec(), b"1".to_vec()));
    meta.push((b"srv1Dodd".to_vec(), b"1;retention=soon".to_vec()));
    meta.insert(
        0,
        Record::DatabaseDropped {
            name: "gone".into(),
        }
        .encode(),
    );
    meta.retain(|(k, v)| !(k == b"srv1Dgone" && v != b"0"));
    let loaded = Catalog::load(Limits::default(), meta.clone()).unwrap();
    assert_eq!(loaded.databases(), vec!["db", "odd", "old"]);
    assert_eq!(
        loaded.retention_secs("odd"),
        0,
        "an unreadable retention keeps the data"
    );
    assert_eq!(loaded.series_count("db"), 1);
    assert_eq!(
        loaded.series_count("gone"),
        0,
        "a dropped database's records are ignored"
    );
    assert!(loaded.schema("gone").is_empty());
    // In any order.
    meta.reverse();
    let reversed = Catalog::load(Limits::default(), meta).unwrap();
    assert_eq!(reversed.databases(), loaded.databases());
    assert_eq!(reversed.series_count("gone"), 0);
}

#[test]
fn schema_answers_measurements_tags_and_fields_sorted() {
    let cat = catalog();
    let w = write(
        &cat,
        "mem,host=a free=1u\ncpu,zone=z,host=a usage=1,idle=2i\ncpu,host=b,dc=x up=true,name=\"n\"",
    );
    assert_eq!(w.outcome(), WriteOutcome::Ok);
    let s = |n: &str| n.to_string();
    assert_eq!(
        cat.schema("db"),
        vec![
            MeasurementSchema {
                name: s("cpu"),
                tag_keys: vec![s("dc"), s("host"), s("zone")],
                fields: vec![
                    (s("idle"), FieldType::Integer),
                    (s("name"), FieldType::String),
                    (s("up"), FieldType::Boolean),
                    (s("usage"), FieldType::Float),
                ],
            },
            MeasurementSchema {
                name: s("mem"),
                tag_keys: vec![s("host")],
                fields: vec![(s("free"), FieldType::UInteger)],
            },
        ]
    );
    assert!(cat.schema("nope").is_empty());
    // The same answer from the records alone.
    let loaded = reload(Limits::default(), &w.meta);
    assert_eq!(loaded.schema("db"), cat.schema("db"));
    assert_eq!(FieldType::UInteger.influxql_name(), "unsigned");
}

#[test]
fn series_records_are_found_by_prefix_and_decode_to_keys() {
    let cat = catalog();
    let w = write(&cat, "cpu,host=a v=1\ncpu,host=b,dc=x v=1\nmem v=1");
    let prefix = ingest::catalog::series_prefix("db");
    let mut keys: Vec<String> = w
        .meta
        .iter()
        .filter(|(k, _)| k.starts_with(&prefix))
        .map(|(k, v)| match Record::decode(k, v).unwrap() {
            Some(Record::Series { id, key, .. }) => {
                assert_eq!(id, key.id());
                key.to_string()
            }
            other => panic!("not a series record: {other:?}"),
        })
        .collect();
    keys.sort();
    assert_eq!(keys, vec!["cpu,dc=x,host=b", "cpu,host=a", "mem"]);
    assert_eq!(ingest::series::measurement_of(&keys[0]), "cpu");
}
