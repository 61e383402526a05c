//! A shard server's ClickHouse version (`SELECT version()`), and what it decides about the
//! statements sent to it (issue #43). Debian's 18.16 is the oldest supported and keeps the
//! statements it always had; a newer server gets a newer form only where the old one is
//! wrong there.

use std::fmt;

/// A server's `major.minor` (`18.16.1` → 18.16; `24.8.4.13` → 24.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ServerVersion {
    /// The year-like major number (18, 20, 24, …).
    pub major: u32,
    /// The minor number.
    pub minor: u32,
}

impl ServerVersion {
    /// Debian's 18.16, the oldest server chingest is tested against.
    pub const OLDEST_TESTED: ServerVersion = ServerVersion {
        major: 18,
        minor: 16,
    };

    /// `version()`'s answer read (`None`: not a version).
    pub fn parse(text: &str) -> Option<ServerVersion> {
        let mut numbers = text.trim().split('.');
        let major = numbers.next()?.parse().ok()?;
        let minor = numbers.next()?.parse().ok()?;
        Some(ServerVersion { major, minor })
    }

    /// Whether new databases are `Atomic` (20.10 and later): a dropped table's data, and a
    /// replicated table's replica in ZooKeeper, go only some minutes after a `DROP`
    /// (`database_atomic_delay_before_drop_table_sec`) unless it says `SYNC` — a table made
    /// again at the same ZooKeeper path meanwhile fails with `REPLICA_ALREADY_EXISTS`.
    pub fn atomic_databases(self) -> bool {
        self >= ServerVersion {
            major: 20,
            minor: 10,
        }
    }

    /// Whether the tag columns of the shard tables this server makes are
    /// `LowCardinality(String)` (20.1 and later), as a tag's few distinct values per part
    /// are best stored: dictionary-encoded, smaller on disk, faster to filter and group by.
    /// LowCardinality is a plain type, usable without a setting, on every 20.x and later
    /// server (<https://clickhouse.com/docs/sql-reference/data-types/lowcardinality>); 18.16
    /// has it only behind `allow_experimental_low_cardinality_type`, and 19.x is neither
    /// tested nor gated in, so its tags stay `String`. Reads cast every tag to `String`
    /// (`read.rs`), and an insert's `String` tags are converted by the server (its `Native`
    /// input reads a block into the table's types), so only the `CREATE TABLE` and
    /// `ADD COLUMN` differ; a table made as `String` before an upgrade stays so.
    pub fn low_cardinality_tags(self) -> bool {
        self >= ServerVersion {
            major: 20,
            minor: 1,
        }
    }

    /// What ends a `DROP TABLE` or `DROP DATABASE` on this server: ` SYNC` where a drop is
    /// otherwise deferred ([`atomic_databases`](Self::atomic_databases)), nothing on older
    /// servers (18.16 drops at once and has no `SYNC`).
    pub(crate) fn drop_suffix(self) -> &'static str {
        if self.atomic_databases() {
            " SYNC"
        } else {
            ""
        }
    }
}

impl fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_and_ordered_by_major_then_minor() {
        let v = |t| ServerVersion::parse(t).unwrap();
        assert_eq!(v("18.16.1\n"), ServerVersion::OLDEST_TESTED);
        assert_eq!(v("24.8.4.13").to_string(), "24.8");
        assert!(v("20.9.7.11") < v("20.10.2.20"));
        assert!(!v("18.16.1").atomic_databases());
        assert!(!v("20.9.7.11").atomic_databases());
        assert!(v("20.10.2.20").atomic_databases());
        assert!(v("25.8.2.29").atomic_databases());
        assert_eq!(v("18.16.1").drop_suffix(), "");
        assert_eq!(v("26.7.1.1").drop_suffix(), " SYNC");
        assert!(!v("18.16.1").low_cardinality_tags());
        assert!(!v("19.17.9.60").low_cardinality_tags());
        assert!(v("20.1.2.4").low_cardinality_tags());
        assert!(v("24.8.4.13").low_cardinality_tags());
        for bad in ["", "x", "18", "18.x", "v24.8"] {
            assert_eq!(ServerVersion::parse(bad), None, "{bad}");
        }
    }
}
