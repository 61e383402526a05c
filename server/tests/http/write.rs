//! The write path end to end: v1 and v2 writes, errors, gzip, size limits,
//! partial writes, read-back with exact values, /query, /health, /metrics.

use serde_json::{json, Value};

use crate::util::*;

const READ: &str = "SELECT toString(toUnixTimestamp64Nano(time)) AS t, city, country, temp, humidity, ok, note, toString(count) AS count FROM w.weather ORDER BY t";

fn err(r: reqwest::blocking::Response) -> (u16, Value, String) {
    let status = r.status().as_u16();
    let header = r
        .headers()
        .get("x-influxdb-error")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, r.json().unwrap(), header)
}

#[test]
fn write_path_read_back_and_every_error_class() {
    let dir = data_dir();
    let s = Spawn::new(dir.path())
        .env("CHINGEST_SERVER__MAX_BODY_BYTES", "65536")
        .env("CHINGEST_LIMITS__MAX_INFLIGHT_BYTES", "1048576")
        .start();

    // Version headers and request ids everywhere.
    let r = s
        .client
        .get(s.url("/ping"))
        .header("X-Request-Id", "req-42")
        .send()
        .unwrap();
    assert_eq!(r.status(), 204);
    assert!(r.headers()["x-influxdb-version"]
        .to_str()
        .unwrap()
        .starts_with("1.8"));
    assert!(r.headers().contains_key("x-influxdb-build"));
    assert_eq!(r.headers()["x-request-id"], "req-42");
    assert_eq!(r.headers()["request-id"], "req-42");
    let r = s.client.head(s.url("/ping")).send().unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(r.headers()["x-request-id"].len(), 36);

    // Unknown database: 404 in both shapes; db required.
    let (st, body, hdr) = err(s.post("/write?db=w", "weather temp=1"));
    assert_eq!(
        (st, body, hdr.as_str()),
        (
            404,
            json!({"error": "database not found: \"w\""}),
            "database not found: \"w\""
        )
    );
    let (st, body, _) = err(s.post("/api/v2/write?org=o&bucket=w", "weather temp=1"));
    assert_eq!(
        (st, body),
        (
            404,
            json!({"code": "not found", "message": "database not found: \"w\""})
        )
    );
    let (st, body, _) = err(s.post("/write", "weather temp=1"));
    assert_eq!((st, body), (400, json!({"error": "database is required"})));

    assert_eq!(
        s.query("CREATE DATABASE w"),
        json!({"results": [{"statement_id": 0}]})
    );
    let (st, body, _) = err(s.post("/write?db=w&consistency=most", "weather temp=1"));
    assert_eq!(
        (st, body),
        (400, json!({"error": "invalid consistency level"}))
    );
    let (st, body, _) = err(s.post("/write?db=w&rp=weekly", "weather temp=1"));
    assert_eq!(
        (st, body),
        (
            404,
            json!({"error": "retention policy not found: \"weekly\""})
        )
    );
    let (st, _, _) = err(s.post("/write?db=w&precision=d", "weather temp=1"));
    assert_eq!(st, 400);
    let (st, body, _) = err(s.post("/api/v2/write?bucket=w&precision=m", "weather temp=1"));
    assert_eq!((st, body["code"].as_str()), (400, Some("invalid")));

    // Every field type, tags, precision=s, exactly 204 with an empty body.
    let r = s.post(
        "/write?db=w&precision=s&consistency=one",
        "weather,city=paris,country=fr temp=21.5,humidity=40i,ok=true,note=\"sunny \\\"day\\\"\",count=7u 1700000000\n\
         weather,city=oslo temp=-3.25,humidity=80i,ok=false,note=\"snow\" 1700000001\n",
    );
    assert_eq!(r.status(), 204);
    assert_eq!(r.text().unwrap(), "");
    let rows = s.sql_until(READ, 2);
    assert_eq!(
        rows,
        vec![
            json!({"t": "1700000000000000000", "city": "paris", "country": "fr", "temp": 21.5, "humidity": 40, "ok": true, "note": "sunny \"day\"", "count": "7"}),
            json!({"t": "1700000001000000000", "city": "oslo", "country": "", "temp": -3.25, "humidity": 80, "ok": false, "note": "snow", "count": null}),
        ]
    );

    // Partial write: 400 with the ingest message, the good line is written.
    let r = s.post(
        "/write?db=w&precision=ms",
        "weather,city=rome temp=30 1700000002000\nweather,city=x temp=\n",
    );
    let (st, body, hdr) = err(r);
    assert_eq!(st, 400);
    let msg = body["error"].as_str().unwrap().to_string();
    assert_eq!(
        msg,
        "partial write: unable to parse 'weather,city=x temp=': missing field value dropped=0"
    );
    assert_eq!(hdr, msg);
    let rows = s.sql_until("SELECT city, temp FROM w.weather WHERE city = 'rome'", 1);
    assert_eq!(rows[0], json!({"city": "rome", "temp": 30}));
    // Only bad lines: 400, nothing written. Type conflict: partial write with dropped=1.
    let (st, body, _) = err(s.post("/write?db=w", "weather,city=y temp=\n"));
    assert_eq!(
        (st, body),
        (
            400,
            json!({"error": "unable to parse 'weather,city=y temp=': missing field value"})
        )
    );
    let (st, body, _) = err(s.post(
        "/write?db=w",
        "weather,city=z temp=\"hot\" 1700000003000000000\n",
    ));
    assert_eq!(st, 400);
    assert_eq!(
        body["error"],
        "partial write: field type conflict: input field \"temp\" on measurement \"weather\" is type string, already exists as type float dropped=1"
    );

    // v2: bucket db/rp, precision, Token header ignored with auth off.
    let r = s
        .client
        .post(s.url("/api/v2/write?org=any&bucket=w/autogen&precision=us"))
        .header("Authorization", "Token whatever")
        .body("weather,city=v2 temp=1.5 1700000004000000")
        .send()
        .unwrap();
    assert_eq!(r.status(), 204);
    let rows = s.sql_until(
        "SELECT toString(toUnixTimestamp64Nano(time)) AS t FROM w.weather WHERE city = 'v2'",
        1,
    );
    assert_eq!(rows[0]["t"], "1700000004000000000");

    // gzip (case-insensitive) and a chunked body.
    let r = s
        .client
        .post(s.url("/write?db=w"))
        .header("Content-Encoding", "GZIP")
        .body(gzip(b"weather,city=gz temp=2 1700000005000000000\n"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 204);
    let chunked = reqwest::blocking::Body::new(std::io::Cursor::new(
        b"weather,city=chunk temp=3 1700000006000000000\n".to_vec(),
    ));
    let r = s
        .client
        .post(s.url("/write?db=w"))
        .body(chunked)
        .send()
        .unwrap();
    assert_eq!(r.status(), 204);
    let (st, _) = raw_request(
        s.addr,
        "POST /write?db=w HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        b"19\r\nweather,city=raw temp=4 1\r\n0\r\n\r\n",
    );
    assert_eq!(st, 204);
    s.sql_until(
        "SELECT city FROM w.weather WHERE city IN ('gz', 'chunk', 'raw')",
        3,
    );

    // Size limits: raw, streamed without length, and decompressed.
    let big = vec![b'#'; 70_000];
    let (st, body, _) = err(s.post("/write?db=w", big.clone()));
    assert_eq!(st, 413);
    assert!(body["error"].as_str().unwrap().contains("65536"), "{body}");
    // Chunked (no Content-Length): the cap applies while streaming.
    let mut chunked_big = Vec::new();
    for _ in 0..7 {
        chunked_big.extend_from_slice(b"2710\r\n");
        chunked_big.extend_from_slice(&[b'#'; 10_000]);
        chunked_big.extend_from_slice(b"\r\n");
    }
    chunked_big.extend_from_slice(b"0\r\n\r\n");
    let (st, text) = raw_request(
        s.addr,
        "POST /write?db=w HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        &chunked_big,
    );
    assert_eq!(st, 413, "{text}");
    let bomb = gzip(&vec![b'#'; 200_000]);
    assert!(bomb.len() < 65536);
    let r = s
        .client
        .post(s.url("/api/v2/write?bucket=w"))
        .header("content-encoding", "gzip")
        .body(bomb)
        .send()
        .unwrap();
    let (st, body, _) = err(r);
    assert_eq!(
        (st, body["code"].as_str()),
        (413, Some("request too large"))
    );
    let r = s
        .client
        .post(s.url("/write?db=w"))
        .header("content-encoding", "br")
        .body("x")
        .send()
        .unwrap();
    assert_eq!(r.status(), 415);

    // /query schema statements.
    let j = s.query("SHOW DATABASES; SHOW MEASUREMENTS ON w; SHOW TAG KEYS ON w FROM weather; SHOW FIELD KEYS ON w; SHOW RETENTION POLICIES ON w");
    assert_eq!(
        j["results"][0]["series"][0],
        json!({"name": "databases", "columns": ["name"], "values": [["w"]]})
    );
    assert_eq!(j["results"][1]["series"][0]["values"], json!([["weather"]]));
    assert_eq!(
        j["results"][2]["series"][0],
        json!({"name": "weather", "columns": ["tagKey"], "values": [["city"], ["country"]]})
    );
    assert_eq!(
        j["results"][3]["series"][0]["values"],
        json!([
            ["count", "unsigned"],
            ["humidity", "integer"],
            ["note", "string"],
            ["ok", "boolean"],
            ["temp", "float"]
        ])
    );
    assert_eq!(j["results"][4]["series"][0]["values"][0][0], "autogen");
    let form = s
        .client
        .post(s.url("/query"))
        .form(&[("q", "SHOW SERIES FROM weather"), ("db", "w")])
        .send()
        .unwrap()
        .json::<Value>()
        .unwrap();
    let keys: Vec<&str> = form["results"][0]["series"][0]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v[0].as_str().unwrap())
        .collect();
    assert!(keys.contains(&"weather,city=paris,country=fr"), "{keys:?}");
    assert!(keys.contains(&"weather,city=oslo"), "{keys:?}");
    let j = s.query("SHOW TAG VALUES ON w FROM weather WITH KEY = \"country\"");
    assert_eq!(
        j["results"][0]["series"][0],
        json!({"name": "weather", "columns": ["key", "value"], "values": [["country", "fr"]]})
    );
    let r = s
        .client
        .get(s.url("/query"))
        .query(&[("q", "SELECT * FROM weather")])
        .send()
        .unwrap();
    // InfluxQL SELECT is answered (docs/influxql.md); without `db`, InfluxDB's error.
    assert_eq!(r.status(), 200);
    let body: Value = r.json().unwrap();
    assert_eq!(body["results"][0]["error"], "database name required");

    // SQL formats.
    let r = s
        .client
        .post(s.url("/api/v1/sql"))
        .header("Accept", "text/csv")
        .body("SELECT city FROM w.weather WHERE city = 'paris'")
        .send()
        .unwrap();
    assert_eq!(r.headers()["content-type"], "text/csv; charset=utf-8");
    assert_eq!(r.text().unwrap(), "\"city\"\n\"paris\"\n");
    let r = s
        .client
        .post(s.url("/api/v1/sql?format=arrow"))
        .body("SELECT 1 AS x")
        .send()
        .unwrap();
    assert_eq!(
        r.headers()["content-type"],
        "application/vnd.apache.arrow.stream"
    );
    assert!(r.bytes().unwrap().len() > 8);
    let j: Value = s
        .client
        .post(s.url("/api/v1/sql"))
        .body("SELECT count() AS n FROM w.weather")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert!(
        j["data"][0]["n"].is_string() || j["data"][0]["n"].is_number(),
        "{j}"
    );
    let r = s.post("/api/v1/sql", "SELECT 1 +");
    let (st, body, _) = err(r);
    assert_eq!(st, 400);
    assert!(
        body["error"].as_str().unwrap().contains("Syntax error"),
        "{body}"
    );
    assert_eq!(s.post("/api/v1/sql", "DROP DATABASE w").status(), 403);

    // Health and metrics.
    let h: Value = s.get("/health").json().unwrap();
    assert_eq!(h["status"], "pass");
    assert!(h["wal"]["last_seq"].as_u64().unwrap() >= 6, "{h}");
    let text = s.get("/metrics").text().unwrap();
    for name in [
        "chingest_http_request_duration_seconds_bucket{route=\"/write\"",
        "chingest_points_accepted_total",
        "chingest_lines_rejected_total{reason=\"invalid\"}",
        "chingest_process_resident_memory_bytes",
        "chingest_process_cpu_seconds_total",
        "chingest_inflight_body_bytes",
        "chingest_ingest_parse_seconds",
    ] {
        assert!(text.contains(name), "{name} missing from /metrics:\n{text}");
    }
    // The engine's own state: the rows read back above are in parts of `w`.
    let value = |text: &str, series: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no `{series}` in /metrics:\n{text}"))
    };
    assert!(value(&text, "chingest_engine_active_parts{db=\"w\"}") >= 1.0);
    assert!(value(&text, "chingest_engine_max_parts_per_table") >= 1.0);
    assert!(value(&text, "chingest_engine_inserted_rows_total") >= 3.0);
    assert!(value(&text, "chingest_engine_merged_rows_total") >= 0.0);
    assert!(value(&text, "chingest_engine_merges_running") >= 0.0);

    // DROP DATABASE removes it.
    assert_eq!(
        s.query("DROP DATABASE w"),
        json!({"results": [{"statement_id": 0}]})
    );
    let text = s.get("/metrics").text().unwrap();
    assert_eq!(value(&text, "chingest_engine_active_parts{db=\"w\"}"), 0.0);
    // No databases: InfluxDB leaves the empty `values` out.
    assert_eq!(
        s.query("SHOW DATABASES")["results"][0]["series"][0],
        json!({"name": "databases", "columns": ["name"]})
    );
    assert_eq!(s.post("/write?db=w", "weather temp=1").status(), 404);
}

#[test]
fn auto_create_and_msgpack() {
    let dir = data_dir();
    let s = Spawn::new(dir.path())
        .env("CHINGEST_SERVER__AUTO_CREATE_DATABASES", "true")
        .env("CHINGEST_LIMITS__MAX_SERIES_PER_DATABASE", "3")
        .start();
    assert_eq!(
        s.post("/write?db=auto&precision=ns", "m,t=a v=1i 5")
            .status(),
        204
    );
    assert_eq!(
        s.query("SHOW DATABASES")["results"][0]["series"][0]["values"],
        json!([["auto"]])
    );
    let rows = s.sql_until("SELECT t, v FROM auto.m", 1);
    assert_eq!(rows[0], json!({"t": "a", "v": 1}));
    // msgpack row form: [{measurement, tags, fields, timestamp}]
    let mut body = Vec::new();
    rmp_point(&mut body);
    let r = s
        .client
        .post(s.url("/write?db=auto"))
        .header("Content-Type", "application/msgpack")
        .body(body)
        .send()
        .unwrap();
    assert_eq!(r.status(), 204, "{}", r.text().unwrap_or_default());
    let rows = s.sql_until("SELECT t, v FROM auto.m WHERE t = 'mp'", 1);
    assert_eq!(rows[0], json!({"t": "mp", "v": 9}));
    // Cardinality limit: the 4th series is refused with 422, the 3rd is written.
    let (st, body, _) = err(s.post("/write?db=auto", "m,t=x v=1i 7\nm,t=y v=1i 8\n"));
    assert_eq!(st, 422, "{body}");
    let msg = body["error"].as_str().unwrap();
    assert!(
        msg.starts_with("partial write: ") && msg.ends_with(" dropped=1"),
        "{msg}"
    );
    s.sql_until("SELECT t FROM auto.m WHERE t = 'x'", 1);
}

/// `[{"measurement": "m", "tags": {"t": "mp"}, "fields": {"v": 9}, "timestamp": 6}]` by hand.
fn rmp_point(out: &mut Vec<u8>) {
    fn s(out: &mut Vec<u8>, v: &str) {
        out.push(0xa0 | v.len() as u8);
        out.extend_from_slice(v.as_bytes());
    }
    out.push(0x91); // array of 1
    out.push(0x84); // map of 4
    s(out, "measurement");
    s(out, "m");
    s(out, "tags");
    out.push(0x81);
    s(out, "t");
    s(out, "mp");
    s(out, "fields");
    out.push(0x81);
    s(out, "v");
    out.push(0x09); // positive fixint 9
    s(out, "timestamp");
    out.push(0x06);
}

#[test]
fn a_dropped_database_comes_back_empty_and_stays_so_after_restart() {
    let dir = data_dir();
    let mut s = Spawn::new(dir.path()).start();
    s.query("CREATE DATABASE d");
    assert_eq!(s.post("/write?db=d", "m,h=a f=1 1").status(), 204);
    s.sql_until("SELECT f FROM d.m", 1);
    // Unflushed data at drop time must not come back either.
    assert_eq!(s.post("/write?db=d", "m,h=b f=2 2").status(), 204);
    s.query("DROP DATABASE d");
    s.query("CREATE DATABASE d");
    // The old field type is gone: a string `f` is no type conflict.
    assert_eq!(s.post("/write?db=d", "m,h=c f=\"text\" 3").status(), 204);
    let rows = s.sql_until("SELECT h, f FROM d.m", 1);
    assert_eq!(rows, vec![json!({"h": "c", "f": "text"})]);
    assert!(s.terminate().success());

    let s = Spawn::new(dir.path()).start();
    assert_eq!(s.post("/write?db=d", "m,h=d f=\"again\" 4").status(), 204);
    assert_eq!(
        s.post("/write?db=d", "m,h=e f=5 5").status(),
        400,
        "f is a string now"
    );
    let rows = s.sql_until("SELECT h, f FROM d.m ORDER BY time", 2);
    assert_eq!(
        rows,
        vec![
            json!({"h": "c", "f": "text"}),
            json!({"h": "d", "f": "again"})
        ]
    );
}

#[test]
fn a_database_with_retention_creates_its_tables_with_a_ttl_and_keeps_it_after_restart() {
    let dir = data_dir();
    let mut s = Spawn::new(dir.path()).start();
    let ok = json!({"results": [{"statement_id": 0}]});
    assert_eq!(s.query("CREATE DATABASE r WITH DURATION 2h"), ok);
    assert_eq!(s.query("CREATE DATABASE forever"), ok);
    let rp = |s: &Server, db: &str| {
        s.query(&format!("SHOW RETENTION POLICIES ON {db}"))["results"][0]["series"][0]["values"][0]
            .clone()
    };
    assert_eq!(rp(&s, "r"), json!(["autogen", "2h0m0s", "1h0m0s", 1, true]));
    assert_eq!(
        rp(&s, "forever"),
        json!(["autogen", "0s", "168h0m0s", 1, true])
    );
    // The same policy again is fine; a different one conflicts, as in InfluxDB.
    assert_eq!(s.query("CREATE DATABASE r WITH DURATION 120m"), ok);
    assert_eq!(
        s.query("CREATE DATABASE r WITH DURATION 3h")["results"][0]["error"],
        "retention policy conflicts with an existing policy"
    );
    let r = s
        .client
        .get(s.url("/query"))
        .query(&[("q", "CREATE DATABASE x WITH DURATION 30m")])
        .send()
        .unwrap();
    // InfluxDB parses this and refuses it as the statement's error (200).
    assert_eq!(r.status(), 200);
    let body: Value = r.json().unwrap();
    assert!(
        body["results"][0]["error"]
            .as_str()
            .unwrap()
            .contains("at least 1h0m0s"),
        "{body}"
    );

    let ttl = |s: &Server, db: &str, table: &str| -> String {
        let rows = s.sql(&format!(
            "SELECT engine_full FROM system.tables WHERE database = '{db}' AND name = '{table}'"
        ));
        rows[0]["engine_full"].as_str().unwrap().to_string()
    };
    assert_eq!(s.post("/write?db=r", "m f=1").status(), 204);
    assert_eq!(s.post("/write?db=forever", "m f=1").status(), 204);
    s.sql_until("SELECT f FROM r.m", 1);
    s.sql_until("SELECT f FROM forever.m", 1);
    assert!(ttl(&s, "r", "m").contains("TTL toDateTime(time) + toIntervalSecond(7200)"));
    assert!(!ttl(&s, "forever", "m").contains("TTL"));
    // A point older than the retention is refused at the door, as in InfluxDB;
    // the same point goes into a database kept forever.
    let old = "m f=2 1000000000"; // 1970
    let r = s.post("/write?db=r", old);
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().unwrap()["error"],
        "partial write: points beyond retention policy dropped=1"
    );
    assert_eq!(
        s.post("/write?db=r", format!("{old}\nm f=3")).status(),
        400,
        "partial: the recent point is written"
    );
    assert_eq!(s.post("/write?db=forever", old).status(), 204);
    s.sql_until("SELECT f FROM r.m WHERE f = 3", 1);
    let n = s.sql("SELECT count() AS n FROM r.m WHERE f = 2")[0]["n"].clone();
    assert!(n == json!("0") || n == json!(0), "{n}");
    assert!(s.terminate().success());

    // After a restart the policy is still there and new tables get it too.
    let s = Spawn::new(dir.path()).start();
    assert_eq!(rp(&s, "r"), json!(["autogen", "2h0m0s", "1h0m0s", 1, true]));
    assert_eq!(s.post("/write?db=r", "n f=1").status(), 204);
    s.sql_until("SELECT f FROM r.n", 1);
    assert!(ttl(&s, "r", "n").contains("TTL toDateTime(time) + toIntervalSecond(7200)"));
    // Dropped and re-created without a duration: forever again.
    s.query("DROP DATABASE r");
    assert_eq!(s.query("CREATE DATABASE r"), ok);
    assert_eq!(rp(&s, "r"), json!(["autogen", "0s", "168h0m0s", 1, true]));
}
