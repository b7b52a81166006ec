//! What the examples share, so that each behaves the same for a newcomer:
//!
//! - the model: [`model_or`] (and [`model`]) use the model the environment names
//!   (OpenAI-compatible or Anthropic, its output capped by `AGENTSCOPE_MAX_TOKENS`) and say
//!   which on the first line; without one, an offline stand-in, said as clearly; an example
//!   that always runs scripted says why on its first line ([`scripted`]);
//! - what goes wrong: [`run`] prints an example's error as its `Display` chain, one line per
//!   cause (`error: ...`, then `caused by: ...`), never `Debug`, and prints every warning
//!   the library logs while the example runs (`tracing` WARN and ERROR events: a model
//!   request retried, a fallback model used, an empty response sent again), so a retry is
//!   seen when it happens.
//!
//! The environment variables, all optional:
//!
//! | variable | what |
//! |---|---|
//! | `OPENAI_API_KEY`, `OPENAI_BASE_URL` | either one: the OpenAI-compatible client (a keyless local server needs only the base URL) |
//! | `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL` | either one (and no `OPENAI_*`): the Anthropic client |
//! | `AGENTSCOPE_MODEL` | the model name (`default` for a server other than OpenAI's when unset) |
//! | `AGENTSCOPE_MAX_TOKENS` | at most this many tokens per answer of that model (a positive integer) |
// Each example compiles this module on its own and uses a part of it.
#![allow(dead_code)]

use std::error::Error;
use std::fmt::{self, Write as _};
use std::future::Future;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use agentscope::prelude::*;
use agentscope::{BoxedModel, ChatStream, ModelError, ModelRequest};
use agentscope_anthropic::AnthropicModel;
use agentscope_openai::OpenAIChatModel;
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use serde_json::{Value, json};
use tracing::field::{Field, Visit};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;

/// The variable capping the tokens of each answer of the environment's model.
pub(crate) const MAX_TOKENS_VAR: &str = "AGENTSCOPE_MAX_TOKENS";

/// Runs an example's body: shows the library's warnings while it runs and, when it fails,
/// prints its error's `Display` chain to stderr ([`error_lines`]) and exits with 1.
///
/// ```ignore
/// #[tokio::main]
/// async fn main() -> ExitCode {
///     support::run(example()).await
/// }
/// ```
pub(crate) async fn run(example: impl Future<Output = Result<(), Box<dyn Error>>>) -> ExitCode {
    show_warnings();
    match example.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // What was printed so far comes first.
            let _ = std::io::stdout().flush();
            for line in error_lines(&*error) {
                eprintln!("{line}");
            }
            ExitCode::FAILURE
        }
    }
}

/// `error` as people read it: its `Display`, then each cause on a line of its own
/// (`error: ...`, then `caused by: ...`), each line saying one thing. A message that ends
/// with its cause's message (as `model error: gave up after 3 attempts: connection error:
/// ...` does) is shown without it, and a cause that a line above already says in full (a
/// connection error's message quotes the transport's chain) is not repeated.
pub(crate) fn error_lines(error: &(dyn Error + 'static)) -> Vec<String> {
    let mut texts = vec![error.to_string()];
    let mut cause = error.source();
    while let Some(error) = cause {
        texts.push(error.to_string());
        cause = error.source();
    }
    let mut said: Vec<String> = Vec::new();
    for (at, text) in texts.iter().enumerate() {
        let own = match texts.get(at + 1) {
            Some(next) if !next.is_empty() && text.ends_with(next.as_str()) => text
                [..text.len() - next.len()]
                .trim_end_matches([':', ' '])
                .to_owned(),
            _ => text.trim().to_owned(),
        };
        if own.is_empty() || said.iter().any(|line| line.contains(&own)) {
            continue;
        }
        said.push(own);
    }
    said.into_iter()
        .enumerate()
        .map(|(at, line)| {
            let label = if at == 0 { "error" } else { "caused by" };
            format!("{label}: {line}")
        })
        .collect()
}

/// Prints every `tracing` event at WARN or ERROR to stderr, one line each: the message, then
/// its fields (`warning: model request failed, retrying (model=..., attempt=1, ...)`).
fn show_warnings() {
    let printer = WarningPrinter::layer(|line| eprintln!("{line}"));
    // Fails only when a subscriber is set already: then that one shows them.
    let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(printer));
}

/// The `tracing` layer behind [`run`]: formats each WARN or ERROR event as one line and
/// hands it to `print`.
pub(crate) struct WarningPrinter {
    print: Box<dyn Fn(&str) + Send + Sync>,
}

impl WarningPrinter {
    /// A layer handing each WARN or ERROR event's line to `print`.
    pub(crate) fn layer(
        print: impl Fn(&str) + Send + Sync + 'static,
    ) -> impl Layer<tracing_subscriber::Registry> {
        Self {
            print: Box::new(print),
        }
        .with_filter(LevelFilter::WARN)
    }
}

impl<S: tracing::Subscriber> Layer<S> for WarningPrinter {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut fields = EventFields::default();
        event.record(&mut fields);
        let label = if *event.metadata().level() == tracing::Level::ERROR {
            "error"
        } else {
            "warning"
        };
        let mut line = format!("{label}: {}", fields.message);
        if !fields.rest.is_empty() {
            let _ = write!(line, " ({})", fields.rest.join(", "));
        }
        (self.print)(&line);
    }
}

/// An event's message and its other fields as `name=value`.
#[derive(Default)]
struct EventFields {
    message: String,
    rest: Vec<String>,
}

impl Visit for EventFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_owned();
        } else {
            self.rest.push(format!("{}={value}", field.name()));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // `%value` fields arrive here as their `Display`, the message as its text.
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.rest.push(format!("{}={value:?}", field.name()));
        }
    }
}

/// Whether the environment names a model ([`model_or`] would use it).
pub(crate) fn environment_names_a_model() -> bool {
    [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    ]
    .into_iter()
    .any(is_set)
}

fn is_set(name: &str) -> bool {
    std::env::var(name).is_ok_and(|value| !value.trim().is_empty())
}

/// The model the environment names, or `offline` (a stand-in, not a language model), and
/// says which on a line of its own (the example's first):
///
/// - the OpenAI-compatible client when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set (with
///   optional `AGENTSCOPE_MODEL`; no key is sent when none is set, as keyless local servers
///   want);
/// - otherwise the Anthropic client when `ANTHROPIC_API_KEY` or `ANTHROPIC_BASE_URL` is set
///   (with `AGENTSCOPE_MODEL`);
/// - otherwise `offline`.
///
/// A real model's answers are capped at `AGENTSCOPE_MAX_TOKENS` tokens when it is set.
///
/// # Errors
///
/// The client's configuration error, or one for an `AGENTSCOPE_MAX_TOKENS` that is not a
/// positive integer.
pub(crate) fn model_or(offline: impl Model) -> Result<BoxedModel, ModelError> {
    let max_tokens = max_tokens_from(|name| std::env::var(name).ok())?;
    let (model, name, endpoint) = if is_set("OPENAI_API_KEY") || is_set("OPENAI_BASE_URL") {
        let model = OpenAIChatModel::from_env()?;
        let (name, endpoint) = (model.model().to_owned(), model.endpoint().to_owned());
        (BoxedModel::new(model), name, endpoint)
    } else if is_set("ANTHROPIC_API_KEY") || is_set("ANTHROPIC_BASE_URL") {
        let model = AnthropicModel::from_env()?;
        let (name, endpoint) = (model.model().to_owned(), model.endpoint().to_owned());
        (BoxedModel::new(model), name, endpoint)
    } else {
        println!(
            "model: offline demo model, scripted, not a language model (set OPENAI_BASE_URL, \
             OPENAI_API_KEY or ANTHROPIC_API_KEY to use a real one)\n"
        );
        return Ok(BoxedModel::new(offline));
    };
    // `endpoint()` is shown without its secrets (password, query values).
    match max_tokens {
        Some(cap) => {
            println!(
                "model: {name} at {endpoint}, at most {cap} tokens per answer ({MAX_TOKENS_VAR})\n"
            );
            Ok(BoxedModel::new(MaxTokens { inner: model, cap }))
        }
        None => {
            println!("model: {name} at {endpoint}\n");
            Ok(model)
        }
    }
}

/// [`model_or`] with the offline demo model: it asks the calculator for `demo_expression`,
/// then answers with the calculator's result.
pub(crate) fn model(demo_expression: &str) -> Result<BoxedModel, ModelError> {
    model_or(DemoModel::new(demo_expression))
}

/// Says, as the example's first line, that it runs scripted and why; and that the model the
/// environment names is not used, when it names one.
pub(crate) fn scripted(why: &str) {
    let unused = if environment_names_a_model() {
        " The model named in the environment is not used."
    } else {
        ""
    };
    println!("runs scripted, offline: {why}.{unused}\n");
}

/// `AGENTSCOPE_MAX_TOKENS` as `lookup` gives it: `None` when unset or blank.
///
/// # Errors
///
/// [`ModelError::Config`] when it is not a positive integer.
pub(crate) fn max_tokens_from(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<u32>, ModelError> {
    let Some(value) = lookup(MAX_TOKENS_VAR).filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    match value.trim().parse::<u32>() {
        Ok(cap) if cap > 0 => Ok(Some(cap)),
        _ => Err(ModelError::Config {
            message: format!("{MAX_TOKENS_VAR} must be a positive integer, got {value:?}"),
        }),
    }
}

/// A model whose answers are capped at `cap` tokens: a request's `max_tokens` is set to
/// `cap` when it has none or a larger one. (The OpenAI client has no default of its own,
/// and Anthropic's `max_tokens` setting is only the default for requests that set none: a
/// cap on the request covers both.)
pub(crate) struct MaxTokens<M> {
    /// The model.
    pub(crate) inner: M,
    /// The most tokens an answer may have.
    pub(crate) cap: u32,
}

impl<M: Model> Model for MaxTokens<M> {
    fn model_name(&self) -> &str {
        self.inner.model_name()
    }

    fn provider_name(&self) -> Option<&str> {
        self.inner.provider_name()
    }

    async fn stream(&self, mut request: ModelRequest) -> Result<ChatStream, ModelError> {
        let cap = request
            .options
            .max_tokens
            .map_or(self.cap, |asked| asked.min(self.cap));
        request.options.max_tokens = Some(cap);
        self.inner.stream(request).await
    }
}

/// The offline demo model (clearly not a language model): to a question it answers with
/// one tool call, then, once the tool's result is in the conversation, with an answer made
/// from that result, streamed word by word. It decides from each request alone, so a served
/// demo answers any number of questions, in any number of conversations.
pub(crate) struct DemoModel {
    name: &'static str,
    thinking: Option<&'static str>,
    tool: String,
    input: Value,
    answer: fn(&str) -> String,
}

impl DemoModel {
    /// The calculator demo: it asks the calculator for `expression`, then answers with the
    /// calculator's result.
    fn new(expression: &str) -> Self {
        Self::calling(
            Some("The user wants arithmetic; I'll use the calculator."),
            "calculator",
            json!({"expression": expression}),
            |result| format!("The answer is {result}."),
        )
    }

    /// Calls `tool` with `input` (after `thinking`, if any), then answers
    /// `answer(the tool's result)`.
    pub(crate) fn calling(
        thinking: Option<&'static str>,
        tool: &str,
        input: Value,
        answer: fn(&str) -> String,
    ) -> Self {
        Self {
            name: "demo-model (offline, scripted)",
            thinking,
            tool: tool.to_owned(),
            input,
            answer,
        }
    }
}

impl Model for DemoModel {
    fn model_name(&self) -> &str {
        self.name
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        let last = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role != Role::System);
        let response = match last.filter(|m| m.role == Role::Tool) {
            // The tool has answered: reply from its result, streamed word by word.
            Some(result) => {
                let result = result
                    .tool_results()
                    .first()
                    .map(|r| r.text_output())
                    .unwrap_or_default();
                let answer = (self.answer)(&result);
                ScriptedResponse::chunks(
                    answer
                        .split_inclusive(' ')
                        .map(ScriptedChunk::text)
                        .collect::<Vec<_>>(),
                )
            }
            // A question: one tool call, its id new in the conversation.
            None => {
                let calls = request.messages.iter().flat_map(|m| m.tool_uses()).count();
                let call = ScriptedChunk::tool_call(
                    format!("call_{}", calls + 1),
                    self.tool.as_str(),
                    self.input.clone(),
                );
                let chunks = match self.thinking {
                    Some(thinking) => vec![ScriptedChunk::thinking(thinking), call],
                    None => vec![call],
                };
                ScriptedResponse::chunks(chunks)
            }
        };
        ScriptedModel::new([response])
            .with_name(self.name)
            .stream(request)
            .await
    }
}

/// Lines collected from a [`WarningPrinter`], for tests.
pub(crate) type Collected = Arc<Mutex<Vec<String>>>;

/// A [`WarningPrinter`] that collects its lines, and where they go.
pub(crate) fn collecting_printer() -> (impl Layer<tracing_subscriber::Registry>, Collected) {
    let lines = Collected::default();
    let sink = Arc::clone(&lines);
    let printer = WarningPrinter::layer(move |line| {
        sink.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(line.to_owned())
    });
    (printer, lines)
}
