//! Authorization of a whole query before any of it runs, as InfluxDB 1.x
//! does: one statement the caller may not run refuses the request with 403
//! `error authorizing query: <user> not authorized to execute statement
//! '<statement>', requires READ on <db>` (or `requires admin privilege`),
//! texts checked against influxd 1.6.7. Storage checks again on what a
//! statement reads (the engine's grants), so this is InfluxDB's answer, not
//! the only guard.

use influxql::ast::{CqStatement, RpStatement, SelectStatement, Source, Statement, UserStatement};

use crate::auth::Identity;
use crate::error::ApiError;

/// What a statement needs of its caller.
enum Needs<'a> {
    Nothing,
    Admin,
    /// Reading these databases (`""`: none named, which only an admin or a
    /// user who may read every database passes, as in InfluxDB).
    Read(Vec<&'a str>),
    /// Writing this database (`""` as for reading).
    Write(&'a str),
}

/// Refuses the query if the caller may not run one of its statements.
pub(super) fn authorize(
    id: &Identity,
    db: Option<&str>,
    statements: &[Statement],
) -> Result<(), ApiError> {
    if let Identity::Bootstrap = id {
        // No user exists: only a query that first creates an admin runs (InfluxDB 1.x).
        return match statements.first() {
            Some(Statement::User(UserStatement::Create { admin: true, .. })) => Ok(()),
            _ => Err(ApiError::Forbidden(
                crate::auth::UserError::NotFirst.to_string(),
            )),
        };
    }
    for st in statements {
        let denied = match needs(st, db) {
            Needs::Nothing => None,
            Needs::Admin => (!id.can_manage_databases()).then(|| "admin privilege".to_string()),
            Needs::Read(dbs) => dbs
                .into_iter()
                .find(|db| !id.can_read(db))
                .map(|db| format!("READ on {db}")),
            Needs::Write(db) => (!id.can_write(db)).then(|| format!("WRITE on {db}")),
        };
        // `SELECT … INTO` also writes its target's database (InfluxDB 1.x's requirement);
        // a continuous query's SELECT is held to what its creator may read and write.
        let denied = denied.or_else(|| match st {
            Statement::Select(s) => into_denied(id, s, db),
            Statement::ContinuousQuery(CqStatement::Create(cq)) => {
                let mut dbs = Vec::new();
                select_databases(&cq.select, Some(&cq.database), &mut dbs);
                dbs.into_iter()
                    .find(|d| !id.can_read(d))
                    .map(|d| format!("READ on {d}"))
                    .or_else(|| into_denied(id, &cq.select, Some(&cq.database)))
            }
            _ => None,
        });
        if let Some(requirement) = denied {
            return Err(ApiError::Forbidden(format!(
                "error authorizing query: {} not authorized to execute statement '{st}', requires {requirement}",
                id.name()
            )));
        }
    }
    Ok(())
}

fn needs<'a>(st: &'a Statement, db: Option<&'a str>) -> Needs<'a> {
    let on = |on: &'a Option<String>| Needs::Read(vec![on.as_deref().or(db).unwrap_or("")]);
    match st {
        Statement::Select(select) => {
            let mut dbs = Vec::new();
            select_databases(select, db, &mut dbs);
            Needs::Read(dbs)
        }
        Statement::ShowDatabases => Needs::Nothing,
        Statement::ShowQueries => Needs::Read(vec![db.unwrap_or("")]),
        Statement::KillQuery { .. } | Statement::User(_) => Needs::Admin,
        // InfluxDB 1.x: READ on the query's database (its SELECT is checked below too:
        // creating one must not read or write more than its creator may).
        Statement::ContinuousQuery(CqStatement::Create(cq)) => Needs::Read(vec![&cq.database]),
        Statement::ContinuousQuery(CqStatement::Drop { on, .. }) => Needs::Write(on),
        Statement::ContinuousQuery(CqStatement::Show) => Needs::Read(vec![db.unwrap_or("")]),
        // As InfluxDB 1.6.7 requires them.
        Statement::RetentionPolicy(RpStatement::Drop { on, .. }) => Needs::Write(on),
        Statement::RetentionPolicy(_) => Needs::Admin,
        // WRITE on the request's database, as InfluxDB 1.x requires.
        Statement::Delete(_) | Statement::DropSeries(_) => Needs::Write(db.unwrap_or("")),
        Statement::Unsupported { what, on: o } => unsupported_needs(what, o.as_deref(), db),
        Statement::ShowRetentionPolicies { on: o } => on(o),
        Statement::ShowMeasurements(s) => on(&s.on),
        Statement::ShowTagKeys(c)
        | Statement::ShowFieldKeys(c)
        | Statement::ShowSeries(c)
        | Statement::ShowTagValues { common: c, .. } => on(&c.on),
        Statement::ShowDiagnostics
        | Statement::ShowStats
        | Statement::CreateDatabase { .. }
        | Statement::DropDatabase { .. }
        | Statement::DropMeasurement { .. } => Needs::Admin,
    }
}

/// `WRITE on <db>` when the caller may not write the database a `SELECT … INTO` targets.
fn into_denied(id: &Identity, s: &SelectStatement, db: Option<&str>) -> Option<String> {
    let into = s.into.as_ref()?;
    let target = into
        .database
        .as_deref()
        .filter(|d| !d.is_empty())
        .or(db)
        .unwrap_or("");
    (!id.can_write(target)).then(|| format!("WRITE on {target}"))
}

/// What InfluxDB 1.6.7 requires of a statement chingest does not implement
/// (probed with auth on): a caller it would refuse gets its 403, not
/// chingest's "not supported".
fn unsupported_needs<'a>(what: &str, on: Option<&'a str>, db: Option<&'a str>) -> Needs<'a> {
    let named = on.or(db).unwrap_or("");
    match what {
        "DROP SHARD"
        | "SHOW SHARDS"
        | "SHOW SHARD GROUPS"
        | "CREATE SUBSCRIPTION"
        | "DROP SUBSCRIPTION"
        | "SHOW SUBSCRIPTIONS" => Needs::Admin,
        "SHOW MEASUREMENT CARDINALITY" | "SHOW SERIES CARDINALITY" => Needs::Read(vec![named]),
        _ => Needs::Nothing,
    }
}

/// The databases a `SELECT` reads: each source's (subqueries looked into),
/// the `db` parameter for a source that names none.
fn select_databases<'a>(select: &'a SelectStatement, db: Option<&'a str>, out: &mut Vec<&'a str>) {
    for source in &select.sources {
        match source {
            Source::Measurement(m) => out.push(
                m.database
                    .as_deref()
                    .filter(|d| !d.is_empty())
                    .or(db)
                    .unwrap_or(""),
            ),
            Source::Subquery(inner) => select_databases(inner, db, out),
        }
    }
}
