//! [`StructuredOutputHook`]: typed answers for
//! [`ReActAgent::call_structured`](crate::ReActAgent::call_structured).
//!
//! | Priority | Events | Changes |
//! |---|---|---|
//! | 50 | PreReasoning, PostReasoning, PostActing | after a reminder, forces `tool_choice` to `generate_response`; a text answer gets a reminder through `goto_reasoning` (at most 3, then the call fails); a successful `generate_response` result calls `stop_agent()` |
//!
//! See [`StructuredOutputHook`] for the behaviour and what memory holds afterwards.

use std::collections::HashSet;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agentscope_core::{
    AgentError, ContentBlock, GenerateReason, Hook, HookError, HookEvent, Memory, Msg, Role,
    SharedString, Tool, ToolChoice, ToolContext, ToolError, ToolKind, ToolOutput,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Steers one [`call_structured`](crate::ReActAgent::call_structured) call until the model
/// answers through the `generate_response` tool.
///
/// Priority 50; handles PreReasoning, PostReasoning and PostActing. There is nothing to
/// configure and no public constructor: the hook is never registered on an agent (so
/// [`hook_order`](crate::ReActAgent::hook_order) does not list it). `call_structured`
/// installs it, together with a temporary `generate_response` tool whose parameter schema is
/// the JSON schema of `T` (schemars), in the chain and toolkit of that one call; other calls
/// never see either.
///
/// # What happens during the call
///
/// - The model gets the agent's tools plus `generate_response`. The toolkit validates the
///   arguments against `T`'s schema, and the tool checks that they deserialise into `T`;
///   invalid arguments go back to the model as an error result
///   (`"Error: Parameter validation failed for tool 'generate_response': ..."`) and it tries
///   again.
/// - A text answer (a reasoning message without tool calls) is not accepted: the hook answers
///   it with a USER reminder (metadata `"structured_output_reminder": true`, text
///   [`StructuredOutputHook::REMINDER`]) through `goto_reasoning`, and from then on every
///   reasoning step of the call has `tool_choice = Specific("generate_response")`. After
///   [`MAX_REMINDERS`](StructuredOutputHook::MAX_REMINDERS) reminders the next text answer
///   fails the call with [`AgentError::Hook`] ("the model did not call generate_response
///   after 3 reminders").
/// - The first successful `generate_response` result stops the agent (after the batch, like
///   any PostActing stop); its arguments are the value.
///
/// # Memory afterwards
///
/// Once the loop ends, and before PostCall (so every PostCall hook sees the final message),
/// the messages this call stored are rewritten while the call still holds the agent:
///
/// - kept: the input, real tool calls and their results (an assistant message that also
///   called `generate_response` keeps its other calls, and its text);
/// - dropped: the reminders, the text answers that drew a reminder, every `generate_response`
///   tool call and its result (an assistant message left without tool calls is dropped);
/// - added on success: ONE final assistant message (named after the agent) whose text is the
///   value's JSON, with `metadata["structured_output"]` = the value and the generate reason
///   [`GenerateReason::StructuredOutput`]. That message is what PostCall hooks get and what
///   `call_structured_with_message` returns (after PostCall).
///
/// The same clean-up runs when the call fails or is dropped (nothing is added then): after
/// the reminders run out, memory holds the input (and any real tool calls with their
/// results), not the text answers. When the loop ends without a value (iteration limit,
/// interrupt, another hook's stop, a suspended tool), its reply stays in memory and the call
/// fails with [`AgentError::StructuredOutput`].
///
/// The rewrite replaces memory from the index where the call started. The busy check keeps
/// other calls out meanwhile; with `check_running(false)`, don't run other calls on the
/// same agent while a structured call runs.
#[derive(Clone)]
pub struct StructuredOutputHook {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// Reminders sent so far.
    reminders: usize,
    /// Once the model ignored the tool, every reasoning step forces it.
    force: bool,
    /// (text answer id, reminder id) for every reminder requested.
    reminded: Vec<(SharedString, SharedString)>,
    /// The first successful `generate_response` arguments.
    value: Option<Value>,
    /// The value of a successful call, for the caller to deserialise.
    delivered: Option<Value>,
}

impl StructuredOutputHook {
    /// The hook's name in the chain.
    pub const NAME: &'static str = "structured_output";
    /// The hook's priority.
    pub const PRIORITY: i32 = 50;
    /// The temporary tool the model must call.
    pub const TOOL_NAME: &'static str = "generate_response";
    /// Text answers tolerated (each answered with a reminder) before the call fails.
    pub const MAX_REMINDERS: usize = 3;
    /// The metadata key marking reminder messages (value `true`).
    pub const REMINDER_KEY: &'static str = "structured_output_reminder";
    /// The metadata key holding the value in the final message.
    pub const VALUE_KEY: &'static str = "structured_output";
    /// The reminder's text.
    pub const REMINDER: &'static str = "You must give your final response by calling the \
        'generate_response' function, with the response as its arguments. Call it now instead \
        of answering in text.";
    /// The `generate_response` tool's description.
    pub const TOOL_DESCRIPTION: &'static str = "Generates the final response. Call this \
        function once you have the answer; its arguments are the response, in the required \
        structure.";

    /// A hook for one structured call. `call_structured` registers it, the tool from
    /// [`tool`](Self::tool) and [`finish`](Self::finish) for that call only.
    pub(crate) fn new() -> Self {
        Self {
            state: Arc::default(),
        }
    }

    /// The `generate_response` tool for `T` (a [`ToolKind::Answer`] tool).
    pub(crate) fn tool<T>() -> impl Tool
    where
        T: DeserializeOwned + JsonSchema + 'static,
    {
        GenerateResponse::<T>::new()
    }

    /// The value of a successful call (taken once).
    pub(crate) fn take_value(&self) -> Option<Value> {
        self.state().delivered.take()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn reminder() -> Msg {
        Msg::builder()
            .role(Role::User)
            .text(Self::REMINDER)
            .metadata(Self::REMINDER_KEY, true)
            .build()
    }

    fn handle(&self, event: &mut HookEvent) -> Result<(), HookError> {
        match event {
            HookEvent::PreReasoning(e) if self.state().force => {
                let mut options = e.generate_options().clone();
                options.tool_choice = ToolChoice::Specific(Self::TOOL_NAME.to_owned());
                e.set_generate_options(options);
            }
            HookEvent::PostReasoning(e) => {
                // Tool calls are acted on; a stop requested by another hook wins anyway.
                if e.reasoning_message().has_tool_uses() || e.is_stop_requested() {
                    return Ok(());
                }
                let mut state = self.state();
                if state.reminders >= Self::MAX_REMINDERS {
                    return Err(HookError::msg(format!(
                        "the model did not call {} after {} reminders",
                        Self::TOOL_NAME,
                        Self::MAX_REMINDERS
                    )));
                }
                let reminder = Self::reminder();
                let reminder_id = reminder.id.clone();
                // Another hook's goto messages stay; the reminder comes last.
                let mut messages = e.goto_messages().map(<[Msg]>::to_vec).unwrap_or_default();
                messages.push(reminder);
                e.goto_reasoning(messages)?;
                state.reminders += 1;
                state.force = true;
                state
                    .reminded
                    .push((e.reasoning_message().id.clone(), reminder_id));
            }
            HookEvent::PostActing(e)
                if e.tool_use().name == Self::TOOL_NAME && !e.tool_result().is_error =>
            {
                let mut state = self.state();
                if state.value.is_none() {
                    state.value = Some(e.tool_use().input.clone().into());
                }
                e.stop_agent();
            }
            _ => {}
        }
        Ok(())
    }

    /// After the loop (`outcome` is `None` when the call was dropped): rewrites what the call
    /// stored and turns a successful outcome into the final message.
    pub(crate) fn finish(
        &self,
        memory: &dyn Memory,
        start: usize,
        outcome: Option<Result<Msg, AgentError>>,
        agent_name: &str,
    ) -> Result<Msg, AgentError> {
        let mut state = self.state();
        let all = memory.messages();
        let start = start.min(all.len());
        let kept = clean(&all[start..], &state.reminded);
        let value = state.value.take();
        let outcome = outcome.unwrap_or_else(|| {
            Err(AgentError::StructuredOutput {
                message: "the call was dropped".to_owned(),
            })
        });
        let result = match (outcome, value) {
            (Ok(reply), Some(value))
                if reply.generate_reason() != Some(GenerateReason::ToolSuspended) =>
            {
                let reply = Msg::builder()
                    .role(Role::Assistant)
                    .name(agent_name)
                    .text(value.to_string())
                    .metadata(Self::VALUE_KEY, value.clone())
                    .build()
                    .with_generate_reason(GenerateReason::StructuredOutput);
                state.delivered = Some(value);
                Ok(reply)
            }
            (Ok(reply), _) => Err(AgentError::StructuredOutput {
                message: format!(
                    "the call ended before the model called {} (it ended with {})",
                    Self::TOOL_NAME,
                    reply
                        .generate_reason()
                        .map_or_else(|| "no generate reason".to_owned(), |r| format!("{r:?}"))
                ),
            }),
            (Err(error), _) => Err(error),
        };
        let changed = result.is_ok() || kept.as_slice() != &all[start..];
        if changed {
            let mut rewritten = all[..start].to_vec();
            rewritten.extend(kept);
            if let Ok(reply) = &result {
                rewritten.push(reply.clone());
            }
            memory.clear();
            memory.extend(rewritten);
        }
        result
    }
}

/// The messages of `tail` without the structured-output engine (see the module docs).
fn clean(tail: &[Msg], reminded: &[(SharedString, SharedString)]) -> Vec<Msg> {
    let is_reminder = |msg: &Msg| {
        msg.metadata
            .get(StructuredOutputHook::REMINDER_KEY)
            .and_then(Value::as_bool)
            == Some(true)
    };
    let stored_reminders: HashSet<&str> = tail
        .iter()
        .filter(|msg| is_reminder(msg))
        .map(|msg| msg.id.as_str())
        .collect();
    // A text answer goes only when its reminder was stored (another hook's stop wins over
    // the reminder, and then the answer is the call's reply).
    let reminded_answers: HashSet<&str> = reminded
        .iter()
        .filter(|(_, reminder)| stored_reminders.contains(reminder.as_str()))
        .map(|(answer, _)| answer.as_str())
        .collect();
    let engine: HashSet<&str> = tail
        .iter()
        .flat_map(Msg::tool_uses)
        .filter(|call| call.name == StructuredOutputHook::TOOL_NAME)
        .map(|call| call.id.as_str())
        .collect();
    tail.iter()
        .filter(|msg| !is_reminder(msg) && !reminded_answers.contains(msg.id.as_str()))
        .filter_map(|msg| {
            let is_plumbing = |block: &ContentBlock| match block {
                ContentBlock::ToolUse(call) => engine.contains(call.id.as_str()),
                ContentBlock::ToolResult(result) => engine.contains(result.id.as_str()),
                _ => false,
            };
            if !msg.content.iter().any(is_plumbing) {
                return Some(msg.clone());
            }
            let mut msg = msg.clone();
            msg.content.retain(|block| !is_plumbing(block));
            let keep = match msg.role {
                Role::Assistant => msg.has_tool_uses(),
                _ => !msg.content.is_empty(),
            };
            keep.then_some(msg)
        })
        .collect()
}

impl Hook for StructuredOutputHook {
    fn on_event(
        &self,
        event: &mut HookEvent,
    ) -> impl Future<Output = Result<(), HookError>> + Send {
        std::future::ready(self.handle(event))
    }

    builtin_hook_meta!(PreReasoning | PostReasoning | PostActing);
}

impl std::fmt::Debug for StructuredOutputHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        f.debug_struct("StructuredOutputHook")
            .field("reminders", &state.reminders)
            .field("value", &state.value)
            .finish()
    }
}

/// The temporary `generate_response` tool: its schema is `T`'s, and it succeeds with the
/// arguments' JSON when they deserialise into `T`.
struct GenerateResponse<T> {
    parameters: Value,
    _type: PhantomData<fn() -> T>,
}

impl<T: JsonSchema> GenerateResponse<T> {
    fn new() -> Self {
        Self {
            parameters: crate::typed_tool::schema_of::<T>(),
            _type: PhantomData,
        }
    }
}

impl<T: DeserializeOwned + JsonSchema + 'static> Tool for GenerateResponse<T> {
    fn name(&self) -> &str {
        StructuredOutputHook::TOOL_NAME
    }

    fn description(&self) -> &str {
        StructuredOutputHook::TOOL_DESCRIPTION
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    fn call(
        &self,
        input: Value,
        _ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        let result = match serde_json::from_value::<T>(input.clone()) {
            Ok(_) => Ok(ToolOutput::text(input.to_string())),
            Err(error) => Err(ToolError::invalid_arguments(error)),
        };
        std::future::ready(result)
    }

    /// It carries the answer and runs nothing: approval hooks never hold it.
    fn kind(&self) -> ToolKind {
        ToolKind::Answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentscope_core::{ToolResultBlock, ToolUseBlock};
    use serde_json::json;

    fn assistant(blocks: Vec<ContentBlock>) -> Msg {
        Msg::new(Role::Assistant, "a", blocks)
    }

    #[test]
    fn clean_drops_plumbing_and_keeps_real_work() {
        let user = Msg::user("q");
        let text = Msg::assistant("plain text");
        let reminder = StructuredOutputHook::reminder();
        let mixed = assistant(vec![
            ContentBlock::text("both"),
            ToolUseBlock::new("c1", "calc", json!({})).into(),
            ToolUseBlock::new("g1", "generate_response", json!({"x": 1})).into(),
        ]);
        let real = Msg::tool_result(ToolResultBlock::text("c1", "calc", "2"));
        let gen_result = Msg::tool_result(ToolResultBlock::text("g1", "generate_response", "{}"));
        let only_gen = assistant(vec![
            ToolUseBlock::new("g2", "generate_response", json!({})).into(),
        ]);
        let tail = vec![
            user.clone(),
            text.clone(),
            reminder.clone(),
            mixed.clone(),
            real.clone(),
            gen_result,
            only_gen,
        ];
        let kept = clean(&tail, &[(text.id.clone(), reminder.id.clone())]);
        let mut expected_mixed = mixed.clone();
        expected_mixed.content.truncate(2);
        assert_eq!(kept, vec![user, expected_mixed, real]);
    }

    #[test]
    fn an_answer_whose_reminder_was_not_stored_stays() {
        let text = Msg::assistant("stopped by another hook");
        let kept = clean(
            std::slice::from_ref(&text),
            &[(text.id.clone(), "never-stored".into())],
        );
        assert_eq!(kept, vec![text]);
    }

    #[test]
    fn the_tool_checks_deserialisation() {
        #[derive(serde::Deserialize, JsonSchema)]
        struct Answer {
            #[allow(dead_code)]
            n: u8,
        }
        let tool = GenerateResponse::<Answer>::new();
        assert_eq!(tool.parameters()["required"], json!(["n"]));
        let ctx = || ToolContext::new(ToolUseBlock::new("g", "generate_response", json!({})));
        let ok = futures::executor::block_on(tool.call(json!({"n": 7}), ctx()));
        assert!(matches!(ok, Ok(ToolOutput::Content(_))));
        let bad = futures::executor::block_on(tool.call(json!({"n": 300}), ctx()));
        assert!(matches!(bad, Err(ToolError::InvalidArguments { .. })));
    }
}
