//! Two instances of a service share one conversation on Redis: instance A (this process)
//! and instance B (a second process, this example started again) take turns, a call on a
//! session that the other instance is running is refused as busy, and one instance
//! interrupts the other's call.
//!
//! ```sh
//! cargo run -p agentscope-example-two-instances --example two_instances                                # starts a local redis-server
//! REDIS_URL=redis://127.0.0.1:6379 cargo run -p agentscope-example-two-instances --example two_instances   # or uses yours
//! ```
//!
//! Offline: each instance's model is a built-in demo model (a `ScriptedModel`, labelled),
//! whatever the environment says, and the first line says so: the point is the store, the
//! lease and the interrupt (all real), which need a call that is sure to be running a slow
//! tool when the other instance arrives. Without `REDIS_URL` the example starts
//! `redis-server` on a free port of 127.0.0.1 (Debian: `apt-get install redis-server`), and
//! says so and exits when it is not installed. See `docs/scaling.md`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope::session::SessionStore;
use agentscope_redis::RedisSessionStore;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

const SESSION: &str = "support-chat-42";

/// A tool that takes its time (or until the call is interrupted).
fn research_tool() -> impl Tool {
    tool_fn(
        "research",
        "Looks something up (slowly).",
        json!({"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}),
        |_input, ctx| async move {
            let sleep = std::pin::pin!(tokio::time::sleep(Duration::from_secs(30)));
            match futures::future::select(sleep, ctx.cancelled()).await {
                futures::future::Either::Left(_) => Ok("found it".to_owned()),
                futures::future::Either::Right(_) => Err(ToolError::Cancelled),
            }
        },
    )
}

/// The built-in demo model (not a language model): it plays `responses` in order.
fn demo_model(responses: impl IntoIterator<Item = ScriptedResponse>) -> ScriptedModel {
    ScriptedModel::new(responses).with_name("demo-model (offline, scripted)")
}

/// Instance `name`'s agent on the shared session, answering with `model`.
async fn instance(url: &str, name: &str, model: ScriptedModel) -> ReActAgent {
    // Each instance connects on its own, as separate service processes do.
    let store = RedisSessionStore::connect(url).await.unwrap();
    ReActAgent::builder()
        .name(name)
        .model(model)
        .toolkit(Toolkit::new().tool(research_tool()))
        .session(store, SESSION)
        .build()
        .unwrap()
}

/// Instance B's side: one request, given on the command line.
async fn instance_b(url: &str, request: &str) {
    let pid = std::process::id();
    match request {
        "turn" => {
            let model = demo_model([ScriptedResponse::text("Your order is #1234, Alice.")]);
            let b = instance(url, "instance-b", model.clone()).await;
            let reply = b.call("What was my order number again?").await.unwrap();
            let seen = model.requests()[0].messages.len();
            println!("  [B, pid {pid}] the model saw all {seen} messages of the conversation");
            println!("  [B] user: What was my order number again?");
            println!("  [B] assistant: {}", reply.text());
        }
        "busy-then-interrupt" => {
            let b = instance(url, "instance-b", demo_model([])).await;
            match b.call("Are you there?").await {
                Err(AgentError::Busy) => {
                    println!("  [B, pid {pid}] call refused at once: the session is busy on A")
                }
                other => println!("  [B] unexpected: {other:?}"),
            }
            let found = b.interrupt_session().await.unwrap();
            println!("  [B] interrupt_session() -> found a running call: {found}");
        }
        other => eprintln!("unknown request {other}"),
    }
}

/// Runs instance B in a process of its own for one request, and waits for it.
fn run_b(url: &str, request: &str) {
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--instance-b", url, request])
        .status()
        .unwrap();
    assert!(status.success(), "instance B failed");
}

#[tokio::main]
async fn main() -> ExitCode {
    support::run(example()).await
}

async fn example() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, url, request] = &args[..]
        && flag == "--instance-b"
    {
        instance_b(url, request).await;
        return Ok(());
    }
    support::scripted(
        "both instances' models are scripted stand-ins (not language models), so that \
         instance A is surely running a slow tool when instance B calls and interrupts it",
    );
    let (url, _server) = match std::env::var("REDIS_URL") {
        Ok(url) => (url, None),
        Err(_) => match LocalRedis::start() {
            Some(server) => (server.url(), Some(server)),
            None => return Ok(()),
        },
    };
    // Start from an empty conversation.
    RedisSessionStore::connect(&url)
        .await?
        .delete(SESSION)
        .await?;

    println!("1. Instance A takes the first turn.");
    let model_a = demo_model([ScriptedResponse::text(
        "Thanks, Alice. I have noted order #1234.",
    )]);
    let a = instance(&url, "instance-a", model_a.clone()).await;
    let reply = a.call("Hi, I'm Alice; my order #1234 is late.").await?;
    println!(
        "  [A, pid {}] user: Hi, I'm Alice; my order #1234 is late.",
        std::process::id()
    );
    println!("  [A] assistant: {}", reply.text());

    println!("\n2. The next turn lands on instance B (another process).");
    run_b(&url, "turn");

    println!("\n3. A runs a long call; B's call on the session is busy, and B interrupts A.");
    model_a.push(ScriptedResponse::tool_call(
        "call_1",
        "research",
        json!({"topic": "shipping delays"}),
    ));
    model_a.push(ScriptedResponse::text(
        "(never said: the call is interrupted)",
    ));
    let long_call = {
        let a = a.clone();
        tokio::spawn(async move { a.call("Why is it late? Please look into it.").await })
    };
    // Wait until A's tool runs (A stores that before the tool starts).
    let store = RedisSessionStore::connect(&url).await?;
    while store
        .load(SESSION)
        .await?
        .is_none_or(|state| state.running_tools.is_empty())
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("  [A] researching...");
    let started = Instant::now();
    run_b(&url, "busy-then-interrupt");
    let reply = long_call.await??;
    println!(
        "  [A] interrupted {:?} after B started: assistant: {}",
        started.elapsed(),
        reply.text()
    );

    println!("\n4. The conversation as stored in Redis (any instance can continue it):");
    let state = store.load(SESSION).await?.expect("stored");
    for msg in &state.messages {
        let said = match (msg.tool_uses().first(), msg.tool_results().first()) {
            (Some(call), _) => format!("calls {}({})", call.name, call.input),
            (_, Some(result)) => format!("{} -> {}", result.name, result.text_output()),
            _ => msg.text(),
        };
        println!(
            "  {:<9} {:<11} {said}",
            msg.role.as_str(),
            msg.name.as_str()
        );
    }
    println!(
        "  (revision {}, {} messages)",
        state.revision,
        state.messages.len()
    );
    Ok(())
}

/// A `redis-server` this example starts on a free port of 127.0.0.1 (no persistence),
/// stopped when dropped.
struct LocalRedis {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl LocalRedis {
    fn start() -> Option<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .ok()?;
        let dir = std::env::temp_dir().join(format!("two-instances-redis-{port}"));
        std::fs::create_dir_all(&dir).ok()?;
        let spawned = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .spawn();
        let Ok(child) = spawned else {
            println!("This example needs Redis: set REDIS_URL, or install redis-server");
            println!("(Debian/Ubuntu: `apt-get install redis-server`) and run it again.");
            return None;
        };
        let server = Self { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                println!("redis-server did not start on port {port}.");
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        println!("(started redis-server on 127.0.0.1:{port})\n");
        Some(server)
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for LocalRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
