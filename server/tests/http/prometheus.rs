//! A real Prometheus (Debian's `prometheus` package, 2.42 on bookworm, installed
//! by `scripts/setup.sh --test-deps`) scrapes the server with the shipped
//! `deploy/prometheus/prometheus.yml` and `alerts.yml`, the target rewritten
//! to the test server and the intervals shortened; everything is on loopback.
//! Asserted through Prometheus' HTTP API: the target is up, every stage
//! histogram of docs/metrics.md has series, every dashboard expression is
//! valid PromQL to it and shows data, and every alert rule loads and
//! evaluates without error.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::metrics_docs::*;
use crate::util::*;

const PROMETHEUS: &str = "/usr/bin/prometheus";
const PROMTOOL: &str = "/usr/bin/promtool";

/// The Prometheus child, killed on drop.
struct Prometheus {
    child: Child,
    base: String,
    log: PathBuf,
    client: reqwest::blocking::Client,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `GET /api/v1/<path>` with `query`, asserting `"status": "success"`.
    fn api(&mut self, path: &str, query: &[(&str, &str)]) -> Value {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "prometheus exited ({status}); its log:\n{}",
                self.log_text()
            );
        }
        let r = self
            .client
            .get(format!("{}/api/v1/{path}", self.base))
            .query(query)
            .send()
            .unwrap_or_else(|e| panic!("prometheus API {path}: {e}"));
        let v: Value = r.json().unwrap();
        assert_eq!(v["status"], "success", "{path} {query:?}: {v}");
        v
    }

    /// The result vector of an instant query.
    fn query(&mut self, q: &str) -> Vec<Value> {
        self.api("query", &[("query", q)])["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Polls `check` every 250 ms until it returns `Ok`, at most `secs`.
    fn until<T>(&mut self, secs: u64, mut check: impl FnMut(&mut Self) -> Result<T, String>) -> T {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            match check(self) {
                Ok(v) => return v,
                Err(why) if Instant::now() > deadline => {
                    panic!("{why}\nprometheus log:\n{}", self.log_text())
                }
                Err(_) => std::thread::sleep(Duration::from_millis(250)),
            }
        }
    }
}

/// `from` replaced by `to` in `text`, asserting it occurs exactly once (so a
/// change in the shipped file's shape fails here instead of testing something else).
fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert_eq!(
        text.matches(from).count(),
        1,
        "deploy/prometheus/prometheus.yml should contain `{from}` once:\n{text}"
    );
    text.replace(from, to)
}

/// The shipped config with the target and intervals rewritten, beside a copy
/// of the shipped alerts.yml; `promtool check config` must accept it.
fn write_config(dir: &Path, target: &str) -> PathBuf {
    let shipped = read_repo_file("deploy/prometheus/prometheus.yml");
    let text = replace_once(&shipped, "\"chingest:8086\"", &format!("\"{target}\""));
    let text = replace_once(&text, "scrape_interval: 5s", "scrape_interval: 1s");
    let text = replace_once(&text, "evaluation_interval: 15s", "evaluation_interval: 1s");
    let conf = dir.join("prometheus.yml");
    std::fs::write(&conf, text).unwrap();
    std::fs::copy(
        repo_root().join("deploy/prometheus/alerts.yml"),
        dir.join("alerts.yml"),
    )
    .unwrap();
    let out = Command::new(PROMTOOL)
        .args(["check", "config"])
        .arg(&conf)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool check config:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    conf
}

fn start_prometheus(dir: &Path, conf: &Path) -> Prometheus {
    let port = free_port();
    let log = dir.join("prometheus.log");
    let child = Command::new(PROMETHEUS)
        .arg(format!("--config.file={}", conf.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("spawn prometheus");
    let mut p = Prometheus {
        child,
        base: format!("http://127.0.0.1:{port}"),
        log,
        client: reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap(),
    };
    p.until(60, |p| {
        if let Ok(Some(status)) = p.child.try_wait() {
            panic!("prometheus exited ({status}); its log:\n{}", p.log_text());
        }
        match p.client.get(format!("{}/-/ready", p.base)).send() {
            Ok(r) if r.status() == 200 => Ok(()),
            other => Err(format!("prometheus not ready: {other:?}")),
        }
    });
    p
}

#[test]
fn prometheus_scrapes_the_server_with_the_shipped_config_and_rules() {
    let test = "prometheus_scrapes_the_server_with_the_shipped_config_and_rules";
    if test_dep_or_skip(
        PathBuf::from(PROMETHEUS),
        "prometheus (Debian package)",
        test,
    )
    .is_none()
        || test_dep_or_skip(
            PathBuf::from(PROMTOOL),
            "promtool (Debian package prometheus)",
            test,
        )
        .is_none()
    {
        return;
    }
    let dir = data_dir();
    let s = exercise_spawn(dir.path()).start();
    exercise(&s, 0);
    let conf = write_config(dir.path(), &s.addr.to_string());
    let mut p = start_prometheus(dir.path(), &conf);

    // The target is up.
    p.until(60, |p| {
        let r = p.query("up{job=\"chingest\"}");
        match r.first() {
            Some(v) if v["value"][1] == "1" => Ok(()),
            _ => Err(format!("up{{job=\"chingest\"}} is not 1: {r:?}")),
        }
    });
    // A few more batches between scrapes, so rates have something to show.
    for round in 1..=3 {
        exercise(&s, round);
        std::thread::sleep(Duration::from_millis(1100));
    }

    // Every stage histogram of docs/metrics.md has series in Prometheus.
    let histograms: Vec<String> = documented_metrics()
        .into_iter()
        .filter(|d| d.kind == "histogram")
        .map(|d| d.name)
        .collect();
    assert!(histograms.len() >= 15, "{histograms:?}");
    p.until(30, |p| {
        let names: Vec<String> = p.api("label/__name__/values", &[])["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        let missing: Vec<String> = histograms
            .iter()
            .flat_map(|h| ["_bucket", "_sum", "_count"].map(|suf| format!("{h}{suf}")))
            .filter(|n| !names.contains(n))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("no series in Prometheus for {missing:?}"))
        }
    });
    let counts = p.query("count({__name__=~\"chingest_.+\"})");
    let series: f64 = counts[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert!(series >= 60.0, "only {series} chingest_ series scraped");

    // Every dashboard expression is valid PromQL to this Prometheus and shows
    // data, unless all it reads is a fault-only metric.
    let mut empty = Vec::new();
    for (file, expr) in dashboard_expressions() {
        let names = promql_metric_names(&expr);
        let fault_only = names.iter().all(|n| FAULT_ONLY.iter().any(|(f, _)| f == n));
        let r = p.query(&expr);
        if r.is_empty() && !fault_only {
            empty.push(format!("{file}: `{expr}`"));
        }
    }
    assert!(
        empty.is_empty(),
        "dashboard expressions with no data after the scrapes:\n{}",
        empty.join("\n")
    );

    // Every alert rule of alerts.yml is loaded and evaluates without error.
    let expected = alert_expressions().len();
    p.until(30, |p| {
        let v = p.api("rules", &[]);
        let rules: Vec<Value> = v["data"]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["rules"].as_array().unwrap().clone())
            .collect();
        if rules.len() != expected {
            return Err(format!(
                "{} rules loaded, want {expected}: {v}",
                rules.len()
            ));
        }
        let bad: Vec<&Value> = rules
            .iter()
            .filter(|r| {
                r["health"] != "ok"
                    || r["lastEvaluation"]
                        .as_str()
                        .unwrap_or("")
                        .starts_with("0001")
            })
            .collect();
        if bad.is_empty() {
            Ok(())
        } else {
            Err(format!("rules not (yet) evaluated ok: {bad:?}"))
        }
    });
    // The refusals `exercise` caused make exactly one rule pending (it needs
    // 10 minutes to fire), with the limit that tripped: the rule reads the
    // metric the server exports. Nothing else is pending or firing.
    let alerts = p.until(30, |p| {
        let a = p.api("alerts", &[])["data"]["alerts"].clone();
        if a.as_array().is_some_and(|a| !a.is_empty()) {
            Ok(a)
        } else {
            Err(format!("no alert pending: {a}"))
        }
    });
    let states: Vec<(String, String, String)> = alerts
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["labels"]["alertname"].as_str().unwrap_or("").to_string(),
                a["labels"]["limit"].as_str().unwrap_or("").to_string(),
                a["state"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        states,
        vec![(
            "ChingestWritesRefused".to_string(),
            "points_budget".to_string(),
            "pending".to_string()
        )],
        "{alerts}"
    );
}

/// Prometheus remote storage (issue #24): a real Prometheus scrapes chingest and writes every
/// sample to `/api/v1/prom/write`; a second one, with no data of its own, reads them back
/// through `/api/v1/prom/read`. Asserted: the samples are in chingest as InfluxDB 1.8 maps them
/// (measurement = metric name, labels = tags, field `value`), and PromQL through the second
/// Prometheus sees the same samples chingest holds, with name, equality and regex matchers.
#[test]
fn prometheus_remote_write_and_read_go_through_chingest() {
    let test = "prometheus_remote_write_and_read_go_through_chingest";
    if test_dep_or_skip(
        PathBuf::from(PROMETHEUS),
        "prometheus (Debian package)",
        test,
    )
    .is_none()
    {
        return;
    }
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    s.query("CREATE DATABASE prom");
    let base = format!("http://{}", s.addr);

    // Refusals: no database, a body that is not snappy, a read of several queries' shape.
    let r = s.post("/api/v1/prom/write", b"x".to_vec());
    assert_eq!(r.status(), 400, "{}", r.text().unwrap());
    let r = s.post("/api/v1/prom/write?db=prom", b"not snappy".to_vec());
    assert_eq!(r.status(), 400);
    assert!(r.text().unwrap().contains("snappy"));
    let r = s.post("/api/v1/prom/read?db=prom", b"not snappy".to_vec());
    assert_eq!(r.status(), 400);

    let writer_dir = dir.path().join("writer");
    std::fs::create_dir_all(&writer_dir).unwrap();
    let conf = writer_dir.join("prometheus.yml");
    std::fs::write(
        &conf,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: chingest\n    \
             static_configs:\n      - targets: [\"{}\"]\nremote_write:\n  - url: \
             \"{base}/api/v1/prom/write?db=prom\"\n    queue_config:\n      \
             batch_send_deadline: 500ms\n",
            s.addr
        ),
    )
    .unwrap();
    let _writer = start_prometheus(&writer_dir, &conf);

    // The scrapes arrive: `up` of the chingest job is 1, with its labels as tags.
    let q = |text: &str| -> Value {
        let r = s
            .client
            .post(format!("{base}/query?db=prom&epoch=ms"))
            .query(&[("q", text)])
            .send()
            .unwrap();
        assert_eq!(r.status(), 200);
        r.json().unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let v = q("SELECT count(value) FROM up WHERE job = 'chingest'");
        if v["results"][0]["series"][0]["values"][0][1]
            .as_i64()
            .unwrap_or(0)
            >= 5
        {
            break;
        }
        assert!(Instant::now() < deadline, "no remote-written samples: {v}");
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(
        q("SHOW TAG KEYS FROM up")["results"][0]["series"][0]["values"],
        serde_json::json!([["instance"], ["job"]])
    );
    assert_eq!(
        q("SHOW FIELD KEYS FROM up")["results"][0]["series"][0]["values"],
        serde_json::json!([["value", "float"]])
    );
    // chingest's own histograms arrive too, `le` as a tag.
    let v = q(
        "SELECT count(value) FROM chingest_http_request_duration_seconds_bucket WHERE le = '+Inf'",
    );
    assert!(
        v["results"][0]["series"][0]["values"][0][1]
            .as_i64()
            .unwrap_or(0)
            > 0,
        "{v}"
    );

    // A second Prometheus reads them back through remote read.
    let reader_dir = dir.path().join("reader");
    std::fs::create_dir_all(&reader_dir).unwrap();
    let conf = reader_dir.join("prometheus.yml");
    std::fs::write(
        &conf,
        format!(
            "remote_read:\n  - url: \"{base}/api/v1/prom/read?db=prom\"\n    read_recent: true\n"
        ),
    )
    .unwrap();
    let mut reader = start_prometheus(&reader_dir, &conf);
    // What chingest holds for `up` over the last hour, as a count per series.
    let held = q("SELECT count(value) FROM up WHERE time > now() - 1h GROUP BY *");
    let held_count = held["results"][0]["series"][0]["values"][0][1]
        .as_i64()
        .unwrap();
    let at = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as f64
        / 1000.0)
        .to_string();
    let r = reader.api(
        "query",
        &[
            ("query", "count_over_time(up{job=\"chingest\"}[1h])"),
            ("time", &at),
        ],
    );
    let result = r["data"]["result"].as_array().unwrap().clone();
    assert_eq!(result.len(), 1, "{r}");
    assert_eq!(result[0]["metric"]["instance"], s.addr.to_string());
    let read: i64 = result[0]["value"][1].as_str().unwrap().parse().unwrap();
    // The writer keeps writing: the read happened after the count above.
    assert!(read >= held_count, "read {read} < held {held_count}");
    // Regex and inequality matchers, on the name and on labels.
    let r = reader.query("{__name__=~\"u.\", job=~\"chin.*\", instance!=\"nowhere\"}");
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["metric"]["__name__"], "up");
    assert_eq!(r[0]["value"][1], "1");
    assert!(reader.query("up{job=\"other\"}").is_empty());
}

/// A remote-write body whose snappy block would decompress past `max_body_bytes` is refused
/// (413) from its declared length, before anything is decompressed or allocated; one that
/// lies about its length is refused the same way; nothing is written.
#[test]
fn oversize_remote_write_bodies_are_refused_before_decompression() {
    let dir = data_dir();
    let s = Spawn::new(dir.path())
        .env("CHINGEST_SERVER__MAX_BODY_BYTES", "100000")
        .start();
    s.query("CREATE DATABASE prom");
    let send = |body: Vec<u8>| {
        let r = s
            .client
            .post(s.url("/api/v1/prom/write?db=prom"))
            .header("Content-Encoding", "snappy")
            .header("Content-Type", "application/x-protobuf")
            .body(body)
            .send()
            .unwrap();
        (r.status().as_u16(), r.text().unwrap())
    };
    // 200 kB of zeros compress to a few kB: small on the wire, too big once decompressed.
    let zeros = snap::raw::Encoder::new()
        .compress_vec(&vec![0u8; 200_000])
        .unwrap();
    assert!(zeros.len() < 20_000);
    let (status, text) = send(zeros);
    assert_eq!(status, 413, "{text}");
    // A block declaring 4 GiB with a few bytes behind it.
    let (status, text) = send(vec![0xff, 0xff, 0xff, 0xff, 0x0f, 0, 1, 2]);
    assert_eq!(status, 413, "{text}");
    let v = s.query("SHOW MEASUREMENTS ON prom");
    assert!(v["results"][0]["series"].is_null(), "{v}");
}
