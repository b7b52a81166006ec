//! The connection to one remote agent: its card, the SDK's client for the interface it
//! picked, the configured headers, and what must never be shown of them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use a2a::{
    A2AError, AgentCard, CancelTaskRequest, GetTaskRequest, Message, SendMessageRequest,
    SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task, TaskState,
};
use a2a_client::auth::AuthInterceptor;
use a2a_client::jsonrpc::JsonRpcTransportFactory;
use a2a_client::rest::RestTransportFactory;
use a2a_client::{A2AClient, A2AClientFactory, Transport};
use agentscope_core::plumbing::error_chain;
use agentscope_core::plumbing::redact::{Redactor, url_for_display, url_secrets};
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::error::RemoteError;

/// Where the card of an agent lives, under its base URL.
const WELL_KNOWN: &str = ".well-known/agent-card.json";

/// How long reading the card may take.
const CARD_TIMEOUT: Duration = Duration::from_secs(30);

/// The streamed answer of a remote agent.
pub(crate) type Updates = BoxStream<'static, Result<StreamResponse, A2AError>>;

/// A configured header: its name, and its value marked sensitive.
pub(crate) type Header = (HeaderName, HeaderValue);

pub(crate) struct Connection {
    client: A2AClient<Box<dyn Transport>>,
    /// The card's name, description and streaming capability.
    card: AgentCard,
    /// The card's URL without its secrets.
    shown_url: String,
    /// The configured headers' names (their values are never shown).
    header_names: Vec<String>,
    /// The configured header values and the URLs' secrets.
    redactor: Redactor,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("url", &self.shown_url)
            .field("headers", &self.header_names)
            .field("streaming", &self.streaming())
            .finish_non_exhaustive()
    }
}

/// The card's URL: `url` itself when it names a `.json` file, else the well-known card
/// under it (a base URL).
fn card_url(url: &str) -> Result<reqwest::Url, RemoteError> {
    let invalid = || RemoteError::InvalidUrl {
        url: url_for_display(url),
    };
    let parsed = reqwest::Url::parse(url.trim()).map_err(|_| invalid())?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.cannot_be_a_base() {
        return Err(invalid());
    }
    if parsed.path().ends_with(".json") {
        return Ok(parsed);
    }
    let mut base = parsed;
    if !base.path().ends_with('/') {
        let path = format!("{}/", base.path());
        base.set_path(&path);
    }
    // A gateway's query (`?key=...`) stays on the card's URL.
    let mut card = base.join(WELL_KNOWN).map_err(|_| invalid())?;
    card.set_query(base.query());
    Ok(card)
}

impl Connection {
    /// Reads the card at `url` (a card URL or the agent's base URL) with `headers`, and
    /// makes the SDK's client for its HTTP+JSON interface, else its JSON-RPC one.
    pub(crate) async fn connect(url: &str, headers: Vec<Header>) -> Result<Self, RemoteError> {
        let card_url = card_url(url)?;
        let shown_url = url_for_display(card_url.as_str());
        let mut secrets: Vec<String> = url_secrets(url);
        for (_, value) in &headers {
            if let Ok(value) = value.to_str() {
                secrets.push(value.to_owned());
                // A scheme's credential alone (`Bearer <token>`), as a server may echo it.
                if let Some((_, credential)) = value.split_once(' ') {
                    secrets.push(credential.to_owned());
                }
            }
        }
        let mut redactor = Redactor::new(&secrets);
        let card_error = |redactor: &Redactor, reason: String| RemoteError::Card {
            url: shown_url.clone(),
            reason: redactor.scrub(reason),
        };

        let mut header_map = HeaderMap::new();
        for (name, value) in &headers {
            header_map.append(name.clone(), value.clone());
        }
        let http = reqwest::Client::builder().build().map_err(|err| {
            card_error(&redactor, format!("no HTTP client: {}", err.without_url()))
        })?;
        let response = http
            .get(card_url.clone())
            .headers(header_map)
            .timeout(CARD_TIMEOUT)
            .send()
            .await
            .map_err(|err| {
                card_error(
                    &redactor,
                    format!("it cannot be fetched: {}", error_chain(&err.without_url())),
                )
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(card_error(
                &redactor,
                format!("the server answered HTTP {status}"),
            ));
        }
        let body = response.bytes().await.map_err(|err| {
            card_error(
                &redactor,
                format!("it cannot be read: {}", error_chain(&err.without_url())),
            )
        })?;
        let card: AgentCard = serde_json::from_slice(&body).map_err(|err| {
            card_error(
                &redactor,
                format!("the answer is not an A2A agent card ({err})"),
            )
        })?;
        if card.name.trim().is_empty() {
            return Err(card_error(&redactor, "the card has no name".to_owned()));
        }
        // The interfaces' URLs may hold secrets of their own.
        secrets.extend(
            card.supported_interfaces
                .iter()
                .flat_map(|interface| url_secrets(&interface.url)),
        );
        redactor = Redactor::new(&secrets);

        let mut factory = A2AClientFactory::builder()
            .no_defaults()
            .register(Arc::new(RestTransportFactory::new(Some(http.clone()))))
            .register(Arc::new(JsonRpcTransportFactory::new(Some(http))))
            // HTTP+JSON first: it reports an HTTP error status (a refused token) as such.
            .preferred_bindings(vec![
                a2a::TRANSPORT_PROTOCOL_HTTP_JSON.to_owned(),
                a2a::TRANSPORT_PROTOCOL_JSONRPC.to_owned(),
            ]);
        let mut header_names = Vec::with_capacity(headers.len());
        for (name, value) in headers {
            header_names.push(name.as_str().to_owned());
            // Checked by the builder: every value is visible ASCII.
            let value = value.to_str().unwrap_or_default().to_owned();
            factory =
                factory.with_interceptor(Arc::new(AuthInterceptor::custom(name.as_str(), value)));
        }
        let client = factory
            .with_interceptor(Arc::new(TraceContext))
            .build()
            .create_from_card(&card)
            .await
            .map_err(|err| {
                card_error(
                    &redactor,
                    format!(
                        "it lists no interface this client speaks (HTTP+JSON or JSON-RPC, \
                     protocol version 1.x): {}",
                        err.message
                    ),
                )
            })?;
        Ok(Self {
            client,
            card,
            shown_url,
            header_names,
            redactor,
        })
    }

    /// The agent's name, as its card gives it.
    pub(crate) fn name(&self) -> &str {
        &self.card.name
    }

    /// The agent's description, as its card gives it.
    pub(crate) fn description(&self) -> &str {
        &self.card.description
    }

    /// The card's URL, without its secrets.
    pub(crate) fn shown_url(&self) -> &str {
        &self.shown_url
    }

    /// The configured headers' names.
    pub(crate) fn header_names(&self) -> &[String] {
        &self.header_names
    }

    /// Whether the card says the agent streams.
    pub(crate) fn streaming(&self) -> bool {
        self.card.capabilities.streaming == Some(true)
    }

    /// `text` without the configured header values and the URLs' secrets.
    pub(crate) fn scrub(&self, text: impl Into<String>) -> String {
        self.redactor.scrub(text)
    }

    /// Sends `message`: streamed when the agent streams, else blocking (the answer as the
    /// one update of the stream).
    pub(crate) async fn send(&self, message: Message) -> Result<Updates, A2AError> {
        // No configuration: a blocking send waits for the task to finish or ask.
        let request = SendMessageRequest {
            message,
            configuration: None,
            metadata: None,
            tenant: None,
        };
        if self.streaming() {
            return self.client.send_streaming_message(&request).await;
        }
        let answer = match self.client.send_message(&request).await? {
            SendMessageResponse::Task(task) => StreamResponse::Task(task),
            SendMessageResponse::Message(message) => StreamResponse::Message(message),
        };
        Ok(futures::stream::iter([Ok(answer)]).boxed())
    }

    /// Task `id` from where it is: the task, then (while it runs) its updates until it
    /// ends or asks.
    pub(crate) async fn resume(&self, id: &str) -> Result<Updates, A2AError> {
        let task = self
            .client
            .get_task(&GetTaskRequest {
                id: id.to_owned(),
                history_length: Some(0),
                tenant: None,
            })
            .await?;
        let waits = matches!(
            task.status.state,
            TaskState::InputRequired | TaskState::AuthRequired
        );
        if task.status.state.is_terminal() || waits || !self.streaming() {
            return Ok(futures::stream::iter([Ok(StreamResponse::Task(task))]).boxed());
        }
        self.client
            .subscribe_to_task(&SubscribeToTaskRequest {
                id: id.to_owned(),
                tenant: None,
            })
            .await
    }

    /// Cancels task `id`.
    pub(crate) async fn cancel(&self, id: &str) -> Result<Task, A2AError> {
        self.client
            .cancel_task(&CancelTaskRequest {
                id: id.to_owned(),
                metadata: None,
                tenant: None,
            })
            .await
    }
}

/// Sends the current span's W3C trace context (`traceparent`, `tracestate`) with every
/// request, so the remote agent's spans join the caller's trace (with an OpenTelemetry
/// propagator installed, by `agentscope-otel`; nothing otherwise).
struct TraceContext;

#[async_trait::async_trait]
impl a2a_client::middleware::CallInterceptor for TraceContext {
    async fn before(
        &self,
        _method: &str,
        params: &mut a2a_client::ServiceParams,
    ) -> Result<(), A2AError> {
        if let Some(context) = agentscope_core::propagation::inject(&tracing::Span::current()) {
            for (name, value) in context.iter() {
                params.insert(name.to_owned(), vec![value.to_owned()]);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_names_the_well_known_card_and_a_json_url_is_the_card() {
        let url = |given: &str| card_url(given).map(|url| url.to_string());
        assert_eq!(
            url("http://127.0.0.1:4000/a2a").unwrap(),
            "http://127.0.0.1:4000/a2a/.well-known/agent-card.json"
        );
        assert_eq!(
            url("https://agents.example.com/").unwrap(),
            "https://agents.example.com/.well-known/agent-card.json"
        );
        assert_eq!(
            url("https://gw.example.com/a2a?key=k-1").unwrap(),
            "https://gw.example.com/a2a/.well-known/agent-card.json?key=k-1"
        );
        assert_eq!(
            url("https://agents.example.com/cards/ops.json").unwrap(),
            "https://agents.example.com/cards/ops.json"
        );
        assert_eq!(
            url("mailto:ops@example.com").unwrap_err(),
            RemoteError::InvalidUrl {
                url: "mailto:<redacted>@example.com".into()
            }
        );
        assert_eq!(
            url("not a url").unwrap_err(),
            RemoteError::InvalidUrl {
                url: "not a url".into()
            }
        );
    }
}
