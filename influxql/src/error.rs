//! Parse errors, worded as InfluxDB 1.x words them after its
//! `error parsing query: ` prefix (which the caller adds).

use std::fmt;

/// A position in the query text: zero-based line and character (characters,
/// not bytes), printed one-based as InfluxDB does (`line 1, char 8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, PartialOrd, Ord)]
pub struct Pos {
    /// Zero-based line.
    pub line: u32,
    /// Zero-based character within the line.
    pub char: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, char {}", self.line + 1, self.char + 1)
    }
}

/// Why a query does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// A token that does not fit the grammar:
    /// `found FROM, expected identifier, string, number, bool at line 1, char 8`.
    #[error("found {found}, expected {} at {pos}", expected.join(", "))]
    Unexpected {
        /// The token found (its text, or its name such as `EOF`).
        found: String,
        /// What the grammar allows there, in InfluxDB's order.
        expected: Vec<String>,
        /// Where the token starts.
        pos: Pos,
    },
    /// A malformed token or clause at a position: `unable to parse number at line 1, char 8`.
    #[error("{message} at {pos}")]
    At {
        /// What is wrong.
        message: String,
        /// Where.
        pos: Pos,
    },
    /// A malformed statement InfluxDB reports without a position:
    /// `invalid duration`, `missing parameter: host`, `fill must be a function call`.
    #[error("{0}")]
    Invalid(String),
    /// A statement that parses but InfluxDB (or chingest) refuses when it
    /// compiles or runs it (`time dimension must have duration argument`,
    /// `retention policy duration must be at least 1h0m0s`). InfluxDB answers
    /// these in the statement's own result (HTTP 200, `results[i].error`, no
    /// `error parsing query` prefix); see [`ParseError::is_statement_error`].
    #[error("{0}")]
    Statement(String),
}

impl ParseError {
    /// `found X, expected ...` for the token `found`.
    pub(crate) fn unexpected(found: &crate::token::Token, expected: &[&str]) -> ParseError {
        ParseError::Unexpected {
            found: found.to_string(),
            expected: expected.iter().map(|s| (*s).to_owned()).collect(),
            pos: found.pos,
        }
    }

    /// `message at line L, char C`.
    pub(crate) fn at(message: impl Into<String>, pos: Pos) -> ParseError {
        ParseError::At {
            message: message.into(),
            pos,
        }
    }

    /// True when InfluxDB would report this as the statement's error
    /// (`results[i].error`, HTTP 200) rather than as `error parsing query: ...`
    /// (HTTP 400).
    pub fn is_statement_error(&self) -> bool {
        matches!(self, ParseError::Statement(_))
    }
}
