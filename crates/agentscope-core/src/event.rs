//! The twelve hook events and the closed [`HookEvent`] enum.
//!
//! What each event lets a hook do is encoded in its type: a setter exists only where a change
//! has an effect, and each value has one source of truth.
//!
//! | Event | Read | Change | Control |
//! |---|---|---|---|
//! | [`PreCallEvent`] | new input, history, system message | input, system message | |
//! | [`PostCallEvent`] | final message | final message (what the caller gets) | |
//! | [`PreReasoningEvent`] | memory copy, system message, model, options, iteration | messages, options, system message (this iteration only) | |
//! | [`PostReasoningEvent`] | reasoning message, model, iteration | reasoning message | stop, goto |
//! | [`ReasoningChunkEvent`] | delta, accumulated, model | | |
//! | [`PreActingEvent`] | tool call | tool call (same id) | skip with a result |
//! | [`PostActingEvent`] | tool call, result | result (memory and stream) | stop |
//! | [`ActingChunkEvent`] | tool call, progress chunk | | |
//! | [`PreSummaryEvent`] | messages, system message, options, limits | as PreReasoning | |
//! | [`PostSummaryEvent`] | summary message | summary message | |
//! | [`SummaryChunkEvent`] | delta, accumulated | | |
//! | [`ErrorEvent`] | the error | | |

use std::fmt;
use std::ops::{BitOr, BitOrAssign};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{AgentError, HookError};
use crate::message::{ContentBlock, Msg, Role, ToolResultBlock, ToolUseBlock};
use crate::model::GenerateOptions;
use crate::text::SharedString;

/// The name and id of the agent an event belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentInfo {
    name: String,
    id: String,
}

impl AgentInfo {
    /// Describes an agent.
    pub fn new(name: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            id: id.into(),
        }
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The agent's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// What every event carries: its agent and its creation time.
#[derive(Debug, Clone)]
struct Meta {
    agent: Arc<AgentInfo>,
    timestamp: DateTime<Utc>,
}

impl Meta {
    fn new(agent: Arc<AgentInfo>) -> Self {
        Self {
            agent,
            timestamp: Utc::now(),
        }
    }
}

/// The kind of a [`HookEvent`], without its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum HookEventType {
    /// Before the call starts.
    PreCall,
    /// After the call finished successfully.
    PostCall,
    /// Before each model call of the loop.
    PreReasoning,
    /// After each model call of the loop.
    PostReasoning,
    /// For each streamed model chunk.
    ReasoningChunk,
    /// Before each tool call.
    PreActing,
    /// After each tool call.
    PostActing,
    /// For each progress chunk a tool emits.
    ActingChunk,
    /// Before the summary at the iteration limit.
    PreSummary,
    /// After the summary.
    PostSummary,
    /// For each streamed summary chunk.
    SummaryChunk,
    /// When the call failed.
    Error,
}

impl HookEventType {
    /// All twelve kinds, in declaration order.
    pub const ALL: [HookEventType; 12] = [
        HookEventType::PreCall,
        HookEventType::PostCall,
        HookEventType::PreReasoning,
        HookEventType::PostReasoning,
        HookEventType::ReasoningChunk,
        HookEventType::PreActing,
        HookEventType::PostActing,
        HookEventType::ActingChunk,
        HookEventType::PreSummary,
        HookEventType::PostSummary,
        HookEventType::SummaryChunk,
        HookEventType::Error,
    ];

    /// The kind's position in [`HookEventType::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Whether hooks are notified of this kind (chunks and errors) rather than chained
    /// (Pre*/Post*). See the dispatch rules in the crate docs.
    pub const fn is_notification(self) -> bool {
        matches!(
            self,
            HookEventType::ReasoningChunk
                | HookEventType::ActingChunk
                | HookEventType::SummaryChunk
                | HookEventType::Error
        )
    }

    /// The kind's name, e.g. `"PreCall"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            HookEventType::PreCall => "PreCall",
            HookEventType::PostCall => "PostCall",
            HookEventType::PreReasoning => "PreReasoning",
            HookEventType::PostReasoning => "PostReasoning",
            HookEventType::ReasoningChunk => "ReasoningChunk",
            HookEventType::PreActing => "PreActing",
            HookEventType::PostActing => "PostActing",
            HookEventType::ActingChunk => "ActingChunk",
            HookEventType::PreSummary => "PreSummary",
            HookEventType::PostSummary => "PostSummary",
            HookEventType::SummaryChunk => "SummaryChunk",
            HookEventType::Error => "Error",
        }
    }
}

impl fmt::Display for HookEventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of [`HookEventType`]s: what a hook is interested in.
///
/// ```
/// use agentscope_core::{HookEventType, HookEventTypes};
///
/// let calls = HookEventType::PreCall | HookEventType::PostCall;
/// assert!(calls.contains(HookEventType::PostCall));
/// assert!(!calls.contains(HookEventType::Error));
/// assert!(HookEventTypes::ALL.contains(HookEventType::Error));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HookEventTypes(u16);

impl HookEventTypes {
    /// No kinds.
    pub const NONE: HookEventTypes = HookEventTypes(0);
    /// All twelve kinds.
    pub const ALL: HookEventTypes = HookEventTypes((1 << 12) - 1);
    /// The three chunk kinds.
    pub const CHUNKS: HookEventTypes = HookEventTypes(
        (1 << HookEventType::ReasoningChunk as u16)
            | (1 << HookEventType::ActingChunk as u16)
            | (1 << HookEventType::SummaryChunk as u16),
    );

    /// The set holding just `kind`.
    pub const fn only(kind: HookEventType) -> Self {
        HookEventTypes(1 << kind as u16)
    }

    /// Whether `kind` is in the set.
    pub const fn contains(self, kind: HookEventType) -> bool {
        self.0 & (1 << kind as u16) != 0
    }

    /// The set with `kind` added.
    #[must_use]
    pub const fn with(self, kind: HookEventType) -> Self {
        HookEventTypes(self.0 | (1 << kind as u16))
    }

    /// The set with `kind` removed.
    #[must_use]
    pub const fn without(self, kind: HookEventType) -> Self {
        HookEventTypes(self.0 & !(1 << kind as u16))
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The kinds in the set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = HookEventType> {
        HookEventType::ALL
            .into_iter()
            .filter(move |kind| self.contains(*kind))
    }
}

impl fmt::Debug for HookEventTypes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl From<HookEventType> for HookEventTypes {
    fn from(kind: HookEventType) -> Self {
        HookEventTypes::only(kind)
    }
}

impl FromIterator<HookEventType> for HookEventTypes {
    fn from_iter<I: IntoIterator<Item = HookEventType>>(iter: I) -> Self {
        iter.into_iter()
            .fold(HookEventTypes::NONE, HookEventTypes::with)
    }
}

impl BitOr for HookEventTypes {
    type Output = HookEventTypes;

    fn bitor(self, rhs: HookEventTypes) -> HookEventTypes {
        HookEventTypes(self.0 | rhs.0)
    }
}

impl BitOr<HookEventType> for HookEventTypes {
    type Output = HookEventTypes;

    fn bitor(self, rhs: HookEventType) -> HookEventTypes {
        self.with(rhs)
    }
}

impl BitOr for HookEventType {
    type Output = HookEventTypes;

    fn bitor(self, rhs: HookEventType) -> HookEventTypes {
        HookEventTypes::only(self).with(rhs)
    }
}

impl BitOrAssign for HookEventTypes {
    fn bitor_assign(&mut self, rhs: HookEventTypes) {
        self.0 |= rhs.0;
    }
}

const SYSTEM_INJECTION_HINT: &str = "Use set_system_message() or append_system_content() instead.";

/// The error text for a SYSTEM message found in a message list that hooks (or callers) can
/// change; `place` names the list.
pub fn system_injection_message(place: &str) -> String {
    format!("Hooks must not inject SYSTEM messages into {place}. {SYSTEM_INJECTION_HINT}")
}

/// The system-message part shared by PreCall, PreReasoning and PreSummary.
#[derive(Debug, Clone, Default)]
struct SystemSlot(Option<Msg>);

impl SystemSlot {
    fn set(&mut self, message: Option<Msg>) {
        self.0 = message.map(|mut msg| {
            msg.role = Role::System;
            msg
        });
    }

    fn append(&mut self, text: SharedString) {
        match &mut self.0 {
            Some(msg) => msg.content.push(ContentBlock::text(text)),
            None => self.0 = Some(Msg::system(text)),
        }
    }
}

macro_rules! event_meta_accessors {
    () => {
        /// The agent this event belongs to.
        pub fn agent(&self) -> &AgentInfo {
            &self.meta.agent
        }

        /// When the event was created.
        pub fn timestamp(&self) -> DateTime<Utc> {
            self.meta.timestamp
        }
    };
}

macro_rules! system_message_accessors {
    () => {
        /// The system message the model will get (`None` when there is none).
        pub fn system_message(&self) -> Option<&Msg> {
            self.system.0.as_ref()
        }

        /// Replaces the system message (`None` removes it). The message's role is set to
        /// `System`.
        pub fn set_system_message(&mut self, message: Option<Msg>) {
            self.system.set(message);
        }

        /// Appends a text block to the system message, creating one named `"system"` when
        /// there is none.
        pub fn append_system_content(&mut self, text: impl Into<SharedString>) {
            self.system.append(text.into());
        }
    };
}

/// Fired once at the start of a call, before anything is stored.
///
/// Hooks may change the new input and the system message; the system message as PreCall
/// leaves it is frozen as the base for the whole call (each PreReasoning starts from a fresh
/// copy of it). Input messages must not have the `System` role: the call fails if they do.
#[derive(Debug, Clone)]
pub struct PreCallEvent {
    meta: Meta,
    input: Vec<Msg>,
    history: Vec<Msg>,
    system: SystemSlot,
}

impl PreCallEvent {
    /// Creates the event.
    pub fn new(
        agent: Arc<AgentInfo>,
        input_messages: Vec<Msg>,
        history: Vec<Msg>,
        system_message: Option<Msg>,
    ) -> Self {
        Self {
            meta: Meta::new(agent),
            input: input_messages,
            history,
            system: SystemSlot(system_message),
        }
    }

    event_meta_accessors!();
    system_message_accessors!();

    /// The new messages of this call (empty when resuming).
    pub fn input_messages(&self) -> &[Msg] {
        &self.input
    }

    /// Replaces the new messages of this call.
    pub fn set_input_messages(&mut self, messages: Vec<Msg>) {
        self.input = messages;
    }

    /// The agent's memory before this call (read-only).
    pub fn history(&self) -> &[Msg] {
        &self.history
    }

    /// Takes the (possibly changed) input messages and system message.
    pub fn into_parts(self) -> (Vec<Msg>, Option<Msg>) {
        (self.input, self.system.0)
    }
}

/// Fired once when a call completed; the final message is what the caller gets.
///
/// Changing it does not change memory, which keeps the loop's message.
#[derive(Debug, Clone)]
pub struct PostCallEvent {
    meta: Meta,
    final_message: Msg,
}

impl PostCallEvent {
    /// Creates the event.
    pub fn new(agent: Arc<AgentInfo>, final_message: Msg) -> Self {
        Self {
            meta: Meta::new(agent),
            final_message,
        }
    }

    event_meta_accessors!();

    /// The reply.
    pub fn final_message(&self) -> &Msg {
        &self.final_message
    }

    /// Replaces the reply the caller gets.
    pub fn set_final_message(&mut self, message: Msg) {
        self.final_message = message;
    }

    /// Takes the final message.
    pub fn into_final_message(self) -> Msg {
        self.final_message
    }
}

/// Fired before each model call of the loop.
///
/// Changes apply to this model call only: `input_messages` is a copy of memory, and the
/// system message is a fresh copy of the call's frozen base, so per-iteration appends never
/// accumulate. The model receives `[system message] ++ input_messages`.
#[derive(Debug, Clone)]
pub struct PreReasoningEvent {
    meta: Meta,
    input: Vec<Msg>,
    system: SystemSlot,
    model_name: Arc<str>,
    options: GenerateOptions,
    iteration: usize,
}

impl PreReasoningEvent {
    /// Creates the event.
    pub fn new(
        agent: Arc<AgentInfo>,
        input_messages: Vec<Msg>,
        system_message: Option<Msg>,
        model_name: impl Into<Arc<str>>,
        generate_options: GenerateOptions,
        iteration: usize,
    ) -> Self {
        Self {
            meta: Meta::new(agent),
            input: input_messages,
            system: SystemSlot(system_message),
            model_name: model_name.into(),
            options: generate_options,
            iteration,
        }
    }

    event_meta_accessors!();
    system_message_accessors!();

    /// The messages the model will get after the system message (a copy of memory).
    pub fn input_messages(&self) -> &[Msg] {
        &self.input
    }

    /// Replaces the messages for this model call (memory is not changed).
    pub fn set_input_messages(&mut self, messages: Vec<Msg>) {
        self.input = messages;
    }

    /// The model's name.
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// The generation options for this model call.
    pub fn generate_options(&self) -> &GenerateOptions {
        &self.options
    }

    /// Replaces the generation options for this model call.
    pub fn set_generate_options(&mut self, options: GenerateOptions) {
        self.options = options;
    }

    /// The iteration, starting at 0 for each call.
    pub fn iteration(&self) -> usize {
        self.iteration
    }

    /// Takes the messages, system message and options.
    pub fn into_parts(self) -> (Vec<Msg>, Option<Msg>, GenerateOptions) {
        (self.input, self.system.0, self.options)
    }
}

/// Fired after each model call of the loop, before its message is stored.
///
/// The reasoning message as the last hook leaves it is stored in memory and decides what
/// happens next: `stop_agent()` returns it to the caller (its tool calls stay pending);
/// `goto_reasoning(msgs)` stores `msgs` and calls the model again; otherwise its tool calls
/// run, or it is the answer when it has none. Stop wins over goto.
#[derive(Debug, Clone)]
pub struct PostReasoningEvent {
    meta: Meta,
    message: Msg,
    model_name: Arc<str>,
    iteration: usize,
    stop: bool,
    goto: Option<Vec<Msg>>,
}

impl PostReasoningEvent {
    /// Creates the event.
    pub fn new(
        agent: Arc<AgentInfo>,
        reasoning_message: Msg,
        model_name: impl Into<Arc<str>>,
        iteration: usize,
    ) -> Self {
        Self {
            meta: Meta::new(agent),
            message: reasoning_message,
            model_name: model_name.into(),
            iteration,
            stop: false,
            goto: None,
        }
    }

    event_meta_accessors!();

    /// The model's message.
    pub fn reasoning_message(&self) -> &Msg {
        &self.message
    }

    /// Replaces the message that is stored and acted on.
    pub fn set_reasoning_message(&mut self, message: Msg) {
        self.message = message;
    }

    /// The model's name.
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// The iteration, starting at 0 for each call.
    pub fn iteration(&self) -> usize {
        self.iteration
    }

    /// Ends the call after this message is stored; its tool calls stay pending and run when
    /// the agent is called again with no input.
    pub fn stop_agent(&mut self) {
        self.stop = true;
    }

    /// Whether a hook called [`stop_agent`](Self::stop_agent).
    pub fn is_stop_requested(&self) -> bool {
        self.stop
    }

    /// Stores `messages` after this message and calls the model again (without counting an
    /// iteration; capped by `max_goto_reasoning`).
    ///
    /// Validated at once: when the reasoning message has tool calls, `messages` must carry a
    /// result for every one of them, and no message may have the `System` role.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agentscope_core::{AgentInfo, Msg, PostReasoningEvent};
    ///
    /// let mut event = PostReasoningEvent::new(
    ///     Arc::new(AgentInfo::new("a", "1")), Msg::assistant("Done?"), "m", 0);
    /// event.goto_reasoning(vec![Msg::user("Check your answer once more.")]).unwrap();
    /// assert!(event.is_goto_requested());
    /// ```
    pub fn goto_reasoning(&mut self, messages: Vec<Msg>) -> Result<(), HookError> {
        validate_goto(&self.message, &messages)?;
        self.goto = Some(messages);
        Ok(())
    }

    /// Whether a hook called [`goto_reasoning`](Self::goto_reasoning).
    pub fn is_goto_requested(&self) -> bool {
        self.goto.is_some()
    }

    /// The messages of the requested goto.
    pub fn goto_messages(&self) -> Option<&[Msg]> {
        self.goto.as_deref()
    }

    /// Takes the message, the stop flag and the goto messages.
    pub fn into_parts(self) -> (Msg, bool, Option<Vec<Msg>>) {
        (self.message, self.stop, self.goto)
    }
}

/// Checks that `messages` can follow `reasoning_message` in a goto (see
/// [`PostReasoningEvent::goto_reasoning`]).
pub fn validate_goto(reasoning_message: &Msg, messages: &[Msg]) -> Result<(), HookError> {
    if messages.iter().any(|msg| msg.role == Role::System) {
        return Err(HookError::InvalidGoto {
            message: system_injection_message("goto_reasoning messages"),
        });
    }
    let pending = reasoning_message.tool_uses();
    let stray = |message| HookError::InvalidGoto { message };
    if pending.is_empty() {
        return check_tool_results(&pending, messages)
            .map(drop)
            .map_err(stray);
    }
    if messages.is_empty() {
        let names: Vec<&str> = pending.iter().map(|t| t.name.as_str()).collect();
        return Err(HookError::InvalidGoto {
            message: format!(
                "Cannot proceed without ToolResult when there are pending ToolUse. Pending tools: [{}]",
                names.join(", ")
            ),
        });
    }
    let missing: Vec<&str> = pending
        .iter()
        .filter(|tool_use| {
            !messages
                .iter()
                .flat_map(|msg| msg.tool_results())
                .any(|result| result.id == tool_use.id)
        })
        .map(|tool_use| tool_use.id.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(HookError::InvalidGoto {
            message: format!(
                "Missing ToolResult for pending ToolUse. Missing IDs: [{}]",
                missing.join(", ")
            ),
        });
    }
    // Every call is answered; results that answer nothing (or answer twice) are rejected too.
    check_tool_results(&pending, messages)
        .map(drop)
        .map_err(stray)
}

/// Checks the tool results carried by `messages`: each must answer one of the `pending` tool
/// calls (or a tool call earlier in `messages`), and no call may be answered twice. Returns
/// the ids of the `pending` calls that `messages` answer, in call order.
///
/// The engine applies this to a call's input, to observed messages and to goto messages, so
/// no result that answers nothing ever reaches memory.
///
/// ```
/// use agentscope_core::{check_tool_results, Msg, ToolResultBlock, ToolUseBlock};
/// use serde_json::json;
///
/// let call = ToolUseBlock::new("c1", "calc", json!({}));
/// let answer = [Msg::tool_result(ToolResultBlock::text("c1", "calc", "2"))];
/// assert_eq!(check_tool_results(&[&call], &answer).unwrap(), ["c1"]);
///
/// let stray = [Msg::tool_result(ToolResultBlock::text("zz", "calc", "2"))];
/// assert!(check_tool_results(&[&call], &stray).unwrap_err().contains("'zz'"));
/// ```
pub fn check_tool_results(
    pending: &[&ToolUseBlock],
    messages: &[Msg],
) -> Result<Vec<String>, String> {
    let mut callable: Vec<&str> = pending.iter().map(|call| call.id.as_str()).collect();
    let mut answered: Vec<&str> = Vec::new();
    for msg in messages {
        for block in &msg.content {
            match block {
                ContentBlock::ToolUse(call) => callable.push(&call.id),
                ContentBlock::ToolResult(result) => {
                    if answered.contains(&result.id.as_str()) {
                        return Err(format!(
                            "Duplicate tool result for tool call id '{}'",
                            result.id
                        ));
                    }
                    if !callable.contains(&result.id.as_str()) {
                        let ids: Vec<&str> = pending.iter().map(|call| call.id.as_str()).collect();
                        return Err(format!(
                            "Tool result id '{}' does not match any pending tool call. Pending tool call ids: [{}]",
                            result.id,
                            ids.join(", ")
                        ));
                    }
                    answered.push(&result.id);
                }
                _ => {}
            }
        }
    }
    Ok(pending
        .iter()
        .filter(|call| answered.contains(&call.id.as_str()))
        .map(|call| call.id.clone())
        .collect())
}

/// A streamed model chunk during reasoning (a notification: hooks cannot change it).
#[derive(Debug, Clone)]
pub struct ReasoningChunkEvent {
    meta: Meta,
    model_name: Arc<str>,
    chunk: Msg,
    accumulated: Msg,
}

impl ReasoningChunkEvent {
    /// Creates the event.
    pub fn new(
        agent: Arc<AgentInfo>,
        model_name: impl Into<Arc<str>>,
        incremental_chunk: Msg,
        accumulated: Msg,
    ) -> Self {
        Self {
            meta: Meta::new(agent),
            model_name: model_name.into(),
            chunk: incremental_chunk,
            accumulated,
        }
    }

    event_meta_accessors!();

    /// What this chunk added (text, thinking or tool-call fragments).
    pub fn incremental_chunk(&self) -> &Msg {
        &self.chunk
    }

    /// The message so far (text and thinking merged, tool calls assembled).
    pub fn accumulated(&self) -> &Msg {
        &self.accumulated
    }

    /// The model's name.
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// Takes the chunk and the accumulated message.
    pub fn into_parts(self) -> (Msg, Msg) {
        (self.chunk, self.accumulated)
    }
}

/// Fired for each pending tool call before any tool of the batch runs.
#[derive(Debug, Clone)]
pub struct PreActingEvent {
    meta: Meta,
    tool_use: ToolUseBlock,
    skip: Option<ToolResultBlock>,
}

impl PreActingEvent {
    /// Creates the event.
    pub fn new(agent: Arc<AgentInfo>, tool_use: ToolUseBlock) -> Self {
        Self {
            meta: Meta::new(agent),
            tool_use,
            skip: None,
        }
    }

    event_meta_accessors!();

    /// The tool call about to run.
    pub fn tool_use(&self) -> &ToolUseBlock {
        &self.tool_use
    }

    /// Replaces what executes (name and arguments). The id must stay the same, since the
    /// stored reasoning message refers to it.
    pub fn set_tool_use(&mut self, tool_use: ToolUseBlock) -> Result<(), HookError> {
        if tool_use.id != self.tool_use.id {
            return Err(HookError::InvalidModification {
                message: format!(
                    "set_tool_use must keep the tool call id '{}' (got '{}')",
                    self.tool_use.id, tool_use.id
                ),
            });
        }
        self.tool_use = tool_use;
        Ok(())
    }

    /// Does not run the tool; `result` is used instead (its id and name are set to the
    /// call's).
    pub fn skip_with(&mut self, mut result: ToolResultBlock) {
        result.id.clone_from(&self.tool_use.id);
        result.name.clone_from(&self.tool_use.name);
        self.skip = Some(result);
    }

    /// Whether a hook called [`skip_with`](Self::skip_with).
    pub fn is_skipped(&self) -> bool {
        self.skip.is_some()
    }

    /// The result given to [`skip_with`](Self::skip_with).
    pub fn skip_result(&self) -> Option<&ToolResultBlock> {
        self.skip.as_ref()
    }

    /// Takes the tool call and the skip result.
    pub fn into_parts(self) -> (ToolUseBlock, Option<ToolResultBlock>) {
        (self.tool_use, self.skip)
    }
}

/// Fired for each tool result, in call order, after the whole batch ran.
///
/// The result as the last hook leaves it is what memory and the stream get.
#[derive(Debug, Clone)]
pub struct PostActingEvent {
    meta: Meta,
    tool_use: ToolUseBlock,
    result: ToolResultBlock,
    stop: bool,
}

impl PostActingEvent {
    /// Creates the event.
    pub fn new(
        agent: Arc<AgentInfo>,
        tool_use: ToolUseBlock,
        tool_result: ToolResultBlock,
    ) -> Self {
        Self {
            meta: Meta::new(agent),
            tool_use,
            result: tool_result,
            stop: false,
        }
    }

    event_meta_accessors!();

    /// The tool call that ran.
    pub fn tool_use(&self) -> &ToolUseBlock {
        &self.tool_use
    }

    /// Its result.
    pub fn tool_result(&self) -> &ToolResultBlock {
        &self.result
    }

    /// Replaces the result (its id and name are set to the call's).
    pub fn set_tool_result(&mut self, mut result: ToolResultBlock) {
        result.id.clone_from(&self.tool_use.id);
        result.name.clone_from(&self.tool_use.name);
        self.result = result;
    }

    /// Ends the call after this batch; the caller gets the last tool message.
    pub fn stop_agent(&mut self) {
        self.stop = true;
    }

    /// Whether a hook called [`stop_agent`](Self::stop_agent).
    pub fn is_stop_requested(&self) -> bool {
        self.stop
    }

    /// Takes the result and the stop flag.
    pub fn into_parts(self) -> (ToolResultBlock, bool) {
        (self.result, self.stop)
    }
}

/// A progress chunk a running tool emitted (a notification).
#[derive(Debug, Clone)]
pub struct ActingChunkEvent {
    meta: Meta,
    tool_use: Arc<ToolUseBlock>,
    chunk: ToolResultBlock,
}

impl ActingChunkEvent {
    /// Creates the event.
    pub fn new(agent: Arc<AgentInfo>, tool_use: Arc<ToolUseBlock>, chunk: ToolResultBlock) -> Self {
        Self {
            meta: Meta::new(agent),
            tool_use,
            chunk,
        }
    }

    event_meta_accessors!();

    /// The running tool call.
    pub fn tool_use(&self) -> &ToolUseBlock {
        &self.tool_use
    }

    /// The progress chunk (id and name of the call, the emitted blocks as output).
    pub fn chunk(&self) -> &ToolResultBlock {
        &self.chunk
    }

    /// Takes the chunk.
    pub fn into_chunk(self) -> ToolResultBlock {
        self.chunk
    }
}

/// Fired before the summary model call at the iteration limit.
#[derive(Debug, Clone)]
pub struct PreSummaryEvent {
    meta: Meta,
    input: Vec<Msg>,
    system: SystemSlot,
    options: GenerateOptions,
    max_iterations: usize,
    current_iteration: usize,
}

impl PreSummaryEvent {
    /// Creates the event.
    pub fn new(
        agent: Arc<AgentInfo>,
        input_messages: Vec<Msg>,
        system_message: Option<Msg>,
        generate_options: GenerateOptions,
        max_iterations: usize,
        current_iteration: usize,
    ) -> Self {
        Self {
            meta: Meta::new(agent),
            input: input_messages,
            system: SystemSlot(system_message),
            options: generate_options,
            max_iterations,
            current_iteration,
        }
    }

    event_meta_accessors!();
    system_message_accessors!();

    /// The messages the model will get after the system message: memory plus the summary
    /// hint (a user message that is not stored).
    pub fn input_messages(&self) -> &[Msg] {
        &self.input
    }

    /// Replaces the messages for the summary call.
    pub fn set_input_messages(&mut self, messages: Vec<Msg>) {
        self.input = messages;
    }

    /// The generation options for the summary call.
    pub fn generate_options(&self) -> &GenerateOptions {
        &self.options
    }

    /// Replaces the generation options for the summary call.
    pub fn set_generate_options(&mut self, options: GenerateOptions) {
        self.options = options;
    }

    /// The agent's iteration limit.
    pub fn max_iterations(&self) -> usize {
        self.max_iterations
    }

    /// How many iterations ran.
    pub fn current_iteration(&self) -> usize {
        self.current_iteration
    }

    /// Takes the messages, system message and options.
    pub fn into_parts(self) -> (Vec<Msg>, Option<Msg>, GenerateOptions) {
        (self.input, self.system.0, self.options)
    }
}

/// Fired after the summary; the summary message is stored and returned.
#[derive(Debug, Clone)]
pub struct PostSummaryEvent {
    meta: Meta,
    message: Msg,
}

impl PostSummaryEvent {
    /// Creates the event.
    pub fn new(agent: Arc<AgentInfo>, summary_message: Msg) -> Self {
        Self {
            meta: Meta::new(agent),
            message: summary_message,
        }
    }

    event_meta_accessors!();

    /// The summary.
    pub fn summary_message(&self) -> &Msg {
        &self.message
    }

    /// Replaces the summary that is stored and returned.
    pub fn set_summary_message(&mut self, message: Msg) {
        self.message = message;
    }

    /// Takes the summary.
    pub fn into_summary_message(self) -> Msg {
        self.message
    }
}

/// A streamed summary chunk (a notification).
#[derive(Debug, Clone)]
pub struct SummaryChunkEvent {
    meta: Meta,
    chunk: Msg,
    accumulated: Msg,
}

impl SummaryChunkEvent {
    /// Creates the event.
    pub fn new(agent: Arc<AgentInfo>, incremental_chunk: Msg, accumulated: Msg) -> Self {
        Self {
            meta: Meta::new(agent),
            chunk: incremental_chunk,
            accumulated,
        }
    }

    event_meta_accessors!();

    /// What this chunk added.
    pub fn incremental_chunk(&self) -> &Msg {
        &self.chunk
    }

    /// The summary so far.
    pub fn accumulated(&self) -> &Msg {
        &self.accumulated
    }

    /// Takes the chunk and the accumulated message.
    pub fn into_parts(self) -> (Msg, Msg) {
        (self.chunk, self.accumulated)
    }
}

/// Fired when a call failed, before the error reaches the caller (a notification: a hook's
/// `Err` here is logged and never replaces the original error).
#[derive(Debug, Clone)]
pub struct ErrorEvent {
    meta: Meta,
    error: AgentError,
}

impl ErrorEvent {
    /// Creates the event.
    pub fn new(agent: Arc<AgentInfo>, error: AgentError) -> Self {
        Self {
            meta: Meta::new(agent),
            error,
        }
    }

    event_meta_accessors!();

    /// The error the caller will get.
    pub fn error(&self) -> &AgentError {
        &self.error
    }

    /// Takes the error.
    pub fn into_error(self) -> AgentError {
        self.error
    }
}

/// One moment of an agent call, as hooks see it.
///
/// The enum is closed: match it exhaustively and the compiler tells you when you forgot one.
///
/// ```
/// use agentscope_core::HookEvent;
///
/// fn describe(event: &HookEvent) -> String {
///     match event {
///         HookEvent::PreCall(e) => format!("call with {} new messages", e.input_messages().len()),
///         HookEvent::PostCall(e) => format!("reply: {}", e.final_message().text()),
///         HookEvent::PreReasoning(e) => format!("reasoning #{}", e.iteration()),
///         HookEvent::PostReasoning(e) => format!("model said: {}", e.reasoning_message().text()),
///         HookEvent::ReasoningChunk(e) => format!("delta: {}", e.incremental_chunk().text()),
///         HookEvent::PreActing(e) => format!("calling {}", e.tool_use().name),
///         HookEvent::PostActing(e) => format!("{} returned", e.tool_use().name),
///         HookEvent::ActingChunk(e) => format!("{} progress", e.tool_use().name),
///         HookEvent::PreSummary(_) => "summarising".to_owned(),
///         HookEvent::PostSummary(e) => format!("summary: {}", e.summary_message().text()),
///         HookEvent::SummaryChunk(_) => "summary delta".to_owned(),
///         HookEvent::Error(e) => format!("failed: {}", e.error()),
///     }
/// }
/// ```
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum HookEvent {
    /// See [`PreCallEvent`].
    PreCall(PreCallEvent),
    /// See [`PostCallEvent`].
    PostCall(PostCallEvent),
    /// See [`PreReasoningEvent`].
    PreReasoning(PreReasoningEvent),
    /// See [`PostReasoningEvent`].
    PostReasoning(PostReasoningEvent),
    /// See [`ReasoningChunkEvent`].
    ReasoningChunk(ReasoningChunkEvent),
    /// See [`PreActingEvent`].
    PreActing(PreActingEvent),
    /// See [`PostActingEvent`].
    PostActing(PostActingEvent),
    /// See [`ActingChunkEvent`].
    ActingChunk(ActingChunkEvent),
    /// See [`PreSummaryEvent`].
    PreSummary(PreSummaryEvent),
    /// See [`PostSummaryEvent`].
    PostSummary(PostSummaryEvent),
    /// See [`SummaryChunkEvent`].
    SummaryChunk(SummaryChunkEvent),
    /// See [`ErrorEvent`].
    Error(ErrorEvent),
}

macro_rules! each_event {
    ($event:expr, $e:ident => $body:expr) => {
        match $event {
            HookEvent::PreCall($e) => $body,
            HookEvent::PostCall($e) => $body,
            HookEvent::PreReasoning($e) => $body,
            HookEvent::PostReasoning($e) => $body,
            HookEvent::ReasoningChunk($e) => $body,
            HookEvent::PreActing($e) => $body,
            HookEvent::PostActing($e) => $body,
            HookEvent::ActingChunk($e) => $body,
            HookEvent::PreSummary($e) => $body,
            HookEvent::PostSummary($e) => $body,
            HookEvent::SummaryChunk($e) => $body,
            HookEvent::Error($e) => $body,
        }
    };
}

impl HookEvent {
    /// The event's kind.
    pub fn event_type(&self) -> HookEventType {
        match self {
            HookEvent::PreCall(_) => HookEventType::PreCall,
            HookEvent::PostCall(_) => HookEventType::PostCall,
            HookEvent::PreReasoning(_) => HookEventType::PreReasoning,
            HookEvent::PostReasoning(_) => HookEventType::PostReasoning,
            HookEvent::ReasoningChunk(_) => HookEventType::ReasoningChunk,
            HookEvent::PreActing(_) => HookEventType::PreActing,
            HookEvent::PostActing(_) => HookEventType::PostActing,
            HookEvent::ActingChunk(_) => HookEventType::ActingChunk,
            HookEvent::PreSummary(_) => HookEventType::PreSummary,
            HookEvent::PostSummary(_) => HookEventType::PostSummary,
            HookEvent::SummaryChunk(_) => HookEventType::SummaryChunk,
            HookEvent::Error(_) => HookEventType::Error,
        }
    }

    /// The agent the event belongs to.
    pub fn agent(&self) -> &AgentInfo {
        each_event!(self, e => e.agent())
    }

    /// When the event was created.
    pub fn timestamp(&self) -> DateTime<Utc> {
        each_event!(self, e => e.timestamp())
    }
}

macro_rules! from_event {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        $(impl From<$ty> for HookEvent {
            fn from(event: $ty) -> Self {
                HookEvent::$variant(event)
            }
        }

        impl TryFrom<HookEvent> for $ty {
            type Error = HookEvent;

            /// Unwraps the event, or gives it back when it is of another kind.
            fn try_from(event: HookEvent) -> Result<Self, HookEvent> {
                match event {
                    HookEvent::$variant(inner) => Ok(inner),
                    other => Err(other),
                }
            }
        })*
    };
}

from_event!(
    PreCall(PreCallEvent),
    PostCall(PostCallEvent),
    PreReasoning(PreReasoningEvent),
    PostReasoning(PostReasoningEvent),
    ReasoningChunk(ReasoningChunkEvent),
    PreActing(PreActingEvent),
    PostActing(PostActingEvent),
    ActingChunk(ActingChunkEvent),
    PreSummary(PreSummaryEvent),
    PostSummary(PostSummaryEvent),
    SummaryChunk(SummaryChunkEvent),
    Error(ErrorEvent),
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn agent() -> Arc<AgentInfo> {
        Arc::new(AgentInfo::new("a", "id-1"))
    }

    #[test]
    fn event_type_set_operations() {
        let set = HookEventType::PreCall | HookEventType::Error;
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [HookEventType::PreCall, HookEventType::Error]
        );
        assert!(
            set.without(HookEventType::Error)
                .contains(HookEventType::PreCall)
        );
        assert!(
            !set.without(HookEventType::Error)
                .contains(HookEventType::Error)
        );
        assert_eq!(HookEventTypes::ALL.iter().count(), 12);
        assert_eq!(HookEventTypes::CHUNKS.iter().count(), 3);
        assert!(HookEventType::ALL.iter().all(|t| t.index() == *t as usize));
    }

    #[test]
    fn append_system_content_creates_or_appends() {
        let mut event =
            PreReasoningEvent::new(agent(), vec![], None, "m", GenerateOptions::default(), 0);
        event.append_system_content("first");
        assert_eq!(event.system_message().unwrap().text(), "first");
        assert_eq!(event.system_message().unwrap().name, "system");
        event.append_system_content("second");
        assert_eq!(event.system_message().unwrap().text(), "first\nsecond");
        event.set_system_message(Some(Msg::user("coerced")));
        assert_eq!(event.system_message().unwrap().role, Role::System);
        event.set_system_message(None);
        assert!(event.system_message().is_none());
    }

    #[test]
    fn goto_validation_messages() {
        let mut reasoning = Msg::assistant("");
        reasoning
            .content
            .push(ToolUseBlock::new("c1", "calc", json!({})).into());
        reasoning
            .content
            .push(ToolUseBlock::new("c2", "search", json!({})).into());
        let mut event = PostReasoningEvent::new(agent(), reasoning, "m", 0);

        let err = event.goto_reasoning(vec![]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Cannot proceed without ToolResult when there are pending ToolUse. Pending tools: [calc, search]"
        );
        let err = event
            .goto_reasoning(vec![Msg::tool_result(ToolResultBlock::text(
                "c1", "calc", "1",
            ))])
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Missing ToolResult for pending ToolUse. Missing IDs: [c2]"
        );
        assert!(!event.is_goto_requested());

        let err = event.goto_reasoning(vec![Msg::system("x")]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Hooks must not inject SYSTEM messages")
        );

        event
            .goto_reasoning(vec![
                Msg::tool_result(ToolResultBlock::text("c1", "calc", "1")),
                Msg::tool_result(ToolResultBlock::text("c2", "search", "2")),
            ])
            .unwrap();
        assert!(event.is_goto_requested());
    }

    #[test]
    fn set_tool_use_keeps_id_and_skip_normalises_result() {
        let mut event =
            PreActingEvent::new(agent(), ToolUseBlock::new("c1", "calc", json!({"x": 1})));
        let err = event
            .set_tool_use(ToolUseBlock::new("other", "calc", json!({})))
            .unwrap_err();
        assert!(matches!(err, HookError::InvalidModification { .. }));
        event
            .set_tool_use(ToolUseBlock::new("c1", "calc", json!({"x": 2})))
            .unwrap();
        assert_eq!(event.tool_use().input, json!({"x": 2}));
        event.skip_with(ToolResultBlock::text("", "", "cached"));
        let (_, skip) = event.into_parts();
        let skip = skip.unwrap();
        assert_eq!((skip.id.as_str(), skip.name.as_str()), ("c1", "calc"));
    }

    #[test]
    fn hook_event_accessors() {
        let event = HookEvent::from(PostCallEvent::new(agent(), Msg::assistant("hi")));
        assert_eq!(event.event_type(), HookEventType::PostCall);
        assert_eq!(event.agent().name(), "a");
        assert_eq!(event.agent().id(), "id-1");
        assert!(event.timestamp() <= Utc::now());
    }
}
