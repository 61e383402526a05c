//! Graceful shutdown: in-flight requests finish, the WAL is committed and
//! flushed to chDB before exit; a restart finds every acknowledged point and
//! nothing to replay.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

use crate::util::*;

#[test]
fn sigterm_flushes_everything_acknowledged() {
    let dir = data_dir();
    let mut s = Spawn::new(dir.path())
        // Nothing flushes before shutdown: the shutdown itself must do it.
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .env("CHINGEST_FLUSH__MAX_POINTS_PER_BATCH", "1000000")
        .start();
    s.query("CREATE DATABASE sd");
    let mut expected_sum = 0i64;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let s = &s;
                scope.spawn(move || {
                    let mut sum = 0i64;
                    for r in 0..10 {
                        let body: String = (0..25)
                            .map(|i| {
                                let v = t * 10_000 + r * 100 + i;
                                format!(
                                    "pts,thread=t{t} v={v}i {}\n",
                                    1_700_000_000_000_000_000i64 + v
                                )
                            })
                            .collect();
                        let resp = s.post("/write?db=sd", body);
                        assert_eq!(resp.status(), 204);
                        sum += (0..25).map(|i| t * 10_000 + r * 100 + i).sum::<i64>();
                    }
                    sum
                })
            })
            .collect();
        for h in handles {
            expected_sum += h.join().unwrap();
        }
    });
    let h: Value = s.get("/health").json().unwrap();
    assert_eq!(
        h["wal"]["unflushed_points"], 2000,
        "nothing flushed yet: {h}"
    );

    // An in-flight request: headers and half the body before SIGTERM, the rest after.
    let mut inflight = TcpStream::connect(s.addr).unwrap();
    inflight
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body = b"pts,thread=late v=7i 1800000000000000000\n";
    write!(
        inflight,
        "POST /write?db=sd HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    inflight.write_all(&body[..10]).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    s.signal("TERM");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        TcpStream::connect(s.addr).is_err(),
        "no new connections once shutting down"
    );
    inflight.write_all(&body[10..]).unwrap();
    let (status, _) = read_response(&mut inflight);
    assert_eq!(status, 204, "in-flight request finished during shutdown");
    let exit = s.terminate_wait();
    assert!(
        exit.success(),
        "exit status {exit:?}; log:\n{}",
        s.log_text()
    );
    let log = s.log_text();
    assert!(log.contains("shutdown complete"), "{log}");
    assert!(!log.contains("entries remain unflushed"), "{log}");
    drop(s);

    let s2 = Spawn::new(dir.path()).start();
    let rows = s2.sql(
        "SELECT toString(count()) AS n, toString(sum(v)) AS s FROM sd.pts WHERE thread != 'late'",
    );
    assert_eq!(rows[0]["n"], "2000");
    assert_eq!(rows[0]["s"], expected_sum.to_string());
    let late = s2.sql("SELECT v FROM sd.pts WHERE thread = 'late'");
    assert_eq!(late, vec![serde_json::json!({"v": 7})]);
    let log = s2.log_text();
    assert!(
        !log.contains("replaying unflushed WAL entries"),
        "nothing to replay:\n{log}"
    );
    let h: Value = s2.get("/health").json().unwrap();
    assert_eq!(h["wal"]["unflushed_points"], 0);
    assert_eq!(
        s2.query("SHOW DATABASES")["results"][0]["series"][0]["values"],
        serde_json::json!([["sd"]])
    );
}

/// kill -9 with everything unflushed: the restart replays the WAL into chDB.
#[test]
fn sigkill_then_restart_replays_every_acknowledged_point() {
    let dir = data_dir();
    let mut s = Spawn::new(dir.path())
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .env("CHINGEST_FLUSH__MAX_POINTS_PER_BATCH", "1000000")
        .start();
    s.query("CREATE DATABASE kd");
    for r in 0..5 {
        let body: String = (0..40)
            .map(|i| format!("k,r=r{r} v={}i {}\n", r * 40 + i, 1_000 + r * 40 + i))
            .collect();
        assert_eq!(s.post("/write?db=kd", body).status(), 204);
    }
    let h: Value = s.get("/health").json().unwrap();
    assert_eq!(h["wal"]["unflushed_points"], 200);
    s.signal("KILL");
    let _ = s.terminate_wait();
    drop(s);

    let s2 = Spawn::new(dir.path()).start();
    let rows = s2.sql_until("SELECT v FROM kd.k ORDER BY v", 200);
    let got: Vec<i64> = rows.iter().map(|r| r["v"].as_i64().unwrap()).collect();
    assert_eq!(got, (0..200).collect::<Vec<_>>());
    assert!(
        s2.log_text().contains("replaying unflushed WAL entries"),
        "{}",
        s2.log_text()
    );
    assert_eq!(
        s2.query("SHOW DATABASES")["results"][0]["series"][0]["values"],
        serde_json::json!([["kd"]])
    );
}

/// `[storage] wal_compression = "lz4"`: LZ4-framed WAL entries replay after
/// `kill -9`, and a restart with `none` reads them beside plain ones.
#[test]
fn lz4_wal_entries_replay_after_kill_beside_plain_ones() {
    let dir = data_dir();
    let mut s = Spawn::new(dir.path())
        .env("CHINGEST_STORAGE__WAL_COMPRESSION", "lz4")
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .env("CHINGEST_FLUSH__MAX_POINTS_PER_BATCH", "1000000")
        .start();
    s.query("CREATE DATABASE kz");
    let body = |from: i64, to: i64| -> String {
        (from..to)
            .map(|i| format!("z,h=h{} v={i}i,s=\"t{i}\" {}\n", i % 3, 1_000 + i))
            .collect()
    };
    assert_eq!(s.post("/write?db=kz", body(0, 150)).status(), 204);
    let h: Value = s.get("/health").json().unwrap();
    assert_eq!(h["wal"]["unflushed_points"], 150);
    s.signal("KILL");
    let _ = s.terminate_wait();
    drop(s);

    // Plain entries now, written before the compressed ones are flushed.
    let s2 = Spawn::new(dir.path())
        .env("CHINGEST_STORAGE__WAL_COMPRESSION", "none")
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .start();
    assert_eq!(s2.post("/write?db=kz", body(150, 200)).status(), 204);
    let got = s2.query("SELECT count(v), sum(v), last(s) FROM kz.autogen.z");
    assert_eq!(
        got["results"][0]["series"][0]["values"][0],
        serde_json::json!(["1970-01-01T00:00:00Z", 200, 199 * 200 / 2, "t199"])
    );
}

/// A second signal while shutdown waits for a stuck request exits at once;
/// acknowledged writes survive through the WAL.
#[test]
fn second_signal_exits_immediately() {
    let dir = data_dir();
    let mut s = Spawn::new(dir.path())
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .start();
    s.query("CREATE DATABASE ss");
    assert_eq!(s.post("/write?db=ss", "m v=1i 1\nm v=2i 2\n").status(), 204);
    let mut stuck = TcpStream::connect(s.addr).unwrap();
    stuck
        .write_all(b"POST /write?db=ss HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nm v=")
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    s.signal("TERM");
    std::thread::sleep(Duration::from_millis(300));
    let started = std::time::Instant::now();
    s.signal("INT");
    let exit = s.terminate_wait();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(exit.code(), Some(130), "{}", s.log_text());
    drop(stuck);
    drop(s);
    let s2 = Spawn::new(dir.path()).start();
    let rows = s2.sql_until("SELECT v FROM ss.m ORDER BY v", 2);
    assert_eq!(
        rows,
        vec![serde_json::json!({"v": 1}), serde_json::json!({"v": 2})]
    );
}
