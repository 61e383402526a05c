//! `cargo bench -p engine --bench merge_cost`: what one background merge costs
//! per row, for the column layout chingest creates and the alternatives.
//!
//! Why: under sustained ingest the engine's background merges, not the insert,
//! are the largest CPU consumer of the server (a `perf` profile at 700k
//! points/s put ~50% of the server's CPU in the engine's `MergeMutate`
//! threads). Every row is rewritten by merges several times, so the per-row
//! merge cost of the layout multiplies into the end-to-end capacity.
//!
//! Data: the end-to-end benchmark's `cpu` measurement shape: 1,000 series
//! (host × region tags), 3 float fields, an integer, a boolean and a string
//! field, plus chingest's `__seq`/`__row` bookkeeping columns. `PARTS` parts of
//! `ROWS_PER_PART` rows, each part one time window of every series (what a
//! flush of 150k points looks like). Merges are stopped while the parts are
//! written, then `OPTIMIZE TABLE … FINAL` merges them all in one merge, timed
//! (wall, one connection, the merge runs on the engine's background pool).
//! Median of `RUNS` runs per layout. Writes `merge_cost.{md,json}` to
//! `MERGE_COST_OUT` (default: `test_results/latest/` at the workspace root).

use std::time::Instant;

use engine::table::TABLE_SETTINGS;
use engine::{Engine, EngineConfig};

#[path = "support/results.rs"]
mod support;

const PARTS: usize = 6;
const ROWS_PER_PART: usize = 150_000;
const RUNS: usize = 5;

/// (name, columns DDL, table settings)
fn layouts() -> Vec<(&'static str, String, &'static str)> {
    let time_dd = "`time` DateTime64(9, 'UTC') CODEC(DoubleDelta, LZ4)";
    let time_plain = "`time` DateTime64(9, 'UTC')";
    let book = "`__seq` UInt64, `__row` UInt32,";
    let tags_lc = "`host` LowCardinality(String), `region` LowCardinality(String),";
    let tags_plain = "`host` String, `region` String,";
    let fields_null = "`governor` Nullable(String), `procs` Nullable(Int64), `throttled` Nullable(Bool), \
                       `usage_idle` Nullable(Float64), `usage_system` Nullable(Float64), `usage_user` Nullable(Float64)";
    let fields_plain = "`governor` String, `procs` Int64, `throttled` Bool, \
                        `usage_idle` Float64, `usage_system` Float64, `usage_user` Float64";
    let cols = |time: &str, book: &str, tags: &str, fields: &str| {
        format!("{time}, `series_id` UInt64, {book} {tags} {fields}")
    };
    let horizontal = ", vertical_merge_algorithm_min_columns_to_activate = 1000";
    vec![
        (
            "as chingest creates tables (`TABLE_SETTINGS`: vertical merge)",
            cols(time_dd, book, tags_lc, fields_null),
            "",
        ),
        (
            "horizontal merge (the engine's default for ≤ 10 non-key columns)",
            cols(time_dd, book, tags_lc, fields_null),
            horizontal,
        ),
        (
            "horizontal, time without DoubleDelta",
            cols(time_plain, book, tags_lc, fields_null),
            horizontal,
        ),
        (
            "horizontal, tags as String",
            cols(time_dd, book, tags_plain, fields_null),
            horizontal,
        ),
        (
            "horizontal, fields not Nullable",
            cols(time_dd, book, tags_lc, fields_plain),
            horizontal,
        ),
        (
            "horizontal, without __seq/__row",
            cols(time_dd, "", tags_lc, fields_null),
            horizontal,
        ),
    ]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(&EngineConfig {
        data_dir: dir.path().join("chdb"),
        connections: 1,
    })
    .unwrap();
    engine.execute("CREATE DATABASE mc").unwrap();
    let mut md = format!(
        "# merge_cost: one background merge, per row, by column layout\n\n\
         {PARTS} parts × {ROWS_PER_PART} rows of the `cpu` measurement shape (1,000 series, 6 fields), \
         merged by one `OPTIMIZE TABLE … FINAL`; median of {RUNS} runs, wall time of the merge, one connection. \
         `ORDER BY (series_id, time)` and the table settings chingest creates tables with, unless the row says otherwise; a later setting overrides an earlier one.\n\n\
         | layout | merge ms | ns per merged row | vs chingest | insert ns/row (incl. generating the rows in-engine) | bytes on disk |\n|---|---:|---:|---:|---:|---:|\n"
    );
    let mut json = Vec::new();
    let mut baseline = None;
    for (i, (name, columns, extra)) in layouts().into_iter().enumerate() {
        let mut times = Vec::new();
        let mut insert_times = Vec::new();
        let mut bytes = 0u64;
        for run in 0..RUNS {
            let t = format!("mc.t{i}_{run}");
            engine
                .execute(&format!(
                    "CREATE TABLE {t} ({columns}) ENGINE = MergeTree ORDER BY (series_id, time) \
                     SETTINGS {TABLE_SETTINGS}{extra}"
                ))
                .unwrap();
            engine.execute(&format!("SYSTEM STOP MERGES {t}")).unwrap();
            let start = Instant::now();
            for p in 0..PARTS {
                engine
                    .execute(&insert_sql(&t, p, columns.contains("__seq")))
                    .unwrap();
            }
            insert_times.push(start.elapsed().as_secs_f64() * 1e9 / (PARTS * ROWS_PER_PART) as f64);
            engine.execute(&format!("SYSTEM START MERGES {t}")).unwrap();
            let start = Instant::now();
            engine
                .execute(&format!(
                    "OPTIMIZE TABLE {t} FINAL SETTINGS optimize_throw_if_noop = 1"
                ))
                .unwrap();
            times.push(start.elapsed().as_secs_f64() * 1000.0);
            let (db, tbl) = t.split_once('.').unwrap();
            let parts = engine
                .query_text(&format!(
                    "SELECT count(), sum(rows), sum(bytes_on_disk) FROM system.parts \
                     WHERE active AND database = '{db}' AND table = '{tbl}' FORMAT TSV"
                ))
                .unwrap();
            let v: Vec<u64> = parts
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            assert_eq!(v[0], 1, "{name}: the merge left {} parts", v[0]);
            assert_eq!(
                v[1] as usize,
                PARTS * ROWS_PER_PART,
                "{name}: rows lost in the merge"
            );
            bytes = v[2];
            engine.execute(&format!("DROP TABLE {t} SYNC")).unwrap();
        }
        times.sort_by(f64::total_cmp);
        insert_times.sort_by(f64::total_cmp);
        let median = times[RUNS / 2];
        let insert_ns = insert_times[RUNS / 2];
        let ns_row = median * 1e6 / (PARTS * ROWS_PER_PART) as f64;
        let base = *baseline.get_or_insert(ns_row);
        eprintln!(
            "  {name:<72} {median:>8.1} ms {ns_row:>6.0} ns/row  insert {insert_ns:>5.0} ns/row  {bytes} bytes"
        );
        md.push_str(&format!(
            "| {name} | {median:.1} | {ns_row:.0} | {:.2}× | {insert_ns:.0} | {bytes} |\n",
            ns_row / base
        ));
        json.push(format!(
            "{{\"layout\": {name:?}, \"merge_ms\": {median:.3}, \"ns_per_row\": {ns_row:.1}, \"insert_ns_per_row\": {insert_ns:.1}, \"bytes_on_disk\": {bytes}}}"
        ));
    }
    support::write_results("MERGE_COST_OUT", "merge_cost", &md, &json);
}

/// One part: every series' points for `ROWS_PER_PART / 1000` consecutive
/// 10-second steps, in arrival order (time-major), as the flusher inserts them.
fn insert_sql(table: &str, part: usize, bookkeeping: bool) -> String {
    let book = if bookkeeping {
        format!("toUInt64({part} * 1000 + intDiv(number, 10000)) AS __seq, toUInt32(number % 10000) AS __row,")
    } else {
        String::new()
    };
    format!(
        "INSERT INTO {table} SELECT \
           fromUnixTimestamp64Nano(toInt64(1700000000000000000 + ({part} * {steps} + intDiv(number, 1000)) * 10000000000)) AS time, \
           cityHash64(number % 1000) AS series_id, {book} \
           concat('host-', toString(number % 1000)) AS host, \
           ['us-east', 'us-west', 'eu-central', 'ap-south'][number % 4 + 1] AS region, \
           if(number % 3 = 0, 'performance', 'powersave') AS governor, \
           toInt64(cityHash64(number, {part}) % 500) AS procs, \
           (number % 7 = 0) AS throttled, \
           (cityHash64(number, {part}, 1) % 10000) / 100.0 AS usage_idle, \
           (cityHash64(number, {part}, 2) % 10000) / 100.0 AS usage_system, \
           (cityHash64(number, {part}, 3) % 10000) / 100.0 AS usage_user \
         FROM numbers({ROWS_PER_PART})",
        steps = ROWS_PER_PART / 1000
    )
}
