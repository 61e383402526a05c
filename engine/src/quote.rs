//! Names and literals in ClickHouse SQL, and its `TabSeparated` escapes read
//! back: every statement chingest writes quotes what it did not write itself,
//! and the engine's (or a ClickHouse server's) text answers are unescaped here.

/// `name` as a ClickHouse identifier in backticks.
pub fn quote_ident(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('`');
    for c in name.chars() {
        match c {
            '`' => out.push_str("\\`"),
            '\\' => out.push_str("\\\\"),
            _ => out.push(c),
        }
    }
    out.push('`');
    out
}

/// `value` as a ClickHouse string literal in single quotes.
pub fn quote_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        match c {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            _ => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A field of the engine's (or any ClickHouse server's) `TabSeparated` output as text: its
/// escapes (`\t`, `\n`, `\\`, …) undone.
pub fn unescape_tsv(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_and_strings_are_escaped() {
        assert_eq!(quote_ident("cpu"), "`cpu`");
        assert_eq!(quote_ident("a`b\\c"), "`a\\`b\\\\c`");
        assert_eq!(quote_string("it's"), "'it\\'s'");
        assert_eq!(quote_string("a\\b"), "'a\\\\b'");
    }
}
