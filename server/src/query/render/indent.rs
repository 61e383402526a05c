//! `pretty=true`: Go's `json.Indent` over the compact document.

/// Go's `json.Indent(dst, src, "", "    ")` as a filter over compact JSON fed
/// in pieces: a newline and indentation after `{`/`[` (none for an empty
/// `{}`/`[]`) and `,`, a space after `:`.
#[derive(Debug, Default)]
pub(super) struct Indenter {
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// An opening bracket whose newline waits for the next byte.
    pending: bool,
}

impl Indenter {
    pub(super) fn feed(&mut self, src: &[u8], dst: &mut Vec<u8>) {
        for &c in src {
            if self.in_string {
                dst.push(c);
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            if c == b'\n' {
                // The document's end.
                dst.push(c);
                continue;
            }
            if self.pending && c != b'}' && c != b']' {
                self.pending = false;
                self.depth += 1;
                newline(dst, self.depth);
            }
            match c {
                b'"' => {
                    self.in_string = true;
                    dst.push(c);
                }
                b'{' | b'[' => {
                    self.pending = true;
                    dst.push(c);
                }
                b',' => {
                    dst.push(c);
                    newline(dst, self.depth);
                }
                b':' => dst.extend_from_slice(b": "),
                b'}' | b']' => {
                    if self.pending {
                        self.pending = false;
                    } else {
                        self.depth = self.depth.saturating_sub(1);
                        newline(dst, self.depth);
                    }
                    dst.push(c);
                }
                _ => dst.push(c),
            }
        }
    }
}

fn newline(dst: &mut Vec<u8>, depth: usize) {
    dst.push(b'\n');
    for _ in 0..depth {
        dst.extend_from_slice(b"    ");
    }
}
