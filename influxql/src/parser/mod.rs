//! The parser: tokens to [`Statement`]s, following InfluxDB 1.x's grammar,
//! clause order and error wording. One file per part of the grammar.

mod cq;
mod database;
pub use database::MAX_RETENTION_SECS;
mod dimension;
mod expr;
mod select;
mod show;
mod statement;
mod users;

use std::collections::HashMap;

use crate::ast::{Literal, Statement};
use crate::duration::format_duration_literal;
use crate::error::{ParseError, Pos};
use crate::lexer::{Cursor, Lexer};
use crate::token::{Keyword, Kind, Token};

/// How deep parentheses, calls and subqueries may nest while parsing (a
/// parenthesis or sign counts 1, a call 2, a subquery 8, by their stack use),
/// so that hostile input gets an error instead of exhausting the stack.
pub const MAX_DEPTH: usize = 256;

/// The deepest expression tree the parser builds (a leaf is 1; `a OR b`
/// is 2). Whatever walks trees recursively later (display, planners, drop)
/// can rely on it.
pub const MAX_EXPR_DEPTH: usize = 512;

/// Parses every statement of `q` (separated by `;`, empty ones skipped),
/// substituting `$name` bound parameters from `params`. Surrounding
/// whitespace is trimmed first, as InfluxDB's HTTP handler does (error
/// positions count from the trimmed text, as InfluxDB's do).
pub fn parse_query(
    q: &str,
    params: &HashMap<String, Literal>,
) -> Result<Vec<Statement>, ParseError> {
    Parser::new(q.trim(), params).query()
}

/// Parses exactly one statement (a trailing `;` is allowed).
pub fn parse_statement(s: &str) -> Result<Statement, ParseError> {
    let params = HashMap::new();
    let mut p = Parser::new(s.trim(), &params);
    let stmt = p.statement()?;
    p.accept(Kind::Semicolon);
    p.expect(Kind::Eof, &["EOF"])?;
    Ok(stmt)
}

/// Parses one expression (as in a `WHERE` clause), for tests and tools.
pub fn parse_expr(s: &str) -> Result<crate::ast::Expr, ParseError> {
    let params = HashMap::new();
    let mut p = Parser::new(s, &params);
    let e = p.expr()?;
    p.expect(Kind::Eof, &["EOF"])?;
    Ok(e)
}

/// The parser state: the lexer, the bound parameters and the nesting depth.
pub(crate) struct Parser<'a> {
    lx: Lexer,
    params: &'a HashMap<String, Literal>,
    /// Where the last scanned token started (after any whitespace), for `unscan`.
    last: Cursor,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn new(q: &str, params: &'a HashMap<String, Literal>) -> Parser<'a> {
        let lx = Lexer::new(q);
        let last = lx.cursor();
        Parser {
            lx,
            params,
            last,
            depth: 0,
        }
    }

    /// `statement (; statement)*`, empty statements skipped.
    fn query(&mut self) -> Result<Vec<Statement>, ParseError> {
        let mut out = Vec::new();
        let mut after_semicolon = true;
        loop {
            let t = self.scan_ws();
            match t.kind {
                Kind::Eof => return Ok(out),
                Kind::Semicolon => after_semicolon = true,
                _ if !after_semicolon => return Err(ParseError::unexpected(&t, &[";"])),
                _ => {
                    self.unscan();
                    out.push(self.statement()?);
                    after_semicolon = false;
                }
            }
        }
    }

    /// The next token, whitespace and comments included, bound parameters substituted.
    pub(crate) fn scan(&mut self) -> Token {
        self.last = self.lx.cursor();
        let t = self.lx.scan();
        self.bind(t)
    }

    /// The next token that is not whitespace or a comment.
    pub(crate) fn scan_ws(&mut self) -> Token {
        loop {
            let t = self.scan();
            if !matches!(t.kind, Kind::Ws | Kind::Comment) {
                return t;
            }
        }
    }

    /// Puts the last scanned token back (whitespace before it stays consumed,
    /// as with InfluxDB's scanner).
    pub(crate) fn unscan(&mut self) {
        self.lx.reset(self.last);
    }

    /// The next non-whitespace token, left in place.
    pub(crate) fn peek_ws(&mut self) -> Token {
        let t = self.scan_ws();
        self.unscan();
        t
    }

    /// Consumes the next non-whitespace token if it is `kind`.
    pub(crate) fn accept(&mut self, kind: Kind) -> bool {
        if self.scan_ws().kind == kind {
            true
        } else {
            self.unscan();
            false
        }
    }

    /// Consumes the keyword `kw` if it comes next.
    pub(crate) fn accept_kw(&mut self, kw: Keyword) -> bool {
        self.accept(Kind::Kw(kw))
    }

    /// The next non-whitespace token must be `kind`; `expected` names it in the error.
    pub(crate) fn expect(&mut self, kind: Kind, expected: &[&str]) -> Result<Token, ParseError> {
        let t = self.scan_ws();
        if t.kind == kind {
            Ok(t)
        } else {
            Err(ParseError::unexpected(&t, expected))
        }
    }

    /// The keyword `kw` must come next.
    pub(crate) fn expect_kw(&mut self, kw: Keyword) -> Result<(), ParseError> {
        self.expect(Kind::Kw(kw), &[kw.as_str()]).map(drop)
    }

    /// An identifier (bare or quoted).
    pub(crate) fn ident(&mut self) -> Result<String, ParseError> {
        Ok(self.expect(Kind::Ident, &["identifier"])?.lit)
    }

    /// Skips whitespace (one token's worth, as InfluxDB's `consumeWhitespace`).
    pub(crate) fn consume_ws(&mut self) {
        if self.scan().kind != Kind::Ws {
            self.unscan();
        }
    }

    /// Enters one nesting level, refusing to go deeper than [`MAX_DEPTH`].
    pub(crate) fn enter(&mut self, pos: Pos) -> Result<(), ParseError> {
        self.enter_weighted(pos, 1)
    }

    /// Enters `weight` nesting levels at once.
    pub(crate) fn enter_weighted(&mut self, pos: Pos, weight: usize) -> Result<(), ParseError> {
        self.depth += weight;
        if self.depth > MAX_DEPTH {
            return Err(ParseError::at(
                format!("query nested too deeply (more than {MAX_DEPTH} levels)"),
                pos,
            ));
        }
        Ok(())
    }

    /// Leaves `levels` nesting levels.
    pub(crate) fn leave(&mut self, levels: usize) {
        self.depth -= levels;
    }

    /// Replaces a `$name` token by its bound value, as a token of the value's
    /// kind (so `$host` can stand wherever a literal of that kind can).
    fn bind(&self, t: Token) -> Token {
        if t.kind != Kind::BoundParam {
            return t;
        }
        let Some(value) = self.params.get(&t.lit[1..]) else {
            return t;
        };
        let (kind, lit) = match value {
            Literal::Integer(i) => (Kind::Integer, i.to_string()),
            Literal::Unsigned(u) => (Kind::Integer, u.to_string()),
            Literal::Float(f) => (Kind::Number, format!("{f}")),
            Literal::String(s) => (Kind::Str, s.clone()),
            Literal::Boolean(true) => (Kind::True, String::new()),
            Literal::Boolean(false) => (Kind::False, String::new()),
            Literal::Duration(d) => (Kind::Duration, format_duration_literal(d.0)),
            Literal::Regex(r) => (Kind::Regex, r.0.clone()),
        };
        Token {
            kind,
            pos: t.pos,
            lit,
        }
    }
}

#[cfg(test)]
mod error_texts;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
