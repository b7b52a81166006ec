//! Soak test (ignored by default): 100,000 calls on one agent with random faults (hook errors, panics and interrupts at random events, stops and resumes, suspensions, failing/panicking/timing-out tools, model errors, empty responses, broken tool arguments, tool calls in the summary, dropped calls and streams) from a seeded RNG; the invariants of docs/reliability.md are checked after every call, a real follow-up call every 1,000 calls, and the resident memory must stay flat.
//!
//! ```text
//! cargo test -p agentscope --release --test soak -- --ignored --nocapture
//! SOAK_CALLS=1000000 SOAK_SEED=7 cargo test -p agentscope --release --test soak -- --ignored --nocapture
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::alloc::System;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope_test::{RecordingHook, ScriptedChunk, ScriptedResponse};
use futures::StreamExt;
use serde_json::json;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use support::fixtures::{SwapModel, hang_tool, poll_stream_times, poll_times};
use support::invariants::{
    Ending, Pending, assert_follow_up_call, assert_invariants_after_drops, endings,
};

type K = HookEventType;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes currently allocated by the whole process (reallocations are already counted in
/// both totals).
fn live_bytes() -> isize {
    let stats = GLOBAL.stats();
    stats.bytes_allocated as isize - stats.bytes_deallocated as isize
}

/// Growth of the live heap allowed between 10% and 100% of the calls: a leak of even a few
/// bytes per call exceeds it.
const LIVE_GROWTH_LIMIT_BYTES: isize = 256 * 1024;
/// Growth of the resident set allowed between 10% and 100% of the calls.
const RSS_GROWTH_LIMIT_KIB: u64 = 16 * 1024;

/// xorshift64*: tiny, seeded, good enough to pick faults.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn kind(&mut self) -> HookEventType {
        HookEventType::ALL[self.below(12)]
    }
}

/// What the fault hook does during the current call.
#[derive(Debug, Clone, Copy, PartialEq)]
enum HookFault {
    Nothing,
    Fail(HookEventType),
    Panic(HookEventType),
    Interrupt(HookEventType),
    Stop,
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The resident set size in KiB (Linux), if known.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The soak's tools. (The tools of `agentscope_test::tools` log every call, which is
/// memory that grows on purpose: not what a soak test should measure.)
fn toolkit() -> Toolkit {
    let object = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    Toolkit::new()
        .tool(tool_fn(
            "echo",
            "Echoes.",
            object.clone(),
            |input, _| async move { Ok(input["text"].as_str().unwrap_or_default().to_owned()) },
        ))
        .tool(tool_fn("fail", "Fails.", object.clone(), |_, _| async {
            Err::<String, _>(ToolError::msg("no"))
        }))
        .tool(tool_fn("panic", "Panics.", object.clone(), |_, _| async {
            panic!("tool panicked on purpose");
            #[allow(unreachable_code)]
            Ok::<String, ToolError>(String::new())
        }))
        .tool(tool_fn(
            "external",
            "Runs elsewhere.",
            object,
            |_, _| async { Ok(ToolOutput::suspended()) },
        ))
        .tool_with_timeout(hang_tool("hang"), Duration::from_millis(1))
}

/// A model script for one call, chosen at random; returns it and a label.
fn random_script(rng: &mut Rng) -> (Vec<ScriptedResponse>, &'static str) {
    let echo = |id: &str| ScriptedChunk::tool_call(id, "echo", json!({"text": "x"}));
    match rng.below(12) {
        0..=2 => (
            vec![
                ScriptedResponse::chunks([ScriptedChunk::text("Checking."), echo("c1")]),
                ScriptedResponse::chunks([ScriptedChunk::text("do"), ScriptedChunk::text("ne")]),
            ],
            "tool then answer",
        ),
        3 => (vec![ScriptedResponse::text("plain")], "plain answer"),
        4 => (
            vec![
                ScriptedResponse::tool_calls([
                    ("c1", "panic", json!({})),
                    ("c2", "fail", json!({"message": "no"})),
                    ("c3", "hang", json!({})),
                    ("c4", "ghost", json!({})),
                ]),
                ScriptedResponse::text("saw the failures"),
            ],
            "failing tools",
        ),
        5 => (vec![ScriptedResponse::error("model down")], "model error"),
        6 => (
            vec![ScriptedResponse::chunks([
                ScriptedChunk::text("par"),
                echo("c1"),
                ScriptedChunk::error("reset"),
            ])],
            "mid-stream error",
        ),
        7 => (vec![ScriptedResponse::empty()], "empty response"),
        8 => (
            vec![
                ScriptedResponse::chunks([
                    ScriptedChunk::tool_call_start("c1", "echo"),
                    ScriptedChunk::tool_call_args("{\"text\": oops"),
                ]),
                ScriptedResponse::text("fixed"),
            ],
            "arguments not JSON",
        ),
        9 => (
            vec![
                ScriptedResponse::chunks([echo("c1")]),
                ScriptedResponse::chunks([echo("c2")]),
                ScriptedResponse::text_and_tool_call(
                    "Summary.",
                    "c3",
                    "echo",
                    json!({"text": "x"}),
                ),
            ],
            "tool call in the summary",
        ),
        10 => (
            vec![
                ScriptedResponse::chunks([echo("c1")]),
                ScriptedResponse::chunks([echo("c2")]),
                ScriptedResponse::error("summary failed"),
            ],
            "summary failure",
        ),
        _ => (
            vec![ScriptedResponse::tool_call("c1", "external", json!({}))],
            "suspension",
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "soak test: run with --release --ignored (see the file's docs)"]
async fn soak_random_faults_keep_the_invariants_and_memory_flat() {
    let calls = env_number("SOAK_CALLS", 100_000) as usize;
    let seed = env_number("SOAK_SEED", 0x5eed_1234_abcd_0001) | 1;
    let mut rng = Rng(seed);
    // Expected panics (from hooks and tools) would flood the output.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str))
            .unwrap_or("");
        if !message.contains("on purpose") {
            default_hook(info);
        }
    }));

    let model = SwapModel::new([]);
    let rec = RecordingHook::new(1000).with_interests(K::PreCall | K::PostCall | K::Error);
    let plan = Arc::new(Mutex::new(HookFault::Nothing));
    let agent = ReActAgent::builder()
        .sys_prompt("You are soaked.")
        .model(model.clone())
        .toolkit(toolkit())
        .max_iters(2)
        .hook(rec.clone())
        .build()
        .unwrap();
    let handle = agent.clone();
    let current = Arc::clone(&plan);
    agent.add_hook(
        hook_fn(move |event| {
            let kind = event.event_type();
            let fault = *current.lock().unwrap();
            match fault {
                HookFault::Fail(at) if at == kind => return Err(HookError::msg("soak failure")),
                HookFault::Panic(at) if at == kind => panic!("hook panicked on purpose"),
                HookFault::Interrupt(at) if at == kind => handle.interrupt(),
                HookFault::Stop => {
                    if let HookEvent::PostReasoning(e) = event {
                        e.stop_agent();
                    }
                }
                _ => {}
            }
            Ok(())
        })
        .with_priority(100)
        .with_name("soak-faults"),
    );

    let started = Instant::now();
    let outcomes = AtomicUsize::new(0);
    let mut labels: std::collections::BTreeMap<&'static str, usize> = Default::default();
    let mut rss_at_10 = None;
    let mut live_at_10 = 0;
    for call in 0..calls {
        if call == calls / 10 {
            rss_at_10 = rss_kib();
            live_at_10 = live_bytes();
        }
        let (script, label) = random_script(&mut rng);
        *labels.entry(label).or_default() += 1;
        model.set_script(script);
        let fault = match rng.below(10) {
            0 => HookFault::Fail(rng.kind()),
            1 => HookFault::Panic(rng.kind()),
            2 => HookFault::Interrupt(rng.kind()),
            3 => HookFault::Stop,
            _ => HookFault::Nothing,
        };
        *plan.lock().unwrap() = fault;
        let stream = rng.below(2) == 0;
        // One call in eight is dropped after a random number of polls.
        let drop_after = (rng.below(8) == 0).then(|| rng.below(40));

        let dropped = match drop_after {
            Some(k) if stream => {
                let mut events = agent.stream("q", StreamOptions::default());
                let (_items, ended) = poll_stream_times(&mut events, k);
                !ended
            }
            Some(k) => {
                let mut running = std::pin::pin!(agent.call("q"));
                poll_times(running.as_mut(), k).is_none()
            }
            None if stream => {
                let mut events = agent.stream("q", StreamOptions::default());
                let mut last_ok = false;
                while let Some(item) = tokio::time::timeout(Duration::from_secs(10), events.next())
                    .await
                    .expect("a streamed call hung")
                {
                    last_ok = item.is_ok();
                }
                if last_ok {
                    outcomes.fetch_add(1, Ordering::Relaxed);
                }
                false
            }
            None => {
                let result = tokio::time::timeout(Duration::from_secs(10), agent.call("q"))
                    .await
                    .expect("a call hung");
                if result.is_ok() {
                    outcomes.fetch_add(1, Ordering::Relaxed);
                }
                false
            }
        };

        let context =
            || format!("call {call} ({label}, {fault:?}, stream {stream}, drop {drop_after:?})");
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            assert_invariants_after_drops(
                &agent,
                &[&rec],
                Pending::Deliberate,
                usize::from(dropped),
            );
        }));
        if let Err(payload) = checked {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            panic!("{}: {message}", context());
        }
        let seen = endings(&rec);
        assert!(seen.len() <= 1, "{}: {seen:?}", context());
        if !dropped {
            assert!(
                matches!(
                    seen.as_slice(),
                    [Ending::PostCall | Ending::Error | Ending::ErrorOnly]
                ),
                "{}: {seen:?}",
                context()
            );
        }
        // Calls left pending on purpose are resumed once, as a client would.
        if !agent.memory().messages().is_empty()
            && !support::invariants::pending_ids(&agent.memory().messages()).is_empty()
        {
            *plan.lock().unwrap() = HookFault::Nothing;
            model.set_script([ScriptedResponse::text("resumed")]);
            let pending = support::invariants::pending_ids(&agent.memory().messages());
            let results: Vec<Msg> = pending
                .iter()
                .map(|id| Msg::tool_result(ToolResultBlock::text(id.clone(), "external", "ok")))
                .collect();
            // Stopped calls resume by running their tools; suspended ones with results.
            let input = if rng.below(2) == 0 {
                Vec::new()
            } else {
                results
            };
            let resumed = agent.call(input).await;
            assert!(!matches!(resumed, Err(AgentError::Busy)), "{}", context());
            assert_invariants_after_drops(&agent, &[&rec], Pending::Deliberate, 0);
        }
        if call % 1000 == 999 {
            *plan.lock().unwrap() = HookFault::Nothing;
            assert_follow_up_call(&agent, &model, &[&rec]).await;
        }
        // A service rolls sessions: memory and the record start over.
        agent.memory().clear();
        rec.clear();
    }

    let rss_at_end = rss_kib();
    let live_at_end = live_bytes();
    println!(
        "soak: {calls} calls in {:.1?} (seed {seed:#x}), {} succeeded; faults: {labels:?}",
        started.elapsed(),
        outcomes.load(Ordering::Relaxed)
    );
    // Live heap bytes (exact, from the counting allocator): what the calls left behind.
    println!("soak: live heap {live_at_10} B at 10%, {live_at_end} B at the end");
    assert!(
        live_at_end - live_at_10 <= LIVE_GROWTH_LIMIT_BYTES,
        "the live heap grew by {} B between 10% and 100% of the calls",
        live_at_end - live_at_10
    );
    // The resident set (includes allocator fragmentation and the runtime).
    if let (Some(at_10), Some(at_end)) = (rss_at_10, rss_at_end) {
        println!("soak: VmRSS {at_10} KiB at 10%, {at_end} KiB at the end");
        assert!(
            at_end <= at_10 + RSS_GROWTH_LIMIT_KIB,
            "resident memory grew by {} KiB between 10% and 100% of the calls",
            at_end.saturating_sub(at_10)
        );
    }
}
