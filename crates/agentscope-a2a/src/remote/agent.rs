//! [`RemoteAgent`] and its builder: a remote A2A agent as a local [`Agent`].

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use agentscope::session::AgentState;
use agentscope::{
    Agent, AgentError, AgentStream, CallInput, Msg, ReActAgent, ReActAgentBuilder, StreamOptions,
    ToolUseBlock,
};
use agentscope_core::redact::url_for_display;
use futures::future::BoxFuture;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::Value;

use super::client::{Connection, Settings, parse_origin};
use super::error::RemoteError;
use super::http::{DEFAULT_TIMEOUT, Header};
use super::parts::DATA_PART_KEY;
use super::question::{self, InDoubtCall};
use super::reply::{
    A2A_KEY, ABANDONED, AUTH_REQUIRED, INPUT_REQUIRED, RemoteReply, Running, cancel,
    question_ended, standing,
};

type Configure = Box<dyn FnOnce(ReActAgentBuilder) -> ReActAgentBuilder + Send>;

/// A remote agent that speaks A2A 1.0, found from its agent card, used as a local
/// [`Agent`]: in a `MsgHub`, a pipeline, an
/// `AgentTool`, or directly as a tool
/// ([`into_tool`](Self::into_tool)).
///
/// # A call
///
/// A call sends its input as one A2A message (text as text parts, images as URL parts, a
/// [`data_message`](Self::data_message) as a data part), preceded by what the agent
/// [observed](Agent::observe) since its last reply (one text part `"<name>: <text>"` each),
/// in the agent's own A2A context, so that a second call continues the remote
/// conversation. It is streamed when the card says the agent streams (`SendStreamingMessage`),
/// else sent blocking (`SendMessage`).
///
/// The remote updates become the call's stream events, mirroring what an agentscope-rs
/// server sends (the `agentscope.kind` metadata of its `working` updates): text deltas as
/// `Reasoning` chunks, tool calls as a final `Reasoning` event holding the calls, tool
/// progress and results as `ToolResult` chunks and results. A `working` update of another
/// server is a `Reasoning` chunk of its message's content. The reply is the task's
/// artifacts (else its status message): a final `Reasoning` event, then the `AgentResult`.
/// Hooks of the local agent see PreCall and PostCall (not the remote agent's steps).
///
/// # Where the conversation stands
///
/// Each reply records the remote context, task and state in its metadata under `"a2a"`
/// (`{"contextId": "...", "taskId": "...", "state": "completed"}`), and the next call reads
/// it from memory. So [`save_state`](Agent::save_state) and
/// [`load_state`](Agent::load_state) (or a session, see
/// [`RemoteAgentBuilder::configure`]) carry the conversation: an agent restored from a
/// saved state continues the same remote context.
///
/// # Questions (`input-required`)
///
/// A task that ends asking for input (`input-required`, or `auth-required`) ends the call
/// with the question as the reply (its state `"input-required"` in the metadata,
/// [`pending_question`](Self::pending_question) returns it); the next call answers it: its
/// message goes to the same task. An agentscope-rs server asks this way for approvals and
/// about calls in doubt, and takes a data part `{"decisions": [...]}` as the answer (see
/// [`data_message`](Self::data_message)). Its questions come back typed as a local agent's
/// stops: a question for approval with
/// [`GenerateReason::ReasoningStopRequested`](agentscope::GenerateReason::ReasoningStopRequested)
/// and its calls in [`pending_tool_calls`](Self::pending_tool_calls), one about calls in
/// doubt with [`GenerateReason::ToolInDoubt`](agentscope::GenerateReason::ToolInDoubt) and
/// its calls and their idempotency keys in [`in_doubt_calls`](Self::in_doubt_calls); the
/// reply's text is the question's text.
///
/// A question whose task can no longer take the answer (it ended: a server that restarted
/// failed it; or the server forgot it) is dropped by the call that tries: it fails saying
/// so, and the next call starts a new task in the context.
/// [`abandon_question`](Self::abandon_question) drops one on purpose.
///
/// # Credentials and bounds
///
/// The configured headers go only to the origin of the URL given to the builder, and to
/// those allowed with [`send_credentials_to`](RemoteAgentBuilder::send_credentials_to).
/// Each request answers within the [`timeout`](RemoteAgentBuilder::timeout) (60 s), a
/// stream stays silent no longer, the card is read to 1 MiB, answers to 16 MiB, and a
/// stream fails when it sends 16 MiB without completing an event. A task followed by
/// polling (an agent that does not stream, a stream that ended early) is read at once, then
/// after 250 ms, the wait doubling up to 5 s.
///
/// # Interrupts
///
/// [`interrupt`](Agent::interrupt) cancels the remote task (`CancelTask`, waiting at most
/// 10 s for the answer) and the call then ends as every interrupted call does, with the
/// interrupt reply. A call dropped while its task runs cancels the task in the background.
///
/// # Errors
///
/// A call fails with [`AgentError::Failed`] when the remote agent cannot be reached or
/// answers with an error (a timeout or a bound passed included), or when its task fails, is
/// rejected or is canceled by it; the message names the agent and says why, without the
/// configured header values or the URLs' secrets.
///
/// ```no_run
/// use agentscope::prelude::*;
/// use agentscope_a2a::RemoteAgent;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let remote = RemoteAgent::builder("https://agents.example.com/a2a")
///     .bearer_token(std::env::var("A2A_TOKEN")?)
///     .connect()
///     .await?;
/// let reply = remote.call("What is 6*7?").await?;
/// println!("{}: {}", remote.name(), reply.text());
/// let again = remote.call("And times 2?").await?; // the same remote conversation
/// # let _ = again;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RemoteAgent {
    agent: ReActAgent,
    connection: Arc<Connection>,
    running: Arc<Running>,
}

/// Configures and connects a [`RemoteAgent`]; made by [`RemoteAgent::builder`].
///
/// A setter given something unusable (a header that is not valid in HTTP) keeps the
/// first such error, and [`connect`](Self::connect) returns it.
#[must_use]
pub struct RemoteAgentBuilder {
    url: String,
    headers: Vec<Header>,
    origins: Vec<String>,
    timeout: Duration,
    name: Option<String>,
    configure: Option<Configure>,
    error: Option<RemoteError>,
}

impl fmt::Debug for RemoteAgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("RemoteAgentBuilder")
            .field("url", &agentscope_core::redact::url_for_display(&self.url))
            .field("headers", &headers)
            .field("credentials_also_to", &self.origins)
            .field("timeout", &self.timeout)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl RemoteAgentBuilder {
    /// Sends the header `name: value` with every request to the agent (its card
    /// included): an API key, a tenant. The value is a secret: it is never shown in
    /// `Debug` output, logs or errors, and it is sent only to the origin of the URL given
    /// to [`RemoteAgent::builder`] (and to those allowed with
    /// [`send_credentials_to`](Self::send_credentials_to)).
    ///
    /// ```
    /// use agentscope_a2a::RemoteAgent;
    ///
    /// let builder = RemoteAgent::builder("https://agents.example.com/a2a")
    ///     .header("X-Api-Key", "k-123456");
    /// assert!(!format!("{builder:?}").contains("k-123456"));
    /// ```
    pub fn header(mut self, name: impl AsRef<str>, value: impl AsRef<str>) -> Self {
        let name = name.as_ref();
        let parsed = HeaderName::from_bytes(name.trim().as_bytes())
            .ok()
            .zip(HeaderValue::from_str(value.as_ref().trim()).ok());
        match parsed {
            Some((name, mut value)) => {
                value.set_sensitive(true);
                self.headers.push((name, value));
            }
            None => {
                self.error.get_or_insert(RemoteError::InvalidHeader {
                    name: name.to_owned(),
                });
            }
        }
        self
    }

    /// Sends `Authorization: Bearer <token>` with every request (what an agentscope-rs
    /// server's `bearer_token` asks for), as a [`header`](Self::header): never shown, and
    /// sent only to the origins the credentials are for.
    ///
    /// ```
    /// use agentscope_a2a::RemoteAgent;
    ///
    /// let builder = RemoteAgent::builder("https://agents.example.com/a2a")
    ///     .bearer_token("s3cret-token");
    /// assert!(!format!("{builder:?}").contains("s3cret"));
    /// ```
    pub fn bearer_token(self, token: impl AsRef<str>) -> Self {
        let value = format!("Bearer {}", token.as_ref().trim());
        self.header("authorization", value)
    }

    /// Also sends the credentials (the [`header`](Self::header)s, the
    /// [`bearer_token`](Self::bearer_token)) to `origin` (`scheme://host[:port]`).
    ///
    /// Credentials go only to the origin of the URL given to [`RemoteAgent::builder`] (the
    /// card's): a card that names its interface at another origin (another host, port or
    /// scheme, `http` where the card was `https` included), or a redirect to one, gets no
    /// credentials, and [`connect`](Self::connect) fails saying so. Allow such an origin
    /// here when you trust it, e.g. an agent whose card is served by one host and its API
    /// by another. Without credentials, any origin is called.
    ///
    /// ```
    /// use agentscope_a2a::RemoteAgent;
    ///
    /// let builder = RemoteAgent::builder("https://agents.example.com/ops")
    ///     .bearer_token("s3cret-token")
    ///     .send_credentials_to("https://api.example.com");
    /// # let _ = builder;
    /// ```
    pub fn send_credentials_to(mut self, origin: impl AsRef<str>) -> Self {
        match parse_origin(origin.as_ref()) {
            Some(origin) => self.origins.push(origin),
            None => {
                self.error.get_or_insert(RemoteError::InvalidOrigin {
                    origin: url_for_display(origin.as_ref()),
                });
            }
        }
        self
    }

    /// How long each request may take (default 60 s): reading the card, each unary
    /// answer whole (`SendMessage`, `GetTask`, `CancelTask`), the start of each stream;
    /// and how long a stream may stay silent (a server streaming A2A sends a keep-alive
    /// every 15 s or so). A request or stream past it fails the call with an error
    /// naming the timeout.
    ///
    /// The sizes are bounded too: the card at 1 MiB, an answer at 16 MiB, and a stream
    /// fails when it sends 16 MiB without completing an event.
    ///
    /// ```
    /// use std::time::Duration;
    /// use agentscope_a2a::RemoteAgent;
    ///
    /// let builder = RemoteAgent::builder("https://agents.example.com/a2a")
    ///     .timeout(Duration::from_secs(20));
    /// # let _ = builder;
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The local agent's name (the name its replies carry), instead of the card's.
    ///
    /// ```
    /// use agentscope_a2a::RemoteAgent;
    ///
    /// let builder = RemoteAgent::builder("https://agents.example.com/a2a").name("ops");
    /// # let _ = builder;
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Configures the local agent that holds the conversation: a session to keep it in
    /// (so a restart continues the remote context), hooks (PreCall and PostCall), its
    /// memory. `configure` gets the builder with the name and the remote reply set; a model
    /// or tools given to it are not used.
    ///
    /// ```
    /// use agentscope::prelude::*;
    /// use agentscope_a2a::RemoteAgent;
    ///
    /// let builder = RemoteAgent::builder("https://agents.example.com/a2a")
    ///     .configure(|agent| agent.session(JsonFileSessionStore::new("sessions"), "ops-chat"));
    /// # let _ = builder;
    /// ```
    pub fn configure(
        mut self,
        configure: impl FnOnce(ReActAgentBuilder) -> ReActAgentBuilder + Send + 'static,
    ) -> Self {
        self.configure = Some(Box::new(configure));
        self
    }

    /// Reads the agent card and makes the client: the URL is the card's (a `.json` URL)
    /// or the agent's base URL (the card is then at `<url>/.well-known/agent-card.json`).
    /// The HTTP+JSON interface is used when the card lists one, else the JSON-RPC one.
    ///
    /// # Errors
    ///
    /// [`RemoteError::InvalidUrl`], [`RemoteError::InvalidHeader`] and
    /// [`RemoteError::InvalidOrigin`] (from a setter), [`RemoteError::Card`] when the card
    /// cannot be fetched (in time), is larger than 1 MiB, is not an A2A agent card, lists no
    /// interface this client speaks, or (with credentials) names its interface at an origin
    /// they may not go to, and [`RemoteError::Agent`] when the local agent cannot be built
    /// (from [`configure`](Self::configure)).
    pub async fn connect(self) -> Result<RemoteAgent, RemoteError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let settings = Settings {
            headers: self.headers,
            origins: self.origins,
            timeout: self.timeout,
        };
        let connection = Arc::new(Connection::connect(&self.url, settings).await?);
        let running = Arc::new(Running::default());
        let name = self
            .name
            .unwrap_or_else(|| connection.name().trim().to_owned());
        let mut builder = ReActAgent::builder().name(name).reply(RemoteReply {
            connection: Arc::clone(&connection),
            running: Arc::clone(&running),
        });
        if let Some(configure) = self.configure {
            builder = configure(builder);
        }
        let agent = builder.build().map_err(|error| RemoteError::Agent {
            message: error.to_string(),
        })?;
        Ok(RemoteAgent {
            agent,
            connection,
            running,
        })
    }
}

impl RemoteAgent {
    /// A builder for the agent whose card is at `url` (or whose base URL it is).
    ///
    /// ```
    /// use agentscope_a2a::RemoteAgent;
    ///
    /// let builder = RemoteAgent::builder("https://agents.example.com/a2a")
    ///     .bearer_token("token")
    ///     .name("ops");
    /// # let _ = builder;
    /// ```
    pub fn builder(url: impl Into<String>) -> RemoteAgentBuilder {
        RemoteAgentBuilder {
            url: url.into(),
            headers: Vec::new(),
            origins: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            name: None,
            configure: None,
            error: None,
        }
    }

    /// Connects to the agent whose card is at `url` (or whose base URL it is), without
    /// headers: `RemoteAgent::builder(url).connect()`.
    ///
    /// # Errors
    ///
    /// As [`RemoteAgentBuilder::connect`].
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let remote = agentscope_a2a::RemoteAgent::connect("http://127.0.0.1:4000/a2a").await?;
    /// println!("{}: {} ({})", remote.name(), remote.description(), remote.url());
    /// # Ok(()) }
    /// ```
    pub async fn connect(url: impl Into<String>) -> Result<Self, RemoteError> {
        Self::builder(url).connect().await
    }

    /// The agent's name: the card's, or the one given to the builder.
    pub fn name(&self) -> &str {
        self.agent.name()
    }

    /// The agent's description, as its card gives it.
    pub fn description(&self) -> &str {
        self.connection.description()
    }

    /// The card's URL, without its secrets.
    pub fn url(&self) -> &str {
        self.connection.shown_url()
    }

    /// The local agent that holds the conversation: its memory (the inputs and the
    /// replies), hooks, state.
    ///
    /// ```no_run
    /// # async fn run(remote: agentscope_a2a::RemoteAgent) -> Result<(), Box<dyn std::error::Error>> {
    /// remote.call("Hi").await?;
    /// assert_eq!(remote.agent().memory().len(), 2); // the input and the reply
    /// # Ok(()) }
    /// ```
    pub fn agent(&self) -> &ReActAgent {
        &self.agent
    }

    /// Runs one call: sends the input to the remote agent and returns its reply. See the
    /// [type's documentation](Self) and [`ReActAgent::call`] (busy check, cancel safety).
    ///
    /// # Errors
    ///
    /// [`AgentError::Failed`] when the remote agent cannot be reached, or its task fails,
    /// is rejected or canceled by it; the local agent's errors (busy, a hook's, a
    /// session's).
    pub fn call(
        &self,
        input: impl Into<CallInput>,
    ) -> impl Future<Output = Result<Msg, AgentError>> + Send + 'static {
        self.agent.call(input)
    }

    /// Runs one call as a stream of events (see the [type's documentation](Self) for the
    /// events). Dropping the stream cancels the remote task in the background.
    ///
    /// ```no_run
    /// use agentscope::{EventType, StreamOptions};
    /// use futures::StreamExt;
    ///
    /// # async fn run(remote: agentscope_a2a::RemoteAgent) -> Result<(), agentscope::AgentError> {
    /// let mut events = remote.stream("Tell me a story.", StreamOptions::default());
    /// while let Some(event) = events.next().await {
    ///     let event = event?;
    ///     if event.event_type == EventType::Reasoning && !event.is_last {
    ///         print!("{}", event.message.text()); // the remote agent's text, as it comes
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn stream(&self, input: impl Into<CallInput>, options: StreamOptions) -> AgentStream {
        self.agent.stream(input, options)
    }

    /// Interrupts the running call: its remote task is canceled, then the call ends as an
    /// interrupted call. Does nothing when no call runs.
    ///
    /// ```no_run
    /// # async fn run(remote: agentscope_a2a::RemoteAgent) -> Result<(), Box<dyn std::error::Error>> {
    /// let call = tokio::spawn(remote.call("Take your time."));
    /// remote.interrupt(); // the remote task is canceled, then the call ends
    /// let reply = call.await??;
    /// assert_eq!(reply.generate_reason(), Some(agentscope::GenerateReason::Interrupted));
    /// # Ok(()) }
    /// ```
    pub fn interrupt(&self) {
        if !self.running.interrupt() {
            self.agent.interrupt();
        }
    }

    /// The remote context of the conversation, once a reply recorded one.
    ///
    /// ```no_run
    /// # async fn run(remote: agentscope_a2a::RemoteAgent) -> Result<(), Box<dyn std::error::Error>> {
    /// assert_eq!(remote.context_id(), None); // no call yet
    /// remote.call("Hi").await?;
    /// println!("remote context: {:?}", remote.context_id());
    /// # Ok(()) }
    /// ```
    pub fn context_id(&self) -> Option<String> {
        standing(&self.agent.memory().messages(), self.name()).context_id
    }

    /// The question the remote agent waits for an answer to: its last reply, when its task
    /// ended `input-required` (or `auth-required`). The next call answers it.
    ///
    /// ```no_run
    /// # async fn run(remote: agentscope_a2a::RemoteAgent) -> Result<(), Box<dyn std::error::Error>> {
    /// let reply = remote.call("Book a table.").await?;
    /// if remote.pending_question().is_some() {
    ///     println!("it asks: {}", reply.text());
    ///     remote.call("For two, at eight.").await?; // answers on the same task
    /// }
    /// # Ok(()) }
    /// ```
    pub fn pending_question(&self) -> Option<Msg> {
        let memory = self.agent.memory().messages();
        let at = standing(&memory, self.name()).last_reply?;
        let reply = memory.into_iter().nth(at)?;
        let state = reply.metadata.get(A2A_KEY)?.get("state")?.as_str()?;
        matches!(state, INPUT_REQUIRED | AUTH_REQUIRED).then_some(reply)
    }

    /// The tool calls the pending question asks approval for (an agentscope-rs server's
    /// `pendingToolCalls`), as tool-use blocks: their ids (each decision's `toolCallId`),
    /// tool names and inputs (integers as integers). Empty without a pending question, or
    /// for a question that asks about no call. Such a question's reply says
    /// [`GenerateReason::ReasoningStopRequested`](agentscope::GenerateReason::ReasoningStopRequested),
    /// as a local agent stopped by a `ToolApprovalHook` does.
    ///
    /// ```no_run
    /// use agentscope::GenerateReason;
    /// use agentscope_a2a::RemoteAgent;
    /// use serde_json::json;
    ///
    /// # async fn run(remote: RemoteAgent) -> Result<(), Box<dyn std::error::Error>> {
    /// let reply = remote.call("Pay invoice 42.").await?;
    /// if reply.generate_reason() == Some(GenerateReason::ReasoningStopRequested) {
    ///     let decisions: Vec<_> = remote
    ///         .pending_tool_calls()
    ///         .iter()
    ///         .map(|call| json!({"toolCallId": call.id, "approved": call.name == "pay"}))
    ///         .collect();
    ///     remote.call(RemoteAgent::data_message(json!({"decisions": decisions}))).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn pending_tool_calls(&self) -> Vec<ToolUseBlock> {
        self.asked()
            .map(|asked| question::pending(&asked))
            .unwrap_or_default()
    }

    /// The tool calls in doubt the pending question asks about (an agentscope-rs server's
    /// `inDoubtToolCalls`: calls that started before the remote agent stopped and whose
    /// result was never stored), each with the idempotency key it ran with. Empty without
    /// a pending question. Such a question's reply says
    /// [`GenerateReason::ToolInDoubt`](agentscope::GenerateReason::ToolInDoubt), as a local
    /// agent that finds a call in doubt does.
    ///
    /// Ask the service the call used about its key, then answer each with `done` (and the
    /// result you checked), `retry` (run it again with the same key) or `fail`:
    ///
    /// ```no_run
    /// use agentscope::GenerateReason;
    /// use agentscope_a2a::RemoteAgent;
    /// use serde_json::json;
    ///
    /// # async fn paid(key: &str) -> Option<String> { None }
    /// # async fn run(remote: RemoteAgent) -> Result<(), Box<dyn std::error::Error>> {
    /// let reply = remote.call("Was invoice 7 paid?").await?;
    /// if reply.generate_reason() == Some(GenerateReason::ToolInDoubt) {
    ///     let mut decisions = Vec::new();
    ///     for doubt in remote.in_doubt_calls() {
    ///         let id = &doubt.call().id;
    ///         decisions.push(match paid(doubt.idempotency_key()).await {
    ///             Some(receipt) => json!({"toolCallId": id, "action": "done", "result": receipt}),
    ///             None => json!({"toolCallId": id, "action": "retry"}),
    ///         });
    ///     }
    ///     remote.call(RemoteAgent::data_message(json!({"decisions": decisions}))).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn in_doubt_calls(&self) -> Vec<InDoubtCall> {
        self.asked()
            .map(|asked| question::in_doubt(&asked))
            .unwrap_or_default()
    }

    /// What the pending question's reply recorded (its `"a2a"` metadata).
    fn asked(&self) -> Option<Value> {
        self.pending_question()?.metadata.remove(A2A_KEY)
    }

    /// Gives up the pending question: the remote task that asked it is canceled (when it
    /// still waits; at most 10 s, a failure is logged) and memory records that the question
    /// is over, so the next call starts a new task in the same context instead of
    /// answering it. Returns whether there was a question.
    ///
    /// For a question whose task can no longer take an answer (its server restarted and
    /// failed it, or forgot it): a call that answers such a question fails saying so and
    /// drops the question itself; this is for dropping one without trying. Abandoning
    /// decides nothing: on an agentscope-rs server the calls a question asked approval for
    /// still await a decision in the context's session, and the next message there must
    /// carry the decisions (to decline a call, `"approved": false`).
    ///
    /// # Errors
    ///
    /// The local agent's: [`AgentError::Busy`] while a call runs, a session's error when
    /// the note cannot be saved (a session binds the agent).
    ///
    /// ```no_run
    /// # async fn run(remote: agentscope_a2a::RemoteAgent) -> Result<(), Box<dyn std::error::Error>> {
    /// if remote.abandon_question().await? {
    ///     assert!(remote.pending_question().is_none());
    ///     remote.call("Let us start over.").await?; // a new task, in the same context
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn abandon_question(&self) -> Result<bool, AgentError> {
        let Some(asked) = self.asked() else {
            return Ok(false);
        };
        let field = |key: &str| asked.get(key).and_then(Value::as_str).map(str::to_owned);
        let Some(task) = field("taskId") else {
            return Ok(false);
        };
        cancel(&self.connection, &task).await;
        let note = question_ended(self.name(), field("contextId").as_deref(), &task, ABANDONED);
        self.agent.observe(note).await?;
        Ok(true)
    }

    /// A user message the remote agent receives as one A2A data part holding `value`
    /// (its text is the value's JSON): structured input, such as the decisions an
    /// agentscope-rs server asks for before running tools it guards.
    ///
    /// ```
    /// use agentscope_a2a::RemoteAgent;
    /// use serde_json::json;
    ///
    /// let approve = RemoteAgent::data_message(json!({"decisions": [
    ///     {"toolCallId": "c1", "approved": true}
    /// ]}));
    /// assert_eq!(approve.text(), r#"{"decisions":[{"approved":true,"toolCallId":"c1"}]}"#);
    /// ```
    pub fn data_message(value: Value) -> Msg {
        Msg::builder()
            .role(agentscope::Role::User)
            .name("user")
            .text(value.to_string())
            .metadata(DATA_PART_KEY, true)
            .build()
    }
}

impl fmt::Debug for RemoteAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteAgent")
            .field("name", &self.agent.name())
            .field("url", &self.connection.shown_url())
            .field("headers", &self.connection.header_names())
            .field("streaming", &self.connection.streaming())
            .finish_non_exhaustive()
    }
}

impl Agent for RemoteAgent {
    fn name(&self) -> &str {
        self.agent.name()
    }

    fn id(&self) -> &str {
        self.agent.id()
    }

    fn call(&self, input: CallInput) -> BoxFuture<'static, Result<Msg, AgentError>> {
        Box::pin(self.agent.call(input))
    }

    fn stream(&self, input: CallInput, options: StreamOptions) -> AgentStream {
        self.agent.stream(input, options)
    }

    /// Stores the messages; the next call sends them to the remote agent before its input.
    fn observe(&self, input: CallInput) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(self.agent.observe(input))
    }

    fn interrupt(&self) {
        RemoteAgent::interrupt(self);
    }

    /// The local agent's state: the conversation, and so the remote context and a task
    /// waiting for an answer.
    fn save_state(&self) -> Result<AgentState, AgentError> {
        self.agent.save_state()
    }

    fn load_state(&self, state: AgentState) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(self.agent.load_state(state))
    }
}
