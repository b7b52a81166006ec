//! Live tool sources (`Toolkit::source`): a running agent offers the model a source's
//! current tools from its next call on, a call keeps the snapshot it started with, name
//! clashes fail the call at its start, and an unchanged source is not resolved again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentscope::hooks::{ApprovalPolicy, ToolApprovalHook};
use agentscope::prelude::*;
use agentscope::{BoxedTool, ModelRequest};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

/// A source whose tool names the test sets; counts how often its tools are asked for.
struct FakeSource {
    name: &'static str,
    state: Mutex<(u64, Vec<&'static str>)>,
    listed: AtomicUsize,
}

impl FakeSource {
    fn new(name: &'static str, tools: &[&'static str]) -> Arc<Self> {
        Arc::new(Self {
            name,
            state: Mutex::new((0, tools.to_vec())),
            listed: AtomicUsize::new(0),
        })
    }

    fn set(&self, tools: &[&'static str]) {
        let mut state = self.state.lock().unwrap();
        state.0 += 1;
        state.1 = tools.to_vec();
    }

    fn listed(&self) -> usize {
        self.listed.load(Ordering::SeqCst)
    }

    /// A tool named "change" that sets this source's tools to `tools` when it runs.
    fn changer(self: &Arc<Self>, tools: &'static [&'static str]) -> impl Tool {
        let source = Arc::clone(self);
        tool_fn(
            "change",
            "Changes the tools of the source.",
            json!({"type": "object"}),
            move |_input, _ctx| {
                source.set(tools);
                async { Ok("changed") }
            },
        )
    }
}

fn text_tool(name: &'static str) -> BoxedTool {
    BoxedTool::new(tool_fn(
        name,
        format!("The tool {name}."),
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        move |input, _ctx| async move { Ok(format!("{name}: {}", input["text"])) },
    ))
}

impl ToolSource for FakeSource {
    fn name(&self) -> &str {
        self.name
    }

    fn generation(&self) -> u64 {
        self.state.lock().unwrap().0
    }

    fn tools(&self) -> Vec<BoxedTool> {
        self.listed.fetch_add(1, Ordering::SeqCst);
        let names = self.state.lock().unwrap().1.clone();
        names.into_iter().map(text_tool).collect()
    }
}

/// An agent with `model` and `toolkit` (and otherwise the defaults).
fn agent_with(model: &ScriptedModel, toolkit: Toolkit) -> ReActAgent {
    ReActAgent::builder()
        .model(model.clone())
        .toolkit(toolkit)
        .build()
        .unwrap()
}

fn offered(request: &ModelRequest) -> Vec<&str> {
    request.tools.iter().map(|t| t.name.as_str()).collect()
}

#[tokio::test]
async fn a_running_agent_offers_the_sources_current_tools_from_its_next_call() {
    let source = FakeSource::new("fake", &["A"]);
    let model = ScriptedModel::new([ScriptedResponse::text("one"), ScriptedResponse::text("two")]);
    let agent = agent_with(&model, Toolkit::new().source(Arc::clone(&source)));
    assert_eq!(agent.call("first").await.unwrap().text(), "one");
    source.set(&["A", "B"]);
    assert_eq!(agent.call("second").await.unwrap().text(), "two");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(offered(&requests[0]), ["A"]);
    assert_eq!(offered(&requests[1]), ["A", "B"]);
    // A removed tool is gone from the next call.
    source.set(&["B"]);
    assert_eq!(agent.toolkit().resolve().unwrap().names(), ["B"]);
}

#[tokio::test]
async fn a_call_keeps_the_tools_it_started_with() {
    let source = FakeSource::new("fake", &["A"]);
    // The static tool changes the source while the call runs.
    let changer = source.changer(&["A", "B"]);
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "change", json!({})),
        ScriptedResponse::tool_call("c2", "B", json!({"text": "hi"})),
        ScriptedResponse::text("done"),
        ScriptedResponse::tool_call("c3", "B", json!({"text": "hi"})),
        ScriptedResponse::text("done again"),
    ]);
    let agent = agent_with(
        &model,
        Toolkit::new().tool(changer).source(Arc::clone(&source)),
    );
    assert_eq!(agent.call("change it").await.unwrap().text(), "done");
    assert_eq!(agent.call("use B").await.unwrap().text(), "done again");
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    // The first call: A throughout, though the source gained B mid-call; B is unknown.
    assert_eq!(offered(&requests[0]), ["change", "A"]);
    assert_eq!(offered(&requests[1]), ["change", "A"]);
    assert_eq!(offered(&requests[2]), ["change", "A"]);
    let memory = agent.memory().messages();
    let results: Vec<ToolResultBlock> = memory
        .iter()
        .flat_map(|msg| msg.tool_results().into_iter().cloned())
        .collect();
    assert_eq!(results[0], ToolResultBlock::text("c1", "change", "changed"));
    assert!(results[1].is_error);
    assert_eq!(results[1].text_output(), "Error: Tool not found: B");
    // The next call has B, and runs it.
    assert_eq!(offered(&requests[3]), ["change", "A", "B"]);
    assert_eq!(offered(&requests[4]), ["change", "A", "B"]);
    assert_eq!(results[2], ToolResultBlock::text("c3", "B", "B: \"hi\""));
}

#[tokio::test]
async fn a_name_clash_fails_the_call_at_its_start() {
    let clock = || {
        tool_fn(
            "A",
            "A static A.",
            json!({"type": "object"}),
            |_i, _c| async { Ok("static") },
        )
    };
    // With the toolkit's own tool.
    let model = ScriptedModel::new([ScriptedResponse::text("never")]);
    let agent = agent_with(
        &model,
        Toolkit::new()
            .tool(clock())
            .source(FakeSource::new("fake", &["A"])),
    );
    let error = agent.call("hi").await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the tool source 'fake' offers a tool named 'A', which clashes with the toolkit's own \
         tool of that name; give the source's tools a distinct prefix"
    );
    assert!(
        matches!(error, AgentError::InvalidInput { .. }),
        "{error:?}"
    );
    assert!(model.requests().is_empty());
    assert!(agent.memory().messages().is_empty());

    // Between two sources.
    let toolkit = Toolkit::new()
        .source(FakeSource::new("first", &["X", "A"]))
        .source(FakeSource::new("second", &["A"]));
    assert_eq!(
        toolkit.resolve().unwrap_err().to_string(),
        "the tool source 'second' offers a tool named 'A', which clashes with the tool of that \
         name from the tool source 'first'; give the source's tools a distinct prefix"
    );

    // The clash is fixed at the source: the next call works.
    let source = FakeSource::new("fake", &["A"]);
    let model = ScriptedModel::new([ScriptedResponse::text("fine")]);
    let agent = agent_with(
        &model,
        Toolkit::new().tool(clock()).source(Arc::clone(&source)),
    );
    assert!(agent.call("hi").await.is_err());
    source.set(&["fake_A"]);
    assert_eq!(agent.call("hi").await.unwrap().text(), "fine");
    assert_eq!(offered(&model.requests()[0]), ["A", "fake_A"]);
}

#[tokio::test]
async fn an_unchanged_source_is_not_resolved_again() {
    let source = FakeSource::new("fake", &["A"]);
    let model = ScriptedModel::new([
        ScriptedResponse::text("1"),
        ScriptedResponse::text("2"),
        ScriptedResponse::text("3"),
        ScriptedResponse::text("4"),
    ]);
    let agent = agent_with(&model, Toolkit::new().source(Arc::clone(&source)));
    agent.call("1").await.unwrap();
    agent.call("2").await.unwrap();
    agent.call("3").await.unwrap();
    assert_eq!(source.listed(), 1);
    // A failed resolution is remembered too, until the source changes.
    source.set(&["A", "A"]);
    assert!(agent.call("4").await.is_err());
    assert!(agent.call("4").await.is_err());
    assert_eq!(source.listed(), 2);
    assert_eq!(
        agent.call("4").await.unwrap_err().to_string(),
        "the tool source 'fake' offers a tool named 'A', which clashes with another tool of the \
         same source; give the source's tools a distinct prefix"
    );
    source.set(&["B"]);
    agent.call("4").await.unwrap();
    assert_eq!(source.listed(), 3);
    assert_eq!(offered(&model.requests()[3]), ["B"]);
}

#[tokio::test]
async fn source_tools_have_their_schemas_checked_and_known_to_hooks() {
    // The arguments of a source's tool are validated against its schema.
    let source = FakeSource::new("fake", &["A"]);
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "A", json!({"text": 5})),
        ScriptedResponse::text("done"),
    ]);
    let agent = agent_with(&model, Toolkit::new().source(Arc::clone(&source)));
    agent.call("use A").await.unwrap();
    let results: Vec<ToolResultBlock> = model.requests()[1]
        .messages
        .iter()
        .flat_map(|msg| msg.tool_results().into_iter().cloned())
        .collect();
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
    assert!(
        results[0].text_output().starts_with(
            "Error: Parameter validation failed for tool 'A': /text: 5 is not of type"
        ),
        "{}",
        results[0].text_output()
    );

    // The approval hook holds a call and learns its schema from the call's context.
    let approvals = ToolApprovalHook::new(ApprovalPolicy::all());
    let model = ScriptedModel::new([ScriptedResponse::tool_call("c1", "A", json!({"text": "x"}))]);
    let agent = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().source(Arc::clone(&source)))
        .hook(approvals.clone())
        .build()
        .unwrap();
    agent.call("use A").await.unwrap();
    assert_eq!(approvals.pending().len(), 1);
    assert!(approvals.edit("c1", json!({"text": 7})).is_err());
    assert!(approvals.edit("c1", json!({"text": "y"})).is_ok());

    // `resolve` gives `learn_tools` the source's tools (after a restart, before any call).
    let restored = ToolApprovalHook::new(ApprovalPolicy::all());
    restored.restore(&agent.memory().messages());
    restored.learn_tools(&agent.toolkit().resolve().unwrap());
    assert!(restored.edit("c1", json!({"text": 7})).is_err());
    assert!(restored.edit("c1", json!({"text": "z"})).is_ok());
}
