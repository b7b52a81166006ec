//! What a [`ContextWindowHook`](super::ContextWindowHook) keeps between calls: the stash and
//! the token counts its clones share, and its state per conversation (the summary in use,
//! what it sent last, a window learned from a refusal), in the session's [`HookState`] when
//! the agent has a session and in memory by agent id.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use agentscope_core::session::HookState;
use agentscope_core::{Extensions, HookError, Msg};
use serde::{Deserialize, Serialize};

use super::counts::CountCache;
use super::stash::ToolResultStash;
use super::summary::SummaryRecord;
use crate::call_state::InstanceId;

/// The hook's name ([`ContextWindowHook::NAME`](super::ContextWindowHook::NAME)): the key of
/// its entry in the session's [`HookState`], and the `hook` field of its traces.
pub(super) const HOOK_NAME: &str = "context_window";

/// What the clones of one hook share.
pub(super) struct Shared {
    /// Tells this hook's per-call notes from another instance's in the same call.
    pub(super) instance: InstanceId,
    pub(super) stash: ToolResultStash,
    pub(super) conversations: Conversations,
    pub(super) counts: CountCache,
}

impl Shared {
    pub(super) fn new() -> Self {
        Shared {
            instance: InstanceId::next(),
            stash: ToolResultStash::new(),
            conversations: Conversations::default(),
            counts: CountCache::default(),
        }
    }
}

/// What the hook keeps per conversation (in the session's `HookState`, or in memory).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct Persisted {
    /// The summary in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) summary: Option<SummaryRecord>,
    /// The input sent at the last model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) sent: Option<Sent>,
    /// A window learned from a refusal, below the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) window: Option<usize>,
}

/// The last input sent: its length and fingerprint, to know whether the next reply's usage
/// measures the same messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Sent {
    pub(super) messages: usize,
    pub(super) fingerprint: String,
}

/// The state per conversation, by agent id: for agents without a session, and, with one,
/// what this process knows that the session may have missed (see
/// [`caught_up`](Self::caught_up)).
#[derive(Default)]
pub(super) struct Conversations(Mutex<HashMap<String, Persisted>>);

impl Conversations {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Persisted>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The summary in use for the conversation of the agent `agent`, as kept in memory.
    pub(super) fn summary(&self, agent: &str) -> Option<SummaryRecord> {
        self.lock()
            .get(agent)
            .and_then(|state| state.summary.clone())
    }

    /// The state of `agent`'s conversation: the session's when the call has one.
    ///
    /// # Errors
    ///
    /// The session's entry cannot be read (see [`HookState::get`]).
    pub(super) fn load(
        &self,
        extensions: &Extensions,
        agent: &str,
    ) -> Result<Persisted, HookError> {
        Ok(match extensions.get::<HookState>() {
            Some(state) => state.get(HOOK_NAME)?.unwrap_or_default(),
            None => self.lock().get(agent).cloned().unwrap_or_default(),
        })
    }

    /// Keeps `persisted` as the state of `agent`'s conversation: in the session (when the
    /// call has one) and in memory.
    pub(super) fn store(&self, extensions: &mut Extensions, agent: &str, persisted: Persisted) {
        match extensions.get_mut::<HookState>() {
            Some(state) if persisted == Persisted::default() => {
                state.remove(HOOK_NAME);
            }
            Some(state) => state.set(HOOK_NAME, &persisted),
            None => {}
        }
        // Kept in memory with a session too: see `caught_up`.
        self.lock().insert(agent.to_owned(), persisted);
    }

    /// At PreCall of an agent with a session: what this process knows and the session does
    /// not (a change the session missed, such as one made at a call's last model call, which
    /// the session saves without the hooks' state) goes into the session's `HookState`; the
    /// engine saves it after PreCall. The more advanced of the two summaries applicable to
    /// the conversation wins, and the smaller learned window. `None`: nothing to change.
    ///
    /// # Errors
    ///
    /// The session's entry cannot be read (see [`HookState::get`]).
    pub(super) fn caught_up(
        &self,
        state: &HookState,
        agent: &str,
        history: &[Msg],
    ) -> Result<Option<Persisted>, HookError> {
        let Some(known) = self.lock().get(agent).cloned() else {
            return Ok(None);
        };
        let stored: Persisted = state.get(HOOK_NAME)?.unwrap_or_default();
        let reach = |record: &Option<SummaryRecord>| {
            record.as_ref().and_then(|record| {
                history
                    .iter()
                    .position(|message| message.id == record.through.as_str())
            })
        };
        let summary = if reach(&known.summary) > reach(&stored.summary) {
            known.summary
        } else {
            stored.summary.clone()
        };
        let merged = Persisted {
            summary,
            sent: known.sent.or_else(|| stored.sent.clone()),
            window: match (known.window, stored.window) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        };
        Ok((merged != stored).then_some(merged))
    }
}
