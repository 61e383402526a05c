//! Statements to trees, and InfluxDB's error texts (checked against influxd 1.6.7).

use std::collections::HashMap;

use crate::ast::*;
use crate::{parse_expr, parse_query, parse_statement, ParseError};

fn select(q: &str) -> SelectStatement {
    match parse_statement(q) {
        Ok(Statement::Select(s)) => *s,
        other => panic!("{q}: {other:?}"),
    }
}

fn err(q: &str) -> String {
    match parse_query(q, &HashMap::new()) {
        Err(e) => e.to_string(),
        Ok(s) => panic!(
            "{}: parsed as {} statements",
            &q[..q.len().min(80)],
            s.len()
        ),
    }
}

fn var(name: &str) -> Expr {
    Expr::VarRef {
        name: name.into(),
        data_type: None,
    }
}

fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Call {
        name: name.into(),
        args,
    }
}

fn lit(l: Literal) -> Expr {
    Expr::Literal(l)
}

fn bin(op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
    Expr::Binary {
        op,
        lhs: Box::new(lhs),
        rhs: Box::new(rhs),
    }
}

fn paren(e: Expr) -> Expr {
    Expr::Paren(Box::new(e))
}

fn measurement(name: &str) -> Source {
    Source::Measurement(MeasurementName {
        database: None,
        retention_policy: None,
        name: NameMatch::Name(name.into()),
    })
}

fn dur(ns: i64) -> Expr {
    lit(Literal::Duration(Duration(ns)))
}

const S: i64 = 1_000_000_000;
const H: i64 = 3600 * S;

fn now_minus(ns: i64) -> Expr {
    bin(BinaryOp::Sub, call("now", vec![]), dur(ns))
}

#[test]
fn grafana_mean_group_by_time_and_host() {
    let s = select(
        r#"SELECT mean("value") FROM "cpu" WHERE ("host" =~ /^(a|b)$/) AND time >= now() - 6h and time <= now() GROUP BY time(20s), "host" fill(null)"#,
    );
    assert_eq!(
        s.fields,
        vec![Field {
            expr: call("mean", vec![var("value")]),
            alias: None
        }]
    );
    assert_eq!(s.sources, vec![measurement("cpu")]);
    let host = paren(bin(
        BinaryOp::EqRegex,
        var("host"),
        lit(Literal::Regex(Regex("^(a|b)$".into()))),
    ));
    let want = bin(
        BinaryOp::And,
        bin(
            BinaryOp::And,
            host,
            bin(BinaryOp::GtEq, var("time"), now_minus(6 * H)),
        ),
        bin(BinaryOp::LtEq, var("time"), call("now", vec![])),
    );
    assert_eq!(s.condition, Some(want));
    assert_eq!(
        s.dimensions,
        vec![
            Dimension::Time {
                interval: Duration(20 * S),
                offset: None
            },
            Dimension::Tag("host".into()),
        ]
    );
    assert_eq!(s.fill, Some(Fill::Null));
    assert!(!s.order_desc);
}

#[test]
fn grafana_derivative_after_macro_expansion() {
    let s = select(
        r#"SELECT non_negative_derivative(mean("bytes_recv"), 1s) *8 FROM "net" WHERE "host" = 'x' AND time >= 1600000000000ms and time <= 1600003600000ms GROUP BY time(1m) fill(none)"#,
    );
    let deriv = call(
        "non_negative_derivative",
        vec![call("mean", vec![var("bytes_recv")]), dur(S)],
    );
    assert_eq!(
        s.fields[0].expr,
        bin(BinaryOp::Mul, deriv, lit(Literal::Integer(8)))
    );
    assert_eq!(s.fields[0].name(), "non_negative_derivative");
    let cond = s.condition.unwrap();
    assert_eq!(
        cond.to_string(),
        "host = 'x' AND time >= 1600000000s AND time <= 1600003600s"
    );
    assert_eq!(s.fill, Some(Fill::None));
}

#[test]
fn telegraf_last_with_qualified_names_and_tz() {
    let s = select(
        r#"SELECT last("used_percent") AS "used %" FROM "telegraf"."autogen"."mem" WHERE time > now() - 1h GROUP BY time(10s, -5s), * ORDER BY time DESC LIMIT 10 OFFSET 2 SLIMIT 3 SOFFSET 4 tz('Europe/Paris')"#,
    );
    assert_eq!(s.fields[0].alias.as_deref(), Some("used %"));
    assert_eq!(s.fields[0].name(), "used %");
    assert_eq!(
        s.sources,
        vec![Source::Measurement(MeasurementName {
            database: Some("telegraf".into()),
            retention_policy: Some("autogen".into()),
            name: NameMatch::Name("mem".into()),
        })]
    );
    assert_eq!(
        s.dimensions,
        vec![
            Dimension::Time {
                interval: Duration(10 * S),
                offset: Some(Duration(-5 * S))
            },
            Dimension::Wildcard,
        ]
    );
    assert!(s.order_desc);
    assert_eq!(
        (s.limit, s.offset, s.slimit, s.soffset),
        (Some(10), Some(2), Some(3), Some(4))
    );
    assert_eq!(s.timezone.as_deref(), Some("Europe/Paris"));
}

#[test]
fn sources_regexes_db_dot_dot_and_subqueries() {
    let s = select(r#"SELECT * FROM db..cpu, /^disk\/io.*/, rp.m, "my db"../net/"#);
    let m = |db: Option<&str>, rp: Option<&str>, name: NameMatch| {
        Source::Measurement(MeasurementName {
            database: db.map(Into::into),
            retention_policy: rp.map(Into::into),
            name,
        })
    };
    assert_eq!(
        s.sources,
        vec![
            m(Some("db"), None, NameMatch::Name("cpu".into())),
            m(None, None, NameMatch::Regex(Regex("^disk/io.*".into()))),
            m(None, Some("rp"), NameMatch::Name("m".into())),
            m(Some("my db"), None, NameMatch::Regex(Regex("net".into()))),
        ]
    );
    assert_eq!(s.fields[0].expr, Expr::Wildcard(None));

    let s = select(
        "SELECT max(m) FROM (SELECT mean(x) AS m FROM cpu WHERE time > now() - 1h GROUP BY time(1m), host) WHERE time > now() - 1h",
    );
    let Source::Subquery(inner) = &s.sources[0] else {
        panic!("{s:?}")
    };
    assert_eq!(inner.fields[0].name(), "m");
    assert_eq!(inner.dimensions.len(), 2);
    assert!(s.condition.is_some());
}

#[test]
fn fields_casts_wildcards_calls_and_precedence() {
    let s = select(
        r#"SELECT *::field, "a b"::float, "esc\"q"::tag, percentile(x, 90), top(x, host, 3), a + b * c - d, (a + b) * c, -x, count(*), DISTINCT host, distinct(v) FROM m"#,
    );
    let e: Vec<Expr> = s.fields.into_iter().map(|f| f.expr).collect();
    assert_eq!(e[0], Expr::Wildcard(Some(DataType::Field)));
    assert_eq!(
        e[1],
        Expr::VarRef {
            name: "a b".into(),
            data_type: Some(DataType::Float)
        }
    );
    assert_eq!(
        e[2],
        Expr::VarRef {
            name: "esc\"q".into(),
            data_type: Some(DataType::Tag)
        }
    );
    assert_eq!(
        e[3],
        call("percentile", vec![var("x"), lit(Literal::Integer(90))])
    );
    assert_eq!(
        e[4],
        call("top", vec![var("x"), var("host"), lit(Literal::Integer(3))])
    );
    assert_eq!(
        e[5],
        bin(
            BinaryOp::Sub,
            bin(
                BinaryOp::Add,
                var("a"),
                bin(BinaryOp::Mul, var("b"), var("c"))
            ),
            var("d")
        )
    );
    assert_eq!(
        e[6],
        bin(
            BinaryOp::Mul,
            paren(bin(BinaryOp::Add, var("a"), var("b"))),
            var("c")
        )
    );
    assert_eq!(
        e[7],
        bin(BinaryOp::Mul, lit(Literal::Integer(-1)), var("x"))
    );
    assert_eq!(e[8], call("count", vec![Expr::Wildcard(None)]));
    assert_eq!(e[9], call("distinct", vec![var("host")]));
    assert_eq!(e[10], call("distinct", vec![var("v")]));
    let names: Vec<String> = e.iter().map(Expr::column_name).collect();
    assert_eq!(
        names,
        [
            "",
            "a b",
            "esc\"q",
            "percentile",
            "top",
            "a_b_c_d",
            "a_b_c",
            "x",
            "count",
            "distinct",
            "distinct"
        ]
    );
}

#[test]
fn literals() {
    let cases: &[(&str, Expr)] = &[
        ("1.5", lit(Literal::Float(1.5))),
        ("-1.5", lit(Literal::Float(-1.5))),
        (".5", lit(Literal::Float(0.5))),
        ("42", lit(Literal::Integer(42))),
        ("-42", lit(Literal::Integer(-42))),
        ("18446744073709551615", lit(Literal::Unsigned(u64::MAX))),
        ("-9223372036854775808", lit(Literal::Integer(i64::MIN))),
        (r"'it\'s\n'", lit(Literal::String("it's\n".into()))),
        ("TRUE", lit(Literal::Boolean(true))),
        ("false", lit(Literal::Boolean(false))),
        ("1h30m", dur(90 * 60 * S)),
        ("-5m", dur(-300 * S)),
        (
            "'2020-01-01T00:00:00Z'",
            lit(Literal::String("2020-01-01T00:00:00Z".into())),
        ),
    ];
    for (q, want) in cases {
        assert_eq!(&parse_expr(q).unwrap(), want, "{q}");
    }
    // Two adjacent strings are not one literal.
    assert_eq!(
        parse_expr("'it''s'").unwrap_err().to_string(),
        "found s, expected EOF at line 1, char 4"
    );
}

#[test]
fn bound_parameters_substitute_by_kind() {
    let mut params = HashMap::new();
    params.insert("host".to_string(), Literal::String("a'b".into()));
    params.insert("n".to_string(), Literal::Integer(5));
    params.insert("d".to_string(), Literal::Duration(Duration(90 * S)));
    params.insert("re".to_string(), Literal::Regex(Regex("^x$".into())));
    let q = "SELECT v FROM m WHERE host = $host AND v > $n AND time > now() - $d AND dc =~ $re LIMIT $n";
    let stmts = parse_query(q, &params).unwrap();
    let Statement::Select(s) = &stmts[0] else {
        panic!()
    };
    assert_eq!(
        s.condition.as_ref().unwrap().to_string(),
        r"host = 'a\'b' AND v > 5 AND time > now() - 90s AND dc =~ /^x$/"
    );
    assert_eq!(s.limit, Some(5));
    assert_eq!(
        parse_query("SELECT v FROM m WHERE host = $nope", &params)
            .unwrap_err()
            .to_string(),
        "missing parameter: nope"
    );
}

#[test]
fn several_statements_and_empty_ones() {
    let stmts = parse_query(";SHOW DATABASES;; SELECT a FROM b ;\n", &HashMap::new()).unwrap();
    assert_eq!(stmts.len(), 2);
    assert_eq!(stmts[0], Statement::ShowDatabases);
    assert!(parse_query("", &HashMap::new()).unwrap().is_empty());
}

#[test]
fn show_statements() {
    let s = |q: &str| parse_statement(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    assert_eq!(s("SHOW DATABASES"), Statement::ShowDatabases);
    assert_eq!(
        s("SHOW RETENTION POLICIES ON \"db\""),
        Statement::ShowRetentionPolicies {
            on: Some("db".into())
        }
    );
    assert_eq!(
        s("SHOW MEASUREMENTS ON db WITH MEASUREMENT =~ /cpu.*/ WHERE host = 'a' LIMIT 5 OFFSET 1"),
        Statement::ShowMeasurements(ShowMeasurements {
            on: Some("db".into()),
            with_measurement: Some(NameMatch::Regex(Regex("cpu.*".into()))),
            condition: Some(bin(
                BinaryOp::Eq,
                var("host"),
                lit(Literal::String("a".into()))
            )),
            limit: Some(5),
            offset: Some(1),
        })
    );
    assert_eq!(
        s("SHOW TAG VALUES ON db FROM cpu, mem WITH KEY IN (host, \"dc\") WHERE region = 'eu' LIMIT 2"),
        Statement::ShowTagValues {
            common: ShowCommon {
                on: Some("db".into()),
                from: vec![
                    MeasurementName { database: None, retention_policy: None, name: NameMatch::Name("cpu".into()) },
                    MeasurementName { database: None, retention_policy: None, name: NameMatch::Name("mem".into()) },
                ],
                condition: Some(bin(BinaryOp::Eq, var("region"), lit(Literal::String("eu".into())))),
                limit: Some(2),
                offset: None,
            },
            key: TagKeyMatch::In(vec!["host".into(), "dc".into()]),
        }
    );
    for (q, key) in [
        (
            "SHOW TAG VALUES WITH KEY = host",
            TagKeyMatch::Eq("host".into()),
        ),
        (
            "SHOW TAG VALUES WITH KEY != host",
            TagKeyMatch::NotEq("host".into()),
        ),
        (
            "SHOW TAG VALUES WITH KEY =~ /h.*/",
            TagKeyMatch::Regex(Regex("h.*".into())),
        ),
        (
            "SHOW TAG VALUES WITH KEY !~ /h.*/",
            TagKeyMatch::NotRegex(Regex("h.*".into())),
        ),
    ] {
        let Statement::ShowTagValues { key: got, .. } = s(q) else {
            panic!("{q}")
        };
        assert_eq!(got, key, "{q}");
    }
    let Statement::ShowTagKeys(c) =
        s("SHOW TAG KEYS ON db FROM /c.*/ WHERE a = 'b' LIMIT 1 OFFSET 2")
    else {
        panic!()
    };
    assert_eq!(
        (c.on.as_deref(), c.from.len(), c.limit, c.offset),
        (Some("db"), 1, Some(1), Some(2))
    );
    let Statement::ShowFieldKeys(c) = s("SHOW FIELD KEYS FROM \"cpu\"") else {
        panic!()
    };
    assert_eq!(c.from.len(), 1);
    let Statement::ShowSeries(c) = s("SHOW SERIES ON db FROM cpu WHERE host = 'a' LIMIT 10") else {
        panic!()
    };
    assert_eq!((c.on.as_deref(), c.limit), (Some("db"), Some(10)));
    assert_eq!(s("SHOW DIAGNOSTICS"), Statement::ShowDiagnostics);
    assert_eq!(s("show stats"), Statement::ShowStats);
}

#[test]
fn create_database_prints_as_influxdb_1x_does() {
    // influxd 1.6.7 quotes the statement so in its GET warning (probed).
    for (q, printed) in [
        ("CREATE DATABASE benchmark WITH REPLICATION 1", "CREATE DATABASE benchmark WITH REPLICATION 1"),
        (
            "CREATE DATABASE b2 WITH DURATION 1h30m REPLICATION 1 SHARD DURATION 1h NAME autogen",
            "CREATE DATABASE b2 WITH DURATION 1h30m0s REPLICATION 1 SHARD DURATION 1h0m0s NAME autogen",
        ),
        ("CREATE DATABASE \"b 3\"", "CREATE DATABASE \"b 3\""),
        ("CREATE DATABASE b4 WITH DURATION INF", "CREATE DATABASE b4 WITH DURATION 0s"),
    ] {
        assert_eq!(parse_statement(q).unwrap().to_string(), printed, "{q}");
    }
}

#[test]
fn create_and_drop_database_keep_the_old_semantics() {
    let c = |q: &str| parse_statement(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    let db = |name: &str, duration_secs| Statement::CreateDatabase {
        name: name.into(),
        duration_secs,
        replication: None,
        shard_duration_ns: None,
        policy: None,
    };
    assert_eq!(c("CREATE DATABASE telegraf"), db("telegraf", None));
    assert_eq!(
        c("create database \"my db\" WITH DURATION 1d"),
        db("my db", Some(86_400))
    );
    assert_eq!(
        c("CREATE DATABASE r WITH DURATION 1h30m REPLICATION 1 SHARD DURATION 1h NAME autogen"),
        Statement::CreateDatabase {
            name: "r".into(),
            duration_secs: Some(5_400),
            replication: Some(1),
            shard_duration_ns: Some(3_600_000_000_000),
            policy: Some("autogen".into()),
        }
    );
    assert_eq!(c("CREATE DATABASE r WITH DURATION INF"), db("r", Some(0)));
    assert_eq!(
        c("CREATE DATABASE r WITH DURATION 18250d"),
        db("r", Some(crate::MAX_RETENTION_SECS))
    );
    assert_eq!(
        c("DROP DATABASE x"),
        Statement::DropDatabase { name: "x".into() }
    );
    assert_eq!(
        c("DROP MEASUREMENT \"cpu load\""),
        Statement::DropMeasurement {
            name: "cpu load".into()
        }
    );
    for (q, msg) in [
        (
            "CREATE DATABASE r WITH DURATION 59m",
            "retention policy duration must be at least 1h0m0s",
        ),
        (
            "CREATE DATABASE r WITH DURATION 18251d",
            "retention policy duration 18251d is longer than 50 years: use INF",
        ),
        (
            "CREATE DATABASE r WITH REPLICATION 3",
            "replication factor must be 1 (chingest is one node)",
        ),
        (
            "CREATE DATABASE r WITH NAME weekly",
            "retention policy \"weekly\": only the default policy \"autogen\" is supported",
        ),
    ] {
        let e = parse_statement(q).unwrap_err();
        assert!(e.is_statement_error(), "{q}");
        assert_eq!(e.to_string(), msg, "{q}");
    }
}

#[test]
fn unsupported_statements_are_named() {
    for (q, what) in [
        ("EXPLAIN ANALYZE SELECT * FROM cpu", "EXPLAIN ANALYZE"),
        ("EXPLAIN SELECT * FROM cpu", "EXPLAIN"),
        ("SHOW SHARDS", "SHOW SHARDS"),
        ("SHOW SHARD GROUPS", "SHOW SHARD GROUPS"),
        ("SHOW SUBSCRIPTIONS", "SHOW SUBSCRIPTIONS"),
        (
            "SHOW MEASUREMENT CARDINALITY",
            "SHOW MEASUREMENT CARDINALITY",
        ),
        (
            "SHOW SERIES EXACT CARDINALITY ON db",
            "SHOW SERIES EXACT CARDINALITY",
        ),
        (
            "SHOW TAG VALUES CARDINALITY WITH KEY = host",
            "SHOW TAG VALUES CARDINALITY",
        ),
        ("SHOW FIELD KEY CARDINALITY", "SHOW FIELD KEY CARDINALITY"),
    ] {
        match parse_statement(q).unwrap_or_else(|e| panic!("{q}: {e}")) {
            Statement::Unsupported { what: w, .. } => assert_eq!(w, what, "{q}"),
            other => panic!("{q}: {other:?}"),
        }
    }
    let stmts = parse_query("DROP SERIES FROM a; SHOW DATABASES", &HashMap::new()).unwrap();
    assert_eq!(stmts[1], Statement::ShowDatabases);
}

#[test]
fn user_statements_parse_and_print_back_without_passwords() {
    use crate::ast::{Password, Privilege, UserStatement as U};
    // Each printed form is what influxd 1.6.7 printed (SHOW QUERIES, its GET warning,
    // its authorization errors), 2026-11-27.
    for (q, st, printed) in [
        (
            "CREATE USER bob WITH PASSWORD 'p\\'w'",
            U::Create {
                name: "bob".into(),
                password: Password("p'w".into()),
                admin: false,
            },
            "CREATE USER bob WITH PASSWORD [REDACTED]",
        ),
        (
            "create user \"we'ird\" with password 's' with all privileges",
            U::Create {
                name: "we'ird".into(),
                password: Password("s".into()),
                admin: true,
            },
            "CREATE USER \"we'ird\" WITH PASSWORD [REDACTED] WITH ALL PRIVILEGES",
        ),
        (
            "DROP USER bob",
            U::Drop { name: "bob".into() },
            "DROP USER bob",
        ),
        (
            "SET PASSWORD FOR bob = 'x'",
            U::SetPassword {
                name: "bob".into(),
                password: Password("x".into()),
            },
            "SET PASSWORD FOR bob = [REDACTED]",
        ),
        (
            "GRANT ALL ON \"my db\" TO bob",
            U::Grant {
                privilege: Privilege::All,
                on: "my db".into(),
                user: "bob".into(),
            },
            "GRANT ALL PRIVILEGES ON \"my db\" TO bob",
        ),
        (
            "GRANT READ ON a TO bob",
            U::Grant {
                privilege: Privilege::Read,
                on: "a".into(),
                user: "bob".into(),
            },
            "GRANT READ ON a TO bob",
        ),
        (
            "GRANT ALL TO bob",
            U::GrantAdmin { user: "bob".into() },
            "GRANT ALL PRIVILEGES TO bob",
        ),
        (
            "REVOKE WRITE ON a FROM bob",
            U::Revoke {
                privilege: Privilege::Write,
                on: "a".into(),
                user: "bob".into(),
            },
            "REVOKE WRITE ON a FROM bob",
        ),
        (
            "REVOKE ALL PRIVILEGES FROM bob",
            U::RevokeAdmin { user: "bob".into() },
            "REVOKE ALL PRIVILEGES FROM bob",
        ),
        ("SHOW USERS", U::ShowUsers, "SHOW USERS"),
        (
            "SHOW GRANTS FOR \"bob\"",
            U::ShowGrants { user: "bob".into() },
            "SHOW GRANTS FOR bob",
        ),
    ] {
        let got = parse_statement(q).unwrap_or_else(|e| panic!("{q}: {e}"));
        assert_eq!(got, Statement::User(st), "{q}");
        assert_eq!(got.to_string(), printed, "{q}");
        assert!(
            !format!("{got:?}").contains("p'w"),
            "Debug shows no password"
        );
    }
    // influxd 1.6.7's texts for each.
    for (q, msg) in [
        (
            "GRANT ALL TO",
            "found EOF, expected identifier at line 1, char 14",
        ),
        (
            "GRANT ALL FROM bob",
            "found FROM, expected ON, TO at line 1, char 11",
        ),
        (
            "GRANT READ TO bob",
            "found TO, expected ON at line 1, char 12",
        ),
        (
            "GRANT bogus ON a TO bob",
            "found bogus, expected READ, WRITE, ALL [PRIVILEGES] at line 1, char 7",
        ),
        (
            "REVOKE ALL FROM",
            "found EOF, expected identifier at line 1, char 17",
        ),
        (
            "REVOKE WRITE FROM bob",
            "found FROM, expected ON at line 1, char 14",
        ),
        (
            "REVOKE READ ON a TO bob",
            "found TO, expected FROM at line 1, char 18",
        ),
        (
            "CREATE USER z",
            "found EOF, expected WITH at line 1, char 15",
        ),
        (
            "CREATE USER z WITH PASSWORD",
            "found EOF, expected string at line 1, char 29",
        ),
        (
            "CREATE USER x WITH PASSWORD 'x' WITH",
            "found EOF, expected ALL at line 1, char 38",
        ),
        (
            "CREATE USER x WITH PASSWORD 'x' WITH ALL",
            "found EOF, expected PRIVILEGES at line 1, char 42",
        ),
        (
            "CREATE USER x WITH PASSWORD 'x' WITH ALL PRIVILEGES extra",
            "found extra, expected ; at line 1, char 53",
        ),
        (
            "CREATE USER select WITH PASSWORD 'x'",
            "found SELECT, expected identifier at line 1, char 13",
        ),
        (
            "CREATE USER 'bob' WITH PASSWORD 'x'",
            "found bob, expected identifier at line 1, char 12",
        ),
        (
            "SET PASSWORD FOR bob 'x'",
            "found x, expected = at line 1, char 21",
        ),
        (
            "SET PASSWORD FOR bob = x",
            "found x, expected string at line 1, char 24",
        ),
        (
            "SET PASSWORD bob = 'x'",
            "found bob, expected FOR at line 1, char 14",
        ),
        (
            "DROP USER",
            "found EOF, expected identifier at line 1, char 11",
        ),
        (
            "SHOW GRANTS FOR",
            "found EOF, expected identifier at line 1, char 17",
        ),
        (
            "SHOW GRANTS bob",
            "found bob, expected FOR at line 1, char 13",
        ),
    ] {
        let e = parse_query(q, &HashMap::new()).unwrap_err();
        assert_eq!(e.to_string(), msg, "{q}");
    }
    assert_eq!(Privilege::All.without(Privilege::Read), Privilege::Write);
    assert_eq!(Privilege::Read.without(Privilege::All), Privilege::None);
}

#[test]
fn continuous_queries_parse_and_print_back_as_influxdb_does() {
    use crate::ast::CqStatement;
    for (q, printed) in [
        (
            "CREATE CONTINUOUS QUERY cq1 ON a BEGIN SELECT mean(v) INTO m_mean FROM cpu GROUP BY time(1m) END",
            "CREATE CONTINUOUS QUERY cq1 ON a BEGIN SELECT mean(v) INTO m_mean FROM cpu GROUP BY time(1m) END",
        ),
        (
            "create continuous query \"cq 2\" on a resample every 2m for 10m begin SELECT mean(*) INTO b.autogen.:MEASUREMENT FROM a.autogen./.*/ WHERE host = 'h1' GROUP BY time(1m), * fill(0) end",
            "CREATE CONTINUOUS QUERY \"cq 2\" ON a RESAMPLE EVERY 2m FOR 10m BEGIN SELECT mean(*) INTO b.autogen.:MEASUREMENT FROM a.autogen./.*/ WHERE host = 'h1' GROUP BY time(1m), * fill(0) END",
        ),
        (
            "CREATE CONTINUOUS QUERY cq3 ON b RESAMPLE FOR 1h BEGIN SELECT count(v) INTO c FROM a..cpu GROUP BY time(30m) END",
            "CREATE CONTINUOUS QUERY cq3 ON b RESAMPLE FOR 1h BEGIN SELECT count(v) INTO c FROM a..cpu GROUP BY time(30m) END",
        ),
        (
            "CREATE CONTINUOUS QUERY cq4 ON b RESAMPLE EVERY 1h BEGIN SELECT count(v) INTO c FROM cpu GROUP BY time(30m, 5m) END",
            "CREATE CONTINUOUS QUERY cq4 ON b RESAMPLE EVERY 1h BEGIN SELECT count(v) INTO c FROM cpu GROUP BY time(30m, 5m) END",
        ),
        (
            "CREATE CONTINUOUS QUERY raw ON a BEGIN SELECT v INTO y FROM cpu GROUP BY time(1m) END",
            "CREATE CONTINUOUS QUERY raw ON a BEGIN SELECT v INTO y FROM cpu GROUP BY time(1m) END",
        ),
    ] {
        let st = parse_statement(q).unwrap_or_else(|e| panic!("{q}: {e}"));
        assert!(
            matches!(&st, Statement::ContinuousQuery(CqStatement::Create(_))),
            "{st:?}"
        );
        assert_eq!(st.to_string(), printed);
    }
    assert_eq!(
        parse_statement("DROP CONTINUOUS QUERY \"c q\" ON db").unwrap(),
        Statement::ContinuousQuery(CqStatement::Drop {
            name: "c q".into(),
            on: "db".into()
        })
    );
    assert_eq!(
        parse_statement("SHOW CONTINUOUS QUERIES").unwrap(),
        Statement::ContinuousQuery(CqStatement::Show)
    );
    // influxd 1.6.7's texts.
    for (q, msg) in [
        (
            "CREATE CONTINUOUS QUERY x ON a BEGIN SELECT mean(v) FROM cpu GROUP BY time(1m) END",
            "found FROM, expected INTO at line 1, char 53",
        ),
        (
            "CREATE CONTINUOUS QUERY x ON a BEGIN SELECT mean(v) INTO y FROM cpu END",
            "found cpu, expected GROUP BY time(...) at line 1, char 65",
        ),
        (
            "CREATE CONTINUOUS QUERY x ON a RESAMPLE EVERY 30s FOR 10s BEGIN SELECT mean(v) INTO y FROM cpu GROUP BY time(1m) END",
            "FOR duration must be >= GROUP BY time duration: must be a minimum of 1m, got 10s",
        ),
        (
            "CREATE CONTINUOUS QUERY x ON a RESAMPLE BEGIN SELECT mean(v) INTO y FROM cpu GROUP BY time(1m) END",
            "found BEGIN, expected EVERY, FOR at line 1, char 41",
        ),
        (
            "CREATE CONTINUOUS QUERY x ON a BEGIN SELECT mean(v) INTO y FROM cpu GROUP BY time(1m)",
            "found EOF, expected END at line 1, char 86",
        ),
        (
            "CREATE CONTINUOUS QUERY x BEGIN SELECT mean(v) INTO y FROM cpu GROUP BY time(1m) END",
            "found BEGIN, expected ON at line 1, char 27",
        ),
        ("DROP CONTINUOUS QUERY cq1", "found EOF, expected ON at line 1, char 27"),
    ] {
        let e = parse_query(q, &HashMap::new()).unwrap_err();
        assert_eq!(e.to_string(), msg, "{q}");
    }
}

#[test]
fn retention_policy_statements_parse_and_print_back() {
    use crate::ast::RpStatement;
    for (q, printed) in [
        (
            "CREATE RETENTION POLICY weekly ON a DURATION 7d REPLICATION 1",
            "CREATE RETENTION POLICY weekly ON a DURATION 168h0m0s REPLICATION 1",
        ),
        (
            "create retention policy \"y y\" on a duration 52w replication 1 shard duration 2d default",
            "CREATE RETENTION POLICY \"y y\" ON a DURATION 8736h0m0s REPLICATION 1 SHARD DURATION 48h0m0s DEFAULT",
        ),
        (
            "CREATE RETENTION POLICY forever ON a DURATION INF REPLICATION 1",
            "CREATE RETENTION POLICY forever ON a DURATION 0s REPLICATION 1",
        ),
        (
            "ALTER RETENTION POLICY weekly ON a DEFAULT DURATION 14d",
            "ALTER RETENTION POLICY weekly ON a DURATION 336h0m0s DEFAULT",
        ),
        ("DROP RETENTION POLICY weekly ON a", "DROP RETENTION POLICY weekly ON a"),
    ] {
        let st = parse_statement(q).unwrap_or_else(|e| panic!("{q}: {e}"));
        assert!(matches!(st, Statement::RetentionPolicy(_)), "{st:?}");
        assert_eq!(st.to_string(), printed);
    }
    assert!(matches!(
        parse_statement("ALTER RETENTION POLICY w ON a REPLICATION 1").unwrap(),
        Statement::RetentionPolicy(RpStatement::Alter {
            replication: Some(1),
            default: false,
            ..
        })
    ));
    // influxd 1.6.7's texts (the last two answered in the statement's result).
    for (q, msg) in [
        (
            "CREATE RETENTION POLICY x ON a DURATION 1d",
            "found EOF, expected REPLICATION at line 1, char 43",
        ),
        (
            "CREATE RETENTION POLICY x ON a REPLICATION 1",
            "found REPLICATION, expected DURATION at line 1, char 32",
        ),
        (
            "ALTER RETENTION POLICY weekly ON a",
            "found EOF, expected DURATION, REPLICATION, SHARD, DEFAULT at line 1, char 36",
        ),
        (
            "CREATE RETENTION POLICY short ON a DURATION 30m REPLICATION 1",
            "retention policy duration must be at least 1h0m0s",
        ),
        (
            "ALTER RETENTION POLICY weekly ON a DURATION 30m",
            "retention policy duration must be at least 1h0m0s",
        ),
    ] {
        let e = parse_query(q, &HashMap::new()).unwrap_err();
        assert_eq!(e.to_string(), msg, "{q}");
    }
}

#[test]
fn show_queries_and_kill_query_parse_and_print_back() {
    assert_eq!(
        parse_statement("SHOW QUERIES").unwrap(),
        Statement::ShowQueries
    );
    for (q, id, host) in [
        ("KILL QUERY 12", 12, None),
        (
            "KILL QUERY 3 ON \"localhost:8088\"",
            3,
            Some("localhost:8088"),
        ),
    ] {
        let st = parse_statement(q).unwrap();
        assert_eq!(
            st,
            Statement::KillQuery {
                id,
                host: host.map(str::to_string)
            }
        );
        assert_eq!(st.to_string(), q);
    }
    assert_eq!(
        parse_statement("KILL QUERY abc").unwrap_err().to_string(),
        "found abc, expected integer at line 1, char 12"
    );
}

#[test]
fn delete_and_drop_series_keep_their_sources_and_condition() {
    let st = parse_statement("DELETE FROM cpu, /^mem/ WHERE host = 'a' AND time < now()").unwrap();
    let Statement::Delete(d) = &st else {
        panic!("{st:?}")
    };
    assert_eq!(d.from.len(), 2);
    assert!(d.condition.is_some());
    assert_eq!(
        st.to_string(),
        "DELETE FROM cpu, /^mem/ WHERE host = 'a' AND time < now()"
    );
    let st = parse_statement("DROP SERIES WHERE \"host\" = 'a b'").unwrap();
    let Statement::DropSeries(d) = &st else {
        panic!("{st:?}")
    };
    assert!(d.from.is_empty());
    assert_eq!(st.to_string(), "DROP SERIES WHERE host = 'a b'");
    assert!(matches!(
        parse_statement("DROP SERIES FROM cpu").unwrap(),
        Statement::DropSeries(_)
    ));
    for (q, msg) in [
        (
            "DELETE FROM db..cpu",
            "database not supported at line 1, char 1",
        ),
        (
            "DROP SERIES FROM \"rp\".\"cpu\"",
            "retention policy not supported at line 1, char 1",
        ),
    ] {
        let e = parse_statement(q).unwrap_err();
        assert_eq!(e.to_string(), msg, "{q}");
    }
}

#[test]
fn unsupported_statements_keep_the_database_of_their_first_on() {
    for (q, on) in [
        ("SHOW MEASUREMENT CARDINALITY ON db", Some("db")),
        ("SHOW MEASUREMENT CARDINALITY", None),
    ] {
        match parse_statement(q).unwrap_or_else(|e| panic!("{q}: {e}")) {
            Statement::Unsupported { on: got, .. } => assert_eq!(got.as_deref(), on, "{q}"),
            other => panic!("{q}: {other:?}"),
        }
    }
}

#[test]
fn into_is_parsed() {
    let s = select("SELECT mean(x) INTO db.rp.:MEASUREMENT FROM /.*/ GROUP BY *");
    assert_eq!(s.into.unwrap().database.as_deref(), Some("db"));
    let s = select("SELECT x INTO other FROM m");
    assert_eq!(s.into.unwrap().name, NameMatch::Name("other".into()));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let q = format!("SELECT {}x FROM m", "(".repeat(10_000));
    assert_eq!(
        err(&q),
        "query nested too deeply (more than 256 levels) at line 1, char 264"
    );
    let q = format!("SELECT {}x FROM m", "f(".repeat(10_000));
    assert!(err(&q).starts_with("query nested too deeply"));
    let q = format!("SELECT {}x FROM m", "-(".repeat(10_000));
    assert!(err(&q).starts_with("query nested too deeply"));
    let q = format!(
        "SELECT x FROM {}m{}",
        "(SELECT x FROM ".repeat(1000),
        ")".repeat(1000)
    );
    assert!(err(&q).starts_with("query nested too deeply"));
    let q = format!(
        "SELECT x FROM m WHERE {}",
        vec!["a = 1"; 10_000].join(" OR ")
    );
    assert!(err(&q).starts_with("expression nested too deeply (more than 512 levels)"));
    let q = format!("SELECT x FROM m WHERE {}", vec!["a"; 10_000].join(" + "));
    assert!(err(&q).starts_with("expression nested too deeply"));
    // Nested chains add up.
    let chain = vec!["a"; 200].join(" + ");
    let mut q = chain.clone();
    for _ in 0..3 {
        q = format!("({q}) + {chain}");
    }
    assert!(err(&format!("SELECT x FROM m WHERE {q}")).starts_with("expression nested too deeply"));
    // Wide but shallow is fine: 400 ORs of comparisons, 500 parenthesised terms.
    let ok = format!("SELECT x FROM m WHERE {}", vec!["a = 1"; 400].join(" OR "));
    assert!(parse_statement(&ok).is_ok());
    let ok = format!(
        "SELECT x FROM m WHERE {}",
        vec!["(a = 1 AND b = 2)"; 500].join(" OR ")
    );
    assert!(parse_statement(&ok).is_ok());
    // Calls around a deep chain count too.
    let deep = vec!["a"; 500].join(" + ");
    let q = format!("SELECT {}{deep}{} FROM m", "f(".repeat(20), ")".repeat(20));
    assert!(err(&q).starts_with("expression nested too deeply"));
    let ok = format!("SELECT {} FROM m", vec!["f(a)"; 2000].join(", "));
    assert!(parse_statement(&ok).is_ok());
}

#[test]
fn statement_errors_are_marked() {
    for (q, msg) in [
        (
            "SELECT v FROM m GROUP BY time",
            "time() is a function and expects at least one argument",
        ),
        (
            "SELECT v FROM m GROUP BY time()",
            "time dimension expected 1 or 2 arguments",
        ),
        (
            "SELECT v FROM m GROUP BY time('x')",
            "time dimension must have duration argument",
        ),
        (
            "SELECT v FROM m GROUP BY time(1m), time(2m)",
            "multiple time dimensions not allowed",
        ),
        (
            "SELECT v FROM m GROUP BY time(1m, 'x')",
            "time dimension offset must be duration or now()",
        ),
        (
            "SELECT v FROM m GROUP BY now()",
            "only time() calls allowed in dimensions",
        ),
        (
            "SELECT v FROM m GROUP BY 'x'",
            "only time and tag dimensions allowed",
        ),
    ] {
        let e = parse_statement(q).unwrap_err();
        assert!(e.is_statement_error(), "{q}");
        assert_eq!(e.to_string(), msg);
    }
    assert!(!parse_statement("SELECT").unwrap_err().is_statement_error());
    let _: ParseError = parse_statement("x").unwrap_err();
}

/// Queries as Grafana (after macro expansion), Chronograf and the Telegraf
/// dashboards send them: each parses, and its text parses back to the same tree.
#[test]
fn dashboard_queries_parse_and_print_back() {
    for q in [
        r#"SELECT mean("usage_user") AS "user", mean("usage_system") AS "system" FROM "cpu" WHERE "host" =~ /^server01$/ AND "cpu" = 'cpu-total' AND time >= now() - 1h GROUP BY time(10s) fill(null)"#,
        r#"SELECT last("uptime") / 86400 AS "days" FROM "system" WHERE ("host" =~ /^(server01|server02)$/) AND time >= now() - 5m GROUP BY "host""#,
        r#"SELECT non_negative_derivative(mean("read_bytes"), 1s) FROM "diskio" WHERE "host" =~ /^server01$/ AND time >= 1600000000000ms and time <= 1600003600000ms GROUP BY time(30s), "name" fill(none)"#,
        r#"SELECT mean("used_percent") FROM "disk" WHERE ("host" =~ /^server01$/ AND "path" =~ /^\/var\/log$/) AND time >= 1600000000000ms and time <= 1600003600000ms GROUP BY time(1m), "path" fill(linear)"#,
        r#"SELECT mean("usage_idle") AS "mean_usage_idle" FROM "telegraf"."autogen"."cpu" WHERE time > now() - 15m AND "cpu"='cpu-total' GROUP BY time(1m), "host" FILL(null)"#,
        r#"SELECT moving_average(mean("x"), 5), cumulative_sum(sum("y")), elapsed(last("z"), 1s), difference(max(w)), non_negative_difference(min(v)) FROM m WHERE time > now() - 1h GROUP BY time(1m) fill(previous)"#,
        r#"SELECT spread("a"), stddev(b), median(c), mode(d), bottom(e, 3), first(f), sum(g), count(h), percentile("p", 99.9) FROM m WHERE time > '2020-01-01T00:00:00Z' AND time < '2020-01-02 00:00:00' ORDER BY time DESC LIMIT 100 tz('America/Chicago')"#,
        r#"SELECT max("m") FROM (SELECT mean("x") AS "m" FROM "cpu" WHERE time > now() - 1h GROUP BY time(1m), "host") WHERE time > now() - 1h GROUP BY time(10m) fill(0)"#,
        r#"SELECT "value" * 2 + 1, "a" - "b", -"c", ("a" + "b") / 2 FROM "db".."m" WHERE "value" > -1.5 AND "n" != 3 OR "s" <> 'x'"#,
        r#"SELECT * FROM "weird \"name\"" WHERE "tag with space" = 'it\'s' AND "x\\y" !~ /a\/b/"#,
        r#"SHOW TAG VALUES FROM "system" WITH KEY = "host""#,
        r#"SHOW TAG VALUES WITH KEY = "host" WHERE "datacenter" =~ /^eu$/"#,
        r#"SHOW TAG VALUES ON "telegraf" FROM "cpu" WITH KEY =~ /cpu|host/ WHERE time > now() - 1h LIMIT 10 OFFSET 5"#,
        r#"SHOW MEASUREMENTS WITH MEASUREMENT =~ /cpu/ LIMIT 100"#,
        r#"SHOW MEASUREMENTS ON telegraf WITH MEASUREMENT = "cpu" WHERE "host" = 'a'"#,
        r#"SHOW FIELD KEYS FROM "cpu""#,
        r#"SHOW TAG KEYS ON "telegraf" FROM "cpu", /^disk/ WHERE "host" = 'a' LIMIT 3"#,
        r#"SHOW SERIES FROM "cpu" WHERE "host" = 'a' LIMIT 5 OFFSET 1"#,
        r#"SHOW RETENTION POLICIES ON "telegraf""#,
        r#"CREATE DATABASE "my db" WITH DURATION 30d"#,
        r#"CREATE DATABASE forever WITH DURATION INF"#,
        r#"CREATE DATABASE b WITH DURATION 1h30m REPLICATION 1 SHARD DURATION 1h NAME autogen"#,
        r#"DROP DATABASE "my db""#,
    ] {
        let stmts = parse_query(q, &HashMap::new()).unwrap_or_else(|e| panic!("{q}: {e}"));
        assert_eq!(stmts.len(), 1, "{q}");
        let text = stmts[0].to_string();
        let again = parse_statement(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(again, stmts[0], "{q}\n{text}");
    }
}

#[test]
fn column_names_follow_influxdb() {
    let s = select(
        r#"SELECT last("uptime") / 86400, "a" + "b", mean(a) * 2, 2 * max(x) + min(y), (x), percentile(v, 90), "v"::float, *, 1, mean(v) AS avg FROM m"#,
    );
    let names: Vec<String> = s.fields.iter().map(Field::name).collect();
    assert_eq!(
        names,
        [
            "last",
            "a_b",
            "mean",
            "max_min",
            "x",
            "percentile",
            "v",
            "",
            "",
            "avg"
        ]
    );
}

#[test]
fn display_writes_influxql_as_influxdb_does() {
    let s = select(
        r#"SELECT mean("value") AS "mean value", "host"::tag FROM "telegraf"."autogen"."cpu", db../re\/x/ WHERE "host" =~ /^a\/b$/ AND time >= now() - 1h30m GROUP BY time(1m, -30s), "dc" fill(0) ORDER BY time DESC LIMIT 5 tz('UTC')"#,
    );
    assert_eq!(
        s.to_string(),
        r#"SELECT mean(value) AS "mean value", host::tag FROM telegraf.autogen.cpu, db../re\/x/ WHERE host =~ /^a\/b$/ AND time >= now() - 90m GROUP BY time(1m, -30s), dc fill(0) ORDER BY time DESC LIMIT 5 TZ('UTC')"#
    );
    assert_eq!(
        parse_expr(r#""select" + 'it\'s' + 1.0 + 2 + 1w + true"#)
            .unwrap()
            .to_string(),
        r#""select" + 'it\'s' + 1.0 + 2 + 1w + true"#
    );
    assert_eq!(
        parse_expr("count(distinct(host))").unwrap().to_string(),
        "count(distinct(host))"
    );
}

#[test]
fn order_limit_and_comments() {
    let s = select("SELECT a /* why */ FROM m -- trailing\nORDER BY time ASC LIMIT 0 OFFSET 0");
    assert!(!s.order_desc);
    assert_eq!((s.limit, s.offset), (None, None));
    assert!(select("SELECT a FROM m ORDER BY DESC").order_desc);
    assert_eq!(
        select("SELECT a FROM m LIMIT 99999999999999999999").limit,
        Some(i64::MAX as u64)
    );
}

#[test]
fn multi_line_positions() {
    assert_eq!(
        err("SELECT value\nFROM cpu\nWHERE x ="),
        "found EOF, expected identifier, string, number, bool at line 3, char 10"
    );
    assert_eq!(
        err("SELECT value\r\nFROM\r\n12"),
        "found 12, expected identifier at line 3, char 1"
    );
}
