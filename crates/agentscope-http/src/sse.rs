//! A server-sent-events parser that accepts bytes in arbitrary pieces.
//!
//! It follows the WHATWG event-stream rules that matter for chat completions: lines end with
//! `\n`, `\r\n` or `\r` (a `\r\n` may be split across two reads); a blank line dispatches the
//! event; several `data:` lines are joined with `\n`; lines starting with `:` are comments
//! (keep-alives); one space after the colon is dropped; a leading byte-order mark is ignored.
//! Unlike a browser it also dispatches an unterminated last event at end of input, because
//! some servers close the stream without the final blank line.
//!
//! [`SseBody`] reads a response body through the parser and keeps the body's first bytes,
//! to say what answered when it was not an event stream; [`cut_off`] is the error for a
//! stream that ended before the protocol's end of the response.

use agentscope_core::ModelError;

use crate::lenient::snippet;

/// One dispatched event.
///
/// ```
/// use agentscope_http::sse::{SseEvent, SseParser};
///
/// let mut parser = SseParser::new();
/// let mut events = Vec::new();
/// parser.feed(b": keep-alive\ndata: {\"a\"", &mut events);
/// parser.feed(b":1}\n\nevent: ping\ndata: x\n\n", &mut events);
/// assert_eq!(events[0].data, "{\"a\":1}");
/// assert_eq!(events[1].event.as_deref(), Some("ping"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SseEvent {
    /// The `event:` field, when the server sent one.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// The parser: feed it the body's pieces as they arrive, then [`finish`](Self::finish).
#[derive(Debug, Default)]
pub struct SseParser {
    /// The current, not yet terminated line.
    line: Vec<u8>,
    /// The previous piece ended with `\r`: a `\n` at the start of the next one belongs to it.
    pending_cr: bool,
    /// Whether the first bytes were seen (to strip a byte-order mark).
    started: bool,
    data: String,
    has_data: bool,
    event: Option<String>,
    /// Whether any comment or known field was seen (is this an event stream at all?).
    recognised: bool,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// How many of a body's first bytes [`SseBody`] keeps.
const HEAD_LEN: usize = 200;

/// [`ModelError::Stream`] for an event stream that ended before the protocol's end of the
/// response (`missing` names what did not come, e.g. `[DONE] and no finish_reason`): the
/// connection was cut, and what arrived is not an answer (the caller may retry).
pub fn cut_off(missing: &str) -> ModelError {
    ModelError::Stream {
        message: format!(
            "the response stream ended before the model finished (no {missing}): the \
             connection was cut; the partial answer is discarded"
        ),
    }
}

/// A response body read as an event stream: the events parsed and not yet taken, and the
/// body's first bytes, so that a body that is not an event stream (an HTML error page from
/// a proxy, ...) is reported quoting what it was.
#[derive(Debug, Default)]
pub struct SseBody {
    parser: SseParser,
    events: Vec<SseEvent>,
    head: Vec<u8>,
}

impl SseBody {
    /// A body at its start.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses a piece of the body.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.head.len() < HEAD_LEN {
            let take = bytes.len().min(HEAD_LEN - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
        }
        self.parser.feed(bytes, &mut self.events);
    }

    /// The body ended: an unterminated last event is dispatched.
    pub fn finish(&mut self) {
        self.parser.finish(&mut self.events);
    }

    /// The events parsed since the last call, in order.
    pub fn take_events(&mut self) -> Vec<SseEvent> {
        std::mem::take(&mut self.events)
    }

    /// Gives back a vector [`take_events`](Self::take_events) returned, once its events are
    /// read, so the next events are parsed into its memory instead of a new vector's (a
    /// decoder then allocates no vector per piece of the body). What it still holds is
    /// dropped.
    ///
    /// ```
    /// use agentscope_http::sse::SseBody;
    ///
    /// let mut body = SseBody::new();
    /// body.feed(b"data: a\n\ndata: b\n\n");
    /// let mut events = body.take_events();
    /// let data: Vec<String> = events.drain(..).map(|event| event.data).collect();
    /// assert_eq!(data, ["a", "b"]);
    /// body.recycle(events);
    /// body.feed(b"data: c\n\n");
    /// assert_eq!(body.take_events()[0].data, "c");
    /// ```
    pub fn recycle(&mut self, mut events: Vec<SseEvent>) {
        if self.events.is_empty() {
            events.clear();
            self.events = events;
        }
    }

    /// Whether the body so far looked like an event stream (see [`SseParser::recognised`]).
    pub fn recognised(&self) -> bool {
        self.parser.recognised()
    }

    /// [`ModelError::InvalidResponse`] quoting the body's start when nothing of it looked
    /// like an event stream and it was not blank; `None` otherwise.
    pub fn not_an_event_stream(&self) -> Option<ModelError> {
        (!self.recognised() && !self.head.trim_ascii().is_empty()).then(|| {
            ModelError::InvalidResponse {
                message: format!(
                    "the response is not an event stream: {}",
                    snippet(&String::from_utf8_lossy(&self.head))
                ),
            }
        })
    }
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a piece of the byte stream; complete events are appended to `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) {
        if bytes.is_empty() {
            return;
        }
        if !self.started {
            // Wait until we can tell whether the stream starts with a BOM.
            let have = self.line.len() + bytes.len();
            if have < BOM.len() && BOM.starts_with(&[self.line.as_slice(), bytes].concat()) {
                self.line.extend_from_slice(bytes);
                return;
            }
            self.started = true;
            let mut head = std::mem::take(&mut self.line);
            head.extend_from_slice(bytes);
            let head = head.strip_prefix(BOM).unwrap_or(&head).to_vec();
            self.feed_lines(&head, out);
            return;
        }
        if self.pending_cr {
            self.pending_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        self.feed_lines(bytes, out);
    }

    fn feed_lines(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) {
        while let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&bytes[..end]);
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out);
            let terminator = bytes[end];
            bytes = &bytes[end + 1..];
            if terminator == b'\r' {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.pending_cr = true,
                }
            }
        }
        self.line.extend_from_slice(bytes);
    }

    /// Whether the input so far looked like an event stream (a comment or a known field).
    pub fn recognised(&self) -> bool {
        self.recognised
    }

    /// Ends the input: an unterminated last line and event are dispatched.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            let line = if self.started {
                line
            } else {
                line.strip_prefix(BOM).unwrap_or(&line).to_vec()
            };
            self.process_line(&line, out);
        }
        self.started = true;
        self.process_line(b"", out);
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: self.event.take(),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.has_data = false;
            self.event = None;
            return;
        }
        if line[0] == b':' {
            self.recognised = true;
            return; // a comment, used as keep-alive
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        let value = String::from_utf8_lossy(value);
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => self.event = Some(value.into_owned()),
            b"id" | b"retry" => {}
            _ => return, // not a field of the protocol
        }
        self.recognised = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_pieces(pieces: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        for piece in pieces {
            parser.feed(piece, &mut out);
        }
        parser.finish(&mut out);
        out
    }

    fn data(text: &str) -> SseEvent {
        SseEvent {
            event: None,
            data: text.to_owned(),
        }
    }

    #[test]
    fn parses_events_comments_and_multiline_data() {
        let body =
            b": keep-alive\n\ndata: one\n\ndata: two\ndata:  three\n\nevent: error\ndata: {}\n\n";
        assert_eq!(
            parse_pieces(&[body]),
            vec![
                data("one"),
                data("two\n three"),
                SseEvent {
                    event: Some("error".into()),
                    data: "{}".into()
                }
            ]
        );
    }

    #[test]
    fn accepts_crlf_and_cr_line_endings_even_when_split() {
        let expected = vec![data("a"), data("b"), data("c")];
        assert_eq!(
            parse_pieces(&[b"data: a\r\n\r\ndata: b\r\rdata: c\n\n"]),
            expected
        );
        assert_eq!(
            parse_pieces(&[b"data: a\r", b"\n\r", b"\ndata: b\r", b"\r", b"data: c\n\n"]),
            expected
        );
        // An empty read between `\r` and `\n` does not split the line ending.
        assert_eq!(
            parse_pieces(&[b"data: a\r", b"", b"\n\r\ndata: b\r\rdata: c\n\n"]),
            expected
        );
    }

    #[test]
    fn empty_data_and_field_without_colon() {
        assert_eq!(
            parse_pieces(&[b"data\n\ndata:\n\n"]),
            vec![data(""), data("")]
        );
        // An event with no data line is not dispatched.
        assert_eq!(parse_pieces(&[b"event: ping\n\n"]), vec![]);
    }

    #[test]
    fn recognises_event_streams() {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        parser.feed(b"<html>\n<body>502</body>\n", &mut out);
        assert!(!parser.recognised());
        parser.feed(b": ping\n", &mut out);
        assert!(parser.recognised());
    }

    #[test]
    fn a_recycled_vector_never_replaces_events_not_yet_taken() {
        let mut body = SseBody::new();
        body.feed(b"data: a\n\n");
        let taken = body.take_events();
        body.feed(b"data: b\n\n");
        body.recycle(taken);
        assert_eq!(body.take_events(), [data("b")]);
        body.recycle(vec![data("stale")]);
        body.feed(b"data: c\n\n");
        assert_eq!(body.take_events(), [data("c")]);
    }

    #[test]
    fn unterminated_last_event_is_dispatched_at_end() {
        assert_eq!(
            parse_pieces(&[b"data: x\n\ndata: [DONE]"]),
            vec![data("x"), data("[DONE]")]
        );
    }

    #[test]
    fn byte_order_mark_is_stripped_even_when_split() {
        assert_eq!(parse_pieces(&[b"\xEF\xBB\xBFdata: x\n\n"]), vec![data("x")]);
        assert_eq!(
            parse_pieces(&[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"]),
            vec![data("x")]
        );
        assert_eq!(parse_pieces(&[b"\xEF\xBB"]), vec![]);
    }

    #[test]
    fn multibyte_utf8_split_across_reads() {
        let body = "data: héllo wörld 你好\n\n".as_bytes();
        for split in 0..=body.len() {
            let (a, b) = body.split_at(split);
            assert_eq!(parse_pieces(&[a, b]), vec![data("héllo wörld 你好")]);
        }
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_events(
            cuts in proptest::collection::vec(0usize..200, 0..12),
            crlf in any::<bool>(),
        ) {
            let mut body = String::from(": c\n\ndata: {\"a\":1}\n\ndata: x\ndata: y\n\nevent: e\ndata: é\n\ndata: [DONE]\n\n");
            if crlf {
                body = body.replace('\n', "\r\n");
            }
            let bytes = body.as_bytes();
            let pieces = crate::testing::split_at(bytes, &cuts);
            prop_assert_eq!(parse_pieces(&pieces), parse_pieces(&[bytes]));
        }
    }
}
