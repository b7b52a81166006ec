//! [`HookState`]: what hooks keep with a session.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::HookError;

/// State hooks keep with the agent's session, as JSON by hook name: saved with the
/// conversation at every step and loaded with it, so it survives a restart and follows the
/// session to another process.
///
/// When the agent is bound to a session, every call's [extensions](crate::Extensions) hold
/// one, loaded from [`AgentState::hooks`](super::AgentState::hooks); a hook reads and writes
/// its entry (under its own name) at any event, and the engine saves a changed state at the
/// call's next step boundary. Without a session there is none: a hook that needs durability
/// keeps working in memory and says so.
///
/// ```
/// use agentscope_core::session::HookState;
/// use agentscope_core::{HookEvent, hook_fn};
///
/// let counter = hook_fn(|event| {
///     if let HookEvent::PreCall(e) = event
///         && let Some(state) = e.extensions_mut().get_mut::<HookState>()
///     {
///         let calls: u64 = state.get("call_counter")?.unwrap_or(0);
///         state.set("call_counter", &(calls + 1));
///     }
///     Ok(())
/// })
/// .with_name("call_counter");
/// # drop(counter);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookState {
    entries: Map<String, Value>,
}

impl HookState {
    /// The state stored as `entries` (from [`AgentState::hooks`](super::AgentState::hooks)).
    pub fn new(entries: Map<String, Value>) -> Self {
        Self { entries }
    }

    /// The entry of hook `name`, deserialised; `None` when there is none.
    ///
    /// # Errors
    ///
    /// The entry does not deserialise as `T` (written by another version of the hook, or
    /// edited by hand). A hook returns the error (`?`): the call fails before anything runs,
    /// and the entry stays stored as it is. Treating it as "nothing stored" would make the
    /// next save erase what the other version stored (a decision, a summary).
    pub fn get<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, HookError> {
        let Some(value) = self.entries.get(name) else {
            return Ok(None);
        };
        T::deserialize(value).map(Some).map_err(|error| {
            HookError::msg(format!(
                "the session's state of hook '{name}' cannot be read ({error}); it was \
                 written by another version of the hook or changed by hand, and is left \
                 as stored"
            ))
        })
    }

    /// The raw entry of hook `name`.
    pub fn get_value(&self, name: &str) -> Option<&Value> {
        self.entries.get(name)
    }

    /// Stores `value` as the entry of hook `name` (a value that does not serialise, which
    /// plain data never does, removes the entry).
    pub fn set<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) {
        match serde_json::to_value(value) {
            Ok(value) => {
                self.entries.insert(name.to_owned(), value);
            }
            Err(_) => {
                self.entries.remove(name);
            }
        }
    }

    /// Removes the entry of hook `name`; returns whether there was one.
    pub fn remove(&mut self, name: &str) -> bool {
        self.entries.remove(name).is_some()
    }

    /// All entries, by hook name.
    pub fn entries(&self) -> &Map<String, Value> {
        &self.entries
    }

    /// Takes the entries.
    pub fn into_entries(self) -> Map<String, Value> {
        self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_by_name() {
        let mut state = HookState::default();
        assert_eq!(state.get::<u32>("a").unwrap(), None);
        state.set("a", &vec![1, 2]);
        assert_eq!(state.get::<Vec<u32>>("a").unwrap(), Some(vec![1, 2]));
        let error = state.get::<String>("a").unwrap_err();
        assert_eq!(
            error.to_string(),
            "the session's state of hook 'a' cannot be read (invalid type: sequence, expected \
             a string); it was written by another version of the hook or changed by hand, and \
             is left as stored"
        );
        assert_eq!(state.get_value("a"), Some(&serde_json::json!([1, 2])));
        let copy = HookState::new(state.entries().clone());
        assert_eq!(copy, state);
        assert!(state.remove("a"));
        assert!(!state.remove("a"));
        assert!(state.into_entries().is_empty());
    }
}
