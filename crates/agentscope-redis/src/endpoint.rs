//! [`Endpoint`]: a Redis URL as given (to connect with, never shown), as shown (its
//! password and query values redacted), and the secrets it holds (scrubbed from error
//! messages), by the workspace's one redaction rule (`agentscope_core::redact`).

use std::fmt;

use agentscope_core::redact::{Redactor, url_for_display, url_secrets};

/// A Redis URL: the URL as given, the URL shown, and the secrets it holds.
#[derive(Clone)]
pub(crate) struct Endpoint {
    url: String,
    shown: String,
    secrets: Vec<String>,
}

impl Endpoint {
    pub(crate) fn new(url: impl Into<String>) -> Self {
        let url = url.into();
        Self {
            shown: url_for_display(&url),
            secrets: url_secrets(&url),
            url,
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
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.shown, f)
    }
}

/// `text` with every secret of `endpoints` redacted (a second line of defence: no message
/// of the Redis client quotes a password).
pub(crate) fn scrub(text: &str, endpoints: &[Endpoint]) -> String {
    Redactor::new(endpoints.iter().flat_map(|endpoint| &endpoint.secrets)).scrub(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_and_query_values_are_not_shown() {
        let cases = [
            ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
            (
                "redis://:s3cret@127.0.0.1:6379/2",
                "redis://:<redacted>@127.0.0.1:6379/2",
            ),
            (
                "rediss://alice:p%40ss%2Fw0rd@cache.example.com:6380",
                "rediss://alice:<redacted>@cache.example.com:6380",
            ),
            ("redis://s3cret@host", "redis://<redacted>@host"),
            (
                "redis://user:pa@ss@host/0",
                "redis://user:<redacted>@host/0",
            ),
            (
                "redis+unix:///run/redis.sock?db=1&pass=hunter22",
                "redis+unix:///run/redis.sock?db=<redacted>&pass=<redacted>",
            ),
        ];
        for (url, shown) in cases {
            let endpoint = Endpoint::new(url);
            assert_eq!(endpoint.shown(), shown, "{url}");
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
            "auth <redacted> and <redacted> and <redacted>; abc stays"
        );
    }

    #[test]
    fn tls_schemes() {
        assert!(Endpoint::new("rediss://h").is_tls());
        assert!(Endpoint::new("REDISS://h").is_tls());
        assert!(!Endpoint::new("redis://h").is_tls());
    }
}
