//! The HTTP side: pre-loaded bodies and a pooled hyper client that sends them.
//!
//! Bodies are read once into `bytes::Bytes`; each request clones the handle (a
//! reference-count increment), never the bytes, so the client's per-request cost
//! is independent of the body size.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_ENCODING, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::error::{Error, Result};
use crate::gen::Manifest;
use crate::stats::Outcome;

/// One request body and the number of points it carries.
#[derive(Debug, Clone)]
pub struct Payload {
    /// The encoded (possibly gzipped) body.
    pub body: Bytes,
    /// Points in the body.
    pub points: u64,
}

/// The bodies of a run, sent round-robin, with their headers.
#[derive(Debug, Clone)]
pub struct PayloadSet {
    content_type: HeaderValue,
    content_encoding: Option<HeaderValue>,
    payloads: Vec<Payload>,
    /// A short description for the results (format, points per request, ...).
    pub description: String,
}

fn header(v: &str, what: &str) -> Result<HeaderValue> {
    HeaderValue::from_str(v).map_err(|_| Error::InvalidArgument(format!("invalid {what} {v:?}")))
}

impl PayloadSet {
    /// Builds a set from bodies already in memory (tests, custom drivers).
    pub fn new(
        content_type: &str,
        content_encoding: Option<&str>,
        payloads: Vec<Payload>,
    ) -> Result<PayloadSet> {
        if payloads.is_empty() {
            return Err(Error::InvalidArgument("no payloads".into()));
        }
        Ok(PayloadSet {
            content_type: header(content_type, "content type")?,
            content_encoding: content_encoding
                .map(|e| header(e, "content encoding"))
                .transpose()?,
            description: format!("{} payloads, {content_type}", payloads.len()),
            payloads,
        })
    }

    /// Loads a directory written by [`crate::gen::generate`].
    pub fn load(dir: &Path) -> Result<PayloadSet> {
        let manifest = Manifest::load(dir)?;
        let mut payloads = Vec::with_capacity(manifest.files.len());
        for f in &manifest.files {
            // Names come from the manifest: refuse anything that escapes the directory.
            if f.name.contains('/') || f.name.contains('\\') || f.name.starts_with('.') {
                return Err(Error::Payload {
                    path: dir.into(),
                    reason: format!("bad file name {:?} in manifest", f.name),
                });
            }
            let path = dir.join(&f.name);
            let body = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
            if body.len() as u64 != f.bytes {
                return Err(Error::Payload {
                    path,
                    reason: format!("{} bytes on disk, manifest says {}", body.len(), f.bytes),
                });
            }
            payloads.push(Payload {
                body: Bytes::from(body),
                points: f.points,
            });
        }
        let mut set = PayloadSet::new(
            &manifest.content_type,
            manifest.content_encoding.as_deref(),
            payloads,
        )?;
        set.description = format!(
            "{} files, format {}, {} points/request, {} series, {} fields/point{}",
            manifest.files.len(),
            serde_json::to_value(manifest.format)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            manifest.points_per_file,
            manifest.series,
            manifest.config.fields,
            if manifest.content_encoding.is_some() {
                ", gzip"
            } else {
                ""
            }
        );
        Ok(set)
    }

    /// Payload number `n` of the round-robin sequence.
    pub fn get(&self, n: u64) -> &Payload {
        &self.payloads[(n % self.payloads.len() as u64) as usize]
    }

    /// Number of distinct bodies.
    pub fn len(&self) -> usize {
        self.payloads.len()
    }

    /// Always false: a set has at least one body.
    pub fn is_empty(&self) -> bool {
        self.payloads.is_empty()
    }
}

/// Replaces the values of credential-like query parameters with `***`.
pub fn redact_url(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_string();
    };
    let parts: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if matches!(k, "p" | "password" | "token" | "u") => format!("{k}=***"),
            _ => kv.to_string(),
        })
        .collect();
    format!("{base}?{}", parts.join("&"))
}

/// Where and how to send: the write URL, optional token, request timeout.
#[derive(Debug, Clone)]
pub struct Target {
    uri: Uri,
    auth: Option<HeaderValue>,
    timeout: Duration,
}

impl Target {
    /// Parses a URL the way [`Target::new`] does (http only, with a host).
    pub fn parse_uri(url: &str) -> Result<Uri> {
        let err = |reason: &str| Error::Url {
            url: redact_url(url),
            reason: reason.into(),
        };
        let uri: Uri = url.parse().map_err(|_| err("not a valid URL"))?;
        if uri.scheme_str() != Some("http") {
            return Err(err(
                "only http:// is supported (no TLS in the load generator)",
            ));
        }
        if uri.host().is_none() {
            return Err(err("no host"));
        }
        Ok(uri)
    }

    /// Parses an `http://host:port/path?query` URL. `token` becomes
    /// `Authorization: Token <token>` (what both InfluxDB 1.8+ and 2.x accept).
    pub fn new(url: &str, token: Option<&str>, timeout: Duration) -> Result<Target> {
        let uri = Target::parse_uri(url)?;
        let auth = token
            .map(|t| {
                let mut v = header(&format!("Token {t}"), "token")?;
                v.set_sensitive(true);
                Ok::<_, Error>(v)
            })
            .transpose()?;
        Ok(Target { uri, auth, timeout })
    }
}

/// A pooled HTTP/1.1 client bound to one target and one payload set.
#[derive(Debug, Clone)]
pub struct Sender {
    client: Client<HttpConnector, Full<Bytes>>,
    target: Target,
    payloads: Arc<PayloadSet>,
}

impl Sender {
    /// A client keeping up to `pool` idle keep-alive connections (size it to
    /// the in-flight cap, so a steady state opens no new connections).
    pub fn new(target: Target, payloads: Arc<PayloadSet>, pool: usize) -> Sender {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.enforce_http(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(pool.max(1))
            .pool_idle_timeout(Duration::from_secs(90))
            .build(http);
        Sender {
            client,
            target,
            payloads,
        }
    }

    /// The target URL (with its credentials, if any: redact before printing).
    pub fn url(&self) -> String {
        self.target.uri.to_string()
    }

    /// The payloads this sender sends.
    pub fn payloads(&self) -> &PayloadSet {
        &self.payloads
    }

    /// GETs a text resource (the server's `/metrics`) with the same client,
    /// reading at most `cap` bytes; `None` on any error, non-2xx or overflow.
    pub async fn get_text(&self, uri: &Uri, cap: usize) -> Option<String> {
        let mut req = Request::new(Full::new(Bytes::new()));
        *req.uri_mut() = uri.clone();
        if let Some(auth) = &self.target.auth {
            req.headers_mut().insert(AUTHORIZATION, auth.clone());
        }
        let fetch = async {
            let resp = self.client.request(req).await.ok()?;
            if !resp.status().is_success() {
                return None;
            }
            let mut body = resp.into_body();
            let mut buf = Vec::new();
            while let Some(frame) = body.frame().await {
                if let Ok(data) = frame.ok()?.into_data() {
                    if buf.len() + data.len() > cap {
                        return None;
                    }
                    buf.extend_from_slice(&data);
                }
            }
            String::from_utf8(buf).ok()
        };
        tokio::time::timeout(self.target.timeout, fetch)
            .await
            .ok()?
    }

    /// Sends payload `n` (round-robin) and classifies the answer. The response
    /// body is drained (so the connection returns to the pool) but not kept.
    pub async fn send(&self, n: u64) -> Outcome {
        let payload = self.payloads.get(n);
        let mut req = Request::new(Full::new(payload.body.clone()));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = self.target.uri.clone();
        let h = req.headers_mut();
        h.insert(CONTENT_TYPE, self.payloads.content_type.clone());
        if let Some(enc) = &self.payloads.content_encoding {
            h.insert(CONTENT_ENCODING, enc.clone());
        }
        if let Some(auth) = &self.target.auth {
            h.insert(AUTHORIZATION, auth.clone());
        }
        let exchange = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|_| Outcome::Transport)?;
            let status = resp.status().as_u16();
            let retry_after = resp
                .headers()
                .get(RETRY_AFTER)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            let mut body = resp.into_body();
            while let Some(frame) = body.frame().await {
                if frame.is_err() {
                    return Err(Outcome::Transport);
                }
            }
            Ok(match status {
                200..=299 => Outcome::Ok,
                429 | 503 => Outcome::Shed {
                    status,
                    retry_after,
                },
                _ => Outcome::Failed {
                    status,
                    retry_after,
                },
            })
        };
        match tokio::time::timeout(self.target.timeout, exchange).await {
            Ok(Ok(o)) | Ok(Err(o)) => o,
            Err(_) => Outcome::Timeout,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_credentials() {
        assert_eq!(
            redact_url("http://h:1/write?db=x&u=me&p=secret"),
            "http://h:1/write?db=x&u=***&p=***"
        );
        assert_eq!(redact_url("http://h:1/write"), "http://h:1/write");
    }

    #[test]
    fn target_accepts_http_only() {
        let t = Duration::from_secs(1);
        assert!(Target::new("http://127.0.0.1:8086/write?db=b", Some("tok"), t).is_ok());
        assert!(Target::new("https://127.0.0.1/write", None, t).is_err());
        assert!(Target::new("not a url", None, t).is_err());
        assert!(Target::new("http://127.0.0.1/write", Some("bad\ntoken"), t).is_err());
    }

    #[test]
    fn payloads_rotate() {
        let p = |n| Payload {
            body: Bytes::from(vec![0u8; n]),
            points: n as u64,
        };
        let set = PayloadSet::new("text/plain", None, vec![p(1), p(2), p(3)]).unwrap();
        let pts: Vec<u64> = (0..7).map(|n| set.get(n).points).collect();
        assert_eq!(pts, [1, 2, 3, 1, 2, 3, 1]);
        assert!(PayloadSet::new("text/plain", None, vec![]).is_err());
    }
}
