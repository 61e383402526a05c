//! Boolean and string field values (numbers are in `number`).

use super::scan::at_eol;
use super::Reason;
use crate::point::{side_span, Span, Value};

/// Go's `scanBoolean`. Inlined for the same reason as
/// [`parse_number`](super::number::parse_number).
#[inline(always)]
pub(super) fn parse_bool(b: &[u8], start: usize) -> Result<(Value, usize), Reason> {
    if !matches!(b[start], b't' | b'f' | b'T' | b'F') {
        return Err("invalid boolean".into());
    }
    // `true` and `false` followed by a delimiter (what clients send): one compare each.
    let term = |j: usize| j >= b.len() || matches!(b[j], b',' | b' ' | b'\n');
    if let Some(w) = b.get(start..start + 4) {
        if w == b"true" && term(start + 4) {
            return Ok((Value::boolean(true), start + 4));
        }
        if w == b"fals" && b.get(start + 4) == Some(&b'e') && term(start + 5) {
            return Ok((Value::boolean(false), start + 5));
        }
    }
    let mut i = start + 1;
    while !term(i) {
        i += 1;
    }
    let v = match &b[start..i] {
        b"t" | b"T" | b"true" | b"True" | b"TRUE" => true,
        b"f" | b"F" | b"false" | b"False" | b"FALSE" => false,
        _ => return Err("invalid boolean".into()),
    };
    Ok((Value::boolean(v), i))
}

/// A double-quoted string value starting at `start` (the opening quote); an escaped value is
/// unescaped into `side`.
pub(super) fn parse_string(
    b: &[u8],
    start: usize,
    side: &mut Vec<u8>,
) -> Result<(Value, usize), Reason> {
    let mut i = start + 1;
    let mut esc = false;
    loop {
        match memchr::memchr2(b'"', b'\\', &b[i.min(b.len())..]) {
            None => return Err("unbalanced quotes".into()),
            Some(off) => {
                let j = i + off;
                if b[j] == b'\\' {
                    esc = true;
                    i = j + 2;
                    if i > b.len() {
                        return Err("unbalanced quotes".into());
                    }
                } else {
                    let next = j + 1;
                    // After the closing quote only a separator may follow.
                    if !(at_eol(b, next) || matches!(b[next], b',' | b' ')) {
                        return Err("invalid field format".into());
                    }
                    let span = if esc {
                        let off = side.len();
                        unescape_string(side, &b[start + 1..j]);
                        side_span(off, side.len() - off)
                    } else {
                        Span::body(start + 1, j - start - 1)
                    };
                    return Ok((Value::string(span), next));
                }
            }
        }
    }
}

/// Appends `raw` to `out` with `\\"` and `\\\\` unescaped; other backslashes stay literal.
fn unescape_string(out: &mut Vec<u8>, raw: &[u8]) {
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' && i + 1 < raw.len() && matches!(raw[i + 1], b'"' | b'\\') {
            out.push(raw[i + 1]);
            i += 2;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
}
