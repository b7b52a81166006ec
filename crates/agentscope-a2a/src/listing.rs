//! `ListTasks`: the agent's tasks, most recently updated first (as the specification
//! requires), paged in the store.
//!
//! With a `contextId`, the tasks are the runs of one session: one load. Without one, the
//! contexts are read most recently saved first ([`SessionStore::list_recent`]), a few at a
//! time, and merged: a task's last update is never later than its session's last save, so a
//! task is returned once no session still unread can hold a later one. A page reads the
//! sessions saved since the page's cursor plus about one page of older ones, never every
//! task.
//!
//! `totalSize`: exact with a `contextId` and on the last page; on an earlier page, the
//! tasks returned so far plus this page plus one (a lower bound: counting every task means
//! reading every conversation).
//!
//! [`SessionStore::list_recent`]: agentscope::session::SessionStore::list_recent

use std::cmp::Ordering;

use a2a::{A2AError, ListTasksRequest, ListTasksResponse, Task};
use agentscope::session::SessionSummary;
use agentscope_serving::{Served, failure};
use chrono::{DateTime, Utc};

use crate::live::Live;
use crate::task::{self, PROTOCOL};

/// How many sessions a listing reads per request to the store.
const SESSIONS_PER_READ: usize = 16;

/// Where a page starts: after the task `(updated, id)`, `returned` tasks into the listing.
#[derive(Debug, Clone, PartialEq)]
struct Cursor {
    updated: DateTime<Utc>,
    id: String,
    returned: usize,
}

impl Cursor {
    /// `<microseconds>.<returned>.<task id>`.
    fn token(&self) -> String {
        format!(
            "{}.{}.{}",
            self.updated.timestamp_micros(),
            self.returned,
            self.id
        )
    }

    fn parse(token: &str) -> Option<Self> {
        let mut parts = token.splitn(3, '.');
        let micros = parts.next()?.parse::<i64>().ok()?;
        let returned = parts.next()?.parse::<usize>().ok()?;
        let id = parts.next()?.to_owned();
        Some(Self {
            updated: DateTime::from_timestamp_micros(micros)?,
            id,
            returned,
        })
    }
}

/// The listing's order: last update descending, then id ascending.
fn order(a: &Task, b: &Task) -> Ordering {
    updated(b).cmp(&updated(a)).then_with(|| a.id.cmp(&b.id))
}

fn updated(task: &Task) -> DateTime<Utc> {
    task.status.timestamp.unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// Whether `task` comes after `cursor` in the listing's order.
fn after(task: &Task, cursor: &Cursor) -> bool {
    let at = updated(task);
    at < cursor.updated || (at == cursor.updated && task.id > cursor.id)
}

/// One page of the tasks `req` asks for.
pub(crate) async fn list(
    served: &Served,
    live: &Live,
    req: &ListTasksRequest,
) -> Result<ListTasksResponse, A2AError> {
    let size = a2a_server::pagination::resolve_page_size(req.page_size);
    let cursor = match req.page_token.as_deref().filter(|t| !t.is_empty()) {
        Some(token) => Some(
            Cursor::parse(token).ok_or_else(|| A2AError::invalid_params("invalid page token"))?,
        ),
        None => None,
    };
    let wanted = |task: &Task| {
        req.status.as_ref().is_none_or(|s| *s == task.status.state)
            && req
                .status_timestamp_after
                .is_none_or(|after| task.status.timestamp.is_some_and(|at| at > after))
            && cursor.as_ref().is_none_or(|cursor| after(task, cursor))
    };
    let (mut tasks, complete) = match &req.context_id {
        Some(context) => {
            let mut tasks = Vec::new();
            if let Some(session) = served.checked_session_id(context) {
                tasks = context_tasks(served, live, context, &session).await?;
                tasks.retain(|task| wanted(task));
            }
            tasks.sort_by(order);
            (tasks, true)
        }
        None => merged(served, live, size + 1, &wanted).await?,
    };
    let returned_before = cursor.as_ref().map_or(0, |cursor| cursor.returned);
    // Complete: every remaining task is in `tasks`, so the count is exact.
    let total = if complete {
        returned_before + tasks.len()
    } else {
        returned_before + tasks.len().min(size) + 1
    };
    let more = tasks.len() > size;
    tasks.truncate(size);
    let next_page_token = match (more, tasks.last()) {
        (true, Some(last)) => Cursor {
            updated: updated(last),
            id: last.id.clone(),
            returned: returned_before + tasks.len(),
        }
        .token(),
        _ => String::new(),
    };
    if !req.include_artifacts.unwrap_or(false) {
        for task in &mut tasks {
            task.artifacts = None;
        }
    }
    for task in &mut tasks {
        task::limit_history(task, req.history_length);
    }
    Ok(ListTasksResponse {
        page_size: i32::try_from(tasks.len()).unwrap_or(i32::MAX),
        tasks,
        next_page_token,
        total_size: i32::try_from(total).unwrap_or(i32::MAX),
    })
}

/// The A2A tasks of one context (live ones as this instance sees them).
async fn context_tasks(
    served: &Served,
    live: &Live,
    context: &str,
    session: &str,
) -> Result<Vec<Task>, A2AError> {
    let stored = served
        .read(session)
        .await
        .map_err(|error| A2AError::internal(failure("Listing the tasks failed", &error).message))?;
    let Some(stored) = stored else {
        return Ok(Vec::new());
    };
    Ok(stored
        .runs
        .iter()
        .filter(|run| run.protocol == PROTOCOL)
        .map(|run| match live.get(&run.id) {
            Some(task) => task.view(),
            None => task::render(run, &stored.messages, context, session),
        })
        .collect())
}

/// At least `want` tasks `wanted` keeps, in the listing's order, merged from the contexts
/// most recently saved first; and whether every context was read.
async fn merged(
    served: &Served,
    live: &Live,
    want: usize,
    wanted: &impl Fn(&Task) -> bool,
) -> Result<(Vec<Task>, bool), A2AError> {
    let prefix = format!("{}.", served.name());
    let mut out: Vec<Task> = Vec::new();
    let mut candidates: Vec<Task> = Vec::new();
    let mut last: Option<SessionSummary> = None;
    loop {
        let page = served
            .store()
            .list_recent(&prefix, last.as_ref(), SESSIONS_PER_READ)
            .await
            .map_err(|error| {
                A2AError::internal(failure("Listing the tasks failed", &error).message)
            })?;
        let exhausted = page.len() < SESSIONS_PER_READ;
        for summary in &page {
            let Some(context) = summary.id.strip_prefix(&prefix) else {
                continue;
            };
            let tasks = context_tasks(served, live, context, &summary.id).await?;
            candidates.extend(tasks.into_iter().filter(|task| wanted(task)));
        }
        last = page.last().cloned().or(last);
        candidates.sort_by(order);
        // A session not read yet holds no task updated after its last save, so every
        // candidate updated after the last session read's save comes before them.
        let bound = if exhausted {
            None
        } else {
            last.as_ref().map(|summary| summary.saved_at)
        };
        let ready = candidates
            .iter()
            .take_while(|task| bound.is_none_or(|bound| updated(task) > bound))
            .count();
        out.extend(candidates.drain(..ready));
        if out.len() >= want || exhausted {
            out.extend(candidates);
            out.sort_by(order);
            return Ok((out, exhausted));
        }
    }
}
