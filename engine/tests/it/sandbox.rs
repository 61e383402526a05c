//! The SQL sandbox against the real engine: classification, the engine's
//! roles, limits, streaming, cancellation, and no leaks between statements.
//! The engine of this binary boots with a reader role for [`READABLE_DB`], a
//! 2 s time limit and 500,000 result rows (main.rs).

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use ::engine::{quote_ident, OutputFormat, ReadScope, SqlAccess, SqlCancel, SqlError, SqlSummary};

use crate::engine;

/// The one database the reader role of this binary may read.
pub(crate) const READABLE_DB: &str = "sbx_readable";
/// A database no reader may read.
const OTHER_DB: &str = "sbx_other";

use crate::sandbox_serial as serial;

fn reader() -> SqlAccess {
    SqlAccess::Read(ReadScope::from_list(&[READABLE_DB]))
}

/// Output and summary of one statement.
fn run(sql: &str, access: &SqlAccess) -> Result<(String, SqlSummary), SqlError> {
    run_fmt(sql, access, OutputFormat::TabSeparated)
}

fn run_fmt(
    sql: &str,
    access: &SqlAccess,
    format: OutputFormat,
) -> Result<(String, SqlSummary), SqlError> {
    let mut out = Vec::new();
    let summary = engine().sql(sql, format, access, &SqlCancel::new(), &mut |c| {
        out.extend_from_slice(c);
        true
    })?;
    Ok((String::from_utf8_lossy(&out).into_owned(), summary))
}

/// Creates the two databases once, with one row each.
fn setup() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for (db, v) in [(READABLE_DB, 1), (OTHER_DB, 2)] {
            let db = quote_ident(db);
            engine()
                .execute(&format!("CREATE DATABASE IF NOT EXISTS {db}"))
                .unwrap();
            engine()
                .execute(&format!(
                    "CREATE TABLE IF NOT EXISTS {db}.t (v Int64) ENGINE = MergeTree ORDER BY v"
                ))
                .unwrap();
            engine()
                .execute(&format!("INSERT INTO {db}.t VALUES ({v})"))
                .unwrap();
        }
    });
}

/// Every sandbox connection answers a small query with exactly its own rows:
/// `n` statements at once (so each holds a connection of its own).
fn assert_every_connection_is_clean(n: usize) {
    let barrier = Arc::new(Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                // sleep() keeps the connection busy while the others start.
                run(
                    &format!("SELECT {i} + 1000 AS own, sleep(0.2) AS z"),
                    &reader(),
                )
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let (out, _) = h
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("statement {i}: {e}"));
        assert_eq!(out, format!("{}\t0\n", i + 1000), "connection {i} leaked");
    }
}

#[test]
fn readers_read_their_databases_only_and_admins_read_all() {
    let _serial = serial();
    setup();
    let (out, _) = run("SELECT v FROM sbx_readable.t", &reader()).unwrap();
    assert_eq!(out, "1\n");
    for denied in [
        "SELECT v FROM sbx_other.t",
        "SELECT * FROM view(SELECT v FROM sbx_other.t)",
        "SELECT 1 WHERE 2 IN (SELECT v FROM sbx_other.t)",
    ] {
        let e = run(denied, &reader()).unwrap_err();
        assert!(
            matches!(&e, SqlError::Forbidden(m) if m.contains("ACCESS_DENIED")),
            "{denied}: {e:?}"
        );
    }
    // The catalogue tables are filtered by the engine's grants.
    let (dbs, _) = run(
        "SELECT name FROM system.databases WHERE name LIKE 'sbx_%' ORDER BY name",
        &reader(),
    )
    .unwrap();
    assert_eq!(dbs, "sbx_readable\n");
    let (shown, _) = run("SHOW DATABASES LIKE 'sbx_%'", &reader()).unwrap();
    assert_eq!(shown, "sbx_readable\n");
    // system.processes shows every session's statement: not for readers.
    for q in [
        "SELECT query FROM system.processes",
        "SHOW PROCESSLIST",
        "SELECT * FROM merge('system', '^processes$')",
    ] {
        let e = run(q, &reader()).unwrap_err();
        assert!(matches!(e, SqlError::Forbidden(_)), "{q}: {e:?}");
    }
    // No scope, no data.
    let none = SqlAccess::Read(ReadScope::from_list::<&str>(&[]));
    assert!(matches!(
        run("SELECT v FROM sbx_readable.t", &none),
        Err(SqlError::Forbidden(_))
    ));
    assert_eq!(run("SELECT 1", &none).unwrap().0, "1\n");
    // A scope the engine has no role for fails closed.
    let unknown = SqlAccess::Read(ReadScope::from_list(&["never_configured"]));
    assert!(matches!(
        run("SELECT 1", &unknown),
        Err(SqlError::Forbidden(m)) if m.contains("no engine role")
    ));
    // Admins read everything, system.processes included. (The ORDER BY is outside the
    // UNION ALL: inside, it binds to the last SELECT only, and the branches may come in
    // either order.)
    let (both, _) = run(
        "SELECT v FROM (SELECT v FROM sbx_readable.t UNION ALL SELECT v FROM sbx_other.t) ORDER BY v",
        &SqlAccess::Admin,
    )
    .unwrap();
    assert_eq!(both, "1\n2\n");
    let (mine, _) = run(
        "SELECT count() > 0 FROM system.processes",
        &SqlAccess::Admin,
    )
    .unwrap();
    assert_eq!(mine, "1\n");
}

#[test]
fn reader_connections_carry_limits_a_statement_cannot_lift() {
    let _serial = serial();
    let (out, _) = run(
        "SELECT getSetting('readonly'), getSetting('max_execution_time'), \
         getSetting('max_result_rows'), getSetting('allow_introspection_functions'), \
         startsWith(getSetting('log_comment'), 'chingest-sql-')",
        &reader(),
    )
    .unwrap();
    assert_eq!(out, "1\t2\t500000\tfalse\t1\n");
    for lift in [
        "SELECT 1 SETTINGS readonly = 0",
        "SELECT 1 SETTINGS max_execution_time = 1000",
        "SELECT 1 SETTINGS max_result_rows = 0",
    ] {
        let e = run(lift, &reader()).unwrap_err();
        assert!(
            matches!(&e, SqlError::Forbidden(m) if m.contains("READONLY")),
            "{lift}: {e:?}"
        );
    }
    for set in [
        "SET max_execution_time = 0",
        "SET readonly = 0",
        "SET ROLE chingest_admin",
    ] {
        let e = run(set, &reader()).unwrap_err();
        assert!(
            matches!(&e, SqlError::Forbidden(m) if m.contains("CONTROL")),
            "{set}: {e:?}"
        );
    }
    // The answer's format is the caller's, not the statement's.
    let e = run("SELECT 1 FORMAT JSON", &reader()).unwrap_err();
    assert!(
        matches!(&e, SqlError::Invalid(m) if m.contains("format parameter")),
        "{e:?}"
    );
    // The result-size limit holds.
    let e = run("SELECT number FROM numbers(600000)", &reader()).unwrap_err();
    assert!(
        matches!(&e, SqlError::LimitExceeded(m) if m.contains("max_result_rows")),
        "{e:?}"
    );
    // Sorts and aggregations spill to disk past half the memory cap (1 GiB
    // here), within 4× the cap of temporary data.
    let (spill, _) = run(
        "SELECT getSetting('max_bytes_before_external_group_by'), \
         getSetting('max_bytes_before_external_sort'), \
         getSetting('max_temporary_data_on_disk_size_for_query')",
        &reader(),
    )
    .unwrap();
    assert_eq!(spill, "536870912\t536870912\t4294967296\n");
    // Admins get the limits too.
    let (admin, _) = run(
        "SELECT getSetting('readonly'), getSetting('max_execution_time')",
        &SqlAccess::Admin,
    )
    .unwrap();
    assert_eq!(admin, "0\t2\n");
}

#[test]
fn admins_keep_ddl_but_not_system_or_database_lifecycle() {
    let _serial = serial();
    let admin = SqlAccess::Admin;
    run(
        "CREATE TABLE IF NOT EXISTS default.sbx_admin (a Int8) ENGINE = Memory",
        &admin,
    )
    .unwrap();
    run("INSERT INTO default.sbx_admin VALUES (1)", &admin).unwrap();
    assert_eq!(
        run("SELECT a FROM default.sbx_admin", &admin).unwrap().0,
        "1\n"
    );
    for refused in [
        "SYSTEM SHUTDOWN",
        "SYSTEM FLUSH LOGS",
        "DROP DATABASE sbx_readable",
        "/* /* */ SELECT ' */ DROP DATABASE sbx_readable -- '",
        "CREATE DATABASE sbx_new",
        "SELECT 1; SELECT 2",
    ] {
        assert!(run(refused, &admin).is_err(), "{refused}");
    }
    // An admin's SET lives and dies with its own connection.
    run("SET max_threads = 7", &admin).unwrap();
    assert_ne!(
        run("SELECT getSetting('max_threads')", &admin).unwrap().0,
        "7\n"
    );
}

#[test]
fn json_streams_whole_documents() {
    let _serial = serial();
    let (out, summary) = run_fmt(
        "SELECT number FROM numbers(300000)",
        &reader(),
        OutputFormat::JSON,
    )
    .unwrap();
    assert!(summary.chunks > 1, "{summary:?}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| {
        panic!(
            "not one JSON document ({e}); tail: {}",
            &out[out.len().saturating_sub(300)..]
        )
    });
    assert_eq!(doc["rows"], 300000);
    assert_eq!(doc["data"].as_array().unwrap().len(), 300000);
    let (empty, _) = run_fmt(
        "SELECT number FROM numbers(0)",
        &reader(),
        OutputFormat::JSON,
    )
    .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&empty).unwrap();
    assert_eq!(doc["rows"], 0);
}

#[test]
fn a_statement_failing_mid_stream_leaves_nothing_behind() {
    let _serial = serial();
    let mut got = 0usize;
    let e = engine()
        .sql(
            "SELECT number AS leak, throwIf(number = 400000) FROM numbers(450000)",
            OutputFormat::TabSeparated,
            &reader(),
            &SqlCancel::new(),
            &mut |c| {
                got += c.len();
                true
            },
        )
        .unwrap_err();
    assert!(got > 0, "the failure should come after the first block");
    assert!(
        matches!(&e, SqlError::Invalid(m) if m.contains("throwIf") || m.contains("FUNCTION_THROW_IF")),
        "{e:?}"
    );
    assert_every_connection_is_clean(2);
}

#[test]
fn a_statement_cancelled_by_its_caller_stops_and_leaves_nothing_behind() {
    let _serial = serial();
    // Between blocks: the sink says stop.
    let mut blocks = 0;
    let e = engine()
        .sql(
            "SELECT number AS leak FROM numbers(10000000)",
            OutputFormat::TabSeparated,
            &reader(),
            &SqlCancel::new(),
            &mut |_| {
                blocks += 1;
                blocks < 2
            },
        )
        .unwrap_err();
    assert_eq!(e, SqlError::Cancelled);
    assert_every_connection_is_clean(2);

    // Blocked inside the engine (no block until the end): the watchdog kills it.
    let cancel = SqlCancel::new();
    let c2 = cancel.clone();
    let started = Instant::now();
    let h = std::thread::spawn(move || {
        engine().sql(
            "SELECT count() FROM system.numbers",
            OutputFormat::TabSeparated,
            &reader(),
            &c2,
            &mut |_| true,
        )
    });
    std::thread::sleep(Duration::from_millis(300));
    cancel.cancel();
    let e = h.join().unwrap().unwrap_err();
    assert_eq!(e, SqlError::Cancelled);
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "a cancelled statement should stop well before its 2 s limit: {:?}",
        started.elapsed()
    );
    assert_every_connection_is_clean(2);
}

#[test]
fn runaway_statements_end_at_their_time_limit_and_leave_nothing_behind() {
    let _serial = serial();
    let started = Instant::now();
    let e = run("SELECT count() FROM system.numbers", &reader()).unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(&e, SqlError::LimitExceeded(m) if m.contains("max_execution_secs")),
        "{e:?}"
    );
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(4),
        "{took:?}"
    );
    // A timeout part-way through a stream.
    let e = run(
        "SELECT number AS leak, sleepEachRow(0.00002) FROM numbers(300000)",
        &reader(),
    )
    .unwrap_err();
    assert!(matches!(e, SqlError::LimitExceeded(_)), "{e:?}");
    assert_every_connection_is_clean(2);
}

#[test]
fn beyond_the_concurrency_bound_statements_are_refused_at_once() {
    let _serial = serial();
    let barrier = Arc::new(Barrier::new(3));
    let long: Vec<_> = (0..2)
        .map(|_| {
            let b = barrier.clone();
            std::thread::spawn(move || {
                b.wait();
                run("SELECT sleep(1)", &reader())
            })
        })
        .collect();
    barrier.wait();
    // Let both take their slots (other tests of this binary may hold slots
    // too; either way a third statement must not queue).
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let third = run("SELECT 1", &reader());
    assert!(
        started.elapsed() < Duration::from_millis(200),
        "refusal must not wait"
    );
    assert_eq!(third.unwrap_err(), SqlError::Busy { limit: 2 });
    for h in long {
        let _ = h.join().unwrap();
    }
}

/// The server's own background reads (the hot store's refill) run outside the
/// bound of client statements: with one of them running, clients still get
/// their `max_concurrent_queries` (2) statements, and a second background read
/// is refused at once (one at a time).
#[test]
fn background_reads_do_not_take_the_clients_slots() {
    let _serial = serial();
    let background = |sql: &'static str| {
        let mut out = Vec::new();
        engine()
            .sql_generated(
                ::engine::Lane::Background,
                sql,
                OutputFormat::TabSeparated,
                &SqlAccess::Admin,
                &SqlCancel::new(),
                &mut |c| {
                    out.extend_from_slice(c);
                    true
                },
            )
            .map(|_| String::from_utf8_lossy(&out).into_owned())
    };
    let barrier = Arc::new(Barrier::new(2));
    let b = barrier.clone();
    let refill = std::thread::spawn(move || {
        b.wait();
        background("SELECT sleep(1.5)")
    });
    barrier.wait();
    std::thread::sleep(Duration::from_millis(300));
    // Refused, not queued behind it (which would answer once it ends).
    assert_eq!(
        background("SELECT 1").unwrap_err(),
        SqlError::Busy { limit: 1 },
        "a second background read must be refused"
    );
    // Two client statements at once, beside the background one.
    let clients: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(|| run("SELECT sleep(0.5), 7", &reader())))
        .collect();
    for c in clients {
        let (out, _) = c
            .join()
            .unwrap()
            .expect("a client statement beside a refill");
        assert_eq!(out, "0\t7\n");
    }
    assert_eq!(refill.join().unwrap().unwrap(), "0\n");
    assert_every_connection_is_clean(2);
}

/// A file only the process can read, with content that must never come back.
fn canary() -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let secret = format!("canary-{}-{}", std::process::id(), line!());
    let path = dir.path().join("secret.txt");
    std::fs::write(&path, &secret).unwrap();
    (dir, path.display().to_string(), secret)
}

#[test]
fn hostile_statements_are_refused_and_touch_nothing() {
    let _serial = serial();
    setup();
    let (dir, secret_path, secret) = canary();
    let out = dir.path().join("pwned.out").display().to_string();
    let p = &secret_path;
    let hostile: Vec<String> = vec![
        // The examples.
        "/* /* */ SELECT ' */ DROP DATABASE sbx_readable -- '".into(),
        format!("SELECT * FROM file//\n('{p}','LineAsString')"),
        format!("SELECT * FROM file# x\n('{p}','LineAsString')"),
        format!("SELECT * FROM `file`('{p}','LineAsString')"),
        format!("SELECT * FROM \"file\"('{p}','LineAsString')"),
        format!("SELECT 'pwn' INTO # x\nOUTFILE '{out}' FORMAT RawBLOB"),
        format!("/* /* */ SELECT ' */ INSERT INTO FUNCTION file('{out}', 'RawBLOB', 's String') SELECT 'pwn' -- '"),
        format!("SELECT $$x$$ AS a, * FROM file('{p}','LineAsString')"),
        // Comment, quoting, heredoc and case variants.
        format!("SELECT * FROM file/* /* */ */('{p}','LineAsString')"),
        format!("SELECT * FROM file -- x\n('{p}','LineAsString')"),
        format!("SELECT * FROM file($${p}$$, $$LineAsString$$)"),
        format!("select * from FiLe('{p}','LineAsString')"),
        format!("SELECT file('{p}')"),
        format!("SELECT FILE('{p}')"),
        format!("SELECT `file`('{p}')"),
        format!("SELECT arrayMap(x -> file(x), ['{p}'])"),
        format!("SELECT 1 WHERE file('{p}') != ''"),
        format!("EXPLAIN QUERY TREE SELECT file('{p}')"),
        format!("DESCRIBE (SELECT file('{p}'))"),
        format!("WITH (SELECT file('{p}')) AS s SELECT s"),
        // Writing files.
        format!("SELECT 'pwn' INTO OUTFILE '{out}' FORMAT RawBLOB"),
        format!("SELECT 'pwn' INTO /* c */ OUTFILE '{out}'"),
        format!("SELECT 'pwn' INTO OUTFILE '{out}' AND STDOUT"),
        format!("INSERT INTO FUNCTION file('{out}', 'RawBLOB', 's String') SELECT 'pwn'"),
        format!("INSERT INTO FUNCTION file('{out}', 'RawBLOB', 's String') VALUES ('pwn')"),
        format!("(SELECT 1) UNION ALL (SELECT 2 INTO OUTFILE '{out}')"),
        format!("BACKUP DATABASE sbx_readable TO File('{out}')"),
        // Other sources: URLs, other hosts, programs, object stores.
        "SELECT * FROM url('http://127.0.0.1:1/x', 'CSV', 'a String')".into(),
        "SELECT * FROM remote('127.0.0.1:9000', system.one)".into(),
        "SELECT * FROM remoteSecure('127.0.0.1:9440', system.one)".into(),
        "SELECT * FROM s3('http://127.0.0.1:1/bucket/k', 'CSV', 'a String')".into(),
        "SELECT * FROM mysql('127.0.0.1:1', 'db', 't', 'u', 'p')".into(),
        "SELECT * FROM postgresql('127.0.0.1:1', 'db', 't', 'u', 'p')".into(),
        format!("SELECT * FROM executable('cat {p}', 'LineAsString', 's String')"),
        format!("SELECT * FROM icebergLocal('{p}')"),
        "SELECT * FROM hdfs('hdfs://127.0.0.1:1/x', 'CSV', 'a String')".into(),
        "SELECT * FROM dictionary('d')".into(),
        "SELECT * FROM loop(numbers(1))".into(),
        // Settings, session and control.
        "SELECT 1 SETTINGS readonly = 0".into(),
        "SET readonly = 0".into(),
        "SET ROLE chingest_admin".into(),
        "USE system".into(),
        "KILL QUERY WHERE 1".into(),
        "SYSTEM SHUTDOWN".into(),
        // Multi-statements.
        "SELECT 1; DROP DATABASE sbx_readable".into(),
        "SELECT 1 /* /* */ */ ; DROP DATABASE sbx_readable".into(),
        "SELECT 1 PARALLEL WITH SELECT 2".into(),
        // DDL, DML, access management.
        "DROP DATABASE sbx_readable".into(),
        "DROP TABLE sbx_readable.t".into(),
        "TRUNCATE TABLE sbx_readable.t".into(),
        "ALTER TABLE sbx_readable.t DELETE WHERE 1".into(),
        "INSERT INTO sbx_readable.t VALUES (9)".into(),
        "CREATE TABLE sbx_readable.t2 (a Int8) ENGINE = Memory".into(),
        format!("CREATE TABLE sbx_readable.t3 (s String) ENGINE = File(LineAsString, '{p}')"),
        "CREATE USER u IDENTIFIED BY 'x'".into(),
        "GRANT ALL ON *.* TO default".into(),
        "CREATE FUNCTION f AS x -> x + 1".into(),
        "this is not sql".into(),
        "-- only a comment".into(),
    ];
    for sql in &hostile {
        let result = run(sql, &reader());
        let text = match &result {
            Ok((out, _)) => panic!("{sql:?} ran: {out:?}"),
            Err(e) => e.to_string(),
        };
        assert!(
            matches!(result, Err(SqlError::Forbidden(_) | SqlError::Invalid(_))),
            "{sql:?}: {text}"
        );
        assert!(!text.is_empty(), "{sql:?}: empty message");
        assert!(!text.contains(&secret), "{sql:?} read the canary: {text}");
        assert!(!std::path::Path::new(&out).exists(), "{sql:?} wrote {out}");
    }
    // Nothing in the directory but the canary; the databases are intact.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("secret.txt")]);
    assert_eq!(
        run("SELECT v FROM sbx_readable.t", &reader()).unwrap().0,
        "1\n"
    );
    assert_every_connection_is_clean(2);
}
