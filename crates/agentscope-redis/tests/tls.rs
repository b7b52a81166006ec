//! `rediss://`: a real `redis-server` serving TLS only, with a certificate for `localhost`
//! signed by a CA made for the test (`openssl`), and a password.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use agentscope::prelude::*;
use agentscope::session::{AgentIdentity, AgentState, SessionStore, StateChange};
use agentscope_redis::RedisSessionStore;
use support::{RedisServer, TlsFiles};

const PASSWORD: &str = "tls-Pa55-word";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(all(has_redis, has_openssl)),
    ignore = "redis-server or openssl not installed: .ci/run installs them"
)]
async fn rediss_with_a_private_ca() {
    if support::redis_server().is_none() {
        return;
    }
    let Some(tls) = TlsFiles::make() else {
        return;
    };
    let Some(server) = RedisServer::start_tls(PASSWORD, &tls) else {
        return;
    };
    let url = server.url();
    assert!(url.starts_with("rediss://"));
    let ca = std::fs::read(&tls.ca).unwrap();
    let store = RedisSessionStore::builder(&url)
        .tls_root_certificate(ca)
        .connect()
        .await
        .unwrap();
    let shown = format!("{store:?}");
    assert!(!shown.contains(PASSWORD), "{shown}");
    assert!(shown.contains("rediss://:<redacted>@localhost:"), "{shown}");
    let state = AgentState::new(AgentIdentity::new("a", "1"), vec![Msg::user("over TLS")]);
    assert_eq!(
        store
            .save("tls", &StateChange::replace(&state))
            .await
            .unwrap(),
        1
    );
    let loaded = store.load("tls").await.unwrap().unwrap();
    assert_eq!(loaded.messages, state.messages);
    assert_eq!(store.list().await.unwrap(), ["tls"]);

    // Without the CA, the server's certificate is not trusted: a clear error, no password.
    let error = RedisSessionStore::connect(url.clone()).await.unwrap_err();
    let text = format!("{error} {error:?}");
    assert!(!text.contains(PASSWORD), "{text}");
    assert!(
        text.contains("connecting to rediss://:<redacted>@localhost:"),
        "{text}"
    );
    // Plain text to a TLS port fails too.
    let plain = url.replacen("rediss://", "redis://", 1);
    let error = RedisSessionStore::builder(plain)
        .connection_timeout(std::time::Duration::from_secs(2))
        .response_timeout(std::time::Duration::from_secs(2))
        .connect()
        .await
        .unwrap_err();
    assert!(!format!("{error} {error:?}").contains(PASSWORD));
}
