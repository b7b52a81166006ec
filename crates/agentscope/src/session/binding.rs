//! [`SessionBinding`]: an agent bound to one session of a store (`builder.session(..)`), and
//! [`Synced`]: what a call knows of the stored session while it runs.

use std::sync::{Arc, Mutex};

use agentscope_core::session::{SessionError, SessionLease};
use agentscope_core::{AgentError, CancellationToken, Memory, Msg, SharedString};
use serde_json::{Map, Value};

use super::{AgentIdentity, AgentState, Durability, SaveQueue, SessionStore, StateChange};
use crate::sync::lock;

/// The store and session id an agent is bound to, what a session that does not exist yet
/// starts from, and the session's running tools and hooks' state as this instance last saw
/// them (for `save_state`).
pub(crate) struct SessionBinding {
    store: Arc<dyn SessionStore>,
    id: String,
    /// The builder's `.state(..)`, if any: the start of a fresh conversation (empty without
    /// one).
    initial: Option<AgentState>,
    /// The running tools and the hooks' state as of this instance's last load or save.
    seen: Mutex<(Vec<String>, Map<String, Value>)>,
    /// When a call's saves are written.
    durability: Durability,
}

/// What a save is made from: the agent's identity, its memory and metadata as they are now,
/// and the call's hooks' state (`None` when no hook saw the call).
pub(crate) struct Current<'a> {
    pub(crate) agent: AgentIdentity,
    pub(crate) memory: &'a dyn Memory,
    pub(crate) metadata: &'a Mutex<Map<String, Value>>,
    pub(crate) hooks: Option<&'a Map<String, Value>>,
}

/// A change [`SessionBinding::prepare`] made, and what the `Synced` it was made from holds
/// once it is stored.
struct Prepared {
    change: StateChange,
    /// How many messages the session holds after the change.
    stored: usize,
    /// The id of the last of them.
    last_id: Option<SharedString>,
}

/// The stored revision a call works from, and how memory relates to it: the next save sends
/// only what changed since.
pub(crate) struct Synced {
    /// The stored revision (`0`: nothing stored yet).
    revision: u64,
    /// How many messages the stored revision holds; memory starts with them.
    stored: usize,
    /// The id of the last stored message, to notice a memory that was rewritten rather than
    /// appended to.
    last_id: Option<SharedString>,
    metadata: Map<String, Value>,
    /// Tool calls that started and have no stored result (see `AgentState::running_tools`).
    running: Vec<String>,
    /// Whether `running` changed since the last save.
    running_changed: bool,
    /// The hooks' session state as stored (see `HookState`).
    hooks: Map<String, Value>,
    /// The call's lease on the session, from a store that coordinates instances: saves are
    /// fenced by it; [`SessionBinding::release`] gives it back.
    lease: Option<SessionLease>,
}

impl Synced {
    /// The stored revision the call works from.
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    /// The tool calls that started in an earlier call and have no stored result.
    pub(crate) fn running(&self) -> &[String] {
        &self.running
    }

    /// The hooks' session state as stored.
    pub(crate) fn hooks(&self) -> &Map<String, Value> {
        &self.hooks
    }

    /// Whether the call holds the session's lease (the store coordinates instances).
    pub(crate) fn is_leased(&self) -> bool {
        self.lease.is_some()
    }

    /// Records that the tools of `ids` are about to run (saved by the next save).
    pub(crate) fn start(&mut self, ids: impl IntoIterator<Item = String>) {
        for id in ids {
            if !self.running.contains(&id) {
                self.running.push(id);
                self.running_changed = true;
            }
        }
    }
}

impl SessionBinding {
    pub(crate) fn new(
        store: Arc<dyn SessionStore>,
        id: String,
        initial: Option<AgentState>,
        durability: Durability,
    ) -> Self {
        let seen = Mutex::new(
            initial
                .as_ref()
                .map(|state| (state.running_tools.clone(), state.hooks.clone()))
                .unwrap_or_default(),
        );
        Self {
            store,
            id,
            initial,
            seen,
            durability,
        }
    }

    /// When a call's saves are written.
    pub(crate) fn durability(&self) -> Durability {
        self.durability
    }

    /// The session's running tools and hooks' state as of this instance's last load or save
    /// (the initial state's before the first).
    pub(crate) fn seen(&self) -> (Vec<String>, Map<String, Value>) {
        lock(&self.seen).clone()
    }

    fn see(&self, running: &[String], hooks: &Map<String, Value>) {
        let mut seen = lock(&self.seen);
        if seen.0 != running {
            seen.0 = running.to_vec();
        }
        if seen.1 != *hooks {
            seen.1 = hooks.clone();
        }
    }

    /// The session id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Takes the session's lease (from a store that coordinates instances; `interrupt` is
    /// the call's token, which the store cancels when any instance interrupts the session),
    /// then loads the session into `memory` and `metadata` (a missing session is a fresh
    /// conversation: the initial state, stored by the first save). On error nothing local
    /// changed and no lease is held.
    pub(crate) async fn load(
        &self,
        memory: &dyn Memory,
        metadata: &Mutex<Map<String, Value>>,
        interrupt: &CancellationToken,
    ) -> Result<Synced, AgentError> {
        let lease = self.store.lease(&self.id, interrupt).await?;
        let loaded = async {
            let stored = self.store.load(&self.id).await?;
            // Custom stores may hand over states `decode` never saw.
            if let Some(state) = &stored {
                state.check_for(&self.id)?;
            }
            Ok::<_, AgentError>(stored)
        }
        .await;
        let stored = match loaded {
            Ok(stored) => stored,
            Err(error) => {
                release(lease).await;
                return Err(error);
            }
        };
        let (messages, synced) = match stored {
            Some(state) => {
                let synced = Synced {
                    revision: state.revision,
                    stored: state.messages.len(),
                    last_id: state.messages.last().map(|msg| msg.id.clone()),
                    metadata: state.metadata,
                    running: state.running_tools,
                    running_changed: false,
                    hooks: state.hooks,
                    lease,
                };
                (state.messages, synced)
            }
            None => {
                let (messages, metadata, running, hooks) = match &self.initial {
                    Some(state) => (
                        state.messages.clone(),
                        state.metadata.clone(),
                        state.running_tools.clone(),
                        state.hooks.clone(),
                    ),
                    None => Default::default(),
                };
                // Stored by the first save, with the initial messages.
                let synced = Synced {
                    revision: 0,
                    stored: 0,
                    last_id: None,
                    metadata,
                    running,
                    running_changed: false,
                    hooks,
                    lease,
                };
                (messages, synced)
            }
        };
        self.see(&synced.running, &synced.hooks);
        if memory.messages() != messages {
            memory.clear();
            memory.extend(messages);
        }
        *lock(metadata) = synced.metadata.clone();
        Ok(synced)
    }

    /// Saves what changed since `synced`: the messages memory gained (or, when memory was
    /// rewritten, all of them), the metadata, the running tools and the hooks' state, as
    /// `current` holds them. Does nothing when nothing changed. Compare-and-swap on
    /// `synced`'s revision: a concurrent writer's save makes this one fail with a conflict.
    pub(crate) async fn save(
        &self,
        synced: &mut Synced,
        current: &Current<'_>,
    ) -> Result<(), AgentError> {
        let Some(prepared) = self.prepare(synced, current) else {
            return Ok(());
        };
        let revision = self.save_change(&prepared.change).await?;
        self.advance(synced, &prepared, revision);
        Ok(())
    }

    /// Queues on `queue` what [`save`](Self::save) would write, with `synced` moved on as
    /// if it were stored (for [`Durability::Async`](super::Durability::Async): the queue's
    /// writer rebases the change on the revision actually stored).
    pub(crate) fn enqueue(&self, synced: &mut Synced, current: &Current<'_>, queue: &SaveQueue) {
        if let Some(prepared) = self.prepare(synced, current) {
            self.advance(synced, &prepared, prepared.change.revision());
            queue.push(prepared.change);
        }
    }

    /// The change from `synced` to `current` (memory, metadata, running tools and hooks'
    /// state); `None` when nothing changed.
    fn prepare(&self, synced: &mut Synced, current: &Current<'_>) -> Option<Prepared> {
        let Current {
            agent,
            memory,
            metadata,
            hooks,
        } = current;
        // Memory normally grows by appends: check that the last stored message is still
        // where it was, and send only what follows it.
        let (kept, appended) = match synced.stored {
            0 => (0, memory.messages()),
            stored => {
                let mut tail = memory.messages_from(stored - 1);
                let appended_only = tail
                    .first()
                    .is_some_and(|msg| Some(&msg.id) == synced.last_id.as_ref());
                if appended_only {
                    tail.remove(0);
                    (stored, tail)
                } else {
                    (0, memory.messages())
                }
            }
        };
        let metadata = lock(metadata).clone();
        // A stored result ends a running tool call.
        let before = synced.running.len();
        synced.running.retain(|id| {
            !appended
                .iter()
                .flat_map(Msg::tool_results)
                .any(|result| result.id == *id)
        });
        let running_changed = synced.running_changed || synced.running.len() != before;
        let hooks_changed = hooks.is_some_and(|hooks| *hooks != synced.hooks);
        let unchanged = !running_changed
            && !hooks_changed
            && metadata == synced.metadata
            && match synced.revision {
                // A fresh conversation is stored once it differs from where it starts.
                0 => self
                    .initial
                    .as_ref()
                    .map_or(appended.is_empty(), |initial| appended == initial.messages),
                _ => kept == synced.stored && appended.is_empty(),
            };
        if unchanged {
            return None;
        }
        let stored = kept + appended.len();
        let last_id = match appended.last() {
            Some(msg) => Some(msg.id.clone()),
            None if kept == 0 => None,
            None => synced.last_id.clone(),
        };
        let hooks = hooks.unwrap_or(&synced.hooks).clone();
        let mut change = StateChange::new(synced.revision, kept, appended, agent.clone())
            .with_metadata(metadata)
            .with_running_tools(synced.running.clone())
            .with_hooks(hooks);
        change.fence = synced.lease.as_ref().map(|lease| lease.fence().to_owned());
        Some(Prepared {
            change,
            stored,
            last_id,
        })
    }

    /// Moves `synced` on to the state `prepared` leaves, stored as `revision`.
    fn advance(&self, synced: &mut Synced, prepared: &Prepared, revision: u64) {
        synced.revision = revision;
        synced.stored = prepared.stored;
        synced.last_id.clone_from(&prepared.last_id);
        synced.metadata.clone_from(&prepared.change.metadata);
        synced.hooks.clone_from(&prepared.change.hooks);
        synced.running_changed = false;
        self.see(&synced.running, &synced.hooks);
    }

    /// Saves `change`. A save that failed with an I/O or backend error may still have been
    /// written (a lost acknowledgement, an error after a file's rename): the session is then
    /// loaded, and the change counts as saved if the stored state is what it produced, so a
    /// turn that is stored is never reported as failed (a caller retrying it would store it
    /// twice).
    pub(super) async fn save_change(&self, change: &StateChange) -> Result<u64, SessionError> {
        let error = match self.store.save(&self.id, change).await {
            Ok(revision) => return Ok(revision),
            Err(error @ (SessionError::Io { .. } | SessionError::Backend { .. })) => error,
            Err(error) => return Err(error),
        };
        match self.store.load(&self.id).await {
            Ok(Some(stored)) if change.is_applied_in(&stored) => {
                tracing::warn!(
                    session = %self.id,
                    %error,
                    "a save reported a failure, but the session holds what it wrote"
                );
                Ok(stored.revision)
            }
            _ => Err(error),
        }
    }

    /// Replaces the session's whole state with `state`'s messages, metadata, running tools
    /// and hooks' state, on top of whatever revision is stored (`load_state`: the caller
    /// means to overwrite), holding the session's lease meanwhile.
    pub(crate) async fn replace(
        &self,
        agent: AgentIdentity,
        state: &AgentState,
        interrupt: &CancellationToken,
    ) -> Result<(), AgentError> {
        let lease = self.store.lease(&self.id, interrupt).await?;
        let saved = async {
            let base = self
                .store
                .load(&self.id)
                .await?
                .map_or(0, |state| state.revision);
            let mut change = StateChange::new(base, 0, state.messages.clone(), agent)
                .with_metadata(state.metadata.clone())
                .with_running_tools(state.running_tools.clone())
                .with_hooks(state.hooks.clone());
            change.fence = lease.as_ref().map(|lease| lease.fence().to_owned());
            self.store.save(&self.id, &change).await
        }
        .await;
        release(lease).await;
        saved?;
        self.see(&state.running_tools, &state.hooks);
        Ok(())
    }

    /// Interrupts the call holding the session's lease, wherever it runs (see
    /// `SessionStore::interrupt`).
    pub(crate) async fn interrupt(&self) -> Result<bool, AgentError> {
        Ok(self.store.interrupt(&self.id).await?)
    }

    /// Ends a call's hold on the session: gives its lease back (see [`release`]).
    pub(crate) async fn release(&self, synced: Synced) {
        release(synced.lease).await;
    }
}

/// Checks that `state` can be loaded by an agent without a session: running tools and the
/// hooks' state live only in a session (an agent without one would run a started tool
/// again, and its hooks never see their state), so a state holding either is refused rather
/// than taken in part.
pub(crate) fn check_sessionless(state: &AgentState) -> Result<(), String> {
    if state.running_tools.is_empty() && state.hooks.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the state records running tools {:?} and hooks' state for {:?}, which only an agent \
         bound to a session keeps: bind one (`session(..)`), or clear `running_tools` and \
         `hooks` to drop them",
        state.running_tools,
        state.hooks.keys().collect::<Vec<_>>(),
    ))
}

/// Gives a lease back. A failure is logged, not returned: the call's work is stored
/// already, and a lease that could not be given back expires on its own.
async fn release(lease: Option<SessionLease>) {
    if let Some(lease) = lease
        && let Err(error) = lease.release().await
    {
        tracing::warn!(
            %error,
            "giving back a session lease failed; it expires after its time to live"
        );
    }
}
