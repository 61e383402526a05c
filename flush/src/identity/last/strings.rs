//! One shared string per distinct value of a column in the kept last
//! points: a tag's values repeat over the series (TSBS `lastpoint` at 1,000
//! hosts: nine tags of a few to a hundred values each), and an answer
//! whose equal cells are one string lets the renderer write each value's
//! JSON once and copy it after (`server`'s `render/shared.rs`).
//!
//! On the flusher's path (one lookup per kept string cell): a hash of the
//! value and at most one comparison, O(1) per point; what misses allocates
//! as before. Bounded: a column keeps at most [`MAX_VALUES`] strings, so a
//! column of unique values (a hostname, a string field) costs at most that
//! many kept strings; past it, values are allocated each (no lookup pays).

use std::collections::HashSet;
use std::sync::Arc;

/// Distinct values kept per column.
const MAX_VALUES: usize = 1024;

/// The shared strings of each column of one table's last points.
#[derive(Debug, Default)]
pub(super) struct Strings {
    columns: Vec<HashSet<Arc<str>>>,
}

impl Strings {
    /// Column `column`'s shared string equal to `s`, made if there is room.
    pub(super) fn get(&mut self, column: usize, s: &str) -> Arc<str> {
        if self.columns.len() <= column {
            self.columns.resize_with(column + 1, HashSet::new);
        }
        let values = &mut self.columns[column];
        if let Some(kept) = values.get(s) {
            return Arc::clone(kept);
        }
        let made: Arc<str> = s.into();
        if values.len() < MAX_VALUES {
            values.insert(Arc::clone(&made));
        }
        made
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_of_a_column_are_one_string() {
        let mut strings = Strings::default();
        let a = strings.get(3, "us-west-1");
        let b = strings.get(3, &String::from("us-west-1"));
        assert!(Arc::ptr_eq(&a, &b));
        // Another column's equal value is its own.
        let c = strings.get(0, "us-west-1");
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(&*c, "us-west-1");
    }

    #[test]
    fn a_full_column_allocates_past_its_bound() {
        let mut strings = Strings::default();
        for i in 0..MAX_VALUES {
            strings.get(0, &i.to_string());
        }
        let kept = strings.get(0, "7");
        assert!(Arc::ptr_eq(&kept, &strings.get(0, "7")));
        let past = strings.get(0, "new");
        assert!(!Arc::ptr_eq(&past, &strings.get(0, "new")));
        assert_eq!(strings.columns[0].len(), MAX_VALUES);
    }
}
