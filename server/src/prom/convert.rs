//! Prometheus remote write and read in InfluxDB 1.8's mapping: a metric is a measurement (its
//! `__name__`; `prom_metric_not_specified` without one), its other labels are tags, each
//! sample is the float field `value` at its millisecond time. NaN and ±Inf cannot be stored
//! (InfluxDB drops them too; Prometheus' staleness markers are NaN).

use std::fmt::Write as _;

use influxql::{quote_ident, quote_string};

use super::proto::{LabelMatcher, Query, WriteRequest};

/// The measurement of a series written without `__name__`.
pub const NO_NAME: &str = "prom_metric_not_specified";
/// The label naming the metric.
pub const NAME_LABEL: &str = "__name__";
/// The field every sample is written to.
pub const FIELD: &str = "value";

/// A write request as ingest's columnar msgpack body (one map per series that has a sample
/// to keep; times in ms), the samples in it, and the samples dropped (NaN, ±Inf).
pub fn write_body(req: &WriteRequest) -> (Vec<u8>, u64, u64) {
    let mut out = Vec::new();
    let mut kept_series = Vec::new();
    let (mut kept, mut dropped) = (0u64, 0u64);
    for ts in &req.timeseries {
        let n = ts.samples.iter().filter(|s| s.value.is_finite()).count();
        dropped += (ts.samples.len() - n) as u64;
        if n > 0 {
            kept += n as u64;
            kept_series.push((ts, n));
        }
    }
    // Writes to a Vec cannot fail.
    let _ = rmp::encode::write_array_len(&mut out, kept_series.len() as u32);
    for (ts, n) in kept_series {
        let name = ts
            .labels
            .iter()
            .find(|l| l.name == NAME_LABEL)
            .map_or(NO_NAME, |l| l.value.as_str());
        // An empty label value is the label's absence in Prometheus.
        let tags: Vec<_> = ts
            .labels
            .iter()
            .filter(|l| l.name != NAME_LABEL && !l.value.is_empty())
            .collect();
        let _ = rmp::encode::write_map_len(&mut out, 5);
        let _ = rmp::encode::write_str(&mut out, "measurement");
        let _ = rmp::encode::write_str(&mut out, name);
        let _ = rmp::encode::write_str(&mut out, "tags");
        let _ = rmp::encode::write_map_len(&mut out, tags.len() as u32);
        for l in tags {
            let _ = rmp::encode::write_str(&mut out, &l.name);
            let _ = rmp::encode::write_str(&mut out, &l.value);
        }
        let finite = || ts.samples.iter().filter(|s| s.value.is_finite());
        let _ = rmp::encode::write_str(&mut out, "timestamps");
        let _ = rmp::encode::write_array_len(&mut out, n as u32);
        for s in finite() {
            let _ = rmp::encode::write_sint(&mut out, s.timestamp);
        }
        let _ = rmp::encode::write_str(&mut out, "field");
        let _ = rmp::encode::write_str(&mut out, FIELD);
        let _ = rmp::encode::write_str(&mut out, "values");
        let _ = rmp::encode::write_array_len(&mut out, n as u32);
        for s in finite() {
            let _ = rmp::encode::write_f64(&mut out, s.value);
        }
    }
    (out, kept, dropped)
}

/// What a read query asks of one database: which measurements (`__name__`'s matcher, as a
/// test of a name) and the InfluxQL `WHERE` over their tags and time.
pub struct ReadPlan {
    /// The matcher of `__name__`, if any.
    name: Option<LabelMatcher>,
    /// `time >= … AND time <= … [AND <tag conditions>]`.
    pub condition: String,
}

/// Matcher types.
const EQ: i32 = 0;
const NEQ: i32 = 1;
const RE: i32 = 2;
const NRE: i32 = 3;

impl ReadPlan {
    /// The plan of `q`; an error text for a matcher type chingest does not know.
    pub fn new(q: &Query) -> Result<ReadPlan, String> {
        let ms_to_ns = |ms: i64| ms.saturating_mul(1_000_000);
        let mut condition = format!(
            "time >= {} AND time <= {}",
            ms_to_ns(q.start_timestamp_ms),
            ms_to_ns(q.end_timestamp_ms)
        );
        let mut name = None;
        for m in &q.matchers {
            if !(EQ..=NRE).contains(&m.r#type) {
                return Err(format!("unknown label matcher type {}", m.r#type));
            }
            if m.name == NAME_LABEL {
                name = Some(m.clone());
                continue;
            }
            let key = quote_ident(&m.name);
            let _ = match m.r#type {
                EQ => write!(condition, " AND {key} = {}", quote_string(&m.value)),
                NEQ => write!(condition, " AND {key} != {}", quote_string(&m.value)),
                RE => write!(condition, " AND {key} =~ {}", regex_literal(&m.value)),
                _ => write!(condition, " AND {key} !~ {}", regex_literal(&m.value)),
            };
        }
        Ok(ReadPlan { name, condition })
    }

    /// Whether measurement `m` is asked for.
    pub fn wants(&self, m: &str) -> Result<bool, String> {
        let Some(matcher) = &self.name else {
            return Ok(true);
        };
        let re = || {
            regex::Regex::new(&format!("^(?:{})$", matcher.value))
                .map_err(|e| format!("invalid regex {:?}: {e}", matcher.value))
        };
        Ok(match matcher.r#type {
            EQ => m == matcher.value,
            NEQ => m != matcher.value,
            RE => re()?.is_match(m),
            _ => !re()?.is_match(m),
        })
    }
}

/// A Prometheus regex (anchored at both ends) as an InfluxQL regex literal.
fn regex_literal(re: &str) -> String {
    format!("/^(?:{})$/", re.replace('/', "\\/"))
}

#[cfg(test)]
mod tests {
    use super::super::proto::{Label, Sample, TimeSeries};
    use super::*;

    fn label(name: &str, value: &str) -> Label {
        Label {
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn series_become_columnar_msgpack_that_ingest_parses_and_nan_is_dropped() {
        let req = WriteRequest {
            timeseries: vec![
                TimeSeries {
                    labels: vec![
                        label("__name__", "up"),
                        label("job", "a b,c=d"),
                        label("empty", ""),
                    ],
                    samples: vec![
                        Sample {
                            value: 1.0,
                            timestamp: 1_000,
                        },
                        Sample {
                            value: f64::NAN,
                            timestamp: 2_000,
                        },
                        Sample {
                            value: 0.5,
                            timestamp: 3_000,
                        },
                    ],
                },
                TimeSeries {
                    labels: vec![label("x", "y")],
                    samples: vec![Sample {
                        value: f64::INFINITY,
                        timestamp: 1,
                    }],
                },
            ],
        };
        let (body, kept, dropped) = write_body(&req);
        assert_eq!((kept, dropped), (2, 2));
        let batch = ingest::msgpack::parse_columnar(&body, ingest::Precision::Milliseconds, 0)
            .expect("ingest parses it");
        assert_eq!(batch.points().len(), 2);
    }

    #[test]
    fn matchers_become_tag_conditions_and_name_tests() {
        let q = Query {
            start_timestamp_ms: 1,
            end_timestamp_ms: 2,
            matchers: vec![
                LabelMatcher {
                    r#type: RE,
                    name: "__name__".into(),
                    value: "node_.*".into(),
                },
                LabelMatcher {
                    r#type: EQ,
                    name: "job".into(),
                    value: "it's".into(),
                },
                LabelMatcher {
                    r#type: NRE,
                    name: "path".into(),
                    value: "/var/.*".into(),
                },
            ],
        };
        let p = ReadPlan::new(&q).unwrap();
        assert_eq!(
            p.condition,
            "time >= 1000000 AND time <= 2000000 AND job = 'it\\'s' AND path !~ /^(?:\\/var\\/.*)$/"
        );
        assert!(p.wants("node_cpu").unwrap());
        assert!(!p.wants("xnode_cpu").unwrap());
        influxql::parse_statement(&format!(
            "SELECT value FROM m WHERE {} GROUP BY *",
            p.condition
        ))
        .expect("it parses");
    }
}
