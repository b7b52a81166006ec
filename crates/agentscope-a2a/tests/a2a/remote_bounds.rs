//! The client's bounds: a card too large, a stream that stalls or never ends an event, an
//! answer that does not come, each fails fast with an error saying which; a task of an
//! agent that does not stream is polled, waiting longer each time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2a::{Part, SendMessageResponse, StreamResponse, TaskState};
use agentscope::AgentError;
use agentscope_a2a::{RemoteAgent, RemoteError};
use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::fake::{card, fake, ok, proto, task};

/// A body of `chunk` repeated until `cap` bytes were produced, then silent for good;
/// `produced` counts what the server handed to the connection.
fn endless(chunk: &'static [u8], cap: usize, produced: Arc<AtomicUsize>) -> Body {
    let stream = futures::stream::unfold(0usize, move |sent| {
        let produced = Arc::clone(&produced);
        async move {
            if sent >= cap {
                std::future::pending::<()>().await;
            }
            produced.fetch_add(chunk.len(), Ordering::SeqCst);
            Some((
                Ok::<_, std::io::Error>(axum::body::Bytes::from_static(chunk)),
                sent + chunk.len(),
            ))
        }
    });
    Body::from_stream(stream)
}

static SPACES: [u8; 64 << 10] = [b' '; 64 << 10];
static LETTERS: [u8; 64 << 10] = [b'a'; 64 << 10];

#[tokio::test]
async fn a_card_of_2_gb_fails_fast_with_a_clear_error_without_being_read() {
    for announced in [true, false] {
        let produced = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&produced);
        let server = fake(move |_| {
            // At most 256 MiB, then silence: enough to show the card is not read whole.
            let body = endless(&SPACES, 256 << 20, Arc::clone(&counter));
            let mut response = Response::new(body);
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
            if announced {
                response
                    .headers_mut()
                    .insert(header::CONTENT_LENGTH, (2u64 << 30).into());
            }
            response
        })
        .await;
        let started = Instant::now();
        let error = tokio::time::timeout(
            Duration::from_secs(10),
            RemoteAgent::connect(format!("{}/a2a", server.base)),
        )
        .await
        .expect("reading the card did not fail fast")
        .unwrap_err();
        let reason = if announced {
            "it is larger than 1 MiB (the server announced 2147483648 bytes)"
        } else {
            "it is larger than 1 MiB"
        };
        assert_eq!(
            error,
            RemoteError::Card {
                url: format!("{}/a2a/.well-known/agent-card.json", server.base),
                reason: reason.to_owned(),
            }
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        // Not read: what the server wrote is what the connection buffered at most.
        let produced = produced.load(Ordering::SeqCst);
        assert!(produced < 64 << 20, "the server wrote {produced} bytes");
    }
}

/// An agent that streams (HTTP+JSON at `<base>/a2a`), answering each message with `stream`.
async fn streaming(stream: impl Fn() -> Response + Send + Sync + 'static) -> crate::fake::Fake {
    let card_url = Arc::new(Mutex::new(String::new()));
    let url = Arc::clone(&card_url);
    let server = fake(move |seen| {
        if seen.path.contains("agent-card.json") {
            return ok(card("streamer", &url.lock().unwrap(), "HTTP+JSON", true));
        }
        if seen.path.ends_with("/message:stream") {
            return stream();
        }
        ok(proto(&task("t1", "c1", TaskState::Canceled, Vec::new())))
    })
    .await;
    *card_url.lock().unwrap() = format!("{}/a2a", server.base);
    server
}

fn event_stream(body: Body) -> Response {
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

#[tokio::test]
async fn a_stream_that_never_ends_its_event_fails_once_it_passes_16_mib() {
    let produced = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&produced);
    let server = streaming(move || {
        // `data: aaaa...` and never a blank line (at most 64 MiB, then silence).
        let head = futures::stream::iter([Ok::<_, std::io::Error>(
            axum::body::Bytes::from_static(b"data: "),
        )]);
        let rest = endless(&LETTERS, 64 << 20, Arc::clone(&counter)).into_data_stream();
        let body =
            Body::from_stream(head.chain(
                rest.map(|chunk| chunk.map_err(|err| std::io::Error::other(err.to_string()))),
            ));
        event_stream(body)
    })
    .await;
    let remote = RemoteAgent::connect(format!("{}/a2a", server.base))
        .await
        .unwrap();
    let error = tokio::time::timeout(Duration::from_secs(20), remote.call("Hi"))
        .await
        .expect("the endless event did not fail the call")
        .unwrap_err();
    assert!(matches!(error, AgentError::Failed { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!(
            "calling the remote agent 'streamer' at {}/a2a/.well-known/agent-card.json failed: \
             the stream sent more than 16 MiB without completing an event (no blank line ended \
             it)",
            server.base
        )
    );
    let produced = produced.load(Ordering::SeqCst);
    assert!(produced < 48 << 20, "the server wrote {produced} bytes");
}

#[tokio::test]
async fn a_stream_that_stalls_fails_after_the_timeout() {
    let server = streaming(|| {
        // The task, then nothing: no event, no keep-alive.
        let working = proto(&StreamResponse::Task(task(
            "t1",
            "c1",
            TaskState::Working,
            Vec::new(),
        )));
        let first = format!("data: {working}\n\n");
        let body = futures::stream::iter([Ok::<_, std::io::Error>(axum::body::Bytes::from(first))])
            .chain(futures::stream::pending());
        event_stream(Body::from_stream(body))
    })
    .await;
    let remote = RemoteAgent::builder(format!("{}/a2a", server.base))
        .timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap();
    let started = Instant::now();
    let error = tokio::time::timeout(Duration::from_secs(10), remote.call("Hi"))
        .await
        .expect("the stalled stream did not fail the call")
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "calling the remote agent 'streamer' at {}/a2a/.well-known/agent-card.json failed: \
             the stream sent nothing for 500 ms (the timeout, see RemoteAgentBuilder::timeout): \
             it stalled",
            server.base
        )
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(5),
        "{took:?}"
    );
    // The task the stalled stream named is canceled (in the background).
    for _ in 0..100 {
        if server
            .lines()
            .iter()
            .any(|line| line == "POST /a2a/tasks/t1:cancel")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        server.lines(),
        [
            "GET /a2a/.well-known/agent-card.json",
            "POST /a2a/message:stream",
            "POST /a2a/tasks/t1:cancel",
        ]
    );
}

/// An agent that does not stream (HTTP+JSON at `<base>/a2a`): `send` answers each
/// `message:send`, `get` each `GET /tasks/t1` (given how many came before), each time
/// noted.
async fn blocking(
    send: impl Fn(&Value) -> Response + Send + Sync + 'static,
    get: impl Fn(usize) -> Response + Send + Sync + 'static,
) -> (crate::fake::Fake, Arc<Mutex<Vec<Instant>>>) {
    let card_url = Arc::new(Mutex::new(String::new()));
    let url = Arc::clone(&card_url);
    let times = Arc::new(Mutex::new(Vec::new()));
    let noted = Arc::clone(&times);
    let gets = AtomicUsize::new(0);
    let server = fake(move |seen| {
        noted.lock().unwrap().push(Instant::now());
        if seen.path.contains("agent-card.json") {
            ok(card("poller", &url.lock().unwrap(), "HTTP+JSON", false))
        } else if seen.path.ends_with("/message:send") {
            send(&seen.json())
        } else {
            get(gets.fetch_add(1, Ordering::SeqCst))
        }
    })
    .await;
    *card_url.lock().unwrap() = format!("{}/a2a", server.base);
    (server, times)
}

#[tokio::test]
async fn an_answer_that_does_not_come_fails_after_the_timeout() {
    let (server, _) = blocking(
        |_| {
            Response::new(Body::from_stream(futures::stream::pending::<
                Result<axum::body::Bytes, std::io::Error>,
            >()))
        },
        |_| unreachable!(),
    )
    .await;
    let remote = RemoteAgent::builder(format!("{}/a2a", server.base))
        .timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap();
    let error = tokio::time::timeout(Duration::from_secs(10), remote.call("Hi"))
        .await
        .expect("the missing answer did not fail the call")
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "calling the remote agent 'poller' at {}/a2a/.well-known/agent-card.json failed: no \
             answer within 300 ms (the timeout, see RemoteAgentBuilder::timeout)",
            server.base
        )
    );
}

#[tokio::test]
async fn a_task_of_an_agent_that_does_not_stream_is_polled_waiting_longer_each_time() {
    let (server, times) = blocking(
        |body| {
            // Sent to return at once: the task as it is, then read until it ends.
            assert_eq!(
                body["configuration"]["returnImmediately"],
                json!(true),
                "{body}"
            );
            let working = task("t1", "c1", TaskState::Working, Vec::new());
            ok(proto(&SendMessageResponse::Task(working)))
        },
        |before| match before {
            0..=2 => ok(proto(&task("t1", "c1", TaskState::Working, Vec::new()))),
            _ => ok(proto(&task(
                "t1",
                "c1",
                TaskState::Completed,
                vec![Part::text("Done.")],
            ))),
        },
    )
    .await;
    let remote = RemoteAgent::connect(format!("{}/a2a", server.base))
        .await
        .unwrap();
    let reply = remote.call("Work.").await.unwrap();
    assert_eq!(reply.text(), "Done.");
    assert_eq!(reply.metadata["a2a"]["taskId"], json!("t1"));
    assert_eq!(
        server.lines(),
        [
            "GET /a2a/.well-known/agent-card.json",
            "POST /a2a/message:send",
            "GET /a2a/tasks/t1?historyLength=0",
            "GET /a2a/tasks/t1?historyLength=0",
            "GET /a2a/tasks/t1?historyLength=0",
            "GET /a2a/tasks/t1?historyLength=0",
        ]
    );
    // The waits before each poll: 250 ms, then doubled (up to 5 s).
    let times = times.lock().unwrap();
    let waits: Vec<Duration> = times[1..].windows(2).map(|w| w[1] - w[0]).collect();
    for (wait, least) in waits.iter().zip([250, 500, 1000, 2000]) {
        assert!(
            *wait >= Duration::from_millis(least),
            "waited {wait:?} where at least {least} ms were due: {waits:?}"
        );
    }
}
