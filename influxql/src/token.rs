//! Tokens: what the lexer hands the parser, named as InfluxDB names them in
//! its error messages (`found FROM, expected identifier`).

use std::fmt;

use crate::error::Pos;

/// Declares the keywords once: the enum, their upper-case names and lookup.
macro_rules! keywords {
    ($($kw:ident),* $(,)?) => {
        /// A reserved word (matched case-insensitively).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(clippy::upper_case_acronyms)]
        pub(crate) enum Keyword { $($kw),* }

        impl Keyword {
            /// The keyword as InfluxDB prints it (upper case).
            pub(crate) fn as_str(self) -> &'static str {
                match self { $(Keyword::$kw => stringify!($kw)),* }
            }

            /// The keyword spelled by `word`, in any case.
            pub(crate) fn lookup(word: &str) -> Option<Keyword> {
                $(if word.eq_ignore_ascii_case(stringify!($kw)) {
                    return Some(Keyword::$kw);
                })*
                None
            }
        }
    };
}

keywords!(
    ALL,
    ALTER,
    ANALYZE,
    ANY,
    AS,
    ASC,
    BEGIN,
    BY,
    CARDINALITY,
    CREATE,
    CONTINUOUS,
    DATABASE,
    DATABASES,
    DEFAULT,
    DELETE,
    DESC,
    DESTINATIONS,
    DIAGNOSTICS,
    DISTINCT,
    DROP,
    DURATION,
    END,
    EVERY,
    EXACT,
    EXPLAIN,
    FIELD,
    FOR,
    FROM,
    GRANT,
    GRANTS,
    GROUP,
    GROUPS,
    IN,
    INF,
    INSERT,
    INTO,
    KEY,
    KEYS,
    KILL,
    LIMIT,
    MEASUREMENT,
    MEASUREMENTS,
    NAME,
    OFFSET,
    ON,
    ORDER,
    PASSWORD,
    POLICY,
    POLICIES,
    PRIVILEGES,
    QUERIES,
    QUERY,
    READ,
    REPLICATION,
    RESAMPLE,
    RETENTION,
    REVOKE,
    SELECT,
    SERIES,
    SET,
    SHOW,
    SHARD,
    SHARDS,
    SLIMIT,
    SOFFSET,
    STATS,
    SUBSCRIPTION,
    SUBSCRIPTIONS,
    TAG,
    TO,
    USER,
    USERS,
    VALUES,
    VERBOSE,
    WHERE,
    WITH,
    WRITE,
);

/// The kind of a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A character that starts no token.
    Illegal,
    /// End of input.
    Eof,
    /// Spaces, tabs, newlines.
    Ws,
    /// `-- ...` or `/* ... */`.
    Comment,
    /// A bare or double-quoted identifier (quoted ones are never keywords).
    Ident,
    /// `$name` with no bound value.
    BoundParam,
    /// `1.5`
    Number,
    /// `15`
    Integer,
    /// `15m`, `1h30m`
    Duration,
    /// `'text'`
    Str,
    /// An unterminated string or quoted identifier.
    BadString,
    /// An unknown `\x` escape in a string.
    BadEscape,
    /// `true`
    True,
    /// `false`
    False,
    /// `/re/` (scanned only where the grammar allows a regex).
    Regex,
    /// An unterminated regex.
    BadRegex,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Mod,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `AND`
    And,
    /// `OR`
    Or,
    /// `=`
    Eq,
    /// `!=` or `<>`
    Neq,
    /// `=~`
    EqRegex,
    /// `!~`
    NeqRegex,
    /// `<`
    Lt,
    /// `<=`
    Lte,
    /// `>`
    Gt,
    /// `>=`
    Gte,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `,`
    Comma,
    /// `:`
    Colon,
    /// `::`
    DoubleColon,
    /// `;`
    Semicolon,
    /// `.`
    Dot,
    /// A reserved word.
    Kw(Keyword),
}

impl Kind {
    /// The name InfluxDB prints for a token without literal text.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Illegal => "ILLEGAL",
            Kind::Eof => "EOF",
            Kind::Ws => "WS",
            Kind::Comment => "",
            Kind::Ident => "IDENT",
            Kind::BoundParam | Kind::Integer => "",
            Kind::Number => "NUMBER",
            Kind::Duration => "DURATIONVAL",
            Kind::Str => "STRING",
            Kind::BadString => "BADSTRING",
            Kind::BadEscape => "BADESCAPE",
            Kind::True => "TRUE",
            Kind::False => "FALSE",
            Kind::Regex => "REGEX",
            Kind::BadRegex => "",
            Kind::Add => "+",
            Kind::Sub => "-",
            Kind::Mul => "*",
            Kind::Div => "/",
            Kind::Mod => "%",
            Kind::BitAnd => "&",
            Kind::BitOr => "|",
            Kind::BitXor => "^",
            Kind::And => "AND",
            Kind::Or => "OR",
            Kind::Eq => "=",
            Kind::Neq => "!=",
            Kind::EqRegex => "=~",
            Kind::NeqRegex => "!~",
            Kind::Lt => "<",
            Kind::Lte => "<=",
            Kind::Gt => ">",
            Kind::Gte => ">=",
            Kind::LParen => "(",
            Kind::RParen => ")",
            Kind::Comma => ",",
            Kind::Colon => ":",
            Kind::DoubleColon => "::",
            Kind::Semicolon => ";",
            Kind::Dot => ".",
            Kind::Kw(k) => k.as_str(),
        }
    }

    /// The kind a bare word scans as: a keyword, `AND`/`OR`, a boolean, or an identifier.
    pub(crate) fn of_word(word: &str) -> Kind {
        if word.eq_ignore_ascii_case("and") {
            Kind::And
        } else if word.eq_ignore_ascii_case("or") {
            Kind::Or
        } else if word.eq_ignore_ascii_case("true") {
            Kind::True
        } else if word.eq_ignore_ascii_case("false") {
            Kind::False
        } else {
            Keyword::lookup(word).map_or(Kind::Ident, Kind::Kw)
        }
    }
}

/// One token: its kind, where it starts and its text (for identifiers,
/// strings, numbers, durations, regexes; empty for keywords and operators).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    /// What it is.
    pub(crate) kind: Kind,
    /// Where it starts.
    pub(crate) pos: Pos,
    /// Its text (unescaped for strings and quoted identifiers).
    pub(crate) lit: String,
}

impl Token {
    /// Whether this token is the keyword `kw`.
    pub(crate) fn is(&self, kw: Keyword) -> bool {
        self.kind == Kind::Kw(kw)
    }
}

/// InfluxDB's `tokstr`: the literal text when there is one, else the kind's name.
impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lit.is_empty() {
            f.write_str(self.kind.name())
        } else {
            f.write_str(&self.lit)
        }
    }
}
