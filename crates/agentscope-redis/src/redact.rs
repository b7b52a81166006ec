//! Redis URLs without their secrets: what `Debug`, errors and logs show.

use std::fmt;

/// What stands for a secret in shown text.
pub(crate) const REDACTED: &str = "***";

/// A Redis URL: the URL as given (to connect with; never shown), the URL shown, and the
/// secrets it holds (scrubbed from error messages).
#[derive(Clone)]
pub(crate) struct Endpoint {
    url: String,
    shown: String,
    secrets: Vec<String>,
}

impl Endpoint {
    pub(crate) fn new(url: impl Into<String>) -> Self {
        let url = url.into();
        let (shown, secrets) = redact(&url);
        Self {
            url,
            shown,
            secrets,
        }
    }

    /// The URL as given, with its password: only for connecting.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The URL without its password (and query values).
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// Whether the URL asks for TLS (`rediss://`).
    pub(crate) fn is_tls(&self) -> bool {
        let scheme = self.url.split("://").next().unwrap_or_default();
        scheme.eq_ignore_ascii_case("rediss") || scheme.eq_ignore_ascii_case("valkeys")
    }

    pub(crate) fn secrets(&self) -> &[String] {
        &self.secrets
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.shown, f)
    }
}

/// `url` with the password of its user information and the values of its query replaced by
/// [`REDACTED`], and the secrets removed (the password as written and percent-decoded, and
/// the values of `pass` and `password` query parameters).
///
/// `redis://user:secret@host:6379/0` shows as `redis://user:***@host:6379/0`; a user
/// information without `:` (`redis://secret@host`) is all redacted, since some clients take
/// it as the password.
pub(crate) fn redact(url: &str) -> (String, Vec<String>) {
    let mut secrets = Vec::new();
    let (scheme, rest) = match url.find("://") {
        Some(at) => (&url[..at + 3], &url[at + 3..]),
        None => ("", url),
    };
    // The user information ends at the last '@' (a password may hold '@', '/', '?' or '#'
    // when written unencoded: redact too much rather than too little).
    let (userinfo, rest) = match rest.rfind('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let mut shown = String::from(scheme);
    if let Some(userinfo) = userinfo {
        match userinfo.split_once(':') {
            Some((user, password)) => {
                add_secret(&mut secrets, password);
                shown.push_str(user);
                shown.push(':');
            }
            None => add_secret(&mut secrets, userinfo),
        }
        shown.push_str(REDACTED);
        shown.push('@');
    }
    let (location, query) = match rest.split_once('?') {
        Some((location, query)) => (location, Some(query)),
        None => (rest, None),
    };
    shown.push_str(location);
    if let Some(query) = query {
        let query = query.split('#').next().unwrap_or_default();
        shown.push('?');
        for (index, pair) in query.split('&').enumerate() {
            if index > 0 {
                shown.push('&');
            }
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            if matches!(name, "pass" | "password") {
                add_secret(&mut secrets, value);
            }
            shown.push_str(name);
            if !value.is_empty() {
                shown.push('=');
                shown.push_str(REDACTED);
            }
        }
    }
    (shown, secrets)
}

fn add_secret(secrets: &mut Vec<String>, secret: &str) {
    if secret.is_empty() {
        return;
    }
    let decoded = percent_decode(secret);
    if decoded != secret && !decoded.is_empty() {
        secrets.push(decoded);
    }
    secrets.push(secret.to_owned());
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `text` with every secret of `endpoints` replaced by [`REDACTED`]. Secrets shorter than 4
/// bytes are left (they would mangle every word holding their letters; no message of the
/// Redis client quotes a password anyway: this is a second line of defence).
pub(crate) fn scrub(text: &str, endpoints: &[Endpoint]) -> String {
    let mut text = text.to_owned();
    for secret in endpoints.iter().flat_map(Endpoint::secrets) {
        if secret.len() >= 4 && text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), REDACTED);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_and_query_values_are_not_shown() {
        let cases = [
            ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379", vec![]),
            (
                "redis://:s3cret@127.0.0.1:6379/2",
                "redis://:***@127.0.0.1:6379/2",
                vec!["s3cret"],
            ),
            (
                "rediss://alice:p%40ss%2Fw0rd@cache.example.com:6380",
                "rediss://alice:***@cache.example.com:6380",
                vec!["p@ss/w0rd", "p%40ss%2Fw0rd"],
            ),
            ("redis://s3cret@host", "redis://***@host", vec!["s3cret"]),
            (
                "redis://user:pa@ss@host/0",
                "redis://user:***@host/0",
                vec!["pa@ss"],
            ),
            (
                "redis+unix:///run/redis.sock?db=1&pass=hunter22",
                "redis+unix:///run/redis.sock?db=***&pass=***",
                vec!["hunter22"],
            ),
        ];
        for (url, shown, secrets) in cases {
            let endpoint = Endpoint::new(url);
            assert_eq!(endpoint.shown(), shown, "{url}");
            assert_eq!(endpoint.secrets(), secrets, "{url}");
            assert_eq!(format!("{endpoint:?}"), format!("{shown:?}"));
        }
    }

    #[test]
    fn scrub_removes_every_secret() {
        let endpoints = [
            Endpoint::new("redis://:first-secret@a"),
            Endpoint::new("redis://u:p%40ss@b"),
            Endpoint::new("redis://:abc@c"),
        ];
        assert_eq!(
            scrub(
                "auth first-secret and p@ss and p%40ss; abc stays",
                &endpoints
            ),
            "auth *** and *** and ***; abc stays"
        );
    }

    #[test]
    fn tls_schemes() {
        assert!(Endpoint::new("rediss://h").is_tls());
        assert!(Endpoint::new("REDISS://h").is_tls());
        assert!(!Endpoint::new("redis://h").is_tls());
    }
}
