//! Keeping secrets out of what people read (`Debug` output, logs, error messages): the one
//! placeholder, [`REDACTED`], the one way to show a URL, [`url_for_display`], and the one
//! scrubber, [`Redactor`]. Every crate of the workspace that holds a secret uses them, and
//! [`secrets_equal`] to check one a client presented.
//!
//! A secret hides in three places: a credential itself (echoed back by some servers in
//! their error messages), a URL's password, and a URL's query string (gateways that take
//! `?api-key=...`, Redis URLs with `?password=...`).
//!
//! ```
//! use agentscope_core::redact::{Redactor, url_for_display, url_secrets};
//!
//! let url = "https://user:hunter22@gw.example.com/v1?api-key=k3y-123";
//! assert_eq!(
//!     url_for_display(url),
//!     "https://user:<redacted>@gw.example.com/v1?api-key=<redacted>"
//! );
//! let redactor = Redactor::new(url_secrets(url).into_iter().chain(["sk-abc123".into()]));
//! assert_eq!(
//!     redactor.scrub("401: bad key sk-abc123 (api-key=k3y-123)"),
//!     "401: bad key <redacted> (api-key=<redacted>)"
//! );
//! ```

use std::fmt;
use std::sync::Arc;

/// What is shown instead of a secret.
pub const REDACTED: &str = "<redacted>";

/// `url` with the password of its user information and the value of every query parameter
/// replaced by [`REDACTED`], for `Debug`, logs and errors.
///
/// The URL is read as text, so it works for any scheme (`http`, `redis+unix`, ...) and for
/// a URL that would not parse. The user information ends at the last `@` (a password may
/// hold `@`, `/`, `?` or `#` when written unencoded: this redacts too much rather than too
/// little); one without `:` (`redis://secret@host`) is all redacted, since some clients
/// take it as the password.
///
/// ```
/// use agentscope_core::redact::url_for_display;
///
/// assert_eq!(url_for_display("redis://user:pa@ss@host/0"), "redis://user:<redacted>@host/0");
/// assert_eq!(url_for_display("http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080/v1");
/// ```
pub fn url_for_display(url: &str) -> String {
    redact_url(url).0
}

/// The secrets `url` holds: the password of its user information (all of it when it has
/// no `:`) and the value of every query parameter, each as written and, when it differs,
/// percent-decoded. For a [`Redactor`].
///
/// ```
/// use agentscope_core::redact::url_secrets;
///
/// assert_eq!(url_secrets("rediss://alice:p%40ss@cache:6380"), ["p@ss", "p%40ss"]);
/// assert!(url_secrets("http://127.0.0.1:8080/v1").is_empty());
/// ```
pub fn url_secrets(url: &str) -> Vec<String> {
    redact_url(url).1
}

/// The URL shown, and its secrets.
fn redact_url(url: &str) -> (String, Vec<String>) {
    let mut secrets = Vec::new();
    let url = url.trim();
    let (scheme, rest) = match url.find("://") {
        Some(at) => (&url[..at + 3], &url[at + 3..]),
        None => ("", url),
    };
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
            add_secret(&mut secrets, value);
            shown.push_str(name);
            if !value.is_empty() {
                shown.push('=');
                shown.push_str(REDACTED);
            }
        }
    }
    (shown, secrets)
}

/// Adds `secret` percent-decoded (when that differs) and as written.
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

/// `text` percent-encoded as a URL's query writes it (unreserved characters kept).
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A set of secrets, and the scrubbing of them from text meant for people: every secret,
/// and its percent-encoded form (as a URL quoted in a message writes it), is replaced by
/// [`REDACTED`].
///
/// Secrets are trimmed; one shorter than 4 characters is left out (replacing every `1` or
/// `on` of a message would garble it and protect nothing). A secret that contains another
/// is replaced whole. Cheap to clone; its `Debug` shows how many secrets it holds, never
/// one of them.
///
/// ```
/// use agentscope_core::redact::Redactor;
///
/// let redactor = Redactor::new(["my secret", "on"]);
/// assert_eq!(
///     redactor.scrub("sent my secret (my%20secret), flag on"),
///     "sent <redacted> (<redacted>), flag on"
/// );
/// assert_eq!(format!("{redactor:?}"), "Redactor { secrets: 1 }");
/// ```
#[derive(Clone, Default)]
pub struct Redactor {
    /// Every form of every secret, longest first.
    forms: Arc<[String]>,
    /// How many secrets were kept.
    count: usize,
}

impl Redactor {
    /// Secrets shorter than this (in characters) are not scrubbed.
    const MIN_CHARS: usize = 4;

    /// A redactor for `secrets`.
    pub fn new<I>(secrets: I) -> Self
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let mut kept: Vec<String> = secrets
            .into_iter()
            .map(|secret| secret.as_ref().trim().to_owned())
            .filter(|secret| secret.chars().count() >= Self::MIN_CHARS)
            .collect();
        kept.sort_unstable();
        kept.dedup();
        let count = kept.len();
        let encoded: Vec<String> = kept.iter().map(|secret| percent_encode(secret)).collect();
        kept.extend(encoded);
        kept.sort_unstable_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        kept.dedup();
        Self {
            forms: kept.into(),
            count,
        }
    }

    /// How many secrets it scrubs (those long enough, each once).
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there is no secret to scrub.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn scrub(&self, text: impl Into<String>) -> String {
        let mut text = text.into();
        for form in self.forms.iter() {
            if text.contains(form.as_str()) {
                text = text.replace(form.as_str(), REDACTED);
            }
        }
        text
    }
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.count)
            .finish()
    }
}

/// Whether a presented secret (a bearer token, say) equals the expected one, comparing every
/// byte whatever the first difference, so the time taken does not say how much of a guess
/// was right. Lengths that differ are unequal at once.
///
/// ```
/// use agentscope_core::redact::secrets_equal;
///
/// assert!(secrets_equal(b"secret", b"secret"));
/// assert!(!secrets_equal(b"secret", b"secreT"));
/// assert!(!secrets_equal(b"secret", b"secret2"));
/// ```
pub fn secrets_equal(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The edge cases of URLs with secrets (from the Redis store's parser, whose cases
    /// these are).
    #[test]
    fn passwords_and_query_values_are_not_shown() {
        let cases = [
            ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379", vec![]),
            (
                "redis://:s3cret@127.0.0.1:6379/2",
                "redis://:<redacted>@127.0.0.1:6379/2",
                vec!["s3cret"],
            ),
            (
                "rediss://alice:p%40ss%2Fw0rd@cache.example.com:6380",
                "rediss://alice:<redacted>@cache.example.com:6380",
                vec!["p@ss/w0rd", "p%40ss%2Fw0rd"],
            ),
            (
                "redis://s3cret@host",
                "redis://<redacted>@host",
                vec!["s3cret"],
            ),
            (
                "redis://user:pa@ss@host/0",
                "redis://user:<redacted>@host/0",
                vec!["pa@ss"],
            ),
            (
                "redis+unix:///run/redis.sock?db=1&pass=hunter22",
                "redis+unix:///run/redis.sock?db=<redacted>&pass=<redacted>",
                vec!["1", "hunter22"],
            ),
        ];
        for (url, shown, secrets) in cases {
            assert_eq!(url_for_display(url), shown, "{url}");
            assert_eq!(url_secrets(url), secrets, "{url}");
        }
    }

    /// The URLs model clients and MCP servers are given.
    #[test]
    fn http_urls_show_their_place_without_their_secrets() {
        let cases = [
            (
                "http://user:pw-secret@127.0.0.1:9/v1/chat/completions?key=q-secret&api-version=2024-06-01",
                "http://user:<redacted>@127.0.0.1:9/v1/chat/completions?key=<redacted>&api-version=<redacted>",
            ),
            (
                "https://gw.example.com/v1?flag&key=k%2Bsecret#frag",
                "https://gw.example.com/v1?flag&key=<redacted>",
            ),
            (" https://api.openai.com/v1 ", "https://api.openai.com/v1"),
            ("not a url", "not a url"),
            ("", ""),
        ];
        for (url, shown) in cases {
            assert_eq!(url_for_display(url), shown, "{url}");
        }
        assert_eq!(
            url_secrets("https://gw.example.com/v1?key=k%2Bsecret"),
            ["k+secret", "k%2Bsecret"]
        );
        // A stray '%' is kept as it is.
        assert_eq!(url_secrets("http://u:100%@h"), ["100%"]);
    }

    #[test]
    fn scrub_removes_every_secret_and_its_encoded_form() {
        let redactor = Redactor::new(
            url_secrets("redis://:first-secret@a")
                .into_iter()
                .chain(url_secrets("redis://u:p%40ss@b"))
                .chain(url_secrets("redis://:abc@c")),
        );
        assert_eq!(
            redactor.scrub("auth first-secret and p@ss and p%40ss; abc stays"),
            "auth <redacted> and <redacted> and <redacted>; abc stays"
        );
        let redactor = Redactor::new([" key with space ", "key", "key with space and more"]);
        assert_eq!(
            redactor.scrub("a key with space and more, key%20with%20space, key"),
            "a <redacted>, <redacted>, key"
        );
        assert!(Redactor::new(["on", " ab "]).is_empty());
        // Trimmed, long enough, each once, longest first (a secret holding another goes
        // whole).
        let redactor = Redactor::new([" abcd ", "on", "abcdefgh", "abcd"]);
        assert_eq!(redactor.len(), 2);
        assert_eq!(
            redactor.scrub("abcdefgh abcd on"),
            "<redacted> <redacted> on"
        );
        assert!(Redactor::default().is_empty());
        assert_eq!(Redactor::default().scrub("as it is"), "as it is");
    }

    #[test]
    fn debug_shows_no_secret() {
        let redactor = Redactor::new(["hunter22", "hunter22", "sk-abc"]);
        let shown = format!("{redactor:?}");
        assert_eq!(shown, "Redactor { secrets: 2 }");
    }
}
