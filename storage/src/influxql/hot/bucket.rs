//! The bucket of a point's time in `GROUP BY time(…)`, with the span of
//! times known to share it, so that a series' points (in time order) look
//! their bucket up only where it changes: `single-groupby-1-1-12` puts 4,320
//! points into 720 buckets.

use std::collections::BTreeMap;

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

/// No bucket yet.
pub(super) const NO_SLOT: u32 = u32::MAX;

/// Slots of dense tables ([`Slots::Dense`]) one read may hold: 4 MiB.
const MAX_DENSE_SLOTS: u64 = 1 << 20;

/// A group's buckets: each one's slot in the read's arena of aggregates, by
/// its start.
pub(super) enum Slots {
    /// UTC windows of one width from `base` (the window holding the range's
    /// start) up to the newest point read: bucket `k` starts at
    /// `base + k * interval`, its slot at `slots[k]`, looked up without a
    /// search (`single-groupby-1-1-12`: 720 buckets).
    Dense {
        base: i64,
        interval: i64,
        slots: Vec<u32>,
    },
    /// Any other windows (a zone's, too many to index), or none.
    Sparse(BTreeMap<i64, u32>),
}

/// How a read's groups hold their buckets ([`Slots`]).
#[derive(Clone, Copy)]
pub(super) struct Layout {
    /// `(base, interval, windows)` where the groups' buckets are dense.
    dense: Option<(i64, i64, usize)>,
}

impl Layout {
    /// Dense where the windows are UTC (`zone` none) and `groups` tables of
    /// the windows from `min`'s to `newest`'s stay within
    /// [`MAX_DENSE_SLOTS`].
    pub(super) fn of(
        window: Option<(i64, i64)>,
        zone: Option<&TimeZone>,
        (min, newest): (i64, i64),
        groups: usize,
    ) -> Layout {
        let dense = (|| {
            let (interval, offset) = window?;
            if zone.is_some() || interval <= 0 || newest < min {
                return None;
            }
            // Away from where `window_start_in`'s arithmetic saturates.
            min.checked_sub(offset)?;
            newest.checked_sub(offset)?.checked_add(interval)?;
            let base = window_start_in(min, interval, offset, None);
            let top = window_start_in(newest, interval, offset, None);
            let windows =
                u64::try_from((i128::from(top) - i128::from(base)) / i128::from(interval))
                    .ok()?
                    .checked_add(1)?;
            (windows.saturating_mul(groups as u64) <= MAX_DENSE_SLOTS).then_some((
                base,
                interval,
                windows as usize,
            ))
        })();
        Layout { dense }
    }

    /// The windows of a dense layout (one group's most buckets); 0 where
    /// the buckets are not known ahead.
    pub(super) fn windows(self) -> usize {
        self.dense.map_or(0, |(_, _, windows)| windows)
    }

    pub(super) fn slots(self) -> Slots {
        match self.dense {
            Some((base, interval, windows)) => Slots::Dense {
                base,
                interval,
                slots: vec![NO_SLOT; windows],
            },
            None => Slots::Sparse(BTreeMap::new()),
        }
    }
}

impl Slots {
    /// The slot of the bucket starting at `start`, `new()`'s where it has
    /// none yet; `None` where a dense table has no place for it (a start the
    /// layout did not foresee: the read gives up, the engine answers).
    pub(super) fn slot(&mut self, start: i64, new: impl FnOnce() -> u32) -> Option<u32> {
        match self {
            Slots::Dense {
                base,
                interval,
                slots,
            } => {
                let from = start.checked_sub(*base)?;
                if from < 0 || from % *interval != 0 {
                    return None;
                }
                let slot = slots.get_mut(usize::try_from(from / *interval).ok()?)?;
                if *slot == NO_SLOT {
                    *slot = new();
                }
                Some(*slot)
            }
            Slots::Sparse(map) => Some(*map.entry(start).or_insert_with(new)),
        }
    }

    /// Each bucket's (start, slot), by start.
    pub(super) fn into_sorted(self) -> Box<dyn Iterator<Item = (i64, u32)>> {
        match self {
            Slots::Dense {
                base,
                interval,
                slots,
            } => Box::new(
                slots
                    .into_iter()
                    .enumerate()
                    .filter(|(_, slot)| *slot != NO_SLOT)
                    .map(move |(k, slot)| (base + k as i64 * interval, slot)),
            ),
            Slots::Sparse(map) => Box::new(map.into_iter()),
        }
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// A dense table gives each bucket the slot a map would, and lists
        /// them in the same order.
        #[test]
        fn dense_slots_are_the_maps(
            min in -(1i64 << 61)..1 << 61,
            interval in prop_oneof![1i64..10, 1i64..7_200_000_000_000],
            windows in 0i64..3000,
            offset in prop_oneof![Just(0i64), -3_600_000_000_000i64..3_600_000_000_000],
            draws in proptest::collection::vec(0.0f64..=1.0, 0..80),
        ) {
            let newest = min + windows * interval;
            let window = Some((interval, offset));
            let layout = Layout::of(window, None, (min, newest), 1);
            let mut dense = layout.slots();
            let is_dense = matches!(dense, Slots::Dense { .. });
            prop_assert!(is_dense);
            let mut sparse = Slots::Sparse(BTreeMap::new());
            let (mut made_dense, mut made_sparse) = (0u32, 0u32);
            for d in draws {
                let t = min + ((newest - min) as f64 * d) as i64;
                let start = Bucket::of(t.min(newest), window, None, 0).start;
                let a = dense.slot(start, || { made_dense += 1; made_dense - 1 });
                let b = sparse.slot(start, || { made_sparse += 1; made_sparse - 1 });
                prop_assert_eq!(a, b);
            }
            prop_assert_eq!(dense.into_sorted().collect::<Vec<_>>(), sparse.into_sorted().collect::<Vec<_>>());
        }
    }

    #[test]
    fn too_many_windows_or_a_zone_keep_a_map() {
        let hour = 3_600_000_000_000i64;
        let many = Layout::of(Some((1, 0)), None, (0, hour), 1);
        assert!(matches!(many.slots(), Slots::Sparse(_)));
        let groups = Layout::of(Some((hour, 0)), None, (0, 720 * hour), 2_000);
        assert!(matches!(groups.slots(), Slots::Sparse(_)));
        let paris = TimeZone::load("Europe/Paris").unwrap();
        let zoned = Layout::of(Some((hour, 0)), Some(&paris), (0, hour), 1);
        assert!(matches!(zoned.slots(), Slots::Sparse(_)));
        // A start the layout did not foresee: the read gives up.
        let mut dense = Layout::of(Some((hour, 0)), None, (0, hour), 1).slots();
        assert_eq!(dense.slot(5 * hour, || 0), None);
        assert_eq!(dense.slot(1, || 0), None);
        assert_eq!(dense.slot(hour, || 7), Some(7));
    }

    #[test]
    fn without_a_window_every_time_is_in_the_one_bucket() {
        let b = Bucket::of(5, None, None, -7);
        assert_eq!(b.start, -7);
        assert!(b.holds(5) && b.holds(i64::MAX - 1));
    }
}
