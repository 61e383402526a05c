use std::sync::Arc;

use arrow::array::{
    ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, TimestampNanosecondArray,
    UInt32Array, UInt64Array,
};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};

use super::*;

/// One row: `(series, time, seq, row, host, usage)`.
pub(super) type TestRow<'a> = (u64, i64, u64, u32, &'a str, Option<f64>);

pub(super) fn batch(rows: &[TestRow<'_>]) -> RecordBatch {
    let schema = Schema::new(vec![
        Field::new(TIME, DataType::Timestamp(TimeUnit::Nanosecond, None), false),
        Field::new(SERIES_ID, DataType::UInt64, false),
        Field::new(SEQ, DataType::UInt64, false),
        Field::new(ROW, DataType::UInt32, false),
        Field::new("host", DataType::Utf8, false),
        Field::new("usage", DataType::Float64, true),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(TimestampNanosecondArray::from_iter_values(
            rows.iter().map(|r| r.1),
        )),
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.2))),
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.3))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.4))),
        Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.5))),
    ];
    RecordBatch::try_new(Arc::new(schema), columns).unwrap()
}

fn with_idle(b: &RecordBatch, idle: &[Option<i64>]) -> RecordBatch {
    let mut fields: Vec<_> = b.schema().fields().iter().cloned().collect();
    fields.push(Arc::new(Field::new("idle", DataType::Int64, true)));
    let mut columns = b.columns().to_vec();
    columns.push(Arc::new(Int64Array::from(idle.to_vec())));
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

fn usage(t: &TableLasts, sid: u64) -> Option<Cell> {
    t.series[&sid].cell(t.column("usage").unwrap()).cloned()
}

#[test]
fn a_later_time_replaces_the_point_and_the_same_time_merges_by_version() {
    let mut t = TableLasts::default();
    t.merge(&batch(&[
        (1, 10, 5, 0, "a", Some(1.0)),
        (1, 20, 5, 1, "a", Some(2.0)),
        (2, 30, 5, 2, "b", Some(3.0)),
    ]))
    .unwrap();
    assert_eq!(t.series[&1].time, 20);
    assert_eq!(usage(&t, 1), Some(Cell::Float(2.0)));
    // An older point changes nothing; a rewrite of the last point with no
    // value keeps the value; a later write of it wins.
    t.merge(&batch(&[
        (1, 15, 6, 0, "a", Some(9.0)),
        (1, 20, 6, 1, "a", None),
    ]))
    .unwrap();
    assert_eq!(usage(&t, 1), Some(Cell::Float(2.0)));
    t.merge(&batch(&[(1, 20, 7, 0, "a", Some(4.0))])).unwrap();
    assert_eq!(usage(&t, 1), Some(Cell::Float(4.0)));
    // A later point replaces every column: a column it lacks has no value.
    t.merge(&with_idle(&batch(&[(2, 31, 8, 0, "b", None)]), &[Some(7)]))
        .unwrap();
    let p = &t.series[&2];
    assert_eq!(p.time, 31);
    assert_eq!(usage(&t, 2), None);
    assert_eq!(p.cell(t.column("idle").unwrap()), Some(&Cell::Integer(7)));
    assert_eq!(
        p.cell(t.column("host").unwrap()),
        Some(&Cell::String("b".into()))
    );
}

#[test]
fn merging_is_order_free() {
    let batches = [
        batch(&[(1, 20, 3, 0, "a", Some(1.0)), (2, 5, 3, 1, "b", Some(1.0))]),
        batch(&[(1, 20, 4, 0, "a", None), (2, 6, 4, 1, "b", Some(2.0))]),
        batch(&[(1, 20, 2, 9, "a", Some(8.0)), (1, 19, 5, 0, "a", Some(5.0))]),
        with_idle(&batch(&[(1, 20, 1, 0, "a", None)]), &[Some(3)]),
    ];
    let mut reference: Option<Vec<(u64, i64, Option<Cell>)>> = None;
    for order in [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1], [1, 3, 0, 2]] {
        let mut t = TableLasts::default();
        for i in order {
            t.merge(&batches[i]).unwrap();
            t.merge(&batches[i]).unwrap(); // and idempotent
        }
        let mut got: Vec<_> = t
            .series
            .iter()
            .map(|(&sid, p)| (sid, p.time, usage(&t, sid)))
            .collect();
        got.sort_by_key(|g| g.0);
        assert_eq!(
            got[0],
            (1, 20, Some(Cell::Float(1.0))),
            "seq 3 is the latest write of usage"
        );
        assert_eq!(got[1], (2, 6, Some(Cell::Float(2.0))));
        match &reference {
            None => reference = Some(got),
            Some(r) => assert_eq!(r, &got),
        }
    }
}

#[test]
fn the_budget_bounds_the_series_kept_and_forgetting_frees_them() {
    let lasts = LastPoints::new(3);
    let key = ("db".to_string(), "m".to_string());
    lasts.tables.lock().insert(
        key.clone(),
        Arc::new(Mutex::new(State::Ready(Arc::default()))),
    );
    assert!(lasts.tracks("db", "m"));
    lasts.apply(
        "db",
        "m",
        &batch(&[(1, 1, 1, 0, "a", Some(1.0)), (2, 1, 1, 1, "b", None)]),
    );
    assert_eq!(lasts.cached_series(), 2);
    lasts.apply(
        "db",
        "m",
        &batch(&[(3, 1, 2, 0, "c", None), (4, 1, 2, 1, "d", None)]),
    );
    assert_eq!(
        lasts.cached_series(),
        0,
        "past the budget the table is not kept"
    );
    assert!(!lasts.tracks("db", "m"));
    lasts.forget_database("db");
    assert!(lasts.tables.lock().is_empty());
}

#[test]
fn a_reader_merges_the_overlay_as_merge_would() {
    let rows_base = [
        (1, 20, 5, 0, "a", Some(1.0)),
        (2, 20, 5, 1, "b", Some(2.0)),
        (3, 20, 5, 2, "c", Some(3.0)),
        (5, 20, 5, 3, "e", Some(5.0)), // no unflushed row: the table's alone
        (6, 30, 5, 4, "f", Some(6.0)),
    ];
    let rows_over = [
        (1, 21, 9, 0, "a", None),      // later: replaces series 1's point
        (2, 20, 4, 0, "b", Some(9.0)), // same time, older write: loses
        (3, 20, 6, 0, "c", Some(7.0)), // same time, newer write: wins
        (4, 5, 9, 1, "d", Some(4.0)),  // only unflushed
        (6, 10, 9, 2, "f", Some(8.0)), // earlier: the table's point stands
    ];
    let (mut base, mut overlay, mut both) = (
        TableLasts::default(),
        TableLasts::default(),
        TableLasts::default(),
    );
    base.merge(&batch(&rows_base)).unwrap();
    overlay
        .merge(&with_idle(
            &batch(&rows_over),
            &[Some(1), None, None, None, Some(2)],
        ))
        .unwrap();
    both.merge(&batch(&rows_base)).unwrap();
    both.merge(&with_idle(
        &batch(&rows_over),
        &[Some(1), None, None, None, Some(2)],
    ))
    .unwrap();
    let reader = Reader::new(&base, &overlay, &["usage", "idle", "host"]);
    let mut got = Vec::new();
    reader.for_each(|sid, time, cells| {
        got.push((
            sid,
            time,
            cells.iter().map(|c| c.cloned()).collect::<Vec<_>>(),
        ))
    });
    got.sort_by_key(|g| g.0);
    let mut want: Vec<_> = both
        .series
        .iter()
        .map(|(&sid, p)| {
            let cells = ["usage", "idle", "host"]
                .iter()
                .map(|n| both.column(n).and_then(|i| p.cell(i)).cloned())
                .collect::<Vec<_>>();
            (sid, p.time, cells)
        })
        .collect();
    want.sort_by_key(|g| g.0);
    assert_eq!(got, want);
    assert_eq!(
        got[0].2,
        vec![None, Some(Cell::Integer(1)), Some(Cell::String("a".into()))]
    );
    assert_eq!(got[1].2[0], Some(Cell::Float(2.0)));
    assert_eq!(got[2].2[0], Some(Cell::Float(7.0)));
    assert_eq!(
        got[4].2,
        vec![Some(Cell::Float(5.0)), None, Some(Cell::String("e".into()))]
    );
    assert_eq!(got[5].1, 30, "the table's later point");
    assert_eq!(
        got[5].2,
        vec![Some(Cell::Float(6.0)), None, Some(Cell::String("f".into()))]
    );
}

/// Equal string values of different series, and of one series over merges,
/// are one shared copy (`strings.rs`); a dictionary column's too.
#[test]
fn equal_strings_share_one_copy_across_series_and_merges() {
    let host = |t: &TableLasts, sid: u64| match t.series[&sid].cell(t.column("host").unwrap()) {
        Some(Cell::String(s)) => s.clone(),
        other => panic!("{other:?}"),
    };
    let mut t = TableLasts::default();
    t.merge(&batch(&[
        (1, 10, 1, 0, "x86", Some(1.0)),
        (2, 10, 1, 1, "x86", Some(1.0)),
        (3, 10, 1, 2, "arm", Some(1.0)),
    ]))
    .unwrap();
    t.merge(&batch(&[(4, 20, 2, 0, "x86", Some(1.0))])).unwrap();
    assert!(Arc::ptr_eq(&host(&t, 1), &host(&t, 2)));
    assert!(Arc::ptr_eq(&host(&t, 1), &host(&t, 4)), "over merges");
    assert!(!Arc::ptr_eq(&host(&t, 1), &host(&t, 3)));
    assert_eq!(&*host(&t, 3), "arm");
    // A dictionary-encoded column (the engine's LowCardinality).
    let b = batch(&[(5, 30, 3, 0, "x86", Some(1.0))]);
    let mut columns = b.columns().to_vec();
    let dict: arrow::array::DictionaryArray<arrow::datatypes::Int32Type> =
        vec!["x86"].into_iter().collect();
    columns[4] = Arc::new(dict);
    let mut fields: Vec<_> = b.schema().fields().iter().cloned().collect();
    fields[4] = Arc::new(Field::new(
        "host",
        DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
        false,
    ));
    t.merge(&RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap())
        .unwrap();
    assert!(Arc::ptr_eq(&host(&t, 1), &host(&t, 5)), "dictionary");
}

/// A read's points stay as it took them while inserts end (they merge into
/// a copy, one a read), and the table has every insert.
#[test]
fn a_read_holds_its_points_while_inserts_merge_into_a_copy() {
    let lasts = LastPoints::new(100);
    let key = ("db".to_string(), "m".to_string());
    lasts
        .tables
        .lock()
        .insert(key, Arc::new(Mutex::new(State::Ready(Arc::default()))));
    lasts.apply("db", "m", &batch(&[(1, 10, 1, 0, "a", Some(1.0))]));
    let read = |lasts: &LastPoints| {
        lasts
            .read_now("db", "m", |t| t.clone())
            .expect("loaded, nothing holds the lock")
    };
    let usage = |t: &TableLasts, sid: u64| {
        let p = &t.series[&sid];
        (p.time, p.cell(t.column("usage").unwrap()).cloned())
    };
    let held = read(&lasts);
    let held_again = read(&lasts);
    assert!(Arc::ptr_eq(&held, &held_again), "no copy without an insert");
    drop(held_again);
    lasts.apply(
        "db",
        "m",
        &batch(&[(1, 20, 2, 0, "a", Some(2.0)), (2, 20, 2, 1, "b", Some(3.0))]),
    );
    lasts.apply("db", "m", &batch(&[(2, 30, 3, 0, "b", Some(4.0))]));
    assert_eq!(
        usage(&held, 1),
        (10, Some(Cell::Float(1.0))),
        "as it was read"
    );
    assert_eq!(held.series.len(), 1);
    let now = read(&lasts);
    assert!(!Arc::ptr_eq(&held, &now));
    assert_eq!(usage(&now, 1), (20, Some(Cell::Float(2.0))));
    assert_eq!(usage(&now, 2), (30, Some(Cell::Float(4.0))));
    assert_eq!(lasts.cached_series(), 2);
    // With no read holding it, an insert merges in place.
    drop((held, now));
    let before = Arc::as_ptr(&read(&lasts));
    lasts.apply("db", "m", &batch(&[(2, 40, 4, 0, "b", Some(5.0))]));
    let after = read(&lasts);
    assert_eq!(Arc::as_ptr(&after), before, "merged in place");
    assert_eq!(usage(&after, 2), (40, Some(Cell::Float(5.0))));
}
