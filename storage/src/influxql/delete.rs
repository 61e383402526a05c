//! `DELETE` and `DROP SERIES` as InfluxDB 1.x reads them: the request's database, every
//! measurement or those `FROM` names (a regex matches names), a `WHERE` of tag conditions
//! (each measurement's tags; a field is an error) and, for `DELETE`, a time range. What
//! happens to the data is `series_delete.rs`'s.

use influxql::ast::SeriesDeletion;

use super::error::InfluxqlError;
use super::expr::Scope;
use super::range;
use super::series::StatementResult;
use super::show::in_from;
use super::InfluxqlRequest;
use crate::series_delete::TableDelete;
use crate::Storage;

impl Storage {
    /// Runs `DELETE` (`drop_series` false) or `DROP SERIES`.
    pub(crate) fn run_deletion(
        &self,
        req: &InfluxqlRequest<'_>,
        d: &SeriesDeletion,
        drop_series: bool,
    ) -> Result<StatementResult, InfluxqlError> {
        // No `db` is an unknown database (`database not found: `), as in InfluxDB 1.6.7.
        let db = req.db.unwrap_or("");
        if !self.catalog.database_exists(db) {
            return Err(InfluxqlError::DatabaseNotFound { db: db.into() });
        }
        let filter = range::split(d.condition.as_ref(), req.now_ns)?;
        let timed = filter.range.min.is_some() || filter.range.max.is_some();
        if drop_series && timed {
            return Err(InfluxqlError::invalid(
                "DROP SERIES doesn't support time in WHERE clause",
            ));
        }
        if filter.range.is_empty() {
            return Ok(StatementResult::default());
        }
        let mut deletes = Vec::new();
        for m in self.catalog.schema(db) {
            if !in_from(&d.from, &m.name)? {
                continue;
            }
            let mut scope = Scope::new(&m);
            let mut conds = Vec::new();
            for c in &filter.rest {
                conds.push(scope.condition(c)?);
            }
            if !scope.fields.is_empty() {
                return Err(InfluxqlError::invalid(
                    "fields not supported in WHERE clause during deletion",
                ));
            }
            if let Some(min) = filter.range.min {
                conds.push(format!("time >= fromUnixTimestamp64Nano(toInt64({min}))"));
            }
            if let Some(max) = filter.range.max {
                conds.push(format!("time <= fromUnixTimestamp64Nano(toInt64({max}))"));
            }
            deletes.push(TableDelete {
                measurement: m.name.clone(),
                condition: (!conds.is_empty()).then(|| conds.join(" AND ")),
            });
        }
        self.delete_series(db, &deletes)
            .map_err(|e| InfluxqlError::Storage(Box::new(e)))?;
        Ok(StatementResult::default())
    }
}
