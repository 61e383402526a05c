//! `SHOW RETENTION POLICIES | MEASUREMENTS | TAG KEYS | TAG VALUES | FIELD
//! KEYS | SERIES` with the clauses InfluxDB accepts, in its order.

use super::Parser;
use crate::ast::{ShowCommon, ShowMeasurements, Statement, TagKeyMatch};
use crate::error::ParseError;
use crate::token::{Keyword as K, Kind};

fn unsupported(what: &str) -> Statement {
    Statement::Unsupported {
        what: what.to_owned(),
        on: None,
    }
}

impl Parser<'_> {
    /// `ON db`, if present.
    fn on(&mut self) -> Result<Option<String>, ParseError> {
        if !self.accept_kw(K::ON) {
            return Ok(None);
        }
        self.ident().map(Some)
    }

    /// `FROM m, /re/, ...`, if present.
    fn from(&mut self) -> Result<Vec<crate::ast::MeasurementName>, ParseError> {
        if !self.accept_kw(K::FROM) {
            return Ok(Vec::new());
        }
        self.measurements()
    }

    /// `SHOW RETENTION POLICIES [ON db]`
    pub(super) fn show_retention_policies(&mut self) -> Result<Statement, ParseError> {
        Ok(Statement::ShowRetentionPolicies { on: self.on()? })
    }

    /// `SHOW MEASUREMENTS [ON db] [WITH MEASUREMENT =|=~ m] [WHERE ...]
    /// [ORDER BY time] [LIMIT n] [OFFSET n]`
    pub(super) fn show_measurements(&mut self) -> Result<Statement, ParseError> {
        let on = self.on()?;
        let mut with_measurement = None;
        if self.accept_kw(K::WITH) {
            self.expect_kw(K::MEASUREMENT)?;
            let t = self.scan_ws();
            if !matches!(t.kind, Kind::Eq | Kind::EqRegex) {
                return Err(ParseError::unexpected(&t, &["=", "=~"]));
            }
            with_measurement = Some(self.measurement()?.name);
        }
        let condition = self.condition()?;
        self.order_by()?;
        Ok(Statement::ShowMeasurements(ShowMeasurements {
            on,
            with_measurement,
            condition,
            limit: self.optional_int(K::LIMIT)?,
            offset: self.optional_int(K::OFFSET)?,
        }))
    }

    /// `SHOW TAG KEYS [ON db] [FROM ...] [WHERE ...] [ORDER BY time] [LIMIT n]
    /// [OFFSET n] [SLIMIT n] [SOFFSET n]` (InfluxDB 1.6 has no `WITH KEY`
    /// here); `SLIMIT` and `SOFFSET` are not implemented.
    pub(super) fn show_tag_keys(&mut self) -> Result<Statement, ParseError> {
        let on = self.on()?;
        let from = self.from()?;
        let condition = self.condition()?;
        self.order_by()?;
        let common = ShowCommon {
            on,
            from,
            condition,
            limit: self.optional_int(K::LIMIT)?,
            offset: self.optional_int(K::OFFSET)?,
        };
        let slimit = self.optional_int(K::SLIMIT)?;
        let soffset = self.optional_int(K::SOFFSET)?;
        if slimit.is_some() || soffset.is_some() {
            return Ok(unsupported("SHOW TAG KEYS SLIMIT/SOFFSET"));
        }
        Ok(Statement::ShowTagKeys(common))
    }

    /// `SHOW TAG VALUES [ON db] [FROM ...] WITH KEY ... [WHERE ...]
    /// [ORDER BY time] [LIMIT n] [OFFSET n]`
    pub(super) fn show_tag_values(&mut self) -> Result<Statement, ParseError> {
        let t = self.scan_ws();
        match t.kind {
            Kind::Kw(K::EXACT) => {
                self.expect_kw(K::CARDINALITY)?;
                return self.unsupported("SHOW TAG VALUES EXACT CARDINALITY");
            }
            Kind::Kw(K::CARDINALITY) => return self.unsupported("SHOW TAG VALUES CARDINALITY"),
            _ => self.unscan(),
        }
        let on = self.on()?;
        let from = self.from()?;
        let key = self.tag_key_match()?;
        let condition = self.condition()?;
        self.order_by()?;
        let common = ShowCommon {
            on,
            from,
            condition,
            limit: self.optional_int(K::LIMIT)?,
            offset: self.optional_int(K::OFFSET)?,
        };
        Ok(Statement::ShowTagValues { common, key })
    }

    /// `WITH KEY = k | != k | IN (k, ...) | =~ /re/ | !~ /re/`
    fn tag_key_match(&mut self) -> Result<TagKeyMatch, ParseError> {
        self.expect_kw(K::WITH)?;
        self.expect_kw(K::KEY)?;
        let t = self.scan_ws();
        match t.kind {
            Kind::Kw(K::IN) => {
                self.expect(Kind::LParen, &["("])?;
                let mut keys = vec![self.ident()?];
                while self.accept(Kind::Comma) {
                    keys.push(self.ident()?);
                }
                self.expect(Kind::RParen, &[")"])?;
                Ok(TagKeyMatch::In(keys))
            }
            Kind::Eq => Ok(TagKeyMatch::Eq(self.ident()?)),
            Kind::Neq => Ok(TagKeyMatch::NotEq(self.ident()?)),
            Kind::EqRegex | Kind::NeqRegex => {
                let Some(re) = self.regex()? else {
                    return Err(ParseError::unexpected(&self.scan_ws(), &["regex"]));
                };
                Ok(if t.kind == Kind::EqRegex {
                    TagKeyMatch::Regex(re)
                } else {
                    TagKeyMatch::NotRegex(re)
                })
            }
            _ => Err(ParseError::unexpected(&t, &["IN", "=", "=~"])),
        }
    }

    /// `SHOW FIELD KEYS [ON db] [FROM ...] [ORDER BY time] [LIMIT n] [OFFSET n]`
    pub(super) fn show_field_keys(&mut self) -> Result<Statement, ParseError> {
        let on = self.on()?;
        let from = self.from()?;
        self.order_by()?;
        Ok(Statement::ShowFieldKeys(ShowCommon {
            on,
            from,
            condition: None,
            limit: self.optional_int(K::LIMIT)?,
            offset: self.optional_int(K::OFFSET)?,
        }))
    }

    /// `SHOW SERIES [ON db] [FROM ...] [WHERE ...] [ORDER BY time] [LIMIT n]
    /// [OFFSET n]`; `SHOW SERIES [EXACT] CARDINALITY` is not implemented.
    pub(super) fn show_series(&mut self) -> Result<Statement, ParseError> {
        let exact = self.accept_kw(K::EXACT);
        if self.accept_kw(K::CARDINALITY) {
            let what = if exact {
                "SHOW SERIES EXACT CARDINALITY"
            } else {
                "SHOW SERIES CARDINALITY"
            };
            return self.unsupported(what);
        }
        let on = self.on()?;
        let from = self.from()?;
        let condition = self.condition()?;
        self.order_by()?;
        Ok(Statement::ShowSeries(ShowCommon {
            on,
            from,
            condition,
            limit: self.optional_int(K::LIMIT)?,
            offset: self.optional_int(K::OFFSET)?,
        }))
    }
}
