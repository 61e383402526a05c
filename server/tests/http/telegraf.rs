//! The real Telegraf (`outputs.influxdb` and `outputs.influxdb_v2`) against the
//! server, unchanged: `telegraf --once` with a generated config, then every
//! point is read back through `/api/v1/sql` and compared exactly.
//!
//! The binary comes from `scripts/setup.sh --test-deps` (a custom build of
//! Telegraf with only the plugins used here) or from `$CHINGEST_TELEGRAF`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::*;

/// Keep in step with `TELEGRAF_VERSION` in scripts/setup.sh.
const TELEGRAF_VERSION: &str = "1.37.2";

/// Deterministic input for `inputs.file`: tags needing escapes, every field
/// type (float, integer, unsigned, string, boolean) and nanosecond timestamps.
const LINES: &str = r#"tg_every,host=web-1,region=eu-west f=1.5,i=-42i,u=18446744073709551615u,s="quote \" back\\slash, comma",b=true 1700000000123456789
tg_every,host=web-2 f=-0.25,i=9223372036854775807i,u=7u,s="",b=false 1700000001000000001
tg_every,host=web\ 3,region=a\,b\=c f=0,i=0i,u=0u,s="x",b=t 1700000002000000000
"#;

/// The binary (`$CHINGEST_TELEGRAF`, else setup.sh's build), or `None` (after
/// saying so loudly) outside CI when it is missing.
fn telegraf_or_skip(test: &str) -> Option<PathBuf> {
    let bin = std::env::var_os("CHINGEST_TELEGRAF")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            cache_dir()
                .join("telegraf")
                .join(TELEGRAF_VERSION)
                .join("telegraf")
        });
    test_dep_or_skip(bin, "telegraf", test)
}

/// Runs `telegraf --once --config <dir>/telegraf.conf` and returns its log
/// (stderr), asserting a clean exit within 60 s.
fn run_telegraf(bin: &Path, dir: &Path, config: &str, server: &Server) -> String {
    let conf = dir.join("telegraf.conf");
    std::fs::write(&conf, config).unwrap();
    let log = dir.join("telegraf.log");
    let mut child = Command::new(bin)
        .arg("--once")
        .arg("--config")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("spawn telegraf");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "telegraf --once did not exit in 60 s; its log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        status.success(),
        "telegraf failed ({status}):\n{text}\nserver log:\n{}",
        server.log_text()
    );
    // Telegraf logs failed writes as errors but may still exit 0.
    assert!(
        !text.contains(" E! "),
        "telegraf logged errors:\n{text}\nserver log:\n{}",
        server.log_text()
    );
    text
}

/// `[agent]` shared by the configs: one gather, nanosecond timestamps kept as
/// they are (the default precision rounds to the interval's, 1 s), no host tag.
fn agent_section() -> &'static str {
    r#"
[global_tags]
  dc = "lab"

[agent]
  interval = "1s"
  flush_interval = "1s"
  precision = "1ns"
  omit_hostname = true
  debug = true
"#
}

/// Every value of `{db}.tg_every` and its column type, ordered by time.
const EVERY_SQL: &str = "SELECT toString(toUnixTimestamp64Nano(time)) AS t, dc, host, region, \
     f, toString(i) AS int, toString(u) AS uint, s, b, \
     toTypeName(f) AS tf, toTypeName(i) AS ti, toTypeName(u) AS tu, toTypeName(s) AS ts, \
     toTypeName(b) AS tb FROM {db}.tg_every ORDER BY t";

/// What `LINES` reads back as; `uint` is false when Telegraf wrote unsigned
/// integers as integers (its `influx_uint_support = false` default, which
/// clamps values above i64::MAX).
fn expected_every(uint: bool) -> Vec<Value> {
    let (u0, tu) = if uint {
        ("18446744073709551615", "Nullable(UInt64)")
    } else {
        ("9223372036854775807", "Nullable(Int64)")
    };
    let mut rows = vec![
        json!({"t": "1700000000123456789", "dc": "lab", "host": "web-1", "region": "eu-west",
            "f": 1.5, "int": "-42", "uint": u0, "s": "quote \" back\\slash, comma", "b": true}),
        json!({"t": "1700000001000000001", "dc": "lab", "host": "web-2", "region": "",
            "f": -0.25, "int": "9223372036854775807", "uint": "7", "s": "", "b": false}),
        // ClickHouse prints the float 0 as `0`; its type is checked by `tf`.
        json!({"t": "1700000002000000000", "dc": "lab", "host": "web 3", "region": "a,b=c",
            "f": 0, "int": "0", "uint": "0", "s": "x", "b": true}),
    ];
    for row in &mut rows {
        let o = row.as_object_mut().unwrap();
        o.insert("tf".into(), json!("Nullable(Float64)"));
        o.insert("ti".into(), json!("Nullable(Int64)"));
        o.insert("tu".into(), json!(tu));
        o.insert("ts".into(), json!("Nullable(String)"));
        o.insert("tb".into(), json!("Nullable(Bool)"));
    }
    rows
}

/// `MemTotal` from /proc/meminfo in bytes, which Telegraf's `inputs.mem` reports as `total`.
fn mem_total_bytes() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kb: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .map(|v| v.trim().parse().unwrap())
        .expect("MemTotal in /proc/meminfo");
    kb * 1024
}

fn databases(v: &Value) -> Vec<String> {
    v["results"][0]["series"][0]["values"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| r[0].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn telegraf_v1_and_v2_outputs_write_every_field_type_and_read_back_exactly() {
    let Some(bin) =
        telegraf_or_skip("telegraf_v1_and_v2_outputs_write_every_field_type_and_read_back_exactly")
    else {
        return;
    };
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    // A v2 bucket is created before Telegraf writes to it (as `influx bucket
    // create` would); the v1 databases are created by Telegraf itself.
    s.query("CREATE DATABASE tg_v2");
    let before = databases(&s.query("SHOW DATABASES"));
    assert!(!before.contains(&"tg_gzip".to_string()), "{before:?}");

    let lp = dir.path().join("input.lp");
    std::fs::write(&lp, LINES).unwrap();
    let config = format!(
        r#"{agent}
[[inputs.file]]
  files = ["{lp}"]
  data_format = "influx"

[[inputs.mem]]

# v1, Telegraf's default content_encoding (gzip) and uint handling (as integers).
[[outputs.influxdb]]
  urls = ["{base}"]
  database = "tg_gzip"

# v1, uncompressed, unsigned integers as such.
[[outputs.influxdb]]
  urls = ["{base}"]
  database = "tg_plain"
  content_encoding = "identity"
  influx_uint_support = true

# v2: org/bucket/token (the token is checked only with [auth] on).
[[outputs.influxdb_v2]]
  urls = ["{base}"]
  organization = "any"
  bucket = "tg_v2"
  token = "unused"
  content_encoding = "gzip"
"#,
        agent = agent_section(),
        lp = lp.display(),
        base = s.base,
    );
    let log = run_telegraf(&bin, dir.path(), &config, &s);
    // Three file lines and one mem sample per output, each in one batch.
    assert_eq!(
        log.matches("[outputs.influxdb] Wrote batch of 4 metrics")
            .count(),
        2,
        "{log}"
    );
    assert_eq!(
        log.matches("[outputs.influxdb_v2] Wrote batch of 4 metrics")
            .count(),
        1,
        "{log}"
    );
    // Two of the three bodies came gzipped (Telegraf's default and the explicit
    // setting), one plain: the server counts what it decompressed.
    let metrics = s.get("/metrics").text().unwrap();
    assert!(
        metrics
            .lines()
            .any(|l| l == "chingest_http_decompress_seconds_count 2"),
        "{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("chingest_http_body_bytes_total{encoding=\"identity\"} ")),
        "{metrics}"
    );

    // Telegraf's CREATE DATABASE through /query took effect.
    let after = databases(&s.query("SHOW DATABASES"));
    for db in ["tg_gzip", "tg_plain", "tg_v2"] {
        assert!(after.contains(&db.to_string()), "{db}: {after:?}");
    }

    let total = mem_total_bytes();
    for (db, uint) in [("tg_gzip", false), ("tg_plain", true), ("tg_v2", false)] {
        let rows = s.sql_until(&EVERY_SQL.replace("{db}", db), 3);
        assert_eq!(rows, expected_every(uint), "{db}");

        // The real system input: one sample, with the machine's memory size.
        let mem = s.sql_until(
            &format!(
                "SELECT dc, toString(total) AS total_bytes, toTypeName(total) AS tt, \
                 used_percent > 0 AND used_percent < 100 AS pct_ok, \
                 toUnixTimestamp64Nano(time) > 1700000002000000000 AS recent FROM {db}.mem"
            ),
            1,
        );
        let tt = if uint {
            "Nullable(UInt64)"
        } else {
            "Nullable(Int64)"
        };
        assert_eq!(
            mem[0],
            json!({"dc": "lab", "total_bytes": total.to_string(), "tt": tt, "pct_ok": 1, "recent": 1}),
            "{db}"
        );
    }
}

/// `/query` as `user` (u/p parameters), asserting 200.
fn query_as(s: &Server, user: &str, password: &str, q: &str) -> Value {
    let r = s
        .client
        .post(s.url("/query"))
        .query(&[("q", q), ("u", user), ("p", password)])
        .send()
        .unwrap();
    assert_eq!(r.status(), 200, "{q}");
    r.json().unwrap()
}

/// Polls a SQL statement as `user` (Basic auth) until it returns `n` rows.
fn sql_until_as(s: &Server, user: &str, password: &str, sql: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = s
            .client
            .post(s.url("/api/v1/sql?format=jsoneachrow"))
            .basic_auth(user, Some(password))
            .body(sql.to_string())
            .send()
            .unwrap();
        let status = r.status();
        let text = r.text().unwrap();
        // The table appears with the first flush: until then UNKNOWN_TABLE.
        let rows: Vec<Value> = if status == 200 {
            text.lines()
                .filter(|l| !l.is_empty())
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        } else if text.contains("UNKNOWN_TABLE") && Instant::now() < deadline {
            Vec::new()
        } else {
            panic!("{sql}: {status}: {text}");
        };
        if rows.len() == n || Instant::now() > deadline {
            assert_eq!(rows.len(), n, "{sql}: {rows:?}");
            return rows;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn telegraf_with_auth_writes_as_a_non_admin_user_with_password_and_token() {
    let Some(bin) =
        telegraf_or_skip("telegraf_with_auth_writes_as_a_non_admin_user_with_password_and_token")
    else {
        return;
    };
    let dir = data_dir();
    let config = format!(
        r#"
[auth]
enabled = true

[[auth.users]]
name = "admin"
password_hash = "{}"
admin = true

[[auth.users]]
name = "telegraf"
password_hash = "{}"
token_hashes = ["{}"]
write = ["tg_auth"]
"#,
        hash("adminpw"),
        hash("tgpw"),
        hash("tg-token")
    );
    let s = Spawn::new(dir.path()).config(&config).start();
    query_as(&s, "admin", "adminpw", "CREATE DATABASE tg_auth");

    let lp = dir.path().join("input.lp");
    std::fs::write(&lp, LINES).unwrap();
    // The same lines twice under two names, one per output (namepass), so each
    // output's rows are told apart in the one database the user may write.
    let config = format!(
        r#"{agent}
[[inputs.file]]
  files = ["{lp}"]
  data_format = "influx"
  name_override = "via_v1"

[[inputs.file]]
  files = ["{lp}"]
  data_format = "influx"
  name_override = "via_v2"

# v1 with username/password (Basic auth); its CREATE DATABASE is refused
# (not an admin), which Telegraf logs as a warning before writing anyway.
[[outputs.influxdb]]
  urls = ["{base}"]
  database = "tg_auth"
  username = "telegraf"
  password = "tgpw"
  namepass = ["via_v1"]

# v2 with the user's token.
[[outputs.influxdb_v2]]
  urls = ["{base}"]
  organization = "any"
  bucket = "tg_auth"
  token = "tg-token"
  namepass = ["via_v2"]
"#,
        agent = agent_section(),
        lp = lp.display(),
        base = s.base,
    );
    let log = run_telegraf(&bin, dir.path(), &config, &s);
    assert!(
        log.contains("database \"tg_auth\" creation failed: 403 Forbidden"),
        "{log}"
    );
    for out in ["outputs.influxdb", "outputs.influxdb_v2"] {
        assert!(
            log.contains(&format!("[{out}] Wrote batch of 3 metrics")),
            "{out}:\n{log}"
        );
    }
    for table in ["via_v1", "via_v2"] {
        let sql = EVERY_SQL.replace("{db}.tg_every", &format!("tg_auth.{table}"));
        let rows = sql_until_as(&s, "admin", "adminpw", &sql, 3);
        assert_eq!(rows, expected_every(false), "{table}");
    }
}
