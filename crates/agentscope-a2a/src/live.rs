//! The tasks this instance runs now, live: each task's current view and a broadcast of its
//! updates, for the request that started it and for `SubscribeToTask` on this instance.
//! An entry lives while its task's call runs (bounded by the calls this instance runs).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use a2a::{StreamResponse, Task};
use tokio::sync::broadcast;

/// How many updates a subscriber may fall behind before it is dropped (with an error).
const CAPACITY: usize = 64;

/// The live tasks, by id.
#[derive(Default)]
pub(crate) struct Live {
    tasks: Mutex<HashMap<String, Arc<LiveTask>>>,
}

impl Live {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<LiveTask>>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts following task `task` (as it stands: `view`).
    pub(crate) fn open(&self, view: Task) -> Arc<LiveTask> {
        let (sender, _) = broadcast::channel(CAPACITY);
        let task = Arc::new(LiveTask {
            state: Mutex::new(State {
                view,
                sender: Some(sender),
            }),
        });
        self.lock()
            .insert(task.view().id.clone(), Arc::clone(&task));
        task
    }

    /// The live task `id`, while its call runs.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<LiveTask>> {
        self.lock().get(id).cloned()
    }

    /// Task `task` has ended: its last view is `view`; subscribers' streams end.
    pub(crate) fn close(&self, task: &LiveTask, view: Task) {
        self.lock().remove(&view.id);
        let mut state = task.lock();
        state.view = view;
        state.sender = None;
    }
}

/// One live task.
pub(crate) struct LiveTask {
    state: Mutex<State>,
}

struct State {
    view: Task,
    /// `None` once the task's call ended.
    sender: Option<broadcast::Sender<StreamResponse>>,
}

impl LiveTask {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The task as it stands.
    pub(crate) fn view(&self) -> Task {
        self.lock().view.clone()
    }

    /// The task as it stands and its updates from now on (`None` once it has ended): no
    /// update is missed or seen twice.
    pub(crate) fn subscribe(&self) -> (Task, Option<broadcast::Receiver<StreamResponse>>) {
        let state = self.lock();
        (
            state.view.clone(),
            state.sender.as_ref().map(broadcast::Sender::subscribe),
        )
    }

    /// Applies `update` to the view and sends it to the subscribers.
    pub(crate) fn publish(&self, update: StreamResponse) {
        let mut state = self.lock();
        apply(&mut state.view, &update);
        if let Some(sender) = &state.sender
            && sender.receiver_count() > 0
        {
            let _ = sender.send(update);
        }
    }
}

/// `task` after `update`: a status replaces the status, an artifact joins (or replaces the
/// one of its id).
pub(crate) fn apply(task: &mut Task, update: &StreamResponse) {
    match update {
        StreamResponse::StatusUpdate(update) => task.status = update.status.clone(),
        StreamResponse::ArtifactUpdate(update) => {
            let artifacts = task.artifacts.get_or_insert_with(Vec::new);
            match artifacts
                .iter_mut()
                .find(|a| a.artifact_id == update.artifact.artifact_id)
            {
                Some(artifact) => *artifact = update.artifact.clone(),
                None => artifacts.push(update.artifact.clone()),
            }
        }
        StreamResponse::Task(new) => *task = new.clone(),
        StreamResponse::Message(_) => {}
    }
}
