//! `/api/v1/users`: the InfluxQL users for `chingest backup` and `chingest restore`
//! (issue #24 item 6). Admin only (any caller while authentication is off).
//!
//! - `GET /api/v1/users`: `{"version": 1, "users": [{name, hash, admin, privileges}]}`, the
//!   users as `<data_dir>/users.json` holds them (bcrypt hashes, never passwords; config-file
//!   users are not included: they live in the config file).
//! - `POST /api/v1/users` with that body: adds the users whose names do not exist yet (here or
//!   in the config file); existing ones keep what they have. Answers `{"added", "kept"}`.

use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::auth::users::StoredUser;
use crate::auth::Identity;
use crate::error::ApiError;
use crate::{AppState, Store};

/// The body of both routes.
#[derive(Debug, Serialize, Deserialize)]
pub struct UsersBackup {
    /// Format version (1).
    pub version: u32,
    /// The users.
    pub users: Vec<StoredUser>,
}

/// `GET /api/v1/users`.
pub async fn export<S: Store>(
    State(state): State<AppState<S>>,
    Extension(id): Extension<Identity>,
) -> Response {
    if let Err(e) = admin(&id) {
        return e.into_response();
    }
    Json(UsersBackup {
        version: 1,
        users: state.auth.export_users(),
    })
    .into_response()
}

/// `POST /api/v1/users`.
pub async fn import<S: Store>(
    State(state): State<AppState<S>>,
    Extension(id): Extension<Identity>,
    body: Bytes,
) -> Response {
    if let Err(e) = admin(&id) {
        return e.into_response();
    }
    let backup: UsersBackup = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => return ApiError::BadRequest(format!("not a users backup: {e}")).into_response(),
    };
    if backup.version != 1 {
        return ApiError::BadRequest(format!(
            "users backup version {} (this chingest reads 1)",
            backup.version
        ))
        .into_response();
    }
    let auth = state.auth.clone();
    match tokio::task::spawn_blocking(move || auth.import_users(backup.users)).await {
        Ok(Ok((added, kept))) => Json(json!({ "added": added, "kept": kept })).into_response(),
        Ok(Err(e)) => ApiError::BadRequest(e.to_string()).into_response(),
        Err(e) => ApiError::Internal(e.to_string()).into_response(),
    }
}

fn admin(id: &Identity) -> Result<(), ApiError> {
    crate::admin::require_admin(id, "users are backed up and restored by admins")
}
