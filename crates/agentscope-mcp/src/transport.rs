//! Opening a transport to a server (a child process, or streamable HTTP), and the tap on
//! every transport that hands progress notifications to their calls in order.
//!
//! Why a tap: rmcp hands each notification to the client handler on a task of its own, so
//! two progress notifications, or the last one and the call's response, can be handled in
//! either order. The transport's `receive` is sequential, in the order the server sent, so
//! routing progress there keeps it in order and ahead of the response.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleClient;
use rmcp::model::{
    ProgressNotificationParam, ProgressToken, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::common::client_side_sse::SseRetryPolicy;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess, Transport};
use tokio::io::AsyncBufReadExt;
use tokio::process::ChildStderr;
use tokio::sync::mpsc;

use agentscope_core::redact::Redactor;

use crate::config::{HttpConfig, ReconnectPolicy, StdioConfig};

/// Starts the server's process (killed when dropped), with its standard error piped for
/// [`forward_stderr`].
pub(crate) fn child_process(
    stdio: &StdioConfig,
) -> std::io::Result<(TokioChildProcess, Option<ChildStderr>)> {
    let mut cmd = tokio::process::Command::new(&stdio.command);
    cmd.args(&stdio.args)
        .envs(stdio.env.iter().map(|(k, v)| (k, v)))
        .kill_on_drop(true);
    if let Some(dir) = &stdio.current_dir {
        cmd.current_dir(dir);
    }
    TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::piped())
        .spawn()
}

/// The streamable HTTP transport to the server, with its headers and bearer token; a broken
/// event stream is resumed as `reconnect` says.
pub(crate) fn http_transport(
    http: &HttpConfig,
    reconnect: ReconnectPolicy,
) -> StreamableHttpClientTransport<reqwest::Client> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(http.url.as_str())
        .custom_headers(http.headers.iter().cloned().collect());
    config.retry_config = Arc::new(SseResume(reconnect));
    if let Some(token) = &http.bearer_token {
        config = config.auth_header(token.clone());
    }
    StreamableHttpClientTransport::from_config(config)
}

/// How long the HTTP transport tries to resume a broken event stream (a `GET` with
/// `Last-Event-ID`) before the call it carries fails: the reconnect policy's attempts and
/// pauses. rmcp's default tries forever, so a call whose server died would never end.
#[derive(Debug)]
struct SseResume(ReconnectPolicy);

impl SseRetryPolicy for SseResume {
    fn retry(&self, retries_so_far: usize) -> Option<std::time::Duration> {
        let attempt = u32::try_from(retries_so_far).ok()?.checked_add(1)?;
        // The first resumption waits the initial pause too: the stream just broke.
        (attempt <= self.0.max_attempts()).then(|| self.0.pause_before(attempt + 1))
    }
}

/// Routes progress notifications to the call that owns their token.
///
/// Each call's notifications wait in a bounded buffer ([`CALL_CAPACITY`](Self::CALL_CAPACITY));
/// when a call is that far behind (its stream's consumer is slow), [`route`](Self::route)
/// waits, and with it the connection's reader: the server is slowed down, as a local tool
/// that floods progress is, instead of its notifications piling up in memory.
#[derive(Default)]
pub(crate) struct ProgressRouter {
    state: Mutex<RouterState>,
}

#[derive(Default)]
struct RouterState {
    routes: HashMap<ProgressToken, mpsc::Sender<ProgressNotificationParam>>,
    /// Notifications whose call has not subscribed yet: the request is on its way before
    /// the call learns its token, so a fast server can answer first. Bounded; the oldest
    /// go first (they belong to calls that finished).
    early: VecDeque<ProgressNotificationParam>,
}

impl ProgressRouter {
    const EARLY_CAPACITY: usize = 64;
    /// Notifications of one call waiting for it; at least `EARLY_CAPACITY`, so those that
    /// arrived before the call subscribed always fit.
    const CALL_CAPACITY: usize = Self::EARLY_CAPACITY;

    fn state(&self) -> std::sync::MutexGuard<'_, RouterState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `progress` to its call, waiting while the call's buffer is full; keeps it for
    /// a call that has not subscribed yet.
    pub(crate) async fn route(&self, progress: ProgressNotificationParam) {
        let route = {
            let mut state = self.state();
            match state.routes.get(&progress.progress_token) {
                Some(route) => route.clone(),
                None => {
                    if state.early.len() == Self::EARLY_CAPACITY {
                        state.early.pop_front();
                    }
                    state.early.push_back(progress);
                    return;
                }
            }
        };
        // Fails only when the call has ended (its subscription dropped): nobody to tell.
        let _ = route.send(progress).await;
    }

    /// The progress of the call that sent `token`, from now until the returned
    /// subscription is dropped (with anything that arrived before).
    pub(crate) fn subscribe(self: &Arc<Self>, token: ProgressToken) -> ProgressSubscription {
        let (tx, rx) = mpsc::channel(Self::CALL_CAPACITY);
        let mut state = self.state();
        let early = std::mem::take(&mut state.early);
        for progress in early {
            if progress.progress_token == token {
                // Fits: at most EARLY_CAPACITY are early, and the channel is new.
                let _ = tx.try_send(progress);
            } else {
                state.early.push_back(progress);
            }
        }
        state.routes.insert(token.clone(), tx);
        ProgressSubscription {
            router: Arc::clone(self),
            token,
            rx,
        }
    }
}

/// One call's progress notifications, in the order the server sent them.
pub(crate) struct ProgressSubscription {
    router: Arc<ProgressRouter>,
    token: ProgressToken,
    pub(crate) rx: mpsc::Receiver<ProgressNotificationParam>,
}

impl Drop for ProgressSubscription {
    fn drop(&mut self) {
        self.router.state().routes.remove(&self.token);
    }
}

/// A transport whose received progress notifications also go to the router.
pub(crate) struct Tapped<T> {
    pub(crate) inner: T,
    pub(crate) router: Arc<ProgressRouter>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Tapped<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(ServerJsonRpcMessage::Notification(notification)) = &message
            && let ServerNotification::ProgressNotification(progress) = &notification.notification
        {
            self.router.route(progress.params.clone()).await;
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Forwards a child's standard error to `tracing` (debug, target
/// `agentscope_mcp::stderr`), scrubbed, line by line, until it closes.
pub(crate) fn forward_stderr(
    stderr: tokio::process::ChildStderr,
    server: String,
    redactor: Redactor,
) {
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(target: "agentscope_mcp::stderr", server = %server, "{}", redactor.scrub(line));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    fn progress(token: i64, value: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), value)
    }

    #[tokio::test]
    async fn early_progress_is_kept_for_its_call_in_order() {
        let router = Arc::new(ProgressRouter::default());
        router.route(progress(7, 1.0)).await;
        router.route(progress(8, 1.0)).await;
        router.route(progress(7, 2.0)).await;
        let mut subscription = router.subscribe(ProgressToken(NumberOrString::Number(7)));
        router.route(progress(7, 3.0)).await;
        let mut got = Vec::new();
        while let Ok(p) = subscription.rx.try_recv() {
            got.push(p.progress);
        }
        assert_eq!(got, [1.0, 2.0, 3.0]);
        drop(subscription);
        assert!(router.state().routes.is_empty());
        assert_eq!(router.state().early.len(), 1);
    }

    #[tokio::test]
    async fn early_progress_is_bounded() {
        let router = ProgressRouter::default();
        for i in 0..100 {
            router.route(progress(i, 1.0)).await;
        }
        let state = router.state();
        assert_eq!(state.early.len(), ProgressRouter::EARLY_CAPACITY);
        assert_eq!(
            state.early.front().map(|p| p.progress_token.clone()),
            Some(ProgressToken(NumberOrString::Number(36)))
        );
    }

    /// A call that is behind holds up the connection's reader (the server slows down)
    /// instead of its notifications piling up: the buffer holds `CALL_CAPACITY`, the next
    /// `route` waits until the call takes one.
    #[tokio::test]
    async fn a_call_that_is_behind_slows_the_connection_down() {
        let router = Arc::new(ProgressRouter::default());
        let mut subscription = router.subscribe(ProgressToken(NumberOrString::Number(7)));
        for i in 0..ProgressRouter::CALL_CAPACITY {
            router.route(progress(7, i as f64)).await;
        }
        let blocked = router.route(progress(7, -1.0));
        tokio::pin!(blocked);
        assert!(
            futures::poll!(blocked.as_mut()).is_pending(),
            "a full call's buffer makes the reader wait"
        );
        assert_eq!(subscription.rx.recv().await.map(|p| p.progress), Some(0.0));
        blocked.await;
        let mut rest = Vec::new();
        while let Ok(p) = subscription.rx.try_recv() {
            rest.push(p.progress);
        }
        assert_eq!(rest.len(), ProgressRouter::CALL_CAPACITY);
        assert_eq!(rest.last(), Some(&-1.0));
        // A call that ended does not hold the reader up.
        drop(subscription);
        router.route(progress(7, 9.0)).await;
    }
}
