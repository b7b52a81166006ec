//! The stores the tests use: a JSON file store in a temporary directory, a wrapper that
//! records every change it is asked to save, and an agent bound to a session of a store.

use std::sync::{Arc, Mutex};

use agentscope::CancellationToken;
use agentscope::prelude::*;
use agentscope::session::{
    AgentState, JsonFileSessionStore, SessionError, SessionLease, SessionStore, StateChange,
};
use agentscope_test::ScriptedModel;
use futures::future::BoxFuture;
use tempfile::TempDir;

/// A JSON file store in a new temporary directory (kept while the `TempDir` lives).
pub(crate) fn temp_store() -> (TempDir, JsonFileSessionStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonFileSessionStore::new(dir.path().join("sessions"));
    (dir, store)
}

/// An agent playing `model`, bound to the session `id` of `store`.
pub(crate) fn bound_agent(model: ScriptedModel, store: impl SessionStore, id: &str) -> ReActAgent {
    ReActAgent::builder()
        .model(model)
        .session(store, id)
        .build()
        .unwrap()
}

/// Forwards to the JSON file store, its leases included (`leases`) or not (a store without
/// leases, whose concurrent writers meet as conflicts), and records the changes saved.
#[derive(Clone)]
pub(crate) struct Recording {
    pub(crate) files: JsonFileSessionStore,
    pub(crate) leases: bool,
    pub(crate) changes: Arc<Mutex<Vec<StateChange>>>,
}

impl Recording {
    /// Records the changes saved to `files`, with or without its leases.
    pub(crate) fn new(files: JsonFileSessionStore, leases: bool) -> Self {
        Self {
            files,
            leases,
            changes: Arc::default(),
        }
    }
}

impl SessionStore for Recording {
    fn save<'a>(
        &'a self,
        session: &'a str,
        change: &'a StateChange,
    ) -> BoxFuture<'a, Result<u64, SessionError>> {
        self.changes.lock().unwrap().push(change.clone());
        self.files.save(session, change)
    }

    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentState>, SessionError>> {
        self.files.load(session)
    }

    fn delete<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, SessionError>> {
        self.files.delete(session)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<String>, SessionError>> {
        self.files.list()
    }

    fn lease<'a>(
        &'a self,
        session: &'a str,
        interrupt: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Option<SessionLease>, SessionError>> {
        if self.leases {
            self.files.lease(session, interrupt)
        } else {
            Box::pin(async { Ok(None) })
        }
    }
}
