//! Line splitting: where a line of line protocol ends, and where a large body may be cut into
//! chunks for parallel parsing.
//!
//! Line ends follow InfluxDB 1.x's `scanLine`: a backslash skips the next byte, and a newline
//! inside a double-quoted string field value does not end the line.

/// Port of Go's `models.scanLine`: returns the index of the newline that ends the line starting
/// at `i` (or `buf.len()`).
///
/// Used for comment lines and for lines that failed to parse, where the parser's own notion
/// of the line end is unavailable; valid lines end where the parser stops.
pub fn scan_line(buf: &[u8], mut i: usize) -> usize {
    let mut quoted = false;
    let mut fields = false;
    let mut equals = 0usize;
    let mut commas = 0usize;
    while i < buf.len() {
        let c = buf[i];
        if c == b'\\' {
            i += 2;
            continue;
        }
        if c == b' ' {
            fields = true;
        }
        if fields {
            if !quoted && c == b'=' {
                i += 1;
                equals += 1;
                continue;
            } else if !quoted && c == b',' {
                i += 1;
                commas += 1;
                continue;
            } else if c == b'"' && equals > commas {
                i += 1;
                quoted = !quoted;
                continue;
            }
        }
        if c == b'\n' && !quoted {
            break;
        }
        i += 1;
    }
    i.min(buf.len())
}

/// Tentative chunk boundaries for parallel parsing: `[0, b1, .., len]`, each `b` just after a
/// newline, chunks about `chunk_bytes` long.
///
/// A newline may sit inside a quoted string; the parser detects that (the previous chunk's
/// last line runs past the boundary) and re-parses from the true line start, so these are
/// hints, never trusted.
pub fn chunk_bounds(body: &[u8], chunk_bytes: usize) -> Vec<usize> {
    let chunk_bytes = chunk_bytes.max(1);
    let mut bounds = Vec::with_capacity(body.len() / chunk_bytes + 2);
    bounds.push(0);
    let mut pos = 0;
    while body.len() - pos > chunk_bytes {
        let probe = pos + chunk_bytes;
        match memchr::memchr(b'\n', &body[probe..]) {
            Some(off) if probe + off + 1 < body.len() => {
                pos = probe + off + 1;
                bounds.push(pos);
            }
            _ => break,
        }
    }
    bounds.push(body.len());
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_line_quotes_and_escapes() {
        let b = b"m f=\"a\nb\" 1\nm f=1";
        assert_eq!(scan_line(b, 0), 11);
        assert_eq!(&b[12..scan_line(b, 12)], b"m f=1");
        // Escaped newline stays in the line.
        let b = b"m\\\nx f=1\nn f=2";
        assert_eq!(scan_line(b, 0), 8);
        // A quote in a tag value does not open a string.
        let b = b"m,t=\"x f=1\nn f=2";
        assert_eq!(scan_line(b, 0), 10);
    }

    #[test]
    fn bounds_follow_newlines() {
        let body = b"aaaa\nbbbb\ncccc\ndddd\n";
        let b = chunk_bounds(body, 6);
        assert_eq!(b, vec![0, 10, 20]);
        for w in b.windows(2) {
            assert!(w[0] == 0 || body[w[0] - 1] == b'\n');
        }
        assert_eq!(chunk_bounds(b"", 4), vec![0, 0]);
        assert_eq!(chunk_bounds(b"abc", 4), vec![0, 3]);
    }
}
