//! TracingHook: span names, OpenTelemetry GenAI fields and parent/child structure captured by a test `tracing` layer, error.type on failures, and cleanup of dropped calls.

use crate::support::hooks::stop_after_first_reasoning;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentscope::hooks::TracingHook;
use agentscope::prelude::*;
use agentscope::session::{AgentIdentity, AgentState, JsonFileSessionStore};
use agentscope::{
    CallId, CallInput, ChatStream, HookFn, InDoubt, InDoubtResolution, ModelError, ModelRequest,
};
use agentscope_test::tools::{Calculator, FailingTool};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use futures::FutureExt;
use futures::executor::block_on;
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Subscriber, info_span};
use tracing_subscriber::Registry;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

// ---------------------------------------------------------------------------------------
// A layer that records every span: name, fields (as strings), parent and whether it closed.

#[derive(Debug, Clone)]
struct SpanRecord {
    name: &'static str,
    fields: BTreeMap<String, String>,
    /// Index of the parent in the capture.
    parent: Option<usize>,
    closed: bool,
}

impl SpanRecord {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

#[derive(Default)]
struct Captured {
    spans: Vec<SpanRecord>,
    /// The fields of every event (the message under "message").
    events: Vec<BTreeMap<String, String>>,
    /// Live span ids -> index (ids are reused after a span closes).
    live: HashMap<u64, usize>,
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Captured>>);

impl Capture {
    fn spans(&self) -> Vec<SpanRecord> {
        self.0.lock().unwrap().spans.clone()
    }

    fn events(&self) -> Vec<BTreeMap<String, String>> {
        self.0.lock().unwrap().events.clone()
    }

    fn subscriber(&self) -> impl Subscriber + Send + Sync + 'static {
        Registry::default().with(self.clone())
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S> Layer<S> for Capture
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let parent_id = ctx
            .span(id)
            .and_then(|span| span.parent())
            .map(|parent| parent.id().into_u64());
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let mut captured = self.0.lock().unwrap();
        let parent = parent_id.and_then(|parent| captured.live.get(&parent).copied());
        let index = captured.spans.len();
        captured.spans.push(SpanRecord {
            name: attrs.metadata().name(),
            fields,
            parent,
            closed: false,
        });
        captured.live.insert(id.into_u64(), index);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut captured = self.0.lock().unwrap();
        if let Some(&index) = captured.live.get(&id.into_u64()) {
            values.record(&mut Fields(&mut captured.spans[index].fields));
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let mut captured = self.0.lock().unwrap();
        // The span an event names as its parent, by name (under "parent").
        if let Some(&index) = event
            .parent()
            .and_then(|parent| captured.live.get(&parent.into_u64()))
        {
            let name = captured.spans[index].name.to_owned();
            fields.insert("parent".to_owned(), name);
        }
        captured.events.push(fields);
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        let mut captured = self.0.lock().unwrap();
        if let Some(index) = captured.live.remove(&id.into_u64()) {
            captured.spans[index].closed = true;
        }
    }
}

/// Runs `future` to completion with `capture` as this thread's subscriber.
fn traced<T>(capture: &Capture, future: impl Future<Output = T>) -> T {
    tracing::subscriber::with_default(capture.subscriber(), || block_on(future))
}

/// Span fields from `(name, value)` pairs.
fn fields<V: Into<String>>(
    pairs: impl IntoIterator<Item = (&'static str, V)>,
) -> BTreeMap<String, String> {
    pairs
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value.into()))
        .collect()
}

/// A model that calls the calculator (`c1`) on `expression`, then answers `answer`.
fn calculates(expression: &str, answer: &str) -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({ "expression": expression })),
        ScriptedResponse::text(answer),
    ])
}

fn agent_with(model: ScriptedModel, hook: &TracingHook) -> ReActAgent {
    ReActAgent::builder()
        .name("assistant")
        .model(model)
        .toolkit(
            Toolkit::new()
                .tool(Calculator::new())
                .tool(FailingTool::new()),
        )
        .hook(hook.clone())
        .build()
        .unwrap()
}

/// A hook named "guard" that fails every event of `kind` with `message`.
fn guard(message: &'static str, kind: HookEventType) -> HookFn {
    hook_fn(move |_| Err(HookError::msg(message)))
        .with_name("guard")
        .with_interests(kind)
}

fn names(spans: &[SpanRecord]) -> Vec<&'static str> {
    spans.iter().map(|span| span.name).collect()
}

// ---------------------------------------------------------------------------------------

#[test]
fn tool_call_then_answer_gives_a_call_span_with_chat_and_tool_children() {
    let capture = Capture::default();
    let hook = TracingHook::new();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "6*7"}))
            .with_usage(10, 5)
            .with_finish_reason("tool_calls"),
        ScriptedResponse::text("42")
            .with_usage(20, 3)
            .with_finish_reason("stop"),
    ]);
    let agent = ReActAgent::builder()
        .name("assistant")
        .model(model)
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .generate_options(GenerateOptions::default().temperature(0.5).max_tokens(256))
        .hook(hook.clone())
        .build()
        .unwrap();

    let reply = traced(&capture, agent.call("What is 6*7?")).unwrap();
    assert_eq!(reply.text(), "42");

    let spans = capture.spans();
    assert_eq!(
        names(&spans),
        ["invoke_agent", "chat", "execute_tool", "chat"]
    );
    assert!(spans.iter().all(|span| span.closed), "{spans:#?}");

    let call = &spans[0];
    assert_eq!(call.parent, None);
    let call_id = call.field("agentscope.call.id").unwrap();
    assert!(call_id.parse::<CallId>().is_ok(), "{call_id}");
    let expected = fields([
        ("otel.name", "invoke_agent assistant"),
        ("otel.kind", "internal"),
        ("gen_ai.provider.name", "_OTHER"),
        ("gen_ai.operation.name", "invoke_agent"),
        ("gen_ai.agent.name", "assistant"),
        ("gen_ai.agent.id", agent.id()),
        ("gen_ai.usage.input_tokens", "30"),
        ("gen_ai.usage.output_tokens", "8"),
        ("agentscope.call.id", call_id),
    ]);
    assert_eq!(call.fields, expected);

    for (index, (input, output, finish)) in [
        (1, ("10", "5", r#"["tool_calls"]"#)),
        (3, ("20", "3", r#"["stop"]"#)),
    ] {
        let chat = &spans[index];
        assert_eq!(chat.parent, Some(0), "chat spans are children of the call");
        let expected = fields([
            ("otel.name", "chat scripted-model"),
            ("otel.kind", "client"),
            ("gen_ai.provider.name", "_OTHER"),
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.request.model", "scripted-model"),
            ("gen_ai.request.temperature", "0.5"),
            ("gen_ai.request.max_tokens", "256"),
            ("gen_ai.usage.input_tokens", input),
            ("gen_ai.usage.output_tokens", output),
            ("gen_ai.response.finish_reasons", finish),
        ]);
        assert_eq!(chat.fields, expected);
    }

    let tool = &spans[2];
    assert_eq!(tool.parent, Some(0), "tool spans are children of the call");
    let expected = fields([
        ("otel.name", "execute_tool calculator"),
        ("otel.kind", "internal"),
        (
            "gen_ai.tool.description",
            "Evaluates an arithmetic expression with + - * / % ^ and parentheses.",
        ),
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", "calculator"),
        ("gen_ai.tool.call.id", "c1"),
        ("gen_ai.tool.type", "function"),
    ]);
    assert_eq!(tool.fields, expected);
}

#[test]
fn a_failing_model_call_records_error_type_on_chat_and_call_spans() {
    let capture = Capture::default();
    let hook = TracingHook::new();
    let agent = agent_with(
        ScriptedModel::new([ScriptedResponse::error("model overloaded")]),
        &hook,
    );

    let err = traced(&capture, agent.call("hi")).unwrap_err();
    assert_eq!(err.to_string(), "model error: model overloaded");

    let spans = capture.spans();
    assert_eq!(names(&spans), ["invoke_agent", "chat"]);
    assert!(spans.iter().all(|span| span.closed));
    assert_eq!(spans[1].parent, Some(0));
    for span in &spans {
        assert_eq!(span.field("error.type"), Some("model_error"), "{span:?}");
        assert_eq!(span.field("otel.status_code"), Some("ERROR"));
        assert_eq!(
            span.field("otel.status_description"),
            Some("model error: model overloaded")
        );
    }
}

#[test]
fn a_failing_pre_acting_hook_marks_the_call_and_opens_no_tool_span() {
    // The guard runs after the tracing hook at PreActing: the tool never starts, so it has
    // no span (a span opens when its tool starts).
    let capture = Capture::default();
    let hook = TracingHook::new();
    let model = ScriptedModel::new([ScriptedResponse::tool_call(
        "c1",
        "calculator",
        json!({"expression": "1+1"}),
    )]);
    let agent = ReActAgent::builder()
        .model(model)
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .hook(hook.clone())
        .hook(guard("no tools today", HookEventType::PreActing))
        .build()
        .unwrap();

    let err = traced(&capture, agent.call("hi")).unwrap_err();
    assert!(matches!(err, AgentError::Hook { .. }), "{err}");

    let spans = capture.spans();
    assert_eq!(names(&spans), ["invoke_agent", "chat"]);
    assert!(spans.iter().all(|span| span.closed));
    // The chat step finished normally; the call failed.
    assert_eq!(spans[1].field("error.type"), None);
    assert_eq!(spans[0].field("error.type"), Some("hook_error"));
    assert_eq!(
        spans[0].field("otel.status_description"),
        Some(err.to_string().as_str())
    );
}

#[test]
fn hook_failures_after_a_span_closed_do_not_reopen_it() {
    // PostActing: the tracing hook (priority 0) closes the tool span before the guard fails,
    // so the tool span shows success and the call span the failure.
    let capture = Capture::default();
    let hook = TracingHook::new();
    let agent = agent_with(
        ScriptedModel::new([ScriptedResponse::tool_call(
            "c1",
            "calculator",
            json!({"expression": "1+1"}),
        )]),
        &hook,
    );
    agent.add_hook(guard("rejected", HookEventType::PostActing));
    traced(&capture, agent.call("hi")).unwrap_err();
    let spans = capture.spans();
    assert_eq!(names(&spans), ["invoke_agent", "chat", "execute_tool"]);
    assert_eq!(spans[2].field("error.type"), None);
    assert_eq!(spans[0].field("error.type"), Some("hook_error"));

    // PostCall: the call span closed as a success before the guard failed, and the engine
    // does not send Error to hooks that saw PostCall.
    let capture = Capture::default();
    let agent = agent_with(ScriptedModel::new([ScriptedResponse::text("hi")]), &hook);
    agent.add_hook(guard("rejected", HookEventType::PostCall));
    traced(&capture, agent.call("hi")).unwrap_err();
    let spans = capture.spans();
    assert_eq!(names(&spans), ["invoke_agent", "chat"]);
    assert!(
        spans
            .iter()
            .all(|span| span.closed && span.field("error.type").is_none())
    );
}

#[test]
fn a_tool_error_result_marks_only_its_tool_span() {
    let capture = Capture::default();
    let hook = TracingHook::new().with_content(true);
    let agent = agent_with(
        ScriptedModel::new([
            ScriptedResponse::tool_calls([
                ("c1", "fail", json!({"message": "disk full"})),
                ("c2", "calculator", json!({"expression": "2*3"})),
            ]),
            ScriptedResponse::text("sorry"),
        ]),
        &hook,
    );

    traced(&capture, agent.call("hi")).unwrap();

    let spans = capture.spans();
    assert_eq!(
        names(&spans),
        [
            "invoke_agent",
            "chat",
            "execute_tool",
            "execute_tool",
            "chat"
        ]
    );
    let (failed, ok) = (&spans[2], &spans[3]);
    assert_eq!(failed.field("gen_ai.tool.call.id"), Some("c1"));
    assert_eq!(failed.field("error.type"), Some("tool_error"));
    assert_eq!(
        failed.field("otel.status_description"),
        Some("Error: Tool execution failed: disk full")
    );
    assert_eq!(
        failed.field("gen_ai.tool.call.arguments"),
        Some(r#"{"message":"disk full"}"#)
    );
    assert_eq!(ok.field("gen_ai.tool.call.id"), Some("c2"));
    assert_eq!(ok.field("error.type"), None);
    assert_eq!(
        ok.field("gen_ai.tool.call.arguments"),
        Some(r#"{"expression":"2*3"}"#)
    );
    assert_eq!(ok.field("gen_ai.tool.call.result"), Some("6"));
    assert_eq!(spans[0].field("error.type"), None, "the call succeeded");
}

#[test]
fn content_is_not_recorded_by_default() {
    let capture = Capture::default();
    let hook = TracingHook::new();
    let agent = agent_with(calculates("2*3", "6"), &hook);
    traced(&capture, agent.call("hi")).unwrap();
    let tool = &capture.spans()[2];
    assert_eq!(tool.field("gen_ai.tool.call.arguments"), None);
    assert_eq!(tool.field("gen_ai.tool.call.result"), None);
}

#[test]
fn the_call_span_nests_under_the_callers_span() {
    let capture = Capture::default();
    let hook = TracingHook::new();
    let agent = agent_with(ScriptedModel::new([ScriptedResponse::text("hi")]), &hook);

    tracing::subscriber::with_default(capture.subscriber(), || {
        let request = info_span!("http_request");
        let _entered = request.enter();
        block_on(agent.call("hello")).unwrap();
    });

    let spans = capture.spans();
    assert_eq!(names(&spans), ["http_request", "invoke_agent", "chat"]);
    assert_eq!(spans[1].parent, Some(0));
    assert_eq!(spans[2].parent, Some(1));
}

#[test]
fn the_summary_gets_a_chat_span_too() {
    let capture = Capture::default();
    let hook = TracingHook::new();
    let agent = ReActAgent::builder()
        .model(
            ScriptedModel::new([
                ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "1+1"})),
                ScriptedResponse::text("summary").with_usage(7, 2),
            ])
            .with_name("m1"),
        )
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .max_iters(1)
        .hook(hook.clone())
        .build()
        .unwrap();

    let reply = traced(&capture, agent.call("hi")).unwrap();
    assert_eq!(reply.generate_reason(), Some(GenerateReason::MaxIterations));

    let spans = capture.spans();
    assert_eq!(
        names(&spans),
        ["invoke_agent", "chat", "execute_tool", "chat"]
    );
    assert!(spans.iter().all(|span| span.closed));
    let summary = &spans[3];
    assert_eq!(summary.parent, Some(0));
    assert_eq!(summary.field("otel.name"), Some("chat m1"));
    assert_eq!(summary.field("gen_ai.usage.input_tokens"), Some("7"));
    assert_eq!(summary.field("error.type"), None);
}

#[test]
fn concurrent_agents_sharing_one_hook_keep_their_own_spans() {
    let capture = Capture::default();
    let hook = TracingHook::new();
    let make = |name: &str, id: &str| {
        ReActAgent::builder()
            .name(name)
            .id(id)
            .model(ScriptedModel::new([
                ScriptedResponse::tool_call(
                    format!("{name}-call"),
                    "calculator",
                    json!({"expression": "1+1"}),
                )
                .with_delay(Duration::from_millis(5)),
                ScriptedResponse::text("done").with_delay(Duration::from_millis(5)),
            ]))
            .toolkit(Toolkit::new().tool(Calculator::new()))
            .hook(hook.clone())
            .build()
            .unwrap()
    };
    let (a, b) = (make("alpha", "id-a"), make("beta", "id-b"));

    let _default = tracing::subscriber::set_default(capture.subscriber());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let (ra, rb) = runtime.block_on(async { futures::join!(a.call("go"), b.call("go")) });
    assert_eq!(
        (ra.unwrap().text(), rb.unwrap().text()),
        ("done".into(), "done".into())
    );

    let spans = capture.spans();
    assert_eq!(spans.len(), 8);
    assert!(spans.iter().all(|span| span.closed));
    for (agent, id) in [("alpha", "id-a"), ("beta", "id-b")] {
        let root = spans
            .iter()
            .position(|span| {
                span.name == "invoke_agent" && span.field("gen_ai.agent.id") == Some(id)
            })
            .unwrap();
        let children: Vec<&SpanRecord> = spans
            .iter()
            .filter(|span| span.parent == Some(root))
            .collect();
        let kinds: Vec<&str> = children.iter().map(|span| span.name).collect();
        assert_eq!(kinds, ["chat", "execute_tool", "chat"], "{agent}");
        assert_eq!(
            children[1].field("gen_ai.tool.call.id"),
            Some(format!("{agent}-call").as_str())
        );
    }
}

/// A model whose response never starts.
struct Stuck;

impl Model for Stuck {
    fn model_name(&self) -> &str {
        "stuck"
    }

    async fn stream(&self, _request: ModelRequest) -> Result<ChatStream, ModelError> {
        futures::future::pending().await
    }
}

/// A model that never answers until it is told to, then answers "ok".
fn stuck_then_ok() -> (Arc<Mutex<bool>>, impl Model) {
    struct Switch(Arc<Mutex<bool>>);
    impl Model for Switch {
        fn model_name(&self) -> &str {
            "switch"
        }

        async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
            if *self.0.lock().unwrap() {
                ScriptedModel::new([ScriptedResponse::text("ok")])
                    .stream(request)
                    .await
            } else {
                futures::future::pending().await
            }
        }
    }
    let open = Arc::new(Mutex::new(false));
    (Arc::clone(&open), Switch(open))
}

#[test]
fn a_dropped_call_closes_its_spans_as_cancelled_at_once() {
    let capture = Capture::default();
    let hook = TracingHook::new();
    let (answer, model) = stuck_then_ok();
    let agent = ReActAgent::builder()
        .model(model)
        .hook(hook.clone())
        .build()
        .unwrap();

    tracing::subscriber::with_default(capture.subscriber(), || {
        // Polled once (PreCall, PreReasoning, then the model never answers) and dropped:
        // the spans live in the call's extensions, which go with the call.
        assert!(agent.call("first").now_or_never().is_none());
        let spans = capture.spans();
        assert_eq!(names(&spans), ["invoke_agent", "chat"]);
        assert!(spans.iter().all(|span| span.closed), "{spans:#?}");
        for stale in &spans {
            assert_eq!(stale.field("error.type"), Some("cancelled"));
        }

        *answer.lock().unwrap() = true;
        assert_eq!(block_on(agent.call("second")).unwrap().text(), "ok");
    });

    let spans = capture.spans();
    assert_eq!(
        names(&spans),
        ["invoke_agent", "chat", "invoke_agent", "chat"]
    );
    assert!(spans.iter().all(|span| span.closed));
    for fresh in &spans[2..] {
        assert_eq!(fresh.field("error.type"), None);
    }
}

#[test]
fn dropped_calls_of_many_agents_leave_no_span_open() {
    let capture = Capture::default();
    let hook = TracingHook::new();
    let agents: Vec<ReActAgent> = (0..3)
        .map(|i| {
            ReActAgent::builder()
                .id(format!("agent-{i}"))
                .model(Stuck)
                .hook(hook.clone())
                .build()
                .unwrap()
        })
        .collect();

    tracing::subscriber::with_default(capture.subscriber(), || {
        for agent in &agents {
            assert!(agent.call("hi").now_or_never().is_none());
        }
    });

    let spans = capture.spans();
    assert_eq!(spans.len(), 6);
    let cancelled = spans
        .iter()
        .filter(|span| span.closed)
        .map(|span| span.field("error.type"))
        .collect::<Vec<_>>();
    assert_eq!(cancelled, [Some("cancelled"); 6]);
}

#[test]
fn concurrent_calls_on_one_agent_keep_their_own_spans() {
    // With the busy check off, two calls run on one agent at once: each call's spans are its
    // own (they live in the call's extensions), so neither closes or marks the other's.
    let capture = Capture::default();
    let hook = TracingHook::new();
    let model = ScriptedModel::new([
        ScriptedResponse::error("boom").with_delay(Duration::from_millis(5)),
        ScriptedResponse::text("hi"),
    ]);
    let agent = ReActAgent::builder()
        .id("shared")
        .model(model)
        .check_running(false)
        .hook(hook.clone())
        .build()
        .unwrap();

    let _default = tracing::subscriber::set_default(capture.subscriber());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    // The first call waits on its model; the second runs to the end in its first poll.
    let (slow, fast) = runtime.block_on(async { futures::join!(agent.call("a"), agent.call("b")) });
    let err = slow.unwrap_err();
    assert_eq!(fast.unwrap().text(), "hi");

    let spans = capture.spans();
    assert_eq!(
        names(&spans),
        ["invoke_agent", "chat", "invoke_agent", "chat"]
    );
    assert!(spans.iter().all(|span| span.closed));
    let ids: Vec<&str> = [&spans[0], &spans[2]]
        .iter()
        .map(|span| span.field("agentscope.call.id").unwrap())
        .collect();
    assert_ne!(ids[0], ids[1], "each call has its own id");
    // The slow call failed: its call and chat spans say so; the fast call's spans don't.
    assert_eq!(spans[1].parent, Some(0));
    assert_eq!(spans[3].parent, Some(2));
    for span in &spans[..2] {
        assert_eq!(span.field("error.type"), Some("model_error"), "{span:?}");
        assert_eq!(
            span.field("otel.status_description"),
            Some(err.to_string().as_str())
        );
    }
    for span in &spans[2..] {
        assert_eq!(span.field("error.type"), None, "{span:?}");
    }
    assert!(capture.events().is_empty(), "{:#?}", capture.events());
}

#[test]
fn a_resumed_call_names_the_call_it_resumes() {
    let capture = Capture::default();
    let hook = TracingHook::new();
    let model = calculates("1+1", "2");
    let agent = agent_with(model, &hook);
    let stopper = agent.add_hook(stop_after_first_reasoning());

    let stopped = traced(&capture, agent.call("1+1?")).unwrap();
    assert_eq!(
        stopped.generate_reason(),
        Some(GenerateReason::ReasoningStopRequested)
    );
    agent.remove_hook(stopper);
    assert_eq!(traced(&capture, agent.call(())).unwrap().text(), "2");

    let spans = capture.spans();
    let calls: Vec<&SpanRecord> = spans.iter().filter(|s| s.name == "invoke_agent").collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].field("agentscope.call.resumed_from"), None);
    assert_eq!(
        calls[1].field("agentscope.call.resumed_from"),
        calls[0].field("agentscope.call.id"),
        "the resume links to the call that stopped"
    );
}

#[test]
fn a_call_interrupted_before_its_tool_starts_has_no_tool_span() {
    let capture = Capture::default();
    let hook = TracingHook::new();
    let agent = ReActAgent::builder()
        .model(ScriptedModel::new([ScriptedResponse::tool_call(
            "c1",
            "calculator",
            json!({"expression": "1+1"}),
        )]))
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .hook(hook.clone())
        .build()
        .unwrap();
    // Interrupts from PreActing: the tool never runs and no PostActing fires.
    let handle = agent.clone();
    agent.add_hook(
        hook_fn(move |_| {
            handle.interrupt();
            Ok(())
        })
        .with_interests(HookEventType::PreActing),
    );

    let reply = traced(&capture, agent.call("hi")).unwrap();
    assert_eq!(reply.generate_reason(), Some(GenerateReason::Interrupted));

    let spans = capture.spans();
    assert_eq!(names(&spans), ["invoke_agent", "chat"]);
    assert!(spans.iter().all(|span| span.closed));
    assert_eq!(
        spans[0].field("error.type"),
        None,
        "the call itself completed"
    );
}

#[test]
fn the_hook_is_listed_with_its_priority_and_interests() {
    let agent = ReActAgent::builder()
        .model(ScriptedModel::new([]))
        .hook(TracingHook::new())
        .build()
        .unwrap();
    let order = agent.hook_order();
    let entry = order.iter().find(|h| h.name == "tracing").unwrap();
    assert_eq!(entry.priority, TracingHook::PRIORITY);
    assert_eq!(TracingHook::PRIORITY, 0);
    assert!(!entry.interests.contains(HookEventType::ReasoningChunk));
    assert!(entry.interests.contains(HookEventType::Error));
    assert!(entry.interests.contains(HookEventType::PreSummary));
}

#[test]
fn without_a_subscriber_calls_work_and_leave_nothing_behind() {
    let hook = TracingHook::new();
    let agent = agent_with(calculates("2+2", "4"), &hook);
    assert_eq!(block_on(agent.call("2+2?")).unwrap().text(), "4");
    // The hook keeps no state of its own: a clone registered elsewhere sees nothing of it.
    assert_eq!(format!("{hook:?}"), "TracingHook { record_content: false }");
}

// ---------------------------------------------------------------------------------------
// Calls in doubt resolved: one span event per call.

/// An agent with the `pay` tool on session "s" of a new JSON file store in `dir`, where a
/// crash left the `pay` calls `ids` of one assistant message in doubt (recorded as running,
/// no result).
fn with_calls_in_doubt(dir: &std::path::Path, ids: &[&str], policy: InDoubt) -> ReActAgent {
    let calls: Vec<ContentBlock> = ids
        .iter()
        .map(|id| ToolUseBlock::new(*id, "pay", json!({})).into())
        .collect();
    let mut state = AgentState::new(
        AgentIdentity::new("assistant", "a1"),
        vec![
            Msg::user("Pay them all."),
            Msg::new(Role::Assistant, "assistant", calls),
        ],
    );
    state.running_tools = ids.iter().map(|id| (*id).to_owned()).collect();
    let pay = tool_fn(
        "pay",
        "Pays.",
        json!({"type": "object"}),
        |_input, _ctx| async { Ok("paid") },
    )
    .in_doubt(policy);
    ReActAgent::builder()
        .name("assistant")
        .model(ScriptedModel::new([ScriptedResponse::text("Done.")]))
        .toolkit(Toolkit::new().tool(pay))
        .hook(TracingHook::new())
        .session(JsonFileSessionStore::new(dir), "s")
        .state(state)
        .build()
        .unwrap()
}

/// The `agentscope.in_doubt.resolved` events of a capture.
fn resolved_events(capture: &Capture) -> Vec<BTreeMap<String, String>> {
    capture
        .events()
        .into_iter()
        .filter(|event| {
            event.get("message").map(String::as_str) == Some("agentscope.in_doubt.resolved")
        })
        .collect()
}

/// The fields of the event for `pay` call `id` resolved with `action`.
fn resolved(id: &str, action: &str) -> BTreeMap<String, String> {
    fields([
        ("message", "agentscope.in_doubt.resolved"),
        ("parent", "invoke_agent"),
        ("gen_ai.tool.name", "pay"),
        ("gen_ai.tool.call.id", id),
        ("agentscope.in_doubt.action", action),
    ])
}

/// A call resolving four calls in doubt with `CallInput::resolve`, one per action, records
/// one event per call on its call span, in call order, naming the call, its tool and the
/// action; the next call, which resolves nothing, records none.
#[test]
fn each_call_in_doubt_a_call_resolves_is_a_span_event_with_its_action() {
    let dir = tempfile::tempdir().unwrap();
    let ids = ["p1", "p2", "p3", "p4"];
    let agent = with_calls_in_doubt(dir.path(), &ids, InDoubt::Stop);
    let call = |id: &str| ToolUseBlock::new(id, "pay", json!({}));
    let input = CallInput::default()
        .resolve(&call("p1"), InDoubtResolution::Done("receipt 42".into()))
        .resolve(&call("p2"), InDoubtResolution::Retry)
        .resolve(
            &call("p3"),
            InDoubtResolution::Failed(Some("declined".into())),
        )
        .resolve(&call("p4"), InDoubtResolution::Dismissed);
    let capture = Capture::default();
    let reply = traced(&capture, agent.call(input)).unwrap();
    assert_eq!(reply.text(), "Done.");
    assert_eq!(
        resolved_events(&capture),
        [
            resolved("p1", "done"),
            resolved("p2", "retry"),
            resolved("p3", "fail"),
            resolved("p4", "dismissed"),
        ]
    );

    let capture = Capture::default();
    let model = ScriptedModel::new([ScriptedResponse::text("Hi.")]);
    let next = ReActAgent::builder()
        .name("assistant")
        .model(model)
        .hook(TracingHook::new())
        .session(JsonFileSessionStore::new(dir.path()), "s")
        .build()
        .unwrap();
    traced(&capture, next.call("Thanks.")).unwrap();
    assert_eq!(resolved_events(&capture), []);
}

/// `CallInput::retry` alone is a `retry`; a tool result the application gives without
/// `resolve` is a `result`; new input that moves on past a call in doubt is `moved_on`; a
/// resume that resolves nothing (the calls stop in doubt again) records no event.
#[test]
fn retries_other_results_and_input_that_moves_on_are_resolutions_too() {
    let dir = tempfile::tempdir().unwrap();
    let agent = with_calls_in_doubt(dir.path(), &["p1", "p2"], InDoubt::Stop);
    let capture = Capture::default();
    let reply = traced(&capture, agent.call(())).unwrap();
    assert_eq!(reply.generate_reason(), Some(GenerateReason::ToolInDoubt));
    assert_eq!(resolved_events(&capture), []);

    let capture = Capture::default();
    let verified = Msg::tool_result(ToolResultBlock::text("p1", "pay", "paid, checked"));
    let input = CallInput::from(verified).retry(["p2"]);
    traced(&capture, agent.call(input)).unwrap();
    assert_eq!(
        resolved_events(&capture),
        [resolved("p1", "result"), resolved("p2", "retry")]
    );

    let dir = tempfile::tempdir().unwrap();
    let agent = with_calls_in_doubt(dir.path(), &["p1", "p2"], InDoubt::Stop);
    let capture = Capture::default();
    let verified = Msg::tool_result(ToolResultBlock::text("p1", "pay", "paid, checked"));
    let reply = traced(
        &capture,
        agent.call(vec![verified, Msg::user("Never mind the rest.")]),
    );
    assert_eq!(reply.unwrap().text(), "Done.");
    assert_eq!(
        resolved_events(&capture),
        [resolved("p1", "result"), resolved("p2", "moved_on")]
    );
}
