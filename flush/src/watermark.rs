//! The flushed watermark: the last sequence of the contiguous prefix of
//! entries all of whose parts are in the engine, and the [`FlushedLog`] it is
//! reported to.
//!
//! Distinct measurements flush in parallel, so entries complete out of order;
//! the watermark only moves over a gap-free prefix. Entries with no part to
//! insert (empty, skipped by replay, dropped) count as done at once, as do the
//! sequences the caller said will never arrive ([`crate::Resume::skip`]).

use std::collections::{BTreeSet, HashMap};
use std::ops::RangeInclusive;

use crate::error::MarkError;

/// Where the flusher reports its watermark: the write-ahead log, which may
/// then forget every entry at or below it. flush does not know the WAL; the
/// storage layer implements this for it (a newtype around the WAL).
pub trait FlushedLog: Send + Sync + 'static {
    /// Durably records that every entry with a sequence `<= seq` is in the
    /// engine. Called from the flusher's coordinator thread with increasing
    /// `seq`; a failure is logged and the next advance covers it.
    fn mark_flushed(&self, seq: u64) -> Result<(), MarkError>;

    /// Durably sets `letters` aside (quarantine): parts the engine refuses deterministically.
    /// Called from the coordinator before the parts count as done, so the watermark only passes
    /// them once they are safe elsewhere. A failure keeps them in the flusher, retried later.
    /// The default has no dead-letter store and always fails: such a log keeps retrying
    /// refused parts, as flushers before quarantine did.
    fn dead_letter(&self, letters: &[crate::DeadLetter]) -> Result<(), MarkError> {
        let _ = letters;
        Err(MarkError::new("this log keeps no dead letters"))
    }
}

/// Which sequences are wholly in the engine, and the contiguous prefix.
pub(crate) struct Watermark {
    /// Last sequence of the contiguous flushed prefix.
    flushed: u64,
    /// Parts still to insert, per registered sequence.
    remaining: HashMap<u64, usize>,
    /// Sequences above the prefix that are complete.
    done: BTreeSet<u64>,
}

impl Watermark {
    pub(crate) fn new(flushed: u64) -> Self {
        Self {
            flushed,
            remaining: HashMap::new(),
            done: BTreeSet::new(),
        }
    }

    /// Resumes at `flushed`, with the `skip` sequences (that will never
    /// arrive) already done.
    pub(crate) fn resume(flushed: u64, skip: &[RangeInclusive<u64>]) -> Self {
        let mut w = Self::new(flushed);
        for r in skip {
            w.done.extend(r.clone());
        }
        w
    }

    /// The last sequence of the contiguous flushed prefix.
    pub(crate) fn flushed(&self) -> u64 {
        self.flushed
    }

    /// Registers `seq` with `parts` parts to insert (0: done already).
    pub(crate) fn register(&mut self, seq: u64, parts: usize) {
        if parts == 0 {
            self.done.insert(seq);
        } else {
            self.remaining.insert(seq, parts);
        }
    }

    /// One part of `seq` is in the engine (or discarded).
    pub(crate) fn part_done(&mut self, seq: u64) {
        if let Some(n) = self.remaining.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                self.remaining.remove(&seq);
                self.done.insert(seq);
            }
        }
    }

    /// Advances the watermark; returns it if it moved.
    pub(crate) fn advance(&mut self) -> Option<u64> {
        let before = self.flushed;
        while self.done.remove(&(self.flushed + 1)) {
            self.flushed += 1;
        }
        // Sequences at or below the watermark can linger only from `skip`.
        while let Some(&first) = self.done.first() {
            if first <= self.flushed {
                self.done.remove(&first);
            } else {
                break;
            }
        }
        (self.flushed > before).then_some(self.flushed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watermark_moves_over_the_contiguous_prefix_only() {
        let mut t = Watermark::new(10);
        t.register(11, 2);
        t.register(12, 1);
        t.register(13, 0);
        assert_eq!(t.advance(), None);
        t.part_done(12);
        assert_eq!(t.advance(), None, "11 is still missing a part");
        t.part_done(11);
        assert_eq!(t.advance(), None);
        t.part_done(11);
        assert_eq!(t.advance(), Some(13));
        assert!(t.done.is_empty() && t.remaining.is_empty());
    }

    #[test]
    fn skipped_sequences_count_as_done() {
        let mut t = Watermark::new(0);
        t.done.insert(1);
        t.done.insert(2);
        t.register(3, 1);
        assert_eq!(t.advance(), Some(2));
        t.part_done(3);
        assert_eq!(t.advance(), Some(3));
    }

    #[test]
    fn resume_counts_the_skip_ranges_as_done() {
        let mut t = Watermark::resume(4, &[3..=3, 5..=6, 9..=9]);
        t.register(7, 1);
        assert_eq!(t.advance(), Some(6));
        t.part_done(7);
        assert_eq!(t.advance(), Some(7));
        t.register(8, 0);
        assert_eq!(t.advance(), Some(9));
        assert!(t.done.is_empty(), "3 is below the watermark and forgotten");
    }
}
