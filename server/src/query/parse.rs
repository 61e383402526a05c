//! InfluxQL statements `/query` answers: splitting, tokens, durations and the
//! statement grammar (schema management and browsing).

/// One parsed statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    /// `CREATE DATABASE name [WITH DURATION d ...]`: the name and the
    /// retention in seconds when given (`Some(0)` = `INF`).
    CreateDatabase(String, Option<u64>),
    /// `DROP DATABASE name`
    DropDatabase(String),
    /// `SHOW DATABASES`
    ShowDatabases,
    /// `SHOW RETENTION POLICIES [ON db]`
    ShowRetentionPolicies(Option<String>),
    /// `SHOW MEASUREMENTS [ON db]`
    ShowMeasurements(Option<String>),
    /// `SHOW TAG KEYS [ON db] [FROM m]`
    ShowTagKeys(Option<String>, Option<String>),
    /// `SHOW FIELD KEYS [ON db] [FROM m]`
    ShowFieldKeys(Option<String>, Option<String>),
    /// `SHOW SERIES [ON db] [FROM m]`
    ShowSeries(Option<String>, Option<String>),
    /// `SHOW TAG VALUES [ON db] [FROM m] WITH KEY = k | WITH KEY IN (k, ...)`
    ShowTagValues {
        /// `ON db`.
        on: Option<String>,
        /// `FROM m`.
        from: Option<String>,
        /// The tag keys.
        keys: Vec<String>,
    },
}

/// Splits on `;` outside quotes; empty statements are skipped.
pub fn split_statements(q: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quote, mut escaped) = (0, None::<char>, false);
    for (i, c) in q.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (Some(_), '\\') => escaped = true,
            (Some(qc), c) if c == qc => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, ';') => {
                out.push(&q[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&q[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Tokens: words/identifiers (quoted ones unescaped) and punctuation.
fn tokens(s: &str) -> Result<Vec<(String, bool)>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' || c == '\'' {
            chars.next();
            let mut v = String::new();
            let mut closed = false;
            while let Some(d) = chars.next() {
                if d == '\\' {
                    if let Some(e) = chars.next() {
                        v.push(e);
                    }
                } else if d == c {
                    closed = true;
                    break;
                } else {
                    v.push(d);
                }
            }
            if !closed {
                return Err(format!("found unterminated quote {c}{v}"));
            }
            out.push((v, true));
        } else if c.is_alphanumeric() || c == '_' || c == '-' || c == '.' {
            let mut v = String::new();
            while let Some(&d) = chars.peek() {
                if d.is_alphanumeric() || d == '_' || d == '-' || d == '.' {
                    v.push(d);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push((v, false));
        } else {
            chars.next();
            out.push((c.to_string(), false));
        }
    }
    Ok(out)
}

/// The longest finite retention: 50 years.
pub const MAX_RETENTION_SECS: u64 = 50 * 365 * 86_400;

/// An InfluxQL duration literal (`1h`, `30d`, `2w`, `1h30m`, `INF`) in whole
/// seconds; `INF` (and `0s`) is 0 = forever. Retention shorter than an hour is
/// refused, as InfluxDB does.
pub fn parse_duration_secs(lit: &str) -> Result<u64, String> {
    if lit.eq_ignore_ascii_case("INF") {
        return Ok(0);
    }
    let bad = || format!("invalid duration {lit:?}");
    let (mut total_ns, mut rest): (u128, &str) = (0, lit);
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 18 {
            return Err(bad());
        }
        let n: u128 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(|b| !b.is_ascii_digit()).count();
        let unit_ns: u128 = match &rest[..unit_len] {
            "ns" => 1,
            "u" | "µ" | "us" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "d" => 86_400_000_000_000,
            "w" => 604_800_000_000_000,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total_ns = total_ns.saturating_add(n.saturating_mul(unit_ns));
    }
    let secs = u64::try_from(total_ns / 1_000_000_000).map_err(|_| bad())?;
    if secs != 0 && secs < 3600 {
        return Err("retention policy duration must be at least 1h0m0s".into());
    }
    // The engine's TTL works on 32-bit `DateTime` seconds (until 2106); a longer
    // retention would wrap around. 50 years, or INF, is the most there is.
    if secs > MAX_RETENTION_SECS {
        return Err(format!(
            "retention policy duration {lit} is longer than 50 years: use INF"
        ));
    }
    Ok(secs)
}

/// A duration the way InfluxDB prints one (`720h0m0s`, `0s`).
pub fn format_duration(secs: u64) -> String {
    if secs == 0 {
        return "0s".into();
    }
    format!("{}h{}m{}s", secs / 3600, secs % 3600 / 60, secs % 60)
}

/// Parses one statement.
pub fn parse_statement(s: &str) -> Result<Statement, String> {
    let toks = tokens(s)?;
    let kw = |i: usize| -> String {
        toks.get(i)
            .filter(|(_, quoted)| !quoted)
            .map(|(t, _)| t.to_ascii_uppercase())
            .unwrap_or_default()
    };
    let ident = |i: usize| -> Result<String, String> {
        match toks.get(i) {
            Some((t, _)) if !t.is_empty() => Ok(t.clone()),
            Some((t, _)) => Err(format!("found {t:?}, expected identifier")),
            None => Err("found EOF, expected identifier".into()),
        }
    };
    // Trailing `ON db` / `FROM m` clauses (in either order); `LIMIT`/`WHERE`... are refused.
    let clauses = |from: usize| -> Result<(Option<String>, Option<String>), String> {
        let (mut on, mut m, mut i) = (None, None, from);
        while i < toks.len() {
            match kw(i).as_str() {
                "ON" => on = Some(ident(i + 1)?),
                "FROM" => m = Some(ident(i + 1)?),
                other => {
                    return Err(format!(
                        "found {other}, expected ON, FROM or EOF (other clauses are not supported)"
                    ))
                }
            }
            i += 2;
        }
        Ok((on, m))
    };
    let (a, b, c) = (kw(0), kw(1), kw(2));
    match (a.as_str(), b.as_str()) {
        ("CREATE", "DATABASE") => {
            let name = ident(2)?;
            if toks.len() == 3 {
                return Ok(Statement::CreateDatabase(name, None));
            }
            if kw(3) != "WITH" {
                return Err(format!("found {}, expected WITH or EOF", toks[3].0));
            }
            // `WITH [DURATION d] [REPLICATION n] [SHARD DURATION d] [NAME rp]`:
            // the duration becomes the tables' TTL; one node, one policy.
            let (mut retention, mut i) = (None, 4);
            while i < toks.len() {
                match kw(i).as_str() {
                    "DURATION" => {
                        retention = Some(parse_duration_secs(&ident(i + 1)?)?);
                        i += 2;
                    }
                    "REPLICATION" => {
                        if ident(i + 1)? != "1" {
                            return Err("replication factor must be 1 (chingest is one node)".into());
                        }
                        i += 2;
                    }
                    "SHARD" if kw(i + 1) == "DURATION" => {
                        parse_duration_secs(&ident(i + 2)?)?;
                        i += 3;
                    }
                    "NAME" => {
                        let rp = ident(i + 1)?;
                        if rp != "autogen" {
                            return Err(format!(
                                "retention policy {rp:?}: only the default policy \"autogen\" is supported"
                            ));
                        }
                        i += 2;
                    }
                    other => {
                        return Err(format!(
                            "found {other}, expected DURATION, REPLICATION, SHARD, NAME or EOF"
                        ))
                    }
                }
            }
            if i == 4 {
                return Err("found EOF, expected DURATION, REPLICATION, SHARD or NAME".into());
            }
            Ok(Statement::CreateDatabase(name, retention))
        }
        ("DROP", "DATABASE") => {
            let name = ident(2)?;
            if toks.len() > 3 {
                return Err(format!("found {}, expected EOF", toks[3].0));
            }
            Ok(Statement::DropDatabase(name))
        }
        ("SHOW", "DATABASES") if toks.len() == 2 => Ok(Statement::ShowDatabases),
        ("SHOW", "RETENTION") if c == "POLICIES" => {
            let (on, m) = clauses(3)?;
            if m.is_some() {
                return Err("found FROM, expected ON or EOF".into());
            }
            Ok(Statement::ShowRetentionPolicies(on))
        }
        ("SHOW", "MEASUREMENTS") => {
            let (on, m) = clauses(2)?;
            if m.is_some() {
                return Err("found FROM, expected ON or EOF".into());
            }
            Ok(Statement::ShowMeasurements(on))
        }
        ("SHOW", "TAG") if c == "KEYS" => clauses(3).map(|(on, m)| Statement::ShowTagKeys(on, m)),
        ("SHOW", "FIELD") if c == "KEYS" => clauses(3).map(|(on, m)| Statement::ShowFieldKeys(on, m)),
        ("SHOW", "SERIES") => clauses(2).map(|(on, m)| Statement::ShowSeries(on, m)),
        ("SHOW", "TAG") if c == "VALUES" => {
            let (mut on, mut from, mut keys, mut i) = (None, None, Vec::new(), 3);
            while i < toks.len() {
                match kw(i).as_str() {
                    "ON" => {
                        on = Some(ident(i + 1)?);
                        i += 2;
                    }
                    "FROM" => {
                        from = Some(ident(i + 1)?);
                        i += 2;
                    }
                    "WITH" if kw(i + 1) == "KEY" => match toks.get(i + 2).map(|t| t.0.as_str()) {
                        Some("=") => {
                            keys.push(ident(i + 3)?);
                            i += 4;
                        }
                        Some(_) if kw(i + 2) == "IN" => {
                            if toks.get(i + 3).map(|t| t.0.as_str()) != Some("(") {
                                return Err("expected ( after WITH KEY IN".into());
                            }
                            i += 4;
                            loop {
                                keys.push(ident(i)?);
                                match toks.get(i + 1).map(|t| t.0.as_str()) {
                                    Some(",") => i += 2,
                                    Some(")") => {
                                        i += 2;
                                        break;
                                    }
                                    _ => return Err("expected , or ) in WITH KEY IN (...)".into()),
                                }
                            }
                        }
                        _ => return Err("expected = or IN after WITH KEY (regular expressions are not supported)".into()),
                    },
                    other => return Err(format!("found {other}, expected ON, FROM, WITH KEY or EOF")),
                }
            }
            if keys.is_empty() {
                return Err("found EOF, expected WITH KEY".into());
            }
            Ok(Statement::ShowTagValues { on, from, keys })
        }
        ("SELECT", _) => Err("SELECT is not supported on /query: use POST /api/v1/sql".into()),
        _ => Err(format!(
            "found {}, expected CREATE DATABASE, DROP DATABASE or SHOW DATABASES|RETENTION POLICIES|MEASUREMENTS|TAG KEYS|TAG VALUES|FIELD KEYS|SERIES",
            toks.first().map(|t| t.0.as_str()).unwrap_or("EOF")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_split_outside_quotes() {
        assert_eq!(
            split_statements("CREATE DATABASE \"a;b\"; SHOW DATABASES;;  "),
            vec!["CREATE DATABASE \"a;b\"", "SHOW DATABASES"]
        );
        assert_eq!(split_statements("show databases"), vec!["show databases"]);
    }

    #[test]
    fn durations_and_retention_clauses() {
        for (lit, secs) in [
            ("INF", 0),
            ("inf", 0),
            ("0s", 0),
            ("1h", 3600),
            ("90m", 5400),
            ("1h30m", 5400),
            ("30d", 2_592_000),
            ("2w", 1_209_600),
            ("3600000ms", 3600),
        ] {
            assert_eq!(parse_duration_secs(lit), Ok(secs), "{lit}");
        }
        assert_eq!(parse_duration_secs("18250d"), Ok(MAX_RETENTION_SECS));
        for lit in [
            "",
            "1",
            "h",
            "1x",
            "1h30",
            "-1h",
            "99999999999999999999w",
            "18251d",
            "999999999999w",
        ] {
            assert!(parse_duration_secs(lit).is_err(), "{lit}");
        }
        assert_eq!(
            parse_duration_secs("59m"),
            Err("retention policy duration must be at least 1h0m0s".into())
        );
        assert_eq!(format_duration(0), "0s");
        assert_eq!(format_duration(2_592_000), "720h0m0s");
        assert_eq!(format_duration(5_430), "1h30m30s");
        for bad in [
            "CREATE DATABASE r WITH",
            "CREATE DATABASE r WITH DURATION",
            "CREATE DATABASE r WITH DURATION 1x",
            "CREATE DATABASE r WITH REPLICATION 3",
            "CREATE DATABASE r WITH NAME weekly",
            "CREATE DATABASE r WITH COLOR blue",
            "CREATE DATABASE r DURATION 1h",
        ] {
            assert!(parse_statement(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn statement_table() {
        use Statement::*;
        let s = |x: &str| Some(x.to_string());
        let cases: &[(&str, Statement)] = &[
            (
                "CREATE DATABASE telegraf",
                CreateDatabase("telegraf".into(), None),
            ),
            (
                "create database \"my db\" WITH DURATION 1d",
                CreateDatabase("my db".into(), Some(86_400)),
            ),
            (
                "CREATE DATABASE r WITH DURATION 1h30m REPLICATION 1 SHARD DURATION 1h NAME autogen",
                CreateDatabase("r".into(), Some(5_400)),
            ),
            (
                "CREATE DATABASE r WITH DURATION INF",
                CreateDatabase("r".into(), Some(0)),
            ),
            ("DROP DATABASE x", DropDatabase("x".into())),
            ("SHOW DATABASES", ShowDatabases),
            (
                "SHOW RETENTION POLICIES ON d",
                ShowRetentionPolicies(s("d")),
            ),
            ("show measurements", ShowMeasurements(None)),
            ("SHOW MEASUREMENTS ON \"d\"", ShowMeasurements(s("d"))),
            ("SHOW TAG KEYS FROM cpu", ShowTagKeys(None, s("cpu"))),
            (
                "SHOW TAG KEYS ON d FROM \"cpu\"",
                ShowTagKeys(s("d"), s("cpu")),
            ),
            ("SHOW FIELD KEYS ON d", ShowFieldKeys(s("d"), None)),
            ("SHOW SERIES FROM cpu ON d", ShowSeries(s("d"), s("cpu"))),
            (
                "SHOW TAG VALUES FROM cpu WITH KEY = \"host\"",
                ShowTagValues {
                    on: None,
                    from: s("cpu"),
                    keys: vec!["host".into()],
                },
            ),
            (
                "SHOW TAG VALUES ON d WITH KEY IN (host, \"dc\")",
                ShowTagValues {
                    on: s("d"),
                    from: None,
                    keys: vec!["host".into(), "dc".into()],
                },
            ),
        ];
        for (q, want) in cases {
            assert_eq!(&parse_statement(q).unwrap(), want, "{q}");
        }
    }

    #[test]
    fn unsupported_statements_name_what_was_found() {
        assert!(parse_statement("SELECT * FROM cpu")
            .unwrap_err()
            .contains("/api/v1/sql"));
        assert!(parse_statement("DELETE FROM cpu")
            .unwrap_err()
            .starts_with("found DELETE"));
        assert!(parse_statement("SHOW MEASUREMENTS LIMIT 5")
            .unwrap_err()
            .contains("found LIMIT"));
        assert!(parse_statement("CREATE DATABASE")
            .unwrap_err()
            .contains("expected identifier"));
        assert!(parse_statement("CREATE DATABASE \"x")
            .unwrap_err()
            .contains("unterminated"));
    }
}
