//! `cargo bench -p flush --bench flush`: committed WAL entries of the standard
//! shape → the flusher → chDB, against the matching raw engine insert of the
//! same rows, in the same process and run, at 1 and N connections.
//!
//! Standard shape: requests of 50,000 points over 1,000 hosts × {cpu, mem,
//! disk, net}, 6 fields (4 float, 1 integer, 1 boolean) and 2 tags. The
//! flusher path includes coalescing per measurement, the `__seq`/`__row`
//! columns, table/column checks and the insert; it excludes
//! HTTP, parsing and the WAL (entries arrive as the WAL would hand them over,
//! in memory). The raw path inserts pre-coalesced batches of the same rows
//! (built before timing) straight through the FFI — `chdb_raw`'s recipe.
//!
//! Arguments (after `--`, or env): `--points N` / `FLUSH_BENCH_POINTS`
//! (default 4,000,000), `--workers N` / `FLUSH_BENCH_WORKERS` (default: cores).
//! Writes `test_results/latest/flush.{md,json}`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array,
};
use engine::arrow::datatypes::{DataType, Field, Schema};
use engine::table::{coalesce, Part};
use engine::{quote_ident, Engine, EngineAccess, EngineConfig, SqlConfig};
use flush::{FlushConfig, FlushWrite, FlushedLog, Flusher, MarkError, ReadState, Resume};

const MEASUREMENTS: [&str; 4] = ["cpu", "mem", "disk", "net"];
const HOSTS: usize = 1000;
const PER_REQUEST: usize = 50_000;

fn arg(name: &str, env: &str, default: usize) -> usize {
    let mut it = std::env::args();
    while let Some(a) = it.next() {
        if a == name {
            return it.next().and_then(|v| v.parse().ok()).unwrap_or(default);
        }
    }
    std::env::var(env)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One request: PER_REQUEST points of one measurement, in ingest's layout.
fn request(m: usize, r: usize) -> RecordBatch {
    let n = PER_REQUEST;
    let base = 1_700_000_000_000_000_000i64 + (r as i64) * 10_000_000_000;
    let host: Vec<String> = (0..n).map(|i| format!("host-{:04}", i % HOSTS)).collect();
    let region: Vec<&str> = (0..n).map(|i| ["eu", "us", "ap"][i % 3]).collect();
    let mut fields = vec![
        Field::new("time", DataType::Int64, false),
        Field::new("series_id", DataType::UInt64, false),
        Field::new("host", DataType::Utf8, false),
        Field::new("region", DataType::Utf8, false),
    ];
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(
            (0..n).map(|i| base + (i / HOSTS) as i64 * 1_000_000_000),
        )),
        Arc::new(UInt64Array::from_iter_values((0..n).map(|i| {
            ((m * HOSTS + i % HOSTS) as u64).wrapping_mul(0x9E3779B97F4A7C15)
        }))),
        Arc::new(StringArray::from(host)),
        Arc::new(StringArray::from(region)),
    ];
    for f in 0..4 {
        fields.push(Field::new(format!("f{f}"), DataType::Float64, true));
        cols.push(Arc::new(Float64Array::from_iter_values(
            (0..n).map(|i| (i % 100) as f64 + f as f64),
        )));
    }
    fields.push(Field::new("count", DataType::Int64, true));
    cols.push(Arc::new(Int64Array::from_iter_values(
        (0..n).map(|i| i as i64),
    )));
    fields.push(Field::new("ok", DataType::Boolean, true));
    cols.push(Arc::new(BooleanArray::from_iter(
        (0..n).map(|i| Some(i % 2 == 0)),
    )));
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
}

/// The bench has no WAL: the watermark goes nowhere.
struct NoLog;

impl FlushedLog for NoLog {
    fn mark_flushed(&self, _seq: u64) -> Result<(), MarkError> {
        Ok(())
    }
}

struct Row {
    variant: String,
    connections: usize,
    points: usize,
    seconds: f64,
}

fn main() {
    let points = arg("--points", "FLUSH_BENCH_POINTS", 4_000_000).max(PER_REQUEST);
    let workers = arg(
        "--workers",
        "FLUSH_BENCH_WORKERS",
        std::thread::available_parallelism().map_or(2, |n| n.get()),
    )
    .max(1);
    let requests = points / PER_REQUEST;
    let points = requests * PER_REQUEST;
    let dir = tempfile::tempdir().unwrap();
    let sql = SqlConfig::default();
    let reads = ReadState::new(sql.last_point_cache_series);
    let engine = Engine::open_with(
        &EngineConfig {
            data_dir: dir.path().join("chdb"),
            connections: workers,
        },
        &EngineAccess::new([]),
        sql,
        reads.admin_writes(),
    )
    .unwrap();

    eprintln!("flush bench: {points} points in {requests} requests of {PER_REQUEST}, up to {workers} connections");
    eprintln!("building requests (untimed)...");
    let batches: Vec<(usize, RecordBatch)> = (0..requests)
        .map(|r| (r % MEASUREMENTS.len(), request(r % MEASUREMENTS.len(), r)))
        .collect();
    let mut results = Vec::new();
    let mut run_no = 0;
    for conns in [1, workers] {
        // Raw: the same rows, pre-coalesced into ≤200k-row batches per
        // measurement (as the flusher would), built before timing.
        run_no += 1;
        let db = format!("raw_{run_no}");
        let mut jobs: Vec<(String, RecordBatch)> = Vec::new();
        let mut tables = engine::table::TableCache::default();
        for (mi, m) in MEASUREMENTS.iter().enumerate() {
            let parts: Vec<Part> = batches
                .iter()
                .enumerate()
                .filter(|(_, (bm, _))| *bm == mi)
                .map(|(seq, (_, b))| Part {
                    seq: seq as u64 + 1,
                    batch: b.clone(),
                })
                .collect();
            let table = format!("{}.{}", quote_ident(&db), quote_ident(m));
            for chunk in parts.chunks(4) {
                let (b, cols) = coalesce(chunk).unwrap();
                // Idempotent: creates the table with the first chunk's columns.
                tables.ensure(&engine.connection(), &db, m, &cols).unwrap();
                jobs.push((table.clone(), b));
            }
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let start = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..conns {
                s.spawn(|| {
                    let conn = engine.connection();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((t, b)) = jobs.get(i) else { break };
                        let settings = engine::table::single_part_settings(
                            b.num_rows(),
                            FlushConfig::default().insert_threads,
                        );
                        conn.insert_batch(t, b.clone(), &settings).unwrap();
                    }
                });
            }
        });
        let raw = start.elapsed().as_secs_f64();
        verify(&engine, &db, points);
        results.push(Row {
            variant: "raw insert of the same rows (chdb_raw recipe)".into(),
            connections: conns,
            points,
            seconds: raw,
        });

        // The flusher, fed as the WAL feeds it.
        run_no += 1;
        let db = format!("flush_{run_no}");
        let (tx, rx) = crossbeam_channel::unbounded::<(u64, FlushWrite)>();
        let flusher = Flusher::start(
            engine.clone(),
            reads.clone(),
            FlushConfig {
                workers: conns,
                max_age_ms: 100,
                ..Default::default()
            },
            rx,
            Resume::default(),
            Arc::new(NoLog),
        )
        .unwrap();
        let start = Instant::now();
        for (seq, (mi, b)) in batches.iter().enumerate() {
            tx.send((
                seq as u64 + 1,
                FlushWrite {
                    db: db.clone(),
                    tables: vec![(MEASUREMENTS[*mi].to_string(), b.clone())],
                },
            ))
            .unwrap();
        }
        while flusher.status().flushed_seq < requests as u64 {
            std::thread::sleep(Duration::from_millis(2));
        }
        let secs = start.elapsed().as_secs_f64();
        drop(tx);
        flusher.join();
        verify(&engine, &db, points);
        results.push(Row {
            variant: "flusher: entries → coalesce → insert".into(),
            connections: conns,
            points,
            seconds: secs,
        });
    }
    for r in &results {
        eprintln!(
            "  {:<48} {} conn {:>12.0} points/s ({:.3} s)",
            r.variant,
            r.connections,
            r.points as f64 / r.seconds,
            r.seconds
        );
    }
    report(&results, workers);
}

fn verify(engine: &Engine, db: &str, points: usize) {
    let total: usize = MEASUREMENTS
        .iter()
        .map(|m| {
            engine
                .query_text(&format!(
                    "SELECT count() FROM {}.{}",
                    quote_ident(db),
                    quote_ident(m)
                ))
                .unwrap()
                .trim()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    assert_eq!(total, points, "{db}: row count");
}

fn report(results: &[Row], workers: usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = std::env::var("FLUSH_BENCH_OUT")
        .map(Into::into)
        .unwrap_or(root.join("test_results/latest"));
    std::fs::create_dir_all(&out).unwrap();
    let sh = |c: &str, a: &[&str]| {
        std::process::Command::new(c)
            .args(a)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let commit = sh("git", &["rev-parse", "--short", "HEAD"]);
    let date = sh("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]);
    let mut md = format!(
        "# flush: WAL entries → chDB\n\nStandard shape: 50,000-point requests, 1,000 hosts × cpu/mem/disk/net, 2 tags, \
         6 fields. Flusher includes coalescing, `__seq`/`__row`, table checks and the insert; \
         excludes HTTP, parsing and the WAL. Raw = the same rows pre-coalesced and inserted straight through the FFI. \
         Commit {commit}, {date}, up to {workers} connections.\n\n\
         | path | connections | points | seconds | points/s | flusher ÷ raw |\n|---|---:|---:|---:|---:|---:|\n"
    );
    let mut json_rows = Vec::new();
    for pair in results.chunks(2) {
        let ratio =
            (pair[1].points as f64 / pair[1].seconds) / (pair[0].points as f64 / pair[0].seconds);
        for (i, r) in pair.iter().enumerate() {
            let rate = r.points as f64 / r.seconds;
            md.push_str(&format!(
                "| {} | {} | {} | {:.3} | {:.0} | {} |\n",
                r.variant,
                r.connections,
                r.points,
                r.seconds,
                rate,
                if i == 1 {
                    format!("{:.0}%", ratio * 100.0)
                } else {
                    String::new()
                }
            ));
            json_rows.push(format!(
                "{{\"variant\": {:?}, \"connections\": {}, \"points\": {}, \"seconds\": {:.6}, \"points_per_s\": {:.0}, \"ratio_to_raw\": {}}}",
                r.variant, r.connections, r.points, r.seconds, rate, if i == 1 { format!("{ratio:.4}") } else { "null".into() }
            ));
        }
    }
    std::fs::write(out.join("flush.md"), md).unwrap();
    std::fs::write(
        out.join("flush.json"),
        format!(
            "{{\"benchmark\": \"flush\", \"commit\": {commit:?}, \"date\": {date:?}, \"results\": [\n  {}\n]}}\n",
            json_rows.join(",\n  ")
        ),
    )
    .unwrap();
    eprintln!("wrote {}/flush.{{md,json}}", out.display());
}
