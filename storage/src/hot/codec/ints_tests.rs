//! The marks: a range decoded from the mark before it, against a whole
//! decode (proptests).

use proptest::prelude::*;

use super::super::bits::{BitReader, Cursor};
use super::super::tests::{edge_ints, seen, walk};
use super::*;

/// A column long enough for several marks: a walk (every bucket, the
/// widest too), edge values now and then, all valid or with nulls.
fn marked_column() -> impl Strategy<Value = (Vec<i64>, Vec<bool>)> {
    (
        walk(),
        walk(),
        prop::collection::vec(edge_ints(), 0..40),
        any::<bool>(),
        prop::collection::vec(any::<bool>(), 0..1500),
    )
        .prop_map(|(a, b, edges, all, nulls)| {
            let values: Vec<i64> = a.into_iter().chain(edges).chain(b).collect();
            let valid = (0..values.len())
                .map(|k| all || nulls.get(k).copied().unwrap_or(true))
                .collect();
            (values, valid)
        })
}

proptest! {
    /// Points `skip..take` decoded from the mark before `skip` are those
    /// of a whole decode, of a column with every point valid (marked) or
    /// with nulls (none: decoded from the first point, the prefix dropped),
    /// appended after what the buffers held.
    #[test]
    fn a_range_decodes_from_its_mark_as_the_whole_does(
        (values, valid) in marked_column(),
        a in 0.0f64..=1.0,
        b in 0.0f64..=1.0,
    ) {
        let n = values.len();
        let (x, y) = (((n as f64) * a) as usize, ((n as f64) * b) as usize);
        let (skip, take) = (x.min(y), x.max(y));
        let (words, marks) = pack_ints_marked(values.iter().copied(), &valid);
        prop_assert_eq!(&*words, &*pack_ints(values.iter().copied(), &valid));
        let all = valid.iter().all(|&ok| ok);
        let want_marks = if all { n.saturating_sub(1) / MARK_EVERY } else { 0 };
        prop_assert_eq!(marks.len(), want_marks);
        let (mut out, mut ok) = (vec![7i64], vec![false]);
        unpack_ints_from(&words, &marks, n, (skip, take), &mut ok, &mut out, |v| v);
        prop_assert_eq!(&ok[1..], &valid[skip..take]);
        prop_assert_eq!(seen(&out[1..], &ok[1..]), seen(&values[skip..take], &valid[skip..take]));
        prop_assert_eq!((out[0], ok[0]), (7, false));
    }
}

/// A mark is where its value's code starts, with the value before it: a
/// decode from mark `j` alone gives values `(j + 1) * MARK_EVERY` on.
#[test]
fn a_mark_holds_its_values_code_and_the_value_before() {
    let values: Vec<i64> = (0..1024i64).map(|k| (k * 7919) % 1000 - 500).collect();
    let valid = vec![true; values.len()];
    let (words, marks) = pack_ints_marked(values.iter().copied(), &valid);
    assert_eq!(marks.len(), 3);
    for (j, m) in marks.iter().enumerate() {
        let k = (j + 1) * MARK_EVERY;
        assert_eq!(m.prev, values[k - 1]);
        let mut c = Cursor::new(BitReader {
            words: &words,
            pos: m.pos as usize,
        });
        assert_eq!(m.prev.wrapping_add(c.signed()), values[k]);
    }
}
