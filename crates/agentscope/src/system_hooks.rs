//! [`SystemHooks`]: process-wide hooks every new agent starts with.

use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use agentscope_core::{Hook, HookChain, HookId, HookInfo};

static REGISTRY: LazyLock<Mutex<HookChain>> = LazyLock::new(|| Mutex::new(HookChain::new()));

/// Process-wide hooks, copied into each agent when it is built.
///
/// Use them for cross-cutting concerns (tracing, auditing) that every agent of a service
/// should have. Agents built before a change keep the hooks they were built with; inside an
/// agent, system hooks are registered after the builder's hooks (so among hooks of equal
/// priority the agent's own run first, as in AgentScope-Java, and as AgentScope Python runs
/// instance hooks before class hooks) and before hooks added later with
/// [`add_hook`](crate::ReActAgent::add_hook); they can be removed from that agent with
/// [`remove_hook`](crate::ReActAgent::remove_hook) using the same id.
///
/// ```
/// use agentscope::{hook_fn, SystemHooks};
///
/// let id = SystemHooks::add(hook_fn(|_| Ok(())).with_name("audit"));
/// assert!(SystemHooks::order().iter().any(|h| h.name == "audit"));
/// assert!(SystemHooks::remove(id));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SystemHooks;

impl SystemHooks {
    /// Registers a hook for every agent built from now on.
    pub fn add(hook: impl Hook) -> HookId {
        lock().push(hook)
    }

    /// Unregisters a hook; returns whether it was registered. Agents already built keep it.
    pub fn remove(id: HookId) -> bool {
        lock().remove(id)
    }

    /// Unregisters every system hook.
    pub fn clear() {
        lock().clear();
    }

    /// Changes the system hooks with any [`HookChain`] operation (remove by name, by event
    /// kind, stop one kind: see [`ReActAgent::edit_hooks`](crate::ReActAgent::edit_hooks)),
    /// for agents built from now on. Returns what `edit` returns.
    ///
    /// ```
    /// use agentscope::{hook_fn, SystemHooks};
    ///
    /// SystemHooks::add(hook_fn(|_| Ok(())).with_name("edit-doc-audit"));
    /// assert_eq!(SystemHooks::edit(|hooks| hooks.remove_named("edit-doc-audit")), 1);
    /// ```
    pub fn edit<R>(edit: impl FnOnce(&mut HookChain) -> R) -> R {
        edit(&mut lock())
    }

    /// The system hooks in execution order.
    pub fn order() -> Vec<HookInfo> {
        lock().order()
    }

    pub(crate) fn snapshot() -> HookChain {
        lock().clone()
    }
}

fn lock() -> MutexGuard<'static, HookChain> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}
