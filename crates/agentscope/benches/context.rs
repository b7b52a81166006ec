//! `context`: the per-step cost of the `ContextWindowHook` on a 10,000-message conversation
//! (5,000 exchanges of about 200 characters, every tenth answer a tool call with a 4 KB
//! result), counted with the default tokenizer (`o200k_base`).
//!
//! - `hook/*`: one PreReasoning through a chain holding only the hook (the event carries a
//!   copy of the 10,000 messages, as the engine's does; `baseline_noop_hook` is that with a
//!   hook doing nothing, to subtract):
//!   - `within_limits`: nothing to compact (a 10M-token window): counting (from the cache),
//!     measuring, passing the input on unchanged;
//!   - `sliding_window`: the input is cut to the last 200 messages at every step;
//!   - `summary_reused`: a summary recorded earlier stands for the first 9,000 messages;
//!   - `previews`: every 4 KB result is sent as a 500-character preview;
//! - `agent/*`: one whole agent call (input, model, answer stored) with 10,000 messages in
//!   memory, without the hook and with the sliding window, so the hook's share of a step
//!   shows.
//!
//! After criterion, the figures are printed once more as plain per-step overheads, with the
//! cost of the first step (nothing counted yet: every message goes through the tokenizer).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentscope::context::{ContextWindowHook, ContextWindows, ToolResultLimit};
use agentscope::prelude::*;
use agentscope::session::HookState;
use agentscope::{AgentInfo, HookChain, InMemoryMemory};
use agentscope_core::engine::{self, CallContext, events};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use criterion::{BatchSize, Criterion};
use futures::executor::block_on;
use serde_json::json;

const MESSAGES: usize = 10_000;

/// 10,000 messages: user questions and answers of about 200 characters; every tenth
/// exchange the answer is a tool call whose 4 KB result follows.
fn conversation() -> Vec<Msg> {
    let sentence = "The quick brown fox jumps over the lazy dog while the agent keeps track. ";
    let text = |i: usize| format!("{i}: {}", sentence.repeat(3));
    let log: String = (0..64)
        .map(|line| format!("2026-01-01T00:00:{line:02}Z INFO request served in 12ms\n"))
        .collect();
    let mut messages = Vec::with_capacity(MESSAGES);
    let mut i = 0;
    while messages.len() < MESSAGES {
        if i % 10 == 9 && messages.len() + 3 <= MESSAGES {
            let id = format!("call_{i}");
            messages.push(Msg::user(text(i)));
            messages.push(
                Msg::builder()
                    .role(Role::Assistant)
                    .block(ToolUseBlock::new(id.as_str(), "read_log", json!({"n": i})))
                    .build(),
            );
            messages.push(Msg::tool_result(ToolResultBlock::text(
                id.as_str(),
                "read_log",
                log.as_str(),
            )));
        } else {
            messages.push(Msg::user(text(i)));
            messages.push(Msg::assistant(text(i)));
        }
        i += 1;
    }
    messages.truncate(MESSAGES - 1);
    messages.push(Msg::user("What now?"));
    messages
}

fn windows() -> ContextWindows {
    ContextWindows::new().with("bench-model", 10_000_000)
}

/// One PreReasoning of a new call through a chain holding `hook`.
struct Step {
    chain: HookChain,
    agent: Arc<AgentInfo>,
    hook_state: Option<HookState>,
}

impl Step {
    fn new(hook: impl Hook, hook_state: Option<HookState>) -> Self {
        let mut chain = HookChain::new();
        chain.push(hook);
        Self {
            chain,
            agent: Arc::new(AgentInfo::new("assistant", "bench")),
            hook_state,
        }
    }

    /// Runs the step; returns how many messages go to the model.
    fn run(&self, input: &[Msg]) -> usize {
        let mut call = CallContext::new(Arc::clone(&self.agent));
        if let Some(state) = &self.hook_state {
            call.extensions_mut().insert(state.clone());
        }
        let event = events::pre_reasoning(
            call.info(),
            input.to_vec(),
            Some(Msg::system("You are a benchmark.")),
            "bench-model",
            GenerateOptions::default(),
            0,
        );
        let event = block_on(engine::chain(&self.chain, event, &mut call)).unwrap();
        event.input_messages().len()
    }
}

/// The benchmarked steps: name, the step, and how many messages it sends.
fn steps(input: &[Msg]) -> Vec<(&'static str, Step, usize)> {
    let within = ContextWindowHook::new().with_windows(windows());
    let sliding = ContextWindowHook::new()
        .with_windows(windows())
        .with_max_messages(200);
    let previews = ContextWindowHook::new()
        .with_windows(windows())
        .with_tool_result_limit(ToolResultLimit::new(2_000, 500));
    let through = &input[8_999];
    let mut stored = serde_json::Map::new();
    stored.insert(
        ContextWindowHook::NAME.into(),
        json!({"summary": {"through": through.id.as_str(), "messages": 9_000,
                           "text": "The user asked 4,500 questions about foxes."}}),
    );
    let summary = ContextWindowHook::new().with_windows(windows());
    let noop = hook_fn(|_| Ok(())).with_interests(HookEventType::PreReasoning);
    vec![
        ("baseline_noop_hook", Step::new(noop, None), MESSAGES),
        ("within_limits", Step::new(within, None), MESSAGES),
        ("sliding_window", Step::new(sliding, None), 200),
        (
            "summary_reused",
            Step::new(summary, Some(HookState::new(stored))),
            1_001,
        ),
        ("previews", Step::new(previews, None), MESSAGES),
    ]
}

fn agent(input: &[Msg], hook: Option<ContextWindowHook>) -> ReActAgent {
    let model = ScriptedModel::new([ScriptedResponse::text("ok")])
        .cycling()
        .without_recording()
        .with_name("bench-model");
    let mut builder = ReActAgent::builder()
        .sys_prompt("You are a benchmark.")
        .model(model)
        .memory(InMemoryMemory::with_messages(
            input[..MESSAGES - 1].to_vec(),
        ));
    if let Some(hook) = hook {
        builder = builder.hook(hook);
    }
    builder.build().unwrap()
}

fn bench(c: &mut Criterion, input: &[Msg]) {
    let mut group = c.benchmark_group("context");
    group.measurement_time(Duration::from_secs(3));
    group.sample_size(20);
    for (name, step, sent) in steps(input) {
        assert_eq!(step.run(input), sent, "{name}");
        group.bench_function(format!("hook/{name}"), |b| b.iter(|| step.run(input)));
    }
    for (name, hook) in [
        ("without_hook", None),
        (
            "sliding_window",
            Some(
                ContextWindowHook::new()
                    .with_windows(windows())
                    .with_max_messages(200),
            ),
        ),
    ] {
        group.bench_function(format!("agent/{name}"), |b| {
            b.iter_batched(
                || agent(input, hook.clone()),
                |agent| {
                    block_on(agent.call("What now?")).unwrap();
                    agent
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

/// The mean time of `runs` runs of `f`.
fn mean(runs: u32, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..runs {
        f();
    }
    start.elapsed() / runs
}

fn figures(input: &[Msg]) {
    println!("\ncontext: per-step overhead of ContextWindowHook, {MESSAGES} messages");
    // The first step of a fresh hook counts every message with the tokenizer.
    let fresh = Step::new(ContextWindowHook::new().with_windows(windows()), None);
    let started = Instant::now();
    fresh.run(input);
    println!(
        "  first step (tokenizing all {MESSAGES} messages): {:>10.2?}",
        started.elapsed()
    );
    for (name, step, _) in steps(input) {
        step.run(input);
        println!(
            "  {name:<16} {:>10.2?} per step",
            mean(50, || {
                step.run(input);
            })
        );
    }
    for (name, hook) in [
        ("agent, no hook", None),
        (
            "agent, sliding",
            Some(
                ContextWindowHook::new()
                    .with_windows(windows())
                    .with_max_messages(200),
            ),
        ),
    ] {
        // One call first, so the hook's counts are cached as in a running service.
        block_on(agent(input, hook.clone()).call("What now?")).unwrap();
        let agents: Vec<ReActAgent> = (0..20).map(|_| agent(input, hook.clone())).collect();
        let mut agents = agents.into_iter();
        let started = Instant::now();
        for agent in agents.by_ref() {
            block_on(agent.call("What now?")).unwrap();
        }
        println!("  {name:<16} {:>10.2?} per call", started.elapsed() / 20);
    }
}

fn main() {
    let input = conversation();
    assert_eq!(input.len(), MESSAGES);
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion, &input);
    criterion.final_summary();
    figures(&input);
}
