//! `GET /health`: status, version, WAL lag and flush state; 503 when writes
//! cannot be accepted (shutting down, the WAL failed, the disk is below its
//! reserve, back-pressure). Field names follow InfluxDB 2's `/health` so its
//! clients' health checks work. Quarantined tables (points the engine refuses,
//! set aside so the rest keeps flowing) do not fail the check: they appear in
//! `quarantine` and as a `checks` entry with status `warn`. With the points on a ClickHouse
//! cluster, `cluster` lists each shard: up or not, its last error, when it last confirmed rows, and the
//! deliveries it has not confirmed (how many, and how long the oldest has waited), and
//! `cluster_nodes` every ingest node's delivery fence (a cluster `DELETE` waits for the oldest).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::{AppState, Store};

/// `GET /health`.
pub async fn health<S: Store>(State(state): State<AppState<S>>) -> Response {
    let s = state.store.stats();
    let quarantine = state.store.quarantine();
    let quarantine_points: u64 = quarantine.iter().map(|t| t.points).sum();
    let refusal = state.limits.storage_state(&s).err();
    let (status, pass, message) = match &refusal {
        None => (
            StatusCode::OK,
            "pass",
            "ready for queries and writes".to_string(),
        ),
        Some(e) => (StatusCode::SERVICE_UNAVAILABLE, "fail", e.public_message()),
    };
    let body = json!({
        "name": "chingest",
        "message": message,
        "status": pass,
        "version": crate::INFLUXDB_VERSION,
        "commit": crate::BUILD,
        "checks": [{
            "name": "quarantine",
            "status": if quarantine.is_empty() { "pass" } else { "warn" },
            "message": if quarantine.is_empty() {
                "no quarantined data".to_string()
            } else {
                format!(
                    "{} table(s) hold {quarantine_points} quarantined point(s): see GET /api/v1/quarantine",
                    quarantine.len()
                )
            },
        }],
        "quarantine": quarantine.iter().map(|t| json!({
            "db": t.db,
            "measurement": t.measurement,
            "entries": t.entries,
            "points": t.points,
            "error": t.error,
            "quarantined_secs": t.quarantined_secs,
        })).collect::<Vec<_>>(),
        "wal": {
            "queue_depth": s.wal_queue_depth,
            "queue_capacity": s.wal_queue_capacity,
            "last_seq": s.last_seq,
            "flushed_seq": s.flushed_seq,
            "unflushed_points": s.unflushed_points,
            "unflushed_bytes": s.unflushed_bytes,
            "lag_seconds": s.oldest_unflushed_secs,
        },
        "flush": {
            "state": if s.unavailable.is_some() {
                "stopped"
            } else if s.flush_consecutive_failures > 0 {
                "retrying"
            } else if s.flushed_seq >= s.last_seq {
                "idle"
            } else {
                "flushing"
            },
            "pending_points": s.flush_pending_points,
            "consecutive_failures": s.flush_consecutive_failures,
            "last_error": s.flush_last_error,
        },
        "inflight_bytes_available": state.limits.available_bytes(),
    });
    let mut body = body;
    if !s.cluster.is_empty() {
        // Points on a ClickHouse cluster: each shard as its last request showed it (a shard
        // down holds its rows in the WAL: `wal.unflushed_points` grows, writes go on).
        body["cluster"] = json!(s
            .cluster
            .iter()
            .enumerate()
            .map(|(k, c)| json!({
                "shard": k,
                "endpoint": c.endpoint,
                "up": c.up,
                "last_error": c.last_error,
                "confirmed_secs_ago": c.confirmed_secs_ago,
                "waiting_deliveries": c.waiting_deliveries,
                "waiting_rows": c.waiting_rows,
                "oldest_waiting_secs": c.oldest_waiting_secs,
                // Each replica (one when the shard has one endpoint): the shard answers
                // while one of them does.
                "replicas": c.replicas.iter().map(|r| json!({
                    "endpoint": r.endpoint,
                    "up": r.up,
                    "last_error": r.last_error,
                    "delay_secs": r.delay_secs,
                })).collect::<Vec<_>>(),
            }))
            .collect::<Vec<_>>());
        // Every ingest node's delivery fence: a cluster DELETE waits for the oldest.
        body["cluster_nodes"] = json!(s
            .cluster_nodes
            .iter()
            .map(|(node, ago)| json!({"node": node, "delivered_secs_ago": ago}))
            .collect::<Vec<_>>());
    }
    (status, Json(body)).into_response()
}
