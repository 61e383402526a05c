//! `SELECT`: fields, `INTO`, `FROM` (measurements, regexes, subqueries),
//! `WHERE`, `GROUP BY`, `fill()`, `ORDER BY`, limits and `tz()`, in
//! InfluxDB's clause order.

use super::Parser;
use crate::ast::{
    BinaryOp, Dimension, Expr, Field, Fill, Literal, MeasurementName, NameMatch, SelectStatement,
    Source,
};
use crate::error::ParseError;
use crate::token::{Keyword as K, Kind};

impl Parser<'_> {
    /// A `SELECT` statement (the keyword consumed).
    pub(crate) fn select(&mut self) -> Result<SelectStatement, ParseError> {
        let fields = self.fields()?;
        let into = self.target()?;
        self.expect_kw(K::FROM)?;
        let sources = self.sources()?;
        let condition = self.condition()?;
        let dimensions = self.dimensions()?;
        let fill = self.fill()?;
        let order_desc = self.order_by()?;
        Ok(SelectStatement {
            fields,
            into,
            sources,
            condition,
            dimensions,
            fill,
            order_desc,
            limit: self.optional_int(K::LIMIT)?,
            offset: self.optional_int(K::OFFSET)?,
            slimit: self.optional_int(K::SLIMIT)?,
            soffset: self.optional_int(K::SOFFSET)?,
            timezone: self.timezone()?,
        })
    }

    /// Only the fields of a `SELECT` (to look at what follows them).
    pub(super) fn select_fields_only(&mut self) -> Result<(), ParseError> {
        self.fields().map(drop)
    }

    /// `field [AS alias], ...`
    fn fields(&mut self) -> Result<Vec<Field>, ParseError> {
        let mut fields = vec![self.field()?];
        loop {
            if self.scan().kind != Kind::Comma {
                self.unscan();
                return Ok(fields);
            }
            fields.push(self.field()?);
        }
    }

    fn field(&mut self) -> Result<Field, ParseError> {
        let expr = match self.regex()? {
            Some(re) => Expr::Literal(Literal::Regex(re)),
            None => {
                let pos = self.peek_ws().pos;
                let expr = self.expr()?;
                if let Some(op) = condition_op(&expr) {
                    return Err(ParseError::Invalid(format!(
                        "invalid operator {op} in SELECT clause at {pos}; operator is intended for WHERE clause"
                    )));
                }
                expr
            }
        };
        let alias = self.alias()?;
        self.consume_ws();
        Ok(Field { expr, alias })
    }

    /// `AS alias`, if present.
    fn alias(&mut self) -> Result<Option<String>, ParseError> {
        if !self.accept_kw(K::AS) {
            return Ok(None);
        }
        self.ident().map(Some)
    }

    /// `INTO [[db.]rp.]m` or `INTO db.rp.:MEASUREMENT`, if present.
    fn target(&mut self) -> Result<Option<MeasurementName>, ParseError> {
        if !self.accept_kw(K::INTO) {
            return Ok(None);
        }
        let mut idents = self.segmented_idents()?;
        if idents.len() < 3 && self.lx.peek_rune() == Some(':') {
            self.expect(Kind::Colon, &[":"])?;
            self.expect_kw(K::MEASUREMENT)?;
            idents.push(String::new());
        }
        Ok(Some(measurement_name(idents, None)))
    }

    /// `source, ...` of a `SELECT` (subqueries allowed).
    fn sources(&mut self) -> Result<Vec<Source>, ParseError> {
        let mut out = Vec::new();
        loop {
            out.push(self.source()?);
            if !self.accept(Kind::Comma) {
                return Ok(out);
            }
        }
    }

    fn source(&mut self) -> Result<Source, ParseError> {
        if let Some(re) = self.regex()? {
            return Ok(Source::Measurement(measurement_name(Vec::new(), Some(re))));
        }
        let t = self.scan_ws();
        if t.kind != Kind::LParen {
            self.unscan();
            return self.qualified_measurement().map(Source::Measurement);
        }
        self.expect_kw(K::SELECT)?;
        // A subquery's parse frames are about eight times a parenthesis's.
        self.enter_weighted(t.pos, 8)?;
        let inner = self.select();
        self.leave(8);
        let inner = inner?;
        self.expect(Kind::RParen, &[")"])?;
        Ok(Source::Subquery(Box::new(inner)))
    }

    /// `m`, `rp.m`, `db.rp.m`, `db..m`, `/re/`, `db.rp./re/` (no subqueries).
    pub(crate) fn measurement(&mut self) -> Result<MeasurementName, ParseError> {
        if let Some(re) = self.regex()? {
            return Ok(measurement_name(Vec::new(), Some(re)));
        }
        self.qualified_measurement()
    }

    /// A measurement starting with an identifier: `m`, `db.rp.m`, `db../re/`.
    fn qualified_measurement(&mut self) -> Result<MeasurementName, ParseError> {
        let idents = self.segmented_idents()?;
        if idents.len() == 3 {
            return Ok(measurement_name(idents, None));
        }
        let re = self.regex()?;
        Ok(measurement_name(idents, re))
    }

    /// `FROM m, /re/, ...` of `SHOW` statements.
    pub(crate) fn measurements(&mut self) -> Result<Vec<MeasurementName>, ParseError> {
        let mut out = Vec::new();
        loop {
            out.push(self.measurement()?);
            if !self.accept(Kind::Comma) {
                return Ok(out);
            }
        }
    }

    /// `WHERE expr`, if present.
    pub(crate) fn condition(&mut self) -> Result<Option<Expr>, ParseError> {
        if !self.accept_kw(K::WHERE) {
            return Ok(None);
        }
        self.expr().map(Some)
    }

    /// `GROUP BY dimension, ...`, if present.
    fn dimensions(&mut self) -> Result<Vec<Dimension>, ParseError> {
        if !self.accept_kw(K::GROUP) {
            return Ok(Vec::new());
        }
        self.expect_kw(K::BY)?;
        let mut exprs = Vec::new();
        loop {
            match self.regex()? {
                Some(re) => exprs.push(Expr::Literal(Literal::Regex(re))),
                None => {
                    exprs.push(self.expr()?);
                    self.consume_ws();
                }
            }
            if self.scan().kind != Kind::Comma {
                self.unscan();
                break;
            }
        }
        super::dimension::dimensions(exprs)
    }

    /// `fill(null|none|previous|linear|<number>)`, if present.
    fn fill(&mut self) -> Result<Option<Fill>, ParseError> {
        let t = self.peek_ws();
        if t.kind != Kind::Ident || !t.lit.eq_ignore_ascii_case("fill") {
            return Ok(None);
        }
        let Expr::Call { args, .. } = self.expr()? else {
            return Err(ParseError::Invalid("fill must be a function call".into()));
        };
        let [arg] = args.as_slice() else {
            return Err(ParseError::Invalid(
                "fill requires an argument, e.g.: 0, null, none, previous, linear".into(),
            ));
        };
        Ok(Some(match arg.to_string().as_str() {
            "null" => Fill::Null,
            "none" => Fill::None,
            "previous" => Fill::Previous,
            "linear" => Fill::Linear,
            _ => match arg {
                Expr::Literal(l @ (Literal::Integer(_) | Literal::Float(_))) => {
                    Fill::Number(l.clone())
                }
                _ => {
                    return Err(ParseError::Invalid(
                        "expected number argument in fill()".into(),
                    ))
                }
            },
        }))
    }

    /// `ORDER BY time [ASC|DESC]` or `ORDER BY ASC|DESC`, if present: true
    /// for descending. Any other key is refused as InfluxDB refuses it.
    pub(crate) fn order_by(&mut self) -> Result<bool, ParseError> {
        if !self.accept_kw(K::ORDER) {
            return Ok(false);
        }
        self.expect_kw(K::BY)?;
        let only_time = || ParseError::Invalid("only ORDER BY time supported at this time".into());
        let t = self.scan_ws();
        let desc = match t.kind {
            Kind::Kw(K::ASC) => false,
            Kind::Kw(K::DESC) => true,
            Kind::Ident => {
                let desc = self.direction();
                if t.lit != "time" {
                    return Err(only_time());
                }
                desc
            }
            _ => return Err(ParseError::unexpected(&t, &["identifier", "ASC", "DESC"])),
        };
        if self.accept(Kind::Comma) {
            self.ident()?;
            self.direction();
            return Err(only_time());
        }
        Ok(desc)
    }

    /// An optional `ASC` or `DESC` after a sort key: true for `DESC`.
    fn direction(&mut self) -> bool {
        if self.accept_kw(K::DESC) {
            return true;
        }
        self.accept_kw(K::ASC);
        false
    }

    /// `KEYWORD n`, if present; `0` means none, as in InfluxDB.
    pub(crate) fn optional_int(&mut self, kw: K) -> Result<Option<u64>, ParseError> {
        if !self.accept_kw(kw) {
            return Ok(None);
        }
        let t = self.expect(Kind::Integer, &["integer"])?;
        // Like Go's `strconv.ParseInt`, too large saturates.
        let n = t.lit.parse::<i64>().unwrap_or(i64::MAX);
        Ok((n > 0).then_some(n as u64))
    }

    /// `tz('Area/City')`, if present. The name is not checked against a time
    /// zone database here (no I/O in this crate); the planner does.
    fn timezone(&mut self) -> Result<Option<String>, ParseError> {
        let t = self.peek_ws();
        if t.kind != Kind::Ident || !t.lit.eq_ignore_ascii_case("tz") {
            return Ok(None);
        }
        let Expr::Call { args, .. } = self.expr()? else {
            return Err(ParseError::Invalid("tz must be a function call".into()));
        };
        match args.as_slice() {
            [Expr::Literal(Literal::String(name))] => Ok(Some(name.clone())),
            [_] => Err(ParseError::Invalid(
                "expected string argument in tz()".into(),
            )),
            _ => Err(ParseError::Invalid(
                "tz requires exactly one argument".into(),
            )),
        }
    }
}

/// The first comparison or logical operator in a field expression, searched
/// as InfluxDB walks it (the node itself, then left, then right).
fn condition_op(e: &Expr) -> Option<BinaryOp> {
    match e {
        Expr::Binary { op, lhs, rhs } => {
            if super::expr::precedence(*op) <= 3 {
                return Some(*op);
            }
            condition_op(lhs).or_else(|| condition_op(rhs))
        }
        Expr::Paren(inner) => condition_op(inner),
        Expr::Call { args, .. } => args.iter().find_map(condition_op),
        _ => None,
    }
}

/// Segments (`m`; `rp.m`; `db.rp.m`; before a regex: `rp`; `db.rp`) as a name.
fn measurement_name(idents: Vec<String>, re: Option<crate::ast::Regex>) -> MeasurementName {
    let non_empty = |s: String| (!s.is_empty()).then_some(s);
    let mut it = idents.into_iter();
    let (database, retention_policy, name) = match (re, it.len()) {
        (Some(re), 0) => (None, None, NameMatch::Regex(re)),
        (Some(re), 1) => (None, it.next(), NameMatch::Regex(re)),
        (Some(re), _) => (it.next(), it.next(), NameMatch::Regex(re)),
        (None, 1) => (None, None, NameMatch::Name(it.next().unwrap_or_default())),
        (None, 2) => (
            None,
            it.next(),
            NameMatch::Name(it.next().unwrap_or_default()),
        ),
        (None, _) => (
            it.next(),
            it.next(),
            NameMatch::Name(it.next().unwrap_or_default()),
        ),
    };
    MeasurementName {
        database: database.and_then(non_empty),
        retention_policy: retention_policy.and_then(non_empty),
        name,
    }
}
