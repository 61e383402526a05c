//! Where one series' rows may lie: the floor and spans of [`super`]'s index.

/// Ranges above a series' floor kept apart; more fold the lowest into the floor.
pub const SPANS: usize = 2;
/// An unused span: no time lies inside it.
const NO_SPAN: (i64, i64) = (i64::MAX, i64::MIN);

/// Where one series' rows may lie: at or before `floor`, or inside a span.
/// Claiming more than the table holds is safe (more is grouped); less never.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Written {
    pub(super) floor: i64,
    pub(super) spans: [(i64, i64); SPANS],
}

impl Written {
    /// A series nothing is known of yet.
    pub(super) const NOTHING: Written = Written {
        floor: i64::MIN,
        spans: [NO_SPAN; SPANS],
    };

    /// Everything up to `t` (a table's `max(time)` of the series).
    pub(super) fn up_to(t: i64) -> Written {
        Written {
            floor: t,
            spans: [NO_SPAN; SPANS],
        }
    }

    pub(super) fn may_hold(&self, t: i64) -> bool {
        t <= self.floor || self.spans.iter().any(|&(a, b)| a <= t && t <= b)
    }

    /// Adds rows from `a` to `b` (inclusive).
    pub(super) fn add(&mut self, a: i64, b: i64) {
        let (mut a, mut b) = (a, b);
        let mut kept: Vec<(i64, i64)> = Vec::with_capacity(SPANS + 1);
        for &(x, y) in self.spans.iter().filter(|s| **s != NO_SPAN) {
            if x <= b && a <= y {
                (a, b) = (a.min(x), b.max(y));
            } else {
                kept.push((x, y));
            }
        }
        kept.push((a, b));
        kept.sort_unstable();
        // A span reaching down to the floor joins it, and so does the lowest
        // span while there are too many (the gap below it is then claimed).
        while let Some(&(x, y)) = kept.first() {
            if x <= self.floor.saturating_add(1) || kept.len() > SPANS {
                self.floor = self.floor.max(y);
                kept.remove(0);
            } else {
                break;
            }
        }
        self.spans = [NO_SPAN; SPANS];
        for (slot, span) in self.spans.iter_mut().zip(kept) {
            *slot = span;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_insert_between_two_spans_is_known_to_be_new() {
        let mut w = Written::NOTHING;
        w.add(0, 9);
        w.add(20, 29); // the request for 10..19 commits later
        assert!(!w.may_hold(15), "nothing was written between the spans");
        assert!(w.may_hold(9) && w.may_hold(20) && !w.may_hold(-5));
        w.add(10, 19);
        assert!(w.may_hold(15));
        assert!(w.may_hold(-5), "the lowest span joined the floor");
    }

    #[test]
    fn past_the_spans_the_lowest_joins_the_floor_and_claims_its_gap() {
        let mut w = Written::NOTHING;
        for k in 0..10 {
            w.add(k * 100, k * 100 + 9);
        }
        assert_eq!(w.floor, 709);
        assert_eq!(w.spans, [(800, 809), (900, 909)]);
        assert!(w.may_hold(650), "a gap below the floor is claimed: safe");
        assert!(!w.may_hold(750));
        assert!(!w.may_hold(850));
        // A span overlapping others merges with them.
        w.add(805, 950);
        assert_eq!(w.spans, [(800, 950), NO_SPAN]);
        // One reaching down to the floor joins it.
        w.add(700, 799);
        assert_eq!((w.floor, w.spans), (950, [NO_SPAN; SPANS]));
        assert_eq!(Written::up_to(5).spans, [NO_SPAN; SPANS]);
    }
}
