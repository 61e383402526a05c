//! The codec's round trips and decoders, against the encoder and the
//! decoders they replaced (proptests).

use proptest::prelude::*;

use super::bits::{unzigzag, WIDTHS};
use super::*;

pub(super) fn edge_ints() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(i64::MIN),
        Just(i64::MAX),
        Just(0),
        Just(-1),
        -20i64..20,
        any::<i64>(),
    ]
}

pub(super) fn edge_floats() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(f64::from_bits(0x7ff8_dead_beef_0001)),
        Just(f64::from_bits(0xfff0_0000_0000_0001)),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0),
        Just(0.0),
        Just(f64::MIN_POSITIVE),
        Just(f64::MAX),
        (0i32..100).prop_map(f64::from),
        any::<f64>(),
    ]
}

/// A gauge's column: decimals of one number of places (0 to 4), now and
/// then one that no scale makes an integer.
fn decimals() -> impl Strategy<Value = (Vec<f64>, Vec<bool>)> {
    (0i32..5).prop_flat_map(|d| {
        column(prop_oneof![
            20 => (-100_000i64..100_000).prop_map(move |n| n as f64 / 10f64.powi(d)),
            1 => Just(0.1 + 0.2),
            1 => Just(-0.0),
        ])
    })
}

/// Values with their validity: 0 to 300 points, sometimes all valid.
fn column<T: std::fmt::Debug>(
    values: impl Strategy<Value = T>,
) -> impl Strategy<Value = (Vec<T>, Vec<bool>)> {
    prop::collection::vec(
        (values, prop_oneof![3 => Just(true), 1 => any::<bool>()]),
        0..300,
    )
    .prop_map(|v| v.into_iter().unzip())
}

/// What a reader sees: the value where valid, nothing elsewhere.
pub(super) fn seen<T: Copy>(values: &[T], valid: &[bool]) -> Vec<Option<T>> {
    values
        .iter()
        .zip(valid)
        .map(|(v, ok)| ok.then_some(*v))
        .collect()
}

/// `values` (with `valid`) packed and unpacked: the same validity, the same bits.
fn floats_round_trip(values: &[f64], valid: &[bool]) -> Result<(), TestCaseError> {
    let (mut out, mut ok) = (Vec::new(), Vec::new());
    unpack_floats(
        &pack_floats(values, valid),
        values.len(),
        values.len(),
        &mut out,
        &mut ok,
    );
    prop_assert_eq!(&ok[..], valid);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    prop_assert_eq!(seen(&bits(&out), &ok), seen(&bits(values), valid));
    Ok(())
}

/// The XOR decoder as it was before it read from a 64-bit window (a
/// read per part): the windowed one must give the same bits.
pub(crate) fn unpack_xor_floats_by_parts(words: &[u64], n: usize, take: usize) -> Vec<Option<u64>> {
    let mut r = BitReader::new(words);
    let mut valid = Vec::new();
    get_valid(&mut r, n, take, &mut valid);
    assert!(!r.bit(), "a scaled column");
    let mut prev: Option<u64> = None;
    let (mut lead, mut trail) = (0u32, 0u32);
    let mut out = Vec::with_capacity(take);
    for &ok in &valid {
        if !ok {
            out.push(None);
            continue;
        }
        let bits = match prev {
            None => r.get(64),
            Some(p) if !r.bit() => p,
            Some(p) => {
                if r.bit() {
                    lead = r.get(5) as u32;
                    let len = r.get(6) as u32 + 1;
                    trail = 64 - lead - len;
                }
                p ^ (r.get(64 - lead - trail) << trail)
            }
        };
        out.push(Some(bits));
        prev = Some(bits);
    }
    out
}

/// Floats no decimal scale makes integers (XOR coded), with runs of
/// repeats and of values near each other (XORs of every length).
fn xor_floats() -> impl Strategy<Value = (Vec<f64>, Vec<bool>)> {
    column(prop_oneof![
        4 => (0u64..100_000).prop_map(|n| n as f64 / 997.0),
        2 => edge_floats(),
        1 => Just(1.0 / 3.0),
        1 => (any::<u64>(), 0u32..64).prop_map(|(b, k)| f64::from_bits(0x4059_0000_0000_0000 ^ (b >> k))),
    ])
}

/// A signed code as it was read before the [`Cursor`] held its bits: a
/// window read anew for each code.
fn get_signed_by_window(r: &mut BitReader<'_>) -> i64 {
    let last = WIDTHS.len() - 1;
    let win = r.window();
    let k = (win.trailing_ones() as usize).min(last);
    if k == last {
        r.pos += last;
        return unzigzag(r.get(WIDTHS[last]));
    }
    let (prefix, width) = (k as u32 + 1, WIDTHS[k]);
    r.pos += (prefix + width) as usize;
    unzigzag((win >> prefix) & ((1u64 << width) - 1))
}

/// Times as they were decoded before (a code at a time), up to `max`.
fn unpack_times_by_window(words: &[u64], n: usize, max: i64) -> Vec<i64> {
    let mut r = BitReader::new(words);
    let (mut prev, mut delta) = (0i64, 0i64);
    let mut out = Vec::new();
    for k in 0..n {
        let t = if k == 0 {
            r.get(64) as i64
        } else {
            delta = delta.wrapping_add(get_signed_by_window(&mut r));
            prev.wrapping_add(delta)
        };
        if t > max {
            break;
        }
        out.push(t);
        prev = t;
    }
    out
}

/// Integers (all valid) as they were decoded before, a code at a time.
fn unpack_ints_by_window(words: &[u64], n: usize) -> Vec<i64> {
    let mut r = BitReader::new(words);
    assert!(r.bit(), "all valid");
    let mut prev = 0i64;
    (0..n)
        .map(|_| {
            prev = prev.wrapping_add(get_signed_by_window(&mut r));
            prev
        })
        .collect()
}

/// Times as a collector writes them: runs at one interval (longer than a
/// word of one-bit codes, too), a late or early point now and then, a gap,
/// a jump of any size (the widest code).
fn regular_times() -> impl Strategy<Value = Vec<i64>> {
    let step = prop_oneof![
        8 => Just(0i64),
        2 => -3i64..4,
        1 => -1_000_000i64..1_000_000,
        1 => any::<i64>(),
    ];
    (
        any::<i64>(),
        1i64..20_000_000_000,
        prop::collection::vec((step, 1usize..150), 0..20),
    )
        .prop_map(|(start, interval, runs)| {
            let mut t = start;
            let mut out = vec![t];
            for (jitter, len) in runs {
                for k in 0..len {
                    let d = if k == 0 {
                        interval.wrapping_add(jitter)
                    } else {
                        interval
                    };
                    t = t.wrapping_add(d);
                    out.push(t);
                }
            }
            out
        })
}

/// Steps of a random walk (six-bit codes), with some of every bucket.
pub(super) fn walk() -> impl Strategy<Value = Vec<i64>> {
    prop::collection::vec(
        prop_oneof![
            10 => -7i64..8,
            2 => -120i64..120,
            1 => -30_000i64..30_000,
            1 => -2_000_000_000i64..2_000_000_000,
            1 => any::<i64>(),
        ],
        0..700,
    )
    .prop_map(|steps| {
        let mut v = 0i64;
        steps
            .into_iter()
            .map(|s| {
                v = v.wrapping_add(s);
                v
            })
            .collect()
    })
}

proptest! {
    /// The cursor's decoding (held bits, runs of one-bit zeros at once)
    /// gives what decoding a code at a time gave, up to any `max`.
    #[test]
    fn held_bits_decode_times_as_a_code_at_a_time_did(
        times in regular_times(),
        cut in 0.0f64..=1.0,
    ) {
        let words = pack_times(&times);
        let n = times.len();
        let mut sorted = times.clone();
        sorted.sort_unstable();
        let max = sorted[((n - 1) as f64 * cut) as usize];
        for max in [max, i64::MAX, i64::MIN] {
            let mut got = vec![7];
            let kept = unpack_times_until(&words, n, max, &mut got);
            let want = unpack_times_by_window(&words, n, max);
            prop_assert_eq!(kept, want.len());
            prop_assert_eq!(&got[1..], &want[..]);
        }
        let mut all = Vec::new();
        unpack_times(&words, n, &mut all);
        prop_assert_eq!(all, times);
    }

    #[test]
    fn held_bits_decode_integers_as_a_code_at_a_time_did(values in walk()) {
        let valid = vec![true; values.len()];
        let words = pack_ints(values.iter().copied(), &valid);
        let (mut out, mut ok) = (Vec::new(), Vec::new());
        unpack_ints(&words, values.len(), values.len(), &mut ok, &mut out, |v| v);
        prop_assert_eq!(&out, &unpack_ints_by_window(&words, values.len()));
        prop_assert_eq!(out, values);
    }
}

proptest! {
    #[test]
    fn the_windowed_xor_decoder_gives_the_bits_the_decoder_by_parts_gave(
        (mut values, valid) in xor_floats(),
        cut in 0.0f64..=1.0,
    ) {
        // One value no scale makes an integer: the column is XOR coded.
        values.push(1.0 / 3.0);
        let mut valid = valid;
        valid.push(true);
        let n = values.len();
        let take = ((n as f64) * cut) as usize;
        let words = pack_floats(&values, &valid);
        let (mut out, mut ok) = (Vec::new(), Vec::new());
        unpack_floats(&words, n, take, &mut out, &mut ok);
        let got: Vec<Option<u64>> = out.iter().zip(&ok).map(|(v, ok)| ok.then_some(v.to_bits())).collect();
        prop_assert_eq!(got, unpack_xor_floats_by_parts(&words, n, take));
    }

    #[test]
    fn times_round_trip(times in prop::collection::vec(edge_ints(), 0..300)) {
        let mut out = vec![7];
        unpack_times(&pack_times(&times), times.len(), &mut out);
        prop_assert_eq!(&out[1..], &times[..]);
    }

    #[test]
    fn floats_round_trip_to_the_bit((values, valid) in column(edge_floats())) {
        floats_round_trip(&values, &valid)?;
    }

    #[test]
    fn decimal_floats_round_trip_to_the_bit((values, valid) in decimals()) {
        floats_round_trip(&values, &valid)?;
    }

    #[test]
    fn ints_round_trip((values, valid) in column(edge_ints())) {
        let (mut out, mut ok) = (Vec::new(), Vec::new());
        let packed = pack_ints(values.iter().copied(), &valid);
        unpack_ints(&packed, values.len(), values.len(), &mut ok, &mut out, |v| v);
        prop_assert_eq!(&ok, &valid);
        prop_assert_eq!(seen(&out, &ok), seen(&values, &valid));
    }

    #[test]
    fn unsigned_round_trip((values, valid) in column(any::<u64>())) {
        let (mut out, mut ok) = (Vec::new(), Vec::new());
        let packed = pack_ints(values.iter().map(|&v| v as i64), &valid);
        unpack_ints(&packed, values.len(), values.len(), &mut ok, &mut out, |v| v as u64);
        prop_assert_eq!(seen(&out, &ok), seen(&values, &valid));
    }

    /// A read decodes a chunk only as far as its range reaches: the
    /// first `take` points of every kind are those a whole decode gives,
    /// and the times stop at the first after `max`.
    #[test]
    fn a_prefix_decodes_as_the_whole_does(
        (values, valid) in column(edge_ints()),
        floats in column(edge_floats()),
        decimals in decimals(),
        cut in 0.0f64..=1.0,
    ) {
        let n = values.len();
        let take = ((n as f64) * cut) as usize;
        let (mut out, mut ok) = (Vec::new(), Vec::new());
        unpack_ints(&pack_ints(values.iter().copied(), &valid), n, take, &mut ok, &mut out, |v| v);
        prop_assert_eq!(&ok[..], &valid[..take]);
        prop_assert_eq!(seen(&out, &ok), seen(&values[..take], &valid[..take]));
        for (values, valid) in [floats, decimals] {
            let n = values.len();
            let take = ((n as f64) * cut) as usize;
            let (mut out, mut ok) = (Vec::new(), Vec::new());
            unpack_floats(&pack_floats(&values, &valid), n, take, &mut out, &mut ok);
            prop_assert_eq!(&ok[..], &valid[..take]);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            prop_assert_eq!(seen(&bits(&out), &ok), seen(&bits(&values[..take]), &valid[..take]));
        }
        let bools: Vec<bool> = values.iter().map(|v| v % 3 == 0).collect();
        let (mut out, mut ok) = (Vec::new(), Vec::new());
        unpack_bools(&pack_bools(&bools, &valid), n, take, &mut out, &mut ok);
        prop_assert_eq!(seen(&out, &ok), seen(&bools[..take], &valid[..take]));
        let text: Vec<Arc<str>> = values.iter().map(|v| Arc::from((v % 5).to_string())).collect();
        let (words, dict) = pack_strings(&text, &valid);
        let (mut out, mut ok) = (Vec::new(), Vec::new());
        unpack_strings(&words, &dict, (n, take), &mut out, &mut ok);
        prop_assert_eq!(&ok[..], &valid[..take]);
        prop_assert!(out.iter().zip(&text).zip(&ok).all(|((a, b), ok)| !ok || a == b));
        let mut times = values.clone();
        times.sort_unstable();
        times.dedup();
        let max = times.get(take).copied().unwrap_or(i64::MAX);
        let mut got = Vec::new();
        let kept = unpack_times_until(&pack_times(&times), times.len(), max, &mut got);
        let want: Vec<i64> = times.iter().copied().take_while(|&t| t <= max).collect();
        prop_assert_eq!(kept, want.len());
        prop_assert_eq!(got, want);
    }

    #[test]
    fn bools_round_trip((values, valid) in column(any::<bool>())) {
        let (mut out, mut ok) = (Vec::new(), Vec::new());
        unpack_bools(&pack_bools(&values, &valid), values.len(), values.len(), &mut out, &mut ok);
        prop_assert_eq!(&ok, &valid);
        prop_assert_eq!(seen(&out, &ok), seen(&values, &valid));
    }

    #[test]
    fn strings_round_trip((values, valid) in column("[a-c]{0,3}|[^\u{0}]{0,20}")) {
        let values: Vec<Arc<str>> = values.iter().map(|s| Arc::from(s.as_str())).collect();
        let (words, dict) = pack_strings(&values, &valid);
        let (mut out, mut ok) = (Vec::new(), Vec::new());
        unpack_strings(&words, &dict, (values.len(), values.len()), &mut out, &mut ok);
        prop_assert_eq!(&ok, &valid);
        let text = |v: &[Arc<str>], ok: &[bool]| -> Vec<Option<String>> {
            v.iter().zip(ok).map(|(s, ok)| ok.then(|| s.to_string())).collect()
        };
        prop_assert_eq!(text(&out, &ok), text(&values, &valid));
    }
}

#[test]
fn regular_times_take_a_bit_each_and_small_steps_a_byte() {
    let times: Vec<i64> = (0..1024)
        .map(|k| 1_700_000_000_000_000_000 + k * 10_000_000_000)
        .collect();
    // 64 bits for the first, the first delta in 5 + 64, then a bit each.
    assert!(pack_times(&times).len() * 8 <= 160);
    let walk: Vec<i64> = (0..1024).map(|k| 50 + (k % 7) - 3).collect();
    let valid = vec![true; walk.len()];
    // A gauge in tenths: as the integers it is in tenths, under 2 bytes.
    let tenths: Vec<f64> = walk.iter().map(|&n| n as f64 / 10.0).collect();
    assert!(pack_floats(&tenths, &valid).len() * 8 <= 1024 * 6 / 8 + 16);
    // Steps of at most 6: 2 + 4 bits each.
    assert!(pack_ints(walk.iter().copied(), &valid).len() * 8 <= 1024 * 6 / 8 + 16);
}
