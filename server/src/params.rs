//! `application/x-www-form-urlencoded` parameters (query strings and form
//! bodies), decoded without allocation limits beyond the input's own size.

/// Decoded key/value pairs in order.
#[derive(Debug, Default, Clone)]
pub struct Params(Vec<(String, String)>);

impl Params {
    /// Parses `a=1&b=x%20y` (`+` is a space).
    pub fn parse(s: &str) -> Params {
        Params(
            s.split('&')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once('=').unwrap_or((p, ""));
                    (decode(k), decode(v))
                })
                .collect(),
        )
    }

    /// Appends the pairs of `other` (later values lose to earlier ones in [`Params::get`]).
    pub fn extend(&mut self, other: Params) {
        self.0.extend(other.0);
    }

    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The first non-empty value of `key`.
    pub fn get_nonempty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                match std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_percent_and_plus() {
        let p = Params::parse("db=my%20db&q=SHOW+DATABASES&empty=&flag&bad=%zz&tail=%4");
        assert_eq!(p.get("db"), Some("my db"));
        assert_eq!(p.get("q"), Some("SHOW DATABASES"));
        assert_eq!(p.get("empty"), Some(""));
        assert_eq!(p.get_nonempty("empty"), None);
        assert_eq!(p.get("flag"), Some(""));
        assert_eq!(p.get("bad"), Some("%zz"));
        assert_eq!(p.get("tail"), Some("%4"));
        assert_eq!(p.get("missing"), None);
        assert_eq!(Params::parse("q=%22a%22%3B").get("q"), Some("\"a\";"));
    }
}
