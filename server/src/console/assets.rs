//! The console's files, embedded into the binary at build time.
//!
//! The page, its scripts and its stylesheet are this directory's `web/`; uPlot's
//! script, stylesheet and licence come from `CHINGEST_UPLOT_DIR`, where
//! `scripts/setup.sh` keeps the npm package it fetched and checked (a pinned
//! dependency, not code in the repository). Each file is prepared once, at its
//! first request: a gzip copy when that is smaller, and an `ETag`.
//!
//! Every file but the page is served under `/console/<version>/`, where the version
//! is a digest of all of them: those answers may be cached for a year (a new build
//! with other files has another version), and the page, always revalidated, names
//! the current one.

use std::io::Write;
use std::sync::LazyLock;

use axum::http::HeaderValue;
use bytes::Bytes;
use sha2::{Digest, Sha256};

/// Where uPlot's files are (`.cargo/config.toml`, written by `scripts/setup.sh`).
macro_rules! uplot_file {
    ($name:literal) => {
        include_bytes!(concat!(
            env!(
                "CHINGEST_UPLOT_DIR",
                "run scripts/setup.sh: it fetches uPlot (the web console's charts) and names \
                 its directory in .cargo/config.toml"
            ),
            "/",
            $name
        ))
    };
}

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";

/// The page's placeholder for `/console/<version>`.
const BASE_PLACEHOLDER: &str = "{{base}}";

/// The page.
const INDEX: &[u8] = include_bytes!("web/index.html");

/// Every file under `/console/<version>/`: name, content type, bytes.
const FILES: &[(&str, &str, &[u8])] = &[
    ("console.css", CSS, include_bytes!("web/console.css")),
    ("icon.svg", "image/svg+xml", include_bytes!("web/icon.svg")),
    ("app.js", JS, include_bytes!("web/app.js")),
    ("api.js", JS, include_bytes!("web/api.js")),
    ("dom.js", JS, include_bytes!("web/dom.js")),
    ("query.js", JS, include_bytes!("web/query.js")),
    ("results.js", JS, include_bytes!("web/results.js")),
    ("chart.js", JS, include_bytes!("web/chart.js")),
    ("browse.js", JS, include_bytes!("web/browse.js")),
    ("watch.js", JS, include_bytes!("web/watch.js")),
    ("prom.js", JS, include_bytes!("web/prom.js")),
    ("write.js", JS, include_bytes!("web/write.js")),
    ("uPlot.iife.min.js", JS, uplot_file!("uPlot.iife.min.js")),
    ("uPlot.min.css", CSS, uplot_file!("uPlot.min.css")),
    ("uPlot.LICENSE.txt", TEXT, uplot_file!("LICENSE")),
];

/// One file as served.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// `Content-Type`.
    pub(crate) content_type: &'static str,
    /// The bytes as they are.
    pub(crate) identity: Bytes,
    /// The gzip copy, when smaller.
    pub(crate) gzip: Option<Bytes>,
    /// A strong `ETag` of the bytes as they are (the gzip copy's adds `-gz`).
    pub(crate) etag: HeaderValue,
    /// The gzip copy's `ETag`.
    pub(crate) etag_gzip: HeaderValue,
}

/// Every file, prepared; see the module doc.
#[derive(Debug)]
pub(crate) struct Assets {
    /// The digest of every file under `/console/<version>/`.
    pub(crate) version: String,
    /// The page, with the version filled in.
    pub(crate) index: Prepared,
    files: Vec<(&'static str, Prepared)>,
}

impl Assets {
    /// The file `name` under `/console/<version>/`.
    pub(crate) fn file(&self, name: &str) -> Option<&Prepared> {
        self.files.iter().find(|(n, _)| *n == name).map(|(_, p)| p)
    }

    /// The names of the files under `/console/<version>/`.
    #[cfg(test)]
    pub(crate) fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.files.iter().map(|(n, _)| *n)
    }
}

/// The console's files, prepared at first use.
pub(crate) static ASSETS: LazyLock<Assets> = LazyLock::new(prepare);

fn prepare() -> Assets {
    let mut all = Sha256::new();
    for (name, _, bytes) in FILES {
        all.update((name.len() as u64).to_le_bytes());
        all.update(name.as_bytes());
        all.update((bytes.len() as u64).to_le_bytes());
        all.update(bytes);
    }
    let version = hex(&all.finalize()[..8]);
    let page =
        String::from_utf8_lossy(INDEX).replace(BASE_PLACEHOLDER, &format!("/console/{version}"));
    Assets {
        index: prepared("text/html; charset=utf-8", Bytes::from(page)),
        files: FILES
            .iter()
            .map(|(name, ty, bytes)| (*name, prepared(ty, Bytes::from_static(bytes))))
            .collect(),
        version,
    }
}

fn prepared(content_type: &'static str, identity: Bytes) -> Prepared {
    let digest = hex(&Sha256::digest(&identity)[..12]);
    let etag = HeaderValue::from_str(&format!("\"{digest}\"")).expect("hex is a valid header");
    let etag_gzip =
        HeaderValue::from_str(&format!("\"{digest}-gz\"")).expect("hex is a valid header");
    let gzip = gzip(&identity).filter(|z| z.len() < identity.len());
    Prepared {
        content_type,
        identity,
        gzip: gzip.map(Bytes::from),
        etag,
        etag_gzip,
    }
}

fn gzip(data: &[u8]) -> Option<Vec<u8>> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(data).ok()?;
    e.finish().ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_only_files_that_exist_and_every_script_is_named() {
        let a = &*ASSETS;
        let page = String::from_utf8_lossy(&a.index.identity).into_owned();
        assert!(!page.contains(BASE_PLACEHOLDER));
        let base = format!("/console/{}/", a.version);
        let named: Vec<&str> = page
            .split(&base)
            .skip(1)
            .map(|rest| &rest[..rest.find('"').expect("a quoted path")])
            .collect();
        assert!(named.contains(&"app.js") && named.contains(&"uPlot.iife.min.js"));
        for n in &named {
            assert!(
                a.file(n).is_some(),
                "the page names {n}, which is not embedded"
            );
        }
        // Every module but the entry point is imported by another one.
        let sources: String = FILES
            .iter()
            .filter(|(n, _, _)| n.ends_with(".js"))
            .map(|(_, _, b)| String::from_utf8_lossy(b).into_owned())
            .collect();
        for name in a
            .names()
            .filter(|n| n.ends_with(".js") && !named.contains(n))
        {
            assert!(
                sources.contains(&format!("\"./{name}\"")),
                "{name} is embedded but nothing loads it"
            );
        }
    }

    #[test]
    fn gzip_copies_are_smaller_and_etags_differ() {
        let a = &*ASSETS;
        let js = a.file("uPlot.iife.min.js").unwrap();
        let z = js.gzip.as_ref().expect("a minified script compresses");
        assert!(z.len() < js.identity.len() / 2);
        assert_ne!(js.etag, js.etag_gzip);
        assert_eq!(a.version.len(), 16);
    }
}
