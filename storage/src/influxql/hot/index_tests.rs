//! The tag index (`hot/tag_index.rs`, `Cond::candidates`) must name every
//! series a statement's tag conditions may pass: over random series (tags
//! `host` and `region`, either missing), random batches of them with windows
//! that evict and tables emptied between, and random conditions (`=`, `!=`,
//! `=~`/`!~` sets and regexes, `''`, under `AND`/`OR`), the series the read
//! keeps through the index equal those a test of every series keeps.

use std::sync::Arc;

use engine::arrow::array::UInt64Array;
use engine::arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use engine::arrow::datatypes::{DataType, Field, Schema};
use ingest::{FieldType, MeasurementSchema};
use proptest::prelude::*;

use super::cond::{candidates, Cond};
use crate::hot::table::{Series, Table};

fn schema() -> MeasurementSchema {
    MeasurementSchema {
        name: "m".into(),
        tag_keys: vec!["host".into(), "region".into()],
        fields: vec![("f".into(), FieldType::Float)],
    }
}

/// A series: its host and region (`""`: the series lacks the tag).
type Key = (&'static str, &'static str);

const HOSTS: [&str; 5] = ["", "h0", "h1", "h2", "h10"];
const REGIONS: [&str; 3] = ["", "eu", "us"];

/// A series' id, from its tags (ingest's is a hash of the series key).
fn id(k: Key) -> u64 {
    let h = HOSTS.iter().position(|h| *h == k.0).unwrap() as u64;
    let r = REGIONS.iter().position(|r| *r == k.1).unwrap() as u64;
    1 + h * 10 + r
}

/// One point of each `(series, time)`, as ingest lays a batch out.
fn batch(rows: &[(Key, i64)]) -> RecordBatch {
    let schema = Schema::new(vec![
        Field::new("time", DataType::Int64, false),
        Field::new("series_id", DataType::UInt64, false),
        Field::new("host", DataType::Utf8, false),
        Field::new("region", DataType::Utf8, false),
        Field::new("f", DataType::Float64, true),
    ]);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| id(r.0)))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0 .0))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0 .1))),
        Arc::new(Float64Array::from_iter_values(
            rows.iter().map(|r| r.1 as f64),
        )),
    ];
    RecordBatch::try_new(Arc::new(schema), cols).unwrap()
}

/// What a table goes through: a batch inserted with a window, or emptied.
#[derive(Debug, Clone)]
enum Step {
    Insert(Vec<(Key, i64)>, i64),
    Empty,
}

fn key() -> impl Strategy<Value = Key> {
    (
        prop::sample::select(&HOSTS[..]),
        prop::sample::select(&REGIONS[..]),
    )
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (prop::collection::vec((key(), 0i64..400), 1..20), 5i64..500)
            .prop_map(|(rows, window)| Step::Insert(rows, window)),
        1 => Just(Step::Empty),
    ]
}

/// A tag condition the store reads.
fn condition() -> impl Strategy<Value = String> {
    let host = prop::sample::select(&["h0", "h1", "h2", "h10", "h9", ""][..]);
    let region = prop::sample::select(&["eu", "us", "ap", ""][..]);
    let leaf = prop_oneof![
        (host.clone(), prop::bool::ANY)
            .prop_map(|(h, eq)| format!("host {} '{h}'", if eq { "=" } else { "!=" })),
        (region, prop::bool::ANY)
            .prop_map(|(r, eq)| format!("region {} '{r}'", if eq { "=" } else { "!=" })),
        (host.clone(), host, prop::bool::ANY)
            .prop_map(|(a, b, eq)| format!("host {} /^({a}|{b})$/", if eq { "=~" } else { "!~" })),
        Just("host =~ /h1/".to_string()),
        Just("f > 10.0".to_string()),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        (inner.clone(), inner, prop::bool::ANY)
            .prop_map(|(a, b, and)| format!("({a}) {} ({b})", if and { "AND" } else { "OR" }))
    })
}

/// The series (ids, sorted) no condition rules out, from `held`.
fn kept<'t>(conds: &[Cond], held: impl Iterator<Item = (&'t u64, &'t Series)>) -> Vec<u64> {
    let mut ids: Vec<u64> = held
        .filter(|(_, s)| conds.iter().all(|c| c.on_series(s) != Some(false)))
        .map(|(id, _)| *id)
        .collect();
    ids.sort_unstable();
    ids
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn the_index_keeps_the_series_a_full_scan_keeps(
        steps in prop::collection::vec(step(), 1..8),
        texts in prop::collection::vec(condition(), 1..3),
    ) {
        let mut t = Table::new();
        t.chunk = 4;
        for s in &steps {
            match s {
                Step::Insert(rows, window) => prop_assert!(t.insert(&batch(rows), *window)),
                Step::Empty => t.empty(),
            }
        }
        let mut conds = Vec::new();
        for text in &texts {
            let c = Cond::of(&influxql::parse_expr(text).unwrap(), &schema());
            prop_assume!(c.is_some(), "not a condition the store reads: {}", text);
            conds.push(c.unwrap());
        }
        for c in &mut conds {
            c.bind(&t.fields);
        }
        let scanned = kept(&conds, t.series.iter());
        let indexed = match candidates(&conds, &t.tags) {
            Some(ids) => {
                prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "{texts:?}: not sorted");
                kept(&conds, ids.iter().filter_map(|id| t.series.get_key_value(id)))
            }
            None => scanned.clone(),
        };
        prop_assert_eq!(indexed, scanned, "{:?}", texts);
    }
}
