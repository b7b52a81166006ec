use std::sync::{Arc, Mutex, PoisonError};

use agentscope_core::{Hook, HookError, HookEvent, HookEventType, HookEventTypes};

/// A hook that records a copy of every event it sees, in order.
///
/// Cloning shares the record: keep one clone, give the other to the agent.
///
/// ```
/// use agentscope::{HookEventType, HookEventTypes};
/// use agentscope_test::RecordingHook;
///
/// let calls_only = RecordingHook::new(10)
///     .with_interests(HookEventType::PreCall | HookEventType::PostCall);
/// assert!(calls_only.types().is_empty());
/// ```
#[derive(Clone)]
pub struct RecordingHook {
    inner: Arc<Inner>,
}

struct Inner {
    priority: i32,
    interests: HookEventTypes,
    name: String,
    events: Mutex<Vec<HookEvent>>,
}

impl std::fmt::Debug for RecordingHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingHook")
            .field("name", &self.inner.name)
            .field("priority", &self.inner.priority)
            .field("interests", &self.inner.interests)
            .field("events", &self.types().len())
            .finish()
    }
}

impl RecordingHook {
    /// A hook with the given priority, interested in every event.
    pub fn new(priority: i32) -> Self {
        Self::build(
            priority,
            HookEventTypes::ALL,
            format!("recording@{priority}"),
        )
    }

    fn build(priority: i32, interests: HookEventTypes, name: String) -> Self {
        Self {
            inner: Arc::new(Inner {
                priority,
                interests,
                name,
                events: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The same hook receiving only `interests` (a new, empty record).
    #[must_use]
    pub fn with_interests(self, interests: impl Into<HookEventTypes>) -> Self {
        Self::build(
            self.inner.priority,
            interests.into(),
            self.inner.name.clone(),
        )
    }

    /// The same hook with another name (a new, empty record).
    #[must_use]
    pub fn with_name(self, name: impl Into<String>) -> Self {
        Self::build(self.inner.priority, self.inner.interests, name.into())
    }

    /// Copies of the events seen so far, as the hook saw them (after the hooks before it).
    pub fn events(&self) -> Vec<HookEvent> {
        self.lock().clone()
    }

    /// The kinds of the events seen so far.
    pub fn types(&self) -> Vec<HookEventType> {
        self.lock().iter().map(HookEvent::event_type).collect()
    }

    /// The kinds seen so far, skipping chunk events (useful when streaming is not the point).
    pub fn types_without_chunks(&self) -> Vec<HookEventType> {
        self.types()
            .into_iter()
            .filter(|kind| !HookEventTypes::CHUNKS.contains(*kind))
            .collect()
    }

    /// Forgets everything recorded.
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<HookEvent>> {
        self.inner
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Hook for RecordingHook {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        let copy = event.clone();
        self.lock().push(copy);
        Ok(())
    }

    fn priority(&self) -> i32 {
        self.inner.priority
    }

    fn interests(&self) -> HookEventTypes {
        self.inner.interests
    }

    fn name(&self) -> &str {
        &self.inner.name
    }
}
