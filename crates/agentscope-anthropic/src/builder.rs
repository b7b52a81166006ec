//! [`AnthropicModelBuilder`]: settings, defaults, the environment, and the checks that turn
//! them into an [`AnthropicModel`].

use agentscope_core::ModelError;
use agentscope_http::{ApiKeyHeader, ProviderConfig, ProviderSpec};

use crate::model::AnthropicModel;
use crate::request::Settings;

/// The default base URL: Anthropic's API.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The default `anthropic-version` header.
pub const DEFAULT_VERSION: &str = "2023-06-01";
/// The default `max_tokens` sent with every request (Anthropic requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The environment variable holding the API key.
pub const ENV_API_KEY: &str = "ANTHROPIC_API_KEY";
/// The environment variable holding the base URL.
pub const ENV_BASE_URL: &str = "ANTHROPIC_BASE_URL";
/// The environment variable holding the model name.
pub const ENV_MODEL: &str = "AGENTSCOPE_MODEL";

/// Anthropic as the shared builder core sees it.
const ANTHROPIC: ProviderSpec = ProviderSpec {
    api_key_var: ENV_API_KEY,
    base_url_var: ENV_BASE_URL,
    model_var: ENV_MODEL,
    default_base_url: DEFAULT_BASE_URL,
    host: "api.anthropic.com",
    path: "v1/messages",
    model_elsewhere: None,
    api_key_header: ApiKeyHeader::Header("x-api-key"),
    user_agent: concat!("agentscope-anthropic/", env!("CARGO_PKG_VERSION")),
};

// The model's constructors are here rather than in model.rs: they only start a builder, and
// keeping them next to it lets model.rs not depend on this module.
impl AnthropicModel {
    agentscope_http::provider_builder_methods! { AnthropicModelBuilder;
        /// Starts a builder.
        ///
        /// ```
        /// use agentscope_anthropic::AnthropicModel;
        /// use std::time::Duration;
        ///
        /// let model = AnthropicModel::builder()
        ///     .api_key("sk-ant-...")
        ///     .model("claude-sonnet-4-5")
        ///     .max_tokens(8192)
        ///     .thinking(4096)
        ///     .timeout(Duration::from_secs(120))
        ///     .build()?;
        /// assert_eq!(model.endpoint(), "https://api.anthropic.com/v1/messages");
        /// # Ok::<(), agentscope_core::ModelError>(())
        /// ```
        builder;

        /// Builds a model from the environment: `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`
        /// (optional, default Anthropic) and `AGENTSCOPE_MODEL`.
        ///
        /// Use [`AnthropicModelBuilder::from_env`] to adjust more settings before building.
        ///
        /// # Errors
        ///
        /// [`ModelError::Config`] when `AGENTSCOPE_MODEL` is not set, or when
        /// `ANTHROPIC_API_KEY` is not set and the base URL is Anthropic's.
        ///
        /// ```no_run
        /// let model = agentscope_anthropic::AnthropicModel::from_env()?;
        /// # Ok::<(), agentscope_core::ModelError>(())
        /// ```
        from_env;
    }
}

/// Builds an [`AnthropicModel`]; start with [`AnthropicModel::builder`].
///
/// Setters never fail; [`build`](Self::build) checks everything and reports the first
/// problem as [`ModelError::Config`].
// `Debug` is derived: the configuration's own `Debug` keeps the secrets out.
#[must_use]
#[derive(Clone, Debug)]
pub struct AnthropicModelBuilder {
    config: ProviderConfig,
    version: String,
    betas: Vec<String>,
    settings: Settings,
}

impl Default for AnthropicModelBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl AnthropicModelBuilder {
    /// A builder with the defaults: Anthropic's base URL, no key, no model, `max_tokens`
    /// 4096, no extended thinking, no prompt caching, `anthropic-version: 2023-06-01`, no
    /// beta, a 600 s timeout, a 10 s connect timeout, 2 retries.
    pub fn new() -> Self {
        Self {
            config: ProviderConfig::new(),
            version: DEFAULT_VERSION.to_owned(),
            betas: Vec::new(),
            settings: Settings {
                max_tokens: DEFAULT_MAX_TOKENS,
                thinking_budget: None,
                prompt_caching: false,
            },
        }
    }

    agentscope_http::provider_builder_methods! { ANTHROPIC;
        /// A builder filled from the environment: `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL` and
        /// `AGENTSCOPE_MODEL` (each only when set and not empty).
        ///
        /// ```no_run
        /// use agentscope_anthropic::AnthropicModelBuilder;
        ///
        /// let model = AnthropicModelBuilder::from_env().prompt_caching(true).build()?;
        /// # Ok::<(), agentscope_core::ModelError>(())
        /// ```
        from_env;
        /// A builder filled by `lookup` (called with the names of the environment variables
        /// [`from_env`](Self::from_env) reads): for configuration that comes from elsewhere, and
        /// for tests.
        ///
        /// ```
        /// use agentscope_anthropic::AnthropicModelBuilder;
        ///
        /// let model = AnthropicModelBuilder::from_lookup(|name| match name {
        ///     "ANTHROPIC_API_KEY" => Some("sk-ant-...".into()),
        ///     "AGENTSCOPE_MODEL" => Some("claude-haiku-4-5".into()),
        ///     _ => None,
        /// })
        /// .build()?;
        /// assert_eq!(model.model(), "claude-haiku-4-5");
        /// # Ok::<(), agentscope_core::ModelError>(())
        /// ```
        from_lookup;
        /// Sets the API key, sent as the `x-api-key` header. Required for Anthropic's own base
        /// URL; optional for gateways that authenticate otherwise (see
        /// [`header`](Self::header)).
        api_key;
        /// Sets the base URL (default `https://api.anthropic.com`); requests go to
        /// `<base_url>/v1/messages`. A base URL that already ends with `/v1` gets `/messages`
        /// appended, one that ends with `/v1/messages` is used as it is, and a query string is
        /// kept.
        base_url;
        /// Sets the model name sent with every request (required), e.g. `claude-sonnet-4-5`.
        model;
    }

    /// The `max_tokens` sent when a request's
    /// [`GenerateOptions::max_tokens`](agentscope_core::GenerateOptions::max_tokens) is not
    /// set (default 4096). Anthropic requires every request to say how many tokens it may
    /// generate; with extended thinking the limit includes the thinking budget.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.settings.max_tokens = max_tokens;
        self
    }

    /// Turns on extended thinking with this token budget: every request carries
    /// `"thinking": {"type": "enabled", "budget_tokens": budget_tokens}`.
    ///
    /// Anthropic wants the budget to be at least 1024 and below `max_tokens`, and allows
    /// neither a `temperature` other than 1 nor a forced tool choice
    /// ([`ToolChoice::Required`](agentscope_core::ToolChoice::Required) /
    /// [`Specific`](agentscope_core::ToolChoice::Specific)) next to thinking; such requests
    /// fail with the provider's `HTTP 400` message.
    pub fn thinking(mut self, budget_tokens: u32) -> Self {
        self.settings.thinking_budget = Some(budget_tokens);
        self
    }

    /// Whether to mark prompt-cache breakpoints (default false): when on, the last system
    /// block, the last tool and the last content block of the last message carry
    /// `"cache_control": {"type": "ephemeral"}`, so the next request of a conversation
    /// reads the shared prefix from Anthropic's cache.
    pub fn prompt_caching(mut self, enabled: bool) -> Self {
        self.settings.prompt_caching = enabled;
        self
    }

    /// Sets the `anthropic-version` header (default `2023-06-01`).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Turns on a beta feature: its name is added to the `anthropic-beta` header (several
    /// are comma-joined), e.g. `interleaved-thinking-2025-05-14`.
    pub fn beta(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        let name = name.trim();
        if !name.is_empty() && !self.betas.iter().any(|beta| beta == name) {
            self.betas.push(name.to_owned());
        }
        self
    }

    agentscope_http::provider_builder_methods! { ANTHROPIC;
        /// How long to wait for the server: for the response to start, and between two pieces
        /// of a streamed response (default 600 s). A long generation never times out while
        /// the server keeps sending (Anthropic sends `ping` events); a stalled one fails with
        /// [`ModelError::Timeout`].
        timeout;
        connect_timeout;
        /// How many times a failed request is retried (default 2; 0 disables retries).
        /// Connection failures and the statuses 408, 429 and 5xx (Anthropic's 529
        /// `overloaded_error` included) are retried.
        max_retries;
        retry_backoff;
        /// Adds a header to every request (e.g. a gateway's own authentication). Header values
        /// are treated as secrets: never in `Debug` output, and scrubbed from every error.
        header;
    }

    /// Builds the model.
    ///
    /// # Errors
    ///
    /// [`ModelError::Config`] when no model is set, the base URL is not an `http(s)` URL,
    /// no API key is set for Anthropic's own base URL, the version is empty, a header is
    /// invalid, or the HTTP client cannot be created.
    pub fn build(self) -> Result<AnthropicModel, ModelError> {
        let mut transport = self.config.transport(&ANTHROPIC)?;
        let version = self.version.trim();
        if version.is_empty() {
            return Err(ModelError::Config {
                message: "the anthropic-version header cannot be empty".into(),
            });
        }
        transport = transport.header("anthropic-version", version);
        if !self.betas.is_empty() {
            transport = transport.header("anthropic-beta", self.betas.join(","));
        }
        Ok(AnthropicModel::new(transport.build()?, self.settings))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use reqwest::Url;

    /// `<base_url>/v1/messages`, as the builder makes it.
    fn endpoint(base_url: &str) -> Result<Url, ModelError> {
        agentscope_http::endpoint_url(base_url, ANTHROPIC.path)
    }

    #[test]
    fn endpoint_joins_paths_and_keeps_queries() {
        let cases = [
            (
                "https://api.anthropic.com",
                "https://api.anthropic.com/v1/messages",
            ),
            (
                "https://api.anthropic.com/",
                "https://api.anthropic.com/v1/messages",
            ),
            (
                "https://api.anthropic.com/v1",
                "https://api.anthropic.com/v1/messages",
            ),
            (
                "https://api.anthropic.com/v1/",
                "https://api.anthropic.com/v1/messages",
            ),
            (
                "http://127.0.0.1:8080/v1/messages",
                "http://127.0.0.1:8080/v1/messages",
            ),
            (
                "http://127.0.0.1:8080/v1/messages/",
                "http://127.0.0.1:8080/v1/messages",
            ),
            (
                "https://gw.example.com/anthropic?team=blue",
                "https://gw.example.com/anthropic/v1/messages?team=blue",
            ),
            (
                "https://gw.example.com/anthropic/v1?team=blue",
                "https://gw.example.com/anthropic/v1/messages?team=blue",
            ),
        ];
        for (base, expected) in cases {
            assert_eq!(endpoint(base).unwrap().as_str(), expected, "{base}");
        }
        for bad in [
            "",
            "api.anthropic.com",
            "ftp://x/v1",
            "not a url",
            "data:text/plain,x",
        ] {
            assert!(
                matches!(endpoint(bad), Err(ModelError::Config { .. })),
                "{bad}"
            );
        }
    }

    fn config_message(builder: AnthropicModelBuilder) -> String {
        match builder.build() {
            Err(ModelError::Config { message }) => message,
            other => format!("not a config error: {other:?}"),
        }
    }

    #[test]
    fn build_reports_what_is_missing_or_wrong() {
        assert_eq!(
            config_message(AnthropicModel::builder().api_key("k")),
            "no model set: call .model(..) or set AGENTSCOPE_MODEL"
        );
        assert_eq!(
            config_message(AnthropicModel::builder().model("m")),
            "no API key set for api.anthropic.com: call .api_key(..) or set ANTHROPIC_API_KEY"
        );
        assert_eq!(
            config_message(
                AnthropicModel::builder()
                    .model("m")
                    .base_url("https://api.anthropic.com/v1")
            ),
            "no API key set for api.anthropic.com: call .api_key(..) or set ANTHROPIC_API_KEY"
        );
        assert_eq!(
            config_message(
                AnthropicModel::builder()
                    .model("m")
                    .base_url("ftp://127.0.0.1/v1")
            ),
            "invalid base URL ftp://127.0.0.1/v1: expected an http(s) URL"
        );
        assert_eq!(
            config_message(
                AnthropicModel::builder()
                    .model("m")
                    .api_key("k")
                    .version(" ")
            ),
            "the anthropic-version header cannot be empty"
        );
        // A gateway needs no key (it may authenticate with a header of its own).
        let model = AnthropicModel::builder()
            .model("m")
            .base_url("http://127.0.0.1:9")
            .build()
            .unwrap();
        assert_eq!(model.endpoint(), "http://127.0.0.1:9/v1/messages");
    }

    /// The variables' names; how they are read (blank values count as unset) is
    /// `agentscope-http`'s `ProviderConfig`, tested there.
    #[test]
    fn the_environment_fills_key_url_and_model() {
        let builder = AnthropicModelBuilder::from_lookup(|name| match name {
            ENV_API_KEY => Some("sk-ant-env".into()),
            ENV_BASE_URL => Some("http://127.0.0.1:9/v1".into()),
            ENV_MODEL => Some("claude-x".into()),
            _ => None,
        });
        let model = builder.build().unwrap();
        assert_eq!(model.model(), "claude-x");
        assert_eq!(model.endpoint(), "http://127.0.0.1:9/v1/messages");
        // The key was read: Anthropic's own URL needs one.
        let builder = AnthropicModelBuilder::from_lookup(|name| match name {
            ENV_API_KEY => Some("sk-ant-env".into()),
            ENV_MODEL => Some("claude-x".into()),
            _ => None,
        });
        assert_eq!(
            builder.build().unwrap().endpoint(),
            "https://api.anthropic.com/v1/messages"
        );
        // Blank values count as unset.
        let builder = AnthropicModelBuilder::from_lookup(|_| Some("  ".into()));
        assert_eq!(
            config_message(builder.clone()),
            "no model set: call .model(..) or set AGENTSCOPE_MODEL"
        );
        // No key, and no base URL: Anthropic's, which wants the key.
        assert_eq!(
            config_message(builder.model("m")),
            "no API key set for api.anthropic.com: call .api_key(..) or set ANTHROPIC_API_KEY"
        );
    }

    #[test]
    fn betas_are_deduplicated_and_blank_ones_ignored() {
        let builder = AnthropicModel::builder()
            .beta("a-1")
            .beta(" ")
            .beta("b-2")
            .beta("a-1");
        assert_eq!(builder.betas, ["a-1", "b-2"]);
    }
}
