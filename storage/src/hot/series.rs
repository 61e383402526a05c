//! One series' held points: older runs sealed into compressed chunks
//! (`chunk.rs`), the newest in a plain open tail (`column.rs`), so that an
//! append, or a rewrite of a recent point, touches plain vectors only. A late
//! point or a rewrite that falls into a sealed chunk's span decodes that chunk,
//! merges by the same rule, and seals it again.

use super::chunk::Chunk;
use super::column::{BatchField, Plain};

/// Bytes per time and per field value (plus its validity byte) in the open tail.
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
}

impl Series {
    pub(crate) fn new(tags: Vec<(String, String)>) -> Series {
        Series {
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

    /// Its points with a time in `[min, max]`, plain, and maybe more around
    /// them: the open tail itself where no sealed chunk reaches into the range,
    /// else those chunks decoded (and the tail after them) into `scratch`, with
    /// only the fields in `fields` (the table's indexes; others `None`).
    pub(crate) fn points<'a>(
        &'a self,
        min: i64,
        max: i64,
        fields: &[usize],
        scratch: &'a mut Plain,
    ) -> &'a Plain {
        let from = self.sealed.partition_point(|c| c.max < min);
        let hit = &self.sealed[from..];
        let hit = &hit[..hit.partition_point(|c| c.min <= max)];
        if hit.is_empty() {
            return &self.open;
        }
        scratch.reset_like(&self.open, |i| fields.contains(&i));
        for c in hit {
            c.unpack_into(scratch);
        }
        if self.open.times.first().is_some_and(|&t| t <= max) {
            self.extend_with_open(scratch);
        }
        scratch
    }

    fn extend_with_open(&self, out: &mut Plain) {
        out.times.extend_from_slice(&self.open.times);
        for (mine, theirs) in out.columns.iter_mut().zip(&self.open.columns) {
            if let (Some(m), Some(t)) = (mine, theirs) {
                m.extend_from(t);
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
        self.extend_with_open(&mut p);
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

    /// What its points take, bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.open.times.len() * (TIME_BYTES + VALUE_BYTES * self.open.cells())
            + self.strings
            + self.sealed_bytes
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
        while self.open.times.len() >= chunk + chunk / 8 {
            let c = Chunk::seal(&self.open, chunk);
            self.strings = self.strings.saturating_sub(self.open.drain_front(chunk));
            self.sealed_len += c.len;
            self.sealed_bytes += c.bytes();
            self.sealed.push(c);
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
}
