//! A minimal pooled HTTP/1.1 client for the query benchmark: whole bodies in,
//! whole bodies out (answers are checked, so they must be read anyway).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::error::{Error, Result};

/// A status and the whole response body.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// The response body.
    pub body: Bytes,
    /// chingest's `X-Chingest-Read-Path` header (which path answered), if sent.
    pub read_path: Option<String>,
}

/// Pooled keep-alive connections to any number of loopback servers.
#[derive(Debug, Clone)]
pub struct Http {
    client: Client<HttpConnector, Full<Bytes>>,
    timeout: Duration,
}

impl Http {
    /// A client keeping up to `pool` idle connections per server.
    pub fn new(pool: usize, timeout: Duration) -> Http {
        let mut conn = HttpConnector::new();
        conn.set_nodelay(true);
        conn.enforce_http(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(pool.max(1))
            .pool_idle_timeout(Duration::from_secs(90))
            .build(conn);
        Http { client, timeout }
    }

    /// GETs `uri`, reading the whole answer.
    pub async fn get(&self, uri: &Uri) -> Result<Reply> {
        let mut req = Request::new(Full::new(Bytes::new()));
        *req.uri_mut() = uri.clone();
        self.exchange(req).await
    }

    /// POSTs `body` as `content_type` to `uri`, reading the whole answer.
    pub async fn post(&self, uri: &Uri, content_type: &'static str, body: Bytes) -> Result<Reply> {
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = uri.clone();
        req.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        self.exchange(req).await
    }

    async fn exchange(&self, req: Request<Full<Bytes>>) -> Result<Reply> {
        let uri = req.uri().to_string();
        let fail = |reason: String| Error::Http {
            url: crate::client::redact_url(&uri),
            reason,
        };
        let go = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| fail(e.to_string()))?;
            let status = resp.status().as_u16();
            let read_path = resp
                .headers()
                .get("x-chingest-read-path")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| fail(e.to_string()))?
                .to_bytes();
            Ok(Reply {
                status,
                body,
                read_path,
            })
        };
        tokio::time::timeout(self.timeout, go)
            .await
            .map_err(|_| fail(format!("no answer within {:?}", self.timeout)))?
    }
}

/// Percent-encodes a query-string value (RFC 3986 unreserved characters stay).
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3 / 2);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_query_text() {
        assert_eq!(
            encode_component(r#"SELECT mean("x") FROM "cpu" WHERE t='a b'"#),
            "SELECT%20mean%28%22x%22%29%20FROM%20%22cpu%22%20WHERE%20t%3D%27a%20b%27"
        );
        assert_eq!(encode_component("host-00042_~."), "host-00042_~.");
    }
}
