//! TSBS's 15 `cpu-only` query types as InfluxQL, with windows and hosts drawn
//! from a seed inside the data set.
//!
//! The shapes are TSBS's (issue #23 lists them); times are RFC 3339 at whole
//! seconds, so a window rarely starts on an interval boundary and the first
//! and last `GROUP BY time` intervals are partial, as in TSBS.

use rand::rngs::StdRng;
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};

use super::data::{host_name, TsbsData, FIELDS};
use crate::error::{Error, Result};
use crate::host::rfc3339;

const HOUR_NS: i64 = 3_600_000_000_000;
const NS_PER_SEC: i64 = 1_000_000_000;

/// One query type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryType {
    /// `max` of the first `fields` fields of `hosts` hosts over `hours`, per minute.
    SingleGroupby {
        /// Fields (1 or 5).
        fields: usize,
        /// Hosts (1 or 8).
        hosts: usize,
        /// Hours (1 or 12).
        hours: i64,
    },
    /// `max` of all ten fields of `hosts` hosts over 8 h, per hour.
    CpuMaxAll {
        /// Hosts (1 or 8).
        hosts: usize,
    },
    /// `mean` of the first `fields` fields of every host over 12 h, per hour and host.
    DoubleGroupby {
        /// Fields (1, 5 or 10).
        fields: usize,
    },
    /// Every point with `usage_user > 90` over 12 h, of one host or of all.
    HighCpu {
        /// One host (`Some(1)`) or every host (`None`).
        hosts: Option<usize>,
    },
    /// Every host's last point.
    Lastpoint,
    /// The first five minutes' `max(usage_user)` before a random time.
    GroupbyOrderbyLimit,
}

/// The 15 types, in TSBS's order.
pub const ALL: [QueryType; 15] = [
    QueryType::SingleGroupby {
        fields: 1,
        hosts: 1,
        hours: 1,
    },
    QueryType::SingleGroupby {
        fields: 1,
        hosts: 1,
        hours: 12,
    },
    QueryType::SingleGroupby {
        fields: 1,
        hosts: 8,
        hours: 1,
    },
    QueryType::SingleGroupby {
        fields: 5,
        hosts: 1,
        hours: 1,
    },
    QueryType::SingleGroupby {
        fields: 5,
        hosts: 1,
        hours: 12,
    },
    QueryType::SingleGroupby {
        fields: 5,
        hosts: 8,
        hours: 1,
    },
    QueryType::CpuMaxAll { hosts: 1 },
    QueryType::CpuMaxAll { hosts: 8 },
    QueryType::DoubleGroupby { fields: 1 },
    QueryType::DoubleGroupby { fields: 5 },
    QueryType::DoubleGroupby { fields: 10 },
    QueryType::HighCpu { hosts: Some(1) },
    QueryType::HighCpu { hosts: None },
    QueryType::Lastpoint,
    QueryType::GroupbyOrderbyLimit,
];

impl QueryType {
    /// TSBS's name of the type.
    pub fn name(self) -> String {
        match self {
            QueryType::SingleGroupby {
                fields,
                hosts,
                hours,
            } => format!("single-groupby-{fields}-{hosts}-{hours}"),
            QueryType::CpuMaxAll { hosts } => format!("cpu-max-all-{hosts}"),
            QueryType::DoubleGroupby { fields: 10 } => "double-groupby-all".into(),
            QueryType::DoubleGroupby { fields } => format!("double-groupby-{fields}"),
            QueryType::HighCpu { hosts: Some(_) } => "high-cpu-1".into(),
            QueryType::HighCpu { hosts: None } => "high-cpu-all".into(),
            QueryType::Lastpoint => "lastpoint".into(),
            QueryType::GroupbyOrderbyLimit => "groupby-orderby-limit".into(),
        }
    }

    /// The type named `name`.
    pub fn parse(name: &str) -> Result<QueryType> {
        ALL.into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| Error::InvalidArgument(format!("no TSBS query type {name:?}")))
    }

    /// One query of this type, drawing its window and hosts from `rng`.
    pub fn draw(self, data: &TsbsData, rng: &mut StdRng) -> Result<String> {
        Ok(match self {
            QueryType::SingleGroupby {
                fields,
                hosts,
                hours,
            } => {
                let (from, to) = window(data, hours * HOUR_NS, rng)?;
                format!(
                    "SELECT {} from cpu where {} and time >= '{from}' and time < '{to}' group by time(1m)",
                    calls("max", fields),
                    host_condition(data, hosts, rng)?
                )
            }
            QueryType::CpuMaxAll { hosts } => {
                let (from, to) = window(data, 8 * HOUR_NS, rng)?;
                format!(
                    "SELECT {} from cpu where {} and time >= '{from}' and time < '{to}' group by time(1h)",
                    calls("max", FIELDS.len()),
                    host_condition(data, hosts, rng)?
                )
            }
            QueryType::DoubleGroupby { fields } => {
                let (from, to) = window(data, 12 * HOUR_NS, rng)?;
                format!(
                    "SELECT {} from cpu where time >= '{from}' and time < '{to}' group by time(1h),hostname",
                    calls("mean", fields)
                )
            }
            QueryType::HighCpu { hosts } => {
                let (from, to) = window(data, 12 * HOUR_NS, rng)?;
                let hosts = match hosts {
                    Some(n) => format!(" and {}", host_condition(data, n, rng)?),
                    None => String::new(),
                };
                format!(
                    "SELECT * from cpu where usage_user > 90.0{hosts} and time >= '{from}' and time < '{to}'"
                )
            }
            QueryType::Lastpoint => {
                "SELECT * from cpu group by \"hostname\" order by time desc limit 1".into()
            }
            QueryType::GroupbyOrderbyLimit => {
                let (_, to) = window(data, HOUR_NS, rng)?;
                format!(
                    "SELECT max(usage_user) from cpu WHERE time < '{to}' group by time(1m) limit 5"
                )
            }
        })
    }
}

/// `n` queries of `t`, from `seed` (the same seed, data set and type give
/// the same queries).
pub fn queries(t: QueryType, data: &TsbsData, n: usize, seed: u64) -> Result<Vec<String>> {
    let salt = t
        .name()
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(0x100_0000_01b3) ^ u64::from(b));
    let mut rng = StdRng::seed_from_u64(seed ^ salt);
    (0..n).map(|_| t.draw(data, &mut rng)).collect()
}

fn calls(function: &str, fields: usize) -> String {
    FIELDS[..fields]
        .iter()
        .map(|f| format!("{function}({f})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `(hostname = 'host_a' or hostname = 'host_b' …)`, `n` distinct hosts.
fn host_condition(data: &TsbsData, n: usize, rng: &mut StdRng) -> Result<String> {
    if n > data.hosts {
        return Err(Error::InvalidArgument(format!(
            "a query over {n} hosts needs at least {n} hosts in the data"
        )));
    }
    let hosts = sample(rng, data.hosts, n)
        .into_iter()
        .map(|h| format!("hostname = '{}'", host_name(h)))
        .collect::<Vec<_>>();
    Ok(format!("({})", hosts.join(" or ")))
}

/// A random `[from, to)` of length `len` inside the data, at whole seconds, RFC 3339.
fn window(data: &TsbsData, len: i64, rng: &mut StdRng) -> Result<(String, String)> {
    let last_start = (data.end_ns - len - data.start_ns) / NS_PER_SEC;
    if last_start < 0 {
        return Err(Error::InvalidArgument(format!(
            "the data covers less than a {} h window",
            len / HOUR_NS
        )));
    }
    let from = data.start_ns / NS_PER_SEC + rng.gen_range(0..=last_start);
    Ok((rfc3339(from), rfc3339(from + len / NS_PER_SEC)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> TsbsData {
        TsbsData::new(200, 1_451_606_400_000_000_000, 24, 1).unwrap()
    }

    #[test]
    fn fifteen_types_with_tsbs_names_round_trip() {
        let names: Vec<String> = ALL.iter().map(|t| t.name()).collect();
        assert_eq!(names.len(), 15);
        assert!(names.contains(&"single-groupby-5-8-1".to_string()));
        assert!(names.contains(&"double-groupby-all".to_string()));
        for n in &names {
            assert_eq!(QueryType::parse(n).unwrap().name(), *n);
        }
        assert!(QueryType::parse("nope").is_err());
    }

    #[test]
    fn shapes_match_tsbs() {
        let d = data();
        let q = |name: &str| queries(QueryType::parse(name).unwrap(), &d, 1, 9).unwrap()[0].clone();
        let s = q("single-groupby-5-8-1");
        assert!(s.starts_with("SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) from cpu where (hostname = 'host_"), "{s}");
        assert_eq!(s.matches("hostname = ").count(), 8);
        assert!(s.ends_with("group by time(1m)"));
        let c = q("cpu-max-all-1");
        assert_eq!(c.matches("max(").count(), 10);
        assert!(c.ends_with("group by time(1h)"));
        assert!(q("double-groupby-all").ends_with("group by time(1h),hostname"));
        assert_eq!(q("double-groupby-5").matches("mean(").count(), 5);
        assert!(q("high-cpu-all")
            .starts_with("SELECT * from cpu where usage_user > 90.0 and time >= '"));
        assert!(q("high-cpu-1").contains("usage_user > 90.0 and (hostname = 'host_"));
        assert!(q("groupby-orderby-limit").ends_with("group by time(1m) limit 5"));
    }

    #[test]
    fn windows_lie_inside_the_data_and_the_seed_fixes_them() {
        let d = data();
        let t = QueryType::parse("single-groupby-1-1-12").unwrap();
        let a = queries(t, &d, 50, 7).unwrap();
        assert_eq!(a, queries(t, &d, 50, 7).unwrap());
        assert_ne!(a, queries(t, &d, 50, 8).unwrap());
        for q in &a {
            let from = q
                .split("time >= '")
                .nth(1)
                .unwrap()
                .split('\'')
                .next()
                .unwrap();
            let to = q
                .split("time < '")
                .nth(1)
                .unwrap()
                .split('\'')
                .next()
                .unwrap();
            assert!(
                from.as_bytes() >= b"2016-01-01T00:00:00Z".as_slice(),
                "{from}"
            );
            assert!(to.as_bytes() <= b"2016-01-02T00:00:00Z".as_slice(), "{to}");
        }
        let short = TsbsData::new(10, 0, 1, 1).unwrap();
        assert!(queries(t, &short, 1, 1).is_err());
        let few = TsbsData::new(4, 0, 24, 1).unwrap();
        assert!(queries(QueryType::parse("cpu-max-all-8").unwrap(), &few, 1, 1).is_err());
    }
}
