//! RedisSessionStore on a real 3-node Redis Cluster (3 primaries on free ports of
//! 127.0.0.1, made with `redis-cli --cluster create`): the conformance suite, a session's
//! keys in one hash slot, sessions spread over every node and listed by SCAN, and agents.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use agentscope::interrupt::INTERRUPT_REPLY;
use agentscope::prelude::*;
use agentscope::session::{AgentIdentity, AgentState, SessionStore, StateChange};
use agentscope_redis::RedisSessionStore;
use agentscope_test::tools::SlowTool;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use support::{Connect, RedisCluster};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(all(has_redis, has_redis_cli)),
    ignore = "redis-server or redis-cli not installed: .ci/run installs them"
)]
async fn cluster_store() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let store = RedisSessionStore::cluster_builder(cluster.seeds())
        .key_prefix("cluster:")
        .ttl(Duration::from_secs(3600))
        .connect()
        .await
        .unwrap();
    assert!(store.is_cluster());
    assert_eq!(store.index_key(), None);
    let shown = format!("{store:?}");
    assert!(shown.contains("cluster: true"), "{shown}");

    // The conformance suite, a fresh prefix per store.
    let mut stores = 0;
    agentscope_test::session_store::conformance(|| {
        stores += 1;
        store
            .with_key_prefix(format!("conformance-{stores}:"))
            .unwrap()
    })
    .await;
    println!("cluster conformance: {stores} stores checked");

    // 60 sessions: both keys of each in one slot, the sessions on every node.
    let state = AgentState::new(
        AgentIdentity::new("a", "1"),
        vec![Msg::user("hi"), Msg::assistant("Hello!")],
    );
    let ids: Vec<String> = (0..60).map(|i| format!("chat-{i:02}")).collect();
    for id in &ids {
        assert_eq!(
            store.save(id, &StateChange::replace(&state)).await.unwrap(),
            1
        );
    }
    let mut raws = Vec::new();
    for node in cluster.nodes() {
        raws.push(node.raw().await);
    }
    let mut nodes_used = BTreeSet::new();
    for id in &ids {
        let mut slots = Vec::new();
        for key in [
            store.state_key(id).unwrap(),
            store.messages_key(id).unwrap(),
        ] {
            let slot: i64 = redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(key)
                .query_async(&mut raws[0])
                .await
                .unwrap();
            slots.push(slot);
        }
        assert_eq!(slots[0], slots[1], "{id}: both keys in one slot");
        for (node, raw) in raws.iter_mut().enumerate() {
            let count: i64 = redis::cmd("CLUSTER")
                .arg("COUNTKEYSINSLOT")
                .arg(slots[0])
                .query_async(raw)
                .await
                .unwrap();
            if count > 0 {
                nodes_used.insert(node);
            }
        }
    }
    assert_eq!(
        nodes_used.len(),
        3,
        "the sessions are spread over every node"
    );
    assert_eq!(store.list().await.unwrap(), ids);
    // Other prefixes and other keys are not listed.
    let other = store.with_key_prefix("other:").unwrap();
    other
        .save("x", &StateChange::replace(&state))
        .await
        .unwrap();
    assert_eq!(other.list().await.unwrap(), ["x"]);
    assert_eq!(store.list().await.unwrap(), ids);

    // A step, a load, a delete; scripts loaded again after a flush on every node.
    for raw in &mut raws {
        redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query_async::<()>(raw)
            .await
            .unwrap();
    }
    let step = StateChange::new(1, 2, vec![Msg::user("more")], AgentIdentity::new("a", "1"));
    assert_eq!(store.save("chat-07", &step).await.unwrap(), 2);
    assert_eq!(
        store.load("chat-07").await.unwrap().unwrap().messages.len(),
        3
    );
    assert!(store.delete("chat-07").await.unwrap());
    assert_eq!(store.list().await.unwrap().len(), 59);

    // An agent on a cluster session, through another connection.
    let second = RedisSessionStore::cluster_builder(cluster.seeds()[1..].to_vec())
        .key_prefix("cluster:")
        .connect()
        .await
        .unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("Hi from the cluster")]);
    let agent = ReActAgent::builder()
        .model(model)
        .session(second, "chat-00")
        .build()
        .unwrap();
    agent.call("hello").await.unwrap();
    let stored = store.load("chat-00").await.unwrap().unwrap();
    assert_eq!(stored.revision, 2);
    let texts: Vec<String> = stored.messages.iter().map(Msg::text).collect();
    assert_eq!(texts, ["hi", "Hello!", "hello", "Hi from the cluster"]);

    // Leases and interrupts across the two connections (subscribed through different
    // nodes): the lease is in the session's slot; a second instance is busy; its interrupt
    // stops the call.
    let slot = |key: String| {
        let mut raw = raws[0].clone();
        async move {
            redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(key)
                .query_async::<i64>(&mut raw)
                .await
                .unwrap()
        }
    };
    assert_eq!(
        slot(store.lease_key("chat-01").unwrap()).await,
        slot(store.state_key("chat-01").unwrap()).await
    );
    let runner = ReActAgent::builder()
        .model(ScriptedModel::new([
            ScriptedResponse::tool_call("w1", "slow", serde_json::json!({"ms": 600_000})),
            ScriptedResponse::text("never said"),
        ]))
        .toolkit(Toolkit::new().tool(SlowTool::new()))
        .session(store.clone(), "chat-01")
        .build()
        .unwrap();
    let running = tokio::spawn(async move { runner.call("wait").await });
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while store
        .load("chat-01")
        .await
        .unwrap()
        .is_none_or(|state| state.running_tools.is_empty())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the tool never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let model = ScriptedModel::new([ScriptedResponse::text("late")]);
    let other_instance = ReActAgent::builder()
        .model(model.clone())
        .session(agent_store_of(&cluster).await, "chat-01")
        .build()
        .unwrap();
    assert!(matches!(
        other_instance.call("me too").await,
        Err(AgentError::Busy)
    ));
    assert!(other_instance.interrupt_session().await.unwrap());
    let reply = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the interrupt arrives")
        .unwrap()
        .unwrap();
    assert_eq!(reply.text(), INTERRUPT_REPLY);
    assert_eq!(other_instance.call("me too").await.unwrap().text(), "late");
}

/// A store on the cluster through its last node only.
async fn agent_store_of(cluster: &RedisCluster) -> RedisSessionStore {
    RedisSessionStore::cluster_builder(cluster.seeds()[2..].to_vec())
        .key_prefix("cluster:")
        .connect()
        .await
        .unwrap()
}
