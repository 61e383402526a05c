//! `cargo bench -p engine --bench sort_key`: which sort key and partitioning
//! serve typical time-series queries best, measured on the same data.
//!
//! 5,000,000 points of one measurement: 1,000 series (host × region tags),
//! one point per series per minute (~3.5 days), 4 float fields. Each layout
//! gets the same rows (inserted before timing); each query runs 7 times, the
//! median is reported. Writes `sort_key.{md,json}` to `SORT_KEY_OUT` (default:
//! `test_results/latest/` at the workspace root).

use std::sync::Arc;
use std::time::Instant;

use engine::arrow::array::{
    ArrayRef, Float64Array, RecordBatch, StringArray, TimestampNanosecondArray, UInt64Array,
};
use engine::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use engine::{Engine, EngineConfig};

#[path = "support/results.rs"]
mod support;

const SERIES: usize = 1000;
const STEPS: usize = 5000;
const T0: i64 = 1_700_000_000_000_000_000;
const MINUTE: i64 = 60_000_000_000;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(&EngineConfig {
        data_dir: dir.path().join("chdb"),
        connections: 1,
    })
    .unwrap();
    engine.execute("CREATE DATABASE sk").unwrap();
    let layouts = [
        ("ORDER BY (series_id, time)", "ORDER BY (series_id, time)"),
        (
            "ORDER BY (series_id, time), PARTITION BY toDate(time)",
            "PARTITION BY toDate(time) ORDER BY (series_id, time)",
        ),
        (
            "ORDER BY (host, region, time) (tags first)",
            "ORDER BY (host, region, time)",
        ),
        ("ORDER BY time", "ORDER BY time"),
    ];
    eprintln!("sort_key: building {} rows", SERIES * STEPS);
    let batches = data();
    let mut tables = Vec::new();
    for (i, (_, clause)) in layouts.iter().enumerate() {
        let t = format!("sk.t{i}");
        engine
            .execute(&format!(
                "CREATE TABLE {t} (time DateTime64(9, 'UTC'), series_id UInt64, host LowCardinality(String), \
                 region LowCardinality(String), f0 Nullable(Float64), f1 Nullable(Float64), f2 Nullable(Float64), \
                 f3 Nullable(Float64)) ENGINE = MergeTree {clause}"
            ))
            .unwrap();
        for b in &batches {
            engine.insert_batch(&t, b.clone(), &[]).unwrap();
        }
        engine
            .execute(&format!("OPTIMIZE TABLE {t} FINAL"))
            .unwrap();
        tables.push(t);
    }
    let mid = T0 + (STEPS as i64 / 2) * MINUTE;
    let hour = |t: i64| format!("fromUnixTimestamp64Nano(toInt64({t}), 'UTC')");
    let queries = [
        ("last value of every series", "SELECT series_id, argMax(f0, time) FROM {t} GROUP BY series_id FORMAT Null".to_string()),
        ("last value of one series", "SELECT f0 FROM {t} WHERE series_id = 4242 ORDER BY time DESC LIMIT 1 FORMAT Null".to_string()),
        ("1 h aggregate of one host", format!(
            "SELECT avg(f0), max(f1) FROM {{t}} WHERE host = 'host-0042' AND time >= {} AND time < {} FORMAT Null",
            hour(mid), hour(mid + 60 * MINUTE))),
        ("6 h group by tag (region)", format!(
            "SELECT region, avg(f0) FROM {{t}} WHERE time >= {} AND time < {} GROUP BY region FORMAT Null",
            hour(mid), hour(mid + 360 * MINUTE))),
        ("whole range group by tag (region)", "SELECT region, avg(f0) FROM {t} GROUP BY region FORMAT Null".to_string()),
    ];
    let mut md = String::from(
        "# sort_key: table layout vs typical queries\n\n5,000,000 points, 1,000 series (host × region), one per series per minute (~3.5 days), 4 float fields; parts merged (`OPTIMIZE FINAL`) before timing; median of 7 runs, milliseconds, one connection.\n\n| query |",
    );
    for (name, _) in &layouts {
        md.push_str(&format!(" {name} |"));
    }
    md.push_str("\n|---|");
    md.push_str(&"---:|".repeat(layouts.len()));
    md.push('\n');
    let mut json = Vec::new();
    for (qname, q) in &queries {
        md.push_str(&format!("| {qname} |"));
        for (i, t) in tables.iter().enumerate() {
            let sql = q.replace("{t}", t);
            let mut times: Vec<f64> = (0..7)
                .map(|_| {
                    let s = Instant::now();
                    engine.execute(&sql).unwrap();
                    s.elapsed().as_secs_f64() * 1000.0
                })
                .collect();
            times.sort_by(f64::total_cmp);
            let median = times[3];
            eprintln!("  {qname:<36} {:<55} {median:>8.2} ms", layouts[i].0);
            md.push_str(&format!(" {median:.2} |"));
            json.push(format!(
                "{{\"query\": {qname:?}, \"layout\": {:?}, \"median_ms\": {median:.3}}}",
                layouts[i].0
            ));
        }
        md.push('\n');
    }
    support::write_results("SORT_KEY_OUT", "sort_key", &md, &json);
}

fn data() -> Vec<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        Field::new(
            "time",
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            false,
        ),
        Field::new("series_id", DataType::UInt64, false),
        Field::new("host", DataType::Utf8, false),
        Field::new("region", DataType::Utf8, false),
        Field::new("f0", DataType::Float64, true),
        Field::new("f1", DataType::Float64, true),
        Field::new("f2", DataType::Float64, true),
        Field::new("f3", DataType::Float64, true),
    ]));
    // Arrival order: every series' point for one minute, then the next minute.
    let per_batch = 200 * SERIES;
    (0..STEPS * SERIES)
        .step_by(per_batch)
        .map(|start| {
            let rows = start..(start + per_batch).min(STEPS * SERIES);
            let n = rows.len();
            let cols: Vec<ArrayRef> = vec![
                Arc::new(
                    TimestampNanosecondArray::from_iter_values(
                        rows.clone().map(|r| T0 + (r / SERIES) as i64 * MINUTE),
                    )
                    .with_timezone("UTC"),
                ),
                Arc::new(UInt64Array::from_iter_values(
                    rows.clone().map(|r| (r % SERIES) as u64 * 101),
                )),
                Arc::new(StringArray::from_iter_values(
                    rows.clone().map(|r| format!("host-{:04}", r % SERIES)),
                )),
                Arc::new(StringArray::from_iter_values(
                    rows.clone()
                        .map(|r| ["eu", "us", "ap", "sa"][r % SERIES % 4]),
                )),
                Arc::new(Float64Array::from_iter_values(
                    rows.clone().map(|r| (r % 97) as f64),
                )),
                Arc::new(Float64Array::from_iter_values(
                    rows.clone().map(|r| (r % 89) as f64),
                )),
                Arc::new(Float64Array::from_iter_values(
                    rows.clone().map(|r| (r % 83) as f64),
                )),
                Arc::new(Float64Array::from_iter_values(
                    rows.map(|r| (r % 79) as f64),
                )),
            ];
            assert_eq!(cols[0].len(), n);
            RecordBatch::try_new(schema.clone(), cols).unwrap()
        })
        .collect()
}
