//! Payload generation: request bodies encoded ahead of time, so the client
//! never encodes during a run and its cost does not pollute the measurement.
//!
//! # Data model
//!
//! A series is one (measurement, host) pair: `measurements × hosts` series in
//! all. Every point carries the tags `host=host-NNNNN` and `region=<one of four>`
//! (the region is a function of the host, so it adds no cardinality) and the
//! first `fields` fields of its measurement's field list; the field *types*
//! follow one fixed order for every measurement: float, float, integer, bool,
//! string, float, integer, float — so the default of 6 fields mixes all four
//! types and every (measurement, field) pair always has one type.
//!
//! Timestamps are nanoseconds: `start_ns + tick × step_ns`. Row formats
//! (line protocol and msgpack row) walk the series round-robin: global point
//! `g = file × points_per_file + j` belongs to series `g mod series` at tick
//! `g div series`, so every (series, time) pair is unique across files.
//!
//! # Formats
//!
//! * `lp`: InfluxDB line protocol, one point per line, `\n`-terminated,
//!   `Content-Type: text/plain; charset=utf-8`.
//! * `msgpack-row`: `Content-Type: application/msgpack`; the body is one array
//!   of maps `{"measurement": str, "tags": {str: str}, "fields": {str: value},
//!   "timestamp": int64}`. Floats are float64, integers are always encoded as
//!   msgpack int64 (marker `0xd3`, never a uint, so the type is unambiguous),
//!   booleans and strings as themselves.
//! * `msgpack-columnar`: `Content-Type: application/vnd.chingest.columnar-msgpack.v1`;
//!   the body is **one series**: a map `{"measurement": str, "tags": {str: str},
//!   "timestamps": [int64; n], "fields": {name: [value; n]}}`, every array of
//!   the same length `n = points_per_file`. File `i` holds series `i mod series`
//!   at ticks `(i div series) × n .. + n`.
//!
//! Any format may be gzip-compressed (`Content-Encoding: gzip`).
//!
//! Generation is deterministic: each file draws its values from its own
//! `StdRng::seed_from_u64(seed ⊕ file-mix)`, so the same knobs and seed give the
//! same bytes on every machine (for this version of `rand`).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The manifest's file name inside a payload directory.
pub const MANIFEST: &str = "manifest.json";

/// Caps that keep a typo from filling the disk or memory.
const MAX_FILES: usize = 100_000;
const MAX_POINTS_PER_FILE: usize = 5_000_000;
const MAX_HOSTS: usize = 10_000_000;
const MAX_FIELDS: usize = 8;

/// A request body format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// InfluxDB line protocol.
    Lp,
    /// An array of point maps (`application/msgpack`).
    MsgpackRow,
    /// One series as column arrays (`application/vnd.chingest.columnar-msgpack.v1`).
    MsgpackColumnar,
}

impl Format {
    /// The `Content-Type` header value a server expects for this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Lp => "text/plain; charset=utf-8",
            Format::MsgpackRow => "application/msgpack",
            Format::MsgpackColumnar => "application/vnd.chingest.columnar-msgpack.v1",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Format::Lp => "lp",
            Format::MsgpackRow | Format::MsgpackColumnar => "msgpack",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "lp" | "line-protocol" => Ok(Format::Lp),
            "msgpack-row" | "msgpack" => Ok(Format::MsgpackRow),
            "msgpack-columnar" | "columnar" => Ok(Format::MsgpackColumnar),
            other => Err(Error::InvalidArgument(format!(
                "unknown format {other:?} (expected lp, msgpack-row or msgpack-columnar)"
            ))),
        }
    }
}

/// What to generate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenConfig {
    /// Body format. Default: line protocol.
    pub format: Format,
    /// Gzip each body. Default: false.
    pub gzip: bool,
    /// Number of payload files. Default: 8.
    pub files: usize,
    /// Points per file, i.e. per request. Default: 50,000.
    pub points_per_file: usize,
    /// Measurement names. Default: cpu, mem, disk, net.
    pub measurements: Vec<String>,
    /// Hosts per measurement (series cardinality is `measurements × hosts`). Default: 1,000.
    pub hosts: usize,
    /// Fields per point, 1..=8. Default: 6.
    pub fields: usize,
    /// First timestamp, ns since the epoch. Default: 2026-01-01T00:00:00Z.
    pub start_ns: i64,
    /// Time between a series' consecutive points, ns. Default: 10 s.
    pub step_ns: i64,
    /// Random seed. Default: 42.
    pub seed: u64,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            format: Format::Lp,
            gzip: false,
            files: 8,
            points_per_file: 50_000,
            measurements: ["cpu", "mem", "disk", "net"].map(String::from).to_vec(),
            hosts: 1_000,
            fields: 6,
            start_ns: 1_767_225_600_000_000_000,
            step_ns: 10_000_000_000,
            seed: 42,
        }
    }
}

impl GenConfig {
    /// Checks every knob against its range.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        if self.files == 0 || self.files > MAX_FILES {
            return bad(format!("files must be 1..={MAX_FILES}"));
        }
        if self.points_per_file == 0 || self.points_per_file > MAX_POINTS_PER_FILE {
            return bad(format!("points per file must be 1..={MAX_POINTS_PER_FILE}"));
        }
        if self.hosts == 0 || self.hosts > MAX_HOSTS {
            return bad(format!("hosts must be 1..={MAX_HOSTS}"));
        }
        if self.fields == 0 || self.fields > MAX_FIELDS {
            return bad(format!("fields must be 1..={MAX_FIELDS}"));
        }
        if self.step_ns <= 0 {
            return bad("step must be positive".into());
        }
        if self.measurements.is_empty() {
            return bad("at least one measurement is needed".into());
        }
        for m in &self.measurements {
            // Names are written unescaped, so keep them to a safe alphabet.
            if m.is_empty()
                || !m
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
            {
                return bad(format!(
                    "measurement {m:?}: use ASCII letters, digits, '_', '-', '.'"
                ));
            }
        }
        // The last timestamp must fit in i64.
        let total = (self.files as u128) * (self.points_per_file as u128);
        let max_ts = self.start_ns as i128 + (total as i128) * (self.step_ns as i128);
        if max_ts > i64::MAX as i128 {
            return bad("start + points × step overflows i64 nanoseconds".into());
        }
        Ok(())
    }

    fn series(&self) -> u64 {
        (self.measurements.len() as u64) * (self.hosts as u64)
    }
}

/// One payload file as listed in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// File name inside the payload directory.
    pub name: String,
    /// Points in this body.
    pub points: u64,
    /// Body size on disk (after gzip, if any).
    pub bytes: u64,
}

/// `manifest.json`: how to send the payload files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Manifest layout version (1).
    pub version: u32,
    /// Body format.
    pub format: Format,
    /// `Content-Type` to send.
    pub content_type: String,
    /// `Content-Encoding` to send, if any (`gzip`).
    pub content_encoding: Option<String>,
    /// Timestamp precision of the bodies (always `ns`: send no `precision` or `precision=ns`).
    pub precision: String,
    /// Points per file requested (the files list has the exact counts).
    pub points_per_file: u64,
    /// Series cardinality (`measurements × hosts`).
    pub series: u64,
    /// The knobs the files were generated with.
    pub config: GenConfig,
    /// The files, in sending order.
    pub files: Vec<ManifestFile>,
}

impl Manifest {
    /// Reads `DIR/manifest.json`.
    pub fn load(dir: &Path) -> Result<Manifest> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        serde_json::from_slice(&text).map_err(|source| Error::Json { path, source })
    }
}

#[derive(Clone, Copy)]
enum FieldType {
    Float,
    Integer,
    Bool,
    Str,
}

/// The fixed type order shared by all measurements.
const FIELD_TYPES: [FieldType; MAX_FIELDS] = [
    FieldType::Float,
    FieldType::Float,
    FieldType::Integer,
    FieldType::Bool,
    FieldType::Str,
    FieldType::Float,
    FieldType::Integer,
    FieldType::Float,
];

const REGIONS: [&str; 4] = ["us-east-1", "us-west-2", "eu-west-1", "ap-south-1"];
const STRINGS: [&str; 4] = ["ok", "degraded", "maintenance", "performance"];

fn field_names(measurement: &str) -> [&'static str; MAX_FIELDS] {
    match measurement {
        "cpu" => [
            "usage_user",
            "usage_system",
            "procs",
            "throttled",
            "governor",
            "usage_idle",
            "ctx_switches",
            "usage_iowait",
        ],
        "mem" => [
            "used_percent",
            "available_percent",
            "used",
            "swap_on",
            "state",
            "cached_percent",
            "free",
            "buffered_percent",
        ],
        "disk" => [
            "used_percent",
            "inodes_percent",
            "free",
            "readonly",
            "fstype",
            "io_util",
            "inodes_free",
            "read_latency",
        ],
        "net" => [
            "rx_rate",
            "tx_rate",
            "packets",
            "up",
            "iface_state",
            "err_rate",
            "drops",
            "retrans_rate",
        ],
        _ => [
            "float_0", "float_1", "int_2", "bool_3", "str_4", "float_5", "int_6", "float_7",
        ],
    }
}

#[derive(Clone, Copy)]
enum Value {
    Float(f64),
    Integer(i64),
    Bool(bool),
    Str(&'static str),
}

fn draw(rng: &mut StdRng, t: FieldType) -> Value {
    match t {
        // Two decimals: realistic gauge values with short text forms.
        FieldType::Float => Value::Float((rng.gen_range(0..10_000u32) as f64) / 100.0),
        FieldType::Integer => Value::Integer(rng.gen_range(0..1_000_000i64)),
        FieldType::Bool => Value::Bool(rng.gen_bool(0.5)),
        FieldType::Str => Value::Str(STRINGS[rng.gen_range(0..STRINGS.len())]),
    }
}

/// A point's coordinates; its values are drawn when it is encoded.
struct Coord<'a> {
    measurement: &'a str,
    host: u64,
    ts: i64,
}

fn coord(cfg: &GenConfig, series: u64, tick: u64) -> Coord<'_> {
    let m = cfg.measurements.len() as u64;
    Coord {
        measurement: &cfg.measurements[(series % m) as usize],
        host: series / m,
        ts: cfg.start_ns + (tick as i64) * cfg.step_ns,
    }
}

fn host_name(host: u64) -> String {
    format!("host-{host:05}")
}

fn region(host: u64) -> &'static str {
    REGIONS[(host % REGIONS.len() as u64) as usize]
}

/// Encodes payload file `index` in memory (before gzip). Returns the body and its point count.
pub fn encode_file(cfg: &GenConfig, index: usize) -> Result<(Vec<u8>, u64)> {
    cfg.validate()?;
    if index >= cfg.files {
        return Err(Error::InvalidArgument(format!(
            "file index {index} out of range (files = {})",
            cfg.files
        )));
    }
    // Mixing the index keeps the files independent of each other and of the file count.
    let mut rng =
        StdRng::seed_from_u64(cfg.seed ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let n = cfg.points_per_file as u64;
    let body = match cfg.format {
        Format::Lp => encode_lp(cfg, index as u64, &mut rng),
        Format::MsgpackRow => encode_row(cfg, index as u64, &mut rng)?,
        Format::MsgpackColumnar => encode_columnar(cfg, index as u64, &mut rng)?,
    };
    Ok((body, n))
}

fn row_coords(cfg: &GenConfig, index: u64) -> impl Iterator<Item = Coord<'_>> {
    let n = cfg.points_per_file as u64;
    let series = cfg.series();
    (0..n).map(move |j| {
        let g = index * n + j;
        coord(cfg, g % series, g / series)
    })
}

fn encode_lp(cfg: &GenConfig, index: u64, rng: &mut StdRng) -> Vec<u8> {
    let mut out = String::with_capacity(cfg.points_per_file * (40 + 24 * cfg.fields));
    for c in row_coords(cfg, index) {
        let names = field_names(c.measurement);
        let _ = write!(
            out,
            "{},host={},region={} ",
            c.measurement,
            host_name(c.host),
            region(c.host)
        );
        for (i, name) in names.iter().enumerate().take(cfg.fields) {
            if i > 0 {
                out.push(',');
            }
            // Writing to a String cannot fail.
            let _ = match draw(rng, FIELD_TYPES[i]) {
                Value::Float(v) => write!(out, "{name}={v}"),
                Value::Integer(v) => write!(out, "{name}={v}i"),
                Value::Bool(v) => write!(out, "{name}={v}"),
                // The value alphabet has no quotes or backslashes, so no escaping is needed.
                Value::Str(v) => write!(out, "{name}=\"{v}\""),
            };
        }
        let _ = writeln!(out, " {}", c.ts);
    }
    out.into_bytes()
}

fn enc<T, E: std::fmt::Display>(r: std::result::Result<T, E>) -> Result<()> {
    r.map(|_| ()).map_err(|e| Error::Encode(e.to_string()))
}

fn len32(n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::Encode(format!("{n} elements exceed msgpack's u32 length")))
}

fn write_value(out: &mut Vec<u8>, v: Value) -> Result<()> {
    match v {
        Value::Float(v) => enc(rmp::encode::write_f64(out, v)),
        Value::Integer(v) => enc(rmp::encode::write_i64(out, v)),
        Value::Bool(v) => enc(rmp::encode::write_bool(out, v)),
        Value::Str(v) => enc(rmp::encode::write_str(out, v)),
    }
}

fn write_tags(out: &mut Vec<u8>, host: u64) -> Result<()> {
    enc(rmp::encode::write_str(out, "tags"))?;
    enc(rmp::encode::write_map_len(out, 2))?;
    enc(rmp::encode::write_str(out, "host"))?;
    enc(rmp::encode::write_str(out, &host_name(host)))?;
    enc(rmp::encode::write_str(out, "region"))?;
    enc(rmp::encode::write_str(out, region(host)))
}

fn encode_row(cfg: &GenConfig, index: u64, rng: &mut StdRng) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(cfg.points_per_file * (90 + 24 * cfg.fields));
    enc(rmp::encode::write_array_len(
        &mut out,
        len32(cfg.points_per_file)?,
    ))?;
    for c in row_coords(cfg, index) {
        let names = field_names(c.measurement);
        enc(rmp::encode::write_map_len(&mut out, 4))?;
        enc(rmp::encode::write_str(&mut out, "measurement"))?;
        enc(rmp::encode::write_str(&mut out, c.measurement))?;
        write_tags(&mut out, c.host)?;
        enc(rmp::encode::write_str(&mut out, "fields"))?;
        enc(rmp::encode::write_map_len(&mut out, len32(cfg.fields)?))?;
        for (i, name) in names.iter().enumerate().take(cfg.fields) {
            enc(rmp::encode::write_str(&mut out, name))?;
            write_value(&mut out, draw(rng, FIELD_TYPES[i]))?;
        }
        enc(rmp::encode::write_str(&mut out, "timestamp"))?;
        enc(rmp::encode::write_i64(&mut out, c.ts))?;
    }
    Ok(out)
}

fn encode_columnar(cfg: &GenConfig, index: u64, rng: &mut StdRng) -> Result<Vec<u8>> {
    let n = cfg.points_per_file;
    let series = cfg.series();
    let base_tick = (index / series) * n as u64;
    let c = coord(cfg, index % series, base_tick);
    let names = field_names(c.measurement);
    let mut out = Vec::with_capacity(n * (10 + 9 * cfg.fields) + 256);
    enc(rmp::encode::write_map_len(&mut out, 4))?;
    enc(rmp::encode::write_str(&mut out, "measurement"))?;
    enc(rmp::encode::write_str(&mut out, c.measurement))?;
    write_tags(&mut out, c.host)?;
    enc(rmp::encode::write_str(&mut out, "timestamps"))?;
    enc(rmp::encode::write_array_len(&mut out, len32(n)?))?;
    for k in 0..n as i64 {
        enc(rmp::encode::write_i64(&mut out, c.ts + k * cfg.step_ns))?;
    }
    enc(rmp::encode::write_str(&mut out, "fields"))?;
    enc(rmp::encode::write_map_len(&mut out, len32(cfg.fields)?))?;
    for (i, name) in names.iter().enumerate().take(cfg.fields) {
        enc(rmp::encode::write_str(&mut out, name))?;
        enc(rmp::encode::write_array_len(&mut out, len32(n)?))?;
        for _ in 0..n {
            write_value(&mut out, draw(rng, FIELD_TYPES[i]))?;
        }
    }
    Ok(out)
}

fn gzip(body: &[u8]) -> Result<Vec<u8>> {
    let mut gz = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4),
        flate2::Compression::default(),
    );
    gz.write_all(body)
        .map_err(|e| Error::Encode(e.to_string()))?;
    gz.finish().map_err(|e| Error::Encode(e.to_string()))
}

/// Writes the payload files and `manifest.json` into `dir` (created if missing).
pub fn generate(cfg: &GenConfig, dir: &Path) -> Result<Manifest> {
    cfg.validate()?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut files = Vec::with_capacity(cfg.files);
    for i in 0..cfg.files {
        let (mut body, points) = encode_file(cfg, i)?;
        let mut name = format!("payload-{i:05}.{}", cfg.format.extension());
        if cfg.gzip {
            body = gzip(&body)?;
            name.push_str(".gz");
        }
        let path: PathBuf = dir.join(&name);
        std::fs::write(&path, &body).map_err(|e| Error::io(&path, e))?;
        files.push(ManifestFile {
            name,
            points,
            bytes: body.len() as u64,
        });
    }
    let manifest = Manifest {
        version: 1,
        format: cfg.format,
        content_type: cfg.format.content_type().to_string(),
        content_encoding: cfg.gzip.then(|| "gzip".to_string()),
        precision: "ns".into(),
        points_per_file: cfg.points_per_file as u64,
        series: cfg.series(),
        config: cfg.clone(),
        files,
    };
    let path = dir.join(MANIFEST);
    let json = serde_json::to_vec_pretty(&manifest).map_err(|source| Error::Json {
        path: path.clone(),
        source,
    })?;
    std::fs::write(&path, json).map_err(|e| Error::io(&path, e))?;
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(format: Format) -> GenConfig {
        GenConfig {
            format,
            files: 3,
            points_per_file: 500,
            hosts: 20,
            ..GenConfig::default()
        }
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        for format in [Format::Lp, Format::MsgpackRow, Format::MsgpackColumnar] {
            let cfg = small(format);
            let a = encode_file(&cfg, 1).unwrap();
            let b = encode_file(&cfg, 1).unwrap();
            assert_eq!(a, b, "{format:?}");
            let other = GenConfig {
                seed: 7,
                ..cfg.clone()
            };
            assert_ne!(a.0, encode_file(&other, 1).unwrap().0, "{format:?}");
            // Different files differ too.
            assert_ne!(a.0, encode_file(&cfg, 2).unwrap().0, "{format:?}");
        }
    }

    #[test]
    fn generate_writes_files_and_manifest_deterministically() {
        let cfg = GenConfig {
            gzip: true,
            ..small(Format::Lp)
        };
        let d1 = tempfile::tempdir().unwrap();
        let d2 = tempfile::tempdir().unwrap();
        let m1 = generate(&cfg, d1.path()).unwrap();
        let m2 = generate(&cfg, d2.path()).unwrap();
        assert_eq!(m1, m2);
        assert_eq!(Manifest::load(d1.path()).unwrap(), m1);
        assert_eq!(m1.files.len(), 3);
        assert_eq!(m1.content_encoding.as_deref(), Some("gzip"));
        for f in &m1.files {
            let a = std::fs::read(d1.path().join(&f.name)).unwrap();
            let b = std::fs::read(d2.path().join(&f.name)).unwrap();
            assert_eq!(a, b);
            assert_eq!(a.len() as u64, f.bytes);
            // The gzip body decompresses to exactly the plain encoding.
            let mut plain = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&a[..]), &mut plain)
                .unwrap();
            let idx: usize = f.name[8..13].parse().unwrap();
            assert_eq!(plain, encode_file(&cfg, idx).unwrap().0);
        }
    }

    /// A minimal line protocol checker for our own output: measurement and tags,
    /// fields with typed values, an integer timestamp.
    fn check_lp_line(line: &str, fields: usize) -> Result<(String, String, i64), String> {
        let parts: Vec<&str> = line.split(' ').collect();
        if parts.len() != 3 {
            return Err(format!("expected 3 space-separated sections: {line}"));
        }
        let mut key = parts[0].split(',');
        let m = key
            .next()
            .filter(|m| !m.is_empty())
            .ok_or("no measurement")?;
        let tags: Vec<&str> = key.collect();
        if tags.len() != 2 || tags.iter().any(|t| t.split('=').count() != 2) {
            return Err(format!("bad tags: {line}"));
        }
        let fs: Vec<&str> = parts[1].split(',').collect();
        if fs.len() != fields {
            return Err(format!("expected {fields} fields: {line}"));
        }
        for f in fs {
            let (k, v) = f.split_once('=').ok_or("field without =")?;
            if k.is_empty() {
                return Err("empty field key".into());
            }
            let ok = if let Some(i) = v.strip_suffix('i') {
                i.parse::<i64>().is_ok()
            } else if v.starts_with('"') {
                v.len() >= 2 && v.ends_with('"') && !v[1..v.len() - 1].contains('"')
            } else {
                v == "true" || v == "false" || v.parse::<f64>().is_ok()
            };
            if !ok {
                return Err(format!("bad field value {v:?}"));
            }
        }
        let ts = parts[2].parse::<i64>().map_err(|e| e.to_string())?;
        Ok((m.to_string(), tags[0].to_string(), ts))
    }

    #[test]
    fn lp_lines_parse_and_series_times_are_unique() {
        let cfg = small(Format::Lp);
        let mut seen = std::collections::HashSet::new();
        for i in 0..cfg.files {
            let (body, points) = encode_file(&cfg, i).unwrap();
            let text = String::from_utf8(body).unwrap();
            assert!(text.ends_with('\n'));
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len() as u64, points);
            for line in lines {
                let (m, host, ts) = check_lp_line(line, cfg.fields).unwrap();
                assert!(ts >= cfg.start_ns);
                assert!(seen.insert((m, host, ts)), "duplicate point: {line}");
            }
        }
        // 4 measurements × 20 hosts = 80 series, 1,500 points: each series used.
        let series: std::collections::HashSet<_> = seen
            .iter()
            .map(|(m, h, _)| (m.clone(), h.clone()))
            .collect();
        assert_eq!(series.len(), 80);
    }

    #[test]
    fn msgpack_row_shape() {
        let cfg = GenConfig {
            points_per_file: 3,
            fields: 4,
            ..small(Format::MsgpackRow)
        };
        let (body, _) = encode_file(&cfg, 0).unwrap();
        let mut rd = &body[..];
        assert_eq!(rmp::decode::read_array_len(&mut rd).unwrap(), 3);
        assert_eq!(rmp::decode::read_map_len(&mut rd).unwrap(), 4);
        let mut buf = [0u8; 64];
        assert_eq!(
            rmp::decode::read_str(&mut rd, &mut buf).unwrap(),
            "measurement"
        );
        assert_eq!(rmp::decode::read_str(&mut rd, &mut buf).unwrap(), "cpu");
    }

    #[test]
    fn columnar_is_one_series_with_equal_lengths() {
        let cfg = GenConfig {
            points_per_file: 5,
            fields: 5,
            ..small(Format::MsgpackColumnar)
        };
        let (body, points) = encode_file(&cfg, 1).unwrap();
        assert_eq!(points, 5);
        let mut rd = &body[..];
        let mut buf = [0u8; 64];
        assert_eq!(rmp::decode::read_map_len(&mut rd).unwrap(), 4);
        assert_eq!(
            rmp::decode::read_str(&mut rd, &mut buf).unwrap(),
            "measurement"
        );
        assert_eq!(rmp::decode::read_str(&mut rd, &mut buf).unwrap(), "mem");
        assert_eq!(rmp::decode::read_str(&mut rd, &mut buf).unwrap(), "tags");
        assert_eq!(rmp::decode::read_map_len(&mut rd).unwrap(), 2);
        for _ in 0..4 {
            rmp::decode::read_str(&mut rd, &mut buf).unwrap();
        }
        assert_eq!(
            rmp::decode::read_str(&mut rd, &mut buf).unwrap(),
            "timestamps"
        );
        assert_eq!(rmp::decode::read_array_len(&mut rd).unwrap(), 5);
        let t0: i64 = rmp::decode::read_i64(&mut rd).unwrap();
        let t1: i64 = rmp::decode::read_i64(&mut rd).unwrap();
        assert_eq!(t1 - t0, cfg.step_ns);
    }

    #[test]
    fn validate_rejects_bad_knobs() {
        for cfg in [
            GenConfig {
                files: 0,
                ..GenConfig::default()
            },
            GenConfig {
                fields: 9,
                ..GenConfig::default()
            },
            GenConfig {
                hosts: 0,
                ..GenConfig::default()
            },
            GenConfig {
                step_ns: 0,
                ..GenConfig::default()
            },
            GenConfig {
                measurements: vec!["a b".into()],
                ..GenConfig::default()
            },
            GenConfig {
                measurements: vec![],
                ..GenConfig::default()
            },
            GenConfig {
                start_ns: i64::MAX - 10,
                ..GenConfig::default()
            },
        ] {
            assert!(cfg.validate().is_err(), "{cfg:?}");
        }
        assert!(GenConfig::default().validate().is_ok());
    }
}
