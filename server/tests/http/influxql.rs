//! InfluxQL `SELECT` on `/query` over a real socket against the real engine:
//! known points (one written twice with different fields), then exact answers
//! for raw reads, conditions, point identity, ordering, limits, aggregates,
//! `GROUP BY time`/tags with fill, and InfluxDB's errors.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::*;

/// 2020-09-13T12:26:40Z in ns.
const T0: i64 = 1_600_000_000_000_000_000;
const S: i64 = 1_000_000_000;

/// `GET /query` with `q` and extra parameters; (status, body).
fn get(s: &Server, q: &str, extra: &[(&str, &str)]) -> (u16, Value) {
    let mut params = vec![("q", q)];
    params.extend_from_slice(extra);
    let r = s.client.get(s.url("/query")).query(&params).send().unwrap();
    (r.status().as_u16(), r.json().unwrap())
}

/// The first statement's result of `q` on database `iq`, epoch in seconds.
fn result(s: &Server, q: &str) -> Value {
    let (status, body) = get(s, q, &[("db", "iq"), ("epoch", "s")]);
    assert_eq!(status, 200, "{q}: {body}");
    body["results"][0].clone()
}

fn series(s: &Server, q: &str) -> Value {
    result(s, q)["series"].clone()
}

fn setup() -> (tempfile::TempDir, Server) {
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    s.query("CREATE DATABASE iq");
    let write = |body: String| {
        let r = s.post("/write?db=iq", body);
        assert_eq!(r.status(), 204);
    };
    write(format!(
        "cpu,host=a,region=us value=1,count=10i {t0}\n\
         cpu,host=a,region=us value=2,count=20i {t1}\n\
         cpu,host=b value=3 {t0}\n\
         cpu,host=b value=5,count=50i {t2}\n\
         mem,host=a used=7i,note=\"x\" {t0}\n",
        t0 = T0,
        t1 = T0 + 10 * S,
        t2 = T0 + 20 * S
    ));
    // The same point again (same series and time), another request: its
    // `value` wins, its absent `count` keeps the first write's.
    write(format!("cpu,host=a,region=us value=1.5 {T0}\n"));
    // Flushing is asynchronous: wait until every point (and the rewrite) reads back.
    let deadline = Instant::now() + Duration::from_secs(30);
    let flushed = |q: &str| !series(&s, q).is_null();
    while !(flushed("SELECT value FROM cpu WHERE host = 'a' AND value = 1.5")
        && flushed("SELECT value FROM cpu WHERE value = 5")
        && flushed("SELECT used FROM mem"))
    {
        assert!(Instant::now() < deadline, "the points never read back");
        std::thread::sleep(Duration::from_millis(100));
    }
    (dir, s)
}

#[test]
fn influxql_select_raw_conditions_identity_order_and_limits() {
    let (_dir, s) = setup();
    let (t0, t1, t2) = (T0 / S, T0 / S + 10, T0 / S + 20);

    // `*`: time, then fields and tags by name; the rewritten point is merged
    // (value from the second write, count from the first); series by tags at
    // one time; a tag a series lacks is null.
    assert_eq!(
        series(&s, "SELECT * FROM cpu"),
        json!([{"name": "cpu", "columns": ["time", "count", "host", "region", "value"], "values": [
            [t0, 10, "a", "us", 1.5],
            [t0, null, "b", null, 3],
            [t1, 20, "a", "us", 2],
            [t2, 50, "b", null, 5]
        ]}])
    );
    // Fields and tags by name, alias, cast, arithmetic.
    assert_eq!(
        series(
            &s,
            "SELECT value AS v, host, value * 2, count::float FROM cpu WHERE host = 'a'"
        ),
        json!([{"name": "cpu", "columns": ["time", "v", "host", "value", "count"], "values": [
            [t0, 1.5, "a", 3, 10],
            [t1, 2, "a", 4, 20]
        ]}])
    );
    // A point shows when one of the selected fields is there.
    assert_eq!(
        series(&s, "SELECT count FROM cpu")[0]["values"],
        json!([[t0, 10], [t1, 20], [t2, 50]])
    );
    // Field conditions apply to the merged point (value 1 was overwritten).
    assert_eq!(
        series(&s, "SELECT value FROM cpu WHERE value < 1.2 OR value = 3")[0]["values"],
        json!([[t0, 3]])
    );
    // Regexes, missing tags as empty strings, AND/OR with parentheses.
    assert_eq!(
        series(
            &s,
            "SELECT value FROM cpu WHERE host =~ /^b$/ AND (region = '' OR value > 100)"
        )[0]["values"],
        json!([[t0, 3], [t2, 5]])
    );
    assert_eq!(
        series(&s, "SELECT value FROM cpu WHERE region !~ /u/")[0]["values"],
        json!([[t0, 3], [t2, 5]])
    );
    // Time ranges: RFC3339, epoch with units, now().
    assert_eq!(
        series(
            &s,
            "SELECT value FROM cpu WHERE time >= '2020-09-13T12:26:50Z' AND time < 1600000020000ms"
        )[0]["values"],
        json!([[t1, 2]])
    );
    assert!(series(&s, "SELECT value FROM cpu WHERE time > now() - 1h").is_null());
    // ORDER BY time DESC, LIMIT/OFFSET per series.
    assert_eq!(
        series(
            &s,
            "SELECT count FROM cpu ORDER BY time DESC LIMIT 2 OFFSET 1"
        )[0]["values"],
        json!([[t1, 20], [t0, 10]])
    );
    assert_eq!(
        series(&s, "SELECT value FROM cpu GROUP BY host LIMIT 1"),
        json!([
            {"name": "cpu", "tags": {"host": "a"}, "columns": ["time", "value"], "values": [[t0, 1.5]]},
            {"name": "cpu", "tags": {"host": "b"}, "columns": ["time", "value"], "values": [[t0, 3]]}
        ])
    );
    // Hostile strings are values, never SQL.
    assert!(series(&s, r"SELECT value FROM cpu WHERE host = 'a\' OR \'1\'=\'1'").is_null());
    // Regex sources, qualified names, several statements.
    let (status, body) = get(
        &s,
        "SELECT used, note FROM \"iq\".\"autogen\"./^m/; SELECT value FROM iq..cpu WHERE host = 'b' LIMIT 1",
        &[("epoch", "ms")],
    );
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"results": [
            {"statement_id": 0, "series": [{"name": "mem", "columns": ["time", "used", "note"], "values": [[T0 / 1_000_000, 7, "x"]]}]},
            {"statement_id": 1, "series": [{"name": "cpu", "columns": ["time", "value"], "values": [[T0 / 1_000_000, 3]]}]}
        ]})
    );
    // RFC3339 times by default.
    let (_, body) = get(
        &s,
        "SELECT value FROM cpu WHERE host = 'a' LIMIT 1",
        &[("db", "iq")],
    );
    assert_eq!(
        body["results"][0]["series"][0]["values"],
        json!([["2020-09-13T12:26:40Z", 1.5]])
    );
}

#[test]
fn influxql_aggregates_groups_fill_and_errors() {
    let (_dir, s) = setup();
    let t0 = T0 / S;
    assert_eq!(
        series(
            &s,
            "SELECT mean(value), count(value), sum(count), min(value), spread(value) FROM cpu"
        ),
        json!([{"name": "cpu", "columns": ["time", "mean", "count", "sum", "min", "spread"], "values": [
            [0, 2.875, 4, 80, 1.5, 3.5]
        ]}])
    );
    // A lone selector answers its point's time, and other fields of that point.
    assert_eq!(
        series(&s, "SELECT max(value), host FROM cpu"),
        json!([{"name": "cpu", "columns": ["time", "max", "host"], "values": [[t0 + 20, 5, "b"]]}])
    );
    assert_eq!(
        series(
            &s,
            "SELECT first(value), last(value) FROM cpu GROUP BY host"
        ),
        json!([
            {"name": "cpu", "tags": {"host": "a"}, "columns": ["time", "first", "last"], "values": [[0, 1.5, 2]]},
            {"name": "cpu", "tags": {"host": "b"}, "columns": ["time", "first", "last"], "values": [[0, 3, 5]]}
        ])
    );
    // GROUP BY time(...), tag, fill.
    let q = format!(
        "SELECT count(value) FROM cpu WHERE time >= {T0} AND time < {} GROUP BY time(10s), host",
        T0 + 30 * S
    );
    assert_eq!(
        series(&s, &q),
        json!([
            {"name": "cpu", "tags": {"host": "a"}, "columns": ["time", "count"], "values": [[t0, 1], [t0 + 10, 1], [t0 + 20, 0]]},
            {"name": "cpu", "tags": {"host": "b"}, "columns": ["time", "count"], "values": [[t0, 1], [t0 + 10, 0], [t0 + 20, 1]]}
        ])
    );
    let q = format!(
        "SELECT mean(value) FROM cpu WHERE time >= {T0} AND time < {} GROUP BY time(10s) fill(previous)",
        T0 + 40 * S
    );
    assert_eq!(
        series(&s, &q)[0]["values"],
        json!([[t0, 2.25], [t0 + 10, 2], [t0 + 20, 5], [t0 + 30, 5]])
    );
    let q = format!(
        "SELECT max(value) FROM cpu WHERE time >= {T0} AND time < {} GROUP BY time(10s) fill(none) ORDER BY time DESC",
        T0 + 40 * S
    );
    assert_eq!(
        series(&s, &q)[0]["values"],
        json!([[t0 + 20, 5], [t0 + 10, 2], [t0, 3]])
    );
    // An empty range has no series.
    assert!(series(&s, "SELECT mean(value) FROM cpu WHERE time > now()").is_null());

    // InfluxDB's errors, each in its statement's result.
    for (q, error) in [
        (
            "SELECT mean(value), value FROM cpu",
            "mixing aggregate and non-aggregate queries is not supported",
        ),
        ("SELECT foo(value) FROM cpu", "undefined function foo()"),
        (
            "SELECT value FROM cpu GROUP BY time(1m)",
            "GROUP BY requires at least one aggregate function",
        ),
        ("SELECT value FROM nope..cpu", "database not found: nope"),
        (
            "SELECT value FROM iq.weekly.cpu",
            "retention policy not found: weekly",
        ),
    ] {
        assert_eq!(result(&s, q)["error"], json!(error), "{q}");
    }
    let (status, body) = get(&s, "SELECT value FROM cpu", &[]);
    assert_eq!(
        (status, &body["results"][0]["error"]),
        (200, &json!("database name required"))
    );
    // INTO a database that does not exist: InfluxDB's error, nothing written (POST: a GET
    // of a statement that writes answers 405).
    let into = "SELECT value INTO nosuch..other FROM cpu";
    assert_eq!(get(&s, into, &[("db", "iq")]).0, 405);
    let r = s
        .client
        .post(s.url("/query?db=iq"))
        .form(&[("q", into)])
        .send()
        .unwrap();
    assert_eq!(
        r.json::<Value>().unwrap()["results"][0]["error"],
        json!("database not found: nosuch")
    );
    // A parse error is the request's: 400.
    let (status, body) = get(&s, "SELECT FROM cpu", &[("db", "iq")]);
    assert_eq!(status, 400);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("error parsing query: "),
        "{body}"
    );
}

#[test]
fn influxql_transformations_subqueries_selectors_and_show_where() {
    let (_dir, s) = setup();
    let (t0, t1, t2) = (T0 / S, T0 / S + 10, T0 / S + 20);
    // Transformations of points (over the merged point: 1.5, not 1).
    assert_eq!(
        series(&s, "SELECT derivative(value, 1s) FROM cpu WHERE host = 'a'")[0]["values"],
        json!([[t1, 0.05]])
    );
    assert_eq!(
        series(&s, "SELECT difference(count) FROM cpu")[0]["values"],
        json!([[t1, 10], [t2, 30]])
    );
    // ... and of intervals, with arithmetic around them.
    let q = format!(
        "SELECT non_negative_derivative(max(value), 10s) * 2 AS r FROM cpu WHERE time >= {T0} AND time < {} GROUP BY time(10s) fill(none)",
        T0 + 30 * S
    );
    assert_eq!(
        series(&s, &q)[0]["values"],
        json!([[t2, 6]]),
        "3 → 2 is negative (dropped), 2 → 5 per 10 s is 3, times 2"
    );
    // A subquery: the inner answer is the outer statement's table.
    assert_eq!(
        series(
            &s,
            "SELECT max(m) FROM (SELECT mean(value) AS m FROM cpu GROUP BY host)"
        ),
        json!([{"name": "cpu", "columns": ["time", "max"], "values": [[0, 4]]}])
    );
    assert_eq!(
        series(
            &s,
            "SELECT m FROM (SELECT mean(value) AS m FROM cpu GROUP BY host) WHERE m < 2"
        ),
        json!([{"name": "cpu", "columns": ["time", "m"], "values": [[0, 1.75]]}])
    );
    // Selectors of several points, with the points' other values.
    assert_eq!(
        series(&s, "SELECT top(value, 2), host FROM cpu"),
        json!([{"name": "cpu", "columns": ["time", "top", "host"], "values": [[t0, 3, "b"], [t2, 5, "b"]]}])
    );
    assert!(
        series(&s, "SELECT distinct(host) FROM cpu").is_null(),
        "a tag is no field: nothing to answer"
    );
    assert_eq!(
        series(
            &s,
            "SELECT percentile(value, 50), median(value), mode(count) FROM cpu"
        )[0]["values"],
        json!([[0, 2, 2.5, 10]])
    );
    // SHOW ... WHERE: the engine says which series match.
    assert_eq!(
        series(
            &s,
            "SHOW TAG VALUES FROM cpu WITH KEY = host WHERE region = 'us'"
        ),
        json!([{"name": "cpu", "columns": ["key", "value"], "values": [["host", "a"]]}])
    );
    assert_eq!(
        series(&s, "SHOW SERIES WHERE host = 'b'"),
        json!([{"columns": ["key"], "values": [["cpu,host=b"]]}])
    );
    assert_eq!(
        series(&s, "SHOW MEASUREMENTS WHERE region =~ /u/"),
        json!([{"name": "measurements", "columns": ["name"], "values": [["cpu"]]}])
    );
}

#[test]
fn influxql_reads_only_what_the_caller_may_read() {
    let dir = data_dir();
    let config = format!(
        "[auth]\nenabled = true\n\n[[auth.users]]\nname = \"admin\"\npassword_hash = \"{}\"\nadmin = true\n\n\
         [[auth.users]]\nname = \"reader\"\npassword_hash = \"{}\"\nread = [\"a\"]\n",
        hash("adminpw"),
        hash("readerpw")
    );
    let s = Spawn::new(dir.path()).config(&config).start();
    let as_user = |user: &str, pw: &str, q: &str| -> (u16, Value) {
        let r = s
            .client
            .post(s.url("/query"))
            .basic_auth(user, Some(pw))
            .form(&[("q", q), ("epoch", "s")])
            .send()
            .unwrap();
        (r.status().as_u16(), r.json().unwrap())
    };
    as_user("admin", "adminpw", "CREATE DATABASE a; CREATE DATABASE b");
    for db in ["a", "b"] {
        let r = s
            .client
            .post(s.url(&format!("/write?db={db}")))
            .basic_auth("admin", Some("adminpw"))
            .body("m,host=h value=1 1000000000\n")
            .send()
            .unwrap();
        assert_eq!(r.status(), 204);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while as_user(
        "admin",
        "adminpw",
        "SELECT value FROM b..m; SELECT value FROM a..m",
    )
    .1["results"][1]["series"]
        .is_null()
        || as_user("admin", "adminpw", "SELECT value FROM b..m").1["results"][0]["series"].is_null()
    {
        assert!(Instant::now() < deadline, "never flushed");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, body) = as_user("reader", "readerpw", "SELECT value FROM a..m");
    assert_eq!(status, 200);
    assert_eq!(body["results"][0]["series"][0]["values"], json!([[1, 1]]));
    // A 403 naming the statement and what it requires, as InfluxDB 1.x answers.
    let refused = |q: &str, named: &str, requirement: &str| {
        let (status, body) = as_user("reader", "readerpw", q);
        assert_eq!(status, 403, "{q}: {body}");
        assert_eq!(
            body,
            json!({"error": format!(
                "error authorizing query: reader not authorized to execute statement '{named}', requires {requirement}"
            )}),
            "{q}"
        );
    };
    for q in [
        "SELECT value FROM b..m",
        "SELECT max(v) FROM (SELECT value AS v FROM b..m)",
        "SHOW TAG VALUES ON b WITH KEY = host WHERE host = 'h'",
    ] {
        // Refused whole, before anything runs, as InfluxDB 1.x does.
        refused(q, q, "READ on b");
    }
    // DELETE (and DROP SERIES) need WRITE on the request's database, as in InfluxDB 1.x.
    refused("DELETE FROM m", "DELETE FROM m", "WRITE on ");
    // SHOW QUERIES needs READ on the request's database, KILL QUERY admin, as in 1.x.
    refused("SHOW QUERIES", "SHOW QUERIES", "READ on ");
    refused("KILL QUERY 1", "KILL QUERY 1", "admin privilege");
    // User management needs admin, as in InfluxDB 1.6.7 (passwords never printed); the
    // statements chingest does not implement need what 1.6.7 requires of them (probed with
    // auth on), and are named, not quoted whole.
    for (q, named, requirement) in [
        ("DROP USER x", "DROP USER x", "admin privilege"),
        (
            "GRANT READ ON a TO reader",
            "GRANT READ ON a TO reader",
            "admin privilege",
        ),
        (
            "SET PASSWORD FOR reader = 'x'",
            "SET PASSWORD FOR reader = [REDACTED]",
            "admin privilege",
        ),
        (
            "DROP RETENTION POLICY r ON a",
            "DROP RETENTION POLICY r ON a",
            "WRITE on a",
        ),
        (
            "SHOW MEASUREMENT CARDINALITY ON b",
            "SHOW MEASUREMENT CARDINALITY",
            "READ on b",
        ),
    ] {
        refused(q, named, requirement);
    }
    // Allowed by InfluxDB's rules: answered as not supported, per statement.
    let (status, body) = as_user("reader", "readerpw", "SHOW MEASUREMENT CARDINALITY ON a");
    assert_eq!(status, 200, "{body}");
    assert!(
        body["results"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("not supported")),
        "{body}"
    );
}

/// A hostile `GROUP BY time(1ns)` over a wide range would build ~10^18 empty
/// intervals in memory: it is refused before any is built, with InfluxDB's
/// `max-select-buckets` error, and the server answers the next query at once.
#[test]
fn influxql_interval_count_is_bounded_before_fill() {
    let (_dir, s) = setup();
    for q in [
        "SELECT mean(value) FROM cpu WHERE time > 0 GROUP BY time(1ns)",
        "SELECT count(value) FROM cpu WHERE time > 0 GROUP BY time(1ns), host fill(0)",
        "SELECT mean(value) FROM cpu WHERE time > 0 GROUP BY time(1ns) fill(linear)",
    ] {
        let r = result(&s, q);
        let err = r["error"].as_str().unwrap_or_default();
        assert!(
            err.starts_with("max-select-buckets limit exceeded: ("),
            "{q}: {r}"
        );
    }
    // fill(none) builds no empty intervals: answered.
    let r = series(
        &s,
        "SELECT count(value) FROM cpu WHERE time > 0 GROUP BY time(1ns) fill(none)",
    );
    assert_eq!(r[0]["values"].as_array().map(Vec::len), Some(3), "{r}");
    // Within the limit, as before.
    assert!(!series(
        &s,
        "SELECT mean(value) FROM cpu WHERE time > 0 GROUP BY time(1h)"
    )
    .is_null());
}

/// A subquery's inner answer is handed to the engine as an Arrow batch, not
/// as statement text: 30,000 inner rows (~1.5 MB as SQL literals, past the
/// engine's 256 KiB statement limit) answer exactly.
#[test]
fn influxql_subquery_over_a_large_inner_answer() {
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    s.query("CREATE DATABASE iq");
    const N: i64 = 30_000;
    let body: String = (0..N)
        .map(|i| {
            format!(
                "big,host=h{} v={}i,s=\"x{i}\" {}\n",
                i % 3,
                2 * i,
                T0 + i * S
            )
        })
        .collect();
    assert_eq!(s.post("/write?db=iq", body).status(), 204);
    // Per host the differences add up to its last value minus its first.
    let got = series(
        &s,
        "SELECT sum(d) FROM (SELECT difference(v) AS d FROM big GROUP BY host) GROUP BY host",
    );
    let want: Vec<Value> = (0..3)
        .map(|h| {
            let first = 2 * h;
            let last = 2 * (N - 3 + h);
            json!({"name": "big", "tags": {"host": format!("h{h}")}, "columns": ["time", "sum"], "values": [[0, last - first]]})
        })
        .collect();
    assert_eq!(got, json!(want));
    // Every row and its string field come through.
    let got = series(&s, "SELECT count(s), max(v) FROM (SELECT v, s FROM big)");
    assert_eq!(got[0]["values"], json!([[0, N, 2 * (N - 1)]]));
}
