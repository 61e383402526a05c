//! Name rules: which database names are accepted. The one place they are decided (the write
//! path, `CREATE DATABASE` and the storage layer all ask here).

use std::fmt;

/// Longest accepted database name in bytes.
pub const MAX_DATABASE_NAME: usize = 255;

/// Names the engine keeps for itself (besides anything starting with `__`).
const RESERVED_DATABASES: [&str; 3] = ["system", "information_schema", "INFORMATION_SCHEMA"];

/// A database name that is refused, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid database name {name:?}: {kind}")]
pub struct NameError {
    /// The name (its first 64 characters).
    pub name: String,
    /// Why it is refused.
    pub kind: NameErrorKind,
}

/// Why a database name is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameErrorKind {
    /// The name is empty.
    Empty,
    /// The name is longer than [`MAX_DATABASE_NAME`] bytes.
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The name contains a control character.
    ControlCharacter,
    /// The name is the engine's (`system`, `information_schema`, `INFORMATION_SCHEMA`) or starts
    /// with `__` (chingest's own tables).
    Reserved,
}

impl fmt::Display for NameErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameErrorKind::Empty => f.write_str("empty"),
            NameErrorKind::TooLong { len } => {
                write!(f, "{len} bytes, longer than {MAX_DATABASE_NAME}")
            }
            NameErrorKind::ControlCharacter => f.write_str("contains a control character"),
            NameErrorKind::Reserved => f.write_str("reserved"),
        }
    }
}

/// Checks a database name: not empty, at most [`MAX_DATABASE_NAME`] bytes, no control
/// characters, not reserved.
pub fn check_database(db: &str) -> Result<(), NameError> {
    let kind = if db.is_empty() {
        NameErrorKind::Empty
    } else if db.len() > MAX_DATABASE_NAME {
        NameErrorKind::TooLong { len: db.len() }
    } else if db.chars().any(char::is_control) {
        NameErrorKind::ControlCharacter
    } else if db.starts_with("__") || RESERVED_DATABASES.contains(&db) {
        NameErrorKind::Reserved
    } else {
        return Ok(());
    };
    Err(NameError {
        name: db.chars().take(64).collect(),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names() {
        for ok in ["db", "my db", "telegraf", "_x", "Système", &"a".repeat(255)] {
            assert_eq!(check_database(ok), Ok(()), "{ok:?}");
        }
        let kind = |db: &str| check_database(db).unwrap_err().kind;
        assert_eq!(kind(""), NameErrorKind::Empty);
        assert_eq!(kind(&"a".repeat(256)), NameErrorKind::TooLong { len: 256 });
        assert_eq!(kind("a\nb"), NameErrorKind::ControlCharacter);
        assert_eq!(kind("a\u{7f}"), NameErrorKind::ControlCharacter);
        for reserved in [
            "__series",
            "__",
            "system",
            "information_schema",
            "INFORMATION_SCHEMA",
        ] {
            assert_eq!(kind(reserved), NameErrorKind::Reserved, "{reserved:?}");
        }
        assert_eq!(
            check_database("System"),
            Ok(()),
            "only the engine's exact names"
        );
        let e = check_database(&"x".repeat(300)).unwrap_err();
        assert_eq!(e.name.len(), 64, "the name is kept, cut");
        assert_eq!(
            check_database("__x").unwrap_err().to_string(),
            "invalid database name \"__x\": reserved"
        );
    }
}
