//! `/api/v1/quarantine`: the operator's view of quarantined data (issue #15).
//!
//! Points the engine refuses deterministically (a reserved column name, a statement past
//! the engine's limits, a table start-up could not replay) are set aside per table as
//! durable dead letters so everything else keeps flowing; nothing acknowledged is dropped
//! without an operator's say. Admin only (any caller while authentication is off, like
//! `CREATE/DROP DATABASE`).
//!
//! - `GET /api/v1/quarantine`: `{"tables": [{db, measurement, entries, points, error,
//!   quarantined_secs}]}`.
//! - `POST /api/v1/quarantine/retry?db=<db>[&measurement=<m>]`: inserts each dead letter
//!   again (after an exactly-once check by `__seq`); those now in the engine leave the
//!   quarantine, the others stay with the engine's error. Answers the counts.
//! - `POST /api/v1/quarantine/discard?db=<db>[&measurement=<m>]`: deletes them for good.

use axum::extract::{Extension, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::auth::Identity;
use crate::error::ApiError;
use crate::params::Params;
use crate::{AppState, Store};

/// `GET /api/v1/quarantine`.
pub async fn list<S: Store>(
    State(state): State<AppState<S>>,
    Extension(id): Extension<Identity>,
) -> Response {
    if let Err(e) = admin(&id) {
        return e.into_response();
    }
    let tables: Vec<_> = state
        .store
        .quarantine()
        .into_iter()
        .map(|t| {
            json!({
                "db": t.db,
                "measurement": t.measurement,
                "entries": t.entries,
                "points": t.points,
                "error": t.error,
                "quarantined_secs": t.quarantined_secs,
            })
        })
        .collect();
    Json(json!({ "tables": tables })).into_response()
}

/// `POST /api/v1/quarantine/retry`.
pub async fn retry<S: Store>(
    State(state): State<AppState<S>>,
    Extension(id): Extension<Identity>,
    RawQuery(query): RawQuery,
) -> Response {
    act(state, id, query, Action::Retry).await
}

/// `POST /api/v1/quarantine/discard`.
pub async fn discard<S: Store>(
    State(state): State<AppState<S>>,
    Extension(id): Extension<Identity>,
    RawQuery(query): RawQuery,
) -> Response {
    act(state, id, query, Action::Discard).await
}

#[derive(Clone, Copy)]
enum Action {
    Retry,
    Discard,
}

async fn act<S: Store>(
    state: AppState<S>,
    id: Identity,
    query: Option<String>,
    action: Action,
) -> Response {
    if let Err(e) = admin(&id) {
        return e.into_response();
    }
    let params = Params::parse(query.as_deref().unwrap_or(""));
    let Some(db) = params.get_nonempty("db").map(str::to_string) else {
        return ApiError::DatabaseRequired.into_response();
    };
    let measurement = params.get_nonempty("measurement").map(str::to_string);
    let store = state.store.clone();
    let done = tokio::task::spawn_blocking(move || match action {
        Action::Retry => store.retry_quarantine(&db, measurement.as_deref()),
        Action::Discard => store.discard_quarantine(&db, measurement.as_deref()),
    })
    .await;
    match done {
        Ok(Ok(a)) => Json(json!({
            "entries": a.entries,
            "points": a.points,
            "inserted_points": a.inserted_points,
            "already_in_engine_points": a.already_in_engine_points,
            "failed_points": a.failed_points,
            "errors": a.errors,
        }))
        .into_response(),
        Ok(Err(e)) => ApiError::from(e).into_response(),
        Err(e) => ApiError::Internal(e.to_string()).into_response(),
    }
}

/// `POST /api/v1/cluster/forget-node?node=<name>` (admin): removes an ingest node gone for
/// good (its WAL with it) from the nodes a cluster-wide `DELETE`, `DROP SERIES`, `DROP
/// MEASUREMENT` or `DROP DATABASE` waits for. `{"node", "forgotten"}` (false: no shard
/// listed it). A node forgotten while alive lists itself again at its next refresh.
pub async fn forget_node<S: Store>(
    State(state): State<AppState<S>>,
    Extension(id): Extension<Identity>,
    RawQuery(query): RawQuery,
) -> Response {
    if let Err(e) = require_admin(&id, "forgetting an ingest node is for admins") {
        return e.into_response();
    }
    let params = Params::parse(query.as_deref().unwrap_or(""));
    let Some(node) = params.get_nonempty("node").map(str::to_string) else {
        return ApiError::Query("missing parameter: node".into()).into_response();
    };
    let store = state.store.clone();
    let name = node.clone();
    match tokio::task::spawn_blocking(move || store.forget_cluster_node(&name)).await {
        Ok(Ok(forgotten)) => Json(json!({ "node": node, "forgotten": forgotten })).into_response(),
        Ok(Err(e)) => ApiError::from(e).into_response(),
        Err(e) => ApiError::Internal(e.to_string()).into_response(),
    }
}

fn admin(id: &Identity) -> Result<(), ApiError> {
    require_admin(id, "the quarantine is for admins")
}

/// The caller is an admin (anyone while authentication is off), else 403 saying `why`.
pub(crate) fn require_admin(id: &Identity, why: &str) -> Result<(), ApiError> {
    if id.can_manage_databases() {
        Ok(())
    } else {
        Err(ApiError::Forbidden(format!(
            "user {:?} is not an admin: {why}",
            id.name()
        )))
    }
}
