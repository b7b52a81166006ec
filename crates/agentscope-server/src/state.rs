//! What every request of an [`AgUi`](crate::AgUi) shares: the served agents (each a
//! [`Served`] of the serving core: its spec, its store, the runs this instance serves) and
//! the store.

use std::collections::BTreeMap;
use std::sync::Arc;

use agentscope::CancellationToken;
use agentscope::session::{AgentState, SessionError, SessionStore, validate_session_id};
use agentscope_serving::{Served, failure};

use crate::error::{ApiError, shorten};

/// Behind one `Arc`: held by the `AgUi` handle, the router's handlers and every run.
pub(crate) struct Inner {
    pub(crate) agents: BTreeMap<String, Served>,
    pub(crate) store: Arc<dyn SessionStore>,
}

impl Inner {
    /// How many runs are active.
    pub(crate) fn running(&self) -> usize {
        self.agents.values().map(Served::running).sum()
    }

    pub(crate) fn draining(&self) -> bool {
        self.agents.values().any(Served::draining)
    }

    pub(crate) fn served(&self, agent: &str) -> Result<&Served, ApiError> {
        self.agents
            .get(agent)
            .ok_or_else(|| ApiError::not_found(format!("no agent named {agent:?}")))
    }

    /// The stored state of `session` (`None` for a new thread).
    pub(crate) async fn load_state(&self, session: &str) -> Result<Option<AgentState>, ApiError> {
        self.store
            .load(session)
            .await
            .map_err(|error| internal("session_store", "The thread cannot be loaded", &error))
    }

    /// Whether a call holds `session`: one of this instance, or, through the store's lease,
    /// of another (a probe that takes the lease and gives it back at once; `false` for a
    /// store that does not lease). It tells tool calls recorded as running that are running
    /// from calls in doubt, so ask only when the thread has some.
    pub(crate) async fn held(&self, served: &Served, session: &str) -> Result<bool, ApiError> {
        if served.local(session).is_some() {
            return Ok(true);
        }
        match self.store.lease(session, &CancellationToken::new()).await {
            Ok(Some(lease)) => {
                if let Err(error) = lease.release().await {
                    tracing::warn!(%error, "giving back a probed session lease failed");
                }
                Ok(false)
            }
            Ok(None) => Ok(false),
            Err(SessionError::Busy { .. }) => Ok(true),
            Err(error) => Err(internal(
                "session_store",
                "The thread's lease cannot be checked",
                &error,
            )),
        }
    }

    /// Stops taking runs, interrupts the running calls of every agent, and waits up to
    /// 30 s for them to end.
    pub(crate) async fn shutdown(&self) {
        futures::future::join_all(self.agents.values().map(Served::shutdown)).await;
    }
}

/// A `500` whose details go to the log under a correlation id; the client reads what failed
/// and the id.
pub(crate) fn internal(
    code: &'static str,
    what: &str,
    error: &(dyn std::error::Error + 'static),
) -> ApiError {
    ApiError::internal(code, failure(what, error).message)
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
