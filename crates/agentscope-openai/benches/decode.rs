//! `decode`: how fast the streaming decoder turns a chat-completions event stream into
//! [`ChatResponse`](agentscope_core::ChatResponse) chunks, against a floor that only splits
//! the same bytes into server-sent events, in the same run.
//!
//! The input is a streamed answer as OpenAI sends it: a first chunk with the role, 10,000
//! content deltas (tokens of one to a dozen bytes, a few with escapes or non-ASCII text),
//! then one tool call in 24 argument fragments, the `finish_reason` chunk, the usage chunk
//! and `data: [DONE]`; every chunk in the recorded shape (`id`, `object`, `created`,
//! `model`, `system_fingerprint`, `choices[{index, delta, logprobs, finish_reason}]`,
//! `usage`). It is fed in pieces of 1 to 4 KiB (a fixed pseudo-random sequence), as reads
//! from a socket come.
//!
//! Subjects, each a whole pass over the input (the harness: `agentscope_http::testing::bench`):
//!
//! - `floor`: `agentscope_http::sse::SseParser::feed` into one reused event vector, cleared
//!   after every piece: the project's SSE splitter at its cheapest (no body head kept, no
//!   decoding);
//! - `sse_body`: the same through `SseBody` (feed, `take_events`, `recycle`), as the
//!   decoder reads;
//! - `decoder`: the client's decoder (`Decode::feed` per piece, then `finish`): bytes to the
//!   chunks the model's stream yields.
//!
//! Chunks per second count the stream's events (one per `data:` chunk, `[DONE]` included)
//! for every subject, so the figures divide alike. Rounds alternate the subjects; a subject's
//! figure is the median over rounds, and the ratio is the median of the per-round ratios.
//! Target (issue 36): decoder at least 0.5x the floor.
//!
//! The decoder is private to the crate; the bench compiles its source (`src/decode.rs` and
//! `src/response.rs`) as modules of its own, so it measures the very code the client runs
//! (cargo builds benches with `cfg(test)`: the unit tests' helpers compile, unused).
//!
//! Run: `cargo bench -p agentscope-openai --bench decode` (`-- --quick`: fewer rounds).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[path = "../src/decode.rs"]
#[allow(dead_code, unused_imports)]
mod decode;
#[path = "../src/response.rs"]
#[allow(dead_code, unused_imports)]
mod response;

use agentscope_http::testing::bench;
use serde_json::json;

const CONTENT_DELTAS: usize = 10_000;

const PREFIX: &str = r#"{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_06737a9306","choices":[{"index":0,"delta":"#;
const SUFFIX_OPEN: &str = r#","logprobs":null,"finish_reason":null}],"usage":null}"#;

/// The input: the body's bytes, its number of events, and the text it spells.
struct Input {
    body: Vec<u8>,
    events: usize,
    text: String,
}

fn chunk(delta: &str) -> String {
    format!("data: {PREFIX}{delta}{SUFFIX_OPEN}\n\n")
}

fn input() -> Input {
    let mut body = String::new();
    let mut events = 0;
    let mut text = String::new();
    body.push_str(&chunk(
        r#"{"role":"assistant","content":"","refusal":null}"#,
    ));
    events += 1;
    for i in 0..CONTENT_DELTAS {
        let token = bench::token(i);
        text.push_str(token);
        body.push_str(&chunk(&format!("{{\"content\":{}}}", json!(token))));
        events += 1;
    }
    body.push_str(&chunk(
        r#"{"tool_calls":[{"index":0,"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"get_weather","arguments":""}}]}"#,
    ));
    events += 1;
    for piece in bench::ARGUMENT_PIECES {
        body.push_str(&chunk(&format!(
            "{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":{}}}}}]}}",
            json!(piece)
        )));
        events += 1;
    }
    body.push_str(&format!(
        "data: {PREFIX}{{}},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}}],\"usage\":null}}\n\n"
    ));
    body.push_str(
        "data: {\"id\":\"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT\",\"object\":\"chat.completion.chunk\",\"created\":1741569952,\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_06737a9306\",\"choices\":[],\"usage\":{\"prompt_tokens\":67,\"completion_tokens\":10026,\"total_tokens\":10093,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n",
    );
    body.push_str("data: [DONE]\n\n");
    events += 3;
    Input {
        body: body.into_bytes(),
        events,
        text,
    }
}

fn main() {
    let input = input();
    let chunks = bench::run::<decode::Decoder>("openai", &input.body, input.events);

    // What the decoder read is the whole answer.
    bench::assert_answer(
        &chunks,
        &input.text,
        &json!({"input_tokens": 67, "output_tokens": 10026}),
    );
}
