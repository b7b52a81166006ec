//! A tiny HTTP/1.1 server on 127.0.0.1 that plays scripted replies and records requests:
//! the local server model clients are tested against.
//!
//! It controls exactly how a reply's bytes are split into writes, can delay or stall, and
//! serves either one request per connection (`Connection: close`, body delimited by the
//! close, like many SSE servers) or several (`Content-Length`, keep-alive). A request that
//! finds no reply left gets a 500 with the message `no reply scripted`.
//!
//! ```
//! use agentscope_test::http::{HttpReply, TestServer};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let server = TestServer::start([HttpReply::sse("data: {}\n\ndata: [DONE]\n\n")]).await;
//! assert!(server.base_url().starts_with("http://127.0.0.1:"));
//! assert!(server.requests().is_empty());
//! # }
//! ```

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One scripted HTTP response.
#[derive(Debug, Clone)]
pub struct HttpReply {
    status: u16,
    headers: Vec<(String, String)>,
    parts: Vec<Vec<u8>>,
    delay_before_head: Duration,
    delay_between_parts: Duration,
    hang_after: bool,
    keep_alive: bool,
    reset: bool,
}

impl HttpReply {
    /// A 200 `text/event-stream` reply with this body, written in one piece.
    pub fn sse(body: &str) -> Self {
        Self::status(200, body).header("Content-Type", "text/event-stream")
    }

    /// A 200 SSE reply written as the given pieces.
    pub fn sse_parts<I, P>(parts: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<Vec<u8>>,
    {
        Self {
            parts: parts.into_iter().map(Into::into).collect(),
            ..Self::sse("")
        }
    }

    /// A reply with a status and a JSON body.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::status(status, &body.to_string()).header("Content-Type", "application/json")
    }

    /// A reply with a status and a plain body.
    pub fn status(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: Vec::new(),
            parts: vec![body.as_bytes().to_vec()],
            delay_before_head: Duration::ZERO,
            delay_between_parts: Duration::ZERO,
            hang_after: false,
            keep_alive: false,
            reset: false,
        }
    }

    /// No reply at all: the server resets the connection (TCP `RST`, `SO_LINGER` 0) as soon
    /// as it accepts it, before reading the request, as a server that is restarting does.
    /// The request is not recorded; the connection is counted
    /// ([`TestServer::connections`]). On a kept-alive connection whose next request finds
    /// this reply, the request is read (and recorded), then the connection is reset.
    pub fn reset() -> Self {
        Self {
            reset: true,
            ..Self::status(0, "")
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Waits before sending the status line.
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay_before_head = delay;
        self
    }

    /// Writes the body one byte per write.
    pub fn byte_by_byte(mut self) -> Self {
        let body: Vec<u8> = self.parts.concat();
        self.parts = body.chunks(1).map(<[u8]>::to_vec).collect();
        self
    }

    /// Waits between two pieces of the body.
    pub fn paced(mut self, delay: Duration) -> Self {
        self.delay_between_parts = delay;
        self
    }

    /// Keeps the connection open, silent, after the body.
    pub fn then_hang(mut self) -> Self {
        self.hang_after = true;
        self
    }

    /// Sends a `Content-Length` and keeps the connection open for the next request.
    pub fn keep_alive(mut self) -> Self {
        self.keep_alive = true;
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `POST`, `GET`, ...
    pub method: String,
    /// Path and query.
    pub target: String,
    /// The headers, in the order received.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Recorded {
    /// The body parsed as JSON (`Value::Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// A header's value (names compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Default)]
struct State {
    replies: VecDeque<HttpReply>,
    requests: Vec<Recorded>,
    connections: usize,
}

/// The running server; stops when dropped.
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// Starts a server that plays `replies` in order, one per request.
    ///
    /// # Panics
    ///
    /// When no port on 127.0.0.1 can be bound (a test cannot go on without its server).
    #[allow(clippy::expect_used)]
    pub async fn start(replies: impl IntoIterator<Item = HttpReply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding a test server on 127.0.0.1");
        let addr = listener
            .local_addr()
            .expect("the address of a bound test server");
        let state = Arc::new(Mutex::new(State {
            replies: replies.into_iter().collect(),
            ..State::default()
        }));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                shared
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .connections += 1;
                tokio::spawn(serve(socket, Arc::clone(&shared)));
            }
        });
        Self { addr, state, task }
    }

    /// `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .requests
            .clone()
    }

    /// How many TCP connections were accepted.
    pub fn connections(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .connections
    }
}

async fn serve(mut socket: TcpStream, state: Arc<Mutex<State>>) {
    socket.set_nodelay(true).ok();
    let reset = {
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        let reset = state.replies.front().is_some_and(|reply| reply.reset);
        if reset {
            state.replies.pop_front();
        }
        reset
    };
    if reset {
        return abort(socket);
    }
    let mut buffer = Vec::new();
    loop {
        let Some(request) = read_request(&mut socket, &mut buffer).await else {
            return;
        };
        let reply = {
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            state.requests.push(request);
            state
                .replies
                .pop_front()
                .unwrap_or_else(|| HttpReply::status(500, "no reply scripted"))
        };
        if reply.reset {
            return abort(socket);
        }
        if write_reply(&mut socket, &reply).await.is_err() {
            return;
        }
        if reply.hang_after {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        if !reply.keep_alive {
            socket.shutdown().await.ok();
            return;
        }
    }
}

/// Closes the connection with a TCP reset.
fn abort(socket: TcpStream) {
    // A zero linger turns the close into a reset; it never blocks (the deprecation warns
    // of a non-zero linger blocking the thread on drop).
    #[allow(deprecated)]
    socket.set_linger(Some(Duration::ZERO)).ok();
    drop(socket);
}

async fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Recorded> {
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let target = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let body_start = head_end + 4;
    while buffer.len() < body_start + length {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = buffer[body_start..body_start + length].to_vec();
    buffer.drain(..body_start + length);
    Some(Recorded {
        method,
        target,
        headers,
        body,
    })
}

async fn write_reply(socket: &mut TcpStream, reply: &HttpReply) -> std::io::Result<()> {
    if !reply.delay_before_head.is_zero() {
        tokio::time::sleep(reply.delay_before_head).await;
    }
    let reason = match reply.status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let mut head = format!("HTTP/1.1 {} {reason}\r\n", reply.status);
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if reply.keep_alive {
        let length: usize = reply.parts.iter().map(Vec::len).sum();
        head.push_str(&format!("Content-Length: {length}\r\n"));
    } else {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.flush().await?;
    for part in &reply.parts {
        socket.write_all(part).await?;
        socket.flush().await?;
        if reply.delay_between_parts.is_zero() {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(reply.delay_between_parts).await;
        }
    }
    Ok(())
}
