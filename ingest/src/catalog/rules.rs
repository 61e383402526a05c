//! The door's name and column rules as the catalog applies them, with their reasons
//! (InfluxDB's wording where InfluxDB has the rule). The rules themselves and the engine facts
//! behind them are in [`names`](crate::names).

use super::resolve::lossy;
use super::Limits;
use crate::names::{file_name_len, is_engine_reserved, MAX_COLUMN_BYTES, MAX_TABLE_FILE_NAME};

/// Why the field `field` of measurement `meas`, new to the catalog, cannot be a column.
pub(super) fn field_name_refused(field: &[u8], meas: &[u8]) -> Option<String> {
    let why = if std::str::from_utf8(field).is_err() {
        "not UTF-8"
    } else if is_engine_reserved(field) {
        "reserved by the storage engine"
    } else {
        return None;
    };
    Some(format!(
        "invalid field name: input field \"{}\" on measurement \"{}\" is invalid ({why})",
        lossy(field),
        lossy(meas)
    ))
}

/// Why a new series (`mname` with `tags`) of database `db` cannot be stored: a name that is
/// not UTF-8 (InfluxDB's `key contains invalid unicode`), a tag key the engine reserves, or
/// (for a measurement new to the catalog) a table name too long for the engine's files.
pub(super) fn series_names_refused(
    db: &str,
    mname: &[u8],
    meas_known: bool,
    tags: &[(&[u8], &[u8])],
) -> Option<String> {
    let utf8 = |b: &[u8]| std::str::from_utf8(b).is_ok();
    if !utf8(mname) || tags.iter().any(|(k, v)| !utf8(k) || !utf8(v)) {
        return Some(invalid_unicode(mname, tags));
    }
    if let Some((k, _)) = tags.iter().find(|(k, _)| is_engine_reserved(k)) {
        return Some(format!(
            "invalid tag key: input tag \"{}\" on measurement \"{}\" is invalid (reserved by the storage engine)",
            lossy(k),
            lossy(mname)
        ));
    }
    if !meas_known {
        let room = MAX_TABLE_FILE_NAME.saturating_sub(file_name_len(db.as_bytes()));
        let len = file_name_len(mname);
        if len > room {
            return Some(format!(
                "invalid measurement name: measurement \"{}\" is invalid (it takes {len} bytes as a table file name, where every byte but A-Z a-z 0-9 _ takes 3; database \"{db}\" leaves {room})",
                cut(&lossy(mname), 64)
            ));
        }
    }
    None
}

#[cold]
fn invalid_unicode(mname: &[u8], tags: &[(&[u8], &[u8])]) -> String {
    let mut key = lossy(mname).into_owned();
    for (k, v) in tags {
        key.push(',');
        key.push_str(&lossy(k));
        key.push('=');
        key.push_str(&lossy(v));
    }
    format!("key contains invalid unicode: \"{}\"", cut(&key, 256))
}

/// Why a measurement with `have_cols` columns costing `have_bytes` cannot take `add_cols`
/// more costing `add_bytes` ([`column_cost`](crate::names::column_cost)).
pub(super) fn columns_exceeded(
    limits: Limits,
    mname: &[u8],
    have_cols: usize,
    have_bytes: usize,
    add_cols: usize,
    add_bytes: usize,
) -> Option<String> {
    let max = limits.max_columns_per_measurement;
    if max > 0 && (have_cols + add_cols) as u64 > max {
        return Some(format!(
            "max-columns-per-measurement limit exceeded: ({max}) measurement=\"{}\" would have {} columns (tag keys and fields)",
            cut(&lossy(mname), 64),
            have_cols + add_cols
        ));
    }
    if have_bytes + add_bytes > MAX_COLUMN_BYTES {
        return Some(format!(
            "max-column-bytes-per-measurement limit exceeded: ({MAX_COLUMN_BYTES}) measurement=\"{}\": the engine's statements (at most 262144 bytes) could not hold its column names",
            cut(&lossy(mname), 64)
        ));
    }
    None
}

/// `s` cut to `max` characters, with `…` when cut.
fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}
