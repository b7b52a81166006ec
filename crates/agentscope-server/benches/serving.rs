//! `serving`: one instance serving AG-UI runs (and A2A `SendStreamingMessage` tasks) under
//! load, against a bare axum SSE handler that sends the same bytes on the same schedule
//! (issue 36, point 3).
//!
//! - **1,000 concurrent runs.** Each run is a new thread: the user says "Hi", the scripted
//!   model calls the `echo` tool (one chunk), then answers in 50 tokens 10 ms apart. Threads
//!   are JSON files on a tmpfs (`/dev/shm`, the store `inline` as its docs advise there),
//!   with `Durability::Async` and, beside it, `Durability::Step` and `Async` with the store's
//!   file work on tokio's blocking pool (its default). The client (reqwest, in this process)
//!   starts every run at once and reads each stream to its end. Reported per server: the
//!   wall time from the start to the last run's end, each run's time to its first event
//!   (from its request to the first complete SSE frame; p50, p99), the failed runs (not
//!   `200`, a transport error, or a stream that does not end with a successful end after 50
//!   text frames), the server's resident memory before the load and its peak (`VmHWM`), and
//!   the CPU time the server and the client used during the load.
//! - **The floor** is a bare axum handler that answers every `POST` with the frames one run
//!   of the real server sent (captured first, message ids and all), through axum's `Sse`
//!   with the same keep-alive, on the model's schedule: each text frame but the first comes
//!   10 ms after the frame before it, everything else at once. It does no work but the
//!   sending: the difference is what the server, the engine and the store cost under load.
//! - **A2A**: the same runs as `SendStreamingMessage` (JSON-RPC) tasks of the same agent on
//!   `agentscope-a2a`, each in a new context, against the same kind of floor replaying an
//!   A2A stream.
//! - **10,000 idle streams.** An open chat whose user waits for the model: a run whose model
//!   has not answered yet (`RUN_STARTED` sent, the user's message stored). AG-UI has no
//!   stream without a run (a client holds an SSE stream only while a run is in flight), so
//!   this is what an idle open stream costs: the connection, the run's agent, its task and
//!   its leased thread. Reported: the server's resident memory with every stream open,
//!   against the same number of streams on the floor (the same first frame, then nothing).
//!
//! Every server runs in a child process of this binary (a fresh one per measurement), so its
//! memory and CPU are its own (`/proc/<pid>/status`, `/proc/<pid>/stat`), and the client's
//! connections and the server's count against two file-descriptor limits. The server holds
//! two descriptors per open run (the connection, and the thread's lock file: the JSON
//! store's lease); with a soft limit below twice `SERVING_IDLE` plus 200, the bench opens as
//! many idle streams as fit and says so (raise it with `ulimit -n`).
//!
//! Run: `cargo bench -p agentscope-server --bench serving`. Knobs (environment):
//! `SERVING_RUNS` (1000), `SERVING_IDLE` (10000), `SERVING_ROUNDS` (2: the servers are
//! measured in turn, round after round), `SERVING_ONLY` (any of `runs`, `a2a`, `idle`,
//! comma-separated), `SERVING_SERVERS` (the AG-UI servers: `floor,async,step,async-pool`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::convert::Infallible;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope::session::Durability;
use agentscope_server::{AgUi, AgentSpec};
use agentscope_test::bench::{
    ChildServer, child_ready, cpu_time, env_or, percentile, sse_data, times, working_model,
};
use agentscope_test::tools::EchoTool;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::StreamExt;

/// The model's tokens per answer, and the time between two of them.
const TOKENS: usize = 50;
const INTERVAL: Duration = Duration::from_millis(10);
/// The environment variable that makes this binary a server (its value: the server).
const CHILD: &str = "AGENTSCOPE_SERVING_CHILD";

fn main() {
    if let Ok(mode) = std::env::var(CHILD) {
        serve_child(&mode);
        return;
    }
    drive();
}

// ---------------------------------------------------------------------------------------
// The servers (in the child process)
// ---------------------------------------------------------------------------------------

/// A model that has not answered yet (for an hour).
fn idle_model() -> ScriptedModel {
    ScriptedModel::new([ScriptedResponse::text("late").with_delay(Duration::from_secs(3600))])
        .cycling()
        .without_recording()
}

fn agui(model: ScriptedModel, durability: Durability, store: JsonFileSessionStore) -> axum::Router {
    // Built once: a clone shares the tools' compiled argument schemas (building the toolkit
    // in the factory compiles them again for every run).
    let toolkit = Toolkit::new().tool(EchoTool::new());
    let agui = AgUi::builder()
        .agent(
            "assistant",
            AgentSpec::new(move || {
                ReActAgent::builder()
                    .model(model.fork())
                    .toolkit(toolkit.clone())
                    .durability(durability)
            }),
        )
        .store(store)
        .build()
        .unwrap();
    agui.router()
}

/// The floor: every `POST /agents/assistant` gets `frames` (the data of each SSE event),
/// through axum's `Sse` as the server sends them, the text frames after the first one
/// `INTERVAL` apart. With `idle`, the frames and then nothing.
fn floor(frames: Vec<String>, idle: bool) -> axum::Router {
    let frames: Arc<[String]> = frames.into();
    let handler = move |_body: axum::body::Bytes| {
        let frames = Arc::clone(&frames);
        async move {
            let events = futures::stream::unfold((0usize, false), move |(i, texted)| {
                let frames = Arc::clone(&frames);
                async move {
                    let frame = frames.get(i)?;
                    let text = is_text(frame);
                    if text && texted {
                        tokio::time::sleep(INTERVAL).await;
                    }
                    let event = Ok::<_, Infallible>(event_of(frame));
                    Some((event, (i + 1, texted || text)))
                }
            });
            // The idle floor's stream stays open; the other one ends after its frames.
            let events =
                events.chain(futures::stream::pending().take(if idle { usize::MAX } else { 0 }));
            Sse::new(events).keep_alive(KeepAlive::default())
        }
    };
    axum::Router::new()
        .route("/agents/assistant", axum::routing::post(handler.clone()))
        .route("/a2a", axum::routing::post(handler))
}

/// Runs the server `mode` on 127.0.0.1 and prints its address; exits when stdin closes.
fn serve_child(mode: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = std::env::var("SERVING_DIR").map(PathBuf::from).unwrap();
    let pooled = JsonFileSessionStore::new(&dir);
    let inline = pooled.clone().inline(true);
    runtime.block_on(async move {
        // A backlog for a burst of a thousand connections (`TcpListener::bind`'s 1024 lets
        // the kernel drop some of them, and their SYNs are sent again a second later).
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(4096).unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = match mode {
            // The store's file work on the calling task, as its docs advise for a tmpfs...
            "async" => agui(working_model(TOKENS, INTERVAL), Durability::Async, inline),
            "step" => agui(working_model(TOKENS, INTERVAL), Durability::Step, inline),
            "idle" => agui(idle_model(), Durability::Async, inline),
            // ... and on tokio's blocking pool (the default).
            "async-pool" => agui(working_model(TOKENS, INTERVAL), Durability::Async, pooled),
            "a2a-async" => a2a(&base, Durability::Async, inline),
            "a2a-step" => a2a(&base, Durability::Step, inline),
            "floor" | "floor-idle" | "a2a-floor" => {
                let frames: Vec<String> =
                    serde_json::from_slice(&std::fs::read(dir.join("frames.json")).unwrap())
                        .unwrap();
                floor(frames, mode == "floor-idle")
            }
            other => panic!("unknown server {other}"),
        };
        let path = if mode.starts_with("a2a") {
            "/a2a"
        } else {
            "/agents/assistant"
        };
        // The driver closes stdin to stop the server (or dies).
        child_ready(&format!("{base}{path}"));
        axum::serve(listener, app).await.unwrap();
    });
}

/// The A2A server of the same agent, under `/a2a`.
fn a2a(base: &str, durability: Durability, store: JsonFileSessionStore) -> axum::Router {
    let toolkit = Toolkit::new().tool(EchoTool::new());
    let model = working_model(TOKENS, INTERVAL);
    let a2a = agentscope_a2a::A2a::builder()
        .agent(move || {
            ReActAgent::builder()
                .name("assistant")
                .model(model.fork())
                .toolkit(toolkit.clone())
                .durability(durability)
        })
        .url(format!("{base}/a2a"))
        .store(store)
        .build()
        .unwrap();
    axum::Router::new().nest("/a2a", a2a.router())
}

/// Whether an event carries a piece of the model's text (AG-UI or A2A).
fn is_text(frame: &str) -> bool {
    frame.contains(r#"{"type":"TEXT_MESSAGE_CONTENT""#) || frame.contains(A2A_TEXT)
}

/// How an A2A status update carrying model text is marked.
const A2A_TEXT: &str = r#""agentscope.kind":"text_delta""#;

// ---------------------------------------------------------------------------------------
// The driver (the client)
// ---------------------------------------------------------------------------------------

/// A server `mode` in a child process, its files in `dir`; stopped when dropped.
fn start(mode: &str, dir: &Path) -> ChildServer {
    ChildServer::start([(CHILD, OsStr::new(mode)), ("SERVING_DIR", dir.as_os_str())])
}

/// The resident memory of `server`, `(VmRSS, VmHWM)` in MB.
fn memory(server: &ChildServer) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The request of a run on `thread` for the server at `url`: an AG-UI `RunAgentInput`, or
/// an A2A `SendStreamingMessage` (JSON-RPC) in context `thread`.
fn input(url: &str, thread: &str) -> axum::body::Bytes {
    let body = if url.ends_with("/a2a") {
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
            "params": {"message": {"role": "ROLE_USER", "messageId": format!("{thread}-m"),
                                   "contextId": thread, "parts": [{"text": "Hi"}]}}})
    } else {
        serde_json::json!({
            "threadId": thread, "runId": format!("{thread}-run"),
            "messages": [{"id": format!("{thread}-m"), "role": "user", "content": "Hi"}],
            "tools": [], "context": [], "state": {}, "forwardedProps": {}})
    };
    serde_json::to_vec(&body).unwrap().into()
}

/// Each SSE event in `body`, as its lines (`id: 3\ndata: {...}`; keep-alive comments left
/// out).
fn raw_frames(body: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(body)
        .split("\n\n")
        .filter(|frame| frame.lines().any(|line| line.starts_with("data: ")))
        .map(str::to_owned)
        .collect()
}

/// The axum event of a captured frame (its `id` and `data` lines).
fn event_of(frame: &str) -> Event {
    frame.lines().fold(Event::default(), |event, line| {
        if let Some(id) = line.strip_prefix("id: ") {
            event.id(id)
        } else if let Some(data) = line.strip_prefix("data: ") {
            event.data(data)
        } else {
            event
        }
    })
}

/// Whether a run's stream is complete: its text frames carry the 50 tokens in order (AG-UI
/// sends one a frame; an A2A server merges the pieces it has ready at once, so under load
/// a frame may carry several), then a successful end (AG-UI's `RUN_FINISHED`, A2A's
/// completed status).
fn complete(body: &[u8]) -> bool {
    let frames = sse_data(body);
    let texts: String = frames
        .iter()
        .filter(|f| is_text(f))
        .map(|f| f.as_str())
        .collect();
    let mut rest = texts.as_str();
    let in_order = (0..TOKENS).all(|i| match rest.find(&format!("token{i} ")) {
        Some(at) => {
            rest = &rest[at..];
            true
        }
        None => false,
    });
    in_order
        && frames.last().is_some_and(|last| {
            (last.starts_with(r#"{"type":"RUN_FINISHED""#)
                && last.contains(r#""outcome":{"type":"success"}"#))
                || last.contains(r#""state":"TASK_STATE_COMPLETED""#)
        })
}

/// One run: its time to the first event, and its whole body (`None`: it failed).
async fn one_run(
    client: &reqwest::Client,
    url: &str,
    body: axum::body::Bytes,
) -> Option<(Duration, Vec<u8>)> {
    let start = Instant::now();
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(body)
        .send()
        .await
        .inspect_err(|error| eprintln!("a run's request failed: {error}"))
        .ok()?;
    if response.status() != 200 {
        eprintln!("a run was answered {}", response.status());
        return None;
    }
    let mut stream = response.bytes_stream();
    let mut bytes = Vec::with_capacity(16 * 1024);
    let mut first = None;
    while let Some(chunk) = stream.next().await {
        bytes.extend_from_slice(
            &chunk
                .inspect_err(|error| eprintln!("a run's stream failed: {error}"))
                .ok()?,
        );
        if first.is_none() && bytes.windows(2).any(|w| w == b"\n\n") {
            first = Some(start.elapsed());
        }
    }
    Some((first?, bytes))
}

struct Load {
    wall: Duration,
    first_p50: Duration,
    first_p99: Duration,
    failed: usize,
    rss_before: f64,
    peak: f64,
    /// The server's CPU time during the load, and the client's (this process).
    cpu: Duration,
    client_cpu: Duration,
}

/// `runs` concurrent runs on `server`, each on a new thread (after 20 to warm it up).
async fn load(client: &reqwest::Client, server: &ChildServer, round: usize, runs: usize) -> Load {
    let warm: Vec<_> = (0..20)
        .map(|i| {
            one_run(
                client,
                server.url(),
                input(server.url(), &format!("warm-{round}-{i}")),
            )
        })
        .collect();
    let warmed = futures::future::join_all(warm).await;
    assert!(
        warmed
            .iter()
            .all(|run| run.as_ref().is_some_and(|(_, body)| complete(body)))
    );
    let (rss_before, _) = memory(server);
    let cpu_before = server.cpu();
    let client_before = cpu_time("self").unwrap();
    let bodies: Vec<_> = (0..runs)
        .map(|i| input(server.url(), &format!("run-{round}-{i}")))
        .collect();
    let start = Instant::now();
    let tasks: Vec<_> = bodies
        .into_iter()
        .map(|body| {
            let (client, url) = (client.clone(), server.url().to_owned());
            tokio::spawn(async move {
                let run = one_run(&client, &url, body).await;
                if let Some((_, body)) = run.as_ref().filter(|(_, body)| !complete(body)) {
                    // What a failed run received, to tell why (its last two frames).
                    let frames = raw_frames(body);
                    let tail = &frames[frames.len().saturating_sub(2)..];
                    eprintln!("incomplete run, {} frames, ending: {tail:?}", frames.len());
                }
                run.filter(|(_, body)| complete(body))
                    .map(|(first, _)| first)
            })
        })
        .collect();
    let mut firsts = Vec::with_capacity(runs);
    let mut failed = 0;
    for task in tasks {
        match task.await.unwrap() {
            Some(first) => firsts.push(first),
            None => failed += 1,
        }
    }
    let wall = start.elapsed();
    let (_, peak) = memory(server);
    let cpu = server.cpu() - cpu_before;
    let client_cpu = cpu_time("self").unwrap() - client_before;
    firsts.sort();
    Load {
        wall,
        first_p50: percentile(&firsts, 50.0).unwrap_or_default(),
        first_p99: percentile(&firsts, 99.0).unwrap_or_default(),
        failed,
        rss_before,
        peak,
        cpu,
        client_cpu,
    }
}

/// Opens `streams` runs on `server` and holds each once it has sent `wanted` frames;
/// returns the server's VmRSS before and with them open (MB), and how many opened.
async fn idle(
    client: &reqwest::Client,
    server: &ChildServer,
    streams: usize,
    wanted: usize,
) -> (f64, f64, usize) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (before, _) = memory(server);
    // At most 256 requests connecting at once (the listener's backlog is 1024).
    let gate = Arc::new(tokio::sync::Semaphore::new(256));
    let counts = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0)));
    let (release, released) = tokio::sync::watch::channel(false);
    let reasons = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let tasks: Vec<_> = (0..streams)
        .map(|i| {
            let (client, url) = (client.clone(), server.url().to_owned());
            let (gate, counts) = (Arc::clone(&gate), Arc::clone(&counts));
            let reasons = Arc::clone(&reasons);
            let mut released = released.clone();
            tokio::spawn(async move {
                let permit = gate.acquire_owned().await.unwrap();
                let opened = async {
                    let response = client
                        .post(&url)
                        .header("content-type", "application/json")
                        .header("A2A-Version", "1.0")
                        .body(input(&url, &format!("idle-{i}")))
                        .send()
                        .await
                        .map_err(|err| format!("request: {err:?}"))?;
                    let status = response.status();
                    let mut stream = response.bytes_stream();
                    let mut bytes = Vec::new();
                    while sse_data(&bytes).len() < wanted {
                        match stream.next().await {
                            Some(Ok(chunk)) => bytes.extend_from_slice(&chunk),
                            Some(Err(err)) => return Err(format!("stream: {err:?}")),
                            None => {
                                return Err(format!(
                                    "{status}: {}",
                                    String::from_utf8_lossy(&bytes)
                                ));
                            }
                        }
                    }
                    Ok(stream)
                }
                .await;
                drop(permit);
                let stream = match opened {
                    Ok(stream) => stream,
                    Err(reason) => {
                        counts.1.fetch_add(1, Ordering::Relaxed);
                        let mut reasons = reasons.lock().unwrap();
                        if reasons.len() < 3 {
                            reasons.push(reason);
                        }
                        return;
                    }
                };
                counts.0.fetch_add(1, Ordering::Relaxed);
                // Held open until released.
                let _ = released.wait_for(|done| *done).await;
                drop(stream);
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(300);
    while counts.0.load(Ordering::Relaxed) + counts.1.load(Ordering::Relaxed) < streams
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Let the server settle (the last stores, the allocator) before reading its memory.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (open, _) = memory(server);
    let opened = counts.0.load(Ordering::Relaxed);
    release.send(true).unwrap();
    for task in tasks {
        let _ = task.await;
    }
    for reason in reasons.lock().unwrap().iter() {
        println!("  a stream that failed: {reason}");
    }
    (before, open, opened)
}

fn fd_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn drive() {
    let runs = env_or("SERVING_RUNS", 1000);
    let streams = env_or("SERVING_IDLE", 10_000);
    let rounds = env_or("SERVING_ROUNDS", 2);
    let only = std::env::var("SERVING_ONLY").unwrap_or_default();
    let modes = std::env::var("SERVING_SERVERS")
        .unwrap_or_else(|_| "floor,async,step,async-pool".to_owned());
    let root = PathBuf::from(format!(
        "/dev/shm/agentscope-serving-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&root).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::builder()
        .pool_idle_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let fresh = |name: &str| {
        let dir = root.join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let _ = std::fs::copy(root.join("frames.json"), dir.join("frames.json"));
        dir
    };

    // The bytes of one run, for the floor: captured from the server, then replayed.
    let capture = |mode: &str| {
        let captured = runtime.block_on(async {
            let server = start(mode, &fresh("capture"));
            for i in 0..3 {
                let body = input(server.url(), &format!("capture-{i}"));
                one_run(&client, server.url(), body).await.unwrap();
            }
            let body = input(server.url(), "captured");
            let (_, body) = one_run(&client, server.url(), body).await.unwrap();
            assert!(complete(&body), "{}", String::from_utf8_lossy(&body));
            raw_frames(&body)
        });
        std::fs::write(
            root.join("frames.json"),
            serde_json::to_vec(&captured).unwrap(),
        )
        .unwrap();
        let bytes: usize = captured.iter().map(|f| f.len() + "\n\n".len()).sum();
        println!(
            "one run: {} events, {bytes} bytes; {TOKENS} tokens {} ms apart and one tool call",
            captured.len(),
            INTERVAL.as_millis()
        );
    };
    let compare = |title: &str, servers: &str| {
        println!("\n{title}: {runs} concurrent runs (JSON threads on /dev/shm), {rounds} rounds");
        println!(
            "{:<6} {:>10} {:>8} {:>9} {:>9} {:>6} {:>7} {:>7} {:>7} {:>8} {:>7} {:>7}",
            "round",
            "server",
            "wall ms",
            "first p50",
            "first p99",
            "failed",
            "rss MB",
            "peak MB",
            "cpu s",
            "client s",
            "wall x",
            "p99 x"
        );
        for round in 0..rounds {
            let mut floor_load = None;
            for mode in servers.split(',') {
                let server = start(mode, &fresh(mode));
                let result = runtime.block_on(load(&client, &server, round, runs));
                drop(server);
                let base = floor_load.as_ref();
                let wall_x = times(result.wall, base.map(|base: &Load| base.wall));
                let p99_x = times(result.first_p99, base.map(|base: &Load| base.first_p99));
                println!(
                    "{:<6} {:>10} {:>8.1} {:>9.2} {:>9.2} {:>6} {:>7.1} {:>7.1} {:>7.2} {:>8.2} {:>7.2} {:>7.2}",
                    round + 1,
                    mode,
                    ms(result.wall),
                    ms(result.first_p50),
                    ms(result.first_p99),
                    result.failed,
                    result.rss_before,
                    result.peak,
                    result.cpu.as_secs_f64(),
                    result.client_cpu.as_secs_f64(),
                    wall_x,
                    p99_x
                );
                if mode.ends_with("floor") {
                    floor_load = Some(result);
                }
            }
        }
    };
    let wants = |part: &str| only.is_empty() || only.split(',').any(|p| p == part);

    if wants("runs") {
        capture("async");
        compare("AG-UI", &modes);
    }
    if wants("a2a") {
        capture("a2a-async");
        compare("A2A SendStreamingMessage", "a2a-floor,a2a-async,a2a-step");
    }

    if wants("idle") {
        // The server holds two descriptors per open run (its connection, and its thread's
        // lock file: the JSON store's lease), the client one per stream.
        let limit = fd_limit().unwrap_or(0) as usize;
        let fits = (limit.saturating_sub(200) / 2).min(streams);
        if fits < streams {
            println!(
                "\nidle streams: {fits} instead of {streams}: the open-file limit is {limit}, and \
                 the server needs two per open run (raise it: ulimit -n {})",
                2 * streams + 200
            );
        }
        let (asked, streams) = (streams, fits);
        {
            // What an idle stream has received: the run's first frames, before the model.
            let wanted = runtime.block_on(async {
                let server = start("idle", &fresh("idle-probe"));
                let response = client
                    .post(server.url())
                    .header("content-type", "application/json")
                    .header("A2A-Version", "1.0")
                    .body(input(server.url(), "probe"))
                    .send()
                    .await
                    .unwrap();
                let mut stream = response.bytes_stream();
                let mut bytes = Vec::new();
                let _ = tokio::time::timeout(Duration::from_millis(500), async {
                    while let Some(Ok(chunk)) = stream.next().await {
                        bytes.extend_from_slice(&chunk);
                    }
                })
                .await;
                raw_frames(&bytes)
            });
            println!(
                "\n{streams} idle streams (each got {} events: {:?}):",
                wanted.len(),
                wanted
                    .iter()
                    .map(|f| f.split('"').nth(3).unwrap_or(""))
                    .collect::<Vec<_>>()
            );
            std::fs::write(
                root.join("frames.json"),
                serde_json::to_vec(&wanted).unwrap(),
            )
            .unwrap();
            for round in 0..rounds {
                for mode in ["floor-idle", "idle"] {
                    let server = start(mode, &fresh(mode));
                    let (before, open, opened) =
                        runtime.block_on(idle(&client, &server, streams, wanted.len()));
                    let per_stream = (open - before) / opened.max(1) as f64;
                    println!(
                        "round {} {:<10} open {opened:>6}  rss before {before:>6.1} MB  with them \
                         open {open:>6.1} MB  per stream {:>5.1} KB  at {asked}: {:>6.1} MB",
                        round + 1,
                        mode,
                        per_stream * 1024.0,
                        before + per_stream * asked as f64
                    );
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}
