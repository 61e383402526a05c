//! Back-pressure: a saturated server refuses at once with 503 (v1) / 429 (v2)
//! and Retry-After; slow bodies time out with 408.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

#[test]
fn saturated_server_answers_quickly_with_retry_after() {
    let dir = data_dir();
    let s = Spawn::new(dir.path())
        .env("CHINGEST_SERVER__MAX_BODY_BYTES", "65536")
        .env("CHINGEST_LIMITS__MAX_INFLIGHT_BYTES", "65536")
        .env("CHINGEST_SERVER__BODY_READ_TIMEOUT_SECS", "3")
        .env("CHINGEST_LIMITS__RETRY_AFTER_SECS", "2")
        .env("CHINGEST_SERVER__HEADER_READ_TIMEOUT_SECS", "1")
        .env("CHINGEST_LIMITS__MAX_UNFLUSHED_POINTS", "3")
        // Nothing flushes on its own: unflushed points only grow.
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .env("CHINGEST_FLUSH__MAX_POINTS_PER_BATCH", "1000000")
        .start();
    s.query("CREATE DATABASE bp");

    // A client that never finishes its headers is disconnected.
    let mut stuck = TcpStream::connect(s.addr).unwrap();
    stuck
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stuck
        .write_all(b"POST /write?db=bp HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let started = Instant::now();
    let (status, text) = read_response(&mut stuck);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "header read timeout"
    );
    assert!(status == 0 || status == 408, "{status} {text}");

    // A slow client announces 65000 bytes and sends 60000: the budget is held
    // for what it sent (tests/http/bounds.rs: not for what it announced).
    let mut slow = TcpStream::connect(s.addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    slow.write_all(
        b"POST /write?db=bp HTTP/1.1\r\nHost: x\r\nContent-Length: 65000\r\n\r\nm v=1\n",
    )
    .unwrap();
    slow.write_all(&[b'#'; 59_994]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let h: Value = s.get("/health").json().unwrap();
        if h["inflight_bytes_available"].as_u64().unwrap() < 10_000 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the slow request never reserved its bytes: {h}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = Instant::now();
    let r = s.post("/write?db=bp", vec![b'#'; 10_000]);
    let elapsed = started.elapsed();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "2");
    assert!(elapsed < Duration::from_secs(1), "refused in {elapsed:?}");
    let body: Value = r.json().unwrap();
    assert!(
        body["error"].as_str().unwrap().contains("in-flight bytes"),
        "{body}"
    );
    let r = s.post("/api/v2/write?bucket=bp", vec![b'#'; 10_000]);
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "2");
    assert_eq!(r.json::<Value>().unwrap()["code"], "too many requests");

    // The slow client is cut off after the body read timeout.
    let (status, _) = read_response(&mut slow);
    assert_eq!(status, 408);
    assert_eq!(
        s.post("/write?db=bp", "m v=1 1").status(),
        204,
        "budget returned"
    );

    // Flush lag: 3 unflushed points is the limit.
    assert_eq!(s.post("/write?db=bp", "m v=2 2\nm v=3 3").status(), 204);
    let r = s.post("/write?db=bp", "m v=4 4");
    assert_eq!(r.status(), 503);
    assert!(r.headers().contains_key("retry-after"));
    assert!(r.json::<Value>().unwrap()["error"]
        .as_str()
        .unwrap()
        .contains("wait to reach the engine"));
    let h = s.get("/health");
    assert_eq!(h.status(), 503);
    assert_eq!(h.json::<Value>().unwrap()["wal"]["unflushed_points"], 3);
    // Operators see which limit refused the writes.
    let metrics = s.get("/metrics").text().unwrap();
    for (limit, n) in [("bytes_budget", 2), ("unflushed_points", 1)] {
        let line = format!("chingest_backpressure_rejections_total{{limit=\"{limit}\"}} {n}");
        assert!(
            metrics.contains(&line),
            "no `{line}` in /metrics:\n{metrics}"
        );
    }
}

#[test]
fn a_client_refused_before_its_body_is_read_still_reads_the_refusal() {
    let dir = data_dir();
    let s = Spawn::new(dir.path())
        .env("CHINGEST_LIMITS__MAX_UNFLUSHED_POINTS", "1")
        .env("CHINGEST_LIMITS__RETRY_AFTER_SECS", "2")
        // Nothing flushes on its own: the one unflushed point stays.
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .env("CHINGEST_FLUSH__MAX_POINTS_PER_BATCH", "1000000")
        .start();
    s.query("CREATE DATABASE early");
    assert_eq!(s.post("/write?db=early", "m v=0 1").status(), 204);
    // Now every write is refused before a byte of its body is read. 8 MiB is
    // far more than the socket buffers hold, so the client only finishes
    // sending (and then reads the 503) if the server keeps reading.
    let body = "m v=1\n".repeat((8 << 20) / 6);
    for _ in 0..3 {
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        c.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
        let head = format!(
            "POST /write?db=early HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        c.write_all(head.as_bytes()).unwrap();
        c.write_all(body.as_bytes())
            .expect("the server kept reading the refused body");
        let (status, text) = read_response(&mut c);
        assert_eq!(status, 503, "{text}");
        assert!(text.contains("wait to reach the engine"), "{text}");
        let lower = text.to_ascii_lowercase();
        assert!(lower.contains("retry-after: 2"), "{text}");
        // The connection is not reused (a next request would wait behind the
        // drain of the refused body): closed cleanly once the body is read.
        assert!(lower.contains("connection: close"), "{text}");
        let mut rest = [0u8; 64];
        assert_eq!(
            c.read(&mut rest).expect("a clean close, not a reset"),
            0,
            "the server closes the connection after a refused body"
        );
    }
    // A refusal with nothing left to read keeps the connection.
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    for _ in 0..2 {
        c.write_all(b"POST /write?db=early HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
            .unwrap();
        let (status, text) = read_response(&mut c);
        assert_eq!(status, 503, "{text}");
        assert!(
            !text.to_ascii_lowercase().contains("connection: close"),
            "{text}"
        );
    }
}
