//! Prometheus exposition: the recorder (installed once per process), the
//! HTTP request metrics middleware, process gauges and `GET /metrics`.

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics::SharedString;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::{AppState, Store};

/// Buckets for `_seconds` histograms: 50 µs .. 60 s.
pub const SECONDS_BUCKETS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0, 30.0, 60.0,
];
/// Buckets for `_bytes` histograms: 256 B .. 256 MiB.
pub const BYTES_BUCKETS: &[f64] = &[
    256.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262144.0,
    1048576.0,
    4194304.0,
    16777216.0,
    67108864.0,
    268435456.0,
];
/// Buckets for counts (`_points`, `_rows`, `_entries`): 1 .. 1M.
pub const COUNT_BUCKETS: &[f64] = &[
    1.0, 10.0, 100.0, 1000.0, 5000.0, 10000.0, 50000.0, 100000.0, 500000.0, 1000000.0,
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process's Prometheus handle, installing the global recorder on first
/// use. Later calls (tests building several apps) reuse it.
pub fn handle() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
                .and_then(|b| {
                    b.set_buckets_for_metric(Matcher::Suffix("_bytes".into()), BYTES_BUCKETS)
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(Matcher::Suffix("_points".into()), COUNT_BUCKETS)
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(Matcher::Suffix("_rows".into()), COUNT_BUCKETS)
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(Matcher::Suffix("_entries".into()), COUNT_BUCKETS)
                })
                .expect("static, non-empty bucket lists");
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            // Another recorder may already be installed (a test harness): then
            // our handle still renders, it just sees no facade metrics.
            if metrics::set_global_recorder(recorder).is_err() {
                tracing::warn!(
                    "a metrics recorder was already installed; /metrics shows only its own view"
                );
            }
            handle
        })
        .clone()
}

/// The `method` label: the standard methods as themselves, anything else
/// `other` (a label taken from input as is would let clients create series).
pub fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        _ => "other",
    }
}

/// Middleware (route layer): request duration by route, method and status,
/// every label from a fixed set: the route pattern (not the path), one of the
/// standard methods or `other`, the status the server chose.
pub async fn track(req: Request, next: Next) -> Response {
    let start = Instant::now();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or(SharedString::const_str("unmatched"), |p| {
            SharedString::from(p.as_str().to_owned())
        });
    let method = method_label(req.method());
    let resp = next.run(req).await;
    // The method's label is static: not copied for each of the two metrics.
    let labels: [(&str, SharedString); 3] = [
        ("route", route),
        ("method", SharedString::const_str(method)),
        (
            "status",
            SharedString::from(resp.status().as_u16().to_string()),
        ),
    ];
    metrics::histogram!("chingest_http_request_duration_seconds", &labels)
        .record(start.elapsed().as_secs_f64());
    metrics::counter!("chingest_http_requests_total", &labels).increment(1);
    resp
}

/// CPU seconds and resident bytes of this process, from /proc (Linux).
pub fn process_usage() -> Option<(f64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name (which may contain spaces).
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat(5); `rest` starts at field 3.
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let resident: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some((
        (utime + stime) / ticks.max(1) as f64,
        resident * page.max(1) as u64,
    ))
}

/// `GET /metrics`: refreshes the gauges read on scrape, then renders.
pub async fn metrics<S: Store>(State(state): State<AppState<S>>) -> Response {
    if let Some((cpu, rss)) = process_usage() {
        metrics::gauge!("chingest_process_cpu_seconds_total").set(cpu);
        metrics::gauge!("chingest_process_resident_memory_bytes").set(rss as f64);
    }
    // WAL queue depth and lag gauges are kept current by the wal crate itself.
    // Per shard on a ClickHouse cluster: how long its oldest unconfirmed delivery has waited.
    for (k, shard) in state.store.stats().cluster.iter().enumerate() {
        metrics::gauge!("chingest_cluster_shard_waiting_seconds", "shard" => k.to_string())
            .set(shard.oldest_waiting_secs);
        metrics::gauge!("chingest_cluster_shard_waiting_rows", "shard" => k.to_string())
            .set(shard.waiting_rows as f64);
    }
    for (db, series) in state.store.series_cardinality() {
        metrics::gauge!("chingest_series", "db" => db).set(series as f64);
    }
    // The engine's parts and merges, read from its system tables on a stats
    // connection of their own (never the flusher's or SQL's); storage serves
    // the last stats read when that connection is busy. Bounded: past 500 ms
    // the gauges keep their last values.
    let store = state.store.clone();
    let engine = tokio::time::timeout(
        std::time::Duration::from_millis(500),
        tokio::task::spawn_blocking(move || store.engine_stats()),
    )
    .await;
    if let Ok(Ok(Some(e))) = engine {
        // A database that lost all its parts (dropped) reads 0, not its last value.
        static REPORTED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let mut reported = REPORTED.lock().unwrap_or_else(|p| p.into_inner());
        for db in reported.iter() {
            if !e.active_parts.iter().any(|(d, _)| d == db) {
                metrics::gauge!("chingest_engine_active_parts", "db" => db.clone()).set(0.0);
            }
        }
        reported.clear();
        for (db, parts) in e.active_parts {
            metrics::gauge!("chingest_engine_active_parts", "db" => db.clone()).set(parts as f64);
            reported.push(db);
        }
        drop(reported);
        metrics::gauge!("chingest_engine_max_parts_per_table").set(e.max_parts_per_table as f64);
        metrics::gauge!("chingest_engine_merges_running").set(e.merges_running as f64);
        metrics::counter!("chingest_engine_inserted_rows_total").absolute(e.inserted_rows);
        metrics::counter!("chingest_engine_merged_rows_total").absolute(e.merged_rows);
    }
    let mut resp = state.metrics.render().into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    resp
}

#[cfg(test)]
mod tests {
    #[test]
    fn process_usage_reads_proc() {
        let (cpu, rss) = super::process_usage().expect("/proc/self is readable on Linux");
        assert!(cpu >= 0.0);
        assert!(
            rss > 1 << 20,
            "a Rust test process has more than 1 MiB resident: {rss}"
        );
    }

    #[test]
    fn method_labels_are_a_fixed_set() {
        use axum::http::Method;
        assert_eq!(super::method_label(&Method::POST), "POST");
        for m in ["BREW", "XYZZY", "get", "PROPFIND"] {
            let m = Method::from_bytes(m.as_bytes()).unwrap();
            assert_eq!(super::method_label(&m), "other", "{m}");
        }
    }

    #[test]
    fn handle_is_shared_across_calls() {
        let a = super::handle();
        metrics::counter!("chingest_test_handle_shared_total").increment(1);
        let b = super::handle();
        assert!(
            b.render().contains("chingest_test_handle_shared_total"),
            "{}",
            a.render()
        );
    }
}
