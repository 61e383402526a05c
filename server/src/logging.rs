//! The server's log: `[log]` in the configuration and the subscriber
//! `chingest serve` installs.
//!
//! Brief overview:
//! - Lines go to stderr (stdout stays free for `chingest config` and friends).
//! - `format = "text"` (default): one human-readable line per event;
//!   `format = "json"`: one JSON object per line for log shippers, the event's
//!   fields flattened beside `timestamp`, `level`, `target` and `message`, the
//!   enclosing request's fields under `span`.
//! - `color = "auto"` (default) colours text only when stderr is a terminal
//!   and `NO_COLOR` is unset, so a file, a pipe, the journal or a container's
//!   log driver never gets escape codes; `"always"`/`"never"` force it.
//! - Every HTTP request runs in a `request` span carrying `request_id` (the
//!   client's `Request-Id`/`X-Request-Id`, or a generated one, echoed in the
//!   response), so whatever is logged while serving it carries the id. One
//!   access line per request (method, path without the query string, status,
//!   duration) is logged at `debug` under the target [`ACCESS_TARGET`]:
//!   `server.log = "info,chingest::access=debug"` turns it on.
//! - The filter is `server.log` (tracing `EnvFilter` syntax); `RUST_LOG` wins
//!   when set.
//! - The engine (libchdb) writes a few messages of its own straight to stderr,
//!   in neither format (e.g. why it could not open its data directory).

use std::io::IsTerminal;

use serde::{Deserialize, Serialize};

/// The target of the per-request access lines (logged at `debug`).
pub const ACCESS_TARGET: &str = "chingest::access";

/// `[log]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `text` or `json`. Default: `text`.
    pub format: LogFormat,
    /// `auto` (colour only on a terminal), `always` or `never`. Default: `auto`.
    pub color: LogColor,
}

/// `log.format`.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// `log.color`.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogColor {
    /// Colour when stderr is a terminal and `NO_COLOR` is unset or empty.
    #[default]
    Auto,
    /// Always colour (text format only).
    Always,
    /// Never colour.
    Never,
}

impl LogColor {
    /// Whether text lines get ANSI colour, given whether stderr is a terminal
    /// and the value of `NO_COLOR`.
    pub fn resolve(self, is_terminal: bool, no_color: Option<&str>) -> bool {
        match self {
            LogColor::Always => true,
            LogColor::Never => false,
            LogColor::Auto => is_terminal && no_color.is_none_or(str::is_empty),
        }
    }
}

/// Installs the process's subscriber: `filter` (`server.log`) unless
/// `RUST_LOG` is set, in `config`'s format, to stderr. A second call (or
/// another subscriber already installed) leaves the first in place.
pub fn init(filter: &str, config: &LogConfig) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(filter))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match config.format {
        LogFormat::Text => {
            let ansi = config.color.resolve(
                std::io::stderr().is_terminal(),
                std::env::var("NO_COLOR").ok().as_deref(),
            );
            builder.with_target(false).with_ansi(ansi).try_init()
        }
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_ansi(false)
            .try_init(),
    };
}

/// The `[log]` section of `chingest config --print-default`.
pub const DEFAULT_TOML: &str = r#"[log]
# "text": one human-readable line per event; "json": one JSON object per line (for log
# shippers), the request's id under span.request_id. The filter is server.log above.
format = "text"
# "auto": colour only when stderr is a terminal (never in a file, a pipe, the journal or
# a container log) and NO_COLOR is unset; "always"; "never".
color = "auto"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(LogColor::Auto.resolve(true, None));
        assert!(LogColor::Auto.resolve(true, Some("")));
        assert!(!LogColor::Auto.resolve(true, Some("1")));
        assert!(!LogColor::Auto.resolve(false, None));
        assert!(LogColor::Always.resolve(false, Some("1")));
        assert!(!LogColor::Never.resolve(true, None));
    }

    #[test]
    fn printed_default_section_parses_to_the_default() {
        #[derive(Deserialize)]
        struct Doc {
            log: LogConfig,
        }
        let doc: Doc = toml::from_str(DEFAULT_TOML).unwrap();
        assert_eq!(doc.log, LogConfig::default());
        let json: Doc = toml::from_str("[log]\nformat = \"json\"\ncolor = \"never\"\n").unwrap();
        assert_eq!(json.log.format, LogFormat::Json);
        assert_eq!(json.log.color, LogColor::Never);
        assert!(toml::from_str::<Doc>("[log]\nformat = \"xml\"\n").is_err());
    }
}
