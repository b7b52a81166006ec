//! [`ProviderConfig`]: what every provider's client builder holds (API key, base URL, model,
//! [`HttpOptions`]), read from the provider's environment variables, and checked into a
//! [`TransportBuilder`] by the rules every provider shares; [`ProviderSpec`] says what
//! differs from one provider to the next.

use std::fmt;

use agentscope_core::ModelError;
use agentscope_core::redact::{REDACTED, url_for_display};

use crate::endpoint::endpoint_url;
use crate::transport::{HttpOptions, Transport, TransportBuilder};

/// How a provider takes its API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApiKeyHeader {
    /// `Authorization: Bearer <key>` (OpenAI and the servers compatible with it).
    Bearer,
    /// The key as the value of this header (`x-api-key` for Anthropic).
    Header(&'static str),
}

/// What a provider's client builder needs to know about the provider: the environment
/// variables its settings come from, its own base URL, the path of its endpoint, and how
/// it takes its key.
///
/// ```
/// use agentscope_http::{ApiKeyHeader, ProviderConfig, ProviderSpec};
///
/// const ACME: ProviderSpec = ProviderSpec {
///     api_key_var: "ACME_API_KEY",
///     base_url_var: "ACME_BASE_URL",
///     model_var: "AGENTSCOPE_MODEL",
///     default_base_url: "https://api.acme.example",
///     host: "api.acme.example",
///     path: "v1/generate",
///     model_elsewhere: None,
///     api_key_header: ApiKeyHeader::Header("x-acme-key"),
///     user_agent: "acme-client/0.1",
/// };
/// let config = ProviderConfig::from_lookup(&ACME, |name| match name {
///     "ACME_API_KEY" => Some("k-123".into()),
///     "AGENTSCOPE_MODEL" => Some("acme-large".into()),
///     _ => None,
/// });
/// let transport = config.transport(&ACME)?.build()?;
/// assert_eq!(transport.endpoint().as_str(), "https://api.acme.example/v1/generate");
/// # Ok::<(), agentscope_core::ModelError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderSpec {
    /// The environment variable holding the API key.
    pub api_key_var: &'static str,
    /// The environment variable holding the base URL.
    pub base_url_var: &'static str,
    /// The environment variable holding the model name.
    pub model_var: &'static str,
    /// The base URL when none is set: the provider's own API.
    pub default_base_url: &'static str,
    /// The provider's own host: requests to it need an API key (and a model).
    pub host: &'static str,
    /// The endpoint's path, appended to the base URL (see [`endpoint_url`]).
    pub path: &'static str,
    /// The model name sent to a server other than the provider's when none is set; `None`
    /// when a model is always required.
    pub model_elsewhere: Option<&'static str>,
    /// How the API key is sent.
    pub api_key_header: ApiKeyHeader,
    /// The `User-Agent` sent.
    pub user_agent: &'static str,
}

/// The settings every provider's client builder holds: the API key, the base URL, the
/// model, and the [`HttpOptions`] (timeouts, retries, extra headers). A client's builder
/// wraps one, forwards its setters to it, and turns it into its transport with
/// [`transport`](Self::transport), which checks it.
///
/// Setters never fail. Its `Debug` shows no secret: not the key, not the base URL's
/// password or query values, not a header's value.
#[must_use]
#[derive(Clone, Default)]
pub struct ProviderConfig {
    api_key: Option<String>,
    base_url: Option<String>,
    model: Option<String>,
    http: HttpOptions,
}

impl ProviderConfig {
    /// No key, no base URL (the provider's own), no model, the default [`HttpOptions`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The settings of `spec`'s environment variables (each only when set and not blank).
    pub fn from_env(spec: &ProviderSpec) -> Self {
        Self::from_lookup(spec, |name| std::env::var(name).ok())
    }

    /// The settings `lookup` gives for `spec`'s environment variables (each only when set
    /// and not blank): for configuration that comes from elsewhere, and for tests.
    pub fn from_lookup(spec: &ProviderSpec, lookup: impl Fn(&str) -> Option<String>) -> Self {
        let get = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        Self {
            api_key: get(spec.api_key_var),
            base_url: get(spec.base_url_var),
            model: get(spec.model_var),
            http: HttpOptions::new(),
        }
    }

    /// Sets the API key (an empty one counts as none).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        let key = key.into();
        self.api_key = (!key.is_empty()).then_some(key);
        self
    }

    /// Sets the base URL.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// Sets the model name.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Changes the HTTP options: `config.map_http(|http| http.max_retries(3))`.
    pub fn map_http(mut self, change: impl FnOnce(HttpOptions) -> HttpOptions) -> Self {
        self.http = change(self.http);
        self
    }

    /// Checks the settings and starts the transport: the endpoint (the base URL, or the
    /// provider's, with its path), the model, the user agent, the API key, the HTTP options.
    /// A client adds its protocol's headers and builds it.
    ///
    /// # Errors
    ///
    /// [`ModelError::Config`], for the first of: no model set (when `spec` has no model
    /// for other servers), a base URL that is not an `http(s)` URL, no model set for the
    /// provider's own host, no API key set for the provider's own host.
    pub fn transport(self, spec: &ProviderSpec) -> Result<TransportBuilder, ModelError> {
        let no_model = || {
            config(format!(
                "no model set: call .model(..) or set {}",
                spec.model_var
            ))
        };
        let model = self.model.filter(|model| !model.trim().is_empty());
        if model.is_none() && spec.model_elsewhere.is_none() {
            return Err(no_model());
        }
        let base_url = self.base_url.as_deref().unwrap_or(spec.default_base_url);
        let endpoint = endpoint_url(base_url, spec.path)?;
        let is_own_host = endpoint.host_str() == Some(spec.host);
        let model = match (model, spec.model_elsewhere) {
            (Some(model), _) => model,
            (None, Some(elsewhere)) if !is_own_host => elsewhere.to_owned(),
            (None, _) => return Err(no_model()),
        };
        if self.api_key.is_none() && is_own_host {
            return Err(config(format!(
                "no API key set for {}: call .api_key(..) or set {}",
                spec.host, spec.api_key_var
            )));
        }
        let mut transport = Transport::builder(endpoint, model)
            .user_agent(spec.user_agent)
            .options(self.http);
        if let Some(key) = &self.api_key {
            transport = match spec.api_key_header {
                ApiKeyHeader::Bearer => transport.bearer(key),
                ApiKeyHeader::Header(name) => transport.credential(name, key),
            };
        }
        Ok(transport)
    }
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("api_key", &self.api_key.as_ref().map(|_| REDACTED))
            .field("base_url", &self.base_url.as_deref().map(url_for_display))
            .field("model", &self.model)
            .field("http", &self.http)
            .finish()
    }
}

fn config(message: String) -> ModelError {
    ModelError::Config { message }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const SPEC: ProviderSpec = ProviderSpec {
        api_key_var: "P_API_KEY",
        base_url_var: "P_BASE_URL",
        model_var: "P_MODEL",
        default_base_url: "https://api.p.example/v1",
        host: "api.p.example",
        path: "chat",
        model_elsewhere: None,
        api_key_header: ApiKeyHeader::Header("x-api-key"),
        user_agent: "p/1",
    };

    fn message(result: Result<TransportBuilder, ModelError>) -> String {
        match result {
            Err(ModelError::Config { message }) => message,
            other => format!("not a config error: {other:?}"),
        }
    }

    #[test]
    fn the_environment_fills_key_url_and_model() {
        let config = ProviderConfig::from_lookup(&SPEC, |name| match name {
            "P_API_KEY" => Some("sk-env".into()),
            "P_BASE_URL" => Some("http://127.0.0.1:9/v1".into()),
            "P_MODEL" => Some("m-1".into()),
            _ => None,
        });
        assert_eq!(config.api_key.as_deref(), Some("sk-env"));
        assert_eq!(config.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
        assert_eq!(config.model.as_deref(), Some("m-1"));
        let transport = config.transport(&SPEC).unwrap().build().unwrap();
        assert_eq!(transport.endpoint().as_str(), "http://127.0.0.1:9/v1/chat");
        assert_eq!(transport.model(), "m-1");
        // Blank values count as unset.
        let config = ProviderConfig::from_lookup(&SPEC, |_| Some("  ".into()));
        assert!(config.api_key.is_none() && config.base_url.is_none());
        assert!(config.model.is_none());
        assert!(ProviderConfig::new().api_key("").api_key.is_none());
    }

    #[test]
    fn the_checks_report_the_first_problem_in_the_providers_words() {
        let own = || ProviderConfig::new().api_key("k");
        assert_eq!(
            message(own().transport(&SPEC)),
            "no model set: call .model(..) or set P_MODEL"
        );
        assert_eq!(
            message(own().model(" ").transport(&SPEC)),
            "no model set: call .model(..) or set P_MODEL"
        );
        // Without a model for other servers, the model is checked before the URL.
        assert_eq!(
            message(own().base_url("ftp://x").transport(&SPEC)),
            "no model set: call .model(..) or set P_MODEL"
        );
        assert_eq!(
            message(ProviderConfig::new().model("m").transport(&SPEC)),
            "no API key set for api.p.example: call .api_key(..) or set P_API_KEY"
        );
        assert_eq!(
            message(
                ProviderConfig::new()
                    .model("m")
                    .base_url("ftp://127.0.0.1/v1")
                    .transport(&SPEC)
            ),
            "invalid base URL ftp://127.0.0.1/v1: expected an http(s) URL"
        );
        // Another server needs no key.
        let elsewhere = ProviderConfig::new()
            .model("m")
            .base_url("http://127.0.0.1:9")
            .transport(&SPEC)
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(elsewhere.endpoint().as_str(), "http://127.0.0.1:9/chat");
    }

    #[test]
    fn a_model_for_other_servers_is_sent_only_to_them() {
        let spec = ProviderSpec {
            model_elsewhere: Some("default"),
            api_key_header: ApiKeyHeader::Bearer,
            ..SPEC
        };
        let local = ProviderConfig::new()
            .base_url("http://127.0.0.1:9")
            .transport(&spec)
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(local.model(), "default");
        // The URL is checked first; the provider's own host still needs a model.
        assert_eq!(
            message(
                ProviderConfig::new()
                    .base_url("ftp://x/v1")
                    .transport(&spec)
            ),
            "invalid base URL ftp://x/v1: expected an http(s) URL"
        );
        assert_eq!(
            message(ProviderConfig::new().api_key("k").transport(&spec)),
            "no model set: call .model(..) or set P_MODEL"
        );
    }

    #[test]
    fn debug_shows_no_secret() {
        let config = ProviderConfig::new()
            .api_key("sk-secret-1")
            .base_url("http://user:pw-secret-2@127.0.0.1:9/v1?key=q-secret-3")
            .model("m")
            .map_http(|http| http.header("x-extra", "h-secret-4"));
        let shown = format!("{config:?}");
        for secret in ["sk-secret-1", "pw-secret-2", "q-secret-3", "h-secret-4"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(
            shown.contains("<redacted>") && shown.contains("x-extra"),
            "{shown}"
        );
        assert!(shown.contains("127.0.0.1:9"), "{shown}");
    }
}
