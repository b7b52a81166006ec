//! [`OpenAIChatModelBuilder`]: settings, defaults, the environment, and the checks that turn
//! them into an [`OpenAIChatModel`].

use agentscope_core::ModelError;
use agentscope_http::{ApiKeyHeader, ProviderConfig, ProviderSpec};

use crate::model::OpenAIChatModel;

/// The default base URL: OpenAI's API.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The environment variable holding the API key.
pub const ENV_API_KEY: &str = "OPENAI_API_KEY";
/// The environment variable holding the base URL.
pub const ENV_BASE_URL: &str = "OPENAI_BASE_URL";
/// The environment variable holding the model name.
pub const ENV_MODEL: &str = "AGENTSCOPE_MODEL";
/// The model name sent to a server other than OpenAI's when none is set: servers that serve
/// one model (llama.cpp's `llama-server`) accept any name; others (vLLM, Ollama) answer that
/// the model does not exist, naming it.
pub const DEFAULT_LOCAL_MODEL: &str = "default";

/// OpenAI as the shared builder core sees it.
const OPENAI: ProviderSpec = ProviderSpec {
    api_key_var: ENV_API_KEY,
    base_url_var: ENV_BASE_URL,
    model_var: ENV_MODEL,
    default_base_url: DEFAULT_BASE_URL,
    host: "api.openai.com",
    path: "chat/completions",
    model_elsewhere: Some(DEFAULT_LOCAL_MODEL),
    api_key_header: ApiKeyHeader::Bearer,
    user_agent: concat!("agentscope-openai/", env!("CARGO_PKG_VERSION")),
};

// The model's constructors are here rather than in model.rs: they only start a builder, and
// keeping them next to it lets model.rs not depend on this module.
impl OpenAIChatModel {
    agentscope_http::provider_builder_methods! { OpenAIChatModelBuilder;
        /// Starts a builder.
        ///
        /// ```
        /// use agentscope_openai::OpenAIChatModel;
        /// use std::time::Duration;
        ///
        /// let model = OpenAIChatModel::builder()
        ///     .base_url("http://localhost:11434/v1") // Ollama: no key needed
        ///     .model("qwen3:8b")
        ///     .timeout(Duration::from_secs(120))
        ///     .max_retries(3)
        ///     .build()?;
        /// assert_eq!(model.endpoint(), "http://localhost:11434/v1/chat/completions");
        /// # Ok::<(), agentscope_core::ModelError>(())
        /// ```
        builder;

        /// Builds a model from the environment. It reads exactly three variables, each only
        /// when set and not empty:
        ///
        /// - `OPENAI_API_KEY`: sent as `Authorization: Bearer <key>`; without it no
        ///   `Authorization` header is sent (keyless local servers: llama.cpp, Ollama, vLLM);
        /// - `OPENAI_BASE_URL`: default `https://api.openai.com/v1`;
        /// - `AGENTSCOPE_MODEL`: the model name; for a server other than OpenAI's,
        ///   [`DEFAULT_LOCAL_MODEL`] when unset.
        ///
        /// So `OPENAI_BASE_URL=http://127.0.0.1:8080/v1` alone is enough for a local
        /// llama.cpp server.
        ///
        /// Use [`OpenAIChatModelBuilder::from_env`] to adjust more settings before building.
        ///
        /// # Errors
        ///
        /// [`ModelError::Config`] when the base URL is OpenAI's and `OPENAI_API_KEY` or
        /// `AGENTSCOPE_MODEL` is not set, or when the base URL is not an `http(s)` URL.
        ///
        /// ```no_run
        /// let model = agentscope_openai::OpenAIChatModel::from_env()?;
        /// # Ok::<(), agentscope_core::ModelError>(())
        /// ```
        from_env;
    }
}

/// Builds an [`OpenAIChatModel`]; start with [`OpenAIChatModel::builder`].
///
/// Setters never fail; [`build`](Self::build) checks everything and reports the first
/// problem as [`ModelError::Config`].
// `Debug` is derived: the configuration's own `Debug` keeps the secrets out.
#[must_use]
#[derive(Clone, Debug)]
pub struct OpenAIChatModelBuilder {
    config: ProviderConfig,
    include_usage: bool,
}

impl Default for OpenAIChatModelBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl OpenAIChatModelBuilder {
    /// A builder with the defaults: OpenAI's base URL, no key, no model, a 600 s timeout, a
    /// 10 s connect timeout, 2 retries.
    pub fn new() -> Self {
        Self {
            config: ProviderConfig::new(),
            include_usage: true,
        }
    }

    agentscope_http::provider_builder_methods! { OPENAI;
        /// A builder filled from the environment: `OPENAI_API_KEY`, `OPENAI_BASE_URL` and
        /// `AGENTSCOPE_MODEL` (each only when set and not empty).
        ///
        /// ```no_run
        /// use agentscope_openai::OpenAIChatModelBuilder;
        ///
        /// let model = OpenAIChatModelBuilder::from_env().max_retries(5).build()?;
        /// # Ok::<(), agentscope_core::ModelError>(())
        /// ```
        from_env;
        /// A builder filled by `lookup` (called with the names of the environment variables
        /// [`from_env`](Self::from_env) reads): for configuration that comes from elsewhere, and
        /// for tests.
        ///
        /// ```
        /// use agentscope_openai::OpenAIChatModelBuilder;
        ///
        /// let model = OpenAIChatModelBuilder::from_lookup(|name| match name {
        ///     "OPENAI_BASE_URL" => Some("http://127.0.0.1:8000/v1".into()),
        ///     "AGENTSCOPE_MODEL" => Some("Qwen/Qwen3-8B".into()),
        ///     _ => None,
        /// })
        /// .build()?;
        /// assert_eq!(model.model(), "Qwen/Qwen3-8B");
        /// # Ok::<(), agentscope_core::ModelError>(())
        /// ```
        from_lookup;
        /// Sets the API key, sent as `Authorization: Bearer <key>`. Optional for servers that
        /// need none (local ones); required for OpenAI's base URL.
        api_key;
        /// Sets the base URL (default `https://api.openai.com/v1`); requests go to
        /// `<base_url>/chat/completions`. A URL that already ends with `/chat/completions` is
        /// used as it is, and a query string (e.g. `?api-version=...`) is kept.
        base_url;
        /// Sets the model name sent with every request. Required for OpenAI's base URL; for
        /// another server, [`DEFAULT_LOCAL_MODEL`] is sent when none is set.
        model;
    }

    agentscope_http::provider_builder_methods! { OPENAI;
        /// How long to wait for the server: for the response to start, and between two pieces
        /// of a streamed response (default 600 s). A long generation never times out while
        /// the server keeps sending; a stalled one fails with [`ModelError::Timeout`].
        timeout;
        connect_timeout;
        /// How many times a failed request is retried (default 2; 0 disables retries).
        max_retries;
        retry_backoff;
        /// Adds a header to every request (e.g. `api-key` for Azure, `HTTP-Referer` for
        /// OpenRouter). Header values never appear in `Debug` output.
        header;
    }

    /// Whether to ask for token usage at the end of the stream
    /// (`stream_options.include_usage`, default true). Turn it off for servers that reject
    /// `stream_options`.
    pub fn include_usage(mut self, include: bool) -> Self {
        self.include_usage = include;
        self
    }

    /// Builds the model.
    ///
    /// # Errors
    ///
    /// [`ModelError::Config`] when no model is set for OpenAI's base URL, the base URL is
    /// not an `http(s)` URL, no API key is set for OpenAI's own base URL, a header is
    /// invalid, or the HTTP client cannot be created.
    pub fn build(self) -> Result<OpenAIChatModel, ModelError> {
        let transport = self.config.transport(&OPENAI)?.build()?;
        Ok(OpenAIChatModel::new(transport, self.include_usage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::Url;

    /// `<base_url>/chat/completions`, as the builder makes it.
    fn endpoint(base_url: &str) -> Result<Url, ModelError> {
        agentscope_http::endpoint_url(base_url, OPENAI.path)
    }

    #[test]
    fn endpoint_joins_paths_and_keeps_queries() {
        let cases = [
            (
                "https://api.openai.com/v1",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "https://api.openai.com/v1/",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "http://localhost:8000",
                "http://localhost:8000/chat/completions",
            ),
            (
                "https://gw.example.com/openai/deployments/gpt4o?api-version=2024-10-21",
                "https://gw.example.com/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21",
            ),
            (
                "http://127.0.0.1:1234/v1/chat/completions",
                "http://127.0.0.1:1234/v1/chat/completions",
            ),
        ];
        for (base, expected) in cases {
            assert_eq!(endpoint(base).unwrap().as_str(), expected, "{base}");
        }
        for bad in [
            "",
            "localhost:8000",
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
}
