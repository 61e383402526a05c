//! The SQL of `integral()` computed where a series lives (`integral.rs` beside this file):
//! each series' points of a field after point identity, in time order, integrated as
//! `influxql/integral.rs`'s `integrate` does — the same float operations, in the same order
//! and types, so the answer is the embedded path's bit for bit.
//!
//! Per series and field, the points' times `ts` and values `vs` (as `Float64`), each
//! point's window `ws` and its predecessor's (`tp`, `vp`, `wp`; the first point is its own),
//! whether it opens a later window than its predecessor's (`cr`), and the value
//! interpolated at the end of the predecessor's window (`xs`). Point `k` gives the piece
//! `A_k` to its predecessor's window (`0` for the first point; the trapezium, or the part
//! up to the window's end where it crosses one) and, where it crosses, the piece `B_k`
//! (from that end to the point) to its own. A window's integral is the sum of its pieces
//! in order `B, A, A, …`: what `integrate` adds, starting from `0.0` as it does (a `0.0`
//! piece first changes nothing: a sum of pieces is never `-0.0`). The pieces are read
//! as rows (`ARRAY JOIN`), grouped by series, call and window, put back in order
//! (`arraySort` by their index) and added by `arraySum`, which adds in order on 18.16 and on
//! the embedded 26.7 (from `0` on 18.16, from the first element on 26.7: `0. +` its sum
//! makes the one difference, a sum of `-0.0`s, `0.0`; tested in `integral/tests.rs` and
//! the cluster tests). A last point on
//! its window's start closes nothing: its window is left out, as `integrate` leaves it.
//!
//! No `tz()` window (its windows are not a fixed grid): those read the rows.

use super::FieldUse;

/// One `integral()` of the statement as the shards compute it.
#[derive(Debug, Clone, Copy)]
pub(super) struct IntegralCall {
    /// Index among the fields read.
    pub(super) field: usize,
    /// ns (> 0).
    pub(super) unit: i64,
    /// The field is an integer one (InfluxDB's integer reducer's next piece).
    pub(super) integer: bool,
}

/// `GROUP BY time(interval, offset)` (no zone).
#[derive(Debug, Clone, Copy)]
pub(super) struct Grid {
    pub(super) interval: i64,
    pub(super) offset: i64,
}

fn int(v: i64) -> String {
    format!("toInt64({v})")
}

/// The statement over `points` (the SQL of `Pushdown::points_sql`: `__sid`, `__t`, the
/// group tags `__k<g>`, each field's value `__v<j>`, `__ms`): one row per series, call and
/// window: the group tags (`__p0`…; `known`: whether the measurement has each), then the call's index, the window's start (0 without
/// windows), the integral, the largest `__seq` of the series' rows grouped by point.
pub(super) fn integral_sql(
    points: &str,
    known: &[bool],
    fields: &[FieldUse],
    calls: &[IntegralCall],
    grid: Option<Grid>,
) -> String {
    let groups = known.len();
    let g: Vec<String> = (0..groups).map(|g| format!("__g{g}")).collect();
    // Per series: each field's points in time order.
    let mut series = vec!["__sid".to_string(), "max(__ms) AS __ms".to_string()];
    // A tag the measurement lacks is `''` (`points_sql` reads only the others).
    series.extend(known.iter().enumerate().map(|(i, k)| match k {
        true => format!("any(__k{i}) AS __g{i}"),
        false => format!("'' AS __g{i}"),
    }));
    series.extend(
        (0..fields.len()).map(|j| {
            format!("arraySort(groupArrayIf((__t, __v{j}), isNotNull(__v{j}))) AS __a{j}")
        }),
    );
    let series = format!(
        "SELECT {} FROM ({points}) GROUP BY __sid",
        series.join(", ")
    );
    // Per series: each field's arrays, then each call's pieces.
    let mut arrays = vec!["__sid".to_string(), "__ms".to_string()];
    arrays.extend(g.iter().cloned());
    let window = |t: &str| match grid {
        Some(w) => {
            let (iv, off) = (int(w.interval), int(w.offset));
            format!("({t} - ((({t} - {off}) % {iv}) + {iv}) % {iv})")
        }
        None => int(0),
    };
    // The previous element of each (the first's own); empty for no point.
    let prev = |a: &str| format!("arraySlice(arrayPushFront({a}, {a}[1]), 1, length({a}))");
    for j in 0..fields.len() {
        arrays.push(format!("arrayMap(x -> x.1, __a{j}) AS __ts{j}"));
        arrays.push(format!(
            "arrayMap(x -> toFloat64(assumeNotNull(x.2)), __a{j}) AS __vs{j}"
        ));
        arrays.push(format!(
            "arrayMap(t -> {}, __ts{j}) AS __ws{j}",
            window("t")
        ));
        for (name, of) in [("tp", "ts"), ("vp", "vs"), ("wp", "ws")] {
            arrays.push(format!("{} AS __{name}{j}", prev(&format!("__{of}{j}"))));
        }
        // The last point's window, and whether that point lies on its start.
        arrays.push(format!("__ws{j}[length(__ws{j})] AS __lw{j}"));
        arrays.push(format!("__ts{j}[length(__ts{j})] = __lw{j} AS __ld{j}"));
        if let Some(w) = grid {
            let iv = int(w.interval);
            arrays.push(format!(
                "arrayMap((t, w) -> t >= w + {iv}, __ts{j}, __wp{j}) AS __cr{j}"
            ));
            // `pv + (v - pv) / (t - pt) as f64 * (end - pt) as f64`.
            arrays.push(format!(
                "arrayMap((t, v, p, q, w) -> q + (((v - q) / toFloat64(t - p)) * \
                 toFloat64((w + {iv}) - p)), __ts{j}, __vs{j}, __tp{j}, __vp{j}, __wp{j}) AS __xs{j}"
            ));
        }
    }
    let mut pieces = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let j = c.field;
        let unit = format!("toFloat64({})", int(c.unit));
        // Whether a piece of window `w` counts (not the last point's window on its start).
        let keep = |w: &str| format!("({w} != __lw{j} OR NOT __ld{j})");
        let piece = |idx: &str, w: &str, v: &str, kept: String| {
            format!("(toUInt32({i}), toUInt64({idx}), {w}, {v}, {kept})")
        };
        // `0.5 * (cur + pv) * ((t - pt) as f64 / unit)` between two points.
        let trapezium = format!("(0.5 * (v + q)) * (toFloat64(t - p) / {unit})");
        match grid {
            None => {
                pieces.push(format!(
                    "arrayMap((k, t, v, p, q, w) -> {}, arrayEnumerate(__ts{j}), __ts{j}, \
                     __vs{j}, __tp{j}, __vp{j}, __wp{j})",
                    piece(
                        "2 * k",
                        "w",
                        &format!("if(k = 1, 0., {trapezium})"),
                        keep("w")
                    )
                ));
            }
            Some(w) => {
                let iv = int(w.interval);
                // Up to the end of the predecessor's window: `0.5 * (value + pv) * ((end -
                // pt) as f64 / unit)`.
                let closing = format!("(0.5 * (x + q)) * (toFloat64((w + {iv}) - p) / {unit})");
                let a = format!("if(c, {closing}, if(k = 1, 0., {trapezium}))");
                pieces.push(format!(
                    "arrayMap((k, t, v, p, q, w, x, c) -> {}, arrayEnumerate(__ts{j}), \
                     __ts{j}, __vs{j}, __tp{j}, __vp{j}, __wp{j}, __xs{j}, __cr{j})",
                    piece("2 * k", "w", &a, keep("w"))
                ));
                // From that end to the point: the float reducer's `(v + value)`, the
                // integer one's `(value + pv)`.
                let sum = if c.integer { "(x + q)" } else { "(v + x)" };
                let opening = format!("(0.5 * {sum}) * (toFloat64(t - (w + {iv})) / {unit})");
                // Only the points that cross a window end have one: the others are left
                // out before their pieces are made (most points, for long windows).
                let crossing = |a: &str| format!("arrayFilter((e, c) -> c, {a}, __cr{j})");
                let inputs: Vec<String> = [
                    format!("arrayEnumerate(__ts{j})"),
                    format!("__ts{j}"),
                    format!("__vs{j}"),
                    format!("__vp{j}"),
                    format!("__wp{j}"),
                    format!("__ws{j}"),
                    format!("__xs{j}"),
                ]
                .iter()
                .map(|a| crossing(a))
                .collect();
                pieces.push(format!(
                    "arrayMap((k, t, v, q, w, o, x) -> {}, {})",
                    piece("2 * k + 1", "o", &opening, keep("o")),
                    inputs.join(", ")
                ));
            }
        }
    }
    arrays.push(format!("arrayConcat({}) AS __pc", pieces.join(", ")));
    let arrays = format!("SELECT {} FROM ({series})", arrays.join(", "));
    let mut out: Vec<String> = g.iter().map(|n| format!("any({n})")).collect();
    out.extend([
        "__p.1".to_string(),
        "__p.3".to_string(),
        // `0. +`: 26.7's `arraySum` starts from the first element (`arraySum([-0.])` is
        // `-0`), `integrate`'s sum from `0.0` (18.16's too); they differ only in a sum of
        // nothing but `-0.0`s, which this makes `0.0`.
        "0. + arraySum(arrayMap(x -> x.2, arraySort(groupArray((__p.2, __p.4)))))".to_string(),
        "max(__ms)".to_string(),
    ]);
    let out: Vec<String> = out
        .into_iter()
        .enumerate()
        .map(|(i, s)| format!("{s} AS __p{i}"))
        .collect();
    let (c, w) = (groups, groups + 1);
    format!(
        "SELECT {} FROM ({arrays}) ARRAY JOIN __pc AS __p WHERE __p.5 \
         GROUP BY __sid, __p{c}, __p{w}",
        out.join(", ")
    )
}
