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

use std::fmt;

use xxhash_rust::xxh3::xxh3_64;

use crate::error::SeriesKeyError;
use crate::line_protocol::{escape_key, escape_measurement};
use crate::point::copy_short;

/// Version byte that opens every canonical series key.
pub const SERIES_KEY_VERSION: u8 = 1;

/// Appends the canonical series key of `measurement` and `tags` (already sorted by key, keys
/// unique) to `out`.
pub fn write_series_key<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    out: &mut Vec<u8>,
    measurement: &[u8],
    tags: &[(K, V)],
) {
    append_key(
        out,
        measurement,
        tags.iter().map(|(k, v)| (k.as_ref(), v.as_ref())),
    );
}

/// The one builder of canonical series keys (the parsers, the catalog's series records and
/// [`series_id`] all come here): the version byte, then each name's u32le length and bytes.
// Forced inline: the parsers call it once per point, and an out-of-line call showed in the
// parser's instruction counts.
#[inline(always)]
fn append_key<'x>(
    out: &mut Vec<u8>,
    measurement: &[u8],
    tags: impl Iterator<Item = (&'x [u8], &'x [u8])>,
) {
    out.push(SERIES_KEY_VERSION);
    put_name(out, measurement);
    for (k, v) in tags {
        put_name(out, k);
        put_name(out, v);
    }
}

/// Appends `v`'s length (u32le) and bytes: one capacity check per name (the growth path out
/// of line) and no `memcpy` call for short names.
#[inline(always)]
fn put_name(out: &mut Vec<u8>, v: &[u8]) {
    let n = v.len();
    if out.capacity() - out.len() < 4 + n {
        grow(out, 4 + n);
    }
    // Names are bounded far below 4 GiB by the request size limit; saturate rather than wrap.
    let prefix = u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
    let len = out.len();
    // SAFETY: the check above leaves at least `4 + n` writable bytes after `len`; the prefix
    // and `copy_short` write exactly those, before `set_len`.
    unsafe {
        let p = out.as_mut_ptr().add(len);
        std::ptr::write_unaligned(p as *mut [u8; 4], prefix);
        copy_short(p.add(4), v);
        out.set_len(len + 4 + n);
    }
}

#[cold]
#[inline(never)]
fn grow(out: &mut Vec<u8>, additional: usize) {
    out.reserve(additional);
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
    append_key(scratch, measurement, tags);
    xxh3_64(scratch)
}

/// Series id of `measurement` + `tags` (sorted by key, unique keys).
pub fn series_id<K: AsRef<[u8]>, V: AsRef<[u8]>>(measurement: &[u8], tags: &[(K, V)]) -> u64 {
    series_id_with(&mut Vec::new(), measurement, tags)
}

/// A canonical series key (the value of the catalog's series records), checked to be well
/// formed. [`Display`](fmt::Display) shows it as InfluxDB shows a series key
/// (`SHOW SERIES`): `measurement,k=v,...`, escaped as line protocol, tags with empty values
/// left out.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SeriesKey(Vec<u8>);

impl SeriesKey {
    /// The key of `measurement` and `tags` (sorted by key, unique keys).
    pub fn new<K: AsRef<[u8]>, V: AsRef<[u8]>>(measurement: &[u8], tags: &[(K, V)]) -> SeriesKey {
        let mut key = Vec::new();
        write_series_key(&mut key, measurement, tags);
        SeriesKey(key)
    }

    /// Checks that `bytes` is a version-1 canonical key.
    pub fn from_canonical(bytes: Vec<u8>) -> Result<SeriesKey, SeriesKeyError> {
        let invalid = |reason| SeriesKeyError {
            key: bytes.iter().take(64).copied().collect(),
            reason,
        };
        match bytes.first() {
            Some(&SERIES_KEY_VERSION) => {}
            Some(_) => return Err(invalid("unknown version")),
            None => return Err(invalid("empty")),
        }
        let mut names = Names(&bytes[1..]);
        let mut count = 0usize;
        while !names.0.is_empty() {
            names.next().ok_or_else(|| invalid("truncated name"))?;
            count += 1;
        }
        if count.is_multiple_of(2) {
            return Err(invalid("no measurement, or a tag without a value"));
        }
        Ok(SeriesKey(bytes))
    }

    /// The canonical bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The canonical bytes, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// The series id (xxh3-64 of the canonical bytes).
    pub fn id(&self) -> u64 {
        xxh3_64(&self.0)
    }

    /// The measurement (unescaped bytes).
    pub fn measurement(&self) -> &[u8] {
        self.names().next().unwrap_or_default()
    }

    /// The tags as `(key, value)` (unescaped bytes, sorted by key).
    pub fn tags(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let mut names = self.names();
        names.next();
        std::iter::from_fn(move || Some((names.next()?, names.next()?)))
    }

    fn names(&self) -> Names<'_> {
        Names(&self.0[1..])
    }
}

impl fmt::Display for SeriesKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = Vec::with_capacity(self.0.len());
        escape_measurement(&mut out, self.measurement());
        for (k, v) in self.tags().filter(|(_, v)| !v.is_empty()) {
            out.push(b',');
            escape_key(&mut out, k);
            out.push(b'=');
            escape_key(&mut out, v);
        }
        f.write_str(&String::from_utf8_lossy(&out))
    }
}

/// The length-prefixed names of a well-formed canonical key, after the version byte.
struct Names<'a>(&'a [u8]);

impl<'a> Iterator for Names<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let (len, rest) = self.0.split_first_chunk::<4>()?;
        let name = rest.get(..u32::from_le_bytes(*len) as usize)?;
        self.0 = &rest[name.len()..];
        Some(name)
    }
}

/// The measurement part of a series key as InfluxDB shows it (`cpu,host=a` → `cpu`): up to
/// the first comma not escaped by a backslash. The result is still escaped (`a\,b`).
pub fn measurement_of(series_key: &str) -> &str {
    let b = series_key.as_bytes();
    let mut i = 0;
    while let Some(off) = memchr::memchr(b',', &b[i..]) {
        let at = i + off;
        if at == 0 || b[at - 1] != b'\\' {
            return &series_key[..at];
        }
        i = at + 1;
    }
    series_key
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

    #[test]
    fn series_key_reads_back_and_shows_as_influxdb() {
        let key = SeriesKey::new(b"c,p u=x", &[("h st", "a=b,c"), ("z", "")]);
        assert_eq!(key.measurement(), b"c,p u=x");
        assert_eq!(
            key.tags().collect::<Vec<_>>(),
            vec![(&b"h st"[..], &b"a=b,c"[..]), (&b"z"[..], &b""[..])]
        );
        assert_eq!(
            key.id(),
            series_id(b"c,p u=x", &[("h st", "a=b,c"), ("z", "")])
        );
        // The measurement escapes `,` and space; tags also `=`; empty values are left out.
        assert_eq!(key.to_string(), "c\\,p\\ u=x,h\\ st=a\\=b\\,c");
        assert_eq!(SeriesKey::new::<&str, &str>(b"cpu", &[]).to_string(), "cpu");
        let again = SeriesKey::from_canonical(key.as_bytes().to_vec()).unwrap();
        assert_eq!(again, key);
        assert_eq!(measurement_of(&key.to_string()), "c\\,p\\ u=x");
    }

    #[test]
    fn series_key_refuses_malformed_bytes() {
        let good = SeriesKey::new(b"cpu", &[("host", "a")]).into_bytes();
        for bad in [
            &b""[..],
            &b"\x02\x03\0\0\0cpu"[..],
            &good[..good.len() - 1],
            &good[..good.len() - 5], // a tag key without its value
            &b"\x01"[..],            // no measurement
        ] {
            assert!(SeriesKey::from_canonical(bad.to_vec()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn measurement_of_honours_escapes() {
        for (key, m) in [
            ("cpu,host=a", "cpu"),
            ("cpu", "cpu"),
            ("c\\,pu,host=a", "c\\,pu"),
            ("c\\,pu", "c\\,pu"),
            ("a\\ b,x=y,z=w", "a\\ b"),
            (",x=y", ""),
            ("", ""),
        ] {
            assert_eq!(measurement_of(key), m, "{key:?}");
        }
    }
}
