//! One shared copy of each string value a table's last points hold (tag
//! values above all: TSBS `cpu` has nine tags of 2 to 100 values over its
//! 1,000 hosts).
//!
//! Why: a read copies a point's strings as a count more on each
//! (`Cell::String`), and every count raised is lowered again when the
//! answer is dropped. With a copy a series, TSBS `lastpoint` at 1,000 hosts
//! raised and lowered 9,000 counts, each on a line of its own out of cache:
//! a sixth of the server's samples. Shared, they are ~200 lines, hot.
//!
//! Bounded: a value no point holds any more (its only count is here) is let
//! go when the set has doubled since it was last swept, so the set stays
//! within twice the values held, at a cost spread over the values added.

use std::collections::HashSet;
use std::sync::Arc;

/// Values below this count are never swept (nothing to gain).
const SWEEP_FROM: usize = 1_024;

/// The shared copies (see the module).
#[derive(Debug, Default, Clone)]
pub(super) struct Strings {
    set: HashSet<Arc<str>>,
    /// The set's size after its last sweep.
    swept: usize,
}

impl Strings {
    /// The shared copy of `s`.
    pub(super) fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(shared) = self.set.get(s) {
            return shared.clone();
        }
        if self.set.len() >= SWEEP_FROM.max(2 * self.swept) {
            self.set.retain(|v| Arc::strong_count(v) > 1);
            self.swept = self.set.len();
        }
        let shared: Arc<str> = Arc::from(s);
        self.set.insert(shared.clone());
        shared
    }

    /// Values held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.set.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_share_one_copy() {
        let mut s = Strings::default();
        let a = s.get("x86");
        let b = s.get(&String::from("x86"));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &s.get("x64")));
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn values_no_one_holds_are_let_go_and_the_set_stays_bounded() {
        let mut s = Strings::default();
        // Held: never let go, whatever passes through after.
        let kept: Vec<Arc<str>> = (0..100).map(|i| s.get(&format!("kept{i}"))).collect();
        let mut max = 0;
        for i in 0..100_000 {
            // Each dropped at once: a string field of a new value every row.
            drop(s.get(&format!("gone{i}")));
            max = max.max(s.len());
        }
        assert!(max <= SWEEP_FROM + 1, "{max} values held at most");
        for (i, k) in kept.iter().enumerate() {
            assert!(Arc::ptr_eq(k, &s.get(&format!("kept{i}"))), "kept{i}");
        }
        // Many held at once: the set grows with them, and sweeps keep them.
        let many: Vec<Arc<str>> = (0..10_000).map(|i| s.get(&format!("many{i}"))).collect();
        assert!(s.len() >= 10_100);
        for (i, m) in many.iter().enumerate().step_by(997) {
            assert!(Arc::ptr_eq(m, &s.get(&format!("many{i}"))));
        }
    }
}
