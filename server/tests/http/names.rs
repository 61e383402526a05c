//! Issue #41 item 6: a name the engine cannot store is refused at the door, never
//! acknowledged and then quarantined. A NUL (or any control character) in a measurement,
//! tag key or field name gets 400 with InfluxDB's partial-write text naming it, on every
//! write path (line protocol on `/write` and `/api/v2/write`, msgpack, Prometheus remote
//! write); and any name that is acknowledged is flushed and reads back through the engine
//! (names drawn from the whole Unicode range and the engine's edge cases).

use chingest::prom::proto::{Label, Sample, TimeSeries, WriteRequest};
use prost::Message as _;
use rand::{Rng as _, SeedableRng as _};
use serde_json::{json, Value};

use crate::door::drained_without_failures;
use crate::util::*;

/// A msgpack string.
fn mp_str(out: &mut Vec<u8>, v: &str) {
    rmp::encode::write_str(out, v).unwrap();
}

/// The msgpack row form of one point: `{measurement, tags: {tag: "v"}, fields: {field: f},
/// timestamp}` (names of any bytes, no escaping to get wrong).
fn mp_point(out: &mut Vec<u8>, m: &str, tag: &str, field: &str, f: f64, t: i64) {
    rmp::encode::write_map_len(out, 4).unwrap();
    mp_str(out, "measurement");
    mp_str(out, m);
    mp_str(out, "tags");
    rmp::encode::write_map_len(out, 1).unwrap();
    mp_str(out, tag);
    mp_str(out, "v");
    mp_str(out, "fields");
    rmp::encode::write_map_len(out, 1).unwrap();
    mp_str(out, field);
    rmp::encode::write_f64(out, f).unwrap();
    mp_str(out, "timestamp");
    rmp::encode::write_i64(out, t).unwrap();
}

fn msgpack(points: &[(&str, &str, &str, f64, i64)]) -> Vec<u8> {
    let mut out = Vec::new();
    rmp::encode::write_array_len(&mut out, points.len() as u32).unwrap();
    for (m, tag, field, f, t) in points {
        mp_point(&mut out, m, tag, field, *f, *t);
    }
    out
}

/// A snappy remote-write body of one sample per `(labels)` series.
fn remote_write(series: &[Vec<(&str, &str)>]) -> Vec<u8> {
    let req = WriteRequest {
        timeseries: series
            .iter()
            .enumerate()
            .map(|(i, labels)| TimeSeries {
                labels: labels
                    .iter()
                    .map(|(n, v)| Label {
                        name: n.to_string(),
                        value: v.to_string(),
                    })
                    .collect(),
                samples: vec![Sample {
                    value: i as f64,
                    timestamp: 1_000 + i as i64,
                }],
            })
            .collect(),
    };
    snap::raw::Encoder::new()
        .compress_vec(&req.encode_to_vec())
        .unwrap()
}

/// Status and error text of a write.
fn send(s: &Server, path: &str, content_type: &str, body: Vec<u8>) -> (u16, String) {
    let r = s
        .client
        .post(s.url(path))
        .header("Content-Type", content_type)
        .body(body)
        .send()
        .unwrap();
    let status = r.status().as_u16();
    let v: Value = r.json().unwrap_or(Value::Null);
    let text = v["error"]
        .as_str()
        .or(v["message"].as_str())
        .unwrap_or_default()
        .to_string();
    (status, text)
}

const LP: &str = "text/plain";
const MSGPACK: &str = "application/msgpack";
const PROTOBUF: &str = "application/x-protobuf";

#[test]
fn names_with_control_characters_are_refused_on_every_write_path() {
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    s.query("CREATE DATABASE d");
    let control = "contains a control character";
    // Line protocol (v1 and v2): a bad line between two good ones; the good ones are written.
    let lp_cases: [(&[u8], &str); 6] = [
        (
            b"nu\0l v=1",
            "invalid measurement name: measurement \"nu\\u{0}l\"",
        ),
        (
            b"m,ho\0st=a v=1",
            "invalid tag key: input tag \"ho\\u{0}st\" on measurement \"m\"",
        ),
        (
            b"m f\0=1",
            "invalid field name: input field \"f\\u{0}\" on measurement \"m\"",
        ),
        (
            b"m\x01x v=1",
            "invalid measurement name: measurement \"m\\u{1}x\"",
        ),
        (b"m,t\x1b=a v=1", "invalid tag key: input tag \"t\\u{1b}\""),
        (
            "m f\u{85}=1".as_bytes(),
            "invalid field name: input field \"f\\u{85}\"",
        ),
    ];
    let mut t = 10;
    for path in ["/write?db=d", "/api/v2/write?bucket=d&org=o"] {
        for (bad, rule) in lp_cases {
            let mut body = format!("good,h=a v={t} {t}\n").into_bytes();
            body.extend_from_slice(bad);
            body.extend_from_slice(format!("\ngood,h=b v={t} {t}").as_bytes());
            t += 1;
            let (status, text) = send(&s, path, LP, body);
            let label = String::from_utf8_lossy(bad);
            assert_eq!(status, 400, "{path} {label}: {text}");
            assert!(text.starts_with("partial write: "), "{label}: {text}");
            assert!(text.contains(rule), "{label}: {text}");
            assert!(text.contains(control), "{label}: {text}");
            assert!(text.ends_with(" dropped=1"), "{label}: {text}");
        }
    }
    // msgpack rows: the NUL names refused, the good point written.
    for (k, (m, tag, field)) in [
        ("nul\0m", "t", "v"),
        ("m", "ho\0st", "v"),
        ("m", "t", "f\0"),
    ]
    .into_iter()
    .enumerate()
    {
        let body = msgpack(&[
            (m, tag, field, 1.0, 5),
            ("good", "h", "v", 2.0, 100 + k as i64),
        ]);
        let (status, text) = send(&s, "/write?db=d", MSGPACK, body);
        assert_eq!(status, 400, "{m:?} {tag:?} {field:?}: {text}");
        assert!(text.contains(control), "{text}");
    }
    // Prometheus remote write: a metric name and a label name with a NUL.
    for labels in [
        vec![("__name__", "nul\0name"), ("job", "j")],
        vec![("__name__", "up"), ("ho\0st", "a")],
    ] {
        let body = remote_write(&[labels.clone(), vec![("__name__", "fine"), ("job", "j")]]);
        let (status, text) = send(&s, "/api/v1/prom/write?db=d", PROTOBUF, body);
        assert_eq!(status, 400, "{labels:?}: {text}");
        assert!(text.contains(control), "{labels:?}: {text}");
    }
    // A name the catalog holds already stays writable, and tag values may hold anything.
    assert_eq!(s.post("/write?db=d", "good,h=a\\ \x01 v=1 1").status(), 204);
    // Nothing refused reached the schema or the flusher; the good points did.
    for show in ["MEASUREMENTS", "TAG KEYS", "FIELD KEYS"] {
        let shown = s.query(&format!("SHOW {show} ON d"));
        assert!(!shown.to_string().contains("\\u0000"), "{shown}");
        for series in shown["results"][0]["series"]
            .as_array()
            .into_iter()
            .flatten()
        {
            for row in series["values"].as_array().into_iter().flatten() {
                let name = row[0].as_str().unwrap();
                assert!(!name.chars().any(char::is_control), "{show}: {name:?}");
            }
        }
    }
    let shown = s.query("SHOW MEASUREMENTS ON d").to_string();
    assert!(
        shown.contains("\"fine\"") && shown.contains("\"good\""),
        "{shown}"
    );
    drained_without_failures(&s);
    let good = s.query("SELECT count(v) FROM d.autogen.good");
    let want = 2 * 2 * lp_cases.len() + 3 + 1;
    assert_eq!(
        good["results"][0]["series"][0]["values"][0][1],
        json!(want),
        "{good}"
    );
}

/// A name of 1–12 characters: from the engine's edge cases, printable ASCII, or random code
/// points from the whole range (every plane; surrogates are not chars). With `control`, at
/// least one control character (C0, DEL, C1) is in it; without, none.
fn random_name(rng: &mut rand::rngs::StdRng, control: bool) -> String {
    const EDGES: [&str; 18] = [
        "\u{a0}",
        "\u{2028}",
        "\u{feff}",
        "\u{fffd}",
        "\u{10ffff}",
        "`",
        "'",
        "\"",
        "\\",
        " ",
        ",",
        "=",
        "é",
        "😀",
        "_row_exists",
        "_part",
        "__x",
        "time",
    ];
    const CONTROLS: [char; 8] = [
        '\0', '\t', '\n', '\r', '\u{1b}', '\u{7f}', '\u{85}', '\u{9f}',
    ];
    let len = rng.gen_range(1..=12);
    let mut name = String::new();
    for _ in 0..len {
        match rng.gen_range(0..4) {
            0 => name.push_str(EDGES[rng.gen_range(0..EDGES.len())]),
            1 => name.push(rng.gen_range('a'..='z')),
            2 => name.push(char::from_u32(rng.gen_range(0x20..0x7f)).unwrap()),
            _ => loop {
                let c = char::from_u32(rng.gen_range(0..=0x10ffff)).filter(|c| !c.is_control());
                if let Some(c) = c {
                    name.push(c);
                    break;
                }
            },
        }
    }
    if control {
        let at = name
            .char_indices()
            .map(|(i, _)| i)
            .nth(rng.gen_range(0..len))
            .unwrap();
        name.insert(at, CONTROLS[rng.gen_range(0..CONTROLS.len())]);
    }
    name
}

#[test]
fn any_name_that_is_acknowledged_is_flushed_and_reads_back() {
    let seed: u64 = std::env::var("CHINGEST_NAMES_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("names seed {seed} (CHINGEST_NAMES_SEED replays it)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    s.query("CREATE DATABASE d");
    let has_control = |n: &str| n.chars().any(char::is_control);
    let mut acknowledged = Vec::new();
    let mut refused = 0;
    for i in 0..120 {
        // One case in four has a control character in one of its three names.
        let bad = if rng.gen_range(0..4) == 0 {
            rng.gen_range(0..3)
        } else {
            3
        };
        let (m, tag, field) = (
            random_name(&mut rng, bad == 0),
            random_name(&mut rng, bad == 1),
            random_name(&mut rng, bad == 2),
        );
        let body = msgpack(&[(&m, &tag, &field, i as f64, 1_000 + i)]);
        let (status, text) = send(&s, "/write?db=d", MSGPACK, body);
        let case = format!("seed {seed} case {i}: {m:?} {tag:?} {field:?}");
        match status {
            204 => {
                assert!(
                    !has_control(&m) && !has_control(&tag) && !has_control(&field),
                    "acknowledged a control character: {case}"
                );
                acknowledged.push((m, tag, field, i as f64));
            }
            400 => {
                // Refused by the catalog (`partial write: …`) or at parse (`unable to
                // parse …`, e.g. a reserved column name such as `time`): never unexplained.
                assert!(
                    text.starts_with("partial write: ") || text.starts_with("unable to parse"),
                    "{case}: {text}"
                );
                refused += 1;
            }
            _ => panic!("{case}: {status} {text}"),
        }
    }
    assert!(
        acknowledged.len() >= 20 && refused >= 10,
        "seed {seed}: {} acknowledged, {refused} refused: the generator should give both",
        acknowledged.len()
    );
    drained_without_failures(&s);
    // Each acknowledged point reads back from the engine under its own names.
    for (m, tag, field, v) in &acknowledged {
        let q = format!(
            "SELECT {} FROM d.autogen.{} GROUP BY {}",
            influxql::quote_ident(field),
            influxql::quote_ident(m),
            influxql::quote_ident(tag),
        );
        let got = s.query(&q);
        let series = &got["results"][0]["series"];
        let case = format!("seed {seed}: {m:?} {tag:?} {field:?}: {q}: {got}");
        let hit = series.as_array().into_iter().flatten().any(|sr| {
            sr["name"] == m.as_str()
                && sr["tags"][tag.as_str()] == "v"
                && sr["columns"][1] == field.as_str()
                && sr["values"]
                    .as_array()
                    .is_some_and(|rows| rows.iter().any(|r| r[1].as_f64() == Some(*v)))
        });
        assert!(hit, "{case}");
    }
}
