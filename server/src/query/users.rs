//! User statements on `/query` (`CREATE USER`, `GRANT`, `SHOW USERS`, …): the
//! authenticator keeps the users ([`crate::auth`]); this answers in InfluxDB 1.x's shapes.
//! Authorized before (admin, or the first admin's creation).

use influxql::ast::UserStatement;
use storage::influxql::{Series, StatementResult, Value};

use crate::auth::{Identity, UserError};
use crate::error::ApiError;
use crate::{AppState, Store};

/// Runs one user statement (blocking: bcrypt, an fsync).
pub(super) fn execute<S: Store>(
    state: &AppState<S>,
    id: &Identity,
    st: UserStatement,
) -> Result<StatementResult, ApiError> {
    let auth = &state.auth;
    let exists = |db: &str| state.store.database_exists(db);
    match st {
        UserStatement::Create {
            name,
            password,
            admin,
        } => {
            let first_admin = matches!(id, Identity::Bootstrap);
            auth.create_user(&name, &password.0, admin, first_admin)
        }
        UserStatement::Drop { name } => auth.drop_user(&name),
        UserStatement::SetPassword { name, password } => auth.set_password(&name, &password.0),
        UserStatement::Grant {
            privilege,
            on,
            user,
        } => auth.grant(&user, &on, privilege, exists),
        UserStatement::Revoke {
            privilege,
            on,
            user,
        } => auth.revoke(&user, &on, privilege, exists),
        UserStatement::GrantAdmin { user } => auth.set_admin(&user, true),
        UserStatement::RevokeAdmin { user } => auth.set_admin(&user, false),
        UserStatement::ShowUsers => {
            let values = auth
                .show_users()
                .into_iter()
                .map(|(name, admin)| vec![Value::String(name.into()), Value::Boolean(admin)])
                .collect();
            return Ok(StatementResult::of(vec![Series::untagged(
                "",
                &["user", "admin"],
                values,
            )]));
        }
        UserStatement::ShowGrants { user } => {
            let values = auth
                .show_grants(&user)
                .map_err(error)?
                .into_iter()
                .map(|(db, p)| vec![Value::String(db.into()), Value::String(p.as_str().into())])
                .collect();
            return Ok(StatementResult::of(vec![Series::untagged(
                "",
                &["database", "privilege"],
                values,
            )]));
        }
    }
    .map_err(error)?;
    Ok(StatementResult::default())
}

/// A user statement's failure: the statement's error in the answer (InfluxDB 1.x's text);
/// a users file that cannot be written is the server's fault (500, logged).
pub(super) fn error(e: UserError) -> ApiError {
    match e {
        UserError::File(e) => {
            tracing::error!("{e}");
            ApiError::Internal(e.to_string())
        }
        UserError::NotFirst => ApiError::Forbidden(e.to_string()),
        e => ApiError::Query(e.to_string()),
    }
}
