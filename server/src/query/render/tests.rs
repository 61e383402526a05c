//! Rendering end to end. Expected bodies are influxd 1.6.7's (Debian's
//! 1.6.7~rc0), byte for byte, for the same data and parameters.

use std::io::{self, Write};
use std::sync::Arc;

use storage::influxql::series::{Series, StatementResult, Value};
use storage::influxql::zone::TimeZone;

use super::*;

const S: i64 = 1_000_000_000;

/// Renders statements (`Err` = a statement error) with `format`.
fn render_with(
    format: Format,
    statements: &[(Result<StatementResult, &str>, Chunking)],
    zone: Option<&TimeZone>,
) -> String {
    let mut r = Response::new(Vec::new(), format);
    for (id, (outcome, chunking)) in statements.iter().enumerate() {
        let outcome = match outcome {
            Ok(a) => Outcome::Answer(a),
            Err(e) => Outcome::Error(e),
        };
        r.statement(id, outcome, *chunking, zone).unwrap();
    }
    String::from_utf8(r.finish().unwrap()).unwrap()
}

fn render(
    params: [Option<&str>; 4],
    statements: &[(Result<StatementResult, &str>, Chunking)],
) -> String {
    let [epoch, pretty, chunked, size] = params;
    render_with(
        Format::from_params(epoch, pretty, chunked, size),
        statements,
        None,
    )
}

const PLAIN: [Option<&str>; 4] = [None; 4];

fn t(seconds: i64) -> Value {
    Value::Time(seconds * S)
}

/// `fl`: one float per second from 1s.
fn floats(xs: &[f64]) -> StatementResult {
    let values = xs
        .iter()
        .enumerate()
        .map(|(k, x)| vec![t(k as i64 + 1), Value::Float(*x)])
        .collect();
    StatementResult::of(vec![Series::untagged("fl", &["time", "v"], values)])
}

#[test]
fn floats_as_go_writes_them() {
    // SELECT v FROM fl
    let xs = [
        1e21,
        1e20,
        0.000001,
        0.0000001,
        123456789012345678.0,
        -0.0,
        1.5e300,
        5e-324,
        0.1,
        -2.5e-10,
        100.0,
        f64::MAX,
        123456789.0,
    ];
    let body = render(PLAIN, &[(Ok(floats(&xs)), Chunking::Rows)]);
    assert_eq!(
            body,
            "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"fl\",\"columns\":[\"time\",\"v\"],\"values\":[[\"1970-01-01T00:00:01Z\",1e+21],[\"1970-01-01T00:00:02Z\",100000000000000000000],[\"1970-01-01T00:00:03Z\",0.000001],[\"1970-01-01T00:00:04Z\",1e-7],[\"1970-01-01T00:00:05Z\",123456789012345680],[\"1970-01-01T00:00:06Z\",-0],[\"1970-01-01T00:00:07Z\",1.5e+300],[\"1970-01-01T00:00:08Z\",5e-324],[\"1970-01-01T00:00:09Z\",0.1],[\"1970-01-01T00:00:10Z\",-2.5e-10],[\"1970-01-01T00:00:11Z\",100],[\"1970-01-01T00:00:12Z\",1.7976931348623157e+308],[\"1970-01-01T00:00:13Z\",123456789]]}]}]}\n"
        );
}

#[test]
fn strings_escaped_as_go_does() {
    // SELECT s FROM st, s written as "a<b>&c\"q\\ \u{2028} é tab\there\x01\x7f"
    let s = "a<b>&c\"q\\ \u{2028} é tab\there\u{1}\u{7f}";
    let a = StatementResult::of(vec![Series::untagged(
        "st",
        &["time", "s"],
        vec![vec![t(1), Value::String(s.into())]],
    )]);
    let body = render(PLAIN, &[(Ok(a), Chunking::Rows)]);
    assert_eq!(
            body,
            "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"st\",\"columns\":[\"time\",\"s\"],\"values\":[[\"1970-01-01T00:00:01Z\",\"a\\u003cb\\u003e\\u0026c\\\"q\\\\ \\u2028 é tab\\there\\u0001\u{7f}\"]]}]}]}\n"
        );
}

/// Series of one answer that share their columns, then others that do not,
/// across statements: each series shows its own columns (the renderer keeps
/// the last ones written).
#[test]
fn each_series_shows_its_own_columns() {
    let a = StatementResult::of(vec![
        Series::untagged("a", &["time", "x"], vec![vec![t(1), Value::Integer(1)]]),
        Series::untagged("b", &["time", "x"], vec![vec![t(1), Value::Integer(2)]]),
        Series::untagged("c", &["time", "y"], vec![vec![t(1), Value::Integer(3)]]),
    ]);
    let b = StatementResult::of(vec![Series::untagged(
        "d",
        &["time", "x"],
        vec![vec![t(1), Value::Integer(4)]],
    )]);
    let body = render(PLAIN, &[(Ok(a), Chunking::Rows), (Ok(b), Chunking::Rows)]);
    let cols: Vec<&str> = body
        .split("\"columns\":")
        .skip(1)
        .map(|s| &s[..s.find(']').unwrap() + 1])
        .collect();
    assert_eq!(
        cols,
        [
            "[\"time\",\"x\"]",
            "[\"time\",\"x\"]",
            "[\"time\",\"y\"]",
            "[\"time\",\"x\"]"
        ],
        "{body}"
    );
}

/// Strings with nothing to escape are copied whole; one byte that needs an
/// escape (or starts U+2028/U+2029) anywhere sends the string the slow way.
#[test]
fn plain_strings_copied_whole_and_every_escape_found() {
    for (s, want) in [
        ("host_12", "\"host_12\""),
        ("", "\"\""),
        ("é € \u{7f} \u{2027}", "\"é € \u{7f} \u{2027}\""),
        ("x\u{2029}", "\"x\\u2029\""),
        ("tail&", "\"tail\\u0026\""),
        (">head", "\"\\u003ehead\""),
        ("a\u{1f}", "\"a\\u001f\""),
        ("q\"", "\"q\\\"\""),
    ] {
        let mut buf = Vec::new();
        json::json_string(&mut buf, s);
        assert_eq!(String::from_utf8(buf).unwrap(), want, "{s:?}");
    }
}

/// `frac`: times with fractions, before the epoch and far after it.
fn frac() -> StatementResult {
    let rows = [
        (-1_500_000_000, 3),
        (1_500_000_000, 2),
        (1_500_000_123, 1),
        (1_700_000_000 * S, 4),
    ];
    StatementResult::of(vec![Series::untagged(
        "frac",
        &["time", "v"],
        rows.iter()
            .map(|(ns, v)| vec![Value::Time(*ns), Value::Integer(*v)])
            .collect(),
    )])
}

#[test]
fn times_rfc3339_and_epochs() {
    let rfc = render(PLAIN, &[(Ok(frac()), Chunking::Rows)]);
    assert_eq!(
            rfc,
            "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"frac\",\"columns\":[\"time\",\"v\"],\"values\":[[\"1969-12-31T23:59:58.5Z\",3],[\"1970-01-01T00:00:01.5Z\",2],[\"1970-01-01T00:00:01.500000123Z\",1],[\"2023-11-14T22:13:20Z\",4]]}]}]}\n"
        );
    let s = render(
        [Some("s"), None, None, None],
        &[(Ok(frac()), Chunking::Rows)],
    );
    assert!(
        s.contains("\"values\":[[-1,3],[1,2],[1,1],[1700000000,4]]"),
        "{s}"
    );
    let u = render(
        [Some(" u "), None, None, None],
        &[(Ok(frac()), Chunking::Rows)],
    );
    assert!(u.contains("[[-1500000,3],[1500000,2],[1500000,1],[1700000000000000,4]]"));
    // `ns`, `µ` and anything else: nanoseconds.
    for e in ["ns", "µ", "x"] {
        let ns = render([Some(e), None, None, None], &[(Ok(frac()), Chunking::Rows)]);
        assert!(
            ns.contains("[[-1500000000,3],[1500000000,2],[1500000123,1]"),
            "{e}"
        );
    }
}

#[test]
fn times_in_a_zone() {
    // SELECT v FROM frac tz('Asia/Kolkata') / tz('America/New_York')
    let zone = |name| TimeZone::load(name).expect("tzdata (/usr/share/zoneinfo) is needed");
    let body = render_with(
        Format::from_params(None, None, None, None),
        &[(Ok(frac()), Chunking::Rows)],
        Some(&zone("Asia/Kolkata")),
    );
    assert!(body.contains("[[\"1970-01-01T05:29:58.5+05:30\",3],[\"1970-01-01T05:30:01.5+05:30\",2],[\"1970-01-01T05:30:01.500000123+05:30\",1],[\"2023-11-15T03:43:20+05:30\",4]]"), "{body}");
    let body = render_with(
        Format::from_params(None, None, None, None),
        &[(Ok(frac()), Chunking::Rows)],
        Some(&zone("America/New_York")),
    );
    assert!(body.contains("[[\"1969-12-31T18:59:58.5-05:00\",3],[\"1969-12-31T19:00:01.5-05:00\",2],[\"1969-12-31T19:00:01.500000123-05:00\",1],[\"2023-11-14T17:13:20-05:00\",4]]"), "{body}");
    // Across an offset change: SELECT v FROM dst WHERE time >= '2020-11-01T05:00:00Z'
    //   AND time <= '2020-11-01T11:00:00Z' tz('America/Chicago')
    let dst = StatementResult::of(vec![Series::untagged(
        "dst",
        &["time", "v"],
        [
            (1_604_206_800, 29),
            (1_604_224_800, 34),
            (1_604_228_400, 35),
        ]
        .iter()
        .map(|(t, v)| vec![t_abs(*t), Value::Float(*v as f64)])
        .collect(),
    )]);
    let body = render_with(
        Format::from_params(None, None, None, None),
        &[(Ok(dst), Chunking::Rows)],
        Some(&zone("America/Chicago")),
    );
    assert_eq!(body, "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"dst\",\"columns\":[\"time\",\"v\"],\"values\":[[\"2020-11-01T00:00:00-05:00\",29],[\"2020-11-01T04:00:00-06:00\",34],[\"2020-11-01T05:00:00-06:00\",35]]}]}]}\n");
}

fn t_abs(seconds: i64) -> Value {
    Value::Time(seconds * S)
}

#[test]
fn several_statements_empty_and_failed() {
    // SELECT v FROM fl WHERE time <= 1s; SELECT nope(v) FROM fl
    let body = render(
        PLAIN,
        &[
            (Ok(floats(&[1e21])), Chunking::Rows),
            (Err("undefined function nope()"), Chunking::Rows),
        ],
    );
    assert_eq!(
            body,
            "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"fl\",\"columns\":[\"time\",\"v\"],\"values\":[[\"1970-01-01T00:00:01Z\",1e+21]]}]},{\"statement_id\":1,\"error\":\"undefined function nope()\"}]}\n"
        );
    // No statement at all: Go leaves the empty `results` out.
    assert_eq!(render(PLAIN, &[]), "{}\n");
}

#[test]
fn a_failed_statement_ends_the_answer_as_influxdb_does() {
    let answered = |result| Answered {
        result,
        chunking: Chunking::Rows,
        zone: None,
    };
    let ok = || answered(Ok(floats(&[1e21])));
    let failed = || answered(Err("undefined function nope()".to_string()));
    let run = |format: Format, results: &[Answered]| {
        String::from_utf8(write_statements(Vec::new(), format, results).unwrap()).unwrap()
    };
    let plain = Format::from_params(None, None, None, None);
    let chunked = Format::from_params(None, None, Some("true"), None);
    let fl = "{\"statement_id\":0,\"series\":[{\"name\":\"fl\",\"columns\":[\"time\",\"v\"],\"values\":[[\"1970-01-01T00:00:01Z\",1e+21]]}]}";
    // SELECT nope(v) FROM fl; SELECT v ...; SELECT v ...
    assert_eq!(
        run(plain, &[failed(), ok(), ok()]),
        "{\"results\":[{\"statement_id\":0,\"error\":\"not executed\"}]}\n"
    );
    assert_eq!(
        run(chunked, &[failed(), ok(), ok()]),
        concat!(
            "{\"results\":[{\"statement_id\":0,\"error\":\"undefined function nope()\"}]}\n",
            "{\"results\":[{\"statement_id\":0,\"error\":\"not executed\"}]}\n",
            "{\"results\":[{\"statement_id\":0,\"error\":\"not executed\"}]}\n",
        )
    );
    // SELECT v ...; SELECT nope(v) FROM fl; SELECT v ...
    assert_eq!(
        run(plain, &[ok(), failed(), ok()]),
        format!("{{\"results\":[{fl},{{\"statement_id\":1,\"error\":\"not executed\"}}]}}\n")
    );
    // SELECT v ...; SELECT nope(v) FROM fl: the last one keeps its error.
    assert_eq!(
            run(plain, &[ok(), failed()]),
            format!("{{\"results\":[{fl},{{\"statement_id\":1,\"error\":\"undefined function nope()\"}}]}}\n")
        );
}

#[test]
fn pretty_is_go_marshal_indent() {
    // SELECT v FROM fl WHERE time <= 1s; SELECT v FROM nope;
    // SELECT v FROM fl WHERE time > 100d; SELECT v FROM fl WHERE time = 2s
    let mut second = floats(&[0.0, 1e20]);
    second.series[0].values.remove(0);
    let body = render(
        [None, Some("true"), None, None],
        &[
            (Ok(floats(&[1e21])), Chunking::Rows),
            (Ok(StatementResult::of(vec![])), Chunking::Rows),
            (Ok(StatementResult::of(vec![])), Chunking::Rows),
            (Ok(second), Chunking::Rows),
        ],
    );
    assert_eq!(
        body,
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
                            "1970-01-01T00:00:01Z",
                            1e+21
                        ]
                    ]
                }
            ]
        },
        {
            "statement_id": 1
        },
        {
            "statement_id": 2
        },
        {
            "statement_id": 3,
            "series": [
                {
                    "name": "fl",
                    "columns": [
                        "time",
                        "v"
                    ],
                    "values": [
                        [
                            "1970-01-01T00:00:02Z",
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

/// `big`: `v` = 0..n at 0s..(n-1)s for a host.
fn big(host: &str, n: i64) -> Series {
    Series {
        tags: vec![("host".into(), host.into())],
        ..Series::untagged(
            "big",
            &["time", "v"],
            (0..n).map(|k| vec![t(k), Value::Float(k as f64)]).collect(),
        )
    }
}

#[test]
fn chunked_splits_series_and_flags_partial() {
    // SELECT v FROM big WHERE time < 5s GROUP BY host, chunked=true&chunk_size=3
    let a = StatementResult::of(vec![big("a", 5), big("b", 4)]);
    let body = render(
        [None, None, Some("true"), Some("3")],
        &[(Ok(a), Chunking::Rows)],
    );
    assert_eq!(
            body,
            concat!(
                "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"big\",\"tags\":{\"host\":\"a\"},\"columns\":[\"time\",\"v\"],\"values\":[[\"1970-01-01T00:00:00Z\",0],[\"1970-01-01T00:00:01Z\",1],[\"1970-01-01T00:00:02Z\",2]],\"partial\":true}],\"partial\":true}]}\n",
                "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"big\",\"tags\":{\"host\":\"a\"},\"columns\":[\"time\",\"v\"],\"values\":[[\"1970-01-01T00:00:03Z\",3],[\"1970-01-01T00:00:04Z\",4]]}],\"partial\":true}]}\n",
                "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"big\",\"tags\":{\"host\":\"b\"},\"columns\":[\"time\",\"v\"],\"values\":[[\"1970-01-01T00:00:00Z\",0],[\"1970-01-01T00:00:01Z\",1],[\"1970-01-01T00:00:02Z\",2]],\"partial\":true}],\"partial\":true}]}\n",
                "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"big\",\"tags\":{\"host\":\"b\"},\"columns\":[\"time\",\"v\"],\"values\":[[\"1970-01-01T00:00:03Z\",3]]}]}]}\n",
            )
        );
}

#[test]
fn chunked_empty_and_failed_statements() {
    // SELECT v FROM big WHERE time > 100d; SELECT v FROM big WHERE time < 1s
    let one = StatementResult::of(vec![Series {
        tags: Vec::new(),
        ..big("a", 1)
    }]);
    let body = render(
        [None, None, Some("true"), None],
        &[
            (Ok(StatementResult::of(vec![])), Chunking::Rows),
            (Ok(one), Chunking::Rows),
            (
                Err("invalid function call in condition: nope(1)"),
                Chunking::Rows,
            ),
        ],
    );
    assert_eq!(
            body,
            concat!(
                "{\"results\":[{\"statement_id\":0}]}\n",
                "{\"results\":[{\"statement_id\":1,\"series\":[{\"name\":\"big\",\"columns\":[\"time\",\"v\"],\"values\":[[\"1970-01-01T00:00:00Z\",0]]}]}]}\n",
                "{\"results\":[{\"statement_id\":2,\"error\":\"invalid function call in condition: nope(1)\"}]}\n",
            )
        );
    // Pretty and chunked: each document indented.
    let body = render(
        [None, Some("true"), Some("true"), None],
        &[(Ok(StatementResult::of(vec![])), Chunking::Rows)],
    );
    assert_eq!(
        body,
        "{\n    \"results\": [\n        {\n            \"statement_id\": 0\n        }\n    ]\n}\n"
    );
}

#[test]
fn chunked_show_statements() {
    // SHOW TAG VALUES WITH KEY = host (chunk_size=2): a line per series, no flags.
    let tv = |m: &str, hosts: &[&str]| Series {
        name: m.into(),
        columns: std::sync::Arc::new(vec!["key".into(), "value".into()]),
        values: hosts
            .iter()
            .map(|h| {
                vec![
                    Value::String("host".into()),
                    Value::String(h.to_string().into()),
                ]
            })
            .collect(),
        ..Series::default()
    };
    let a = StatementResult::of(vec![tv("big", &["a", "b"]), tv("m", &["a", "b", "c"])]);
    let body = render(
        [None, None, Some("true"), Some("2")],
        &[(Ok(a.clone()), Chunking::Series)],
    );
    assert_eq!(
            body,
            concat!(
                "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"big\",\"columns\":[\"key\",\"value\"],\"values\":[[\"host\",\"a\"],[\"host\",\"b\"]]}]}]}\n",
                "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"m\",\"columns\":[\"key\",\"value\"],\"values\":[[\"host\",\"a\"],[\"host\",\"b\"],[\"host\",\"c\"]]}]}]}\n",
            )
        );
    // SHOW MEASUREMENTS: one line, whole.
    let body = render(
        [None, None, Some("true"), Some("1")],
        &[(Ok(a), Chunking::Whole)],
    );
    assert_eq!(body.lines().count(), 1);
    assert!(!body.contains("partial"));
    // SHOW SERIES: no name, split like a SELECT.
    let keys = StatementResult::of(vec![Series {
        columns: std::sync::Arc::new(vec!["key".into()]),
        values: ["big,host=a", "big,host=b", "fl"]
            .iter()
            .map(|k| vec![Value::String(k.to_string().into())])
            .collect(),
        ..Series::default()
    }]);
    let body = render(
        [None, None, Some("true"), Some("2")],
        &[(Ok(keys), Chunking::Rows)],
    );
    assert_eq!(
            body,
            concat!(
                "{\"results\":[{\"statement_id\":0,\"series\":[{\"columns\":[\"key\"],\"values\":[[\"big,host=a\"],[\"big,host=b\"]],\"partial\":true}],\"partial\":true}]}\n",
                "{\"results\":[{\"statement_id\":0,\"series\":[{\"columns\":[\"key\"],\"values\":[[\"fl\"]]}]}]}\n",
            )
        );
}

#[test]
fn long_series_are_flagged_partial_even_unchunked() {
    // SELECT v FROM big GROUP BY host: host a has 10,005 rows, host b 4.
    let a = StatementResult::of(vec![big("a", 10_005), big("b", 4)]);
    let mut out = Vec::new();
    let mut r = Response::new(&mut out, Format::from_params(None, None, None, None));
    r.statement(0, Outcome::Answer(&a), Chunking::Rows, None)
        .unwrap();
    r.finish().unwrap();
    let body = String::from_utf8(out).unwrap();
    assert!(body.contains("[\"1970-01-01T02:46:44Z\",10004]],\"partial\":true},{\"name\":\"big\",\"tags\":{\"host\":\"b\"}"));
    assert!(body.ends_with("[\"1970-01-01T00:00:03Z\",3]]}]}]}\n"));
    // Chunked with the default size: 10,000 rows, then 5, then host b.
    let body = render(
        [None, None, Some("true"), Some("0")],
        &[(Ok(a), Chunking::Rows)],
    );
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0].matches("\"1970").count(), 10_000);
    assert!(lines[1].ends_with("[\"1970-01-01T02:46:44Z\",10004]]}],\"partial\":true}]}"));
}

#[test]
fn empty_parts_are_left_out_and_tags_sorted() {
    let s = Series {
        name: String::new(),
        tags: vec![("z".into(), "1".into()), ("a".into(), String::new())],
        columns: std::sync::Arc::new(vec!["name".into()]),
        values: Vec::new(),
        packed: None,
        one_row: None,
    };
    let a = StatementResult {
        series: vec![s],
        messages: vec![("warning".into(), "deprecated <x>".into())],
    };
    let body = render(PLAIN, &[(Ok(a), Chunking::Whole)]);
    assert_eq!(
            body,
            "{\"results\":[{\"statement_id\":0,\"series\":[{\"tags\":{\"a\":\"\",\"z\":\"1\"},\"columns\":[\"name\"]}],\"messages\":[{\"level\":\"warning\",\"text\":\"deprecated \\u003cx\\u003e\"}]}]}\n"
        );
}

/// Tags that come sorted (as `to_series` builds them) are written as they
/// are, unsorted ones sorted first: the same bytes either way, over keys
/// and values JSON escapes.
#[test]
fn tags_render_sorted_whether_or_not_they_come_sorted() {
    let sorted: Vec<(String, String)> = [
        ("", "empty key"),
        ("a", ""),
        ("a\"q", "<v> & \u{2028}"),
        ("host", "host_1"),
        ("ünï", "日本 🙂"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut shuffled = sorted.clone();
    shuffled.reverse();
    shuffled.swap(1, 3);
    let answer = |tags: &[(String, String)]| StatementResult {
        series: (0..3)
            .map(|i| Series {
                name: "cpu".into(),
                tags: tags.to_vec(),
                columns: std::sync::Arc::new(vec!["time".into(), "v".into()]),
                values: vec![vec![Value::Time(i), Value::Integer(i)]],
                packed: None,
                one_row: None,
            })
            .collect(),
        messages: Vec::new(),
    };
    let one = render(PLAIN, &[(Ok(answer(&sorted)), Chunking::Rows)]);
    let other = render(PLAIN, &[(Ok(answer(&shuffled)), Chunking::Rows)]);
    assert_eq!(one, other);
    assert!(one.contains(
        "\"tags\":{\"\":\"empty key\",\"a\":\"\",\"a\\\"q\":\"\\u003cv\\u003e \\u0026 \\u2028\",\"host\":\"host_1\",\"ünï\":\"日本 🙂\"}"
    ), "{one}");
}

#[test]
fn non_finite_floats_are_null() {
    let body = render(
        PLAIN,
        &[(Ok(floats(&[f64::NAN, f64::INFINITY])), Chunking::Rows)],
    );
    assert!(body.contains("[[\"1970-01-01T00:00:01Z\",null],[\"1970-01-01T00:00:02Z\",null]]"));
}

#[test]
fn large_answers_stream_in_pieces() {
    /// Counts writes and flushes.
    #[derive(Default)]
    struct Counting {
        bytes: Vec<u8>,
        writes: usize,
        flushes: usize,
    }
    impl Write for Counting {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.writes += 1;
            self.bytes.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            self.flushes += 1;
            Ok(())
        }
    }
    let a = StatementResult::of(vec![big("a", 50_000)]);
    let mut r = Response::new(
        Counting::default(),
        Format::from_params(None, Some("true"), None, None),
    );
    r.statement(0, Outcome::Answer(&a), Chunking::Rows, None)
        .unwrap();
    let out = r.finish().unwrap();
    assert!(out.writes > 10, "{} writes", out.writes);
    // Indenting in pieces gives what indenting at once gives.
    let body = String::from_utf8(out.bytes).unwrap();
    assert!(body.contains("\n                        [\n                            \"1970-01-01T13:53:19Z\",\n                            49999\n                        ]\n                    ],\n                    \"partial\": true\n"));
    let mut r = Response::new(
        Counting::default(),
        Format::from_params(None, None, Some("true"), Some("1000")),
    );
    r.statement(0, Outcome::Answer(&a), Chunking::Rows, None)
        .unwrap();
    assert_eq!(r.finish().unwrap().flushes, 51);
}

#[test]
fn lastpoint_at_1000_hosts_is_rendered_at_once() {
    // TSBS `lastpoint` at 1,000 hosts: 1,000 one-row series of 21 columns
    // (21,000 cells, 448 KB). Rendered at once, it skips the blocking
    // thread and the channel and goes with a `Content-Length`.
    let names: Vec<String> = (0..21).map(|c| format!("c{c}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let series = |h: usize| Series {
        tags: vec![("hostname".into(), format!("host_{h}"))],
        ..Series::untagged("cpu", &names, vec![vec![Value::Integer(1); 21]])
    };
    let answered = |n: usize| Answered {
        result: Ok(StatementResult::of((0..n).map(series).collect())),
        chunking: Chunking::Rows,
        zone: None,
    };
    let format = Format::from_params(Some("ns"), None, None, None);
    let (response, took) = respond(vec![answered(1_000)], format);
    assert!(took.is_some());
    // One buffer of known length (a stream's length is unknown).
    let length = http_body::Body::size_hint(response.body()).exact();
    assert!(length.is_some_and(|n| n > 200_000), "{length:?}");
    // Twice that streams: never held whole.
    assert!(small(&[answered(2_000)]).is_none());
}

#[test]
fn one_row_series_with_shared_strings_render_as_unshared_ones() {
    // TSBS `lastpoint`'s shape: one-row series whose tag cells may be one
    // shared string over series (the renderer's copies are keyed by a
    // string's address: `shared.rs`). Tricky values, some shared over
    // series, some each its own (300 distinct values in a column; 70 KB of
    // JSON in another).
    let tricky = [
        "",
        "plain",
        "q\"uote\\back",
        "<a>&b",
        "line\nbreak\ttab\r\u{1}",
        "\u{2028}\u{2029}",
        "日本 🙂 ünï",
    ];
    let shared: Vec<Arc<str>> = tricky.iter().map(|&s| Arc::from(s)).collect();
    let names = ["time", "t", "u", "big", "n", "long"];
    let long: Vec<Arc<str>> = (0..40)
        .map(|k| Arc::from(format!("{k}:{}\u{2028}", "x".repeat(2_000))))
        .collect();
    let series = |h: usize, share: bool| {
        let own = |s: &Arc<str>| {
            if share {
                Arc::clone(s)
            } else {
                Arc::from(&**s)
            }
        };
        let t = own(&shared[h % shared.len()]);
        let u: Arc<str> = Arc::from(format!("u{}", h % 300));
        let long = own(&long[h % long.len()]);
        Series {
            tags: vec![("hostname".into(), format!("host_{h}"))],
            ..Series::untagged(
                "cpu",
                &names,
                vec![vec![
                    Value::Time(h as i64),
                    Value::String(t),
                    Value::String(u),
                    Value::Integer(i64::MIN + h as i64),
                    if h.is_multiple_of(3) {
                        Value::Null
                    } else {
                        Value::Unsigned(u64::MAX - h as u64)
                    },
                    Value::String(long),
                ]],
            )
        }
    };
    let answer = |share: bool| StatementResult::of((0..1_000).map(|h| series(h, share)).collect());
    let epoch = [Some("ns"), None, None, None];
    let with = render(epoch, &[(Ok(answer(true)), Chunking::Rows)]);
    let without = render(epoch, &[(Ok(answer(false)), Chunking::Rows)]);
    assert_eq!(with, without);
    // And as JSON: each cell is its string.
    let doc: serde_json::Value = serde_json::from_str(&with).unwrap();
    let row = &doc["results"][0]["series"][4]["values"][0];
    assert_eq!(row[1], "line\nbreak\ttab\r\u{1}");
    assert_eq!(row[3], i64::MIN + 4);
    assert_eq!(row[4], u64::MAX - 4);
    assert!(
        with.contains("\"q\\\"uote\\\\back\",\"u2\""),
        "escaped once, copied after"
    );
    assert!(with.contains("\"\\u003ca\\u003e\\u0026b\""));
    assert!(with.contains("\"\\u2028\\u2029\""));
}

/// A large answer rendered at once is freed after the response is handed
/// on (a task of its own the runtime runs once the request's task yields),
/// a small one at once; the body is the same either way.
#[tokio::test(flavor = "current_thread")]
async fn a_large_answer_rendered_at_once_is_freed_after_the_response() {
    let shared: Arc<str> = Arc::from("us-west-1");
    let answer = |rows: usize| {
        let values = (0..rows)
            .map(|i| {
                vec![
                    Value::Time(i as i64 * S),
                    Value::String(shared.clone()),
                    Value::Integer(i as i64),
                    Value::Null,
                ]
            })
            .collect();
        Answered {
            result: Ok(StatementResult {
                series: vec![Series::untagged(
                    "cpu",
                    &["time", "region", "v", "n"],
                    values,
                )],
                messages: Vec::new(),
            }),
            chunking: Chunking::Rows,
            zone: None,
        }
    };
    let format = Format::from_params(Some("ns"), None, None, None);
    for (rows, freed_at_once) in [(10, true), (FREE_LATER_CELLS / 4 + 1, false)] {
        let expected = write_statements(Vec::new(), format, &[answer(rows)]).unwrap();
        let (response, rendered) = respond(vec![answer(rows)], format);
        assert!(rendered.is_some(), "{rows} rows: rendered at once");
        assert_eq!(
            Arc::strong_count(&shared) == 1,
            freed_at_once,
            "{rows} rows"
        );
        tokio::task::yield_now().await;
        assert_eq!(Arc::strong_count(&shared), 1, "{rows} rows: freed");
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(body, expected, "{rows} rows");
    }
}
