//! Expected answers come from influxd 1.6.7 (Debian's 1.6.7~rc0) over
//! this data, written to database `t`:
//!
//! ```text
//! m,host=a f=1.5,i=1i,s="x",b=true 0s      m,host=b f=10,i=100i,s="z" 5s
//! m,host=a f=2.5,i=4i,s="y",b=false 10s    m,host=b f=8,i=50i 25s
//! m,host=a f=4,i=2i 20s                    m,host=b f=12,i=70i 65s
//! m,host=a f=3,i=10i 50s                   m,host=c f=1 15s   (later)
//! m,host=a f=7.25,i=3i 60s                 m,host=c i=5i 45s  (later)
//! ```
//!
//! The inputs are what the engine returns: one row per interval with data.
use super::*;

const S: i64 = 1_000_000_000;

fn f(x: f64) -> Value {
    Value::Float(x)
}
fn i(x: i64) -> Value {
    Value::Integer(x)
}
fn s(x: &str) -> Value {
    Value::String(x.into())
}
const N: Value = Value::Null;

/// A series from `(seconds, cells)` rows.
fn series(rows: &[(i64, Vec<Value>)]) -> Series {
    Series {
        name: "m".into(),
        values: rows
            .iter()
            .map(|(t, cells)| {
                let mut row = vec![Value::Time(t * S)];
                row.extend(cells.iter().cloned());
                row
            })
            .collect(),
        ..Series::default()
    }
}

fn grid(start: Option<i64>, end: i64, interval: i64, descending: bool) -> Grid {
    Grid {
        interval: interval * S,
        offset: 0,
        start: start.map(|s| s * S),
        end: end * S,
        descending,
    }
}

fn cols(n: usize) -> Vec<FillColumn> {
    vec![FillColumn::default(); n]
}

fn run(input: &[(i64, Vec<Value>)], fill: Fill, g: Grid, columns: &[FillColumn]) -> Series {
    run_limit(input, fill, g, columns, None, None)
}

fn run_limit(
    input: &[(i64, Vec<Value>)],
    fill: Fill,
    g: Grid,
    columns: &[FillColumn],
    limit: Option<u64>,
    offset: Option<u64>,
) -> Series {
    let mut out = series(input);
    fill_series(&mut out, &fill, &g, columns, limit, offset);
    out
}

/// `mean(f)`, `max(i)` per 10 s over all hosts before host c was written.
fn mean_max() -> Vec<(i64, Vec<Value>)> {
    vec![
        (0, vec![f(5.75), i(100)]),
        (10, vec![f(2.5), i(4)]),
        (20, vec![f(6.0), i(50)]),
        (50, vec![f(3.0), i(10)]),
        (60, vec![f(9.625), i(70)]),
    ]
}

fn column(out: &Series, c: usize) -> Vec<Value> {
    out.values.iter().map(|r| r[c].clone()).collect()
}

fn times(out: &Series) -> Vec<i64> {
    out.values
        .iter()
        .map(|r| match r[0] {
            Value::Time(t) => t / S,
            _ => panic!("no time"),
        })
        .collect()
}

#[test]
fn window_start_aligns_on_epoch_plus_offset() {
    assert_eq!(window_start(25 * S, 10 * S, 0), 20 * S);
    assert_eq!(window_start(-5 * S, 10 * S, 0), -10 * S);
    assert_eq!(window_start(0, 20 * S, 5 * S), -15 * S);
    assert_eq!(window_start(5 * S, 20 * S, 5 * S), 5 * S);
}

#[test]
fn fill_null_covers_the_range_from_the_interval_holding_start() {
    // SELECT mean(f) FROM m WHERE time >= 3s AND time <= 60s GROUP BY time(20s)
    let input = vec![
        (0, vec![f(6.25)]),
        (20, vec![f(6.0)]),
        (40, vec![f(3.0)]),
        (60, vec![f(7.25)]),
    ];
    let out = run(&input, Fill::Null, grid(Some(3), 60, 20, false), &cols(1));
    assert_eq!(times(&out), vec![0, 20, 40, 60]);
    // ... time >= 0 AND time <= 90s GROUP BY time(10s): nulls in the gaps.
    let out = run(
        &mean_max(),
        Fill::Null,
        grid(Some(0), 90, 10, false),
        &cols(2),
    );
    assert_eq!(times(&out), (0..10).map(|k| k * 10).collect::<Vec<_>>());
    assert_eq!(
        column(&out, 1),
        vec![f(5.75), f(2.5), f(6.0), N, N, f(3.0), f(9.625), N, N, N]
    );
}

#[test]
fn fill_previous_carries_each_column() {
    // ... GROUP BY time(10s) fill(previous)
    let out = run(
        &mean_max(),
        Fill::Previous,
        grid(Some(0), 90, 10, false),
        &cols(2),
    );
    assert_eq!(
        column(&out, 1),
        vec![
            f(5.75),
            f(2.5),
            f(6.0),
            f(6.0),
            f(6.0),
            f(3.0),
            f(9.625),
            f(9.625),
            f(9.625),
            f(9.625)
        ]
    );
}

#[test]
fn fill_linear_interpolates_numbers_and_truncates_integers() {
    // SELECT mean(f), max(i) ... fill(linear)
    let out = run(
        &mean_max(),
        Fill::Linear,
        grid(Some(0), 90, 10, false),
        &cols(2),
    );
    assert_eq!(
        column(&out, 1),
        vec![
            f(5.75),
            f(2.5),
            f(6.0),
            f(5.0),
            f(4.0),
            f(3.0),
            f(9.625),
            N,
            N,
            N
        ]
    );
    assert_eq!(
        column(&out, 2),
        vec![i(100), i(4), i(50), i(36), i(23), i(10), i(70), N, N, N]
    );
}

#[test]
fn fill_linear_per_series() {
    // SELECT mean(f) ... GROUP BY time(10s), host fill(linear), host a
    let a = vec![
        (0, vec![f(1.5)]),
        (10, vec![f(2.5)]),
        (20, vec![f(4.0)]),
        (50, vec![f(3.0)]),
        (60, vec![f(7.25)]),
    ];
    let out = run(&a, Fill::Linear, grid(Some(0), 90, 10, false), &cols(1));
    assert_eq!(
        column(&out, 1),
        vec![
            f(1.5),
            f(2.5),
            f(4.0),
            f(3.6666666666666665),
            f(3.3333333333333335),
            f(3.0),
            f(7.25),
            N,
            N,
            N
        ]
    );
}

#[test]
fn fill_number_is_cast_to_the_column_type() {
    // fill(7): `7` in both; fill(7.5): 7.5 in the float, 7 in the integer.
    let out = run(
        &mean_max(),
        Fill::Number(Literal::Float(7.5)),
        grid(Some(0), 90, 10, false),
        &cols(2),
    );
    assert_eq!(out.values[3], vec![Value::Time(30 * S), f(7.5), i(7)]);
    let out = run(
        &mean_max(),
        Fill::Number(Literal::Integer(7)),
        grid(Some(0), 90, 10, false),
        &cols(2),
    );
    assert_eq!(out.values[3], vec![Value::Time(30 * S), f(7.0), i(7)]);
}

#[test]
fn fill_number_in_string_and_boolean_columns() {
    // SELECT first(s), first(b) ... time <= 40s GROUP BY time(10s) fill(5)
    let input = vec![
        (0, vec![s("x"), Value::Boolean(true)]),
        (10, vec![s("y"), Value::Boolean(false)]),
    ];
    let out = run(
        &input,
        Fill::Number(Literal::Integer(5)),
        grid(Some(0), 40, 10, false),
        &cols(2),
    );
    assert_eq!(column(&out, 1), vec![s("x"), s("y"), s(""), s(""), s("")]);
    assert_eq!(column(&out, 2)[2], Value::Boolean(false));
    // fill(linear) leaves them null.
    let out = run(&input, Fill::Linear, grid(Some(0), 40, 10, false), &cols(2));
    assert_eq!(column(&out, 1), vec![s("x"), s("y"), N, N, N]);
}

#[test]
fn count_shows_zero_under_fill_null() {
    // SELECT count(f) ... WHERE time >= 0 AND time <= 40s GROUP BY time(10s)
    let input = vec![(0, vec![i(2)]), (10, vec![i(1)]), (20, vec![i(2)])];
    let count = [FillColumn {
        data_type: Some(FieldType::Integer),
        count: true,
    }];
    let out = run(&input, Fill::Null, grid(Some(0), 40, 10, false), &count);
    assert_eq!(column(&out, 1), vec![i(2), i(1), i(2), i(0), i(0)]);
}

#[test]
fn a_column_without_data_in_the_series_is_not_filled_as_a_column() {
    // SELECT first(s), mean(f), count(s) ... GROUP BY time(10s), host fill(5)
    // Host c has no `s`: its cells show the raw 5 (first) and 5 (count).
    let columns = [
        FillColumn {
            data_type: Some(FieldType::String),
            count: false,
        },
        FillColumn {
            data_type: Some(FieldType::Float),
            count: false,
        },
        FillColumn {
            data_type: Some(FieldType::Integer),
            count: true,
        },
    ];
    let c = vec![(10, vec![N, f(1.0), N])];
    let out = run(
        &c,
        Fill::Number(Literal::Integer(5)),
        grid(Some(0), 40, 10, false),
        &columns,
    );
    assert_eq!(out.values[0], vec![Value::Time(0), i(5), f(5.0), i(5)]);
    assert_eq!(out.values[1], vec![Value::Time(10 * S), i(5), f(1.0), i(5)]);
    // Host b has an `s` at 0s only: "" elsewhere.
    let b = vec![(0, vec![s("z"), f(10.0), i(1)]), (20, vec![N, f(8.0), N])];
    let out = run(
        &b,
        Fill::Number(Literal::Integer(5)),
        grid(Some(0), 40, 10, false),
        &columns,
    );
    assert_eq!(
        out.values[1],
        vec![Value::Time(10 * S), s(""), f(5.0), i(5)]
    );
    // SELECT count(s), mean(f) ... fill(null): host c's count stays null.
    let out = run(&c, Fill::Null, grid(Some(0), 40, 10, false), &columns);
    assert_eq!(column(&out, 3), vec![N, N, N, N, N]);
}

/// Host c: `mean(f)` at 10s, `max(i)` at 40s.
fn host_c() -> Vec<(i64, Vec<Value>)> {
    vec![(10, vec![f(1.0), N]), (40, vec![N, i(5)])]
}

#[test]
fn host_c_fill_previous_and_none() {
    // WHERE host='c' AND time >= 0 AND time <= 60s GROUP BY time(10s) fill(previous)
    let out = run(
        &host_c(),
        Fill::Previous,
        grid(Some(0), 60, 10, false),
        &cols(2),
    );
    assert_eq!(
        column(&out, 1),
        vec![N, f(1.0), f(1.0), f(1.0), f(1.0), f(1.0), f(1.0)]
    );
    assert_eq!(column(&out, 2), vec![N, N, N, N, i(5), i(5), i(5)]);
    // fill(none)
    let out = run(
        &host_c(),
        Fill::None,
        grid(Some(0), 60, 10, false),
        &cols(2),
    );
    assert_eq!(out.values, series(&host_c()).values);
}

#[test]
fn limit_and_offset_count_each_columns_points() {
    // fill(none) LIMIT 1: two rows (one per column); OFFSET 1: nothing.
    let g = grid(Some(0), 60, 10, false);
    let out = run_limit(&host_c(), Fill::None, g, &cols(2), Some(1), None);
    assert_eq!(out.values, series(&host_c()).values);
    let out = run_limit(&host_c(), Fill::None, g, &cols(2), None, Some(1));
    assert!(out.values.is_empty());
    // fill(null) LIMIT 3 OFFSET 2 over all hosts (before host c).
    let g = grid(Some(0), 90, 10, false);
    let out = run_limit(&mean_max(), Fill::Null, g, &cols(2), Some(3), Some(2));
    assert_eq!(times(&out), vec![20, 30, 40]);
    assert_eq!(column(&out, 1), vec![f(6.0), N, N]);
    // fill(none) LIMIT 3 OFFSET 2
    let out = run_limit(&mean_max(), Fill::None, g, &cols(2), Some(3), Some(2));
    assert_eq!(times(&out), vec![20, 50, 60]);
}

#[test]
fn without_a_lower_bound_each_column_starts_at_its_data() {
    // WHERE host='c' AND time <= 60s GROUP BY time(10s): count(f), count(i)
    let counts = [FillColumn {
        data_type: Some(FieldType::Integer),
        count: true,
    }; 2];
    let input = vec![(10, vec![i(1), N]), (40, vec![N, i(1)])];
    let out = run(&input, Fill::Null, grid(None, 60, 10, false), &counts);
    assert_eq!(times(&out), vec![10, 20, 30, 40, 50, 60]);
    assert_eq!(column(&out, 1), vec![i(1), i(0), i(0), i(0), i(0), i(0)]);
    assert_eq!(column(&out, 2), vec![N, N, N, i(1), i(0), i(0)]);
    // ... mean(f), max(i) fill(5)
    let out = run(
        &host_c(),
        Fill::Number(Literal::Integer(5)),
        grid(None, 60, 10, false),
        &cols(2),
    );
    assert_eq!(out.values[0], vec![Value::Time(10 * S), f(1.0), i(5)]);
    assert_eq!(out.values[5], vec![Value::Time(60 * S), f(5.0), i(5)]);
}

#[test]
fn descending_walks_down_from_the_end() {
    let desc: Vec<_> = mean_max().into_iter().rev().collect();
    let g = grid(Some(0), 90, 10, true);
    // ORDER BY time DESC, fill(null)
    let out = run(&desc, Fill::Null, g, &cols(2));
    assert_eq!(
        times(&out),
        (0..10).rev().map(|k| k * 10).collect::<Vec<_>>()
    );
    // fill(previous) carries downwards.
    let out = run(&desc, Fill::Previous, g, &cols(2));
    assert_eq!(
        column(&out, 1),
        vec![
            N,
            N,
            N,
            f(9.625),
            f(3.0),
            f(3.0),
            f(3.0),
            f(6.0),
            f(2.5),
            f(5.75)
        ]
    );
    // fill(linear)
    let out = run(&desc, Fill::Linear, g, &cols(2));
    assert_eq!(
        column(&out, 1),
        vec![
            N,
            N,
            N,
            f(9.625),
            f(3.0),
            f(4.0),
            f(5.0),
            f(6.0),
            f(2.5),
            f(5.75)
        ]
    );
}

#[test]
fn descending_without_lower_bound_stops_at_the_earliest_data() {
    // WHERE host='c' AND time <= 60s GROUP BY time(10s) fill(previous) ORDER BY time DESC
    let desc: Vec<_> = host_c().into_iter().rev().collect();
    let out = run(&desc, Fill::Previous, grid(None, 60, 10, true), &cols(2));
    assert_eq!(times(&out), vec![60, 50, 40, 30, 20, 10]);
    assert_eq!(column(&out, 1), vec![N, N, N, N, N, f(1.0)]);
    assert_eq!(column(&out, 2), vec![N, N, i(5), i(5), i(5), i(5)]);
    // ... fill(5)
    let out = run(
        &desc,
        Fill::Number(Literal::Integer(5)),
        grid(None, 60, 10, true),
        &cols(2),
    );
    assert_eq!(
        column(&out, 1),
        vec![f(5.0), f(5.0), f(5.0), f(5.0), f(5.0), f(1.0)]
    );
    assert_eq!(column(&out, 2), vec![i(5); 6]);
}

#[test]
fn offset_grid() {
    // SELECT mean(f) ... WHERE time >= 0 AND time <= 90s GROUP BY time(20s,5s)
    let input = vec![
        (-15, vec![f(1.5)]),
        (5, vec![f(5.5)]),
        (25, vec![f(8.0)]),
        (45, vec![f(5.125)]),
        (65, vec![f(12.0)]),
    ];
    let mut g = grid(Some(0), 90, 20, false);
    g.offset = 5 * S;
    let out = run(&input, Fill::Null, g, &cols(1));
    assert_eq!(times(&out), vec![-15, 5, 25, 45, 65, 85]);
    assert_eq!(column(&out, 1)[5], N);
}

#[test]
fn fill_linear_counts_whole_intervals_as_go_truncates_them() {
    // lin v=10 -10s, v=30 30s, v=50 70s:
    // SELECT mean(v) FROM lin WHERE time >= -15s AND time <= 80s
    //   GROUP BY time(20s,5s) fill(linear)
    // -15s/20s and 5s/20s both truncate to 0: the 5s interval gets 10.
    let input = vec![
        (-15, vec![f(10.0)]),
        (25, vec![f(30.0)]),
        (65, vec![f(50.0)]),
    ];
    let mut g = grid(Some(-15), 80, 20, false);
    g.offset = 5 * S;
    let out = run(&input, Fill::Linear, g, &cols(1));
    assert_eq!(times(&out), vec![-15, 5, 25, 45, 65]);
    assert_eq!(
        column(&out, 1),
        vec![f(10.0), f(10.0), f(30.0), f(40.0), f(50.0)]
    );
    // ... GROUP BY time(20s) fill(linear)
    let input = vec![
        (-20, vec![f(10.0)]),
        (20, vec![f(30.0)]),
        (60, vec![f(50.0)]),
    ];
    let out = run(
        &input,
        Fill::Linear,
        grid(Some(-15), 80, 20, false),
        &cols(1),
    );
    assert_eq!(times(&out), vec![-20, 0, 20, 40, 60, 80]);
    assert_eq!(
        column(&out, 1),
        vec![f(10.0), f(20.0), f(30.0), f(40.0), f(50.0), N]
    );
}

#[test]
fn empty_input_stays_empty() {
    let out = run(&[], Fill::Null, grid(Some(100), 190, 10, false), &cols(1));
    assert!(out.values.is_empty());
}
