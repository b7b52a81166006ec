//! [`McpClient`]: one connection to one MCP server, its tool list (refreshed when the
//! server says it changed), reconnection, and tool calls with progress and cancellation.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use agentscope_core::ToolContext;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, Implementation, RequestId, RequestMetaObject, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestHandle, RunningService};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::config::{McpServerConfig, TransportConfig};
use crate::content::{McpToolResult, progress_text};
use crate::defs::ToolDef;
use crate::error::{INVALID_PARAMS, McpError};
use crate::transport::{ProgressRouter, Tapped, child_process, forward_stderr, http_transport};
use agentscope_core::redact::Redactor;

/// A connection to one MCP server, and the server's tools as agentscope tools.
///
/// A cheap `Clone` handle over an `Arc`: the tools it hands out hold one too. The server
/// (its process, or its HTTP session) is stopped by [`close`](Self::close), or when the
/// last handle and the last of its tools are dropped.
///
/// # Tools
///
/// [`tools`](Self::tools) turns each tool the server declares into an [`McpTool`](crate::McpTool): the
/// name (after the configured [prefix](McpServerConfig::prefix)), the description and the
/// input JSON schema exactly as declared, so the toolkit validates arguments against the
/// server's own schema and the model sees what the server offers. `Toolkit::tools` adds
/// them to a toolkit as listed now.
///
/// # Refresh
///
/// When the server sends `notifications/tools/list_changed`, the client lists the tools
/// again; [`tools_generation`](Self::tools_generation) goes up when the list changed, and
/// [`tools_changed`](Self::tools_changed) waits for that.
///
/// The client is a [`ToolSource`](agentscope_core::ToolSource): add it with `Toolkit::source` and a running agent
/// offers the model the server's current tools from its next call on (a call in progress
/// keeps the list it started with). That is the way for long-running agents.
/// `Toolkit::new().tools(client.tools())` copies the list as it is: an agent built with it
/// keeps it (new tools reach only agents built afterwards, and a removed tool's calls get the
/// server's error result).
///
/// # Approval
///
/// To hold every call of this server's tools for approval (the list at the time of the
/// call, so tools the server adds later are held too), give `ToolApprovalHook` the policy
/// `ApprovalPolicy::when(move |call| client.has_tool(&call.name))`.
///
/// # Connection loss
///
/// A call in flight when the server dies (its process exits, the HTTP server goes away)
/// fails with a clear error result and is not re-sent; the next call reconnects as the
/// [`ReconnectPolicy`](crate::ReconnectPolicy) says, lists the tools again, and runs.
///
/// ```no_run
/// use agentscope::prelude::*;
/// use agentscope_mcp::{McpClient, McpServerConfig};
/// # async fn demo(model: impl Model) -> Result<(), Box<dyn std::error::Error>> {
/// let files = McpClient::connect(
///     McpServerConfig::stdio("npx")
///         .args(["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"])
///         .prefix("files_"),
/// )
/// .await?;
/// let agent = ReActAgent::builder()
///     .model(model)
///     .toolkit(Toolkit::new().source(files.clone())) // follows the server's list
///     .build()?;
/// # let _ = agent;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

struct Inner {
    config: McpServerConfig,
    shared: Arc<Shared>,
    connection: tokio::sync::Mutex<Option<Arc<Connection>>>,
    closed: AtomicBool,
}

/// What the notification handler shares with the client.
pub(crate) struct Shared {
    pub(crate) server: String,
    prefix: String,
    pub(crate) redactor: Redactor,
    router: Arc<ProgressRouter>,
    tools: RwLock<ToolList>,
    /// Orders the listings: a slow listing never replaces a newer one.
    listing: AtomicU64,
    generation: watch::Sender<u64>,
}

#[derive(Default)]
struct ToolList {
    defs: Arc<[Arc<ToolDef>]>,
    listing: u64,
}

struct Connection {
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    broken: AtomicBool,
}

impl Connection {
    fn is_usable(&self) -> bool {
        !self.broken.load(Ordering::Acquire) && !self.peer.is_transport_closed()
    }

    fn mark_broken(&self) {
        self.broken.store(true, Ordering::Release);
    }

    async fn close(&self) {
        let service = self.service.lock().await.take();
        if let Some(mut service) = service {
            let _ = service.close().await;
        }
    }
}

impl McpClient {
    /// Connects to the server (starting its process, or opening an HTTP session), runs the
    /// protocol handshake and lists its tools.
    ///
    /// # Errors
    ///
    /// [`McpError::InvalidConfig`] for a configuration problem,
    /// [`McpError::Connect`] when the process cannot start or the handshake fails or takes
    /// longer than the [connect timeout](McpServerConfig::connect_timeout), and
    /// [`McpError::Server`] when listing the tools fails.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops a process it started.
    pub async fn connect(config: McpServerConfig) -> Result<Self, McpError> {
        if let Some(error) = &config.error {
            return Err(error.clone());
        }
        if let TransportConfig::Http(http) = &config.transport
            && reqwest::Url::parse(&http.url).is_err()
        {
            return Err(McpError::InvalidConfig {
                message: format!(
                    "the URL of the MCP server '{}' is not a valid URL",
                    config.server_name()
                ),
            });
        }
        let shared = Arc::new(Shared {
            server: config.server_name(),
            prefix: config.prefix.clone(),
            redactor: config.redactor(),
            router: Arc::default(),
            tools: RwLock::default(),
            listing: AtomicU64::new(0),
            generation: watch::Sender::new(0),
        });
        let inner = Arc::new(Inner {
            config,
            shared,
            connection: tokio::sync::Mutex::new(None),
            closed: AtomicBool::new(false),
        });
        let connection = inner.open().await?;
        inner.list_tools(&connection).await?;
        *inner.connection.lock().await = Some(connection);
        Ok(Self { inner })
    }

    /// The server's name (see [`McpServerConfig::name`]).
    pub fn name(&self) -> &str {
        &self.inner.shared.server
    }

    /// The server's tools as declared, as last listed.
    pub(crate) fn defs(&self) -> Arc<[Arc<ToolDef>]> {
        self.inner.shared.defs()
    }

    /// The names of the server's tools as the model sees them (prefixed), as last listed.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner
            .shared
            .defs()
            .iter()
            .map(|def| def.name.clone())
            .collect()
    }

    /// Whether `name` (as the model sees it, prefixed) is one of the server's tools, as
    /// last listed.
    pub fn has_tool(&self, name: &str) -> bool {
        self.inner.shared.defs().iter().any(|def| def.name == name)
    }

    /// A number that goes up each time the tool list changes (a refresh after the server's
    /// `notifications/tools/list_changed`, after a reconnect, or by
    /// [`refresh_tools`](Self::refresh_tools), when the list differs).
    pub fn tools_generation(&self) -> u64 {
        *self.inner.shared.generation.borrow()
    }

    /// Waits until [`tools_generation`](Self::tools_generation) is above `seen` and returns
    /// it (at once when it already is).
    pub async fn tools_changed(&self, seen: u64) -> u64 {
        let mut rx = self.inner.shared.generation.subscribe();
        match rx.wait_for(|generation| *generation > seen).await {
            Ok(generation) => *generation,
            // The sender lives as long as `self`.
            Err(_) => seen,
        }
    }

    /// Lists the server's tools again (reconnecting first when needed).
    ///
    /// # Errors
    ///
    /// As for a call: [`McpError::Disconnected`], [`McpError::Server`],
    /// [`McpError::Closed`].
    pub async fn refresh_tools(&self) -> Result<(), McpError> {
        let connection = self.inner.connection().await?;
        self.inner.list_tools(&connection).await
    }

    /// Calls the server's tool `name` (its own name, without the prefix) with `arguments`,
    /// outside any agent: no schema validation, no progress, no hooks.
    ///
    /// An `isError` result is `Ok` with [`McpToolResult::is_error`] set. The trace context
    /// of the current span goes in the request's `_meta` when a propagator is installed
    /// (see [`McpTool`](crate::McpTool)).
    ///
    /// # Errors
    ///
    /// [`McpError::Server`] for a JSON-RPC error (an unknown tool, arguments the server
    /// rejects), [`McpError::Disconnected`] when the connection is lost during the call or
    /// cannot be restored, [`McpError::Closed`] after [`close`](Self::close).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future sends `notifications/cancelled` for the request.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<McpToolResult, McpError> {
        match self.inner.call(name, arguments, None).await {
            Ok(result) => Ok(result),
            Err(CallError::Mcp(error)) => Err(error),
            // Only a tool context can cancel.
            Err(CallError::Cancelled) => Err(McpError::Server {
                server: self.name().to_owned(),
                code: None,
                message: "the call was cancelled".to_owned(),
            }),
        }
    }

    /// The call of an [`McpTool`]: progress to `ctx`, cancellation from `ctx`.
    pub(crate) async fn call_with_context(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        ctx: &ToolContext,
    ) -> Result<McpToolResult, CallError> {
        self.inner.call(name, arguments, Some(ctx)).await
    }

    /// Whether the client has a usable connection now (a lost one is restored by the next
    /// call).
    pub async fn is_connected(&self) -> bool {
        self.inner
            .connection
            .lock()
            .await
            .as_ref()
            .is_some_and(|connection| connection.is_usable())
    }

    /// Ends the session and stops the server (a stdio server's input is closed, then it is
    /// sent `SIGTERM` after 3 s and killed after 3 s more). Every later call, on any handle
    /// or tool, fails with [`McpError::Closed`].
    pub async fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        let connection = self.inner.connection.lock().await.take();
        if let Some(connection) = connection {
            connection.close().await;
        }
    }
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.inner.config)
            .field("tools", &self.tool_names())
            .finish_non_exhaustive()
    }
}

/// Why a call of a tool failed.
pub(crate) enum CallError {
    Mcp(McpError),
    /// The tool context was cancelled (the agent call was interrupted).
    Cancelled,
}

impl From<McpError> for CallError {
    fn from(error: McpError) -> Self {
        CallError::Mcp(error)
    }
}

/// The reason sent with `notifications/cancelled` when the agent call was interrupted.
/// The `_meta` key of a `tools/call` request that carries the agent's tool call's
/// [idempotency key](agentscope_core::ToolContext::idempotency_key): the same in every process
/// and every retry of the call, so a server can do the call's work once.
pub const IDEMPOTENCY_KEY_META: &str = "io.agentscope/idempotency-key";

const INTERRUPTED: &str = "the agent call was interrupted";
/// The reason sent when the call's future was dropped (a tool time limit, a dropped agent
/// call or stream).
const DROPPED: &str = "the tool call was abandoned by the client";

impl Inner {
    fn disconnected(&self, message: String) -> McpError {
        McpError::Disconnected {
            server: self.shared.server.clone(),
            message: self.shared.redactor.scrub(message),
        }
    }

    fn connect_error(&self, message: String) -> McpError {
        McpError::Connect {
            server: self.shared.server.clone(),
            message: self.shared.redactor.scrub(message),
        }
    }

    /// The connection, restored first when it was lost.
    async fn connection(&self) -> Result<Arc<Connection>, McpError> {
        let closed = || McpError::Closed {
            server: self.shared.server.clone(),
        };
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        let mut slot = self.connection.lock().await;
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        if let Some(connection) = slot.as_ref()
            && connection.is_usable()
        {
            return Ok(Arc::clone(connection));
        }
        if let Some(lost) = slot.take() {
            // Closing an HTTP session waits for its DELETE; the new one need not.
            tokio::spawn(async move { lost.close().await });
        }
        let server = &self.shared.server;
        let policy = self.config.reconnect;
        if policy.max_attempts() == 0 {
            return Err(self.disconnected(format!(
                "the connection to the MCP server '{server}' was lost and reconnecting is disabled"
            )));
        }
        let mut last = String::new();
        for attempt in 1..=policy.max_attempts() {
            tokio::time::sleep(policy.pause_before(attempt)).await;
            match self.open().await {
                Ok(connection) => {
                    if let Err(error) = self.list_tools(&connection).await {
                        tracing::warn!(server = %server, %error, "listing tools after reconnecting failed");
                    }
                    tracing::info!(server = %server, attempt, "reconnected to the MCP server");
                    *slot = Some(Arc::clone(&connection));
                    return Ok(connection);
                }
                Err(error) => {
                    tracing::warn!(server = %server, attempt, %error, "reconnecting to the MCP server failed");
                    last = error.to_string();
                }
            }
        }
        Err(self.disconnected(format!(
            "the connection to the MCP server '{server}' was lost and {} reconnect attempt(s) failed; the last: {last}",
            policy.max_attempts()
        )))
    }

    /// Opens a new connection: starts the process or the HTTP session, and shakes hands.
    async fn open(&self) -> Result<Arc<Connection>, McpError> {
        let handler = Handler {
            shared: Arc::clone(&self.shared),
        };
        let router = Arc::clone(&self.shared.router);
        let server = &self.shared.server;
        let timeout = self.config.connect_timeout;
        let served = match &self.config.transport {
            TransportConfig::Stdio(stdio) => {
                let (process, stderr) = child_process(stdio).map_err(|e| {
                    self.connect_error(format!(
                        "cannot start the MCP server '{server}' (`{}`): {e}",
                        stdio.command
                    ))
                })?;
                if let Some(stderr) = stderr {
                    forward_stderr(stderr, server.clone(), self.shared.redactor.clone());
                }
                let transport = Tapped {
                    inner: process,
                    router,
                };
                tokio::time::timeout(timeout, handler.serve(transport))
                    .await
                    .map(|served| served.map_err(|e| e.to_string()))
            }
            TransportConfig::Http(http) => {
                let transport = Tapped {
                    inner: http_transport(http, self.config.reconnect),
                    router,
                };
                tokio::time::timeout(timeout, handler.serve(transport))
                    .await
                    .map(|served| served.map_err(|e| e.to_string()))
            }
        };
        let service = match served {
            Ok(Ok(service)) => service,
            Ok(Err(message)) => {
                return Err(self.connect_error(format!(
                    "cannot connect to the MCP server '{server}': {message}"
                )));
            }
            Err(_) => {
                return Err(self.connect_error(format!(
                    "connecting to the MCP server '{server}' took longer than {timeout:?}"
                )));
            }
        };
        Ok(Arc::new(Connection {
            peer: service.peer().clone(),
            service: tokio::sync::Mutex::new(Some(service)),
            broken: AtomicBool::new(false),
        }))
    }

    async fn list_tools(&self, connection: &Connection) -> Result<(), McpError> {
        let listing = self.shared.next_listing();
        let tools = connection
            .peer
            .list_all_tools()
            .await
            .map_err(|error| self.request_error(connection, error))?;
        self.shared.store(listing, tools);
        Ok(())
    }

    /// Our error for a failed request (the connection is marked lost when the transport
    /// failed, so the next call reconnects).
    fn request_error(&self, connection: &Connection, error: ServiceError) -> McpError {
        let server = &self.shared.server;
        match error {
            ServiceError::McpError(data) => {
                let code = data.code.0;
                let message = if code == INVALID_PARAMS {
                    format!(
                        "the MCP server '{server}' rejected the arguments: {}",
                        data.message
                    )
                } else {
                    format!(
                        "the MCP server '{server}' returned an error: {} (code {code})",
                        data.message
                    )
                };
                McpError::Server {
                    server: server.clone(),
                    code: Some(code),
                    message: self.shared.redactor.scrub(message),
                }
            }
            ServiceError::TransportClosed => {
                connection.mark_broken();
                self.disconnected(format!(
                    "the connection to the MCP server '{server}' was lost before it answered \
                     (did the server exit?); whether the call ran is unknown"
                ))
            }
            ServiceError::TransportSend(error) => {
                connection.mark_broken();
                self.disconnected(format!(
                    "cannot reach the MCP server '{server}': {error}; whether the call ran is unknown"
                ))
            }
            other => McpError::Server {
                server: server.clone(),
                code: None,
                message: self
                    .shared
                    .redactor
                    .scrub(format!("the MCP server '{server}': {other}")),
            },
        }
    }

    /// One `tools/call`: progress goes to `ctx` in order, `ctx`'s cancellation and dropping
    /// the future send `notifications/cancelled`.
    async fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        ctx: Option<&ToolContext>,
    ) -> Result<McpToolResult, CallError> {
        let connection = self.connection().await?;
        if ctx.is_some_and(ToolContext::is_cancelled) {
            return Err(CallError::Cancelled);
        }
        let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let mut meta = RequestMetaObject::new();
        if let Some(ctx) = ctx {
            // The call's idempotency key, for a server that deduplicates (the same in every
            // process and every retry of the call).
            meta.0.0.insert(
                IDEMPOTENCY_KEY_META.to_owned(),
                ctx.idempotency_key().into(),
            );
        }
        // The current span's trace context (an agent's tool call: its `execute_tool` span),
        // as the MCP conventions of OpenTelemetry say: `traceparent` / `tracestate` at the
        // root of `params._meta`, whatever the transport. Nothing without a propagator.
        if let Some(context) = agentscope_core::propagation::inject(&tracing::Span::current()) {
            for (field, value) in context.iter() {
                meta.0.0.insert(field.to_owned(), value.into());
            }
        }
        if !meta.0.0.is_empty() {
            params.meta = Some(meta);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle: RequestHandle<RoleClient> = connection
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|error| self.request_error(&connection, error))?;
        let RequestHandle {
            mut rx,
            id,
            progress_token,
            ..
        } = handle;
        let mut progress = self.shared.router.subscribe(progress_token);
        let mut guard = CancelOnDrop {
            peer: Some(connection.peer.clone()),
            id,
        };
        let cancelled = async {
            match ctx {
                Some(ctx) => ctx.cancelled().await,
                None => futures::future::pending().await,
            }
        };
        tokio::pin!(cancelled);
        let response = loop {
            tokio::select! {
                biased;
                response = &mut rx => break response,
                Some(update) = progress.rx.recv() => {
                    if let Some(ctx) = ctx {
                        ctx.emit(progress_text(&update)).await;
                    }
                }
                () = &mut cancelled => {
                    guard.cancel_now(INTERRUPTED).await;
                    return Err(CallError::Cancelled);
                }
            }
        };
        guard.disarm();
        // Progress the server sent before its response is routed before the response
        // arrives: emit what is left, in order.
        while let Ok(update) = progress.rx.try_recv() {
            if let Some(ctx) = ctx {
                ctx.emit(progress_text(&update)).await;
            }
        }
        let response = response.unwrap_or(Err(ServiceError::TransportClosed));
        match response {
            Ok(ServerResult::CallToolResult(result)) => Ok(McpToolResult::from_mcp(result)),
            // A result without `content` decodes as an empty result.
            Ok(ServerResult::EmptyResult(_)) => Ok(McpToolResult::new(Vec::new(), None, false)),
            Ok(_) => Err(CallError::Mcp(McpError::Server {
                server: self.shared.server.clone(),
                code: None,
                message: format!(
                    "the MCP server '{}' answered the call with something other than a tool \
                     result (an input request or a task, which this client does not support)",
                    self.shared.server
                ),
            })),
            Err(error) => Err(CallError::Mcp(self.request_error(&connection, error))),
        }
    }
}

/// Sends `notifications/cancelled` for a request unless disarmed: at once with
/// [`cancel_now`](Self::cancel_now), or from `Drop` (on a task, since `Drop` cannot wait).
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.peer = None;
    }

    async fn cancel_now(&mut self, reason: &str) {
        if let Some(peer) = self.peer.take() {
            let param = CancelledNotificationParam::new(Some(self.id.clone()), Some(reason.into()));
            if let Err(error) = peer.notify_cancelled(param).await {
                tracing::debug!(%error, "sending notifications/cancelled failed");
            }
        }
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else {
            return;
        };
        let param = CancelledNotificationParam::new(Some(self.id.clone()), Some(DROPPED.into()));
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(error) = peer.notify_cancelled(param).await {
                        tracing::debug!(%error, "sending notifications/cancelled failed");
                    }
                });
            }
            Err(_) => tracing::debug!("no tokio runtime: notifications/cancelled not sent"),
        }
    }
}

impl Shared {
    fn defs(&self) -> Arc<[Arc<ToolDef>]> {
        Arc::clone(
            &self
                .tools
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .defs,
        )
    }

    fn next_listing(&self) -> u64 {
        self.listing.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Stores listing number `listing` unless a newer one is stored; bumps the generation
    /// when the list differs.
    fn store(&self, listing: u64, tools: Vec<rmcp::model::Tool>) {
        let defs: Vec<Arc<ToolDef>> = tools
            .into_iter()
            .map(|tool| Arc::new(ToolDef::from_mcp(&self.prefix, tool)))
            .collect();
        let changed = {
            let mut list = self.tools.write().unwrap_or_else(PoisonError::into_inner);
            if list.listing > listing {
                return;
            }
            list.listing = listing;
            let same = list.defs.len() == defs.len()
                && list.defs.iter().zip(&defs).all(|(old, new)| old == new);
            if !same {
                list.defs = defs.into();
            }
            !same
        };
        if changed {
            self.generation.send_modify(|generation| *generation += 1);
        }
    }
}

/// The client side of the protocol: declares no capabilities and refreshes the tool list on
/// `notifications/tools/list_changed`.
struct Handler {
    shared: Arc<Shared>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agentscope-mcp", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let listing = self.shared.next_listing();
        match context.peer.list_all_tools().await {
            Ok(tools) => self.shared.store(listing, tools),
            Err(error) => tracing::warn!(
                server = %self.shared.server,
                error = %self.shared.redactor.scrub(error.to_string()),
                "listing tools after tools/list_changed failed"
            ),
        }
    }
}
