//! Which statements send `top`/`bottom` candidates, and the shards' statement for them.

use influxql::ast::Statement;

use super::*;
use crate::influxql::plan;

fn schema() -> MeasurementSchema {
    MeasurementSchema {
        name: "cpu".into(),
        tag_keys: vec!["dc".into(), "host".into()],
        fields: vec![
            ("v".into(), FieldType::Float),
            ("n".into(), FieldType::Integer),
            ("s".into(), FieldType::String),
            ("u".into(), FieldType::UInteger),
        ],
    }
}

fn candidates(q: &str) -> Option<TopCandidates> {
    let Statement::Select(stmt) = influxql::parse_statement(q).unwrap() else {
        panic!("not a SELECT: {q}");
    };
    let schema = schema();
    let shape = plan::check(&stmt).unwrap();
    let filter = crate::influxql::range::split_in(stmt.condition.as_ref(), 0, None).unwrap();
    let target = plan::Target {
        db: "db",
        schema: &schema,
        all: &schema,
        source: None,
    };
    let p = plan::plan(&stmt, shape, target, &filter, 0)
        .unwrap()
        .unwrap();
    top_candidates(&p, &schema, &filter.rest)
}

#[test]
fn a_lone_top_or_bottom_sends_candidates_and_nothing_else_does() {
    for q in [
        "SELECT top(v, 3) FROM cpu",
        "SELECT bottom(n, 2) FROM cpu GROUP BY dc",
        "SELECT top(u, 5), host FROM cpu WHERE time > 0 AND time < 100 GROUP BY time(10ns, 3ns) fill(0)",
        "SELECT top(v, host, 2) FROM cpu WHERE dc = 'a' OR host =~ /x/ GROUP BY *",
        "SELECT bottom(v, dc, host, 1) AS b FROM cpu",
    ] {
        assert!(candidates(q).is_some(), "{q}");
    }
    for q in [
        "SELECT mode(v) FROM cpu",
        "SELECT distinct(v) FROM cpu",
        "SELECT max(v) FROM cpu",
        "SELECT v FROM cpu",
        // Another field shown: a window with its values but none of `v` is still a group.
        "SELECT top(v, 3), n FROM cpu",
        // A field condition is met by merged points only.
        "SELECT top(v, 3) FROM cpu WHERE n > 1",
        "SELECT top(v, 3) FROM cpu WHERE time > 0 AND time < 100 GROUP BY time(10ns) tz('Europe/Paris')",
        "SELECT top(v, 2000000) FROM cpu",
    ] {
        assert!(candidates(q).is_none(), "{q}");
    }
}

#[test]
fn the_shards_rank_merged_points_per_group_and_window() {
    let c = candidates("SELECT bottom(v, 2), host FROM cpu WHERE dc = 'a' GROUP BY time(10ns), dc")
        .unwrap();
    let columns = [
        ("dc".to_string(), ColumnKind::Tag),
        ("host".to_string(), ColumnKind::Tag),
        ("v".to_string(), ColumnKind::Float),
    ];
    let sql = c.sql("t", &columns, (0, 99), &[7, 9], None).unwrap();
    for part in [
        "CAST(argMaxIf(`v`, (`__seq`, `__row`), isNotNull(`v`)) AS Nullable(Float64)) AS __c2",
        "`series_id` NOT IN (7,9)",
        "(`dc` = 'a')",
        "arraySort(x -> (x.1, x.2), groupArray((assumeNotNull(__c2), __t, __sid, __ms, __c0, __c1, __c2)))",
        "__s[2] AS __n",
        "x.1 < __n.1 OR (x.1 = __n.1 AND x.2 <= __n.2)",
        "GROUP BY (__t - (((__t - toInt64(0)) % toInt64(10)) + toInt64(10)) % toInt64(10)), `__g_dc`",
        "__p.7 AS `v` FROM",
    ] {
        assert!(sql.contains(part), "{part} in {sql}");
    }
    // The tag form: each series' best point.
    let c = candidates("SELECT top(v, host, 3) FROM cpu").unwrap();
    let sql = c.sql("t", &columns, (0, 99), &[], Some(&[])).unwrap();
    assert!(sql.contains("__s[1] AS __n"), "{sql}");
    assert!(sql.contains("GROUP BY toInt64(0), __sid"), "{sql}");
    assert!(!sql.contains("NOT IN"), "{sql}");
    // Only the series the shard's index lists as rewritten are grouped by point.
    assert!(!sql.contains("GROUP BY `series_id`, `time`"), "{sql}");
    let sql = c.sql("t", &columns, (0, 99), &[], Some(&[4, 5])).unwrap();
    for part in [
        "CAST(`v` AS Nullable(Float64)) AS __c2 FROM t WHERE 1 AND `time` >= toInt64(0) AND \
         `time` <= toInt64(99) AND `series_id` NOT IN (4,5) UNION ALL",
        "FROM t WHERE 1 AND `time` >= toInt64(0) AND `time` <= toInt64(99) AND \
         `series_id` IN (4,5) GROUP BY `series_id`, `time`",
    ] {
        assert!(sql.contains(part), "{part} in {sql}");
    }
}
