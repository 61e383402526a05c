//! Float marks: a range decoded from the mark before it, against a whole
//! decode (proptests), XOR coded and at a decimal scale.

use proptest::prelude::*;

use super::super::tests::edge_floats;
use super::*;

/// A float column long enough for several marks, all valid or with
/// nulls: XOR coded, a gauge alone (its XOR windows narrow: an outlier's
/// wide window would stay for the rest of the chunk) or with outliers (NaN,
/// infinities, -0.0, any bits), or a gauge in tenths (a decimal scale).
fn marked_floats() -> impl Strategy<Value = (Vec<f64>, Vec<bool>)> {
    let value = prop_oneof![
        40 => (0u64..2000).prop_map(|n| 50.0 + n as f64 / 997.0),
        1 => Just(f64::NAN),
        1 => edge_floats(),
        1 => Just(1.0 / 3.0),
    ];
    let len = prop_oneof![Just(256usize), Just(257), Just(1024), 0usize..1500];
    let all = prop_oneof![3 => Just(true), 1 => Just(false)];
    (len, all, 0u8..3, any::<u64>()).prop_flat_map(move |(n, all, kind, seed)| {
        (
            prop::collection::vec(value.clone(), n),
            prop::collection::vec(prop_oneof![9 => Just(true), 1 => Just(false)], n),
        )
            .prop_map(move |(mut values, valid)| {
                let mut v = (seed % 1000) as i64;
                for (k, x) in values.iter_mut().enumerate() {
                    let r = seed.rotate_left(k as u32) ^ (k as u64).wrapping_mul(0x9e37_79b9);
                    match kind {
                        0 => {}
                        1 => *x = 50.0 + (r % 2000) as f64 / 997.0,
                        _ => {
                            v += (r % 7) as i64 - 3;
                            *x = v as f64 / 10.0;
                        }
                    }
                }
                let valid = if all { vec![true; valid.len()] } else { valid };
                (values, valid)
            })
    })
}

proptest! {
    /// Points `skip..take` decoded from the mark before `skip` are those
    /// of a whole decode, to the bit, appended after what the buffers held;
    /// marks where every point is valid only.
    #[test]
    fn a_float_range_decodes_from_its_mark_as_the_whole_does(
        (values, valid) in marked_floats(),
        a in 0.0f64..=1.0,
        b in 0.0f64..=1.0,
    ) {
        let n = values.len();
        let (x, y) = (((n as f64) * a) as usize, ((n as f64) * b) as usize);
        let (skip, take) = (x.min(y), x.max(y));
        let (words, marks) = pack_floats_marked(&values, &valid);
        prop_assert_eq!(&*words, &*pack_floats(&values, &valid));
        let all = valid.iter().all(|&ok| ok);
        let want_marks = if all { n.saturating_sub(1) / MARK_EVERY } else { 0 };
        prop_assert_eq!(marks.len(), want_marks);
        let (mut whole, mut whole_ok) = (Vec::new(), Vec::new());
        unpack_floats(&words, n, n, &mut whole, &mut whole_ok);
        let (mut out, mut ok) = (vec![7.5], vec![false]);
        unpack_floats_from(&words, &marks, n, (skip, take), &mut out, &mut ok);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(&ok[1..], &whole_ok[skip..take]);
        prop_assert_eq!(bits(&out[1..]), bits(&whole[skip..take]));
        prop_assert_eq!((out[0], ok[0]), (7.5, false));
    }
}

/// A mark of an XOR coded column holds the window last sent: the codes
/// after it that reuse the window (`10`) decode only with it.
#[test]
fn a_float_mark_holds_the_xor_window_last_sent() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let values: Vec<f64> = (0..1024)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            50.0 + (seed % 2001) as f64 / 997.0
        })
        .collect();
    let valid = vec![true; values.len()];
    let (words, marks) = pack_floats_marked(&values, &valid);
    assert_eq!(marks.len(), 3);
    for (j, m) in marks.iter().enumerate() {
        let k = (j + 1) * MARK_EVERY;
        assert_eq!(m.prev as u64, values[k - 1].to_bits());
        assert_ne!(m.window, (0, 0));
        let (mut out, mut ok) = (Vec::new(), Vec::new());
        unpack_floats_from(&words, &marks, values.len(), (k, 1024), &mut out, &mut ok);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&out), bits(&values[k..]));
    }
}
