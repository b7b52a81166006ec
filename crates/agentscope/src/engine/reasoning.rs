//! Reasoning (step 5 of the lifecycle): PreReasoning, the model call with chunk events,
//! PostReasoning, and what the message decides (stop, goto, answer, act).

use agentscope_core::engine::conversation::{check_goto, check_no_system, check_reply};
use agentscope_core::engine::{self, EventParts, TypedEvent, events};
use agentscope_core::{
    AgentError, ChatAccumulator, Content, ContentBlock, GenerateOptions, GenerateReason, HookEvent,
    HookEventType, Model, ModelError, ModelRequest, Msg, ToolUseBlock,
};
use futures::StreamExt;
use futures::future::{Either, select};
use tracing::Instrument;

use super::{Call, Halt, Step, with_system};
use crate::call_ids::UniqueCallIds;
use crate::engine::spans::Decision;
use crate::stream::EventType;
use crate::sync::lock;

pub(super) enum Reasoned {
    /// The call ends with this message (an answer, or a stop).
    Done(Msg),
    /// A hook asked to reason again (goto).
    Again,
    /// Run these tool calls.
    Act(Vec<ToolUseBlock>),
}

/// Which model call is streaming: it decides the chunk event kinds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Reasoning,
    Summary,
}

impl Phase {
    fn hook_kind(self) -> HookEventType {
        match self {
            Phase::Reasoning => HookEventType::ReasoningChunk,
            Phase::Summary => HookEventType::SummaryChunk,
        }
    }

    fn event_type(self) -> EventType {
        match self {
            Phase::Reasoning => EventType::Reasoning,
            Phase::Summary => EventType::Summary,
        }
    }
}

/// What runs after a reasoning step that asks for tools.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Then {
    /// The ReAct loop acts on the calls at once.
    Act,
    /// The step returns to a custom reply, which may do anything before it acts.
    Return,
}

impl Call<'_> {
    pub(super) async fn reason(&mut self, then: Then) -> Step<Reasoned> {
        let request = self.reasoning_request(false).await?;
        let span = self.chat_span();
        let message = match self
            .generate(request, Phase::Reasoning)
            .instrument(span)
            .await
        {
            // The provider refused the input as too long for its window: context hooks get
            // one chance to shrink it (PreReasoning again, `context_exceeded()` set).
            Err(Halt::Failed(AgentError::Model(error)))
                if error.is_context_length()
                    && self.setup.hooks.is_interested(HookEventType::PreReasoning) =>
            {
                tracing::warn!(
                    agent = %self.setup.config.info.name(),
                    iteration = self.progress.iteration,
                    "the model refused the input as too long; asking PreReasoning hooks to compact it"
                );
                let request = self.reasoning_request(true).await?;
                let span = self.chat_span();
                self.generate(request, Phase::Reasoning)
                    .instrument(span)
                    .await?
            }
            other => other?,
        };
        let config = self.setup.config;

        let mut goto_by = None;
        let mut stop_by = None;
        let (mut message, stop, goto) =
            if self.setup.hooks.is_interested(HookEventType::PostReasoning) {
                let iteration = self.progress.iteration;
                let event = chain!(
                    self,
                    events::post_reasoning(
                        self.context().info(),
                        message,
                        config.model_name.clone(),
                        iteration,
                    )
                );
                goto_by = event.goto_requested_by().map(str::to_owned);
                stop_by = event.stop_requested_by().map(str::to_owned);
                event.into_parts()
            } else {
                (message, false, None)
            };

        check_reply(&message, "PostReasoningEvent reasoning message")?;
        if stop {
            self.trace(Decision::Stop {
                hook: stop_by.as_deref().unwrap_or("unknown"),
                step: "reasoning",
            });
            // Its tool calls stay pending on purpose: the next call resumes them.
            message.set_generate_reason(GenerateReason::ReasoningStopRequested);
            self.progress.left_pending = message.has_tool_uses();
            self.store_reasoning(&message).await;
            return Ok(Reasoned::Done(message));
        }
        if let Some(goto) = goto {
            // Hooks validated at goto_reasoning(); a later hook may have changed the message.
            check_goto(&message, &goto)?;
            self.trace(Decision::Goto {
                hook: goto_by.as_deref().unwrap_or("unknown"),
            });
            self.progress.gotos += 1;
            if self.progress.gotos > config.settings.max_goto_reasoning {
                self.drop_goto_loop();
                return Err(AgentError::GotoLimitExceeded {
                    max: config.settings.max_goto_reasoning,
                    hook: goto_by.unwrap_or_else(|| "unknown".to_owned()),
                }
                .into());
            }
            if self.progress.goto_mark.is_none() {
                self.progress.goto_mark = Some(config.memory.len());
            }
            self.store_reasoning(&message).await;
            config.memory.extend(goto.clone());
            for hint in goto {
                self.emit(EventType::Hint, true, || hint).await;
            }
            return Ok(Reasoned::Again);
        }
        if !message.has_tool_uses() {
            // An answer cut off by the token limit or a content filter says so.
            message.set_generate_reason(GenerateReason::of_answer(message.finish_reason()));
            self.store_reasoning(&message).await;
            return Ok(Reasoned::Done(message));
        }
        let calls: Vec<ToolUseBlock> = message
            .content
            .iter()
            .filter_map(ContentBlock::as_tool_use)
            .cloned()
            .collect();
        let streamed = self
            .wants(EventType::Reasoning, true)
            .then(|| message.clone());
        config.memory.add(message);
        // Tracked from the moment they are stored, so no exit leaves them without a result.
        self.open.open(&calls);
        // With nothing between this step and the acting step's save (no stream event, no
        // PreActing hook, no custom reply), that save stores this message too, with the
        // calls it starts: one save, one `fsync`, instead of two.
        let acting_saves_it = then == Then::Act
            && streamed.is_none()
            && !self.setup.hooks.is_interested(HookEventType::PreActing);
        if !acting_saves_it && let Some(save) = self.checkpoint() {
            save.await?;
        }
        if let Some(message) = streamed {
            self.emit(EventType::Reasoning, true, || message).await;
        }
        self.progress.iteration += 1;
        Ok(Reasoned::Act(calls))
    }

    /// The model request of this reasoning step: the frozen base system message and a copy
    /// of memory, as the PreReasoning hooks leave them.
    async fn reasoning_request(&mut self, context_exceeded: bool) -> Step<ModelRequest> {
        let config = self.setup.config;
        // A fresh copy of the frozen base: per-iteration appends never accumulate.
        let system = self.progress.base_system.clone();
        let (messages, options) = if self.setup.hooks.is_interested(HookEventType::PreReasoning) {
            let iteration = self.progress.iteration;
            // Room for the system message `with_system` puts in front after the hooks.
            let mut history = Vec::with_capacity(config.memory.len() + 1);
            config.memory.copy_into(&mut history);
            // The conversation's call ids, from the copy of memory made here anyway (before
            // the hooks change it: memory is the conversation).
            lock(self.setup.runtime.call_ids()).sync(&history);
            let mut event = events::pre_reasoning(
                self.context().info(),
                history,
                system,
                config.model_name.clone(),
                std::sync::Arc::clone(&config.settings.options),
                iteration,
            );
            if context_exceeded {
                events::mark_context_exceeded(&mut event);
            }
            let (messages, system, options) = chain!(self, event).into_parts();
            check_no_system(&messages, "PreReasoningEvent input messages")?;
            (with_system(system, messages), options)
        } else {
            // Memory holds no system message: the request is the base, then a copy of
            // memory, in one vector.
            let mut messages = Vec::with_capacity(config.memory.len() + 1);
            let memory_from = usize::from(system.is_some());
            messages.extend(system);
            config.memory.copy_into(&mut messages);
            // The conversation's call ids, from the copy of memory made here anyway.
            lock(self.setup.runtime.call_ids())
                .sync(messages.get(memory_from..).unwrap_or_default());
            (messages, GenerateOptions::clone(&config.settings.options))
        };
        Ok(ModelRequest::new(
            messages,
            self.setup.toolkit.shared_schemas(),
            options,
        ))
    }

    /// The goto cap was hit: removes what the loop stored (from its first goto's reasoning
    /// message on), so memory and the session hold nothing of it.
    fn drop_goto_loop(&mut self) {
        if let Some(mark) = self.progress.goto_mark.take() {
            self.truncate_memory(mark);
        }
    }

    async fn store_reasoning(&self, message: &Msg) {
        self.setup.config.memory.add(message.clone());
        self.emit(EventType::Reasoning, true, || message.clone())
            .await;
    }

    /// Calls the model and assembles its streamed answer, firing chunk events for hooks and
    /// the stream. Interrupts are observed while waiting and after every chunk.
    pub(super) async fn generate(&mut self, request: ModelRequest, phase: Phase) -> Step<Msg> {
        let config = self.setup.config;
        let cancel = self.setup.cancel;
        if self.setup.cancel.is_cancelled() {
            return Err(Halt::Interrupted);
        }
        let hook_chunks = self.setup.hooks.is_interested(phase.hook_kind());
        let sink = self
            .setup
            .sink
            .filter(|sink| sink.wants(phase.event_type(), false));

        let started = std::pin::pin!(config.model.stream(request));
        let mut stream = match select(started, cancel.cancelled()).await {
            Either::Left((started, _)) => started.map_err(AgentError::Model)?,
            Either::Right(_) => return Err(Halt::Interrupted),
        };
        let mut acc = ChatAccumulator::new(config.info.shared_name());
        // The calls the model asks for get ids unique in the conversation.
        let mut call_ids = UniqueCallIds::new(self.setup.runtime.call_ids());
        loop {
            let next = match select(stream.next(), cancel.cancelled()).await {
                Either::Left((next, _)) => next,
                Either::Right(_) => return Err(self.interrupted(phase, acc)),
            };
            let Some(chunk) = next else { break };
            let mut chunk = chunk.map_err(AgentError::Model)?;
            if phase == Phase::Reasoning {
                call_ids.apply(&mut chunk);
            }
            if !(hook_chunks || sink.is_some()) || chunk.content.is_empty() {
                // Nobody sees the delta: its blocks move into the message.
                acc.push_owned(chunk);
            } else {
                // The chunk's blocks, shared with the message when they are all of it.
                let mut content = acc.push_delta(chunk);
                // Each delta is built where it goes (no moves of a fresh message between
                // locals): the hooks' shares the content, the stream's takes it.
                if hook_chunks {
                    let content = match sink {
                        Some(_) => content.clone(),
                        None => std::mem::take(&mut content),
                    };
                    let accumulated = acc.message();
                    let mut event: HookEvent = match phase {
                        Phase::Reasoning => events::reasoning_chunk(
                            self.context().info(),
                            config.model_name.clone(),
                            delta(accumulated, content),
                            accumulated.clone(),
                        )
                        .into_event(),
                        Phase::Summary => events::summary_chunk(
                            self.context().info(),
                            delta(accumulated, content),
                            accumulated.clone(),
                        )
                        .into_event(),
                    };
                    engine::notify(self.setup.hooks, &mut event, self.context()).await;
                }
                if let Some(sink) = sink {
                    let accumulated = acc.message();
                    let message = match sink.incremental() {
                        true => delta(accumulated, content),
                        false => accumulated.clone(),
                    };
                    sink.send(phase.event_type(), message, false).await;
                }
            }
            if cancel.is_cancelled() {
                return Err(self.interrupted(phase, acc));
            }
        }
        if acc.is_empty() {
            return Err(AgentError::Model(ModelError::EmptyResponse {
                model: config.model_name.to_string(),
            })
            .into());
        }
        Ok(acc.finish())
    }

    /// An interrupt arrived mid-response: the partial reasoning message is stored (its tool
    /// calls then get "interrupted" results); a partial summary is dropped.
    fn interrupted(&self, phase: Phase, acc: ChatAccumulator) -> Halt {
        if phase == Phase::Reasoning && !acc.is_empty() {
            self.setup.config.memory.add(acc.finish());
        }
        Halt::Interrupted
    }
}

/// A chunk's delta: what it added, under the id, name and time of the message it belongs to.
#[inline]
fn delta(accumulated: &Msg, content: Content) -> Msg {
    Msg {
        id: accumulated.id.clone(),
        name: accumulated.name.clone(),
        role: accumulated.role,
        content,
        metadata: Default::default(),
        timestamp: accumulated.timestamp,
    }
}
