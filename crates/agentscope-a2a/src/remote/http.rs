//! The HTTP under the client: the card, and the two A2A bindings (HTTP+JSON, JSON-RPC), on
//! reqwest, with the SDK's types in its ProtoJSON mapping (`a2a-pb`) as the payloads.
//!
//! Done here rather than by the SDK's transports (`a2a-client-lf`), which send whatever
//! headers they are given to whatever URL the card names, log each request's URL (query
//! included) at DEBUG, read answers and stream events without a limit and take no timeout.
//! Here:
//!
//! - **Credentials go only where the user said**: the configured headers are sent to the
//!   origin the user named (the card's) and to the origins they allowed, never to another
//!   (a card naming an interface elsewhere, a redirect elsewhere, https to http);
//! - **no URL is logged or shown with its secrets** (query values, password);
//! - **everything is bounded**: each request answers within the timeout (a unary answer
//!   whole), a stream sends something (an event or a keep-alive) at least once per timeout,
//!   and answers, events and the card have a size limit.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use a2a::{
    A2AError, CancelTaskRequest, GetTaskRequest, JsonRpcId, JsonRpcRequest, JsonRpcResponse,
    SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
    TypedDetail, error_code,
};
use a2a_pb::protojson_conv::{self, ProtoJsonPayload};
use agentscope_core::error_chain;
use agentscope_core::redact::url_for_display;
use agentscope_http::sse::{SseEvent, SseParser};
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{CONTENT_TYPE, HeaderName, HeaderValue, LOCATION};
use reqwest::{Method, Response, StatusCode, Url};
use serde_json::Value;
use tokio::time::Instant;

/// The streamed answer of a remote agent.
pub(crate) type Updates = BoxStream<'static, Result<StreamResponse, A2AError>>;

/// A configured header: its name, and its value marked sensitive.
pub(crate) type Header = (HeaderName, HeaderValue);

/// How long a request may take to answer (a unary answer whole), and a stream may stay
/// silent (servers send a keep-alive every 15 s), unless the builder says otherwise.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long connecting may take (within the request's timeout).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest agent card read.
pub(crate) const MAX_CARD_BYTES: usize = 1 << 20;

/// The largest answer read, and the most a stream may send without completing an event.
pub(crate) const MAX_BODY_BYTES: usize = 16 << 20;

/// How much of an error answer is read (the rest is not needed to say what went wrong).
const MAX_ERROR_BYTES: usize = 64 << 10;

/// How many redirects a request follows (each to an origin that may have the credentials).
const MAX_REDIRECTS: usize = 5;

/// The tracing target of the client's own log lines.
const TARGET: &str = "agentscope_a2a::remote";

/// `bytes` for people: `1 MiB`, `16 MiB`, `64 KiB`.
fn size(bytes: usize) -> String {
    match bytes {
        bytes if bytes >= 1 << 20 && bytes % (1 << 20) == 0 => format!("{} MiB", bytes >> 20),
        bytes if bytes >= 1 << 10 && bytes % (1 << 10) == 0 => format!("{} KiB", bytes >> 10),
        bytes => format!("{bytes} bytes"),
    }
}

/// `duration` for people: `60 s`, `250 ms`.
pub(crate) fn seconds(duration: Duration) -> String {
    if duration.subsec_millis() == 0 && duration.as_secs() > 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// The origin of `url` (`scheme://host:port`, RFC 6454), as the credentials are allowed by.
pub(crate) fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// The configured headers and the origins they may be sent to.
pub(crate) struct Credentials {
    headers: Vec<Header>,
    origins: Vec<String>,
}

impl Credentials {
    /// `headers`, for `origins` (the named one first).
    pub(crate) fn new(headers: Vec<Header>, origins: Vec<String>) -> Self {
        Self { headers, origins }
    }

    /// Whether there is anything to protect.
    pub(crate) fn is_empty(&self) -> bool {
        self.headers.is_empty()
    }

    /// Whether `url` may receive the credentials: its origin is one the user named.
    pub(crate) fn allows(&self, url: &Url) -> bool {
        self.origins.contains(&origin(url))
    }

    /// The origin the user named (the card's).
    pub(crate) fn named(&self) -> &str {
        self.origins.first().map_or("", String::as_str)
    }
}

/// The HTTP client of one remote agent: its credentials and its timeout.
#[derive(Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    credentials: Arc<Credentials>,
    timeout: Duration,
}

impl fmt::Debug for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Http")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Why a body could not be read.
enum BodyError {
    /// It is larger than the limit; the size the server announced, when it did.
    TooLarge(Option<u64>),
    /// It did not come whole in time.
    Timeout,
    /// Reading it failed.
    Read(String),
}

impl Http {
    /// A client for `credentials`, each request answering within `timeout`.
    ///
    /// # Errors
    ///
    /// Why reqwest cannot make a client (its TLS backend).
    pub(crate) fn new(credentials: Credentials, timeout: Duration) -> Result<Self, String> {
        let credentials = Arc::new(credentials);
        let allowed = Arc::clone(&credentials);
        // A redirect is followed only to where the credentials may go (anywhere without
        // credentials); otherwise its answer (the 3xx) is the error.
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else if allowed.is_empty() || allowed.allows(attempt.url()) {
                attempt.follow()
            } else {
                attempt.stop()
            }
        });
        let client = reqwest::Client::builder()
            .redirect(redirects)
            .connect_timeout(CONNECT_TIMEOUT.min(timeout))
            .build()
            .map_err(|err| format!("no HTTP client: {}", err.without_url()))?;
        Ok(Self {
            client,
            credentials,
            timeout,
        })
    }

    /// The credentials.
    pub(crate) fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// A request to `url`: the protocol version, the credentials when `url` may have them,
    /// the current span's trace context.
    fn request(&self, method: Method, url: Url) -> reqwest::RequestBuilder {
        tracing::debug!(target: TARGET, %method, url = %url_for_display(url.as_str()), "A2A request");
        let allowed = self.credentials.allows(&url);
        let mut builder = self
            .client
            .request(method, url)
            .header(a2a::SVC_PARAM_VERSION, a2a::VERSION);
        if allowed {
            for (name, value) in &self.credentials.headers {
                builder = builder.header(name.clone(), value.clone());
            }
        }
        if let Some(context) = agentscope_core::propagation::inject(&tracing::Span::current()) {
            for (name, value) in context.iter() {
                if let (Ok(name), Ok(value)) = (
                    HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_str(value),
                ) {
                    builder = builder.header(name, value);
                }
            }
        }
        builder
    }

    /// Sends `builder`, its answer's head due by `deadline`.
    async fn send(
        &self,
        builder: reqwest::RequestBuilder,
        deadline: Instant,
    ) -> Result<Response, A2AError> {
        match tokio::time::timeout_at(deadline, builder.send()).await {
            Err(_) => Err(self.timed_out()),
            Ok(Err(err)) => Err(A2AError::internal(format!(
                "HTTP request failed: {}",
                error_chain(&err.without_url())
            ))),
            Ok(Ok(response)) => Ok(response),
        }
    }

    fn timed_out(&self) -> A2AError {
        A2AError::internal(format!(
            "no answer within {} (the timeout, see RemoteAgentBuilder::timeout)",
            seconds(self.timeout)
        ))
    }

    /// Reads the agent card at `url`: its bytes, at most [`MAX_CARD_BYTES`].
    ///
    /// # Errors
    ///
    /// Why, as a phrase completing "the card cannot be used: ...".
    pub(crate) async fn card(&self, url: &Url) -> Result<Vec<u8>, String> {
        let deadline = Instant::now() + self.timeout;
        let response = self
            .send(self.request(Method::GET, url.clone()), deadline)
            .await
            .map_err(|err| format!("it cannot be fetched: {}", err.message))?;
        let status = response.status();
        if !status.is_success() {
            return Err(match self.redirected(&response) {
                Some(elsewhere) => elsewhere,
                None => format!("the server answered HTTP {status}"),
            });
        }
        body(response, MAX_CARD_BYTES, deadline)
            .await
            .map_err(|err| match err {
                BodyError::TooLarge(announced) => format!(
                    "it is larger than {}{}",
                    size(MAX_CARD_BYTES),
                    announced
                        .map(|bytes| format!(" (the server announced {bytes} bytes)"))
                        .unwrap_or_default()
                ),
                BodyError::Timeout => {
                    format!("it did not come whole within {}", seconds(self.timeout))
                }
                BodyError::Read(reason) => format!("it cannot be read: {reason}"),
            })
    }

    /// The error of a redirect that was not followed: to an origin that may not have the
    /// credentials.
    fn redirected(&self, response: &Response) -> Option<String> {
        if !response.status().is_redirection() {
            return None;
        }
        let location = response.headers().get(LOCATION)?.to_str().ok()?;
        let target = response.url().join(location).ok()?;
        Some(format!(
            "the server redirected to {}, another origin than the credentials are sent to \
             ({}); allow it with RemoteAgentBuilder::send_credentials_to if you trust it",
            origin(&target),
            self.credentials.named()
        ))
    }

    /// A unary exchange: `builder`'s answer (2xx), read whole.
    async fn unary(&self, builder: reqwest::RequestBuilder) -> Result<Vec<u8>, A2AError> {
        let deadline = Instant::now() + self.timeout;
        let response = self.send(builder, deadline).await?;
        if !response.status().is_success() {
            return Err(self.error_answer(response).await);
        }
        body(response, MAX_BODY_BYTES, deadline)
            .await
            .map_err(|err| self.body_error(err))
    }

    fn body_error(&self, err: BodyError) -> A2AError {
        match err {
            BodyError::TooLarge(_) => A2AError::internal(format!(
                "the answer is larger than {}",
                size(MAX_BODY_BYTES)
            )),
            BodyError::Timeout => self.timed_out(),
            BodyError::Read(reason) => {
                A2AError::internal(format!("the answer cannot be read: {reason}"))
            }
        }
    }

    /// A streamed exchange: `builder`'s answer, an event stream of which each event's data
    /// is read by `event`. An answer that is not an event stream is read whole by `other`
    /// (a JSON-RPC error).
    async fn stream(
        &self,
        builder: reqwest::RequestBuilder,
        event: fn(&str) -> Option<Result<StreamResponse, A2AError>>,
        other: fn(&[u8]) -> A2AError,
    ) -> Result<Updates, A2AError> {
        let deadline = Instant::now() + self.timeout;
        let response = self
            .send(
                builder.header(reqwest::header::ACCEPT, "text/event-stream"),
                deadline,
            )
            .await?;
        if !response.status().is_success() {
            return Err(self.error_answer(response).await);
        }
        // Without a content type it is taken as a stream: reading it to see would wait on a
        // stream that has not sent anything yet.
        let is_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .is_none_or(|value| value.as_bytes().starts_with(b"text/event-stream"));
        if !is_stream {
            let answer = body(response, MAX_BODY_BYTES, deadline)
                .await
                .map_err(|err| self.body_error(err))?;
            return Err(other(&answer));
        }
        Ok(events(response, self.timeout, event))
    }

    /// The error an answer with an error status carries: an AIP-193 error (HTTP+JSON) or
    /// a JSON-RPC error when it is one, else its status and the start of its body.
    async fn error_answer(&self, response: Response) -> A2AError {
        let status = response.status();
        if let Some(elsewhere) = self.redirected(&response) {
            return A2AError::internal(format!("HTTP {status}: {elsewhere}"));
        }
        let deadline = Instant::now() + self.timeout;
        let text = error_body(response, deadline).await;
        parse_error(status, &text)
    }
}

/// The body of `response`, at most `limit` bytes, due by `deadline`; a larger body is
/// refused as soon as it is known to be larger (its announced length, else its bytes), not
/// read to its end.
async fn body(response: Response, limit: usize, deadline: Instant) -> Result<Vec<u8>, BodyError> {
    if let Some(announced) = response.content_length()
        && announced > limit as u64
    {
        return Err(BodyError::TooLarge(Some(announced)));
    }
    let mut chunks = response.bytes_stream();
    let mut body = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, chunks.next()).await {
            Err(_) => return Err(BodyError::Timeout),
            Ok(None) => return Ok(body),
            Ok(Some(Err(err))) => {
                return Err(BodyError::Read(error_chain(&err.without_url())));
            }
            Ok(Some(Ok(chunk))) => {
                if body.len() + chunk.len() > limit {
                    return Err(BodyError::TooLarge(None));
                }
                body.extend_from_slice(&chunk);
            }
        }
    }
}

/// The start of an error answer's body (at most [`MAX_ERROR_BYTES`]), as text; what could
/// not be read in time is left out.
async fn error_body(response: Response, deadline: Instant) -> String {
    let mut chunks = response.bytes_stream();
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BYTES {
        match tokio::time::timeout_at(deadline, chunks.next()).await {
            Ok(Some(Ok(chunk))) => {
                let room = MAX_ERROR_BYTES - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            _ => break,
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// An HTTP+JSON error body (`{"error": {"message", "details"}}`, AIP-193) as the A2A error
/// its details name; another body as `HTTP <status>: <body>`.
fn parse_error(status: StatusCode, body: &str) -> A2AError {
    let envelope: Option<Value> = serde_json::from_str(body).ok();
    let error = envelope.as_ref().and_then(|value| value.get("error"));
    match error.and_then(|error| Some((error, error.get("message")?.as_str()?))) {
        Some((error, message)) => {
            let details = error.get("details").cloned().unwrap_or(Value::Null);
            with_details(error_code::INTERNAL_ERROR, message, details)
        }
        None => A2AError::internal(format!("HTTP {status}: {}", body.trim())),
    }
}

/// The A2A error of `code` and `message`, its code made the one an `ErrorInfo` detail of
/// the protocol names (how HTTP+JSON carries it, and JSON-RPC may).
fn with_details(code: i32, message: &str, details: Value) -> A2AError {
    let details: Vec<TypedDetail> = match details {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|item| serde_json::from_value(item).ok())
            .collect(),
        _ => Vec::new(),
    };
    let named = details.iter().find_map(|detail| {
        let protocol = detail.type_url == a2a::ERROR_INFO_TYPE
            && detail.value.get("domain").and_then(Value::as_str) == Some(a2a::PROTOCOL_DOMAIN);
        protocol
            .then(|| detail.value.get("reason").and_then(Value::as_str))
            .flatten()
            .and_then(a2a::reason_to_error_code)
    });
    A2AError::new(named.unwrap_or(code), message)
}

/// The JSON-RPC error of an envelope, as the A2A error it names.
fn rpc_error(error: a2a::JsonRpcError) -> A2AError {
    with_details(
        error.code,
        &error.message,
        error.data.unwrap_or(Value::Null),
    )
}

/// The events of an event-stream `response`, each event's data read by `parse`; the stream
/// fails when it stays silent for `idle`, or sends [`MAX_BODY_BYTES`] without completing an
/// event, and ends after an error.
fn events(
    response: Response,
    idle: Duration,
    parse: fn(&str) -> Option<Result<StreamResponse, A2AError>>,
) -> Updates {
    events_of(response.bytes_stream(), idle, parse)
}

/// The events of the body `chunks` (see [`events`]).
fn events_of<S, B>(
    chunks: S,
    idle: Duration,
    parse: fn(&str) -> Option<Result<StreamResponse, A2AError>>,
) -> Updates
where
    S: futures::Stream<Item = reqwest::Result<B>> + Send + Unpin + 'static,
    B: AsRef<[u8]>,
{
    struct State<S> {
        chunks: S,
        parser: SseParser,
        parsed: Vec<SseEvent>,
        ready: VecDeque<Result<StreamResponse, A2AError>>,
        /// Bytes read since the last event completed.
        pending: usize,
        done: bool,
    }
    let state = State {
        chunks,
        parser: SseParser::new(),
        parsed: Vec::new(),
        ready: VecDeque::new(),
        pending: 0,
        done: false,
    };
    futures::stream::unfold(state, move |mut state| async move {
        loop {
            if let Some(item) = state.ready.pop_front() {
                if item.is_err() {
                    // After an error, nothing more is read.
                    state.ready.clear();
                    state.done = true;
                }
                return Some((item, state));
            }
            if state.done {
                return None;
            }
            let failure = match tokio::time::timeout(idle, state.chunks.next()).await {
                Err(_) => Some(format!(
                    "the stream sent nothing for {} (the timeout, see \
                     RemoteAgentBuilder::timeout): it stalled",
                    seconds(idle)
                )),
                Ok(Some(Err(err))) => Some(format!(
                    "the stream broke: {}",
                    error_chain(&err.without_url())
                )),
                Ok(Some(Ok(chunk))) => {
                    let chunk = chunk.as_ref();
                    state.parser.feed(chunk, &mut state.parsed);
                    if state.parsed.is_empty() {
                        state.pending += chunk.len();
                    } else {
                        state.pending = 0;
                    }
                    (state.pending > MAX_BODY_BYTES).then(|| {
                        format!(
                            "the stream sent more than {} without completing an event (no \
                             blank line ended it)",
                            size(MAX_BODY_BYTES)
                        )
                    })
                }
                Ok(None) => {
                    state.parser.finish(&mut state.parsed);
                    state.done = true;
                    None
                }
            };
            for event in state.parsed.drain(..) {
                if let Some(item) = parse(&event.data) {
                    state.ready.push_back(item);
                }
            }
            if let Some(failure) = failure {
                state.ready.push_back(Err(A2AError::internal(failure)));
            }
        }
    })
    .boxed()
}

/// The protocol bindings this client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Binding {
    /// HTTP+JSON (REST): a path per method. Preferred: it reports an HTTP error status
    /// (a refused token) as such.
    HttpJson,
    /// JSON-RPC 2.0 over HTTP POST to one URL.
    JsonRpc,
}

impl Binding {
    /// The binding a card's interface names, if this client speaks it.
    pub(crate) fn of(name: &str) -> Option<Self> {
        match name {
            a2a::TRANSPORT_PROTOCOL_HTTP_JSON => Some(Binding::HttpJson),
            a2a::TRANSPORT_PROTOCOL_JSONRPC => Some(Binding::JsonRpc),
            _ => None,
        }
    }
}

/// One interface of a remote agent: where, over which binding, for which tenant.
#[derive(Clone)]
pub(crate) struct Interface {
    pub(crate) http: Http,
    pub(crate) url: Url,
    pub(crate) binding: Binding,
    pub(crate) tenant: Option<String>,
}

impl fmt::Debug for Interface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL's query may hold a key.
        f.debug_struct("Interface")
            .field("url", &url_for_display(self.url.as_str()))
            .field("binding", &self.binding)
            .finish_non_exhaustive()
    }
}

/// The JSON-RPC request ids of this process.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn to_value<T: ProtoJsonPayload>(value: &T) -> Result<Value, A2AError> {
    protojson_conv::to_value(value)
        .map_err(|err| A2AError::internal(format!("the request cannot be encoded: {err}")))
}

fn from_value<T: ProtoJsonPayload>(value: Value) -> Result<T, A2AError> {
    protojson_conv::from_value(value)
        .map_err(|err| A2AError::internal(format!("the answer is not A2A 1.0: {err}")))
}

fn json(bytes: &[u8]) -> Result<Value, A2AError> {
    serde_json::from_slice(bytes)
        .map_err(|err| A2AError::internal(format!("the answer is not JSON: {err}")))
}

/// A JSON-RPC answer: its result, or its error.
fn rpc_result(bytes: &[u8]) -> Result<Value, A2AError> {
    let response: JsonRpcResponse = serde_json::from_slice(bytes)
        .map_err(|err| A2AError::internal(format!("the answer is not JSON-RPC: {err}")))?;
    match (response.error, response.result) {
        (Some(error), _) => Err(rpc_error(error)),
        (None, Some(result)) => Ok(result),
        (None, None) => Err(A2AError::internal(
            "the JSON-RPC answer has neither a result nor an error",
        )),
    }
}

/// A JSON-RPC event's data: its result as an update, or its error.
fn rpc_event(data: &str) -> Option<Result<StreamResponse, A2AError>> {
    if data.trim().is_empty() {
        return None;
    }
    Some(rpc_result(data.as_bytes()).and_then(from_value))
}

/// An HTTP+JSON event's data: an update, or an error (`{"error": ...}`).
fn rest_event(data: &str) -> Option<Result<StreamResponse, A2AError>> {
    if data.trim().is_empty() {
        return None;
    }
    let value: Value = match serde_json::from_str(data) {
        Ok(value) => value,
        Err(err) => {
            return Some(Err(A2AError::internal(format!(
                "an event of the stream is not JSON: {err}"
            ))));
        }
    };
    if value.get("error").is_some() {
        return Some(Err(parse_error(StatusCode::OK, data)));
    }
    Some(from_value(value))
}

/// A JSON-RPC answer to a streamed method that is not a stream: its error.
fn rpc_not_a_stream(bytes: &[u8]) -> A2AError {
    match rpc_result(bytes) {
        Err(error) => error,
        Ok(_) => A2AError::internal("a streamed method was answered without a stream"),
    }
}

fn rest_not_a_stream(bytes: &[u8]) -> A2AError {
    parse_error(StatusCode::OK, &String::from_utf8_lossy(bytes))
}

impl Interface {
    /// The URL of `segments` under the interface's (its query kept): `tasks`, `<id>`.
    fn rest_url(&self, segments: &[&str]) -> Url {
        let mut url = self.url.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// A JSON-RPC call of `method` with `params`.
    fn rpc(&self, method: &str, params: Value) -> reqwest::RequestBuilder {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let id = JsonRpcId::Number(i64::try_from(id).unwrap_or(i64::MAX));
        let request = JsonRpcRequest::new(id, method, Some(params));
        self.http
            .request(Method::POST, self.url.clone())
            .json(&request)
    }

    fn rest(&self, method: Method, segments: &[&str]) -> reqwest::RequestBuilder {
        self.http.request(method, self.rest_url(segments))
    }

    /// `SendMessage`.
    pub(crate) async fn send_message(
        &self,
        request: &SendMessageRequest,
    ) -> Result<SendMessageResponse, A2AError> {
        let request = self.with_tenant(request.clone(), |r| &mut r.tenant);
        let params = to_value(&request)?;
        match self.binding {
            Binding::JsonRpc => {
                let answer = self
                    .http
                    .unary(self.rpc(a2a::jsonrpc::methods::SEND_MESSAGE, params))
                    .await?;
                from_value(rpc_result(&answer)?)
            }
            Binding::HttpJson => {
                let answer = self
                    .http
                    .unary(self.rest(Method::POST, &["message:send"]).json(&params))
                    .await?;
                from_value(json(&answer)?)
            }
        }
    }

    /// `SendStreamingMessage`.
    pub(crate) async fn send_streaming_message(
        &self,
        request: &SendMessageRequest,
    ) -> Result<Updates, A2AError> {
        let request = self.with_tenant(request.clone(), |r| &mut r.tenant);
        let params = to_value(&request)?;
        match self.binding {
            Binding::JsonRpc => {
                let call = self.rpc(a2a::jsonrpc::methods::SEND_STREAMING_MESSAGE, params);
                self.http.stream(call, rpc_event, rpc_not_a_stream).await
            }
            Binding::HttpJson => {
                let call = self.rest(Method::POST, &["message:stream"]).json(&params);
                self.http.stream(call, rest_event, rest_not_a_stream).await
            }
        }
    }

    /// `GetTask`.
    pub(crate) async fn get_task(&self, request: &GetTaskRequest) -> Result<Task, A2AError> {
        let request = self.with_tenant(request.clone(), |r| &mut r.tenant);
        match self.binding {
            Binding::JsonRpc => {
                let params = to_value(&request)?;
                let answer = self
                    .http
                    .unary(self.rpc(a2a::jsonrpc::methods::GET_TASK, params))
                    .await?;
                from_value(rpc_result(&answer)?)
            }
            Binding::HttpJson => {
                let mut url = self.rest_url(&["tasks", &request.id]);
                if let Some(length) = request.history_length {
                    url.query_pairs_mut()
                        .append_pair("historyLength", &length.to_string());
                }
                let answer = self.http.unary(self.http.request(Method::GET, url)).await?;
                from_value(json(&answer)?)
            }
        }
    }

    /// `CancelTask`.
    pub(crate) async fn cancel_task(&self, request: &CancelTaskRequest) -> Result<Task, A2AError> {
        let request = self.with_tenant(request.clone(), |r| &mut r.tenant);
        let params = to_value(&request)?;
        let answer = match self.binding {
            Binding::JsonRpc => {
                let answer = self
                    .http
                    .unary(self.rpc(a2a::jsonrpc::methods::CANCEL_TASK, params))
                    .await?;
                rpc_result(&answer)?
            }
            Binding::HttpJson => {
                let cancel = format!("{}:cancel", request.id);
                let answer = self
                    .http
                    .unary(self.rest(Method::POST, &["tasks", &cancel]).json(&params))
                    .await?;
                json(&answer)?
            }
        };
        from_value(answer)
    }

    /// `SubscribeToTask`.
    pub(crate) async fn subscribe_to_task(
        &self,
        request: &SubscribeToTaskRequest,
    ) -> Result<Updates, A2AError> {
        let request = self.with_tenant(request.clone(), |r| &mut r.tenant);
        match self.binding {
            Binding::JsonRpc => {
                let params = to_value(&request)?;
                let call = self.rpc(a2a::jsonrpc::methods::SUBSCRIBE_TO_TASK, params);
                self.http.stream(call, rpc_event, rpc_not_a_stream).await
            }
            Binding::HttpJson => {
                let subscribe = format!("{}:subscribe", request.id);
                let call = self.rest(Method::GET, &["tasks", &subscribe]);
                self.http.stream(call, rest_event, rest_not_a_stream).await
            }
        }
    }

    /// `request` for the interface's tenant (A2A §8.3.2: the declared tenant, whatever the
    /// request carried).
    fn with_tenant<R>(
        &self,
        mut request: R,
        field: impl FnOnce(&mut R) -> &mut Option<String>,
    ) -> R {
        if let Some(tenant) = &self.tenant {
            *field(&mut request) = Some(tenant.clone());
        }
        request
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn credentials(origins: &[&str]) -> Credentials {
        let value = HeaderValue::from_static("Bearer t");
        Credentials::new(
            vec![(reqwest::header::AUTHORIZATION, value)],
            origins.iter().map(|origin| (*origin).to_owned()).collect(),
        )
    }

    #[test]
    fn credentials_go_to_the_named_origins_only_and_never_down_to_http() {
        let credentials = credentials(&["https://agents.example.com"]);
        let allows = |url: &str| credentials.allows(&Url::parse(url).unwrap());
        assert!(allows("https://agents.example.com/a2a?key=1"));
        assert!(allows("https://agents.example.com:443/other"));
        // Another port, host or scheme is another origin: https to http is a downgrade.
        assert!(!allows("http://agents.example.com/a2a"));
        assert!(!allows("https://agents.example.com:8443/a2a"));
        assert!(!allows("https://api.example.com/a2a"));
        assert!(!allows("https://agents.example.com.evil.test/a2a"));
        let allowed = self::credentials(&["https://agents.example.com", "https://api.example.com"]);
        assert!(allowed.allows(&Url::parse("https://api.example.com/a2a").unwrap()));
        assert_eq!(allowed.named(), "https://agents.example.com");
    }

    #[test]
    fn rest_urls_keep_the_interface_path_and_query() {
        let http = Http::new(credentials(&[]), DEFAULT_TIMEOUT).unwrap();
        let interface = |url: &str| Interface {
            http: http.clone(),
            url: Url::parse(url).unwrap(),
            binding: Binding::HttpJson,
            tenant: None,
        };
        assert_eq!(
            interface("https://gw.example.com/a2a?key=k-1")
                .rest_url(&["message:send"])
                .as_str(),
            "https://gw.example.com/a2a/message:send?key=k-1"
        );
        assert_eq!(
            interface("https://gw.example.com/a2a/")
                .rest_url(&["tasks", "t/../1:cancel"])
                .as_str(),
            "https://gw.example.com/a2a/tasks/t%2F..%2F1:cancel"
        );
        assert_eq!(
            interface("https://gw.example.com")
                .rest_url(&["tasks", "t1"])
                .as_str(),
            "https://gw.example.com/tasks/t1"
        );
    }

    #[test]
    fn an_interface_shows_no_secret_of_its_url() {
        let interface = Interface {
            http: Http::new(credentials(&[]), DEFAULT_TIMEOUT).unwrap(),
            url: Url::parse("https://gw.example.com/a2a?key=k-SECRET").unwrap(),
            binding: Binding::JsonRpc,
            tenant: None,
        };
        let shown = format!("{interface:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(
            shown.contains("https://gw.example.com/a2a?key=<redacted>"),
            "{shown}"
        );
    }

    #[test]
    fn error_answers_name_the_a2a_error() {
        let body = r#"{"error": {"code": 400, "status": "FAILED_PRECONDITION",
            "message": "task t1 has already reached a terminal state",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                         "reason": "UNSUPPORTED_OPERATION", "domain": "a2a-protocol.org"}]}}"#;
        let error = parse_error(StatusCode::BAD_REQUEST, body);
        assert_eq!(error.code, error_code::UNSUPPORTED_OPERATION);
        assert_eq!(
            error.message,
            "task t1 has already reached a terminal state"
        );
        let other = parse_error(StatusCode::UNAUTHORIZED, "no entry\n");
        assert_eq!(other.code, error_code::INTERNAL_ERROR);
        assert_eq!(other.message, "HTTP 401 Unauthorized: no entry");
        let rpc = rpc_result(
            br#"{"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "no task"}}"#,
        )
        .unwrap_err();
        assert_eq!(
            (rpc.code, rpc.message.as_str()),
            (error_code::TASK_NOT_FOUND, "no task")
        );
    }

    #[test]
    fn sizes_and_durations_read_as_people_write_them() {
        assert_eq!(size(MAX_CARD_BYTES), "1 MiB");
        assert_eq!(size(MAX_BODY_BYTES), "16 MiB");
        assert_eq!(size(MAX_ERROR_BYTES), "64 KiB");
        assert_eq!(seconds(DEFAULT_TIMEOUT), "60 s");
        assert_eq!(seconds(Duration::from_millis(250)), "250 ms");
    }
}
