//! The acting events: [`PreActingEvent`] before each tool call of a batch,
//! [`PostActingEvent`] after, and [`ActingChunkEvent`] for each progress chunk.

use std::sync::Arc;

use crate::block::{ToolResultBlock, ToolUseBlock};
use crate::error::HookError;
use crate::hook::meta::Meta;

/// Fired for each pending tool call before any tool of the batch runs.
#[derive(Debug, Clone)]
pub struct PreActingEvent {
    pub(crate) meta: Meta,
    pub(crate) tool_use: ToolUseBlock,
    pub(crate) skip: Option<ToolResultBlock>,
    /// The hook whose `skip_with` stands (the last one; set by the chain).
    pub(crate) skip_by: Option<Arc<str>>,
    /// Whether `skip_with` was called since the chain last attributed one.
    pub(crate) skip_unattributed: bool,
}

impl PreActingEvent {
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
        self.skip_unattributed = true;
    }

    /// The name of the hook whose [`skip_with`](Self::skip_with) stands (the last one made),
    /// when the event went through a hook chain; `None` when the call runs.
    pub fn skipped_by(&self) -> Option<&str> {
        self.skip_by.as_deref().filter(|_| self.skip.is_some())
    }

    /// Called by the chain after `hook` handled the event: a skip made meanwhile is that
    /// hook's.
    pub(super) fn attribute_skip(&mut self, hook: &Arc<str>) {
        if self.skip_unattributed {
            self.skip_unattributed = false;
            self.skip_by = Some(Arc::clone(hook));
        }
    }

    /// Whether a hook called [`skip_with`](Self::skip_with).
    pub fn is_skipped(&self) -> bool {
        self.skip.is_some()
    }

    /// The result given to [`skip_with`](Self::skip_with).
    pub fn skip_result(&self) -> Option<&ToolResultBlock> {
        self.skip.as_ref()
    }
}

/// Fired for each tool result, in call order, after the whole batch ran.
///
/// The result as the last hook leaves it is what memory and the stream get.
#[derive(Debug, Clone)]
pub struct PostActingEvent {
    pub(crate) meta: Meta,
    pub(crate) tool_use: ToolUseBlock,
    pub(crate) result: ToolResultBlock,
    pub(crate) stop: bool,
    /// The first hook that called `stop_agent` (set by the chain).
    pub(crate) stop_by: Option<Arc<str>>,
}

impl PostActingEvent {
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

    /// The name of the first hook that called [`stop_agent`](Self::stop_agent), when the
    /// event went through a hook chain; `None` without a request.
    pub fn stop_requested_by(&self) -> Option<&str> {
        self.stop_by.as_deref().filter(|_| self.stop)
    }

    /// Called by the chain after `hook` handled the event: a first stop request is that
    /// hook's.
    pub(super) fn attribute_stop(&mut self, hook: &Arc<str>) {
        if self.stop && self.stop_by.is_none() {
            self.stop_by = Some(Arc::clone(hook));
        }
    }
}

/// A progress chunk a running tool emitted (a notification: every interested hook gets
/// it, in priority order, and a hook's `Err` is logged).
///
/// The chunk as the last hook leaves it is what the stream gets: a hook can redact it
/// ([`set_chunk`](Self::set_chunk)) or keep it from the stream ([`skip`](Self::skip)).
/// Hooks after one that skipped it still receive it (nothing silences an observer), with
/// [`is_skipped`](Self::is_skipped) set. A chunk a hook failed on (an `Err`, a panic) is
/// withheld from the stream too, as if skipped: a redaction hook that fails is never
/// bypassed. The tool's result is not affected: PostActing redacts that.
///
/// ```
/// use agentscope_core::{hook_fn, ContentBlock, HookEvent, HookEventType};
///
/// // Progress that mentions a password is not shown; the rest is upper-cased.
/// let hook = hook_fn(|event| {
///     if let HookEvent::ActingChunk(e) = event {
///         let text = e.chunk().text_output();
///         if text.contains("password") {
///             e.skip();
///         } else {
///             let mut chunk = e.chunk().clone();
///             chunk.output = vec![ContentBlock::text(text.to_uppercase())];
///             e.set_chunk(chunk);
///         }
///     }
///     Ok(())
/// })
/// .with_interests(HookEventType::ActingChunk);
/// # let _ = hook;
/// ```
#[derive(Debug, Clone)]
pub struct ActingChunkEvent {
    pub(crate) meta: Meta,
    pub(crate) tool_use: Arc<ToolUseBlock>,
    pub(crate) chunk: ToolResultBlock,
    pub(crate) skip: bool,
}

impl ActingChunkEvent {
    /// The running tool call.
    pub fn tool_use(&self) -> &ToolUseBlock {
        &self.tool_use
    }

    /// The progress chunk (id and name of the call, the emitted blocks as output).
    pub fn chunk(&self) -> &ToolResultBlock {
        &self.chunk
    }

    /// Replaces the chunk (its id and name are set to the call's): what later hooks and
    /// the stream get.
    pub fn set_chunk(&mut self, mut chunk: ToolResultBlock) {
        chunk.id.clone_from(&self.tool_use.id);
        chunk.name.clone_from(&self.tool_use.name);
        self.chunk = chunk;
    }

    /// Keeps the chunk from the stream (later hooks still receive it). It stays skipped
    /// whatever a later hook does.
    pub fn skip(&mut self) {
        self.skip = true;
    }

    /// Whether a hook called [`skip`](Self::skip), or failed on the chunk.
    pub fn is_skipped(&self) -> bool {
        self.skip
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AgentInfo;
    use crate::engine::{CallContext, EventParts, events};
    use serde_json::json;

    #[test]
    fn set_tool_use_keeps_id_and_skip_normalises_result() {
        let call = CallContext::new(Arc::new(AgentInfo::new("a", "id-1")));
        let mut event = events::pre_acting(
            call.info(),
            ToolUseBlock::new("c1", "calc", json!({"x": 1})),
        );
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
    fn set_chunk_normalises_the_chunk_and_skip_withholds_it() {
        let call = CallContext::new(Arc::new(AgentInfo::new("a", "id-1")));
        let tool_use = Arc::new(ToolUseBlock::new("c1", "fetch", json!({})));
        let chunk = ToolResultBlock::text("c1", "fetch", "mail ada@example.com");
        let mut event = events::acting_chunk(call.info(), Arc::clone(&tool_use), chunk);
        event.set_chunk(ToolResultBlock::text("other", "", "mail [email]"));
        assert!(!event.is_skipped());
        assert_eq!(
            event.clone().into_parts(),
            Some(ToolResultBlock::text("c1", "fetch", "mail [email]"))
        );
        event.skip();
        event.set_chunk(ToolResultBlock::text("", "", "again"));
        assert!(event.is_skipped());
        assert_eq!(event.into_parts(), None);
    }
}
