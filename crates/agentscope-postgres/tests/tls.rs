//! TLS: a real PostgreSQL serving TLS with a certificate for `localhost` signed by a CA made
//! for the test (`openssl`). `sslmode=require` with the CA connects over TLS; without it the
//! certificate is not trusted (a clear error, no password); no `sslmode` connects in plain
//! text.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use agentscope::prelude::*;
use agentscope::session::{AgentIdentity, AgentState, SessionStore, StateChange};
use agentscope_postgres::PostgresSessionStore;
use agentscope_test::components::tls::TlsFiles;
use support::PostgresServer;

/// How many of the store's connections (`application_name` agentscope) use TLS, and how
/// many do not.
fn connections(server: &PostgresServer) -> (u32, u32) {
    let counts = server.psql(
        "SELECT count(*) FILTER (WHERE s.ssl) || ' ' || count(*) FILTER (WHERE NOT s.ssl) \
         FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE a.application_name = 'agentscope'",
    );
    let (tls, plain) = counts.split_once(' ').unwrap();
    (tls.parse().unwrap(), plain.parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(all(has_postgres, has_openssl)),
    ignore = "PostgreSQL or openssl not installed: .ci/run installs them"
)]
async fn sslmode_require_with_a_private_ca() {
    let Some(tls) = TlsFiles::make() else {
        return;
    };
    let cert = std::fs::read(&tls.cert).unwrap();
    let key = std::fs::read(&tls.key).unwrap();
    let Some(server) = PostgresServer::start_with(
        &[
            ("ssl", "on"),
            ("ssl_cert_file", "server.crt"),
            ("ssl_key_file", "server.key"),
        ],
        &[("server.crt", &cert), ("server.key", &key)],
    ) else {
        return;
    };
    let ca = std::fs::read(&tls.ca).unwrap();
    let password = PostgresServer::PASSWORD;
    let url = |host: &str, query: &str| {
        format!(
            "postgresql://{}:{password}@{host}:{}/postgres{query}",
            PostgresServer::PASSWORD_USER,
            server.port()
        )
    };

    let store = PostgresSessionStore::builder(url("localhost", "?sslmode=require"))
        .tls_root_certificate(ca.clone())
        .connect()
        .await
        .unwrap();
    let shown = format!("{store:?}");
    assert!(!shown.contains(password), "{shown}");
    assert!(shown.contains("tls: true"), "{shown}");
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
    let (encrypted, plain) = connections(&server);
    assert!(
        encrypted >= 1 && plain == 0,
        "{encrypted} TLS, {plain} plain"
    );
    // The certificate names 127.0.0.1 too.
    let by_ip = PostgresSessionStore::builder(url("127.0.0.1", ""))
        .tls_root_certificate(ca)
        .connect()
        .await
        .unwrap();
    assert_eq!(by_ip.list().await.unwrap(), ["tls"]);
    drop((store, by_ip));

    // Without the CA, the server's certificate is not trusted: a clear error, no password.
    let error = PostgresSessionStore::connect(url("localhost", "?sslmode=require"))
        .await
        .unwrap_err();
    let text = format!("{error} {error:?}");
    assert!(!text.contains(password), "{text}");
    assert!(
        text.contains(&format!(
            "connecting (postgresql://{}:<redacted>@localhost:{}/postgres?sslmode=<redacted>)",
            PostgresServer::PASSWORD_USER,
            server.port()
        )),
        "{text}"
    );
    assert!(text.contains("error performing TLS handshake"), "{text}");

    // No sslmode (libpq's default, prefer): plain text.
    let plain_store = PostgresSessionStore::connect(url("localhost", ""))
        .await
        .unwrap();
    assert_eq!(plain_store.list().await.unwrap(), ["tls"]);
    // (The TLS stores' connections end as their pools drop: wait for the server to see it.)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while connections(&server) != (0, 1) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(connections(&server), (0, 1));
}
