//! The query benchmark's machinery end to end on loopback, at toy size:
//! `fill` against a fake server that keeps the points it is sent (refusing
//! some writes with 503 to exercise the retries), then `run_query` against
//! two such fakes whose `/query` computes `mean` per time bucket (per host)
//! from those points the way InfluxDB does. Agreeing answers get timed;
//! a server answering one value differently fails the check.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use load::query::bench::{grafana_queries, run_query, Runs, Server};
use load::query::fill::{run_fill, FillConfig};
use load::query::http::Http;
use serde_json::{json, Value};

const HOSTS: usize = 4;
const START_NS: i64 = 1_767_225_600_000_000_000;

#[derive(Default)]
struct Fake {
    /// (host, time ns) → usage_user.
    points: Mutex<BTreeMap<(String, i64), f64>>,
    writes: AtomicU64,
    /// Added to the first value of every answer: a server that answers wrong.
    skew: f64,
}

/// One line: `cpu,host=H,region=R usage_user=V,... T`.
fn parse_line(line: &str) -> (String, i64, f64) {
    let mut parts = line.split(' ');
    let key = parts.next().unwrap();
    let fields = parts.next().unwrap();
    let ts: i64 = parts.next().unwrap().parse().unwrap();
    assert!(key.starts_with("cpu,"), "{line}");
    let host = key
        .split(',')
        .find_map(|t| t.strip_prefix("host="))
        .unwrap();
    let v = fields
        .split(',')
        .find_map(|f| f.strip_prefix("usage_user="))
        .unwrap();
    (host.to_string(), ts, v.parse().unwrap())
}

async fn write(State(f): State<Arc<Fake>>, body: Bytes) -> Response {
    // Every third write is refused once: the filler must retry it.
    if f.writes.fetch_add(1, Ordering::Relaxed) % 3 == 2 {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let text = std::str::from_utf8(&body).unwrap();
    let mut pts = f.points.lock().unwrap();
    for line in text.lines() {
        let (h, t, v) = parse_line(line);
        assert!(pts.insert((h, t), v).is_none(), "point written twice");
    }
    StatusCode::NO_CONTENT.into_response()
}

/// The number after `prefix` up to `ms`.
fn ms_after(q: &str, prefix: &str) -> i64 {
    let rest = &q[q.find(prefix).unwrap() + prefix.len()..];
    rest[..rest.find("ms").unwrap()].parse().unwrap()
}

/// `mean(usage_user)` per bucket (per host when grouped), `fill(null)`, epoch=ms.
fn answer(f: &Fake, q: &str) -> Value {
    let (from, to) = (ms_after(q, "time >= "), ms_after(q, "time <= "));
    let width = if q.contains("GROUP BY time(10s)") {
        10_000
    } else {
        60_000
    };
    let only = q.split('\'').nth(1).map(String::from);
    let by_host = q.contains("\"host\" fill");
    let pts = f.points.lock().unwrap();
    let mut groups: BTreeMap<String, BTreeMap<i64, (f64, u32)>> = BTreeMap::new();
    for ((h, t), v) in pts.iter() {
        let ms = t / 1_000_000;
        if ms < from || ms > to || only.as_ref().is_some_and(|o| o != h) {
            continue;
        }
        let g = if by_host { h.clone() } else { String::new() };
        let e = groups
            .entry(g)
            .or_default()
            .entry(ms - ms % width)
            .or_default();
        e.0 += v;
        e.1 += 1;
    }
    let mut first = true;
    let series: Vec<Value> = groups
        .into_iter()
        .map(|(g, buckets)| {
            let rows: Vec<Value> = (from - from % width..=to)
                .step_by(width as usize)
                .map(|b| match buckets.get(&b) {
                    Some((s, n)) => {
                        let skew = if std::mem::take(&mut first) {
                            f.skew
                        } else {
                            0.0
                        };
                        json!([b, s / f64::from(*n) + skew])
                    }
                    None => json!([b, null]),
                })
                .collect();
            let mut s = json!({"name": "cpu", "columns": ["time", "mean"], "values": rows});
            if by_host {
                s["tags"] = json!({ "host": g });
            }
            s
        })
        .collect();
    json!({"results": [{"statement_id": 0, "series": series}]})
}

async fn query(State(f): State<Arc<Fake>>, Query(p): Query<BTreeMap<String, String>>) -> Response {
    assert_eq!(p.get("epoch").map(String::as_str), Some("ms"));
    assert_eq!(p.get("db").map(String::as_str), Some("bench"));
    Json(answer(&f, &p["q"])).into_response()
}

async fn serve(skew: f64) -> (String, Arc<Fake>) {
    let fake = Arc::new(Fake {
        skew,
        ..Fake::default()
    });
    let app = Router::new()
        .route("/write", post(write))
        .route("/query", get(query))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, fake)
}

fn fill_config(base: &str) -> FillConfig {
    FillConfig {
        url: format!("{base}/write?db=bench"),
        // 2 h at one point per 10 s per host.
        points: (HOSTS * 720) as u64,
        hosts: HOSTS,
        fields: 2,
        start_ns: START_NS,
        span_ns: 7_200_000_000_000,
        batch: 360,
        concurrency: 3,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fill_then_checked_and_timed_queries_on_two_servers() {
    let (a, fa) = serve(0.0).await;
    let (b, fb) = serve(0.0).await;
    let timeout = Duration::from_secs(10);
    let ra = run_fill("a", &fill_config(&a), timeout).await.unwrap();
    let rb = run_fill("b", &fill_config(&b), timeout).await.unwrap();
    // Exactly the points asked for, every host, the whole span, refusals retried.
    for (r, f) in [(&ra, &fa), (&rb, &fb)] {
        let pts = f.points.lock().unwrap();
        assert_eq!(pts.len(), HOSTS * 720);
        assert_eq!(r.points, (HOSTS * 720) as u64);
        assert_eq!(r.requests, 8);
        assert!(r.retries >= 2, "{}", r.retries);
        assert_eq!(pts.keys().next().unwrap().1, START_NS);
        assert_eq!(r.end_ns, START_NS + 7_200_000_000_000);
        assert_eq!(r.step_ns, 10_000_000_000);
    }
    let runs = Runs {
        warmup: 1,
        panel: 6,
        all_hosts: 3,
        panel_clients: vec![1, 3],
        all_hosts_clients: vec![1],
    };
    let specs = grafana_queries(&ra, "host-00001", &runs);
    let servers: Vec<Server> = [format!("a={a}"), format!("b={b}")]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let http = Http::new(3, timeout);
    let panel = run_query(&http, &servers, "bench", &specs[0])
        .await
        .unwrap();
    let check = panel.check.as_ref().unwrap();
    assert_eq!((check.shape.series, check.shape.rows), (1, 360));
    assert_eq!(check.shape.values, 360);
    assert_eq!(panel.failure, None);
    let counts: Vec<(String, usize, u64)> = panel
        .timings
        .iter()
        .map(|t| (t.server.clone(), t.clients, t.latency.count))
        .collect();
    assert_eq!(
        counts,
        [
            ("a".to_string(), 1, 6),
            ("b".to_string(), 1, 6),
            ("a".to_string(), 3, 6),
            ("b".to_string(), 3, 6)
        ]
    );
    let wide = run_query(&http, &servers, "bench", &specs[1])
        .await
        .unwrap();
    // 2 h of data: 120 one-minute buckets per host.
    let check = wide.check.as_ref().unwrap();
    assert_eq!((check.shape.series, check.shape.rows), (4, 480));

    // A third server that answers one mean differently is caught before timing.
    let (c, _) = serve(0.5).await;
    run_fill("c", &fill_config(&c), timeout).await.unwrap();
    let with_c: Vec<Server> = vec![servers[0].clone(), format!("c={c}").parse().unwrap()];
    let err = run_query(&http, &with_c, "bench", &specs[1])
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("a and c differ"), "{err}");
}

fn report_file(kind: &str, name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(kind)
        .join("report/query")
        .join(name)
}

/// `query_bench.{json,md}` from a committed result (a smoke run of
/// `scripts/query_bench.sh`: 1M points on both servers, 2M on chingest),
/// byte for byte; `UPDATE_GOLDEN=1` rewrites the golden page.
#[test]
fn golden_query_bench_files() {
    let fixture = report_file("fixtures", "query_bench.json");
    let bench = load::query::result::QueryBench::load(&fixture).unwrap();
    assert_eq!(bench.phases.len(), 2);
    let tmp = tempfile::tempdir().unwrap();
    let paths = load::report::write_query_bench(tmp.path(), "query_bench", &bench).unwrap();
    let read = |p: &std::path::Path| -> Value {
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    assert_eq!(read(&paths[0]), read(&fixture));
    let md = std::fs::read_to_string(&paths[1]).unwrap();
    let golden = report_file("golden", "query_bench.md");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &md).unwrap();
    }
    assert_eq!(md, std::fs::read_to_string(&golden).unwrap());

    // The every-layer page carries the same phases in its query section.
    let inp = load::report::ReportInputs {
        results_dir: tmp.path().into(),
        out: tmp.path().join("benchmarks.md"),
        ramp_name: "ramp".into(),
        closed_name: "closed".into(),
    };
    let page = load::report::every_layer_markdown(&inp);
    let section = &page[page.find("## Query latency").unwrap()..];
    let body = &md[md.find("\n## 1M points").unwrap()..];
    let nested: String = body.replace("\n## ", "\n### ").chars().take(2000).collect();
    assert!(section.contains(&nested), "{section}");
    // And says "not measured" without results.
    let empty = tempfile::tempdir().unwrap();
    let page = load::report::every_layer_markdown(&load::report::ReportInputs {
        results_dir: empty.path().into(),
        ..inp
    });
    assert!(page.contains("## Query latency: InfluxQL on `/query` (issue #12)\n\nnot measured"));
}
