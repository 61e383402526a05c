//! Which statement a query holds, by its leading keywords (InfluxDB's parse
//! tree, with its `expected` lists in its order). Statements chingest does not
//! implement parse to [`Statement::Unsupported`] naming them.

use super::Parser;
use crate::ast::{CqStatement, SeriesDeletion, Statement, UserStatement};
use crate::error::{ParseError, Pos};
use crate::token::{Keyword as K, Kind};

const STATEMENTS: &[&str] = &[
    "SELECT", "DELETE", "SHOW", "CREATE", "DROP", "EXPLAIN", "GRANT", "REVOKE", "ALTER", "SET",
    "KILL",
];

const SHOW: &[&str] = &[
    "CONTINUOUS",
    "DATABASES",
    "DIAGNOSTICS",
    "FIELD",
    "GRANTS",
    "MEASUREMENT",
    "MEASUREMENTS",
    "QUERIES",
    "RETENTION",
    "SERIES",
    "SHARD",
    "SHARDS",
    "STATS",
    "SUBSCRIPTIONS",
    "TAG",
    "USERS",
];

const CREATE: &[&str] = &[
    "CONTINUOUS",
    "DATABASE",
    "USER",
    "RETENTION",
    "SUBSCRIPTION",
];

const DROP: &[&str] = &[
    "CONTINUOUS",
    "DATABASE",
    "MEASUREMENT",
    "RETENTION",
    "SERIES",
    "SHARD",
    "SUBSCRIPTION",
    "USER",
];

impl Parser<'_> {
    /// One statement.
    pub(crate) fn statement(&mut self) -> Result<Statement, ParseError> {
        let t = self.scan_ws();
        match t.kind {
            Kind::Kw(K::SELECT) => Ok(Statement::Select(Box::new(self.select()?))),
            Kind::Kw(K::SHOW) => self.show(),
            Kind::Kw(K::CREATE) => self.create(),
            Kind::Kw(K::DROP) => self.drop_statement(),
            Kind::Kw(K::DELETE) => self.series_deletion().map(Statement::Delete),
            Kind::Kw(K::GRANT) => self.grant(),
            Kind::Kw(K::REVOKE) => self.revoke(),
            Kind::Kw(K::EXPLAIN) => {
                let what = if self.accept_kw(K::ANALYZE) {
                    "EXPLAIN ANALYZE"
                } else {
                    "EXPLAIN"
                };
                self.accept_kw(K::VERBOSE);
                self.expect_kw(K::SELECT)?;
                self.unsupported(what)
            }
            Kind::Kw(K::ALTER) => self.alter_retention_policy(),
            Kind::Kw(K::SET) => self.set_password(),
            Kind::Kw(K::KILL) => {
                self.expect_kw(K::QUERY)?;
                let t = self.expect(Kind::Integer, &["integer"])?;
                let id = t.lit.parse::<u64>().map_err(|_| {
                    ParseError::at(
                        format!("strconv.ParseUint: parsing {:?}: value out of range", t.lit),
                        t.pos,
                    )
                })?;
                let host = if self.accept_kw(K::ON) {
                    Some(self.ident()?)
                } else {
                    None
                };
                Ok(Statement::KillQuery { id, host })
            }
            _ => Err(ParseError::unexpected(&t, STATEMENTS)),
        }
    }

    /// `SHOW ...`
    fn show(&mut self) -> Result<Statement, ParseError> {
        let t = self.scan_ws();
        match t.kind {
            Kind::Kw(K::DATABASES) => Ok(Statement::ShowDatabases),
            Kind::Kw(K::DIAGNOSTICS) => {
                self.show_module(Statement::ShowDiagnostics, "SHOW DIAGNOSTICS FOR")
            }
            Kind::Kw(K::STATS) => self.show_module(Statement::ShowStats, "SHOW STATS FOR"),
            Kind::Kw(K::RETENTION) => {
                self.expect_kw(K::POLICIES)?;
                self.show_retention_policies()
            }
            Kind::Kw(K::MEASUREMENTS) => self.show_measurements(),
            Kind::Kw(K::SERIES) => self.show_series(),
            Kind::Kw(K::TAG) => {
                let t = self.scan_ws();
                match t.kind {
                    Kind::Kw(K::KEYS) => self.show_tag_keys(),
                    Kind::Kw(K::VALUES) => self.show_tag_values(),
                    Kind::Kw(K::KEY) => self.cardinality("SHOW TAG KEY"),
                    _ => Err(ParseError::unexpected(&t, &["KEY", "KEYS", "VALUES"])),
                }
            }
            Kind::Kw(K::FIELD) => {
                let t = self.scan_ws();
                match t.kind {
                    Kind::Kw(K::KEYS) => self.show_field_keys(),
                    Kind::Kw(K::KEY) => self.cardinality("SHOW FIELD KEY"),
                    _ => Err(ParseError::unexpected(&t, &["KEY", "KEYS"])),
                }
            }
            Kind::Kw(K::MEASUREMENT) => {
                let t = self.scan_ws();
                match t.kind {
                    Kind::Kw(K::EXACT) => {
                        self.expect_kw(K::CARDINALITY)?;
                        self.unsupported("SHOW MEASUREMENT EXACT CARDINALITY")
                    }
                    Kind::Kw(K::CARDINALITY) => self.unsupported("SHOW MEASUREMENT CARDINALITY"),
                    _ => Err(ParseError::unexpected(&t, &["EXACT", "CARDINALITY"])),
                }
            }
            Kind::Kw(K::CONTINUOUS) => {
                self.expect_kw(K::QUERIES)?;
                Ok(Statement::ContinuousQuery(CqStatement::Show))
            }
            Kind::Kw(K::GRANTS) => self.show_grants(),
            Kind::Kw(K::SHARD) => self.keywords(&[K::GROUPS], "SHOW SHARD GROUPS"),
            Kind::Kw(K::QUERIES) => Ok(Statement::ShowQueries),
            Kind::Kw(K::SHARDS) => self.unsupported("SHOW SHARDS"),
            Kind::Kw(K::SUBSCRIPTIONS) => self.unsupported("SHOW SUBSCRIPTIONS"),
            Kind::Kw(K::USERS) => Ok(Statement::User(UserStatement::ShowUsers)),
            _ => Err(ParseError::unexpected(&t, SHOW)),
        }
    }

    /// `SHOW DIAGNOSTICS|STATS [FOR 'module']`: the module form is not implemented.
    fn show_module(
        &mut self,
        plain: Statement,
        with_module: &str,
    ) -> Result<Statement, ParseError> {
        if self.accept_kw(K::FOR) {
            self.expect(Kind::Str, &["string"])?;
            return self.unsupported(with_module);
        }
        Ok(plain)
    }

    /// `SHOW TAG KEY [EXACT] CARDINALITY ...` and its `FIELD KEY` twin.
    fn cardinality(&mut self, prefix: &str) -> Result<Statement, ParseError> {
        let exact = self.accept_kw(K::EXACT);
        let expected: &[&str] = if exact {
            &["CARDINALITY"]
        } else {
            &["EXACT", "CARDINALITY"]
        };
        self.expect(Kind::Kw(K::CARDINALITY), expected)?;
        let what = format!("{prefix}{} CARDINALITY", if exact { " EXACT" } else { "" });
        self.unsupported(&what)
    }

    /// `CREATE ...`
    fn create(&mut self) -> Result<Statement, ParseError> {
        let t = self.scan_ws();
        match t.kind {
            Kind::Kw(K::DATABASE) => self.create_database(),
            Kind::Kw(K::CONTINUOUS) => self.create_continuous_query(),
            Kind::Kw(K::RETENTION) => self.create_retention_policy(),
            Kind::Kw(K::USER) => self.create_user(),
            Kind::Kw(K::SUBSCRIPTION) => self.unsupported("CREATE SUBSCRIPTION"),
            _ => Err(ParseError::unexpected(&t, CREATE)),
        }
    }

    /// `DROP ...`
    fn drop_statement(&mut self) -> Result<Statement, ParseError> {
        let t = self.scan_ws();
        match t.kind {
            Kind::Kw(K::DATABASE) => self.drop_database(),
            Kind::Kw(K::CONTINUOUS) => self.drop_continuous_query(),
            Kind::Kw(K::RETENTION) => self.drop_retention_policy(),
            Kind::Kw(K::MEASUREMENT) => self.drop_measurement(),
            Kind::Kw(K::SERIES) => self.series_deletion().map(Statement::DropSeries),
            Kind::Kw(K::SHARD) => self.unsupported("DROP SHARD"),
            Kind::Kw(K::SUBSCRIPTION) => self.unsupported("DROP SUBSCRIPTION"),
            Kind::Kw(K::USER) => self.drop_user(),
            _ => Err(ParseError::unexpected(&t, DROP)),
        }
    }

    /// `[FROM ...] [WHERE ...]` of `DELETE` and `DROP SERIES`, which need one of them. As in
    /// InfluxDB, a source names no database or retention policy: these statements apply to
    /// the request's database.
    fn series_deletion(&mut self) -> Result<SeriesDeletion, ParseError> {
        let t = self.peek_ws();
        if !(t.is(K::FROM) || t.is(K::WHERE)) {
            return Err(ParseError::unexpected(&t, &["FROM", "WHERE"]));
        }
        let mut from = Vec::new();
        if self.accept_kw(K::FROM) {
            from = self.measurements()?;
            for m in &from {
                // InfluxDB reports these at the start of the query (its error has no position).
                if m.database.is_some() {
                    return Err(ParseError::at("database not supported", Pos::default()));
                }
                if m.retention_policy.is_some() {
                    return Err(ParseError::at(
                        "retention policy not supported",
                        Pos::default(),
                    ));
                }
            }
        }
        Ok(SeriesDeletion {
            from,
            condition: self.condition()?,
        })
    }

    /// The remaining leading keywords of an unimplemented statement, then the statement.
    fn keywords(&mut self, kws: &[K], what: &str) -> Result<Statement, ParseError> {
        for kw in kws {
            self.expect_kw(*kw)?;
        }
        self.unsupported(what)
    }

    /// An unimplemented statement: the rest of it, up to `;` or the end, is
    /// skipped, keeping only the database its first `ON` names; executing it
    /// answers an error naming `what`.
    pub(crate) fn unsupported(&mut self, what: &str) -> Result<Statement, ParseError> {
        let mut on = None;
        let mut after_on = false;
        loop {
            let t = self.scan_ws();
            match t.kind {
                Kind::Semicolon | Kind::Eof => {
                    self.unscan();
                    return Ok(Statement::Unsupported {
                        what: what.to_owned(),
                        on,
                    });
                }
                Kind::Kw(K::ON) if on.is_none() => after_on = true,
                Kind::Ident if after_on => {
                    on = Some(t.lit);
                    after_on = false;
                }
                _ => after_on = false,
            }
        }
    }
}
