//! Issue #15, build item 6: bounded resources. Error headers that every client
//! can read, metric labels from a fixed set, a byte budget held only for bytes
//! that arrived, a connection cap answered fast, unflushed bytes as well as
//! points.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

#[test]
fn a_70kb_bad_line_is_a_readable_400_for_python_clients() {
    let Some(python) = test_dep_or_skip(
        cache_dir().join("venv/bin/python"),
        "Python venv with the InfluxDB clients",
        "a_70kb_bad_line_is_a_readable_400_for_python_clients",
    ) else {
        return;
    };
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    s.query("CREATE DATABASE b");
    // http.client refuses a header line over 64 KiB (`LineTooLong`); the
    // InfluxDB clients sit on it. Each must read the 400 and its message.
    let script = r#"
import http.client, json, os, sys
host, port = os.environ["HOST"], int(os.environ["PORT"])
line = "m v=" + "x" * 70000
c = http.client.HTTPConnection(host, port, timeout=30)
c.request("POST", "/write?db=b", body=line)
r = c.getresponse()
body = json.loads(r.read())
assert r.status == 400, r.status
header = r.getheader("X-Influxdb-Error")
assert len(header) <= 1024, len(header)
assert header.startswith("unable to parse 'm v=xxx"), header[:80]
assert header.endswith("invalid boolean"), header[-80:]
assert len(body["error"]) <= 65536 and body["error"].endswith("invalid boolean"), len(body["error"])

from influxdb import InfluxDBClient
from influxdb.exceptions import InfluxDBClientError
try:
    InfluxDBClient(host, port, database="b").write_points([line], protocol="line")
    sys.exit("influxdb: no error")
except InfluxDBClientError as e:
    assert e.code == 400, e.code
    assert "unable to parse" in str(e.content), str(e.content)[:200]

from influxdb_client import InfluxDBClient as V2
from influxdb_client.client.write_api import SYNCHRONOUS
from influxdb_client.rest import ApiException
with V2(url=f"http://{host}:{port}", token="t", org="o") as v2:
    try:
        v2.write_api(write_options=SYNCHRONOUS).write(bucket="b", record=line)
        sys.exit("influxdb_client: no error")
    except ApiException as e:
        assert e.status == 400, e.status
        assert "unable to parse" in str(e.body), str(e.body)[:200]
print("ok")
"#;
    let out = Command::new(&python)
        .args(["-c", script])
        .env("HOST", s.addr.ip().to_string())
        .env("PORT", s.addr.port().to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn request_metrics_label_unknown_methods_as_other() {
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    for method in ["BREW", "XYZZY1", "XYZZY2"] {
        let (status, _) = raw_request(
            s.addr,
            &format!("{method} /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
            b"",
        );
        assert_eq!(status, 405, "{method}");
    }
    let metrics = s.get("/metrics").text().unwrap();
    for bad in ["BREW", "XYZZY"] {
        assert!(!metrics.contains(bad), "{bad} became a label:\n{metrics}");
    }
    assert!(
        metrics.contains("method=\"other\""),
        "no method=\"other\":\n{metrics}"
    );
}

#[test]
fn a_slow_body_holds_only_the_budget_for_bytes_it_sent() {
    let dir = data_dir();
    let s = Spawn::new(dir.path())
        .env("CHINGEST_SERVER__MAX_BODY_BYTES", "65536")
        .env("CHINGEST_LIMITS__MAX_INFLIGHT_BYTES", "65536")
        .env("CHINGEST_SERVER__BODY_READ_TIMEOUT_SECS", "10")
        .start();
    s.query("CREATE DATABASE slow");
    // Announces 60000 bytes, sends 10, then waits.
    let mut slow = TcpStream::connect(s.addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    slow.write_all(
        b"POST /write?db=slow HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n\r\nm v=1\n####",
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let h: Value = s.get("/health").json().unwrap();
    let available = h["inflight_bytes_available"].as_u64().unwrap();
    assert!(
        available >= 65536 - 1024,
        "a slow body reserved {} bytes for the 10 it sent",
        65536 - available
    );
    // So a 50 KB write goes through meanwhile.
    let body = "m v=2 2\n".to_string() + &"#".repeat(50_000);
    assert_eq!(s.post("/write?db=slow", body).status(), 204);
    // What it does send is held: 40,000 more bytes leave less than 50 KB.
    slow.write_all(&vec![b'#'; 40_000]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let h: Value = s.get("/health").json().unwrap();
        if h["inflight_bytes_available"].as_u64().unwrap() < 65536 - 40_000 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "bytes sent were not reserved: {h}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = s.post("/write?db=slow", "#".repeat(50_000));
    assert_eq!(r.status(), 503);
    assert!(r.headers().contains_key("retry-after"));
    // A declared length over the cap is still refused before a byte is read.
    let (status, text) = raw_request(
        s.addr,
        "POST /write?db=slow HTTP/1.1\r\nHost: x\r\nContent-Length: 70000\r\nConnection: close\r\n\r\n",
        b"",
    );
    assert_eq!(status, 413, "{text}");
    // The slow client is cut off after the body read timeout; the budget is back.
    let (status, _) = read_response(&mut slow);
    assert_eq!(status, 408);
    let h: Value = s.get("/health").json().unwrap();
    assert_eq!(h["inflight_bytes_available"], 65536, "{h}");
}

#[test]
fn connections_past_the_cap_are_answered_503_at_once() {
    let dir = data_dir();
    let s = Spawn::new(dir.path())
        .env("CHINGEST_SERVER__MAX_CONNECTIONS", "4")
        .env("CHINGEST_SERVER__HEADER_READ_TIMEOUT_SECS", "20")
        .start();
    // Four idle connections take every slot (the readiness probe's is closed).
    std::thread::sleep(Duration::from_millis(200));
    let idle: Vec<TcpStream> = (0..4)
        .map(|_| TcpStream::connect(s.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    let (status, text) = raw_request(s.addr, "GET /ping HTTP/1.1\r\nHost: x\r\n\r\n", b"");
    let took = started.elapsed();
    assert_eq!(status, 503, "{text}");
    assert!(took < Duration::from_millis(500), "{took:?}");
    assert!(
        text.to_ascii_lowercase().contains("retry-after: 1"),
        "{text}"
    );
    assert!(text.contains("server.max_connections"), "{text}");
    // A client still sending its body reads the refusal too.
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(b"POST /write?db=x HTTP/1.1\r\nHost: x\r\nContent-Length: 20000\r\n\r\n")
        .unwrap();
    let _ = c.write_all(&[b'#'; 20_000]);
    let mut answer = String::new();
    let _ = c.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    // Slots come back when connections close.
    drop(idle);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (status, _) = raw_request(
            s.addr,
            "GET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            b"",
        );
        if status == 204 {
            break;
        }
        assert!(Instant::now() < deadline, "slots never came back: {status}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let metrics = s.get("/metrics").text().unwrap();
    assert!(
        metrics.lines().any(
            |l| l.starts_with("chingest_http_connections_refused_total ") && !l.ends_with(" 0")
        ),
        "{metrics}"
    );
}

#[test]
fn unflushed_bytes_are_bounded_too_and_writes_resume_when_flushed() {
    unflushed_bytes_are_bounded(None);
}

/// With uncompressed WAL entries the payload is as large as what the flusher holds; with LZ4
/// (the default, above) a 1 MiB string of one character is a ~4 KiB entry, and the bound must
/// still count the 1 MiB held until the INSERT.
#[test]
fn unflushed_bytes_are_bounded_without_wal_compression_too() {
    unflushed_bytes_are_bounded(Some("none"));
}

fn unflushed_bytes_are_bounded(wal_compression: Option<&str>) {
    let dir = data_dir();
    let mut spawn = Spawn::new(dir.path());
    if let Some(c) = wal_compression {
        spawn = spawn.env("CHINGEST_STORAGE__WAL_COMPRESSION", c);
    }
    let s = spawn
        .env("CHINGEST_LIMITS__MAX_UNFLUSHED_BYTES", "4194304")
        .env("CHINGEST_LIMITS__RETRY_AFTER_SECS", "2")
        // Flushed every 3 s: the unflushed bytes pile up in between.
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "3000")
        .start();
    s.query("CREATE DATABASE big");
    // 1 MiB strings compress to ~1 KiB: points and body budgets never notice.
    let line = |i: usize| format!("m,k=v s=\"{}\" {i}", "x".repeat(1 << 20));
    let mut refused = None;
    for i in 1..=20 {
        let r = s
            .client
            .post(s.url("/write?db=big"))
            .header("Content-Encoding", "gzip")
            .body(gzip(line(i).as_bytes()))
            .send()
            .unwrap();
        match r.status().as_u16() {
            204 => continue,
            503 => {
                assert_eq!(r.headers()["retry-after"], "2");
                let e = r.json::<Value>().unwrap()["error"]
                    .as_str()
                    .unwrap()
                    .to_string();
                assert!(e.contains("bytes wait to reach the engine"), "{e}");
                assert!(e.contains("limits.max_unflushed_bytes"), "{e}");
                refused = Some(i);
                break;
            }
            other => panic!("{other}: {}", r.text().unwrap()),
        }
    }
    let refused = refused.expect("the unflushed-bytes limit never refused");
    assert!((4..=6).contains(&refused), "refused at write {refused}");
    let h: Value = s.get("/health").json().unwrap();
    assert!(
        h["wal"]["unflushed_bytes"].as_u64().unwrap() >= 4 << 20,
        "{h}"
    );
    assert!(h["wal"]["unflushed_points"].as_u64().unwrap() < 10, "{h}");
    // Once flushed, writes are accepted again.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = s
            .client
            .post(s.url("/write?db=big"))
            .header("Content-Encoding", "gzip")
            .body(gzip(line(100).as_bytes()))
            .send()
            .unwrap();
        if r.status() == 204 {
            break;
        }
        assert_eq!(r.status(), 503);
        assert!(Instant::now() < deadline, "writes never resumed");
        std::thread::sleep(Duration::from_millis(200));
    }
    s.sql_until("SELECT length(s) AS n FROM big.m", refused);
}
