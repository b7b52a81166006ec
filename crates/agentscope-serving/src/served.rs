//! [`Served`]: one agent served over a protocol (the serving core), and [`Turn`]: one served
//! run's call, admitted under its session's lease.

use std::collections::HashMap;
use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use agentscope::hooks::ToolApprovalHook;
use agentscope::session::{SessionStore, validate_session_id};
use agentscope::{
    Admission, AgentError, AgentStream, BoxedHook, CallInput, Event, Msg, ReActAgent, Refusal,
    StreamOptions,
};
use futures::{Stream, StreamExt};
use tokio::sync::Notify;

use crate::awaiting::Awaiting;
use crate::record::{Run, RunEvent, RunState, Runs};
use crate::retention::Retention;
use crate::settle::settle;
use crate::spec::AgentSpec;
use crate::{RunHook, held};

/// How long [`Served::shutdown`] waits for interrupted runs to end.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// One agent served over a protocol: how its runs' agents are made ([`AgentSpec`]), the
/// store its conversations live in, the retention of its runs, and the runs this instance
/// serves now. A protocol (AG-UI, A2A) maps its requests onto [`start`](Self::start)ed
/// [`Turn`]s and its reads onto the session's [`Runs`]; everything a served run's state
/// depends on is decided here, once, for every protocol.
///
/// Cheap to clone.
#[derive(Clone)]
pub struct Served {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    spec: AgentSpec,
    store: Arc<dyn SessionStore>,
    retention: Retention,
    /// The runs this instance serves, by session.
    local: Mutex<HashMap<String, Local>>,
    draining: AtomicBool,
    idle: Notify,
}

struct Local {
    run: String,
    agent: ReActAgent,
}

impl fmt::Debug for Served {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Served")
            .field("agent", &self.inner.name)
            .field("retention", &self.inner.retention)
            .finish_non_exhaustive()
    }
}

/// Why a turn did not start.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartError {
    /// This instance already serves a run on the session.
    Busy,
    /// The server is shutting down.
    ShuttingDown,
    /// The run's agent cannot be built (the reason is for the log, not for a client).
    Build(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Busy => f.write_str("a run is already active on this conversation"),
            StartError::ShuttingDown => f.write_str("the server is shutting down"),
            StartError::Build(reason) => write!(f, "the run's agent cannot be built: {reason}"),
        }
    }
}

impl std::error::Error for StartError {}

impl Served {
    /// Serves the agents `spec` makes as `name` (the first part of its sessions' ids), on
    /// `store`, keeping runs as `retention` says. Takes over the approval hook the spec's
    /// builder registers (see [`AgentSpec`]).
    ///
    /// # Errors
    ///
    /// The name is not 1 to 64 ASCII letters, digits, `-` or `_`; the spec has two approval
    /// policies or one the server cannot answer.
    pub fn new(
        name: impl Into<String>,
        mut spec: AgentSpec,
        store: Arc<dyn SessionStore>,
        retention: Retention,
    ) -> Result<Self, String> {
        let name = name.into();
        let usable = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !usable {
            return Err(format!(
                "agent name {name:?}: use 1 to 64 ASCII letters, digits, '-' or '_'"
            ));
        }
        spec.adopt_own_approvals(&name)?;
        Ok(Self {
            inner: Arc::new(Inner {
                name,
                spec,
                store,
                retention,
                local: Mutex::default(),
                draining: AtomicBool::new(false),
                idle: Notify::new(),
            }),
        })
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The spec its runs' agents are made from.
    pub fn spec(&self) -> &AgentSpec {
        &self.inner.spec
    }

    /// The store its conversations live in.
    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.inner.store
    }

    /// How long its runs are kept.
    pub fn retention(&self) -> Retention {
        self.inner.retention
    }

    /// The session conversation `conversation` (an AG-UI thread, an A2A context) of this
    /// agent is stored under: `<agent>.<conversation>`, so one conversation can go on over
    /// either protocol.
    pub fn session_id(&self, conversation: &str) -> String {
        format!("{}.{conversation}", self.inner.name)
    }

    /// [`session_id`](Self::session_id), checked: `None` when the conversation id cannot
    /// name a session (see [`validate_session_id`]).
    pub fn checked_session_id(&self, conversation: &str) -> Option<String> {
        let session = self.session_id(conversation);
        validate_session_id(&session).ok().map(|()| session)
    }

    /// The run this instance serves on `session`, and its agent.
    pub fn local(&self, session: &str) -> Option<(String, ReActAgent)> {
        self.lock_local()
            .get(session)
            .map(|local| (local.run.clone(), local.agent.clone()))
    }

    /// How many runs this instance serves.
    pub fn running(&self) -> usize {
        self.lock_local().len()
    }

    /// Whether the server is shutting down (new runs are refused).
    pub fn draining(&self) -> bool {
        self.inner.draining.load(Ordering::SeqCst)
    }

    fn lock_local(&self) -> MutexGuard<'_, HashMap<String, Local>> {
        self.inner
            .local
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh agent of the spec bound to `session`, as a run gets it, with no run hook (to
    /// read the session's tools and approval policy).
    ///
    /// # Errors
    ///
    /// The agent cannot be built (the reason is for the log).
    pub fn agent(&self, session: &str) -> Result<(ReActAgent, Option<ToolApprovalHook>), String> {
        let approvals = self.inner.spec.approvals();
        let agent = self
            .inner
            .spec
            .build(&self.inner.store, session, approvals.as_ref())?;
        Ok((agent, approvals))
    }

    /// Starts run `run` (of protocol `protocol`) on `session`: a fresh agent of the spec,
    /// bound to the session, with the run's approval hook, `hooks`, and the [`RunHook`] last.
    /// The call takes the session's lease and loads it; then, holding the lease, the core
    /// reads the session's runs (settling, by the orphan rule, any that says `working` while
    /// no call serves it), prunes them by the retention, derives what the session
    /// [awaits](Awaiting) with the approval hook restored from it, and lets `decide` choose
    /// the call's input or refuse; the runs (with run `run` `working`, having received what
    /// `decide` recorded) are stored with the call's first save.
    ///
    /// # Errors
    ///
    /// This instance already serves a run on the session, the server is shutting down, or
    /// the agent cannot be built.
    pub fn start(
        &self,
        session: &str,
        run: &str,
        protocol: &'static str,
        hooks: Vec<BoxedHook>,
        options: StreamOptions,
        decide: impl FnOnce(&mut Decision<'_, '_>) -> Result<CallInput, Refusal> + Send + 'static,
    ) -> Result<Turn, StartError> {
        if self.draining() {
            return Err(StartError::ShuttingDown);
        }
        let (agent, approvals) = self.agent(session).map_err(StartError::Build)?;
        let run_hook = RunHook::new(run, approvals.clone());
        for hook in hooks {
            agent.edit_hooks(|chain| chain.push(hook));
        }
        agent.add_hook(run_hook.clone());
        let guard = {
            let mut local = self.lock_local();
            if local.contains_key(session) {
                return Err(StartError::Busy);
            }
            local.insert(
                session.to_owned(),
                Local {
                    run: run.to_owned(),
                    agent: agent.clone(),
                },
            );
            LocalGuard {
                served: self.clone(),
                session: session.to_owned(),
            }
        };
        let admitted = Arc::new(AtomicBool::new(false));
        let gate = Gate {
            session: session.to_owned(),
            run: run.to_owned(),
            protocol,
            agent: agent.clone(),
            approvals: approvals.clone(),
            retention: self.inner.retention,
            admitted: Arc::clone(&admitted),
        };
        let stream = agent.stream_admitted(move |admission| gate.admit(admission, decide), options);
        Ok(Turn {
            agent,
            approvals,
            hook: run_hook,
            stream,
            admitted,
            first: None,
            _guard: guard,
        })
    }

    /// Stops taking runs, interrupts the runs this instance serves (each ends after its
    /// engine stored what it did), and waits up to 30 s for them to end.
    pub async fn shutdown(&self) {
        self.inner.draining.store(true, Ordering::SeqCst);
        let running: Vec<ReActAgent> = self
            .lock_local()
            .values()
            .map(|local| local.agent.clone())
            .collect();
        tracing::info!(
            agent = %self.inner.name,
            running = running.len(),
            "served agent shutting down: interrupting runs"
        );
        for agent in &running {
            agent.interrupt();
        }
        let wait = async {
            loop {
                let idle = self.inner.idle.notified();
                if self.lock_local().is_empty() {
                    return;
                }
                idle.await;
            }
        };
        if tokio::time::timeout(SHUTDOWN_GRACE, wait).await.is_err() {
            tracing::warn!(agent = %self.inner.name, "runs still active after the shutdown grace period");
        }
    }

    /// The runs of `session` and its conversation as stored, with the runs whose call no
    /// longer serves them settled by the orphan rule (and stored so, holding the session's
    /// lease): what a reader reports. `None` when the session does not exist.
    ///
    /// A run this instance serves is reported as stored (working). A run another instance
    /// serves is found `working` while its call holds the session; with a store that does
    /// not lease sessions nothing tells a served run from a lost one, and runs are reported
    /// as stored.
    ///
    /// # Errors
    ///
    /// The store failed, or the session's runs cannot be read.
    pub async fn read(&self, session: &str) -> Result<Option<Stored>, ReadError> {
        let store = &self.inner.store;
        let Some(state) = store.load(session).await.map_err(ReadError::Store)? else {
            return Ok(None);
        };
        let runs = Runs::read(&agentscope::session::HookState::new(state.hooks.clone()))
            .map_err(|error| ReadError::Unreadable(error.to_string()))?;
        let served_here = self.local(session).is_some();
        if served_here || runs.working().next().is_none() {
            return Ok(Some(Stored {
                runs,
                messages: state.messages,
            }));
        }
        let (agent, approvals) = self.agent(session).map_err(ReadError::Build)?;
        let retention = self.inner.retention;
        let settled = held::hold(
            &**store,
            session,
            held::Unleased::Skip,
            move |state, hooks| {
                let mut runs = Runs::read(hooks).map_err(|error| error.to_string())?;
                if let Some(approvals) = &approvals {
                    approvals
                        .restore_state(state)
                        .map_err(|error| error.to_string())?;
                    learn_tools(approvals, &agent);
                }
                let awaiting = Awaiting::of(
                    &state.messages,
                    &state.running_tools,
                    approvals.as_ref(),
                    false,
                );
                settle_orphans(&mut runs, &state.messages, &awaiting);
                retention.prune(&mut runs, chrono::Utc::now());
                runs.write(hooks);
                Ok::<_, String>(Stored {
                    runs,
                    messages: state.messages.clone(),
                })
            },
        )
        .await
        .map_err(ReadError::Store)?;
        match settled {
            held::Held::Held(Ok(stored)) => Ok(Some(stored)),
            held::Held::Held(Err(reason)) => Err(ReadError::Unreadable(reason)),
            held::Held::Busy | held::Held::Unleased(_) => Ok(Some(Stored {
                runs,
                messages: state.messages,
            })),
            held::Held::Missing => Ok(None),
        }
    }
}

/// A session's runs and conversation, as [`Served::read`] reports them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Stored {
    /// The runs, settled.
    pub runs: Runs,
    /// The conversation.
    pub messages: Vec<Msg>,
}

/// Why [`Served::read`] could not read a session's runs.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadError {
    /// The store failed.
    Store(agentscope::session::SessionError),
    /// The session's runs (or its approval hook's state) cannot be read.
    Unreadable(String),
    /// The agent cannot be built.
    Build(String),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Store(error) => write!(f, "the store failed: {error}"),
            ReadError::Unreadable(reason) => {
                write!(f, "the session's runs cannot be read: {reason}")
            }
            ReadError::Build(reason) => write!(f, "the agent cannot be built: {reason}"),
        }
    }
}

impl std::error::Error for ReadError {}

/// Removes a run from this instance's runs when its turn ends or is dropped.
struct LocalGuard {
    served: Served,
    session: String,
}

impl Drop for LocalGuard {
    fn drop(&mut self) {
        let mut local = self.served.lock_local();
        local.remove(&self.session);
        if local.is_empty() {
            self.served.inner.idle.notify_waiters();
        }
    }
}

/// Teaches `approvals` the tools of `agent` (those of its live sources too), so edited
/// arguments are checked against the tools' schemas.
fn learn_tools(approvals: &ToolApprovalHook, agent: &ReActAgent) {
    match agent.toolkit().resolve() {
        Ok(toolkit) => approvals.learn_tools(&toolkit),
        Err(_) => approvals.learn_tools(agent.toolkit()),
    }
}

/// Settles, by the orphan rule, every run of `runs` that says `working` (no call serves
/// it: the caller holds the session).
fn settle_orphans(runs: &mut Runs, messages: &[Msg], awaiting: &Awaiting) {
    let orphans: Vec<String> = runs.working().map(|run| run.id.clone()).collect();
    for id in orphans {
        if let Some(run) = runs.get_mut(&id) {
            let (state, asked) = settle(run, messages, awaiting);
            tracing::info!(run = %id, state = %state, "a run whose call stopped is settled");
            run.events.extend(asked);
            run.set_state(state);
        }
    }
}

/// What a protocol decides a turn from, under the session's lease: the session as the call
/// loaded it, its runs (settled and pruned), what it awaits, and the run's approval hook
/// restored from it.
pub struct Decision<'s, 'a> {
    /// The session as the call loaded it.
    pub admission: &'s mut Admission<'a>,
    /// The session's runs, with any whose call stopped settled by the orphan rule, pruned by
    /// the retention; what the decision leaves here is stored.
    pub runs: Runs,
    /// What the session awaits (calls in doubt are certain: the call holds the lease, when
    /// the store leases sessions).
    pub awaiting: Awaiting,
    /// The run's approval hook (restored from the session), when the agent has a policy:
    /// decisions given to it are applied by the call.
    pub approvals: Option<ToolApprovalHook>,
    /// The session's id.
    pub session: &'s str,
    /// The run's id.
    pub run: &'s str,
    received: Vec<RunEvent>,
}

impl fmt::Debug for Decision<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decision")
            .field("session", &self.session)
            .field("run", &self.run)
            .field("awaiting", &self.awaiting)
            .finish_non_exhaustive()
    }
}

impl Decision<'_, '_> {
    /// Records that the run receives `event` (a message, with its protocol form when the
    /// conversation does not keep it): stored in the run's record if the call is admitted.
    pub fn receive(&mut self, event: RunEvent) {
        self.received.push(event);
    }
}

/// The admission of one turn: what the core does around the protocol's decision.
struct Gate {
    session: String,
    run: String,
    protocol: &'static str,
    agent: ReActAgent,
    approvals: Option<ToolApprovalHook>,
    retention: Retention,
    admitted: Arc<AtomicBool>,
}

impl Gate {
    fn admit(
        self,
        admission: &mut Admission<'_>,
        decide: impl FnOnce(&mut Decision<'_, '_>) -> Result<CallInput, Refusal>,
    ) -> Result<CallInput, Refusal> {
        let mut runs = Runs::read(admission.hooks()).map_err(|error| {
            tracing::error!(session = %self.session, %error, "a session's served runs cannot be read");
            Refusal::new(UNREADABLE)
        })?;
        if let Some(approvals) = &self.approvals {
            let state = admission.state();
            approvals.restore_state(&state).map_err(|error| {
                tracing::error!(session = %self.session, %error, "the approval hook's state cannot be read");
                Refusal::new(UNREADABLE)
            })?;
            learn_tools(approvals, &self.agent);
        }
        let running = admission.running_tools().to_vec();
        let messages = admission.messages().to_vec();
        let awaiting = Awaiting::of(&messages, &running, self.approvals.as_ref(), false);
        settle_orphans(&mut runs, &messages, &awaiting);
        self.retention.prune(&mut runs, chrono::Utc::now());
        let after = messages.last().map(|msg| msg.id.to_string());
        let mut decision = Decision {
            admission,
            runs,
            awaiting,
            approvals: self.approvals.clone(),
            session: &self.session,
            run: &self.run,
            received: Vec::new(),
        };
        let decided = decide(&mut decision);
        let Decision {
            admission,
            mut runs,
            received,
            ..
        } = decision;
        if decided.is_ok() {
            match runs.get_mut(&self.run) {
                Some(existing) => {
                    existing.events.extend(received);
                    existing.set_state(RunState::Working);
                }
                None => runs.put(Run::new(&self.run, self.protocol, after, received)),
            }
            self.admitted.store(true, Ordering::SeqCst);
        }
        runs.write(admission.hooks_mut());
        decided
    }
}

/// The refusal of a session whose runs or approval state cannot be read.
const UNREADABLE: &str = "the conversation's stored state cannot be read by this server";

/// One served run's call: its agent, its approval hook and [`RunHook`], and its events.
///
/// A `Turn` is a [`Stream`] of the call's events (the `AgentStream`'s items); drive it with
/// [`admitted`](Self::admitted) first to learn whether the call was admitted before its
/// first event. Dropping it cancels the call (as dropping an `AgentStream` does).
#[non_exhaustive]
pub struct Turn {
    /// The run's agent.
    pub agent: ReActAgent,
    /// The run's approval hook, when the agent has a policy.
    pub approvals: Option<ToolApprovalHook>,
    /// The run's [`RunHook`]: how the call ended.
    pub hook: RunHook,
    stream: AgentStream,
    admitted: Arc<AtomicBool>,
    /// The first item, when [`admitted`](Self::admitted) read it.
    first: Option<Option<Result<Event, AgentError>>>,
    _guard: LocalGuard,
}

impl fmt::Debug for Turn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Turn")
            .field("admitted", &self.admitted.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl Turn {
    /// Drives the call until its admission is decided: `Ok(())` once the call is admitted
    /// (its events follow), or the error the call ended with before (busy: another call
    /// holds the session; [`AgentError::Refused`]: the decision refused it; the session
    /// could not be loaded).
    ///
    /// # Errors
    ///
    /// The call's error, when it ended before it was admitted.
    pub async fn admitted(&mut self) -> Result<(), AgentError> {
        std::future::poll_fn(|cx| self.poll_admitted(cx)).await
    }

    fn poll_admitted(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        if self.first.is_none()
            && let Poll::Ready(item) = self.stream.poll_next_unpin(cx)
        {
            self.first = Some(item);
        }
        if self.admitted.load(Ordering::SeqCst) {
            return Poll::Ready(Ok(()));
        }
        match self.first.take() {
            None => Poll::Pending,
            Some(Some(Err(error))) => Poll::Ready(Err(error)),
            Some(other) => {
                // Not reachable: an admitted call's first item follows its admission.
                self.first = Some(other);
                Poll::Ready(Ok(()))
            }
        }
    }
}

impl Stream for Turn {
    type Item = Result<Event, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(first);
        }
        self.stream.poll_next_unpin(cx)
    }
}
