//! `fill_aligned` against the column-by-column fill it stands in for, value
//! by value: random rows (every column valued), grids, offsets, zones
//! (across Paris's 2021 spring and autumn changes), every fill mode, order,
//! `LIMIT`/`OFFSET`.

use proptest::prelude::*;

use super::*;

const S: i64 = 1_000_000_000;
/// 2021-03-28T00:00:00Z: Paris moves to summer time an hour later.
const SPRING: i64 = 1_616_889_600 * S;
/// 2021-10-31T00:00:00Z: and back to winter time.
const AUTUMN: i64 = 1_635_638_400 * S;

fn fill_mode() -> impl Strategy<Value = Fill> {
    prop_oneof![
        Just(Fill::None),
        Just(Fill::Null),
        Just(Fill::Previous),
        Just(Fill::Linear),
        (-5i64..5).prop_map(|n| Fill::Number(Literal::Integer(n))),
        (-5.0f64..5.0).prop_map(|n| Fill::Number(Literal::Float(n))),
    ]
}

fn column() -> impl Strategy<Value = FillColumn> {
    (
        prop_oneof![
            Just(None),
            Just(Some(FieldType::Float)),
            Just(Some(FieldType::Integer))
        ],
        any::<bool>(),
    )
        .prop_map(|(data_type, count)| FillColumn { data_type, count })
}

/// A statement's shape: grid, zone, columns (float or integer values each).
#[derive(Debug, Clone)]
struct Case {
    grid: Grid,
    paris: bool,
    columns: Vec<(FillColumn, bool)>,
    /// Times drawn in the range, each put into its window.
    draws: Vec<i64>,
    /// Cells drawn for the rows.
    cells: Vec<i64>,
    fill: Fill,
    limit: Option<u64>,
    offset: Option<u64>,
}

fn case() -> impl Strategy<Value = Case> {
    let interval = prop_oneof![
        Just(600 * S),
        Just(3600 * S),
        Just(7200 * S),
        Just(86_400 * S)
    ];
    (
        (
            prop_oneof![Just(SPRING), Just(AUTUMN), Just(0i64)],
            interval,
            prop_oneof![Just(0i64), -1800 * S..1800 * S],
            0i64..3 * 86_400 * S,
            proptest::option::of(-86_400 * S..86_400 * S),
            any::<bool>(),
            any::<bool>(),
        ),
        proptest::collection::vec((column(), any::<bool>()), 1..4),
        proptest::collection::vec(-86_400 * S..4 * 86_400 * S, 0..40),
        proptest::collection::vec(-1_000i64..1_000, 200),
        fill_mode(),
        proptest::option::of(0u64..20),
        proptest::option::of(0u64..20),
    )
        .prop_map(
            |(
                (base, interval, offset, span, start, descending, paris),
                columns,
                draws,
                cells,
                fill,
                limit,
                offset_rows,
            )| {
                Case {
                    grid: Grid {
                        interval,
                        offset,
                        start: start.map(|s| base + s),
                        end: base + span,
                        descending,
                    },
                    paris,
                    columns,
                    draws: draws.into_iter().map(|d| base + d).collect(),
                    cells,
                    fill,
                    limit,
                    offset: offset_rows,
                }
            },
        )
}

/// The case's rows: one per distinct window drawn, in output order, each
/// column's value a float or an integer as the column is.
fn rows(case: &Case, walk: &Walk<'_>) -> Vec<Vec<Value>> {
    let mut times: Vec<i64> = case.draws.iter().map(|&t| walk.window(t)).collect();
    times.sort_unstable();
    times.dedup();
    if case.grid.descending {
        times.reverse();
    }
    let mut cells = case.cells.iter().cycle();
    times
        .into_iter()
        .map(|t| {
            let mut row = vec![Value::Time(t)];
            for (_, float) in &case.columns {
                let x = *cells.next().unwrap_or(&0);
                row.push(if *float {
                    Value::Float(x as f64 / 8.0)
                } else {
                    Value::Integer(x)
                });
            }
            row
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn aligned_rows_fill_as_the_columns_do(case in case()) {
        let zone = case.paris.then(|| TimeZone::load("Europe/Paris").unwrap());
        let walk = Walk { grid: &case.grid, zone: zone.as_ref() };
        let columns: Vec<FillColumn> = case.columns.iter().map(|c| c.0).collect();
        let input = rows(&case, &walk);
        let generic = fill_columns(&input, &case.fill, &walk, &columns, case.limit, case.offset);
        let fast = aligned::fill_aligned(input.clone(), &case.fill, &walk, &columns, case.limit, case.offset);
        match fast {
            Ok(fast) => prop_assert_eq!(fast, generic),
            // Only no rows at all are not aligned here.
            Err(back) => {
                prop_assert!(input.is_empty());
                prop_assert_eq!(back, input);
            }
        }
    }
}

#[test]
fn a_null_cell_or_a_repeated_time_takes_the_column_by_column_fill() {
    let grid = Grid {
        interval: 10 * S,
        offset: 0,
        start: Some(0),
        end: 60 * S,
        descending: false,
    };
    let walk = Walk {
        grid: &grid,
        zone: None,
    };
    let columns = [FillColumn::default(); 2];
    let with_null = vec![vec![Value::Time(0), Value::Float(1.0), Value::Null]];
    let repeated = vec![
        vec![Value::Time(0), Value::Float(1.0), Value::Float(2.0)],
        vec![Value::Time(0), Value::Float(3.0), Value::Float(4.0)],
    ];
    for rows in [with_null, repeated] {
        let back = aligned::fill_aligned(rows.clone(), &Fill::Null, &walk, &columns, None, None);
        assert_eq!(back, Err(rows));
    }
}
