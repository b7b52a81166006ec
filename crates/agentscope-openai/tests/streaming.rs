//! Streamed responses from a local server: every scenario, split frames, usage, mid-stream
//! errors and stalls, non-streamed answers, connection reuse.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use agentscope_core::{ChatResponse, ChatUsage, ContentBlock, ModelError};
use serde_json::json;
use support::scenarios::{self, Scenario};
use support::{HttpReply, TestServer, builder, hello, run};

async fn check_scenario(scenario: &Scenario, reply: HttpReply) {
    let server = TestServer::start([reply]).await;
    let model = builder(&server).build().unwrap();
    let outcome = run(&model, hello()).await;
    let msg = outcome
        .result
        .unwrap_or_else(|err| panic!("{}: {err}", scenario.name));
    assert_eq!(msg.content, scenario.expected, "{}", scenario.name);
    assert_eq!(
        msg.metadata,
        scenario.expected_metadata(),
        "{}",
        scenario.name
    );
    let finish: Vec<&str> = outcome
        .chunks
        .iter()
        .filter_map(|c| c.finish_reason.as_deref())
        .collect();
    assert_eq!(finish, [scenario.finish_reason], "{}", scenario.name);
    // Every chunk carries the provider's response id.
    let first_id = &outcome.chunks[0].id;
    assert!(!first_id.is_empty());
    assert!(
        outcome.chunks.iter().all(|c| &c.id == first_id),
        "{}",
        scenario.name
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn every_scenario_assembles_the_expected_message() {
    for scenario in scenarios::all() {
        check_scenario(&scenario, HttpReply::sse(scenario.sse)).await;
    }
}

#[tokio::test]
async fn every_scenario_written_one_byte_at_a_time() {
    for scenario in scenarios::all() {
        check_scenario(&scenario, HttpReply::sse(scenario.sse).byte_by_byte()).await;
    }
}

#[tokio::test]
async fn every_scenario_with_crlf_line_endings_over_keep_alive() {
    for scenario in scenarios::all() {
        let crlf: &'static str = Box::leak(scenario.sse.replace('\n', "\r\n").into_boxed_str());
        check_scenario(&scenario, HttpReply::sse(crlf).keep_alive()).await;
    }
}

#[tokio::test]
async fn text_deltas_arrive_one_chunk_per_event_and_usage_comes_last_on_its_own() {
    let server = TestServer::start([HttpReply::sse(scenarios::text().sse)]).await;
    let model = builder(&server).build().unwrap();
    let outcome = run(&model, hello()).await;
    let id = "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT";
    let text = |t: &str| ChatResponse::new(vec![ContentBlock::text(t)]).with_id(id);
    assert_eq!(
        outcome.chunks,
        vec![
            text("Hello"),
            text("!"),
            text(" How can I"),
            text(" help you"),
            text(" today?"),
            ChatResponse::new(vec![])
                .with_id(id)
                .with_finish_reason("stop"),
            ChatResponse::new(vec![])
                .with_id(id)
                .with_usage(ChatUsage::new(19, 10))
                .with_model("gpt-4o-mini-2024-07-18"),
        ]
    );
}

#[tokio::test]
async fn the_first_tool_call_streams_before_the_response_ends() {
    // Paced: the fragments of the single call come out as separate chunks, live.
    let scenario = scenarios::tool_call();
    let events: Vec<String> = scenario
        .sse
        .split_inclusive("\n\n")
        .map(str::to_owned)
        .collect();
    let server =
        TestServer::start([HttpReply::sse_parts(events).paced(Duration::from_millis(2))]).await;
    let model = builder(&server).build().unwrap();
    let outcome = run(&model, hello()).await;
    let fragments: Vec<(&str, &str, &str)> = outcome
        .chunks
        .iter()
        .flat_map(|c| &c.content)
        .map(|block| match block {
            ContentBlock::ToolUse(t) => (
                t.id.as_str(),
                t.name.as_str(),
                t.raw_input.as_deref().unwrap(),
            ),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        fragments,
        [
            ("call_DdmO9pD3xa9XTPNJ32zg2hcA", "get_weather", ""),
            ("", "", "{\""),
            ("", "", "location"),
            ("", "", "\":\""),
            ("", "", "Paris"),
            ("", "", ","),
            ("", "", " France"),
            ("", "", "\"}"),
        ]
    );
}

const MID_STREAM_ERROR: &str = "\
data: {\"id\":\"chatcmpl-err\",\"object\":\"chat.completion.chunk\",\"created\":1741571000,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"The first\"},\"finish_reason\":null}]}

data: {\"id\":\"chatcmpl-err\",\"object\":\"chat.completion.chunk\",\"created\":1741571000,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" part\"},\"finish_reason\":null}]}

data: {\"error\":{\"message\":\"The server had an error while processing your request. Sorry about that!\",\"type\":\"server_error\",\"param\":null,\"code\":null}}

data: {\"id\":\"chatcmpl-err\",\"object\":\"chat.completion.chunk\",\"created\":1741571000,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" never seen\"},\"finish_reason\":null}]}

data: [DONE]

";

#[tokio::test]
async fn an_error_event_mid_stream_ends_the_stream_and_is_not_retried() {
    let server = TestServer::start([
        HttpReply::sse(MID_STREAM_ERROR),
        HttpReply::sse(scenarios::text().sse),
    ])
    .await;
    let model = builder(&server).max_retries(3).build().unwrap();
    let outcome = run(&model, hello()).await;
    let texts: Vec<&str> = outcome
        .chunks
        .iter()
        .flat_map(|c| &c.content)
        .filter_map(ContentBlock::as_text)
        .collect();
    assert_eq!(texts, ["The first", " part"]);
    match outcome.result {
        Err(ModelError::Stream { message }) => assert_eq!(
            message,
            "The server had an error while processing your request. Sorry about that!"
        ),
        other => panic!("expected a stream error, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stalled_stream_times_out_after_the_output_started() {
    let first =
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
    let server = TestServer::start([HttpReply::sse(first).then_hang()]).await;
    let model = builder(&server)
        .timeout(Duration::from_millis(200))
        .max_retries(2)
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let outcome = run(&model, hello()).await;
    assert_eq!(outcome.chunks.len(), 1);
    let err = outcome.result.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_connection_lost_mid_stream_is_a_connection_error() {
    // The server promises more bytes than it sends, then closes.
    let first =
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
    let server = TestServer::start([HttpReply::sse(first).header("Content-Length", "4096")]).await;
    let model = builder(&server).build().unwrap();
    let outcome = run(&model, hello()).await;
    assert_eq!(outcome.chunks.len(), 1);
    let err = outcome.result.unwrap_err();
    assert!(matches!(err, ModelError::Connection { .. }), "{err:?}");
}

#[tokio::test]
async fn an_unterminated_stream_without_done_still_delivers_everything() {
    let body = scenarios::text().sse.replace("data: [DONE]\n\n", "");
    let body = body.trim_end().to_owned(); // no final blank line either
    let server = TestServer::start([HttpReply::sse(&body)]).await;
    let model = builder(&server).build().unwrap();
    let msg = run(&model, hello()).await.result.unwrap();
    assert_eq!(msg.content, scenarios::text().expected);
    assert_eq!(msg.metadata, scenarios::text().expected_metadata());
}

#[tokio::test]
async fn a_non_streamed_json_completion_is_accepted() {
    let body = json!({
        "id": "chatcmpl-plain", "object": "chat.completion", "created": 1741571100,
        "model": "llama-3.1-8b-instruct",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Looking.",
            "tool_calls": [{"id": "call_p1", "type": "function",
                "function": {"name": "search", "arguments": "{\"q\":\"tokio\"}"}}]}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}
    });
    let server = TestServer::start([HttpReply::json(200, &body)]).await;
    let model = builder(&server).build().unwrap();
    let outcome = run(&model, hello()).await;
    let msg = outcome.result.unwrap();
    assert_eq!(
        msg.content,
        vec![
            ContentBlock::text("Looking."),
            agentscope_core::ToolUseBlock::new("call_p1", "search", json!({"q": "tokio"})).into(),
        ]
    );
    assert_eq!(
        msg.metadata["usage"],
        json!({"input_tokens": 12, "output_tokens": 9})
    );
}

#[tokio::test]
async fn garbage_in_the_stream_is_an_invalid_response() {
    let server = TestServer::start([HttpReply::sse("data: <html>Bad gateway</html>\n\n")]).await;
    let model = builder(&server).build().unwrap();
    let err = run(&model, hello()).await.result.unwrap_err();
    match err {
        ModelError::InvalidResponse { message } => {
            assert!(message.contains("<html>Bad gateway</html>"), "{message}");
        }
        other => panic!("expected InvalidResponse, got {other:?}"),
    }
}

#[tokio::test]
async fn connections_are_reused_between_calls() {
    let body = scenarios::text().sse;
    let server = TestServer::start([
        HttpReply::sse(body).keep_alive(),
        HttpReply::sse(body).keep_alive(),
        HttpReply::sse(body).keep_alive(),
    ])
    .await;
    let model = builder(&server).build().unwrap();
    for _ in 0..3 {
        let msg = run(&model.clone(), hello()).await.result.unwrap();
        assert_eq!(msg.content, scenarios::text().expected);
    }
    assert_eq!(server.requests().len(), 3);
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn dropping_the_stream_early_is_fine() {
    let server = TestServer::start([
        HttpReply::sse(scenarios::text().sse).then_hang(),
        HttpReply::sse(scenarios::text().sse),
    ])
    .await;
    let model = builder(&server).build().unwrap();
    {
        use agentscope_core::Model;
        use futures::StreamExt;
        let mut stream = model.stream(hello()).await.unwrap();
        let first = stream.next().await.unwrap().unwrap();
        assert_eq!(first.content, vec![ContentBlock::text("Hello")]);
    }
    let msg = run(&model, hello()).await.result.unwrap();
    assert_eq!(msg.text(), "Hello! How can I help you today?");
}

#[tokio::test]
async fn an_empty_response_is_sent_once_more_then_handed_on_as_it_is() {
    let empty = format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"id": "e", "choices": [{"index": 0, "delta": {"content": ""},
            "finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 0}})
    );
    let server = TestServer::start([
        HttpReply::sse(&empty),
        HttpReply::sse(&empty),
        HttpReply::sse(scenarios::text().sse),
    ])
    .await;
    let model = builder(&server).build().unwrap();
    let outcome = run(&model, hello()).await;
    let msg = outcome.result.unwrap();
    // Sent twice, not three times: the second empty response is the answer (the engine
    // reports it as an empty response).
    assert_eq!(server.requests().len(), 2);
    assert!(msg.content.is_empty());
    assert_eq!(msg.finish_reason(), Some("stop"));
    assert_eq!(
        msg.metadata["usage"],
        json!({"input_tokens": 5, "output_tokens": 0})
    );
}
