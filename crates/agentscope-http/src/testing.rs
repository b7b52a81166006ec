//! Checks for a [`Decode`] implementation, for a client's own tests (feature `testing`):
//! decode a body in pieces, split it anywhere, assemble the result; and the checks every
//! decoder runs over its fixtures ([`check_every_fixture`], and
//! [`assert_fixture_same_when_split`] for a property test over random cuts), declared in a
//! client's tests by [`fixture_split_tests!`](crate::fixture_split_tests); and the harness
//! of a client's `decode` bench ([`bench`](mod@bench)).
//!
//! ```
//! use agentscope_http::testing::{assemble, decode, split_at};
//! # use agentscope_core::{ChatResponse, ContentBlock, ModelError};
//! # #[derive(Default)] struct Lines(bool);
//! # impl agentscope_http::Decode for Lines {
//! #     fn feed(&mut self, b: &[u8]) -> Vec<Result<ChatResponse, ModelError>> {
//! #         vec![Ok(ChatResponse::new(vec![ContentBlock::text(String::from_utf8_lossy(b).into_owned())]))]
//! #     }
//! #     fn finish(&mut self) -> Vec<Result<ChatResponse, ModelError>> { self.0 = true; vec![] }
//! #     fn decode_json(&mut self, _: &[u8]) -> Vec<Result<ChatResponse, ModelError>> { vec![] }
//! #     fn is_done(&self) -> bool { self.0 }
//! # }
//! let body = b"Hello, world";
//! let (chunks, error) = decode::<Lines>(&split_at(body, &[5, 7]));
//! assert!(error.is_none());
//! assert_eq!(assemble(&chunks).text(), "Hello, world");
//! ```

pub mod bench;

use agentscope_core::{ChatAccumulator, ChatResponse, ContentBlock, ModelError, Msg, ToolUseBlock};

use crate::Decode;

/// Decodes `pieces` in order with a new `D`, then finishes it: the chunks, and the error
/// that ended them, if any.
///
/// # Panics
///
/// When an error is not the last item, or the decoder is not done after `finish`: both
/// break the [`Decode`] contract.
#[allow(clippy::panic)]
pub fn decode<D: Decode>(pieces: &[&[u8]]) -> (Vec<ChatResponse>, Option<ModelError>) {
    let mut decoder = D::default();
    let mut items = Vec::new();
    for piece in pieces {
        items.extend(decoder.feed(piece));
    }
    items.extend(decoder.finish());
    if !decoder.is_done() {
        panic!("the decoder is not done after finish()");
    }
    chunks_and_error(items)
}

/// Decodes a whole JSON body (a server that did not stream) with a new `D`: the chunks, and
/// the error that ended them, if any.
///
/// # Panics
///
/// When an error is not the last item: that breaks the [`Decode`] contract.
pub fn decode_json<D: Decode>(body: &[u8]) -> (Vec<ChatResponse>, Option<ModelError>) {
    chunks_and_error(D::default().decode_json(body))
}

/// Checks that `D` reports a body that is not an event stream (a proxy's HTML error page)
/// as [`ModelError::InvalidResponse`] quoting it, and decodes no chunk from it.
///
/// # Panics
///
/// When it does not.
pub fn assert_html_is_not_an_event_stream<D: Decode>() {
    let (chunks, error) = decode::<D>(&[b"<html><body>502 Bad Gateway</body></html>\n"]);
    assert!(chunks.is_empty());
    assert!(
        matches!(error, Some(ModelError::InvalidResponse { ref message })
            if message == "the response is not an event stream: <html><body>502 Bad Gateway</body></html>\n"),
        "{error:?}"
    );
}

/// Checks that `body` decodes to `chunks` chunks, then the error whose text is `message`.
///
/// # Panics
///
/// When it does not.
pub fn assert_chunks_then_error<D: Decode>(body: &[u8], chunks: usize, message: &str) {
    let (decoded, error) = decode::<D>(&[body]);
    assert_eq!(decoded.len(), chunks, "{decoded:?}");
    assert_eq!(error.map(|e| e.to_string()).as_deref(), Some(message));
}

/// The chunks before the first error, and that error, which must be the last item.
#[allow(clippy::panic)]
fn chunks_and_error(
    items: Vec<Result<ChatResponse, ModelError>>,
) -> (Vec<ChatResponse>, Option<ModelError>) {
    let mut chunks = Vec::new();
    let mut items = items.into_iter();
    while let Some(item) = items.next() {
        match item {
            Ok(chunk) => chunks.push(chunk),
            Err(error) => {
                if items.next().is_some() {
                    panic!("an item followed the error {error}");
                }
                return (chunks, Some(error));
            }
        }
    }
    (chunks, None)
}

/// The chunks assembled into a message, as the engine assembles them.
pub fn assemble(chunks: &[ChatResponse]) -> Msg {
    let mut accumulator = ChatAccumulator::new("assistant");
    for chunk in chunks {
        accumulator.push(chunk);
    }
    accumulator.finish()
}

/// The tool-call blocks of `chunks` in order, as streamed: a call's start and the fragments
/// that continue it.
pub fn tool_use_blocks(chunks: &[ChatResponse]) -> Vec<&ToolUseBlock> {
    chunks
        .iter()
        .flat_map(|chunk| &chunk.content)
        .filter_map(ContentBlock::as_tool_use)
        .collect()
}

/// `bytes` cut at `cuts` (each taken modulo `bytes.len() + 1`, in any order): the pieces a
/// server's writes might arrive in.
pub fn split_at<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in cuts {
        pieces.push(&bytes[start..cut]);
        start = cut;
    }
    pieces.push(&bytes[start..]);
    pieces
}

/// Checks that `body` cut at `cuts` (as [`split_at`] cuts) decodes to the same chunks, and
/// the same message, as `body` whole: the body of a property test over random cuts.
///
/// # Panics
///
/// When they differ, or the split body fails.
pub fn assert_same_when_split<D: Decode>(body: &[u8], cuts: &[usize]) {
    let (whole, _) = decode::<D>(&[body]);
    let (split, error) = decode::<D>(&split_at(body, cuts));
    assert!(error.is_none(), "cut at {cuts:?}: {error:?}");
    assert_eq!(split, whole, "cut at {cuts:?}");
    assert_eq!(assemble(&split).content, assemble(&whole).content);
}

/// Checks that `body` decodes to the same chunks whole, split in two at every point, byte by
/// byte, and (with CRLF line endings) byte by byte again as whole; returns the chunks.
///
/// # Panics
///
/// At the first difference, naming `name` and the split.
#[allow(clippy::panic)]
pub fn check_every_split<D: Decode>(name: &str, body: &str) -> Vec<ChatResponse> {
    let bytes = body.as_bytes();
    let (whole, error) = decode::<D>(&[bytes]);
    if let Some(error) = error {
        panic!("{name}: {error}");
    }
    for split in 0..=bytes.len() {
        let (a, b) = bytes.split_at(split);
        let (chunks, error) = decode::<D>(&[a, b]);
        assert!(error.is_none(), "{name} split at {split}: {error:?}");
        assert_eq!(chunks, whole, "{name} split at {split}");
    }
    let pieces: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(decode::<D>(&pieces).0, whole, "{name} byte by byte");
    let crlf = body.replace('\n', "\r\n");
    let crlf_whole = decode::<D>(&[crlf.as_bytes()]).0;
    let pieces: Vec<&[u8]> = crlf.as_bytes().chunks(1).collect();
    assert_eq!(
        decode::<D>(&pieces).0,
        crlf_whole,
        "{name} CRLF byte by byte"
    );
    assert_eq!(
        assemble(&crlf_whole).content,
        assemble(&whole).content,
        "{name} CRLF"
    );
    whole
}

/// The fixtures of a client's decoder: every `.sse` file of `dir` (not of its
/// subdirectories), as its name without the extension and its text, sorted by name.
///
/// # Panics
///
/// When `dir` or a file in it cannot be read, or holds no `.sse` file.
#[allow(clippy::panic)]
pub fn sse_fixtures(dir: &str) -> Vec<(String, String)> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|err| panic!("{dir}: {err}"));
    let mut fixtures: Vec<(String, String)> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|ext| ext == "sse"))
        .map(|path| {
            let name = path
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default();
            let body = std::fs::read_to_string(&path)
                .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            (name, body)
        })
        .collect();
    assert!(!fixtures.is_empty(), "no .sse fixture in {dir}");
    fixtures.sort();
    fixtures
}

/// `fixtures` (name and body) as written, then again with CRLF line endings: the bodies a
/// decoder's property test picks from.
pub fn with_crlf<N: AsRef<str>, B: AsRef<str>>(fixtures: &[(N, B)]) -> Vec<String> {
    let lf = fixtures.iter().map(|(_, body)| body.as_ref().to_owned());
    let crlf = fixtures
        .iter()
        .map(|(_, body)| body.as_ref().replace('\n', "\r\n"));
    lf.chain(crlf).collect()
}

/// [`check_every_split`] for each of `fixtures` (name and body).
///
/// # Panics
///
/// At the first difference, naming the fixture and the split.
pub fn check_every_fixture<D: Decode, N: AsRef<str>, B: AsRef<str>>(fixtures: &[(N, B)]) {
    for (name, body) in fixtures {
        check_every_split::<D>(name.as_ref(), body.as_ref());
    }
}

/// [`assert_same_when_split`] for body number `which` (modulo their number) of
/// [`with_crlf`]`(fixtures)`, cut at `cuts`: the body of a decoder's property test over
/// its fixtures.
///
/// ```
/// # use agentscope_core::{ChatResponse, ContentBlock, ModelError};
/// # #[derive(Default)] struct Lines(bool);
/// # impl agentscope_http::Decode for Lines {
/// #     fn feed(&mut self, b: &[u8]) -> Vec<Result<ChatResponse, ModelError>> {
/// #         vec![Ok(ChatResponse::new(vec![ContentBlock::text(String::from_utf8_lossy(b).into_owned())]))]
/// #     }
/// #     fn finish(&mut self) -> Vec<Result<ChatResponse, ModelError>> { self.0 = true; vec![] }
/// #     fn decode_json(&mut self, _: &[u8]) -> Vec<Result<ChatResponse, ModelError>> { vec![] }
/// #     fn is_done(&self) -> bool { self.0 }
/// # }
/// # let _ = |which: usize, cuts: Vec<usize>| {
/// // Inside `proptest! { fn any_split(which in 0usize..4, cuts in vec(any::<usize>(), 0..40)) }`:
/// let fixtures = [("hello", "Hello"), ("lines", "a\nb\n")];
/// agentscope_http::testing::assert_fixture_same_when_split::<Lines, _, _>(&fixtures, which, &cuts);
/// # };
/// ```
///
/// # Panics
///
/// As [`assert_same_when_split`]; when `fixtures` is empty.
pub fn assert_fixture_same_when_split<D: Decode, N: AsRef<str>, B: AsRef<str>>(
    fixtures: &[(N, B)],
    which: usize,
    cuts: &[usize],
) {
    let bodies = with_crlf(fixtures);
    assert!(!bodies.is_empty(), "no fixture");
    assert_same_when_split::<D>(bodies[which % bodies.len()].as_bytes(), cuts);
}

/// Declares, in a client's decoder tests, the two tests every decoder runs over its
/// fixtures: `every_fixture_decodes_identically_however_it_is_split`
/// ([`check_every_fixture`]) and `any_split_assembles_the_same_message`, a property test of
/// [`assert_fixture_same_when_split`] over random cuts. `$decoder` is the client's
/// [`Decode`] type, `$fixtures` an expression giving its fixtures (name and body, as
/// [`sse_fixtures`] reads them), evaluated by each test: in a client,
/// `agentscope_http::fixture_split_tests!(Decoder, fixtures());` inside the decoder's test
/// module. The calling crate needs `proptest` among its dev-dependencies.
#[macro_export]
macro_rules! fixture_split_tests {
    ($decoder:ty, $fixtures:expr) => {
        #[test]
        fn every_fixture_decodes_identically_however_it_is_split() {
            $crate::testing::check_every_fixture::<$decoder, _, _>(&$fixtures);
        }

        ::proptest::proptest! {
            #[test]
            fn any_split_assembles_the_same_message(
                which in 0usize..14,
                cuts in ::proptest::collection::vec(::proptest::prelude::any::<usize>(), 0..40),
            ) {
                $crate::testing::assert_fixture_same_when_split::<$decoder, _, _>(
                    &$fixtures,
                    which,
                    &cuts,
                );
            }
        }
    };
}
