//! The engine module against the real libchdb.

use std::sync::Arc;

use ::engine::arrow::array::{
    Float64Array, Int64Array, RecordBatch, StringArray, TimestampNanosecondArray, UInt64Array,
};
use ::engine::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use ::engine::{quote_ident, Engine, EngineConfig, EngineError};

use crate::{database, engine};

#[test]
fn arrow_batches_round_trip_exactly() {
    let db = database("roundtrip");
    let table = format!("{}.{}", quote_ident(&db), quote_ident("points"));
    engine()
        .execute(&format!(
            "CREATE TABLE {table} (series_id UInt64, time DateTime64(9), host LowCardinality(String), \
             value Float64, count Int64) ENGINE = MergeTree ORDER BY (series_id, time)"
        ))
        .unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("series_id", DataType::UInt64, false),
        // Timestamp(ns, UTC), not Int64: the engine reads a plain integer into
        // DateTime64 as seconds.
        Field::new(
            "time",
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            false,
        ),
        Field::new("host", DataType::Utf8, false),
        Field::new("value", DataType::Float64, false),
        Field::new("count", DataType::Int64, false),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(UInt64Array::from(vec![u64::MAX, 1, 2])),
            Arc::new(
                TimestampNanosecondArray::from(vec![1_700_000_000_123_456_789, 1, 0])
                    .with_timezone("UTC"),
            ),
            Arc::new(StringArray::from(vec!["a'b", "line\nbreak", ""])),
            Arc::new(Float64Array::from(vec![1.5, -0.0, 1e300])),
            Arc::new(Int64Array::from(vec![i64::MIN, i64::MAX, 0])),
        ],
    )
    .unwrap();
    let stats = engine().insert_batch(&table, batch, &[]).unwrap();
    assert_eq!(stats.rows_written, 3);

    // TabSeparated: exact decimal text for 64-bit values; escapes \n and '.
    let out = engine()
        .query_text(&format!(
            "SELECT series_id, toUnixTimestamp64Nano(time) AS t, host, value, count \
             FROM {table} ORDER BY series_id"
        ))
        .unwrap();
    assert_eq!(
        out,
        format!(
            "1\t1\tline\\nbreak\t-0\t{max}\n\
             2\t0\t\t1e300\t0\n\
             {umax}\t1700000000123456789\ta\\'b\t1.5\t{min}\n",
            max = i64::MAX,
            min = i64::MIN,
            umax = u64::MAX
        )
    );
}

#[test]
fn columns_are_matched_by_name_not_position() {
    let db = database("byname");
    let table = format!("{}.t", quote_ident(&db));
    engine()
        .execute(&format!(
            "CREATE TABLE {table} (a Int64, b String) ENGINE = MergeTree ORDER BY a"
        ))
        .unwrap();
    // Batch columns in the opposite order of the table's.
    let schema = Arc::new(Schema::new(vec![
        Field::new("b", DataType::Utf8, false),
        Field::new("a", DataType::Int64, false),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(vec!["x"])),
            Arc::new(Int64Array::from(vec![7])),
        ],
    )
    .unwrap();
    engine().insert_batch(&table, batch, &[]).unwrap();
    assert_eq!(
        engine()
            .query_text(&format!("SELECT a, b FROM {table}"))
            .unwrap(),
        "7\tx\n"
    );
}

#[test]
fn bad_sql_is_an_error_with_the_engine_message() {
    let err = engine().execute("SELECT FROM WHERE ,").unwrap_err();
    match &err {
        EngineError::Query { message, statement } => {
            assert!(
                message.contains("Syntax error"),
                "engine message: {message}"
            );
            assert_eq!(statement, "SELECT FROM WHERE ,");
        }
        other => panic!("expected a query error, got {other:?}"),
    }
    let err = engine()
        .execute("SELECT * FROM no_such_db_anywhere.t")
        .unwrap_err();
    assert!(
        err.engine_message()
            .unwrap()
            .contains("no_such_db_anywhere"),
        "{err}"
    );
}

#[test]
fn an_insert_into_a_missing_column_fails_cleanly() {
    let db = database("missingcol");
    let table = format!("{}.t", quote_ident(&db));
    engine()
        .execute(&format!(
            "CREATE TABLE {table} (a Int64) ENGINE = MergeTree ORDER BY a"
        ))
        .unwrap();
    let schema = Arc::new(Schema::new(vec![Field::new("zzz", DataType::Int64, false)]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![1]))]).unwrap();
    let err = engine().insert_batch(&table, batch, &[]).unwrap_err();
    assert!(err.engine_message().is_some(), "{err}");
    // The connection is still usable afterwards.
    assert_eq!(
        engine()
            .query_text(&format!("SELECT count() FROM {table}"))
            .unwrap(),
        "0\n"
    );
}

#[test]
fn insert_settings_reach_the_engine() {
    let db = database("dedup");
    let table = format!("{}.t", quote_ident(&db));
    engine()
        .execute(&format!(
            "CREATE TABLE {table} (a Int64) ENGINE = MergeTree ORDER BY a \
             SETTINGS non_replicated_deduplication_window = 100"
        ))
        .unwrap();
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
    let batch =
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![1, 2, 3]))]).unwrap();
    let token = [("insert_deduplication_token", "'seq-1-3'".to_string())];
    engine()
        .insert_batch(&table, batch.clone(), &token)
        .unwrap();
    engine().insert_batch(&table, batch, &token).unwrap();
    assert_eq!(
        engine()
            .query_text(&format!("SELECT count() FROM {table}"))
            .unwrap(),
        "3\n"
    );
}

#[test]
fn the_pool_serves_concurrent_users() {
    let handles: Vec<_> = (0..8)
        .map(|i| {
            std::thread::spawn(move || {
                engine()
                    .query_text(&format!(
                        "SELECT {i} + sleepEachRow(0.01) FROM numbers(3) LIMIT 1"
                    ))
                    .unwrap()
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join().unwrap(), format!("{i}\n"));
    }
}

#[test]
fn a_second_data_path_in_one_process_is_refused() {
    let _ = engine();
    let other = tempfile::tempdir().unwrap();
    let err = Engine::open(&EngineConfig {
        data_dir: other.path().to_path_buf(),
        connections: 1,
    })
    .unwrap_err();
    assert!(matches!(err, EngineError::PathConflict { .. }), "{err:?}");
}

#[test]
fn a_large_batch_lands_as_one_part() {
    // The flusher's exactly-once replay relies on an insert being one part;
    // without these settings this insert lands as 5 parts.
    let db = database("onepart");
    let table = format!("{}.t", quote_ident(&db));
    engine()
        .execute(&format!(
            "CREATE TABLE {table} (a Int64) ENGINE = MergeTree ORDER BY a"
        ))
        .unwrap();
    let rows = 300_000; // several times the engine's default block of 65,409 rows
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
    let batch = RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from_iter_values(0..rows as i64))],
    )
    .unwrap();
    engine()
        .insert_batch(
            &table,
            batch,
            &::engine::table::single_part_settings(rows, 0),
        )
        .unwrap();
    assert_eq!(
        engine()
            .query_text(&format!(
                "SELECT count(), sum(rows) FROM system.parts \
                 WHERE database = '{db}' AND table = 't' AND active"
            ))
            .unwrap(),
        format!("1\t{rows}\n")
    );
}

/// Set in the child process of the exit test: where its exit handlers write.
static EXIT_MARKER: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

fn write_marker(suffix: &str) {
    if let Some(path) = EXIT_MARKER.get() {
        let _ = std::fs::write(path.with_extension(suffix), b"ran");
    }
}

extern "C" fn mark_exit() {
    write_marker("before");
}

extern "C" fn mark_late_engine_destructor(_: *mut std::ffi::c_void) {
    write_marker("engine");
}

extern "C" fn mark_late_other_destructor(_: *mut std::ffi::c_void) {
    write_marker("other");
}

/// Once an engine has opened, `exit` ends the process with its status and
/// runs no teardown of the engine (closing connections or destructors at
/// exit raced the engine's background threads): none of the exit handlers
/// registered before, and none of the destructors libchdb registers later
/// (the first time code with a C++ `static` local runs), while a later
/// registration from anything else still runs. The test runs itself in a
/// child process, which registers a handler, opens the engine, runs
/// statements (libchdb registers destructors on the way), registers one
/// destructor as if from libchdb and one from elsewhere, and exits with 7.
#[test]
fn exit_keeps_its_status_and_skips_the_engine_teardown() {
    const CHILD: &str = "CHINGEST_EXIT_TEST_MARKER";
    if let Some(marker) = std::env::var_os(CHILD) {
        EXIT_MARKER.set(marker.into()).unwrap();
        // SAFETY: registers a plain `extern "C" fn` with no captured state.
        assert_eq!(unsafe { libc::atexit(mark_exit) }, 0);
        assert_eq!(engine().query_text("SELECT 1").unwrap().trim(), "1");
        let db = database("exit");
        engine()
            .execute(&format!(
                "CREATE TABLE {db}.t (k UInt64, s String) ENGINE = MergeTree ORDER BY k"
            ))
            .unwrap();
        engine()
            .execute(&format!(
                "INSERT INTO {db}.t SELECT number, toString(number) FROM numbers(1000)"
            ))
            .unwrap();
        engine()
            .query_text(&format!(
                "SELECT uniqExact(s), quantile(0.9)(k), groupArray(3)(s) FROM {db}.t FORMAT JSON"
            ))
            .unwrap();
        std::fs::write(
            EXIT_MARKER.get().unwrap().with_extension("dropped"),
            ::engine::exit::dropped_engine_destructors().to_string(),
        )
        .unwrap();
        // SAFETY: a NUL-terminated name; the address of a libchdb function.
        let in_engine = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"chdb_connect".as_ptr()) };
        assert!(!in_engine.is_null());
        // SAFETY: the C++ runtime's contract: the functions take their argument.
        unsafe {
            assert_eq!(
                ::engine::exit::__cxa_atexit(
                    mark_late_engine_destructor,
                    std::ptr::null_mut(),
                    in_engine
                ),
                0
            );
            assert_eq!(
                ::engine::exit::__cxa_atexit(
                    mark_late_other_destructor,
                    std::ptr::null_mut(),
                    std::ptr::null_mut()
                ),
                0
            );
        }
        std::process::exit(7);
    }
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("exit-handler");
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "engine::exit_keeps_its_status_and_skips_the_engine_teardown",
            "--test-threads=1",
        ])
        .env(CHILD, &marker)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !marker.with_extension("before").exists(),
        "an exit handler registered before the engine ran at exit"
    );
    assert!(
        !marker.with_extension("engine").exists(),
        "a destructor libchdb registered after the engine opened ran at exit"
    );
    assert!(
        marker.with_extension("other").exists(),
        "a destructor registered by something other than libchdb was dropped"
    );
    let dropped: u64 = std::fs::read_to_string(marker.with_extension("dropped"))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        dropped > 0,
        "libchdb registered no destructor after the engine opened, or its \
         registrations did not reach this crate's __cxa_atexit"
    );
}
