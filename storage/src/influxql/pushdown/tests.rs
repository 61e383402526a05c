//! The partial statements a pushed-down aggregate sends, and which aggregates decompose.

use influxql::ast::Statement;

use super::*;
use crate::influxql::plan;

/// The process's one engine, shared by the tests that run statements in it (chDB binds one
/// data path per process: a second `Engine::open` elsewhere is refused).
pub(super) fn engine() -> &'static engine::Engine {
    static ENGINE: std::sync::OnceLock<(tempfile::TempDir, engine::Engine)> =
        std::sync::OnceLock::new();
    &ENGINE
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let engine = engine::Engine::open(&engine::EngineConfig {
                data_dir: dir.path().join("chdb"),
                connections: 1,
            })
            .unwrap();
            (dir, engine)
        })
        .1
}

/// SplitMix64: a small deterministic generator for the tests that generate data (no seed
/// file to keep).
pub(super) struct Gen(pub(super) u64);

impl Gen {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(super) fn pick<T: Clone>(&mut self, of: &[T]) -> T {
        of[(self.next() % of.len() as u64) as usize].clone()
    }
}

/// `sql`'s answer from [`engine`] in `format`.
pub(super) fn engine_bytes(sql: &str, format: engine::OutputFormat) -> Vec<u8> {
    let mut answer = Vec::new();
    engine()
        .sql_generated(
            engine::Lane::Clients,
            sql,
            format,
            &engine::SqlAccess::Admin,
            &engine::SqlCancel::new(),
            &mut |b| {
                answer.extend_from_slice(b);
                true
            },
        )
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    answer
}

/// `sql`'s answer from [`engine`], as tab-separated text.
pub(super) fn engine_text(sql: &str) -> String {
    String::from_utf8(engine_bytes(sql, engine::OutputFormat::TabSeparated)).unwrap()
}

fn schema() -> MeasurementSchema {
    MeasurementSchema {
        name: "cpu".into(),
        tag_keys: vec!["dc".into(), "host".into()],
        fields: vec![
            ("v".into(), FieldType::Float),
            ("n".into(), FieldType::Integer),
            ("s".into(), FieldType::String),
            ("b".into(), FieldType::Boolean),
            ("u".into(), FieldType::UInteger),
        ],
    }
}

/// `q`'s aggregate over [`schema`] as partial aggregates.
pub(super) fn pushed(q: &str) -> Option<Pushdown> {
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
    decompose(&stmt, &p, &schema, &filter.rest)
}

#[test]
fn decomposable_aggregates_are_pushed_and_the_others_are_not() {
    for q in [
        "SELECT count(v), count(n) FROM cpu",
        "SELECT sum(v), min(v), max(n), first(v), mean(n) FROM cpu GROUP BY dc",
        "SELECT spread(v), last(s) FROM cpu WHERE time > 0 AND time < 100 GROUP BY time(10ns, 3ns), host fill(0)",
        "SELECT last(v) FROM cpu WHERE host = 'a' OR dc =~ /x/ GROUP BY host",
        "SELECT count(b) AS c FROM cpu GROUP BY *",
        // Wildcards as one call per field, a lone selector's point time, `tz()` windows.
        "SELECT mean(*) FROM cpu",
        "SELECT count(*), max(/^[nv]$/) FROM cpu GROUP BY host",
        "SELECT max(v) FROM cpu",
        "SELECT min(u) FROM cpu GROUP BY dc",
        "SELECT count(distinct(v)), count(DISTINCT s), sum(n) FROM cpu GROUP BY host",
        // Every group one series: its shard computes the whole aggregate.
        "SELECT median(v), percentile(n, 90), count(v) FROM cpu GROUP BY *",
        "SELECT percentile(u, 50) FROM cpu GROUP BY dc, host",
        "SELECT count(v) FROM cpu WHERE time > 0 AND time < 100 GROUP BY time(10ns) tz('Europe/Paris')",
        // Transformations run on the node after the aggregates; arithmetic is evaluated there.
        "SELECT derivative(mean(v)) FROM cpu WHERE time > 0 AND time < 100 GROUP BY time(10ns)",
        "SELECT non_negative_derivative(max(n), 1s) * 8 FROM cpu WHERE time > 0 AND time < 100 GROUP BY time(10ns), host",
        "SELECT sum(v) + 1, sum(v) / sum(n), (max(n) - min(n)) * 2.5, count(u) * 2 FROM cpu",
        // Each value's points counted on the shards.
        "SELECT mode(s) FROM cpu GROUP BY dc",
        "SELECT mode(b), count(v) FROM cpu WHERE time > 0 AND time < 100 GROUP BY time(10ns)",
        "SELECT distinct(v) FROM cpu",
        "SELECT distinct(s) FROM cpu WHERE time > 0 AND time < 100 GROUP BY time(10ns), dc",
    ] {
        assert!(pushed(q).is_some(), "{q}");
    }
    for q in [
        "SELECT median(v) FROM cpu",
        "SELECT count(v) FROM cpu WHERE v > 1",
        // Operators and operands whose engine semantics `expression.rs` does not restate.
        "SELECT sum(n) % 2 FROM cpu",
        "SELECT max(u) + 1 FROM cpu",
        "SELECT first(s) / 0 FROM cpu",
        "SELECT last(b) * 2 FROM cpu",
        "SELECT mode(v), first(v) FROM cpu",
        // Sets do not merge per series first, as a selector's partials do.
        "SELECT count(distinct(v)), first(v) FROM cpu",
        "SELECT median(v) FROM cpu GROUP BY host",
        "SELECT median(v) FROM cpu WHERE time > 0 AND time < 100 GROUP BY time(1h), * tz('Asia/Kolkata')",
        "SELECT max(b) FROM cpu",
        "SELECT count(v::integer) FROM cpu",
        // A `tz()` window over more shard intervals than `MAX_ZONE_INTERVALS`.
        "SELECT count(v) FROM cpu WHERE time > 0 AND time < 2000d GROUP BY time(1d) tz('Europe/Paris')",
        "SELECT count(v) FROM cpu WHERE dc = 'a' OR v > 1",
        "SELECT count(v) FROM cpu WHERE nosuch = 'a'",
    ] {
        assert!(pushed(q).is_none(), "{q}");
    }
}

#[test]
fn partials_read_points_and_the_combination_has_the_aggregate_statement_columns() {
    let p = pushed(
        "SELECT count(v), mean(n), max(v) FROM cpu WHERE dc = 'x' AND time >= 5 AND time <= 99 \
         GROUP BY time(10ns, 3ns), host, nosuch",
    )
    .unwrap();
    let sql = p.partial_sql("`__shard_db`.`cpu`", Some("7,8"), None);
    assert!(sql.contains("argMaxIf(__src.`v`, bitOr(bitShiftLeft(__src.`__seq`, 32), toUInt64(__src.`__row`)), isNotNull(__src.`v`)) AS __v0"), "{sql}");
    assert!(sql.contains("WHERE __src.`time` >= toInt64(5) AND __src.`time` <= toInt64(99) AND (`dc` = 'x') AND __src.`series_id` NOT IN (7,8) GROUP BY __src.`series_id`, __src.`time`"), "{sql}");
    assert!(
        sql.contains(
            "(__t - (((__t - toInt64(3)) % toInt64(10)) + toInt64(10)) % toInt64(10)) AS __p0"
        ),
        "{sql}"
    );
    assert!(sql.ends_with("GROUP BY __p0, __p1, __p2"), "{sql}");
    // Whether the write order packs: the `__seq` of the rows read, not a second scan of
    // the whole table's.
    assert!(sql.contains("max(__ms) AS __p"), "{sql}");
    assert!(!sql.contains("FROM `__shard_db`.`cpu`)"), "{sql}");
    let combine = p.combine_sql("P");
    assert!(combine.starts_with("SELECT any(b) AS __iq_t, k0 AS __iq_g0, k1 AS __iq_g1, if(sum(n0) = 0, NULL, toInt64(sum(n0))) AS __iq_c0"), "{combine}");
    assert!(
        combine.ends_with("GROUP BY b, __iq_g0, __iq_g1 ORDER BY __iq_g0, __iq_g1, __iq_t"),
        "{combine}"
    );
    // A selector: each series' partial first, then the group's by time and value.
    let p = pushed("SELECT first(v), last(s) FROM cpu GROUP BY dc").unwrap();
    let sql = p.partial_sql("t", None, None);
    assert!(sql.contains("any(__sid) AS y0"), "{sql}");
    assert!(
        sql.contains("argMaxIf(v0, (-t0, assumeNotNull(v0)), n0 > 0)")
            && sql.contains("argMaxIf(v1, (t1, assumeNotNull(v1)), n1 > 0)"),
        "{sql}"
    );
    assert!(
        sql.contains(" GROUP BY __sid, b) GROUP BY __p0, __p1"),
        "{sql}"
    );
}

#[test]
fn with_an_index_only_the_rewritten_series_are_grouped() {
    let p = pushed("SELECT count(v), last(v) FROM cpu GROUP BY host").unwrap();
    let whole = p.partial_sql("t", None, None);
    assert_eq!(
        whole
            .matches("GROUP BY __src.`series_id`, __src.`time`")
            .count(),
        1
    );
    // No rewrite: no row grouped by its point, so no write order to pack: `__seq` is not
    // read, nor cast (no other half to match).
    let none = p.partial_sql("t", Some("3"), Some(&[]));
    assert!(!none.contains("GROUP BY __src.`series_id`"), "{none}");
    assert!(none.contains("SELECT __src.`series_id` AS __sid, __src.`time` AS __t, __src.`host` AS __k0, __src.`v` AS __v0, toUInt64(0) AS __ms FROM t AS __src WHERE __src.`series_id` NOT IN (3)"), "{none}");
    assert!(
        !none.contains("__seq") && !none.contains("max(__ms)"),
        "{none}"
    );
    // Two: their rows grouped, every other row as it is, both as one set of points; the
    // largest `__seq` of the grouped rows only.
    let some = p.partial_sql("t", None, Some(&[5, 9]));
    assert!(some.contains("toUInt64(0) AS __ms FROM t AS __src WHERE __src.`series_id` NOT IN (5,9) UNION ALL SELECT __src.`series_id` AS __sid, __src.`time` AS __t, any(__src.`host`) AS __k0, CAST(argMaxIf(__src.`v`, "), "{some}");
    assert!(
        some.contains("max(__src.`__seq`) AS __ms FROM t AS __src WHERE __src.`series_id` IN (5,9) GROUP BY __src.`series_id`, __src.`time`"),
        "{some}"
    );
    assert!(some.contains("max(__ms) AS "), "{some}");
}
