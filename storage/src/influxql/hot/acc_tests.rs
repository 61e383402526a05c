//! A run added at once (`Acc::add_floats`, `Acc::add_ints`) against the same
//! points added one by one (`Acc::add_float`, `Acc::add_int`): the same state
//! to the bit, over random runs (NaN, ±0.0, infinities, integers near the
//! ends, missing values), every function, several runs into one aggregate.

use proptest::prelude::*;

use super::*;

fn agg() -> impl Strategy<Value = Agg> {
    prop_oneof![
        Just(Agg::Part(Func::Count)),
        Just(Agg::Part(Func::Sum)),
        Just(Agg::Part(Func::Mean)),
        Just(Agg::Part(Func::Min)),
        Just(Agg::Part(Func::Max)),
        Just(Agg::Part(Func::First)),
        Just(Agg::Part(Func::Last)),
        Just(Agg::Part(Func::Spread)),
        Just(Agg::Stddev),
        Just(Agg::Median),
        (0.0f64..=100.0).prop_map(Agg::Percentile),
    ]
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => -1e3f64..1e3,
        1 => Just(0.0),
        1 => Just(-0.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => any::<f64>(),
    ]
}

fn int() -> impl Strategy<Value = i64> {
    prop_oneof![4 => -1000i64..1000, 1 => any::<i64>(), 1 => Just(i64::MAX), 1 => Just(i64::MIN)]
}

/// Every field of an aggregate, floats as bits.
fn state(a: &Acc) -> Vec<u128> {
    let f = |x: f64| u128::from(x.to_bits());
    let i = |x: i64| x as u64 as u128;
    let mut s = vec![u128::from(a.n), f(a.f0), f(a.f1), i(a.i0), i(a.i1), i(a.at)];
    if let Some(v) = &a.vals {
        s.extend(v.floats.iter().flat_map(|(v, t)| [f(*v), i(*t)]));
        s.extend(v.ints.iter().flat_map(|(v, t)| [i(*v), i(*t)]));
    }
    s
}

/// Cuts `n` points into runs at `cuts` (sorted, deduplicated, inside).
fn runs(n: usize, mut cuts: Vec<usize>) -> Vec<std::ops::Range<usize>> {
    cuts.retain(|&c| c > 0 && c < n);
    cuts.sort_unstable();
    cuts.dedup();
    let mut edges = vec![0];
    edges.extend(cuts);
    edges.push(n);
    edges.windows(2).map(|w| w[0]..w[1]).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn a_run_of_floats_adds_as_its_points_do(
        agg in agg(),
        points in proptest::collection::vec((float(), any::<bool>(), 0i64..50), 0..40),
        cuts in proptest::collection::vec(0usize..40, 0..4),
    ) {
        // Times as several series' points would come: not ordered across runs.
        let times: Vec<i64> = points.iter().map(|p| p.2).collect();
        let values: Vec<f64> = points.iter().map(|p| p.0).collect();
        let valid: Vec<bool> = points.iter().map(|p| p.1).collect();
        let (mut by_run, mut by_point) = (Acc::EMPTY, Acc::EMPTY);
        for r in runs(points.len(), cuts) {
            by_run.add_floats(agg, &times[r.clone()], &values[r.clone()], &valid[r.clone()]);
            for i in r {
                if valid[i] {
                    by_point.add_float(agg, times[i], values[i]);
                }
            }
        }
        prop_assert_eq!(state(&by_run), state(&by_point));
    }

    #[test]
    fn a_run_of_integers_adds_as_its_points_do(
        agg in agg(),
        points in proptest::collection::vec((int(), any::<bool>(), 0i64..50), 0..40),
        cuts in proptest::collection::vec(0usize..40, 0..4),
    ) {
        let times: Vec<i64> = points.iter().map(|p| p.2).collect();
        let values: Vec<i64> = points.iter().map(|p| p.0).collect();
        let valid: Vec<bool> = points.iter().map(|p| p.1).collect();
        let (mut by_run, mut by_point) = (Acc::EMPTY, Acc::EMPTY);
        for r in runs(points.len(), cuts) {
            by_run.add_ints(agg, &times[r.clone()], &values[r.clone()], &valid[r.clone()]);
            for i in r {
                if valid[i] {
                    by_point.add_int(agg, times[i], values[i]);
                }
            }
        }
        prop_assert_eq!(state(&by_run), state(&by_point));
    }
}

/// A bucketed read keeps one per column and bucket (`single-groupby-5-1-12`:
/// 3,600) and writes each when its bucket begins: at 176 bytes that writing
/// and the drop were a tenth of the read's evaluation.
#[test]
fn an_aggregate_is_seven_words() {
    assert_eq!(std::mem::size_of::<Acc>(), 56);
}
