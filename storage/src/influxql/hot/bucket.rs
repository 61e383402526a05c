//! The bucket of a point's time in `GROUP BY time(…)`, with the span of
//! times known to share it, so that a series' points (in time order) look
//! their bucket up only where it changes: `single-groupby-1-1-12` puts 4,320
//! points into 720 buckets.

use crate::influxql::fill::window_start_in;
use crate::influxql::zone::TimeZone;

/// A bucket's start, and the times known to fall into it (`[start, end)`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Bucket {
    pub(super) start: i64,
    /// Exclusive; where the bucket's end is not known (a zone's offset may
    /// change inside it), `start + 1`: only `start` is known to be in it.
    end: i64,
}

impl Bucket {
    /// The bucket of time `t`: the window (interval, offset) holding it in
    /// `zone`, or the one bucket `fixed` without a window.
    pub(super) fn of(
        t: i64,
        window: Option<(i64, i64)>,
        zone: Option<&TimeZone>,
        fixed: i64,
    ) -> Bucket {
        let Some((interval, offset)) = window else {
            return Bucket {
                start: fixed,
                end: i64::MAX,
            };
        };
        let start = window_start_in(t, interval, offset, zone);
        // Without a zone a window is `interval` long from its start, as long as
        // `window_start_in`'s arithmetic saturates nowhere inside it.
        let end = match zone {
            None if t.checked_sub(offset).is_some() => start
                .checked_sub(offset)
                .and_then(|s| s.checked_add(interval))
                .and_then(|e| e.checked_add(offset)),
            _ => None,
        };
        Bucket {
            start,
            end: end.unwrap_or(start.saturating_add(1)),
        }
    }

    pub(super) fn holds(&self, t: i64) -> bool {
        t >= self.start && t < self.end
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Times around 0 and near the ends of what `window_start_in` computes
    /// without overflow (±2^62: InfluxDB's times are 1677–2262, ±2^63).
    fn time() -> impl Strategy<Value = i64> {
        const END: i64 = 1 << 62;
        prop_oneof![
            4 => -10_000_000_000_000i64..10_000_000_000_000,
            1 => -END..-END + 1_000_000,
            1 => END - 1_000_000..END,
            1 => -END..END,
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Every time a bucket says it holds has that bucket's start as its
        /// window's start, as `window_start_in` computes it point by point.
        #[test]
        fn a_time_a_bucket_holds_starts_the_same_window(
            t in time(),
            step in prop_oneof![0i64..4_000_000, 0i64..1 << 60],
            interval in prop_oneof![1i64..10, 1i64..7_200_000_000_000, Just(1i64 << 60)],
            offset in prop_oneof![Just(0i64), -3_600_000_000_000i64..3_600_000_000_000, -(1i64 << 60)..1 << 60],
            paris in any::<bool>(),
        ) {
            // A zone's rules at times far from now are not this test's concern.
            let paris = paris && t.unsigned_abs() < 1 << 60;
            let zone = paris.then(|| TimeZone::load("Europe/Paris").unwrap());
            let b = Bucket::of(t, Some((interval, offset)), zone.as_ref(), 0);
            prop_assert_eq!(b.start, window_start_in(t, interval, offset, zone.as_ref()));
            for u in [t.saturating_add(step), t.saturating_sub(step), b.start, b.end.wrapping_sub(1)] {
                if b.holds(u) {
                    prop_assert_eq!(b.start, window_start_in(u, interval, offset, zone.as_ref()), "t {} u {}", t, u);
                }
            }
        }
    }

    #[test]
    fn without_a_window_every_time_is_in_the_one_bucket() {
        let b = Bucket::of(5, None, None, -7);
        assert_eq!(b.start, -7);
        assert!(b.holds(5) && b.holds(i64::MAX - 1));
    }
}
