//! The `concurrency` bench (with the system allocator) and `concurrency_mimalloc` (with
//! mimalloc, as an application would choose it): 10,000 agents each running a two-step call (a tool call, then an answer)
//! concurrently on a multi-thread runtime, with a scripted model that sleeps 10 ms per
//! response. Reports wall time (criterion) next to the latency of one call alone; then a
//! summary, in one run: for 10,000 concurrent calls (5 rounds, medians and each round's
//! ratios) and 100,000 (1 round), one call alone, the tokio floor for as many tasks (each
//! sleeping 10 ms twice) and the calls, measured in turn in each round, the ratios to both,
//! the peak resident memory (VmHWM, reset before the rounds), and the CPU time a call takes
//! in flight against the same calls made one after another without the model's delay. The timed region is the calls: the agents are built before it and dropped after
//! it (building and dropping 10,000 agents is not a call's latency). The agents share one
//! model, as a service's agents share one provider client: it answers a conversation that
//! ends in a tool result with "done", and any other with the tool call.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentscope::prelude::*;
use agentscope_core::{ChatStream, Model, ModelError, ModelRequest};
use agentscope_test::bench::median;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use criterion::{Criterion, criterion_group};
use serde_json::json;

const AGENTS: usize = 10_000;
const DELAY: Duration = Duration::from_millis(10);

/// One toolkit for all agents, as a service would share it (a clone is a few reference
/// counts; each tool's schema is compiled once).
fn toolkit() -> Toolkit {
    static TOOLKIT: std::sync::OnceLock<Toolkit> = std::sync::OnceLock::new();
    TOOLKIT
        .get_or_init(|| {
            let echo = tool_fn(
                "echo",
                "Echoes text.",
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
                |input, _ctx| async move { Ok(input["text"].as_str().unwrap_or_default().to_owned()) },
            );
            Toolkit::new().tool(echo)
        })
        .clone()
}

/// The model all agents share: it answers after its responses' delay, with the `echo` tool
/// call to a conversation that does not end in a tool result, and with "done" to one that
/// does (each answer a scripted response replayed, one script per answer).
struct SharedModel {
    tool_call: ScriptedModel,
    answer: ScriptedModel,
}

impl SharedModel {
    fn new(delay: Duration) -> Arc<Self> {
        let script = |response: ScriptedResponse| {
            ScriptedModel::new([response.with_delay(delay)])
                .cycling()
                .without_recording()
        };
        Arc::new(Self {
            tool_call: script(ScriptedResponse::tool_call(
                "c1",
                "echo",
                json!({"text": "pong"}),
            )),
            answer: script(ScriptedResponse::text("done")),
        })
    }
}

impl Model for SharedModel {
    fn model_name(&self) -> &str {
        "shared"
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChatStream, ModelError> {
        match request.messages.last().is_some_and(Msg::has_tool_results) {
            true => self.answer.stream(request).await,
            false => self.tool_call.stream(request).await,
        }
    }
}

/// An agent on `model`: a tool call, then "done".
fn agent(model: &Arc<SharedModel>) -> Arc<ReActAgent> {
    let agent = ReActAgent::builder()
        .sys_prompt("You are one of many.")
        .model(Arc::clone(model))
        .toolkit(toolkit())
        .build()
        .unwrap();
    Arc::new(agent)
}

fn build_agents(count: usize, delay: Duration) -> Vec<Arc<ReActAgent>> {
    let model = SharedModel::new(delay);
    (0..count).map(|_| agent(&model)).collect()
}

/// One call on each agent, all at once, each in its own task.
async fn run_all(agents: &[Arc<ReActAgent>]) {
    let handles: Vec<_> = agents
        .iter()
        .map(|agent| {
            let agent = Arc::clone(agent);
            tokio::spawn(async move { agent.call(Msg::user("ping")).await })
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.await.unwrap().unwrap().text(), "done");
    }
}

/// One call on each agent, one after another.
async fn run_each(agents: &[Arc<ReActAgent>]) {
    for agent in agents {
        assert_eq!(agent.call(Msg::user("ping")).await.unwrap().text(), "done");
    }
}

/// The CPU time this process has used (Linux `/proc/self/stat`, 10 ms resolution).
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat
        .get(stat.rfind(')')? + 2..)?
        .split_whitespace()
        .collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// Resets the peak resident set size (Linux: `echo 5 > /proc/self/clear_refs`).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peak resident set size in MiB since the last reset (Linux `VmHWM`).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("concurrency");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("one_agent", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let agents = build_agents(1, DELAY);
                let start = Instant::now();
                runtime.block_on(run_all(&agents));
                total += start.elapsed();
            }
            total
        });
    });
    group.bench_function("agents_10000", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let agents = build_agents(AGENTS, DELAY);
                let start = Instant::now();
                runtime.block_on(run_all(&agents));
                total += start.elapsed();
            }
            total
        });
    });
    group.finish();

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "\nconcurrency summary, {} (each round: one call alone, the floor, then the calls)",
        crate::ALLOCATOR
    );
    for (count, rounds) in [(AGENTS, ROUNDS), (10 * AGENTS, 1)] {
        reset_peak_rss();
        let before = peak_rss_mib();
        let mut measured = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let single = {
                let agents = build_agents(1, DELAY);
                let start = Instant::now();
                runtime.block_on(run_all(&agents));
                start.elapsed()
            };
            let floor = {
                let start = Instant::now();
                runtime.block_on(sleep_twice(count));
                start.elapsed()
            };
            let agents = build_agents(count, DELAY);
            let cpu_before = cpu_time();
            let start = Instant::now();
            runtime.block_on(run_all(&agents));
            let wall = start.elapsed();
            let cpu = cpu_time()
                .zip(cpu_before)
                .map(|(after, before)| after - before);
            drop(agents);
            measured.push(Round {
                single,
                floor,
                wall,
                cpu,
            });
        }
        let serial_cpu = {
            let agents = build_agents(count, Duration::ZERO);
            let before = cpu_time();
            runtime.block_on(run_each(&agents));
            cpu_time().zip(before).map(|(after, before)| after - before)
        };
        let per_call = |cpu: Option<Duration>| {
            cpu.map_or("n/a".to_owned(), |cpu| {
                format!("{:.1} us", cpu.as_secs_f64() * 1e6 / count as f64)
            })
        };
        let cpu = median(measured.iter().filter_map(|round| round.cpu).collect());
        println!(
            "{count} calls: CPU per call {} in flight, {} one after another (no model delay)",
            per_call(cpu),
            per_call(serial_cpu),
        );
        let to_single: Vec<f64> = measured.iter().map(Round::to_single).collect();
        let to_floor: Vec<f64> = measured.iter().map(Round::to_floor).collect();
        let list = |ratios: &[f64]| {
            ratios
                .iter()
                .map(|ratio| format!("{ratio:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let median_ms = |pick: fn(&Round) -> Duration| {
            median(measured.iter().map(pick).collect()).map_or(0.0, ms)
        };
        println!(
            "{count} concurrent calls {:.1} ms = {:.2}x one call ({:.1} ms); tokio floor ({count} tasks sleeping twice) {:.1} ms, {:.2}x it; medians of {rounds} round(s), ratios per round: [{}] one call, [{}] floor; peak RSS {} MiB (at start of run {} MiB)",
            median_ms(|round| round.wall),
            median(to_single.clone()).unwrap_or(f64::NAN),
            median_ms(|round| round.single),
            median_ms(|round| round.floor),
            median(to_floor.clone()).unwrap_or(f64::NAN),
            list(&to_single),
            list(&to_floor),
            peak_rss_mib().map_or("n/a".to_owned(), |m| format!("{m:.1}")),
            before.map_or("n/a".to_owned(), |m| format!("{m:.1}")),
        );
    }
}

/// Rounds of the summary at 10,000 calls (one at 100,000): a single round moves by a
/// quarter on a shared machine.
const ROUNDS: usize = 5;

/// One round of the summary.
struct Round {
    single: Duration,
    floor: Duration,
    wall: Duration,
    cpu: Option<Duration>,
}

impl Round {
    fn to_single(&self) -> f64 {
        self.wall.as_secs_f64() / self.single.as_secs_f64()
    }

    fn to_floor(&self) -> f64 {
        self.wall.as_secs_f64() / self.floor.as_secs_f64()
    }
}

/// The runtime's floor: `count` tasks that each sleep [`DELAY`] twice, like a call's two
/// model steps.
async fn sleep_twice(count: usize) {
    let handles: Vec<_> = (0..count)
        .map(|_| {
            tokio::spawn(async {
                tokio::time::sleep(DELAY).await;
                tokio::time::sleep(DELAY).await;
            })
        })
        .collect();
    for handle in handles {
        handle.await.unwrap();
    }
}

criterion_group!(benches, bench);
