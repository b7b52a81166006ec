//! The SDK's [`TaskStore`] over the configured [`SessionStore`]: each task is a session of
//! its own (`a2a-task.<agent>.<task id>`, the task's JSON in the state's metadata), so a
//! task outlives the process and any instance sharing the store can answer for it.
//!
//! Writes: a change of state or of history is saved at once (compare-and-swap on the
//! session's revision); what changes within a state (the status message of each streamed
//! token, artifact chunks) is kept in memory until the next state change, so a streamed
//! reply costs one write per state, not one per token. A terminal state is final: a later
//! write of another state is ignored.
//!
//! A task read from the store that says it is running while no call holds its context's
//! session (the process running it ended) is stored and reported `failed`, saying so.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use a2a::{
    A2AError, ListTasksRequest, ListTasksResponse, Message, Part, Role, Task, TaskState, TaskStatus,
};
use a2a_server::TaskStore;
use a2a_server::task_store::TaskVersion;
use agentscope::CancellationToken;
use agentscope::session::{AgentIdentity, AgentState, SessionError, SessionStore, StateChange};
use serde_json::Map;

/// The metadata key holding a task's JSON.
const TASK_KEY: &str = "a2a_task";
/// How long after its last state change a running task is trusted without a call holding
/// its session (the task is stored `working` just before its call takes the lease).
const ORPHAN_GRACE: chrono::TimeDelta = chrono::TimeDelta::seconds(10);
/// The most tasks a page of `ListTasks` holds when the request names no size.
const DEFAULT_PAGE_SIZE: usize = 50;

/// Clones share the tasks this process writes (the request handler and the follower of
/// tasks running elsewhere hold one each).
#[derive(Clone)]
pub(crate) struct SessionTaskStore {
    store: Arc<dyn SessionStore>,
    /// `a2a-task.<agent>.`
    prefix: Arc<str>,
    agent: Arc<str>,
    /// Tasks this process writes, with the revision and what was last saved.
    live: Arc<Mutex<HashMap<String, Live>>>,
}

#[derive(Clone)]
struct Live {
    task: Task,
    revision: u64,
    saved_state: TaskState,
    saved_history: usize,
}

impl SessionTaskStore {
    pub(crate) fn new(store: Arc<dyn SessionStore>, agent: &str) -> Self {
        Self {
            store,
            prefix: Arc::from(format!("a2a-task.{agent}.")),
            agent: Arc::from(agent),
            live: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn session(&self, task_id: &str) -> String {
        format!("{}{task_id}", &*self.prefix)
    }

    fn cached(&self, task_id: &str) -> Option<Live> {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(task_id)
            .cloned()
    }

    fn remember(&self, live: Live) {
        let mut map = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        if live.task.status.state.is_terminal() {
            map.remove(&live.task.id);
        } else {
            map.insert(live.task.id.clone(), live);
        }
    }

    /// The stored task and its revision.
    async fn load(&self, task_id: &str) -> Result<Option<(Task, u64)>, A2AError> {
        let session = self.session(task_id);
        let Some(state) = self.store.load(&session).await.map_err(store_error)? else {
            return Ok(None);
        };
        let task = state
            .metadata
            .get(TASK_KEY)
            .cloned()
            .map(serde_json::from_value::<Task>)
            .transpose()
            .map_err(|err| {
                tracing::error!(session, error = %err, "an A2A task record cannot be read");
                A2AError::internal("a stored task cannot be read")
            })?;
        Ok(task.map(|task| (task, state.revision)))
    }

    /// Saves `task` over revision `base`; returns the new revision.
    async fn save(&self, task: &Task, base: u64) -> Result<u64, A2AError> {
        self.try_save(task, base).await?.map_err(store_error)
    }

    /// [`save`](Self::save), with the store's own error inside (for a caller that handles
    /// a conflict).
    async fn try_save(
        &self,
        task: &Task,
        base: u64,
    ) -> Result<Result<u64, SessionError>, A2AError> {
        let value = serde_json::to_value(task).map_err(|err| {
            tracing::error!(error = %err, "an A2A task cannot be serialised");
            A2AError::internal("the task cannot be stored")
        })?;
        let mut metadata = Map::new();
        metadata.insert(TASK_KEY.to_owned(), value);
        let mut state = AgentState::new(AgentIdentity::new(&*self.agent, "a2a"), Vec::new());
        state.revision = base;
        let change = StateChange::replace(&state).with_metadata(metadata);
        Ok(self.store.save(&self.session(&task.id), &change).await)
    }

    /// The task as this process knows it: its cached copy, else the stored one, reported
    /// failed when no call runs it any more.
    async fn current(&self, task_id: &str) -> Result<Option<Live>, A2AError> {
        if let Some(live) = self.cached(task_id) {
            return Ok(Some(live));
        }
        self.stored_live(task_id).await
    }

    /// The task as the store has it (what another instance wrote), reported failed when
    /// no call runs it any more.
    pub(crate) async fn stored(&self, task_id: &str) -> Result<Option<Task>, A2AError> {
        Ok(self.stored_live(task_id).await?.map(|live| live.task))
    }

    async fn stored_live(&self, task_id: &str) -> Result<Option<Live>, A2AError> {
        let Some((task, revision)) = self.load(task_id).await? else {
            return Ok(None);
        };
        let live = Live {
            saved_state: task.status.state.clone(),
            saved_history: history_len(&task),
            task,
            revision,
        };
        if self.orphaned(&live.task).await {
            return self.fail_orphan(live).await.map(Some);
        }
        Ok(Some(live))
    }

    /// Whether `task` (not written by this process) says it is running while no call holds
    /// its context's session: the process that ran it ended. Past a short grace after its
    /// last state change (a task is stored `working` just before its call takes the lease),
    /// and only with a store that leases sessions; a store that does not cannot tell.
    async fn orphaned(&self, task: &Task) -> bool {
        if !matches!(task.status.state, TaskState::Submitted | TaskState::Working) {
            return false;
        }
        let settled = task
            .status
            .timestamp
            .is_none_or(|at| chrono::Utc::now() - at > ORPHAN_GRACE);
        if !settled {
            return false;
        }
        let session = format!("{}.{}", &*self.agent, task.context_id);
        match self.store.lease(&session, &CancellationToken::new()).await {
            Ok(Some(lease)) => {
                if let Err(error) = lease.release().await {
                    tracing::warn!(%error, "giving back a probed session lease failed");
                }
                true
            }
            Ok(None) | Err(_) => false,
        }
    }

    /// Stores `live`'s task as failed, saying why; a task another writer moved on meanwhile
    /// is returned as that writer left it.
    async fn fail_orphan(&self, live: Live) -> Result<Live, A2AError> {
        let mut task = live.task;
        let mut message = Message::new(
            Role::Agent,
            vec![Part::text(
                "The task's call stopped before it finished: the process running it ended.",
            )],
        );
        message.task_id = Some(task.id.clone());
        message.context_id = Some(task.context_id.clone());
        task.status = TaskStatus {
            state: TaskState::Failed,
            message: Some(message),
            timestamp: Some(chrono::Utc::now()),
        };
        keep_final_message(&mut task);
        match self.save(&task, live.revision).await {
            Ok(revision) => Ok(Live {
                saved_state: TaskState::Failed,
                saved_history: history_len(&task),
                task,
                revision,
            }),
            Err(_) => match self.load(&task.id).await? {
                Some((task, revision)) => Ok(Live {
                    saved_state: task.status.state.clone(),
                    saved_history: history_len(&task),
                    task,
                    revision,
                }),
                None => Err(A2AError::task_not_found(&task.id)),
            },
        }
    }
}

fn history_len(task: &Task) -> usize {
    task.history.as_ref().map_or(0, Vec::len)
}

/// A store failure as the client sees it: no detail of the store (it is logged).
fn store_error(error: SessionError) -> A2AError {
    tracing::error!(%error, "the session store failed for an A2A task");
    A2AError::internal("the task store is not available")
}

/// A status message that ends a turn (a terminal state or a question) joins the history,
/// once, as the A2A SDKs keep the conversation of a task.
fn keep_final_message(task: &mut Task) {
    let ends_turn =
        task.status.state.is_terminal() || task.status.state == TaskState::InputRequired;
    let Some(message) = task.status.message.as_ref().filter(|_| ends_turn) else {
        return;
    };
    let history = task.history.get_or_insert_with(Vec::new);
    if !history.iter().any(|m| m.message_id == message.message_id) {
        history.push(message.clone());
    }
}

#[async_trait::async_trait]
impl TaskStore for SessionTaskStore {
    async fn create(&self, task: Task) -> Result<TaskVersion, A2AError> {
        let revision = self.save(&task, 0).await?;
        self.remember(Live {
            saved_state: task.status.state.clone(),
            saved_history: history_len(&task),
            task,
            revision,
        });
        Ok(revision)
    }

    async fn update(&self, mut task: Task) -> Result<TaskVersion, A2AError> {
        keep_final_message(&mut task);
        // The common case, once per streamed event: a task this process writes, whose state
        // and history did not change. It replaces the kept task in place: nothing is
        // stored, nothing copied.
        let task = {
            let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            match live.get_mut(&task.id) {
                Some(current) if current.saved_state.is_terminal() => return Ok(current.revision),
                Some(current)
                    if task.status.state == current.saved_state
                        && history_len(&task) == current.saved_history =>
                {
                    current.task = task;
                    return Ok(current.revision);
                }
                _ => task,
            }
        };
        let Some(current) = self.current(&task.id).await? else {
            return Err(A2AError::task_not_found(&task.id));
        };
        if current.saved_state.is_terminal() {
            return Ok(current.revision);
        }
        let changed =
            task.status.state != current.saved_state || history_len(&task) != current.saved_history;
        let revision = if changed {
            match self.try_save(&task, current.revision).await? {
                Ok(revision) => revision,
                // Another instance wrote the task meanwhile: a `CancelTask` served there.
                // Its terminal state is final; anything else is a real conflict.
                Err(SessionError::Conflict { .. }) => match self.load(&task.id).await? {
                    Some((stored, revision)) if stored.status.state.is_terminal() => {
                        self.remember(Live {
                            saved_state: stored.status.state.clone(),
                            saved_history: history_len(&stored),
                            task: stored,
                            revision,
                        });
                        return Ok(revision);
                    }
                    _ => return Err(A2AError::internal("the task was changed elsewhere")),
                },
                Err(error) => return Err(store_error(error)),
            }
        } else {
            current.revision
        };
        let (saved_state, saved_history) = if changed {
            (task.status.state.clone(), history_len(&task))
        } else {
            (current.saved_state, current.saved_history)
        };
        self.remember(Live {
            task,
            revision,
            saved_state,
            saved_history,
        });
        Ok(revision)
    }

    async fn get(&self, task_id: &str) -> Result<Option<Task>, A2AError> {
        Ok(self.current(task_id).await?.map(|live| live.task))
    }

    async fn list(&self, req: &ListTasksRequest) -> Result<ListTasksResponse, A2AError> {
        let sessions = self.store.list().await.map_err(store_error)?;
        let mut tasks = Vec::new();
        for session in sessions {
            let Some(task_id) = session.strip_prefix(&*self.prefix) else {
                continue;
            };
            let Some(live) = self.current(task_id).await? else {
                continue;
            };
            let task = live.task;
            let wanted = req
                .context_id
                .as_ref()
                .is_none_or(|c| *c == task.context_id)
                && req.status.as_ref().is_none_or(|s| *s == task.status.state)
                && req
                    .status_timestamp_after
                    .is_none_or(|after| task.status.timestamp.is_some_and(|at| at > after));
            if wanted {
                tasks.push(task);
            }
        }
        // Newest status first; ties by id, so pages are stable.
        tasks.sort_by(|a, b| {
            b.status
                .timestamp
                .cmp(&a.status.timestamp)
                .then_with(|| a.id.cmp(&b.id))
        });
        let total = tasks.len();
        let start = match req.page_token.as_deref().filter(|t| !t.is_empty()) {
            Some(token) => token
                .parse::<usize>()
                .map_err(|_| A2AError::invalid_params("invalid page token"))?,
            None => 0,
        }
        .min(total);
        let size = req
            .page_size
            .and_then(|size| usize::try_from(size).ok())
            .filter(|size| *size > 0)
            .unwrap_or(DEFAULT_PAGE_SIZE);
        let end = start.saturating_add(size).min(total);
        let mut page: Vec<Task> = tasks.drain(start..end).collect();
        if !req.include_artifacts.unwrap_or(false) {
            for task in &mut page {
                task.artifacts = None;
            }
        }
        Ok(ListTasksResponse {
            page_size: i32::try_from(page.len()).unwrap_or(i32::MAX),
            tasks: page,
            next_page_token: if end < total {
                end.to_string()
            } else {
                String::new()
            },
            total_size: i32::try_from(total).unwrap_or(i32::MAX),
        })
    }

    async fn begin_cancel(&self, task_id: &str) -> Result<Task, A2AError> {
        let Some(current) = self.current(task_id).await? else {
            return Err(A2AError::task_not_found(task_id));
        };
        if current.saved_state.is_terminal() || current.task.status.state.is_terminal() {
            return Err(A2AError::task_not_cancelable(task_id));
        }
        let mut task = current.task;
        task.status = TaskStatus {
            state: TaskState::Canceled,
            message: None,
            timestamp: Some(chrono::Utc::now()),
        };
        let revision = self.save(&task, current.revision).await?;
        self.remember(Live {
            saved_state: TaskState::Canceled,
            saved_history: history_len(&task),
            task: task.clone(),
            revision,
        });
        Ok(task)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use agentscope::session::JsonFileSessionStore;

    fn task(state: TaskState, seconds_ago: i64) -> Task {
        Task {
            id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus {
                state,
                message: None,
                timestamp: Some(chrono::Utc::now() - chrono::TimeDelta::seconds(seconds_ago)),
            },
            artifacts: None,
            history: Some(vec![Message::new(Role::User, vec![Part::text("Hi")])]),
            metadata: None,
        }
    }

    /// A store holding task `t1`, written `working` `seconds_ago` by a process that is gone.
    async fn left_working(seconds_ago: i64) -> (tempfile::TempDir, Arc<dyn SessionStore>) {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn SessionStore> = Arc::new(JsonFileSessionStore::new(dir.path()));
        let writer = SessionTaskStore::new(Arc::clone(&store), "assistant");
        writer
            .create(task(TaskState::Submitted, seconds_ago))
            .await
            .unwrap();
        writer
            .update(task(TaskState::Working, seconds_ago))
            .await
            .unwrap();
        (dir, store)
    }

    fn texts(task: &Task) -> Vec<String> {
        task.history
            .iter()
            .flatten()
            .map(|m| m.text().unwrap_or_default().to_owned())
            .collect()
    }

    /// The task as stored (not as kept in memory) and its revision.
    async fn stored_task(store: &Arc<dyn SessionStore>) -> (Task, u64) {
        let state = store.load("a2a-task.assistant.t1").await.unwrap().unwrap();
        let task = serde_json::from_value(state.metadata[TASK_KEY].clone()).unwrap();
        (task, state.revision)
    }

    fn with_status_text(mut task: Task, text: &str) -> Task {
        task.status.message = Some(Message::new(Role::Agent, vec![Part::text(text)]));
        task
    }

    #[tokio::test]
    async fn updates_within_a_state_are_kept_in_memory_and_a_state_change_is_stored() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn SessionStore> = Arc::new(JsonFileSessionStore::new(dir.path()));
        let tasks = SessionTaskStore::new(Arc::clone(&store), "assistant");
        let created = tasks.create(task(TaskState::Submitted, 0)).await.unwrap();
        let working = tasks.update(task(TaskState::Working, 0)).await.unwrap();
        assert_eq!((created, working), (1, 2));
        let (stored, revision) = stored_task(&store).await;
        assert_eq!((stored.status.state, revision), (TaskState::Working, 2));

        // Two streamed updates of the same state: served from memory, the store untouched.
        for text in ["Hel", "Hello"] {
            let update = with_status_text(task(TaskState::Working, 0), text);
            assert_eq!(tasks.update(update.clone()).await.unwrap(), 2);
            assert_eq!(tasks.get("t1").await.unwrap().unwrap(), update);
        }
        let (stored, revision) = stored_task(&store).await;
        assert_eq!(revision, 2);
        assert_eq!(stored.status.message, None);

        // The state changes: stored, the final message joining the history (once).
        let done = with_status_text(task(TaskState::Completed, 0), "Hello!");
        assert_eq!(tasks.update(done.clone()).await.unwrap(), 3);
        let (stored, revision) = stored_task(&store).await;
        assert_eq!(revision, 3);
        assert_eq!(stored.status, done.status);
        assert_eq!(texts(&stored), ["Hi", "Hello!"]);
        // Terminal is final: a later update changes nothing.
        assert_eq!(tasks.update(task(TaskState::Working, 0)).await.unwrap(), 3);
        assert_eq!(tasks.get("t1").await.unwrap().unwrap(), stored);
    }

    #[tokio::test]
    async fn a_running_task_whose_call_is_gone_is_reported_failed_and_stored_so() {
        let (_dir, store) = left_working(60).await;
        let reader = SessionTaskStore::new(Arc::clone(&store), "assistant");
        let got = reader.get("t1").await.unwrap().unwrap();
        let reason = "The task's call stopped before it finished: the process running it ended.";
        assert_eq!(got.status.state, TaskState::Failed);
        assert_eq!(
            got.status.message.as_ref().and_then(Message::text),
            Some(reason)
        );
        assert_eq!(texts(&got), ["Hi", reason]);
        // Stored: another reader sees the same failed task, and a late write of the lost
        // call changes nothing.
        let again = SessionTaskStore::new(Arc::clone(&store), "assistant");
        assert_eq!(again.get("t1").await.unwrap().unwrap(), got);
        again.update(task(TaskState::Completed, 0)).await.unwrap();
        assert_eq!(again.get("t1").await.unwrap().unwrap(), got);
    }

    #[tokio::test]
    async fn a_running_task_whose_call_holds_the_session_stays_working() {
        let (_dir, store) = left_working(60).await;
        let lease = store
            .lease("assistant.c1", &CancellationToken::new())
            .await
            .unwrap()
            .unwrap();
        let reader = SessionTaskStore::new(Arc::clone(&store), "assistant");
        assert_eq!(
            reader.get("t1").await.unwrap().unwrap().status.state,
            TaskState::Working
        );
        lease.release().await.unwrap();
        assert_eq!(
            reader.get("t1").await.unwrap().unwrap().status.state,
            TaskState::Failed
        );
    }

    #[tokio::test]
    async fn a_task_just_stored_working_is_given_time_to_take_its_session() {
        let (_dir, store) = left_working(1).await;
        let reader = SessionTaskStore::new(Arc::clone(&store), "assistant");
        assert_eq!(
            reader.get("t1").await.unwrap().unwrap().status.state,
            TaskState::Working
        );
    }
}
