//! JsonlTraceHook: every hook event becomes one JSON line that reads back (read_trace) into the events that happened, with chunk lines only when asked, events as the earlier hooks left them, files appended to, and writer failures that never fail the call.

use std::io::{self, Cursor, Write};
use std::sync::{Arc, Mutex};

use crate::support::describe::texts;
use agentscope::BoxedHook;
use agentscope::hooks::{JsonlTraceHook, TraceEvent, TraceRecord, read_trace};
use agentscope::prelude::*;
use agentscope_test::tools::{Calculator, ProgressTool};
use agentscope_test::{RecordingHook, ScriptedChunk, ScriptedModel, ScriptedResponse};
use futures::executor::block_on;
use serde_json::{Value, json};

/// A writer the test reads back.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }

    fn records(&self) -> Vec<TraceRecord> {
        read_trace(Cursor::new(self.text())).unwrap()
    }
}

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A writer that always fails.
struct Broken;

impl Write for Broken {
    fn write(&mut self, _buf: &[u8]) -> io::Result<usize> {
        Err(io::Error::other("disk on fire"))
    }

    fn flush(&mut self) -> io::Result<()> {
        Err(io::Error::other("disk on fire"))
    }
}

fn calculator_run() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "6*7"})),
        ScriptedResponse::text("The answer is 42."),
    ])
}

fn agent(model: ScriptedModel, hooks: Vec<BoxedHook>) -> ReActAgent {
    ReActAgent::builder()
        .name("assistant")
        .sys_prompt("You are helpful.")
        .model(model)
        .toolkit(
            Toolkit::new()
                .tool(Calculator::new())
                .tool(ProgressTool::new()),
        )
        .hooks(hooks)
        .build()
        .unwrap()
}

/// The event kinds of a run with one tool call, without chunks.
const TOOL_CALL_RUN: [&str; 8] = [
    "PreCall",
    "PreReasoning",
    "PostReasoning",
    "PreActing",
    "PostActing",
    "PreReasoning",
    "PostReasoning",
    "PostCall",
];

fn kinds(records: &[TraceRecord]) -> Vec<&'static str> {
    records
        .iter()
        .map(|record| record.event_type().as_str())
        .collect()
}

#[test]
fn a_tool_call_run_reads_back_as_the_events_that_happened() {
    let out = Shared::default();
    let recorder = RecordingHook::new(JsonlTraceHook::PRIORITY + 1).with_interests(
        HookEventTypes::ALL
            .without(HookEventType::ReasoningChunk)
            .without(HookEventType::ActingChunk)
            .without(HookEventType::SummaryChunk),
    );
    let agent = agent(
        calculator_run(),
        vec![
            BoxedHook::new(JsonlTraceHook::new(out.clone())),
            BoxedHook::new(recorder.clone()),
        ],
    );
    let reply = block_on(agent.call("What is 6*7?")).unwrap();
    assert_eq!(reply.text(), "The answer is 42.");

    // One newline-terminated JSON object per event, with the documented leading keys.
    let text = out.text();
    assert!(text.ends_with('\n'));
    for line in text.lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        assert!(value.is_object());
        assert!(line.starts_with(r#"{"ts":""#), "{line}");
        let agent_at = line.find(r#","agent":{"name":"assistant","id":"#).unwrap();
        let event_at = line.find(r#"},"event":""#).unwrap();
        assert!(agent_at < event_at, "{line}");
    }

    let records = out.records();
    assert_eq!(kinds(&records), TOOL_CALL_RUN);
    // Exactly the events a hook right after the trace saw, in order.
    let seen = recorder.events();
    assert_eq!(records.len(), seen.len());
    for (record, event) in records.iter().zip(&seen) {
        assert_eq!(record.event_type(), event.event_type());
        assert_eq!(record.ts, event.timestamp());
        assert_eq!(record.agent.name, "assistant");
        assert_eq!(record.agent.id, agent.id());
        assert_eq!(record, &TraceRecord::from(event));
    }

    let TraceEvent::PreCall {
        input_messages,
        system_message,
        history_len,
    } = &records[0].event
    else {
        panic!("{:?}", records[0])
    };
    assert_eq!(texts(input_messages), ["What is 6*7?"]);
    assert_eq!(system_message.as_ref().unwrap().text(), "You are helpful.");
    assert_eq!(*history_len, 0);

    let TraceEvent::PreReasoning {
        model_name,
        iteration,
        input_messages,
        system_message,
        ..
    } = &records[1].event
    else {
        panic!("{:?}", records[1])
    };
    assert_eq!((model_name.as_str(), *iteration), ("scripted-model", 0));
    assert_eq!(texts(input_messages), ["What is 6*7?"]);
    assert_eq!(system_message.as_ref().unwrap().text(), "You are helpful.");

    let TraceEvent::PostReasoning {
        reasoning_message,
        stop_requested,
        goto_messages,
        ..
    } = &records[2].event
    else {
        panic!("{:?}", records[2])
    };
    let calls = reasoning_message.tool_uses();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("c1", "calculator")
    );
    assert_eq!(calls[0].input, json!({"expression": "6*7"}));
    assert!(!stop_requested);
    assert_eq!(goto_messages, &None);

    let TraceEvent::PreActing {
        tool_use,
        skip_result,
    } = &records[3].event
    else {
        panic!("{:?}", records[3])
    };
    assert_eq!(tool_use.name, "calculator");
    assert_eq!(tool_use.input, json!({"expression": "6*7"}));
    assert_eq!(skip_result, &None);

    let TraceEvent::PostActing {
        tool_use,
        tool_result,
        stop_requested,
    } = &records[4].event
    else {
        panic!("{:?}", records[4])
    };
    assert_eq!(tool_use.id, "c1");
    assert_eq!(
        (tool_result.id.as_str(), tool_result.text_output().as_str()),
        ("c1", "42")
    );
    assert!(!tool_result.is_error);
    assert!(!stop_requested);

    let TraceEvent::PreReasoning {
        iteration,
        input_messages,
        ..
    } = &records[5].event
    else {
        panic!("{:?}", records[5])
    };
    assert_eq!(*iteration, 1);
    // The second model call sees the question, the tool call and its result.
    assert_eq!(input_messages.len(), 3);
    assert_eq!(input_messages[2].tool_results()[0].text_output(), "42");

    let TraceEvent::PostCall { final_message } = &records[7].event else {
        panic!("{:?}", records[7])
    };
    assert_eq!(final_message, &reply);
}

#[test]
fn chunk_events_are_recorded_only_with_chunks_enabled() {
    let run = |chunks: bool| {
        let out = Shared::default();
        let model = ScriptedModel::new([
            ScriptedResponse::tool_call("c1", "progress", json!({"steps": 2})),
            ScriptedResponse::chunks([ScriptedChunk::text("Do"), ScriptedChunk::text("ne.")]),
        ]);
        let hook = JsonlTraceHook::new(out.clone()).with_chunks(chunks);
        let agent = agent(model, vec![BoxedHook::new(hook)]);
        assert_eq!(block_on(agent.call("go")).unwrap().text(), "Done.");
        out.records()
    };

    let without = run(false);
    assert_eq!(kinds(&without), TOOL_CALL_RUN);

    let with = run(true);
    assert_eq!(
        kinds(&with),
        [
            "PreCall",
            "PreReasoning",
            "ReasoningChunk",
            "PostReasoning",
            "PreActing",
            "ActingChunk",
            "ActingChunk",
            "PostActing",
            "PreReasoning",
            "ReasoningChunk",
            "ReasoningChunk",
            "PostReasoning",
            "PostCall",
        ]
    );
    let progress: Vec<String> = with
        .iter()
        .filter_map(|record| match &record.event {
            TraceEvent::ActingChunk { chunk } => {
                assert_eq!((chunk.id.as_str(), chunk.name.as_str()), ("c1", "progress"));
                Some(chunk.text_output())
            }
            _ => None,
        })
        .collect();
    assert_eq!(progress, ["step 1/2", "step 2/2"]);
    let deltas: Vec<String> = with
        .iter()
        .filter_map(|record| match &record.event {
            TraceEvent::ReasoningChunk { model_name, chunk } => {
                assert_eq!(model_name, "scripted-model");
                Some(chunk.text())
            }
            _ => None,
        })
        .collect();
    // The tool-call chunk has no text; the answer's chunks are deltas, not accumulations.
    assert_eq!(deltas, ["", "Do", "ne."]);
}

#[test]
fn a_failing_call_ends_with_an_error_line() {
    let out = Shared::default();
    let agent = agent(
        ScriptedModel::new([ScriptedResponse::error("model overloaded")]),
        vec![BoxedHook::new(JsonlTraceHook::new(out.clone()))],
    );
    let err = block_on(agent.call("hi")).unwrap_err();

    let records = out.records();
    assert_eq!(kinds(&records), ["PreCall", "PreReasoning", "Error"]);
    let TraceEvent::Error { error, error_type } = &records[2].event else {
        panic!("{:?}", records[2])
    };
    assert_eq!(error, &err.to_string());
    assert_eq!(error, "model error: model overloaded");
    assert_eq!(error_type, "model_error");
}

#[test]
fn lines_show_events_as_earlier_hooks_left_them() {
    let out = Shared::default();
    let before = hook_fn(|event| {
        match event {
            HookEvent::PreCall(e) => e.append_system_content("Be brief."),
            HookEvent::PostActing(e) => {
                let mut result = e.tool_result().clone();
                result.output = vec![ContentBlock::text("forty-two")];
                e.set_tool_result(result);
            }
            HookEvent::PostCall(e) => e.set_final_message(Msg::assistant("rewritten")),
            _ => {}
        }
        Ok(())
    })
    .with_priority(50);
    let after = hook_fn(|event| {
        if let HookEvent::PostCall(e) = event {
            e.set_final_message(Msg::assistant("too late for the trace"));
        }
        Ok(())
    })
    .with_priority(JsonlTraceHook::PRIORITY + 50);
    let agent = agent(
        calculator_run(),
        vec![
            BoxedHook::new(after),
            BoxedHook::new(JsonlTraceHook::new(out.clone())),
            BoxedHook::new(before),
        ],
    );
    let reply = block_on(agent.call("What is 6*7?")).unwrap();
    assert_eq!(reply.text(), "too late for the trace");

    let records = out.records();
    let TraceEvent::PreCall { system_message, .. } = &records[0].event else {
        panic!()
    };
    assert_eq!(
        system_message.as_ref().unwrap().text(),
        "You are helpful.\nBe brief."
    );
    let TraceEvent::PostActing { tool_result, .. } = &records[4].event else {
        panic!()
    };
    assert_eq!(tool_result.text_output(), "forty-two");
    let TraceEvent::PostCall { final_message } = &records[7].event else {
        panic!()
    };
    assert_eq!(final_message.text(), "rewritten");
}

#[test]
fn stop_and_goto_requests_are_recorded() {
    let out = Shared::default();
    let steer = hook_fn(|event| {
        if let HookEvent::PostReasoning(e) = event {
            if e.iteration() == 0 && !e.reasoning_message().text().contains("sure") {
                e.goto_reasoning(vec![Msg::user("Are you sure?")])?;
            } else {
                e.stop_agent();
            }
        }
        Ok(())
    })
    .with_priority(50);
    let agent = agent(
        ScriptedModel::new([
            ScriptedResponse::text("Maybe."),
            ScriptedResponse::text("I am sure."),
        ]),
        vec![
            BoxedHook::new(JsonlTraceHook::new(out.clone())),
            BoxedHook::new(steer),
        ],
    );
    block_on(agent.call("Is it?")).unwrap();

    let flags: Vec<(bool, Option<Vec<String>>)> = out
        .records()
        .iter()
        .filter_map(|record| match &record.event {
            TraceEvent::PostReasoning {
                stop_requested,
                goto_messages,
                ..
            } => Some((*stop_requested, goto_messages.as_deref().map(texts))),
            _ => None,
        })
        .collect();
    assert_eq!(
        flags,
        [
            (false, Some(vec!["Are you sure?".to_owned()])),
            (true, None)
        ]
    );
}

#[test]
fn a_failing_writer_never_fails_the_call() {
    let agent = agent(
        calculator_run(),
        vec![BoxedHook::new(
            JsonlTraceHook::new(Broken).with_chunks(true),
        )],
    );
    let reply = block_on(agent.call("What is 6*7?")).unwrap();
    assert_eq!(reply.text(), "The answer is 42.");
    assert_eq!(agent.memory().len(), 4);
}

#[test]
fn to_file_appends_across_calls_and_agents() {
    let path = std::env::temp_dir().join(format!(
        "agentscope-jsonl-trace-{}-{}.jsonl",
        std::process::id(),
        uuid::Uuid::new_v4()
    ));
    let hook = JsonlTraceHook::to_file(&path).unwrap();
    let first = ReActAgent::builder()
        .name("first")
        .model(ScriptedModel::new([ScriptedResponse::text("one")]))
        .hook(hook.clone())
        .build()
        .unwrap();
    block_on(first.call("a")).unwrap();
    drop(first);
    drop(hook);

    // A new hook on the same file appends.
    let second = ReActAgent::builder()
        .name("second")
        .model(ScriptedModel::new([ScriptedResponse::text("two")]))
        .hook(JsonlTraceHook::to_file(&path).unwrap())
        .build()
        .unwrap();
    block_on(second.call("b")).unwrap();

    let file = std::fs::File::open(&path).unwrap();
    let records = read_trace(io::BufReader::new(file)).unwrap();
    std::fs::remove_file(&path).unwrap();
    let summary: Vec<(&str, &str)> = records
        .iter()
        .map(|record| (record.agent.name.as_str(), record.event_type().as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ("first", "PreCall"),
            ("first", "PreReasoning"),
            ("first", "PostReasoning"),
            ("first", "PostCall"),
            ("second", "PreCall"),
            ("second", "PreReasoning"),
            ("second", "PostReasoning"),
            ("second", "PostCall"),
        ]
    );
}

#[test]
fn to_file_reports_an_unopenable_path() {
    let dir = std::env::temp_dir();
    // A directory cannot be opened for appending.
    assert!(JsonlTraceHook::to_file(&dir).is_err());
}

#[test]
fn the_hook_is_listed_with_its_priority_and_interests() {
    let agent = ReActAgent::builder()
        .model(ScriptedModel::new([]))
        .hook(JsonlTraceHook::new(io::sink()))
        .build()
        .unwrap();
    let order = agent.hook_order();
    let entry = order.iter().find(|h| h.name == "jsonl_trace").unwrap();
    assert_eq!(entry.priority, 900);
    assert!(!entry.interests.contains(HookEventType::ReasoningChunk));
    assert!(entry.interests.contains(HookEventType::PostSummary));
}
