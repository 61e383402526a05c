//! Issue #15, build item 1: what storage cannot hold is refused at the door with
//! 400 and InfluxDB's partial-write text, the good lines of the same request are
//! written and readable, other databases keep flowing, nothing reaches the
//! flusher that it would fail on (no quarantine, no flush failure), and the
//! server stops and restarts cleanly afterwards.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::*;

/// The engine's virtual-column names it can nevertheless hold as columns
/// (probed: `ingest::names` has the facts); the three it cannot are refused.
const HELD_UNDERSCORE_NAMES: [&str; 15] = [
    "_part",
    "_part_index",
    "_part_uuid",
    "_partition_id",
    "_partition_value",
    "_sample_factor",
    "_part_offset",
    "_table",
    "_database",
    "_shard_num",
    "_file",
    "_path",
    "_size",
    "_time",
    "_etag",
];

/// One poison line between two good ones: 400, `partial write: … dropped=1`
/// naming `rule`, in the body and (bounded) in the header; the good lines are
/// acknowledged with it.
fn refused(s: &Server, db: &str, bad: &[u8], rule: &str, t: &mut u64) {
    let mut body = format!("good,h=a v={t} {t}\n").into_bytes();
    body.extend_from_slice(bad);
    body.extend_from_slice(format!("\ngood,h=b v={t} {t}").as_bytes());
    *t += 1;
    let r = s
        .client
        .post(s.url(&format!("/write?db={db}")))
        .body(body)
        .send()
        .unwrap();
    let label = String::from_utf8_lossy(&bad[..bad.len().min(60)]).into_owned();
    assert_eq!(r.status(), 400, "{label}");
    let header = String::from_utf8_lossy(r.headers()["x-influxdb-error"].as_bytes()).into_owned();
    let text = r.json::<Value>().unwrap()["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.starts_with("partial write: "), "{label}: {text}");
    assert!(text.ends_with(" dropped=1"), "{label}: {text}");
    assert!(text.contains(rule), "{label}: {text}");
    assert!(header.len() <= 1024, "{label}");
    assert!(
        header.contains(&rule[..rule.len().min(40)]),
        "{label}: {header}"
    );
}

pub(crate) fn health(s: &Server) -> Value {
    s.get("/health").json().unwrap()
}

/// Every point accepted before this call flushed, none failed, nothing
/// quarantined. Waits for the flush watermark to pass the WAL's last entry as
/// of the call, not for an empty WAL: another client may keep writing, and on
/// a loaded machine a moment with nothing unflushed may never come (#22).
pub(crate) fn drained_without_failures(s: &Server) {
    let target = health(s)["wal"]["last_seq"].as_u64().expect("last_seq");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let h = health(s);
        assert_eq!(h["flush"]["consecutive_failures"], 0, "{h}");
        assert_eq!(h["quarantine"], json!([]), "{h}");
        if h["wal"]["flushed_seq"]
            .as_u64()
            .is_some_and(|f| f >= target)
        {
            return;
        }
        assert!(Instant::now() < deadline, "never reached seq {target}: {h}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn poison_writes_are_refused_at_the_door_and_nothing_downstream_wedges() {
    let dir = data_dir();
    let mut s = Spawn::new(dir.path()).start();
    s.query("CREATE DATABASE d");
    s.query("CREATE DATABASE other");

    // Another client writes to another database all along.
    let other_base = s.base.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let c = reqwest::blocking::Client::new();
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let r = c
                    .post(format!("{other_base}/write?db=other"))
                    .body(format!("o,w=1 v={n} {}", n + 1))
                    .send()
                    .unwrap();
                assert_eq!(r.status(), 204, "the other database kept flowing");
                n += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            n
        })
    };

    let fields: Vec<String> = (0..20_000).map(|i| format!("f{i}=1")).collect();
    let wide = format!("wide {}", fields.join(","));
    // Database "d" takes 1 byte as a file name: 212 are left for the measurement.
    let long_measurement = format!("{} v=1", "m".repeat(213));
    let mut cases: Vec<(Vec<u8>, String)> = Vec::new();
    for name in ["_row_exists", "_block_number", "_block_offset"] {
        cases.push((
            format!("m {name}=1").into_bytes(),
            format!("invalid field name: input field \"{name}\" on measurement \"m\" is invalid (reserved by the storage engine)"),
        ));
        cases.push((
            format!("m,{name}=a v=1").into_bytes(),
            format!("invalid tag key: input tag \"{name}\" on measurement \"m\" is invalid (reserved by the storage engine)"),
        ));
    }
    cases.extend([
        (b"m f\xff=1".to_vec(), "invalid field name: input field \"f\u{fffd}\" on measurement \"m\" is invalid (not UTF-8)".to_string()),
        (b"m f\xfe=\"x\"".to_vec(), "invalid field name: input field \"f\u{fffd}\" on measurement \"m\" is invalid (not UTF-8)".to_string()),
        (b"m\xff,h=a v=1".to_vec(), "key contains invalid unicode: \"m\u{fffd},h=a\"".to_string()),
        (b"m f=1,f=\"x\"".to_vec(), "field type conflict: input field \"f\" on measurement \"m\" is type string, already exists as type float".to_string()),
        (wide.into_bytes(), "max-columns-per-measurement limit exceeded: (1000) measurement=\"wide\"".to_string()),
        (long_measurement.into_bytes(), "invalid measurement name: measurement \"mmmm".to_string()),
    ]);
    let mut t = 1_000;
    for (bad, rule) in &cases {
        refused(&s, "d", bad, rule, &mut t);
    }
    // A measurement may be called like anything internal (no internal table
    // shares the namespace), and `_` names the engine holds are ordinary.
    assert_eq!(s.post("/write?db=d", "__series,host=a v=1 1").status(), 204);
    let held: Vec<String> = HELD_UNDERSCORE_NAMES
        .iter()
        .enumerate()
        .map(|(i, n)| format!("{n}={i}"))
        .collect();
    let line = format!("vc,_part_starting_offset=p {} 5", held.join(","));
    assert_eq!(s.post("/write?db=d", line).status(), 204);

    // The good lines are there: two per refused request.
    let good = s.sql_until("SELECT h, v FROM d.good ORDER BY time, h", 2 * cases.len());
    assert_eq!(
        (good[0]["h"].as_str(), good[0]["v"].as_f64()),
        (Some("a"), Some(1000.0))
    );
    let cols: Vec<String> = HELD_UNDERSCORE_NAMES
        .iter()
        .map(|n| format!("`{n}`"))
        .collect();
    let row = s.sql_until(
        &format!(
            "SELECT `_part_starting_offset` AS tag, {} FROM d.vc",
            cols.join(", ")
        ),
        1,
    );
    for (i, n) in HELD_UNDERSCORE_NAMES.iter().enumerate() {
        assert_eq!(row[0][*n].as_f64(), Some(i as f64), "{n}: {}", row[0]);
    }
    assert_eq!(row[0]["tag"], "p");
    let series = s.sql_until("SELECT host, v FROM d.`__series`", 1);
    assert_eq!(
        (series[0]["host"].as_str(), series[0]["v"].as_f64()),
        (Some("a"), Some(1.0))
    );
    let shown = s.query("SHOW SERIES ON d FROM \"__series\"");
    assert_eq!(
        shown["results"][0]["series"][0]["values"],
        json!([["__series,host=a"]]),
        "{shown}"
    );
    // None of the refused names reached the schema.
    let fields = s.query("SHOW FIELD KEYS ON d FROM m");
    assert!(fields["results"][0].get("series").is_none(), "{fields}");
    drained_without_failures(&s);

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flowed = writer.join().unwrap();
    assert!(flowed > 10, "{flowed} writes to the other database");

    // A bounded graceful stop, then a restart that comes up and serves both.
    let started = Instant::now();
    assert!(s.terminate().success(), "{}", s.log_text());
    assert!(started.elapsed() < Duration::from_secs(30));
    let s = Spawn::new(dir.path()).start();
    assert_eq!(s.post("/write?db=d", "good,h=c v=1 999999").status(), 204);
    s.sql_until("SELECT v FROM d.good", 2 * cases.len() + 1);
    s.sql_until("SELECT host FROM d.`__series`", 1);
    s.sql_until("SELECT v FROM other.o", flowed as usize);
    drained_without_failures(&s);
}
