//! `instances`: A2A `SendStreamingMessage` tasks served by three server processes behind one
//! PostgreSQL, against the same tasks on one process (issue 42, point 4).
//!
//! - **The tasks.** 1,000 concurrent streamed tasks, each in a new context: the user says
//!   "Hi", the scripted model calls the `echo` tool (one chunk), then answers in 50 tokens
//!   10 ms apart (the serving bench's run). The agent keeps the default durability (every
//!   save written before the call goes on) on a `PostgresSessionStore` (its default pool of
//!   16 connections per process, leases of 30 s) on one PostgreSQL server the bench starts
//!   (`agentscope_test::components::postgres`: `fsync=off`, on this machine).
//! - **Three instances**: three server processes (copies of this binary), the client sending
//!   task `i` to instance `i % 3` (round robin). **One instance**: one such process takes
//!   all 1,000. The same client, the same tasks, measured in turn in the same run, round
//!   after round, each measurement on fresh processes and emptied tables.
//! - **Reported**: the wall time from the first request to the last task's end, each task's
//!   time to its first event (from its request to its first complete SSE frame; p50, p99),
//!   the failed tasks (not `200`, a transport error, or a stream whose text deltas do not
//!   spell the whole answer or that does not end `TASK_STATE_COMPLETED` with it: there must
//!   be none), and the CPU time the server processes and the client used during the load.
//!
//! Run: `cargo bench -p agentscope-a2a --bench instances`. Knobs (environment):
//! `INSTANCES_TASKS` (1000), `INSTANCES_ROUNDS` (2), `INSTANCES_POOL` (the store's
//! connections per process, 16).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope_a2a::A2a;
use agentscope_postgres::PostgresSessionStore;
use agentscope_test::bench::{
    ChildServer, child_ready, cpu_time, env_or, percentile, sse_data, times, working_model,
};
use agentscope_test::components::postgres::PostgresServer;
use agentscope_test::tools::EchoTool;
use futures::StreamExt;

/// The model's tokens per answer, and the time between two of them.
const TOKENS: usize = 50;
const INTERVAL: Duration = Duration::from_millis(10);
/// The environment variable that makes this binary a server: the store's URL.
const CHILD: &str = "AGENTSCOPE_INSTANCES_CHILD";
/// How a status update carrying model text is marked.
const TEXT_DELTA: &str = r#""agentscope.kind":"text_delta""#;

fn main() {
    if let Ok(url) = std::env::var(CHILD) {
        serve_child(&url);
        return;
    }
    drive();
}

// ---------------------------------------------------------------------------------------
// A server (in a child process)
// ---------------------------------------------------------------------------------------

/// Serves `assistant` over A2A on the PostgreSQL store at `url`, printing its A2A URL, until
/// its stdin closes.
fn serve_child(url: &str) {
    let pool = env_or("INSTANCES_POOL", 16);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = PostgresSessionStore::builder(url)
            .max_connections(pool)
            .connect()
            .await
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        // Built once: a clone shares the tools' compiled argument schemas.
        let toolkit = Toolkit::new().tool(EchoTool::new());
        let model = working_model(TOKENS, INTERVAL);
        let a2a = A2a::builder()
            .agent(move || {
                ReActAgent::builder()
                    .name("assistant")
                    .model(model.fork())
                    .toolkit(toolkit.clone())
            })
            .url(format!("{base}/a2a"))
            .store(store)
            .build()
            .unwrap();
        let app = axum::Router::new().nest("/a2a", a2a.router());
        // The server stops when the driver closes its stdin.
        child_ready(&format!("{base}/a2a"));
        axum::serve(listener, app).await.unwrap();
    });
}

// ---------------------------------------------------------------------------------------
// The driver (the client)
// ---------------------------------------------------------------------------------------

/// A `SendStreamingMessage` (JSON-RPC) saying "Hi" in a new context `context`.
fn request(context: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": format!("{context}-m"),
                               "contextId": context, "parts": [{"text": "Hi"}]}}}))
    .unwrap()
}

/// Whether a task's stream is complete: its text deltas spell the whole answer (deltas the
/// model had ready at once come merged in one update), then the task completed with it.
fn complete(body: &[u8]) -> bool {
    let answer: String = (0..TOKENS).map(|i| format!("token{i} ")).collect();
    let text = |frame: &str| -> Option<String> {
        let value: serde_json::Value = serde_json::from_str(frame).ok()?;
        let parts = value["result"]["statusUpdate"]["status"]["message"]["parts"].as_array()?;
        Some(
            parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect(),
        )
    };
    let frames = sse_data(body);
    let streamed: String = frames
        .iter()
        .filter(|frame| frame.contains(TEXT_DELTA))
        .filter_map(|frame| text(frame))
        .collect();
    streamed == answer
        && frames.last().is_some_and(|last| {
            last.contains(r#""state":"TASK_STATE_COMPLETED""#)
                && text(last).as_deref() == Some(answer.as_str())
        })
}

/// One task: its time to the first event, or why it failed.
async fn one_task(client: &reqwest::Client, url: &str, body: Vec<u8>) -> Result<Duration, String> {
    let start = Instant::now();
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(body)
        .send()
        .await
        .map_err(|error| format!("the request failed: {error}"))?;
    if response.status() != 200 {
        return Err(format!("answered {}", response.status()));
    }
    let mut stream = response.bytes_stream();
    let mut bytes = Vec::with_capacity(16 * 1024);
    let mut first = None;
    while let Some(chunk) = stream.next().await {
        bytes.extend_from_slice(&chunk.map_err(|error| format!("the stream failed: {error}"))?);
        if first.is_none() && bytes.windows(2).any(|w| w == b"\n\n") {
            first = Some(start.elapsed());
        }
    }
    match (first, complete(&bytes)) {
        (Some(first), true) => Ok(first),
        _ => {
            let frames = sse_data(&bytes);
            let tail = &frames[frames.len().saturating_sub(2)..];
            Err(format!(
                "incomplete, {} frames, ending {tail:?}",
                frames.len()
            ))
        }
    }
}

#[derive(Clone, Copy)]
struct Load {
    /// Connections the kernel dropped because a listener's accept queue was full, during
    /// the load (all listeners of the machine: `TcpExtListenOverflows`); a dropped
    /// connection is tried again after a second or more, which shows in the first event.
    overflows: u64,
    wall: Duration,
    first_p50: Duration,
    first_p99: Duration,
    failed: usize,
    /// The servers' CPU time during the load, and the client's (this process).
    cpu: Duration,
    client_cpu: Duration,
}

/// `tasks` concurrent tasks, task `i` on server `i % servers.len()` (after 20 a server to
/// warm them up).
async fn load(
    client: &reqwest::Client,
    servers: &[ChildServer],
    label: &str,
    tasks: usize,
) -> Load {
    let warm: Vec<_> = (0..20 * servers.len())
        .map(|i| {
            let url = servers[i % servers.len()].url();
            one_task(client, url, request(&format!("warm-{label}-{i}")))
        })
        .collect();
    for warmed in futures::future::join_all(warm).await {
        warmed.unwrap();
    }
    let cpu_before: Duration = servers.iter().map(ChildServer::cpu).sum();
    let client_before = cpu_time("self").unwrap();
    let overflows_before = listen_overflows();
    let requests: Vec<_> = (0..tasks)
        .map(|i| {
            (
                servers[i % servers.len()].url().to_owned(),
                request(&format!("{label}-{i}")),
            )
        })
        .collect();
    let start = Instant::now();
    let running: Vec<_> = requests
        .into_iter()
        .map(|(url, body)| {
            let client = client.clone();
            tokio::spawn(async move { one_task(&client, &url, body).await })
        })
        .collect();
    let mut firsts = Vec::with_capacity(tasks);
    let mut failed = 0;
    for task in running {
        match task.await.unwrap() {
            Ok(first) => firsts.push(first),
            Err(reason) => {
                if failed < 3 {
                    eprintln!("a failed task: {reason}");
                }
                failed += 1;
            }
        }
    }
    let wall = start.elapsed();
    let overflows = listen_overflows() - overflows_before;
    let cpu = servers.iter().map(ChildServer::cpu).sum::<Duration>() - cpu_before;
    let client_cpu = cpu_time("self").unwrap() - client_before;
    firsts.sort();
    Load {
        overflows,
        wall,
        first_p50: percentile(&firsts, 50.0).unwrap_or_default(),
        first_p99: percentile(&firsts, 99.0).unwrap_or_default(),
        failed,
        cpu,
        client_cpu,
    }
}

/// The machine's count of connections dropped on a full accept queue
/// (`TcpExt: ListenOverflows` in `/proc/net/netstat`).
fn listen_overflows() -> u64 {
    let netstat = std::fs::read_to_string("/proc/net/netstat").unwrap_or_default();
    let mut tcp_ext = netstat.lines().filter(|line| line.starts_with("TcpExt:"));
    let (Some(names), Some(values)) = (tcp_ext.next(), tcp_ext.next()) else {
        return 0;
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(name, _)| *name == "ListenOverflows")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn drive() {
    let tasks = env_or("INSTANCES_TASKS", 1000);
    let rounds = env_or("INSTANCES_ROUNDS", 2);
    let Some(postgres) = PostgresServer::start() else {
        println!("instances: PostgreSQL is not installed; nothing measured");
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::builder()
        .pool_idle_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    println!(
        "A2A SendStreamingMessage: {tasks} concurrent tasks ({TOKENS} tokens {} ms apart and \
         one tool call each), on one PostgreSQL ({} connections a process); {rounds} rounds",
        INTERVAL.as_millis(),
        env_or("INSTANCES_POOL", 16)
    );
    println!(
        "{:<6} {:>10} {:>9} {:>9} {:>9} {:>6} {:>9} {:>7} {:>8} {:>7} {:>7}",
        "round",
        "instances",
        "wall ms",
        "first p50",
        "first p99",
        "failed",
        "overflows",
        "cpu s",
        "client s",
        "wall x",
        "p99 x"
    );
    let mut failed = 0;
    let mut measured: [Vec<Load>; 2] = [Vec::new(), Vec::new()];
    for round in 0..rounds {
        let mut one = None;
        for count in [1, 3] {
            postgres.psql(
                "DO $$ BEGIN IF to_regclass('public.agentscope_session_states') IS NOT NULL THEN \
                 TRUNCATE agentscope_session_states, agentscope_session_messages, \
                 agentscope_session_leases; END IF; END $$",
            );
            let servers: Vec<ChildServer> = (0..count)
                .map(|_| ChildServer::start([(CHILD, postgres.url())]))
                .collect();
            let label = format!("r{round}-x{count}");
            let result = runtime.block_on(load(&client, &servers, &label, tasks));
            drop(servers);
            failed += result.failed;
            let base = one.as_ref();
            let wall_x = times(result.wall, base.map(|base: &Load| base.wall));
            let p99_x = times(result.first_p99, base.map(|base: &Load| base.first_p99));
            println!(
                "{:<6} {:>10} {:>9.1} {:>9.2} {:>9.2} {:>6} {:>9} {:>7.2} {:>8.2} {:>7.2} {:>7.2}",
                round + 1,
                count,
                ms(result.wall),
                ms(result.first_p50),
                ms(result.first_p99),
                result.failed,
                result.overflows,
                result.cpu.as_secs_f64(),
                result.client_cpu.as_secs_f64(),
                wall_x,
                p99_x
            );
            if count == 1 {
                one = Some(result);
            }
            measured[usize::from(count == 3)].push(result);
        }
    }
    for (name, loads) in ["one instance", "three instances"]
        .iter()
        .zip(&mut measured)
    {
        let median = |loads: &[Load], key: fn(&Load) -> Duration| {
            let mut values: Vec<Duration> = loads.iter().map(key).collect();
            values.sort();
            ms(values[values.len() / 2])
        };
        println!(
            "median of {rounds} rounds, {name}: wall {:.0} ms, first event p50 {:.0} ms, p99 {:.0} ms",
            median(loads, |load| load.wall),
            median(loads, |load| load.first_p50),
            median(loads, |load| load.first_p99),
        );
    }
    assert_eq!(failed, 0, "tasks failed");
}
