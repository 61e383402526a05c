//! The web console (issue #45): a page at `/` to query, browse, watch and write.
//!
//! Brief overview:
//! - `GET /` answers the page and `GET /console/<version>/<file>` its scripts,
//!   stylesheets and uPlot ([`assets`]), all embedded in the binary: nothing is fetched
//!   from elsewhere, so the console works offline and on a locked-down network.
//! - These answers need no credentials (they hold no data): [`router`] is merged into
//!   the app outside the authentication layer. What the page shows comes from the
//!   existing endpoints (`/query`, `/api/v1/sql`, `/write`, `/metrics`, `/health`),
//!   called with the user's credentials in an `Authorization` header, under the same
//!   permissions, limits and SQL sandbox as any other client.
//! - Every answer carries a strict Content-Security-Policy ([`CSP`]): scripts and
//!   styles only from this server, none inline, no frames, no DOM sinks for strings
//!   (Trusted Types), so a value shown on the page (a tag value, an engine error) can
//!   never run as code there.
//! - The page is revalidated on every load (`no-cache`, `ETag`); the other files are
//!   immutable under their version and cached for a year; both are sent gzipped to
//!   clients that accept it.

mod assets;

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use assets::{Prepared, ASSETS};

/// The policy of every console answer: scripts, styles, images and fetches from
/// this origin only; nothing inline (the page has no inline script or style);
/// no plugins, no `<base>`, forms posting nowhere, never framed; DOM sinks that
/// parse strings as HTML or script refuse them (the console builds its DOM from
/// nodes and text).
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; \
     trusted-types 'none'";

const PAGE_CACHE: &str = "no-cache";
const FILE_CACHE: &str = "public, max-age=31536000, immutable";

/// The console's routes, for any router state; see the module doc.
pub fn router<T: Clone + Send + Sync + 'static>() -> Router<T> {
    Router::new()
        .route("/", get(page))
        .route("/console/{version}/{file}", get(file))
}

/// `GET /`.
async fn page(headers: HeaderMap) -> Response {
    serve(&ASSETS.index, &headers, PAGE_CACHE)
}

/// `GET /console/<version>/<file>`: 404 for another version (a page of an older
/// build: reloading it gets the current one).
async fn file(Path((version, name)): Path<(String, String)>, headers: HeaderMap) -> Response {
    match ASSETS.file(&name) {
        Some(f) if version == ASSETS.version => serve(f, &headers, FILE_CACHE),
        _ => {
            let mut resp = (StatusCode::NOT_FOUND, "not found\n").into_response();
            protect(resp.headers_mut());
            resp
        }
    }
}

/// `f`'s answer: `304` when the client holds it, its gzip copy when accepted.
fn serve(f: &Prepared, headers: &HeaderMap, cache: &'static str) -> Response {
    let gzip = f.gzip.as_ref().filter(|_| accepts_gzip(headers));
    let etag = if gzip.is_some() {
        &f.etag_gzip
    } else {
        &f.etag
    };
    let mut resp = if holds(headers, etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let body = gzip.unwrap_or(&f.identity).clone();
        let mut resp = body.into_response();
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(f.content_type),
        );
        if gzip.is_some() {
            h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        resp
    };
    let h = resp.headers_mut();
    h.insert(header::ETAG, etag.clone());
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    protect(h);
    resp
}

/// The security headers of every console answer.
fn protect(h: &mut HeaderMap) {
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
}

/// Whether `Accept-Encoding` accepts gzip (`gzip` or `*`, not at `q=0`).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    let Some(v) = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let mut star = false;
    for item in v.split(',') {
        let mut parts = item.split(';').map(str::trim);
        let coding = parts.next().unwrap_or("");
        let refused = parts.any(|p| {
            p.strip_prefix("q=")
                .and_then(|q| q.parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        if coding.eq_ignore_ascii_case("gzip") {
            return !refused;
        }
        if coding == "*" {
            star = !refused;
        }
    }
    star
}

/// Whether `If-None-Match` names `etag` (or `*`).
fn holds(headers: &HeaderMap, etag: &HeaderValue) -> bool {
    let Some(v) = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let etag = etag.to_str().unwrap_or("");
    v.split(',')
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == "*" || t == etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(name: header::HeaderName, v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn gzip_is_sent_only_when_accepted() {
        let ae = |v| accepts_gzip(&with(header::ACCEPT_ENCODING, v));
        assert!(!accepts_gzip(&HeaderMap::new()));
        assert!(ae("gzip, deflate, br, zstd"));
        assert!(ae("br;q=1.0, GZIP;q=0.5"));
        assert!(ae("*"));
        assert!(!ae("gzip;q=0"));
        assert!(!ae("gzip;q=0.0, *"));
        assert!(!ae("br, *;q=0"));
        assert!(!ae("identity"));
    }

    #[test]
    fn if_none_match_compares_strong_and_weak_tags() {
        let tag = HeaderValue::from_static("\"abc\"");
        assert!(holds(&with(header::IF_NONE_MATCH, "\"abc\""), &tag));
        assert!(holds(
            &with(header::IF_NONE_MATCH, "\"x\", W/\"abc\""),
            &tag
        ));
        assert!(holds(&with(header::IF_NONE_MATCH, "*"), &tag));
        assert!(!holds(&with(header::IF_NONE_MATCH, "\"abc-gz\""), &tag));
        assert!(!holds(&HeaderMap::new(), &tag));
    }

    #[test]
    fn the_policy_allows_nothing_inline_and_no_framing() {
        assert!(!CSP.contains("unsafe"), "{CSP}");
        for d in [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "frame-ancestors 'none'",
            "object-src 'none'",
            "require-trusted-types-for 'script'",
        ] {
            assert!(CSP.contains(d), "{d} missing from {CSP}");
        }
    }
}
