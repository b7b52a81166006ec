//! The connection to one remote agent: its card, the interface it picked, the configured
//! headers and the origins they may go to, and what must never be shown of them; the
//! requests of a call (send, follow a task, cancel) on top of [`http`](super::http).

use std::fmt;
use std::time::Duration;

use a2a::{
    A2AError, AgentCard, CancelTaskRequest, GetTaskRequest, Message, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
    TaskState,
};
use agentscope_core::redact::{Redactor, url_for_display, url_secrets};
use futures::StreamExt;
use reqwest::Url;

use super::error::RemoteError;
use super::http::{Binding, Credentials, Header, Http, Interface, Updates, origin};

/// Where the card of an agent lives, under its base URL.
const WELL_KNOWN: &str = ".well-known/agent-card.json";

/// The first wait of a task followed by polling (`GetTask`), doubled after each poll up to
/// [`POLL_MAX`].
pub(crate) const POLL_FIRST: Duration = Duration::from_millis(250);

/// The longest wait between two polls of a task.
pub(crate) const POLL_MAX: Duration = Duration::from_secs(5);

/// What the builder gives a connection.
pub(crate) struct Settings {
    pub(crate) headers: Vec<Header>,
    /// Origins besides the card's that may receive the headers.
    pub(crate) origins: Vec<String>,
    pub(crate) timeout: Duration,
}

pub(crate) struct Connection {
    interface: Interface,
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
fn card_url(url: &str) -> Result<Url, RemoteError> {
    let invalid = || RemoteError::InvalidUrl {
        url: url_for_display(url),
    };
    let parsed = Url::parse(url.trim()).map_err(|_| invalid())?;
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

/// `origin` as an origin (`scheme://host[:port]`), when it is an http(s) URL with nothing
/// more than a `/` path.
pub(crate) fn parse_origin(given: &str) -> Option<String> {
    let url = Url::parse(given.trim()).ok()?;
    let bare = matches!(url.scheme(), "http" | "https")
        && url.host().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none();
    bare.then(|| origin(&url))
}

/// Whether an interface's protocol version is one of 1.x (an unreadable one is taken as
/// 1, as the SDK does).
fn speaks_version(version: &str) -> bool {
    match version.trim().split('.').next().map(str::parse::<u32>) {
        Some(Ok(major)) => major == 1,
        _ => true,
    }
}

/// The interface of `card` to use: HTTP+JSON, else JSON-RPC, of protocol version 1.x, at
/// an origin that may have the credentials when there are any.
fn pick(card: &AgentCard, http: &Http) -> Result<Interface, String> {
    let mut spoken: Vec<(Binding, Url, Option<String>)> = card
        .supported_interfaces
        .iter()
        .filter(|interface| speaks_version(&interface.protocol_version))
        .filter_map(|interface| {
            let binding = Binding::of(&interface.protocol_binding)?;
            let url = Url::parse(interface.url.trim()).ok()?;
            matches!(url.scheme(), "http" | "https")
                .then(|| (binding, url, interface.tenant.clone()))
        })
        .collect();
    // HTTP+JSON first: it reports an HTTP error status (a refused token) as such.
    spoken.sort_by_key(|(binding, _, _)| *binding != Binding::HttpJson);
    let credentials = http.credentials();
    let found = spoken
        .iter()
        .find(|(_, url, _)| credentials.is_empty() || credentials.allows(url));
    match (found, spoken.first()) {
        (Some((binding, url, tenant)), _) => Ok(Interface {
            http: http.clone(),
            url: url.clone(),
            binding: *binding,
            tenant: tenant.clone(),
        }),
        (None, Some((_, elsewhere, _))) => Err(format!(
            "it names its interface at {}, another origin than the one the credentials were \
             given for ({}): they are not sent there; allow it with \
             RemoteAgentBuilder::send_credentials_to(\"{}\") if you trust it",
            origin(elsewhere),
            credentials.named(),
            origin(elsewhere)
        )),
        (None, None) => Err(
            "it lists no interface this client speaks (HTTP+JSON or JSON-RPC, protocol \
             version 1.x)"
                .to_owned(),
        ),
    }
}

impl Connection {
    /// Reads the card at `url` (a card URL or the agent's base URL) with the configured
    /// headers, and picks the interface to call.
    pub(crate) async fn connect(url: &str, settings: Settings) -> Result<Self, RemoteError> {
        let card_url = card_url(url)?;
        let shown_url = url_for_display(card_url.as_str());
        let Settings {
            headers,
            mut origins,
            timeout,
        } = settings;
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
        let header_names = headers
            .iter()
            .map(|(name, _)| name.as_str().to_owned())
            .collect();
        // The card's origin is the one the user named.
        origins.insert(0, origin(&card_url));
        let http = Http::new(Credentials::new(headers, origins), timeout)
            .map_err(|reason| card_error(&redactor, reason))?;
        let body = http
            .card(&card_url)
            .await
            .map_err(|reason| card_error(&redactor, reason))?;
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
        let interface = pick(&card, &http).map_err(|reason| card_error(&redactor, reason))?;
        Ok(Self {
            interface,
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

    /// Sends `message`: streamed when the agent streams; else sent to return at once (the
    /// task as the server has it), and the task followed by polling until it ends or asks.
    pub(crate) async fn send(&self, message: Message) -> Result<Updates, A2AError> {
        let streaming = self.streaming();
        let request = SendMessageRequest {
            message,
            configuration: (!streaming).then_some(SendMessageConfiguration {
                accepted_output_modes: None,
                task_push_notification_config: None,
                history_length: None,
                return_immediately: Some(true),
            }),
            metadata: None,
            tenant: None,
        };
        if streaming {
            return self.interface.send_streaming_message(&request).await;
        }
        match self.interface.send_message(&request).await? {
            SendMessageResponse::Task(task) if !settled(&task.status.state) => {
                Ok(poll(self.interface.clone(), task.id.clone(), Some(task)))
            }
            SendMessageResponse::Task(task) => Ok(one(StreamResponse::Task(task))),
            SendMessageResponse::Message(message) => Ok(one(StreamResponse::Message(message))),
        }
    }

    /// Task `id`, as the server has it now.
    pub(crate) async fn get_task(&self, id: &str) -> Result<Task, A2AError> {
        self.interface
            .get_task(&GetTaskRequest {
                id: id.to_owned(),
                history_length: Some(0),
                tenant: None,
            })
            .await
    }

    /// Task `id` from where it is: the task, then (while it runs) its updates until it
    /// ends or asks: subscribed to when the agent streams, else polled.
    pub(crate) async fn resume(&self, id: &str) -> Result<Updates, A2AError> {
        let task = self.get_task(id).await?;
        if settled(&task.status.state) {
            return Ok(one(StreamResponse::Task(task)));
        }
        if self.streaming() {
            let subscribed = self
                .interface
                .subscribe_to_task(&SubscribeToTaskRequest {
                    id: id.to_owned(),
                    tenant: None,
                })
                .await;
            if let Ok(updates) = subscribed {
                return Ok(updates);
            }
        }
        Ok(poll(self.interface.clone(), id.to_owned(), Some(task)))
    }

    /// Task `id` followed by polling only (a stream that ended before the task did).
    pub(crate) fn poll(&self, id: &str) -> Updates {
        poll(self.interface.clone(), id.to_owned(), None)
    }

    /// Cancels task `id`.
    pub(crate) async fn cancel(&self, id: &str) -> Result<Task, A2AError> {
        self.interface
            .cancel_task(&CancelTaskRequest {
                id: id.to_owned(),
                metadata: None,
                tenant: None,
            })
            .await
    }
}

/// Whether a task in `state` has ended, or waits for an answer.
pub(crate) fn settled(state: &TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

/// An answer of one update.
fn one(update: StreamResponse) -> Updates {
    futures::stream::iter([Ok(update)]).boxed()
}

/// Task `id` followed by `GetTask`: `known` first when given (the poll then waits before
/// its first request), each task read until one has ended or asks; the waits start at
/// [`POLL_FIRST`] and double up to [`POLL_MAX`]. A failed request ends the updates.
fn poll(interface: Interface, id: String, known: Option<Task>) -> Updates {
    struct State {
        interface: Interface,
        id: String,
        known: Option<Task>,
        wait: Option<Duration>,
        done: bool,
    }
    let wait = known.is_some().then_some(POLL_FIRST);
    let state = State {
        interface,
        id,
        known,
        wait,
        done: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        let task = match state.known.take() {
            Some(task) => Ok(task),
            None => {
                if let Some(wait) = state.wait {
                    tokio::time::sleep(wait).await;
                }
                state.wait = Some(
                    state
                        .wait
                        .map_or(POLL_FIRST, |wait| (wait * 2).min(POLL_MAX)),
                );
                state
                    .interface
                    .get_task(&GetTaskRequest {
                        id: state.id.clone(),
                        history_length: Some(0),
                        tenant: None,
                    })
                    .await
            }
        };
        state.done = match &task {
            Ok(task) => settled(&task.status.state),
            Err(_) => true,
        };
        Some((task.map(StreamResponse::Task), state))
    })
    .boxed()
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

    #[test]
    fn an_origin_is_a_scheme_a_host_and_a_port_only() {
        assert_eq!(
            parse_origin("https://api.example.com").as_deref(),
            Some("https://api.example.com")
        );
        assert_eq!(
            parse_origin("https://api.example.com:443/").as_deref(),
            Some("https://api.example.com")
        );
        assert_eq!(
            parse_origin("http://127.0.0.1:4001").as_deref(),
            Some("http://127.0.0.1:4001")
        );
        for not_an_origin in [
            "https://api.example.com/a2a",
            "https://api.example.com?key=1",
            "https://user@api.example.com",
            "ftp://api.example.com",
            "api.example.com",
        ] {
            assert_eq!(parse_origin(not_an_origin), None, "{not_an_origin}");
        }
    }

    #[test]
    fn only_protocol_version_1_is_spoken() {
        assert!(speaks_version("1.0"));
        assert!(speaks_version("1.2"));
        assert!(speaks_version(""));
        assert!(!speaks_version("0.3"));
        assert!(!speaks_version("2.0"));
    }
}
