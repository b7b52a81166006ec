//! Figures for benchmarks: the [`median`] and [`percentile`]s of a bench's samples, one rule
//! each for every bench (durations and rates alike), so that their figures compare, and the
//! [`cpu_time`] a process used; and what the load benches share: their model
//! ([`working_model`]), their servers in child processes ([`ChildServer`],
//! [`child_ready`]), their knobs ([`env_or`]) and how they read an SSE body ([`sse_data`]).
//!
//! ```
//! use std::time::Duration;
//!
//! use agentscope_test::bench::median;
//!
//! assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
//! assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
//! assert_eq!(
//!     median(vec![Duration::from_millis(10), Duration::from_millis(20)]),
//!     Some(Duration::from_millis(15))
//! );
//! assert_eq!(median(Vec::<f64>::new()), None);
//! ```

#![allow(clippy::expect_used)] // test support: a server that cannot start fails the bench

use std::cmp::Ordering;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use crate::{ScriptedChunk, ScriptedModel, ScriptedResponse};

/// A value a bench samples: ordered, and with a midpoint of two values (what [`median`]
/// needs). Implemented for [`Duration`] and [`f64`].
pub trait Sample: Copy {
    /// The order of two samples (for [`f64`], [`f64::total_cmp`]: NaN sorts after every
    /// number).
    fn order(&self, other: &Self) -> Ordering;
    /// The value halfway between `self` and `other`, where `self <= other`.
    fn midpoint(self, other: Self) -> Self;
}

impl Sample for Duration {
    fn order(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }

    fn midpoint(self, other: Self) -> Self {
        // `self + other` may overflow; `other - self` may not, as `self <= other`.
        self + other.saturating_sub(self) / 2
    }
}

impl Sample for f64 {
    fn order(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }

    fn midpoint(self, other: Self) -> Self {
        (self + other) / 2.0
    }
}

/// The median of `values`: the middle value of an odd count, the mean of the two middle
/// values of an even count (the usual definition); `None` without values.
pub fn median<T: Sample>(mut values: Vec<T>) -> Option<T> {
    values.sort_unstable_by(T::order);
    let mid = values.len() / 2;
    match values.len() % 2 {
        1 => values.get(mid).copied(),
        _ => Some(values.get(mid.checked_sub(1)?)?.midpoint(*values.get(mid)?)),
    }
}

/// The `p`th percentile (0 to 100) of `sorted` (ascending), by the nearest rank: the
/// smallest sample that at least `p` percent of the samples do not exceed. `None` without
/// samples.
///
/// ```
/// use std::time::Duration;
///
/// use agentscope_test::bench::percentile;
///
/// let ms: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
/// assert_eq!(percentile(&ms, 50.0), Some(Duration::from_millis(50)));
/// assert_eq!(percentile(&ms, 99.0), Some(Duration::from_millis(99)));
/// assert_eq!(percentile(&ms, 100.0), Some(Duration::from_millis(100)));
/// assert_eq!(percentile(&ms[..1], 0.0), Some(Duration::from_millis(1)));
/// assert_eq!(percentile::<Duration>(&[], 50.0), None);
/// ```
pub fn percentile<T: Sample>(sorted: &[T], p: f64) -> Option<T> {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len().max(1)) - 1).copied()
}

/// The CPU time (user and system) the process `pid` has used so far, from
/// `/proc/<pid>/stat` (`"self"` for this process); `None` where that cannot be read (not
/// Linux, the process is gone).
pub fn cpu_time(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's closing parenthesis; utime and stime are the 12th and
    // 13th of them, in clock ticks (100 a second on Linux).
    let after = stat.get(stat.rfind(')')? + 2..)?;
    let mut ticks = 0u64;
    for field in after.split_whitespace().skip(11).take(2) {
        ticks += field.parse::<u64>().ok()?;
    }
    Some(Duration::from_millis(ticks * 10))
}

/// How many times `base` `value` is: `value / base`, `1.0` without a base (the base's own
/// row).
///
/// ```
/// use std::time::Duration;
///
/// use agentscope_test::bench::times;
///
/// let base = Duration::from_millis(200);
/// assert_eq!(times(Duration::from_millis(500), Some(base)), 2.5);
/// assert_eq!(times(base, None), 1.0);
/// ```
pub fn times(value: Duration, base: Option<Duration>) -> f64 {
    base.map_or(1.0, |base| value.as_secs_f64() / base.as_secs_f64())
}

/// The model of the load benches' runs: an `echo` tool call (`{"text": "looked up"}`), then
/// an answer of `tokens` tokens (`token0 token1 ...`, a chunk each) `interval` apart, usage
/// 20 in and `tokens` out; over and over (cycling), keeping no requests.
///
/// ```
/// use std::time::Duration;
///
/// use agentscope_test::bench::working_model;
///
/// let model = working_model(50, Duration::from_millis(10));
/// # drop(model);
/// ```
pub fn working_model(tokens: usize, interval: Duration) -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::tool_call("call_1", "echo", serde_json::json!({"text": "looked up"})),
        ScriptedResponse::chunks((0..tokens).map(|i| ScriptedChunk::text(format!("token{i} "))))
            .with_chunk_interval(interval)
            .with_usage(20, tokens as u64),
    ])
    .cycling()
    .without_recording()
}

/// A server in a child process: a copy of this bench binary started with some environment
/// variables (which tell its `main` to serve, see [`child_ready`]); its URL is the first
/// line it prints. Dropping it closes the child's stdin, which stops it (killed if it has
/// not stopped 200 ms later).
#[derive(Debug)]
pub struct ChildServer {
    child: Child,
    stdin: Option<ChildStdin>,
    url: String,
}

impl ChildServer {
    /// Starts this binary with the environment variables `envs` and waits for its URL.
    ///
    /// # Panics
    ///
    /// When the process cannot be started or prints nothing (this is bench support).
    pub fn start<K, V>(envs: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        let exe = std::env::current_exe().expect("the bench binary's path");
        let mut child = Command::new(exe)
            .envs(envs)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting a server process");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("the server's stdout"))
            .read_line(&mut line)
            .expect("reading the server's URL");
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            url: line.trim().to_owned(),
        }
    }

    /// The URL the server printed.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The CPU time (user and system) the server has used so far ([`cpu_time`]).
    ///
    /// # Panics
    ///
    /// When `/proc/<pid>/stat` cannot be read (not Linux, the server is gone).
    pub fn cpu(&self) -> Duration {
        cpu_time(&self.pid().to_string()).expect("the server's /proc/<pid>/stat")
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if self.child.try_wait().ok().flatten().is_none() {
            std::thread::sleep(Duration::from_millis(200));
            if self.child.try_wait().ok().flatten().is_none() {
                let _ = self.child.kill();
            }
        }
        let _ = self.child.wait();
    }
}

/// The child's side of a [`ChildServer`], once it listens: prints `url` (the line
/// [`ChildServer::start`] waits for) and exits the process as soon as its stdin closes
/// (the driver dropped it, or died).
///
/// # Panics
///
/// When stdout cannot be written (this is bench support).
pub fn child_ready(url: &str) {
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        std::process::exit(0);
    });
    println!("{url}");
    std::io::stdout().flush().expect("writing the server's URL");
}

/// The environment variable `name` as a number, `default` when it is not set or not a
/// number: a bench's knob.
pub fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// The data of each event of an SSE `body` (its `data: ` line; events without one, such as
/// keep-alive comments, left out).
///
/// ```
/// use agentscope_test::bench::sse_data;
///
/// assert_eq!(sse_data(b"id: 1\ndata: {}\n\n: ping\n\ndata: [DONE]\n\n"), ["{}", "[DONE]"]);
/// ```
pub fn sse_data(body: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(body)
        .split("\n\n")
        .filter_map(|frame| frame.lines().find_map(|line| line.strip_prefix("data: ")))
        .map(str::to_owned)
        .collect()
}
