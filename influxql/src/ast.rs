//! The statement tree: what a parsed InfluxQL statement says, before any name
//! is resolved against a database. Planners read it; nothing here knows the engine.

use std::fmt;

/// One parsed statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// `SELECT ...`
    Select(Box<SelectStatement>),
    /// `SHOW DATABASES`
    ShowDatabases,
    /// `SHOW RETENTION POLICIES [ON db]`
    ShowRetentionPolicies {
        /// `ON db`.
        on: Option<String>,
    },
    /// `SHOW MEASUREMENTS [ON db] [WITH MEASUREMENT =|=~ ...] [WHERE ...] [LIMIT n] [OFFSET n]`
    ShowMeasurements(ShowMeasurements),
    /// `SHOW TAG KEYS [ON db] [FROM ...] [WHERE ...] [LIMIT n] [OFFSET n]`
    ShowTagKeys(ShowCommon),
    /// `SHOW TAG VALUES [ON db] [FROM ...] WITH KEY ... [WHERE ...] [LIMIT n] [OFFSET n]`
    ShowTagValues {
        /// `ON`, `FROM`, `WHERE`, `LIMIT`, `OFFSET`.
        common: ShowCommon,
        /// `WITH KEY ...`.
        key: TagKeyMatch,
    },
    /// `SHOW FIELD KEYS [ON db] [FROM ...] [LIMIT n] [OFFSET n]`
    ShowFieldKeys(ShowCommon),
    /// `SHOW SERIES [ON db] [FROM ...] [WHERE ...] [LIMIT n] [OFFSET n]`
    ShowSeries(ShowCommon),
    /// `SHOW QUERIES`: the statements running now.
    ShowQueries,
    /// `KILL QUERY <qid> [ON "<host>"]`: stops a running statement.
    KillQuery {
        /// Its id, as `SHOW QUERIES` lists it.
        id: u64,
        /// `ON host` (chingest is one node: any host is this one).
        host: Option<String>,
    },
    /// `SHOW DIAGNOSTICS`
    ShowDiagnostics,
    /// `SHOW STATS`
    ShowStats,
    /// `CREATE DATABASE name [WITH DURATION d ...]`
    CreateDatabase {
        /// The database.
        name: String,
        /// `WITH DURATION`: retention in seconds (`Some(0)` = `INF`).
        duration_secs: Option<u64>,
        /// `WITH REPLICATION n` (chingest accepts 1 only).
        replication: Option<u32>,
        /// `WITH SHARD DURATION d`, nanoseconds (chingest has no shard
        /// groups: kept to print the statement back as InfluxDB does).
        shard_duration_ns: Option<i64>,
        /// `WITH NAME rp` (chingest accepts `autogen` only).
        policy: Option<String>,
    },
    /// `DROP DATABASE name`
    DropDatabase {
        /// The database.
        name: String,
    },
    /// `DROP MEASUREMENT name` (of the request's `db`)
    DropMeasurement {
        /// The measurement.
        name: String,
    },
    /// `DELETE [FROM m, /re/, ...] [WHERE ...]` (of the request's `db`): the points of the
    /// series the tag condition matches, inside its time range.
    Delete(SeriesDeletion),
    /// `DROP SERIES [FROM m, /re/, ...] [WHERE ...]` (of the request's `db`): every point of
    /// the series the tag condition matches, and the series.
    DropSeries(SeriesDeletion),
    /// `CREATE USER`, `DROP USER`, `SET PASSWORD`, `GRANT`, `REVOKE`, `SHOW USERS`,
    /// `SHOW GRANTS`: user management, admin only.
    User(UserStatement),
    /// `CREATE`, `ALTER`, `DROP RETENTION POLICY`.
    RetentionPolicy(RpStatement),
    /// `CREATE CONTINUOUS QUERY`, `DROP CONTINUOUS QUERY`, `SHOW CONTINUOUS QUERIES`.
    ContinuousQuery(CqStatement),
    /// A statement InfluxDB has and chingest does not implement
    /// (`CREATE CONTINUOUS QUERY`, `GRANT`, ...): answered with an error naming it.
    Unsupported {
        /// What it is, as InfluxQL names it (e.g. `CREATE CONTINUOUS QUERY`).
        what: String,
        /// The database it names with its first `ON`, if any (what InfluxDB
        /// authorizes some of these statements against).
        on: Option<String>,
    },
}

/// A retention-policy statement (`SHOW RETENTION POLICIES` is
/// [`Statement::ShowRetentionPolicies`]).
#[derive(Debug, Clone, PartialEq)]
pub enum RpStatement {
    /// `CREATE RETENTION POLICY <rp> ON <db> DURATION <d> REPLICATION <n> [SHARD DURATION <d>]
    /// [DEFAULT]`
    Create {
        /// The policy.
        name: String,
        /// Its database.
        on: String,
        /// How long points are kept, seconds (0 = `INF`).
        duration_secs: u64,
        /// `REPLICATION n` (chingest accepts 1).
        replication: u32,
        /// `SHARD DURATION`, ns.
        shard_duration_ns: Option<i64>,
        /// `DEFAULT`.
        default: bool,
    },
    /// `ALTER RETENTION POLICY <rp> ON <db> [DURATION d] [REPLICATION n] [SHARD DURATION d]
    /// [DEFAULT]` (at least one).
    Alter {
        /// The policy.
        name: String,
        /// Its database.
        on: String,
        /// `DURATION`, seconds (0 = `INF`).
        duration_secs: Option<u64>,
        /// `REPLICATION`.
        replication: Option<u32>,
        /// `SHARD DURATION`, ns.
        shard_duration_ns: Option<i64>,
        /// `DEFAULT`.
        default: bool,
    },
    /// `DROP RETENTION POLICY <rp> ON <db>`
    Drop {
        /// The policy.
        name: String,
        /// Its database.
        on: String,
    },
}

/// A continuous-query statement.
#[derive(Debug, Clone, PartialEq)]
pub enum CqStatement {
    /// `CREATE CONTINUOUS QUERY …`
    Create(ContinuousQuery),
    /// `DROP CONTINUOUS QUERY <name> ON <db>`
    Drop {
        /// The query's name.
        name: String,
        /// Its database.
        on: String,
    },
    /// `SHOW CONTINUOUS QUERIES`
    Show,
}

/// `CREATE CONTINUOUS QUERY <name> ON <db> [RESAMPLE [EVERY <d>] [FOR <d>]] BEGIN <select>
/// END`: the `SELECT` has `INTO`, and `GROUP BY time(...)` when it aggregates.
#[derive(Debug, Clone, PartialEq)]
pub struct ContinuousQuery {
    /// Its name.
    pub name: String,
    /// The database it belongs to (and the default of its sources and target).
    pub database: String,
    /// `RESAMPLE EVERY`, ns.
    pub every_ns: Option<i64>,
    /// `RESAMPLE FOR`, ns.
    pub for_ns: Option<i64>,
    /// The query.
    pub select: Box<SelectStatement>,
}

/// A user-management statement. Passwords are [`Password`]s: neither `Display` nor `Debug`
/// prints them (`[REDACTED]`, as InfluxDB prints them in logs and `SHOW QUERIES`).
#[derive(Debug, Clone, PartialEq)]
pub enum UserStatement {
    /// `CREATE USER <name> WITH PASSWORD '<password>' [WITH ALL PRIVILEGES]`
    Create {
        /// The user.
        name: String,
        /// The password.
        password: Password,
        /// `WITH ALL PRIVILEGES`: an admin.
        admin: bool,
    },
    /// `DROP USER <name>`
    Drop {
        /// The user.
        name: String,
    },
    /// `SET PASSWORD FOR <name> = '<password>'`
    SetPassword {
        /// The user.
        name: String,
        /// The new password.
        password: Password,
    },
    /// `GRANT READ|WRITE|ALL [PRIVILEGES] ON <db> TO <user>`
    Grant {
        /// What.
        privilege: Privilege,
        /// The database.
        on: String,
        /// The user.
        user: String,
    },
    /// `GRANT ALL [PRIVILEGES] TO <user>`: makes the user an admin.
    GrantAdmin {
        /// The user.
        user: String,
    },
    /// `REVOKE READ|WRITE|ALL [PRIVILEGES] ON <db> FROM <user>`
    Revoke {
        /// What.
        privilege: Privilege,
        /// The database.
        on: String,
        /// The user.
        user: String,
    },
    /// `REVOKE ALL [PRIVILEGES] FROM <user>`: takes admin away.
    RevokeAdmin {
        /// The user.
        user: String,
    },
    /// `SHOW USERS`
    ShowUsers,
    /// `SHOW GRANTS FOR <user>`
    ShowGrants {
        /// The user.
        user: String,
    },
}

impl UserStatement {
    /// Whether the statement changes users or privileges (`SHOW …` does not).
    pub fn changes_users(&self) -> bool {
        !matches!(
            self,
            UserStatement::ShowUsers | UserStatement::ShowGrants { .. }
        )
    }
}

/// A privilege on one database, as InfluxDB 1.x keeps it: `ALL` is `READ` and `WRITE`, and
/// revoking one of them from `ALL` leaves the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Privilege {
    /// `NO PRIVILEGES` (what a revoke may leave).
    None,
    /// `READ`.
    Read,
    /// `WRITE`.
    Write,
    /// `ALL [PRIVILEGES]`.
    All,
}

impl Privilege {
    fn bits(self) -> u8 {
        match self {
            Privilege::None => 0,
            Privilege::Read => 1,
            Privilege::Write => 2,
            Privilege::All => 3,
        }
    }
    fn from_bits(bits: u8) -> Privilege {
        match bits & 3 {
            0 => Privilege::None,
            1 => Privilege::Read,
            2 => Privilege::Write,
            _ => Privilege::All,
        }
    }
    /// What is left of `self` after revoking `revoked` (InfluxDB's bit clear).
    pub fn without(self, revoked: Privilege) -> Privilege {
        Privilege::from_bits(self.bits() & !revoked.bits())
    }
    /// Whether it allows reading.
    pub fn reads(self) -> bool {
        self.bits() & 1 != 0
    }
    /// Whether it allows writing.
    pub fn writes(self) -> bool {
        self.bits() & 2 != 0
    }
    /// `NO PRIVILEGES`, `READ`, `WRITE`, `ALL PRIVILEGES`: as `SHOW GRANTS` and the
    /// statements print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Privilege::None => "NO PRIVILEGES",
            Privilege::Read => "READ",
            Privilege::Write => "WRITE",
            Privilege::All => "ALL PRIVILEGES",
        }
    }
    /// The inverse of [`as_str`](Self::as_str).
    pub fn parse(s: &str) -> Option<Privilege> {
        [
            Privilege::None,
            Privilege::Read,
            Privilege::Write,
            Privilege::All,
        ]
        .into_iter()
        .find(|p| p.as_str() == s)
    }
}

/// A password in a statement: never printed, by `Debug` either (statements are logged).
#[derive(Clone, PartialEq)]
pub struct Password(pub String);

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[REDACTED]")
    }
}

/// `FROM` and `WHERE` of `DELETE` and `DROP SERIES` (at least one of them is present).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SeriesDeletion {
    /// `FROM m, /re/, ...`: every measurement when empty.
    pub from: Vec<MeasurementName>,
    /// `WHERE ...`: tag conditions (and, for `DELETE`, a time range).
    pub condition: Option<Expr>,
}

/// `ON`, `FROM`, `WHERE`, `LIMIT` and `OFFSET` of `SHOW` statements.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShowCommon {
    /// `ON db`.
    pub on: Option<String>,
    /// `FROM m, /re/, ...`.
    pub from: Vec<MeasurementName>,
    /// `WHERE ...`.
    pub condition: Option<Expr>,
    /// `LIMIT n`.
    pub limit: Option<u64>,
    /// `OFFSET n`.
    pub offset: Option<u64>,
}

/// `SHOW MEASUREMENTS`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShowMeasurements {
    /// `ON db`.
    pub on: Option<String>,
    /// `WITH MEASUREMENT = m` or `=~ /re/`.
    pub with_measurement: Option<NameMatch>,
    /// `WHERE ...`.
    pub condition: Option<Expr>,
    /// `LIMIT n`.
    pub limit: Option<u64>,
    /// `OFFSET n`.
    pub offset: Option<u64>,
}

/// `WITH KEY ...` of `SHOW TAG VALUES`.
#[derive(Debug, Clone, PartialEq)]
pub enum TagKeyMatch {
    /// `= k`
    Eq(String),
    /// `!= k`
    NotEq(String),
    /// `IN (k, ...)`
    In(Vec<String>),
    /// `=~ /re/`
    Regex(Regex),
    /// `!~ /re/`
    NotRegex(Regex),
}

/// A name or a regex a name must match.
#[derive(Debug, Clone, PartialEq)]
pub enum NameMatch {
    /// An exact name.
    Name(String),
    /// `/re/`.
    Regex(Regex),
}

/// A measurement as written in `FROM`: `m`, `"db"."rp"."m"`, `db..m`, `/re/`.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasurementName {
    /// The database, when qualified.
    pub database: Option<String>,
    /// The retention policy, when qualified (chingest has one per database).
    pub retention_policy: Option<String>,
    /// The measurement or a regex over measurement names.
    pub name: NameMatch,
}

/// A regular expression literal (`/.../`), as written (unescaped `\/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Regex(pub String);

/// A source of a `SELECT`.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A measurement (or a regex over measurements).
    Measurement(MeasurementName),
    /// `( SELECT ... )`.
    Subquery(Box<SelectStatement>),
}

/// `SELECT fields [INTO ...] FROM sources [WHERE cond] [GROUP BY dims] [fill(...)]
/// [ORDER BY time [ASC|DESC]] [LIMIT n] [OFFSET n] [SLIMIT n] [SOFFSET n] [tz('...')]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectStatement {
    /// The selected expressions, in order.
    pub fields: Vec<Field>,
    /// `INTO target` (parsed so it can be refused by name).
    pub into: Option<MeasurementName>,
    /// `FROM ...`.
    pub sources: Vec<Source>,
    /// `WHERE ...`.
    pub condition: Option<Expr>,
    /// `GROUP BY ...`.
    pub dimensions: Vec<Dimension>,
    /// `fill(...)`; `None` when absent (InfluxDB's default is `fill(null)`).
    pub fill: Option<Fill>,
    /// `ORDER BY time DESC`.
    pub order_desc: bool,
    /// `LIMIT n` (points per series).
    pub limit: Option<u64>,
    /// `OFFSET n`.
    pub offset: Option<u64>,
    /// `SLIMIT n` (series).
    pub slimit: Option<u64>,
    /// `SOFFSET n`.
    pub soffset: Option<u64>,
    /// `tz('Area/City')`.
    pub timezone: Option<String>,
}

/// One selected expression and its alias.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The expression.
    pub expr: Expr,
    /// `AS alias`.
    pub alias: Option<String>,
}

/// A `GROUP BY` dimension.
#[derive(Debug, Clone, PartialEq)]
pub enum Dimension {
    /// `time(interval[, offset])`.
    Time {
        /// The interval, in nanoseconds.
        interval: Duration,
        /// The offset, in nanoseconds (may be negative).
        offset: Option<Duration>,
    },
    /// A tag key.
    Tag(String),
    /// `/re/` over tag keys.
    Regex(Regex),
    /// `*`: every tag.
    Wildcard,
}

/// `fill(...)`.
#[derive(Debug, Clone, PartialEq)]
pub enum Fill {
    /// `fill(null)`: empty intervals are shown with null values.
    Null,
    /// `fill(none)`: empty intervals are left out.
    None,
    /// `fill(previous)`.
    Previous,
    /// `fill(linear)`.
    Linear,
    /// `fill(<number>)`.
    Number(Literal),
}

/// A duration in nanoseconds (`10s`, `1h30m`, `-5m` as an offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub i64);

/// The type a `::` cast or a wildcard restricts a name to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    /// `::float`
    Float,
    /// `::integer`
    Integer,
    /// `::unsigned`
    Unsigned,
    /// `::string`
    String,
    /// `::boolean`
    Boolean,
    /// `::field`: any field.
    Field,
    /// `::tag`: a tag.
    Tag,
}

/// A literal value.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// An integer (`5`, `-3`).
    Integer(i64),
    /// An unsigned integer too large for `i64`.
    Unsigned(u64),
    /// A float (`1.5`).
    Float(f64),
    /// A single-quoted string (unescaped). Compared with `time`, it is a time.
    String(String),
    /// `true` / `false`.
    Boolean(bool),
    /// A duration literal (`5m`), in nanoseconds.
    Duration(Duration),
    /// A regex literal.
    Regex(Regex),
}

/// An expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A name (field, tag or `time`), with an optional `::type` cast.
    VarRef {
        /// The name, unquoted.
        name: String,
        /// `::type`.
        data_type: Option<DataType>,
    },
    /// `*` or `*::field` / `*::tag`.
    Wildcard(Option<DataType>),
    /// A literal.
    Literal(Literal),
    /// `name(args...)`, the name lower-cased (`now()`, `mean(x)`, `percentile(x, 90)`).
    Call {
        /// Lower-cased function name.
        name: String,
        /// Arguments.
        args: Vec<Expr>,
    },
    /// `lhs op rhs`.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// Left side.
        lhs: Box<Expr>,
        /// Right side.
        rhs: Box<Expr>,
    },
    /// `( expr )`, kept so output column names can be rebuilt as written.
    Paren(Box<Expr>),
}

/// Binary operators, lowest precedence first: `OR`; `AND`; comparisons;
/// `+ - | ^`; `* / % &`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `OR`
    Or,
    /// `AND`
    And,
    /// `=`
    Eq,
    /// `!=` or `<>`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
    /// `=~`
    EqRegex,
    /// `!~`
    NotEqRegex,
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
}

impl fmt::Display for BinaryOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BinaryOp::Or => "OR",
            BinaryOp::And => "AND",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::EqRegex => "=~",
            BinaryOp::NotEqRegex => "!~",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
            BinaryOp::BitAnd => "&",
            BinaryOp::BitOr => "|",
            BinaryOp::BitXor => "^",
        })
    }
}
