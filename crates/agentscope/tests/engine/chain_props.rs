//! Property tests of the hook chain through the real engine, for random priorities, registration orders, interest masks, sync and async hooks and removals: at every occurrence of every one of the twelve event kinds exactly the interested hooks run, in (priority, registration) order (an uninterested hook is never called); and the changes of every chained event compose from hook to hook in that order. (ordering.rs holds the PreCall-only order property across builder and `add_hook` registration.)

use std::sync::{Arc, Mutex};

use crate::support::describe::hook_names;
use crate::support::fixtures::{SwapModel, eleven_kinds_builder, eleven_kinds_script, yield_once};
use crate::support::invariants::{Pending, assert_invariants};
use agentscope::prelude::*;
use agentscope::{BoxedHook, ModelError};
use agentscope_test::tools::EchoTool;
use agentscope_test::{RecordingHook, ScriptedResponse};
use futures::executor::block_on;
use proptest::prelude::*;
use serde_json::json;

type K = HookEventType;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// An event of this kind starts (logged by a marker hook that runs first).
    Event(HookEventType),
    /// Hook number `i` ran.
    Hook(usize),
}

type Log = Arc<Mutex<Vec<Entry>>>;

fn mask(bits: u16) -> HookEventTypes {
    HookEventType::ALL
        .into_iter()
        .filter(|kind| bits & (1 << kind.index()) != 0)
        .collect()
}

/// An async hook that yields before logging.
struct AsyncLogger {
    index: usize,
    priority: i32,
    interests: HookEventTypes,
    log: Log,
}

impl Hook for AsyncLogger {
    async fn on_event(&self, _event: &mut HookEvent) -> Result<(), HookError> {
        yield_once().await;
        self.log.lock().unwrap().push(Entry::Hook(self.index));
        Ok(())
    }

    fn priority(&self) -> i32 {
        self.priority
    }

    fn interests(&self) -> HookEventTypes {
        self.interests
    }
}

fn logger(
    index: usize,
    priority: i32,
    interests: HookEventTypes,
    is_async: bool,
    log: &Log,
) -> BoxedHook {
    if is_async {
        BoxedHook::new(AsyncLogger {
            index,
            priority,
            interests,
            log: Arc::clone(log),
        })
    } else {
        let log = Arc::clone(log);
        BoxedHook::new(
            hook_fn(move |_| {
                log.lock().unwrap().push(Entry::Hook(index));
                Ok(())
            })
            .with_priority(priority)
            .with_interests(interests),
        )
    }
}

#[derive(Debug, Clone)]
struct HookSpec {
    priority: i32,
    interests: u16,
    is_async: bool,
    removed: bool,
}

fn hook_spec() -> impl Strategy<Value = HookSpec> {
    (
        prop_oneof![8 => -3i32..4, 1 => Just(i32::MAX)],
        prop_oneof![1 => Just(0xfffu16), 1 => Just(0u16), 6 => 0u16..0x1000],
        any::<bool>(),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(priority, interests, is_async, removed)| HookSpec {
            priority,
            interests,
            is_async,
            removed,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_event_reaches_exactly_the_interested_hooks_in_priority_then_registration_order(
        hooks in prop::collection::vec(hook_spec(), 1..10),
        on_builder in 0usize..10,
    ) {
        let log: Log = Arc::default();
        let marker = {
            let log = Arc::clone(&log);
            hook_fn(move |event| {
                log.lock().unwrap().push(Entry::Event(event.event_type()));
                Ok(())
            })
            .with_priority(i32::MIN)
            .with_name("marker")
        };
        let model = SwapModel::new(eleven_kinds_script());
        let all = RecordingHook::new(i32::MAX);
        // The marker first; then hooks [0, on_builder) on the builder, the rest with
        // add_hook; the full recorder last.
        let split = on_builder.min(hooks.len());
        let mut builder = eleven_kinds_builder(&model).sys_prompt("sys").hook(marker);
        for (index, spec) in hooks.iter().enumerate().take(split) {
            builder = builder.hook(logger(index, spec.priority, mask(spec.interests), spec.is_async, &log));
        }
        let agent = builder.build().unwrap();
        for (index, spec) in hooks.iter().enumerate().skip(split) {
            agent.add_hook(logger(index, spec.priority, mask(spec.interests), spec.is_async, &log));
        }
        agent.add_hook(all.clone());
        // Removals (of hooks registered either way) apply from the next call on.
        let order = agent.hook_order();
        for (index, spec) in hooks.iter().enumerate() {
            if spec.removed {
                let id = order[1 + ordered_position(&hooks, index)].id;
                prop_assert!(agent.remove_hook(id));
            }
        }

        let reply = block_on(agent.call("q")).unwrap();
        prop_assert_eq!(reply.text(), "summary");
        model.set_script([ScriptedResponse::failure(ModelError::msg("down"))]);
        let err = block_on(agent.call("again")).unwrap_err();
        prop_assert_eq!(err.to_string(), "model error: down");

        // The expected order of the live hooks: sorted by (priority, registration).
        let mut sorted: Vec<usize> = (0..hooks.len()).filter(|&i| !hooks[i].removed).collect();
        sorted.sort_by_key(|&i| (hooks[i].priority, i));
        let names = hook_names(&agent);
        prop_assert_eq!(names.len(), sorted.len() + 2);

        // Split the log at each event and compare each segment with the interested hooks.
        let entries = log.lock().unwrap().clone();
        let mut segments: Vec<(HookEventType, Vec<usize>)> = Vec::new();
        for entry in entries {
            match entry {
                Entry::Event(kind) => segments.push((kind, Vec::new())),
                Entry::Hook(index) => segments.last_mut().unwrap().1.push(index),
            }
        }
        let seen_kinds: Vec<HookEventType> = segments.iter().map(|(kind, _)| *kind).collect();
        prop_assert_eq!(&seen_kinds, &all.types(), "the marker saw every event");
        for kind in HookEventType::ALL {
            prop_assert!(seen_kinds.contains(&kind), "{} never fired", kind);
        }
        for (kind, ran) in segments {
            let expected: Vec<usize> = sorted
                .iter()
                .copied()
                .filter(|&i| mask(hooks[i].interests).contains(kind))
                .collect();
            prop_assert_eq!(ran, expected, "at {}", kind);
        }
        assert_invariants(&agent, &[&all], Pending::None);
    }
}

/// The position of hook `index` among all hooks sorted by (priority, registration).
fn ordered_position(hooks: &[HookSpec], index: usize) -> usize {
    let mut sorted: Vec<usize> = (0..hooks.len()).collect();
    sorted.sort_by_key(|&i| (hooks[i].priority, i));
    sorted.iter().position(|&i| i == index).unwrap()
}

// ---------------------------------------------------------------------------------------
// Modifications chain
// ---------------------------------------------------------------------------------------

/// The eight chained kinds, each with a change this hook makes: it appends `<i>` to the
/// text the event lets it change.
const CHAINED: [HookEventType; 8] = [
    K::PreCall,
    K::PreReasoning,
    K::PostReasoning,
    K::PreActing,
    K::PostActing,
    K::PreSummary,
    K::PostSummary,
    K::PostCall,
];

fn with_text(msg: &Msg, text: String) -> Msg {
    let mut msg = msg.clone();
    let at = msg
        .content
        .iter()
        .position(|b| matches!(b, ContentBlock::Text(_)))
        .unwrap();
    msg.content[at] = ContentBlock::text(text);
    msg
}

fn appender(index: usize, priority: i32, interests: HookEventTypes, is_async: bool) -> BoxedHook {
    let tag = format!("<{index}>");
    let change = move |event: &mut HookEvent| -> Result<(), HookError> {
        let tagged = |text: String| format!("{text}{tag}");
        let tagged_message = |msg: &Msg| with_text(msg, tagged(msg.text()));
        match event {
            HookEvent::PreCall(e) => {
                let text = tagged(e.input_messages()[0].text());
                e.set_input_messages(vec![Msg::user(text)]);
            }
            HookEvent::PostCall(e) => {
                e.set_final_message(Msg::assistant(tagged(e.final_message().text())));
            }
            HookEvent::PreReasoning(e) => {
                let system = Msg::system(tagged(e.system_message().unwrap().text()));
                e.set_system_message(Some(system));
            }
            HookEvent::PostReasoning(e) => {
                e.set_reasoning_message(tagged_message(e.reasoning_message()));
            }
            HookEvent::PreActing(e) => {
                let mut call = e.tool_use().clone();
                call.input =
                    json!({"text": tagged(call.input["text"].as_str().unwrap().to_owned())}).into();
                e.set_tool_use(call)?;
            }
            HookEvent::PostActing(e) => {
                let text = tagged(e.tool_result().text_output());
                e.set_tool_result(ToolResultBlock::text("", "", text));
            }
            HookEvent::PreSummary(e) => {
                let system = Msg::system(tagged(e.system_message().unwrap().text()));
                e.set_system_message(Some(system));
            }
            HookEvent::PostSummary(e) => {
                e.set_summary_message(tagged_message(e.summary_message()));
            }
            HookEvent::ReasoningChunk(_)
            | HookEvent::ActingChunk(_)
            | HookEvent::SummaryChunk(_)
            | HookEvent::Error(_) => {}
        }
        Ok(())
    };
    if is_async {
        BoxedHook::new(AsyncChange {
            change: Box::new(change),
            priority,
            interests,
        })
    } else {
        BoxedHook::new(
            hook_fn(change)
                .with_priority(priority)
                .with_interests(interests),
        )
    }
}

type Change = Box<dyn Fn(&mut HookEvent) -> Result<(), HookError> + Send + Sync>;

/// An async hook that yields, then makes its change.
struct AsyncChange {
    change: Change,
    priority: i32,
    interests: HookEventTypes,
}

impl Hook for AsyncChange {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        yield_once().await;
        (self.change)(event)
    }

    fn priority(&self) -> i32 {
        self.priority
    }

    fn interests(&self) -> HookEventTypes {
        self.interests
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn changes_compose_in_priority_then_registration_order_at_every_chained_event(
        hooks in prop::collection::vec((-2i32..3, prop::collection::vec(any::<bool>(), 8), any::<bool>()), 1..8),
    ) {
        let model = SwapModel::new([
            ScriptedResponse::text_and_tool_call("Let me", "c1", "echo", json!({"text": "hi"})),
            ScriptedResponse::text("summary"),
        ]);
        let rec = RecordingHook::new(i32::MAX);
        let mut builder = ReActAgent::builder()
            .sys_prompt("sys")
            .model(model.clone())
            .toolkit(Toolkit::new().tool(EchoTool::new()))
            .max_iters(1);
        let interests = |picks: &[bool]| -> HookEventTypes {
            CHAINED.iter().zip(picks).filter(|(_, on)| **on).map(|(kind, _)| *kind).collect()
        };
        for (index, (priority, picks, is_async)) in hooks.iter().enumerate() {
            builder = builder.hook(appender(index, *priority, interests(picks), *is_async));
        }
        let agent = builder.hook(rec.clone()).build().unwrap();

        let reply = block_on(agent.call("q")).unwrap();

        let mut sorted: Vec<usize> = (0..hooks.len()).collect();
        sorted.sort_by_key(|&i| (hooks[i].0, i));
        let tags = |kind: HookEventType| -> String {
            sorted
                .iter()
                .filter(|&&i| interests(&hooks[i].1).contains(kind))
                .map(|i| format!("<{i}>"))
                .collect()
        };
        let requests = model.script().requests();
        prop_assert_eq!(requests.len(), 2);
        // PreReasoning and PreSummary: the system message each model call got.
        prop_assert_eq!(requests[0].messages[0].text(), format!("sys{}", tags(K::PreReasoning)));
        prop_assert_eq!(requests[1].messages[0].text(), format!("sys{}", tags(K::PreSummary)));
        let memory = agent.memory().messages();
        prop_assert_eq!(memory.len(), 4);
        // PreCall: the stored input.
        prop_assert_eq!(memory[0].text(), format!("q{}", tags(K::PreCall)));
        // PostReasoning: the stored reasoning message.
        prop_assert_eq!(memory[1].text(), format!("Let me{}", tags(K::PostReasoning)));
        // PreActing changed what ran, PostActing what was stored.
        prop_assert_eq!(
            memory[2].tool_results()[0].text_output(),
            format!("hi{}{}", tags(K::PreActing), tags(K::PostActing))
        );
        // PostSummary: the stored summary; PostCall: what the caller got on top of it.
        let summary = format!("summary{}", tags(K::PostSummary));
        prop_assert_eq!(memory[3].text(), summary.clone());
        prop_assert_eq!(reply.text(), format!("{summary}{}", tags(K::PostCall)));
        // The last hook saw every change.
        let HookEvent::PostCall(post_call) = rec.events().last().cloned().unwrap() else {
            panic!("no PostCall");
        };
        prop_assert_eq!(post_call.final_message().text(), reply.text());
        assert_invariants(&agent, &[&rec], Pending::None);
    }
}
