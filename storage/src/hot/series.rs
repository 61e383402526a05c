//! One series' held points: older runs sealed into compressed chunks
//! (`chunk.rs`), the newest in a plain open tail (`column.rs`), so that an
//! append, or a rewrite of a recent point, touches plain vectors only. A late
//! point or a rewrite that falls into a sealed chunk's span decodes that chunk,
//! merges by the same rule, and seals it again.

use super::chunk::Chunk;
use super::codec;
use super::column::{BatchField, Plain};

/// Bytes per time and per field value (plus its validity byte) in the open tail.
/// Whether point `i` of the points decoded passes a read's condition.
pub(crate) type PointTest<'f> = &'f dyn Fn(&Plain, usize) -> bool;

/// A test of a read's points ([`Series::points_sifted`]), run on the fields
/// it reads before the read's other fields are decoded.
pub(crate) struct Sift<'f> {
    /// The fields (the table's indexes) `passes` reads.
    pub(crate) fields: &'f [usize],
    /// Whether point `i` of those decoded passes; `None`: every point may.
    pub(crate) passes: Option<PointTest<'f>>,
}

impl Sift<'_> {
    /// No test: every chunk's fields decoded together.
    pub(crate) const NONE: Sift<'static> = Sift {
        fields: &[],
        passes: None,
    };
}

pub(crate) const TIME_BYTES: usize = 8;
pub(crate) const VALUE_BYTES: usize = 9;

/// One series' held points.
#[derive(Debug, Default)]
pub(crate) struct Series {
    /// Its tags with a value, sorted by key.
    pub(crate) tags: Vec<(String, String)>,
    /// Oldest first; disjoint, each older than the next and than the tail.
    sealed: Vec<Chunk>,
    /// The newest points; its columns are the series' fields (a chunk has
    /// none the tail lacks).
    open: Plain,
    /// String bytes in the open tail.
    strings: usize,
    /// Points and bytes in `sealed`.
    sealed_len: usize,
    sealed_bytes: usize,
    /// What its tags take (`tag_bytes`): counted in `bytes` so that
    /// `[hot] max_memory` bounds series held with few or no points too (a
    /// refill seeds every series of a measurement, `refill.rs`).
    tag_bytes: usize,
}

/// Bytes of a series' tags: each key's and value's string and its two
/// `String` headers.
pub(crate) fn tag_bytes(tags: &[(String, String)]) -> usize {
    tags.iter()
        .map(|(k, v)| k.len() + v.len() + 2 * std::mem::size_of::<String>())
        .sum()
}

/// Nulls at the end of each column of `p` that `want` takes, as far as `p`
/// has times (a sifted read decodes them only to the last point passing).
fn pad_columns(p: &mut Plain, want: impl Fn(usize) -> bool) {
    let n = p.times.len();
    for (i, c) in p.columns.iter_mut().enumerate() {
        if let (Some(c), true) = (c, want(i)) {
            c.extend_nulls(n - c.valid.len());
        }
    }
}

impl Series {
    pub(crate) fn new(tags: Vec<(String, String)>) -> Series {
        Series {
            tag_bytes: tag_bytes(&tags),
            tags,
            ..Series::default()
        }
    }

    /// The value of tag `key` (`""` where the series lacks it).
    pub(crate) fn tag(&self, key: &str) -> &str {
        self.tags
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .map_or("", |i| self.tags[i].1.as_str())
    }

    /// Whether the series ever had field `i` (the table's index).
    pub(crate) fn has_field(&self, i: usize) -> bool {
        matches!(self.open.columns.get(i), Some(Some(_)))
    }

    /// Its points with a time in `[min, max]`, plain, and maybe more before
    /// them (from the open tail, or where no chunk is decoded) or after them
    /// (from the open tail): the open tail itself where no sealed chunk reaches into the range,
    /// else those chunks decoded (and the tail after them) into `scratch`, with
    /// only the fields in `fields` (the table's indexes; others `None`). Less
    /// the sealed chunks `keep` refuses: a read whose condition no point of a
    /// chunk can pass (by its bounds, `Chunk::bounds`) neither decodes it nor
    /// sees its points.
    #[cfg(test)]
    pub(crate) fn points_where<'a>(
        &'a self,
        min: i64,
        max: i64,
        fields: &[usize],
        scratch: &'a mut Plain,
        keep: impl Fn(&Chunk) -> bool,
    ) -> &'a Plain {
        self.points_sifted(min, max, fields, scratch, keep, &Sift::NONE)
    }

    /// [`Series::points_where`], less also the sealed chunks of which no
    /// point in `[min, max]` passes `sift`: those columns decoded first, the
    /// others only where a point passed (TSBS `high-cpu-1` shows 10 fields of
    /// the points where one passes a threshold). A chunk left out is one
    /// whose points every caller, testing each point, would pass over.
    pub(crate) fn points_sifted<'a>(
        &'a self,
        min: i64,
        max: i64,
        fields: &[usize],
        scratch: &'a mut Plain,
        keep: impl Fn(&Chunk) -> bool,
        sift: &Sift<'_>,
    ) -> &'a Plain {
        let from = self.sealed.partition_point(|c| c.max < min);
        let hit = &self.sealed[from..];
        let hit = &hit[..hit.partition_point(|c| c.min <= max)];
        let mut kept = hit.iter().filter(|&c| keep(c)).peekable();
        if kept.peek().is_none() {
            return &self.open;
        }
        scratch.reset_like(&self.open, |i| fields.contains(&i));
        let first = |i: usize| sift.fields.contains(&i);
        let mut spans = Vec::new();
        for c in kept {
            let at = scratch.times.len();
            // Points past `max` are not read: the last chunk stops there.
            let take = c.unpack_times_until(max, &mut scratch.times);
            // Nor those before `min` (the first chunk's): their values are
            // decoded from the mark before `min` only (`codec::Mark`), and
            // not kept.
            let skip = scratch.times[at..].partition_point(|&t| t < min);
            scratch.times.drain(at..at + skip);
            let Some(passes) = sift.passes else {
                c.unpack_columns_from((skip, take), &mut scratch.columns, |_| true);
                continue;
            };
            c.unpack_columns_from((skip, take), &mut scratch.columns, first);
            // The other fields only as far as the last point that passes
            // (a value is the delta from the one before: none after it is
            // needed), null after it: every caller tests each point. Where a
            // column has marks, only over the blocks between two marks that
            // hold a passing point, from the first such point to the last.
            spans.clear();
            for i in at..at + take - skip {
                if !passes(scratch, i) {
                    continue;
                }
                let p = skip + i - at;
                match spans.last_mut() {
                    Some((a, b)) if *a / codec::MARK_EVERY == p / codec::MARK_EVERY => *b = p + 1,
                    _ => spans.push((p, p + 1)),
                }
            }
            let Some(&(_, upto)) = spans.last() else {
                scratch.truncate(at);
                continue;
            };
            c.unpack_columns_spans((skip, upto), &spans, &mut scratch.columns, |i| !first(i));
            pad_columns(scratch, |i| !first(i));
        }
        // The open tail as far as `max` (a window ending inside it copies
        // no more); sifted, its other fields only to the last point passing.
        let upto = self.open.times.partition_point(|&t| t <= max);
        if upto > 0 {
            match sift.passes {
                None => self.extend_with_open(scratch, upto, |_| true),
                Some(passes) => {
                    let at = scratch.times.len();
                    self.extend_with_open(scratch, upto, first);
                    // Open points follow a decoded chunk's (each at or after
                    // `min`): every one is in the range from `min` on.
                    if let Some(last) = (at..at + upto).rev().find(|&i| passes(scratch, i)) {
                        self.extend_columns_with_open(scratch, last + 1 - at, |i| !first(i));
                    }
                    pad_columns(scratch, |i| !first(i));
                }
            }
        }
        scratch
    }

    /// [`Series::points_where`] keeping every chunk (tests).
    #[cfg(test)]
    pub(crate) fn points<'a>(
        &'a self,
        min: i64,
        max: i64,
        fields: &[usize],
        scratch: &'a mut Plain,
    ) -> &'a Plain {
        self.points_where(min, max, fields, scratch, |_| true)
    }

    /// Points a read of `[min, max]` decodes ([`Series::points_where`]): those of
    /// the sealed chunks reaching into the range (the open tail is read in
    /// place).
    pub(crate) fn sealed_points(&self, min: i64, max: i64) -> usize {
        let from = self.sealed.partition_point(|c| c.max < min);
        let hit = &self.sealed[from..];
        hit[..hit.partition_point(|c| c.min <= max)]
            .iter()
            .map(|c| c.len)
            .sum()
    }

    /// Points a read of `[min, max]` reads: those of the sealed chunks
    /// reaching into the range from each one's start (a value is the delta
    /// from the one before) to `max` (where a chunk holds `max`, its share of
    /// points up to it by time: a read decodes no further), and those of the
    /// open tail in the range. What bounds an inline read (`inline.rs`).
    /// Only the chunks `keep` keeps count: a read skips the others undecoded
    /// ([`Series::points_sifted`]'s `keep`, the same test).
    pub(crate) fn points_read(&self, min: i64, max: i64, keep: impl Fn(&Chunk) -> bool) -> usize {
        let from = self.sealed.partition_point(|c| c.max < min);
        let hit = &self.sealed[from..];
        let sealed: usize = hit[..hit.partition_point(|c| c.min <= max)]
            .iter()
            .filter(|&c| keep(c))
            .map(|c| {
                if c.max <= max {
                    return c.len;
                }
                let span = (i128::from(c.max) - i128::from(c.min) + 1) as u128;
                let part = (i128::from(max) - i128::from(c.min) + 1) as u128;
                (c.len as u128 * part).div_ceil(span) as usize
            })
            .sum();
        sealed + self.open.span(min, max).len()
    }

    /// Appends the open tail's first `upto` times, and of its columns those
    /// `want` takes.
    fn extend_with_open(&self, out: &mut Plain, upto: usize, want: impl Fn(usize) -> bool) {
        out.times.extend_from_slice(&self.open.times[..upto]);
        self.extend_columns_with_open(out, upto, want);
    }

    /// Appends the first `upto` points of the open tail's columns `want` takes.
    fn extend_columns_with_open(&self, out: &mut Plain, upto: usize, want: impl Fn(usize) -> bool) {
        let pairs = out.columns.iter_mut().zip(&self.open.columns).enumerate();
        for (i, (mine, theirs)) in pairs {
            if let (Some(m), Some(t), true) = (mine, theirs, want(i)) {
                m.extend_from_prefix(t, upto);
            }
        }
    }

    /// Every point, decoded (tests).
    #[cfg(test)]
    pub(crate) fn all(&self) -> Plain {
        let mut p = Plain::default();
        p.reset_like(&self.open, |_| true);
        for c in &self.sealed {
            c.unpack_into(&mut p);
        }
        self.extend_with_open(&mut p, self.open.times.len(), |_| true);
        p
    }

    /// Points held.
    pub(crate) fn len(&self) -> usize {
        self.sealed_len + self.open.times.len()
    }

    /// Values held (times and fields, a field's nulls too).
    pub(crate) fn values(&self) -> usize {
        self.len() * (1 + self.open.cells())
    }

    /// What its points and tags take, bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.open.times.len() * (TIME_BYTES + VALUE_BYTES * self.open.cells())
            + self.strings
            + self.sealed_bytes
            + self.tag_bytes
    }

    pub(crate) fn oldest(&self) -> Option<i64> {
        self.sealed
            .first()
            .map(|c| c.min)
            .or(self.open.times.first().copied())
    }

    pub(crate) fn newest(&self) -> Option<i64> {
        self.open
            .times
            .last()
            .copied()
            .or(self.sealed.last().map(|c| c.max))
    }

    /// Merges a batch's `rows` of this series (in batch order) in, then seals
    /// the front of the open tail while it holds `chunk` points and an eighth
    /// more (so the newest eighth stays plain for rewrites of recent points).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn merge(
        &mut self,
        rows: &[u32],
        times: &[i64],
        fields: &[BatchField<'_>],
        present: &[bool],
        nfields: usize,
        overwrite: bool,
        chunk: usize,
    ) {
        if self.open.columns.len() < nfields {
            self.open.columns.resize_with(nfields, || None);
        }
        let appends = rows
            .iter()
            .map(|&r| times[r as usize])
            .is_sorted_by(|a, b| a < b)
            && self
                .newest()
                .is_none_or(|last| times[rows[0] as usize] > last);
        if appends {
            self.strings = self
                .strings
                .saturating_add_signed(self.open.append(rows, times, fields, present));
        } else {
            let sealed_max = self.sealed.last().map(|c| c.max);
            // (chunk, row) of the rows that fall into a sealed chunk's span or a
            // gap before one: a gap joins the chunk before it.
            let mut late: Vec<(usize, u32)> = Vec::new();
            for &r in rows {
                let t = times[r as usize];
                if sealed_max.is_some_and(|m| t <= m) {
                    let k = self
                        .sealed
                        .partition_point(|c| c.min <= t)
                        .saturating_sub(1);
                    late.push((k, r));
                } else {
                    let added = self.open.merge_row(r as usize, t, fields, overwrite);
                    self.strings = self.strings.saturating_add_signed(added);
                }
            }
            // Stable: a chunk's rows keep their batch order (last write wins).
            late.sort_by_key(|&(k, _)| k);
            for group in late.chunk_by(|a, b| a.0 == b.0) {
                self.remerge(
                    group[0].0,
                    group.iter().map(|&(_, r)| r),
                    times,
                    fields,
                    overwrite,
                );
            }
        }
        let tail = chunk + chunk / 8;
        let sealed = self.sealed.len();
        while self.open.times.len() >= tail {
            let c = Chunk::seal(&self.open, chunk);
            self.strings = self.strings.saturating_sub(self.open.drain_front(chunk));
            self.sealed_len += c.len;
            self.sealed_bytes += c.bytes();
            self.sealed.push(c);
        }
        if self.sealed.len() > sealed {
            // Draining keeps the buffers' capacity: a series merged whole (a
            // refill reads each series' window in one slice: 8,640 points of
            // TSBS's 24 h) would keep ~0.8 MB of plain buffers per series
            // behind ~100 KB of chunks, unseen by `chingest_hot_bytes`. A tail
            // never needs more than `tail` points, so steady appends do not
            // reallocate after this.
            self.open.shrink_to(tail);
        }
    }

    /// Merges `rows` into sealed chunk `k`: decoded, merged, sealed again.
    fn remerge(
        &mut self,
        k: usize,
        rows: impl Iterator<Item = u32>,
        times: &[i64],
        fields: &[BatchField<'_>],
        overwrite: bool,
    ) {
        let mut p = Plain::default();
        p.reset_like(&self.open, |_| true);
        let old = &self.sealed[k];
        old.unpack_into(&mut p);
        let (old_len, old_bytes) = (old.len, old.bytes());
        for r in rows {
            p.merge_row(r as usize, times[r as usize], fields, overwrite);
        }
        // A field the series gains here: the tail (the series' fields) gets it too.
        let len = self.open.times.len();
        for (mine, theirs) in self.open.columns.iter_mut().zip(&p.columns) {
            if let (None, Some(t)) = (&mine, theirs) {
                let mut c = t.empty_like();
                c.extend_nulls(len);
                *mine = Some(c);
            }
        }
        let new = Chunk::seal(&p, p.times.len());
        self.sealed_len = self.sealed_len - old_len + new.len;
        self.sealed_bytes = self.sealed_bytes - old_bytes + new.bytes();
        self.sealed[k] = new;
    }

    /// Drops the sealed chunks wholly older than `cut`, and, where none is left,
    /// the open tail's points older than `cut`.
    pub(crate) fn evict_before(&mut self, cut: i64) {
        let k = self.sealed.partition_point(|c| c.max < cut);
        for c in self.sealed.drain(..k) {
            self.sealed_len -= c.len;
            self.sealed_bytes -= c.bytes();
        }
        if self.sealed.is_empty() {
            let n = self.open.times.partition_point(|&t| t < cut);
            self.strings = self.strings.saturating_sub(self.open.drain_front(n));
        }
    }

    /// Sealed chunks (tests: that a test reaches into them).
    #[cfg(test)]
    pub(crate) fn sealed(&self) -> usize {
        self.sealed.len()
    }

    /// The sealed chunks themselves (tests).
    #[cfg(test)]
    pub(crate) fn sealed_chunks(&self) -> &[Chunk] {
        &self.sealed
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use engine::arrow::array::{
        ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray, UInt64Array,
    };
    use engine::arrow::datatypes::{DataType, Field, Schema};

    use super::super::table::Table;
    use crate::hot::column::Values;

    /// What an inline read counts: the sealed points from the first chunk's
    /// start to `max`, and the open tail's in the range only.
    #[test]
    fn a_read_counts_the_points_it_decodes_and_the_tail_it_reads() {
        // 8,640 points 10 s apart, in chunks of 1,024 (and a plain tail).
        let t = super::super::decode_timing::tsbs_host();
        let s = &t.series[&1];
        let at = |k: i64| k * 10_000_000_000;
        let sealed = s.sealed_points(i64::MIN, i64::MAX);
        assert_eq!(s.points_read(i64::MIN, i64::MAX, |_| true), s.len());
        // Points 1,500 to 2,999: chunk 1 from its start (1,024) and chunk 2
        // up to 2,999 (952); nothing of the tail.
        assert_eq!(s.points_read(at(1500), at(2999), |_| true), 1024 + 952);
        // The last 100 points: in the tail only.
        assert!(s.len() - sealed > 100);
        assert_eq!(s.points_read(at(8540), i64::MAX, |_| true), 100);
        // A chunk the read skips (its bounds fail the conditions) counts
        // nothing: here chunk 1, leaving chunk 2's 952.
        let chunk_1 = |c: &super::super::table::Chunk| c.min <= at(1024) && at(1024) <= c.max;
        assert_eq!(s.points_read(at(1500), at(2999), |c| !chunk_1(c)), 952);
        assert_eq!(s.points_read(at(8540), i64::MAX, |_| false), 100);
    }

    /// A read whose range starts inside a sealed chunk keeps no point
    /// before it (the values decoded from the mark before its first point,
    /// `codec::Mark`) and gives the points a whole decode gives.
    #[test]
    fn a_read_from_inside_a_chunk_keeps_its_range_only() {
        let t = super::super::decode_timing::tsbs_host();
        let s = &t.series[&1];
        let whole = s.all();
        let sealed = s.sealed_points(i64::MIN, i64::MAX) as i64;
        let fields: Vec<usize> = (0..t.fields.len()).collect();
        let at = |k: i64| k * 10_000_000_000;
        let ranges = [
            (0, 100),
            (255, 256),
            (256, 300),
            (511, 1030),
            (1023, 1024),
            (1500, 2999),
            (2047, 5000),
            (700, 8639),
            (sealed - 1, sealed + 5),
            (8600, 8639),
        ];
        for (a, b) in ranges {
            let mut scratch = super::Plain::default();
            let p = s.points(at(a), at(b), &fields, &mut scratch);
            if a < sealed {
                assert_eq!(p.times.first(), Some(&at(a)), "a point before {a} kept");
            }
            let (got, want) = (p.span(at(a), at(b)), whole.span(at(a), at(b)));
            assert_eq!(p.times[got.clone()], whole.times[want.clone()]);
            for (mine, theirs) in p.columns.iter().zip(&whole.columns) {
                let (Some(m), Some(w)) = (mine, theirs) else {
                    panic!("a column missing");
                };
                let (Values::Integer(mv), Values::Integer(wv)) = (&m.values, &w.values) else {
                    panic!("not integers");
                };
                assert_eq!(mv[got.clone()], wv[want.clone()], "{a}..{b}");
                assert_eq!(m.valid[got.clone()], w.valid[want.clone()]);
            }
        }
    }

    /// A row: time, s, b, u.
    type Row = (i64, Option<&'static str>, Option<bool>, Option<u64>);
    /// A point's fields, as a reader sees them.
    type Fields = (Option<String>, Option<bool>, Option<u64>);

    fn batch(rows: &[Row]) -> RecordBatch {
        let schema = Schema::new(vec![
            Field::new("time", DataType::Int64, false),
            Field::new("series_id", DataType::UInt64, false),
            Field::new("s", DataType::Utf8, true),
            Field::new("b", DataType::Boolean, true),
            Field::new("u", DataType::UInt64, true),
        ]);
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|_| 1))),
            Arc::new(StringArray::from_iter(rows.iter().map(|r| r.1))),
            Arc::new(BooleanArray::from_iter(rows.iter().map(|r| r.2))),
            Arc::new(UInt64Array::from_iter(rows.iter().map(|r| r.3))),
        ];
        RecordBatch::try_new(Arc::new(schema), cols).unwrap()
    }

    /// A series merged whole keeps no more plain buffer than a tail needs.
    #[test]
    fn a_series_merged_whole_gives_back_its_plain_buffers() {
        let mut t = Table::new();
        t.chunk = 16;
        let rows: Vec<Row> = (0..1_000)
            .map(|k| (k * 10, None, Some(k % 2 == 0), Some(k as u64)))
            .collect();
        assert!(t.insert(&batch(&rows), i64::MAX));
        let s = &t.series[&1];
        assert!(s.sealed() >= 50);
        let tail = 16 + 16 / 8;
        assert!(
            s.open.times.capacity() <= tail,
            "{}",
            s.open.times.capacity()
        );
        for c in s.open.columns.iter().flatten() {
            assert!(c.valid.capacity() <= tail, "{}", c.valid.capacity());
        }
    }

    /// Strings (repeated, empty, absent), booleans and unsigned (past
    /// `i64::MAX`) sealed, rewritten inside a sealed chunk, and read back.
    #[test]
    fn strings_booleans_and_unsigned_survive_sealing_and_rewrites() {
        let mut t = Table::new();
        t.chunk = 4;
        let words = ["up", "up", "", "down", "up"];
        let rows: Vec<Row> = (0..30)
            .map(|k| {
                let s = (k % 7 != 3).then_some(words[k as usize % 5]);
                let b = (k % 5 != 1).then_some(k % 3 == 0);
                let u = (k % 4 != 2).then_some(u64::MAX - k as u64 * 1_000_000_007);
                (k * 10, s, b, u)
            })
            .collect();
        assert!(t.insert(&batch(&rows), i64::MAX));
        assert!(t.series[&1].sealed() >= 5);
        // A rewrite of a sealed point's string, and a late point.
        let later: Vec<Row> = vec![
            (50, Some("rewritten"), None, None),
            (55, None, Some(true), Some(7)),
        ];
        assert!(t.insert(&batch(&later), i64::MAX));
        let mut model: BTreeMap<i64, Fields> = BTreeMap::new();
        for &(time, s, b, u) in rows.iter().chain(&later) {
            let p = model.entry(time).or_default();
            p.0 = s.map(str::to_string).or(p.0.take());
            p.1 = b.or(p.1);
            p.2 = u.or(p.2);
        }
        let all = t.series[&1].all();
        assert_eq!(all.times, model.keys().copied().collect::<Vec<_>>());
        let col = |k: usize| all.columns[k].as_ref().unwrap();
        let (Values::String(s), Values::Boolean(b), Values::Unsigned(u)) =
            (&col(0).values, &col(1).values, &col(2).values)
        else {
            panic!("types changed")
        };
        for (k, p) in model.values().enumerate() {
            let seen = (
                col(0).valid[k].then(|| s[k].to_string()),
                col(1).valid[k].then_some(b[k]),
                col(2).valid[k].then_some(u[k]),
            );
            assert_eq!(&seen, p, "point {k}");
        }
        assert_eq!(t.bytes, t.series[&1].bytes());
    }
}
