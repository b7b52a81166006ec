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
//! Subjects, each a whole pass over the input:
//!
//! - `floor`: `agentscope_http::sse::SseParser::feed` into one reused event vector, cleared
//!   after every piece: the project's SSE splitter at its cheapest (no body head kept, no
//!   decoding);
//! - `sse_body`: the same through `SseBody` (feed, `take_events`), as the decoder reads;
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

use std::hint::black_box;
use std::time::{Duration, Instant};

use agentscope_http::Decode;
use agentscope_http::sse::{SseBody, SseParser};
use agentscope_http::testing::assemble;
use serde_json::json;

const CONTENT_DELTAS: usize = 10_000;

/// Tokens as a model emits them: mostly short words with their leading space, now and
/// then punctuation, a line break, a quote or non-ASCII text (escaped or raw in JSON).
const TOKENS: &[&str] = &[
    " the",
    " model",
    " streams",
    " tokens",
    ",",
    " one",
    " at",
    " a",
    " time",
    ".",
    "\n\n",
    " Paris",
    " is",
    " the",
    " capital",
    " of",
    " France",
    " (",
    "\"",
    "quoted",
    "\"",
    ")",
    " café",
    " 東京",
    " and",
    " it",
    "'s",
    " about",
    " 2",
    ",1",
    "00",
    " km",
    " away",
    ":",
    "\n-",
    " item",
    " résumé",
    " naïve",
    " 🙂",
    " done",
];

/// The tool call's arguments, in the fragments Anthropic sends them in.
const ARGUMENT_PIECES: &[&str] = &[
    "{\"", "location", "\":\"", "Paris", ",", " France", "\",\"", "unit", "\":\"", "c", "elsius",
    "\",\"", "days", "\":", "3", ",\"", "include", "_hourly", "\":", "false", ",\"", "lang",
    "\":\"en", "\"}",
];

/// The input: the body's bytes, its number of events, and the text and arguments it spells.
struct Input {
    body: Vec<u8>,
    events: usize,
    text: String,
    arguments: String,
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
        let token = TOKENS[(i * 7 + i / TOKENS.len()) % TOKENS.len()];
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
    for piece in ARGUMENT_PIECES {
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
        arguments: ARGUMENT_PIECES.concat(),
    }
}

/// The body cut into pieces of 1 to 4 KiB, the same sequence every run.
fn pieces(body: &[u8]) -> Vec<&[u8]> {
    let mut rng = fastrand::Rng::with_seed(36);
    let mut pieces = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let take = rng.usize(1024..=4096).min(rest.len());
        let (piece, tail) = rest.split_at(take);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// The floor: SSE events only, from the cheapest use of the splitter. Returns the events.
fn floor(pieces: &[&[u8]]) -> usize {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    let mut events = 0;
    for piece in pieces {
        parser.feed(piece, &mut out);
        events += out.len();
        for event in out.drain(..) {
            black_box(event);
        }
    }
    parser.finish(&mut out);
    events + out.len()
}

/// The splitter as the decoders read it (`SseBody`). Returns the events.
fn sse_body(pieces: &[&[u8]]) -> usize {
    let mut body = SseBody::new();
    let mut events = 0;
    for piece in pieces {
        body.feed(piece);
        for event in body.take_events() {
            black_box(event);
            events += 1;
        }
    }
    body.finish();
    events + body.take_events().len()
}

/// The client's decoder. Returns the chunks it yields.
fn decoder(pieces: &[&[u8]]) -> usize {
    let mut decoder = decode::Decoder::default();
    let mut chunks = 0;
    for piece in pieces {
        for item in decoder.feed(piece) {
            black_box(item.unwrap());
            chunks += 1;
        }
    }
    for item in decoder.finish() {
        black_box(item.unwrap());
        chunks += 1;
    }
    chunks
}

/// A subject: a pass over the pieces, returning what it counted.
type Subject = fn(&[&[u8]]) -> usize;

/// Times `passes` passes of `subject`: the time per pass.
fn time(subject: Subject, pieces: &[&[u8]], passes: u32) -> Duration {
    let start = Instant::now();
    for _ in 0..passes {
        black_box(subject(black_box(pieces)));
    }
    start.elapsed() / passes
}

/// Passes per measurement so that one takes at least about 5 ms.
fn passes_for(subject: Subject, pieces: &[&[u8]]) -> u32 {
    let once = time(subject, pieces, 1).max(Duration::from_micros(1));
    u32::try_from(Duration::from_millis(5).as_nanos() / once.as_nanos())
        .unwrap()
        .max(1)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let rounds = if quick { 7 } else { 31 };
    let input = input();
    let pieces = pieces(&input.body);

    // The subjects read the input whole and alike.
    assert_eq!(floor(&pieces), input.events);
    assert_eq!(sse_body(&pieces), input.events);
    let mut decoder_chunks = Vec::new();
    let mut dec = decode::Decoder::default();
    for piece in &pieces {
        decoder_chunks.extend(dec.feed(piece).into_iter().map(Result::unwrap));
    }
    decoder_chunks.extend(dec.finish().into_iter().map(Result::unwrap));
    let message = assemble(&decoder_chunks);
    assert_eq!(message.text(), input.text);
    let calls = message.tool_uses();
    assert_eq!(calls.len(), 1);
    let arguments: serde_json::Value = serde_json::from_str(&input.arguments).unwrap();
    assert_eq!(
        (calls[0].name.as_str(), &*calls[0].input),
        ("get_weather", &arguments)
    );
    assert_eq!(
        message.metadata["usage"],
        json!({"input_tokens": 120, "output_tokens": 10026})
    );
    let chunks = decoder(&pieces);
    assert_eq!(chunks, decoder_chunks.len());

    let subjects: [(&str, Subject); 3] = [
        ("floor", floor),
        ("sse_body", sse_body),
        ("decoder", decoder),
    ];
    let passes: Vec<u32> = subjects
        .iter()
        .map(|(_, subject)| passes_for(*subject, &pieces))
        .collect();
    let mut rates = vec![Vec::new(); subjects.len()];
    let mut ratios = Vec::new();
    for round in 0..rounds {
        let mut per_pass = [Duration::ZERO; 3];
        for k in 0..subjects.len() {
            // Alternate the order, so no subject always runs first.
            let at = if round % 2 == 0 {
                k
            } else {
                subjects.len() - 1 - k
            };
            per_pass[at] = time(subjects[at].1, &pieces, passes[at]);
        }
        for (at, elapsed) in per_pass.iter().enumerate() {
            rates[at].push(input.events as f64 / elapsed.as_secs_f64());
        }
        ratios.push(per_pass[0].as_secs_f64() / per_pass[2].as_secs_f64());
    }
    println!(
        "decode (anthropic): {} events ({} bytes) in {} pieces of 1-4 KiB; the decoder yields {} \
         chunks; {rounds} rounds, medians",
        input.events,
        input.body.len(),
        pieces.len(),
        chunks
    );
    for ((name, _), rates) in subjects.iter().zip(rates) {
        println!(
            "anthropic {name:<8} {:>6.2} M chunks/s",
            median(rates) / 1e6
        );
    }
    println!(
        "anthropic decoder/floor {:.2}x (target: at least 0.50x)",
        median(ratios)
    );
}
