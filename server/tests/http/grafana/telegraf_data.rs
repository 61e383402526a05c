//! An hour of host metrics as Telegraf 1.37 writes them: `inputs.cpu`
//! (percpu and totalcpu), `inputs.mem`, `inputs.disk`, `inputs.net` and
//! `inputs.system` (its three metrics per gather: loads, uptime,
//! uptime_format), one gather every 10 s, integer fields as `i` (Telegraf's
//! default without `influx_uint_support`), tags sorted, nanosecond times.
//!
//! The values are deterministic and vary from gather to gather, so that
//! averages, last values and rates are checked against numbers, not shapes.
//! Edge cases a host dashboard meets: host names that need regex escaping or
//! are prefixes of others (`web.2`/`webx2`, `web-1`/`web-10`), a gap in one
//! host's `mem` (NULL buckets under `fill(null)`), a counter reset in one
//! interface's `bytes_recv` (no negative rate under `non_negative_derivative`),
//! and `lo`, which the network panel filters out.

/// The hosts, in the order InfluxDB sorts them.
pub(super) const HOSTS: [&str; 4] = ["web-1", "web-10", "web.2", "webx2"];
/// Gathers (one per 10 s: an hour).
pub(super) const GATHERS: i64 = 360;
/// Telegraf's `[agent] interval` in deploy/telegraf/telegraf.conf.
pub(super) const GATHER_MS: i64 = 10_000;

/// A field value, typed as the line protocol writes it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Val {
    Float(f64),
    Int(i64),
    Str(String),
}

impl Val {
    /// The number, for numeric fields.
    pub(super) fn number(&self) -> Option<f64> {
        match self {
            Val::Float(f) => Some(*f),
            Val::Int(i) => Some(*i as f64),
            Val::Str(_) => None,
        }
    }
}

/// One written line.
#[derive(Debug, Clone)]
pub(super) struct Point {
    pub(super) measurement: &'static str,
    /// Sorted by key, as Telegraf sends them.
    pub(super) tags: Vec<(&'static str, String)>,
    pub(super) time_ms: i64,
    pub(super) fields: Vec<(&'static str, Val)>,
}

impl Point {
    /// The tag's value; `""` when the point does not have it (InfluxQL's view).
    pub(super) fn tag(&self, key: &str) -> &str {
        self.tags
            .iter()
            .find(|(k, _)| *k == key)
            .map_or("", |(_, v)| v.as_str())
    }

    /// The field's value, if the point has it.
    pub(super) fn field(&self, name: &str) -> Option<&Val> {
        self.fields.iter().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// The point in line protocol (nanosecond time).
    pub(super) fn line(&self) -> String {
        let mut s = self.measurement.to_string();
        for (k, v) in &self.tags {
            s.push_str(&format!(
                ",{k}={}",
                v.replace(' ', "\\ ").replace(',', "\\,")
            ));
        }
        let fields: Vec<String> = self
            .fields
            .iter()
            .map(|(k, v)| match v {
                Val::Float(f) => format!("{k}={f}"),
                Val::Int(i) => format!("{k}={i}i"),
                Val::Str(t) => format!("{k}=\"{}\"", t.replace('\\', "\\\\").replace('"', "\\\"")),
            })
            .collect();
        format!("{s} {} {}", fields.join(","), self.time_ms * 1_000_000)
    }
}

/// A deterministic quarter-step value in `[0, span)`, different per series and gather.
fn wave(a: i64, b: i64, step: i64, span: i64) -> f64 {
    ((a * 31 + b * 17 + step * 7 + (step * step) % 13) % (span * 4)) as f64 / 4.0
}

const GIB: i64 = 1 << 30;

/// Every point, gathers from `t0_ms` on, in write order.
pub(super) fn points(t0_ms: i64) -> Vec<Point> {
    let mut out = Vec::new();
    for step in 0..GATHERS {
        let t = t0_ms + step * GATHER_MS;
        for (h, host) in HOSTS.iter().enumerate() {
            gather(&mut out, h as i64, host, step, t);
        }
    }
    out
}

/// One gather of host number `h` named `host`: gather `step`, at `t` ms (the dashboard
/// benchmark, `chingest-load dashboard`, gathers any number of hosts with it).
pub(super) fn gather(out: &mut Vec<Point>, h: i64, host: &str, step: i64, t: i64) {
    cpu(out, h, host, step, t);
    mem(out, h, host, step, t);
    disk(out, h, host, step, t);
    net(out, h, host, step, t);
    system(out, h, host, step, t);
}

fn cpu(out: &mut Vec<Point>, h: i64, host: &str, step: i64, t: i64) {
    for (c, cpu) in ["cpu-total", "cpu0", "cpu1"].into_iter().enumerate() {
        let c = c as i64;
        let user = 2.0 + wave(h, c, step, 30);
        let system = 1.0 + wave(h, c + 5, step, 15);
        let iowait = wave(h, c + 9, step, 2);
        let mut fields = vec![
            ("usage_guest", Val::Float(0.0)),
            ("usage_guest_nice", Val::Float(0.0)),
            ("usage_idle", Val::Float(100.0 - user - system - iowait)),
            ("usage_iowait", Val::Float(iowait)),
            ("usage_irq", Val::Float(0.0)),
            ("usage_nice", Val::Float(0.0)),
            ("usage_softirq", Val::Float(0.0)),
            ("usage_steal", Val::Float(0.0)),
            ("usage_system", Val::Float(system)),
            ("usage_user", Val::Float(user)),
        ];
        fields.sort_by_key(|(k, _)| *k);
        out.push(Point {
            measurement: "cpu",
            tags: vec![("cpu", cpu.to_string()), ("host", host.to_string())],
            time_ms: t,
            fields,
        });
    }
}

fn mem(out: &mut Vec<Point>, h: i64, host: &str, step: i64, t: i64) {
    // web-1 did not report for 70 s (a restart): empty buckets.
    if h == 0 && (300..307).contains(&step) {
        return;
    }
    let total = (h + 1) * 4 * GIB;
    let used = (total as f64 * (20.0 + wave(h, 0, step, 50)) / 100.0) as i64;
    let cached = total / 8;
    let free = total - used - cached;
    out.push(Point {
        measurement: "mem",
        tags: vec![("host", host.to_string())],
        time_ms: t,
        fields: vec![
            ("available", Val::Int(total - used)),
            (
                "available_percent",
                Val::Float((total - used) as f64 / total as f64 * 100.0),
            ),
            ("buffered", Val::Int(0)),
            ("cached", Val::Int(cached)),
            ("free", Val::Int(free)),
            ("total", Val::Int(total)),
            ("used", Val::Int(used)),
            (
                "used_percent",
                Val::Float(used as f64 / total as f64 * 100.0),
            ),
        ],
    });
}

fn disk(out: &mut Vec<Point>, h: i64, host: &str, step: i64, t: i64) {
    for (p, (path, device)) in [("/", "sda1"), ("/var/lib/chingest", "sdb1")]
        .into_iter()
        .enumerate()
    {
        let p = p as i64;
        let total = (100 + 50 * p + 10 * h) * GIB;
        let used = total / 10 + step * (h + 1) * (p + 1) * 7_000_000;
        let free = total - used;
        let inodes_used = 100_000 + step * 10;
        out.push(Point {
            measurement: "disk",
            tags: vec![
                ("device", device.to_string()),
                ("fstype", "ext4".to_string()),
                ("host", host.to_string()),
                ("mode", "rw".to_string()),
                ("path", path.to_string()),
            ],
            time_ms: t,
            fields: vec![
                ("free", Val::Int(free)),
                ("inodes_free", Val::Int(6_000_000 - inodes_used)),
                ("inodes_total", Val::Int(6_000_000)),
                ("inodes_used", Val::Int(inodes_used)),
                (
                    "inodes_used_percent",
                    Val::Float(inodes_used as f64 / 60_000.0),
                ),
                ("total", Val::Int(total)),
                ("used", Val::Int(used)),
                (
                    "used_percent",
                    Val::Float(used as f64 / (used + free) as f64 * 100.0),
                ),
            ],
        });
    }
}

fn net(out: &mut Vec<Point>, h: i64, host: &str, step: i64, t: i64) {
    for (i, iface) in ["eth0", "eth1", "lo"].into_iter().enumerate() {
        let i = i as i64;
        // web.2's eth0 counters restart at gather 330 (driver reload).
        let recv = if h == 2 && i == 0 && step >= 330 {
            (step - 330) * 2_000
        } else {
            1_000_000 * (h + 1) + step * step * 7 * (i + 1) + step * 1_500 * (h + 1)
        };
        let sent = 500_000 + step * 800 * (i + 1) + step * step * (h + 1);
        out.push(Point {
            measurement: "net",
            tags: vec![("host", host.to_string()), ("interface", iface.to_string())],
            time_ms: t,
            fields: vec![
                ("bytes_recv", Val::Int(recv)),
                ("bytes_sent", Val::Int(sent)),
                ("drop_in", Val::Int(0)),
                ("drop_out", Val::Int(0)),
                ("err_in", Val::Int(0)),
                ("err_out", Val::Int(0)),
                ("packets_recv", Val::Int(recv / 1_000)),
                ("packets_sent", Val::Int(sent / 1_000)),
            ],
        });
    }
}

fn system(out: &mut Vec<Point>, h: i64, host: &str, step: i64, t: i64) {
    let tags = vec![("host", host.to_string())];
    let uptime = 86_400 * h + 3_600 + step * 10;
    // Telegraf's system input sends three metrics per gather, same series and time.
    out.push(Point {
        measurement: "system",
        tags: tags.clone(),
        time_ms: t,
        fields: vec![
            ("load1", Val::Float(wave(h, 1, step, 4))),
            ("load15", Val::Float(wave(h, 3, step, 2))),
            ("load5", Val::Float(wave(h, 2, step, 3))),
            ("n_cpus", Val::Int(2 * (h + 1))),
            ("n_unique_users", Val::Int(h)),
            ("n_users", Val::Int(h + 1)),
        ],
    });
    out.push(Point {
        measurement: "system",
        tags: tags.clone(),
        time_ms: t,
        fields: vec![("uptime", Val::Int(uptime))],
    });
    out.push(Point {
        measurement: "system",
        tags,
        time_ms: t,
        fields: vec![(
            "uptime_format",
            Val::Str(format!(
                "{} days, {:2}:{:02}",
                uptime / 86_400,
                uptime % 86_400 / 3_600,
                uptime % 3_600 / 60
            )),
        )],
    });
}
