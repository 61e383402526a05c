//! A tag's `=~`/`!~` regex answered as the engine's `match()` answers it.
//!
//! The engine path renders `match(tag, 'pattern')`: ClickHouse's RE2, an
//! unanchored search, `.` matching a line break too (ClickHouse sets `dot_nl`),
//! a series without the tag read as `''`. Rust's `regex` reads most of RE2's
//! syntax the same way, but not all of it: `\d`, `\w`, `\s`, `\b` and `\pN` are
//! Unicode-aware here and ASCII (or another Unicode version) there, `[[a]]` and
//! `[a&&b]` are nested classes and set operations here and literals there,
//! `\<` is a word boundary here and a literal there, `a{1001}` compiles here and
//! is refused there. So a pattern is taken only when each of its nodes is one
//! the two dialects certainly read alike (`same_in_re2`); anything else goes to
//! the engine, which judges it itself. `\d`, `\s`, `\w` (and `\D`, `\S`, `\W`
//! outside brackets) are rewritten as RE2's ASCII classes (`[0-9]`,
//! `[\t\n\x0C\r ]`, `[0-9A-Za-z_]`), except under `(?i)`.
//!
//! Grafana's expansion of a template variable, `^(a|b\.c)$` (`^a$` for one
//! value; it escapes `\^$*+?.()|[]{}/`), is an exact set of values: a lookup.

use std::collections::HashSet;

use regex_syntax::ast::{
    parse::ParserBuilder, AssertionKind, Ast, ClassPerl, ClassPerlKind, ClassSet, ClassSetItem,
    Flag, Flags, FlagsItemKind, GroupKind, HexLiteralKind, Literal, LiteralKind, RepetitionKind,
    RepetitionRange, SpecialLiteralKind,
};

/// RE2's largest repetition count (`kMaxRepeat`), also for nested counts.
const MAX_REPEAT: u64 = 1000;

/// A compiled tag pattern.
#[derive(Debug)]
pub(super) enum TagMatch {
    /// An anchored alternation of literals: exactly these values.
    Values(HashSet<String>),
    /// Any other pattern both dialects read alike: an unanchored search.
    Regex(regex::Regex),
}

impl TagMatch {
    /// `pattern` as the engine would match it, or `None` when the two dialects
    /// might disagree (or it does not compile here): the engine answers then.
    pub(super) fn new(pattern: &str) -> Option<TagMatch> {
        let ast = ParserBuilder::new().build().parse(pattern).ok()?;
        let mut walk = Walk::default();
        if !same_in_re2(&ast, pattern, 1, &mut walk) || (walk.folds && !walk.ascii.is_empty()) {
            return None;
        }
        if let Some(values) = values(&ast) {
            return Some(TagMatch::Values(values));
        }
        // Perl classes as RE2's ASCII ones, from the last so offsets hold.
        let mut pattern = pattern.to_string();
        walk.ascii.sort_unstable_by_key(|r| std::cmp::Reverse(r.0));
        for (start, end, class) in walk.ascii {
            pattern.replace_range(start..end, class);
        }
        regex::RegexBuilder::new(&pattern)
            .dot_matches_new_line(true)
            .build()
            .ok()
            .map(TagMatch::Regex)
    }

    /// Whether a tag value (`""` for a series without the tag) matches.
    pub(super) fn is_match(&self, value: &str) -> bool {
        match self {
            TagMatch::Values(set) => set.contains(value),
            TagMatch::Regex(re) => re.is_match(value),
        }
    }
}

/// What a walk of a pattern found besides its verdict.
#[derive(Default)]
struct Walk {
    /// Perl classes to rewrite: (start, end, ASCII class).
    ascii: Vec<(usize, usize, &'static str)>,
    /// A case-insensitive flag somewhere (`(?i)\w` may fold differently).
    folds: bool,
}

/// RE2's ASCII `\d`, `\s`, `\w` (`\s` without `\v`): bracketed outside a
/// class, bare inside one.
fn ascii_class(perl: &ClassPerl, bracketed: bool) -> Option<&'static str> {
    Some(match (&perl.kind, perl.negated, bracketed) {
        (ClassPerlKind::Digit, false, false) => "[0-9]",
        (ClassPerlKind::Digit, true, false) => "[^0-9]",
        (ClassPerlKind::Space, false, false) => r"[\t\n\x0C\r ]",
        (ClassPerlKind::Space, true, false) => r"[^\t\n\x0C\r ]",
        (ClassPerlKind::Word, false, false) => "[0-9A-Za-z_]",
        (ClassPerlKind::Word, true, false) => "[^0-9A-Za-z_]",
        (ClassPerlKind::Digit, false, true) => "0-9",
        (ClassPerlKind::Space, false, true) => r"\t\n\x0C\r ",
        (ClassPerlKind::Word, false, true) => "0-9A-Za-z_",
        // `[\D]` and friends: not worth a rewrite.
        (_, true, true) => return None,
    })
}

/// Whether every node of `ast` means the same to RE2 as to Rust's `regex`
/// (Perl classes once rewritten: `walk`); `repeat` is the product of the
/// counted repetitions around it.
fn same_in_re2(ast: &Ast, pattern: &str, repeat: u64, walk: &mut Walk) -> bool {
    match ast {
        Ast::Empty(_) | Ast::Dot(_) => true,
        Ast::Flags(f) => flags_alike(&f.flags, walk),
        Ast::Literal(l) => literal_alike(l),
        Ast::Assertion(a) => matches!(
            a.kind,
            AssertionKind::StartLine
                | AssertionKind::EndLine
                | AssertionKind::StartText
                | AssertionKind::EndText
        ),
        // Another Unicode version in RE2.
        Ast::ClassUnicode(_) => false,
        // Unicode-aware here, ASCII in RE2: rewritten.
        Ast::ClassPerl(perl) => match ascii_class(perl, false) {
            Some(class) => {
                walk.ascii
                    .push((perl.span.start.offset, perl.span.end.offset, class));
                true
            }
            None => false,
        },
        Ast::ClassBracketed(c) => class_alike(&c.kind, walk),
        Ast::Repetition(r) => {
            let repeat = match &r.op.kind {
                RepetitionKind::ZeroOrOne
                | RepetitionKind::ZeroOrMore
                | RepetitionKind::OneOrMore => repeat,
                RepetitionKind::Range(range) => {
                    // `a{,3}` is a repetition here and a literal in RE2.
                    let text = pattern
                        .get(r.op.span.start.offset..r.op.span.end.offset)
                        .unwrap_or("");
                    if text.starts_with("{,") {
                        return false;
                    }
                    let most = match range {
                        RepetitionRange::Exactly(n) | RepetitionRange::AtLeast(n) => *n,
                        RepetitionRange::Bounded(_, m) => *m,
                    };
                    repeat.saturating_mul(u64::from(most).max(1))
                }
            };
            repeat <= MAX_REPEAT && same_in_re2(&r.ast, pattern, repeat, walk)
        }
        Ast::Group(g) => {
            let kind = match &g.kind {
                GroupKind::CaptureIndex(_) => true,
                GroupKind::NonCapturing(flags) => flags_alike(flags, walk),
                // RE2's group names are another syntax.
                GroupKind::CaptureName { .. } => false,
            };
            kind && same_in_re2(&g.ast, pattern, repeat, walk)
        }
        Ast::Alternation(a) => a.asts.iter().all(|a| same_in_re2(a, pattern, repeat, walk)),
        Ast::Concat(c) => c.asts.iter().all(|a| same_in_re2(a, pattern, repeat, walk)),
    }
}

/// RE2 knows `i`, `m`, `s` and `U`; `u`, `R` and `x` are Rust's.
fn flags_alike(flags: &Flags, walk: &mut Walk) -> bool {
    walk.folds |= flags
        .items
        .iter()
        .any(|item| item.kind == FlagsItemKind::Flag(Flag::CaseInsensitive));
    flags.items.iter().all(|item| match &item.kind {
        FlagsItemKind::Negation => true,
        FlagsItemKind::Flag(f) => matches!(
            f,
            Flag::CaseInsensitive | Flag::MultiLine | Flag::DotMatchesNewLine | Flag::SwapGreed
        ),
    })
}

fn literal_alike(l: &Literal) -> bool {
    match &l.kind {
        // `a`, `\.`, `\%` (RE2: any escaped ASCII that is not a letter or digit).
        LiteralKind::Verbatim | LiteralKind::Meta | LiteralKind::Superfluous => true,
        // `\x41`, `\x{41}`; RE2 has no `\u`.
        LiteralKind::HexFixed(HexLiteralKind::X) | LiteralKind::HexBrace(HexLiteralKind::X) => true,
        LiteralKind::Special(s) => !matches!(s, SpecialLiteralKind::Space),
        _ => false,
    }
}

/// A bracketed class without nested classes, set operations or Unicode
/// classes (`[[:alpha:]]` is ASCII in both; `[\d.]` rewritten).
fn class_alike(set: &ClassSet, walk: &mut Walk) -> bool {
    fn item(i: &ClassSetItem, walk: &mut Walk) -> bool {
        match i {
            ClassSetItem::Empty(_) | ClassSetItem::Ascii(_) => true,
            ClassSetItem::Literal(l) => literal_alike(l),
            ClassSetItem::Range(r) => literal_alike(&r.start) && literal_alike(&r.end),
            ClassSetItem::Union(u) => u.items.iter().all(|i| item(i, walk)),
            ClassSetItem::Perl(perl) => match ascii_class(perl, true) {
                Some(class) => {
                    walk.ascii
                        .push((perl.span.start.offset, perl.span.end.offset, class));
                    true
                }
                None => false,
            },
            ClassSetItem::Unicode(_) | ClassSetItem::Bracketed(_) => false,
        }
    }
    match set {
        ClassSet::Item(i) => item(i, walk),
        ClassSet::BinaryOp(_) => false,
    }
}

/// The values `^(a|b|c)$`, `^a$` or `^$` matches exactly (no flags, only
/// literals between the anchors, at most one group of alternatives).
fn values(ast: &Ast) -> Option<HashSet<String>> {
    let Ast::Concat(c) = ast else {
        return None;
    };
    let [first, middle @ .., last] = c.asts.as_slice() else {
        return None;
    };
    let anchor = |a: &Ast, want: AssertionKind| matches!(a, Ast::Assertion(x) if x.kind == want);
    if !anchor(first, AssertionKind::StartLine) || !anchor(last, AssertionKind::EndLine) {
        return None;
    }
    match middle {
        [Ast::Group(g)] => {
            if let GroupKind::NonCapturing(f) = &g.kind {
                if !f.items.is_empty() {
                    return None;
                }
            }
            match g.ast.as_ref() {
                Ast::Alternation(a) => a.asts.iter().map(text).collect(),
                other => text(other).map(|t| HashSet::from([t])),
            }
        }
        items => items
            .iter()
            .map(|a| match a {
                Ast::Literal(l) => Some(l.c),
                _ => None,
            })
            .collect::<Option<String>>()
            .map(|t| HashSet::from([t])),
    }
}

/// The text a run of literals matches.
fn text(ast: &Ast) -> Option<String> {
    match ast {
        Ast::Empty(_) => Some(String::new()),
        Ast::Literal(l) => Some(l.c.to_string()),
        Ast::Concat(c) => c
            .asts
            .iter()
            .map(|a| match a {
                Ast::Literal(l) => Some(l.c),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::TagMatch;

    fn set(p: &str) -> Vec<String> {
        match TagMatch::new(p) {
            Some(TagMatch::Values(v)) => {
                let mut v: Vec<String> = v.into_iter().collect();
                v.sort();
                v
            }
            other => panic!("{p}: {other:?}"),
        }
    }

    #[test]
    fn grafanas_expansions_are_value_sets() {
        assert_eq!(set("^(a|b|c)$"), ["a", "b", "c"]);
        assert_eq!(set("^host-0042$"), ["host-0042"]);
        assert_eq!(set(r"^(a\|bc|de\.f)$"), ["a|bc", "de.f"]);
        assert_eq!(
            set(r"^(web\.2/a|x\(1\)\[\]\{\}\*\+\?\^\$\\)$"),
            [r"web.2/a", r"x(1)[]{}*+?^$\"]
        );
        assert_eq!(set("^$"), [""]);
        assert_eq!(set("^(?:a|)$"), ["", "a"]);
        assert_eq!(set("^(a)$"), ["a"]);
    }

    #[test]
    fn other_patterns_search_unanchored() {
        let m = |p: &str, v: &str| TagMatch::new(p).unwrap().is_match(v);
        assert!(matches!(TagMatch::new(".*"), Some(TagMatch::Regex(_))));
        assert!(m(".*", "") && m(".*", "x"));
        assert!(m("", "x"));
        assert!(m("h[12]", "xh2y") && !m("h[12]", "h3"));
        assert!(m("^h", "h1") && !m("^h", "ah"));
        assert!(m("(?i)^H1$", "h1") && !m("^H1$", "h1"));
        assert!(m("^(a|b)c$", "bc") && !m("^(a|b)c$", "b"));
        assert!(m("a|^$", "") && m("a|^$", "xa") && !m("a|^$", "b"));
        assert!(m("^[[:digit:]]+$", "42") && !m("^[[:digit:]]+$", "4x"));
        assert!(m(r"^\x41$", "A"));
        assert!(m("a.b", "a\nb"), "ClickHouse's match() reads with dot_nl");
        assert!(!m("(?-s)a.b", "a\nb"));
        assert!(m("^a{2,3}$", "aaa") && !m("^a{2,3}$", "aaaa"));
    }

    #[test]
    fn perl_classes_are_re2s_ascii_ones() {
        let m = |p: &str, v: &str| TagMatch::new(p).unwrap().is_match(v);
        assert!(m(r"^h\d+$", "h42") && !m(r"^h\d+$", "h٣"));
        assert!(m(r"^\D+$", "h٣") && !m(r"^\D+$", "h3"));
        assert!(m(r"^\w+$", "web_2") && !m(r"^\w+$", "café"));
        assert!(m(r"^\W$", "é") && !m(r"^\W$", "e"));
        assert!(
            m(r"^a\sb$", "a\tb") && !m(r"^a\sb$", "a\u{b}b"),
            "RE2's \\s has no \\v"
        );
        assert!(!m(r"^a\sb$", "a\u{a0}b") && m(r"^a\Sb$", "a\u{a0}b"));
        assert!(m(r"^[\d.]+$", "1.5") && !m(r"^[\d.]+$", "1,5"));
        assert!(m(r"^[^\d]$", "x") && !m(r"^[^\d]$", "4"));
        assert!(m(r"^[\w-]+$", "a-b_c") && m(r"^[a\s]+$", "a a"));
    }

    #[test]
    fn patterns_the_dialects_may_read_differently_go_to_the_engine() {
        for p in [
            r"[\D]",
            r"(?i)\w",
            r"\w(?i:a)",
            r"\bx",
            r"\pL",
            r"\p{Greek}",
            "[[a]]",
            "[a&&b]",
            "[a--b]",
            "[a~~b]",
            r"\<a",
            "a{1001}",
            "(a{100}){11}",
            "a{,3}",
            "(?x)a b",
            "(?u)a",
            "(?P<n>a)",
            r"\u0041",
            // Not Rust's syntax at all.
            r"\Qa.b\E",
            "a{",
            "(?=a)",
        ] {
            assert!(TagMatch::new(p).is_none(), "{p}");
        }
        assert!(TagMatch::new("a{1000}").is_some());
        assert!(TagMatch::new("(a{10}){100}").is_some());
    }
}
