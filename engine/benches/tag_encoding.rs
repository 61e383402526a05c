//! `cargo bench --bench tag_encoding`: what the engine's INSERT costs per row when
//! the tags come as plain Arrow strings (what the flusher sends) against Arrow
//! dictionaries (what a tag column is: a few values repeated), built before timing
//! or cast in the timed loop, one per tag and flush job (the engine refuses a
//! dictionary with repeated values: per-request ones cannot be concatenated as
//! they are), into a table shaped
//! like chingest's (`LowCardinality(String)` tags, `Nullable` fields, the write
//! version, `TABLE_SETTINGS`). Measured apart from everything else: batches built
//! before timing, one connection, process CPU time (`getrusage`) and wall time per
//! variant, interleaved rounds, row counts verified.
//!
//! Environment: `TAG_ENCODING_ROWS` (default 2,000,000), `TAG_ENCODING_BATCH`
//! (200,000: a flush job), `TAG_ENCODING_ROUNDS` (3), `TAG_ENCODING_DIR` (a temp dir).
//! Prints a markdown table; not part of CI.

use std::sync::Arc;
use std::time::Instant;

use engine::arrow::array::{
    ArrayRef, Float64Array, RecordBatch, StringArray, TimestampNanosecondArray, UInt32Array,
    UInt64Array,
};
use engine::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use engine::table::TABLE_SETTINGS;
use engine::{Engine, EngineConfig};

const SERIES: usize = 1000;
const TAGS: [&str; 3] = ["host", "region", "datacenter"];
const FIELDS: usize = 5;
/// Rows per write request: a flush job concatenates several (the dictionaries of each
/// request are concatenated as they are, values repeated).
const REQUEST_ROWS: usize = 50_000;

fn env(k: &str, default: usize) -> usize {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn tag_value(tag: usize, series: usize) -> String {
    match tag {
        0 => format!("host_{series}"),
        1 => format!("region-{}", series % 8),
        _ => format!("dc-{}", series % 24),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Tags {
    Strings,
    Dictionary,
}

fn schema(tags: Tags) -> Arc<Schema> {
    let mut f = vec![
        Field::new("series_id", DataType::UInt64, false),
        Field::new(
            "time",
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            false,
        ),
        Field::new("__seq", DataType::UInt64, false),
        Field::new("__row", DataType::UInt32, false),
    ];
    for t in TAGS {
        let ty = match tags {
            Tags::Strings => DataType::Utf8,
            Tags::Dictionary => {
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
            }
        };
        f.push(Field::new(t, ty, false));
    }
    for i in 0..FIELDS {
        f.push(Field::new(format!("f{i}"), DataType::Float64, true));
    }
    Arc::new(Schema::new(f))
}

/// One request's rows (`start..start + n` of the whole stream), tags as strings.
fn request(start: usize, n: usize, seq: u64) -> RecordBatch {
    let rows = start..start + n;
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from_iter_values(
            rows.clone()
                .map(|i| (i % SERIES) as u64 * 0x9E37_79B9_7F4A_7C15),
        )),
        Arc::new(
            TimestampNanosecondArray::from_iter_values(
                rows.clone()
                    .map(|i| 1_700_000_000_000_000_000 + (i / SERIES) as i64 * 1_000_000_000),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(UInt64Array::from_iter_values(rows.clone().map(|_| seq))),
        Arc::new(UInt32Array::from_iter_values(
            rows.clone().map(|i| (i - start) as u32),
        )),
    ];
    for t in 0..TAGS.len() {
        cols.push(Arc::new(StringArray::from_iter_values(
            rows.clone().map(|i| tag_value(t, i % SERIES)),
        )));
    }
    for f in 0..FIELDS {
        cols.push(Arc::new(Float64Array::from_iter_values(
            rows.clone().map(|i| (i % 997) as f64 * 0.25 + f as f64),
        )));
    }
    RecordBatch::try_new(schema(Tags::Strings), cols).unwrap()
}

/// Flush jobs of `batch` rows, each the concatenation of its requests (tags as
/// strings), or that with each tag column encoded as one dictionary per job (the
/// engine refuses a dictionary with repeated values, so per-request dictionaries
/// would have to be merged).
fn jobs(tags: Tags, rows: usize, batch: usize) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    let mut seq = 0;
    for start in (0..rows).step_by(batch) {
        let n = batch.min(rows - start);
        let parts: Vec<RecordBatch> = (start..start + n)
            .step_by(REQUEST_ROWS)
            .map(|s| {
                seq += 1;
                request(s, REQUEST_ROWS.min(start + n - s), seq)
            })
            .collect();
        let job = engine::arrow::compute::concat_batches(&schema(Tags::Strings), &parts).unwrap();
        out.push(match tags {
            Tags::Strings => job,
            Tags::Dictionary => encode_tags(&job),
        });
    }
    out
}

/// `job` with its tag columns cast to dictionaries.
fn encode_tags(job: &RecordBatch) -> RecordBatch {
    let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let cols: Vec<ArrayRef> = job
        .columns()
        .iter()
        .zip(job.schema().fields())
        .map(|(c, f)| {
            if TAGS.contains(&f.name().as_str()) {
                engine::arrow::compute::cast(c, &dict).unwrap()
            } else {
                c.clone()
            }
        })
        .collect();
    RecordBatch::try_new(schema(Tags::Dictionary), cols).unwrap()
}

fn cpu_secs() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn main() {
    let rows = env("TAG_ENCODING_ROWS", 2_000_000);
    let batch = env("TAG_ENCODING_BATCH", 200_000);
    let rounds = env("TAG_ENCODING_ROUNDS", 3);
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::env::var("TAG_ENCODING_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| tmp.path().to_path_buf());
    let engine = Engine::open(&EngineConfig {
        data_dir: dir.join("chdb"),
        connections: 2,
    })
    .unwrap();
    let conn = engine.connection();
    let variants = [
        ("tags as Arrow strings (today)", Tags::Strings, false),
        (
            "tags as one dictionary per job, built before timing",
            Tags::Dictionary,
            false,
        ),
        (
            "tags cast to a dictionary per job, timed",
            Tags::Strings,
            true,
        ),
    ];
    let data: Vec<Vec<RecordBatch>> = variants
        .iter()
        .map(|(_, t, _)| jobs(*t, rows, batch))
        .collect();
    println!("| round | variant | rows | wall s | CPU s | µs CPU per row | rows/s |");
    println!("|---:|---|---:|---:|---:|---:|---:|");
    for round in 0..rounds {
        for (v, (label, _, cast)) in variants.iter().enumerate() {
            let table = format!("bench.t{round}_{v}");
            engine
                .execute("CREATE DATABASE IF NOT EXISTS bench")
                .unwrap();
            let tags: String = TAGS
                .iter()
                .map(|t| format!(", {t} LowCardinality(String)"))
                .collect();
            let fields: String = (0..FIELDS)
                .map(|f| format!(", f{f} Nullable(Float64)"))
                .collect();
            engine
                .execute(&format!(
                    "CREATE TABLE {table} (time DateTime64(9, 'UTC') CODEC(DoubleDelta, LZ4), \
                     series_id UInt64, __seq UInt64, __row UInt32{tags}{fields}) \
                     ENGINE = MergeTree ORDER BY (series_id, time) SETTINGS {TABLE_SETTINGS}"
                ))
                .unwrap();
            engine
                .execute(&format!("SYSTEM STOP MERGES {table}"))
                .unwrap();
            let (c0, w0) = (cpu_secs(), Instant::now());
            for b in &data[v] {
                let b = if *cast { encode_tags(b) } else { b.clone() };
                conn.insert_batch(&table, b, &[]).expect("insert");
            }
            let (wall, cpu) = (w0.elapsed().as_secs_f64(), cpu_secs() - c0);
            let n: u64 = engine
                .query_text(&format!("SELECT count() FROM {table}"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert_eq!(n as usize, rows, "{label}: rows stored");
            println!(
                "| {round} | {label} | {rows} | {wall:.2} | {cpu:.2} | {:.3} | {:.0} |",
                cpu / rows as f64 * 1e6,
                rows as f64 / wall
            );
            engine.execute(&format!("DROP TABLE {table} SYNC")).unwrap();
        }
    }
}
