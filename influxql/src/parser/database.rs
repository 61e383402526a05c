//! `CREATE DATABASE` and `DROP DATABASE`. chingest has one node and one
//! retention policy (`autogen`) per database: a `WITH` clause may set the
//! duration; other replication factors or policy names are refused.

use super::Parser;
use crate::ast::{RpStatement, Statement};
use crate::duration::parse_duration;
use crate::error::ParseError;
use crate::token::{Keyword as K, Kind};

/// The longest finite retention, 50 years: the engine's TTL works on 32-bit
/// `DateTime` seconds (until 2106), so a longer one would wrap around.
pub const MAX_RETENTION_SECS: u64 = 50 * 365 * 86_400;

const HOUR_NS: i64 = 3_600_000_000_000;

impl Parser<'_> {
    /// `CREATE DATABASE name [WITH [DURATION d] [REPLICATION n] [SHARD DURATION d] [NAME rp]]`
    pub(super) fn create_database(&mut self) -> Result<Statement, ParseError> {
        let name = self.ident()?;
        let (mut duration_secs, mut replication, mut shard_duration_ns, mut policy) =
            (None, None, None, None);
        if !self.accept_kw(K::WITH) {
            return Ok(Statement::CreateDatabase {
                name,
                duration_secs,
                replication,
                shard_duration_ns,
                policy,
            });
        }
        let t = self.peek_ws();
        if ![K::DURATION, K::NAME, K::REPLICATION, K::SHARD]
            .iter()
            .any(|k| t.is(*k))
        {
            return Err(ParseError::unexpected(
                &t,
                &["DURATION", "NAME", "REPLICATION", "SHARD"],
            ));
        }
        if self.accept_kw(K::DURATION) {
            let (ns, lit) = self.duration_value()?;
            duration_secs = Some(retention_secs(ns, &lit)?);
        }
        if self.accept_kw(K::REPLICATION) {
            if self.int_in(1, i64::from(i32::MAX))? != 1 {
                return Err(ParseError::Statement(
                    "replication factor must be 1 (chingest is one node)".into(),
                ));
            }
            replication = Some(1);
        }
        if self.accept_kw(K::SHARD) {
            // Parsed for compatibility; chingest has no shard groups.
            self.expect_kw(K::DURATION)?;
            shard_duration_ns = Some(self.duration_value()?.0);
        }
        if self.accept_kw(K::NAME) {
            let rp = self.ident()?;
            if rp != "autogen" {
                return Err(ParseError::Statement(format!(
                    "retention policy {rp:?}: only the default policy \"autogen\" is supported"
                )));
            }
            policy = Some(rp);
        }
        Ok(Statement::CreateDatabase {
            name,
            duration_secs,
            replication,
            shard_duration_ns,
            policy,
        })
    }

    /// `DROP DATABASE name`
    pub(super) fn drop_database(&mut self) -> Result<Statement, ParseError> {
        Ok(Statement::DropDatabase {
            name: self.ident()?,
        })
    }

    /// `DROP MEASUREMENT name` (an identifier, as in InfluxDB: no regex).
    pub(super) fn drop_measurement(&mut self) -> Result<Statement, ParseError> {
        Ok(Statement::DropMeasurement {
            name: self.ident()?,
        })
    }

    /// A duration literal or `INF` (0): nanoseconds and the text as written.
    fn duration_value(&mut self) -> Result<(i64, String), ParseError> {
        let t = self.scan_ws();
        match t.kind {
            Kind::Kw(K::INF) => Ok((0, "INF".into())),
            Kind::Duration => parse_duration(&t.lit)
                .map(|ns| (ns, t.lit.clone()))
                .map_err(|e| ParseError::at(e.to_string(), t.pos)),
            _ => Err(ParseError::unexpected(&t, &["duration"])),
        }
    }

    /// An integer within `min..=max`.
    fn int_in(&mut self, min: i64, max: i64) -> Result<i64, ParseError> {
        let t = self.expect(Kind::Integer, &["integer"])?;
        let n: i64 = t.lit.parse().map_err(|_| {
            ParseError::at(
                format!("strconv.Atoi: parsing {:?}: value out of range", t.lit),
                t.pos,
            )
        })?;
        if n < min || n > max {
            return Err(ParseError::at(
                format!("invalid value {n}: must be {min} <= n <= {max}"),
                t.pos,
            ));
        }
        Ok(n)
    }
}

/// A retention duration in whole seconds (0 = forever), within chingest's limits.
fn retention_secs(ns: i64, lit: &str) -> Result<u64, ParseError> {
    if ns != 0 && ns < HOUR_NS {
        return Err(ParseError::Statement(
            "retention policy duration must be at least 1h0m0s".into(),
        ));
    }
    let secs = (ns / 1_000_000_000) as u64;
    if secs > MAX_RETENTION_SECS {
        return Err(ParseError::Statement(format!(
            "retention policy duration {lit} is longer than 50 years: use INF"
        )));
    }
    Ok(secs)
}

impl Parser<'_> {
    /// `CREATE RETENTION POLICY <rp> ON <db> DURATION <d> REPLICATION <n> [SHARD DURATION <d>]
    /// [DEFAULT]` (after `RETENTION`).
    pub(super) fn create_retention_policy(&mut self) -> Result<Statement, ParseError> {
        self.expect_kw(K::POLICY)?;
        let name = self.ident()?;
        self.expect_kw(K::ON)?;
        let on = self.ident()?;
        self.expect_kw(K::DURATION)?;
        let (ns, lit) = self.duration_value()?;
        self.expect_kw(K::REPLICATION)?;
        let replication = self.replication()?;
        let shard_duration_ns = if self.accept_kw(K::SHARD) {
            self.expect_kw(K::DURATION)?;
            Some(self.duration_value()?.0)
        } else {
            None
        };
        let default = self.accept_kw(K::DEFAULT);
        Ok(Statement::RetentionPolicy(RpStatement::Create {
            name,
            on,
            duration_secs: retention_secs(ns, &lit)?,
            replication,
            shard_duration_ns,
            default,
        }))
    }

    /// `ALTER RETENTION POLICY <rp> ON <db> <option>...` (after `ALTER`).
    pub(super) fn alter_retention_policy(&mut self) -> Result<Statement, ParseError> {
        self.expect_kw(K::RETENTION)?;
        self.expect_kw(K::POLICY)?;
        let name = self.ident()?;
        self.expect_kw(K::ON)?;
        let on = self.ident()?;
        let (mut duration_secs, mut replication, mut shard_duration_ns, mut default) =
            (None, None, None, false);
        let mut any = false;
        loop {
            let t = self.scan_ws();
            match t.kind {
                Kind::Kw(K::DURATION) => {
                    let (ns, lit) = self.duration_value()?;
                    duration_secs = Some(retention_secs(ns, &lit)?);
                }
                Kind::Kw(K::REPLICATION) => replication = Some(self.replication()?),
                Kind::Kw(K::SHARD) => {
                    self.expect_kw(K::DURATION)?;
                    shard_duration_ns = Some(self.duration_value()?.0);
                }
                Kind::Kw(K::DEFAULT) => default = true,
                _ if !any => {
                    return Err(ParseError::unexpected(
                        &t,
                        &["DURATION", "REPLICATION", "SHARD", "DEFAULT"],
                    ))
                }
                _ => {
                    self.unscan();
                    break;
                }
            }
            any = true;
        }
        Ok(Statement::RetentionPolicy(RpStatement::Alter {
            name,
            on,
            duration_secs,
            replication,
            shard_duration_ns,
            default,
        }))
    }

    /// `DROP RETENTION POLICY <rp> ON <db>` (after `RETENTION`).
    pub(super) fn drop_retention_policy(&mut self) -> Result<Statement, ParseError> {
        self.expect_kw(K::POLICY)?;
        let name = self.ident()?;
        self.expect_kw(K::ON)?;
        let on = self.ident()?;
        Ok(Statement::RetentionPolicy(RpStatement::Drop { name, on }))
    }

    /// `REPLICATION n`'s number: chingest is one node and keeps one copy.
    fn replication(&mut self) -> Result<u32, ParseError> {
        if self.int_in(1, i64::from(i32::MAX))? != 1 {
            return Err(ParseError::Statement(
                "replication factor must be 1 (chingest is one node)".into(),
            ));
        }
        Ok(1)
    }
}
