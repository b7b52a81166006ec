//! RedisSessionStore against a real `redis-server`: the key layout, prefix isolation, TTLs,
//! listing among many other keys without `KEYS` or `SCAN`, a step sending only the change,
//! racing saves, the script cache, damaged data and a server that goes away; the recency
//! index `list_recent` pages through.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use agentscope::prelude::*;
use agentscope::session::{
    AgentIdentity, AgentState, SessionError, SessionStore, SessionSummary, StateChange,
};
use agentscope_redis::{RedisFailure, RedisSessionStore};
use agentscope_test::messages::texts;
use redis::AsyncCommands;
use support::{Connect, RedisServer};
use tokio::sync::Barrier;

fn agent() -> AgentIdentity {
    AgentIdentity::new("assistant", "a1")
}

/// `INFO <section>` as a map.
async fn info(
    raw: &mut redis::aio::MultiplexedConnection,
    section: &str,
) -> BTreeMap<String, String> {
    let text: String = redis::cmd("INFO")
        .arg(section)
        .query_async(raw)
        .await
        .unwrap();
    text.lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn keys_hold_the_state_as_documented() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = server.store().await;
    let mut raw = server.raw().await;
    let state = AgentState::new(agent(), vec![Msg::user("hi"), Msg::assistant("Hello!")])
        .with_metadata_entry("user", "alice");
    assert_eq!(
        store
            .save("chat-1", &StateChange::replace(&state))
            .await
            .unwrap(),
        1
    );

    assert_eq!(
        store.state_key("chat-1").unwrap(),
        "agentscope:{chat-1}:state"
    );
    assert_eq!(
        store.messages_key("chat-1").unwrap(),
        "agentscope:{chat-1}:messages"
    );
    assert_eq!(store.index_key().as_deref(), Some("agentscope:sessions"));
    let hash: BTreeMap<String, String> = raw.hgetall("agentscope:{chat-1}:state").await.unwrap();
    assert_eq!(hash["revision"], "1");
    assert_eq!(hash["version"], "1");
    assert_eq!(hash["messages"], "2");
    assert_eq!(hash["agent"], r#"{"name":"assistant","id":"a1"}"#);
    assert_eq!(hash["metadata"], r#"{"user":"alice"}"#);
    assert_eq!(hash["running_tools"], "[]");
    assert_eq!(hash["hooks"], "{}");
    let list: Vec<String> = raw
        .lrange("agentscope:{chat-1}:messages", 0, -1)
        .await
        .unwrap();
    assert_eq!(list.len(), 2);
    let first: Msg = serde_json::from_str(&list[0]).unwrap();
    assert_eq!(first, state.messages[0]);
    let index: Vec<(String, String)> = redis::cmd("ZRANGE")
        .arg("agentscope:sessions")
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(index, [("chat-1".to_owned(), "inf".to_owned())]);
    assert_eq!(store.key_prefix(), "agentscope:");
    assert!(!store.is_cluster());

    // Delete removes every key of the session and its index entry.
    assert!(store.delete("chat-1").await.unwrap());
    let left: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
    assert!(!store.delete("chat-1").await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn key_prefixes_isolate_tenants() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let a = RedisSessionStore::builder(server.url())
        .key_prefix("tenant-a:")
        .connect()
        .await
        .unwrap();
    let b = a.with_key_prefix("tenant-b:").unwrap();
    let default = server.store().await;
    for (store, text) in [(&a, "from a"), (&b, "from b"), (&default, "default")] {
        let state = AgentState::new(agent(), vec![Msg::user(text)]);
        store
            .save("chat", &StateChange::replace(&state))
            .await
            .unwrap();
        store
            .save(
                text.replace(' ', "-").as_str(),
                &StateChange::replace(&state),
            )
            .await
            .unwrap();
    }
    assert_eq!(a.list().await.unwrap(), ["chat", "from-a"]);
    assert_eq!(b.list().await.unwrap(), ["chat", "from-b"]);
    assert_eq!(default.list().await.unwrap(), ["chat", "default"]);
    let text_of = |state: Option<AgentState>| texts(&state.unwrap().messages);
    assert_eq!(text_of(a.load("chat").await.unwrap()), ["from a"]);
    assert_eq!(text_of(b.load("chat").await.unwrap()), ["from b"]);
    assert_eq!(a.load("from-b").await.unwrap(), None);

    // A save to one tenant's session does not see the other's revision.
    let step = StateChange::new(1, 1, vec![Msg::assistant("a again")], agent());
    assert_eq!(a.save("chat", &step).await.unwrap(), 2);
    assert_eq!(b.load("chat").await.unwrap().unwrap().revision, 1);
    assert!(b.delete("chat").await.unwrap());
    assert_eq!(a.load("chat").await.unwrap().unwrap().revision, 2);
    assert_eq!(b.list().await.unwrap(), ["from-b"]);

    // Braces would break the hash tag.
    let error = a.with_key_prefix("x{y}:").unwrap_err();
    assert!(
        error.to_string().contains("must not hold '{' or '}'"),
        "{error}"
    );
    let error = RedisSessionStore::builder(server.url())
        .key_prefix("{all}:")
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(error, SessionError::Backend { .. }), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn ttl_is_set_refreshed_and_removed() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let mut raw = server.raw().await;
    let store = RedisSessionStore::builder(server.url())
        .ttl(Duration::from_secs(60))
        .connect()
        .await
        .unwrap();
    assert_eq!(store.ttl(), Some(Duration::from_secs(60)));
    let state = AgentState::new(agent(), vec![Msg::user("hi")]);
    store
        .save("s", &StateChange::replace(&state))
        .await
        .unwrap();
    let pttler = raw.clone();
    let pttl = |key: &'static str| {
        let mut raw = pttler.clone();
        async move { raw.pttl::<_, i64>(key).await.unwrap() }
    };
    for key in ["agentscope:{s}:state", "agentscope:{s}:messages"] {
        let left = pttl(key).await;
        assert!((55_000..=60_000).contains(&left), "{key}: PTTL {left}");
    }
    let ttl: i64 = raw.ttl("agentscope:{s}:state").await.unwrap();
    assert!((55..=60).contains(&ttl), "TTL {ttl}");
    // The index entry's score is the keys' expiry time.
    let score: f64 = raw.zscore("agentscope:sessions", "s").await.unwrap();
    let expire_at: i64 = redis::cmd("PEXPIRETIME")
        .arg("agentscope:{s}:state")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(score as i64, expire_at);

    // A store with a longer TTL refreshes it on its save; loads do not touch it.
    let longer = store.with_ttl(Some(Duration::from_secs(600)));
    let step = StateChange::new(1, 1, vec![Msg::assistant("hello")], agent());
    longer.save("s", &step).await.unwrap();
    for key in ["agentscope:{s}:state", "agentscope:{s}:messages"] {
        let left = pttl(key).await;
        assert!((590_000..=600_000).contains(&left), "{key}: PTTL {left}");
    }
    store.load("s").await.unwrap().unwrap();
    assert!(pttl("agentscope:{s}:state").await > 590_000);

    // A save without a TTL removes it.
    let forever = store.with_ttl(None);
    forever
        .save("s", &StateChange::new(2, 2, Vec::new(), agent()))
        .await
        .unwrap();
    assert_eq!(pttl("agentscope:{s}:state").await, -1);
    assert_eq!(pttl("agentscope:{s}:messages").await, -1);
    let score: String = redis::cmd("ZSCORE")
        .arg("agentscope:sessions")
        .arg("s")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(score, "inf");

    // An expired session is gone: not loaded, not listed, not deleted, and it starts anew.
    let brief = store.with_ttl(Some(Duration::from_millis(1_000)));
    brief
        .save("brief", &StateChange::replace(&state))
        .await
        .unwrap();
    assert_eq!(brief.list().await.unwrap(), ["brief", "s"]);
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    assert_eq!(brief.load("brief").await.unwrap(), None);
    assert_eq!(brief.list().await.unwrap(), ["s"]);
    assert!(!brief.delete("brief").await.unwrap());
    assert_eq!(
        brief
            .save("brief", &StateChange::replace(&state))
            .await
            .unwrap(),
        1
    );
    // Saves prune expired index entries.
    brief
        .save("gone", &StateChange::replace(&state))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    forever
        .save("other", &StateChange::replace(&state))
        .await
        .unwrap();
    let index: Vec<String> = raw.zrange("agentscope:sessions", 0, -1).await.unwrap();
    // Equal scores (no TTL) sort by id.
    assert_eq!(index, ["other", "s"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn list_finds_its_sessions_among_thousands_of_keys_without_keys_or_scan() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let mut raw = server.raw().await;
    // 5,000 unrelated keys, and 1,000 sessions of another prefix.
    let mut pipe = redis::pipe();
    for i in 0..5_000 {
        pipe.set(format!("cache:item:{i}"), i).ignore();
    }
    pipe.query_async::<()>(&mut raw).await.unwrap();
    let other = RedisSessionStore::builder(server.url())
        .key_prefix("other-app:")
        .connect()
        .await
        .unwrap();
    let mine = other.with_key_prefix("mine:").unwrap();
    let state = AgentState::new(agent(), vec![Msg::user("hi")]);
    let saves: Vec<_> = (0..1_000)
        .map(|i| {
            let other = other.clone();
            let state = state.clone();
            tokio::spawn(async move {
                other
                    .save(&format!("o{i:04}"), &StateChange::replace(&state))
                    .await
                    .unwrap();
            })
        })
        .collect();
    for save in saves {
        save.await.unwrap();
    }
    let ids = ["b", "a", "c-3", "A"];
    for id in ids {
        mine.save(id, &StateChange::replace(&state)).await.unwrap();
    }
    let keys: i64 = redis::cmd("DBSIZE").query_async(&mut raw).await.unwrap();
    // Each prefix: two keys per session, and its index, recency index and recency keys.
    assert_eq!(keys, 5_000 + 2 * 1_000 + 3 + 2 * 4 + 3);

    redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async::<()>(&mut raw)
        .await
        .unwrap();
    assert_eq!(mine.list().await.unwrap(), ["A", "a", "b", "c-3"]);
    let others = other.list().await.unwrap();
    assert_eq!(others.len(), 1_000);
    assert_eq!(others[0], "o0000");
    assert_eq!(others[999], "o0999");
    let stats = info(&mut raw, "commandstats").await;
    assert!(!stats.contains_key("cmdstat_keys"), "{stats:?}");
    assert!(!stats.contains_key("cmdstat_scan"), "{stats:?}");
    // Each list was one script call (one EVALSHA of the script loaded at connect), reading
    // the index with one ZRANGEBYSCORE.
    let calls = |name: &str, field: &str| {
        stats.get(name).map_or(0, |line| {
            line.split(',')
                .find_map(|pair| pair.strip_prefix(field))
                .and_then(|calls| calls.parse::<u64>().ok())
                .unwrap_or(0)
        })
    };
    assert_eq!(calls("cmdstat_evalsha", "calls="), 2, "{stats:?}");
    assert_eq!(calls("cmdstat_evalsha", "failed_calls="), 0, "{stats:?}");
    assert_eq!(calls("cmdstat_zrangebyscore", "calls="), 2, "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn a_step_sends_and_writes_only_the_change() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = server.store().await;
    let mut raw = server.raw().await;
    let history: Vec<Msg> = (0..1_000)
        .map(|i| Msg::user(format!("message {i}: {}", "x".repeat(200))))
        .collect();
    let full = AgentState::new(agent(), history);
    assert_eq!(
        store
            .save("long", &StateChange::replace(&full))
            .await
            .unwrap(),
        1
    );
    let full_bytes = serde_json::to_vec(&full).unwrap().len();

    let before = info(&mut raw, "stats").await["total_net_input_bytes"]
        .parse::<u64>()
        .unwrap();
    let step = StateChange::new(1, 1_000, vec![Msg::assistant("the reply")], agent());
    assert_eq!(store.save("long", &step).await.unwrap(), 2);
    let after = info(&mut raw, "stats").await["total_net_input_bytes"]
        .parse::<u64>()
        .unwrap();
    // The INFO command itself is a few bytes; the step's save well under 1 KiB.
    let sent = after - before;
    assert!(
        sent < 1_024,
        "a step sent {sent} bytes (the state is {full_bytes})"
    );

    // Truncating keeps the first messages (LTRIM), then appends.
    let truncate = StateChange::new(2, 10, vec![Msg::assistant("after ten")], agent());
    assert_eq!(store.save("long", &truncate).await.unwrap(), 3);
    let len: usize = raw.llen("agentscope:{long}:messages").await.unwrap();
    assert_eq!(len, 11);
    let state = store.load("long").await.unwrap().unwrap();
    assert_eq!(state.messages[..10], full.messages[..10]);
    assert_eq!(state.messages[10].text(), "after ten");
}

/// Many tasks on two connections save to one session from the same revision at once, round
/// after round: exactly one wins each round, every other gets a conflict naming the
/// revisions, and the session holds exactly the winners' messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn racing_saves_one_winner_per_revision() {
    const TASKS: usize = 16;
    const ROUNDS: u64 = 25;
    let Some(server) = RedisServer::start() else {
        return;
    };
    let stores = [server.store().await, server.store().await];
    let barrier = Arc::new(Barrier::new(TASKS));
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let store = stores[task % 2].clone();
            let barrier = Arc::clone(&barrier);
            tokio::spawn(async move {
                let mut outcomes = Vec::new();
                for round in 0..ROUNDS {
                    let change = StateChange::new(
                        round,
                        usize::try_from(round).unwrap(),
                        vec![Msg::assistant(format!("round {round} task {task}"))],
                        AgentIdentity::new(format!("task-{task}"), "id"),
                    );
                    barrier.wait().await;
                    outcomes.push(store.save("raced", &change).await);
                    barrier.wait().await;
                }
                outcomes
            })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap());
    }
    let mut winners = Vec::new();
    let mut conflicts = 0;
    for round in 0..ROUNDS {
        let index = usize::try_from(round).unwrap();
        let mut won = Vec::new();
        for (task, outcomes) in results.iter().enumerate() {
            match &outcomes[index] {
                Ok(revision) => {
                    assert_eq!(*revision, round + 1);
                    won.push(task);
                }
                Err(SessionError::Conflict {
                    session,
                    expected,
                    found,
                }) => {
                    assert_eq!(
                        (session.as_str(), *expected, *found),
                        ("raced", round, round + 1)
                    );
                    conflicts += 1;
                }
                Err(other) => panic!("round {round} task {task}: {other}"),
            }
        }
        assert_eq!(won.len(), 1, "round {round}: winners {won:?}");
        winners.push(won[0]);
    }
    assert_eq!(conflicts, (TASKS - 1) * usize::try_from(ROUNDS).unwrap());
    let state = stores[0].load("raced").await.unwrap().unwrap();
    assert_eq!(state.revision, ROUNDS);
    let expected: Vec<String> = winners
        .iter()
        .enumerate()
        .map(|(round, task)| format!("round {round} task {task}"))
        .collect();
    assert_eq!(texts(&state.messages), expected);
    let last = winners.last().copied().unwrap();
    assert_eq!(state.agent.name, format!("task-{last}"));
    println!("racing saves: {ROUNDS} rounds x {TASKS} tasks: {ROUNDS} won, {conflicts} conflicts");
}

/// Many tasks append to one session by loading, saving and retrying on a conflict: every
/// append lands exactly once, each task's messages in its order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn retrying_writers_lose_nothing() {
    const TASKS: usize = 12;
    const APPENDS: usize = 15;
    let Some(server) = RedisServer::start() else {
        return;
    };
    let stores = [server.store().await, server.store().await];
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let store = stores[task % 2].clone();
            tokio::spawn(async move {
                let mut conflicts = 0;
                for n in 0..APPENDS {
                    loop {
                        let (base, kept) = match store.load("log").await.unwrap() {
                            Some(state) => (state.revision, state.messages.len()),
                            None => (0, 0),
                        };
                        let change = StateChange::new(
                            base,
                            kept,
                            vec![Msg::user(format!("{task}:{n}"))],
                            agent(),
                        );
                        match store.save("log", &change).await {
                            Ok(revision) => {
                                assert_eq!(revision, base + 1);
                                break;
                            }
                            Err(SessionError::Conflict { expected, .. }) => {
                                assert_eq!(expected, base);
                                conflicts += 1;
                            }
                            Err(other) => panic!("{other}"),
                        }
                    }
                }
                conflicts
            })
        })
        .collect();
    let mut conflicts = 0;
    for task in tasks {
        conflicts += task.await.unwrap();
    }
    let state = stores[1].load("log").await.unwrap().unwrap();
    assert_eq!(state.messages.len(), TASKS * APPENDS);
    assert_eq!(state.revision, u64::try_from(TASKS * APPENDS).unwrap());
    for task in 0..TASKS {
        let mine: Vec<String> = texts(&state.messages)
            .into_iter()
            .filter(|text| text.split(':').next() == Some(&task.to_string()))
            .collect();
        let expected: Vec<String> = (0..APPENDS).map(|n| format!("{task}:{n}")).collect();
        assert_eq!(mine, expected, "task {task}");
    }
    println!(
        "retrying writers: {} appends stored, {conflicts} conflicts retried",
        TASKS * APPENDS
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn scripts_are_loaded_again_after_a_flush() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = server.store().await;
    let mut raw = server.raw().await;
    let state = AgentState::new(agent(), vec![Msg::user("hi")]);
    store
        .save("s", &StateChange::replace(&state))
        .await
        .unwrap();
    redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async::<()>(&mut raw)
        .await
        .unwrap();
    let step = StateChange::new(1, 1, vec![Msg::assistant("hello")], agent());
    assert_eq!(store.save("s", &step).await.unwrap(), 2);
    redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async::<()>(&mut raw)
        .await
        .unwrap();
    assert_eq!(store.load("s").await.unwrap().unwrap().messages.len(), 2);
    redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async::<()>(&mut raw)
        .await
        .unwrap();
    assert_eq!(store.list().await.unwrap(), ["s"]);
    redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async::<()>(&mut raw)
        .await
        .unwrap();
    assert!(store.delete("s").await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn damaged_sessions_are_reported_naming_the_session() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = server.store().await;
    let mut raw = server.raw().await;
    let state = AgentState::new(agent(), vec![Msg::user("one"), Msg::assistant("two")]);
    store
        .save("s", &StateChange::replace(&state))
        .await
        .unwrap();

    raw.hset::<_, _, _, ()>("agentscope:{s}:state", "version", "2")
        .await
        .unwrap();
    let error = store.load("s").await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "session 's' has state format version 2; this build reads version 1"
    );
    raw.hset::<_, _, _, ()>("agentscope:{s}:state", "version", "1")
        .await
        .unwrap();

    raw.rpop::<_, ()>("agentscope:{s}:messages", None)
        .await
        .unwrap();
    let error = store.load("s").await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "session 's' is corrupt: the state counts 2 messages but the message list holds 1"
    );
    raw.rpush::<_, _, ()>("agentscope:{s}:messages", "{not json")
        .await
        .unwrap();
    let error = store.load("s").await.unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("session 's' is corrupt: message 1 is not valid: "),
        "{error}"
    );
    raw.hdel::<_, _, ()>("agentscope:{s}:state", "agent")
        .await
        .unwrap();
    let error = store.load("s").await.unwrap_err();
    assert!(matches!(error, SessionError::Corrupt { .. }), "{error:?}");
    // A damaged session can still be replaced from its revision, or deleted.
    let mut fresh = state.clone();
    fresh.revision = 1;
    assert_eq!(
        store
            .save("s", &StateChange::replace(&fresh))
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store.load("s").await.unwrap().unwrap().messages,
        state.messages
    );

    // A key of another type is a corrupt session, saying which keys.
    raw.set::<_, _, ()>("agentscope:{t}:state", "a string")
        .await
        .unwrap();
    let error = store.load("t").await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "session 't' is corrupt: loading: a key of the session holds another type than this \
         store writes (a hash agentscope:{t}:state and a list agentscope:{t}:messages): \
         Pipeline failure: [(Index 1, error: \"WRONGTYPE\": Operation against a key holding \
         the wrong kind of value)]"
    );
    let error = store
        .save("t", &StateChange::replace(&state))
        .await
        .unwrap_err();
    assert!(matches!(error, SessionError::Corrupt { .. }), "{error:?}");
    assert!(error.to_string().contains("WRONGTYPE"), "{error}");
    // Deleting it works, and the id can be used again.
    assert!(store.delete("t").await.unwrap());
    assert_eq!(
        store
            .save("t", &StateChange::replace(&state))
            .await
            .unwrap(),
        1
    );

    // Another server error is a backend error saying what failed, with the server's code:
    // a user who may not run scripts.
    redis::cmd("ACL")
        .arg(
            &[
                "SETUSER",
                "limited",
                "on",
                ">limited-pw",
                "~*",
                "+@all",
                "-evalsha",
                "-eval",
            ][..],
        )
        .query_async::<()>(&mut raw)
        .await
        .unwrap();
    let limited = RedisSessionStore::connect(format!(
        "redis://limited:limited-pw@127.0.0.1:{}",
        server.port()
    ))
    .await
    .unwrap();
    let error = limited
        .save("u", &StateChange::replace(&state))
        .await
        .unwrap_err();
    let SessionError::Backend {
        session, message, ..
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(session.as_deref(), Some("u"));
    assert!(
        message.starts_with(&format!(
            "saving (redis://limited:<redacted>@127.0.0.1:{}): ",
            server.port()
        )),
        "{message}"
    );
    assert!(!message.contains("limited-pw"), "{message}");
    let failure = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<RedisFailure>())
        .unwrap();
    assert_eq!(failure.code(), Some("NOPERM"), "{failure:?}");
    assert!(failure.is_authentication_error());
    assert!(!failure.is_timeout() && !failure.is_connection_error());
    assert_eq!(store.load("u").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn invalid_changes_send_nothing() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = server.store().await;
    let state = AgentState::new(agent(), vec![Msg::user("hi")]);
    store
        .save("s", &StateChange::replace(&state))
        .await
        .unwrap();
    // A system message in a stale change: the conflict comes first, as StateChange::check says.
    let stale = StateChange::new(0, 0, vec![Msg::system("x")], agent());
    assert!(matches!(
        store.save("s", &stale).await.unwrap_err(),
        SessionError::Conflict {
            expected: 0,
            found: 1,
            ..
        }
    ));
    let current = StateChange::new(1, 1, vec![Msg::system("x")], agent());
    assert!(matches!(
        store.save("s", &current).await.unwrap_err(),
        SessionError::InvalidChange { .. }
    ));
    assert_eq!(store.load("s").await.unwrap().unwrap().revision, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn a_server_that_goes_away_is_a_backend_error_then_the_store_reconnects() {
    let Some(mut server) = RedisServer::start_with(Some("pw-Go-Away-4321"), &[]) else {
        return;
    };
    let port = server.port();
    let store = RedisSessionStore::builder(server.url())
        .response_timeout(Duration::from_secs(2))
        .connect()
        .await
        .unwrap();
    let state = AgentState::new(agent(), vec![Msg::user("hi")]);
    store
        .save("s", &StateChange::replace(&state))
        .await
        .unwrap();
    server.kill();
    let started = std::time::Instant::now();
    let error = store.load("s").await.unwrap_err();
    let text = format!("{error} {error:?}");
    assert!(!text.contains("pw-Go-Away-4321"), "{text}");
    let SessionError::Backend {
        session, message, ..
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(session.as_deref(), Some("s"));
    assert!(
        message.starts_with(&format!("loading (redis://:<redacted>@127.0.0.1:{port}): ")),
        "{message}"
    );
    let failure = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<RedisFailure>())
        .unwrap();
    assert!(
        failure.is_connection_error() || failure.is_timeout(),
        "{failure:?}"
    );
    let error = store.list().await.unwrap_err();
    assert_eq!(error.session(), None);
    assert!(
        error
            .to_string()
            .starts_with("session store: storage backend error: listing sessions")
    );

    // A new server on the same port (empty: no persistence): the store reconnects by itself.
    // (The list waited for the store's reconnection attempts, about 5 s, before failing.)
    let _again = restart_on(port, "pw-Go-Away-4321");
    let mut loaded = Err(error);
    for _ in 0..100 {
        loaded = store.load("s").await;
        if loaded.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "server gone and back: reconnected after {:?}",
        started.elapsed()
    );
    assert_eq!(loaded.unwrap(), None);
}

/// A server on `port` (the old one's) with `password`, killed when the guard drops.
fn restart_on(port: u16, password: &str) -> impl Drop {
    struct Guard {
        child: std::process::Child,
        _dir: tempfile::TempDir,
    }
    impl Drop for Guard {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let child = std::process::Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .args(["--appendonly", "no", "--requirepass", password])
        .arg("--dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    Guard { child, _dir: dir }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn the_password_never_shows() {
    const PASSWORD: &str = "S3cret-Pa55-word";
    let Some(server) = RedisServer::start_with(Some(PASSWORD), &[]) else {
        return;
    };
    let port = server.port();
    // Connects with the password, shows none.
    let store = server.store().await;
    let shown = format!("{store:?}");
    assert!(!shown.contains(PASSWORD), "{shown}");
    assert!(
        shown.contains(&format!("redis://:<redacted>@127.0.0.1:{port}")),
        "{shown}"
    );
    let state = AgentState::new(agent(), vec![Msg::user("hi")]);
    store
        .save("s", &StateChange::replace(&state))
        .await
        .unwrap();
    let with_user =
        RedisSessionStore::connect(format!("redis://default:{PASSWORD}@127.0.0.1:{port}"))
            .await
            .unwrap();
    assert_eq!(with_user.list().await.unwrap(), ["s"]);
    assert!(!format!("{with_user:?}").contains(PASSWORD));

    // A wrong password: an error naming the server, showing neither password.
    let wrong = "Wr0ng-Pa55-word";
    let builder = RedisSessionStore::builder(format!("redis://:{wrong}@127.0.0.1:{port}"));
    assert!(!format!("{builder:?}").contains(wrong));
    let error = builder.connect().await.unwrap_err();
    let text = format!("{error} / {error:?}");
    assert!(!text.contains(wrong) && !text.contains(PASSWORD), "{text}");
    assert!(
        error.to_string().starts_with(&format!(
            "session store: storage backend error: connecting to redis://:<redacted>@127.0.0.1:{port}: "
        )),
        "{error}"
    );
    let failure = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<RedisFailure>())
        .unwrap();
    assert!(failure.is_authentication_error(), "{failure:?}");
    // No password at all.
    let error = RedisSessionStore::connect(format!("redis://127.0.0.1:{port}"))
        .await
        .unwrap_err();
    let failure = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<RedisFailure>())
        .unwrap();
    assert!(
        failure.is_authentication_error() || failure.code() == Some("NOAUTH"),
        "{failure:?}"
    );
    // A password with characters that need percent-encoding in the URL.
    let odd = RedisServer::start_with(Some("p@ss/w:rd?#x"), &[]).unwrap();
    let url = format!("redis://:p%40ss%2Fw%3Ard%3F%23x@127.0.0.1:{}", odd.port());
    let store = RedisSessionStore::connect(url).await.unwrap();
    let shown = format!("{store:?}");
    assert!(
        !shown.contains("p%40ss") && !shown.contains("p@ss"),
        "{shown}"
    );
    assert!(store.list().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn an_unreachable_server_fails_to_connect() {
    if support::redis_server().is_none() {
        return;
    }
    let port = support::free_port();
    let error = RedisSessionStore::builder(format!("redis://:hunter2-secret@127.0.0.1:{port}"))
        .connection_timeout(Duration::from_secs(1))
        .connect()
        .await
        .unwrap_err();
    let text = format!("{error} {error:?}");
    assert!(!text.contains("hunter2-secret"), "{text}");
    assert!(
        text.contains(&format!(
            "connecting to redis://:<redacted>@127.0.0.1:{port}"
        )),
        "{text}"
    );
    let error = RedisSessionStore::connect("not a url").await.unwrap_err();
    assert!(
        matches!(error, SessionError::Backend { session: None, .. }),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn databases_in_the_url_are_separate() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let zero = server.store().await;
    let two = RedisSessionStore::connect(format!("{}/2", server.url()))
        .await
        .unwrap();
    let state = AgentState::new(agent(), vec![Msg::user("hi")]);
    two.save("in-two", &StateChange::replace(&state))
        .await
        .unwrap();
    assert!(zero.list().await.unwrap().is_empty());
    assert_eq!(two.list().await.unwrap(), ["in-two"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn works_as_a_shared_dyn_store() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store: Arc<dyn SessionStore> = Arc::new(server.store().await);
    let agent = ReActAgent::builder()
        .model(agentscope_test::ScriptedModel::new([
            agentscope_test::ScriptedResponse::text("Hello!"),
        ]))
        .session(Arc::clone(&store), "dyn")
        .build()
        .unwrap();
    agent.call("hi").await.unwrap();
    let state = store.load("dyn").await.unwrap().unwrap();
    assert_eq!(texts(&state.messages), ["hi", "Hello!"]);
}

/// A state saved at `seconds` after 2026-12-01T00:00:00Z (and `nanos`).
fn saved_at(seconds: i64, nanos: u32) -> AgentState {
    let mut state = AgentState::new(agent(), vec![Msg::user("hi")]);
    state.saved_at = chrono::DateTime::from_timestamp(1_796_083_200 + seconds, nanos).unwrap();
    state
}

fn member(state: &AgentState, id: &str) -> String {
    format!("{}{id}", SessionSummary::recency_key(&state.saved_at))
}

/// The recency index (`<prefix>recent`) holds one `<recency key><id>` member per session
/// and the recency keys hash (`<prefix>recent-keys`) its key, both written by the save
/// script with the session: a save moves the member, a delete removes both, an expired
/// session is not listed and the next save prunes its entries, as it prunes the index's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn the_recency_index_follows_saves_deletes_and_expiry() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = server.store().await;
    let mut raw = server.raw().await;
    assert_eq!(store.recent_key().as_deref(), Some("agentscope:recent"));
    let (one, two) = (saved_at(1, 5), saved_at(2, 0));
    store.save("s1", &StateChange::replace(&one)).await.unwrap();
    store.save("s2", &StateChange::replace(&two)).await.unwrap();
    let members: Vec<String> = raw.zrange("agentscope:recent", 0, -1).await.unwrap();
    assert_eq!(members, [member(&two, "s2"), member(&one, "s1")]);
    let keys: BTreeMap<String, String> = raw.hgetall("agentscope:recent-keys").await.unwrap();
    assert_eq!(
        keys,
        BTreeMap::from([
            ("s1".to_owned(), SessionSummary::recency_key(&one.saved_at)),
            ("s2".to_owned(), SessionSummary::recency_key(&two.saved_at)),
        ])
    );

    // A save moves the session's member: still one per session.
    let mut three = saved_at(3, 0);
    three.revision = 1;
    store
        .save("s1", &StateChange::replace(&three))
        .await
        .unwrap();
    let members: Vec<String> = raw.zrange("agentscope:recent", 0, -1).await.unwrap();
    assert_eq!(members, [member(&three, "s1"), member(&two, "s2")]);
    let page = store.list_recent("", None, 10).await.unwrap();
    assert_eq!(
        page,
        [
            SessionSummary::new("s1", 2, three.saved_at),
            SessionSummary::new("s2", 1, two.saved_at)
        ]
    );

    // A delete removes both entries.
    assert!(store.delete("s2").await.unwrap());
    let members: Vec<String> = raw.zrange("agentscope:recent", 0, -1).await.unwrap();
    assert_eq!(members, [member(&three, "s1")]);
    let keys: Vec<String> = raw.hkeys("agentscope:recent-keys").await.unwrap();
    assert_eq!(keys, ["s1"]);

    // An expired session is not listed; the next save prunes its entries.
    let brief = store.with_ttl(Some(Duration::from_millis(300)));
    let four = saved_at(4, 0);
    brief
        .save("brief", &StateChange::replace(&four))
        .await
        .unwrap();
    assert_eq!(store.list_recent("", None, 10).await.unwrap().len(), 2);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        store.list_recent("", None, 10).await.unwrap(),
        [SessionSummary::new("s1", 2, three.saved_at)]
    );
    let members: Vec<String> = raw.zrange("agentscope:recent", 0, -1).await.unwrap();
    assert_eq!(members.len(), 2, "waiting for a save to prune it");
    store
        .save("other", &StateChange::replace(&saved_at(0, 0)))
        .await
        .unwrap();
    let keys: Vec<String> = raw.hkeys("agentscope:recent-keys").await.unwrap();
    assert_eq!(keys.len(), 2);
    assert!(!keys.contains(&"brief".to_owned()), "{keys:?}");
    let members: Vec<String> = raw.zrange("agentscope:recent", 0, -1).await.unwrap();
    assert_eq!(
        members,
        [member(&three, "s1"), member(&saved_at(0, 0), "other")]
    );
}

/// Sessions saved by the version before the recency index (the prefix's index lists them,
/// the recency index does not) are added to it by the first page, each from its
/// `saved_at`: listed in their places, and a `saved_at` that does not read as a time is
/// keyed last and reported corrupt when a page reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn sessions_saved_before_the_recency_index_are_added_by_the_first_page() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = server.store().await;
    let mut raw = server.raw().await;
    let states: Vec<AgentState> = (0..5).map(|n| saved_at(n, 7)).collect();
    for (n, state) in states.iter().enumerate() {
        store
            .save(&format!("s{n}"), &StateChange::replace(state))
            .await
            .unwrap();
    }
    // As the previous version left them: no recency index; one saved_at damaged.
    let _: () = redis::cmd("DEL")
        .arg("agentscope:recent")
        .arg("agentscope:recent-keys")
        .query_async(&mut raw)
        .await
        .unwrap();
    let _: () = raw
        .hset("agentscope:{s0}:state", "saved_at", "yesterday")
        .await
        .unwrap();
    let expected: Vec<SessionSummary> = (1..5)
        .rev()
        .map(|n| SessionSummary::of(format!("s{n}"), &states[n]))
        .map(|mut summary| {
            summary.revision = 1;
            summary
        })
        .collect();
    assert_eq!(store.list_recent("", None, 2).await.unwrap(), expected[..2]);
    let members: Vec<String> = raw.zrange("agentscope:recent", 0, -1).await.unwrap();
    assert_eq!(members.len(), 5);
    assert_eq!(members[4], "zzzzzzzzzzzzzzzzzzzzzzzzs0");
    assert_eq!(store.list_recent("", None, 4).await.unwrap(), expected);
    let error = store.list_recent("", None, 5).await.unwrap_err();
    assert!(
        matches!(&error, SessionError::Corrupt { session, .. } if session == "s0"),
        "{error:?}"
    );
}

/// A page is short scripts: 2,500 sessions of one prefix saved after 3 of another, the 3
/// are found (the walk goes on where each script stopped, after 1,000 members), and a
/// page longer than one script's batch lists all 2,503 in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_redis),
    ignore = "redis-server not installed: .ci/run installs it"
)]
async fn a_rare_prefix_is_found_among_thousands_of_newer_sessions() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = server.store().await;
    let mut expected = Vec::new();
    for n in 0..3 {
        let state = saved_at(n, 0);
        let id = format!("rare-{n}");
        store
            .save(&id, &StateChange::replace(&state))
            .await
            .unwrap();
        expected.push(SessionSummary::new(id, 1, state.saved_at));
    }
    let saves: Vec<_> = (0..2_500)
        .map(|n| {
            let store = store.clone();
            tokio::spawn(async move {
                let state = saved_at(100 + n, 0);
                let id = format!("bulk-{n:04}");
                store
                    .save(&id, &StateChange::replace(&state))
                    .await
                    .unwrap();
                SessionSummary::new(id, 1, state.saved_at)
            })
        })
        .collect();
    for save in saves {
        expected.push(save.await.unwrap());
    }
    expected.sort_by(SessionSummary::cmp_recent);
    assert_eq!(
        store.list_recent("rare-", None, 10).await.unwrap(),
        expected[2_500..]
    );
    assert_eq!(
        store
            .list_recent("rare-", Some(&expected[2_500]), 10)
            .await
            .unwrap(),
        expected[2_501..]
    );
    assert_eq!(store.list_recent("", None, 5_000).await.unwrap(), expected);
    assert_eq!(
        store
            .list_recent("", Some(&expected[999]), 1_500)
            .await
            .unwrap(),
        expected[1_000..2_500]
    );
}
