//! [`provider_builder_methods!`](crate::provider_builder_methods): the methods of a client
//! builder that only forward to its [`ProviderConfig`](crate::ProviderConfig), and the
//! client's own `builder()` and `from_env()`, written once for every client.

/// Writes, inside a client builder's `impl` block, the methods that only forward to the
/// builder's [`ProviderConfig`](crate::ProviderConfig): `from_env`, `from_lookup`,
/// `api_key`, `base_url`, `model`, `timeout`, `connect_timeout`, `max_retries`,
/// `retry_backoff` and `header`.
///
/// The builder has a field `config: ProviderConfig` and a `new()` that gives its defaults.
/// The macro takes the provider's [`ProviderSpec`](crate::ProviderSpec), then one of two
/// groups of methods, in this order, each method named after its rustdoc (a client words
/// the docs for its provider): the configuration (`from_env`, `from_lookup`, `api_key`,
/// `base_url`, `model`), or the HTTP options (`timeout`, `connect_timeout`, `max_retries`,
/// `retry_backoff`, `header`). `connect_timeout` and `retry_backoff` take no rustdoc: theirs
/// says the same for every provider, and is written here. A builder with methods of its own
/// between the groups invokes the macro once per group.
///
/// Inside the client's own `impl` block, a third form writes its two constructors from the
/// builder's type: `builder()` (the builder's defaults) and `from_env()` (the builder from
/// the environment, built), each with the client's rustdoc; `ModelError` must be in scope.
///
/// ```
/// use std::time::Duration;
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
///
/// /// Builds ACME's client.
/// #[derive(Debug, Default)]
/// pub struct AcmeBuilder {
///     config: ProviderConfig,
/// }
///
/// impl AcmeBuilder {
///     /// The defaults.
///     pub fn new() -> Self {
///         Self::default()
///     }
///
///     agentscope_http::provider_builder_methods! { ACME;
///         /// A builder filled from the environment.
///         from_env;
///         /// A builder filled by `lookup`.
///         from_lookup;
///         /// Sets the API key, sent as `x-acme-key`.
///         api_key;
///         /// Sets the base URL.
///         base_url;
///         /// Sets the model name.
///         model;
///     }
///
///     agentscope_http::provider_builder_methods! { ACME;
///         /// How long to wait for the server.
///         timeout;
///         connect_timeout;
///         /// How many times a failed request is retried.
///         max_retries;
///         retry_backoff;
///         /// Adds a header to every request.
///         header;
///     }
/// }
///
/// let builder = AcmeBuilder::new()
///     .api_key("k-123")
///     .model("acme-large")
///     .connect_timeout(Duration::from_secs(3));
/// assert!(format!("{builder:?}").contains("acme-large"));
/// ```
#[macro_export]
macro_rules! provider_builder_methods {
    (
        $spec:path;
        $(#[$from_env:meta])* from_env;
        $(#[$from_lookup:meta])* from_lookup;
        $(#[$api_key:meta])* api_key;
        $(#[$base_url:meta])* base_url;
        $(#[$model:meta])* model;
    ) => {
        $(#[$from_env])*
        pub fn from_env() -> Self {
            Self {
                config: $crate::ProviderConfig::from_env(&$spec),
                ..Self::new()
            }
        }

        $(#[$from_lookup])*
        pub fn from_lookup(
            lookup: impl ::core::ops::Fn(&str) -> ::core::option::Option<::std::string::String>,
        ) -> Self {
            Self {
                config: $crate::ProviderConfig::from_lookup(&$spec, lookup),
                ..Self::new()
            }
        }

        $(#[$api_key])*
        pub fn api_key(mut self, key: impl ::core::convert::Into<::std::string::String>) -> Self {
            self.config = self.config.api_key(key);
            self
        }

        $(#[$base_url])*
        pub fn base_url(mut self, url: impl ::core::convert::Into<::std::string::String>) -> Self {
            self.config = self.config.base_url(url);
            self
        }

        $(#[$model])*
        pub fn model(mut self, model: impl ::core::convert::Into<::std::string::String>) -> Self {
            self.config = self.config.model(model);
            self
        }
    };
    (
        $spec:path;
        $(#[$timeout:meta])* timeout;
        connect_timeout;
        $(#[$max_retries:meta])* max_retries;
        retry_backoff;
        $(#[$header:meta])* header;
    ) => {
        $(#[$timeout])*
        pub fn timeout(mut self, timeout: ::std::time::Duration) -> Self {
            self.config = self.config.map_http(|http| http.timeout(timeout));
            self
        }

        /// How long to wait for a TCP (and TLS) connection (default 10 s).
        pub fn connect_timeout(mut self, timeout: ::std::time::Duration) -> Self {
            self.config = self.config.map_http(|http| http.connect_timeout(timeout));
            self
        }

        $(#[$max_retries])*
        pub fn max_retries(mut self, retries: u32) -> Self {
            self.config = self.config.map_http(|http| http.max_retries(retries));
            self
        }

        /// The backoff between retries: the first wait is about `initial`, each next one doubles,
        /// never above `max` (defaults 500 ms and 8 s). Each wait is jittered down by up to half.
        /// A server's `Retry-After` takes precedence.
        pub fn retry_backoff(
            mut self,
            initial: ::std::time::Duration,
            max: ::std::time::Duration,
        ) -> Self {
            self.config = self.config.map_http(|http| http.retry_backoff(initial, max));
            self
        }

        $(#[$header])*
        pub fn header(
            mut self,
            name: impl ::core::convert::Into<::std::string::String>,
            value: impl ::core::convert::Into<::std::string::String>,
        ) -> Self {
            self.config = self.config.map_http(|http| http.header(name, value));
            self
        }
    };
    (
        $builder:ty;
        $(#[$builder_doc:meta])* builder;
        $(#[$from_env:meta])* from_env;
    ) => {
        $(#[$builder_doc])*
        pub fn builder() -> $builder {
            <$builder>::new()
        }

        $(#[$from_env])*
        pub fn from_env() -> ::core::result::Result<Self, ModelError> {
            <$builder>::from_env().build()
        }
    };
}
