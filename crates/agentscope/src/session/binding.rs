//! [`SessionBinding`]: an agent bound to one session of a store (`builder.session(..)`).

use std::sync::Arc;

use agentscope_core::{AgentError, Memory, Msg};
use serde_json::{Map, Value};

use super::{AgentIdentity, AgentState, SessionStore};
use crate::runtime::lock;

/// The store and session id an agent is bound to, and what a session that does not exist
/// yet starts from.
pub(crate) struct SessionBinding {
    store: Arc<dyn SessionStore>,
    id: String,
    /// The builder's `.state(..)` (empty without one): the start of a fresh conversation.
    initial_messages: Vec<Msg>,
    initial_metadata: Map<String, Value>,
}

/// What the store held after a load: the save after the call compares against it.
pub(crate) struct Synced {
    messages: Vec<Msg>,
    metadata: Map<String, Value>,
}

impl SessionBinding {
    pub(crate) fn new(
        store: Arc<dyn SessionStore>,
        id: String,
        initial_messages: Vec<Msg>,
        initial_metadata: Map<String, Value>,
    ) -> Self {
        Self {
            store,
            id,
            initial_messages,
            initial_metadata,
        }
    }

    /// The session id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Loads the session into `memory` and `metadata` (a missing session is a fresh
    /// conversation: the initial state). On error nothing local changed.
    pub(crate) async fn load(
        &self,
        memory: &dyn Memory,
        metadata: &std::sync::Mutex<Map<String, Value>>,
    ) -> Result<Synced, AgentError> {
        let (messages, stored_metadata) = match self.store.load(&self.id).await? {
            Some(state) => {
                // Custom stores may hand over states `decode` never saw.
                state.check_for(&self.id)?;
                (state.messages, state.metadata)
            }
            None => (self.initial_messages.clone(), self.initial_metadata.clone()),
        };
        if memory.messages() != messages {
            memory.clear();
            memory.extend(messages.clone());
        }
        *lock(metadata) = stored_metadata.clone();
        Ok(Synced {
            messages,
            metadata: stored_metadata,
        })
    }

    /// Saves the agent's state when memory or metadata changed since `synced`.
    pub(crate) async fn save_if_changed(
        &self,
        agent: &AgentIdentity,
        memory: &dyn Memory,
        metadata: &std::sync::Mutex<Map<String, Value>>,
        synced: &Synced,
    ) -> Result<(), AgentError> {
        let messages = memory.messages();
        let metadata = lock(metadata).clone();
        if messages == synced.messages && metadata == synced.metadata {
            return Ok(());
        }
        self.save(agent.clone(), messages, metadata).await
    }

    /// Saves a state made of `messages` and `metadata`.
    pub(crate) async fn save(
        &self,
        agent: AgentIdentity,
        messages: Vec<Msg>,
        metadata: Map<String, Value>,
    ) -> Result<(), AgentError> {
        let state = AgentState::new(agent, messages).with_metadata(metadata);
        self.store.save(&self.id, &state).await?;
        Ok(())
    }
}
