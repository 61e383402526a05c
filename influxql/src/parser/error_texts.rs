//! Error texts checked against a real InfluxDB 1.6.7 (`influxd`, Debian's
//! `influxdb` package): each query was sent to its `/query` endpoint
//! (`curl -G localhost:8086/query --data-urlencode "q=..."`) and the answer's
//! `error` recorded, without the `error parsing query: ` prefix.
//! `true` marks statement errors (`results[0].error`, HTTP 200). `ACCEPTED`
//! are queries influxd parsed (some then failed for want of data or users).

use std::collections::HashMap;

use crate::parse_query;

const VERIFIED: &[(&str, bool, &str)] = &[
    (
        r#"SELECT FROM x"#,
        false,
        r#"found FROM, expected identifier, string, number, bool at line 1, char 8"#,
    ),
    (
        r#"SELECT mean(x)"#,
        false,
        r#"found EOF, expected FROM at line 1, char 15"#,
    ),
    (
        r#"SELECT"#,
        false,
        r#"found EOF, expected identifier, string, number, bool at line 1, char 8"#,
    ),
    (
        r#"FOO"#,
        false,
        r#"found FOO, expected SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, ALTER, SET, KILL at line 1, char 1"#,
    ),
    (
        r#"SHOW"#,
        false,
        r#"found EOF, expected CONTINUOUS, DATABASES, DIAGNOSTICS, FIELD, GRANTS, MEASUREMENT, MEASUREMENTS, QUERIES, RETENTION, SERIES, SHARD, SHARDS, STATS, SUBSCRIPTIONS, TAG, USERS at line 1, char 6"#,
    ),
    (
        r#"SHOW FOO"#,
        false,
        r#"found FOO, expected CONTINUOUS, DATABASES, DIAGNOSTICS, FIELD, GRANTS, MEASUREMENT, MEASUREMENTS, QUERIES, RETENTION, SERIES, SHARD, SHARDS, STATS, SUBSCRIPTIONS, TAG, USERS at line 1, char 6"#,
    ),
    (
        r#"CREATE FOO"#,
        false,
        r#"found FOO, expected CONTINUOUS, DATABASE, USER, RETENTION, SUBSCRIPTION at line 1, char 8"#,
    ),
    (
        r#"DROP FOO"#,
        false,
        r#"found FOO, expected CONTINUOUS, DATABASE, MEASUREMENT, RETENTION, SERIES, SHARD, SUBSCRIPTION, USER at line 1, char 6"#,
    ),
    (
        r#"SHOW TAG"#,
        false,
        r#"found EOF, expected KEY, KEYS, VALUES at line 1, char 10"#,
    ),
    (
        r#"SHOW FIELD"#,
        false,
        r#"found EOF, expected KEY, KEYS at line 1, char 12"#,
    ),
    (
        r#"SHOW MEASUREMENT"#,
        false,
        r#"found EOF, expected EXACT, CARDINALITY at line 1, char 18"#,
    ),
    (
        r#"SHOW RETENTION"#,
        false,
        r#"found EOF, expected POLICIES at line 1, char 16"#,
    ),
    (
        r#"SHOW TAG VALUES"#,
        false,
        r#"found EOF, expected WITH at line 1, char 17"#,
    ),
    (
        r#"SHOW TAG VALUES WITH KEY"#,
        false,
        r#"found EOF, expected IN, =, =~ at line 1, char 26"#,
    ),
    (
        r#"SHOW TAG VALUES WITH KEY host"#,
        false,
        r#"found host, expected IN, =, =~ at line 1, char 26"#,
    ),
    (
        r#"SHOW TAG VALUES WITH KEY =~ host"#,
        false,
        r#"found host, expected regex at line 1, char 29"#,
    ),
    (
        r#"SHOW TAG VALUES WITH KEY IN host"#,
        false,
        r#"found host, expected ( at line 1, char 29"#,
    ),
    (
        r#"SHOW TAG VALUES WITH KEY IN (host"#,
        false,
        r#"found EOF, expected ) at line 1, char 35"#,
    ),
    (
        r#"SHOW MEASUREMENTS WITH x"#,
        false,
        r#"found x, expected MEASUREMENT at line 1, char 24"#,
    ),
    (
        r#"SHOW MEASUREMENTS WITH MEASUREMENT x"#,
        false,
        r#"found x, expected =, =~ at line 1, char 36"#,
    ),
    (
        r#"SHOW MEASUREMENTS ON"#,
        false,
        r#"found EOF, expected identifier at line 1, char 22"#,
    ),
    (
        r#"SHOW MEASUREMENTS LIMIT x"#,
        false,
        r#"found x, expected integer at line 1, char 25"#,
    ),
    (
        r#"SHOW MEASUREMENTS FOO"#,
        false,
        r#"found FOO, expected ; at line 1, char 19"#,
    ),
    (
        r#"SHOW DATABASES x"#,
        false,
        r#"found x, expected ; at line 1, char 16"#,
    ),
    (
        r#"SHOW SERIES FROM"#,
        false,
        r#"found EOF, expected identifier at line 1, char 18"#,
    ),
    (
        r#"CREATE DATABASE"#,
        false,
        r#"found EOF, expected identifier at line 1, char 17"#,
    ),
    (
        r#"CREATE DATABASE x WITH"#,
        false,
        r#"found EOF, expected DURATION, NAME, REPLICATION, SHARD at line 1, char 24"#,
    ),
    (
        r#"CREATE DATABASE x WITH FOO"#,
        false,
        r#"found FOO, expected DURATION, NAME, REPLICATION, SHARD at line 1, char 24"#,
    ),
    (
        r#"CREATE DATABASE x WITH DURATION"#,
        false,
        r#"found EOF, expected duration at line 1, char 33"#,
    ),
    (
        r#"CREATE DATABASE x WITH DURATION 1x"#,
        false,
        r#"invalid duration at line 1, char 33"#,
    ),
    (
        r#"CREATE DATABASE x WITH DURATION 1h REPLICATION 0"#,
        false,
        r#"invalid value 0: must be 1 <= n <= 2147483647 at line 1, char 48"#,
    ),
    (
        r#"CREATE DATABASE x WITH DURATION 1h REPLICATION x"#,
        false,
        r#"found x, expected integer at line 1, char 48"#,
    ),
    (
        r#"CREATE DATABASE x WITH SHARD 1h"#,
        false,
        r#"found 1h, expected DURATION at line 1, char 30"#,
    ),
    (
        r#"DROP DATABASE"#,
        false,
        r#"found EOF, expected identifier at line 1, char 15"#,
    ),
    (
        r#"SELECT * FROM x WHERE"#,
        false,
        r#"found EOF, expected identifier, string, number, bool at line 1, char 23"#,
    ),
    (
        r#"SELECT * FROM x WHERE a ="#,
        false,
        r#"found EOF, expected identifier, string, number, bool at line 1, char 26"#,
    ),
    (
        r#"SELECT * FROM x WHERE a = 'b"#,
        false,
        r#"found b, expected identifier, string, number, bool at line 1, char 26"#,
    ),
    (
        r#"SELECT * FROM x WHERE a =~ 'b'"#,
        false,
        r#"found b, expected regex at line 1, char 27"#,
    ),
    (
        r#"SELECT * FROM x WHERE a =~ /b"#,
        false,
        r#"bad regex:  at line 1, char 27"#,
    ),
    (
        r#"SELECT * FROM x WHERE a = 1x"#,
        false,
        r#"invalid duration"#,
    ),
    (
        r#"SELECT * FROM x WHERE time > now() - 1x"#,
        false,
        r#"invalid duration"#,
    ),
    (
        r#"SELECT * FROM x WHERE a = 'b\q'"#,
        false,
        r#"found \q, expected identifier, string, number, bool at line 1, char 30"#,
    ),
    (
        r#"SELECT * FROM x WHERE a =~ /(/"#,
        false,
        r#"error parsing regexp: missing closing ): `(` at line 1, char 27"#,
    ),
    (
        r#"SELECT * FROM x WHERE a =~ /*a/"#,
        false,
        r#"error parsing regexp: missing argument to repetition operator: `*` at line 1, char 27"#,
    ),
    (
        r#"SELECT * FROM x WHERE a =~ /x[a-/"#,
        false,
        r#"error parsing regexp: missing closing ]: `[a-` at line 1, char 27"#,
    ),
    (
        r#"SELECT * FROM x WHERE a =~ /a)/"#,
        false,
        r#"error parsing regexp: unexpected ): `a)` at line 1, char 27"#,
    ),
    (
        r#"SELECT * FROM x GROUP time(1m)"#,
        false,
        r#"found time, expected BY at line 1, char 23"#,
    ),
    (
        r#"SELECT * FROM x GROUP BY"#,
        false,
        r#"found EOF, expected identifier, string, number, bool at line 1, char 26"#,
    ),
    (
        r#"SELECT * FROM x ORDER BY value"#,
        false,
        r#"only ORDER BY time supported at this time"#,
    ),
    (
        r#"SELECT * FROM x ORDER BY TIME"#,
        false,
        r#"only ORDER BY time supported at this time"#,
    ),
    (
        r#"SELECT * FROM x ORDER BY time, a"#,
        false,
        r#"only ORDER BY time supported at this time"#,
    ),
    (
        r#"SELECT * FROM x ORDER BY 1"#,
        false,
        r#"found 1, expected identifier, ASC, DESC at line 1, char 26"#,
    ),
    (
        r#"SELECT * FROM x ORDER time"#,
        false,
        r#"found time, expected BY at line 1, char 23"#,
    ),
    (
        r#"SELECT * FROM x LIMIT"#,
        false,
        r#"found EOF, expected integer at line 1, char 23"#,
    ),
    (
        r#"SELECT * FROM x LIMIT -1"#,
        false,
        r#"found -, expected integer at line 1, char 23"#,
    ),
    (
        r#"SELECT * FROM x LIMIT 1.5"#,
        false,
        r#"found 1.5, expected integer at line 1, char 23"#,
    ),
    (
        r#"SELECT * FROM x OFFSET x"#,
        false,
        r#"found x, expected integer at line 1, char 24"#,
    ),
    (
        r#"SELECT * FROM x SLIMIT x"#,
        false,
        r#"found x, expected integer at line 1, char 24"#,
    ),
    (
        r#"SELECT * FROM x fill"#,
        false,
        r#"fill must be a function call"#,
    ),
    (
        r#"SELECT * FROM x fill()"#,
        false,
        r#"fill requires an argument, e.g.: 0, null, none, previous, linear"#,
    ),
    (
        r#"SELECT * FROM x fill(foo)"#,
        false,
        r#"expected number argument in fill()"#,
    ),
    (
        r#"SELECT * FROM x fill(1, 2)"#,
        false,
        r#"fill requires an argument, e.g.: 0, null, none, previous, linear"#,
    ),
    (
        r#"SELECT * FROM x tz"#,
        false,
        r#"tz must be a function call"#,
    ),
    (
        r#"SELECT * FROM x tz(1)"#,
        false,
        r#"expected string argument in tz()"#,
    ),
    (
        r#"SELECT * FROM x tz('a', 'b')"#,
        false,
        r#"tz requires exactly one argument"#,
    ),
    (
        r#"SELECT * FROM x LIMIT 1 extra"#,
        false,
        r#"found extra, expected ; at line 1, char 25"#,
    ),
    (
        r#"SELECT a = b FROM x"#,
        false,
        r#"invalid operator = in SELECT clause at line 1, char 8; operator is intended for WHERE clause"#,
    ),
    (
        r#"SELECT a AND b FROM x"#,
        false,
        r#"invalid operator AND in SELECT clause at line 1, char 8; operator is intended for WHERE clause"#,
    ),
    (
        r#"SELECT mean(a) > 1 FROM x"#,
        false,
        r#"invalid operator > in SELECT clause at line 1, char 8; operator is intended for WHERE clause"#,
    ),
    (
        r#"SELECT a FROM x; garbage"#,
        false,
        r#"found garbage, expected SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, ALTER, SET, KILL at line 1, char 18"#,
    ),
    (
        r#"SELECT a FROM x garbage"#,
        false,
        r#"found garbage, expected ; at line 1, char 17"#,
    ),
    (
        r#"SELECT a b FROM x"#,
        false,
        r#"found b, expected FROM at line 1, char 10"#,
    ),
    (
        r#"SELECT a, FROM x"#,
        false,
        r#"found FROM, expected identifier, string, number, bool at line 1, char 11"#,
    ),
    (
        r#"SELECT mean(a FROM x"#,
        false,
        r#"found FROM, expected ) at line 1, char 15"#,
    ),
    (
        r#"SELECT mean(a,) FROM x"#,
        false,
        r#"found ), expected identifier, string, number, bool at line 1, char 15"#,
    ),
    (
        r#"SELECT a::foo FROM x"#,
        false,
        r#"found foo, expected float, integer, unsigned, string, boolean, field, tag at line 1, char 11"#,
    ),
    (
        r#"SELECT *::foo FROM x"#,
        false,
        r#"found foo, expected field, tag at line 1, char 11"#,
    ),
    (
        r#"SELECT a FROM a.b.c.d"#,
        false,
        r#"too many segments in "a"."b"."c".d at line 1, char 1"#,
    ),
    (
        r#"SELECT a FROM 12"#,
        false,
        r#"found 12, expected identifier at line 1, char 15"#,
    ),
    (
        r#"SELECT 1000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000 FROM x"#,
        false,
        r#"unable to parse integer at line 1, char 8"#,
    ),
    (
        r#"SELECT 1.5e FROM x"#,
        false,
        r#"found e, expected FROM at line 1, char 11"#,
    ),
    (
        r#"SELECT -'a' FROM x"#,
        false,
        r#"found a, expected identifier, number, duration, ( at line 1, char 8"#,
    ),
    (
        r#"SELECT - - 1 FROM x"#,
        false,
        r#"found -, expected identifier, number, duration, ( at line 1, char 10"#,
    ),
    (
        r#"SELECT -18446744073709551615 FROM x"#,
        false,
        r#"constant -18446744073709551615 underflows int64"#,
    ),
    (r#"SELECT $x FROM m"#, false, r#"missing parameter: x"#),
    (
        r#"SELECT a FROM m WHERE b = $"#,
        false,
        r#"empty bound parameter"#,
    ),
    (
        r#"SELECT DISTINCT FROM m"#,
        false,
        r#"found FROM, expected identifier at line 1, char 17"#,
    ),
    (
        r#"SELECT DISTINCT(x FROM m"#,
        false,
        r#"found FROM, expected ) at line 1, char 19"#,
    ),
    (
        r#"SELECT a FROM (SHOW DATABASES)"#,
        false,
        r#"found SHOW, expected SELECT at line 1, char 16"#,
    ),
    (
        r#"SELECT a FROM (SELECT b FROM c"#,
        false,
        r#"found EOF, expected ) at line 1, char 32"#,
    ),
    (
        r#"SELECT a AS FROM x"#,
        false,
        r#"found FROM, expected identifier at line 1, char 13"#,
    ),
    (
        r#"SELECT a FROM /x"#,
        false,
        r#"bad regex:  at line 1, char 14"#,
    ),
    (
        r#"SELECT a FROM m WHERE a = "b"#,
        false,
        r#"found b, expected identifier, string, number, bool at line 1, char 26"#,
    ),
    (
        r#"SELECT a FROM m WHERE a = b ! c"#,
        false,
        r#"found !, expected ; at line 1, char 29"#,
    ),
    (
        r#"SELECT a FROM m WHERE a = b # c"#,
        false,
        r#"found #, expected ; at line 1, char 29"#,
    ),
    (
        r#"SELECT a FROM m WHERE a = b /* unterminated"#,
        false,
        r#"found ILLEGAL, expected ; at line 1, char 29"#,
    ),
    (
        r#"SELECT a FROM m WHERE a = 1 GROUP BY time(1m), 1"#,
        true,
        r#"only time and tag dimensions allowed"#,
    ),
    (
        r#"DELETE"#,
        false,
        r#"found EOF, expected FROM, WHERE at line 1, char 8"#,
    ),
    (
        r#"DELETE x"#,
        false,
        r#"found x, expected FROM, WHERE at line 1, char 8"#,
    ),
    (
        r#"DROP SERIES"#,
        false,
        r#"found EOF, expected FROM, WHERE at line 1, char 13"#,
    ),
    (
        r#"SHOW GRANTS"#,
        false,
        r#"found EOF, expected FOR at line 1, char 13"#,
    ),
    (
        r#"EXPLAIN SHOW DATABASES"#,
        false,
        r#"found SHOW, expected SELECT at line 1, char 9"#,
    ),
    (
        r#"KILL QUERY x"#,
        false,
        r#"found x, expected integer at line 1, char 12"#,
    ),
    (
        r#"ALTER x"#,
        false,
        r#"found x, expected RETENTION at line 1, char 7"#,
    ),
    (
        r#"SET x"#,
        false,
        r#"found x, expected PASSWORD at line 1, char 5"#,
    ),
    (
        r#"SHOW TAG KEYS FROM"#,
        false,
        r#"found EOF, expected identifier at line 1, char 20"#,
    ),
    (
        r#"SHOW FIELD KEYS ON"#,
        false,
        r#"found EOF, expected identifier at line 1, char 20"#,
    ),
    (
        r#"SHOW STATS FOR"#,
        false,
        r#"found EOF, expected string at line 1, char 16"#,
    ),
    (
        r#"SHOW STATS FOR x"#,
        false,
        r#"found x, expected string at line 1, char 16"#,
    ),
    (
        r#"SELECT * FROM x WHERE time > '2020-01-01' AND"#,
        false,
        r#"found EOF, expected identifier, string, number, bool at line 1, char 47"#,
    ),
    (
        r#"SELECT value
FROM cpu
WHERE x = "#,
        false,
        r#"found EOF, expected identifier, string, number, bool at line 3, char 10"#,
    ),
    (
        r#"SELECT "a"#,
        false,
        r#"found a, expected identifier, string, number, bool at line 1, char 7"#,
    ),
    (
        r#"SELECT 'a"#,
        false,
        r#"found a, expected identifier, string, number, bool at line 1, char 7"#,
    ),
    (
        r#"SELECT "a\q" FROM x"#,
        false,
        r#"found \q, expected identifier, string, number, bool at line 1, char 11"#,
    ),
    (
        r#"SELECT * FROM x INTO y"#,
        false,
        r#"found INTO, expected ; at line 1, char 17"#,
    ),
    (
        r#"SELECT * INTO FROM x"#,
        false,
        r#"found FROM, expected identifier at line 1, char 15"#,
    ),
    (
        r#"SELECT top(x, host, 3) FROM m ORDER BY time DESC garbage"#,
        false,
        r#"found garbage, expected ; at line 1, char 50"#,
    ),
    (
        r#"SELECT * FROM m GROUP BY *, /x/, host fill(0) ORDER BY time DESC LIMIT 1 OFFSET 1 SLIMIT 1 SOFFSET 1 extra"#,
        false,
        r#"found extra, expected ; at line 1, char 102"#,
    ),
    (
        r#"SELECT * FROM m WHERE time > now() - 1h fill(0) GROUP BY time(1m)"#,
        false,
        r#"found GROUP, expected ; at line 1, char 49"#,
    ),
    (
        r#"SELECT * FROM m LIMIT 1 GROUP BY time(1m)"#,
        false,
        r#"found GROUP, expected ; at line 1, char 25"#,
    ),
    (
        r#"SELECT * FROM m ORDER BY time DESC fill(0)"#,
        false,
        r#"found fill, expected ; at line 1, char 36"#,
    ),
];

#[test]
fn error_texts_match_influxdb_1_6() {
    let mut wrong = Vec::new();
    for (q, statement, want) in VERIFIED {
        match parse_query(q, &HashMap::new()) {
            Ok(_) => wrong.push(format!("{q:?}: parsed, want {want:?}")),
            Err(e) if e.to_string() != *want || e.is_statement_error() != *statement => {
                wrong.push(format!("{q:?}: got {e:?}, want {want:?}"))
            }
            Err(_) => {}
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

const ACCEPTED: &[&str] = &[
    r#"SELECT mean("value") FROM "cpu" WHERE ("host" =~ /^(a|b)$/) AND time >= now() - 6h and time <= now() GROUP BY time(20s), "host" fill(null)"#,
    r#"SELECT non_negative_derivative(mean("bytes_recv"), 1s) *8 FROM "net" WHERE "host" = 'x' AND time >= 1600000000000ms and time <= 1600003600000ms GROUP BY time(1m) fill(none)"#,
    r#"SELECT last("used_percent") AS "used %" FROM "telegraf"."autogen"."mem" WHERE time > now() - 1h GROUP BY time(10s, -5s), * ORDER BY time DESC LIMIT 10 OFFSET 2 SLIMIT 3 SOFFSET 4 tz('Europe/Paris')"#,
    r#"SELECT * FROM db..cpu, /^disk\/io.*/, rp.m, "my db"../net/"#,
    r#"SELECT max(m) FROM (SELECT mean(x) AS m FROM cpu WHERE time > now() - 1h GROUP BY time(1m), host) WHERE time > now() - 1h"#,
    r#"SELECT *::field, "a b"::float, "esc\"q"::tag, percentile(x, 90), top(x, host, 3), a + b * c - d, (a + b) * c, -x, count(*), DISTINCT host, distinct(v) FROM m"#,
    r#"SELECT mean(x) INTO db.rp.:MEASUREMENT FROM /.*/ GROUP BY *"#,
    r#"SELECT x INTO other FROM m"#,
    r#"SHOW MEASUREMENTS ON db WITH MEASUREMENT =~ /cpu.*/ WHERE host = 'a' LIMIT 5 OFFSET 1"#,
    r#"SHOW TAG VALUES ON db FROM cpu, mem WITH KEY IN (host, "dc") WHERE region = 'eu' LIMIT 2"#,
    r#"SHOW TAG VALUES WITH KEY != host"#,
    r#"SHOW TAG VALUES WITH KEY !~ /h.*/"#,
    r#"SHOW TAG KEYS ON db FROM /c.*/ WHERE a = 'b' LIMIT 1 OFFSET 2"#,
    r#"SHOW TAG KEYS SLIMIT 1"#,
    r#"SHOW FIELD KEYS FROM "cpu""#,
    r#"SHOW FIELD KEYS ON db FROM cpu ORDER BY time DESC LIMIT 1"#,
    r#"SHOW SERIES ON db FROM cpu WHERE host = 'a' LIMIT 10"#,
    r#"SHOW SERIES EXACT FROM cpu"#,
    r#"SHOW SERIES CARDINALITY"#,
    r#"SHOW TAG VALUES EXACT CARDINALITY WITH KEY = host"#,
    r#"SHOW MEASUREMENTS ORDER BY time DESC"#,
    r#"SHOW DIAGNOSTICS"#,
    r#"SHOW STATS FOR 'httpd'"#,
    r#"CREATE DATABASE r WITH DURATION 1h30m REPLICATION 1 SHARD DURATION 1h NAME autogen"#,
    r#"SELECT a FROM m WHERE a = true OR b = FALSE"#,
    r#"SELECT a FROM m WHERE time > '2020-01-01T00:00:00Z' AND time < '2020-01-02'"#,
    r#"SELECT a FROM m WHERE a <> 1 AND b != 2 AND c !~ /x/"#,
    r#"SELECT a FROM m ORDER BY ASC"#,
    r#"SELECT a FROM m ORDER BY time"#,
    r#"SELECT a FROM m fill(0)"#,
    r#"SELECT mean(a) FROM m GROUP BY time(1m) fill(-1.5)"#,
    r#"SELECT mean(a) FROM m GROUP BY time(1m) fill(previous) ORDER BY time DESC LIMIT 5 SLIMIT 2 tz('UTC')"#,
    r#"SELECT a /* c */ FROM m"#,
    r#"SELECT a::tag FROM m"#,
    r#"SELECT a & b | c ^ d % 2 FROM m"#,
    r#"SELECT "a"."b" FROM m"#,
    r#"SELECT a FROM "a"."b"."c""#,
    r#"SELECT a FROM m WHERE "host" =~ /^\/var\/log$/"#,
    r#"SELECT count(distinct(host)) FROM m"#,
    r#"SELECT a FROM m WHERE a = -1 AND b = +2 AND c = -1.5 AND d = -(x)"#,
    r#"DELETE FROM cpu WHERE time < now()"#,
    r#"DROP SERIES FROM cpu WHERE host = 'a'"#,
    r#"EXPLAIN ANALYZE SELECT * FROM cpu"#,
    r#"KILL QUERY 12"#,
    r#"SHOW GRANTS FOR u"#,
    r#"SELECT a FROM m; SELECT b FROM n;"#,
];

#[test]
fn what_influxdb_1_6_parses_parses() {
    for q in ACCEPTED {
        if let Err(e) = parse_query(q, &HashMap::new()) {
            panic!("{q:?}: {e}");
        }
    }
}
