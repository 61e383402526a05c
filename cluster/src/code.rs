//! A ClickHouse server's error code, the one place it is read (issue #43).
//!
//! Servers give it in two ways, both read here:
//! - the `X-ClickHouse-Exception-Code` header of the HTTP answer (servers since about 19.x;
//!   18.16 does not send it), taken first where sent;
//! - the error text: 18.16 writes `Code: 60, e.displayText() = DB::Exception: …, e.what() =
//!   DB::Exception`, servers since about 21.x `Code: 60. DB::Exception: … (UNKNOWN_TABLE)
//!   (version 24.8.4.13 (official build))`.
//!
//! A message may quote its cause's code after its own (`Code: 319, e.displayText() = …
//! Unknown status, client must retry. Reason: Code: 159, …`): the first is the error's. A
//! shard's error the embedded engine relays (a `url()` insert the shard refused) quotes the
//! shard's text after the engine's own code (`Code: 86. DB::HTTPException: Received error
//! from remote server …, body: 'Code: 60, …'`): the shard's code is taken.

use reqwest::header::HeaderMap;

/// The header newer servers name an error's code in.
pub(crate) const HEADER: &str = "X-ClickHouse-Exception-Code";

/// `UNKNOWN_TABLE`.
pub(crate) const UNKNOWN_TABLE: u32 = 60;
/// `UNKNOWN_DATABASE`.
pub(crate) const UNKNOWN_DATABASE: u32 = 81;
/// `INCOMPATIBLE_COLUMNS`: a replicated table's columns differ from its definition in
/// ZooKeeper.
pub(crate) const INCOMPATIBLE_COLUMNS: u32 = 122;
/// `NO_ZOOKEEPER`.
pub(crate) const NO_ZOOKEEPER: u32 = 225;
/// `TABLE_IS_READ_ONLY`: a replicated table whose ZooKeeper session is gone.
pub(crate) const TABLE_IS_READ_ONLY: u32 = 242;
/// `TOO_FEW_LIVE_REPLICAS`: an insert quorum that cannot be reached.
pub(crate) const TOO_FEW_LIVE_REPLICAS: u32 = 285;
/// `UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE`.
pub(crate) const UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE: u32 = 286;
/// `UNKNOWN_STATUS_OF_INSERT`: not known whether a quorum insert was reached in time.
pub(crate) const UNKNOWN_STATUS_OF_INSERT: u32 = 319;
/// `CANNOT_GET_CREATE_TABLE_QUERY` (18.16's `SHOW CREATE TABLE` of a table missing from an
/// existing database).
pub(crate) const CANNOT_GET_CREATE_TABLE_QUERY: u32 = 390;
/// `KEEPER_EXCEPTION` (18.16: `Coordination::Exception`).
pub(crate) const KEEPER_EXCEPTION: u32 = 999;

/// The name servers give `code` in their newer text form (`… (TOO_MANY_PARTS)`), for the
/// codes the flusher's classification knows (`flush/src/classify.rs`, which reads a
/// failure's name): 18.16 writes none, and the engine's relay of a shard's refusal ends
/// with its own (`RECEIVED_ERROR_FROM_REMOTE_IO_SERVER`). Checked against 26.7's
/// `errorCodeToName`.
pub(crate) fn name(code: u32) -> Option<&'static str> {
    Some(match code {
        6 => "CANNOT_PARSE_TEXT",
        8 => "THERE_IS_NO_COLUMN",
        10 => "NOT_FOUND_COLUMN_IN_BLOCK",
        15 => "DUPLICATE_COLUMN",
        16 => "NO_SUCH_COLUMN_IN_TABLE",
        36 => "BAD_ARGUMENTS",
        43 => "ILLEGAL_TYPE_OF_ARGUMENT",
        44 => "ILLEGAL_COLUMN",
        47 => "UNKNOWN_IDENTIFIER",
        49 => "LOGICAL_ERROR",
        50 => "UNKNOWN_TYPE",
        53 => "TYPE_MISMATCH",
        60 => "UNKNOWN_TABLE",
        62 => "SYNTAX_ERROR",
        70 => "CANNOT_CONVERT_TYPE",
        72 => "CANNOT_PARSE_NUMBER",
        81 => "UNKNOWN_DATABASE",
        122 => "INCOMPATIBLE_COLUMNS",
        159 => "TIMEOUT_EXCEEDED",
        173 => "CANNOT_ALLOCATE_MEMORY",
        202 => "TOO_MANY_SIMULTANEOUS_QUERIES",
        209 => "SOCKET_TIMEOUT",
        218 => "TABLE_IS_DROPPED",
        241 => "MEMORY_LIMIT_EXCEEDED",
        242 => "TABLE_IS_READ_ONLY",
        243 => "NOT_ENOUGH_SPACE",
        252 => "TOO_MANY_PARTS",
        394 => "QUERY_WAS_CANCELLED",
        _ => return None,
    })
}

/// The code of an error answer: its [`HEADER`] where sent, else the text's ([`in_text`]).
pub(crate) fn of_answer(headers: &HeaderMap, body: &str) -> Option<u32> {
    headers
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
        .or_else(|| in_text(body))
}

/// The first `Code: N` of `text` followed by `,` (18.16) or `.` (21.x and later) — a
/// server's own message may quote a cause's code after it (`Code: 319, … Reason: Code:
/// 159, …`) —, or in a relay of a shard's answer (`… body: 'Code: 319, …'`), the first of
/// the shard's.
pub fn in_text(text: &str) -> Option<u32> {
    let relayed = text.find(RELAYED_BODY).map(|at| &text[at..]);
    relayed.and_then(first_code).or_else(|| first_code(text))
}

/// What comes before the shard's answer in the engine's relay of it.
const RELAYED_BODY: &str = "body: ";

/// The first `Code: N` followed by `,` or `.` in `text`.
fn first_code(text: &str) -> Option<u32> {
    let mut rest = text;
    while let Some(at) = rest.find("Code: ") {
        rest = &rest[at + "Code: ".len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && matches!(rest.as_bytes().get(digits), Some(b',' | b'.')) {
            if let Ok(code) = rest[..digits].parse() {
                return Some(code);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers as 18.16 writes them (recorded from Debian's 18.16.1), and as servers since
    /// 21.x do (their `getExceptionMessage` form: `Code: N. DB::Exception: … (NAME) (version
    /// …)`), and as the embedded 26.7 engine relays a shard's.
    #[test]
    fn both_forms_of_the_text_and_the_header_give_the_code() {
        let cases: [(&str, u32); 11] = [
            (
                "Code: 60, e.displayText() = DB::Exception: Table default.x doesn't exist., \
                 e.what() = DB::Exception\n",
                60,
            ),
            (
                "Code: 81, e.displayText() = DB::Exception: Database nope doesn't exist, \
                 e.what() = DB::Exception\n",
                81,
            ),
            (
                "Code: 390, e.displayText() = DB::Exception: There is no metadata file for \
                 table x, e.what() = DB::Exception\n",
                390,
            ),
            (
                "Code: 60. DB::Exception: Table default.x does not exist. (UNKNOWN_TABLE) \
                 (version 24.8.4.13 (official build))\n",
                60,
            ),
            (
                "Code: 242. DB::Exception: Table is in readonly mode: replica_path=/c/0/a/b/\
                 replicas/r1. (TABLE_IS_READ_ONLY) (version 23.8.16.40 (official build))\n",
                242,
            ),
            (
                "Code: 999. Coordination::Exception: Connection loss, path /c/0. \
                 (KEEPER_EXCEPTION) (version 25.8.2.29 (official build))\n",
                999,
            ),
            (
                "Code: 253. DB::Exception: Replica /c/0/a/b/replicas/r1 already exists. \
                 (REPLICA_ALREADY_EXISTS) (version 22.8.21.38 (official build))",
                253,
            ),
            // A cause quoted after the error's own code.
            (
                "Code: 319, e.displayText() = DB::Exception: Unknown status, client must retry. \
                 Reason: Code: 159, e.displayText() = DB::Exception: Timeout while waiting for \
                 quorum, e.what() = DB::Exception, e.what() = DB::Exception\n",
                319,
            ),
            // The engine's relay of a shard's refusal (recorded from the embedded 26.7
            // relaying 18.16's): the shard's code, not the relay's nor the cause's.
            (
                "Code: 86. DB::HTTPException: Received error from remote server \
                 /?query=INSERT+INTO+%60__shard_t%60.%60cpu%60+FORMAT+Native&insert_quorum=2. \
                 HTTP status code: 500 'Internal Server Error', body length: 216 bytes, body: \
                 'Code: 319, e.displayText() = DB::Exception: Unknown status, client must \
                 retry. Reason: Code: 159, e.displayText() = DB::Exception: Timeout while \
                 waiting for quorum, e.what() = DB::Exception, e.what() = DB::Exception\n'. \
                 (RECEIVED_ERROR_FROM_REMOTE_IO_SERVER)",
                319,
            ),
            (
                "Code: 86. DB::HTTPException: Received error from remote server /?query=INSERT. \
                 HTTP status code: 500 'Internal Server Error', body length: 120 bytes, body: \
                 'Code: 242, e.displayText() = DB::Exception: Table is in readonly mode, \
                 e.what() = DB::Exception\n'. (RECEIVED_ERROR_FROM_REMOTE_IO_SERVER)",
                242,
            ),
            (
                "Code: 86. DB::HTTPException: Received error from remote server /?query=INSERT. \
                 HTTP status code: 404 'Not Found', body length: 110 bytes, body: 'Code: 60. \
                 DB::Exception: Table __shard_a.m does not exist. (UNKNOWN_TABLE) (version \
                 24.3.1.2672 (official build))\n'. (RECEIVED_ERROR_FROM_REMOTE_IO_SERVER)",
                60,
            ),
        ];
        for (body, code) in cases {
            assert_eq!(in_text(body), Some(code), "{body}");
            assert_eq!(of_answer(&HeaderMap::new(), body), Some(code), "{body}");
        }
        assert_eq!(in_text("Code: x, nothing"), None);
        assert_eq!(in_text("Error Code: 12 without a separator"), None);
        assert_eq!(in_text("no code at all"), None);
        // The header wins where sent: a body without a code (a format's own error text).
        let mut headers = HeaderMap::new();
        headers.insert(HEADER, "242".parse().unwrap());
        assert_eq!(of_answer(&headers, "something went wrong"), Some(242));
        assert_eq!(of_answer(&headers, "Code: 60. DB::Exception: x"), Some(242));
        headers.insert(HEADER, "junk".parse().unwrap());
        assert_eq!(of_answer(&headers, "Code: 60. DB::Exception: x"), Some(60));
    }
}
