//! The harness of a client's `decode` bench: the same body through the SSE splitter alone
//! (the floor), through [`SseBody`] and through the client's decoder, in one run.

use std::hint::black_box;
use std::time::{Duration, Instant};

use agentscope_core::ChatResponse;
use agentscope_test::bench::median;

use crate::Decode;
use crate::sse::{SseBody, SseParser};

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

/// The `i`-th text token of a bench body: tokens as a model emits them (short words with
/// their leading space, punctuation, line breaks, quotes, non-ASCII text), in a fixed order.
pub fn token(i: usize) -> &'static str {
    TOKENS[(i * 7 + i / TOKENS.len()) % TOKENS.len()]
}

/// A tool call's arguments in the fragments a model streams them in; together, one JSON
/// object.
pub const ARGUMENT_PIECES: &[&str] = &[
    "{\"", "location", "\":\"", "Paris", ",", " France", "\",\"", "unit", "\":\"", "c", "elsius",
    "\",\"", "days", "\":", "3", ",\"", "include", "_hourly", "\":", "false", ",\"", "lang",
    "\":\"en", "\"}",
];

/// Checks that `chunks`, assembled, spell a bench body's whole answer: `text`, one
/// `get_weather` call whose arguments are [`ARGUMENT_PIECES`] joined, and `usage` as the
/// message's `usage` metadata.
///
/// # Panics
///
/// When they do not.
#[allow(clippy::panic)]
pub fn assert_answer(chunks: &[ChatResponse], text: &str, usage: &serde_json::Value) {
    let message = super::assemble(chunks);
    assert_eq!(message.text(), text);
    let calls = message.tool_uses();
    assert_eq!(calls.len(), 1);
    let arguments: serde_json::Value = match serde_json::from_str(&ARGUMENT_PIECES.concat()) {
        Ok(arguments) => arguments,
        Err(error) => panic!("the bench's arguments are not JSON: {error}"),
    };
    assert_eq!(
        (calls[0].name.as_str(), &*calls[0].input),
        ("get_weather", &arguments)
    );
    assert_eq!(&message.metadata["usage"], usage);
}

/// `body` cut into pieces of 1 to 4 KiB, the same sequence every run, as reads from a
/// socket come.
pub fn pieces(body: &[u8]) -> Vec<&[u8]> {
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

/// The floor: SSE events only, from the cheapest use of the splitter
/// ([`SseParser::feed`] into one reused vector). Returns the events.
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

/// The splitter as the decoders read it ([`SseBody`]: `take_events`, then `recycle`).
/// Returns the events.
fn sse_body(pieces: &[&[u8]]) -> usize {
    let mut body = SseBody::new();
    let mut events = 0;
    for piece in pieces {
        body.feed(piece);
        let mut taken = body.take_events();
        for event in taken.drain(..) {
            black_box(event);
            events += 1;
        }
        body.recycle(taken);
    }
    body.finish();
    events + body.take_events().len()
}

/// The client's decoder `D`. Returns the chunks it yields (an error counts as one).
fn decoder<D: Decode>(pieces: &[&[u8]]) -> usize {
    let mut decoder = D::default();
    let mut chunks = 0;
    for piece in pieces {
        for item in decoder.feed(piece) {
            black_box(item.is_ok());
            chunks += 1;
        }
    }
    for item in decoder.finish() {
        black_box(item.is_ok());
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
        .unwrap_or(u32::MAX)
        .max(1)
}

/// Runs a client's decode bench over `body`, `events` server-sent events fed in
/// [`pieces`]: the floor ([`SseParser::feed`] into one reused vector), [`SseBody`], and the
/// decoder `D` (`feed` per piece, then `finish`), alternated over rounds (7 with `--quick`
/// among the program's arguments, else 31), and prints each one's median chunks per second
/// (the body's events per second, so all divide alike) and the median of the per-round
/// ratios decoder/floor (target: at least 0.5x), each line led by `provider`. Returns the
/// chunks the decoder yields, for the bench's checks of what they spell.
///
/// # Panics
///
/// When the splitter does not find `events` events, or the decoder fails on the body.
#[allow(clippy::panic)]
pub fn run<D: Decode>(provider: &str, body: &[u8], events: usize) -> Vec<ChatResponse> {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let rounds = if quick { 7 } else { 31 };
    let pieces = pieces(body);
    assert_eq!(floor(&pieces), events, "the floor's events");
    assert_eq!(sse_body(&pieces), events, "SseBody's events");
    let (chunks, error) = super::decode::<D>(&pieces);
    if let Some(error) = error {
        panic!("the decoder failed on the body: {error}");
    }
    assert_eq!(decoder::<D>(&pieces), chunks.len());

    let subjects: [(&str, Subject); 3] = [
        ("floor", floor),
        ("sse_body", sse_body),
        ("decoder", decoder::<D>),
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
            rates[at].push(events as f64 / elapsed.as_secs_f64());
        }
        ratios.push(per_pass[0].as_secs_f64() / per_pass[2].as_secs_f64());
    }
    println!(
        "decode ({provider}): {events} events ({} bytes) in {} pieces of 1-4 KiB; the decoder \
         yields {} chunks; {rounds} rounds, medians",
        body.len(),
        pieces.len(),
        chunks.len()
    );
    for ((name, _), rates) in subjects.iter().zip(rates) {
        println!(
            "{provider} {name:<8} {:>6.2} M chunks/s",
            median(rates).unwrap_or(f64::NAN) / 1e6
        );
    }
    println!(
        "{provider} decoder/floor {:.2}x (target: at least 0.50x)",
        median(ratios).unwrap_or(f64::NAN)
    );
    chunks
}
