//! A timing harness (ignored; run by hand, release or not) for the decode a
//! hot read pays: one TSBS `cpu` host (10 integer fields, a random walk, a
//! point every 10 s for 24 h) sealed into chunks, and 8 h of it decoded as
//! `cpu-max-all-1` reads it (issue #44).
//!
//! `cargo test -p storage --release --lib decode_timing -- --ignored --nocapture`

use std::sync::Arc;
use std::time::Instant;

use engine::arrow::array::{ArrayRef, Int64Array, RecordBatch, UInt64Array};
use engine::arrow::datatypes::{DataType, Field, Schema};

use super::codec;
use super::table::{Plain, Table};

const S: i64 = 1_000_000_000;

/// One host's day of TSBS-shaped points.
pub(crate) fn tsbs_host() -> Table {
    let n = 8640usize;
    let mut fields = vec![
        Field::new("time", DataType::Int64, false),
        Field::new("series_id", DataType::UInt64, false),
    ];
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(
            (0..n as i64).map(|k| k * 10 * S),
        )),
        Arc::new(UInt64Array::from_iter_values((0..n).map(|_| 1))),
    ];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for f in 0..10 {
        fields.push(Field::new(format!("f{f}"), DataType::Int64, true));
        let mut v = 50i64;
        let walk: Vec<i64> = (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                v = (v + (seed % 7) as i64 - 3).clamp(0, 100);
                v
            })
            .collect();
        cols.push(Arc::new(Int64Array::from(walk)));
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap();
    let mut t = Table::new();
    assert!(t.insert(&batch, i64::MAX));
    t
}

#[test]
#[ignore = "timing harness: run by hand"]
fn decode_timing() {
    let t = tsbs_host();
    let s = &t.series[&1];
    let fields: Vec<usize> = (0..10).collect();
    let (min, max) = (4 * 3600 * S, 12 * 3600 * S - 1);
    let mut scratch = Plain::default();
    let rounds = 2000;
    let mut took = Vec::new();
    for _ in 0..5 {
        let at = Instant::now();
        let mut sum = 0usize;
        for _ in 0..rounds {
            sum += s.points(min, max, &fields, &mut scratch).times.len();
        }
        took.push(at.elapsed().as_secs_f64() * 1e6 / rounds as f64);
        assert!(sum > 0);
    }
    took.sort_by(f64::total_cmp);
    println!(
        "decode 8 h x 10 integer fields: median {:.1} us per read",
        took[2]
    );
}

/// 12 h of one host's 10 float fields as TSBS-like gauges at full precision
/// (a random walk of steps of up to ±1: XOR coded, no decimal scale), packed
/// in chunks of 1,024 as the store seals them.
fn float_chunks() -> Vec<(Box<[u64]>, usize)> {
    let (n, chunk) = (4320usize, 1024usize);
    let mut seed = GAUGE_SEED;
    let mut chunks = Vec::new();
    for _ in 0..10 {
        let walk = gauge_walk(&mut seed, n);
        for part in walk.chunks(chunk) {
            let valid = vec![true; part.len()];
            chunks.push((codec::pack_floats(part, &valid), part.len()));
        }
    }
    chunks
}

/// The seed of [`gauge_walk`]'s xorshift.
const GAUGE_SEED: u64 = 0x2545_f491_4f6c_dd1d;

/// `n` values of a gauge from 50: a random walk of steps of up to ±1 within
/// 0–100, full precision (XOR coded, no decimal scale), drawn by xorshift
/// from `seed`.
fn gauge_walk(seed: &mut u64, n: usize) -> Vec<f64> {
    let mut v = 50.0f64;
    (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            v = (v + (*seed % 2001) as f64 / 1000.0 - 1.0).clamp(0.0, 100.0);
            v
        })
        .collect()
}

/// The XOR float decoder against the one it replaced (a read per part),
/// interleaved in one run: medians of 7 rounds.
#[test]
#[ignore = "timing harness: run by hand"]
fn float_decode_timing() {
    let chunks = float_chunks();
    let values: usize = chunks.iter().map(|c| c.1).sum();
    let bytes: usize = chunks.iter().map(|c| c.0.len() * 8).sum();
    let rounds = 200;
    let (mut new, mut old) = (Vec::new(), Vec::new());
    let (mut out, mut valid) = (Vec::with_capacity(1024), Vec::with_capacity(1024));
    for _ in 0..7 {
        let at = Instant::now();
        for _ in 0..rounds {
            for (words, n) in &chunks {
                out.clear();
                valid.clear();
                codec::unpack_floats(words, *n, *n, &mut out, &mut valid);
                std::hint::black_box(&out);
            }
        }
        new.push(at.elapsed().as_secs_f64() * 1e9 / (rounds * values) as f64);
        let at = Instant::now();
        for _ in 0..rounds {
            for (words, n) in &chunks {
                std::hint::black_box(codec::tests::unpack_xor_floats_by_parts(words, *n, *n));
            }
        }
        old.push(at.elapsed().as_secs_f64() * 1e9 / (rounds * values) as f64);
    }
    new.sort_by(f64::total_cmp);
    old.sort_by(f64::total_cmp);
    println!(
        "XOR floats, {values} values at {:.2} B each: windowed median {:.2} ns a value, by parts {:.2} ns",
        bytes as f64 / values as f64,
        new[3],
        old[3]
    );
}

/// A panel's read of the last `keep` points of 1,024-point chunks of
/// full-precision gauges (XOR coded), from the mark before them against
/// from the chunk's start (no marks), interleaved: medians of 7 rounds.
/// `cargo test -p storage --release --lib float_mark_timing -- --ignored --nocapture`
#[test]
#[ignore = "timing harness: run by hand"]
fn float_mark_timing() {
    let mut seed = GAUGE_SEED;
    let chunks: Vec<_> = (0..40)
        .map(|_| codec::pack_floats_marked(&gauge_walk(&mut seed, 1024), &vec![true; 1024]))
        .collect();
    let words: usize = chunks.iter().map(|c| c.0.len() * 8).sum();
    let marks: usize = chunks.iter().map(|c| std::mem::size_of_val(&*c.1)).sum();
    let values = (chunks.len() * 1024) as f64;
    println!(
        "XOR gauges: {:.3} B a value, marks {:.4} B a value more",
        words as f64 / values,
        marks as f64 / values
    );
    let (mut out, mut valid) = (Vec::with_capacity(1024), Vec::with_capacity(1024));
    for keep in [128usize, 360, 700] {
        let (mut from_mark, mut from_start) = (Vec::new(), Vec::new());
        let rounds = 300;
        for _ in 0..7 {
            for (took, no_marks) in [(&mut from_mark, false), (&mut from_start, true)] {
                let at = Instant::now();
                for _ in 0..rounds {
                    for (w, m) in &chunks {
                        out.clear();
                        valid.clear();
                        let m: &[codec::Mark] = if no_marks { &[] } else { m };
                        codec::unpack_floats_from(
                            w,
                            m,
                            1024,
                            (1024 - keep, 1024),
                            &mut out,
                            &mut valid,
                        );
                        std::hint::black_box(&out);
                    }
                }
                took.push(at.elapsed().as_secs_f64() * 1e6 / (rounds * chunks.len()) as f64);
            }
        }
        from_mark.sort_by(f64::total_cmp);
        from_start.sort_by(f64::total_cmp);
        println!(
            "last {keep} of 1,024: from the mark {:.2} us a chunk, from the start {:.2} us",
            from_mark[3], from_start[3]
        );
    }
}
