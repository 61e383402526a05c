//! End-to-end counting against an in-process dummy server on 127.0.0.1.
//!
//! The dummy answers a fixed pattern (204, 204, 429 + Retry-After: 2,
//! 503 + Retry-After: 1) and checks every request's headers and body, so the
//! counts the ramp reports can be compared with what the server saw.

mod query_bench;
mod report_golden;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use load::client::{Payload, PayloadSet, Sender, Target};
use load::closed::{run_closed, ClosedConfig};
use load::report::{every_layer_markdown, write_run, ReportInputs};
use load::schedule::{run_ramp, RampConfig};
use load::summary::{summarize, RunResult};

const POINTS: u64 = 100;
const BODY_LEN: usize = 1234;

#[derive(Default)]
struct Seen {
    requests: AtomicU64,
    bad: AtomicU64,
}

fn check(h: &HeaderMap, body: &Bytes, seen: &Seen) -> bool {
    let ok = h
        .get("content-type")
        .map(|v| v == "text/plain; charset=utf-8")
        == Some(true)
        && h.get("authorization").map(|v| v == "Token secret") == Some(true)
        && body.len() == BODY_LEN
        && body.iter().all(|&b| b == b'x');
    if !ok {
        seen.bad.fetch_add(1, Ordering::Relaxed);
    }
    ok
}

async fn pattern(State(seen): State<Arc<Seen>>, h: HeaderMap, body: Bytes) -> Response {
    if !check(&h, &body, &seen) {
        return StatusCode::BAD_REQUEST.into_response();
    }
    match seen.requests.fetch_add(1, Ordering::Relaxed) % 4 {
        0 | 1 => StatusCode::NO_CONTENT.into_response(),
        2 => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "2")],
            "slow down",
        )
            .into_response(),
        _ => (
            StatusCode::SERVICE_UNAVAILABLE,
            [("retry-after", "1")],
            "busy",
        )
            .into_response(),
    }
}

async fn slow(State(seen): State<Arc<Seen>>, h: HeaderMap, body: Bytes) -> StatusCode {
    check(&h, &body, &seen);
    seen.requests.fetch_add(1, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(400)).await;
    StatusCode::NO_CONTENT
}

async fn ok(State(seen): State<Arc<Seen>>, h: HeaderMap, body: Bytes) -> StatusCode {
    check(&h, &body, &seen);
    seen.requests.fetch_add(1, Ordering::Relaxed);
    StatusCode::NO_CONTENT
}

async fn metrics(State(seen): State<Arc<Seen>>) -> String {
    let n = seen.requests.load(Ordering::Relaxed);
    format!(
        "# TYPE chingest_write_seconds histogram\nchingest_write_seconds_sum {}\nchingest_write_seconds_count {n}\n",
        n as f64 * 0.01
    )
}

async fn dummy() -> (String, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let app = Router::new()
        .route("/write", post(pattern))
        .route("/slow", post(slow))
        .route("/ok", post(ok))
        .route("/metrics", axum::routing::get(metrics))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (format!("http://{addr}"), seen)
}

fn sender(url: &str, pool: usize) -> Arc<Sender> {
    let body = || Payload {
        body: Bytes::from(vec![b'x'; BODY_LEN]),
        points: POINTS,
    };
    let payloads =
        PayloadSet::new("text/plain; charset=utf-8", None, vec![body(), body()]).unwrap();
    let target = Target::new(url, Some("secret"), Duration::from_secs(5)).unwrap();
    Arc::new(Sender::new(target, Arc::new(payloads), pool))
}

fn ramp(rates: Vec<f64>, step_secs: f64, max_in_flight: usize) -> RampConfig {
    RampConfig {
        rates,
        step_secs,
        max_in_flight,
        budget_ms: 250.0,
        server_pid: None,
        metrics_url: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ramp_counts_ok_shed_and_retry_after() {
    let (base, seen) = dummy().await;
    let s = sender(&format!("{base}/write?db=bench&p=pw"), 64);
    let steps = run_ramp(&ramp(vec![40.0], 0.5, 64), s).await.unwrap();
    assert_eq!(
        seen.bad.load(Ordering::Relaxed),
        0,
        "headers or body arrived altered"
    );
    assert_eq!(seen.requests.load(Ordering::Relaxed), 20);
    let st = &steps[0];
    assert_eq!((st.scheduled, st.started, st.dropped), (20, 20, 0));
    assert_eq!((st.ok, st.shed_429, st.shed_503), (10, 5, 5));
    assert!(st.failed.is_empty() && st.transport_errors == 0 && st.timeouts == 0);
    assert_eq!(st.ok_points, 10 * POINTS);
    assert_eq!(st.offered_points_per_sec, Some(20.0 * POINTS as f64 / 0.5));
    assert_eq!(st.achieved_points_per_sec, 10.0 * POINTS as f64 / 0.5);
    assert_eq!(st.pct_of_offered, Some(50.0));
    assert_eq!(st.retry_after.get("1"), Some(&5));
    assert_eq!(st.retry_after.get("2"), Some(&5));
    assert_eq!(st.latency.count, 10);
    assert_eq!(st.latency_all.count, 20);
    // Half the points shed: not sustainable, but it is the peak.
    let sum = summarize(&steps, 250.0);
    assert!(sum.sustainable.is_none());
    assert_eq!(sum.peak.map(|p| p.step), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ramp_drops_at_the_cap_instead_of_waiting() {
    let (base, seen) = dummy().await;
    let s = sender(&format!("{base}/slow"), 2);
    let steps = run_ramp(&ramp(vec![20.0], 0.5, 2), s).await.unwrap();
    let st = &steps[0];
    assert_eq!(st.scheduled, 10);
    assert_eq!(st.started + st.dropped, 10);
    // Two slots, 400 ms each, due every 50 ms over 500 ms: at most 4 can start.
    assert!((2..=4).contains(&st.started), "{st:?}");
    assert_eq!(st.ok, st.started);
    assert_eq!(seen.requests.load(Ordering::Relaxed), st.started);
    assert!(st.latency.p50_us >= 400_000, "{st:?}");
    assert_eq!(seen.bad.load(Ordering::Relaxed), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transport_errors_are_counted_not_fatal() {
    // Bind and close a port so nothing listens on it.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let s = sender(&format!("http://127.0.0.1:{port}/write"), 4);
    let steps = run_ramp(&ramp(vec![10.0], 0.2, 4), s).await.unwrap();
    let st = &steps[0];
    assert_eq!(st.scheduled, 2);
    assert_eq!(st.transport_errors, 2);
    assert_eq!(st.ok, 0);
    assert_eq!(st.achieved_points_per_sec, 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_users_send_back_to_back_and_results_render() {
    let (base, seen) = dummy().await;
    let s = sender(&format!("{base}/ok"), 2);
    let cfg = ClosedConfig {
        vus: vec![1, 2],
        step_secs: 0.3,
        budget_ms: 250.0,
        server_pid: None,
    };
    let steps = run_closed(&cfg, s).await.unwrap();
    assert_eq!(steps.len(), 2);
    let total: u64 = steps.iter().map(|s| s.ok).sum();
    assert!(total > 2);
    assert_eq!(total, seen.requests.load(Ordering::Relaxed));
    for st in &steps {
        assert_eq!(st.ok, st.started);
        assert_eq!(st.ok_points, st.ok * POINTS);
        assert!(st.achieved_points_per_sec > 0.0);
    }

    // A real ramp run also renders into the result files and the every-layer page.
    let ramp_steps = run_ramp(
        &ramp(vec![10.0, 20.0], 0.2, 8),
        sender(&format!("{base}/ok"), 8),
    )
    .await
    .unwrap();
    let d = tempfile::tempdir().unwrap();
    for (kind, steps) in [("ramp", ramp_steps), ("closed", steps)] {
        let run = RunResult {
            kind: kind.into(),
            tool: "test".into(),
            url: base.clone(),
            payloads: "test".into(),
            config: serde_json::json!({}),
            host: load::host::collect(),
            summary: summarize(&steps, 250.0),
            steps,
        };
        write_run(&d.path().join("results"), kind, &run).unwrap();
    }
    assert!(d.path().join("results/ramp.svg").exists());
    let md = every_layer_markdown(&ReportInputs {
        results_dir: d.path().join("results"),
        out: d.path().join("docs/e2e.md"),
        ramp_name: "ramp".into(),
        closed_name: "closed".into(),
    });
    assert!(md.contains("](../results/ramp.svg)"), "{md}");
    assert!(md.contains("end-to-end sustainable"));
    assert!(md.contains("| 1 | 20 | 2k | 2k | 100.0 |"), "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sink_accepts_everything() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(load::sink::serve(listener));
    let steps = run_ramp(
        &ramp(vec![50.0], 0.2, 8),
        sender(&format!("http://{addr}/write?db=x"), 8),
    )
    .await
    .unwrap();
    let st = &steps[0];
    assert_eq!((st.scheduled, st.ok, st.dropped), (10, 10, 0), "{st:?}");
    assert_eq!(st.ok_points, 10 * POINTS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stage_time_per_step_from_metrics() {
    let (base, _seen) = dummy().await;
    let mut cfg = ramp(vec![20.0, 40.0], 0.5, 8);
    cfg.metrics_url = Some(format!("{base}/metrics"));
    let steps = run_ramp(&cfg, sender(&format!("{base}/ok"), 8))
        .await
        .unwrap();
    let key = "chingest_write_seconds";
    let (c0, c1) = (steps[0].stages[key].count, steps[1].stages[key].count);
    // The step-end scrape runs beside the next step's first request, which it
    // may or may not see; nothing is lost or counted twice.
    assert!((10.0..=11.0).contains(&c0), "{:?}", steps[0].stages);
    assert_eq!(c0 + c1, 30.0, "{:?}", steps[1].stages);
    let table = load::report::stage_step_table(&steps).unwrap();
    assert!(table.contains("`write`"), "{table}");
    assert!(
        table.contains("| 1 | 4k | 0.40 (10.0) |") || table.contains("| 1 | 4k | 0.38 (10.0) |"),
        "{table}"
    );
}

/// The overload mode end to end against the dummy (answers 204, 204, 429, 503
/// in turn): three phases at 1×, 2×, 1×, refusals and their latency by status,
/// refusals by limit from `/metrics`, RSS samples (of this test process) in
/// each phase against a budget, the verdicts, the files and the page section.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_runs_three_phases_and_judges_them() {
    use load::overload::result::{BudgetPart, Targets};
    use load::overload::{run_overload, OverloadConfig};

    let (base, seen) = dummy().await;
    let cfg = OverloadConfig {
        base_rps: 20.0,
        base_source: "test".into(),
        factor: 2.0,
        warm_secs: 0.5,
        overload_secs: 0.5,
        recover_secs: 0.5,
        max_in_flight: 16,
        server_pid: Some(std::process::id()),
        metrics_url: Some(format!("{base}/metrics")),
        rss_every_ms: 50,
        budget_parts: vec![BudgetPart {
            name: "limits.max_inflight_bytes".into(),
            bytes: 1 << 40,
        }],
        targets: Targets::default(),
    };
    let r = run_overload(&cfg, sender(&format!("{base}/write?db=bench"), 16))
        .await
        .unwrap();
    assert_eq!(seen.bad.load(Ordering::Relaxed), 0);
    // 10 + 20 + 10 requests: a quarter each 429 and 503.
    assert_eq!(seen.requests.load(Ordering::Relaxed), 40);
    let names: Vec<&str> = r.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["1× (warm)", "2× (overload)", "1× (after)"]);
    let scheduled: Vec<u64> = r.phases.iter().map(|p| p.step.scheduled).collect();
    assert_eq!(scheduled, [10, 20, 10]);
    let shed: u64 = r
        .phases
        .iter()
        .map(|p| p.step.shed_429 + p.step.shed_503)
        .sum();
    assert_eq!(shed, 20);
    assert_eq!(r.refusal_latency[&429].count, 10);
    assert_eq!(r.refusal_latency[&503].count, 10);
    for p in &r.phases {
        let shed_timed: u64 = p.step.shed_latency.values().map(|l| l.count).sum();
        assert_eq!(shed_timed, p.step.shed_429 + p.step.shed_503, "{p:?}");
        let rss = p.rss.expect("RSS sampled in every phase");
        assert!(rss.samples >= 3 && rss.peak_bytes > 1 << 20, "{rss:?}");
    }
    // The timeline holds every request by send time.
    let total: u64 = r.timeline.iter().map(|s| s.ok + s.refused + s.failed).sum();
    assert_eq!(total, 40);
    assert_eq!(r.timeline.iter().map(|s| s.ok).sum::<u64>(), 20);
    // The dummy answers at once and the process is far under 1 TiB.
    let v = &r.verdicts;
    assert_eq!(v.refusals_fast, Some(true), "{v:?}");
    assert_eq!(v.rss_within_budget, Some(true), "{v:?}");
    let baseline = r.memory_budget.baseline_rss_bytes.unwrap();
    assert_eq!(r.memory_budget.total_bytes, Some(baseline + (1 << 40)));
    assert_eq!(v.unanswered, 0);
    assert!(
        v.recovery.is_some_and(|x| (0.5..=2.0).contains(&x)),
        "{v:?}"
    );
    assert!(r.loadavg_before.is_some() && r.loadavg_after.is_some());

    let d = tempfile::tempdir().unwrap();
    let results = d.path().join("results");
    load::report::write_overload(&results, "overload", &r).unwrap();
    let md = std::fs::read_to_string(results.join("overload.md")).unwrap();
    assert!(md.contains("| 2× (overload) | 40 | 4k |"), "{md}");
    assert!(
        md.contains("Refusals answered within 100 ms at p99: **met**"),
        "{md}"
    );
    assert!(md.contains("## Timeline"), "{md}");
    let page = every_layer_markdown(&ReportInputs {
        results_dir: results,
        out: d.path().join("docs/e2e.md"),
        ramp_name: "ramp".into(),
        closed_name: "closed".into(),
    });
    assert!(
        page.contains("## Overload: twice the sustainable rate (issue #15)"),
        "{page}"
    );
    assert!(
        page.contains("Resident memory under the configured budget: **met**"),
        "{page}"
    );
}

/// The ramp records which server limit refused, from `/metrics` around each step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_by_limit_per_step_from_metrics() {
    let app = Router::new()
        .route("/write", post(|| async { StatusCode::NO_CONTENT }))
        .route(
            "/metrics",
            axum::routing::get(|State(n): State<Arc<AtomicU64>>| async move {
                let n = n.fetch_add(1, Ordering::Relaxed);
                format!(
                    "chingest_backpressure_rejections_total{{limit=\"cpu_wait\"}} {}\nchingest_http_connections_refused_total 0\n",
                    n * 5
                )
            }),
        )
        .with_state(Arc::new(AtomicU64::new(0)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let mut cfg = ramp(vec![20.0, 20.0], 0.2, 8);
    cfg.metrics_url = Some(format!("http://{addr}/metrics"));
    let steps = run_ramp(&cfg, sender(&format!("http://{addr}/write"), 8))
        .await
        .unwrap();
    // Scrapes 0, 1, 2 read 0, 5, 10 cpu_wait refusals: 5 per step.
    for s in &steps {
        assert_eq!(s.refused_by_limit.get("cpu_wait"), Some(&5), "{s:?}");
        assert!(!s.refused_by_limit.contains_key("max_connections"));
    }
}
