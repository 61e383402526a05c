//! `cargo bench --bench chdb_raw`: the raw engine ceiling, measured apart from
//! everything else chingest does.
//!
//! Recipe (after the "99 million rows/s" measurement): Arrow RecordBatches are
//! built before timing; batches go straight through the FFI (registered as an
//! `ArrowStream` table function, read by one `INSERT … SELECT`), one connection
//! per worker, into MergeTree tables keyed by `series_id`. No network, no
//! parsing, no WAL, no fsync. After each variant the row count and checksums
//! are verified by query.
//!
//! Arguments (CLI after `--`, or environment): `--rows N` / `CHDB_RAW_ROWS`
//! (default 10,000,000), `--workers N` / `CHDB_RAW_WORKERS` (default: cores),
//! `--batch N` / `CHDB_RAW_BATCH` (default 200,000), `--data-dir D` /
//! `CHDB_RAW_DIR` (default: a temporary directory), `--out D` /
//! `CHDB_RAW_OUT` (default: `test_results/latest/` at the workspace root).
//!
//! Writes `chdb_raw.md` and `chdb_raw.json` (with a host block) to the out dir.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use engine::arrow::array::{
    ArrayRef, Float64Array, RecordBatch, TimestampNanosecondArray, UInt64Array,
};
use engine::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use engine::{Engine, EngineConfig};

const BASE_TIME_NS: i64 = 1_700_000_000_000_000_000;
const SERIES: u64 = 1000;

struct Args {
    rows: usize,
    workers: usize,
    batch: usize,
    data_dir: Option<PathBuf>,
    out: PathBuf,
}

fn parse_args() -> Args {
    let env = |k: &str| std::env::var(k).ok();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let mut a = Args {
        rows: env("CHDB_RAW_ROWS")
            .and_then(|v| v.parse().ok())
            .unwrap_or(10_000_000),
        workers: env("CHDB_RAW_WORKERS")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
        batch: env("CHDB_RAW_BATCH")
            .and_then(|v| v.parse().ok())
            .unwrap_or(200_000),
        data_dir: env("CHDB_RAW_DIR").map(PathBuf::from),
        out: env("CHDB_RAW_OUT")
            .map(PathBuf::from)
            .unwrap_or(root.join("test_results/latest")),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--rows" => a.rows = val().parse().expect("--rows N"),
            "--workers" => a.workers = val().parse().expect("--workers N"),
            "--batch" => a.batch = val().parse().expect("--batch N"),
            "--data-dir" => a.data_dir = Some(PathBuf::from(val())),
            "--out" => a.out = PathBuf::from(val()),
            // cargo bench passes --bench; ignore harness flags.
            _ => {}
        }
    }
    a.workers = a.workers.max(1);
    a.batch = a.batch.max(1);
    a
}

/// Pre-built columns for `rows` rows: series_id cycles over SERIES, time
/// advances 1 ms per row, `fields` Float64 value columns.
struct Data {
    schema: Arc<Schema>,
    columns: Vec<ArrayRef>,
    rows: usize,
    sum_series: u64,
    sum_offset_ns: i128,
}

fn build_data(rows: usize, fields: usize) -> Data {
    let series: Vec<u64> = (0..rows as u64).map(|i| i % SERIES).collect();
    let times: Vec<i64> = (0..rows as i64)
        .map(|i| BASE_TIME_NS + i * 1_000_000)
        .collect();
    let sum_series = series.iter().sum();
    let sum_offset_ns = times.iter().map(|t| (*t - BASE_TIME_NS) as i128).sum();
    let mut fields_v = vec![
        Field::new("series_id", DataType::UInt64, false),
        Field::new(
            "time",
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            false,
        ),
    ];
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(series)),
        Arc::new(TimestampNanosecondArray::from(times).with_timezone("UTC")),
    ];
    for f in 0..fields {
        let name = if fields == 1 {
            "value".to_string()
        } else {
            format!("f{f}")
        };
        fields_v.push(Field::new(name, DataType::Float64, false));
        columns.push(Arc::new(Float64Array::from_iter_values(
            (0..rows).map(|i| (i % 1000) as f64 * 0.5 + f as f64),
        )));
    }
    Data {
        schema: Arc::new(Schema::new(fields_v)),
        columns,
        rows,
        sum_series,
        sum_offset_ns,
    }
}

fn batches(data: &Data, batch: usize) -> Vec<RecordBatch> {
    let whole = RecordBatch::try_new(data.schema.clone(), data.columns.clone()).unwrap();
    (0..data.rows)
        .step_by(batch)
        .map(|off| whole.slice(off, batch.min(data.rows - off)))
        .collect()
}

fn create_table(engine: &Engine, table: &str, fields: usize) {
    let cols = if fields == 1 {
        "value Float64".to_string()
    } else {
        (0..fields)
            .map(|f| format!("f{f} Float64"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    engine
        .execute(&format!(
            "CREATE TABLE {table} (series_id UInt64, time DateTime64(9, 'UTC'), {cols}) \
             ENGINE = MergeTree ORDER BY (series_id, time)"
        ))
        .unwrap();
}

struct Outcome {
    variant: String,
    rows: usize,
    seconds: f64,
    bytes: usize,
    verified: bool,
    note: String,
}

impl Outcome {
    fn rows_per_s(&self) -> f64 {
        self.rows as f64 / self.seconds
    }
    fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / self.seconds / 1e6
    }
}

fn batch_bytes(b: &[RecordBatch]) -> usize {
    // Logical payload: fixed-width columns, 8 bytes each per row.
    b.iter().map(|b| b.num_rows() * b.num_columns() * 8).sum()
}

/// Inserts `work[i]` into `tables[i % tables.len()]` from `workers` threads,
/// each with its own pooled connection.
fn run_insert(engine: &Engine, tables: &[String], work: &[RecordBatch], workers: usize) -> f64 {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for w in 0..workers {
            let next = &next;
            let table = &tables[w % tables.len()];
            s.spawn(move || {
                let conn = engine.connection();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(b) = work.get(i) else { break };
                    conn.insert_batch(table, b.clone(), &[]).expect("insert");
                }
            });
        }
    });
    start.elapsed().as_secs_f64()
}

/// Checks count, sum(series_id) and sum of time offsets over `tables`.
fn verify(engine: &Engine, tables: &[String], data: &Data, copies: usize) -> bool {
    let union = tables
        .iter()
        .map(|t| format!("SELECT series_id, time FROM {t}"))
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    let out = engine
        .query_text(&format!(
            "SELECT count(), sum(series_id), sum(toInt128(toUnixTimestamp64Nano(time)) - {BASE_TIME_NS}) FROM ({union})"
        ))
        .unwrap();
    let got: Vec<&str> = out.trim().split('\t').collect();
    let want = [
        (data.rows * copies).to_string(),
        (data.sum_series * copies as u64).to_string(),
        (data.sum_offset_ns * copies as i128).to_string(),
    ];
    let ok = got == want.iter().map(|s| s.as_str()).collect::<Vec<_>>();
    if !ok {
        eprintln!("  VERIFY FAILED: got {got:?}, want {want:?}");
    }
    ok
}

fn main() {
    let args = parse_args();
    let tmp;
    let data_dir = match &args.data_dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir().unwrap();
            tmp.path().to_path_buf()
        }
    };
    let engine = Engine::open(&EngineConfig {
        data_dir: data_dir.join("chdb"),
        connections: args.workers,
    })
    .expect("open engine");
    let version = engine
        .query_text("SELECT version()")
        .unwrap()
        .trim()
        .to_string();
    eprintln!(
        "chdb_raw: engine {version}, rows {}, workers {}, batch {}, data {}",
        args.rows,
        args.workers,
        args.batch,
        data_dir.display()
    );

    eprintln!("building batches (untimed)...");
    let narrow = build_data(args.rows, 1);
    let wide = build_data(args.rows, 4);
    let mut results = Vec::new();
    let mut db_n = 0;
    let mut fresh_db = |engine: &Engine| {
        db_n += 1;
        let db = format!("chdb_raw_{db_n}");
        engine
            .execute(&format!("DROP DATABASE IF EXISTS {db}"))
            .unwrap();
        engine.execute(&format!("CREATE DATABASE {db}")).unwrap();
        db
    };

    let mut record = |o: Outcome| {
        eprintln!(
            "  {:<44} {:>11} rows {:>8.3} s {:>12.0} rows/s {:>8.1} MB/s {}",
            o.variant,
            o.rows,
            o.seconds,
            o.rows_per_s(),
            o.mb_per_s(),
            if o.verified {
                "verified"
            } else {
                "NOT VERIFIED"
            }
        );
        results.push(o);
    };

    // 1 connection, narrow and wide.
    for (data, label, fields) in [(&narrow, "narrow", 1), (&wide, "4 fields", 4)] {
        let db = fresh_db(&engine);
        let table = format!("{db}.t");
        create_table(&engine, &table, fields);
        let work = batches(data, args.batch);
        let secs = run_insert(&engine, std::slice::from_ref(&table), &work, 1);
        let verified = verify(&engine, &[table], data, 1);
        record(Outcome {
            variant: format!("1 connection, {label}, batch {}", args.batch),
            rows: data.rows,
            seconds: secs,
            bytes: batch_bytes(&work),
            verified,
            note: String::new(),
        });
    }

    // N connections into N tables, and into 1 table.
    let work = batches(&narrow, args.batch);
    {
        let db = fresh_db(&engine);
        let tables: Vec<String> = (0..args.workers).map(|i| format!("{db}.t{i}")).collect();
        for t in &tables {
            create_table(&engine, t, 1);
        }
        let secs = run_insert(&engine, &tables, &work, args.workers);
        let verified = verify(&engine, &tables, &narrow, 1);
        record(Outcome {
            variant: format!(
                "{} connections → {} tables, narrow",
                args.workers, args.workers
            ),
            rows: narrow.rows,
            seconds: secs,
            bytes: batch_bytes(&work),
            verified,
            note: String::new(),
        });
    }
    {
        let db = fresh_db(&engine);
        let table = format!("{db}.t");
        create_table(&engine, &table, 1);
        let secs = run_insert(&engine, std::slice::from_ref(&table), &work, args.workers);
        let verified = verify(&engine, &[table], &narrow, 1);
        record(Outcome {
            variant: format!("{} connections → 1 table, narrow", args.workers),
            rows: narrow.rows,
            seconds: secs,
            bytes: batch_bytes(&work),
            verified,
            note: String::new(),
        });
    }

    // Batch-size sweep on one connection.
    for size in [10_000usize, 50_000, 200_000, 1_000_000] {
        let db = fresh_db(&engine);
        let table = format!("{db}.t");
        create_table(&engine, &table, 1);
        let work = batches(&narrow, size);
        let secs = run_insert(&engine, std::slice::from_ref(&table), &work, 1);
        let verified = verify(&engine, &[table], &narrow, 1);
        record(Outcome {
            variant: format!("batch sweep: 1 connection, batch {size}"),
            rows: narrow.rows,
            seconds: secs,
            bytes: batch_bytes(&work),
            verified,
            note: String::new(),
        });
    }

    // The engine's internal ceiling: no Arrow hand-off at all.
    {
        let db = fresh_db(&engine);
        let table = format!("{db}.t");
        create_table(&engine, &table, 1);
        let n = args.rows;
        let start = Instant::now();
        engine
            .execute(&format!(
                "INSERT INTO {table} SELECT number % {SERIES}, \
                 fromUnixTimestamp64Nano(toInt64({BASE_TIME_NS} + number * 1000000), 'UTC'), \
                 (number % 1000) * 0.5 FROM numbers({n})"
            ))
            .unwrap();
        let secs = start.elapsed().as_secs_f64();
        let verified = verify(&engine, &[table], &narrow, 1);
        record(Outcome {
            variant: "engine internal: INSERT … SELECT FROM numbers(N)".into(),
            rows: n,
            seconds: secs,
            bytes: n * 3 * 8,
            verified,
            note: "no FFI hand-off; the engine generates the rows".into(),
        });
    }

    write_reports(&args, &version, &results, &data_dir);
    let ok = results.iter().all(|r| r.verified);
    drop(engine);
    if !ok {
        eprintln!("chdb_raw: verification failed");
        std::process::exit(1);
    }
}

fn sh(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn host_block(data_dir: &Path, version: &str) -> Vec<(&'static str, String)> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map(|kb| format!("{:.1} GiB", kb / 1024.0 / 1024.0))
        .unwrap_or_else(|| "unknown".into());
    let os = std::fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("PRETTY_NAME=")
                .map(|s| s.trim_matches('"').to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let disk = sh(
        "df",
        &[
            "-h",
            "--output=source,fstype,size",
            &data_dir.to_string_lossy(),
        ],
    )
    .lines()
    .nth(1)
    .unwrap_or("unknown")
    .split_whitespace()
    .collect::<Vec<_>>()
    .join(" ");
    vec![
        ("cpu", cpu),
        (
            "cores",
            std::thread::available_parallelism()
                .map_or(0, |n| n.get())
                .to_string(),
        ),
        ("memory", mem),
        ("disk", disk),
        ("os", os),
        ("kernel", sh("uname", &["-r"])),
        ("rustc", sh("rustc", &["--version"])),
        (
            "chdb",
            format!("libchdb {version} (npm @chdb/lib-linux-x64-gnu@26.7.3-stable.1)"),
        ),
        ("commit", sh("git", &["rev-parse", "--short", "HEAD"])),
        ("date", sh("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"])),
    ]
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn write_reports(args: &Args, version: &str, results: &[Outcome], data_dir: &Path) {
    let host = host_block(data_dir, version);
    std::fs::create_dir_all(&args.out).unwrap();
    let mut md = String::from("# chdb_raw: the engine ceiling\n\n");
    md.push_str(&format!(
        "Rows per workload {}, workers {}, default batch {} rows. Pre-built Arrow batches, FFI insert \
         (`ArrowStream` + `INSERT … SELECT`), MergeTree `ORDER BY (series_id, time)`. Excludes network, \
         parsing, WAL and fsync. MB/s counts 8 bytes per fixed-width value.\n\n",
        args.rows, args.workers, args.batch
    ));
    md.push_str(
        "| variant | rows | seconds | rows/s | MB/s | verified |\n|---|---:|---:|---:|---:|---|\n",
    );
    for r in results {
        md.push_str(&format!(
            "| {} | {} | {:.3} | {:.0} | {:.1} | {} |\n",
            r.variant,
            r.rows,
            r.seconds,
            r.rows_per_s(),
            r.mb_per_s(),
            if r.verified { "yes" } else { "NO" }
        ));
    }
    md.push_str("\nHost:\n\n");
    for (k, v) in &host {
        md.push_str(&format!("- {k}: {v}\n"));
    }
    std::fs::write(args.out.join("chdb_raw.md"), md).unwrap();

    let mut js = String::from("{\n  \"benchmark\": \"chdb_raw\",\n");
    js.push_str(&format!(
        "  \"config\": {{\"rows\": {}, \"workers\": {}, \"batch\": {}}},\n",
        args.rows, args.workers, args.batch
    ));
    js.push_str("  \"host\": {");
    js.push_str(
        &host
            .iter()
            .map(|(k, v)| format!("{}: {}", json_str(k), json_str(v)))
            .collect::<Vec<_>>()
            .join(", "),
    );
    js.push_str("},\n  \"results\": [\n");
    let rows: Vec<String> = results
        .iter()
        .map(|r| {
            format!(
                "    {{\"variant\": {}, \"rows\": {}, \"seconds\": {:.6}, \"rows_per_s\": {:.0}, \"mb_per_s\": {:.2}, \"verified\": {}, \"note\": {}}}",
                json_str(&r.variant), r.rows, r.seconds, r.rows_per_s(), r.mb_per_s(), r.verified, json_str(&r.note)
            )
        })
        .collect();
    js.push_str(&rows.join(",\n"));
    js.push_str("\n  ]\n}\n");
    std::fs::write(args.out.join("chdb_raw.json"), js).unwrap();
    eprintln!("wrote {}/chdb_raw.{{md,json}}", args.out.display());
}
