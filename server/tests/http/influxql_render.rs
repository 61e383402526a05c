//! `/query` bodies byte for byte as InfluxDB 1.x writes them, over a real
//! socket against the real engine: floats and strings as Go encodes them,
//! `pretty=true`, `epoch=`, several statements, and `chunked=true` with
//! `chunk_size` (split series flagged `partial`). Every expected body is
//! influxd 1.6.7's answer (Debian's 1.6.7~rc0) for the same points and
//! parameters.

use std::time::{Duration, Instant};

use crate::util::*;

const S: i64 = 1_000_000_000;

/// `GET /query` on database `rq`: the body as bytes (as text).
fn body(s: &Server, q: &str, extra: &[(&str, &str)]) -> String {
    let mut params = vec![("q", q), ("db", "rq")];
    params.extend_from_slice(extra);
    let r = s.client.get(s.url("/query")).query(&params).send().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    r.text().unwrap()
}

fn setup() -> (tempfile::TempDir, Server) {
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    s.query("CREATE DATABASE rq");
    let floats = [
        "1e21",
        "1e20",
        "0.000001",
        "0.0000001",
        "123456789012345678",
        "-0.0",
        "1.5e300",
        "5e-324",
        "0.1",
        "-2.5e-10",
        "100",
        "1.7976931348623157e308",
        "123456.789e3",
    ];
    let mut lines: Vec<String> = floats
        .iter()
        .enumerate()
        .map(|(k, v)| format!("fl v={v} {}", (k as i64 + 1) * S))
        .collect();
    lines.push(format!(
        "st s=\"a<b>&c\\\"q\\\\ \u{2028} é tab\there\u{1}\u{7f}\" {S}"
    ));
    lines.extend((0..5).map(|k| format!("big,host=a v={k} {}", k * S)));
    lines.extend((0..4).map(|k| format!("big,host=b v={k} {}", k * S)));
    lines.push("frac v=1i 1500000123".into());
    lines.push("frac v=2i 1500000000".into());
    lines.push("frac v=3i -1500000000".into());
    lines.push("frac v=4i 1700000000000000000".into());
    let r = s.post("/write?db=rq", lines.join("\n"));
    assert_eq!(r.status(), 204, "{}", r.text().unwrap_or_default());
    // Flushing is asynchronous: wait until every measurement reads back whole.
    let deadline = Instant::now() + Duration::from_secs(30);
    let count = |q: &str| body(&s, q, &[]);
    while !(count("SELECT count(v) FROM fl").contains(",13]")
        && count("SELECT count(v) FROM big").contains(",9]")
        && count("SELECT count(v) FROM frac").contains(",4]")
        && count("SELECT count(s) FROM st").contains(",1]"))
    {
        assert!(Instant::now() < deadline, "the points never read back");
        std::thread::sleep(Duration::from_millis(100));
    }
    (dir, s)
}

#[test]
fn influxql_bodies_as_influxdb_writes_them() {
    let (_dir, s) = setup();

    // Floats as Go's encoding/json writes them.
    assert_eq!(
        body(&s, "SELECT v FROM fl", &[]),
        "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"fl\",\"columns\":[\"time\",\"v\"],\"values\":[[\"1970-01-01T00:00:01Z\",1e+21],[\"1970-01-01T00:00:02Z\",100000000000000000000],[\"1970-01-01T00:00:03Z\",0.000001],[\"1970-01-01T00:00:04Z\",1e-7],[\"1970-01-01T00:00:05Z\",123456789012345680],[\"1970-01-01T00:00:06Z\",-0],[\"1970-01-01T00:00:07Z\",1.5e+300],[\"1970-01-01T00:00:08Z\",5e-324],[\"1970-01-01T00:00:09Z\",0.1],[\"1970-01-01T00:00:10Z\",-2.5e-10],[\"1970-01-01T00:00:11Z\",100],[\"1970-01-01T00:00:12Z\",1.7976931348623157e+308],[\"1970-01-01T00:00:13Z\",123456789]]}]}]}\n"
    );
    // Strings: HTML-safe escapes, U+2028, control characters.
    assert_eq!(
        body(&s, "SELECT s FROM st", &[]),
        "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"st\",\"columns\":[\"time\",\"s\"],\"values\":[[\"1970-01-01T00:00:01Z\",\"a\\u003cb\\u003e\\u0026c\\\"q\\\\ \\u2028 é tab\\there\\u0001\u{7f}\"]]}]}]}\n"
    );
    // Times: fractions trimmed, before the epoch; epochs truncated toward zero.
    assert_eq!(
        body(&s, "SELECT v FROM frac", &[]),
        "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"frac\",\"columns\":[\"time\",\"v\"],\"values\":[[\"1969-12-31T23:59:58.5Z\",3],[\"1970-01-01T00:00:01.5Z\",2],[\"1970-01-01T00:00:01.500000123Z\",1],[\"2023-11-14T22:13:20Z\",4]]}]}]}\n"
    );
    assert_eq!(
        body(&s, "SELECT v FROM frac", &[("epoch", "s")]),
        "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"frac\",\"columns\":[\"time\",\"v\"],\"values\":[[-1,3],[1,2],[1,1],[1700000000,4]]}]}]}\n"
    );
    // Several statements, one empty.
    assert_eq!(
        body(&s, "SELECT v FROM big WHERE time > 100d; SELECT v FROM big WHERE time < 1s AND host = 'a'", &[]),
        "{\"results\":[{\"statement_id\":0},{\"statement_id\":1,\"series\":[{\"name\":\"big\",\"columns\":[\"time\",\"v\"],\"values\":[[\"1970-01-01T00:00:00Z\",0]]}]}]}\n"
    );
    // pretty=true, with epoch=ms.
    assert_eq!(
        body(
            &s,
            "SELECT v FROM fl WHERE time <= 2s",
            &[("epoch", "ms"), ("pretty", "true")]
        ),
        r#"{
    "results": [
        {
            "statement_id": 0,
            "series": [
                {
                    "name": "fl",
                    "columns": [
                        "time",
                        "v"
                    ],
                    "values": [
                        [
                            1000,
                            1e+21
                        ],
                        [
                            2000,
                            100000000000000000000
                        ]
                    ]
                }
            ]
        }
    ]
}
"#
    );
}

#[test]
fn influxql_chunked_as_influxdb_writes_it() {
    let (_dir, s) = setup();
    let q = "SELECT v FROM big WHERE time < 5s GROUP BY host";
    assert_eq!(
        body(&s, q, &[("chunked", "true"), ("chunk_size", "3")]),
        concat!(
            "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"big\",\"tags\":{\"host\":\"a\"},\"columns\":[\"time\",\"v\"],\"values\":[[\"1970-01-01T00:00:00Z\",0],[\"1970-01-01T00:00:01Z\",1],[\"1970-01-01T00:00:02Z\",2]],\"partial\":true}],\"partial\":true}]}\n",
            "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"big\",\"tags\":{\"host\":\"a\"},\"columns\":[\"time\",\"v\"],\"values\":[[\"1970-01-01T00:00:03Z\",3],[\"1970-01-01T00:00:04Z\",4]]}],\"partial\":true}]}\n",
            "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"big\",\"tags\":{\"host\":\"b\"},\"columns\":[\"time\",\"v\"],\"values\":[[\"1970-01-01T00:00:00Z\",0],[\"1970-01-01T00:00:01Z\",1],[\"1970-01-01T00:00:02Z\",2]],\"partial\":true}],\"partial\":true}]}\n",
            "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"big\",\"tags\":{\"host\":\"b\"},\"columns\":[\"time\",\"v\"],\"values\":[[\"1970-01-01T00:00:03Z\",3]]}]}]}\n",
        )
    );
    // An empty statement, then one that fits in one chunk.
    assert_eq!(
        body(
            &s,
            "SELECT v FROM big WHERE time > 100d; SELECT v FROM big WHERE time < 1s AND host = 'a'",
            &[("chunked", "true")]
        ),
        concat!(
            "{\"results\":[{\"statement_id\":0}]}\n",
            "{\"results\":[{\"statement_id\":1,\"series\":[{\"name\":\"big\",\"columns\":[\"time\",\"v\"],\"values\":[[\"1970-01-01T00:00:00Z\",0]]}]}]}\n",
        )
    );
    // pretty=true: each chunk indented on its own.
    let pretty = body(
        &s,
        q,
        &[("chunked", "true"), ("chunk_size", "2"), ("pretty", "true")],
    );
    let first = r#"{
    "results": [
        {
            "statement_id": 0,
            "series": [
                {
                    "name": "big",
                    "tags": {
                        "host": "a"
                    },
                    "columns": [
                        "time",
                        "v"
                    ],
                    "values": [
                        [
                            "1970-01-01T00:00:00Z",
                            0
                        ],
                        [
                            "1970-01-01T00:00:01Z",
                            1
                        ]
                    ],
                    "partial": true
                }
            ],
            "partial": true
        }
    ]
}
"#;
    assert!(pretty.starts_with(first), "{pretty}");
    assert_eq!(pretty.matches("\"statement_id\": 0").count(), 5);
    assert!(pretty.ends_with(
        "                            3\n                        ]\n                    ]\n                }\n            ]\n        }\n    ]\n}\n"
    ));
}
