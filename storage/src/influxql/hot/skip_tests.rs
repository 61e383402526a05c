//! A sealed chunk skipped by its bounds (`Chosen::points`) must never hide a
//! point that passes the conditions: for random chunks (floats with NaN and
//! nulls, integers with nulls, a field the chunk lacks) and random comparisons
//! (every operator, integer and float literals, on either kind, under `AND`
//! and `OR` with a tag), a chunk the bounds refuse has no passing point. And
//! the bounds are tight where they can be: for `<`, `<=`, `>`, `>=` a chunk
//! they keep has one. A read sifting chunks by their decoded condition
//! fields (`Series::points_sifted`) gives every passing point a whole read gives.

use std::sync::Arc;

use engine::arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, UInt64Array};
use engine::arrow::datatypes::{DataType, Field, Schema};
use ingest::{FieldType, MeasurementSchema};
use proptest::prelude::*;

use super::cond::Cond;
use crate::hot::table::{Column, Plain, Sift, Table, Values};

/// One point: a float (`None`: null) and an integer.
type Point = (Option<f64>, Option<i64>);

fn schema() -> MeasurementSchema {
    MeasurementSchema {
        name: "m".into(),
        tag_keys: vec!["host".into()],
        fields: vec![
            ("f".into(), FieldType::Float),
            ("g".into(), FieldType::Float),
            ("i".into(), FieldType::Integer),
        ],
    }
}

/// The points as one series' table, sealed into chunks of `chunk` points
/// (field `g` is never written: no chunk has it).
fn table(points: &[Point], chunk: usize) -> Table {
    let schema = Schema::new(vec![
        Field::new("time", DataType::Int64, false),
        Field::new("series_id", DataType::UInt64, false),
        Field::new("f", DataType::Float64, true),
        Field::new("i", DataType::Int64, true),
    ]);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(0..points.len() as i64)),
        Arc::new(UInt64Array::from_iter_values(points.iter().map(|_| 1))),
        Arc::new(Float64Array::from_iter(points.iter().map(|p| p.0))),
        Arc::new(Int64Array::from_iter(points.iter().map(|p| p.1))),
    ];
    let batch = RecordBatch::try_new(Arc::new(schema), cols).unwrap();
    let mut t = Table::new();
    t.chunk = chunk;
    assert!(t.insert(&batch, i64::MAX));
    t
}

fn value() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(f64::NAN)),
        1 => Just(Some(-0.0)),
        8 => (-20i32..20, 0..4u8).prop_map(|(n, q)| Some(f64::from(n) + f64::from(q) / 4.0)),
    ]
}

fn point() -> impl Strategy<Value = Point> {
    (
        value(),
        prop_oneof![1 => Just(None), 6 => (-20i64..20).prop_map(Some)],
    )
}

/// A condition, and whether the bounds decide it exactly (one `<`, `<=`,
/// `>`, `>=`: the smallest or largest value passes if any does).
fn condition() -> impl Strategy<Value = (String, bool)> {
    let op = prop_oneof![
        Just("<"),
        Just("<="),
        Just(">"),
        Just(">="),
        Just("="),
        Just("!=")
    ];
    let lit = prop_oneof![
        (-22i64..22).prop_map(|n| n.to_string()),
        (-22i32..22, 0..4u8).prop_map(|(n, q)| format!("{:.2}", f64::from(n) + f64::from(q) / 4.0)),
    ];
    let field = prop_oneof![Just("f"), Just("i"), Just("g")];
    let cmp = (field, op, lit).prop_map(|(f, op, lit)| format!("{f} {op} {lit}"));
    (cmp.clone(), cmp, 0..4u8).prop_map(|(a, b, how)| match how {
        0 => {
            let tight = !a.contains('=');
            (a, tight)
        }
        1 => (format!("{a} AND {b}"), false),
        2 => (format!("{a} OR {b}"), false),
        _ => (format!("({a} OR host = 'h9') AND {b}"), false),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_chunk_refused_by_its_bounds_has_no_passing_point(
        points in prop::collection::vec(point(), 1..80),
        chunk in 1usize..12,
        (text, tight) in condition(),
    ) {
        let t = table(&points, chunk);
        let s = &t.series[&1];
        let cond = Cond::of(&influxql::parse_expr(&text).unwrap(), &schema());
        prop_assume!(cond.is_some(), "not a condition the store reads: {}", text);
        let mut cond = cond.unwrap();
        cond.bind(&t.fields);
        let fields: Vec<usize> = (0..t.fields.len()).collect();
        // Each sealed chunk alone: a read of its span.
        for c in s.sealed_chunks() {
            let mut scratch = Plain::default();
            let p = s.points_where(c.min, c.max, &fields, &mut scratch, |k| std::ptr::eq(k, c));
            let decided = cond.decide(s);
            let passing = p.span(c.min, c.max).filter(|&i| decided.on_point(p, i)).count();
            let kept = cond.may_pass(s, &|i| c.bounds(i));
            prop_assert!(kept || passing == 0, "{text}: skipped a chunk with {passing} passing");
            if tight {
                prop_assert!(!kept || passing > 0, "{text}: kept a chunk without one");
            }
        }
    }

    #[test]
    fn a_sifted_read_gives_every_passing_point_a_whole_read_gives(
        points in prop::collection::vec(point(), 1..80),
        chunk in 1usize..12,
        (text, _) in condition(),
        (from, len) in (0i64..80, 0i64..80),
    ) {
        let t = table(&points, chunk);
        let s = &t.series[&1];
        let cond = Cond::of(&influxql::parse_expr(&text).unwrap(), &schema());
        prop_assume!(cond.is_some(), "not a condition the store reads: {}", text);
        let mut cond = cond.unwrap();
        cond.bind(&t.fields);
        let (min, max) = (from, from + len);
        let fields: Vec<usize> = (0..t.fields.len()).collect();
        let mut first = Vec::new();
        cond.fields(&mut first);
        let decided = cond.decide(s);
        let passes = |p: &Plain, i: usize| decided.on_point(p, i);
        let sift = Sift { fields: &first, passes: Some(&passes) };
        let (mut whole, mut sifted) = (Plain::default(), Plain::default());
        let w = s.points_where(min, max, &fields, &mut whole, |_| true);
        let p = s.points_sifted(min, max, &fields, &mut sifted, |_| true, &sift);
        for c in p.columns.iter().flatten() {
            prop_assert_eq!(c.valid.len(), p.times.len(), "{}: a column of another length", text);
        }
        prop_assert_eq!(passing(w, min, max, &passes), passing(p, min, max, &passes), "{}", text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// A condition's test of a range of points at once (`Decided::mark`, a
    /// loop per column) says what it says of each point alone
    /// (`Decided::on_point`): NaN, -0.0, nulls, ties with the literal, a
    /// field the series lacks, `AND`/`OR` with a tag.
    #[test]
    fn a_condition_marks_a_range_as_it_tests_each_point(
        points in prop::collection::vec(point(), 1..80),
        (text, _) in condition(),
        (from, len) in (0usize..80, 0usize..80),
    ) {
        let t = table(&points, 1024);
        let s = &t.series[&1];
        let cond = Cond::of(&influxql::parse_expr(&text).unwrap(), &schema());
        prop_assume!(cond.is_some(), "not a condition the store reads: {}", text);
        let mut cond = cond.unwrap();
        cond.bind(&t.fields);
        let fields: Vec<usize> = (0..t.fields.len()).collect();
        let mut scratch = Plain::default();
        let p = s.points(i64::MIN, i64::MAX, &fields, &mut scratch);
        let n = p.times.len();
        let range = from.min(n)..(from + len).min(n);
        let decided = cond.decide(s);
        let mut marks = Vec::new();
        decided.mark(p, range.clone(), &mut marks);
        let each: Vec<bool> = range.map(|i| decided.on_point(p, i)).collect();
        prop_assert_eq!(marks, each, "{}", text);
    }
}

/// The points of `p` in `[min, max]` that pass: time, then each field's
/// value's bits (`None`: null).
fn passing(
    p: &Plain,
    min: i64,
    max: i64,
    passes: &dyn Fn(&Plain, usize) -> bool,
) -> Vec<(i64, Vec<Option<u64>>)> {
    let bits = |c: &Column, i: usize| {
        c.valid[i].then(|| match &c.values {
            Values::Float(v) => v[i].to_bits(),
            Values::Integer(v) => v[i] as u64,
            _ => unreachable!("floats and integers only"),
        })
    };
    p.span(min, max)
        .filter(|&i| passes(p, i))
        .map(|i| {
            (
                p.times[i],
                p.columns
                    .iter()
                    .map(|c| c.as_ref().and_then(|c| bits(c, i)))
                    .collect(),
            )
        })
        .collect()
}

/// A sifted read decodes the other fields of a chunk, and copies those of
/// the open tail, only as far as the last point that passes (nulls after
/// it), and copies the open tail only as far as the range's end: TSBS
/// `high-cpu-1` shows 10 fields of the few points over a threshold.
#[test]
fn a_sifted_read_stops_the_other_fields_at_the_last_point_passing() {
    // 40 points, `i` over 5 at points 3 and 33 only; chunks of 8 (the
    // newest points stay in the open tail).
    let points: Vec<Point> = (0..40)
        .map(|k| (Some(k as f64), Some(if k == 3 || k == 33 { 9 } else { 0 })))
        .collect();
    let t = table(&points, 8);
    let s = &t.series[&1];
    assert!(s.sealed_chunks().len() >= 3 && s.oldest() == Some(0));
    let open_from = s.sealed_chunks().last().unwrap().max + 1;
    assert!(open_from <= 33, "point 33 is in the open tail");
    let mut cond = Cond::of(&influxql::parse_expr("i > 5").unwrap(), &schema()).unwrap();
    cond.bind(&t.fields);
    let decided = cond.decide(s);
    let passes = |p: &Plain, i: usize| decided.on_point(p, i);
    let mut first = Vec::new();
    cond.fields(&mut first);
    let sift = Sift {
        fields: &first,
        passes: Some(&passes),
    };
    let fields: Vec<usize> = (0..t.fields.len()).collect();
    let f = t.fields.iter().position(|n| n == "f").unwrap();
    let (min, max) = (0, 35);
    let mut scratch = Plain::default();
    let p = s.points_sifted(min, max, &fields, &mut scratch, |_| true, &sift);
    assert_eq!(
        p.times.last(),
        Some(&max),
        "the open tail copied past the range"
    );
    let shown = |time: i64| {
        let i = p.times.iter().position(|&x| x == time).unwrap();
        p.columns[f].as_ref().unwrap().valid[i]
    };
    // The passing points have every field; the points after the last
    // passing one in its chunk, and in the open tail, have none decoded.
    assert!(shown(3) && shown(33));
    assert!(
        (4..8).all(|k| !shown(k)),
        "decoded past the chunk's last passing point"
    );
    assert!(
        !shown(34) && !shown(35),
        "copied past the open tail's last passing point"
    );
    for c in p.columns.iter().flatten() {
        assert_eq!(c.valid.len(), p.times.len());
    }
}

/// One point of [`wide`]: the condition's integer `i`, another integer
/// `j` (`None`: null) and a float `f`.
type Wide = (i64, Option<i64>, f64);

fn wide_schema() -> MeasurementSchema {
    MeasurementSchema {
        name: "m".into(),
        tag_keys: vec!["host".into()],
        fields: vec![
            ("i".into(), FieldType::Integer),
            ("j".into(), FieldType::Integer),
            ("f".into(), FieldType::Float),
        ],
    }
}

/// The points at `times` as one batch.
fn wide_batch(times: impl Iterator<Item = i64>, points: &[Wide]) -> RecordBatch {
    let schema = Schema::new(vec![
        Field::new("time", DataType::Int64, false),
        Field::new("series_id", DataType::UInt64, false),
        Field::new("i", DataType::Int64, true),
        Field::new("j", DataType::Int64, true),
        Field::new("f", DataType::Float64, true),
    ]);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(times)),
        Arc::new(UInt64Array::from_iter_values(points.iter().map(|_| 1))),
        Arc::new(Int64Array::from_iter_values(points.iter().map(|p| p.0))),
        Arc::new(Int64Array::from_iter(points.iter().map(|p| p.1))),
        Arc::new(Float64Array::from_iter_values(points.iter().map(|p| p.2))),
    ];
    RecordBatch::try_new(Arc::new(schema), cols).unwrap()
}

/// The points (point `k` at time `k`) as one series' table sealed into
/// chunks of `chunk` points, then `rewrites` written over (each its time).
fn wide(points: &[Wide], rewrites: &[(i64, Wide)], chunk: usize) -> Table {
    let mut t = Table::new();
    t.chunk = chunk;
    assert!(t.insert(&wide_batch(0..points.len() as i64, points), i64::MAX));
    for (time, p) in rewrites {
        assert!(t.insert(&wide_batch(std::iter::once(*time), &[*p]), i64::MAX));
    }
    t
}

/// A sifted read of `[min, max]` with condition `text`, and a whole one:
/// their passing points, and the sifted read's points.
fn sift_both(
    t: &Table,
    text: &str,
    (min, max): (i64, i64),
) -> (PassingPoints, PassingPoints, Plain) {
    let s = &t.series[&1];
    let mut cond = Cond::of(&influxql::parse_expr(text).unwrap(), &wide_schema()).unwrap();
    cond.bind(&t.fields);
    let fields: Vec<usize> = (0..t.fields.len()).collect();
    let mut first = Vec::new();
    cond.fields(&mut first);
    let decided = cond.decide(s);
    let passes = |p: &Plain, i: usize| decided.on_point(p, i);
    let sift = Sift {
        fields: &first,
        passes: Some(&passes),
    };
    let (mut whole, mut sifted) = (Plain::default(), Plain::default());
    let w = s.points_where(min, max, &fields, &mut whole, |_| true);
    let w = passing(w, min, max, &passes);
    let p = s.points_sifted(min, max, &fields, &mut sifted, |_| true, &sift);
    for c in p.columns.iter().flatten() {
        assert_eq!(
            c.valid.len(),
            p.times.len(),
            "{text}: a column of another length"
        );
    }
    let got = passing(p, min, max, &passes);
    (w, got, sifted)
}

type PassingPoints = Vec<(i64, Vec<Option<u64>>)>;

fn wide_point() -> impl Strategy<Value = Wide> {
    (
        prop_oneof![12 => 0i64..10, 1 => 90i64..100],
        prop_oneof![1 => Just(None), 400 => (-1000i64..1000).prop_map(Some)],
        -5i32..5,
    )
        .prop_map(|(i, j, f)| (i, j, f64::from(f)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Chunks long enough for marks (`codec::Mark`, one every 256 values):
    /// the other integer fields decoded only over the blocks with a passing
    /// point give each passing point what a whole read gives, with nulls,
    /// rewritten points and ranges starting and ending inside blocks.
    #[test]
    fn a_sifted_read_decoding_blocks_with_marks_gives_what_a_whole_read_gives(
        points in prop::collection::vec(wide_point(), 200..1400),
        rewrites in prop::collection::vec((0i64..1400, wide_point()), 0..4),
        chunk in prop_oneof![Just(256usize), Just(257), Just(511), Just(512), 200usize..700],
        (from, len) in (0i64..1400, 0i64..1400),
        threshold in prop_oneof![Just(90i64), Just(95), Just(5), Just(8)],
    ) {
        let t = wide(&points, &rewrites, chunk);
        let (w, p, _) = sift_both(&t, &format!("i > {threshold}"), (from, from + len));
        prop_assert_eq!(w, p);
    }
}

/// Passing points at a block's edges (255, 256, 257 of a chunk) and a block
/// with none between two with some: the sifted read gives each passing point
/// its other integer field, and decodes none of the block without one.
#[test]
fn a_sifted_read_decodes_the_other_integers_only_near_passing_points() {
    let hot = [255, 256, 257, 770, 900];
    let points: Vec<Wide> = (0..1200)
        .map(|k| (if hot.contains(&k) { 99 } else { 1 }, Some(k * 3), 0.0))
        .collect();
    let t = wide(&points, &[], 1024);
    assert!(!t.series[&1].sealed_chunks().is_empty());
    let j = t.fields.iter().position(|n| n == "j").unwrap();
    for (min, max) in [(0, 1099), (100, 1000), (256, 800), (257, 257)] {
        let (w, p, sifted) = sift_both(&t, "i > 90", (min, max));
        assert_eq!(w, p, "[{min}, {max}]");
        let want: Vec<i64> = hot
            .iter()
            .copied()
            .filter(|k| (min..=max).contains(k))
            .collect();
        assert_eq!(p.iter().map(|x| x.0).collect::<Vec<_>>(), want);
        let shown = |time: i64| {
            let at = sifted.times.iter().position(|&x| x == time).unwrap();
            sifted.columns[j].as_ref().unwrap().valid[at]
        };
        // Block 512..768 holds no passing point: none of it decoded; nor
        // the points of a block before its first passing one.
        for k in (512..768).chain(258..260).chain(768..770) {
            if (min..=max).contains(&k) {
                assert!(!shown(k), "[{min}, {max}]: decoded point {k}");
            }
        }
    }
}
