//! The summary at the iteration limit (step 7 of the lifecycle).

use agentscope_core::ConversationError;
use agentscope_core::engine::conversation::{check_no_system, check_reply};
use agentscope_core::engine::{EventParts, events};
use agentscope_core::pending_tool_uses;
use agentscope_core::{
    AgentError, ContentBlock, GenerateOptions, GenerateReason, HookEventType, ModelError,
    ModelRequest, Msg, Role, ToolChoice, ToolResultBlock,
};
use tracing::Instrument;

use super::reasoning::Phase;
use super::{Call, Halt, Step, with_system};
use crate::stream::EventType;

/// The user hint the summary model call gets (not stored in memory).
pub(crate) const SUMMARY_HINT: &str = "You have failed to generate response within the maximum iterations. Now respond directly by summarizing the current situation.";

impl Call<'_> {
    pub(super) async fn summarize(&mut self) -> Step<Msg> {
        let config = self.setup.config;
        let max = config.settings.max_iters;
        for call in pending_tool_uses(&config.memory.messages()) {
            self.open.settle(&call.id);
            config.memory.add(Msg::tool_result(ToolResultBlock::error(
                call.id,
                call.name,
                format!(
                    "[ERROR] Tool execution cancelled because maximum iterations limit ({max}) was reached"
                ),
            )));
        }

        // Room for the hint and for the system message `with_system` puts in front.
        let mut messages = Vec::with_capacity(config.memory.len() + 2);
        config.memory.copy_into(&mut messages);
        messages.push(Msg::user(SUMMARY_HINT));
        let system = self.progress.base_system.clone();
        // No tools are offered, so no tool choice can be honoured.
        let options =
            GenerateOptions::clone(&config.settings.options).tool_choice(ToolChoice::Auto);
        let (messages, system, options) =
            if self.setup.hooks.is_interested(HookEventType::PreSummary) {
                let iteration = self.progress.iteration;
                chain!(
                    self,
                    events::pre_summary(
                        self.context().info(),
                        messages,
                        system,
                        options,
                        max,
                        iteration,
                    )
                )
                .into_parts()
            } else {
                (messages, system, options)
            };
        check_no_system(&messages, "PreSummaryEvent input messages")?;
        let request = ModelRequest::new(
            with_system(system, messages),
            std::sync::Arc::default(),
            options,
        );

        let span = self.chat_span();
        let generated = self
            .generate(request, Phase::Summary)
            .instrument(span)
            .await
            .and_then(|summary| self.without_tool_calls(summary));
        let summary = match generated {
            Ok(summary) => summary,
            Err(Halt::Failed(AgentError::Model(error))) => {
                // A model failure here becomes the reply.
                let reply = Msg::new(
                    Role::Assistant,
                    config.info.shared_name(),
                    vec![ContentBlock::text(format!(
                        "Maximum iterations ({max}) reached. Error generating summary: {error}"
                    ))],
                )
                .with_generate_reason(GenerateReason::MaxIterations);
                config.memory.add(reply.clone());
                return Ok(reply);
            }
            Err(halt) => return Err(halt),
        };
        let summary = if self.setup.hooks.is_interested(HookEventType::PostSummary) {
            chain!(self, events::post_summary(self.context().info(), summary)).into_parts()
        } else {
            summary
        }
        .with_generate_reason(GenerateReason::MaxIterations);
        check_reply(&summary, "PostSummaryEvent summary message")?;
        if summary.has_tool_uses() {
            return Err(ConversationError::ToolCallsInSummary.into());
        }
        config.memory.add(summary.clone());
        self.emit(EventType::Summary, true, || summary.clone())
            .await;
        Ok(summary)
    }

    /// The summary request offers no tools, so tool calls the model makes anyway are dropped
    /// (stored, they would stay pending forever); a summary of nothing but tool calls is an
    /// empty response.
    fn without_tool_calls(&self, mut summary: Msg) -> Step<Msg> {
        summary
            .content
            .retain(|block| !matches!(block, ContentBlock::ToolUse(_)));
        if summary.content.is_empty() {
            return Err(AgentError::Model(ModelError::EmptyResponse {
                model: self.setup.config.model_name.to_string(),
            })
            .into());
        }
        Ok(summary)
    }
}
