//! InfluxQL text of the tree, as InfluxDB's `String()` methods write it:
//! used in error messages (`mixing aggregate and non-aggregate queries is not
//! supported`), and parsing it back gives the same tree.

use std::fmt::{self, Display, Formatter};

use crate::ast::{
    ContinuousQuery, CqStatement, DataType, Dimension, Duration, Expr, Field, Fill, Literal,
    MeasurementName, NameMatch, Regex, RpStatement, SelectStatement, Source, Statement,
    TagKeyMatch, UserStatement,
};
use crate::duration::format_duration_literal;
use crate::token::Kind;

/// Whether `ident` must be quoted to read back as the same identifier.
fn needs_quotes(ident: &str) -> bool {
    if Kind::of_word(ident) != Kind::Ident {
        return true;
    }
    let mut chars = ident.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return !ident.is_empty(),
    }
    !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn escape(s: &str, quote: char) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\\' => out.push_str("\\\\"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// An identifier, double-quoted (and escaped) when it must be.
pub fn quote_ident(ident: &str) -> String {
    quote_idents(&[ident.to_owned()])
}

/// Dot-joined identifiers as InfluxDB's `QuoteIdent` writes them
/// (`"db"."rp".m`, `db..m`).
pub fn quote_idents(segments: &[String]) -> String {
    let last = segments.len().saturating_sub(1);
    let mut out = String::new();
    for (i, seg) in segments.iter().enumerate() {
        let quote = needs_quotes(seg)
            || (i < last && !seg.is_empty())
            || ((i == 0 || i == last) && seg.is_empty());
        if quote {
            out.push('"');
        }
        out.push_str(&escape(seg, '"'));
        if quote {
            out.push('"');
        }
        if i < last {
            out.push('.');
        }
    }
    out
}

/// A single-quoted string literal.
pub fn quote_string(s: &str) -> String {
    format!("'{}'", escape(s, '\''))
}

impl Display for DataType {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DataType::Float => "float",
            DataType::Integer => "integer",
            DataType::Unsigned => "unsigned",
            DataType::String => "string",
            DataType::Boolean => "boolean",
            DataType::Field => "field",
            DataType::Tag => "tag",
        })
    }
}

impl Display for Regex {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "/{}/", self.0.replace('/', "\\/"))
    }
}

impl Display for Duration {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration_literal(self.0))
    }
}

/// A float as Go's `FormatFloat(v, 'f', -1, 64)`, with `.0` for whole numbers
/// so it reads back as a float.
fn float(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let s = format!("{v}");
    if s.contains('.') {
        s
    } else {
        s + ".0"
    }
}

impl Display for Literal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Integer(i) => write!(f, "{i}"),
            Literal::Unsigned(u) => write!(f, "{u}"),
            Literal::Float(v) => f.write_str(&float(*v)),
            Literal::String(s) => f.write_str(&quote_string(s)),
            Literal::Boolean(b) => write!(f, "{b}"),
            Literal::Duration(d) => write!(f, "{d}"),
            Literal::Regex(r) => write!(f, "{r}"),
        }
    }
}

impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Expr::VarRef { name, data_type } => {
                f.write_str(&quote_ident(name))?;
                match data_type {
                    Some(t) => write!(f, "::{t}"),
                    None => Ok(()),
                }
            }
            Expr::Wildcard(None) => f.write_str("*"),
            Expr::Wildcard(Some(t)) => write!(f, "*::{t}"),
            Expr::Literal(l) => write!(f, "{l}"),
            Expr::Call { name, args } => {
                write!(f, "{name}(")?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str(")")
            }
            Expr::Binary { op, lhs, rhs } => write!(f, "{lhs} {op} {rhs}"),
            Expr::Paren(e) => write!(f, "({e})"),
        }
    }
}

impl Display for Field {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.expr)?;
        match &self.alias {
            Some(a) => write!(f, " AS {}", quote_ident(a)),
            None => Ok(()),
        }
    }
}

impl Display for Dimension {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Dimension::Time {
                interval,
                offset: None,
            } => write!(f, "time({interval})"),
            Dimension::Time {
                interval,
                offset: Some(o),
            } => write!(f, "time({interval}, {o})"),
            Dimension::Tag(t) => f.write_str(&quote_ident(t)),
            Dimension::Regex(r) => write!(f, "{r}"),
            Dimension::Wildcard => f.write_str("*"),
        }
    }
}

impl Display for Fill {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Fill::Null => f.write_str("fill(null)"),
            Fill::None => f.write_str("fill(none)"),
            Fill::Previous => f.write_str("fill(previous)"),
            Fill::Linear => f.write_str("fill(linear)"),
            Fill::Number(n) => write!(f, "fill({n})"),
        }
    }
}

impl Display for NameMatch {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            // `INTO db.rp.:MEASUREMENT` (the only place an empty name comes from).
            NameMatch::Name(n) if n.is_empty() => f.write_str(":MEASUREMENT"),
            NameMatch::Name(n) => f.write_str(&quote_ident(n)),
            NameMatch::Regex(r) => write!(f, "{r}"),
        }
    }
}

/// As InfluxDB's `Measurement.String()`: `"db"."rp".m`, `"db"..m`, `/re/`.
impl Display for MeasurementName {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(db) = &self.database {
            write!(f, "{}.", quote_ident(db))?;
        }
        if let Some(rp) = &self.retention_policy {
            f.write_str(&quote_ident(rp))?;
        }
        if self.database.is_some() || self.retention_policy.is_some() {
            f.write_str(".")?;
        }
        write!(f, "{}", self.name)
    }
}

impl Display for Source {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Source::Measurement(m) => write!(f, "{m}"),
            Source::Subquery(s) => write!(f, "({s})"),
        }
    }
}

/// Writes `items` separated by `, `.
fn list<T: Display>(f: &mut Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{x}")?;
    }
    Ok(())
}

/// Writes ` KEYWORD n` when `n` is set.
fn opt(f: &mut Formatter<'_>, kw: &str, n: Option<u64>) -> fmt::Result {
    match n {
        Some(n) => write!(f, " {kw} {n}"),
        None => Ok(()),
    }
}

impl Display for SelectStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("SELECT ")?;
        list(f, &self.fields)?;
        if let Some(into) = &self.into {
            write!(f, " INTO {into}")?;
        }
        f.write_str(" FROM ")?;
        list(f, &self.sources)?;
        if let Some(c) = &self.condition {
            write!(f, " WHERE {c}")?;
        }
        if !self.dimensions.is_empty() {
            f.write_str(" GROUP BY ")?;
            list(f, &self.dimensions)?;
        }
        if let Some(fill) = &self.fill {
            write!(f, " {fill}")?;
        }
        if self.order_desc {
            f.write_str(" ORDER BY time DESC")?;
        }
        opt(f, "LIMIT", self.limit)?;
        opt(f, "OFFSET", self.offset)?;
        opt(f, "SLIMIT", self.slimit)?;
        opt(f, "SOFFSET", self.soffset)?;
        if let Some(tz) = &self.timezone {
            write!(f, " TZ({})", quote_string(tz))?;
        }
        Ok(())
    }
}

impl Display for TagKeyMatch {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            TagKeyMatch::Eq(k) => write!(f, "= {}", quote_ident(k)),
            TagKeyMatch::NotEq(k) => write!(f, "!= {}", quote_ident(k)),
            TagKeyMatch::In(keys) => {
                let keys: Vec<String> = keys.iter().map(|k| quote_ident(k)).collect();
                write!(f, "IN ({})", keys.join(", "))
            }
            TagKeyMatch::Regex(r) => write!(f, "=~ {r}"),
            TagKeyMatch::NotRegex(r) => write!(f, "!~ {r}"),
        }
    }
}

/// ` ON db`, ` FROM ...`, ` WHERE ...` of a `SHOW` statement.
fn show_clauses(
    f: &mut Formatter<'_>,
    on: &Option<String>,
    from: &[MeasurementName],
    cond: &Option<Expr>,
) -> fmt::Result {
    if let Some(db) = on {
        write!(f, " ON {}", quote_ident(db))?;
    }
    if !from.is_empty() {
        f.write_str(" FROM ")?;
        list(f, from)?;
    }
    if let Some(c) = cond {
        write!(f, " WHERE {c}")?;
    }
    Ok(())
}

impl Display for Statement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Select(s) => write!(f, "{s}"),
            Statement::ShowDatabases => f.write_str("SHOW DATABASES"),
            Statement::ShowRetentionPolicies { on } => {
                f.write_str("SHOW RETENTION POLICIES")?;
                show_clauses(f, on, &[], &None)
            }
            Statement::ShowMeasurements(s) => {
                f.write_str("SHOW MEASUREMENTS")?;
                show_clauses(f, &s.on, &[], &None)?;
                if let Some(m) = &s.with_measurement {
                    let op = if matches!(m, NameMatch::Regex(_)) {
                        "=~"
                    } else {
                        "="
                    };
                    write!(f, " WITH MEASUREMENT {op} {m}")?;
                }
                show_clauses(f, &None, &[], &s.condition)?;
                opt(f, "LIMIT", s.limit)?;
                opt(f, "OFFSET", s.offset)
            }
            Statement::ShowTagKeys(c) | Statement::ShowFieldKeys(c) | Statement::ShowSeries(c) => {
                f.write_str(match self {
                    Statement::ShowTagKeys(_) => "SHOW TAG KEYS",
                    Statement::ShowFieldKeys(_) => "SHOW FIELD KEYS",
                    _ => "SHOW SERIES",
                })?;
                show_clauses(f, &c.on, &c.from, &c.condition)?;
                opt(f, "LIMIT", c.limit)?;
                opt(f, "OFFSET", c.offset)
            }
            Statement::ShowTagValues { common: c, key } => {
                f.write_str("SHOW TAG VALUES")?;
                show_clauses(f, &c.on, &c.from, &None)?;
                write!(f, " WITH KEY {key}")?;
                show_clauses(f, &None, &[], &c.condition)?;
                opt(f, "LIMIT", c.limit)?;
                opt(f, "OFFSET", c.offset)
            }
            Statement::ShowDiagnostics => f.write_str("SHOW DIAGNOSTICS"),
            Statement::ShowStats => f.write_str("SHOW STATS"),
            Statement::CreateDatabase {
                name,
                duration_secs,
                replication,
                shard_duration_ns,
                policy,
            } => {
                // As InfluxDB 1.x prints it (its GET warning quotes it):
                // durations as Go prints them (`INF` is `0s`), a shard
                // duration of 0 left out.
                write!(f, "CREATE DATABASE {}", quote_ident(name))?;
                let shard = shard_duration_ns.filter(|ns| *ns > 0);
                if duration_secs.is_some()
                    || replication.is_some()
                    || shard.is_some()
                    || policy.is_some()
                {
                    f.write_str(" WITH")?;
                }
                if let Some(s) = duration_secs {
                    let ns = i64::try_from(s.saturating_mul(1_000_000_000)).unwrap_or(i64::MAX);
                    write!(f, " DURATION {}", crate::duration::format_duration(ns))?;
                }
                if let Some(n) = replication {
                    write!(f, " REPLICATION {n}")?;
                }
                if let Some(ns) = shard {
                    write!(
                        f,
                        " SHARD DURATION {}",
                        crate::duration::format_duration(ns)
                    )?;
                }
                if let Some(rp) = policy {
                    write!(f, " NAME {}", quote_ident(rp))?;
                }
                Ok(())
            }
            Statement::DropDatabase { name } => write!(f, "DROP DATABASE {}", quote_ident(name)),
            Statement::DropMeasurement { name } => {
                write!(f, "DROP MEASUREMENT {}", quote_ident(name))
            }
            Statement::ShowQueries => f.write_str("SHOW QUERIES"),
            Statement::KillQuery { id, host } => {
                write!(f, "KILL QUERY {id}")?;
                if let Some(h) = host {
                    write!(f, " ON {}", quote_ident(h))?;
                }
                Ok(())
            }
            Statement::Delete(d) => {
                f.write_str("DELETE")?;
                show_clauses(f, &None, &d.from, &d.condition)
            }
            Statement::DropSeries(d) => {
                f.write_str("DROP SERIES")?;
                show_clauses(f, &None, &d.from, &d.condition)
            }
            Statement::User(u) => u.fmt(f),
            Statement::RetentionPolicy(rp) => rp.fmt(f),
            Statement::ContinuousQuery(CqStatement::Create(cq)) => cq.fmt(f),
            Statement::ContinuousQuery(CqStatement::Drop { name, on }) => write!(
                f,
                "DROP CONTINUOUS QUERY {} ON {}",
                quote_ident(name),
                quote_ident(on)
            ),
            Statement::ContinuousQuery(CqStatement::Show) => f.write_str("SHOW CONTINUOUS QUERIES"),
            Statement::Unsupported { what, .. } => f.write_str(what),
        }
    }
}

impl fmt::Display for UserStatement {
    /// As InfluxDB 1.x prints these: passwords as `[REDACTED]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UserStatement::Create { name, admin, .. } => {
                write!(
                    f,
                    "CREATE USER {} WITH PASSWORD [REDACTED]",
                    quote_ident(name)
                )?;
                if *admin {
                    f.write_str(" WITH ALL PRIVILEGES")?;
                }
                Ok(())
            }
            UserStatement::Drop { name } => write!(f, "DROP USER {}", quote_ident(name)),
            UserStatement::SetPassword { name, .. } => {
                write!(f, "SET PASSWORD FOR {} = [REDACTED]", quote_ident(name))
            }
            UserStatement::Grant {
                privilege,
                on,
                user,
            } => write!(
                f,
                "GRANT {} ON {} TO {}",
                privilege.as_str(),
                quote_ident(on),
                quote_ident(user)
            ),
            UserStatement::GrantAdmin { user } => {
                write!(f, "GRANT ALL PRIVILEGES TO {}", quote_ident(user))
            }
            UserStatement::Revoke {
                privilege,
                on,
                user,
            } => write!(
                f,
                "REVOKE {} ON {} FROM {}",
                privilege.as_str(),
                quote_ident(on),
                quote_ident(user)
            ),
            UserStatement::RevokeAdmin { user } => {
                write!(f, "REVOKE ALL PRIVILEGES FROM {}", quote_ident(user))
            }
            UserStatement::ShowUsers => f.write_str("SHOW USERS"),
            UserStatement::ShowGrants { user } => {
                write!(f, "SHOW GRANTS FOR {}", quote_ident(user))
            }
        }
    }
}

impl fmt::Display for ContinuousQuery {
    /// As InfluxDB 1.x prints it (`SHOW CONTINUOUS QUERIES`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CREATE CONTINUOUS QUERY {} ON {} ",
            quote_ident(&self.name),
            quote_ident(&self.database)
        )?;
        if self.every_ns.is_some() || self.for_ns.is_some() {
            f.write_str("RESAMPLE ")?;
            if let Some(ns) = self.every_ns {
                write!(f, "EVERY {} ", format_duration_literal(ns))?;
            }
            if let Some(ns) = self.for_ns {
                write!(f, "FOR {} ", format_duration_literal(ns))?;
            }
        }
        write!(f, "BEGIN {} END", self.select)
    }
}

impl fmt::Display for RpStatement {
    /// As InfluxDB 1.x prints these.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let duration = |secs: u64| {
            crate::duration::format_duration(
                i64::try_from(secs.saturating_mul(1_000_000_000)).unwrap_or(i64::MAX),
            )
        };
        match self {
            RpStatement::Create {
                name,
                on,
                duration_secs,
                replication,
                shard_duration_ns,
                default,
            } => {
                write!(
                    f,
                    "CREATE RETENTION POLICY {} ON {} DURATION {} REPLICATION {replication}",
                    quote_ident(name),
                    quote_ident(on),
                    duration(*duration_secs)
                )?;
                rp_options(f, *shard_duration_ns, *default)
            }
            RpStatement::Alter {
                name,
                on,
                duration_secs,
                replication,
                shard_duration_ns,
                default,
            } => {
                write!(
                    f,
                    "ALTER RETENTION POLICY {} ON {}",
                    quote_ident(name),
                    quote_ident(on)
                )?;
                if let Some(secs) = duration_secs {
                    write!(f, " DURATION {}", duration(*secs))?;
                }
                if let Some(n) = replication {
                    write!(f, " REPLICATION {n}")?;
                }
                rp_options(f, *shard_duration_ns, *default)
            }
            RpStatement::Drop { name, on } => write!(
                f,
                "DROP RETENTION POLICY {} ON {}",
                quote_ident(name),
                quote_ident(on)
            ),
        }
    }
}

/// `[SHARD DURATION d] [DEFAULT]` of `CREATE`/`ALTER RETENTION POLICY`.
fn rp_options(f: &mut fmt::Formatter<'_>, shard_ns: Option<i64>, default: bool) -> fmt::Result {
    if let Some(ns) = shard_ns {
        write!(
            f,
            " SHARD DURATION {}",
            crate::duration::format_duration(ns)
        )?;
    }
    if default {
        f.write_str(" DEFAULT")?;
    }
    Ok(())
}
