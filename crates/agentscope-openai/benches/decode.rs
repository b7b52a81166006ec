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
//! Subjects, each a whole pass over the input:
//!
//! - `floor`: `agentscope_http::sse::SseParser::feed` into one reused event vector, cleared
//!   after every piece: the project's SSE splitter at its cheapest (no body head kept, no
//!   decoding);
//! - `sse_body`: the same through `SseBody` (feed, `take_events`), as the decoder reads;
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

/// The tool call's arguments, in the fragments OpenAI sends them in.
const ARGUMENT_PIECES: &[&str] = &[
    "{\"", "location", "\":\"", "Paris", ",", " France", "\",\"", "unit", "\":\"", "c", "elsius",
    "\",\"", "days", "\":", "3", ",\"", "include", "_hourly", "\":", "false", ",\"", "lang",
    "\":\"en", "\"}",
];

const PREFIX: &str = r#"{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_06737a9306","choices":[{"index":0,"delta":"#;
const SUFFIX_OPEN: &str = r#","logprobs":null,"finish_reason":null}],"usage":null}"#;

/// The input: the body's bytes, its number of events, and the text and arguments it spells.
struct Input {
    body: Vec<u8>,
    events: usize,
    text: String,
    arguments: String,
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
        let token = TOKENS[(i * 7 + i / TOKENS.len()) % TOKENS.len()];
        text.push_str(token);
        body.push_str(&chunk(&format!("{{\"content\":{}}}", json!(token))));
        events += 1;
    }
    body.push_str(&chunk(
        r#"{"tool_calls":[{"index":0,"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"get_weather","arguments":""}}]}"#,
    ));
    events += 1;
    for piece in ARGUMENT_PIECES {
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
        json!({"input_tokens": 67, "output_tokens": 10026})
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
        "decode (openai): {} events ({} bytes) in {} pieces of 1-4 KiB; the decoder yields {} \
         chunks; {rounds} rounds, medians",
        input.events,
        input.body.len(),
        pieces.len(),
        chunks
    );
    for ((name, _), rates) in subjects.iter().zip(rates) {
        println!("openai {name:<8} {:>6.2} M chunks/s", median(rates) / 1e6);
    }
    println!(
        "openai decoder/floor {:.2}x (target: at least 0.50x)",
        median(ratios)
    );
}
