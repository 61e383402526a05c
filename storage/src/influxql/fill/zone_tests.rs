//! `tz()` windows. Expected answers come from influxd 1.6.7 (Debian's
//! 1.6.7~rc0): `dst v=<h>` every hour from 2020-10-31T00:00Z (h = 0..71,
//! without h = 30..33, 50, 51), `dsts v=<h>` every 3 hours from
//! 2020-03-07T00:00Z (h = 0, 3, ..., 69, without 30, 33).
use super::*;

const S: i64 = 1_000_000_000;
const H: i64 = 3600 * S;

fn zone(name: &str) -> TimeZone {
    TimeZone::load(name).unwrap_or_else(|e| panic!("{e}: tzdata (/usr/share/zoneinfo) is needed"))
}

fn run(input: &[(i64, Value)], fill: Fill, grid: Grid, zone: &TimeZone) -> Vec<(i64, Value)> {
    let mut s = Series {
        values: input
            .iter()
            .map(|(t, v)| vec![Value::Time(t * S), v.clone()])
            .collect(),
        ..Series::default()
    };
    let columns = [FillColumn {
        data_type: Some(FieldType::Integer),
        count: false,
    }];
    fill_series_in(&mut s, &fill, &grid, Some(zone), &columns, None, None);
    s.values
        .into_iter()
        .map(|r| match &r[..] {
            [Value::Time(t), v] => (t / S, v.clone()),
            _ => panic!("{r:?}"),
        })
        .collect()
}

fn grid(start: i64, end: i64, interval: i64) -> Grid {
    Grid {
        interval,
        offset: 0,
        start: Some(start * S),
        end: end * S - 1,
        descending: false,
    }
}

fn i(x: i64) -> Value {
    Value::Integer(x)
}

#[test]
fn days_in_chicago_across_the_fall_back() {
    // SELECT sum(v) FROM dst WHERE time >= '2020-10-31T00:00:00Z'
    //   AND time < '2020-11-03T00:00:00Z' GROUP BY time(1d) tz('America/Chicago')
    let chicago = zone("America/Chicago");
    assert_eq!(
        window_start_in(1_604_102_400 * S, 24 * H, 0, Some(&chicago)),
        1_604_034_000 * S
    );
    let rows = [
        (1_604_034_000, i(10)),
        (1_604_120_400, i(396)),
        (1_604_206_800, i(798)),
        (1_604_296_800, i(1125)),
    ];
    let out = run(
        &rows,
        Fill::Null,
        grid(1_604_102_400, 1_604_361_600, 24 * H),
        &chicago,
    );
    assert_eq!(out, rows.to_vec());
}

#[test]
fn days_in_chicago_across_the_spring_forward() {
    // SELECT sum(v) FROM dsts WHERE time >= '2020-03-07T00:00:00Z'
    //   AND time < '2020-03-10T00:00:00Z' GROUP BY time(1d) tz('America/Chicago')
    let chicago = zone("America/Chicago");
    let rows = [
        (1_583_474_400, i(3)),
        (1_583_560_800, i(132)),
        (1_583_647_200, i(261)),
        (1_583_730_000, i(369)),
    ];
    let out = run(
        &rows,
        Fill::Null,
        grid(1_583_539_200, 1_583_798_400, 24 * H),
        &chicago,
    );
    assert_eq!(out, rows.to_vec());
}

#[test]
fn hours_in_chicago_shift_across_offset_changes() {
    let chicago = zone("America/Chicago");
    // ... GROUP BY time(2h) fill(previous): the window at 07:00Z lasts 3 h.
    let rows = [
        (1_604_199_600, i(28)),
        (1_604_206_800, i(29)),
        (1_604_224_800, i(35)),
    ];
    let g = grid(1_604_199_600, 1_604_232_000, 2 * H);
    let out = run(&rows, Fill::Previous, g, &chicago);
    assert_eq!(
        out,
        vec![
            (1_604_199_600, i(28)),
            (1_604_206_800, i(29)),
            (1_604_214_000, i(29)),
            (1_604_224_800, i(35))
        ]
    );
    // ... fill(linear) ORDER BY time DESC: 33 at 08:00Z.
    let desc: Vec<_> = rows.iter().rev().cloned().collect();
    let mut g = g;
    g.descending = true;
    let out = run(&desc, Fill::Linear, g, &chicago);
    assert_eq!(
        out,
        vec![
            (1_604_224_800, i(35)),
            (1_604_217_600, i(33)),
            (1_604_206_800, i(29)),
            (1_604_199_600, i(28))
        ]
    );
    // dsts ... GROUP BY time(3h): the window after 06:00Z starts at 08:00Z.
    let rows = [
        (1_583_625_600, i(24)),
        (1_583_636_400, i(27)),
        (1_583_665_200, i(36)),
        (1_583_676_000, i(39)),
    ];
    let out = run(
        &rows,
        Fill::Null,
        grid(1_583_625_600, 1_583_690_400, 3 * H),
        &chicago,
    );
    let times: Vec<i64> = out.iter().map(|r| r.0).collect();
    assert_eq!(
        times,
        vec![
            1_583_625_600,
            1_583_636_400,
            1_583_647_200,
            1_583_654_400,
            1_583_665_200,
            1_583_676_000,
            1_583_686_800
        ]
    );
}

#[test]
fn half_hour_zones_align_on_local_time() {
    // dsts ... GROUP BY time(90m) tz('Asia/Kolkata'): 13 windows from 23:00Z.
    let kolkata = zone("Asia/Kolkata");
    let rows = [
        (1_583_622_000, i(24)),
        (1_583_632_800, i(27)),
        (1_583_665_200, i(36)),
        (1_583_676_000, i(39)),
    ];
    let out = run(
        &rows,
        Fill::Null,
        grid(1_583_625_600, 1_583_690_400, 90 * 60 * S),
        &kolkata,
    );
    assert_eq!(out.len(), 13);
    assert_eq!(out[0], (1_583_622_000, i(24)));
    assert_eq!(out[12], (1_583_686_800, Value::Null));
}
