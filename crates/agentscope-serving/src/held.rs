//! [`hold`]: a change to a session's runs made while holding the session's lease, for a
//! reader that finds a run its call no longer serves (the orphan rule), a client canceling a
//! run that waits for answers, and retention. The lease makes the change and the session's
//! own calls exclusive: no call runs on the session while it holds, and its save is fenced.

use agentscope::CancellationToken;
use agentscope::session::{AgentState, HookState, SessionError, SessionStore, StateChange};

/// What [`hold`] found.
#[derive(Debug)]
#[non_exhaustive]
pub enum Held<T> {
    /// The session was held (no call ran on it meanwhile): what the edit returned, after
    /// its change (if any) was stored.
    Held(T),
    /// A call holds the session.
    Busy,
    /// The store does not lease sessions: nothing tells whether a call runs on it. With
    /// [`Unleased::Skip`], nothing was changed: the session as stored (`None`: it does not
    /// exist).
    Unleased(Option<AgentState>),
    /// The session does not exist.
    Missing,
}

/// What [`hold`] does with a store that does not lease sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unleased {
    /// Nothing: the edit is only right while no call runs (the orphan rule).
    Skip,
    /// The edit, compare-and-swap on the revision it loaded (a call saving meanwhile makes
    /// one of the two saves fail with a conflict).
    Edit,
}

/// Takes `session`'s lease, loads it, and lets `edit` change its hooks' state (the session's
/// runs live there); a change is saved with the lease's fence before the lease is given
/// back. Nothing else of the session changes.
///
/// # Errors
///
/// The store failed (taking the lease, loading, or saving); nothing was changed then (a
/// conflict cannot happen while the lease is held, except with a store whose lease was
/// lost meanwhile: [`SessionError::LeaseLost`]).
pub async fn hold<T>(
    store: &dyn SessionStore,
    session: &str,
    unleased: Unleased,
    edit: impl FnOnce(&AgentState, &mut HookState) -> T,
) -> Result<Held<T>, SessionError> {
    let lease = match store.lease(session, &CancellationToken::new()).await {
        Ok(Some(lease)) => Some(lease),
        Ok(None) if unleased == Unleased::Skip => {
            return Ok(Held::Unleased(store.load(session).await?));
        }
        Ok(None) => None,
        Err(SessionError::Busy { .. }) => return Ok(Held::Busy),
        Err(error) => return Err(error),
    };
    let edited = async {
        let Some(state) = store.load(session).await? else {
            return Ok(Held::Missing);
        };
        let mut hooks = HookState::new(state.hooks.clone());
        let value = edit(&state, &mut hooks);
        if hooks.entries() != &state.hooks {
            let mut change = StateChange::new(
                state.revision,
                state.messages.len(),
                Vec::new(),
                state.agent.clone(),
            )
            .with_metadata(state.metadata.clone())
            .with_running_tools(state.running_tools.clone())
            .with_hooks(hooks.into_entries());
            change.fence = lease.as_ref().map(|lease| lease.fence().to_owned());
            store.save(session, &change).await?;
        }
        Ok(Held::Held(value))
    }
    .await;
    if let Some(lease) = lease
        && let Err(error) = lease.release().await
    {
        tracing::warn!(%error, "giving back a session lease failed; it expires on its own");
    }
    edited
}
