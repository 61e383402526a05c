//! Series identity: a stable 64-bit id per (measurement, tag set).
//!
//! # Canonical series key, version 1
//!
//! ```text
//! key   = 0x01                                  ; format version
//!         u32le(len(measurement)) measurement   ; unescaped bytes
//!         { u32le(len(k)) k u32le(len(v)) v }   ; every tag, sorted by k bytewise, keys unique
//! id    = xxh3_64(key)                          ; XXH3 64-bit, seed 0 (xxhash-rust)
//! ```
//!
//! Length prefixes make the key unambiguous for any bytes in names and values (no escaping, no
//! separator collisions). The id is persisted (WAL, chDB), so this format and hash must never
//! change silently: the test vectors below fail if they do. A new format needs a new version byte.

use xxhash_rust::xxh3::xxh3_64;

/// Version byte that opens every canonical series key.
pub const SERIES_KEY_VERSION: u8 = 1;

/// Appends the canonical series key of `measurement` and `tags` (already sorted by key, keys
/// unique) to `out`.
pub fn write_series_key<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    out: &mut Vec<u8>,
    measurement: &[u8],
    tags: &[(K, V)],
) {
    out.push(SERIES_KEY_VERSION);
    push_lp(out, measurement);
    for (k, v) in tags {
        push_lp(out, k.as_ref());
        push_lp(out, v.as_ref());
    }
}

#[inline(always)]
fn push_lp(out: &mut Vec<u8>, b: &[u8]) {
    // Names are bounded far below 4 GiB by the request size limit; saturate rather than wrap.
    let n = u32::try_from(b.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(b);
}

/// [`push_lp`] copying short names without a `memcpy` call.
#[inline(always)]
fn push_lp_short(out: &mut Vec<u8>, b: &[u8]) {
    let n = u32::try_from(b.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&n.to_le_bytes());
    crate::point::extend_short(out, b);
}

/// Series id of `measurement` + `tags` (sorted by key, unique keys), using `scratch` as the
/// key buffer so the hot path does not allocate.
#[inline]
pub fn series_id_with<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    scratch: &mut Vec<u8>,
    measurement: &[u8],
    tags: &[(K, V)],
) -> u64 {
    scratch.clear();
    write_series_key(scratch, measurement, tags);
    xxh3_64(scratch)
}

/// [`series_id_with`] over `(key, value)` byte pairs from an iterator (the parsers' pools).
// Forced inline: an out-of-line call per point showed in the parser's instruction counts.
#[inline(always)]
pub(crate) fn series_id_pairs<'x>(
    scratch: &mut Vec<u8>,
    measurement: &[u8],
    tags: impl Iterator<Item = (&'x [u8], &'x [u8])>,
) -> u64 {
    scratch.clear();
    scratch.push(SERIES_KEY_VERSION);
    push_lp_short(scratch, measurement);
    for (k, v) in tags {
        push_lp_short(scratch, k);
        push_lp_short(scratch, v);
    }
    xxh3_64(scratch)
}

/// Series id of `measurement` + `tags` (sorted by key, unique keys).
pub fn series_id<K: AsRef<[u8]>, V: AsRef<[u8]>>(measurement: &[u8], tags: &[(K, V)]) -> u64 {
    series_id_with(&mut Vec::new(), measurement, tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_TAGS: [(&str, &str); 0] = [];

    #[test]
    fn canonical_key_bytes() {
        let mut k = Vec::new();
        write_series_key(&mut k, b"cpu", &[("host", "a")]);
        assert_eq!(
            k,
            b"\x01\x03\x00\x00\x00cpu\x04\x00\x00\x00host\x01\x00\x00\x00a".to_vec()
        );
    }

    /// Pinned ids: if any of these change, persisted series ids change — bump the version.
    #[test]
    fn test_vectors() {
        type Vector<'a> = (u64, &'a [u8], &'a [(&'a str, &'a str)]);
        let vectors: [Vector<'_>; 4] = [
            (0x5ccb_b1ad_77fa_f30a, b"cpu", &[]),
            (0xdb21_2773_4aaf_6e1e, b"cpu", &[("host", "a")]),
            (
                0x2b50_eb07_758d_245a,
                b"cpu",
                &[("host", "a"), ("region", "eu")],
            ),
            (0x8aed_64fc_3e78_174e, b"m,x y", &[("k=1", "v 2,")]),
        ];
        let got: Vec<u64> = vectors.iter().map(|(_, m, t)| series_id(m, t)).collect();
        let want: Vec<u64> = vectors.iter().map(|(id, _, _)| *id).collect();
        assert_eq!(got, want, "series id algorithm changed: got {got:#018x?}");
    }

    #[test]
    fn unambiguous() {
        // Same concatenated bytes, different split: must differ.
        assert_ne!(series_id(b"ab", &NO_TAGS), series_id(b"a", &[("b", "")]));
        assert_ne!(
            series_id(b"m", &[("ab", "c")]),
            series_id(b"m", &[("a", "bc")])
        );
        assert_ne!(series_id(b"m", &NO_TAGS), series_id(b"m", &[("", "")]));
    }
}
