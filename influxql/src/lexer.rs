//! The lexer: characters to [`Token`]s, tracking InfluxDB's positions
//! (zero-based line and character; `\r\n` and `\r` count as one newline).
//!
//! Regexes are context-dependent (`/` is also division), so the parser asks
//! for one explicitly with [`Lexer::scan_regex`] where the grammar allows it.

use crate::error::Pos;
use crate::token::{Kind, Token};

/// A saved lexer position, to go back to (InfluxDB's `Unscan`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cursor {
    i: usize,
    pos: Pos,
    /// The position of the character before `i`: InfluxDB reports strings
    /// and regexes there (its reader's `curr()` after an `unread()`).
    prev: Pos,
    /// Whether a scan read past the end without putting it back, as
    /// InfluxDB's reader does after a word, whitespace or an unterminated
    /// string: the end then counts one character further.
    eof_read: bool,
}

/// Scans one query text.
#[derive(Debug)]
pub(crate) struct Lexer {
    chars: Vec<char>,
    cur: Cursor,
}

fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n')
}

fn is_letter(c: char) -> bool {
    c.is_ascii_alphabetic()
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl Cursor {
    /// The character offset.
    pub(crate) fn offset(&self) -> usize {
        self.i
    }
}

impl Lexer {
    /// A lexer over `text`, newlines normalised as InfluxDB's reader does.
    pub(crate) fn new(text: &str) -> Lexer {
        let mut chars = Vec::with_capacity(text.len());
        let mut it = text.chars().peekable();
        while let Some(c) = it.next() {
            if c == '\r' {
                it.next_if_eq(&'\n');
                chars.push('\n');
            } else {
                chars.push(c);
            }
        }
        Lexer {
            chars,
            cur: Cursor {
                i: 0,
                pos: Pos::default(),
                prev: Pos::default(),
                eof_read: false,
            },
        }
    }

    /// Where the lexer is, as a character offset.
    pub(crate) fn offset(&self) -> usize {
        self.cur.i
    }

    /// Where the lexer is.
    pub(crate) fn cursor(&self) -> Cursor {
        self.cur
    }

    /// Goes back (or forward) to a saved position.
    pub(crate) fn reset(&mut self, c: Cursor) {
        self.cur = c;
    }

    /// The next character, not consumed.
    pub(crate) fn peek_char(&self) -> Option<char> {
        self.chars.get(self.cur.i).copied()
    }

    /// The next character, not consumed, as InfluxDB's parser peeks: at the
    /// end, that read counts (see [`Cursor::eof_read`]).
    pub(crate) fn peek_rune(&mut self) -> Option<char> {
        self.note_end();
        self.peek_char()
    }

    fn bump(&mut self) -> Option<char> {
        let Some(c) = self.peek_char() else {
            self.cur.eof_read = true;
            return None;
        };
        self.cur.prev = self.cur.pos;
        self.cur.i += 1;
        if c == '\n' {
            self.cur.pos.line += 1;
            self.cur.pos.char = 0;
        } else {
            self.cur.pos.char += 1;
        }
        Some(c)
    }

    /// Marks the end as read when the input is exhausted (see [`Cursor::eof_read`]).
    fn note_end(&mut self) {
        if self.peek_char().is_none() {
            self.cur.eof_read = true;
        }
    }

    fn bump_if(&mut self, want: char) -> bool {
        if self.peek_char() == Some(want) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn peek_second(&self) -> Option<char> {
        self.chars.get(self.cur.i + 1).copied()
    }

    /// The next token (whitespace and comments included).
    pub(crate) fn scan(&mut self) -> Token {
        let pos = self.cur.pos;
        let tok = |kind: Kind| Token {
            kind,
            pos,
            lit: String::new(),
        };
        let Some(c) = self.peek_char() else {
            let mut pos = pos;
            if self.cur.eof_read {
                pos.char += 1;
            }
            return Token {
                kind: Kind::Eof,
                pos,
                lit: String::new(),
            };
        };
        if is_ws(c) {
            while self.peek_char().is_some_and(is_ws) {
                self.bump();
            }
            self.note_end();
            return tok(Kind::Ws);
        }
        if is_letter(c) || c == '_' || c == '"' {
            return self.scan_ident(true);
        }
        if c.is_ascii_digit()
            || (c == '.' && self.peek_second().is_some_and(|d| d.is_ascii_digit()))
        {
            return self.scan_number();
        }
        let before = self.cur.prev;
        self.bump();
        let kind = match c {
            '\'' => return self.scan_string(before, '\''),
            '.' => Kind::Dot,
            '$' => return self.scan_bound_param(pos),
            '+' => Kind::Add,
            '-' if self.bump_if('-') => {
                while self.bump().is_some_and(|c| c != '\n') {}
                Kind::Comment
            }
            '-' => Kind::Sub,
            '*' => Kind::Mul,
            '/' if self.bump_if('*') => return self.skip_block_comment(pos),
            '/' => Kind::Div,
            '%' => Kind::Mod,
            '&' => Kind::BitAnd,
            '|' => Kind::BitOr,
            '^' => Kind::BitXor,
            '=' if self.bump_if('~') => Kind::EqRegex,
            '=' => Kind::Eq,
            '!' if self.bump_if('=') => Kind::Neq,
            '!' if self.bump_if('~') => Kind::NeqRegex,
            '>' if self.bump_if('=') => Kind::Gte,
            '>' => Kind::Gt,
            '<' if self.bump_if('=') => Kind::Lte,
            '<' if self.bump_if('>') => Kind::Neq,
            '<' => Kind::Lt,
            '(' => Kind::LParen,
            ')' => Kind::RParen,
            ',' => Kind::Comma,
            ';' => Kind::Semicolon,
            ':' if self.bump_if(':') => Kind::DoubleColon,
            ':' => Kind::Colon,
            other => {
                return Token {
                    kind: Kind::Illegal,
                    pos,
                    lit: other.to_string(),
                }
            }
        };
        tok(kind)
    }

    fn skip_block_comment(&mut self, pos: Pos) -> Token {
        let mut star = false;
        while let Some(c) = self.bump() {
            if star && c == '/' {
                return Token {
                    kind: Kind::Comment,
                    pos,
                    lit: String::new(),
                };
            }
            star = c == '*';
        }
        Token {
            kind: Kind::Illegal,
            pos,
            lit: String::new(),
        }
    }

    /// A bare word (keyword or identifier) or a double-quoted identifier.
    /// As in InfluxDB, a quote ends the word: `ab"cd"` scans as `cd`.
    fn scan_ident(&mut self, lookup: bool) -> Token {
        let pos = self.cur.pos;
        let mut word = String::new();
        while let Some(c) = self.peek_char() {
            if c == '"' {
                let before_quote = self.cur.prev;
                self.bump();
                let tok = self.scan_string(before_quote, '"');
                return match tok.kind {
                    Kind::Str => Token {
                        kind: Kind::Ident,
                        pos,
                        lit: tok.lit,
                    },
                    _ => tok,
                };
            }
            if !is_ident_char(c) {
                break;
            }
            word.push(c);
            self.bump();
        }
        self.note_end();
        let kind = if lookup {
            Kind::of_word(&word)
        } else {
            Kind::Ident
        };
        let lit = if kind == Kind::Ident {
            word
        } else {
            String::new()
        };
        Token { kind, pos, lit }
    }

    /// The rest of a quoted string or identifier (the opening quote is
    /// consumed; `pos` is where InfluxDB reports it, the character before):
    /// `\n`, `\\`, `\"`, `\'` are the only escapes.
    fn scan_string(&mut self, pos: Pos, quote: char) -> Token {
        let mut lit = String::new();
        loop {
            let at = self.cur.pos;
            match self.bump() {
                Some(c) if c == quote => {
                    return Token {
                        kind: Kind::Str,
                        pos,
                        lit,
                    }
                }
                None | Some('\n') => {
                    return Token {
                        kind: Kind::BadString,
                        pos,
                        lit,
                    }
                }
                Some('\\') => {
                    let esc_at = self.cur.pos;
                    match self.bump() {
                        Some('n') => lit.push('\n'),
                        Some(c @ ('\\' | '"' | '\'')) => lit.push(c),
                        other => {
                            return Token {
                                kind: Kind::BadEscape,
                                pos: if other.is_some() { esc_at } else { at },
                                lit: format!("\\{}", other.unwrap_or('\0')),
                            }
                        }
                    }
                }
                Some(c) => lit.push(c),
            }
        }
    }

    /// `$name` or `$"quoted name"` (the `$`, at `pos`, is consumed).
    fn scan_bound_param(&mut self, pos: Pos) -> Token {
        let tok = self.scan_ident(false);
        Token {
            kind: if tok.kind == Kind::Ident {
                Kind::BoundParam
            } else {
                tok.kind
            },
            pos,
            lit: format!("${}", tok.lit),
        }
    }

    /// Digits, optionally `.digits` (a number) or trailing letters (a duration).
    fn scan_number(&mut self) -> Token {
        let pos = self.cur.pos;
        let mut lit = self.digits();
        let mut decimal = false;
        if self.peek_char() == Some('.') {
            self.bump();
            decimal = true;
            if self.peek_char().is_some_and(|c| c.is_ascii_digit()) {
                lit.push('.');
                lit.push_str(&self.digits());
            }
        }
        if decimal {
            return Token {
                kind: Kind::Number,
                pos,
                lit,
            };
        }
        let unit_char = |c: char| is_letter(c) || c == 'µ';
        if !self.peek_char().is_some_and(unit_char) {
            return Token {
                kind: Kind::Integer,
                pos,
                lit,
            };
        }
        while let Some(c) = self
            .peek_char()
            .filter(|&c| unit_char(c) || c.is_ascii_digit())
        {
            lit.push(c);
            self.bump();
        }
        Token {
            kind: Kind::Duration,
            pos,
            lit,
        }
    }

    fn digits(&mut self) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek_char().filter(char::is_ascii_digit) {
            s.push(c);
            self.bump();
        }
        s
    }

    /// A `/regex/` starting at the next character (which the caller has
    /// seen is `/`). `\/` stands for `/`; other escapes pass through.
    pub(crate) fn scan_regex(&mut self) -> Token {
        let pos = self.cur.prev;
        let bad = Token {
            kind: Kind::BadRegex,
            pos,
            lit: String::new(),
        };
        if self.bump() != Some('/') {
            return bad;
        }
        let mut lit = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => return bad,
                Some('/') => {
                    return Token {
                        kind: Kind::Regex,
                        pos,
                        lit,
                    }
                }
                Some('\\') if self.bump_if('/') => lit.push('/'),
                Some(c) => lit.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<(Kind, String)> {
        let mut lx = Lexer::new(s);
        let mut out = Vec::new();
        loop {
            let t = lx.scan();
            if t.kind == Kind::Eof {
                return out;
            }
            if t.kind != Kind::Ws {
                out.push((t.kind, t.lit));
            }
        }
    }

    #[test]
    fn tokens_as_influxdb_scans_them() {
        use Kind::*;
        let k = |kind, lit: &str| (kind, lit.to_owned());
        assert_eq!(
            kinds(r#"SELECT "my \"x\"" ,'it\'s' 1.5 15 1h30m .5 10µs $p <> !~ =~ :: true AND or"#),
            vec![
                k(Kw(crate::token::Keyword::SELECT), ""),
                k(Ident, "my \"x\""),
                k(Comma, ""),
                k(Str, "it's"),
                k(Number, "1.5"),
                k(Integer, "15"),
                k(Duration, "1h30m"),
                k(Number, ".5"),
                k(Duration, "10µs"),
                k(BoundParam, "$p"),
                k(Neq, ""),
                k(NeqRegex, ""),
                k(EqRegex, ""),
                k(DoubleColon, ""),
                k(True, ""),
                k(And, ""),
                k(Or, ""),
            ]
        );
        assert_eq!(
            kinds("a -- c\nb /* x */ c"),
            vec![
                k(Ident, "a"),
                k(Comment, ""),
                k(Ident, "b"),
                k(Comment, ""),
                k(Ident, "c"),
            ]
        );
        assert_eq!(kinds("'abc"), vec![k(BadString, "abc")]);
        assert_eq!(kinds(r"'a\qb'")[0], k(BadEscape, r"\q"));
        assert_eq!(kinds("!")[0], k(Illegal, "!"));
        assert_eq!(kinds("é")[0], k(Illegal, "é"));
    }

    #[test]
    fn positions_count_characters_and_lines() {
        let mut lx = Lexer::new("ab\r\nµ x");
        let t = lx.scan();
        assert_eq!(t.pos, Pos { line: 0, char: 0 });
        lx.scan(); // newline whitespace
        let t = lx.scan();
        assert_eq!((t.kind, t.pos), (Kind::Illegal, Pos { line: 1, char: 0 }));
        lx.scan();
        let t = lx.scan();
        assert_eq!(t.pos, Pos { line: 1, char: 2 });
        // A word ending the input reads past it: InfluxDB puts EOF one further.
        assert_eq!(lx.scan().pos, Pos { line: 1, char: 4 });
    }

    #[test]
    fn regexes_unescape_slashes_only() {
        let mut lx = Lexer::new(r"/a\/b\d/ /open");
        let t = lx.scan_regex();
        assert_eq!((t.kind, t.lit.as_str()), (Kind::Regex, r"a/b\d"));
        lx.scan();
        assert_eq!(lx.scan_regex().kind, Kind::BadRegex);
    }
}
