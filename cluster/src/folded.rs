//! A read checked by the shards' index (a pushed-down aggregate's partial, a raw read with a
//! field condition) that carries the listing its check reads (issue #43): one request per
//! shard instead of the read and then the listing of the table's parts, each an 18.16
//! query's 2–6 ms on a small statement. The statement is
//!
//! ```sql
//! SELECT toUInt8(0) AS __k, <the read's columns>, '' AS __l FROM <the read's source> LIMIT n
//! UNION ALL SELECT toUInt8(1), <a null or '' per column>, __l FROM (<listing lines>)
//! FORMAT RowBinary
//! ```
//!
//! every row tagged: a row of the read (`0`, its columns, an empty line) or a line of the
//! listing (`1`, placeholders, the line). Why the listing sees the table no earlier than the
//! read did — what makes the check after the read exact — is in `identified.rs`. `UNION ALL`
//! of a subquery and of `system.*` tables, `concat`, `toString` and `CAST(NULL AS
//! Nullable(T))` are all 18.16 SQL; the acceptance test runs it on 26.7
//! (`tests/it/newer_server.rs`).

use engine::table::ColumnKind;

use crate::listing::listing_lines_sql;
use crate::row_binary::RowBinary;
use crate::schema;

/// The tag of a partial row.
const ROW: u8 = 0;
/// The tag of a line of the listing.
const LISTING: u8 = 1;

/// One column of a folded read's rows, as its `RowBinary` answer lays it out.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cell {
    /// A number of this many bytes (the key columns: `time`, `series_id`, `__seq`, `__row`).
    Fixed(usize),
    /// A user column cast to its kind's shard type ([`schema::shard_type`]).
    Column(ColumnKind),
}

/// What a listing row carries in the place of a user column of `kind`.
pub(crate) fn placeholder(kind: ColumnKind) -> String {
    match kind {
        ColumnKind::Tag => "''".to_string(),
        other => format!("CAST(NULL AS {})", schema::shard_type(other)),
    }
}

/// The statement reading `select` (each row's columns) `FROM {from}`, at most `limit` rows,
/// and the listing of `db`.`measurement`'s parts on the shard, its rows carrying
/// `placeholders` (one per column of `select`, of its type) in the read's columns.
pub(crate) fn statement(
    select: &[String],
    placeholders: &[String],
    from: &str,
    limit: u64,
    db: &str,
    measurement: &str,
) -> String {
    format!(
        "SELECT toUInt8({ROW}) AS __k, {}, '' AS __l FROM {from} LIMIT {limit} \
         UNION ALL SELECT toUInt8({LISTING}), {}, __l FROM ({}) FORMAT RowBinary",
        select.join(", "),
        placeholders.join(", "),
        listing_lines_sql(db, measurement),
    )
}

/// Moves past one value of `cell`.
pub(crate) fn skip(r: &mut RowBinary<'_>, cell: Cell) -> Result<(), String> {
    let kind = match cell {
        Cell::Fixed(n) => return r.take(n).map(|_| ()),
        Cell::Column(kind) => kind,
    };
    if kind == ColumnKind::Tag {
        return r.string().map(|_| ());
    }
    if !r.present()? {
        return Ok(());
    }
    match kind {
        ColumnKind::Float | ColumnKind::Integer | ColumnKind::Unsigned => r.take(8).map(|_| ()),
        ColumnKind::Boolean => r.take(1).map(|_| ()),
        ColumnKind::String | ColumnKind::Tag => r.string().map(|_| ()),
    }
}

/// The answer to [`statement`] split: the partial rows as the plain read would have answered
/// them (`RowBinary` of the columns), and the listing's lines (as the listing alone answers
/// in `TabSeparated`).
pub(crate) fn split(answer: &[u8], cells: &[Cell]) -> Result<(Vec<u8>, String), String> {
    let mut rows = Vec::with_capacity(answer.len());
    let mut listing = String::new();
    let mut r = RowBinary {
        bytes: answer,
        at: 0,
    };
    while !r.done() {
        let tag = r.take(1)?[0];
        let start = r.at;
        for cell in cells {
            skip(&mut r, *cell)?;
        }
        let columns = &answer[start..r.at];
        let line = r.string()?;
        match tag {
            ROW if line.is_empty() => rows.extend_from_slice(columns),
            LISTING => {
                listing.push_str(line);
                listing.push('\n');
            }
            _ => return Err(format!("unexpected row tag {tag} at byte {}", start - 1)),
        }
    }
    Ok((rows, listing))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(out: &mut Vec<u8>, s: &str) {
        assert!(s.len() < 128);
        out.push(s.len() as u8);
        out.extend_from_slice(s.as_bytes());
    }

    #[test]
    fn a_folded_answer_splits_into_the_partial_rows_and_the_listing_in_any_order() {
        let kinds = [
            Cell::Fixed(4),
            Cell::Column(ColumnKind::Tag),
            Cell::Column(ColumnKind::Float),
            Cell::Column(ColumnKind::Boolean),
        ];
        let mut answer = Vec::new();
        // A listing line first (26.7 may interleave the members), its columns placeholders.
        answer.push(LISTING);
        answer.extend_from_slice(&[0; 4]);
        string(&mut answer, "");
        answer.extend_from_slice(&[1, 1]);
        string(&mut answer, "\t\t0\t0\t0\t17");
        // A partial row.
        let mut row = 7u32.to_le_bytes().to_vec();
        string(&mut row, "eu");
        row.push(0);
        row.extend_from_slice(&2.5f64.to_bits().to_le_bytes());
        row.extend_from_slice(&[0, 1]);
        answer.push(ROW);
        answer.extend_from_slice(&row);
        string(&mut answer, "");
        answer.push(LISTING);
        answer.extend_from_slice(&[0; 4]);
        string(&mut answer, "");
        answer.extend_from_slice(&[1, 1]);
        string(&mut answer, "p_1_1_0\tp\t1\t1\t10\t17");
        let (rows, listing) = split(&answer, &kinds).unwrap();
        assert_eq!(rows, row);
        assert_eq!(listing, "\t\t0\t0\t0\t17\np_1_1_0\tp\t1\t1\t10\t17\n");
        // Cut short or an unknown tag: an error, never rows read as something else.
        assert!(split(&answer[..answer.len() - 1], &kinds).is_err());
        let mut bad = answer.clone();
        bad[0] = 7;
        assert!(split(&bad, &kinds).unwrap_err().contains("row tag 7"));
    }

    #[test]
    fn the_statement_tags_both_members_and_casts_each_placeholder_as_its_column() {
        let sql = statement(
            &[
                "CAST(__p0 AS String)".into(),
                "CAST(__p1 AS Nullable(Float64))".into(),
            ],
            &[placeholder(ColumnKind::Tag), placeholder(ColumnKind::Float)],
            "(SELECT 1)",
            11,
            "d",
            "m",
        );
        assert!(sql.starts_with(
            "SELECT toUInt8(0) AS __k, CAST(__p0 AS String), CAST(__p1 AS Nullable(Float64)), \
             '' AS __l FROM (SELECT 1) LIMIT 11 UNION ALL SELECT toUInt8(1), '', \
             CAST(NULL AS Nullable(Float64)), __l FROM (SELECT concat("
        ));
        assert!(sql.contains("FROM system.parts") && sql.ends_with(" FORMAT RowBinary"));
    }
}
