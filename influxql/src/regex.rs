//! Regex literals are checked when parsed, as InfluxDB compiles them then.
//! The syntax is RE2's (Go's `regexp`, ClickHouse's `match`); errors are
//! worded as Go words them (`error parsing regexp: missing closing ): `(``).

use regex_syntax::ast::{parse::ParserBuilder, ErrorKind};

/// Checks `pattern`; `Err` holds Go's message. Only errors RE2 certainly
/// shares are reported: where the two dialects differ (`a{` is a literal in
/// RE2) the pattern is let through for the engine to judge.
pub(crate) fn check(pattern: &str) -> Result<(), String> {
    let Err(e) = ParserBuilder::new().octal(true).build().parse(pattern) else {
        return Ok(());
    };
    let span = e.span();
    let fragment = pattern
        .get(span.start.offset..span.end.offset)
        .unwrap_or("");
    let (code, expr) = match e.kind() {
        ErrorKind::GroupUnclosed => ("missing closing )", pattern),
        ErrorKind::GroupUnopened => ("unexpected )", pattern),
        ErrorKind::ClassUnclosed => ("missing closing ]", &pattern[span.start.offset..]),
        ErrorKind::RepetitionMissing => {
            let op = pattern[span.start.offset..]
                .chars()
                .next()
                .map_or(0, char::len_utf8);
            let op = &pattern[span.start.offset..span.start.offset + op];
            ("missing argument to repetition operator", op)
        }
        ErrorKind::ClassRangeInvalid => ("invalid character class range", fragment),
        ErrorKind::NestLimitExceeded(_) => ("expression nests too deeply", pattern),
        _ => return Ok(()),
    };
    Err(format!("error parsing regexp: {code}: `{expr}`"))
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn go_wording() {
        assert_eq!(check("^(a|b)$"), Ok(()));
        assert_eq!(check(r"^\d+\.\d+$"), Ok(()));
        assert_eq!(check("a{"), Ok(()));
        assert_eq!(
            check("(").unwrap_err(),
            "error parsing regexp: missing closing ): `(`"
        );
        assert_eq!(
            check("a)").unwrap_err(),
            "error parsing regexp: unexpected ): `a)`"
        );
        assert_eq!(
            check("*a").unwrap_err(),
            "error parsing regexp: missing argument to repetition operator: `*`"
        );
        assert_eq!(
            check("x[a-").unwrap_err(),
            "error parsing regexp: missing closing ]: `[a-`"
        );
    }
}
