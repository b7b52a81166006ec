//! The model seam: [`Model`], its request and its streamed response.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::block::ContentBlock;
use crate::error::ModelError;
use crate::message::Msg;

/// A streamed model response: a sequence of delta chunks.
pub type ChatStream = BoxStream<'static, Result<ChatResponse, ModelError>>;

/// A chat model that streams its answer.
///
/// The engine sends a [`ModelRequest`] and accumulates the returned chunks into the final
/// message: text and thinking fragments are concatenated, tool-use fragments are assembled
/// (a fragment with an empty `id` continues the current call), usage is recorded.
///
/// Implement it with `async fn` or by returning a future:
///
/// ```
/// use agentscope_core::{ChatResponse, ChatStream, ContentBlock, Model, ModelError, ModelRequest};
/// use futures::StreamExt;
///
/// struct Echo;
///
/// impl Model for Echo {
///     fn model_name(&self) -> &str {
///         "echo"
///     }
///
///     async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
///         let last = request.messages.last().map(|m| m.text()).unwrap_or_default();
///         let chunk = ChatResponse::new(vec![ContentBlock::text(last)]);
///         Ok(futures::stream::iter([Ok(chunk)]).boxed())
///     }
/// }
/// ```
///
/// Share one model between many agents by wrapping it in an `Arc` (`Arc<M>` is a `Model`).
pub trait Model: Send + Sync + 'static {
    /// The model's name, as reported to hooks (`model_name()` on reasoning events).
    fn model_name(&self) -> &str;

    /// Who serves the model, as the OpenTelemetry GenAI conventions name providers
    /// (`gen_ai.provider.name`: `"openai"`, `"anthropic"`, ...), when known. Tracing records
    /// it on the agent's spans; the default is `None` (unknown).
    fn provider_name(&self) -> Option<&str> {
        None
    }

    /// Starts generating a response to `request`.
    fn stream(
        &self,
        request: ModelRequest,
    ) -> impl Future<Output = Result<ChatStream, ModelError>> + Send;
}

impl<M: Model> Model for Arc<M> {
    fn model_name(&self) -> &str {
        (**self).model_name()
    }

    fn provider_name(&self) -> Option<&str> {
        (**self).provider_name()
    }

    fn stream(
        &self,
        request: ModelRequest,
    ) -> impl Future<Output = Result<ChatStream, ModelError>> + Send {
        (**self).stream(request)
    }
}

/// The dyn-compatible twin of [`Model`].
trait DynModel: Send + Sync + 'static {
    fn name_dyn(&self) -> &str;
    fn provider_dyn(&self) -> Option<&str>;
    fn stream_boxed(&self, request: ModelRequest) -> BoxFuture<'_, Result<ChatStream, ModelError>>;
}

impl<M: Model> DynModel for M {
    fn name_dyn(&self) -> &str {
        Model::model_name(self)
    }

    fn provider_dyn(&self) -> Option<&str> {
        Model::provider_name(self)
    }

    fn stream_boxed(&self, request: ModelRequest) -> BoxFuture<'_, Result<ChatStream, ModelError>> {
        Box::pin(self.stream(request))
    }
}

/// A type-erased, cheaply clonable [`Model`].
///
/// The agent builder erases its model into one of these once; you rarely need it directly.
#[derive(Clone)]
pub struct BoxedModel(Arc<dyn DynModel>);

impl BoxedModel {
    /// Erases `model`. Erasing a `BoxedModel` again returns it unchanged.
    pub fn new<M: Model>(model: M) -> Self {
        if let Some(boxed) = (&model as &dyn std::any::Any).downcast_ref::<BoxedModel>() {
            return boxed.clone();
        }
        BoxedModel(Arc::new(model))
    }
}

impl std::fmt::Debug for BoxedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BoxedModel")
            .field(&self.0.name_dyn())
            .finish()
    }
}

impl Model for BoxedModel {
    fn model_name(&self) -> &str {
        self.0.name_dyn()
    }

    fn provider_name(&self) -> Option<&str> {
        self.0.provider_dyn()
    }

    fn stream(
        &self,
        request: ModelRequest,
    ) -> impl Future<Output = Result<ChatStream, ModelError>> + Send {
        self.0.stream_boxed(request)
    }
}

/// What the engine sends to the model for one reasoning (or summary) step.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelRequest {
    /// The conversation: the system message first (when there is one), then the history.
    pub messages: Vec<Msg>,
    /// The tools the model may call (empty for the summary step); shared with the toolkit,
    /// so building a request copies no schema.
    pub tools: Arc<[ToolSchema]>,
    /// Generation options.
    pub options: GenerateOptions,
}

impl ModelRequest {
    /// A request for `messages` (the system message first, when there is one), offering
    /// `tools`, with `options`.
    ///
    /// ```
    /// use agentscope_core::{GenerateOptions, ModelRequest, Msg};
    ///
    /// let request = ModelRequest::new(vec![Msg::user("hi")], Default::default(), GenerateOptions::default());
    /// assert!(request.tools.is_empty());
    /// ```
    pub fn new(messages: Vec<Msg>, tools: Arc<[ToolSchema]>, options: GenerateOptions) -> Self {
        Self {
            messages,
            tools,
            options,
        }
    }
}

/// A tool as the model sees it: name, description and JSON-schema parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSchema {
    /// The tool's name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The JSON schema of the arguments object (shared: requests copy schemas cheaply).
    pub parameters: Arc<Value>,
}

impl ToolSchema {
    /// Describes a tool.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters: Arc::new(parameters),
        }
    }
}

/// Which tool the model must (or must not) call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must not call tools.
    None,
    /// The model must call some tool.
    Required,
    /// The model must call the named tool.
    Specific(String),
}

/// A requested response format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResponseFormat {
    /// Plain text (the default).
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON matching a schema.
    JsonSchema {
        /// A name for the schema.
        name: String,
        /// The JSON schema.
        schema: Value,
        /// Whether the provider must follow the schema strictly.
        #[serde(default)]
        strict: bool,
    },
}

/// Options for one generation. Unset fields use the provider's defaults.
///
/// ```
/// use agentscope_core::{GenerateOptions, ToolChoice};
///
/// let options = GenerateOptions::default()
///     .temperature(0.2)
///     .max_tokens(512)
///     .tool_choice(ToolChoice::Required);
/// assert_eq!(options.temperature, Some(0.2));
/// ```
///
/// Fields are public, so one can also be set on a default
/// (`let mut options = GenerateOptions::default(); options.seed = Some(7);`); the type is
/// `#[non_exhaustive]`, so a new option is not a breaking change.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GenerateOptions {
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Nucleus sampling mass.
    pub top_p: Option<f32>,
    /// Maximum tokens to generate.
    pub max_tokens: Option<u32>,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// Sampling seed.
    pub seed: Option<u64>,
    /// Tool choice (default [`ToolChoice::Auto`]).
    pub tool_choice: ToolChoice,
    /// Whether the model may call several tools in one response.
    pub parallel_tool_calls: Option<bool>,
    /// Requested response format.
    pub response_format: Option<ResponseFormat>,
    /// Provider-specific fields, passed through into the request body.
    pub extra: Map<String, Value>,
}

impl GenerateOptions {
    /// Sets the temperature.
    #[must_use]
    pub fn temperature(mut self, value: f32) -> Self {
        self.temperature = Some(value);
        self
    }

    /// Sets top-p.
    #[must_use]
    pub fn top_p(mut self, value: f32) -> Self {
        self.top_p = Some(value);
        self
    }

    /// Sets the token limit.
    #[must_use]
    pub fn max_tokens(mut self, value: u32) -> Self {
        self.max_tokens = Some(value);
        self
    }

    /// Adds a stop sequence.
    #[must_use]
    pub fn stop(mut self, value: impl Into<String>) -> Self {
        self.stop.push(value.into());
        self
    }

    /// Sets the seed.
    #[must_use]
    pub fn seed(mut self, value: u64) -> Self {
        self.seed = Some(value);
        self
    }

    /// Sets the tool choice.
    #[must_use]
    pub fn tool_choice(mut self, value: ToolChoice) -> Self {
        self.tool_choice = value;
        self
    }

    /// Allows or forbids parallel tool calls.
    #[must_use]
    pub fn parallel_tool_calls(mut self, value: bool) -> Self {
        self.parallel_tool_calls = Some(value);
        self
    }

    /// Sets the response format.
    #[must_use]
    pub fn response_format(mut self, value: ResponseFormat) -> Self {
        self.response_format = Some(value);
        self
    }

    /// Adds a provider-specific body field.
    #[must_use]
    pub fn extra(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.extra.insert(key.into(), value.into());
        self
    }
}

/// Token usage of one model call.
///
/// `input_tokens` counts every input token, cached ones included; the cache counts are
/// parts of it, set when the provider reports them (OpenAI reports cache reads, Anthropic
/// reads and writes). Build one with [`ChatUsage::new`] and
/// [`with_cache_read`](ChatUsage::with_cache_read) /
/// [`with_cache_creation`](ChatUsage::with_cache_creation); the type is `#[non_exhaustive]`, so
/// new counts don't break it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatUsage {
    /// Prompt tokens (all of them, cache reads and writes included).
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Input tokens served from the provider's prompt cache, when the provider reports a
    /// non-zero count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
    /// Input tokens written to the provider's prompt cache, when the provider reports a
    /// non-zero count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
}

impl ChatUsage {
    /// Usage with these input and output counts (no cache counts).
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            ..Self::default()
        }
    }

    /// The usage with `tokens` input tokens read from the provider's prompt cache.
    ///
    /// ```
    /// use agentscope_core::ChatUsage;
    ///
    /// let usage = ChatUsage::new(1200, 5).with_cache_read(1000).with_cache_creation(0);
    /// assert_eq!(usage.cache_read_input_tokens, Some(1000));
    /// ```
    #[must_use]
    pub fn with_cache_read(mut self, tokens: u64) -> Self {
        self.cache_read_input_tokens = Some(tokens);
        self
    }

    /// The usage with `tokens` input tokens written to the provider's prompt cache.
    #[must_use]
    pub fn with_cache_creation(mut self, tokens: u64) -> Self {
        self.cache_creation_input_tokens = Some(tokens);
        self
    }

    /// Adds `other`'s counts to these (a cache count stays unknown only when both are).
    pub fn add(&mut self, other: &ChatUsage) {
        fn sum(a: Option<u64>, b: Option<u64>) -> Option<u64> {
            match (a, b) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            }
        }
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_input_tokens =
            sum(self.cache_read_input_tokens, other.cache_read_input_tokens);
        self.cache_creation_input_tokens = sum(
            self.cache_creation_input_tokens,
            other.cache_creation_input_tokens,
        );
    }
}

/// One streamed chunk of a model response.
///
/// `content` holds deltas: a text or thinking fragment, or a tool-use fragment (see
/// [`ToolUseBlock`](crate::ToolUseBlock)). The last chunks usually carry `usage` and
/// `finish_reason`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatResponse {
    /// The provider's response id (the same for every chunk of one response).
    pub id: String,
    /// Delta blocks.
    pub content: Vec<ContentBlock>,
    /// Token usage, usually on the last chunk.
    pub usage: Option<ChatUsage>,
    /// Why the model stopped (`"stop"`, `"tool_calls"`, `"length"`, ...), on the last chunk.
    pub finish_reason: Option<String>,
    /// The model that answered, as the provider names it (it may be more specific than
    /// the requested one, e.g. a dated version), when the provider says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl ChatResponse {
    /// A chunk with the given delta blocks.
    ///
    /// ```
    /// use agentscope_core::{ChatResponse, ChatUsage};
    ///
    /// let last = ChatResponse::new(vec![])
    ///     .with_id("resp-1")
    ///     .with_usage(ChatUsage::new(12, 3))
    ///     .with_finish_reason("stop")
    ///     .with_model("gpt-4o-2024-08-06");
    /// assert_eq!(last.finish_reason.as_deref(), Some("stop"));
    /// ```
    pub fn new(content: Vec<ContentBlock>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// The chunk with the provider's response `id`.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// The chunk with token `usage`.
    #[must_use]
    pub fn with_usage(mut self, usage: ChatUsage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// The chunk with the provider's finish reason.
    #[must_use]
    pub fn with_finish_reason(mut self, reason: impl Into<String>) -> Self {
        self.finish_reason = Some(reason.into());
        self
    }

    /// The chunk with the name of the model that answered.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    struct Fixed;

    impl Model for Fixed {
        fn model_name(&self) -> &str {
            "fixed"
        }

        async fn stream(&self, _request: ModelRequest) -> Result<ChatStream, ModelError> {
            Ok(
                futures::stream::iter([Ok(ChatResponse::new(vec![ContentBlock::text("hi")]))])
                    .boxed(),
            )
        }
    }

    #[test]
    fn boxed_model_delegates_and_does_not_double_box() {
        let boxed = BoxedModel::new(Fixed);
        let again = BoxedModel::new(boxed.clone());
        assert!(Arc::ptr_eq(&boxed.0, &again.0));
        assert_eq!(again.model_name(), "fixed");
        let chunks: Vec<_> = futures::executor::block_on(async {
            again
                .stream(ModelRequest::default())
                .await
                .unwrap()
                .collect()
                .await
        });
        assert_eq!(chunks.len(), 1);
    }

    #[test]
    fn arc_model_is_a_model() {
        let shared = Arc::new(Fixed);
        let boxed = BoxedModel::new(Arc::clone(&shared));
        assert_eq!(boxed.model_name(), "fixed");
    }
}
