//! Drop fences: what `DROP DATABASE` and `DROP MEASUREMENT` discard of the data still on
//! its way to the engine. A drop is stamped with the WAL position it was decided at; every
//! part of what it covers with a sequence at or below that is discarded (buffered, arriving
//! from the WAL, or replayed after a restart), and every later part is kept: it was written
//! after the drop (a re-created database or measurement).

use std::collections::BTreeMap;

/// What a drop covers: a database, or one measurement (table) of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DropScope {
    /// The database.
    pub db: String,
    /// The measurement; `None` for the whole database.
    pub measurement: Option<String>,
}

impl DropScope {
    /// The whole of `db`.
    pub fn database(db: &str) -> DropScope {
        DropScope {
            db: db.to_string(),
            measurement: None,
        }
    }

    /// Measurement `measurement` of `db`.
    pub fn measurement(db: &str, measurement: &str) -> DropScope {
        DropScope {
            db: db.to_string(),
            measurement: Some(measurement.to_string()),
        }
    }

    /// Whether table `(db, measurement)` is inside the scope.
    pub fn covers(&self, db: &str, measurement: &str) -> bool {
        self.db == db && self.measurement.as_deref().is_none_or(|m| m == measurement)
    }
}

/// Every fence in force: scope → the last sequence it discards.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fences(BTreeMap<DropScope, u64>);

impl Fences {
    /// Raises `scope`'s fence to `up_to` (a fence never moves down).
    pub fn raise(&mut self, scope: DropScope, up_to: u64) {
        let e = self.0.entry(scope).or_insert(0);
        *e = (*e).max(up_to);
    }

    /// The highest fence over table `(db, measurement)`: its database's or its own.
    pub fn over(&self, db: &str, measurement: &str) -> Option<u64> {
        let whole = self.0.get(&DropScope::database(db)).copied();
        let table = self
            .0
            .get(&DropScope::measurement(db, measurement))
            .copied();
        whole.max(table)
    }

    /// Whether part `seq` of table `(db, measurement)` was dropped.
    pub fn is_dropped(&self, db: &str, measurement: &str, seq: u64) -> bool {
        self.over(db, measurement).is_some_and(|up_to| seq <= up_to)
    }

    /// Every fence, in scope order.
    pub fn iter(&self) -> impl Iterator<Item = (&DropScope, u64)> {
        self.0.iter().map(|(s, &u)| (s, u))
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<(DropScope, u64)> for Fences {
    fn from_iter<I: IntoIterator<Item = (DropScope, u64)>>(it: I) -> Self {
        let mut f = Fences::default();
        for (s, u) in it {
            f.raise(s, u);
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_fence_covers_its_tables_and_a_table_fence_only_its_own() {
        let f: Fences = [
            (DropScope::database("a"), 10),
            (DropScope::measurement("b", "cpu"), 20),
            (DropScope::measurement("b", "cpu"), 15),
        ]
        .into_iter()
        .collect();
        assert!(f.is_dropped("a", "anything", 10));
        assert!(!f.is_dropped("a", "anything", 11));
        assert!(f.is_dropped("b", "cpu", 20), "a fence never moves down");
        assert!(!f.is_dropped("b", "cpu", 21));
        assert!(!f.is_dropped("b", "mem", 1));
        assert!(!f.is_dropped("c", "cpu", 1));
        assert!(DropScope::database("b").covers("b", "mem"));
        assert!(!DropScope::measurement("b", "cpu").covers("b", "mem"));
        assert!(!DropScope::measurement("b", "cpu").covers("bb", "cpu"));
    }
}
