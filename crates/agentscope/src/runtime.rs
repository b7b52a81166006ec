//! [`AgentRuntime`]: what changes while an agent lives (its hooks, its user metadata, the
//! calls running on it), and the [`CallGuard`] that holds the agent for one call.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use agentscope_core::{AgentError, CallId, CancellationToken, HookChain};
use serde_json::{Map, Value};

use crate::call_ids::ConversationCallIds;
use crate::sync::lock;

/// The mutable half of an agent; [`AgentConfig`](crate::config::AgentConfig) is the other.
pub(crate) struct AgentRuntime {
    hooks: Mutex<Arc<HookChain>>,
    /// User metadata saved with the agent's state.
    metadata: Mutex<Map<String, Value>>,
    /// Set while a call holds the agent (only with the busy check on).
    running: AtomicBool,
    /// The running calls and their cancellation tokens, for `interrupt()`.
    active: Mutex<Vec<(u64, CancellationToken)>>,
    next_call: AtomicU64,
    /// The id of the last call that ended with tool calls pending: the next call resumes it.
    stopped_call: Mutex<Option<CallId>>,
    /// Whether `stopped_call` is `Some`: most calls neither resume nor stop, and skip the lock.
    has_stopped_call: AtomicBool,
    /// The tool call ids of the conversation in memory, as far as a call last read it.
    call_ids: Mutex<ConversationCallIds>,
}

impl AgentRuntime {
    pub(crate) fn new(hooks: HookChain, metadata: Map<String, Value>) -> Self {
        Self {
            hooks: Mutex::new(Arc::new(hooks)),
            metadata: Mutex::new(metadata),
            running: AtomicBool::new(false),
            active: Mutex::new(Vec::new()),
            next_call: AtomicU64::new(0),
            stopped_call: Mutex::new(None),
            has_stopped_call: AtomicBool::new(false),
            call_ids: Mutex::default(),
        }
    }

    /// The tool call ids of the agent's conversation (see [`ConversationCallIds`]).
    pub(crate) fn call_ids(&self) -> &Mutex<ConversationCallIds> {
        &self.call_ids
    }

    /// The agent's hook chain (changes apply from the next call on).
    pub(crate) fn hooks(&self) -> MutexGuard<'_, Arc<HookChain>> {
        lock(&self.hooks)
    }

    /// The chain for one call; later changes don't affect it.
    pub(crate) fn hook_snapshot(&self) -> Arc<HookChain> {
        Arc::clone(&self.hooks())
    }

    /// The user metadata.
    pub(crate) fn metadata(&self) -> &Mutex<Map<String, Value>> {
        &self.metadata
    }

    /// Whether a call is running.
    pub(crate) fn is_running(&self) -> bool {
        !lock(&self.active).is_empty()
    }

    /// Asks every running call to stop.
    pub(crate) fn interrupt(&self) {
        for (_, token) in lock(&self.active).iter() {
            token.cancel();
        }
    }

    /// The busy check: claims the agent for one call (exclusively when `exclusive`, i.e.
    /// with `check_running`), or fails with `Busy`.
    pub(crate) fn begin_call(&self, exclusive: bool) -> Result<CallGuard<'_>, AgentError> {
        if exclusive
            && self
                .running
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            return Err(AgentError::Busy);
        }
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        lock(&self.active).push((id, token.clone()));
        Ok(CallGuard {
            runtime: self,
            id,
            token,
            exclusive,
        })
    }
}

/// Holds the agent for one call; releases it when dropped (completion or cancellation).
pub(crate) struct CallGuard<'a> {
    runtime: &'a AgentRuntime,
    id: u64,
    token: CancellationToken,
    exclusive: bool,
}

impl CallGuard<'_> {
    /// The call's cancellation token (`interrupt()` cancels it).
    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// The call a new call resumes: the last one that ended with tool calls pending.
    pub(crate) fn stopped_call(&self) -> Option<CallId> {
        if !self.runtime.has_stopped_call.load(Ordering::Acquire) {
            return None;
        }
        *lock(&self.runtime.stopped_call)
    }

    /// Records how this call ended: `Some(id)` when it left tool calls pending.
    pub(crate) fn set_stopped_call(&self, call: Option<CallId>) {
        if call.is_none() && !self.runtime.has_stopped_call.load(Ordering::Acquire) {
            return;
        }
        let mut stopped = lock(&self.runtime.stopped_call);
        *stopped = call;
        self.runtime
            .has_stopped_call
            .store(call.is_some(), Ordering::Release);
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        lock(&self.runtime.active).retain(|(id, _)| *id != self.id);
        if self.exclusive {
            self.runtime.running.store(false, Ordering::Release);
        }
    }
}
