//! `mode(field)` and `distinct(field)` pushed down (issue #43): each shard sends, per group
//! and interval, every value of the group's points (after point identity) with how many
//! points have it and the first and last of their times; the node adds them up.
//!
//! `mode`: the node picks the value as the embedded reducer does (`selector::mode`) — whose
//! pick depends on exactly those: values are scanned
//! in ascending order, the first leads with its count, and a later value takes the lead when
//! its count passes the leader's, or equals it (of at least two points) and its first point
//! is not after the leader's last. Booleans: `true` unless `false` has more points.
//!
//! `distinct`: each value once, ordered by the time it first appears, then by value
//! (`selector::distinct`): the first times are what it reads.
//!
//! The answer goes to the executor as the embedded statement's cell would (a group's points
//! for the reducer, `reduce.rs`): for `mode` the picked value as the one point, for
//! `distinct` each value as one point at its first time, in time order. The reducer then
//! answers as on every path (each value's row at the group's time, `LIMIT` on those rows).
//!
//! Bounded as `count(DISTINCT)` is: a group with more than [`MAX_VALUES`] values sends
//! none and the statement reads the rows. A float is sent as its bytes: `-0.0` and `0.0` are
//! one value to the reducer (equal), shown as the run's last point's; the node joins them so
//! (their last points at one time, which the reducer orders as the engine read them: `0`).

use std::collections::HashMap;

use engine::table::ColumnKind;

use super::combine::CombineError;
use crate::influxql::selector::compare_values;
use crate::influxql::series::Value;

/// Values of a group past which its shard sends none: the statement reads the rows.
pub(super) const MAX_VALUES: usize = 100_000;

/// A value's points: how many, the first time, the last time.
type Run = (u64, i64, i64);

/// The partial column of call `i` over its field's points `v` of `kind` (`__t` their
/// times): per value `<bytes>:<value><count>,<first>,<last>;`, in the values' text order;
/// null past [`MAX_VALUES`].
pub(super) fn partial_sql(i: usize, v: &str, kind: ColumnKind) -> String {
    // Only the points with a value are collected: their text is not `Nullable`.
    let (n, v) = (v, format!("assumeNotNull({v})"));
    let text = match kind {
        // Its bytes: `-0.0` apart from `0.0` (`cell` joins them as the reducer does).
        ColumnKind::Float => format!("hex(reinterpretAsString({v}))"),
        ColumnKind::String | ColumnKind::Tag => v.to_string(),
        // 0 or 1 whether the column is a `UInt8` (shards) or a `Bool` (the engine).
        ColumnKind::Boolean => format!("toString(toUInt8({v}))"),
        ColumnKind::Integer | ColumnKind::Unsigned => format!("toString({v})"),
    };
    // The group's points by value then time. Each value's run: its first point is where
    // `arrayEnumerateUniq` counts 1 over the points, its last where it counts 1 over them
    // reversed, and its count what the forward count reaches there. Every lambda takes its
    // arrays as arguments: one capturing an array copies it per element on 18.16 (a
    // lookup of the neighbour by index made a TSBS-sized `mode` 2.8x slower than the rows).
    let al = |name: &str| format!("__o{name}{i}");
    let (a, v, t, f, b, x) = (al("a"), al("v"), al("t"), al("f"), al("b"), al("x"));
    // Each alias defined once, where first read (both servers resolve them anywhere).
    let sorted = format!("(arraySort(groupArrayIf(({text}, __t), isNotNull({n}))) AS {a})");
    let vals = format!("(arrayMap(p -> p.1, {sorted}) AS {v})");
    let fwd = format!("(arrayEnumerateUniq({v}) AS {f})");
    let values = format!("(arrayFilter((x, u) -> u = 1, {vals}, {fwd}) AS {x})");
    let back = format!("(arrayEnumerateUniq(arrayReverse({v})) AS {b})");
    let counts = format!("arrayReverse(arrayFilter((x, u) -> u = 1, arrayReverse({f}), {back}))");
    let first_t = format!("arrayFilter((x, u) -> u = 1, (arrayMap(p -> p.2, {a}) AS {t}), {f})");
    let last_t = format!("arrayReverse(arrayFilter((x, u) -> u = 1, arrayReverse({t}), {b}))");
    format!(
        "if(length({values}) > {MAX_VALUES}, NULL, arrayStringConcat(arrayMap(\
         (v, c, f, l) -> concat(toString(length(v)), ':', v, toString(c), ',', toString(f), ',', \
         toString(l), ';'), {x}, {counts}, {first_t}, {last_t}), ''))"
    )
}

/// A group's values so far, by their text.
#[derive(Debug, Default)]
pub(super) struct Counts(HashMap<Vec<u8>, Run>);

impl Counts {
    /// Adds a partial row's values (`present`: its points have values; a null column then
    /// is one the shard did not send, over the bound).
    pub(super) fn merge(
        &mut self,
        encoded: Option<&str>,
        present: bool,
    ) -> Result<(), CombineError> {
        let encoded = match encoded {
            Some(s) => s,
            None if present => return Err(CombineError::ModeTooLarge),
            None => return Ok(()),
        };
        let bad = || CombineError::ModeEncoding(encoded.chars().take(80).collect());
        let mut rest = encoded.as_bytes();
        while !rest.is_empty() {
            let value = super::combine::next_value(&mut rest).ok_or_else(bad)?;
            let semi = rest.iter().position(|b| *b == b';').ok_or_else(bad)?;
            let numbers = std::str::from_utf8(&rest[..semi]).map_err(|_| bad())?;
            rest = &rest[semi + 1..];
            let mut it = numbers.split(',');
            let mut next = || it.next().ok_or_else(bad);
            let count: u64 = next()?.parse().map_err(|_| bad())?;
            let first: i64 = next()?.parse().map_err(|_| bad())?;
            let last: i64 = next()?.parse().map_err(|_| bad())?;
            let run = self.0.entry(value.to_vec()).or_insert((0, first, last));
            run.0 += count;
            run.1 = run.1.min(first);
            run.2 = run.2.max(last);
        }
        if self.0.len() > MAX_VALUES {
            return Err(CombineError::ModeTooLarge);
        }
        Ok(())
    }

    /// The group's cell for the reducer: its mode as the one point (null: no value).
    pub(super) fn cell(&self, kind: ColumnKind) -> Result<Value, CombineError> {
        let mut runs: Vec<(Value, Run)> = Vec::with_capacity(self.0.len());
        let mut zero: Option<(Value, Run)> = None;
        for (text, run) in &self.0 {
            let v = decode(text, kind)?;
            if v != Value::Float(0.0) {
                runs.push((v, *run));
                continue;
            }
            // `0.0` or `-0.0`: one run, its value its last point's.
            zero = Some(match zero {
                None => (v, *run),
                Some((w, (n, first, last))) => {
                    let shown = match last.cmp(&run.2) {
                        std::cmp::Ordering::Less => v,
                        std::cmp::Ordering::Greater => w,
                        std::cmp::Ordering::Equal => Value::Float(0.0),
                    };
                    (shown, (n + run.0, first.min(run.1), last.max(run.2)))
                }
            });
        }
        runs.extend(zero);
        let Some(picked) = pick(runs) else {
            return Ok(Value::Null);
        };
        Ok(cell(vec![(0, picked)]))
    }

    /// The group's cell for the `distinct` reducer: each value as one point at its first
    /// time, in time order (null: no value). `-0.0` and `0.0` stay two points: the reducer
    /// joins them, keeping the earlier's value.
    pub(super) fn distinct_cell(&self, kind: ColumnKind) -> Result<Value, CombineError> {
        let mut points = Vec::with_capacity(self.0.len());
        for (text, (_, first, _)) in &self.0 {
            points.push((*first, decode(text, kind)?));
        }
        if points.is_empty() {
            return Ok(Value::Null);
        }
        points.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| compare_values(&a.1, &b.1)));
        Ok(cell(points))
    }
}

/// A reducer's cell of `(time, value)` points, as `reduce::decode` reads the engine's.
fn cell(points: Vec<(i64, Value)>) -> Value {
    let items: Vec<serde_json::Value> = points
        .into_iter()
        .map(|(t, v)| {
            let v = match v {
                Value::Float(f) => serde_json::Value::from(f),
                // As text: an `Int64` past 2⁵³ stays exact (`rows::value` reads both).
                Value::Integer(i) => serde_json::Value::from(i.to_string()),
                Value::Unsigned(u) => serde_json::Value::from(u.to_string()),
                Value::Boolean(b) => serde_json::Value::from(b),
                Value::String(s) => serde_json::Value::from(&*s),
                Value::Null | Value::Time(_) => serde_json::Value::Null,
            };
            serde_json::json!([t, v])
        })
        .collect();
    Value::String(serde_json::Value::from(items).to_string().into())
}

/// A value's text as the partial statement writes it.
fn decode(text: &[u8], kind: ColumnKind) -> Result<Value, CombineError> {
    let bad = || CombineError::ModeEncoding(String::from_utf8_lossy(text).into_owned());
    let s = std::str::from_utf8(text).map_err(|_| bad())?;
    Ok(match kind {
        ColumnKind::Float => {
            // `reinterpretAsString` drops trailing zero bytes (`0.0` is empty).
            let mut bytes = [0u8; 8];
            if s.len() > 16 || s.len() % 2 != 0 {
                return Err(bad());
            }
            for (k, b) in bytes.iter_mut().take(s.len() / 2).enumerate() {
                *b = u8::from_str_radix(&s[2 * k..2 * k + 2], 16).map_err(|_| bad())?;
            }
            Value::Float(f64::from_le_bytes(bytes))
        }
        ColumnKind::Integer => Value::Integer(s.parse().map_err(|_| bad())?),
        ColumnKind::Unsigned => Value::Unsigned(s.parse().map_err(|_| bad())?),
        ColumnKind::Boolean => Value::Boolean(s != "0"),
        ColumnKind::String | ColumnKind::Tag => Value::String(s.into()),
    })
}

/// The value `selector::mode` picks among points with these values and runs.
fn pick(mut runs: Vec<(Value, Run)>) -> Option<Value> {
    if let Some((Value::Boolean(_), _)) = runs.first() {
        let (mut trues, mut all) = (0u64, 0u64);
        for (v, (n, _, _)) in &runs {
            all += n;
            if *v == Value::Boolean(true) {
                trues += n;
            }
        }
        return Some(Value::Boolean(trues * 2 >= all));
    }
    runs.sort_by(|a, b| compare_values(&a.0, &b.0));
    let mut runs = runs.into_iter();
    let (mut mode, (mut most, _, mut most_last)) = runs.next()?;
    for (v, (n, first, last)) in runs {
        // The first point of a run never takes the lead; its count must pass the leader's,
        // or reach it with its run starting no later than the leader's last point.
        if n > most || (n == most && n >= 2 && first <= most_last) {
            (mode, most, most_last) = (v, n, last);
        }
    }
    Some(mode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::influxql::selector;

    /// Points `(time, value)` as runs per value.
    fn runs(points: &[(i64, Value)]) -> Vec<(Value, Run)> {
        let mut out: Vec<(Value, Run)> = Vec::new();
        for (t, v) in points {
            match out.iter_mut().find(|(w, _)| w == v) {
                Some((_, r)) => *r = (r.0 + 1, r.1.min(*t), r.2.max(*t)),
                None => out.push((v.clone(), (1, *t, *t))),
            }
        }
        out
    }

    #[test]
    fn picks_what_the_reducer_picks_from_counts_and_times() {
        // A small generator (xorshift): values 0..5 at times 0..30, in time order.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..2_000 {
            let n = (next() % 12) as usize + 1;
            let mut points: Vec<(i64, Value)> = (0..n)
                .map(|_| ((next() % 30) as i64, Value::Integer((next() % 5) as i64)))
                .collect();
            points.sort_by_key(|p| p.0);
            let want = selector::mode(&points);
            assert_eq!(pick(runs(&points)), Some(want), "{points:?}");
            let bools: Vec<(i64, Value)> = points
                .iter()
                .map(|(t, v)| (*t, Value::Boolean(*v == Value::Integer(1))))
                .collect();
            assert_eq!(
                pick(runs(&bools)),
                Some(selector::mode(&bools)),
                "{bools:?}"
            );
        }
    }

    #[test]
    fn partial_text_merges_and_decodes() {
        let mut c = Counts::default();
        // 1.5 twice (t 10, 30) on one shard, once (t 5) on another; 2.0 three times.
        let f = |x: f64| {
            x.to_le_bytes()
                .iter()
                .map(|b| format!("{b:02X}"))
                .collect::<String>()
        };
        c.merge(
            Some(&format!("16:{}2,10,30;16:{}1,7,7;", f(1.5), f(2.0))),
            true,
        )
        .unwrap();
        c.merge(
            Some(&format!("16:{}1,5,5;16:{}2,1,3;", f(1.5), f(2.0))),
            true,
        )
        .unwrap();
        // `0.0` as `reinterpretAsString` writes it (no byte) and `-0.0`: one value, shown
        // as its last point's.
        let mut zero = Counts::default();
        zero.merge(Some("0:1,4,4;"), true).unwrap();
        assert_eq!(
            zero.cell(ColumnKind::Float).unwrap(),
            Value::String("[[0,0.0]]".into())
        );
        zero.merge(Some(&format!("16:{}1,2,6;", f(-0.0))), true)
            .unwrap();
        zero.merge(Some(&format!("16:{}1,9,9;", f(1.0))), true)
            .unwrap();
        assert_eq!(
            zero.cell(ColumnKind::Float).unwrap(),
            Value::String("[[0,-0.0]]".into())
        );
        // Three each: 2.0's run starts at 1, not after 1.5's last (30): 2.0 leads.
        assert_eq!(
            c.cell(ColumnKind::Float).unwrap(),
            Value::String("[[0,2.0]]".into())
        );
        assert!(matches!(
            c.merge(None, true),
            Err(CombineError::ModeTooLarge)
        ));
        assert_eq!(
            Counts::default().cell(ColumnKind::Float).unwrap(),
            Value::Null
        );
        // Each value at its first time, in time order (2.0 first seen at 1, 1.5 at 5).
        let mut d = Counts::default();
        d.merge(
            Some(&format!("16:{}2,10,30;16:{}1,7,7;", f(1.5), f(2.0))),
            true,
        )
        .unwrap();
        d.merge(
            Some(&format!("16:{}1,5,5;16:{}2,1,3;", f(1.5), f(2.0))),
            true,
        )
        .unwrap();
        assert_eq!(
            d.distinct_cell(ColumnKind::Float).unwrap(),
            Value::String("[[1,2.0],[5,1.5]]".into())
        );
    }
}
