//! Name rules: which database, measurement and column names storage can hold. The one place
//! they are decided (the write path, `CREATE DATABASE`, the catalog and the storage layer all
//! ask here).
//!
//! # Engine facts behind the rules (libchdb 26.7, probed by creating, inserting into, reading
//! and dropping MergeTree tables with each name)
//!
//! * **Reserved columns.** The engine refuses exactly three names as MergeTree columns: its
//!   persistent virtual columns `_row_exists`, `_block_number` and `_block_offset`
//!   (`Cannot create table with column '…' … because it is reserved for persistent virtual
//!   column`, code 44), in `CREATE TABLE` and `ALTER TABLE ADD COLUMN` alike. Every other
//!   virtual-column name (`_part`, `_part_index`, `_part_uuid`, `_partition_id`,
//!   `_partition_value`, `_sample_factor`, `_part_offset`, `_table`, `_database`,
//!   `_shard_num`, `_file`, `_path`, `_size`, `_time`, `_etag`, …) is an ordinary column: a
//!   real column shadows the virtual one, and insert, read and the merged read form work. So
//!   only the three are refused ([`ENGINE_RESERVED_COLUMNS`]); refusing every `_` name would
//!   refuse data InfluxDB accepts. `server/tests/http/door.rs` writes every name of the list
//!   and reads it back, so an engine upgrade that reserves more fails a test.
//! * **Table names are files.** A table's metadata is a file named after the escaped
//!   database and table names (`escapeForFileName`: `[A-Za-z0-9_]` kept, every other byte
//!   `%XX`), and `DROP` renames it to `<db>.<table>.<uuid>.sql`: escaped database plus
//!   escaped table may take at most [`MAX_TABLE_FILE_NAME`] (213) bytes
//!   (`getMaxTableNameLengthForDatabase`; 255 − 42). Verified at the boundary for databases
//!   of 2, 100 (non-ASCII) and 200 escaped bytes: 213 creates, inserts, drops and drops the
//!   database; 214 is refused by the engine.
//! * **Statements are at most 256 KiB** (`max_query_size` = 262144). The flusher's
//!   `CREATE TABLE` lists every column with its type and its `INSERT` every column: a
//!   measurement whose columns' quoted names and types pass the limit can never be created
//!   or inserted into (`Max query size exceeded`, code 62: 1,000 fields of 250 bytes fail,
//!   900 pass). Column counts themselves are not the binding limit (9,000 short columns
//!   create and insert, at 1.6 s per insert), but wide tables are slow, hence a configurable
//!   count as well ([`Limits::max_columns_per_measurement`](crate::Limits)).
//! * **Names must be UTF-8.** Arrow's `Utf8` holds table and column names, so two byte strings
//!   that are not UTF-8 and read the same after lossy conversion (`f\xff`, `f\xfe`) would be
//!   one column of two kinds; they are refused (InfluxDB's `key contains invalid unicode`).
//!   Column names of any length, with spaces, dots, slashes or backticks are held (long
//!   column file names are hashed by the engine).
//! * **No control characters in names.** A NUL in a table or column name is refused by the
//!   engine ("Null byte at position … not allowed in name") when the flush creates it, long
//!   after the write was acknowledged (issue #41); measurement, tag key and field names new
//!   to the catalog with any control character (C0, DEL, C1) are refused at the door, as
//!   database names are: such a name can be neither written back as line protocol nor shown
//!   on one line. Tag and field values hold anything.

use std::fmt;

/// Longest accepted database name in bytes.
pub const MAX_DATABASE_NAME: usize = 255;

/// Most bytes a database name may take as a file name ([`file_name_len`]): the engine keeps
/// the rest of [`MAX_TABLE_FILE_NAME`] (at least 13 bytes) for measurement names.
pub const MAX_DATABASE_FILE_NAME: usize = 200;

/// Most bytes the escaped database and measurement names may take together as file names
/// (the engine's `getMaxTableNameLengthForDatabase`: `NAME_MAX` 255 − 42).
pub const MAX_TABLE_FILE_NAME: usize = 213;

/// Column names the engine keeps for its persistent virtual columns and refuses in a
/// MergeTree table (see the module doc for how this list was established).
pub const ENGINE_RESERVED_COLUMNS: [&str; 3] = ["_row_exists", "_block_number", "_block_offset"];

/// Budget of a measurement's columns in the engine's statements, in bytes of
/// [`column_cost`]: the flusher's `CREATE TABLE` (the longest statement it sends) stays under
/// the engine's 262,144-byte `max_query_size` with room for its fixed text, the quoted
/// database and measurement names and the table settings (< 2 KiB).
pub const MAX_COLUMN_BYTES: usize = 240_000;

/// The bytes of `name` as the engine writes it as a file name: `[A-Za-z0-9_]` as is, every
/// other byte as `%XX`.
pub fn file_name_len(name: &[u8]) -> usize {
    name.iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || b == b'_' {
                1
            } else {
                3
            }
        })
        .sum()
}

/// What one column costs in the flusher's `CREATE TABLE`: the quoted name (backticks, and a
/// backslash before each backtick or backslash), `", "`, a space and the longest type
/// (`LowCardinality(String)`, 22 bytes).
pub fn column_cost(name: &[u8]) -> usize {
    let escapes = name.iter().filter(|&&b| b == b'`' || b == b'\\').count();
    name.len() + escapes + 2 + 2 + 1 + 22
}

/// True if the engine refuses `name` as a column ([`ENGINE_RESERVED_COLUMNS`]).
pub fn is_engine_reserved(name: &[u8]) -> bool {
    name.first() == Some(&b'_') && ENGINE_RESERVED_COLUMNS.iter().any(|r| r.as_bytes() == name)
}

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
    /// The name takes more than [`MAX_DATABASE_FILE_NAME`] bytes as a file name
    /// ([`file_name_len`]).
    FileNameTooLong {
        /// Its length as a file name.
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
            NameErrorKind::FileNameTooLong { len } => write!(
                f,
                "{len} bytes as a file name (every byte but A-Z a-z 0-9 _ takes 3), longer than {MAX_DATABASE_FILE_NAME}"
            ),
            NameErrorKind::ControlCharacter => f.write_str("contains a control character"),
            NameErrorKind::Reserved => f.write_str("reserved"),
        }
    }
}

/// Databases of retention policies other than a database's first are named this, then a
/// number (`__rp_1`): names no user database can have (`__` is reserved).
pub const POLICY_DATABASE_PREFIX: &str = "__rp_";

/// The storage database of `db`'s retention policy `rp`: [`POLICY_DATABASE_PREFIX`] and the
/// XXH3-64 of `db`, a zero byte and `rp`, in decimal. The same on every node, so ingest
/// nodes writing one ClickHouse cluster put a policy's points in the same tables whichever
/// created it (a policy dropped and created again reuses the name: its drop finishes
/// first). Files of earlier releases name policies `__rp_<counter>`, which stay valid.
pub fn policy_database(db: &str, rp: &str) -> String {
    let mut key = Vec::with_capacity(db.len() + 1 + rp.len());
    key.extend_from_slice(db.as_bytes());
    key.push(0);
    key.extend_from_slice(rp.as_bytes());
    format!(
        "{POLICY_DATABASE_PREFIX}{}",
        xxhash_rust::xxh3::xxh3_64(&key)
    )
}

/// Whether `db` is a retention policy's database ([`POLICY_DATABASE_PREFIX`] and digits).
pub fn is_policy_database(db: &str) -> bool {
    db.strip_prefix(POLICY_DATABASE_PREFIX)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Checks a database a write goes to: a user database name ([`check_database`]) or a
/// retention policy's database.
pub fn check_written_database(db: &str) -> Result<(), NameError> {
    if is_policy_database(db) {
        Ok(())
    } else {
        check_database(db)
    }
}

/// Checks a database name: not empty, at most [`MAX_DATABASE_NAME`] bytes and
/// [`MAX_DATABASE_FILE_NAME`] bytes as a file name, no control characters, not reserved.
pub fn check_database(db: &str) -> Result<(), NameError> {
    let kind = if db.is_empty() {
        NameErrorKind::Empty
    } else if db.len() > MAX_DATABASE_NAME {
        NameErrorKind::TooLong { len: db.len() }
    } else if file_name_len(db.as_bytes()) > MAX_DATABASE_FILE_NAME {
        NameErrorKind::FileNameTooLong {
            len: file_name_len(db.as_bytes()),
        }
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

    #[test]
    fn a_policy_database_name_is_the_same_everywhere_and_only_its_policys() {
        let name = policy_database("telegraf", "one_day");
        assert_eq!(name, policy_database("telegraf", "one_day"));
        assert!(is_policy_database(&name), "{name}");
        assert!(check_written_database(&name).is_ok());
        assert!(
            check_database(&name).is_err(),
            "no user database can be named so"
        );
        assert_ne!(name, policy_database("telegraf", "one_week"));
        assert_ne!(name, policy_database("other", "one_day"));
        // The separator keeps ("a", "bc") and ("ab", "c") apart.
        assert_ne!(policy_database("a", "bc"), policy_database("ab", "c"));
    }
    use super::*;

    #[test]
    fn database_names() {
        for ok in ["db", "my db", "telegraf", "_x", "Système", &"a".repeat(200)] {
            assert_eq!(check_database(ok), Ok(()), "{ok:?}");
        }
        let kind = |db: &str| check_database(db).unwrap_err().kind;
        assert_eq!(kind(""), NameErrorKind::Empty);
        assert_eq!(kind(&"a".repeat(256)), NameErrorKind::TooLong { len: 256 });
        // The engine's file-name budget: 201 plain bytes, or 67 non-ASCII two-byte characters.
        assert_eq!(
            kind(&"a".repeat(201)),
            NameErrorKind::FileNameTooLong { len: 201 }
        );
        assert_eq!(
            kind(&"é".repeat(34)),
            NameErrorKind::FileNameTooLong { len: 204 }
        );
        assert_eq!(check_database(&"é".repeat(33)), Ok(()));
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
        assert_eq!(e.kind, NameErrorKind::TooLong { len: 300 });
        assert_eq!(e.name.len(), 64, "the name is kept, cut");
        assert_eq!(
            check_database("__x").unwrap_err().to_string(),
            "invalid database name \"__x\": reserved"
        );
    }
}

#[cfg(test)]
mod engine_tests {
    use super::*;

    #[test]
    fn file_names_escape_all_but_word_characters() {
        for (name, len) in [
            ("cpu", 3),
            ("cpu_1", 5),
            ("cpu-1", 7),
            ("a.b", 5),
            ("é", 6),
            ("", 0),
            ("%", 3),
        ] {
            assert_eq!(file_name_len(name.as_bytes()), len, "{name:?}");
        }
    }

    #[test]
    fn engine_reserved_columns_are_exactly_the_persistent_virtual_ones() {
        for name in ENGINE_RESERVED_COLUMNS {
            assert!(is_engine_reserved(name.as_bytes()), "{name}");
        }
        for name in [
            "_part",
            "_table",
            "row_exists",
            "_row_exists_",
            "_",
            "",
            "time",
        ] {
            assert!(!is_engine_reserved(name.as_bytes()), "{name:?}");
        }
    }

    #[test]
    fn column_cost_counts_quoting_and_the_longest_type() {
        assert_eq!(column_cost(b"f"), 1 + 27);
        assert_eq!(column_cost(b"a`b\\c"), 5 + 2 + 27);
    }
}
