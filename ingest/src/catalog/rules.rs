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
    } else if has_control(field) {
        CONTROL
    } else if is_engine_reserved(field) {
        "reserved by the storage engine"
    } else {
        return None;
    };
    Some(format!(
        "invalid field name: input field \"{}\" on measurement \"{}\" is invalid ({why})",
        shown(field),
        shown(meas)
    ))
}

/// Why a name is refused when it holds a control character.
const CONTROL: &str = "contains a control character";

/// Whether `name` holds a control character (C0, DEL or C1; `name` is UTF-8 or the caller
/// refused it already). The engine refuses NUL in a table or column name ("Null byte … not
/// allowed in name") only when the flush creates the table or column, long after the write
/// was acknowledged; the others are refused with it, as database names are
/// ([`check_database`](crate::names::check_database)): a name that cannot be printed on
/// one line cannot be written back as line protocol, nor shown, nor typed in a query.
pub(crate) fn has_control(name: &[u8]) -> bool {
    name.iter().any(|&b| b < 0x20 || b == 0x7f)
        || std::str::from_utf8(name).is_ok_and(|s| s.chars().any(char::is_control))
}

/// `name` for an error text: lossy UTF-8 with control characters escaped (`\0`, `\n`), so
/// the refusal names it readably and stays one line.
fn shown(name: &[u8]) -> String {
    let s = lossy(name);
    if s.chars().any(char::is_control) {
        s.chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect()
    } else {
        s.into_owned()
    }
}

/// Why a new series (`mname` with `tags`) of database `db` cannot be stored: a name that is
/// not UTF-8 (InfluxDB's `key contains invalid unicode`), a measurement or tag key new to the
/// catalog with a control character ([`has_control`]), a tag key the engine reserves, or
/// (for a measurement new to the catalog) a table name too long for the engine's files.
/// `tag_known` says whether a tag key is one of the measurement's already (those stay
/// writable whatever they hold: they were stored).
pub(super) fn series_names_refused(
    db: &str,
    mname: &[u8],
    meas_known: bool,
    tag_known: impl Fn(&[u8]) -> bool,
    tags: &[(&[u8], &[u8])],
) -> Option<String> {
    let utf8 = |b: &[u8]| std::str::from_utf8(b).is_ok();
    if !utf8(mname) || tags.iter().any(|(k, v)| !utf8(k) || !utf8(v)) {
        return Some(invalid_unicode(mname, tags));
    }
    if !meas_known && has_control(mname) {
        return Some(format!(
            "invalid measurement name: measurement \"{}\" is invalid ({CONTROL})",
            cut(&shown(mname), 64)
        ));
    }
    if let Some((k, _)) = tags.iter().find(|(k, _)| has_control(k) && !tag_known(k)) {
        return Some(format!(
            "invalid tag key: input tag \"{}\" on measurement \"{}\" is invalid ({CONTROL})",
            cut(&shown(k), 64),
            cut(&shown(mname), 64)
        ));
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
