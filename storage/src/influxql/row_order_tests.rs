use super::*;
use crate::influxql::plan::Column;
use crate::influxql::range::TimeRange;

fn column(name: &str, sql: &str) -> Column {
    Column {
        name: name.into(),
        sql: sql.into(),
        fill: Default::default(),
        transform: None,
        reducer: None,
        companion: None,
    }
}

/// `SELECT host, f FROM m` over tags `dc` and `host`.
fn plan() -> Plan {
    Plan {
        db: "d".into(),
        measurement: "m".into(),
        source: None,
        tags: vec!["dc".into(), "host".into()],
        fields: vec!["f".into()],
        columns: vec![column("host", "nullIf(`host`, '')"), column("f", "`f`")],
        aggregate: None,
        group_tags: vec![],
        order_tags: vec!["dc".into(), "host".into()],
        range: TimeRange {
            min: None,
            max: None,
        },
        inner_where: vec![],
        outer_where: vec![],
        nonnull: vec!["`f`".into()],
        shows_every_point: true,
        nonnull_implied: false,
        order_desc: false,
        limit: None,
        offset: None,
    }
}

fn s(v: &str) -> Value {
    if v.is_empty() {
        Value::Null
    } else {
        Value::String(v.into())
    }
}

/// A row as the unordered statement answers it: host, f, then the added `dc` and
/// series id.
fn row(group: &[&str], time: i64, host: &str, f: i64, dc: &str, sid: u64) -> Row {
    Row {
        time: Some(time),
        group: group.iter().map(|g| g.to_string()).collect(),
        values: vec![
            s(host),
            Value::Integer(f),
            Value::String(dc.into()),
            Value::Unsigned(sid),
        ],
    }
}

#[test]
fn shown_tags_are_reused_and_the_others_added() {
    let (order, added) = RowOrder::of(&plan(), "__src.`series_id`").expect("ordered here");
    assert_eq!(added, ["`dc` AS __iq_o0", "__src.`series_id` AS __iq_os"]);
    assert_eq!(
        order,
        RowOrder {
            desc: false,
            tags: vec![2, 0],
            series: 3,
            added: 2,
        }
    );
}

#[test]
fn the_engine_orders_what_it_limits_aggregates_or_reads_from_a_subquery() {
    let mut p = plan();
    p.limit = Some(3);
    assert!(RowOrder::of(&p, "s").is_none());
    let mut p = plan();
    p.offset = Some(1);
    assert!(RowOrder::of(&p, "s").is_none());
    let mut p = plan();
    p.source = Some("sub".into());
    let (sql, order) = crate::influxql::sql::render_read(&p, &flush::Rewrites::All, None);
    assert!(order.is_none() && sql.contains(" ORDER BY "), "{sql}");
    // A cluster's shard rows (also the plan's source) are points of series.
    let (sql, order) = crate::influxql::sql::render_shard_rows(&p);
    assert!(order.is_some() && !sql.contains(" ORDER BY "), "{sql}");
    assert!(sql.contains("`__iq_sid` AS __iq_os"), "{sql}");
}

#[test]
fn rows_sort_by_group_time_tags_then_series_and_lose_the_added_columns() {
    let (order, _) = RowOrder::of(&plan(), "sid").unwrap();
    let mut rows = vec![
        row(&[], 2, "a", 1, "x", 1),
        row(&[], 1, "b", 2, "x", 9),
        // A missing host orders as '' (first), shown as null.
        row(&[], 1, "", 3, "x", 5),
        row(&[], 1, "a", 4, "y", 2),
        row(&[], 1, "a", 5, "x", 7),
        // Same tags, another series id (a tag that is '' in one and missing in
        // the other): by id.
        row(&[], 1, "a", 6, "x", 3),
    ];
    order.sort(&mut rows);
    let got: Vec<(i64, Value)> = rows
        .iter()
        .map(|r| (r.time.unwrap(), r.values[1].clone()))
        .collect();
    let want: Vec<(i64, Value)> = [(1, 3), (1, 6), (1, 5), (1, 2), (1, 4), (2, 1)]
        .into_iter()
        .map(|(t, f)| (t, Value::Integer(f)))
        .collect();
    assert_eq!(got, want);
    assert!(
        rows.iter().all(|r| r.values.len() == 2),
        "added columns dropped"
    );
    assert_eq!(rows[0].values[0], Value::Null);
}

#[test]
fn descending_time_keeps_tags_ascending_and_groups_come_first() {
    let mut p = plan();
    p.order_desc = true;
    let (order, _) = RowOrder::of(&p, "sid").unwrap();
    let mut rows = vec![
        row(&["g1"], 5, "a", 1, "x", 1),
        row(&["g0"], 1, "a", 2, "x", 1),
        row(&["g0"], 3, "b", 3, "x", 2),
        row(&["g0"], 3, "a", 4, "x", 3),
    ];
    order.sort(&mut rows);
    let got: Vec<&Value> = rows.iter().map(|r| &r.values[1]).collect();
    assert_eq!(
        got,
        [
            &Value::Integer(4),
            &Value::Integer(3),
            &Value::Integer(2),
            &Value::Integer(1)
        ]
    );
}

/// The engine's `ORDER BY groups, time, tags…, series` as one comparison of rows,
/// the definition [`RowOrder::sort`]'s ranks must agree with.
fn engine_order(o: &RowOrder, a: &Row, b: &Row) -> Ordering {
    let time = if o.desc {
        b.time.cmp(&a.time)
    } else {
        a.time.cmp(&b.time)
    };
    a.group.cmp(&b.group).then(time).then_with(|| {
        o.tags
            .iter()
            .map(|&i| text(a.values.get(i)).cmp(text(b.values.get(i))))
            .find(|c| c.is_ne())
            .unwrap_or(Ordering::Equal)
            .then_with(|| id(a.values.get(o.series)).cmp(&id(b.values.get(o.series))))
    })
}

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Random series (a few tag values each, some missing, some sharing tags under
    /// another id) at random times in random groups, either direction: the same
    /// order as the row-by-row comparison.
    #[test]
    fn ranked_sort_equals_the_engines_order(
        series in prop::collection::vec(
            (0u8..3, 0u8..3, 0u64..6, prop::sample::select(vec!["g0", "g1", ""])),
            1..8,
        ),
        points in prop::collection::vec((0usize..8, -3i64..4), 0..60),
        desc in any::<bool>(),
    ) {
        let mut p = plan();
        p.order_desc = desc;
        let (order, _) = RowOrder::of(&p, "sid").unwrap();
        let tag = |v: u8| ["", "a", "b"][v as usize];
        let mut seen = std::collections::HashSet::new();
        let mut rows = Vec::new();
        for (k, (s, t)) in points.into_iter().enumerate() {
            let (host, dc, sid, group) = series[s % series.len()];
            // One row per (series, time), as the point merge answers.
            if !seen.insert((sid, t)) {
                continue;
            }
            let dc = ["x", "y", "z"][dc as usize];
            let group: &[&str] = if group.is_empty() { &[] } else { &[group] };
            rows.push(row(group, t, tag(host), k as i64, dc, sid));
        }
        // A series id names one tag set: keep each id's first.
        let mut tags_of = std::collections::HashMap::new();
        rows.retain(|r| {
            let key = (r.values[0].clone(), r.values[2].clone(), r.group.clone());
            let sid = id(r.values.get(3));
            tags_of.entry(sid).or_insert_with(|| key.clone()) == &key
        });
        let mut want = rows.clone();
        want.sort_by(|a, b| engine_order(&order, a, b));
        for r in &mut want {
            r.values.truncate(2);
        }
        order.sort(&mut rows);
        prop_assert_eq!(rows, want);
    }
}
