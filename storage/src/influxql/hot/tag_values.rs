//! `SHOW TAG VALUES` from the hot store (issue #44): the distinct values of a
//! measurement's tag keys over its series that match the statement's tag
//! conditions, read from the series the store holds instead of a `SELECT
//! DISTINCT` over the engine's table (3–4 ms of planning, then a scan of every
//! row; the Grafana dashboard's `$host` variable asks this on every load).
//!
//! Only where the store holds every series of the measurement
//! (`Table::every_series`: nothing was emptied, refilled or left to the engine
//! alone), of a database without a retention (the engine's TTL removes series
//! the store keeps), off a cluster, with conditions on tags only (a field
//! condition reads points: the engine's). Time conditions are ignored, as the
//! engine path ignores them (`show.rs`). The answer is the engine path's:
//! `(key, value)` pairs without empty values, sorted by key, then value.

use std::collections::BTreeSet;

use engine::SqlAccess;
use influxql::ast::{DataType, Expr};
use ingest::MeasurementSchema;

use super::cond::Cond;
use super::{may_read, RECEIVE_WAIT};
use crate::influxql::error::InfluxqlError;
use crate::influxql::range;
use crate::Storage;

impl Storage {
    /// The `(key, value)` pairs of `keys` over the series of `m` in `db` that
    /// match `cond`, from the hot store; `None` when the engine must answer.
    /// `access`: the caller's, or `None` where it was checked already.
    pub(crate) fn hot_tag_values(
        &self,
        access: Option<&SqlAccess>,
        db: &str,
        m: &MeasurementSchema,
        keys: &[String],
        cond: Option<&Expr>,
        now_ns: i64,
    ) -> Result<Option<Vec<(String, String)>>, InfluxqlError> {
        if !self.hot.enabled()
            || self.cluster.is_some()
            || access.is_some_and(|a| !may_read(a, db))
            || self.catalog.retention_secs(db) > 0
        {
            return Ok(None);
        }
        let rest = match cond {
            Some(c) => range::split(Some(c), now_ns)?.rest,
            None => Vec::new(),
        };
        // A name neither tag nor field compares as a tag no series has (`expr.rs`,
        // `cond_ref`), as in InfluxDB: such a tag key, then.
        let mut names = Vec::new();
        for e in &rest {
            unknown_names(e, m, &mut names);
        }
        let widened;
        let m = if names.is_empty() {
            m
        } else {
            let mut w = m.clone();
            w.tag_keys.extend(names);
            widened = w;
            &widened
        };
        let conds: Option<Vec<Cond>> = rest.iter().map(|e| Cond::of(e, m)).collect();
        // A field condition reads points: the engine's.
        let Some(conds) = conds.filter(|cs| !cs.iter().any(reads_fields)) else {
            return Ok(None);
        };
        // Every acknowledged write in the store first, as for a `SELECT`.
        let acked = self.wal.last_seq();
        if !self.reads.unflushed().wait_received(acked, RECEIVE_WAIT)
            || !self.hot.wait_applied(acked, db, &m.name)
        {
            return Ok(None);
        }
        let Some(tables) = self.hot.try_read() else {
            return Ok(None);
        };
        let Some(table) = tables.get(db, &m.name) else {
            return Ok(None);
        };
        if !table.every_series {
            return Ok(None);
        }
        let mut pairs: BTreeSet<(&str, &str)> = BTreeSet::new();
        for s in table.series.values() {
            let mut hit = true;
            for c in &conds {
                match c.on_series(s) {
                    Some(true) => {}
                    Some(false) => {
                        hit = false;
                        break;
                    }
                    // Tag conditions alone never depend on a point.
                    None => return Ok(None),
                }
            }
            if hit {
                for k in keys {
                    let v = s.tag(k);
                    if !v.is_empty() {
                        pairs.insert((k.as_str(), v));
                    }
                }
            }
        }
        Ok(Some(
            pairs
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ))
    }
}

/// Names in `e` that are neither a tag key nor a field of `m`, uncast or cast to a tag.
fn unknown_names(e: &Expr, m: &MeasurementSchema, out: &mut Vec<String>) {
    match e {
        Expr::Paren(inner) => unknown_names(inner, m, out),
        Expr::Binary { lhs, rhs, .. } => {
            unknown_names(lhs, m, out);
            unknown_names(rhs, m, out);
        }
        Expr::VarRef { name, data_type }
            if matches!(data_type, None | Some(DataType::Tag))
                && !m.tag_keys.contains(name)
                && !m.fields.iter().any(|(f, _)| f == name)
                && !out.contains(name) =>
        {
            out.push(name.clone())
        }
        _ => {}
    }
}

fn reads_fields(c: &Cond) -> bool {
    match c {
        Cond::Field(_) => true,
        Cond::And(a, b) | Cond::Or(a, b) => reads_fields(a) || reads_fields(b),
        Cond::Eq(..) | Cond::Match(..) => false,
    }
}
