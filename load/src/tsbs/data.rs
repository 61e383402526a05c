//! TSBS `cpu-only` data, generated here: one point of `cpu` per host every
//! 10 s, ten tags describing the host and ten integer `usage_*` fields.
//!
//! The shape is TSBS's (names, tags, ranges); the code and the numbers are
//! ours. Each host's tags are a function of its index (so a query generator
//! knows them without the data); each field is a bounded random walk in
//! `0..=100`, per host, from [`TsbsData::seed`], so the same knobs give the same
//! bytes. Bodies are line protocol in time order, every host at every
//! timestamp, the way a fleet of agents reports.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The one measurement.
pub const MEASUREMENT: &str = "cpu";
/// Time between a host's points, ns (TSBS's 10 s).
pub const INTERVAL_NS: i64 = 10_000_000_000;
/// The ten fields, in TSBS's order (queries take the first M).
pub const FIELDS: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];
/// Tag keys in the order a TSBS body writes them.
pub const TAG_KEYS: [&str; 10] = [
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
];

const REGIONS: [&str; 9] = [
    "us-east-1",
    "us-west-1",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-northeast-1",
    "sa-east-1",
];
const OSES: [&str; 3] = ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"];
const ARCHES: [&str; 2] = ["x64", "x86"];
const TEAMS: [&str; 4] = ["SF", "NYC", "LON", "CHI"];
const ENVIRONMENTS: [&str; 3] = ["production", "staging", "test"];
/// Largest step of a field's walk between two points.
const WALK_STEP: i64 = 5;

/// What data set to write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TsbsData {
    /// Hosts (= series).
    pub hosts: usize,
    /// First timestamp, ns since the epoch (whole seconds).
    pub start_ns: i64,
    /// One past the last timestamp, ns.
    pub end_ns: i64,
    /// Seed of the field values.
    pub seed: u64,
}

impl TsbsData {
    /// `hosts` hosts over `hours` hours from `start_ns`.
    pub fn new(hosts: usize, start_ns: i64, hours: u32, seed: u64) -> Result<TsbsData> {
        if hosts == 0 || hours == 0 {
            return Err(Error::InvalidArgument(
                "hosts and hours must be positive".into(),
            ));
        }
        if start_ns % 1_000_000_000 != 0 {
            return Err(Error::InvalidArgument(
                "start must be a whole second".into(),
            ));
        }
        Ok(TsbsData {
            hosts,
            start_ns,
            end_ns: start_ns + i64::from(hours) * 3_600_000_000_000,
            seed,
        })
    }

    /// Timestamps per host.
    pub fn ticks(&self) -> u64 {
        ((self.end_ns - self.start_ns) / INTERVAL_NS) as u64
    }

    /// Points in all.
    pub fn points(&self) -> u64 {
        self.ticks() * self.hosts as u64
    }
}

/// The tags of host `h`, as (key, value) in [`TAG_KEYS`] order.
pub fn host_tags(h: usize) -> [(&'static str, String); 10] {
    // Spread with a multiplicative hash so neighbouring hosts differ.
    let mix = (h as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16;
    let pick = |n: usize, salt: u32| ((mix >> (salt * 5)) as usize) % n;
    let region = REGIONS[pick(REGIONS.len(), 0)];
    let dc = ["a", "b", "c"][pick(3, 1)];
    [
        ("hostname", host_name(h)),
        ("region", region.into()),
        ("datacenter", format!("{region}{dc}")),
        ("rack", pick(100, 2).to_string()),
        ("os", OSES[pick(OSES.len(), 3)].into()),
        ("arch", ARCHES[pick(ARCHES.len(), 4)].into()),
        ("team", TEAMS[pick(TEAMS.len(), 5)].into()),
        ("service", pick(20, 6).to_string()),
        ("service_version", pick(2, 7).to_string()),
        ("service_environment", ENVIRONMENTS[pick(3, 8)].into()),
    ]
}

/// TSBS's host name: `host_<n>`.
pub fn host_name(h: usize) -> String {
    format!("host_{h}")
}

/// Writes the data set's line protocol, `ticks_per_body` timestamps of every
/// host per body, handing each body to `sink` in time order.
pub struct Bodies {
    data: TsbsData,
    ticks_per_body: u64,
    next_tick: u64,
    /// Each host's series key (`cpu,<tags>`), escaped once.
    keys: Vec<String>,
    /// Each host's fields' current values.
    walk: Vec<[i64; 10]>,
    rng: StdRng,
}

impl Bodies {
    /// Bodies of `points_per_body` points (a multiple of the hosts).
    pub fn new(data: &TsbsData, points_per_body: usize) -> Result<Bodies> {
        if points_per_body == 0 || !points_per_body.is_multiple_of(data.hosts) {
            return Err(Error::InvalidArgument(format!(
                "points per body ({points_per_body}) must be a positive multiple of the hosts ({})",
                data.hosts
            )));
        }
        let mut rng = StdRng::seed_from_u64(data.seed);
        let keys = (0..data.hosts)
            .map(|h| {
                let mut k = String::from(MEASUREMENT);
                for (key, value) in host_tags(h) {
                    // Names and values here never need escaping.
                    k.push(',');
                    k.push_str(key);
                    k.push('=');
                    k.push_str(&value);
                }
                k
            })
            .collect();
        let walk = (0..data.hosts)
            .map(|_| std::array::from_fn(|_| rng.gen_range(0..=100)))
            .collect();
        Ok(Bodies {
            data: data.clone(),
            ticks_per_body: (points_per_body / data.hosts) as u64,
            next_tick: 0,
            keys,
            walk,
            rng,
        })
    }
}

impl Iterator for Bodies {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        let ticks = self.data.ticks();
        if self.next_tick >= ticks {
            return None;
        }
        let last = (self.next_tick + self.ticks_per_body).min(ticks);
        let mut out = Vec::with_capacity((last - self.next_tick) as usize * self.data.hosts * 330);
        for tick in self.next_tick..last {
            let ts = self.data.start_ns + tick as i64 * INTERVAL_NS;
            for (key, values) in self.keys.iter().zip(self.walk.iter_mut()) {
                out.extend_from_slice(key.as_bytes());
                for (i, (name, v)) in FIELDS.iter().zip(values.iter_mut()).enumerate() {
                    *v = (*v + self.rng.gen_range(-WALK_STEP..=WALK_STEP)).clamp(0, 100);
                    out.push(if i == 0 { b' ' } else { b',' });
                    out.extend_from_slice(name.as_bytes());
                    out.push(b'=');
                    out.extend_from_slice(v.to_string().as_bytes());
                    out.push(b'i');
                }
                out.push(b' ');
                out.extend_from_slice(ts.to_string().as_bytes());
                out.push(b'\n');
            }
        }
        self.next_tick = last;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_of_200_hosts_is_1_728_000_points_in_whole_bodies() {
        let d = TsbsData::new(200, 1_451_606_400_000_000_000, 24, 1).unwrap();
        assert_eq!(d.ticks(), 8_640);
        assert_eq!(d.points(), 1_728_000);
        let bodies: Vec<_> = Bodies::new(&d, 48_000).unwrap().collect();
        assert_eq!(bodies.len(), 36);
        let lines: usize = bodies
            .iter()
            .map(|b| b.split(|&c| c == b'\n').count() - 1)
            .sum();
        assert_eq!(lines as u64, d.points());
        assert!(Bodies::new(&d, 48_001).is_err());
    }

    #[test]
    fn lines_have_ten_tags_ten_bounded_integer_fields_and_the_tick_time() {
        let d = TsbsData::new(3, 0, 1, 7).unwrap();
        let body = Bodies::new(&d, 3).unwrap().nth(1).unwrap();
        let text = String::from_utf8(body).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let parts: Vec<&str> = lines[2].split(' ').collect();
        assert_eq!(parts.len(), 3);
        assert!(parts[0].starts_with("cpu,hostname=host_2,region="));
        assert_eq!(parts[0].split(',').count(), 11);
        let fields: Vec<&str> = parts[1].split(',').collect();
        assert_eq!(fields.len(), 10);
        for (f, name) in fields.iter().zip(FIELDS) {
            let (k, v) = f.split_once('=').unwrap();
            assert_eq!(k, name);
            let n: i64 = v.strip_suffix('i').unwrap().parse().unwrap();
            assert!((0..=100).contains(&n), "{f}");
        }
        assert_eq!(parts[2], INTERVAL_NS.to_string());
    }

    #[test]
    fn same_seed_same_bytes() {
        let d = TsbsData::new(5, 0, 1, 3).unwrap();
        let a: Vec<_> = Bodies::new(&d, 50).unwrap().collect();
        let b: Vec<_> = Bodies::new(&d, 50).unwrap().collect();
        assert_eq!(a, b);
        let other = TsbsData { seed: 4, ..d };
        assert_ne!(a, Bodies::new(&other, 50).unwrap().collect::<Vec<_>>());
    }

    #[test]
    fn host_tags_are_stable_and_datacenters_sit_in_their_region() {
        assert_eq!(host_tags(9), host_tags(9));
        for h in 0..50 {
            let t = host_tags(h);
            assert!(t[2].1.starts_with(&t[1].1));
        }
    }
}
