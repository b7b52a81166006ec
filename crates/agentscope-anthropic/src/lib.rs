//! A native Anthropic Messages API [`Model`](agentscope_core::Model) for agentscope-rs.
//!
//! [`AnthropicModel`] speaks Anthropic's Messages protocol (`POST /v1/messages`) over HTTP
//! (reqwest with rustls, no OpenSSL) and streams every answer with server-sent events. It
//! supports extended thinking (signed thinking is sent back in tool loops), tool use,
//! images, prompt caching and beta headers. The HTTP half (retries, timeouts, SSE parsing,
//! secret redaction) is `agentscope-http`'s, shared with the other clients.
//!
//! ```no_run
//! use agentscope_anthropic::AnthropicModel;
//!
//! // ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL (optional) and AGENTSCOPE_MODEL
//! let model = AnthropicModel::from_env()?;
//!
//! // or explicitly
//! let thinking = AnthropicModel::builder()
//!     .api_key("sk-ant-...")
//!     .model("claude-sonnet-4-5")
//!     .max_tokens(16000)
//!     .thinking(8000)
//!     .prompt_caching(true)
//!     .build()?;
//! # Ok::<(), agentscope_core::ModelError>(())
//! ```
//!
//! # What is sent
//!
//! A [`ModelRequest`](agentscope_core::ModelRequest) maps to one Messages body, with the
//! headers `x-api-key` (the key), `anthropic-version` (default `2023-06-01`) and, when
//! betas are set, `anthropic-beta` (comma-joined):
//!
//! - `model`, and `max_tokens`: the request's
//!   [`GenerateOptions::max_tokens`](agentscope_core::GenerateOptions::max_tokens), else the
//!   builder's (default 4096; Anthropic requires one);
//! - `system`: the system messages that open the conversation, as text blocks. Anthropic
//!   has no system role inside the conversation, so a system message that comes later (the
//!   engine injects hints that way) is sent as a text block of the user turn next to it:
//!   appended to the user turn before it, or starting the user turn after it;
//! - `messages`, alternating `user` and `assistant` turns (consecutive messages of the same
//!   role are merged into one turn, since Anthropic requires alternation):
//!   - user messages as `text` blocks and `image` blocks (a base64 `data:` URL as a
//!     `base64` source with its media type, any other URL as a `url` source);
//!   - assistant messages as their blocks in order: `thinking` with its `signature`
//!     (thinking without a signature is dropped: Anthropic rejects it),
//!     `redacted_thinking` with its `data` unchanged, `text`, and `tool_use` with
//!     `{id, name, input}` (`{}` when the arguments did not parse);
//!   - tool results as `tool_result` blocks (`tool_use_id`, the output's text and images
//!     as `content`, `is_error: true` only for failures) in a user turn, before any other
//!     block of that turn;
//!   - empty text blocks and turns left empty are not sent (Anthropic rejects them);
//! - `tools` (`{name, description, input_schema}`) and, only when there are tools,
//!   `tool_choice`: `auto`, `any` (for `Required`), `tool` with its `name` (for
//!   `Specific`) or `none`, with `disable_parallel_tool_use: true` when
//!   `parallel_tool_calls` is `Some(false)`;
//! - `thinking: {"type": "enabled", "budget_tokens": N}` when the builder's
//!   [`thinking`](AnthropicModelBuilder::thinking) is set;
//! - `temperature`, `top_p` and `stop_sequences` (from `stop`) when set. `seed` and
//!   `response_format` have no Messages API equivalent and are not sent (a debug log says
//!   so, once);
//! - with [`prompt_caching`](AnthropicModelBuilder::prompt_caching),
//!   `cache_control: {"type": "ephemeral"}` on the last system block, the last tool and
//!   the last block of the last turn;
//! - the `extra` options, merged into the top level of the body last (so they can override
//!   anything, e.g. `top_k` or `metadata`);
//! - `stream: true`.
//!
//! # What comes back
//!
//! Each streamed delta becomes one [`ChatResponse`](agentscope_core::ChatResponse), all
//! with the message id: `text_delta` as text, `thinking_delta` as thinking, and
//! `signature_delta` as a [`ThinkingBlock`](agentscope_core::ThinkingBlock) with empty
//! thinking and the signature, which
//! [`ChatAccumulator`](agentscope_core::ChatAccumulator) joins to the thinking block. A
//! `redacted_thinking` block (thinking Anthropic encrypted) comes whole, as a
//! [`RedactedThinkingBlock`](agentscope_core::RedactedThinkingBlock) with its `data`; it is
//! kept in its place among the thinking blocks and sent back unchanged, as Anthropic
//! requires in a tool loop with thinking on (the OpenAI client never sends it). A tool
//! call streams live: a fragment with its id and name first, then each `input_json_delta`
//! piece as a fragment with an empty id. The final chunk, at `message_stop`, carries the
//! usage (input tokens counting cache writes and reads, output tokens as the last
//! `message_delta` says) and the stop reason as Anthropic says it (`end_turn`, `tool_use`,
//! `max_tokens`, `stop_sequence`, `refusal`, `pause_turn`). Arguments that are not valid
//! JSON at the end (a call cut by `max_tokens`) stay in `raw_input`, so the engine reports
//! an argument error to the model instead of failing. A server that answers with one JSON
//! message instead of a stream is decoded into the same chunks.
//!
//! An `error` event (e.g. `overloaded_error`) ends the stream with
//! [`ModelError::Stream`](agentscope_core::ModelError::Stream) carrying its message; a
//! stream that ends with neither `message_stop` nor a stop reason was cut off and is a
//! `ModelError::Stream` too (the partial answer is discarded); a body that is not an event
//! stream is a [`ModelError::InvalidResponse`](agentscope_core::ModelError::InvalidResponse).
//!
//! # Known limitations
//!
//! - The accumulator keeps one thinking block and one text block per message: a response
//!   with several thinking blocks (interleaved thinking) is joined into one, whose
//!   signature is then not valid to send back.
//! - Server tools (`server_tool_use`, web search results) and citations are ignored.
#![warn(missing_docs, missing_debug_implementations)]

// One job per module; `use crate::` edges only point down (no cycles). Sending, retries,
// SSE parsing and redaction are agentscope-http's (shared with the other clients).
//   builder  -> model, request      builder, env, endpoint validation
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
    AnthropicModelBuilder, DEFAULT_BASE_URL, DEFAULT_MAX_TOKENS, DEFAULT_VERSION, ENV_API_KEY,
    ENV_BASE_URL, ENV_MODEL,
};
pub use model::AnthropicModel;

/// Compiles the README's code blocks with the doc tests, so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct Readme;

/// The models guide (both clients), compiled with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/models.md")]
struct ModelsGuide;
