//! [`UserAgent`]: a human in the conversation, whose replies come from a [`UserInput`].

use std::fmt;
use std::future::Future;
use std::io::{self, BufRead, Write};

use agentscope_core::{AgentError, ContentBlock, Msg, Role};
use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::agent::{CallInput, ReActAgent};
use crate::agent_trait::Agent;
use crate::builder::ReActAgentBuilder;
use crate::engine::reply::{Reply, ReplyContext};
use crate::session::AgentState;
use crate::stream::{AgentStream, StreamOptions};

/// Where a [`UserAgent`]'s replies come from: a terminal, a channel fed by a UI, a test.
///
/// ```
/// use std::io;
/// use agentscope::multi_agent::UserInput;
///
/// /// Always says the same thing.
/// struct Parrot(&'static str);
///
/// impl UserInput for Parrot {
///     async fn read(&self, _agent: &str) -> io::Result<Option<String>> {
///         Ok(Some(self.0.to_owned()))
///     }
/// }
/// ```
pub trait UserInput: Send + Sync + 'static {
    /// The next reply of the user agent named `agent`; `None` once the source is closed (no
    /// more input will come).
    ///
    /// Should be cancel safe: an interrupted call drops the future, and the next call reads
    /// again.
    ///
    /// # Errors
    ///
    /// The source could not be read.
    fn read(&self, agent: &str) -> impl Future<Output = io::Result<Option<String>>> + Send;
}

/// Lines from a tokio channel: what a UI (or a test) sends is what the user says. The
/// source is closed when every sender is gone and the sent lines were read.
///
/// ```
/// use agentscope::multi_agent::{ChannelInput, UserInput};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let (tx, rx) = tokio::sync::mpsc::channel(8);
/// let input = ChannelInput::new(rx);
/// tx.send("hello".to_owned()).await.unwrap();
/// drop(tx);
/// assert_eq!(input.read("user").await.unwrap().as_deref(), Some("hello"));
/// assert_eq!(input.read("user").await.unwrap(), None); // closed
/// # });
/// ```
pub struct ChannelInput {
    receiver: futures::lock::Mutex<mpsc::Receiver<String>>,
}

impl ChannelInput {
    /// Reads from `receiver`.
    pub fn new(receiver: mpsc::Receiver<String>) -> Self {
        Self {
            receiver: futures::lock::Mutex::new(receiver),
        }
    }
}

impl From<mpsc::Receiver<String>> for ChannelInput {
    fn from(receiver: mpsc::Receiver<String>) -> Self {
        Self::new(receiver)
    }
}

impl UserInput for ChannelInput {
    async fn read(&self, _agent: &str) -> io::Result<Option<String>> {
        // `recv` is cancel safe: a dropped read loses no line.
        Ok(self.receiver.lock().await.recv().await)
    }
}

impl fmt::Debug for ChannelInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChannelInput").finish_non_exhaustive()
    }
}

/// Lines typed on standard input, after a `name> ` prompt on standard output. Closed at the
/// end of input (Ctrl-D, or a closed pipe).
///
/// Each line is read on tokio's blocking pool (`spawn_blocking`), so the runtime keeps
/// running while the user types; it needs a tokio runtime (an error otherwise). A read that
/// is cancelled (an interrupted call) leaves its line to the next read, so no line is lost.
/// The trailing newline (`\n` or `\r\n`) is removed.
#[derive(Default)]
pub struct StdinInput {
    pending: futures::lock::Mutex<Option<JoinHandle<io::Result<Option<String>>>>>,
}

impl StdinInput {
    /// Reads standard input.
    pub fn new() -> Self {
        Self::default()
    }
}

impl UserInput for StdinInput {
    async fn read(&self, agent: &str) -> io::Result<Option<String>> {
        let mut pending = self.pending.lock().await;
        if pending.is_none() {
            let runtime = tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
            let prompt = format!("{agent}> ");
            *pending = Some(runtime.spawn_blocking(move || read_line(&prompt)));
        }
        let Some(reading) = pending.as_mut() else {
            return Ok(None);
        };
        // Awaited in place: if this read is dropped, the line stays for the next one.
        let line = reading.await;
        *pending = None;
        line.map_err(io::Error::other)?
    }
}

fn read_line(prompt: &str) -> io::Result<Option<String>> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(prompt.as_bytes())?;
    stdout.flush()?;
    drop(stdout);
    let mut line = String::new();
    if io::stdin().lock().read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let trimmed = line.trim_end_matches(['\n', '\r']).len();
    line.truncate(trimmed);
    Ok(Some(line))
}

impl fmt::Debug for StdinInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdinInput").finish_non_exhaustive()
    }
}

/// The reply of a user agent: the next line of its input.
struct UserReply<I> {
    input: I,
}

impl<I: UserInput> Reply for UserReply<I> {
    async fn reply(&self, cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
        let name = cx.agent().shared_name().clone();
        match self.input.read(&name).await {
            Ok(Some(text)) => Ok(Msg::new(Role::User, name, vec![ContentBlock::text(text)])),
            Ok(None) => Err(AgentError::invalid_input(format!(
                "the input of user agent '{name}' is closed: no more replies will come"
            ))),
            Err(error) => Err(AgentError::invalid_input(format!(
                "reading the input of user agent '{name}' failed: {error}"
            ))),
        }
    }
}

/// A human in the conversation: each call's reply is the next line of a [`UserInput`]
/// (stdin, a channel), as a [`Role::User`] message carrying the agent's name. AgentScope
/// Python's `UserAgent`.
///
/// It is a [`ReActAgent`] with a custom [`Reply`], so it has the whole machinery: hooks
/// (PreCall sees the messages the user answers, PostCall the user's message), memory,
/// sessions, streaming, the busy check and interrupts (an interrupted call stops waiting
/// for the user). Use [`from_builder`](Self::from_builder) to give it hooks or a session.
///
/// ```
/// use agentscope::prelude::*;
/// use agentscope::Agent;
/// use agentscope::multi_agent::UserAgent;
/// use agentscope::multi_agent::ChannelInput;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let (tx, rx) = tokio::sync::mpsc::channel(8);
/// let user = UserAgent::new("alice", ChannelInput::new(rx))?;
/// tx.send("Book the 9:40 train.".to_owned()).await?;
///
/// let reply = user.call(Msg::assistant("Which train?").into()).await?;
/// assert_eq!((reply.role, reply.name.as_str()), (Role::User, "alice"));
/// assert_eq!(reply.text(), "Book the 9:40 train.");
///
/// drop(tx); // the source is closed: the next call fails
/// let error = user.call(().into()).await.unwrap_err();
/// assert_eq!(
///     error.to_string(),
///     "the input of user agent 'alice' is closed: no more replies will come"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// # Errors
///
/// A call fails with [`AgentError::InvalidInput`] when the source is closed or cannot be
/// read (the message says which).
#[derive(Clone)]
pub struct UserAgent {
    agent: ReActAgent,
}

impl UserAgent {
    /// A user agent named `name` reading its replies from `input`.
    ///
    /// # Errors
    ///
    /// [`BuildError`](crate::BuildError) for a blank name.
    pub fn new(name: impl Into<String>, input: impl UserInput) -> Result<Self, crate::BuildError> {
        Self::from_builder(ReActAgent::builder().name(name), input)
    }

    /// A user agent built by `builder` (its name, hooks, session, memory, ...), reading its
    /// replies from `input`. A model or tools given to the builder are not used.
    ///
    /// # Errors
    ///
    /// As [`ReActAgentBuilder::build`].
    pub fn from_builder(
        builder: ReActAgentBuilder,
        input: impl UserInput,
    ) -> Result<Self, crate::BuildError> {
        let agent = builder.reply(UserReply { input }).build()?;
        Ok(Self { agent })
    }

    /// The agent underneath: its memory, hooks, state.
    pub fn agent(&self) -> &ReActAgent {
        &self.agent
    }

    /// The agent underneath.
    pub fn into_agent(self) -> ReActAgent {
        self.agent
    }
}

impl fmt::Debug for UserAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserAgent")
            .field("name", &self.agent.name())
            .field("id", &self.agent.id())
            .finish()
    }
}

impl Agent for UserAgent {
    fn name(&self) -> &str {
        self.agent.name()
    }

    fn id(&self) -> &str {
        self.agent.id()
    }

    fn call(&self, input: CallInput) -> BoxFuture<'static, Result<Msg, AgentError>> {
        Agent::call(&self.agent, input)
    }

    fn stream(&self, input: CallInput, options: StreamOptions) -> AgentStream {
        self.agent.stream(input, options)
    }

    fn observe(&self, input: CallInput) -> BoxFuture<'_, Result<(), AgentError>> {
        Agent::observe(&self.agent, input)
    }

    fn interrupt(&self) {
        self.agent.interrupt();
    }

    fn save_state(&self) -> Result<AgentState, AgentError> {
        self.agent.save_state()
    }

    fn load_state(&self, state: AgentState) -> BoxFuture<'_, Result<(), AgentError>> {
        Agent::load_state(&self.agent, state)
    }
}
