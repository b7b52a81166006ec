//! Durability across process boundaries, with real processes: this test binary spawns
//! copies of itself as workers (the ignored test `worker::run`, started with
//! `--ignored --exact worker::run` and a task in the environment), kills them with
//! SIGKILL at random instants, and checks what the session store holds afterwards.
//!
//! - `kill`: a worker resuming an approved tool is killed at random instants (every store:
//!   JSON file, SQLite, Redis, PostgreSQL): the tool never runs twice to completion, no
//!   approval recorded in the session is asked for again, a call found in doubt stops for
//!   the application, and its resolution holds (a retry reaches the tool with the key of
//!   the first attempt, a verified result is what the model reads).
//! - `approvals`: a worker resuming an approved tool under `Step` and under `Async` is
//!   killed at a chosen point (after PreCall, inside the tool, inside a tool that declares
//!   `RunAgain`): a stored decision is never asked for again, and the tool runs once, or
//!   again with the same key when it declares `RunAgain`.
//! - `batch`: a worker running a sequential batch of three tools is killed at random
//!   instants, in each durability mode (every store). `Step` and `Async`: completed
//!   results are kept, unstarted calls run on resume, at most the call running at the kill
//!   is in doubt, and no call runs twice. `Exit`: the session holds all of the call or
//!   nothing of it, and running it again runs its tools again.
//! - `writers`: two worker processes make 100 calls each on one session: every call that
//!   returned `Ok` has its turn stored; every other call was refused as busy by the
//!   session's lease (JSON file and SQLite stores alike) before any hook ran or the model
//!   was asked, with nothing stored, and none failed with a conflict.
//! - `lease`: the SQLite store's lease between processes: a second process is busy before
//!   any hook or model request while a holder runs, a holder killed with SIGKILL frees the
//!   session once its lease expires, and an interrupt from another process stops the
//!   holder.
//! - `dropped`: a stream dropped right after its first tool result; a fresh agent resumes
//!   and the tool does not run again (every store).
//!
//! The Redis and PostgreSQL tests start a server of their own (`stores::Place`); without
//! redis-server or PostgreSQL they are ignored, with the reason (the rule:
//! `agentscope_test::components`; `.ci/run` installs both and runs them).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// Two tests of `$scenario` (an async fn taking a `StoreKind`), with the test attributes
/// given: `$json` on the JSON file store, `$sqlite` on the SQLite store.
macro_rules! on_both_stores {
    ($(#[$test:meta])* $scenario:ident: $json:ident, $sqlite:ident $(,)?) => {
        $(#[$test])*
        async fn $json() {
            $scenario(crate::worker::StoreKind::Json).await;
        }

        $(#[$test])*
        async fn $sqlite() {
            $scenario(crate::worker::StoreKind::Sqlite).await;
        }
    };
}

/// Four tests of `$scenario` (an async fn taking a `StoreKind`), with the test attributes
/// given: `$json`, `$sqlite`, `$redis` and `$postgres` on those stores; the last two are
/// ignored where their server is not installed.
macro_rules! on_every_store {
    (
        $(#[$test:meta])*
        $scenario:ident: $json:ident, $sqlite:ident, $redis:ident, $postgres:ident $(,)?
    ) => {
        on_both_stores! {
            $(#[$test])*
            $scenario: $json, $sqlite
        }

        $(#[$test])*
        #[cfg_attr(not(has_redis), ignore = "redis-server not installed: .ci/run installs it")]
        async fn $redis() {
            $scenario(crate::worker::StoreKind::Redis).await;
        }

        $(#[$test])*
        #[cfg_attr(not(has_postgres), ignore = "PostgreSQL not installed: .ci/run installs it")]
        async fn $postgres() {
            $scenario(crate::worker::StoreKind::Postgres).await;
        }
    };
}

mod approvals;
mod batch;
mod dropped;
mod hook_state;
mod kill;
mod lease;
mod stores;
mod worker;
mod writers;
