//! InfluxQL for chingest: lexer, parser and statement tree.
//!
//! Brief overview: [`parse_query`] splits a `q` parameter into statements and
//! parses each into an [`ast::Statement`]; errors carry InfluxDB 1.x's wording
//! and position (`found X, expected Y at line 1, char N`). Nothing here reads
//! data or knows the engine: planners in `storage` turn the tree into SQL.
//!
//! Also here: [`parse_duration`]/[`format_duration`] (InfluxQL duration
//! literals and Go's retention format), [`parse_time_literal`] (the strings
//! InfluxDB compares with `time`), `Display` for the tree (InfluxQL text as
//! InfluxDB's `String()` writes it) and [`ast::Expr::column_name`].

pub mod ast;
mod column;
mod display;
mod duration;
mod error;
mod lexer;
mod parser;
mod regex;
mod time;
mod token;

pub use display::{quote_ident, quote_idents, quote_string};
pub use duration::{format_duration, format_duration_literal, parse_duration, DurationError};
pub use error::{ParseError, Pos};
pub use parser::{
    parse_expr, parse_query, parse_statement, MAX_DEPTH, MAX_EXPR_DEPTH, MAX_RETENTION_SECS,
};
pub use time::parse_time_literal;
