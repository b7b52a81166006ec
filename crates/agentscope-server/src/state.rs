//! What every request of an [`AgUi`](crate::AgUi) shares: the agents, the store, and the
//! busy threads (which session a run holds, whom a shutdown interrupts, when the last run
//! has ended).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agentscope::session::validate_session_id;
use agentscope::session::{AgentState, SessionError, SessionStore};
use agentscope::{CancellationToken, ReActAgent};
use axum::http::StatusCode;
use tokio::sync::Notify;

use crate::error::{ApiError, shorten};
use crate::spec::AgentSpec;

/// How long [`Inner::shutdown`] waits for interrupted runs to end.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Behind one `Arc`: held by the `AgUi` handle, the router's handlers and every run.
pub(crate) struct Inner {
    pub(crate) agents: BTreeMap<String, AgentSpec>,
    pub(crate) store: Arc<dyn SessionStore>,
    /// The running calls, by session: the busy check, and whom to interrupt at shutdown.
    runs: Mutex<HashMap<String, ReActAgent>>,
    draining: AtomicBool,
    idle: Notify,
}

impl Inner {
    pub(crate) fn new(agents: BTreeMap<String, AgentSpec>, store: Arc<dyn SessionStore>) -> Self {
        Self {
            agents,
            store,
            runs: Mutex::default(),
            draining: AtomicBool::new(false),
            idle: Notify::new(),
        }
    }

    fn lock_runs(&self) -> MutexGuard<'_, HashMap<String, ReActAgent>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many runs are active.
    pub(crate) fn running(&self) -> usize {
        self.lock_runs().len()
    }

    pub(crate) fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Marks `session` busy with `agent`, or reports that a run is active on it.
    pub(crate) fn start_run(
        self: &Arc<Self>,
        session: &str,
        agent: &ReActAgent,
    ) -> Result<RunGuard, ApiError> {
        let mut runs = self.lock_runs();
        if runs.contains_key(session) {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "thread_busy",
                "a run is already active on this thread; wait for it to finish",
            ));
        }
        runs.insert(session.to_owned(), agent.clone());
        Ok(RunGuard {
            inner: Arc::clone(self),
            session: session.to_owned(),
        })
    }

    pub(crate) fn spec(&self, agent: &str) -> Result<&AgentSpec, ApiError> {
        self.agents
            .get(agent)
            .ok_or_else(|| ApiError::not_found(format!("no agent named {agent:?}")))
    }

    /// The stored state of `session` (`None` for a new thread).
    pub(crate) async fn load_state(&self, session: &str) -> Result<Option<AgentState>, ApiError> {
        match self.store.load(session).await {
            Ok(state) => Ok(state),
            Err(err) => Err(ApiError::internal(
                "session_store",
                format!("the thread cannot be loaded: {err}"),
            )),
        }
    }

    /// Whether this instance runs a call on `session`.
    pub(crate) fn runs(&self, session: &str) -> bool {
        self.lock_runs().contains_key(session)
    }

    /// Whether a call holds `session`'s lease in the store, on any instance: a probe that
    /// takes the lease and gives it back at once (`false` for a store that does not lease).
    /// It tells tool calls recorded as running that are running from calls in doubt, so ask
    /// only when the thread has some.
    pub(crate) async fn leased(&self, session: &str) -> Result<bool, ApiError> {
        match self.store.lease(session, &CancellationToken::new()).await {
            Ok(Some(lease)) => {
                if let Err(error) = lease.release().await {
                    tracing::warn!(%error, "giving back a probed session lease failed");
                }
                Ok(false)
            }
            Ok(None) => Ok(false),
            Err(SessionError::Busy { .. }) => Ok(true),
            Err(error) => Err(ApiError::internal(
                "session_store",
                format!("the thread's lease cannot be checked: {error}"),
            )),
        }
    }

    /// Stops taking runs, interrupts the running calls, and waits up to
    /// [`SHUTDOWN_GRACE`] for them to end.
    pub(crate) async fn shutdown(&self) {
        self.draining.store(true, Ordering::SeqCst);
        let running: Vec<ReActAgent> = self.lock_runs().values().cloned().collect();
        tracing::info!(
            running = running.len(),
            "AG-UI server shutting down: interrupting runs"
        );
        for agent in &running {
            agent.interrupt();
        }
        let wait = async {
            loop {
                let idle = self.idle.notified();
                if self.lock_runs().is_empty() {
                    return;
                }
                idle.await;
            }
        };
        if tokio::time::timeout(SHUTDOWN_GRACE, wait).await.is_err() {
            tracing::warn!("AG-UI runs still active after the shutdown grace period");
        }
    }
}

/// Holds a thread busy for one run; frees it when dropped (the run ended, or the client
/// went away and the stream was dropped).
pub(crate) struct RunGuard {
    inner: Arc<Inner>,
    session: String,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        let mut runs = self.inner.lock_runs();
        runs.remove(&self.session);
        if runs.is_empty() {
            self.inner.idle.notify_waiters();
        }
    }
}

/// The session a thread of an agent is stored under: `<agent>.<threadId>`.
pub(crate) fn session_id(agent: &str, thread_id: &str) -> String {
    format!("{agent}.{thread_id}")
}

/// The session of `thread` for `agent`, checked.
pub(crate) fn session_of(agent: &str, thread: &str) -> Result<String, ApiError> {
    let session = session_id(agent, thread);
    validate_session_id(&session).map_err(|_| {
        ApiError::bad_request(
            "invalid_thread_id",
            format!(
                "threadId {:?} is not usable: use 1 to {} ASCII letters, digits, '-', '_' or '.'",
                shorten(thread),
                agentscope::session::MAX_SESSION_ID_LEN - agent.len() - 1
            ),
        )
    })?;
    Ok(session)
}
