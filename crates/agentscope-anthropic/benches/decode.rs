//! `decode`: how fast the streaming decoder turns a Messages API event stream into
//! [`ChatResponse`](agentscope_core::ChatResponse) chunks, against a floor that only splits
//! the same bytes into server-sent events, in the same run.
//!
//! The input is a streamed answer as Anthropic sends it: `message_start`, a text block of
//! 10,000 `text_delta`s (tokens of one to a dozen bytes, a few with escapes or non-ASCII
//! text) with a `ping` every 1,000, then a `tool_use` block in 24 `input_json_delta`
//! fragments, `message_delta` and `message_stop`; every event with its `event:` line, in the
//! shapes of Anthropic's streaming reference. It is fed in pieces of 1 to 4 KiB (a fixed
//! pseudo-random sequence), as reads from a socket come.
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
//! Chunks per second count the stream's events (every event, pings and block starts and
//! stops included) for every subject, so the figures divide alike. Rounds alternate the
//! subjects; a subject's figure is the median over rounds, and the ratio is the median of the
//! per-round ratios. Target (issue 36): decoder at least 0.5x the floor.
//!
//! The decoder is private to the crate; the bench compiles its source (`src/decode.rs` and
//! `src/response.rs`) as modules of its own, so it measures the very code the client runs
//! (cargo builds benches with `cfg(test)`: the unit tests' helpers compile, unused).
//!
//! Run: `cargo bench -p agentscope-anthropic --bench decode` (`-- --quick`: fewer rounds).
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

/// The input: the body's bytes, its number of events, and the text it spells.
struct Input {
    body: Vec<u8>,
    events: usize,
    text: String,
}

fn event(body: &mut String, name: &str, data: &str) {
    body.push_str(&format!("event: {name}\ndata: {data}\n\n"));
}

fn input() -> Input {
    let mut body = String::new();
    let mut text = String::new();
    event(
        &mut body,
        "message_start",
        r#"{"type":"message_start","message":{"id":"msg_01TextToolsAbCdEf","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":120,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}"#,
    );
    event(
        &mut body,
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    );
    let mut events = 2;
    for i in 0..CONTENT_DELTAS {
        if i % 1000 == 0 {
            event(&mut body, "ping", r#"{"type":"ping"}"#);
            events += 1;
        }
        let token = bench::token(i);
        text.push_str(token);
        event(
            &mut body,
            "content_block_delta",
            &format!(
                "{{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":{}}}}}",
                json!(token)
            ),
        );
        events += 1;
    }
    event(
        &mut body,
        "content_block_stop",
        r#"{"type":"content_block_stop","index":0}"#,
    );
    event(
        &mut body,
        "content_block_start",
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{}}}"#,
    );
    events += 2;
    for piece in bench::ARGUMENT_PIECES {
        event(
            &mut body,
            "content_block_delta",
            &format!(
                "{{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":{}}}}}",
                json!(piece)
            ),
        );
        events += 1;
    }
    event(
        &mut body,
        "content_block_stop",
        r#"{"type":"content_block_stop","index":1}"#,
    );
    event(
        &mut body,
        "message_delta",
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":10026}}"#,
    );
    event(&mut body, "message_stop", r#"{"type":"message_stop"}"#);
    events += 3;
    Input {
        body: body.into_bytes(),
        events,
        text,
    }
}

fn main() {
    let input = input();
    let chunks = bench::run::<decode::Decoder>("anthropic", &input.body, input.events);

    // What the decoder read is the whole answer.
    bench::assert_answer(
        &chunks,
        &input.text,
        &json!({"input_tokens": 120, "output_tokens": 10026}),
    );
}
