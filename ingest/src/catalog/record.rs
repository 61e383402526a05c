//! The metadata record codec: every record the catalog persists, and the database registry's,
//! as one typed [`Record`]. The bytes are the format documented in the [module](super) and
//! must not change: data directories written by older versions load with this code.

use crate::error::CatalogError;
use crate::point::FieldType;
use crate::series::SeriesKey;

/// Key prefix of every schema and series record.
pub const RECORD_PREFIX: &[u8] = b"ic1";

/// Key prefix of the database registry's records (the database name follows, unprefixed).
pub const DB_RECORD_PREFIX: &[u8] = b"srv1D";

/// A metadata record: key and value bytes.
pub type MetaRecord = (Vec<u8>, Vec<u8>);

/// One metadata record, decoded. Names of measurements, tags and fields are the bytes
/// written (line protocol does not require UTF-8); database names are UTF-8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A measurement exists in `db`.
    Measurement {
        /// Database.
        db: String,
        /// Measurement name.
        measurement: Vec<u8>,
    },
    /// A field of a measurement and its type (the first type written wins).
    Field {
        /// Database.
        db: String,
        /// Measurement name.
        measurement: Vec<u8>,
        /// Field key.
        field: Vec<u8>,
        /// The field's type.
        ty: FieldType,
    },
    /// A tag key of a measurement.
    Tag {
        /// Database.
        db: String,
        /// Measurement name.
        measurement: Vec<u8>,
        /// Tag key.
        key: Vec<u8>,
    },
    /// A value of a tag key (counted for the values-per-tag limit).
    TagValue {
        /// Database.
        db: String,
        /// Measurement name.
        measurement: Vec<u8>,
        /// Tag key.
        key: Vec<u8>,
        /// Tag value.
        value: Vec<u8>,
    },
    /// A series of `db`: its id and canonical key.
    Series {
        /// Database.
        db: String,
        /// Series id ([`series_id`](crate::series::series_id) of the key).
        id: u64,
        /// The canonical series key.
        key: SeriesKey,
    },
    /// A database exists (`CREATE DATABASE`), with a retention in seconds (0 = forever).
    Database {
        /// Database name.
        name: String,
        /// Retention in seconds; 0 keeps the data forever.
        retention_secs: u64,
    },
    /// A database was dropped (`DROP DATABASE`).
    DatabaseDropped {
        /// Database name.
        name: String,
    },
}

/// The kind byte after [`RECORD_PREFIX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Kind {
    Measurement = b'M',
    Field = b'F',
    Tag = b'T',
    TagValue = b'V',
    Series = b'S',
}

impl Kind {
    /// Every kind: the key prefixes a dropped database's records fall under.
    pub(super) const ALL: [Kind; 5] = [
        Kind::Measurement,
        Kind::Field,
        Kind::Tag,
        Kind::TagValue,
        Kind::Series,
    ];
}

impl Record {
    /// The record's key and value bytes.
    pub fn encode(&self) -> MetaRecord {
        match self {
            Record::Measurement { db, measurement } => measurement_record(db, measurement),
            Record::Field {
                db,
                measurement,
                field,
                ty,
            } => field_record(db, measurement, field, *ty),
            Record::Tag {
                db,
                measurement,
                key,
            } => tag_record(db, measurement, key),
            Record::TagValue {
                db,
                measurement,
                key,
                value,
            } => tag_value_record(db, measurement, key, value),
            Record::Series { db, id, key } => series_record(db, *id, key.as_bytes().to_vec()),
            Record::Database {
                name,
                retention_secs,
            } => database_record(name, *retention_secs),
            Record::DatabaseDropped { name } => (database_key(name), b"0".to_vec()),
        }
    }

    /// Decodes one record. `Ok(None)` for a key that belongs to someone else (neither prefix);
    /// an error for a catalog record that does not follow the format. Registry values are read
    /// leniently, as they always were: `1` (exists; what older versions wrote),
    /// `1;retention=<secs>` (an unreadable retention keeps the data: 0), anything else dropped.
    pub fn decode(key: &[u8], value: &[u8]) -> Result<Option<Record>, CatalogError> {
        if let Some(name) = key.strip_prefix(DB_RECORD_PREFIX) {
            return Ok(Some(decode_database(name, value)));
        }
        match key.strip_prefix(RECORD_PREFIX) {
            Some([kind, body @ ..]) => decode_catalog(key, *kind, body, value).map(Some),
            _ => Ok(None),
        }
    }
}

/// The key prefix of `db`'s series records, for a prefix scan of its series.
pub fn series_prefix(db: &str) -> Vec<u8> {
    kind_prefix(Kind::Series, db)
}

/// The key prefix of `db`'s records of `kind`.
pub(super) fn kind_prefix(kind: Kind, db: &str) -> Vec<u8> {
    catalog_key(kind, &[db.as_bytes()])
}

/// The key prefix of `measurement`'s records of `kind` in `db` (a measurement's name is
/// length-prefixed: never a prefix of another measurement's).
pub(super) fn measurement_prefix(kind: Kind, db: &str, measurement: &[u8]) -> Vec<u8> {
    catalog_key(kind, &[db.as_bytes(), measurement])
}

pub(super) fn measurement_record(db: &str, measurement: &[u8]) -> MetaRecord {
    let key = catalog_key(Kind::Measurement, &[db.as_bytes(), measurement]);
    (key, Vec::new())
}

pub(super) fn field_record(
    db: &str,
    measurement: &[u8],
    field: &[u8],
    ty: FieldType,
) -> MetaRecord {
    let key = catalog_key(Kind::Field, &[db.as_bytes(), measurement, field]);
    (key, vec![ty as u8])
}

pub(super) fn tag_record(db: &str, measurement: &[u8], tag_key: &[u8]) -> MetaRecord {
    let key = catalog_key(Kind::Tag, &[db.as_bytes(), measurement, tag_key]);
    (key, Vec::new())
}

pub(super) fn tag_value_record(
    db: &str,
    measurement: &[u8],
    tag_key: &[u8],
    value: &[u8],
) -> MetaRecord {
    let key = catalog_key(
        Kind::TagValue,
        &[db.as_bytes(), measurement, tag_key, value],
    );
    (key, Vec::new())
}

/// A series record; `canonical` is the series key ([`SeriesKey`] bytes).
pub(super) fn series_record(db: &str, id: u64, canonical: Vec<u8>) -> MetaRecord {
    let mut key = kind_prefix(Kind::Series, db);
    key.extend_from_slice(&id.to_be_bytes());
    (key, canonical)
}

fn database_key(name: &str) -> Vec<u8> {
    [DB_RECORD_PREFIX, name.as_bytes()].concat()
}

fn database_record(name: &str, retention_secs: u64) -> MetaRecord {
    let value = if retention_secs == 0 {
        b"1".to_vec()
    } else {
        format!("1;retention={retention_secs}").into_bytes()
    };
    (database_key(name), value)
}

fn decode_database(name: &[u8], value: &[u8]) -> Record {
    let name = String::from_utf8_lossy(name).into_owned();
    match value.strip_prefix(b"1") {
        Some(rest) => Record::Database {
            name,
            retention_secs: rest
                .strip_prefix(b";retention=")
                .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())
                .unwrap_or(0),
        },
        None => Record::DatabaseDropped { name },
    }
}

/// `"ic1" kind lp(part)...` where `lp(x)` is `u32be(len(x)) x`.
fn catalog_key(kind: Kind, parts: &[&[u8]]) -> Vec<u8> {
    let len = RECORD_PREFIX.len() + 1 + parts.iter().map(|p| p.len() + 4).sum::<usize>();
    let mut k = Vec::with_capacity(len);
    k.extend_from_slice(RECORD_PREFIX);
    k.push(kind as u8);
    for p in parts {
        k.extend_from_slice(&(p.len() as u32).to_be_bytes());
        k.extend_from_slice(p);
    }
    k
}

/// Up to `max` length-prefixed parts from the front of `b`, and the bytes after them; `None`
/// when a part runs past the end.
fn split_lp(mut b: &[u8], max: usize) -> Option<(Vec<&[u8]>, &[u8])> {
    let mut parts = Vec::new();
    while b.len() >= 4 && parts.len() < max {
        let n = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        if b.len() - 4 < n {
            return None;
        }
        parts.push(&b[4..4 + n]);
        b = &b[4 + n..];
    }
    Some((parts, b))
}

/// An `ic1` record: `kind` and the key `body` after it.
fn decode_catalog(key: &[u8], kind: u8, body: &[u8], value: &[u8]) -> Result<Record, CatalogError> {
    let corrupt = |reason| CatalogError::CorruptRecord {
        key: key.to_vec(),
        reason,
    };
    let max_parts = if kind == Kind::Series as u8 { 1 } else { 4 };
    let (parts, rest) = split_lp(body, max_parts).ok_or(corrupt("bad length prefix"))?;
    let db = parts.first().ok_or(corrupt("missing database"))?;
    let db = std::str::from_utf8(db)
        .map_err(|_| corrupt("database is not UTF-8"))?
        .to_owned();
    let want = match kind {
        b'M' => 2,
        b'F' | b'T' => 3,
        b'V' => 4,
        b'S' => return decode_series(db, &parts, rest, value).map_err(corrupt),
        _ => return Err(corrupt("unknown record kind")),
    };
    if parts.len() != want || !rest.is_empty() {
        return Err(corrupt("wrong number of key parts"));
    }
    let part = |i: usize| parts[i].to_vec();
    Ok(match kind {
        b'M' => Record::Measurement {
            db,
            measurement: part(1),
        },
        b'F' => Record::Field {
            db,
            measurement: part(1),
            field: part(2),
            ty: decode_field_type(value).ok_or(corrupt("bad field type"))?,
        },
        b'T' => Record::Tag {
            db,
            measurement: part(1),
            key: part(2),
        },
        _ => Record::TagValue {
            db,
            measurement: part(1),
            key: part(2),
            value: part(3),
        },
    })
}

fn decode_field_type(value: &[u8]) -> Option<FieldType> {
    match value {
        [b] => FieldType::from_u8(*b),
        _ => None,
    }
}

/// `"ic1" 'S' lp(db) u64be(id)` → the canonical key in `value`.
fn decode_series(
    db: String,
    parts: &[&[u8]],
    rest: &[u8],
    value: &[u8],
) -> Result<Record, &'static str> {
    let id: [u8; 8] = rest.try_into().map_err(|_| "bad series record")?;
    if parts.len() != 1 {
        return Err("bad series record");
    }
    let key = SeriesKey::from_canonical(value.to_vec()).map_err(|_| "bad series key")?;
    Ok(Record::Series {
        db,
        id: u64::from_be_bytes(id),
        key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `"ic1" kind lp(part)...`, written out by hand (the format, not the encoder).
    fn key(kind: u8, parts: &[&str]) -> Vec<u8> {
        let mut k = RECORD_PREFIX.to_vec();
        k.push(kind);
        for p in parts {
            k.extend_from_slice(&(p.len() as u32).to_be_bytes());
            k.extend_from_slice(p.as_bytes());
        }
        k
    }

    fn decode(k: &[u8], v: &[u8]) -> Option<Record> {
        Record::decode(k, v).expect("decodes")
    }

    /// Pinned bytes of every kind: existing data directories hold exactly these.
    #[test]
    fn bytes_are_the_documented_format() {
        let series = SeriesKey::new(b"cpu", &[("host", "a")]);
        let cases: Vec<(Record, MetaRecord)> = vec![
            (
                Record::Measurement {
                    db: "db".into(),
                    measurement: b"cpu".to_vec(),
                },
                (b"ic1M\0\0\0\x02db\0\0\0\x03cpu".to_vec(), vec![]),
            ),
            (
                Record::Field {
                    db: "db".into(),
                    measurement: b"cpu".to_vec(),
                    field: b"usage".to_vec(),
                    ty: FieldType::UInteger,
                },
                (
                    b"ic1F\0\0\0\x02db\0\0\0\x03cpu\0\0\0\x05usage".to_vec(),
                    vec![3],
                ),
            ),
            (
                Record::Tag {
                    db: "db".into(),
                    measurement: b"cpu".to_vec(),
                    key: b"host".to_vec(),
                },
                (key(b'T', &["db", "cpu", "host"]), vec![]),
            ),
            (
                Record::TagValue {
                    db: "db".into(),
                    measurement: b"cpu".to_vec(),
                    key: b"host".to_vec(),
                    value: b"a".to_vec(),
                },
                (key(b'V', &["db", "cpu", "host", "a"]), vec![]),
            ),
            (
                Record::Series {
                    db: "db".into(),
                    id: 0x0102_0304_0506_0708,
                    key: series.clone(),
                },
                (
                    b"ic1S\0\0\0\x02db\x01\x02\x03\x04\x05\x06\x07\x08".to_vec(),
                    b"\x01\x03\0\0\0cpu\x04\0\0\0host\x01\0\0\0a".to_vec(),
                ),
            ),
            (
                Record::Database {
                    name: "db".into(),
                    retention_secs: 0,
                },
                (b"srv1Ddb".to_vec(), b"1".to_vec()),
            ),
            (
                Record::Database {
                    name: "db".into(),
                    retention_secs: 7200,
                },
                (b"srv1Ddb".to_vec(), b"1;retention=7200".to_vec()),
            ),
            (
                Record::DatabaseDropped { name: "db".into() },
                (b"srv1Ddb".to_vec(), b"0".to_vec()),
            ),
        ];
        for (record, bytes) in cases {
            assert_eq!(record.encode(), bytes, "{record:?}");
            assert_eq!(decode(&bytes.0, &bytes.1), Some(record));
        }
    }

    /// Ported from the server's `SchemaIndex` test (the server's second decoder of these
    /// records, now gone): what each record says, and that malformed ones are refused (the
    /// index skipped them; the catalog, which loads the same records, always refused them).
    #[test]
    fn schema_index_reads_catalog_records() {
        assert_eq!(
            decode(&key(b'M', &["db", "cpu"]), b""),
            Some(Record::Measurement {
                db: "db".into(),
                measurement: b"cpu".to_vec()
            })
        );
        assert_eq!(
            decode(&key(b'T', &["db", "cpu", "host"]), b""),
            Some(Record::Tag {
                db: "db".into(),
                measurement: b"cpu".to_vec(),
                key: b"host".to_vec()
            })
        );
        for ty in [FieldType::Float, FieldType::UInteger] {
            assert_eq!(
                decode(&key(b'F', &["db", "cpu", "usage"]), &[ty as u8]),
                Some(Record::Field {
                    db: "db".into(),
                    measurement: b"cpu".to_vec(),
                    field: b"usage".to_vec(),
                    ty
                })
            );
        }
        assert!(Record::decode(&key(b'F', &["db", "cpu", "bad"]), &[99]).is_err());
        assert!(Record::decode(&key(b'F', &["db", "cpu", "bad"]), &[1, 1]).is_err());
        assert!(Record::decode(&key(b'T', &["db", "truncated"])[..10], b"").is_err());
        assert!(Record::decode(&key(b'T', &["db", "cpu"]), b"").is_err());
        assert!(Record::decode(&key(b'M', &["db", "cpu", "x"]), b"").is_err());
        assert!(Record::decode(b"ic1Z", b"").is_err());
        assert!(Record::decode(&key(b'S', &["db"]), b"").is_err(), "no id");
        let mut bad_key = key(b'S', &["db"]);
        bad_key.extend_from_slice(&7u64.to_be_bytes());
        assert!(
            Record::decode(&bad_key, b"\x02junk").is_err(),
            "not a series key"
        );
        assert_eq!(
            decode(b"srv1Ddb", b"1"),
            Some(Record::Database {
                name: "db".into(),
                retention_secs: 0
            })
        );
        // Someone else's keys.
        assert_eq!(decode(b"wal/flushed", b"x"), None);
        assert_eq!(decode(b"ic1", b""), None);
        assert_eq!(decode(b"srv1", b"1"), None);
    }

    /// Ported from the server (`db_record` / `parse_db_record`, now this codec).
    #[test]
    fn database_records_round_trip_and_read_old_ones() {
        let db = |retention_secs| Record::Database {
            name: "d".into(),
            retention_secs,
        };
        assert_eq!(db(0).encode().1, b"1");
        assert_eq!(db(7200).encode().1, b"1;retention=7200");
        for secs in [0, 3600, u64::MAX] {
            let (k, v) = db(secs).encode();
            assert_eq!(decode(&k, &v), Some(db(secs)));
        }
        let dropped = Some(Record::DatabaseDropped { name: "d".into() });
        assert_eq!(
            decode(b"srv1Dd", b"1"),
            Some(db(0)),
            "written by older versions"
        );
        assert_eq!(decode(b"srv1Dd", b"0"), dropped);
        assert_eq!(decode(b"srv1Dd", b""), dropped);
        assert_eq!(
            decode(b"srv1Dd", b"1;retention=x"),
            Some(db(0)),
            "keep, never delete"
        );
    }

    #[test]
    fn series_prefix_covers_one_database() {
        let (k, _) = series_record(
            "ab",
            1,
            SeriesKey::new::<&str, &str>(b"m", &[]).into_bytes(),
        );
        assert!(k.starts_with(&series_prefix("ab")));
        assert!(!k.starts_with(&series_prefix("a")));
        assert!(!k.starts_with(&kind_prefix(Kind::Measurement, "ab")));
    }
}
