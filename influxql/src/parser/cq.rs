//! Continuous queries: `CREATE CONTINUOUS QUERY`, `DROP CONTINUOUS QUERY`, with InfluxDB
//! 1.x's grammar and error texts (checked against influxd 1.6.7).

use super::Parser;
use crate::ast::{ContinuousQuery, CqStatement, Dimension, Expr, Statement};
use crate::duration::format_duration_literal;
use crate::error::ParseError;
use crate::token::{Keyword as K, Kind};

impl Parser<'_> {
    /// `CREATE CONTINUOUS QUERY <name> ON <db> [RESAMPLE [EVERY d] [FOR d]] BEGIN <select>
    /// END` (after `CONTINUOUS`).
    pub(super) fn create_continuous_query(&mut self) -> Result<Statement, ParseError> {
        self.expect_kw(K::QUERY)?;
        let name = self.ident()?;
        self.expect_kw(K::ON)?;
        let database = self.ident()?;
        let (mut every_ns, mut for_ns) = (None, None);
        if self.accept_kw(K::RESAMPLE) {
            let t = self.peek_ws();
            if !(t.is(K::EVERY) || t.is(K::FOR)) {
                return Err(ParseError::unexpected(&t, &["EVERY", "FOR"]));
            }
            if self.accept_kw(K::EVERY) {
                every_ns = Some(self.positive_duration()?);
            }
            if self.accept_kw(K::FOR) {
                for_ns = Some(self.positive_duration()?);
            }
        }
        self.expect_kw(K::BEGIN)?;
        self.expect_kw(K::SELECT)?;
        let select_start = self.lx.cursor();
        let select = self.select_into_required()?;
        let select_end = self.lx.offset();
        let aggregated = select.fields.iter().any(|f| has_call(&f.expr));
        let interval = select.dimensions.iter().find_map(|d| match d {
            Dimension::Time { interval, .. } => Some(interval.0),
            _ => None,
        });
        if aggregated && interval.is_none_or(|i| i <= 0) {
            // InfluxDB reports the select's last token.
            let end = self.lx.cursor();
            self.lx.reset(select_start);
            let mut last = self.scan_ws();
            loop {
                let t = self.scan_ws();
                // `self.last`: where the token just scanned starts.
                if t.kind == Kind::Eof || self.last.offset() >= select_end {
                    break;
                }
                last = t;
            }
            self.lx.reset(end);
            return Err(ParseError::unexpected(&last, &["GROUP BY time(...)"]));
        }
        if let (Some(for_ns), Some(interval)) = (for_ns, interval) {
            if for_ns < interval {
                return Err(ParseError::Invalid(format!(
                    "FOR duration must be >= GROUP BY time duration: must be a minimum of {}, got {}",
                    format_duration_literal(interval),
                    format_duration_literal(for_ns)
                )));
            }
        }
        self.expect_kw(K::END)?;
        Ok(Statement::ContinuousQuery(CqStatement::Create(
            ContinuousQuery {
                name,
                database,
                every_ns,
                for_ns,
                select: Box::new(select),
            },
        )))
    }

    /// `DROP CONTINUOUS QUERY <name> ON <db>` (after `CONTINUOUS`).
    pub(super) fn drop_continuous_query(&mut self) -> Result<Statement, ParseError> {
        self.expect_kw(K::QUERY)?;
        let name = self.ident()?;
        self.expect_kw(K::ON)?;
        let on = self.ident()?;
        Ok(Statement::ContinuousQuery(CqStatement::Drop { name, on }))
    }

    /// A `SELECT` (keyword consumed) that must have `INTO`.
    fn select_into_required(&mut self) -> Result<crate::ast::SelectStatement, ParseError> {
        let start = self.lx.cursor();
        // The fields, then INTO must follow: InfluxDB reports the token found instead.
        self.select_fields_only()?;
        let t = self.peek_ws();
        if !t.is(K::INTO) {
            return Err(ParseError::unexpected(&t, &["INTO"]));
        }
        self.lx.reset(start);
        self.select()
    }

    fn positive_duration(&mut self) -> Result<i64, ParseError> {
        let t = self.scan_ws();
        match t.kind {
            Kind::Duration => crate::duration::parse_duration(&t.lit)
                .map_err(|e| ParseError::at(e.to_string(), t.pos)),
            _ => Err(ParseError::unexpected(&t, &["duration"])),
        }
    }
}

/// Whether an expression calls a function (InfluxDB's test of an aggregated `SELECT`).
fn has_call(e: &Expr) -> bool {
    match e {
        Expr::Call { .. } => true,
        Expr::Binary { lhs, rhs, .. } => has_call(lhs) || has_call(rhs),
        Expr::Paren(inner) => has_call(inner),
        _ => false,
    }
}
