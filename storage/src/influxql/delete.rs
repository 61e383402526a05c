//! `DELETE` and `DROP SERIES` as InfluxDB 1.x reads them: the request's database, every
//! measurement or those `FROM` names (a regex matches names), a `WHERE` of tag conditions
//! (each measurement's tags; a field is an error) and, for `DELETE`, a time range. What
//! happens to the data is `series_delete.rs`'s (`cluster/delete.rs`'s on a ClickHouse
//! cluster).

use engine::{quote_ident, quote_string};
use influxql::ast::{BinaryOp, DataType, Expr, Literal, SeriesDeletion};
use ingest::MeasurementSchema;

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
            // On a cluster, the same rows as the shard tables hold them.
            let on_shards = if self.cluster.is_some() {
                let mut conds = Vec::new();
                for c in &filter.rest {
                    conds.push(shard_condition(c, &m)?);
                }
                if let Some(min) = filter.range.min {
                    conds.push(format!("`time` >= {min}"));
                }
                if let Some(max) = filter.range.max {
                    conds.push(format!("`time` <= {max}"));
                }
                (!conds.is_empty()).then(|| conds.join(" AND "))
            } else {
                None
            };
            deletes.push(TableDelete {
                measurement: m.name.clone(),
                condition: (!conds.is_empty()).then(|| conds.join(" AND ")),
                on_shards,
            });
        }
        let done = match &self.cluster {
            Some(cluster) => self.delete_on_cluster(cluster, db, &deletes),
            None => self.delete_series(db, &deletes),
        };
        done.map_err(|e| InfluxqlError::Storage(Box::new(e)))?;
        Ok(StatementResult::default())
    }
}

/// A deletion's tag condition as SQL over a shard table's columns, exactly (a delete may
/// not widen or narrow it): `=`, `!=`, `=~`, `!~` of a tag with a string or regex, with
/// `AND`, `OR` and parentheses. A name that is no tag of the measurement reads as `''`,
/// as a row lacking the tag does. Anything else is an error naming the cluster.
fn shard_condition(e: &Expr, m: &MeasurementSchema) -> Result<String, InfluxqlError> {
    let unsupported = || {
        InfluxqlError::invalid(format!(
            "this condition is not supported in DELETE/DROP SERIES with the points on a \
             ClickHouse cluster (tags compared with strings or regexes only): {e}"
        ))
    };
    let tag = |name: &str, cast: Option<DataType>| -> Result<String, InfluxqlError> {
        match cast {
            None | Some(DataType::Tag) if m.tag_keys.iter().any(|k| k == name) => {
                Ok(quote_ident(name))
            }
            None | Some(DataType::Tag) => Ok("''".into()),
            _ => Err(unsupported()),
        }
    };
    match e {
        Expr::Paren(inner) => shard_condition(inner, m),
        Expr::Binary { op, lhs, rhs } => match (op, strip(lhs), strip(rhs)) {
            (BinaryOp::And | BinaryOp::Or, _, _) => Ok(format!(
                "({} {} {})",
                shard_condition(lhs, m)?,
                if *op == BinaryOp::And { "AND" } else { "OR" },
                shard_condition(rhs, m)?
            )),
            (
                BinaryOp::Eq | BinaryOp::NotEq,
                Expr::VarRef { name, data_type },
                Expr::Literal(Literal::String(v)),
            )
            | (
                BinaryOp::Eq | BinaryOp::NotEq,
                Expr::Literal(Literal::String(v)),
                Expr::VarRef { name, data_type },
            ) => Ok(format!(
                "{} {} {}",
                tag(name, *data_type)?,
                if *op == BinaryOp::Eq { "=" } else { "!=" },
                quote_string(v)
            )),
            (
                BinaryOp::EqRegex | BinaryOp::NotEqRegex,
                Expr::VarRef { name, data_type },
                Expr::Literal(Literal::Regex(re)),
            ) => {
                let matched = format!("match({}, {})", tag(name, *data_type)?, quote_string(&re.0));
                Ok(if *op == BinaryOp::EqRegex {
                    matched
                } else {
                    format!("(NOT {matched})")
                })
            }
            _ => Err(unsupported()),
        },
        _ => Err(unsupported()),
    }
}

fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(inner) => strip(inner),
        other => other,
    }
}
