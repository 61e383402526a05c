//! `chingest backup` / `chingest restore` (issue #24): a server's databases, retention
//! policies, continuous queries and every point (every field type, rewritten points, names
//! with line protocol's special characters, points of many series at one time across page
//! boundaries) backed up from one running server and restored into a fresh one, then every
//! answer compared.

use std::process::Command;

use serde_json::Value;

use crate::util::*;

pub(crate) fn q(s: &Server, q: &str) -> Value {
    let r = s
        .client
        .post(s.url("/query?epoch=ns"))
        .form(&[("q", q)])
        .send()
        .unwrap();
    assert_eq!(r.status(), 200, "{q}");
    r.json().unwrap()
}

fn write(s: &Server, params: &str, body: &str) {
    let r = s
        .client
        .post(s.url(&format!("/write?{params}")))
        .body(body.to_string())
        .send()
        .unwrap();
    assert_eq!(r.status(), 204, "{body}: {:?}", r.text());
}

/// `chingest ARGS`: whether it succeeded, and its stdout and stderr.
pub(crate) fn run_chingest(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_chingest"))
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn chingest(args: &[&str]) -> String {
    let (ok, text) = run_chingest(args);
    assert!(ok, "chingest {args:?}: {text}");
    text
}

/// Every answer a user could compare the two servers by.
fn everything(s: &Server) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut ask = |text: String| {
        let v = q(s, &text);
        out.push((text, v));
    };
    ask("SHOW DATABASES".into());
    ask("SHOW CONTINUOUS QUERIES".into());
    for db in ["src", "other"] {
        for show in [
            "RETENTION POLICIES",
            "MEASUREMENTS",
            "SERIES",
            "TAG KEYS",
            "FIELD KEYS",
        ] {
            ask(format!("SHOW {show} ON {db}"));
        }
        for rp in ["autogen", "weekly"] {
            for m in ["cpu", "we ird,m=x", "many"] {
                ask(format!(
                    "SELECT * FROM \"{db}\".\"{rp}\".\"{m}\" GROUP BY *"
                ));
            }
        }
    }
    out
}

#[test]
fn backup_and_restore_bring_back_every_point_policy_and_continuous_query() {
    let (dir_a, dir_b, backup) = (data_dir(), data_dir(), data_dir());
    let a = Spawn::new(dir_a.path()).start();
    q(
        &a,
        "CREATE DATABASE src; CREATE DATABASE other; CREATE DATABASE left_out",
    );
    q(
        &a,
        "CREATE RETENTION POLICY weekly ON src DURATION 3650d REPLICATION 1 SHARD DURATION 2d DEFAULT",
    );
    q(&a, "ALTER RETENTION POLICY autogen ON other DURATION 5000d");
    q(
        &a,
        "CREATE CONTINUOUS QUERY per_hour ON src BEGIN SELECT mean(f) INTO src.autogen.cpu_1h FROM cpu GROUP BY time(520w), * END",
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // Every field type; the same point written twice (merged, last write wins per field).
    write(
        &a,
        "db=src&rp=autogen&precision=s",
        &format!(
            "cpu,host=a\\ b,region=x\\,y\\=z f=0.1,i=-9007199254740993i,u=18446744073709551615u,s=\"q\\\"u\\\\o\",b=true {now}\n\
             cpu,host=c f=2.5,i=3i {}\n\
             cpu,host=a\\ b,region=x\\,y\\=z f=9.75 {now}\n\
             we\\ ird\\,m\\=x,t\\ k=v\\=1 \"f\\ k\"=1i {now}",
            now - 60
        ),
    );
    // The default policy (weekly) gets these.
    write(
        &a,
        "db=src&precision=s",
        &format!(
            "cpu,host=w f=7,s=\"weekly\" {now}\ncpu,host=w b=false {}",
            now - 1
        ),
    );
    // Many series at the same times: pages of 7 points end inside groups of one time.
    let many: String = (0..60)
        .map(|i| format!("many,s=s{} v={i}i {}\n", i % 9, now - (i / 9) as u64))
        .collect();
    write(&a, "db=other&precision=s", &many);
    write(&a, "db=left_out&precision=s", &format!("m v=1 {now}"));

    let out = chingest(&[
        "backup",
        "--url",
        &a.base,
        "--page-rows",
        "7",
        "-d",
        "src",
        "-d",
        "other",
        backup.path().to_str().unwrap(),
    ]);
    assert!(
        out.contains("backed up 2 database(s), 65 point(s)"),
        "{out}"
    );

    let b = Spawn::new(dir_b.path()).start();
    let out = chingest(&["restore", "--url", &b.base, backup.path().to_str().unwrap()]);
    assert!(out.contains("restored 2 database(s), 65 point(s)"), "{out}");
    let (want, got) = (everything(&a), everything(&b));
    for ((text, w), (_, g)) in want.iter().zip(&got) {
        if text == "SHOW DATABASES" {
            // `left_out` was not backed up.
            let names = |v: &Value| v["results"][0]["series"][0]["values"].clone();
            assert_eq!(names(g), serde_json::json!([["other"], ["src"]]), "{text}");
            assert!(names(w).to_string().contains("left_out"));
            continue;
        }
        if text == "SHOW CONTINUOUS QUERIES" {
            let mut w = w.clone();
            if let Some(series) = w["results"][0]["series"].as_array_mut() {
                series.retain(|s| s["name"] != "left_out");
            }
            assert_eq!(g, &w, "{text}");
            continue;
        }
        assert_eq!(g, w, "{text}");
    }
    // Restoring again changes nothing: the same points.
    chingest(&["restore", "--url", &b.base, backup.path().to_str().unwrap()]);
    assert_eq!(everything(&b), got);
}

#[test]
fn an_influxdb_1x_server_moves_over_with_backup_and_restore() {
    let Some(influxd) = crate::influxql_diff::Influxd::for_test(
        "an_influxdb_1x_server_moves_over_with_backup_and_restore",
    ) else {
        return;
    };
    let (dir, backup) = (data_dir(), data_dir());
    let http = crate::influxql_diff::client();
    let ask = |base: &str, text: &str| -> Value {
        http.post(format!("{base}/query?epoch=ns"))
            .form(&[("q", text)])
            .send()
            .unwrap()
            .json()
            .unwrap()
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for q in [
        "CREATE DATABASE telegraf",
        "CREATE RETENTION POLICY year ON telegraf DURATION 52w REPLICATION 1",
        "ALTER RETENTION POLICY autogen ON telegraf DURATION 30d DEFAULT",
        "CREATE CONTINUOUS QUERY cpu_1h ON telegraf BEGIN SELECT mean(usage) INTO telegraf.year.cpu_1h FROM telegraf.autogen.cpu GROUP BY time(520w), * END",
    ] {
        let v = ask(&influxd.base, q);
        assert!(v["results"][0].get("error").is_none(), "{q}: {v}");
    }
    // Many series at the same times (InfluxDB orders them differently from query to query),
    // every field type InfluxDB 1.6 has, and a policy besides the default.
    let mut body: String = (0..50)
        .map(|i| {
            format!(
                "cpu,host=h{},region=r\\ {} usage={}.5,procs={}i,state=\"s {}\",up={} {}\n",
                i % 7,
                i % 2,
                i,
                i * 3,
                i % 4,
                i % 2 == 0,
                now - (i / 7) as u64
            )
        })
        .collect();
    body.push_str(&format!("mem,host=h0 used=1.25 {now}\n"));
    let w = http
        .post(format!("{}/write?db=telegraf&precision=s", influxd.base))
        .body(body)
        .send()
        .unwrap();
    assert_eq!(w.status(), 204);
    let w = http
        .post(format!(
            "{}/write?db=telegraf&rp=year&precision=s",
            influxd.base
        ))
        .body(format!("cpu_1h,host=h1 mean=2.5 {}", now - 86_400))
        .send()
        .unwrap();
    assert_eq!(w.status(), 204);

    let out = chingest(&[
        "backup",
        "--url",
        &influxd.base,
        "--page-rows",
        "6",
        backup.path().to_str().unwrap(),
    ]);
    assert!(
        out.contains("backed up 1 database(s), 52 point(s)"),
        "{out}"
    );
    let s = Spawn::new(dir.path()).start();
    let out = chingest(&["restore", "--url", &s.base, backup.path().to_str().unwrap()]);
    assert!(out.contains("restored 1 database(s), 52 point(s)"), "{out}");
    for text in [
        "SHOW RETENTION POLICIES ON telegraf",
        "SHOW CONTINUOUS QUERIES",
        "SHOW MEASUREMENTS ON telegraf",
        "SHOW SERIES ON telegraf",
        "SHOW TAG KEYS ON telegraf",
        "SELECT * FROM telegraf.autogen.cpu GROUP BY *",
        "SELECT * FROM telegraf.autogen.mem GROUP BY *",
        "SELECT * FROM telegraf.year.cpu_1h GROUP BY *",
        "SELECT count(usage), sum(procs), max(usage) FROM telegraf..cpu GROUP BY host",
    ] {
        assert_eq!(ask(&s.base, text), ask(&influxd.base, text), "{text}");
    }
}

#[test]
fn backup_and_restore_authenticate_as_an_admin() {
    let (dir_a, dir_b, backup) = (data_dir(), data_dir(), data_dir());
    let config = format!(
        "[auth]\nenabled = true\n\n[[auth.users]]\nname = \"admin\"\npassword_hash = \"{}\"\nadmin = true\n",
        hash("s3cret")
    );
    let start = |dir: &std::path::Path| Spawn::new(dir).config(&config).start();
    let (a, b) = (start(dir_a.path()), start(dir_b.path()));
    let admin = |s: &Server, q: &str| {
        let r = s
            .client
            .post(s.url("/query?epoch=ns"))
            .basic_auth("admin", Some("s3cret"))
            .form(&[("q", q)])
            .send()
            .unwrap();
        assert_eq!(r.status(), 200, "{q}");
        r.json::<Value>().unwrap()
    };
    admin(&a, "CREATE DATABASE d");
    // An InfluxQL user with a grant: backed up (its bcrypt hash) and restored.
    admin(&a, "CREATE USER reader WITH PASSWORD 'r3ader-pw'");
    admin(&a, "GRANT READ ON d TO reader");
    admin(
        &a,
        "CREATE USER boss WITH PASSWORD 'b0ss-pw' WITH ALL PRIVILEGES",
    );
    let w = a
        .client
        .post(a.url("/write?db=d&precision=s"))
        .basic_auth("admin", Some("s3cret"))
        .body("m,k=v f=1.5 1\nm,k=w f=2 2")
        .send()
        .unwrap();
    assert_eq!(w.status(), 204);
    let run = |args: &[&str], password: &str| {
        Command::new(env!("CARGO_BIN_EXE_chingest"))
            .args(args)
            .env("CHINGEST_PASSWORD", password)
            .output()
            .unwrap()
    };
    let dir = backup.path().to_str().unwrap();
    // A wrong password: a clear failure, no manifest.
    let out = run(&["backup", "--url", &a.base, "-u", "admin", dir], "nope");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("authorization failed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!backup.path().join("manifest.json").exists());
    // The password from the environment, never on the command line.
    let out = run(&["backup", "--url", &a.base, "-u", "admin", dir], "s3cret");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Users come over only when asked, admins only with --admins.
    let out = run(&["restore", "--url", &b.base, "-u", "admin", dir], "s3cret");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--users restores them"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        admin(&b, "SHOW USERS")["results"][0]["series"][0]["values"],
        serde_json::json!([["admin", true]])
    );
    let out = run(
        &["restore", "--url", &b.base, "-u", "admin", "--users", dir],
        "s3cret",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("1 admin user(s) of the backup not restored"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let q = "SELECT * FROM d..m GROUP BY *";
    assert_eq!(admin(&b, q), admin(&a, q));
    // The user came over: its password works on the new server, with its grant; the
    // backup holds its hash, never the password, readable by the owner only.
    let users = std::fs::read_to_string(backup.path().join("users.json")).unwrap();
    assert!(
        users.contains("\"reader\"") && !users.contains("r3ader-pw"),
        "{users}"
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(backup.path().join("users.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert_eq!(
        admin(&b, "SHOW GRANTS FOR reader")["results"][0]["series"][0]["values"],
        serde_json::json!([["d", "READ"]])
    );
    let read = b
        .client
        .get(b.url("/query"))
        .basic_auth("reader", Some("r3ader-pw"))
        .query(&[("db", "d"), ("q", "SELECT count(f) FROM m")])
        .send()
        .unwrap();
    assert_eq!(read.status(), 200);
    // Only an admin reads or adds users; a body that is not a users backup, or a hash
    // chingest cannot check, changes nothing.
    let as_reader = |req: reqwest::blocking::RequestBuilder| {
        req.basic_auth("reader", Some("r3ader-pw")).send().unwrap()
    };
    assert_eq!(
        as_reader(b.client.get(b.url("/api/v1/users"))).status(),
        403
    );
    let forged = r#"{"version":1,"users":[{"name":"mallory","hash":"x","admin":true}]}"#;
    assert_eq!(
        as_reader(b.client.post(b.url("/api/v1/users")).body(forged)).status(),
        403
    );
    let as_admin = |body: &'static str| {
        b.client
            .post(b.url("/api/v1/users"))
            .basic_auth("admin", Some("s3cret"))
            .body(body)
            .send()
            .unwrap()
            .status()
    };
    assert_eq!(as_admin(forged), 400);
    assert_eq!(as_admin("not json"), 400);
    assert_eq!(
        as_admin(
            r#"{"version":1,"users":[{"name":"eve","hash":"$2a$10$short","admin":true,"privileges":{"d":"OWN"}}]}"#
        ),
        400
    );
    let users = admin(&b, "SHOW USERS")["results"][0]["series"][0]["values"].clone();
    assert_eq!(
        users,
        serde_json::json!([["admin", true], ["reader", false]]),
        "{users}"
    );
    // A restore again keeps the users as they are; with --admins the admin comes too.
    let out = run(
        &[
            "restore", "--url", &b.base, "-u", "admin", "--users", "--admins", dir,
        ],
        "s3cret",
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 user(s) added (1 kept"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        admin(&b, "SHOW USERS")["results"][0]["series"][0]["values"],
        serde_json::json!([["admin", true], ["reader", false], ["boss", true]])
    );
    // `--start`/`--end` bound the points taken (m,k=w at 2 s only).
    let part = data_dir();
    let part_dir = part.path().to_str().unwrap();
    let out = run(
        &[
            "backup",
            "--url",
            &a.base,
            "-u",
            "admin",
            "--start",
            "1970-01-01T00:00:01.5Z",
            "--end",
            "1970-01-01T00:00:03Z",
            part_dir,
        ],
        "s3cret",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("1 point(s)"),
        "{text}{}\nlast: {}\nfields: {}\nall: {}\nlog: {}",
        String::from_utf8_lossy(&out.stderr),
        admin(&a, "SELECT * FROM d.autogen.m ORDER BY time DESC LIMIT 1"),
        admin(&a, "SHOW FIELD KEYS ON d FROM autogen.m"),
        admin(&a, "SELECT * FROM d.autogen.m WHERE time >= '1970-01-01T00:00:01.5Z' AND time < '1970-01-01T00:00:03Z'"),
        a.log_text()
    );
}

/// A backup taken while writes go on, the source then killed: restored into a fresh server,
/// every point acknowledged before the backup began is there exactly once (points written
/// during it may be there or not, never twice).
#[test]
fn a_backup_during_writes_holds_everything_acknowledged_before_it_began() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;
    use std::time::{Duration, Instant};
    let (dir_a, dir_b, backup) = (data_dir(), data_dir(), data_dir());
    let mut a = Spawn::new(dir_a.path()).start();
    q(&a, "CREATE DATABASE ramp");
    const PER: usize = 100;
    let stop = AtomicBool::new(false);
    // (batch, acknowledged at) of every 204.
    let acked: Mutex<Vec<(usize, Instant)>> = Mutex::new(Vec::new());
    let backup_began = std::thread::scope(|scope| {
        scope.spawn(|| {
            let base = 1_700_000_000_000_000_000i64;
            let mut b = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let body: String = (0..PER)
                    .map(|j| format!("m,b=b{b} v={j}i {}\n", base + (b * PER + j) as i64))
                    .collect();
                let r = a.client.post(a.url("/write?db=ramp")).body(body).send();
                if r.is_ok_and(|r| r.status() == 204) {
                    acked.lock().unwrap().push((b, Instant::now()));
                }
                b += 1;
            }
        });
        std::thread::sleep(Duration::from_millis(500));
        let began = Instant::now();
        chingest(&[
            "backup",
            "--url",
            &a.base,
            "--page-rows",
            "700",
            backup.path().to_str().unwrap(),
        ]);
        std::thread::sleep(Duration::from_millis(200));
        stop.store(true, Ordering::Relaxed);
        began
    });
    a.signal("KILL");
    let _ = a.terminate_wait();
    let b = Spawn::new(dir_b.path()).start();
    chingest(&["restore", "--url", &b.base, backup.path().to_str().unwrap()]);
    let counts: std::collections::BTreeMap<String, i64> =
        q(&b, "SELECT count(v) FROM ramp..m GROUP BY b")["results"][0]["series"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                (
                    s["tags"]["b"].as_str().unwrap().to_string(),
                    s["values"][0][1].as_i64().unwrap(),
                )
            })
            .collect();
    let acked = acked.into_inner().unwrap();
    let before: Vec<usize> = acked
        .iter()
        .filter(|(_, at)| *at < backup_began)
        .map(|(b, _)| *b)
        .collect();
    assert!(
        before.len() >= 3,
        "too few writes before the backup: {}",
        before.len()
    );
    for batch in &before {
        assert_eq!(
            counts.get(&format!("b{batch}")),
            Some(&(PER as i64)),
            "batch {batch}, acknowledged before the backup began"
        );
    }
    for (batch, n) in &counts {
        assert!(*n as usize <= PER, "{batch}: {n} points of {PER}");
    }
}
