//! Cross-site requests from browsers, refused while auth is off.
//!
//! With auth off (the default) every endpoint is open to whoever can reach the
//! port, and a web page the operator opens can make the operator's browser
//! send requests there (`fetch(…, {mode: "no-cors"})`, a form post). The
//! answer is unreadable to the page, but the request still runs. So, with auth
//! off, a request to any endpoint but `/ping`, `/health` and `/metrics` (so
//! `/write`, `/api/v2/write`, `/query`, `/api/v1/sql` and the admin endpoints)
//! is refused with 403 when a browser marks it as coming from another site:
//! an `Origin` header that is
//! not this server's own origin (scheme-less comparison with `Host`), or
//! `Sec-Fetch-Site: cross-site` / `same-site`. Clients that are not browsers
//! (Telegraf, Grafana's server-side proxy, curl, client libraries) send
//! neither and are unaffected. With auth on, credentials decide.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::Response;

use crate::error::{Api, ApiError};

/// Read-only operator endpoints, open to any page (they change nothing).
const EXEMPT: &[&str] = &["/ping", "/health", "/metrics"];

/// Middleware (state: whether auth is enabled): see the module doc.
pub async fn refuse_cross_site(
    State(auth_enabled): State<bool>,
    req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path();
    if !auth_enabled && !EXEMPT.contains(&path) {
        if let Some(why) = cross_site(req.headers()) {
            tracing::info!(path, "refused a cross-site browser request: {why}");
            return ApiError::Forbidden(format!(
                "cross-site request refused ({why}): with auth off, chingest does not accept \
                 writes or statements sent by a browser from another site; enable [auth] to \
                 serve browser clients of other origins"
            ))
            .into_response_for(Api::for_path(path));
        }
    }
    next.run(req).await
}

/// Why the request is cross-site, if a browser says it is.
fn cross_site(headers: &HeaderMap) -> Option<String> {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        if site.eq_ignore_ascii_case("cross-site") || site.eq_ignore_ascii_case("same-site") {
            return Some(format!("Sec-Fetch-Site: {site}"));
        }
    }
    let origin = headers.get(header::ORIGIN)?;
    let origin = origin.to_str().unwrap_or("");
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if same_origin(origin, host) {
        None
    } else {
        Some(format!("Origin {origin:?} is not this server ({host:?})"))
    }
}

/// Whether `origin` (`scheme://host[:port]`) names the same host and port as
/// the request's `Host` header.
fn same_origin(origin: &str, host: &str) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else {
        // "null" (sandboxed frames, file: pages) and anything unparsable.
        return false;
    };
    if host.is_empty() || authority.is_empty() || authority.contains('/') {
        return false;
    }
    if authority.eq_ignore_ascii_case(host) {
        return true;
    }
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => "80",
        "https" => "443",
        _ => return false,
    };
    // An explicit default port on one side only.
    let with_default = |a: &str| format!("{a}:{default_port}");
    with_default(authority).eq_ignore_ascii_case(host)
        || authority.eq_ignore_ascii_case(&with_default(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_compare_with_host_and_default_ports() {
        assert!(same_origin("http://127.0.0.1:8086", "127.0.0.1:8086"));
        assert!(same_origin("http://LOCALHOST:8086", "localhost:8086"));
        assert!(same_origin("http://example.com", "example.com:80"));
        assert!(same_origin("https://example.com:443", "example.com"));
        assert!(!same_origin("http://localhost:3000", "localhost:8086"));
        assert!(!same_origin("https://evil.example", "127.0.0.1:8086"));
        assert!(!same_origin("null", "127.0.0.1:8086"));
        assert!(!same_origin("http://127.0.0.1:8086", ""));
        assert!(!same_origin("http://127.0.0.1:8086/x", "127.0.0.1:8086"));
    }

    #[test]
    fn browsers_mark_cross_site_requests() {
        let mut h = HeaderMap::new();
        assert_eq!(cross_site(&h), None, "no browser headers: not a browser");
        h.insert(header::HOST, "127.0.0.1:8086".parse().unwrap());
        h.insert(header::ORIGIN, "http://127.0.0.1:8086".parse().unwrap());
        assert_eq!(cross_site(&h), None);
        h.insert(header::ORIGIN, "https://evil.example".parse().unwrap());
        assert!(cross_site(&h).is_some());
        let mut h = HeaderMap::new();
        h.insert("sec-fetch-site", "cross-site".parse().unwrap());
        assert!(cross_site(&h).is_some());
        h.insert("sec-fetch-site", "same-origin".parse().unwrap());
        assert_eq!(cross_site(&h), None);
    }
}
