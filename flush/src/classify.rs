//! Which flush failures are worth retrying.
//!
//! The engine names its errors (`… (TOO_MANY_PARTS)`, `… (ILLEGAL_COLUMN)`): a statement the
//! engine refuses for what it *is* (a reserved or unusable column name, a statement past the
//! engine's size limits, a type it cannot convert) fails the same way however often it is
//! retried, while a busy, full or slow engine recovers. The first kind is
//! [`FailureClass::Deterministic`]: the coordinator isolates the parts that cause it and sets
//! them aside as dead letters (quarantine) instead of retrying them forever. The second is
//! [`FailureClass::Transient`]: retried with back-off, never quarantined (a full disk must not
//! quarantine every table). Anything else is [`FailureClass::Unknown`]: retried, and treated as
//! deterministic once it has failed the same way `quarantine_after_failures` times in a row.

use engine::EngineError;

/// How a flush failure is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    /// Retried with back-off, forever (engine busy, memory, disk, I/O, timeouts).
    Transient,
    /// Fails the same way every time: isolated and quarantined.
    Deterministic,
    /// Retried; quarantined once it repeats `quarantine_after_failures` times.
    Unknown,
}

/// Engine error names that describe the statement or the data, not the engine's state.
const DETERMINISTIC: &[&str] = &[
    "ILLEGAL_COLUMN",
    "SYNTAX_ERROR",
    "QUERY_IS_TOO_LARGE",
    "TOO_MANY_COLUMNS",
    "TOO_BIG_AST",
    "TOO_DEEP_AST",
    "TOO_DEEP_RECURSION",
    "TYPE_MISMATCH",
    "CANNOT_CONVERT_TYPE",
    "CANNOT_PARSE_TEXT",
    "CANNOT_PARSE_NUMBER",
    "CANNOT_PARSE_BOOL",
    "CANNOT_PARSE_DATETIME",
    "ILLEGAL_TYPE_OF_ARGUMENT",
    "ILLEGAL_TYPE_OF_COLUMN_FOR_FILTER",
    "DUPLICATE_COLUMN",
    "UNKNOWN_IDENTIFIER",
    "NUMBER_OF_COLUMNS_DOESNT_MATCH",
    "INCOMPATIBLE_COLUMNS",
    "BAD_ARGUMENTS",
    "UNKNOWN_TYPE",
    "INCORRECT_QUERY",
    "VIOLATED_CONSTRAINT",
    "CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN",
    "ARGUMENT_OUT_OF_BOUND",
    "DECIMAL_OVERFLOW",
    "VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE",
    "TOO_LARGE_STRING_SIZE",
    "TOO_LARGE_ARRAY_SIZE",
    "BAD_TYPE_OF_FIELD",
    "ILLEGAL_COLUMN_NAME",
];

/// Engine error names of a busy, full, slow or restarting engine.
const TRANSIENT: &[&str] = &[
    "TOO_MANY_PARTS",
    "TOO_MANY_SIMULTANEOUS_QUERIES",
    "MEMORY_LIMIT_EXCEEDED",
    "CANNOT_ALLOCATE_MEMORY",
    "TIMEOUT_EXCEEDED",
    "SOCKET_TIMEOUT",
    "NOT_ENOUGH_SPACE",
    "CANNOT_WRITE_TO_FILE_DESCRIPTOR",
    "CANNOT_WRITE_TO_OSTREAM",
    "CANNOT_FSYNC",
    "CANNOT_OPEN_FILE",
    "CANNOT_READ_FROM_FILE_DESCRIPTOR",
    "CANNOT_CLOSE_FILE",
    "CANNOT_TRUNCATE_FILE",
    "CANNOT_SCHEDULE_TASK",
    "ABORTED",
    "QUERY_WAS_CANCELLED",
    "TABLE_IS_READ_ONLY",
    "TABLE_IS_DROPPED",
    "UNKNOWN_TABLE",
    "UNKNOWN_DATABASE",
    "NO_SUCH_COLUMN_IN_TABLE",
    "THERE_IS_NO_COLUMN",
    "NOT_FOUND_COLUMN_IN_BLOCK",
    "LOGICAL_ERROR",
    "CORRUPTED_DATA",
    "CHECKSUM_DOESNT_MATCH",
    // chingest's own: a shard of the ClickHouse cluster does not answer (`cluster`).
    "CLUSTER_UNREACHABLE",
];

/// The engine's error name: the last `(UPPER_CASE_NAME)` of the message.
pub fn error_name(message: &str) -> Option<&str> {
    let end = message.rfind(')')?;
    let start = message[..end].rfind('(')? + 1;
    let name = &message[start..end];
    (!name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'))
    .then_some(name)
}

/// How a failure of a flush job is handled.
pub fn classify(e: &EngineError) -> FailureClass {
    match e {
        EngineError::Query { message, .. } => {
            if message.contains("No space left") || message.contains("errno: 28") {
                return FailureClass::Transient;
            }
            match error_name(message) {
                Some(n) if DETERMINISTIC.contains(&n) => FailureClass::Deterministic,
                Some(n) if TRANSIENT.contains(&n) => FailureClass::Transient,
                _ => FailureClass::Unknown,
            }
        }
        // Two batches of one measurement with one column name of two kinds (coalescing).
        EngineError::Arrow(m) if m.contains(" in one batch and ") => FailureClass::Deterministic,
        // A panic, a failed Arrow hand-off: retried, quarantined if it keeps happening.
        EngineError::Arrow(_) => FailureClass::Unknown,
        EngineError::ShutDown | EngineError::Open { .. } | EngineError::PathConflict { .. } => {
            FailureClass::Transient
        }
        // `EngineError` is non-exhaustive (another crate's): a kind added there later is
        // retried, and quarantined if it keeps failing the same way.
        _ => FailureClass::Unknown,
    }
}

/// What "fails the same way" compares: the engine's error name, else the message with its
/// numbers (sequence numbers, positions, sizes) removed.
pub fn signature(e: &EngineError) -> String {
    match e {
        EngineError::Query { message, .. } => match error_name(message) {
            Some(n) => n.to_string(),
            None => message.chars().filter(|c| !c.is_ascii_digit()).collect(),
        },
        other => other
            .to_string()
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(message: &str) -> EngineError {
        EngineError::Query {
            statement: "INSERT …".into(),
            message: message.into(),
        }
    }

    #[test]
    fn the_engines_own_messages_classify() {
        // Verbatim from libchdb 26.7.3 (flush/tests/it/quarantine.rs produces them).
        let cases = [
            ("Code: 44. DB::Exception: Cannot add column `_row_exists`: this column name is reserved for persistent virtual column. (ILLEGAL_COLUMN)", FailureClass::Deterministic),
            ("Code: 62. DB::Exception: Max query size exceeded (can be increased with the `max_query_size` setting): Syntax error: failed at position 262145 ( ):  . . (SYNTAX_ERROR)", FailureClass::Deterministic),
            ("Code: 47. DB::Exception: Unknown expression identifier `__seq` in scope SELECT … (UNKNOWN_IDENTIFIER)", FailureClass::Deterministic),
            ("Code: 252. DB::Exception: Too many parts (3001) in table. Merges are processing significantly slower than inserts (TOO_MANY_PARTS)", FailureClass::Transient),
            ("Code: 241. DB::Exception: Memory limit (total) exceeded: would use 3.5 GiB (MEMORY_LIMIT_EXCEEDED)", FailureClass::Transient),
            ("Code: 243. DB::Exception: Cannot reserve 1.00 MiB, not enough space. (NOT_ENOUGH_SPACE)", FailureClass::Transient),
            ("Code: 74. DB::ErrnoException: Cannot write to file x, errno: 28, strerror: No space left on device", FailureClass::Transient),
            ("Code: 1001. DB::Exception: something new. (STD_EXCEPTION)", FailureClass::Unknown),
            ("no name at all", FailureClass::Unknown),
        ];
        for (m, class) in cases {
            assert_eq!(classify(&q(m)), class, "{m}");
        }
        assert_eq!(
            classify(&EngineError::Arrow(
                "column \"f\" is Float in one batch and String in another".into()
            )),
            FailureClass::Deterministic
        );
        assert_eq!(
            classify(&EngineError::Arrow("flush job panicked: x".into())),
            FailureClass::Unknown
        );
    }

    #[test]
    fn the_signature_ignores_numbers() {
        assert_eq!(signature(&q("x (TOO_MANY_PARTS)")), "TOO_MANY_PARTS");
        assert_eq!(
            signature(&EngineError::Arrow("flush job panicked at seq 12".into())),
            signature(&EngineError::Arrow("flush job panicked at seq 13".into()))
        );
        assert_eq!(error_name("a (b) (LOWER_case)"), None);
    }
}
