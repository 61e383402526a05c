//! `cargo test -p storage --release hot_insert_cost -- --ignored --nocapture`:
//! what the hot store's insert costs per point, what it holds per value, and
//! what a dashboard's read of it costs, on TSBS cpu-only's shape (200 hosts,
//! 10 fields, a point per host every 10 s for 24 h, 2,000 points per batch,
//! times ascending per series, each field a random walk clamped to [0, 100]),
//! plain (no chunk ever sealed: the layout before chunks) and sealed.

use std::sync::Arc;
use std::time::Instant;

use engine::arrow::array::{Array, UInt64Array};
use engine::arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use engine::arrow::datatypes::{DataType, Field, Schema};

use super::column::{Plain, Values};
use super::table::Table;

const HOSTS: usize = 200;
const FIELDS: usize = 10;
const STEP: i64 = 10_000_000_000;
const POINTS: usize = 8640;
const DAY: i64 = 86_400_000_000_000;

/// TSBS's batches: integers (what its cpu-only data writes), or floats: the
/// walk itself (every mantissa bit noise), or rounded to a tenth (a gauge's
/// usual precision).
fn batches(floats: bool, tenths: bool) -> Vec<RecordBatch> {
    let kind = if floats {
        DataType::Float64
    } else {
        DataType::Int64
    };
    let mut schema = vec![
        Field::new("time", DataType::Int64, false),
        Field::new("series_id", DataType::UInt64, false),
        Field::new("hostname", DataType::Utf8, false),
    ];
    for f in 0..FIELDS {
        schema.push(Field::new(format!("usage_{f}"), kind.clone(), true));
    }
    let schema = Arc::new(Schema::new(schema));
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut uniform = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut walks = vec![50.0f64; HOSTS * FIELDS];
    let per_batch = 2000 / HOSTS;
    (0..POINTS / per_batch)
        .map(|b| {
            let rows = per_batch * HOSTS;
            let at = |r: usize| (b * per_batch + r / HOSTS) as i64 * STEP;
            let mut cols: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from_iter_values((0..rows).map(at))),
                Arc::new(UInt64Array::from_iter_values(
                    (0..rows).map(|r| (r % HOSTS) as u64),
                )),
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|r| format!("host_{}", r % HOSTS)),
                )),
            ];
            let mut values = vec![vec![0.0; rows]; FIELDS];
            for r in 0..rows {
                for (f, v) in values.iter_mut().enumerate() {
                    let w = &mut walks[(r % HOSTS) * FIELDS + f];
                    *w = (*w + (uniform() - 0.5) * 2.0).clamp(0.0, 100.0);
                    v[r] = *w;
                }
            }
            for v in values {
                cols.push(if floats && tenths {
                    Arc::new(Float64Array::from_iter_values(
                        v.iter().map(|x| (x * 10.0).round() / 10.0),
                    ))
                } else if floats {
                    Arc::new(Float64Array::from(v))
                } else {
                    Arc::new(Int64Array::from_iter_values(
                        v.iter().map(|x| x.round() as i64),
                    ))
                });
            }
            RecordBatch::try_new(schema.clone(), cols).unwrap()
        })
        .collect()
}

/// Nanoseconds per run of `read` over `series` series × `span` ns of the day's
/// last `span`: decode (where sealed) and sum one field, as a `mean()` does.
fn read_cost(t: &Table, series: u64, span: i64, runs: u32) -> f64 {
    let max = (POINTS as i64 - 1) * STEP;
    let min = max - span + 1;
    let mut scratch = Plain::default();
    let started = Instant::now();
    let mut seen = 0.0;
    for _ in 0..runs {
        for id in 0..series {
            let p = t.series[&id].points(min, max, &[0], &mut scratch);
            let span = p.span(min, max);
            let Some(c) = &p.columns[0] else { continue };
            seen += match &c.values {
                Values::Float(v) => v[span].iter().sum::<f64>(),
                Values::Integer(v) => v[span].iter().sum::<i64>() as f64,
                _ => 0.0,
            };
        }
    }
    assert!(seen > 0.0);
    started.elapsed().as_nanos() as f64 / f64::from(runs)
}

#[test]
#[ignore]
fn hot_insert_cost() {
    for (floats, tenths) in [(false, false), (true, false), (true, true)] {
        let batches = batches(floats, tenths);
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        for chunk in [usize::MAX / 2, 256, 512, 1024] {
            let mut t = Table::new();
            t.chunk = chunk;
            let started = Instant::now();
            for b in &batches {
                assert!(t.insert(b, DAY));
            }
            let took = started.elapsed();
            let layout = if chunk > POINTS {
                "plain".to_string()
            } else {
                format!("chunks of {chunk}")
            };
            println!(
                "{}, {layout}: {:.0} ns per point, {:.2} bytes per value held ({} bytes, \
                 {} values, {:.1} per point); read 1 series × 1 h {:.1} µs, 8 series × 12 h {:.1} µs",
                match (floats, tenths) {
                    (false, _) => "integers",
                    (true, false) => "floats",
                    (true, true) => "floats in tenths",
                },
                took.as_nanos() as f64 / rows as f64,
                t.bytes as f64 / t.values as f64,
                t.bytes,
                t.values,
                t.bytes as f64 / rows as f64,
                read_cost(&t, 1, 3600 * 1_000_000_000, 2000) / 1e3,
                read_cost(&t, 8, 12 * 3600 * 1_000_000_000, 50) / 1e3,
            );
            // What is held reads back as written: the last batch's values.
            let last = batches.last().unwrap();
            let mut scratch = Plain::default();
            let p = t.series[&0].points(i64::MIN, i64::MAX, &[0], &mut scratch);
            assert_eq!(p.times.len(), POINTS);
            let col = last.column(3);
            let row = last.num_rows() - HOSTS;
            match &p.columns[0].as_ref().unwrap().values {
                Values::Float(v) => assert_eq!(
                    v[POINTS - 1].to_bits(),
                    col.as_any()
                        .downcast_ref::<Float64Array>()
                        .unwrap()
                        .value(row)
                        .to_bits()
                ),
                Values::Integer(v) => assert_eq!(
                    v[POINTS - 1],
                    col.as_any()
                        .downcast_ref::<Int64Array>()
                        .unwrap()
                        .value(row)
                ),
                _ => panic!("not numbers"),
            }
        }
    }
}
