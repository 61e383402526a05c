//! One (database, measurement)'s parts waiting for an insert.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use engine::table::Part;

/// (database, measurement): what a buffer, a job and a replay check are kept per.
pub(crate) type Key = (String, String);

/// Parts of one table in sequence order, with their point count and the time
/// the oldest has waited since.
#[derive(Default)]
pub(crate) struct Buffer {
    parts: VecDeque<Part>,
    points: usize,
    oldest: Option<Instant>,
}

impl Buffer {
    /// Appends `part`, received at `now`.
    pub(crate) fn push(&mut self, part: Part, now: Instant) {
        self.points += part.batch.num_rows();
        self.oldest.get_or_insert(now);
        self.parts.push_back(part);
    }

    /// True when no part waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// When the oldest part started waiting (`None` when empty).
    pub(crate) fn oldest(&self) -> Option<Instant> {
        self.oldest
    }

    /// True when the buffer should be flushed now: it holds `max_points`, its
    /// oldest part has waited `max_age`, or the flusher is `closing`.
    pub(crate) fn is_due(
        &self,
        now: Instant,
        max_points: usize,
        max_age: Duration,
        closing: bool,
    ) -> bool {
        !self.is_empty()
            && (closing
                || self.points >= max_points
                || self
                    .oldest
                    .is_some_and(|o| now.duration_since(o) >= max_age))
    }

    /// Takes whole parts from the front up to `max_points` points (at least
    /// one part); what stays counts as waiting since `now`.
    pub(crate) fn take(&mut self, max_points: usize, now: Instant) -> Vec<Part> {
        let mut parts = Vec::new();
        let mut points = 0;
        while let Some(p) = self.parts.front() {
            let n = p.batch.num_rows();
            if !parts.is_empty() && points + n > max_points {
                break;
            }
            points += n;
            parts.push(self.parts.pop_front().expect("front exists"));
        }
        self.points -= points;
        self.oldest = if self.parts.is_empty() {
            None
        } else {
            Some(now)
        };
        parts
    }

    /// Puts `parts` (taken earlier, in order) back at the front: a job that
    /// failed or found no free worker.
    pub(crate) fn put_back(&mut self, parts: Vec<Part>, now: Instant) {
        for p in parts.into_iter().rev() {
            self.points += p.batch.num_rows();
            self.parts.push_front(p);
        }
        self.oldest.get_or_insert(now);
    }

    /// Removes and returns the parts with a sequence at or below `up_to`
    /// (`DROP DATABASE`).
    pub(crate) fn discard_up_to(&mut self, up_to: u64) -> Vec<Part> {
        let (gone, kept): (Vec<Part>, Vec<Part>) =
            self.parts.drain(..).partition(|p| p.seq <= up_to);
        for p in &gone {
            self.points -= p.batch.num_rows();
        }
        self.parts = kept.into();
        if self.parts.is_empty() {
            self.oldest = None;
        }
        gone
    }
}
