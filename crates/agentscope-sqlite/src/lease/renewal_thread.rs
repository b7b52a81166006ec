//! [`Keeper`]: the leases a store holds, and the thread that renews them (see the crate
//! docs, "Leases and interrupts").
//!
//! While the store holds a lease, a thread of its own, on a connection of its own:
//!
//! - renews each lease every third of its time to live (the leases due in one
//!   transaction);
//! - stops the call of a lease that another call took (lost), or that could not be renewed
//!   before it would have expired ([`RenewalDeadline`]), cancelling its interrupt token and
//!   logging it once; a statement never waits for another process's lock beyond the
//!   earliest such expiry;
//! - polls the interrupt marks every [`INTERRUPT_POLL`] and cancels the calls whose lease
//!   another process (or store) marked;
//! - gives back the leases of dropped calls.
//!
//! It works the same inside a tokio runtime and without one, and ends when the store holds
//! no lease (the next lease starts it again).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use agentscope_core::CancellationToken;
use agentscope_core::session::{RenewalDeadline, Renewed, SessionError};
use rusqlite::Connection;

use super::rows;
use crate::{INTERRUPT_POLL, db};

/// The leases of one store, and the state its keeper thread shares with it.
pub(crate) struct Keeper {
    path: PathBuf,
    busy_timeout: Duration,
    ttl: Duration,
    state: Mutex<State>,
    /// Signalled when a lease is added or a dropped one is to be given back.
    wake: Condvar,
}

#[derive(Default)]
struct State {
    /// The leases held, by token.
    held: HashMap<String, Held>,
    /// Leases of dropped calls to give back, by token: the session id, and whether a
    /// round is giving it back now. Kept until that round is done, so that a new lease on
    /// the session deletes them first (see [`Keeper::dropped_on`]).
    dropped: HashMap<String, (String, bool)>,
    /// Whether the keeper thread runs.
    running: bool,
}

/// A lease the store holds for a call.
struct Held {
    session: String,
    interrupt: CancellationToken,
    deadline: RenewalDeadline,
    next_renewal: Instant,
    /// Another call took the session: no more renewing.
    lost: bool,
}

/// One round of the keeper's work, taken from the state under its lock and done without
/// it.
struct Round {
    give_back: Vec<(String, String)>,
    /// The leases to renew: (session id, token).
    renew: Vec<(String, String)>,
    poll: bool,
    /// How long a statement of the round may wait for another process's lock.
    wait: Duration,
}

fn lock(mutex: &Mutex<State>) -> MutexGuard<'_, State> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Keeper {
    /// The leases of the store on database `path`, living `ttl`.
    pub(crate) fn new(path: PathBuf, busy_timeout: Duration, ttl: Duration) -> Arc<Self> {
        Arc::new(Self {
            path,
            busy_timeout,
            ttl,
            state: Mutex::default(),
            wake: Condvar::new(),
        })
    }

    /// How long a lease lives without renewal.
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Keeps lease `token` on session `session`, taken by a request sent at `sent`, for the
    /// call that `interrupt` stops.
    ///
    /// # Errors
    ///
    /// The keeper thread could not be started (the lease is then not kept).
    pub(crate) fn hold(
        self: &Arc<Self>,
        session: &str,
        token: &str,
        interrupt: &CancellationToken,
        sent: Instant,
    ) -> Result<(), SessionError> {
        let deadline = RenewalDeadline::new(self.ttl, sent);
        let mut state = lock(&self.state);
        state.held.insert(
            token.to_owned(),
            Held {
                session: session.to_owned(),
                interrupt: interrupt.clone(),
                next_renewal: deadline.next_renewal(sent),
                deadline,
                lost: false,
            },
        );
        if let Err(error) = self.start(&mut state) {
            state.held.remove(token);
            return Err(SessionError::backend(
                Some(session),
                "starting the thread that renews leases",
                error,
            ));
        }
        Ok(())
    }

    /// Stops keeping lease `token` (its call is giving it back).
    pub(crate) fn forget(&self, token: &str) {
        lock(&self.state).held.remove(token);
    }

    /// Stops keeping lease `token` on session `session`, whose call was dropped, and gives
    /// it back in the background (if that fails, it expires).
    pub(crate) fn give_back(self: &Arc<Self>, session: String, token: String) {
        let mut state = lock(&self.state);
        state.held.remove(&token);
        state.dropped.insert(token, (session, false));
        if let Err(error) = self.start(&mut state) {
            tracing::debug!(
                target: "agentscope_sqlite",
                %error,
                "giving back the lease of a dropped call failed; it expires"
            );
        }
    }

    /// The tokens of the leases of dropped calls on session `session` not given back yet:
    /// a new lease of this store deletes them as it takes the session, so a call dropped
    /// a moment ago does not make the next one busy.
    pub(crate) fn dropped_on(&self, session: &str) -> Vec<String> {
        lock(&self.state)
            .dropped
            .iter()
            .filter(|(_, (dropped, _))| dropped == session)
            .map(|(token, _)| token.clone())
            .collect()
    }

    /// Cancels the calls of this store that hold session `session`'s lease; returns
    /// whether there is one.
    pub(crate) fn interrupt(&self, session: &str) -> bool {
        let state = lock(&self.state);
        let mut found = false;
        for held in state.held.values().filter(|held| held.session == session) {
            held.interrupt.cancel();
            found = true;
        }
        found
    }

    /// Wakes the keeper thread, or starts it.
    fn start(self: &Arc<Self>, state: &mut State) -> std::io::Result<()> {
        if state.running {
            self.wake.notify_one();
            return Ok(());
        }
        let keeper = Arc::clone(self);
        thread::Builder::new()
            .name("agentscope-sqlite-leases".to_owned())
            .spawn(move || keeper.run())?;
        state.running = true;
        Ok(())
    }

    /// The keeper thread: rounds of work until the store holds no lease.
    fn run(self: Arc<Self>) {
        let mut connection: Option<Connection> = None;
        let mut next_poll = Instant::now();
        while let Some(round) = self.next_round(next_poll) {
            let sent = Instant::now();
            let (renewed, interrupted) = match self.connection(&mut connection) {
                Ok(connection) => Self::work(connection, &round, self.ttl),
                Err(error) => (Err(error), Vec::new()),
            };
            if renewed.is_err() {
                // Opened anew next round, in case it is the connection that broke.
                connection = None;
            }
            if round.poll {
                next_poll = Instant::now() + INTERRUPT_POLL;
            }
            self.apply(&round, sent, renewed, &interrupted);
        }
    }

    /// The keeper's connection, opened if needed.
    fn connection<'c>(
        &self,
        connection: &'c mut Option<Connection>,
    ) -> Result<&'c mut Connection, rusqlite::Error> {
        match connection {
            Some(connection) => Ok(connection),
            None => Ok(connection.insert(db::connect(&self.path, self.busy_timeout, false)?)),
        }
    }

    /// Does `round` on `connection`: gives back, renews, polls. Returns the renewals'
    /// answers and the interrupted tokens.
    fn work(
        connection: &mut Connection,
        round: &Round,
        ttl: Duration,
    ) -> (Result<Vec<Renewed>, rusqlite::Error>, Vec<String>) {
        if let Err(error) = connection.busy_timeout(round.wait) {
            return (Err(error), Vec::new());
        }
        for (session, token) in &round.give_back {
            if let Err(error) = rows::release(connection, session, token) {
                tracing::debug!(
                    target: "agentscope_sqlite",
                    %error,
                    "giving back the lease of a dropped call failed; it expires"
                );
            }
        }
        let renewed = match round.renew.is_empty() {
            true => Ok(Vec::new()),
            false => rows::renew(connection, &round.renew, ttl),
        };
        let interrupted = match round.poll {
            true => rows::interrupted(connection).unwrap_or_else(|error| {
                tracing::debug!(
                    target: "agentscope_sqlite",
                    %error,
                    "reading the interrupt marks failed; trying again"
                );
                Vec::new()
            }),
            false => Vec::new(),
        };
        (renewed, interrupted)
    }

    /// Waits until there is work, and takes it; `None` (the thread ends) when the store
    /// holds no lease and has none to give back.
    fn next_round(&self, next_poll: Instant) -> Option<Round> {
        let period = self.ttl / 3;
        let mut state = lock(&self.state);
        loop {
            if state.held.is_empty() && state.dropped.is_empty() {
                state.running = false;
                return None;
            }
            let now = Instant::now();
            Self::stop_expired(&mut state, now);
            let due = |held: &Held| !held.lost && held.next_renewal <= now;
            let poll = next_poll <= now;
            let give_back: Vec<(String, String)> = state
                .dropped
                .iter_mut()
                .filter(|(_, (_, in_round))| !*in_round)
                .map(|(token, (session, in_round))| {
                    *in_round = true;
                    (session.clone(), token.clone())
                })
                .collect();
            if poll || !give_back.is_empty() || state.held.values().any(due) {
                let renew = state
                    .held
                    .iter()
                    .filter(|(_, held)| due(held))
                    .map(|(token, held)| (held.session.clone(), token.clone()))
                    .collect();
                // Never waiting for a lock beyond the first lease's expiry: its call is
                // stopped then.
                let wait = state
                    .held
                    .values()
                    .filter(|held| !held.lost && !held.deadline.is_stopped())
                    .map(|held| held.deadline.remaining(now))
                    .fold(period.min(self.busy_timeout), Duration::min)
                    .max(Duration::from_millis(1));
                return Some(Round {
                    give_back,
                    renew,
                    poll,
                    wait,
                });
            }
            let next = state
                .held
                .values()
                .filter(|held| !held.lost)
                .flat_map(|held| {
                    let expiry = (!held.deadline.is_stopped()).then(|| held.deadline.deadline());
                    std::iter::once(held.next_renewal).chain(expiry)
                })
                .fold(next_poll, Instant::min);
            state = self
                .wake
                .wait_timeout(state, next.saturating_duration_since(now))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Records what `round` did: its renewals (sent at `sent`) answered `answers`, the
    /// `interrupted` tokens, and the leases it gave back.
    fn apply(
        &self,
        round: &Round,
        sent: Instant,
        answers: Result<Vec<Renewed>, rusqlite::Error>,
        interrupted: &[String],
    ) {
        let renewed = &round.renew;
        let mut state = lock(&self.state);
        for (_, token) in &round.give_back {
            state.dropped.remove(token);
        }
        match answers {
            Ok(answers) => {
                for ((session, token), answer) in renewed.iter().zip(answers) {
                    let Some(held) = state.held.get_mut(token) else {
                        continue;
                    };
                    match answer {
                        Renewed::Held | Renewed::Interrupted => {
                            held.deadline.renewed(sent);
                            held.next_renewal = held.deadline.next_renewal(sent);
                            if answer == Renewed::Interrupted {
                                held.interrupt.cancel();
                            }
                        }
                        Renewed::Lost => {
                            held.lost = true;
                            held.interrupt.cancel();
                            tracing::warn!(
                                target: "agentscope_sqlite",
                                session = %session,
                                "the session's lease expired and another call took it; \
                                 stopping this call (its saves are refused)"
                            );
                        }
                    }
                }
            }
            Err(error) => {
                let now = Instant::now();
                let mut live = 0;
                for (_, token) in renewed {
                    if let Some(held) = state.held.get_mut(token) {
                        held.next_renewal = held.deadline.next_renewal(now);
                        live += usize::from(!held.deadline.is_stopped());
                    }
                }
                if live > 0 {
                    tracing::warn!(
                        target: "agentscope_sqlite",
                        %error,
                        leases = live,
                        "renewing session leases failed; trying again"
                    );
                }
            }
        }
        for token in interrupted {
            if let Some(held) = state.held.get(token) {
                held.interrupt.cancel();
            }
        }
        Self::stop_expired(&mut state, Instant::now());
    }

    /// Stops the calls whose lease could not be renewed before it would have expired.
    fn stop_expired(state: &mut State, now: Instant) {
        for held in state.held.values_mut().filter(|held| !held.lost) {
            if held.deadline.stop_if_expired(now, &held.interrupt) {
                tracing::warn!(
                    target: "agentscope_sqlite",
                    session = %held.session,
                    ttl_ms = u64::try_from(held.deadline.ttl().as_millis()).unwrap_or(u64::MAX),
                    "the session's lease could not be renewed before it would have expired; \
                     stopping this call (another call may take the session, and this call's \
                     saves are refused once one does)"
                );
            }
        }
    }
}
