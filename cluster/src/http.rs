//! Statements on a shard over its HTTP interface, and the URL an insert through the
//! embedded engine's `url()` writes to.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use reqwest::blocking::Client as Reqwest;
use reqwest::Url;

use crate::{ClusterConfig, ClusterError, ServerVersion, ShardReader};

/// What a shard's, or one of its replicas', last request showed (`/health`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Seen {
    /// Whether it answered (`None`: not asked yet).
    pub(crate) up: Option<bool>,
    /// Its last error, cleared by a success.
    pub(crate) last_error: Option<String>,
    /// When it last confirmed rows.
    pub(crate) confirmed: Option<std::time::Instant>,
    /// A replica's replication lag at its last probe, seconds: its `system.replicas`
    /// `absolute_delay` over chingest's tables (`None`: not probed, or it did not answer).
    pub(crate) delay_secs: Option<u64>,
}

/// One client for every shard and its replicas.
///
/// A shard's statements go to one replica, the last that answered (the first listed at
/// start); one that does not answer, or cannot take writes because its ZooKeeper is gone
/// ([`replica_unavailable`]), passes them to the next. Objects each server keeps for itself
/// (databases, tables — a replicated table's replica too —, `Distributed` tables) are made
/// and dropped on every replica ([`every_replica`](Self::every_replica),
/// [`all_replicas`](Self::all_replicas)); what a replicated table shares (rows, columns,
/// mutations, partitions) on one.
pub(crate) struct Client {
    http: Reqwest,
    /// Per shard, its replicas' endpoints.
    shards: Vec<Vec<Url>>,
    /// Per shard, the replica its statements go to first.
    active: Vec<AtomicUsize>,
    /// Per shard, what its last request showed (whichever replica answered it).
    pub(crate) seen: parking_lot::Mutex<Vec<Seen>>,
    /// Per shard and replica, what its last request showed.
    pub(crate) replicas_seen: parking_lot::Mutex<Vec<Vec<Seen>>>,
    /// Per shard: a replica answered after not answering (or none was asked yet), so it may
    /// lack tables made meanwhile ([`crate::Cluster::repair_replicas`]).
    returned: Vec<AtomicBool>,
    user: Option<String>,
    password: Option<String>,
    timeout_secs: u64,
    /// `insert_quorum` of every insert (0: none).
    insert_quorum: u32,
    /// Per shard and replica, its server's version once asked ([`server_version`](
    /// Self::server_version); forgotten when it stops answering: it may come back
    /// upgraded).
    versions: parking_lot::Mutex<Vec<Vec<Option<ServerVersion>>>>,
}

/// Logs one statement's round trip to replica `r` of shard `k` (`RUST_LOG=cluster::http=debug`):
/// what a statement's floor is made of, request by request (issue #43).
fn traced(k: usize, r: usize, sql: &str, started: std::time::Instant, bytes: usize) {
    tracing::debug!(
        shard = k,
        replica = r,
        micros = started.elapsed().as_micros() as u64,
        bytes,
        "shard request: {}",
        sql.chars().take(160).collect::<String>()
    );
}

/// How long [`Client::probe_replicas`] waits for a replica's answer.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// What a probe asks a replica: whether it answers, and how far behind the others it is
/// (the oldest insert it has yet to fetch, over chingest's tables; 0 when none).
const PROBE: &str = "SELECT toUInt64(max(absolute_delay)) FROM system.replicas \
     WHERE database = '__chingest' OR startsWith(database, '__shard_') FORMAT TabSeparated";

/// Whether a shard's error `code` ([`crate::code`]) says the replica cannot serve now,
/// though another may: its replicated tables are read-only (its ZooKeeper session is gone:
/// code 242) or ZooKeeper fails (999, 225), or an insert quorum is not reached (285, 286,
/// 319: too few replicas answer; the previous quorum insert into the table is unfinished —
/// 18.16 runs one at a time —; not known whether it was reached in time). Retried
/// elsewhere, and waited for when every replica says so: never a refusal of the rows.
pub(crate) fn replica_unavailable(code: Option<u32>) -> bool {
    use crate::code::*;
    matches!(
        code,
        Some(
            TABLE_IS_READ_ONLY
                | KEEPER_EXCEPTION
                | NO_ZOOKEEPER
                | TOO_FEW_LIVE_REPLICAS
                | UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE
                | UNKNOWN_STATUS_OF_INSERT
        )
    )
}

impl Client {
    pub(crate) fn new(config: &ClusterConfig) -> Result<Client, ClusterError> {
        let shards = config
            .shards
            .iter()
            .map(|replicas| {
                if replicas.is_empty() {
                    return Err(ClusterError::Config("a shard without an endpoint".into()));
                }
                replicas
                    .iter()
                    .map(|s| {
                        let url = Url::parse(s).map_err(|e| {
                            ClusterError::Config(format!("shard endpoint {s:?}: {e}"))
                        })?;
                        if !matches!(url.scheme(), "http" | "https") || url.query().is_some() {
                            return Err(ClusterError::Config(format!(
                                "shard endpoint {s:?}: expected http(s)://host:port"
                            )));
                        }
                        Ok(url)
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut every: Vec<&Url> = shards.iter().flatten().collect();
        every.sort();
        if let Some(twice) = every.windows(2).find(|w| w[0] == w[1]) {
            return Err(ClusterError::Config(format!(
                "endpoint {} is listed twice (a server is one replica of one shard)",
                twice[0]
            )));
        }
        let http = Reqwest::builder()
            .timeout(config.timeout)
            .build()
            .map_err(|e| ClusterError::Config(e.to_string()))?;
        Ok(Client {
            http,
            seen: parking_lot::Mutex::new(vec![Seen::default(); shards.len()]),
            replicas_seen: parking_lot::Mutex::new(
                shards
                    .iter()
                    .map(|r| vec![Seen::default(); r.len()])
                    .collect(),
            ),
            active: shards.iter().map(|_| AtomicUsize::new(0)).collect(),
            versions: parking_lot::Mutex::new(shards.iter().map(|r| vec![None; r.len()]).collect()),
            returned: shards.iter().map(|_| AtomicBool::new(true)).collect(),
            shards,
            user: config.user.clone(),
            password: config.password.clone(),
            timeout_secs: config.timeout.as_secs().max(1),
            insert_quorum: config.insert_quorum,
        })
    }

    /// How many replicas shard `k` has.
    pub(crate) fn replicas(&self, k: usize) -> usize {
        self.shards[k].len()
    }

    /// The replica shard `k`'s statements go to first.
    pub(crate) fn active(&self, k: usize) -> usize {
        self.active[k].load(Ordering::Relaxed)
    }

    /// Whether a replica of shard `k` answered since this was last asked after not
    /// answering (true at start: nothing is known of them yet).
    pub(crate) fn take_returned(&self, k: usize) -> bool {
        self.returned[k].swap(false, Ordering::Relaxed)
    }

    /// `run(r)` on shard `k`'s replicas, the active one first, until one answers; the next
    /// one it reaches becomes the active one. The last unavailable replica's error when
    /// none could.
    pub(crate) fn on_some_replica<T>(
        &self,
        k: usize,
        run: impl Fn(usize) -> Result<T, ClusterError>,
    ) -> Result<T, ClusterError> {
        let n = self.shards[k].len();
        let first = self.active(k);
        let mut last = None;
        for r in (0..n).map(|i| (first + i) % n) {
            match run(r) {
                Ok(t) => {
                    if r != first {
                        self.active[k].store(r, Ordering::Relaxed);
                    }
                    return Ok(t);
                }
                Err(e) if e.is_unavailable() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.expect("a shard has a replica"))
    }

    /// Runs `sql` on shard `k` (on one replica: [`on_some_replica`](Self::on_some_replica));
    /// its TabSeparated answer.
    pub(crate) fn statement(&self, k: usize, sql: &str) -> Result<String, ClusterError> {
        self.on_some_replica(k, |r| self.statement_on(k, r, sql))
    }

    /// Runs `sql` on replica `r` of shard `k`.
    pub(crate) fn statement_on(
        &self,
        k: usize,
        r: usize,
        sql: &str,
    ) -> Result<String, ClusterError> {
        let started = std::time::Instant::now();
        let req = self.post(self.shards[k][r].clone(), sql);
        let answer = req.send().map_err(|e| self.unreachable(k, r, e))?;
        let status = answer.status();
        let headers = answer.headers().clone();
        let text = answer.text().map_err(|e| self.unreachable(k, r, e))?;
        traced(k, r, sql, started, text.len());
        self.answered(k, r, sql, status, &headers, text)
    }

    /// Runs `sql` (what each server keeps for itself: `CREATE …`) on every replica of shard
    /// `k` that answers; how many did (one not answering misses it until
    /// [`crate::Cluster::repair_replicas`]). None answering is its error.
    pub(crate) fn every_replica(&self, k: usize, sql: &str) -> Result<usize, ClusterError> {
        self.on_every_replica(k, |r| self.statement_on(k, r, sql))
            .map(|done| done.len())
    }

    /// `run(r)` on every replica of shard `k`; the answers of those that could serve (one
    /// that cannot is passed over). None could: the last one's error.
    pub(crate) fn on_every_replica<T>(
        &self,
        k: usize,
        run: impl Fn(usize) -> Result<T, ClusterError>,
    ) -> Result<Vec<T>, ClusterError> {
        let mut done = Vec::new();
        let mut last = None;
        for r in 0..self.shards[k].len() {
            match run(r) {
                Ok(t) => done.push(t),
                Err(e) if e.is_unavailable() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        match last {
            Some(e) if done.is_empty() => Err(e),
            _ => Ok(done),
        }
    }

    /// The version of replica `r` of shard `k`'s server (`SELECT version()`, asked once
    /// while it answers).
    pub(crate) fn server_version(&self, k: usize, r: usize) -> Result<ServerVersion, ClusterError> {
        if let Some(v) = self.versions.lock()[k][r] {
            return Ok(v);
        }
        let sql = "SELECT version()";
        let text = self.statement_on(k, r, sql)?;
        let v = ServerVersion::parse(&text).ok_or_else(|| ClusterError::Refused {
            shard: k,
            endpoint: self.shards[k][r].to_string(),
            statement: sql.into(),
            message: format!("not a version: {:?}", text.trim()),
            code: None,
        })?;
        self.versions.lock()[k][r] = Some(v);
        Ok(v)
    }

    /// The version shard `k`'s tables are laid out for: the oldest of its replicas' known
    /// versions and the answering one's (a replicated table has one definition on every
    /// replica, so a shard whose replicas differ gets what its oldest takes).
    pub(crate) fn shard_version(&self, k: usize) -> Result<ServerVersion, ClusterError> {
        let asked = self.on_some_replica(k, |r| self.server_version(k, r))?;
        let known = self.versions.lock()[k].iter().flatten().min().copied();
        Ok(known.map_or(asked, |v| v.min(asked)))
    }

    /// Runs the statement `sql` makes for its server's version (`DROP …`) on every replica
    /// of shard `k`, each of which must answer (a replica that kept a dropped replicated
    /// table would hold its place in ZooKeeper, and a table made again under that name
    /// would take its old rows back from it).
    pub(crate) fn all_replicas(
        &self,
        k: usize,
        sql: impl Fn(ServerVersion) -> String,
    ) -> Result<(), ClusterError> {
        (0..self.shards[k].len()).try_for_each(|r| {
            let v = self.server_version(k, r)?;
            self.statement_on(k, r, &sql(v)).map(drop)
        })
    }

    /// Makes [`take_returned`](Self::take_returned) true again for shard `k` (its repair
    /// failed: tried again).
    pub(crate) fn mark_returned(&self, k: usize) {
        self.returned[k].store(true, Ordering::Relaxed);
    }

    /// Asks every replica of each shard that has several whether it answers, and its
    /// replication lag ([`PROBE`]): a replica its shard's statements do not go to is known
    /// down, back or behind all the same.
    /// All at once, each within 2 s (a replica whose packets vanish does not hold back the
    /// refresh that asks).
    pub(crate) fn probe_replicas(&self) {
        std::thread::scope(|scope| {
            for (k, replicas) in self.shards.iter().enumerate() {
                if replicas.len() > 1 {
                    for r in 0..replicas.len() {
                        scope.spawn(move || {
                            let delay = self.probe(k, r);
                            if let Some(secs) = delay {
                                metrics::gauge!("chingest_cluster_replica_delay_seconds",
                                    "shard" => k.to_string(), "replica" => r.to_string())
                                .set(secs as f64);
                            }
                            self.replicas_seen.lock()[k][r].delay_secs = delay;
                        });
                    }
                }
            }
        });
    }

    /// One replica's probe ([`PROBE`]): its lag, `None` when it does not answer or refuses.
    /// Recorded as the replica's state only: the shard's last error is its statements'.
    fn probe(&self, k: usize, r: usize) -> Option<u64> {
        let answer = self
            .post(self.shards[k][r].clone(), PROBE)
            .timeout(PROBE_TIMEOUT)
            .send()
            .and_then(|a| {
                let ok = a.status().is_success();
                a.text().map(|text| (ok, text))
            });
        let endpoint = self.shards[k][r].to_string();
        match answer {
            Ok((true, text)) => {
                self.saw_replica(k, r, Some(true), None);
                text.trim().parse().ok()
            }
            Ok((false, text)) => {
                let e = ClusterError::Refused {
                    shard: k,
                    endpoint,
                    statement: "the replica's probe".into(),
                    code: crate::code::in_text(&text),
                    message: text.trim().to_string(),
                };
                self.saw_replica(k, r, Some(true), Some(&e));
                None
            }
            Err(e) => {
                let e = ClusterError::Unreachable {
                    shard: k,
                    endpoint,
                    message: why_unanswered(e),
                };
                self.saw_replica(k, r, Some(false), Some(&e));
                self.pass_over(k, r);
                None
            }
        }
    }

    /// [`statement`](Self::statement) with a binary answer, the server told to finish the
    /// statement before it answers (`wait_end_of_query=1`): a failure after the first rows
    /// is an error status, never an error text after rows that would read as more rows.
    pub(crate) fn statement_bytes(&self, k: usize, sql: &str) -> Result<Vec<u8>, ClusterError> {
        self.on_some_replica(k, |r| {
            let started = std::time::Instant::now();
            let mut url = self.shards[k][r].clone();
            url.query_pairs_mut().append_pair("wait_end_of_query", "1");
            let answer = self
                .post(url, sql)
                .send()
                .map_err(|e| self.unreachable(k, r, e))?;
            let status = answer.status();
            let headers = answer.headers().clone();
            let body = answer.bytes().map_err(|e| self.unreachable(k, r, e))?;
            traced(k, r, sql, started, body.len());
            if !status.is_success() {
                let text = String::from_utf8_lossy(&body).into_owned();
                return self
                    .answered(k, r, sql, status, &headers, text)
                    .map(String::into_bytes);
            }
            self.saw(k, r, Some(true), None);
            Ok(body.to_vec())
        })
    }

    /// Replica `r` of shard `k`'s answer `text` with `status` and `headers` to `sql`: the
    /// answer, or the server's error (unavailable when its code says the replica cannot
    /// serve now).
    fn answered(
        &self,
        k: usize,
        r: usize,
        sql: &str,
        status: reqwest::StatusCode,
        headers: &reqwest::header::HeaderMap,
        text: String,
    ) -> Result<String, ClusterError> {
        if !status.is_success() {
            let message = text.trim().to_string();
            let code = crate::code::of_answer(headers, &message);
            let e = if replica_unavailable(code) {
                ClusterError::Unreachable {
                    shard: k,
                    endpoint: self.shards[k][r].to_string(),
                    message: format!("cannot serve now (its ZooKeeper?): {message}"),
                }
            } else {
                ClusterError::Refused {
                    shard: k,
                    endpoint: self.shards[k][r].to_string(),
                    statement: sql.chars().take(200).collect(),
                    message,
                    code,
                }
            };
            self.saw(k, r, Some(true), Some(&e));
            return Err(e);
        }
        self.saw(k, r, Some(true), None);
        Ok(text)
    }

    /// Sends a user's statement to shard `k` with `settings` in the URL (the server applies
    /// them before the statement, and with `readonly=1` among them the statement cannot
    /// change them); the answer to read, or the server's error text (`Ok(Err)`: the
    /// statement was refused, which says nothing about the shard, so it is not recorded as
    /// the shard's failure).
    /// `reader`: the statement runs as that user instead of chingest's.
    pub(crate) fn user_statement(
        &self,
        k: usize,
        sql: &str,
        settings: &[(&str, String)],
        timeout: std::time::Duration,
        reader: Option<&ShardReader>,
    ) -> Result<Result<reqwest::blocking::Response, String>, ClusterError> {
        let answer = self.on_some_replica(k, |r| {
            let mut url = self.shards[k][r].clone();
            url.query_pairs_mut()
                .extend_pairs(settings.iter().map(|(k, v)| (*k, v.as_str())));
            let req = match reader {
                Some(reader) => self
                    .http
                    .post(url)
                    .body(sql.to_string())
                    .basic_auth(&reader.user, reader.password.as_deref()),
                None => self.post(url, sql),
            };
            let answer = req
                .timeout(timeout)
                .send()
                .map_err(|e| self.unreachable(k, r, e))?;
            self.saw(k, r, Some(true), None);
            Ok(answer)
        })?;
        if answer.status().is_success() {
            return Ok(Ok(answer));
        }
        let text = self.redact(answer.text().unwrap_or_default().trim());
        Ok(Err(match reader.and_then(|r| r.password.as_deref()) {
            Some(p) if !p.is_empty() => text.replace(p, "[REDACTED]"),
            _ => text,
        }))
    }

    /// The URL that runs `insert` (`… FORMAT Native`) on replica `r` of shard `k` with the
    /// rows posted to it, stored as one block of at most `rows` rows (one part: all or
    /// nothing), confirmed once the insert quorum's replicas hold it.
    pub(crate) fn insert_url(
        &self,
        k: usize,
        r: usize,
        insert: &str,
        rows: u64,
    ) -> Result<String, ClusterError> {
        let block = (rows + 1).to_string();
        let timeout = self.timeout_secs.to_string();
        let mut params: Vec<(&str, &str)> = vec![
            ("query", insert),
            ("max_insert_block_size", &block),
            ("min_insert_block_size_rows", &block),
            ("min_insert_block_size_bytes", "1099511627776"),
            ("max_execution_time", &timeout),
        ];
        let quorum = self.insert_quorum.to_string();
        // Half the request's limit: the server's "quorum not reached" (319, waited for)
        // comes before the statement's own time limit would cut the insert short.
        let quorum_timeout = (self.timeout_secs * 500).to_string();
        if self.insert_quorum > 1 {
            // Confirmed once that many replicas hold the part.
            params.push(("insert_quorum", &quorum));
            params.push(("insert_quorum_timeout", &quorum_timeout));
        }
        if let Some(user) = &self.user {
            params.push(("user", user));
            params.push(("password", self.password.as_deref().unwrap_or("")));
        }
        let url = Url::parse_with_params(self.shards[k][r].as_str(), &params)
            .map_err(|e| ClusterError::Config(e.to_string()))?;
        Ok(url.to_string())
    }

    /// Records what a request to replica `r` of shard `k` showed: whether it answered, and
    /// its error (`None`: a success, which clears the last one); the metrics follow.
    pub(crate) fn saw(&self, k: usize, r: usize, up: Option<bool>, error: Option<&ClusterError>) {
        let shard = self.saw_replica(k, r, up, error);
        if let Some(e) = error {
            failure(
                k,
                match e {
                    ClusterError::Unreachable { .. } => "unreachable",
                    ClusterError::TypeConflict { .. } => "type_conflict",
                    _ => "refused",
                },
            );
        }
        let mut seen = self.seen.lock();
        let s = &mut seen[k];
        if shard.is_some() {
            s.up = shard;
        }
        s.last_error = error.map(|e| self.redact(&e.to_string()));
    }

    /// [`saw`](Self::saw)'s part for the replica alone (a probe's: the shard's last error is
    /// its statements'); whether the shard answers now — one of its replicas does —, which
    /// it records, with the metrics.
    fn saw_replica(
        &self,
        k: usize,
        r: usize,
        up: Option<bool>,
        error: Option<&ClusterError>,
    ) -> Option<bool> {
        let shard = {
            let mut replicas = self.replicas_seen.lock();
            let s = &mut replicas[k][r];
            if up == Some(true) && s.up != Some(true) {
                self.returned[k].store(true, Ordering::Relaxed);
            }
            if up.is_some() {
                s.up = up;
            }
            s.last_error = error.map(|e| self.redact(&e.to_string()));
            let ups: Vec<Option<bool>> = replicas[k].iter().map(|s| s.up).collect();
            if ups.contains(&Some(true)) {
                Some(true)
            } else if ups.contains(&Some(false)) {
                Some(false)
            } else {
                None
            }
        };
        if let Some(up) = up {
            if self.shards[k].len() > 1 {
                replica_up(k, r, up);
            }
        }
        if let Some(shard) = shard {
            shard_up(k, shard);
        }
        if shard.is_some() {
            self.seen.lock()[k].up = shard;
        }
        shard
    }

    /// A POST of `sql` to `url` as the cluster's user.
    fn post(&self, url: Url, sql: &str) -> reqwest::blocking::RequestBuilder {
        let req = self.http.post(url).body(sql.to_string());
        match &self.user {
            Some(user) => req.basic_auth(user, self.password.as_deref()),
            None => req,
        }
    }

    /// Replica `r` of shard `k` did not answer (`e`): recorded as down, and the next
    /// replica becomes the one the shard's statements go to first.
    fn unreachable(&self, k: usize, r: usize, e: reqwest::Error) -> ClusterError {
        let e = ClusterError::Unreachable {
            shard: k,
            endpoint: self.shards[k][r].to_string(),
            message: why_unanswered(e),
        };
        self.saw(k, r, Some(false), Some(&e));
        self.pass_over(k, r);
        self.versions.lock()[k][r] = None;
        e
    }

    /// Replica `r` of shard `k` does not answer: when the shard's statements go to it
    /// first, the next replica takes its place.
    fn pass_over(&self, k: usize, r: usize) {
        let next = (r + 1) % self.shards[k].len();
        let _ = self.active[k].compare_exchange(r, next, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// The endpoint of the replica shard `k`'s statements go to first.
    pub(crate) fn endpoint(&self, k: usize) -> String {
        self.shards[k][self.active(k)].to_string()
    }

    /// The endpoint of replica `r` of shard `k`.
    pub(crate) fn replica_endpoint(&self, k: usize, r: usize) -> String {
        self.shards[k][r].to_string()
    }

    /// `text` without the password (an engine message may quote an insert's URL).
    pub(crate) fn redact(&self, text: &str) -> String {
        match self.password.as_deref() {
            Some(p) if !p.is_empty() => {
                // As the insert's URL carries it.
                let encoded = Url::parse_with_params("http://x/", &[("p", p)])
                    .ok()
                    .and_then(|u| u.query().map(|q| q["p=".len()..].to_string()))
                    .unwrap_or_else(|| p.to_string());
                text.replace(&encoded, "[REDACTED]")
                    .replace(p, "[REDACTED]")
            }
            _ => text.to_string(),
        }
    }
}

/// What a request that got no answer met, down to its cause (`connection refused`,
/// `operation timed out`): reqwest's own text names only the request. Without the URL: the
/// error names the endpoint, and an insert's URL would carry its statement.
fn why_unanswered(e: reqwest::Error) -> String {
    let timed_out = e.is_timeout();
    let e = e.without_url();
    let mut parts = vec![e.to_string()];
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        let text = cause.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        source = cause.source();
    }
    if timed_out {
        parts.push("no answer in time".into());
    }
    parts.join(": ")
}

/// `chingest_cluster_shard_up{shard}`: whether the shard answered its last request.
pub(crate) fn shard_up(k: usize, up: bool) {
    metrics::gauge!("chingest_cluster_shard_up", "shard" => k.to_string())
        .set(f64::from(u8::from(up)));
}

/// `chingest_cluster_replica_up{shard, replica}`: whether the replica answered its last
/// request (shards with more than one replica).
pub(crate) fn replica_up(k: usize, r: usize, up: bool) {
    metrics::gauge!("chingest_cluster_replica_up", "shard" => k.to_string(), "replica" => r.to_string())
        .set(f64::from(u8::from(up)));
}

/// `chingest_cluster_failures_total{shard, reason}`.
pub(crate) fn failure(k: usize, reason: &'static str) {
    metrics::counter!("chingest_cluster_failures_total", "shard" => k.to_string(), "reason" => reason)
        .increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(replicas: usize) -> Client {
        Client::new(&ClusterConfig {
            shards: vec![(0..replicas)
                .map(|r| format!("http://127.0.0.1:{}/", 9 + r))
                .collect()],
            zookeeper_path: Some("/c".into()),
            insert_quorum: 0,
            user: None,
            password: None,
            node: "n".into(),
            incarnation: String::new(),
            timeout: std::time::Duration::from_secs(1),
            distributed: None,
            delete_wait: std::time::Duration::from_secs(1),
            readers: Vec::new(),
        })
        .unwrap()
    }

    #[test]
    fn a_shard_is_up_while_one_of_its_replicas_is() {
        let c = client(2);
        let down = ClusterError::Unreachable {
            shard: 0,
            endpoint: c.replica_endpoint(0, 0),
            message: "refused".into(),
        };
        // Whatever order the replicas' answers come in.
        c.saw_replica(0, 1, Some(true), None);
        c.saw_replica(0, 0, Some(false), Some(&down));
        assert_eq!(c.seen.lock()[0].up, Some(true));
        c.saw(0, 0, Some(false), Some(&down));
        assert_eq!(c.seen.lock()[0].up, Some(true));
        // The shard's error is its statements'; a replica's probe leaves it.
        assert!(c.seen.lock()[0].last_error.is_some());
        c.saw_replica(0, 0, Some(false), Some(&down));
        c.saw(0, 1, Some(true), None);
        assert_eq!(c.seen.lock()[0].last_error, None);
        // Down once none answers; a replica back is noted for its repair.
        assert!(c.take_returned(0));
        c.saw_replica(0, 1, Some(false), Some(&down));
        assert_eq!(c.seen.lock()[0].up, Some(false));
        assert!(!c.take_returned(0));
        c.saw_replica(0, 0, Some(true), None);
        assert_eq!(c.seen.lock()[0].up, Some(true));
        assert!(c.take_returned(0));
        let replicas = c.replicas_seen.lock();
        assert_eq!(
            (replicas[0][0].up, replicas[0][1].up),
            (Some(true), Some(false))
        );
    }

    #[test]
    fn zookeeper_and_quorum_failures_are_waited_for() {
        // 18.16's form and the form of servers since 21.x alike.
        for m in [
            "Code: 242, e.displayText() = DB::Exception: Table is in readonly mode",
            "Code: 999, e.displayText() = Coordination::Exception: Connection loss",
            "Code: 319, Unknown status, client must retry",
            "Code: 285, Number of alive replicas (1) is less than requested quorum (2)",
            "Code: 242. DB::Exception: Table is in readonly mode: replica_path=/c/0/a/b/\
             replicas/r1. (TABLE_IS_READ_ONLY) (version 24.8.4.13 (official build))",
            "Code: 999. Coordination::Exception: Connection loss, path /c. (KEEPER_EXCEPTION) \
             (version 25.8.2.29 (official build))",
            "Code: 225. DB::Exception: ZooKeeper is not configured. (NO_ZOOKEEPER) \
             (version 23.8.16.40 (official build))",
            "Code: 286. DB::Exception: Quorum for previous write has not been satisfied yet. \
             (UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE) (version 24.3.1.2672 (official build))",
        ] {
            assert!(replica_unavailable(crate::code::in_text(m)), "{m}");
        }
        for m in [
            "Code: 60, e.displayText() = DB::Exception: Table x doesn't exist., e.what() = \
             DB::Exception",
            "Code: 53, Type mismatch",
            "Code: 60. DB::Exception: Table default.x does not exist. (UNKNOWN_TABLE) \
             (version 24.8.4.13 (official build))",
            // A code's number inside another's text is not the code.
            "Code: 62. DB::Exception: Syntax error: failed at position 1 (242): 242. \
             (SYNTAX_ERROR) (version 24.8.4.13 (official build))",
        ] {
            assert!(!replica_unavailable(crate::code::in_text(m)), "{m}");
        }
    }
}
