//! The URL a client posts to: a configured base URL, checked, with the protocol's path.

use agentscope_core::ModelError;
use reqwest::Url;

use agentscope_core::redact::url_for_display;

/// `base_url` with `path` (segments joined by `/`, e.g. `chat/completions` or
/// `v1/messages`) appended, keeping a query string (`?api-version=...`). Only the part of
/// `path` the base does not already end with is appended, so a base given with all or the
/// start of the path is completed, not repeated.
///
/// ```
/// use agentscope_http::endpoint_url;
///
/// let join = |base| endpoint_url(base, "v1/messages").map(|url| url.to_string());
/// assert_eq!(join("https://api.anthropic.com")?, "https://api.anthropic.com/v1/messages");
/// assert_eq!(join("http://127.0.0.1:4000/v1/")?, "http://127.0.0.1:4000/v1/messages");
/// assert_eq!(join("http://gw/v1/messages?key=k")?, "http://gw/v1/messages?key=k");
/// assert!(join("ftp://example.com").is_err());
/// # Ok::<(), agentscope_core::ModelError>(())
/// ```
///
/// # Errors
///
/// [`ModelError::Config`] when `base_url` is not an `http(s)` URL with a host (the message
/// shows the URL without its password and query).
pub fn endpoint_url(base_url: &str, path: &str) -> Result<Url, ModelError> {
    let config = |message: String| ModelError::Config { message };
    let mut url =
        Url::parse(base_url.trim()).map_err(|err| config(format!("invalid base URL: {err}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(config(format!(
            "invalid base URL {}: expected an http(s) URL",
            url_for_display(base_url)
        )));
    }
    let wanted: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let have: Vec<String> = url
        .path_segments()
        .map(|segments| {
            segments
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    // The longest start of `wanted` that the base's path already ends with.
    let done = (0..=wanted.len())
        .rev()
        .find(|&k| have.len() >= k && have[have.len() - k..] == wanted[..k])
        .unwrap_or(0);
    match url.path_segments_mut() {
        Ok(mut segments) => {
            segments.pop_if_empty().extend(&wanted[done..]);
        }
        Err(()) => {
            return Err(config(format!(
                "invalid base URL {}",
                url_for_display(base_url)
            )));
        }
    }
    Ok(url)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn completes_the_path_without_repeating_it() {
        let join = |base: &str, path: &str| endpoint_url(base, path).unwrap().to_string();
        assert_eq!(
            join("https://api.openai.com/v1", "chat/completions"),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            join("http://h/v1/chat/completions/", "chat/completions"),
            "http://h/v1/chat/completions"
        );
        assert_eq!(
            join(
                "http://h/openai/deployments/x?api-version=1",
                "chat/completions"
            ),
            "http://h/openai/deployments/x/chat/completions?api-version=1"
        );
        assert_eq!(join("http://h", "v1/messages"), "http://h/v1/messages");
        assert_eq!(join("http://h/v1", "v1/messages"), "http://h/v1/messages");
        assert_eq!(
            join("http://h/proxy/v1/messages", "v1/messages"),
            "http://h/proxy/v1/messages"
        );
        let err = endpoint_url("http://user:pw@/x?key=s3cr3t", "v1").unwrap_err();
        assert!(!err.to_string().contains("s3cr3t"), "{err}");
        assert!(endpoint_url("not a url", "v1").is_err());
        assert!(endpoint_url("mailto:a@b.c", "v1").is_err());
    }
}
