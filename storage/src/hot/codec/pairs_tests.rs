//! Runs decoded two codes at a time against a code at a time (proptests),
//! and a timing harness of the two (ignored; run by hand, release).

use std::time::Instant;

use proptest::prelude::*;

use super::super::bits::{put_signed, BitReader, BitWriter, Cursor};
use super::super::{pack_floats, pack_ints, unpack_floats, unpack_ints};

/// Numbers of every bucket, the narrow ones (pairs) most, the extremes.
fn steps() -> impl Strategy<Value = Vec<i64>> {
    let step = prop_oneof![
        6 => -8i64..8,
        2 => Just(0i64),
        2 => -128i64..128,
        1 => -40_000i64..40_000,
        1 => -3_000_000_000i64..3_000_000_000,
        1 => prop_oneof![Just(i64::MIN), Just(i64::MAX), any::<i64>()],
    ];
    let len = prop_oneof![
        Just(255usize),
        Just(256),
        Just(257),
        Just(1024),
        0usize..1100,
    ];
    len.prop_flat_map(move |n| prop::collection::vec(step.clone(), n))
}

/// `steps` as signed codes after `junk` bits of ones (any alignment).
fn packed(steps: &[i64], junk: u32) -> Box<[u64]> {
    let mut w = BitWriter::default();
    w.put(u64::MAX, junk);
    for &s in steps {
        put_signed(&mut w, s);
    }
    // A code after the run: the cursor must stop right before it.
    put_signed(&mut w, 5);
    w.finish()
}

proptest! {
    /// `sums` gives the running sums, in order, and leaves the cursor
    /// where a code at a time leaves it.
    #[test]
    fn pairs_decode_as_a_code_at_a_time_does(
        steps in steps(),
        junk in 0u32..64,
        prev in prop_oneof![Just(0i64), Just(i64::MAX), any::<i64>()],
    ) {
        let words = packed(&steps, junk);
        let at = || Cursor::new(BitReader { words: &words, pos: junk as usize });
        let mut one = at();
        let mut sum = prev;
        let want: Vec<i64> = steps.iter().map(|_| {
            sum = sum.wrapping_add(one.signed());
            sum
        }).collect();
        let mut two = at();
        let mut got = Vec::new();
        let last = two.sums(prev, steps.len(), |k, v| got.push((k, v)));
        prop_assert_eq!(last, sum);
        prop_assert_eq!(got, want.into_iter().enumerate().collect::<Vec<_>>());
        prop_assert_eq!(two.pos(), one.pos());
        prop_assert_eq!(two.signed(), 5);
    }

    /// A gauge in tenths (a decimal scale, its steps narrow codes, runs
    /// of them decoded in pairs) decodes to the bits it had.
    #[test]
    fn a_gauge_in_tenths_decodes_to_the_bit(steps in steps(), cut in 0.0f64..=1.0) {
        let mut n = 0i64;
        let values: Vec<f64> = steps.iter().map(|s| {
            n = (n + s.clamp(&-9, &9)).clamp(-99_999, 99_999);
            n as f64 / 10.0
        }).collect();
        let valid = vec![true; values.len()];
        let take = ((values.len() as f64) * cut) as usize;
        let (mut out, mut ok) = (vec![7.5], vec![false]);
        unpack_floats(&pack_floats(&values, &valid), values.len(), take, &mut out, &mut ok);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&out[1..]), bits(&values[..take]));
        prop_assert_eq!(out[0], 7.5);
        prop_assert_eq!(ok.len(), take + 1);
    }
}

/// TSBS's integer fields: a walk of steps of up to ±3 within 0..=100, in
/// columns of 1,024 as a chunk seals them.
fn tsbs_columns() -> Vec<(Box<[u64]>, usize)> {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    (0..40)
        .map(|_| {
            let mut v = 50i64;
            let walk: Vec<i64> = (0..1024)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    v = (v + (seed % 7) as i64 - 3).clamp(0, 100);
                    v
                })
                .collect();
            (pack_ints(walk.iter().copied(), &vec![true; 1024]), 1024)
        })
        .collect()
}

/// The pair decoder against a code at a time (the loop it replaced),
/// interleaved in one run: medians of 7 rounds, ns a value.
/// `cargo test -p storage --release --lib pair_decode_timing -- --ignored --nocapture`
#[test]
#[ignore = "timing harness: run by hand"]
fn pair_decode_timing() {
    let columns = tsbs_columns();
    let values: usize = columns.iter().map(|c| c.1).sum();
    let rounds = 300;
    let (mut new, mut old) = (Vec::new(), Vec::new());
    let (mut out, mut valid) = (Vec::with_capacity(1024), Vec::with_capacity(1024));
    for _ in 0..7 {
        let at = Instant::now();
        for _ in 0..rounds {
            for (words, n) in &columns {
                out.clear();
                valid.clear();
                unpack_ints(words, *n, *n, &mut valid, &mut out, |v| v);
                std::hint::black_box(&out);
            }
        }
        new.push(at.elapsed().as_secs_f64() * 1e9 / (rounds * values) as f64);
        let at = Instant::now();
        for _ in 0..rounds {
            for (words, n) in &columns {
                out.clear();
                valid.clear();
                let mut r = BitReader::new(words);
                assert!(r.bit());
                valid.extend(std::iter::repeat_n(true, *n));
                let mut c = Cursor::new(r);
                let mut prev = 0i64;
                out.extend((0..*n).map(|_| {
                    prev = prev.wrapping_add(c.signed());
                    prev
                }));
                std::hint::black_box(&out);
            }
        }
        old.push(at.elapsed().as_secs_f64() * 1e9 / (rounds * values) as f64);
    }
    new.sort_by(f64::total_cmp);
    old.sort_by(f64::total_cmp);
    println!(
        "TSBS integers, {values} values: pairs median {:.2} ns a value, a code at a time {:.2} ns",
        new[3], old[3]
    );
}
