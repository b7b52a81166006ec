//! An OpenAI-compatible chat-completions [`Model`](agentscope_core::Model) for agentscope-rs.
//!
//! [`OpenAIChatModel`] speaks the chat-completions wire protocol over HTTP (reqwest with
//! rustls, no OpenSSL) and streams every answer with server-sent events. It works with
//! OpenAI and with the servers that copy its API: Azure-style gateways, vLLM, llama.cpp
//! server, Ollama, LM Studio, DeepSeek, DashScope (compatible mode), OpenRouter and others.
//!
//! ```no_run
//! use agentscope_openai::OpenAIChatModel;
//!
//! // OPENAI_API_KEY, OPENAI_BASE_URL and AGENTSCOPE_MODEL (see `from_env` for the defaults)
//! let model = OpenAIChatModel::from_env()?;
//!
//! // or explicitly, e.g. a local vLLM server
//! let local = OpenAIChatModel::builder()
//!     .base_url("http://127.0.0.1:8000/v1")
//!     .model("Qwen/Qwen3-8B")
//!     .build()?;
//! # Ok::<(), agentscope_core::ModelError>(())
//! ```
//!
//! # What is sent
//!
//! A [`ModelRequest`](agentscope_core::ModelRequest) maps to one chat-completions body:
//!
//! - messages in order: system and user messages as text (user messages holding images as
//!   content parts with `image_url`), assistant messages with their text and `tool_calls`
//!   (thinking is not sent back), and one `tool` message per tool result, with its
//!   `tool_call_id`;
//! - tool schemas as `tools` (`{"type": "function", "function": {name, description,
//!   parameters}}`), and `tool_choice` / `parallel_tool_calls` only when there are tools;
//!   [`ToolChoice::Specific`](agentscope_core::ToolChoice::Specific) is sent as only that
//!   tool with `tool_choice: "required"`, which forces the same call on OpenAI and also on
//!   servers that ignore the object form of `tool_choice` (llama.cpp); a name that is not
//!   among the tools is sent as the object form, for the server to reject;
//! - the [`GenerateOptions`](agentscope_core::GenerateOptions) that are set (`temperature`,
//!   `top_p`, `max_tokens`, `stop`, `seed`, `response_format`), then the `extra` fields,
//!   which are merged into the top level of the body last (so they can override anything,
//!   e.g. `max_completion_tokens` for models that want it);
//! - `stream: true` and `stream_options: {"include_usage": true}`.
//!
//! # What comes back
//!
//! Each streamed delta becomes one [`ChatResponse`](agentscope_core::ChatResponse): text and
//! `refusal` as text blocks, `reasoning_content` (DeepSeek, Qwen, vLLM) or `reasoning`
//! (OpenRouter) as thinking blocks, and tool-call fragments as
//! [`ToolUseBlock`](agentscope_core::ToolUseBlock) fragments that
//! [`ChatAccumulator`](agentscope_core::ChatAccumulator) assembles. The first tool call of a
//! response streams live (its id and name first, then argument pieces with an empty id);
//! further calls are buffered per index and arrive whole, in index order, at the end of the
//! response, which keeps interleaved parallel calls correct. Usage arrives on the last
//! chunk. Arguments that are not valid JSON at the end stay in `raw_input`, so the engine
//! reports an argument error to the model instead of failing.
#![warn(missing_docs, missing_debug_implementations)]

// One job per module; `use crate::` edges only point down (no cycles). Sending, retries,
// SSE parsing and redaction are agentscope-http's (shared with the other clients).
//   builder  -> model               builder, env, endpoint validation
//   model    -> request, decode     the handle and its Model impl
//   request                         ModelRequest -> request body
//   decode   -> response            SSE / JSON body -> ChatResponse deltas
//   response                        lenient serde types of the response
mod builder;
mod decode;
mod model;
mod request;
mod response;

pub use builder::{
    DEFAULT_BASE_URL, DEFAULT_LOCAL_MODEL, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL,
    OpenAIChatModelBuilder,
};
pub use model::OpenAIChatModel;

/// Compiles the README's code blocks with the doc tests, so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct Readme;
