//! `allocations`: how many allocations (and bytes) the engine makes, counted by a counting
//! global allocator in this binary only, so the timed benches run on the plain allocator.
//!
//! Prints, for the ReAct call of `react_call` (one tool call, then an answer; instant model
//! and tool): allocations per call with 0 hooks and with 10 no-op async hooks; for a
//! streamed answer with 3 chunk hooks: allocations per chunk; for a tool's streamed progress:
//! allocations per progress chunk without hooks and with one synchronous ActingChunk hook;
//! and for one PreReasoning event through 10 no-op async hooks (the `dispatch` bench):
//! allocations per event. Run with `cargo bench -p agentscope --bench allocations`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod support;

use agentscope_core::engine::TypedEvent;
use std::alloc::System;

use agentscope::prelude::*;
use agentscope::{AgentInfo, EventType, GenerateOptions, HookChain, StreamOptions};
use agentscope_core::engine::{CallContext, events};
use agentscope_test::{ScriptedChunk, ScriptedModel, ScriptedResponse};
use futures::StreamExt;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use support::AsyncNoop;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

struct ChunkNoop;

impl Hook for ChunkNoop {
    fn interests(&self) -> HookEventTypes {
        HookEventTypes::only(HookEventType::ReasoningChunk)
    }

    async fn on_event(&self, _event: &mut HookEvent) -> Result<(), HookError> {
        Ok(())
    }
}

fn react_agent(hooks: usize) -> ReActAgent {
    support::react_agent(|mut builder| {
        for _ in 0..hooks {
            builder = builder.hook(AsyncNoop);
        }
        builder
    })
}

/// Allocations and bytes per call, over `calls` calls after a warm-up.
fn per_call(agent: &ReActAgent, calls: usize) -> (f64, f64) {
    futures::executor::block_on(async {
        for _ in 0..10 {
            agent.call(Msg::user("ping")).await.unwrap();
            agent.memory().clear();
        }
        let region = Region::new(GLOBAL);
        for _ in 0..calls {
            let reply = agent.call(Msg::user("ping")).await.unwrap();
            assert_eq!(reply.text(), "done");
            agent.memory().clear();
        }
        let stats = region.change();
        (
            stats.allocations as f64 / calls as f64,
            stats.bytes_allocated as f64 / calls as f64,
        )
    })
}

/// Allocations per streamed chunk with 3 interested chunk hooks: the difference between a
/// 2,000-chunk and a 1,000-chunk answer, over 1,000.
fn per_chunk() -> f64 {
    let count = |chunks: usize| {
        let pieces: Vec<ScriptedChunk> = (0..chunks).map(|_| ScriptedChunk::text("tok ")).collect();
        let model = ScriptedModel::new([ScriptedResponse::chunks(pieces)]).without_recording();
        let agent = ReActAgent::builder()
            .model(model)
            .hook(ChunkNoop)
            .hook(ChunkNoop)
            .hook(ChunkNoop)
            .build()
            .unwrap();
        futures::executor::block_on(async {
            let region = Region::new(GLOBAL);
            let mut stream = agent.stream(
                Msg::user("go"),
                StreamOptions::default().event_types([EventType::Reasoning]),
            );
            let mut seen = 0usize;
            while let Some(event) = stream.next().await {
                event.unwrap();
                seen += 1;
            }
            assert!(seen >= chunks);
            region.change().allocations
        })
    };
    (count(2_000) as f64 - count(1_000) as f64) / 1_000.0
}

/// Allocations per streamed progress chunk of a tool, with one no-op synchronous ActingChunk
/// hook or none: the difference between 2,000 and 1,000 chunks, over 1,000. The tool's own
/// part (the text block it emits) is included.
fn per_progress_chunk(with_hook: bool) -> f64 {
    let count = |chunks: u64| {
        let tool = tool_fn(
            "work",
            "Reports progress.",
            serde_json::json!({"type": "object", "properties": {}}),
            move |_input, ctx| async move {
                for _ in 0..chunks {
                    ctx.emit("tick").await;
                }
                Ok("done")
            },
        );
        let model = ScriptedModel::new([
            ScriptedResponse::tool_call("c1", "work", serde_json::json!({})),
            ScriptedResponse::text("done"),
        ])
        .without_recording();
        let mut builder = ReActAgent::builder()
            .model(model)
            .toolkit(Toolkit::new().tool(tool));
        if with_hook {
            builder = builder.hook(hook_fn(|_| Ok(())).with_interests(HookEventType::ActingChunk));
        }
        let agent = builder.build().unwrap();
        futures::executor::block_on(async {
            let region = Region::new(GLOBAL);
            let mut stream = agent.stream(
                Msg::user("go"),
                StreamOptions::default().event_types([EventType::ToolResult]),
            );
            let mut seen = 0u64;
            while let Some(event) = stream.next().await {
                event.unwrap();
                seen += 1;
            }
            assert!(seen > chunks);
            region.change().allocations
        })
    };
    (count(2_000) as f64 - count(1_000) as f64) / 1_000.0
}

/// Allocations per dispatch of a PreReasoning event through 10 no-op async hooks.
fn per_event() -> f64 {
    let mut chain = HookChain::new();
    for _ in 0..10 {
        chain.push(AsyncNoop);
    }
    let call = CallContext::new(std::sync::Arc::new(AgentInfo::new("bench", "1")));
    let mut event: HookEvent = events::pre_reasoning(
        call.info(),
        vec![Msg::user("hello")],
        Some(Msg::system("You are helpful.")),
        "model",
        GenerateOptions::default(),
        0,
    )
    .into_event();
    futures::executor::block_on(async {
        for _ in 0..100 {
            chain.dispatch(&mut event).await.unwrap();
        }
        let region = Region::new(GLOBAL);
        for _ in 0..1_000 {
            chain.dispatch(&mut event).await.unwrap();
        }
        region.change().allocations as f64 / 1_000.0
    })
}

fn main() {
    let calls = 2_000;
    let (zero, zero_bytes) = per_call(&react_agent(0), calls);
    let (ten, ten_bytes) = per_call(&react_agent(10), calls);
    let chunk = per_chunk();
    let progress = per_progress_chunk(false);
    let progress_hooked = per_progress_chunk(true);
    let event = per_event();
    println!("allocations per ReAct call, 0 hooks:             {zero:.1} ({zero_bytes:.0} bytes)");
    println!("allocations per ReAct call, 10 async no-op hooks: {ten:.1} ({ten_bytes:.0} bytes)");
    println!("allocations per streamed chunk, 3 chunk hooks:   {chunk:.2}");
    println!("allocations per progress chunk, no hooks:        {progress:.2}");
    println!("allocations per progress chunk, 1 chunk hook:    {progress_hooked:.2}");
    println!("allocations per event, 10 async no-op hooks:     {event:.2}");
}
