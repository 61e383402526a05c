//! Issue 14: `/api/v1/sql` against the real server and engine, auth on.
//! Hostile statements are refused (4xx, clear message) and touch nothing:
//! no file read or written, no database changed, ingest keeps flowing; users
//! read only their databases; failed, timed-out and abandoned statements
//! leave nothing behind on any connection; runaway statements cannot starve
//! ingest or `/metrics`; `GET /query` cannot change state; cross-site browser
//! requests are refused with auth off.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

const ADMIN: (&str, &str) = ("admin", "adminpw");
const READER: (&str, &str) = ("reader", "readerpw");

/// A server with auth on: `admin`, and `reader` (reads and writes `a` only);
/// `extra` is appended to the config (e.g. an `[sql]` section).
fn server(dir: &std::path::Path, extra: &str) -> Server {
    let config = format!(
        r#"
[auth]
enabled = true

[[auth.users]]
name = "admin"
password_hash = "{}"
admin = true

[[auth.users]]
name = "reader"
password_hash = "{}"
read = ["a"]
write = ["a"]
{extra}
"#,
        hash(ADMIN.1),
        hash(READER.1),
    );
    Spawn::new(dir).config(&config).start()
}

/// Status and body text of one statement (POST body, Basic auth). A body cut
/// short by a failure after the first block reads as `Err`.
fn sql_as(s: &Server, who: (&str, &str), sql: &str) -> (u16, Result<String, String>) {
    let r = s
        .client
        .post(s.url("/api/v1/sql?format=jsoneachrow"))
        .basic_auth(who.0, Some(who.1))
        .body(sql.to_string())
        .send()
        .unwrap();
    let status = r.status().as_u16();
    (status, r.text().map_err(|e| e.to_string()))
}

/// Rows of a statement that must succeed.
fn rows_as(s: &Server, who: (&str, &str), sql: &str) -> Vec<Value> {
    let (status, body) = sql_as(s, who, sql);
    let body = body.unwrap_or_else(|e| panic!("{sql}: body cut: {e}"));
    assert_eq!(status, 200, "{sql}: {body}");
    body.lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `/query` as the admin (POST), asserting 200.
fn admin_query(s: &Server, q: &str) -> Value {
    let r = s
        .client
        .post(s.url("/query"))
        .basic_auth(ADMIN.0, Some(ADMIN.1))
        .form(&[("q", q)])
        .send()
        .unwrap();
    assert_eq!(r.status(), 200, "{q}");
    r.json().unwrap()
}

fn write_as(s: &Server, who: (&str, &str), db: &str, lines: &str) {
    let r = s
        .client
        .post(s.url(&format!("/write?db={db}")))
        .basic_auth(who.0, Some(who.1))
        .body(lines.to_string())
        .send()
        .unwrap();
    assert_eq!(r.status(), 204, "write to {db}");
}

/// Polls (as admin) until `sql` returns `n` rows.
fn wait_rows(s: &Server, sql: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = sql_as(s, ADMIN, sql);
        if status == 200 {
            let rows: Vec<Value> = body
                .unwrap()
                .lines()
                .filter(|l| !l.is_empty())
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            if rows.len() == n {
                return rows;
            }
        }
        assert!(Instant::now() < deadline, "{sql}: not {n} rows in time");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `n` small statements at once (so each holds a sandbox connection of its
/// own), each answering exactly its own row.
fn assert_every_sql_connection_is_clean(s: &Server, n: usize) {
    let barrier = Arc::new(Barrier::new(n));
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let barrier = barrier.clone();
                scope.spawn(move || {
                    barrier.wait();
                    sql_as(
                        s,
                        READER,
                        &format!("SELECT {i} + 1000 AS own, sleep(0.3) AS z"),
                    )
                })
            })
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            let (status, body) = h.join().unwrap();
            let body = body.unwrap();
            assert_eq!(status, 200, "connection {i}: {body}");
            assert_eq!(
                body,
                format!("{{\"own\":{},\"z\":0}}\n", i + 1000),
                "connection {i} returned more than its own row"
            );
        }
    });
}

/// A file with known content, and where a hostile statement would write.
struct Canary {
    dir: tempfile::TempDir,
    path: String,
    secret: String,
    out: String,
}

fn canary() -> Canary {
    let dir = tempfile::tempdir().unwrap();
    let secret = format!("chingest-canary-{}", std::process::id());
    let path = dir.path().join("secret.txt");
    std::fs::write(&path, &secret).unwrap();
    let out = dir.path().join("pwned.out").display().to_string();
    Canary {
        path: path.display().to_string(),
        secret,
        out,
        dir,
    }
}

/// Every example of issue 14 and its variants.
fn hostile(c: &Canary) -> Vec<String> {
    let (p, out) = (&c.path, &c.out);
    vec![
        // The issue's examples.
        "/* /* */ SELECT ' */ DROP DATABASE a -- '".into(),
        format!("SELECT * FROM file//\n('{p}','LineAsString')"),
        format!("SELECT * FROM file# x\n('{p}','LineAsString')"),
        format!("SELECT * FROM `file`('{p}','LineAsString')"),
        format!("SELECT * FROM \"file\"('{p}','LineAsString')"),
        format!("SELECT 'pwn' INTO # x\nOUTFILE '{out}' FORMAT RawBLOB"),
        format!("/* /* */ SELECT ' */ INSERT INTO FUNCTION file('{out}', 'RawBLOB', 's String') SELECT 'pwn' -- '"),
        format!("SELECT $$ ' $$ AS a, * FROM file('{p}','LineAsString')"),
        // Comment forms.
        format!("SELECT * FROM file/* /* */ */('{p}','LineAsString')"),
        format!("SELECT * FROM file -- x\n('{p}','LineAsString')"),
        format!("SELECT * FROM file/**/('{p}','LineAsString')"),
        // Quoting, heredocs, case.
        format!("SELECT * FROM file($${p}$$, $$LineAsString$$)"),
        format!("SELECT * FROM file($tag${p}$tag$, 'LineAsString')"),
        format!("select * from FiLe('{p}','LineAsString')"),
        format!("SeLeCt * FrOm `FILE`('{p}','LineAsString')"),
        // The scalar file() and where it hides.
        format!("SELECT file('{p}')"),
        format!("SELECT FILE('{p}')"),
        format!("SELECT \"file\"('{p}')"),
        format!("SELECT arrayMap(x -> file(x), ['{p}'])"),
        format!("SELECT 1 WHERE file('{p}') != ''"),
        format!("WITH (SELECT file('{p}')) AS s SELECT s"),
        format!("SELECT * FROM view(SELECT file('{p}'))"),
        format!("EXPLAIN QUERY TREE SELECT file('{p}')"),
        format!("EXPLAIN PLAN SELECT file('{p}')"),
        format!("DESCRIBE (SELECT file('{p}'))"),
        // Writing files.
        format!("SELECT 'pwn' INTO OUTFILE '{out}' FORMAT RawBLOB"),
        format!("SELECT 'pwn' INTO /* c */ OUTFILE '{out}'"),
        format!("SELECT 'pwn' INTO OUTFILE '{out}' AND STDOUT"),
        format!("INSERT INTO FUNCTION file('{out}', 'RawBLOB', 's String') SELECT 'pwn'"),
        format!("insert into function FILE('{out}', 'RawBLOB', 's String') values ('pwn')"),
        format!("(SELECT 1) UNION ALL (SELECT 2 INTO OUTFILE '{out}')"),
        format!("BACKUP DATABASE a TO File('{out}')"),
        // Other sources: URLs, other hosts, programs, object stores, dictionaries.
        "SELECT * FROM url('http://127.0.0.1:1/x', 'CSV', 'a String')".into(),
        "SELECT * FROM remote('127.0.0.1:9000', system.one)".into(),
        "SELECT * FROM remoteSecure('127.0.0.1:9440', system.one)".into(),
        "SELECT * FROM cluster('default', system.one)".into(),
        "SELECT * FROM s3('http://127.0.0.1:1/bucket/k', 'CSV', 'a String')".into(),
        "SELECT * FROM mysql('127.0.0.1:1', 'db', 't', 'u', 'p')".into(),
        "SELECT * FROM postgresql('127.0.0.1:1', 'db', 't', 'u', 'p')".into(),
        format!("SELECT * FROM executable('cat {p}', 'LineAsString', 's String')"),
        format!("SELECT * FROM icebergLocal('{p}')"),
        "SELECT * FROM hdfs('hdfs://127.0.0.1:1/x', 'CSV', 'a String')".into(),
        "SELECT * FROM dictionary('d')".into(),
        "SELECT * FROM merge('system', '^processes$')".into(),
        "SELECT * FROM loop(numbers(1))".into(),
        // The Arrow batches InfluxQL reads hand the engine (another client's
        // unflushed points, a subquery's answer): registered by name for one
        // statement, never readable by user SQL.
        "SELECT * FROM ArrowStream('chingest_scan_0_0')".into(),
        "SELECT * FROM arrowstream('chingest_scan_1_0') UNION ALL SELECT * FROM a.m".into(),
        // The engine's state and other sessions' statements.
        "SELECT query FROM system.processes".into(),
        "SELECT * FROM `system`.`processes`".into(),
        "SHOW PROCESSLIST".into(),
        "SELECT 1 WHERE 1 IN system.processes".into(),
        "SELECT * FROM view(SELECT * FROM system.processes)".into(),
        // Settings, session, control.
        "SELECT 1 SETTINGS readonly = 0".into(),
        "SELECT 1 SETTINGS max_execution_time = 0".into(),
        "SET readonly = 0".into(),
        "SET max_result_rows = 0".into(),
        "SET ROLE chingest_admin".into(),
        "USE system".into(),
        "KILL QUERY WHERE 1".into(),
        "SYSTEM SHUTDOWN".into(),
        "SYSTEM DROP DNS CACHE".into(),
        // Multi-statements.
        "SELECT 1; DROP DATABASE a".into(),
        "SELECT 1 /* /* */ */ ; DROP DATABASE a".into(),
        "SELECT 1 PARALLEL WITH SELECT 2".into(),
        // DDL, DML, access management.
        "DROP DATABASE a".into(),
        "drop database if exists a".into(),
        "DROP TABLE a.m".into(),
        "TRUNCATE TABLE a.m".into(),
        "ALTER TABLE a.m DELETE WHERE 1".into(),
        "INSERT INTO a.m (value) VALUES (9)".into(),
        "CREATE TABLE a.t2 (x Int8) ENGINE = Memory".into(),
        format!("CREATE TABLE a.t3 (s String) ENGINE = File(LineAsString, '{p}')"),
        "CREATE USER u IDENTIFIED BY 'x'".into(),
        "GRANT ALL ON *.* TO default".into(),
        "CREATE FUNCTION f AS x -> x + 1".into(),
        // Not SQL at all.
        "this is not sql".into(),
        "-- only a comment".into(),
    ]
}

#[test]
fn hostile_sql_is_refused_and_touches_nothing() {
    let dir = data_dir();
    let s = server(dir.path(), "");
    admin_query(&s, "CREATE DATABASE a; CREATE DATABASE b");
    write_as(&s, ADMIN, "a", "m,host=x value=1 1000000000\n");
    write_as(&s, ADMIN, "b", "m,host=y value=2 1000000000\n");
    wait_rows(&s, "SELECT value FROM a.m", 1);
    wait_rows(&s, "SELECT value FROM b.m", 1);

    let c = canary();
    for sql in hostile(&c) {
        for (how, req) in [
            (
                "POST body",
                s.client
                    .post(s.url("/api/v1/sql"))
                    .basic_auth(READER.0, Some(READER.1))
                    .body(sql.clone()),
            ),
            (
                "GET q",
                s.client
                    .get(s.url("/api/v1/sql"))
                    .basic_auth(READER.0, Some(READER.1))
                    .query(&[("q", sql.as_str())]),
            ),
            (
                "JSON body",
                s.client
                    .post(s.url("/api/v1/sql"))
                    .basic_auth(READER.0, Some(READER.1))
                    .json(&serde_json::json!({ "query": sql })),
            ),
        ] {
            let r = req.send().unwrap();
            let status = r.status().as_u16();
            let text = r.text().unwrap();
            assert!(
                status == 400 || status == 403,
                "{how} {sql:?}: {status} {text}"
            );
            let body: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{how} {sql:?}: not a JSON error ({e}): {text}"));
            let message = body["error"].as_str().unwrap_or("");
            assert!(message.len() > 10, "{how} {sql:?}: unclear message {text}");
            assert!(
                !text.contains(&c.secret),
                "{how} {sql:?} read the canary: {text}"
            );
            assert!(
                !std::path::Path::new(&c.out).exists(),
                "{how} {sql:?} wrote a file"
            );
        }
    }
    // A few of the messages, as a user reads them.
    let why = |sql: &str| sql_as(&s, READER, sql).1.unwrap();
    assert!(why("/* /* */ SELECT ' */ DROP DATABASE a -- '").contains("MUTATING"));
    assert!(why(&format!("SELECT file('{}')", c.path)).contains("file()"));
    assert!(why(&format!("SELECT 'x' INTO OUTFILE '{}'", c.out)).contains("INTO OUTFILE"));
    assert!(why("SELECT 1; SELECT 2").contains("one statement per request"));
    assert!(why("SELECT 1 +").contains("Syntax error"));
    assert!(why("SELECT * FROM system.processes").contains("system.processes"));

    // Admins keep DDL, but not SYSTEM or database lifecycle through SQL.
    assert_eq!(sql_as(&s, ADMIN, "DROP DATABASE a").0, 403);
    assert_eq!(
        sql_as(&s, ADMIN, "/* /* */ SELECT ' */ DROP DATABASE b -- '").0,
        403
    );
    assert_eq!(sql_as(&s, ADMIN, "SYSTEM SHUTDOWN").0, 403);
    assert_eq!(sql_as(&s, ADMIN, "SELECT 1; SELECT 2").0, 400);

    // Nothing read, nothing written, nothing changed.
    let names: Vec<_> = std::fs::read_dir(c.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("secret.txt")]);
    assert_eq!(
        admin_query(&s, "SHOW DATABASES")["results"][0]["series"][0]["values"],
        serde_json::json!([["a"], ["b"]])
    );
    assert_eq!(
        rows_as(
            &s,
            ADMIN,
            "SELECT name FROM system.databases WHERE name IN ('a', 'b') ORDER BY name"
        ),
        vec![
            serde_json::json!({"name": "a"}),
            serde_json::json!({"name": "b"})
        ]
    );
    assert_eq!(rows_as(&s, READER, "SELECT value FROM a.m").len(), 1);

    // Ingest keeps flowing: several measurements (so both flusher
    // connections insert), each readable afterwards.
    for i in 0..6 {
        write_as(
            &s,
            READER,
            "a",
            &format!("after{i},host=x value={i} 2000000000\n"),
        );
    }
    for i in 0..6 {
        wait_rows(&s, &format!("SELECT value FROM a.after{i}"), 1);
    }
    assert_every_sql_connection_is_clean(&s, 2);
    assert!(s.get("/ping").status() == 204, "the server is alive");
}

#[test]
fn sql_users_read_only_their_databases() {
    let dir = data_dir();
    let s = server(dir.path(), "");
    admin_query(&s, "CREATE DATABASE a; CREATE DATABASE b");
    write_as(&s, ADMIN, "a", "m value=1 1000000000\n");
    write_as(&s, ADMIN, "b", "m value=2 1000000000\n");
    wait_rows(&s, "SELECT value FROM a.m", 1);
    wait_rows(&s, "SELECT value FROM b.m", 1);

    let mine = rows_as(&s, READER, "SELECT value FROM a.m");
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["value"].as_f64(), Some(1.0));
    for denied in [
        "SELECT value FROM b.m",
        "SELECT * FROM view(SELECT value FROM b.m)",
        "SELECT value FROM a.m WHERE value IN (SELECT value FROM b.m)",
        "SELECT query FROM system.processes",
        "SHOW PROCESSLIST",
    ] {
        let (status, body) = sql_as(&s, READER, denied);
        assert_eq!(status, 403, "{denied}: {body:?}");
    }
    // The catalogue is filtered by the engine's grants.
    assert_eq!(
        rows_as(
            &s,
            READER,
            "SELECT name FROM system.databases WHERE name IN ('a', 'b')"
        ),
        vec![serde_json::json!({"name": "a"})]
    );
    assert_eq!(
        rows_as(
            &s,
            READER,
            "SELECT database FROM system.tables WHERE database IN ('a', 'b')"
        ),
        vec![serde_json::json!({"database": "a"})]
    );
    // The admin reads every database and the engine's state.
    assert_eq!(rows_as(&s, ADMIN, "SELECT value FROM b.m").len(), 1);
    let procs = rows_as(&s, ADMIN, "SELECT count() > 0 AS n FROM system.processes");
    assert_eq!(procs, vec![serde_json::json!({"n": 1})]);
}

#[test]
fn failed_timed_out_and_abandoned_sql_leaves_nothing_behind() {
    let dir = data_dir();
    let s = server(dir.path(), "[sql]\nmax_execution_secs = 3\n");
    assert_every_sql_connection_is_clean(&s, 2);

    // Fails mid-stream: the answer is cut (never a complete 200), and the
    // next statements see only their own rows.
    let (status, body) = sql_as(
        &s,
        READER,
        "SELECT number AS leak, throwIf(number = 400000) FROM numbers(450000)",
    );
    assert!(status != 200 || body.is_err(), "{status} {body:?}");
    assert_every_sql_connection_is_clean(&s, 2);

    // Times out before any output, and part-way through a stream.
    let started = Instant::now();
    let (status, body) = sql_as(&s, READER, "SELECT count() FROM system.numbers");
    let took = started.elapsed();
    assert_eq!(status, 400, "{body:?}");
    assert!(body.unwrap().contains("max_execution_secs"));
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(6),
        "{took:?}"
    );
    assert_every_sql_connection_is_clean(&s, 2);
    let (status, body) = sql_as(
        &s,
        READER,
        "SELECT number AS leak, sleepEachRow(0.00002) FROM numbers(900000)",
    );
    assert!(status != 200 || body.is_err(), "{status} {body:?}");
    assert_every_sql_connection_is_clean(&s, 2);

    // The client goes away while the statement runs inside the engine (no
    // output yet), and again part-way through a streamed answer. The
    // statement is killed at once: both slots are free well before 3 s.
    let auth = format!("Authorization: Basic {}\r\n", basic(READER));
    for sql in [
        "SELECT count() FROM system.numbers",
        "SELECT number AS leak FROM numbers(900000)",
    ] {
        let mut c = TcpStream::connect(s.addr).unwrap();
        write!(
            c,
            "POST /api/v1/sql?format=jsoneachrow HTTP/1.1\r\nHost: {}\r\n{auth}Content-Length: {}\r\n\r\n{sql}",
            s.addr,
            sql.len()
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let mut some = [0u8; 1024];
        c.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let _ = c.read(&mut some);
        let gone = Instant::now();
        drop(c);
        std::thread::sleep(Duration::from_millis(300));
        assert_every_sql_connection_is_clean(&s, 2);
        assert!(
            gone.elapsed() < Duration::from_millis(2500),
            "{sql}: the abandoned statement held its slot"
        );
    }
}

fn basic(who: (&str, &str)) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", who.0, who.1))
}

#[test]
fn runaway_sql_cannot_starve_ingest_or_metrics() {
    let dir = data_dir();
    let s = server(
        dir.path(),
        "[sql]\nmax_concurrent_queries = 4\nmax_execution_secs = 5\n",
    );
    admin_query(&s, "CREATE DATABASE a");
    write_as(&s, READER, "a", "warm value=0 1000000000\n");
    wait_rows(&s, "SELECT value FROM a.warm", 1);

    let started = Instant::now();
    std::thread::scope(|scope| {
        let runaways: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let t = Instant::now();
                    let r = sql_as(&s, READER, "SELECT count() FROM system.numbers");
                    (r, t.elapsed())
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        // A fifth is refused at once, with Retry-After.
        let t = Instant::now();
        let r = s
            .client
            .post(s.url("/api/v1/sql"))
            .basic_auth(READER.0, Some(READER.1))
            .body("SELECT 1")
            .send()
            .unwrap();
        assert_eq!(r.status(), 503);
        assert!(r.headers().contains_key("retry-after"));
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "{:?}",
            t.elapsed()
        );

        // While they run: writes are flushed within the normal lag, and
        // /metrics answers within 1 s.
        let mut i = 0;
        while started.elapsed() < Duration::from_secs(4) {
            write_as(
                &s,
                READER,
                "a",
                &format!("busy value={i} {}\n", 2_000_000_000 + i),
            );
            let sent = Instant::now();
            loop {
                let h: Value = s.get("/health").json().unwrap();
                if h["wal"]["flushed_seq"] == h["wal"]["last_seq"] {
                    break;
                }
                assert!(
                    sent.elapsed() < Duration::from_secs(2),
                    "a write waited more than 2 s to be flushed: {h}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            let t = Instant::now();
            let m = s.get("/metrics");
            assert_eq!(m.status(), 200);
            let _ = m.text().unwrap();
            assert!(
                t.elapsed() < Duration::from_secs(1),
                "/metrics took {:?}",
                t.elapsed()
            );
            i += 1;
        }
        assert!(i >= 5, "only {i} write rounds");

        // The runaways end at their time limit, with a clear 400.
        for h in runaways {
            let ((status, body), took) = h.join().unwrap();
            let body = body.unwrap();
            assert_eq!(status, 400, "{body}");
            assert!(body.contains("max_execution_secs"), "{body}");
            assert!(
                took >= Duration::from_millis(4500) && took < Duration::from_secs(8),
                "{took:?}"
            );
        }
    });
    let n = rows_as(&s, READER, "SELECT count() AS n FROM a.busy");
    assert!(
        n[0]["n"].as_u64().unwrap_or(0) >= 5 || n[0]["n"].as_str().is_some(),
        "{n:?}"
    );
}

#[test]
fn sql_answers_stream_as_whole_documents() {
    let dir = data_dir();
    let s = server(dir.path(), "");
    let get = |format: &str, sql: &str| {
        let r = s
            .client
            .post(s.url(&format!("/api/v1/sql?format={format}")))
            .basic_auth(READER.0, Some(READER.1))
            .body(sql.to_string())
            .send()
            .unwrap();
        let status = r.status();
        let body = r.bytes().unwrap();
        assert_eq!(status, 200, "{sql}: {}", String::from_utf8_lossy(&body));
        body
    };
    // Several engine blocks, one document each way.
    let big = "SELECT number AS n, toString(number) AS s FROM numbers(300000)";
    let json: Value = serde_json::from_slice(&get("json", big)).unwrap();
    assert_eq!(json["rows"], 300000);
    assert_eq!(json["data"].as_array().unwrap().len(), 300000);
    assert_eq!(json["meta"][0]["name"], "n");
    let csv = get("csv", big);
    let csv = std::str::from_utf8(&csv).unwrap();
    assert_eq!(csv.lines().count(), 300001);
    assert_eq!(csv.lines().filter(|l| l.starts_with("\"n\"")).count(), 1);
    let (schemas, rows) = arrow_messages(&get("arrow", big));
    assert_eq!((schemas, rows), (1, 300000));
    let ndjson = get("jsoneachrow", big);
    assert_eq!(
        ndjson
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        300000
    );
    // Empty results are still documents.
    let empty: Value = serde_json::from_slice(&get("json", "SELECT 1 AS x WHERE 0")).unwrap();
    assert_eq!(empty["rows"], 0);
    // Statements the engine does not stream answer whole.
    let shown = get("jsoneachrow", "EXPLAIN SYNTAX SELECT 1");
    assert_eq!(
        std::str::from_utf8(&shown).unwrap(),
        "{\"explain\":\"SELECT 1\"}\n{\"explain\":\"FROM system.one\"}\n"
    );
}

/// Walks one Arrow IPC stream (without decompressing the bodies: the engine
/// compresses them with lz4): schema messages and record-batch rows, up to a
/// single end marker at the very end.
fn arrow_messages(stream: &[u8]) -> (usize, i64) {
    use engine::arrow::ipc::{root_as_message, MessageHeader};
    let (mut at, mut schemas, mut rows) = (0usize, 0usize, 0i64);
    loop {
        assert_eq!(
            &stream[at..at + 4],
            &[0xFF; 4],
            "continuation marker at {at}"
        );
        let len = i32::from_le_bytes(stream[at + 4..at + 8].try_into().unwrap()) as usize;
        if len == 0 {
            assert_eq!(at + 8, stream.len(), "the end marker ends the stream");
            return (schemas, rows);
        }
        let message = root_as_message(&stream[at + 8..at + 8 + len]).unwrap();
        match message.header_type() {
            MessageHeader::Schema => schemas += 1,
            MessageHeader::RecordBatch => {
                rows += message.header_as_record_batch().unwrap().length()
            }
            other => panic!("unexpected message {other:?}"),
        }
        at += 8 + len + message.bodyLength() as usize;
    }
}

#[test]
fn get_query_cannot_change_state_and_cross_site_requests_are_refused() {
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    // GET /query with DROP: 405 with InfluxDB 1.x's text, nothing in the
    // query runs (not even the CREATE before it).
    for q in [
        "DROP DATABASE x",
        "SHOW DATABASES; DROP DATABASE x",
        "CREATE DATABASE y; DROP DATABASE y",
    ] {
        let r = s
            .client
            .get(s.url("/query"))
            .query(&[("q", q)])
            .send()
            .unwrap();
        assert_eq!(r.status(), 405, "{q}");
        assert_eq!(r.headers()["allow"], "POST");
        let body: Value = r.json().unwrap();
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .ends_with("in a read only context, please use a POST request instead"),
            "{body}"
        );
    }
    // No databases: no `values` (InfluxDB leaves empty ones out).
    assert_eq!(
        s.query("SHOW DATABASES")["results"][0]["series"][0],
        serde_json::json!({"name": "databases", "columns": ["name"]}),
        "no database was created"
    );
    // GET CREATE DATABASE runs, with InfluxDB 1.x's warning (issue #23: TSBS's
    // loader sends `CREATE DATABASE benchmark WITH REPLICATION 1` so); it is
    // idempotent and destroys nothing.
    for _ in 0..2 {
        let r = s
            .client
            .get(s.url("/query"))
            .query(&[("q", "CREATE DATABASE benchmark WITH REPLICATION 1")])
            .send()
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.json::<Value>().unwrap(),
            serde_json::json!({"results": [{"statement_id": 0, "messages": [{
                "level": "warning",
                "text": "deprecated use of 'CREATE DATABASE benchmark WITH REPLICATION 1' in a read only context, please use a POST request instead"
            }]}]})
        );
    }
    assert_eq!(
        s.query("SHOW DATABASES")["results"][0]["series"][0]["values"],
        serde_json::json!([["benchmark"]])
    );
    assert_eq!(s.post("/write?db=benchmark", "m v=1 1").status(), 204);
    assert_eq!(s.get("/query?q=SHOW+DATABASES").status(), 200);

    // Auth off: a browser request from another site is refused on every
    // endpoint that writes or runs statements; same-origin and non-browser
    // clients are served.
    let evil = "https://evil.example";
    let same = format!("http://{}", s.addr);
    let cases: Vec<(&str, &str, &str)> = vec![
        ("/write?db=x", "m v=1", "write"),
        ("/api/v2/write?bucket=x", "m v=1", "v2 write"),
        ("/query", "q=CREATE+DATABASE+evil", "query"),
        ("/api/v1/sql", "SELECT 1", "sql"),
    ];
    for (path, body, what) in &cases {
        let r = s
            .client
            .post(s.url(path))
            .header("Origin", evil)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body.to_string())
            .send()
            .unwrap();
        assert_eq!(r.status(), 403, "{what}");
        let r = s
            .client
            .post(s.url(path))
            .header("Sec-Fetch-Site", "cross-site")
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body.to_string())
            .send()
            .unwrap();
        assert_eq!(r.status(), 403, "{what} (Sec-Fetch-Site)");
    }
    // A GET that creates a database (as InfluxDB 1.x allows) is a state
    // change too: from another site it is refused before it runs.
    for header in [("Origin", evil), ("Sec-Fetch-Site", "cross-site")] {
        let r = s
            .client
            .get(s.url("/query"))
            .header(header.0, header.1)
            .query(&[("q", "CREATE DATABASE evil")])
            .send()
            .unwrap();
        assert_eq!(r.status(), 403, "GET CREATE DATABASE with {header:?}");
    }
    // Only the database the same-site GET created above.
    assert_eq!(
        s.query("SHOW DATABASES")["results"][0]["series"][0]["values"],
        serde_json::json!([["benchmark"]]),
        "the cross-site CREATE did not run"
    );
    let r = s
        .client
        .post(s.url("/query"))
        .header("Origin", &same)
        .form(&[("q", "CREATE DATABASE mine")])
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = s
        .client
        .post(s.url("/api/v1/sql"))
        .header("Origin", &same)
        .body("SELECT 1")
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        s.post("/write?db=mine", "m v=1").status(),
        204,
        "no Origin: not a browser"
    );
    let r = s
        .client
        .get(s.url("/ping"))
        .header("Origin", evil)
        .send()
        .unwrap();
    assert_eq!(r.status(), 204);

    // Auth off, anonymous: the issue's examples are refused too.
    let c = canary();
    for sql in [
        "/* /* */ SELECT ' */ DROP DATABASE mine -- '".to_string(),
        format!("SELECT * FROM file//\n('{}','LineAsString')", c.path),
        format!("SELECT 'pwn' INTO # x\nOUTFILE '{}' FORMAT RawBLOB", c.out),
        "SELECT query FROM system.processes".to_string(),
    ] {
        let r = s.post("/api/v1/sql", sql.clone());
        let status = r.status().as_u16();
        let text = r.text().unwrap();
        assert!(status == 400 || status == 403, "{sql}: {status} {text}");
        assert!(!text.contains(&c.secret));
    }
    assert!(!std::path::Path::new(&c.out).exists());
    assert_eq!(
        s.query("SHOW DATABASES")["results"][0]["series"][0]["values"],
        serde_json::json!([["benchmark"], ["mine"]])
    );
}

#[test]
fn the_engine_ignores_a_config_xml_in_the_working_directory() {
    let dir = data_dir();
    // What a stray config.xml in the server's working directory would add.
    let cwd = dir.path().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(
        cwd.join("config.xml"),
        "<clickhouse><macros><m>from_cwd</m></macros><remote_servers><evil_cluster><shard>\
         <replica><host>127.0.0.1</host><port>9000</port></replica></shard></evil_cluster>\
         </remote_servers></clickhouse>",
    )
    .unwrap();
    let config = dir.path().join("chingest.toml");
    std::fs::write(
        &config,
        format!(
            "[auth]\nenabled = true\n[[auth.users]]\nname = \"admin\"\npassword_hash = \"{}\"\nadmin = true\n",
            hash(ADMIN.1)
        ),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let log = dir.path().join("server.log");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_chingest"))
        .args(["serve", "--config"])
        .arg(&config)
        .current_dir(&cwd)
        .env("CHINGEST_SERVER__LISTEN", addr.to_string())
        .env("CHINGEST_STORAGE__DATA_DIR", dir.path().join("data"))
        .env("CHINGEST_FLUSH__CONNECTIONS", "2")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let s = Server {
        child: Some(child),
        addr,
        base: format!("http://{addr}"),
        log,
        client: reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(0)
            .build()
            .unwrap(),
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    while s.client.get(s.url("/ping")).send().map(|r| r.status()).ok()
        != Some(reqwest::StatusCode::NO_CONTENT)
    {
        assert!(
            Instant::now() < deadline,
            "no /ping; log:\n{}",
            s.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        rows_as(
            &s,
            ADMIN,
            "SELECT count() AS n FROM system.clusters WHERE cluster = 'evil_cluster'"
        ),
        vec![serde_json::json!({"n": 0})]
    );
    let (status, body) = sql_as(&s, ADMIN, "SELECT getMacro('m')");
    assert_eq!(status, 400, "{body:?}");
    // The engine booted from the file chingest wrote into its data directory.
    let engine_config = dir.path().join("data/chdb/chingest-engine.xml");
    assert!(std::fs::read_to_string(engine_config)
        .unwrap()
        .contains("chingest-users.xml"));
}
