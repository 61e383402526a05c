//! A sealed chunk's columns read over a range or spans from inside it,
//! against the whole chunk decoded.

use super::*;

/// A read: its range of points and the spans inside it decoded.
type Read = ((usize, usize), &'static [(usize, usize)]);

/// A cell as its bits, `None` where the point lacks the field.
fn cell(c: &Column, k: usize) -> Option<u64> {
    c.valid[k].then(|| match &c.values {
        Values::Float(v) => v[k].to_bits(),
        Values::Integer(v) => v[k] as u64,
        _ => panic!("a float or integer column"),
    })
}

/// 1,024 points: a full-precision gauge (XOR coded), a gauge in tenths (a
/// decimal scale), floats with nulls (no marks), integers.
fn points() -> Plain {
    let n = 1024;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut g, mut t, mut i) = (50.0f64, 500i64, 0i64);
    let mut cols: [Vec<f64>; 3] = Default::default();
    let mut ints = Vec::new();
    for _ in 0..n {
        g += (next() % 2001) as f64 / 997.0 - 1.0;
        t += (next() % 7) as i64 - 3;
        i += (next() % 300) as i64 - 150;
        cols[0].push(g);
        cols[1].push(t as f64 / 10.0);
        cols[2].push(g * 3.0);
        ints.push(i);
    }
    let all = vec![true; n];
    let [xor, tenths, sparse] = cols;
    let column = |values, valid| Some(Column { values, valid });
    Plain {
        times: (0..n as i64).map(|k| k * 10_000_000_000).collect(),
        columns: vec![
            column(Values::Float(xor), all.clone()),
            column(Values::Float(tenths), all.clone()),
            column(Values::Float(sparse), (0..n).map(|k| k % 7 != 3).collect()),
            column(Values::Integer(ints), all),
        ],
    }
}

/// Float columns whose points all have the field are marked (a read from
/// inside the chunk decodes them from the mark before its range), and a
/// range or spans read so give, point by point, what the whole chunk
/// decoded gives (null between spans).
#[test]
fn a_range_from_inside_a_chunk_reads_its_floats_from_their_marks() {
    let p = points();
    let n = p.times.len();
    let chunk = Chunk::seal(&p, n);
    let marked: Vec<bool> = chunk
        .columns
        .iter()
        .map(|c| c.as_ref().unwrap().marked())
        .collect();
    assert_eq!(marked, [true, true, false, true]);
    let mut whole = Plain::default();
    whole.reset_like(&p, |_| true);
    chunk.unpack_columns(n, &mut whole.columns, |_| true);
    let reads: [Read; 6] = [
        ((0, 1024), &[(0, 1024)]),
        ((255, 257), &[(255, 257)]),
        ((256, 1024), &[(256, 1024)]),
        ((700, 1000), &[(700, 1000)]),
        ((100, 1024), &[(100, 120), (511, 513), (900, 1024)]),
        ((768, 1023), &[(768, 769), (1000, 1023)]),
    ];
    for ((skip, take), spans) in reads {
        let mut out = Plain::default();
        out.reset_like(&p, |_| true);
        chunk.unpack_columns_spans((skip, take), spans, &mut out.columns, |_| true);
        for (f, (got, want)) in out.columns.iter().zip(&whole.columns).enumerate() {
            let (got, want) = (got.as_ref().unwrap(), want.as_ref().unwrap());
            assert_eq!(got.valid.len(), take - skip);
            for k in skip..take {
                let in_span = spans.iter().any(|&(a, b)| (a..b).contains(&k));
                // A column without marks is decoded whole: every point.
                let want = if in_span || !marked[f] {
                    cell(want, k)
                } else {
                    None
                };
                assert_eq!(
                    cell(got, k - skip),
                    want,
                    "field {f}, point {k}, read {skip}..{take}"
                );
            }
        }
    }
}
