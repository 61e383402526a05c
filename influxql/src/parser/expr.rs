//! Expressions: operators by InfluxQL precedence, literals, names with
//! `::type` casts, calls, wildcards and regexes.

use super::{Parser, MAX_EXPR_DEPTH};
use crate::ast::{BinaryOp, DataType, Duration, Expr, Literal, Regex};
use crate::duration::{parse_duration, DurationError};
use crate::error::{ParseError, Pos};
use crate::token::{Keyword as K, Kind, Token};

const UNARY_EXPECTED: &[&str] = &["identifier", "string", "number", "bool"];

/// The binary operator a token stands for.
fn binary_op(kind: Kind) -> Option<BinaryOp> {
    Some(match kind {
        Kind::Or => BinaryOp::Or,
        Kind::And => BinaryOp::And,
        Kind::Eq => BinaryOp::Eq,
        Kind::Neq => BinaryOp::NotEq,
        Kind::Lt => BinaryOp::Lt,
        Kind::Lte => BinaryOp::LtEq,
        Kind::Gt => BinaryOp::Gt,
        Kind::Gte => BinaryOp::GtEq,
        Kind::EqRegex => BinaryOp::EqRegex,
        Kind::NeqRegex => BinaryOp::NotEqRegex,
        Kind::Add => BinaryOp::Add,
        Kind::Sub => BinaryOp::Sub,
        Kind::Mul => BinaryOp::Mul,
        Kind::Div => BinaryOp::Div,
        Kind::Mod => BinaryOp::Mod,
        Kind::BitAnd => BinaryOp::BitAnd,
        Kind::BitOr => BinaryOp::BitOr,
        Kind::BitXor => BinaryOp::BitXor,
        _ => return None,
    })
}

impl Parser<'_> {
    /// An expression: unary expressions joined by binary operators, grouped by
    /// precedence, left to right among equals.
    pub(crate) fn expr(&mut self) -> Result<Expr, ParseError> {
        let mut root = self.unary()?;
        let mut shape = Spine::new(depth(&root));
        loop {
            let t = self.scan_ws();
            let Some(op) = binary_op(t.kind) else {
                self.unscan();
                if shape.depth_at(0) > MAX_EXPR_DEPTH {
                    return Err(too_deep(t.pos));
                }
                return Ok(root);
            };
            let rhs = if matches!(op, BinaryOp::EqRegex | BinaryOp::NotEqRegex) {
                match self.regex()? {
                    Some(re) => Expr::Literal(Literal::Regex(re)),
                    None => return Err(ParseError::unexpected(&self.scan_ws(), &["regex"])),
                }
            } else {
                self.unary()?
            };
            if shape.insert(precedence(op), depth(&rhs)) > MAX_EXPR_DEPTH {
                return Err(too_deep(t.pos));
            }
            insert(&mut root, op, rhs);
        }
    }

    /// A unary expression: a parenthesised expression, a call, a name, a
    /// literal, a wildcard, or a signed number, duration or expression.
    pub(crate) fn unary(&mut self) -> Result<Expr, ParseError> {
        let t = self.scan_ws();
        match t.kind {
            Kind::LParen => {
                self.enter(t.pos)?;
                let e = self.expr()?;
                self.leave(1);
                self.expect(Kind::RParen, &[")"])?;
                Ok(Expr::Paren(Box::new(e)))
            }
            Kind::Ident => {
                let ident_start = self.last;
                if self.scan().kind == Kind::LParen {
                    return self.call(&t.lit, t.pos);
                }
                self.lx.reset(ident_start);
                self.var_ref()
            }
            Kind::Kw(K::DISTINCT) => self.distinct(t.pos),
            Kind::Str => Ok(Expr::Literal(Literal::String(t.lit))),
            Kind::Number => match t.lit.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(Expr::Literal(Literal::Float(f))),
                _ => Err(ParseError::at("unable to parse number", t.pos)),
            },
            Kind::Integer => integer(&t),
            Kind::True => Ok(Expr::Literal(Literal::Boolean(true))),
            Kind::False => Ok(Expr::Literal(Literal::Boolean(false))),
            Kind::Duration => Ok(Expr::Literal(Literal::Duration(Duration(duration(
                &t.lit,
            )?)))),
            Kind::Mul => self.wildcard(),
            Kind::Regex => Ok(Expr::Literal(Literal::Regex(self.valid_regex(&t)?))),
            Kind::BoundParam => Err(unbound(&t)),
            Kind::Add | Kind::Sub => self.signed(t.kind == Kind::Sub),
            _ => Err(ParseError::unexpected(&t, UNARY_EXPECTED)),
        }
    }

    /// `+x` / `-x` (the sign consumed): literals are negated, anything else
    /// becomes `-1 * x` (`1 * x` for `+`), as InfluxDB does.
    fn signed(&mut self, negative: bool) -> Result<Expr, ParseError> {
        let t = self.scan_ws();
        if !matches!(
            t.kind,
            Kind::Number | Kind::Integer | Kind::Duration | Kind::LParen | Kind::Ident
        ) {
            return Err(ParseError::unexpected(
                &t,
                &["identifier", "number", "duration", "("],
            ));
        }
        self.unscan();
        self.enter(t.pos)?;
        let e = self.unary();
        self.leave(1);
        let sign = if negative { -1 } else { 1 };
        Ok(match e? {
            Expr::Literal(Literal::Float(f)) => Expr::Literal(Literal::Float(f * f64::from(sign))),
            Expr::Literal(Literal::Integer(i)) => Expr::Literal(Literal::Integer(i * sign as i64)),
            Expr::Literal(Literal::Duration(d)) => {
                Expr::Literal(Literal::Duration(Duration(d.0 * sign as i64)))
            }
            Expr::Literal(Literal::Unsigned(u)) if negative => {
                if u == 1u64 << 63 {
                    Expr::Literal(Literal::Integer(i64::MIN))
                } else {
                    return Err(ParseError::Invalid(format!(
                        "constant -{u} underflows int64"
                    )));
                }
            }
            e @ Expr::Literal(Literal::Unsigned(_)) => e,
            other => Expr::Binary {
                op: BinaryOp::Mul,
                lhs: Box::new(Expr::Literal(Literal::Integer(sign as i64))),
                rhs: Box::new(other),
            },
        })
    }

    /// `*`, `*::field` or `*::tag` (the `*` consumed).
    fn wildcard(&mut self) -> Result<Expr, ParseError> {
        if self.scan().kind != Kind::DoubleColon {
            self.unscan();
            return Ok(Expr::Wildcard(None));
        }
        let t = self.scan();
        match t.kind {
            Kind::Kw(K::FIELD) => Ok(Expr::Wildcard(Some(DataType::Field))),
            Kind::Kw(K::TAG) => Ok(Expr::Wildcard(Some(DataType::Tag))),
            _ => Err(ParseError::unexpected(&t, &["field", "tag"])),
        }
    }

    /// `DISTINCT(x)` or `DISTINCT x` (the keyword consumed), both as the call `distinct(x)`.
    fn distinct(&mut self, pos: Pos) -> Result<Expr, ParseError> {
        let t = self.scan();
        match t.kind {
            Kind::LParen => self.call("distinct", pos),
            Kind::Ws => {
                let t = self.scan_ws();
                if t.kind != Kind::Ident {
                    return Err(ParseError::unexpected(&t, &["identifier"]));
                }
                Ok(Expr::Call {
                    name: "distinct".into(),
                    args: vec![Expr::VarRef {
                        name: t.lit,
                        data_type: None,
                    }],
                })
            }
            _ => Err(ParseError::unexpected(&t, &["(", "identifier"])),
        }
    }

    /// A name (`host`, `"db"."rp"."m"` joined with dots) with an optional `::type`.
    pub(crate) fn var_ref(&mut self) -> Result<Expr, ParseError> {
        let name = self.segmented_idents()?.join(".");
        if self.scan().kind != Kind::DoubleColon {
            self.unscan();
            return Ok(Expr::VarRef {
                name,
                data_type: None,
            });
        }
        let t = self.scan();
        let data_type = match t.kind {
            Kind::Ident => match t.lit.to_ascii_lowercase().as_str() {
                "float" => DataType::Float,
                "integer" => DataType::Integer,
                "unsigned" => DataType::Unsigned,
                "string" => DataType::String,
                "boolean" => DataType::Boolean,
                _ => {
                    return Err(ParseError::unexpected(
                        &t,
                        &[
                            "float", "integer", "unsigned", "string", "boolean", "field", "tag",
                        ],
                    ))
                }
            },
            Kind::Kw(K::FIELD) => DataType::Field,
            Kind::Kw(K::TAG) => DataType::Tag,
            _ => {
                return Err(ParseError::unexpected(
                    &t,
                    &["float", "integer", "string", "boolean", "field", "tag"],
                ))
            }
        };
        Ok(Expr::VarRef {
            name,
            data_type: Some(data_type),
        })
    }

    /// `a`, `a.b`, `a.b.c`, `a..c`: at most three dot-separated identifiers;
    /// stops before a `/regex/` or `:` that follows a dot.
    pub(crate) fn segmented_idents(&mut self) -> Result<Vec<String>, ParseError> {
        let mut idents = vec![self.ident()?];
        loop {
            if self.scan().kind != Kind::Dot {
                self.unscan();
                break;
            }
            match self.lx.peek_rune() {
                Some('/' | ':') => break,
                Some('.') => idents.push(String::new()),
                _ => idents.push(self.ident()?),
            }
        }
        if idents.len() > 3 {
            let quoted = crate::display::quote_idents(&idents);
            return Err(ParseError::at(
                format!("too many segments in {quoted}"),
                Pos::default(),
            ));
        }
        Ok(idents)
    }

    /// `name(args...)` (name and `(` consumed): arguments are regexes or expressions.
    pub(crate) fn call(&mut self, name: &str, pos: Pos) -> Result<Expr, ParseError> {
        // A call's parse frames are about twice a parenthesis's.
        self.enter_weighted(pos, 2)?;
        let result = self.call_args();
        self.leave(2);
        Ok(Expr::Call {
            name: name.to_ascii_lowercase(),
            args: result?,
        })
    }

    fn call_args(&mut self) -> Result<Vec<Expr>, ParseError> {
        let mut args = Vec::new();
        match self.regex()? {
            Some(re) => args.push(Expr::Literal(Literal::Regex(re))),
            None => {
                if self.scan().kind == Kind::RParen {
                    return Ok(args);
                }
                self.unscan();
                args.push(self.expr()?);
            }
        }
        while self.accept(Kind::Comma) {
            match self.regex()? {
                Some(re) => args.push(Expr::Literal(Literal::Regex(re))),
                None => args.push(self.expr()?),
            }
        }
        let t = self.scan();
        if t.kind != Kind::RParen {
            return Err(ParseError::unexpected(&t, &[")"]));
        }
        Ok(args)
    }

    /// A `/regex/` if one comes next (after whitespace), else nothing consumed
    /// but the whitespace. A bound parameter holding a regex counts.
    pub(crate) fn regex(&mut self) -> Result<Option<Regex>, ParseError> {
        if self
            .lx
            .peek_rune()
            .is_some_and(|c| matches!(c, ' ' | '\t' | '\n'))
        {
            self.consume_ws();
        }
        let t = match self.lx.peek_rune() {
            Some('$') => {
                let t = self.scan();
                if t.kind != Kind::Regex {
                    self.unscan();
                    return Ok(None);
                }
                t
            }
            Some('/') => {
                self.last = self.lx.cursor();
                self.lx.scan_regex()
            }
            _ => return Ok(None),
        };
        match t.kind {
            Kind::Regex => self.valid_regex(&t).map(Some),
            _ => Err(ParseError::at(format!("bad regex: {}", t.lit), t.pos)),
        }
    }

    /// A regex token's text, checked to compile as InfluxDB (RE2 syntax) would.
    fn valid_regex(&self, t: &Token) -> Result<Regex, ParseError> {
        crate::regex::check(&t.lit).map_err(|message| ParseError::at(message, t.pos))?;
        Ok(Regex(t.lit.clone()))
    }
}

/// The shape of the right spine of an expression being built, enough to know
/// its depth after each operator without walking it: along the spine
/// precedence strictly increases, so it is at most five nodes long.
struct Spine {
    /// Per spine node, top down: its operator's precedence and its left side's depth.
    nodes: Vec<(u8, usize)>,
    /// The depth of the last right-hand operand.
    tail: usize,
}

impl Spine {
    fn new(first: usize) -> Spine {
        Spine {
            nodes: Vec::new(),
            tail: first,
        }
    }

    /// The depth of the subtree at spine position `k`.
    fn depth_at(&self, k: usize) -> usize {
        self.nodes[k..]
            .iter()
            .rev()
            .fold(self.tail, |below, &(_, lhs)| 1 + lhs.max(below))
    }

    /// Adds an operator as [`insert`] does; returns the new tree depth.
    fn insert(&mut self, prec: u8, rhs_depth: usize) -> usize {
        let k = self
            .nodes
            .iter()
            .position(|&(p, _)| p >= prec)
            .unwrap_or(self.nodes.len());
        let lhs = self.depth_at(k);
        self.nodes.truncate(k);
        self.nodes.push((prec, lhs));
        self.tail = rhs_depth;
        self.depth_at(0)
    }
}

/// The depth of a tree (a leaf is 1), walked without recursion.
pub(crate) fn depth(e: &Expr) -> usize {
    let mut max = 0;
    let mut stack = vec![(e, 1usize)];
    while let Some((e, d)) = stack.pop() {
        max = max.max(d);
        match e {
            Expr::Binary { lhs, rhs, .. } => {
                stack.push((lhs, d + 1));
                stack.push((rhs, d + 1));
            }
            Expr::Paren(inner) => stack.push((inner, d + 1)),
            Expr::Call { args, .. } => stack.extend(args.iter().map(|a| (a, d + 1))),
            _ => {}
        }
    }
    max
}

/// Adds `op rhs` to the tree rooted at `root`: descends the right spine past
/// operators binding tighter than `op`, then makes `op` the new node there
/// (InfluxDB's algorithm; equal precedence groups to the left).
fn insert(root: &mut Expr, op: BinaryOp, rhs: Expr) {
    let mut slot = root;
    while matches!(slot, Expr::Binary { op: o, .. } if precedence(*o) < precedence(op)) {
        let Expr::Binary { rhs: next, .. } = slot else {
            unreachable!("checked above");
        };
        slot = next.as_mut();
    }
    let lhs = std::mem::replace(slot, Expr::Wildcard(None));
    *slot = Expr::Binary {
        op,
        lhs: Box::new(lhs),
        rhs: Box::new(rhs),
    };
}

fn too_deep(pos: Pos) -> ParseError {
    ParseError::at(
        format!("expression nested too deeply (more than {MAX_EXPR_DEPTH} levels)"),
        pos,
    )
}

/// InfluxQL's operator precedence (higher binds tighter).
pub(crate) fn precedence(op: BinaryOp) -> u8 {
    match op {
        BinaryOp::Or => 1,
        BinaryOp::And => 2,
        BinaryOp::Eq
        | BinaryOp::NotEq
        | BinaryOp::EqRegex
        | BinaryOp::NotEqRegex
        | BinaryOp::Lt
        | BinaryOp::LtEq
        | BinaryOp::Gt
        | BinaryOp::GtEq => 3,
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::BitOr | BinaryOp::BitXor => 4,
        BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod | BinaryOp::BitAnd => 5,
    }
}

/// An integer literal: `i64`, or `u64` when too large for `i64`.
fn integer(t: &Token) -> Result<Expr, ParseError> {
    if let Ok(i) = t.lit.parse::<i64>() {
        return Ok(Expr::Literal(Literal::Integer(i)));
    }
    match t.lit.parse::<u64>() {
        Ok(u) => Ok(Expr::Literal(Literal::Unsigned(u))),
        Err(_) => Err(ParseError::at("unable to parse integer", t.pos)),
    }
}

/// A duration literal in an expression (errors carry no position, as in InfluxDB).
fn duration(lit: &str) -> Result<i64, ParseError> {
    parse_duration(lit).map_err(|e: DurationError| ParseError::Invalid(e.to_string()))
}

/// A `$name` left unbound where a value is needed.
fn unbound(t: &Token) -> ParseError {
    let name = &t.lit[1..];
    if name.is_empty() {
        ParseError::Invalid("empty bound parameter".into())
    } else {
        ParseError::Invalid(format!("missing parameter: {name}"))
    }
}
