//! [`Run`]: one served run (an AG-UI run, an A2A task) as its session keeps it, and
//! [`Runs`]: a session's runs, kept in the session's hook state under [`Runs::ENTRY`].
//!
//! A run's record is written by the call that serves it, in the same compare-and-swap
//! saves, under the same lease and fence, as the conversation: its admission (the record
//! of what the run received, `working`) with the call's first save, its end (`completed`
//! with the reply, `input-required`, `canceled`, `failed`) with the call's last. So a
//! reader never sees a conversation and a run state that disagree.

use std::fmt;

use agentscope::session::HookState;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One served run of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Run {
    /// The run's id, as its protocol names it (an A2A task id, an AG-UI run id).
    pub id: String,
    /// The protocol that served it (`"a2a"`, `"agui"`).
    pub protocol: String,
    /// Where it stands.
    pub state: RunState,
    /// What it received and what it asked, in order.
    pub events: Vec<RunEvent>,
    /// The id of the conversation's last message when the run was admitted (`None`: the
    /// conversation was empty): the run's part of the conversation comes after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// When it was admitted.
    #[serde(with = "timestamp")]
    pub created: DateTime<Utc>,
    /// When its state last changed.
    #[serde(with = "timestamp")]
    pub updated: DateTime<Utc>,
}

impl Run {
    /// A run admitted now, `working`, having received `events`.
    pub fn new(
        id: impl Into<String>,
        protocol: impl Into<String>,
        after: Option<String>,
        events: Vec<RunEvent>,
    ) -> Self {
        let now = Utc::now();
        Self {
            id: id.into(),
            protocol: protocol.into(),
            state: RunState::Working,
            events,
            after,
            created: now,
            updated: now,
        }
    }

    /// Moves the run to `state` (now).
    pub fn set_state(&mut self, state: RunState) {
        self.state = state;
        self.updated = Utc::now();
    }

    /// Whether the run received the message `id`.
    pub fn received(&self, id: &str) -> bool {
        self.events
            .iter()
            .any(|event| matches!(event, RunEvent::Received { id: received, .. } if received == id))
    }

    /// The ids of the messages the run received, in order.
    pub fn received_ids(&self) -> impl Iterator<Item = &str> {
        self.events.iter().filter_map(|event| match event {
            RunEvent::Received { id, .. } => Some(id.as_str()),
            RunEvent::Asked { .. } => None,
        })
    }
}

/// What a run received or asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunEvent {
    /// A message the run received: a message of the conversation (`data` is `None`), or one
    /// the conversation does not keep (answers to questions), in its protocol's form.
    Received {
        /// The message's id.
        id: String,
        /// The message in its protocol's form, when the conversation does not keep it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Value>,
    },
    /// The run asked for answers about these tool calls (by id).
    Asked {
        /// Calls awaiting approval.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        approvals: Vec<String>,
        /// Calls in doubt.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        in_doubt: Vec<String>,
        /// What was wrong with the answer the run received, if it asked again.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        problem: Option<String>,
    },
}

/// Where a run stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum RunState {
    /// A call serves it.
    Working,
    /// It waits for answers: its last [`RunEvent::Asked`] says about what.
    InputRequired,
    /// Its call ended with a reply: the message `reply` of the conversation.
    Completed {
        /// The reply's message id.
        reply: String,
    },
    /// Its call was interrupted (the interrupt reply, when one was stored), or a client
    /// canceled it while it waited for answers.
    Canceled {
        /// The interrupt reply's message id, when the call stored one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply: Option<String>,
    },
    /// Its call failed: `reason` is what a client may read (never internal detail),
    /// `error_id` the correlation id under which the details were logged.
    Failed {
        /// What went wrong, for a client.
        reason: String,
        /// The id the server logged the details under.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_id: Option<String>,
    },
    /// It was not run: `reason` says why.
    Rejected {
        /// Why.
        reason: String,
    },
}

impl RunState {
    /// Whether the run can change no more.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            RunState::Completed { .. }
                | RunState::Canceled { .. }
                | RunState::Failed { .. }
                | RunState::Rejected { .. }
        )
    }

    /// The state's name: `working`, `input-required`, `completed`, `canceled`, `failed`,
    /// `rejected`.
    pub fn name(&self) -> &'static str {
        match self {
            RunState::Working => "working",
            RunState::InputRequired => "input-required",
            RunState::Completed { .. } => "completed",
            RunState::Canceled { .. } => "canceled",
            RunState::Failed { .. } => "failed",
            RunState::Rejected { .. } => "rejected",
        }
    }
}

impl fmt::Display for RunState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A session's served runs, oldest first: what the session keeps under [`Runs::ENTRY`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Runs {
    runs: Vec<Run>,
}

/// A session's runs cannot be read: another version wrote them, or they were edited by hand.
/// They are left as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableRuns(String);

impl fmt::Display for UnreadableRuns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnreadableRuns {}

impl Runs {
    /// The hook-state entry a session keeps its runs under.
    pub const ENTRY: &'static str = "served_runs";

    /// The runs `hooks` keeps (none when it keeps no entry).
    ///
    /// # Errors
    ///
    /// The entry does not read as runs; it stays as stored.
    pub fn read(hooks: &HookState) -> Result<Self, UnreadableRuns> {
        hooks
            .get::<Runs>(Self::ENTRY)
            .map(Option::unwrap_or_default)
            .map_err(|error| UnreadableRuns(error.to_string()))
    }

    /// Writes the runs into `hooks` (removing the entry when there are none).
    pub fn write(&self, hooks: &mut HookState) {
        if self.runs.is_empty() {
            hooks.remove(Self::ENTRY);
        } else {
            hooks.set(Self::ENTRY, self);
        }
    }

    /// The runs, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Run> {
        self.runs.iter()
    }

    /// How many runs there are.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The run `id`.
    pub fn get(&self, id: &str) -> Option<&Run> {
        self.runs.iter().find(|run| run.id == id)
    }

    /// The run `id`, to change.
    pub fn get_mut(&mut self, id: &str) -> Option<&mut Run> {
        self.runs.iter_mut().find(|run| run.id == id)
    }

    /// The run that received message `id`.
    pub fn by_message(&self, id: &str) -> Option<&Run> {
        self.runs.iter().rev().find(|run| run.received(id))
    }

    /// The run of `protocol` that waits for answers (the last one, if several do). A
    /// conversation served over two protocols has runs of each, and a client of one cannot
    /// answer on a run of the other.
    pub fn asking(&self, protocol: &str) -> Option<&Run> {
        self.runs
            .iter()
            .rev()
            .find(|run| run.protocol == protocol && run.state == RunState::InputRequired)
    }

    /// Runs that say a call serves them.
    pub fn working(&self) -> impl Iterator<Item = &Run> {
        self.runs
            .iter()
            .filter(|run| run.state == RunState::Working)
    }

    /// Adds `run`, or replaces the run of the same id.
    pub fn put(&mut self, run: Run) {
        match self.get_mut(&run.id) {
            Some(existing) => *existing = run,
            None => self.runs.push(run),
        }
    }

    /// Keeps only the runs `keep` accepts.
    pub fn retain(&mut self, keep: impl FnMut(&Run) -> bool) {
        self.runs.retain(keep);
    }
}

/// Timestamps as everything stored is written (RFC 3339, `Z`).
mod timestamp {
    use agentscope_core::rfc3339;
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(at: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        rfc3339::serialize(at, s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        DateTime::<Utc>::deserialize(d)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn runs_round_trip_through_the_hook_state_with_a_stable_shape() {
        let mut run = Run::new(
            "t1",
            "a2a",
            Some("m0".into()),
            vec![RunEvent::Received {
                id: "m1".into(),
                data: None,
            }],
        );
        run.created = "2026-12-07T10:00:00Z".parse().unwrap();
        run.updated = run.created;
        let mut runs = Runs::default();
        runs.put(run.clone());
        let mut hooks = HookState::default();
        runs.write(&mut hooks);
        assert_eq!(
            hooks.get_value(Runs::ENTRY).unwrap(),
            &json!({"runs": [{
                "id": "t1", "protocol": "a2a", "state": {"state": "working"},
                "events": [{"type": "received", "id": "m1"}], "after": "m0",
                "created": "2026-12-07T10:00:00Z", "updated": "2026-12-07T10:00:00Z"
            }]})
        );
        assert_eq!(Runs::read(&hooks).unwrap(), runs);
        assert_eq!(runs.by_message("m1").map(|r| r.id.as_str()), Some("t1"));
        assert!(runs.by_message("m2").is_none());

        run.set_state(RunState::Completed { reply: "r1".into() });
        runs.put(run);
        assert_eq!(runs.len(), 1);
        assert!(runs.get("t1").unwrap().state.is_terminal());
        runs.retain(|_| false);
        runs.write(&mut hooks);
        assert!(hooks.get_value(Runs::ENTRY).is_none());
    }

    #[test]
    fn an_entry_of_another_shape_is_reported_not_replaced() {
        let mut hooks = HookState::default();
        hooks.set(Runs::ENTRY, &json!({"runs": 7}));
        assert!(Runs::read(&hooks).is_err());
    }
}
