//! What the benches share: the no-op async hook, the agent of the ReAct-call benches, the
//! event of the dispatch benches and its timed dispatch loop, and the floor an async hook is
//! measured against.
#![allow(dead_code)]

use agentscope_core::engine::TypedEvent;
use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope::{AgentInfo, GenerateOptions, HookChain, ReActAgentBuilder};
use agentscope_core::engine::{CallContext, events};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

/// An async hook that does nothing, interested in every event.
pub(crate) struct AsyncNoop;

impl Hook for AsyncNoop {
    async fn on_event(&self, _event: &mut HookEvent) -> Result<(), HookError> {
        Ok(())
    }
}

/// The agent of a ReAct call: an instant scripted model (one `echo` tool call, then the
/// answer `done`, cycling, requests not recorded) and an instant `echo` tool, with a
/// system prompt; `hooks` adds hooks before it is built.
pub(crate) fn react_agent(
    hooks: impl FnOnce(ReActAgentBuilder) -> ReActAgentBuilder,
) -> ReActAgent {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "echo", json!({"text": "pong"})),
        ScriptedResponse::text("done"),
    ])
    .cycling()
    .without_recording();
    let echo = tool_fn(
        "echo",
        "Echoes text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |input, _ctx| async move { Ok(input["text"].as_str().unwrap_or_default().to_owned()) },
    );
    let builder = ReActAgent::builder()
        .sys_prompt("You are a benchmark.")
        .model(model)
        .toolkit(Toolkit::new().tool(echo));
    hooks(builder).build().unwrap()
}

/// The event of the dispatch benches: a PreReasoning event with one user message, a system
/// prompt and default options.
pub(crate) fn pre_reasoning_event() -> HookEvent {
    let call = CallContext::new(Arc::new(AgentInfo::new("bench", "1")));
    events::pre_reasoning(
        call.info(),
        vec![Msg::user("hello")],
        Some(Msg::system("You are helpful.")),
        "model",
        GenerateOptions::default(),
        0,
    )
    .into_event()
}

/// `events` dispatches of one [`pre_reasoning_event`] through `chain`; the elapsed time.
pub(crate) fn dispatches(chain: &HookChain, events: u64) -> Duration {
    let mut event = pre_reasoning_event();
    futures::executor::block_on(async {
        let start = Instant::now();
        for _ in 0..events {
            chain.dispatch(black_box(&mut event)).await.unwrap();
        }
        start.elapsed()
    })
}

/// The floor of an async hook: an async method called through `dyn`, its future boxed.
pub(crate) trait DynNoop: Send + Sync {
    fn call<'a>(
        &'a self,
        event: &'a mut HookEvent,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
}

pub(crate) struct FloorNoop;

impl DynNoop for FloorNoop {
    fn call<'a>(
        &'a self,
        event: &'a mut HookEvent,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            black_box(event);
        })
    }
}

/// `iters` events ([`pre_reasoning_event`]) through `n` boxed-future calls of
/// [`FloorNoop`]; the elapsed time.
pub(crate) fn run_floor(n: usize, iters: u64) -> Duration {
    let hooks: Vec<Box<dyn DynNoop>> = (0..n)
        .map(|_| Box::new(FloorNoop) as Box<dyn DynNoop>)
        .collect();
    let mut event = pre_reasoning_event();
    futures::executor::block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            for hook in &hooks {
                hook.call(black_box(&mut event)).await;
            }
        }
        start.elapsed()
    })
}
