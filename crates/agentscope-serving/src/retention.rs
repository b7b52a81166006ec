//! [`Retention`]: how long served runs are kept, and how many.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::record::{RunState, Runs};

/// How long a session keeps its served runs (AG-UI runs, A2A tasks), and how many: the
/// runs of a session are pruned whenever a call of the session stores them, so a session
/// never holds more than [`max_runs_per_session`](Self::max_runs_per_session) runs, nor a
/// run older than [`max_age`](Self::max_age) once it is touched again.
///
/// Only the runs' records go: the conversation they were part of stays (it is the
/// session's; delete the session to delete it). A run that is gone reads as unknown (A2A's
/// `TaskNotFoundError`).
///
/// ```
/// use std::time::Duration;
/// use agentscope_serving::Retention;
///
/// let retention = Retention::default()
///     .max_age(Duration::from_secs(24 * 3600))
///     .max_runs_per_session(20);
/// assert_eq!(retention.age(), Duration::from_secs(24 * 3600));
/// assert_eq!(Retention::default().runs_per_session(), 100);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    max_age: Duration,
    max_runs_per_session: usize,
}

impl Default for Retention {
    /// Runs are kept 30 days, at most 100 per session.
    fn default() -> Self {
        Self {
            max_age: Duration::from_secs(30 * 24 * 3600),
            max_runs_per_session: 100,
        }
    }
}

impl Retention {
    /// Runs whose state last changed longer ago than `age` are removed (default 30 days).
    #[must_use]
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }

    /// A session keeps at most `count` runs (at least 1; default 100): the oldest go first.
    #[must_use]
    pub fn max_runs_per_session(mut self, count: usize) -> Self {
        self.max_runs_per_session = count.max(1);
        self
    }

    /// How long runs are kept.
    pub fn age(&self) -> Duration {
        self.max_age
    }

    /// How many runs a session keeps at most.
    pub fn runs_per_session(&self) -> usize {
        self.max_runs_per_session
    }

    /// Removes from `runs` what this policy does not keep at `now`: runs older than the
    /// age, then the oldest beyond the count, never a working one (a call serves it).
    /// Returns how many went.
    pub fn prune(&self, runs: &mut Runs, now: DateTime<Utc>) -> usize {
        let before = runs.len();
        let max_age = chrono::TimeDelta::from_std(self.max_age).unwrap_or(chrono::TimeDelta::MAX);
        let oldest = now.checked_sub_signed(max_age);
        runs.retain(|run| {
            run.state == RunState::Working || oldest.is_none_or(|oldest| run.updated >= oldest)
        });
        let mut excess = runs.len().saturating_sub(self.max_runs_per_session);
        runs.retain(|run| {
            let drop = excess > 0 && run.state != RunState::Working;
            excess -= usize::from(drop);
            !drop
        });
        before - runs.len()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::record::Run;

    fn run(id: &str, days_ago: i64, state: RunState) -> Run {
        let mut run = Run::new(id, "a2a", None, Vec::new());
        run.state = state;
        run.updated = Utc::now() - chrono::TimeDelta::days(days_ago);
        run
    }

    #[test]
    fn old_runs_and_runs_beyond_the_count_go_oldest_first() {
        let done = || RunState::Completed { reply: "r".into() };
        let mut runs = Runs::default();
        runs.put(run("old", 40, done()));
        runs.put(run("old-working", 40, RunState::Working));
        runs.put(run("old-asking", 31, RunState::InputRequired));
        for id in ["a", "b", "c"] {
            runs.put(run(id, 1, done()));
        }
        let retention = Retention::default().max_runs_per_session(3);
        assert_eq!(retention.prune(&mut runs, Utc::now()), 3);
        let ids: Vec<&str> = runs.iter().map(|run| run.id.as_str()).collect();
        assert_eq!(ids, ["old-working", "b", "c"]);
        assert_eq!(
            Retention::default()
                .max_runs_per_session(0)
                .runs_per_session(),
            1
        );
    }
}
