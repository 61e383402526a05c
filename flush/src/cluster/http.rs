//! Statements on a shard over its HTTP interface, and the URL an insert through the
//! embedded engine's `url()` writes to.

use reqwest::blocking::Client as Reqwest;
use reqwest::Url;

use super::{ClusterConfig, ClusterError, ShardReader};

/// What a shard's last request showed (`/health`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Seen {
    /// Whether it answered (`None`: not asked yet).
    pub(crate) up: Option<bool>,
    /// Its last error, cleared by a success.
    pub(crate) last_error: Option<String>,
    /// When it last confirmed rows.
    pub(crate) confirmed: Option<std::time::Instant>,
}

/// One client for every shard.
pub(crate) struct Client {
    http: Reqwest,
    shards: Vec<Url>,
    /// Per shard, what its last request showed.
    pub(crate) seen: parking_lot::Mutex<Vec<Seen>>,
    user: Option<String>,
    password: Option<String>,
    timeout_secs: u64,
}

impl Client {
    pub(crate) fn new(config: &ClusterConfig) -> Result<Client, ClusterError> {
        let shards = config
            .shards
            .iter()
            .map(|s| {
                let url = Url::parse(s)
                    .map_err(|e| ClusterError::Config(format!("shard endpoint {s:?}: {e}")))?;
                if !matches!(url.scheme(), "http" | "https") || url.query().is_some() {
                    return Err(ClusterError::Config(format!(
                        "shard endpoint {s:?}: expected http(s)://host:port"
                    )));
                }
                Ok(url)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let http = Reqwest::builder()
            .timeout(config.timeout)
            .build()
            .map_err(|e| ClusterError::Config(e.to_string()))?;
        Ok(Client {
            http,
            seen: parking_lot::Mutex::new(vec![Seen::default(); shards.len()]),
            shards,
            user: config.user.clone(),
            password: config.password.clone(),
            timeout_secs: config.timeout.as_secs().max(1),
        })
    }

    /// Runs `sql` on shard `k` (POST body); its TabSeparated answer.
    pub(crate) fn statement(&self, k: usize, sql: &str) -> Result<String, ClusterError> {
        let req = self.post(self.shards[k].clone(), sql);
        let answer = req.send().map_err(|e| self.unreachable(k, e))?;
        let status = answer.status();
        let text = answer.text().map_err(|e| self.unreachable(k, e))?;
        self.answered(k, sql, status, text)
    }

    /// [`statement`](Self::statement) with a binary answer, the server told to finish the
    /// statement before it answers (`wait_end_of_query=1`): a failure after the first rows
    /// is an error status, never an error text after rows that would read as more rows.
    pub(crate) fn statement_bytes(&self, k: usize, sql: &str) -> Result<Vec<u8>, ClusterError> {
        let mut url = self.shards[k].clone();
        url.query_pairs_mut().append_pair("wait_end_of_query", "1");
        let answer = self
            .post(url, sql)
            .send()
            .map_err(|e| self.unreachable(k, e))?;
        let status = answer.status();
        let body = answer.bytes().map_err(|e| self.unreachable(k, e))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body).into_owned();
            return self.answered(k, sql, status, text).map(String::into_bytes);
        }
        self.saw(k, Some(true), None);
        Ok(body.to_vec())
    }

    /// Shard `k`'s answer `text` with `status` to `sql`: the answer, or the server's error.
    fn answered(
        &self,
        k: usize,
        sql: &str,
        status: reqwest::StatusCode,
        text: String,
    ) -> Result<String, ClusterError> {
        if !status.is_success() {
            let e = ClusterError::Refused {
                shard: k,
                endpoint: self.shards[k].to_string(),
                statement: sql.chars().take(200).collect(),
                message: text.trim().to_string(),
            };
            self.saw(k, Some(true), Some(&e));
            return Err(e);
        }
        self.saw(k, Some(true), None);
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
        let mut url = self.shards[k].clone();
        url.query_pairs_mut()
            .extend_pairs(settings.iter().map(|(k, v)| (*k, v.as_str())));
        let req = match reader {
            Some(r) => self
                .http
                .post(url)
                .body(sql.to_string())
                .basic_auth(&r.user, r.password.as_deref()),
            None => self.post(url, sql),
        };
        let answer = req
            .timeout(timeout)
            .send()
            .map_err(|e| self.unreachable(k, e))?;
        self.saw(k, Some(true), None);
        if answer.status().is_success() {
            return Ok(Ok(answer));
        }
        let text = self.redact(answer.text().unwrap_or_default().trim());
        Ok(Err(match reader.and_then(|r| r.password.as_deref()) {
            Some(p) if !p.is_empty() => text.replace(p, "[REDACTED]"),
            _ => text,
        }))
    }

    /// The URL that runs `insert` (`… FORMAT Native`) on shard `k` with the rows posted to
    /// it, stored as one block of at most `rows` rows (one part: all or nothing).
    pub(crate) fn insert_url(
        &self,
        k: usize,
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
        if let Some(user) = &self.user {
            params.push(("user", user));
            params.push(("password", self.password.as_deref().unwrap_or("")));
        }
        let url = Url::parse_with_params(self.shards[k].as_str(), &params)
            .map_err(|e| ClusterError::Config(e.to_string()))?;
        Ok(url.to_string())
    }

    /// Records what a request to shard `k` showed: whether it answered, and its error
    /// (`None`: a success, which clears the last one); the metrics follow.
    pub(crate) fn saw(&self, k: usize, up: Option<bool>, error: Option<&ClusterError>) {
        if let Some(up) = up {
            shard_up(k, up);
        }
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
        if up.is_some() {
            s.up = up;
        }
        s.last_error = error.map(|e| self.redact(&e.to_string()));
    }

    /// A POST of `sql` to `url` as the cluster's user.
    fn post(&self, url: Url, sql: &str) -> reqwest::blocking::RequestBuilder {
        let req = self.http.post(url).body(sql.to_string());
        match &self.user {
            Some(user) => req.basic_auth(user, self.password.as_deref()),
            None => req,
        }
    }

    /// Shard `k` did not answer (`e`): recorded as down.
    fn unreachable(&self, k: usize, e: reqwest::Error) -> ClusterError {
        let e = ClusterError::Unreachable {
            shard: k,
            endpoint: self.shards[k].to_string(),
            message: e.to_string(),
        };
        self.saw(k, Some(false), Some(&e));
        e
    }

    /// Shard `k`'s endpoint as configured.
    pub(crate) fn endpoint(&self, k: usize) -> String {
        self.shards[k].to_string()
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

/// `chingest_cluster_shard_up{shard}`: whether the shard answered its last request.
pub(crate) fn shard_up(k: usize, up: bool) {
    metrics::gauge!("chingest_cluster_shard_up", "shard" => k.to_string())
        .set(f64::from(u8::from(up)));
}

/// `chingest_cluster_failures_total{shard, reason}`.
pub(crate) fn failure(k: usize, reason: &'static str) {
    metrics::counter!("chingest_cluster_failures_total", "shard" => k.to_string(), "reason" => reason)
        .increment(1);
}
